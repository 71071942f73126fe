//! A virtual user's WebSocket (tokio-tungstenite): the handshake, sending text, and a
//! reader task that runs beside the user's steps, since messages arrive whenever the
//! server sends them, also while the user thinks. STOMP MESSAGE frames with a marker go
//! straight to the step's [`Deliveries`]; everything else waits in a small inbox for the
//! step that expects it.

use crate::delivery::Deliveries;
use crate::stomp;
use crate::tls::ClientStream;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;

/// Messages kept for a step to expect; older ones are dropped beyond this, so a server
/// that pushes what no step reads cannot grow the generator without bound.
const INBOX_CAP: usize = 256;
/// Small buffers: 10,000 idle users must not cost 128 KiB each (tungstenite's default).
const BUFFER: usize = 4096;

type Socket = WebSocketStream<ClientStream>;

/// Why a WebSocket could not be opened or used. Its `Display` is the error kind reports
/// count by, so a tungstenite error is part of the words rather than a `source()` (a
/// chain would print it twice).
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("websocket request: {0}")]
    Request(WsError),
    #[error("bad header name {0:?}")]
    HeaderName(String),
    #[error("bad header value {0:?}")]
    HeaderValue(String),
    /// The server answered the upgrade with a status of its own, not 101.
    #[error("status {0}")]
    Rejected(u16),
    #[error("websocket: {0}")]
    Handshake(WsError),
    #[error("websocket send: {0}")]
    Send(WsError),
    #[error("websocket close: {0}")]
    Close(WsError),
    /// A wait found the connection closed with nothing left to read.
    #[error("websocket closed")]
    Closed,
}

/// What arrived and was not a marked STOMP message.
#[derive(Debug)]
pub enum Incoming {
    Text(String),
    Frame(stomp::Frame),
}

/// Received messages waiting for a step; shared with the reader task.
#[derive(Default)]
pub struct Inbox {
    items: RefCell<VecDeque<Incoming>>,
    arrived: Notify,
    closed: Cell<bool>,
    /// Parse text as STOMP frames (after a CONNECT step).
    pub stomp: Cell<bool>,
    /// Bytes received, for the report.
    pub bytes_in: Cell<u64>,
}

impl Inbox {
    fn push(&self, item: Incoming) {
        let mut items = self.items.borrow_mut();
        if items.len() == INBOX_CAP {
            items.pop_front();
        }
        items.push_back(item);
        self.arrived.notify_one();
    }

    /// Takes messages until `accept` says what to do with one: `Some(result)` ends the
    /// wait with it; `None` drops the message and goes on. Errors with
    /// [`SocketError::Closed`] once the connection closed with nothing left. Generic in
    /// the error so that `accept` can refuse a message in the caller's own terms.
    pub async fn wait_for<T, E: From<SocketError>>(
        &self,
        mut accept: impl FnMut(&Incoming) -> Option<Result<T, E>>,
    ) -> Result<T, E> {
        loop {
            let next = self.items.borrow_mut().pop_front();
            match next {
                Some(item) => {
                    if let Some(done) = accept(&item) {
                        return done;
                    }
                }
                None if self.closed.get() => return Err(SocketError::Closed.into()),
                None => self.arrived.notified().await,
            }
        }
    }
}

/// The user's open WebSocket.
pub struct WsConn {
    sink: SplitSink<Socket, Message>,
    pub inbox: Rc<Inbox>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for WsConn {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl WsConn {
    /// Connects to `addr` and upgrades `GET path` (with `headers`) to a WebSocket;
    /// `user` is who receives what arrives on it.
    pub async fn open(
        stream: ClientStream,
        authority: &str,
        path: &str,
        headers: &[(String, String)],
        user: u32,
        deliveries: Arc<Deliveries>,
    ) -> Result<WsConn, SocketError> {
        let mut request = format!("ws://{authority}{path}")
            .into_client_request()
            .map_err(SocketError::Request)?;
        for (name, value) in headers {
            let name = http_name(name)?;
            let value = value
                .parse()
                .map_err(|_| SocketError::HeaderValue(value.clone()))?;
            request.headers_mut().append(name, value);
        }
        let config = WebSocketConfig::default()
            .read_buffer_size(BUFFER)
            .write_buffer_size(0);
        let (socket, _) =
            tokio_tungstenite::client_async_with_config(request, stream, Some(config))
                .await
                .map_err(handshake_error)?;
        let (sink, stream) = socket.split();
        let inbox = Rc::new(Inbox::default());
        let reader = tokio::task::spawn_local(read(stream, inbox.clone(), user, deliveries));
        Ok(WsConn {
            sink,
            inbox,
            reader,
        })
    }

    /// Sends one text message; returns its size.
    pub async fn send(&mut self, text: String) -> Result<u64, SocketError> {
        let n = text.len() as u64;
        self.sink
            .send(Message::text(text))
            .await
            .map_err(SocketError::Send)?;
        Ok(n)
    }

    /// Sends a close frame; the reader ends when the server answers it.
    pub async fn close(&mut self) -> Result<(), SocketError> {
        self.sink.close().await.map_err(SocketError::Close)
    }
}

fn http_name(name: &str) -> Result<tokio_tungstenite::tungstenite::http::HeaderName, SocketError> {
    name.parse()
        .map_err(|_| SocketError::HeaderName(name.into()))
}

/// A refused upgrade counts by its status, as an HTTP request's failure does.
fn handshake_error(e: WsError) -> SocketError {
    match e {
        WsError::Http(response) => SocketError::Rejected(response.status().as_u16()),
        e => SocketError::Handshake(e),
    }
}

/// The reader task: until the connection ends, hands each message to the deliveries
/// or the inbox. When it ends, the user can receive nothing more.
async fn read(
    mut stream: SplitStream<Socket>,
    inbox: Rc<Inbox>,
    user: u32,
    deliveries: Arc<Deliveries>,
) {
    while let Some(Ok(message)) = stream.next().await {
        let text = match message {
            Message::Text(t) => t.as_str().to_owned(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            Message::Close(_) => break,
            _ => continue,
        };
        inbox.bytes_in.set(inbox.bytes_in.get() + text.len() as u64);
        if inbox.stomp.get() {
            take_frames(&text, &inbox, user, &deliveries);
        } else {
            inbox.push(Incoming::Text(text));
        }
    }
    inbox.closed.set(true);
    inbox.arrived.notify_one();
    deliveries.leave(user);
}

fn take_frames(text: &str, inbox: &Inbox, user: u32, deliveries: &Deliveries) {
    let now = Instant::now();
    for frame in stomp::frames(text) {
        match frame {
            Ok(f) if f.command == "MESSAGE" => match stomp::find_marker(&f.body) {
                Some((sender, seq)) => deliveries.arrived(sender, seq, user, now),
                None => inbox.push(Incoming::Frame(f)),
            },
            Ok(f) => inbox.push(Incoming::Frame(f)),
            // A broken frame is kept as text: a step expecting a frame sees an error.
            Err(e) => inbox.push(Incoming::Text(format!("malformed STOMP frame: {e}"))),
        }
    }
}
