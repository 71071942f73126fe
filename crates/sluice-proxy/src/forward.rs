//! Forwarding one request: pick a server, get a connection to it, send the request,
//! relay the response back. Every failure becomes a status for the client and a log line
//! naming the route, upstream, server and cause.

use crate::body::{relay, Transfer, TransferError};
use crate::client::{linger, Scratch};
use crate::conn::{write_all, Conn};
use crate::head::Framing;
use crate::reply;
use crate::request::Request;
use crate::response::{self, ClientSide, Delivery, Response};
use crate::upstream::UpstreamState;
use crate::worker::Worker;
use bytes::Buf;
use std::borrow::Cow;
use std::io;

/// At most this many 1xx responses before the final one; a server sending more is broken.
const MAX_INTERIM: usize = 8;

/// The largest response head accepted from a server.
const MAX_RESPONSE_HEAD: usize = 64 * 1024;

/// Why an exchange with a server failed before the response began.
struct Failure {
    status: u16,
    cause: Cow<'static, str>,
    /// The request never reached the server's application (a stale pooled connection).
    retry_fresh: bool,
    /// The client's request body was read to its end, so its connection can carry more.
    body_consumed: bool,
}

impl Failure {
    fn new(status: u16, cause: impl Into<Cow<'static, str>>, body_consumed: bool) -> Self {
        Failure {
            status,
            cause: cause.into(),
            retry_fresh: false,
            body_consumed,
        }
    }
}

/// The upstream head to send is in `head`; `out` is scratch space. Returns whether the
/// client connection can carry another request.
pub async fn forward(
    w: &Worker,
    client: &mut Conn,
    req: &Request,
    route: usize,
    scratch: &mut Scratch,
) -> bool {
    let Scratch { head, key, out } = scratch;
    let up = &w.upstreams[w.config.routes[route].upstream];
    let Some((server, _in_flight)) = up.pick(key, w.random()) else {
        let failure = Failure::new(503, "no server available", req.framing == Framing::None);
        return fail(w, client, req, route, None, failure, out).await;
    };
    let (mut upstream, resp, delivery) = match send(w, up, server, client, req, head, out).await {
        Ok(done) => done,
        Err(failure) => return fail(w, client, req, route, Some(server), failure, out).await,
    };
    let t = Transfer {
        framing: resp.framing,
        dechunk: delivery.dechunk,
        read_timeout: up.config.read_timeout,
        write_timeout: w.config.client_idle_timeout,
    };
    match relay(&mut upstream, &mut client.stream, out, t).await {
        Ok(()) => {
            if resp.reusable {
                up.checkin(server, upstream);
            }
            if delivery.request_body_unread {
                linger(client).await;
            }
            !delivery.close
        }
        Err(TransferError::Read(e)) => {
            let (path, name, addr) = (
                &w.config.routes[route].path,
                &up.config.name,
                up.addr(server),
            );
            tracing::warn!(route = %path, upstream = %name, server = %addr, cause = %e, "server failed in the middle of a response; closing the client connection");
            false
        }
        Err(TransferError::Write(e)) => {
            tracing::debug!(cause = %e, "client stopped reading the response");
            false
        }
    }
}

/// Sends the request on a pooled or new connection and reads the response head. A
/// pooled connection that turns out to be dead is replaced by a new one, once, when
/// resending cannot repeat an effect.
async fn send(
    w: &Worker,
    up: &UpstreamState,
    server: usize,
    client: &mut Conn,
    req: &Request,
    head: &[u8],
    out: &mut Vec<u8>,
) -> Result<(Conn, Response, Delivery), Failure> {
    let mut pooled = up.checkout(server);
    loop {
        let reused = pooled.is_some();
        let mut upstream = match pooled.take() {
            Some(conn) => conn,
            None => up
                .connect(server)
                .await
                .map_err(|e| connect_failure(&e, req))?,
        };
        let started = std::time::Instant::now();
        match exchange(w, up, &mut upstream, client, req, head, out).await {
            Ok((resp, delivery)) => {
                up.observe(server, started.elapsed());
                return Ok((upstream, resp, delivery));
            }
            Err(f) if reused && f.retry_fresh && req.framing == Framing::None && req.idempotent => {
                continue
            }
            Err(f) => return Err(f),
        }
    }
}

fn connect_failure(e: &io::Error, req: &Request) -> Failure {
    let consumed = req.framing == Framing::None;
    if e.kind() == io::ErrorKind::TimedOut {
        Failure::new(504, "connect timed out", consumed)
    } else {
        Failure::new(502, format!("connect failed: {e}"), consumed)
    }
}

async fn exchange(
    w: &Worker,
    up: &UpstreamState,
    upstream: &mut Conn,
    client: &mut Conn,
    req: &Request,
    head: &[u8],
    out: &mut Vec<u8>,
) -> Result<(Response, Delivery), Failure> {
    if req.expect_continue {
        let sent = write_all(
            &mut client.stream,
            b"HTTP/1.1 100 Continue\r\n\r\n",
            w.config.client_idle_timeout,
        )
        .await;
        sent.map_err(|e| Failure::new(400, format!("client gone: {e}"), false))?;
    }
    out.clear();
    out.extend_from_slice(head);
    let t = Transfer {
        framing: req.framing,
        dechunk: false,
        read_timeout: w.config.client_idle_timeout,
        write_timeout: up.config.read_timeout,
    };
    let whole_body = match send_body(client, upstream, out, t).await {
        Ok(whole) => whole,
        Err(TransferError::Read(e)) => {
            let status = if e.kind() == io::ErrorKind::TimedOut {
                408
            } else {
                400
            };
            return Err(Failure::new(
                status,
                format!("reading the request body from the client: {e}"),
                false,
            ));
        }
        Err(TransferError::Write(e)) => {
            let mut f = Failure::new(502, format!("sending the request: {e}"), false);
            f.retry_fresh = true;
            return Err(f);
        }
    };
    let side = ClientSide {
        is_head: req.is_head,
        http10: req.http10,
        keep_alive: req.keep_alive && !w.draining() && whole_body,
    };
    let (mut resp, mut delivery) = read_response_head(w, up, upstream, client, side, out).await?;
    if !whole_body {
        // Half a request went to this connection: it cannot carry another.
        resp.reusable = false;
        delivery.request_body_unread = true;
    }
    Ok((resp, delivery))
}

/// Sends the request head and body, watching the server meanwhile: a server may answer
/// before it has read the body (413, 401) and stop reading, and waiting to finish the
/// upload would turn its answer into a timeout. Returns false when the server answered
/// (or closed) before the whole body was sent.
async fn send_body(
    client: &mut Conn,
    upstream: &mut Conn,
    out: &mut Vec<u8>,
    t: Transfer,
) -> Result<bool, TransferError> {
    if t.framing == Framing::None {
        return relay(client, &mut upstream.stream, out, t)
            .await
            .map(|()| true);
    }
    let Conn { stream, buf } = upstream;
    let (reader, mut writer) = stream.split();
    let answered = async {
        loop {
            // Readiness can be stale from this connection's last exchange; only bytes
            // (or the end of the stream) count as an answer.
            if reader.readable().await.is_err() {
                return;
            }
            match reader.try_read_buf(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                _ => return,
            }
        }
    };
    tokio::select! {
        biased;
        sent = relay(client, &mut writer, out, t) => sent.map(|()| true),
        () = answered => Ok(false),
    }
}

async fn read_response_head(
    w: &Worker,
    up: &UpstreamState,
    upstream: &mut Conn,
    client: &mut Conn,
    side: ClientSide,
    out: &mut Vec<u8>,
) -> Result<(Response, Delivery), Failure> {
    let mut interim = 0;
    loop {
        if !upstream.buf.is_empty() {
            match response::parse(&upstream.buf, side, out) {
                Ok(Some((resp, delivery))) => {
                    upstream.buf.advance(resp.head_len);
                    if !resp.interim {
                        return Ok((resp, delivery));
                    }
                    interim += 1;
                    if interim > MAX_INTERIM {
                        return Err(Failure::new(502, "too many 1xx responses", true));
                    }
                    if !side.http10 {
                        write_all(&mut client.stream, out, w.config.client_idle_timeout)
                            .await
                            .map_err(|e| Failure::new(400, format!("client gone: {e}"), false))?;
                    }
                    continue;
                }
                Ok(None) if upstream.buf.len() > MAX_RESPONSE_HEAD => {
                    return Err(Failure::new(502, "response head too large", true))
                }
                Ok(None) => {}
                Err(cause) => return Err(Failure::new(502, cause, true)),
            }
        }
        let nothing_yet = upstream.buf.is_empty();
        match upstream.fill(up.config.read_timeout).await {
            Ok(0) => {
                return Err(Failure {
                    status: 502,
                    cause: "server closed the connection before responding".into(),
                    retry_fresh: nothing_yet,
                    body_consumed: true,
                })
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(Failure::new(
                    504,
                    "server did not respond in time (read_timeout)",
                    true,
                ))
            }
            Err(e) => {
                return Err(Failure {
                    status: 502,
                    cause: format!("reading the response: {e}").into(),
                    retry_fresh: nothing_yet,
                    body_consumed: true,
                })
            }
        }
    }
}

/// Answers the client with the failure's status and logs why. Returns keep-alive.
async fn fail(
    w: &Worker,
    client: &mut Conn,
    req: &Request,
    route: usize,
    server: Option<usize>,
    f: Failure,
    out: &mut Vec<u8>,
) -> bool {
    let up = &w.upstreams[w.config.routes[route].upstream];
    let server = server
        .map(|s| up.addr(s).to_string())
        .unwrap_or_else(|| "-".into());
    tracing::warn!(route = %w.config.routes[route].path, upstream = %up.config.name, server = %server, status = f.status, cause = %f.cause, "request failed");
    let keep_alive = req.keep_alive && f.body_consumed && !w.draining();
    out.clear();
    reply::error(out, f.status, !keep_alive);
    let sent = write_all(&mut client.stream, out, w.config.client_idle_timeout)
        .await
        .is_ok();
    if sent && !f.body_consumed {
        linger(client).await;
    }
    sent && keep_alive
}
