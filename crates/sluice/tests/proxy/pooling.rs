//! Upstream keep-alive: connections are reused, and a dead pooled one is never used.

use super::harness::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_requests_use_a_handful_of_connections() {
    let server = backend("a").await;
    let p = proxy(&format!("workers = 2\n{}", one_upstream(&[server], "")));
    let addr = p.addr;
    let clients: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                let mut c = Client::connect(addr).await;
                for _ in 0..500 {
                    assert_eq!(c.get("/").await.status, 200);
                }
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    let (connections, requests) = backend_stats(server).await;
    // Minus the stats request's own connection. At most one per concurrent client.
    assert_eq!(requests, 2001);
    assert!(
        connections - 1 <= 4,
        "2000 requests used {} upstream connections",
        connections - 1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_zero_opens_a_connection_per_request() {
    let server = backend("a").await;
    let p = proxy(&one_upstream(&[server], "keepalive = 0"));
    let mut c = Client::connect(p.addr).await;
    for _ in 0..20 {
        assert_eq!(c.get("/").await.status, 200);
    }
    assert_eq!(backend_stats(server).await.0 - 1, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pooled_connection_the_server_closed_is_not_used() {
    // Answers one request with keep-alive, then closes: the pooled connection goes stale.
    let opened = Arc::new(AtomicUsize::new(0));
    let count = opened.clone();
    let server = raw_backend(move |mut s| {
        let n = count.fetch_add(1, Ordering::SeqCst);
        async move {
            if read_head(&mut s).await {
                let body = format!("conn{n}");
                let reply = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            }
        }
    })
    .await;
    let p = proxy(&format!("workers = 1\n{}", one_upstream(&[server], "")));
    let mut c = Client::connect(p.addr).await;
    for i in 0..5 {
        let reply = c.get("/").await;
        assert_eq!((reply.status, reply.text()), (200, format!("conn{i}")));
        // Let the server's close reach the proxy's pool before the next request.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    // Also without the pause: the close races the next request; a stale connection is
    // detected at checkout or the request is resent on a new one.
    for _ in 0..20 {
        assert_eq!(c.get("/").await.status, 200);
    }
}
