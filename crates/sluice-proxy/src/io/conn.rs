//! A connection with its read buffer, and reads and writes bounded by time.

use crate::io::server::ServerStream;
use crate::io::stream::{readable, Stream};
use bytes::BytesMut;
use futures_util::future::{Either, FutureExt};
use std::future::{poll_fn, Future};
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{timeout, timeout_at, Instant};

/// Read buffers grow in steps of this size; large bodies stream through at most a few of
/// them, which is what keeps a 1 GiB transfer in bounded memory.
pub const READ_CHUNK: usize = 16 * 1024;

pub struct Conn<S = TcpStream> {
    pub stream: S,
    /// Bytes read but not yet consumed (the rest of a head, body bytes, a pipelined request).
    pub buf: BytesMut,
    /// Counts the connection among its server's open ones while it lives (a limited
    /// server's: see `state::idle`).
    pub counted: Option<Counted>,
}

/// One connection in a count of open connections, until dropped; and the worker thread
/// that opened it (whose I/O driver it is registered with).
pub struct Counted {
    count: Arc<AtomicU32>,
    owner: std::thread::ThreadId,
}

impl Counted {
    /// Adds one to `count`, taken off again when dropped.
    pub fn new(count: &Arc<AtomicU32>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Counted {
            count: count.clone(),
            owner: std::thread::current().id(),
        }
    }

    /// The thread that opened the connection.
    pub fn owner(&self) -> std::thread::ThreadId {
        self.owner
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<S: Stream> Conn<S> {
    pub fn new(stream: S) -> Self {
        Conn {
            stream,
            buf: BytesMut::with_capacity(READ_CHUNK),
            counted: None,
        }
    }

    /// A connection that holds no buffer until it has something to read.
    pub fn idle(stream: S) -> Self {
        Conn {
            stream,
            buf: BytesMut::new(),
            counted: None,
        }
    }

    /// Reads more bytes into the buffer, failing with `TimedOut` after `limit`.
    /// Returns 0 at end of stream.
    pub async fn fill(&mut self, limit: Duration) -> io::Result<usize> {
        self.reserve();
        match timeout(limit, self.stream.read_buf(&mut self.buf)).await {
            Ok(result) => result,
            Err(_) => Err(io::ErrorKind::TimedOut.into()),
        }
    }

    /// Like [`Conn::fill`], with an absolute deadline.
    pub async fn fill_until(&mut self, deadline: Instant) -> io::Result<usize> {
        self.reserve();
        match timeout_at(deadline, self.stream.read_buf(&mut self.buf)).await {
            Ok(result) => result,
            Err(_) => Err(io::ErrorKind::TimedOut.into()),
        }
    }

    /// Reads what the stream has without waiting (`WouldBlock` when it has nothing).
    pub async fn try_fill(&mut self) -> io::Result<usize> {
        self.reserve();
        let mut read = std::pin::pin!(self.stream.read_buf(&mut self.buf));
        poll_fn(|cx| match read.as_mut().poll(cx) {
            Poll::Pending => Poll::Ready(Err(io::ErrorKind::WouldBlock.into())),
            done => done,
        })
        .await
    }

    /// Completes when the stream may have bytes to read, taking no buffer meanwhile.
    pub async fn readable(&self) -> io::Result<()> {
        readable(&self.stream).await
    }

    fn reserve(&mut self) {
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
    }
}

impl Conn<ServerStream> {
    /// True when a pooled connection can still carry a request: the peer has not closed it
    /// and sent nothing unasked. Costs at most one non-blocking read.
    pub fn is_reusable(&mut self) -> bool {
        self.stream.is_reusable()
    }
}

/// Writes all of `bytes`, failing with `TimedOut` if the peer does not take them in time.
/// Flushed: a TLS stream may hold encrypted bytes the socket would not take yet, and
/// nothing else would write them out before the peer waits for them (for TCP the flush
/// is a no-op).
pub async fn write_all<W: AsyncWrite + Unpin>(
    stream: &mut W,
    bytes: &[u8],
    limit: Duration,
) -> io::Result<()> {
    let written = async {
        stream.write_all(bytes).await?;
        stream.flush().await
    };
    match timeout(limit, written).await {
        Ok(result) => result,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

/// `work`, given up at `deadline` when there is one (`Err(Elapsed)`).
///
/// A plain function returning one future, for the request path: an `async fn` taking
/// `work` as an argument keeps it twice in its state (rustc stores the arguments apart
/// from the locals they are moved to), and that state is moved whole for every HTTP/2
/// stream (a 1.7 KiB attempt counted twice in `forward`).
pub fn bounded<F: Future>(
    deadline: Option<Instant>,
    work: F,
) -> impl Future<Output = Result<F::Output, tokio::time::error::Elapsed>> {
    match deadline {
        Some(at) => Either::Left(timeout_at(at, work)),
        None => Either::Right(work.map(Ok)),
    }
}
