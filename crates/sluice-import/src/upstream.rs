//! nginx's `upstream` blocks as `[upstream.NAME]`: servers with their parameters and the
//! balancing method. Server addresses are kept as written, so consistent hashing places
//! them as nginx does (sluice's ketama hashes the same text).

use crate::plan::{duration, Server, Upstream};
use crate::tree::Node;
use crate::Notes;

/// Translates one `upstream` block.
pub fn upstream(block: &Node, notes: &mut Notes) -> Upstream {
    let mut up = Upstream {
        name: block.arg(0).unwrap_or("upstream").to_string(),
        from: format!("{}:{}", block.file, block.line),
        ..Upstream::default()
    };
    for d in block.block() {
        match d.name.as_str() {
            "server" => server(d, &mut up, notes),
            "least_conn" => up.balance = Some("least_conn"),
            "hash" => hash(d, &mut up, notes),
            // The third-party ngx_http_consistent_hash module: sluice's own hash is
            // consistent (ketama), so it is `hash KEY consistent`.
            "consistent_hash" => {
                hash(d, &mut up, notes);
                if up.balance == Some("hash") {
                    notes.push(d.note("translated as hash with its key (ketama, as nginx's `hash ... consistent`): keys keep to their server as servers come and go, though not to the same ones the module chose"));
                }
            }
            "ip_hash" => {
                up.balance = Some("hash");
                up.hash_key = Some("$remote_addr".into());
                notes.push(d.note("hashes the whole client address (nginx's ip_hash takes the first three octets of an IPv4 one, so clients of one /24 shared a server); clients move once"));
            }
            "random" => random(d, &mut up, notes),
            "sticky" => up.sticky = crate::sticky::sticky(d, notes),
            "keepalive" => {
                up.keepalive = d.arg(0).and_then(|n| n.parse().ok());
                notes.push(d.note("nginx keeps that many idle connections per worker for the whole upstream; sluice's keepalive counts per server and worker, so it keeps up to that many times the servers"));
            }
            "keepalive_timeout" | "keepalive_requests" | "keepalive_time" => notes.push(d.note(
                "sluice closes an idle pooled connection after the upstream's idle_timeout (4s) and has no cap on requests per connection",
            )),
            "zone" => notes.push(d.note("not needed: sluice's workers share each upstream's state")),
            _ => notes.push(d.note("not translated: sluice has no equivalent in an upstream")),
        }
    }
    up
}

fn server(d: &Node, up: &mut Upstream, notes: &mut Notes) {
    let Some(addr) = d.arg(0) else {
        return;
    };
    if addr.starts_with("unix:") {
        notes.push(d.note(format!(
            "{addr}: sluice reaches servers over TCP only; left out"
        )));
        return;
    }
    if addr.contains('$') {
        notes.push(d.note(format!(
            "{addr}: a variable (a template's placeholder?); write the address; left out"
        )));
        return;
    }
    let addr = if addr.contains(':') && !addr.ends_with(']') {
        addr.to_string()
    } else {
        format!("{addr}:80") // nginx's default port
    };
    let mut server = Server {
        addr,
        weight: 1,
        backup: false,
        max_conns: None,
        dns: false,
    };
    let mut service = None;
    for param in &d.args[1..] {
        let (key, value) = param.split_once('=').unwrap_or((param, ""));
        match key {
            "weight" => server.weight = value.parse().unwrap_or(1).clamp(1, 10_000),
            "backup" => server.backup = true,
            "max_conns" => server.max_conns = value.parse().ok().filter(|n| *n > 0),
            "resolve" => server.dns = true,
            "service" if !value.is_empty() => service = Some(value.to_string()),
            "max_fails" => up.max_fails = value.parse().ok(),
            "fail_timeout" => up.fail_timeout = duration(value).filter(|d| d != "0s"),
            "down" => {
                notes.push(d.note(format!(
                    "{}: down; left out (sluice drains a server from the admin API instead: POST /api/upstreams/{}/servers/ADDR/drain)",
                    server.addr, up.name
                )));
                return;
            }
            _ => notes.push(d.note(format!("{param}: not translated"))),
        }
    }
    if service.is_some() && !server.dns {
        notes.push(d.note("service= without resolve: nginx refuses it; left as an address"));
    }
    followed(d, &mut server, service);
    match up.servers.iter_mut().find(|s| s.addr == server.addr) {
        Some(same) => {
            same.weight = (same.weight + server.weight).min(10_000);
            notes.push(d.note(format!(
                "{}: listed again; sluice lists a server once, so its weights are added ({})",
                server.addr, same.weight
            )));
        }
        None => up.servers.push(server),
    }
}

/// `resolve` and `service=`: a name followed in DNS (an address stays as it is). nginx
/// looks `service=http` up as `_http._tcp.NAME`, and a service with dots as
/// `SERVICE.NAME`.
fn followed(d: &Node, server: &mut Server, service: Option<String>) {
    if server.addr.parse::<std::net::SocketAddr>().is_ok() {
        server.dns = false;
        return;
    }
    if let Some(svc) = service.filter(|_| server.dns) {
        let written = d.arg(0).unwrap_or_default();
        let host = written.rsplit_once(':').map_or(written, |(h, _)| h);
        server.addr = if svc.contains('.') {
            format!("{svc}.{host}")
        } else {
            format!("_{svc}._tcp.{host}")
        };
        server.dns = true;
    }
}

fn hash(d: &Node, up: &mut Upstream, notes: &mut Notes) {
    let key = d.arg(0).unwrap_or("");
    if let Some(var) = crate::plan::unknown_variable(key) {
        notes.push(d.note(format!(
            "{key}: sluice has no {var}; left out (round robin)"
        )));
        return;
    }
    up.balance = Some("hash");
    up.hash_key = Some(key.to_string());
    if d.name == "hash" && d.arg(1) != Some("consistent") {
        notes.push(d.note("nginx's hash without `consistent` maps keys by a modulo; sluice's hash is consistent (ketama, as `hash ... consistent`): keys map differently"));
    }
}

fn random(d: &Node, up: &mut Upstream, notes: &mut Notes) {
    up.balance = Some("random_two");
    match (d.arg(0), d.arg(1)) {
        (Some("two"), None | Some("least_conn")) => {}
        _ => notes.push(d.note(
            "translated as random_two (two servers drawn, the less loaded wins): sluice has no plain random",
        )),
    }
}
