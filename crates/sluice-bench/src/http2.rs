//! HTTP/2 (`--h2`): a worker thread's connections, each carrying up to `--streams`
//! requests at once (h2load's `-m`), and one exchange as a stream on one of them.
//!
//! Users (closed model) and in-flight requests (open model) share the connections as a
//! browser's tabs do: a request takes a connection with a stream free, and a new one is
//! opened only when every connection is full. Over `https://` the protocol is chosen by
//! ALPN (h2 only is offered); over `http://` it is h2c with prior knowledge. The client
//! is the `h2` crate, not the proxy's code (the proxy's server side uses the same crate,
//! so a parse bug there would not hide here: the frames are the crate's on both sides,
//! and the proxy's own HTTP/2 checks are its, not the crate's).
//!
//! A connection the server ends with GOAWAY, and a stream it resets, are counted as
//! such, in the error kinds and in the step's connection figures: never hidden behind a
//! retry.

use crate::conn::{open_stream, ExchangeError};
use crate::target::{RequestSpec, Target};
use crate::tls::Handshake;
use bytes::Bytes;
use h2::client::SendRequest;
use rustls::ClientConfig;
use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Windows large enough that flow control is not what a benchmark measures (h2load's
/// defaults are 1 GiB for the connection and 64 KiB per stream; this is in between).
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 1 << 24;

/// The most a response's header fields may take, decoded (HTTP/1.1's head limit; h2's
/// default is 16 MiB).
const MAX_HEADER_LIST: u32 = 256 << 10;

/// What went wrong in an HTTP/2 exchange, counted by kind like HTTP/1's errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum H2Error {
    #[error(transparent)]
    Exchange(#[from] ExchangeError),
    /// The server ended the connection (GOAWAY) before this stream's response.
    #[error("h2: GOAWAY ({0})")]
    GoAway(String),
    /// The server reset the stream (RST_STREAM).
    #[error("h2: RST_STREAM ({0})")]
    Reset(String),
    /// The TLS server chose another protocol than h2 (or none).
    #[error("h2: the server did not choose h2 by ALPN")]
    NoAlpn,
    #[error("h2: {0}")]
    Protocol(String),
}

impl H2Error {
    fn of(e: &h2::Error) -> H2Error {
        let reason = || e.reason().map_or("-".to_string(), |r| format!("{r:?}"));
        // A GOAWAY or reset this client sent itself is the server's bytes breaking the
        // protocol (an HTTP/1 server answering the preface, say), not the server's word.
        if e.is_go_away() && e.is_remote() {
            H2Error::GoAway(reason())
        } else if e.is_reset() && e.is_remote() {
            H2Error::Reset(reason())
        } else if e.reason() == Some(h2::Reason::FRAME_SIZE_ERROR) {
            // What an HTTP/1.1 answer to HTTP/2's preface reads as: `HTTP/1.1 400`
            // taken for a frame's header gives a length past any limit.
            H2Error::Protocol(
                "the server broke the protocol (FRAME_SIZE_ERROR: an HTTP/1.1 server's \
                 answer reads so; does it speak HTTP/2?)"
                    .to_string(),
            )
        } else if e.is_go_away() || e.is_reset() {
            H2Error::Protocol(format!("the server broke the protocol ({})", reason()))
        } else if e.is_io() {
            H2Error::Exchange(ExchangeError::Closed)
        } else {
            H2Error::Protocol(e.to_string())
        }
    }
}

/// One HTTP/2 connection of a worker, or one being opened.
struct H2Conn {
    send: RefCell<Option<SendRequest<Bytes>>>,
    /// Streams taken on it (the request that opens it counts).
    active: Cell<usize>,
    /// Set when the connection is open, or failed to open.
    ready: Notify,
    /// It could not be opened, or it ended: new requests go elsewhere.
    closed: Cell<bool>,
    /// Why it could not be opened, for the requests that waited for it.
    failed: RefCell<Option<H2Error>>,
    /// When the connection's task last read and handled frames: a stream that ended
    /// then is stamped complete at that moment, not when its request's task runs after
    /// the others of a burst (see [`finish`]).
    read_at: Cell<Instant>,
    /// Streams queued and not yet written: the connection's task stamps them when it
    /// next runs, which is when their frames go to the socket (see [`start`]).
    unsent: RefCell<Vec<Rc<Cell<Option<Instant>>>>>,
}

/// A worker thread's HTTP/2 connections.
pub struct H2Pool {
    conns: RefCell<Vec<Rc<H2Conn>>>,
    streams: usize,
    /// Connections the server ended with GOAWAY.
    pub goaways: Rc<Cell<u64>>,
}

/// A stream taken on a connection: given back when dropped.
struct Taken(Rc<H2Conn>);

impl Drop for Taken {
    fn drop(&mut self) {
        self.0.active.set(self.0.active.get() - 1);
    }
}

/// A connection being opened; dropped while it is not open (its opener given up, or the
/// open failed), it is marked closed and the requests waiting on it are woken.
struct Abandoned(Rc<H2Conn>);

impl Drop for Abandoned {
    fn drop(&mut self) {
        if self.0.send.borrow().is_none() {
            self.0.closed.set(true);
            self.0.ready.notify_waiters();
        }
    }
}

/// What an exchange gave: the status (and a redirect's `Location`), body bytes, and
/// when it was sent and ended.
pub struct H2Reply {
    pub status: u16,
    pub location: Option<String>,
    pub bytes_in: u64,
    pub written: Instant,
    pub completed: Instant,
}

impl H2Pool {
    /// A pool whose connections carry at most `streams` requests at once.
    pub fn new(streams: usize) -> H2Pool {
        H2Pool {
            conns: RefCell::default(),
            streams: streams.max(1),
            goaways: Rc::default(),
        }
    }

    /// Sends `request` on a connection with a stream free (opening one, from `connect`'s
    /// TLS config and source address, if none has); returns the reply and, if a
    /// connection was opened for it, its start and handshake.
    pub async fn exchange(
        &self,
        (request, target): (&H2Request, &Target),
        connect: (Option<&Arc<ClientConfig>>, Option<IpAddr>),
    ) -> Result<(H2Reply, Option<Opened>), H2Error> {
        let mut opened = None;
        // A connection the server is closing (GOAWAY) refuses new streams before they
        // are sent: the request goes on another connection, as a browser's would. Once
        // sent, whatever happens to it is its outcome. Each refusal marks its connection
        // closed, so the tries end at a connection opened for this request (a server
        // draining closes all of a client's connections at once: two tries were not
        // always enough). A new connection that refuses too is the outcome.
        loop {
            let (conn, opens) = self.take();
            let _taken = Taken(conn.clone());
            if opens {
                // Given up (a timeout, the run interrupted) before the connection is
                // open, it is closed for the requests waiting on it, not left to hang.
                let _abandoned = Abandoned(conn.clone());
                opened = Some(Box::pin(self.open(&conn, target, connect)).await?);
            } else {
                self.wait_open(&conn).await?;
            }
            let send = conn.send.borrow().clone();
            if let Some(send) = send {
                let (head, body) = request.parts();
                match start(send, head, body, &conn).await {
                    Ok((response, written)) => {
                        return Ok((finish(response, &written, &conn).await?, opened));
                    }
                    Err(e) if e.is_go_away() || e.is_io() => conn.closed.set(true),
                    Err(e) => return Err(H2Error::of(&e)),
                }
            }
            if opens {
                return Err(H2Error::Exchange(ExchangeError::Closed));
            }
        }
    }

    /// A connection with a stream free, the stream taken; true when the caller must
    /// open it.
    fn take(&self) -> (Rc<H2Conn>, bool) {
        let mut conns = self.conns.borrow_mut();
        conns.retain(|c| !c.closed.get() || c.active.get() > 0);
        let free = conns
            .iter()
            .find(|c| !c.closed.get() && c.active.get() < self.streams);
        if let Some(c) = free {
            c.active.set(c.active.get() + 1);
            return (c.clone(), false);
        }
        let c = Rc::new(H2Conn {
            send: RefCell::new(None),
            active: Cell::new(1),
            ready: Notify::new(),
            closed: Cell::new(false),
            failed: RefCell::new(None),
            read_at: Cell::new(Instant::now()),
            unsent: RefCell::default(),
        });
        conns.push(c.clone());
        (c, true)
    }

    /// Waits for a connection another request is opening.
    async fn wait_open(&self, conn: &H2Conn) -> Result<(), H2Error> {
        loop {
            let ready = conn.ready.notified();
            if conn.send.borrow().is_some() {
                return Ok(());
            }
            if let Some(e) = conn.failed.borrow().clone() {
                return Err(e);
            }
            if conn.closed.get() {
                return Err(H2Error::Exchange(ExchangeError::Closed));
            }
            ready.await;
        }
    }

    /// Opens `conn` (TCP, TLS with ALPN h2 for `https://`, the HTTP/2 handshake) and
    /// drives it on this thread until it ends.
    async fn open(
        &self,
        conn: &Rc<H2Conn>,
        target: &Target,
        (tls, source): (Option<&Arc<ClientConfig>>, Option<IpAddr>),
    ) -> Result<Opened, H2Error> {
        let started = Instant::now();
        let opened = handshake(target, tls, source).await;
        let (send, driver, handshake) = match opened {
            Ok(parts) => parts,
            Err(e) => {
                conn.closed.set(true);
                *conn.failed.borrow_mut() = Some(e.clone());
                conn.ready.notify_waiters();
                return Err(e);
            }
        };
        *conn.send.borrow_mut() = Some(send);
        conn.ready.notify_waiters();
        let (ended, goaways) = (conn.clone(), self.goaways.clone());
        tokio::task::spawn_local(async move {
            // The handles to send on are kept until it ends, to ask them why.
            let mut driver = driver;
            let result = std::future::poll_fn(|cx| {
                let now = Instant::now();
                for stamp in ended.unsent.borrow_mut().drain(..) {
                    stamp.set(Some(now));
                }
                let polled = std::future::Future::poll(std::pin::Pin::new(&mut driver), cx);
                ended.read_at.set(Instant::now());
                polled
            })
            .await;
            if ended_by_goaway(&result, ended.send.borrow_mut().as_mut()) {
                goaways.set(goaways.get() + 1);
            }
            ended.closed.set(true);
            *ended.send.borrow_mut() = None;
        });
        Ok(Opened { started, handshake })
    }
}

/// Whether the server ended a connection with GOAWAY: its driver's `result`, or, when
/// the connection ended without an error of its own (a GOAWAY with NO_ERROR, then the
/// streams in flight finished; or the server closed the socket with none in flight), the
/// error its handle to send on now answers (the GOAWAY's, or the closed socket's). A
/// GOAWAY this client sent, for bytes that broke the protocol, is not the server's.
fn ended_by_goaway(result: &Result<(), h2::Error>, send: Option<&mut SendRequest<Bytes>>) -> bool {
    let by_server = |e: &h2::Error| e.is_go_away() && e.is_remote();
    match (result, send) {
        (Err(e), _) => by_server(e),
        (Ok(()), Some(send)) => {
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            matches!(send.poll_ready(&mut cx), std::task::Poll::Ready(Err(e)) if by_server(&e))
        }
        (Ok(()), None) => false,
    }
}

/// When a stream was written: set by its connection's task when it next runs after the
/// stream was queued, or the moment it was queued if it never ran since.
struct Written {
    queued: Instant,
    stamp: Rc<Cell<Option<Instant>>>,
}

impl Written {
    fn at(&self) -> Instant {
        self.stamp.get().unwrap_or(self.queued)
    }
}

/// Starts a stream: waits for the connection to take one, then queues the request (and
/// its body) for the connection's task to write. Returns the response to come, and the
/// stamp of its write: in a burst, every request of the batch is queued before any
/// connection's task runs, and stamping a request as it queues would count the
/// generator's work on the rest of the batch in its latency (h2load stamps a request as
/// it submits it, then writes it in the same turn of its loop).
async fn start(
    send: SendRequest<Bytes>,
    request: http::Request<()>,
    body: Bytes,
    conn: &H2Conn,
) -> Result<(h2::client::ResponseFuture, Written), h2::Error> {
    let mut send = send.ready().await?;
    let written = Written {
        queued: Instant::now(),
        stamp: Rc::default(),
    };
    let (response, mut stream) = send.send_request(request, body.is_empty())?;
    if !body.is_empty() {
        stream.send_data(body, true)?;
    }
    conn.unsent.borrow_mut().push(written.stamp.clone());
    Ok((response, written))
}

/// The rest of a stream: the response head, then its body to the end. It is complete
/// when the connection's task handled its last frame (`read_at` after the body ended):
/// the streams of a burst are read together, then each request's task runs in turn, and
/// stamping them as they run would count the generator's own work on the burst in
/// their latency (h2load stamps them as it reads the frames, too).
async fn finish(
    response: h2::client::ResponseFuture,
    written: &Written,
    conn: &H2Conn,
) -> Result<H2Reply, H2Error> {
    let response = response.await.map_err(|e| H2Error::of(&e))?;
    let status = response.status().as_u16();
    let location = (300..400)
        .contains(&status)
        .then(|| response.headers().get(http::header::LOCATION))
        .flatten()
        .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
    let mut body = response.into_body();
    let mut bytes_in = 0;
    while let Some(data) = body.data().await {
        let data = data.map_err(|e| H2Error::of(&e))?;
        bytes_in += data.len() as u64;
        let _ = body.flow_control().release_capacity(data.len());
    }
    let written = written.at();
    Ok(H2Reply {
        status,
        location,
        bytes_in,
        written,
        completed: conn.read_at.get().max(written),
    })
}

/// A connection opened for a request: when its connect began, and its TLS handshake.
pub struct Opened {
    pub started: Instant,
    pub handshake: Option<Handshake>,
}

type Driver = h2::client::Connection<crate::tls::ClientStream, Bytes>;

/// A new HTTP/2 connection to `target`: the handle to send on, the connection to
/// drive, and its TLS handshake.
async fn handshake(
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
    source: Option<IpAddr>,
) -> Result<(SendRequest<Bytes>, Driver, Option<Handshake>), H2Error> {
    let (stream, handshake) = open_stream(target, tls, source).await?;
    if handshake.is_some() && crate::tls::alpn(&stream) != Some(b"h2") {
        return Err(H2Error::NoAlpn);
    }
    let (send, driver) = h2::client::Builder::new()
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONNECTION_WINDOW)
        .max_header_list_size(MAX_HEADER_LIST)
        .handshake(stream)
        .await
        .map_err(|e| H2Error::of(&e))?;
    Ok((send, driver, handshake))
}

/// A request of the plan as HTTP/2 sends it, made once per worker thread: `:authority`
/// from its `Host`, none of HTTP/1's connection headers (RFC 9113 8.2.2). Each stream
/// takes a copy (the URI and body are shared bytes; the header map is copied).
pub struct H2Request {
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
}

impl H2Request {
    pub fn new(spec: &RequestSpec) -> Result<H2Request, H2Error> {
        let bad = |e: String| H2Error::Protocol(format!("request: {e}"));
        let target = &spec.target;
        let scheme = if target.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let host = spec
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("host"))
            .map_or(target.authority.as_str(), |(_, v)| v.as_str());
        let uri = format!("{scheme}://{host}{}", target.path);
        let mut headers = http::HeaderMap::new();
        for (name, value) in &spec.headers {
            if CONNECTION_HEADERS
                .iter()
                .any(|h| name.eq_ignore_ascii_case(h))
            {
                continue;
            }
            let name = http::HeaderName::try_from(name.as_str()).map_err(|e| bad(e.to_string()))?;
            let value =
                http::HeaderValue::try_from(value.as_str()).map_err(|e| bad(e.to_string()))?;
            headers.append(name, value);
        }
        Ok(H2Request {
            method: http::Method::try_from(spec.method.as_str()).map_err(|e| bad(e.to_string()))?,
            uri: uri
                .parse()
                .map_err(|e: http::uri::InvalidUri| bad(e.to_string()))?,
            headers,
            body: Bytes::from(spec.body.clone()),
        })
    }

    /// The head and body of one stream.
    fn parts(&self) -> (http::Request<()>, Bytes) {
        let mut request = http::Request::new(());
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        (request, self.body.clone())
    }
}

/// HTTP/1.1 headers HTTP/2 forbids (and `Host`, which becomes `:authority`).
const CONNECTION_HEADERS: [&str; 6] = [
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_drop_connection_headers_and_carry_the_authority() {
        let target = Target::parse("http://127.0.0.1:8080/a?b=1").unwrap();
        let headers = [
            "Host: shop.test".to_string(),
            "Connection: keep-alive".to_string(),
            "X-Trace: 1".to_string(),
        ];
        let spec = RequestSpec::new("POST", target, &headers, b"hi".to_vec()).unwrap();
        let (request, body) = H2Request::new(&spec).unwrap().parts();
        assert_eq!(request.uri(), "http://shop.test/a?b=1");
        assert_eq!(request.method(), "POST");
        assert!(request.headers().get("connection").is_none());
        assert!(request.headers().get("host").is_none());
        assert_eq!(request.headers()["x-trace"], "1");
        assert_eq!(&body[..], b"hi");
    }

    #[test]
    fn a_full_connection_makes_the_next_request_open_another() {
        let pool = H2Pool::new(2);
        let (a, opens_a) = pool.take();
        let (b, opens_b) = pool.take();
        let (c, opens_c) = pool.take();
        assert!(opens_a && !opens_b && opens_c);
        assert!(Rc::ptr_eq(&a, &b) && !Rc::ptr_eq(&a, &c));
        // A stream given back makes room on the first connection again.
        drop(Taken(b));
        let (d, opens_d) = pool.take();
        assert!(!opens_d && Rc::ptr_eq(&a, &d));
    }

    #[test]
    fn a_connection_whose_opener_gave_up_is_not_waited_on() {
        let pool = H2Pool::new(10);
        let (a, opens) = pool.take();
        assert!(opens);
        // Its opener timed out: dropped mid-open, with another request waiting on it.
        drop(Abandoned(a.clone()));
        assert!(a.closed.get());
        let (b, opens) = pool.take();
        assert!(
            opens && !Rc::ptr_eq(&a, &b),
            "a new connection, not the abandoned one"
        );
    }
}
