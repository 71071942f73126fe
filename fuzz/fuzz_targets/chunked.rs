//! `decode_chunked`: the result never depends on how the body is split into reads, what
//! it decodes re-encodes to the same payload, and every body built from the RFC 9112
//! grammar decodes to its payload.
//!
//! The first byte picks the mode. Even: raw bytes, laid out as
//! `[mode] [trailer limit selector] [piece count n] [n piece lengths] body...`.
//! Odd: the rest drives `arbitrary` to build a valid body (`ValidBody`).
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_proxy::testing::{decode_chunked, Decoded};

/// Chunk-extension bytes allowed per body (`chunked::MAX_EXTENSION_BYTES`).
const MAX_EXTENSION_BYTES: usize = 4096;
const TRAILER_LIMITS: [usize; 8] = [0, 1, 2, 3, 8, 64, 1024, 65536];
const TCHARS: &[u8] = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        raw(rest);
    } else if let Ok(body) = ValidBody::arbitrary_take_rest(Unstructured::new(rest)) {
        structured(&body);
    }
});

fn raw(data: &[u8]) {
    let [limit, count, rest @ ..] = data else {
        return;
    };
    let max_trailer = TRAILER_LIMITS[usize::from(limit % 8)];
    let n = usize::from(count % 8).min(rest.len());
    let pieces: Vec<usize> = rest[..n].iter().map(|&b| usize::from(b)).collect();
    let body = &rest[n..];

    let whole = decode_chunked(body, &[], max_trailer);
    assert_eq!(decode_chunked(body, &pieces, max_trailer), whole, "split at {pieces:?}");
    let bytewise = vec![1; body.len()];
    assert_eq!(decode_chunked(body, &bytewise, max_trailer), whole, "fed a byte at a time");

    let Ok(d) = whole else { return };
    assert!(d.used <= body.len() && d.payload.len() <= d.used, "{d:?}");
    if !d.done {
        assert_eq!(d.used, body.len(), "an unfinished body takes all its input");
        return;
    }
    // Nothing after the end matters, and the end is where it was said to be.
    assert_eq!(decode_chunked(&body[..d.used], &[], max_trailer), Ok(d.clone()));
    match decode_chunked(&body[..d.used - 1], &[], max_trailer) {
        Ok(short) => {
            assert!(!short.done, "done before its last byte");
            assert!(d.payload.starts_with(&short.payload));
        }
        Err(e) => panic!("a prefix of a complete body is an error: {e}"),
    }
    // Re-encoded, in one chunk and in chunks cut at the piece lengths, it decodes back.
    for sizes in [vec![], pieces] {
        let encoded = encode(&d.payload, &sizes);
        assert_eq!(
            decode_chunked(&encoded, &[], 65536),
            Ok(Decoded {
                payload: d.payload.clone(),
                used: encoded.len(),
                done: true
            }),
            "re-encoded as {}",
            encoded.escape_ascii()
        );
    }
}

/// `payload` as chunks of the given sizes (0 skipped; the rest in one chunk), then the
/// last chunk.
fn encode(payload: &[u8], sizes: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = payload;
    for size in sizes.iter().copied().filter(|&s| s > 0).chain([usize::MAX]) {
        if rest.is_empty() {
            break;
        }
        let (chunk, after) = rest.split_at(size.min(rest.len()));
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
        rest = after;
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

#[derive(Arbitrary, Debug)]
struct ValidBody {
    chunks: Vec<Chunk>,
    last_zeros: u8,
    last_ext: Option<Extension>,
    trailers: Vec<Trailer>,
    /// The trailer limit is the trailer section's size plus this.
    trailer_slack: i8,
    pieces: Vec<u8>,
    /// Bytes after the body (the next request).
    after: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
struct Chunk {
    data: Vec<u8>,
    zeros: u8,
    upper: bool,
    ext: Option<Extension>,
}

/// `*( BWS ";" BWS name [ BWS "=" BWS value ] )`, at least one.
#[derive(Arbitrary, Debug)]
struct Extension {
    first: Param,
    more: Vec<Param>,
}

#[derive(Arbitrary, Debug)]
struct Param {
    before_semi: Bws,
    after_semi: Bws,
    name: Token,
    value: Option<(Bws, Bws, Value)>,
}

#[derive(Arbitrary, Debug)]
enum Value {
    Token(Token),
    /// Bytes of a quoted string: (byte, escape it).
    Quoted(Vec<(u8, bool)>),
}

#[derive(Arbitrary, Debug)]
struct Token(u8, Vec<u8>);

#[derive(Arbitrary, Debug)]
struct Bws(Vec<bool>);

#[derive(Arbitrary, Debug)]
struct Trailer {
    name: Token,
    value: Vec<u8>,
}

impl Token {
    fn render(&self, out: &mut Vec<u8>) {
        for b in std::iter::once(self.0).chain(self.1.iter().copied()) {
            out.push(TCHARS[usize::from(b) % TCHARS.len()]);
        }
    }
}

impl Bws {
    fn render(&self, out: &mut Vec<u8>) {
        out.extend(self.0.iter().take(3).map(|&tab| if tab { b'\t' } else { b' ' }));
    }
}

impl Extension {
    fn render(&self, out: &mut Vec<u8>) {
        for p in std::iter::once(&self.first).chain(&self.more) {
            p.before_semi.render(out);
            out.push(b';');
            p.after_semi.render(out);
            p.name.render(out);
            if let Some((before, after, value)) = &p.value {
                before.render(out);
                out.push(b'=');
                after.render(out);
                match value {
                    Value::Token(t) => t.render(out),
                    Value::Quoted(bytes) => {
                        out.push(b'"');
                        for &(b, escape) in bytes {
                            let qdtext = matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff);
                            let pairable = b == b'\t' || (b >= 0x20 && b != 0x7f);
                            if pairable && (escape || !qdtext) {
                                out.extend_from_slice(&[b'\\', b]);
                            } else if qdtext {
                                out.push(b);
                            }
                        }
                        out.push(b'"');
                    }
                }
            }
        }
    }
}

/// A size line: hex digits with up to 15 in all (leading zeros included), an extension, CRLF.
fn size_line(out: &mut Vec<u8>, size: usize, zeros: u8, upper: bool, ext: Option<&Extension>) -> usize {
    let hex = if upper { format!("{size:X}") } else { format!("{size:x}") };
    let zeros = usize::from(zeros) % (16 - hex.len());
    out.extend(std::iter::repeat_n(b'0', zeros));
    out.extend_from_slice(hex.as_bytes());
    let start = out.len();
    if let Some(ext) = ext {
        ext.render(out);
    }
    // Bytes the decoder counts as extension: all after the first one, plus the CR.
    let ext_bytes = out.len() - start;
    out.extend_from_slice(b"\r\n");
    ext_bytes
}

fn structured(body: &ValidBody) {
    let mut encoded = Vec::new();
    let mut payload = Vec::new();
    let mut ext_bytes = 0;
    for chunk in body.chunks.iter().filter(|c| !c.data.is_empty()) {
        ext_bytes += size_line(&mut encoded, chunk.data.len(), chunk.zeros, chunk.upper, chunk.ext.as_ref());
        encoded.extend_from_slice(&chunk.data);
        encoded.extend_from_slice(b"\r\n");
        payload.extend_from_slice(&chunk.data);
    }
    ext_bytes += size_line(&mut encoded, 0, body.last_zeros, false, body.last_ext.as_ref());
    let trailer_start = encoded.len();
    for t in &body.trailers {
        t.name.render(&mut encoded);
        encoded.push(b':');
        encoded.extend(t.value.iter().copied().filter(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f)));
        encoded.extend_from_slice(b"\r\n");
    }
    encoded.extend_from_slice(b"\r\n");
    // The decoder counts the whole trailer section, the final CRLF included.
    let trailer_bytes = encoded.len() - trailer_start;
    let max_trailer = trailer_bytes.saturating_add_signed(isize::from(body.trailer_slack));

    let body_len = encoded.len();
    let mut input = encoded.clone();
    input.extend_from_slice(&body.after);
    let pieces: Vec<usize> = body.pieces.iter().map(|&b| usize::from(b)).collect();
    let whole = decode_chunked(&input, &[], max_trailer);
    assert_eq!(decode_chunked(&input, &pieces, max_trailer), whole, "split at {pieces:?}");

    let expected = if ext_bytes > MAX_EXTENSION_BYTES {
        Err("chunk extensions too long")
    } else if max_trailer < trailer_bytes {
        Err("trailer section too large")
    } else {
        Ok(Decoded {
            payload,
            used: body_len,
            done: true,
        })
    };
    assert_eq!(
        whole,
        expected,
        "body: {} (extension bytes {ext_bytes}, trailer bytes {trailer_bytes}, limit {max_trailer})",
        encoded.escape_ascii()
    );
}
