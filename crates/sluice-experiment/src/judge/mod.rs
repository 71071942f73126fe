//! Naming the saturated tier of one step, with its numbers.
//!
//! The rules (the README's "How the lab judges" says the same in prose):
//!
//! - **Utilisation against the tier's own budget** (the USE method): a process's CPU is
//!   judged against its quota, its worker threads or the machine's cores, whichever is
//!   least; a pool against its size (thread-milliseconds held over the pool's
//!   thread-milliseconds). A resource is saturated when it is at least 85% used (CPU;
//!   70% when throttled in half its quota periods), 80% used with at least 5% of
//!   requests waiting for it (pools), or, for a connection cap, when the cap was held in
//!   most seconds (or 90% full on average) with connections waiting unaccepted.
//! - **A balancer's queue** (`max_conns`, HAProxy's `maxconn`) holds back what would
//!   have waited in the app's pool: with 5% of requests queued in the balancer, a pool
//!   80% busy is saturated (the queue is its evidence); with every pool below that, the
//!   balancer's limit is what saturated (see `queue`). Requests a balancer failed by
//!   itself, the app servers refusing none, count as held (nginx's `max_conns`).
//! - **Valid steps only**: the generator itself must stay under 85% of its CPU, and
//!   Little's law must hold between the users configured and those actually in the
//!   system (throughput × (response time + think time)) within 20%; otherwise the step
//!   measured the generator and says so.
//! - **Which one**: a saturated CPU first (the highest utilisation; a pool that fills
//!   because its tier's CPU is full is a symptom), else the deepest saturated pool (a
//!   database pool fills app threads behind it, never the reverse). A balancer whose
//!   CPU is full while it opens a connection per request is named for its keep-alive.
//!   Nothing saturated: the verdict says so and names no tier.
//! - **Findings** beside any verdict: keep-alive off, STOMP messages lost, CPU taken by
//!   other processes (machine-wide PSI high while no tier is near its budget).

mod queue;

use crate::sample::{ProcReading, Reading};
use serde::Serialize;

/// What the judge knows of a process besides its readings.
#[derive(Debug, Clone)]
pub struct ProcInfo {
    pub name: String,
    pub tier: String,
    pub budget_cores: f64,
    pub budget: String,
}

/// A step's own figures, from the load generator.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub users: usize,
    pub think_s: f64,
    pub tps: f64,
    pub mean_ms: f64,
    pub requests: u64,
    pub errors: u64,
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
    /// `cpu`, `threads`, `db_pool`, `connections`, `keepalive`, `queue`.
    pub resource: String,
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
    pub resource: Option<String>,
    pub summary: String,
    pub evidence: Vec<String>,
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
    pub tiers: Vec<TierFigures>,
    pub resources: Vec<Resource>,
    pub findings: Vec<String>,
    pub verdict: Verdict,
}

/// What happened to one process over a step: its first and last readings, and every
/// reading between (for gauges, whose samples matter, not their difference).
struct Delta<'a> {
    info: &'a ProcInfo,
    a: &'a ProcReading,
    b: &'a ProcReading,
    seconds: f64,
    /// This process's place in each reading.
    index: usize,
    readings: &'a [Reading],
}

impl Delta<'_> {
    /// A counter's value in each reading that has it.
    fn series(&self, key: &str) -> Vec<f64> {
        let i = self.index;
        self.readings
            .iter()
            .filter_map(|r| r.procs[i].counters.get(key).copied())
            .collect()
    }
    /// The largest accept queue of its port over the step.
    fn accept_queue_max(&self) -> u64 {
        let i = self.index;
        self.readings
            .iter()
            .map(|r| r.procs[i].tcp.accept_queue)
            .max()
            .unwrap_or(0)
    }
    fn counter(&self, key: &str) -> f64 {
        let get = |r: &ProcReading| r.counters.get(key).copied().unwrap_or(0.0);
        (get(self.b) - get(self.a)).max(0.0)
    }
    fn gauge(&self, key: &str) -> Option<f64> {
        self.b.counters.get(key).copied()
    }
    /// CPU used over the budget; 0 when the budget is unknown (an exporter without a
    /// CPU count).
    fn cpu_util(&self) -> f64 {
        if self.info.budget_cores <= 0.0 {
            return 0.0;
        }
        (self.b.cpu_s - self.a.cpu_s) / (self.seconds * self.info.budget_cores)
    }
    fn throttled_pct(&self) -> f64 {
        let periods = self
            .b
            .throttling
            .periods
            .saturating_sub(self.a.throttling.periods);
        let throttled = self
            .b
            .throttling
            .throttled
            .saturating_sub(self.a.throttling.throttled);
        pct(throttled as f64, periods as f64)
    }
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        0.0
    } else {
        (part / whole * 1000.0).round() / 10.0
    }
}

/// Judges a step from the readings taken over it (the first and last bound it).
pub fn judge(procs: &[ProcInfo], readings: &[Reading], load: Load) -> Judged {
    let (first, last) = (&readings[0], &readings[readings.len() - 1]);
    let seconds = (last.t - first.t).max(1e-3);
    let deltas: Vec<Delta> = procs
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
        .collect();
    let mut resources = resources(&deltas, load);
    if !resources.iter().any(|r| r.resource == "queue") {
        resources.extend(queue::shed(&deltas, load));
    }
    queue::attribute(&mut resources);
    let mut findings = findings(&deltas, &mut resources);
    let tiers = tiers(&deltas, readings);
    let generator_cpu_util =
        (last.generator_cpu_s - first.generator_cpu_s) / (seconds * load.generator_cores);
    let users_in_system = load.tps * (load.mean_ms / 1000.0 + load.think_s);
    let mut invalid_reason = validity(load, generator_cpu_util, users_in_system);
    // Users missing from Little's law while a tier left connections unaccepted (or
    // requests failed) were held by that tier, not idle in the generator: evidence,
    // not an invalid step.
    let held = tiers.iter().any(|t| t.accept_queue_max > 0) || load.errors > 0;
    if held && generator_cpu_util < 0.85 {
        findings.extend(invalid_reason.take().map(|why| {
            format!(
                "{why}: the others waited on requests a tier had not answered when the step ended"
            )
        }));
    }
    let pressure = match (first.pressure_us, last.pressure_us) {
        (Some(a), Some(b)) => Some(pct(b.saturating_sub(a) as f64 / 1e6, seconds)),
        _ => None,
    };
    findings.extend(starved(pressure, &resources));
    let verdict = match &invalid_reason {
        Some(why) => Verdict {
            tier: Some("loadgen".into()),
            resource: None,
            summary: format!("invalid step: {why}"),
            evidence: vec![why.clone()],
        },
        None => choose(&resources),
    };
    let verdict = lost_messages(load, verdict, &mut findings);
    Judged {
        valid: invalid_reason.is_none(),
        invalid_reason,
        users_in_system: (users_in_system * 10.0).round() / 10.0,
        generator_cpu_util: round2(generator_cpu_util),
        cpu_pressure_pct: pressure,
        listen_overflows: last.listen_overflows.saturating_sub(first.listen_overflows),
        tiers,
        resources,
        findings,
        verdict,
    }
}

/// Every resource of every process, with the balancer's own metrics beside its CPU.
fn resources(deltas: &[Delta], load: Load) -> Vec<Resource> {
    let mut resources = Vec::new();
    for d in deltas {
        resources.extend(cpu(d));
        resources.extend(pool(d, "threads", "pool", load));
        resources.extend(pool(d, "db_pool", "db_pool", load));
        resources.extend(cap(d));
        resources.extend(exported_pools(d));
        resources.extend(queue::resource(d, load));
        if let Some(r) = resources
            .iter_mut()
            .find(|r| r.tier == d.info.tier && r.resource == "cpu")
        {
            r.evidence.extend(balancer_metrics(d));
        }
    }
    resources
}

/// "0.25 cores", "1 core".
fn cores(n: f64) -> String {
    format!("{} core{}", round2(n), if n == 1.0 { "" } else { "s" })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A generator at its CPU, or users not in the system, make a step measure the
/// generator rather than the tiers.
fn validity(load: Load, generator_util: f64, users_in_system: f64) -> Option<String> {
    if generator_util >= 0.85 {
        return Some(format!(
            "the load generator used {:.0}% of the {} core{} it can use: it, not a tier, limited the step",
            generator_util * 100.0,
            round2(load.generator_cores),
            if load.generator_cores == 1.0 { "" } else { "s" }
        ));
    }
    let n = load.users as f64;
    if load.littles_law && load.requests > 0 && (users_in_system - n).abs() / n > 0.2 {
        return Some(format!(
            "Little's law: {:.0} req/s × ({:.1} ms + {:.0} ms think) = {:.1} users in the system, not the {} configured",
            load.tps,
            load.mean_ms,
            load.think_s * 1000.0,
            users_in_system,
            load.users
        ));
    }
    None
}

fn tier_word(tier: &str) -> &str {
    match tier {
        "lb" => "the balancer",
        "app" => "the app server",
        "db" => "the database",
        other => other,
    }
}

fn cpu(d: &Delta) -> Option<Resource> {
    if d.info.budget_cores <= 0.0 || (d.a.cpu_s == 0.0 && d.b.cpu_s == 0.0) {
        return None; // an exporter without CPU figures
    }
    let u = d.cpu_util();
    let throttled = d.throttled_pct();
    let used = u * d.info.budget_cores;
    let mut evidence = vec![format!(
        "{} used {:.2} of its {} ({}): {:.0}%",
        d.info.name,
        used,
        cores(d.info.budget_cores),
        d.info.budget,
        u * 100.0
    )];
    if throttled > 0.0 {
        evidence.push(format!(
            "{} was throttled in {throttled}% of its quota periods",
            d.info.name
        ));
    }
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: "cpu".into(),
        label: format!(
            "{}'s CPU ({}, {})",
            tier_word(&d.info.tier),
            cores(d.info.budget_cores),
            d.info.budget
        ),
        utilisation: round2(u),
        // CPU time is read in 10 ms ticks: over a short step a tier at its quota can
        // read as 80%. Throttled in half its periods, the quota is what stopped it.
        saturated: u >= 0.85 || (u >= 0.7 && throttled >= 50.0),
        evidence,
        enlarge: d.info.budget.starts_with("cgroup").then(|| {
            format!(
                "CPU budget {} -> {} cores",
                d.info.budget_cores,
                round2(d.info.budget_cores * 1.5)
            )
        }),
        machine: d.info.budget.contains("node_exporter"),
    })
}

/// A pool whose counters start with `prefix` (`pool_*`: worker threads; `db_pool_*`).
fn pool(d: &Delta, resource: &str, prefix: &str, load: Load) -> Option<Resource> {
    let (size_key, busy_key) = if prefix == "pool" {
        ("pool_threads", "pool_busy_ms")
    } else {
        ("db_pool_size", "db_pool_busy_ms")
    };
    let size = d.gauge(size_key).filter(|s| *s > 0.0)?;
    let (waits_key, wait_key, entered_key) = if prefix == "pool" {
        ("queue_waits", "queue_wait_ms", "pool_entered")
    } else {
        ("db_waits", "db_wait_ms", "db_queries")
    };
    let u = d.counter(busy_key) / (d.seconds * 1000.0 * size);
    let (waits, wait_ms, served) = (
        d.counter(waits_key),
        d.counter(wait_key),
        d.counter(entered_key),
    );
    let mean_wait = if served > 0.0 { wait_ms / served } else { 0.0 };
    let what = if prefix == "pool" {
        "threads"
    } else {
        "database connections"
    };
    let mut evidence = vec![format!(
        "{}'s {size} {what} were {:.0}% busy",
        d.info.name,
        u * 100.0
    )];
    if waits > 0.0 {
        evidence.push(format!(
            "{waits:.0} requests waited for one, {mean_wait:.1} ms on average ({:.0}% of the response time)",
            pct(mean_wait, load.mean_ms)
        ));
    }
    let label = if prefix == "pool" {
        format!("{}'s thread pool ({size} threads)", tier_word(&d.info.tier))
    } else {
        format!("the database pool ({size} connections per app server)")
    };
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: resource.into(),
        label,
        utilisation: round2(u),
        // Busy most of the time with a real share of requests waiting: a pool shows
        // below 100% even when it is the limit, since a request holds it only for part
        // of its time in the app.
        saturated: u >= 0.8 && waits >= 0.05 * served,
        evidence,
        enlarge: Some(format!("{resource} {size} -> {}", (size * 1.5).ceil())),
        machine: false,
    })
}

/// A connection cap (`max_conns`): reached in most seconds with connections queued.
fn cap(d: &Delta) -> Option<Resource> {
    let cap = d.gauge("max_conns").filter(|c| *c > 0.0)?;
    let open = d.series("conns_open");
    let at_cap = open.iter().filter(|o| **o >= cap).count();
    let share = at_cap as f64 / open.len().max(1) as f64;
    let queued = d.accept_queue_max();
    let mean_open = open.iter().sum::<f64>() / open.len().max(1) as f64;
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: "connections".into(),
        label: format!("{}'s connection cap ({cap} connections)", tier_word(&d.info.tier)),
        utilisation: round2(mean_open / cap),
        // Held in most seconds, or nearly full on average (the step's tail, while stuck
        // requests run out their timeout, drains the cap below it), with a queue.
        saturated: (share >= 0.8 || mean_open / cap >= 0.9) && queued > 0,
        evidence: vec![format!(
            "{} held its cap of {cap} connections in {:.0}% of the seconds sampled, with up to {queued} more waiting unaccepted in its listen queue",
            d.info.name,
            share * 100.0
        )],
        enlarge: Some(format!("connections {cap} -> {}", (cap * 1.5).ceil())),
        machine: false,
    })
}

/// Pools that exporters report as gauges, sampled each second: (resource, busy, size,
/// waiting). Micrometer's names (Spring Boot's `/actuator/prometheus`) and the JMX
/// exporter's usual Tomcat rule.
const EXPORTED_POOLS: &[(&str, &str, &str, Option<&str>)] = &[
    (
        "threads",
        "tomcat_threads_busy_threads",
        "tomcat_threads_config_max_threads",
        None,
    ),
    (
        "threads",
        "tomcat_threadpool_currentthreadsbusy",
        "tomcat_threadpool_maxthreads",
        None,
    ),
    (
        "db_pool",
        "hikaricp_connections_active",
        "hikaricp_connections_max",
        Some("hikaricp_connections_pending"),
    ),
];

/// A pool read from gauges: utilisation is the mean of busy over the size; saturated
/// when at least 80% used with requests pending in half the samples (or, without a
/// pending gauge, 95% used).
fn exported_pools(d: &Delta) -> Vec<Resource> {
    let mut out = Vec::new();
    for (resource, busy, size, pending) in EXPORTED_POOLS {
        let (b, s) = (d.series(busy), d.series(size));
        let Some(max) = s.iter().copied().reduce(f64::max).filter(|m| *m > 0.0) else {
            continue;
        };
        let u = b.iter().sum::<f64>() / b.len().max(1) as f64 / max;
        let waiting = pending.map(|k| d.series(k));
        let share = waiting
            .as_ref()
            .map(|w| w.iter().filter(|v| **v > 0.0).count() as f64 / w.len().max(1) as f64);
        let saturated = match share {
            Some(share) => u >= 0.8 && share >= 0.5,
            None => u >= 0.95,
        };
        let mut evidence = vec![format!(
            "{}: {busy} averaged {:.0}% of {size} ({max})",
            d.info.name,
            u * 100.0
        )];
        if let (Some(p), Some(share)) = (pending, share) {
            evidence.push(format!(
                "{p} above 0 in {:.0}% of the seconds sampled",
                share * 100.0
            ));
        }
        out.push(Resource {
            tier: d.info.tier.clone(),
            resource: (*resource).into(),
            label: format!(
                "{}'s {} ({max})",
                d.info.tier,
                if *resource == "threads" {
                    "thread pool"
                } else {
                    "database pool"
                }
            ),
            utilisation: round2(u),
            saturated,
            evidence,
            enlarge: None,
            machine: false,
        });
    }
    out
}

/// What sluice's `/metrics` says of a step, as evidence beside its CPU: requests to
/// the servers, connections reused from the pool, requests in flight, failures.
fn balancer_metrics(d: &Delta) -> Vec<String> {
    let requests = d.counter("sluice_upstream_requests_total");
    if requests < 1.0 {
        return Vec::new();
    }
    let opened = d.counter("sluice_upstream_connections_opened_total");
    let failed = d.counter(crate::sample::LB_FAILED);
    let in_flight = d.series("sluice_upstream_requests_in_flight");
    let mean = in_flight.iter().sum::<f64>() / in_flight.len().max(1) as f64;
    vec![format!(
        "{} (its /metrics): {requests:.0} requests to the servers, {:.0}% on reused connections, {mean:.1} in flight on average, {failed:.0} failed",
        d.info.name,
        pct((requests - opened).max(0.0), requests)
    )]
}

/// Findings that come with any verdict: a balancer opening a connection per request.
/// When that balancer's CPU is the saturated resource, the cause is named instead.
fn findings(deltas: &[Delta], resources: &mut [Resource]) -> Vec<String> {
    let apps: Vec<&Delta> = deltas.iter().filter(|d| d.info.tier == "app").collect();
    let opened: f64 = apps.iter().map(|d| d.counter("connections")).sum();
    let requests: f64 = apps.iter().map(|d| d.counter("requests")).sum();
    let time_wait: u64 = apps.iter().map(|d| d.b.tcp.time_wait).sum();
    if requests < 1.0 || opened / requests < 0.5 {
        return Vec::new();
    }
    let finding = format!(
        "upstream keep-alive is off: {:.2} new connections to the app servers per request; {time_wait} sockets in TIME_WAIT",
        opened / requests
    );
    if let Some(lb) = resources
        .iter_mut()
        .find(|r| r.tier == "lb" && r.resource == "cpu" && r.saturated)
    {
        lb.resource = "keepalive".into();
        lb.label = "the balancer's CPU, spent opening a new upstream connection per request (keep-alive off),".into();
        lb.evidence.push(finding.clone());
        lb.enlarge = Some("upstream keep-alive on".into());
    }
    vec![finding]
}

/// Tasks waited for a CPU in a fifth of the step or more (PSI) while no process was
/// at its CPU budget: the tiers' CPUs are taken by others on the machine (seed 000's
/// first architecture: nginx starved by its neighbours). PSI is machine-wide here
/// (cgroup v1 has none per group), so it is a finding, never a verdict.
fn starved(pressure: Option<f64>, resources: &[Resource]) -> Option<String> {
    let p = pressure.filter(|p| *p >= 20.0)?;
    let busiest = resources
        .iter()
        .filter(|r| r.resource == "cpu")
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))?;
    (busiest.utilisation < 0.7).then(|| {
        format!(
            "the machine's CPUs were contended in {p}% of the step (PSI) while no tier used 70% of its budget (the busiest: {}, {:.0}%): other processes on this machine take the CPU",
            busiest.label,
            busiest.utilisation * 100.0
        )
    })
}

/// Messages lost between users of one room: the balancer sent them to different
/// servers, whose brokers do not share subscriptions. A finding with any verdict, and
/// the verdict itself when no tier was saturated.
fn lost_messages(load: Load, verdict: Verdict, findings: &mut Vec<String>) -> Verdict {
    let Some(lost) = load.lost_pct.filter(|l| *l > 1.0) else {
        return verdict;
    };
    let finding = format!(
        "{lost}% of STOMP message copies were lost: users of one room reached different servers, whose brokers do not share subscriptions; hash on the room (balance = \"hash\", hash_key = \"$arg_room\")"
    );
    findings.push(finding.clone());
    if verdict.tier.is_some() {
        return verdict;
    }
    Verdict {
        tier: Some("lb".into()),
        resource: Some("balance".into()),
        summary: format!("the balancer split rooms over servers: {lost}% of messages lost"),
        evidence: vec![finding],
    }
}

/// Saturated CPU first, by utilisation; else the deepest saturated pool or cap.
fn choose(resources: &[Resource]) -> Verdict {
    let depth = |r: &Resource| match (r.tier.as_str(), r.resource.as_str()) {
        ("db", _) => 4,
        (_, "db_pool") => 3,
        (_, "threads") => 2,
        (_, "connections") => 1,
        _ => 0,
    };
    // A whole machine's CPU (node_exporter) is full when a process on it is: the
    // process, when one is saturated too, is the more useful name.
    let hard = resources
        .iter()
        .filter(|r| r.saturated && matches!(r.resource.as_str(), "cpu" | "keepalive"))
        .max_by(|a, b| {
            (!a.machine, a.utilisation)
                .partial_cmp(&(!b.machine, b.utilisation))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    let soft = || {
        resources.iter().filter(|r| r.saturated).max_by(|a, b| {
            depth(a)
                .cmp(&depth(b))
                .then(a.utilisation.total_cmp(&b.utilisation))
        })
    };
    match hard.or_else(soft) {
        Some(r) => Verdict {
            tier: Some(r.tier.clone()),
            resource: Some(r.resource.clone()),
            summary: format!("{} was saturated", r.label),
            evidence: r
                .evidence
                .iter()
                .cloned()
                .chain(also_saturated(resources, r))
                .collect(),
        },
        None => {
            let top = resources
                .iter()
                .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation));
            Verdict {
                tier: None,
                resource: None,
                summary: match top {
                    Some(r) => format!(
                        "no tier was saturated (the busiest: {}, {:.0}%): more users would load them further",
                        r.label,
                        r.utilisation * 100.0
                    ),
                    None => "no tier was sampled".into(),
                },
                evidence: top.map(|r| r.evidence.clone()).unwrap_or_default(),
            }
        }
    }
}

/// The other saturated resources (not `named`'s kind on another process), so a reader
/// sees what was close.
fn also_saturated(resources: &[Resource], named: &Resource) -> Option<String> {
    // One entry per kind of resource: the app servers' pools share a label, and the
    // fullest of them speaks for the rest.
    let mut fullest: Vec<(&str, f64)> = Vec::new();
    for o in resources.iter().filter(|o| o.saturated) {
        if o.tier == named.tier && o.resource == named.resource {
            continue;
        }
        match fullest.iter_mut().find(|(label, _)| *label == o.label) {
            Some((_, u)) => *u = u.max(o.utilisation),
            None => fullest.push((&o.label, o.utilisation)),
        }
    }
    let others: Vec<String> = fullest
        .iter()
        .map(|(label, u)| format!("{label} ({:.0}%)", u * 100.0))
        .collect();
    (!others.is_empty()).then(|| format!("also saturated: {}", others.join(", ")))
}

/// The runner-up to `named`: the most used resource of another kind or tier.
pub fn runner_up<'r>(resources: &'r [Resource], named: &Verdict) -> Option<&'r Resource> {
    resources
        .iter()
        .filter(|r| {
            Some(&r.tier) != named.tier.as_ref() || Some(&r.resource) != named.resource.as_ref()
        })
        .filter(|r| r.enlarge.is_some())
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))
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
mod tests {
    use super::*;
    use crate::sample::{exposition_counters, ProcReading, Reading};

    /// A reading of one process at `t` whose exporter said `text`.
    fn reading(t: f64, cpu_s: f64, text: &str) -> Reading {
        Reading {
            t,
            procs: vec![ProcReading {
                cpu_s,
                counters: exposition_counters(text),
                ..ProcReading::default()
            }],
            ..Reading::default()
        }
    }

    #[test]
    fn a_spring_boot_app_waiting_on_hikari_is_named_for_its_database_pool() {
        // Micrometer's names, as Spring Boot's /actuator/prometheus writes them.
        let full = "# TYPE hikaricp_connections_active gauge\nhikaricp_connections_active{pool=\"HikariPool-1\"} 10.0\nhikaricp_connections_max{pool=\"HikariPool-1\"} 10.0\nhikaricp_connections_pending{pool=\"HikariPool-1\"} 7.0\ntomcat_threads_busy_threads{name=\"http-nio-8080\"} 40.0\ntomcat_threads_config_max_threads{name=\"http-nio-8080\"} 200.0\n";
        let readings: Vec<Reading> = (0..5)
            .map(|i| reading(i as f64, 0.2 * i as f64, full))
            .collect();
        let procs = [ProcInfo {
            name: "app".into(),
            tier: "app".into(),
            budget_cores: 2.0,
            budget: "the machine's 2 cores".into(),
        }];
        let load = Load {
            users: 50,
            think_s: 0.0,
            tps: 500.0,
            mean_ms: 100.0,
            requests: 2000,
            errors: 0,
            generator_cores: 1.0,
            littles_law: true,
            lost_pct: None,
            balancer_limited: false,
        };
        let j = judge(&procs, &readings, load);
        assert_eq!(j.verdict.tier.as_deref(), Some("app"), "{:?}", j.verdict);
        assert_eq!(
            j.verdict.resource.as_deref(),
            Some("db_pool"),
            "{:?}",
            j.verdict
        );
        let threads = j
            .resources
            .iter()
            .find(|r| r.resource == "threads")
            .unwrap();
        assert_eq!((threads.utilisation, threads.saturated), (0.2, false));
        // The CPU, 10% of its budget, is not what limits it.
        let cpu = j.resources.iter().find(|r| r.resource == "cpu").unwrap();
        assert!(!cpu.saturated && cpu.utilisation < 0.2, "{cpu:?}");
        // An idle pool names nothing.
        let idle = full.replace("} 7.0", "} 0.0").replace(
            "active{pool=\"HikariPool-1\"} 10.0",
            "active{pool=\"HikariPool-1\"} 2.0",
        );
        let readings: Vec<Reading> = (0..5)
            .map(|i| reading(i as f64, 0.2 * i as f64, &idle))
            .collect();
        assert_eq!(judge(&procs, &readings, load).verdict.tier, None);
    }
}
