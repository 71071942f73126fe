//! Plain HTTP within a second: how the lab reads loopback tiers' counters, exporters and
//! a Prometheus server's API, and drains servers through a sluice's admin API. A few
//! lines of its own rather than an HTTP client: one request without a body,
//! `Connection: close`, the status and the body (chunked or not), nothing more.
//!
//! A sluice whose admin API has a token answers `401` without it: [`authorize`] gives the
//! token for that one origin (`http://HOST:PORT`), and it is sent to that origin alone,
//! never to the other tiers the lab reads.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// The bearer token of each origin that needs one.
static TOKENS: OnceLock<Mutex<Vec<(String, String)>>> = OnceLock::new();

/// Sends `token` as `Authorization: Bearer` with every request to `origin`
/// (`http://HOST:PORT`, as URLs to it begin).
pub fn authorize(origin: &str, token: &str) {
    let tokens = TOKENS.get_or_init(Mutex::default);
    let mut tokens = tokens.lock().unwrap_or_else(|e| e.into_inner());
    tokens.push((origin.trim_end_matches('/').to_string(), token.to_string()));
}

/// The `Authorization` header line for `url`, if its origin was given a token.
fn authorization(url: &str) -> String {
    let Some(tokens) = TOKENS.get() else {
        return String::new();
    };
    let tokens = tokens.lock().unwrap_or_else(|e| e.into_inner());
    let same_origin = |origin: &str| {
        url.strip_prefix(origin)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    tokens
        .iter()
        .find(|(origin, _)| same_origin(origin))
        .map_or(String::new(), |(_, t)| {
            format!("Authorization: Bearer {t}\r\n")
        })
}

/// The body of a plain-HTTP GET of `url` (loopback tiers, exporters), within 1 s.
pub fn http_get(url: &str) -> Option<String> {
    match http_request("GET", url) {
        Ok((200, body)) => Some(body),
        _ => None,
    }
}

/// A plain-HTTP request with no body (a GET, or a POST to an admin API), within 1 s
/// each way: its status and body, or why there is none.
pub fn http_request(method: &str, url: &str) -> Result<(u16, String), String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url}: not an http:// URL"))?;
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let addr = std::net::ToSocketAddrs::to_socket_addrs(host)
        .map_err(|e| format!("{host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host}: no address"))?;
    let io = |e: std::io::Error| format!("{method} {url}: {e}");
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).map_err(io)?;
    s.set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(io)?;
    s.set_write_timeout(Some(Duration::from_secs(1)))
        .map_err(io)?;
    // Prometheus's text format where an endpoint offers several (Spring Boot's actuator
    // would answer OpenMetrics otherwise), and anything else rather than a 406 from an
    // endpoint that has no text/plain (Spring Boot's /actuator/health).
    let length = if method == "GET" {
        ""
    } else {
        "Content-Length: 0\r\n"
    };
    let auth = authorization(url);
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/plain, */*;q=0.1\r\n{auth}{length}Connection: close\r\n\r\n"
    );
    s.write_all(req.as_bytes()).map_err(io)?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).map_err(io)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{method} {url}: no HTTP response"))?;
    let status = head
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| head.strip_prefix("HTTP/1.0 "))
        .and_then(|s| s.get(..3)?.parse().ok())
        .ok_or_else(|| format!("{method} {url}: no HTTP response"))?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    Ok((
        status,
        if chunked {
            unchunk(body)
        } else {
            body.to_string()
        },
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_goes_to_its_origin_alone() {
        authorize("http://127.0.0.1:9901/", "s3cret");
        assert_eq!(
            authorization("http://127.0.0.1:9901/api/upstreams"),
            "Authorization: Bearer s3cret\r\n"
        );
        assert_eq!(
            authorization("http://127.0.0.1:9901"),
            "Authorization: Bearer s3cret\r\n"
        );
        for other in [
            "http://127.0.0.1:99010/metrics",
            "http://127.0.0.1:8080/actuator/prometheus",
        ] {
            assert_eq!(authorization(other), "", "{other}");
        }
    }
}
