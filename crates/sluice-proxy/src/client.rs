//! A client connection as accepted: who it is, which listener it came in on and how it
//! speaks there. Built once at accept (`runtime::worker`), after the PROXY protocol
//! header if any, and read by every stage of every request on the connection: the
//! forwarding headers (`http1::encode`), routing and hash keys (`route`), the limits
//! (`session`) and the record (`record`). Plain data: it owns no socket and no counter.

use sluice_config::Network;
use std::net::{IpAddr, SocketAddr};

/// One client connection's facts, fixed for its life.
#[derive(Clone, Debug)]
pub struct Client {
    /// The client's address (the one a PROXY protocol header named, if any).
    pub peer: SocketAddr,
    /// `peer`'s IP as text: `X-Forwarded-For`, `X-Real-IP`, `$remote_addr`, hash keys.
    pub ip: String,
    /// The listener it came in on, as configured: routes may be limited to some.
    pub listener: SocketAddr,
    /// Clients use `https` there (else `http`): see [`Client::proto`].
    pub https: bool,
    /// The client is one of `trusted_proxies`: the X-Real-IP, X-Forwarded-Proto and
    /// X-Forwarded-Host it sends are kept, not replaced.
    pub trusted: bool,
    /// The client had `max_conns_per_client` open already: its requests are answered 429
    /// and the connection closed.
    pub crowded: bool,
}

impl Client {
    /// A client at `peer` on the listener configured at `listener`, neither trusted nor
    /// crowded.
    pub fn new(peer: SocketAddr, listener: SocketAddr, proto: &'static str) -> Self {
        Client {
            peer,
            ip: peer.ip().to_string(),
            listener,
            https: proto == "https",
            trusted: false,
            crowded: false,
        }
    }

    /// The client's address as the trusted proxies in front of sluice name it in
    /// `X-Forwarded-For` (nginx's realip with `real_ip_recursive on`): from the list's
    /// end, the first address that is not one of `trusted`. `None` when the peer is not
    /// trusted, sends no such header, or a trusted hop wrote something not an address
    /// (then the peer is the client as sluice knows it). An untrusted peer's header
    /// is never read: anyone can write one.
    pub fn forwarded_for(
        &self,
        headers: &[httparse::Header<'_>],
        trusted: &[Network],
    ) -> Option<IpAddr> {
        if !self.trusted {
            return None;
        }
        let lines = headers
            .iter()
            .rev()
            .filter(|h| h.name.eq_ignore_ascii_case("x-forwarded-for"));
        let mut last_trusted = None;
        for entry in lines.flat_map(|h| h.value.rsplit(|b| *b == b',')) {
            let ip = address(entry)?;
            if !trusted.iter().any(|n| n.contains(ip)) {
                return Some(ip);
            }
            last_trusted = Some(ip);
        }
        last_trusted
    }

    /// The scheme clients use on its listener (`http` or `https`), for
    /// `X-Forwarded-Proto` and `$scheme`. A flag, not the text: every connection holds
    /// a `Client`, idle ones too (issue 32).
    pub fn proto(&self) -> &'static str {
        if self.https {
            "https"
        } else {
            "http"
        }
    }
}

/// One `X-Forwarded-For` entry: an address, with a port or in brackets as some
/// balancers write it (`203.0.113.7:4711`, `[2001:db8::1]:4711`).
fn address(entry: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(entry).ok()?.trim_matches([' ', '\t']);
    text.parse::<IpAddr>()
        .ok()
        .or_else(|| text.parse::<SocketAddr>().ok().map(|a| a.ip()))
        .or_else(|| text.strip_prefix('[')?.strip_suffix(']')?.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(peer: &str, xff: &[&'static str], trusted: &[&str]) -> Option<IpAddr> {
        let client = Client {
            trusted: true,
            ..Client::new(
                peer.parse().unwrap(),
                "127.0.0.1:80".parse().unwrap(),
                "http",
            )
        };
        let headers: Vec<httparse::Header> = xff
            .iter()
            .map(|v| httparse::Header {
                name: "X-Forwarded-For",
                value: v.as_bytes(),
            })
            .collect();
        let nets: Vec<Network> = trusted
            .iter()
            .map(|t| {
                let (ip, prefix) = t.split_once('/').unwrap();
                Network {
                    ip: ip.parse().unwrap(),
                    prefix: prefix.parse().unwrap(),
                }
            })
            .collect();
        client.forwarded_for(&headers, &nets)
    }

    #[test]
    fn the_last_untrusted_address_is_the_client() {
        let lb = ["10.0.0.0/8"];
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert_eq!(
            from("10.0.0.5:1", &["198.51.100.9, 203.0.113.7"], &lb),
            ip("203.0.113.7")
        );
        // Spoofed on the left, the balancer's own hop on the right.
        assert_eq!(
            from("10.0.0.5:1", &["10.9.9.9", "203.0.113.7, 10.0.0.6"], &lb),
            ip("203.0.113.7")
        );
        assert_eq!(
            from("10.0.0.5:1", &["10.1.1.1, 10.2.2.2"], &lb),
            ip("10.1.1.1")
        );
        assert_eq!(
            from("10.0.0.5:1", &["[2001:db8::1]:80"], &lb),
            ip("2001:db8::1")
        );
        assert_eq!(
            from("10.0.0.5:1", &["203.0.113.7:4711"], &lb),
            ip("203.0.113.7")
        );
        assert_eq!(from("10.0.0.5:1", &["unknown"], &lb), None);
        assert_eq!(from("10.0.0.5:1", &[], &lb), None);
        let untrusted = Client::new(
            "192.0.2.1:1".parse().unwrap(),
            "127.0.0.1:80".parse().unwrap(),
            "http",
        );
        let spoof = [httparse::Header {
            name: "X-Forwarded-For",
            value: b"10.0.0.1",
        }];
        assert_eq!(untrusted.forwarded_for(&spoof, &[]), None);
    }
}
