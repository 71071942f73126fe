//! `sluice bench` as a user runs it: the binary, real backends on 127.0.0.1, bad input,
//! thresholds, and an interrupted run that still writes what it measured.

mod support;

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{answered, backend};

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.env("SLUICE_LOG", "warn");
    c
}

/// A directory of the test's own, removed when dropped.
struct Dir(std::path::PathBuf);

impl Dir {
    fn new(label: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("sluice-bench-{label}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn bad_input_gets_a_clear_error_and_exit_code_2() {
    for (args, expected) in [
        (
            vec!["ftp://a/", "--users", "1", "-d", "1s"],
            "not an http:// or https:// URL",
        ),
        (vec!["http://127.0.0.1:1/", "-d", "1s"], "give --users"),
        (
            vec!["http://127.0.0.1:1/", "--users", "1000000", "-d", "1s"],
            "open files",
        ),
        (vec!["http://127.0.0.1:1/", "--users", "1"], "--duration"),
        (
            vec!["http://127.0.0.1:1/", "--users", "1", "-d", "soon"],
            "--duration soon: not a duration",
        ),
        (
            vec!["http://127.0.0.1:1/", "--rate", "0", "-d", "1s"],
            "above 0",
        ),
        (
            vec!["http://127.0.0.1:1/", "--rate", "5", "--iterations", "3"],
            "--iterations is for --users",
        ),
        (
            vec![
                "http://127.0.0.1:1/",
                "--users",
                "1",
                "-d",
                "1s",
                "--fail-if",
                "p99=3",
            ],
            "--fail-if 'p99=3'",
        ),
        (
            vec![
                "http://127.0.0.1:1/",
                "--users",
                "1",
                "-d",
                "1s",
                "-H",
                "NoColon",
            ],
            "bad header",
        ),
        (
            vec!["http://127.0.0.1:1/@x", "--users", "1", "-d", "1s"],
            "not a whole number",
        ),
    ] {
        let out = sluice().arg("bench").args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// Every problem of a command line is told at once, each on a line of its own, so that
/// one run finds them all.
#[test]
fn every_problem_of_the_arguments_is_told_at_once() {
    let args = [
        "bench",
        "https://127.0.0.1:1/",
        "--users",
        "0",
        "-d",
        "1s",
        "--timeout",
        "soon",
        "--ok-status",
        "399-200",
        "--resolve",
        "shop.test",
        "--tls-version",
        "1.1",
        "--cacert",
        "/no/such/ca.pem",
        "--fail-if",
        "p99=3",
    ];
    let out = sluice().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for expected in [
        "--fail-if 'p99=3'",
        "bad --resolve `shop.test`",
        "--timeout soon: not a duration",
        "--ok-status: `399-200` is an empty range",
        "--users: every step needs at least one user",
        "--tls-version: `1.1`",
    ] {
        let line = stderr.lines().find(|l| l.contains(expected));
        assert!(
            line.is_some_and(|l| l.starts_with("sluice bench: ")),
            "{expected}: {stderr}"
        );
    }
    // The CA file is read once the TLS options parse: alone, it is told too.
    let out = sluice()
        .args(["bench", "https://127.0.0.1:1/", "--users", "1", "-d", "1s"])
        .args(["--cacert", "/no/such/ca.pem", "--timeout", "soon"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--cacert /no/such/ca.pem"), "{stderr}");
    assert!(stderr.contains("--timeout soon"), "{stderr}");
}

#[test]
fn an_unreachable_target_is_counted_as_errors_not_a_crash() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = Dir::new("refused");
    let json = dir.0.join("r.json");
    let out = sluice()
        .args([
            "bench",
            &format!("http://{closed}/"),
            "--users",
            "2",
            "--iterations",
            "5",
            "-q",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let step = &report["steps"][0];
    assert_eq!(step["samples"], 10);
    assert_eq!(step["errors"], 10);
    assert_eq!(step["error_pct"], 100.0);
    let kinds = step["error_kinds"].as_object().unwrap();
    assert!(kinds.keys().any(|k| k.contains("connect")), "{kinds:?}");
}

#[test]
fn thresholds_fail_the_run_with_exit_code_3_and_name_themselves() {
    let addr = backend();
    let out = sluice()
        .args([
            "bench",
            &format!("http://{addr}/"),
            "--users",
            "2",
            "--iterations",
            "20",
            "-q",
        ])
        .args(["--fail-if", "throughput<1000000", "--fail-if", "errors>1%"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("threshold crossed: 2 users: throughput<1000000"),
        "{stderr}"
    );
    assert!(!stderr.contains("errors>1%"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("2 users") && stdout.contains("samples"),
        "{stdout}"
    );
}

/// Runs `sluice bench` with `args`, interrupts it (SIGINT) after `after`, and returns
/// its exit status and output, once it is asserted to have stopped within 5 s.
fn interrupted(args: &[&str], after: Duration) -> (std::process::ExitStatus, String) {
    let mut child = sluice()
        .arg("bench")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(after);
    let interrupted_at = Instant::now();
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = child.wait().unwrap();
    assert!(
        interrupted_at.elapsed() < Duration::from_secs(5),
        "slow to stop"
    );
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    (status, stdout)
}

#[test]
fn an_interrupted_run_writes_what_it_measured() {
    let addr = backend();
    let dir = Dir::new("interrupt");
    let json = dir.0.join("partial.json");
    let url = format!("http://{addr}/");
    let args = [&url, "--rate", "200", "-d", "60s", "-q", "--json"];
    let json_arg = json.to_str().unwrap();
    let args: Vec<&str> = args.iter().copied().chain([json_arg]).collect();
    let (status, stdout) = interrupted(&args, Duration::from_millis(1500));
    assert_eq!(status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("interrupted"), "{stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["interrupted"], true);
    let samples = report["steps"][0]["samples"].as_u64().unwrap();
    assert!(
        (200..=400).contains(&samples),
        "{samples} samples in about 1.5 s at 200/s"
    );
}

/// The open model with every request still waiting for a server that never answers
/// stops at once too: what is in flight is abandoned, not waited for.
#[test]
fn an_interrupted_run_stops_with_requests_in_flight() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", silent.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        // Accepted and held open, never read from: at most the run's connections.
        silent.incoming().take(64).collect::<Vec<_>>()
    });
    let args = [&url, "--rate", "100", "-d", "60s", "-q", "--timeout", "60s"];
    let (status, stdout) = interrupted(&args, Duration::from_millis(1500));
    assert_eq!(status.code(), Some(130), "{stdout}");
    assert!(stdout.contains("interrupted"), "{stdout}");
    drop(held);
}

#[test]
fn generators_that_ran_together_merge_into_one_result() {
    let addr = backend();
    let dir = Dir::new("merge");
    let url = format!("http://{addr}/");
    let runs: Vec<_> = ["a", "b"]
        .iter()
        .map(|name| {
            sluice()
                .args(["bench", &url, "--rate", "300", "-d", "1s", "-q"])
                .arg("--json")
                .arg(dir.0.join(format!("{name}.json")))
                .arg("--hdr-log")
                .arg(dir.0.join(format!("{name}.hlog")))
                .stdout(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut run in runs {
        assert!(run.wait().unwrap().success());
    }
    let merged = dir.0.join("merged.json");
    let out = sluice()
        .args(["bench", "merge"])
        .arg(dir.0.join("a.json"))
        .arg(dir.0.join("b.json"))
        .arg("--json")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let step = &report["steps"][0];
    assert_eq!(step["samples"].as_u64().unwrap(), answered(addr));
    assert_eq!(step["samples"], 600);
    assert_eq!(step["rate"], 600.0);
    let log = std::fs::read_to_string(dir.0.join("a.hlog")).unwrap();
    assert!(
        log.contains("#[StartTime:") && log.contains("Tag=step-1"),
        "{log}"
    );
    // Results of different plans, or not results at all, are refused.
    let bad = dir.0.join("bad.json");
    std::fs::write(&bad, "{\"steps\": 3}").unwrap();
    let out = sluice()
        .args(["bench", "merge"])
        .arg(&bad)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.json:1:") && stderr.contains("not a sluice bench result"),
        "{stderr}"
    );
}

#[test]
fn plan_works_out_seed_004_and_its_bench_commands_run() {
    let addr = backend();
    let out = sluice()
        .args(["plan", "--dau", "50000", "--requests-per-user", "300"])
        .args([
            "--active-hours",
            "6",
            "--peak-factor",
            "3",
            "--response-time",
            "250ms",
        ])
        .args(["--target", &format!("http://{addr}/")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    for expected in [
        "= 15000000",
        "= 694.4 req/s",
        "= 2083.3 req/s",
        "521 users (Little's law)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // The printed commands are real: run each for a moment (a little load, loopback).
    let commands: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("sluice "))
        .collect();
    assert_eq!(commands.len(), 3, "{text}");
    assert!(text.contains("--users 131,261,521,782"), "{text}");
    let me = std::process::id().to_string();
    for command in commands {
        // The lab's tiers are this process: the backend runs in it.
        let shortened = command
            .replace("-d 60s", "-d 1s")
            .replace("--rate 694,2084", "--rate 50,100")
            .replace("--users 131,261,521,782", "--users 2 --warmup 0s")
            .replace("--users 521", "--users 5")
            .replace("LB_PID", &me)
            .replace("APP_PID", &me);
        let args: Vec<String> = shortened
            .split_whitespace()
            .map(|a| a.trim_matches('\'').to_string())
            .collect();
        let quiet = if args[0] == "bench" {
            "-q"
        } else {
            "--no-prove"
        };
        let run = sluice().args(&args).arg(quiet).output().unwrap();
        // 0: passed, 3: a threshold crossed (5 users cannot reach 2,084 req/s); never 2.
        assert!(
            matches!(run.status.code(), Some(0) | Some(3)),
            "{shortened}: {run:?}"
        );
    }
}
