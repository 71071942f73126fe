//! A plain-HTTP GET within a second: how the lab reads loopback tiers' counters,
//! exporters and a Prometheus server's API. A few lines of its own rather than an HTTP
//! client: one request, `Connection: close`, a 200's body (chunked or not), nothing more.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// The body of a plain-HTTP GET of `url` (loopback tiers, exporters), within 1 s.
pub fn http_get(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(host)
        .ok()?
        .next()?;
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(1))).ok()?;
    // Prometheus's text format where an endpoint offers several (Spring Boot's actuator
    // would answer OpenMetrics otherwise), and anything else rather than a 406 from an
    // endpoint that has no text/plain (Spring Boot's /actuator/health).
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/plain, */*;q=0.1\r\nConnection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return None;
    }
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Some(unchunk(body));
    }
    Some(body.to_string())
}

/// A chunked body's data.
fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}
