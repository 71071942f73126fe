//! Whether a parsed request head may be forwarded, and what it means: method, target,
//! `Host`, body framing, keep-alive, and the protocol it asks to switch to. Pure: no I/O,
//! no config; every refusal is a [`Rejection`] with its status.

use crate::http1::authority;
use crate::http1::head::{declared_framing, trim_ows, ConnectionTokens, Framing, FramingError};
use crate::http1::request::{reject, RawRequest, Rejection};

/// What the proxy keeps of a request once its head bytes are gone.
#[derive(Debug, Clone)]
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
    /// An HTTP/1.0 request without `Host`: the upstream head has none, and each attempt
    /// adds the server's address (nginx's default `$proxy_host`).
    pub needs_host: bool,
}

/// A request head that passed the checks, still borrowing the read buffer.
#[derive(Debug)]
pub struct Checked<'b> {
    pub method: &'b str,
    /// The target in origin form (`*` for `OPTIONS *`).
    pub path: &'b str,
    /// The authority of an absolute-form target, else the `Host` value; empty for an
    /// HTTP/1.0 request without `Host`.
    pub host: &'b str,
    pub conn: ConnectionTokens<'b>,
    /// The first protocol a bodiless HTTP/1.1 request asks to switch to, if any (whether
    /// its route allows it is the router's question).
    pub offered_upgrade: Option<&'b str>,
    pub request: Request,
}

impl<'b> Checked<'b> {
    /// The host routes see: without port.
    pub fn routing_host(&self) -> &'b str {
        host_without_port(self.host)
    }

    /// The path routes see: `OPTIONS *` is routed like `/`.
    pub fn routing_path(&self) -> &'b str {
        if self.path == "*" {
            "/"
        } else {
            self.path
        }
    }
}

/// The checks a request head must pass before it is forwarded.
pub fn check<'b>(raw: &RawRequest<'_, 'b>) -> Result<Checked<'b>, Rejection> {
    let (method, minor, headers) = (raw.method, raw.minor, raw.headers);
    if method == "CONNECT" {
        return Err(reject(405, "CONNECT is not proxied"));
    }
    let target = Target::parse(method, raw.target)?;
    let host_header = single_host(headers)?;
    // RFC 9112 section 3.2: every HTTP/1.1 request carries Host, absolute form or not
    // (the authority then replaces its value).
    if minor == 1 && host_header.is_none() {
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
    let conn = ConnectionTokens::read(headers);
    let request = Request {
        head_len: raw.head_len,
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
        upgrade: None,
        expect_continue: minor == 1
            && framing != Framing::None
            && headers.iter().any(is_expect_continue),
        needs_host: host.is_empty(),
    };
    Ok(Checked {
        method,
        path: target.path,
        host,
        offered_upgrade: upgrade_protocol(headers, &conn, minor, framing),
        conn,
        request,
    })
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

pub fn is_expect_continue(h: &httparse::Header<'_>) -> bool {
    h.name.eq_ignore_ascii_case("expect") && trim_ows(h.value).eq_ignore_ascii_case(b"100-continue")
}
