//! Soak tests: many connections and large bodies through a `sluice serve` process,
//! with bounds on what they may cost. Slow by nature, so they run in their own test
//! target (`tests/slow.rs`), still part of the test command.

use super::harness::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
    let config = format!(
        "workers = 2\nheader_timeout = \"300s\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n{}",
        one_upstream(&[server], "connect_timeout = \"10s\"")
    );
    let child = SluiceProcess::serve("many.toml", &config, "warn").await;
    let addr = child.addr();
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
    drop(child);
}

/// Peak resident memory of a process, from /proc.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gibibyte_each_way_in_bounded_memory() {
    const GIB: u64 = 1 << 30;
    let server = backend("a").await;
    let config = format!(
        "workers = 2\n[[listener]]\nbind = \"127.0.0.1:0\"\n{}",
        one_upstream(&[server], "")
    );
    let sluice = SluiceProcess::serve("sluice.toml", &config, "warn").await;
    let addr = sluice.addr();

    let mut c = Client::connect(addr).await;
    c.send(&format!("GET /bytes?n={GIB} HTTP/1.1\r\nHost: a\r\n\r\n"))
        .await;
    assert_eq!(count_body(&mut c.stream).await, GIB);

    let mut up = Client::connect(addr).await;
    up.send(&format!(
        "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: {GIB}\r\n\r\n"
    ))
    .await;
    let block = vec![b'u'; 256 * 1024];
    for _ in 0..GIB / block.len() as u64 {
        up.stream.write_all(&block).await.unwrap();
    }
    assert_eq!(
        up.read_reply().await.unwrap().text(),
        format!("received {GIB} bytes\n")
    );

    let peak = peak_rss_kib(sluice.child.id());
    drop(sluice);
    assert!(peak < 48 * 1024, "sluice peaked at {peak} KiB moving 2 GiB");
}

/// Reads one response with a Content-Length body, counting the body without keeping it.
async fn count_body(stream: &mut tokio::net::TcpStream) -> u64 {
    let mut buf = vec![0u8; 256 * 1024];
    let mut head = Vec::new();
    let (length, mut counted) = loop {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed before the head");
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            let text = String::from_utf8_lossy(&head[..end]).to_lowercase();
            let length: u64 = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            break (length, (head.len() - end - 4) as u64);
        }
    };
    while counted < length {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed after {counted} of {length} bytes");
        counted += n as u64;
    }
    counted
}
