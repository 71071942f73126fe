//! Following a request's path through the routes, as nginx follows it through its
//! locations: the route that takes it (`router`), that route's rewrites (which may send
//! the new path through the routes again, answer a redirect, or keep it), and the path
//! its server gets (`upstream_path`, a rewrite's, or the target as received).
//!
//! A route with no rewrite and no `upstream_path` costs what routing always did: no
//! allocation, the target sent as it came.

use super::key::{self, View};
use super::router::{normalized, split_query, Captured, Found, Router};
use super::RouteId;
use sluice_config::{KeyTemplate, Matching, Rewrite, RewriteFlag, Route};
use std::borrow::Cow;
use std::net::SocketAddr;

/// At most this many times a request's rewritten path is matched against the routes
/// again (nginx's limit); one more is a `500`.
const MAX_SEARCHES: usize = 10;

/// Where a request's path led.
#[derive(Debug, PartialEq, Eq)]
pub enum Located {
    /// This route takes it. `path`: the request target for its server when it is not
    /// the one received; `captured`: its regular expression's groups.
    Route {
        route: RouteId,
        path: Option<String>,
        captured: Option<Captured>,
    },
    /// The route answers it: a redirect (`Location` given) or, with none, a `500` of
    /// rewrites that loop or empty the path.
    Answer {
        route: RouteId,
        status: u16,
        location: Option<String>,
    },
    /// No route matches.
    Nowhere,
}

/// The request's path as the rewrites see it, and its query: borrowed until a rewrite
/// changes them (a `break` rewrite's target is written without changing them).
struct Uri<'a> {
    path: Cow<'a, str>,
    args: Cow<'a, str>,
    rewritten: bool,
}

/// Where the request `view` (which came in on `listener`) goes through `routes`.
pub fn locate(router: &Router, routes: &[Route], listener: SocketAddr, view: &View<'_>) -> Located {
    let path = normalized(view.target);
    let Some(found) = router.find_path(listener, view.host, &path) else {
        return Located::Nowhere;
    };
    let simple = |r: RouteId| {
        let route = &routes[r.0];
        route.rewrites.is_empty() && route.upstream_path.is_none()
    };
    match found {
        Found::Route(r, captured) if simple(r) => Located::Route {
            route: r,
            path: None,
            captured,
        },
        found => follow(router, routes, (listener, view), (path, found)),
    }
}

/// The slow way: rewrites, searches again, and the server's path.
fn follow(
    router: &Router,
    routes: &[Route],
    (listener, view): (SocketAddr, &View<'_>),
    (path, mut found): (Cow<'_, str>, Found),
) -> Located {
    let mut uri = Uri {
        path,
        args: Cow::Borrowed(split_query(view.target).1.unwrap_or("")),
        rewritten: false,
    };
    for _ in 0..=MAX_SEARCHES {
        let (route, captured) = match found {
            Found::Slash(route) => return slash(route, &uri),
            Found::Route(route, captured) => (route, captured),
        };
        match rewrite(&routes[route.0].rewrites, view, &mut uri) {
            Next::Keep => return to_server((route, &routes[route.0]), captured, &uri, view),
            Next::Break(target) => {
                return Located::Route {
                    route,
                    path: Some(target),
                    captured,
                }
            }
            Next::Answer(status, location) => {
                return Located::Answer {
                    route,
                    status,
                    location,
                }
            }
            Next::Search => {}
        }
        found = match router.find_path(listener, view.host, &uri.path) {
            Some(f) => f,
            None => return Located::Nowhere,
        };
    }
    let route = match found {
        Found::Route(r, _) | Found::Slash(r) => r,
    };
    tracing::warn!(
        target = view.target,
        "rewrites went on past {MAX_SEARCHES} searches"
    );
    Located::Answer {
        route,
        status: 500,
        location: None,
    }
}

/// `/api` for a forwarding `/api/`: `301` to it, the query kept.
fn slash(route: RouteId, uri: &Uri) -> Located {
    let mut location = format!("{}/", uri.path);
    if !uri.args.is_empty() {
        location.push('?');
        location.push_str(&uri.args);
    }
    Located::Answer {
        route,
        status: 301,
        location: Some(location),
    }
}

/// What a route's rewrites ask for next.
enum Next {
    /// None matched: the route keeps the request.
    Keep,
    /// `break`: the route keeps it, with this target for its server.
    Break(String),
    /// `last`, or rewrites without a flag: search the routes again with the new path.
    Search,
    /// A redirect, or a `500` (no location).
    Answer(u16, Option<String>),
}

/// Runs `rewrites` on `uri`, in order, until one with a flag matches.
fn rewrite(rewrites: &[Rewrite], view: &View<'_>, uri: &mut Uri) -> Next {
    let mut changed = false;
    for rw in rewrites {
        let Some(groups) = rw.pattern.captures(&uri.path) else {
            continue;
        };
        let mut out = Vec::with_capacity(uri.path.len() + uri.args.len() + 32);
        key::evaluate_with(&rw.to, view, Some(&groups), &mut out);
        let to = text(out);
        if let Some(status) = redirect_status(rw) {
            return Next::Answer(status, Some(with_args(&to, &uri.args)));
        }
        let Some((path, own, args)) = split(&to, &uri.args) else {
            return Next::Answer(500, None);
        };
        if rw.flag == RewriteFlag::Break {
            // Most often `to` is the target already: nothing to escape, no query to add.
            let as_is = args.is_empty()
                && !to.ends_with('?')
                && !path.bytes().any(needs_escape)
                && own.bytes().all(fits_request_line);
            return Next::Break(if as_is { to } else { target(path, [own, args]) });
        }
        let args = joined([own, args]);
        uri.replace(path, args);
        changed = true;
        if rw.flag == RewriteFlag::Last {
            return Next::Search;
        }
    }
    if changed {
        Next::Search
    } else {
        Next::Keep
    }
}

/// `301`/`302` when rewrite `rw` redirects: by its flag, or by a `to` that is a URL.
fn redirect_status(rw: &Rewrite) -> Option<u16> {
    let absolute = match rw.to.parts.first() {
        Some(sluice_config::KeyPart::Literal(text)) => {
            text.starts_with("http://") || text.starts_with("https://")
        }
        Some(sluice_config::KeyPart::Var(sluice_config::Variable::Scheme)) => true,
        _ => false,
    };
    match rw.flag {
        RewriteFlag::Permanent => Some(301),
        RewriteFlag::Redirect => Some(302),
        _ if absolute => Some(302),
        _ => None,
    }
}

/// A redirect's location: `to`, with the request's query after it unless `to` ends
/// with `?` (which is dropped) (nginx).
fn with_args(to: &str, args: &str) -> String {
    if let Some(bare) = to.strip_suffix('?') {
        return bare.to_string();
    }
    if args.is_empty() {
        return to.to_string();
    }
    let join = if to.contains('?') { '&' } else { '?' };
    format!("{to}{join}{args}")
}

/// A rewrite's `to` as a path and the query after it, in two parts: `to`'s own query,
/// then the request's `args` (none when `to` ends with `?`), each "" when absent.
/// `None` when the path is empty.
fn split<'t, 'a>(to: &'t str, args: &'a str) -> Option<(&'t str, &'t str, &'a str)> {
    let (path, query) = split_query(to);
    let query = query.unwrap_or("");
    if path.is_empty() {
        return None;
    }
    Some(match query.strip_suffix('?') {
        Some(own) => (path, own.trim_end_matches('?'), ""),
        None if to.ends_with('?') => (path, "", ""),
        None => (path, query, args),
    })
}

/// A target for the server: `path` escaped as nginx escapes it, then the query's parts
/// joined by `&` (whose groups may hold anything: made safe for the request line), in
/// one pass into one string.
fn target(path: &str, query: [&str; 2]) -> String {
    let mut out = String::with_capacity(path.len() + query[0].len() + query[1].len() + 2);
    escape_into(&mut out, path, needs_escape);
    let mut sep = '?';
    for part in query.into_iter().filter(|p| !p.is_empty()) {
        out.push(sep);
        escape_into(&mut out, part, |b| !fits_request_line(b));
        sep = '&';
    }
    out
}

/// A template's output as text; bytes that are not UTF-8 (from a header's value)
/// become U+FFFD. Without a copy when it is UTF-8, as it nearly always is.
fn text(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A query's parts joined by `&`.
fn joined(query: [&str; 2]) -> String {
    match query {
        [q, ""] | ["", q] => q.to_string(),
        [q, args] => format!("{q}&{args}"),
    }
}

impl Uri<'_> {
    /// The path becomes `path`, the query `args`.
    fn replace(&mut self, path: &str, args: String) {
        self.args = Cow::Owned(args);
        self.path = Cow::Owned(path.to_string());
        self.rewritten = true;
    }

    /// The target for the server.
    fn target(&self) -> String {
        target(&self.path, [&self.args, ""])
    }
}

/// Route `route` keeps the request: its server's path by `upstream_path`, else the
/// rewritten one, else the one received.
fn to_server(
    (route_id, route): (RouteId, &Route),
    captured: Option<Captured>,
    uri: &Uri,
    view: &View<'_>,
) -> Located {
    let path = match &route.upstream_path {
        Some(template) => Some(upstream_path(
            route,
            template,
            (captured.as_ref(), view),
            uri,
        )),
        None => uri.rewritten.then(|| uri.target()),
    };
    Located::Route {
        route: route_id,
        path: path.map(request_target),
        captured,
    }
}

/// nginx's `proxy_pass` URI part: on a prefix or exact route it replaces the route's
/// path at the start of the request's, the query following; on a regex route it is the
/// whole target.
fn upstream_path(
    route: &Route,
    template: &KeyTemplate,
    (captured, view): (Option<&Captured>, &View<'_>),
    uri: &Uri,
) -> String {
    let mut out = Vec::new();
    let groups = captured.map(|c| c as &dyn super::router::Groups);
    key::evaluate_with(template, view, groups, &mut out);
    let mut target = text(out);
    if matches!(route.matching, Matching::Regex { .. }) {
        return target;
    }
    let cut = route.path.len().min(uri.path.len());
    let rest = uri.path.get(cut..).unwrap_or("");
    target.push_str(&escaped(rest));
    if !uri.args.is_empty() {
        target.push('?');
        target.push_str(&uri.args);
    }
    target
}

/// `target` as a request line can carry it: a byte it cannot (a control, a space, one
/// beyond ASCII), put there by a decoded group or a header's value, escaped, so that no
/// request can smuggle another into the line (`%0D%0A` decoded by routing).
fn request_target(target: String) -> String {
    if target.bytes().all(fits_request_line) {
        return target;
    }
    let mut out = String::with_capacity(target.len() + 16);
    escape_into(&mut out, &target, |b| !fits_request_line(b));
    out
}

/// Whether a request line carries byte `b` as it is.
fn fits_request_line(b: u8) -> bool {
    (0x21..0x7f).contains(&b)
}

/// `path` with what nginx escapes in a URI escaped: controls, space, `"`, `#`, `%`,
/// `?` and bytes beyond ASCII.
fn escaped(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    escape_into(&mut out, path, needs_escape);
    out
}

/// Appends `text` to `out`, each byte `escape` picks as `%XX`. Text with none is
/// copied whole (most paths).
fn escape_into(out: &mut String, text: &str, escape: impl Fn(u8) -> bool) {
    if !text.bytes().any(&escape) {
        out.push_str(text);
        return;
    }
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for (i, c) in text.char_indices() {
        if !c.is_ascii() || escape(c as u8) {
            for &b in &text.as_bytes()[i..i + c.len_utf8()] {
                out.extend([
                    '%',
                    char::from(HEX[usize::from(b >> 4)]),
                    char::from(HEX[usize::from(b & 15)]),
                ]);
            }
        } else {
            out.push(c);
        }
    }
}

/// What nginx escapes in a URI: controls, space, `"`, `#`, `%`, `?`, beyond ASCII.
fn needs_escape(b: u8) -> bool {
    b <= b' ' || b >= 0x7f || matches!(b, b'"' | b'#' | b'%' | b'?')
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"
        [[listener]]
        bind = "127.0.0.1:1"
        [upstream.a]
        servers = ["127.0.0.1:2"]
        [[route]]
        upstream = "a"
        [[route]]
        exact = "/login"
        upstream = "a"
        [[route]]
        path = "/static/"
        skip_regex = true
        upstream = "a"
        upstream_path = "/assets/"
        [[route]]
        regex = '\.png$'
        upstream = "a"
        [[route]]
        regex = '^/u/(\d+)/(?<tab>[a-z]+)$'
        upstream = "a"
        upstream_path = "/users/$1?tab=$tab"
        [[route]]
        path = "/nest/"
        upstream = "a"
        [[route]]
        regex = '\.png$'
        under = "/nest/"
        return = 403
        [[route]]
        path = "/old/"
        upstream = "a"
        rewrite = [{ regex = '^/old/(.*)$', to = "/new/$1?from=old", flag = "last" }]
        [[route]]
        path = "/new/"
        upstream = "a"
        [[route]]
        path = "/b/"
        upstream = "a"
        upstream_path = "/ignored/"
        rewrite = [{ regex = '^/b/(.*)$', to = "/kept/$1", flag = "break" }]
        [[route]]
        path = "/go/"
        upstream = "a"
        rewrite = [
          { regex = '^/go/away/(.*)$', to = "https://example.com/$1?" },
          { regex = '^/go/(.*)$', to = "/there/$1", flag = "permanent" },
        ]
        [[route]]
        path = "/loop/"
        upstream = "a"
        rewrite = [{ regex = '^/loop/(.*)$', to = "/loop/$1", flag = "last" }]
        [[route]]
        path = "/keep/"
        upstream = "a"
        [[route]]
        path = "/keep"
        return = 204
        [[route]]
        regex = '^/cap/([^/]*)$'
        upstream = "a"
        upstream_path = "/c/$1?x=$1"
        [[route]]
        path = "/brq/"
        upstream = "a"
        rewrite = [{ regex = '^/brq/(.*)$', to = "/kept?v=$1", flag = "break" }]
    "#;

    /// Where `target` went: the route's index and the server's target, or the answer.
    fn at(target: &str) -> String {
        let config = sluice_config::parse("t", CONFIG).unwrap();
        let router = Router::new(&config);
        let view = View {
            host: "h",
            target,
            headers: &[],
            client_ip: "10.0.0.1",
            scheme: "http",
            identity: None,
            request_id: Default::default(),
            traceparent: Default::default(),
            captured: Default::default(),
        };
        let listener = "127.0.0.1:1".parse().unwrap();
        match locate(&router, &config.routes, listener, &view) {
            Located::Route { route, path, .. } => {
                format!("{} {}", route.0, path.as_deref().unwrap_or(target))
            }
            Located::Answer {
                status, location, ..
            } => format!("{status} {}", location.unwrap_or_default()),
            Located::Nowhere => "none".into(),
        }
    }

    #[test]
    fn routes_are_found_in_nginxs_order() {
        assert_eq!(at("/login"), "1 /login");
        assert_eq!(at("/login/x"), "0 /login/x");
        assert_eq!(at("/x.png"), "3 /x.png");
        // `skip_regex`: the longest prefix keeps it from the regexes.
        assert_eq!(at("/static/a.png"), "2 /assets/a.png");
        // Nested: tried first, when its prefix is the longest.
        assert_eq!(at("/nest/a.png"), "6 /nest/a.png");
        assert_eq!(at("/nest/a.txt"), "5 /nest/a.txt");
        // Groups by number and by name; the query is not added on a regex route.
        assert_eq!(at("/u/7/posts?x=1"), "4 /users/7?tab=posts");
        // A forwarding prefix one `/` short: 301, the query kept.
        assert_eq!(at("/nest?q=1"), "301 /nest/?q=1");
        // Not when a prefix route is that very path.
        assert_eq!(at("/keep"), "13 /keep");
    }

    #[test]
    fn rewrites_follow_nginxs_flags() {
        // `last`: searched again; the new query goes before the request's.
        assert_eq!(at("/old/a%20b?y=2"), "8 /new/a%20b?from=old&y=2");
        // `break`: kept, with the new path, `upstream_path` unused.
        assert_eq!(at("/b/x?y=1"), "9 /kept/x?y=1");
        // Its `to` sent as it is when nothing is to be escaped or added, else escaped.
        assert_eq!(at("/b/x"), "9 /kept/x");
        assert_eq!(at("/brq/ok"), "15 /kept?v=ok");
        assert_eq!(at("/b/a%20b"), "9 /kept/a%20b");
        assert_eq!(at("/brq/ok?y=1"), "15 /kept?v=ok&y=1");
        // A URL redirects (302) whatever the flag; a trailing `?` drops the query.
        assert_eq!(at("/go/away/x?y=1"), "302 https://example.com/x");
        assert_eq!(at("/go/x?y=1"), "301 /there/x?y=1");
        // Ten searches again at most, then 500.
        assert_eq!(at("/loop/x"), "500 ");
    }

    #[test]
    fn a_group_cannot_smuggle_a_request_into_the_line() {
        // `%0D%0A` is decoded by routing; the group that holds it goes out escaped.
        let got = at("/cap/a%0D%0AHost:%20evil");
        assert_eq!(got, "14 /c/a%0D%0AHost:%20evil?x=a%0D%0AHost:%20evil");
        // `.` takes a CR: a rewrite's path is escaped alike.
        let got = at("/old/x%0D%20GET");
        assert_eq!(got, "8 /new/x%0D%20GET?from=old");
        assert_eq!(request_target("/a?q=x\r\ny z".into()), "/a?q=x%0D%0Ay%20z");
        // Through a `break` rewrite's query too.
        let got = at("/brq/x%0D%20y");
        assert_eq!(got, "15 /kept?v=x%0D%20y");
    }

    #[test]
    fn a_path_sent_anew_is_escaped_as_nginx_escapes_it() {
        assert_eq!(escaped("/a b/%/ü?#"), "/a%20b/%25/%C3%BC%3F%23");
        assert_eq!(escaped("/plain/path-1.txt"), "/plain/path-1.txt");
    }
}
