//! A CPU held at one level by a limit the process does not publish: a JVM in a container
//! with a CPU quota, read through its metrics URL alone, reports the host's cores, so its
//! CPU reads low against them while the quota is full. What shows is its shape as users
//! grow: the app's CPU stays at one level, while the time its requests spend in the app
//! beside their CPU, their pool and their database (waiting for a CPU among other things)
//! grows. That level is the limit (throughput may still creep up a little, as a busier
//! JVM spends less of its CPU per request; it cannot go past it).

use super::plateau::Step;
use super::thresholds::{
    CPU_CAP_FLAT_PCT, CPU_CAP_REST_GREW, CPU_THROTTLED_UTIL, PLATEAU_USERS_RATIO,
};
use super::{Breakdown, Kind, TierFigures, Verdict};

/// The part of the app's time that is none of its CPU, its pool or its database.
const REST: &str = "the rest (waiting for a CPU, other calls, locks)";

/// The verdict of a configuration whose last step named nothing, when from a step with
/// [`PLATEAU_USERS_RATIO`] times fewer users the app's CPU held one level (within
/// [`CPU_CAP_FLAT_PCT`] percent, under [`CPU_THROTTLED_UTIL`] of the cores it reports)
/// while the rest of its requests' time in it grew [`CPU_CAP_REST_GREW`] times or more:
/// a CPU limit it does not publish.
pub fn verdict(steps: &[Step]) -> Option<Verdict> {
    let last = steps.last()?;
    if last.judged.verdict.tier.is_some() {
        return None;
    }
    let fewer = |s: &&Step| s.point.users as f64 * PLATEAU_USERS_RATIO <= last.point.users as f64;
    let first = steps.iter().find(fewer)?;
    let app = |s: &Step| s.judged.tiers.iter().find(|t| t.tier == "app").cloned();
    let (a, b) = (app(first)?, app(last)?);
    let rest = |s: &Step| rest(s.judged.breakdown.as_ref()?);
    let (rest_a, rest_b) = (rest(first)?, rest(last)?);
    if !held_level(&a, &b) || rest_b < rest_a * CPU_CAP_REST_GREW {
        return None;
    }
    let cores = (a.cpu_cores + b.cpu_cores) / 2.0;
    let reported = b.cpu_cores / b.cpu_util.max(f64::EPSILON);
    Some(Verdict {
        tier: Some("app".into()),
        resource: Some(Kind::Cpu),
        summary: format!(
            "the app server's CPU, held at about {cores:.2} cores by a limit it does not publish \
             (a container's CPU quota?), was the limit"
        ),
        evidence: vec![
            format!(
                "its CPU stayed at {:.2}-{:.2} cores ({:.0}% of the {reported:.0} cores it reports) from {} to {} users \
                 ({:.0} -> {:.0} req/s), while the rest of its requests' time in it (waiting for a CPU among other things) \
                 grew {rest_a:.1} -> {rest_b:.1} ms a request",
                a.cpu_cores.min(b.cpu_cores),
                a.cpu_cores.max(b.cpu_cores),
                b.cpu_util * 100.0,
                first.point.users,
                last.point.users,
                first.point.tps,
                last.point.tps,
            ),
            "give the lab its pid beside its metrics URL (--tier app=PID@URL) where it runs, and it reads the quota itself; \
             if its requests wait on a service it calls instead (their CPU flat because that service is), list the \
             service as a tier too"
                .into(),
        ],
        ..Default::default()
    })
}

/// Whether the app's CPU held one level from `a` to `b`, below what it may use.
fn held_level(a: &TierFigures, b: &TierFigures) -> bool {
    let flat =
        (b.cpu_cores / a.cpu_cores.max(f64::EPSILON) - 1.0).abs() * 100.0 <= CPU_CAP_FLAT_PCT;
    flat && a.cpu_cores > 0.0 && b.cpu_util < CPU_THROTTLED_UTIL
}

fn rest(b: &Breakdown) -> Option<f64> {
    b.parts.iter().find(|p| p.part == REST).map(|p| p.ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tier(cpu_cores: f64, cpu_util: f64) -> TierFigures {
        TierFigures {
            tier: "app".into(),
            processes: 1,
            cpu_cores,
            cpu_util,
            budget: "2 cores, system_cpu_count".into(),
            throttled_pct: 0.0,
            rss_kib: 0,
            fds: 0,
            time_wait: 0,
            established: 0,
            accept_queue_max: 0,
        }
    }

    #[test]
    fn a_cpu_held_at_one_level_below_what_it_reports() {
        let flat = 1.0 + CPU_CAP_FLAT_PCT / 100.0;
        let table = [
            (tier(0.30, 0.15), tier(0.31, 0.155), true),
            (tier(0.30, 0.15), tier(0.30 * flat, 0.16), true),
            (tier(0.30, 0.15), tier(0.30 * flat + 0.01, 0.16), false),
            // Near what it reports: its CPU is measured full, not hidden.
            (tier(1.40, 0.70), tier(1.42, CPU_THROTTLED_UTIL), false),
            (tier(0.0, 0.0), tier(0.0, 0.0), false),
        ];
        for (a, b, held) in table {
            assert_eq!(held_level(&a, &b), held, "{a:?} {b:?}");
        }
    }
}
