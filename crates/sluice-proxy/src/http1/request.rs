//! Parsing a client's request head: bytes to a request line and header fields, and
//! nothing more. Whether the request may be forwarded is `check.rs`'s question; what goes
//! to the server is `encode.rs`'s.

use std::mem::MaybeUninit;

/// The most header lines a request may have; more gets 431.
pub const MAX_HEADERS: usize = 100;

/// A request that cannot be forwarded, with the status it gets. Every codec error a
/// client's request meets ends as one; `Failure` is made from it in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Rejection {
    pub status: u16,
    pub reason: &'static str,
}

pub fn reject(status: u16, reason: &'static str) -> Rejection {
    Rejection { status, reason }
}

/// Whether a head of `lines` header lines, as sluice would forward it, stays within the
/// limit sluice enforces on what it receives: a server behind it with the same limit
/// (HAProxy's is 101) must not refuse what sluice sends.
pub fn forwarded_lines_fit(lines: usize) -> Result<(), Rejection> {
    if lines > MAX_HEADERS {
        return Err(reject(
            431,
            "too many header lines with the forwarding headers added",
        ));
    }
    Ok(())
}

/// A complete request head as it came, borrowed from the read buffer.
#[derive(Debug)]
pub struct RawRequest<'h, 'b> {
    pub method: &'b str,
    pub target: &'b str,
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub minor: u8,
    pub headers: &'h [httparse::Header<'b>],
    /// Bytes of the head, including the blank line that ends it.
    pub head_len: usize,
}

/// Room for a request's header lines, left uninitialised until parsed (initialising
/// 3 KiB on every request showed up in instruction counts).
pub type HeaderSlots<'b> = [MaybeUninit<httparse::Header<'b>>; MAX_HEADERS];

/// Empty room for a request's header lines.
pub fn header_slots<'b>() -> HeaderSlots<'b> {
    [MaybeUninit::uninit(); MAX_HEADERS]
}

/// Parses the head at the start of `buf` into `headers`. `Ok(None)`: incomplete, read
/// more.
pub fn parse<'h, 'b>(
    buf: &'b [u8],
    headers: &'h mut [MaybeUninit<httparse::Header<'b>>],
) -> Result<Option<RawRequest<'h, 'b>>, Rejection> {
    let mut req = httparse::Request::new(&mut []);
    let head_len = match req.parse_with_uninit_headers(buf, headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(reject(431, "too many header lines")),
        Err(_) => return Err(reject(400, "malformed request head")),
    };
    let httparse::Request {
        method,
        path,
        version,
        headers,
    } = req;
    let (Some(method), Some(target), Some(minor)) = (method, path, version) else {
        return Err(reject(400, "malformed request line"));
    };
    Ok(Some(RawRequest {
        method,
        target,
        minor,
        headers,
        head_len,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_parse_or_ask_for_more() {
        let mut headers = header_slots();
        let raw = b"GET /a HTTP/1.1\r\nHost: a\r\n\r\nrest";
        let head = parse(raw, &mut headers).unwrap().unwrap();
        assert_eq!((head.method, head.target, head.minor), ("GET", "/a", 1));
        assert_eq!((head.headers.len(), head.head_len), (1, raw.len() - 4));
        let mut headers = header_slots();
        assert!(parse(b"GET / HTTP/1.1\r\nHost: a\r\n", &mut headers)
            .unwrap()
            .is_none());
        let mut headers = header_slots();
        let bad = parse(b"G\0T / HTTP/1.1\r\n\r\n", &mut headers).unwrap_err();
        assert_eq!(bad.status, 400);
    }
}
