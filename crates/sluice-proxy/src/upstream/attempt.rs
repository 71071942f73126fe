//! One attempt at a request on one server: a pooled or new connection, the request head
//! and body out, the response head back. Everything that can go wrong becomes a
//! [`Failure`] that says who is to blame and whether another try may help.

use crate::clock;
use crate::downstream::Downstream;
use crate::failure::{Body, Failure, Kind, Retry, Side};
use crate::http1::check::Request;
use crate::http1::encode::Delivery;
use crate::http1::head::{put_header, Framing};
use crate::http1::response::{self, Asked, Response, MAX_RESPONSE_HEAD};
use crate::io::body::{Transfer, TransferError};
use crate::io::conn::bounded;
use crate::io::{write_all, Conn, ServerStream, Stream};
use crate::state::group::ServerGroup;
use crate::tls::client::ClientTls;
use crate::upstream::pool::Pool;
use bytes::Buf;
use std::borrow::Cow;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpStream;

/// At most this many 1xx responses before the final one; a server sending more is broken.
const MAX_INTERIM: usize = 8;

/// What the buffered bytes of a response head gave.
enum Buffered {
    /// Not all of it yet.
    Incomplete,
    /// A 1xx head, prepared for the client when `relay` (an HTTP/1.0 client gets none).
    Interim { relay: bool },
    /// The final head, prepared for the client.
    Final(Response, Delivery),
}

/// A response whose head is read (and prepared for the client): the body is next.
pub struct Received {
    pub upstream: Conn<ServerStream>,
    pub resp: Response,
    pub delivery: Delivery,
    /// The server answered before taking the whole request body: the rest of it is
    /// still unread on the client connection.
    pub request_body_unread: bool,
}

/// One attempt: everything it needs besides the connections and buffers.
pub struct Attempt<'a> {
    pub pool: &'a Pool,
    pub up: &'a ServerGroup,
    pub server: usize,
    pub req: &'a Request,
    /// The worker is draining: the client connection will close after this response.
    pub draining: bool,
    /// The largest trailer section a request body may carry.
    pub max_trailer_bytes: usize,
    /// The longest the client may take to send the whole body (`request_body_timeout`).
    pub body_timeout: Option<Duration>,
    /// The whole request body, read before the first try (`retry_buffer`): sent from
    /// here, so another try can send it again.
    pub body: Option<&'a [u8]>,
    /// The request's session, when the upstream is `sticky` (its cookie's value).
    pub session: &'a [u8],
}

impl Attempt<'_> {
    /// Sends the request and reads the response head. A pooled connection that turns out
    /// to be dead is replaced by a new one, once, when resending cannot repeat an effect.
    pub async fn run<S: Stream>(
        &self,
        down: &mut Downstream<'_, S>,
        head: &[u8],
    ) -> Result<Received, Failure> {
        // The pool is per address: a connection of the other kind (plain or TLS, from
        // another upstream listing the same address) is not this upstream's.
        let tls = self.up.tls.is_some();
        let mut pooled = self
            .pool
            .checkout(&self.up.servers[self.server])
            .filter(|c| c.stream.is_tls() == tls);
        loop {
            let reused = pooled.is_some();
            let mut upstream = match pooled.take() {
                Some(conn) => conn,
                None => self.connect().await.map_err(|f| self.replayable(f))?,
            };
            let started = self.up.wants_latency().then(clock::now);
            match self.exchange(&mut upstream, down, head).await {
                Ok((resp, delivery, request_body_unread)) => {
                    if let Some(started) = started {
                        self.up.observe(self.server, started.elapsed());
                    }
                    return Ok(Received {
                        upstream,
                        resp,
                        delivery,
                        request_body_unread,
                    });
                }
                Err(f) => {
                    let f = self.replayable(f);
                    if !f.may_resend_fresh(reused, self.req.idempotent) {
                        return Err(f);
                    }
                }
            }
        }
    }

    /// A server's failure of a request whose body is buffered: the body can be sent
    /// again, as if there were none to lose.
    fn replayable(&self, mut f: Failure) -> Failure {
        if self.body.is_some() && f.side == Side::Upstream {
            f.body = Body::None;
        }
        f
    }

    async fn connect(&self) -> Result<Conn<ServerStream>, Failure> {
        let addr = self.up.addr(self.server);
        let started = clock::now();
        let opening = open(addr, self.up.tls.as_ref());
        let connected = tokio::time::timeout(self.up.config.connect_timeout, opening).await;
        let (status, cause) = match connected {
            Ok(Ok(stream)) => {
                let server = &self.up.servers[self.server];
                let stats = server.stats.local();
                stats.connect.observe(started.elapsed());
                stats.connections_opened.add(1);
                return Ok(server.opened(stream));
            }
            Ok(Err(e)) => (502, Cow::Owned(format!("connect failed: {e}"))),
            Err(_) => (504, Cow::Borrowed("connect timed out")),
        };
        Err(Failure::upstream(
            Kind::Connect,
            status,
            cause,
            Body::unread(self.req.framing),
            Retry::NotSent,
        ))
    }

    async fn exchange<S: Stream>(
        &self,
        upstream: &mut Conn<ServerStream>,
        down: &mut Downstream<'_, S>,
        head: &[u8],
    ) -> Result<(Response, Delivery, bool), Failure> {
        let whole_body = self.send_request(upstream, down, head).await?;
        let keep_alive = self.req.keep_alive && !self.draining && whole_body;
        let read = self.read_response_head(upstream, down, keep_alive).await;
        // When the server answered before the whole body was sent, the rest of it is
        // still on the client connection: it must not be read as a next request, and the
        // request cannot go elsewhere.
        let (mut resp, delivery) =
            read.map_err(|f| if whole_body { f } else { f.with_body_partial() })?;
        if !whole_body {
            // Half a request went to this connection: it cannot carry another.
            resp.reusable = false;
        }
        Ok((resp, delivery, !whole_body))
    }

    /// Sends the head and the body (answering `Expect: 100-continue` first). Returns
    /// false when the server answered or closed before the whole body was sent.
    async fn send_request<S: Stream>(
        &self,
        upstream: &mut Conn<ServerStream>,
        down: &mut Downstream<'_, S>,
        head: &[u8],
    ) -> Result<bool, Failure> {
        if self.req.expect_continue {
            down.send_continue().await?;
        }
        let with_host;
        let head = if self.req.needs_host {
            with_host = self.head_with_host(head);
            &with_host[..]
        } else {
            head
        };
        if let Some(body) = self.body {
            let (stream, limit) = (&mut upstream.stream, self.up.config.read_timeout);
            let sent = match write_all(stream, head, limit).await {
                Ok(()) => write_all(stream, body, limit).await,
                Err(e) => Err(e),
            };
            return sent.map(|()| true).map_err(|e| {
                let cause = format!("sending the request: {e}");
                Failure::upstream(Kind::Reset, 502, cause, Body::None, Retry::StaleConnection)
            });
        }
        let t = Transfer {
            framing: self.req.framing,
            dechunk: false,
            max_trailer_bytes: self.max_trailer_bytes,
            read_timeout: down.timeout(),
            write_timeout: self.up.config.read_timeout,
        };
        let limit = self
            .body_timeout
            .filter(|_| self.req.framing != Framing::None);
        let deadline = limit.map(|limit| clock::now() + limit);
        let sent = bounded(deadline, send_body(down, upstream, head, t))
            .await
            .map_err(|_| {
                let cause = "the request body took longer than request_body_timeout";
                Failure::downstream(Kind::ClientSlow, 408, cause, Body::Partial)
            })?;
        match sent {
            Ok(whole) => Ok(whole),
            Err(TransferError::Read(e)) => {
                let status = if e.kind() == io::ErrorKind::TimedOut {
                    408
                } else {
                    400
                };
                let cause = format!("reading the request body from the client: {e}");
                Err(Failure::downstream(
                    Kind::reading_client(&e),
                    status,
                    cause,
                    Body::Partial,
                ))
            }
            Err(TransferError::Write(e)) => {
                let body = match self.req.framing {
                    Framing::None => Body::None,
                    _ => Body::Partial,
                };
                let cause = format!("sending the request: {e}");
                Err(Failure::upstream(
                    Kind::Reset,
                    502,
                    cause,
                    body,
                    Retry::StaleConnection,
                ))
            }
        }
    }

    /// The request head with `Host` added as the server's address: for HTTP/1.0 clients
    /// that sent none (nginx's default `$proxy_host`). Rare, so it may allocate.
    fn head_with_host(&self, head: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(head.len() + 32);
        // The head ends with the blank line: the header goes just before it.
        out.extend_from_slice(&head[..head.len() - 2]);
        put_header(
            &mut out,
            b"Host",
            self.up.addr(self.server).to_string().as_bytes(),
        );
        out.extend_from_slice(b"\r\n");
        out
    }

    /// Reads response heads until the final one, relaying 1xx ones; prepares the final
    /// one for the client.
    async fn read_response_head<S: Stream>(
        &self,
        upstream: &mut Conn<ServerStream>,
        down: &mut Downstream<'_, S>,
        keep_alive: bool,
    ) -> Result<(Response, Delivery), Failure> {
        let mut interim = 0;
        loop {
            match self.take_head(upstream, down, keep_alive)? {
                Buffered::Final(resp, delivery) => return Ok((resp, delivery)),
                Buffered::Interim { relay } => {
                    interim += 1;
                    if interim > MAX_INTERIM {
                        return Err(self.broken("too many 1xx responses"));
                    }
                    if relay {
                        down.send_interim().await?;
                    }
                }
                Buffered::Incomplete => self.read_more(upstream).await?,
            }
        }
    }

    /// Parses the buffered response head, if it is complete, and prepares it for the
    /// client. Synchronous on purpose: the header array (4 KiB) stays on this stack frame
    /// and never becomes part of the request's future.
    fn take_head<S: Stream>(
        &self,
        upstream: &mut Conn<ServerStream>,
        down: &mut Downstream<'_, S>,
        keep_alive: bool,
    ) -> Result<Buffered, Failure> {
        let asked = Asked {
            is_head: self.req.is_head,
            upgrade: self.req.upgrade.as_deref(),
        };
        if upstream.buf.is_empty() {
            return Ok(Buffered::Incomplete);
        }
        let mut headers = response::header_slots();
        let parsed = response::parse(&upstream.buf, &mut headers);
        let head = match parsed.map_err(|cause| self.broken(cause))? {
            Some(head) if head.head_len > MAX_RESPONSE_HEAD => {
                return Err(self.broken("response head too large"))
            }
            Some(head) => head,
            None if upstream.buf.len() > MAX_RESPONSE_HEAD => {
                return Err(self.broken("response head too large"))
            }
            None => return Ok(Buffered::Incomplete),
        };
        let resp = response::classify(&head, asked).map_err(|c| self.broken(c))?;
        let taken = if resp.interim {
            Buffered::Interim {
                relay: down.prepare_interim(&head, &resp),
            }
        } else {
            let delivery = down.prepare_response(&head, &resp, keep_alive);
            if let Some(sticky) = &self.up.sticky {
                let server = (self.server, self.up.addr(self.server));
                if let Some(cookie) = sticky.answered(server, self.session, head.headers) {
                    down.add_header("Set-Cookie", &cookie);
                }
            }
            Buffered::Final(resp, delivery)
        };
        upstream.buf.advance(resp.head_len);
        Ok(taken)
    }

    /// Reads more of the response head, turning an end, an error or a timeout into a failure.
    async fn read_more(&self, upstream: &mut Conn<ServerStream>) -> Result<(), Failure> {
        let nothing_yet = upstream.buf.is_empty();
        match upstream.fill(self.up.config.read_timeout).await {
            Ok(0) => Err(self.no_answer(
                "server closed the connection before responding".into(),
                nothing_yet,
            )),
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(Failure::upstream(
                Kind::Timeout,
                504,
                "server did not respond in time (read_timeout)",
                Body::sent(self.req.framing),
                Retry::MaybeProcessed,
            )),
            Err(e) => Err(self.no_answer(format!("reading the response: {e}").into(), nothing_yet)),
        }
    }

    /// A response that cannot be relayed: not retried, since the server did answer.
    fn broken(&self, cause: &'static str) -> Failure {
        Failure::upstream(
            Kind::BadResponse,
            502,
            cause,
            Body::sent(self.req.framing),
            Retry::Never,
        )
    }

    /// The connection ended or broke before the response was complete: with nothing of
    /// it yet, the way a stale pooled connection fails.
    fn no_answer(&self, cause: Cow<'static, str>, nothing_yet: bool) -> Failure {
        let retry = if nothing_yet {
            Retry::StaleConnection
        } else {
            Retry::MaybeProcessed
        };
        Failure::upstream(Kind::Reset, 502, cause, Body::sent(self.req.framing), retry)
    }
}

/// A new connection to `addr`: TCP, then the TLS handshake when the upstream has `tls`
/// (a certificate that does not verify fails it, as a refused connect does).
pub async fn open(addr: SocketAddr, tls: Option<&ClientTls>) -> io::Result<ServerStream> {
    let tcp = TcpStream::connect(addr).await?;
    let _ = tcp.set_nodelay(true);
    match tls {
        None => Ok(ServerStream::Tcp(tcp)),
        Some(tls) => {
            let stream = tls.connector.connect(tls.name_for(addr), tcp).await?;
            Ok(ServerStream::Tls(Box::new(stream)))
        }
    }
}

/// Sends the request head and body, watching the server meanwhile: a server may answer
/// before it has read the body (413, 401) and stop reading, and waiting to finish the
/// upload would turn its answer into a timeout. Returns false when the server answered
/// (or closed) before the whole body was sent.
async fn send_body<S: Stream>(
    down: &mut Downstream<'_, S>,
    upstream: &mut Conn<ServerStream>,
    head: &[u8],
    t: Transfer,
) -> Result<bool, TransferError> {
    if t.framing == Framing::None {
        return down
            .send_request_body(head, &mut upstream.stream, t)
            .await
            .map(|()| true);
    }
    let Conn { stream, buf, .. } = upstream;
    let tcp = match stream {
        ServerStream::Tcp(tcp) => tcp,
        ServerStream::Tls(tls) => return send_body_tls(down, tls, buf, head, t).await,
    };
    let (reader, mut writer) = tcp.split();
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
        sent = down.send_request_body(head, &mut writer, t) => sent.map(|()| true),
        () = answered => Ok(false),
    }
}

/// [`send_body`] over TLS: the stream is split by tokio's lock (rustls keeps one state
/// for both directions), and an answer is any plaintext (or the end) read meanwhile.
async fn send_body_tls<S: Stream>(
    down: &mut Downstream<'_, S>,
    tls: &mut tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    buf: &mut bytes::BytesMut,
    head: &[u8],
    t: Transfer,
) -> Result<bool, TransferError> {
    use tokio::io::AsyncReadExt;
    let (mut reader, mut writer) = tokio::io::split(tls);
    let answered = async {
        let _ = reader.read_buf(buf).await;
    };
    tokio::select! {
        biased;
        sent = down.send_request_body(head, &mut writer, t) => sent.map(|()| true),
        () = answered => Ok(false),
    }
}
