//! What the server and the client see of each other's headers.

use super::harness::*;
use tokio::io::AsyncWriteExt;

/// The headers the backend received, lower-cased names, from its `/headers` echo.
fn received(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn value<'a>(headers: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    headers
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarding_headers_are_set_and_hop_by_hop_ones_stripped() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let mut c = Client::connect(p.addr).await;
    c.send(concat!(
        "GET /headers?q=1 HTTP/1.1\r\nHost: shop.test:8080\r\nX-Forwarded-For: 203.0.113.7\r\nX-Real-IP: 6.6.6.6\r\n",
        "X-Forwarded-Proto: https\r\nConnection: keep-alive, X-Private\r\nX-Private: secret\r\nKeep-Alive: timeout=5\r\n",
        "TE: trailers\r\nProxy-Connection: keep-alive\r\nUpgrade: h2c\r\nX-App: kept\r\nCookie: a=1\r\n\r\n"
    ))
    .await;
    let reply = c.read_reply().await.unwrap();
    let text = reply.text();
    assert!(text.starts_with("GET /headers?q=1 HTTP/1.1"), "{text}");
    let h = received(&text);
    assert_eq!(value(&h, "host"), ["shop.test:8080"]);
    assert_eq!(value(&h, "x-forwarded-for"), ["203.0.113.7, 127.0.0.1"]);
    assert_eq!(value(&h, "x-real-ip"), ["127.0.0.1"]);
    assert_eq!(value(&h, "x-forwarded-proto"), ["http"]);
    assert_eq!(value(&h, "x-forwarded-host"), ["shop.test:8080"]);
    assert_eq!(value(&h, "x-app"), ["kept"]);
    assert_eq!(value(&h, "cookie"), ["a=1"]);
    for hop in [
        "connection",
        "x-private",
        "keep-alive",
        "te",
        "proxy-connection",
        "upgrade",
    ] {
        assert!(value(&h, hop).is_empty(), "{hop} was forwarded: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn response_hop_by_hop_headers_are_stripped_and_server_kept() {
    let server = raw_backend(|mut s| async move {
        while read_head(&mut s).await {
            let reply = "HTTP/1.1 200 OK\r\nServer: app/1.0\r\nConnection: keep-alive, X-Internal\r\nX-Internal: 1\r\nKeep-Alive: timeout=5\r\nContent-Length: 2\r\n\r\nok";
            if s.write_all(reply.as_bytes()).await.is_err() {
                return;
            }
        }
    })
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    let reply = get(p.addr, "/").await;
    assert_eq!(reply.text(), "ok");
    assert_eq!(reply.header("server"), Some("app/1.0"));
    for hop in ["connection", "x-internal", "keep-alive"] {
        assert!(
            reply.header(hop).is_none(),
            "{hop} reached the client: {:?}",
            reply.headers
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_token_cannot_remove_the_framing() {
    let server = raw_backend(|mut s| async move {
        while read_head(&mut s).await {
            let reply =
                "HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 3\r\n\r\nhi\n";
            if s.write_all(reply.as_bytes()).await.is_err() {
                return;
            }
        }
    })
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    let mut c = Client::connect(p.addr).await;
    for _ in 0..3 {
        let reply = c.get("/").await;
        assert_eq!(
            (reply.header("content-length"), reply.text().as_str()),
            (Some("3"), "hi\n")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http10_clients_get_keep_alive_only_when_they_ask() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        .await;
    let reply = c.read_reply().await.unwrap();
    assert_eq!(
        (reply.text().as_str(), reply.header("connection")),
        ("a\n", Some("keep-alive"))
    );
    c.send("GET / HTTP/1.0\r\n\r\n").await;
    let reply = c.read_reply().await.unwrap();
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(c.is_closed().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn curl_sees_the_backend_through_the_proxy() {
    let p = proxy(&one_upstream(&[backend("a").await, backend("b").await], ""));
    let url = format!("http://{}/", p.addr);
    let curl = move || {
        std::process::Command::new("curl")
            .args(["-s", "-i", "--max-time", "5", &url, &url])
            .output()
    };
    let out = tokio::task::spawn_blocking(curl)
        .await
        .unwrap()
        .expect("curl is installed");
    let text = String::from_utf8_lossy(&out.stdout).to_lowercase();
    assert_eq!(text.matches("http/1.1 200 ok").count(), 2, "{text}");
    assert!(
        text.contains("x-backend: a") && text.contains("x-backend: b"),
        "{text}"
    );
}
