//! A peer that writes and reads raw HTTP/2 frames, for what h2's API will not send
//! (pseudo-header fields in trailers, a HEADERS frame after END_STREAM).

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;

pub const PROTOCOL_ERROR: u32 = 0x1;
pub const STREAM_CLOSED: u32 = 0x5;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long a test waits for a frame before it fails.
const PATIENCE: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct Frame {
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
    pub payload: Vec<u8>,
}

impl Frame {
    /// The error code of a RST_STREAM or GOAWAY frame.
    pub fn error_code(&self) -> u32 {
        let at = if self.kind == GOAWAY { 4 } else { 0 };
        u32::from_be_bytes(self.payload[at..at + 4].try_into().unwrap())
    }
}

pub struct Raw {
    io: DuplexStream,
}

impl Raw {
    /// A client: the preface and an empty SETTINGS frame sent.
    pub async fn client(io: DuplexStream) -> Raw {
        let mut raw = Raw { io };
        raw.io.write_all(PREFACE).await.unwrap();
        raw.send(SETTINGS, 0, 0, &[]).await;
        raw
    }

    /// A server: the client's preface read, an empty SETTINGS frame sent.
    pub async fn server(io: DuplexStream) -> Raw {
        let mut raw = Raw { io };
        let mut preface = [0; PREFACE.len()];
        raw.io.read_exact(&mut preface).await.unwrap();
        assert_eq!(preface, PREFACE);
        raw.send(SETTINGS, 0, 0, &[]).await;
        raw
    }

    pub async fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let len = payload.len() as u32;
        let mut head = [0; 9];
        head[..3].copy_from_slice(&len.to_be_bytes()[1..]);
        head[3] = kind;
        head[4] = flags;
        head[5..].copy_from_slice(&stream.to_be_bytes());
        self.io.write_all(&head).await.unwrap();
        self.io.write_all(payload).await.unwrap();
    }

    /// A HEADERS frame of these fields, END_HEADERS set.
    pub async fn headers(&mut self, stream: u32, fields: &[(&str, &str)], end_stream: bool) {
        let flags = END_HEADERS | if end_stream { END_STREAM } else { 0 };
        self.send(HEADERS, flags, stream, &hpack(fields)).await;
    }

    /// The next frame, SETTINGS frames answered (and not returned).
    pub async fn recv(&mut self) -> Frame {
        loop {
            let frame = tokio::time::timeout(PATIENCE, self.read_frame())
                .await
                .expect("no frame from the peer in time");
            if frame.kind == SETTINGS && frame.flags & ACK == 0 {
                self.send(SETTINGS, ACK, 0, &[]).await;
                continue;
            }
            return frame;
        }
    }

    /// The next frame of this kind: the ones before it (WINDOW_UPDATE, SETTINGS' ACK,
    /// ...) are skipped, but a GOAWAY fails the test unless a GOAWAY is awaited.
    pub async fn recv_kind(&mut self, kind: u8) -> Frame {
        loop {
            let frame = self.recv().await;
            if frame.kind == kind {
                return frame;
            }
            assert_ne!(frame.kind, GOAWAY, "GOAWAY, code {}", frame.error_code());
        }
    }

    async fn read_frame(&mut self) -> Frame {
        let mut head = [0; 9];
        self.io.read_exact(&mut head).await.unwrap();
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let mut payload = vec![0; len];
        self.io.read_exact(&mut payload).await.unwrap();
        Frame {
            kind: head[3],
            flags: head[4],
            stream: u32::from_be_bytes(head[5..].try_into().unwrap()) & 0x7fff_ffff,
            payload,
        }
    }
}

/// A header block: each field a literal without indexing, with a literal name and no
/// Huffman coding (RFC 7541 section 6.2.2), which any decoder must take.
pub fn hpack(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in fields {
        assert!(
            name.len() < 127 && value.len() < 127,
            "one-byte lengths only"
        );
        block.push(0x00);
        block.push(name.len() as u8);
        block.extend_from_slice(name.as_bytes());
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    }
    block
}

pub const GET: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":authority", "example.com"),
    (":path", "/"),
];

pub const POST: &[(&str, &str)] = &[
    (":method", "POST"),
    (":scheme", "http"),
    (":authority", "example.com"),
    (":path", "/"),
];
