//! One client connection: read request heads one after another (keep-alive and
//! pipelining), route each, forward it, and decide whether the connection goes on.

use crate::buffers::{Buffers, Scratch};
use crate::conn::{write_all, Conn};
use crate::forward::forward;
use crate::head::Framing;
use crate::key::{self, View};
use crate::reply;
use crate::request::{self, Origin, Rejection, Request};
use crate::state::Generation;
use crate::worker::Worker;
use bytes::Buf;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Serves `stream` until the client closes, an error ends it, or the worker drains.
pub async fn serve(w: &Worker, stream: TcpStream, peer: SocketAddr) {
    let accepted = Instant::now();
    let _ = stream.set_nodelay(true);
    let client_ip = peer.ip().to_string();
    let origin = Origin {
        client_ip: &client_ip,
        proto: "http",
    };
    let mut client = Conn::idle(stream);
    let mut scratch = Scratch::default();
    let mut first = Some(accepted);
    loop {
        let waited = read_head(w, &mut client, &origin, &mut scratch, first.take()).await;
        let (req, route, gen) = match waited {
            Ok(Some(parsed)) => parsed,
            Ok(None) => return,
            Err(rejection) => {
                return Box::pin(reject(w, &mut client, peer, rejection, &mut scratch.out)).await
            }
        };
        client.buf.advance(req.head_len);
        // Boxed: the request's state machine (attempts, relays, a tunnel) is most of a
        // connection task's size, and an idle connection should not carry it.
        let keep_alive = match route {
            Some(route) => Box::pin(forward(w, &gen, &mut client, &req, route, &mut scratch)).await,
            None => Box::pin(not_found(w, &mut client, &req, &mut scratch.out)).await,
        };
        if !keep_alive || w.draining() {
            return;
        }
    }
}

/// What a complete request head gives: the request, its route, and the generation that
/// routed it (the request is served by that generation to the end).
type Head = (Request, Option<usize>, Rc<Generation>);

/// Reads until a whole request head is buffered. `Ok(None)`: the connection ended
/// quietly (closed by the client, silent or idle too long, or the worker is draining).
///
/// `accepted` is set for a connection's first request: its head must then be complete
/// within `header_timeout` of the accept, so a client that connects and sends nothing
/// is closed at that deadline. Before a later request the connection may idle for
/// `keepalive_timeout`, and its head has `header_timeout` from its first byte.
async fn read_head(
    w: &Worker,
    client: &mut Conn,
    origin: &Origin<'_>,
    scratch: &mut Scratch,
    accepted: Option<Instant>,
) -> Result<Option<Head>, Rejection> {
    let (header_timeout, keepalive_timeout) = {
        let config = &w.gen().shared.config;
        (config.header_timeout, config.keepalive_timeout)
    };
    let mut deadline = match accepted {
        Some(at) => Some(at + header_timeout),
        None => (!client.buf.is_empty()).then(|| Instant::now() + header_timeout),
    };
    loop {
        if let Some(parsed) = parse_head(w, client, origin, scratch)? {
            return Ok(Some(parsed));
        }
        let read = if client.buf.is_empty() {
            let idle_until = Instant::now() + keepalive_timeout;
            wait_for_request(w, client, scratch, deadline.unwrap_or(idle_until)).await
        } else {
            // The head has begun: one deadline for all of it, however slowly it trickles in.
            let at = *deadline.get_or_insert_with(|| Instant::now() + header_timeout);
            client.fill_until(at).await
        };
        match read {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut && !client.buf.is_empty() => {
                return Err(Rejection {
                    status: 408,
                    reason: "request head not received within header_timeout",
                })
            }
            Err(_) => return Ok(None),
        }
    }
}

/// Parses the buffered bytes as a request head: `Ok(None)` when more are needed.
fn parse_head(
    w: &Worker,
    client: &Conn,
    origin: &Origin<'_>,
    scratch: &mut Scratch,
) -> Result<Option<Head>, Rejection> {
    if client.buf.is_empty() {
        return Ok(None);
    }
    let gen = w.gen();
    let max = gen.shared.config.max_header_bytes;
    let allows = |route: &Option<usize>, protocol: &str| allows_upgrade(&gen, *route, protocol);
    let Scratch { head, key, .. } = scratch;
    match request::parse(
        &client.buf,
        origin,
        head,
        |view| route(&gen, view, key),
        allows,
    )? {
        Some((req, _)) if req.head_len > max => Err(too_large()),
        Some((req, route)) => Ok(Some((req, route, gen))),
        None if client.buf.len() >= max => Err(too_large()),
        None => Ok(None),
    }
}

/// The route for a request, and its hash key in `key` when its upstream hashes.
fn route(gen: &Generation, view: &View<'_>, key: &mut Vec<u8>) -> Option<usize> {
    let route = gen.router.find(view.host, view.target)?;
    key.clear();
    if let Some(template) =
        gen.shared.upstreams[gen.shared.config.routes[route].upstream].key_template()
    {
        key::evaluate(template, view, key);
    }
    Some(route)
}

/// True when the route lets a client switch to `protocol` (the first one it offers).
fn allows_upgrade(gen: &Generation, route: Option<usize>, protocol: &str) -> bool {
    let first = protocol.split(',').next().unwrap_or("");
    let first = first.trim_matches([' ', '\t']);
    let first = first.split('/').next().unwrap_or(first);
    route.is_some_and(|r| {
        gen.shared.config.routes[r]
            .upgrade
            .iter()
            .any(|p| p.eq_ignore_ascii_case(first))
    })
}

fn too_large() -> Rejection {
    Rejection {
        status: 431,
        reason: "request head larger than max_header_bytes",
    }
}

/// Waits until `until` for the first bytes of a request on a connection with nothing
/// buffered. Meanwhile the connection's buffers are back in the worker's stash: an idle
/// connection holds none. Ends early, as `Ok(0)`, when the worker drains.
async fn wait_for_request(
    w: &Worker,
    client: &mut Conn,
    scratch: &mut Scratch,
    until: Instant,
) -> io::Result<usize> {
    loop {
        if w.draining() {
            return Ok(0);
        }
        w.stash.give(Buffers {
            read: std::mem::take(&mut client.buf),
            scratch: std::mem::take(scratch),
        });
        let drained = w.drain_signal();
        tokio::select! {
            ready = tokio::time::timeout_at(until, client.stream.readable()) => {
                ready.map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
            }
            _ = drained => return Ok(0),
        }
        let buffers = w.stash.take();
        (client.buf, *scratch) = (buffers.read, buffers.scratch);
        match client.try_fill() {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            read => return read,
        }
    }
}

async fn reject(
    w: &Worker,
    client: &mut Conn,
    peer: SocketAddr,
    rejection: Rejection,
    out: &mut Vec<u8>,
) {
    tracing::info!(client = %peer, status = rejection.status, cause = rejection.reason, "bad request");
    out.clear();
    reply::error(out, rejection.status, true);
    if write_all(
        &mut client.stream,
        out,
        w.gen().shared.config.client_idle_timeout,
    )
    .await
    .is_ok()
    {
        linger(client).await;
    }
}

/// Closes our side, then reads and discards what the client still sends for a moment.
/// Closing a socket with unread input makes the kernel send a reset, which can destroy
/// the error response before the client reads it (nginx's lingering_close, for the same
/// reason).
pub async fn linger(client: &mut Conn) {
    const LINGER: std::time::Duration = std::time::Duration::from_secs(2);
    const MAX_DISCARD: usize = 1 << 20;
    let _ = tokio::io::AsyncWriteExt::shutdown(&mut client.stream).await;
    let deadline = Instant::now() + LINGER;
    let mut discarded = 0;
    while discarded < MAX_DISCARD {
        client.buf.clear();
        match client.fill_until(deadline).await {
            Ok(0) | Err(_) => return,
            Ok(n) => discarded += n,
        }
    }
}

async fn not_found(w: &Worker, client: &mut Conn, req: &Request, out: &mut Vec<u8>) -> bool {
    tracing::info!(
        status = 404,
        cause = "no route matches the host and path",
        "request not routed"
    );
    // The body was not read: the connection cannot be reused unless there was none.
    let keep_alive = req.keep_alive && req.framing == Framing::None;
    out.clear();
    reply::error(out, 404, !keep_alive);
    let sent = write_all(
        &mut client.stream,
        out,
        w.gen().shared.config.client_idle_timeout,
    )
    .await
    .is_ok();
    if sent && req.framing != Framing::None {
        linger(client).await;
    }
    sent && keep_alive
}
