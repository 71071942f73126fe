//! Text with variables, rendered afresh for each request: `{user}` (the user's index),
//! `{room}` (that index modulo `rooms`), `{uuid}` (a random version-4 UUID),
//! `{now_ms}` (the time, milliseconds since the Unix epoch) and `{random(A,B)}` (a
//! whole number from A to B, both included: JMeter's `__Random`), and the scenario's
//! own variables: its data file's columns and what steps extract, by name (`{csrf}`).
//! A name in braces that is none of these is an error where it is written; braces
//! around anything else (`{"id": 1}`, `{ a }`) are text, as written.

use std::time::{SystemTime, UNIX_EPOCH};

/// The scenario's own variables, by name: each one's slot is its place here.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variables(Vec<String>);

impl Variables {
    /// Adds `name` (once); its slot.
    pub fn declare(&mut self, name: &str) -> usize {
        self.slot(name).unwrap_or_else(|| {
            self.0.push(name.to_string());
            self.0.len() - 1
        })
    }

    pub fn slot(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|n| n == name)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn names(&self) -> &[String] {
        &self.0
    }
}

/// The names a scenario may not give its own variables.
pub const BUILT_IN: &[&str] = &["user", "room", "uuid", "now_ms"];

/// What a template is rendered for: the user, and its variables' values (by slot).
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub user: usize,
    pub room: usize,
    pub values: &'a [Option<String>],
}

impl Context<'_> {
    /// User `user` in room `room`, with no variable set.
    pub fn bare(user: usize, room: usize) -> Context<'static> {
        Context {
            user,
            room,
            values: &[],
        }
    }
}

/// A variable used before anything gave it a value: the step is not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("variable {{{0}}} has no value")]
pub struct Unset(pub String);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Part>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    User,
    Room,
    Uuid,
    NowMs,
    Random(i64, i64),
    /// The scenario's variable in this slot, and its name (for the error when unset).
    Var(usize, String),
}

impl Template {
    /// `text`'s variables read, `vars` the scenario's own; `Err` says what is wrong
    /// with a `{random(...)}` or names a variable that is none.
    pub fn parse(text: &str, vars: &Variables) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(i) = rest.find('{') {
            literal.push_str(&rest[..i]);
            let inner = rest[i + 1..].split_once('}').map(|(name, _)| name);
            match inner.map(|n| variable(n, vars)).transpose()?.flatten() {
                Some(part) => {
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(part);
                    rest = &rest[i + inner.map_or(0, str::len) + 2..];
                }
                None => {
                    literal.push('{');
                    rest = &rest[i + 1..];
                }
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template(parts))
    }

    /// `text` as it is, no variable read.
    pub fn text(text: &str) -> Template {
        Template(vec![Part::Text(text.to_string())])
    }

    /// The text for `cx`; `Err` names a variable with no value yet.
    pub fn render(&self, cx: &Context<'_>) -> Result<String, Unset> {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::User => out.push_str(&cx.user.to_string()),
                Part::Room => out.push_str(&cx.room.to_string()),
                Part::Uuid => out.push_str(&uuid()),
                Part::NowMs => out.push_str(&now_ms().to_string()),
                Part::Random(lo, hi) => out.push_str(&fastrand::i64(*lo..=*hi).to_string()),
                Part::Var(slot, name) => match cx.values.get(*slot) {
                    Some(Some(value)) => out.push_str(value),
                    _ => return Err(Unset(name.clone())),
                },
            }
        }
        Ok(out)
    }

    /// The scenario variables it uses, by slot.
    pub fn slots(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().filter_map(|p| match p {
            Part::Var(slot, _) => Some(*slot),
            _ => None,
        })
    }
}

/// The variable named `name` (between braces); `None` for braces around text.
fn variable(name: &str, vars: &Variables) -> Result<Option<Part>, String> {
    Ok(Some(match name {
        "user" => Part::User,
        "room" => Part::Room,
        "uuid" => Part::Uuid,
        "now_ms" => Part::NowMs,
        _ => {
            if let Some(args) = name
                .strip_prefix("random(")
                .and_then(|a| a.strip_suffix(')'))
            {
                random(args)?
            } else if let Some(slot) = vars.slot(name) {
                Part::Var(slot, name.to_string())
            } else if is_name(name) {
                return Err(format!("`{{{name}}}` is no variable of this scenario"));
            } else {
                return Ok(None);
            }
        }
    }))
}

/// Whether `text` has a variable's shape: a letter or `_`, then letters, digits, `_`,
/// `-` or `.`.
pub fn is_name(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `A,B` of `{random(A,B)}`.
fn random(args: &str) -> Result<Part, String> {
    let bad =
        || format!("`{{random({args})}}` takes two whole numbers, the first at most the second");
    let (lo, hi) = args.split_once(',').ok_or_else(bad)?;
    let (lo, hi) = (lo.trim().parse::<i64>(), hi.trim().parse::<i64>());
    match (lo, hi) {
        (Ok(lo), Ok(hi)) if lo <= hi => Ok(Part::Random(lo, hi)),
        _ => Err(bad()),
    }
}

/// A random version-4 UUID, as RFC 9562 lays it out.
fn uuid() -> String {
    let n = fastrand::u128(..) & !(0xf << 76) & !(0x3 << 62) | (0x4 << 76) | (0x2 << 62);
    let hex = format!("{n:032x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_replaced_and_anything_else_in_braces_kept() {
        let none = Variables::default();
        let t = Template::parse("/chat?room={room}&u={user}&{ x }&{\"a\":1}&{", &none).unwrap();
        let cx = Context::bare(7, 3);
        assert_eq!(t.render(&cx).unwrap(), "/chat?room=3&u=7&{ x }&{\"a\":1}&{");
        assert_eq!(
            Template::parse("plain", &none)
                .unwrap()
                .render(&cx)
                .unwrap(),
            "plain"
        );
    }

    #[test]
    fn scenario_variables_render_by_slot_and_an_unknown_or_unset_one_is_told() {
        let mut vars = Variables::default();
        vars.declare("username");
        vars.declare("csrf");
        let t = Template::parse("u={username}&t={csrf}", &vars).unwrap();
        let values = [Some("ann".to_string()), Some("x1".to_string())];
        let cx = Context {
            user: 0,
            room: 0,
            values: &values,
        };
        assert_eq!(t.render(&cx).unwrap(), "u=ann&t=x1");
        assert_eq!(t.slots().collect::<Vec<_>>(), [0, 1]);
        let unset = [Some("ann".to_string()), None];
        let cx = Context {
            values: &unset,
            ..cx
        };
        assert_eq!(
            t.render(&cx).unwrap_err().to_string(),
            "variable {csrf} has no value"
        );
        let err = Template::parse("/u/{email}", &vars).unwrap_err();
        assert_eq!(err, "`{email}` is no variable of this scenario");
    }

    #[test]
    fn random_numbers_stay_within_their_bounds_and_uuids_are_version_4() {
        let none = Variables::default();
        let cx = Context::bare(0, 0);
        let render = |text: &str| Template::parse(text, &none).unwrap().render(&cx).unwrap();
        let seen: std::collections::BTreeSet<String> =
            (0..200).map(|_| render("{random(5,7)}")).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["5", "6", "7"]);
        let u = render("{uuid}");
        let groups: Vec<usize> = u.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{u}");
        assert!(u.as_bytes()[14] == b'4', "{u}");
        assert!(matches!(u.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{u}");
        assert_ne!(u, render("{uuid}"));
        let ms: u128 = render("{now_ms}").parse().unwrap();
        assert!(ms > 1_700_000_000_000, "{ms}");
    }

    #[test]
    fn a_random_without_two_ordered_numbers_is_refused() {
        for bad in [
            "{random(9,1)}",
            "{random(1)}",
            "{random(a,b)}",
            "{random()}",
        ] {
            let err = Template::parse(bad, &Variables::default()).unwrap_err();
            assert!(err.contains("two whole numbers"), "{bad}: {err}");
        }
    }
}
