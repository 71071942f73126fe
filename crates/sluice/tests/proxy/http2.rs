//! HTTP/2 towards clients: curl over TLS (ALPN h2) and over h2c with prior knowledge,
//! request and response bodies, h2load multiplexing many streams, and clients that
//! attack the protocol (rapid reset, CONTINUATION flood, HPACK bomb) cut off while
//! another client is served. The attackers are frames written by hand here.

use super::harness::{backend, backend_stats, proxy_with, TempDir, TestProxy};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn curl(args: Vec<String>) -> (i32, String) {
    super::harness::curl(&args).await
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|a| a.to_string()).collect()
}

/// A self-signed certificate for localhost (made here, with rcgen: the clients that
/// speak TLS to it, curl and h2load, do not verify it), as `cert.pem` and `key.pem` in
/// `dir`; their paths.
fn certificate(dir: &TempDir) -> (String, String) {
    let made = rcgen::generate_simple_self_signed(["localhost".to_string()]).unwrap();
    let cert = dir.file("cert.pem", &made.cert.pem());
    let key = dir.file("key.pem", &made.signing_key.serialize_pem());
    (cert.display().to_string(), key.display().to_string())
}

/// A proxy with a TLS listener (HTTP/2 by ALPN, its default) first and a plain one
/// taking h2c second, both in front of backend `a`.
async fn h2_proxy(dir: &TempDir, top: &str) -> (TestProxy, SocketAddr) {
    let app = backend("a").await;
    let (cert, key) = certificate(dir);
    let listeners = format!(
        "[[listener]]\nbind = \"127.0.0.1:0\"\ntls = {{ cert = {cert:?}, key = {key:?} }}\n[[listener]]\nbind = \"127.0.0.2:0\"\nhttp2 = true\n"
    );
    let body =
        format!("{top}\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n");
    let p = proxy_with(&body, &listeners);
    let plain = p.view().snapshot().listeners[1].bound;
    (p, plain)
}

fn https(p: &TestProxy, path: &str) -> Vec<String> {
    args(&[
        "-k",
        "--http2",
        "--resolve",
        &format!("localhost:{}:127.0.0.1", p.addr.port()),
        &format!("https://localhost:{}{path}", p.addr.port()),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn curl_speaks_http2_over_tls_and_h2c() {
    let dir = TempDir::new("h2");
    let (p, plain) = h2_proxy(&dir, "").await;
    let mut a = https(&p, "/headers");
    a.extend(args(&["-w", "%{http_version}"]));
    let (code, text) = curl(a).await;
    assert_eq!(code, 0, "{text}");
    assert!(text.ends_with("\n2"), "{text}");
    assert!(text.contains("x-forwarded-proto: https"), "{text}");
    // A request body of known length.
    let mut a = https(&p, "/upload");
    a.extend(args(&["--data", &"x".repeat(100_000)]));
    let (code, text) = curl(a).await;
    assert_eq!((code, text.as_str()), (0, "received 100000 bytes\n"));
    // A large response streams within flow control.
    let mut a = https(&p, "/bytes?n=3000000");
    a.extend(args(&[
        "-o",
        "/dev/null",
        "-w",
        "%{size_download} %{http_version}",
    ]));
    let (code, text) = curl(a).await;
    assert_eq!((code, text.as_str()), (0, "3000000 2"));
    // h2c with prior knowledge on the plain listener.
    let url = format!("http://{plain}/");
    let (code, text) = curl(args(&[
        "--http2-prior-knowledge",
        "-w",
        " %{http_version}",
        &url,
    ]))
    .await;
    assert_eq!((code, text.as_str()), (0, "a\n 2"));
    // The same listener still speaks HTTP/1.1.
    let (code, text) = curl(args(&["--http1.1", "-w", " %{http_version}", &url])).await;
    assert_eq!((code, text.as_str()), (0, "a\n 1.1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs h2load"]
async fn h2load_multiplexes_many_streams_on_few_connections() {
    let dir = TempDir::new("h2");
    let (p, _) = h2_proxy(&dir, "").await;
    let url = format!("https://127.0.0.1:{}/", p.addr.port());
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(crate::support::tool("h2load"))
            .args(["-n", "2000", "-c", "4", "-m", "20", &url])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("requests: 2000 total, 2000 started, 2000 done, 2000 succeeded, 0 failed"),
        "{text}"
    );
    assert!(text.contains("Application protocol: h2"), "{text}");
}

// ---- hand-written frames, for the attacks

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const CONTINUATION: u8 = 9;
const END_STREAM: u8 = 1;
const END_HEADERS: u8 = 4;

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = payload.len() as u32;
    let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An HPACK string (no Huffman), with its 7-bit prefixed length.
fn hpack_string(out: &mut Vec<u8>, s: &[u8]) {
    hpack_int(out, 0x00, 7, s.len());
    out.extend_from_slice(s);
}

fn hpack_int(out: &mut Vec<u8>, first: u8, bits: u32, mut n: usize) {
    let max = (1usize << bits) - 1;
    if n < max {
        out.push(first | n as u8);
        return;
    }
    out.push(first | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128 + 128) as u8);
        n /= 128;
    }
    out.push(n as u8);
}

/// `GET /` to localhost: static-table method, scheme and path, a literal authority.
fn get_block() -> Vec<u8> {
    let mut b = vec![0x82, 0x86, 0x84, 0x01];
    hpack_string(&mut b, b"localhost");
    b
}

/// A connection that has sent the preface and empty SETTINGS.
async fn attacker(addr: SocketAddr) -> TcpStream {
    let mut c = TcpStream::connect(addr).await.unwrap();
    c.write_all(PREFACE).await.unwrap();
    c.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
    c
}

/// Reads frames until GOAWAY (its error code) or the end of the connection (`None`),
/// within 10 s.
async fn goaway(c: &mut TcpStream) -> Option<u32> {
    goaway_after(c, &mut Vec::new()).await
}

/// [`goaway`], noting the type and stream of each frame before it in `frames`.
async fn goaway_after(c: &mut TcpStream, frames: &mut Vec<(u8, u32)>) -> Option<u32> {
    let until = Instant::now() + Duration::from_secs(10);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        for (kind, _, stream, payload) in split_frames(&mut buf) {
            if kind == GOAWAY && payload.len() >= 8 {
                return Some(u32::from_be_bytes(payload[4..8].try_into().unwrap()));
            }
            frames.push((kind, stream));
        }
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, c.read(&mut chunk)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return None,
            Ok(Ok(n)) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => panic!("no GOAWAY and no close within 10 s"),
        }
    }
}

/// While `attack` runs, another client keeps getting answers over HTTP/2 (h2c with
/// prior knowledge, a connection a request, as `curl --http2-prior-knowledge` asks).
async fn others_served_during(plain: SocketAddr, attack: impl std::future::Future<Output = ()>) {
    let bystander = async {
        for _ in 0..5 {
            let answer = tokio::time::timeout(Duration::from_secs(10), h2c_get(plain)).await;
            assert_eq!(
                answer.ok(),
                Some((200, b"a\n".to_vec())),
                "a bystander was not served"
            );
        }
    };
    tokio::join!(attack, bystander);
}

/// `GET /` on a new h2c connection to `plain` (the h2 crate's client): its status and body.
async fn h2c_get(plain: SocketAddr) -> (u16, Vec<u8>) {
    let tcp = TcpStream::connect(plain).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::get(format!("http://{plain}/"))
        .body(())
        .unwrap();
    let (response, _) = client.send_request(request, true).unwrap();
    let response = response.await.unwrap();
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
        bytes.extend_from_slice(&chunk);
    }
    (status, bytes)
}

/// ENHANCE_YOUR_CALM, the code h2 sends to a client that abuses the protocol.
const ENHANCE_YOUR_CALM: u32 = 0xb;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rapid_reset_is_cut_off_and_barely_reaches_the_servers() {
    let dir = TempDir::new("h2");
    let (p, plain) = h2_proxy(&dir, "[http2]\nmax_concurrent_streams = 16\n").await;
    let app = p.view().snapshot().upstreams[0].servers[0].addr;
    let before = backend_stats(app).await.1;
    let attempts = 20_000u32;
    others_served_during(plain, async {
        let mut c = attacker(plain).await;
        let mut burst = Vec::new();
        let block = get_block();
        let mut written = 0;
        for i in 0..attempts {
            let id = 2 * i + 1;
            burst.extend(frame(HEADERS, END_STREAM | END_HEADERS, id, &block));
            burst.extend(frame(RST_STREAM, 0, id, &8u32.to_be_bytes()));
            if burst.len() > 64 * 1024 {
                if c.write_all(&burst).await.is_err() {
                    break;
                }
                written = i;
                burst.clear();
            }
        }
        let code = goaway(&mut c).await;
        assert!(
            code == Some(ENHANCE_YOUR_CALM) || code.is_none(),
            "GOAWAY {code:?} after {written} resets"
        );
        assert!(written < attempts - 1, "all {attempts} resets were taken");
    })
    .await;
    let reached = backend_stats(app).await.1 - before;
    // The bystander's 5 and a handful of the attacker's, not thousands.
    assert!(reached < 200, "{reached} requests reached the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_flood_is_cut_off() {
    let dir = TempDir::new("h2");
    let (_p, plain) = h2_proxy(&dir, "").await;
    others_served_during(plain, async {
        let mut c = attacker(plain).await;
        c.write_all(&frame(HEADERS, 0, 1, &get_block()))
            .await
            .unwrap();
        let mut sent = 0usize;
        // Each CONTINUATION carries a new 1 KiB header; none ends the block.
        for i in 0..100_000 {
            let mut block = vec![0x00];
            hpack_string(&mut block, format!("x-flood-{i}").as_bytes());
            hpack_string(&mut block, &[b'v'; 1024]);
            if c.write_all(&frame(CONTINUATION, 0, 1, &block))
                .await
                .is_err()
            {
                break;
            }
            sent += block.len();
            if sent > 4 << 20 {
                break;
            }
        }
        // Cut off near max_header_bytes (16 KiB), far below 4 MiB.
        assert!(sent < 4 << 20, "4 MiB of CONTINUATION frames were taken");
        let code = goaway(&mut c).await;
        assert_ne!(code, Some(0), "closed as if all were well");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hpack_bomb_is_refused() {
    let dir = TempDir::new("h2");
    let (_p, plain) = h2_proxy(&dir, "").await;
    others_served_during(plain, async {
        let mut c = attacker(plain).await;
        // One 4 KiB header into the dynamic table, then referenced 4000 times at one
        // byte each: 16 MB of headers from 8 KiB on the wire.
        let mut block = get_block();
        block.push(0x40);
        hpack_string(&mut block, b"x-bomb");
        hpack_string(&mut block, &[b'b'; 4000]);
        block.extend(std::iter::repeat_n(0x80 | 62, 4000));
        c.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
            .await
            .unwrap();
        // The stream (or the connection) is refused; no response comes.
        let mut got = vec![0u8; 1 << 16];
        let n = tokio::time::timeout(Duration::from_secs(10), c.read(&mut got)).await;
        let n = n.expect("an answer within 10 s").unwrap_or(0);
        let frames = &got[..n];
        // SETTINGS from the server, then a RST_STREAM or GOAWAY, never HEADERS for 1.
        let mut at = 0;
        while at + 9 <= frames.len() {
            let len = (usize::from(frames[at]) << 16)
                | (usize::from(frames[at + 1]) << 8)
                | usize::from(frames[at + 2]);
            let stream =
                u32::from_be_bytes(frames[at + 5..at + 9].try_into().unwrap()) & 0x7fff_ffff;
            assert!(
                !(frames[at + 3] == HEADERS && stream == 1),
                "the bomb was answered"
            );
            at += 9 + len;
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_unknown_length_reaches_the_server_whole() {
    let dir = TempDir::new("h2");
    let (_p, plain) = h2_proxy(&dir, "").await;
    let mut c = attacker(plain).await;
    // POST /upload, no content-length: the server gets it chunked.
    let mut block = vec![0x83, 0x86, 0x04];
    hpack_string(&mut block, b"/upload");
    block.push(0x01);
    hpack_string(&mut block, b"localhost");
    c.write_all(&frame(HEADERS, END_HEADERS, 1, &block))
        .await
        .unwrap();
    for part in [&[b'a'; 1000][..], &[b'b'; 2000][..], &[][..]] {
        let flags = if part.is_empty() { END_STREAM } else { 0 };
        c.write_all(&frame(DATA, flags, 1, part)).await.unwrap();
    }
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let until = Instant::now() + Duration::from_secs(10);
    while !String::from_utf8_lossy(&got).contains("received 3000 bytes") {
        assert!(
            Instant::now() < until,
            "no answer: {:?}",
            String::from_utf8_lossy(&got)
        );
        let n = tokio::time::timeout(Duration::from_secs(10), c.read(&mut chunk)).await;
        let n = n.unwrap().unwrap();
        assert!(n > 0, "closed: {:?}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_is_sent_away_after_keepalive_timeout() {
    let dir = TempDir::new("h2");
    let (_p, plain) = h2_proxy(&dir, "keepalive_timeout = \"500ms\"").await;
    let started = Instant::now();
    let mut c = attacker(plain).await;
    // GOAWAY with NO_ERROR: a graceful end, not a complaint.
    assert_eq!(goaway(&mut c).await, Some(0));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

/// The keep-alive timeout counts from the end of the last stream: a connection whose
/// requests come more often is kept however long it lives, and one that falls silent
/// after them is sent away a timeout later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalive_timeout_counts_from_the_last_stream() {
    let dir = TempDir::new("h2");
    let (_p, plain) = h2_proxy(&dir, "keepalive_timeout = \"500ms\"").await;
    let started = Instant::now();
    let mut c = attacker(plain).await;
    // A stream every 200 ms for 1.6 s: never 500 ms without one.
    for stream in (1..=15).step_by(2) {
        let get = frame(HEADERS, END_STREAM | END_HEADERS, stream, &get_block());
        c.write_all(&get).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let last = Instant::now();
    let mut frames = Vec::new();
    let code = goaway_after(&mut c, &mut frames).await;
    assert_eq!(code, Some(0));
    let (lived, idle) = (started.elapsed(), last.elapsed());
    assert!(lived >= Duration::from_millis(1_900), "{lived:?}");
    assert!(idle < Duration::from_secs(3), "{idle:?}");
    // Every stream was answered before the GOAWAY.
    let answered = frames.iter().filter(|(kind, _)| *kind == HEADERS).count();
    assert_eq!(answered, 8, "{frames:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_idle_past_its_spare_time_serves_its_next_streams() {
    // Idle a second, a connection frees its spare stream box and the room its streams
    // left in h2's tables (issue 32); the streams after must find them again.
    let app = backend("a").await;
    let (_p, plain) = h2c_proxy(app);
    let mut c = attacker(plain).await;
    let get = |stream| frame(HEADERS, END_STREAM | END_HEADERS, stream, &get_block());
    c.write_all(&get(1)).await.unwrap();
    let frames = frames_until(&mut c, |f| answered(f, 1)).await;
    assert!(answered(&frames, 1), "{frames:?}");
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    // Three at once after the idle second, then one more.
    let burst: Vec<u8> = [3, 5, 7].into_iter().flat_map(get).collect();
    c.write_all(&burst).await.unwrap();
    let frames = frames_until(&mut c, |f| [3, 5, 7].iter().all(|&s| answered(f, s))).await;
    assert!(
        [3, 5, 7].iter().all(|&s| answered(&frames, s)),
        "{frames:?}"
    );
    c.write_all(&get(9)).await.unwrap();
    let more = frames_until(&mut c, |f| answered(f, 9)).await;
    assert!(answered(&more, 9), "{more:?}");
    let all: Vec<_> = frames.iter().chain(&more).collect();
    assert!(
        !all.iter().any(|f| f.0 == GOAWAY || f.0 == RST_STREAM),
        "{all:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn a_shutdown_lets_http2_requests_in_flight_finish() {
    let dir = TempDir::new("h2");
    let (p, _) = h2_proxy(&dir, "").await;
    let p = std::sync::Arc::new(p);
    let mut a = https(&p, "/delay?ms=800");
    a.extend(args(&["-w", " %{http_code} %{http_version}"]));
    let slow = tokio::spawn(curl(a));
    p.until_in_flight(1).await;
    let stopping = p.clone();
    tokio::task::spawn_blocking(move || stopping.shutdown())
        .await
        .unwrap();
    let (code, text) = slow.await.unwrap();
    assert_eq!((code, text.as_str()), (0, "a\n 200 2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn the_access_log_names_http2() {
    let dir = TempDir::new("h2");
    let log = dir.0.join("access.log");
    let (_p, plain) = h2_proxy(&dir, &format!("access_log = {log:?}")).await;
    let url = format!("http://{plain}/x?y=1");
    let (code, _) = curl(args(&["--http2-prior-knowledge", &url])).await;
    assert_eq!(code, 0);
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if !text.is_empty() {
            assert!(text.contains("\"GET /x?y=1 HTTP/2.0\" 200 "), "{text}");
            break;
        }
        assert!(Instant::now() < until, "nothing logged");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---- malformed requests (RFC 9113 8.1.1) are reset, and a partial preface costs nothing

const PROTOCOL_ERROR: u32 = 1;

/// A frame read back: its type, flags, stream and payload.
type Frame = (u8, u8, u32, Vec<u8>);

/// The whole frames at the start of `buf`, taken out of it.
fn split_frames(buf: &mut Vec<u8>) -> Vec<Frame> {
    let mut frames = Vec::new();
    while buf.len() >= 9 {
        let len = (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
        if buf.len() < 9 + len {
            break;
        }
        let stream = u32::from_be_bytes(buf[5..9].try_into().unwrap()) & 0x7fff_ffff;
        frames.push((buf[3], buf[4], stream, buf[9..9 + len].to_vec()));
        buf.drain(..9 + len);
    }
    frames
}

/// Reads frames until `done` holds for those read, within 10 s; all of them.
async fn frames_until(c: &mut TcpStream, done: impl Fn(&[Frame]) -> bool) -> Vec<Frame> {
    let until = Instant::now() + Duration::from_secs(10);
    let (mut buf, mut frames, mut chunk) = (Vec::new(), Vec::new(), [0u8; 16384]);
    loop {
        frames.extend(split_frames(&mut buf));
        if done(&frames) {
            return frames;
        }
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, c.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            _ => panic!("closed or 10 s passed; frames so far: {frames:?}"),
        }
    }
}

/// The error code of the RST_STREAM sent on `stream`, if one was.
fn reset_code(frames: &[Frame], stream: u32) -> Option<u32> {
    frames
        .iter()
        .find(|f| f.0 == RST_STREAM && f.2 == stream)
        .map(|f| u32::from_be_bytes(f.3[..4].try_into().unwrap()))
}

fn answered(frames: &[Frame], stream: u32) -> bool {
    frames.iter().any(|f| f.0 == HEADERS && f.2 == stream)
}

/// A proxy with one plain listener taking h2c, in front of `server`; its address.
fn h2c_proxy(server: SocketAddr) -> (TestProxy, SocketAddr) {
    let body = format!("[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{server}\"]\n");
    let p = proxy_with(
        &body,
        "[[listener]]\nbind = \"127.0.0.1:0\"\nhttp2 = true\n",
    );
    let addr = p.addr;
    (p, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_value_with_leading_or_trailing_whitespace_resets_its_stream() {
    let app = backend("a").await;
    let (_p, plain) = h2c_proxy(app);
    let before = backend_stats(app).await.1;
    let mut c = attacker(plain).await;
    for (stream, value) in [(1, &b" padded"[..]), (3, b"padded\t")] {
        let mut block = get_block();
        block.push(0x00);
        hpack_string(&mut block, b"x-padded");
        hpack_string(&mut block, value);
        let headers = frame(HEADERS, END_STREAM | END_HEADERS, stream, &block);
        c.write_all(&headers).await.unwrap();
    }
    // The connection lives on: a well-formed request after them is answered.
    let get = frame(HEADERS, END_STREAM | END_HEADERS, 5, &get_block());
    c.write_all(&get).await.unwrap();
    let frames = frames_until(&mut c, |f| {
        answered(f, 5) && reset_code(f, 1).is_some() && reset_code(f, 3).is_some()
    })
    .await;
    assert_eq!(reset_code(&frames, 1), Some(PROTOCOL_ERROR), "{frames:?}");
    assert_eq!(reset_code(&frames, 3), Some(PROTOCOL_ERROR), "{frames:?}");
    assert!(!answered(&frames, 1) && !answered(&frames, 3), "{frames:?}");
    // Only the well-formed request (and this count's own) reached the server.
    assert_eq!(backend_stats(app).await.1 - before, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trailers_with_a_pseudo_header_reset_the_stream_and_never_complete_upstream() {
    // The server keeps every byte it is sent, and says when its connection ended.
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let server = super::harness::raw_backend(move |mut s| {
        let seen_tx = seen_tx.clone();
        async move {
            let mut got = Vec::new();
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = s.read(&mut chunk).await {
                got.extend_from_slice(&chunk[..n]);
            }
            let _ = seen_tx.send(got);
        }
    })
    .await;
    let (_p, plain) = h2c_proxy(server);
    let mut c = attacker(plain).await;
    // POST /upload with content-length 5, its 5 bytes, then trailers carrying `:path`.
    let mut block = vec![0x83, 0x86, 0x04];
    hpack_string(&mut block, b"/upload");
    block.push(0x01);
    hpack_string(&mut block, b"localhost");
    block.push(0x00);
    hpack_string(&mut block, b"content-length");
    hpack_string(&mut block, b"5");
    c.write_all(&frame(HEADERS, END_HEADERS, 1, &block))
        .await
        .unwrap();
    c.write_all(&frame(DATA, 0, 1, b"hello")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let trailers = frame(HEADERS, END_STREAM | END_HEADERS, 1, &[0x84]);
    c.write_all(&trailers).await.unwrap();
    let frames = frames_until(&mut c, |f| reset_code(f, 1).is_some()).await;
    assert_eq!(reset_code(&frames, 1), Some(PROTOCOL_ERROR), "{frames:?}");
    // Whatever reached the server is not a whole request: the body's last bytes were
    // held back until the stream ended, and it ended reset.
    let got = tokio::time::timeout(Duration::from_secs(5), seen.recv()).await;
    let got = got.ok().flatten().unwrap_or_default();
    let text = String::from_utf8_lossy(&got);
    assert!(
        !text.contains("hello"),
        "the server got the whole request: {text:?}"
    );
}

const STREAM_CLOSED: u32 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_after_a_requests_end_reset_its_stream_closed_and_the_connection_lives_on() {
    // A server that never answers: the first stream stays half-closed (remote).
    let server = super::harness::raw_backend(|mut s| async move {
        let mut chunk = [0u8; 4096];
        while let Ok(1..) = s.read(&mut chunk).await {}
    })
    .await;
    let (_p, plain) = h2c_proxy(server);
    let mut c = attacker(plain).await;
    let get = frame(HEADERS, END_STREAM | END_HEADERS, 1, &get_block());
    c.write_all(&get).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The same HEADERS again, after the request's END_STREAM (h2spec's 5.1/6): a
    // stream error STREAM_CLOSED (RFC 9113 5.1), not PROTOCOL_ERROR, not the connection.
    c.write_all(&get).await.unwrap();
    let frames = frames_until(&mut c, |f| reset_code(f, 1).is_some()).await;
    assert_eq!(reset_code(&frames, 1), Some(STREAM_CLOSED), "{frames:?}");
    assert!(!frames.iter().any(|f| f.0 == GOAWAY), "{frames:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_partial_prefaces_cost_what_idle_connections_cost() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let app = backend("a").await;
    let config = format!(
        "workers = 2\nheader_timeout = \"30s\"\n[[listener]]\nbind = \"127.0.0.1:0\"\nhttp2 = true\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n"
    );
    let sluice = super::harness::SluiceProcess::serve("prefaces.toml", &config, "warn").await;
    let addr = sluice.addr();
    // One client sends the preface in two parts, 300 ms apart: still HTTP/2.
    let mut split = TcpStream::connect(addr).await.unwrap();
    split.write_all(&PREFACE[..10]).await.unwrap();
    let mut idle = Vec::new();
    for _ in 0..1000 {
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(&PREFACE[..16]).await.unwrap();
        idle.push(c);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    split.write_all(&PREFACE[10..]).await.unwrap();
    split.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
    let get = frame(HEADERS, END_STREAM | END_HEADERS, 1, &get_block());
    split.write_all(&get).await.unwrap();
    let frames = frames_until(&mut split, |f| answered(f, 1)).await;
    assert!(answered(&frames, 1), "{frames:?}");
    // 3 s with 1,000 connections each holding part of the preface.
    let pid = sluice.child.id();
    let used = super::harness::cpu_over(pid, Duration::from_secs(3)).await;
    assert!(
        used < 0.15,
        "{used:.2} s of CPU in 3 s for 1,000 partial prefaces (5% of a core is 0.15 s)"
    );
    // They are still open, waiting (header_timeout is 30 s), not closed to save work.
    let mut probe = [0u8; 1];
    for c in idle.iter_mut().take(50) {
        let read = tokio::time::timeout(Duration::from_millis(5), c.read(&mut probe)).await;
        assert!(
            read.is_err(),
            "a partial-preface connection was closed early"
        );
    }
    // Half of them end their side (FIN after part of a preface: a readiness no peek
    // clears). They are no HTTP/2 clients, so they are closed, and cost nothing first.
    let mut closing: Vec<TcpStream> = idle.drain(..500).collect();
    for c in closing.iter_mut() {
        c.shutdown().await.unwrap();
    }
    let used = super::harness::cpu_over(pid, Duration::from_secs(3)).await;
    assert!(
        used < 0.15,
        "{used:.2} s of CPU in 3 s after 500 partial prefaces were followed by a FIN"
    );
    for mut c in closing {
        let mut rest = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(5), c.read_to_end(&mut rest)).await;
        assert!(read.is_ok(), "a half-closed partial preface was kept open");
    }
}

/// What `c` was sent until sluice closed it, and when that was after `from` (`None`:
/// still open 5 s after `from`).
async fn until_closed(mut c: TcpStream, from: Instant) -> (String, Option<Duration>) {
    let mut got = Vec::new();
    let read = tokio::time::timeout_at((from + Duration::from_secs(5)).into(), async {
        let mut chunk = [0u8; 4096];
        while let Ok(n @ 1..) = c.read(&mut chunk).await {
            got.extend_from_slice(&chunk[..n]);
        }
    });
    let closed = read.await.ok().map(|()| from.elapsed());
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

/// One deadline from the accept, whatever the protocol turns out to be (issue 47): a
/// client that sends part of the preface and stops is closed at `header_timeout`, not
/// waited for as a would-be HTTP/2 client and then again as HTTP/1; a partial HTTP/1
/// request line too; while slow but timely clients of both protocols are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_preface_is_closed_at_header_timeout_from_the_accept() {
    let app = backend("a").await;
    let body = format!(
        "header_timeout = \"2s\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n"
    );
    let p = proxy_with(
        &body,
        "[[listener]]\nbind = \"127.0.0.1:0\"\nhttp2 = true\n",
    );
    let opened = Instant::now();
    let mut stalled = Vec::new();
    for part in [&b"PRI * HT"[..], b"GET / HT"] {
        let mut c = TcpStream::connect(p.addr).await.unwrap();
        c.write_all(part).await.unwrap();
        stalled.push(until_closed(c, opened));
    }
    // A second into their header_timeout, each finishes its request.
    let h2 = async {
        let mut c = TcpStream::connect(p.addr).await.unwrap();
        c.write_all(&PREFACE[..10]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1000)).await;
        c.write_all(&PREFACE[10..]).await.unwrap();
        c.write_all(&frame(SETTINGS, 0, 0, &[])).await.unwrap();
        let get = frame(HEADERS, END_STREAM | END_HEADERS, 1, &get_block());
        c.write_all(&get).await.unwrap();
        answered(&frames_until(&mut c, |f| answered(f, 1)).await, 1)
    };
    let h1 = async {
        let mut c = super::harness::Client::connect(p.addr).await;
        c.send("GET / HTTP/1.1\r\nHost: a\r\n").await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
        c.send("\r\n").await;
        c.read_reply().await.unwrap().status
    };
    let (h2, h1, stalled) = tokio::join!(h2, h1, futures_util::future::join_all(stalled));
    assert!(h2, "the h2c client was not answered");
    assert_eq!(h1, 200);
    let (preface, request) = (&stalled[0], &stalled[1]);
    assert!(request.0.starts_with("HTTP/1.1 408 "), "{request:?}");
    for (what, (_, closed)) in [("part of the preface", preface), ("GET / HT", request)] {
        let closed = closed.unwrap_or_else(|| panic!("{what}: still open after 5 s"));
        assert!(
            closed >= Duration::from_millis(1800) && closed < Duration::from_millis(3400),
            "{what}: closed {closed:?} after it connected (header_timeout 2 s; twice it, 4 s, was the bug)"
        );
    }
}
