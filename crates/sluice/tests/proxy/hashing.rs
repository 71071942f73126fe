//! Consistent hashing and peak-EWMA through the proxy, and ketama against a real nginx.

use super::harness::*;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

fn hash_upstream(servers: &[SocketAddr], extra: &str) -> String {
    one_upstream(
        servers,
        &format!("balance = \"hash\"\nhash_key = \"$arg_room\"\n{extra}"),
    )
}

/// The backend that answers each room, asked on one keep-alive connection.
async fn rooms(addr: SocketAddr, rooms: std::ops::Range<u32>) -> HashMap<u32, String> {
    let mut c = Client::connect(addr).await;
    let mut map = HashMap::new();
    for room in rooms {
        let name = c
            .get(&format!("/ws?room={room}"))
            .await
            .header("x-backend")
            .unwrap()
            .to_string();
        map.insert(room, name);
    }
    map
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_always_reaches_the_same_server() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    for method in ["ketama", "maglev"] {
        let p = proxy(&format!(
            "workers = 2\n{}",
            hash_upstream(&servers, &format!("hash_method = \"{method}\""))
        ));
        let first = rooms(p.addr, 0..31).await;
        // Again, each request on its own connection, so they land on different workers.
        for room in 0..31 {
            let again = get(p.addr, &format!("/ws?x=1&room={room}")).await;
            assert_eq!(
                again.header("x-backend"),
                Some(first[&room].as_str()),
                "{method}: room {room} moved"
            );
        }
        let used: std::collections::HashSet<_> = first.values().collect();
        assert_eq!(
            used.len(),
            3,
            "{method}: 31 rooms should use all three servers: {first:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_server_moves_only_its_rooms_and_instances_agree() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    let three = proxy(&hash_upstream(&servers, ""));
    let twin = proxy(&hash_upstream(&servers, ""));
    let two = proxy(&hash_upstream(&[servers[0], servers[2]], ""));
    let before = rooms(three.addr, 0..300).await;
    assert_eq!(
        rooms(twin.addr, 0..300).await,
        before,
        "two sluice instances with one config disagree"
    );
    let after = rooms(two.addr, 0..300).await;
    for room in 0..300 {
        if before[&room] == "b" {
            assert_ne!(after[&room], "b");
        } else {
            assert_eq!(
                after[&room], before[&room],
                "room {room} moved though its server stayed"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_the_key_spread_over_the_servers() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    let p = proxy(&hash_upstream(&servers, ""));
    let mut c = Client::connect(p.addr).await;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..6 {
        seen.insert(c.get("/ws").await.header("x-backend").unwrap().to_string());
    }
    assert_eq!(seen.len(), 3, "keyless requests all went to {seen:?}");
}

/// Shares of a slow server among 3 under concurrent load, and the p99 latency seen.
async fn slow_share(balance: &str) -> (f64, Duration) {
    let slow = backend_with_delay("slow", Duration::from_millis(60)).await;
    let fast = [
        backend_with_delay("f1", Duration::from_millis(3)).await,
        backend_with_delay("f2", Duration::from_millis(3)).await,
    ];
    let p = proxy(&one_upstream(
        &[fast[0], slow, fast[1]],
        &format!("balance = \"{balance}\""),
    ));
    let addr = p.addr;
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            tokio::spawn(async move {
                let mut c = Client::connect(addr).await;
                let mut seen = Vec::new();
                for _ in 0..40 {
                    let started = std::time::Instant::now();
                    let name = c.get("/").await.header("x-backend").unwrap().to_string();
                    seen.push((name, started.elapsed()));
                }
                seen
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let slow_count = all.iter().filter(|(n, _)| n == "slow").count();
    let mut latencies: Vec<Duration> = all.iter().map(|(_, d)| *d).collect();
    latencies.sort();
    (
        slow_count as f64 / all.len() as f64,
        latencies[latencies.len() * 99 / 100],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn peak_ewma_sends_a_slow_server_little_where_round_robin_sends_a_third() {
    let (ewma_share, ewma_p99) = slow_share("peak_ewma").await;
    let (rr_share, rr_p99) = slow_share("round_robin").await;
    println!("slow server share: peak_ewma {ewma_share:.3} (p99 {ewma_p99:?}), round_robin {rr_share:.3} (p99 {rr_p99:?})");
    assert!(
        (rr_share - 1.0 / 3.0).abs() < 0.02,
        "round robin gave the slow server {rr_share:.3}"
    );
    assert!(
        ewma_share < 0.12,
        "peak_ewma gave the slow server {ewma_share:.3}"
    );
}

/// Ketama as nginx places it: the same three servers behind a real nginx with
/// `hash $arg_room consistent` and behind sluice must send 10,000 rooms to the same servers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nginx"]
async fn ketama_agrees_with_nginx_on_ten_thousand_keys() {
    let servers = [backend("a").await, backend("b").await, backend("c").await];
    let nginx = Nginx::start(&servers).await;
    let p = proxy(&hash_upstream(&servers, ""));
    let (ours, theirs) = tokio::join!(rooms(p.addr, 0..10_000), rooms(nginx.addr, 0..10_000));
    let agree = (0..10_000).filter(|r| ours[r] == theirs[r]).count();
    assert_eq!(
        agree, 10_000,
        "sluice and nginx agree on {agree} of 10,000 keys"
    );
}

/// An nginx started by the test, stopped on drop.
struct Nginx {
    addr: SocketAddr,
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl Nginx {
    /// Starts nginx on a free port. nginx cannot listen on port 0, so a port is picked
    /// for it; should another process take that port first, nginx fails to bind and the
    /// start is tried again on another one.
    async fn start(servers: &[SocketAddr]) -> Nginx {
        for _ in 0..5 {
            if let Some(nginx) = Self::try_start(servers).await {
                return nginx;
            }
        }
        panic!("nginx did not start on any of 5 ports");
    }

    async fn try_start(servers: &[SocketAddr]) -> Option<Nginx> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("sluice-nginx-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let upstream: String = servers.iter().map(|s| format!("server {s};\n")).collect();
        let d = dir.display();
        let conf = format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\nevents {{ worker_connections 1024; }}\n\
             http {{\n access_log off;\n keepalive_requests 100000;\n client_body_temp_path {d}/body;\n proxy_temp_path {d}/proxy;\n fastcgi_temp_path {d}/fcgi;\n uwsgi_temp_path {d}/uwsgi;\n scgi_temp_path {d}/scgi;\n\
             upstream chat {{\n hash $arg_room consistent;\n {upstream} keepalive 8;\n }}\n\
             server {{\n listen 127.0.0.1:{port};\n location / {{ proxy_pass http://chat; proxy_http_version 1.1; proxy_set_header Connection \"\"; }}\n }}\n}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), conf).unwrap();
        let child = std::process::Command::new(crate::support::tool("nginx"))
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-e")
            .arg(dir.join("error.log"))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        // Owned at once, so that Drop stops it even if it never comes up.
        let mut nginx = Nginx { addr, child, dir };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Some(nginx);
            }
            if let Ok(Some(_)) = nginx.child.try_wait() {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "nginx did not start: {}",
            std::fs::read_to_string(nginx.dir.join("error.log")).unwrap_or_default()
        );
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM, not SIGKILL: the master must live to stop its worker processes.
        let pid = self.child.id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
