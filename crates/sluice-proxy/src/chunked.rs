//! Finding the end of a chunked body while it streams through.
//!
//! sluice forwards chunked bodies without buffering them: this scanner walks the bytes as
//! they pass, tracking chunk sizes, so the proxy knows where the body (and its trailers)
//! ends and the next message begins. It can also report which bytes are chunk payload, for
//! an HTTP/1.0 client that must receive the body without chunk framing.

/// Why a chunked body was rejected.
#[derive(Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Reading hex digits of a chunk size.
    Size,
    /// After the size: a chunk extension, up to CRLF.
    Extension,
    /// Expecting the LF that ends the size line.
    SizeLf,
    Data,
    DataCr,
    DataLf,
    /// At the start of a trailer line (or the final empty line).
    TrailerStart,
    /// Inside a trailer field line.
    Trailer,
    TrailerLf,
    FinalLf,
    Done,
}

#[derive(Clone, Debug)]
pub struct ChunkedScanner {
    state: State,
    size: u64,
    digits: u8,
}

impl Default for ChunkedScanner {
    fn default() -> Self {
        ChunkedScanner {
            state: State::Size,
            size: 0,
            digits: 0,
        }
    }
}

impl ChunkedScanner {
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Scans `input`, returning how many bytes belong to this body (less than `input.len()`
    /// only when the body ends inside it). `on_data` is called with each run of payload.
    pub fn scan(
        &mut self,
        input: &[u8],
        mut on_data: impl FnMut(&[u8]),
    ) -> Result<usize, Malformed> {
        let mut i = 0;
        while i < input.len() && self.state != State::Done {
            if self.state == State::Data {
                let take = (self.size.min((input.len() - i) as u64)) as usize;
                on_data(&input[i..i + take]);
                i += take;
                self.size -= take as u64;
                if self.size == 0 {
                    self.state = State::DataCr;
                }
                continue;
            }
            self.step(input[i])?;
            i += 1;
        }
        Ok(i)
    }

    fn step(&mut self, b: u8) -> Result<(), Malformed> {
        self.state = match (self.state, b) {
            (State::Size, _) if b.is_ascii_hexdigit() => {
                self.digits += 1;
                if self.digits > 15 {
                    return Err(Malformed("chunk size too large"));
                }
                self.size = self.size * 16 + u64::from((b as char).to_digit(16).unwrap_or(0));
                State::Size
            }
            (State::Size, b';' | b' ' | b'\t') if self.digits > 0 => State::Extension,
            (State::Size, b'\r') if self.digits > 0 => State::SizeLf,
            (State::Size, _) => return Err(Malformed("invalid chunk size")),
            (State::Extension, b'\r') => State::SizeLf,
            (State::Extension, b'\n') => return Err(Malformed("bare LF in chunk extension")),
            (State::Extension, _) => State::Extension,
            (State::SizeLf, b'\n') => self.end_of_size_line(),
            (State::DataCr, b'\r') => State::DataLf,
            (State::DataLf, b'\n') => self.next_chunk(),
            (State::TrailerStart, b'\r') => State::FinalLf,
            (State::TrailerStart | State::Trailer, b'\n') => {
                return Err(Malformed("bare LF in trailer"))
            }
            (State::Trailer, b'\r') => State::TrailerLf,
            (State::TrailerStart | State::Trailer, _) => State::Trailer,
            (State::TrailerLf, b'\n') => State::TrailerStart,
            (State::FinalLf, b'\n') => State::Done,
            _ => return Err(Malformed("missing CRLF in chunked framing")),
        };
        Ok(())
    }

    fn end_of_size_line(&mut self) -> State {
        if self.size == 0 {
            State::TrailerStart
        } else {
            State::Data
        }
    }

    fn next_chunk(&mut self) -> State {
        self.size = 0;
        self.digits = 0;
        State::Size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(input: &[u8], step: usize) -> Result<(Vec<u8>, usize), Malformed> {
        let mut s = ChunkedScanner::default();
        let mut data = Vec::new();
        let mut used = 0;
        for piece in input.chunks(step) {
            let n = s.scan(piece, |d| data.extend_from_slice(d))?;
            used += n;
            if s.is_done() {
                break;
            }
        }
        assert!(s.is_done(), "body not finished");
        Ok((data, used))
    }

    #[test]
    fn finds_the_end_in_any_split() {
        let body = b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nNEXT";
        for step in 1..body.len() {
            let (data, used) = decode(body, step).unwrap();
            assert_eq!(data, b"hello world");
            assert_eq!(used, body.len() - 4);
        }
    }

    #[test]
    fn rejects_bad_framing() {
        assert!(decode(b"zz\r\n", 4).is_err());
        assert!(decode(b"3\r\nabcX\r\n", 4).is_err());
        assert!(decode(b"\r\n", 2).is_err());
        assert!(decode(b"ffffffffffffffff\r\n", 32).is_err());
    }
}
