//! `sluice lab --target` on a JVM given by pid alone (`--tier app=PID`: no metrics URL,
//! no agent), `lab/spring-app` against PostgreSQL: the lab samples its Tomcat request
//! threads through the JDK's attach listener and reads its GC from the counters `jstat`
//! reads. A `synchronized` hot spot is named with its method; a HikariCP pool of 2 is
//! named from the threads waiting for a connection; a CPU-heavy endpoint's method leads
//! the wall-clock profile's own-code frames; a slow service the app calls, which the lab
//! is not given, is named from the threads reading from it; the thread dumps stop the
//! JVM at most about 1% of each step, as the sampler spaces them. The same app on Jetty
//! and on Undertow (its Maven profiles) is read the same way.
//!
//! One run at a time: each measures CPU on the same two cores.

mod support;

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use support::stacks::{spring_lab_in, Gunicorn, Postgres, SpringApp};

static MACHINE: Mutex<()> = Mutex::new(());

/// `sluice lab --out dir` on `path` of a Spring app of 20 Tomcat threads started with
/// `jvm` options, given by its pid only: the report, the terminal's text, and the last
/// step's request threads.
fn by_pid(path: &str, jvm: &[&str], users: &str, dir: &Path) -> (Value, String, Value) {
    on_server("tomcat", path, (jvm, users), dir)
}

/// [`by_pid`] on the app built for `server` (`tomcat`, `jetty`, `undertow`).
fn on_server(
    server: &str,
    path: &str,
    (jvm, users): (&[&str], &str),
    dir: &Path,
) -> (Value, String, Value) {
    let pg = Postgres::start(None);
    let app = SpringApp::start_on(server, &pg, 20, jvm);
    let tier = format!("app={}", app.child.id());
    let (report, stdout) = spring_lab_in(&app, path, &[&tier], (users, "6s"), dir);
    let steps = report["configurations"][0]["steps"].as_array().unwrap();
    let threads = steps.last().unwrap()["jvm_threads"][0].clone();
    let name = threads["server"].as_str().unwrap_or("").to_lowercase();
    assert_eq!(name, server, "{stdout}");
    // The sampler spaces its dumps by what each stopped the JVM: about 1% at most
    // (a step's edges can cut a gap short).
    let stopped = threads["stopped_pct"].as_f64().unwrap();
    assert!(stopped > 0.0 && stopped <= 1.5, "{stopped}% {stdout}");
    assert!(
        threads["cost"]
            .as_str()
            .is_some_and(|c| c.contains("thread dumps stopped the JVM (its safepoint time)")),
        "{threads}"
    );
    // Its GC, from its counters' file.
    assert!(
        threads["gc"]
            .as_str()
            .is_some_and(|g| g.contains("old generation after GC")),
        "{threads}"
    );
    (report, stdout, threads)
}

#[test]
#[ignore = "needs PostgreSQL, java, mvn and chromium"]
fn a_synchronized_hot_spot_is_named_with_its_method_from_the_thread_dumps() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // GET /hot: a synchronized method holding its lock 5 ms, one request at a time.
    let dir = support::TempDir::new("lab-jvm-hot");
    let (report, stdout, threads) = by_pid("/hot", &[], "16", &dir.0);
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"app".into(), &"monitor".into()),
        "{stdout}"
    );
    assert!(
        v["summary"]
            .as_str()
            .unwrap()
            .contains("lab.stock.StockController.hot"),
        "{stdout}"
    );
    assert!(
        v["evidence"].to_string().contains("BLOCKED on a monitor"),
        "{stdout}"
    );
    assert!(v["advice"].as_str().unwrap().contains("lock"), "{stdout}");
    // Most of the 16 users' threads wait at it.
    let blocked = threads["states"]["blocked"].as_f64().unwrap();
    assert!(blocked >= 8.0, "{threads}");
    // The JVM given by pid has no thread metrics to miss: its threads were judged.
    assert!(
        !stdout.contains("without Tomcat's thread metrics"),
        "{stdout}"
    );
    // The step's profile: collapsed stacks a line each, the hot method in most.
    let folded = std::fs::read_to_string(
        dir.0
            .join(format!("profiles/app-pid-{}.wall.folded", pid(&report))),
    )
    .unwrap();
    let (mut hot, mut all) = (0u64, 0u64);
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        all += n;
        if stack.ends_with("lab.stock.StockController.hot") {
            hot += n;
        }
    }
    assert!(hot * 2 > all, "{hot} of {all}: {folded}");
    // ...and the page's flame graph of it.
    let dom = support::browser_dom(&dir.0.join("report.html"));
    assert!(dom.contains("id=\"flame-0\""), "{dom}");
    assert!(
        dom.contains(">lab.stock.StockController.hot</div>"),
        "{dom}"
    );
}

/// The pid of the report's one JVM tier.
fn pid(report: &Value) -> u64 {
    report["deployment"]["tiers"][0]["pid"].as_u64().unwrap()
}

#[test]
#[ignore = "needs PostgreSQL, java and mvn"]
fn a_hikari_pool_of_2_is_named_from_the_threads_waiting_for_a_connection() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // GET /query: 5 ms in the database (pg_sleep) holding a pooled connection, with
    // HikariCP held to 2 connections: 16 users' threads queue for them.
    let pool = "-Dspring.datasource.hikari.maximum-pool-size=2";
    let dir = support::TempDir::new("lab-jvm-pool");
    let (report, stdout, threads) = by_pid("/query", &[pool], "16", &dir.0);
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"app".into(), &"db_pool".into()),
        "{stdout}"
    );
    let summary = v["summary"].as_str().unwrap();
    assert!(summary.contains("from its threads"), "{summary}");
    assert!(
        summary.contains("2 in the database at once at most"),
        "{summary}"
    );
    let waiting = threads["states"]["pool"].as_f64().unwrap();
    let database = threads["states"]["database"].as_f64().unwrap();
    assert!(waiting >= 8.0, "{threads}");
    assert!(database > 0.5 && database <= 2.0, "{threads}");
}

#[test]
#[ignore = "needs PostgreSQL, java and mvn"]
fn a_cpu_heavy_endpoints_method_leads_the_wall_clock_profile() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // GET /cpu: 5 ms of hashing a request, 4 users on 2 cores.
    let dir = support::TempDir::new("lab-jvm-cpu");
    let (_, stdout, threads) = by_pid("/cpu", &[], "4", &dir.0);
    let own = &threads["top_own"][0];
    assert_eq!(own["frame"], "lab.stock.StockController.cpu", "{threads}");
    assert!(own["pct"].as_f64().unwrap() >= 50.0, "{threads}");
    assert!(
        threads["states"]["running"].as_f64().unwrap() >= 2.0,
        "{threads}"
    );
    assert!(stdout.contains("where the busy threads were"), "{stdout}");
}

#[test]
#[ignore = "needs PostgreSQL, java, mvn and gunicorn"]
fn a_slow_service_the_app_calls_unlisted_is_named_from_the_threads_reading_from_it() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // GET /call: the app reads from a service (gunicorn, 2 sync workers, 20 ms a
    // request: 100 req/s at most) on a blocking socket. The lab is given the app alone:
    // from 4 to 16 users throughput stays at the service's, and each request's read
    // from it grows as requests queue there.
    let service = Gunicorn::start(2, &[("SLEEP_MS", "20")]);
    let path = format!("/call?url={}", service.url());
    let dir = support::TempDir::new("lab-jvm-call");
    let (report, stdout, threads) = by_pid(&path, &[], "4,16", &dir.0);
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"app".into(), &"downstream".into()),
        "{stdout}"
    );
    assert!(
        v["evidence"]
            .to_string()
            .contains("in a read from another service"),
        "{stdout}"
    );
    assert!(
        threads["states"]["downstream"].as_f64().unwrap() >= 8.0,
        "{threads}"
    );
}

#[test]
#[ignore = "needs PostgreSQL, java, mvn and chromium"]
fn the_live_page_shows_the_jvms_request_threads_by_state_as_they_are_sampled() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    let pg = Postgres::start(None);
    let app = SpringApp::start(&pg, 20);
    let port = support::free_port();
    let mut lab = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["lab", "--target"])
        .arg(format!("http://127.0.0.1:{}/hot", app.port))
        .args(["--tier", &format!("app={}", app.child.id())])
        .args(["--users", "8", "-d", "15s", "--warmup", "0s", "--live"])
        .arg(format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // While the step runs: the JVM's threads of the last second, most BLOCKED.
    let live = format!("http://127.0.0.1:{port}/live.json");
    let start = Instant::now();
    let threads = loop {
        let state: Value = sluice_lab::fetch::http_get(&live)
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or_default();
        let threads = state["tiers"][0]["threads"].clone();
        let blocked = threads
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["state"] == "blocked");
        if blocked.is_some_and(|b| b["threads"].as_f64().unwrap() >= 4.0) {
            break threads;
        }
        assert!(start.elapsed() < Duration::from_secs(12), "{state}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // ...and the page draws them as a bar, a segment a state.
    let profile = support::TempDir::new("lab-jvm-live");
    let dom = support::browser_dom_of(&format!("http://127.0.0.1:{port}/"), &profile.0);
    let _ = lab.kill();
    let _ = lab.wait();
    assert!(dom.contains("class=\"seg\""), "{threads} {dom}");
    assert!(dom.contains("blocked "), "{dom}");
}

#[test]
#[ignore = "needs PostgreSQL, java and mvn"]
fn jettys_and_undertows_request_threads_are_recognised_and_judged_as_tomcats() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // The same app on Jetty (its selector threads share the request threads' pool) and
    // on Undertow (XNIO task threads): the hot spot named as on Tomcat, their idle
    // threads idle.
    for server in ["jetty", "undertow"] {
        let dir = support::TempDir::new(&format!("lab-jvm-{server}"));
        let (report, stdout, threads) = on_server(server, "/hot", (&[], "16"), &dir.0);
        assert_eq!(report["verdict"]["resource"], "monitor", "{stdout}");
        let running = threads["states"]["running"].as_f64().unwrap();
        assert!(running < 1.0, "{server}: {threads}");
    }
}
