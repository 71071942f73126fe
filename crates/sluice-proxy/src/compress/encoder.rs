//! One response body's encoder: bytes in, compressed bytes appended to a buffer, with a
//! sync flush after each pass so the client can decode everything sent so far.
//!
//! Its window is sized to the body when the length is known (a 2 KiB response does not
//! get a 32 KiB gzip window or a 4 MiB brotli one), as nginx sizes its gzip window.

use super::Coding;
use flate2::{Compress, Compression, FlushCompress, Status};
use std::io::{self, Write};

/// Output room added at a time while a pass is compressed.
const ROOM: usize = 16 * 1024;
/// brotli's and zstd's window (log2) for a body of unknown length.
const STREAM_WINDOW: u32 = 19;

pub struct Encoder {
    kind: Kind,
}

enum Kind {
    /// zlib's deflate with its gzip wrapper (header, CRC-32 and length trailer).
    Gzip(Compress),
    /// Boxed: the encoder's state is a few KiB inline.
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
}

impl Encoder {
    /// An encoder for `coding` at `level`, for a body of `length` bytes if known.
    pub fn new(coding: Coding, level: u32, length: Option<u64>) -> io::Result<Encoder> {
        // The bits to address the whole body: a window no larger than the body needs.
        let bits = |fallback: u32| {
            length.map_or(fallback, |n| {
                u64::BITS - n.max(1).saturating_sub(1).leading_zeros()
            })
        };
        let kind = match coding {
            Coding::Gzip => {
                let window = bits(15).clamp(9, 15) as u8;
                Kind::Gzip(Compress::new_gzip(Compression::new(level), window))
            }
            Coding::Br => {
                let window = bits(STREAM_WINDOW).clamp(10, 22);
                Kind::Br(Box::new(brotli::CompressorWriter::new(
                    Vec::new(),
                    4096,
                    level,
                    window,
                )))
            }
            Coding::Zstd => {
                let mut e = zstd::stream::write::Encoder::new(Vec::new(), level as i32)?;
                match length {
                    // zstd then sizes its tables to the body itself.
                    Some(n) => e.set_pledged_src_size(Some(n))?,
                    None => e.window_log(STREAM_WINDOW)?,
                }
                Kind::Zstd(e)
            }
        };
        Ok(Encoder { kind })
    }

    /// Compresses `input` onto `out` and flushes: the client can decode all of it.
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match &mut self.kind {
            Kind::Gzip(c) => deflate(c, input, out, FlushCompress::Sync),
            Kind::Br(w) => {
                w.write_all(input)?;
                w.flush()?;
                drain(w.get_mut(), out);
                Ok(())
            }
            Kind::Zstd(e) => {
                e.write_all(input)?;
                e.flush()?;
                drain(e.get_mut(), out);
                Ok(())
            }
        }
    }

    /// Compresses the last `input` onto `out` and ends the compressed stream.
    pub fn finish(self, input: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match self.kind {
            Kind::Gzip(mut c) => deflate(&mut c, input, out, FlushCompress::Finish),
            Kind::Br(mut w) => {
                w.write_all(input)?;
                out.extend_from_slice(&w.into_inner());
                Ok(())
            }
            Kind::Zstd(mut e) => {
                e.write_all(input)?;
                out.extend_from_slice(&e.finish()?);
                Ok(())
            }
        }
    }
}

/// Moves what an encoder wrote to its own buffer onto `out`.
fn drain(written: &mut Vec<u8>, out: &mut Vec<u8>) {
    out.extend_from_slice(written);
    written.clear();
}

/// Deflates `input` onto `out` with `flush`, growing `out` until zlib has written all
/// it has (for `Finish`, the stream's end).
fn deflate(
    c: &mut Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: FlushCompress,
) -> io::Result<()> {
    loop {
        if out.capacity() - out.len() < ROOM / 4 {
            out.reserve(ROOM + input.len() / 4);
        }
        let before = c.total_in();
        let status = c
            .compress_vec(input, out, flush)
            .map_err(io::Error::other)?;
        input = &input[(c.total_in() - before) as usize..];
        let room_left = out.len() < out.capacity();
        match status {
            Status::StreamEnd => return Ok(()),
            _ if matches!(flush, FlushCompress::Finish) => {}
            // Everything taken and zlib stopped short of the room it had: all written.
            _ if input.is_empty() && room_left => return Ok(()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn body() -> Vec<u8> {
        (0..20_000)
            .map(|i| format!("{{\"id\":{i},\"name\":\"item {}\"}},", i % 97))
            .collect::<String>()
            .into_bytes()
    }

    fn decode(coding: Coding, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Gzip => {
                flate2::read::GzDecoder::new(bytes)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Br => {
                brotli::Decompressor::new(bytes, 4096)
                    .read_to_end(&mut out)
                    .unwrap();
            }
            Coding::Zstd => out = zstd::stream::decode_all(bytes).unwrap(),
        }
        out
    }

    #[test]
    fn pieces_pushed_then_finished_decode_to_the_whole_and_each_flush_decodes_so_far() {
        let whole = body();
        for coding in Coding::PREFERENCE {
            for length in [None, Some(whole.len() as u64)] {
                let mut e = Encoder::new(coding, 3, length).unwrap();
                let mut out = Vec::new();
                let pieces: Vec<&[u8]> = whole.chunks(16 * 1024).collect();
                let (last, first) = pieces.split_last().unwrap();
                for piece in first {
                    e.push(piece, &mut out).unwrap();
                }
                assert!(!out.is_empty(), "{coding:?}: flushed output");
                e.finish(last, &mut out).unwrap();
                assert!(out.len() < whole.len() / 4, "{coding:?}: {}", out.len());
                assert_eq!(decode(coding, &out), whole, "{coding:?} {length:?}");
            }
        }
    }

    #[test]
    fn a_flush_gives_the_client_what_was_pushed_before_the_end() {
        let mut e = Encoder::new(Coding::Gzip, 1, None).unwrap();
        let mut out = Vec::new();
        e.push(b"data: first event\n\n", &mut out).unwrap();
        let mut so_far = Vec::new();
        let mut d = flate2::read::GzDecoder::new(&out[..]);
        let mut buf = [0u8; 64];
        // A sync-flushed stream decodes up to the flush, then wants more.
        while let Ok(n) = d.read(&mut buf) {
            if n == 0 {
                break;
            }
            so_far.extend_from_slice(&buf[..n]);
        }
        assert_eq!(so_far, b"data: first event\n\n");
    }

    #[test]
    fn an_empty_body_is_a_valid_stream() {
        for coding in Coding::PREFERENCE {
            let mut out = Vec::new();
            Encoder::new(coding, 1, Some(0))
                .unwrap()
                .finish(b"", &mut out)
                .unwrap();
            assert_eq!(decode(coding, &out), b"", "{coding:?}");
        }
    }
}
