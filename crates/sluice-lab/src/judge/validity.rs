//! Whether a step measured the tiers at all: the load generator under its CPU, and
//! the users configured actually in the system (Little's law).

use super::thresholds::{
    CPU_THROTTLED_PCT, CPU_THROTTLED_UTIL, GENERATOR_BUSY, LITTLES_LAW_TOLERANCE,
};
use super::{round2, throttled_pct, Finding, FindingKind, Load, TierFigures};
use crate::sample::Reading;

/// The load generator's CPU over a step: its share of the cores it can use, and the
/// percent of its cgroup's quota periods it was throttled in (0 without a quota).
#[derive(Debug, Clone, Copy, Default)]
pub struct GeneratorCpu {
    pub util: f64,
    pub throttled_pct: f64,
}

impl GeneratorCpu {
    /// The generator's CPU between readings `first` and `last`, `seconds` apart, on the
    /// `cores` it can use.
    pub(super) fn between(first: &Reading, last: &Reading, seconds: f64, cores: f64) -> Self {
        GeneratorCpu {
            util: (last.generator_cpu_s - first.generator_cpu_s) / (seconds * cores),
            throttled_pct: throttled_pct(&first.generator_throttling, &last.generator_throttling),
        }
    }

    /// Short of CPU by the rule a tier's CPU is saturated by: busy, or nearly so while
    /// its quota stopped it in most periods (over a short step, on a busy machine, a
    /// generator held at its quota can read as 70-80% of it).
    pub fn short(self) -> bool {
        self.util >= GENERATOR_BUSY
            || (self.util >= CPU_THROTTLED_UTIL && self.throttled_pct >= CPU_THROTTLED_PCT)
    }
}

/// A generator at its CPU, or users not in the system, make a step measure the
/// generator rather than the tiers.
pub(super) fn validity(
    load: Load,
    generator: GeneratorCpu,
    users_in_system: f64,
) -> Option<String> {
    if generator.short() {
        let throttled = if generator.throttled_pct > 0.0 {
            format!(
                ", throttled in {:.0}% of its quota periods",
                generator.throttled_pct
            )
        } else {
            String::new()
        };
        return Some(format!(
            "the load generator used {:.0}% of the {} core{} it can use{throttled}: it, not a tier, limited the step",
            generator.util * 100.0,
            round2(load.generator_cores),
            if load.generator_cores == 1.0 { "" } else { "s" }
        ));
    }
    let n = load.users as f64;
    if load.littles_law
        && load.requests > 0
        && (users_in_system - n).abs() / n > LITTLES_LAW_TOLERANCE
    {
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

/// Users missing from Little's law (`why`) while a tier left connections unaccepted, or
/// requests failed, were held by that tier, not idle in the generator: evidence, said as
/// a finding, not an invalid step. A generator short of CPU stays the reason.
pub(super) fn held(
    why: Option<String>,
    tiers: &[TierFigures],
    load: Load,
    generator: GeneratorCpu,
) -> (Option<String>, Option<Finding>) {
    let held = tiers.iter().any(|t| t.accept_queue_max > 0) || load.errors > 0;
    match why {
        Some(why) if held && !generator.short() => {
            let text = format!(
                "{why}: the others waited on requests a tier had not answered when the step ended"
            );
            (
                None,
                Some(Finding::new(FindingKind::UsersHeld, "loadgen", text)),
            )
        }
        why => (why, None),
    }
}
