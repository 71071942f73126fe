//! Every failure gets a clear status, and no input crashes the proxy.

use super::harness::*;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

/// An address with nothing listening on it.
async fn closed_port() -> std::net::SocketAddr {
    let l = tokio::net::TcpListener::bind(loopback()).await.unwrap();
    l.local_addr().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused_is_502() {
    let p = proxy(&one_upstream(&[closed_port().await], ""));
    let mut c = Client::connect(p.addr).await;
    let reply = c.get("/").await;
    assert_eq!(reply.status, 502);
    assert!(reply.header("server").is_none());
    // The request had no body, so the client connection stays usable.
    assert_eq!(c.get("/").await.status, 502);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_with_a_body_goes_to_another_server_when_a_connect_is_refused() {
    // Nothing of the body was read when the connect failed, so another server can have
    // all of it: a POST is as safe to retry here as a GET.
    let (dead, good) = (closed_port().await, backend("good").await);
    let p = proxy(&one_upstream(&[dead, good], "retries = 1\nmax_fails = 100"));
    for _ in 0..4 {
        let mut c = Client::connect(p.addr).await;
        c.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
            .await;
        let reply = c.read_reply().await.unwrap();
        assert_eq!(
            (reply.status, reply.text().as_str()),
            (200, "received 5 bytes\n")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_before_responding_is_502() {
    let server = raw_backend(|mut s| async move {
        read_head(&mut s).await;
        let _ = s.set_zero_linger();
        drop(s);
    })
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    assert_eq!(get(p.addr, "/").await.status, 502);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_response_is_502() {
    let server = raw_backend(|mut s| async move {
        read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 2OO OK\r\nContent-Length: 0\r\n\r\n")
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    })
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    assert_eq!(get(p.addr, "/").await.status, 502);
    let conflicting = raw_backend(|mut s| async move {
        read_head(&mut s).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab")
            .await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    })
    .await;
    let p = proxy(&one_upstream(&[conflicting], ""));
    assert_eq!(get(p.addr, "/").await.status, 502);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_is_504_after_read_timeout() {
    let server = raw_backend(|mut s| async move {
        read_head(&mut s).await;
        tokio::time::sleep(Duration::from_secs(10)).await;
    })
    .await;
    let p = proxy(&one_upstream(&[server], "read_timeout = \"300ms\""));
    let started = Instant::now();
    assert_eq!(get(p.addr, "/").await.status, 504);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "504 after {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_get_400_and_the_connection_closes() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    for raw in [
        "GET / HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET /a/../admin HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost:\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        "GET / HTTP/1.1\r\nBad Header: x\r\n\r\n",
        "GET nopath HTTP/1.1\r\nHost: a\r\n\r\n",
        "\x16\x03\x01\x02\x00\x01\x00\x01\x7c\x03\x03\r\n\r\n",
    ] {
        let mut c = Client::connect(p.addr).await;
        c.send(raw).await;
        let reply = c
            .read_reply()
            .await
            .unwrap_or_else(|e| panic!("{raw:?}: {e}"));
        assert_eq!(reply.status, 400, "{raw:?}");
        assert_eq!(reply.header("connection"), Some("close"));
        assert!(c.is_closed().await, "{raw:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_codings_other_than_chunked_get_501() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n")
        .await;
    assert_eq!(c.read_reply().await.unwrap().status, 501);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_after_a_head_response_never_reaches_another_client() {
    // A broken server: it answers HEAD with its body anyway, a moment later. If the
    // connection went back to the pool, those bytes would be the next client's response.
    let server = raw_backend(|mut s| async move {
        let mut buf = vec![0u8; 4096];
        loop {
            let n = match tokio::io::AsyncReadExt::read(&mut s, &mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let head = buf[..n].starts_with(b"HEAD");
            let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n";
            if s.write_all(ok).await.is_err() {
                return;
            }
            if head {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let body: &[u8] = if head { b"PWNED" } else { b"hello" };
            if s.write_all(body).await.is_err() {
                return;
            }
        }
    })
    .await;
    let p = proxy(&format!("workers = 1\n{}", one_upstream(&[server], "")));
    for _ in 0..20 {
        let mut c = Client::connect(p.addr).await;
        c.send("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n").await;
        let mut head = [0u8; 256];
        let _ = tokio::io::AsyncReadExt::read(&mut c.stream, &mut head).await;
        let reply = get(p.addr, "/").await;
        assert_eq!(reply.text(), "hello");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_heads_get_431() {
    let p = proxy(&format!(
        "max_header_bytes = 4096\n{}",
        one_upstream(&[backend("a").await], "")
    ));
    let big = "x".repeat(5000);
    let mut c = Client::connect(p.addr).await;
    c.send(&format!(
        "GET / HTTP/1.1\r\nHost: a\r\nCookie: {big}\r\n\r\n"
    ))
    .await;
    assert_eq!(c.read_reply().await.unwrap().status, 431);
    let many: String = (0..150).map(|i| format!("X-H{i}: 1\r\n")).collect();
    let mut c = Client::connect(p.addr).await;
    c.send(&format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n"))
        .await;
    assert_eq!(c.read_reply().await.unwrap().status, 431);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_sent_slowly_gets_408_at_the_total_deadline() {
    let p = proxy(&format!(
        "header_timeout = \"600ms\"\n{}",
        one_upstream(&[backend("a").await], "")
    ));
    let mut c = Client::connect(p.addr).await;
    let started = Instant::now();
    c.send("GET / HTTP/1.1\r\n").await;
    // One header line every 100 ms: each read is quick, but the head never completes.
    // A per-read timer would wait forever; the total deadline does not.
    let trickle = async {
        for i in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if c.stream
                .write_all(format!("X-Slow-{i}: 1\r\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
    };
    trickle.await;
    let reply = c.read_reply().await.unwrap();
    assert_eq!(reply.status, 408);
    assert!(started.elapsed() < Duration::from_secs(6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_is_refused_as_a_method_and_absolute_form_never_leaves_the_config() {
    let p = proxy(&one_upstream(&[backend("app").await], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n")
        .await;
    assert_eq!(c.read_reply().await.unwrap().status, 405);
    // A listener the request names: it must see no connection.
    let elsewhere = tokio::net::TcpListener::bind(loopback()).await.unwrap();
    let target = elsewhere.local_addr().unwrap();
    let mut c = Client::connect(p.addr).await;
    c.send(&format!(
        "GET http://{target}/headers HTTP/1.1\r\nHost: {target}\r\n\r\n"
    ))
    .await;
    let reply = c.read_reply().await.unwrap();
    assert_eq!(reply.header("x-backend"), Some("app"));
    assert!(
        reply.text().starts_with("GET /headers HTTP/1.1"),
        "{}",
        reply.text()
    );
    let probe = tokio::time::timeout(Duration::from_millis(200), elsewhere.accept()).await;
    assert!(
        probe.is_err(),
        "the proxy connected to the address in the request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_input_never_takes_the_proxy_down() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let mut state: u64 = 0x1234_5678;
    for round in 0..300 {
        let len = 1 + (round * 37) % 700;
        let bytes: Vec<u8> = (0..len)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                // Mix structure in: some rounds look almost like HTTP.
                if round % 3 == 0 && i < 16 {
                    b"GET / HTTP/1.1\r\n"[i]
                } else {
                    (state >> 24) as u8
                }
            })
            .collect();
        let mut c = Client::connect(p.addr).await;
        let _ = c.stream.write_all(&bytes).await;
        let _ = c.stream.shutdown().await;
        let _ = tokio::time::timeout(Duration::from_millis(50), c.read_reply()).await;
    }
    assert_eq!(get(p.addr, "/").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unrouted_requests_get_404() {
    let server = backend("a").await;
    let p = proxy(&format!("[[route]]\nhost = \"a.test\"\nupstream = \"app\"\n[upstream.app]\nservers = [\"{server}\"]\n"));
    let mut c = Client::connect(p.addr).await;
    c.send("GET / HTTP/1.1\r\nHost: b.test\r\n\r\n").await;
    assert_eq!(c.read_reply().await.unwrap().status, 404);
    c.send("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n").await;
    assert_eq!(c.read_reply().await.unwrap().status, 200);
}
