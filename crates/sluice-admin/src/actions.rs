//! The admin API's actions: `POST /api/reload`, and draining and undraining a server
//! (`POST /api/upstreams/NAME/servers/IP:PORT/drain[?lease=15s]` or `.../undrain`).
//!
//! A drain with a lease is how a tool (`sluice lab`) drains servers without being able
//! to leave them drained: the balancer ends the drain by itself once the tool stops
//! renewing it. Every refusal says why, with the status a client can act on: 400 for
//! a request to fix, 404 for an unknown upstream or server, 409 for a server an
//! operator drained without a lease (a tool must never take that drain over).

use crate::{json, not_found, Reply, State};
use hyper::{StatusCode, Uri};
use sluice_proxy::{DrainError, Drained};
use std::net::SocketAddr;
use std::time::Duration;

/// The longest lease a drain may have: a lease is renewed every few seconds by a tool
/// that runs; one longer than this would outlive a killed tool by too much.
pub const MAX_LEASE: Duration = Duration::from_secs(3600);

/// `POST /api/reload`, `POST /api/upstreams/NAME/servers/ADDR/drain` (or `undrain`).
pub fn act(uri: &Uri, state: &State) -> Reply {
    let path = uri.path();
    if path == "/api/reload" {
        return reload(state);
    }
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (upstream, server, verb) = match parts.as_slice() {
        ["api", "upstreams", u, "servers", s, verb] => (*u, *s, *verb),
        _ => return not_found(path),
    };
    if verb != "drain" && verb != "undrain" {
        return not_found(path);
    }
    let Ok(addr) = server.parse::<SocketAddr>() else {
        return bad_request(format!("{server:?} is not a server address (IP:port)"));
    };
    let lease = match lease(uri.query().unwrap_or(""), verb) {
        Ok(lease) => lease,
        Err(why) => return bad_request(why),
    };
    let done = match verb {
        "drain" => state.view.drain(upstream, addr, lease),
        _ => state.view.undrain(upstream, addr),
    };
    match done {
        Ok(drained) => json(StatusCode::OK, &answer(upstream, server, drained)),
        Err(why) => {
            let status = match why {
                DrainError::WithoutLease(_) => StatusCode::CONFLICT,
                DrainError::NoUpstream(_) | DrainError::NoServer { .. } => StatusCode::NOT_FOUND,
            };
            json(status, &serde_json::json!({"error": why.to_string()}))
        }
    }
}

/// What a drain or undrain answers: the server's drain now, and its upstream's change
/// count, so that a tool can tell its own changes from anyone else's.
fn answer(upstream: &str, server: &str, d: Drained) -> serde_json::Value {
    serde_json::json!({
        "upstream": upstream,
        "server": server,
        "drained": d.drained,
        "lease_ms": d.lease.map(|l| l.as_millis() as u64),
        "changes": d.changes,
    })
}

/// The lease the query asks for (`lease=15s`; none without one). Any other parameter
/// is refused, so that a misspelt `lease` cannot silently drain a server for good.
fn lease(query: &str, verb: &str) -> Result<Option<Duration>, String> {
    let mut lease = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "lease" {
            return Err(format!(
                "unknown parameter {key:?}: a drain takes only lease (e.g. ?lease=15s)"
            ));
        }
        if verb != "drain" {
            return Err("undrain takes no lease: it ends the drain and its lease".into());
        }
        lease = Some(parse_lease(value)?);
    }
    Ok(lease)
}

/// A lease as the config writes durations, more than zero and at most [`MAX_LEASE`].
fn parse_lease(value: &str) -> Result<Duration, String> {
    match sluice_config::parse_duration(value) {
        None => Err(format!(
            "lease {value:?} is not a duration: write it as the config does, e.g. 15s or 500ms"
        )),
        Some(d) if d.is_zero() => Err(format!(
            "lease {value:?} is zero: a drain with a lease needs one of at least 1ms (or no lease, to drain for good)"
        )),
        Some(d) if d > MAX_LEASE => Err(format!(
            "lease {value:?} is longer than an hour, the most a lease may be: renew a shorter one instead"
        )),
        Some(d) => Ok(d),
    }
}

fn bad_request(why: String) -> Reply {
    json(StatusCode::BAD_REQUEST, &serde_json::json!({"error": why}))
}

/// `POST /api/reload`: reloads the config file as SIGHUP does, and says what changed.
fn reload(state: &State) -> Reply {
    let Some(reload) = &state.info.reload else {
        let error = serde_json::json!({"error": "this sluice has no config file to reload"});
        return json(StatusCode::CONFLICT, &error);
    };
    match reload() {
        Ok(changed) => json(
            StatusCode::OK,
            &serde_json::json!({"reloaded": true, "changed": changed}),
        ),
        Err(why) => json(
            StatusCode::UNPROCESSABLE_ENTITY,
            &serde_json::json!({"reloaded": false, "error": why}),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leases_parse_as_config_durations_within_bounds() {
        assert_eq!(lease("", "drain"), Ok(None));
        assert_eq!(
            lease("lease=15s", "drain"),
            Ok(Some(Duration::from_secs(15)))
        );
        assert_eq!(
            lease("lease=500ms", "drain"),
            Ok(Some(Duration::from_millis(500)))
        );
        assert_eq!(lease("lease=1h", "drain"), Ok(Some(MAX_LEASE)));
        let refused = |q: &str, verb: &str| lease(q, verb).unwrap_err();
        assert!(refused("lease=soon", "drain").contains("is not a duration"));
        assert!(refused("lease=", "drain").contains("is not a duration"));
        assert!(refused("lease=0s", "drain").contains("is zero"));
        assert!(refused("lease=61m", "drain").contains("longer than an hour"));
        assert!(refused("lease_ms=100", "drain").contains("unknown parameter"));
        assert!(refused("lease=1s", "undrain").contains("undrain takes no lease"));
    }
}
