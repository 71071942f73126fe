//! An HTTP/2 stream, as the forwarding stages see it for one request: the response head
//! becomes a HEADERS frame, the body DATA frames within the stream's flow-control window,
//! and the request body is read from the stream's DATA frames and framed for the HTTP/1.1
//! server (as it is, or chunked). The connection itself (`session::h2`) writes the frames.

use crate::compress::response::{self, Field};
use crate::compress::Recode;
use crate::downstream::Compressing;
use crate::files;
use crate::http1::encode::{Delivery, Edits};
use crate::http1::head::Framing;
use crate::http1::reply::{self, Extra};
use crate::http1::response::{Response, ResponseHead};
use crate::io::body::{relay, relay_compressed, send_file, Transfer, TransferError};
use crate::io::{write_all, Conn, ServerStream};
use bytes::Bytes;
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use http::{HeaderName, HeaderValue};
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::AsyncWrite;

/// Bytes of a response body moved into one DATA frame at most.
const CHUNK: usize = 64 * 1024;

/// The client stream of one request.
pub struct Http2<'a> {
    pub respond: &'a mut SendResponse<Bytes>,
    pub recv: &'a mut RecvStream,
    pub out: &'a mut Vec<u8>,
    /// The response head, prepared while the server's head was borrowed.
    pub pending: Option<http::Response<()>>,
    /// A HEAD request: the response has no DATA.
    pub is_head: bool,
    pub timeout: Duration,
    pub edits: Option<Edits<'a>>,
    /// The route's compression, if it has `compress` and the request may get it.
    pub compress: Option<Compressing<'a>>,
}

impl Http2<'_> {
    /// The final response head, as HTTP/2 carries it: no connection-specific headers.
    pub fn prepare_response(&mut self, head: &ResponseHead<'_, '_>, resp: &Response) -> Delivery {
        let mut out = http::Response::new(());
        *out.status_mut() =
            http::StatusCode::from_u16(resp.status).unwrap_or(http::StatusCode::BAD_GATEWAY);
        // Sized once: a map grown header by header reallocates and rehashes.
        *out.headers_mut() = http::HeaderMap::with_capacity(head.headers.len() + 2);
        let recode = match &mut self.compress {
            Some(c) => c.decide(head, resp),
            None => Recode::default(),
        };
        let headers = out.headers_mut();
        for h in head.headers.iter().filter(|h| !head.conn.strips(h.name)) {
            if self.edits.as_ref().is_some_and(|e| e.rules.drops(h.name)) {
                continue;
            }
            match recode.coding.map(|_| response::field(h.name, h.value)) {
                Some(Field::Drop) => {}
                Some(Field::Weaken) => append(headers, b"etag", &[b"W/", h.value].concat()),
                _ => append(headers, h.name.as_bytes(), h.value),
            }
        }
        if let Some(e) = &self.edits {
            append_lines(headers, e.lines);
        }
        if recode != Recode::default() {
            let mut lines = Vec::new();
            response::put_lines(&mut lines, recode);
            append_lines(headers, &lines);
        }
        self.pending = Some(out);
        Delivery {
            dechunk: true,
            close: false,
        }
    }

    /// Adds a header to the prepared head.
    pub fn add_header(&mut self, name: &str, value: &[u8]) {
        if let Some(head) = &mut self.pending {
            append(head.headers_mut(), name.as_bytes(), value);
        }
    }

    /// Sends the prepared head, then the body read from `from` as DATA frames.
    pub async fn relay_response(
        &mut self,
        from: &mut Conn<ServerStream>,
        t: Transfer,
    ) -> Result<u64, TransferError> {
        let head = self.pending.take().unwrap_or_default();
        let empty = self.is_head || matches!(t.framing, Framing::None | Framing::Length(0));
        let mut send = self
            .respond
            .send_response(head, empty)
            .map_err(write_error)?;
        if empty {
            return Ok(0);
        }
        let t = Transfer { dechunk: true, ..t };
        if let Some(encoder) = self.compress.as_mut().and_then(|c| c.encoder.take()) {
            let mut data = Data { send };
            self.out.clear();
            let relayed = relay_compressed(from, &mut data, self.out, t, encoder);
            let sent = Box::pin(relayed).await?;
            data.end().map_err(TransferError::Write)?;
            return Ok(sent);
        }
        // A body already read whole (most small responses) goes as one DATA frame that
        // ends the stream, without a copy.
        if let Framing::Length(n) = t.framing {
            if from.buf.len() as u64 >= n {
                let body = from.buf.split_to(n as usize).freeze();
                send.send_data(body, true).map_err(write_error)?;
                return Ok(n);
            }
        }
        let mut data = Data { send };
        self.out.clear();
        let sent = relay(from, &mut data, self.out, t).await?;
        data.end().map_err(TransferError::Write)?;
        Ok(sent)
    }

    /// Writes `head` to the server, then the request body from the stream's DATA
    /// frames: as they are for a known length, chunked otherwise. What completes the
    /// request for the server (the last bytes of a known length, the last chunk) is
    /// written only once the stream has ended well: a stream reset at its end (trailers
    /// that make it malformed) leaves the server an incomplete request, never a whole one.
    pub async fn send_request_body<W: AsyncWrite + Unpin>(
        &mut self,
        head: &[u8],
        to: &mut W,
        t: Transfer,
    ) -> Result<(), TransferError> {
        write_all(to, head, t.write_timeout)
            .await
            .map_err(TransferError::Write)?;
        let mut left = match t.framing {
            Framing::None => return Ok(()),
            Framing::Length(n) => Some(n),
            _ => None,
        };
        let mut last = Bytes::new();
        while let Some(data) = self.next_data(t.read_timeout).await? {
            if let Some(n) = left.as_mut() {
                *n = n
                    .checked_sub(data.len() as u64)
                    .ok_or_else(|| too_long(t))?;
                if *n == 0 {
                    last = data;
                    continue;
                }
            }
            self.out.clear();
            frame(self.out, &data, left.is_none());
            write_all(to, self.out, t.write_timeout)
                .await
                .map_err(TransferError::Write)?;
        }
        let end: &[u8] = match left {
            Some(0) => &last,
            Some(_) => return Err(TransferError::Read(io::ErrorKind::UnexpectedEof.into())),
            None => b"0\r\n\r\n",
        };
        write_all(to, end, t.write_timeout)
            .await
            .map_err(TransferError::Write)
    }

    /// The stream's next DATA (its window released), `None` at its end, within `limit`.
    async fn next_data(&mut self, limit: Duration) -> Result<Option<Bytes>, TransferError> {
        let next = poll_fn(|cx| self.recv.poll_data(cx));
        match tokio::time::timeout(limit, next).await {
            Err(_) => Err(TransferError::Read(io::ErrorKind::TimedOut.into())),
            Ok(Some(Ok(data))) => {
                let _ = self.recv.flow_control().release_capacity(data.len());
                Ok(Some(data))
            }
            Ok(Some(Err(e))) => Err(TransferError::Read(io::Error::other(e))),
            Ok(None) => Ok(None),
        }
    }

    /// Sluice's own error reply; a stream whose response has begun is reset instead.
    pub fn send_error(&mut self, status: u16, extra: Option<Extra<'_>>) -> bool {
        let mut head = http::Response::new(());
        *head.status_mut() =
            http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_GATEWAY);
        let plain = HeaderValue::from_static("text/plain");
        head.headers_mut().insert(http::header::CONTENT_TYPE, plain);
        if let Some(extra) = extra {
            let name = match extra {
                Extra::RetryAfter(_) => http::header::RETRY_AFTER,
                Extra::Authenticate(_) => http::header::WWW_AUTHENTICATE,
            };
            if let Ok(value) = HeaderValue::from_bytes(extra.header().1.as_bytes()) {
                head.headers_mut().insert(name, value);
            }
        }
        let text = format!("{status} {}\n", reply::reason(status));
        match self.respond.send_response(head, self.is_head) {
            Ok(mut send) if !self.is_head => send.send_data(Bytes::from(text), true).is_ok(),
            Ok(_) => true,
            Err(_) => {
                self.respond.send_reset(h2::Reason::INTERNAL_ERROR);
                false
            }
        }
    }

    /// Sends an answer of sluice's own: `head` is a whole HTTP/1.1 head (`answer`).
    pub async fn send_local(&mut self, head: &[u8], body: files::Body) -> io::Result<u64> {
        let response = h1_head_to_h2(head)?;
        let empty = self.is_head || matches!(body, files::Body::None);
        let send = self
            .respond
            .send_response(response, empty)
            .map_err(io::Error::other)?;
        if empty {
            return Ok(0);
        }
        let mut data = Data { send };
        let sent = match body {
            files::Body::None => 0,
            files::Body::Bytes(b) => {
                write_all(&mut data, &b, self.timeout).await?;
                b.len() as u64
            }
            files::Body::File { file, offset, len } => {
                send_file(&mut data, (&file, offset, len), self.out, self.timeout).await?
            }
        };
        data.end()?;
        Ok(sent)
    }
}

fn write_error(e: h2::Error) -> TransferError {
    TransferError::Write(io::Error::other(e))
}

fn too_long(_: Transfer) -> TransferError {
    TransferError::Read(io::Error::new(
        io::ErrorKind::InvalidData,
        "more DATA than the request's content-length",
    ))
}

/// Appends `data` to `out`, as one chunk when `chunked`.
fn frame(out: &mut Vec<u8>, data: &[u8], chunked: bool) {
    if chunked {
        if data.is_empty() {
            return;
        }
        out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(data);
    }
}

/// Adds a header from raw bytes; names are lower-cased (HTTP/2 requires it), and a
/// name or value HTTP/2 cannot carry is left out.
fn append(headers: &mut http::HeaderMap, name: &[u8], value: &[u8]) {
    // `from_bytes` lower-cases the name itself.
    let name = HeaderName::from_bytes(name);
    if let (Ok(name), Ok(value)) = (name, HeaderValue::from_bytes(value)) {
        headers.append(name, value);
    }
}

/// Adds `Name: value\r\n` lines.
fn append_lines(headers: &mut http::HeaderMap, lines: &[u8]) {
    for line in lines.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Some(colon) = line.iter().position(|b| *b == b':') {
            append(headers, &line[..colon], line[colon + 1..].trim_ascii());
        }
    }
}

/// An HTTP/1.1 response head of sluice's own, as an HTTP/2 response head.
fn h1_head_to_h2(head: &[u8]) -> io::Result<http::Response<()>> {
    let mut fields = [httparse::EMPTY_HEADER; 32];
    let mut parsed = httparse::Response::new(&mut fields);
    parsed
        .parse(head)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let status = parsed.code.unwrap_or(500);
    let mut out = http::Response::new(());
    *out.status_mut() = http::StatusCode::from_u16(status)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    for h in parsed.headers.iter() {
        if !h.name.eq_ignore_ascii_case("connection") {
            append(out.headers_mut(), h.name.as_bytes(), h.value);
        }
    }
    Ok(out)
}

/// A stream's DATA frames as a byte sink: a write waits for flow-control capacity and
/// sends what fits.
struct Data {
    send: SendStream<Bytes>,
}

impl Data {
    /// Ends the stream (an empty DATA frame with END_STREAM).
    fn end(&mut self) -> io::Result<()> {
        self.send
            .send_data(Bytes::new(), true)
            .map_err(io::Error::other)
    }
}

impl AsyncWrite for Data {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let want = buf.len().min(CHUNK);
        if self.send.capacity() == 0 {
            self.send.reserve_capacity(want);
        }
        loop {
            let have = self.send.capacity();
            if have > 0 {
                let n = have.min(want);
                let bytes = Bytes::copy_from_slice(&buf[..n]);
                self.send
                    .send_data(bytes, false)
                    .map_err(io::Error::other)?;
                return Poll::Ready(Ok(n));
            }
            match ready!(self.send.poll_capacity(cx)) {
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Poll::Ready(Err(io::Error::other(e))),
                None => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.end())
    }
}
