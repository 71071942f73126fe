//! One worker's view of an upstream: its balancer, its pool of idle keep-alive
//! connections, and the in-flight counts it shares with the other workers.
//!
//! Pools are per worker, so checking a connection out or in takes no lock. The balancer
//! and the in-flight counts are shared by all workers: `least_conn` and `random_two` see
//! the whole process's load, and round robin keeps its exact sequence however the kernel
//! spreads connections over workers (nginx without a shared zone does not). The balancer's
//! lock is held for a few arithmetic operations per request.

use crate::conn::Conn;
use sluice_balance::{
    default_table_size, Balancer, Candidate, ConsistentHash, Context, LeastConn, PeakEwma,
    RandomTwo, Server, SmoothWeighted,
};
use sluice_config::{Balance, HashMethod, KeyTemplate, Upstream};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpStream;
use tokio::time::{timeout, Instant};

/// The part of an upstream's state that all workers share.
pub struct SharedLoad {
    active: Vec<AtomicU32>,
    balancer: Mutex<Balancer>,
}

impl SharedLoad {
    pub fn new(config: &Upstream) -> Arc<Self> {
        let balancer = balancer_for(config);
        let active = (0..config.servers.len())
            .map(|_| AtomicU32::new(0))
            .collect();
        Arc::new(SharedLoad {
            active,
            balancer: Mutex::new(balancer),
        })
    }
}

/// The algorithm an upstream's config asks for, built over its servers.
fn balancer_for(config: &Upstream) -> Balancer {
    let servers: Vec<Server> = config
        .servers
        .iter()
        .map(|s| Server {
            name: &s.name,
            weight: s.weight,
        })
        .collect();
    match &config.balance {
        Balance::RoundRobin => Balancer::RoundRobin(SmoothWeighted::new()),
        Balance::LeastConn => Balancer::LeastConn(LeastConn::new()),
        Balance::RandomTwo => Balancer::RandomTwo(RandomTwo::new()),
        Balance::PeakEwma { decay } => Balancer::PeakEwma(PeakEwma::new(decay.as_nanos() as u64)),
        Balance::Hash {
            method: HashMethod::Ketama,
            bound,
            ..
        } => Balancer::Hash(ConsistentHash::ketama(&servers, *bound)),
        Balance::Hash {
            method: HashMethod::Maglev,
            bound,
            ..
        } => Balancer::Hash(ConsistentHash::maglev(
            &servers,
            default_table_size(servers.len()),
            *bound,
        )),
    }
}

/// Nanoseconds on a monotonic clock shared by all workers (for peak-EWMA).
fn now_ns() -> u64 {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    EPOCH
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// Counts one request in flight on a server until dropped.
pub struct InFlight {
    load: Arc<SharedLoad>,
    server: usize,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.load.active[self.server].fetch_sub(1, Ordering::Relaxed);
    }
}

struct Idle {
    conn: Conn,
    since: Instant,
}

pub struct UpstreamState {
    pub config: Upstream,
    idle: RefCell<Vec<VecDeque<Idle>>>,
    load: Arc<SharedLoad>,
}

impl UpstreamState {
    pub fn new(config: Upstream, load: Arc<SharedLoad>) -> Self {
        let idle = RefCell::new((0..config.servers.len()).map(|_| VecDeque::new()).collect());
        UpstreamState { config, idle, load }
    }

    pub fn addr(&self, server: usize) -> SocketAddr {
        self.config.servers[server].addr
    }

    /// The hash key template, when this upstream balances by consistent hashing.
    pub fn key_template(&self) -> Option<&KeyTemplate> {
        match &self.config.balance {
            Balance::Hash { key, .. } => Some(key),
            _ => None,
        }
    }

    /// Tells a latency-aware balancer how long `server` took to answer.
    pub fn observe(&self, server: usize, rtt: std::time::Duration) {
        if matches!(self.config.balance, Balance::PeakEwma { .. }) {
            let mut balancer = self.load.balancer.lock().unwrap_or_else(|p| p.into_inner());
            balancer.observe(
                self.config.servers.len(),
                server,
                rtt.as_nanos() as u64,
                now_ns(),
            );
        }
    }

    /// Picks a server for a request with hash `key` (empty when the upstream does not
    /// hash) and counts the request as in flight on it.
    pub fn pick(&self, key: &[u8], random: u64) -> Option<(usize, InFlight)> {
        let servers = &self.config.servers;
        let view = |i: usize| Candidate {
            weight: servers[i].weight,
            active: self.load.active[i].load(Ordering::Relaxed),
            available: true,
        };
        let server = {
            // A panic elsewhere cannot leave the balancer half-updated: picks are plain arithmetic.
            let mut balancer = self
                .load
                .balancer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let now_ns = if matches!(self.config.balance, Balance::PeakEwma { .. }) {
                now_ns()
            } else {
                0
            };
            let server = balancer.pick(
                servers.len(),
                view,
                Context {
                    key,
                    random,
                    now_ns,
                },
            )?;
            self.load.active[server].fetch_add(1, Ordering::Relaxed);
            server
        };
        Some((
            server,
            InFlight {
                load: self.load.clone(),
                server,
            },
        ))
    }

    /// The most recently used idle connection to `server` that is still usable.
    pub fn checkout(&self, server: usize) -> Option<Conn> {
        let mut idle = self.idle.borrow_mut();
        let pool = &mut idle[server];
        while let Some(entry) = pool.pop_back() {
            if entry.since.elapsed() < self.config.idle_timeout && entry.conn.is_reusable() {
                return Some(entry.conn);
            }
        }
        None
    }

    /// Keeps `conn` for reuse if the pool has room.
    pub fn checkin(&self, server: usize, conn: Conn) {
        let mut idle = self.idle.borrow_mut();
        let pool = &mut idle[server];
        if pool.len() < self.config.keepalive && conn.buf.is_empty() {
            pool.push_back(Idle {
                conn,
                since: Instant::now(),
            });
        }
    }

    /// Closes idle connections older than the idle timeout.
    pub fn reap(&self) {
        let limit = self.config.idle_timeout;
        for pool in self.idle.borrow_mut().iter_mut() {
            while pool.front().is_some_and(|e| e.since.elapsed() >= limit) {
                pool.pop_front();
            }
        }
    }

    /// Opens a new connection to `server`.
    pub async fn connect(&self, server: usize) -> io::Result<Conn> {
        let addr = self.addr(server);
        let stream = match timeout(self.config.connect_timeout, TcpStream::connect(addr)).await {
            Ok(result) => result?,
            Err(_) => return Err(io::ErrorKind::TimedOut.into()),
        };
        stream.set_nodelay(true)?;
        Ok(Conn::new(stream))
    }
}
