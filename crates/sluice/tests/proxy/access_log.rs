//! The access log of a real `sluice serve`: nginx's combined format read by a real log
//! analyser (GoAccess), JSON lines, written in batches, and reopened on SIGUSR1 after
//! logrotate's move.

use super::harness::*;
use std::process::Command;
use std::time::Duration;

/// Waits until `path` has `lines` lines (5 s at most); returns them.
async fn lines(path: &std::path::Path, lines: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let got: Vec<String> = text.lines().map(String::from).collect();
        if got.len() >= lines {
            assert_eq!(got.len(), lines, "{text}");
            return got;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {lines} lines:\n{text}",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn request(addr: std::net::SocketAddr, head: &str) -> u16 {
    let mut c = Client::connect(addr).await;
    c.send(head).await;
    c.read_reply().await.unwrap().status
}

fn serve_config(dir: &TempDir, backend: std::net::SocketAddr, format: &str) -> String {
    let log = dir.0.join("access.log");
    format!(
        "access_log = \"{}\"\naccess_log_format = \"{format}\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nhost = \"app.test\"\npath = \"/shop/\"\nupstream = \"app\"\n[upstream.app]\nservers = [\"{backend}\"]\n",
        log.display()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs goaccess"]
async fn combined_lines_are_read_by_goaccess_and_survive_logrotate() {
    let a = backend("a").await;
    let dir = TempDir::new("access");
    let child =
        SluiceProcess::serve("sluice.toml", &serve_config(&dir, a, "combined"), "warn").await;
    let addr = child.addr();
    let ok = "GET /shop/cart?id=7 HTTP/1.1\r\nHost: app.test\r\nUser-Agent: test/\"1\"\r\nReferer: http://app.test/\r\n\r\n";
    for _ in 0..5 {
        assert_eq!(request(addr, ok).await, 200);
    }
    assert_eq!(
        request(addr, "GET /nowhere HTTP/1.1\r\nHost: app.test\r\n\r\n").await,
        404
    );
    let log = dir.0.join("access.log");
    let got = lines(&log, 6).await;
    let first = got.iter().find(|l| l.contains("/shop/cart")).unwrap();
    assert!(first.starts_with("127.0.0.1 - - ["), "{first}");
    assert!(
        first.contains("] \"GET /shop/cart?id=7 HTTP/1.1\" 200 "),
        "{first}"
    );
    assert!(
        first.contains(" \"http://app.test/\" \"test/\\\"1\\\"\" "),
        "{first}"
    );
    assert!(
        first.contains(&format!(" upstream={a} upstream_time=0.")),
        "{first}"
    );
    assert!(first.contains(" tries=1 route=/shop/"), "{first}");
    // Each worker writes its own batches: lines of different workers may come in any
    // order.
    let not_found: Vec<&String> = got.iter().filter(|l| l.contains("/nowhere")).collect();
    assert_eq!(not_found.len(), 1, "{got:?}");
    assert!(
        not_found[0]
            .contains("\"GET /nowhere HTTP/1.1\" 404 0 \"-\" \"-\" upstream=- upstream_time=- "),
        "{}",
        not_found[0]
    );
    // GoAccess, nginx users' log analyser, reads the combined format.
    let report = dir.0.join("report.json");
    let goaccess = Command::new("goaccess")
        .arg(&log)
        .args(["--log-format=COMBINED", "--no-global-config", "-o"])
        .arg(&report)
        .output()
        .expect("goaccess (Debian's package; scripts/test.sh installs it)");
    assert!(goaccess.status.success(), "{goaccess:?}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    let general = &report["general"];
    assert_eq!(general["total_requests"], 6, "{general}");
    assert_eq!(general["valid_requests"], 6, "{general}");
    assert_eq!(general["failed_requests"], 0, "{general}");
    // logrotate moves the file and sends SIGUSR1: new lines go to a new file.
    let rotated = dir.0.join("access.log.1");
    std::fs::rename(&log, &rotated).unwrap();
    child.signal("USR1");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(request(addr, ok).await, 200);
    assert_eq!(lines(&log, 1).await.len(), 1);
    assert_eq!(lines(&rotated, 6).await.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_have_every_field() {
    let a = backend("a").await;
    let dir = TempDir::new("access-json");
    let child = SluiceProcess::serve("sluice.toml", &serve_config(&dir, a, "json"), "warn").await;
    let body = "POST /shop/order HTTP/1.1\r\nHost: app.test\r\nContent-Length: 2\r\n\r\nhi";
    assert_eq!(request(child.addr(), body).await, 200);
    let got = lines(&dir.0.join("access.log"), 1).await;
    let v: serde_json::Value = serde_json::from_str(&got[0]).unwrap();
    assert_eq!(v["request"], "POST /shop/order HTTP/1.1");
    assert_eq!(
        (v["status"].as_u64(), v["tries"].as_u64()),
        (Some(200), Some(1))
    );
    assert_eq!(v["upstream"], a.to_string());
    assert_eq!(v["route"], "/shop/");
    // The body, backend a's name and a newline; not the head.
    assert_eq!(v["bytes_sent"], 2, "{v}");
    assert!(v["request_time"].as_f64().unwrap() >= v["upstream_time"].as_f64().unwrap());
    assert!(v["time"].as_str().unwrap().ends_with('Z'));
}

/// The same response body logs the same `bytes_sent` over HTTP/1.1 and h2c: the body's
/// payload as the client received it (curl's size_download), whatever the framing (the
/// backend's `/bytes` streams it chunked).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn bytes_sent_is_the_body_on_http1_and_http2_alike() {
    let a = backend("a").await;
    let dir = TempDir::new("access-bytes");
    let log = dir.0.join("access.log");
    let config = format!(
        "access_log = {:?}\naccess_log_format = \"json\"\n[[listener]]\nbind = \"127.0.0.1:0\"\nhttp2 = true\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{a}\"]\n",
        log.display().to_string()
    );
    let child = SluiceProcess::serve("sluice.toml", &config, "warn").await;
    let url = format!("http://{}/bytes?n=12345", child.addr());
    for version in ["--http1.1", "--http2-prior-knowledge"] {
        let out = ["-o", "/dev/null", "-w", "%{size_download} %{http_version}"];
        let (code, text) = curl(&[&[version, url.as_str()][..], &out[..]].concat()).await;
        assert_eq!(code, 0, "{text}");
        assert!(text.starts_with("12345 "), "{text}");
    }
    let got = lines(&log, 2).await;
    for line in &got {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["bytes_sent"], 12345, "{line}");
    }
    assert!(got.iter().any(|l| l.contains("HTTP/2.0")), "{got:?}");
    assert!(got.iter().any(|l| l.contains("HTTP/1.1")), "{got:?}");
}

#[test]
fn a_reload_that_turns_the_access_log_on_or_off_says_so() {
    let backend = crate::support::backend();
    let body = one_upstream(&[backend], "");
    let proxy = proxy(&body);
    let dir = TempDir::new("reload-log");
    let log = dir.0.join("access.log");
    let summary = proxy.reload(&format!(
        "access_log = {:?}\n{body}",
        log.display().to_string()
    ));
    assert_eq!(
        summary.access_log,
        Some(format!("now to {}", log.display()))
    );
    assert!(
        summary.to_string().contains("access log now to"),
        "{summary}"
    );
    let summary = proxy.reload(&body);
    assert_eq!(summary.to_string(), "access log off");
    // Unchanged: nothing said of it.
    assert_eq!(proxy.reload(&body).access_log, None);
}
