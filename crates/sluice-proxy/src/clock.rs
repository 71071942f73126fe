//! The one clock of the data path.
//!
//! Every deadline and every health timestamp reads time here, through tokio's clock: in
//! a test on a runtime with paused time, timeouts, ejections and slow starts follow the
//! test's clock instead of the wall clock, so their logic runs without sleeping.

use std::sync::OnceLock;
use tokio::time::Instant;

/// Now, as deadlines count it.
pub fn now() -> Instant {
    Instant::now()
}

/// Nanoseconds since the process first asked, on the same clock: a plain number that
/// fits in an atomic, for state shared by all workers (health, latency averages).
pub fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(now);
    now().saturating_duration_since(epoch).as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn follows_paused_time() {
        let before = super::now_ns();
        tokio::time::advance(Duration::from_secs(3600)).await;
        let after = super::now_ns();
        assert!(after - before >= 3_600_000_000_000, "{before} -> {after}");
    }
}
