//! Streaming a message body from one connection to another without holding it whole.
//!
//! Chunked bodies are decoded strictly and framed again by sluice: the receiver gets
//! only chunk sizes that sluice wrote, never the sender's framing bytes (see `chunked.rs`).

use crate::compress::encoder::Encoder;
use crate::http1::chunked::ChunkedDecoder;
use crate::http1::head::Framing;
use crate::io::conn::{write_all, Conn};
use crate::io::stream::Stream;
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
    /// The largest trailer section a chunked body may carry (the sender's head limit).
    pub max_trailer_bytes: usize,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
}

/// Writes `out` (a head, or nothing) and then the body read from `src` to `dst`.
///
/// Body bytes already buffered go out in the same write as the head, so a small message
/// costs one write. Bytes in `src.buf` past the end of the body stay there for the next
/// message. Returns the body's payload bytes: without the head nor chunked framing, as
/// the client's application receives them on HTTP/1.1 and HTTP/2 alike (the access
/// log's `bytes_sent`).
pub async fn relay<S: Stream, W: AsyncWrite + Unpin>(
    src: &mut Conn<S>,
    dst: &mut W,
    out: &mut Vec<u8>,
    t: Transfer,
) -> Result<u64, TransferError> {
    let mut payload = 0;
    let mut decoder = ChunkedDecoder::new(t.max_trailer_bytes);
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
                payload += take as u64;
                remaining == 0
            }
            Framing::Chunked => take_chunked(src, out, &mut decoder, t.dechunk, &mut payload)?,
            Framing::UntilClose => {
                payload += src.buf.len() as u64;
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
            return Ok(payload);
        }
        if filled(src.fill(t.read_timeout).await, t.framing)? {
            return Ok(payload);
        }
    }
}

/// [`relay`] with the payload compressed by `encoder` on the way, framed as chunks for
/// an HTTP/1.1 client (bare with `t.dechunk`, for HTTP/2's DATA frames). What each read
/// gives is compressed and flushed at once: a slow stream reaches the client as it
/// comes, and the body is never held whole. Returns the compressed bytes sent.
pub async fn relay_compressed<S: Stream, W: AsyncWrite + Unpin>(
    src: &mut Conn<S>,
    dst: &mut W,
    out: &mut Vec<u8>,
    t: Transfer,
    encoder: Box<Encoder>,
) -> Result<u64, TransferError> {
    let mut encoder = Some(encoder);
    let mut plain = Vec::new();
    let mut decoder = ChunkedDecoder::new(t.max_trailer_bytes);
    let mut remaining = match t.framing {
        Framing::Length(n) => n,
        _ => 0,
    };
    let (mut sent, mut ended) = (0, false);
    loop {
        plain.clear();
        let done = match t.framing {
            Framing::None => true,
            Framing::Length(_) => {
                let take = remaining.min(src.buf.len() as u64) as usize;
                plain.extend_from_slice(&src.buf[..take]);
                src.buf.advance(take);
                remaining -= take as u64;
                remaining == 0
            }
            Framing::Chunked => take_chunked(src, &mut plain, &mut decoder, true, &mut 0)?,
            Framing::UntilClose => {
                plain.extend_from_slice(&src.buf);
                src.buf.clear();
                ended
            }
        };
        let start = out.len();
        compress_pass(&mut encoder, &plain, out, done).map_err(TransferError::Write)?;
        sent += (out.len() - start) as u64;
        if !t.dechunk {
            frame_chunk(out, start);
            if done {
                out.extend_from_slice(b"0\r\n\r\n");
            }
        }
        if !out.is_empty() {
            write_all(dst, out, t.write_timeout)
                .await
                .map_err(TransferError::Write)?;
            out.clear();
        }
        if done {
            return Ok(sent);
        }
        ended = filled(src.fill(t.read_timeout).await, t.framing)?;
    }
}

/// What a read of the body came to: true when the server closed a body that ends at
/// the close; a close anywhere else (or a failed read) is the body's error.
fn filled(read: io::Result<usize>, framing: Framing) -> Result<bool, TransferError> {
    match read {
        Ok(0) if framing == Framing::UntilClose => Ok(true),
        Ok(0) => Err(TransferError::Read(io::ErrorKind::UnexpectedEof.into())),
        Ok(_) => Ok(false),
        Err(e) => Err(TransferError::Read(e)),
    }
}

/// One pass of a compressed body: `plain` compressed onto `out`, flushed, or the
/// stream ended when `done`. A pass without payload (a read that gave only chunk
/// framing) adds nothing.
fn compress_pass(
    encoder: &mut Option<Box<Encoder>>,
    plain: &[u8],
    out: &mut Vec<u8>,
    done: bool,
) -> io::Result<()> {
    match encoder.take() {
        Some(e) if done => e.finish(plain, out),
        Some(mut e) => {
            let pushed = if plain.is_empty() {
                Ok(())
            } else {
                e.push(plain, out)
            };
            *encoder = Some(e);
            pushed
        }
        None => Ok(()),
    }
}

/// Moves the buffered part of a chunked body to `out`, framed again as one chunk (or as
/// bare payload with `dechunk`), adding the payload's length to `payload`; true when
/// the body is complete.
fn take_chunked<S>(
    src: &mut Conn<S>,
    out: &mut Vec<u8>,
    decoder: &mut ChunkedDecoder,
    dechunk: bool,
    payload: &mut u64,
) -> Result<bool, TransferError> {
    let start = out.len();
    let used = decoder
        .decode(&src.buf, |data| out.extend_from_slice(data))
        .map_err(|e| TransferError::Read(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    src.buf.advance(used);
    *payload += (out.len() - start) as u64;
    let done = decoder.is_done();
    if !dechunk {
        frame_chunk(out, start);
        if done {
            out.extend_from_slice(b"0\r\n\r\n");
        }
    }
    Ok(done)
}

/// Makes the payload in `out[start..]` one chunk by putting its size line in front of it.
/// Nothing is written for no payload: an empty chunk would end the body.
fn frame_chunk(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    if len == 0 {
        return;
    }
    let mut line = [0u8; 18];
    let mut i = 16;
    line[16..].copy_from_slice(b"\r\n");
    let mut n = len;
    loop {
        i -= 1;
        line[i] = b"0123456789abcdef"[n % 16];
        n /= 16;
        if n == 0 {
            break;
        }
    }
    // Moves the payload up by a few bytes; cheap next to the write that follows.
    out.splice(start..start, line[i..].iter().copied());
    out.extend_from_slice(b"\r\n");
}

/// Bytes of a file read and written at a time.
const FILE_CHUNK: u64 = 64 * 1024;

/// Writes `len` bytes of `file` from `offset` to `dst`, read a chunk at a time into
/// `buf`. A file that gives fewer bytes than promised (it shrank) is an error: the
/// receiver counts on the length. The reads block, from the page cache for the files a
/// balancer serves (ACME tokens, small assets), as nginx reads without aio.
pub async fn send_file<W: AsyncWrite + Unpin>(
    dst: &mut W,
    (file, mut offset, len): (&std::fs::File, u64, u64),
    buf: &mut Vec<u8>,
    timeout: Duration,
) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut left = len;
    while left > 0 {
        buf.clear();
        buf.resize(left.min(FILE_CHUNK) as usize, 0);
        let n = file.read_at(buf, offset)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        write_all(dst, &buf[..n], timeout).await?;
        (offset, left) = (offset + n as u64, left - n as u64);
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_framed_by_their_length() {
        for len in [1usize, 9, 15, 16, 255, 4096, 70_000] {
            let mut out = b"HEAD".to_vec();
            out.extend(std::iter::repeat_n(b'x', len));
            frame_chunk(&mut out, 4);
            let expected = format!("HEAD{len:x}\r\n{}\r\n", "x".repeat(len));
            assert_eq!(out, expected.as_bytes());
        }
        let mut out = b"HEAD".to_vec();
        frame_chunk(&mut out, 4);
        assert_eq!(out, b"HEAD", "no empty chunk");
    }
}
