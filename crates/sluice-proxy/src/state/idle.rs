//! A limited server's idle keep-alive connections, kept for the whole process.
//!
//! A server with `max_conns` (or an adaptive limit) must see no more connections from
//! sluice than its limit, all workers together. Idle connections kept per worker (the
//! `upstream::pool`) cannot promise that: each worker keeps its own, so with two workers
//! a server held at 50 requests at once would see up to 100 connections. A limited
//! server's idle connections are kept here instead, where any worker takes one. Then a
//! request that finds none here opens one only when every open connection is in use by
//! another request; as requests in flight are at most the limit, so are connections (in
//! use plus idle). When the limit goes down, connections above it are closed as their
//! requests end (the server counts its open connections: `ServerState::open_conns`).
//!
//! A connection stays registered with the I/O driver of the worker that opened it;
//! another worker may use it, and is then woken across threads. That costs a little per
//! request, and only limited servers pay it; a worker takes one of its own connections
//! when there is one. At shutdown no worker's runtime ends before every worker has
//! drained (`runtime::worker`), so no connection loses its driver while in use. This
//! module must never open or close connections on purpose: it
//! keeps them, hands them out, and drops the ones that expired or died.

use crate::clock;
use crate::io::{Conn, ServerStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::{self, ThreadId};
use std::time::Duration;
use tokio::time::Instant;

struct Idle {
    conn: Conn<ServerStream>,
    expires: Instant,
    /// The worker thread whose I/O driver the connection is registered with.
    owner: ThreadId,
    /// Idle at a reap already: its read buffer is freed at the next (as in
    /// `upstream::pool`).
    reaped: bool,
}

/// One limited server's idle connections, newest last.
#[derive(Default)]
pub struct SharedIdle {
    list: Mutex<Vec<Idle>>,
    /// Their count, read without the lock (the admin API, metrics).
    len: AtomicUsize,
}

impl SharedIdle {
    /// Idle connections kept now.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The newest usable idle connection, one of this worker's own if there is one.
    pub fn checkout(&self) -> Option<Conn<ServerStream>> {
        if self.is_empty() {
            return None;
        }
        let me = thread::current().id();
        let now = clock::now();
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        let mut found = None;
        while let Some(at) = list
            .iter()
            .rposition(|i| i.owner == me)
            .or(list.len().checked_sub(1))
        {
            // `remove`, not `swap_remove`: the rest stay newest last (at most `limit`).
            let mut idle = list.remove(at);
            if idle.expires > now && idle.conn.is_reusable() {
                found = Some(idle.conn);
                break;
            }
        }
        self.len.store(list.len(), Ordering::Relaxed);
        found
    }

    /// Keeps `conn` unless more than `limit` connections are `open` (this one included:
    /// the limit went down) or `keep` are idle already. A connection that is not counted
    /// (opened before a reload gave its server a limit) is not kept: reused, it would
    /// be one more than the count says.
    pub fn checkin(
        &self,
        conn: Conn<ServerStream>,
        limit: u32,
        open: u32,
        keep: usize,
        idle_timeout: Duration,
    ) {
        let Some(owner) = conn.counted.as_ref().map(|c| c.owner()) else {
            return;
        };
        if keep == 0 || !conn.buf.is_empty() || open > limit {
            return;
        }
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        if list.len() >= keep {
            return;
        }
        list.push(Idle {
            conn,
            expires: clock::now() + idle_timeout,
            owner,
            reaped: false,
        });
        self.len.store(list.len(), Ordering::Relaxed);
    }

    /// Closes expired connections, and every one when `all`.
    pub fn reap(&self, all: bool) {
        if self.is_empty() {
            return;
        }
        let now = clock::now();
        let mut list = self.list.lock().unwrap_or_else(|p| p.into_inner());
        list.retain_mut(|i| {
            if std::mem::replace(&mut i.reaped, true) {
                i.conn.shed_buffer();
            }
            !all && i.expires > now
        });
        self.len.store(list.len(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use crate::io::ServerStream;
    use crate::state::server::ServerState;
    use std::time::Duration;
    use tokio::net::{TcpListener, TcpStream};

    const IDLE: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn a_limited_servers_open_connections_are_counted_and_kept_within_its_limit() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = ServerState::new(listener.local_addr().unwrap());
        server.configure(Some(2), false);
        let mut conns = Vec::new();
        for _ in 0..3 {
            let tcp = TcpStream::connect(server.addr).await.unwrap();
            conns.push(server.opened(ServerStream::Tcp(tcp)));
        }
        // The server's side stays open: an accepted socket kept, not closed.
        let mut accepted = Vec::new();
        for _ in 0..3 {
            accepted.push(listener.accept().await.unwrap());
        }
        assert_eq!(server.open_conns(), 3, "one over the limit (it went down)");
        let (limit, keep) = (server.limit(), 10);
        for conn in conns {
            server
                .idle
                .checkin(conn, limit, server.open_conns(), keep, IDLE);
        }
        assert_eq!(server.open_conns(), 2, "the one above the limit is closed");
        assert_eq!(server.idle.len(), 2);
        let taken = server.idle.checkout().expect("an idle connection");
        assert_eq!(server.idle.len(), 1);
        drop(taken);
        assert_eq!(
            server.open_conns(),
            1,
            "a dropped connection leaves the count"
        );
        server.idle.reap(true);
        assert_eq!((server.open_conns(), server.idle.len()), (0, 0));
    }

    #[tokio::test]
    async fn a_connection_idle_since_the_last_reap_frees_its_read_buffer() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = ServerState::new(listener.local_addr().unwrap());
        server.configure(Some(5), false);
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let _accepted = listener.accept().await.unwrap();
        let conn = server.opened(ServerStream::Tcp(tcp));
        assert!(conn.buf.capacity() > 0);
        server.idle.checkin(conn, 5, 1, 10, IDLE);
        server.idle.reap(false);
        server.idle.reap(false);
        let conn = server.idle.checkout().expect("kept and usable");
        assert_eq!(conn.buf.capacity(), 0);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_handed_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = ServerState::new(listener.local_addr().unwrap());
        server.configure(Some(5), false);
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let conn = server.opened(ServerStream::Tcp(tcp));
        server.idle.checkin(conn, 5, 1, 10, IDLE);
        drop(listener.accept().await.unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(server.idle.checkout().is_none());
        assert_eq!((server.open_conns(), server.idle.len()), (0, 0));
    }

    #[tokio::test]
    async fn a_connection_opened_before_the_server_had_a_limit_is_not_kept() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = ServerState::new(listener.local_addr().unwrap());
        // Opened unlimited (not counted); then a reload gives the server a limit.
        let tcp = TcpStream::connect(server.addr).await.unwrap();
        let conn = crate::io::Conn::new(ServerStream::Tcp(tcp));
        server.configure(Some(5), false);
        server.idle.checkin(conn, 5, server.open_conns(), 10, IDLE);
        assert_eq!(
            server.idle.len(),
            0,
            "kept, it would be one the count misses"
        );
    }
}
