//! Bodies of every framing stream through both ways, in bounded memory.

use super::harness::*;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A backend that answers every request with the raw bytes `reply`, keeping the connection.
async fn fixed_reply(reply: &'static str) -> std::net::SocketAddr {
    raw_backend(move |mut s| async move {
        while read_head(&mut s).await {
            if s.write_all(reply.as_bytes()).await.is_err() {
                return;
            }
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_request_bodies_reach_the_server() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\n").await;
    assert_eq!(c.read_reply().await.unwrap().text(), "received 11 bytes\n");
    c.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcd")
        .await;
    assert_eq!(c.read_reply().await.unwrap().text(), "received 4 bytes\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_responses_pass_through_and_are_decoded_for_http10() {
    let server = fixed_reply(
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
    )
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    let mut c = Client::connect(p.addr).await;
    for _ in 0..3 {
        let reply = c.get("/").await;
        assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
        assert_eq!(reply.text(), "abcde");
    }
    let mut old = Client::connect(p.addr).await;
    old.send("GET / HTTP/1.0\r\n\r\n").await;
    let reply = old.read_reply().await.unwrap();
    assert_eq!(
        (reply.header("transfer-encoding"), reply.text().as_str()),
        (None, "abcde")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_delimited_responses_close_the_client_connection() {
    let server = raw_backend(|mut s| async move {
        read_head(&mut s).await;
        let _ = s.write_all(b"HTTP/1.0 200 OK\r\n\r\nuntil close").await;
    })
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    let mut c = Client::connect(p.addr).await;
    let reply = c.get("/").await;
    assert_eq!(
        (reply.text().as_str(), reply.header("connection")),
        ("until close", Some("close"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("GET /delay?ms=30 HTTP/1.1\r\nHost: a\r\n\r\nPOST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nxyzGET /headers HTTP/1.1\r\nHost: third\r\n\r\n").await;
    assert_eq!(c.read_reply().await.unwrap().text(), "a\n");
    assert_eq!(c.read_reply().await.unwrap().text(), "received 3 bytes\n");
    assert!(c.read_reply().await.unwrap().text().contains("host: third"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_requests_and_expect_continue() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("HEAD /bytes?n=100 HTTP/1.1\r\nHost: a\r\n\r\n")
        .await;
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(5), c.stream.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    let head = String::from_utf8_lossy(&buf[..n]).to_string();
    assert!(
        head.contains("content-length: 100") && head.ends_with("\r\n\r\n"),
        "{head}"
    );
    // The connection is still in sync: the next response is the right one.
    assert_eq!(c.get("/").await.text(), "a\n");
    c.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        .await;
    let interim = c.read_reply().await.unwrap();
    assert_eq!(interim.status, 100);
    c.send("ok").await;
    assert_eq!(c.read_reply().await.unwrap().text(), "received 2 bytes\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_answering_before_reading_the_upload_is_heard_at_once() {
    // The server refuses the upload from its head alone (a 413, as an auth or size check
    // would) and never reads the body. Its answer must reach the client, not a timeout.
    let server = raw_backend(|mut s| async move {
        if read_head(&mut s).await {
            let _ = s
                .write_all(b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 4\r\n\r\nbig!")
                .await;
            tokio::time::sleep(Duration::from_secs(10)).await;
        }
    })
    .await;
    let p = proxy(&one_upstream(&[server], "read_timeout = \"5s\""));
    let mut c = Client::connect(p.addr).await;
    let size = 20 << 20;
    c.send(&format!(
        "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: {size}\r\n\r\n"
    ))
    .await;
    let started = std::time::Instant::now();
    let (mut reader, mut writer) = c.stream.split();
    let upload = async {
        let block = vec![b'u'; 64 * 1024];
        for _ in 0..size / block.len() {
            if writer.write_all(&block).await.is_err() {
                return;
            }
        }
    };
    let answer = async {
        let mut got = Vec::new();
        let mut buf = [0u8; 1024];
        while !got.windows(4).any(|w| w == b"big!") {
            match reader.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        String::from_utf8_lossy(&got).into_owned()
    };
    let reply = tokio::select! {
        reply = answer => reply,
        () = async { upload.await; std::future::pending::<()>().await } => unreachable!(),
    };
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(reply.contains("Connection: close"), "{reply}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the 413 took {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rest_of_a_half_sent_body_is_never_read_as_a_request() {
    // The server reads the head and hangs up while the client is still uploading. The
    // client's remaining bytes must not be parsed as a new request (request smuggling).
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let server = raw_backend(move |mut s| {
        let log = log.clone();
        async move {
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let line = String::from_utf8_lossy(&buf[..n])
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            log.lock().unwrap().push(line);
        }
    })
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 40\r\n\r\naaaaaaaaaa")
        .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = c
        .try_send("GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
        .await;
    let reply = c.read_reply().await.unwrap();
    assert_eq!(
        (reply.status, reply.header("connection")),
        (502, Some("close"))
    );
    assert!(c.is_closed().await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|l| !l.contains("smuggled")),
        "the server received {seen:?}"
    );
}
