//! The proof's bar: whether enlarging the named resource, and not the runner-up, moved
//! throughput enough, above the noise of identical runs, to confirm a verdict.

use super::thresholds::{CONTROL_DRIFT_PCT, PROOF_GAIN_PCT, PROOF_RUNNER_UP_PCT};

/// Whether the proof's gains confirm the verdict, `noise_pct` being how far the control
/// run (the step again, unchanged) moved: the named resource, enlarged, gains
/// [`PROOF_GAIN_PCT`] more than the noise; the runner-up, enlarged, stays under
/// [`PROOF_RUNNER_UP_PCT`], under the noise, or under a third of the named one's gain
/// (on a shared, noisy machine a runner-up may move by a few percent either way).
pub fn confirms(named_gain_pct: f64, runner_up_gain_pct: Option<f64>, noise_pct: f64) -> bool {
    let noise = noise_pct.abs();
    let runner_up_bar = (named_gain_pct / 3.0).max(PROOF_RUNNER_UP_PCT).max(noise);
    settled(noise)
        && named_gain_pct >= PROOF_GAIN_PCT + noise
        && runner_up_gain_pct.is_none_or(|r| r < runner_up_bar)
}

/// Whether a control that moved `drift_pct` from its step is quiet enough to measure
/// gains against ([`CONTROL_DRIFT_PCT`]).
pub fn settled(drift_pct: f64) -> bool {
    drift_pct.abs() <= CONTROL_DRIFT_PCT
}
