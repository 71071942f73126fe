//! Tunnels: once a server answers `101 Switching Protocols` (a WebSocket), bytes flow both
//! ways until both sides are done.
//!
//! Backpressure comes from awaiting each write before reading more. Half-close is kept:
//! when one side finishes sending, the other side's write half is shut down and the
//! opposite direction goes on. A quiet tunnel holds no buffer: one is taken only while
//! bytes move, which is what keeps ten thousand idle WebSockets cheap. The tunnel ends
//! after `idle` with no bytes either way, when its server is retired by a reload, or when
//! the worker's grace period runs out at shutdown.

use crate::conn::Conn;
use crate::upstream::ServerState;
use bytes::BytesMut;
use std::cell::Cell;
use std::io;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{ReadHalf, WriteHalf};
use tokio::time::Instant;

/// Bytes moved at most per read; the buffer lives only for one read and its write.
const CHUNK: usize = 16 * 1024;

/// Why a tunnel ended.
#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Both sides closed their sending direction.
    Closed,
    /// No bytes either way for the idle timeout.
    Idle,
    /// The server was removed from the config.
    Retired,
    /// A read or write failed (a reset, usually).
    Failed,
}

/// Runs the tunnel between `client` and `upstream` (their buffered bytes go first).
pub async fn run(
    client: &mut Conn,
    upstream: &mut Conn,
    idle: Duration,
    server: &ServerState,
) -> End {
    let client_early = std::mem::take(&mut client.buf);
    let upstream_early = std::mem::take(&mut upstream.buf);
    let activity = Cell::new(Instant::now());
    let (client_read, client_write) = client.stream.split();
    let (upstream_read, upstream_write) = upstream.stream.split();
    let both = async {
        // An error on either side (a reset) ends both directions at once; a clean end of
        // one direction (half-close) lets the other go on.
        let pumps = tokio::try_join!(
            pump(client_read, upstream_write, client_early, &activity),
            pump(upstream_read, client_write, upstream_early, &activity)
        );
        match pumps {
            Ok(_) => End::Closed,
            Err(_) => End::Failed,
        }
    };
    tokio::select! {
        end = both => end,
        () = quiet(&activity, idle) => End::Idle,
        () = server.retired() => End::Retired,
    }
}

/// Copies `from` to `to` until `from` ends, then shuts `to` down (half-close).
async fn pump(
    from: ReadHalf<'_>,
    mut to: WriteHalf<'_>,
    early: BytesMut,
    activity: &Cell<Instant>,
) -> io::Result<()> {
    if !early.is_empty() {
        to.write_all(&early).await?;
    }
    drop(early);
    loop {
        from.readable().await?;
        let mut buf = vec![0u8; CHUNK];
        match from.try_read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                activity.set(Instant::now());
                to.write_all(&buf[..n]).await?;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    to.shutdown().await
}

/// Completes once no bytes have moved for `idle`.
async fn quiet(activity: &Cell<Instant>, idle: Duration) {
    loop {
        let deadline = activity.get() + idle;
        tokio::time::sleep_until(deadline).await;
        if activity.get() + idle <= Instant::now() {
            return;
        }
    }
}
