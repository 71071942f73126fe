//! A JVM's request threads as its thread dumps showed them (`crate::jvm`), for a JVM
//! given by pid: what they were doing over the step (the table beside the verdict),
//! the stacks of the busy ones (a wall-clock profile, its top frames), and two
//! resources no metric of the app may publish:
//!
//! - **a monitor**: request threads BLOCKED entering one `synchronized` method or block
//!   in [`THREADS_WAITING_SHARE`] of the dumps or more. A lock is a pool of one: a
//!   queue nearly always behind it is what holds the rest.
//! - **a database pool seen from its threads** (where HikariCP's gauges are not read):
//!   threads waiting for a pooled connection in that share of the dumps, with how many
//!   were in the database at once at most (the pool's size, or what the database let in).

use super::thresholds::THREADS_WAITING_SHARE;
use super::{round2, tier_word, Delta, Finding, FindingKind, Kind, Resource};
use crate::jvm::dump::State;
use crate::jvm::JvmReading;
use crate::profile::{shares, top, Frame};
use serde::Serialize;
use std::collections::BTreeMap;

/// Frames of the JDK, the servers and the libraries an app is built on: what is left is
/// the app's own code, where its engineers can change something.
const LIBRARY_PREFIXES: [&str; 22] = [
    "java.",
    "javax.",
    "jakarta.",
    "jdk.",
    "sun.",
    "com.sun.",
    "org.springframework.",
    "org.apache.",
    "org.eclipse.jetty.",
    "io.undertow.",
    "org.jboss.",
    "org.xnio.",
    "com.zaxxer.",
    "org.postgresql.",
    "com.mysql.",
    "org.mariadb.",
    "org.hibernate.",
    "io.micrometer.",
    "ch.qos.",
    "com.fasterxml.",
    "kotlin.",
    "reactor.",
];

/// A JVM's request threads over a step.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadStates {
    pub process: String,
    pub tier: String,
    /// Tomcat, Jetty or Undertow.
    pub server: Option<&'static str>,
    /// Thread dumps taken over the step.
    pub samples: u64,
    /// Request threads on average, and how many in each state (`running`,
    /// `database`, `downstream`, `pool`, `blocked`, `waiting`, `idle`).
    pub threads: f64,
    pub states: BTreeMap<State, f64>,
    /// Where BLOCKED threads waited, most first, with their share of the BLOCKED.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub blocked_at: Vec<Frame>,
    /// The innermost frames of the busy threads' samples (where they were), and the
    /// innermost frame of the app's own code in each: the wall-clock profile's top.
    pub top_frames: Vec<Frame>,
    pub top_own: Vec<Frame>,
    /// Its GC over the step, from the counters `jstat` reads: "GC stopped it 12 ms
    /// (0.1% of the step, 3 pauses); old generation after GC 41 of 4,096 MiB".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc: Option<String>,
    /// Percent of the step the thread dumps stopped the JVM (see `cost`).
    pub stopped_pct: f64,
    /// What the thread dumps cost the JVM over the step, in words.
    pub cost: String,
    /// Busy request threads' stacks (collapsed, outermost frame first) with their
    /// samples, most first: kept for the step the report profiles.
    #[serde(skip)]
    pub folded: Vec<(String, u64)>,
}

impl Delta<'_> {
    /// What the JVM's sampler took over the step, where it sampled one.
    pub fn jvm(&self) -> Option<JvmReading> {
        let b = self.b.jvm.as_ref()?;
        Some(match &self.a.jvm {
            Some(a) => b.since(a),
            None => b.clone(),
        })
    }
}

/// Every sampled JVM's threads over the step.
pub(super) fn tables(deltas: &[Delta]) -> Vec<ThreadStates> {
    deltas
        .iter()
        .filter_map(|d| Some((d, d.jvm().filter(|j| j.samples > 0 && j.server.is_some())?)))
        .map(|(d, j)| table(d, &j))
        .collect()
}

fn table(d: &Delta, j: &JvmReading) -> ThreadStates {
    let n = j.samples as f64;
    let states: BTreeMap<State, f64> = State::ALL
        .iter()
        .map(|s| (*s, round2(j.states.get(s).copied().unwrap_or(0) as f64 / n)))
        .collect();
    let blocked: u64 = j.blocked_at.values().sum();
    let folded = folded(j);
    ThreadStates {
        process: d.info.name.clone(),
        tier: d.info.tier.clone(),
        server: j.server.map(|s| s.name()),
        samples: j.samples,
        threads: round2(j.states.values().sum::<u64>() as f64 / n),
        states,
        blocked_at: shares(j.blocked_at.iter().map(|(k, v)| (k.clone(), *v)), blocked),
        top_frames: top(&folded, |stack| stack.rsplit(';').next()),
        top_own: top(&folded, |stack| stack.rsplit(';').find(|f| own(f))),
        gc: gc(d),
        stopped_pct: round2(j.dump_s / d.seconds.max(1e-3) * 100.0),
        cost: cost(j, d.seconds),
        folded,
    }
}

/// The step's stacks, most samples first.
fn folded(j: &JvmReading) -> Vec<(String, u64)> {
    let stacks = j.stacks.lock().expect("not poisoned");
    let mut out: Vec<(String, u64)> = j
        .stack_counts
        .iter()
        .filter_map(|(id, n)| Some((stacks.folded(*id)?.to_string(), *n)))
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

/// The app's own code: a frame of no library.
fn own(frame: &str) -> bool {
    !LIBRARY_PREFIXES.iter().any(|p| frame.starts_with(p))
}

/// The JVM's GC over the step, from its counters' file.
fn gc(d: &Delta) -> Option<String> {
    let (a, b) = (d.a.jvm.as_ref()?.gc?, d.b.jvm.as_ref()?.gc?);
    let paused = (b.paused_s - a.paused_s).max(0.0);
    let mib = |bytes: u64| bytes / (1024 * 1024);
    Some(format!(
        "GC stopped it {:.0} ms ({:.1}% of the step, {} pause{}); its old generation after GC {} of {} MiB",
        paused * 1000.0,
        paused / d.seconds.max(1e-3) * 100.0,
        b.pauses.saturating_sub(a.pauses),
        if b.pauses.saturating_sub(a.pauses) == 1 { "" } else { "s" },
        mib(b.old_used),
        mib(b.old_max)
    ))
}

/// The dumps' cost over a step of `seconds`.
fn cost(j: &JvmReading, seconds: f64) -> String {
    let mean_ms = j.dump_s / j.samples.max(1) as f64 * 1000.0;
    let how = if j.dump_stop_counted {
        "stopped the JVM (its safepoint time)"
    } else {
        "took (wall clock; the JVM keeps no counters)"
    };
    format!(
        "{} thread dumps {how} {:.2} ms each on average (the longest {:.1} ms so far): {:.2}% of the step",
        j.samples,
        mean_ms,
        j.dump_max_s * 1000.0,
        j.dump_s / seconds.max(1e-3) * 100.0
    )
}

/// The resources the threads show: a monitor most dumps had threads BLOCKED on, and
/// (where HikariCP's gauges are not read) a pool most dumps had threads waiting for.
pub(super) fn resources(deltas: &[Delta], tables: &[ThreadStates]) -> Vec<Resource> {
    let mut out = Vec::new();
    for d in deltas {
        let (Some(j), Some(t)) = (d.jvm(), tables.iter().find(|t| t.process == d.info.name)) else {
            continue;
        };
        out.extend(monitor(d, &j, t));
        if !d.b.counters.contains_key("hikaricp_connections_max") {
            out.extend(pool(d, &j, t));
        }
    }
    out
}

/// How request threads waited in `state` over a step: the share of dumps with one or
/// more in it, and "request threads <what> in 64% of 22 thread dumps (14.3 of 17.0
/// threads on average, up to 15 at once)".
fn waited(d: &Delta, j: &JvmReading, t: &ThreadStates, state: State, what: &str) -> (f64, String) {
    let share = j.samples_with(state) as f64 / j.samples as f64;
    let text = format!(
        "{}: request threads {what} in {:.0}% of {} thread dumps ({:.1} of {:.1} threads on average, up to {} at once)",
        d.info.name,
        share * 100.0,
        j.samples,
        t.states[&state],
        t.threads,
        j.most_at_once(state),
    );
    (share, text)
}

/// A resource of the threads that waited `share` of the dumps: saturated at
/// [`THREADS_WAITING_SHARE`].
fn waited_at(d: &Delta, resource: Kind, label: String, share: f64, evidence: String) -> Resource {
    Resource {
        tier: d.info.tier.clone(),
        resource,
        label,
        utilisation: round2(share),
        saturated: share >= THREADS_WAITING_SHARE,
        evidence: vec![evidence],
        enlarge: None,
        machine: false,
    }
}

fn monitor(d: &Delta, j: &JvmReading, t: &ThreadStates) -> Option<Resource> {
    let hot = t.blocked_at.first()?;
    let (share, text) = waited(d, j, t, State::Blocked, "BLOCKED on a monitor");
    let method = hot.frame.split(" (a ").next().unwrap_or(&hot.frame);
    let label = format!("{}'s lock in {method}", tier_word(&d.info.tier));
    let evidence = format!("{text}, {:.0}% of them entering {}", hot.pct, hot.frame);
    Some(waited_at(d, Kind::Monitor, label, share, evidence))
}

fn pool(d: &Delta, j: &JvmReading, t: &ThreadStates) -> Option<Resource> {
    if j.samples_with(State::Pool) == 0 {
        return None;
    }
    let (share, text) = waited(d, j, t, State::Pool, "waited for a pooled connection");
    let inside = j.most_at_once(State::Database);
    let label = format!(
        "{}'s database pool (from its threads: {inside} in the database at once at most)",
        tier_word(&d.info.tier)
    );
    let evidence = format!(
        "{text}, while at most {inside} were in a read from the database: the pool's size, or what the database let in"
    );
    Some(waited_at(d, Kind::DbPool, label, share, evidence))
}

/// A JVM given by pid whose threads the lab could not sample, and why; or whose threads
/// had none a server's by name.
pub(super) fn findings(deltas: &[Delta]) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in deltas {
        let Some(j) = d.jvm() else { continue };
        let name = d.info.name.as_str();
        let text = match (&j.error, j.samples, j.server) {
            (Some(why), 0, _) => format!(
                "{name}: a JVM whose threads the lab could not sample ({why}); run the lab as the JVM's user or root"
            ),
            (_, n, None) if n > 0 => format!(
                "{name}: a JVM with no Tomcat, Jetty or Undertow request threads by name in {n} thread dumps: its threads are not judged"
            ),
            _ => continue,
        };
        out.push(Finding::new(FindingKind::ThreadsNotSampled, name, text));
    }
    out
}
