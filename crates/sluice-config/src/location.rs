//! What of a request's path a `[[route]]` matches and how it changes it on the way:
//! nginx's `location` (`path`, `exact`, `regex`, with `skip_regex`, `ignore_case` and
//! `under`), `rewrite` and `proxy_pass`'s URI part (`upstream_path`). Reads and checks;
//! the matching itself is the proxy's router.

use crate::key;
use crate::model::{Matching, Pattern, Rewrite, RewriteFlag, Route};
use crate::reader::{Reader, Span};
use crate::reference::{names, route as keys};
use toml_edit::{TableLike, Value};

/// The keys that say what a route matches; a route has at most one (`path = "/"` when
/// none).
const MATCHES: &[&str] = &["path", "exact", "regex"];

/// A route's `path`, `exact` or `regex`, as written, and how it is matched. With a
/// regular expression, its named groups are left in `r.captures` for the route's
/// templates (the caller clears them after the route).
pub(crate) fn matching(r: &mut Reader, table: &dyn TableLike) -> (String, Matching) {
    let given: Vec<&str> = MATCHES
        .iter()
        .copied()
        .filter(|k| table.contains_key(k))
        .collect();
    if let [first, second, ..] = given[..] {
        r.error(
            table.key(second).and_then(|k| k.span()),
            format!("a route matches one of `path`, `exact` and `regex`, not both `{first}` and `{second}`"),
            "split it into two routes",
        );
    }
    let matching = match given.first().copied() {
        Some("exact") => exact(r, table),
        Some("regex") => regex(r, table),
        _ => prefix(r, table),
    };
    not_for(r, table, &matching);
    matching
}

/// `path = "/api/"` (`/` when not given), and `skip_regex`.
fn prefix(r: &mut Reader, table: &dyn TableLike) -> (String, Matching) {
    let path = slash_path(r, table, "path").unwrap_or_else(|| "/".to_string());
    let skip_regex = r.boolean(table, "skip_regex").unwrap_or(false);
    (path, Matching::Prefix { skip_regex })
}

fn exact(r: &mut Reader, table: &dyn TableLike) -> (String, Matching) {
    let path = slash_path(r, table, "exact").unwrap_or_else(|| "/".to_string());
    (path, Matching::Exact)
}

/// `regex = '\.php$'`, with `ignore_case` and `under`.
fn regex(r: &mut Reader, table: &dyn TableLike) -> (String, Matching) {
    let ignore_case = r.boolean(table, "ignore_case").unwrap_or(false);
    let under = slash_path(r, table, "under");
    let Some((text, span)) = r.string(table, "regex") else {
        return ("/".to_string(), Matching::Prefix { skip_regex: false });
    };
    match compile(r, &text, ignore_case, span) {
        Some(pattern) => {
            r.captures = pattern.names();
            (text, Matching::Regex { pattern, under })
        }
        None => (text, Matching::Prefix { skip_regex: false }),
    }
}

/// Keys that belong to another kind of match than the route's are errors.
fn not_for(r: &mut Reader, table: &dyn TableLike, (_, matching): &(String, Matching)) {
    let wrong: &[(&str, &str)] = match matching {
        Matching::Prefix { .. } => &[("ignore_case", "regex"), ("under", "regex")],
        Matching::Exact => &[
            ("ignore_case", "regex"),
            ("under", "regex"),
            ("skip_regex", "path"),
        ],
        Matching::Regex { .. } => &[("skip_regex", "path")],
    };
    for (key, owner) in wrong {
        if let Some(k) = table.key(key) {
            r.error(
                k.span(),
                format!("`{key}` goes with `{owner}`, which this route does not have"),
                format!("remove `{key}`, or match with `{owner}`"),
            );
        }
    }
}

/// A string at `key` that must start with `/`.
fn slash_path(r: &mut Reader, table: &dyn TableLike, key: &str) -> Option<String> {
    let (p, span) = r.string(table, key)?;
    if !p.starts_with('/') {
        r.error(
            span,
            format!("{key} \"{p}\" does not start with /"),
            "write a path such as \"/\" or \"/api/\"",
        );
    }
    Some(p)
}

fn compile(r: &mut Reader, text: &str, ignore_case: bool, span: Span) -> Option<Pattern> {
    match Pattern::new(text, ignore_case) {
        Ok(p) => Some(p),
        Err(why) => {
            r.error(
                span,
                format!("not a regular expression: {why}"),
                "write it as nginx would (PCRE syntax); in TOML a 'literal string' keeps \\ as is",
            );
            None
        }
    }
}

/// `rewrite = [{ regex = '^/old/(.*)$', to = "/new/$1", flag = "last" }, ...]`.
pub(crate) fn rewrites(r: &mut Reader, table: &dyn TableLike) -> Vec<Rewrite> {
    let items = r.one_or_list(table, "rewrite", "a list of { regex, to, flag } tables");
    let route_names = std::mem::take(&mut r.captures);
    let out = items.into_iter().filter_map(|v| rewrite(r, v)).collect();
    r.captures = route_names;
    out
}

fn rewrite(r: &mut Reader, v: &Value) -> Option<Rewrite> {
    let Some(t) = v.as_inline_table() else {
        r.error(
            v.span(),
            "each `rewrite` must be a table",
            "write rewrite = [{ regex = '^/old/(.*)$', to = \"/new/$1\", flag = \"last\" }]",
        );
        return None;
    };
    r.only_keys(t, &names(keys::REWRITE), "a `rewrite`");
    let flag = flag(r, t);
    let Some((text, span)) = r.string(t, "regex") else {
        r.error(
            v.span(),
            "a `rewrite` has no `regex`",
            "add regex = '^/old/(.*)$'",
        );
        return None;
    };
    let pattern = compile(r, &text, false, span)?;
    let Some((to, to_span)) = r.string(t, "to") else {
        r.error(v.span(), "a `rewrite` has no `to`", "add to = \"/new/$1\"");
        return None;
    };
    let to = match key::template_with(&to, &pattern.names()) {
        Ok(t) => t,
        Err(e) => {
            r.error(
                to_span,
                e.message,
                "groups are $1 to $9, or $NAME for (?<NAME>...)",
            );
            return None;
        }
    };
    Some(Rewrite {
        pattern,
        to,
        flag: flag?,
    })
}

fn flag(r: &mut Reader, t: &dyn TableLike) -> Option<RewriteFlag> {
    let Some((text, span)) = r.string(t, "flag") else {
        return Some(RewriteFlag::Continue);
    };
    let flag = match text.as_str() {
        "last" => RewriteFlag::Last,
        "break" => RewriteFlag::Break,
        "redirect" => RewriteFlag::Redirect,
        "permanent" => RewriteFlag::Permanent,
        _ => {
            r.error(
                span,
                format!("unknown rewrite flag \"{text}\""),
                "write last, break, redirect or permanent (or leave `flag` out)",
            );
            return None;
        }
    };
    Some(flag)
}

/// `upstream_path = "/v2/"`: only on a route that forwards.
pub(crate) fn upstream_path(
    r: &mut Reader,
    table: &dyn TableLike,
    forwards: bool,
) -> Option<crate::model::KeyTemplate> {
    let (text, span) = r.string(table, "upstream_path")?;
    if !forwards {
        r.error(
            span,
            "`upstream_path` is for a route with `upstream`",
            "remove it, or forward the route with upstream = \"NAME\"",
        );
        return None;
    }
    if !text.starts_with('/') && !text.starts_with('$') {
        r.error(
            span.clone(),
            format!("upstream_path \"{text}\" does not start with /"),
            "write a path such as \"/\" or \"/v2/\"",
        );
    }
    crate::answer::value(r, &text, span)
}

/// Every `under` names a prefix route of the same host: the location it is nested in.
pub(crate) fn check_nesting(r: &mut Reader, routes: &[(Route, Span)]) {
    for (route, span) in routes {
        let Matching::Regex {
            under: Some(under), ..
        } = &route.matching
        else {
            continue;
        };
        let parent = routes.iter().any(|(p, _)| {
            p.host == route.host
                && matches!(p.matching, Matching::Prefix { .. })
                && p.path == *under
        });
        if !parent {
            r.error(
                span.clone(),
                format!("`under = \"{under}\"` names no route with path = \"{under}\" and the same host"),
                "add that prefix route, or remove `under`",
            );
        }
    }
}
