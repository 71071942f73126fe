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
//! not at all): where they are, `database` names what they wait on.

use super::plateau::{plateau, Step};
use super::thresholds::{CPU_SATURATED, HOLD_GREW};
use super::{Breakdown, Kind, Verdict};

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
    let (before, after) = (
        held(first.judged.breakdown.as_ref()?)?,
        held(last.judged.breakdown.as_ref()?)?,
    );
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

/// The time a request held a pooled connection, ms, where the app timed it.
fn held(b: &Breakdown) -> Option<f64> {
    b.parts
        .iter()
        .find(|p| p.part == HOLDING)
        .map(|p| p.ms)
        .filter(|ms| *ms > 0.0)
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
}
