//! Clients that hold what a listener has: silent connections to the admin listener,
//! floods of connections under a low open-file limit on the admin listener, the proxy's
//! listener and a lab backend. Each listener must hold its own (close what it must,
//! never spin a core retrying `accept`) and leave the others serving.

use super::harness::{backend, cpu_over, get, SluiceProcess};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A proxy config with one listener in front of `server`, and `[admin]` with `admin`.
fn config(server: SocketAddr, admin: &str) -> String {
    format!(
        "workers = 2\nheader_timeout = \"30s\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{server}\"]\n[admin]\nbind = \"127.0.0.1:0\"\n{admin}\n"
    )
}

/// The admin listener's address, from its start-up line (logged just after the proxy's).
async fn admin_addr(sluice: &SluiceProcess) -> SocketAddr {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let log = sluice.log();
        let line = log.lines().find(|l| l.contains("admin listener serving"));
        if let Some(addr) = line.and_then(|l| l.split("addr=").nth(1)) {
            let addr = addr.split_whitespace().next().unwrap();
            return addr.parse().unwrap();
        }
        assert!(Instant::now() < until, "no admin listener:\n{log}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `n` connections to `addr` that send nothing.
async fn silent(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    let mut all = Vec::with_capacity(n);
    for _ in 0..n {
        all.push(TcpStream::connect(addr).await.unwrap());
    }
    all
}

/// How long each connection stayed open from now (`None`: still open after `limit`).
async fn closed_within(conns: Vec<TcpStream>, limit: Duration) -> Vec<Option<Duration>> {
    let start = Instant::now();
    let waits = conns.into_iter().map(|mut c| {
        tokio::spawn(async move {
            let mut byte = [0u8; 1];
            let read = tokio::time::timeout(limit, c.read(&mut byte)).await;
            matches!(read, Ok(Ok(0) | Err(_))).then(|| start.elapsed())
        })
    });
    let mut out = Vec::new();
    for w in waits.collect::<Vec<_>>() {
        out.push(w.await.unwrap());
    }
    out
}

/// `sluice status`'s source, `/api/status` on the admin listener: its HTTP status.
async fn admin_status(admin: SocketAddr) -> u16 {
    get(admin, "/api/status").await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_silent_admin_connections_are_closed_by_the_head_deadline() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let app = backend("a").await;
    let config = config(app, "header_timeout = \"2s\"");
    let sluice = SluiceProcess::serve("admin.toml", &config, "warn,sluice_admin=info").await;
    let admin = admin_addr(&sluice).await;
    let mut conns = silent(admin, 1000).await;
    // One more sends part of a head and stops.
    let mut slow = TcpStream::connect(admin).await.unwrap();
    slow.write_all(b"GET /api/status HTTP/1.1\r\n")
        .await
        .unwrap();
    conns.push(slow);
    let opened = Instant::now();
    let closed = closed_within(conns, Duration::from_secs(8)).await;
    let open = closed.iter().filter(|c| c.is_none()).count();
    assert_eq!(
        open, 0,
        "{open} connections still open 8 s after they opened"
    );
    let last = closed.iter().flatten().max().unwrap();
    assert!(
        *last < Duration::from_millis(4_500),
        "the last closed {last:?} after they opened (header_timeout 2 s)"
    );
    assert!(opened.elapsed() < Duration::from_secs(8));
    // The listener still answers.
    assert_eq!(admin_status(admin).await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_flood_under_a_low_descriptor_limit_leaves_the_proxy_serving() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let app = backend("a").await;
    let config = config(app, "header_timeout = \"60s\"");
    let log = "warn,sluice_admin=info";
    let sluice = SluiceProcess::serve_with_nofile("flood.toml", &config, log, 400).await;
    let admin = admin_addr(&sluice).await;
    // Five times the descriptors the process has; the admin listener keeps 64.
    let _flood = silent(admin, 2000).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for _ in 0..10 {
        assert_eq!(get(sluice.addr(), "/").await.status, 200);
    }
    let used = cpu_over(sluice.child.id(), Duration::from_secs(2)).await;
    assert!(used < 0.1, "{used:.2} s of CPU in 2 s under an admin flood");
    let log = sluice.log();
    assert!(log.contains("open_files=400"), "{log}");
    assert!(log.contains("64 connections open, its max_conns"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_flood_at_the_client_cap_leaves_the_admin_serving_and_passes() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let app = backend("a").await;
    let config = config(app, "");
    let log = "warn,sluice_admin=info";
    let sluice = SluiceProcess::serve_with_nofile("cap.toml", &config, log, 400).await;
    let admin = admin_addr(&sluice).await;
    // 400 descriptors, 256 + 64 reserved: 80 client connections at once.
    let flood = silent(sluice.addr(), 300).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let used = cpu_over(sluice.child.id(), Duration::from_secs(2)).await;
    assert!(used < 0.1, "{used:.2} s of CPU in 2 s at the cap");
    assert_eq!(admin_status(admin).await, 200);
    let metrics = String::from_utf8(get(admin, "/metrics").await.body).unwrap();
    assert!(
        metrics.contains("sluice_client_connections_max 80"),
        "{metrics}"
    );
    // Two workers taking the last room at once may each take one: 81 at most.
    let open: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("sluice_client_connections "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no sluice_client_connections in {metrics}"));
    assert!(
        (80..=81).contains(&open),
        "{open} client connections open at a cap of 80"
    );
    let log = sluice.log();
    assert!(
        log.contains("client connections at their cap of 80"),
        "{log}"
    );
    // Once the flood ends, clients are served again.
    drop(flood);
    let reply = tokio::time::timeout(Duration::from_secs(5), get(sluice.addr(), "/")).await;
    assert_eq!(
        reply.expect("served within 5 s of the flood's end").status,
        200
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_out_of_descriptors_backs_off_logs_once_and_recovers() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let lab = SluiceProcess::backend_with_nofile("a", listen, Some(64)).await;
    let addr = lab.addr();
    // More than 64 descriptors' worth: accept fails with EMFILE for the rest.
    let flood = silent(addr, 120).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let used = cpu_over(lab.child.id(), Duration::from_secs(2)).await;
    assert!(used < 0.1, "{used:.2} s of CPU in 2 s out of descriptors");
    let log = lab.log();
    let warned = log
        .matches("out of file descriptors at 64 open files")
        .count();
    assert_eq!(warned, 1, "{log}");
    drop(flood);
    let reply = tokio::time::timeout(Duration::from_secs(5), get(addr, "/")).await;
    assert_eq!(
        reply.expect("served within 5 s of the flood's end").status,
        200
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(lab.log().contains("accepting again"), "{}", lab.log());
}
