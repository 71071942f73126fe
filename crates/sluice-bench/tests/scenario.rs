//! Scenarios against real lab backends: HTTP steps with checks, WebSocket echo, and a
//! STOMP chat whose every message is counted at every subscriber of its room, against
//! the broker's own count.

mod common;

use common::{answered, stats_field, stomp_backend_addr};
use sluice_bench::report::Report;
use sluice_bench::scenario::Scenario;
use sluice_bench::{Length, Load, Plan, Step};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

fn scenario_plan(addr: SocketAddr, text: &str, users: usize, iterations: u64) -> Plan {
    let text =
        format!("target = \"http://{addr}\"\nusers = {users}\niterations = {iterations}\n{text}");
    let scenario = Scenario::parse("test.toml", &text).unwrap_or_else(|e| panic!("{e}"));
    let mut plan = common::plan(&format!("http://{addr}/"), vec![], true);
    plan.requests.clear();
    plan.steps = vec![Step {
        load: Load::Users {
            users,
            ramp: Duration::ZERO,
            think: Duration::ZERO,
        },
        length: Length::Iterations(iterations),
    }];
    plan.scenario = Some(Arc::new(scenario));
    plan
}

fn label(report: &Report, name: &str) -> (u64, u64) {
    let s = &report.steps[0].labels[name];
    (s.samples, s.errors)
}

const CHAT: &str = r#"
rooms = 3

[[setup]]
name = "open"
ws = "/chat"
[[setup]]
name = "connect"
stomp = "CONNECT"
[[setup]]
name = "subscribe"
stomp = "SUBSCRIBE /topic/room.{room}"
# Everyone is subscribed before anyone speaks, so every copy is due.
think = "300ms"

[[step]]
name = "say"
stomp = "SEND /topic/room.{room}"
body = "hello from {user}"
think = "10ms"
[[step]]
name = "page"
http = "GET /room/{room}"
expect_status = 200
expect_body = "chat"

# A user done early stays connected while the others finish, so each message is
# due at all four users of its room (users do not wait for each other otherwise).
[[teardown]]
name = "linger"
http = "GET /room/{room}"
think = "500ms"
[[teardown]]
name = "disconnect"
stomp = "DISCONNECT"
"#;

#[test]
fn stomp_chat_every_message_reaches_every_subscriber_of_its_room() {
    let addr = stomp_backend_addr("chat");
    let report = common::run(scenario_plan(addr, CHAT, 12, 5));
    let step = &report.steps[0];
    for (name, n) in [
        ("open", 12),
        ("connect", 12),
        ("subscribe", 12),
        ("say", 60),
        ("page", 60),
        ("linger", 12),
        ("disconnect", 12),
    ] {
        assert_eq!(
            label(&report, name),
            (n, 0),
            "{name}: {:?}",
            step.labels[name].error_kinds
        );
    }
    let d = step
        .delivery
        .as_ref()
        .expect("a STOMP scenario reports deliveries");
    // 12 users in 3 rooms: each of the 60 messages is due at the 4 users of its room.
    assert_eq!((d.messages, d.expected), (60, 240));
    assert_eq!((d.delivered, d.lost, d.unexpected), (240, 0, 0));
    assert_eq!(
        d.delivered,
        stats_field(addr, "stomp_messages="),
        "the broker's own count"
    );
    assert!(d.latency.max_ms > 0.0 && d.latency.p50_ms <= d.latency.max_ms);
}

#[test]
fn a_message_sent_where_nobody_listens_is_due_nowhere() {
    let addr = stomp_backend_addr("quiet");
    // Users subscribe to their room but speak where nobody listens: no copy is due,
    // none is sent by the broker, and none is counted lost.
    let text = r#"
rooms = 3
[[setup]]
ws = "/chat"
[[setup]]
stomp = "CONNECT"
[[setup]]
stomp = "SUBSCRIBE /topic/room.{room}"
think = "300ms"
[[step]]
name = "say"
stomp = "SEND /topic/other.{room}"
body = "nobody hears {user}"
"#;
    let report = common::run(scenario_plan(addr, text, 3, 4));
    let d = report.steps[0].delivery.as_ref().unwrap();
    assert_eq!((d.messages, d.expected, d.delivered, d.lost), (12, 0, 0, 0));
    assert_eq!(stats_field(addr, "stomp_messages="), 0);
}

#[test]
fn http_checks_fail_samples_that_do_not_match() {
    let addr = common::backend_addr("shop");
    let text = r#"
[[step]]
name = "home"
http = "GET /"
expect_body = "shop"
[[step]]
name = "wrong-status"
http = "GET /"
expect_status = [404, 410]
[[step]]
name = "wrong-body"
http = "GET /status/201"
expect_body = "welcome"
[[step]]
name = "post"
http = "POST /upload"
body = "user={user}"
headers = ["Content-Type: text/plain"]
"#;
    let report = common::run(scenario_plan(addr, text, 3, 4));
    assert_eq!(label(&report, "home"), (12, 0));
    assert_eq!(label(&report, "post"), (12, 0));
    assert_eq!(label(&report, "wrong-status"), (12, 12));
    assert_eq!(label(&report, "wrong-body"), (12, 12));
    let kinds = &report.steps[0].summary.error_kinds;
    assert_eq!(kinds["check: status 200"], 12);
    assert_eq!(kinds["check: body lacks \"welcome\""], 12);
    assert!(report.steps[0].delivery.is_none());
    assert_eq!(answered(addr), 48);
}

#[test]
fn websocket_steps_send_and_expect() {
    let addr = common::backend_addr("echo");
    let text = r#"
[[setup]]
name = "open"
ws = "/echo"
[[step]]
name = "send"
ws_send = "ping {user}"
[[step]]
name = "expect"
ws_expect = "ping {user}"
[[teardown]]
name = "never"
ws_expect = "no such thing"
timeout = "200ms"
[[teardown]]
name = "close"
ws_close = true
"#;
    let report = common::run(scenario_plan(addr, text, 4, 3));
    assert_eq!(label(&report, "open"), (4, 0));
    assert_eq!(label(&report, "send"), (12, 0));
    assert_eq!(label(&report, "expect"), (12, 0));
    assert_eq!(label(&report, "never"), (4, 4));
    assert_eq!(label(&report, "close"), (4, 0));
    let never = &report.steps[0].labels["never"];
    assert_eq!(never.error_kinds["timeout"], 4);
    assert!(never.latency.min_ms >= 199.0, "{:?}", never.latency);
}

#[test]
fn a_websocket_step_without_a_websocket_is_an_error_not_a_panic() {
    let addr = common::backend_addr("nows");
    let text = "[[step]]\nname = \"send\"\nws_send = \"x\"\n";
    let report = common::run(scenario_plan(addr, text, 2, 2));
    assert_eq!(label(&report, "send"), (4, 4));
    let kinds = &report.steps[0].labels["send"].error_kinds;
    assert_eq!(kinds["no websocket open (a ws step comes first)"], 4);
}
