//! Reading a server's response head: parsing it, and what it says about its body and
//! the connection. Encoding it for the client is the downstream side's job.

use crate::http1::head::{declared_framing, trim_ows, ConnectionTokens, Framing};

use std::mem::MaybeUninit;

pub const MAX_HEADERS: usize = 128;

/// Room for a response's header lines, left uninitialised until parsed.
pub type HeaderSlots<'b> = [MaybeUninit<httparse::Header<'b>>; MAX_HEADERS];

/// Empty room for a response's header lines.
pub fn header_slots<'b>() -> HeaderSlots<'b> {
    [MaybeUninit::uninit(); MAX_HEADERS]
}

/// The largest response head accepted from a server (and the largest trailer section).
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// A complete response head as it came, borrowed from the read buffer.
pub struct ResponseHead<'h, 'b> {
    pub status: u16,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub reason: &'b str,
    pub headers: &'h [httparse::Header<'b>],
    pub conn: ConnectionTokens<'b>,
    pub head_len: usize,
}

/// What the request asked that decides how its response is read.
#[derive(Clone, Copy, Debug)]
pub struct Asked<'a> {
    /// A HEAD request: the response has no body whatever it announces.
    pub is_head: bool,
    /// The protocol the request asked to switch to (and its route allows).
    pub upgrade: Option<&'a str>,
}

/// What a response head says about its body and the server connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub head_len: usize,
    /// Framing of the body as the server sends it.
    pub framing: Framing,
    /// The server connection may serve another request after this body.
    pub reusable: bool,
    /// A 1xx interim response: another head follows.
    pub interim: bool,
    /// `101 Switching Protocols`: from here on the connection is a tunnel.
    pub upgraded: bool,
}

/// Parses the response head at the start of `buf` into `headers`; `Ok(None)` means read
/// more.
pub fn parse<'h, 'b>(
    buf: &'b [u8],
    headers: &'h mut [MaybeUninit<httparse::Header<'b>>],
) -> Result<Option<ResponseHead<'h, 'b>>, &'static str> {
    let mut res = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut res, buf, headers);
    let head_len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err("too many response headers"),
        Err(_) => return Err("malformed response head"),
    };
    let httparse::Response {
        code,
        version,
        reason,
        headers,
    } = res;
    let (Some(status), Some(minor)) = (code, version) else {
        return Err("malformed status line");
    };
    Ok(Some(ResponseHead {
        status,
        minor,
        reason: reason.unwrap_or(""),
        conn: ConnectionTokens::read(headers),
        headers,
        head_len,
    }))
}

/// What the head says about the body and the connection.
pub fn classify(head: &ResponseHead<'_, '_>, asked: Asked<'_>) -> Result<Response, &'static str> {
    let code = head.status;
    let upgraded = code == 101;
    if upgraded && !switches_to(head.headers, asked.upgrade) {
        return Err("101 Switching Protocols to a protocol the request did not ask for");
    }
    let interim = (100..200).contains(&code) && !upgraded;
    // The headers are read once (`None`: they declare no framing), for both uses below.
    let declared = declared_framing(head.headers, Framing::None);
    let framing = if interim || asked.is_head || code == 204 || code == 304 {
        Framing::None
    } else {
        match &declared {
            Ok(Framing::None) => Framing::UntilClose,
            Ok(declared) => *declared,
            Err(e) => return Err(e.as_str()),
        }
    };
    // A HEAD/204/304 response that announces a body is not reused: if the server sends
    // those bytes anyway, they would be read as the next client's response.
    let announced = declared.unwrap_or(Framing::UntilClose);
    let silent = framing != Framing::None
        || interim
        || matches!(announced, Framing::None | Framing::Length(0));
    let reusable = silent
        && !upgraded
        && framing != Framing::UntilClose
        && !head.conn.close
        && (head.minor == 1 || head.conn.keep_alive);
    Ok(Response {
        status: code,
        head_len: head.head_len,
        framing,
        reusable,
        interim,
        upgraded,
    })
}

/// True when the response's `Upgrade` names the protocol that was asked for.
fn switches_to(headers: &[httparse::Header<'_>], asked: Option<&str>) -> bool {
    let Some(asked) = asked else { return false };
    let given = headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("upgrade"))
        .map(|h| trim_ows(h.value));
    given.is_some_and(|g| g.eq_ignore_ascii_case(asked.as_bytes()))
}
