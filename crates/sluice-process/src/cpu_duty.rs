//! A CPU budget without cgroups: the lab stops a tier's processes (SIGSTOP) once they
//! have used their share of a period, and continues them (SIGCONT) when the next period
//! begins, as the kernel's CFS quota throttles a cgroup and as `cpulimit` does from user
//! space. It needs no privilege beyond signalling one's own children, so it is the budget
//! of a lab run by a normal user on a machine without delegated cgroups.
//!
//! What it uses is read from the kernel's per-process CPU clocks (`clock_getcpuclockid`:
//! nanoseconds, every thread of a process), checked as often as the remaining share could
//! run out on the machine's cores, so a period overruns by at most about a millisecond
//! per core; an overrun is taken from the next period's share. It keeps the same
//! throttling counters a cgroup's `cpu.stat` has (periods, throttled periods, time
//! stopped), so the lab judges a tier the same way under either budget.
//!
//! It must never signal a process it was not given: the tree is the root it started and
//! that root's descendants, read from /proc.

use crate::cpu_budget::Throttling;
use nix::sys::signal::{kill, Signal};
use nix::time::{clock_getcpuclockid, ClockId};
use nix::unistd::Pid;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How reports name this kind of budget.
pub const METHOD: &str = "user-space duty cycle";
/// The period, as CFS's default: a tier at its share runs for `cpus` x 100 ms, then is
/// stopped until the next period.
const PERIOD: Duration = Duration::from_millis(100);
/// The shortest wait between two readings of the tree's CPU clocks.
const MIN_CHECK: Duration = Duration::from_millis(1);
/// When the tree is read again from /proc (a tier forks its workers as it starts; after
/// that its tree rarely changes): at these times from the start, then every
/// [`RESCAN_EVERY`].
const RESCANS: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(400),
    Duration::from_secs(1),
];
const RESCAN_EVERY: Duration = Duration::from_secs(2);

/// A process tree held to `cpus` CPUs by a thread of this process; released (every
/// process continued) when dropped.
pub struct DutyBudget {
    pub cpus: f64,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    root: u32,
    cpus: f64,
    stop: AtomicBool,
    counters: Mutex<Throttling>,
}

impl DutyBudget {
    /// Starts holding `root` and its descendants to `cpus` CPUs.
    pub fn start(root: u32, cpus: f64) -> std::io::Result<DutyBudget> {
        if !cpus.is_finite() || cpus <= 0.0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a CPU budget must be above 0",
            ));
        }
        let shared = Arc::new(Shared {
            root,
            cpus,
            stop: AtomicBool::new(false),
            counters: Mutex::default(),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("duty-{root}"))
            .spawn(move || Cycle::new(&s).run())?;
        Ok(DutyBudget {
            cpus,
            shared,
            thread: Some(thread),
        })
    }

    /// The throttling counters now, as a cgroup's `cpu.stat` would give them.
    pub fn throttling(&self) -> Throttling {
        self.meter().throttling()
    }

    /// A handle on the counters, for a sampler that does not own the budget.
    pub fn meter(&self) -> Meter {
        Meter(self.shared.clone())
    }

    /// Stops holding the tree, and continues every process of it.
    pub fn release(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for DutyBudget {
    fn drop(&mut self) {
        self.release();
    }
}

/// The throttling counters of a [`DutyBudget`], readable while it runs.
#[derive(Clone)]
pub struct Meter(Arc<Shared>);

impl Meter {
    pub fn throttling(&self) -> Throttling {
        *self.0.counters.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for Meter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Meter(pid {}, {} CPUs)", self.0.root, self.0.cpus)
    }
}

/// The thread's state: the tree, each process's CPU clock at the last reading, and the
/// share left in the current period.
struct Cycle<'a> {
    shared: &'a Shared,
    started: Instant,
    tree: Vec<u32>,
    scans: usize,
    next_scan: Duration,
    clocks: HashMap<u32, Duration>,
    cores: f64,
}

impl<'a> Cycle<'a> {
    fn new(shared: &'a Shared) -> Cycle<'a> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        Cycle {
            shared,
            started: Instant::now(),
            tree: vec![shared.root],
            scans: 0,
            next_scan: RESCANS[0],
            clocks: HashMap::new(),
            cores,
        }
    }

    fn run(mut self) {
        let share = self.shared.cpus * PERIOD.as_secs_f64();
        let mut debt = 0.0;
        self.used();
        while !self.shared.stop.load(Ordering::SeqCst) {
            let period_end = Instant::now() + PERIOD;
            let (used, throttled) = self.period(period_end, share - debt);
            debt = (used - (share - debt)).max(0.0);
            let mut c = self
                .shared
                .counters
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if used > 0.0 || throttled > Duration::ZERO {
                c.periods += 1;
            }
            if throttled > Duration::ZERO {
                c.throttled += 1;
                c.throttled_s += throttled.as_secs_f64();
            }
        }
        self.signal(Signal::SIGCONT);
    }

    /// One period: lets the tree run until it has used `allowed` CPU seconds, then stops
    /// it until `end`. Returns the CPU seconds used and how long it was stopped.
    fn period(&mut self, end: Instant, allowed: f64) -> (f64, Duration) {
        let mut used = 0.0;
        loop {
            used += self.used();
            let now = Instant::now();
            if now >= end || self.shared.stop.load(Ordering::SeqCst) {
                return (used, Duration::ZERO);
            }
            let left = allowed - used;
            if left <= 0.0 {
                self.signal(Signal::SIGSTOP);
                std::thread::sleep(end - now);
                // Whatever ran between the last reading and the stop is this period's.
                used += self.used();
                self.signal(Signal::SIGCONT);
                return (used, end - now);
            }
            // The soonest the share could run out, every core busy.
            let soonest = Duration::from_secs_f64(left / self.cores);
            std::thread::sleep(soonest.max(MIN_CHECK).min(end - now));
        }
    }

    /// CPU seconds the tree used since the last call.
    fn used(&mut self) -> f64 {
        self.rescan();
        let mut total = Duration::ZERO;
        for &pid in &self.tree {
            let Some(now) = cpu_clock(pid) else { continue };
            let before = self.clocks.insert(pid, now).unwrap_or(now);
            total += now.saturating_sub(before);
        }
        total.as_secs_f64()
    }

    /// Reads the tree again from /proc when a scan is due.
    fn rescan(&mut self) {
        let elapsed = self.started.elapsed();
        if elapsed < self.next_scan {
            return;
        }
        self.tree = crate::procfs::tree(self.shared.root);
        self.scans += 1;
        self.next_scan = RESCANS
            .get(self.scans)
            .copied()
            .unwrap_or(elapsed + RESCAN_EVERY);
    }

    fn signal(&self, signal: Signal) {
        for &pid in &self.tree {
            let _ = kill(Pid::from_raw(pid as i32), signal);
        }
    }
}

/// The CPU time of every thread of process `pid` so far; `None` once it is gone.
fn cpu_clock(pid: u32) -> Option<Duration> {
    let clock = clock_getcpuclockid(Pid::from_raw(pid as i32)).ok()?;
    let t = ClockId::now(clock).ok()?;
    Some(Duration::new(t.tv_sec() as u64, t.tv_nsec() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A busy loop as a child process: `sh -c 'while :; do :; done'`.
    fn spin() -> std::process::Child {
        std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap()
    }

    #[test]
    fn a_busy_loop_is_held_to_its_share() {
        let mut child = spin();
        let pid = child.id();
        let budget = DutyBudget::start(pid, 0.25).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let before = cpu_clock(pid).unwrap();
        let t0 = Instant::now();
        std::thread::sleep(Duration::from_secs(2));
        let used = (cpu_clock(pid).unwrap() - before).as_secs_f64();
        let share = used / t0.elapsed().as_secs_f64();
        let c = budget.throttling();
        drop(budget);
        // Released, it runs again.
        let after = cpu_clock(pid).unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let running = cpu_clock(pid).unwrap() > after;
        child.kill().unwrap();
        let _ = child.wait();
        // A shared, noisy machine can only slow the loop down: at most the share (and
        // an overrun of a period at most), and most of it.
        assert!((0.15..=0.28).contains(&share), "used {share:.3} of a core");
        assert!(c.throttled >= 15 && c.throttled <= c.periods, "{c:?}");
        assert!(c.throttled_s > 1.0, "{c:?}");
        assert!(
            running,
            "the loop was not continued when the budget was released"
        );
    }
}
