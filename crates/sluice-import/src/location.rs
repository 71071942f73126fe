//! nginx's `location` blocks as routes: where one matches (a prefix, an exact path, a
//! regular expression, as nginx matches it), and what its directives ask for
//! (`proxy_pass` with its URI part, `return`, `root`, `rewrite`).

use crate::plan::{Action, Matching, Rewrite, Route};
use crate::scope::Scope;
use crate::tree::Node;
use crate::Notes;

/// A location as sluice routes it: its path (or regular expression) and how nginx
/// matched it.
pub struct Prefix {
    pub path: String,
    pub matching: Matching,
}

/// A location's path and matching; why sluice cannot route it, if so.
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
        matching,
    };
    match (first, second) {
        (Some("="), Some(p)) => Ok(plain(p, Matching::Exact)),
        (Some("^~"), Some(p)) => Ok(plain(p, Matching::Preferred)),
        (Some(op @ ("~" | "~*")), Some(re)) => regex(op, re),
        (Some(p), None) if p.starts_with('@') => Err(format!(
            "{p}: a named location (for try_files or error_page), which sluice has no use for; left out"
        )),
        (Some(p), None) => Ok(plain(p, Matching::Prefix)),
        _ => Err("a location sluice cannot read; left out".into()),
    }
}

/// `location ~ RE` or `~* RE`, when sluice's regex engine reads it as nginx's PCRE.
fn regex(op: &str, re: &str) -> Result<Prefix, String> {
    let caseless = op == "~*";
    match sluice_config::Pattern::new(re, caseless) {
        Ok(_) => Ok(Prefix {
            path: re.to_string(),
            matching: Matching::Regex {
                caseless,
                under: None,
            },
        }),
        Err(why) => Err(format!(
            "{op} {re}: a regular expression sluice's engine does not read ({}); left out (add a route by hand)",
            why.lines().next().unwrap_or_default()
        )),
    }
}

/// `rewrite REGEX REPLACEMENT [FLAG]`, when sluice can carry it: its regex read, its
/// replacement's variables known, its flag one of nginx's four.
fn rewrite(d: &Node, notes: &mut Notes) -> Option<Rewrite> {
    let (regex, to) = (d.arg(0)?, d.arg(1)?);
    let flag = d.arg(2).map(str::to_string);
    let not = |why: String| d.note(format!("{regex} {to}: {why}; not carried over"));
    let pattern = match sluice_config::Pattern::new(regex, false) {
        Ok(p) => p,
        Err(why) => {
            let why = why.lines().next().unwrap_or_default().to_string();
            notes.push(not(format!(
                "a regular expression sluice's engine does not read ({why})"
            )));
            return None;
        }
    };
    let groups: Vec<String> = pattern.names().into_iter().map(|(n, _)| n).collect();
    if let Some(var) = crate::plan::unknown_in(to, &groups) {
        notes.push(not(format!("{var} is no variable sluice has")));
        return None;
    }
    if let Some(f) = flag
        .as_deref()
        .filter(|f| !matches!(*f, "last" | "break" | "redirect" | "permanent"))
    {
        notes.push(not(format!("unknown flag {f}")));
        return None;
    }
    Some(Rewrite {
        regex: regex.to_string(),
        to: to.to_string(),
        flag,
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
            route.upstream_path = uri_part(d).filter(|u| !u.is_empty()).map(str::to_string);
        }
        if d.name == "rewrite" {
            route.rewrites.extend(rewrite(d, notes));
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
    let authority = rest.split('/').next().unwrap_or(rest);
    if authority.contains('$') || authority.starts_with("unix:") {
        notes.push(d.note(format!(
            "{url}: a variable or unix socket as the server; not translated"
        )));
        return None;
    }
    let target = if scheme == "https" {
        format!("https://{authority}")
    } else {
        authority.to_string()
    };
    Some(Action::Upstream(target))
}

/// `proxy_pass`'s URI part: `/v2/` of `http://app/v2/` ("" without one); none for
/// another directive.
fn uri_part(d: &Node) -> Option<&str> {
    let url = d.arg(0).filter(|_| d.name == "proxy_pass")?;
    let rest = url.split_once("://")?.1;
    Some(rest.find('/').map_or("", |at| &rest[at..]))
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
    use crate::plan::Matching;

    #[test]
    fn regex_locations_are_carried_as_written() {
        let p = regex("~*", "\\.(png|jpe?g)$").unwrap();
        assert_eq!(p.path, "\\.(png|jpe?g)$");
        assert_eq!(
            p.matching,
            Matching::Regex {
                caseless: true,
                under: None
            }
        );
        // PCRE's look-ahead too (nextcloud's rewrites use it).
        assert!(regex("~", "^/(?!index|remote)").is_ok());
        assert!(regex("~", "^/(unclosed").is_err());
    }
}
