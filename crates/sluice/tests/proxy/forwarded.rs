//! Behind an L4 balancer: the PROXY protocol (v1 and v2, from a test client and from a
//! real HAProxy in `mode tcp`) gives sluice the client's address; `trusted_proxies`
//! keep a front proxy's forwarding headers.

use super::harness::*;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// What the server answered to `GET /headers` sent after `prefix`, from `from`.
async fn headers_seen(
    to: SocketAddr,
    from: std::net::IpAddr,
    prefix: &[u8],
    extra: &str,
) -> String {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    let mut s = socket.connect(to).await.unwrap();
    let mut sent = prefix.to_vec();
    sent.extend_from_slice(
        format!("GET /headers HTTP/1.1\r\nHost: a\r\n{extra}Connection: close\r\n\r\n").as_bytes(),
    );
    s.write_all(&sent).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got)).await;
    String::from_utf8_lossy(&got).to_lowercase()
}

fn listener(proxy_protocol: bool) -> String {
    format!("[[listener]]\nbind = \"127.0.0.1:0\"\nproxy_protocol = {proxy_protocol}\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_protocol_header_names_the_client() {
    let app = backend("a").await;
    let p = proxy_with(&one_upstream(&[app], ""), &listener(true));
    let local = "127.0.0.1".parse().unwrap();
    let v1 = b"PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\n";
    let seen = headers_seen(p.addr, local, v1, "").await;
    assert!(
        seen.contains("x-real-ip: 203.0.113.7") && seen.contains("x-forwarded-for: 203.0.113.7"),
        "{seen}"
    );
    let mut v2 = b"\r\n\r\n\0\r\nQUIT\n\x21\x11\x00\x0c".to_vec();
    v2.extend_from_slice(&[198, 51, 100, 20, 127, 0, 0, 1, 0x9c, 0x40, 0, 80]);
    let seen = headers_seen(p.addr, local, &v2, "").await;
    assert!(seen.contains("x-real-ip: 198.51.100.20"), "{seen}");
    // No header: closed without an answer (a request is not a header).
    let seen = headers_seen(p.addr, local, b"", "").await;
    assert!(seen.is_empty(), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_listed_balancers_may_send_a_proxy_protocol_header() {
    let app = backend("a").await;
    let listener = format!("{}proxy_protocol_from = [\"127.0.0.5\"]\n", listener(true));
    let p = proxy_with(&one_upstream(&[app], ""), &listener);
    let v1 = b"PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\n";
    // The balancer, at 127.0.0.5: its header names the client.
    let seen = headers_seen(p.addr, "127.0.0.5".parse().unwrap(), v1, "").await;
    assert!(seen.contains("x-real-ip: 203.0.113.7"), "{seen}");
    // Anyone else writing the same header: closed unread.
    let seen = headers_seen(p.addr, "127.0.0.1".parse().unwrap(), v1, "").await;
    assert!(seen.is_empty(), "{seen}");
    let err = sluice_config::parse(
        "t.toml",
        "[[listener]]\nbind = \"127.0.0.1:0\"\nproxy_protocol_from = [\"10.0.0.0/8\"]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("t.toml:3:") && err.contains("proxy_protocol = true"),
        "{err}"
    );
}

/// HAProxy in `mode tcp` on `listen`, passing connections to `server` with `send`;
/// its config's directory lives as long as it does.
struct Haproxy {
    child: std::process::Child,
    _dir: TempDir,
}

impl Haproxy {
    async fn start(server: SocketAddr, send: &str) -> (Haproxy, SocketAddr) {
        let listen = crate::support::free_addr();
        let dir = TempDir::new("haproxy");
        let cfg = format!(
            "global\n    nbthread 1\ndefaults\n    mode tcp\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\nfrontend fe\n    bind {listen}\n    default_backend be\nbackend be\n    server s1 {server} {send}\n"
        );
        let path = dir.file("haproxy.cfg", &cfg);
        let child = std::process::Command::new(haproxy())
            .args(["-f"])
            .arg(&path)
            .arg("-db")
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("haproxy runs (scripts/test.sh installs it)");
        let haproxy = Haproxy { child, _dir: dir };
        for _ in 0..100 {
            if TcpStream::connect(listen).await.is_ok() {
                return (haproxy, listen);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("haproxy did not listen on {listen}");
    }
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn haproxy() -> std::path::PathBuf {
    crate::support::tool("haproxy")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs haproxy"]
async fn behind_haproxy_in_tcp_mode_the_client_address_survives() {
    let app = backend("a").await;
    let p = proxy_with(&one_upstream(&[app], ""), &listener(true));
    // The client comes from 127.0.0.5; HAProxy connects to sluice from 127.0.0.1.
    let client = "127.0.0.5".parse().unwrap();
    for send in ["send-proxy", "send-proxy-v2"] {
        let (_haproxy, front) = Haproxy::start(p.addr, send).await;
        let seen = headers_seen(front, client, b"", "").await;
        assert!(seen.contains("x-real-ip: 127.0.0.5"), "{send}: {seen}");
    }
    // Without the PROXY protocol sluice sees only HAProxy.
    let plain = proxy_with(&one_upstream(&[app], ""), &listener(false));
    let (_haproxy, front) = Haproxy::start(plain.addr, "").await;
    let seen = headers_seen(front, client, b"", "").await;
    assert!(seen.contains("x-real-ip: 127.0.0.1"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxys_forwarding_headers_are_kept_and_others_replaced() {
    let app = backend("a").await;
    let front = "X-Forwarded-Proto: https\r\nX-Real-IP: 198.51.100.9\r\nX-Forwarded-For: 198.51.100.9\r\nX-Forwarded-Host: shop.example\r\n";
    let local = "127.0.0.1".parse().unwrap();
    let trusting = proxy(&format!(
        "trusted_proxies = [\"127.0.0.0/8\"]\n{}",
        one_upstream(&[app], "")
    ));
    let seen = headers_seen(trusting.addr, local, b"", front).await;
    for kept in [
        "x-forwarded-proto: https",
        "x-real-ip: 198.51.100.9",
        "x-forwarded-for: 198.51.100.9, 127.0.0.1",
        "x-forwarded-host: shop.example",
    ] {
        assert!(seen.contains(kept), "{kept} not in {seen}");
    }
    let wary = proxy(&format!(
        "trusted_proxies = [\"10.0.0.0/8\"]\n{}",
        one_upstream(&[app], "")
    ));
    let seen = headers_seen(wary.addr, local, b"", front).await;
    for replaced in [
        "x-forwarded-proto: http\n",
        "x-real-ip: 127.0.0.1",
        "x-forwarded-host: a",
    ] {
        assert!(seen.contains(replaced), "{replaced:?} not in {seen}");
    }
}

/// A connection that sends `sent` after `late` and stops: what sluice sent it until it
/// closed it, and when that was after the connect (`None`: still open after 5 s).
async fn stalled(to: SocketAddr, late: Duration, sent: String) -> (String, Option<Duration>) {
    let connected = std::time::Instant::now();
    let mut s = TcpStream::connect(to).await.unwrap();
    tokio::time::sleep(late).await;
    s.write_all(sent.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut got)).await;
    let closed = read.is_ok().then(|| connected.elapsed());
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

/// The PROXY header is part of what comes before the first head, not a wait of its
/// own: a header sent late leaves the head (or the h2c preface) what is left of the
/// one `header_timeout` from the accept (issue 47), and a timely head is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_proxy_protocol_header_leaves_the_head_the_rest_of_header_timeout() {
    let app = backend("a").await;
    let top = format!("header_timeout = \"2s\"\n{}", one_upstream(&[app], ""));
    let p = proxy_with(&top, &format!("{}http2 = true\n", listener(true)));
    let header = "PROXY TCP4 203.0.113.7 127.0.0.1 40000 80\r\n";
    let late = Duration::from_millis(1200);
    let sent = |rest: &str| format!("{header}{rest}");
    let (whole, request, preface) = tokio::join!(
        stalled(
            p.addr,
            late,
            sent("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
        ),
        stalled(p.addr, late, sent("GET / HT")),
        stalled(p.addr, late, sent("PRI * HT")),
    );
    assert!(whole.0.starts_with("HTTP/1.1 200 "), "{whole:?}");
    assert!(request.0.starts_with("HTTP/1.1 408 "), "{request:?}");
    for (what, (_, closed)) in [("GET / HT", request), ("part of the preface", preface)] {
        let closed = closed.unwrap_or_else(|| panic!("{what}: still open after 5 s"));
        assert!(
            closed >= Duration::from_millis(1800) && closed < Duration::from_millis(2900),
            "{what}: closed {closed:?} after it connected (header_timeout 2 s, the header 1.2 s late; a timeout of its own, 3.2 s, was the bug)"
        );
    }
}
