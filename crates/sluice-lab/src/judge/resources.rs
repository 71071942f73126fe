//! The resources of one step, each judged against its own budget (the USE method):
//! a process's CPU, its pools (counters of the simulated tiers, or an exporter's
//! gauges), its connection cap; the balancer's own metrics as evidence beside its CPU.

use super::thresholds::{
    CAP_HELD_SHARE, CAP_MEAN_FULL, CPU_SATURATED, CPU_THROTTLED_PCT, CPU_THROTTLED_UTIL, ENLARGE,
    GAUGE_BUSY_ALONE, GAUGE_PENDING_SHARE, POOL_BUSY, POOL_WAITED,
};
use super::{cores, pct, queue, round2, tier_word, Delta, Kind, Load, Resource};

/// Every resource of every process, with the balancer's own metrics beside its CPU.
pub(super) fn resources(deltas: &[Delta], load: Load) -> Vec<Resource> {
    deltas.iter().flat_map(|d| of_process(d, load)).collect()
}

/// One process's resources, its own metrics as evidence beside its CPU: sluice's beside
/// its CPU, Redis's beside its command thread (or, read remotely, its CPU).
fn of_process(d: &Delta, load: Load) -> Vec<Resource> {
    let mut own: Vec<Resource> = cpu(d).into_iter().collect();
    own.extend(busiest_thread(d));
    own.extend(pool(d, Kind::ThreadPool, load));
    own.extend(pool(d, Kind::DbPool, load));
    own.extend(cap(d));
    own.extend(super::backlog::resource(d));
    own.extend(exported_pools(d));
    own.extend(queue::resource(d, load));
    if let Some(cpu) = own.iter_mut().find(|r| r.resource == Kind::Cpu) {
        cpu.evidence.extend(balancer_metrics(d));
    }
    let thread_or_cpu = own
        .iter()
        .rposition(|r| matches!(r.resource, Kind::BusiestThread | Kind::Cpu));
    if let Some(i) = thread_or_cpu {
        own[i].evidence.extend(redis_metrics(d));
    }
    own
}

/// A process's busiest thread against one core: a single-threaded process (nginx with
/// one worker, Redis, Node.js, a Python server) is full at one core however many the
/// machine has. Only where its budget is more than a core (else that budget says it).
fn busiest_thread(d: &Delta) -> Option<Resource> {
    if d.info.budget_cores <= 1.0 {
        return None;
    }
    let (tid, used) =
        d.b.threads
            .iter()
            .map(|(tid, b)| (*tid, b - d.a.threads.get(tid).copied().unwrap_or(*b)))
            .max_by(|x, y| x.1.total_cmp(&y.1))?;
    let u = used / d.seconds;
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: Kind::BusiestThread,
        label: thread_label(d),
        utilisation: round2(u),
        saturated: u >= CPU_SATURATED,
        evidence: vec![format!(
            "{}: its thread {tid} used {u:.2} of one core, the process {:.2} of its {}",
            d.info.name,
            d.cpu_util() * d.info.budget_cores,
            cores(d.info.budget_cores)
        )],
        enlarge: None,
        machine: false,
    })
}

/// "the balancer's one worker thread (one core at most)": what the busiest thread is,
/// where the process says how many workers it runs (sluice's `sluice_workers`), so a
/// reader sees one worker as the cause, not the machine's CPU; else only its ceiling.
fn thread_label(d: &Delta) -> String {
    let who = tier_word(&d.info.tier);
    match workers(d) {
        Some(1) => format!("{who}'s one worker thread (one core at most)"),
        Some(n) => format!("{who}'s busiest thread (one of its {n} workers, one core at most)"),
        None => format!("{who}'s busiest thread (one core at most)"),
    }
}

/// The worker threads a process says it runs: sluice's `sluice_workers` (its
/// `/metrics`, read with `--tier lb=PID@URL`); `None` where it does not say.
pub(super) fn workers(d: &Delta) -> Option<u64> {
    Some(d.gauge("sluice_workers")?.round() as u64).filter(|n| *n > 0)
}

fn cpu(d: &Delta) -> Option<Resource> {
    if d.info.budget_cores <= 0.0 {
        return None; // an exporter without a CPU count
    }
    if d.a.cpu_s == 0.0 && d.b.cpu_s == 0.0 {
        return cpu_usage_gauge(d); // an exporter without a CPU-time counter
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
        resource: Kind::Cpu,
        label: cpu_label(d),
        utilisation: round2(u),
        saturated: u >= CPU_SATURATED
            || (u >= CPU_THROTTLED_UTIL && throttled >= CPU_THROTTLED_PCT),
        evidence,
        enlarge: crate::budget::resizable(&d.info.budget).then(|| {
            format!(
                "CPU budget {} -> {} cores",
                d.info.budget_cores,
                round2(d.info.budget_cores * ENLARGE)
            )
        }),
        machine: d.info.budget.contains("node_exporter"),
    })
}

/// "the app server's CPU (2 cores, cgroup v1 cpu quota)".
fn cpu_label(d: &Delta) -> String {
    format!(
        "{}'s CPU ({}, {})",
        tier_word(&d.info.tier),
        cores(d.info.budget_cores),
        d.info.budget
    )
}

/// A JVM whose Micrometer has `process_cpu_usage` (its recent share of the CPUs it
/// sees) but no CPU-time counter (Micrometer before 1.11's `process_cpu_time_ns_total`):
/// the gauge's mean under load, less exact than a counter, said so.
fn cpu_usage_gauge(d: &Delta) -> Option<Resource> {
    let usage = d.mean("process_cpu_usage")?;
    let cpus = d.gauge("system_cpu_count").unwrap_or(d.info.budget_cores);
    // To the percent: what a gauge of recent use can say.
    let u = round2(usage * cpus / d.info.budget_cores);
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: Kind::Cpu,
        label: cpu_label(d),
        utilisation: u,
        saturated: u >= CPU_SATURATED,
        evidence: vec![format!(
            "{}: process_cpu_usage averaged {:.0}% of its {} (a gauge of recent use read each second, not a CPU-time counter)",
            d.info.name,
            u * 100.0,
            cores(d.info.budget_cores)
        )],
        enlarge: None,
        machine: false,
    })
}

/// The simulated app's counters of one pool: its size, busy time, waits, wait time and
/// the requests it served.
struct PoolKeys {
    size: &'static str,
    busy_ms: &'static str,
    waits: &'static str,
    wait_ms: &'static str,
    served: &'static str,
    /// What it holds, in words.
    what: &'static str,
}

/// Worker threads (`pool_*`) and database connections (`db_pool_*`).
const THREAD_POOL: PoolKeys = PoolKeys {
    size: "pool_threads",
    busy_ms: "pool_busy_ms",
    waits: "queue_waits",
    wait_ms: "queue_wait_ms",
    served: "pool_entered",
    what: "threads",
};
const DB_POOL: PoolKeys = PoolKeys {
    size: "db_pool_size",
    busy_ms: "db_pool_busy_ms",
    waits: "db_waits",
    wait_ms: "db_wait_ms",
    served: "db_queries",
    what: "database connections",
};

/// A pool of the simulated app's counters: `kind` is [`Kind::ThreadPool`] or
/// [`Kind::DbPool`].
fn pool(d: &Delta, kind: Kind, load: Load) -> Option<Resource> {
    let keys = if kind == Kind::ThreadPool {
        &THREAD_POOL
    } else {
        &DB_POOL
    };
    let size = d.gauge(keys.size).filter(|s| *s > 0.0)?;
    let u = d.counter(keys.busy_ms) / (d.seconds * 1000.0 * size);
    let (waits, wait_ms, served) = (
        d.counter(keys.waits),
        d.counter(keys.wait_ms),
        d.counter(keys.served),
    );
    let mean_wait = if served > 0.0 { wait_ms / served } else { 0.0 };
    let mut evidence = vec![format!(
        "{}'s {size} {} were {:.0}% busy",
        d.info.name,
        keys.what,
        u * 100.0
    )];
    if waits > 0.0 {
        evidence.push(format!(
            "{waits:.0} requests waited for one, {mean_wait:.1} ms on average ({:.0}% of the response time)",
            pct(mean_wait, load.mean_ms)
        ));
    }
    let label = if kind == Kind::ThreadPool {
        format!("{}'s thread pool ({size} threads)", tier_word(&d.info.tier))
    } else {
        format!("the database pool ({size} connections per app server)")
    };
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: kind,
        label,
        utilisation: round2(u),
        saturated: u >= POOL_BUSY && waits >= POOL_WAITED * served,
        evidence,
        enlarge: Some(format!("{kind} {size} -> {}", (size * ENLARGE).ceil())),
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
        resource: Kind::ConnectionCap,
        label: format!("{}'s connection cap ({cap} connections)", tier_word(&d.info.tier)),
        utilisation: round2(mean_open / cap),
        saturated: (share >= CAP_HELD_SHARE || mean_open / cap >= CAP_MEAN_FULL) && queued > 0,
        evidence: vec![format!(
            "{} held its cap of {cap} connections in {:.0}% of the seconds sampled, with up to {queued} more waiting unaccepted in its listen queue",
            d.info.name,
            share * 100.0
        )],
        enlarge: Some(format!("connections {cap} -> {}", (cap * ENLARGE).ceil())),
        machine: false,
    })
}

/// Pools that exporters report as gauges, sampled each second: (resource, busy, size,
/// waiting). Micrometer's names (Spring Boot's `/actuator/prometheus`) and the JMX
/// exporter's usual Tomcat rule.
const EXPORTED_POOLS: &[(Kind, &str, &str, Option<&str>)] = &[
    (
        Kind::ThreadPool,
        "tomcat_threads_busy_threads",
        "tomcat_threads_config_max_threads",
        None,
    ),
    (
        Kind::ThreadPool,
        "tomcat_threadpool_currentthreadsbusy",
        "tomcat_threadpool_maxthreads",
        None,
    ),
    (
        Kind::DbPool,
        "hikaricp_connections_active",
        "hikaricp_connections_max",
        Some("hikaricp_connections_pending"),
    ),
];

/// A pool read from gauges: utilisation is the mean of busy over the size; saturated
/// at [`POOL_BUSY`] with requests pending in [`GAUGE_PENDING_SHARE`] of the samples (or,
/// without a pending gauge, at [`GAUGE_BUSY_ALONE`]).
fn exported_pools(d: &Delta) -> Vec<Resource> {
    let mut out = Vec::new();
    for &(kind, busy, size, pending) in EXPORTED_POOLS {
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
            Some(share) => u >= POOL_BUSY && share >= GAUGE_PENDING_SHARE,
            None => u >= GAUGE_BUSY_ALONE,
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
            resource: kind,
            label: format!(
                "{}'s {} ({max})",
                d.info.tier,
                if kind == Kind::ThreadPool {
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

/// What Redis's INFO says of a step: commands per second, clients blocked (BLPOP and
/// the like), clients against `maxclients`, connections refused.
fn redis_metrics(d: &Delta) -> Option<String> {
    let max_clients = d.gauge("redis_maxclients")?;
    let commands = d.counter("redis_total_commands_processed");
    let max = |k: &str| d.series(k).into_iter().fold(0.0, f64::max);
    Some(format!(
        "{} (its INFO): {:.0} commands/s, its command thread {:.2} of one core, up to {:.0} clients blocked, up to {:.0} of {:.0} clients connected, {:.0} connections refused",
        d.info.name,
        commands / d.seconds,
        d.counter(crate::redis::REDIS_CPU) / d.seconds,
        max("redis_blocked_clients"),
        max("redis_connected_clients"),
        max_clients,
        d.counter("redis_rejected_connections")
    ))
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
