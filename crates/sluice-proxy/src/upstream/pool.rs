//! A worker's idle keep-alive connections, by server address.
//!
//! Keyed by address rather than by upstream, so connections to a server that stays across
//! a reload stay pooled. Per worker, so checking out and in takes no lock. LIFO: the most
//! recently used connection is the warmest, and the oldest age out. A limited server's
//! connections are the exception: they are kept for the whole process, with the server
//! (see [`crate::state::idle`]), so that its limit bounds the connections it sees.

use crate::clock;
use crate::io::{Conn, ServerStream};
use crate::metrics::{PoolGauge, ProxyStats};
use crate::state::server::ServerState;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

struct Idle {
    conn: Conn<ServerStream>,
    expires: Instant,
}

pub struct Pool {
    idle: RefCell<HashMap<SocketAddr, Idles, BuildHasherDefault<AddrHasher>>>,
    stats: Arc<ProxyStats>,
}

/// A worker's idle connections to one address, and the gauge that shows their count.
struct Idles {
    list: VecDeque<Idle>,
    gauge: Arc<PoolGauge>,
}

impl Idles {
    /// Shows the count in this worker's slot of the gauge.
    fn show(&self) {
        self.gauge.local().set(self.list.len() as u64);
    }
}

/// A fast hasher for the few socket addresses a worker pools: looked up twice per
/// request, where std's DoS-resistant SipHash is wasted (the keys come from the config,
/// not from clients).
#[derive(Default)]
pub struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
}

impl Pool {
    pub fn new(stats: Arc<ProxyStats>) -> Self {
        Pool {
            idle: RefCell::default(),
            stats,
        }
    }

    /// The most recently used idle connection to `server` that is still usable.
    pub fn checkout(&self, server: &ServerState) -> Option<Conn<ServerStream>> {
        if server.limited() {
            return server.idle.checkout();
        }
        let addr = server.addr;
        let mut idle = self.idle.borrow_mut();
        let idles = idle.get_mut(&addr)?;
        let now = clock::now();
        let mut found = None;
        while let Some(mut entry) = idles.list.pop_back() {
            if entry.expires > now && entry.conn.is_reusable() {
                found = Some(entry.conn);
                break;
            }
        }
        idles.show();
        found
    }

    /// Keeps `conn`, ending a request on `server`, for reuse if fewer than `keep` are
    /// idle for its address (and, for a limited server, if its limit leaves room).
    pub fn checkin(
        &self,
        server: &ServerState,
        conn: Conn<ServerStream>,
        keep: usize,
        idle_timeout: Duration,
    ) {
        if server.limited() {
            let (limit, open) = (server.limit(), server.open_conns());
            return server.idle.checkin(conn, limit, open, keep, idle_timeout);
        }
        if keep == 0 || !conn.buf.is_empty() {
            return;
        }
        let addr = server.addr;
        let mut idle = self.idle.borrow_mut();
        let idles = idle.entry(addr).or_insert_with(|| Idles {
            list: VecDeque::new(),
            gauge: self.stats.pool(addr),
        });
        if idles.list.len() < keep {
            idles.list.push_back(Idle {
                conn,
                expires: clock::now() + idle_timeout,
            });
            idles.show();
        }
    }

    /// Closes expired connections, and every connection to an address not in `keep`.
    pub fn reap(&self, keep: impl Fn(&SocketAddr) -> bool) {
        let now = clock::now();
        let mut idle = self.idle.borrow_mut();
        idle.retain(|addr, idles| {
            idles.list.retain(|e| e.expires > now);
            if !keep(addr) {
                idles.list.clear();
            }
            idles.show();
            !idles.list.is_empty()
        });
    }
}
