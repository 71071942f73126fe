//! `sluice bench import PLAN.jmx`: a JMeter test plan (JMeter 5.x's save format) in, a
//! sluice scenario file (TOML) out, with every element it could not translate listed
//! (its line, its place in the plan's tree, its JMeter class and why), and what it
//! translated only approximately in notes.
//!
//! This module owns the mapping from JMeter's test elements to the scenario format of
//! [`crate::scenario`]: the thread group's users, ramp and loop count; HTTP Request
//! samplers (with HTTP Request Defaults, Header Managers and assertions) as `http`
//! steps; extractors as `extract`; timers as `think`; a CSV Data Set as `data`; Once
//! Only, Transaction, Loop and Throughput Controllers as `[[setup]]`, inlined steps,
//! `repeat` and weighted `[[flow]]`s. It reads the plan's text (and the header row of
//! its CSV file, to know its columns) and nothing else: it sends no request. An element
//! is translated, or noted as translated approximately, or listed as dropped: never
//! dropped silently (listeners are counted in a note: sluice reports itself).
//!
//! The pieces: `tree` reads the XML into JMeter's elements, `vars` resolves `${...}`,
//! `walk` walks the thread group, `http` translates a sampler, `checks` its
//! assertions, extractors and timers, `data` a CSV Data Set, `shape` lays the steps
//! out as setup, loop and teardown, and `emit` writes the TOML.

mod checks;
mod data;
mod emit;
mod http;
mod shape;
mod tree;
mod vars;
mod walk;

#[cfg(test)]
mod tests;

use std::fmt;

/// The translation: the scenario's text, what was not carried over, what was carried
/// over approximately.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The scenario file (TOML), commented: where each part came from, what was dropped.
    pub scenario: String,
    pub dropped: Vec<Dropped>,
    /// What was translated approximately, one sentence each.
    pub notes: Vec<String>,
}

/// One element of the plan that the scenario does without.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Its line in the file (0 where it has none: a recording's entry).
    pub line: usize,
    /// Where it is in the plan's tree: `Test Plan > Users > login > If Controller 'has token'`.
    pub place: String,
    /// Its JMeter class, e.g. `BeanShellPreProcessor`.
    pub element: String,
    pub why: String,
}

impl fmt::Display for Dropped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A recording's entries have no line of their own: their place says which.
        if self.line > 0 {
            write!(f, "line {}: ", self.line)?;
        }
        write!(f, "{} ({}): {}", self.place, self.element, self.why)
    }
}

/// A file that cannot be translated at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    #[error("{file}:{line}:{col}: malformed XML: {message} ({hint})")]
    Xml {
        file: String,
        line: usize,
        col: usize,
        message: String,
        hint: String,
    },
    #[error("{file}:{line}:{col}: not a JMeter test plan: {what} (a .jmx file is the <jmeterTestPlan> JMeter saves, its <TestPlan> first)")]
    NotJmeter {
        file: String,
        line: usize,
        col: usize,
        what: String,
    },
    #[error(
        "{file}: no enabled Thread Group{found}: a scenario is what one thread group's users do"
    )]
    NoThreadGroup {
        file: String,
        /// What there was instead, e.g. ` (only setUp Thread Group 'init')`.
        found: String,
    },
    #[error("{file}: no HTTP Request sampler in Thread Group '{group}': sluice bench sends HTTP requests (and WebSocket and STOMP frames, which JMeter plans do not carry)")]
    NoHttpSampler { file: String, group: String },
    #[error("{file}: none of the HTTP requests could be translated; the first: {first}")]
    NothingLeft { file: String, first: String },
}

/// Translates the JMeter plan `text`; `file` names it in messages, and a relative CSV
/// file of its CSV Data Set is read (its header row only) from `file`'s directory.
pub fn import(file: &str, text: &str) -> Result<Imported, ImportError> {
    let plan = tree::parse(file, text)?;
    let mut cx = Cx::new(file, &plan);
    let run = walk::thread_group(&mut cx, &plan)?;
    let shaped = shape::shape(&mut cx, run)?;
    run_notes(&mut cx);
    // In the plan's order, whichever part of the translation found them.
    cx.dropped.sort_by_key(|d| d.line);
    let scenario = emit::toml(&cx, &shaped);
    Ok(Imported {
        scenario,
        dropped: cx.dropped,
        notes: cx.notes,
    })
}

/// What a run of the scenario needs that its file cannot say, and cookies' absence.
fn run_notes(cx: &mut Cx) {
    if cx.follow.0 > 0 {
        let text = "its samplers follow redirects: run the scenario with `sluice bench --scenario FILE --follow` (the file cannot say it)";
        cx.notes.insert(0, text.into());
    }
    if cx.cookies.is_none() {
        cx.note("the plan has no HTTP Cookie Manager: cookies = false written, as JMeter kept no cookies");
    }
}

/// What the translation has gathered so far: shared by every part of it.
pub(crate) struct Cx {
    pub file: String,
    pub vars: vars::Vars,
    pub dropped: Vec<Dropped>,
    pub notes: Vec<String>,
    /// The scenario's target, once a sampler or HTTP Request Defaults gave one.
    pub target: Option<http::Origin>,
    /// How many samplers follow redirects, and how many do not.
    pub follow: (usize, usize),
    pub data: Option<data::DataSpec>,
    /// The Cookie Manager in scope, if any (its place, for the comment).
    pub cookies: Option<String>,
    /// Its user-defined cookies, as `Set-Cookie` values.
    pub initial_cookies: Vec<String>,
    /// Listeners' names: counted in a note.
    pub listeners: Vec<String>,
}

impl Cx {
    fn new(file: &str, plan: &tree::Element) -> Cx {
        let mut cx = Cx {
            file: file.to_string(),
            vars: vars::Vars::default(),
            dropped: Vec::new(),
            notes: Vec::new(),
            target: None,
            follow: (0, 0),
            data: None,
            cookies: None,
            initial_cookies: Vec::new(),
            listeners: Vec::new(),
        };
        cx.vars = vars::Vars::of_plan(plan);
        cx
    }

    /// Lists `el`, a child of the place `parent`, as not translated (once, however many
    /// steps it applied to).
    pub fn drop(&mut self, el: &tree::Element, parent: &str, why: impl Into<String>) {
        self.drop_at(el.line, &tree::label(parent, el), &el.class, why);
    }

    /// Lists the element of class `element` at `line` as not translated (once).
    pub fn drop_at(&mut self, line: usize, place: &str, element: &str, why: impl Into<String>) {
        let d = Dropped {
            line,
            place: place.to_string(),
            element: element.to_string(),
            why: why.into(),
        };
        if !self.dropped.contains(&d) {
            self.dropped.push(d);
        }
    }

    /// `text` with its `${...}` resolved; what it notes is noted.
    pub fn resolve(&mut self, text: &str) -> vars::Resolved {
        let r = self.vars.resolve(text);
        for n in &r.notes {
            self.note(n.clone());
        }
        r
    }

    /// `text` resolved to a text known before the run (a host, a regular expression);
    /// `Err` says why it is not one.
    pub fn fixed(&mut self, text: &str) -> Result<String, String> {
        let r = self.resolve(text);
        match r.problems.into_iter().next() {
            Some(problem) => Err(problem),
            None if r.varies => Err(format!(
                "{text:?} differs from one user or request to the next; sluice needs it fixed here"
            )),
            None => Ok(r.text),
        }
    }

    /// Adds a note (once).
    pub fn note(&mut self, text: impl Into<String>) {
        let text = text.into();
        if !self.notes.contains(&text) {
            self.notes.push(text);
        }
    }
}
