//! A server's health as all workers see it: passive ejection after failures, the verdict
//! of active checks, and when it last came back (for slow start).
//!
//! Reading availability on the request path costs two atomic loads; failures, which are
//! rare, take a small per-server lock.

use sluice_config::FailurePolicy;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Ejections in a row double the ejection time, up to this factor.
const MAX_EJECT_FACTOR: u32 = 8;

pub use crate::clock::now_ns;

/// The time, read from the clock only if something asks for it: most picks never do
/// (no server ejected, no slow start), and a clock read is the costliest part of a pick.
#[derive(Default)]
pub struct LazyNow(std::cell::Cell<u64>);

impl LazyNow {
    pub fn get(&self) -> u64 {
        if self.0.get() == 0 {
            self.0.set(now_ns().max(1));
        }
        self.0.get()
    }
}

#[derive(Default)]
struct Failures {
    window_start_ns: u64,
    count: u32,
    /// Ejections since the last success: each one lasts twice as long as the one before.
    ejections: u32,
}

pub struct Health {
    /// The last verdict of active checks (true when there are none).
    checked_up: AtomicBool,
    /// Passive ejection lasts until this time (0: not ejected).
    ejected_until_ns: AtomicU64,
    /// When the server last became available again (0: never away).
    back_at_ns: AtomicU64,
    /// Set by a failure, cleared by a success: lets the common success skip the lock.
    troubled: AtomicBool,
    failures: Mutex<Failures>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            checked_up: AtomicBool::new(true),
            ejected_until_ns: AtomicU64::new(0),
            back_at_ns: AtomicU64::new(0),
            troubled: AtomicBool::new(false),
            failures: Mutex::new(Failures::default()),
        }
    }
}

impl Health {
    pub fn available(&self, now: &LazyNow) -> bool {
        let until = self.ejected_until_ns.load(Ordering::Relaxed);
        self.checked_up.load(Ordering::Relaxed) && (until == 0 || now.get() >= until)
    }

    /// How much of its weight the server gets now: ramps from a small share to all of it
    /// over `slow_start` after the server comes back.
    pub fn ramp(&self, now: &LazyNow, slow_start: Duration) -> f64 {
        let back = self.back_at_ns.load(Ordering::Relaxed);
        if slow_start.is_zero() || back == 0 || now.get() < back {
            return 1.0;
        }
        let elapsed = (now.get() - back) as f64 / slow_start.as_nanos() as f64;
        elapsed.clamp(0.05, 1.0)
    }

    /// Counts a failure. Returns how long the server is now ejected for, when this
    /// failure ejected it.
    pub fn failed(&self, policy: &FailurePolicy, now_ns: u64) -> Option<Duration> {
        if policy.max_fails == 0 || !self.available(&LazyNow(now_ns.into())) {
            return None;
        }
        self.troubled.store(true, Ordering::Relaxed);
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if now_ns.saturating_sub(f.window_start_ns) > policy.fail_window.as_nanos() as u64
            || f.count == 0
        {
            f.window_start_ns = now_ns;
            f.count = 0;
        }
        f.count += 1;
        if f.count < policy.max_fails {
            return None;
        }
        let factor = 1u32 << f.ejections.min(MAX_EJECT_FACTOR.trailing_zeros());
        let eject = policy.eject_for * factor;
        f.count = 0;
        f.ejections += 1;
        let until = now_ns + eject.as_nanos() as u64;
        self.ejected_until_ns.store(until, Ordering::Relaxed);
        self.back_at_ns.store(until, Ordering::Relaxed);
        Some(eject)
    }

    /// Counts a success: the next ejection starts again from the shortest time.
    /// Records a success. True when it ends an ejection: the server is back.
    pub fn succeeded(&self) -> bool {
        // A load first: the common case writes nothing to this shared cache line.
        if !self.troubled.load(Ordering::Relaxed) || !self.troubled.swap(false, Ordering::Relaxed) {
            return false;
        }
        let was_ejected = self.ejected_until_ns.swap(0, Ordering::Relaxed) != 0;
        // Only the back-off: failures within the window still count, so a server failing
        // one request in two is ejected all the same.
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .ejections = 0;
        was_ejected
    }

    /// Records an active check's verdict. True when it changed the state.
    pub fn set_checked(&self, up: bool, now_ns: u64) -> bool {
        let was = self.checked_up.swap(up, Ordering::Relaxed);
        if up && !was {
            self.back_at_ns.store(now_ns, Ordering::Relaxed);
        }
        was != up
    }

    /// When a passive ejection ends, in [`now_ns`] time: 0 or past when not ejected.
    pub fn ejected_until_ns(&self) -> u64 {
        self.ejected_until_ns.load(Ordering::Relaxed)
    }

    pub fn checked_up(&self) -> bool {
        self.checked_up.load(Ordering::Relaxed)
    }

    /// Ends a passive ejection early: active checks have seen the server healthy again.
    pub fn reinstate(&self, now_ns: u64) {
        self.ejected_until_ns.store(0, Ordering::Relaxed);
        self.back_at_ns.store(now_ns, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn at(t: u64) -> LazyNow {
        LazyNow(t.into())
    }

    fn policy() -> FailurePolicy {
        FailurePolicy {
            max_fails: 3,
            fail_window: Duration::from_secs(10),
            eject_for: Duration::from_secs(10),
            fail_status: vec![],
        }
    }

    #[test]
    fn ejects_after_max_fails_in_the_window_and_backs_off() {
        let h = Health::default();
        let p = policy();
        assert_eq!(h.failed(&p, S), None);
        assert_eq!(h.failed(&p, 2 * S), None);
        assert_eq!(h.failed(&p, 3 * S), Some(Duration::from_secs(10)));
        assert!(!h.available(&at(4 * S)) && h.available(&at(13 * S)));
        // Failing again right after coming back: twice as long.
        for t in [14, 15] {
            assert_eq!(h.failed(&p, t * S), None);
        }
        assert_eq!(h.failed(&p, 16 * S), Some(Duration::from_secs(20)));
        h.succeeded();
        for t in [40, 41] {
            h.failed(&p, t * S);
        }
        assert_eq!(h.failed(&p, 42 * S), Some(Duration::from_secs(10)));
    }

    #[test]
    fn successes_in_between_do_not_hide_failures() {
        let h = Health::default();
        let p = policy();
        let mut ejected = false;
        for t in 0..6 {
            ejected |= h.failed(&p, 1 + t * S / 10).is_some();
            h.succeeded();
        }
        assert!(
            ejected,
            "a server failing one request in two must be ejected"
        );
    }

    #[test]
    fn failures_outside_the_window_do_not_add_up() {
        let h = Health::default();
        let p = policy();
        for t in [0, 11, 22, 33] {
            assert_eq!(h.failed(&p, 1 + t * S), None);
        }
    }

    #[test]
    fn slow_start_ramps_the_share() {
        let h = Health::default();
        let ramp = Duration::from_secs(10);
        assert_eq!(h.ramp(&at(5 * S), ramp), 1.0);
        h.set_checked(false, S);
        h.set_checked(true, 10 * S);
        assert_eq!(h.ramp(&at(10 * S), ramp), 0.05);
        assert!((h.ramp(&at(15 * S), ramp) - 0.5).abs() < 1e-9);
        assert_eq!(h.ramp(&at(30 * S), ramp), 1.0);
    }
}
