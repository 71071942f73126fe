//! The rate limit of the lines an outage repeats ("request failed", "retrying on
//! another server"): the first line of a kind (per line, upstream, server and kind of
//! failure) is logged, the next ones within [`WINDOW`] counted, and the first after it
//! logged with that count. HAProxy logs a server's state changes rather than each
//! request; this keeps each request's line while an outage lasts a few lines a second.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a line speaks for the others like it.
pub const WINDOW: Duration = Duration::from_secs(1);

/// The line's message, the upstream, the server and the kind of failure.
type Key = (&'static str, String, Option<SocketAddr>, &'static str);

/// Since when each kind of line was last logged, and how many like it since.
static SEEN: Mutex<Option<HashMap<Key, (Instant, u64)>>> = Mutex::new(None);

/// `Some(suppressed)` when this `line` is to be logged (with the count not logged since
/// the last one like it), `None` when it is one of those.
pub fn admit(
    line: &'static str,
    upstream: Option<&str>,
    server: Option<SocketAddr>,
    kind: &'static str,
) -> Option<u64> {
    let now = Instant::now();
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    let key = (line, upstream.unwrap_or("-").to_string(), server, kind);
    match seen.get_mut(&key) {
        Some((since, count)) if now.duration_since(*since) < WINDOW => {
            *count += 1;
            None
        }
        Some((since, count)) => {
            let suppressed = std::mem::take(count);
            *since = now;
            Some(suppressed)
        }
        None => {
            // Bounded: an entry per line, server and kind, dropped when the map grows
            // past what any config lists (servers come and go with reloads and DNS).
            if seen.len() >= 4096 {
                seen.clear();
            }
            seen.insert(key, (now, 0));
            Some(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::admit;

    #[test]
    fn repeated_lines_are_counted_between_lines() {
        let server = Some("127.0.0.1:1".parse().unwrap());
        assert_eq!(admit("failed", Some("t"), server, "connect"), Some(0));
        for _ in 0..99 {
            assert_eq!(admit("failed", Some("t"), server, "connect"), None);
        }
        // Another kind, server or line has its own.
        assert_eq!(admit("failed", Some("t"), server, "timeout"), Some(0));
        assert_eq!(admit("retrying", Some("t"), server, "connect"), Some(0));
        std::thread::sleep(super::WINDOW);
        assert_eq!(admit("failed", Some("t"), server, "connect"), Some(99));
    }
}
