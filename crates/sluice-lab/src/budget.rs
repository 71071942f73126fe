//! The CPU a process may use and who set it: a cgroup's quota, the lab's user-space
//! duty cycle, its worker threads, or the machine's cores. The tiers the lab starts and
//! those of a deployment it measures are judged against the same kind of budget.

use sluice_process::cpu_budget::{CpuBudget, Throttling};
use sluice_process::cpu_duty::Meter;
use std::path::PathBuf;

/// The CPU a process may use, and who set it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Budget {
    pub cores: f64,
    /// `cgroup v1 cpu quota`, `user-space duty cycle`, `N worker threads`, or `the
    /// machine's N cores`.
    pub method: String,
}

/// Where a budget's throttling counters are read: a cgroup's `cpu.stat`, or the duty
/// cycle's own, kept the same way.
#[derive(Debug, Clone)]
pub enum Throttled {
    Cgroup(PathBuf),
    Duty(Meter),
}

impl Throttled {
    pub fn read(&self) -> Throttling {
        match self {
            Throttled::Cgroup(dir) => sluice_process::cpu_budget::throttling_at(dir),
            Throttled::Duty(meter) => meter.throttling(),
        }
    }
}

/// Whether a budget of this kind (its `method`) is a quota the lab can set larger for
/// a proof: a cgroup's, or its own duty cycle's.
pub fn resizable(method: &str) -> bool {
    method.starts_with("cgroup") || method == sluice_process::cpu_duty::METHOD
}

/// The machine's cores: the budget of a process nobody limited.
pub fn machine_budget() -> Budget {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Budget {
        cores: cores as f64,
        method: format!("the machine's {cores} cores"),
    }
}

/// A process with `threads` busy threads can use at most that many cores.
pub fn thread_budget(b: Budget, threads: usize) -> Budget {
    if (threads as f64) < b.cores {
        Budget {
            cores: threads as f64,
            method: format!(
                "{threads} worker thread{}",
                if threads == 1 { "" } else { "s" }
            ),
        }
    } else {
        b
    }
}

/// How the tiers the lab starts are held to their CPU budgets on this machine, decided
/// once before a run (and said in its first lines).
#[derive(Debug, Clone, PartialEq)]
pub enum Enforcement {
    /// The kernel's quota, a cgroup per tier ([`sluice_process::cpu_budget::V1`] or `V2`).
    Cgroup(&'static str),
    /// No cgroup could be made (`why`): the lab's user-space duty cycle.
    Duty { why: String },
}

impl Enforcement {
    /// A cgroup if this process can make one, else the duty cycle.
    pub fn decide() -> Enforcement {
        match CpuBudget::create("probe", 1.0) {
            Ok(b) => Enforcement::Cgroup(b.method),
            Err(e) => Enforcement::Duty { why: e.to_string() },
        }
    }

    /// The lines that open a run: the kind of budget, and when it is the duty cycle,
    /// why, how close it holds, and on a line of its own (to copy whole) the command
    /// that gives the kernel's (`command`: the one being run).
    pub fn describe(&self, command: &str) -> String {
        match self {
            Enforcement::Cgroup(method) => format!("CPU budgets: the kernel's ({method})."),
            Enforcement::Duty { why } => format!(
                "CPU budgets: the lab's own duty cycle (it stops and continues each tier, \
                 SIGSTOP/SIGCONT; within 1% of a cgroup quota on a busy loop), since no \
                 cgroup could be made: {why}. For the kernel's quotas, run it as root:\n\
                 \x20 sudo {command}"
            ),
        }
    }
}
