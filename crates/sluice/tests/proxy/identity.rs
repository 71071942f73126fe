//! `[request_id]`: each request's identity and its W3C `traceparent`, made or passed on,
//! the same at the server, in the client's response, in the access log and in the
//! error line of a request that failed.

use super::harness::*;
use std::time::Duration;

/// What the backend was sent in header `name` (its `/headers` page lists them).
fn sent<'r>(text: &'r str, name: &str) -> Option<&'r str> {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn config(dir: &TempDir, app: std::net::SocketAddr, identity: &str) -> String {
    format!(
        "access_log = \"{}\"\naccess_log_format = \"json\"\n{identity}\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[[route]]\npath = \"/down/\"\nupstream = \"down\"\n[upstream.app]\nservers = [\"{app}\"]\n[upstream.down]\nservers = [\"{}\"]\nretries = 0\n",
        dir.0.join("access.log").display(),
        crate::support::free_addr()
    )
}

/// The access log's JSON lines, once `n` are written (5 s at most).
async fn log_lines(dir: &TempDir, n: usize) -> Vec<serde_json::Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(dir.0.join("access.log")).unwrap_or_default();
        if text.lines().count() >= n {
            return text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_is_named_alike_at_the_server_the_client_and_the_log() {
    let app = backend("a").await;
    let dir = TempDir::new("identity");
    let sluice = SluiceProcess::serve(
        "sluice.toml",
        &config(&dir, app, "request_id = true"),
        "warn",
    )
    .await;
    let mut c = Client::connect(sluice.addr()).await;
    // Made: 32 hex digits, the trace started with it.
    let made = c.get("/headers").await;
    let text = made.text();
    let id = sent(&text, "x-request-id").unwrap_or_else(|| panic!("{text}"));
    assert!(is_hex(id, 32), "{id}");
    assert_eq!(made.header("x-request-id"), Some(id));
    let trace = sent(&text, "traceparent").unwrap_or_else(|| panic!("{text}"));
    let parts: Vec<&str> = trace.split('-').collect();
    assert_eq!(parts.len(), 4, "{trace}");
    assert_eq!((parts[0], parts[1], parts[3]), ("00", id, "01"), "{trace}");
    assert!(is_hex(parts[2], 16), "{trace}");
    // Passed on: the client's own identity and a valid traceparent, unchanged, with
    // its tracestate.
    let given_trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    c.send(&format!("GET /headers HTTP/1.1\r\nHost: t\r\nX-Request-ID: gw-7/abc\r\ntraceparent: {given_trace}\r\ntracestate: vendor=1\r\n\r\n")).await;
    let passed = c.read_reply().await.unwrap();
    let text = passed.text();
    assert_eq!(sent(&text, "x-request-id"), Some("gw-7/abc"), "{text}");
    assert_eq!(passed.header("x-request-id"), Some("gw-7/abc"));
    assert_eq!(sent(&text, "traceparent"), Some(given_trace), "{text}");
    assert_eq!(sent(&text, "tracestate"), Some("vendor=1"), "{text}");
    // Malformed: replaced, never sent twice; the tracestate of a trace the server does
    // not get is not sent on.
    c.send("GET /headers HTTP/1.1\r\nHost: t\r\nX-Request-ID: \"quoted\"\r\ntraceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\ntracestate: vendor=2\r\n\r\n").await;
    let text = c.read_reply().await.unwrap().text();
    assert!(sent(&text, "tracestate").is_none(), "{text}");
    let fresh = sent(&text, "x-request-id").unwrap();
    assert!(is_hex(fresh, 32), "{text}");
    assert_eq!(text.matches("x-request-id:").count(), 1, "{text}");
    assert!(
        sent(&text, "traceparent").unwrap().contains(fresh),
        "{text}"
    );
    // The log says the same.
    let logged = log_lines(&dir, 3).await;
    let by_id = |want: &str| logged.iter().find(|l| l["request_id"] == want).cloned();
    let first = by_id(id).unwrap_or_else(|| panic!("{logged:?}"));
    assert_eq!(first["trace_id"], id);
    let second = by_id("gw-7/abc").unwrap_or_else(|| panic!("{logged:?}"));
    assert_eq!(second["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_requests_error_line_names_it_and_an_edge_trusts_no_client() {
    let app = backend("a").await;
    let dir = TempDir::new("identity-edge");
    let identity =
        "[request_id]\nheader = \"X-Correlation-ID\"\nfrom_client = false\ntraceparent = false";
    let sluice = SluiceProcess::serve("sluice.toml", &config(&dir, app, identity), "warn").await;
    let mut c = Client::connect(sluice.addr()).await;
    c.send("GET /headers HTTP/1.1\r\nHost: t\r\nX-Correlation-ID: forged\r\n\r\n")
        .await;
    let reply = c.read_reply().await.unwrap();
    let text = reply.text();
    let id = sent(&text, "x-correlation-id")
        .unwrap_or_else(|| panic!("{text}"))
        .to_string();
    assert!(is_hex(&id, 32), "{text}");
    assert!(sent(&text, "traceparent").is_none(), "{text}");
    let failed = get(sluice.addr(), "/down/x").await;
    assert_eq!(failed.status, 502);
    let logged = log_lines(&dir, 2).await;
    let line = logged
        .iter()
        .find(|l| l["status"] == 502)
        .unwrap_or_else(|| panic!("{logged:?}"));
    let logged_id = line["request_id"].as_str().unwrap().to_string();
    assert!(is_hex(&logged_id, 32), "{line}");
    // The error line names the request as the access log does.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !sluice.log().contains(&format!("request_id={logged_id}")) {
        assert!(std::time::Instant::now() < deadline, "{}", sluice.log());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(sluice.log().contains("request failed"), "{}", sluice.log());
}
