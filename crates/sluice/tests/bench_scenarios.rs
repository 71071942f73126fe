//! `sluice bench --scenario` as a user runs it: the shipped example scenarios, seed
//! 003's STOMP chat through a real sluice in front of three chat servers (round robin
//! splits the rooms and loses messages; hashing on the room loses none), and a bad
//! scenario file.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{backends, stat};

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.env("SLUICE_LOG", "warn");
    c
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/bench")
        .join(name)
}

/// sluice in this process in front of `servers`, balanced as `balance` says.
fn proxy(servers: &[SocketAddr], balance: &str) -> sluice_proxy::Proxy {
    let list: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    let text = format!(
        "[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"chat\"\n[upstream.chat]\nservers = [{}]\n{balance}\n",
        list.join(", ")
    );
    let config = sluice_config::parse("test.toml", &text).unwrap();
    sluice_proxy::Proxy::start(config).expect("proxy starts")
}

struct Run {
    output: Output,
    report: serde_json::Value,
}

fn bench(args: &[&str], label: &str) -> Run {
    let json = std::env::temp_dir().join(format!(
        "sluice-scenario-{label}-{}.json",
        std::process::id()
    ));
    let output = sluice()
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg("-q")
        .output()
        .unwrap();
    let text = std::fs::read(&json).unwrap_or_else(|e| {
        panic!(
            "no JSON ({e}); stderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    let _ = std::fs::remove_file(&json);
    Run {
        output,
        report: serde_json::from_slice(&text).unwrap(),
    }
}

/// Seed 003 through sluice: 62 users in 31 rooms, each entering its room and saying
/// two things. Returns the delivery section.
fn chat_through(balance: &str, label: &str) -> serde_json::Value {
    let servers = backends(&["s1", "s2", "s3"], true);
    let p = proxy(&servers, balance);
    let target = format!("http://{}", p.local_addrs()[0]);
    let scenario = example("stomp-chat.toml");
    let args = [
        "bench",
        "--scenario",
        scenario.to_str().unwrap(),
        &target,
        "--users",
        "62",
        "--iterations",
        "2",
        "--ramp",
        "0s",
    ];
    let run = bench(&args, label);
    assert!(run.output.status.success(), "{:?}", run.output);
    let step = &run.report["steps"][0];
    for name in ["open", "connect", "subscribe", "disconnect"] {
        assert_eq!(step["labels"][name]["samples"], 62, "{name}");
        assert_eq!(step["labels"][name]["errors"], 0, "{name}: {step}");
    }
    // Each user enters once and says two things.
    assert_eq!(step["labels"]["say"]["samples"], 124);
    let d = step["delivery"].clone();
    assert_eq!(d["messages"], 186);
    let n = |k: &str| d[k].as_u64().unwrap();
    assert_eq!(n("delivered") + n("lost"), n("expected"), "{d}");
    // Every MESSAGE frame the three brokers sent was received and accounted for.
    let sent_by_brokers: u64 = servers.iter().map(|s| stat(*s, "stomp_messages")).sum();
    assert_eq!(n("delivered") + n("unexpected"), sent_by_brokers, "{d}");
    p.shutdown();
    d
}

#[test]
fn seed_003_hashing_on_the_room_delivers_every_message_round_robin_loses_them() {
    let hashed = chat_through("balance = \"hash\"\nhash_key = \"$arg_room\"", "hash");
    let round_robin = chat_through("balance = \"round_robin\"", "rr");
    println!("hash: {hashed}\nround robin: {round_robin}");
    // Every room on one server: each message reaches every user of its room then
    // subscribed (each "say" comes a second after everyone entered: both users).
    assert!(
        hashed["expected"].as_u64().unwrap() >= 124 * 2 + 62,
        "{hashed}"
    );
    // Nothing lost. (A copy may be "unexpected" when a SEND crosses another user's
    // SUBSCRIBE on its way to the broker: it arrived, and chat_through checked that
    // every copy the brokers sent is accounted for.)
    assert_eq!(hashed["lost"], 0, "{hashed}");
    // Round robin puts the 2 users of a room on different servers (62 users over 3
    // servers in turn): each hears only itself.
    let lost = round_robin["lost"].as_u64().unwrap();
    assert!(lost > 0, "{round_robin}");
    assert!(
        round_robin["lost_pct"].as_f64().unwrap() > 10.0,
        "{round_robin}"
    );
}

#[test]
fn the_http_flow_example_runs_as_a_jmeter_test_plan_would() {
    let server = backends(&["shop"], false)[0];
    let scenario = example("http-flow.toml");
    let target = format!("http://{server}");
    let args = [
        "bench",
        "--scenario",
        scenario.to_str().unwrap(),
        &target,
        "--users",
        "3",
        "--iterations",
        "1",
        "--ramp",
        "0s",
    ];
    let run = bench(&args, "flow");
    assert!(run.output.status.success(), "{:?}", run.output);
    let step = &run.report["steps"][0];
    for name in [
        "login",
        "home",
        "products",
        "product",
        "add to cart",
        "logout",
    ] {
        assert_eq!(step["labels"][name]["samples"], 3, "{name}: {step}");
        assert_eq!(step["labels"][name]["errors"], 0, "{name}");
    }
    assert!(step.get("delivery").is_none());
    let steps: Vec<&str> = run.report["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        steps,
        [
            "login",
            "home",
            "products",
            "product",
            "add to cart",
            "logout"
        ]
    );
}

#[test]
fn a_bad_scenario_file_is_refused_with_its_positions_and_exit_code_2() {
    let path =
        std::env::temp_dir().join(format!("sluice-bad-scenario-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "target = \"http://127.0.0.1:1\"\nusers = 2\nduration = \"10 parsecs\"\n\n[[step]]\nhttp = \"GET /\"\nexpect_stauts = 200\n",
    )
    .unwrap();
    let output = sluice()
        .args(["bench", "--scenario"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let file = path.display().to_string();
    for expected in [
        format!("{file}:3:12: `duration` is not a duration"),
        format!(
            "{file}:7:1: unknown key `expect_stauts` in a [[step]] (did you mean `expect_status`?)"
        ),
    ] {
        assert!(
            stderr.contains(&expected),
            "missing {expected:?} in {stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
    let missing = sluice()
        .args(["bench", "--scenario", "/no/such/scenario.toml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the scenario"));
}

/// Think times drawn between two bounds: each user pauses at least the lower one after
/// each request (its path drawn too, `{uuid}` and `{random(1,9)}`).
#[test]
fn a_drawn_think_time_paces_each_user() {
    let server = support::backend();
    let path =
        std::env::temp_dir().join(format!("sluice-think-scenario-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        format!(
            "target = \"http://{server}\"\nusers = 2\niterations = 5\n\n[[step]]\nhttp = \"GET /?id={{uuid}}&n={{random(1,9)}}\"\nexpect_status = 200\nthink = {{ between = [\"40ms\", \"60ms\"] }}\n"
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let run = bench(&["bench", "--scenario", path.to_str().unwrap()], "think");
    let took = started.elapsed();
    let _ = std::fs::remove_file(&path);
    let step = &run.report["steps"][0];
    assert_eq!(step["samples"], 10, "{step}");
    assert_eq!(step["errors"], 0, "{step}");
    // Five pauses of 40 ms at least, one after each request of each user.
    assert!(took >= std::time::Duration::from_millis(200), "{took:?}");
    assert_eq!(support::answered(server), 10);
}

/// `support/session_app.py` on a free port, killed when dropped.
struct SessionApp(std::process::Child, u16);

impl SessionApp {
    fn start() -> SessionApp {
        let port = support::free_port();
        let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/session_app.py");
        let child = Command::new(support::python())
            .arg(app)
            .arg(port.to_string())
            .spawn()
            .expect("python3");
        support::wait_listening(port);
        SessionApp(child, port)
    }

    /// Pages served, per user.
    fn pages(&self) -> serde_json::Value {
        let body = sluice_lab::fetch::http_get(&format!("http://127.0.0.1:{}/count", self.1));
        serde_json::from_str(&body.unwrap()).unwrap()
    }
}

impl Drop for SessionApp {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Each user keeps its own session cookie (JMeter's Cookie Manager, k6's jar): logged in
/// once in its setup, every page it loads is its own user's, and a cookie set for
/// another domain never goes back. With `cookies = false`, the pages are refused.
#[test]
#[ignore = "needs python3"]
fn each_user_keeps_its_own_session_cookie() {
    let app = SessionApp::start();
    let scenario = |cookies: bool| {
        format!(
            "target = \"http://127.0.0.1:{}\"\nusers = 4\niterations = 3\ncookies = {cookies}\n\n[[setup]]\nhttp = \"GET /login?user={{user}}\"\n\n[[step]]\nname = \"page\"\nhttp = \"GET /page?user={{user}}\"\nexpect_status = 200\n",
            app.1
        )
    };
    let path = std::env::temp_dir().join(format!("sluice-cookies-{}.toml", std::process::id()));
    std::fs::write(&path, scenario(true)).unwrap();
    let run = bench(&["bench", "--scenario", path.to_str().unwrap()], "cookies");
    let step = &run.report["steps"][0];
    assert_eq!(step["errors"], 0, "{step}");
    assert_eq!(step["labels"]["page"]["samples"], 12, "{step}");
    let pages = app.pages();
    for user in 0..4 {
        assert_eq!(pages[user.to_string()], 3, "{pages}");
    }
    std::fs::write(&path, scenario(false)).unwrap();
    let run = bench(
        &["bench", "--scenario", path.to_str().unwrap()],
        "no-cookies",
    );
    let _ = std::fs::remove_file(&path);
    let step = &run.report["steps"][0];
    assert_eq!(step["labels"]["page"]["errors"], 12, "{step}");
    assert_eq!(step["statuses"]["401"], 12, "{step}");
}

/// `sluice bench --check`: the shipped examples are good, each said in a line; a bad
/// file's every problem is told at once with its place, exit 2, and nothing is sent
/// (its target is a port no one listens on, which a run would count as errors).
#[test]
fn check_reads_scenarios_as_a_run_would_and_runs_nothing() {
    let good = sluice()
        .args(["bench", "--check"])
        .arg(example("http-flow.toml"))
        .arg(example("stomp-chat.toml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&good.stdout);
    assert!(
        good.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&good.stderr)
    );
    assert_eq!(stdout.matches(": ok (").count(), 2, "{stdout}");
    assert!(stdout.contains("loop step"), "{stdout}");
    let path =
        std::env::temp_dir().join(format!("sluice-check-scenario-{}.toml", std::process::id()));
    std::fs::write(
        &path,
        "target = \"http://127.0.0.1:1/app\"\nusers = 2\niterations = 0\n\n[[step]]\nhttp = \"FETCH\"\nthink = \"soon\"\nheaders = [\"X-Id: {random(9,1)}\"]\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let bad = sluice()
        .args(["bench", "--check"])
        .arg(&path)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(
        bad.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&bad.stdout)
    );
    let file = path.display().to_string();
    // The target's path, the step's request, its think time and a variable: four
    // problems, each at its line, in one run.
    assert!(stderr.contains("{random(9,1)}"), "{stderr}");
    for line in [1, 6, 7, 8] {
        assert!(
            stderr.contains(&format!("{file}:{line}:")),
            "no problem at line {line}: {stderr}"
        );
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "it ran: {stderr}"
    );
}

/// `--follow` in a scenario: a step whose request is redirected (a log-in's 302, here
/// sluice's own `return`) is followed to the page, each hop a sample of its own; the
/// step's `expect_status` and `expect_body` are what the page must be, the redirect on
/// the way judged as any response is. Without `--follow`, the 302 fails the step.
#[test]
fn a_scenario_step_follows_redirects_and_checks_the_page_they_lead_to() {
    let app = backends(&["shop"], false)[0];
    let text = format!(
        "[[listener]]\nbind = \"127.0.0.1:0\"\n\
         [[route]]\npath = \"/login\"\nreturn = {{ status = 302, location = \"/home\" }}\n\
         [[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n"
    );
    let proxy =
        sluice_proxy::Proxy::start(sluice_config::parse("follow.toml", &text).unwrap()).unwrap();
    let path = std::env::temp_dir().join(format!(
        "sluice-follow-scenario-{}.toml",
        std::process::id()
    ));
    let scenario = format!(
        "target = \"http://{}\"\nusers = 2\niterations = 3\n\n\
         [[step]]\nname = \"log in\"\nhttp = \"POST /login\"\nbody = \"user={{user}}\"\n\
         expect_status = 200\nexpect_body = \"shop\"\n",
        proxy.local_addrs()[0]
    );
    std::fs::write(&path, scenario).unwrap();
    let file = path.to_str().unwrap();
    let before = support::answered(app);
    let run = bench(&["bench", "--scenario", file, "--follow"], "follow");
    let step = &run.report["steps"][0];
    assert!(run.output.status.success(), "{step}");
    assert_eq!(step["labels"]["log in"]["statuses"]["302"], 6, "{step}");
    assert_eq!(step["labels"]["log in"]["errors"], 0, "{step}");
    let page = &step["labels"]["log in (redirected)"];
    assert_eq!(page["statuses"]["200"], 6, "{step}");
    assert_eq!(page["errors"], 0, "{step}");
    // The page was asked for with GET after the 302, as a browser does.
    assert_eq!(support::answered(app) - before - 1, 6);
    let run = bench(&["bench", "--scenario", file], "unfollowed");
    let _ = std::fs::remove_file(&path);
    let step = &run.report["steps"][0];
    assert_eq!(
        step["error_kinds"]["check: status 302"], 6,
        "not followed, the 302 is what the step checks: {step}"
    );
}

/// A directory of its own for a scenario and its data file (`support::TempDir`: removed
/// when dropped).
struct ScenarioDir(support::TempDir);

impl ScenarioDir {
    fn new(label: &str, csv: &str) -> ScenarioDir {
        let dir = support::TempDir::new(label);
        dir.file("accounts.csv", csv);
        ScenarioDir(dir)
    }

    /// Where `name` is in it.
    fn path(&self, name: &str) -> PathBuf {
        self.0 .0.join(name)
    }

    /// Writes the scenario; its path.
    fn scenario(&self, text: &str) -> String {
        self.0.file("scenario.toml", text).display().to_string()
    }
}

const ACCOUNTS: &str =
    "username,password\nann,pw-ann\nbob,pw-bob\ncid,pw-cid\ndee,pw-dee\neve,pw-eve\nfay,pw-fay\n";

/// A form login as Spring Security's, from a CSV of accounts: each user takes its own
/// row, the CSRF token from the form page (regex) and a bearer token from the login's
/// JSON (JSONPath), and loads pages only its own account may see.
fn login_scenario(port: u16, csrf_regex: &str, signin_csrf: &str) -> String {
    format!(
        r#"target = "http://127.0.0.1:{port}"
users = 6
iterations = 4
data = "accounts.csv"

[[setup]]
name = "form"
http = "GET /form"
extract.csrf = {{ regex = '{csrf_regex}' }}

[[setup]]
name = "signin"
http = "POST /signin"
headers = ["Content-Type: application/x-www-form-urlencoded"]
body = "username={{username}}&password={{password}}&_csrf={signin_csrf}"
expect_status = 200
extract.token = {{ json = "$.token" }}

[[step]]
name = "page"
http = "GET /page?user={{username}}"
headers = ["Authorization: Bearer {{token}}"]
expect_status = 200
"#
    )
}

#[test]
#[ignore = "needs python3"]
fn users_log_in_from_a_data_file_with_tokens_taken_from_responses() {
    let app = SessionApp::start();
    let dir = ScenarioDir::new("login", ACCOUNTS);
    let good = dir.scenario(&login_scenario(
        app.1,
        r#"name="_csrf" value="([^"]+)""#,
        "{csrf}",
    ));
    let run = bench(&["bench", "--scenario", &good], "login");
    let step = &run.report["steps"][0];
    assert_eq!(step["errors"], 0, "{step}");
    assert_eq!(step["labels"]["page"]["samples"], 24, "{step}");
    let pages = app.pages();
    for name in ["ann", "bob", "cid", "dee", "eve", "fay"] {
        assert_eq!(pages[name], 4, "each account's own pages: {pages}");
    }
}

/// An extraction that finds nothing is an error of its own kind, shown with the
/// response's start; what needed its value is not sent, and says why. A request the
/// server refuses is shown with the cookies it carried, in the text, the JSON and the
/// HTML page (as text, drawn by Chromium).
#[test]
#[ignore = "needs python3 and chromium"]
fn a_failed_extraction_and_a_refused_login_are_told_with_what_was_exchanged() {
    let app = SessionApp::start();
    let dir = ScenarioDir::new("login-fails", ACCOUNTS);
    let bad_regex = dir.scenario(&login_scenario(
        app.1,
        r#"name="csrf_token" value="([^"]+)""#,
        "{csrf}",
    ));
    let run = bench(&["bench", "--scenario", &bad_regex], "bad-regex");
    let step = &run.report["steps"][0];
    assert_eq!(step["error_kinds"]["extract: csrf not found"], 6, "{step}");
    assert_eq!(
        step["error_kinds"]["variable {csrf} has no value"], 6,
        "{step}"
    );
    assert_eq!(
        step["error_kinds"]["variable {token} has no value"], 24,
        "{step}"
    );
    let failure = &step["labels"]["form"]["failures"][0];
    assert_eq!(failure["request"], "GET /form HTTP/1.1", "{failure}");
    let response = failure["response"].as_str().unwrap();
    assert!(
        response.starts_with("HTTP/1.1 200") && response.contains("name=\"_csrf\""),
        "{failure}"
    );
    assert_eq!(
        app.pages(),
        serde_json::json!({}),
        "nothing unsent reached a page"
    );

    let refused = dir.scenario(&login_scenario(
        app.1,
        r#"name="_csrf" value="([^"]+)""#,
        "stale",
    ));
    let page = dir.path("refused.html");
    let html = page.to_str().unwrap();
    let run = bench(
        &["bench", "--scenario", &refused, "--html", html],
        "refused",
    );
    let step = &run.report["steps"][0];
    assert_eq!(step["error_kinds"]["check: status 403"], 6, "{step}");
    let failure = &step["labels"]["signin"]["failures"][0];
    assert_eq!(failure["request"], "POST /signin HTTP/1.1", "{failure}");
    assert!(
        failure["cookies"].as_str().unwrap().starts_with("SID="),
        "{failure}"
    );
    assert!(
        failure["response"]
            .as_str()
            .unwrap()
            .contains("Invalid CSRF token"),
        "{failure}"
    );
    let text = String::from_utf8_lossy(&run.output.stdout);
    assert!(
        text.contains("first \"check: status 403\" in signin: POST /signin"),
        "{text}"
    );
    let dom = support::browser_dom(&page);
    let summary = "<details class=\"failure\"><summary>signin: check: status 403";
    assert!(dom.contains(summary), "{dom}");
    assert!(
        dom.contains("Cookie: SID=") && dom.contains("Invalid CSRF token"),
        "{dom}"
    );
}

/// What a scenario's data file lacks is told before anything runs: a variable no
/// column or extraction gives, a row shorter than the header.
#[test]
fn a_missing_data_column_or_a_broken_row_is_told_before_anything_runs() {
    let dir = ScenarioDir::new("data-check", "username,password\nann,pw-ann\nbob\n");
    let path = dir.scenario(
        "target = \"http://127.0.0.1:1\"\nusers = 2\niterations = 1\ndata = \"accounts.csv\"\n\n[[step]]\nhttp = \"GET /u/{email}\"\n",
    );
    let out = sluice().args(["bench", "--check", &path]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{path}:4:8: `data` accounts.csv: line 3 has 1 fields where there are 2 columns"
        )),
        "{stderr}"
    );
    std::fs::write(dir.path("accounts.csv"), "username,password\nann,pw-ann\n").unwrap();
    let out = sluice().args(["bench", "--check", &path]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "{path}:7:8: `{{email}}` is no variable of this scenario"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("{username}, {password}"),
        "the columns it has: {stderr}"
    );
    let out = sluice()
        .args(["bench", "--scenario", &path, "-q"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "not run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A .jmx that is not one, told with its place, exit 2, and no scenario written.
#[test]
fn a_malformed_jmeter_plan_is_told_at_its_place_and_nothing_is_written() {
    let dir = ScenarioDir::new("bad-jmx", ACCOUNTS);
    let plan = dir.path("plan.jmx");
    std::fs::write(
        &plan,
        "<?xml version=\"1.0\"?>\n<jmeterTestPlan version=\"1.2\">\n  <hashTree>\n    <TestPlan testname=\"x\">\n  </hashTree>\n",
    )
    .unwrap();
    let out_file = dir.path("plan.toml");
    let out = sluice()
        .args(["bench", "import"])
        .arg(&plan)
        .arg("-o")
        .arg(&out_file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:5:", plan.display())) && stderr.contains("malformed XML"),
        "{stderr}"
    );
    assert!(!out_file.exists(), "nothing written");
    std::fs::write(&plan, "<project><target name=\"build\"/></project>\n").unwrap();
    let out = sluice()
        .args(["bench", "import"])
        .arg(&plan)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not a JMeter test plan"), "{stderr}");
}

/// A browser's recording (HAR) of a log-in and two pages, its session cookie recorded
/// too: imported, the recorded cookie is left out and each user's jar keeps its own
/// session, the CDN's request is listed, not sent; 0 errors for 5 users.
#[test]
#[ignore = "needs python3"]
fn a_browser_recording_imported_replays_the_session_with_each_user_s_own_cookie() {
    let app = SessionApp::start();
    let dir = ScenarioDir::new("har", ACCOUNTS);
    let origin = format!("http://127.0.0.1:{}", app.1);
    let entry = |at: &str, url: &str| {
        format!(
            r#"{{"startedDateTime": "2026-11-29T10:00:{at}Z", "time": 12, "request": {{"method": "GET", "url": "{url}", "httpVersion": "HTTP/1.1", "headers": [{{"name": "Host", "value": "x"}}, {{"name": "Cookie", "value": "SID=recorded"}}, {{"name": "Accept", "value": "text/html"}}], "queryString": [], "cookies": [], "headersSize": -1, "bodySize": 0}}, "response": {{"status": 200, "headers": []}}}}"#
        )
    };
    let entries = [
        entry("00.000", &format!("{origin}/login?user=7")),
        entry("00.020", "https://cdn.example/app.js"),
        entry("00.100", &format!("{origin}/page?user=7")),
        entry("00.200", &format!("{origin}/page?user=7")),
    ];
    let har = format!(
        r#"{{"log": {{"version": "1.2", "creator": {{"name": "Chromium", "version": "156"}}, "entries": [{}]}}}}"#,
        entries.join(",\n")
    );
    let recording = dir.path("shop.har");
    std::fs::write(&recording, har).unwrap();
    let scenario = dir.path("shop.toml");
    let out = sluice()
        .args(["bench", "import"])
        .arg(&recording)
        .arg("-o")
        .arg(&scenario)
        .output()
        .unwrap();
    let told = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{told}");
    assert!(
        told.contains("not carried over: entry 2: GET https://cdn.example/app.js"),
        "{told}"
    );
    assert!(told.contains("checked: ok (3 loop steps"), "{told}");
    let file = scenario.to_str().unwrap();
    let run = bench(&["bench", "--scenario", file, "--users", "5"], "har");
    let step = &run.report["steps"][0];
    assert_eq!(step["errors"], 0, "{step}");
    assert_eq!(
        app.pages()["7"],
        10,
        "5 users x 2 pages, each with its own session"
    );
}

/// Two scenarios in one run, each with its own model (k6's scenarios): closed browsers
/// beside an open-rate API, each step labelled with its file's name; and a `rate`
/// scenario's users each run their setup, the loop once and their teardown.
#[test]
fn closed_browsers_run_beside_an_open_rate_api_each_labelled_with_its_scenario() {
    let app = backends(&["shop"], false)[0];
    let dir = ScenarioDir::new("beside", ACCOUNTS);
    let browse = dir.path("browse.toml");
    std::fs::write(
        &browse,
        format!("target = \"http://{app}\"\nusers = 3\nduration = \"2s\"\n\n[[step]]\nname = \"home\"\nhttp = \"GET /home\"\nthink = \"50ms\"\n"),
    )
    .unwrap();
    let api = dir.path("api.toml");
    std::fs::write(
        &api,
        format!("target = \"http://{app}\"\nrate = 40\nduration = \"2s\"\n\n[[setup]]\nname = \"token\"\nhttp = \"POST /token\"\n\n[[step]]\nname = \"items\"\nhttp = \"GET /api/items\"\n\n[[teardown]]\nname = \"bye\"\nhttp = \"DELETE /token\"\n"),
    )
    .unwrap();
    let (browse, api) = (browse.to_str().unwrap(), api.to_str().unwrap());
    let run = bench(
        &["bench", "--scenario", browse, "--scenario", api],
        "beside",
    );
    let step = &run.report["steps"][0];
    assert!(run.output.status.success(), "{step}");
    assert_eq!(step["errors"], 0, "{step}");
    let labels = &step["labels"];
    // 40 users a second for 2 s: 80 arrive, each once through its three steps.
    for label in ["api: token", "api: items", "api: bye"] {
        assert_eq!(labels[label]["samples"], 80, "{label}: {step}");
    }
    let homes = labels["browse: home"]["samples"].as_u64().unwrap();
    assert!(
        (40..=130).contains(&homes),
        "3 users at about 20 a second each for 2 s: {homes}"
    );
    let both = sluice()
        .args([
            "bench",
            "--scenario",
            browse,
            "--scenario",
            api,
            "--users",
            "5",
        ])
        .output()
        .unwrap();
    assert_eq!(
        both.status.code(),
        Some(2),
        "--users with two scenarios says which it would not know"
    );
    let alone = bench(&["bench", "--scenario", api], "arrivals");
    let step = &alone.report["steps"][0];
    assert_eq!(step["arrivals"], true, "{step}");
    let text = String::from_utf8_lossy(&alone.output.stdout);
    assert!(
        text.contains("40 users/s"),
        "users arriving, not requests: {text}"
    );
}

/// A step's `if` runs it only when a variable says so: after an extraction that found
/// its value, and not after one that fell back on its default.
#[test]
fn a_step_runs_only_when_its_condition_holds() {
    let app = backends(&["shop"], false)[0];
    let dir = ScenarioDir::new("if", ACCOUNTS);
    let path = dir.scenario(&format!(
        "target = \"http://{app}\"\nusers = 2\niterations = 3\n\n[[step]]\nname = \"home\"\nhttp = \"GET /\"\nextract.shop = {{ regex = '(shop)' }}\nextract.coupon = {{ header = \"X-Coupon\", default = \"NOT_FOUND\" }}\n\n[[step]]\nname = \"shop\"\nif = \"{{shop}} == shop\"\nhttp = \"GET /shop\"\n\n[[step]]\nname = \"coupon\"\nif = \"{{coupon}} != NOT_FOUND\"\nhttp = \"GET /coupon/{{coupon}}\"\n"
    ));
    let run = bench(&["bench", "--scenario", &path], "if");
    let step = &run.report["steps"][0];
    assert_eq!(step["errors"], 0, "{step}");
    assert_eq!(step["labels"]["shop"]["samples"], 6, "{step}");
    assert!(step["labels"].get("coupon").is_none(), "skipped: {step}");
}

/// Rows given each once: users past them never begin, and the report says how many.
#[test]
fn users_past_the_last_row_of_unrecycled_data_do_not_run_and_are_counted() {
    let app = backends(&["shop"], false)[0];
    let dir = ScenarioDir::new("rows", ACCOUNTS);
    let path = dir.scenario(&format!(
        "target = \"http://{app}\"\nusers = 8\niterations = 2\ndata = {{ file = \"accounts.csv\", recycle = false }}\n\n[[step]]\nname = \"page\"\nhttp = \"GET /u/{{username}}\"\n"
    ));
    let run = bench(&["bench", "--scenario", &path], "rows");
    let step = &run.report["steps"][0];
    assert_eq!(
        step["labels"]["page"]["samples"], 12,
        "6 rows, 6 users, 2 each: {step}"
    );
    let warnings = step["warnings"].to_string();
    assert!(
        warnings.contains("2 users ended (or never began) for want of a row"),
        "{warnings}"
    );
}
