//! Whether a response is compressed, and what that changes in its head: read from the
//! server's head once, when it is prepared for the client.

use super::{Plan, Recode};
use sluice_config::Compress;

/// What the route does to a response: `status` with `length` bytes announced (`None`:
/// chunked or until close), with a body to send when `has_body`, for a request whose
/// plan is `plan`. A response that could be compressed gets `Vary` (unless it names
/// `Accept-Encoding` already), compressed or not; it is compressed when the plan has a
/// coding and it is long enough.
pub fn recode(
    compress: &Compress,
    plan: Plan,
    (status, length, has_body): (u16, Option<u64>, bool),
    headers: &[httparse::Header<'_>],
) -> Recode {
    // 206 is part of a representation, 204 and 304 have none, HEAD and 1xx no body.
    if !has_body || !(200..600).contains(&status) || matches!(status, 204 | 206 | 304) {
        return Recode::default();
    }
    let mut read = Read::default();
    for h in headers {
        read.field(h.name, h.value);
    }
    let compressible = read.media_type.is_some_and(|t| compress.compresses(&t));
    if read.coded || read.ranged || read.no_transform || !compressible {
        return Recode::default();
    }
    let coding = match plan {
        Plan::Encode(c) if length.is_none_or(|n| n >= compress.min_length) => Some(c),
        _ => None,
    };
    Recode {
        vary: !read.varies,
        coding,
    }
}

/// What the fields of a response head say of its compression.
#[derive(Default)]
struct Read {
    /// `Content-Type` without parameters, lower-case.
    media_type: Option<String>,
    /// A `Content-Encoding` other than `identity`: compressed already.
    coded: bool,
    /// `Content-Range`: a part, whatever its status says.
    ranged: bool,
    /// `Cache-Control: no-transform` (RFC 9110 7.7: a proxy must not change the body).
    no_transform: bool,
    /// `Vary` names `Accept-Encoding` (or `*`) already.
    varies: bool,
}

impl Read {
    fn field(&mut self, name: &str, value: &[u8]) {
        let is = |n: &str| name.eq_ignore_ascii_case(n);
        if is("content-type") {
            let media = value.split(|b| *b == b';').next().unwrap_or(b"");
            let media = String::from_utf8_lossy(media.trim_ascii()).to_ascii_lowercase();
            self.media_type = Some(media);
        } else if is("content-encoding") {
            let v = value.trim_ascii();
            self.coded |= !v.is_empty() && !v.eq_ignore_ascii_case(b"identity");
        } else if is("content-range") {
            self.ranged = true;
        } else if is("cache-control") {
            self.no_transform |= has_token(value, b"no-transform");
        } else if is("vary") {
            self.varies |= has_token(value, b"accept-encoding") || has_token(value, b"*");
        }
    }
}

/// True when the comma-separated list `value` holds `token` (without case).
fn has_token(value: &[u8], token: &[u8]) -> bool {
    value
        .split(|b| *b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// What becomes of a response header when the body is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Keep,
    /// `Content-Length` (the compressed length is not known before the end),
    /// `Accept-Ranges` (ranges of the compressed body are not served) and a
    /// `Content-Encoding: identity` (the new coding is the body's only one).
    Drop,
    /// A strong `ETag` becomes weak: the bytes differ, the content does not (nginx does
    /// the same, so caches and `If-None-Match` keep working).
    Weaken,
}

pub fn field(name: &str, value: &[u8]) -> Field {
    let is = |n: &str| name.eq_ignore_ascii_case(n);
    if is("content-length") || is("accept-ranges") || is("content-encoding") {
        Field::Drop
    } else if name.eq_ignore_ascii_case("etag") && value.starts_with(b"\"") {
        Field::Weaken
    } else {
        Field::Keep
    }
}

/// The header lines compression adds, `Name: value\r\n` each.
pub fn put_lines(out: &mut Vec<u8>, recode: Recode) {
    if recode.vary {
        out.extend_from_slice(b"Vary: Accept-Encoding\r\n");
    }
    if let Some(c) = recode.coding {
        out.extend_from_slice(b"Content-Encoding: ");
        out.extend_from_slice(c.token().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compress::Coding;

    fn compress() -> Compress {
        Compress {
            gzip: Some(1),
            br: None,
            zstd: None,
            types: vec!["text/*".into(), "application/json".into()],
            min_length: 100,
            precompressed: false,
        }
    }

    fn recoded(status: u16, length: Option<u64>, fields: &[(&str, &str)]) -> Recode {
        let headers: Vec<httparse::Header<'_>> = fields
            .iter()
            .map(|(name, value)| httparse::Header {
                name,
                value: value.as_bytes(),
            })
            .collect();
        let plan = Plan::Encode(Coding::Gzip);
        recode(&compress(), plan, (status, length, true), &headers)
    }

    #[test]
    fn a_compressible_response_is_compressed_and_varies() {
        let json = [("Content-Type", "Application/JSON; charset=utf-8")];
        let coded = Recode {
            vary: true,
            coding: Some(Coding::Gzip),
        };
        assert_eq!(recoded(200, Some(5000), &json), coded);
        assert_eq!(recoded(200, None, &json), coded);
        assert_eq!(recoded(404, Some(100), &json), coded);
        let varied = [
            ("Content-Type", "text/html"),
            ("Vary", "Origin, accept-encoding"),
        ];
        assert!(!recoded(200, None, &varied).vary);
        let short = Recode {
            vary: true,
            coding: None,
        };
        assert_eq!(recoded(200, Some(99), &json), short);
    }

    #[test]
    fn parts_encoded_bodies_other_types_and_no_transform_go_as_they_are() {
        let none = Recode::default();
        let json = ("Content-Type", "application/json");
        assert_eq!(recoded(206, Some(5000), &[json]), none);
        assert_eq!(recoded(304, None, &[json]), none);
        assert_eq!(recoded(204, None, &[json]), none);
        assert_eq!(
            recoded(200, None, &[json, ("Content-Encoding", "gzip")]),
            none
        );
        assert_eq!(
            recoded(200, None, &[json, ("Content-Range", "bytes 0-1/2")]),
            none
        );
        assert_eq!(
            recoded(
                200,
                None,
                &[json, ("Cache-Control", "public, no-transform")]
            ),
            none
        );
        assert_eq!(recoded(200, None, &[("Content-Type", "image/png")]), none);
        assert_eq!(
            recoded(200, None, &[("Content-Type", "text/event-stream")]),
            none
        );
        assert_eq!(recoded(200, None, &[]), none);
        let identity = [json, ("Content-Encoding", "identity")];
        assert!(recoded(200, None, &identity).coding.is_some());
    }

    #[test]
    fn a_compressed_body_loses_its_length_and_its_etag_weakens() {
        assert_eq!(field("Content-Length", b"5"), Field::Drop);
        assert_eq!(field("accept-ranges", b"bytes"), Field::Drop);
        // Only an `identity` one reaches a compressed response: it is not sent twice.
        assert_eq!(field("Content-Encoding", b"identity"), Field::Drop);
        assert_eq!(field("ETag", b"\"abc\""), Field::Weaken);
        assert_eq!(field("ETag", b"W/\"abc\""), Field::Keep);
        assert_eq!(field("Content-Type", b"text/html"), Field::Keep);
    }
}
