//! From a parsed TOML document to a [`Config`], checking everything on the way.

use crate::error::{ConfigError, Errors};
use crate::model::{AccessLog, Config, HostMatch, Listener, LogFormat, LogTarget, Route, Upstream};
use crate::reader::Reader;
use crate::resilience;
use crate::servers::socket_addr;
use std::collections::HashSet;
use std::ops::Range;
use std::time::Duration;
use toml_edit::{ImDocument, Item, TableLike, Value};

type Span = Option<Range<usize>>;

const TOP_KEYS: &[&str] = &[
    "workers",
    "header_timeout",
    "client_idle_timeout",
    "keepalive_timeout",
    "max_header_bytes",
    "shutdown_grace",
    "pid_file",
    "listener",
    "route",
    "upstream",
    "admin",
    "access_log",
    "access_log_format",
];
const LISTENER_KEYS: &[&str] = &["bind", "tls"];
const ROUTE_KEYS: &[&str] = &["host", "path", "upstream", "upgrade", "tunnel_idle_timeout"];
const UPSTREAM_KEYS: &[&str] = &[
    "hash_key",
    "hash_method",
    "hash_bound",
    "ewma_decay",
    "balance",
    "servers",
    "keepalive",
    "idle_timeout",
    "connect_timeout",
    "read_timeout",
    "max_fails",
    "fail_window",
    "eject_for",
    "fail_status",
    "retries",
    "retry_non_idempotent",
    "retry_budget",
    "slow_start",
    "health",
];

pub(crate) fn document(file: &str, text: &str) -> Result<Config, Errors> {
    let doc = match ImDocument::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            let message = format!("invalid TOML: {}", e.message().trim());
            return Err(Errors(vec![ConfigError::at(
                file,
                text,
                e.span(),
                message,
                "fix the syntax at this position",
            )]));
        }
    };
    let mut r = Reader::new(file, text);
    let root = doc.as_table();
    r.only_keys(root, TOP_KEYS, "the top level");
    let listeners = listeners(&mut r, root);
    let upstreams = upstreams(&mut r, root, &listeners);
    let config = Config {
        workers: r.integer(root, "workers", 1024).unwrap_or(0) as usize,
        header_timeout: r
            .timeout(root, "header_timeout")
            .unwrap_or(Duration::from_secs(10)),
        client_idle_timeout: r
            .timeout(root, "client_idle_timeout")
            .unwrap_or(Duration::from_secs(60)),
        keepalive_timeout: r
            .timeout(root, "keepalive_timeout")
            .unwrap_or(Duration::from_secs(30)),
        max_header_bytes: r
            .integer(root, "max_header_bytes", 1 << 20)
            .unwrap_or(16 * 1024) as usize,
        shutdown_grace: r
            .duration(root, "shutdown_grace")
            .unwrap_or(Duration::from_secs(30)),
        pid_file: r.string(root, "pid_file").map(|(p, _)| p.into()),
        routes: routes(&mut r, root, &upstreams),
        admin: crate::admin::admin(&mut r, root, &listeners),
        access_log: access_log(&mut r, root),
        upstreams,
        listeners,
    };
    if config.max_header_bytes < 1024 {
        let span = root.get("max_header_bytes").and_then(Item::span);
        r.error(
            span,
            "`max_header_bytes` is too small",
            "use at least 1024; browsers send 1-4 KiB of headers",
        );
    }
    if r.errors.is_empty() {
        Ok(config)
    } else {
        r.errors.sort_by_key(|e| (e.line, e.col));
        Err(Errors(r.errors))
    }
}

/// `access_log = "stdout" | "/path"` and `access_log_format = "combined" | "json"`.
fn access_log(r: &mut Reader, root: &dyn TableLike) -> Option<AccessLog> {
    let format = match r.string(root, "access_log_format") {
        None => LogFormat::Combined,
        Some((f, _)) if f == "combined" => LogFormat::Combined,
        Some((f, _)) if f == "json" => LogFormat::Json,
        Some((f, span)) => {
            r.error(
                span,
                format!("`access_log_format` = \"{f}\" is not a log format"),
                "use \"combined\" (nginx's, which log analysers read) or \"json\"",
            );
            LogFormat::Combined
        }
    };
    let Some((target, span)) = r.string(root, "access_log") else {
        if let Some(item) = root.get("access_log_format") {
            r.error(
                item.span(),
                "`access_log_format` without `access_log`",
                "add access_log = \"stdout\" or a file path",
            );
        }
        return None;
    };
    let target = match target.as_str() {
        "stdout" => LogTarget::Stdout,
        "" => {
            r.error(
                span,
                "`access_log` is empty",
                "write \"stdout\" or a file path",
            );
            return None;
        }
        path => LogTarget::File(path.into()),
    };
    Some(AccessLog { target, format })
}

/// The tables under `key`, written either as `[[key]]` or as an inline array of tables.
fn tables<'t>(
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

fn listeners(r: &mut Reader, root: &dyn TableLike) -> Vec<Listener> {
    let entries = tables(r, root, "listener");
    if entries.is_empty() {
        r.error(
            root.get("listener").and_then(Item::span).or(Some(0..0)),
            "no listener",
            "add [[listener]] with bind = \"127.0.0.1:8080\"",
        );
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (table, span) in entries {
        r.only_keys(table, LISTENER_KEYS, "[[listener]]");
        let Some((bind, bind_span)) = r.string(table, "bind") else {
            if table.get("bind").is_none() {
                r.error(
                    span,
                    "[[listener]] has no `bind`",
                    "add bind = \"127.0.0.1:8080\"",
                );
            }
            continue;
        };
        let Some(addr) = socket_addr(r, &bind, bind_span.clone(), "bind") else {
            continue;
        };
        if !seen.insert(addr) {
            r.error(
                bind_span,
                format!("duplicate bind {addr}"),
                "each [[listener]] needs its own address",
            );
            continue;
        }
        out.push(Listener {
            bind: addr,
            tls: crate::tls::tls(r, table),
        });
    }
    out
}

fn upstreams(r: &mut Reader, root: &dyn TableLike, listeners: &[Listener]) -> Vec<Upstream> {
    let Some(item) = root.get("upstream") else {
        return Vec::new();
    };
    let Some(table) = item.as_table_like() else {
        r.error(
            item.span(),
            "`upstream` must be a table of named upstreams",
            "write [upstream.NAME] sections",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, entry) in table.iter() {
        match entry.as_table_like() {
            Some(t) => out.push(upstream(
                r,
                name,
                t,
                listeners,
                entry
                    .span()
                    .or_else(|| table.key(name).and_then(|k| k.span())),
            )),
            None => r.error(
                entry.span(),
                format!("upstream `{name}` must be a table"),
                format!("write [upstream.{name}] with servers = [...]"),
            ),
        }
    }
    out
}

fn upstream(
    r: &mut Reader,
    name: &str,
    t: &dyn TableLike,
    listeners: &[Listener],
    span: Span,
) -> Upstream {
    r.only_keys(t, UPSTREAM_KEYS, &format!("[upstream.{name}]"));
    Upstream {
        name: name.to_string(),
        balance: crate::balance::balance(r, t),
        servers: crate::servers::servers(r, name, t, listeners, span),
        keepalive: r.integer(t, "keepalive", 1_000_000).unwrap_or(128) as usize,
        idle_timeout: r
            .timeout(t, "idle_timeout")
            .unwrap_or(Duration::from_secs(4)),
        connect_timeout: r
            .timeout(t, "connect_timeout")
            .unwrap_or(Duration::from_secs(2)),
        read_timeout: r
            .timeout(t, "read_timeout")
            .unwrap_or(Duration::from_secs(60)),
        failure: resilience::failure(r, t),
        retry: resilience::retry(r, t),
        slow_start: r.duration(t, "slow_start").unwrap_or(Duration::ZERO),
        health: resilience::health(r, t, name),
    }
}

fn routes(r: &mut Reader, root: &dyn TableLike, upstreams: &[Upstream]) -> Vec<Route> {
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
        r.only_keys(table, ROUTE_KEYS, "[[route]]");
        let host = r
            .string(table, "host")
            .and_then(|(h, s)| host_match(r, &h, s));
        let path = match r.string(table, "path") {
            Some((p, s)) if !p.starts_with('/') => {
                r.error(
                    s,
                    format!("path \"{p}\" does not start with /"),
                    "write a path prefix such as \"/\" or \"/api/\"",
                );
                p
            }
            Some((p, _)) => p,
            None => "/".to_string(),
        };
        let Some(upstream) = route_upstream(r, table, span.clone(), upstreams) else {
            continue;
        };
        if !seen.insert((host.clone(), path.clone())) {
            r.error(
                span,
                format!("another route already has this host and path \"{path}\""),
                "remove one of the two routes",
            );
            continue;
        }
        out.push(Route {
            host,
            path,
            upstream,
            upgrade: upgrades(r, table),
            tunnel_idle_timeout: r
                .timeout(table, "tunnel_idle_timeout")
                .unwrap_or(Duration::from_secs(3600)),
        });
    }
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

fn route_upstream(
    r: &mut Reader,
    table: &dyn TableLike,
    span: Span,
    upstreams: &[Upstream],
) -> Option<usize> {
    let Some((name, name_span)) = r.string(table, "upstream") else {
        if table.get("upstream").is_none() {
            r.error(
                span,
                "[[route]] has no `upstream`",
                "add upstream = \"NAME\" naming an [upstream.NAME] section",
            );
        }
        return None;
    };
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
