//! Reading typed values out of a parsed TOML document while collecting every problem.
//!
//! Each accessor returns `None` after recording an error, so validation can go on and
//! report everything wrong with a file in one pass. Public so that other TOML files of
//! sluice (load-test scenarios) report their problems the same way.

use crate::error::ConfigError;
use std::ops::Range;
use std::time::Duration;
use toml_edit::{Item, TableLike, Value};

/// Where a key or value is in its file (byte offsets), when it is there at all.
pub(crate) type Span = Option<Range<usize>>;

pub struct Reader<'a> {
    pub file: &'a str,
    pub text: &'a str,
    pub errors: Vec<ConfigError>,
    /// The named groups of the regular expression whose matches the template being read
    /// may name (`$slug`), each with its number: a `regex` route's while it is read.
    pub captures: Vec<(String, usize)>,
}

/// A TOML syntax error as one line, with its place and a hint: a bare word where a
/// string goes (`upstream = app`) is shown quoted.
pub(crate) fn syntax_error(file: &str, text: &str, e: &toml_edit::TomlError) -> ConfigError {
    let said: Vec<&str> = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let message = format!("invalid TOML: {}", said.join("; "));
    let line = e
        .span()
        .and_then(|s| text.get(..s.start))
        .and_then(|before| text.lines().nth(before.matches('\n').count()));
    let unquoted = line
        .and_then(|l| l.split_once('='))
        .filter(|_| said.iter().any(|s| s.contains("invalid string")));
    let hint = match unquoted {
        Some((key, value)) => format!(
            "a string needs quotes: {} = \"{}\"",
            key.trim(),
            value.trim()
        ),
        None => "fix the syntax at this position".into(),
    };
    ConfigError::at(file, text, e.span(), message, hint)
}

impl<'a> Reader<'a> {
    /// Parses `text` as TOML: the document, or its syntax error as `file:line:col`.
    pub fn parse_document(
        file: &str,
        text: &str,
    ) -> Result<toml_edit::ImDocument<String>, ConfigError> {
        toml_edit::ImDocument::parse(text.to_string()).map_err(|e| syntax_error(file, text, &e))
    }

    pub fn new(file: &'a str, text: &'a str) -> Self {
        Reader {
            file,
            text,
            errors: Vec::new(),
            captures: Vec::new(),
        }
    }

    pub fn error(
        &mut self,
        span: Option<Range<usize>>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) {
        self.errors
            .push(ConfigError::at(self.file, self.text, span, message, hint));
    }

    /// Records an error for every key of `table` not in `allowed`.
    pub fn only_keys(&mut self, table: &dyn TableLike, allowed: &[&str], what: &str) {
        self.only_keys_or_moved(table, allowed, what, &[]);
    }

    /// [`Reader::only_keys`], where a key named in `moved` is one that belongs in
    /// another table: its error gives the hint paired with it (where to write it).
    pub fn only_keys_or_moved(
        &mut self,
        table: &dyn TableLike,
        allowed: &[&str],
        what: &str,
        moved: &[(&str, &str)],
    ) {
        for (key, _) in table.iter() {
            if !allowed.contains(&key) {
                let span = table.key(key).and_then(|k| k.span());
                let elsewhere = moved.iter().find(|(k, _)| *k == key);
                let hint = match (elsewhere, closest(key, allowed)) {
                    (Some((_, hint)), _) => hint.to_string(),
                    (None, Some(near)) => format!("did you mean `{near}`?"),
                    (None, None) => format!("{what} takes: {}", allowed.join(", ")),
                };
                self.error(span, format!("unknown key `{key}` in {what}"), hint);
            }
        }
    }

    /// The value at `key`, if present and a plain value (not a table).
    pub fn value<'t>(
        &mut self,
        table: &'t dyn TableLike,
        key: &str,
        expected: &str,
    ) -> Option<&'t Value> {
        match table.get(key)? {
            Item::Value(v) => Some(v),
            other => {
                self.error(
                    other.span(),
                    format!("`{key}` must be {expected}, found a table"),
                    format!("write `{key} = ...` on one line"),
                );
                None
            }
        }
    }

    /// The values at `key` when it is one value or a list of them (`listener = "a"` or
    /// `["a", "b"]`); none when absent.
    pub fn one_or_list<'t>(
        &mut self,
        table: &'t dyn TableLike,
        key: &str,
        expected: &str,
    ) -> Vec<&'t Value> {
        match self.value(table, key, expected) {
            Some(v) => match v.as_array() {
                Some(list) => list.iter().collect(),
                None => vec![v],
            },
            None => Vec::new(),
        }
    }

    pub fn string(
        &mut self,
        table: &dyn TableLike,
        key: &str,
    ) -> Option<(String, Option<Range<usize>>)> {
        let v = self.value(table, key, "a string")?;
        match v.as_str() {
            Some(s) => Some((s.to_string(), v.span())),
            None => {
                self.error(
                    v.span(),
                    format!("`{key}` must be a string, found {}", v.type_name()),
                    "put the value in double quotes",
                );
                None
            }
        }
    }

    /// A non-negative integer no larger than `max`.
    pub fn integer(&mut self, table: &dyn TableLike, key: &str, max: u64) -> Option<u64> {
        let v = self.value(table, key, "an integer")?;
        match v.as_integer() {
            Some(n) if n >= 0 && (n as u64) <= max => Some(n as u64),
            Some(n) => {
                self.error(
                    v.span(),
                    format!("`{key}` = {n} is out of range"),
                    format!("use a value from 0 to {max}"),
                );
                None
            }
            None => {
                self.error(
                    v.span(),
                    format!("`{key}` must be an integer, found {}", v.type_name()),
                    "write a whole number without quotes",
                );
                None
            }
        }
    }

    /// `true` or `false`; `None` when absent or not a boolean (then with an error).
    pub fn boolean(&mut self, table: &dyn TableLike, key: &str) -> Option<bool> {
        let v = self.value(table, key, "true or false")?;
        let b = v.as_bool();
        if b.is_none() {
            self.error(
                v.span(),
                format!("`{key}` must be true or false"),
                format!("write {key} = true"),
            );
        }
        b
    }

    /// A number, integer or float.
    pub fn number(&mut self, table: &dyn TableLike, key: &str) -> Option<f64> {
        let v = self.value(table, key, "a number")?;
        match (v.as_float(), v.as_integer()) {
            (Some(f), _) => Some(f),
            (_, Some(i)) => Some(i as f64),
            _ => {
                self.error(
                    v.span(),
                    format!("`{key}` must be a number, found {}", v.type_name()),
                    "write it without quotes, e.g. 1.25",
                );
                None
            }
        }
    }

    /// A duration written as a string with a unit: "500ms", "2s", "1m", "1h".
    pub fn duration(&mut self, table: &dyn TableLike, key: &str) -> Option<Duration> {
        let v = self.value(table, key, "a duration")?;
        let parsed = v.as_str().and_then(parse_duration);
        match parsed {
            None => self.error(
                v.span(),
                format!("`{key}` is not a duration"),
                "write it as a string with a unit, e.g. \"500ms\", \"2s\", \"1m\"",
            ),
            Some(d) if d > MAX_DURATION => {
                self.error(
                    v.span(),
                    format!("`{key}` is longer than a day"),
                    "use at most \"24h\"",
                );
                return None;
            }
            Some(_) => {}
        }
        parsed
    }

    /// A duration that must be above zero (a zero timeout would fail every request).
    pub fn timeout(&mut self, table: &dyn TableLike, key: &str) -> Option<Duration> {
        let d = self.duration(table, key)?;
        if d.is_zero() {
            let span = table.get(key).and_then(|v| v.span());
            self.error(
                span,
                format!("`{key}` must be above zero"),
                "give it a time, e.g. \"2s\"",
            );
            return None;
        }
        Some(d)
    }
}

/// The longest duration any setting takes: longer is surely a typo, and keeps deadline
/// arithmetic far from overflow.
const MAX_DURATION: Duration = Duration::from_secs(24 * 3600);

/// Parses "250ms", "2s", "1.5s", "3m", "1h": the durations of the config, and of the
/// command line's duration flags.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (number, unit) = s.split_at(split);
    let number: f64 = number.parse().ok()?;
    let seconds = match unit.trim() {
        "ms" => number / 1000.0,
        "s" => number,
        "m" => number * 60.0,
        "h" => number * 3600.0,
        _ => return None,
    };
    Duration::try_from_secs_f64(seconds).ok()
}

/// The allowed word closest to `word`, if it is plausibly a typo of it.
fn closest<'w>(word: &str, allowed: &[&'w str]) -> Option<&'w str> {
    allowed
        .iter()
        .map(|a| (edit_distance(word, a), *a))
        .filter(|(d, a)| *d <= 2.max(a.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, a)| a)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut row = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            row[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(row[j] + 1);
        }
        prev = row;
    }
    prev[b.len()]
}

/// The tables under `key`, written either as `[[key]]` or as an inline array of tables.
pub(crate) fn tables<'t>(
    r: &mut Reader,
    root: &'t dyn TableLike,
    key: &str,
) -> Vec<(&'t dyn TableLike, Span)> {
    match root.get(key) {
        None => Vec::new(),
        Some(Item::ArrayOfTables(aot)) => aot
            .iter()
            .map(|t| (t as &dyn TableLike, t.span()))
            .collect(),
        Some(Item::Value(Value::Array(array))) => array
            .iter()
            .filter_map(|v| match v.as_inline_table() {
                Some(t) => Some((t as &dyn TableLike, v.span())),
                None => {
                    r.error(
                        v.span(),
                        format!("each `{key}` entry must be a table"),
                        format!("write [[{key}]] sections"),
                    );
                    None
                }
            })
            .collect(),
        Some(other) => {
            r.error(
                other.span(),
                format!("`{key}` must be a list of tables"),
                format!("write [[{key}]] sections"),
            );
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Some(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m"), Some(Duration::from_secs(60)));
        assert_eq!(parse_duration("2"), None);
        assert_eq!(parse_duration("2 weeks"), None);
        assert_eq!(parse_duration("s"), None);
    }

    #[test]
    fn typo_suggestions() {
        assert_eq!(
            closest("keepalve", &["keepalive", "servers"]),
            Some("keepalive")
        );
        assert_eq!(closest("zzz", &["keepalive", "servers"]), None);
    }
}
