//! The `sluice` binary: config checking, many clients at once, graceful shutdown.

use super::harness::*;
use std::process::Command;
use std::time::{Duration, Instant};

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.env("SLUICE_LOG", "warn");
    c
}

#[test]
fn check_lists_every_error_with_its_position() {
    let dir = TempDir::new("check");
    let path = dir.file("bad.toml", "[[listener]]\nbind = \"127.0.0.1:99999\"\n\n[[route]]\nupstream = \"nope\"\n\n[upstream.app]\nservers = []\nretrys = 2\n");
    let out = sluice().args(["check", "-c"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let file = path.display().to_string();
    for expected in [
        format!("{file}:2:8: `bind` = \"127.0.0.1:99999\""),
        format!("{file}:5:12: route names upstream \"nope\""),
        format!("{file}:8:11: upstream `app` has an empty server list"),
        format!("{file}:9:1: unknown key `retrys`"),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in:\n{stderr}"
        );
    }
    // serve refuses the same file the same way, before binding anything.
    let out = sluice().args(["serve", "-c"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn every_shipped_example_is_valid() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let files: Vec<_> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    assert!(!files.is_empty());
    let out = sluice()
        .arg("check")
        .arg("-c")
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sluice_on_the_same_port_is_refused() {
    let server = backend("a").await;
    let first = serve_child("", &one_upstream(&[server], "")).await;
    let text = format!(
        "[[listener]]\nbind = \"{}\"\n{}",
        first.addr(),
        one_upstream(&[server], "")
    );
    let path = first.dir.file("second.toml", &text);
    let out = sluice()
        .args(["serve", "-c"])
        .arg(&path)
        .env("TMPDIR", &first.dir.0)
        .output()
        .unwrap();
    drop(first);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already in use"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_requests_in_flight_finish() {
    let server = backend("a").await;
    let top = "shutdown_grace = \"10s\"";
    let mut child = serve_child(top, &one_upstream(&[server], "")).await;
    let addr = child.addr();
    let slow: Vec<_> = (0..3)
        .map(|_| tokio::spawn(async move { get(addr, "/delay?ms=1500").await }))
        .collect();
    let mut idle = Client::connect(addr).await;
    assert_eq!(idle.get("/").await.status, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped_at = Instant::now();
    child.signal("TERM");
    // Idle keep-alive connections are closed at once; new connections are refused.
    assert!(idle.is_closed().await);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after SIGTERM"
    );
    for request in slow {
        let reply = request.await.unwrap();
        assert_eq!((reply.status, reply.text().as_str()), (200, "a\n"));
    }
    let status = tokio::task::spawn_blocking(move || child.child.wait().unwrap())
        .await
        .unwrap();
    println!("fault-report: SIGTERM with 3 slow requests (1.5 s) in flight | sent 3 | failed 0 | all completed; exit {:?} after the signal", stopped_at.elapsed());
    assert!(status.success(), "{status:?}");
    assert!(
        stopped_at.elapsed() < Duration::from_secs(5),
        "exit took {:?}",
        stopped_at.elapsed()
    );
}

/// Starts `sluice serve` on 127.0.0.1:0 with `top` (top-level keys) and `body` (routes
/// and upstreams); returns once it accepts connections.
async fn serve_child(top: &str, body: &str) -> SluiceProcess {
    let text = format!("{top}\n[[listener]]\nbind = \"127.0.0.1:0\"\n{body}");
    SluiceProcess::serve("sluice.toml", &text, "warn").await
}

#[test]
fn the_demo_serves_its_dashboard_says_what_to_try_next_and_logs_its_stop() {
    use std::io::BufRead;
    let mut demo = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["demo", "--listen", "127.0.0.1:0"])
        .env("SLUICE_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(demo.stdout.take().unwrap()).lines();
    let (mut dashboard, mut bench) = (None, None);
    for line in lines.by_ref().map_while(Result::ok) {
        if let Some(url) = line.strip_prefix("# Watch it on the dashboard: ") {
            dashboard = Some(url.trim().to_string());
        }
        if line.trim_start().starts_with("sluice bench http://") {
            bench = Some(line.trim().to_string());
        }
        if line.starts_with("# Ctrl-C stops it.") {
            break;
        }
    }
    let dashboard = dashboard.expect("the dashboard's address");
    assert!(bench.is_some(), "a next step: the bench command");
    let page = sluice_lab::fetch::http_get(&dashboard).expect("the dashboard answers");
    assert!(
        page.contains("<html") || page.contains("<!doctype"),
        "{page}"
    );
    let status = Command::new("kill")
        .args(["-INT", &demo.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = demo.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopped"), "{stderr}");
}

/// The log of an outage: 100 failing requests, then (after the summaries' one-second
/// window) 3 more. `servers` are dead; `filter` is SLUICE_LOG; `extra`, upstream keys.
async fn outage_log(servers: &[std::net::SocketAddr], extra: &str, filter: &str) -> String {
    let top = "[[listener]]\nbind = \"127.0.0.1:0\"\n";
    let text = format!("{top}{}", one_upstream(servers, extra));
    let child = SluiceProcess::serve("sluice.toml", &text, filter).await;
    let addr = child.addr();
    for _ in 0..100 {
        assert_eq!(get(addr, "/").await.status, 502);
    }
    // After a second, the next line of each kind says how many were not logged.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    for _ in 0..3 {
        get(addr, "/").await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    child.log()
}

/// The `suppressed=` counts of the lines containing `message`, added up.
fn suppressed(log: &str, message: &str) -> u64 {
    log.lines()
        .filter(|l| l.contains(message))
        .filter_map(|l| l.split("suppressed=").nth(1))
        .filter_map(|n| n.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_logs_a_few_lines_not_one_per_request() {
    // A server nothing listens on: every request fails the same way.
    let log = outage_log(&[crate::support::free_addr()], "retries = 0", "warn").await;
    let failed = log.lines().filter(|l| l.contains("request failed"));
    let failed = failed.count();
    assert!(
        (2..=6).contains(&failed),
        "{failed} lines for 103 failed requests:\n{log}"
    );
    let counted = suppressed(&log, "request failed");
    assert!(counted >= 90, "suppressed counts add to {counted}:\n{log}");
}

/// At the default level and retries, every line counts: with one server there is no
/// other to retry on (and no line may say so); with two, the retries' lines are
/// summarised as the failures' are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_at_info_with_retries_logs_a_few_lines_in_all() {
    let one = outage_log(&[crate::support::free_addr()], "", "info").await;
    let lines = one.lines().count();
    assert!(lines <= 8, "{lines} lines for 103 failed requests:\n{one}");
    assert!(!one.contains("another server"), "{one}");

    let two = [crate::support::free_addr(), crate::support::free_addr()];
    let log = outage_log(&two, "", "info").await;
    let lines = log.lines().count();
    assert!(lines <= 16, "{lines} lines for 103 failed requests:\n{log}");
    let retried = suppressed(&log, "retrying on another server");
    assert!(retried >= 5, "suppressed retries add to {retried}:\n{log}");
}
