//! The admin API from the command line, as a user runs it: `sluice reload` waits for the
//! running sluice's answer (exit 1 with its errors when it refused), `sluice status`
//! prints its servers.

use super::harness::*;
use std::process::Command;

fn sluice(args: &[&str], config: &std::path::Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(args)
        .arg("-c")
        .arg(config)
        .env("SLUICE_LOG", "warn")
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_waits_for_the_answer_and_status_shows_the_servers() {
    let (a, b) = (backend("a").await, backend("b").await);
    let admin = crate::support::free_addr();
    let config = |servers: &str, extra: &str| {
        format!("[admin]\nbind = \"{admin}\"\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{servers}]\n{extra}")
    };
    let child = SluiceProcess::serve("sluice.toml", &config(&format!("\"{a}\""), ""), "warn").await;
    get(child.addr(), "/").await;
    let path = child.config.clone();
    std::fs::write(&path, config(&format!("\"{a}\", \"{b}\""), "")).unwrap();
    let ok = sluice(&["reload"], &path);
    let said = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{ok:?}");
    assert_eq!(said.trim(), "reloaded: 1 server added");
    // What changed besides servers is said too, and a reload of the same file says so.
    let both = format!("\"{a}\", \"{b}\"");
    let said = |extra: &str| {
        std::fs::write(&path, config(&both, extra)).unwrap();
        let out = sluice(&["reload"], &path);
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let routed = "balance = \"least_conn\"\n[[route]]\npath = \"/up\"\nreturn = 204\n";
    assert_eq!(
        said(routed),
        "reloaded: 1 route changed, 1 upstream changed"
    );
    assert_eq!(said(routed), "reloaded: nothing changed");
    let timed = format!("header_timeout = \"5s\"\n{}", config(&both, routed));
    std::fs::write(&path, timed).unwrap();
    let out = sluice(&["reload"], &path);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "reloaded: settings changed"
    );
    std::fs::write(&path, config(&both, "")).unwrap();
    sluice(&["reload"], &path);
    // A config that validates here but cannot be applied there (its port is taken).
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = format!("[[listener]]\nbind = \"{}\"\n", taken.local_addr().unwrap());
    std::fs::write(&path, config(&format!("\"{a}\", \"{b}\""), "") + &busy).unwrap();
    let refused = sluice(&["reload"], &path);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        err.contains("refused the reload") && err.contains("is already in use"),
        "{err}"
    );
    let status = sluice(&["status"], &path);
    let table = String::from_utf8_lossy(&status.stdout);
    assert!(status.status.success(), "{status:?}");
    assert!(
        table.contains("config generation 6") && table.contains("reloads: 5 applied, 1 refused"),
        "{table}"
    );
    // Columns as wide as their widest cell, two spaces apart.
    let width = a.to_string().len().max(b.to_string().len());
    for server in [a, b] {
        assert!(
            table.contains(&format!("app       {server:<width$}  up")),
            "{table}"
        );
    }
    // Numbers fill their columns: the weight (1) ends where its header ends.
    let header = table.lines().find(|l| l.starts_with("upstream")).unwrap();
    let row = table.lines().find(|l| l.contains(&a.to_string())).unwrap();
    let weight_end = header.find("weight").unwrap() + "weight".len();
    assert_eq!(&row[weight_end - 1..weight_end], "1", "{table}");
}

/// Waits until `log` has a line containing `text` (10 s at most); returns the log.
async fn wait_for_log(log: &std::path::Path, text: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let now = std::fs::read_to_string(log).unwrap_or_default();
        if now.contains(text) {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no {text:?} in the log:\n{now}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_a_person_can_read() {
    let a = backend("a").await;
    let later = crate::support::free_addr();
    let listen = crate::support::free_addr();
    let dir = TempDir::new("logs");
    let config = |servers: &str| {
        format!("[[listener]]\nbind = \"{listen}\"\n[[route]]\nhost = \"app.test\"\nupstream = \"app\"\n[upstream.app]\nservers = [{servers}]\nmax_fails = 1\neject_for = \"1s\"\n")
    };
    let path = dir.file("sluice.toml", &config(&format!("\"{a}\", \"{later}\"")));
    let log = dir.0.join("stderr.log");
    // Not a terminal, and no NO_COLOR: plain text all the same.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["serve", "-c"])
        .arg(&path)
        .env_remove("NO_COLOR")
        .env("SLUICE_LOG", "info")
        .env("TMPDIR", &dir.0)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_for_log(&log, "sluice is serving").await;
    let mut c = Client::connect(listen).await;
    c.send("GET /nothing?x=1 HTTP/1.1\r\nHost: other.test\r\n\r\n")
        .await;
    assert_eq!(c.read_reply().await.unwrap().status, 404);
    wait_for_log(&log, "no route matches host other.test, path /nothing").await;
    // The second server is down: the first request to it ejects it.
    for _ in 0..2 {
        let mut c = Client::connect(listen).await;
        c.send("GET / HTTP/1.1\r\nHost: app.test\r\n\r\n").await;
        assert_eq!(c.read_reply().await.unwrap().status, 200);
    }
    wait_for_log(&log, "server ejected after repeated failures").await;
    // It comes up; once its ejection is over, a request succeeds there: logged too.
    let _up = SluiceProcess::backend("later", later).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    for _ in 0..4 {
        let mut c = Client::connect(listen).await;
        c.send("GET / HTTP/1.1\r\nHost: app.test\r\n\r\n").await;
        assert_eq!(c.read_reply().await.unwrap().status, 200);
    }
    wait_for_log(&log, "server back after its ejection").await;
    std::fs::write(&path, config(&format!("\"{a}\""))).unwrap();
    let reload = Command::new("kill")
        .args(["-HUP", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(reload.success());
    let text = wait_for_log(&log, "1 server removed").await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        text.contains(&format!("reloaded {}: 1 server removed", path.display())),
        "{text}"
    );
    assert!(
        !text.contains('\x1b'),
        "colour codes in a log file:\n{text}"
    );
}
