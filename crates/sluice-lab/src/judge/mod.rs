//! Naming the saturated tier of one step, with its numbers; and what the lab decides
//! from the steps judged: a configuration's plateau, the proof, the advice. `report.rs`
//! only assembles what is decided here; this module never reads the report.
//!
//! A step is judged in four stages ([`judge`]): each rule reads the step alone and makes
//! its resources and findings; `settle` then applies, in one stated
//! order, the edits some rules make to others' results; the step's validity; the
//! choice. What the judge names is typed ([`kind`]): a resource's [`Kind`], a finding's
//! [`FindingKind`], a proof row's [`proof::Role`], each written in the JSON by the name
//! the report has always used. Every threshold is a constant of [`thresholds`]
//! (docs/lab.md's "How the lab judges" says the same in prose and points there).
//!
//! The rules, each in its own file:
//!
//! - `resources`: **utilisation against the tier's own budget** (the USE method): a
//!   process's CPU against its quota, its worker threads or the machine's cores,
//!   whichever is least; a pool against its size; a connection cap by the seconds it
//!   was held with connections waiting unaccepted. `machine`: tiers sharing a machine
//!   without budgets, judged together against it.
//! - `backlog`: **workers a server does not publish**, all busy: connections waiting
//!   unaccepted in its listen queue nearly every second while its CPU has room (gunicorn,
//!   uWSGI, PHP-FPM; a service the app calls, listed as a tier by pid).
//! - `queue`: **a balancer's queue** (`max_conns`, HAProxy's `maxconn`) holds back what
//!   would have waited in the app's pool: the queue is that pool's evidence, or, with
//!   every pool below its knee, the balancer's limit is what saturated. Requests a
//!   balancer failed by itself, the app servers refusing none, count as held.
//! - `validity`: **valid steps only**: the generator under its CPU, and Little's law
//!   between the users configured and those in the system; otherwise the step measured
//!   the generator and says so.
//! - `choice`: **which one**: a saturated CPU first (a pool that fills because its
//!   tier's CPU is full is a symptom), then what saturated inside a database (a lock
//!   fills the pools in front of it), else the deepest saturated pool (a database pool
//!   fills app threads behind it, never the reverse). Nothing saturated: no tier.
//! - `database`: **inside a database**, from its sessions sampled four times a second:
//!   a lock (or I/O) that sessions waited on in nearly every sample, most of their time
//!   in statements; its `max_connections` held.
//! - `breakdown`: **where a request's time went**, from the balancer's, the app's and the
//!   database's own figures (not a rule: the table beside the verdict).
//! - `gc`: **a JVM's GC pauses**: its heap saturated when they stop it a large share of
//!   the step; below that, a finding (a share of the step, or the latency tail's pause).
//! - `findings` beside any verdict: keep-alive off (then a balancer whose CPU is full
//!   is named for it), metrics missing for a judgement, STOMP messages lost, CPU taken
//!   by other processes.
//!
//! Beyond a step: `plateau` (a configuration whose throughput stayed flat while users
//! grew is saturated, measured or not; `capped` when the app's CPU held one level it
//! does not publish), `downstream` (a pool whose connections were
//! held longer at flat throughput is only where a database's queue shows), `proof` (what the re-runs enlarge and whether
//! they confirm), `advice` (what to change, a sentence per kind).

pub mod advice;
mod backlog;
mod breakdown;
pub mod capped;
pub mod choice;
mod database;
mod delta;
pub mod downstream;
mod errors;
mod findings;
mod gc;
pub mod kind;
mod machine;
pub mod plateau;
pub mod proof;
mod queue;
mod resources;
mod settle;
pub mod thread_states;
pub mod thresholds;
mod validity;

pub use breakdown::{Breakdown, Part};
use choice::choose;
use delta::{throttled_pct, Delta};
pub use findings::Finding;
use findings::{keepalive_off, lost_messages, missing_metrics, starved};
pub use kind::{FindingKind, Kind};
pub use machine::MachineCpu;
use resources::resources;
use settle::settle;
use validity::{validity, GeneratorCpu};

use crate::sample::Reading;
use serde::Serialize;
use std::collections::BTreeMap;

/// What the judge knows of a process besides its readings.
#[derive(Debug, Clone)]
pub struct ProcInfo {
    pub name: String,
    pub tier: String,
    pub budget_cores: f64,
    pub budget: String,
    /// A process of this machine (read from /proc), not an exporter's figures.
    pub local: bool,
}

/// A step's own figures, from the load generator.
#[derive(Debug, Clone, Copy)]
pub struct Load<'a> {
    pub users: usize,
    pub think_s: f64,
    pub tps: f64,
    pub mean_ms: f64,
    /// The response time's median and 99th percentile: a tail GC pauses can explain.
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: u64,
    pub errors: u64,
    /// The failed requests by the generator's kind of error (`status 503`, `timeout`).
    pub error_kinds: &'a BTreeMap<String, u64>,
    /// Cores the generator's threads can use.
    pub generator_cores: f64,
    /// Whether Little's law can be checked (a GET loop; not a scenario, whose users
    /// think inside their steps).
    pub littles_law: bool,
    /// STOMP message copies lost, percent, for a scenario that sends them.
    pub lost_pct: Option<f64>,
    /// The balancer was configured to limit what it sends each server: only then can
    /// requests it failed by itself be its limit's doing.
    pub balancer_limited: bool,
}

/// One resource of one tier over a step.
#[derive(Debug, Clone, Serialize)]
pub struct Resource {
    pub tier: String,
    /// Its kind (the JSON's `cpu`, `threads`, `db_pool`, ...: [`Kind`]).
    pub resource: Kind,
    /// In words, with its size: "the database's CPU (0.3 cores, cgroup v1 cpu quota)".
    pub label: String,
    pub utilisation: f64,
    pub saturated: bool,
    pub evidence: Vec<String>,
    /// How the lab would enlarge it for the proof; `None`: it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enlarge: Option<String>,
    /// A whole machine's resource (node_exporter's), not one process's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub machine: bool,
}

/// The saturated tier of a step, a configuration or a run.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Verdict {
    /// A tier name (`lb`, `app`, `db`, a real tier's name, `loadgen`); `null` when no
    /// tier was saturated or the evidence does not decide.
    pub tier: Option<String>,
    /// What saturated there; `null` with no tier, and for the load generator.
    pub resource: Option<Kind>,
    pub summary: String,
    pub evidence: Vec<String>,
    /// The run's verdict only, the summary's parts: where the run stopped scaling (or
    /// what it came to), what was saturated there, and what to change.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub context: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub limit: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub advice: String,
}

/// Per tier, the figures of the scaling table.
#[derive(Debug, Clone, Serialize)]
pub struct TierFigures {
    pub tier: String,
    pub processes: usize,
    /// CPU used, cores (all processes of the tier).
    pub cpu_cores: f64,
    /// The highest utilisation of one process against its budget.
    pub cpu_util: f64,
    pub budget: String,
    pub throttled_pct: f64,
    pub rss_kib: u64,
    pub fds: u64,
    pub time_wait: u64,
    pub established: u64,
    pub accept_queue_max: u64,
}

/// A whole step judged.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    pub valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid_reason: Option<String>,
    /// Little's law: throughput × (response time + think time).
    pub users_in_system: f64,
    pub generator_cpu_util: f64,
    /// The machine's CPU pressure (PSI some) over the step, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_pressure_pct: Option<f64>,
    pub listen_overflows: u64,
    /// The machine's CPU over the step, and who used it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_cpu: Option<MachineCpu>,
    pub tiers: Vec<TierFigures>,
    pub resources: Vec<Resource>,
    pub findings: Vec<Finding>,
    /// Each JVM's request threads, where the lab sampled them (a JVM given by pid).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jvm_threads: Vec<thread_states::ThreadStates>,
    /// Each local native process's on-CPU profile, where `perf` took one (set by the
    /// run after judging: the judge reads none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub on_cpu: Vec<crate::profile::OnCpu>,
    /// Where a request's time went, where the app or the database measured it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<Breakdown>,
    pub verdict: Verdict,
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        0.0
    } else {
        (part / whole * 1000.0).round() / 10.0
    }
}

/// Judges a step from the readings taken over it (the first and last bound it): every
/// rule on its own (`Ruled::of`), then their edits of each other's results
/// (`settle`), the step's validity, and the choice of what saturated.
pub fn judge(procs: &[ProcInfo], readings: &[Reading], load: Load) -> Judged {
    let (first, last) = (&readings[0], &readings[readings.len() - 1]);
    let seconds = (last.t - first.t).max(1e-3);
    let deltas = deltas(procs, readings, seconds);
    let machine_cpu = machine::split(first, last, seconds, &deltas);
    let Ruled {
        mut resources,
        mut findings,
        sessions,
        gc,
        jvm_threads,
    } = Ruled::of(&deltas, load, machine_cpu.as_ref());
    // Failures a limit of a tier accounts for (a balancer failing what its max_conns
    // holds back, a server refusing at its cap) are its evidence, not the step's errors.
    let explained = resources
        .iter()
        .any(|r| r.saturated && matches!(r.resource, Kind::Queue | Kind::ConnectionCap));
    let settled = settle(&mut resources, &findings, sessions, &deltas, load.errors);
    findings.extend(settled.into_iter().chain(gc));
    let tiers = tiers(&deltas, readings);
    let generator = GeneratorCpu::between(first, last, seconds, load.generator_cores);
    let users_in_system = load.tps * (load.mean_ms / 1000.0 + load.think_s);
    let (invalid_reason, mut failed) =
        step_validity(load, generator, (users_in_system, explained), &tiers);
    findings.extend(failed.finding.clone());
    findings.extend(failed.held.take());
    // What reads the settled resources: the machine's contention (against the busiest
    // CPU as settled), the choice, and messages lost (a verdict when nothing else is).
    let pressure = machine::pressure(first, last, seconds);
    findings.extend(starved(pressure, &resources, machine_cpu.as_ref()));
    let verdict = match (&invalid_reason, &failed.finding) {
        (Some(why), Some(errors)) if failed.dominated => errors::verdict(why, errors),
        (Some(why), _) => invalid(why),
        (None, _) => choose(&resources),
    };
    let verdict = lost_messages(load, verdict, &mut findings);
    Judged {
        valid: invalid_reason.is_none(),
        invalid_reason,
        users_in_system: (users_in_system * 10.0).round() / 10.0,
        generator_cpu_util: round2(generator.util),
        cpu_pressure_pct: pressure,
        listen_overflows: last.listen_overflows.saturating_sub(first.listen_overflows),
        machine_cpu,
        tiers,
        resources,
        findings,
        jvm_threads,
        on_cpu: Vec::new(),
        breakdown: breakdown::breakdown(&deltas, load),
        verdict,
    }
}

/// What a step's validity adds: its errors' finding, whether they dominated it, and
/// users Little's law missed that a tier held.
struct Validity {
    finding: Option<Finding>,
    dominated: bool,
    held: Option<Finding>,
}

/// Whether the step measured the tiers, and why not: errors dominating it first, unless
/// a tier's limit is `explained` to have failed them (fast failures would otherwise
/// read as the generator's CPU or Little's law), then the generator's CPU and Little's
/// law.
fn step_validity(
    load: Load,
    generator: GeneratorCpu,
    (users_in_system, explained): (f64, bool),
    tiers: &[TierFigures],
) -> (Option<String>, Validity) {
    let finding = errors::finding(load);
    let dominated = errors::dominated(load, finding.as_ref()).filter(|_| !explained);
    if let Some(why) = dominated {
        let v = Validity {
            finding,
            dominated: true,
            held: None,
        };
        return (Some(why), v);
    }
    let why = validity(load, generator, users_in_system);
    let (why, held) = validity::held(why, tiers, load, generator);
    let v = Validity {
        finding,
        dominated: false,
        held,
    };
    (why, v)
}

/// What each process did between the step's first reading and its last.
fn deltas<'a>(procs: &'a [ProcInfo], readings: &'a [Reading], seconds: f64) -> Vec<Delta<'a>> {
    let (first, last) = (&readings[0], &readings[readings.len() - 1]);
    procs
        .iter()
        .enumerate()
        .map(|(i, info)| Delta {
            info,
            a: &first.procs[i],
            b: &last.procs[i],
            index: i,
            readings,
            seconds,
        })
        .collect()
}

/// What the rules made, each reading the step alone, before [`settle`].
struct Ruled {
    resources: Vec<Resource>,
    /// The rules' findings before the settling's, in the order the reports print them.
    findings: Vec<Finding>,
    /// The databases' sessions, for the settling to place beside their CPU.
    sessions: Vec<database::Sessions>,
    /// The GC's findings, printed after the settling's.
    gc: Vec<Finding>,
    /// The JVMs' request threads, sampled.
    jvm_threads: Vec<thread_states::ThreadStates>,
}

impl Ruled {
    fn of(deltas: &[Delta], load: Load, machine_cpu: Option<&MachineCpu>) -> Ruled {
        let mut resources = resources(deltas, load);
        resources.extend(machine::shared(deltas, machine_cpu));
        resources.extend(database::resources(deltas));
        resources.extend(gc::heaps(deltas));
        resources.extend(queue::shed(deltas, load));
        let jvm_threads = thread_states::tables(deltas);
        resources.extend(thread_states::resources(deltas, &jvm_threads));
        let mut findings: Vec<Finding> = keepalive_off(deltas, load).into_iter().collect();
        findings.extend(thread_states::findings(deltas));
        findings.extend(missing_metrics(deltas));
        findings.extend(database::findings(deltas));
        Ruled {
            resources,
            findings,
            sessions: database::sessions(deltas),
            gc: gc::findings(deltas, load),
            jvm_threads,
        }
    }
}

/// The verdict of a step that measured the generator, not the tiers.
fn invalid(why: &str) -> Verdict {
    Verdict {
        tier: Some("loadgen".into()),
        resource: None,
        summary: format!("invalid step: {why}"),
        evidence: vec![why.to_string()],
        ..Default::default()
    }
}

/// "0.25 cores", "1 core".
fn cores(n: f64) -> String {
    format!("{} core{}", round2(n), if n == 1.0 { "" } else { "s" })
}

/// `x` rounded to a whole number for printing, never "-0".
pub fn whole(x: f64) -> f64 {
    x.round() + 0.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn tier_word(tier: &str) -> &str {
    match tier {
        "lb" => "the balancer",
        "app" => "the app server",
        "db" => "the database",
        other => other,
    }
}

fn tiers(deltas: &[Delta], readings: &[Reading]) -> Vec<TierFigures> {
    let mut names: Vec<&str> = deltas.iter().map(|d| d.info.tier.as_str()).collect();
    names.dedup();
    names
        .into_iter()
        .map(|tier| {
            let ds: Vec<&Delta> = deltas.iter().filter(|d| d.info.tier == tier).collect();
            let worst = ds
                .iter()
                .max_by(|a, b| a.cpu_util().total_cmp(&b.cpu_util()))
                .expect("a tier has a process");
            TierFigures {
                tier: tier.into(),
                processes: ds.len(),
                cpu_cores: round2(
                    ds.iter().map(|d| d.b.cpu_s - d.a.cpu_s).sum::<f64>() / worst.seconds,
                ),
                cpu_util: round2(worst.cpu_util()),
                budget: format!("{}, {}", cores(worst.info.budget_cores), worst.info.budget),
                throttled_pct: worst.throttled_pct(),
                rss_kib: ds.iter().map(|d| d.b.rss_kib).sum(),
                fds: ds.iter().map(|d| d.b.fds).sum(),
                time_wait: ds.iter().map(|d| d.b.tcp.time_wait).sum(),
                established: ds.iter().map(|d| d.b.tcp.established).sum(),
                // The tier's processes together, at their fullest moment.
                accept_queue_max: readings
                    .iter()
                    .map(|r| {
                        ds.iter()
                            .map(|d| r.procs[d.index].tcp.accept_queue)
                            .sum::<u64>()
                    })
                    .max()
                    .unwrap_or(0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
