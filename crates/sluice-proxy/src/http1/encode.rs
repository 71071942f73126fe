//! Writing HTTP/1.1 heads: the request head for a server, the response head for a client.
//!
//! Each is written in one pass into a reusable buffer: request line in origin form,
//! end-to-end headers as they came, hop-by-hop headers dropped, and sluice's own
//! forwarding, framing and connection headers. No allocation: this runs on every request.

use crate::client::Client;
use crate::compress::response::{self, Field};
use crate::compress::Recode;
use crate::http1::check::Checked;
use crate::http1::head::{put_decimal, put_header, ConnectionTokens, Framing};
use crate::http1::response::{Response, ResponseHead};
use sluice_config::HeaderEdits;

/// A route's header changes for one message: the rules (which names are dropped) and
/// the lines to add, already evaluated for the request (`route::key::render`).
#[derive(Clone, Copy)]
pub struct Edits<'a> {
    pub rules: &'a HeaderEdits,
    pub lines: &'a [u8],
    /// The client's `tracestate` is dropped too (sluice started the trace the server
    /// gets: `route::key::started_trace`).
    pub drops_tracestate: bool,
}

impl<'a> Edits<'a> {
    /// The rules and lines of a message whose headers are otherwise as received.
    pub fn new(rules: &'a HeaderEdits, lines: &'a [u8]) -> Self {
        Edits {
            rules,
            lines,
            drops_tracestate: false,
        }
    }

    fn drops(edits: Option<&Self>, name: &str) -> bool {
        edits.is_some_and(|e| {
            e.rules.drops(name) || (e.drops_tracestate && name.eq_ignore_ascii_case("tracestate"))
        })
    }
}

/// The request head for the server, for `target` (the request's path and query as the
/// server gets them): `upgrade` is the protocol the route lets the client switch to, if
/// any. Returns how many header lines the server will get (counting the
/// `Host` an attempt adds to an HTTP/1.0 request without one), so that sluice can keep
/// what it forwards within the line limit it enforces itself.
pub fn request_head(
    out: &mut Vec<u8>,
    headers: &[httparse::Header<'_>],
    (checked, target): (&Checked<'_>, &str),
    client: &Client,
    upgrade: Option<&str>,
    edits: Option<&Edits<'_>>,
) -> usize {
    out.clear();
    write_request_line(out, checked.method, target);
    let forwarding = Forwarding {
        conn: &checked.conn,
        host: checked.host,
        client,
    };
    write_headers(
        out,
        headers,
        &forwarding,
        checked.request.framing,
        upgrade,
        edits,
    )
}

/// What the forwarding headers say of the client: its connection, and what its
/// request's `Connection` header and `Host` say.
struct Forwarding<'a> {
    conn: &'a ConnectionTokens<'a>,
    host: &'a str,
    client: &'a Client,
}

fn write_request_line(out: &mut Vec<u8>, method: &str, path: &str) {
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
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

fn write_headers(
    out: &mut Vec<u8>,
    headers: &[httparse::Header<'_>],
    forwarding: &Forwarding<'_>,
    framing: Framing,
    upgrade: Option<&str>,
    edits: Option<&Edits<'_>>,
) -> usize {
    let mut lines = 0;
    for h in headers {
        if !forwarding.conn.strips(h.name) && !is_ours(h.name) && !Edits::drops(edits, h.name) {
            put_header(out, h.name.as_bytes(), h.value);
            lines += 1;
        }
    }
    lines += forwarding_headers(out, headers, forwarding, edits);
    if let Some(e) = edits {
        out.extend_from_slice(e.lines);
        lines += e.lines.iter().filter(|b| **b == b'\n').count();
    }
    if let Some(protocol) = upgrade {
        out.extend_from_slice(b"Connection: Upgrade\r\n");
        put_header(out, b"Upgrade", protocol.as_bytes());
        lines += 2;
    }
    match framing {
        Framing::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            put_decimal(out, n);
            out.extend_from_slice(b"\r\n");
        }
        Framing::None | Framing::UntilClose => lines -= 1,
    }
    lines += 1;
    out.extend_from_slice(b"\r\n");
    lines
}

/// Host, X-Forwarded-For, X-Real-IP, X-Forwarded-Proto and X-Forwarded-Host, but those a
/// route sets itself. Counted as five lines whatever is written: Host may be added by
/// the attempt, and the next hop, given a Host, adds X-Forwarded-Host; a chain of
/// proxies must not grow past the limit.
fn forwarding_headers(
    out: &mut Vec<u8>,
    headers: &[httparse::Header<'_>],
    forwarding: &Forwarding<'_>,
    edits: Option<&Edits<'_>>,
) -> usize {
    let (host, client) = (forwarding.host, forwarding.client);
    let ours = |name: &str| !Edits::drops(edits, name);
    // A trusted proxy's value of a header, if it sent one: its last line, the one the
    // proxy nearest sluice wrote when it appended rather than replaced.
    let kept = |name: &str| {
        let sent = || {
            headers
                .iter()
                .rev()
                .find(|h| h.name.eq_ignore_ascii_case(name))
        };
        client.trusted.then(sent).flatten().map(|h| h.value)
    };
    if !host.is_empty() && ours("host") {
        put_header(out, b"Host", host.as_bytes());
    }
    if ours("x-forwarded-for") {
        // Every X-Forwarded-For line, in order, then the client: the whole chain survives.
        out.extend_from_slice(b"X-Forwarded-For: ");
        for h in headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("x-forwarded-for"))
        {
            out.extend_from_slice(h.value);
            out.extend_from_slice(b", ");
        }
        out.extend_from_slice(client.ip.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if ours("x-real-ip") {
        let ip = kept("x-real-ip").unwrap_or(client.ip.as_bytes());
        put_header(out, b"X-Real-IP", ip);
    }
    if ours("x-forwarded-proto") {
        let proto = kept("x-forwarded-proto").unwrap_or(client.proto().as_bytes());
        put_header(out, b"X-Forwarded-Proto", proto);
    }
    let forwarded_host = kept("x-forwarded-host").or((!host.is_empty()).then_some(host.as_bytes()));
    if let Some(h) = forwarded_host.filter(|_| ours("x-forwarded-host")) {
        put_header(out, b"X-Forwarded-Host", h);
    }
    5
}

/// How a response body goes to an HTTP/1 client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Strip chunk framing (an HTTP/1.0 client).
    pub dechunk: bool,
    /// Close the client connection after the body.
    pub close: bool,
}

impl Delivery {
    /// How `resp` reaches a client that speaks HTTP/1.0 (`http10`) or 1.1, on a
    /// connection we mean to keep (`keep_alive`) or not.
    pub fn of(resp: &Response, http10: bool, keep_alive: bool) -> Self {
        let dechunk = http10 && resp.framing == Framing::Chunked;
        Delivery {
            dechunk,
            close: !keep_alive || resp.framing == Framing::UntilClose || dechunk,
        }
    }
}

/// The head for the client: the status line, end-to-end headers, and our own framing and
/// connection headers; with `recode`'s changes when the route compresses.
pub fn response_head(
    out: &mut Vec<u8>,
    head: &ResponseHead<'_, '_>,
    resp: &Response,
    (delivery, http10): (Delivery, bool),
    edits: Option<&Edits<'_>>,
    recode: Recode,
) {
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 ");
    // Three digits, written without formatting machinery: this runs on every response.
    out.extend_from_slice(&[
        b'0' + (resp.status / 100 % 10) as u8,
        b'0' + (resp.status / 10 % 10) as u8,
        b'0' + (resp.status % 10) as u8,
    ]);
    out.push(b' ');
    out.extend_from_slice(head.reason.as_bytes());
    out.extend_from_slice(b"\r\n");
    let coded = recode.coding.is_some();
    for h in head.headers.iter().filter(|h| !head.conn.strips(h.name)) {
        if Edits::drops(edits, h.name) {
            continue;
        }
        match coded.then(|| response::field(h.name, h.value)) {
            Some(Field::Drop) => {}
            Some(Field::Weaken) => {
                out.extend_from_slice(b"ETag: W/");
                out.extend_from_slice(h.value);
                out.extend_from_slice(b"\r\n");
            }
            _ => put_header(out, h.name.as_bytes(), h.value),
        }
    }
    if let Some(e) = edits.filter(|_| !resp.interim) {
        out.extend_from_slice(e.lines);
    }
    response::put_lines(out, recode);
    if resp.upgraded {
        let protocol = head
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("upgrade"))
            .map_or(&b"websocket"[..], |h| h.value);
        out.extend_from_slice(b"Connection: Upgrade\r\n");
        put_header(out, b"Upgrade", protocol);
    } else if !resp.interim {
        // A compressed body is chunked: its length is known only at its end.
        if (resp.framing == Framing::Chunked || coded) && !delivery.dechunk {
            out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        }
        if delivery.close {
            out.extend_from_slice(b"Connection: close\r\n");
        } else if http10 {
            out.extend_from_slice(b"Connection: keep-alive\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
}
