//! The proof's bar: whether enlarging the named resource, and not the runner-up, moved
//! throughput enough to confirm a verdict.

use super::thresholds::{PROOF_GAIN_PCT, PROOF_RUNNER_UP_PCT};

/// Whether the proof's gains confirm the verdict: the named resource, enlarged, gains
/// [`PROOF_GAIN_PCT`] or more; the runner-up, enlarged, under [`PROOF_RUNNER_UP_PCT`] or
/// under a third of the named one's gain (on a shared, noisy machine a runner-up may
/// move by a few percent either way).
pub fn confirms(named_gain_pct: f64, runner_up_gain_pct: Option<f64>) -> bool {
    named_gain_pct >= PROOF_GAIN_PCT
        && runner_up_gain_pct.is_none_or(|r| r < (named_gain_pct / 3.0).max(PROOF_RUNNER_UP_PCT))
}
