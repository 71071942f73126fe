//! The admin API from the command line, as a user runs it: `sluice reload` waits for the
//! running sluice's answer (exit 1 with its errors when it refused), `sluice status`
//! prints its servers.

use super::harness::*;
use std::process::Command;

fn free_port() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

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
    let admin = free_port();
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
        table.contains("config generation 2") && table.contains("reloads: 1 applied, 1 refused"),
        "{table}"
    );
    for server in [a, b] {
        assert!(
            table.contains(&format!("app              {server:<23} up")),
            "{table}"
        );
    }
}
