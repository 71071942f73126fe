//! One client connection: read request heads one after another (keep-alive and
//! pipelining), route each, forward it, and decide whether the connection goes on.

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

/// Buffers reused by every request on a connection, so the hot path does not allocate.
#[derive(Default)]
pub struct Scratch {
    /// The request head as it goes to the server.
    pub head: Vec<u8>,
    /// The request's hash key, when its upstream hashes.
    pub key: Vec<u8>,
    /// Bytes on their way out (response heads, body chunks, error replies).
    pub out: Vec<u8>,
}

/// Serves `stream` until the client closes, an error ends it, or the worker drains.
pub async fn serve(w: &Worker, stream: TcpStream, peer: SocketAddr) {
    let _ = stream.set_nodelay(true);
    let client_ip = peer.ip().to_string();
    let origin = Origin {
        client_ip: &client_ip,
        proto: "http",
    };
    let mut client = Conn::new(stream);
    let mut scratch = Scratch::default();
    loop {
        let (req, route, gen) = match read_head(w, &mut client, &origin, &mut scratch).await {
            Ok(Some(parsed)) => parsed,
            Ok(None) => return,
            Err(rejection) => {
                return reject(w, &mut client, peer, rejection, &mut scratch.out).await
            }
        };
        client.buf.advance(req.head_len);
        let keep_alive = match route {
            Some(route) => forward(w, &gen, &mut client, &req, route, &mut scratch).await,
            None => not_found(w, &mut client, &req, &mut scratch.out).await,
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
/// quietly (closed by the client, idle too long, or the worker is draining).
async fn read_head(
    w: &Worker,
    client: &mut Conn,
    origin: &Origin<'_>,
    scratch: &mut Scratch,
) -> Result<Option<Head>, Rejection> {
    let Scratch { head, key, .. } = scratch;
    let mut deadline =
        (!client.buf.is_empty()).then(|| Instant::now() + w.gen().shared.config.header_timeout);
    loop {
        if !client.buf.is_empty() {
            let gen = w.gen();
            let max = gen.shared.config.max_header_bytes;
            let allows =
                |route: &Option<usize>, protocol: &str| allows_upgrade(&gen, *route, protocol);
            match request::parse(
                &client.buf,
                origin,
                head,
                |view| route(&gen, view, key),
                allows,
            )? {
                Some((req, _)) if req.head_len > max => return Err(too_large()),
                Some((req, route)) => return Ok(Some((req, route, gen))),
                None if client.buf.len() >= max => return Err(too_large()),
                None => {}
            }
        }
        let read = match deadline {
            // The head has begun: one deadline for all of it, however slowly it trickles in.
            Some(at) => client.fill_until(at).await,
            None => wait_for_request(w, client).await,
        };
        match read {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut && deadline.is_some() => {
                return Err(Rejection {
                    status: 408,
                    reason: "request head not received within header_timeout",
                })
            }
            Err(_) => return Ok(None),
        }
        deadline.get_or_insert_with(|| Instant::now() + w.gen().shared.config.header_timeout);
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
    let first = protocol.split(',').next().unwrap_or("").trim();
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

/// Waits for the first bytes of the next request on an idle connection. Ends it early when
/// the worker drains; reports `Ok(0)` then, as if the client had closed.
async fn wait_for_request(w: &Worker, client: &mut Conn) -> io::Result<usize> {
    if w.draining() {
        return Ok(0);
    }
    let drained = w.drain_signal();
    tokio::select! {
        read = client.fill(w.gen().shared.config.client_idle_timeout) => read,
        _ = drained => Ok(0),
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
