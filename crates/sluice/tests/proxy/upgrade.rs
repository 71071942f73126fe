//! Binary upgrades (`sluice upgrade`, SIGUSR2, `serve --upgrade`): a new process takes
//! the running one's listening sockets over while `sluice bench` loads it, and not one
//! request fails; the old processes drain and exit; a new process that fails leaves the
//! old one serving; a slow request in flight on the old one completes.

use super::harness::*;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// What the processes log: the upgrade's lines besides the listeners'.
const LOG: &str = "warn,sluice::serve=info,sluice::upgrade=info";

fn sluice() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.env("SLUICE_LOG", "warn").env("NO_COLOR", "1");
    c
}

/// A process the test did not start itself (a running sluice's successor), killed when
/// the test ends.
struct Successor(u32);

impl Drop for Successor {
    fn drop(&mut self) {
        if !exited(self.0) {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
}

/// The config: a listener on any port with `listener` keys, `workers`, and `server`.
fn config(workers: usize, listener: &str, server: std::net::SocketAddr) -> String {
    format!(
        "workers = {workers}\nshutdown_grace = \"10s\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n{listener}\n{}",
        one_upstream(&[server], "")
    )
}

/// `sluice upgrade -c` for the process `old` (its TMPDIR holds the pid file).
fn upgrade(old: &SluiceProcess) -> Output {
    sluice()
        .args(["upgrade", "-c"])
        .arg(&old.config)
        .env("TMPDIR", &old.dir.0)
        .output()
        .unwrap()
}

/// The new pid a successful `sluice upgrade` names ("pid NEW (...) serves").
fn upgraded_to(out: &Output) -> u32 {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let words: Vec<&str> = stdout.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "pid").expect("a pid");
    words[at + 1].parse().unwrap()
}

/// Whether the process `pid` has exited (gone, or a zombie its new parent has not
/// reaped: the old ones' successors outlive them).
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z')),
        Err(_) => true,
    }
}

/// Waits until the test's own sluice has exited, successfully.
async fn wait_child(process: &mut SluiceProcess) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = process.child.try_wait().unwrap() {
            return assert!(status.success(), "{status}: {}", process.log());
        }
        assert!(Instant::now() < deadline, "the old sluice still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn wait_exited(pid: u32, within: Duration) {
    let deadline = Instant::now() + within;
    while !exited(pid) {
        assert!(Instant::now() < deadline, "pid {pid} still runs");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The pid the pid file in `dir` names.
fn pid_in(dir: &Path) -> u32 {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "pid"))
        .expect("a pid file");
    std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `sluice bench` on `addr` for 6 s with `flags`, upgraded twice meanwhile to a new
/// process of this binary with another worker count each time (3, then 1: more sockets
/// than the old one handed over, then fewer): no request fails, the old processes exit,
/// the last one serves and its pid is in the pid file.
async fn upgrades_under_load(flags: &[&str], listener: &str) {
    let server = backend("a").await;
    let mut first = SluiceProcess::serve("sluice.toml", &config(2, listener, server), LOG).await;
    let addr = first.addr();
    let json = first.dir.0.join("bench.json");
    let url = format!("http://{addr}/");
    let bench = sluice()
        .args([
            "bench",
            &url,
            "--users",
            "8",
            "--threads",
            "1",
            "-d",
            "6s",
            "-q",
        ])
        .args(flags)
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut olds = vec![first.child.id()];
    let mut successors = Vec::new();
    for (after, workers) in [(1500, 3), (1500, 1)] {
        tokio::time::sleep(Duration::from_millis(after)).await;
        std::fs::write(&first.config, config(workers, listener, server)).unwrap();
        let new = upgraded_to(&upgrade(&first));
        successors.push(Successor(new));
        olds.push(new);
    }
    let out = tokio::task::spawn_blocking(move || bench.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let step = &report["steps"][0];
    let (samples, errors) = (step["samples"].as_u64().unwrap(), step["errors"].as_u64());
    println!("upgrade-report: bench {flags:?} 6 s, 2 upgrades | requests {samples} | failed {errors:?} | kinds {}", step["error_kinds"]);
    assert_eq!(errors, Some(0), "{}", step["error_kinds"]);
    assert!(samples > 100, "{samples} requests");
    let last = olds.pop().unwrap();
    wait_child(&mut first).await;
    for old in olds {
        wait_exited(old, Duration::from_secs(15)).await;
    }
    assert!(!exited(last));
    assert_eq!(pid_in(&first.dir.0), last);
    assert_eq!(get(addr, "/").await.status, 200);
    let log = first.log();
    assert_eq!(
        log.matches("sluice is serving workers=3").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("sluice is serving workers=1").count(),
        1,
        "{log}"
    );
    drop(successors);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_upgrades_under_keep_alive_load_fail_no_request() {
    upgrades_under_load(&[], "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_upgrades_under_load_with_a_connection_per_request_fail_no_request() {
    upgrades_under_load(&["--no-keepalive"], "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_upgrades_under_http2_load_fail_no_request() {
    upgrades_under_load(&["--h2", "--streams", "4"], "http2 = true").await;
}

/// A config the new process refuses is refused before the running one is asked; one it
/// accepts but cannot serve (a new listener's port is taken) fails after the sockets
/// were handed over: either way the old one keeps serving, with its pid file, and a
/// later upgrade works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_upgrade_leaves_the_old_one_serving() {
    let server = backend("a").await;
    let good = config(1, "", server);
    let mut old = SluiceProcess::serve("sluice.toml", &good, LOG).await;
    let (addr, pid) = (old.addr(), old.child.id());
    std::fs::write(&old.config, format!("{good}retrys = 2\n")).unwrap();
    let out = upgrade(&old);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown key `retrys`"), "{stderr}");
    assert!(
        stderr.contains("the running sluice keeps serving"),
        "{stderr}"
    );

    // `serve --upgrade` with no sluice to take over from (another TMPDIR, another pid
    // file) says so, and binds nothing.
    std::fs::write(&old.config, &good).unwrap();
    let elsewhere = TempDir::new("elsewhere");
    let out = sluice()
        .args(["serve", "--upgrade", "-c"])
        .arg(&old.config)
        .env("TMPDIR", &elsewhere.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--upgrade: no running sluice for this config answers on"),
        "{stderr}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap();
    let second = format!("[[listener]]\nbind = \"{busy}\"\n");
    std::fs::write(&old.config, format!("{good}{second}")).unwrap();
    let out = upgrade(&old);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("upgrade failed: the new process"),
        "{stderr}"
    );
    assert!(stderr.contains("keeps serving"), "{stderr}");
    assert!(old.log().contains("already in use"), "{}", old.log());
    assert!(old.log().contains("still serving"), "{}", old.log());
    assert_eq!(get(addr, "/").await.status, 200);
    assert_eq!(pid_in(&old.dir.0), pid);
    assert!(old.child.try_wait().unwrap().is_none());

    std::fs::write(&old.config, &good).unwrap();
    let new = Successor(upgraded_to(&upgrade(&old)));
    wait_child(&mut old).await;
    assert_eq!(get(addr, "/").await.status, 200);
    assert_eq!(pid_in(&old.dir.0), new.0);
}

/// SIGUSR2, nginx's signal: the running sluice starts the binary it was started from;
/// a slow request it was serving completes, and only then does it exit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigusr2_upgrades_and_a_slow_request_in_flight_completes() {
    let server = backend("a").await;
    let mut old = SluiceProcess::serve("sluice.toml", &config(1, "", server), LOG).await;
    let (addr, pid) = (old.addr(), old.child.id());
    let slow = tokio::spawn(async move { get(addr, "/delay?ms=2500").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    old.signal("USR2");
    let deadline = Instant::now() + Duration::from_secs(20);
    while pid_in(&old.dir.0) == pid {
        assert!(Instant::now() < deadline, "no upgrade: {}", old.log());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let new = Successor(pid_in(&old.dir.0));
    // Served by the new process while the old one drains.
    assert_eq!(get(addr, "/").await.status, 200);
    assert!(
        old.child.try_wait().unwrap().is_none(),
        "exited with a request in flight"
    );
    let reply = slow.await.unwrap();
    assert_eq!((reply.status, reply.text().as_str()), (200, "a\n"));
    wait_child(&mut old).await;
    assert!(!exited(new.0));
    assert!(
        old.log().contains("upgraded: the new process serves"),
        "{}",
        old.log()
    );
}
