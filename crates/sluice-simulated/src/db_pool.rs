//! A connection pool from a simulated app server to a simulated database, as HikariCP
//! sits between a Tomcat app and MySQL.
//!
//! The database is another simulated backend: each query is an HTTP/1.1 `GET /query` on
//! a kept-alive connection, so the database's own worker threads, CPU work and delay are
//! its concurrency, CPU per query and I/O time per query. The pool holds at most `size`
//! connections, opened lazily on first need and reused; a request that finds them all in
//! use waits for one (Hikari's `maximumPoolSize`), and gives up after `timeout` (Hikari's
//! `connectionTimeout`). A request keeps its connection for all its queries, as a
//! transaction does. A connection that broke is dropped, and the next request that needs
//! one opens a new one.
//!
//! The counters are the evidence a lab reads: how busy the pool was, how long requests
//! waited for it, and how queries ended ([`stats`]).

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper::Request;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{Semaphore, SemaphorePermit};

/// One connection to the database.
type Conn = SendRequest<Empty<Bytes>>;

/// A pool of connections to one database.
pub struct DbPool {
    addr: SocketAddr,
    size: usize,
    timeout: Duration,
    /// One permit per connection: holding one is holding a connection (open or to open).
    permits: Semaphore,
    /// Open connections nobody holds; at most `size` minus the permits held.
    idle: Mutex<Vec<Conn>>,
    counters: Counters,
}

#[derive(Default)]
struct Counters {
    busy: AtomicU64,
    waiting: AtomicU64,
    busy_us: AtomicU64,
    wait_us: AtomicU64,
    waits: AtomicU64,
    queries: AtomicU64,
    errors: AtomicU64,
    timeouts: AtomicU64,
}

/// Why a request's database work failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbError {
    /// No connection came free within the pool's timeout.
    Timeout,
    /// A query failed: no connection could be opened, it broke, or the database answered
    /// other than 2xx. The text says which.
    Failed(String),
}

impl DbPool {
    /// A pool of at most `size` connections to `addr` (at least one: a pool of none
    /// could only time out). `timeout` bounds the wait for a connection, and the time to
    /// open one, so a database that does not answer cannot hold a thread for minutes.
    pub fn new(addr: SocketAddr, size: usize, timeout: Duration) -> Self {
        let size = size.max(1);
        DbPool {
            addr,
            size,
            timeout,
            permits: Semaphore::new(size),
            idle: Mutex::new(Vec::with_capacity(size)),
            counters: Counters::default(),
        }
    }

    /// Runs `queries` queries one after another on one connection of the pool, waiting
    /// for a connection first if all are in use. Stops at the first that fails.
    pub async fn transaction(&self, queries: u32) -> Result<(), DbError> {
        let mut lease = self.acquire().await?;
        let c = &self.counters;
        for _ in 0..queries {
            c.queries.fetch_add(1, Ordering::Relaxed);
            if let Err(why) = lease.query().await {
                c.errors.fetch_add(1, Ordering::Relaxed);
                return Err(DbError::Failed(why));
            }
        }
        Ok(())
    }

    /// A connection slot: at once when one is free, else after waiting (counted), or
    /// [`DbError::Timeout`] when none came free in time.
    async fn acquire(&self) -> Result<Lease<'_>, DbError> {
        let permit = match self.permits.try_acquire() {
            Ok(permit) => permit,
            Err(_) => self.wait().await?,
        };
        self.counters.busy.fetch_add(1, Ordering::Relaxed);
        Ok(Lease {
            pool: self,
            conn: self.take_idle(),
            since: Instant::now(),
            _permit: permit,
        })
    }

    async fn wait(&self) -> Result<SemaphorePermit<'_>, DbError> {
        let c = &self.counters;
        c.waits.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let permit = {
            // A guard, so a request dropped while waiting (its client left) leaves the
            // gauge right.
            let _waiting = Gauge::up(&c.waiting);
            tokio::time::timeout(self.timeout, self.permits.acquire()).await
        };
        c.wait_us
            .fetch_add(micros(started.elapsed()), Ordering::Relaxed);
        match permit {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed: only the timeout ends here.
            _ => {
                c.timeouts.fetch_add(1, Ordering::Relaxed);
                Err(DbError::Timeout)
            }
        }
    }

    /// An idle connection still open, dropping those the database closed meanwhile (as
    /// Hikari validates a connection before handing it out).
    fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(conn) = idle.pop() {
            if !conn.is_closed() {
                return Some(conn);
            }
        }
        None
    }

    fn give_back(&self, conn: Conn) {
        if !conn.is_closed() {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.push(conn);
        }
    }

    /// Opens a connection: TCP, then HTTP/1.1 on it, driven by a task of its own that
    /// ends when the connection is dropped or breaks.
    async fn connect(&self) -> Result<Conn, String> {
        let addr = self.addr;
        let stream = tokio::time::timeout(self.timeout, tokio::net::TcpStream::connect(addr))
            .await
            .map_err(|_| format!("connecting to {addr}: no answer in {:?}", self.timeout))?
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        // Queries are small request-answer exchanges: do not let Nagle delay them.
        let _ = stream.set_nodelay(true);
        let (conn, driver) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        tokio::spawn(async move {
            let _ = driver.await;
        });
        Ok(conn)
    }
}

/// A request holding a connection slot of the pool, and the connection once open. On
/// drop, a healthy connection goes back to the pool before the slot is freed.
struct Lease<'a> {
    pool: &'a DbPool,
    conn: Option<Conn>,
    since: Instant,
    _permit: SemaphorePermit<'a>,
}

impl Lease<'_> {
    /// One query on this lease's connection, opening it first if needed. The connection
    /// is kept only when the exchange completed: one that failed midway is in an unknown
    /// state and is dropped (a new one is opened next time).
    async fn query(&mut self) -> Result<(), String> {
        let mut conn = match self.conn.take() {
            Some(conn) => conn,
            None => self.pool.connect().await?,
        };
        let request = Request::get("/query")
            .header(hyper::header::HOST, self.pool.addr.to_string())
            .body(Empty::new())
            .map_err(|e| format!("building the query: {e}"))?;
        conn.ready()
            .await
            .map_err(|e| format!("connection broken: {e}"))?;
        let answer = conn
            .send_request(request)
            .await
            .map_err(|e| format!("query: {e}"))?;
        let status = answer.status();
        // Read the whole answer, or the connection cannot carry the next query.
        answer
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?;
        self.conn = Some(conn);
        if !status.is_success() {
            return Err(format!("the database answered {status}"));
        }
        Ok(())
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.pool.give_back(conn);
        }
        let c = &self.pool.counters;
        c.busy_us
            .fetch_add(micros(self.since.elapsed()), Ordering::Relaxed);
        c.busy.fetch_sub(1, Ordering::Relaxed);
        // The permit is freed after this, with the fields: the connection is back first.
    }
}

/// A gauge raised for as long as the guard lives.
struct Gauge<'a>(&'a AtomicU64);

impl<'a> Gauge<'a> {
    fn up(gauge: &'a AtomicU64) -> Self {
        gauge.fetch_add(1, Ordering::Relaxed);
        Gauge(gauge)
    }
}

impl Drop for Gauge<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// The pool's counters as `key=value` fields for `/__stats`, all zero without a pool (so
/// the keys are always there for a reader):
///
/// `db_pool_size` the most connections; `db_pool_busy` connections held by requests now;
/// `db_pool_waiting` requests waiting for one now; `db_pool_busy_ms` connection-ms held,
/// added as each request releases its connection; `db_wait_ms` total time requests
/// waited for a connection (those that timed out too); `db_waits` requests that had to
/// wait; `db_queries` queries attempted; `db_errors` those that failed (each ends its
/// request with 502); `db_timeouts` requests that gave up waiting (503).
pub fn stats(pool: Option<&DbPool>) -> String {
    let zero = Counters::default();
    let (size, c) = pool.map_or((0, &zero), |p| (p.size, &p.counters));
    let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
    format!(
        "db_pool_size={size} db_pool_busy={} db_pool_waiting={} db_pool_busy_ms={} \
         db_wait_ms={} db_waits={} db_queries={} db_errors={} db_timeouts={}",
        load(&c.busy),
        load(&c.waiting),
        load(&c.busy_us) / 1000,
        load(&c.wait_us) / 1000,
        load(&c.waits),
        load(&c.queries),
        load(&c.errors),
        load(&c.timeouts),
    )
}
