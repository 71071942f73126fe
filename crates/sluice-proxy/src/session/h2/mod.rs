//! One HTTP/2 client connection (the `h2` crate). Each stream's fields are taken as the
//! HTTP/1.1 head they stand for (`head`) through the same stages as an HTTP/1 request
//! (check, route, encode; forward, answer or 404; count, log, record), with an HTTP/2
//! client seam (`downstream::h2`): one pipeline, one set of rules for both protocols,
//! so checks, routing, header edits and hash keys are identical.
//!
//! A connection's streams run concurrently inside the connection's task. At most
//! `max_concurrent_streams` are handled at once: while that many are in flight the
//! connection is driven without accepting more, so a client that opens and resets
//! streams in a loop (rapid reset) fills the h2 crate's queue of reset streams instead
//! of sluice's servers, and is sent GOAWAY (ENHANCE_YOUR_CALM) when it overflows.
//! Header blocks larger than `max_header_bytes` (a CONTINUATION flood, an HPACK bomb)
//! end the connection the same way.

mod head;
mod reuse;
mod wakes;

use super::refusals::{host_and_path, refused};
use super::request::{self, captured, compressing, logged, response_edits, Prepared};
use super::stages::{head_stages, Staged, Target};
use super::Counted;
use crate::client::Client;
use crate::context::Context;
use crate::downstream::buffers::{Buffers, Scratch};
use crate::downstream::h2::Http2;
use crate::downstream::Downstream;
use crate::failure::{Body, Failure, Kind};
use crate::http1::request::Rejection;
use crate::metrics::ListenerStats;
use bytes::{Bytes, BytesMut};
use futures_util::future::FutureExt;
use futures_util::stream::{FuturesUnordered, StreamExt};
use h2::server::SendResponse;
use h2::RecvStream;
use reuse::{Reused, Slot};
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{self, ready, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::coop::unconstrained;
use tokio::time::{Instant, Sleep};
use wakes::{Wakes, CONN, STREAMS};

/// Serves an HTTP/2 connection until the client ends it, it idles `keepalive_timeout`
/// without a stream, or the worker drains (GOAWAY, then the streams in flight finish).
///
/// A function returning an async block, its handshake boxed and made before it: an
/// `async fn` (or a block given the stream) would keep the stream for the connection's
/// life after the handshake moved it into h2's connection (1,216 bytes over TLS,
/// rustls's connection inline).
///
/// The handshake (the client's preface read, sluice's SETTINGS sent) has until
/// `header_timeout` after `accepted`, the connection's accept: the time spent before
/// it (telling h2c from HTTP/1 by its first bytes) is not given again (issue 47).
#[allow(clippy::manual_async_fn)]
pub fn serve<'a, S: AsyncRead + AsyncWrite + Unpin + 'a>(
    ctx: &'a Context,
    stream: S,
    client: &'a Client,
    stats: &'a ListenerStats,
    accepted: Instant,
) -> impl Future<Output = ()> + 'a {
    let config = ctx.generation().shared.config.clone();
    let handshake = builder(&config).handshake(stream);
    let deadline = accepted + config.header_timeout;
    let handshake = Box::pin(tokio::time::timeout_at(deadline, handshake));
    async move {
        let _open = Counted::open(stats);
        let Ok(Ok(conn)) = handshake.await else {
            return;
        };
        let from = From { ctx, client, stats };
        run(conn, &from, &config).await;
    }
}

/// How long a connection without streams keeps the box of its last stream for the next
/// one (see `reuse`): longer than the gap between a page's requests, far shorter than
/// `keepalive_timeout`, for which an idle client would otherwise hold it.
const SPARE_KEPT: Duration = Duration::from_secs(1);

/// A pass over the connection's task runs rounds (streams, then the connection, then
/// the timers) until nothing is woken; after this many it lets the worker's other
/// tasks run (a stream held back by tokio's cooperative budget wakes itself at once).
const ROUNDS_PER_PASS: usize = 32;

/// Accepts and serves the connection's streams until it ends (see [`serve`]). The
/// connection and its streams are polled by hand rather than by `select!`, each with
/// its own waker (see [`wakes`]).
///
/// A function returning an async block: an `async fn` would keep the connection (2,496
/// bytes over TLS) twice, as given and moved into its body.
#[allow(clippy::manual_async_fn)]
fn run<'a, S: AsyncRead + AsyncWrite + Unpin + 'a>(
    mut conn: h2::server::Connection<S, Bytes>,
    from: &'a From<'a>,
    config: &'a sluice_config::Config,
) -> impl Future<Output = ()> + 'a {
    async move {
        let ctx = from.ctx;
        let at_once = config.http2.max_concurrent_streams as usize;
        let mut streams = FuturesUnordered::new();
        // The box of the last stream that finished, for the next one (see `reuse`).
        let mut spare = None;
        // Whether what the connection holds for its streams (the spare box, h2's tables
        // and buffers) was given back since its last stream (at first not: what its
        // handshake used is given back too).
        let mut settled = false;
        // Made once: a timer or a waiter made on every turn cost about 2,000 instructions
        // per request (callgrind). The timer is moved on only when it fires before the
        // connection has idled long enough (see `idled`), not as each stream finishes.
        let idle = tokio::time::sleep(config.keepalive_timeout);
        let (keepalive, mut idle_since, mut idle_armed) =
            (config.keepalive_timeout, crate::clock::now(), false);
        let drained = ctx.drain_signal();
        tokio::pin!(idle, drained);
        // Polled once, so the drain wakes this task; after that `ctx.draining()` says it
        // (the flag is set before the waiters are woken).
        let mut drain_armed = false;
        let mut draining = from.client.crowded;
        if draining {
            conn.graceful_shutdown();
        }
        let wakes = Wakes::new();
        poll_fn(|cx| {
            wakes.enter(cx.waker());
            for _ in 0..ROUNDS_PER_PASS {
                if wakes.take(STREAMS) && finish_streams(&mut streams, &mut spare, &wakes) {
                    idle_since = crate::clock::now();
                }
                if wakes.take(CONN) {
                    // Draining, streams are still taken: the client sent them before
                    // it read the GOAWAY, whose last stream id (after its PING) counts
                    // them as processed, so no client retries them elsewhere. A crowded
                    // client's are not.
                    let room = streams.len() < at_once && !from.client.crowded;
                    match drive(&mut conn, &wakes, room, from.client.peer) {
                        Poll::Ready(Some((request, respond))) => {
                            let stream = || one_stream(from, request, respond);
                            streams.push(Reused::new(spare.take(), stream));
                            settled = false;
                            // The new stream is to be polled; the connection may hold more.
                            wakes.raise(CONN | STREAMS);
                        }
                        Poll::Ready(None) => return Poll::Ready(()),
                        Poll::Pending => {}
                    }
                }
                if !drain_armed {
                    drain_armed = true;
                    let _ = drained.as_mut().poll(cx);
                }
                let mut over = ctx.draining();
                if streams.is_empty() && !over {
                    // The spare box is freed once the connection has idled `SPARE_KEPT`:
                    // an idle connection does not hold a stream's 4.4 KiB for its whole
                    // keep-alive, and streams that follow each other keep reusing it.
                    let freed_at = idle_since + SPARE_KEPT.min(keepalive);
                    if !settled && idled(idle.as_mut(), freed_at, &mut idle_armed, cx) {
                        spare = None;
                        // And the room its streams left in h2's tables (about 3.5 KiB)
                        // and its read and write buffers (24 KiB), kept while it is busy.
                        conn.release_idle_memory();
                        settled = true;
                    }
                    over = settled
                        && idled(idle.as_mut(), idle_since + keepalive, &mut idle_armed, cx);
                }
                if over && !draining {
                    conn.graceful_shutdown();
                    draining = true;
                    wakes.raise(CONN);
                }
                if wakes.leave() {
                    return Poll::Pending;
                }
            }
            wakes.pause(cx.waker());
            Poll::Pending
        })
        .await;
        // The connection is over: dropping it ends the streams still waiting on it, which
        // then finish at once.
        drop(conn);
        while streams.next().await.is_some() {}
    }
}

/// Whether a connection without streams has been idle until `until`. The timer fires
/// at the deadline it was given last; when that was too early (streams came and went
/// since), it is moved to `until`. Resetting it as every stream finished re-registered
/// it each time (about 450 instructions a request, callgrind). A deadline later than
/// `until` (the keep-alive's, when the spare box's comes first) is moved earlier.
///
/// Once polled (`armed`), the timer wakes this task when it fires, so until then it is
/// only asked whether it has. It is polled outside tokio's cooperative budget: a poll
/// the budget refuses makes no timer and registers no waker, and an armed timer that
/// was never registered would leave an idle connection open for good.
fn idled(
    mut idle: Pin<&mut Sleep>,
    until: Instant,
    armed: &mut bool,
    cx: &mut task::Context<'_>,
) -> bool {
    let mut poll = |idle: Pin<&mut Sleep>| unconstrained(idle).poll_unpin(cx).is_ready();
    if idle.deadline() > until {
        // A deadline earlier than the one set (the spare box's, after the keep-alive's).
        idle.as_mut().reset(until);
        *armed = false;
    }
    if *armed && !idle.is_elapsed() {
        return false;
    }
    *armed = true;
    if !poll(idle.as_mut()) {
        return false;
    }
    if crate::clock::now() >= until {
        return true;
    }
    idle.as_mut().reset(until);
    poll(idle)
}

/// Polls the connection with its own waker: it accepts a stream when there is `room`
/// for one, and otherwise only reads and writes frames. `Ready(None)`: it is over.
fn drive<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut h2::server::Connection<S, Bytes>,
    wakes: &Wakes,
    room: bool,
    peer: SocketAddr,
) -> Poll<Option<(http::Request<RecvStream>, SendResponse<Bytes>)>> {
    let mut cx = task::Context::from_waker(&wakes.conn);
    let next = if room {
        ready!(conn.poll_accept(&mut cx))
    } else {
        ready!(conn.poll_closed(&mut cx)).err().map(Err)
    };
    Poll::Ready(match next {
        Some(Ok(accepted)) => Some(accepted),
        Some(Err(e)) => {
            tracing::debug!(client = %peer, cause = %e, "HTTP/2 connection ended");
            None
        }
        None => None,
    })
}

/// Polls the streams that were woken, with their own waker, keeping the box of one that
/// finished in `spare`; true when the last one finished (the connection is idle).
fn finish_streams<F: Future<Output = ()>>(
    streams: &mut FuturesUnordered<Reused<F>>,
    spare: &mut Option<Slot<F>>,
    wakes: &Wakes,
) -> bool {
    let mut cx = task::Context::from_waker(&wakes.streams);
    let mut finished = false;
    while let Poll::Ready(Some(slot)) = streams.poll_next_unpin(&mut cx) {
        *spare = Some(slot);
        finished = true;
    }
    if finished {
        // Room for another stream, if the connection waits for it.
        wakes.raise(CONN);
    }
    finished && streams.is_empty()
}

/// The connection's settings: its limits, and header blocks no larger than the head
/// limit of HTTP/1.
fn builder(config: &sluice_config::Config) -> h2::server::Builder {
    let limits = &config.http2;
    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(limits.max_concurrent_streams)
        .max_header_list_size(config.max_header_bytes as u32)
        .initial_window_size(limits.window)
        .initial_connection_window_size(limits.window.saturating_mul(4))
        .max_send_buffer_size(limits.window as usize);
    builder
}

/// What every stream of a connection shares: the worker, the client connection and its
/// listener's counters. (A client over `max_conns_per_client` has every stream answered
/// 429, and is sent GOAWAY at once.)
struct From<'a> {
    ctx: &'a Context,
    client: &'a Client,
    stats: &'a ListenerStats,
}

/// One stream: its head through the shared stages, then the shared dispatch.
async fn one_stream(
    from: &From<'_>,
    request: http::Request<RecvStream>,
    respond: SendResponse<Bytes>,
) {
    let ctx = from.ctx;
    let (parts, recv) = request.into_parts();
    // The worker's spare buffers, as an HTTP/1 connection takes them: a stream does not
    // allocate its own. The read buffer holds the text of the stream's head, when the
    // access log or an error message wants it.
    let Buffers {
        read: mut text,
        mut scratch,
    } = ctx.stash.take();
    text.clear();
    serve_stream(from, (parts, recv), respond, (&mut text, &mut scratch)).await;
    ctx.stash.give(Buffers {
        read: text,
        scratch,
    });
}

/// One stream, with its buffers (the text of its head, when wanted, and the scratch
/// space).
async fn serve_stream(
    from: &From<'_>,
    (parts, mut recv): (http::request::Parts, RecvStream),
    mut respond: SendResponse<Bytes>,
    (text, scratch): (&mut BytesMut, &mut Scratch),
) {
    let (ctx, client) = (from.ctx, (from.client, from.stats));
    let started = || (crate::clock::now(), std::time::SystemTime::now());
    let body = !recv.is_end_stream();
    let timeout = ctx.generation().shared.config.client_idle_timeout;
    if let Some(why) = head::malformed(&parts) {
        // A malformed request is a stream error (RFC 9113 8.1.1): reset, not answered.
        respond.send_reset(h2::Reason::PROTOCOL_ERROR);
        let failure = Failure::downstream(Kind::Malformed, 400, why, Body::Partial);
        return refused(ctx, client, failure, started());
    }
    let staged = match stages(from, &parts, body, (text, scratch)) {
        Ok(staged) if from.client.crowded => staged.crowded(),
        Ok(staged) => staged,
        Err(rejection) => {
            let started = started();
            let mut down: Downstream<'_, TcpStream> = Downstream::Http2(Http2 {
                respond: &mut respond,
                recv: &mut recv,
                out: &mut scratch.out,
                pending: None,
                is_head: parts.method == http::Method::HEAD,
                timeout,
                edits: None,
                compress: None,
            });
            down.send_error(rejection.status, false).await;
            return refused(ctx, client, Failure::from(rejection), started);
        }
    };
    let log = logged(&staged.generation, text, &mut scratch.log);
    // The log names the protocol the client spoke, not the head it stands for.
    if let Some(((end, _), _)) = log {
        if scratch.log[..end].ends_with("HTTP/1.1") {
            scratch.log.replace_range(end - 8..end, "HTTP/2.0");
        }
    }
    let unrouted = matches!(staged.target, Target::Unrouted).then(|| host_and_path(text));
    // The route's response edits borrow the generation while `staged` moves on.
    let generation = staged.generation.clone();
    let edits = response_edits(&generation, &staged.target, &scratch.response_edits);
    let mut down: Downstream<'_, TcpStream> = Downstream::Http2(Http2 {
        respond: &mut respond,
        recv: &mut recv,
        out: &mut scratch.out,
        pending: None,
        is_head: staged.request.is_head,
        timeout,
        edits,
        compress: compressing(&generation, &staged),
    });
    let prepared = Prepared {
        head: &scratch.head,
        key: &scratch.key,
        unrouted,
        logged: captured(log, &scratch.log),
    };
    request::serve(ctx, client, &mut down, staged, prepared).await;
}

/// The stream's head through the shared stages, as the HTTP/1.1 head it stands for;
/// its text goes to `text` when the access log or a "no route" error will read it.
fn stages(
    from: &From<'_>,
    parts: &http::request::Parts,
    body: bool,
    (text, scratch): (&mut BytesMut, &mut Scratch),
) -> Result<Staged, Rejection> {
    let mut joined = Vec::new();
    head::join_cookies(parts, &mut joined);
    let needed = head::slots_needed(parts);
    let mut on_stack = [httparse::EMPTY_HEADER; head::ON_STACK];
    let mut on_heap;
    let slots = if needed <= head::ON_STACK {
        &mut on_stack[..]
    } else {
        on_heap = vec![httparse::EMPTY_HEADER; needed];
        &mut on_heap[..]
    };
    let raw = head::stand_in(parts, body, &joined, slots)?;
    let staged = head_stages(from.ctx, &raw, from.client, scratch)?;
    if matches!(staged.target, Target::Unrouted) || staged.generation.shared.access_log.is_some() {
        head::write(&raw, text);
    }
    Ok(staged)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Spends this task's cooperative budget, as a busy pass over a connection does.
    fn spend_budget(cx: &mut task::Context<'_>) {
        for _ in 0..1_000 {
            let mut spend = std::pin::pin!(tokio::task::consume_budget());
            if spend.as_mut().poll(cx).is_pending() {
                return;
            }
        }
        panic!("the budget never ran out");
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_timer_first_polled_with_no_budget_left_still_fires() {
        let idle = tokio::time::sleep(Duration::from_secs(1));
        tokio::pin!(idle);
        let until = Instant::now() + Duration::from_secs(1);
        let mut armed = false;
        let first = poll_fn(|cx| {
            spend_budget(cx);
            Poll::Ready(idled(idle.as_mut(), until, &mut armed, cx))
        })
        .await;
        assert!(!first && armed);
        tokio::time::advance(Duration::from_millis(1_100)).await;
        let later = poll_fn(|cx| Poll::Ready(idled(idle.as_mut(), until, &mut armed, cx))).await;
        assert!(later, "the timer was never made, so it never fired");
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_timer_set_for_later_fires_at_an_earlier_deadline() {
        // Made for the keep-alive (60 s), asked about the spare box's second.
        let idle = tokio::time::sleep(Duration::from_secs(60));
        tokio::pin!(idle);
        let mut armed = false;
        let soon = Instant::now() + SPARE_KEPT;
        let later = soon + Duration::from_secs(59);
        let first = poll_fn(|cx| Poll::Ready(idled(idle.as_mut(), soon, &mut armed, cx))).await;
        assert!(!first);
        tokio::time::advance(SPARE_KEPT + Duration::from_millis(10)).await;
        let fired = poll_fn(|cx| Poll::Ready(idled(idle.as_mut(), soon, &mut armed, cx))).await;
        assert!(fired, "fired at the earlier deadline");
        // Then the keep-alive's deadline again: not yet.
        let kept = poll_fn(|cx| Poll::Ready(idled(idle.as_mut(), later, &mut armed, cx))).await;
        assert!(!kept);
    }
}
