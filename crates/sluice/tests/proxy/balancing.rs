//! Which server gets each request.

use super::harness::*;
use std::time::Duration;

/// The `X-Backend` of `n` sequential requests, each on a new connection (so they spread
/// over every worker).
async fn sequence(addr: std::net::SocketAddr, n: usize) -> String {
    let mut names = String::new();
    for _ in 0..n {
        names.push_str(get(addr, "/").await.header("x-backend").unwrap());
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_robin_is_exact_across_workers() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    let p = proxy(&format!("workers = 2\n{}", one_upstream(&servers, "")));
    assert_eq!(sequence(p.addr, 9).await, "abcabcabc");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn smooth_weighted_sequence_matches_nginx() {
    let (a, b, c) = (backend("a").await, backend("b").await, backend("c").await);
    let body = format!("[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{{ addr = \"{a}\", weight = 5 }}, \"{b}\", \"{c}\"]\n");
    let p = proxy(&body);
    assert_eq!(sequence(p.addr, 14).await, "aabacaaaabacaa");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn least_conn_steers_away_from_a_slow_server() {
    let slow = backend_with_delay("slow", Duration::from_millis(150)).await;
    let fast = backend_with_delay("fast", Duration::from_millis(2)).await;
    let p = proxy(&one_upstream(&[slow, fast], "balance = \"least_conn\""));
    let addr = p.addr;
    let clients: Vec<_> = (0..8)
        .map(|_| {
            tokio::spawn(async move {
                let mut c = Client::connect(addr).await;
                let mut names = Vec::new();
                for _ in 0..10 {
                    names.push(c.get("/").await.header("x-backend").unwrap().to_string());
                }
                names
            })
        })
        .collect();
    let mut slow_count = 0;
    let mut total = 0;
    for c in clients {
        for name in c.await.unwrap() {
            total += 1;
            slow_count += usize::from(name == "slow");
        }
    }
    // Round robin would send the slow server half (40). Least connections sends it only
    // what arrives while the fast one is busier, a small share.
    assert_eq!(total, 80);
    assert!(slow_count <= 16, "slow server got {slow_count} of 80");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_two_uses_every_server() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    let p = proxy(&one_upstream(&servers, "balance = \"random_two\""));
    let names = sequence(p.addr, 60).await;
    for name in ["a", "b", "c"] {
        let n = names.matches(name).count();
        assert!(n >= 8, "{name} got {n} of 60: {names}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_by_host_then_longest_prefix() {
    let (api, web, admin) = (
        backend("api").await,
        backend("web").await,
        backend("admin").await,
    );
    let body = format!(
        "[[route]]\nupstream = \"web\"\n[[route]]\npath = \"/api/\"\nupstream = \"api\"\n[[route]]\nhost = \"admin.example.com\"\nupstream = \"admin\"\n\
         [upstream.web]\nservers = [\"{web}\"]\n[upstream.api]\nservers = [\"{api}\"]\n[upstream.admin]\nservers = [\"{admin}\"]\n"
    );
    let p = proxy(&body);
    let mut c = Client::connect(p.addr).await;
    let mut ask = async |host: &str, path: &str| {
        c.send(&format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"))
            .await;
        c.read_reply()
            .await
            .unwrap()
            .header("x-backend")
            .unwrap()
            .to_string()
    };
    assert_eq!(ask("shop.test", "/").await, "web");
    assert_eq!(ask("shop.test", "/api/users").await, "api");
    assert_eq!(ask("shop.test", "/apix").await, "web");
    assert_eq!(ask("ADMIN.example.com:8080", "/api/users").await, "admin");
}
