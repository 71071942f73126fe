//! What request and response heads share: body framing, hop-by-hop headers, the
//! `Connection` header's tokens.

/// How a message body is delimited on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    None,
    Length(u64),
    Chunked,
    /// The body runs until the sender closes the connection (responses only).
    UntilClose,
}

/// Headers that describe one hop and are never forwarded as they are.
pub fn is_hop_by_hop(name: &str) -> bool {
    const HOP: [&str; 7] = [
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "transfer-encoding",
        "upgrade",
        "proxy-authenticate",
    ];
    HOP.iter().any(|h| h.eq_ignore_ascii_case(name))
}

/// What the `Connection` headers of a message say.
#[derive(Debug, Default)]
pub struct ConnectionTokens<'a> {
    pub close: bool,
    pub keep_alive: bool,
    /// The sender asks to switch protocols (the `Upgrade` header says to which).
    pub upgrade: bool,
    /// Other tokens: names of further headers that are hop-by-hop for this message.
    pub extra: Vec<&'a str>,
}

impl<'a> ConnectionTokens<'a> {
    pub fn read(headers: &[httparse::Header<'a>]) -> Self {
        let mut tokens = ConnectionTokens::default();
        for h in headers
            .iter()
            .filter(|h| h.name.eq_ignore_ascii_case("connection"))
        {
            let Ok(value) = std::str::from_utf8(h.value) else {
                continue;
            };
            let words = value.split(',').map(|t| t.trim_matches([' ', '\t']));
            for token in words.filter(|t| !t.is_empty()) {
                if token.eq_ignore_ascii_case("close") {
                    tokens.close = true;
                } else if token.eq_ignore_ascii_case("keep-alive") {
                    tokens.keep_alive = true;
                } else if token.eq_ignore_ascii_case("upgrade") {
                    tokens.upgrade = true;
                } else {
                    tokens.extra.push(token);
                }
            }
        }
        tokens
    }

    /// True when header `name` must not be forwarded for this message. `Content-Length`
    /// is never dropped on a `Connection` token's say-so: the body is still framed by it.
    pub fn strips(&self, name: &str) -> bool {
        is_hop_by_hop(name)
            || (!name.eq_ignore_ascii_case("content-length")
                && self.extra.iter().any(|t| t.eq_ignore_ascii_case(name)))
    }
}

/// Why a message's framing headers cannot be trusted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.as_str())]
pub enum FramingError {
    BadContentLength,
    ConflictingContentLength,
    /// Both Transfer-Encoding and Content-Length: the classic request-smuggling shape.
    LengthAndChunked,
    /// A transfer coding other than a bare `chunked`.
    UnsupportedCoding,
    /// More than one Transfer-Encoding line: a list split over lines is a classic way to
    /// make two parsers disagree on which coding is last.
    RepeatedTransferEncoding,
}

impl FramingError {
    /// What is wrong, in words (also its `Display`): a `Rejection`'s reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            FramingError::BadContentLength => "invalid Content-Length",
            FramingError::ConflictingContentLength => "conflicting Content-Length headers",
            FramingError::LengthAndChunked => "both Transfer-Encoding and Content-Length",
            FramingError::UnsupportedCoding => "Transfer-Encoding other than chunked",
            FramingError::RepeatedTransferEncoding => "more than one Transfer-Encoding header",
        }
    }
}

/// The framing that `Transfer-Encoding` and `Content-Length` headers declare, with
/// `absent` used when there is neither.
pub fn declared_framing(
    headers: &[httparse::Header<'_>],
    absent: Framing,
) -> Result<Framing, FramingError> {
    let mut length: Option<(u64, &[u8])> = None;
    let mut chunked = None;
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = parse_length(h.value).ok_or(FramingError::BadContentLength)?;
            // Repeats must be the same bytes: `5` and `005` are one number to RFC 9110
            // but need not be to the next parser.
            if length.is_some_and(|(_, first)| trim_ows(first) != trim_ows(h.value)) {
                return Err(FramingError::ConflictingContentLength);
            }
            length = Some((n, h.value));
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if chunked.is_some() {
                return Err(FramingError::RepeatedTransferEncoding);
            }
            // Only a bare `chunked`: sluice re-frames bodies as plain chunked, so another
            // coding in front of it (gzip, chunked) would be silently lost.
            chunked = Some(trim_ows(h.value).eq_ignore_ascii_case(b"chunked"));
        }
    }
    match (chunked, length.map(|(n, _)| n)) {
        (Some(_), Some(_)) => Err(FramingError::LengthAndChunked),
        (Some(true), None) => Ok(Framing::Chunked),
        (Some(false), None) => Err(FramingError::UnsupportedCoding),
        (None, Some(n)) => Ok(Framing::Length(n)),
        (None, None) => Ok(absent),
    }
}

/// A field value without the optional whitespace around it: spaces and tabs only, the
/// only whitespace HTTP knows (RFC 9110 section 5.6.3). `str::trim` would also take
/// Unicode spaces, which a server behind us would not.
pub fn trim_ows(value: &[u8]) -> &[u8] {
    let ows = |b: &u8| matches!(b, b' ' | b'\t');
    // The common case, httparse having trimmed already: nothing to trim.
    if !value.first().is_some_and(ows) && !value.last().is_some_and(ows) {
        return value;
    }
    let start = value.iter().position(|b| !matches!(b, b' ' | b'\t'));
    let end = value.iter().rposition(|b| !matches!(b, b' ' | b'\t'));
    match (start, end) {
        (Some(s), Some(e)) => &value[s..=e],
        _ => &[],
    }
}

/// A Content-Length value: ASCII digits only (no sign, no spaces inside), at most 18 of them.
fn parse_length(value: &[u8]) -> Option<u64> {
    let value = trim_ows(value);
    if value.is_empty() || value.len() > 18 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// Appends `n` in decimal, without formatting machinery (it runs on the request path).
pub fn put_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// Appends `name: value\r\n`.
pub fn put_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h<'a>(name: &'a str, value: &'a str) -> httparse::Header<'a> {
        httparse::Header {
            name,
            value: value.as_bytes(),
        }
    }

    #[test]
    fn framing_rules() {
        assert_eq!(
            declared_framing(&[h("Content-Length", "12")], Framing::None),
            Ok(Framing::Length(12))
        );
        assert_eq!(
            declared_framing(
                &[h("Content-Length", "5"), h("content-length", "5")],
                Framing::None
            ),
            Ok(Framing::Length(5))
        );
        assert_eq!(
            declared_framing(
                &[h("Content-Length", "5"), h("content-length", "6")],
                Framing::None
            ),
            Err(FramingError::ConflictingContentLength)
        );
        assert_eq!(
            declared_framing(
                &[h("Content-Length", "5"), h("content-length", "005")],
                Framing::None
            ),
            Err(FramingError::ConflictingContentLength)
        );
        assert_eq!(
            declared_framing(&[h("Content-Length", "-1")], Framing::None),
            Err(FramingError::BadContentLength)
        );
        assert_eq!(
            declared_framing(&[h("Content-Length", "1,1")], Framing::None),
            Err(FramingError::BadContentLength)
        );
        assert_eq!(
            declared_framing(&[h("Transfer-Encoding", " Chunked")], Framing::None),
            Ok(Framing::Chunked)
        );
        assert_eq!(
            declared_framing(&[h("Transfer-Encoding", "gzip, chunked")], Framing::None),
            Err(FramingError::UnsupportedCoding)
        );
        assert_eq!(
            declared_framing(&[h("Transfer-Encoding", "gzip")], Framing::None),
            Err(FramingError::UnsupportedCoding)
        );
        assert_eq!(
            declared_framing(
                &[h("Transfer-Encoding", "chunked"), h("Content-Length", "3")],
                Framing::None
            ),
            Err(FramingError::LengthAndChunked)
        );
        assert_eq!(
            declared_framing(&[], Framing::UntilClose),
            Ok(Framing::UntilClose)
        );
    }

    #[test]
    fn decimals() {
        for n in [0u64, 7, 10, 1234567890, u64::MAX] {
            let mut out = Vec::new();
            put_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }

    #[test]
    fn connection_tokens() {
        let headers = [
            h("Connection", "Keep-Alive, X-Secret"),
            h("connection", "close"),
        ];
        let t = ConnectionTokens::read(&headers);
        assert!(t.close && t.keep_alive);
        assert!(t.strips("x-secret") && t.strips("TE") && !t.strips("x-other"));
        let t = ConnectionTokens::read(&[h("Connection", "Content-Length")]);
        assert!(!t.strips("content-length"));
    }
}
