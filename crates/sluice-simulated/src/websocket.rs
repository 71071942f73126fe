//! WebSocket on the simulated backend: the handshake (answered from hyper, so one port
//! serves HTTP and WebSocket), then an echo session or a STOMP session.

use crate::stomp::{self, Broker};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{combinators::BoxBody, BodyExt, Empty};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// True for a WebSocket handshake request.
pub fn is_handshake(req: &Request<Incoming>) -> bool {
    let upgrade = req
        .headers()
        .get("upgrade")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    upgrade && req.headers().contains_key("sec-websocket-key")
}

/// Answers the handshake with 101 and starts the session once hyper hands over the
/// connection: `/echo` echoes, anything else is a STOMP session when `stomp` is on.
pub fn accept(
    mut req: Request<Incoming>,
    stomp: bool,
    broker: Arc<Broker>,
    name: String,
) -> Response<BoxBody<Bytes, Infallible>> {
    let key = req
        .headers()
        .get("sec-websocket-key")
        .map(|k| derive_accept_key(k.as_bytes()))
        .unwrap_or_default();
    let offered = req
        .headers()
        .get_all("sec-websocket-protocol")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_string())
        .collect::<Vec<_>>();
    let stomp = stomp && req.uri().path() != "/echo";
    let protocol = offered
        .iter()
        .find(|p| p.starts_with('v') && p.ends_with(".stomp"))
        .filter(|_| stomp)
        .cloned();
    let upgrade = hyper::upgrade::on(&mut req);
    tokio::spawn(async move {
        let Ok(upgraded) = upgrade.await else { return };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        if stomp {
            stomp::session(ws, broker, name).await;
        } else {
            echo(ws).await;
        }
    });
    let mut reply = Response::new(Empty::new().boxed());
    *reply.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = reply.headers_mut();
    headers.insert("upgrade", "websocket".parse().expect("static header"));
    headers.insert("connection", "Upgrade".parse().expect("static header"));
    if let Ok(v) = key.parse() {
        headers.insert("sec-websocket-accept", v);
    }
    if let Some(v) = protocol.and_then(|p| p.parse().ok()) {
        headers.insert("sec-websocket-protocol", v);
    }
    reply
}

/// Sends every text or binary message back.
async fn echo<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(ws: WebSocketStream<S>) {
    let (mut sink, mut stream) = ws.split();
    while let Some(Ok(message)) = stream.next().await {
        let data = matches!(message, Message::Text(_) | Message::Binary(_));
        if matches!(message, Message::Close(_)) || (data && sink.send(message).await.is_err()) {
            return;
        }
    }
}
