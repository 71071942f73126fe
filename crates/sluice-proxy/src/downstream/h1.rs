//! An HTTP/1 client, as the forwarding stages see it for one request: every byte sluice
//! writes to it, and the cleanup of its connection after a response, live here.

use crate::compress::Recode;
use crate::downstream::Compressing;
use crate::failure::{Body, Failure, Kind};
use crate::files;
use crate::http1::encode::{self, Delivery, Edits};
use crate::http1::reply::{self, Extra};
use crate::http1::response::{Response, ResponseHead};
use crate::io::body::{relay, relay_compressed, send_file, Transfer, TransferError};
use crate::io::tunnel::{self, End};
use crate::io::{write_all, Conn, ServerStream, Stream};
use std::future::Future;
use std::io;
use std::time::Duration;

/// How long sluice keeps reading (and discarding) after it closed its side.
const LINGER: Duration = Duration::from_secs(2);
/// The most it discards meanwhile.
const MAX_DISCARD: usize = 1 << 20;

/// The client connection of one request.
pub struct Http1<'a, S> {
    pub conn: &'a mut Conn<S>,
    /// Bytes on their way to the client (a response head, body chunks, an error reply).
    pub out: &'a mut Vec<u8>,
    /// An HTTP/1.0 client: no 1xx, no chunked responses.
    pub http10: bool,
    /// The longest the client may take to accept bytes or send the next body bytes.
    pub timeout: Duration,
    /// The route's changes to the response head, if it has any.
    pub edits: Option<Edits<'a>>,
    /// The route's compression, if it has `compress` and the request may get it.
    pub compress: Option<Compressing<'a>>,
}

impl<S: Stream> Http1<'_, S> {
    /// Tells a client waiting on `Expect: 100-continue` to send its body.
    pub async fn send_continue(&mut self) -> Result<(), Failure> {
        let sent = write_all(
            &mut self.conn.stream,
            b"HTTP/1.1 100 Continue\r\n\r\n",
            self.timeout,
        )
        .await;
        sent.map_err(|e| {
            Failure::downstream(
                Kind::ClientGone,
                400,
                format!("client gone: {e}"),
                Body::Unread,
            )
        })
    }

    /// Writes a 1xx response head into the output buffer; false when the client gets
    /// none (HTTP/1.0). Synchronous, so that the parsed head (and the header array it
    /// borrows) is never held across an await.
    pub fn prepare_interim(&mut self, head: &ResponseHead<'_, '_>, resp: &Response) -> bool {
        if self.http10 {
            return false;
        }
        let plain = Delivery {
            dechunk: false,
            close: false,
        };
        encode::response_head(
            self.out,
            head,
            resp,
            (plain, false),
            None,
            Recode::default(),
        );
        true
    }

    /// Sends the 1xx head prepared by [`Http1::prepare_interim`].
    pub async fn send_interim(&mut self) -> Result<(), Failure> {
        let sent = write_all(&mut self.conn.stream, self.out, self.timeout).await;
        sent.map_err(|e| {
            Failure::downstream(
                Kind::ClientGone,
                400,
                format!("client gone: {e}"),
                Body::Partial,
            )
        })
    }

    /// Writes the final response head into the output buffer (it goes out with the
    /// first body bytes) and says how the body will be delivered.
    pub fn prepare_response(
        &mut self,
        head: &ResponseHead<'_, '_>,
        resp: &Response,
        keep_alive: bool,
    ) -> Delivery {
        let delivery = Delivery::of(resp, self.http10, keep_alive);
        let recode = match &mut self.compress {
            Some(c) => c.decide(head, resp),
            None => Recode::default(),
        };
        encode::response_head(
            self.out,
            head,
            resp,
            (delivery, self.http10),
            self.edits.as_ref(),
            recode,
        );
        delivery
    }

    /// Reads the request body from the client and writes it, after `head`, to `to`.
    /// Adds a header line to the prepared head, before the blank line that ends it.
    pub fn add_header(&mut self, name: &str, value: &[u8]) {
        let end = self.out.len().saturating_sub(2);
        let line = [name.as_bytes(), b": ", value, b"\r\n"].concat();
        self.out.splice(end..end, line);
    }

    pub async fn send_request_body<W: tokio::io::AsyncWrite + Unpin>(
        &mut self,
        head: &[u8],
        to: &mut W,
        t: Transfer,
    ) -> Result<(), TransferError> {
        self.out.clear();
        self.out.extend_from_slice(head);
        relay(self.conn, to, self.out, t).await.map(|_| ())
    }

    /// Sends the prepared head and the body read from `from`; returns the bytes sent.
    pub async fn relay_response(
        &mut self,
        from: &mut Conn<ServerStream>,
        t: Transfer,
    ) -> Result<u64, TransferError> {
        match self.compress.as_mut().and_then(|c| c.encoder.take()) {
            // Boxed: the compressing relay's state stays out of every request's future.
            Some(encoder) => {
                let dst = &mut self.conn.stream;
                Box::pin(relay_compressed(from, dst, self.out, t, encoder)).await
            }
            None => relay(from, &mut self.conn.stream, self.out, t).await,
        }
    }

    /// Sends the prepared `101` head, then runs the tunnel until it ends.
    pub async fn tunnel(
        &mut self,
        upstream: &mut Conn<ServerStream>,
        idle: Duration,
        retired: impl Future<Output = ()>,
    ) -> Option<End> {
        if write_all(&mut self.conn.stream, self.out, self.timeout)
            .await
            .is_err()
        {
            return None;
        }
        // Nothing of the HTTP exchange is needed any more: give its buffer back.
        *self.out = Vec::new();
        Some(tunnel::run(self.conn, upstream, idle, retired).await)
    }

    /// Sends a whole head, then the body: bytes, or a file's range read in chunks
    /// through the output buffer. A file that gives fewer bytes than promised (it shrank)
    /// is an error: the connection must close, since the client counts on the length.
    pub async fn send_local(&mut self, head: &[u8], body: files::Body) -> io::Result<u64> {
        self.out.clear();
        self.out.extend_from_slice(head);
        let file = match body {
            files::Body::None => None,
            files::Body::Bytes(b) => {
                self.out.extend_from_slice(&b);
                None
            }
            files::Body::File { file, offset, len } => Some((file, offset, len)),
        };
        let sent = (self.out.len() - head.len()) as u64;
        write_all(&mut self.conn.stream, self.out, self.timeout).await?;
        let Some((file, offset, len)) = file else {
            return Ok(sent);
        };
        let range = (&file, offset, len);
        send_file(&mut self.conn.stream, range, self.out, self.timeout).await
    }

    /// Sends an error reply of sluice's own. Returns whether it went out.
    pub async fn send_error(&mut self, status: u16, close: bool, extra: Option<Extra<'_>>) -> bool {
        self.out.clear();
        reply::error(self.out, status, close, extra);
        write_all(&mut self.conn.stream, self.out, self.timeout)
            .await
            .is_ok()
    }

    /// Ends the exchange on the connection: when part of the request body was left
    /// unread, sluice closes its side and discards what the client still sends for a
    /// moment. Closing a socket with unread input makes the kernel send a reset, which
    /// can destroy the response before the client reads it (nginx's lingering_close, for
    /// the same reason). Returns whether the connection can carry another request.
    pub async fn conclude(&mut self, body_left: bool, keep_alive: bool) -> bool {
        if body_left {
            self.linger().await;
            return false;
        }
        keep_alive
    }

    async fn linger(&mut self) {
        let _ = tokio::io::AsyncWriteExt::shutdown(&mut self.conn.stream).await;
        let deadline = crate::clock::now() + LINGER;
        let mut discarded = 0;
        while discarded < MAX_DISCARD {
            self.conn.buf.clear();
            match self.conn.fill_until(deadline).await {
                Ok(0) | Err(_) => return,
                Ok(n) => discarded += n,
            }
        }
    }
}
