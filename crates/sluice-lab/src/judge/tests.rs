//! The judge's rules on synthetic readings: each threshold of [`super::thresholds`] at
//! its value and either side of it, the order in which a saturated resource is chosen,
//! and the proof's bar. They run in milliseconds; the end-to-end runs in
//! `crates/sluice/tests/lab.rs` check the same rules on real tiers.

use super::choice::choose;
use super::findings::{blame_keepalive, keepalive_off, lost_messages, starved};
use super::proof::runner_up;
use super::thresholds::*;
use super::validity::{validity, GeneratorCpu};
use super::*;
use crate::sample::{exposition_counters, ProcReading, Reading};
use sluice_process::cpu_budget::Throttling;
use std::collections::BTreeMap;

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

/// One process of `tier` with a budget of one core.
fn one(tier: &str) -> Vec<ProcInfo> {
    vec![ProcInfo {
        name: format!("{tier}-1"),
        tier: tier.into(),
        budget_cores: 1.0,
        budget: "cgroup v1 cpu quota".into(),
        local: true,
    }]
}

/// A step of 10 users, 100 req/s at 100 ms: Little's law holds.
/// No request failed.
static NO_ERRORS: BTreeMap<String, u64> = BTreeMap::new();

fn load() -> Load<'static> {
    Load {
        users: 10,
        think_s: 0.0,
        tps: 100.0,
        mean_ms: 100.0,
        p50_ms: 95.0,
        p99_ms: 150.0,
        requests: 1000,
        errors: 0,
        error_kinds: &NO_ERRORS,
        generator_cores: 1.0,
        littles_law: true,
        lost_pct: None,
        balancer_limited: false,
    }
}

/// A 10 s step of one process from `start` to `end` (counters and gauges by name).
fn step(start: ProcReading, end: ProcReading) -> Vec<Reading> {
    [(0.0, start), (10.0, end)]
        .into_iter()
        .map(|(t, p)| Reading {
            t,
            procs: vec![p],
            ..Reading::default()
        })
        .collect()
}

fn counters(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The resource `kind` of the only process judged over `readings`.
fn resource(tier: &str, readings: &[Reading], kind: Kind) -> Resource {
    let judged = judge(&one(tier), readings, load());
    let found = judged.resources.iter().find(|r| r.resource == kind);
    found
        .unwrap_or_else(|| panic!("no {kind} in {:?}", judged.resources))
        .clone()
}

/// A CPU used `util` of its one-core budget over 10 s, throttled in `throttled` of 100
/// quota periods.
fn cpu_at(util: f64, throttled: u64) -> Resource {
    let start = ProcReading {
        cpu_s: 1.0,
        ..ProcReading::default()
    };
    let mut end = ProcReading {
        cpu_s: 1.0 + util * 10.0,
        ..ProcReading::default()
    };
    end.throttling.periods = 100;
    end.throttling.throttled = throttled;
    resource("app", &step(start, end), Kind::Cpu)
}

#[test]
fn cpu_is_saturated_at_its_threshold_or_throttled_at_the_lower_one() {
    let table = [
        (CPU_SATURATED - 0.01, 0, false),
        (CPU_SATURATED, 0, true),
        (CPU_SATURATED + 0.01, 0, true),
        (CPU_THROTTLED_UTIL - 0.01, CPU_THROTTLED_PCT as u64, false),
        (CPU_THROTTLED_UTIL, CPU_THROTTLED_PCT as u64, true),
        (CPU_THROTTLED_UTIL, CPU_THROTTLED_PCT as u64 - 1, false),
        (
            CPU_THROTTLED_UTIL + 0.01,
            CPU_THROTTLED_PCT as u64 + 1,
            true,
        ),
    ];
    for (util, throttled, saturated) in table {
        let r = cpu_at(util, throttled);
        assert_eq!(
            r.saturated, saturated,
            "CPU {util} throttled {throttled}%: {r:?}"
        );
    }
}

/// A pool of 10 (`pool_*` or `db_*` counters) busy `busy` of its thread-time over 10 s,
/// `waited` of its 1,000 requests having waited for it.
fn pool_at(prefix: &str, busy: f64, waited: f64) -> Resource {
    let keys = match prefix {
        "pool" => [
            "pool_threads",
            "pool_busy_ms",
            "queue_waits",
            "pool_entered",
        ],
        _ => ["db_pool_size", "db_pool_busy_ms", "db_waits", "db_queries"],
    };
    let end = ProcReading {
        counters: counters(&[
            (keys[0], 10.0),
            (keys[1], busy * 10.0 * 1000.0 * 10.0),
            (keys[2], waited * 1000.0),
            (keys[3], 1000.0),
        ]),
        ..ProcReading::default()
    };
    let start = ProcReading {
        counters: counters(&[(keys[0], 10.0)]),
        ..ProcReading::default()
    };
    let kind = if prefix == "pool" {
        Kind::ThreadPool
    } else {
        Kind::DbPool
    };
    resource("app", &step(start, end), kind)
}

#[test]
fn a_pool_is_saturated_busy_at_its_knee_with_requests_waiting() {
    let table = [
        (POOL_BUSY - 0.01, POOL_WAITED, false),
        (POOL_BUSY, POOL_WAITED, true),
        (POOL_BUSY, POOL_WAITED - 0.001, false),
        (POOL_BUSY + 0.01, POOL_WAITED + 0.01, true),
    ];
    for prefix in ["pool", "db"] {
        for (busy, waited, saturated) in table {
            let r = pool_at(prefix, busy, waited);
            assert_eq!(r.saturated, saturated, "{prefix} {busy} {waited}: {r:?}");
            assert!((r.utilisation - busy).abs() < 0.006, "{r:?}");
        }
    }
}

/// `inner`, readings taken under load, between a step's two edge readings of `idle` (as
/// a real step's are: read as the generator starts and stops its users), the first
/// inner one [`GAUGE_SETTLE_S`] after the start.
fn framed(inner: Vec<Reading>, idle: ProcReading) -> Vec<Reading> {
    let n = inner.len() as f64;
    let edge = |t: f64| Reading {
        t,
        procs: vec![idle.clone()],
        ..Reading::default()
    };
    let inner = inner.into_iter().enumerate().map(|(i, r)| Reading {
        t: GAUGE_SETTLE_S + i as f64,
        ..r
    });
    std::iter::once(edge(0.0))
        .chain(inner)
        .chain(std::iter::once(edge(GAUGE_SETTLE_S + n)))
        .collect()
}

/// A cap of 100 connections sampled 10 times, open as `open` says, with `queued`
/// connections waiting unaccepted at the busiest moment.
fn cap_at(open: &[f64], queued: u64) -> Resource {
    let readings: Vec<Reading> = open
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut p = ProcReading {
                counters: counters(&[("max_conns", 100.0), ("conns_open", *o)]),
                ..ProcReading::default()
            };
            p.tcp.accept_queue = if i == 5 { queued } else { 0 };
            Reading {
                t: i as f64,
                procs: vec![p],
                ..Reading::default()
            }
        })
        .collect();
    let idle = ProcReading {
        counters: counters(&[("max_conns", 100.0), ("conns_open", 0.0)]),
        ..ProcReading::default()
    };
    resource("app", &framed(readings, idle), Kind::ConnectionCap)
}

#[test]
fn a_cap_is_saturated_held_or_nearly_full_with_connections_queued() {
    let held = |n: usize, rest: f64| {
        let mut open = vec![rest; 10];
        open[..n].fill(100.0);
        open
    };
    let share = (CAP_HELD_SHARE * 10.0) as usize;
    let full = CAP_MEAN_FULL * 100.0;
    let table = [
        (held(share, 0.0), 3, true),
        (held(share - 1, 0.0), 3, false),
        (held(share, 0.0), 0, false),
        (vec![full; 10], 3, true),
        (vec![full - 1.0; 10], 3, false),
    ];
    for (open, queued, saturated) in table {
        let r = cap_at(&open, queued);
        assert_eq!(r.saturated, saturated, "{open:?} queued {queued}: {r:?}");
    }
}

/// A server sampled 10 times whose listen queue held `queued` connections in `waited`
/// of those seconds, using `cpu` of its one-core budget.
fn backlog_at(waited: usize, queued: u64, cpu: f64) -> Option<Resource> {
    // The step's edges (t = 0 and 11) and ten readings under load between them, the
    // first GAUGE_SETTLE_S after the start.
    let readings: Vec<Reading> = (0..12)
        .map(|t| {
            let mut p = ProcReading {
                cpu_s: cpu * t as f64,
                ..ProcReading::default()
            };
            let under_load = (1..=10).contains(&t);
            p.tcp.accept_queue = if under_load && t <= waited { queued } else { 0 };
            Reading {
                t: t as f64 * GAUGE_SETTLE_S,
                procs: vec![p],
                ..Reading::default()
            }
        })
        .collect();
    let judged = judge(&one("app"), &readings, load());
    judged
        .resources
        .into_iter()
        .find(|r| r.resource == Kind::Workers)
}

#[test]
fn workers_it_does_not_publish_are_all_busy_with_its_listen_queue_full_and_cpu_to_spare() {
    let share = (WORKERS_QUEUED_SHARE * 10.0) as usize;
    let table = [
        (share, 28, 0.2, true),
        (share - 1, 28, 0.2, false),
        // Its CPU full: what the workers wait on is the CPU, named as such.
        (10, 28, CPU_SATURATED + 0.05, false),
    ];
    for (waited, queued, cpu, saturated) in table {
        let r = backlog_at(waited, queued, cpu).unwrap();
        assert_eq!(r.saturated, saturated, "{waited} {cpu}: {r:?}");
    }
    let r = backlog_at(10, 28, 0.2).unwrap();
    assert!(
        r.evidence[0].contains("held 28 connections waiting"),
        "{r:?}"
    );
    assert!(
        backlog_at(0, 0, 0.2).is_none(),
        "never a queue: nothing to say"
    );
    // A dependency listed as its own tier is deeper than the app waiting on it.
    let app = saturated("app", Kind::Workers, 1.0, false);
    let dep = saturated("payments", Kind::Workers, 1.0, false);
    assert_eq!(
        chosen(&[app.clone(), dep]),
        named("payments", Kind::Workers)
    );
    let pool = saturated("app", Kind::DbPool, 1.0, false);
    assert_eq!(chosen(&[app, pool]), named("app", Kind::DbPool));
}

/// Gauges as Spring Boot exports them, over 10 samples: HikariCP `active` of 10 with
/// `pending` above 0 in `pending_in` of them, Tomcat's `busy` threads of 100.
fn gauges_at(active: f64, pending_in: usize, busy: f64) -> Vec<Resource> {
    let readings: Vec<Reading> = (0..10)
        .map(|i| {
            let pending = if i < pending_in { 3.0 } else { 0.0 };
            let text = format!(
                "hikaricp_connections_active {active}\nhikaricp_connections_max 10\nhikaricp_connections_pending {pending}\ntomcat_threads_busy_threads {busy}\ntomcat_threads_config_max_threads 100\n"
            );
            reading(i as f64, 0.0, &text)
        })
        .collect();
    // The step's edges read an idle pool: they must not count (issue 29: four of four
    // threads busy for a whole 10 s step read 88%).
    let idle = reading(0.0, 0.0, "hikaricp_connections_active 0\nhikaricp_connections_max 10\nhikaricp_connections_pending 0\ntomcat_threads_busy_threads 0\ntomcat_threads_config_max_threads 100\n");
    judge(
        &one("app"),
        &framed(readings, idle.procs[0].clone()),
        load(),
    )
    .resources
}

#[test]
fn exported_pools_are_saturated_busy_with_requests_pending_or_nearly_full() {
    let pending = (GAUGE_PENDING_SHARE * 10.0) as usize;
    let hikari = POOL_BUSY * 10.0;
    let tomcat = GAUGE_BUSY_ALONE * 100.0;
    let table = [
        (hikari, pending, tomcat, true, true),
        (hikari - 0.1, pending, tomcat - 1.0, false, false),
        (hikari, pending - 1, tomcat + 1.0, false, true),
    ];
    for (active, pending_in, busy, db_saturated, threads_saturated) in table {
        let resources = gauges_at(active, pending_in, busy);
        let of = |kind: Kind| resources.iter().find(|r| r.resource == kind).unwrap();
        assert_eq!(of(Kind::DbPool).saturated, db_saturated, "{resources:?}");
        assert_eq!(
            of(Kind::ThreadPool).saturated,
            threads_saturated,
            "{resources:?}"
        );
    }
}

#[test]
fn a_step_is_invalid_when_the_generator_is_busy_or_littles_law_fails() {
    let users = load().users as f64;
    let cpu = |util, throttled_pct| GeneratorCpu {
        util,
        throttled_pct,
    };
    let table = [
        (cpu(GENERATOR_BUSY - 0.01, 0.0), users, true),
        (cpu(GENERATOR_BUSY, 0.0), users, false),
        // Its quota stopped it in most periods: short of CPU below the busy mark.
        (cpu(CPU_THROTTLED_UTIL, CPU_THROTTLED_PCT), users, false),
        (
            cpu(CPU_THROTTLED_UTIL, CPU_THROTTLED_PCT - 1.0),
            users,
            true,
        ),
        (cpu(CPU_THROTTLED_UTIL - 0.01, 100.0), users, true),
        (cpu(0.5, 0.0), users * (1.0 + LITTLES_LAW_TOLERANCE), true),
        (
            cpu(0.5, 0.0),
            users * (1.0 + LITTLES_LAW_TOLERANCE) + 0.1,
            false,
        ),
        (
            cpu(0.5, 0.0),
            users * (1.0 - LITTLES_LAW_TOLERANCE) - 0.1,
            false,
        ),
    ];
    for (generator, in_system, valid) in table {
        let why = validity(load(), generator, in_system);
        assert_eq!(why.is_none(), valid, "{generator:?} {in_system}: {why:?}");
    }
    let why = validity(load(), cpu(0.8, 90.0), users).unwrap();
    assert!(
        why.contains("throttled in 90% of its quota periods"),
        "{why}"
    );
    // Little's law is not asked of a scenario, whose users think inside their steps.
    let scenario = Load {
        littles_law: false,
        ..load()
    };
    assert_eq!(validity(scenario, cpu(0.5, 0.0), 3.0), None);
}

#[test]
fn keep_alive_off_is_found_from_new_connections_per_request() {
    let apps = |per_request: f64| {
        let end = ProcReading {
            counters: counters(&[("connections", per_request * 1000.0), ("requests", 1000.0)]),
            ..ProcReading::default()
        };
        step(ProcReading::default(), end)
    };
    for (per_request, found) in [
        (KEEPALIVE_OFF_PER_REQUEST - 0.01, false),
        (KEEPALIVE_OFF_PER_REQUEST, true),
    ] {
        let judged = judge(&one("app"), &apps(per_request), load());
        let said = judged
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::KeepaliveOff);
        assert_eq!(said, found, "{per_request}: {:?}", judged.findings);
    }
    // The balancer's saturated CPU is then named for its keep-alive.
    let mut resources = vec![saturated("lb", Kind::Cpu, 0.95, false)];
    let procs = one("app");
    let readings = apps(1.0);
    let deltas: Vec<Delta> = vec![Delta {
        info: &procs[0],
        a: &readings[0].procs[0],
        b: &readings[1].procs[0],
        seconds: 10.0,
        index: 0,
        readings: &readings,
    }];
    let off = keepalive_off(&deltas, load()).expect("keep-alive off");
    blame_keepalive(&mut resources, &off);
    assert_eq!(resources[0].resource, Kind::KeepaliveOff);
}

#[test]
fn keep_alive_off_is_found_from_sluices_metrics_or_the_app_servers_time_wait() {
    // sluice in front opened 900 connections for 1000 attempts.
    let lb = ProcReading {
        counters: counters(&[
            ("sluice_upstream_connections_opened_total", 900.0),
            ("sluice_upstream_request_duration_seconds_count", 1000.0),
        ]),
        ..ProcReading::default()
    };
    let judged = judge(&one("lb"), &step(ProcReading::default(), lb), load());
    assert!(judged
        .findings
        .iter()
        .any(|f| f.text.contains("0.90 new connections from the balancer")));
    // An app server that publishes nothing, 100 req/s for a 10 s run: 1,000 sockets in
    // TIME_WAIT on its port is one closed connection a request; 100 is a tenth.
    for (time_wait, found) in [(1000, true), (100, false)] {
        let mut end = ProcReading::default();
        end.tcp.time_wait = time_wait;
        let judged = judge(&one("app"), &step(ProcReading::default(), end), load());
        let said = judged
            .findings
            .iter()
            .any(|f| f.kind == FindingKind::KeepaliveOff);
        assert_eq!(said, found, "{time_wait}: {:?}", judged.findings);
    }
}

#[test]
fn other_processes_take_the_cpu_when_it_is_contended_and_no_tier_is_busy() {
    let table = [
        (CONTENDED_PSI_PCT, CONTENDED_TIER_BELOW - 0.01, true),
        (CONTENDED_PSI_PCT - 0.1, CONTENDED_TIER_BELOW - 0.01, false),
        (CONTENDED_PSI_PCT, CONTENDED_TIER_BELOW, false),
    ];
    for (psi, busiest, found) in table {
        let resources = [resource_of("app", Kind::Cpu, busiest, false)];
        assert_eq!(
            starved(Some(psi), &resources, None).is_some(),
            found,
            "{psi} {busiest}"
        );
    }
    assert_eq!(
        starved(None, &[resource_of("app", Kind::Cpu, 0.1, false)], None),
        None
    );
    // "Other processes" are only those that are neither a tier nor the generator, and
    // only when they used OTHER_PROCESSES_PCT of the machine or more.
    let resources = [resource_of("app", Kind::Cpu, 0.5, false)];
    let split = |other: f64| MachineCpu {
        cores: 2.0,
        busy: 1.9,
        tiers: 1.9 - other - 0.1,
        generator: 0.1,
        other,
    };
    let edge = 2.0 * OTHER_PROCESSES_PCT / 100.0;
    let found = starved(Some(90.0), &resources, Some(&split(edge)))
        .unwrap()
        .text;
    assert!(found.contains("other processes on this machine"), "{found}");
    let found = starved(Some(90.0), &resources, Some(&split(edge - 0.01)))
        .unwrap()
        .text;
    assert!(
        found.contains("the lab's own tiers and load generator"),
        "{found}"
    );
}

/// A process on this 2-core machine without a budget of its own.
fn machine(name: &str, tier: &str) -> ProcInfo {
    ProcInfo {
        name: name.into(),
        tier: tier.into(),
        budget_cores: 2.0,
        budget: "the machine's 2 cores".into(),
        local: true,
    }
}

#[test]
fn each_balancers_own_metrics_are_evidence_beside_its_own_cpu() {
    // Two sluice processes of one tier: each one's /metrics beside its CPU, not both
    // beside the first's.
    let procs = [
        ProcInfo {
            name: "lb-1".into(),
            ..one("lb").remove(0)
        },
        ProcInfo {
            name: "lb-2".into(),
            ..one("lb").remove(0)
        },
    ];
    let at = |t: f64| Reading {
        t,
        procs: [100.0, 300.0]
            .iter()
            .map(|rate| ProcReading {
                cpu_s: 0.2 * t,
                counters: counters(&[("sluice_upstream_requests_total", rate * t)]),
                ..ProcReading::default()
            })
            .collect(),
        ..Reading::default()
    };
    let readings: Vec<Reading> = (0..=10).map(|i| at(i as f64)).collect();
    let judged = judge(&procs, &readings, load());
    let cpus: Vec<&Resource> = judged
        .resources
        .iter()
        .filter(|r| r.resource == Kind::Cpu)
        .collect();
    for (cpu, name) in cpus.iter().zip(["lb-1", "lb-2"]) {
        let own = format!("{name} (its /metrics)");
        let said: Vec<&String> = cpu
            .evidence
            .iter()
            .filter(|e| e.contains("/metrics"))
            .collect();
        assert!(said.len() == 1 && said[0].starts_with(&own), "{cpus:?}");
    }
}

#[test]
fn a_machine_full_of_other_processes_says_so_in_its_verdict() {
    // Two tiers without budgets at 0.4 cores each, the machine full: 1.1 cores were
    // some other process's (a CI host's neighbour), which the verdict must name.
    let procs = [machine("app[pid 1]", "app"), machine("lb[pid 2]", "lb")];
    let at = |t: f64| Reading {
        t,
        procs: [0.42, 0.38]
            .iter()
            .map(|cores| ProcReading {
                cpu_s: cores * t,
                ..ProcReading::default()
            })
            .collect(),
        generator_cpu_s: 0.05 * t,
        machine_busy_s: Some(1.95 * t),
        ..Reading::default()
    };
    let readings: Vec<Reading> = (0..=10).map(|i| at(i as f64)).collect();
    let v = judge(&procs, &readings, load()).verdict;
    assert_eq!(v.resource, Some(Kind::Cpu), "{v:?}");
    assert!(
        v.summary
            .contains("shared by tiers without budgets: app 0.42, lb 0.38, other processes 1.10"),
        "{v:?}"
    );
}

#[test]
fn a_balancer_on_one_worker_is_said_to_be_on_its_one_thread() {
    // sluice with `workers = 1` (its /metrics says so) beside its app servers on a full
    // machine: its share is said with its one thread, and so is its busiest thread.
    let procs = [machine("lb[pid 2]", "lb"), machine("app[pid 1]", "app")];
    // (sluice_workers, what its share says, its busiest thread's label)
    let table = [
        (
            Some(1.0),
            "lb 0.58 on its one worker thread (one core at most), app 0.47",
            "the balancer's one worker thread (one core at most)",
        ),
        (
            Some(4.0),
            "lb 0.58, app 0.47",
            "the balancer's busiest thread (one of its 4 workers, one core at most)",
        ),
        (
            None,
            "lb 0.58, app 0.47",
            "the balancer's busiest thread (one core at most)",
        ),
    ];
    for (workers, share, thread) in table {
        let at = |t: f64| Reading {
            t,
            procs: [0.58, 0.47]
                .iter()
                .map(|cores| ProcReading {
                    cpu_s: cores * t,
                    threads: [(7, cores * t)].into_iter().collect(),
                    counters: counters(&workers.map_or(vec![], |w| vec![("sluice_workers", w)])),
                    ..ProcReading::default()
                })
                .collect(),
            generator_cpu_s: 0.29 * t,
            machine_busy_s: Some(1.99 * t),
            ..Reading::default()
        };
        let readings: Vec<Reading> = (0..=10).map(|i| at(i as f64)).collect();
        let judged = judge(&procs, &readings, load());
        let v = &judged.verdict;
        assert_eq!(v.tier.as_deref(), Some("lb"), "{v:?}");
        assert!(v.summary.contains(share), "{workers:?}: {v:?}");
        let busiest = judged
            .resources
            .iter()
            .find(|r| r.tier == "lb" && r.resource == Kind::BusiestThread)
            .unwrap();
        assert_eq!(busiest.label, thread);
    }
}

#[test]
fn tiers_sharing_a_machine_without_budgets_are_judged_together_against_it() {
    // Spring PetClinic as tried: two JVMs and PostgreSQL on one 2-core host, none in a
    // budget; the JVMs used 0.86 and 0.96 cores (43% and 48% of the machine each).
    let procs = [
        machine("app[pid 1]", "app"),
        machine("app[pid 2]", "app"),
        machine("db[pid 3]", "db"),
    ];
    let at = |t: f64| Reading {
        t,
        procs: [0.86, 0.96, 0.05]
            .iter()
            .map(|cores| ProcReading {
                cpu_s: cores * t,
                ..ProcReading::default()
            })
            .collect(),
        generator_cpu_s: 0.06 * t,
        machine_busy_s: Some(1.95 * t),
        pressure_us: Some((0.94 * t * 1e6) as u64),
        ..Reading::default()
    };
    let readings: Vec<Reading> = (0..=10).map(|i| at(i as f64)).collect();
    let judged = judge(&procs, &readings, load());
    let v = &judged.verdict;
    assert_eq!(
        (v.tier.as_deref(), v.resource),
        (Some("app"), Some(Kind::Cpu)),
        "{v:?}"
    );
    let together = judged
        .resources
        .iter()
        .find(|r| r.label.starts_with("the app tier's CPU"))
        .unwrap();
    assert!(
        together.saturated && (together.utilisation - 0.91).abs() < 0.01,
        "{together:?}"
    );
    let m = judged.machine_cpu.as_ref().unwrap();
    assert_eq!((m.tiers, m.generator, m.other), (1.87, 0.06, 0.02), "{m:?}");
    // Not put down to "other processes": they were the tiers' own.
    assert!(
        judged
            .findings
            .iter()
            .all(|f| !f.text.contains("other processes")),
        "{:?}",
        judged.findings
    );
}

#[test]
fn lost_messages_name_the_balancer_only_when_no_tier_is_saturated() {
    for (lost, found) in [(LOST_MESSAGES_PCT, false), (LOST_MESSAGES_PCT + 0.1, true)] {
        let load = Load {
            lost_pct: Some(lost),
            ..load()
        };
        let mut findings = Vec::new();
        let verdict = lost_messages(load, Verdict::default(), &mut findings);
        assert_eq!(findings.len(), usize::from(found), "{lost}");
        assert_eq!(verdict.tier.is_some(), found, "{lost}: {verdict:?}");
    }
    let named = Verdict {
        tier: Some("db".into()),
        ..Verdict::default()
    };
    let load = Load {
        lost_pct: Some(50.0),
        ..load()
    };
    let kept = lost_messages(load, named, &mut Vec::new());
    assert_eq!(kept.tier.as_deref(), Some("db"));
}

fn resource_of(tier: &str, kind: Kind, utilisation: f64, machine: bool) -> Resource {
    Resource {
        tier: tier.into(),
        resource: kind,
        label: format!("{tier} {kind}"),
        utilisation,
        saturated: false,
        evidence: vec![format!("{tier} {kind} evidence")],
        enlarge: Some("larger".into()),
        machine,
    }
}

fn saturated(tier: &str, kind: Kind, utilisation: f64, machine: bool) -> Resource {
    Resource {
        saturated: true,
        ..resource_of(tier, kind, utilisation, machine)
    }
}

/// A database's sessions over a 10 s step of 40 samples: `waited` of them with
/// sessions waiting on a lock, `waiting` session-samples waiting, `running` running.
fn lock_waits(waited: u64, waiting: u64, running: u64) -> Resource {
    let mut db = crate::database::DbReading {
        samples: 40,
        ..Default::default()
    };
    db.sessions.insert("lock".into(), waiting);
    db.sessions.insert("running".into(), running);
    db.samples_with.insert("lock".into(), waited);
    db.events.insert("Lock:transactionid".into(), waiting);
    let judged = db_step(db, 0);
    let locks = judged.resources.iter().find(|r| r.resource == Kind::Locks);
    locks.expect("a lock resource").clone()
}

#[test]
fn a_lock_is_saturated_waited_on_in_most_samples_for_most_of_the_time() {
    let waited = (DB_WAIT_SHARE * 40.0) as u64;
    // Session-samples: waits of `of_active` against 100 running-or-waiting.
    let at = |of_active: f64| (of_active * 100.0) as u64;
    let table = [
        (waited, at(DB_WAIT_OF_ACTIVE), true),
        (waited - 1, at(DB_WAIT_OF_ACTIVE), false),
        (waited, at(DB_WAIT_OF_ACTIVE) - 1, false),
        (40, 95, true),
    ];
    for (waited, waiting, saturated) in table {
        let r = lock_waits(waited, waiting, 100 - waiting);
        assert_eq!(r.saturated, saturated, "{waited} {waiting}: {r:?}");
        assert_eq!(r.label, "the database's row lock");
    }
}

/// A step of a database whose samples over it add up to `db`, with `errors` failed
/// requests: the judgement.
fn db_step(db: crate::database::DbReading, errors: u64) -> Judged {
    let start = ProcReading {
        db: Some(Default::default()),
        ..ProcReading::default()
    };
    let end = ProcReading {
        db: Some(db),
        ..ProcReading::default()
    };
    judge(&one("db"), &step(start, end), Load { errors, ..load() })
}

#[test]
fn io_waits_are_judged_as_lock_waits_are() {
    let waited = (DB_WAIT_SHARE * 40.0) as u64;
    let at = |of_active: f64| (of_active * 100.0) as u64;
    for (waited, waiting, saturated) in [
        (waited, at(DB_WAIT_OF_ACTIVE), true),
        (waited - 1, at(DB_WAIT_OF_ACTIVE), false),
        (waited, at(DB_WAIT_OF_ACTIVE) - 1, false),
    ] {
        let mut db = crate::database::DbReading {
            samples: 40,
            ..Default::default()
        };
        db.sessions.insert("io".into(), waiting);
        db.sessions.insert("running".into(), 100 - waiting);
        db.samples_with.insert("io".into(), waited);
        db.events.insert("IO:DataFileRead".into(), waiting);
        let judged = db_step(db, 0);
        let r = judged
            .resources
            .iter()
            .find(|r| r.resource == Kind::DiskIo)
            .unwrap();
        assert_eq!(r.saturated, saturated, "{waited} {waiting}: {r:?}");
        assert_eq!(r.label, "the database's disk I/O");
        assert!(r.evidence[0].contains("(IO:DataFileRead)"), "{r:?}");
    }
}

#[test]
fn a_databases_sessions_go_beside_its_cpu_or_say_that_it_is_not_read() {
    let db_with_cpu = |cpu_s: f64| {
        let mut db = crate::database::DbReading {
            samples: 40,
            ..Default::default()
        };
        db.sessions.insert("running".into(), 40);
        let start = ProcReading {
            db: Some(Default::default()),
            ..ProcReading::default()
        };
        let end = ProcReading {
            cpu_s,
            db: Some(db),
            ..ProcReading::default()
        };
        judge(&one("db"), &step(start, end), load())
    };
    let line = "db-1: 1.0 sessions running on average (40 samples)";
    let read = db_with_cpu(2.0);
    let cpu = read.resources.iter().find(|r| r.resource == Kind::Cpu);
    assert!(
        cpu.is_some_and(|c| c.evidence.iter().any(|e| e == line)),
        "{read:?}"
    );
    assert!(!read.findings.iter().any(|f| f.text.starts_with(line)));
    let unread = db_with_cpu(0.0);
    let said = unread
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::Sessions);
    assert!(
        said.is_some_and(|f| f.text.starts_with(line) && f.text.contains("its CPU is not read")),
        "{:?}",
        unread.findings
    );
}

#[test]
fn max_connections_is_saturated_when_held_and_waited_for() {
    // 40 samples at 11 connections of 11, `at_max` of them at the limit.
    let held = (CAP_HELD_SHARE * 40.0) as u64;
    let at = |at_max: u64| crate::database::DbReading {
        samples: 40,
        connections: 11 * 40,
        at_max,
        max_connections: 11,
        ..Default::default()
    };
    // Requests refused (errors): clients waited on it, so it is the step's limit.
    for (at_max, saturated) in [(held, true), (held - 1, false), (40, true)] {
        let judged = db_step(at(at_max), 3);
        let r = judged
            .resources
            .iter()
            .find(|r| r.resource == Kind::MaxConnections)
            .unwrap();
        assert_eq!(r.saturated, saturated, "{at_max}: {r:?}");
    }
    // Held, and nothing waited: the pools in front are open, so it is what limits the
    // next client (another server's pool), said as a finding, never the verdict.
    let judged = db_step(at(40), 0);
    assert_ne!(judged.verdict.resource, Some(Kind::MaxConnections));
    let finding = judged
        .findings
        .iter()
        .find(|f| f.text.contains("max_connections (11) was reached"));
    assert!(
        finding.is_some_and(|f| f.text.contains("the next client to connect")),
        "{:?}",
        judged.findings
    );
}

/// A verdict's tier and resource.
type Named = (Option<String>, Option<Kind>);

/// The tier and resource `choose` names among `resources`.
fn chosen(resources: &[Resource]) -> Named {
    let v = choose(resources);
    (v.tier, v.resource)
}

fn named(tier: &str, kind: Kind) -> Named {
    (Some(tier.into()), Some(kind))
}

#[test]
fn a_saturated_cpu_is_chosen_before_any_pool_and_the_deepest_pool_before_others() {
    let table: [(Vec<Resource>, Named); 8] = [
        // A lock inside the database before the app's pool that fills in front of it
        // (issue 29: "add pool" was the advice for a hot row)...
        (
            vec![
                saturated("app", Kind::DbPool, 1.0, false),
                saturated("app", Kind::ThreadPool, 1.0, false),
                saturated("db", Kind::Locks, 0.9, false),
            ],
            named("db", Kind::Locks),
        ),
        // ...but after a saturated CPU, whose slow holders make others wait.
        (
            vec![
                saturated("db", Kind::Locks, 1.0, false),
                saturated("db", Kind::Cpu, 0.9, false),
            ],
            named("db", Kind::Cpu),
        ),
        // CPU first, even when a pool reads fuller: the pool fills because of it.
        (
            vec![
                saturated("app", Kind::DbPool, 0.99, false),
                saturated("app", Kind::Cpu, 0.86, false),
            ],
            named("app", Kind::Cpu),
        ),
        // The busiest of two saturated CPUs.
        (
            vec![
                saturated("app", Kind::Cpu, 0.9, false),
                saturated("db", Kind::Cpu, 0.95, false),
            ],
            named("db", Kind::Cpu),
        ),
        // A process before its whole machine (node_exporter), however full that is.
        (
            vec![
                saturated("host", Kind::Cpu, 1.0, true),
                saturated("app", Kind::Cpu, 0.86, false),
            ],
            named("app", Kind::Cpu),
        ),
        // The deepest pool: the database's, then the app's database pool, threads, cap.
        (
            vec![
                saturated("app", Kind::ConnectionCap, 1.0, false),
                saturated("app", Kind::ThreadPool, 0.99, false),
                saturated("app", Kind::DbPool, 0.81, false),
            ],
            named("app", Kind::DbPool),
        ),
        (
            vec![
                saturated("app", Kind::DbPool, 0.99, false),
                saturated("db", Kind::ThreadPool, 0.81, false),
            ],
            named("db", Kind::ThreadPool),
        ),
        // Nothing saturated: no tier, however busy.
        (
            vec![resource_of("app", Kind::Cpu, 0.84, false)],
            (None, None),
        ),
    ];
    for (resources, expected) in table {
        assert_eq!(chosen(&resources), expected, "{resources:?}");
    }
    // The others saturated are said beside the verdict.
    let both = [
        saturated("app", Kind::Cpu, 0.9, false),
        saturated("app", Kind::ThreadPool, 0.9, false),
    ];
    let v = choose(&both);
    assert!(
        v.evidence
            .iter()
            .any(|e| e.starts_with("also saturated: app threads (90%)")),
        "{v:?}"
    );
}

#[test]
fn the_runner_up_is_the_most_used_other_resource_that_can_be_enlarged() {
    let verdict = Verdict {
        tier: Some("app".into()),
        resource: Some(Kind::Cpu),
        ..Verdict::default()
    };
    let mut fixed = resource_of("db", Kind::Cpu, 0.99, false);
    fixed.enlarge = None;
    let resources = [
        resource_of("app", Kind::Cpu, 0.95, false),
        fixed,
        resource_of("app", Kind::ThreadPool, 0.6, false),
        resource_of("lb", Kind::Cpu, 0.4, false),
    ];
    let r = runner_up(&resources, &verdict).unwrap();
    assert_eq!((r.tier.as_str(), r.resource), ("app", Kind::ThreadPool));
}

#[test]
fn the_proof_confirms_a_large_gain_against_a_small_runner_up() {
    use super::proof::confirms;
    // (named gain, runner-up gain, the control's drift, confirmed)
    let table = [
        (PROOF_GAIN_PCT, None, 0.0, true),
        (PROOF_GAIN_PCT - 0.1, None, 0.0, false),
        (PROOF_GAIN_PCT, Some(PROOF_RUNNER_UP_PCT - 0.1), 0.0, true),
        (PROOF_GAIN_PCT, Some(PROOF_RUNNER_UP_PCT), 0.0, false),
        // A large gain tolerates a runner-up under a third of it.
        (60.0, Some(19.9), 0.0, true),
        (60.0, Some(20.0), 0.0, false),
        // The named gain must clear the noise by the whole bar, either way it moved.
        (PROOF_GAIN_PCT + 5.0, None, 5.0, true),
        (PROOF_GAIN_PCT + 4.9, None, -5.0, false),
        // A runner-up within the noise is no rival.
        (
            40.0,
            Some(CONTROL_DRIFT_PCT - 0.5),
            CONTROL_DRIFT_PCT - 0.1,
            true,
        ),
        // Identical runs that differed more than the bar prove nothing, however large.
        (80.0, None, CONTROL_DRIFT_PCT, true),
        (80.0, None, CONTROL_DRIFT_PCT + 0.1, false),
        (80.0, None, -22.0, false),
    ];
    for (named, runner, noise, confirmed) in table {
        assert_eq!(
            confirms(named, runner, noise),
            confirmed,
            "{named} {runner:?} noise {noise}"
        );
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
        local: false,
    }];
    let load = Load {
        users: 50,
        think_s: 0.0,
        tps: 500.0,
        mean_ms: 100.0,
        p50_ms: 95.0,
        p99_ms: 150.0,
        requests: 2000,
        errors: 0,
        error_kinds: &NO_ERRORS,
        generator_cores: 1.0,
        littles_law: true,
        lost_pct: None,
        balancer_limited: false,
    };
    let j = judge(&procs, &readings, load);
    assert_eq!(j.verdict.tier.as_deref(), Some("app"), "{:?}", j.verdict);
    assert_eq!(j.verdict.resource, Some(Kind::DbPool), "{:?}", j.verdict);
    let threads = j
        .resources
        .iter()
        .find(|r| r.resource == Kind::ThreadPool)
        .unwrap();
    assert_eq!((threads.utilisation, threads.saturated), (0.2, false));
    // The CPU, 10% of its budget, is not what limits it.
    let cpu = j
        .resources
        .iter()
        .find(|r| r.resource == Kind::Cpu)
        .unwrap();
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

#[test]
fn the_manuals_table_of_thresholds_is_the_code() {
    let readme = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/lab.md"));
    let rows: Vec<&str> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| threshold | value |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let expected: Vec<String> = ALL
        .iter()
        .map(|(name, value)| format!("| `{name}` | {value} |"))
        .collect();
    assert_eq!(
        rows, expected,
        "docs/lab.md's table under \"How the lab judges\""
    );
}

#[test]
fn a_plateau_is_flat_throughput_over_enough_more_users() {
    use super::plateau::{plateau, Point};
    let at = |users: usize, tps: f64| Point {
        users,
        tps,
        mean_ms: users as f64 / tps * 1000.0,
    };
    let ratio = PLATEAU_USERS_RATIO;
    let more = |n: usize| (n as f64 * ratio).ceil() as usize;
    let flat = 1.0 + (FLAT_GAIN_PCT - 0.1) / 100.0;
    let grew = 1.0 + FLAT_GAIN_PCT / 100.0;
    // (steps, a plateau)
    let table = [
        (vec![at(20, 100.0), at(more(20), 100.0 * flat)], true),
        (vec![at(20, 100.0), at(more(20), 100.0 * grew)], false),
        // Too few more users to tell a plateau from a slow climb.
        (vec![at(20, 100.0), at(more(20) - 1, 100.0)], false),
        // The widest: from the first step the last is flat against.
        (vec![at(10, 60.0), at(20, 100.0), at(40, 101.0)], true),
        (vec![at(10, 100.0)], false),
    ];
    for (points, found) in table {
        assert_eq!(plateau(&points).is_some(), found, "{points:?}");
    }
    let p = plateau(&[at(10, 60.0), at(20, 100.0), at(40, 101.0)]).unwrap();
    assert_eq!(p.users, (20, 40));
}

#[test]
fn a_single_busy_thread_is_saturated_however_many_cores_the_machine_has() {
    // nginx with one worker on a 2-core machine, no budget: the process at 49% of the
    // machine is its one worker thread at 98% of a core.
    let procs = [ProcInfo {
        name: "lb[pid 7]".into(),
        tier: "lb".into(),
        budget_cores: 2.0,
        budget: "the machine's 2 cores".into(),
        local: true,
    }];
    let at = |t: f64, worker: f64| Reading {
        t,
        procs: vec![ProcReading {
            cpu_s: worker * t + 0.01 * t,
            threads: [(7, 0.01 * t), (8, worker * t)].into_iter().collect(),
            ..ProcReading::default()
        }],
        ..Reading::default()
    };
    // (the worker's share of a core, saturated)
    for (worker, saturated) in [(CPU_SATURATED, true), (CPU_SATURATED - 0.02, false)] {
        let readings: Vec<Reading> = (0..=10).map(|i| at(i as f64, worker)).collect();
        let judged = judge(&procs, &readings, load());
        let thread = judged
            .resources
            .iter()
            .find(|r| r.resource == Kind::BusiestThread)
            .unwrap();
        assert_eq!(thread.saturated, saturated, "{thread:?}");
        let named = judged.verdict.resource == Some(Kind::BusiestThread);
        assert_eq!(named, saturated, "{:?}", judged.verdict);
        let cpu = judged
            .resources
            .iter()
            .find(|r| r.resource == Kind::Cpu)
            .unwrap();
        assert!(
            !cpu.saturated,
            "the process is at half the machine: {cpu:?}"
        );
    }
}

#[test]
fn a_jvm_without_tomcat_thread_metrics_is_said_to_be_missing_them() {
    let jvm = "# TYPE jvm_threads_live_threads gauge\njvm_threads_live_threads 40.0\n";
    let with_tomcat = "jvm_threads_live_threads 40.0\ntomcat_threads_busy_threads 3.0\ntomcat_threads_config_max_threads 200.0\n";
    for (text, said) in [
        (jvm, true),
        (with_tomcat, false),
        ("process_cpu_seconds_total 1.0\n", false),
    ] {
        let readings: Vec<Reading> = (0..5)
            .map(|i| reading(i as f64, 0.1 * i as f64, text))
            .collect();
        let judged = judge(&one("app"), &readings, load());
        let found = judged
            .findings
            .iter()
            .any(|f| f.text.contains("server.tomcat.mbeanregistry.enabled=true"));
        assert_eq!(found, said, "{text}: {:?}", judged.findings);
    }
}

#[test]
fn a_tiers_processes_missing_a_metric_say_so_once_for_their_tier() {
    // Merged by kind and subject (the tier), whatever each process's sentence says.
    let jvm = "jvm_threads_live_threads 40.0\n";
    let procs: Vec<ProcInfo> = [("app-1", "app"), ("app-2", "app"), ("api-1", "api")]
        .into_iter()
        .map(|(name, tier)| ProcInfo {
            name: name.into(),
            tier: tier.into(),
            ..one("app").remove(0)
        })
        .collect();
    let readings: Vec<Reading> = (0..5)
        .map(|i| {
            let mut r = reading(i as f64, 0.1 * i as f64, jvm);
            r.procs = vec![r.procs[0].clone(); 3];
            r
        })
        .collect();
    let judged = judge(&procs, &readings, load());
    let said: Vec<(FindingKind, &str)> = judged
        .findings
        .iter()
        .map(|f| (f.kind, f.subject.as_str()))
        .collect();
    let missing = FindingKind::NoThreadMetrics;
    assert_eq!(said, [(missing, "app"), (missing, "api")], "{said:?}");
}

#[test]
fn a_cpu_measured_without_a_core_count_is_said_not_judged() {
    // A Python app's Prometheus client: CPU seconds, no count of the cores it may use.
    let text = "process_cpu_seconds_total 1.0\n";
    let readings: Vec<Reading> = (0..5)
        .map(|i| reading(i as f64, 0.9 * i as f64, text))
        .collect();
    let unknown = vec![ProcInfo {
        budget_cores: 0.0,
        local: false,
        ..one("app").remove(0)
    }];
    for (procs, said) in [(unknown, true), (one("app"), false)] {
        let judged = judge(&procs, &readings, load());
        let found = judged
            .findings
            .iter()
            .find(|f| f.text.starts_with("app: used 0.90 cores"));
        assert_eq!(found.is_some(), said, "{:?}", judged.findings);
        if said {
            assert!(!judged.resources.iter().any(|r| r.resource == Kind::Cpu));
            assert!(found.unwrap().text.contains("PID@URL"));
        }
    }
}

/// Micrometer's timers over a step: `requests` to `/stock` taking `app_s` seconds in
/// all, the actuator's own scrapes beside them, HikariCP's acquire and usage seconds,
/// and `gc_s` of GC pauses.
fn micrometer(requests: f64, app_s: f64, acquire_s: f64, usage_s: f64, gc_s: f64) -> String {
    format!(
        "http_server_requests_seconds_count{{method=\"GET\",status=\"200\",uri=\"/stock\"}} {requests}\n\
         http_server_requests_seconds_sum{{method=\"GET\",status=\"200\",uri=\"/stock\"}} {app_s}\n\
         http_server_requests_seconds_count{{method=\"GET\",status=\"200\",uri=\"/actuator/prometheus\"}} {requests}\n\
         http_server_requests_seconds_sum{{method=\"GET\",status=\"200\",uri=\"/actuator/prometheus\"}} 1000\n\
         hikaricp_connections_acquire_seconds_sum{{pool=\"HikariPool-1\"}} {acquire_s}\n\
         hikaricp_connections_usage_seconds_sum{{pool=\"HikariPool-1\"}} {usage_s}\n\
         jvm_gc_pause_seconds_count{{action=\"end of minor GC\",cause=\"G1 Evacuation Pause\",gc=\"G1 Young Generation\"}} 3\n\
         jvm_gc_pause_seconds_sum{{action=\"end of minor GC\",cause=\"G1 Evacuation Pause\",gc=\"G1 Young Generation\"}} {gc_s}\n\
         jvm_gc_pause_seconds_max{{action=\"end of minor GC\",cause=\"G1 Evacuation Pause\",gc=\"G1 Young Generation\"}} 0.2\n"
    )
}

/// A breakdown's parts as (name, ms, depth).
fn parts(b: &Breakdown) -> Vec<(&str, f64, u8)> {
    b.parts
        .iter()
        .map(|p| (p.part.as_str(), p.ms, p.depth))
        .collect()
}

#[test]
fn a_requests_time_is_broken_down_from_the_apps_own_timers() {
    // 1000 requests over 10 s, 100 ms each at the generator; 80 ms each in the app: 50
    // waiting for a connection, 20 holding one, 3 of CPU (3 s of it), 7 the rest; the
    // JVM stopped 1% of the time (0.1 s), so 0.8 ms of a request's 80. The actuator's
    // scrapes (1000 s of them) are not the app's requests.
    let readings = vec![
        reading(0.0, 0.0, &micrometer(0.0, 0.0, 0.0, 0.0, 0.0)),
        reading(10.0, 3.0, &micrometer(1000.0, 80.0, 50.0, 20.0, 0.1)),
    ];
    let judged = judge(&one("app"), &readings, load());
    let b = judged.breakdown.expect("a breakdown");
    assert_eq!(
        parts(&b),
        [
            (
                "before the app (balancer, network, waiting for a server thread)",
                20.0,
                0
            ),
            ("in the app server", 80.0, 0),
            ("waiting for a pooled connection", 50.0, 1),
            ("holding a pooled connection", 20.0, 1),
            ("on its CPU (CPU time per request)", 3.0, 1),
            ("the rest (waiting for a CPU, other calls, locks)", 7.0, 1),
            ("stopped in GC pauses (within the parts above)", 0.8, 1),
        ]
    );
    // 0.1 s of pauses in 10 s is 1%: no finding; GC_PAUSED_PCT of the step is one.
    assert!(!judged.findings.iter().any(|f| f.text.contains("GC paused")));
    let paused = GC_PAUSED_PCT / 100.0 * 10.0;
    let readings = vec![
        reading(0.0, 0.0, &micrometer(0.0, 0.0, 0.0, 0.0, 0.0)),
        reading(10.0, 0.0, &micrometer(1000.0, 80.0, 50.0, 20.0, paused)),
    ];
    let judged = judge(&one("app"), &readings, load());
    let gc = judged
        .findings
        .iter()
        .find(|f| f.text.contains("GC paused"));
    assert!(
        gc.is_some_and(|f| f.text.contains("the longest 200 ms")),
        "{:?}",
        judged.findings
    );
}

#[test]
fn a_gc_pause_the_latency_tail_waited_out_is_a_finding() {
    // Pauses 1% of the step (under GC_PAUSED_PCT), the longest 200 ms.
    let readings = vec![
        reading(0.0, 0.0, &micrometer(0.0, 0.0, 0.0, 0.0, 0.0)),
        reading(10.0, 0.0, &micrometer(1000.0, 80.0, 50.0, 20.0, 0.1)),
    ];
    let p99 = 200.0 / GC_TAIL_SHARE;
    let table = [
        (p99 / GC_TAIL_OVER_MEDIAN, p99, true),
        (p99 / GC_TAIL_OVER_MEDIAN + 0.1, p99, false), // no tail
        (20.0, p99 + 0.1, false),                      // a tail longer than the pauses
        (20.0, 250.0, true),
    ];
    for (p50_ms, p99_ms, said) in table {
        let load = Load {
            p50_ms,
            p99_ms,
            ..load()
        };
        let judged = judge(&one("app"), &readings, load);
        let found = judged
            .findings
            .iter()
            .find(|f| f.text.contains("GC pauses line up with the latency tail"));
        assert_eq!(
            found.is_some(),
            said,
            "{p50_ms} {p99_ms}: {:?}",
            judged.findings
        );
        if said {
            assert!(
                found.unwrap().text.contains("the longest pause 200 ms"),
                "{found:?}"
            );
        }
    }
}

#[test]
fn a_jvm_stopped_by_gc_a_large_share_of_the_step_is_its_heap_saturated() {
    let with_pauses = |pct: f64| {
        let paused = pct / 100.0 * 10.0;
        vec![
            reading(0.0, 0.0, &micrometer(0.0, 0.0, 0.0, 0.0, 0.0)),
            // 0.9 of its core busy: the collector's thread fills the CPU too.
            reading(10.0, 9.0, &micrometer(1000.0, 80.0, 0.0, 0.0, paused)),
        ]
    };
    for (pct, saturated) in [(GC_HEAP_FULL_PCT, true), (GC_HEAP_FULL_PCT - 0.1, false)] {
        let judged = judge(&one("app"), &with_pauses(pct), load());
        let heap = judged
            .resources
            .iter()
            .find(|r| r.resource == Kind::Heap)
            .unwrap();
        assert_eq!(heap.saturated, saturated, "{pct}: {heap:?}");
        assert_eq!(heap.label, "the app server's heap (GC)");
        // Named before the CPU its collector fills; below, said as a finding.
        let named = (judged.verdict.tier.as_deref(), judged.verdict.resource);
        let gc_finding = judged
            .findings
            .iter()
            .any(|f| f.text.contains("GC paused the JVM"));
        if saturated {
            assert_eq!(
                named,
                (Some("app"), Some(Kind::Heap)),
                "{:?}",
                judged.verdict
            );
            assert!(!gc_finding, "{:?}", judged.findings);
        } else {
            assert_eq!(
                named,
                (Some("app"), Some(Kind::Cpu)),
                "{:?}",
                judged.verdict
            );
            assert!(gc_finding, "{:?}", judged.findings);
        }
    }
}

#[test]
fn sluices_own_timing_holds_the_app_servers_part() {
    // sluice in front: 1000 attempts at its servers of 85 ms each, 4 ms queued each, of
    // a 100 ms response; the app's 80 ms inside the 85.
    let sluice = |attempts: f64, seconds: f64, queued: f64| {
        format!(
            "sluice_upstream_request_duration_seconds_count{{upstream=\"app\",server=\"a\"}} {attempts}\n\
             sluice_upstream_request_duration_seconds_sum{{upstream=\"app\",server=\"a\"}} {seconds}\n\
             sluice_upstream_queue_wait_duration_seconds_sum{{upstream=\"app\"}} {queued}\n"
        )
    };
    let both = |t: f64, lb: String, app: String| Reading {
        t,
        procs: vec![
            reading(t, 0.0, &lb).procs.remove(0),
            reading(t, 0.0, &app).procs.remove(0),
        ],
        ..Reading::default()
    };
    let readings = vec![
        both(
            0.0,
            sluice(0.0, 0.0, 0.0),
            micrometer(0.0, 0.0, 0.0, 0.0, 0.0),
        ),
        both(
            10.0,
            sluice(1000.0, 85.0, 4.0),
            micrometer(1000.0, 80.0, 0.0, 0.0, 0.0),
        ),
    ];
    let procs = [one("lb"), one("app")].concat();
    let b = judge(&procs, &readings, load())
        .breakdown
        .expect("a breakdown");
    assert_eq!(
        parts(&b),
        [
            (
                "in the balancer (its work, its queue, the network)",
                15.0,
                0
            ),
            ("queued for a server (max_conns)", 4.0, 1),
            ("at the servers (as the balancer timed them)", 85.0, 0),
            (
                "before the app (network, waiting for a server thread)",
                5.0,
                1
            ),
            ("in the app server", 80.0, 1),
        ]
    );
}

/// What a real Spring Boot 3.5.7 app published (`lab/spring-app`): at ~10 s of a 20 s
/// load of 20 connections on one hot row, and again as the load ended.
const SPRING_UNDER_LOAD: &str =
    include_str!("../../tests/fixtures/spring-boot-3.5.7-under-load.txt");
const SPRING_AFTER_LOAD: &str =
    include_str!("../../tests/fixtures/spring-boot-3.5.7-after-load.txt");

#[test]
fn a_real_spring_boot_apps_metrics_give_its_pools_and_where_its_time_went() {
    // Two readings 10 s apart bound the step, one under load between them.
    let readings = vec![
        reading(0.0, 0.0, SPRING_UNDER_LOAD),
        reading(5.0, 0.0, SPRING_UNDER_LOAD),
        reading(10.0, 0.0, SPRING_AFTER_LOAD),
    ];
    let counters = &readings[0].procs[0].counters;
    assert_eq!(counters["system_cpu_count"], 2.0);
    assert_eq!(counters["process_cpu_time_ns_total"], 1.426e10);
    let judged = judge(
        &one("app"),
        &readings,
        Load {
            mean_ms: 120.45,
            tps: 168.0,
            ..load()
        },
    );
    let of = |kind: Kind| {
        judged
            .resources
            .iter()
            .find(|r| r.resource == kind)
            .unwrap()
    };
    // 20 of 20 Tomcat threads busy; 10 of 10 connections with 9 requests pending.
    let (threads, pool) = (of(Kind::ThreadPool), of(Kind::DbPool));
    assert!(threads.saturated, "{threads:?}");
    assert!(pool.saturated, "{pool:?}");
    assert!(!judged
        .findings
        .iter()
        .any(|f| f.text.contains("mbeanregistry")));
    // 1,754 requests to /stock between the readings (the actuator's left out), 196.5 s
    // in the app: 112.0 ms each, half waiting for a connection, half holding one.
    let b = judged.breakdown.expect("a breakdown");
    let ms = |part: &str| b.parts.iter().find(|p| p.part == part).unwrap().ms;
    assert_eq!(ms("in the app server"), 112.03);
    assert_eq!(ms("waiting for a pooled connection"), 55.54);
    assert_eq!(ms("holding a pooled connection"), 55.36);
    assert_eq!(
        ms("before the app (balancer, network, waiting for a server thread)"),
        8.42
    );
}

#[test]
fn a_jvm_with_only_the_cpu_usage_gauge_is_judged_by_it() {
    // Micrometer before 1.11: `process_cpu_usage` of its 2 CPUs, no CPU-time counter.
    let at = |usage: f64| {
        let text = format!("process_cpu_usage {usage}\nsystem_cpu_count 2.0\n");
        let inner = (0..8).map(|i| reading(i as f64, 0.0, &text)).collect();
        let idle = reading(0.0, 0.0, "process_cpu_usage 0.0\nsystem_cpu_count 2.0\n");
        let procs = vec![ProcInfo {
            budget_cores: 2.0,
            local: false,
            ..one("app").remove(0)
        }];
        let judged = judge(&procs, &framed(inner, idle.procs[0].clone()), load());
        let cpu = judged
            .resources
            .iter()
            .find(|r| r.resource == Kind::Cpu)
            .cloned();
        cpu.expect("a CPU from the gauge")
    };
    assert!(at(CPU_SATURATED).saturated);
    let below = at(CPU_SATURATED - 0.01);
    assert!(!below.saturated);
    assert!(
        below.evidence[0].contains("process_cpu_usage averaged 84%"),
        "{below:?}"
    );
}

#[test]
fn a_generator_its_quota_stopped_makes_the_step_invalid_below_the_busy_mark() {
    // As on a one-core CI host under load: the generator's 0.05-core quota gave it 80%
    // of its budget, and stopped it in 9 of every 10 periods.
    let procs = [machine("app[pid 1]", "app")];
    let at = |t: f64| Reading {
        t,
        procs: vec![ProcReading {
            cpu_s: 0.02 * t,
            ..ProcReading::default()
        }],
        generator_cpu_s: 0.04 * t,
        generator_throttling: Throttling {
            periods: (10.0 * t) as u64,
            throttled: (9.0 * t) as u64,
            throttled_s: 0.9 * t,
        },
        ..Reading::default()
    };
    let load = Load {
        generator_cores: 0.05,
        ..load()
    };
    let judged = judge(&procs, &[at(0.0), at(2.0)], load);
    assert!(!judged.valid, "{:?}", judged.verdict);
    assert_eq!(judged.verdict.tier.as_deref(), Some("loadgen"));
    let why = judged.invalid_reason.unwrap();
    assert!(why.contains("throttled in 90%"), "{why}");
}

#[test]
fn a_step_its_errors_dominate_names_no_tier_and_says_what_failed() {
    // A closed port: a generator busy at its one core failing connections as fast as it
    // can; a server answering 503; a few failures beside answers; none.
    let refused = BTreeMap::from([("connect: connection refused".to_string(), 1000)]);
    let unavailable = BTreeMap::from([("status 503".to_string(), 990), ("timeout".to_string(), 3)]);
    let few = BTreeMap::from([("status 503".to_string(), 10)]);
    let half = BTreeMap::from([("status 502".to_string(), 499)]);
    // Error kinds, the generator's CPU, then: valid, the tier named, the finding.
    type Case<'a> = (
        &'a BTreeMap<String, u64>,
        f64,
        bool,
        Option<&'a str>,
        &'a str,
    );
    let table: [Case; 5] = [
        (
            &refused,
            1.0,
            false,
            None,
            "100% of requests failed (1000 of 1000): 1000 x connect: connection refused",
        ),
        (
            &unavailable,
            0.1,
            false,
            None,
            "99% of requests failed (993 of 1000): 990 x status 503, 3 x timeout",
        ),
        (
            &few,
            0.1,
            true,
            None,
            "1.0% of requests failed (10 of 1000): 10 x status 503",
        ),
        // Just under ERRORS_DOMINATE: a finding, the step judged as any other.
        (
            &half,
            0.1,
            true,
            None,
            "50% of requests failed (499 of 1000): 499 x status 502",
        ),
        // No error: a busy generator is the generator's limit, as ever.
        (&NO_ERRORS, 1.0, false, Some("loadgen"), ""),
    ];
    for (kinds, generator, valid, tier, said) in table {
        let at = |t: f64| Reading {
            t,
            procs: vec![ProcReading::default()],
            generator_cpu_s: generator * t,
            ..Reading::default()
        };
        let load = Load {
            errors: kinds.values().sum(),
            error_kinds: kinds,
            ..load()
        };
        let j = judge(&one("app"), &[at(0.0), at(10.0)], load);
        assert_eq!(j.valid, valid, "{said}: {:?}", j.verdict);
        assert_eq!(j.verdict.tier.as_deref(), tier, "{said}: {:?}", j.verdict);
        let errors = j.findings.iter().find(|f| f.kind == FindingKind::Errors);
        assert_eq!(errors.map_or("", |f| f.text.as_str()), said);
        if !valid && tier.is_none() {
            assert!(j.verdict.summary.contains(said), "{:?}", j.verdict);
            assert!(j.verdict.summary.contains("not a saturation"));
            // No advice to give the generator more CPU: nothing to enlarge.
            assert_eq!(advice::advice(&j.verdict, false), "");
        }
    }
}
