//! A connection with its read buffer, and reads and writes bounded by time.

use crate::io::server::ServerStream;
use crate::io::stream::{readable, Stream};
use bytes::BytesMut;
use futures_util::future::{Either, FutureExt};
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::coop::unconstrained;
use tokio::time::{timeout, timeout_at, Instant, Sleep};

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
    /// The deadline of the read in progress (see [`ReadTimer`]).
    timer: ReadTimer,
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
            timer: ReadTimer::default(),
        }
    }

    /// A connection that holds no buffer until it has something to read.
    pub fn idle(stream: S) -> Self {
        Conn {
            stream,
            buf: BytesMut::new(),
            counted: None,
            timer: ReadTimer::default(),
        }
    }

    /// Reads more bytes into the buffer, failing with `TimedOut` after `limit`.
    /// Returns 0 at end of stream.
    pub async fn fill(&mut self, limit: Duration) -> io::Result<usize> {
        self.fill_until(crate::clock::now() + limit).await
    }

    /// Like [`Conn::fill`], with an absolute deadline.
    pub async fn fill_until(&mut self, deadline: Instant) -> io::Result<usize> {
        self.reserve();
        let Conn {
            stream, buf, timer, ..
        } = self;
        let mut read = std::pin::pin!(stream.read_buf(buf));
        poll_fn(|cx| match read.as_mut().poll(cx) {
            Poll::Pending if timer.passed(deadline, cx) => {
                Poll::Ready(Err(io::ErrorKind::TimedOut.into()))
            }
            other => other,
        })
        .await
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

    /// Frees the read buffer of a connection that has nothing buffered (the next read
    /// takes a new one): for a connection kept idle for a while.
    pub fn shed_buffer(&mut self) {
        if self.buf.is_empty() && self.buf.capacity() > 0 {
            self.buf = BytesMut::new();
        }
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

/// The timer of a connection's reads, kept from one read to the next.
///
/// A `tokio::time::timeout` around every read made a timer each time, and the read of a
/// response nearly always waits: the timer went into the runtime's wheel and out again
/// for every request (about 450 instructions a request, callgrind, and a lock of the
/// timer driver each way). This one is made once per connection; moving its deadline
/// later only marks it (tokio fires it at the old time, finds the later one and moves
/// it on), so it is registered again only when it fired or a deadline came earlier.
///
/// Between reads the timer stays registered with the waker of the last task that
/// read; if it fires then, it wakes that task once for nothing.
#[derive(Default)]
struct ReadTimer(Option<Pin<Box<Sleep>>>);

impl ReadTimer {
    /// Whether `deadline` has passed; if not, the task is woken by then.
    fn passed(&mut self, deadline: Instant, cx: &mut Context<'_>) -> bool {
        let sleep = self
            .0
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if sleep.deadline() != deadline {
            sleep.as_mut().reset(deadline);
        }
        // Outside the cooperative budget: this read's own poll already counted.
        unconstrained(sleep.as_mut()).poll_unpin(cx).is_ready()
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
    let mut written = std::pin::pin!(async {
        stream.write_all(bytes).await?;
        stream.flush().await
    });
    // Most writes are taken at once: the timer (a clock read and a timer of tokio's)
    // only for one that has to wait, its time counted from then.
    if let Poll::Ready(done) = poll_fn(|cx| Poll::Ready(written.as_mut().poll(cx))).await {
        return done;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;
    use tokio::time::sleep;

    const MS: Duration = Duration::from_millis(1);

    /// A connected pair on loopback: the peer's end and ours.
    async fn tcp_pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let peer = TcpStream::connect(listener.local_addr().unwrap());
        let (peer, accepted) = tokio::join!(peer, listener.accept());
        (peer.unwrap(), accepted.unwrap().0)
    }

    /// The same, ours as a `Conn`.
    async fn pair() -> (TcpStream, Conn) {
        let (peer, ours) = tcp_pair().await;
        (peer, Conn::new(ours))
    }

    /// `conn.fill(limit)`, and how long it took on the (paused) clock. A read the timer
    /// never ends fails the test after a minute instead of hanging it.
    async fn timed_fill(conn: &mut Conn, limit: Duration) -> (io::Result<usize>, Duration) {
        let started = Instant::now();
        let read = timeout(Duration::from_secs(60), conn.fill(limit)).await;
        (
            read.expect("the read's timer never fired"),
            started.elapsed(),
        )
    }

    /// Sends each of `script`'s bytes to the peer after its delay (one after the
    /// other), from another task that then keeps the connection open.
    fn send_later(mut peer: TcpStream, script: &'static [(u64, &'static [u8])]) {
        tokio::spawn(async move {
            for (delay, bytes) in script {
                sleep(Duration::from_millis(*delay)).await;
                peer.write_all(bytes).await.unwrap();
            }
            sleep(Duration::from_secs(3600)).await;
        });
    }

    #[tokio::test(start_paused = true)]
    async fn each_read_keeps_its_own_deadline_later_or_earlier() {
        let (peer, mut conn) = pair().await;
        send_later(peer, &[(20, b"a"), (250, b"b")]);
        let (read, took) = timed_fill(&mut conn, 100 * MS).await;
        assert_eq!(read.unwrap(), 1);
        assert!(took < 100 * MS, "{took:?}");
        // A later deadline: the first one (100 ms) passes during this read and must
        // not end it.
        let (read, took) = timed_fill(&mut conn, 300 * MS).await;
        assert_eq!(read.unwrap(), 1, "cut short after {took:?}");
        assert!(took >= 250 * MS, "{took:?}");
        // An earlier deadline than the last one is kept too.
        let (read, took) = timed_fill(&mut conn, 50 * MS).await;
        assert_eq!(read.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!((50 * MS..100 * MS).contains(&took), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_in_another_task_is_woken_at_its_deadline() {
        // A pooled connection read by one request's task, then by another's: the
        // timer, registered by the first, must wake the second.
        let (peer, mut conn) = pair().await;
        send_later(peer, &[(10, b"a")]);
        let mut conn = tokio::spawn(async move {
            let (read, _) = timed_fill(&mut conn, 50 * MS).await;
            assert_eq!(read.unwrap(), 1);
            conn
        })
        .await
        .unwrap();
        let (read, took) = tokio::spawn(async move { timed_fill(&mut conn, 200 * MS).await })
            .await
            .unwrap();
        assert_eq!(read.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!((200 * MS..250 * MS).contains(&took), "{took:?}");
    }

    /// A write the socket takes at once needs no timer; one to a peer that stops
    /// reading ends at its limit, counted from when it began to wait.
    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_does_not_take_ends_at_its_limit() {
        let (mut peer, mut ours) = tcp_pair().await;
        write_all(&mut ours, b"hello", 100 * MS).await.unwrap();
        let mut got = [0u8; 5];
        peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");
        // More than the two sockets' buffers hold, to a peer that reads no more.
        let big = vec![7u8; 64 << 20];
        let started = Instant::now();
        let wrote = timeout(
            Duration::from_secs(60),
            write_all(&mut ours, &big, 300 * MS),
        )
        .await
        .expect("the write's timer never fired");
        let took = started.elapsed();
        assert_eq!(wrote.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!((300 * MS..350 * MS).contains(&took), "{took:?}");
        drop(peer);
    }
}
