//! Message delivery of a STOMP scenario: every SEND is expected at every user then
//! subscribed to its destination (as far as this generator knows: once the broker's
//! RECEIPT came back), and each copy that arrives is matched to it by its marker. What
//! has not arrived when the step ends is lost. A user whose SUBSCRIBE is written but
//! not yet confirmed may or may not get a copy: if it does, the copy counts as due and
//! delivered; if not, it is not lost. Latency runs from just before the SEND was
//! written to the copy's arrival.
//!
//! One tracker per step, shared by the worker threads (a subscriber and the sender
//! may be on different threads); a lock per SEND and per arrival is far below the
//! cost of the WebSocket frames themselves.

use crate::stats::Latency;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

#[derive(Default)]
pub struct Deliveries {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Destination -> the users subscribed to it, and whether the broker confirmed it.
    subscribers: HashMap<String, Vec<(u32, bool)>>,
    /// (sender, number) -> when it went and who has yet to receive it.
    pending: HashMap<(u32, u32), Pending>,
    /// User -> how many copies it has yet to receive.
    due: HashMap<u32, u64>,
    summary: DeliverySummary,
}

struct Pending {
    sent: Instant,
    waiting: Vec<u32>,
    /// Users whose subscription was not confirmed yet when it was sent.
    maybe: Vec<u32>,
}

/// What the deliveries of a step came to.
#[derive(Debug, Clone, Default)]
pub struct DeliverySummary {
    /// SENDs written.
    pub messages: u64,
    /// Copies expected: each SEND times its destination's subscribers.
    pub expected: u64,
    pub delivered: u64,
    /// Copies that arrived at a user not expecting them: a second copy, or one whose
    /// SEND crossed the user's SUBSCRIBE (written after the SEND's subscribers were
    /// taken, read by the broker before the SEND) or its DISCONNECT.
    pub unexpected: u64,
    pub latency: Latency,
    /// Copies expected and not arrived (filled in by [`Deliveries::finish`]).
    pub lost: u64,
}

impl DeliverySummary {
    pub fn merge(&mut self, other: &DeliverySummary) {
        self.messages += other.messages;
        self.expected += other.expected;
        self.delivered += other.delivered;
        self.unexpected += other.unexpected;
        self.lost += other.lost;
        self.latency.merge(&other.latency);
    }
}

impl Deliveries {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The state stays consistent between statements: a panic elsewhere cannot
        // leave it half-updated, so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `user` wrote a SUBSCRIBE to `destination`; `confirmed`: the broker's receipt
    /// came back (or none was asked for).
    pub fn subscribed(&self, destination: &str, user: u32, confirmed: bool) {
        let mut inner = self.lock();
        let subs = inner
            .subscribers
            .entry(destination.to_string())
            .or_default();
        match subs.iter_mut().find(|(u, _)| *u == user) {
            Some(entry) => entry.1 |= confirmed,
            None => subs.push((user, confirmed)),
        }
    }

    pub fn unsubscribed(&self, destination: &str, user: u32) {
        if let Some(subs) = self.lock().subscribers.get_mut(destination) {
            subs.retain(|(u, _)| *u != user);
        }
    }

    /// A SEND by `sender`, number `seq`, is about to be written to `destination`.
    pub fn sending(&self, destination: &str, sender: u32, seq: u32, at: Instant) {
        let mut inner = self.lock();
        let subs = inner.subscribers.get(destination);
        let pick = |confirmed: bool| -> Vec<u32> {
            subs.into_iter()
                .flatten()
                .filter(|(_, c)| *c == confirmed)
                .map(|(u, _)| *u)
                .collect()
        };
        let (waiting, maybe) = (pick(true), pick(false));
        for u in &waiting {
            *inner.due.entry(*u).or_default() += 1;
        }
        inner.summary.messages += 1;
        inner.summary.expected += waiting.len() as u64;
        inner.pending.insert(
            (sender, seq),
            Pending {
                sent: at,
                waiting,
                maybe,
            },
        );
    }

    /// The SEND could not be written: nobody is to expect it.
    pub fn not_sent(&self, sender: u32, seq: u32) {
        let mut inner = self.lock();
        if let Some(p) = inner.pending.remove(&(sender, seq)) {
            inner.summary.messages -= 1;
            inner.summary.expected -= p.waiting.len() as u64;
            for u in p.waiting {
                inner.undue(u);
            }
        }
    }

    /// A copy of (sender, seq) reached `user`.
    pub fn arrived(&self, sender: u32, seq: u32, user: u32, at: Instant) {
        let mut inner = self.lock();
        let inner = &mut *inner;
        let Some(p) = inner.pending.get_mut(&(sender, seq)) else {
            inner.summary.unexpected += 1;
            return;
        };
        if let Some(i) = p.waiting.iter().position(|u| *u == user) {
            p.waiting.swap_remove(i);
            if let Some(n) = inner.due.get_mut(&user) {
                *n = n.saturating_sub(1);
            }
        } else if let Some(i) = p.maybe.iter().position(|u| *u == user) {
            p.maybe.swap_remove(i);
            inner.summary.expected += 1;
        } else {
            inner.summary.unexpected += 1;
            return;
        }
        let sent = p.sent;
        if p.waiting.is_empty() && p.maybe.is_empty() {
            inner.pending.remove(&(sender, seq));
        }
        inner.summary.delivered += 1;
        inner
            .summary
            .latency
            .record(at.saturating_duration_since(sent));
    }

    /// Whether `user` has every copy due to it; if so no later SEND expects it. It
    /// is still subscribed at the broker until it disconnects, so a later copy that
    /// reaches it counts as due and delivered (as for an unconfirmed SUBSCRIBE), and
    /// one that does not is not lost.
    pub fn leave_if_done(&self, user: u32) -> bool {
        let mut inner = self.lock();
        if inner.due.get(&user).is_some_and(|n| *n > 0) {
            return false;
        }
        for subs in inner.subscribers.values_mut() {
            for entry in subs.iter_mut().filter(|(u, _)| *u == user) {
                entry.1 = false;
            }
        }
        true
    }

    /// `user` can receive no more (its connection ended): no later SEND expects it;
    /// what was due to it stays due, and is lost at the end.
    pub fn leave(&self, user: u32) {
        self.lock().forget(user);
    }

    /// The step's summary: what is still due now is lost.
    pub fn finish(&self) -> DeliverySummary {
        let inner = self.lock();
        let mut summary = inner.summary.clone();
        summary.lost = inner.pending.values().map(|p| p.waiting.len() as u64).sum();
        summary
    }
}

impl Inner {
    fn undue(&mut self, user: u32) {
        if let Some(n) = self.due.get_mut(&user) {
            *n = n.saturating_sub(1);
        }
    }

    fn forget(&mut self, user: u32) {
        for subs in self.subscribers.values_mut() {
            subs.retain(|(u, _)| *u != user);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn every_copy_is_delivered_or_lost() {
        let d = Deliveries::default();
        let t0 = Instant::now();
        for u in [1, 2, 3] {
            d.subscribed("/room.0", u, true);
        }
        d.subscribed("/room.1", 4, true);
        d.sending("/room.0", 1, 0, t0);
        d.sending("/room.1", 4, 0, t0);
        d.arrived(1, 0, 1, t0 + Duration::from_millis(2));
        d.arrived(1, 0, 2, t0 + Duration::from_millis(4));
        d.arrived(1, 0, 2, t0 + Duration::from_millis(5));
        assert!(d.leave_if_done(1));
        assert!(!d.leave_if_done(3), "user 3 still waits for one copy");
        d.sending("/room.0", 2, 0, t0);
        d.arrived(2, 0, 2, t0 + Duration::from_millis(1));
        // User 1 is done but still connected: a copy reaching it counts, one that
        // does not (the next) is not lost.
        d.arrived(2, 0, 1, t0 + Duration::from_millis(1));
        d.sending("/room.0", 2, 1, t0);
        d.not_sent(2, 1);
        // User 5's subscription is not confirmed yet: its copy counts if it comes,
        // and is not lost if it does not.
        d.subscribed("/room.1", 5, false);
        d.sending("/room.1", 4, 1, t0);
        d.sending("/room.1", 4, 2, t0);
        d.arrived(4, 1, 5, t0 + Duration::from_millis(1));
        d.arrived(4, 1, 4, t0 + Duration::from_millis(1));
        d.arrived(4, 2, 4, t0 + Duration::from_millis(1));
        let s = d.finish();
        // room.0's first message: 3 copies, 2 arrived; room.1's: 1 copy, none
        // arrived; the second room.0 message was due at users 2 and 3 and reached
        // 1 (done) too; two more to room.1, one of them reaching user 5 too.
        assert_eq!((s.messages, s.expected), (5, 10));
        assert_eq!((s.delivered, s.lost, s.unexpected), (7, 3, 1));
        assert_eq!(s.latency.moments.max_us, 4000);
    }
}
