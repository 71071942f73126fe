//! A minimal STOMP 1.2 broker over WebSocket, held in memory by one backend.
//!
//! Deliberately not shared between backend instances, like Spring's simple broker: a
//! message sent to one instance reaches only that instance's subscribers. That is what
//! makes a chat room split across servers lose messages, and why rooms need consistent
//! hashing in front of them. Commands: CONNECT/STOMP -> CONNECTED, SUBSCRIBE,
//! UNSUBSCRIBE, SEND -> MESSAGE to the destination's subscribers, RECEIPT for any frame
//! with a `receipt` header, DISCONNECT, heart-beats, and ERROR for malformed input.

use futures_util::{SinkExt, StreamExt};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

/// A parsed STOMP frame.
#[derive(Debug, PartialEq, Eq)]
pub struct Frame {
    pub command: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Frame {
    pub fn new(command: &str) -> Self {
        Frame {
            command: command.to_string(),
            headers: Vec::new(),
            body: String::new(),
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The frame as text, NUL-terminated, header values escaped (STOMP 1.2).
    pub fn encode(&self) -> String {
        let escape = self.command != "CONNECT" && self.command != "CONNECTED";
        let mut out = format!("{}\n", self.command);
        for (name, value) in &self.headers {
            let value = if escape {
                value
                    .replace('\\', "\\\\")
                    .replace('\n', "\\n")
                    .replace(':', "\\c")
                    .replace('\r', "\\r")
            } else {
                value.clone()
            };
            out.push_str(&format!("{name}:{value}\n"));
        }
        out.push('\n');
        out.push_str(&self.body);
        out.push('\0');
        out
    }

    /// Parses one frame (without its NUL); `Err` says what is wrong.
    pub fn parse(text: &str) -> Result<Frame, String> {
        let text = text.trim_start_matches(['\r', '\n']);
        let (head, body) = text
            .split_once("\n\n")
            .or_else(|| text.split_once("\r\n\r\n"))
            .ok_or("no blank line after the headers")?;
        let mut lines = head.lines();
        let command = lines
            .next()
            .ok_or("no command")?
            .trim_end_matches('\r')
            .to_string();
        if command.is_empty() || !command.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(format!("bad command {command:?}"));
        }
        let escaped = command != "CONNECT" && command != "CONNECTED";
        let mut headers = Vec::new();
        for line in lines {
            let (name, value) = line
                .trim_end_matches('\r')
                .split_once(':')
                .ok_or_else(|| format!("bad header line {line:?}"))?;
            let value = if escaped {
                unescape(value)?
            } else {
                value.to_string()
            };
            headers.push((name.to_string(), value));
        }
        Ok(Frame {
            command,
            headers,
            body: body.to_string(),
        })
    }
}

fn unescape(value: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('c') => out.push(':'),
            Some('\\') => out.push('\\'),
            other => {
                return Err(format!(
                    "bad escape \\{}",
                    other.map(String::from).unwrap_or_default()
                ))
            }
        }
    }
    Ok(out)
}

/// One subscription: its session, its id within the session, and where its frames go.
type Subscriber = (u64, String, mpsc::UnboundedSender<Message>);

/// Subscriptions of one backend instance.
#[derive(Default)]
pub struct Broker {
    /// destination -> subscribers
    topics: Mutex<HashMap<String, Vec<Subscriber>>>,
    sessions: AtomicU64,
    messages: AtomicU64,
}

impl Broker {
    /// MESSAGE frames sent to subscribers so far.
    pub fn messages_out(&self) -> u64 {
        self.messages.load(Ordering::Relaxed)
    }

    fn subscribe(
        &self,
        destination: &str,
        session: u64,
        id: &str,
        outbox: mpsc::UnboundedSender<Message>,
    ) {
        let mut topics = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        topics
            .entry(destination.to_string())
            .or_default()
            .push((session, id.to_string(), outbox));
    }

    fn unsubscribe(&self, session: u64, id: Option<&str>) {
        let mut topics = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        for subs in topics.values_mut() {
            subs.retain(|(s, sub, _)| !(*s == session && id.is_none_or(|id| id == sub)));
        }
        topics.retain(|_, subs| !subs.is_empty());
    }

    fn publish(&self, destination: &str, body: &str, content_type: Option<&str>) {
        let topics = self.topics.lock().unwrap_or_else(|p| p.into_inner());
        for (_, sub, outbox) in topics.get(destination).into_iter().flatten() {
            let id = self.messages.fetch_add(1, Ordering::Relaxed);
            let mut frame = Frame::new("MESSAGE")
                .header("destination", destination)
                .header("message-id", &id.to_string())
                .header("subscription", sub);
            if let Some(t) = content_type {
                frame = frame.header("content-type", t);
            }
            frame.body = body.to_string();
            let _ = outbox.send(Message::text(frame.encode()));
        }
    }
}

/// Heart-beat the server can send and wants to receive, in ms.
const SERVER_BEAT_MS: u64 = 10_000;

/// Serves one STOMP session on `ws` until the client disconnects or errs.
pub async fn session<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    ws: WebSocketStream<S>,
    broker: Arc<Broker>,
    server: String,
) {
    let (mut sink, mut stream) = ws.split();
    let (outbox, mut queue) = mpsc::unbounded_channel::<Message>();
    let writer = tokio::spawn(async move {
        while let Some(m) = queue.recv().await {
            let close = matches!(m, Message::Close(_));
            if sink.send(m).await.is_err() || close {
                return;
            }
        }
    });
    let id = broker.sessions.fetch_add(1, Ordering::Relaxed);
    let mut session = Session {
        id,
        broker,
        outbox,
        server,
        beat: None,
    };
    while let Some(Ok(message)) = stream.next().await {
        let text = match message {
            Message::Text(t) => t.as_str().to_string(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            Message::Close(_) => break,
            _ => continue,
        };
        if session.receive(&text) {
            break;
        }
    }
    session.end();
    let _ = writer.await;
}

/// One client's session: its subscriptions live in the broker under `id`.
struct Session {
    id: u64,
    broker: Arc<Broker>,
    outbox: mpsc::UnboundedSender<Message>,
    server: String,
    beat: Option<tokio::task::JoinHandle<()>>,
}

impl Session {
    fn send(&self, frame: Frame) {
        let _ = self.outbox.send(Message::text(frame.encode()));
    }

    /// Handles the frames in one WebSocket message; true when the session must end.
    fn receive(&mut self, text: &str) -> bool {
        for raw in text
            .split('\0')
            .filter(|f| !f.trim_matches(['\r', '\n']).is_empty())
        {
            let done = match Frame::parse(raw) {
                Ok(frame) => self.handle(&frame),
                Err(e) => {
                    let error = Frame::new("ERROR")
                        .header("message", "malformed frame")
                        .header("content-type", "text/plain");
                    self.send(Frame { body: e, ..error });
                    true
                }
            };
            if done {
                return true;
            }
        }
        false
    }

    /// Handles one frame; true when the session must end.
    fn handle(&mut self, frame: &Frame) -> bool {
        let end = match (
            frame.command.as_str(),
            frame.get("destination"),
            frame.get("id"),
        ) {
            ("CONNECT" | "STOMP", _, _) => {
                self.connect(frame);
                false
            }
            ("SUBSCRIBE", Some(dest), Some(id)) => {
                self.broker
                    .subscribe(dest, self.id, id, self.outbox.clone());
                false
            }
            ("UNSUBSCRIBE", _, Some(id)) => {
                self.broker.unsubscribe(self.id, Some(id));
                false
            }
            ("SEND", Some(dest), _) => {
                self.broker
                    .publish(dest, &frame.body, frame.get("content-type"));
                false
            }
            ("DISCONNECT", _, _) => true,
            ("SUBSCRIBE" | "UNSUBSCRIBE" | "SEND", _, _) => error(
                &self.outbox,
                &format!("{} is missing destination or id", frame.command),
            ),
            (other, _, _) => error(&self.outbox, &format!("unknown command {other}")),
        };
        if let Some(receipt) = frame.get("receipt") {
            self.send(Frame::new("RECEIPT").header("receipt-id", receipt));
        }
        end
    }

    /// Answers CONNECT, and starts sending heart-beats if the client wants them.
    fn connect(&mut self, frame: &Frame) {
        let (_, cy) = heart_beat(frame.get("heart-beat"));
        let connected = Frame::new("CONNECTED")
            .header("version", "1.2")
            .header("server", &format!("sluice-backend/{}", self.server))
            .header("heart-beat", &format!("{SERVER_BEAT_MS},{SERVER_BEAT_MS}"));
        self.send(connected);
        if cy > 0 && self.beat.is_none() {
            self.beat = Some(spawn_beats(
                self.outbox.clone(),
                Duration::from_millis(cy.max(SERVER_BEAT_MS)),
            ));
        }
    }

    /// Drops the session's subscriptions and closes the socket.
    fn end(self) {
        self.broker.unsubscribe(self.id, None);
        if let Some(b) = self.beat {
            b.abort();
        }
        let _ = self.outbox.send(Message::Close(None));
    }
}

fn error(outbox: &mpsc::UnboundedSender<Message>, message: &str) -> bool {
    let _ = outbox.send(Message::text(
        Frame::new("ERROR").header("message", message).encode(),
    ));
    true
}

/// `cx,cy` from a heart-beat header (0,0 when absent or malformed).
fn heart_beat(value: Option<&str>) -> (u64, u64) {
    let parse = |s: &str| s.trim().parse().unwrap_or(0);
    value
        .and_then(|v| v.split_once(','))
        .map_or((0, 0), |(x, y)| (parse(x), parse(y)))
}

fn spawn_beats(
    outbox: mpsc::UnboundedSender<Message>,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.tick().await;
        loop {
            tick.tick().await;
            if outbox.send(Message::text("\n")).is_err() {
                return;
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_with_escapes() {
        let f = Frame {
            body: "hi".into(),
            ..Frame::new("SEND").header("destination", "/topic/a:b\nc")
        };
        let text = f.encode();
        assert_eq!(text, "SEND\ndestination:/topic/a\\cb\\nc\n\nhi\0");
        assert_eq!(Frame::parse(text.trim_end_matches('\0')).unwrap(), f);
    }

    #[test]
    fn malformed_frames_are_errors() {
        assert!(Frame::parse("send\n\n").is_err());
        assert!(Frame::parse("SEND\nno-colon\n\n").is_err());
        assert!(Frame::parse("SEND\nx:\\t\n\n").is_err());
        assert!(Frame::parse("SEND").is_err());
    }
}
