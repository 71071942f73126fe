//! The HTTP/1.1 head an HTTP/2 request stands for: the request line from `:method` and
//! `:path`, `Host` from `:authority`, the fields, cookies joined into one line (RFC 9113
//! section 8.2.3) and chunked framing for a body of unknown length.
//!
//! The stages take it as parsed fields borrowed from the stream's header map, so the head
//! is neither written out nor parsed again (callgrind: about 1,500 instructions a
//! stream). Its text is written only for the access log and for "no route" errors.

use crate::http1::request::{reject, RawRequest, Rejection, MAX_HEADERS};
use bytes::BytesMut;
use http::request::Parts;

/// Fields a stand-in head holds on the stack; a request with more takes a `Vec`.
pub const ON_STACK: usize = 32;

/// Room for the fields of `parts`' stand-in head: they, `Host` and the framing.
pub fn slots_needed(parts: &Parts) -> usize {
    parts.headers.len() + 2
}

/// Joins the request's cookie fields into `out` when it has more than one (its only
/// cookie is used as it is).
pub fn join_cookies(parts: &Parts, out: &mut Vec<u8>) {
    let mut cookies = parts.headers.get_all(http::header::COOKIE).iter();
    if let (Some(first), Some(_)) = (cookies.next(), cookies.next()) {
        out.extend_from_slice(first.as_bytes());
        for value in parts.headers.get_all(http::header::COOKIE).iter().skip(1) {
            out.extend_from_slice(b"; ");
            out.extend_from_slice(value.as_bytes());
        }
    }
}

/// Why the request's fields make it malformed (RFC 9113 section 8.2.1), if they do: a
/// value that starts or ends with a space or a tab. The h2 crate passes such a value on
/// (it checks only what HTTP/1.1 forbids too); the stream must be reset, not answered.
pub fn malformed(parts: &Parts) -> Option<&'static str> {
    let padded = |b: Option<&u8>| matches!(b, Some(b' ' | b'\t'));
    parts
        .headers
        .values()
        .any(|v| padded(v.as_bytes().first()) || padded(v.as_bytes().last()))
        .then_some("a field value starts or ends with whitespace (RFC 9113 8.2.1)")
}

/// The stand-in head of a request, its fields written into `slots` (at least
/// [`slots_needed`] long). `joined`: what [`join_cookies`] made. `body`: the stream has
/// DATA to come.
pub fn stand_in<'h, 'b>(
    parts: &'b Parts,
    body: bool,
    joined: &'b [u8],
    slots: &'h mut [httparse::Header<'b>],
) -> Result<RawRequest<'h, 'b>, Rejection> {
    if parts.method == http::Method::CONNECT {
        return Err(reject(501, "CONNECT over HTTP/2 is not supported"));
    }
    let method = parts.method.as_str();
    let target = target(parts)?;
    let mut fields = Fields {
        slots,
        n: 0,
        // The request line ("GET / HTTP/1.1\r\n") and the blank line.
        len: method.len() + target.len() + 14,
    };
    let authority = parts.uri.authority();
    if let Some(a) = authority {
        fields.push("host", a.as_str().as_bytes())?;
    }
    let mut cookie = None;
    for (name, value) in &parts.headers {
        // Never padded: `malformed` refused the stream first.
        let value = value.as_bytes();
        match name.as_str() {
            "host" if authority.is_some() => {}
            "cookie" => cookie = Some(value),
            n => fields.push(n, value)?,
        }
    }
    if let Some(only) = cookie {
        fields.push("cookie", if joined.is_empty() { only } else { joined })?;
    }
    if body && !parts.headers.contains_key(http::header::CONTENT_LENGTH) {
        fields.push("transfer-encoding", b"chunked")?;
    }
    let Fields { slots, n, len } = fields;
    Ok(RawRequest {
        method,
        target,
        minor: 1,
        headers: &slots[..n],
        head_len: len,
    })
}

/// `:path` (with its query), which must be what an HTTP/1.1 request line may carry.
fn target(parts: &Parts) -> Result<&str, Rejection> {
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    if target.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(target)
    } else {
        Err(reject(400, "malformed :path"))
    }
}

/// The fields of a stand-in head as they are filled in, and the length of its text.
struct Fields<'h, 'b> {
    slots: &'h mut [httparse::Header<'b>],
    n: usize,
    len: usize,
}

impl<'b> Fields<'_, 'b> {
    fn push(&mut self, name: &'b str, value: &'b [u8]) -> Result<(), Rejection> {
        if self.n == MAX_HEADERS {
            return Err(reject(431, "too many header lines"));
        }
        self.slots[self.n] = httparse::Header { name, value };
        self.n += 1;
        self.len += name.len() + value.len() + 4;
        Ok(())
    }
}

/// The text of a stand-in head, for the access log and error messages.
pub fn write(raw: &RawRequest<'_, '_>, out: &mut BytesMut) {
    for part in [raw.method, " ", raw.target, " HTTP/1.1\r\n"] {
        out.extend_from_slice(part.as_bytes());
    }
    for h in raw.headers {
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(request: http::Request<()>, body: bool) -> String {
        let (parts, ()) = request.into_parts();
        let mut joined = Vec::new();
        join_cookies(&parts, &mut joined);
        let mut slots = vec![httparse::EMPTY_HEADER; slots_needed(&parts)];
        let raw = stand_in(&parts, body, &joined, &mut slots).unwrap();
        let mut out = BytesMut::new();
        write(&raw, &mut out);
        let text = String::from_utf8(out.to_vec()).unwrap();
        // The length the stand-in head reports is that of its text.
        assert_eq!(raw.head_len, text.len());
        text
    }

    #[test]
    fn a_stream_stands_for_an_http1_head() {
        let request = http::Request::builder()
            .method("POST")
            .uri("https://shop.test:8443/cart?id=1")
            .header("cookie", "a=1")
            .header("x-one", "1")
            .header("cookie", "b=2")
            .body(())
            .unwrap();
        assert_eq!(
            text_of(request, true),
            "POST /cart?id=1 HTTP/1.1\r\nhost: shop.test:8443\r\nx-one: 1\r\ncookie: a=1; b=2\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let request = http::Request::builder()
            .uri("https://a.test/")
            .header("content-length", "0")
            .header("cookie", "only=1")
            .header("x-inner", "a b")
            .body(())
            .unwrap();
        assert_eq!(
            text_of(request, false),
            "GET / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 0\r\nx-inner: a b\r\ncookie: only=1\r\n\r\n"
        );
    }

    #[test]
    fn padded_values_are_malformed_and_inner_spaces_are_not() {
        let parts = |value: &str| {
            let request = http::Request::builder().header("x-a", value);
            request.body(()).unwrap().into_parts().0
        };
        for padded in [" v", "v ", "\tv", "v\t", " "] {
            assert!(malformed(&parts(padded)).is_some(), "{padded:?}");
        }
        for fine in ["v", "a b", "a\tb", ""] {
            assert_eq!(malformed(&parts(fine)), None, "{fine:?}");
        }
    }

    #[test]
    fn connect_and_too_many_fields_are_refused() {
        let (parts, ()) = http::Request::builder()
            .method("CONNECT")
            .uri("a.test:443")
            .body(())
            .unwrap()
            .into_parts();
        let e = stand_in(&parts, false, &[], &mut []).unwrap_err();
        assert_eq!(e.status, 501);

        let mut request = http::Request::builder().uri("https://a.test/");
        for i in 0..MAX_HEADERS {
            request = request.header(format!("x-{i}"), "1");
        }
        let (parts, ()) = request.body(()).unwrap().into_parts();
        let mut slots = vec![httparse::EMPTY_HEADER; slots_needed(&parts)];
        let e = stand_in(&parts, false, &[], &mut slots).unwrap_err();
        assert_eq!(e.status, 431);
    }
}
