//! One HTTP/2 client connection (the `h2` crate). Each stream is written out as the
//! HTTP/1.1 head it stands for and taken through the same stages as an HTTP/1 request
//! (parse, check, route, encode; forward, answer or 404; count, log, record), with an
//! HTTP/2 client seam (`downstream::h2`): one pipeline, one set of rules for both
//! protocols. Writing the head costs a copy and a parse per stream; it buys identical
//! checks, routing, header edits and hash keys.
//!
//! A connection's streams run concurrently inside the connection's task. At most
//! `max_concurrent_streams` are handled at once: while that many are in flight the
//! connection is driven without accepting more, so a client that opens and resets
//! streams in a loop (rapid reset) fills the h2 crate's queue of reset streams instead
//! of sluice's servers, and is sent GOAWAY (ENHANCE_YOUR_CALM) when it overflows.
//! Header blocks larger than `max_header_bytes` (a CONTINUATION flood, an HPACK bomb)
//! end the connection the same way.

mod wakes;

use super::{dispatch, finish, logged, parse_head, response_edits, Counted, Target, Via};
use crate::context::Context;
use crate::downstream::buffers::{Buffers, Scratch};
use crate::downstream::h2::Http2;
use crate::downstream::Downstream;
use crate::failure::{Body, Failure};
use crate::http1::encode::Origin;
use crate::http1::request::Rejection;
use crate::metrics::ListenerStats;
use crate::record::Outcome;
use bytes::{Bytes, BytesMut};
use futures_util::stream::{FuturesUnordered, StreamExt};
use h2::server::SendResponse;
use h2::RecvStream;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::task::{self, ready, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use wakes::{Wakes, CONN, STREAMS};

/// Serves an HTTP/2 connection until the client ends it, it idles `keepalive_timeout`
/// without a stream, or the worker drains (GOAWAY, then the streams in flight finish).
pub async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    ctx: &Context,
    stream: S,
    peer: SocketAddr,
    listener: &ListenerStats,
    via: Via,
) {
    let _open = Counted::open(listener);
    let config = ctx.gen().shared.config.clone();
    let handshake = builder(&config).handshake(stream);
    let Ok(Ok(conn)) = tokio::time::timeout(config.header_timeout, handshake).await else {
        return;
    };
    let client_ip = peer.ip().to_string();
    let origin = Origin {
        client_ip: &client_ip,
        proto: via.proto,
        listener: via.listener,
        trusted: via.trusted,
    };
    let from = From {
        ctx,
        peer,
        listener,
        origin: &origin,
        crowded: via.crowded,
    };
    run(conn, &from, &config).await;
}

/// A pass over the connection's task runs rounds (streams, then the connection, then
/// the timers) until nothing is woken; after this many it lets the worker's other
/// tasks run (a stream held back by tokio's cooperative budget wakes itself at once).
const ROUNDS_PER_PASS: usize = 32;

/// Accepts and serves the connection's streams until it ends (see [`serve`]). The
/// connection and its streams are polled by hand rather than by `select!`, each with
/// its own waker (see [`wakes`]).
async fn run<S: AsyncRead + AsyncWrite + Unpin>(
    mut conn: h2::server::Connection<S, Bytes>,
    from: &From<'_>,
    config: &sluice_config::Config,
) {
    let ctx = from.ctx;
    let at_once = config.http2.max_concurrent_streams as usize;
    let mut streams = FuturesUnordered::new();
    // Made once and reset: a timer or a waiter made on every turn cost about 2,000
    // instructions per request (callgrind).
    let idle = tokio::time::sleep(config.keepalive_timeout);
    let drained = ctx.drain_signal();
    tokio::pin!(idle, drained);
    let mut draining = from.crowded;
    if draining {
        conn.graceful_shutdown();
    }
    let wakes = Wakes::new();
    poll_fn(|cx| {
        wakes.enter(cx.waker());
        for _ in 0..ROUNDS_PER_PASS {
            if wakes.take(STREAMS) && finish_streams(&mut streams, &wakes) {
                idle.as_mut()
                    .reset(crate::clock::now() + config.keepalive_timeout);
            }
            if wakes.take(CONN) {
                let room = streams.len() < at_once && !draining;
                match drive(&mut conn, &wakes, room, from.peer) {
                    Poll::Ready(Some((request, respond))) => {
                        streams.push(Box::pin(one_stream(from, request, respond)));
                        // The new stream is to be polled; the connection may hold more.
                        wakes.raise(CONN | STREAMS);
                    }
                    Poll::Ready(None) => return Poll::Ready(()),
                    Poll::Pending => {}
                }
            }
            let over = ctx.draining()
                || drained.as_mut().poll(cx).is_ready()
                || (streams.is_empty() && idle.as_mut().poll(cx).is_ready());
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

/// Polls the streams that were woken, with their own waker; true when the last one
/// finished (the connection is idle).
fn finish_streams<F: Future<Output = ()>>(
    streams: &mut FuturesUnordered<F>,
    wakes: &Wakes,
) -> bool {
    let mut cx = task::Context::from_waker(&wakes.streams);
    let mut finished = false;
    while let Poll::Ready(Some(())) = streams.poll_next_unpin(&mut cx) {
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

/// What every stream of a connection shares: the worker and where the client is.
struct From<'a> {
    ctx: &'a Context,
    peer: SocketAddr,
    listener: &'a ListenerStats,
    origin: &'a Origin<'a>,
    /// Over `max_conns_per_client`: every stream is answered 429, and GOAWAY is sent at
    /// once.
    crowded: bool,
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
    // allocate its own. The read buffer holds the head written for the stream.
    let Buffers {
        read: mut head,
        mut scratch,
    } = ctx.stash.take();
    head.clear();
    serve_stream(from, (parts, recv), respond, (&mut head, &mut scratch)).await;
    ctx.stash.give(Buffers {
        read: head,
        scratch,
    });
}

/// One stream, with its buffers (the head written for it, and the scratch space).
async fn serve_stream(
    from: &From<'_>,
    (parts, mut recv): (http::request::Parts, RecvStream),
    mut respond: SendResponse<Bytes>,
    (head, scratch): (&mut BytesMut, &mut Scratch),
) {
    let (ctx, peer, listener, origin) = (from.ctx, from.peer, from.listener, from.origin);
    let parsed = h1_head(&parts, !recv.is_end_stream(), head)
        .and_then(|()| parse_head(ctx, head, origin, scratch));
    let gen = ctx.gen();
    let timeout = gen.shared.config.client_idle_timeout;
    let (req, target, gen) = match parsed {
        Ok(Some((req, _, gen))) if from.crowded => (req, super::crowded(), gen),
        Ok(Some(parsed)) => parsed,
        Ok(None) | Err(_) => {
            let rejection = parsed.err().unwrap_or(Rejection {
                status: 400,
                reason: "HTTP/2 request head could not be read",
            });
            let mut down: Downstream<'_, TcpStream> = Downstream::Http2(Http2 {
                respond: &mut respond,
                recv: &mut recv,
                out: &mut scratch.out,
                pending: None,
                is_head: parts.method == http::Method::HEAD,
                timeout,
                edits: None,
            });
            down.send_error(rejection.status, false).await;
            let failure = Failure::downstream(rejection.status, rejection.reason, Body::Partial);
            let mut outcome = Outcome::unrouted(rejection.status, failure);
            outcome.client = Some(peer);
            return finish(ctx, &gen, listener, &outcome, None, "");
        }
    };
    let logged = logged(&gen, head, &mut scratch.log);
    // The log names the protocol the client spoke, not the head it was written as.
    if let Some(((end, _), _)) = logged {
        if scratch.log[..end].ends_with("HTTP/1.1") {
            scratch.log.replace_range(end - 8..end, "HTTP/2.0");
        }
    }
    let unrouted = matches!(target, Target::Unrouted).then(|| super::host_and_path(head));
    let edits = response_edits(&gen, &target, &scratch.response_edits);
    let mut down: Downstream<'_, TcpStream> = Downstream::Http2(Http2 {
        respond: &mut respond,
        recv: &mut recv,
        out: &mut scratch.out,
        pending: None,
        is_head: req.is_head,
        timeout,
        edits,
    });
    let prepared = (&scratch.head[..], &scratch.key[..]);
    let mut outcome = dispatch(ctx, &gen, &mut down, &req, target, prepared, unrouted).await;
    outcome.client = Some(peer);
    finish(ctx, &gen, listener, &outcome, logged, &scratch.log);
}

/// The HTTP/1.1 head an HTTP/2 request stands for: the request line from `:method` and
/// `:path`, `Host` from `:authority`, the fields (cookies joined into one line, as
/// RFC 9113 8.2.3 asks), and chunked framing for a body of unknown length.
fn h1_head(parts: &http::request::Parts, body: bool, out: &mut BytesMut) -> Result<(), Rejection> {
    if parts.method == http::Method::CONNECT {
        return Err(Rejection {
            status: 501,
            reason: "CONNECT over HTTP/2 is not supported",
        });
    }
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    out.extend_from_slice(parts.method.as_str().as_bytes());
    out.extend_from_slice(b" ");
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let authority = parts.uri.authority();
    if let Some(a) = authority {
        put(out, "host", a.as_str().as_bytes());
    }
    let mut cookies: Vec<&[u8]> = Vec::new();
    for (name, value) in &parts.headers {
        match name.as_str() {
            "host" if authority.is_some() => {}
            "cookie" => cookies.push(value.as_bytes()),
            n => put(out, n, value.as_bytes()),
        }
    }
    if !cookies.is_empty() {
        put(out, "cookie", &cookies.join(&b"; "[..]));
    }
    if body && !parts.headers.contains_key(http::header::CONTENT_LENGTH) {
        out.extend_from_slice(b"transfer-encoding: chunked\r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(())
}

fn put(out: &mut BytesMut, name: &str, value: &[u8]) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_of(request: http::Request<()>, body: bool) -> String {
        let (parts, ()) = request.into_parts();
        let mut out = BytesMut::new();
        h1_head(&parts, body, &mut out).unwrap();
        String::from_utf8(out.to_vec()).unwrap()
    }

    #[test]
    fn a_stream_becomes_the_http1_head_it_stands_for() {
        let request = http::Request::builder()
            .method("POST")
            .uri("https://shop.test:8443/cart?id=1")
            .header("cookie", "a=1")
            .header("x-one", "1")
            .header("cookie", "b=2")
            .body(())
            .unwrap();
        assert_eq!(
            head_of(request, true),
            "POST /cart?id=1 HTTP/1.1\r\nhost: shop.test:8443\r\nx-one: 1\r\ncookie: a=1; b=2\r\ntransfer-encoding: chunked\r\n\r\n"
        );
        let request = http::Request::builder()
            .uri("https://a.test/")
            .header("content-length", "0")
            .body(())
            .unwrap();
        assert_eq!(
            head_of(request, false),
            "GET / HTTP/1.1\r\nhost: a.test\r\ncontent-length: 0\r\n\r\n"
        );
    }

    #[test]
    fn connect_is_refused() {
        let (parts, ()) = http::Request::builder()
            .method("CONNECT")
            .uri("a.test:443")
            .body(())
            .unwrap()
            .into_parts();
        let e = h1_head(&parts, false, &mut BytesMut::new()).unwrap_err();
        assert_eq!(e.status, 501);
    }
}
