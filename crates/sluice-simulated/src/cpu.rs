//! CPU work of a fixed size: what a simulated app does per request. The amount is
//! calibrated once, on this machine, to take a given time on an idle core; after that it
//! is a count of iterations, so a tier with less CPU (a quota, other load) takes longer,
//! as a real app would. Waiting (a sleep) would not: it ignores the CPU it lacks.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Iterations that take `d` on an idle core here (0 for zero).
pub fn iterations_for(d: Duration) -> u64 {
    if d.is_zero() {
        return 0;
    }
    (per_microsecond() * d.as_secs_f64() * 1e6).round().max(1.0) as u64
}

/// Runs `iterations` of the work.
pub fn burn(iterations: u64) {
    let mut x = black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..iterations {
        // xorshift64: cheap, and the optimiser cannot skip it.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x);
}

/// The variable through which a parent hands its calibration to the tiers it starts
/// (`sluice lab`): a tier calibrating inside a small CPU quota, beside others starting
/// at the same moment, would measure a slower machine and do less work than asked.
pub const RATE_ENV: &str = "SLUICE_CPU_RATE";

/// Iterations per microsecond: from [`RATE_ENV`] when set, else measured once (the
/// fastest of a few tries, so a busy moment during calibration does not shrink the
/// work).
pub fn per_microsecond() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        let given = std::env::var(RATE_ENV)
            .ok()
            .and_then(|v| v.parse::<f64>().ok());
        if let Some(rate) = given.filter(|r| r.is_finite() && *r > 0.0) {
            return rate;
        }
        let n = 200_000;
        (0..5)
            .map(|_| {
                let t = Instant::now();
                burn(n);
                n as f64 / (t.elapsed().as_secs_f64() * 1e6).max(1e-3)
            })
            .fold(0.0, f64::max)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_takes_about_its_time() {
        let n = iterations_for(Duration::from_millis(20));
        let t = Instant::now();
        burn(n);
        let took = t.elapsed();
        // Calibration keeps the fastest of its tries, so only a machine busy through all
        // of them shrinks the work, and not to a quarter; a busy machine now only makes
        // it longer.
        assert!(took >= Duration::from_millis(5), "{took:?}");
        assert_eq!(iterations_for(Duration::ZERO), 0);
    }
}
