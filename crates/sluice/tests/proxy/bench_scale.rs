//! `sluice bench` at scale: 10,000 users from one generator process, against a lab
//! backend in a process of its own, every request and connection accounted for.

use super::harness::{backend_stats, SluiceProcess};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_users_from_one_generator() {
    let backend = SluiceProcess::backend("scale", "127.0.0.1:0".parse().unwrap()).await;
    let addr = backend.addrs[0];
    let json = backend.dir.0.join("scale.json");
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["bench", &format!("http://{addr}/"), "--users", "10000"])
        .args(["--iterations", "3", "--think", "1s", "--ramp", "2s"])
        .args(["--timeout", "30s", "-q", "--json"])
        .arg(&json)
        .env("SLUICE_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = started + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end by itself within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    assert!(status.success(), "{status}: {stdout}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let step = &report["steps"][0];
    assert_eq!(step["errors"], 0, "{:?}", step["error_kinds"]);
    assert_eq!(step["samples"], 30_000);
    // Each user held one keep-alive connection; the backend answered every sample.
    let (connections, requests) = backend_stats(addr).await;
    assert_eq!((connections, requests), (10_000 + 1, 30_000 + 1));
    let generator = &step["generator"];
    let per_user = generator["kib_per_user"]
        .as_f64()
        .expect("memory per user reported");
    println!(
        "10,000 users x 3 requests in {:.1} s; generator peak RSS {} KiB, {per_user} KiB per user\n{stdout}",
        started.elapsed().as_secs_f64(),
        generator["rss_peak_kib"]
    );
}
