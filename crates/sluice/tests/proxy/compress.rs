//! Response compression (`compress`): answers in gzip, brotli and zstd that curl and
//! Python decode to the originals, `Vary`, q-values, what is never compressed (a 206,
//! an encoded body, an event stream, HEAD, HTTP/1.0), HTTP/2, a slow stream flushed
//! piece by piece, and a static file's precompressed copy.

use super::harness::*;
use crate::support::{python, TempDir};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// 100 KiB of JSON, the issue's example body.
fn big_json() -> Vec<u8> {
    let mut out = b"[".to_vec();
    let mut i = 0;
    while out.len() < 100 * 1024 {
        let row = format!(
            "{{\"id\":{i},\"name\":\"user {i}\",\"email\":\"user{i}@example.com\",\"active\":{}}},",
            i % 3 == 0
        );
        out.extend_from_slice(row.as_bytes());
        i += 1;
    }
    out.push(b']');
    out
}

/// A response head and body for `path`, as the backend sends them.
fn answer(path: &str) -> (String, Vec<u8>) {
    let json = "Content-Type: application/json; charset=utf-8";
    match path {
        "/big.json" => (
            format!("200 OK\r\n{json}\r\nETag: \"v1\"\r\nAccept-Ranges: bytes"),
            big_json(),
        ),
        "/small.json" => (format!("200 OK\r\n{json}"), b"{\"ok\":true}".to_vec()),
        "/encoded" => (
            format!("200 OK\r\n{json}\r\nContent-Encoding: gzip"),
            gzip(&big_json()),
        ),
        "/part" => (
            format!("206 Partial Content\r\n{json}\r\nContent-Range: bytes 0-99/102400"),
            big_json()[..100].to_vec(),
        ),
        "/events" => (
            "200 OK\r\nContent-Type: text/event-stream".into(),
            "data: tick\n\n".repeat(100).into_bytes(),
        ),
        "/vary" => (format!("200 OK\r\n{json}\r\nVary: Origin"), big_json()),
        _ => (
            "404 Not Found\r\nContent-Type: text/plain".into(),
            b"no".repeat(200),
        ),
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut d = flate2::write::GzDecoder::new(Vec::new());
    d.write_all(bytes).unwrap();
    d.finish().unwrap()
}

/// Reads a request head; its path, or `None` when the peer closed.
async fn request_path(s: &mut TcpStream) -> Option<String> {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte).await {
            Ok(1) => seen.push(byte[0]),
            _ => return None,
        }
    }
    let line = String::from_utf8_lossy(&seen).into_owned();
    line.split(' ').nth(1).map(str::to_string)
}

/// The backend: [`answer`]'s bodies with a Content-Length, `/chunked.json` the big
/// JSON in chunks, and `/slow` a first piece, then the rest once `go` is notified.
async fn app(go: Arc<Notify>) -> SocketAddr {
    raw_backend(move |mut s| {
        let go = go.clone();
        async move {
            while let Some(path) = request_path(&mut s).await {
                let sent = match path.as_str() {
                    "/chunked.json" => chunked(&mut s).await,
                    "/slow" => slow(&mut s, &go).await,
                    _ => {
                        let (head, body) = answer(&path);
                        let head =
                            format!("HTTP/1.1 {head}\r\nContent-Length: {}\r\n\r\n", body.len());
                        let whole = [head.into_bytes(), body].concat();
                        s.write_all(&whole).await
                    }
                };
                if sent.is_err() {
                    return;
                }
            }
        }
    })
    .await
}

async fn chunked(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    .await?;
    for piece in big_json().chunks(7000) {
        s.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        s.write_all(piece).await?;
        s.write_all(b"\r\n").await?;
    }
    s.write_all(b"0\r\n\r\n").await
}

const FIRST: &str = "first piece of a slow answer\n";
const REST: &str = "and the rest of it, sent when the test says so\n";

async fn slow(s: &mut TcpStream, go: &Notify) -> std::io::Result<()> {
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n";
    s.write_all(format!("{head}{:x}\r\n{FIRST}\r\n", FIRST.len()).as_bytes())
        .await?;
    go.notified().await;
    s.write_all(format!("{:x}\r\n{REST}\r\n0\r\n\r\n", REST.len()).as_bytes())
        .await
}

/// A proxy with `compress` on every route, in front of [`app`]; the listener takes
/// HTTP/1.1 and h2c.
async fn compressing(compress: &str) -> (TestProxy, Arc<Notify>) {
    let go = Arc::new(Notify::new());
    let server = app(go.clone()).await;
    let body = format!(
        "[[route]]\nupstream = \"app\"\ncompress = {compress}\n[upstream.app]\nservers = [\"{server}\"]\n"
    );
    let p = proxy_with(
        &body,
        "[[listener]]\nbind = \"127.0.0.1:0\"\nhttp2 = true\n",
    );
    (p, go)
}

async fn ask(addr: SocketAddr, path: &str, extra: &str) -> Reply {
    let mut c = Client::connect(addr).await;
    c.send(&format!("GET {path} HTTP/1.1\r\nHost: test\r\n{extra}\r\n"))
        .await;
    c.read_reply().await.expect("a reply")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gzip_answer_is_chunked_varies_weakens_its_etag_and_decodes_to_the_original() {
    let (p, _) = compressing("true").await;
    for path in ["/big.json", "/chunked.json"] {
        let r = ask(p.addr, path, "Accept-Encoding: gzip, deflate\r\n").await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-encoding"), Some("gzip"), "{path}");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        assert_eq!(r.header("transfer-encoding"), Some("chunked"));
        assert!(r.header("content-length").is_none() && r.header("accept-ranges").is_none());
        assert!(r.body.len() < 40 * 1024, "{path}: {} bytes", r.body.len());
        assert_eq!(gunzip(&r.body), big_json(), "{path}");
    }
    let r = ask(p.addr, "/big.json", "Accept-Encoding: gzip\r\n").await;
    assert_eq!(r.header("etag"), Some("W/\"v1\""));
    // An existing Vary keeps its line; Accept-Encoding is added beside it.
    let r = ask(p.addr, "/vary", "Accept-Encoding: gzip\r\n").await;
    let vary: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("vary"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(vary, ["Origin", "Accept-Encoding"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn q0_no_header_and_a_coding_the_route_lacks_get_the_original_with_vary() {
    let (p, _) = compressing("{ gzip = 1 }").await;
    for extra in [
        "Accept-Encoding: gzip;q=0, br\r\n",
        "",
        "Accept-Encoding: identity\r\n",
        "Accept-Encoding: *;q=0\r\n",
    ] {
        let r = ask(p.addr, "/big.json", extra).await;
        assert_eq!(r.header("content-encoding"), None, "{extra:?}");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{extra:?}");
        assert_eq!(r.header("etag"), Some("\"v1\""));
        assert_eq!(r.body, big_json());
    }
    let r = ask(
        p.addr,
        "/big.json",
        "Accept-Encoding: br;q=1, gzip;q=0.1\r\n",
    )
    .await;
    assert_eq!(r.header("content-encoding"), Some("gzip"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_206_an_encoded_body_an_event_stream_and_a_short_body_go_as_they_came() {
    let (p, _) = compressing("true").await;
    let all = "Accept-Encoding: gzip, br, zstd\r\n";
    for path in ["/part", "/encoded", "/events", "/small.json"] {
        let r = ask(p.addr, path, all).await;
        let (_, body) = answer(path);
        let came = if path == "/encoded" {
            Some("gzip")
        } else {
            None
        };
        assert_eq!(r.header("content-encoding"), came, "{path}");
        assert_eq!(
            r.header("content-length"),
            Some(body.len().to_string().as_str()),
            "{path}"
        );
        assert_eq!(r.body, body, "{path}");
    }
    // Short, it still varies (a longer answer at the same URL would be compressed).
    let r = ask(p.addr, "/small.json", all).await;
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(ask(p.addr, "/part", all).await.status, 206);
    // Named in `types`, an event stream is compressed.
    let (p, _) = compressing("{ gzip = 1, types = [\"text/event-stream\"] }").await;
    let r = ask(p.addr, "/events", all).await;
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(gunzip(&r.body), answer("/events").1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_and_http10_requests_get_nothing_compressed() {
    let (p, _) = compressing("true").await;
    let mut s = TcpStream::connect(p.addr).await.unwrap();
    s.write_all(b"HEAD /big.json HTTP/1.1\r\nHost: test\r\nAccept-Encoding: gzip\r\n\r\n")
        .await
        .unwrap();
    let head = String::from_utf8(head_of(&mut s).await)
        .unwrap()
        .to_ascii_lowercase();
    assert!(!head.contains("content-encoding"), "{head}");
    assert!(
        head.contains(&format!("content-length: {}\r\n", big_json().len())),
        "{head}"
    );
    let mut c = Client::connect(p.addr).await;
    c.send("GET /big.json HTTP/1.0\r\nHost: test\r\nAccept-Encoding: gzip\r\n\r\n")
        .await;
    let r = c.read_reply().await.unwrap();
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.body, big_json());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_stream_reaches_the_client_piece_by_piece() {
    let (p, go) = compressing("{ gzip = 6, types = [\"text/plain\"] }").await;
    let mut s = TcpStream::connect(p.addr).await.unwrap();
    s.write_all(b"GET /slow HTTP/1.1\r\nHost: test\r\nAccept-Encoding: gzip\r\n\r\n")
        .await
        .unwrap();
    // The first piece decodes before the backend sends the rest: it was flushed.
    let mut got = Vec::new();
    let mut decoder = flate2::write::GzDecoder::new(Vec::new());
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while decoder.get_ref().as_slice() != FIRST.as_bytes() {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout_at(deadline, s.read(&mut buf))
            .await
            .expect("the first piece, before the rest was sent")
            .unwrap();
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
        if let Some(body) = chunk_payloads(&got) {
            decoder = flate2::write::GzDecoder::new(Vec::new());
            let _ = decoder.write_all(&body);
            let _ = decoder.flush();
        }
    }
    go.notify_one();
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        let mut buf = [0u8; 4096];
        while !rest.ends_with(b"0\r\n\r\n") {
            match s.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => rest.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    got.extend_from_slice(&rest);
    let body = chunk_payloads(&got).unwrap();
    assert_eq!(gunzip(&body), format!("{FIRST}{REST}").as_bytes());
}

/// A response head read byte by byte (a HEAD's has no body after it).
async fn head_of(s: &mut TcpStream) -> Vec<u8> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut byte));
        assert_eq!(read.await.expect("a head").unwrap(), 1, "closed early");
        head.push(byte[0]);
    }
    head
}

/// The payload of the chunks of a chunked response in `raw` (head first) so far.
fn chunk_payloads(raw: &[u8]) -> Option<Vec<u8>> {
    let start = raw.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let mut rest = &raw[start..];
    let mut body = Vec::new();
    while let Some(line) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..line]).ok()?, 16).ok()?;
        if rest.len() < line + 2 + size + 2 {
            break;
        }
        body.extend_from_slice(&rest[line + 2..line + 2 + size]);
        rest = &rest[line + 2 + size + 2..];
    }
    Some(body)
}

/// curl's decoding of `path` with `Accept-Encoding: coding`, over HTTP/1.1 or h2c: the
/// headers it printed and the decoded body (in `dir`).
async fn curl_decoded(
    addr: SocketAddr,
    dir: &TempDir,
    coding: &str,
    h2: bool,
) -> (String, Vec<u8>) {
    let out = dir.0.join(format!("{coding}-{h2}.json"));
    let url = format!("http://{addr}/big.json");
    let mut args = vec!["--compressed", "-D", "-", "-o", out.to_str().unwrap(), "-H"];
    let header = format!("Accept-Encoding: {coding}");
    args.push(&header);
    if h2 {
        args.push("--http2-prior-knowledge");
    }
    args.push(&url);
    let (code, text) = curl(&args).await;
    assert_eq!(code, 0, "{text}");
    (text.to_ascii_lowercase(), std::fs::read(&out).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn curl_decodes_gzip_br_and_zstd_over_http1_and_http2_to_the_original() {
    let (p, _) = compressing("true").await;
    let dir = TempDir::new("compress-curl");
    for h2 in [false, true] {
        for coding in ["gzip", "br", "zstd"] {
            let (head, body) = curl_decoded(p.addr, &dir, coding, h2).await;
            assert!(
                head.contains(&format!("content-encoding: {coding}")),
                "{head}"
            );
            assert!(head.contains("vary: accept-encoding"), "{head}");
            assert!(!head.contains("content-length"), "{head}");
            assert!(
                body == big_json(),
                "{coding} over {}: decoded {} bytes",
                if h2 { "h2" } else { "h1" },
                body.len()
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs python3 with brotli and zstandard"]
async fn python_decodes_gzip_br_and_zstd_to_the_original() {
    let (p, _) = compressing("true").await;
    let dir = TempDir::new("compress-python");
    let original = dir.file("original.json", std::str::from_utf8(&big_json()).unwrap());
    let script = r#"
import sys, gzip, urllib.request, brotli, zstandard
url, original = sys.argv[1], open(sys.argv[2], "rb").read()
decode = {"gzip": gzip.decompress, "br": brotli.decompress,
          "zstd": lambda b: zstandard.ZstdDecompressor().decompressobj().decompress(b)}
for coding, unpack in decode.items():
    req = urllib.request.Request(url, headers={"Accept-Encoding": coding})
    with urllib.request.urlopen(req) as r:
        assert r.headers["Content-Encoding"] == coding, (coding, dict(r.headers))
        assert "Accept-Encoding" in r.headers["Vary"], dict(r.headers)
        raw = r.read()
    assert unpack(raw) == original, coding
    print(coding, len(raw), "decoded equal")
"#;
    let url = format!("http://{}/big.json", p.addr);
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python())
            .args(["-c", script, &url, original.to_str().unwrap()])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert_eq!(text.matches("decoded equal").count(), 3, "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_files_precompressed_copy_is_sent_to_a_client_that_accepts_it() {
    let dir = TempDir::new("compress-static");
    let script = "function hello() { return 'hello, world'; }\n".repeat(200);
    dir.file("app.js", &script);
    std::fs::write(dir.0.join("app.js.gz"), gzip(script.as_bytes())).unwrap();
    dir.file("plain.css", "body { color: black }\n");
    let body = format!(
        "[[route]]\nroot = {:?}\ncompress = {{ precompressed = true }}\n",
        dir.0.display().to_string()
    );
    let p = proxy(&body);
    let r = ask(p.addr, "/app.js", "Accept-Encoding: gzip, br\r\n").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    assert_eq!(
        r.header("content-type"),
        Some("text/javascript; charset=utf-8")
    );
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
    assert_eq!(gunzip(&r.body), script.as_bytes());
    // No copy for the coding it accepts, or none accepted: the file as it is.
    for extra in [
        "Accept-Encoding: br\r\n",
        "Accept-Encoding: gzip;q=0\r\n",
        "",
    ] {
        let r = ask(p.addr, "/app.js", extra).await;
        assert_eq!(r.header("content-encoding"), None, "{extra:?}");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"));
        assert_eq!(r.body, script.as_bytes());
    }
    let r = ask(p.addr, "/plain.css", "Accept-Encoding: gzip\r\n").await;
    assert_eq!(
        (r.header("content-encoding"), r.text().as_str()),
        (None, "body { color: black }\n")
    );
}
