//! Whether a step measured the tiers at all: the load generator under its CPU, and
//! the users configured actually in the system (Little's law).

use super::thresholds::{GENERATOR_BUSY, LITTLES_LAW_TOLERANCE};
use super::{round2, Load};

/// A generator at its CPU, or users not in the system, make a step measure the
/// generator rather than the tiers.
pub(super) fn validity(load: Load, generator_util: f64, users_in_system: f64) -> Option<String> {
    if generator_util >= GENERATOR_BUSY {
        return Some(format!(
            "the load generator used {:.0}% of the {} core{} it can use: it, not a tier, limited the step",
            generator_util * 100.0,
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
