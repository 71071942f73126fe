//! Reading a client's request head and rewriting it for the upstream.
//!
//! The rewrite is done in one pass into a reusable buffer: request line in origin form,
//! end-to-end headers as they came, hop-by-hop headers dropped, and the forwarding headers
//! (`X-Forwarded-For`, `X-Real-IP`, `X-Forwarded-Proto`, `X-Forwarded-Host`) set by us.

use crate::authority;
use crate::head::{
    declared_framing, put_decimal, put_header, trim_ows, ConnectionTokens, Framing, FramingError,
};
use crate::key::View;

/// The most header lines a request may have; more gets 431.
pub const MAX_HEADERS: usize = 100;

/// A parsed request head: what the proxy needs after the head bytes are gone.
#[derive(Debug)]
pub struct Request {
    /// Bytes of the head in the input buffer, including the final CRLF.
    pub head_len: usize,
    pub framing: Framing,
    /// The client wants the connection kept open after this exchange.
    pub keep_alive: bool,
    pub is_head: bool,
    /// HTTP/1.0 clients cannot read chunked responses.
    pub http10: bool,
    /// Whether the body has no effect if repeated (safe to resend on a fresh connection).
    pub idempotent: bool,
    /// The protocol the client asks to switch to (a WebSocket handshake), when its route
    /// allows it. Only this one is offered to the server.
    pub upgrade: Option<String>,
    /// The client waits for `100 Continue` before sending its body. sluice answers that
    /// itself once a server connection is ready, and does not pass `Expect` on (as nginx).
    pub expect_continue: bool,
    /// An HTTP/1.0 request without `Host`: the head in the scratch buffer has none, and
    /// each attempt adds the server's address (nginx's default `$proxy_host`).
    pub needs_host: bool,
}

/// A request that cannot be forwarded, with the status it gets.
#[derive(Debug, PartialEq, Eq)]
pub struct Rejection {
    pub status: u16,
    pub reason: &'static str,
}

fn reject(status: u16, reason: &'static str) -> Rejection {
    Rejection { status, reason }
}

/// Facts about the client connection that the forwarding headers carry.
pub struct Origin<'a> {
    pub client_ip: &'a str,
    pub proto: &'a str,
}

/// Parses the head at the start of `buf`. `Ok(None)`: incomplete, read more. On success
/// the upstream head is in `out` and `route` has been asked for a route.
pub fn parse<R>(
    buf: &[u8],
    origin: &Origin<'_>,
    out: &mut Vec<u8>,
    route: impl FnOnce(&View<'_>) -> R,
    allows_upgrade: impl FnOnce(&R, &str) -> bool,
) -> Result<Option<(Request, R)>, Rejection> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(reject(431, "too many header lines")),
        Err(_) => return Err(reject(400, "malformed request head")),
    };
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(reject(400, "malformed request line"));
    };
    let (target, host, framing) = check(method, target, minor, req.headers)?;
    let needs_host = host.is_empty();
    let conn = ConnectionTokens::read(req.headers);
    let view = View {
        host: host_without_port(host),
        target: target.routing_path(),
        headers: req.headers,
        client_ip: origin.client_ip,
    };
    let routed = route(&view);
    let upgrade =
        upgrade_protocol(req.headers, &conn, minor, framing).filter(|p| allows_upgrade(&routed, p));
    out.clear();
    write_request_line(out, method, target.path);
    write_headers(out, req.headers, &conn, host, origin, framing, upgrade);
    let request = Request {
        head_len,
        framing,
        keep_alive: if minor == 0 {
            conn.keep_alive && !conn.close
        } else {
            !conn.close
        },
        is_head: method == "HEAD",
        http10: minor == 0,
        idempotent: matches!(
            method,
            "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE" | "TRACE"
        ),
        expect_continue: minor == 1
            && framing != Framing::None
            && req.headers.iter().any(is_expect_continue),
        upgrade: upgrade.map(str::to_string),
        needs_host,
    };
    Ok(Some((request, routed)))
}

/// The checks a request head must pass before it is forwarded: method, target, `Host`,
/// body framing. Returns the target, the host to route by, and the framing.
fn check<'a>(
    method: &str,
    target: &'a str,
    minor: u8,
    headers: &[httparse::Header<'a>],
) -> Result<(Target<'a>, &'a str, Framing), Rejection> {
    if method == "CONNECT" {
        return Err(reject(405, "CONNECT is not proxied"));
    }
    let target = Target::parse(method, target)?;
    let host_header = single_host(headers)?;
    if minor == 1 && host_header.is_none() && target.authority.is_none() {
        return Err(reject(400, "HTTP/1.1 request without Host"));
    }
    if minor == 0 && headers.iter().any(is_transfer_encoding) {
        // RFC 9112 section 6.1: framing an HTTP/1.0 sender cannot mean is faulty; nginx
        // refuses it too. Reading on would let a pipelined request hide behind it.
        return Err(reject(400, "Transfer-Encoding in an HTTP/1.0 request"));
    }
    let framing = declared_framing(headers, Framing::None).map_err(|e| match e {
        FramingError::UnsupportedCoding => reject(501, e.as_str()),
        _ => reject(400, e.as_str()),
    })?;
    let host = target.authority.or(host_header).unwrap_or("");
    Ok((target, host, framing))
}

fn is_transfer_encoding(h: &httparse::Header<'_>) -> bool {
    h.name.eq_ignore_ascii_case("transfer-encoding")
}

/// The request target split into the authority (absolute form only) and origin-form path.
struct Target<'a> {
    authority: Option<&'a str>,
    path: &'a str,
}

impl<'a> Target<'a> {
    fn parse(method: &str, target: &'a str) -> Result<Self, Rejection> {
        // Visible ASCII only (as h11 and RFC 3986 have it): a raw byte above 0x7F or a
        // fragment is something a browser never sends and a server may read differently.
        if !target
            .bytes()
            .all(|b| (0x21..0x7f).contains(&b) && b != b'#')
        {
            return Err(reject(
                400,
                "request target has a byte outside visible ASCII, or a #",
            ));
        }
        if target == "*" && method != "OPTIONS" {
            return Err(reject(
                400,
                "asterisk-form target with a method other than OPTIONS",
            ));
        }
        let parsed = Self::split(target)?;
        if has_dot_segment(parsed.path) {
            return Err(reject(400, "path has . or .. segments"));
        }
        Ok(parsed)
    }

    /// The path routes see: `OPTIONS *` is routed like `/`.
    fn routing_path(&self) -> &'a str {
        if self.path == "*" {
            "/"
        } else {
            self.path
        }
    }

    fn split(target: &'a str) -> Result<Self, Rejection> {
        if target.starts_with('/') || target == "*" {
            return Ok(Target {
                authority: None,
                path: target,
            });
        }
        // Absolute form: we take its host for routing and forward only the path, always
        // to a configured upstream. sluice never connects where a request says.
        let rest = strip_prefix_ignore_case(target, "http://")
            .or_else(|| strip_prefix_ignore_case(target, "https://"));
        let Some(rest) = rest else {
            return Err(reject(400, "request target is not a path"));
        };
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], &rest[i..]),
            _ => return Err(reject(400, "absolute-form target without a path")),
        };
        if !authority::is_valid(authority) {
            return Err(reject(400, "bad authority in request target"));
        }
        Ok(Target {
            authority: Some(authority),
            path,
        })
    }
}

/// True when the path (before any query) has a `.` or `..` segment, plain or
/// percent-encoded. Routes match raw paths; a server that resolved `/cart/../admin` after
/// sluice routed it by `/cart` would escape the route, so such paths are refused (browsers
/// never send them: they resolve dot segments before sending).
fn has_dot_segment(target: &str) -> bool {
    let path = target.split('?').next().unwrap_or(target);
    path.split('/').any(is_dots)
}

/// True for `.` and `..`, each dot possibly written `%2e` (any case). No allocation:
/// this runs on every request.
fn is_dots(segment: &str) -> bool {
    let mut rest = segment.as_bytes();
    let mut dots = 0;
    while !rest.is_empty() {
        rest = match rest {
            [b'.', tail @ ..] => tail,
            [b'%', b'2', e, tail @ ..] if e.eq_ignore_ascii_case(&b'e') => tail,
            _ => return false,
        };
        dots += 1;
    }
    dots == 1 || dots == 2
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// The one Host header's value; two Host headers are an error, and so is a value that is
/// not a host with an optional port (RFC 9112 section 3.2).
fn single_host<'a>(headers: &[httparse::Header<'a>]) -> Result<Option<&'a str>, Rejection> {
    let mut found = None;
    for h in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("host"))
    {
        if found.is_some() {
            return Err(reject(400, "more than one Host header"));
        }
        let value =
            std::str::from_utf8(trim_ows(h.value)).map_err(|_| reject(400, "Host is not text"))?;
        if value.is_empty() {
            return Err(reject(400, "empty Host header"));
        }
        if !authority::is_valid(value) {
            return Err(reject(400, "Host is not a host name with an optional port"));
        }
        found = Some(value);
    }
    Ok(found)
}

/// `example.com:8080` -> `example.com`; `[::1]:80` -> `[::1]`.
pub fn host_without_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |i| &host[..=i]);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn write_request_line(out: &mut Vec<u8>, method: &str, path: &str) {
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
}

/// The protocol an HTTP/1.1 request without a body asks to switch to, if any: the
/// `Upgrade` header, when `Connection` names `upgrade`.
fn upgrade_protocol<'h>(
    headers: &[httparse::Header<'h>],
    conn: &ConnectionTokens<'_>,
    minor: u8,
    framing: Framing,
) -> Option<&'h str> {
    if !conn.upgrade || minor != 1 || framing != Framing::None {
        return None;
    }
    let h = headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("upgrade"))?;
    // The first protocol offered, alone: the route's allow-list is checked against it, and
    // the server is offered nothing else (`websocket, h2c` must not smuggle h2c through).
    let first = std::str::from_utf8(h.value).ok()?.split(',').next()?;
    let first = std::str::from_utf8(trim_ows(first.as_bytes())).ok()?;
    (!first.is_empty()).then_some(first)
}

/// Headers that we set ourselves (or answer ourselves: `Expect`), so the client's are dropped.
fn is_ours(name: &str) -> bool {
    [
        "host",
        "x-forwarded-for",
        "x-real-ip",
        "x-forwarded-proto",
        "x-forwarded-host",
        "content-length",
        "expect",
    ]
    .iter()
    .any(|n| n.eq_ignore_ascii_case(name))
}

fn is_expect_continue(h: &httparse::Header<'_>) -> bool {
    h.name.eq_ignore_ascii_case("expect") && trim_ows(h.value).eq_ignore_ascii_case(b"100-continue")
}

fn write_headers(
    out: &mut Vec<u8>,
    headers: &[httparse::Header<'_>],
    conn: &ConnectionTokens<'_>,
    host: &str,
    origin: &Origin<'_>,
    framing: Framing,
    upgrade: Option<&str>,
) {
    for h in headers {
        if !conn.strips(h.name) && !is_ours(h.name) {
            put_header(out, h.name.as_bytes(), h.value);
        }
    }
    if !host.is_empty() {
        put_header(out, b"Host", host.as_bytes());
    }
    // Every X-Forwarded-For line, in order, then the client: the whole chain survives.
    out.extend_from_slice(b"X-Forwarded-For: ");
    for h in headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("x-forwarded-for"))
    {
        out.extend_from_slice(h.value);
        out.extend_from_slice(b", ");
    }
    out.extend_from_slice(origin.client_ip.as_bytes());
    out.extend_from_slice(b"\r\n");
    put_header(out, b"X-Real-IP", origin.client_ip.as_bytes());
    put_header(out, b"X-Forwarded-Proto", origin.proto.as_bytes());
    if !host.is_empty() {
        put_header(out, b"X-Forwarded-Host", host.as_bytes());
    }
    if let Some(protocol) = upgrade {
        out.extend_from_slice(b"Connection: Upgrade\r\n");
        put_header(out, b"Upgrade", protocol.as_bytes());
    }
    match framing {
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            put_decimal(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Framing::None | Framing::UntilClose => {}
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(raw: &str) -> Result<Option<(Request, String, String)>, Rejection> {
        let origin = Origin {
            client_ip: "10.0.0.9",
            proto: "http",
        };
        let mut out = Vec::new();
        let route = |v: &View| (v.host.to_string(), v.target.to_string());
        let parsed = parse(raw.as_bytes(), &origin, &mut out, route, |_, p| {
            p == "websocket"
        })?;
        Ok(parsed.map(|(r, (h, p))| (r, format!("{h}|{p}"), String::from_utf8(out).unwrap())))
    }

    #[test]
    fn rewrites_headers() {
        let raw = "GET /a?b=1 HTTP/1.1\r\nHost: Example.com:8080\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nX-Forwarded-For: 1.2.3.4\r\nX-Real-IP: spoofed\r\nAccept: */*\r\n\r\n";
        let (req, routed, out) = run(raw).unwrap().unwrap();
        assert_eq!(routed, "Example.com|/a?b=1");
        assert_eq!(req.head_len, raw.len());
        assert!(req.keep_alive && !req.http10 && req.idempotent);
        assert_eq!(
            out,
            "GET /a?b=1 HTTP/1.1\r\nAccept: */*\r\nHost: Example.com:8080\r\nX-Forwarded-For: 1.2.3.4, 10.0.0.9\r\nX-Real-IP: 10.0.0.9\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: Example.com:8080\r\n\r\n"
        );
    }

    #[test]
    fn websocket_handshakes_keep_their_upgrade_headers() {
        let raw = "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n";
        let (req, _, out) = run(raw).unwrap().unwrap();
        assert_eq!(req.upgrade.as_deref(), Some("websocket"));
        assert!(
            out.contains("Connection: Upgrade\r\nUpgrade: websocket\r\n")
                && out.contains("Sec-WebSocket-Key: k"),
            "{out}"
        );
        let refused = "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
        let (req, _, out) = run(refused).unwrap().unwrap();
        assert!(req.upgrade.is_none() && !out.contains("pgrade"), "{out}");
        let smuggle =
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket, h2c\r\n\r\n";
        let (_, _, out) = run(smuggle).unwrap().unwrap();
        assert!(
            out.contains("Upgrade: websocket\r\n") && !out.contains("h2c"),
            "{out}"
        );
    }

    #[test]
    fn every_forwarded_for_line_is_kept() {
        let raw = "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2, 3.3.3.3\r\n\r\n";
        let (_, _, out) = run(raw).unwrap().unwrap();
        assert!(
            out.contains("X-Forwarded-For: 1.1.1.1, 2.2.2.2, 3.3.3.3, 10.0.0.9\r\n"),
            "{out}"
        );
        let (_, routed, out) = run("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(routed, "a|/");
        assert!(out.starts_with("OPTIONS * HTTP/1.1\r\n"));
    }

    #[test]
    fn absolute_form_is_routed_by_its_host_and_sent_as_a_path() {
        let (_, routed, out) = run("GET http://evil.test:81/x HTTP/1.1\r\nHost: other\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(routed, "evil.test|/x");
        assert!(out.starts_with("GET /x HTTP/1.1\r\n"), "{out}");
        assert!(
            out.contains("Host: evil.test:81\r\n") && !out.contains("other"),
            "{out}"
        );
    }

    #[test]
    fn http10_keep_alive_needs_asking() {
        let (req, _, _) = run("GET / HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(!req.keep_alive && req.http10);
        let (req, _, _) = run("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(req.keep_alive);
    }

    #[test]
    fn rejections() {
        let status = |raw: &str| run(raw).unwrap_err().status;
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400);
        assert_eq!(status("CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n"), 405);
        assert_eq!(status("GET a HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"), 400);
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n"),
            400
        );
        assert_eq!(status("G\0T / HTTP/1.1\r\n\r\n"), 400);
        assert_eq!(status("GET / HTTP/1.1\r\nHost: \r\n\r\n"), 400);
        assert_eq!(status("GET /a/../b HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET /a/%2E%2e/b HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET /a/. HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
            501
        );
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: 1\r\n"))
            .collect();
        assert_eq!(
            status(&format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n")),
            431
        );
    }

    #[test]
    fn hosts_and_targets_are_strict() {
        let status = |raw: &str| run(raw).unwrap_err().status;
        for host in ["a b", "user@host", "a, b", "a:", "a:99999", "[::1"] {
            let raw = format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
            assert_eq!(status(&raw), 400, "Host: {host}");
        }
        assert_eq!(status("GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET * HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        assert_eq!(status("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n"), 400);
        let raw = b"GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n";
        let mut out = Vec::new();
        let origin = Origin {
            client_ip: "1.1.1.1",
            proto: "http",
        };
        let parsed = parse(raw, &origin, &mut out, |_| (), |_, _| false);
        assert_eq!(
            parsed.map(|_| ()).unwrap_err().status,
            400,
            "raw UTF-8 target"
        );
        let (_, routed, _) = run("GET / HTTP/1.1\r\nHost:  [::1]:8080 \r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(routed, "[::1]|/");
    }

    #[test]
    fn framing_headers_are_strict() {
        let status = |raw: &str| run(raw).unwrap_err().status;
        assert_eq!(
            status("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
            400
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
            400
        );
        // Only SP and HTAB are whitespace: a no-break space makes it another coding.
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\u{a0}\r\n\r\n"),
            501
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \u{a0}5\r\n\r\n"),
            400
        );
    }

    #[test]
    fn http10_without_host_gets_one_per_attempt() {
        let (req, routed, out) = run("GET /x HTTP/1.0\r\n\r\n").unwrap().unwrap();
        assert!(req.needs_host);
        assert_eq!(routed, "|/x");
        assert!(
            !out.contains("Host:") && !out.contains("X-Forwarded-Host"),
            "{out}"
        );
        let (req, _, _) = run("GET /x HTTP/1.0\r\nHost: a\r\n\r\n").unwrap().unwrap();
        assert!(!req.needs_host);
    }

    #[test]
    fn partial_heads_ask_for_more() {
        assert!(run("GET / HTTP/1.1\r\nHost: a\r\n").unwrap().is_none());
    }

    #[test]
    fn ports_are_stripped_from_hosts() {
        assert_eq!(host_without_port("a.com:80"), "a.com");
        assert_eq!(host_without_port("a.com"), "a.com");
        assert_eq!(host_without_port("[::1]:80"), "[::1]");
    }
}
