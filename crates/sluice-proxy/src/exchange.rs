//! One attempt at a request on one server: a pooled or new connection, the request head
//! and body out, the response head back. Everything that can go wrong becomes a
//! [`Failure`] that says whether the server is to blame and whether another server may
//! be tried.

use crate::body::{relay, Transfer, TransferError};
use crate::conn::{write_all, Conn};
use crate::head::{put_header, Framing};
use crate::request::Request;
use crate::response::{self, ClientSide, Delivery, Response, MAX_RESPONSE_HEAD};
use crate::state::Generation;
use crate::upstream::UpstreamShared;
use crate::worker::Worker;
use bytes::Buf;
use std::borrow::Cow;
use std::io;
use tokio::net::TcpStream;

/// At most this many 1xx responses before the final one; a server sending more is broken.
const MAX_INTERIM: usize = 8;

/// Why an attempt failed before the response began.
pub struct Failure {
    pub status: u16,
    pub cause: Cow<'static, str>,
    /// The client's request body was read to its end, so its connection can carry more.
    pub body_consumed: bool,
    /// The client's body was not touched: another server can still be given the request.
    pub body_untouched: bool,
    /// The request may have reached the server's application (it could have had effect).
    pub sent: bool,
    /// The server is to blame (counts toward ejecting it).
    pub server_fault: bool,
    /// The request never reached the application on a reused connection: resend it on a
    /// new connection to the same server.
    retry_fresh: bool,
}

impl Failure {
    fn server(status: u16, cause: impl Into<Cow<'static, str>>, req: &Request, sent: bool) -> Self {
        let none = req.framing == Framing::None;
        Failure {
            status,
            cause: cause.into(),
            body_consumed: none,
            body_untouched: none,
            sent,
            server_fault: true,
            retry_fresh: false,
        }
    }

    /// No server could be picked at all.
    pub fn unavailable(req: &Request) -> Self {
        let mut f = Failure::server(503, "no server available", req, false);
        f.server_fault = false;
        f
    }

    /// A response whose status counts as a server failure (it is still delivered).
    pub fn status(status: u16) -> Self {
        Failure {
            status,
            cause: format!("status {status}").into(),
            body_consumed: true,
            body_untouched: false,
            sent: true,
            server_fault: true,
            retry_fresh: false,
        }
    }

    fn client(status: u16, cause: String) -> Self {
        Failure {
            status,
            cause: cause.into(),
            body_consumed: false,
            body_untouched: false,
            sent: true,
            server_fault: false,
            retry_fresh: false,
        }
    }
}

/// One attempt: everything it needs besides the connections and buffers.
pub struct Attempt<'a> {
    pub w: &'a Worker,
    pub gen: &'a Generation,
    pub up: &'a UpstreamShared,
    pub server: usize,
    pub req: &'a Request,
}

impl Attempt<'_> {
    /// Sends the request and reads the response head. A pooled connection that turns out
    /// to be dead is replaced by a new one, once, when resending cannot repeat an effect.
    pub async fn run(
        &self,
        client: &mut Conn,
        head: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(Conn, Response, Delivery), Failure> {
        let addr = self.up.addr(self.server);
        let mut pooled = self.w.pool.checkout(addr);
        loop {
            let reused = pooled.is_some();
            let mut upstream = match pooled.take() {
                Some(conn) => conn,
                None => self.connect().await?,
            };
            let started = self.up.wants_latency().then(crate::clock::now);
            match self.exchange(&mut upstream, client, head, out).await {
                Ok((resp, delivery)) => {
                    if let Some(started) = started {
                        self.up.observe(self.server, started.elapsed());
                    }
                    return Ok((upstream, resp, delivery));
                }
                Err(f)
                    if reused
                        && f.retry_fresh
                        && self.req.framing == Framing::None
                        && self.req.idempotent =>
                {
                    continue
                }
                Err(f) => return Err(f),
            }
        }
    }

    async fn connect(&self) -> Result<Conn, Failure> {
        let addr = self.up.addr(self.server);
        let connected =
            tokio::time::timeout(self.up.config.connect_timeout, TcpStream::connect(addr)).await;
        match connected {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                Ok(Conn::new(stream))
            }
            Ok(Err(e)) => Err(Failure::server(
                502,
                format!("connect failed: {e}"),
                self.req,
                false,
            )),
            Err(_) => Err(Failure::server(504, "connect timed out", self.req, false)),
        }
    }

    async fn exchange(
        &self,
        upstream: &mut Conn,
        client: &mut Conn,
        head: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(Response, Delivery), Failure> {
        let whole_body = self.send_request(upstream, client, head, out).await?;
        let side = ClientSide {
            is_head: self.req.is_head,
            http10: self.req.http10,
            keep_alive: self.req.keep_alive && !self.w.draining() && whole_body,
            upgrade: self.req.upgrade.as_deref(),
        };
        let head = self.read_response_head(upstream, client, side, out).await;
        let (mut resp, mut delivery) = head.map_err(|mut f| {
            if !whole_body {
                // The rest of the body is still on the client connection: it must not be
                // read as a next request, and the request cannot go elsewhere.
                f.body_consumed = false;
                f.body_untouched = false;
            }
            f
        })?;
        if !whole_body {
            // Half a request went to this connection: it cannot carry another.
            resp.reusable = false;
            delivery.request_body_unread = true;
        }
        Ok((resp, delivery))
    }

    /// Sends the head and the body (answering `Expect: 100-continue` first). Returns
    /// false when the server answered or closed before the whole body was sent.
    async fn send_request(
        &self,
        upstream: &mut Conn,
        client: &mut Conn,
        head: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<bool, Failure> {
        let client_timeout = self.gen.shared.config.client_idle_timeout;
        if self.req.expect_continue {
            let sent = write_all(
                &mut client.stream,
                b"HTTP/1.1 100 Continue\r\n\r\n",
                client_timeout,
            )
            .await;
            sent.map_err(|e| Failure::client(400, format!("client gone: {e}")))?;
        }
        out.clear();
        self.put_head(out, head);
        let t = Transfer {
            framing: self.req.framing,
            dechunk: false,
            max_trailer_bytes: self.gen.shared.config.max_header_bytes,
            read_timeout: client_timeout,
            write_timeout: self.up.config.read_timeout,
        };
        match send_body(client, upstream, out, t).await {
            Ok(whole) => Ok(whole),
            Err(TransferError::Read(e)) => {
                let status = if e.kind() == io::ErrorKind::TimedOut {
                    408
                } else {
                    400
                };
                Err(Failure::client(
                    status,
                    format!("reading the request body from the client: {e}"),
                ))
            }
            Err(TransferError::Write(e)) => {
                let mut f =
                    Failure::server(502, format!("sending the request: {e}"), self.req, true);
                f.body_untouched = self.req.framing == Framing::None;
                f.retry_fresh = true;
                Err(f)
            }
        }
    }

    /// The request head for this server: as rewritten, plus `Host` when the client sent
    /// none (HTTP/1.0), as the server's address.
    fn put_head(&self, out: &mut Vec<u8>, head: &[u8]) {
        if !self.req.needs_host {
            out.extend_from_slice(head);
            return;
        }
        // The head ends with the blank line: the header goes just before it.
        out.extend_from_slice(&head[..head.len() - 2]);
        put_header(
            out,
            b"Host",
            self.up.addr(self.server).to_string().as_bytes(),
        );
        out.extend_from_slice(b"\r\n");
    }

    async fn read_response_head(
        &self,
        upstream: &mut Conn,
        client: &mut Conn,
        side: ClientSide<'_>,
        out: &mut Vec<u8>,
    ) -> Result<(Response, Delivery), Failure> {
        let mut interim = 0;
        loop {
            if !upstream.buf.is_empty() {
                match response::parse(&upstream.buf, side, out) {
                    Ok(Some((resp, _))) if resp.head_len > MAX_RESPONSE_HEAD => {
                        return Err(self.broken("response head too large"))
                    }
                    Ok(Some((resp, delivery))) => {
                        upstream.buf.advance(resp.head_len);
                        if !resp.interim {
                            return Ok((resp, delivery));
                        }
                        interim += 1;
                        self.pass_interim(client, interim, side, out).await?;
                        continue;
                    }
                    Ok(None) if upstream.buf.len() > MAX_RESPONSE_HEAD => {
                        return Err(self.broken("response head too large"))
                    }
                    Ok(None) => {}
                    Err(cause) => return Err(self.broken(cause)),
                }
            }
            self.read_more(upstream).await?;
        }
    }

    /// Relays a 1xx response (its head is in `out`) to an HTTP/1.1 client.
    async fn pass_interim(
        &self,
        client: &mut Conn,
        count: usize,
        side: ClientSide<'_>,
        out: &[u8],
    ) -> Result<(), Failure> {
        if count > MAX_INTERIM {
            return Err(self.broken("too many 1xx responses"));
        }
        if side.http10 {
            return Ok(());
        }
        let sent = write_all(
            &mut client.stream,
            out,
            self.gen.shared.config.client_idle_timeout,
        )
        .await;
        sent.map_err(|e| Failure::client(400, format!("client gone: {e}")))
    }

    /// Reads more of the response head, turning an end, an error or a timeout into a failure.
    async fn read_more(&self, upstream: &mut Conn) -> Result<(), Failure> {
        let nothing_yet = upstream.buf.is_empty();
        match upstream.fill(self.up.config.read_timeout).await {
            Ok(0) => Err(self.no_answer(
                "server closed the connection before responding".into(),
                nothing_yet,
            )),
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                let mut f = Failure::server(
                    504,
                    "server did not respond in time (read_timeout)",
                    self.req,
                    true,
                );
                f.body_consumed = true;
                Err(f)
            }
            Err(e) => Err(self.no_answer(format!("reading the response: {e}").into(), nothing_yet)),
        }
    }

    /// A response that cannot be relayed: not retried, since the server did answer.
    fn broken(&self, cause: &'static str) -> Failure {
        let mut f = Failure::server(502, cause, self.req, true);
        f.body_consumed = true;
        f.body_untouched = false;
        f
    }

    /// The connection ended or broke before any response byte.
    fn no_answer(&self, cause: Cow<'static, str>, nothing_yet: bool) -> Failure {
        let mut f = Failure::server(502, cause, self.req, true);
        f.body_consumed = true;
        f.retry_fresh = nothing_yet;
        f
    }
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
