//! Text with variables, rendered afresh for each request: `{user}` (the user's index),
//! `{room}` (that index modulo `rooms`), `{uuid}` (a random version-4 UUID),
//! `{now_ms}` (the time, milliseconds since the Unix epoch) and `{random(A,B)}` (a
//! whole number from A to B, both included: JMeter's `__Random`). Any other `{...}` is
//! text, as written.

use std::time::{SystemTime, UNIX_EPOCH};

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
}

impl Template {
    /// `text`'s variables read; `Err` says what is wrong with a `{random(...)}`.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(i) = rest.find('{') {
            literal.push_str(&rest[..i]);
            let inner = rest[i + 1..].split_once('}').map(|(name, _)| name);
            match inner.map(variable).transpose()?.flatten() {
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

    pub fn render(&self, user: usize, room: usize) -> String {
        let mut out = String::new();
        for p in &self.0 {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::User => out.push_str(&user.to_string()),
                Part::Room => out.push_str(&room.to_string()),
                Part::Uuid => out.push_str(&uuid()),
                Part::NowMs => out.push_str(&now_ms().to_string()),
                Part::Random(lo, hi) => out.push_str(&fastrand::i64(*lo..=*hi).to_string()),
            }
        }
        out
    }
}

/// The variable named `name` (between braces); `None` for a name that is none.
fn variable(name: &str) -> Result<Option<Part>, String> {
    Ok(Some(match name {
        "user" => Part::User,
        "room" => Part::Room,
        "uuid" => Part::Uuid,
        "now_ms" => Part::NowMs,
        _ => match name
            .strip_prefix("random(")
            .and_then(|a| a.strip_suffix(')'))
        {
            Some(args) => random(args)?,
            None => return Ok(None),
        },
    }))
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
        let t = Template::parse("/chat?room={room}&u={user}&{other}&{").unwrap();
        assert_eq!(t.render(7, 3), "/chat?room=3&u=7&{other}&{");
        assert_eq!(Template::parse("plain").unwrap().render(1, 1), "plain");
    }

    #[test]
    fn random_numbers_stay_within_their_bounds_and_uuids_are_version_4() {
        let t = Template::parse("{random(5,7)}").unwrap();
        let seen: std::collections::BTreeSet<String> = (0..200).map(|_| t.render(0, 0)).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["5", "6", "7"]);
        let u = Template::parse("{uuid}").unwrap().render(0, 0);
        let groups: Vec<usize> = u.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{u}");
        assert!(u.as_bytes()[14] == b'4', "{u}");
        assert!(matches!(u.as_bytes()[19], b'8' | b'9' | b'a' | b'b'), "{u}");
        assert_ne!(u, Template::parse("{uuid}").unwrap().render(0, 0));
        let ms: u128 = Template::parse("{now_ms}")
            .unwrap()
            .render(0, 0)
            .parse()
            .unwrap();
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
            let err = Template::parse(bad).unwrap_err();
            assert!(err.contains("two whole numbers"), "{bad}: {err}");
        }
    }
}
