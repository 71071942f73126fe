//! A tier's CPU budget on a shared machine: a cgroup with a CFS quota, through the v1
//! `cpu` controller (`cpu.cfs_quota_us` over `cpu.cfs_period_us`, what these machines
//! have) or cgroup v2 (`cpu.max`). "nginx on one vCPU" then means one CPU-second per
//! second for nginx's whole process tree, however many cores the machine has, and the
//! kernel's throttling counters say when the tier ran into it: the evidence that a tier,
//! not the machine, was saturated.
//!
//! Creating a cgroup needs root; [`CpuBudget::create`] says so plainly when it cannot.

use std::io;
use std::path::{Path, PathBuf};

/// Where cgroups are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
const PERIOD_US: u64 = 100_000;
/// How a budget is applied, as reports name it.
pub const V1: &str = "cgroup v1 cpu quota";
pub const V2: &str = "cgroup v2 cpu.max";

/// A cgroup limiting its processes to `cpus` CPUs; removed when dropped (its processes
/// move back to the root group first).
#[derive(Debug)]
pub struct CpuBudget {
    dir: PathBuf,
    /// The hierarchy's root group, where processes go back when the budget is dropped.
    root: PathBuf,
    pub cpus: f64,
    /// [`V1`] or [`V2`]: how the budget is applied.
    pub method: &'static str,
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
        CpuBudget::create_in(Path::new(CGROUP_ROOT), name, cpus)
    }

    /// As [`create`](Self::create), under the cgroup mount `mount`: the v1 `cpu`
    /// controller at `mount/cpu`, else cgroup v2 at `mount` with `cpu` among its
    /// controllers.
    pub fn create_in(mount: &Path, name: &str, cpus: f64) -> io::Result<CpuBudget> {
        if !cpus.is_finite() || cpus <= 0.0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a CPU budget must be above 0",
            ));
        }
        let v1 = mount.join("cpu");
        let v2_cpu = std::fs::read_to_string(mount.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "cpu"));
        let (root, method) = if v1.join("cpu.cfs_quota_us").exists() {
            (v1, V1)
        } else if v2_cpu {
            // Children get the cpu controller only when their parent delegates it.
            std::fs::write(mount.join("cgroup.subtree_control"), "+cpu")?;
            (mount.to_path_buf(), V2)
        } else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("no cgroup cpu controller under {} (v1 cpu/ or v2 with cpu): CPU budgets need one", mount.display()),
            ));
        };
        let dir = root.join(format!("sluice-lab-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            let hint = format!(
                "creating the cgroup {} (CPU budgets need root): {e}",
                dir.display()
            );
            io::Error::new(e.kind(), hint)
        })?;
        let budget = CpuBudget {
            dir,
            root,
            cpus,
            method,
        };
        let quota = (cpus * PERIOD_US as f64).round() as u64;
        if method == V1 {
            budget.write("cpu.cfs_period_us", PERIOD_US)?;
            budget.write("cpu.cfs_quota_us", quota)?;
        } else {
            budget.write("cpu.max", format!("{quota} {PERIOD_US}"))?;
        }
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

    /// The cgroup's directory (its `cpu.stat` has the throttling counters).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The kernel's throttling counters now.
    pub fn throttling(&self) -> Throttling {
        throttling_at(&self.dir)
    }
}

/// The CPU quota a process runs under, set by whoever set it.
#[derive(Debug, Clone, PartialEq)]
pub struct Quota {
    pub cores: f64,
    /// The cgroup directory that sets it (its throttling counters are there).
    pub dir: PathBuf,
    /// [`V1`] or [`V2`].
    pub method: &'static str,
}

/// The tightest CPU quota along process `pid`'s cgroup path (v1 `cpu` controller or
/// v2), `None` when nothing limits it.
pub fn quota_of(pid: u32) -> Option<Quota> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let root = Path::new(CGROUP_ROOT);
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, controllers, path) = (f.next()?, f.next()?, f.next()?);
        let v1 = controllers.split(',').any(|c| c == "cpu");
        let base = match (v1, controllers.is_empty()) {
            (true, _) => root.join("cpu"),
            (false, true) => root.to_path_buf(),
            (false, false) => continue,
        };
        let mut dir = base.join(path.trim_start_matches('/'));
        let mut best: Option<(f64, PathBuf)> = None;
        while dir.starts_with(&base) {
            if let Some(q) = quota_at(&dir, v1) {
                if best.as_ref().is_none_or(|(b, _)| q < *b) {
                    best = Some((q, dir.clone()));
                }
            }
            if !dir.pop() {
                break;
            }
        }
        if let Some((cores, dir)) = best {
            let method = if v1 { V1 } else { V2 };
            return Some(Quota { cores, dir, method });
        }
    }
    None
}

/// The quota at one cgroup directory, in cores; `None` when unlimited or unreadable.
fn quota_at(dir: &Path, v1: bool) -> Option<f64> {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let (quota, period) = if v1 {
        (
            read("cpu.cfs_quota_us")?.trim().parse::<i64>().ok()?,
            read("cpu.cfs_period_us")?.trim().parse::<i64>().ok()?,
        )
    } else {
        let max = read("cpu.max")?;
        let mut f = max.split_whitespace();
        (
            f.next()?.parse::<i64>().ok()?,
            f.next()?.parse::<i64>().ok()?,
        )
    };
    (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
}

/// The throttling counters of the cgroup directory `dir` (zero where unreadable): for a
/// sampler that holds the path and not the budget.
pub fn throttling_at(dir: &Path) -> Throttling {
    let stat = std::fs::read_to_string(dir.join("cpu.stat")).unwrap_or_default();
    let field = |name: &str| {
        stat.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
    };
    // v1 counts the throttled time in ns (`throttled_time`), v2 in µs (`throttled_usec`).
    let throttled_s = match field("throttled_time ") {
        Some(ns) => ns as f64 / 1e9,
        None => field("throttled_usec ").unwrap_or(0) as f64 / 1e6,
    };
    Throttling {
        periods: field("nr_periods ").unwrap_or(0),
        throttled: field("nr_throttled ").unwrap_or(0),
        throttled_s,
    }
}

impl Drop for CpuBudget {
    fn drop(&mut self) {
        // A cgroup with processes cannot be removed: move them back to the root first.
        let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.lines() {
            let _ = std::fs::write(self.root.join("cgroup.procs"), pid);
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory standing for a cgroup mount, removed when dropped.
    struct FakeMount(PathBuf);

    impl Drop for FakeMount {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn fake_mount(kind: &str) -> FakeMount {
        let dir = std::env::temp_dir().join(format!("sluice-cgroup-{kind}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        FakeMount(dir)
    }

    #[test]
    fn on_cgroup_v2_the_quota_is_cpu_max_and_the_controller_is_delegated() {
        // A pure v2 machine's files, as the kernel shows them (cgroup-v2.rst).
        let mount = fake_mount("v2");
        std::fs::write(
            mount.0.join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        std::fs::write(mount.0.join("cgroup.subtree_control"), "").unwrap();
        let budget = CpuBudget::create_in(&mount.0, "t", 0.25).unwrap();
        assert_eq!(budget.method, "cgroup v2 cpu.max");
        assert_eq!(
            std::fs::read_to_string(budget.dir.join("cpu.max")).unwrap(),
            "25000 100000"
        );
        assert_eq!(
            std::fs::read_to_string(mount.0.join("cgroup.subtree_control")).unwrap(),
            "+cpu"
        );
        std::fs::write(
            budget.dir.join("cpu.stat"),
            "usage_usec 900\nnr_periods 40\nnr_throttled 30\nthrottled_usec 1500000\n",
        )
        .unwrap();
        let t = budget.throttling();
        assert_eq!((t.periods, t.throttled, t.throttled_s), (40, 30, 1.5));
    }

    #[test]
    fn without_a_cpu_controller_it_says_so() {
        let mount = fake_mount("none");
        std::fs::write(mount.0.join("cgroup.controllers"), "memory pids\n").unwrap();
        let e = CpuBudget::create_in(&mount.0, "t", 0.5).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(CpuBudget::create_in(&mount.0, "t", 0.0).is_err());
    }
}
