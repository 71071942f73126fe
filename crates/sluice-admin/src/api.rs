//! The JSON admin API: the proxy's status, and its upstreams with every server's state
//! and counters.

use serde_json::{json, Value};
use sluice_proxy::metrics::{HistogramTotal, BUCKETS};
use sluice_proxy::{ServerView, Snapshot};
use std::time::{SystemTime, UNIX_EPOCH};

/// Reloads the config the way SIGHUP does; `Ok` says what changed, `Err` why the old
/// config was kept.
pub type Reload = std::sync::Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// What the admin listener knows besides the proxy: where its config came from, and
/// how to reload it.
#[derive(Clone, Default)]
pub struct Info {
    pub config_file: Option<std::path::PathBuf>,
    pub reload: Option<Reload>,
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `GET /api/status`.
pub fn status(s: &Snapshot, info: &Info) -> Value {
    let uptime = SystemTime::now()
        .duration_since(s.started)
        .map_or(0.0, |d| d.as_secs_f64());
    json!({
        "version": env!("CARGO_PKG_VERSION"),
        "started_unix": unix(s.started),
        "uptime_s": (uptime * 1000.0).round() / 1000.0,
        "config_file": info.config_file.as_ref().map(|p| p.display().to_string()),
        "generation": s.generation,
        "workers": s.workers,
        "reloads": {"applied": s.reloads, "refused": s.reload_failures,
                    "last_unix": s.last_reload.map(unix)},
        "listeners": s.listeners.iter().map(|l| json!({
            "bind": l.bind.to_string(), "bound": l.bound.to_string(),
            "connections_accepted": l.totals.accepted, "connections_open": l.totals.open,
            "requests": l.totals.requests, "tls_handshake_failures": l.totals.tls_failed,
        })).collect::<Vec<_>>(),
    })
}

/// `GET /api/upstreams`. `at_unix` is when the counters were read: a client that polls
/// divides the difference of two answers' counters by the difference of their `at_unix`
/// (the dashboard does), which neither network delays nor a throttled browser tab skew.
pub fn upstreams(s: &Snapshot) -> Value {
    let at = unix(SystemTime::now());
    let list: Vec<Value> = s
        .upstreams
        .iter()
        .map(|u| {
            json!({
                "name": u.name,
                "balance": u.balance,
                "changes": u.changes,
                "sticky": u.sticky.as_ref().map(|s| json!({
                    "mode": s.mode, "cookie": s.cookie, "sessions": s.sessions,
                })),
                "servers": u.servers.iter().map(server).collect::<Vec<_>>(),
                "dns": s.dns.iter().filter(|d| d.upstream == u.name).map(|d| json!({
                    "name": d.name, "lookups": d.lookups, "failures": d.failures, "servers": d.servers,
                })).collect::<Vec<_>>(),
                "queue": {
                    "waiting": u.queue.waiting, "timeouts": u.queue.timeouts,
                    "rejected": u.queue.rejected, "wait": latency(&u.queue.wait),
                },
            })
        })
        .collect();
    json!({ "at_unix": at, "upstreams": list })
}

/// A latency histogram (a server's `sluice_upstream_request_duration_seconds`: from an
/// attempt's start to the response's last byte or the failure) as counts per bucket,
/// not cumulative as Prometheus' are: `counts[i]` observations took at most
/// `bounds_s[i]` seconds and more than `bounds_s[i - 1]`, and the one count more than
/// there are bounds is of those above the last. Counts only grow, so the difference of
/// two polls is the histogram of the requests in between, from which a client estimates
/// percentiles over that interval (the dashboard: p50 and p99 of each second).
fn latency(h: &HistogramTotal) -> Value {
    json!({"bounds_s": BUCKETS, "counts": h.buckets, "sum_s": h.sum_seconds})
}

fn server(v: &ServerView) -> Value {
    let t = &v.totals;
    let classes = ["1xx", "2xx", "3xx", "4xx", "5xx"];
    let responses: serde_json::Map<String, Value> = classes
        .iter()
        .zip(t.responses)
        .map(|(c, n)| (c.to_string(), json!(n)))
        .collect();
    json!({
        "addr": v.addr.to_string(),
        "weight": v.weight,
        "backup": v.backup,
        "health": if !v.up() && v.ejected_for.is_some() { "ejected" } else if !v.up() { "down" } else if v.drained { "drained" } else { "up" },
        "checked_up": v.checked_up,
        "ejected_for_s": v.ejected_for.map(|d| d.as_secs_f64()),
        "drained": v.drained,
        "lease_ms": v.lease.map(|l| l.as_millis() as u64),
        "last_errors": v.last_errors.iter().map(|e| json!({
            "at_unix": unix(e.at), "route": e.route, "status": e.status, "kind": e.kind, "cause": e.cause,
        })).collect::<Vec<_>>(),
        "in_flight": v.in_flight,
        "max_conns": v.max_conns,
        "max_conns_config": v.max_conns_config,
        "limit_lease_ms": v.limit_lease.map(|l| l.as_millis() as u64),
        "requests": responses,
        "connections_opened": t.connections_opened,
        "retries": t.retries,
        "retry_budget_exhausted": t.budget_exhausted,
        "tunnels_open": t.tunnels_open,
        "ejections": t.ejections.iter().sum::<u64>(),
        "latency": latency(&t.total),
    })
}

#[cfg(test)]
mod tests {
    use super::latency;
    use sluice_proxy::metrics::HistogramTotal;

    /// The dashboard reads `counts` per bucket, not cumulated, one more than `bounds_s`.
    #[test]
    fn latency_is_counts_per_bucket_and_one_above_the_last_bound() {
        let mut h = HistogramTotal::default();
        h.buckets[0] = 3;
        h.buckets[1] = 5;
        h.buckets[14] = 1;
        h.sum_seconds = 11.5;
        let v = latency(&h);
        let bounds = v["bounds_s"].as_array().unwrap();
        let counts = v["counts"].as_array().unwrap();
        assert_eq!(counts.len(), bounds.len() + 1);
        assert_eq!(
            (bounds[0].as_f64(), bounds[13].as_f64()),
            (Some(0.0005), Some(10.0))
        );
        assert_eq!((counts[0].as_u64(), counts[1].as_u64()), (Some(3), Some(5)));
        assert_eq!(
            (counts[2].as_u64(), counts[14].as_u64()),
            (Some(0), Some(1))
        );
        assert_eq!(v["sum_s"].as_f64(), Some(11.5));
    }
}
