//! nginx's `location` blocks as routes: where one matches, as a sluice path prefix, and
//! what its directives ask for.

use crate::plan::{Action, Matching, Route};
use crate::scope::Scope;
use crate::tree::Node;
use crate::Notes;

/// A location as sluice routes it: its path prefix, why that is not exactly what nginx
/// matches (when it is not), and how nginx matched it.
pub struct Prefix {
    pub path: String,
    pub why: Option<String>,
    pub matching: Matching,
}

/// A location's path prefix; why it has none sluice can route on, if so.
pub fn prefix(loc: &Node) -> Result<Prefix, String> {
    // nginx also takes the modifier glued to its argument: `location =/x`, `~^/api`.
    let glued = loc
        .arg(1)
        .is_none()
        .then(|| loc.arg(0))
        .flatten()
        .and_then(|a| {
            ["^~", "~*", "=", "~"].into_iter().find_map(|op| {
                a.strip_prefix(op)
                    .filter(|p| !p.is_empty())
                    .map(|p| (op, p))
            })
        });
    let (first, second) = match glued {
        Some((op, p)) => (Some(op), Some(p)),
        None => (loc.arg(0), loc.arg(1)),
    };
    let plain = |path: &str, matching| Prefix {
        path: path.to_string(),
        why: None,
        matching,
    };
    match (first, second) {
        (Some("="), Some(p)) => Ok(Prefix {
            why: Some(format!("= {p}: an exact match, translated as the prefix {p} (sluice routes by prefix: {p}... matches too)")),
            ..plain(p, Matching::Exact)
        }),
        (Some("^~"), Some(p)) => Ok(plain(p, Matching::Preferred)),
        (Some(op @ ("~" | "~*")), Some(re)) => regex(op, re),
        (Some(p), None) if p.starts_with('@') => Err(format!(
            "{p}: a named location (for try_files or error_page), which sluice has no use for; left out"
        )),
        (Some(p), None) => Ok(plain(p, Matching::Prefix)),
        _ => Err("a location sluice cannot read; left out".into()),
    }
}

/// A regex that is a prefix in disguise (`^/api/`, `^/api/(.*)$`, `/.well-known/acme/`).
fn regex(op: &str, re: &str) -> Result<Prefix, String> {
    let anchored = re.starts_with('^');
    let body = re.strip_prefix('^').unwrap_or(re);
    let mut literal = String::new();
    let mut chars = body.char_indices().peekable();
    let mut rest = "";
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e)) if !e.is_ascii_alphanumeric() => literal.push(e),
                _ => {
                    rest = &body[i..];
                    break;
                }
            },
            // A dot in a path is meant as a dot ("/.well-known/"): taken literally.
            '.' if chars
                .peek()
                .is_some_and(|(_, n)| !matches!(n, '*' | '+' | '?')) =>
            {
                literal.push('.')
            }
            '[' | ']' | '(' | ')' | '{' | '}' | '*' | '+' | '?' | '|' | '$' | '.' => {
                rest = &body[i..];
                break;
            }
            c => literal.push(c),
        }
    }
    let tail_ok = matches!(rest, "" | ".*" | "(.*)" | ".*$" | "(.*)$" | "$");
    if !literal.starts_with('/')
        || !tail_ok
        || (rest.ends_with('$') && rest != "(.*)$" && rest != ".*$")
    {
        return Err(format!(
            "{op} {re}: a regular expression that is not a path prefix; sluice routes by prefix: left out (add a route by hand)"
        ));
    }
    let mut why = format!("{op} {re}: a regular expression, translated as the prefix {literal}");
    if !anchored {
        why.push_str(" (it was not anchored with ^: nginx also matched it further in a path)");
    }
    if op == "~*" {
        why.push_str(" (case-sensitive in sluice)");
    }
    Ok(Prefix {
        path: literal,
        why: Some(why),
        matching: Matching::Regex {
            re: format!("{op} {re}"),
            anchored,
            caseless: op == "~*",
            order: 0,
        },
    })
}

/// The route a location's directives make, with `scope` (what it inherits) applied.
pub fn route(loc: &Node, scope: &Scope, notes: &mut Notes) -> Route {
    let mut route = Route {
        from: format!("{}:{}", loc.file, loc.line),
        ..Route::default()
    };
    scope.apply(&mut route);
    for d in loc.block() {
        if let Some(action) = action(d, notes) {
            route.action = action;
        }
    }
    // A location whose content is another handler's (FastCGI...) is not a directory
    // of files to serve, whatever its root: its files are that handler's scripts.
    if content(loc).is_some() && matches!(route.action, Action::Root(_)) {
        route.action = Action::None;
    }
    if matches!(route.action, Action::None) && content(loc).is_none() {
        if let Some(root) = &scope.root {
            route.action = Action::Root(root.clone());
        }
    }
    // nginx answers a client 404 in an `internal` location, whatever else it holds;
    // left out, its path would fall to a shorter prefix's route (`/backups/` to `/`'s
    // application).
    if loc.block().iter().any(|d| d.name == "internal") {
        route.action = Action::Return {
            status: 404,
            location: None,
            body: None,
        };
    }
    route
}

/// Directives that answer a location's requests with something other than its files:
/// handlers sluice does not translate (and `proxy_pass` where it could not be).
const CONTENT: &[&str] = &[
    "proxy_pass",
    "fastcgi_pass",
    "uwsgi_pass",
    "scgi_pass",
    "grpc_pass",
    "memcached_pass",
    "empty_gif",
    "stub_status",
    "js_content",
    "perl",
    "content_by_lua",
    "content_by_lua_block",
    "content_by_lua_file",
    "api",
];

/// The directive that answers `loc`'s requests with a handler sluice does not
/// translate, if it has one.
pub fn content(loc: &Node) -> Option<&Node> {
    let untranslated = |d: &&Node| action(d, &mut Vec::new()).is_none();
    loc.block()
        .iter()
        .filter(|d| CONTENT.contains(&d.name.as_str()))
        .find(untranslated)
}

/// What a directive makes the route do, if it is one that answers.
pub fn action(d: &Node, notes: &mut Notes) -> Option<Action> {
    match d.name.as_str() {
        "proxy_pass" => proxy_pass(d, notes),
        "return" => answer(d, notes),
        "root" => root(d),
        _ => None,
    }
}

/// `root DIR`, unless the directory is made of variables sluice does not have (the
/// scope, which takes every level's `root`, notes that).
fn root(d: &Node) -> Option<Action> {
    let dir = d.arg(0)?;
    (!dir.contains('$')).then(|| Action::Root(dir.to_string()))
}

/// `proxy_pass http://NAME` (an upstream block) or `http://HOST:PORT` (made one).
fn proxy_pass(d: &Node, notes: &mut Notes) -> Option<Action> {
    let url = d.arg(0)?;
    let (scheme, rest) = url.split_once("://")?;
    let (authority, uri) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, ""),
    };
    if authority.contains('$') || authority.starts_with("unix:") {
        notes.push(d.note(format!(
            "{url}: a variable or unix socket as the server; not translated"
        )));
        return None;
    }
    if !uri.is_empty() && uri != "/" {
        notes.push(d.note(format!(
            "{url}: nginx replaces the location's prefix with {uri}; sluice sends the path as it came (no rewriting): the server sees the original path"
        )));
    } else if uri == "/" {
        notes.push(d.note(format!(
            "{url}: with a trailing /, nginx replaces the location's prefix with /; sluice sends the path as it came"
        )));
    }
    let target = if scheme == "https" {
        format!("https://{authority}")
    } else {
        authority.to_string()
    };
    Some(Action::Upstream(target))
}

/// `return CODE [URL | TEXT]` and `return URL`.
fn answer(d: &Node, notes: &mut Notes) -> Option<Action> {
    let (status, text) = match d.arg(0)?.parse::<u16>() {
        Ok(code) => (code, d.arg(1)),
        Err(_) => (302, d.arg(0)),
    };
    if matches!(status, 301 | 308) && text == Some("https://$host$request_uri") && status == 301 {
        return Some(Action::RedirectHttps);
    }
    if status == 444 {
        notes.push(d.note("444 (close without an answer): sluice answers 403 instead"));
        return Some(Action::Return {
            status: 403,
            location: None,
            body: None,
        });
    }
    let redirect = matches!(status, 301 | 302 | 303 | 307 | 308);
    Some(Action::Return {
        status,
        location: text.filter(|_| redirect).map(str::to_string),
        body: text.filter(|_| !redirect).map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::regex;

    #[test]
    fn regexes_that_are_prefixes_in_disguise_become_prefixes() {
        let p = |re: &str| regex("~", re).map(|p| p.path);
        assert_eq!(p("^/api/").unwrap(), "/api/");
        assert_eq!(p("^/api/(.*)$").unwrap(), "/api/");
        assert_eq!(
            p("/.well-known/acme-challenge/").unwrap(),
            "/.well-known/acme-challenge/"
        );
        assert_eq!(p("^/socket\\.io/").unwrap(), "/socket.io/");
        assert!(p("\\.php$").is_err());
        assert!(p("^/(api|admin)/").is_err());
        assert!(p("^/static/.*\\.(css|js)$").is_err());
        assert!(p("^/exact$").is_err());
    }
}
