//! `${...}` in the plan's texts, resolved at import time where it can be and written
//! as a scenario's `{...}` where it varies: User Defined Variables are replaced by their
//! values, `${__P(name,default)}` and `${__property(name,,default)}` by the default,
//! `${__Random(a,b)}` becomes `{random(a,b)}`, `${__UUID()}` `{uuid}`, `${__time()}`
//! `{now_ms}`, `${__threadNum}` `{user}`, and any other `${name}` the scenario variable
//! `{name}` (a CSV column or an extracted value: whether something defines it is
//! checked once every step is known). Another function is left as text, with a note.
//!
//! A scenario's text has no escape for braces: a literal `{name}` in the plan's text
//! would read as a variable there, so it is reported (the step using it is dropped).

use super::tree::{Element, Props};
use crate::scenario::is_name;
use std::collections::BTreeSet;

/// The plan's variables known at import time.
#[derive(Debug, Default)]
pub struct Vars {
    /// User Defined Variables as written (they may use properties and each other); a
    /// later definition replaces an earlier one, as JMeter's do.
    udv: Vec<(String, String)>,
    /// Random Variable config elements: name, `{random(a,b)}`.
    random: Vec<(String, String)>,
}

/// A text with its `${...}` resolved.
#[derive(Debug, Default, Clone)]
pub struct Resolved {
    pub text: String,
    /// The scenario variables it uses (by their names in the scenario).
    pub uses: BTreeSet<String>,
    /// It differs from one request to the next: a variable, `{uuid}`, a function.
    pub varies: bool,
    /// Why it cannot be translated (the step using it is dropped).
    pub problems: Vec<String>,
    /// Literal `{name}`s of the plan's text, which a scenario would read as variables.
    pub braces: Vec<String>,
    /// What was translated approximately.
    pub notes: Vec<String>,
}

/// How deep variables may refer to variables (a loop of them ends here).
const DEPTH: usize = 10;

impl Vars {
    /// The User Defined Variables of the plan (the Test Plan's and every enabled
    /// Arguments element's: JMeter sets them all at the start) and its Random Variables.
    pub fn of_plan(plan: &Element) -> Vars {
        let mut v = Vars::default();
        if let Some(args) = plan.props.element("TestPlan.user_defined_variables") {
            v.arguments(args);
        }
        v.gather(&plan.children);
        v
    }

    fn gather(&mut self, elements: &[Element]) {
        for el in elements.iter().filter(|e| e.enabled) {
            match el.class.as_str() {
                "Arguments" => self.arguments(&el.props),
                "RandomVariableConfig" => self.random_variable(&el.props),
                _ => {}
            }
            self.gather(&el.children);
        }
    }

    fn arguments(&mut self, props: &Props) {
        for arg in props.items("Arguments.arguments") {
            let name = arg.text("Argument.name");
            if !name.is_empty() {
                self.udv.retain(|(n, _)| n != name);
                self.udv
                    .push((name.to_string(), arg.text("Argument.value").to_string()));
            }
        }
    }

    /// A Random Variable without an output format: `{random(min,max)}`.
    fn random_variable(&mut self, props: &Props) {
        let bound = |name| props.text(name).trim().parse::<i64>().ok();
        let (min, max) = (bound("minimumValue"), bound("maximumValue"));
        if let (Some(lo), Some(hi), "") = (min, max, props.text("outputFormat").trim()) {
            if lo <= hi {
                let name = props.text("variableName").to_string();
                self.random.push((name, format!("{{random({lo},{hi})}}")));
            }
        }
    }

    /// Whether a Random Variable of this name was translated.
    pub fn has_random(&self, name: &str) -> bool {
        self.random.iter().any(|(n, _)| n == name)
    }

    /// `text` with its references resolved.
    pub fn resolve(&self, text: &str) -> Resolved {
        let mut r = Resolved::default();
        self.expand(text, 0, &mut r);
        r
    }

    fn expand(&self, text: &str, depth: usize, r: &mut Resolved) {
        let mut rest = text;
        while let Some(i) = rest.find("${") {
            literal(&rest[..i], r);
            let Some(len) = reference_len(&rest[i..]) else {
                literal(&rest[i..], r);
                return;
            };
            let whole = &rest[i..i + len];
            if depth > DEPTH {
                r.problems
                    .push(format!("{whole}: variables refer to each other in a loop"));
            } else if let Some(call) = whole[2..len - 1].strip_prefix("__") {
                self.function(whole, call, depth, r);
            } else {
                self.variable(whole, &whole[2..len - 1], depth, r);
            }
            rest = &rest[i + len..];
        }
        literal(rest, r);
    }

    fn variable(&self, whole: &str, name: &str, depth: usize, r: &mut Resolved) {
        let known = |list: &[(String, String)]| {
            list.iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        if let Some(value) = known(&self.udv) {
            self.expand(&value, depth + 1, r);
        } else if let Some(random) = known(&self.random) {
            r.text.push_str(&random);
            r.varies = true;
        } else if let Some(cookie) = name.strip_prefix("COOKIE_") {
            r.problems.push(format!("uses {whole}, JMeter's variable for the cookie {cookie} (CookieManager.save.cookies): not translated; an earlier step's extract.{cookie} = {{ cookie = \"{cookie}\" }} gives it"));
        } else if let Some(own) = scenario_name(name) {
            r.text.push_str(&format!("{{{own}}}"));
            r.uses.insert(own);
            r.varies = true;
        } else {
            r.problems.push(format!(
                "uses {whole}: a name a scenario's variables cannot have"
            ));
        }
    }

    /// `${__name(args)}`: `call` is what follows the `__`.
    fn function(&self, whole: &str, call: &str, depth: usize, r: &mut Resolved) {
        let (name, args) = split_call(call);
        let arg = |i: usize| args.get(i).map(|a| a.trim()).unwrap_or("");
        match name {
            "P" | "property" => {
                let default = match (name, args.len()) {
                    ("P", n) if n >= 2 => arg(1),
                    ("P", _) => "1",
                    (_, n) if n >= 3 => arg(2),
                    _ => arg(0),
                };
                r.notes.push(format!(
                    "property {}: its default {default:?} written; edit the file to change it",
                    arg(0)
                ));
                self.expand(default, depth + 1, r);
            }
            "Random" => self.random(whole, &args, depth, r),
            "UUID" => push_varying(r, "{uuid}"),
            "time" if arg(0).is_empty() => push_varying(r, "{now_ms}"),
            "threadNum" => {
                r.notes.push("${__threadNum} written as {user}: sluice numbers users from 0, JMeter its threads from 1".into());
                push_varying(r, "{user}");
            }
            _ => left_as_text(whole, name, r),
        }
    }

    /// `${__Random(a,b)}` (and `${__Random(a,b,var)}`): `{random(a,b)}`.
    fn random(&self, whole: &str, args: &[String], depth: usize, r: &mut Resolved) {
        let bound = |i: usize| {
            let mut b = Resolved::default();
            self.expand(args.get(i).map_or("", |a| a.trim()), depth + 1, &mut b);
            match b.varies || !b.problems.is_empty() {
                true => None,
                false => b.text.trim().parse::<i64>().ok(),
            }
        };
        match (bound(0), bound(1)) {
            (Some(lo), Some(hi)) if lo <= hi => push_varying(r, &format!("{{random({lo},{hi})}}")),
            _ => r.problems.push(format!(
                "uses {whole}: its bounds are not two whole numbers known before the run"
            )),
        }
    }
}

fn push_varying(r: &mut Resolved, template: &str) {
    r.text.push_str(template);
    r.varies = true;
}

/// A JMeter function sluice has not: sent as written, unless its text would read as
/// a scenario variable.
fn left_as_text(whole: &str, name: &str, r: &mut Resolved) {
    if brace_conflict(whole).is_some() {
        r.problems.push(format!(
            "uses {whole}: JMeter's function __{name} has no sluice equivalent"
        ));
        return;
    }
    r.notes.push(format!("{whole} left as text (JMeter's function __{name} has no sluice equivalent): the server gets it as written"));
    push_varying(r, whole);
}

/// Literal text of the plan: kept, its `{name}`s noted.
fn literal(text: &str, r: &mut Resolved) {
    if let Some(b) = brace_conflict(text) {
        r.braces.push(b);
    }
    r.text.push_str(text);
}

/// The first `{...}` in `text` that a scenario's template would read as a variable.
pub fn brace_conflict(text: &str) -> Option<String> {
    let mut rest = text;
    while let Some(i) = rest.find('{') {
        let inner = rest[i + 1..].split_once('}').map(|(inner, _)| inner)?;
        if is_name(inner) || inner.starts_with("random(") {
            return Some(format!("{{{inner}}}"));
        }
        rest = &rest[i + 1..];
    }
    None
}

/// The length of the `${...}` at the start of `text`, its nested `${...}`, parentheses
/// and `\`-escapes included; `None` when it never closes.
fn reference_len(text: &str) -> Option<usize> {
    let (mut parens, mut braces) = (0usize, 0usize);
    let mut chars = text.char_indices().skip(2);
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '(' => parens += 1,
            ')' => parens = parens.saturating_sub(1),
            '{' => braces += 1,
            '}' if braces == 0 => return Some(i + 1),
            '}' => braces -= 1,
            _ => {}
        }
    }
    None
}

/// `name(a,b\,c)`: the function's name and its arguments (`\,` an escaped comma).
fn split_call(call: &str) -> (&str, Vec<String>) {
    let Some((name, rest)) = call.split_once('(') else {
        return (call, Vec::new());
    };
    let inner = rest.strip_suffix(')').unwrap_or(rest);
    let (mut args, mut arg) = (Vec::new(), String::new());
    let (mut depth, mut chars) = (0usize, inner.chars());
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(',') => arg.push(','),
                Some(other) => arg.extend(['\\', other]),
                None => {}
            },
            ',' if depth == 0 => args.push(std::mem::take(&mut arg)),
            _ => {
                match c {
                    '(' | '{' => depth += 1,
                    ')' | '}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                arg.push(c);
            }
        }
    }
    args.push(arg);
    if args.len() == 1 && args[0].is_empty() {
        args.clear();
    }
    (name, args)
}

/// The names a scenario gives its own: `{user}`, `{room}`, `{uuid}`, `{now_ms}`.
const BUILT_IN: &[&str] = &["user", "room", "uuid", "now_ms"];

/// A JMeter variable's name in the scenario: itself, or with a `_` after it when the
/// scenario has a name of its own like it (`${user}` is `{user_}`); `None` when a
/// scenario's variable cannot be so named.
pub fn scenario_name(jmeter: &str) -> Option<String> {
    if !is_name(jmeter) {
        return None;
    }
    Some(if BUILT_IN.contains(&jmeter) {
        format!("{jmeter}_")
    } else {
        jmeter.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(udv: &[(&str, &str)]) -> Vars {
        Vars {
            udv: udv
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            random: Vec::new(),
        }
    }

    #[test]
    fn references_resolve_to_values_defaults_and_scenario_variables() {
        let v = vars(&[("host", "${__P(host,127.0.0.1)}"), ("base", "/shop")]);
        let r = v.resolve("http://${host}${base}/u/${username}?n=${__Random(1,${__P(max,9)})}&id=${__UUID()}&t=${__time()}&x=${__threadNum}");
        assert_eq!(
            r.text,
            "http://127.0.0.1/shop/u/{username}?n={random(1,9)}&id={uuid}&t={now_ms}&x={user}"
        );
        assert_eq!(r.uses.iter().collect::<Vec<_>>(), ["username"]);
        assert!(r.problems.is_empty() && r.braces.is_empty(), "{r:?}");
        assert!(r.notes[0].starts_with("property host: its default \"127.0.0.1\""));
        let p = v.resolve("${__property(port,,8080)}:${__P(flag)}");
        assert_eq!(p.text, "8080:1");
        assert!(!p.varies);
    }

    #[test]
    fn what_cannot_be_written_is_told() {
        let v = vars(&[("a", "${b}"), ("b", "${a}")]);
        assert!(v.resolve("${a}").problems[0].contains("in a loop"));
        let r = v.resolve("x=${__groovy(vars.get(\"k\"))}&c=${COOKIE_sid}&{\"a\":1}&{id}");
        assert!(
            r.text.starts_with("x=${__groovy(vars.get(\"k\"))}&"),
            "{}",
            r.text
        );
        assert!(r.notes[0].contains("__groovy"), "{:?}", r.notes);
        assert!(r.problems[0].contains("COOKIE_sid"), "{:?}", r.problems);
        assert_eq!(r.braces, ["{id}"]);
        let f = v.resolve("${__iterationNum}");
        assert!(f.problems[0].contains("__iterationNum"), "{:?}", f.problems);
        assert_eq!(v.resolve("${user}").text, "{user_}");
        assert!(v.resolve("${my var}").problems[0].contains("cannot have"));
    }

    #[test]
    fn function_arguments_split_on_unescaped_commas() {
        assert_eq!(
            split_call("P(a\\,b,${__V(x,y)})"),
            ("P", vec!["a,b".to_string(), "${__V(x,y)}".to_string()])
        );
        assert_eq!(split_call("UUID"), ("UUID", vec![]));
        assert_eq!(split_call("time()"), ("time", vec![]));
        assert_eq!(
            split_call("time(,)"),
            ("time", vec![String::new(), String::new()])
        );
    }
}
