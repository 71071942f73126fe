//! Rate limits (`[limit.NAME]`): requests per second per key with a burst, checked by
//! GCRA (the `governor` crate; nginx's `limit_req` is the same leaky bucket) over one
//! concurrent map per limit shared by all workers, so a client's rate holds for the
//! process however its connections spread over workers. A limit is carried across a
//! reload while its settings stay.
//!
//! Keys that have been quiet long enough to be back at a full burst carry no state and
//! are swept out every few thousand checks, so the map holds only recent clients.

use crate::metrics::Counter;
use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use sluice_config::RateLimit;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Checks between two sweeps of the keys back at a full burst.
const SWEEP_EVERY: u64 = 4096;

pub struct Limiter {
    pub config: RateLimit,
    limiter: DefaultKeyedRateLimiter<Vec<u8>>,
    checks: AtomicU64,
    /// Requests refused (429).
    pub rejected: Counter,
}

impl Limiter {
    pub fn new(config: RateLimit) -> Limiter {
        let period = Duration::from_secs_f64(1.0 / config.per_second);
        let burst = NonZeroU32::new(config.burst.saturating_add(1)).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MAX))
            .allow_burst(burst);
        Limiter {
            config,
            limiter: RateLimiter::keyed(quota),
            checks: AtomicU64::new(0),
            rejected: Counter::default(),
        }
    }

    /// Counts a request of `key`: `None` if it may go on, or how long until one would.
    pub fn check(&self, key: &[u8]) -> Option<Duration> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SWEEP_EVERY == SWEEP_EVERY - 1 {
            self.limiter.retain_recent();
        }
        // governor takes its key type by reference: a key is copied into a Vec here.
        let refused = self.limiter.check_key(&key.to_vec()).err()?;
        self.rejected.add(1);
        Some(refused.wait_time_from(self.limiter.clock().now()))
    }

    /// Keys with state now (clients seen recently, not yet back at a full burst).
    pub fn keys(&self) -> usize {
        self.limiter.len()
    }
}

/// The limiters of `limits`, each carried over from `previous` when its settings did
/// not change.
pub fn carried(limits: &[RateLimit], previous: &[Arc<Limiter>]) -> Vec<Arc<Limiter>> {
    limits
        .iter()
        .map(|l| {
            previous
                .iter()
                .find(|p| p.config == *l)
                .cloned()
                .unwrap_or_else(|| Arc::new(Limiter::new(l.clone())))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(per_second: f64, burst: u32) -> Limiter {
        Limiter::new(RateLimit {
            name: "t".into(),
            key: sluice_config::KeyTemplate { parts: Vec::new() },
            per_second,
            burst,
        })
    }

    #[test]
    fn a_quiet_key_gets_its_burst_then_waits_for_the_rate() {
        let l = limit(1.0, 2);
        for _ in 0..3 {
            assert_eq!(l.check(b"a"), None);
        }
        let wait = l.check(b"a").expect("the fourth is refused");
        assert!(
            wait > Duration::from_millis(900) && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        // Another key has its own bucket.
        assert_eq!(l.check(b"b"), None);
        assert_eq!(l.rejected.get(), 1);
        assert_eq!(l.keys(), 2);
    }
}
