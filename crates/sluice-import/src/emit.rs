//! The [`Plan`] written out as a sluice config, in the order docs/configuration.md documents keys,
//! each block with a comment saying where in the nginx config it came from.

use crate::compress::Serves;
use crate::plan::{
    Action, ClosedBy, Guard, Limit, Listener, Matching, Plan, Rewrite, Route, Satisfy, Upstream,
    Verdict,
};
use std::fmt::Write;

/// The config text.
pub fn toml(plan: &Plan, source: &str) -> String {
    let mut out = format!(
        "# Translated from {source} by `sluice import`; what did not carry over is listed\n# on stderr. Check it with `sluice check FILE`.\n"
    );
    if let Some(w) = plan.workers {
        let _ = writeln!(out, "workers = {w}");
    }
    if let Some(k) = &plan.keepalive_timeout {
        let _ = writeln!(out, "keepalive_timeout = {}", quote(k));
    }
    match &plan.access_log {
        Some(log) => {
            let _ = writeln!(out, "access_log = {}", quote(log));
        }
        // nginx's default: every request logged.
        None if !plan.access_log_set => {
            let _ = writeln!(
                out,
                "# access_log = \"/var/log/sluice/access.log\"   # nginx logged every request by default"
            );
        }
        None => {}
    }
    if !plan.trusted_proxies.is_empty() {
        let _ = writeln!(out, "trusted_proxies = {}", list(&plan.trusted_proxies));
    }
    if !plan.resolver.is_empty() {
        let _ = write!(out, "\n[resolver]\nservers = {}\n", list(&plan.resolver));
        if let Some(valid) = &plan.resolver_valid {
            let _ = writeln!(out, "max_ttl = {}", quote(valid));
            // min_ttl (1 s by default) may not exceed it.
            // (`duration` writes whole seconds as "Ns", anything else as "Nms".)
            let short = valid == "0s"
                || valid
                    .strip_suffix("ms")
                    .and_then(|n| n.parse::<u64>().ok())
                    .is_some_and(|n| n < 1000);
            if short {
                let _ = writeln!(out, "min_ttl = {}", quote(valid));
            }
        }
    }
    for l in &plan.listeners {
        listener(&mut out, l);
    }
    for r in &plan.routes {
        route(&mut out, r);
    }
    for u in &plan.upstreams {
        upstream(&mut out, u);
    }
    for l in &plan.limits {
        limit(&mut out, l);
    }
    if !plan.routes.is_empty() {
        // nginx has no admin listener to translate; without one, `sluice status` and
        // `sluice reload` after a migration would ask for a restart.
        let _ = write!(
            out,
            "\n# The admin listener: the dashboard, /metrics, `sluice status` and `sluice reload`\n# (loopback only; nginx had none).\n[admin]\nbind = \"127.0.0.1:9901\"\n"
        );
    }
    out
}

fn listener(out: &mut String, l: &Listener) {
    let _ = write!(
        out,
        "\n# {}\n[[listener]]\nbind = {}\n",
        l.from,
        quote(&l.bind)
    );
    if l.proxy_protocol {
        let _ = writeln!(out, "proxy_protocol = true");
    }
    let pair = |(c, k): &(String, String)| format!("cert = {}, key = {}", quote(c), quote(k));
    if let Some((first, more)) = l.certs.split_first() {
        let more: Vec<String> = more.iter().map(|p| format!("{{ {} }}", pair(p))).collect();
        let more = if more.is_empty() {
            String::new()
        } else {
            format!(", certificates = [{}]", more.join(", "))
        };
        let _ = writeln!(out, "tls = {{ {}{more} }}", pair(first));
    }
}

fn route(out: &mut String, r: &Route) {
    let _ = writeln!(out, "\n# {}", r.from);
    guard_comments(out, &r.guard);
    out.push_str("[[route]]\n");
    if let Some(h) = &r.host {
        let _ = writeln!(out, "host = {}", quote(h));
    }
    matching(out, r);
    match r.listeners.as_slice() {
        [] => {}
        [one] => {
            let _ = writeln!(out, "listener = {}", quote(one));
        }
        many => {
            let _ = writeln!(out, "listener = {}", list(many));
        }
    }
    let _ = match &r.action {
        // A route closed for a check sluice cannot make (`guard::settle`).
        _ if !r.guard.closed.is_empty() => writeln!(out, "return = 403"),
        Action::None => Ok(()),
        Action::Upstream(u) => writeln!(out, "upstream = {}", quote(u)),
        Action::RedirectHttps => writeln!(out, "redirect = \"https\""),
        Action::Root(dir) => writeln!(out, "root = {}", quote(dir)),
        Action::Return {
            status,
            location,
            body,
        } => {
            let mut fields = vec![format!("status = {status}")];
            fields.extend(
                location
                    .as_ref()
                    .map(|l| format!("location = {}", quote(l))),
            );
            fields.extend(body.as_ref().map(|b| format!("body = {}", quote(b))));
            writeln!(out, "return = {{ {} }}", fields.join(", "))
        }
    };
    guard(out, &r.guard);
    // Headers to the server matter only where there is one.
    if matches!(r.action, Action::Upstream(_)) && r.guard.closed.is_empty() {
        if let Some(p) = &r.upstream_path {
            let _ = writeln!(out, "upstream_path = {}", quote(p));
        }
    }
    rewrites(out, &r.rewrites);
    if matches!(r.action, Action::Upstream(_)) {
        headers(out, "request_headers", &r.request_set, &r.request_remove);
    }
    headers(out, "response_headers", &r.response_set, &r.response_remove);
    let serves = match r.action {
        Action::Upstream(_) => Some(Serves::Proxied),
        Action::Root(_) => Some(Serves::Files),
        _ => None,
    };
    let table = serves.and_then(|s| r.compress.table(s));
    if let Some(table) = table.filter(|_| r.guard.closed.is_empty()) {
        let _ = writeln!(out, "compress = {table}");
    }
    match r.limits.as_slice() {
        [] => {}
        [one] => {
            let _ = writeln!(out, "limit = {}", quote(one));
        }
        many => {
            let _ = writeln!(out, "limit = {}", list(many));
        }
    }
}

/// What of the path the route matches: `path` (with `skip_regex`), `exact` or `regex`
/// (with `ignore_case` and `under`).
fn matching(out: &mut String, r: &Route) {
    let _ = match &r.matching {
        Matching::Prefix => writeln!(out, "path = {}", quote(&r.path)),
        Matching::Preferred => writeln!(out, "path = {}\nskip_regex = true", quote(&r.path)),
        Matching::Exact => writeln!(out, "exact = {}", quote(&r.path)),
        Matching::Regex { caseless, under } => {
            let _ = writeln!(out, "regex = {}", literal(&r.path));
            if *caseless {
                out.push_str("ignore_case = true\n");
            }
            match under {
                Some(u) => writeln!(out, "under = {}", quote(u)),
                None => Ok(()),
            }
        }
    };
}

/// `rewrite = [...]`, one entry a line.
fn rewrites(out: &mut String, list: &[Rewrite]) {
    if list.is_empty() {
        return;
    }
    out.push_str("rewrite = [\n");
    for rw in list {
        let flag = rw.flag.as_ref().map(|f| format!(", flag = {}", quote(f)));
        let _ = writeln!(
            out,
            "  {{ regex = {}, to = {}{} }},",
            literal(&rw.regex),
            quote(&rw.to),
            flag.unwrap_or_default()
        );
    }
    out.push_str("]\n");
}

/// A regular expression as a TOML literal string (`\` kept as is), or a basic string
/// when it holds a `'`.
fn literal(s: &str) -> String {
    if s.contains('\'') || s.chars().any(char::is_control) {
        quote(s)
    } else {
        format!("'{s}'")
    }
}

/// The nginx lines a route's checks come from, and why a closed one answers 403.
fn guard_comments(out: &mut String, g: &Guard) {
    for c in &g.closed {
        let by_hand = match c.by {
            ClosedBy::Unserved { .. } => "",
            _ => "; carry the check over by hand",
        };
        let _ = writeln!(
            out,
            "# answers 403: {} {} {}: {}{by_hand}",
            c.from,
            c.directive,
            c.args,
            c.by.why()
        );
    }
    if !g.closed.is_empty() {
        return;
    }
    if !g.access.is_empty() {
        let mut places: Vec<&str> = g.access.iter().map(|r| r.from.as_str()).collect();
        places.dedup();
        let _ = writeln!(out, "# access: allow and deny at {}", places.join(", "));
    }
    if let Some(a) = &g.auth {
        let file = match &a.relative {
            Some(named) => format!(
                "{} ({named}, taken from nginx's conf prefix as nginx takes it)",
                a.file_from
            ),
            None => a.file_from.clone(),
        };
        let _ = writeln!(out, "# auth_basic: {}, its user file {file}", a.realm_from);
    }
    if let Some(from) = g.satisfy_from.as_ref().filter(|_| satisfy_any(g)) {
        let _ = writeln!(out, "# satisfy any: {from}");
    }
    if !g.not_reached.is_empty() {
        let _ = writeln!(
            out,
            "# nginx answers this return before it checks anyone: the checks at {} are not written",
            g.not_reached.join(", ")
        );
    }
}

/// `access`, `auth_basic` and `satisfy`, for a route that is not closed.
fn guard(out: &mut String, g: &Guard) {
    if !g.closed.is_empty() {
        return;
    }
    if !g.access.is_empty() {
        let rules: Vec<String> = g
            .access
            .iter()
            .map(|r| match r.verdict {
                Verdict::Allow => format!("allow {}", r.who),
                Verdict::Deny => format!("deny {}", r.who),
            })
            .collect();
        let _ = writeln!(out, "access = {}", list(&rules));
    }
    if let Some(a) = &g.auth {
        let _ = writeln!(
            out,
            "auth_basic = {{ realm = {}, user_file = {} }}",
            quote(&a.realm),
            quote(&a.user_file)
        );
    }
    if satisfy_any(g) {
        let _ = writeln!(out, "satisfy = \"any\"");
    }
}

/// `satisfy any` matters only where there are checks to satisfy.
fn satisfy_any(g: &Guard) -> bool {
    g.satisfy == Satisfy::Any && (!g.access.is_empty() || g.auth.is_some())
}

fn headers(out: &mut String, key: &str, set: &[(String, String)], remove: &[String]) {
    if set.is_empty() && remove.is_empty() {
        return;
    }
    let mut parts = Vec::new();
    if !set.is_empty() {
        let pairs: Vec<String> = set
            .iter()
            .map(|(n, v)| format!("{} = {}", quote(n), quote(v)))
            .collect();
        parts.push(format!("set = {{ {} }}", pairs.join(", ")));
    }
    if !remove.is_empty() {
        parts.push(format!("remove = {}", list(remove)));
    }
    let _ = writeln!(out, "{key} = {{ {} }}", parts.join(", "));
}

fn upstream(out: &mut String, u: &Upstream) {
    let _ = write!(out, "\n# {}\n[upstream.{}]\n", u.from, quote(&u.name));
    if let Some(b) = u.balance {
        let _ = writeln!(out, "balance = \"{b}\"");
    }
    if let Some(k) = &u.hash_key {
        let _ = writeln!(out, "hash_key = {}", quote(k));
    }
    let servers: Vec<String> = u
        .servers
        .iter()
        .map(|s| {
            let mut extra = Vec::new();
            if s.weight != 1 {
                extra.push(format!("weight = {}", s.weight));
            }
            if s.backup {
                extra.push("backup = true".into());
            }
            extra.extend(s.max_conns.map(|m| format!("max_conns = {m}")));
            let key = if s.dns { "dns" } else { "addr" };
            if extra.is_empty() && !s.dns {
                quote(&s.addr)
            } else {
                extra.insert(0, format!("{key} = {}", quote(&s.addr)));
                format!("{{ {} }}", extra.join(", "))
            }
        })
        .collect();
    let _ = writeln!(out, "servers = [{}]", servers.join(", "));
    let fields = [
        ("keepalive", u.keepalive.map(|k| k.to_string())),
        ("connect_timeout", u.connect_timeout.as_deref().map(quote)),
        ("read_timeout", u.read_timeout.as_deref().map(quote)),
        ("max_fails", u.max_fails.map(|m| m.to_string())),
        ("fail_window", u.fail_timeout.as_deref().map(quote)),
        ("eject_for", u.fail_timeout.as_deref().map(quote)),
        ("tls", tls(u)),
        ("sticky", u.sticky.clone()),
    ];
    for (key, value) in fields {
        if let Some(v) = value {
            let _ = writeln!(out, "{key} = {v}");
        }
    }
}

/// `tls` for servers reached over HTTPS (`proxy_pass https://`): sent as SNI and
/// verified for their one host name, as a browser would reach them; `true` (each
/// certificate verified against its server's IP) when they are IPs or have several
/// names. `true` for a named server would verify a public certificate against its IP,
/// and fail every request.
fn tls(u: &Upstream) -> Option<String> {
    if !u.tls {
        return None;
    }
    let host = |addr: &str| {
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string()
    };
    let hosts: std::collections::BTreeSet<String> =
        u.servers.iter().map(|s| host(&s.addr)).collect();
    Some(match hosts.iter().collect::<Vec<_>>()[..] {
        [name] if name.parse::<std::net::IpAddr>().is_err() => {
            format!("{{ server_name = {} }}", quote(name))
        }
        _ => "true".to_string(),
    })
}

fn limit(out: &mut String, l: &Limit) {
    let _ = write!(
        out,
        "\n[limit.{}]\nrate = {}\nkey = {}\n",
        quote(&l.name),
        quote(&l.rate),
        quote(&l.key)
    );
    if let Some(b) = l.burst {
        let _ = writeln!(out, "burst = {b}");
    }
}

fn list(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| quote(i)).collect();
    format!("[{}]", quoted.join(", "))
}

/// A TOML basic string.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
