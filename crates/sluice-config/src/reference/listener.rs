//! The keys of `[[listener]]` and of a listener's `tls`.

use super::Key;

pub const LISTENER: &[Key] = &[
    Key::new(
        "bind",
        "string (`IP:port`)",
        "required",
        "The address and port to accept clients on: `\"0.0.0.0:443\"`, `\"[::]:443\"`, `\"127.0.0.1:8080\"`. An IP address, never a host name (none is resolved). Give as many listeners as you need; two with the same address are an error. A reload binds a new address before anything else changes, and a bind error (the port in use) cancels the reload.",
    )
    .like("nginx `listen`; HAProxy `bind`")
    .example("[[listener]]\nbind = \"0.0.0.0:80\""),
    Key::new(
        "tls",
        "table",
        "none (plain HTTP)",
        "HTTPS on this listener: `{ cert = \"fullchain.pem\", key = \"privkey.pem\" }`, with `certificates = [...]` for more names or `acme = true` for the `[acme]` certificate (see [A listener's `tls`](#a-listeners-tls)). TLS 1.3 and 1.2 only (rustls); servers are told `X-Forwarded-Proto: https`. A `tls` that names no certificate is an error. Certificates are read again on reload and whenever their files change.",
    )
    .like("nginx `listen ... ssl` with `ssl_certificate`; HAProxy `bind ... ssl crt`")
    .example("[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { cert = \"fullchain.pem\", key = \"privkey.pem\" }"),
    Key::new(
        "http2",
        "bool",
        "`true` with `tls`, else `false`",
        "HTTP/2 from clients. On a TLS listener it is offered by ALPN (`h2`, then `http/1.1`); `http2 = false` leaves HTTP/1.1 only. On a plain listener `http2 = true` takes h2c with prior knowledge (a connection whose first bytes are the HTTP/2 preface), and HTTP/1.1 from everyone else. Servers are still reached over HTTP/1.1; the limits are in `[http2]`.",
    )
    .like("nginx `http2 on`; HAProxy `alpn h2,http/1.1`")
    .example("[[listener]]\nbind = \"127.0.0.1:8080\"\nhttp2 = true"),
    Key::new(
        "max_conns_per_client",
        "integer",
        "none (no limit)",
        "Connections one client address may have open on this listener at once, counted across all workers (at least 1). A connection beyond it is answered `429` with `Retry-After: 1` and closed (over HTTP/2: GOAWAY at once, and each stream it opened `429`), and counted in `sluice_listener_rejects_total{status=\"429\"}`. With `proxy_protocol` the client is the header's address.",
    )
    .like("nginx `limit_conn`; HAProxy `sc0_conn_cur` with `tcp-request connection reject`")
    .example("[[listener]]\nbind = \"0.0.0.0:80\"\nmax_conns_per_client = 32"),
    Key::new(
        "proxy_protocol",
        "bool",
        "`false`",
        "Each connection starts with a PROXY protocol header, version 1 or 2, from the L4 balancer in front (HAProxy's `send-proxy`, AWS NLB, GCP and Azure TCP balancers); its source address is the client's from then on: in logs, `X-Real-IP`, `X-Forwarded-For`, rate-limit keys and `max_conns_per_client`. A v2 `LOCAL` header (the balancer's own health check) keeps the peer's address. A connection without a valid header within `header_timeout` is closed unanswered. Anyone who can connect may claim any address, so list the balancers in `proxy_protocol_from` or keep the port to them.",
    )
    .like("nginx `listen ... proxy_protocol`; HAProxy `accept-proxy`")
    .example("[[listener]]\nbind = \"0.0.0.0:80\"\nproxy_protocol = true"),
    Key::new(
        "proxy_protocol_from",
        "list of strings (addresses and networks)",
        "any peer",
        "With `proxy_protocol = true` (an error without it): the balancers allowed to send the header, as addresses and CIDR networks (`[\"10.0.0.0/8\", \"fd00::/8\"]`). A connection from any other peer is closed before a byte is read.",
    )
    .like("nginx: none; HAProxy `tcp-request connection expect-proxy layer4 if { src ... }`")
    .example("[[listener]]\nbind = \"0.0.0.0:80\"\nproxy_protocol = true\nproxy_protocol_from = [\"10.0.0.0/8\"]"),
];

pub const TLS: &[Key] = &[
    Key::new(
        "cert",
        "string (a PEM file)",
        "none",
        "The certificate chain, leaf first (certbot's `fullchain.pem`), relative to the config file's directory; given with `key`. It is the default certificate, served to clients without SNI and to names no certificate has, unless `acme = true` comes first. `sluice check` and `sluice serve` refuse a certificate that cannot be read, is not PEM, does not match its key or is out of its validity dates; `sluice check` warns of one that expires within two weeks. A changed file is served without a reload (checked every second).",
    )
    .like("nginx `ssl_certificate`; HAProxy `bind ... ssl crt`")
    .example("[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { cert = \"/etc/sluice/tls/shop/fullchain.pem\", key = \"/etc/sluice/tls/shop/privkey.pem\" }"),
    Key::new(
        "key",
        "string (a PEM file)",
        "none",
        "The private key of `cert` (given with it), relative to the config file's directory; it must be readable by the user sluice runs as.",
    )
    .like("nginx `ssl_certificate_key`; HAProxy: the key in the `crt` file or a `.key` beside it")
    .example("[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { cert = \"fullchain.pem\", key = \"privkey.pem\" }"),
    Key::new(
        "certificates",
        "list of tables",
        "none",
        "More certificates for other names, each `{ cert, key }`. The one served is chosen by the name the client asks for (SNI) against the names in the certificates themselves (exact, then one-label wildcards); the first certificate (the `acme` one, then `cert`, then this list in order) is the default for clients without SNI and names no certificate has.",
    )
    .like("nginx: a `server` block per name with its own `ssl_certificate`; HAProxy `crt-list`, or several `crt` on the `bind`")
    .example("[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { cert = \"shop.pem\", key = \"shop.key\", certificates = [{ cert = \"api.pem\", key = \"api.key\" }] }"),
    Key::new(
        "acme",
        "bool",
        "`false`",
        "`true`: serve the `[acme]` certificate, obtained and renewed from Let's Encrypt, first (so it is the default), before `cert` and `certificates`. Needs an `[acme]` table; until the first certificate arrives the listener serves a self-signed placeholder. See [ACME](../https.md#certificates-from-lets-encrypt-acme).",
    )
    .like("nginx and HAProxy: certbot or acme.sh outside them")
    .example("[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { acme = true }\n\n[acme]\ndomains = [\"shop.example.com\"]"),
];

pub const CERTIFICATE: &[Key] = &[
    Key::new(
        "cert",
        "string (a PEM file)",
        "required",
        "The certificate chain, leaf first, relative to the config file's directory. It is served to clients that ask (SNI) for a name in it; checked and reloaded as the listener's `cert` is.",
    )
    .like("nginx `ssl_certificate` in another `server`; HAProxy another `crt` on the `bind`")
    .example("[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { cert = \"shop.pem\", key = \"shop.key\", certificates = [{ cert = \"api.pem\", key = \"api.key\" }] }"),
    Key::new(
        "key",
        "string (a PEM file)",
        "required",
        "The private key of this entry's `cert`, relative to the config file's directory.",
    )
    .like("nginx `ssl_certificate_key`; HAProxy: the key in the `crt` file")
    .example("[[listener]]\nbind = \"0.0.0.0:443\"\ntls = { cert = \"shop.pem\", key = \"shop.key\", certificates = [{ cert = \"api.pem\", key = \"api.key\" }, { cert = \"blog.pem\", key = \"blog.key\" }] }"),
];
