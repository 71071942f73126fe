//! One client connection and one exchange on it: write the request, read the response
//! head with `httparse`, skip the body by its framing, count the bytes.
//!
//! This client does not share the proxy's HTTP code (a measuring tool that shares the
//! proxy's parser could share its bugs); it is lenient where the proxy is strict, since
//! its job is to count what comes back, not to guard anything.

use crate::target::Target;
use crate::tls::{self, ClientStream, Handshake};
use bytes::{Buf, BytesMut};
use rustls::ClientConfig;
use std::io;
use std::mem::MaybeUninit;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::time::Instant;

/// Why an exchange failed. Its `Display` is the error kind reports count by.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExchangeError {
    #[error("connect: {0}")]
    Connect(String),
    /// The TLS handshake failed (a certificate not trusted, no common version, ...).
    #[error("tls: {0}")]
    Tls(String),
    #[error("timeout")]
    Timeout,
    #[error("closed before a whole response")]
    Closed,
    #[error("malformed response")]
    Malformed,
    /// A response head past [`MAX_HEAD`] bytes, not over yet.
    #[error("response head over 256 KiB")]
    HeadTooLarge,
    #[error("io: {0}")]
    Io(String),
}

/// A TCP connection to `addr`, from `source` when given, without Nagle's delay.
pub async fn connect(addr: SocketAddr, source: Option<IpAddr>) -> Result<TcpStream, ExchangeError> {
    let connect = async {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(ip) = source {
            socket.bind(SocketAddr::new(ip, 0))?;
        }
        let stream = socket.connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok::<_, io::Error>(stream)
    };
    connect
        .await
        .map_err(|e| ExchangeError::Connect(e.kind().to_string()))
}

/// A connection to `target` (TCP, then TLS for `https://`), from `source` when given.
/// `tls`: the run's client config (the process's default when the plan has none).
pub async fn open_stream(
    target: &Target,
    tls: Option<&Arc<ClientConfig>>,
    source: Option<IpAddr>,
) -> Result<(ClientStream, Option<Handshake>), ExchangeError> {
    let tcp = connect(target.addr, source).await?;
    let Some(name) = target.tls.clone() else {
        return Ok((tokio_util::either::Either::Left(tcp), None));
    };
    let config = match tls {
        Some(config) => config.clone(),
        None => tls::default_config().map_err(ExchangeError::Tls)?,
    };
    let (stream, handshake) = tls::handshake(tcp, &config, name)
        .await
        .map_err(|e| ExchangeError::Tls(tls_cause(&e)))?;
    Ok((stream, Some(handshake)))
}

/// A failed handshake's cause, as reports count it: rustls's words, without the io
/// wrapping around them.
fn tls_cause(e: &io::Error) -> String {
    match e.get_ref() {
        Some(inner) => inner.to_string(),
        None => e.kind().to_string(),
    }
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    /// The `Location` of a redirect (3xx), as sent.
    pub location: Option<String>,
    /// Its `Set-Cookie` values, read when the connection keeps heads (`keep_head`).
    pub set_cookies: Vec<String>,
    /// Its head as received, when the connection keeps heads; else empty.
    pub head: Vec<u8>,
    /// Bytes read for this response, head and body.
    pub bytes_in: u64,
    /// The connection can carry another request.
    pub reusable: bool,
    /// Just before the request was written, and once its last byte was read: the
    /// sample's span, with none of the generator's own bookkeeping in it.
    pub written: Instant,
    pub completed: Instant,
}

pub struct Connection {
    stream: ClientStream,
    buf: BytesMut,
    /// Requests this connection has carried.
    pub requests: u64,
    /// Keep responses' heads and `Set-Cookie` values (for a scenario's user: its cookie
    /// jar, its extractions, its failures' details); the plain path keeps none.
    pub keep_head: bool,
}

/// Where a response's body is kept, and how much of it at most.
pub type Capture<'a> = (&'a mut Vec<u8>, usize);

const READ_CHUNK: usize = 16 * 1024;

/// The most of a body kept for checks and extractions.
pub const MAX_CAPTURE: usize = 1 << 20;

/// The most a response head may take (Chromium's limit): past it the server is not
/// answering HTTP, and the generator does not buffer it further.
const MAX_HEAD: usize = 256 << 10;

impl Connection {
    /// Connects to `target`, from `source` when given (to spread over loopback
    /// addresses); its TLS handshake, if it had one.
    pub async fn open(
        target: &Target,
        tls: Option<&Arc<ClientConfig>>,
        source: Option<IpAddr>,
    ) -> Result<(Self, Option<Handshake>), ExchangeError> {
        let (stream, handshake) = open_stream(target, tls, source).await?;
        let conn = Connection {
            stream,
            buf: BytesMut::with_capacity(READ_CHUNK),
            requests: 0,
            keep_head: false,
        };
        Ok((conn, handshake))
    }

    /// Sends `request` and reads its whole response. `head_request`: the request was
    /// HEAD, so the response has no body whatever it announces. With `capture`, the body
    /// (its payload, up to the limit given) is kept there, for checks.
    pub async fn exchange(
        &mut self,
        request: &[u8],
        head_request: bool,
        mut capture: Option<Capture<'_>>,
    ) -> Result<Reply, ExchangeError> {
        self.requests += 1;
        let written = Instant::now();
        self.stream.write_all(request).await.map_err(io_error)?;
        // TLS may hold the last record until flushed (a no-op on plain TCP).
        self.stream.flush().await.map_err(io_error)?;
        let mut bytes_in = 0;
        loop {
            let (head, raw) = self.read_head(&mut bytes_in).await?;
            if (100..200).contains(&head.status) {
                continue; // 100 Continue and the like: the real answer follows.
            }
            let body = if head_request || head.status == 204 || head.status == 304 {
                Body::None
            } else {
                head.body
            };
            if let Some((c, _)) = capture.as_mut() {
                c.clear();
            }
            let complete = self.skip_body(body, &mut bytes_in, capture).await?;
            return Ok(Reply {
                status: head.status,
                location: head.location,
                set_cookies: head.set_cookies,
                head: raw,
                bytes_in,
                reusable: head.keep_alive && complete,
                written,
                completed: Instant::now(),
            });
        }
    }

    /// Reads a response head; returns it and, when heads are kept, its bytes.
    async fn read_head(&mut self, bytes_in: &mut u64) -> Result<(Head, Vec<u8>), ExchangeError> {
        loop {
            if let Some(head) = parse_head(&self.buf, self.keep_head)? {
                let len = head.len;
                let raw = match self.keep_head {
                    true => self.buf[..len].to_vec(),
                    false => Vec::new(),
                };
                self.buf.advance(len);
                *bytes_in += len as u64;
                return Ok((head, raw));
            }
            if self.buf.len() > MAX_HEAD {
                return Err(ExchangeError::HeadTooLarge);
            }
            if self.fill().await? == 0 {
                return Err(ExchangeError::Closed);
            }
        }
    }

    /// Gives the read buffer back while the user thinks (nothing is buffered between a
    /// response and the next request): 10,000 thinking users then hold no 16 KiB each.
    pub fn idle(&mut self) {
        if self.buf.is_empty() {
            self.buf = BytesMut::new();
        }
    }

    async fn fill(&mut self) -> Result<usize, ExchangeError> {
        if self.buf.capacity() - self.buf.len() < READ_CHUNK / 4 {
            self.buf.reserve(READ_CHUNK);
        }
        self.stream.read_buf(&mut self.buf).await.map_err(io_error)
    }

    /// Reads past the body (keeping its payload in `capture`). Returns false when it ran
    /// to the end of the connection.
    async fn skip_body(
        &mut self,
        body: Body,
        bytes_in: &mut u64,
        mut capture: Option<Capture<'_>>,
    ) -> Result<bool, ExchangeError> {
        let mut keep = |data: &[u8]| {
            if let Some((c, limit)) = capture.as_mut() {
                let room = limit.saturating_sub(c.len());
                c.extend_from_slice(&data[..data.len().min(room)]);
            }
        };
        match body {
            Body::None => Ok(true),
            Body::Length(mut left) => {
                while left > 0 {
                    if self.buf.is_empty() && self.fill().await? == 0 {
                        return Err(ExchangeError::Closed);
                    }
                    let take = left.min(self.buf.len() as u64) as usize;
                    keep(&self.buf[..take]);
                    self.buf.advance(take);
                    *bytes_in += take as u64;
                    left -= take as u64;
                }
                Ok(true)
            }
            Body::Chunked => {
                let mut chunks = Chunks::default();
                loop {
                    let used = chunks
                        .scan(&self.buf, &mut keep)
                        .ok_or(ExchangeError::Malformed)?;
                    self.buf.advance(used);
                    *bytes_in += used as u64;
                    if chunks.done() {
                        return Ok(true);
                    }
                    if self.fill().await? == 0 {
                        return Err(ExchangeError::Closed);
                    }
                }
            }
            Body::UntilClose => loop {
                *bytes_in += self.buf.len() as u64;
                keep(&self.buf);
                self.buf.clear();
                if self.fill().await? == 0 {
                    return Ok(false);
                }
            },
        }
    }
}

fn io_error(e: io::Error) -> ExchangeError {
    match e.kind() {
        io::ErrorKind::UnexpectedEof
        | io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe => ExchangeError::Closed,
        kind => ExchangeError::Io(kind.to_string()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    None,
    Length(u64),
    Chunked,
    UntilClose,
}

struct Head {
    status: u16,
    /// A redirect's `Location` (read for 3xx only: it costs an allocation).
    location: Option<String>,
    set_cookies: Vec<String>,
    len: usize,
    body: Body,
    keep_alive: bool,
}

/// Parses a response head at the start of `buf`, if it is complete.
/// With `cookies`, its `Set-Cookie` values are kept.
fn parse_head(buf: &[u8], cookies: bool) -> Result<Option<Head>, ExchangeError> {
    let mut headers = [MaybeUninit::<httparse::Header<'_>>::uninit(); 64];
    let mut res = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut res,
        buf,
        &mut headers,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(ExchangeError::Malformed),
    };
    let (Some(status), Some(minor)) = (res.code, res.version) else {
        return Err(ExchangeError::Malformed);
    };
    let body = framing(res.headers)?;
    let mut keep_alive = minor == 1;
    let mut location = None;
    let mut set_cookies = Vec::new();
    for h in res.headers.iter() {
        if cookies && h.name.eq_ignore_ascii_case("set-cookie") {
            set_cookies.push(String::from_utf8_lossy(h.value).into_owned());
        }
        if (300..400).contains(&status) && h.name.eq_ignore_ascii_case("location") {
            location = Some(String::from_utf8_lossy(h.value).into_owned());
        }
        if h.name.eq_ignore_ascii_case("connection") {
            let v = h.value.to_ascii_lowercase();
            if v.windows(5).any(|w| w == b"close") {
                keep_alive = false;
            } else if v.windows(10).any(|w| w == b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    Ok(Some(Head {
        status,
        location,
        set_cookies,
        len,
        body,
        keep_alive: keep_alive && body != Body::UntilClose,
    }))
}

/// How a response's body is framed (RFC 9112 section 6.3): chunked when the last
/// transfer coding is, to the connection's end for any other, else by its length. Both
/// a transfer coding and a length, or two different lengths, are the shapes of response
/// splitting: malformed, not one of them picked.
fn framing(headers: &[httparse::Header<'_>]) -> Result<Body, ExchangeError> {
    let (mut length, mut chunked) = (None, None);
    for h in headers {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n: Option<u64> = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok());
            let n = n.ok_or(ExchangeError::Malformed)?;
            if length.is_some_and(|l| l != n) {
                return Err(ExchangeError::Malformed);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            let last = h.value.rsplit(|&b| b == b',').next().unwrap_or_default();
            chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        }
    }
    match (chunked, length) {
        (Some(_), Some(_)) => Err(ExchangeError::Malformed),
        (Some(true), None) => Ok(Body::Chunked),
        (None, Some(n)) => Ok(Body::Length(n)),
        (Some(false), None) | (None, None) => Ok(Body::UntilClose),
    }
}

/// Finds the end of a chunked body (sizes, data, trailers). A size line must begin
/// with a hex digit, and a chunk's data must end with its line end: anything else is a
/// malformed response, not a success with less body than was sent. Chunk extensions
/// and trailers are skipped; a bare LF is taken for CRLF, as most clients do.
#[derive(Default)]
struct Chunks {
    state: ChunkState,
    size: u64,
    /// Payload bytes left in the current chunk.
    left: u64,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// A size line's first byte: a hex digit.
    #[default]
    SizeStart,
    Size,
    /// After the size's digits: an extension, whitespace, CR, until LF.
    SizeRest,
    Data,
    /// After the data: CR (or LF at once), then LF.
    DataCr,
    DataLf,
    /// After the last chunk: trailer lines until an empty one.
    Trailers {
        line_empty: bool,
    },
    Done,
}

impl Chunks {
    fn done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes what it can of `buf`, handing chunk payload to `on_data`; `None` when
    /// the framing is broken.
    fn scan(&mut self, buf: &[u8], mut on_data: impl FnMut(&[u8])) -> Option<usize> {
        let mut i = 0;
        while i < buf.len() && !self.done() {
            if self.state == ChunkState::Data {
                let take = self.left.min((buf.len() - i) as u64) as usize;
                on_data(&buf[i..i + take]);
                i += take;
                self.left -= take as u64;
                if self.left == 0 {
                    self.state = ChunkState::DataCr;
                }
                continue;
            }
            self.state = self.after(buf[i])?;
            i += 1;
        }
        Some(i)
    }

    /// The state after byte `b` of a size line, a data end or the trailers.
    fn after(&mut self, b: u8) -> Option<ChunkState> {
        use ChunkState::*;
        let digit = (b as char).to_digit(16);
        Some(match (self.state, b) {
            (SizeStart | Size, _) if digit.is_some() => {
                // More than 15 hex digits: no body is that large.
                if self.size >> 60 != 0 {
                    return None;
                }
                self.size = self.size * 16 + u64::from(digit?);
                Size
            }
            (Size | SizeRest, b'\n') => match std::mem::take(&mut self.size) {
                0 => Trailers { line_empty: true },
                size => {
                    self.left = size;
                    Data
                }
            },
            (Size, b';' | b' ' | b'\t' | b'\r') | (SizeRest, _) => SizeRest,
            (DataCr, b'\r') => DataLf,
            (DataCr | DataLf, b'\n') => SizeStart,
            (Trailers { line_empty: true }, b'\n') => Done,
            (Trailers { .. }, b'\n') => Trailers { line_empty: true },
            (Trailers { line_empty }, b'\r') => Trailers { line_empty },
            (Trailers { .. }, _) => Trailers { line_empty: false },
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_and_framing() {
        let h = parse_head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false)
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.status, h.body, h.keep_alive),
            (200, Body::Length(5), true)
        );
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
            false,
        )
        .unwrap()
        .unwrap();
        assert_eq!((h.body, h.keep_alive), (Body::Chunked, false));
        let cookie = b"HTTP/1.1 200 OK\r\nSet-Cookie: SID=1\r\nContent-Length: 0\r\n\r\n";
        let kept = parse_head(cookie, true).unwrap().unwrap();
        assert_eq!(kept.set_cookies, ["SID=1"]);
        assert!(parse_head(cookie, false)
            .unwrap()
            .unwrap()
            .set_cookies
            .is_empty());
        let h = parse_head(b"HTTP/1.0 200 OK\r\n\r\n", false)
            .unwrap()
            .unwrap();
        assert_eq!((h.body, h.keep_alive), (Body::UntilClose, false));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\nContent-Le", false)
            .unwrap()
            .is_none());
        assert!(parse_head(b"HTTP/1.1 abc\r\n\r\n", false).is_err());
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            false,
        );
        assert_eq!(h.unwrap().unwrap().body, Body::Chunked);
        let h = parse_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
            false,
        );
        assert_eq!(h.unwrap().unwrap().body, Body::Length(3));
        for split in [
            &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        ] {
            assert!(
                parse_head(split, false).is_err(),
                "{}",
                String::from_utf8_lossy(split)
            );
        }
    }

    #[test]
    fn chunked_bodies_end_where_they_end() {
        let body = b"5;x=1\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\nNEXT";
        for step in 1..body.len() {
            let mut c = Chunks::default();
            let mut used = 0;
            let mut payload = Vec::new();
            for piece in body.chunks(step) {
                used += c.scan(piece, |d| payload.extend_from_slice(d)).unwrap();
                if c.done() {
                    break;
                }
            }
            assert!(c.done(), "step {step}");
            assert_eq!(used, body.len() - 4, "step {step}");
            assert_eq!(payload, b"hello world", "step {step}");
        }
    }

    #[test]
    fn broken_chunk_framing_is_malformed() {
        for body in [
            &b"zz\r\nabc\r\n0\r\n\r\n"[..],
            b"5z\r\nhello\r\n0\r\n\r\n",
            b"\r\n",
            b"5\r\nhelloXX0\r\n\r\n",
            b"ffffffffffffffffff\r\n",
        ] {
            let scanned = Chunks::default().scan(body, |_| {});
            assert_eq!(scanned, None, "{:?}", String::from_utf8_lossy(body));
        }
        // A bare LF for CRLF, and a size in upper case, are read.
        let (mut c, body) = (Chunks::default(), b"A\n0123456789\n0\n\n");
        assert_eq!(c.scan(body, |_| {}), Some(body.len()));
        assert!(c.done());
    }
}
