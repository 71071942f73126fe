//! The config's keys as data, and the configuration reference made from them.
//!
//! Each table of the file format has one [`Key`] list beside the code that reads it: the
//! reader refuses any key that is not in it, and [`markdown`] renders every list into
//! `docs/reference/configuration.md` (`sluice man --config`). So a key cannot be accepted
//! without being documented, and the docs test fails when the committed reference is not
//! what this makes. Every key's example is checked here as part of a whole config.

use std::fmt::Write;

/// Whether a running sluice takes a changed value on reload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// `sluice reload` (or SIGHUP) applies it.
    Applies,
    /// Read once at start: a change takes effect when sluice is restarted.
    Restart,
}

/// One key of one table.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub name: &'static str,
    /// Its TOML type in words: `duration`, `integer`, `string`, `list of strings`, ...
    pub kind: &'static str,
    /// Its default as written in a config (`"30s"`), or words (`none`, `required`).
    pub default: &'static str,
    pub doc: &'static str,
    pub reload: Reload,
    /// The nginx and HAProxy directives closest to it, in Markdown; empty for none.
    pub like: &'static str,
    /// TOML that sets it, as a user would write it (with its table's header when it is
    /// in one), valid inside the table's [`Table::context`].
    pub example: &'static str,
}

impl Key {
    pub const fn new(
        name: &'static str,
        kind: &'static str,
        default: &'static str,
        doc: &'static str,
    ) -> Key {
        Key {
            name,
            kind,
            default,
            doc,
            reload: Reload::Applies,
            like: "",
            example: "",
        }
    }

    /// Read at start only.
    pub const fn restart(self) -> Key {
        Key {
            reload: Reload::Restart,
            ..self
        }
    }

    /// Its nginx and HAProxy equivalents.
    pub const fn like(self, like: &'static str) -> Key {
        Key { like, ..self }
    }

    pub const fn example(self, example: &'static str) -> Key {
        Key { example, ..self }
    }
}

/// The names of `keys`, for [`crate::Reader::only_keys`].
pub(crate) fn names(keys: &[Key]) -> Vec<&'static str> {
    keys.iter().map(|k| k.name).collect()
}

/// One table of the config file (or one kind of inline table), in the reference.
pub struct Table {
    /// Its place in a config, as a key's heading prefixes it: `listener`,
    /// `upstream.NAME`; empty for the top level.
    pub path: &'static str,
    /// How it is written: "`[[listener]]`", "a server in `servers`".
    pub title: &'static str,
    pub intro: &'static str,
    pub keys: &'static [Key],
    /// The rest of a whole config, into which each key's example is put at `{}`.
    pub context: String,
}

pub mod listener;
pub mod route;
pub mod top;
pub mod upstream;

/// A listener, an upstream and a route: with an example, a whole config.
const LISTENER: &str = "[[listener]]\nbind = \"127.0.0.1:8080\"\n";
const UPSTREAM: &str = "[upstream.app]\nservers = [\"127.0.0.1:9001\"]\n";
const ROUTE: &str = "[[route]]\nupstream = \"app\"\n";

/// A table's entry: its path, title, intro, keys, and the rest of a config around an
/// example (`{}`), from the pieces above.
fn table(
    path: &'static str,
    title: &'static str,
    intro: &'static str,
    keys: &'static [Key],
    rest: &[&str],
) -> Table {
    Table {
        path,
        title,
        intro,
        keys,
        context: format!("{{}}\n{}", rest.concat()),
    }
}

/// Every table, in the order of the reference.
pub fn tables() -> Vec<Table> {
    let whole = [LISTENER, UPSTREAM, ROUTE];
    let around_listener = [UPSTREAM, ROUTE];
    let around_route = [LISTENER, UPSTREAM];
    let around_upstream = [LISTENER, ROUTE];
    let acme_user = "[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { acme = true }\n";
    let limited = "[[route]]\nupstream = \"app\"\nlimit = \"per_client\"\n";
    vec![
        table("", "Top level", TOP_INTRO, top::TOP, &whole),
        table(
            "listener",
            "`[[listener]]`",
            LISTENER_INTRO,
            listener::LISTENER,
            &around_listener,
        ),
        table(
            "listener.tls",
            "A listener's `tls`",
            TLS_INTRO,
            listener::TLS,
            &around_listener,
        ),
        table(
            "listener.tls.certificates[]",
            "A `certificates` entry",
            CERTIFICATE_INTRO,
            listener::CERTIFICATE,
            &around_listener,
        ),
        table("http2", "`[http2]`", HTTP2_INTRO, top::HTTP2, &whole),
        table(
            "acme",
            "`[acme]`",
            ACME_INTRO,
            top::ACME,
            &[acme_user, UPSTREAM, ROUTE],
        ),
        table("admin", "`[admin]`", ADMIN_INTRO, top::ADMIN, &whole),
        table(
            "request_id",
            "`[request_id]`",
            REQUEST_ID_INTRO,
            top::REQUEST_ID,
            &whole,
        ),
        table(
            "route",
            "`[[route]]`",
            ROUTE_INTRO,
            route::ROUTE,
            &around_route,
        ),
        table(
            "route.return",
            "A route's `return` table",
            RETURN_INTRO,
            route::RETURN,
            &around_route,
        ),
        table(
            "route.rewrite[]",
            "A `rewrite` entry",
            REWRITE_INTRO,
            route::REWRITE,
            &around_route,
        ),
        table(
            "route.auth_basic",
            "A route's `auth_basic` table",
            AUTH_BASIC_INTRO,
            route::AUTH_BASIC,
            &around_route,
        ),
        table(
            "route.compress",
            "A route's `compress` table",
            COMPRESS_INTRO,
            route::COMPRESS,
            &around_route,
        ),
        table(
            "route.request_headers",
            "`request_headers` and `response_headers`",
            EDITS_INTRO,
            route::HEADER_EDITS,
            &around_route,
        ),
        table(
            "limit.NAME",
            "`[limit.NAME]`",
            LIMIT_INTRO,
            route::LIMIT,
            &[LISTENER, UPSTREAM, limited],
        ),
        table(
            "upstream.NAME",
            "`[upstream.NAME]`",
            UPSTREAM_INTRO,
            upstream::UPSTREAM,
            &around_upstream,
        ),
        table(
            "upstream.NAME.servers[]",
            "A server in `servers`",
            SERVER_INTRO,
            upstream::SERVER,
            &around_upstream,
        ),
        table(
            "upstream.NAME.sticky",
            "An upstream's `sticky`",
            STICKY_INTRO,
            upstream::STICKY,
            &[LISTENER, ROUTE],
        ),
        table(
            "upstream.NAME.health",
            "`[upstream.NAME.health]`",
            HEALTH_INTRO,
            upstream::HEALTH,
            &around_upstream,
        ),
        table(
            "upstream.NAME.tls",
            "An upstream's `tls`",
            UPSTREAM_TLS_INTRO,
            upstream::UPSTREAM_TLS,
            &around_upstream,
        ),
        table(
            "resolver",
            "`[resolver]`",
            RESOLVER_INTRO,
            top::RESOLVER,
            &whole,
        ),
    ]
}

const TOP_INTRO: &str = "Keys outside any table; they come before the first `[table]` header.";
const LISTENER_INTRO: &str = "An address sluice accepts clients on; give as many as you need. Listen addresses a reload adds are bound before anything changes (a bind error cancels the reload); those it removes stop accepting.";
const TLS_INTRO: &str = "HTTPS on a listener: `tls = { cert = \"fullchain.pem\", key = \"privkey.pem\" }`, more names in `certificates`, or `acme = true`. See [HTTPS](../https.md#https-tls-http2-redirects-static-files).";
const CERTIFICATE_INTRO: &str =
    "One more certificate of a listener, chosen by the name the client asks for (SNI).";
const HTTP2_INTRO: &str = "HTTP/2's limits, for every listener that speaks it.";
const ACME_INTRO: &str = "One certificate obtained and renewed from an ACME CA (Let's Encrypt) with the HTTP-01 challenge, which sluice answers on its port-80 listeners. See [ACME](../https.md#certificates-from-lets-encrypt-acme).";
const ADMIN_INTRO: &str = "The admin listener: Prometheus `/metrics`, the JSON API, the dashboard, and what `sluice status` and `sluice reload` ask. Fixed limits besides its keys: a request head of at most 8 KiB and 64 fields, no request body, and any connection closed 60 s after it opened. See [Operations](../operations.md).";
const ROUTE_INTRO: &str = "Which requests go where. Routing is nginx's `server_name` then `location`: an exact host beats the longest matching `*.suffix`, which beats routes without `host`; within that host a route with the request's `exact` path wins, else the first `regex` route that matches (in the file's order, unless the longest prefix has `skip_regex`), else the longest `path` prefix; a host whose routes match nothing gets `404`. A route has exactly one of `upstream`, `return`, `redirect` and `root`.";
const AUTH_BASIC_INTRO: &str = "A route's `auth_basic`: the users who may use it, from an htpasswd file, and the realm named to them. A request without a valid user and password gets `401` with `WWW-Authenticate`; with `access` too, `satisfy` says whether both must pass. See [Access rules](../access.md).";

const REQUEST_ID_INTRO: &str = "Each request's identity (`X-Request-ID`) and W3C `traceparent`, passed on or made, sent to the server and back to the client, in the access log and error lines. `request_id = true` turns it on with these defaults; without it, no header is added (`$request_id` still names each request in templates).";
const REWRITE_INTRO: &str = "One entry of a route's `rewrite` list: a path matching `regex` becomes `to`, then `flag` says what follows.";
const RETURN_INTRO: &str =
    "A route's answer without a server, written as a table (`return = 204` is the short form).";
const COMPRESS_INTRO: &str = "A route's `compress` written as a table: which codings at which levels, for which types and lengths, and precompressed files. See [Compression](../compression.md).";
const EDITS_INTRO: &str = "Headers changed on the way to the server (`request_headers`) or back to the client (`response_headers`): `{ set = { ... }, remove = [...] }`.";
const LIMIT_INTRO: &str = "A named request rate that routes count against (`limit = \"NAME\"` on a route). See [Rate limits](../overload.md#rate-limits-limitname).";
const UPSTREAM_INTRO: &str = "A group of servers, and how requests are balanced over them, limited, retried and checked. The balancer's state is shared by all workers, so round-robin sequences and least-connection counts are exact for the whole process.";
const SERVER_INTRO: &str = "An entry of `servers`: `\"IP:port\"` or `\"host:port\"` as a string, or a table with these keys.";
const STICKY_INTRO: &str = "Sessions kept on their server: by a cookie sluice sets (`cookie`) or by the application's own session cookie, learned from its responses (`learn`). Written inline: `sticky = { cookie = \"srv_id\" }`.";
const HEALTH_INTRO: &str = "Active health checks of every server of the upstream. See [Failure handling](../failures.md#failure-handling-health-checks-retries-backups-slow-start).";
const UPSTREAM_TLS_INTRO: &str = "HTTPS to the servers: `tls = true` (the system's roots, the certificate verified against the server's IP address), or a table with these keys.";
const RESOLVER_INTRO: &str = "The name servers asked for `dns` servers. See [Servers from DNS](../balancing.md#servers-from-dns-dns-and-resolver).";

/// The whole reference, in Markdown.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Configuration reference\n\n<!-- Generated by `sluice man --config` from the key tables \
         of crates/sluice-config; do not edit: the test `config_reference_is_current` \
         regenerates it. -->\n\nEvery key sluice's config file accepts, table by table; any \
         other key is an error. Each entry gives its type, its default, whether `sluice reload` \
         applies a change to it or only a restart does, the nginx and HAProxy directives \
         closest to it, and an example. Durations are strings with a unit: `\"500ms\"`, \
         `\"2s\"`, `\"1m\"`, `\"1h\"`. The guide to the same keys, with the why: \
         [Configuration](../configuration.md).\n",
    );
    let tables = tables();
    out.push_str("\n## Tables\n\n");
    for t in &tables {
        let _ = writeln!(
            out,
            "- [{}](#{}): {} keys",
            t.title,
            anchor(t.title),
            t.keys.len()
        );
    }
    for t in &tables {
        section(&mut out, t);
    }
    out
}

fn section(out: &mut String, t: &Table) {
    let _ = write!(out, "\n## {}\n\n{}\n", t.title, t.intro);
    for k in t.keys {
        let heading = if t.path.is_empty() {
            k.name.to_string()
        } else {
            format!("{}.{}", t.path, k.name)
        };
        let reload = match k.reload {
            Reload::Applies => "a reload applies it",
            Reload::Restart => "on restart only",
        };
        let _ = write!(
            out,
            "\n### `{heading}`\n\n*{}* · default: {} · {reload}",
            k.kind, k.default
        );
        if !k.like.is_empty() {
            let _ = write!(out, " · like {}", k.like);
        }
        let _ = write!(out, "\n\n{}\n", k.doc);
        if !k.example.is_empty() {
            let _ = write!(out, "\n```toml fragment\n{}\n```\n", k.example.trim_end());
        }
    }
}

/// GitHub's and mdBook's anchor for a heading: lower case, spaces to dashes, other
/// punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_a_doc_a_type_a_default_and_an_example_that_is_valid_in_a_config() {
        let mut problems = Vec::new();
        for t in tables() {
            for k in t.keys {
                let place = format!("{} {}", t.title, k.name);
                if k.doc.is_empty() || k.kind.is_empty() || k.default.is_empty() {
                    problems.push(format!("{place}: no doc, type or default"));
                }
                if !k.example.contains(k.name) {
                    problems.push(format!("{place}: its example does not set it"));
                    continue;
                }
                let text = t.context.replace("{}", k.example);
                if let Err(e) = crate::validate::document("example.toml", &text, crate::Disk::Later)
                {
                    problems.push(format!("{place}: {e}\n{text}"));
                }
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    }

    #[test]
    fn every_table_of_the_top_level_has_its_entry() {
        let paths: Vec<String> = tables().iter().map(|t| t.path.to_string()).collect();
        for name in top::TOP_TABLES {
            let root = |p: &String| p.split('.').next() == Some(name);
            assert!(
                paths.iter().any(root),
                "[{name}] has no table in the reference"
            );
        }
    }

    #[test]
    fn a_key_appears_once_per_table() {
        for t in tables() {
            let mut seen = std::collections::HashSet::new();
            for k in t.keys {
                assert!(seen.insert(k.name), "{} {} twice", t.title, k.name);
            }
        }
    }
}
