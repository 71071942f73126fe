//! A worker: one thread, one single-threaded async runtime, its own listeners and its own
//! request [`Context`] (pool of upstream connections, buffers). What it shares with other
//! workers is the per-upstream state in `Shared` (balancers, in-flight counts, health).

use crate::client::Client;
use crate::context::Context;
use crate::metrics::{ListenerStats, ProxyStats};
use crate::runtime::capacity::{ClientCap, Slot};
use crate::runtime::listen::Bound;
use crate::session::{self, Parts};
use crate::state::clients::Entered;
use crate::state::generation::{Generation, Shared};
use crate::tls::TlsListener;
use sluice_accept::AcceptBackoff;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch, Notify};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// What the proxy asks of a running worker.
pub enum Order {
    /// Serve with a new configuration.
    Reload(Reload),
    /// Lend a copy of every listening socket (a binary upgrade hands them to the new
    /// process): each with the address it was configured at, told on the channel.
    Lend(std::sync::mpsc::Sender<std::io::Result<Vec<Lent>>>),
}

/// A copy of a worker's listening socket (its own descriptor, the same socket), with the
/// address the config gave its listener.
pub struct Lent {
    pub configured: SocketAddr,
    pub socket: std::os::fd::OwnedFd,
}

/// A change sent to every worker by a reload.
pub struct Reload {
    pub shared: Arc<Shared>,
    /// This worker's sockets for newly added listen addresses.
    pub listeners: Vec<Bound>,
    /// Listen addresses to stop accepting on.
    pub closed: Vec<SocketAddr>,
    /// Told once the worker serves new requests with `shared` and its listeners changed.
    pub applied: std::sync::mpsc::Sender<()>,
}

/// What a worker thread is started with.
pub struct Start {
    pub index: usize,
    pub shared: Arc<Shared>,
    pub listeners: Vec<Bound>,
    pub shutdown: watch::Receiver<bool>,
    /// Turns true once every worker has stopped accepting: then drain.
    pub drain: watch::Receiver<bool>,
    pub reloads: mpsc::UnboundedReceiver<Order>,
    /// Told once the worker has stopped accepting (its listening sockets are closed).
    pub stopped_accepting: std::sync::mpsc::Sender<()>,
    pub stats: Arc<ProxyStats>,
    /// Workers that have not finished their drain yet, all together.
    pub draining_workers: Arc<std::sync::atomic::AtomicUsize>,
    /// Client connections of all workers against what the descriptors allow.
    pub cap: Arc<ClientCap>,
}

/// An accepting listener: its socket (shared with its task, to be lent), its stop
/// signal and its task.
struct Listening {
    listener: Rc<TcpListener>,
    configured: SocketAddr,
    stop: Rc<Notify>,
    task: JoinHandle<()>,
}

struct Worker {
    ctx: Rc<Context>,
    stats: Arc<ProxyStats>,
    /// By bound address; several sockets of one address after a binary upgrade from a
    /// process with more workers (each was handed over, none closed).
    listeners: RefCell<HashMap<SocketAddr, Vec<Listening>>>,
    connections: Cell<usize>,
    all_closed: Notify,
    cap: Arc<ClientCap>,
}

/// Runs a worker until shutdown and the end of its grace period.
pub fn run(start: Start) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    crate::metrics::set_worker(start.index);
    local.block_on(&runtime, async move {
        let seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(start.index as u64 + 1)
            ^ u64::from(std::process::id());
        let w = Rc::new(Worker {
            ctx: Rc::new(Context::with_stats(start.shared, seed, start.stats.clone())),
            stats: start.stats,
            listeners: RefCell::new(HashMap::new()),
            connections: Cell::new(0),
            all_closed: Notify::new(),
            cap: start.cap,
        });
        listen(&w, start.listeners)?;
        tokio::task::spawn_local(reap_idle(w.ctx.clone()));
        let ctx = w.ctx.clone();
        tokio::task::spawn_local(async move { ctx.idle.sweep().await });
        tokio::task::spawn_local(apply_reloads(w.clone(), start.reloads));
        let (mut shutdown, mut drain_now) = (start.shutdown, start.drain);
        let _ = shutdown.wait_for(|stop| *stop).await;
        stop_accepting(&w).await;
        let _ = start.stopped_accepting.send(());
        let _ = drain_now.wait_for(|drain| *drain).await;
        w.ctx.start_draining();
        drain(&w).await;
        w.ctx.flush_log();
        outlive_other_drains(&start.draining_workers, &w.ctx).await;
        Ok(())
    })
}

/// Keeps this worker's runtime (and its I/O driver) running until every worker has
/// drained: a limited server's connections opened here may be in use by another
/// worker (`state::idle`), and would fail with the driver gone. Bounded: every drain
/// ends within the grace period.
async fn outlive_other_drains(draining: &std::sync::atomic::AtomicUsize, ctx: &Context) {
    use std::sync::atomic::Ordering;
    draining.fetch_sub(1, Ordering::AcqRel);
    let grace = ctx.generation().shared.config.shutdown_grace;
    let deadline = tokio::time::Instant::now() + grace + Duration::from_secs(1);
    while draining.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Starts accepting on `listeners`.
fn listen(w: &Rc<Worker>, listeners: Vec<Bound>) -> std::io::Result<()> {
    for (configured, listener) in listeners {
        let listener = Rc::new(TcpListener::from_std(listener)?);
        let addr = listener.local_addr()?;
        let stop = Rc::new(Notify::new());
        let stats = w.stats.listener(addr);
        let accepting = Accepting {
            listener: listener.clone(),
            configured,
            stats,
            stop: stop.clone(),
        };
        let task = tokio::task::spawn_local(accept_loop(w.clone(), accepting));
        let listening = Listening {
            listener,
            configured,
            stop,
            task,
        };
        w.listeners
            .borrow_mut()
            .entry(addr)
            .or_default()
            .push(listening);
    }
    Ok(())
}

/// Stops the listeners on `addr` and waits until their sockets are closed.
async fn unlisten(w: &Worker, addr: SocketAddr) {
    let listening = w.listeners.borrow_mut().remove(&addr);
    for l in listening.into_iter().flatten() {
        l.stop.notify_one();
        let _ = l.task.await;
        // The task's share of the socket is gone; this one closes it.
        drop(l.listener);
    }
}

/// A copy of each listening socket of this worker, or the error that left one out (out
/// of descriptors): a socket not handed over would lose its queue.
fn lend(w: &Worker) -> std::io::Result<Vec<Lent>> {
    use std::os::fd::AsFd;
    let listeners = w.listeners.borrow();
    let lend_one = |l: &Listening| {
        let socket = l.listener.as_fd().try_clone_to_owned()?;
        Ok(Lent {
            configured: l.configured,
            socket,
        })
    };
    listeners.values().flatten().map(lend_one).collect()
}

async fn apply_reloads(w: Rc<Worker>, mut orders: mpsc::UnboundedReceiver<Order>) {
    while let Some(order) = orders.recv().await {
        let reload = match order {
            Order::Reload(reload) => reload,
            Order::Lend(to) => {
                let _ = to.send(lend(&w));
                continue;
            }
        };
        w.ctx.apply(reload.shared);
        for addr in reload.closed {
            unlisten(&w, addr).await;
        }
        if let Err(e) = listen(&w, reload.listeners) {
            tracing::error!(cause = %e, "could not start a new listener");
        }
        let _ = reload.applied.send(());
    }
}

/// A listening socket of this worker and what its connections need.
struct Accepting {
    listener: Rc<TcpListener>,
    /// The address as configured: the key of its TLS settings.
    configured: SocketAddr,
    stats: Arc<ListenerStats>,
    stop: Rc<Notify>,
}

async fn accept_loop(w: Rc<Worker>, a: Accepting) {
    let mut backoff = AcceptBackoff::new(format!("listener {}", a.configured));
    loop {
        // Also checked here: a drain that began while we slept after an error is not missed.
        if w.ctx.draining() {
            return;
        }
        // Under the process's cap of client connections first; a failed accept (out of
        // descriptors) is waited out, and the connections we have are served meanwhile.
        let next = async {
            w.cap.room().await;
            backoff.accept(&a.listener).await
        };
        let (stream, peer) = tokio::select! {
            accepted = next => accepted,
            _ = w.ctx.drain_signal() => return,
            _ = a.stop.notified() => return,
        };
        // The first head's deadline counts from here, whatever comes before it.
        let accepted = crate::clock::now();
        let _ = stream.set_nodelay(true);
        let held = Held {
            open: Open::new(w.clone()),
            _slot: w.cap.enter(),
            stats: a.stats.clone(),
        };
        let generation = w.ctx.generation();
        if plain(&generation, a.configured) {
            // Nothing to read or choose first: the task is the session itself, one
            // allocation per connection (tokio's task cell, see `PLAIN_SESSION_BUDGET`).
            let served = served(held, peer, a.configured, &generation, "http");
            drop(generation);
            tokio::task::spawn_local(plain_session(served, stream, accepted));
            continue;
        }
        drop(generation);
        // What leads to the session (a PROXY header, the protocol) in a box of its own,
        // made here and gone once the session begins: the task keeps the two boxes'
        // pointers only (see the test's `TASK_BUDGET`).
        let prepared = Box::pin(connection(held, stream, peer, (a.configured, accepted)));
        tokio::task::spawn_local(connection_task(prepared));
    }
}

/// Whether the listener at `configured` serves plain HTTP/1.1 only: no TLS, no h2c, no
/// PROXY protocol header, so a connection's session can begin at its accept.
fn plain(generation: &Generation, configured: SocketAddr) -> bool {
    let shared = &generation.shared;
    let config = &shared.config;
    !shared.tls.contains_key(&configured)
        && !h2c(config, configured)
        && (config.listeners.iter()).any(|l| l.bind == configured && !l.proxy_protocol)
}

/// What a session serves with: what the connection holds and its client, `peer` on the
/// listener at `configured` (counted under `max_conns_per_client`, trusted or not).
fn served(
    held: Held,
    peer: SocketAddr,
    configured: SocketAddr,
    generation: &Generation,
    proto: &'static str,
) -> Served {
    let (entered, crowded) = count_client(generation, configured, peer.ip());
    let proxies = &generation.shared.config.trusted_proxies;
    let trusted = proxies.iter().any(|n| n.contains(peer.ip()));
    let client = Client {
        trusted,
        crowded,
        ..Client::new(peer, configured, proto)
    };
    Served {
        held,
        client,
        _entered: entered,
    }
}

/// A connection's task: its preparation, then its session, each in a box of its own.
async fn connection_task<F: Future<Output = Option<Session>>>(prepared: Pin<Box<F>>) {
    if let Some(session) = prepared.await {
        session.await;
    }
}

/// What a connection holds from its accept to its end: its counts (the worker's open
/// connections, the process's cap) and its listener's figures.
struct Held {
    open: Open,
    _slot: Slot,
    stats: Arc<ListenerStats>,
}

/// A connection's session: what serves it from its TLS handshake or first bytes on.
type Session = Pin<Box<dyn Future<Output = ()>>>;

/// What a session owns: what its connection holds, the client it serves and its count
/// against `max_conns_per_client`. Owned by a plain HTTP/1.1 session's future
/// (`plain_session`), borrowed in place by the other protocols' (taken apart there,
/// each part was kept twice: a 792-byte box per idle HTTP/1.1 client).
struct Served {
    held: Held,
    client: Client,
    /// Boxed: only listeners with `max_conns_per_client` count their clients, and the
    /// others' idle sessions should not carry its 32 bytes.
    _entered: Option<Box<Entered>>,
}

impl Parts for Served {
    fn parts(&self) -> (&Context, &Client, &ListenerStats) {
        (&self.held.open.0.ctx, &self.client, &self.held.stats)
    }
}

/// Prepares one connection, accepted at `accepted` on the listener configured at
/// `configured`, when its session cannot begin at once (`plain`): its PROXY protocol
/// header first if the listener takes one (the client it names is the peer from then
/// on), then its session for TLS, HTTP/2 or HTTP/1.1, which owns what the connection
/// holds (none: it was closed already).
async fn connection(
    held: Held,
    mut stream: tokio::net::TcpStream,
    mut peer: SocketAddr,
    (configured, accepted): (SocketAddr, Instant),
) -> Option<Session> {
    let ctx = &held.open.0.ctx;
    let generation = ctx.generation();
    let config = &generation.shared.config;
    let listener = config.listeners.iter().find(|l| l.bind == configured);
    if let Some(l) = listener.filter(|l| l.proxy_protocol) {
        // Boxed: its timers would otherwise stay in every connection's future.
        let header = proxy_header(l, &mut stream, peer, accepted + config.header_timeout);
        peer = Box::pin(header).await?.unwrap_or(peer);
    }
    let tls = generation.shared.tls.get(&configured).cloned();
    let h2c = tls.is_none() && h2c(config, configured);
    let proto = if tls.is_some() { "https" } else { "http" };
    let served = served(held, peer, configured, &generation, proto);
    drop(generation);
    // Each protocol's session in a box of its own size, with what it serves: as one
    // future, every connection would be as large as the largest (HTTP/2 over TLS), idle
    // HTTP/1.1 ones too.
    Some(match tls {
        None if h2c => Box::pin(async move {
            let (ctx, client, stats) = served.parts();
            serve_plain(ctx, stream, client, stats, accepted).await
        }),
        None => Box::pin(plain_session(served, stream, accepted)),
        Some(tls) => Box::pin(async move {
            let (ctx, client, stats) = served.parts();
            serve_tls(ctx, &tls, stream, client, stats, accepted).await
        }),
    })
}

/// The PROXY protocol header at the start of `stream`, read by `deadline` (the first
/// head's: the header is a part of what comes before it, not a wait of its own), from
/// `peer` if `listener` lets it send one: the client it names (`Some(None)`: none, keep
/// the peer's address), or `None` when the connection is to be closed.
async fn proxy_header(
    listener: &sluice_config::Listener,
    stream: &mut tokio::net::TcpStream,
    peer: SocketAddr,
    deadline: Instant,
) -> Option<Option<SocketAddr>> {
    let allowed = &listener.proxy_protocol_from;
    if !allowed.is_empty() && !allowed.iter().any(|n| n.contains(peer.ip())) {
        tracing::debug!(peer = %peer, "closed: not a peer allowed to send a PROXY protocol header");
        return None;
    }
    let left = deadline.saturating_duration_since(crate::clock::now());
    match crate::io::proxy_protocol::read(stream, left).await {
        Ok(client) => Some(client),
        Err(e) => {
            tracing::debug!(peer = %peer, cause = %e, "closed: no valid PROXY protocol header");
            None
        }
    }
}

/// A plain HTTP/1.1 connection's session, owning what it serves with: an async block
/// borrowing them, as the other protocols' are, would keep the stream it moves into
/// the session a second time (the test's `PLAIN_SESSION_BUDGET`).
fn plain_session(
    served: Served,
    stream: tokio::net::TcpStream,
    accepted: Instant,
) -> impl Future<Output = ()> {
    session::serve(served, stream, Some(accepted))
}

/// Counts a connection against its client's `max_conns_per_client` on `listener`:
/// the count (dropped when the connection ends) and whether the client is over it.
fn count_client(
    generation: &Generation,
    listener: SocketAddr,
    ip: IpAddr,
) -> (Option<Box<Entered>>, bool) {
    let Some(conns) = generation.shared.clients.get(&listener) else {
        return (None, false);
    };
    let config = generation
        .shared
        .config
        .listeners
        .iter()
        .find(|l| l.bind == listener);
    let limit = config
        .and_then(|l| l.max_conns_per_client)
        .unwrap_or(u32::MAX);
    match conns.enter(ip, limit) {
        Some(entered) => (Some(Box::new(entered)), false),
        None => (None, true),
    }
}

/// The TLS handshake, then the session. The handshake's future (rustls's state while it
/// runs) is boxed and freed once it is done, so an idle TLS connection does not keep it.
///
/// The handshake and the first head share one `header_timeout` from `accepted`: the
/// handshake is a part of what comes before the head, as a PROXY header or the wait for
/// an h2c preface is (issue 47: each was given a `header_timeout` of its own). A
/// function returning an async block: an `async fn` keeps its arguments twice, as given
/// and moved into its body, for as long as the session lasts.
#[allow(clippy::manual_async_fn)]
fn serve_tls<'a>(
    ctx: &'a Context,
    tls: &'a TlsListener,
    stream: tokio::net::TcpStream,
    client: &'a Client,
    stats: &'a ListenerStats,
    accepted: Instant,
) -> impl Future<Output = ()> + 'a {
    async move {
        let handshake = handshake(ctx, tls, stream, client, stats, accepted);
        let Some(stream) = Box::pin(handshake).await else {
            return;
        };
        tls_session(ctx, stream, client, stats, accepted).await
    }
}

/// The session a TLS connection's protocol chose (ALPN), boxed. A function of its own:
/// borrowed here to read the protocol, the stream (1,216 bytes, rustls's connection
/// inline) would stay in the caller's future beside the session it moved into.
fn tls_session<'a>(
    ctx: &'a Context,
    stream: tokio_rustls::server::TlsStream<tokio::net::TcpStream>,
    client: &'a Client,
    stats: &'a ListenerStats,
    accepted: Instant,
) -> Pin<Box<dyn Future<Output = ()> + 'a>> {
    if stream.get_ref().1.alpn_protocol() == Some(b"h2") {
        Box::pin(session::h2::serve(ctx, stream, client, stats, accepted))
    } else {
        Box::pin(session::serve((ctx, client, stats), stream, Some(accepted)))
    }
}

/// The TLS handshake, within `header_timeout` of the accept (`accepted`); `None`
/// (counted and logged) when it fails or times out.
async fn handshake(
    ctx: &Context,
    tls: &TlsListener,
    stream: tokio::net::TcpStream,
    client: &Client,
    stats: &ListenerStats,
    accepted: Instant,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    let deadline = accepted + ctx.generation().shared.config.header_timeout;
    match tokio::time::timeout_at(deadline, tls.acceptor.accept(stream)).await {
        Ok(Ok(stream)) => return Some(stream),
        Ok(Err(e)) => tracing::debug!(client = %client.peer, cause = %e, "TLS handshake failed"),
        Err(_) => tracing::debug!(client = %client.peer, "TLS handshake timed out"),
    }
    stats.local().tls_failed.add(1);
    None
}

/// True when the plain listener configured at `addr` takes HTTP/2 with prior knowledge.
fn h2c(config: &sluice_config::Config, addr: SocketAddr) -> bool {
    config.listeners.iter().any(|l| l.bind == addr && l.http2)
}

/// A plain connection on a listener that also takes h2c: HTTP/2 when its first bytes
/// are the HTTP/2 preface, HTTP/1 otherwise.
///
/// One deadline from `accepted` for all of it: the wait for the preface spends the
/// first head's `header_timeout`, and the session chosen gets what is left (issue 47: a
/// client that sent part of the preface was waited for, then taken as HTTP/1 and waited
/// for again). Out of time, it is taken as HTTP/1, whose deadline has passed: closed.
///
/// A function returning an async block: an `async fn` keeps its arguments twice, as
/// given and moved into its body, for as long as the session it chose lasts.
#[allow(clippy::manual_async_fn)]
fn serve_plain<'a>(
    ctx: &'a Context,
    stream: tokio::net::TcpStream,
    client: &'a Client,
    stats: &'a ListenerStats,
    accepted: Instant,
) -> impl Future<Output = ()> + 'a {
    async move {
        let deadline = accepted + ctx.generation().shared.config.header_timeout;
        let preface = tokio::time::timeout_at(deadline, starts_with_preface(&stream)).await;
        if matches!(preface, Ok(true)) {
            Box::pin(session::h2::serve(ctx, stream, client, stats, accepted)).await
        } else {
            Box::pin(session::serve((ctx, client, stats), stream, Some(accepted))).await
        }
    }
}

/// Whether the connection's first bytes are the HTTP/2 client preface (peeked: they
/// stay in the socket for whichever protocol reads them). Waits for the socket to be
/// readable between peeks, never on a timer: a client that sends part of the preface
/// and stops costs what an idle connection costs.
async fn starts_with_preface(stream: &tokio::net::TcpStream) -> bool {
    use tokio::io::Interest;
    loop {
        let Ok(ready) = stream.ready(Interest::READABLE).await else {
            return false;
        };
        // A peek that shows only part of the preface answers WouldBlock, which clears
        // the socket's readiness (unless more came since it was read): the next
        // `ready` waits for new bytes instead of peeking the same ones again.
        match stream.try_io(Interest::READABLE, || peek_preface(stream)) {
            Ok(is_preface) => return is_preface,
            // Closed by the client is a readiness no peek clears: what it sent is all
            // there will be, and part of a preface is no preface.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && ready.is_read_closed() => {
                return false
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(_) => return false,
        }
    }
}

/// One peek at the first bytes: whether they are the preface, or WouldBlock while they
/// are a part of it.
fn peek_preface(stream: &tokio::net::TcpStream) -> std::io::Result<bool> {
    use nix::sys::socket::{recv, MsgFlags};
    use std::os::fd::AsRawFd;
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let mut buf = [0u8; PREFACE.len()];
    let n = recv(stream.as_raw_fd(), &mut buf, MsgFlags::MSG_PEEK)?;
    if n == 0 || !PREFACE.starts_with(&buf[..n]) {
        return Ok(false);
    }
    if n == PREFACE.len() {
        return Ok(true);
    }
    Err(std::io::ErrorKind::WouldBlock.into())
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

/// Closes every listening socket of this worker.
async fn stop_accepting(w: &Worker) {
    let all: Vec<SocketAddr> = w.listeners.borrow().keys().copied().collect();
    for addr in all {
        unlisten(w, addr).await;
    }
}

/// Lets requests in flight finish, waiting at most the grace period.
async fn drain(w: &Worker) {
    let closed = async {
        while w.connections.get() > 0 {
            let wait = w.all_closed.notified();
            if w.connections.get() == 0 {
                break;
            }
            wait.await;
        }
    };
    let grace = w.ctx.generation().shared.config.shutdown_grace;
    if tokio::time::timeout(grace, closed).await.is_err() {
        tracing::warn!(
            open = w.connections.get(),
            "grace period over; closing remaining connections"
        );
    }
}

/// Closes idle pooled connections that expired or whose server left the config, writes
/// out the access log lines buffered, and gives freed memory back once the worker is
/// quiet (`give_back`).
async fn reap_idle(ctx: Rc<Context>) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    let mut quiet = crate::runtime::give_back::Quiet::new(ctx.stash.taken());
    loop {
        tick.tick().await;
        if quiet.tick(ctx.stash.taken()) {
            ctx.stash.release();
            sluice_alloc::give_back();
        }
        let generation = ctx.generation();
        ctx.pool
            .reap(|addr| generation.shared.addresses.contains(addr));
        for server in generation.shared.upstreams.iter().flat_map(|u| &u.servers) {
            server.idle.reap(!server.limited());
        }
        // At most half a second between a request and its log line.
        ctx.flush_log();
    }
}

#[cfg(test)]
mod tests {
    //! What an idle client connection holds is its task: its size is asserted, so that a
    //! field or a state added to the connection's path cannot grow every idle client
    //! silently (issue 32: the task had grown to 8.8 KiB, the size of HTTP/2 over TLS).

    use super::*;
    use crate::io::stream::loopback_pair;

    /// A connection's task in bytes: its future, before the runtime boxes it with its
    /// task header (about 100 bytes; tokio's task cell is a multiple of 128 bytes):
    /// the two boxes' pointers and its state (the whole connection in place made it
    /// 544 bytes, a cell of 768).
    const TASK_BUDGET: usize = 64;
    /// An HTTP/1.1 session's future (boxed apart from the task) while it is idle: its
    /// stream and the wait for its next bytes, not its buffers, its read timer, the
    /// head's parse nor a request's state, which are boxed only while it is busy (128
    /// bytes in a release build; 416 with a timer and a drain signal of its own, 992
    /// when it kept a request's state too).
    const HTTP1_SESSION_BUDGET: usize = 160;
    /// A plain HTTP/1.1 connection's session, what it serves with inside: on a plain
    /// listener the future of its task, in tokio's task cell (mimalloc's 384-byte class;
    /// a 256-byte task cell and a 256-byte session box when the task prepared each
    /// connection first; 320 for the box when it kept the stream twice and the client's
    /// count under `max_conns_per_client` inline).
    const PLAIN_SESSION_BUDGET: usize = 256;

    /// An HTTP/2 session's future over TLS: h2's connection with the TLS stream inside
    /// it (2,496 bytes) and the session's state (3,016 in a release build; 6,744 when
    /// the stream and h2's connection were each kept twice).
    const H2_TLS_SESSION_BUDGET: usize = 3_200;

    /// The size of what `f` returns, without calling it.
    fn size_of_return3<A, B, C, R>(_: fn(A, B, C) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    /// The same for a function of five arguments.
    fn size_of_return5<A, B, C, D, E, R>(_: fn(A, B, C, D, E) -> R) -> usize {
        std::mem::size_of::<R>()
    }

    fn context() -> Context {
        let text = "[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"127.0.0.1:9\"]\n";
        let config = sluice_config::parse("t.toml", text).unwrap();
        Context::new(Arc::new(Shared::new(config, None)), 1)
    }

    /// Only a listener with nothing to read or choose before HTTP/1.1 starts its
    /// sessions at accept; the others prepare each connection in a box first.
    #[test]
    fn only_plain_http1_listeners_start_their_sessions_at_accept() {
        let text = "[[listener]]\nbind = \"127.0.0.1:8001\"\n\
                    [[listener]]\nbind = \"127.0.0.1:8002\"\nhttp2 = true\n\
                    [[listener]]\nbind = \"127.0.0.1:8003\"\nproxy_protocol = true\n\
                    [[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"127.0.0.1:9\"]\n";
        let config = sluice_config::parse("t.toml", text).unwrap();
        let ctx = Context::new(Arc::new(Shared::new(config, None)), 1);
        let generation = ctx.generation();
        let plain_at = |port: u16| plain(&generation, SocketAddr::from(([127, 0, 0, 1], port)));
        assert!(plain_at(8001));
        assert!(!plain_at(8002), "h2c: the first bytes choose the protocol");
        assert!(!plain_at(8003), "a PROXY protocol header comes first");
        assert!(!plain_at(8004), "no such listener");
    }

    #[tokio::test]
    async fn an_idle_connection_holds_a_small_task_whatever_the_protocols_it_could_speak() {
        let ctx = context();
        let stats = ListenerStats::default();
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        let task = connection_task(Box::pin(async { None }));
        let size = std::mem::size_of_val(&task);
        assert!(size <= TASK_BUDGET, "the connection's task is {size} bytes");
        let (_c, server) = loopback_pair().await;
        let who = Client::new(addr, addr, "http");
        let session = session::serve((&ctx, &who, &stats), server, Some(crate::clock::now()));
        let size = std::mem::size_of_val(&session);
        assert!(
            size <= HTTP1_SESSION_BUDGET,
            "the HTTP/1.1 session's future is {size} bytes"
        );
        let size = size_of_return3(plain_session);
        assert!(
            size <= PLAIN_SESSION_BUDGET,
            "a plain HTTP/1.1 connection's session is {size} bytes"
        );
        type Tls = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
        let size = size_of_return5(session::h2::serve::<'static, Tls>);
        assert!(
            size <= H2_TLS_SESSION_BUDGET,
            "an HTTP/2 session's future over TLS is {size} bytes"
        );
    }
}
