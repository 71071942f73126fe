//! The validated configuration: what the rest of sluice consumes.

pub use crate::pattern::{Captures, Pattern};
use std::net::SocketAddr;
use std::time::Duration;

/// A whole, valid configuration. Every reference in it (a route's upstream) is resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Worker threads; 0 means one per core.
    pub workers: usize,
    /// Total time a client has to send a complete request head: from accepting the
    /// connection for the first request, from its first byte for the next ones.
    pub header_timeout: Duration,
    /// The longest a client may take to send the next piece of a body or take the next
    /// piece of a response.
    pub client_idle_timeout: Duration,
    /// The longest a client may take to send a whole request body (`None`: no total
    /// limit, only `client_idle_timeout` between reads).
    pub request_body_timeout: Option<Duration>,
    /// How long a keep-alive client connection may stay idle between two requests.
    pub keepalive_timeout: Duration,
    /// The largest request head accepted, in bytes; larger gets 431.
    pub max_header_bytes: usize,
    /// On SIGTERM/SIGINT, how long requests in flight may take to finish.
    pub shutdown_grace: Duration,
    /// Where `sluice serve` writes its process id, for `sluice reload`.
    pub pid_file: Option<std::path::PathBuf>,
    pub listeners: Vec<Listener>,
    pub http2: Http2Limits,
    pub routes: Vec<Route>,
    pub upstreams: Vec<Upstream>,
    /// `[limit.NAME]` tables, named by routes.
    pub limits: Vec<RateLimit>,
    /// The admin listener (metrics, JSON API, dashboard), when `[admin]` is given.
    pub admin: Option<Admin>,
    /// Certificates from an ACME CA, when `[acme]` is given.
    pub acme: Option<Acme>,
    /// Where finished requests are logged, one line each, if anywhere.
    pub access_log: Option<AccessLog>,
    /// Peers whose X-Forwarded-Proto, X-Forwarded-Host and X-Real-IP are kept (an
    /// L4 or cloud balancer, another proxy) instead of replaced.
    pub trusted_proxies: Vec<Network>,
    /// `[resolver]`: how the names of `dns` servers are looked up.
    pub resolver: Resolver,
    /// `[request_id]`: each request's identity, when asked for.
    pub request_id: Option<RequestIdentity>,
}

/// `[request_id]`: every request's identity, sent to its server and back to its client,
/// and written in the access log and error lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestIdentity {
    /// The header that carries it (`X-Request-ID`).
    pub header: String,
    /// A client's own identity in that header, when well-formed, is kept (passed on)
    /// rather than replaced by a new one.
    pub from_client: bool,
    /// The client gets it back in the response's header too.
    pub response: bool,
    /// A W3C `traceparent` is passed on when the client sent a valid one, started when
    /// not (the new trace named by the request's identity when that is 32 hex digits).
    pub traceparent: bool,
}

/// The DNS servers asked for `dns` server entries, and how often.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolver {
    /// Name servers to ask; empty: those of the system's resolv.conf.
    pub servers: Vec<SocketAddr>,
    /// A record is asked again after its TTL, but not sooner than this...
    pub min_ttl: Duration,
    /// ...nor later than this (so a name with a day's TTL still follows changes).
    pub max_ttl: Duration,
    /// How long one lookup may take before it counts as failed.
    pub timeout: Duration,
}

/// A server entry found in DNS: `{ dns = "app.internal:8080" }` or an SRV name. Each
/// address it resolves to becomes a server with these settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discover {
    /// The name as written.
    pub name: String,
    pub query: DnsQuery,
    /// The weight of each server found (SRV records carry their own).
    pub weight: u32,
    pub backup: bool,
    pub max_conns: Option<u32>,
    pub at: Place,
}

/// What a `dns` entry asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DnsQuery {
    /// A and AAAA records of `host`, each address a server on `port`.
    Address { host: String, port: u16 },
    /// SRV records of the name: targets with their ports, weights and priorities (the
    /// lowest priority serves; higher ones are backups).
    Service(String),
}

/// An IP network: an address and how many of its leading bits count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    pub ip: std::net::IpAddr,
    pub prefix: u8,
}

impl Network {
    /// Whether `ip` is in the network (an IPv4-mapped IPv6 address as its IPv4 one).
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        use std::net::IpAddr::{V4, V6};
        let ip = match ip {
            V6(v6) => v6.to_ipv4_mapped().map_or(V6(v6), V4),
            v4 => v4,
        };
        match (self.ip, ip) {
            (V4(net), V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (V6(net), V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

/// The access log: where it goes and how its lines are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessLog {
    pub target: LogTarget,
    pub format: LogFormat,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogTarget {
    Stdout,
    File(std::path::PathBuf),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    /// nginx's `combined`, then `key=value` fields (upstream, times, tries, route).
    Combined,
    /// One JSON object per line.
    Json,
}

/// Where the admin listener binds, and the bearer token it asks for (required off
/// loopback).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admin {
    pub bind: SocketAddr,
    pub token: Option<String>,
    /// Connections held open at once; more are accepted and closed at once.
    pub max_conns: u32,
    /// A request head must come within this of the connection's start or of the end of
    /// its previous response (so it is the idle keep-alive deadline too).
    pub header_timeout: Duration,
}

impl Admin {
    /// Connections the admin listener holds at once by default: a few scrapers,
    /// dashboards and `sluice` commands, and no more than a flood can use up without
    /// starving the proxy.
    pub const DEFAULT_MAX_CONNS: u32 = 64;
    /// How long a request head may take by default, from the connection's start or the
    /// end of its previous response: the 5 s nginx and HAProxy gave strangers in a trial.
    pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);

    /// An admin listener on `bind` with the default limits.
    pub fn new(bind: SocketAddr, token: Option<String>) -> Admin {
        Admin {
            bind,
            token,
            max_conns: Admin::DEFAULT_MAX_CONNS,
            header_timeout: Admin::DEFAULT_HEADER_TIMEOUT,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listener {
    pub bind: SocketAddr,
    /// HTTPS: the certificates this listener serves, when `tls` is given.
    pub tls: Option<Tls>,
    /// HTTP/2 from clients: offered by ALPN on a TLS listener (the default there); on a
    /// plain listener, h2c with prior knowledge (off by default).
    pub http2: bool,
    /// Connections one client address may have open on it at once (nginx's
    /// `limit_conn`); the next is answered 429 and closed. `None`: no limit.
    pub max_conns_per_client: Option<u32>,
    /// Each connection starts with a PROXY protocol header (v1 or v2) from the L4
    /// balancer in front, whose source address is the client's.
    pub proxy_protocol: bool,
    /// The peers allowed to send that header (the balancers); a connection from any
    /// other is closed unread. Empty: any peer.
    pub proxy_protocol_from: Vec<Network>,
}

/// Limits of every HTTP/2 connection (`[http2]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Http2Limits {
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS); also
    /// the most sluice handles at once per connection.
    pub max_concurrent_streams: u32,
    /// Each stream's flow-control window, in bytes, and the most sluice buffers for one
    /// stream's response; the connection's window is four times it.
    pub window: u32,
}

impl Default for Http2Limits {
    fn default() -> Self {
        Http2Limits {
            max_concurrent_streams: 128,
            window: 256 * 1024,
        }
    }
}

/// A TLS listener's certificates: the first is the default, the others are chosen by
/// the server name a client asks for (SNI), matched against each certificate's names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tls {
    pub certificates: Vec<CertificateFiles>,
    /// `acme = true` (where it is written): the `[acme]` certificate is the first of
    /// `certificates`.
    pub acme: Option<Place>,
}

/// A certificate chain and its private key, as PEM files (paths resolved against the
/// config file's directory).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CertificateFiles {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
    /// Where the config names them, for errors found when the files are read.
    pub at: Place,
    /// The `[acme]` certificate: its files may not exist yet (sluice serves a
    /// placeholder until the first is obtained).
    pub acme: bool,
}

/// `[acme]`: one certificate for `domains`, obtained over HTTP-01 and renewed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acme {
    /// The CA's directory URL (Let's Encrypt's by default).
    pub directory: String,
    /// `mailto:` addresses for the account.
    pub contact: Vec<String>,
    pub domains: Vec<String>,
    /// Where the account, the key and the certificate are kept (`fullchain.pem`,
    /// `privkey.pem`, `account.json`).
    pub storage: std::path::PathBuf,
    /// A CA certificate (PEM) to trust for the directory's HTTPS, for test and private
    /// CAs (pebble); the system's roots otherwise.
    pub ca: Option<std::path::PathBuf>,
    /// Renew when the certificate has fewer days left than this.
    pub renew_days: u32,
    pub at: Place,
}

/// A position in a config file, 1-based.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: usize,
    pub col: usize,
}

/// Which requests go where: to an upstream, or answered by sluice itself.
#[derive(Clone, Debug, Eq)]
pub struct Route {
    pub host: Option<HostMatch>,
    /// What the route matches, as written: a path prefix (`path`), a whole path
    /// (`exact`) or a regular expression (`regex`), as `matching` says.
    pub path: String,
    /// How `path` is compared with the request's path, in nginx's order of locations.
    pub matching: Matching,
    /// nginx's `rewrite`s, in order, on requests this route took.
    pub rewrites: Vec<Rewrite>,
    /// The path sent to the server (`upstream_path`), nginx's `proxy_pass` URI part.
    pub upstream_path: Option<KeyTemplate>,
    /// The listeners (their `bind` as configured) whose requests the route takes; all
    /// when empty. nginx's `server` blocks per `listen`: port 80 redirects, 443 proxies.
    pub listeners: Vec<std::net::SocketAddr>,
    pub action: Action,
    /// Changes to the request head sent to the server (`request_headers`).
    pub request_headers: HeaderEdits,
    /// Changes to the response head sent to the client (`response_headers`): on the
    /// responses relayed from servers and on the route's own answers (`return`, `root`),
    /// not on sluice's error replies.
    pub response_headers: HeaderEdits,
    /// Protocols a client may switch to with `Upgrade` (lower-case), e.g. "websocket".
    pub upgrade: Vec<String>,
    /// An upgraded connection (a WebSocket) with no bytes either way for this long is closed.
    pub tunnel_idle_timeout: Duration,
    /// The rate limits its requests count against (indexes into [`Config::limits`]).
    pub limits: Vec<usize>,
    /// The longest a request may take from its start, through every try, to its
    /// response head (`timeout`); then 504. `None`: no total limit.
    pub timeout: Option<Duration>,
    /// Who may use the route: address rules and basic auth (open when empty).
    pub guard: Guard,
    /// Response compression (`compress`), when the route asks for it.
    pub compress: Option<Compress>,
    /// Where the config writes the route (its `[[route]]`), for warnings about it.
    pub at: Place,
}

/// How a route's `path` is compared with a request's path (normalized: decoded, `//`
/// merged, dot segments resolved), in nginx's order: an exact path wins at once; else
/// the longest prefix is found, and unless it skips them the regular expressions are
/// tried in file order (those `under` that prefix first), the first match winning; else
/// the longest prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Matching {
    /// `path`: a prefix. `skip_regex`: when it is the longest matching prefix, no
    /// regular expression is tried (nginx `location ^~`).
    Prefix { skip_regex: bool },
    /// `exact`: the whole path (nginx `location =`).
    Exact,
    /// `regex` (nginx `location ~`, `~*` with `ignore_case`). `under`: the path of the
    /// prefix route it is nested in (an nginx location inside a location): tried only
    /// when that prefix is the longest match, before the others.
    Regex {
        pattern: Pattern,
        under: Option<String>,
    },
}

/// One `rewrite`: a request path matching `pattern` becomes `to` (with `$1`.. and
/// named groups of the match), then `flag` says what happens next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub pattern: Pattern,
    pub to: KeyTemplate,
    pub flag: RewriteFlag,
}

/// What follows a rewrite that matched (nginx's flags). A `to` starting with
/// `http://`, `https://` or `$scheme` redirects (`302`, `301` when `Permanent`)
/// whatever the flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteFlag {
    /// No flag: the next rewrites run on the new path, then the routes are searched
    /// again with it.
    Continue,
    /// The routes are searched again with the new path (at most 10 times a request).
    Last,
    /// The route keeps the request, which goes to its server with the new path.
    Break,
    /// `302` to the new path.
    Redirect,
    /// `301` to the new path.
    Permanent,
}

/// `compress`: a route's responses compressed for the clients that accept it (nginx's
/// `gzip*` and `brotli*` directives). A coding whose level is `None` is not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compress {
    /// gzip's level, 1 to 9.
    pub gzip: Option<u32>,
    /// brotli's quality, 0 to 11.
    pub br: Option<u32>,
    /// zstd's level, 1 to 19.
    pub zstd: Option<u32>,
    /// Media types compressed, lower-case, without parameters: `text/html`, a `*` in
    /// place of a part (`text/*`, `application/*+json`), or `*` for any. A pattern with
    /// a `*` never takes `text/event-stream`: only naming it does.
    pub types: Vec<String>,
    /// A response whose `Content-Length` says fewer bytes is sent as it is.
    pub min_length: u64,
    /// `root` routes: `FILE.zst`, `FILE.br` or `FILE.gz` beside a file is sent in its
    /// place to a client that accepts that coding (nginx's `gzip_static`).
    pub precompressed: bool,
}

impl Compress {
    /// True when `media_type` (lower-case, without parameters) is one to compress.
    pub fn compresses(&self, media_type: &str) -> bool {
        self.types
            .iter()
            .any(|pattern| type_matches(pattern, media_type))
    }
}

/// A media type against a pattern of [`Compress::types`].
fn type_matches(pattern: &str, media_type: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == media_type,
        // An event stream is compressed only where it is named: its events must reach
        // the client as they come, and a wildcard is no sign that anyone thought of it.
        Some(_) if media_type == "text/event-stream" => false,
        Some((before, after)) => {
            media_type.len() >= before.len() + after.len()
                && media_type.starts_with(before)
                && media_type.ends_with(after)
        }
    }
}

/// Who may use a route: `access` (address rules, first match wins, as nginx's
/// `allow`/`deny`), `auth_basic` (users of an htpasswd file) and how the two combine
/// (`satisfy`). Checked before the request reaches a server or an answer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Guard {
    /// In order; the first rule matching the client's address decides, and an address
    /// no rule matches is allowed (as nginx).
    pub access: Vec<AccessRule>,
    pub auth: Option<BasicAuth>,
    pub satisfy: Satisfy,
}

impl Guard {
    /// True when the route has neither address rules nor basic auth.
    pub fn is_open(&self) -> bool {
        self.access.is_empty() && self.auth.is_none()
    }

    /// The verdict of the first address rule matching `ip`, if one does.
    pub fn first_match(&self, ip: std::net::IpAddr) -> Option<Verdict> {
        self.access
            .iter()
            .find(|rule| rule.from.is_none_or(|n| n.contains(ip)))
            .map(|rule| rule.verdict)
    }

    /// What the address rules say of `ip`: the first matching rule's verdict, allowed
    /// when none matches (as nginx).
    pub fn admits(&self, ip: std::net::IpAddr) -> bool {
        self.first_match(ip) != Some(Verdict::Deny)
    }
}

/// `"allow 10.0.0.0/8"`, `"deny all"`: one address rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessRule {
    pub verdict: Verdict,
    /// The addresses it matches; `None` for `all`.
    pub from: Option<Network>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
}

/// `satisfy`: whether a request must pass every guard (`all`, the default) or one
/// (`any`: an allowed address, or a valid user).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Satisfy {
    #[default]
    All,
    Any,
}

/// `auth_basic = { realm = "ops", user_file = "htpasswd" }`: HTTP basic auth against an
/// htpasswd file (read by the proxy at start and at each reload, as certificates are).
#[derive(Clone, Debug, Eq)]
pub struct BasicAuth {
    /// The realm named in `WWW-Authenticate` (browsers show it in the login prompt).
    pub realm: String,
    /// The htpasswd file, relative paths resolved against the config file's directory.
    pub user_file: std::path::PathBuf,
    /// How long a verified user and password is remembered, so that a slow hash
    /// (bcrypt) is not computed again on each request; zero: never.
    pub cache: Duration,
    /// Where the config names the file, for errors found when it is read.
    pub at: Place,
}

/// As [`Route`]'s: where it is written is not what it is.
impl PartialEq for BasicAuth {
    fn eq(&self, other: &BasicAuth) -> bool {
        let BasicAuth {
            realm,
            user_file,
            cache,
            at: _,
        } = self;
        (realm, user_file, cache) == (&other.realm, &other.user_file, &other.cache)
    }
}

/// `[limit.NAME]`: requests per second per key, with a burst (nginx's `limit_req`).
#[derive(Clone, Debug, PartialEq)]
pub struct RateLimit {
    pub name: String,
    /// What a client is: `$remote_addr` by default.
    pub key: KeyTemplate,
    pub per_second: f64,
    /// Requests a key may make beyond the rate at once (nginx's `burst`): a key that
    /// was quiet may send `burst + 1` at once.
    pub burst: u32,
}

/// Where a route is written is not what it is: a reload that only moves lines changes
/// no route. (The destructuring makes a new field a compile error here until it is
/// compared.)
impl PartialEq for Route {
    fn eq(&self, other: &Route) -> bool {
        let Route {
            host,
            path,
            matching,
            rewrites,
            upstream_path,
            listeners,
            action,
            request_headers,
            response_headers,
            upgrade,
            tunnel_idle_timeout,
            limits,
            timeout,
            guard,
            compress,
            at: _,
        } = self;
        (
            host,
            path,
            listeners,
            action,
            request_headers,
            response_headers,
        ) == (
            &other.host,
            &other.path,
            &other.listeners,
            &other.action,
            &other.request_headers,
            &other.response_headers,
        ) && (upgrade, tunnel_idle_timeout, limits, timeout, guard)
            == (
                &other.upgrade,
                &other.tunnel_idle_timeout,
                &other.limits,
                &other.timeout,
                &other.guard,
            )
            && (matching, rewrites, upstream_path)
                == (&other.matching, &other.rewrites, &other.upstream_path)
            && compress == &other.compress
    }
}

impl Route {
    /// The prefix a `root` route's files are named under: its `path` for prefixes and
    /// exact paths, `/` for a regular expression.
    pub fn files_prefix(&self) -> &str {
        match self.matching {
            Matching::Regex { .. } => "/",
            Matching::Prefix { .. } | Matching::Exact => &self.path,
        }
    }

    /// Whether a template of the route names a group of its regular expression (`$1`):
    /// only then does a match keep them.
    pub fn uses_groups(&self) -> bool {
        let named = |t: &KeyTemplate| {
            t.parts
                .iter()
                .any(|p| matches!(p, KeyPart::Var(Variable::Capture(_))))
        };
        let edits = |e: &HeaderEdits| e.set.iter().any(|(_, t)| named(t));
        let location = match &self.action {
            Action::Return(r) => r.location.as_ref().is_some_and(named),
            _ => false,
        };
        edits(&self.request_headers)
            || edits(&self.response_headers)
            || location
            || self.upstream_path.as_ref().is_some_and(named)
    }

    /// The upstream (index into [`Config::upstreams`]) of a proxied route.
    pub fn upstream(&self) -> Option<usize> {
        match self.action {
            Action::Proxy { upstream } => Some(upstream),
            _ => None,
        }
    }
}

/// What a route does with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// `upstream = "NAME"`: forward it (index into [`Config::upstreams`]).
    Proxy { upstream: usize },
    /// `return = { status, location | body }`, or `redirect = "https"`: answer it.
    Return(Return),
    /// `root = "DIR"`: serve the file at DIR + the request's path.
    Files {
        root: std::path::PathBuf,
        /// Where the config names it, for the error when it is not a directory.
        at: Place,
    },
}

/// A response sluice makes itself, as nginx's `return`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Return {
    pub status: u16,
    /// For redirects: the `Location`, with variables (`https://$host$request_uri`).
    pub location: Option<KeyTemplate>,
    /// A text body (sent as text/plain), when not a redirect.
    pub body: Option<String>,
}

/// Header changes: every header named in `set` or `remove` is dropped (names compare
/// without case), then `set`'s are added with their values (templates with variables).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HeaderEdits {
    pub set: Vec<(String, KeyTemplate)>,
    pub remove: Vec<String>,
}

impl HeaderEdits {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.remove.is_empty()
    }

    /// True when a header of this name is dropped (set anew, or removed).
    pub fn drops(&self, name: &str) -> bool {
        self.remove.iter().any(|r| r.eq_ignore_ascii_case(name))
            || self.set.iter().any(|(s, _)| s.eq_ignore_ascii_case(name))
    }
}

/// How a route matches the request's host (lower-case, without port).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HostMatch {
    Exact(String),
    /// `*.example.com`: holds `.example.com`, matches any host ending in it.
    Suffix(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Balance {
    RoundRobin,
    LeastConn,
    RandomTwo,
    /// Latency x load, with peaks counted at once; `decay` is the averaging time constant.
    PeakEwma {
        decay: Duration,
    },
    /// Consistent hashing on a key built from the request.
    Hash {
        key: KeyTemplate,
        method: HashMethod,
        /// Bounded loads: no server above `ceil(bound x average)` of the in-flight load.
        bound: Option<f64>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashMethod {
    /// nginx-compatible ring (`hash ... consistent`).
    Ketama,
    /// Maglev lookup table.
    Maglev,
}

/// A hash key as written, e.g. `"$host$uri"` or `"room-$arg_room"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyTemplate {
    pub parts: Vec<KeyPart>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyPart {
    Literal(String),
    Var(Variable),
}

/// nginx's request variables, as far as sluice supports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Variable {
    /// The request target as sent: path and query.
    RequestUri,
    /// The path, without the query (not percent-decoded).
    Uri,
    /// The query string, without `?`.
    Args,
    /// One query parameter's raw value; the name matches case-insensitively (as nginx).
    Arg(String),
    /// A request header; `$http_x_user` reads `X-User`. Holds the header name.
    Http(String),
    /// A cookie's value from the `Cookie` header.
    Cookie(String),
    /// The client's IP address.
    RemoteAddr,
    /// The host, lower-case, without port.
    Host,
    /// `http` or `https`: how the client reached sluice.
    Scheme,
    /// The time, in seconds since the Unix epoch with milliseconds (`1732900000.123`),
    /// as nginx's `$msec`: what Pinpoint's and other tracers' proxy headers carry.
    Msec,
    /// The request's identity, as nginx's `$request_id`: 32 hexadecimal digits, random,
    /// made once per request (the same in every header that names it).
    RequestId,
    /// The request's W3C `traceparent`: the client's when valid, else one started for it
    /// (made once per request).
    Traceparent,
    /// A group of the route's regular expression, or of the rewrite's (`$1` to `$9`, a
    /// named group by its name, `$0` the whole match): its text in the path, decoded.
    Capture(usize),
}

/// A named pool of servers.
#[derive(Clone, Debug, PartialEq)]
pub struct Upstream {
    pub name: String,
    pub balance: Balance,
    pub servers: Vec<Server>,
    /// Server entries found in DNS and followed while sluice runs; `servers` holds only
    /// the fixed ones until `sluice` adds what these resolve to.
    pub discover: Vec<Discover>,
    /// Idle pooled connections kept per server (per worker); 0 disables pooling.
    pub keepalive: usize,
    /// How long a pooled connection may sit idle before it is closed. Shorter than common
    /// backend keep-alive timeouts (Node 5 s, Apache 5 s) so the backend rarely closes first.
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// Longest wait between two reads from the server (as nginx's proxy_read_timeout).
    pub read_timeout: Duration,
    /// Passive checks: when failures take a server out.
    pub failure: FailurePolicy,
    pub retry: RetryPolicy,
    /// A server coming back ramps its share up over this long (zero: at once).
    pub slow_start: Duration,
    /// Active checks, when configured.
    pub health: Option<HealthCheck>,
    /// HTTPS to the servers, when `tls` is given.
    pub tls: Option<UpstreamTls>,
    /// Where requests wait when every server is at its `max_conns`.
    pub queue: QueuePolicy,
    /// `limit = "adaptive"`: each server's concurrency limit follows its latency (at
    /// most its `max_conns`, when it has one).
    pub adaptive: bool,
    /// Sessions kept on their server (`sticky`), when asked for.
    pub sticky: Option<Sticky>,
}

/// How a client's session stays on the server that began it: a cookie of sluice's own
/// naming the server, or the application's session cookie learned from its responses.
/// A session whose server is down, drained, ejected or full goes to the server the
/// balancer picks, and stays there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sticky {
    /// `sticky = { cookie = "srv_id" }`: sluice sets the cookie (the server's identity,
    /// nginx's: the MD5 of its `IP:port`, in hexadecimal) on a response whose request
    /// did not name that server.
    Cookie {
        name: String,
        cookie: CookieAttributes,
    },
    /// `sticky = { learn = "JSESSIONID" }`: a session is on the server whose response
    /// set the cookie; sessions unseen for `timeout` are forgotten.
    Learn {
        name: String,
        timeout: Duration,
        /// Sessions kept at most (each upstream); a new one beyond is not learned
        /// until older ones time out.
        max_sessions: usize,
    },
}

/// The attributes of the cookie `sticky` sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CookieAttributes {
    pub path: String,
    /// `Max-Age`; `None`: a session cookie (gone when the browser closes).
    pub max_age: Option<Duration>,
    pub domain: Option<String>,
    pub secure: bool,
    pub http_only: bool,
    pub same_site: Option<SameSite>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SameSite {
    Strict,
    Lax,
    None,
}

/// `tls` of an upstream: its servers are reached over TLS, their certificates verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UpstreamTls {
    /// The name sent as SNI and verified in the certificate; without it, the server's
    /// IP address is verified (and no SNI is sent).
    pub server_name: Option<String>,
    /// CA certificates (PEM) to trust; the system's roots when not given.
    pub ca: Option<std::path::PathBuf>,
    pub at: Place,
}

/// Passive health: failures seen on real traffic eject a server for a while.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailurePolicy {
    /// Failures within `fail_window` that eject a server; 0 turns passive checks off.
    pub max_fails: u32,
    pub fail_window: Duration,
    /// How long a first ejection lasts; it doubles on each ejection in a row, up to 8x.
    pub eject_for: Duration,
    /// Response statuses that count as failures (the response still goes to the client).
    pub fail_status: Vec<u16>,
}

/// When a failed request is tried again on another server.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Extra attempts, each on a server not tried yet for this request.
    pub retries: u32,
    /// Also retry methods that are not idempotent (POST, PATCH) after the request was sent.
    pub non_idempotent: bool,
    /// Retries may add at most this fraction of the upstream's request rate.
    pub budget: f64,
    /// Request bodies of a known length up to this many bytes are read whole before the
    /// first try, so a retry can send them again (`retry_buffer`); 0: bodies stream.
    pub buffer: usize,
}

/// Active health checks: an HTTP GET to every server on a timer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthCheck {
    pub path: String,
    /// The Host header sent; the server's address when not given.
    pub host: Option<String>,
    pub interval: Duration,
    pub timeout: Duration,
    /// Statuses that count as healthy, inclusive.
    pub expect: (u16, u16),
    /// Consecutive successes that bring a down server up.
    pub rise: u32,
    /// Consecutive failures that take an up server down.
    pub fall: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub addr: SocketAddr,
    pub weight: u32,
    /// The address as written in the config. Consistent hashing places the server by
    /// this text, as nginx does, so the same list maps keys the same way in both.
    pub name: String,
    /// Takes traffic only while no primary server is available.
    pub backup: bool,
    /// Requests (and tunnels) it is given at once, all workers together; more wait in
    /// the upstream's queue. `None`: no limit.
    pub max_conns: Option<u32>,
    /// A host name to resolve (`"app1:8080"`), and where the config writes it. Until
    /// `sluice` resolves it (at start, `check` and reload; this crate never resolves),
    /// `addr` holds only its port, on the unspecified address.
    pub host: Option<(String, Place)>,
}

/// The queue of requests waiting for a server with room (servers with `max_conns`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuePolicy {
    /// A request waiting longer is answered 503 with `Retry-After`.
    pub timeout: Duration,
    /// Requests waiting at most; one more is answered 503 at once.
    pub max: usize,
}
