//! The admin listener's dashboard (`GET /`) in a real browser: two servers under
//! traffic, one of them a `sluice backend` process that the test kills; headless
//! Chromium opens the page on the killed server (`#server=IP:PORT`) and the DOM its
//! scripts built must show that server ejected, its errors, and the live one up. And
//! with a token, which a page cannot send, the page says so.
//!
//! Chromium is a system package; `scripts/test.sh` installs it.

use super::harness::*;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// How long Chromium may take before the test kills it and fails.
const BROWSER_DEADLINE: Duration = Duration::from_secs(60);

/// Virtual time the page runs for in the browser: four polls and more. Chromium
/// stops virtual time while a fetch is pending, so the page sees real answers, only
/// closer together in real time than a second.
const PAGE_BUDGET_MS: u32 = 4500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn the_dashboard_shows_a_killed_server_ejected_and_its_errors() {
    let live = backend("live").await;
    let mut doomed = SluiceProcess::backend("doomed", loopback()).await;
    let dead = doomed.addr();
    let config = format!(
        "[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{live}\", \"{dead}\"]\n\
         max_fails = 1\neject_for = \"5m\"\n"
    );
    let p = proxy(&config);
    let admin = admin(&p, None);
    let page = get(admin.addr, "/").await;
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(page.text().contains("dashboard.js"), "{}", page.text());

    // Both serve; then one dies, and the traffic that finds it dead ejects it (its
    // requests retried on the other).
    load(p.addr, 40).await;
    doomed.kill();
    let deadline = Instant::now() + Duration::from_secs(10);
    while health(admin.addr, dead).await != "ejected" {
        assert!(Instant::now() < deadline, "{dead} never ejected");
        load(p.addr, 4).await;
    }

    // Traffic while the browser watches, so the live server has rates to show.
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let traffic = tokio::spawn(keep_sending(p.addr, stop.clone(), sent.clone()));
    let url = format!("http://{}/#server={dead}", admin.addr);
    let dom = tokio::task::spawn_blocking(move || browse(&url))
        .await
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    traffic.await.unwrap();
    assert!(sent.load(Ordering::Relaxed) > 0);

    check(&dom, live, dead);
}

/// With a token, the page still loads (it holds no data), but its polls get `401`: it
/// must say why it shows nothing, not fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs chromium"]
async fn with_a_token_the_dashboard_says_it_cannot_send_one() {
    let p = proxy(&one_upstream(&[backend("a").await], ""));
    let admin = admin(&p, Some("0123456789abcdef0123"));
    assert_eq!(get(admin.addr, "/api/upstreams").await.status, 401);
    let url = format!("http://{}/", admin.addr);
    let dom = tokio::task::spawn_blocking(move || browse(&url))
        .await
        .unwrap();
    let body = tag(&dom, "<body");
    assert!(!body.contains("data-error"), "script error: {body}");
    assert!(!body.contains("data-polls"), "{body}");
    assert!(body.contains("data-auth=\"required\""), "{body}");
    let message = section_of(&dom, "<p id=\"message\"", "</p>");
    assert!(!message.contains("hidden"), "{message}");
    assert!(message.contains("asks for a bearer token"), "{message}");
}

/// An admin listener on 127.0.0.1:0 for `p`.
fn admin(p: &TestProxy, token: Option<&str>) -> sluice_admin::Admin {
    let config = sluice_config::Admin::new(loopback(), token.map(String::from));
    sluice_admin::start(&config, p.view(), sluice_admin::Info::default()).unwrap()
}

/// What the page must show: polls made, no script error, the dead server ejected with
/// its errors open, the live one up and serving.
fn check(dom: &str, live: SocketAddr, dead: SocketAddr) {
    let body = tag(dom, "<body");
    assert!(!body.contains("data-error"), "script error: {body}");
    let polls: u32 = attr(body, "data-polls")
        .unwrap_or_else(|| panic!("the page never rendered a poll: {body}"))
        .parse()
        .unwrap();
    assert!(polls >= 2, "{polls} polls");

    let dead_row = row(dom, dead);
    assert!(dead_row.contains("data-health=\"ejected\""), "{dead_row}");
    assert!(
        dead_row.contains(">ejected</span>") && dead_row.contains("s left"),
        "{dead_row}"
    );
    assert!(dead_row.contains("class=\"server selected\""), "{dead_row}");
    assert_eq!(cell(&dead_row, "ejections num warn"), "1", "{dead_row}");

    let live_row = row(dom, live);
    assert!(live_row.contains(">up</span>"), "{live_row}");
    let rps = cell(&live_row, "rps num");
    let rps: f64 = rps
        .replace(',', "")
        .parse()
        .unwrap_or_else(|_| panic!("requests/s {rps:?}"));
    // The error rate of the last poll's window: none to show when no request of the
    // live server fell in it, which happens on a busy machine (Chromium's virtual time
    // brings the polls close together in real time; a CI run met it). A window with a
    // request has at least one in the few seconds a window lasts, so shows 0.2 or more.
    let err = if rps > 0.0 { "0 %" } else { "–" };
    assert_eq!(cell(&live_row, "err num"), err, "{live_row}");
    assert!(dom.contains(">1 of 2 up</td>"), "the upstream's total row");

    let panel = section_of(dom, "<div class=\"errors\" id=\"errors\"", "</div>");
    assert!(
        panel.contains(&format!("Recent errors of {dead}")),
        "{panel}"
    );
    let errors = panel.matches("<tr class=\"error\">").count();
    assert!(errors >= 1, "no error listed: {panel}");
    // A request that found the server dead: a 502 on route `/`, and a cause.
    assert!(panel.contains("<td class=\"route\">/</td>"), "{panel}");
    assert!(
        panel.contains("<td class=\"status num\">502</td>"),
        "{panel}"
    );
    let cause = cell(panel, "cause");
    assert!(!cause.is_empty(), "{panel}");
    // Its kind, as the failure was classified: the dead server refused the connection.
    assert!(panel.contains("<td class=\"kind\">connect</td>"), "{panel}");
    // Charts: a line per server and one for all, in each of the two charts.
    assert!(dom.matches("<path ").count() >= 2, "no chart line drawn");
}

/// `requests` GETs on one connection, each answered 200.
async fn load(proxy: SocketAddr, requests: usize) {
    let mut client = Client::connect(proxy).await;
    for _ in 0..requests {
        assert_eq!(client.get("/").await.status, 200);
    }
}

async fn keep_sending(proxy: SocketAddr, stop: Arc<AtomicBool>, sent: Arc<AtomicU64>) {
    let mut client = Client::connect(proxy).await;
    while !stop.load(Ordering::Relaxed) {
        assert_eq!(client.get("/").await.status, 200);
        sent.fetch_add(1, Ordering::Relaxed);
        // A few hundred a second: rates to show, CPU left for the browser.
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn health(admin: SocketAddr, server: SocketAddr) -> String {
    let reply = get(admin, "/api/upstreams").await;
    let ups: serde_json::Value = serde_json::from_slice(&reply.body).unwrap();
    let servers = ups["upstreams"][0]["servers"].as_array().unwrap().clone();
    let s = servers
        .iter()
        .find(|s| s["addr"] == server.to_string())
        .unwrap();
    s["health"].as_str().unwrap().to_string()
}

fn chromium() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("chromium"))
            .find(|p| p.is_file())
    });
    on_path
        .or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file()))
        .unwrap_or_else(|| {
            panic!(
                "chromium not found on PATH: this test opens the admin dashboard in headless \
                 Chromium. scripts/test.sh installs it (Debian package `chromium`)."
            )
        })
}

/// Opens `url` in headless Chromium, killed after [`BROWSER_DEADLINE`], and returns
/// the DOM after the page ran for [`PAGE_BUDGET_MS`] of virtual time.
fn browse(url: &str) -> String {
    let dir = TempDir::new("dashboard");
    let log = dir.0.join("chromium.log");
    let mut child = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .args(["--no-first-run", "--no-default-browser-check"])
        .args(["--disable-extensions", "--disable-background-networking"])
        .arg("--disable-component-update")
        // The page talks to its own origin only, on 127.0.0.1: resolve no name at all.
        .arg("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
        .arg(format!(
            "--user-data-dir={}",
            dir.0.join("profile").display()
        ))
        .arg("--run-all-compositor-stages-before-draw")
        .arg(format!("--virtual-time-budget={PAGE_BUDGET_MS}"))
        .arg("--dump-dom")
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (done, read) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = String::new();
        let result = stdout.read_to_string(&mut out);
        let _ = done.send(result.map(|_| out));
    });
    let out = match read.recv_timeout(BROWSER_DEADLINE) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {BROWSER_DEADLINE:?}; killed it");
        }
    };
    let status = child.wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.success() && out.contains("<body"),
        "chromium: {status}, no page:\n{said}"
    );
    out
}

/// The first opening tag that starts with `start`.
fn tag<'a>(dom: &'a str, start: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in the DOM:\n{dom}"));
    let end = at + dom[at..].find('>').unwrap();
    &dom[at..=end]
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    Some(&tag[at..at + tag[at..].find('"')?])
}

/// From the first `start` to the first `end` after it.
fn section_of<'a>(dom: &'a str, start: &str, end: &str) -> &'a str {
    let at = dom
        .find(start)
        .unwrap_or_else(|| panic!("no {start} in the DOM:\n{dom}"));
    let len = dom[at..].find(end).unwrap();
    &dom[at..at + len]
}

/// The server's row in the table, `<tr ...>` to `</tr>`.
fn row(dom: &str, server: SocketAddr) -> String {
    let at = dom
        .find(&format!("data-server=\"{server}\""))
        .unwrap_or_else(|| panic!("no row for {server} in the DOM:\n{dom}"));
    let start = dom[..at].rfind("<tr").unwrap();
    let len = dom[start..].find("</tr>").unwrap();
    dom[start..start + len].to_string()
}

/// The text of the first `<td class="{class}">` in `html`.
fn cell(html: &str, class: &str) -> String {
    let open = format!("<td class=\"{class}\">");
    let start = html
        .find(&open)
        .unwrap_or_else(|| panic!("no {open} in {html}"))
        + open.len();
    let len = html[start..].find("</td>").unwrap();
    html[start..start + len].to_string()
}
