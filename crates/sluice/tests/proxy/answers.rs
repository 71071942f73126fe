//! Routes sluice answers itself, as nginx configs write them around TLS: the redirect to
//! HTTPS with the ACME challenge path served from a directory, `return` with a body,
//! static files (types, ranges, conditionals, and no way out of the root), and header
//! edits on both sides. Driven by curl and by byte-exact requests.

use super::harness::{backend, proxy, Client, TempDir};
use std::net::SocketAddr;

/// curl through the harness, its output with CRLF line ends made LF.
async fn curl(args: &[&str]) -> (i32, String) {
    let (code, text) = super::harness::curl(args).await;
    (code, text.replace("\r\n", "\n"))
}

/// A web root with an ACME token, a page and a text file, and a symlink out of it.
fn site() -> TempDir {
    let dir = TempDir::new("www");
    let www = dir.0.join("www");
    std::fs::create_dir_all(www.join(".well-known/acme-challenge")).unwrap();
    std::fs::create_dir_all(www.join("static/docs")).unwrap();
    std::fs::write(
        www.join(".well-known/acme-challenge/tok-1"),
        "tok-1.thumbprint",
    )
    .unwrap();
    std::fs::write(www.join("static/app.css"), "body { color: red }\n").unwrap();
    std::fs::write(www.join("static/docs/index.html"), "<h1>docs</h1>\n").unwrap();
    std::fs::write(dir.0.join("secret.txt"), "outside the root\n").unwrap();
    std::os::unix::fs::symlink(dir.0.join("secret.txt"), www.join("static/escape.txt")).unwrap();
    dir
}

fn url(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn plain_http_redirects_to_https_but_for_acme_challenges() {
    let dir = site();
    let www = dir.0.join("www");
    let p = proxy(&format!(
        "[[route]]\npath = \"/\"\nredirect = \"https\"\n[[route]]\npath = \"/.well-known/acme-challenge/\"\nroot = {www:?}\n"
    ));
    let (code, text) = curl(&[
        "-i",
        "-H",
        "Host: Example.COM:80",
        &url(p.addr, "/a/b?x=1&y=%20"),
    ])
    .await;
    assert_eq!(code, 0);
    assert!(
        text.starts_with("HTTP/1.1 301 Moved Permanently\n"),
        "{text}"
    );
    assert!(
        text.contains("\nLocation: https://example.com/a/b?x=1&y=%20\n"),
        "{text}"
    );
    assert!(!text.to_lowercase().contains("server:"), "{text}");
    let (code, text) = curl(&["-i", &url(p.addr, "/.well-known/acme-challenge/tok-1")]).await;
    assert_eq!(code, 0);
    assert!(text.starts_with("HTTP/1.1 200 OK\n"), "{text}");
    assert!(text.contains("Content-Type: text/plain"), "{text}");
    assert!(text.ends_with("\n\ntok-1.thumbprint"), "{text}");
    // A POST with a body gets its redirect too, and the connection stays usable
    // only if the body was read: here it was not, so it closes.
    let mut c = Client::connect(p.addr).await;
    c.send("POST /form HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello")
        .await;
    let reply = c.read_reply().await.unwrap();
    assert_eq!(reply.status, 301);
    assert_eq!(reply.header("location"), Some("https://h/form"));
    assert_eq!(reply.header("connection"), Some("close"));
    // Keep-alive holds for bodiless requests.
    let mut c = Client::connect(p.addr).await;
    for path in ["/one", "/two"] {
        let reply = c.get(path).await;
        assert_eq!(
            reply.header("location").unwrap(),
            format!("https://test{path}")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn return_answers_with_its_status_and_body() {
    let p = proxy(
        "[[route]]\npath = \"/health\"\nreturn = { status = 200, body = \"ok\\n\" }\n[[route]]\npath = \"/gone\"\nreturn = 410\n[[route]]\npath = \"/old\"\nreturn = { status = 308, location = \"$scheme://new.example$uri\" }\n",
    );
    let (code, text) = curl(&["-i", &url(p.addr, "/health")]).await;
    assert_eq!(code, 0);
    assert_eq!(
        text,
        "HTTP/1.1 200 OK\nContent-Type: text/plain; charset=utf-8\nContent-Length: 3\n\nok\n"
    );
    let (_, text) = curl(&["-I", &url(p.addr, "/health")]).await;
    assert!(
        text.contains("Content-Length: 3\n") && text.ends_with("\n\n"),
        "{text}"
    );
    let (_, text) = curl(&["-i", &url(p.addr, "/gone")]).await;
    assert_eq!(text, "HTTP/1.1 410 Gone\nContent-Length: 0\n\n");
    let (_, text) = curl(&["-i", &url(p.addr, "/old/page?q")]).await;
    assert!(
        text.contains("Location: http://new.example/old/page\n"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn static_files_have_types_ranges_and_validators() {
    let dir = site();
    let www = dir.0.join("www");
    let p = proxy(&format!("[[route]]\npath = \"/static/\"\nroot = {www:?}\n"));
    let css = url(p.addr, "/static/app.css");
    let (_, text) = curl(&["-i", &css]).await;
    assert!(text.starts_with("HTTP/1.1 200 OK\n"), "{text}");
    assert!(
        text.contains("Content-Type: text/css; charset=utf-8\n"),
        "{text}"
    );
    assert!(text.ends_with("\n\nbody { color: red }\n"), "{text}");
    let etag = text
        .lines()
        .find_map(|l| l.strip_prefix("ETag: "))
        .expect("an ETag")
        .to_string();
    let (_, text) = curl(&["-i", "-H", &format!("If-None-Match: {etag}"), &css]).await;
    assert!(text.starts_with("HTTP/1.1 304 Not Modified\n"), "{text}");
    let (_, text) = curl(&["-i", "-r", "5-9", &css]).await;
    assert!(text.starts_with("HTTP/1.1 206 Partial Content\n"), "{text}");
    assert!(
        text.contains("Content-Range: bytes 5-9/20\n") && text.ends_with("\n\n{ col"),
        "{text}"
    );
    let (_, text) = curl(&["-i", "-r", "50-60", &css]).await;
    assert!(text.starts_with("HTTP/1.1 416 "), "{text}");
    // A directory with an index: the slash is added, then the index served.
    let (_, text) = curl(&["-i", &url(p.addr, "/static/docs")]).await;
    assert!(
        text.contains("301") && text.contains("Location: /static/docs/\n"),
        "{text}"
    );
    let (_, text) = curl(&["-L", &url(p.addr, "/static/docs")]).await;
    assert_eq!(text, "<h1>docs</h1>\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_outside_the_root_is_served() {
    let dir = site();
    let www = dir.0.join("www");
    let p = proxy(&format!("[[route]]\npath = \"/static/\"\nroot = {www:?}\n"));
    let mut statuses = Vec::new();
    for path in [
        "/static/escape.txt",
        "/static/../../secret.txt",
        "/static/%2e%2e/%2e%2e/secret.txt",
        "/static/..%2f..%2fsecret.txt",
        "/static/%2E%2E%5Csecret.txt",
        "/static/.well-known/../../secret.txt",
        "/static/docs/%00",
    ] {
        let mut c = Client::connect(p.addr).await;
        c.send(&format!(
            "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
        ))
        .await;
        let reply = c.read_reply().await.unwrap();
        assert!(
            !reply.text().contains("outside"),
            "{path}: {}",
            reply.text()
        );
        statuses.push(reply.status);
    }
    assert!(
        statuses.iter().all(|s| [400, 404].contains(s)),
        "{statuses:?}"
    );
}

/// `$msec` in a header value, as Pinpoint's docs set `Pinpoint-ProxyNginx` for nginx:
/// the time the request passed, seconds since the epoch with milliseconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn msec_gives_the_time_a_request_passed_in_milliseconds() {
    let app = backend("a").await;
    let p = proxy(&format!(
        "[[route]]\nupstream = \"app\"\nrequest_headers = {{ set = {{ \"Pinpoint-ProxyNginx\" = \"t=$msec\" }} }}\n[upstream.app]\nservers = [\"{app}\"]\n"
    ));
    let now = || {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        d.as_secs_f64()
    };
    let before = now();
    let mut c = Client::connect(p.addr).await;
    let reply = c.get("/headers").await;
    let after = now();
    let seen = reply.text();
    let value = seen
        .lines()
        .find_map(|l| l.strip_prefix("pinpoint-proxynginx: t="))
        .unwrap_or_else(|| panic!("{seen}"));
    let (secs, millis) = value.split_once('.').unwrap();
    assert_eq!(millis.len(), 3, "{value}");
    let t: f64 = format!("{secs}.{millis}").parse().unwrap();
    assert!(
        t >= before - 0.001 && t <= after + 0.001,
        "{before} <= {t} <= {after}"
    );
}

/// `$request_id`, as nginx's: 32 hexadecimal digits, new for each request, the same in
/// the header the server is sent and the one the client gets back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_id_names_each_request_alike_on_both_sides() {
    let app = backend("a").await;
    let p = proxy(&format!(
        "[[route]]\nupstream = \"app\"\nrequest_headers = {{ set = {{ \"X-Request-ID\" = \"$request_id\" }} }}\nresponse_headers = {{ set = {{ \"X-Request-ID\" = \"$request_id\" }} }}\n[upstream.app]\nservers = [\"{app}\"]\n"
    ));
    let mut c = Client::connect(p.addr).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let reply = c.get("/headers").await;
        let text = reply.text();
        let sent = text
            .lines()
            .find_map(|l| l.strip_prefix("x-request-id: "))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string();
        assert_eq!(reply.header("x-request-id"), Some(sent.as_str()));
        assert!(
            sent.len() == 32 && sent.bytes().all(|b| b.is_ascii_hexdigit()),
            "{sent}"
        );
        seen.push(sent);
    }
    seen.dedup();
    assert_eq!(seen.len(), 3, "a new one each request: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_edits_change_what_each_side_sees() {
    let app = backend("a").await;
    let p = proxy(&format!(
        "[[route]]\nupstream = \"app\"\nrequest_headers = {{ set = {{ \"X-Real-IP\" = \"10.9.9.9\", \"X-Trace\" = \"$host:$arg_id\" }}, remove = [\"X-Debug\", \"X-Forwarded-Proto\"] }}\nresponse_headers = {{ set = {{ \"Strict-Transport-Security\" = \"max-age=63072000\" }}, remove = [\"X-Backend\"] }}\n[upstream.app]\nservers = [\"{app}\"]\n"
    ));
    let mut c = Client::connect(p.addr).await;
    c.send("GET /headers?id=42 HTTP/1.1\r\nHost: shop.test\r\nX-Debug: yes\r\nX-Real-IP: 1.2.3.4\r\n\r\n")
        .await;
    let reply = c.read_reply().await.unwrap();
    let seen = reply.text();
    assert!(seen.contains("x-real-ip: 10.9.9.9\n"), "{seen}");
    assert!(seen.contains("x-trace: shop.test:42\n"), "{seen}");
    assert!(
        !seen.contains("x-debug") && !seen.contains("1.2.3.4"),
        "{seen}"
    );
    assert!(!seen.contains("x-forwarded-proto"), "{seen}");
    assert!(seen.contains("x-forwarded-for: 127.0.0.1\n"), "{seen}");
    assert_eq!(
        reply.header("strict-transport-security"),
        Some("max-age=63072000")
    );
    assert_eq!(reply.header("x-backend"), None);
    // The same connection serves the next request with the same edits.
    let reply = c.get("/").await;
    assert_eq!(
        (reply.text().as_str(), reply.header("x-backend")),
        ("a\n", None)
    );
}
