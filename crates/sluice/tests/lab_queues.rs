//! `sluice lab --target` on tiers that publish nothing about what ran out: a WSGI app
//! run by gunicorn with a few sync workers, and a service it calls, listed as a tier by
//! pid. Each is named at its workers from its listen queue (connections waiting to be
//! accepted while its CPU has room), the service before the app that waits on it.
//!
//! A CPU-heavy app given by pid has its on-CPU profile taken by `perf` each step, kept
//! for the verdict's step as collapsed stacks.
//!
//! They need gunicorn (`#[ignore = "needs gunicorn"]`; scripts/test.sh installs
//! Debian's), and run one at a time: each measures on the same two cores.

mod support;

use serde_json::Value;
use std::sync::Mutex;
use support::stacks::{lab_out, Gunicorn};

/// One lab run at a time: they share the machine's CPU.
static MACHINE: Mutex<()> = Mutex::new(());

/// `sluice lab --target URL` with `tiers`, `users` for 3 s: its report, what it printed
/// and where `--out` wrote.
fn lab(target: &str, tiers: &[String], users: &str) -> (Value, String, support::TempDir) {
    let dir = support::TempDir::new("lab-queues");
    let tiers: Vec<&str> = tiers.iter().map(String::as_str).collect();
    let flags = ["--users", users, "-d", "3s", "--warmup", "1s"];
    let (report, stdout) = lab_out(target, &tiers, &flags, &dir.0);
    (report, stdout, dir)
}

#[test]
#[ignore = "needs gunicorn"]
fn a_wsgi_apps_sync_workers_are_named_from_its_listen_queue() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // Two sync workers, 15 ms a request on no CPU: 16 users leave 14 connections
    // waiting to be accepted, while the app's CPU idles.
    let app = Gunicorn::start(2, &[]);
    let tier = format!("app={}", app.child.id());
    let (report, stdout, _) = lab(&app.url(), &[tier], "16");
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"app".into(), &"workers".into()),
        "{stdout}"
    );
    let evidence = v["evidence"].to_string();
    assert!(evidence.contains("listen queue held"), "{evidence}");
    assert!(
        v["advice"].as_str().unwrap().contains("gunicorn --workers"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs gunicorn"]
fn a_slow_service_the_app_calls_is_named_before_the_app_waiting_on_it() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // A service serving two at once (20 ms each), called by an app of eight workers:
    // the app's workers all wait on it, and both listen queues fill.
    let service = Gunicorn::start(2, &[("SLEEP_MS", "20")]);
    let app = Gunicorn::start(8, &[("SLEEP_MS", "0"), ("DEPENDENCY", &service.url())]);
    let tiers = [
        format!("app={}", app.child.id()),
        format!("payments={}", service.child.id()),
    ];
    let (report, stdout, _) = lab(&app.url(), &tiers, "16");
    let v = &report["verdict"];
    assert_eq!(
        (&v["tier"], &v["resource"]),
        (&"payments".into(), &"workers".into()),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs gunicorn and perf"]
fn a_native_apps_on_cpu_profile_is_taken_by_perf_and_kept_for_the_verdicts_step() {
    let _one = MACHINE.lock().unwrap_or_else(|e| e.into_inner());
    // Two sync workers hashing 3,000 times a request and waiting on nothing: their CPU.
    let app = Gunicorn::start(2, &[("SLEEP_MS", "0"), ("BURN", "3000")]);
    let tier = format!("app={}", app.child.id());
    let (report, stdout, dir) = lab(&app.url(), &[tier], "4");
    let steps = report["configurations"][0]["steps"].as_array().unwrap();
    let profile = &steps.last().unwrap()["on_cpu"][0];
    // The master and its workers as one process tree, sampled at 49 Hz for 3 s while
    // its workers are on CPU.
    assert!(profile["samples"].as_u64().unwrap() >= 20, "{profile}");
    assert!(
        !profile["top_frames"].as_array().unwrap().is_empty(),
        "{profile}"
    );
    assert!(stdout.contains("on CPU at 4 users (perf"), "{stdout}");
    let pid = app.child.id();
    let folded =
        std::fs::read_to_string(dir.0.join(format!("profiles/app-pid-{pid}.cpu.folded"))).unwrap();
    let samples: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(samples, profile["samples"].as_u64().unwrap(), "{folded}");
    assert_eq!(report["profiles"][0]["kind"], "cpu", "{stdout}");
}
