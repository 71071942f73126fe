//! The JSON admin API: the proxy's status, and its upstreams with every server's state
//! and counters.

use serde_json::{json, Value};
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
            "requests": l.totals.requests,
        })).collect::<Vec<_>>(),
    })
}

/// `GET /api/upstreams`.
pub fn upstreams(s: &Snapshot) -> Value {
    let list: Vec<Value> = s
        .upstreams
        .iter()
        .map(|u| {
            json!({
                "name": u.name,
                "balance": u.balance,
                "servers": u.servers.iter().map(server).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "upstreams": list })
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
        "last_errors": v.last_errors.iter().map(|e| json!({
            "at_unix": unix(e.at), "route": e.route, "status": e.status, "cause": e.cause,
        })).collect::<Vec<_>>(),
        "in_flight": v.in_flight,
        "requests": responses,
        "connections_opened": t.connections_opened,
        "retries": t.retries,
        "retry_budget_exhausted": t.budget_exhausted,
        "tunnels_open": t.tunnels_open,
        "ejections": t.ejections.iter().sum::<u64>(),
    })
}
