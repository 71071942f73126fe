//! The keys of `[upstream.NAME]`, of its servers, its health check and its `tls`.

use super::Key;

pub const UPSTREAM: &[Key] = &[
    Key::new(
        "servers",
        "list of strings and tables",
        "required",
        "The servers requests go to: `\"IP:port\"`, `\"host:port\"`, or a table for a weight, a backup, a limit or a name followed in DNS ([A server in `servers`](#a-server-in-servers)). A host name is resolved at start, by `sluice check` and on each reload, as nginx resolves its upstreams: one that does not resolve is an error, and a name with several addresses gives a server for each. An empty list, a server listed twice, port 0, `0.0.0.0` and one of sluice's own listeners (requests would loop) are errors.",
    )
    .like("nginx `server` in an `upstream`; HAProxy `server` in a `backend`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]"),
    Key::new(
        "balance",
        "string: `round_robin`, `least_conn`, `random_two`, `peak_ewma` or `hash`",
        "`\"round_robin\"`",
        "How a server is chosen for each request. `round_robin`: smooth weighted, nginx's sequence (weights 5, 1, 1 give `a a b a c a a`). `least_conn`: the fewest requests in flight per unit of weight. `random_two`: two servers drawn by weight, the less loaded wins. `peak_ewma`: the lowest latency x load, for servers of unequal speed ([Peak-EWMA](../balancing.md#peak-ewma-heterogeneous-servers)). `hash`: consistent hashing on `hash_key` ([Consistent hashing](../balancing.md#consistent-hashing-keeping-a-chat-room-on-one-server)). The state is shared by all workers, so sequences and counts hold for the whole process.",
    )
    .like("nginx `least_conn`, `random two least_conn`, `hash ... consistent`; HAProxy `balance roundrobin|leastconn|uri|hdr`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nbalance = \"least_conn\""),
    Key::new(
        "hash_key",
        "string (a template with variables)",
        "none; required with `balance = \"hash\"`",
        "What `hash` places a request by, from nginx's variables: `\"$arg_room\"`, `\"$host$uri\"`, `\"user-$cookie_sid\"` (also `$request_uri`, `$args`, `$http_NAME`, `$remote_addr`, `$scheme`); it needs at least one variable. A request whose key is empty goes to the least loaded server rather than piling onto one. Only with `balance = \"hash\"`.",
    )
    .like("nginx `hash $arg_room consistent`; HAProxy `balance url_param`, `balance hdr(...)`, `balance uri`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nbalance = \"hash\"\nhash_key = \"$arg_room\""),
    Key::new(
        "hash_method",
        "string: `ketama` or `maglev`",
        "`\"ketama\"`",
        "`ketama` places servers exactly as nginx's `hash $key consistent` does (servers written the same way keep every key on the same server); `maglev` fills a lookup table that balances almost perfectly and looks up three times faster, at the price of moving a few more keys when servers change. Only with `balance = \"hash\"`.",
    )
    .like("nginx `hash ... consistent`; HAProxy `hash-type consistent`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nbalance = \"hash\"\nhash_key = \"$cookie_sid\"\nhash_method = \"maglev\""),
    Key::new(
        "hash_bound",
        "number (above 1)",
        "off",
        "Bounded loads: no server takes a request that would put it above `ceil(hash_bound x average)` of the requests in flight (scaled by weight); the key walks on to its next server. It caps hot keys, but a key's requests can then land on several servers, so leave it off when a key must stay on one server (in-memory chat rooms). Only with `balance = \"hash\"`.",
    )
    .like("HAProxy `hash-balance-factor`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nbalance = \"hash\"\nhash_key = \"$uri\"\nhash_bound = 1.25"),
    Key::new(
        "ewma_decay",
        "duration",
        "`\"10s\"`",
        "Peak-EWMA's averaging time constant: a server's latency estimate jumps to a slower response at once and decays toward faster ones over this time. Only with `balance = \"peak_ewma\"`.",
    )
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nbalance = \"peak_ewma\"\newma_decay = \"5s\""),
    Key::new(
        "max_conns",
        "integer (1 to 1000000)",
        "none (no limit)",
        "Requests (and WebSocket tunnels) each server is given at once, counted for all workers together, for every server without a `max_conns` of its own. The rest wait in sluice's queue, first come first served, and a limited server's idle connections are shared by the workers, so it sees at most this many connections. Metrics: `sluice_upstream_max_conns`, `sluice_upstream_queue_length`. See [Overload](../overload.md#overload-max_conns-and-the-queue).",
    )
    .like("nginx `max_conns` (without a queue: it answers `502`); HAProxy `maxconn` on a server")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nmax_conns = 20"),
    Key::new(
        "queue_timeout",
        "duration",
        "`\"5s\"`",
        "A request that waited this long in the queue for a server below its `max_conns` gets `503` with `Retry-After: 1` and never reaches a server (`sluice_upstream_queue_timeouts_total`). The wait is `queue_time` in the access log.",
    )
    .like("NGINX Plus `queue ... timeout=`; HAProxy `timeout queue`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nmax_conns = 20\nqueue_timeout = \"2s\""),
    Key::new(
        "max_queue",
        "integer",
        "`10000`",
        "Requests waiting at most in the upstream's queue; one more gets `503` with `Retry-After: 1` at once (`sluice_upstream_queue_rejected_total`).",
    )
    .like("NGINX Plus `queue`; HAProxy `maxqueue` (per server)")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nmax_conns = 20\nmax_queue = 1000"),
    Key::new(
        "limit",
        "string: `adaptive`",
        "none",
        "`\"adaptive\"`: each server's limit on requests at once is found from its response times (TCP Vegas's rule, as Netflix's concurrency-limits applies it), so a server is held near its knee without knowing its thread pool. It starts at 10, `max_conns` caps it when given, and requests beyond it wait in the same queue; the current limit is `sluice_upstream_max_conns`. See [An adaptive limit](../overload.md#an-adaptive-limit-limit--adaptive).",
    )
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nlimit = \"adaptive\""),
    Key::new(
        "keepalive",
        "integer",
        "`128`",
        "Idle connections kept open for reuse per server and worker (for a server with a limit, per server for the whole process); `0` opens a connection for each request. Upstreams that list the same address share its idle connections (`sluice_upstream_idle_connections`).",
    )
    .like("nginx `keepalive` in an `upstream`; HAProxy `pool-max-conn`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nkeepalive = 32"),
    Key::new(
        "idle_timeout",
        "duration",
        "`\"4s\"`",
        "A pooled connection idle this long is closed: before the common backend keep-alive timeouts (Node.js and Apache: 5 s), so that a server does not close it under a request.",
    )
    .like("nginx `keepalive_timeout` in an `upstream`; HAProxy `pool-purge-delay`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nidle_timeout = \"50s\""),
    Key::new(
        "connect_timeout",
        "duration",
        "`\"2s\"`",
        "A connect to a server (with its TLS handshake, with `tls`) that takes longer fails: the request is retried elsewhere if it may be, otherwise the client gets `504`, and it counts as a failure of the server.",
    )
    .like("nginx `proxy_connect_timeout`; HAProxy `timeout connect`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nconnect_timeout = \"500ms\""),
    Key::new(
        "read_timeout",
        "duration",
        "`\"60s\"`",
        "The longest wait between two reads from the server (and for the server to take each piece of the request), for the response head and for each piece of the body; then the client gets `504` (or, mid-body, the connection is closed).",
    )
    .like("nginx `proxy_read_timeout`; HAProxy `timeout server`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nread_timeout = \"300s\""),
    Key::new(
        "max_fails",
        "integer (0 to 1000)",
        "`3`",
        "Passive checks: this many failures of a server on real traffic (connect errors, resets, timeouts, malformed responses, `fail_status` statuses) within `fail_window` eject it for `eject_for`; every ejection is logged with its cause and counted in `sluice_upstream_ejections_total`. `0` turns passive checks off. When every server is ejected and nothing says they are down, sluice tries them anyway, as nginx does.",
    )
    .like("nginx `max_fails`; HAProxy `observe layer7` with `error-limit` and `on-error mark-down`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nmax_fails = 5"),
    Key::new(
        "fail_window",
        "duration",
        "`\"10s\"`",
        "The time within which `max_fails` failures eject a server.",
    )
    .like("nginx `fail_timeout` (its first meaning)")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nmax_fails = 3\nfail_window = \"30s\""),
    Key::new(
        "eject_for",
        "duration",
        "`\"10s\"`",
        "How long an ejected server gets no requests. An ejection right after the previous one lasts twice as long, up to 8 times this; a success resets that. Active checks that see the server go down and come back end an ejection at once.",
    )
    .like("nginx `fail_timeout` (its second meaning)")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\neject_for = \"30s\""),
    Key::new(
        "fail_status",
        "list of integers (5xx statuses)",
        "`[502, 503, 504]`",
        "Response statuses that count as failures of the server for `max_fails` (and shrink an adaptive `limit`); the response still goes to the client. Only 5xx statuses; `[]` for none.",
    )
    .like("nginx `proxy_next_upstream http_502 http_503 http_504`; HAProxy `observe layer7`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nfail_status = [500, 502, 503, 504]"),
    Key::new(
        "retries",
        "integer (0 to 10)",
        "`1`",
        "Further tries of a failed request, each on a server not yet tried for it, and only when it cannot repeat an effect: a failed connect, or a reset, close or timeout before any response byte for GET, HEAD, OPTIONS, PUT, DELETE and TRACE. A request whose body was already streamed is not retried (see `retry_buffer`). Counted per server in `sluice_upstream_retries_total`; the try count is `tries` in the access log.",
    )
    .like("nginx `proxy_next_upstream_tries`; HAProxy `retries` with `option redispatch`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nretries = 2"),
    Key::new(
        "retry_non_idempotent",
        "bool",
        "`false`",
        "Also retry POST and PATCH after they reached a server (a reset or timeout before any response byte), which may run them twice.",
    )
    .like("nginx `proxy_next_upstream non_idempotent`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nretry_non_idempotent = true"),
    Key::new(
        "retry_budget",
        "number (0 to 1)",
        "`0.2`",
        "Retries add at most this fraction to the upstream's load: every request adds this much of a token, every retry spends one (with a small reserve, so a quiet upstream can retry at all), so a failing upstream is not hammered with retries. A retry refused for want of a token counts in `sluice_upstream_retry_budget_exhausted_total`.",
    )
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nretry_budget = 0.1"),
    Key::new(
        "retry_buffer",
        "string or integer (a size: `B`, `KiB`, `MiB`, or bytes)",
        "off",
        "A request body of known length up to this size (at most 16 MiB) is read whole before the first try and sent from memory, so a retry can send it again; larger bodies, and any body without it, are streamed and not retried.",
    )
    .like("nginx `proxy_request_buffering on`; HAProxy `retry-on` with `option http-buffer-request`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nretry_buffer = \"64KiB\""),
    Key::new(
        "slow_start",
        "duration",
        "off",
        "A server that comes back (from ejection or from its health checks) starts at 5% of its weight and ramps linearly to all of it over this time, instead of taking a full share with cold caches. `hash` ignores it (keys must go home).",
    )
    .like("NGINX Plus `slow_start`; HAProxy `slowstart`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nslow_start = \"30s\""),
    Key::new(
        "health",
        "table",
        "none (no active checks)",
        "Active health checks of every server, from one thread for the whole process: see [`[upstream.NAME.health]`](#upstreamnamehealth). A server its checks see down gets no requests; when every server is down, requests get `503` at once, and service resumes as soon as one is back.",
    )
    .like("NGINX Plus `health_check`; HAProxy `option httpchk` with `check`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\npath = \"/healthz\""),
    Key::new(
        "tls",
        "bool or table",
        "off",
        "HTTPS to the servers. `true`: the system's roots, the certificate verified against the server's IP address; a table names the server and the CA ([An upstream's `tls`](#an-upstreams-tls)). A certificate that does not verify fails the connect (`502`, counted against the server). Connections are pooled as plain ones, and health checks use it too.",
    )
    .like("nginx `proxy_pass https://` with `proxy_ssl_verify on`; HAProxy `ssl verify required ca-file`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8443\", \"10.0.0.2:8443\"]\ntls = true"),
    Key::new(
        "sticky",
        "table",
        "none (every request balanced)",
        "Keep each client's session on one server: `{ cookie = \"NAME\" }` sets a cookie naming the server (nginx's value: the MD5 of its `IP:port`) on a response whose request did not name it, and sends the requests that name it there; `{ learn = \"JSESSIONID\" }` learns the application's session cookie from the responses that set it and sends the requests that carry it to that server. Either way a session whose server is down, ejected, drained or at its `max_conns` goes to the server the balancer picks, and stays there; the sessions are kept across reloads. See [A `sticky` table](#an-upstreams-sticky). Not with `balance = \"hash\"`.",
    )
    .like("nginx `sticky cookie` and `sticky learn` (open source since 1.29.6); HAProxy `cookie SERVERID insert` and `stick on req.cook(JSESSIONID)`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nsticky = { cookie = \"srv_id\", max_age = \"1h\" }"),
];

pub const STICKY: &[Key] = &[
    Key::new("cookie", "string", "one of `cookie` and `learn`", "The cookie sluice sets, naming the server that answered.")
        .like("nginx `sticky cookie NAME`; HAProxy `cookie NAME insert indirect nocache`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nsticky = { cookie = \"srv_id\" }"),
    Key::new("learn", "string", "one of `cookie` and `learn`", "The application's session cookie (Tomcat's `JSESSIONID`, PHP's `PHPSESSID`): a response's `Set-Cookie` of it binds its value to the server that sent it; a request carrying it goes there.")
        .like("nginx `sticky learn create=$upstream_cookie_NAME lookup=$cookie_NAME`; HAProxy `stick on req.cook(NAME)` with `stick store-response res.cook(NAME)`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\nsticky = { learn = \"JSESSIONID\", timeout = \"30m\" }"),
    Key::new("timeout", "duration", "`\"1h\"`", "With `learn`: a session no request or response named for this long is forgotten (its next request is balanced anew).")
        .like("nginx `sticky learn ... timeout=`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { learn = \"JSESSIONID\", timeout = \"30m\" }"),
    Key::new("max_sessions", "integer", "`100000`", "With `learn`: the sessions the upstream remembers at most; beyond, a new session is learned only once older ones time out (its requests are balanced).")
        .like("the size of nginx's `sticky learn ... zone=`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { learn = \"JSESSIONID\", max_sessions = 1000000 }"),
    Key::new("path", "string", "`\"/\"`", "With `cookie`: the cookie's `Path`.")
        .like("nginx `sticky cookie ... path=`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { cookie = \"srv_id\", path = \"/shop/\" }"),
    Key::new("max_age", "duration", "none (a session cookie)", "With `cookie`: the cookie's `Max-Age`.")
        .like("nginx `sticky cookie ... expires=`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { cookie = \"srv_id\", max_age = \"12h\" }"),
    Key::new("domain", "string", "none (the request's host)", "With `cookie`: the cookie's `Domain`.")
        .like("nginx `sticky cookie ... domain=`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { cookie = \"srv_id\", domain = \".example.com\" }"),
    Key::new("secure", "boolean", "`false` (`true` with `samesite = \"none\"`)", "With `cookie`: the cookie's `Secure`: sent over HTTPS only.")
        .like("nginx `sticky cookie ... secure`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { cookie = \"srv_id\", secure = true }"),
    Key::new("httponly", "boolean", "`true`", "With `cookie`: the cookie's `HttpOnly`: not readable by the page's scripts.")
        .like("nginx `sticky cookie ... httponly`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { cookie = \"srv_id\", httponly = false }"),
    Key::new("samesite", "string: `strict`, `lax`, `none`", "none", "With `cookie`: the cookie's `SameSite`.")
        .like("nginx `sticky cookie ... samesite=`")
        .example("[upstream.app]\nservers = [\"10.0.0.1:8080\"]\nsticky = { cookie = \"srv_id\", samesite = \"lax\" }"),
];

pub const SERVER: &[Key] = &[
    Key::new(
        "addr",
        "string (`IP:port` or `host:port`)",
        "required, unless `dns`",
        "The server's address. A host name is resolved at start, by `sluice check` and on each reload (a name with several addresses gives a server for each). Consistent hashing places the server by this text as written, as nginx does.",
    )
    .like("nginx `server ADDRESS`; HAProxy `server NAME ADDRESS`")
    .example("[upstream.app]\nservers = [{ addr = \"10.0.0.1:8080\", weight = 3 }, \"10.0.0.2:8080\"]"),
    Key::new(
        "dns",
        "string (`name:port`, or an SRV name)",
        "none",
        "Servers found in DNS and followed while sluice runs, instead of `addr`: `\"app.internal:8080\"` makes each A and AAAA address a server on that port; `\"_http._tcp.app.service.consul\"` takes SRV records' targets, ports and weights (`weight` is refused), the lowest priority serving and the others backups. A name is asked again when its TTL runs out (within `[resolver]`'s bounds); a change applies like a reload, and a failed lookup keeps the servers found last. See [Servers from DNS](../balancing.md#servers-from-dns-dns-and-resolver).",
    )
    .like("nginx `server ... resolve` with `resolver`; HAProxy `server-template` with `resolvers`")
    .example("[upstream.app]\nservers = [{ dns = \"app.internal:8080\" }, \"10.0.0.9:8080\"]"),
    Key::new(
        "weight",
        "integer (1 to 10000)",
        "`1`",
        "The server's share of requests against the others'.",
    )
    .like("nginx `weight`; HAProxy `weight`")
    .example("[upstream.app]\nservers = [{ addr = \"10.0.0.1:8080\", weight = 3 }, \"10.0.0.2:8080\"]"),
    Key::new(
        "backup",
        "bool",
        "`false`",
        "The server takes requests only while no primary server is available.",
    )
    .like("nginx `backup`; HAProxy `backup`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", { addr = \"10.0.0.2:8080\", backup = true }]"),
    Key::new(
        "max_conns",
        "integer (1 to 1000000)",
        "the upstream's `max_conns`",
        "Requests (and tunnels) this server is given at once, all workers together, in place of the upstream's `max_conns`; the rest wait in the upstream's queue.",
    )
    .like("nginx `max_conns`; HAProxy `maxconn` on a server")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", { addr = \"10.0.0.2:8080\", max_conns = 40 }]"),
];

pub const HEALTH: &[Key] = &[
    Key::new(
        "path",
        "string",
        "`\"/\"`",
        "What each check asks for: `GET path` over HTTP/1.1 with `Connection: close` and `User-Agent: sluice-health-check`. It starts with `/`.",
    )
    .like("NGINX Plus `health_check uri=`; HAProxy `option httpchk GET /path`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\npath = \"/healthz\""),
    Key::new(
        "host",
        "string",
        "the server's `IP:port`",
        "The `Host` header of the checks, for servers that answer by name.",
    )
    .like("HAProxy `http-check send hdr Host ...`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\npath = \"/healthz\"\nhost = \"app.internal\""),
    Key::new(
        "interval",
        "duration",
        "`\"2s\"`",
        "Time between two checks of a server.",
    )
    .like("NGINX Plus `health_check interval=`; HAProxy `inter`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\ninterval = \"5s\""),
    Key::new(
        "timeout",
        "duration",
        "`\"1s\"`",
        "A check that has not connected and received a status line within this fails.",
    )
    .like("HAProxy `timeout check`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\ntimeout = \"500ms\""),
    Key::new(
        "expect",
        "integer or string (a status, `\"2xx\"` or `\"200-399\"`)",
        "`\"200-399\"`",
        "The statuses that pass; any other fails the check.",
    )
    .like("NGINX Plus `match` with `status`; HAProxy `http-check expect status`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\nexpect = \"2xx\""),
    Key::new(
        "rise",
        "integer (1 to 100)",
        "`2`",
        "Passing checks in a row that bring a down server back; it is used again at once, even if failures had ejected it. Every change of state is logged.",
    )
    .like("NGINX Plus `health_check passes=`; HAProxy `rise`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\nrise = 3"),
    Key::new(
        "fall",
        "integer (1 to 100)",
        "`3`",
        "Failing checks in a row that take a server down (`sluice_upstream_up` goes to 0). Every change of state is logged.",
    )
    .like("NGINX Plus `health_check fails=`; HAProxy `fall`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8080\", \"10.0.0.2:8080\"]\n\n[upstream.app.health]\nfall = 2"),
];

pub const UPSTREAM_TLS: &[Key] = &[
    Key::new(
        "server_name",
        "string",
        "none (the server's IP address is verified, no SNI sent)",
        "The name sent as SNI and verified in every server's certificate.",
    )
    .like("nginx `proxy_ssl_name` with `proxy_ssl_server_name on`; HAProxy `sni` and `verifyhost`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8443\", \"10.0.0.2:8443\"]\ntls = { server_name = \"api.internal\" }"),
    Key::new(
        "ca",
        "string (a PEM file)",
        "the system's roots",
        "The CA certificates trusted for the servers' certificates, instead of the system's roots: a private CA. The path is relative to the config file.",
    )
    .like("nginx `proxy_ssl_trusted_certificate`; HAProxy `ca-file`")
    .example("[upstream.app]\nservers = [\"10.0.0.1:8443\", \"10.0.0.2:8443\"]\ntls = { server_name = \"api.internal\", ca = \"internal-ca.pem\" }"),
];
