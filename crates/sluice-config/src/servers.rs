//! Server lists: addresses, weights, backups, and the checks that a server is something
//! sluice can and should connect to.

use crate::model::{Discover, Listener, Server};
use crate::reader::Reader;
use crate::reference::{names, upstream};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::ops::Range;
use toml_edit::{TableLike, Value};

type Span = Option<Range<usize>>;

/// An upstream's `servers`: the fixed ones, and the entries found in DNS.
pub fn servers(
    r: &mut Reader,
    name: &str,
    t: &dyn TableLike,
    listeners: &[Listener],
    span: Span,
) -> (Vec<Server>, Vec<Discover>) {
    let Some(v) = r.value(t, "servers", "a list") else {
        r.error(
            span,
            format!("upstream `{name}` has no `servers`"),
            "add servers = [\"127.0.0.1:9101\"]",
        );
        return (Vec::new(), Vec::new());
    };
    let Some(list) = v.as_array() else {
        r.error(
            v.span(),
            "`servers` must be a list",
            "write servers = [\"127.0.0.1:9101\", \"127.0.0.1:9102\"]",
        );
        return (Vec::new(), Vec::new());
    };
    if list.is_empty() {
        r.error(
            v.span(),
            format!("upstream `{name}` has an empty server list"),
            "add at least one server address",
        );
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut discover = Vec::new();
    for entry in list.iter() {
        // A server written twice (by address, name or dns name, in any case) is an error.
        let mut once = |r: &mut Reader, key: String, what: &str| {
            let first = seen.insert(key.to_ascii_lowercase());
            if !first {
                let hint = "list it once and give it a weight instead";
                r.error(entry.span(), format!("{what} is listed twice"), hint);
            }
            first
        };
        if let Some(t) = entry.as_inline_table().filter(|t| t.contains_key("dns")) {
            r.only_keys(t, &names(upstream::SERVER), "a server");
            let found = crate::discover::entry(r, t, entry.span());
            discover.extend(found.filter(|d| once(r, d.name.clone(), &format!("dns {}", d.name))));
            continue;
        }
        let server = server(r, entry)
            .filter(|s| s.host.is_some() || usable(r, s.addr, entry.span(), listeners));
        out.extend(server.filter(|s| {
            let key = match &s.host {
                Some((host, _)) => format!("{host}:{}", s.addr.port()),
                None => s.addr.to_string(),
            };
            once(r, key, &format!("server {}", s.name))
        }));
    }
    (out, discover)
}

/// A server address sluice can connect to, and not one of sluice's own listeners (which
/// would send every request around in a loop until the headers overflow).
fn usable(r: &mut Reader, addr: SocketAddr, span: Span, listeners: &[Listener]) -> bool {
    if addr.port() == 0 || addr.ip().is_unspecified() {
        r.error(
            span,
            format!("server {addr} is not an address to connect to"),
            "give the server's own IP and port, e.g. \"127.0.0.1:9101\"",
        );
        return false;
    }
    // A listener on every address loops only through loopback here: a server on
    // another machine may well use the same port (nginx on :8080 before apps on :8080).
    let own = listeners.iter().any(|l| {
        l.bind.port() == addr.port()
            && (l.bind.ip() == addr.ip()
                || (l.bind.ip().is_unspecified() && addr.ip().is_loopback()))
    });
    if own {
        r.error(
            span,
            format!("server {addr} is one of sluice's own listeners"),
            "requests would loop back into sluice; point the upstream at the app servers",
        );
    }
    !own
}

fn server(r: &mut Reader, entry: &Value) -> Option<Server> {
    if let Some(text) = entry.as_str() {
        let (addr, host) = server_addr(r, text, entry.span(), "server")?;
        return Some(Server {
            addr,
            weight: 1,
            name: text.to_string(),
            backup: false,
            max_conns: None,
            host,
        });
    }
    let Some(t) = entry.as_inline_table() else {
        r.error(
            entry.span(),
            "a server must be an address or { addr = ..., weight = ... }",
            "write \"127.0.0.1:9101\" or { addr = \"127.0.0.1:9101\", weight = 2 }",
        );
        return None;
    };
    r.only_keys(t, &names(upstream::SERVER), "a server");
    let Some((text, span)) = r.string(t, "addr") else {
        if t.get("addr").is_none() {
            r.error(
                entry.span(),
                "server has no `addr`",
                "add addr = \"127.0.0.1:9101\"",
            );
        }
        return None;
    };
    let (addr, host) = server_addr(r, &text, span, "addr")?;
    let weight = crate::entry::weight(r, t)?;
    let backup = r.boolean(t, "backup").unwrap_or(false);
    let max_conns = crate::limits::max_conns(r, t);
    Some(Server {
        addr,
        weight,
        name: text,
        backup,
        max_conns,
        host,
    })
}

/// A server's address: `IP:port`, or `name:port` (resolved later: the port on the
/// unspecified address until then).
fn server_addr(
    r: &mut Reader,
    text: &str,
    span: Span,
    key: &str,
) -> Option<(SocketAddr, Option<(String, crate::model::Place)>)> {
    if let Ok(addr) = text.parse() {
        return Some((addr, None));
    }
    let named = text.rsplit_once(':').and_then(|(host, port)| {
        let port: u16 = port.parse().ok().filter(|p| *p > 0)?;
        crate::entry::host_name(host).then(|| (host.to_string(), port))
    });
    let Some((host, port)) = named else {
        r.error(
            span,
            format!("`{key}` = \"{text}\" is not an address with a port"),
            "write it as \"127.0.0.1:8080\", \"[::1]:8080\" or a host name with a port, \"app1:8080\"",
        );
        return None;
    };
    let place = crate::tls::place(r, span);
    Some((SocketAddr::from(([0, 0, 0, 0], port)), Some((host, place))))
}

pub fn socket_addr(r: &mut Reader, text: &str, span: Span, key: &str) -> Option<SocketAddr> {
    match text.parse() {
        Ok(addr) => Some(addr),
        Err(_) => {
            r.error(
                span,
                format!("`{key}` = \"{text}\" is not an IP address with a port"),
                "write it as \"127.0.0.1:8080\" or \"[::1]:8080\"; host names are not resolved",
            );
            None
        }
    }
}
