//! The queue of requests waiting for a server with room, for upstreams whose servers have
//! `max_conns` or an adaptive limit (HAProxy's `maxconn` and its queue). One queue per upstream, shared by all
//! workers and carried across reloads, so the limit holds for the whole process.
//!
//! A slot is handed over, never freed and fought for: when a request on a full server
//! ends, its slot goes straight to the oldest waiter that would take that server (any
//! server, or only its key's server when hashing), and only when nobody waits is the
//! server's count lowered. A new request finds room only where no waiter could use it,
//! so the queue is FIFO for every server. The lock is taken only by upstreams with a
//! limit, or while someone waits; a request that finds room never waits on anything
//! else.
//!
//! It must never hand a waiter a server it cannot use (one it tried already, or one
//! not in its upstream): a waiter names the servers it accepts when it queues.

use crate::metrics::{Counter, Histogram};
use crate::state::health::LazyNow;
use crate::state::server::ServerState;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::oneshot;

/// The waiters, oldest first, under the queue's lock.
pub type Waiters = VecDeque<Waiter>;

#[derive(Default)]
pub struct Queue {
    waiters: Mutex<Waiters>,
    /// How many wait now (read without the lock: the metrics, the release fast path).
    len: AtomicUsize,
    next_id: AtomicU64,
    /// How long requests waited (each once, however its wait ended).
    pub wait: Histogram,
    /// Requests answered 503 because their wait ran out, or the queue was full.
    pub timeouts: Counter,
    pub rejected: Counter,
}

/// A request waiting for a slot.
pub struct Waiter {
    id: u64,
    /// The servers it would take (by address: the same across reloads).
    accepts: Vec<SocketAddr>,
    tx: oneshot::Sender<Handed>,
}

/// Counts one request in flight on a server until dropped; then its slot goes to the
/// next waiter that takes the server, if any. It borrows the queue (no shared count to
/// bump on the path of every request).
pub struct InFlight<'q> {
    server: Option<Arc<ServerState>>,
    queue: &'q Arc<Queue>,
}

impl<'q> InFlight<'q> {
    /// Takes a slot on `server` (its count is raised here).
    pub fn take(server: &Arc<ServerState>, queue: &'q Arc<Queue>) -> InFlight<'q> {
        server.add_active();
        InFlight {
            server: Some(server.clone()),
            queue,
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.queue.release(server);
        }
    }
}

/// A slot handed to a waiter, on its way; released like an [`InFlight`] if the waiter
/// never takes it.
pub struct Handed {
    server: Option<Arc<ServerState>>,
    queue: Arc<Queue>,
}

impl Handed {
    pub fn server(&self) -> &Arc<ServerState> {
        self.server
            .as_ref()
            .expect("a handed slot holds its server until taken")
    }

    /// The slot, counted against `queue` (the one it was handed from).
    pub fn into_in_flight(mut self, queue: &Arc<Queue>) -> InFlight<'_> {
        InFlight {
            server: self.server.take(),
            queue,
        }
    }
}

impl Drop for Handed {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.queue.release(server);
        }
    }
}

impl Queue {
    pub fn lock(&self) -> MutexGuard<'_, Waiters> {
        // Every change to the list is a single push or remove: a panic elsewhere cannot
        // leave it half-updated.
        self.waiters.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Requests waiting now.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues a request that would take any of `accepts` (the caller holds the lock and
    /// found none of them with room).
    pub fn push(self: &Arc<Self>, waiters: &mut Waiters, accepts: Vec<SocketAddr>) -> Queued {
        let (tx, rx) = oneshot::channel();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        waiters.push_back(Waiter { id, accepts, tx });
        self.len.fetch_add(1, Ordering::Relaxed);
        Queued {
            id,
            rx,
            queue: self.clone(),
        }
    }

    /// Gives waiters, oldest first, the room `servers` have now: room a release could
    /// not hand over (the server was ejected then) or a reload made. Called under the
    /// lock before a new request is placed, so it cannot overtake them.
    pub fn pump(self: &Arc<Self>, waiters: &mut Waiters, servers: &[Arc<ServerState>]) {
        let now = LazyNow::default();
        let mut i = 0;
        while i < waiters.len() {
            let room = waiters[i].accepts.iter().find_map(|addr| {
                servers
                    .iter()
                    .find(|s| s.addr == *addr && s.has_room() && s.usable(&now))
            });
            match room {
                Some(server) => {
                    server.add_active();
                    if let Err(back) = self.hand(waiters, i, server.clone()) {
                        back.sub_active();
                    }
                }
                None => i += 1,
            }
        }
    }

    /// A request on `server` ended: its slot goes to the oldest waiter that takes the
    /// server, or the server's count is lowered.
    fn release(self: &Arc<Self>, mut server: Arc<ServerState>) {
        if !server.limited() && self.is_empty() {
            server.sub_active();
            return;
        }
        let mut waiters = self.lock();
        // A limit lowered by a reload, or an ejected server: the slot is not handed on.
        if server.in_flight() <= server.limit() && server.usable(&LazyNow::default()) {
            while let Some(i) = waiters
                .iter()
                .position(|w| w.accepts.contains(&server.addr))
            {
                match self.hand(&mut waiters, i, server) {
                    Ok(()) => return,
                    Err(back) => server = back,
                }
            }
        }
        // Lowered under the lock: a request queuing now either is handed this slot
        // above or sees the room.
        server.sub_active();
        drop(waiters);
    }

    /// Hands a slot on `server` to waiter `i` (taken off the list); the server comes
    /// back if the waiter gave up meanwhile.
    fn hand(
        self: &Arc<Self>,
        waiters: &mut Waiters,
        i: usize,
        server: Arc<ServerState>,
    ) -> Result<(), Arc<ServerState>> {
        let waiter = waiters.remove(i).expect("a waiter at the position found");
        self.len.fetch_sub(1, Ordering::Relaxed);
        let slot = Handed {
            server: Some(server),
            queue: self.clone(),
        };
        waiter.tx.send(slot).map_err(|mut back| {
            back.server
                .take()
                .expect("a slot that was not taken still holds its server")
        })
    }

    /// Takes waiter `id` off the list, if it is still there.
    fn forget(&self, id: u64) {
        let mut waiters = self.lock();
        if let Some(i) = waiters.iter().position(|w| w.id == id) {
            waiters.remove(i);
            self.len.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A request in the queue. Dropping it takes it off the list.
pub struct Queued {
    id: u64,
    rx: oneshot::Receiver<Handed>,
    queue: Arc<Queue>,
}

impl Queued {
    /// Waits up to `timeout` for a slot (`None` when the wait ran out); and how long it
    /// waited.
    pub async fn wait(mut self, timeout: Duration) -> (Option<Handed>, Duration) {
        let started = crate::clock::now();
        let slot = tokio::time::timeout(timeout, &mut self.rx)
            .await
            .ok()
            .and_then(Result::ok);
        let took = started.elapsed();
        self.queue.wait.observe(took);
        if slot.is_none() {
            self.queue.timeouts.add(1);
        }
        (slot, took)
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        // Closed first: a slot handed over from now on comes back to its sender.
        self.rx.close();
        if let Ok(slot) = self.rx.try_recv() {
            // Handed over just as the wait ended: it goes to the next waiter.
            drop(slot);
        }
        self.queue.forget(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(addr: &str, limit: u32) -> Arc<ServerState> {
        let server = ServerState::new(addr.parse().unwrap());
        server.limit.store(limit, Ordering::Relaxed);
        server
    }

    #[test]
    fn a_freed_slot_goes_to_the_oldest_waiter_that_takes_its_server() {
        let queue = Arc::new(Queue::default());
        let (a, b) = (limited("127.0.0.1:1", 1), limited("127.0.0.1:2", 1));
        let on_a = InFlight::take(&a, &queue);
        let on_b = InFlight::take(&b, &queue);
        let mut only_b = queue.push(&mut queue.lock(), vec![b.addr]);
        let gave_up = queue.push(&mut queue.lock(), vec![a.addr, b.addr]);
        let mut any = queue.push(&mut queue.lock(), vec![a.addr, b.addr]);
        drop(gave_up);
        assert_eq!(queue.len(), 2);
        // a's slot: not for the first waiter (b only), the one that left is skipped.
        drop(on_a);
        let handed = any.rx.try_recv().expect("a's slot handed on");
        assert!(Arc::ptr_eq(handed.server(), &a));
        assert_eq!((a.in_flight(), queue.len()), (1, 1));
        // Its request ends: nobody else takes a, so the slot is freed.
        drop(handed);
        assert_eq!(a.in_flight(), 0);
        drop(on_b);
        assert!(Arc::ptr_eq(only_b.rx.try_recv().unwrap().server(), &b));
        // Nobody waits any more: the slots are freed, not handed.
        assert_eq!((a.in_flight(), b.in_flight(), queue.len()), (0, 0, 0));
    }
}
