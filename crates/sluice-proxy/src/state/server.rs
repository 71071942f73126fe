//! One server's state as all workers and config generations share it: its address,
//! requests in flight and `max_conns`, health, drain flag, counters and last errors.
//! Kept across reloads while the server stays in its upstream.

use crate::io::conn::Counted;
use crate::io::{Conn, ServerStream};
use crate::state::adaptive::Vegas;
use crate::state::drain::Drain;
use crate::state::health::{Health, LazyNow};
use crate::state::idle::SharedIdle;
use crate::state::trial::TrialLimit;
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
    /// Its `max_conns` (its trial limit's, else the newest config's), or its adaptive
    /// limit now (`u32::MAX`: none).
    pub(super) limit: AtomicU32,
    /// Its `max_conns` in the newest config (`u32::MAX`: none): what it has again when
    /// a trial limit ends.
    configured: AtomicU32,
    /// A `max_conns` tried through the admin API for a lease, in place of the config's.
    pub trial: TrialLimit,
    /// Its adaptive limit's state, when its upstream has `limit = "adaptive"`.
    pub(super) adaptive: Mutex<Option<Vegas>>,
    pub health: Health,
    /// Its idle connections while it is limited (see [`crate::state::idle`]).
    pub idle: SharedIdle,
    /// Connections open to it, in use or idle, counted while it is limited.
    conns: Arc<AtomicU32>,
    /// Set when a reload takes the server out of its upstream: its tunnels close.
    retired: AtomicBool,
    retire: Notify,
    /// Its counters and histograms; they survive reloads with the server.
    pub stats: crate::metrics::ServerStats,
    /// Drained through the admin API, for good or for a lease: no new requests
    /// (in-flight ones finish).
    pub drain: Drain,
    /// Its last failures, newest last, for the admin API.
    errors: Mutex<VecDeque<ServerError>>,
}

/// A failure blamed on a server, as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub at: SystemTime,
    pub route: String,
    pub status: u16,
    /// What kind of failure: `Kind::name` (`connect`, `timeout`, `status`...).
    pub kind: &'static str,
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
            configured: AtomicU32::new(u32::MAX),
            trial: TrialLimit::default(),
            adaptive: Mutex::new(None),
            health: Health::default(),
            idle: SharedIdle::default(),
            conns: Arc::default(),
            retired: AtomicBool::new(false),
            retire: Notify::new(),
            stats: Default::default(),
            drain: Drain::default(),
            errors: Mutex::new(VecDeque::new()),
        })
    }

    /// Whether it is drained: no new requests (see [`Drain`]).
    pub fn drained(&self) -> bool {
        self.drain.drained()
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

    /// Takes its upstream's settings: `max_conns`, and whether the limit is adaptive
    /// (an adaptive limit already learnt is kept across a reload). A trial limit holds
    /// over the config's until it ends.
    pub(super) fn configure(&self, max_conns: Option<u32>, adaptive: bool) {
        let configured = max_conns.unwrap_or(u32::MAX);
        self.configured.store(configured, Ordering::Relaxed);
        let max = self.trial.max_conns().unwrap_or(configured);
        let mut vegas = self.adaptive.lock().unwrap_or_else(|p| p.into_inner());
        let limit = match (adaptive, vegas.as_mut()) {
            (false, _) => {
                *vegas = None;
                max
            }
            (true, Some(v)) => v.cap(max),
            (true, None) => vegas.insert(Vegas::new(max)).limit(),
        };
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Its limit again after its trial limit began, changed or ended: the trial's
    /// `max_conns`, else the config's (as the cap of an adaptive limit).
    pub(crate) fn retune(&self) {
        let configured = self.configured.load(Ordering::Relaxed);
        let max = self.trial.max_conns().unwrap_or(configured);
        let mut vegas = self.adaptive.lock().unwrap_or_else(|p| p.into_inner());
        let limit = match vegas.as_mut() {
            Some(v) => v.cap(max),
            None => max,
        };
        self.limit.store(limit, Ordering::Relaxed);
    }

    /// Its `max_conns` in the newest config, if it has one.
    pub fn configured_max_conns(&self) -> Option<u32> {
        Some(self.configured.load(Ordering::Relaxed)).filter(|&m| m != u32::MAX)
    }

    /// Feeds its adaptive limit one response time (see [`crate::state::adaptive`]).
    pub(super) fn learn(&self, rtt: std::time::Duration, failed: bool) {
        let mut vegas = self.adaptive.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = vegas.as_mut() {
            let limit = v.sample(rtt, self.in_flight(), failed);
            self.limit.store(limit, Ordering::Relaxed);
        }
    }

    /// Its `max_conns` or adaptive limit now (`u32::MAX`: none).
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

    /// A connection just opened to it, counted while it lives if the server is limited.
    pub fn opened(&self, stream: ServerStream) -> Conn<ServerStream> {
        let mut conn = Conn::new(stream);
        if self.limited() {
            conn.counted = Some(Counted::new(&self.conns));
        }
        conn
    }

    /// Connections open to it now, counted since it was limited.
    pub fn open_conns(&self) -> u32 {
        self.conns.load(Ordering::Relaxed)
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
