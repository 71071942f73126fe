//! Answers sluice makes itself for routes that do not forward: `return` and `redirect`
//! (a status with a location or a short body) and `root` (static files, `files`).
//!
//! The head is written by [`prepare`] while the request head is still borrowed (it reads
//! the path and the conditional headers), into the buffer that would otherwise hold the
//! head for a server; [`send`] writes it and the body. The route's response header edits
//! apply here as on relayed responses. Never reaches a server.

use crate::compress::accept::Accepted;
use crate::downstream::Downstream;
use crate::failure::{Body, Failure, Kind};
use crate::files::{self, FileRequest};
use crate::http1::check::{Checked, Request};
use crate::http1::encode::Edits;
use crate::http1::head::put_decimal;
use crate::http1::reply::reason;
use crate::io::Stream;
use crate::record::Outcome;
use crate::route::key::{self, View};
use crate::route::RouteId;
use sluice_config::{Action, Return, Route};

/// An answer whose head is prepared: its status and what follows the head.
#[derive(Debug)]
pub struct Local {
    pub status: u16,
    pub body: files::Body,
    /// The connection stays open after it (the request had no body left unread and the
    /// client keeps the connection).
    pub keep_alive: bool,
}

/// Writes the whole head of `route`'s answer to the request into `out`; `path` is the
/// request's target, or the one its rewrites gave.
pub fn prepare(
    route: &Route,
    view: &View<'_>,
    (checked, path): (&Checked<'_>, &str),
    headers: &[httparse::Header<'_>],
    edits: Option<&Edits<'_>>,
    out: &mut Vec<u8>,
) -> Local {
    let req = &checked.request;
    let keep_alive = keeps_alive(req);
    out.clear();
    let (status, body) = match &route.action {
        Action::Return(ret) => returned(ret, view, req.is_head, out),
        Action::Files { root, .. } => {
            let header = |name: &str| {
                headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case(name))
                    .map(|h| h.value)
            };
            let codings = route
                .compress
                .as_ref()
                .filter(|c| c.precompressed)
                .map(|_| Accepted::read(headers).ranked(|_| true).collect::<Vec<_>>());
            let ask = FileRequest {
                precompressed: codings.as_deref(),
                method: checked.method.as_bytes(),
                path: path.as_bytes(),
                route_prefix: route.files_prefix(),
                range: header("range"),
                if_none_match: header("if-none-match"),
                if_modified_since: header("if-modified-since"),
                if_range: header("if-range"),
            };
            let reply = files::serve(root, &ask);
            put_lines(out, &reply.head, edits);
            (reply.status, reply.body)
        }
        // Proxied routes never come here; an empty answer is still a valid one.
        Action::Proxy { .. } => (502, files::Body::None),
    };
    finish(out, edits, keep_alive, req.http10);
    // HEAD: the head a GET would get, and nothing after it.
    let body = if req.is_head { files::Body::None } else { body };
    Local {
        status,
        body,
        keep_alive,
    }
}

/// The head lines of a `return`, and its body.
fn returned(
    ret: &Return,
    view: &View<'_>,
    head_only: bool,
    out: &mut Vec<u8>,
) -> (u16, files::Body) {
    status_line(out, ret.status);
    if let Some(location) = &ret.location {
        put_location(out, |out| key::evaluate(location, view, out));
    }
    let body = ret.body.as_deref().unwrap_or("");
    if ret.status != 204 && ret.status != 304 {
        if ret.body.is_some() {
            out.extend_from_slice(b"Content-Type: text/plain; charset=utf-8\r\n");
        }
        out.extend_from_slice(b"Content-Length: ");
        put_decimal(out, body.len() as u64);
        out.extend_from_slice(b"\r\n");
    }
    let body = if head_only || body.is_empty() {
        files::Body::None
    } else {
        files::Body::Bytes(body.as_bytes().to_vec())
    };
    (ret.status, body)
}

/// A bare answer of `status` with an empty body and, when given, a `Location`: a
/// rewrite's redirect (or its `500`), into `out`.
pub fn status(
    status: u16,
    location: Option<&[u8]>,
    checked: &Checked<'_>,
    edits: Option<&Edits<'_>>,
    out: &mut Vec<u8>,
) -> Local {
    let req = &checked.request;
    let keep_alive = keeps_alive(req);
    out.clear();
    status_line(out, status);
    if let Some(location) = location {
        put_location(out, |out| out.extend_from_slice(location));
    }
    out.extend_from_slice(b"Content-Length: 0\r\n");
    finish(out, edits, keep_alive, req.http10);
    Local {
        status,
        body: files::Body::None,
        keep_alive,
    }
}

/// The connection stays open after an answer: the request had no body left unread and
/// the client keeps the connection.
fn keeps_alive(req: &Request) -> bool {
    req.keep_alive && Body::unread(req.framing).consumed()
}

fn status_line(out: &mut Vec<u8>, status: u16) {
    out.extend_from_slice(b"HTTP/1.1 ");
    put_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `Location: ...` as `write` writes it; a location built from request bytes must not
/// break the head, so one with a control character becomes `/`.
fn put_location(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    out.extend_from_slice(b"Location: ");
    let at = out.len();
    write(out);
    if out[at..].iter().any(|b| b.is_ascii_control()) {
        out.truncate(at);
        out.push(b'/');
    }
    out.extend_from_slice(b"\r\n");
}

/// Copies header lines from `head` but those the route's edits drop.
fn put_lines(out: &mut Vec<u8>, head: &[u8], edits: Option<&Edits<'_>>) {
    for line in head.split_inclusive(|b| *b == b'\n') {
        let name = line.split(|b| *b == b':').next().unwrap_or(b"");
        let dropped = !line.starts_with(b"HTTP/")
            && edits.is_some_and(|e| e.rules.drops(std::str::from_utf8(name).unwrap_or("")));
        if !dropped {
            out.extend_from_slice(line);
        }
    }
}

/// The route's added lines, the connection's, and the end of the head.
fn finish(out: &mut Vec<u8>, edits: Option<&Edits<'_>>, keep_alive: bool, http10: bool) {
    if let Some(e) = edits {
        out.extend_from_slice(e.lines);
    }
    if !keep_alive {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// The answer to an ACME HTTP-01 challenge: the key authorization as text.
pub fn challenge(key_authorization: &str, checked: &Checked<'_>, out: &mut Vec<u8>) -> Local {
    let req = &checked.request;
    let keep_alive = keeps_alive(req);
    out.clear();
    out.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ");
    put_decimal(out, key_authorization.len() as u64);
    out.extend_from_slice(b"\r\n");
    finish(out, None, keep_alive, req.http10);
    let body = key_authorization.as_bytes().to_vec();
    Local {
        status: 200,
        body: if req.is_head {
            files::Body::None
        } else {
            files::Body::Bytes(body)
        },
        keep_alive,
    }
}

/// Sends the answer prepared in `head` and its body; the outcome for the record stage
/// (`route`: the path of the route that answered, if one did).
pub async fn send<'g, S: Stream>(
    down: &mut Downstream<'_, S>,
    req: &Request,
    route: Option<RouteId>,
    local: Local,
    head: &[u8],
) -> Outcome<'g> {
    let body = Body::unread(req.framing);
    let sent = down.send_local(head, local.body).await;
    let keep_alive = match &sent {
        Ok(_) => down.conclude(!body.consumed(), local.keep_alive).await,
        Err(_) => false,
    };
    Outcome {
        client: None,
        route,
        upstream: None,
        server: None,
        status: local.status,
        tries: 0,
        failure: sent.as_ref().err().map(|e| {
            let cause = format!("answer not sent: {e}");
            Failure::downstream(Kind::ClientGone, local.status, cause, body)
        }),
        keep_alive,
        bytes_sent: sent.unwrap_or(0),
        upstream_time: None,
        queue_time: None,
        identity: None,
    }
}
