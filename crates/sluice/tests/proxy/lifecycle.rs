//! The `sluice` binary: config checking, many clients at once, graceful shutdown.

use super::harness::*;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.env("SLUICE_LOG", "warn");
    c
}

fn write_config(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    path
}

#[test]
fn check_lists_every_error_with_its_position() {
    let path = write_config("bad.toml", "[[listener]]\nbind = \"127.0.0.1:99999\"\n\n[[route]]\nupstream = \"nope\"\n\n[upstream.app]\nservers = []\nretrys = 2\n");
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
    let (mut first, addr) = serve_child("first.toml", "", &one_upstream(&[server], "")).await;
    let text = format!(
        "[[listener]]\nbind = \"{addr}\"\n{}",
        one_upstream(&[server], "")
    );
    let path = write_config("second.toml", &text);
    let out = sluice().args(["serve", "-c"]).arg(&path).output().unwrap();
    let _ = first.kill();
    let _ = first.wait();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("already in use"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_requests_in_flight_finish() {
    let server = backend("a").await;
    let top = "shutdown_grace = \"10s\"";
    let (mut child, addr) = serve_child("graceful.toml", top, &one_upstream(&[server], "")).await;
    let slow: Vec<_> = (0..3)
        .map(|_| tokio::spawn(async move { get(addr, "/delay?ms=1500").await }))
        .collect();
    let mut idle = Client::connect(addr).await;
    assert_eq!(idle.get("/").await.status, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped_at = Instant::now();
    assert!(Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    // Idle keep-alive connections are closed at once; new connections are refused.
    assert!(idle.is_closed().await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after SIGTERM"
    );
    for request in slow {
        let reply = request.await.unwrap();
        assert_eq!((reply.status, reply.text().as_str()), (200, "a\n"));
    }
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
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

/// Starts `sluice serve` on a free port with `body` (routes and upstreams) and waits until
/// it accepts connections.
async fn serve_child(
    name: &str,
    top: &str,
    body: &str,
) -> (std::process::Child, std::net::SocketAddr) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = format!("{top}\n[[listener]]\nbind = \"127.0.0.1:{port}\"\n{body}");
    let path = write_config(name, &text);
    let child = sluice()
        .args(["serve", "-c"])
        .arg(&path)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(Instant::now() < deadline, "sluice did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (child, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_open_connections_are_all_served() {
    // No fixed connection cap (nginx's worker_connections 1024 silently capped 1,200 users
    // in the field notes): 10,000 clients hold connections to sluice at the same time, and
    // every one of them gets its answer while all stay open. Requests go in waves of 500:
    // each concurrent request may open its own connection to the one backend, whose accept
    // queue (and this machine's open-file limit) is the bottleneck otherwise, not sluice.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    const CLIENTS: usize = 10_000;
    let server = backend("a").await;
    // Every connection is opened before the first wave is sent, so the last ones wait
    // for their turn far longer than the default header_timeout (10 s from the accept).
    let (mut child, addr) = serve_child(
        "many.toml",
        "workers = 2\nheader_timeout = \"300s\"",
        &one_upstream(&[server], "connect_timeout = \"10s\""),
    )
    .await;
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        clients.push(Client::connect(addr).await);
    }
    let mut served = 0;
    let mut open = Vec::with_capacity(CLIENTS);
    while !clients.is_empty() {
        let wave: Vec<Client> = clients.drain(..clients.len().min(500)).collect();
        let tasks: Vec<_> = wave
            .into_iter()
            .map(|mut c| tokio::spawn(async move { (c.get("/").await.status, c) }))
            .collect();
        for t in tasks {
            let (status, c) = t.await.unwrap();
            assert_eq!(status, 200);
            served += 1;
            open.push(c);
        }
    }
    assert_eq!(served, CLIENTS);
    let _ = child.kill();
    let _ = child.wait();
}
