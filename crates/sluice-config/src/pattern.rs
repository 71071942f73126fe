//! Regular expressions as nginx's locations and rewrites use them: compiled once when
//! the config is read, matched against request paths on every request.
//!
//! Three engines, the cheapest that can read the pattern: `linear` for an anchored
//! pattern that reads straight through (most of nginx's: `^/api/(.*)$`), the `regex`
//! crate for the rest of what it reads, fancy-regex for what only PCRE has (look-around,
//! back-references). Whichever runs, a pattern's matches and groups are the ones the
//! `regex` crate (or, for PCRE's extras, fancy-regex) would give.

mod linear;

use linear::{Linear, Spans};

/// A regular expression as nginx's PCRE reads it (look-around and back-references
/// included), compiled once when the config is read. Two are equal when written alike.
#[derive(Clone, Debug)]
pub struct Pattern {
    engine: Engine,
    pub ignore_case: bool,
}

#[derive(Clone, Debug)]
enum Engine {
    /// The `regex` crate; `linear` when the pattern reads straight through (its groups
    /// in about a third of the instructions).
    Plain {
        re: regex::Regex,
        linear: Option<Linear>,
    },
    /// Look-around and back-references (fancy-regex delegates the rest to `regex`).
    Fancy(fancy_regex::Regex),
}

/// The groups of one match.
pub enum Captures<'s> {
    Linear(&'s str, Spans),
    Plain(regex::Captures<'s>),
    Fancy(fancy_regex::Captures<'s>),
}

impl Captures<'_> {
    /// Group `i`'s text ("" when it took no part or does not exist).
    pub fn group(&self, i: usize) -> &str {
        let found = match self {
            Captures::Linear(subject, spans) => spans.get(i).map(|(a, b)| &subject[a..b]),
            Captures::Plain(c) => c.get(i).map(|m| m.as_str()),
            Captures::Fancy(c) => c.get(i).map(|m| m.as_str()),
        };
        found.unwrap_or("")
    }

    /// How many groups the pattern has, the whole match included.
    pub fn len(&self) -> usize {
        match self {
            Captures::Linear(_, spans) => spans.len(),
            Captures::Plain(c) => c.len(),
            Captures::Fancy(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Group `i`'s place in the subject, when it took part.
    pub fn span(&self, i: usize) -> Option<(usize, usize)> {
        match self {
            Captures::Linear(_, spans) => spans.get(i),
            Captures::Plain(c) => c.get(i).map(|m| (m.start(), m.end())),
            Captures::Fancy(c) => c.get(i).map(|m| (m.start(), m.end())),
        }
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() && self.ignore_case == other.ignore_case
    }
}

impl Eq for Pattern {}

impl Pattern {
    /// Compiles `text`; the error says why it is no regular expression.
    pub fn new(text: &str, ignore_case: bool) -> Result<Pattern, String> {
        let plain = regex::RegexBuilder::new(text)
            .case_insensitive(ignore_case)
            .build();
        let engine = match plain {
            Ok(re) => Engine::Plain {
                linear: Linear::new(text, ignore_case),
                re,
            },
            Err(_) => fancy_regex::RegexBuilder::new(text)
                .case_insensitive(ignore_case)
                .build()
                .map(Engine::Fancy)
                .map_err(|e| e.to_string())?,
        };
        Ok(Pattern {
            engine,
            ignore_case,
        })
    }

    pub fn as_str(&self) -> &str {
        match &self.engine {
            Engine::Plain { re, .. } => re.as_str(),
            Engine::Fancy(re) => re.as_str(),
        }
    }

    /// Whether it matches in `subject`. A fancy match that runs out of its backtracking
    /// budget counts as none.
    pub fn is_match(&self, subject: &str) -> bool {
        match &self.engine {
            Engine::Plain {
                linear: Some(linear),
                ..
            } => linear.is_match(subject),
            Engine::Plain { re, .. } => re.is_match(subject),
            Engine::Fancy(re) => re.is_match(subject).unwrap_or(false),
        }
    }

    /// The groups of its first match in `subject`, if it matches.
    pub fn captures<'s>(&self, subject: &'s str) -> Option<Captures<'s>> {
        match &self.engine {
            Engine::Plain {
                linear: Some(linear),
                ..
            } => linear
                .spans(subject)
                .map(|spans| Captures::Linear(subject, spans)),
            Engine::Plain { re, .. } => re.captures(subject).map(Captures::Plain),
            Engine::Fancy(re) => re.captures(subject).ok()?.map(Captures::Fancy),
        }
    }

    /// Its named groups, each with its number (nginx makes each a variable).
    pub fn names(&self) -> Vec<(String, usize)> {
        let names: Vec<Option<&str>> = match &self.engine {
            Engine::Plain { re, .. } => re.capture_names().collect(),
            Engine::Fancy(re) => re.capture_names().collect(),
        };
        names
            .into_iter()
            .enumerate()
            .filter_map(|(i, name)| name.map(|n| (n.to_string(), i)))
            .collect()
    }
}
