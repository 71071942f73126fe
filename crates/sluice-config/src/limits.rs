//! The overload keys of an upstream: `max_conns` (per server, or on the upstream for
//! all its servers), and the queue of requests waiting for a server with room
//! (`queue_timeout`, `max_queue`); and a listener's `max_conns_per_client`.

use crate::model::{QueuePolicy, Server};
use crate::reader::Reader;
use std::time::Duration;
use toml_edit::TableLike;

/// Largest `max_conns`: far above what one server takes, low enough to stay a u32 count.
const MAX_CONNS: u64 = 1_000_000;

/// `max_conns` of a server or an upstream: at least 1 when given.
pub fn max_conns(r: &mut Reader, t: &dyn TableLike) -> Option<u32> {
    let hint = "leave it out for no limit, or drain the server to stop its traffic";
    count(r, t, "max_conns", hint)
}

/// A count of connections under `key`: at least 1 when given (0 is refused with `hint`).
pub(crate) fn count(r: &mut Reader, t: &dyn TableLike, key: &str, hint: &str) -> Option<u32> {
    match r.integer(t, key, MAX_CONNS)? {
        0 => {
            let span = t.get(key).and_then(|v| v.span());
            r.error(span, format!("`{key}` must be at least 1"), hint);
            None
        }
        n => Some(n as u32),
    }
}

/// The upstream's `max_conns` holds for every server that has none of its own.
pub fn apply_max_conns(servers: &mut [Server], upstream: Option<u32>) {
    for s in servers.iter_mut().filter(|s| s.max_conns.is_none()) {
        s.max_conns = upstream;
    }
}

/// A listener's `max_conns_per_client`: at least 1 when given.
pub fn per_client(r: &mut Reader, t: &dyn TableLike) -> Option<u32> {
    count(r, t, "max_conns_per_client", "leave it out for no limit")
}

/// `limit = "adaptive"` on an upstream.
pub fn adaptive(r: &mut Reader, t: &dyn TableLike) -> bool {
    match r.string(t, "limit") {
        Some((s, _)) if s == "adaptive" => true,
        Some((s, span)) => {
            r.error(
                span,
                format!("unknown limit \"{s}\""),
                "write limit = \"adaptive\" (or max_conns = N for a fixed limit)",
            );
            false
        }
        None => false,
    }
}

/// `queue_timeout` (5 s by default) and `max_queue` (10,000 by default).
pub fn queue(r: &mut Reader, t: &dyn TableLike) -> QueuePolicy {
    QueuePolicy {
        timeout: r
            .timeout(t, "queue_timeout")
            .unwrap_or(Duration::from_secs(5)),
        max: r.integer(t, "max_queue", 10_000_000).unwrap_or(10_000) as usize,
    }
}
