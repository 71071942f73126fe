//! Values taken from a response into the user's variables, as JMeter's extractors and
//! k6's scripts take a CSRF token or a bearer token for the requests after it:
//!
//! ```toml
//! [[step]]
//! http = "GET /login"
//! extract.csrf = { regex = 'name="_csrf" value="([^"]+)"' }   # group 1 (else the match)
//! extract.token = { json = "$.access_token" }                 # RFC 9535 JSONPath
//! extract.id = { boundary = ['id="', '"'] }                    # between two texts
//! extract.next = { header = "Location" }
//! extract.session = { cookie = "JSESSIONID" }                 # from the user's jar
//! ```
//!
//! Each takes `nth = N` (the Nth match, 1 the first, 0 one at random: JMeter's match
//! number) and `default = "..."` (the value when nothing matches; without it, nothing
//! matching is an error of its own kind, `extract: NAME not found`).

use super::template::{is_name, Variables, BUILT_IN};
use regex::bytes::Regex;
use serde_json_path::JsonPath;
use sluice_config::toml_edit::{Item, TableLike};
use sluice_config::Reader;

/// One value a step takes from its response.
#[derive(Debug, Clone)]
pub struct Extraction {
    pub name: String,
    /// Its slot among the scenario's variables.
    pub slot: usize,
    pub from: Source,
    /// Which match: 1 the first; 0 one at random.
    pub nth: usize,
    pub default: Option<String>,
}

impl PartialEq for Extraction {
    fn eq(&self, other: &Self) -> bool {
        (
            &self.name,
            self.slot,
            self.from.to_string(),
            self.nth,
            &self.default,
        ) == (
            &other.name,
            other.slot,
            other.from.to_string(),
            other.nth,
            &other.default,
        )
    }
}

/// Where in the response the value is.
#[derive(Debug, Clone)]
pub enum Source {
    /// The body, by a regular expression: its first group (the whole match if none).
    Regex(Regex),
    /// The body as JSON: the nodes a JSONPath selects (a string as its text, anything
    /// else as JSON).
    Json(JsonPath, String),
    /// The body, between two texts (JMeter's Boundary Extractor).
    Boundary(String, String),
    Header(String),
    /// A cookie the user holds for the target after this response.
    Cookie(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Regex(re) => write!(f, "regex {:?}", re.as_str()),
            Source::Json(_, path) => write!(f, "json {path:?}"),
            Source::Boundary(l, r) => write!(f, "boundary {l:?} .. {r:?}"),
            Source::Header(name) => write!(f, "header {name}"),
            Source::Cookie(name) => write!(f, "cookie {name}"),
        }
    }
}

/// The parts of a response an extraction reads.
pub struct Response<'a> {
    /// Its head as received (status line and headers).
    pub head: &'a [u8],
    /// Its body (as much as was kept).
    pub body: &'a [u8],
    /// The user's cookie by name, once this response's are stored.
    pub cookie: &'a dyn Fn(&str) -> Option<String>,
}

/// Why an extraction took nothing: an error kind of its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("extract: {0} not found")]
pub struct NotFound(pub String);

impl Extraction {
    /// Whether it reads the response's body (which is then kept, up to 1 MiB).
    pub fn reads_body(&self) -> bool {
        matches!(
            self.from,
            Source::Regex(_) | Source::Json(..) | Source::Boundary(..)
        )
    }

    /// The value in `response`; its default when nothing matches, if it has one.
    pub fn apply(&self, response: &Response<'_>) -> Result<String, NotFound> {
        let found = self.matches(response);
        let pick = match self.nth {
            0 if !found.is_empty() => Some(fastrand::usize(..found.len())),
            0 => None,
            n => Some(n - 1),
        };
        pick.and_then(|i| found.into_iter().nth(i))
            .or_else(|| self.default.clone())
            .ok_or_else(|| NotFound(self.name.clone()))
    }

    fn matches(&self, response: &Response<'_>) -> Vec<String> {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        match &self.from {
            Source::Regex(re) => re
                .captures_iter(response.body)
                .filter_map(|c| c.get(1).or_else(|| c.get(0)))
                .map(|m| text(m.as_bytes()))
                .collect(),
            Source::Json(path, _) => json(path, response.body),
            Source::Boundary(left, right) => boundary(&text(response.body), left, right),
            Source::Header(name) => header_values(response.head, name),
            Source::Cookie(name) => (response.cookie)(name).into_iter().collect(),
        }
    }
}

fn json(path: &JsonPath, body: &[u8]) -> Vec<String> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return Vec::new();
    };
    path.query(&value)
        .all()
        .into_iter()
        .map(|v| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn boundary(body: &str, left: &str, right: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(i) = rest.find(left) {
        let after = &rest[i + left.len()..];
        let Some(j) = after.find(right) else { break };
        out.push(after[..j].to_string());
        rest = &after[j + right.len()..];
    }
    out
}

/// The values of the header `name` in a response head, in order.
pub fn header_values(head: &[u8], name: &str) -> Vec<String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut res = httparse::Response::new(&mut headers);
    if res.parse(head).is_err() {
        return Vec::new();
    }
    res.headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case(name))
        .map(|h| String::from_utf8_lossy(h.value).trim().to_string())
        .collect()
}

/// The names a step's `extract` table gives, declared in `vars` (a first pass, so that
/// any step may use what any other extracts).
pub(super) fn declare(t: &dyn TableLike, vars: &mut Variables) {
    if let Some(table) = t.get("extract").and_then(Item::as_table_like) {
        for (name, _) in table.iter() {
            if is_name(name) && !BUILT_IN.contains(&name) {
                vars.declare(name);
            }
        }
    }
}

const KEYS: &[&str] = &[
    "regex", "json", "boundary", "header", "cookie", "nth", "default",
];
const SOURCES: &[&str] = &["regex", "json", "boundary", "header", "cookie"];
const HINT: &str = "e.g. extract.csrf = { regex = 'name=\"_csrf\" value=\"([^\"]+)\"' }, or json = \"$.token\", header = \"Location\", cookie = \"JSESSIONID\", boundary = [\"id=\", \"&\"]";

/// A step's `extract` table, its names' slots in `vars`.
pub(super) fn extractions(r: &mut Reader, t: &dyn TableLike, vars: &Variables) -> Vec<Extraction> {
    let Some(item) = t.get("extract") else {
        return Vec::new();
    };
    let Some(table) = item.as_table_like() else {
        r.error(item.span(), "`extract` names the values to take", HINT);
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, spec) in table.iter() {
        let span = table.key(name).and_then(|k| k.span());
        if !is_name(name) || BUILT_IN.contains(&name) {
            let why = format!("`{name}` cannot name a variable");
            r.error(
                span,
                why,
                "a name of letters, digits and _ that is not user, room, uuid or now_ms",
            );
            continue;
        }
        let Some(spec) = spec.as_table_like() else {
            r.error(
                span,
                format!("`extract.{name}` says where the value is"),
                HINT,
            );
            continue;
        };
        r.only_keys(spec, KEYS, &format!("`extract.{name}`"));
        let from = source(r, spec, name, span.clone());
        let nth = r.integer(spec, "nth", 1_000_000).unwrap_or(1) as usize;
        let default = r.string(spec, "default").map(|(d, _)| d);
        if let (Some(from), Some(slot)) = (from, vars.slot(name)) {
            out.push(Extraction {
                name: name.to_string(),
                slot,
                from,
                nth,
                default,
            });
        }
    }
    out
}

/// The one place an extraction reads from.
fn source(
    r: &mut Reader,
    spec: &dyn TableLike,
    name: &str,
    span: Option<std::ops::Range<usize>>,
) -> Option<Source> {
    let present: Vec<&str> = SOURCES
        .iter()
        .copied()
        .filter(|k| spec.get(k).is_some())
        .collect();
    let [key] = present.as_slice() else {
        let why = format!("`extract.{name}` takes one of regex, json, boundary, header, cookie");
        r.error(span, why, HINT);
        return None;
    };
    if *key == "boundary" {
        return bounds(r, spec);
    }
    let (value, at) = r.string(spec, key)?;
    let source = match *key {
        "regex" => Regex::new(&value)
            .map(Source::Regex)
            .map_err(|e| e.to_string()),
        "json" => JsonPath::parse(&value)
            .map(|p| Source::Json(p, value.clone()))
            .map_err(|e| e.to_string()),
        "header" => Ok(Source::Header(value)),
        _ => Ok(Source::Cookie(value)),
    };
    source
        .map_err(|why| {
            let first = why.lines().last().unwrap_or_default().trim().to_string();
            r.error(at, format!("`{key}` does not read: {first}"), HINT);
        })
        .ok()
}

fn bounds(r: &mut Reader, spec: &dyn TableLike) -> Option<Source> {
    let item = spec.get("boundary")?;
    let pair: Option<Vec<&str>> = item
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect());
    match pair.as_deref() {
        Some([left, right]) if !left.is_empty() && !right.is_empty() => {
            Some(Source::Boundary(left.to_string(), right.to_string()))
        }
        _ => {
            r.error(
                item.span(),
                "`boundary` takes two texts: what comes before the value and after it",
                "e.g. boundary = ['id=\"', '\"']",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extraction(from: Source, nth: usize, default: Option<&str>) -> Extraction {
        Extraction {
            name: "v".into(),
            slot: 0,
            from,
            nth,
            default: default.map(str::to_string),
        }
    }

    #[test]
    fn each_source_takes_its_value_and_nothing_found_is_its_own_error() {
        let head = b"HTTP/1.1 302 Found\r\nLocation: /home\r\nX-A: 1\r\nX-A: 2\r\n\r\n";
        let body = br#"<input name="_csrf" value="t0k"/><input name="_csrf" value="t1"/>"#;
        let cookie = |name: &str| (name == "JSESSIONID").then(|| "abc".to_string());
        let r = Response {
            head,
            body,
            cookie: &cookie,
        };
        let re = Regex::new(r#"name="_csrf" value="([^"]+)""#).unwrap();
        assert_eq!(
            extraction(Source::Regex(re.clone()), 1, None)
                .apply(&r)
                .unwrap(),
            "t0k"
        );
        assert_eq!(
            extraction(Source::Regex(re.clone()), 2, None)
                .apply(&r)
                .unwrap(),
            "t1"
        );
        let some = extraction(Source::Regex(re), 0, None).apply(&r).unwrap();
        assert!(some == "t0k" || some == "t1", "{some}");
        let bounds = Source::Boundary("value=\"".into(), "\"".into());
        assert_eq!(extraction(bounds, 2, None).apply(&r).unwrap(), "t1");
        let header = |n: &str, nth| extraction(Source::Header(n.into()), nth, None).apply(&r);
        assert_eq!(header("location", 1).unwrap(), "/home");
        assert_eq!(header("X-A", 2).unwrap(), "2");
        let session = extraction(Source::Cookie("JSESSIONID".into()), 1, None);
        assert_eq!(session.apply(&r).unwrap(), "abc");
        let missing = extraction(Source::Cookie("SID".into()), 1, None);
        assert_eq!(
            missing.apply(&r).unwrap_err().to_string(),
            "extract: v not found"
        );
        let defaulted = extraction(Source::Header("X-B".into()), 1, Some("none"));
        assert_eq!(defaulted.apply(&r).unwrap(), "none");
        let json = br#"{"access_token":"jwt.x","items":[{"id":7},{"id":9}]}"#;
        let r = Response {
            head,
            body: json,
            cookie: &cookie,
        };
        let path = |p: &str| Source::Json(JsonPath::parse(p).unwrap(), p.into());
        assert_eq!(
            extraction(path("$.access_token"), 1, None)
                .apply(&r)
                .unwrap(),
            "jwt.x"
        );
        assert_eq!(
            extraction(path("$.items[*].id"), 2, None)
                .apply(&r)
                .unwrap(),
            "9"
        );
        assert!(extraction(path("$.nope"), 1, None).apply(&r).is_err());
    }
}
