//! The scale-out experiment on the user's own servers: a running sluice's upstream is
//! resized through its admin API. For each configuration, the servers beyond the count
//! it measures are drained (no new requests; those in flight finish) and the others
//! undrained, then put back as they were when the run ends.
//!
//! Each drain is a lease the lab renews while it runs, so a lab that is killed leaves
//! nothing behind: it stops renewing and the balancer ends the drains by itself. Only
//! servers in service at the start are used; a server an operator drained is never
//! touched. The upstream's `changes` counter (it moves on every change of its servers or
//! their drains, whoever makes it) tells a change by anyone else, which stops the run.

use crate::fetch;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a drain lasts unless renewed: a killed lab's servers are back this soon.
const LEASE: Duration = Duration::from_secs(10);
/// How often the leases are renewed and the upstream checked: a third of a lease, so
/// that two renewals may fail (a busy balancer) before one runs out.
const RENEW: Duration = Duration::from_millis(3_000);

/// Why the upstream cannot be resized, in words to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResizeError {
    #[error("the admin API at {admin}: {why}")]
    Admin { admin: String, why: String },
    #[error("{0}")]
    Upstream(String),
    #[error("the upstream {upstream} was changed by someone else during the run ({why}); the run stops: put it back as you want it and run again")]
    Changed { upstream: String, why: String },
}

/// A sluice's upstream the lab resizes, and the drains it holds.
pub struct Resize {
    admin: String,
    upstream: String,
    /// The servers in service at the start, in the API's order: the first `n` serve a
    /// configuration of `n` servers.
    servers: Vec<String>,
    shared: Arc<Shared>,
    renewer: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<Leases>,
    done: AtomicBool,
}

#[derive(Default)]
struct Leases {
    /// The servers this run drained (each under a lease).
    drained: BTreeSet<String>,
    /// The upstream's `changes` after this run's last change.
    changes: u64,
    /// A change by someone else, seen by the renewer.
    conflict: Option<ResizeError>,
}

impl Resize {
    /// The upstream of the sluice whose admin API is at `admin` (`http://HOST:PORT`):
    /// `upstream` by name, or the only one with more than one server. It must have at
    /// least `most` servers in service and no drain lease running (another lab's).
    pub fn start(admin: &str, upstream: Option<&str>, most: usize) -> Result<Resize, ResizeError> {
        let admin = admin.trim_end_matches('/').to_string();
        let all = upstreams(&admin)?;
        let (name, up) = choose(&all, upstream)?;
        let servers = in_service(&name, up, most)?;
        let changes = up["changes"].as_u64().unwrap_or_default();
        let shared = Arc::new(Shared {
            state: Mutex::new(Leases {
                changes,
                ..Leases::default()
            }),
            done: AtomicBool::new(false),
        });
        let renewer = {
            let (shared, admin, name) = (shared.clone(), admin.clone(), name.clone());
            std::thread::spawn(move || renew(&shared, &admin, &name))
        };
        Ok(Resize {
            admin,
            upstream: name,
            servers,
            shared,
            renewer: Some(renewer),
        })
    }

    pub fn upstream(&self) -> &str {
        &self.upstream
    }

    /// The servers in service at the start, in the order they are kept.
    pub fn servers(&self) -> &[String] {
        &self.servers
    }

    /// Leaves the first `n` servers in service and drains the others.
    pub fn set(&self, n: usize) -> Result<(), ResizeError> {
        let mut leases = self.shared.lock();
        if let Some(e) = leases.conflict.clone() {
            return Err(e);
        }
        for (i, server) in self.servers.iter().enumerate() {
            let drain = i >= n;
            if drain == leases.drained.contains(server) {
                continue;
            }
            let changes = self.post(server, drain)?;
            self.note(&mut leases, changes, 1)?;
            if drain {
                leases.drained.insert(server.clone());
            } else {
                leases.drained.remove(server);
            }
        }
        Ok(())
    }

    /// A change by someone else, seen since the run began.
    pub fn conflict(&self) -> Option<ResizeError> {
        self.shared.lock().conflict.clone()
    }

    /// Undrains every server this run drained and stops renewing: the upstream as it was.
    pub fn restore(&mut self) -> Result<(), ResizeError> {
        self.shared.done.store(true, Ordering::Relaxed);
        if let Some(r) = self.renewer.take() {
            let _ = r.join();
        }
        let mut leases = self.shared.lock();
        let mut first_error = None;
        for server in std::mem::take(&mut leases.drained) {
            if let Err(e) = self.post(&server, false) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// A drain (with the lease) or an undrain of `server`; the upstream's `changes` after.
    fn post(&self, server: &str, drain: bool) -> Result<u64, ResizeError> {
        call(&self.admin, &self.upstream, server, drain)
    }

    /// Takes `changes` from this run's own call, which moved the counter by `by`: any
    /// other move is someone else's.
    fn note(&self, leases: &mut Leases, changes: u64, by: u64) -> Result<(), ResizeError> {
        let expected = leases.changes + by;
        leases.changes = changes;
        if changes != expected {
            let e = changed(&self.upstream, expected, changes);
            leases.conflict = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }
}

impl Drop for Resize {
    fn drop(&mut self) {
        // Whatever ended the run (an error, Ctrl-C): the servers go back in service.
        if !self.shared.done.load(Ordering::Relaxed) {
            let _ = self.restore();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Leases> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn changed(upstream: &str, expected: u64, found: u64) -> ResizeError {
    ResizeError::Changed {
        upstream: upstream.into(),
        why: format!("its change count is {found} where the lab's own changes made it {expected}"),
    }
}

/// Renews the leases and checks the upstream every [`RENEW`] until the run is done.
fn renew(shared: &Shared, admin: &str, upstream: &str) {
    let tick = Duration::from_millis(100);
    let mut waited = Duration::ZERO;
    while !shared.done.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        waited += tick;
        if waited < RENEW {
            continue;
        }
        waited = Duration::ZERO;
        let mut leases = shared.lock();
        for server in leases.drained.clone() {
            // A renewal changes nothing, so the counter must not move.
            if let Ok(changes) = call(admin, upstream, &server, true) {
                if changes != leases.changes && leases.conflict.is_none() {
                    leases.conflict = Some(changed(upstream, leases.changes, changes));
                }
            }
        }
        let now = upstreams(admin)
            .ok()
            .and_then(|all| all.get(upstream).map(|u| u["changes"].as_u64()))
            .flatten();
        if let Some(now) = now.filter(|&n| n != leases.changes) {
            let expected = leases.changes;
            leases
                .conflict
                .get_or_insert(changed(upstream, expected, now));
        }
    }
}

/// `POST .../drain?lease=` or `.../undrain`; the upstream's `changes` it answers.
fn call(admin: &str, upstream: &str, server: &str, drain: bool) -> Result<u64, ResizeError> {
    let path = match drain {
        true => format!("drain?lease={}ms", LEASE.as_millis()),
        false => "undrain".to_string(),
    };
    let url = format!("{admin}/api/upstreams/{upstream}/servers/{server}/{path}");
    let error = |why: String| ResizeError::Admin {
        admin: admin.into(),
        why,
    };
    let (status, body) = fetch::http_request("POST", &url).map_err(error)?;
    let json: Value = serde_json::from_str(&body).unwrap_or_default();
    if status != 200 {
        let said = json["error"].as_str().unwrap_or(&body).to_string();
        return Err(error(format!("POST {url}: {status}: {said}")));
    }
    json["changes"].as_u64().ok_or_else(|| {
        error(format!(
            "POST {url} answered without `changes`: a sluice older than drain leases?"
        ))
    })
}

/// `GET /api/upstreams`, by name.
fn upstreams(admin: &str) -> Result<serde_json::Map<String, Value>, ResizeError> {
    let url = format!("{admin}/api/upstreams");
    let error = |why: String| ResizeError::Admin {
        admin: admin.into(),
        why,
    };
    let (status, body) = fetch::http_request("GET", &url).map_err(error)?;
    if status != 200 {
        return Err(error(format!("GET {url}: {status}")));
    }
    let json: Value = serde_json::from_str(&body)
        .map_err(|e| error(format!("GET {url}: not sluice's JSON: {e}")))?;
    by_name(&json).ok_or_else(|| error(format!("GET {url}: not sluice's list of upstreams")))
}

/// The API's upstreams keyed by name, whether it lists them as an object or an array.
fn by_name(json: &Value) -> Option<serde_json::Map<String, Value>> {
    let list = json.get("upstreams").unwrap_or(json);
    match list {
        Value::Object(map) => Some(map.clone()),
        Value::Array(items) => Some(
            items
                .iter()
                .filter_map(|u| Some((u["name"].as_str()?.to_string(), u.clone())))
                .collect(),
        ),
        _ => None,
    }
}

/// `wanted`, or the only upstream with more than one server.
fn choose<'a>(
    all: &'a serde_json::Map<String, Value>,
    wanted: Option<&str>,
) -> Result<(String, &'a Value), ResizeError> {
    let names = || all.keys().cloned().collect::<Vec<_>>().join(", ");
    if let Some(name) = wanted {
        return all.get(name).map(|u| (name.to_string(), u)).ok_or_else(|| {
            ResizeError::Upstream(format!(
                "--upstream {name}: no such upstream (it has {})",
                names()
            ))
        });
    }
    let several: Vec<_> = all
        .iter()
        .filter(|(_, u)| u["servers"].as_array().map_or(0, Vec::len) > 1)
        .collect();
    match several.as_slice() {
        [(name, u)] => Ok(((*name).clone(), *u)),
        [] => Err(ResizeError::Upstream(format!(
            "no upstream has more than one server to scale over (upstreams: {})",
            names()
        ))),
        _ => Err(ResizeError::Upstream(format!(
            "several upstreams have servers to scale over: say which with --upstream ({})",
            names()
        ))),
    }
}

/// The servers of `up` in service (not drained, not backups), at least `most`; none may
/// be under a lease.
fn in_service(name: &str, up: &Value, most: usize) -> Result<Vec<String>, ResizeError> {
    let servers = up["servers"].as_array().cloned().unwrap_or_default();
    if let Some(leased) = servers.iter().find(|s| !s["lease_ms"].is_null()) {
        return Err(ResizeError::Upstream(format!(
            "upstream {name}: {} is drained under a lease already (another lab run?); wait for it to end",
            leased["addr"].as_str().unwrap_or("a server")
        )));
    }
    let ready: Vec<String> = servers
        .iter()
        .filter(|s| s["drained"].as_bool() == Some(false) && s["backup"] != true)
        .filter_map(|s| s["addr"].as_str().map(String::from))
        .collect();
    if ready.len() < most {
        return Err(ResizeError::Upstream(format!(
            "upstream {name} has {} server(s) in service ({}); --servers asks for {most}",
            ready.len(),
            ready.join(", ")
        )));
    }
    Ok(ready)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(text: &str) -> serde_json::Map<String, Value> {
        by_name(&serde_json::from_str(text).unwrap()).unwrap()
    }

    #[test]
    fn the_only_upstream_with_servers_to_scale_over_is_chosen() {
        let all = api(
            r#"{"upstreams":[{"name":"static","servers":[{"addr":"10.0.0.9:80","drained":false}]},
                {"name":"app","changes":4,"servers":[{"addr":"10.0.0.1:8080","drained":false},
                {"addr":"10.0.0.2:8080","drained":true,"lease_ms":null},{"addr":"10.0.0.3:8080","drained":false}]}]}"#,
        );
        let (name, up) = choose(&all, None).unwrap();
        assert_eq!(name, "app");
        // The operator's drained server is left alone.
        assert_eq!(
            in_service(&name, up, 2).unwrap(),
            ["10.0.0.1:8080", "10.0.0.3:8080"]
        );
        let short = in_service(&name, up, 3).unwrap_err().to_string();
        assert!(
            short.contains("2 server(s) in service") && short.contains("asks for 3"),
            "{short}"
        );
        assert!(choose(&all, Some("nope"))
            .unwrap_err()
            .to_string()
            .contains("app, static"));
    }

    #[test]
    fn a_lease_running_already_is_refused() {
        let all = api(
            r#"{"upstreams":[{"name":"app","servers":[{"addr":"10.0.0.1:8080","drained":false},
                {"addr":"10.0.0.2:8080","drained":true,"lease_ms":4000}]}]}"#,
        );
        let (name, up) = choose(&all, None).unwrap();
        let e = in_service(&name, up, 1).unwrap_err().to_string();
        assert!(e.contains("10.0.0.2:8080 is drained under a lease"), "{e}");
    }

    #[test]
    fn several_upstreams_to_scale_over_ask_which() {
        let all = api(
            r#"{"upstreams":[{"name":"a","servers":[{"addr":"1.1.1.1:1"},{"addr":"1.1.1.2:1"}]},
                {"name":"b","servers":[{"addr":"1.1.1.3:1"},{"addr":"1.1.1.4:1"}]}]}"#,
        );
        let e = choose(&all, None).unwrap_err().to_string();
        assert!(e.contains("--upstream (a, b)"), "{e}");
    }
}
