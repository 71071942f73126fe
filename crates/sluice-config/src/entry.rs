//! The fields every server entry has, fixed (`"10.0.0.5:8080"`, `{ addr = ... }`) or
//! followed in DNS (`{ dns = ... }`): its weight, and what a host name may be.

use crate::reader::Reader;
use toml_edit::TableLike;

/// A DNS name: dot-separated labels of letters, digits, `-` and `_`, not all digits.
pub(crate) fn host_name(host: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    host.len() <= 253
        && host.split('.').all(label)
        && !host.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// A server's weight: 1 when not given, at least 1 when given.
pub(crate) fn weight(r: &mut Reader, t: &dyn TableLike) -> Option<u32> {
    match r.integer(t, "weight", 10_000).unwrap_or(1) {
        0 => {
            r.error(
                t.get("weight").and_then(|w| w.span()),
                "`weight` must be at least 1",
                "remove the server to take it out of rotation",
            );
            None
        }
        w => Some(w as u32),
    }
}
