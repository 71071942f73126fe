//! Where a request's time went over a step, from what the tiers measure of themselves:
//! the app server's own time per request (Micrometer's `http_server_requests_seconds`),
//! inside it the wait for a pooled connection and the time holding one (HikariCP's
//! `acquire` and `usage` timers), and the database's sessions (their average number over
//! throughput is the time each request spent there: Little's law), by what they did.
//! The rest of the response time is before the app: the balancer, the network, the
//! wait for a server thread (Micrometer's timer starts once a thread has the request). GC pauses (`jvm_gc_pause_seconds`) are a finding: a stall every
//! request in flight waits out, not a resource that fills.

use super::thresholds::GC_PAUSED_PCT;
use super::{round2, Delta, Load};
use crate::database::Class;
use crate::sample::{APP_REQUESTS, APP_REQUEST_SECONDS};
use serde::Serialize;

/// A request's time in parts, ms per request.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Breakdown {
    /// The mean response time the load generator measured.
    pub response_ms: f64,
    /// In the order a request meets them; a part of `depth` 1 is inside the part of
    /// depth 0 before it.
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Part {
    pub part: String,
    pub ms: f64,
    pub depth: u8,
}

/// The step's breakdown, where the app or the database measured anything.
pub(super) fn breakdown(deltas: &[Delta], load: Load) -> Option<Breakdown> {
    if load.tps <= 0.0 {
        return None;
    }
    let app = app_time(deltas);
    let mut parts = app.map_or_else(Vec::new, |(ms, n)| app_parts(deltas, load, ms, n));
    for d in deltas {
        parts.extend(database_parts(d, load, u8::from(app.is_some())));
    }
    if app.is_none() && !parts.is_empty() {
        let measured: f64 = parts.iter().filter(|p| p.depth == 0).map(|p| p.ms).sum();
        parts.push(part(
            "elsewhere (the app, the balancer, the network: not measured)",
            (load.mean_ms - measured).max(0.0),
            0,
        ));
    }
    (!parts.is_empty()).then(|| Breakdown {
        response_ms: round2(load.mean_ms),
        parts,
    })
}

/// The app servers' part, `app_ms` a request over `requests`: before them, in them, and
/// inside, HikariCP's wait for a connection and time holding one.
fn app_parts(deltas: &[Delta], load: Load, app_ms: f64, requests: f64) -> Vec<Part> {
    let mut parts = vec![
        part(
            "before the app (balancer, network, waiting for a server thread)",
            (load.mean_ms - app_ms).max(0.0),
            0,
        ),
        part("in the app server", app_ms, 0),
    ];
    let per_request = |key: &str| {
        let total: f64 = deltas.iter().map(|d| d.counter(key)).sum();
        total * 1000.0 / requests
    };
    let acquire = per_request("hikaricp_connections_acquire_seconds_sum");
    let usage = per_request("hikaricp_connections_usage_seconds_sum");
    if acquire + usage > 0.0 {
        parts.push(part("waiting for a pooled connection", acquire, 1));
        parts.push(part("holding a pooled connection", usage, 1));
        parts.push(part(
            "the rest (its CPU, threads, other calls)",
            (app_ms - acquire - usage).max(0.0),
            1,
        ));
    }
    parts
}

/// A database's part (its sessions over throughput: Little's law), by what they did,
/// at `depth` (inside the app's part, when there is one).
fn database_parts(d: &Delta, load: Load, depth: u8) -> Vec<Part> {
    let Some(db) = d.db().filter(|db| db.samples > 0) else {
        return Vec::new();
    };
    let per_request = |class: Class| db.average(class) / load.tps * 1000.0;
    let classes = [
        (Class::Running, "running"),
        (Class::Lock, "waiting on a lock"),
        (Class::Io, "waiting on I/O"),
        (Class::Other, "waiting on something else"),
        (
            Class::IdleInTransaction,
            "idle in a transaction (waiting on the app)",
        ),
    ];
    let total: f64 = classes.iter().map(|(c, _)| per_request(*c)).sum();
    if total < 0.05 && (db.hidden || db.counts_only) {
        return Vec::new(); // its sessions were not visible, or not counted by kind
    }
    let name = format!("in the database ({})", d.info.name);
    let mut parts = vec![part(&name, total, depth)];
    for (class, what) in classes {
        let ms = per_request(class);
        if ms >= 0.05 {
            parts.push(part(what, ms, depth + 1));
        }
    }
    parts
}

fn part(what: &str, ms: f64, depth: u8) -> Part {
    Part {
        part: what.into(),
        ms: round2(ms),
        depth,
    }
}

/// The app servers' own mean time per request, and their requests, over the step.
fn app_time(deltas: &[Delta]) -> Option<(f64, f64)> {
    let requests: f64 = deltas.iter().map(|d| d.counter(APP_REQUESTS)).sum();
    let seconds: f64 = deltas.iter().map(|d| d.counter(APP_REQUEST_SECONDS)).sum();
    (requests >= 1.0).then(|| (seconds * 1000.0 / requests, requests))
}

/// A JVM that spent [`GC_PAUSED_PCT`] of the step in GC pauses, with its longest.
pub(super) fn gc_pauses(deltas: &[Delta]) -> Vec<String> {
    let mut out = Vec::new();
    for d in deltas {
        let paused = d.counter("jvm_gc_pause_seconds_sum");
        let pct = paused / d.seconds * 100.0;
        if pct < GC_PAUSED_PCT {
            continue;
        }
        let pauses = d.counter("jvm_gc_pause_seconds_count");
        let longest = d
            .series("jvm_gc_pause_seconds_max")
            .into_iter()
            .fold(0.0, f64::max);
        out.push(format!(
            "{}: GC paused the JVM {pct:.0}% of the step ({pauses:.0} pauses, the longest {:.0} ms): a stall every request in flight waits out, not a resource that fills; size the heap or the collector",
            d.info.name,
            longest * 1000.0
        ));
    }
    out
}
