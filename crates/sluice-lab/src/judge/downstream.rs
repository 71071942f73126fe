//! A pool that is only where the queue shows: each pooled connection held longer as more
//! users are served at the same throughput. A pool that limits holds each connection as
//! long at any load (requests wait to acquire one, not while holding it); one whose
//! connections are held longer and longer while throughput stays flat is feeding a
//! queue inside what it connects to (a row lock, I/O, a slow statement): that is the
//! saturated one, and more pool would only lengthen its queue.
//!
//! This reads a configuration's steps, not one step: by Little's law, connections in use
//! (hold time x throughput) growing at flat throughput are requests waiting inside the
//! database. It applies where the database's own sessions are not read (given by pid, or
//! not at all): where they are, `database` names what they wait on. Where HikariCP's
//! timers are not read, a JVM's thread dumps give the same time: its request threads in a
//! read from the database over throughput.
//!
//! The same reading names a service the app calls and the lab was not told of
//! ([`service_verdict`]): the app's request threads in a read from another service, a
//! request, grown at flat throughput while they are most of the busy ones.

use super::plateau::{plateau, Plateau, Step};
use super::thresholds::{CPU_SATURATED, HOLD_GREW, THREADS_WAITING_SHARE};
use super::{Breakdown, Kind, Verdict};
use crate::jvm::dump::State;

/// The part of a request's time the app spent holding a pooled connection (HikariCP's
/// `usage` timer), as the breakdown names it.
const HOLDING: &str = "holding a pooled connection";

/// The verdict of a configuration whose last step named an app's database pool, when,
/// over its plateau, each connection was held [`HOLD_GREW`] times longer or more at flat
/// throughput while the database's CPU had room: the database, its waits unread.
pub fn verdict(steps: &[Step]) -> Option<Verdict> {
    let last = steps.last()?;
    let named = &last.judged.verdict;
    // Where its sessions are read, `database` judges its waits itself.
    let sessions_read = |s: &Step| {
        let waits = |r: &&super::Resource| matches!(r.resource, Kind::Locks | Kind::DiskIo);
        s.judged.resources.iter().any(|r| waits(&r))
    };
    if named.resource != Some(Kind::DbPool) || steps.iter().any(sessions_read) {
        return None;
    }
    let points: Vec<_> = steps.iter().map(|s| s.point).collect();
    let p = plateau(&points)?;
    let first = steps.iter().find(|s| s.point.users == p.users.0)?;
    let (before, after) = (held(first)?, held(last)?);
    let db = last.judged.tiers.iter().find(|t| t.tier == "db");
    if !queued_inside((before, after), db.map(|t| t.cpu_util)) {
        return None;
    }
    let cpu = db.map_or(String::new(), |t| {
        format!(
            ", while the database used {:.0}% of its CPU",
            t.cpu_util * 100.0
        )
    });
    let mut evidence = vec![format!(
        "each pooled connection was held {before:.0} ms a request at {} users and {after:.0} ms at {}, \
         at {:.0}-{:.0} req/s{cpu}: the requests queued inside the database, and the pool is where that queue shows",
        p.users.0,
        p.users.1,
        p.tps.0.min(p.tps.1),
        p.tps.0.max(p.tps.1),
    )];
    evidence.extend(named.evidence.iter().cloned());
    evidence.push(
        "what its sessions wait on (a row lock, I/O, a slow statement) the lab did not read: \
         give it the database's URL (--tier db=postgres://USER@HOST/DB or mysql://...) to see"
            .into(),
    );
    Some(Verdict {
        tier: Some("db".into()),
        resource: Some(Kind::Waits),
        summary: format!(
            "the database's waits were the limit, not {}: its connections were held longer as more were given, at the same throughput",
            named.summary.trim_end_matches(" was saturated")
        ),
        evidence,
        ..Default::default()
    })
}

/// The time a request held a pooled connection, ms, where the app timed it; else the
/// time its threads spent in a read from the database, where its JVM was sampled.
fn held(s: &Step) -> Option<f64> {
    let timed = |b: &Breakdown| {
        b.parts
            .iter()
            .find(|p| p.part == HOLDING)
            .map(|p| p.ms)
            .filter(|ms| *ms > 0.0)
    };
    s.judged
        .breakdown
        .as_ref()
        .and_then(timed)
        .or_else(|| in_state(s, State::Database))
}

/// The time a request spent in `state`, ms, from the app's JVMs' thread dumps: by
/// Little's law, their request threads in it over the throughput.
fn in_state(s: &Step, state: State) -> Option<f64> {
    let threads: f64 = app_threads(s).filter_map(|t| t.states.get(&state)).sum();
    (threads > 0.0 && s.point.tps > 0.0).then(|| threads / s.point.tps * 1000.0)
}

/// The app tier's sampled JVMs at step `s`.
fn app_threads<'a>(
    s: &'a Step,
) -> impl Iterator<Item = &'a super::thread_states::ThreadStates> + 'a {
    s.judged.jvm_threads.iter().filter(|t| t.tier == "app")
}

/// The verdict of a configuration that plateaued with its app's request threads mostly
/// in a read from another service (a share [`THREADS_WAITING_SHARE`] of the busy ones at
/// its last step) and that read [`HOLD_GREW`] times longer a request at flat throughput,
/// nothing harder saturated: the service the app calls, which the lab was not given.
pub fn service_verdict(steps: &[Step]) -> Option<Verdict> {
    let last = steps.last()?;
    if last
        .judged
        .resources
        .iter()
        .any(|r| r.saturated && hard(r.resource))
    {
        return None;
    }
    let points: Vec<_> = steps.iter().map(|s| s.point).collect();
    let p = plateau(&points)?;
    let first = steps.iter().find(|s| s.point.users == p.users.0)?;
    let (before, after) = (
        in_state(first, State::Downstream)?,
        in_state(last, State::Downstream)?,
    );
    let (waiting, busy) = app_threads(last).fold((0.0, 0.0), |(w, b), t| {
        let busy: f64 = t
            .states
            .iter()
            .filter(|(s, _)| **s != State::Idle)
            .map(|(_, n)| n)
            .sum();
        (
            w + t.states.get(&State::Downstream).copied().unwrap_or(0.0),
            b + busy,
        )
    });
    queued_in_service((before, after), (waiting, busy))
        .then(|| service(&p, (before, after), (waiting, busy)))
}

/// Whether a request's read from another service, `before` then `after` ms over a
/// plateau, with `waiting` of the app's `busy` request threads in it at the end, was a
/// queue in that service: [`HOLD_GREW`] times longer, and most of the busy threads.
fn queued_in_service((before, after): (f64, f64), (waiting, busy): (f64, f64)) -> bool {
    after >= before * HOLD_GREW && waiting >= THREADS_WAITING_SHARE * busy && waiting > 0.0
}

/// A saturated resource that is the limit whatever the app waits on.
fn hard(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Cpu | Kind::BusiestThread | Kind::Heap | Kind::Monitor
    )
}

fn service(p: &Plateau, (before, after): (f64, f64), (waiting, busy): (f64, f64)) -> Verdict {
    Verdict {
        tier: Some("app".into()),
        resource: Some(Kind::Downstream),
        summary: "a service the app calls was the limit: its requests queued there, as more were sent at the same throughput".into(),
        evidence: vec![
            format!(
                "the app's request threads spent {before:.0} ms a request in a read from another service at {} users and {after:.0} ms at {}, at {:.0}-{:.0} req/s: requests queued in that service",
                p.users.0,
                p.users.1,
                p.tps.0.min(p.tps.1),
                p.tps.0.max(p.tps.1),
            ),
            format!("{waiting:.1} of the app's {busy:.1} busy request threads were in that read, on average, at {} users", p.users.1),
            "the lab was not given that service: list it as a tier (--tier NAME=PID, or its metrics URL) to see what it is short of".into(),
        ],
        ..Default::default()
    }
}

/// Whether connections held `before` then `after` ms a request over a plateau, the
/// database's CPU at `db_cpu` of its budget (if it is a tier), were held by requests
/// queued inside it: held [`HOLD_GREW`] times longer, its CPU not full (a full CPU is
/// named as such).
fn queued_inside((before, after): (f64, f64), db_cpu: Option<f64>) -> bool {
    after >= before * HOLD_GREW && db_cpu.is_none_or(|u| u < CPU_SATURATED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_held_longer_at_flat_throughput_queued_inside_a_database_with_cpu_to_spare() {
        let table = [
            ((71.0, 138.0), Some(0.12), true),
            ((71.0, 71.0 * HOLD_GREW), None, true),
            ((71.0, 71.0 * HOLD_GREW - 1.0), Some(0.12), false),
            // Its CPU full: that is the limit, and the rules name it.
            ((71.0, 138.0), Some(CPU_SATURATED), false),
        ];
        for (held, cpu, inside) in table {
            assert_eq!(queued_inside(held, cpu), inside, "{held:?} {cpu:?}");
        }
    }

    #[test]
    fn a_read_from_another_service_grown_at_flat_throughput_by_most_threads_is_its_queue() {
        let table = [
            ((40.0, 160.0), (15.0, 16.0), true),
            ((40.0, 40.0 * HOLD_GREW), (8.0, 16.0), true),
            // The read as long at any load: a pool in front of it limits, not it.
            ((40.0, 42.0), (15.0, 16.0), false),
            // Grown, but most busy threads were elsewhere (on CPU, in the database).
            ((40.0, 160.0), (7.0, 16.0), false),
            ((40.0, 160.0), (0.0, 0.0), false),
        ];
        for (ms, threads, queued) in table {
            assert_eq!(queued_in_service(ms, threads), queued, "{ms:?} {threads:?}");
        }
    }
}
