//! Where a request's time went over a step, from what the tiers measure of themselves:
//! sluice's time at its servers and in its queue, the app server's own time per request
//! (Micrometer's `http_server_requests_seconds`), inside it the wait for a pooled
//! connection and the time holding one (HikariCP's `acquire` and `usage` timers), its CPU
//! and GC pauses, and the database's sessions (their average number over throughput is
//! the time each request spent there: Little's law), by what they did. Between the
//! balancer's timing and the app's is the network and the wait for a server thread
//! (Micrometer's timer starts once a thread has the request).

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

/// sluice's time per attempt at its servers, and in its queue (its `/metrics`).
const LB_ATTEMPT_SECONDS: &str = "sluice_upstream_request_duration_seconds_sum";
const LB_ATTEMPTS: &str = "sluice_upstream_request_duration_seconds_count";
const LB_QUEUE_SECONDS: &str = "sluice_upstream_queue_wait_duration_seconds_sum";

/// The step's breakdown, where the balancer, the app or the database measured anything.
/// Each measured tier's part holds the next one's: the balancer's time at its servers
/// holds the app server's, which holds the database's.
pub(super) fn breakdown(deltas: &[Delta], load: Load) -> Option<Breakdown> {
    if load.tps <= 0.0 {
        return None;
    }
    let app = app_time(deltas);
    let lb = balancer_time(deltas);
    let mut parts = lb.map_or_else(Vec::new, |lb| balancer_parts(load, lb));
    let mut depth = u8::from(lb.is_some());
    if let Some((ms, n)) = app {
        let outer_ms = lb.map_or(load.mean_ms, |(at_servers, _)| at_servers);
        parts.extend(app_parts(deltas, (outer_ms, depth), ms, n));
        depth += 1;
    }
    for d in deltas {
        parts.extend(database_parts(d, load, depth));
    }
    if lb.is_none() && app.is_none() && !parts.is_empty() {
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

/// sluice's mean time per attempt at its servers and in its queue, ms, where a balancer
/// tier's metrics are sluice's.
fn balancer_time(deltas: &[Delta]) -> Option<(f64, f64)> {
    let sum = |key: &str| -> f64 { deltas.iter().map(|d| d.counter(key)).sum() };
    let attempts = sum(LB_ATTEMPTS);
    (attempts >= 1.0).then(|| {
        let per = |key: &str| sum(key) * 1000.0 / attempts;
        (per(LB_ATTEMPT_SECONDS), per(LB_QUEUE_SECONDS))
    })
}

/// The balancer's part: before its servers (its own work, its queue, the network from
/// the clients) and at them, as it timed each attempt.
fn balancer_parts(load: Load, (at_servers, queued): (f64, f64)) -> Vec<Part> {
    let mut parts = vec![part(
        "in the balancer (its work, its queue, the network)",
        (load.mean_ms - at_servers).max(0.0),
        0,
    )];
    if queued >= 0.05 {
        parts.push(part("queued for a server (max_conns)", queued, 1));
    }
    parts.push(part(
        "at the servers (as the balancer timed them)",
        at_servers,
        0,
    ));
    parts
}

/// The app servers' part, `app_ms` a request over `requests`, inside an outer part of
/// `outer_ms` at `depth` (the balancer's time at its servers, or the whole response):
/// before them, in them, and inside, HikariCP's wait for a connection and time holding
/// one, the app's CPU per request, and the share of its time the JVM was stopped in GC.
fn app_parts(
    deltas: &[Delta],
    (outer_ms, depth): (f64, u8),
    app_ms: f64,
    requests: f64,
) -> Vec<Part> {
    let before = if depth == 0 {
        "before the app (balancer, network, waiting for a server thread)"
    } else {
        "before the app (network, waiting for a server thread)"
    };
    let mut parts = vec![
        part(before, (outer_ms - app_ms).max(0.0), depth),
        part("in the app server", app_ms, depth),
    ];
    let apps = || deltas.iter().filter(|d| d.counter(APP_REQUESTS) > 0.0);
    let per_request = |key: &str| apps().map(|d| d.counter(key)).sum::<f64>() * 1000.0 / requests;
    let acquire = per_request("hikaricp_connections_acquire_seconds_sum");
    let usage = per_request("hikaricp_connections_usage_seconds_sum");
    let cpu = apps().map(|d| d.b.cpu_s - d.a.cpu_s).sum::<f64>() * 1000.0 / requests;
    let inner = depth + 1;
    if acquire + usage > 0.0 {
        parts.push(part("waiting for a pooled connection", acquire, inner));
        parts.push(part("holding a pooled connection", usage, inner));
    }
    if cpu > 0.0 {
        parts.push(part("on its CPU (CPU time per request)", cpu, inner));
    }
    if acquire + usage + cpu > 0.0 {
        parts.push(part(
            "the rest (waiting for a CPU, other calls, locks)",
            (app_ms - acquire - usage - cpu).max(0.0),
            inner,
        ));
    }
    let paused: f64 = apps()
        .map(|d| d.counter("jvm_gc_pause_seconds_sum") / d.seconds)
        .sum::<f64>()
        / apps().count().max(1) as f64;
    if paused * app_ms >= 0.05 {
        // Each request in the app waits out the pauses that fall in its time.
        parts.push(part(
            "stopped in GC pauses (within the parts above)",
            paused * app_ms,
            inner,
        ));
    }
    parts
}

/// A database's part (its sessions over throughput: Little's law), by what they did,
/// at `depth` (inside the app's part, or the balancer's, when measured).
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
