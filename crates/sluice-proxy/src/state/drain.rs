//! One server's drain: none, permanent (an operator's), or leased (a tool's, such as
//! `sluice lab`, which must renew it or lose it).
//!
//! A lease exists so that a tool that drains servers cannot leave them drained when it
//! is killed: the balancer ends a lease that was not renewed by itself
//! (`runtime::leases`). A tool must never take over an operator's drain, so a leased
//! drain of a server drained permanently is refused. Time is passed in (nanoseconds on
//! [`crate::clock::now_ns`]'s clock), so the rules here run without a clock.
//!
//! Workers read only the `drained` flag, an atomic; the lease is behind a lock that
//! only the admin API and the lease thread take.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A server's drain state.
#[derive(Default)]
pub struct Drain {
    /// What workers read: no new requests while set.
    drained: AtomicBool,
    /// When the drain's lease runs out (ns), if it has one; changed with `drained`
    /// under this lock.
    lease: Mutex<Option<u64>>,
}

/// A leased drain asked of a server that an operator drained without a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server was drained without a lease (by an operator): a leased drain would take over that drain; undrain it first if it is yours")]
pub struct DrainedWithoutLease;

impl Drain {
    /// Whether the server takes no new requests.
    pub fn drained(&self) -> bool {
        self.drained.load(Ordering::Relaxed)
    }

    /// How long its lease has left at `now`, if it is drained with a lease.
    pub fn lease_left(&self, now: u64) -> Option<Duration> {
        let until = (*self.lock())?;
        Some(Duration::from_nanos(until.saturating_sub(now)))
    }

    /// Drains the server: for `lease` from `now` (starting it again if it was leased),
    /// or for good without one (ending any lease). Returns whether its drain state
    /// changed (a renewal does not change it; a lease made permanent does).
    pub fn drain(&self, lease: Option<Duration>, now: u64) -> Result<bool, DrainedWithoutLease> {
        let mut held = self.lock();
        let was = (self.drained(), held.is_some());
        match lease {
            Some(_) if was == (true, false) => return Err(DrainedWithoutLease),
            Some(d) => *held = Some(now.saturating_add(d.as_nanos() as u64)),
            None => *held = None,
        }
        self.drained.store(true, Ordering::Relaxed);
        Ok(was != (true, held.is_some()))
    }

    /// Ends its drain and its lease; returns whether it was drained.
    pub fn undrain(&self) -> bool {
        let mut held = self.lock();
        *held = None;
        self.drained.swap(false, Ordering::Relaxed)
    }

    /// Undrains the server if its lease ran out at `now`; returns whether it did.
    pub fn expire(&self, now: u64) -> bool {
        let mut held = self.lock();
        match *held {
            Some(until) if until <= now => {
                *held = None;
                self.drained.store(false, Ordering::Relaxed);
                true
            }
            _ => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<u64>> {
        self.lease.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_lease_not_renewed_ends_and_a_renewal_changes_nothing() {
        let d = Drain::default();
        assert_eq!(d.drain(Some(Duration::from_secs(1)), 0), Ok(true));
        assert!(d.drained());
        assert_eq!(d.drain(Some(Duration::from_secs(1)), S / 2), Ok(false));
        assert!(!d.expire(S));
        assert_eq!(d.lease_left(S), Some(Duration::from_millis(500)));
        assert!(d.expire(S + S / 2));
        assert!(!d.drained());
        assert_eq!(d.lease_left(2 * S), None);
        assert!(!d.expire(3 * S));
    }

    #[test]
    fn an_operators_drain_is_never_taken_over() {
        let d = Drain::default();
        assert_eq!(d.drain(None, 0), Ok(true));
        assert_eq!(
            d.drain(Some(Duration::from_secs(1)), 0),
            Err(DrainedWithoutLease)
        );
        assert!(d.drained());
        assert!(!d.expire(10 * S));
        assert!(d.drained());
    }

    #[test]
    fn a_permanent_drain_ends_a_lease_and_undrain_ends_both() {
        let d = Drain::default();
        assert_eq!(d.drain(Some(Duration::from_secs(1)), 0), Ok(true));
        assert_eq!(
            d.drain(None, 0),
            Ok(true),
            "leased to permanent is a change"
        );
        assert_eq!(d.drain(None, 0), Ok(false));
        assert!(!d.expire(10 * S));
        assert!(d.undrain());
        assert!(!d.undrain());
        assert_eq!(d.drain(Some(Duration::from_secs(1)), 0), Ok(true));
        assert!(d.undrain());
        assert!(!d.expire(10 * S));
        assert!(!d.drained());
    }
}
