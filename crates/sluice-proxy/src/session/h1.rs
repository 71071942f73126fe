//! One HTTP/1 client connection: request heads read one after another (keep-alive and
//! pipelining), each taken through the stages and served by `request::serve`, until one
//! ends the connection. The connection's deadlines live here: `header_timeout` for a
//! head (from the accept for the first), `keepalive_timeout` between requests, with no
//! buffer held while idle.

use super::refusals::{host_and_path, refused};
use super::request::{self, captured, logged, response_edits, Prepared};
use super::stages::{head_stages, too_large, Staged, Target};
use super::Counted;
use crate::client::Client;
use crate::context::Context;
use crate::downstream::buffers::{Buffers, Scratch};
use crate::downstream::h1::Http1;
use crate::downstream::Downstream;
use crate::failure::Failure;
use crate::http1::encode::Edits;
use crate::http1::request::{self as parse, Rejection};
use crate::io::{Conn, Stream};
use crate::metrics::ListenerStats;
use bytes::Buf;
use std::io;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// Serves `stream` until the client closes, an error ends it, or the worker drains.
pub async fn serve<S: Stream>(ctx: &Context, stream: S, client: &Client, stats: &ListenerStats) {
    let _open = Counted::open(stats);
    let mut conn = Conn::idle(stream);
    exchange(ctx, &mut conn, (client, stats)).await;
    if S::CLOSE_NOTIFY {
        // TLS says goodbye (close_notify) so that the client knows the response was
        // whole; a client that does not take it in a moment is not waited for.
        let bye = tokio::io::AsyncWriteExt::shutdown(&mut conn.stream);
        let _ = tokio::time::timeout(CLOSE_NOTIFY_WAIT, bye).await;
    }
}

/// The longest a closing TLS connection waits to send its close_notify.
const CLOSE_NOTIFY_WAIT: Duration = Duration::from_secs(1);

/// Requests one after another on `conn`, until one ends the connection.
async fn exchange<S: Stream>(
    ctx: &Context,
    conn: &mut Conn<S>,
    (client, stats): (&Client, &ListenerStats),
) {
    let mut scratch = Scratch::default();
    let mut first = Some(crate::clock::now());
    loop {
        let staged = match read_head(ctx, conn, client, &mut scratch, first.take()).await {
            Ok(Some(staged)) if client.crowded => staged.crowded(),
            Ok(Some(staged)) => staged,
            Ok(None) => return,
            Err(rejection) => {
                let refusal = reject(ctx, conn, &mut scratch, (client, stats), rejection);
                return Box::pin(refusal).await;
            }
        };
        // The request's machinery in a box of its own, made when a head is in: the
        // connection's future then holds only the wait for the next head while idle
        // (992 bytes, not 4.4 KiB). The box costs about 600 instructions per request
        // (callgrind: allocation, and the future's 3.4 KiB moved into it), the same CPU
        // time in bench/compare.sh (bench/runs/2026-11-27-compare-5).
        let request = one_request(ctx, conn, &mut scratch, (client, stats), staged);
        let keep_alive = Box::pin(request).await;
        if !keep_alive || ctx.draining() {
            return;
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
        staged.request.http10,
        timeout,
        edits,
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
    let mut down = http1(conn, &mut scratch.out, false, timeout, None);
    if down.send_error(rejection.status, true).await {
        down.conclude(true, false).await;
    }
    refused(ctx, (client, stats), Failure::from(rejection), started);
}

fn http1<'a, S>(
    conn: &'a mut Conn<S>,
    out: &'a mut Vec<u8>,
    http10: bool,
    timeout: Duration,
    edits: Option<Edits<'a>>,
) -> Downstream<'a, S> {
    Downstream::Http1(Http1 {
        conn,
        out,
        http10,
        timeout,
        edits,
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
    accepted: Option<Instant>,
) -> Result<Option<Staged>, Rejection> {
    let (header_timeout, keepalive_timeout) = {
        let config = &ctx.generation().shared.config;
        (config.header_timeout, config.keepalive_timeout)
    };
    let mut deadline = match accepted {
        Some(at) => Some(at + header_timeout),
        None => (!conn.buf.is_empty()).then(|| crate::clock::now() + header_timeout),
    };
    loop {
        if let Some(parsed) = parse_head(ctx, &conn.buf, client, scratch)? {
            return Ok(Some(parsed));
        }
        let read = if conn.buf.is_empty() {
            let idle_until = crate::clock::now() + keepalive_timeout;
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
    //! timeouts in no time, and checks the deadline to the millisecond.

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
        within_a_millisecond(closed - started, Duration::from_secs(7));
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
        within_a_millisecond(idle, Duration::from_secs(45));
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
