//! The one clock of the data path.
//!
//! Every deadline and every health timestamp reads time here, through tokio's clock: in
//! a test on a runtime with paused time, timeouts, ejections and slow starts follow the
//! test's clock instead of the wall clock, so their logic runs without sleeping. It
//! also turns Unix seconds into calendar dates, for the log and certificate messages.

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

/// Unix seconds to (year, month, day, hour, minute, second), UTC (Howard Hinnant's
/// days-to-civil algorithm).
pub fn civil(unix: u64) -> (i64, u64, u64, u64, u64, u64) {
    let days = (unix / 86_400) as i64;
    let rest = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u64;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u64;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day, rest / 3600, rest % 3600 / 60, rest % 60)
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
