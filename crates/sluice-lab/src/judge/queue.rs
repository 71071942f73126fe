//! The balancer's queue: requests it held back until a server had room under its limit
//! (sluice's `max_conns` or `limit = "adaptive"`, HAProxy's `maxconn`).
//!
//! A limit set at the servers' knee moves the wait from the app's thread pool into the
//! balancer: the app's threads stay busy while few requests wait for one there, so the
//! pool alone would not read as saturated. The queue's figures are the missing half of
//! its evidence. A limit set below the knee leaves the threads idle while requests wait
//! in the balancer: then the limit itself is what saturated. A limit without a queue
//! (nginx's `max_conns`) sheds instead of holding: requests that failed while the app
//! servers refused none of them, and left no connection waiting, were failed by the
//! balancer itself, and count as held.

use super::thresholds::{POOL_BUSY as BUSY, QUEUE_WAITED as WAITED};
use super::{pct, round2, Delta, Kind, Load, Resource};

/// How long and how often requests waited in the balancer over the step.
struct Held {
    /// The share of requests (or, from a gauge, of samples) that found a queue.
    share: f64,
    evidence: String,
}

/// The balancer's queue as a resource, when it has one (its metrics are read).
pub(super) fn resource(d: &Delta, load: Load) -> Option<Resource> {
    let held = held(d, load)?;
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: Kind::Queue,
        label: "the balancer's limit on its servers (max_conns), its queue full".into(),
        utilisation: round2(held.share),
        saturated: held.share >= WAITED,
        evidence: vec![held.evidence],
        enlarge: None,
        machine: false,
    })
}

/// Requests the balancer failed by itself: it limits what it sends each server, at least
/// 5% of requests failed, the app servers refused (or failed) under a tenth of those,
/// and none left a connection waiting unaccepted. Read only where no balancer has a
/// queue of its own in its metrics (then [`resource`] reads that queue).
pub(super) fn shed(deltas: &[Delta], load: Load) -> Option<Resource> {
    if deltas.iter().any(|d| held(d, load).is_some()) {
        return None;
    }
    let lb = deltas.iter().find(|d| d.info.tier == "lb")?;
    let apps: Vec<&Delta> = deltas.iter().filter(|d| d.info.tier == "app").collect();
    let failed = load.errors as f64;
    let share = failed / load.requests.max(1) as f64;
    let refused: f64 = apps
        .iter()
        .flat_map(|d| {
            ["rejected", "injected_errors", "db_timeouts", "db_errors"].map(|k| d.counter(k))
        })
        .sum();
    let unaccepted = apps.iter().any(|d| d.accept_queue_max() > 0);
    let unlimited = !load.balancer_limited;
    if unlimited || apps.is_empty() || share < WAITED || refused >= 0.1 * failed || unaccepted {
        return None;
    }
    Some(Resource {
        tier: lb.info.tier.clone(),
        resource: Kind::Queue,
        label: "the balancer's limit on its servers (max_conns), with no queue".into(),
        utilisation: round2(share),
        saturated: true,
        evidence: vec![format!(
            "{failed:.0} of {} requests failed ({:.0}%) while the app servers refused {refused:.0} and left no connection unaccepted: {} failed them itself, without a queue",
            load.requests,
            share * 100.0,
            lb.info.name
        )],
        enlarge: None,
        machine: false,
    })
}

/// How the balancer `d` held requests back, where its metrics have a queue.
fn held(d: &Delta, load: Load) -> Option<Held> {
    sluice(d, load).or_else(|| haproxy(d))
}

/// From sluice's `/metrics`: requests that waited, and for how long.
fn sluice(d: &Delta, load: Load) -> Option<Held> {
    let requests = d.counter("sluice_upstream_requests_total");
    let waited = d.counter("sluice_upstream_queue_wait_duration_seconds_count");
    if requests < 1.0 || d.gauge("sluice_upstream_max_conns").is_none() {
        return None;
    }
    let wait_ms = d.counter("sluice_upstream_queue_wait_duration_seconds_sum") * 1000.0;
    let mean = if waited > 0.0 { wait_ms / waited } else { 0.0 };
    let timeouts = d.counter("sluice_upstream_queue_timeouts_total");
    let rejected = d.counter("sluice_upstream_queue_rejected_total");
    Some(Held {
        share: waited / requests,
        evidence: format!(
            "{} (its /metrics): {waited:.0} of {requests:.0} requests waited in its queue for a server under its limit, {mean:.1} ms on average ({:.0}% of the response time); {:.0} answered 503 when their wait ran out or the queue was full",
            d.info.name,
            pct(mean, load.mean_ms),
            timeouts + rejected
        ),
    })
}

/// From HAProxy's Prometheus exporter: the queue's length in each sample, and its
/// average wait over its last 1,024 requests.
fn haproxy(d: &Delta) -> Option<Held> {
    let lengths = d.series("haproxy_backend_current_queue");
    if lengths.is_empty() || d.counter("haproxy_backend_http_requests_total") < 1.0 {
        return None;
    }
    let queued = lengths.iter().filter(|l| **l > 0.0).count() as f64;
    let share = queued / lengths.len() as f64;
    let mean_len = lengths.iter().sum::<f64>() / lengths.len() as f64;
    let wait_ms = d
        .gauge("haproxy_backend_queue_time_average_seconds")
        .unwrap_or(0.0)
        * 1000.0;
    Some(Held {
        // A gauge sampled each second: the share of samples with a queue.
        share,
        evidence: format!(
            "{} (its Prometheus exporter): requests waited in its queue in {:.0}% of the seconds sampled, {mean_len:.1} on average; its last requests waited {wait_ms:.1} ms on average",
            d.info.name,
            share * 100.0
        ),
    })
}

/// When the balancer held requests back while a server pool was at its knee, that pool
/// is what saturated: it gains the queue's evidence, and the queue (the limit doing its
/// job) is no longer named. A pool is at its knee when it was [`BUSY`], or when the
/// balancer's limit was not below the pools' size: every thread could be given a request,
/// and the time a thread waits for its next one is the hand-off between balancer and
/// server, which a larger limit would only turn into a queue in the server. Otherwise the
/// limit held the servers below their capacity, and the queue stays saturated, with the
/// pools' figures beside it.
pub(super) fn attribute(resources: &mut [Resource], deltas: &[Delta]) {
    let Some(q) = resources
        .iter()
        .position(|r| r.resource == Kind::Queue && r.saturated)
    else {
        return;
    };
    let mut queue = resources[q].evidence.clone();
    let roomy = limit_not_below_threads(deltas);
    queue.extend(roomy.clone());
    let mut at_knee = false;
    for r in resources
        .iter_mut()
        .filter(|r| r.resource == Kind::ThreadPool)
    {
        if r.utilisation >= BUSY || roomy.is_some() {
            r.saturated = true;
            r.evidence.extend(queue.iter().cloned());
            at_knee = true;
        }
    }
    if at_knee {
        resources[q].saturated = false;
        return;
    }
    let busiest = resources
        .iter()
        .filter(|r| r.resource == Kind::ThreadPool)
        .map(|r| r.utilisation)
        .reduce(f64::max);
    if let Some(u) = busiest {
        resources[q].evidence.push(format!(
            "the servers' threads were at most {:.0}% busy meanwhile: the limit is below their capacity (raise max_conns, or let limit = \"adaptive\" find it)",
            u * 100.0
        ));
    }
}

/// Evidence that sluice's limit on its servers (all of them together, from its
/// `/metrics`) was at least the app servers' threads (all of them together, from their
/// own counters or Tomcat's gauges); `None` when it was below, or either is unknown.
fn limit_not_below_threads(deltas: &[Delta]) -> Option<String> {
    let limit: f64 = deltas
        .iter()
        .filter_map(|d| d.gauge("sluice_upstream_max_conns"))
        .sum();
    let threads: f64 = deltas
        .iter()
        .filter(|d| d.info.tier == "app")
        .filter_map(|d| {
            d.gauge("pool_threads")
                .or_else(|| d.gauge("tomcat_threads_config_max_threads"))
        })
        .sum();
    (limit > 0.0 && threads > 0.0 && limit >= threads).then(|| {
        format!(
            "the balancer's limit ({limit:.0} requests at once over its servers) was not below the app servers' {threads:.0} threads: they were the knee, and the time a thread waited for its next request was the hand-off from the balancer"
        )
    })
}

#[cfg(test)]
mod tests {
    use crate::judge::{judge, Kind, Load, ProcInfo};
    use crate::sample::{ProcReading, Reading};
    use std::collections::BTreeMap;

    fn info(name: &str, tier: &str) -> ProcInfo {
        ProcInfo {
            name: name.into(),
            tier: tier.into(),
            budget_cores: 2.0,
            budget: "the machine's 2 cores".into(),
            local: false,
        }
    }

    /// The balancer's counters `lb` and an app server's `/__stats` at `t` seconds, the
    /// app's 20 threads held `busy` of the time and requests served at 900/s.
    fn reading(t: f64, lb: &[(&str, f64)], busy: f64) -> Reading {
        let served = 900.0 * t;
        let app: BTreeMap<String, f64> = [
            ("pool_threads", 20.0),
            ("pool_busy_ms", busy * 20.0 * 1000.0 * t),
            ("pool_entered", served),
            ("requests", served),
            ("connections", 20.0),
            ("queue_waits", 0.01 * served),
            ("queue_wait_ms", 0.01 * served),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let lb = lb
            .iter()
            .map(|(k, v)| {
                let gauge = k.ends_with("max_conns");
                (k.to_string(), if gauge { *v } else { v * t })
            })
            .collect();
        let proc = |counters| ProcReading {
            cpu_s: 0.1 * t,
            counters,
            ..ProcReading::default()
        };
        Reading {
            t,
            procs: vec![proc(lb), proc(app)],
            ..Reading::default()
        }
    }

    static NO_KINDS: std::collections::BTreeMap<String, u64> = std::collections::BTreeMap::new();

    fn load(errors: u64) -> Load<'static> {
        Load {
            users: 160,
            think_s: 0.0,
            tps: 900.0,
            mean_ms: 160.0,
            p50_ms: 150.0,
            p99_ms: 300.0,
            requests: 4500,
            errors,
            error_kinds: &NO_KINDS,
            generator_cores: 1.0,
            littles_law: false,
            lost_pct: None,
            balancer_limited: true,
        }
    }

    /// sluice's queue over a step: 90% of requests waited 140 ms (rates per second),
    /// under a limit of 20 at once (a gauge, not a rate).
    const QUEUED: &[(&str, f64)] = &[
        ("sluice_upstream_requests_total", 900.0),
        ("sluice_upstream_queue_wait_duration_seconds_count", 810.0),
        (
            "sluice_upstream_queue_wait_duration_seconds_sum",
            810.0 * 0.14,
        ),
        ("sluice_upstream_max_conns", 20.0),
    ];

    #[test]
    fn servers_held_at_their_knee_by_the_balancers_queue_are_named_saturated() {
        let procs = [info("lb", "lb"), info("app-1", "app")];
        let readings: Vec<Reading> = (0..5).map(|i| reading(i as f64, QUEUED, 0.97)).collect();
        let j = judge(&procs, &readings, load(0));
        assert_eq!(j.verdict.tier.as_deref(), Some("app"), "{:?}", j.verdict);
        assert_eq!(j.verdict.resource, Some(Kind::ThreadPool));
        let evidence = j.verdict.evidence.join("\n");
        assert!(evidence.contains("waited in its queue"), "{evidence}");
        // Without the balancer's queue, the same pool (few waits of its own) is not.
        let bare = [("sluice_upstream_requests_total", 900.0)];
        let readings: Vec<Reading> = (0..5).map(|i| reading(i as f64, &bare, 0.97)).collect();
        assert_eq!(judge(&procs, &readings, load(0)).verdict.tier, None);
    }

    /// [`QUEUED`] with the balancer's limit at `limit` requests at once.
    fn queued_under(limit: f64) -> Vec<(&'static str, f64)> {
        let mut lb = QUEUED.to_vec();
        lb.retain(|(k, _)| *k != "sluice_upstream_max_conns");
        lb.push(("sluice_upstream_max_conns", limit));
        lb
    }

    #[test]
    fn a_limit_below_the_servers_capacity_is_named_for_the_balancer() {
        // A limit of 10 in front of 20 threads: half of them could never work.
        let procs = [info("lb", "lb"), info("app-1", "app")];
        let lb = queued_under(10.0);
        let readings: Vec<Reading> = (0..5).map(|i| reading(i as f64, &lb, 0.4)).collect();
        let v = judge(&procs, &readings, load(0)).verdict;
        assert_eq!(
            (v.tier.as_deref(), v.resource),
            (Some("lb"), Some(Kind::Queue)),
            "{v:?}"
        );
        assert!(v.evidence.join(" ").contains("at most 40% busy"), "{v:?}");
    }

    #[test]
    fn a_limit_at_the_servers_thread_count_names_the_threads_short_of_busy() {
        // max_conns = threads: every thread could work, the rest of their time is the
        // hand-off (seen on a busy CI host: 79% busy, the limit named instead).
        let procs = [info("lb", "lb"), info("app-1", "app")];
        let readings: Vec<Reading> = (0..5).map(|i| reading(i as f64, QUEUED, 0.79)).collect();
        let v = judge(&procs, &readings, load(0)).verdict;
        assert_eq!(
            (v.tier.as_deref(), v.resource),
            (Some("app"), Some(Kind::ThreadPool)),
            "{v:?}"
        );
        let evidence = v.evidence.join(" ");
        assert!(
            evidence.contains("was not below the app servers' 20 threads"),
            "{evidence}"
        );
        assert!(evidence.contains("waited in its queue"), "{evidence}");
    }

    #[test]
    fn requests_a_balancer_failed_itself_count_as_held_back() {
        // nginx's max_conns: no queue, no metrics; 4,000 of 4,500 failed at the balancer.
        let procs = [info("nginx", "lb"), info("app-1", "app")];
        let readings: Vec<Reading> = (0..5).map(|i| reading(i as f64, &[], 0.9)).collect();
        let v = judge(&procs, &readings, load(4000)).verdict;
        assert_eq!(v.tier.as_deref(), Some("app"), "{v:?}");
        assert!(v.evidence.join(" ").contains("failed them itself"), "{v:?}");
        // A balancer with no limit of its own did not shed: its 502s are something else.
        let unlimited = Load {
            balancer_limited: false,
            ..load(4000)
        };
        let v = judge(&procs, &readings, unlimited).verdict;
        assert!(
            !v.evidence.join(" ").contains("failed them itself"),
            "{v:?}"
        );
        // Failures the app servers answered themselves are theirs, not the balancer's.
        let mut readings = readings;
        for (i, r) in readings.iter_mut().enumerate() {
            r.procs[1]
                .counters
                .insert("rejected".into(), 1000.0 * i as f64);
        }
        let v = judge(&procs, &readings, load(4000)).verdict;
        assert!(
            !v.evidence.join(" ").contains("failed them itself"),
            "{v:?}"
        );
    }
}
