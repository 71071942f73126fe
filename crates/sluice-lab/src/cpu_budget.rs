//! A tier's CPU budget on a shared machine: a cgroup of the v1 `cpu` controller with a
//! CFS quota (`cpu.cfs_quota_us` over `cpu.cfs_period_us`), which is what these machines
//! have (cgroup v2's `cpu.max` where it exists is the same idea). "nginx on one vCPU"
//! then means one CPU-second per second for nginx's whole process tree, however many
//! cores the machine has, and the kernel's throttling counters say when the tier ran
//! into it: the evidence that a tier, not the machine, was saturated.
//!
//! Creating a cgroup needs root; [`CpuBudget::create`] says so plainly when it cannot.

use std::io;
use std::path::{Path, PathBuf};

/// Where the v1 `cpu` controller is mounted.
const CPU_V1: &str = "/sys/fs/cgroup/cpu";
const PERIOD_US: u64 = 100_000;

/// A cgroup limiting its processes to `cpus` CPUs; removed when dropped (its processes
/// move back to the root group first).
#[derive(Debug)]
pub struct CpuBudget {
    dir: PathBuf,
    pub cpus: f64,
}

/// The kernel's throttling counters of a budget.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Throttling {
    /// Periods in which the group ran.
    pub periods: u64,
    /// Periods in which it used its whole quota and was stopped.
    pub throttled: u64,
    /// Time its processes were stopped for, in seconds.
    pub throttled_s: f64,
}

impl CpuBudget {
    /// A new cgroup named `name` (unique per process) with a quota of `cpus` CPUs.
    pub fn create(name: &str, cpus: f64) -> io::Result<CpuBudget> {
        if !Path::new(CPU_V1).join("cpu.cfs_quota_us").exists() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("no cgroup v1 cpu controller at {CPU_V1}: CPU budgets need it (or use CPU affinity)"),
            ));
        }
        if !cpus.is_finite() || cpus <= 0.0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a CPU budget must be above 0",
            ));
        }
        let dir = Path::new(CPU_V1).join(format!("sluice-lab-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "creating the cgroup {} (CPU budgets need root): {e}",
                    dir.display()
                ),
            )
        })?;
        let budget = CpuBudget { dir, cpus };
        budget.write("cpu.cfs_period_us", PERIOD_US)?;
        budget.write("cpu.cfs_quota_us", (cpus * PERIOD_US as f64).round() as u64)?;
        Ok(budget)
    }

    fn write(&self, file: &str, value: impl std::fmt::Display) -> io::Result<()> {
        std::fs::write(self.dir.join(file), value.to_string())
    }

    /// Puts process `pid` (and the threads and children it starts later) in the budget.
    pub fn add(&self, pid: u32) -> io::Result<()> {
        self.write("cgroup.procs", pid)
    }

    /// The file a process writes its own pid to in order to join the budget: a tier
    /// started as `sh -c 'echo $$ > FILE; exec TIER'` is inside it before its first
    /// instruction, so the children it forks at once (nginx's workers) are too.
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The kernel's throttling counters now.
    pub fn throttling(&self) -> Throttling {
        throttling_at(&self.dir)
    }
}

/// The throttling counters of the cgroup directory `dir` (zero where unreadable): for a
/// sampler that holds the path and not the budget.
pub fn throttling_at(dir: &Path) -> Throttling {
    let stat = std::fs::read_to_string(dir.join("cpu.stat")).unwrap_or_default();
    let field = |name: &str| {
        stat.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    Throttling {
        periods: field("nr_periods"),
        throttled: field("nr_throttled"),
        throttled_s: field("throttled_time") as f64 / 1e9,
    }
}

impl Drop for CpuBudget {
    fn drop(&mut self) {
        // A cgroup with processes cannot be removed: move them back to the root first.
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write(Path::new(CPU_V1).join("cgroup.procs"), pid);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}
