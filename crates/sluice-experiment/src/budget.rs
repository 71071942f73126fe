//! The CPU a process may use and who set it: a cgroup's quota, its worker threads, or
//! the machine's cores. The tiers the lab starts and those of a deployment it measures
//! are judged against the same kind of budget.

/// The CPU a process may use, and who set it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Budget {
    pub cores: f64,
    /// `cgroup v1 cpu quota`, `N worker threads`, or `the machine's N cores`.
    pub method: String,
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
