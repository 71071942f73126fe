//! A sluice's admin API: each drain, and each trial `max_conns` the proof sets, is a
//! lease of [`LEASE`], renewed by the lab while it runs; the upstream's `changes` counter
//! moves on every change of its servers, their drains or their limits, whoever makes it.

use super::{choose, enough, Mark, ResizeError};
use crate::fetch;
use serde_json::Value;
use std::time::Duration;

/// How long a drain lasts unless renewed: a killed lab's servers are back this soon.
const LEASE: Duration = Duration::from_secs(10);

/// The upstream to resize, its servers in service and its `changes` now.
pub(super) fn open(
    admin: &str,
    upstream: Option<&str>,
    most: usize,
) -> Result<(String, Vec<String>, Mark, Option<String>), ResizeError> {
    let all = upstreams(admin)?;
    let counts = all
        .iter()
        .map(|(name, u)| (name.clone(), u["servers"].as_array().map_or(0, Vec::len)))
        .collect();
    let name = choose(&counts, upstream, "upstream")?;
    let up = &all[&name];
    let servers = in_service(&name, up, most)?;
    let changes = up["changes"].as_u64().unwrap_or_default();
    Ok((name, servers, Mark::Changes(changes), stickiness(up)))
}

/// How the upstream keeps sessions on their server, in words, when it is `sticky`.
fn stickiness(up: &Value) -> Option<String> {
    let sticky = up.get("sticky").filter(|s| !s.is_null())?;
    let cookie = sticky["cookie"].as_str().unwrap_or("?");
    let how = match sticky["mode"].as_str() {
        Some("learn") => format!(
            "the application's session cookie {cookie}, {} sessions known",
            sticky["sessions"].as_u64().unwrap_or_default()
        ),
        _ => format!("sluice's cookie {cookie}"),
    };
    Some(format!(
        "sessions sticky by {how}: a drained server's sessions move, a server put back takes new sessions only"
    ))
}

/// The upstream's `changes` now, if the API answers.
pub(super) fn mark(admin: &str, upstream: &str) -> Option<Mark> {
    let all = upstreams(admin).ok()?;
    all.get(upstream)?["changes"].as_u64().map(Mark::Changes)
}

/// `POST .../drain?lease=` or `.../undrain`; the upstream's `changes` it answers.
pub(super) fn call(
    admin: &str,
    upstream: &str,
    server: &str,
    drain: bool,
) -> Result<Mark, ResizeError> {
    let verb = match drain {
        true => format!("drain?lease={}ms", LEASE.as_millis()),
        false => "undrain".to_string(),
    };
    post(admin, upstream, server, &verb)
}

/// `POST .../limit?max_conns=N&lease=` (a trial `max_conns`, renewed by the same call)
/// or, with `None`, `.../unlimit`; the upstream's `changes` it answers.
pub(super) fn limit(
    admin: &str,
    upstream: &str,
    server: &str,
    max_conns: Option<u32>,
) -> Result<Mark, ResizeError> {
    let verb = match max_conns {
        Some(n) => format!("limit?max_conns={n}&lease={}ms", LEASE.as_millis()),
        None => "unlimit".to_string(),
    };
    post(admin, upstream, server, &verb)
}

/// Each of `servers`' `max_conns` in the config (those that have one).
pub(super) fn limits(
    admin: &str,
    upstream: &str,
    servers: &[String],
) -> Result<Vec<(String, u32)>, ResizeError> {
    let all = upstreams(admin)?;
    let listed = all[upstream]["servers"].as_array().cloned();
    let limit_of = |addr: &String| {
        let s = listed
            .iter()
            .flatten()
            .find(|s| s["addr"] == addr.as_str())?;
        let n = s["max_conns_config"].as_u64()?;
        Some((addr.clone(), u32::try_from(n).ok()?))
    };
    Ok(servers.iter().filter_map(limit_of).collect())
}

/// `POST .../servers/SERVER/VERB`; the upstream's `changes` it answers.
fn post(admin: &str, upstream: &str, server: &str, verb: &str) -> Result<Mark, ResizeError> {
    let url = format!("{admin}/api/upstreams/{upstream}/servers/{server}/{verb}");
    let error = |why: String| ResizeError::Admin {
        admin: admin.into(),
        why,
    };
    let (status, body) = fetch::http_request("POST", &url).map_err(error)?;
    let json: Value = serde_json::from_str(&body).unwrap_or_default();
    if status != 200 {
        let said = json["error"].as_str().unwrap_or(&body).to_string();
        return Err(error(format!(
            "POST {url}: {status}: {said}{}",
            hint(status)
        )));
    }
    json["changes"].as_u64().map(Mark::Changes).ok_or_else(|| {
        error(format!(
            "POST {url} answered without `changes`: a sluice older than leases?"
        ))
    })
}

/// What to do about a refusal the lab can do something about.
fn hint(status: u16) -> &'static str {
    match status {
        401 => " (the admin API has a token: give it to the lab in SLUICE_ADMIN_TOKEN)",
        _ => "",
    }
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
        return Err(error(format!("GET {url}: {status}{}", hint(status))));
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
    enough("upstream", name, &ready, most)?;
    Ok(ready)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chosen upstream as `open` chooses it.
    fn pick<'a>(
        all: &'a serde_json::Map<String, Value>,
        wanted: Option<&str>,
    ) -> Result<(String, &'a Value), ResizeError> {
        let counts = all
            .iter()
            .map(|(n, u)| (n.clone(), u["servers"].as_array().map_or(0, Vec::len)))
            .collect();
        let name = choose(&counts, wanted, "upstream")?;
        Ok((name.clone(), &all[&name]))
    }

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
        let (name, up) = pick(&all, None).unwrap();
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
        assert!(pick(&all, Some("nope"))
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
        let (name, up) = pick(&all, None).unwrap();
        let e = in_service(&name, up, 1).unwrap_err().to_string();
        assert!(e.contains("10.0.0.2:8080 is drained under a lease"), "{e}");
    }

    #[test]
    fn several_upstreams_to_scale_over_ask_which() {
        let all = api(
            r#"{"upstreams":[{"name":"a","servers":[{"addr":"1.1.1.1:1"},{"addr":"1.1.1.2:1"}]},
                {"name":"b","servers":[{"addr":"1.1.1.3:1"},{"addr":"1.1.1.4:1"}]}]}"#,
        );
        let e = pick(&all, None).map(|_| ()).unwrap_err().to_string();
        assert!(e.contains("--upstream (a, b)"), "{e}");
    }

    #[test]
    fn a_sticky_upstream_says_how_its_sessions_stay() {
        let all = api(
            r#"{"upstreams":[{"name":"app","sticky":{"mode":"learn","cookie":"JSESSIONID","sessions":12},
                "servers":[{"addr":"10.0.0.1:8080"},{"addr":"10.0.0.2:8080"}]},
                {"name":"web","sticky":null,"servers":[{"addr":"10.0.0.3:8080"}]}]}"#,
        );
        let said = stickiness(&all["app"]).unwrap();
        assert!(said.contains("JSESSIONID, 12 sessions known"), "{said}");
        assert!(said.contains("takes new sessions only"), "{said}");
        assert_eq!(stickiness(&all["web"]), None);
    }
}
