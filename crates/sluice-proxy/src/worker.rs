//! A worker: one thread, one single-threaded async runtime, its own listeners and its own
//! pool of upstream connections. What it shares with other workers is the per-upstream
//! state in `Shared` (balancers, in-flight counts, health).

use crate::buffers::Stash;
use crate::client;
use crate::pool::Pool;
use crate::state::{Generation, Shared};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch, Notify};

pub struct Worker {
    generation: RefCell<Rc<Generation>>,
    pub pool: Pool,
    /// Buffers of connections that are busy now and then idle.
    pub stash: Stash,
    /// A stop signal per listening address, for listeners a reload removes.
    listeners: RefCell<HashMap<SocketAddr, Rc<Notify>>>,
    draining: Cell<bool>,
    drain: Notify,
    connections: Cell<usize>,
    all_closed: Notify,
    rng: Cell<u64>,
}

/// A change sent to every worker by a reload.
pub struct Reload {
    pub shared: Arc<Shared>,
    /// This worker's sockets for newly added listen addresses.
    pub listeners: Vec<std::net::TcpListener>,
    /// Listen addresses to stop accepting on.
    pub closed: Vec<SocketAddr>,
}

impl Worker {
    fn new(shared: Arc<Shared>, seed: u64) -> Self {
        Worker {
            generation: RefCell::new(Rc::new(Generation::new(shared))),
            pool: Pool::default(),
            stash: Stash::default(),
            listeners: RefCell::new(HashMap::new()),
            draining: Cell::new(false),
            drain: Notify::new(),
            connections: Cell::new(0),
            all_closed: Notify::new(),
            rng: Cell::new(seed | 1),
        }
    }

    /// The current generation; a request keeps the one it started with.
    pub fn gen(&self) -> Rc<Generation> {
        self.generation.borrow().clone()
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
    pub shared: Arc<Shared>,
    pub listeners: Vec<std::net::TcpListener>,
    pub shutdown: watch::Receiver<bool>,
    pub reloads: mpsc::UnboundedReceiver<Reload>,
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
        let w = Rc::new(Worker::new(start.shared, seed));
        listen(&w, start.listeners)?;
        tokio::task::spawn_local(reap_idle(w.clone()));
        tokio::task::spawn_local(apply_reloads(w.clone(), start.reloads));
        let mut shutdown = start.shutdown;
        let _ = shutdown.wait_for(|stop| *stop).await;
        drain(&w).await;
        Ok(())
    })
}

/// Starts accepting on `listeners`.
fn listen(w: &Rc<Worker>, listeners: Vec<std::net::TcpListener>) -> std::io::Result<()> {
    for listener in listeners {
        let listener = TcpListener::from_std(listener)?;
        let stop = Rc::new(Notify::new());
        w.listeners
            .borrow_mut()
            .insert(listener.local_addr()?, stop.clone());
        tokio::task::spawn_local(accept_loop(w.clone(), listener, stop));
    }
    Ok(())
}

async fn apply_reloads(w: Rc<Worker>, mut reloads: mpsc::UnboundedReceiver<Reload>) {
    while let Some(reload) = reloads.recv().await {
        *w.generation.borrow_mut() = Rc::new(Generation::new(reload.shared));
        for addr in reload.closed {
            if let Some(stop) = w.listeners.borrow_mut().remove(&addr) {
                stop.notify_one();
            }
        }
        if let Err(e) = listen(&w, reload.listeners) {
            tracing::error!(cause = %e, "could not start a new listener");
        }
    }
}

async fn accept_loop(w: Rc<Worker>, listener: TcpListener, stop: Rc<Notify>) {
    loop {
        // Also checked here: a drain that began while we slept after an error is not missed.
        if w.draining() {
            return;
        }
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = w.drain_signal() => return,
            _ = stop.notified() => return,
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
    if tokio::time::timeout(w.gen().shared.config.shutdown_grace, closed)
        .await
        .is_err()
    {
        tracing::warn!(
            open = w.connections.get(),
            "grace period over; closing remaining connections"
        );
    }
}

/// Closes idle pooled connections that expired or whose server left the config.
async fn reap_idle(w: Rc<Worker>) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        let gen = w.gen();
        w.pool.reap(|addr| gen.shared.addresses.contains(addr));
    }
}
