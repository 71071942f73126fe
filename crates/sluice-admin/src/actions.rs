//! The admin API's actions: `POST /api/reload`; draining and undraining a server
//! (`POST /api/upstreams/NAME/servers/IP:PORT/drain[?lease=15s]` or `.../undrain`); and
//! trying another `max_conns` on it for a lease (`.../limit?max_conns=30&lease=15s`,
//! ended early by `.../unlimit`).
//!
//! A lease is how a tool (`sluice lab`) changes servers without being able to leave
//! them changed: the balancer ends the drain or the trial limit by itself once the tool
//! stops renewing it. Every refusal says why, with the status a client can act on: 400
//! for a request to fix, 404 for an unknown upstream or server, 409 for a server an
//! operator drained without a lease (a tool must never take that drain over) or one
//! with no `max_conns` to try another of.

use crate::{json, not_found, Reply, State};
use hyper::{StatusCode, Uri};
use sluice_proxy::{Drained, LeaseError, Limited};
use std::net::SocketAddr;
use std::time::Duration;

/// The longest lease a drain may have: a lease is renewed every few seconds by a tool
/// that runs; one longer than this would outlive a killed tool by too much.
pub const MAX_LEASE: Duration = Duration::from_secs(3600);

/// `POST /api/reload`, `POST /api/upstreams/NAME/servers/ADDR/VERB` (`drain`,
/// `undrain`, `limit`, `unlimit`).
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
    if !["drain", "undrain", "limit", "unlimit"].contains(&verb) {
        return not_found(path);
    }
    let Ok(addr) = server.parse::<SocketAddr>() else {
        return bad_request(format!("{server:?} is not a server address (IP:port)"));
    };
    let query = uri.query().unwrap_or("");
    let done = match verb {
        "drain" | "undrain" => drain(state, upstream, addr, verb, query),
        _ => limit(state, upstream, addr, verb, query),
    };
    match done {
        Ok(answer) => json(StatusCode::OK, &with_names(answer, upstream, server)),
        Err(Refused::Request(why)) => bad_request(why),
        Err(Refused::State(why)) => {
            let status = match why {
                LeaseError::WithoutLease(_) | LeaseError::Unlimited { .. } => StatusCode::CONFLICT,
                LeaseError::NoUpstream(_) | LeaseError::NoServer { .. } => StatusCode::NOT_FOUND,
            };
            json(status, &serde_json::json!({"error": why.to_string()}))
        }
    }
}

/// Why an action was refused: the request (400), or the state of the upstream.
enum Refused {
    Request(String),
    State(LeaseError),
}

impl From<LeaseError> for Refused {
    fn from(e: LeaseError) -> Self {
        Refused::State(e)
    }
}

/// `drain[?lease=]` or `undrain`: the server's drain after it.
fn drain(
    state: &State,
    upstream: &str,
    addr: SocketAddr,
    verb: &str,
    query: &str,
) -> Result<serde_json::Value, Refused> {
    let lease = lease(query, verb).map_err(Refused::Request)?;
    let drained = match verb {
        "drain" => state.view.drain(upstream, addr, lease)?,
        _ => state.view.undrain(upstream, addr)?,
    };
    Ok(drain_answer(drained))
}

/// `limit?max_conns=N&lease=D` or `unlimit`: the server's limit after it.
fn limit(
    state: &State,
    upstream: &str,
    addr: SocketAddr,
    verb: &str,
    query: &str,
) -> Result<serde_json::Value, Refused> {
    let limited = match verb {
        "limit" => {
            let (max_conns, lease) = trial(query).map_err(Refused::Request)?;
            state.view.try_limit(upstream, addr, max_conns, lease)?
        }
        _ => {
            if !query.is_empty() {
                let why = "unlimit takes no parameters: it ends the trial limit and its lease";
                return Err(Refused::Request(why.into()));
            }
            state.view.end_limit(upstream, addr)?
        }
    };
    Ok(limit_answer(limited))
}

/// An answer with the upstream and the server it is about first.
fn with_names(answer: serde_json::Value, upstream: &str, server: &str) -> serde_json::Value {
    let mut all = serde_json::json!({"upstream": upstream, "server": server});
    if let (Some(all), serde_json::Value::Object(rest)) = (all.as_object_mut(), answer) {
        all.extend(rest);
    }
    all
}

/// What a drain or undrain answers: the server's drain now, and its upstream's change
/// count, so that a tool can tell its own changes from anyone else's.
fn drain_answer(d: Drained) -> serde_json::Value {
    serde_json::json!({
        "drained": d.drained,
        "lease_ms": d.lease.map(|l| l.as_millis() as u64),
        "changes": d.changes,
    })
}

/// What a trial limit answers: the server's `max_conns` now and in the config, what the
/// trial's lease has left, and the upstream's change count.
fn limit_answer(l: Limited) -> serde_json::Value {
    serde_json::json!({
        "max_conns": l.max_conns,
        "max_conns_config": l.configured,
        "lease_ms": l.lease.map(|d| d.as_millis() as u64),
        "changes": l.changes,
    })
}

/// The `max_conns` and the lease a trial limit's query asks for, both required: a
/// lasting limit is the config file's. Any other parameter is refused.
fn trial(query: &str) -> Result<(u32, Duration), String> {
    let (mut max_conns, mut lease) = (None, None);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=').unwrap_or((pair, "")) {
            ("max_conns", v) => {
                let n = v.parse::<u32>().ok().filter(|&n| n > 0);
                max_conns = Some(n.ok_or_else(|| {
                    format!("max_conns {v:?} is not a whole number above zero")
                })?);
            }
            ("lease", v) => lease = Some(parse_lease(v)?),
            (key, _) => {
                return Err(format!(
                    "unknown parameter {key:?}: a limit takes max_conns and lease (e.g. ?max_conns=30&lease=15s)"
                ))
            }
        }
    }
    match (max_conns, lease) {
        (Some(m), Some(l)) => Ok((m, l)),
        (None, _) => Err("a limit needs max_conns (e.g. ?max_conns=30&lease=15s)".into()),
        (_, None) => Err("a limit needs a lease (e.g. &lease=15s): a trial limit ends by itself; a lasting one belongs in the config file".into()),
    }
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
            "lease {value:?} is zero: a lease is at least 1ms"
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

    #[test]
    fn a_trial_limit_needs_a_max_conns_and_a_lease() {
        assert_eq!(
            trial("max_conns=30&lease=15s"),
            Ok((30, Duration::from_secs(15)))
        );
        assert_eq!(
            trial("lease=1s&max_conns=1"),
            Ok((1, Duration::from_secs(1)))
        );
        let refused = |q: &str| trial(q).unwrap_err();
        assert!(refused("max_conns=30").contains("needs a lease"));
        assert!(refused("lease=15s").contains("needs max_conns"));
        assert!(refused("max_conns=0&lease=1s").contains("above zero"));
        assert!(refused("max_conns=-3&lease=1s").contains("above zero"));
        assert!(refused("max_conns=30&lease=2h").contains("longer than an hour"));
        assert!(refused("max_conn=30&lease=1s").contains("unknown parameter"));
    }
}
