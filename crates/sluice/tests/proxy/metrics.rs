//! The admin listener's `/metrics` and JSON API against known traffic: exact counters
//! and histogram counts, counters that survive reloads, a killed server seen down, the
//! token, and Prometheus' own checker on the output.

use super::harness::*;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// An admin listener on 127.0.0.1:0 for `p`.
fn admin(p: &TestProxy, token: Option<&str>) -> sluice_admin::Admin {
    let config = sluice_config::Admin::new(loopback(), token.map(String::from));
    sluice_admin::start(&config, p.view(), sluice_admin::Info::default()).unwrap()
}

/// `/metrics`, once the request counters have settled: a request is recorded just after
/// its last byte is written, which the client may read first. Two readings 20 ms apart
/// that agree on every request counter (1 s at most).
pub async fn scrape(admin: SocketAddr) -> String {
    let requests = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.starts_with("sluice_"))
            .filter(|l| l.contains("requests_total") || l.contains("_seconds_count"))
            .map(str::to_string)
            .collect()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(1);
    let mut last = scrape_once(admin).await;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = scrape_once(admin).await;
        if requests(&now) == requests(&last) || std::time::Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

async fn scrape_once(admin: SocketAddr) -> String {
    let reply = get(admin, "/metrics").await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    reply.text()
}

/// The value of the sample named `name` whose labels include all of `labels`; 0 when
/// there is none.
pub fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (n, rest) = series.split_once('{').unwrap_or((series, ""));
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|(_, v)| v.parse::<f64>().unwrap())
        .sum()
}

async fn send(addr: SocketAddr, requests: usize, host: &str) {
    let mut client = Client::connect(addr).await;
    for _ in 0..requests {
        client
            .send(&format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n"))
            .await;
        client.read_reply().await.expect("a reply");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_are_exact_after_known_traffic() {
    let (a, b) = (backend("a").await, backend("b").await);
    let config = format!(
        "workers = 2\n[[route]]\nhost = \"app.test\"\nupstream = \"app\"\n[upstream.app]\nservers = [\"{a}\", \"{b}\"]\n"
    );
    let p = proxy(&config);
    let admin = admin(&p, None);
    // 4 connections of 25 requests each, and 3 requests no route takes.
    let clients: Vec<_> = (0..4).map(|_| send(p.addr, 25, "app.test")).collect();
    futures_util::future::join_all(clients).await;
    send(p.addr, 3, "other.test").await;
    // A request is recorded once its last byte is written, which the client may read
    // first: wait (2 s at most) until the last one is in, everywhere it counts.
    let recorded = |text: &str| {
        let upstream: f64 = [a, b]
            .iter()
            .map(|s| {
                let s = s.to_string();
                let labels = [("upstream", "app"), ("server", s.as_str())];
                value(
                    text,
                    "sluice_upstream_request_duration_seconds_count",
                    &labels,
                )
            })
            .sum();
        let listener = [("listener", "127.0.0.1:0")];
        upstream >= 100.0 && value(text, "sluice_listener_requests_total", &listener) >= 103.0
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut text = scrape(admin.addr).await;
    while !recorded(&text) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        text = scrape(admin.addr).await;
    }
    let app = [("upstream", "app")];
    assert_eq!(
        value(
            &text,
            "sluice_upstream_requests_total",
            &[("upstream", "app"), ("code", "2xx")]
        ),
        100.0
    );
    for server in [a, b] {
        let s = server.to_string();
        let labels = [("upstream", "app"), ("server", s.as_str())];
        // Round robin: half each.
        assert_eq!(
            value(&text, "sluice_upstream_requests_total", &labels),
            50.0,
            "{s}"
        );
        assert_eq!(
            value(
                &text,
                "sluice_upstream_request_duration_seconds_count",
                &labels
            ),
            50.0
        );
        assert_eq!(
            value(
                &text,
                "sluice_upstream_first_byte_duration_seconds_count",
                &labels
            ),
            50.0
        );
        let inf = [labels[0], labels[1], ("le", "+Inf")];
        assert_eq!(
            value(
                &text,
                "sluice_upstream_request_duration_seconds_bucket",
                &inf
            ),
            50.0
        );
        let opened = value(&text, "sluice_upstream_connections_opened_total", &labels);
        assert!(
            (1.0..=8.0).contains(&opened),
            "pooled connections reused: {opened}"
        );
        assert_eq!(
            value(
                &text,
                "sluice_upstream_connect_duration_seconds_count",
                &labels
            ),
            opened
        );
        assert_eq!(value(&text, "sluice_upstream_up", &labels), 1.0);
        // The connections opened went back to the pool and wait there (the last one
        // may be on its way back as the scrape runs).
        let idle = value(&text, "sluice_upstream_idle_connections", &labels);
        assert!((1.0..=opened).contains(&idle), "{idle} idle of {opened}");
    }
    assert_eq!(
        value(&text, "sluice_upstream_requests_in_flight", &app),
        0.0
    );
    assert_eq!(
        value(
            &text,
            "sluice_route_requests_total",
            &[("route", "app.test/"), ("code", "2xx")]
        ),
        100.0
    );
    let listener = [("listener", "127.0.0.1:0")];
    assert_eq!(
        value(&text, "sluice_listener_requests_total", &listener),
        103.0
    );
    assert_eq!(
        value(
            &text,
            "sluice_listener_connections_accepted_total",
            &listener
        ),
        5.0
    );
    assert_eq!(
        value(
            &text,
            "sluice_listener_rejects_total",
            &[("listener", "127.0.0.1:0"), ("status", "404")]
        ),
        3.0
    );
    assert_eq!(value(&text, "sluice_config_generation", &[]), 1.0);
    assert!(value(&text, "process_resident_memory_bytes", &[]) > 1e6);
    let status: serde_json::Value =
        serde_json::from_slice(&get(admin.addr, "/api/status").await.body).unwrap();
    assert_eq!(
        (status["generation"].as_u64(), status["workers"].as_u64()),
        (Some(1), Some(2))
    );
    let ups: serde_json::Value =
        serde_json::from_slice(&get(admin.addr, "/api/upstreams").await.body).unwrap();
    assert_eq!(ups["upstreams"][0]["servers"][0]["requests"]["2xx"], 50);
    assert_eq!(ups["upstreams"][0]["servers"][1]["health"], "up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_never_go_backwards_across_twenty_reloads() {
    let (a, b) = (backend("a").await, backend("b").await);
    let upstream = |servers: &str| {
        format!("[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{servers}]\n")
    };
    let p = proxy(&upstream(&format!("\"{a}\", \"{b}\"")));
    let admin = admin(&p, None);
    let a_label = a.to_string();
    let labels = [("upstream", "app"), ("server", a_label.as_str())];
    let (mut last, mut sent) = (0.0, 0);
    for round in 0..20 {
        send(p.addr, 10, "test").await;
        sent += 10;
        // Every other reload changes the upstream (b goes and comes back): a stays, and
        // keeps its counters.
        let servers = if round % 2 == 0 {
            format!("\"{a}\"")
        } else {
            format!("\"{a}\", \"{b}\"")
        };
        p.reload(&upstream(&servers));
        let text = scrape(admin.addr).await;
        let now = value(&text, "sluice_upstream_requests_total", &labels);
        assert!(now >= last, "round {round}: {now} after {last}");
        last = now;
        assert_eq!(
            value(&text, "sluice_config_generation", &[]),
            f64::from(round + 2)
        );
        assert_eq!(
            value(&text, "sluice_reloads_total", &[("result", "applied")]),
            f64::from(round + 1)
        );
        assert_eq!(
            value(&text, "sluice_route_requests_total", &[("code", "2xx")]),
            f64::from(sent)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_seen_ejected_with_its_cause() {
    let a = backend("a").await;
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let config = format!(
        "[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{a}\", \"{dead}\"]\nmax_fails = 1\neject_for = \"30s\"\n"
    );
    let p = proxy(&config);
    let admin = admin(&p, None);
    send(p.addr, 6, "test").await;
    let text = scrape(admin.addr).await;
    let d = dead.to_string();
    let labels = [("upstream", "app"), ("server", d.as_str())];
    assert_eq!(value(&text, "sluice_upstream_up", &labels), 0.0);
    assert_eq!(value(&text, "sluice_upstream_ejected", &labels), 1.0);
    let connect = [labels[0], labels[1], ("cause", "connect")];
    assert_eq!(
        value(&text, "sluice_upstream_ejections_total", &connect),
        1.0
    );
    assert_eq!(value(&text, "sluice_upstream_retries_total", &labels), 1.0);
    assert_eq!(
        value(&text, "sluice_route_requests_total", &[("code", "2xx")]),
        6.0
    );
    let ups: serde_json::Value =
        serde_json::from_slice(&get(admin.addr, "/api/upstreams").await.body).unwrap();
    let server = &ups["upstreams"][0]["servers"][1];
    assert_eq!(server["health"], "ejected");
    assert!(server["ejected_for_s"].as_f64().unwrap() > 20.0, "{server}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_nothing_is_answered_without_it() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let token = "0123456789abcdef0123";
    let admin = admin(&p, Some(token));
    for auth in [
        "",
        "Authorization: Bearer wrong\r\n",
        "Authorization: 0123456789abcdef0123\r\n",
    ] {
        let mut c = Client::connect(admin.addr).await;
        c.send(&format!("GET /metrics HTTP/1.1\r\nHost: a\r\n{auth}\r\n"))
            .await;
        let reply = c.read_reply().await.unwrap();
        assert_eq!(reply.status, 401, "{auth:?}");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    }
    let mut c = Client::connect(admin.addr).await;
    c.send(&format!(
        "GET /metrics HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {token}\r\n\r\n"
    ))
    .await;
    assert_eq!(c.read_reply().await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs promtool"]
async fn promtool_accepts_the_metrics() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let admin = admin(&p, None);
    send(p.addr, 5, "test").await;
    let text = scrape(admin.addr).await;
    promtool_accepts(&text).await;
}

/// Runs `promtool check metrics` on `text`, which must pass without an error.
pub async fn promtool_accepts(text: &str) {
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package; scripts/test.sh installs it)");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let text = text.to_string();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || child.wait_with_output()),
    )
    .await
    .expect("promtool ends")
    .unwrap()
    .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "promtool check metrics:\n{said}\n{text}"
    );
    assert!(!said.contains("error"), "{said}");
}

async fn post(admin: SocketAddr, path: &str) -> Reply {
    let mut c = Client::connect(admin).await;
    c.send(&format!(
        "POST {path} HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"
    ))
    .await;
    c.read_reply().await.unwrap()
}

fn served(text: &str, server: SocketAddr) -> f64 {
    let s = server.to_string();
    value(
        text,
        "sluice_upstream_requests_total",
        &[("server", s.as_str())],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_server_gets_no_new_requests_and_none_fails() {
    let (a, b) = (backend("a").await, backend("b").await);
    let upstream = |servers: &str| {
        format!("[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{servers}]\n")
    };
    let p = proxy(&upstream(&format!("\"{a}\", \"{b}\"")));
    let admin = admin(&p, None);
    // Load from 4 clients while the drain happens; every request must succeed.
    let load: Vec<_> = (0..4).map(|_| send(p.addr, 200, "test")).collect();
    let drain = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        post(admin.addr, &format!("/api/upstreams/app/servers/{a}/drain")).await
    };
    let (_, reply) = tokio::join!(futures_util::future::join_all(load), drain);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let before = scrape(admin.addr).await;
    assert_eq!(
        value(&before, "sluice_route_requests_total", &[("code", "2xx")]),
        800.0
    );
    assert_eq!(
        value(&before, "sluice_route_requests_total", &[("code", "5xx")]),
        0.0
    );
    // From now on, b alone; and a stays drained across a reload that keeps it.
    p.reload(&upstream(&format!("\"{a}\", \"{b}\", \"127.0.0.1:9\"")));
    p.reload(&upstream(&format!("\"{a}\", \"{b}\"")));
    send(p.addr, 50, "test").await;
    let after = scrape(admin.addr).await;
    assert_eq!(served(&after, a), served(&before, a));
    assert_eq!(served(&after, b), served(&before, b) + 50.0);
    let ups: serde_json::Value =
        serde_json::from_slice(&get(admin.addr, "/api/upstreams").await.body).unwrap();
    assert_eq!(ups["upstreams"][0]["servers"][0]["drained"], true);
    assert_eq!(ups["upstreams"][0]["servers"][0]["health"], "drained");
    let undrain = post(
        admin.addr,
        &format!("/api/upstreams/app/servers/{a}/undrain"),
    )
    .await;
    assert_eq!(undrain.status, 200);
    send(p.addr, 10, "test").await;
    assert!(served(&scrape(admin.addr).await, a) > served(&after, a));
    let unknown = post(admin.addr, "/api/upstreams/app/servers/127.0.0.1:1/drain").await;
    assert_eq!(unknown.status, 404);
    assert!(
        unknown.text().contains("has no server 127.0.0.1:1"),
        "{}",
        unknown.text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_server_shows_its_last_errors() {
    let a = backend("a").await;
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = format!("[[route]]\npath = \"/shop/\"\nupstream = \"app\"\n[upstream.app]\nservers = [\"{a}\", \"{dead}\"]\n");
    let p = proxy(&config);
    let admin = admin(&p, None);
    let mut client = Client::connect(p.addr).await;
    for _ in 0..4 {
        client
            .send("GET /shop/cart HTTP/1.1\r\nHost: test\r\n\r\n")
            .await;
        assert_eq!(client.read_reply().await.unwrap().status, 200);
    }
    let ups: serde_json::Value =
        serde_json::from_slice(&get(admin.addr, "/api/upstreams").await.body).unwrap();
    let errors = ups["upstreams"][0]["servers"][1]["last_errors"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!errors.is_empty());
    let last = errors.last().unwrap();
    assert_eq!(
        (last["route"].as_str(), last["status"].as_u64()),
        (Some("/shop/"), Some(502))
    );
    assert!(
        last["cause"]
            .as_str()
            .unwrap()
            .starts_with("connect failed"),
        "{last}"
    );
    assert!(last["at_unix"].as_f64().unwrap() > 1.7e9);
    assert!(ups["upstreams"][0]["servers"][0]["last_errors"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_is_down_within_one_check_interval() {
    let a = backend("a").await;
    let mut b = SluiceProcess::backend("b", loopback()).await;
    let b_addr = b.addrs[0];
    let config = format!(
        "[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{a}\", \"{b_addr}\"]\n[upstream.app.health]\npath = \"/\"\ninterval = \"200ms\"\ntimeout = \"100ms\"\nfall = 1\nrise = 1\n"
    );
    let p = proxy(&config);
    let admin = admin(&p, None);
    let b_label = b_addr.to_string();
    let labels = [("upstream", "app"), ("server", b_label.as_str())];
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        value(&scrape(admin.addr).await, "sluice_upstream_up", &labels),
        1.0
    );
    b.kill();
    let killed = std::time::Instant::now();
    // Within one interval (200 ms) and its timeout, the next check finds it down.
    loop {
        let text = scrape(admin.addr).await;
        if value(&text, "sluice_upstream_up", &labels) == 0.0 {
            break;
        }
        // One interval (200 ms) plus the check's timeout (100 ms), and slack for a
        // loaded machine: a `fall` of 3 would take at least 600 ms.
        assert!(
            killed.elapsed() < Duration::from_millis(550),
            "still up after {:?}",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ups: serde_json::Value =
        serde_json::from_slice(&get(admin.addr, "/api/upstreams").await.body).unwrap();
    assert_eq!(ups["upstreams"][0]["servers"][1]["health"], "down");
    assert_eq!(ups["upstreams"][0]["servers"][1]["checked_up"], false);
    let last = &ups["upstreams"][0]["servers"][1]["last_errors"][0];
    assert_eq!(last["route"], "health check /");
    assert!(
        last["cause"].as_str().unwrap().starts_with("server down: "),
        "{last}"
    );
    // No request fails meanwhile: the down server gets none.
    send(p.addr, 10, "test").await;
    let text = scrape(admin.addr).await;
    assert_eq!(
        value(&text, "sluice_route_requests_total", &[("code", "2xx")]),
        10.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_page_cannot_use_a_loopback_admin_listener() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let admin = admin(&p, None);
    let ask = |head: String| async move {
        let mut c = Client::connect(admin.addr).await;
        c.send(&head).await;
        c.read_reply().await.unwrap()
    };
    // DNS rebinding: a name of the attacker's that resolves to 127.0.0.1.
    let rebound =
        ask("GET /api/upstreams HTTP/1.1\r\nHost: evil.example:9901\r\n\r\n".into()).await;
    assert_eq!(rebound.status, 403, "{}", rebound.text());
    // A form on another site posting to it.
    let csrf = format!("POST /api/reload HTTP/1.1\r\nHost: {}\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n\r\n", admin.addr);
    assert_eq!(ask(csrf).await.status, 403);
    // The operator's tools: curl sends no Origin; the dashboard's own origin is fine.
    let curl = format!("GET /api/status HTTP/1.1\r\nHost: {}\r\n\r\n", admin.addr);
    assert_eq!(ask(curl).await.status, 200);
    let same = format!("POST /api/upstreams/app/servers/127.0.0.1:1/drain HTTP/1.1\r\nHost: {0}\r\nOrigin: http://{0}\r\nContent-Length: 0\r\n\r\n", admin.addr);
    assert_eq!(
        ask(same).await.status,
        404,
        "not refused as foreign: the server is unknown"
    );
    let localhost = "GET /api/status HTTP/1.1\r\nHost: localhost:9901\r\n\r\n".to_string();
    assert_eq!(ask(localhost).await.status, 200);
}
