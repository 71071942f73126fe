//! One server's state as all workers and config generations share it: its address,
//! requests in flight and `max_conns`, health, drain flag, counters and last errors.
//! Kept across reloads while the server stays in its upstream.

use crate::state::health::{Health, LazyNow};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tokio::sync::Notify;

/// One server's shared state. Kept across reloads while the server stays in its upstream,
/// so in-flight counts and health survive a config change.
pub struct ServerState {
    pub addr: SocketAddr,
    active: AtomicU32,
    /// Its `max_conns` in the newest config (`u32::MAX`: none).
    pub(super) limit: AtomicU32,
    pub health: Health,
    /// Set when a reload takes the server out of its upstream: its tunnels close.
    retired: AtomicBool,
    retire: Notify,
    /// Its counters and histograms; they survive reloads with the server.
    pub stats: crate::metrics::ServerStats,
    /// Drained by the operator: no new requests (in-flight ones finish).
    drained: AtomicBool,
    /// Its last failures, newest last, for the admin API.
    errors: Mutex<VecDeque<ServerError>>,
}

/// A failure blamed on a server, as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub at: SystemTime,
    pub route: String,
    pub status: u16,
    pub cause: String,
}

/// Failures kept per server.
const KEPT_ERRORS: usize = 20;

impl ServerState {
    pub fn new(addr: SocketAddr) -> Arc<Self> {
        Arc::new(ServerState {
            addr,
            active: AtomicU32::new(0),
            limit: AtomicU32::new(u32::MAX),
            health: Health::default(),
            retired: AtomicBool::new(false),
            retire: Notify::new(),
            stats: Default::default(),
            drained: AtomicBool::new(false),
            errors: Mutex::new(VecDeque::new()),
        })
    }

    /// Stops (true) or resumes (false) sending new requests to the server.
    pub fn set_drained(&self, drained: bool) {
        self.drained.store(drained, Ordering::Relaxed);
    }

    pub fn drained(&self) -> bool {
        self.drained.load(Ordering::Relaxed)
    }

    /// Keeps a failure blamed on the server (a rare path: a lock is fine here).
    pub fn remember(&self, error: ServerError) {
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if errors.len() == KEPT_ERRORS {
            errors.pop_front();
        }
        errors.push_back(error);
    }

    /// Its last failures, oldest first.
    pub fn last_errors(&self) -> Vec<ServerError> {
        let errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        errors.iter().cloned().collect()
    }

    /// Requests (and tunnels) on this server now, all workers together.
    pub fn in_flight(&self) -> u32 {
        self.active.load(Ordering::Relaxed)
    }

    /// Its `max_conns` (`u32::MAX`: none).
    pub fn limit(&self) -> u32 {
        self.limit.load(Ordering::Relaxed)
    }

    pub fn limited(&self) -> bool {
        self.limit() != u32::MAX
    }

    /// Below its `max_conns` (always, without one). Read under the queue's lock when
    /// it has one, so a count and the decision on it agree.
    pub fn has_room(&self) -> bool {
        self.in_flight() < self.limit()
    }

    /// Health allows traffic, and the operator has not drained it.
    pub fn usable(&self, now: &LazyNow) -> bool {
        self.health.available(now) && !self.drained()
    }

    pub(super) fn add_active(&self) {
        self.active.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn sub_active(&self) {
        self.active.fetch_sub(1, Ordering::Relaxed);
    }

    /// Marks the server as gone from the config and wakes its tunnels.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        self.retire.notify_waiters();
    }

    /// Completes once the server has been retired.
    pub async fn retired(&self) {
        loop {
            let notified = self.retire.notified();
            if self.retired.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}
