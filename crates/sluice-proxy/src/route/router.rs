//! Choosing a route for a request: by host first, then by the longest path prefix.
//!
//! Like nginx's server_name then location: an exact host beats the longest matching
//! `*.suffix`, which beats routes with no host; within the chosen host, the longest path
//! prefix wins. A host with routes but no matching path gets no route (404), it does not
//! fall through to another host's routes. A route limited to some listeners is only
//! seen by requests that came in on one of them.

use super::RouteId;
use sluice_config::{Config, HostMatch};
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;

pub struct Router {
    exact: HashMap<String, Vec<Entry>>,
    /// `(".example.com", routes)`, longest suffix first.
    suffix: Vec<(String, Vec<Entry>)>,
    any_host: Vec<Entry>,
}

struct Entry {
    path: String,
    route: RouteId,
    /// The listeners it serves (as configured); all when empty.
    listeners: Vec<SocketAddr>,
}

impl Router {
    pub fn new(config: &Config) -> Self {
        let mut exact: HashMap<String, Vec<Entry>> = HashMap::new();
        let mut suffix: Vec<(String, Vec<Entry>)> = Vec::new();
        let mut any_host = Vec::new();
        for (i, r) in config.routes.iter().enumerate() {
            let entry = Entry {
                path: r.path.clone(),
                route: RouteId(i),
                listeners: r.listeners.clone(),
            };
            match &r.host {
                None => any_host.push(entry),
                Some(HostMatch::Exact(h)) => exact.entry(h.clone()).or_default().push(entry),
                Some(HostMatch::Suffix(s)) => match suffix.iter_mut().find(|(k, _)| k == s) {
                    Some((_, list)) => list.push(entry),
                    None => suffix.push((s.clone(), vec![entry])),
                },
            }
        }
        suffix.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        let by_length =
            |list: &mut Vec<Entry>| list.sort_by_key(|e| std::cmp::Reverse(e.path.len()));
        exact.values_mut().for_each(by_length);
        suffix.iter_mut().for_each(|(_, l)| by_length(l));
        by_length(&mut any_host);
        Router {
            exact,
            suffix,
            any_host,
        }
    }

    /// The route for a request to `host` (without port) and `path` that came in on
    /// `listener` (its address as configured), if any.
    pub fn find(&self, listener: SocketAddr, host: &str, path: &str) -> Option<RouteId> {
        let path = normalized(path);
        let entries = self.host_routes(host);
        entries
            .iter()
            .filter(|e| e.listeners.is_empty() || e.listeners.contains(&listener))
            .find(|e| path.starts_with(e.path.as_str()))
            .map(|e| e.route)
    }

    fn host_routes(&self, host: &str) -> &[Entry] {
        if self.exact.is_empty() && self.suffix.is_empty() {
            return &self.any_host;
        }
        let host: Cow<str> = if host.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(host.to_ascii_lowercase())
        } else {
            Cow::Borrowed(host)
        };
        let host = host.strip_suffix('.').unwrap_or(&host);
        if let Some(list) = self.exact.get(host) {
            return list;
        }
        let by_suffix = self
            .suffix
            .iter()
            .find(|(s, _)| host.len() > s.len() && host.ends_with(s.as_str()));
        by_suffix.map_or(&self.any_host, |(_, list)| list)
    }
}

/// The path routes are matched on, as the servers behind will read it: without its
/// query, `%XX` decoded, runs of `/` merged and dot segments resolved. nginx does all
/// of it before it picks a location, and Tomcat and Spring decode and merge too: on
/// the raw text, `/%61ctuator/env`, `//actuator/env` or `/x/..%2Factuator/` would miss
/// a guarded `/actuator/` route and reach the app through an open `/`. Borrowed when
/// there is nothing to do, the common case.
pub fn normalized(target: &str) -> Cow<'_, str> {
    let path = target.split('?').next().unwrap_or(target);
    if !path.contains('%') && !path.contains("//") && !path.contains("/.") {
        return Cow::Borrowed(path);
    }
    let mut decoded = Vec::with_capacity(path.len());
    let mut bytes = path.as_bytes();
    while let Some((&b, rest)) = bytes.split_first() {
        let escaped = match rest {
            [hi, lo, ..] if b == b'%' => hex(*hi).zip(hex(*lo)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        let (byte, skip) = escaped.map_or((b, 1), |e| (e, 3));
        if !(byte == b'/' && decoded.last() == Some(&b'/')) {
            decoded.push(byte);
        }
        bytes = &bytes[skip..];
    }
    let text = String::from_utf8_lossy(&decoded);
    Cow::Owned(without_dot_segments(&text))
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// RFC 3986's remove_dot_segments on a path of single slashes.
fn without_dot_segments(path: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        match *segment {
            "." | ".." => {
                if *segment == ".." {
                    kept.pop();
                }
                if last {
                    kept.push("");
                }
            }
            s => kept.push(s),
        }
    }
    format!("/{}", kept.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_matched_as_servers_read_them() {
        for (raw, path) in [
            ("/actuator/env?x=1", "/actuator/env"),
            ("/%61ctuator/env", "/actuator/env"),
            ("//actuator///env", "/actuator/env"),
            ("/actuator%2Fenv", "/actuator/env"),
            ("/x/..%2Factuator/", "/actuator/"),
            ("/a/./b/../c", "/a/c"),
            ("/a/..", "/"),
            ("/%zz%4", "/%zz%4"),
        ] {
            assert_eq!(normalized(raw), path, "{raw}");
        }
        assert!(matches!(
            normalized("/plain/path?q"),
            Cow::Borrowed("/plain/path")
        ));
    }

    fn router() -> Router {
        let text = r#"
            [[listener]]
            bind = "127.0.0.1:1"
            [[route]]
            upstream = "a"
            [[route]]
            path = "/api/"
            upstream = "a"
            [[route]]
            host = "*.example.com"
            upstream = "a"
            [[route]]
            host = "*.eu.example.com"
            path = "/x"
            upstream = "a"
            [[route]]
            host = "shop.example.com"
            path = "/cart"
            upstream = "a"
            [upstream.a]
            servers = ["127.0.0.1:2"]
        "#;
        Router::new(&sluice_config::parse("t", text).unwrap())
    }

    fn any() -> SocketAddr {
        "127.0.0.1:1".parse().unwrap()
    }

    #[test]
    fn host_then_longest_prefix() {
        let r = router();
        assert_eq!(r.find(any(), "other.org", "/api/v1"), Some(RouteId(1)));
        assert_eq!(r.find(any(), "other.org", "/apix"), Some(RouteId(0)));
        assert_eq!(
            r.find(any(), "www.example.com", "/api/v1"),
            Some(RouteId(2))
        );
        assert_eq!(r.find(any(), "WWW.Example.COM.", "/"), Some(RouteId(2)));
        assert_eq!(r.find(any(), "a.eu.example.com", "/x/1"), Some(RouteId(3)));
        assert_eq!(r.find(any(), "a.eu.example.com", "/y"), None);
        assert_eq!(
            r.find(any(), "shop.example.com", "/cart/1"),
            Some(RouteId(4))
        );
        assert_eq!(r.find(any(), "shop.example.com", "/"), None);
        assert_eq!(r.find(any(), "example.com", "/"), Some(RouteId(0)));
    }

    #[test]
    fn a_route_on_some_listeners_is_seen_only_there() {
        let text = r#"
            [[listener]]
            bind = "127.0.0.1:80"
            [[listener]]
            bind = "127.0.0.1:443"
            [[route]]
            listener = "127.0.0.1:80"
            redirect = "https"
            [[route]]
            listener = ["127.0.0.1:443"]
            upstream = "a"
            [[route]]
            path = "/.well-known/acme-challenge/"
            return = 404
            [upstream.a]
            servers = ["127.0.0.1:2"]
        "#;
        let r = Router::new(&sluice_config::parse("t", text).unwrap());
        let (http, https) = (
            "127.0.0.1:80".parse().unwrap(),
            "127.0.0.1:443".parse().unwrap(),
        );
        assert_eq!(r.find(http, "a.test", "/x"), Some(RouteId(0)));
        assert_eq!(r.find(https, "a.test", "/x"), Some(RouteId(1)));
        assert_eq!(
            r.find(http, "a.test", "/.well-known/acme-challenge/t"),
            Some(RouteId(2))
        );
        assert_eq!(
            r.find(https, "a.test", "/.well-known/acme-challenge/t"),
            Some(RouteId(2))
        );
    }
}
