//! Servers found in DNS and followed as it changes: `{ dns = "app.internal:8080" }` (the
//! name's A and AAAA records, on that port) or `{ dns = "_http._tcp.app.service.consul" }`
//! (SRV records: targets, ports, weights, priorities); and `[resolver]`, the DNS servers
//! asked and how often. This crate only reads them; `sluice` resolves.

use crate::model::{Discover, DnsQuery, Resolver};
use crate::reader::Reader;
use crate::reader::Span;
use crate::reference::{names, top};
use std::net::SocketAddr;
use std::time::Duration;
use toml_edit::{InlineTable, TableLike};

/// A server entry written `{ dns = "..." }`, with the keys a server takes.
pub fn entry(r: &mut Reader, t: &InlineTable, span: Span) -> Option<Discover> {
    let (text, at) = r.string(t, "dns")?;
    if t.contains_key("addr") {
        r.error(
            span,
            "a server has either `addr` or `dns`, not both",
            "use addr for one fixed address, dns for a name followed as it changes",
        );
        return None;
    }
    let Some(query) = query(&text) else {
        r.error(
            at,
            format!("`dns` = \"{text}\" is neither a name with a port nor an SRV name"),
            "write \"app.internal:8080\" (A/AAAA records) or \"_http._tcp.app.service.consul\" (SRV)",
        );
        return None;
    };
    if matches!(query, DnsQuery::Service(_)) && t.contains_key("weight") {
        r.error(
            t.get("weight").and_then(|w| w.span()),
            "an SRV entry's servers take the weights of its records",
            "remove `weight`, or set the weights in the SRV records",
        );
        return None;
    }
    let weight = crate::entry::weight(r, t)?;
    Some(Discover {
        name: text,
        query,
        weight,
        backup: r.boolean(t, "backup").unwrap_or(false),
        max_conns: crate::limits::max_conns(r, t),
        at: crate::tls::place(r, at),
    })
}

/// `name:port` asks for addresses; a name of `_service._proto.` labels without a port
/// asks for SRV records, which carry the ports.
fn query(text: &str) -> Option<DnsQuery> {
    let text = text.trim_end_matches('.');
    if let Some((host, port)) = text.rsplit_once(':') {
        let port: u16 = port.parse().ok().filter(|p| *p > 0)?;
        return crate::entry::host_name(host).then(|| DnsQuery::Address {
            host: host.to_ascii_lowercase(),
            port,
        });
    }
    let mut labels = text.split('.');
    let service = labels.next().is_some_and(|l| l.starts_with('_'));
    let proto = labels.next().is_some_and(|l| l.starts_with('_'));
    (service && proto && crate::entry::host_name(text))
        .then(|| DnsQuery::Service(text.to_ascii_lowercase()))
}

/// `[resolver]`: `servers` (IP, or IP:port; the system's resolv.conf when absent), the
/// bounds put on a record's TTL before it is asked again, and a query's timeout.
pub fn resolver(r: &mut Reader, root: &dyn TableLike) -> Resolver {
    let mut out = Resolver {
        servers: Vec::new(),
        min_ttl: Duration::from_secs(1),
        max_ttl: Duration::from_secs(60),
        timeout: Duration::from_secs(2),
    };
    let Some(item) = root.get("resolver") else {
        return out;
    };
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            "`resolver` must be a table",
            "write [resolver] with servers = [\"10.0.0.2\"]",
        );
        return out;
    };
    r.only_keys(t, &names(top::RESOLVER), "[resolver]");
    out.servers = name_servers(r, t);
    // Never asked again sooner than this, whatever min_ttl and the records say.
    let floor = Duration::from_millis(100);
    out.min_ttl = r.duration(t, "min_ttl").unwrap_or(out.min_ttl).max(floor);
    out.max_ttl = r.duration(t, "max_ttl").unwrap_or(out.max_ttl).max(floor);
    out.timeout = r.timeout(t, "timeout").unwrap_or(out.timeout);
    if out.min_ttl > out.max_ttl {
        r.error(
            t.get("min_ttl").and_then(|v| v.span()),
            "`min_ttl` is longer than `max_ttl`",
            "records are asked again after their TTL, kept between min_ttl and max_ttl (both at least 100ms)",
        );
        out.max_ttl = out.min_ttl;
    }
    out
}

fn name_servers(r: &mut Reader, t: &dyn TableLike) -> Vec<SocketAddr> {
    let mut out = Vec::new();
    for v in r.one_or_list(t, "servers", "a list of addresses") {
        let text = v.as_str().unwrap_or_default();
        let addr = text
            .parse::<SocketAddr>()
            .ok()
            .or_else(|| text.parse().ok().map(|ip| SocketAddr::new(ip, 53)));
        match addr {
            Some(a) => out.push(a),
            None => r.error(
                v.span(),
                format!("resolver server {} is not an IP address", v.to_string().trim()),
                "write \"10.0.0.2\" (port 53) or \"127.0.0.1:5353\"; a resolver is given by address",
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_with_ports_ask_for_addresses_and_service_names_for_srv() {
        assert_eq!(
            query("App.Internal:8080"),
            Some(DnsQuery::Address {
                host: "app.internal".into(),
                port: 8080
            })
        );
        assert_eq!(
            query("_http._tcp.app.service.consul."),
            Some(DnsQuery::Service("_http._tcp.app.service.consul".into()))
        );
        assert_eq!(query("app.internal"), None, "no port and not SRV");
        assert_eq!(query("_http.app"), None, "SRV needs _service._proto");
        assert_eq!(query("app:0"), None);
        assert_eq!(query("bad name:80"), None);
    }

    fn config(servers: &str, resolver: &str) -> Result<crate::Config, String> {
        let text = format!(
            "[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{servers}]\n[resolver]\n{resolver}\n"
        );
        crate::parse("t.toml", &text).map_err(|e| e.to_string())
    }

    #[test]
    fn resolver_bounds_are_kept_apart_and_srv_weights_come_from_the_records() {
        let c = config(
            "{ dns = \"a.test:80\" }",
            "min_ttl = \"0s\"\nmax_ttl = \"50ms\"",
        )
        .unwrap();
        assert_eq!(c.resolver.min_ttl, Duration::from_millis(100));
        assert!(c.resolver.min_ttl <= c.resolver.max_ttl);
        let err = config(
            "{ dns = \"a.test:80\" }",
            "min_ttl = \"5s\"\nmax_ttl = \"1s\"",
        )
        .unwrap_err();
        assert!(
            err.contains("t.toml:8:") && err.contains("min_ttl"),
            "{err}"
        );
        let err = config("{ dns = \"_http._tcp.a.test\", weight = 3 }", "").unwrap_err();
        assert!(err.contains("weights of its records"), "{err}");
        let err = config("{ dns = \"a.test:80\", addr = \"127.0.0.1:80\" }", "").unwrap_err();
        assert!(err.contains("either `addr` or `dns`"), "{err}");
    }
}
