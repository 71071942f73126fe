//! A server's trial limit: a `max_conns` set through the admin API for a lease, in place
//! of the config's, which comes back when the lease runs out or the trial is ended.
//!
//! It exists for a tool that tries a larger limit to see whether throughput follows
//! (`sluice lab`'s proof: a limit set exactly at what the servers behind it can do moves
//! nothing when raised, one below it does). Such a change must never outlive the tool:
//! the balancer ends a lease that was not renewed by itself (`runtime::leases`), as it
//! does drains. A lasting limit belongs in the config file, so a trial always has a
//! lease. Time is passed in (nanoseconds on [`crate::clock::now_ns`]'s clock).
//!
//! Workers never read this: they read the server's limit, an atomic that the server
//! recomputes when its trial changes ([`crate::state::group::ServerState`]).

use std::sync::Mutex;
use std::time::Duration;

/// A server's trial `max_conns`, if it has one, and when its lease runs out.
#[derive(Default)]
pub struct TrialLimit {
    held: Mutex<Option<Held>>,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    max_conns: u32,
    /// When the lease runs out (ns).
    until: u64,
}

impl TrialLimit {
    /// The trial `max_conns`, while one holds.
    pub fn max_conns(&self) -> Option<u32> {
        self.lock().map(|h| h.max_conns)
    }

    /// How long its lease has left at `now`, while a trial holds.
    pub fn lease_left(&self, now: u64) -> Option<Duration> {
        let held = (*self.lock())?;
        Some(Duration::from_nanos(held.until.saturating_sub(now)))
    }

    /// Holds `max_conns` for `lease` from `now` (a renewal when it holds already).
    /// Returns whether the limit changed: a renewal at the same value does not.
    pub fn set(&self, max_conns: u32, lease: Duration, now: u64) -> bool {
        let mut held = self.lock();
        let was = held.map(|h| h.max_conns);
        *held = Some(Held {
            max_conns,
            until: now.saturating_add(lease.as_nanos() as u64),
        });
        was != Some(max_conns)
    }

    /// Ends the trial; returns whether one held.
    pub fn end(&self) -> bool {
        self.lock().take().is_some()
    }

    /// Ends the trial if its lease ran out at `now`; returns whether it did.
    pub fn expire(&self, now: u64) -> bool {
        let mut held = self.lock();
        match *held {
            Some(h) if h.until <= now => {
                *held = None;
                true
            }
            _ => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_trial_holds_for_its_lease_and_a_renewal_at_the_same_value_changes_nothing() {
        let t = TrialLimit::default();
        assert_eq!(t.max_conns(), None);
        assert!(t.set(30, Duration::from_secs(1), 0));
        assert!(!t.set(30, Duration::from_secs(1), S / 2), "a renewal");
        assert!(t.set(45, Duration::from_secs(1), S / 2), "another value");
        assert!(!t.expire(S));
        assert_eq!(t.lease_left(S), Some(Duration::from_millis(500)));
        assert_eq!(t.max_conns(), Some(45));
        assert!(t.expire(S + S / 2));
        assert_eq!((t.max_conns(), t.lease_left(2 * S)), (None, None));
        assert!(!t.expire(3 * S));
    }

    #[test]
    fn ending_a_trial_says_whether_one_held() {
        let t = TrialLimit::default();
        assert!(!t.end());
        t.set(10, Duration::from_secs(60), 0);
        assert!(t.end());
        assert_eq!(t.max_conns(), None);
        assert!(!t.expire(u64::MAX));
    }
}
