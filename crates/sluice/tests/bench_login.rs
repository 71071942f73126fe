//! `sluice bench` logs users in to a Spring Security form login (lab/spring-app with
//! `lab.login=true`): each of 200 users takes its account from a CSV file, the CSRF
//! token from the login page, keeps its `JSESSIONID`, follows the login's redirect to
//! its home page (whose new token it takes), loads pages the server checks are its own
//! session's user's, and logs out with that token. The server's own counts of logins,
//! pages and logouts per user are what the report says was sent.

mod support;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::stacks::SpringApp;

const USERS: usize = 200;
const ITERATIONS: usize = 3;

/// The login flow, as a Spring Security user writes it (the tokens' two spellings are
/// the login page's and the app's home page's).
fn scenario(port: u16) -> String {
    format!(
        r#"target = "http://127.0.0.1:{port}"
users = {USERS}
iterations = {ITERATIONS}
ramp = "2s"
data = "accounts.csv"

[[setup]]
name = "login page"
http = "GET /login"
extract.csrf = {{ regex = 'name="_csrf" type="hidden" value="([^"]+)"' }}

[[setup]]
name = "log in"
http = "POST /login"
headers = ["Content-Type: application/x-www-form-urlencoded"]
body = "username={{username}}&password={{password}}&_csrf={{csrf}}"
expect_body = "Welcome, {{username}}"
extract.csrf = {{ regex = 'name="_csrf" value="([^"]+)"' }}

[[step]]
name = "orders"
http = "GET /account/orders?user={{username}}"
expect_status = 200
expect_body = "orders of {{username}}"
think = {{ between = ["5ms", "20ms"] }}

[[teardown]]
name = "log out"
http = "POST /logout"
headers = ["Content-Type: application/x-www-form-urlencoded"]
body = "_csrf={{csrf}}"
expect_body = "signed out"
"#
    )
}

fn accounts() -> String {
    let mut csv = String::from("username,password\n");
    for i in 0..USERS {
        csv.push_str(&format!("user{i},pw{i}\n"));
    }
    csv
}

fn counts(port: u16) -> Value {
    let body = sluice_lab::fetch::http_get(&format!("http://127.0.0.1:{port}/lab/counts"));
    serde_json::from_str(&body.expect("/lab/counts answers")).unwrap()
}

fn bench(dir: &Path, args: &[&str]) -> (Value, String) {
    let json = dir.join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .env("SLUICE_LOG", "warn")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = std::fs::read(&json)
        .unwrap_or_else(|e| panic!("no report ({e}): {}", String::from_utf8_lossy(&out.stderr)));
    (serde_json::from_slice(&report).unwrap(), text)
}

#[test]
#[ignore = "needs a JDK and Maven"]
fn two_hundred_users_log_in_browse_their_own_pages_and_log_out() {
    let app = SpringApp::without_database(50, &["-Dlab.login=true"]);
    let dir = support::TempDir::new("bench-login");
    std::fs::write(dir.0.join("accounts.csv"), accounts()).unwrap();
    let path: PathBuf = dir.0.join("login.toml");
    std::fs::write(&path, scenario(app.port)).unwrap();
    let file = path.to_str().unwrap();
    let (report, text) = bench(&dir.0, &["bench", "--scenario", file, "--follow"]);
    let step = &report["steps"][0];
    assert_eq!(step["errors"], 0, "{text}");
    let labels = &step["labels"];
    assert_eq!(labels["orders"]["samples"], USERS * ITERATIONS, "{text}");
    // Each login and logout is a 302 and the page it leads to.
    for label in ["log in", "log out"] {
        assert_eq!(labels[label]["statuses"]["302"], USERS, "{text}");
        let page = &labels[format!("{label} (redirected)").as_str()];
        assert_eq!(page["statuses"]["200"], USERS, "{text}");
    }
    let counts = counts(app.port);
    for i in 0..USERS {
        let user = format!("user{i}");
        assert_eq!(counts["orders"][&user], ITERATIONS, "{user}: {counts}");
        assert_eq!(counts["logins"][&user], 1, "{user}: {counts}");
        assert_eq!(counts["logouts"][&user], 1, "{user}: {counts}");
    }
}

/// A JMeter 5 plan of the same login (tests/data/jmeter/login.jmx: CSV Data Set, Cookie,
/// Header and Cache Managers, regex extractors, a Once Only Controller, a Loop
/// Controller around a Transaction Controller, assertions, uniform and gaussian timers,
/// listeners, a JSR223 post-processor) imported by `sluice bench import` and run
/// against the app as it comes: 0 errors, each account's own pages.
#[test]
#[ignore = "needs a JDK and Maven"]
fn a_jmeter_plan_imported_logs_its_users_in_with_no_error() {
    let app = SpringApp::without_database(50, &["-Dlab.login=true"]);
    let dir = support::TempDir::new("bench-jmx");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/jmeter");
    std::fs::copy(data.join("accounts.csv"), dir.0.join("accounts.csv")).unwrap();
    let scenario = dir.0.join("login.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bench", "import"])
        .arg(data.join("login.jmx"))
        .arg("-o")
        .arg(&scenario)
        .output()
        .unwrap();
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{told}");
    for dropped in ["HTTP Cache Manager (CacheManager)", "JSR223 PostProcessor"] {
        assert!(
            told.contains("not carried over: line") && told.contains(dropped),
            "{dropped}: {told}"
        );
    }
    assert!(told.contains("checked: ok"), "{told}");
    let url = format!("http://127.0.0.1:{}", app.port);
    let file = scenario.to_str().unwrap();
    // Its think times, as the plan has them, shortened: the flow is what is tested.
    let text = std::fs::read_to_string(&scenario).unwrap();
    let quick = text
        .replace(
            r#"think = { between = ["500ms", "1500ms"] }"#,
            r#"think = "5ms""#,
        )
        .replace(
            r#"think = { gaussian = "1300ms", deviation = "306ms" }"#,
            r#"think = "5ms""#,
        )
        .replace("ramp = \"20s\"", "ramp = \"2s\"");
    assert_ne!(quick, text, "the plan's timers were translated as expected");
    std::fs::write(&scenario, quick).unwrap();
    let (report, text) = bench(&dir.0, &["bench", "--scenario", file, &url, "--follow"]);
    let step = &report["steps"][0];
    assert_eq!(step["errors"], 0, "{text}");
    let counts = counts(app.port);
    for i in 0..USERS {
        let user = format!("user{i}");
        assert_eq!(counts["orders"][&user], 5, "{user}: {counts}");
        assert_eq!(counts["logins"][&user], 1, "{user}: {counts}");
        assert_eq!(counts["logouts"][&user], 1, "{user}: {counts}");
    }
}
