//! Choosing a route for a request: by host first, then by its path, in nginx's order
//! of locations.
//!
//! Like nginx's server_name then location: an exact host beats the longest matching
//! `*.suffix`, which beats routes with no host. Within the chosen host: a route with the
//! request's `exact` path wins; else the longest matching prefix is found; unless it
//! has `skip_regex`, the `regex` routes nested `under` it, then the others, are tried in
//! the file's order and the first match wins; else the longest prefix does. A path one
//! `/` short of a forwarding prefix route (`/api` for `/api/`) is redirected to it, as
//! nginx does for `proxy_pass` locations. A host with routes but no matching path gets
//! no route (404), it does not fall through to another host's routes. A route limited
//! to some listeners is only seen by requests that came in on one of them.

use super::RouteId;
use sluice_config::{Config, HostMatch, Matching, Pattern, Route};
use std::borrow::Cow;
use std::collections::HashMap;
use std::net::SocketAddr;

pub struct Router {
    exact: HashMap<String, Table>,
    /// `(".example.com", routes)`, longest suffix first.
    suffix: Vec<(String, Table)>,
    any_host: Table,
}

/// One host's routes, by how they match.
#[derive(Default)]
struct Table {
    exact: Vec<Entry>,
    /// Longest first.
    prefixes: Vec<Prefix>,
    /// Regular expressions not nested in a prefix, in the file's order.
    regexes: Vec<Regex>,
    /// Nested ones, with their prefix's path, until every prefix is in.
    waiting: Vec<(String, Regex)>,
    /// Some prefix answers a path one `/` short of it: only then is that looked for.
    redirects: bool,
}

#[derive(Clone)]
struct Entry {
    path: String,
    route: RouteId,
    /// The listeners it serves (as configured); all when empty.
    listeners: Vec<SocketAddr>,
}

impl Entry {
    fn serves(&self, listener: SocketAddr) -> bool {
        self.listeners.is_empty() || self.listeners.contains(&listener)
    }
}

struct Prefix {
    entry: Entry,
    skip_regex: bool,
    /// A path one `/` shorter is redirected here (a forwarding route ending in `/`).
    redirects: bool,
    /// The regular expressions nested in it, in the file's order.
    nested: Vec<Regex>,
}

#[derive(Clone)]
struct Regex {
    pattern: Pattern,
    /// The route's templates name its groups: a match keeps them.
    groups: bool,
    entry: Entry,
}

/// What the path matched.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// This route, with the groups of its regular expression when it has one.
    Route(RouteId, Option<Captured>),
    /// The path is this prefix route's without its last `/`: nginx answers `301` to it.
    Slash(RouteId),
}

/// The groups a regular expression matched in a path: `$1`.. and named ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    subject: String,
    groups: Vec<Option<(usize, usize)>>,
}

/// The groups of a match, by number ("" for one that took no part).
pub trait Groups {
    fn group(&self, i: usize) -> &str;
}

impl Groups for Captured {
    fn group(&self, i: usize) -> &str {
        Captured::group(self, i)
    }
}

impl Groups for sluice_config::Captures<'_> {
    fn group(&self, i: usize) -> &str {
        sluice_config::Captures::group(self, i)
    }
}

impl Captured {
    /// The groups of `pattern` in `subject`, when it matches. A match that runs out of
    /// its backtracking budget counts as none.
    pub fn of(pattern: &Pattern, subject: &str) -> Option<Captured> {
        let caps = pattern.captures(subject)?;
        let groups = (0..caps.len()).map(|i| caps.span(i)).collect();
        Some(Captured {
            subject: subject.to_string(),
            groups,
        })
    }

    /// Group `i`'s text ("" when it took no part or does not exist).
    pub fn group(&self, i: usize) -> &str {
        match self.groups.get(i) {
            Some(Some((start, end))) => &self.subject[*start..*end],
            _ => "",
        }
    }
}

impl Router {
    pub fn new(config: &Config) -> Self {
        let mut exact: HashMap<String, Table> = HashMap::new();
        let mut suffix: Vec<(String, Table)> = Vec::new();
        let mut any_host = Table::default();
        for (i, r) in config.routes.iter().enumerate() {
            let table = match &r.host {
                None => &mut any_host,
                Some(HostMatch::Exact(h)) => exact.entry(h.clone()).or_default(),
                Some(HostMatch::Suffix(s)) => {
                    let at = match suffix.iter().position(|(k, _)| k == s) {
                        Some(at) => at,
                        None => {
                            suffix.push((s.clone(), Table::default()));
                            suffix.len() - 1
                        }
                    };
                    &mut suffix[at].1
                }
            };
            table.add(r, RouteId(i));
        }
        suffix.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        exact.values_mut().for_each(Table::finish);
        suffix.iter_mut().for_each(|(_, t)| t.finish());
        any_host.finish();
        Router {
            exact,
            suffix,
            any_host,
        }
    }

    /// The route for a request to `host` (without port) whose path is `path`
    /// ([`normalized`], or rewritten, which nginx does not normalize again), that came
    /// in on `listener` (its address as configured).
    pub fn find_path(&self, listener: SocketAddr, host: &str, path: &str) -> Option<Found> {
        self.host_routes(host).find(listener, path)
    }

    fn host_routes(&self, host: &str) -> &Table {
        if self.exact.is_empty() && self.suffix.is_empty() {
            return &self.any_host;
        }
        let host: Cow<str> = if host.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(host.to_ascii_lowercase())
        } else {
            Cow::Borrowed(host)
        };
        let host = host.strip_suffix('.').unwrap_or(&host);
        if let Some(table) = self.exact.get(host) {
            return table;
        }
        let by_suffix = self
            .suffix
            .iter()
            .find(|(s, _)| host.len() > s.len() && host.ends_with(s.as_str()));
        by_suffix.map_or(&self.any_host, |(_, table)| table)
    }
}

impl Regex {
    /// Its route, when it matches `path`; with the groups when the route reads them.
    fn find(&self, path: &str) -> Option<Found> {
        if !self.groups {
            let matched = self.pattern.is_match(path);
            return matched.then_some(Found::Route(self.entry.route, None));
        }
        let captured = Captured::of(&self.pattern, path)?;
        Some(Found::Route(self.entry.route, Some(captured)))
    }
}

impl Table {
    fn add(&mut self, r: &Route, id: RouteId) {
        let entry = Entry {
            path: r.path.clone(),
            route: id,
            listeners: r.listeners.clone(),
        };
        match &r.matching {
            Matching::Exact => self.exact.push(entry),
            Matching::Prefix { skip_regex } => self.prefixes.push(Prefix {
                redirects: r.upstream().is_some() && r.path.len() > 1 && r.path.ends_with('/'),
                skip_regex: *skip_regex,
                entry,
                nested: Vec::new(),
            }),
            Matching::Regex { pattern, under } => {
                let regex = Regex {
                    pattern: pattern.clone(),
                    groups: r.uses_groups(),
                    entry,
                };
                match under {
                    None => self.regexes.push(regex),
                    Some(parent) => self.waiting.push((parent.clone(), regex)),
                }
            }
        }
    }

    /// Longest prefix first; each nested regular expression under its prefix (the
    /// config checked that there is one; with several, for different listeners, under
    /// each), in the file's order.
    fn finish(&mut self) {
        self.prefixes
            .sort_by_key(|p| std::cmp::Reverse(p.entry.path.len()));
        self.redirects = self.prefixes.iter().any(|p| p.redirects);
        for (parent, regex) in std::mem::take(&mut self.waiting) {
            let parents = self.prefixes.iter_mut().filter(|p| p.entry.path == parent);
            parents.for_each(|p| p.nested.push(regex.clone()));
        }
    }

    fn find(&self, listener: SocketAddr, path: &str) -> Option<Found> {
        if let Some(e) = self
            .exact
            .iter()
            .find(|e| e.serves(listener) && e.path == path)
        {
            return Some(Found::Route(e.route, None));
        }
        let prefix = self
            .prefixes
            .iter()
            .find(|p| p.entry.serves(listener) && path.starts_with(p.entry.path.as_str()));
        // Unless a prefix route is the path itself, as nginx.
        if self.redirects && prefix.is_none_or(|p| p.entry.path.len() < path.len()) {
            let slash = |p: &&Prefix| {
                p.redirects
                    && p.entry.serves(listener)
                    && p.entry.path.strip_suffix('/') == Some(path)
            };
            if let Some(p) = self.prefixes.iter().find(slash) {
                return Some(Found::Slash(p.entry.route));
            }
        }
        let nested = prefix.map_or(&[][..], |p| &p.nested[..]);
        let regexes = match prefix {
            Some(p) if p.skip_regex => &[][..],
            _ => &self.regexes[..],
        };
        let matched = nested
            .iter()
            .chain(regexes)
            .filter(|re| re.entry.serves(listener))
            .find_map(|re| re.find(path));
        matched.or_else(|| prefix.map(|p| Found::Route(p.entry.route, None)))
    }
}

/// A request target's path and its query (after the first `?`; `None` without one). A
/// byte scan: for a target of a few dozen bytes it costs less than a `char` search's
/// set-up.
pub fn split_query(target: &str) -> (&str, Option<&str>) {
    match target.bytes().position(|b| b == b'?') {
        Some(at) => (&target[..at], Some(&target[at + 1..])),
        None => (target, None),
    }
}

/// The path routes are matched on, as the servers behind will read it: without its
/// query, `%XX` decoded, runs of `/` merged and dot segments resolved. nginx does all
/// of it before it picks a location, and Tomcat and Spring decode and merge too: on
/// the raw text, `/%61ctuator/env`, `//actuator/env` or `/x/..%2Factuator/` would miss
/// a guarded `/actuator/` route and reach the app through an open `/`. Borrowed when
/// there is nothing to do, the common case.
pub fn normalized(target: &str) -> Cow<'_, str> {
    let (path, _) = split_query(target);
    // One pass for `%`, `//` and `/.`: three substring searches cost more than the
    // rest of routing a request.
    let bytes = path.as_bytes();
    let plain = !bytes
        .iter()
        .enumerate()
        .any(|(i, &b)| b == b'%' || (b == b'/' && matches!(bytes.get(i + 1), Some(b'/' | b'.'))));
    if plain {
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

    impl Router {
        fn pick(&self, listener: SocketAddr, host: &str, path: &str) -> Option<RouteId> {
            match self.find_path(listener, host, &normalized(path))? {
                Found::Route(r, _) | Found::Slash(r) => Some(r),
            }
        }
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
        assert_eq!(r.pick(any(), "other.org", "/api/v1"), Some(RouteId(1)));
        assert_eq!(r.pick(any(), "other.org", "/apix"), Some(RouteId(0)));
        assert_eq!(
            r.pick(any(), "www.example.com", "/api/v1"),
            Some(RouteId(2))
        );
        assert_eq!(r.pick(any(), "WWW.Example.COM.", "/"), Some(RouteId(2)));
        assert_eq!(r.pick(any(), "a.eu.example.com", "/x/1"), Some(RouteId(3)));
        assert_eq!(r.pick(any(), "a.eu.example.com", "/y"), None);
        assert_eq!(
            r.pick(any(), "shop.example.com", "/cart/1"),
            Some(RouteId(4))
        );
        assert_eq!(r.pick(any(), "shop.example.com", "/"), None);
        assert_eq!(r.pick(any(), "example.com", "/"), Some(RouteId(0)));
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
        assert_eq!(r.pick(http, "a.test", "/x"), Some(RouteId(0)));
        assert_eq!(r.pick(https, "a.test", "/x"), Some(RouteId(1)));
        assert_eq!(
            r.pick(http, "a.test", "/.well-known/acme-challenge/t"),
            Some(RouteId(2))
        );
        assert_eq!(
            r.pick(https, "a.test", "/.well-known/acme-challenge/t"),
            Some(RouteId(2))
        );
    }
}
