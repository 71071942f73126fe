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
    /// Idle at a reap already: its read buffer is freed at the next (see [`Pool::reap`]).
    reaped: bool,
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
                reaped: false,
            });
            idles.show();
        }
    }

    /// Closes expired connections, and every connection to an address not in `keep`.
    /// Frees the read buffers of those idle since the reap before: the connections a
    /// burst left (up to `keepalive` each worker) held 16 KiB each while idle, where one
    /// that carries requests is checked out again before two reaps.
    pub fn reap(&self, keep: impl Fn(&SocketAddr) -> bool) {
        let now = clock::now();
        let mut idle = self.idle.borrow_mut();
        idle.retain(|addr, idles| {
            idles.list.retain_mut(|e| {
                if std::mem::replace(&mut e.reaped, true) {
                    e.conn.shed_buffer();
                }
                e.expires > now
            });
            if !keep(addr) {
                idles.list.clear();
            }
            idles.show();
            !idles.list.is_empty()
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::{TcpListener, TcpStream};

    const IDLE: Duration = Duration::from_secs(60);

    /// A connection idle across two reaps gives its read buffer back; one checked out
    /// between them keeps it; both stay pooled and usable.
    #[tokio::test]
    async fn a_connection_idle_since_the_last_reap_frees_its_read_buffer() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = ServerState::new(listener.local_addr().unwrap());
        let pool = Pool::new(Arc::default());
        let mut accepted = Vec::new();
        for _ in 0..2 {
            let tcp = TcpStream::connect(server.addr).await.unwrap();
            accepted.push(listener.accept().await.unwrap());
            let conn = Conn::new(ServerStream::Tcp(tcp));
            assert!(conn.buf.capacity() > 0);
            pool.checkin(&server, conn, 10, IDLE);
        }
        pool.reap(|_| true);
        // The newest is used again before the next reap, and comes back.
        let busy = pool.checkout(&server).expect("pooled");
        assert!(busy.buf.capacity() > 0, "one reap alone frees nothing");
        pool.checkin(&server, busy, 10, IDLE);
        pool.reap(|_| true);
        let busy = pool.checkout(&server).expect("pooled");
        let idle = pool.checkout(&server).expect("pooled");
        assert!(busy.buf.capacity() > 0, "checked in since the last reap");
        assert_eq!(idle.buf.capacity(), 0, "idle since the reap before");
        assert!(pool.checkout(&server).is_none());
    }
}
