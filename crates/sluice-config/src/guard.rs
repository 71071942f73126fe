//! A route's guards: `access` (address rules, nginx's `allow` and `deny`), `auth_basic`
//! (users of an htpasswd file, which the proxy reads) and `satisfy`. Also what
//! `sluice check` warns of: a route to an operator's page (`/actuator`, `/admin`, ...)
//! open to every address on a listener others can reach.

use crate::error::ConfigError;
use crate::model::{AccessRule, BasicAuth, Config, Guard, Route, Satisfy, Verdict};
use crate::reader::{Reader, Span};
use crate::reference::{names, route};
use std::time::Duration;
use toml_edit::TableLike;

/// How long a verified password is remembered by default.
const DEFAULT_CACHE: Duration = Duration::from_secs(60);

/// The guard of one `[[route]]` (open when it sets none of the keys).
pub(crate) fn guard(r: &mut Reader, table: &dyn TableLike) -> Guard {
    let access = access(r, table);
    let auth = auth_basic(r, table);
    let satisfy = match r.string(table, "satisfy") {
        None => Satisfy::All,
        Some((s, _)) if s == "all" => Satisfy::All,
        Some((s, _)) if s == "any" => Satisfy::Any,
        Some((s, span)) => {
            r.error(
                span,
                format!("satisfy = \"{s}\" is neither \"all\" nor \"any\""),
                "write \"all\" (every guard must pass, the default) or \"any\" (one is enough)",
            );
            Satisfy::All
        }
    };
    Guard {
        access,
        auth,
        satisfy,
    }
}

/// `access = ["allow 10.0.0.0/8", "deny all"]`, in order.
fn access(r: &mut Reader, table: &dyn TableLike) -> Vec<AccessRule> {
    let Some(v) = r.value(table, "access", "a list of rules") else {
        return Vec::new();
    };
    let Some(list) = v.as_array() else {
        r.error(
            v.span(),
            "`access` must be a list of rules",
            "write access = [\"allow 10.0.0.0/8\", \"deny all\"]",
        );
        return Vec::new();
    };
    let mut rules = Vec::new();
    for item in list.iter() {
        match item.as_str().map(rule) {
            Some(Ok(rule)) => rules.push(rule),
            Some(Err(message)) => r.error(item.span(), message, RULE_HINT),
            None => r.error(
                item.span(),
                format!("access rule {} is not a string", item.to_string().trim()),
                RULE_HINT,
            ),
        }
    }
    rules
}

const RULE_HINT: &str = "write \"allow ADDRESS\" or \"deny ADDRESS\", the address an IP (\"10.0.0.5\", \"::1\"), a network (\"10.0.0.0/8\", \"fd00::/8\") or all";

/// `allow 10.0.0.0/8`, `deny all`.
fn rule(text: &str) -> Result<AccessRule, String> {
    let mut words = text.split_whitespace();
    let verdict = match words.next() {
        Some("allow") => Verdict::Allow,
        Some("deny") => Verdict::Deny,
        _ => {
            return Err(format!(
                "access rule \"{text}\" starts with neither allow nor deny"
            ))
        }
    };
    let (Some(what), None) = (words.next(), words.next()) else {
        return Err(format!(
            "access rule \"{text}\" needs one address after its verdict"
        ));
    };
    let from = match what {
        "all" => None,
        _ => Some(crate::proxies::network(what).ok_or_else(|| {
            format!("`{what}` in access rule \"{text}\" is not an IP address or network")
        })?),
    };
    Ok(AccessRule { verdict, from })
}

/// `auth_basic = { realm = "ops", user_file = "htpasswd", cache = "60s" }`.
fn auth_basic(r: &mut Reader, table: &dyn TableLike) -> Option<BasicAuth> {
    let item = table.get("auth_basic")?;
    let Some(t) = item.as_table_like() else {
        r.error(
            item.span(),
            "`auth_basic` must be a table",
            "write auth_basic = { realm = \"ops\", user_file = \"htpasswd\" }",
        );
        return None;
    };
    r.only_keys(t, &names(route::AUTH_BASIC), "`auth_basic`");
    let realm = realm(r, t, item.span());
    let cache = r.duration(t, "cache").unwrap_or(DEFAULT_CACHE);
    let Some((file, span)) = r.string(t, "user_file") else {
        if t.get("user_file").is_none() {
            r.error(
                item.span(),
                "`auth_basic` has no `user_file`",
                "add user_file = \"htpasswd\", a file written by `htpasswd -B`",
            );
        }
        return None;
    };
    let at = crate::tls::place(r, span);
    Some(BasicAuth {
        realm: realm?,
        user_file: crate::tls::beside(r.file, &file),
        cache,
        at,
    })
}

/// The realm, which goes into a quoted header value: printable text.
fn realm(r: &mut Reader, t: &dyn TableLike, whole: Span) -> Option<String> {
    let Some((realm, span)) = r.string(t, "realm") else {
        if t.get("realm").is_none() {
            r.error(
                whole,
                "`auth_basic` has no `realm`",
                "add realm = \"NAME\", the name a browser shows in its login prompt",
            );
        }
        return None;
    };
    if realm.chars().any(|c| c.is_control()) {
        r.error(
            span,
            "the realm has a control character",
            "write it on one line, as plain text",
        );
        return None;
    }
    Some(realm)
}

/// Path segments of the pages operators keep to themselves: Spring Boot's actuator,
/// admin consoles, metrics and status pages, profilers.
const PRIVATE_PAGES: &[&str] = &[
    "actuator",
    "admin",
    "metrics",
    "prometheus",
    "manage",
    "management",
    "jolokia",
    "heapdump",
    "h2-console",
    "server-status",
    "nginx_status",
    "stub_status",
    "pprof",
];

/// What `sluice check` warns of (each at its route, with what to do): a route whose
/// path names an operator's page, open to every address (no basic auth, and no rule
/// denying every address) on a listener bound to an address others can reach.
pub fn warnings(config: &Config) -> Vec<ConfigError> {
    let mut out = open_private_pages(config);
    out.extend(spoofable_addresses(config));
    out.sort_by_key(|e| (e.line, e.col));
    out
}

/// Routes to operators' pages open to every address on a listener others reach.
fn open_private_pages(config: &Config) -> Vec<ConfigError> {
    config
        .routes
        .iter()
        .filter(|route| private_page(&route.path).is_some() && open_to_all(&route.guard))
        .filter_map(|route| Some((route, reachable_listener(config, route)?)))
        .map(|(route, bind)| {
            ConfigError::at_place(
                &route.at,
                format!(
                    "route \"{}\" ({} pages) is open to every address on {bind}",
                    route.path,
                    private_page(&route.path).unwrap_or_default()
                ),
                "keep it to your network with access = [\"allow 10.0.0.0/8\", \"deny all\"], or add auth_basic",
            )
        })
        .collect()
}

/// Routes with address rules on a listener that takes a PROXY header from any peer:
/// a client there names its own address, and the rules judge what it wrote.
fn spoofable_addresses(config: &Config) -> Vec<ConfigError> {
    let open_door = |route: &Route| {
        config.listeners.iter().find(|l| {
            l.proxy_protocol
                && l.proxy_protocol_from.is_empty()
                && (route.listeners.is_empty() || route.listeners.contains(&l.bind))
        })
    };
    config
        .routes
        .iter()
        .filter(|route| !route.guard.access.is_empty())
        .filter_map(|route| Some((route, open_door(route)?)))
        .map(|(route, listener)| {
            ConfigError::at_place(
                &route.at,
                format!(
                    "route \"{}\" judges addresses that any client can name: listener {} takes a PROXY header from any peer",
                    route.path, listener.bind
                ),
                "list the balancers in front with proxy_protocol_from = [\"10.0.0.5\"]",
            )
        })
        .collect()
}

/// The private page a route's path names, if any.
fn private_page(path: &str) -> Option<&'static str> {
    path.split('/').find_map(|segment| {
        let segment = segment.to_ascii_lowercase();
        PRIVATE_PAGES.iter().copied().find(|p| *p == segment)
    })
}

/// No basic auth, and the address rules let in a stranger: an address of the
/// documentation ranges (RFC 5737, RFC 3849), IPv4 or IPv6, as one from anywhere.
fn open_to_all(guard: &Guard) -> bool {
    let strangers = ["203.0.113.7", "2001:db8::7"];
    guard.auth.is_none()
        && strangers
            .iter()
            .filter_map(|s| s.parse().ok())
            .any(|ip| guard.admits(ip))
}

/// A listener of the route that others than this machine reach: bound to a
/// non-loopback address, or taking its clients' addresses from a PROXY header.
fn reachable_listener(config: &Config, route: &Route) -> Option<std::net::SocketAddr> {
    config
        .listeners
        .iter()
        .filter(|l| route.listeners.is_empty() || route.listeners.contains(&l.bind))
        .find(|l| !l.bind.ip().is_loopback() || l.proxy_protocol)
        .map(|l| l.bind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_read_as_nginx_writes_them() {
        let r = rule("allow 10.0.0.0/8").unwrap();
        assert_eq!(r.verdict, Verdict::Allow);
        assert_eq!(r.from.unwrap().prefix, 8);
        assert_eq!(rule("deny all").unwrap().from, None);
        assert_eq!(rule("deny  ::1").unwrap().from.unwrap().prefix, 128);
        for bad in [
            "permit 1.2.3.4",
            "allow",
            "allow 1.2.3.4 5.6.7.8",
            "deny 10.0.0.0/40",
            "allow ten",
        ] {
            assert!(rule(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn first_match_wins_and_no_match_allows() {
        let guard = Guard {
            access: [
                "deny 10.1.0.0/16",
                "allow 10.0.0.0/8",
                "allow fd00::/8",
                "deny all",
            ]
            .iter()
            .map(|t| rule(t).unwrap())
            .collect(),
            ..Guard::default()
        };
        let admits = |ip: &str| guard.admits(ip.parse().unwrap());
        assert!(admits("10.2.3.4") && admits("fd00::5") && admits("::ffff:10.9.9.9"));
        assert!(!admits("10.1.2.3") && !admits("192.0.2.1") && !admits("2001:db8::1"));
        let no_deny = Guard {
            access: vec![rule("allow 10.0.0.0/8").unwrap()],
            ..Guard::default()
        };
        assert!(
            no_deny.admits("192.0.2.1".parse().unwrap()),
            "as nginx: no match allows"
        );
    }

    #[test]
    fn private_pages_are_named_by_a_whole_segment() {
        assert_eq!(private_page("/actuator/"), Some("actuator"));
        assert_eq!(private_page("/api/Admin"), Some("admin"));
        assert_eq!(private_page("/administration/"), None);
        assert_eq!(private_page("/"), None);
    }
}
