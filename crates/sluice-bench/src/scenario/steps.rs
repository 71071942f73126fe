//! Reading one `[[setup]]`, `[[step]]` or `[[teardown]]` table: which action it is (one
//! of `http`, `ws`, `ws_send`, `ws_expect`, `ws_close`, `stomp`) and its options.

use super::extract::extractions;
use super::{Action, ScenarioStep, Stomp, Template, Variables};
use sluice_config::toml_edit::{TableLike, Value};
use sluice_config::Reader;
use std::ops::Range;

type Span = Range<usize>;

/// The keys that say what a step does; a step has exactly one.
const ACTIONS: &[&str] = &["http", "ws", "ws_send", "ws_expect", "ws_close", "stomp"];

pub(super) const STEP_KEYS: &[&str] = &[
    "name",
    "http",
    "ws",
    "ws_send",
    "ws_expect",
    "ws_close",
    "stomp",
    "headers",
    "body",
    "expect_status",
    "expect_body",
    "receipt",
    "timeout",
    "think",
    "repeat",
    "extract",
    "if",
];

/// The step's reading: the file's reader and the scenario's variables.
pub(super) struct Reading<'r, 'a> {
    pub r: &'r mut Reader<'a>,
    pub vars: &'r Variables,
}

pub(super) fn step(
    x: &mut Reading<'_, '_>,
    t: &dyn TableLike,
    section: &str,
    number: &str,
) -> Option<ScenarioStep> {
    let r = &mut *x.r;
    r.only_keys(t, STEP_KEYS, &format!("a [[{section}]]"));
    // Every key is checked, whatever else is wrong with the step.
    let think = super::think::think(r, t);
    let repeat = r.integer(t, "repeat", 1_000_000).unwrap_or(1).max(1) as u32;
    let timeout = r.timeout(t, "timeout");
    let name = r.string(t, "name").map(|(n, _)| n);
    let extract = extractions(r, t, x.vars);
    let condition = r.string(t, "if").and_then(|(text, span)| {
        super::Condition::parse(&text, x.vars)
            .map_err(|why| {
                r.error(
                    span,
                    why,
                    "e.g. if = \"{token}\", if = \"{role} == admin\", if = \"{csrf} != NOT_FOUND\"",
                )
            })
            .ok()
    });
    let (key, text, span) = action_key(r, t, section)?;
    let action = action(x, t, key, &text, span)?;
    if !extract.is_empty() && !matches!(action, Action::Http { .. }) {
        let span = t.key("extract").and_then(|k| k.span());
        let why = "`extract` reads an HTTP response: this step sends none";
        x.r.error(
            span,
            why,
            "move it to the http step whose answer holds the value",
        );
    }
    Some(ScenarioStep {
        name: name.unwrap_or_else(|| format!("{number} {text}")),
        action,
        think,
        repeat,
        timeout,
        extract,
        condition,
    })
}

/// The one action key of the step, its text (`true` for `ws_close`) and where it is.
fn action_key<'k>(
    r: &mut Reader,
    t: &dyn TableLike,
    section: &str,
) -> Option<(&'k str, String, Option<Span>)> {
    let present: Vec<&str> = ACTIONS
        .iter()
        .copied()
        .filter(|k| t.get(k).is_some())
        .collect();
    let first_key_span = || {
        t.iter()
            .next()
            .and_then(|(k, _)| t.key(k))
            .and_then(|k| k.span())
    };
    match present.as_slice() {
        [] => {
            r.error(
                first_key_span(),
                format!("a [[{section}]] needs what it does"),
                "one of http = \"GET /\", ws = \"/chat\", ws_send, ws_expect, ws_close = true, stomp = \"CONNECT\"",
            );
            None
        }
        [key] if *key == "ws_close" => {
            let yes = r.boolean(t, key)?;
            let span = t.get(key).and_then(|i| i.span());
            if !yes {
                r.error(span, "`ws_close` can only be true", "write ws_close = true");
                return None;
            }
            Some((key, "ws_close".into(), span))
        }
        [key] => {
            let (text, span) = r.string(t, key)?;
            Some((key, text, span))
        }
        [_, second, ..] => {
            let span = t.key(second).and_then(|k| k.span());
            r.error(
                span,
                format!("a [[{section}]] does one thing: {}", present.join(", ")),
                "split it into one step per action",
            );
            None
        }
    }
}

fn action(
    x: &mut Reading<'_, '_>,
    t: &dyn TableLike,
    key: &str,
    text: &str,
    span: Option<Span>,
) -> Option<Action> {
    let headers = headers(x, t);
    let body = match x.r.string(t, "body") {
        Some((b, span)) => template(x, &b, span),
        None => Template::text(""),
    };
    let expect_status = statuses(x.r, t);
    let expect_body =
        x.r.string(t, "expect_body")
            .map(|(b, span)| template(x, &b, span));
    let receipt = x.r.boolean(t, "receipt").unwrap_or(true);
    Some(match key {
        "http" => {
            let (method, path) = method_path(x.r, text, span.clone())?;
            Action::Http {
                method,
                path: template(x, &path, span),
                headers,
                body,
                expect_status,
                expect_body,
            }
        }
        "ws" => {
            if !text.starts_with('/') {
                x.r.error(span, "`ws` is the path to open", "e.g. ws = \"/chat\"");
                return None;
            }
            Action::WsOpen {
                path: template(x, text, span),
                headers,
            }
        }
        "ws_send" => Action::WsSend(template(x, text, span)),
        "ws_expect" => Action::WsExpect(template(x, text, span)),
        "ws_close" => Action::WsClose,
        _ => Action::Stomp(stomp(x, text, span, headers, body, receipt)?),
    })
}

/// `stomp = "CONNECT" | "SUBSCRIBE dest" | "UNSUBSCRIBE dest" | "SEND dest" | "DISCONNECT"`.
fn stomp(
    x: &mut Reading<'_, '_>,
    text: &str,
    span: Option<Span>,
    headers: Vec<(String, Template)>,
    body: Template,
    receipt: bool,
) -> Option<Stomp> {
    let (command, destination) = match text.split_once(' ') {
        Some((c, d)) => (c, Some(template(x, d.trim(), span.clone()))),
        None => (text, None),
    };
    let stomp = match (command, destination) {
        ("CONNECT" | "STOMP", None) => Stomp::Connect { headers },
        ("SUBSCRIBE", Some(destination)) => Stomp::Subscribe {
            destination,
            headers,
            receipt,
        },
        ("UNSUBSCRIBE", Some(destination)) => Stomp::Unsubscribe { destination },
        ("SEND", Some(destination)) => Stomp::Send {
            destination,
            headers,
            body,
        },
        ("DISCONNECT", None) => Stomp::Disconnect { receipt },
        _ => {
            x.r.error(
                span,
                format!("`stomp` = \"{text}\" is not a STOMP step"),
                "CONNECT, SUBSCRIBE /dest, UNSUBSCRIBE /dest, SEND /dest or DISCONNECT",
            );
            return None;
        }
    };
    Some(stomp)
}

/// `text` with its variables read; one it cannot read is an error at `span`, and the
/// text is kept as written.
fn template(x: &mut Reading<'_, '_>, text: &str, span: Option<Span>) -> Template {
    Template::parse(text, x.vars).unwrap_or_else(|why| {
        let mut hint =
            "the variables: {user}, {room}, {uuid}, {now_ms}, {random(1,1000)}".to_string();
        if !x.vars.is_empty() {
            let own: Vec<String> = x.vars.names().iter().map(|n| format!("{{{n}}}")).collect();
            hint.push_str(&format!(
                ", and this scenario's data columns and extractions: {}",
                own.join(", ")
            ));
        }
        x.r.error(span, why, hint);
        Template::text(text)
    })
}

/// `http = "METHOD PATH"`.
fn method_path(r: &mut Reader, http: &str, span: Option<Span>) -> Option<(String, String)> {
    let parts = http
        .split_once(' ')
        .filter(|(m, p)| !m.is_empty() && p.trim().starts_with('/'));
    let Some((method, path)) = parts else {
        r.error(
            span,
            format!("`http` = \"{http}\" is not METHOD PATH"),
            "e.g. http = \"POST /login\"",
        );
        return None;
    };
    Some((method.to_string(), path.trim().to_string()))
}

fn headers(x: &mut Reading<'_, '_>, t: &dyn TableLike) -> Vec<(String, Template)> {
    let Some(item) = t.get("headers") else {
        return Vec::new();
    };
    let Some(array) = item.as_array() else {
        x.r.error(
            item.span(),
            "`headers` must be a list of \"Name: value\"",
            "e.g. headers = [\"Accept: application/json\"]",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for v in array.iter() {
        match v.as_str().and_then(|h| h.split_once(':')) {
            Some((name, value)) if !name.trim().is_empty() && !name.contains(' ') => {
                let value = template(x, value.trim(), v.span());
                out.push((name.trim().to_string(), value));
            }
            _ => x.r.error(
                v.span(),
                "a header must be \"Name: value\"",
                "e.g. \"Content-Type: application/json\"",
            ),
        }
    }
    out
}

fn statuses(r: &mut Reader, t: &dyn TableLike) -> Vec<u16> {
    let Some(item) = t.get("expect_status") else {
        return Vec::new();
    };
    let values: Vec<&Value> = match item.as_value() {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let mut out = Vec::new();
    for v in values {
        match v.as_integer() {
            Some(n) if (100..=599).contains(&n) => out.push(n as u16),
            _ => r.error(
                v.span(),
                "`expect_status` takes HTTP statuses, 100 to 599",
                "e.g. expect_status = [200, 204]",
            ),
        }
    }
    out
}
