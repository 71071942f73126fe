//! The keys of the top level and of the process-wide tables: `[http2]`, `[admin]`,
//! `[acme]`, `[resolver]`.

use super::Key;

/// The top level's own keys (its tables are [`TOP_TABLES`]).
pub const TOP: &[Key] = &[
    Key::new(
        "workers",
        "integer",
        "`0`",
        "Worker threads; `0` is one per core. Each has its own `SO_REUSEPORT` listener and serves its connections from start to end.",
    )
    .restart()
    .like("nginx `worker_processes`; HAProxy `nbthread`")
    .example("workers = 2"),
    Key::new(
        "header_timeout",
        "duration",
        "`\"10s\"`",
        "Total time for a request head to arrive: for a connection's first request from the moment it is accepted (a client that connects and sends nothing is closed then, within 100 ms), for later ones from their first byte. A client that trickles one header line a second still gets `408` at this deadline (nginx's and HAProxy's defaults reset a timer on every read).",
    )
    .like("nginx `client_header_timeout`; HAProxy `timeout http-request`")
    .example("header_timeout = \"5s\""),
    Key::new(
        "keepalive_timeout",
        "duration",
        "`\"30s\"`",
        "A keep-alive client connection idle this long between two requests is closed (within 100 ms after, never before: each worker checks its idle connections' deadlines every 100 ms). An idle connection holds no buffer (see [Benchmarks](../benchmarks.md#idle-client-connections) for its memory).",
    )
    .like("nginx `keepalive_timeout`; HAProxy `timeout http-keep-alive`")
    .example("keepalive_timeout = \"75s\""),
    Key::new(
        "client_idle_timeout",
        "duration",
        "`\"60s\"`",
        "The longest a client may pause while sending a body or taking a response.",
    )
    .like("nginx `client_body_timeout` and `send_timeout`; HAProxy `timeout client`")
    .example("client_idle_timeout = \"30s\""),
    Key::new(
        "request_body_timeout",
        "duration",
        "none",
        "The longest a client may take to send a whole request body; beyond it the client gets `408` and the server connection is dropped. Without it only each pause is bounded (`client_idle_timeout`), as in nginx, so a body trickled a byte at a time can hold a server connection for hours.",
    )
    .like("nginx: none (it bounds each pause); HAProxy `timeout http-request` with `option http-buffer-request`")
    .example("request_body_timeout = \"60s\""),
    Key::new(
        "max_header_bytes",
        "integer",
        "`16384`",
        "A larger request head gets `431`. At most 100 header lines whatever the size.",
    )
    .like("nginx `large_client_header_buffers`; HAProxy `tune.bufsize`")
    .example("max_header_bytes = 32768"),
    Key::new(
        "shutdown_grace",
        "duration",
        "`\"30s\"`",
        "On SIGTERM or SIGINT sluice stops accepting, closes idle connections and lets requests in flight finish for at most this long. A second signal exits at once.",
    )
    .like("nginx `worker_shutdown_timeout`; HAProxy `hard-stop-after`")
    .example("shutdown_grace = \"10s\""),
    Key::new(
        "pid_file",
        "string (a path)",
        "`$TMPDIR/sluice-<hash of the config's full path>.pid`",
        "Where `sluice serve` writes its process id, and where `sluice reload` without an `[admin]` listener finds the process to signal (see [Hot reload](../operations.md#hot-reload)).",
    )
    .restart()
    .like("nginx `pid`; HAProxy `pidfile`")
    .example("pid_file = \"/run/sluice.pid\""),
    Key::new(
        "access_log",
        "string",
        "none (no access log)",
        "`\"stdout\"` or a file path: one line per finished request. Each worker buffers its lines and writes them out past 32 KiB and every 500 ms (never a write per request); the file is opened for appending and reopened on SIGUSR1 (`postrotate kill -USR1 $(cat /path/to/pid)` in logrotate). nginx logs by default; sluice only when this is set.",
    )
    .like("nginx `access_log`; HAProxy `log` with `option httplog`")
    .example("access_log = \"/var/log/sluice/access.log\""),
    Key::new(
        "access_log_format",
        "string: `combined` or `json`",
        "`\"combined\"`",
        "`\"combined\"`: nginx's combined format (GoAccess and other analysers read it), then `upstream=IP:port upstream_time=0.003 request_time=0.004 tries=1 route=/api/ queue_time=-` (`queue_time`: seconds waited for a server below its `max_conns`, `-` without a wait), and with [`[request_id]`](#request_id) ` request_id=... trace_id=...`. `\"json\"`: one object per line with `time`, `client`, `request`, `status`, `bytes_sent`, `referer`, `user_agent`, `request_time`, `upstream`, `upstream_time`, `tries`, `route`, `queue_time` (and `request_id`, `trace_id` with `[request_id]`). Client text is escaped so that no line can be forged. `bytes_sent` is the response body's bytes as the client's application received them, without the head or chunked framing, the same on HTTP/1.1 and HTTP/2; 0 for sluice's own error replies.",
    )
    .like("nginx `log_format`; HAProxy `log-format`")
    .example("access_log = \"stdout\"\naccess_log_format = \"json\""),
    Key::new(
        "trusted_proxies",
        "list of strings (addresses and networks)",
        "none",
        "Proxies in front of sluice (a cloud L7 balancer, a CDN), as `[\"10.0.0.0/8\", \"127.0.0.1\"]`: the `X-Real-IP`, `X-Forwarded-Proto` and `X-Forwarded-Host` they send are kept instead of replaced, so the client's address and scheme survive (`X-Forwarded-For` always keeps the chain and appends the peer). Judged on the client address: the connection's, or its PROXY protocol header's. From such a peer, the client is the last address in `X-Forwarded-For` that is not a trusted proxy (nginx's `real_ip_recursive on`): that address is what a route's `access` rules judge, `$remote_addr` in keys and limits, and the access log's client.",
    )
    .like("nginx `set_real_ip_from` with `real_ip_header X-Forwarded-For`; HAProxy `option forwardfor if-none`")
    .example("trusted_proxies = [\"10.0.0.0/8\", \"127.0.0.1\"]"),
];

/// The tables (and arrays of tables) the top level holds, each documented in its own
/// [`super::Table`].
pub const TOP_TABLES: &[&str] = &[
    "listener",
    "route",
    "upstream",
    "admin",
    "http2",
    "acme",
    "limit",
    "resolver",
    "request_id",
];

pub const REQUEST_ID: &[Key] = &[
    Key::new(
        "header",
        "string",
        "`\"X-Request-ID\"`",
        "The header that carries each request's identity: set on the request to the server (and, with `response`, on the response to the client) on every route that does not set it itself, the same value on both, and `$request_id` in any header template. sluice makes it as nginx's `$request_id` (32 random hexadecimal digits) unless `from_client` keeps the client's. The access log's `request_id=` (JSON: `request_id`) and the `request failed` and `request refused` log lines carry it too.",
    )
    .like("nginx `proxy_set_header X-Request-ID $request_id`; HAProxy `unique-id-format` with `unique-id-header`")
    .example("[request_id]\nheader = \"X-Correlation-ID\""),
    Key::new(
        "from_client",
        "boolean",
        "`true`",
        "A request that comes with its own identity in `header` (1 to 128 visible ASCII characters, no quote or backslash) keeps it: a balancer or gateway in front already named the request. `false`: every request gets a new one, whatever it sent (an edge that trusts no client).",
    )
    .like("nginx `map $http_x_request_id $id { \"\" $request_id; default $http_x_request_id; }`; Envoy `preserve_external_request_id`")
    .example("[request_id]\nfrom_client = false"),
    Key::new(
        "response",
        "boolean",
        "`true`",
        "The client gets the identity back in `header`, on responses relayed from servers and on the route's own answers, so that a user's report can name the request.",
    )
    .like("nginx `add_header X-Request-ID $request_id`")
    .example("[request_id]\nresponse = false"),
    Key::new(
        "traceparent",
        "boolean",
        "`true`",
        "W3C Trace Context: a request with a valid `traceparent` is passed on with it unchanged; one without (or with an invalid one) gets a new trace, `00-TRACE-PARENT-01`, whose trace id is the request's identity when that is 32 hexadecimal digits, as sluice makes them (so the access log's `request_id` finds the trace), and random otherwise. The access log's `trace_id=` carries the trace id. `$traceparent` is the header's value in any template.",
    )
    .like("nginx's OpenTelemetry module `otel_trace on`, `otel_trace_context propagate`; Envoy's tracing")
    .example("[request_id]\ntraceparent = false"),
];

pub const HTTP2: &[Key] = &[
    Key::new(
        "max_concurrent_streams",
        "integer",
        "`128`",
        "Streams a client may have open at once on one HTTP/2 connection, and the most sluice handles at once per connection.",
    )
    .like("nginx `http2_max_concurrent_streams`; HAProxy `tune.h2.max-concurrent-streams`")
    .example("[http2]\nmax_concurrent_streams = 100"),
    Key::new(
        "window",
        "integer (bytes)",
        "`262144`",
        "Each stream's flow-control window (the connection's is four times it), and the most sluice buffers for one stream's response.",
    )
    .like("HAProxy `tune.h2.initial-window-size`")
    .example("[http2]\nwindow = 65535"),
];

pub const ADMIN: &[Key] = &[
    Key::new(
        "bind",
        "string (`IP:port`)",
        "`\"127.0.0.1:9901\"`",
        "The admin listener (`/metrics`, the JSON API, the dashboard); it never shares a port with a `[[listener]]`. Without `[admin]` there is none.",
    )
    .restart()
    .like("nginx `stub_status` in a `server`; HAProxy `stats uri` and its Prometheus exporter")
    .example("[admin]\nbind = \"127.0.0.1:9901\""),
    Key::new(
        "token",
        "string",
        "none",
        "Required off loopback (`sluice check` refuses a non-loopback `bind` without one): at least 16 visible characters, sent as `Authorization: Bearer ...`; with it, nothing but the dashboard's static files is answered without it.",
    )
    .restart()
    .like("HAProxy `stats auth`")
    .example("[admin]\nbind = \"10.0.0.5:9901\"\ntoken = \"c2VjcmV0LXRva2VuLWV4YW1wbGU\""),
    Key::new(
        "max_conns",
        "integer",
        "`64`",
        "Connections held open at once; one more is accepted and closed at once (logged once a minute), so a flood of connections here holds at most this many descriptors and the proxy keeps the rest. Raise it for many scrapers or dashboards.",
    )
    .restart()
    .like("HAProxy `maxconn` on the stats frontend")
    .example("[admin]\nmax_conns = 128"),
    Key::new(
        "header_timeout",
        "duration",
        "`\"5s\"`",
        "A request head must have come within this of the connection's start or of the end of its previous response, so it is also the idle keep-alive deadline: a client that connects and says nothing, or trickles its head, is closed then.",
    )
    .restart()
    .like("HAProxy `timeout http-request` on the stats frontend")
    .example("[admin]\nheader_timeout = \"2s\""),
];

/// `[acme]`'s context needs a listener that uses it.
pub const ACME: &[Key] = &[
    Key::new(
        "domains",
        "list of strings",
        "required",
        "The names of the one certificate obtained (no wildcards: the HTTP-01 challenge cannot prove them). A listener uses it with `tls = { acme = true }`.",
    )
    .restart()
    .like("certbot's `-d`, outside nginx; HAProxy: acme.sh outside it")
    .example("[acme]\ndomains = [\"shop.example.com\", \"www.shop.example.com\"]"),
    Key::new(
        "contact",
        "list of strings",
        "none",
        "The account's contacts, as `[\"mailto:ops@example.com\"]`.",
    )
    .restart()
    .like("certbot's `-m`")
    .example("[acme]\ndomains = [\"shop.example.com\"]\ncontact = [\"mailto:ops@example.com\"]"),
    Key::new(
        "directory",
        "string (URL)",
        "Let's Encrypt's production directory",
        "The CA's ACME directory; `https://acme-staging-v02.api.letsencrypt.org/directory` to try things without its rate limits.",
    )
    .restart()
    .like("certbot's `--server`")
    .example("[acme]\ndomains = [\"shop.example.com\"]\ndirectory = \"https://acme-staging-v02.api.letsencrypt.org/directory\""),
    Key::new(
        "storage",
        "string (a directory)",
        "`\"acme\"` beside the config",
        "Where the account, `fullchain.pem` and `privkey.pem` are kept across restarts.",
    )
    .restart()
    .like("certbot's `/etc/letsencrypt`")
    .example("[acme]\ndomains = [\"shop.example.com\"]\nstorage = \"/var/lib/sluice/acme\""),
    Key::new(
        "renew_days",
        "integer",
        "`30`",
        "Renew the certificate when fewer days than this are left.",
    )
    .restart()
    .like("certbot's `renew_before_expiry`")
    .example("[acme]\ndomains = [\"shop.example.com\"]\nrenew_days = 20"),
    Key::new(
        "ca",
        "string (a PEM file)",
        "the system's roots",
        "A CA certificate to trust for the directory's HTTPS: a test CA (pebble) or a private one.",
    )
    .restart()
    .like("certbot's `REQUESTS_CA_BUNDLE`")
    .example("[acme]\ndomains = [\"shop.test\"]\ndirectory = \"https://127.0.0.1:14000/dir\"\nca = \"pebble.minica.pem\""),
];

pub const RESOLVER: &[Key] = &[
    Key::new(
        "servers",
        "list of strings (`IP` or `IP:port`)",
        "`/etc/resolv.conf`'s name servers",
        "The name servers asked for the upstreams' `dns` servers.",
    )
    .like("nginx `resolver`; HAProxy `nameserver` in a `resolvers` section")
    .example("[resolver]\nservers = [\"127.0.0.1:8600\"]"),
    Key::new(
        "min_ttl",
        "duration",
        "`\"1s\"`",
        "A name is asked again when its records' TTL runs out, but never sooner than this (Consul answers with TTL 0); also the first wait after a failed lookup, doubling up to `max_ttl`.",
    )
    .example("[resolver]\nmin_ttl = \"5s\""),
    Key::new(
        "max_ttl",
        "duration",
        "`\"60s\"`",
        "A name is asked again at least this often, however long its TTL: a day's TTL is cut to this so that a change still shows.",
    )
    .like("nginx `resolver ... valid=`; HAProxy `timeout resolve`")
    .example("[resolver]\nmax_ttl = \"30s\""),
    Key::new(
        "timeout",
        "duration",
        "`\"2s\"`",
        "One lookup's deadline; each query is tried twice before it counts as failed.",
    )
    .like("nginx `resolver_timeout`; HAProxy `timeout retry` with `resolve_retries`")
    .example("[resolver]\ntimeout = \"1s\""),
];
