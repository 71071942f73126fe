//! One HTTP/1 client connection: request heads read one after another (keep-alive and
//! pipelining), each taken through the stages and served by `request::serve`, until one
//! ends the connection. The connection's deadlines live here: `header_timeout` for a
//! head (from the accept for the first), `keepalive_timeout` between requests. While
//! idle it holds its stream and the wait for bytes only: buffers, read timer and a
//! request's state live in a box made when bytes come (see [`serve`]).

use super::refusals::{host_and_path, refused};
use super::request::{self, captured, compressing, logged, response_edits, Prepared};
use super::stages::{head_stages, too_large, Staged, Target};
use super::Counted;
use crate::client::Client;
use crate::context::Context;
use crate::downstream::buffers::{Buffers, Scratch};
use crate::downstream::h1::Http1;
use crate::downstream::Compressing;
use crate::downstream::Downstream;
use crate::failure::Failure;
use crate::http1::encode::Edits;
use crate::http1::request::{self as parse, Rejection};
use crate::idle_waits::IdleWait;
use crate::io::{Conn, Stream};
use crate::metrics::ListenerStats;
use bytes::Buf;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// Serves `stream` until the client closes, an error ends it, or the worker drains.
///
/// Between requests the connection holds its stream and the wait for its next bytes,
/// nothing more ([`Idle`]): the machinery that reads heads and serves requests
/// ([`active`]: the read buffer and scratch space, the read timer, a request's state)
/// is boxed when bytes come and dropped when none are left buffered, so an idle client
/// costs its socket and this future's 128 bytes (232 when it owns its [`Parts`];
/// issue 32). A function returning an async block, not an `async fn`: an `async fn`
/// keeps its arguments twice (as given, and moved into its body), the stream's 32
/// bytes among them.
///
/// What it serves with comes as [`Parts`]: borrowed, or owned by this future when
/// nothing else holds them (a plain connection's session box, `runtime::worker`), so
/// that the box keeps one stream, not the one it was given and the one moved in here.
///
/// `accepted` is when the connection was accepted, not when this session began: what
/// came first (a PROXY header, the wait for enough bytes to tell HTTP/2 from HTTP/1)
/// spent the same `header_timeout` the first head has (issue 47: a partial h2c preface
/// held a client twice as long). It comes as an `Option`, always `Some`, taken for the
/// first head: an `Instant` made into one here would be kept twice, as given and as
/// the local that is taken (16 bytes more in every idle connection's future).
#[allow(clippy::manual_async_fn)]
pub fn serve<'a, S: Stream + 'a, P: Parts + 'a>(
    parts: P,
    mut stream: S,
    mut accepted: Option<Instant>,
) -> impl Future<Output = ()> + 'a {
    async move {
        let _open = Counted::open(parts.parts().2);
        // The parts are taken from `parts` where used, in blocks that end before each
        // wait: held across one, their three references would be kept in this future.
        loop {
            let until = idle_until(parts.parts().0, accepted);
            let wait = idle(parts.parts().0, &stream, until);
            if !wait.await {
                break;
            }
            let active = {
                let (ctx, client, stats) = parts.parts();
                active(ctx, stream, (client, stats), accepted.take(), until)
            };
            let (back, again) = Box::pin(active).await;
            stream = back;
            if !again {
                break;
            }
        }
        if S::CLOSE_NOTIFY {
            // Boxed: its timer would otherwise be in every idle connection's future.
            Box::pin(close_notify(&mut stream)).await;
        }
    }
}

/// What a session serves with: its worker's context, the client and its listener's
/// figures.
pub trait Parts {
    fn parts(&self) -> (&Context, &Client, &ListenerStats);
}

impl Parts for (&Context, &Client, &ListenerStats) {
    fn parts(&self) -> (&Context, &Client, &ListenerStats) {
        *self
    }
}

/// TLS says goodbye (close_notify) so that the client knows the response was whole; a
/// client that does not take it in a moment is not waited for.
async fn close_notify<S: Stream>(stream: &mut S) {
    let bye = tokio::io::AsyncWriteExt::shutdown(stream);
    let _ = tokio::time::timeout(CLOSE_NOTIFY_WAIT, bye).await;
}

/// The longest a closing TLS connection waits to send its close_notify.
const CLOSE_NOTIFY_WAIT: Duration = Duration::from_secs(1);

/// Until when a connection waits for its next bytes: its first head's deadline
/// (`header_timeout` from the accept), or `keepalive_timeout` from now between requests.
fn idle_until(ctx: &Context, accepted: Option<Instant>) -> Instant {
    let config = &ctx.generation().shared.config;
    match accepted {
        Some(at) => at + config.header_timeout,
        None => crate::clock::now() + config.keepalive_timeout,
    }
}

/// Waits, holding nothing but the stream, until it may have bytes to read (true), or
/// `until` passes (within the worker's idle tick, [`crate::idle_waits`]), the worker
/// drains or the socket fails (false: the connection ends quietly).
fn idle<'a, S: Stream>(ctx: &'a Context, stream: &'a S, until: Instant) -> Idle<'a, S> {
    let over = (!ctx.draining()).then(|| ctx.idle.wait(until));
    Idle { stream, over }
}

/// An idle connection's wait (see [`idle`]): 24 bytes, where a `select!` of the same
/// two futures took 96.
struct Idle<'a, S> {
    stream: &'a S,
    /// None: the worker was draining already.
    over: Option<IdleWait<'a>>,
}

impl<S: Stream> Future for Idle<'_, S> {
    type Output = bool;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<bool> {
        let this = &mut *self;
        let Some(over) = this.over.as_mut() else {
            return Poll::Ready(false);
        };
        if let Poll::Ready(ready) = this.stream.poll_read_ready(cx) {
            return Poll::Ready(ready.is_ok());
        }
        Pin::new(over).poll(cx).map(|()| false)
    }
}

/// Reads and serves requests on `stream` from its first bytes until the connection
/// ends (false) or has nothing buffered between requests (true: idle again); its
/// buffers are back in the worker's stash either way. `accepted`: set for the
/// connection's first head; `until`: how long it may still wait for bytes.
async fn active<S: Stream>(
    ctx: &Context,
    stream: S,
    (client, stats): (&Client, &ListenerStats),
    accepted: Option<Instant>,
    until: Instant,
) -> (S, bool) {
    let mut conn = Conn::idle(stream);
    let buffers = ctx.stash.take();
    let mut scratch = buffers.scratch;
    conn.buf = buffers.read;
    // The bytes that woke it, read at once (a wake-up with nothing to read leaves the
    // wait to `read_head`, with the same deadline).
    let again = match conn.try_fill().await {
        Ok(0) => false,
        Err(e) if e.kind() != io::ErrorKind::WouldBlock => false,
        _ => {
            exchange(
                ctx,
                &mut conn,
                &mut scratch,
                (client, stats),
                (accepted, until),
            )
            .await
        }
    };
    ctx.stash.give(Buffers {
        read: std::mem::take(&mut conn.buf),
        scratch,
    });
    (conn.stream, again)
}

/// Requests one after another on `conn` while it has bytes for them: false when one
/// ends the connection, true when none is left buffered after a response.
async fn exchange<S: Stream>(
    ctx: &Context,
    conn: &mut Conn<S>,
    scratch: &mut Scratch,
    (client, stats): (&Client, &ListenerStats),
    (accepted, until): (Option<Instant>, Instant),
) -> bool {
    let mut first = accepted;
    loop {
        let staged = match read_head(ctx, conn, client, scratch, (first.take(), until)).await {
            Ok(Some(staged)) if client.crowded => staged.crowded(),
            Ok(Some(staged)) => staged,
            Ok(None) => return false,
            Err(rejection) => {
                let refusal = reject(ctx, conn, scratch, (client, stats), rejection);
                Box::pin(refusal).await;
                return false;
            }
        };
        // In place: this future is boxed only while the connection is busy (see
        // `serve`), so the request's state costs an idle connection nothing.
        let keep_alive = one_request(ctx, conn, scratch, (client, stats), staged).await;
        if !keep_alive || ctx.draining() {
            return false;
        }
        if conn.buf.is_empty() {
            return true; // nothing pipelined: idle until the next bytes
        }
    }
}

/// Serves a staged request whose head is at the start of `conn`'s buffer. True when
/// the connection can carry another.
async fn one_request<S: Stream>(
    ctx: &Context,
    conn: &mut Conn<S>,
    scratch: &mut Scratch,
    (client, stats): (&Client, &ListenerStats),
    staged: Staged,
) -> bool {
    let head = &conn.buf[..staged.request.head_len];
    // The access log's view of the head, copied before the head leaves the buffer
    // (and its clocks read only when there is a log).
    let log = logged(&staged.generation, head, &mut scratch.log);
    // Named in the log line of a 404 (read before the head leaves the buffer).
    let unrouted = matches!(staged.target, Target::Unrouted).then(|| host_and_path(head));
    conn.buf.advance(staged.request.head_len);
    // The route's response edits borrow the generation while `staged` moves on.
    let generation = staged.generation.clone();
    let timeout = generation.shared.config.client_idle_timeout;
    let edits = response_edits(&generation, &staged.target, &scratch.response_edits);
    let mut down = http1(
        conn,
        &mut scratch.out,
        (staged.request.http10, timeout),
        edits,
        compressing(&generation, &staged),
    );
    let prepared = Prepared {
        head: &scratch.head,
        key: &scratch.key,
        unrouted,
        logged: captured(log, &scratch.log),
    };
    request::serve(ctx, (client, stats), &mut down, staged, prepared).await
}

/// Answers a head that cannot be served (malformed, too large, too slow), then the
/// connection closes.
async fn reject<S: Stream>(
    ctx: &Context,
    conn: &mut Conn<S>,
    scratch: &mut Scratch,
    (client, stats): (&Client, &ListenerStats),
    rejection: Rejection,
) {
    let started = (crate::clock::now(), SystemTime::now());
    let timeout = ctx.generation().shared.config.client_idle_timeout;
    let mut down = http1(conn, &mut scratch.out, (false, timeout), None, None);
    if down.send_error(rejection.status, true).await {
        down.conclude(true, false).await;
    }
    refused(ctx, (client, stats), Failure::from(rejection), started);
}

fn http1<'a, S>(
    conn: &'a mut Conn<S>,
    out: &'a mut Vec<u8>,
    (http10, timeout): (bool, Duration),
    edits: Option<Edits<'a>>,
    compress: Option<Compressing<'a>>,
) -> Downstream<'a, S> {
    Downstream::Http1(Http1 {
        conn,
        out,
        http10,
        timeout,
        edits,
        compress,
    })
}

/// Reads until a whole request head is buffered. `Ok(None)`: the connection ended
/// quietly (closed by the client, silent or idle too long, or the worker is draining).
///
/// `accepted` is set for a connection's first request: its head must then be complete
/// within `header_timeout` of the accept, so a client that connects and sends nothing
/// is closed at that deadline. Before a later request the connection may idle for
/// `keepalive_timeout`, and its head has `header_timeout` from its first byte.
async fn read_head<S: Stream>(
    ctx: &Context,
    conn: &mut Conn<S>,
    client: &Client,
    scratch: &mut Scratch,
    (accepted, idle_until): (Option<Instant>, Instant),
) -> Result<Option<Staged>, Rejection> {
    let header_timeout = ctx.generation().shared.config.header_timeout;
    let mut deadline = match accepted {
        Some(at) => Some(at + header_timeout),
        None => (!conn.buf.is_empty()).then(|| crate::clock::now() + header_timeout),
    };
    loop {
        if let Some(parsed) = parse_head(ctx, &conn.buf, client, scratch)? {
            return Ok(Some(parsed));
        }
        let read = if conn.buf.is_empty() {
            wait_for_request(ctx, conn, scratch, deadline.unwrap_or(idle_until)).await
        } else {
            // The head has begun: one deadline for all of it, however slowly it trickles in.
            let at = *deadline.get_or_insert_with(|| crate::clock::now() + header_timeout);
            conn.fill_until(at).await
        };
        match read {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut && !conn.buf.is_empty() => {
                return Err(Rejection {
                    status: 408,
                    reason: "request head not received within header_timeout",
                })
            }
            Err(_) => return Ok(None),
        }
    }
}

/// Takes the buffered bytes through the head's stages: parse, check, route, encode.
/// `Ok(None)` when more bytes are needed. The head for the server ends up in
/// `scratch.head`, the hash key (when the upstream hashes) in `scratch.key`.
fn parse_head(
    ctx: &Context,
    buf: &[u8],
    client: &Client,
    scratch: &mut Scratch,
) -> Result<Option<Staged>, Rejection> {
    if buf.is_empty() {
        return Ok(None);
    }
    let max = ctx.generation().shared.config.max_header_bytes;
    let mut headers = parse::header_slots();
    let Some(raw) = parse::parse(buf, &mut headers)? else {
        return if buf.len() >= max {
            Err(too_large())
        } else {
            Ok(None)
        };
    };
    head_stages(ctx, &raw, client, scratch).map(Some)
}

/// Waits until `until` for the first bytes of a request on a connection with nothing
/// buffered. Meanwhile the connection's buffers are back in the worker's stash: an idle
/// connection holds none. Ends early, as `Ok(0)`, when the worker drains.
async fn wait_for_request<S: Stream>(
    ctx: &Context,
    conn: &mut Conn<S>,
    scratch: &mut Scratch,
    until: Instant,
) -> io::Result<usize> {
    loop {
        if ctx.draining() {
            return Ok(0);
        }
        ctx.stash.give(Buffers {
            read: std::mem::take(&mut conn.buf),
            scratch: std::mem::take(scratch),
        });
        let drained = ctx.drain_signal();
        tokio::select! {
            ready = tokio::time::timeout_at(until, conn.readable()) => {
                ready.map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
            }
            _ = drained => return Ok(0),
        }
        let buffers = ctx.stash.take();
        (conn.buf, *scratch) = (buffers.read, buffers.scratch);
        match conn.try_fill().await {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            read => return read,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The connection's deadlines, on tokio's paused clock: each test waits out minutes of
    //! timeouts in no time, and checks the deadline: to the millisecond while a head is
    //! read, within the worker's idle tick while the connection waits for bytes.

    use super::*;
    use crate::clock;
    use crate::io::stream::loopback_pair;
    use crate::state::generation::Shared;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A worker context for `top` (timeouts) with one route for host `routed`, whose
    /// upstream is never reached by these tests.
    fn context(top: &str) -> Context {
        let text = format!(
            "{top}\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nhost = \"routed\"\nupstream = \"app\"\n[upstream.app]\nservers = [\"127.0.0.1:9\"]\n"
        );
        let config = sluice_config::parse("t.toml", &text).unwrap();
        Context::new(Arc::new(Shared::new(config, None)), 1)
    }

    /// The session, with its worker's idle sweep beside it (the worker runs the sweep
    /// as a task of its own).
    async fn serve(ctx: &Context, stream: TcpStream, who: &Client, stats: &ListenerStats) {
        tokio::select! {
            () = super::serve((ctx, who, stats), stream, Some(clock::now())) => {}
            () = ctx.idle.sweep() => unreachable!("the sweep runs for the worker's life"),
        }
    }

    /// Reads until the proxy closes; returns what it sent and when it closed.
    async fn until_closed(c: &mut TcpStream) -> (String, Instant) {
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got).await;
        (String::from_utf8_lossy(&got).into_owned(), clock::now())
    }

    /// Reads sluice's own reply for `status` (with `Connection: close` if `close`) whole.
    async fn read_reply<R: AsyncReadExt + Unpin>(c: &mut R, status: u16, close: bool) -> Instant {
        let mut expected = Vec::new();
        crate::http1::reply::error(&mut expected, status, close, None);
        let mut got = vec![0u8; expected.len()];
        c.read_exact(&mut got).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected)
        );
        clock::now()
    }

    fn accepted() -> Client {
        let peer = "127.0.0.1:40000".parse().unwrap();
        Client::new(peer, "127.0.0.1:0".parse().unwrap(), "http")
    }

    /// An idle connection's deadline: never before, at most a tick after.
    fn within_a_tick(took: Duration, expected: Duration) {
        let late = crate::idle_waits::TICK + Duration::from_millis(1);
        assert!(
            took >= expected && took < expected + late,
            "took {took:?}, expected {expected:?}"
        );
    }

    fn within_a_millisecond(took: Duration, expected: Duration) {
        assert!(
            took >= expected && took < expected + Duration::from_millis(1),
            "took {took:?}, expected {expected:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_closes_at_header_timeout_without_a_word() {
        let ctx = context("header_timeout = \"7s\"");
        let (listener, who) = (ListenerStats::default(), accepted());
        let (mut client, server) = loopback_pair().await;
        let started = clock::now();
        let ((), (said, closed)) = tokio::join!(
            serve(&ctx, server, &who, &listener),
            until_closed(&mut client)
        );
        assert_eq!(said, "");
        within_a_tick(closed - started, Duration::from_secs(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickled_first_head_gets_408_at_header_timeout_from_the_accept() {
        let ctx = context("header_timeout = \"5s\"");
        let (listener, who) = (ListenerStats::default(), accepted());
        let (mut client, server) = loopback_pair().await;
        let started = clock::now();
        let (mut reader, mut writer) = client.split();
        let trickle = async {
            writer.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
            for i in 0..20 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let line = format!("X-Slow-{i}: 1\r\n");
                if writer.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        };
        let answered = read_reply(&mut reader, 408, true);
        let ((), (), at) = tokio::join!(serve(&ctx, server, &who, &listener), trickle, answered);
        within_a_millisecond(at - started, Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_keep_alive_connection_closes_at_keepalive_timeout() {
        let ctx = context("header_timeout = \"5s\"\nkeepalive_timeout = \"45s\"");
        let (listener, who) = (ListenerStats::default(), accepted());
        let (mut client, server) = loopback_pair().await;
        let exchange = async {
            // Unrouted: a 404 that keeps the connection.
            client
                .write_all(b"GET / HTTP/1.1\r\nHost: elsewhere\r\n\r\n")
                .await
                .unwrap();
            let answered = read_reply(&mut client, 404, false).await;
            let (_, closed) = until_closed(&mut client).await;
            closed - answered
        };
        let ((), idle) = tokio::join!(serve(&ctx, server, &who, &listener), exchange);
        within_a_tick(idle, Duration::from_secs(45));
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_head_gets_header_timeout_from_its_first_byte() {
        let ctx = context("header_timeout = \"5s\"\nkeepalive_timeout = \"45s\"");
        let (listener, who) = (ListenerStats::default(), accepted());
        let (mut client, server) = loopback_pair().await;
        let exchange = async {
            client
                .write_all(b"GET / HTTP/1.1\r\nHost: elsewhere\r\n\r\n")
                .await
                .unwrap();
            read_reply(&mut client, 404, false).await;
            // Idle for 30 s (within keepalive_timeout), then half a head.
            tokio::time::sleep(Duration::from_secs(30)).await;
            let first_byte = clock::now();
            client.write_all(b"GET / HTT").await.unwrap();
            read_reply(&mut client, 408, true).await - first_byte
        };
        let ((), took) = tokio::join!(serve(&ctx, server, &who, &listener), exchange);
        within_a_millisecond(took, Duration::from_secs(5));
    }
}
