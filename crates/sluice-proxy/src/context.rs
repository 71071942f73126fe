//! What the request path needs from its worker, and nothing else: the current
//! generation, the pool of server connections, the buffer stash, randomness, and whether
//! the worker is draining. The worker owns it; every connection borrows it.

use crate::access_log::{Entry, FLUSH_AT};
use crate::downstream::buffers::Stash;
use crate::idle_waits::IdleWaits;
use crate::metrics::ProxyStats;
use crate::state::generation::{Generation, Shared};
use crate::upstream::pool::Pool;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::Notify;

pub struct Context {
    generation: RefCell<Rc<Generation>>,
    pub pool: Pool,
    /// Buffers of connections that are busy now and then idle.
    pub stash: Stash,
    /// How long idle client connections may wait for their next bytes.
    pub idle: IdleWaits,
    rng: Cell<u64>,
    /// Access log lines not written yet (see `access_log`).
    log: RefCell<Vec<u8>>,
    draining: Cell<bool>,
    drain: Notify,
}

impl Context {
    #[cfg(test)]
    pub fn new(shared: Arc<Shared>, seed: u64) -> Self {
        Self::with_stats(shared, seed, Arc::default())
    }

    /// A worker's context, its pools shown in `stats`.
    pub fn with_stats(shared: Arc<Shared>, seed: u64, stats: Arc<ProxyStats>) -> Self {
        Context {
            generation: RefCell::new(Rc::new(Generation::new(shared))),
            pool: Pool::new(stats),
            stash: Stash::default(),
            idle: IdleWaits::default(),
            rng: Cell::new(seed | 1),
            log: RefCell::new(Vec::new()),
            draining: Cell::new(false),
            drain: Notify::new(),
        }
    }

    /// The current generation; a request keeps the one it started with.
    pub fn generation(&self) -> Rc<Generation> {
        self.generation.borrow().clone()
    }

    /// Makes `shared` the generation new requests start with.
    pub fn apply(&self, shared: Arc<Shared>) {
        *self.generation.borrow_mut() = Rc::new(Generation::new(shared));
    }

    /// Appends a line to the access log of `generation` (written out in batches).
    pub fn log(&self, generation: &Generation, entry: &Entry<'_>) {
        let Some(log) = &generation.shared.access_log else {
            return;
        };
        let mut buf = self.log.borrow_mut();
        entry.write(log.config.format, &mut buf);
        if buf.len() >= FLUSH_AT {
            log.write(&mut buf);
        }
    }

    /// Writes out the access log lines buffered so far.
    pub fn flush_log(&self) {
        let mut buf = self.log.borrow_mut();
        if buf.is_empty() {
            return;
        }
        match &self.generation().shared.access_log {
            Some(log) => log.write(&mut buf),
            None => buf.clear(),
        }
    }

    pub fn draining(&self) -> bool {
        self.draining.get()
    }

    /// Completes when the worker starts draining (call [`Context::draining`] first).
    pub fn drain_signal(&self) -> tokio::sync::futures::Notified<'_> {
        self.drain.notified()
    }

    /// Marks the worker as draining and wakes everything waiting for that.
    pub fn start_draining(&self) {
        self.draining.set(true);
        self.drain.notify_waiters();
        self.idle.end_all();
    }

    /// A random word for the randomised balancers (xorshift64*: fast, and statistical
    /// quality is all they need).
    pub fn random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}
