//! A small HTTP/1.1 app server for demos, tests and benchmarks.
//!
//! Every response names the backend (`X-Backend` header and, at `/`, the body) so a user
//! can see which server answered. Built on hyper, an HTTP implementation independent of
//! the proxy's own, so tests do not have sluice's code on both ends of a connection.
//!
//! | path | answer |
//! |---|---|
//! | `/` (any other path, e.g. `/query`) | `NAME\n` |
//! | `/bytes?n=N` | N bytes of body, generated while streaming (nothing held in memory) |
//! | `/upload` | reads the whole request body and answers `received N bytes` |
//! | `/headers` | the request line and headers as the backend received them |
//! | `/status/NNN` | an empty response with that status |
//! | `/delay?ms=N` | answers after N ms |
//! | `/__stats` | one line of space-separated `key=value` counters, below |
//! | any path, WebSocket handshake | `/echo` echoes; others speak STOMP with `--stomp`, else echo |
//!
//! A simulated app tier ([`Simulated`]): CPU work per request, a worker pool of
//! `threads` with `queue` places to wait (Tomcat's maxThreads and acceptCount: a request
//! beyond both gets `503` at once), a response size, injected errors, stalls, and a cap on
//! connections served at once (beyond it they wait unaccepted, as past nginx's
//! `worker_connections`). With a database ([`Simulated::db`], another backend), each
//! request also runs queries through a connection pool ([`crate::db_pool`]) while it
//! holds its worker thread, after its CPU work: `503` when it waited too long for a
//! connection, `502` when a query failed. `/__stats` reports the pools' use and the time
//! spent waiting for them, the evidence the lab reads.
//!
//! The `/__stats` keys (cumulative counters unless marked *now*):
//!
//! | key | meaning |
//! |---|---|
//! | `connections` | connections accepted |
//! | `requests` | requests received (`/__stats` ones too) |
//! | `stomp_messages` | STOMP MESSAGE frames this backend's broker sent |
//! | `pool_threads` | worker threads (0: no pool) |
//! | `pool_busy` | *now*: threads held by requests |
//! | `pool_waiting` | *now*: requests waiting for a thread |
//! | `queue_wait_ms` | total time requests waited for a thread |
//! | `rejected` | requests refused with `503`, the queue full |
//! | `injected_errors` | requests answered `500` by `errors` |
//! | `stalls` | requests that stalled |
//! | `pool_busy_ms` | thread-ms held, added as each request releases its thread: utilisation over an interval is Δ`pool_busy_ms` / (Δt in ms × `pool_threads`) |
//! | `pool_entered` | requests that got a thread |
//! | `queue_waits` | requests that had to wait for their thread |
//! | `db_pool_size` | connections the database pool may hold (0: no database) |
//! | `db_pool_busy` | *now*: connections held by requests |
//! | `db_pool_waiting` | *now*: requests waiting for a connection |
//! | `db_pool_busy_ms` | connection-ms held, added as each request releases its connection |
//! | `db_wait_ms` | total time requests waited for a connection (timed-out ones too) |
//! | `db_waits` | requests that had to wait for a connection |
//! | `db_queries` | queries attempted |
//! | `db_errors` | queries that failed (each answers its request `502`) |
//! | `db_timeouts` | requests that waited past `db_timeout` (answered `503`) |
//! | `conns_open` | *now*: HTTP connections being served (this `/__stats` one too; an upgraded WebSocket leaves the count, as it leaves `max_conns`) |
//! | `max_conns` | the cap on `conns_open` (0: none) |
//! | `busy` | *now*: requests being answered (not `/__stats` nor WebSocket handshakes) |
//! | `busy_peak` | the most requests answered at once so far |
//! | `conns_peak` | the most HTTP connections served at once so far |
//!
//! The `pool_*` and `queue_*` counters stay 0 without a worker pool (`threads` 0).

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use sluice_accept::AcceptBackoff;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;

use crate::db_pool::{DbError, DbPool};

/// How a backend behaves.
#[derive(Clone, Debug)]
pub struct Options {
    pub name: String,
    /// Added before every response, like an app doing work.
    pub delay: Duration,
    /// WebSocket connections (other than `/echo`) speak STOMP to an in-memory broker.
    pub stomp: bool,
}

/// What a simulated app tier does per request besides answering.
#[derive(Clone, Debug)]
pub struct Simulated {
    /// CPU work per request: a fixed amount of computation, calibrated at start to take
    /// this long on an idle core (so a throttled or busy tier takes longer, as an app
    /// would).
    pub cpu: Duration,
    /// Worker threads: requests beyond them wait for one. 0: no pool.
    pub threads: usize,
    /// Requests that may wait for a thread; beyond, `503` at once.
    pub queue: usize,
    /// Body bytes of an answer at `/` (and any path without a meaning of its own);
    /// 0: the name.
    pub size: u64,
    /// The share of such requests answered `500` (spread evenly: exactly this share
    /// of every run of requests).
    pub errors: f64,
    /// Connections served at once (nginx's `worker_connections`); beyond, they wait in
    /// the listen queue, unaccepted. 0: no cap.
    pub max_conns: usize,
    /// Every this many requests, one stalls for `stall` (a garbage-collection pause, a
    /// lock): 0, none.
    pub stall_every: u64,
    pub stall: Duration,
    /// The database: another backend, whose own threads, CPU work and delay are the
    /// database's concurrency, CPU per query and I/O time per query. Each request runs
    /// `db_queries` `GET /query` on a connection of a pool of `db_pool`. None: no
    /// database.
    pub db: Option<SocketAddr>,
    /// Connections to the database (HikariCP's maximumPoolSize); requests beyond wait for
    /// one. At least 1.
    pub db_pool: usize,
    /// Queries per request, one after another on the same connection.
    pub db_queries: u32,
    /// How long a request waits for a connection before it is answered `503` (Hikari's
    /// connectionTimeout); also bounds opening one.
    pub db_timeout: Duration,
}

impl Default for Simulated {
    /// Nothing simulated: no work, no pool, no database (but the database settings a
    /// caller who only sets `db` expects: 10 connections, 1 query, 5 s).
    fn default() -> Self {
        Simulated {
            cpu: Duration::ZERO,
            threads: 0,
            queue: 0,
            size: 0,
            errors: 0.0,
            max_conns: 0,
            stall_every: 0,
            stall: Duration::ZERO,
            db: None,
            db_pool: 10,
            db_queries: 1,
            db_timeout: Duration::from_secs(5),
        }
    }
}

#[derive(Default)]
struct Stats {
    broker: Arc<crate::stomp::Broker>,
    connections: AtomicU64,
    requests: AtomicU64,
    pool: Pool,
    size: u64,
    errors: f64,
    stall_every: u64,
    stall: Duration,
    stalled: AtomicU64,
    /// Requests that could have been errors so far, and those that were.
    answered: AtomicU64,
    injected: AtomicU64,
    db: Option<DbPool>,
    db_queries: u32,
    /// HTTP connections being served now, and the cap on them (0: none).
    conns_open: AtomicU64,
    conns_peak: AtomicU64,
    max_conns: usize,
    /// Requests being answered now, and the most at once.
    busy: AtomicU64,
    busy_peak: AtomicU64,
}

/// Counts a request as being answered until dropped.
struct Answering<'a>(&'a Stats);

impl<'a> Answering<'a> {
    fn start(stats: &'a Stats) -> Self {
        let now = stats.busy.fetch_add(1, Ordering::Relaxed) + 1;
        stats.busy_peak.fetch_max(now, Ordering::Relaxed);
        Answering(stats)
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Stats {
    fn new(sim: &Simulated) -> Self {
        Stats {
            pool: Pool {
                threads: sim.threads,
                queue: sim.queue,
                permits: (sim.threads > 0).then(|| tokio::sync::Semaphore::new(sim.threads)),
                work: crate::cpu::iterations_for(sim.cpu),
                ..Pool::default()
            },
            size: sim.size,
            errors: sim.errors,
            stall_every: sim.stall_every,
            stall: sim.stall,
            db: sim
                .db
                .map(|addr| DbPool::new(addr, sim.db_pool, sim.db_timeout)),
            db_queries: sim.db_queries,
            max_conns: sim.max_conns,
            ..Stats::default()
        }
    }

    /// Whether request number `n` (counted from 0) stalls.
    fn stalls(&self, n: u64) -> bool {
        let stalls = self.stall_every > 0 && n % self.stall_every == self.stall_every - 1;
        if stalls {
            self.stalled.fetch_add(1, Ordering::Relaxed);
        }
        stalls
    }

    /// Whether this request is one of the injected errors.
    fn inject_error(&self) -> bool {
        if self.errors <= 0.0 {
            return false;
        }
        let n = self.answered.fetch_add(1, Ordering::Relaxed) as f64;
        let error = ((n + 1.0) * self.errors).floor() > (n * self.errors).floor();
        if error {
            self.injected.fetch_add(1, Ordering::Relaxed);
        }
        error
    }
}

/// The simulated worker pool and its evidence.
#[derive(Default)]
struct Pool {
    threads: usize,
    queue: usize,
    permits: Option<tokio::sync::Semaphore>,
    busy: AtomicU64,
    waiting: AtomicU64,
    wait_us: AtomicU64,
    rejected: AtomicU64,
    /// Thread-microseconds held by requests that released their thread.
    busy_us: AtomicU64,
    /// Requests that got a thread, and those of them that waited for it.
    entered: AtomicU64,
    waits: AtomicU64,
    /// Iterations of the CPU work per request.
    work: u64,
}

type Reply = Response<BoxBody<Bytes, Infallible>>;

/// Serves HTTP/1.1 on `listener` forever.
pub async fn serve(listener: TcpListener, options: Options) {
    serve_simulated(listener, options, Simulated::default()).await
}

/// Serves as [`serve`] does, with `sim`'s CPU work and worker pool on every request.
pub async fn serve_simulated(listener: TcpListener, options: Options, sim: Simulated) {
    serve_with_stats(listener, None, options, sim).await
}

/// Serves as [`serve_simulated`] does, and `/__stats` (at any path) on `stats_listener`
/// too: outside the connection cap and the worker pool, so a sampler still reads the
/// counters of a server that has stopped accepting (as a Tomcat's JMX port answers when
/// its connector is full).
pub async fn serve_with_stats(
    listener: TcpListener,
    stats_listener: Option<TcpListener>,
    options: Options,
    sim: Simulated,
) {
    let options = Arc::new(options);
    let stats = Arc::new(Stats::new(&sim));
    if let Some(l) = stats_listener {
        tokio::spawn(serve_stats(l, stats.clone()));
    }
    let cap = (sim.max_conns > 0).then(|| Arc::new(tokio::sync::Semaphore::new(sim.max_conns)));
    let mut backoff = AcceptBackoff::new(format!("backend {}", local_name(&listener)));
    loop {
        // At the cap, stop accepting: new connections wait in the kernel's listen queue.
        let slot = match &cap {
            Some(cap) => cap.clone().acquire_owned().await.ok(),
            None => None,
        };
        let (stream, _) = backoff.accept(&listener).await;
        let _ = stream.set_nodelay(true);
        stats.connections.fetch_add(1, Ordering::Relaxed);
        let open = stats.conns_open.fetch_add(1, Ordering::Relaxed) + 1;
        stats.conns_peak.fetch_max(open, Ordering::Relaxed);
        let (options, stats) = (options.clone(), stats.clone());
        tokio::spawn(async move {
            let open = stats.clone();
            let service =
                hyper::service::service_fn(move |req| handle(req, options.clone(), stats.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades()
                .await;
            // Before the slot is freed: a connection accepted in its place must not see
            // this one still counted.
            open.conns_open.fetch_sub(1, Ordering::Relaxed);
            drop(slot);
        });
    }
}

/// Answers every request on `listener` with the counters of `/__stats`.
async fn serve_stats(listener: TcpListener, stats: Arc<Stats>) {
    let mut backoff = AcceptBackoff::new(format!("backend stats {}", local_name(&listener)));
    loop {
        let (stream, _) = backoff.accept(&listener).await;
        let stats = stats.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |_req: Request<Incoming>| {
                let reply = stats_reply(&stats);
                async move { Ok::<_, Infallible>(reply) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The listener's address, as logs name it.
fn local_name(listener: &TcpListener) -> String {
    listener
        .local_addr()
        .map_or(String::new(), |a| a.to_string())
}

/// Binds `addr` and serves on a background task of the current runtime.
pub async fn spawn(addr: SocketAddr, options: Options) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(serve(listener, options));
    Ok(local)
}

async fn handle(
    req: Request<Incoming>,
    options: Arc<Options>,
    stats: Arc<Stats>,
) -> Result<Reply, Infallible> {
    let seq = stats.requests.fetch_add(1, Ordering::Relaxed);
    if crate::websocket::is_handshake(&req) {
        let reply = crate::websocket::accept(
            req,
            options.stomp,
            stats.broker.clone(),
            options.name.clone(),
        );
        return Ok(with_name(reply, &options.name));
    }
    if req.uri().path() == "/__stats" {
        return Ok(with_name(stats_reply(&stats), &options.name));
    }
    let _answering = Answering::start(&stats);
    let reply = match stats.pool.enter().await {
        None => text(StatusCode::SERVICE_UNAVAILABLE, "queue full\n".into()),
        // The thread is held until the answer is made, whatever the work waits on.
        Some(_thread) => match work(&options, &stats, seq).await {
            Some(failed) => failed,
            None => answer(req, &options, &stats).await,
        },
    };
    Ok(with_name(reply, &options.name))
}

/// What a request does on its worker thread before it answers: the CPU work, then the
/// database queries (the thread blocks on them, as a Tomcat thread on JDBC, waiting for
/// a connection too), then the delay and any stall. `Some`: the answer of a request the
/// database failed.
async fn work(options: &Options, stats: &Stats, seq: u64) -> Option<Reply> {
    crate::cpu::burn(stats.pool.work);
    if let Some(db) = &stats.db {
        match db.transaction(stats.db_queries).await {
            Ok(()) => {}
            Err(DbError::Timeout) => {
                return Some(text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "db pool timeout\n".into(),
                ))
            }
            Err(DbError::Failed(why)) => {
                return Some(text(StatusCode::BAD_GATEWAY, format!("db error: {why}\n")))
            }
        }
    }
    let stall = if stats.stalls(seq) {
        stats.stall
    } else {
        Duration::ZERO
    };
    let pause = options.delay + stall;
    if !pause.is_zero() {
        tokio::time::sleep(pause).await;
    }
    None
}

/// The answer the path asks for.
async fn answer(req: Request<Incoming>, options: &Options, stats: &Stats) -> Reply {
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    match path.as_str() {
        "/bytes" => streamed(number(&query, "n")),
        "/upload" => upload(req).await,
        "/headers" => text(StatusCode::OK, headers(&req)),
        "/delay" => {
            tokio::time::sleep(Duration::from_millis(number(&query, "ms"))).await;
            text(StatusCode::OK, format!("{}\n", options.name))
        }
        p if p.starts_with("/status/") => {
            let code = p["/status/".len()..]
                .parse()
                .ok()
                .and_then(|c| StatusCode::from_u16(c).ok())
                .unwrap_or(StatusCode::BAD_REQUEST);
            text(code, String::new())
        }
        _ if stats.inject_error() => text(StatusCode::INTERNAL_SERVER_ERROR, "injected\n".into()),
        _ if stats.size > 0 => streamed(stats.size),
        _ => text(StatusCode::OK, format!("{}\n", options.name)),
    }
}

/// The one line of `/__stats` (the keys are in the module's table). Keys are only ever
/// appended, so readers of older lines keep working.
fn stats_reply(stats: &Stats) -> Reply {
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    text(
        StatusCode::OK,
        format!(
            "connections={} requests={} stomp_messages={} {} injected_errors={} stalls={} {} {} conns_open={} max_conns={} busy={} busy_peak={} conns_peak={}\n",
            load(&stats.connections),
            load(&stats.requests),
            stats.broker.messages_out(),
            stats.pool.gauges(),
            load(&stats.injected),
            load(&stats.stalled),
            stats.pool.counters(),
            crate::db_pool::stats(stats.db.as_ref()),
            load(&stats.conns_open),
            stats.max_conns,
            load(&stats.busy),
            load(&stats.busy_peak),
            load(&stats.conns_peak),
        ),
    )
}

impl Pool {
    /// A worker thread for one request: at once, after a wait in the queue, or `None`
    /// when the queue is full. Held until dropped.
    async fn enter(&self) -> Option<Busy<'_>> {
        let Some(permits) = &self.permits else {
            return Some(Busy::new(self, None));
        };
        if let Ok(permit) = permits.try_acquire() {
            return Some(Busy::new(self, Some(permit)));
        }
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.queue as u64 {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            self.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.waits.fetch_add(1, Ordering::Relaxed);
        let waited = std::time::Instant::now();
        let permit = permits.acquire().await.ok();
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        self.wait_us
            .fetch_add(waited.elapsed().as_micros() as u64, Ordering::Relaxed);
        Some(Busy::new(self, permit))
    }

    /// The fields of `/__stats` that came first, in their order.
    fn gauges(&self) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "pool_threads={} pool_busy={} pool_waiting={} queue_wait_ms={} rejected={}",
            self.threads,
            load(&self.busy),
            load(&self.waiting),
            load(&self.wait_us) / 1000,
            load(&self.rejected),
        )
    }

    /// The cumulative fields added later, from which a reader derives utilisation.
    fn counters(&self) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "pool_busy_ms={} pool_entered={} queue_waits={}",
            load(&self.busy_us) / 1000,
            load(&self.entered),
            load(&self.waits),
        )
    }
}

/// A request holding a worker thread (no permit: there is no pool, nothing is counted).
struct Busy<'a> {
    pool: &'a Pool,
    permit: Option<tokio::sync::SemaphorePermit<'a>>,
    since: Instant,
}

impl<'a> Busy<'a> {
    fn new(pool: &'a Pool, permit: Option<tokio::sync::SemaphorePermit<'a>>) -> Self {
        if permit.is_some() {
            pool.busy.fetch_add(1, Ordering::Relaxed);
            pool.entered.fetch_add(1, Ordering::Relaxed);
        }
        Busy {
            pool,
            permit,
            since: Instant::now(),
        }
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        if self.permit.is_some() {
            // Added at release, so a reader's Δ over an interval counts whole requests.
            let held = self.since.elapsed().as_micros() as u64;
            self.pool.busy_us.fetch_add(held, Ordering::Relaxed);
            self.pool.busy.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

fn with_name(mut reply: Reply, name: &str) -> Reply {
    if let Ok(value) = name.parse() {
        reply.headers_mut().insert("x-backend", value);
    }
    reply
}

fn text(status: StatusCode, body: String) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(body)).boxed());
    *reply.status_mut() = status;
    reply
}

/// The value of `key` in a query string as a number, 0 if absent.
fn number(query: &str, key: &str) -> u64 {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

fn headers(req: &Request<Incoming>) -> String {
    let mut out = format!("{} {} {:?}\n", req.method(), req.uri(), req.version());
    for (name, value) in req.headers() {
        out.push_str(&format!(
            "{}: {}\n",
            name,
            String::from_utf8_lossy(value.as_bytes())
        ));
    }
    out
}

async fn upload(req: Request<Incoming>) -> Reply {
    let mut body = req.into_body();
    let mut received: u64 = 0;
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => received += frame.data_ref().map_or(0, |d| d.len() as u64),
            Err(e) => return text(StatusCode::BAD_REQUEST, format!("body error: {e}\n")),
        }
    }
    text(StatusCode::OK, format!("received {received} bytes\n"))
}

fn streamed(n: u64) -> Reply {
    Response::new(BoxBody::new(Zeros { remaining: n }))
}

/// A body of `remaining` bytes made on the fly from one shared block.
struct Zeros {
    remaining: u64,
}

static BLOCK: [u8; 64 * 1024] = [b'x'; 64 * 1024];

impl Body for Zeros {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.remaining == 0 {
            return Poll::Ready(None);
        }
        let take = self.remaining.min(BLOCK.len() as u64) as usize;
        self.remaining -= take as u64;
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&BLOCK[..take])))))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        hyper::body::SizeHint::with_exact(self.remaining)
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }
}
