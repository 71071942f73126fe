//! `[[route]]`: which requests (host, then path) go where, and what is changed on the
//! way (headers). What a route does is one of `upstream` (forward), `return` /
//! `redirect` (answer) and `root` (static files); the answers are read in `answer`, the
//! header edits in `headers`, what of the path it matches and rewrites in `location`.

use crate::model::{Action, HostMatch, Listener, Matching, RateLimit, Route, Upstream};
use crate::reader::Reader;
use crate::reader::{tables, Span};
use crate::reference::{names, route as keys};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;
use toml_edit::{Item, TableLike};

/// The keys that say what a route does; a route has exactly one.
const ACTIONS: &[&str] = &["upstream", "return", "redirect", "root"];

pub(crate) fn routes(
    r: &mut Reader,
    root: &dyn TableLike,
    upstreams: &[Upstream],
    listeners: &[Listener],
    limits: &[RateLimit],
) -> Vec<Route> {
    let entries = tables(r, root, "route");
    if entries.is_empty() {
        r.error(
            root.get("route").and_then(Item::span).or(Some(0..0)),
            "no route",
            "add [[route]] with path = \"/\" and upstream = \"NAME\"",
        );
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (table, span) in entries {
        let read = route(r, table, span.clone(), (upstreams, listeners, limits));
        r.captures.clear();
        let Some(route) = read else {
            continue;
        };
        if !seen.insert((
            route.host.clone(),
            route.path.clone(),
            match_kind(&route.matching),
            route.listeners.clone(),
        )) {
            r.error(
                span,
                format!(
                    "another route already has this host and path \"{}\"",
                    route.path
                ),
                "remove one of the two routes, or give them different `listener`s",
            );
            continue;
        }
        out.push((route, span));
    }
    crate::location::check_nesting(r, &out);
    out.into_iter().map(|(route, _)| route).collect()
}

/// One `[[route]]`; `None` when what it does is not valid. Its other keys are read
/// whatever became of its action: a route naming an undefined upstream has its other
/// problems listed in the same round.
fn route(
    r: &mut Reader,
    table: &dyn TableLike,
    span: Span,
    (upstreams, listeners, limits): (&[Upstream], &[Listener], &[RateLimit]),
) -> Option<Route> {
    r.only_keys(table, &names(keys::ROUTE), "[[route]]");
    let host = r
        .string(table, "host")
        .and_then(|(h, s)| host_match(r, &h, s));
    let (path, matching) = crate::location::matching(r, table);
    let rewrites = crate::location::rewrites(r, table);
    let listeners = route_listeners(r, table, listeners);
    let at = crate::tls::place(r, span.clone());
    let action = action(r, table, span, upstreams);
    let request_headers = crate::headers::edits(r, table, "request_headers");
    let response_headers = crate::headers::edits(r, table, "response_headers");
    let upgrade = upgrades(r, table);
    let tunnel_idle_timeout = r
        .timeout(table, "tunnel_idle_timeout")
        .unwrap_or(Duration::from_secs(3600));
    let limits = crate::rate::route_limits(r, table, limits);
    let timeout = r.timeout(table, "timeout");
    let guard = crate::guard::guard(r, table);
    let forwards = matches!(action, Some(Action::Proxy { .. }));
    let upstream_path = crate::location::upstream_path(r, table, forwards);
    let compress = crate::compress::compress(r, table, action.as_ref());
    Some(Route {
        host,
        path,
        matching,
        rewrites,
        upstream_path,
        listeners,
        action: action?,
        request_headers,
        response_headers,
        upgrade,
        tunnel_idle_timeout,
        limits,
        timeout,
        guard,
        compress,
        at,
    })
}

/// What two routes with the same host and path must differ in: how they match (a
/// regular expression also by the prefix it is nested in).
fn match_kind(m: &Matching) -> (u8, Option<String>) {
    match m {
        Matching::Prefix { .. } => (0, None),
        Matching::Exact => (1, None),
        Matching::Regex { under, .. } => (2, under.clone()),
    }
}

/// `listener = "0.0.0.0:80"` or a list of them: binds of `[[listener]]`s, sorted.
fn route_listeners(
    r: &mut Reader,
    table: &dyn TableLike,
    listeners: &[Listener],
) -> Vec<SocketAddr> {
    let items = r.one_or_list(table, "listener", "a listener's bind or a list of them");
    let mut out = Vec::new();
    for item in items {
        let addr = item.as_str().and_then(|s| s.parse::<SocketAddr>().ok());
        match addr.filter(|a| listeners.iter().any(|l| l.bind == *a)) {
            Some(a) => out.push(a),
            None => {
                let binds: Vec<String> = listeners
                    .iter()
                    .map(|l| format!("\"{}\"", l.bind))
                    .collect();
                r.error(
                    item.span(),
                    "`listener` names no [[listener]]",
                    format!("write the `bind` of one of them: {}", binds.join(", ")),
                );
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `upgrade = ["websocket"]` (the default); `[]` refuses every upgrade on the route.
fn upgrades(r: &mut Reader, table: &dyn TableLike) -> Vec<String> {
    let Some(v) = r.value(table, "upgrade", "a list of protocols") else {
        return vec!["websocket".to_string()];
    };
    let list = v.as_array().map(|a| {
        a.iter()
            .map(|p| p.as_str().map(str::to_ascii_lowercase))
            .collect::<Option<Vec<_>>>()
    });
    match list {
        Some(Some(protocols)) => protocols,
        _ => {
            r.error(
                v.span(),
                "`upgrade` must be a list of protocol names",
                "write upgrade = [\"websocket\"], or [] to refuse upgrades",
            );
            Vec::new()
        }
    }
}

/// What the route does: exactly one of `upstream`, `return`, `redirect` and `root`.
fn action(
    r: &mut Reader,
    table: &dyn TableLike,
    span: Span,
    upstreams: &[Upstream],
) -> Option<Action> {
    let given: Vec<&str> = ACTIONS
        .iter()
        .copied()
        .filter(|k| table.contains_key(k))
        .collect();
    match given[..] {
        [] => {
            r.error(
                span,
                "[[route]] has no `upstream`",
                "add upstream = \"NAME\" naming an [upstream.NAME] section (or return, redirect, root)",
            );
            None
        }
        ["upstream"] => {
            route_upstream(r, table, upstreams).map(|upstream| Action::Proxy { upstream })
        }
        ["return"] => crate::answer::returned(r, table).map(Action::Return),
        ["redirect"] => crate::answer::redirect(r, table).map(Action::Return),
        ["root"] => crate::answer::root(r, table),
        [_] => None,
        [_, second, ..] => {
            let span = table.key(second).and_then(|k| k.span());
            r.error(
                span,
                format!(
                    "a route takes one of {}, not both `{}` and `{second}`",
                    ACTIONS.join(", "),
                    given[0]
                ),
                "split it into two routes with different paths",
            );
            None
        }
    }
}

fn route_upstream(r: &mut Reader, table: &dyn TableLike, upstreams: &[Upstream]) -> Option<usize> {
    let (name, name_span) = r.string(table, "upstream")?;
    let found = upstreams.iter().position(|u| u.name == name);
    if found.is_none() {
        let known: Vec<&str> = upstreams.iter().map(|u| u.name.as_str()).collect();
        let hint = if known.is_empty() {
            "define it as [upstream.NAME] with servers = [...]".to_string()
        } else {
            format!("defined upstreams: {}", known.join(", "))
        };
        r.error(
            name_span,
            format!("route names upstream \"{name}\", which is not defined"),
            hint,
        );
    }
    found
}

fn host_match(r: &mut Reader, host: &str, span: Span) -> Option<HostMatch> {
    let host = host.to_ascii_lowercase();
    let (suffix, name) = match host.strip_prefix("*.") {
        Some(rest) => (true, rest),
        None => (false, host.as_str()),
    };
    let valid = !name.is_empty()
        && name
            .split('.')
            .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if !valid {
        r.error(
            span,
            format!("host \"{host}\" is not a host name"),
            "write \"example.com\" or \"*.example.com\", without port or scheme",
        );
        return None;
    }
    Some(if suffix {
        HostMatch::Suffix(format!(".{name}"))
    } else {
        HostMatch::Exact(name.to_string())
    })
}
