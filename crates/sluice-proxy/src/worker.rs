//! A worker: one thread, one single-threaded async runtime, its own listeners, routes
//! and connection pools. Nothing on the request path is shared with other workers except
//! the in-flight counters.

use crate::client;
use crate::route::Router;
use crate::upstream::{SharedLoad, UpstreamState};
use sluice_config::Config;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};

pub struct Worker {
    pub config: Arc<Config>,
    pub router: Router,
    pub upstreams: Vec<UpstreamState>,
    draining: Cell<bool>,
    drain: Notify,
    connections: Cell<usize>,
    all_closed: Notify,
    rng: Cell<u64>,
}

impl Worker {
    fn new(config: Arc<Config>, loads: &[Arc<SharedLoad>], seed: u64) -> Self {
        let upstreams = config
            .upstreams
            .iter()
            .zip(loads)
            .map(|(u, load)| UpstreamState::new(u.clone(), load.clone()))
            .collect();
        Worker {
            router: Router::new(&config),
            config,
            upstreams,
            draining: Cell::new(false),
            drain: Notify::new(),
            connections: Cell::new(0),
            all_closed: Notify::new(),
            rng: Cell::new(seed | 1),
        }
    }

    pub fn draining(&self) -> bool {
        self.draining.get()
    }

    /// Completes when the worker starts draining (call [`Worker::draining`] first).
    pub fn drain_signal(&self) -> tokio::sync::futures::Notified<'_> {
        self.drain.notified()
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

/// What a worker thread is started with.
pub struct Start {
    pub index: usize,
    pub config: Arc<Config>,
    pub loads: Vec<Arc<SharedLoad>>,
    pub listeners: Vec<std::net::TcpListener>,
    pub shutdown: watch::Receiver<bool>,
}

/// Runs a worker until shutdown and the end of its grace period.
pub fn run(start: Start) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(start.index as u64 + 1)
            ^ u64::from(std::process::id());
        let w = Rc::new(Worker::new(start.config.clone(), &start.loads, seed));
        for listener in start.listeners {
            let listener = TcpListener::from_std(listener)?;
            tokio::task::spawn_local(accept_loop(w.clone(), listener));
        }
        tokio::task::spawn_local(reap_idle(w.clone()));
        let mut shutdown = start.shutdown;
        let _ = shutdown.wait_for(|stop| *stop).await;
        drain(&w).await;
        Ok(())
    })
}

async fn accept_loop(w: Rc<Worker>, listener: TcpListener) {
    loop {
        // Also checked here: a drain that began while we slept after an error is not missed.
        if w.draining() {
            return;
        }
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = w.drain_signal() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let open = Open::new(w.clone());
                tokio::task::spawn_local(async move {
                    client::serve(&open.0, stream, peer).await;
                });
            }
            Err(e) => {
                // Out of file descriptors or similar: keep serving the connections we have.
                tracing::warn!(cause = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

/// Counts one open client connection for as long as it lives. Counted by a guard so
/// that even a task that panics is uncounted, and a drain never waits for a ghost.
struct Open(Rc<Worker>);

impl Open {
    fn new(w: Rc<Worker>) -> Self {
        w.connections.set(w.connections.get() + 1);
        Open(w)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let w = &self.0;
        w.connections.set(w.connections.get() - 1);
        if w.connections.get() == 0 {
            w.all_closed.notify_waiters();
        }
    }
}

/// Stops accepting, lets requests in flight finish, and waits at most the grace period.
async fn drain(w: &Worker) {
    w.draining.set(true);
    w.drain.notify_waiters();
    let closed = async {
        while w.connections.get() > 0 {
            let wait = w.all_closed.notified();
            if w.connections.get() == 0 {
                break;
            }
            wait.await;
        }
    };
    if tokio::time::timeout(w.config.shutdown_grace, closed)
        .await
        .is_err()
    {
        tracing::warn!(
            open = w.connections.get(),
            "grace period over; closing remaining connections"
        );
    }
}

async fn reap_idle(w: Rc<Worker>) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        w.upstreams.iter().for_each(UpstreamState::reap);
    }
}
