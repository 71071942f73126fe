//! Decoding a chunked body strictly while it streams through (RFC 9112 section 7.1).
//!
//! sluice never forwards chunked framing as it came: this decoder checks every framing
//! byte against the RFC grammar and hands out only the payload, and the body is framed
//! again by sluice on the way out (`body.rs`). So a chunk extension with junk in it, a
//! malformed trailer, or a size line a parser downstream could read differently never
//! reaches the other side: the grammar rejects it, or it is not forwarded at all.
//!
//! - Chunk extensions are checked (`;name`, `;name=token`, `;name="quoted"`, with optional
//!   whitespace only around `;` and `=`), capped at [`MAX_EXTENSION_BYTES`] per body, and
//!   dropped: no application is known to need them, and each was a smuggling or
//!   resource vector somewhere (CVE-2024-22019, CVE-2023-39326).
//! - Trailer fields are checked as field lines (a token name, a colon right after it, a
//!   value of visible characters, spaces and tabs; no obs-fold) under a byte limit, and
//!   dropped, as nginx drops request trailers. sluice removes `TE` as a hop-by-hop header,
//!   so a server never learns that a client accepts trailers and must not depend on them
//!   (RFC 9110 section 6.5.1); dropping them keeps that promise in both directions.
//! - Only CRLF ends a line; a bare LF is an error anywhere in the framing.
//!
//! It never buffers: its state is a few integers, and payload is passed on as it arrives.

/// Chunk-extension bytes (everything between a chunk size and its CRLF) allowed in one
/// body. Real clients send none; 4 KiB is generous for any that do.
pub const MAX_EXTENSION_BYTES: usize = 4096;

/// Why a chunked body was rejected.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed chunked body: {0}")]
pub struct Malformed(pub &'static str);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Hex digits of a chunk size.
    Size,
    /// Whitespace after a size or an extension value: only `;` may follow.
    WsBeforeSemi,
    /// After `;`: optional whitespace, then an extension name.
    ExtNameStart,
    ExtName,
    /// Whitespace after an extension name: `=` or `;` follows.
    WsAfterName,
    /// After `=`: optional whitespace, then a token or a quoted string.
    ExtValueStart,
    ExtToken,
    ExtQuoted,
    /// After a backslash inside a quoted string.
    ExtQuotedPair,
    /// After a closing quote: `;`, whitespace or the end of the line.
    ExtAfterQuoted,
    /// Expecting the LF that ends a size line.
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// At the start of a trailer field line, or of the final empty line.
    TrailerStart,
    TrailerName,
    TrailerValue,
    TrailerLf,
    FinalLf,
    Done,
}

/// Strict, streaming decoder of one chunked body.
#[derive(Clone, Debug)]
pub struct ChunkedDecoder {
    state: State,
    size: u64,
    digits: u8,
    extension_bytes: usize,
    trailer_bytes: usize,
    max_trailer_bytes: usize,
}

impl ChunkedDecoder {
    /// A decoder for one body whose trailer section may take `max_trailer_bytes`.
    pub fn new(max_trailer_bytes: usize) -> Self {
        ChunkedDecoder {
            state: State::Size,
            size: 0,
            digits: 0,
            extension_bytes: 0,
            trailer_bytes: 0,
            max_trailer_bytes,
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Decodes `input`, calling `on_data` with each run of payload. Returns how many bytes
    /// belong to this body: less than `input.len()` only when the body ends inside it.
    pub fn decode(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<usize, Malformed> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            if self.state == State::Data {
                let take = self.size.min((input.len() - i) as u64) as usize;
                on_data(&input[i..i + take]);
                i += take;
                self.size -= take as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            self.state = self.step(input[i])?;
            i += 1;
        }
        Ok(i)
    }

    fn step(&mut self, b: u8) -> Result<State, Malformed> {
        use State::*;
        match self.state {
            Size => self.size_digit(b),
            WsBeforeSemi | ExtNameStart | ExtName | WsAfterName | ExtValueStart | ExtToken
            | ExtQuoted | ExtQuotedPair | ExtAfterQuoted => {
                self.extension_bytes += 1;
                if self.extension_bytes > MAX_EXTENSION_BYTES {
                    return Err(Malformed("chunk extensions too long"));
                }
                extension(self.state, b)
            }
            SizeLf if b == b'\n' => Ok(if self.size == 0 { TrailerStart } else { Data }),
            SizeLf => Err(Malformed("chunk size line not ended by CRLF")),
            DataCr if b == b'\r' => Ok(DataLf),
            DataCr => Err(Malformed("chunk data longer than its size")),
            DataLf if b == b'\n' => {
                self.size = 0;
                self.digits = 0;
                Ok(Size)
            }
            DataLf => Err(Malformed("chunk data not ended by CRLF")),
            TrailerStart | TrailerName | TrailerValue | TrailerLf | FinalLf => {
                self.trailer_bytes += 1;
                if self.trailer_bytes > self.max_trailer_bytes {
                    return Err(Malformed("trailer section too large"));
                }
                trailer(self.state, b)
            }
            Data | Done => unreachable!("data and the end are handled by decode"),
        }
    }

    fn size_digit(&mut self, b: u8) -> Result<State, Malformed> {
        if let Some(digit) = (b as char).to_digit(16) {
            self.digits = self.digits.saturating_add(1);
            // Sizes up to 2^60 bytes (far beyond any body, and no overflow); leading
            // zeros are allowed, up to 20 digits in all (h11's limit too).
            if self.digits > 20 || self.size >= 1 << 56 {
                return Err(Malformed("chunk size too large"));
            }
            self.size = self.size * 16 + u64::from(digit);
            return Ok(State::Size);
        }
        if self.digits == 0 {
            return Err(Malformed("chunk size is not hexadecimal"));
        }
        match b {
            b'\r' => Ok(State::SizeLf),
            b';' => Ok(State::ExtNameStart),
            b' ' | b'\t' => Ok(State::WsBeforeSemi),
            _ => Err(Malformed("junk after a chunk size")),
        }
    }
}

/// One byte of a chunk extension:
/// `*( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )`.
fn extension(state: State, b: u8) -> Result<State, Malformed> {
    use State::*;
    let ws = b == b' ' || b == b'\t';
    let next = match state {
        WsBeforeSemi if ws => WsBeforeSemi,
        WsBeforeSemi if b == b';' => ExtNameStart,
        ExtNameStart if ws => ExtNameStart,
        ExtNameStart if is_tchar(b) => ExtName,
        ExtName if is_tchar(b) => ExtName,
        ExtName | WsAfterName if b == b'=' => ExtValueStart,
        ExtName | WsAfterName | ExtToken | ExtAfterQuoted if b == b';' => ExtNameStart,
        ExtName | ExtToken | ExtAfterQuoted if b == b'\r' => SizeLf,
        ExtName | WsAfterName if ws => WsAfterName,
        ExtValueStart if ws => ExtValueStart,
        ExtValueStart if b == b'"' => ExtQuoted,
        ExtValueStart if is_tchar(b) => ExtToken,
        ExtToken if is_tchar(b) => ExtToken,
        ExtToken | ExtAfterQuoted if ws => WsBeforeSemi,
        ExtQuoted if b == b'"' => ExtAfterQuoted,
        ExtQuoted if b == b'\\' => ExtQuotedPair,
        ExtQuoted if is_qdtext(b) => ExtQuoted,
        ExtQuotedPair if ws || b >= 0x21 && b != 0x7f => ExtQuoted,
        ExtQuoted | ExtQuotedPair => return Err(Malformed("bad byte in a quoted chunk extension")),
        _ => return Err(Malformed("malformed chunk extension")),
    };
    Ok(next)
}

/// One byte of the trailer section: field lines, then an empty line.
fn trailer(state: State, b: u8) -> Result<State, Malformed> {
    use State::*;
    let next = match state {
        TrailerStart if b == b'\r' => FinalLf,
        TrailerStart if b == b' ' || b == b'\t' => {
            return Err(Malformed(
                "obs-fold or whitespace at the start of a trailer line",
            ))
        }
        TrailerStart | TrailerName if is_tchar(b) => TrailerName,
        TrailerName if b == b':' => TrailerValue,
        TrailerStart | TrailerName => return Err(Malformed("malformed trailer field name")),
        TrailerValue if b == b'\r' => TrailerLf,
        TrailerValue if is_field_byte(b) => TrailerValue,
        TrailerValue => return Err(Malformed("control character in a trailer value")),
        TrailerLf | FinalLf if b == b'\n' => {
            if state == FinalLf {
                Done
            } else {
                TrailerStart
            }
        }
        _ => return Err(Malformed("trailer line not ended by CRLF")),
    };
    Ok(next)
}

/// `tchar` of RFC 9110 section 5.6.2: the characters of a token.
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// `qdtext`: what may stand unescaped inside a quoted string.
fn is_qdtext(b: u8) -> bool {
    matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff)
}

/// A byte allowed in a field value: visible characters, space, tab, and obs-text.
pub fn is_field_byte(b: u8) -> bool {
    matches!(b, b'\t' | b' '..=0x7e | 0x80..=0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `input` fed in pieces of `step` bytes: (payload, bytes of the body).
    fn decode(input: &[u8], step: usize) -> Result<(Vec<u8>, usize), Malformed> {
        let mut d = ChunkedDecoder::new(1024);
        let mut data = Vec::new();
        let mut used = 0;
        for piece in input.chunks(step) {
            used += d.decode(piece, |p| data.extend_from_slice(p))?;
            if d.is_done() {
                return Ok((data, used));
            }
        }
        Err(Malformed("unfinished"))
    }

    #[test]
    fn finds_the_end_in_any_split() {
        let body =
            b"5;ext=1\r\nhello\r\n6 ; a = \"q\\\"x\" ;b\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        for step in 1..body.len() {
            let (data, used) = decode(body, step).unwrap();
            assert_eq!(data, b"hello world");
            assert_eq!(used, body.len() - 4);
        }
    }

    #[test]
    fn accepts_the_grammar() {
        for ok in [
            &b"0\r\n\r\n"[..],
            b"000A\r\n0123456789\r\n0\r\n\r\n",
            b"00000000000000000001\r\nx\r\n0\r\n\r\n",
            b"1;a\r\nx\r\n0\r\n\r\n",
            b"1;a=b;c=\"d e\"\r\nx\r\n0\r\n\r\n",
            b"1 ;a\r\nx\r\n0\r\n\r\n",
            b"1;a=\"\xff\"\r\nx\r\n0\r\n\r\n",
            b"0\r\nA: b\r\nC:\r\nD: \xe9t\xe9 \t\r\n\r\n",
        ] {
            assert!(decode(ok, 1).is_ok(), "{:?}", String::from_utf8_lossy(ok));
        }
    }

    #[test]
    fn rejects_bad_framing() {
        for bad in [
            &b"zz\r\n"[..],
            b"\r\n",
            b"-1\r\n",
            b"0x1\r\nx\r\n0\r\n\r\n",
            b"3\r\nabcX\r\n",
            b"ffffffffffffffff\r\n",
            b"1000000000000000\r\n",
            b"000000000000000000001\r\n",
            b"1\nx\r\n0\r\n\r\n",
            b"1\r\nx\n0\r\n\r\n",
            b"0\r\n\n",
            b"1 junk\r\nx\r\n0\r\n\r\n",
            b"1 \r\nx\r\n0\r\n\r\n",
            b"1;\r\nx\r\n0\r\n\r\n",
            b"1;a\0\r\nx\r\n0\r\n\r\n",
            b"1;a=\xff\r\nx\r\n0\r\n\r\n",
            b"1;a=\"open\r\nx\r\n0\r\n\r\n",
            b"1;a=b c\r\nx\r\n0\r\n\r\n",
            b"1;a=\r\nx\r\n0\r\n\r\n",
            b"0\r\nNoColon\r\n\r\n",
            b"0\r\nA: b\r\n folded\r\n\r\n",
            b"0\r\nA : b\r\n\r\n",
            b"0\r\n: b\r\n\r\n",
            b"0\r\nA: b\0c\r\n\r\n",
            b"0\r\nA: b\rc\r\n\r\n",
        ] {
            assert!(
                decode(bad, 1).is_err() && decode(bad, bad.len()).is_err(),
                "{:?} was accepted",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn extensions_and_trailers_are_bounded() {
        let long_ext = format!("1;a={}\r\nx\r\n0\r\n\r\n", "b".repeat(MAX_EXTENSION_BYTES));
        assert_eq!(
            decode(long_ext.as_bytes(), 7),
            Err(Malformed("chunk extensions too long"))
        );
        let mut many = String::new();
        for _ in 0..MAX_EXTENSION_BYTES / 4 {
            many.push_str("1;ab=cd\r\nx\r\n");
        }
        many.push_str("0\r\n\r\n");
        assert!(decode(many.as_bytes(), 64).is_err(), "a total per body");
        let trailer = format!("0\r\nA: {}\r\n\r\n", "v".repeat(1024));
        assert_eq!(
            decode(trailer.as_bytes(), 100),
            Err(Malformed("trailer section too large"))
        );
    }
}
