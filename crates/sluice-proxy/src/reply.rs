//! Responses sluice writes itself: errors, with a short plain-text body.

/// Appends a complete error response for `status` to `out`.
pub fn error(out: &mut Vec<u8>, status: u16, close: bool) {
    let reason = reason(status);
    out.extend_from_slice(
        format!(
            "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n",
            reason.len() + 5
        )
        .as_bytes(),
    );
    if close {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(format!("\r\n{status} {reason}\n").as_bytes());
}

fn reason(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn content_length_matches_the_body() {
        let mut out = Vec::new();
        super::error(&mut out, 503, true);
        let text = String::from_utf8(out).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        assert!(head.contains("Connection: close"));
    }
}
