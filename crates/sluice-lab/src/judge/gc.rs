//! A JVM's GC pauses (Micrometer's `jvm_gc_pause_seconds`): a stall every request in
//! flight waits out. Pausing [`GC_HEAP_FULL_PCT`] of a step, collections run back to
//! back: its heap is what saturated, and its CPU and pools fill as symptoms. Less often,
//! a finding: pauses a share of the step, or the longest pause the latency tail waited
//! out however rarely it paused.

use super::thresholds::{GC_HEAP_FULL_PCT, GC_PAUSED_PCT, GC_TAIL_OVER_MEDIAN, GC_TAIL_SHARE};
use super::{round2, tier_word, Delta, Finding, FindingKind, Kind, Load, Resource};

/// What a JVM's pauses over the step were.
struct Pauses {
    /// Percent of the step.
    pct: f64,
    count: f64,
    longest_ms: f64,
}

fn pauses(d: &Delta) -> Option<Pauses> {
    let paused = d.counter("jvm_gc_pause_seconds_sum");
    (paused > 0.0).then(|| Pauses {
        pct: paused / d.seconds * 100.0,
        count: d.counter("jvm_gc_pause_seconds_count"),
        longest_ms: 1000.0
            * d.series("jvm_gc_pause_seconds_max")
                .into_iter()
                .fold(0.0, f64::max),
    })
}

/// Each JVM's heap: saturated when GC stopped it [`GC_HEAP_FULL_PCT`] of the step.
pub(super) fn heaps(deltas: &[Delta]) -> Vec<Resource> {
    let mut out = Vec::new();
    for d in deltas {
        let Some(p) = pauses(d) else { continue };
        out.push(Resource {
            tier: d.info.tier.clone(),
            resource: Kind::Heap,
            label: format!("{}'s heap (GC)", tier_word(&d.info.tier)),
            utilisation: round2(p.pct / 100.0),
            saturated: p.pct >= GC_HEAP_FULL_PCT,
            evidence: vec![format!(
                "{}: GC stopped the JVM {:.0}% of the step ({:.0} pauses, the longest {:.0} ms)",
                d.info.name, p.pct, p.count, p.longest_ms
            )],
            enlarge: None,
            machine: false,
        });
    }
    out
}

/// Pauses worth saying below a full heap: [`GC_PAUSED_PCT`] of the step, or the longest
/// what the latency tail waited out ([`tail_is_gc`]).
pub(super) fn findings(deltas: &[Delta], load: Load) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in deltas {
        let Some(p) = pauses(d).filter(|p| p.pct < GC_HEAP_FULL_PCT) else {
            continue;
        };
        let name = d.info.name.as_str();
        if p.pct >= GC_PAUSED_PCT {
            let text = format!(
                "{}: GC paused the JVM {:.0}% of the step ({:.0} pauses, the longest {:.0} ms): a stall every request in flight waits out, not a resource that fills; size the heap or the collector",
                d.info.name, p.pct, p.count, p.longest_ms
            );
            out.push(Finding::new(FindingKind::GcPauses, name, text));
        } else if tail_is_gc(p.longest_ms, load) {
            let text = format!(
                "{}: GC pauses line up with the latency tail: the longest pause {:.0} ms against a p99 of {:.0} ms and a median of {:.0} ms ({:.0} pauses, {:.1}% of the step): the slowest requests waited out a pause, a stall, not a saturation; size the heap or the collector",
                d.info.name, p.longest_ms, load.p99_ms, load.p50_ms, p.count, p.pct
            );
            out.push(Finding::new(FindingKind::GcTail, name, text));
        }
    }
    out
}

/// The step has a tail ([`GC_TAIL_OVER_MEDIAN`]) that a pause of `longest_ms` explains.
fn tail_is_gc(longest_ms: f64, load: Load) -> bool {
    load.p99_ms >= GC_TAIL_OVER_MEDIAN * load.p50_ms && longest_ms >= GC_TAIL_SHARE * load.p99_ms
}
