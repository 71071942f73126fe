//! Which saturated resource the verdict names: a saturated CPU first, then what
//! saturated inside a database (a lock or its I/O: the pools in front of it fill
//! because of it, and more pool only lengthens the queue), else the deepest saturated
//! pool or cap.

use super::thresholds::CPU_SATURATED;
use super::{Kind, Resource, Verdict};

/// What a step with nothing saturated concludes, unless its configuration's steps show
/// a plateau (`plateau.rs`), which says what was measured without it.
pub const HEADROOM: &str = ": more users would load them further";

/// How the choice ranks a kind of resource.
#[derive(PartialEq)]
enum Rank {
    /// Named first, saturated: what the rest of the step waits on (a CPU, a thread, a
    /// heap whose collector fills the CPU).
    Hard,
    /// Inside a database, what the pools in front of it wait on.
    InsideDb,
    /// A pool or cap, by how deep in the request's path it is: a deeper one fills the
    /// shallower ones behind it, never the reverse.
    Depth(u8),
}

fn rank(kind: Kind) -> Rank {
    match kind {
        Kind::Cpu | Kind::BusiestThread | Kind::KeepaliveOff | Kind::Heap => Rank::Hard,
        Kind::Locks | Kind::DiskIo | Kind::Waits | Kind::Downstream => Rank::InsideDb,
        Kind::MaxConnections => Rank::Depth(4),
        Kind::DbPool | Kind::Monitor => Rank::Depth(3),
        Kind::ThreadPool | Kind::Workers => Rank::Depth(2),
        Kind::ConnectionCap => Rank::Depth(1),
        Kind::Queue | Kind::RoomsSplit | Kind::Plateau => Rank::Depth(0),
    }
}

/// The step's verdict: the saturated resource [`chosen`], with the others saturated
/// beside its evidence; else that nothing was, and the busiest.
pub(super) fn choose(resources: &[Resource]) -> Verdict {
    let Some(r) = chosen(resources) else {
        let top = busiest(resources);
        return Verdict {
            tier: None,
            resource: None,
            summary: match top {
                Some(_) => format!("{}{HEADROOM}", nothing_saturated(resources)),
                None => nothing_saturated(resources),
            },
            evidence: top.map(|r| r.evidence.clone()).unwrap_or_default(),
            ..Default::default()
        };
    };
    Verdict {
        tier: Some(r.tier.clone()),
        resource: Some(r.resource),
        summary: format!("{} was saturated", r.label),
        evidence: r
            .evidence
            .iter()
            .cloned()
            .chain(also_saturated(resources, r))
            .collect(),
        ..Default::default()
    }
}

/// Saturated CPU first, by utilisation; else what saturated inside a database; else the
/// deepest saturated pool or cap. `None`: nothing was saturated.
fn chosen(resources: &[Resource]) -> Option<&Resource> {
    // Anything of the database's own tier is as deep as a request goes; the workers of a
    // tier other than the balancer's and the app's are a dependency the app waits on
    // (a service it calls), as deep as its database pool.
    let depth = |r: &Resource| match rank(r.resource) {
        _ if r.tier == "db" => 4,
        _ if r.resource == Kind::Workers && !["lb", "app"].contains(&r.tier.as_str()) => 3,
        Rank::Depth(d) => d,
        Rank::Hard | Rank::InsideDb => 0,
    };
    // A whole machine's CPU (node_exporter) is full when a process on it is: the
    // process, when one is saturated too, is the more useful name.
    // A full heap before any CPU: the collector's threads are what fills that CPU.
    let hard = resources
        .iter()
        .filter(|r| r.saturated && rank(r.resource) == Rank::Hard)
        .max_by(|a, b| {
            (a.resource == Kind::Heap, !a.machine, a.utilisation)
                .partial_cmp(&(b.resource == Kind::Heap, !b.machine, b.utilisation))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    let inside_db = || {
        resources
            .iter()
            .filter(|r| r.saturated && rank(r.resource) == Rank::InsideDb)
            .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))
    };
    let soft = || {
        resources.iter().filter(|r| r.saturated).max_by(|a, b| {
            depth(a)
                .cmp(&depth(b))
                .then(a.utilisation.total_cmp(&b.utilisation))
        })
    };
    hard.or_else(inside_db).or_else(soft)
}

/// The most used resource of a step with nothing saturated. A database's
/// max_connections reached with nobody waiting is not what more users would meet
/// first: the busiest is among the others.
fn busiest(resources: &[Resource]) -> Option<&Resource> {
    resources
        .iter()
        .filter(|r| r.resource != Kind::MaxConnections || resources.len() == 1)
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))
}

/// What a step with nothing saturated measured: "no tier was saturated (the busiest:
/// the app server's CPU, 31%)", or "no tier was sampled".
pub(super) fn nothing_saturated(resources: &[Resource]) -> String {
    match busiest(resources) {
        Some(r) => format!(
            "no tier was saturated (the busiest: {}, {:.0}%)",
            r.label,
            r.utilisation * 100.0
        ),
        None => "no tier was sampled".into(),
    }
}

/// The other saturated resources (not `named`'s kind on another process), so a reader
/// sees what was close.
pub(super) fn also_saturated(resources: &[Resource], named: &Resource) -> Option<String> {
    // One line per line a reader would see: the app servers' pools of one size share
    // a label, and the fullest of them speaks for the rest.
    let mut fullest: Vec<(&str, Kind, f64)> = Vec::new();
    for o in resources.iter().filter(|o| o.saturated) {
        if o.tier == named.tier && o.resource == named.resource {
            continue;
        }
        match fullest.iter_mut().find(|(label, _, _)| *label == o.label) {
            Some((_, _, u)) => *u = u.max(o.utilisation),
            None => fullest.push((&o.label, o.resource, o.utilisation)),
        }
    }
    let others: Vec<String> = fullest
        .iter()
        .map(|(label, kind, u)| {
            // A CPU below CPU_SATURATED is saturated only by the throttling rule: its
            // average reads lower than the quota it kept running into, and it says so.
            let throttled = *kind == Kind::Cpu && *u < CPU_SATURATED;
            let how = if throttled {
                ", throttled at its quota"
            } else {
                ""
            };
            format!("{label} ({:.0}%{how})", u * 100.0)
        })
        .collect();
    (!others.is_empty()).then(|| format!("also saturated: {}", others.join(", ")))
}
