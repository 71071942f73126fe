//! Validating `Host` and the authority of an absolute-form target (RFC 9112 section 3.2).
//!
//! Both must be `uri-host [ ":" port ]` of RFC 3986: an IPv6 literal in brackets, or a
//! registered name (which covers IPv4 addresses), with an optional port. sluice routes by
//! this value and copies it into `Host` and `X-Forwarded-Host`, so anything a server
//! could read differently (a space, a userinfo `user@`, a list `a, b`) is refused.

use std::net::Ipv6Addr;

/// True when `authority` is a host with an optional port, and nothing else.
pub fn is_valid(authority: &str) -> bool {
    let (host, port) = match authority.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((literal, after)) => {
                if literal.parse::<Ipv6Addr>().is_err() {
                    return false;
                }
                (None, after)
            }
            None => return false,
        },
        None => match authority.bytes().position(|b| b == b':') {
            Some(i) => (Some(&authority[..i]), &authority[i..]),
            None => (Some(authority), ""),
        },
    };
    host.is_none_or(is_reg_name) && is_port(port)
}

/// `""` or `":" 1*5DIGIT` within the port range. RFC 3986 allows an empty port after the
/// colon; no client sends one, so it is refused.
fn is_port(port: &str) -> bool {
    let Some(digits) = port.strip_prefix(':') else {
        return port.is_empty();
    };
    (1..=5).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && digits.parse::<u32>().is_ok_and(|p| p <= 65535)
}

/// The bytes a registered name may hold as they are (besides `%`-escapes), by value:
/// one table load per byte (this runs on every request).
const REG_NAME: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'_' | b'~')
            || matches!(
                c,
                b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b';' | b'='
            );
        b += 1;
    }
    table
};

/// A registered name of RFC 3986: unreserved characters, percent-encoded bytes and
/// sub-delimiters, except the comma: a host is one name, and `a,b` reads as a list.
fn is_reg_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    if bytes.is_empty() {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                return false;
            }
            i += 3;
            continue;
        }
        if !REG_NAME[usize::from(b)] {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::is_valid;

    #[test]
    fn hosts_and_ports() {
        for ok in [
            "example.com",
            "Example.COM:8080",
            "a",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:443",
            "[2001:db8::7]:65535",
            "xn--bcher-kva.example",
            "my_host.local.",
            "a%2Db",
        ] {
            assert!(is_valid(ok), "{ok} refused");
        }
        for bad in [
            "",
            "a b",
            "a, b",
            "a,b",
            "user@host",
            "user:pw@host",
            "host:",
            "host:80:80",
            "host:65536",
            "host:+80",
            "host:123456",
            "[::1",
            "[::1]x",
            "[::1]:",
            "[nothex]",
            "[v1.fe]",
            "::1",
            "a/b",
            "a\\b",
            "a?b",
            "a#b",
            "a%zz",
            "a%2",
            "caf\u{e9}",
            "a\tb",
            ":80",
        ] {
            assert!(!is_valid(bad), "{bad:?} accepted");
        }
    }
}
