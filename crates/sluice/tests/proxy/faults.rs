//! The fault-injection suite: servers die, hang, answer garbage, and come back, under
//! steady load; configs change 50 times in a row. Loopback only; every load is bounded in
//! time. Each test prints one `fault-report:` line with what the clients saw.

use super::harness::*;
use super::load::{Load, Tally};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// A `sluice backend` in its own process (so that it can be killed with SIGKILL) on any
/// free port.
async fn backend_process(name: &str) -> SluiceProcess {
    SluiceProcess::backend(name, loopback()).await
}

/// Stops a `sluice serve` as SIGTERM does, and waits for it.
fn stop(p: &mut SluiceProcess) {
    p.signal("TERM");
    let _ = p.child.wait();
}

fn report(scenario: &str, tally: &Tally, extra: &str) {
    println!(
        "fault-report: {scenario} | sent {} | failed {} | {extra}",
        tally.sent,
        tally.failures.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_one_of_three_backends_loses_no_get() {
    let mut backends = Vec::new();
    for i in 0..3 {
        backends.push(backend_process(&format!("b{i}")).await);
    }
    let addrs: Vec<SocketAddr> = backends.iter().map(SluiceProcess::addr).collect();
    let p = proxy(&one_upstream(&addrs, "retries = 1"));
    let load = Load::start(
        p.addr,
        8,
        "/",
        Duration::from_secs(10),
        Duration::from_secs(1),
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    let killed_at = load.started.elapsed();
    backends[1].kill();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let tally = load.stop().await;
    let last_b1 = tally
        .timeline
        .iter()
        .filter(|(_, n, _)| n == "b1")
        .map(|(at, _, _)| *at)
        .max()
        .unwrap_or_default();
    report(
        "kill -9 one of three backends",
        &tally,
        &format!("killed at {killed_at:?}; its last answer at {last_b1:?}"),
    );
    assert!(tally.sent > 500, "too little load: {}", tally.sent);
    assert_eq!(tally.failures, vec![], "clients saw failures");
    assert!(tally.by_backend["b0"] > 0 && tally.by_backend["b2"] > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_server_that_never_answers_is_ejected() {
    let hole = raw_backend(|mut s| async move {
        read_head(&mut s).await;
        tokio::time::sleep(Duration::from_secs(30)).await;
    })
    .await;
    let good = [backend("g1").await, backend("g2").await];
    let extra = "read_timeout = \"300ms\"\nretries = 1\nmax_fails = 2\neject_for = \"30s\"";
    let p = proxy(&one_upstream(&[good[0], hole, good[1]], extra));
    let load = Load::start(
        p.addr,
        6,
        "/",
        Duration::from_secs(10),
        Duration::from_millis(250),
    );
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let tally = load.stop().await;
    let last_slow = tally.slow.iter().max().copied().unwrap_or_default();
    report(
        "server accepts, never answers (read_timeout 300ms)",
        &tally,
        &format!(
            "{} requests delayed by a timeout, the last at {last_slow:?}",
            tally.slow.len()
        ),
    );
    // Every request that met the silent server was retried elsewhere: none failed. Only
    // requests picked before its ejection (max_fails = 2, 6 clients) were delayed.
    assert_eq!(tally.failures, vec![], "clients saw failures");
    assert!(
        tally.slow.len() <= 8,
        "{} requests hit the silent server",
        tally.slow.len()
    );
    assert!(
        last_slow < Duration::from_millis(1500),
        "still hitting the silent server at {last_slow:?}"
    );
}

/// Starts `sluice serve` as a child with `body`, logging at info level.
async fn serve_logged(name: &str, body: &str) -> SluiceProcess {
    let config = format!("shutdown_grace = \"1s\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n{body}");
    SluiceProcess::serve(name, &config, "info").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn servers_answering_503_or_garbage_are_ejected() {
    let unavailable = raw_backend(|mut s| async move {
        while read_head(&mut s).await {
            if s.write_all(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
        }
    })
    .await;
    let garbage = raw_backend(|mut s| async move {
        if read_head(&mut s).await {
            let _ = s.write_all(b"HTTP/1.1 two hundred\r\n\r\n").await;
        }
    })
    .await;
    let good = backend("good").await;
    let mut child = serve_logged(
        "garbage.toml",
        &one_upstream(&[unavailable, garbage, good], "eject_for = \"30s\""),
    )
    .await;
    let addr = child.addr();
    let load = Load::start(
        addr,
        4,
        "/",
        Duration::from_secs(10),
        Duration::from_secs(1),
    );
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let tally = load.stop().await;
    stop(&mut child);
    let log = child.log();
    let last_failure = tally
        .failures
        .iter()
        .map(|(at, _)| *at)
        .max()
        .unwrap_or_default();
    let count = |status| tally.failures.iter().filter(|f| f.1 == status).count();
    let seen = format!(
        "{} x 503, {} x 502; last failure at {last_failure:?}",
        count(503),
        count(502)
    );
    report("servers answering 503 / malformed HTTP", &tally, &seen);
    // Each bad server fails at most max_fails (3) times plus what was in flight when it
    // was ejected, then never again.
    assert!(
        tally.failures.len() <= 12,
        "{} failures",
        tally.failures.len()
    );
    assert!(
        tally.failures.iter().all(|(_, s)| *s == 503 || *s == 502),
        "{:?}",
        tally.failures
    );
    assert!(
        last_failure < Duration::from_millis(1000),
        "failures went on until {last_failure:?}"
    );
    assert!(
        log.contains("malformed") && log.contains("status=502"),
        "no 502 with its cause in the log:\n{log}"
    );
    assert_eq!(log.matches("server ejected").count(), 2, "{log}");
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn all_servers_down_then_back() {
    let mut backends = [backend_process("a").await, backend_process("b").await];
    let addrs = [backends[0].addr(), backends[1].addr()];
    let extra = "[upstream.app.health]\npath = \"/\"\ninterval = \"200ms\"\ntimeout = \"200ms\"\nrise = 1\nfall = 1";
    let p = proxy(&one_upstream(&addrs, extra));
    assert_eq!(get(p.addr, "/").await.status, 200);
    backends.iter_mut().for_each(SluiceProcess::kill);
    // Within a check interval both are marked down; then every request is a quick 503.
    p.until("both servers checked down", |s| {
        s.upstreams[0].servers.iter().all(|v| !v.checked_up)
    })
    .await;
    let mut c = Client::connect(p.addr).await;
    for _ in 0..20 {
        let started = Instant::now();
        let reply = c.get("/").await;
        assert_eq!(reply.status, 503);
        assert!(
            started.elapsed() < Duration::from_millis(100),
            "503 took {:?}",
            started.elapsed()
        );
    }
    let back = Instant::now();
    // Back on the same addresses, as a restarted server would be.
    let _revived = [
        SluiceProcess::backend("a", addrs[0]).await,
        SluiceProcess::backend("b", addrs[1]).await,
    ];
    let recovered = loop {
        if get(p.addr, "/").await.status == 200 {
            break back.elapsed();
        }
        assert!(
            back.elapsed() < Duration::from_secs(3),
            "no recovery within 3 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let tally = Tally {
        sent: 21,
        ..Default::default()
    };
    report(
        "all servers down, then back (checks every 200ms)",
        &tally,
        &format!("20 x 503 while down, each < 100ms; service back {recovered:?} after the servers"),
    );
    assert!(
        recovered < Duration::from_millis(1000),
        "recovered after {recovered:?}"
    );
}

/// Open file descriptors and resident memory (KiB) of a process.
fn fds_and_rss(pid: u32) -> (usize, u64) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let rss = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    (fds, rss)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_reloads_under_load_lose_nothing_and_leak_nothing() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    let lists = [
        vec![0, 1],
        vec![0, 1, 2],
        vec![1, 2],
        vec![0, 2],
        vec![2, 0, 1],
    ];
    let body = |i: usize| {
        one_upstream(
            &lists[i % lists.len()]
                .iter()
                .map(|s| servers[*s])
                .collect::<Vec<_>>(),
            "",
        )
    };
    let mut child = serve_logged("reload.toml", &body(0)).await;
    let addr = child.addr();
    let path = child.config.clone();
    let head = std::fs::read_to_string(&path)
        .unwrap()
        .split("[[route]]")
        .next()
        .unwrap()
        .to_string();
    let load = Load::start(
        addr,
        4,
        "/",
        Duration::from_secs(30),
        Duration::from_secs(1),
    );
    let mut before = (0, 0);
    for i in 1..=50 {
        let text = if i == 25 {
            format!("{head}[[route]]\nupstream = ")
        } else {
            format!("{head}{}", body(i))
        };
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        child.signal("HUP");
        tokio::time::sleep(Duration::from_millis(60)).await;
        if i == 5 {
            before = fds_and_rss(child.child.id());
        }
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let after = fds_and_rss(child.child.id());
    let tally = load.stop().await;
    stop(&mut child);
    let log = child.log();
    report(
        "50 reloads under load (servers added and removed, one invalid)",
        &tally,
        &format!(
            "fds {} -> {}, RSS {} -> {} KiB",
            before.0, after.0, before.1, after.1
        ),
    );
    assert_eq!(tally.failures, vec![], "clients saw failures");
    assert_eq!(log.matches("reload rejected").count(), 1, "{log}");
    assert_eq!(log.matches("reloaded").count(), 49, "{log}");
    assert!(
        after.0 <= before.0 + 16,
        "file descriptors grew from {} to {}",
        before.0,
        after.0
    );
    assert!(
        after.1 <= before.1 + 8 * 1024,
        "memory grew from {} to {} KiB",
        before.1,
        after.1
    );
    assert_eq!(tally.by_backend.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_recovered_server_ramps_up_under_slow_start() {
    let _a = backend_process("a").await;
    let mut b = backend_process("b").await;
    let addrs = [_a.addr(), b.addr()];
    let extra = "slow_start = \"2s\"\n[upstream.app.health]\npath = \"/\"\ninterval = \"100ms\"\nrise = 1\nfall = 1";
    let p = proxy(&one_upstream(&addrs, extra));
    let load = Load::start(
        p.addr,
        4,
        "/",
        Duration::from_secs(10),
        Duration::from_secs(1),
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    b.kill();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let _b = SluiceProcess::backend("b", addrs[1]).await;
    tokio::time::sleep(Duration::from_millis(2800)).await;
    let tally = load.stop().await;
    let back = tally
        .timeline
        .iter()
        .filter(|(at, n, _)| n == "b" && *at > Duration::from_millis(1000))
        .map(|(at, _, _)| *at)
        .min()
        .expect("b came back");
    let share = |from: u64, to: u64| {
        let window: Vec<_> = tally
            .timeline
            .iter()
            .filter(|(at, _, _)| {
                *at >= back + Duration::from_millis(from) && *at < back + Duration::from_millis(to)
            })
            .collect();
        window.iter().filter(|(_, n, _)| n == "b").count() as f64 / window.len().max(1) as f64
    };
    let shares = [share(0, 400), share(800, 1200), share(2000, 2400)];
    report(
        "recovered server under slow_start 2s",
        &tally,
        &format!(
            "its share after return: {:.0}% (0-0.4s), {:.0}% (0.8-1.2s), {:.0}% (2.0-2.4s)",
            100.0 * shares[0],
            100.0 * shares[1],
            100.0 * shares[2]
        ),
    );
    assert_eq!(tally.failures, vec![], "clients saw failures");
    assert!(
        shares[0] < 0.2 && shares[0] < shares[1] && shares[1] < shares[2],
        "no ramp: {shares:?}"
    );
    assert!(shares[2] > 0.4, "not back to a full share: {shares:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_keeps_pooled_connections_to_servers_that_stay() {
    let (a, b) = (backend("a").await, backend("b").await);
    let p = proxy(&format!("workers = 1\n{}", one_upstream(&[a], "")));
    let mut c = Client::connect(p.addr).await;
    for _ in 0..20 {
        assert_eq!(c.get("/").await.status, 200);
    }
    let (before, _) = backend_stats(a).await;
    let summary = p.reload(&format!("workers = 1\n{}", one_upstream(&[a, b], "")));
    assert_eq!((summary.servers_added, summary.servers_removed), (1, 0));
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..20 {
        names.insert(c.get("/").await.header("x-backend").unwrap().to_string());
    }
    let (after, _) = backend_stats(a).await;
    // One more connection: the stats request's own. The proxy reused its pooled one.
    assert_eq!(
        after,
        before + 1,
        "server a saw new connections after the reload"
    );
    assert_eq!(names.len(), 2, "the added server gets traffic: {names:?}");
}
