//! Drains and trial limits with a lease, as `sluice lab` takes them through a running
//! sluice's admin API: a lease not renewed ends by itself (the upstream is left as it
//! was even if the tool is killed), a renewed one holds, an operator's drain is never
//! taken over, a larger trial `max_conns` lets queued requests in at once, and each
//! upstream's `changes` counts every change to it but a renewal.

use super::harness::*;
use serde_json::Value;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// A sluice serving upstream `app` with `servers`, with an admin listener; and the
/// admin listener's address.
async fn sluice(servers: &[SocketAddr], extra: &str) -> (SluiceProcess, SocketAddr) {
    let admin = crate::support::free_addr();
    let child = SluiceProcess::serve("sluice.toml", &config(admin, servers, extra), "warn").await;
    (child, admin)
}

fn config(admin: SocketAddr, servers: &[SocketAddr], extra: &str) -> String {
    let list: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    format!(
        "[admin]\nbind = \"{admin}\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{}]\n{extra}",
        list.join(", ")
    )
}

async fn post(admin: SocketAddr, path: &str) -> (u16, Value) {
    let mut c = Client::connect(admin).await;
    c.send(&format!(
        "POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"
    ))
    .await;
    let reply = c.read_reply().await.unwrap();
    (reply.status, serde_json::from_slice(&reply.body).unwrap())
}

/// `POST .../servers/SERVER/VERB` (with `query`, e.g. `?lease=1s`).
async fn act(admin: SocketAddr, server: SocketAddr, verb: &str, query: &str) -> (u16, Value) {
    post(
        admin,
        &format!("/api/upstreams/app/servers/{server}/{verb}{query}"),
    )
    .await
}

/// Upstream `app` as `GET /api/upstreams` shows it.
async fn app(admin: SocketAddr) -> Value {
    let reply = get(admin, "/api/upstreams").await;
    let all: Value = serde_json::from_slice(&reply.body).unwrap();
    all["upstreams"][0].clone()
}

/// Server `addr` of upstream `app`.
fn server(app: &Value, addr: SocketAddr) -> Value {
    let list = app["servers"].as_array().unwrap();
    let found = list.iter().find(|s| s["addr"] == addr.to_string());
    found.cloned().unwrap_or(Value::Null)
}

/// Which backends answer `n` requests.
async fn answered_by(proxy: SocketAddr, n: usize) -> Vec<String> {
    let mut c = Client::connect(proxy).await;
    let mut names = Vec::new();
    for _ in 0..n {
        let reply = c.get("/").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        names.push(reply.header("x-backend").unwrap_or("").to_string());
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_not_renewed_runs_out_and_the_server_takes_requests_again() {
    let (a, b) = (backend("a").await, backend("b").await);
    let (child, admin) = sluice(&[a, b], "").await;
    assert_eq!(app(admin).await["changes"], 0);
    let drained_at = Instant::now();
    let (status, drained) = act(admin, a, "drain", "?lease=1s").await;
    assert_eq!(status, 200, "{drained}");
    assert_eq!(drained["drained"], true);
    assert_eq!(drained["changes"], 1);
    let lease = drained["lease_ms"].as_u64().unwrap();
    assert!((900..=1000).contains(&lease), "{drained}");
    assert!(answered_by(child.addr(), 6).await.iter().all(|n| n == "b"));
    // Undrained by sluice itself, once the lease is over and within a tick or two.
    let deadline = drained_at + Duration::from_secs(5);
    let app = loop {
        let app = app(admin).await;
        if server(&app, a)["drained"] == false {
            break app;
        }
        assert!(Instant::now() < deadline, "still drained: {app}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = drained_at.elapsed();
    assert!(took >= Duration::from_secs(1), "undrained after {took:?}");
    assert!(
        took < Duration::from_millis(1800),
        "undrained after {took:?}"
    );
    assert_eq!(app["changes"], 2, "drain and expiry: {app}");
    assert_eq!(server(&app, a)["lease_ms"], Value::Null);
    assert!(answered_by(child.addr(), 6).await.iter().any(|n| n == "a"));
    let log = child.log();
    let line = log
        .lines()
        .find(|l| l.contains("the drain's lease ran out"));
    let line = line.unwrap_or_else(|| panic!("no expiry logged:\n{log}"));
    assert!(line.contains("WARN") && line.contains("app") && line.contains(&a.to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_renewed_holds_the_drain_and_counts_one_change() {
    let (a, b) = (backend("a").await, backend("b").await);
    let (child, admin) = sluice(&[a, b], "").await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(2) {
        let (status, renewed) = act(admin, a, "drain", "?lease=1s").await;
        assert_eq!(status, 200, "{renewed}");
        assert_eq!(
            (&renewed["drained"], &renewed["changes"]),
            (&true.into(), &1.into())
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let app = app(admin).await;
    assert_eq!(server(&app, a)["drained"], true, "{app}");
    assert!(server(&app, a)["lease_ms"].as_u64().is_some(), "{app}");
    assert_eq!(app["changes"], 1);
    assert!(answered_by(child.addr(), 6).await.iter().all(|n| n == "b"));
    let (status, undrained) = act(admin, a, "undrain", "").await;
    assert_eq!(status, 200);
    assert_eq!(undrained["drained"], false);
    assert_eq!(undrained["lease_ms"], Value::Null);
    assert_eq!(undrained["changes"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_drain_is_never_taken_over_and_bad_leases_are_refused() {
    let (a, b) = (backend("a").await, backend("b").await);
    let (_child, admin) = sluice(&[a, b], "").await;
    let (status, drained) = act(admin, a, "drain", "").await;
    assert_eq!(status, 200);
    assert_eq!(drained["lease_ms"], Value::Null);
    let (status, refused) = act(admin, a, "drain", "?lease=5s").await;
    assert_eq!(status, 409, "{refused}");
    let error = refused["error"].as_str().unwrap();
    assert!(error.contains("drained without a lease"), "{error}");
    let now = app(admin).await;
    assert_eq!(server(&now, a)["drained"], true);
    assert_eq!(server(&now, a)["lease_ms"], Value::Null);
    assert_eq!(now["changes"], 1);
    for (query, says) in [
        ("?lease=soon", "\"soon\" is not a duration"),
        ("?lease=0s", "is zero"),
        ("?lease=2h", "longer than an hour"),
        ("?leas=5s", "unknown parameter \"leas\""),
    ] {
        let (status, refused) = act(admin, b, "drain", query).await;
        assert_eq!(status, 400, "{query}: {refused}");
        let error = refused["error"].as_str().unwrap();
        assert!(error.contains(says), "{query}: {error}");
    }
    let (status, refused) = act(admin, b, "undrain", "?lease=5s").await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        app(admin).await["changes"],
        1,
        "nothing refused changed anything"
    );
    assert_eq!(server(&app(admin).await, b)["drained"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_count_a_change_of_servers_and_keep_a_leased_drain() {
    let (a, b, c) = (backend("a").await, backend("b").await, backend("c").await);
    let (child, admin) = sluice(&[a, b, c], "").await;
    assert_eq!(act(admin, c, "drain", "?lease=30s").await.1["changes"], 1);
    assert_eq!(act(admin, c, "drain", "?lease=30s").await.1["changes"], 1);
    let reload = |servers: &[SocketAddr], extra: &str| {
        std::fs::write(&child.config, config(admin, servers, extra)).unwrap();
        post(admin, "/api/reload")
    };
    assert_eq!(reload(&[a, c], "").await.0, 200);
    let app1 = app(admin).await;
    assert_eq!(app1["changes"], 2, "{app1}");
    // The same servers with other settings, or the same file: no change, and the
    // server that stays keeps its drain and its lease.
    assert_eq!(reload(&[a, c], "balance = \"least_conn\"").await.0, 200);
    assert_eq!(reload(&[a, c], "balance = \"least_conn\"").await.0, 200);
    let app2 = app(admin).await;
    assert_eq!(app2["changes"], 2, "{app2}");
    assert_eq!(server(&app2, c)["drained"], true);
    let lease = server(&app2, c)["lease_ms"].as_u64().unwrap();
    assert!((20_000..=30_000).contains(&lease), "{app2}");
    assert!(answered_by(child.addr(), 6).await.iter().all(|n| n == "a"));
    // A server added back is a change too; it comes back undrained.
    assert_eq!(reload(&[a, b, c], "").await.0, 200);
    let app3 = app(admin).await;
    assert_eq!(app3["changes"], 3, "{app3}");
    assert_eq!(server(&app3, b)["drained"], false);
}

/// Waits (at most 3 s) until upstream `app` is as `holds` wants it; `what` for the error.
async fn until(admin: SocketAddr, what: &str, holds: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let app = app(admin).await;
        if holds(&app) {
            return app;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "never {what}: {app}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until server `addr` of `app` shows `key` = `value`.
async fn until_server(admin: SocketAddr, addr: SocketAddr, key: &str, value: Value) -> Value {
    until(admin, &format!("{key} = {value}"), |app| {
        server(app, addr)[key] == value
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_limit_lets_queued_requests_in_and_the_configs_comes_back_with_its_lease() {
    let slow = backend_with_delay("slow", Duration::from_millis(1500)).await;
    let (child, admin) = sluice(&[slow], "max_conns = 1\n").await;
    let proxy = child.addr();
    // Two requests at once on a server limited to one: one in service, one queued.
    let requests: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { Client::connect(proxy).await.get("/").await }))
        .collect();
    until(admin, "one in service, one queued", |app| {
        server(app, slow)["in_flight"] == 1 && app["queue"]["waiting"] == 1
    })
    .await;
    let (status, tried) = act(admin, slow, "limit", "?max_conns=2&lease=1s").await;
    assert_eq!(status, 200, "{tried}");
    assert_eq!(
        (
            &tried["max_conns"],
            &tried["max_conns_config"],
            &tried["changes"]
        ),
        (&2.into(), &1.into(), &1.into())
    );
    // The queued request is let in by the larger limit, not by the first one's end.
    let app_now = until_server(admin, slow, "in_flight", 2.into()).await;
    assert_eq!(app_now["queue"]["waiting"], 0, "{app_now}");
    assert!(server(&app_now, slow)["limit_lease_ms"].as_u64().is_some());
    for r in requests {
        assert_eq!(r.await.unwrap().status, 200);
    }
    // Not renewed, the lease ends and the config's max_conns is back, one more change.
    let app_now = until_server(admin, slow, "max_conns", 1.into()).await;
    assert_eq!(server(&app_now, slow)["limit_lease_ms"], Value::Null);
    assert_eq!(app_now["changes"], 2, "{app_now}");
    assert!(child
        .log()
        .contains("trial max_conns ended: its lease ran out"));
    // Ended early by unlimit, as a tool does when its proof is done.
    act(admin, slow, "limit", "?max_conns=5&lease=60s").await;
    let (status, ended) = act(admin, slow, "unlimit", "").await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(
        (&ended["max_conns"], &ended["lease_ms"]),
        (&1.into(), &Value::Null)
    );
    assert_eq!(ended["changes"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trial_limit_is_refused_without_a_limit_to_change_or_with_a_bad_query() {
    let a = backend("a").await;
    let (_child, admin) = sluice(&[a], "").await;
    let (status, refused) = act(admin, a, "limit", "?max_conns=2&lease=1s").await;
    assert_eq!(status, 409, "{refused}");
    assert!(refused["error"]
        .as_str()
        .unwrap()
        .contains("has no max_conns"));
    for (query, says) in [
        ("?max_conns=2", "needs a lease"),
        ("?max_conns=zero&lease=1s", "above zero"),
        ("?max_conns=2&lease=1s&for=ever", "unknown parameter"),
    ] {
        let (status, refused) = act(admin, a, "limit", query).await;
        assert_eq!(status, 400, "{query}: {refused}");
        assert!(
            refused["error"].as_str().unwrap().contains(says),
            "{refused}"
        );
    }
    assert_eq!(app(admin).await["changes"], 0);
}
