//! `sluice bench import recording.har`: a browser's recording (HAR 1.2, as Chrome's,
//! Firefox's and Safari's developer tools save it) in, a scenario file out: one user
//! doing what the browser did, each request a step, the pauses between them its think
//! times, as k6's and Gatling's recorders do.
//!
//! It owns the mapping from a HAR's entries to `http` steps: the target is the origin
//! of the recording's first request (of the page's own server); requests to other
//! origins (CDNs, analytics) are listed, not sent, since a scenario has one target.
//! Headers a client makes itself are left out (`Host`, `Content-Length`, `Connection`,
//! HTTP/2's pseudo-headers), and so are `Cookie` (each user's jar keeps what the
//! server sets; a recorded session would be every user's) and `Accept-Encoding`
//! (sluice does not decompress: checks and extractions read the body as sent). It
//! sends nothing and reads nothing but the file.

use crate::jmx::{Dropped, Imported};
use serde::Deserialize;
use std::fmt::Write;
use url::Url;

/// Headers not carried over, and why (lower case).
const LEFT_OUT: &[(&str, &str)] = &[
    ("host", "the client's own"),
    ("content-length", "the client's own"),
    ("connection", "the client's own"),
    ("keep-alive", "the client's own"),
    ("transfer-encoding", "the client's own"),
    ("cookie", "each user's cookie jar sends what the server set"),
    ("accept-encoding", "sluice reads bodies as sent"),
];

/// A recording that cannot be translated at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HarError {
    #[error("{file}:{line}:{col}: not a HAR recording: {why} (save one from the browser's network panel: \"Save all as HAR\")")]
    Json {
        file: String,
        line: usize,
        col: usize,
        why: String,
    },
    #[error("{file}: the recording has no request over http:// or https://")]
    Empty { file: String },
}

#[derive(Deserialize)]
struct Har {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    started_date_time: String,
    /// The whole exchange, ms.
    #[serde(default)]
    time: f64,
    request: Request,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<Header>,
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct Header {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostData {
    #[serde(default)]
    mime_type: String,
    #[serde(default)]
    text: String,
}

/// One request kept: its step's lines, and when it began and ended (ms of the epoch).
struct Kept {
    lines: String,
    began: f64,
    ended: f64,
}

/// Translates the recording `text`; `file` names it in messages.
pub fn import(file: &str, text: &str) -> Result<Imported, HarError> {
    let har: Har = serde_json::from_str(text).map_err(|e| HarError::Json {
        file: file.into(),
        line: e.line(),
        col: e.column(),
        why: e.to_string(),
    })?;
    let mut entries: Vec<(usize, Entry, Url)> = har
        .log
        .entries
        .into_iter()
        .enumerate()
        .filter_map(|(i, e)| Some((i + 1, Url::parse(&e.request.url).ok()?, e)))
        .filter(|(_, url, _)| matches!(url.scheme(), "http" | "https"))
        .map(|(i, url, e)| (i, e, url))
        .collect();
    entries.sort_by(|a, b| a.1.started_date_time.cmp(&b.1.started_date_time));
    let origin = entries
        .first()
        .map(|(_, _, url)| url.origin())
        .ok_or_else(|| HarError::Empty { file: file.into() })?;
    let mut dropped = Vec::new();
    let mut kept: Vec<Kept> = Vec::new();
    for (number, entry, url) in &entries {
        let place = format!("entry {number}: {} {url}", entry.request.method);
        let dropping = |why: String| Dropped {
            line: 0,
            place: place.clone(),
            element: "request".into(),
            why,
        };
        if url.origin() != origin {
            dropped.push(dropping(
                "another origin than the recording's first request's: a scenario has one target"
                    .into(),
            ));
            continue;
        }
        match step(entry, url) {
            Ok(lines) => kept.push(Kept {
                lines,
                began: epoch_ms(&entry.started_date_time),
                ended: epoch_ms(&entry.started_date_time) + entry.time.max(0.0),
            }),
            Err(why) => dropped.push(dropping(why)),
        }
    }
    Ok(Imported {
        scenario: scenario(file, &origin.ascii_serialization(), &kept, &dropped),
        dropped,
        notes: notes(),
    })
}

/// What every translated recording says about itself.
fn notes() -> Vec<String> {
    vec![
        "one user doing once what the browser did: give --users, --iterations or -d to load with it".into(),
        "think times are the pauses the recording has between one request's end and the next one's start".into(),
        "requests the browser sent at once (a page's resources) are sent one after another by each user".into(),
        "values the server hands out (a CSRF token, a session id in a URL) are sent as recorded: extract them (extract.NAME) where the server checks them".into(),
    ]
}

/// The step's TOML lines (without its table header); `Err` says why it cannot be one.
fn step(entry: &Entry, url: &Url) -> Result<String, String> {
    let request = &entry.request;
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let body = request
        .post_data
        .as_ref()
        .map(|p| p.text.as_str())
        .unwrap_or_default();
    for (what, text) in [("its URL", path.as_str()), ("its body", body)] {
        if let Some(name) = braced_name(text) {
            return Err(format!(
                "{what} has `{{{name}}}`, which a scenario would read as a variable"
            ));
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "name = {}",
        quoted(&format!("{} {}", request.method, short(&path)))
    );
    let _ = writeln!(
        out,
        "http = {}",
        quoted(&format!("{} {path}", request.method))
    );
    let headers = headers(request);
    if !headers.is_empty() {
        let list: Vec<String> = headers.iter().map(|h| quoted(h)).collect();
        let _ = writeln!(out, "headers = [{}]", list.join(", "));
    }
    if !body.is_empty() {
        let _ = writeln!(out, "body = {}", quoted(body));
    }
    Ok(out)
}

/// The request's headers a scenario sends as they are (the content type of its body
/// too, when only `postData` names it).
fn headers(request: &Request) -> Vec<String> {
    let mut out: Vec<String> = request
        .headers
        .iter()
        .filter(|h| !h.name.starts_with(':'))
        .filter(|h| !LEFT_OUT.iter().any(|(n, _)| h.name.eq_ignore_ascii_case(n)))
        .map(|h| format!("{}: {}", h.name, h.value))
        .collect();
    let typed = out
        .iter()
        .any(|h| h.to_ascii_lowercase().starts_with("content-type:"));
    if let Some(p) = request
        .post_data
        .as_ref()
        .filter(|p| !typed && !p.mime_type.is_empty())
    {
        out.push(format!("Content-Type: {}", p.mime_type));
    }
    out
}

/// A `{name}` in `text` that the scenario's parser would take for a variable.
fn braced_name(text: &str) -> Option<&str> {
    text.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
        .find(|name| crate::scenario::is_name(name))
}

/// A label short enough for the report's table.
fn short(path: &str) -> String {
    match path.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &path[..i]),
        None => path.to_string(),
    }
}

fn quoted(text: &str) -> String {
    sluice_config::toml_edit::Value::from(text)
        .to_string()
        .trim()
        .to_string()
}

/// A HAR time (RFC 3339) as ms of the epoch; 0 when it does not read.
fn epoch_ms(text: &str) -> f64 {
    time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_or(0.0, |t| t.unix_timestamp_nanos() as f64 / 1e6)
}

fn scenario(file: &str, origin: &str, kept: &[Kept], dropped: &[Dropped]) -> String {
    let mut out = format!("# imported from {file} by sluice bench import\n");
    if !dropped.is_empty() {
        let _ = writeln!(out, "#\n# Not sent ({}):", dropped.len());
        for d in dropped {
            let _ = writeln!(out, "#   {d}");
        }
    }
    let mut reasons: Vec<&str> = LEFT_OUT.iter().map(|(_, why)| *why).collect();
    reasons.dedup();
    let groups: Vec<String> = reasons
        .iter()
        .map(|why| {
            let names: Vec<&str> = LEFT_OUT
                .iter()
                .filter(|(_, w)| w == why)
                .map(|(n, _)| *n)
                .collect();
            format!("{} ({why})", names.join(", "))
        })
        .collect();
    let _ = writeln!(
        out,
        "# headers left out of every request: {}",
        groups.join("; ")
    );
    let _ = write!(
        out,
        "\ntarget = {}\nusers = 1\niterations = 1\n",
        quoted(origin)
    );
    for (i, step) in kept.iter().enumerate() {
        out.push_str("\n[[step]]\n");
        out.push_str(&step.lines);
        let pause = kept.get(i + 1).map_or(0.0, |next| next.began - step.ended);
        if pause >= 1.0 {
            let _ = writeln!(out, "think = \"{}ms\"", pause.round() as u64);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Action, Scenario, Think};
    use std::time::Duration;

    const RECORDING: &str = r#"{"log": {"version": "1.2", "creator": {"name": "Firefox", "version": "140"},
      "pages": [{"startedDateTime": "2026-11-29T10:00:00.000Z", "id": "page_1", "title": "Shop"}],
      "entries": [
        {"startedDateTime": "2026-11-29T10:00:00.000+00:00", "time": 20, "request": {"method": "GET",
          "url": "http://127.0.0.1:8080/login", "httpVersion": "HTTP/1.1",
          "headers": [{"name": "Host", "value": "127.0.0.1:8080"}, {"name": "Accept", "value": "text/html"},
                      {"name": "Accept-Encoding", "value": "gzip"}, {"name": "Cookie", "value": "SID=old"}],
          "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0},
         "response": {"status": 200}},
        {"startedDateTime": "2026-11-29T10:00:00.010+00:00", "time": 5, "request": {"method": "GET",
          "url": "https://cdn.example/app.js", "headers": []}, "response": {"status": 200}},
        {"startedDateTime": "2026-11-29T10:00:02.020+00:00", "time": 30, "request": {"method": "POST",
          "url": "http://127.0.0.1:8080/login?next=%2Fhome", "headers": [{"name": ":authority", "value": "x"}],
          "postData": {"mimeType": "application/x-www-form-urlencoded", "text": "username=ann&password=pw-ann"}},
         "response": {"status": 302}},
        {"startedDateTime": "2026-11-29T10:00:02.100+00:00", "time": 10, "request": {"method": "PUT",
          "url": "http://127.0.0.1:8080/items/{id}", "headers": []}, "response": {"status": 404}},
        {"startedDateTime": "2026-11-29T10:00:02.200+00:00", "time": 10, "request": {"method": "POST",
          "url": "http://127.0.0.1:8080/say", "headers": [],
          "postData": {"mimeType": "text/plain", "text": "hello {token}"}}, "response": {"status": 200}}
      ]}}"#;

    #[test]
    fn a_recording_becomes_one_user_s_steps_with_its_pauses_and_what_is_not_sent_listed() {
        let imported = import("shop.har", RECORDING).unwrap();
        let s = Scenario::parse("shop.toml", &imported.scenario).unwrap();
        let steps = &s.flows[0].steps;
        // The URL's braces are sent encoded, as the browser sent them.
        assert_eq!(steps.len(), 3, "{}", imported.scenario);
        assert_eq!(steps[2].name, "PUT /items/%7Bid%7D");
        let Action::Http {
            method, headers, ..
        } = &steps[0].action
        else {
            panic!("{:?}", steps[0].action);
        };
        assert_eq!(method, "GET");
        let names: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Accept"], "Host, Accept-Encoding, Cookie left out");
        assert_eq!(steps[0].think, Think::Fixed(Duration::from_millis(2000)));
        assert_eq!(steps[1].name, "POST /login?next=%2Fhome");
        let Action::Http { headers, .. } = &steps[1].action else {
            panic!();
        };
        assert_eq!(headers.len(), 1, "the body's type, no pseudo-header");
        let whys: Vec<String> = imported.dropped.iter().map(|d| d.to_string()).collect();
        assert!(
            whys[0].contains("entry 2: GET https://cdn.example/app.js")
                && whys[0].contains("another origin"),
            "{whys:?}"
        );
        assert!(
            whys[1].contains("entry 5") && whys[1].contains("its body has `{token}`"),
            "{whys:?}"
        );
    }

    #[test]
    fn what_is_no_recording_is_told_with_its_place() {
        let e = import("x.har", "{\"log\": {\"entries\": [1]}}").unwrap_err();
        assert!(e.to_string().starts_with("x.har:1:"), "{e}");
        let e = import("x.har", "{\"log\": {\"entries\": []}}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x.har: the recording has no request over http:// or https://"
        );
    }
}
