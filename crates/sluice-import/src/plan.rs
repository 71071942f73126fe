//! What the translation builds: sluice's config as plain values, written out by `emit`.

/// The whole config.
#[derive(Debug, Default)]
pub struct Plan {
    pub workers: Option<u32>,
    pub keepalive_timeout: Option<String>,
    pub access_log: Option<String>,
    /// An `access_log` directive was read (`off` included): nginx's default log is not.
    pub access_log_set: bool,
    pub listeners: Vec<Listener>,
    pub routes: Vec<Route>,
    pub upstreams: Vec<Upstream>,
    pub limits: Vec<Limit>,
    /// `set_real_ip_from` addresses and networks.
    pub trusted_proxies: Vec<String>,
    /// `resolver` addresses, and its `valid=` (the longest a record is kept).
    pub resolver: Vec<String>,
    pub resolver_valid: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Listener {
    pub bind: String,
    /// Certificate and key files, the first the default (several: chosen by SNI).
    pub certs: Vec<(String, String)>,
    /// Connections start with a PROXY protocol header (`listen ... proxy_protocol`).
    pub proxy_protocol: bool,
    /// `file:line` of the `listen` it comes from.
    pub from: String,
}

#[derive(Debug, Clone, Default)]
pub struct Route {
    pub host: Option<String>,
    pub path: String,
    /// The binds of the `server` block's listeners.
    pub listeners: Vec<String>,
    pub action: Action,
    pub request_set: Vec<(String, String)>,
    pub request_remove: Vec<String>,
    pub response_set: Vec<(String, String)>,
    pub response_remove: Vec<String>,
    pub limits: Vec<String>,
    /// `proxy_connect_timeout` and `proxy_read_timeout` where it is: its upstream's.
    pub connect_timeout: Option<String>,
    pub read_timeout: Option<String>,
    /// Who may have it answered: nginx's access checks in force where it is.
    pub guard: Guard,
    /// nginx's gzip and brotli settings in force where it is.
    pub compress: crate::compress::Compression,
    /// How nginx's location matched.
    pub matching: Matching,
    /// Its `rewrite`s, in order.
    pub rewrites: Vec<Rewrite>,
    /// `proxy_pass`'s URI part (`http://app/v2/` gives `/v2/`).
    pub upstream_path: Option<String>,
    pub from: String,
}

/// How nginx's location chose its requests; sluice matches each alike.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Matching {
    /// `location /p`: the longest such prefix, unless a regex matches too.
    #[default]
    Prefix,
    /// `location = /p`.
    Exact,
    /// `location ^~ /p`: as the longest prefix, no regex is tried.
    Preferred,
    /// `location ~ RE` (`~*`: `caseless`), tried in the config's order; the route's
    /// path is the regex. `under`: the prefix location it is nested in.
    Regex {
        caseless: bool,
        under: Option<String>,
    },
}

/// nginx's `rewrite REGEX REPLACEMENT [FLAG]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewrite {
    pub regex: String,
    pub to: String,
    pub flag: Option<String>,
}

/// nginx's access checks of a route, as sluice's `access`, `auth_basic` and `satisfy`;
/// and the ones sluice cannot check, which close it (it answers 403).
#[derive(Debug, Clone, Default)]
pub struct Guard {
    /// `allow` and `deny` in order: the first that matches the client decides.
    pub access: Vec<Rule>,
    pub auth: Option<Auth>,
    pub satisfy: Satisfy,
    /// `file:line` of the `satisfy any` in force.
    pub satisfy_from: Option<String>,
    pub closed: Vec<Closure>,
    /// Checks left out because nginx answers this route's `return` before it checks
    /// anyone (`file:line` of each), said in a comment.
    pub not_reached: Vec<String>,
}

impl Guard {
    /// Whether it may refuse anyone: a `deny`, basic auth, or a check that closes it
    /// (`allow` alone lets everyone in, as nginx does when no rule matches).
    pub fn restricts(&self) -> bool {
        !self.closed.is_empty()
            || self.auth.is_some()
            || self.access.iter().any(|r| r.verdict == Verdict::Deny)
    }

    /// Whether nginx refuses every client: `deny all` first (and no basic auth that
    /// `satisfy any` would take instead), or a check that closes it.
    pub fn refuses_everyone(&self) -> bool {
        let deny_all = self
            .access
            .first()
            .is_some_and(|r| r.verdict == Verdict::Deny && r.who == "all");
        let auth_instead = self.satisfy == Satisfy::Any && self.auth.is_some();
        (deny_all && !auth_instead) || self.closed.iter().any(|c| c.by == ClosedBy::Unreadable)
    }

    /// Its checks and where nginx has them, for a note: "allow and deny at f:3, f:4;
    /// auth_basic at f:5".
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.access.is_empty() {
            let mut at: Vec<&str> = self.access.iter().map(|r| r.from.as_str()).collect();
            at.dedup();
            let rules = match self.access.iter().map(|r| r.verdict).collect::<Vec<_>>() {
                v if v.iter().all(|v| *v == Verdict::Deny) => "deny",
                v if v.iter().all(|v| *v == Verdict::Allow) => "allow",
                _ => "allow and deny",
            };
            parts.push(format!("{rules} at {}", at.join(", ")));
        }
        if let Some(a) = &self.auth {
            parts.push(format!("auth_basic at {}", a.realm_from));
        }
        let closed = self.closed.iter();
        parts.extend(
            closed
                .filter(|c| !matches!(c.by, ClosedBy::Unserved { .. }))
                .map(|c| format!("{} at {}", c.directive, c.from)),
        );
        parts.join("; ")
    }

    /// Whether it makes the same checks as `other`, wherever each was written.
    pub fn same_checks(&self, other: &Guard) -> bool {
        let rules = |g: &Guard| -> Vec<(Verdict, String)> {
            g.access
                .iter()
                .map(|r| (r.verdict, r.who.clone()))
                .collect()
        };
        let auth = |g: &Guard| {
            g.auth
                .as_ref()
                .map(|a| (a.realm.clone(), a.user_file.clone()))
        };
        let closed = |g: &Guard| -> Vec<(ClosedBy, String, String)> {
            let each = g.closed.iter();
            each.map(|c| (c.by.clone(), c.directive.clone(), c.args.clone()))
                .collect()
        };
        // `satisfy any` changes anything only with both kinds of check.
        let any = |g: &Guard| g.satisfy == Satisfy::Any && !g.access.is_empty() && g.auth.is_some();
        rules(self) == rules(other)
            && auth(self) == auth(other)
            && closed(self) == closed(other)
            && any(self) == any(other)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Satisfy {
    /// Every check must let the request in (nginx's default).
    #[default]
    All,
    /// One check letting it in is enough.
    Any,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
}

/// One `allow` or `deny`: an address, a network or `all`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub verdict: Verdict,
    pub who: String,
    pub from: String,
}

/// `auth_basic REALM` with its `auth_basic_user_file` (written absolute).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    pub realm: String,
    pub user_file: String,
    /// `file:line` of the realm and of the user file (which may be a level apart).
    pub realm_from: String,
    pub file_from: String,
    /// The file as nginx named it, when relative (taken from nginx's conf prefix).
    pub relative: Option<String>,
}

/// A check nginx makes that sluice cannot: the route under it answers 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closure {
    pub by: ClosedBy,
    pub directive: String,
    /// Its arguments as written (`/auth`, `($blocked)`).
    pub args: String,
    pub from: String,
}

/// What kind of check it is: what the comment and the note say of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClosedBy {
    /// `auth_request URI`: a subrequest decides.
    Subrequest,
    /// `auth_jwt` (NGINX Plus): a JSON Web Token.
    Jwt,
    /// Another module's check (`auth_pam`, `auth_ldap`, `access_by_lua_block`...).
    Module,
    /// `limit_except METHODS { ... }`: checks for some methods only.
    Methods,
    /// `if (...) { return 403; }`, or any other 4xx or 444: sluice evaluates no `if`.
    /// `var`: what its condition reads, when that is a variable of `geo` or `map` or
    /// of the client (its address, user, certificate).
    If { status: u16, var: Option<String> },
    /// `ssl_verify_client on`: a client certificate.
    ClientCert,
    /// `auth_basic_user_file` named by a variable.
    UserFileVariable,
    /// An `allow` or `deny` sluice cannot read (nginx would not start with it).
    Unreadable,
    /// Another location of the same path (`= /p` and `/p`: one prefix in sluice), at
    /// `with`, whose checks differ: sluice cannot keep both.
    Collapsed { with: String },
    /// A guarded location sluice has nothing to answer with (`what`: no root in scope,
    /// `fastcgi_pass`...): closed rather than left out, where its paths would fall to a
    /// shorter route. Its note is the location's own, not a Closed one.
    Unserved { what: String },
}

impl ClosedBy {
    /// Why sluice cannot check it.
    pub fn why(&self) -> String {
        match self {
            ClosedBy::Subrequest => {
                "a subrequest decides who gets in; sluice makes no subrequests".into()
            }
            ClosedBy::Jwt => "a JSON Web Token decides who gets in; sluice checks none".into(),
            ClosedBy::Module => {
                "another module decides who gets in; sluice has no such check".into()
            }
            ClosedBy::Methods => {
                "checks for some methods only; sluice's access and auth_basic apply to every method"
                    .into()
            }
            ClosedBy::If {
                status,
                var: Some(var),
            } => format!(
                "an answer of {status} decided by {var} in an if, which sluice does not evaluate"
            ),
            ClosedBy::If { status, var: None } => {
                format!("an answer of {status} decided by an if, which sluice does not evaluate")
            }
            ClosedBy::ClientCert => "clients must show a certificate; sluice asks for none".into(),
            ClosedBy::UserFileVariable => {
                "a user file named by a variable; sluice's auth_basic reads one fixed file".into()
            }
            ClosedBy::Unreadable => "not an address, a network or all".into(),
            ClosedBy::Unserved { what } => format!(
                "nothing sluice can answer with ({what}), and nginx checked who may reach it: closed rather than left out, where its paths would fall to a shorter route"
            ),
            ClosedBy::Collapsed { with } => format!(
                "one prefix route in sluice with the location at {with} (sluice routes by prefix), which checks who may come in differently; sluice cannot keep both checks"
            ),
        }
    }

    /// Whether nginx checks it even where a `return` answers (in the rewrite phase, at
    /// the handshake, or in `limit_except`'s own block), rather than only in the access
    /// phase, which a `return` never reaches.
    pub fn before_return(&self) -> bool {
        // `limit_except` swaps the location's config for its own block's for the other
        // methods, in which the location's `return` is not.
        matches!(
            self,
            ClosedBy::If { .. } | ClosedBy::ClientCert | ClosedBy::Methods
        )
    }
}

#[derive(Debug, Clone, Default)]
pub enum Action {
    /// No way to answer was found (a `location` with nothing sluice can do).
    #[default]
    None,
    Upstream(String),
    Return {
        status: u16,
        location: Option<String>,
        body: Option<String>,
    },
    /// `301` to `https://$host$request_uri`.
    RedirectHttps,
    Root(String),
}

#[derive(Debug, Clone, Default)]
pub struct Upstream {
    pub name: String,
    pub servers: Vec<Server>,
    pub balance: Option<&'static str>,
    pub hash_key: Option<String>,
    pub keepalive: Option<u32>,
    pub connect_timeout: Option<String>,
    pub read_timeout: Option<String>,
    pub max_fails: Option<u32>,
    pub fail_timeout: Option<String>,
    /// Reached over HTTPS (`proxy_pass https://`).
    pub tls: bool,
    /// nginx's `sticky`, as sluice's inline `sticky = { ... }` table.
    pub sticky: Option<String>,
    pub from: String,
}

#[derive(Debug, Clone)]
pub struct Server {
    pub addr: String,
    pub weight: u32,
    pub backup: bool,
    pub max_conns: Option<u32>,
    /// `resolve` (nginx 1.27.3+): followed in DNS, written `{ dns = addr }`; `addr` is
    /// then `name:port`, or an SRV name (`service=`).
    pub dns: bool,
}

#[derive(Debug, Clone)]
pub struct Limit {
    pub name: String,
    pub rate: String,
    pub burst: Option<u32>,
    pub key: String,
}

/// An nginx time (`30`, `30s`, `5m`, `1h`, `500ms`, `1m30s`) as a sluice duration.
pub fn duration(text: &str) -> Option<String> {
    let mut ms: u64 = 0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let factor = match &rest[..unit] {
            "" | "s" => 1_000,
            "ms" => 1,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return None,
        };
        ms = ms.checked_add(n.checked_mul(factor)?)?;
        rest = &rest[unit..];
    }
    Some(if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    })
}

/// A listen address as a sluice bind: `80` -> `0.0.0.0:80`, `[::]:80` stays,
/// `localhost:80` -> `127.0.0.1:80`; `None` for a unix socket or a name.
pub fn bind(listen: &str) -> Option<String> {
    if listen.starts_with("unix:") {
        return None;
    }
    if listen.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("0.0.0.0:{listen}"));
    }
    if let Some(host) = listen
        .strip_suffix(|c: char| c.is_ascii_digit())
        .map(|_| listen)
    {
        let (h, port) = host.rsplit_once(':')?;
        let h = match h {
            "*" => "0.0.0.0",
            "localhost" => "127.0.0.1",
            h => h,
        };
        let ok = h.parse::<std::net::Ipv4Addr>().is_ok()
            || h.strip_prefix('[')
                .and_then(|v6| v6.strip_suffix(']'))
                .is_some_and(|v6| v6.parse::<std::net::Ipv6Addr>().is_ok());
        return ok.then(|| format!("{h}:{port}"));
    }
    // An address without a port: nginx's default, 80.
    match listen {
        "localhost" => Some("127.0.0.1:80".into()),
        l if l.parse::<std::net::Ipv4Addr>().is_ok() => Some(format!("{l}:80")),
        _ => None,
    }
}

/// The first variable in `text` that sluice's keys and header values do not have.
pub fn unknown_variable(text: &str) -> Option<String> {
    unknown_in(text, &[])
}

/// The same where a regular expression's groups are variables too: `$1` to `$9`, and
/// `groups` by name.
pub fn unknown_in(text: &str, groups: &[String]) -> Option<String> {
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        let (name, next) = match after.strip_prefix('{') {
            Some(braced) => {
                let end = braced.find('}').unwrap_or(braced.len());
                (&braced[..end], &braced[(end + 1).min(braced.len())..])
            }
            None if after.starts_with(|c: char| c.is_ascii_digit()) => (&after[..1], &after[1..]),
            None => {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len());
                (&after[..end], &after[end..])
            }
        };
        let group = matches!(name.as_bytes(), [b'0'..=b'9']) || groups.iter().any(|g| g == name);
        let known = matches!(
            name,
            "request_uri"
                | "uri"
                | "args"
                | "remote_addr"
                | "host"
                | "scheme"
                | "msec"
                | "request_id"
        ) || ["arg_", "http_", "cookie_"]
            .iter()
            .any(|p| name.starts_with(p) && name.len() > p.len());
        if !known && !group {
            return Some(format!("${name}"));
        }
        rest = next;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_times_become_sluice_durations() {
        assert_eq!(duration("30").as_deref(), Some("30s"));
        assert_eq!(duration("5m").as_deref(), Some("300s"));
        assert_eq!(duration("1m30s").as_deref(), Some("90s"));
        assert_eq!(duration("500ms").as_deref(), Some("500ms"));
        assert_eq!(duration("1h").as_deref(), Some("3600s"));
        assert_eq!(duration("soon"), None);
    }

    #[test]
    fn variables_sluice_lacks_are_found() {
        assert_eq!(unknown_variable("$host$request_uri"), None);
        assert_eq!(unknown_variable("user-${cookie_sid}"), None);
        assert_eq!(
            unknown_variable("t=$msec D=$request_id P=$proxy_host").as_deref(),
            Some("$proxy_host")
        );
        assert_eq!(
            unknown_variable("$binary_remote_addr").as_deref(),
            Some("$binary_remote_addr")
        );
    }

    #[test]
    fn listen_addresses_become_binds() {
        assert_eq!(bind("80").as_deref(), Some("0.0.0.0:80"));
        assert_eq!(bind("[::]:443").as_deref(), Some("[::]:443"));
        assert_eq!(bind("127.0.0.1:8080").as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(bind("*:80").as_deref(), Some("0.0.0.0:80"));
        assert_eq!(bind("localhost:8080").as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(bind("unix:/run/nginx.sock"), None);
        assert_eq!(bind("example.com:80"), None);
    }
}
