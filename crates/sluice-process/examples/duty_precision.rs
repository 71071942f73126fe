//! How closely the lab's user-space CPU budget (`cpu_duty`) holds a share, against a
//! cgroup quota on the same machine: busy loops (one, or two in one process tree) held
//! to 0.25, 0.5 and 1 CPU for `SECS` seconds each (default 10), the CPU they used
//! measured from /proc, and the budget thread's own CPU. Without root the cgroup rows
//! are skipped. Run by `bench/duty.sh`; prints a Markdown table.

use sluice_process::cpu_budget::CpuBudget;
use sluice_process::cpu_duty::DutyBudget;
use sluice_process::procfs;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// `loops` busy loops in one process tree: a shell whose children spin.
fn spin(loops: usize, procs_file: Option<&std::path::Path>) -> Child {
    let join = procs_file.map_or(String::new(), |f| format!("echo $$ > {}; ", f.display()));
    let body = "while :; do :; done";
    let script = format!("{join}for i in $(seq {loops}); do sh -c '{body}' & done; wait");
    Command::new("sh").args(["-c", &script]).spawn().unwrap()
}

fn stop(mut child: Child) {
    for pid in procfs::tree(child.id()).into_iter().rev() {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let _ = child.wait();
}

/// CPU share the tree of `root` used over `secs`, after a second to settle.
fn share(root: u32, secs: u64) -> f64 {
    std::thread::sleep(Duration::from_secs(1));
    let before = procfs::tree_cpu_seconds(root);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    (procfs::tree_cpu_seconds(root) - before) / t0.elapsed().as_secs_f64()
}

fn main() {
    let secs: u64 = std::env::var("SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    println!("| budget (CPUs) | busy loops | duty cycle: used | error | its own CPU | cgroup quota: used | error |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for (cpus, loops) in [(0.25, 1), (0.5, 1), (0.5, 2), (1.0, 2)] {
        let child = spin(loops, None);
        let me = procfs::cpu_seconds(std::process::id());
        let budget = DutyBudget::start(child.id(), cpus).unwrap();
        let duty = share(child.id(), secs);
        drop(budget);
        let own = (procfs::cpu_seconds(std::process::id()) - me) / (secs + 1) as f64;
        stop(child);
        let cgroup = match CpuBudget::create(&format!("precision-{loops}"), cpus) {
            Ok(b) => {
                let child = spin(loops, Some(&b.procs_file()));
                let used = share(child.id(), secs);
                stop(child);
                format!("{used:.3} | {:+.1}%", (used / cpus - 1.0) * 100.0)
            }
            Err(_) => "n/a (not root) | ".to_string(),
        };
        println!(
            "| {cpus} | {loops} | {duty:.3} | {:+.1}% | {:.2}% of a core | {cgroup} |",
            (duty / cpus - 1.0) * 100.0,
            own * 100.0
        );
    }
}
