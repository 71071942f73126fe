//! A CPU budget holds a busy process to its quota, and the kernel's counters say it was
//! throttled. Needs root and the cgroup v1 cpu controller, as these machines have; the
//! test fails, saying why, where they are missing.

use sluice_process::cpu_budget::CpuBudget;
use std::time::{Duration, Instant};

/// CPU seconds (user + system) of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

#[test]
#[ignore = "needs root (cgroup v1 cpu controller)"]
fn a_busy_process_gets_its_quota_and_no_more() {
    let budget = CpuBudget::create("test-busy", 0.25).expect("a CPU budget (root, cgroup v1)");
    let mut child = std::process::Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    budget.add(child.id()).unwrap();
    // What a sampler finds from the pid alone, as for a process it did not start.
    let found = sluice_process::cpu_budget::quota_of(child.id()).expect("its quota");
    assert_eq!(
        (found.cores, found.method),
        (0.25, sluice_process::cpu_budget::V1)
    );
    let (start_cpu, started) = (cpu_seconds(child.id()), Instant::now());
    std::thread::sleep(Duration::from_millis(1500));
    let used = cpu_seconds(child.id()) - start_cpu;
    let wall = started.elapsed().as_secs_f64();
    let throttling = budget.throttling();
    let _ = child.kill();
    let _ = child.wait();
    // A quarter of a CPU: about 0.25 s of CPU per second (ticks are 10 ms).
    let share = used / wall;
    assert!(
        (0.15..=0.35).contains(&share),
        "used {used:.2} s of CPU in {wall:.2} s"
    );
    assert!(throttling.throttled > 5, "{throttling:?}");
    assert!(throttling.throttled_s > 0.5, "{throttling:?}");
}
