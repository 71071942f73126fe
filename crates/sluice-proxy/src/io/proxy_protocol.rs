//! The PROXY protocol (HAProxy's, versions 1 and 2) on listeners behind an L4 balancer
//! (a cloud network load balancer, HAProxy in `mode tcp`): each connection starts with
//! a header naming the client, read here before TLS or HTTP see a byte. Parsing is the
//! `ppp` crate's. This module must never consume more than the header.

use ppp::v1::Addresses as V1;
use ppp::v2::{Addresses as V2, Command};
use ppp::{HeaderResult, PartialResult};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// The longest header read: v1's is at most 107 bytes; v2's carries TLVs (a cloud
/// balancer's ids and TLS facts) within this.
const MAX_HEADER: usize = 4096;

/// Reads the header at the start of `stream` within `limit`: the client's address, or
/// `None` for a header that names none (v1 `UNKNOWN`, v2 `LOCAL`: the balancer's own
/// health check). A connection without a valid header is an error.
pub async fn read(stream: &mut TcpStream, limit: Duration) -> io::Result<Option<SocketAddr>> {
    match tokio::time::timeout(limit, header(stream)).await {
        Ok(read) => read,
        Err(_) => Err(io::ErrorKind::TimedOut.into()),
    }
}

async fn header(stream: &mut TcpStream) -> io::Result<Option<SocketAddr>> {
    let mut buf = vec![0u8; MAX_HEADER];
    let mut pause = Duration::from_millis(1);
    loop {
        // Peeked, not read: the bytes after the header belong to TLS or HTTP.
        let n = stream.peek(&mut buf).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let parsed = HeaderResult::parse(&buf[..n]);
        if let Some((len, client)) = complete(&parsed) {
            stream.read_exact(&mut buf[..len]).await?;
            return Ok(client);
        }
        if !parsed.is_incomplete() || n == MAX_HEADER {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a PROXY protocol header",
            ));
        }
        // Part of a header: rare (it comes in one segment). A peek does not consume, so
        // the socket stays readable: wait, longer each time, so a client that sends half
        // a header and stops costs a few dozen wakeups until the timeout, not a spin.
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// A whole header's length and the client it names.
fn complete(parsed: &HeaderResult<'_>) -> Option<(usize, Option<SocketAddr>)> {
    match parsed {
        HeaderResult::V1(Ok(h)) => {
            let client = match &h.addresses {
                V1::Tcp4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
                V1::Tcp6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
                V1::Unknown => None,
            };
            Some((h.header.len(), client))
        }
        HeaderResult::V2(Ok(h)) => {
            let client = match (&h.command, &h.addresses) {
                (Command::Local, _) => None,
                (_, V2::IPv4(a)) => Some(SocketAddr::from((a.source_address, a.source_port))),
                (_, V2::IPv6(a)) => Some(SocketAddr::from((a.source_address, a.source_port))),
                _ => None,
            };
            Some((h.header.len(), client))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::read;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// What `read` makes of `sent`, and the bytes left for HTTP.
    async fn through(sent: Vec<u8>) -> (std::io::Result<Option<std::net::SocketAddr>>, Vec<u8>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(&sent).await.unwrap();
            c.shutdown().await.unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
        });
        let (mut s, _) = listener.accept().await.unwrap();
        let got = read(&mut s, Duration::from_secs(2)).await;
        let mut rest = Vec::new();
        if got.is_ok() {
            s.read_to_end(&mut rest).await.unwrap();
        }
        client.await.unwrap();
        (got, rest)
    }

    #[tokio::test]
    async fn version_1_names_the_client_and_leaves_the_request() {
        let (got, rest) = through(
            b"PROXY TCP4 203.0.113.7 10.0.0.1 51234 443\r\nGET / HTTP/1.1\r\n\r\n".to_vec(),
        )
        .await;
        assert_eq!(got.unwrap(), Some("203.0.113.7:51234".parse().unwrap()));
        assert_eq!(rest, b"GET / HTTP/1.1\r\n\r\n");
    }

    #[tokio::test]
    async fn version_2_names_the_client_and_local_names_none() {
        let sig = b"\r\n\r\n\0\r\nQUIT\n";
        let mut v2 = sig.to_vec();
        // PROXY over TCP/IPv6: 36 bytes of addresses and ports.
        v2.extend_from_slice(&[0x21, 0x21, 0, 36]);
        v2.extend_from_slice(
            &"2001:db8::7"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        v2.extend_from_slice(
            &"2001:db8::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        v2.extend_from_slice(&[0xC8, 0x22, 0x01, 0xBB]);
        v2.extend_from_slice(b"GET /");
        let (got, rest) = through(v2).await;
        assert_eq!(got.unwrap(), Some("[2001:db8::7]:51234".parse().unwrap()));
        assert_eq!(rest, b"GET /");
        let mut local = sig.to_vec();
        local.extend_from_slice(&[0x20, 0x00, 0, 0]);
        assert_eq!(through(local).await.0.unwrap(), None);
    }

    #[tokio::test]
    async fn a_connection_without_a_header_is_refused() {
        let (got, _) = through(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec()).await;
        assert_eq!(got.unwrap_err().kind(), std::io::ErrorKind::InvalidData);
    }
}
