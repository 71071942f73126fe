//! Inside a JVM given by pid alone, with the JDK's own means (no agent, nothing added to
//! the app): its request threads sampled several times a second through the attach
//! listener `jcmd` uses ([`attach`], a `Thread.print` each), each thread's state read
//! from its frames ([`dump`]); and its GC from the counters `jstat` reads
//! ([`perfdata`]). The samples add up from the start, as the database's sessions do, so a
//! step is the difference of two readings: how many request threads were running,
//! in the database, waiting for a pooled connection, BLOCKED (and where), and the
//! stacks of the busy ones, a wall-clock profile.
//!
//! A thread dump stops the JVM at a safepoint while its stacks are walked. The sampler
//! measures each stop by the JVM's own count of time at safepoints (the dump's whole
//! wall-clock time where the JVM keeps no counters) and spaces the dumps so that they
//! stop it at most [`DUMP_SHARE`] of the time (a stop of 1 ms: a dump every 200 ms, the
//! most often; of 4 ms: every 400 ms).

pub mod attach;
pub mod dump;
pub mod perfdata;

use dump::{Server, State};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most often a JVM's threads are sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(200);

/// The most of the time thread dumps may stop the JVM: the bound, 1%.
pub const DUMP_SHARE: f64 = 0.01;

/// Distinct stacks a JVM's sampler keeps (a few MiB of text at most): past them, new
/// stacks are counted together as one, [`OTHER_STACKS`].
const MAX_STACKS: usize = 20_000;

/// What stacks past [`MAX_STACKS`] are counted as.
pub const OTHER_STACKS: &str = "[stacks past the lab's 20,000 distinct]";

/// The folded stacks of one JVM's busy request threads, each stored once and counted by
/// its place here (a step's profile is a difference of counts, cheap to copy each
/// second).
#[derive(Debug, Default)]
pub struct Stacks {
    index: HashMap<String, u32>,
    folded: Vec<String>,
}

impl Stacks {
    fn id(&mut self, folded: String) -> u32 {
        if let Some(&id) = self.index.get(&folded) {
            return id;
        }
        if self.folded.len() >= MAX_STACKS && folded != OTHER_STACKS {
            return self.id(OTHER_STACKS.to_string());
        }
        let id = self.folded.len() as u32;
        self.folded.push(folded.clone());
        self.index.insert(folded, id);
        id
    }

    /// The stack counted as `id`.
    pub fn folded(&self, id: u32) -> Option<&str> {
        self.folded.get(id as usize).map(String::as_str)
    }
}

/// What a JVM's samples add up to since the sampler started.
#[derive(Debug, Clone, Default)]
pub struct JvmReading {
    /// The app server its request threads belong to, once one was seen.
    pub server: Option<Server>,
    /// Thread dumps taken.
    pub samples: u64,
    /// Request threads seen in each state, over all samples.
    pub states: BTreeMap<State, u64>,
    /// Samples by how many request threads were in a state at once: `(state, n)`.
    pub at_once: BTreeMap<(State, u32), u64>,
    /// BLOCKED request threads by where they waited (the method, the monitor's class).
    pub blocked_at: BTreeMap<String, u64>,
    /// Busy request threads' stacks, by their place in `stacks`.
    pub stack_counts: BTreeMap<u32, u64>,
    pub stacks: Arc<Mutex<Stacks>>,
    /// How long the dumps stopped the JVM, seconds: its time at safepoints over each
    /// dump (a GC's stop at the same moment counted in), else the dump's wall-clock time.
    pub dump_s: f64,
    pub dump_max_s: f64,
    /// Whether `dump_s` is the JVM's own count (`false`: the dumps' wall-clock time).
    pub dump_stop_counted: bool,
    /// Its GC now, from its counters' file (`None` without one).
    pub gc: Option<perfdata::GcCounters>,
    /// Why its threads are not sampled, when they are not.
    pub error: Option<String>,
}

impl JvmReading {
    /// What was sampled between `earlier` and this reading.
    pub fn since(&self, earlier: &JvmReading) -> JvmReading {
        JvmReading {
            samples: self.samples.saturating_sub(earlier.samples),
            states: minus(&self.states, &earlier.states),
            at_once: minus(&self.at_once, &earlier.at_once),
            blocked_at: minus(&self.blocked_at, &earlier.blocked_at),
            stack_counts: minus(&self.stack_counts, &earlier.stack_counts),
            dump_s: (self.dump_s - earlier.dump_s).max(0.0),
            ..self.clone()
        }
    }

    /// Samples in which at least one request thread was in `state`.
    pub fn samples_with(&self, state: State) -> u64 {
        self.at_once
            .iter()
            .filter(|((s, n), _)| *s == state && *n > 0)
            .map(|(_, c)| c)
            .sum()
    }

    /// The most request threads seen in `state` at once.
    pub fn most_at_once(&self, state: State) -> u32 {
        self.at_once
            .iter()
            .filter(|((s, _), c)| *s == state && **c > 0)
            .map(|((_, n), _)| *n)
            .max()
            .unwrap_or(0)
    }

    /// One dump's threads added.
    fn add(&mut self, threads: &[dump::Thread]) {
        let mut counts: BTreeMap<State, u32> = State::ALL.iter().map(|s| (*s, 0)).collect();
        let mut stacks = self.stacks.lock().expect("not poisoned");
        for t in threads {
            let Some(server) = Server::of_thread(&t.name) else {
                continue;
            };
            self.server = Some(server);
            let state = t.state();
            *counts.entry(state).or_default() += 1;
            if state == State::Idle {
                continue;
            }
            if let Some(at) = t.blocked_at().filter(|_| state == State::Blocked) {
                *self.blocked_at.entry(at).or_default() += 1;
            }
            *self.stack_counts.entry(stacks.id(t.folded())).or_default() += 1;
        }
        for (state, n) in counts {
            *self.states.entry(state).or_default() += n as u64;
            *self.at_once.entry((state, n)).or_default() += 1;
        }
        self.samples += 1;
    }

    /// Micrometer's names for what the counters' file says of GC, so the rules that
    /// read a Spring Boot app's GC read a JVM given by pid alone the same way; a tier
    /// that publishes its own keeps them.
    pub fn gc_counters(&self, into: &mut BTreeMap<String, f64>) {
        let Some(g) = self.gc else { return };
        if into.contains_key("jvm_gc_pause_seconds_sum") {
            return;
        }
        into.insert("jvm_gc_pause_seconds_sum".into(), g.paused_s);
        into.insert("jvm_gc_pause_seconds_count".into(), g.pauses as f64);
        into.insert("jvm_gc_pause_seconds_max".into(), g.last_pause_s);
    }
}

fn minus<K: Ord + Clone>(a: &BTreeMap<K, u64>, b: &BTreeMap<K, u64>) -> BTreeMap<K, u64> {
    a.iter()
        .map(|(k, v)| (k.clone(), v.saturating_sub(b.get(k).copied().unwrap_or(0))))
        .filter(|(_, v)| *v > 0)
        .collect()
}

/// Whether `pid` is a HotSpot JVM: it keeps a counters file, or its program is `java`.
pub fn is_jvm(pid: u32) -> bool {
    perfdata::file_of(pid).is_some()
        || std::fs::read_link(format!("/proc/{pid}/exe"))
            .is_ok_and(|exe| exe.file_name().is_some_and(|n| n == "java"))
}

/// The pid the process `pid` knows itself by, in its own pid namespace (a
/// container's): what a JVM names its attach socket and counters' file by.
pub(crate) fn ns_pid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

/// A thread sampling one JVM until dropped.
pub struct JvmSampler {
    reading: Arc<Mutex<JvmReading>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl JvmSampler {
    /// Starts sampling the JVM `pid` (attaching from the sampler's own thread: a JVM
    /// that has to start its listener takes up to seconds).
    pub fn start(pid: u32) -> JvmSampler {
        let reading = Arc::new(Mutex::new(JvmReading::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (reading, stop) = (reading.clone(), stop.clone());
            std::thread::spawn(move || sample_until(pid, &reading, &stop))
        };
        JvmSampler {
            reading,
            stop,
            thread: Some(thread),
        }
    }

    /// The samples so far.
    pub fn reading(&self) -> JvmReading {
        self.reading.lock().expect("not poisoned").clone()
    }
}

impl Drop for JvmSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn sample_until(pid: u32, reading: &Mutex<JvmReading>, stop: &AtomicBool) {
    let counters = perfdata::file_of(pid);
    let attached = attach::Attached::open(pid);
    if let Err(why) = &attached {
        reading.lock().expect("not poisoned").error = Some(why.clone());
    }
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let before = counters.as_deref().and_then(perfdata::read);
        let dumped = attached.as_ref().ok().map(|a| a.run("Thread.print"));
        let gc = counters.as_deref().and_then(perfdata::read);
        let stopped = match (before, gc) {
            (Some(a), Some(b)) => {
                Duration::from_secs_f64((b.safepoints_s - a.safepoints_s).max(0.0))
            }
            _ => started.elapsed(),
        };
        let threads = match dumped {
            Some(Ok(text)) => Ok(dump::parse(&text)),
            Some(Err(e)) => Err(e),
            None => Err(String::new()),
        };
        {
            let mut r = reading.lock().expect("not poisoned");
            r.gc = gc.or(r.gc);
            match threads {
                Ok(threads) => {
                    r.add(&threads);
                    r.dump_s += stopped.as_secs_f64();
                    r.dump_max_s = r.dump_max_s.max(stopped.as_secs_f64());
                    r.dump_stop_counted = gc.is_some();
                }
                Err(e) if !e.is_empty() => r.error = Some(e),
                Err(_) => {}
            }
        }
        // Stops at most DUMP_SHARE of the time: the next after stopped / DUMP_SHARE.
        let next = started + SAMPLE_EVERY.max(stopped.div_f64(DUMP_SHARE));
        while Instant::now() < next && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(name: &str, state: &str, frames: &[&str]) -> dump::Thread {
        dump::Thread {
            name: name.into(),
            java_state: state.into(),
            frames: frames.iter().map(|f| f.to_string()).collect(),
            waiting_to_lock: None,
        }
    }

    #[test]
    fn a_steps_samples_are_the_difference_of_two_readings() {
        let blocked = thread(
            "http-nio-1-exec-1",
            "BLOCKED",
            &["lab.Hot.work", "jakarta.servlet.http.HttpServlet.service"],
        );
        let idle = thread(
            "http-nio-1-exec-2",
            "WAITING",
            &["org.apache.tomcat.util.threads.TaskQueue.take"],
        );
        let mut r = JvmReading::default();
        r.add(&[idle.clone(), idle.clone()]);
        let before = r.clone();
        r.add(&[blocked.clone(), idle.clone()]);
        r.add(&[blocked.clone(), blocked.clone()]);
        let step = r.since(&before);
        assert_eq!(step.samples, 2);
        assert_eq!(step.states.get(&State::Blocked), Some(&3));
        assert_eq!(step.states.get(&State::Idle), Some(&1));
        assert_eq!(step.samples_with(State::Blocked), 2);
        assert_eq!(step.most_at_once(State::Blocked), 2);
        assert_eq!(step.blocked_at.get("lab.Hot.work"), Some(&3));
        // The busy threads' stack, three times; idle threads are not profiled.
        let stacks = step.stacks.lock().unwrap();
        let counted: Vec<(&str, u64)> = step
            .stack_counts
            .iter()
            .map(|(id, n)| (stacks.folded(*id).unwrap(), *n))
            .collect();
        assert_eq!(
            counted,
            [("jakarta.servlet.http.HttpServlet.service;lab.Hot.work", 3)]
        );
    }
}
