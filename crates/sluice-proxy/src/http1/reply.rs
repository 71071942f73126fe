//! Responses sluice writes itself: errors, with a short plain-text body.

/// A header some of sluice's own replies carry.
#[derive(Clone, Copy, Debug)]
pub enum Extra<'a> {
    /// `Retry-After`, in seconds (429, 503).
    RetryAfter(u32),
    /// `WWW-Authenticate: Basic realm="..."` (401), with the realm.
    Authenticate(&'a str),
}

impl Extra<'_> {
    /// The header's name and value.
    pub fn header(&self) -> (&'static str, String) {
        match self {
            Extra::RetryAfter(seconds) => ("Retry-After", seconds.to_string()),
            Extra::Authenticate(realm) => {
                let quoted = realm.replace('\\', "\\\\").replace('"', "\\\"");
                ("WWW-Authenticate", format!("Basic realm=\"{quoted}\""))
            }
        }
    }
}

/// Appends a complete error response for `status` to `out`, with the `extra` header
/// when given.
pub fn error(out: &mut Vec<u8>, status: u16, close: bool, extra: Option<Extra<'_>>) {
    let reason = reason(status);
    out.extend_from_slice(
        format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n",
            reason.len() + 5
        )
        .as_bytes(),
    );
    if let Some(extra) = extra {
        let (name, value) = extra.header();
        out.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
    }
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(format!("\r\n{status} {reason}\n").as_bytes());
}

/// The reason phrase of a status: RFC 9110's for every status it defines (and 429 of
/// RFC 6585), so a client never sees a made-up one.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        203 => "Non-Authoritative Information",
        204 => "No Content",
        205 => "Reset Content",
        206 => "Partial Content",
        300 => "Multiple Choices",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        305 => "Use Proxy",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => match status / 100 {
            4 => "Client Error",
            5 => "Server Error",
            _ => "Unknown",
        },
    }
}

/// Every status sluice itself sends.
#[cfg(test)]
const SENT_BY_SLUICE: [u16; 16] = [
    100, 206, 301, 304, 400, 403, 404, 405, 408, 416, 431, 500, 501, 502, 503, 504,
];

#[cfg(test)]
mod tests {
    #[test]
    fn every_status_sluice_sends_has_its_reason_phrase() {
        for status in super::SENT_BY_SLUICE {
            let reason = super::reason(status);
            assert!(
                !["Client Error", "Server Error", "Unknown"].contains(&reason),
                "{status} has no reason phrase of its own"
            );
        }
        assert_eq!(super::reason(501), "Not Implemented");
    }

    #[test]
    fn content_length_matches_the_body() {
        let mut out = Vec::new();
        super::error(&mut out, 503, true, Some(super::Extra::RetryAfter(1)));
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        assert!(head.contains("Connection: close"));
        assert!(head.contains("\r\nRetry-After: 1\r\n"), "{head}");
    }

    #[test]
    fn a_realm_is_quoted() {
        let mut out = Vec::new();
        super::error(
            &mut out,
            401,
            false,
            Some(super::Extra::Authenticate("a \"b\" \\c")),
        );
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("\r\nWWW-Authenticate: Basic realm=\"a \\\"b\\\" \\\\c\"\r\n"),
            "{text}"
        );
    }
}
