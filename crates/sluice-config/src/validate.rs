//! From a parsed TOML document to a [`Config`], checking everything on the way.

use crate::error::Errors;
use crate::model::{AccessLog, Config, Http2Limits, Listener, LogFormat, LogTarget, Upstream};
use crate::reader::{tables, Reader, Span};
use crate::reference::{listener, names, top, upstream};
use crate::resilience;
use crate::servers::socket_addr;
use std::collections::HashSet;
use std::time::Duration;
use toml_edit::{ImDocument, Item, TableLike};

/// Keys written on a listener that belong in its `tls` table or in `[http2]`.
const LISTENER_MOVED: &[(&str, &str)] = &[
    ("cert", TLS_FORM),
    ("key", TLS_FORM),
    ("certificates", TLS_FORM),
    ("acme", "it belongs inside `tls`: tls = { acme = true }"),
    ("max_concurrent_streams", HTTP2_PLACE),
    ("window", HTTP2_PLACE),
];
/// Keys of a server written at its upstream's level.
const UPSTREAM_MOVED: &[(&str, &str)] = &[
    ("weight", SERVER_FORM),
    ("backup", SERVER_FORM),
    ("addr", SERVER_FORM),
];
const SERVER_FORM: &str = "it belongs to a server: servers = [{ addr = \"10.0.0.1:8080\", weight = 2 }, { addr = \"10.0.0.2:8080\", backup = true }]";
const TLS_FORM: &str = "it belongs inside `tls`: tls = { cert = \"fullchain.pem\", key = \"privkey.pem\", certificates = [{ cert = \"other.pem\", key = \"other.key\" }] }";
const HTTP2_PLACE: &str = "HTTP/2 limits are set for all listeners in the top-level [http2] table";

pub(crate) fn document(file: &str, text: &str, disk: crate::Disk) -> Result<Config, Errors> {
    let doc = match ImDocument::parse(text) {
        Ok(doc) => doc,
        Err(e) => return Err(Errors(vec![crate::reader::syntax_error(file, text, &e)])),
    };
    let mut r = Reader::new(file, text);
    let root = doc.as_table();
    let top = [names(top::TOP), top::TOP_TABLES.to_vec()].concat();
    r.only_keys(root, &top, "the top level");
    let mut listeners = listeners(&mut r, root);
    let acme = crate::acme::acme(&mut r, root);
    crate::acme::attach(&mut r, acme.as_ref(), &mut listeners);
    let upstreams = upstreams(&mut r, root, &listeners);
    let limits = crate::rate::limits(&mut r, root);
    let mut config = Config {
        workers: r.integer(root, "workers", 1024).unwrap_or(0) as usize,
        header_timeout: r
            .timeout(root, "header_timeout")
            .unwrap_or(Duration::from_secs(10)),
        client_idle_timeout: r
            .timeout(root, "client_idle_timeout")
            .unwrap_or(Duration::from_secs(60)),
        request_body_timeout: r.timeout(root, "request_body_timeout"),
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
        routes: crate::route::routes(&mut r, root, &upstreams, &listeners, &limits),
        http2: http2(&mut r, root),
        admin: crate::admin::admin(&mut r, root, &listeners),
        acme,
        access_log: access_log(&mut r, root),
        upstreams,
        limits,
        listeners,
        trusted_proxies: crate::proxies::trusted(&mut r, root),
        resolver: crate::discover::resolver(&mut r, root),
        request_id: crate::identity::request_id(&mut r, root),
    };
    if let Some(identity) = &config.request_id {
        crate::identity::apply(identity, &mut config.routes);
    }
    if config.max_header_bytes < 1024 {
        let span = root.get("max_header_bytes").and_then(Item::span);
        r.error(
            span,
            "`max_header_bytes` is too small",
            "use at least 1024; browsers send 1-4 KiB of headers",
        );
    }
    if disk == crate::Disk::Check {
        r.errors.extend(crate::disk_errors(&config));
    }
    if r.errors.is_empty() {
        Ok(config)
    } else {
        r.errors.sort_by_key(|e| (e.line, e.col));
        Err(Errors(r.errors))
    }
}

/// `[http2]`: the limits of every HTTP/2 connection.
fn http2(r: &mut Reader, root: &dyn TableLike) -> Http2Limits {
    let mut limits = Http2Limits::default();
    let Some(item) = root.get("http2") else {
        return limits;
    };
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            "`http2` must be a table",
            "write [http2] with max_concurrent_streams = 128",
        );
        return limits;
    };
    r.only_keys(t, &names(top::HTTP2), "[http2]");
    if let Some(n) = r.integer(t, "max_concurrent_streams", 10_000) {
        if n == 0 {
            let span = t.get("max_concurrent_streams").and_then(Item::span);
            r.error(
                span,
                "`max_concurrent_streams` = 0 would refuse every request",
                "use at least 1; browsers open up to 100",
            );
        }
        limits.max_concurrent_streams = n.max(1) as u32;
    }
    if let Some(n) = r.integer(t, "window", (1 << 31) - 1) {
        if n < 65_535 {
            let span = t.get("window").and_then(Item::span);
            r.error(
                span,
                "`window` is below HTTP/2's initial 65535 bytes",
                "use at least 65535 (the default is 262144)",
            );
        }
        limits.window = n.max(65_535) as u32;
    }
    limits
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
        r.only_keys_or_moved(
            table,
            &names(listener::LISTENER),
            "[[listener]]",
            LISTENER_MOVED,
        );
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
        let tls = crate::tls::tls(r, table);
        let http2 = r.boolean(table, "http2").unwrap_or(tls.is_some());
        out.push(Listener {
            bind: addr,
            tls,
            http2,
            max_conns_per_client: crate::limits::per_client(r, table),
            proxy_protocol: r.boolean(table, "proxy_protocol").unwrap_or(false),
            proxy_protocol_from: proxy_protocol_from(r, table),
        });
    }
    out
}

/// `proxy_protocol_from`: only with `proxy_protocol = true`, which it narrows.
fn proxy_protocol_from(r: &mut Reader, t: &dyn TableLike) -> Vec<crate::model::Network> {
    let from = crate::proxies::networks(r, t, "proxy_protocol_from");
    if !from.is_empty() && r.boolean(t, "proxy_protocol") != Some(true) {
        r.error(
            t.get("proxy_protocol_from").and_then(|v| v.span()),
            "`proxy_protocol_from` without `proxy_protocol = true`",
            "add proxy_protocol = true: the listed peers send a PROXY protocol header",
        );
    }
    from
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
    r.only_keys_or_moved(
        t,
        &names(upstream::UPSTREAM),
        &format!("[upstream.{name}]"),
        UPSTREAM_MOVED,
    );
    let (mut servers, mut discover) = crate::servers::servers(r, name, t, listeners, span);
    let max_conns = crate::limits::max_conns(r, t);
    crate::limits::apply_max_conns(&mut servers, max_conns);
    for d in discover.iter_mut().filter(|d| d.max_conns.is_none()) {
        d.max_conns = max_conns;
    }
    Upstream {
        name: name.to_string(),
        balance: crate::balance::balance(r, t),
        servers,
        discover,
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
        tls: crate::tls::upstream(r, t),
        queue: crate::limits::queue(r, t),
        adaptive: crate::limits::adaptive(r, t),
        sticky: crate::sticky::sticky(r, t, name),
    }
}
