//! `sluice lab --target URL --servers 1,2,3 --haproxy-socket PATH` on servers the lab did
//! not start: three `sluice backend` processes behind a real HAProxy whose runtime API is
//! a unix socket. The lab drains the backend's servers with `set server ... state drain`
//! for each count, and every server is ready again after the run and after Ctrl-C.
//! (Its own file: lab_servers.rs is the sluice admin API's.)

mod support;

use serde_json::Value;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process killed at the end of the test.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Three app servers behind HAProxy's backend `app`, its runtime API at `socket`.
struct Stack {
    apps: Vec<Running>,
    _haproxy: Running,
    port: u16,
    socket: PathBuf,
    _dir: support::TempDir,
}

impl Stack {
    fn start() -> Stack {
        let mut apps = Vec::new();
        let mut servers = String::new();
        for i in 1..=3 {
            let port = support::free_port();
            let listen = format!("127.0.0.1:{port}");
            let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
                .args(["backend", "--listen", &listen, "--cpu", "1ms"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            apps.push(Running(child));
            support::wait_listening(port);
            servers.push_str(&format!("  server s{i} {listen}\n"));
        }
        // A backup (of the first app's address): it serves only when the others are
        // down, so the lab never counts it in service.
        let first = servers
            .split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .to_string();
        servers.push_str(&format!("  server s4 {first} backup\n"));
        let dir = support::TempDir::new("lab-haproxy");
        let socket = dir.0.join("admin.sock");
        let port = support::free_port();
        let config = dir.file(
            "haproxy.cfg",
            &format!(
                "global\n  stats socket {} level admin\n\
                 defaults\n  mode http\n  timeout connect 2s\n  timeout client 10s\n  timeout server 10s\n\
                 frontend web\n  bind 127.0.0.1:{port}\n  default_backend app\n\
                 backend app\n{servers}",
                socket.display()
            ),
        );
        // -db: in the foreground, so that the test's kill ends it.
        let haproxy = Command::new(support::tool("haproxy"))
            .args(["-db", "-f", config.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        support::wait_listening(port);
        Stack {
            apps,
            _haproxy: Running(haproxy),
            port,
            socket,
            _dir: dir,
        }
    }

    fn lab(&self, extra: &[&str]) -> Command {
        let mut lab = Command::new(env!("CARGO_BIN_EXE_sluice"));
        let pids: Vec<String> = self.apps.iter().map(|a| a.0.id().to_string()).collect();
        lab.args([
            "lab",
            "--target",
            &format!("http://127.0.0.1:{}/", self.port),
        ])
        .args(["--haproxy-socket", self.socket.to_str().unwrap()])
        .args(["--tier", &format!("app={}", pids.join(","))])
        .args(["--warmup", "0s"])
        .args(extra);
        lab
    }

    /// One runtime API command, its answer.
    fn command(&self, line: &str) -> String {
        let mut stream = UnixStream::connect(&self.socket).unwrap();
        stream.write_all(format!("{line}\n").as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    /// Each server's `srv_admin_state`, read with `show servers state app`.
    fn admin_states(&self) -> Vec<u32> {
        self.command("show servers state app")
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().nth(6).unwrap().parse().unwrap())
            .collect()
    }

    /// Servers drained (admin state bit 0x08).
    fn drained(&self) -> usize {
        let states = self.admin_states();
        states.iter().filter(|&&s| s & 0x08 != 0).count()
    }

    fn wait_drained(&self, n: usize, within: Duration) {
        let start = Instant::now();
        while self.drained() != n {
            assert!(start.elapsed() < within, "{:?}", self.admin_states());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
#[ignore = "needs haproxy"]
fn the_scale_out_runs_behind_haproxy_and_leaves_every_server_ready() {
    let stack = Stack::start();
    assert_eq!(stack.admin_states(), [0, 0, 0, 0]);
    let dir = support::TempDir::new("lab-haproxy-json");
    let json = dir.0.join("report.json");
    let out = stack
        .lab(&["--servers", "1,2,3", "--users", "4", "-d", "1s", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Before the run: how to undo the drains by hand, should the lab be killed.
    let by_hand = format!(
        "echo \"set server app/s3 state ready\" | socat stdio UNIX:{}",
        stack.socket.display()
    );
    assert!(stderr.contains(&by_hand), "{stderr}");
    assert!(
        !stderr.contains("app/s4"),
        "the backup is never drained: {stderr}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let configurations = report["configurations"].as_array().unwrap();
    let servers: Vec<u64> = configurations
        .iter()
        .map(|c| c["servers"].as_u64().unwrap())
        .collect();
    assert_eq!(servers, [1, 2, 3], "{stdout}");
    for c in configurations {
        let step = &c["steps"][0];
        assert!(step["requests"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(step["error_pct"].as_f64().unwrap(), 0.0, "{c}");
    }
    assert_eq!(stack.admin_states(), [0, 0, 0, 0]);
}

#[test]
#[ignore = "needs haproxy"]
fn ctrl_c_puts_haproxys_servers_back_ready() {
    let stack = Stack::start();
    let lab = Running(
        stack
            .lab(&["--servers", "1,3", "--users", "2", "-d", "20s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    stack.wait_drained(2, Duration::from_secs(10));
    let pid = lab.0.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    stack.wait_drained(0, Duration::from_secs(5));
    assert_eq!(stack.admin_states(), [0, 0, 0, 0]);
}

#[test]
#[ignore = "needs haproxy"]
fn a_change_by_someone_else_behind_haproxy_stops_the_run() {
    let stack = Stack::start();
    let dir = support::TempDir::new("lab-haproxy-changed");
    let json = dir.0.join("report.json");
    // Bounded on its own: two configurations of one 6 s step.
    let lab = stack
        .lab(&["--servers", "1,3", "--users", "2", "-d", "6s", "--json"])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    stack.wait_drained(2, Duration::from_secs(10));
    // An operator puts s3 in maintenance in the middle of the run.
    assert_eq!(stack.command("set server app/s3 state maint").trim(), "");
    let out = lab.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("changed by someone else"), "{warnings}");
    assert!(warnings.contains("s3's admin state"), "{warnings}");
    assert!(
        warnings.contains("app/s3 was put in maintenance"),
        "{warnings}"
    );
    assert_eq!(report["configurations"].as_array().unwrap().len(), 1);
    // The lab's other drain is undone; the operator's maintenance is left (its drain
    // too: HAProxy's `state ready` would end both).
    let states = stack.admin_states();
    assert_eq!(states[1], 0, "{states:?}");
    assert_eq!(states[2] & 0x01, 0x01, "{states:?}");
}
