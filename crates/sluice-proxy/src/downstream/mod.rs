//! The client side of a request: the one type the forwarding stages talk to the client
//! through, an HTTP/1 connection or an HTTP/2 stream, so `forward` and `upstream` never
//! write to a client socket themselves.

pub mod buffers;
pub mod h1;
pub mod h2;

use crate::compress::encoder::Encoder;
use crate::compress::{response, Plan, Recode};
use crate::failure::Failure;
use crate::http1::encode::Delivery;
use crate::http1::head::Framing;
use crate::http1::reply::Extra;
use crate::http1::response::{Response, ResponseHead};
use crate::io::body::{Transfer, TransferError};
use crate::io::tunnel::End;
use crate::io::{Conn, ServerStream, Stream};
use h1::Http1;
use std::future::Future;
use std::time::Duration;
use tokio::io::AsyncWrite;

/// A compressing route's settings and the request's plan while the response head is
/// prepared; then the encoder of its body, when it is compressed.
pub struct Compressing<'a> {
    pub config: &'a sluice_config::Compress,
    pub plan: Plan,
    pub encoder: Option<Box<Encoder>>,
}

impl<'a> Compressing<'a> {
    pub fn new(config: &'a sluice_config::Compress, plan: Plan) -> Self {
        Compressing {
            config,
            plan,
            encoder: None,
        }
    }

    /// What the route does to the final response `resp`; its body's encoder is made
    /// here when it is compressed.
    pub fn decide(&mut self, head: &ResponseHead<'_, '_>, resp: &Response) -> Recode {
        let length = match resp.framing {
            Framing::Length(n) => Some(n),
            _ => None,
        };
        // An empty body stays empty: a coding's header alone is no body to decode.
        let body =
            resp.framing != Framing::None && length != Some(0) && !resp.upgraded && !resp.interim;
        let facts = (resp.status, length, body);
        let mut recode = response::recode(self.config, self.plan, facts, head.headers);
        if let Some(coding) = recode.coding {
            let level = coding.level(self.config).unwrap_or(1);
            match Encoder::new(coding, level, length) {
                Ok(encoder) => self.encoder = Some(Box::new(encoder)),
                Err(e) => {
                    tracing::warn!(coding = coding.token(), error = %e, "no encoder: the response goes uncompressed");
                    recode.coding = None;
                }
            }
        }
        recode
    }
}

/// The client of one request.
pub enum Downstream<'a, S> {
    Http1(Http1<'a, S>),
    Http2(h2::Http2<'a>),
}

impl<S: Stream> Downstream<'_, S> {
    pub async fn send_continue(&mut self) -> Result<(), Failure> {
        match self {
            Downstream::Http1(h) => h.send_continue().await,
            // HTTP/2 clients send their body at once (no `Expect` wait).
            Downstream::Http2(_) => Ok(()),
        }
    }

    pub fn prepare_interim(&mut self, head: &ResponseHead<'_, '_>, resp: &Response) -> bool {
        match self {
            Downstream::Http1(h) => h.prepare_interim(head, resp),
            // 1xx responses are not relayed over HTTP/2.
            Downstream::Http2(_) => false,
        }
    }

    pub async fn send_interim(&mut self) -> Result<(), Failure> {
        match self {
            Downstream::Http1(h) => h.send_interim().await,
            Downstream::Http2(_) => Ok(()),
        }
    }

    pub fn prepare_response(
        &mut self,
        head: &ResponseHead<'_, '_>,
        resp: &Response,
        keep_alive: bool,
    ) -> Delivery {
        match self {
            Downstream::Http1(h) => h.prepare_response(head, resp, keep_alive),
            Downstream::Http2(h) => h.prepare_response(head, resp),
        }
    }

    /// Adds a header to the prepared final response head (a sticky session's cookie).
    pub fn add_header(&mut self, name: &str, value: &[u8]) {
        match self {
            Downstream::Http1(h) => h.add_header(name, value),
            Downstream::Http2(h) => h.add_header(name, value),
        }
    }

    pub async fn send_request_body<W: AsyncWrite + Unpin>(
        &mut self,
        head: &[u8],
        to: &mut W,
        t: Transfer,
    ) -> Result<(), TransferError> {
        match self {
            Downstream::Http1(h) => h.send_request_body(head, to, t).await,
            Downstream::Http2(h) => h.send_request_body(head, to, t).await,
        }
    }

    pub async fn relay_response(
        &mut self,
        from: &mut Conn<ServerStream>,
        t: Transfer,
    ) -> Result<u64, TransferError> {
        match self {
            Downstream::Http1(h) => h.relay_response(from, t).await,
            Downstream::Http2(h) => h.relay_response(from, t).await,
        }
    }

    pub async fn tunnel(
        &mut self,
        upstream: &mut Conn<ServerStream>,
        idle: Duration,
        retired: impl Future<Output = ()>,
    ) -> Option<End> {
        match self {
            Downstream::Http1(h) => h.tunnel(upstream, idle, retired).await,
            // No upgrade reaches a server from an HTTP/2 stream (the protocol forbids
            // the header), so no server switches protocols on one.
            Downstream::Http2(_) => None,
        }
    }

    /// Sends an answer of sluice's own (`answer`): its whole head, then its body.
    /// Returns the bytes sent.
    pub async fn send_local(
        &mut self,
        head: &[u8],
        body: crate::files::Body,
    ) -> std::io::Result<u64> {
        match self {
            Downstream::Http1(h) => h.send_local(head, body).await,
            Downstream::Http2(h) => h.send_local(head, body).await,
        }
    }

    pub async fn send_error(&mut self, status: u16, close: bool) -> bool {
        self.send_error_after(status, close, None).await
    }

    /// [`Downstream::send_error`] with a header more: when to come back, or how to log
    /// in.
    pub async fn send_error_after(
        &mut self,
        status: u16,
        close: bool,
        extra: Option<Extra<'_>>,
    ) -> bool {
        match self {
            Downstream::Http1(h) => h.send_error(status, close, extra).await,
            Downstream::Http2(h) => h.send_error(status, extra),
        }
    }

    pub async fn conclude(&mut self, body_left: bool, keep_alive: bool) -> bool {
        match self {
            Downstream::Http1(h) => h.conclude(body_left, keep_alive).await,
            // The stream ends with its response; the connection goes on (a body left
            // unread is discarded by the stream's reset).
            Downstream::Http2(_) => true,
        }
    }

    /// The longest the client may pause while sending or receiving.
    pub fn timeout(&self) -> Duration {
        match self {
            Downstream::Http1(h) => h.timeout,
            Downstream::Http2(h) => h.timeout,
        }
    }
}
