//! WebSocket tunnels through the proxy, driven by tungstenite (a WebSocket client written
//! by someone else), against the backend's echo and STOMP broker.

use super::harness::*;
use futures_util::{SinkExt, StreamExt};
use sluice_simulated::stomp::Frame;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{connect_async, MaybeTlsStream, WebSocketStream};

type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

async fn open(addr: SocketAddr, path: &str) -> Ws {
    let (ws, response) = tokio::time::timeout(
        Duration::from_secs(5),
        connect_async(format!("ws://{addr}{path}")),
    )
    .await
    .expect("handshake in time")
    .expect("handshake");
    assert_eq!(response.status(), 101);
    ws
}

/// The next text message (5 s deadline), skipping heart-beats.
async fn next_text(ws: &mut Ws) -> Option<String> {
    loop {
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(Message::Text(t)))) if t.as_str() != "\n" => {
                return Some(t.as_str().to_string())
            }
            Ok(Some(Ok(Message::Text(_) | Message::Ping(_) | Message::Pong(_)))) => continue,
            _ => return None,
        }
    }
}

async fn echo_name(ws: &mut Ws, text: &str) -> Option<String> {
    ws.send(Message::text(text)).await.ok()?;
    next_text(ws).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_echo_through_the_proxy() {
    let p = proxy(&one_upstream(&[stomp_backend("a").await], ""));
    let mut ws = open(p.addr, "/echo").await;
    for i in 0..50 {
        let text = format!("message {i} {}", "x".repeat(i * 100));
        assert_eq!(
            echo_name(&mut ws, &text).await.as_deref(),
            Some(text.as_str())
        );
    }
    ws.send(Message::Binary(vec![0u8, 1, 2, 255].into()))
        .await
        .unwrap();
    let back = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(back, Message::Binary(vec![0u8, 1, 2, 255].into()));
    ws.close(None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_upgrades_come_back_as_the_servers_answer() {
    // The route allows no upgrade: the server sees a plain GET and answers it.
    let server = stomp_backend("a").await;
    let p = proxy(&format!(
        "[[route]]\nupstream = \"app\"\nupgrade = []\n[upstream.app]\nservers = [\"{server}\"]\n"
    ));
    let err = connect_async(format!("ws://{}/echo", p.addr))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("200"), "{err}");
    // The server refuses: its 426 reaches the client as it is.
    let refusing = raw_backend(|mut s| async move {
        if read_head(&mut s).await {
            let _ = tokio::io::AsyncWriteExt::write_all(
                &mut s,
                b"HTTP/1.1 426 Upgrade Required\r\nContent-Length: 4\r\n\r\nnope",
            )
            .await;
        }
    })
    .await;
    let p = proxy(&one_upstream(&[refusing], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").await;
    let reply = c.read_reply().await.unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (426, "nope"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_tunnel_counts_as_load_for_least_conn() {
    let (a, b) = (stomp_backend("a").await, stomp_backend("b").await);
    let p = proxy(&format!(
        "workers = 1\n{}",
        one_upstream(&[a, b], "balance = \"least_conn\"")
    ));
    let mut tunnel = open(p.addr, "/echo").await;
    assert_eq!(echo_name(&mut tunnel, "hi").await.as_deref(), Some("hi"));
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..6 {
        names.insert(
            get(p.addr, "/")
                .await
                .header("x-backend")
                .unwrap()
                .to_string(),
        );
    }
    // Every request went to the server without the tunnel.
    assert_eq!(names.len(), 1, "{names:?}");
    tunnel.close(None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_tunnel_closes_after_its_idle_timeout() {
    let server = stomp_backend("a").await;
    let p = proxy(&format!("[[route]]\nupstream = \"app\"\ntunnel_idle_timeout = \"400ms\"\n[upstream.app]\nservers = [\"{server}\"]\n"));
    let mut ws = open(p.addr, "/echo").await;
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            echo_name(&mut ws, "still here").await.is_some(),
            "closed while active"
        );
    }
    let quiet = std::time::Instant::now();
    let end = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .expect("closed in time");
    assert!(
        matches!(end, None | Some(Err(_)) | Some(Ok(Message::Close(_)))),
        "{end:?}"
    );
    let after = quiet.elapsed();
    assert!(
        after >= Duration::from_millis(350) && after < Duration::from_secs(2),
        "closed after {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_closes_only_the_tunnels_of_removed_servers() {
    let (a, b) = (stomp_backend("a").await, stomp_backend("b").await);
    let p = proxy(&format!("workers = 1\n{}", one_upstream(&[a, b], "")));
    let mut first = open(p.addr, "/echo").await;
    let mut second = open(p.addr, "/echo").await;
    assert!(
        echo_name(&mut first, "1").await.is_some() && echo_name(&mut second, "2").await.is_some()
    );
    // Round robin put one tunnel on each server; find which is on b by asking b's stats.
    p.reload(&format!("workers = 1\n{}", one_upstream(&[a], "")));
    let mut alive = 0;
    for ws in [&mut first, &mut second] {
        if echo_name(ws, "after reload").await.is_some() {
            alive += 1;
        }
    }
    assert_eq!(alive, 1, "exactly the tunnel to the removed server closes");
}

/// A STOMP client on a WebSocket through the proxy.
struct Chatter {
    ws: Ws,
    room: usize,
}

impl Chatter {
    async fn join(addr: SocketAddr, room: usize) -> Chatter {
        let mut request = format!("ws://{addr}/ws?room={room}")
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("sec-websocket-protocol", "v12.stomp".parse().unwrap());
        let (mut ws, _) = connect_async(request).await.expect("handshake");
        let connect = Frame::new("CONNECT")
            .header("accept-version", "1.2")
            .header("host", "chat")
            .header("heart-beat", "0,0");
        ws.send(Message::text(connect.encode())).await.unwrap();
        assert!(next_text(&mut ws).await.unwrap().starts_with("CONNECTED"));
        let destination = format!("/topic/room.{room}");
        let subscribe = Frame::new("SUBSCRIBE")
            .header("id", "0")
            .header("destination", &destination)
            .header("receipt", "sub");
        ws.send(Message::text(subscribe.encode())).await.unwrap();
        assert!(next_text(&mut ws).await.unwrap().starts_with("RECEIPT"));
        Chatter { ws, room }
    }

    async fn say(&mut self, text: &str) {
        let frame = Frame {
            body: text.to_string(),
            ..Frame::new("SEND").header("destination", &format!("/topic/room.{}", self.room))
        };
        self.ws.send(Message::text(frame.encode())).await.unwrap();
    }

    /// Messages received until `expected` arrived or nothing came for a second.
    async fn hear(&mut self, expected: usize) -> usize {
        let mut heard = 0;
        while heard < expected {
            match tokio::time::timeout(Duration::from_secs(1), self.ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) if t.as_str().starts_with("MESSAGE") => heard += 1,
                Ok(Some(Ok(_))) => {}
                _ => break,
            }
        }
        heard
    }
}

/// 310 clients in 31 rooms each say one thing; returns how many of the 3,100 deliveries
/// (10 per client) arrived, and how many rooms were split over servers.
async fn chat(balance: &str) -> (usize, usize) {
    let servers = [
        stomp_backend("s1").await,
        stomp_backend("s2").await,
        stomp_backend("s3").await,
    ];
    let p = proxy(&one_upstream(&servers, balance));
    let mut chatters = Vec::new();
    for i in 0..310 {
        chatters.push(Chatter::join(p.addr, i % 31).await);
    }
    for (i, c) in chatters.iter_mut().enumerate() {
        c.say(&format!("hello from {i}")).await;
    }
    let heard: Vec<usize> =
        futures_util::future::join_all(chatters.iter_mut().map(|c| c.hear(10))).await;
    let _ = &p;
    let mut rooms: HashMap<usize, Vec<usize>> = HashMap::new();
    for (c, h) in chatters.iter().zip(&heard) {
        rooms.entry(c.room).or_default().push(*h);
    }
    let split = rooms.values().filter(|h| h.iter().any(|n| *n < 10)).count();
    (heard.iter().sum(), split)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn chat_rooms_stay_whole_with_hashing_and_split_with_round_robin() {
    let (hashed, hashed_split) = chat("balance = \"hash\"\nhash_key = \"$arg_room\"").await;
    let (round_robin, rr_split) = chat("balance = \"round_robin\"").await;
    println!("chat: hash on $arg_room delivered {hashed} of 3100 ({hashed_split} rooms short); round robin {round_robin} of 3100 ({rr_split} rooms short)");
    assert_eq!((hashed, hashed_split), (3100, 0));
    assert!(
        round_robin < 1500 && rr_split == 31,
        "round robin delivered {round_robin}, {rr_split} rooms short"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_shutdown_a_tunnel_gets_the_grace_period_then_closes() {
    let p = proxy(&one_upstream(&[stomp_backend("a").await], ""));
    let mut ws = open(p.addr, "/echo").await;
    p.shutdown();
    let started = std::time::Instant::now();
    // Within the grace period (2 s) the tunnel still works ...
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        echo_name(&mut ws, "still open").await.as_deref(),
        Some("still open")
    );
    // ... and after it, it is closed.
    let end = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .expect("closed after the grace period");
    assert!(
        matches!(end, None | Some(Err(_)) | Some(Ok(Message::Close(_)))),
        "{end:?}"
    );
    let after = started.elapsed();
    assert!(
        after >= Duration::from_millis(1800) && after < Duration::from_secs(4),
        "closed after {after:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stomp_backend_answers_receipts_unsubscribes_and_errors() {
    let p = proxy(&one_upstream(&[stomp_backend("a").await], ""));
    let mut c = Chatter::join(p.addr, 7).await;
    c.say("one").await;
    assert_eq!(c.hear(1).await, 1);
    let unsubscribe = Frame::new("UNSUBSCRIBE")
        .header("id", "0")
        .header("receipt", "u");
    c.ws.send(Message::text(unsubscribe.encode()))
        .await
        .unwrap();
    assert!(next_text(&mut c.ws)
        .await
        .unwrap()
        .starts_with("RECEIPT\nreceipt-id:u"));
    c.say("two").await;
    assert_eq!(c.hear(1).await, 0, "a message after UNSUBSCRIBE arrived");
    c.ws.send(Message::text("NOT A FRAME\0")).await.unwrap();
    let error = next_text(&mut c.ws).await.unwrap();
    assert!(error.starts_with("ERROR"), "{error}");
    let end = tokio::time::timeout(Duration::from_secs(5), c.ws.next())
        .await
        .unwrap();
    assert!(
        matches!(end, None | Some(Err(_)) | Some(Ok(Message::Close(_)))),
        "session not closed after ERROR: {end:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_reset_closes_the_server_side_of_its_tunnel() {
    let (closed_tx, closed_rx) = tokio::sync::oneshot::channel::<()>();
    let closed_tx = std::sync::Arc::new(std::sync::Mutex::new(Some(closed_tx)));
    let server = raw_backend(move |mut s| {
        let closed_tx = closed_tx.clone();
        async move {
            if !read_head(&mut s).await {
                return;
            }
            let switch = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
            let _ = tokio::io::AsyncWriteExt::write_all(&mut s, switch).await;
            let mut buf = [0u8; 64];
            // Quiet server: it only notices the end of the tunnel.
            while !matches!(tokio::io::AsyncReadExt::read(&mut s, &mut buf).await, Ok(0) | Err(_)) {}
            if let Some(tx) = closed_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
        }
    })
    .await;
    let p = proxy(&one_upstream(&[server], ""));
    let mut c = Client::connect(p.addr).await;
    c.send("GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: x\r\nSec-WebSocket-Version: 13\r\n\r\n").await;
    assert_eq!(c.read_reply().await.unwrap().status, 101);
    c.stream.set_zero_linger().unwrap();
    drop(c);
    let closed = tokio::time::timeout(Duration::from_secs(3), closed_rx).await;
    assert!(
        closed.is_ok(),
        "the server side of the tunnel stayed open after the client reset"
    );
}
