//! Tunnels: once a server answers `101 Switching Protocols` (a WebSocket), bytes flow both
//! ways until both sides are done.
//!
//! Backpressure: a direction reads again only after its last bytes were written.
//! Half-close is kept: when one side finishes sending, the other side's write half is shut
//! down and the opposite direction goes on. A quiet tunnel holds no buffer: each direction
//! waits for readiness with none, takes one for a read and gives it back once the bytes
//! are written, which is what keeps ten thousand idle WebSockets cheap, on any [`Stream`].
//! The tunnel ends after `idle` with no bytes either way, when `retired` completes (its
//! server left the config), or when the caller drops it (the grace period at shutdown).

use crate::clock;
use crate::io::conn::Conn;
use crate::io::stream::Stream;
use bytes::BytesMut;
use std::cell::Cell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncWrite, ReadBuf};
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
pub async fn run<C: Stream, U: Stream>(
    client: &mut Conn<C>,
    upstream: &mut Conn<U>,
    idle: Duration,
    retired: impl Future<Output = ()>,
) -> End {
    let activity = Cell::new(clock::now());
    let mut up = Pump::with_early(std::mem::take(&mut client.buf));
    let mut down = Pump::with_early(std::mem::take(&mut upstream.buf));
    let (c, u) = (&mut client.stream, &mut upstream.stream);
    let both = poll_fn(|cx| {
        // An error on either side (a reset) ends both directions at once; a clean end of
        // one direction (half-close) lets the other go on.
        let up_done = up.poll(cx, c, u, &activity)?.is_ready();
        let down_done = down.poll(cx, u, c, &activity)?.is_ready();
        if up_done && down_done {
            Poll::Ready(Ok::<(), io::Error>(()))
        } else {
            Poll::Pending
        }
    });
    tokio::select! {
        end = both => if end.is_ok() { End::Closed } else { End::Failed },
        () = quiet(&activity, idle) => End::Idle,
        () = retired => End::Retired,
    }
}

/// One direction of a tunnel.
struct Pump {
    /// Bytes read and not yet written; empty (and unallocated) while waiting to read.
    buf: Vec<u8>,
    written: usize,
    state: State,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    Writing,
    /// The source ended: shut the destination's sending side.
    ShuttingDown,
    Done,
}

impl Pump {
    fn with_early(early: BytesMut) -> Self {
        let state = if early.is_empty() {
            State::Reading
        } else {
            State::Writing
        };
        Pump {
            buf: early.to_vec(),
            written: 0,
            state,
        }
    }

    /// Moves bytes from `from` to `to` until `from` ends and `to` is shut down.
    fn poll<R: Stream, W: AsyncWrite + Unpin>(
        &mut self,
        cx: &mut Context<'_>,
        from: &mut R,
        to: &mut W,
        activity: &Cell<Instant>,
    ) -> Poll<io::Result<()>> {
        loop {
            match self.state {
                State::Reading => ready!(self.poll_read(cx, from, activity))?,
                State::Writing => {
                    while self.written < self.buf.len() {
                        let n =
                            ready!(Pin::new(&mut *to).poll_write(cx, &self.buf[self.written..]))?;
                        if n == 0 {
                            return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                        }
                        self.written += n;
                    }
                    // What a TLS stream still holds must reach the peer before we wait
                    // for its answer.
                    ready!(Pin::new(&mut *to).poll_flush(cx))?;
                    self.buf = Vec::new();
                    self.written = 0;
                    self.state = State::Reading;
                }
                State::ShuttingDown => {
                    ready!(Pin::new(&mut *to).poll_shutdown(cx))?;
                    self.state = State::Done;
                }
                State::Done => return Poll::Ready(Ok(())),
            }
        }
    }

    /// Waits for bytes without a buffer, then reads them into a fresh one.
    fn poll_read<R: Stream>(
        &mut self,
        cx: &mut Context<'_>,
        from: &mut R,
        activity: &Cell<Instant>,
    ) -> Poll<io::Result<()>> {
        ready!(from.poll_read_ready(cx))?;
        let mut buf = vec![0u8; CHUNK];
        let mut read = ReadBuf::new(&mut buf);
        match Pin::new(&mut *from).poll_read(cx, &mut read) {
            // Readiness was stale: give the buffer back and wait again.
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Ready(Ok(())) => {
                let n = read.filled().len();
                if n == 0 {
                    self.state = State::ShuttingDown;
                } else {
                    activity.set(clock::now());
                    buf.truncate(n);
                    self.buf = buf;
                    self.state = State::Writing;
                }
                Poll::Ready(Ok(()))
            }
        }
    }
}

/// Completes once no bytes have moved for `idle`.
async fn quiet(activity: &Cell<Instant>, idle: Duration) {
    loop {
        let deadline = activity.get() + idle;
        tokio::time::sleep_until(deadline).await;
        if activity.get() + idle <= clock::now() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::stream::loopback_pair as pair;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn bytes_flow_both_ways_and_half_close_is_kept() {
        let (mut client, client_side) = pair().await;
        let (upstream_side, mut server) = pair().await;
        let mut c = Conn::idle(client_side);
        c.buf.extend_from_slice(b"early ");
        let mut u = Conn::idle(upstream_side);
        let tunnel = run(
            &mut c,
            &mut u,
            Duration::from_secs(5),
            std::future::pending(),
        );
        let peers = async {
            client.write_all(b"hello").await.unwrap();
            client.shutdown().await.unwrap();
            let mut got = Vec::new();
            server.read_to_end(&mut got).await.unwrap();
            assert_eq!(got, b"early hello");
            // The other direction still works after the client's half-close.
            server.write_all(b"reply").await.unwrap();
            server.shutdown().await.unwrap();
            let mut back = Vec::new();
            client.read_to_end(&mut back).await.unwrap();
            assert_eq!(back, b"reply");
        };
        let (end, ()) = tokio::join!(tunnel, peers);
        assert_eq!(end, End::Closed);
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_tunnel_ends_at_its_idle_timeout() {
        let (_client, client_side) = pair().await;
        let (upstream_side, _server) = pair().await;
        let (mut c, mut u) = (Conn::idle(client_side), Conn::idle(upstream_side));
        let started = clock::now();
        let end = run(
            &mut c,
            &mut u,
            Duration::from_secs(3600),
            std::future::pending(),
        )
        .await;
        assert_eq!(end, End::Idle);
        assert_eq!(clock::now() - started, Duration::from_secs(3600));
    }

    #[tokio::test]
    async fn a_retired_server_ends_the_tunnel() {
        let (_client, client_side) = pair().await;
        let (upstream_side, _server) = pair().await;
        let (mut c, mut u) = (Conn::idle(client_side), Conn::idle(upstream_side));
        let end = run(&mut c, &mut u, Duration::from_secs(60), async {}).await;
        assert_eq!(end, End::Retired);
    }
}
