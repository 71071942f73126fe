//! Streaming a message body from one connection to another without holding it whole.

use crate::chunked::ChunkedScanner;
use crate::conn::{write_all, Conn};
use crate::head::Framing;
use bytes::Buf;
use std::io;
use std::time::Duration;
use tokio::io::AsyncWrite;

/// Which end of a transfer failed.
#[derive(Debug)]
pub enum TransferError {
    /// Reading the body from its sender failed, timed out, ended early or was malformed.
    Read(io::Error),
    /// The receiver would not take the bytes.
    Write(io::Error),
}

/// Limits that apply to one transfer.
#[derive(Clone, Copy)]
pub struct Transfer {
    pub framing: Framing,
    /// Send only chunk payloads (to an HTTP/1.0 client).
    pub dechunk: bool,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
}

/// Writes `out` (a head, or nothing) and then the body read from `src` to `dst`.
///
/// Body bytes already buffered go out in the same write as the head, so a small message
/// costs one write. Bytes in `src.buf` past the end of the body stay there for the next
/// message.
pub async fn relay<W: AsyncWrite + Unpin>(
    src: &mut Conn,
    dst: &mut W,
    out: &mut Vec<u8>,
    t: Transfer,
) -> Result<(), TransferError> {
    let mut scanner = ChunkedScanner::default();
    let mut remaining = match t.framing {
        Framing::Length(n) => n,
        _ => 0,
    };
    loop {
        let done = match t.framing {
            Framing::None => true,
            Framing::Length(_) => {
                let take = remaining.min(src.buf.len() as u64) as usize;
                out.extend_from_slice(&src.buf[..take]);
                src.buf.advance(take);
                remaining -= take as u64;
                remaining == 0
            }
            Framing::Chunked => take_chunked(src, out, &mut scanner, t.dechunk)?,
            Framing::UntilClose => {
                out.extend_from_slice(&src.buf);
                src.buf.clear();
                false
            }
        };
        if !out.is_empty() {
            write_all(dst, out, t.write_timeout)
                .await
                .map_err(TransferError::Write)?;
            out.clear();
        }
        if done {
            return Ok(());
        }
        match src.fill(t.read_timeout).await {
            Ok(0) if t.framing == Framing::UntilClose => return Ok(()),
            Ok(0) => return Err(TransferError::Read(io::ErrorKind::UnexpectedEof.into())),
            Ok(_) => {}
            Err(e) => return Err(TransferError::Read(e)),
        }
    }
}

/// Moves the buffered part of a chunked body to `out`; true when the body is complete.
fn take_chunked(
    src: &mut Conn,
    out: &mut Vec<u8>,
    scanner: &mut ChunkedScanner,
    dechunk: bool,
) -> Result<bool, TransferError> {
    let used = scanner
        .scan(&src.buf, |data| {
            if dechunk {
                out.extend_from_slice(data);
            }
        })
        .map_err(|e| TransferError::Read(io::Error::new(io::ErrorKind::InvalidData, e.0)))?;
    if !dechunk {
        out.extend_from_slice(&src.buf[..used]);
    }
    src.buf.advance(used);
    Ok(scanner.is_done())
}
