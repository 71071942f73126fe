//! The keys of `[[route]]`, of its `return` and header edits, and of `[limit.NAME]`.

use super::Key;

pub const ROUTE: &[Key] = &[
    Key::new(
        "host",
        "string",
        "any",
        "The request's host, compared without port, case or a trailing dot: exact (`\"shop.example.com\"`) or a suffix (`\"*.example.com\"`: any name ending in `.example.com`, not `example.com` itself). An exact host beats the longest matching suffix, which beats routes without `host`; a host whose routes match no path gets `404` rather than another host's routes. No scheme, port or path.",
    )
    .like("nginx `server_name`; HAProxy `acl ... hdr(host)` with `use_backend`")
    .example("[[route]]\nhost = \"shop.example.com\"\nupstream = \"app\""),
    Key::new(
        "path",
        "string",
        "`\"/\"`",
        "A path prefix, starting with `/`; among the routes of the request's host the longest matching prefix wins. It is compared as text, so `\"/api\"` also takes `/apix`: write `\"/api/\"` for a directory. Two routes with the same host, path and listeners are an error.",
    )
    .like("nginx `location /prefix`; HAProxy `acl ... path_beg` with `use_backend`")
    .example("[[route]]\npath = \"/api/\"\nupstream = \"app\""),
    Key::new(
        "skip_regex",
        "boolean",
        "`false`",
        "With `path`: when this prefix is the longest that matches, no `regex` route is tried (those `under` it still are).",
    )
    .like("nginx `location ^~ /prefix`")
    .example("[[route]]\npath = \"/static/\"\nskip_regex = true\nroot = \".\""),
    Key::new(
        "exact",
        "string",
        "none",
        "Instead of `path`: the whole path, starting with `/`. A route with the request's exact path wins before any prefix or regular expression is looked at.",
    )
    .like("nginx `location = /path`; HAProxy `acl ... path` with `use_backend`")
    .example("[[route]]\nexact = \"/login\"\nupstream = \"app\""),
    Key::new(
        "regex",
        "string (a regular expression)",
        "none",
        "Instead of `path`: a regular expression in nginx's (PCRE's) syntax, look-around and back-references included, searched in the request's path (decoded, `//` merged, dot segments resolved; no query). After the longest prefix is found, and unless it has `skip_regex`, the regex routes of the host are tried in the file's order and the first that matches takes the request; when none does, the longest prefix does. Its groups are `$1` to `$9` (named ones `(?<name>...)` also `$name`) in the route's `upstream_path`, headers and `return`. Write it as a TOML 'literal string' so that `\\` stays as is.",
    )
    .like("nginx `location ~ regex`; HAProxy `acl ... path_reg` with `use_backend`")
    .example("[[route]]\nregex = '\\.(png|jpe?g)$'\nignore_case = true\nupstream = \"app\""),
    Key::new(
        "ignore_case",
        "boolean",
        "`false`",
        "With `regex`: letters match in either case.",
    )
    .like("nginx `location ~* regex`")
    .example("[[route]]\nregex = '\\.php$'\nignore_case = true\nupstream = \"app\""),
    Key::new(
        "under",
        "string (a prefix route's `path`)",
        "none",
        "With `regex`: the route is nested in the prefix route of the same host with this `path`. It is tried only when that prefix is the longest match, before the routes not nested, and even when that prefix has `skip_regex`.",
    )
    .like("nginx: a `location ~` inside a `location /prefix/`")
    .example("[[route]]\npath = \"/media/\"\nupstream = \"app\"\n\n[[route]]\nregex = '\\.mp4$'\nunder = \"/media/\"\nreturn = 403"),
    Key::new(
        "rewrite",
        "list of tables",
        "none",
        "Changes to the request's path, tried in order on the requests the route took: `{ regex, to, flag }` (see [A `rewrite` entry](#a-rewrite-entry)). The path a rewrite gives is matched against the routes again (unless its `flag` is `break`), at most 10 times a request, then `500`.",
    )
    .like("nginx `rewrite regex replacement [flag]`; HAProxy `http-request set-path` and `redirect`")
    .example("[[route]]\npath = \"/old/\"\nupstream = \"app\"\nrewrite = [{ regex = '^/old/(.*)$', to = \"/new/$1\", flag = \"last\" }]"),
    Key::new(
        "upstream_path",
        "string",
        "none (the request's path and query as received)",
        "With `upstream`: the path the server gets. On a `path` or `exact` route it replaces the route's path at the start of the request's path (decoded and normalized, then escaped again), and the query follows: `path = \"/api/\"` with `upstream_path = \"/\"` sends `/api/users?x=1` as `/users?x=1`. On a `regex` route it is the whole path sent, usually with groups (`\"/u/$1\"`), and the query is not added (write `?$args` to keep it). A `rewrite` with `flag = \"break\"` sends its path instead.",
    )
    .like("nginx `proxy_pass http://app/v2/;` (the URI part); HAProxy `http-request replace-path`")
    .example("[[route]]\npath = \"/api/\"\nupstream = \"app\"\nupstream_path = \"/\""),
    Key::new(
        "listener",
        "string or list of strings",
        "all listeners",
        "The `bind` of a `[[listener]]`, or a list of them: the route takes only requests that came in on those, so the same host and path can redirect on port 80 and proxy on 443. Naming an address no listener binds is an error.",
    )
    .like("nginx: the `listen` of the route's `server` block; HAProxy: a `frontend` per `bind`")
    .example("[[listener]]\nbind = \"0.0.0.0:80\"\n\n[[route]]\nlistener = \"0.0.0.0:80\"\nredirect = \"https\""),
    Key::new(
        "upstream",
        "string",
        "none (a route needs one of `upstream`, `return`, `redirect`, `root`)",
        "Forward the route's requests to `[upstream.NAME]`, which must be defined. A route has exactly one of `upstream`, `return`, `redirect` and `root`.",
    )
    .like("nginx `proxy_pass http://NAME`; HAProxy `use_backend`")
    .example("[[route]]\npath = \"/\"\nupstream = \"app\""),
    Key::new(
        "return",
        "integer or table",
        "none",
        "Answer without a server: a status from 200 to 599 (`return = 204`), or a table with `status` and a `location` or a `body` (see [A route's `return` table](#a-routes-return-table)).",
    )
    .like("nginx `return`; HAProxy `http-request return` and `http-request redirect`")
    .example("[[route]]\npath = \"/healthz\"\nreturn = { status = 200, body = \"ok\\n\" }"),
    Key::new(
        "redirect",
        "string: `https`",
        "none",
        "`\"https\"` (the only value): answer `301` with `Location: https://$host$request_uri`. Put it on the port-80 listener with `listener`; with `[acme]`, its challenges are still answered, before any route. Any other target is a `return` with `status` and `location`.",
    )
    .like("nginx `return 301 https://$host$request_uri`; HAProxy `http-request redirect scheme https`")
    .example("[[route]]\nredirect = \"https\""),
    Key::new(
        "root",
        "string (a directory)",
        "none",
        "Serve static files: the file is this directory plus the whole request path (not `alias`), relative to the config file's directory, which `sluice check` and `sluice serve` check is a directory. GET and HEAD only (`405` otherwise); never outside the directory; dotfiles are `404` except under `/.well-known/`; a directory serves its `index.html`, without listings; `Last-Modified`, nginx's ETag, `304` and single `Range` requests. See [Static files](../https.md#static-files).",
    )
    .like("nginx `root`")
    .example("[[route]]\npath = \"/.well-known/acme-challenge/\"\nroot = \"/var/www/certbot\""),
    Key::new(
        "request_headers",
        "table",
        "none",
        "Headers changed on the request sent to the server: `{ set = { ... }, remove = [...] }` (see [`request_headers` and `response_headers`](#request_headers-and-response_headers)). A set header replaces any the client sent.",
    )
    .like("nginx `proxy_set_header`; HAProxy `http-request set-header` and `del-header`")
    .example("[[route]]\nupstream = \"app\"\nrequest_headers = { set = { \"X-Real-IP\" = \"$remote_addr\" }, remove = [\"X-Debug\"] }"),
    Key::new(
        "response_headers",
        "table",
        "none",
        "Headers changed on the response to the client, the same way: on responses relayed from servers and on the route's own `return` and `root` answers, not on sluice's error replies (`502`, `503`, `429`, ...). sluice adds no `Server` header of its own.",
    )
    .like("nginx `add_header` and `proxy_hide_header`; HAProxy `http-response set-header` and `del-header`")
    .example("[[route]]\nupstream = \"app\"\nresponse_headers = { set = { \"Strict-Transport-Security\" = \"max-age=63072000\" }, remove = [\"X-Powered-By\"] }"),
    Key::new(
        "compress",
        "boolean or table",
        "none (responses go as they come)",
        "Compress responses for clients that accept it: `true` turns on zstd (level 3), brotli (`br`, quality 4) and gzip (level 2) for text, JSON, JavaScript, XML, SVG and WebAssembly of at least 256 bytes; a table chooses (see [A route's `compress` table](#a-routes-compress-table)). The coding is the one the request's `Accept-Encoding` gives the highest q-value, zstd before brotli before gzip among equals; `q=0` refuses a coding, `*` stands for those it does not name, and a request without the header gets the response as it is. Compressed: final responses other than `204`, `206` and `304`, to GET and other requests but HEAD, from HTTP/1.1 and HTTP/2 clients (an HTTP/1.0 client gets none, as from nginx), whose `Content-Type` is one of `types`, whose `Content-Length` (if any) reaches `min_length`, without `Content-Encoding`, `Content-Range` or `Cache-Control: no-transform`. Such a response gets `Vary: Accept-Encoding` whether compressed or not; compressed, it loses `Content-Length` and `Accept-Ranges` (it is sent chunked, or in DATA frames), gets `Content-Encoding`, and its strong `ETag` becomes weak (`W/`), as nginx does. The body is compressed as it streams, never held whole: what each read from the server gives is flushed to the client at once (a stream of events is not held back). A `root` route's files are not compressed on the fly: there `compress = { precompressed = true }` sends their copies compressed ahead; a `return` route takes no `compress`. See [Compression](../compression.md).",
    )
    .like("nginx `gzip on` with `gzip_types`, `gzip_min_length`, `gzip_comp_level`, `gzip_vary on`, `gzip_proxied any`; `brotli*` (ngx_brotli); HAProxy `filter compression`")
    .example("[[route]]\nupstream = \"app\"\ncompress = true"),
    Key::new(
        "upgrade",
        "list of strings",
        "`[\"websocket\"]`",
        "Protocols a client may switch to with `Connection: Upgrade` (compared without case); only the first protocol it offers is checked. An allowed upgrade goes to the server, and its `101` turns the connection into a two-way tunnel; a `101` to another protocol gets `502`. `[]` refuses every upgrade: the server then sees a plain request. WebSockets stay on HTTP/1.1.",
    )
    .like("nginx `proxy_set_header Upgrade $http_upgrade` with `Connection \"upgrade\"`")
    .example("[[route]]\npath = \"/ws\"\nupstream = \"app\"\nupgrade = [\"websocket\"]"),
    Key::new(
        "tunnel_idle_timeout",
        "duration",
        "`\"1h\"`",
        "A WebSocket (any upgraded connection) with no bytes either way for this long is closed. Generous by default: nginx's 60 s `proxy_read_timeout` closes quiet WebSockets.",
    )
    .like("nginx `proxy_read_timeout` on a WebSocket location; HAProxy `timeout tunnel`")
    .example("[[route]]\npath = \"/ws\"\nupstream = \"app\"\ntunnel_idle_timeout = \"10m\""),
    Key::new(
        "limit",
        "string or list of strings",
        "none",
        "A `[limit.NAME]`, or a list of them, that the route's requests count against, each in turn until one refuses. A request over a limit gets `429` with `Retry-After` at once and never reaches a server. See [Rate limits](../overload.md#rate-limits-limitname).",
    )
    .like("nginx `limit_req zone=`; HAProxy `http-request track-sc0` with `http-request deny deny_status 429`")
    .example("[[route]]\npath = \"/api/\"\nupstream = \"app\"\nlimit = \"per_client\"\n\n[limit.per_client]\nrate = \"10/s\""),
    Key::new(
        "timeout",
        "duration",
        "none",
        "The longest a request may take from its first try, through every retry, to its response head (the body then streams under the upstream's `read_timeout`); then the client gets `504`, not counted against the server. A wait in the queue for a server below its `max_conns` is bounded by `queue_timeout` instead.",
    )
    .like("nginx: none (`proxy_read_timeout` bounds each read); HAProxy: none (`timeout server` bounds each read)")
    .example("[[route]]\npath = \"/api/\"\nupstream = \"app\"\ntimeout = \"15s\""),
    Key::new(
        "access",
        "list of strings",
        "none (every address)",
        "Address rules, nginx's `allow` and `deny` in order: each `\"allow ADDRESS\"` or `\"deny ADDRESS\"`, the address an IPv4 or IPv6 address, a network in CIDR form or `all`. The first rule matching the client's address decides; an address no rule matches is allowed, as in nginx, so a list of `allow`s ends with `\"deny all\"`. The client's address is the connection's, the one a PROXY protocol header names, or, from a peer in `trusted_proxies`, the last address in `X-Forwarded-For` that is not a trusted proxy. A refused request gets `403` and never reaches a server. See [Access rules](../access.md).",
    )
    .like("nginx `allow` and `deny`; HAProxy `http-request deny unless { src ... }`")
    .example("[[route]]\npath = \"/actuator/\"\nupstream = \"app\"\naccess = [\"allow 10.0.0.0/8\", \"allow ::1\", \"deny all\"]"),
    Key::new(
        "auth_basic",
        "table",
        "none",
        "HTTP basic auth: `{ realm = \"...\", user_file = \"...\" }` (see [A route's `auth_basic` table](#a-routes-auth_basic-table)). A request without a valid user and password gets `401` with `WWW-Authenticate: Basic realm=\"...\"` and never reaches a server; the user's name is in the access log.",
    )
    .like("nginx `auth_basic` and `auth_basic_user_file`; HAProxy `http-request auth` with a `userlist`")
    .example("[[route]]\npath = \"/admin/\"\nupstream = \"app\"\nauth_basic = { realm = \"ops\", user_file = \"/etc/sluice/htpasswd\" }"),
    Key::new(
        "satisfy",
        "string: `all` or `any`",
        "`\"all\"`",
        "With both `access` and `auth_basic`: `\"all\"` asks for an allowed address and a valid user (an address refused gets `403`), `\"any\"` for either (an office address needs no password; others get `401`).",
    )
    .like("nginx `satisfy`")
    .example("[[route]]\npath = \"/admin/\"\nupstream = \"app\"\naccess = [\"allow 10.0.0.0/8\", \"deny all\"]\nauth_basic = { realm = \"ops\", user_file = \"/etc/sluice/htpasswd\" }\nsatisfy = \"any\""),
];

pub const AUTH_BASIC: &[Key] = &[
    Key::new(
        "realm",
        "string",
        "required",
        "The realm sent in `WWW-Authenticate`, which a browser shows in its login prompt.",
    )
    .like("nginx `auth_basic \"realm\"`; HAProxy `http-request auth realm`")
    .example("[[route]]\nupstream = \"app\"\nauth_basic = { realm = \"ops\", user_file = \"/etc/sluice/htpasswd\" }"),
    Key::new(
        "user_file",
        "string (a file)",
        "required",
        "An htpasswd file as `htpasswd` (Apache) and `openssl passwd` write it, one `user:hash` a line, relative to the config file's directory: bcrypt (`$2y$`, `htpasswd -B`), Apache MD5 (`$apr1$`), SHA-1 (`{SHA}`), MD5-crypt (`$1$`) and SHA-crypt (`$5$`, `$6$`). A plain-text password, a DES crypt hash (it keeps 8 characters of a password) or a line sluice cannot read is an error naming its line. Read at start and at each reload: an edit takes effect with `sluice reload`, and a bad file keeps the running config. Passwords are compared in constant time.",
    )
    .like("nginx `auth_basic_user_file`; HAProxy `userlist` with `user NAME password HASH`")
    .example("[[route]]\nupstream = \"app\"\nauth_basic = { realm = \"ops\", user_file = \"/etc/sluice/htpasswd\" }"),
    Key::new(
        "cache",
        "duration",
        "`\"60s\"`",
        "How long a verified user and password are remembered (a hash of them, per worker), so that bcrypt, which takes milliseconds by design, is not computed on every request; `\"0s\"` verifies every request. A changed password or a reload ends it.",
    )
    .like("nginx: none (every request is verified again)")
    .example("[[route]]\nupstream = \"app\"\nauth_basic = { realm = \"ops\", user_file = \"/etc/sluice/htpasswd\", cache = \"5m\" }"),
];

pub const COMPRESS: &[Key] = &[
    Key::new(
        "zstd",
        "integer (1 to 19) or boolean",
        "`3` when the table names no coding, else off",
        "zstd's level, for clients that accept `zstd`; `true` is level 3, `false` turns it off. A table naming any of `zstd`, `br` and `gzip` turns on only those it names. zstd is preferred among codings a client accepts equally: level 3 makes smaller output than gzip's level 6 with a fraction of its CPU.",
    )
    .like("nginx: none (the zstd-nginx-module's `zstd_comp_level`)")
    .example("[[route]]\nupstream = \"app\"\ncompress = { zstd = 3, gzip = 2 }"),
    Key::new(
        "br",
        "integer (0 to 11) or boolean",
        "`4` when the table names no coding, else off",
        "brotli's quality, for clients that accept `br`; `true` is 4, `false` turns it off. Above 5 brotli costs many times gzip's CPU per response: fine for files compressed once (`precompressed`), not for every response of an app.",
    )
    .like("ngx_brotli `brotli on` with `brotli_comp_level`")
    .example("[[route]]\nupstream = \"app\"\ncompress = { br = 4 }"),
    Key::new(
        "gzip",
        "integer (1 to 9) or boolean",
        "`2` when the table names no coding, else off",
        "gzip's level, for clients that accept `gzip` (or `x-gzip`); `true` is 2, `false` turns it off. sluice's gzip is zlib-rs: at the same level it takes less CPU than nginx's zlib, and its level 1 makes output 22 to 45% larger than zlib's level 1 on JSON, so level 2 (smaller than zlib's 1, still cheaper) is the default. An import of nginx's `gzip_comp_level` keeps nginx's number.",
    )
    .like("nginx `gzip on` with `gzip_comp_level`")
    .example("[[route]]\nupstream = \"app\"\ncompress = { gzip = 6 }"),
    Key::new(
        "types",
        "list of strings",
        "`[\"text/*\", \"application/json\", \"application/*+json\", \"application/javascript\", \"application/xml\", \"application/*+xml\", \"image/svg+xml\", \"application/wasm\"]`",
        "The media types compressed, compared without case and without the `Content-Type`'s parameters: `type/subtype`, with a `*` in place of a part (`text/*`, `application/*+json`), or `\"*\"` for any. A response without `Content-Type` is not compressed. A pattern with a `*` never takes `text/event-stream`: a stream of events is compressed only where `types` names it (each read is flushed, so events still arrive one by one, but an event stream's client or a proxy on the way may wait for more).",
    )
    .like("nginx `gzip_types` (whose default is `text/html` alone)")
    .example("[[route]]\nupstream = \"app\"\ncompress = { types = [\"text/html\", \"application/json\"] }"),
    Key::new(
        "min_length",
        "integer (bytes)",
        "`256`",
        "A response whose `Content-Length` says fewer bytes goes as it is: a coding's header and the CPU cost more than they save on a small body. A response without `Content-Length` (chunked) is compressed whatever its length.",
    )
    .like("nginx `gzip_min_length` (default 20)")
    .example("[[route]]\nupstream = \"app\"\ncompress = { min_length = 1024 }"),
    Key::new(
        "precompressed",
        "boolean",
        "`false`",
        "On a `root` route: a file's compressed copy beside it (`app.js.zst`, `app.js.br`, `app.js.gz`) is sent in its place, with `Content-Encoding`, the original's `Content-Type` and `Vary: Accept-Encoding`, to a client that accepts that coding (zstd, then brotli, then gzip, among equal q-values), whatever levels the table gives; the copy's length, validators and ranges are the copy's own. A file without a copy goes as it is. Only on a route with `root`.",
    )
    .like("nginx `gzip_static on`; ngx_brotli `brotli_static on`")
    .example("[[route]]\npath = \"/assets/\"\nroot = \"public\"\ncompress = { precompressed = true }"),
];

pub const RETURN: &[Key] = &[
    Key::new(
        "status",
        "integer",
        "required",
        "The status sluice answers with, from 200 to 599. A 3xx other than `304` needs a `location`; `204` and `304` take no `body`.",
    )
    .like("nginx `return CODE`; HAProxy `http-request return status`")
    .example("[[route]]\npath = \"/old/\"\nreturn = { status = 410, body = \"gone\\n\" }"),
    Key::new(
        "location",
        "string",
        "none",
        "The `Location` header, for a 3xx status (required there) or `201`. It may use the variables `$scheme`, `$host`, `$request_uri`, `$uri`, `$args`, `$arg_NAME`, `$http_NAME`, `$cookie_NAME` and `$remote_addr`, and on a `regex` route its groups (`$1` to `$9`, `$name`) (`${name}` also works); not with `body`.",
    )
    .like("nginx `return 301 URL`; HAProxy `http-request redirect location`")
    .example("[[route]]\npath = \"/old/\"\nreturn = { status = 301, location = \"https://$host/new/\" }"),
    Key::new(
        "body",
        "string",
        "none (an empty body)",
        "The response body, sent as `text/plain`, as written (no variables). Not with `location`, nor with status `204` or `304`.",
    )
    .like("nginx `return 200 \"text\"`; HAProxy `http-request return ... string`")
    .example("[[route]]\npath = \"/healthz\"\nreturn = { status = 200, body = \"ok\\n\" }"),
];

pub const REWRITE: &[Key] = &[
    Key::new(
        "regex",
        "string (a regular expression)",
        "required",
        "Searched in the request's path (decoded and normalized, no query; after an earlier rewrite, its path); always case-sensitive (write `(?i)` for either case). No match: the next rewrite is tried.",
    )
    .like("nginx `rewrite`'s regex")
    .example("[[route]]\npath = \"/\"\nupstream = \"app\"\nrewrite = [{ regex = '^/blog/(\\d+)$', to = \"/posts?id=$1\" }]"),
    Key::new(
        "to",
        "string",
        "required",
        "The new path, with the match's groups (`$1` to `$9`, `$name`) and the request's variables. A `?` in it starts the new query, to which the request's query is added after `&`; ending it with `?` drops the request's query. Starting with `http://`, `https://` or `$scheme`, it redirects (`302`, or `301` with `permanent`) whatever the flag.",
    )
    .like("nginx `rewrite`'s replacement")
    .example("[[route]]\npath = \"/\"\nupstream = \"app\"\nrewrite = [{ regex = '^/shop/(.*)$', to = \"https://shop.example.com/$1\", flag = \"permanent\" }]"),
    Key::new(
        "flag",
        "string: `last`, `break`, `redirect`, `permanent`",
        "none: the next rewrites, then the routes searched again",
        "What follows a match: `last` searches the routes again with the new path; `break` keeps the request on this route and sends the new path to its server (without `upstream_path`); `redirect` answers `302` and `permanent` `301` with the new path as `Location`. Without a flag the next rewrites run on the new path, then the routes are searched again.",
    )
    .like("nginx `rewrite`'s flag")
    .example("[[route]]\npath = \"/app/\"\nupstream = \"app\"\nrewrite = [{ regex = '^/app/(.*)$', to = \"/$1\", flag = \"break\" }]"),
];

pub const HEADER_EDITS: &[Key] = &[
    Key::new(
        "set",
        "table of strings",
        "none",
        "Header names and their values: each replaces every header of that name (compared without case) already in the message. Values may use the variables `$remote_addr`, `$scheme`, `$host`, `$request_uri`, `$uri`, `$args`, `$arg_NAME`, `$http_NAME`, `$cookie_NAME`, `$msec` (the time, seconds since the epoch with milliseconds, as Pinpoint's `Pinpoint-ProxyNginx: t=$msec` wants) and `$request_id` (nginx's: 32 random hexadecimal digits made once per request, the same in the request's and the response's headers). Headers that frame the message or the connection (`Connection`, `Content-Length`, `Transfer-Encoding`, `Upgrade`, `TE`, `Trailer`, `Keep-Alive`, `Proxy-Connection`) are sluice's and refused.",
    )
    .like("nginx `proxy_set_header` / `add_header`; HAProxy `http-request set-header` / `http-response set-header`")
    .example("[[route]]\nupstream = \"app\"\nrequest_headers = { set = { \"X-Real-IP\" = \"$remote_addr\" } }"),
    Key::new(
        "remove",
        "list of strings",
        "none",
        "Header names to drop (compared without case); the same framing headers are refused as in `set`.",
    )
    .like("nginx `proxy_set_header NAME \"\"` / `proxy_hide_header`; HAProxy `http-request del-header` / `http-response del-header`")
    .example("[[route]]\nupstream = \"app\"\nresponse_headers = { remove = [\"X-Powered-By\"] }"),
];

pub const LIMIT: &[Key] = &[
    Key::new(
        "rate",
        "string (`N/s` or `N/m`)",
        "required",
        "Requests per second (`\"10/s\"`, `\"0.5/s\"`) or per minute (`\"600/m\"`) each key may make, above zero. The check is GCRA, nginx's leaky bucket: a quiet key may send `burst + 1` at once, then one per `1/rate`; over it a request gets `429` with `Retry-After` (seconds until one would pass). The state is shared by all workers and kept across a reload while the limit's settings stay. Metrics: `sluice_limit_rejected_total{limit}` and `sluice_limit_keys{limit}`.",
    )
    .like("nginx `limit_req_zone ... rate=` with `limit_req ... nodelay`; HAProxy `stick-table ... store http_req_rate(1s)`")
    .example("[limit.per_client]\nrate = \"10/s\""),
    Key::new(
        "burst",
        "integer",
        "`0`",
        "Requests beyond the rate a key that was quiet may send at once (up to 1,000,000).",
    )
    .like("nginx `limit_req ... burst=`")
    .example("[limit.per_client]\nrate = \"10/s\"\nburst = 20"),
    Key::new(
        "key",
        "string",
        "`\"$remote_addr\"`",
        "What counts as one client: a template with at least one variable, as a hash key (`\"$http_x_api_key\"`, `\"$cookie_sid\"`, `\"$remote_addr$uri\"`). Requests whose key comes out the same share one bucket, so requests without that header or cookie share one (nginx does not count an empty key). `$remote_addr` is the PROXY protocol's address on such a listener.",
    )
    .like("nginx: the key of `limit_req_zone`; HAProxy `http-request track-sc0 <key>`")
    .example("[limit.per_client]\nrate = \"600/m\"\nkey = \"$http_x_api_key\""),
];
