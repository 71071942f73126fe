//! Entry points into sluice's HTTP/1 codec for fuzzers, property tests and differential
//! tests against other parsers. Not an API: hidden from the docs, shaped for checking
//! (owned results, no sockets), and free to change with the codec.

use crate::client::Client;
use crate::http1::check::check;
use crate::http1::chunked::ChunkedDecoder;
use crate::http1::encode::{self, Delivery};
use crate::http1::head::Framing;
use crate::http1::request;
use crate::http1::response::{self, Asked};

/// What sluice made of a request head it accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedRequest {
    /// Bytes of the head in the input.
    pub head_len: usize,
    /// The host routes see (without port), and the path.
    pub host: String,
    pub path: String,
    /// `None`, `Length(n)` or `Chunked`, as `"none"`, `"length:N"`, `"chunked"`.
    pub framing: String,
    pub keep_alive: bool,
    /// The head as it would go to a server (before `Host` is added for HTTP/1.0).
    pub upstream_head: Vec<u8>,
}

/// Parses a request head as the proxy does: parse, check, route (every upgrade allowed),
/// encode. `Ok(None)`: incomplete. `Err`: the status and reason the client would get.
pub fn parse_request(input: &[u8]) -> Result<Option<AcceptedRequest>, (u16, &'static str)> {
    let client = Client::new(
        std::net::SocketAddr::from(([192, 0, 2, 1], 40000)),
        std::net::SocketAddr::from(([127, 0, 0, 1], 80)),
        "http",
    );
    let reject = |r: request::Rejection| (r.status, r.reason);
    let mut headers = request::header_slots();
    let Some(raw) = request::parse(input, &mut headers).map_err(reject)? else {
        return Ok(None);
    };
    let checked = check(&raw).map_err(reject)?;
    let mut out = Vec::new();
    let upgrade = checked.offered_upgrade;
    let lines = encode::request_head(
        &mut out,
        raw.headers,
        (&checked, checked.path),
        &client,
        upgrade,
        None,
    );
    request::forwarded_lines_fit(lines).map_err(reject)?;
    Ok(Some(AcceptedRequest {
        head_len: raw.head_len,
        host: checked.routing_host().to_string(),
        path: checked.routing_path().to_string(),
        framing: framing_name(checked.request.framing),
        keep_alive: checked.request.keep_alive,
        upstream_head: out,
    }))
}

fn framing_name(framing: Framing) -> String {
    match framing {
        Framing::None => "none".into(),
        Framing::Length(n) => format!("length:{n}"),
        Framing::Chunked => "chunked".into(),
        Framing::UntilClose => "close".into(),
    }
}

/// A chunked body decoded from pieces: the payload, the bytes that belong to the body,
/// and whether it was complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub payload: Vec<u8>,
    pub used: usize,
    pub done: bool,
}

/// Decodes a chunked body fed in the given pieces (their lengths; the rest of `input`
/// goes as a last piece). A trailer section may take `max_trailer` bytes.
pub fn decode_chunked(
    input: &[u8],
    pieces: &[usize],
    max_trailer: usize,
) -> Result<Decoded, &'static str> {
    let mut decoder = ChunkedDecoder::new(max_trailer);
    let mut payload = Vec::new();
    let mut used = 0;
    let mut rest = input;
    let sizes = pieces.iter().copied().chain(std::iter::once(usize::MAX));
    for size in sizes {
        let (piece, after) = rest.split_at(size.min(rest.len()));
        rest = after;
        used += decoder
            .decode(piece, |data| payload.extend_from_slice(data))
            .map_err(|e| e.0)?;
        if decoder.is_done() || rest.is_empty() {
            break;
        }
    }
    Ok(Decoded {
        payload,
        used,
        done: decoder.is_done(),
    })
}

/// What sluice made of a response head it accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcceptedResponse {
    pub status: u16,
    pub head_len: usize,
    pub framing: String,
    pub reusable: bool,
    /// The head as it would go to the client.
    pub client_head: Vec<u8>,
}

/// Parses a response head to a plain HTTP/1.1 GET as the proxy does (`head`: the
/// request was HEAD). `Ok(None)`: incomplete.
pub fn parse_response(input: &[u8], head: bool) -> Result<Option<AcceptedResponse>, &'static str> {
    let mut headers = response::header_slots();
    let Some(parsed) = response::parse(input, &mut headers)? else {
        return Ok(None);
    };
    let asked = Asked {
        is_head: head,
        upgrade: None,
    };
    let resp = response::classify(&parsed, asked)?;
    let delivery = Delivery::of(&resp, false, true);
    let mut out = Vec::new();
    encode::response_head(
        &mut out,
        &parsed,
        &resp,
        (delivery, false),
        None,
        Default::default(),
    );
    Ok(Some(AcceptedResponse {
        status: resp.status,
        head_len: resp.head_len,
        framing: framing_name(resp.framing),
        reusable: resp.reusable,
        client_head: out,
    }))
}
