//! What sluice needs of a client connection's byte stream.

use std::io;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A connection's byte stream: read, write, and wait for bytes to read without offering
/// a buffer. The last is what lets an idle connection or tunnel hold no buffer at all.
/// A TLS stream implements it by asking the socket under it.
pub trait Stream: AsyncRead + AsyncWrite + Unpin {
    /// Ready when the stream may have bytes to read (or has ended). A hint: a read that
    /// follows may still find nothing, and must then be waited for again.
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

impl Stream for TcpStream {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        TcpStream::poll_read_ready(self, cx)
    }
}

/// Completes when `stream` may have bytes to read.
pub async fn readable<S: Stream>(stream: &S) -> io::Result<()> {
    std::future::poll_fn(|cx| stream.poll_read_ready(cx)).await
}

/// Two connected loopback sockets, for tests.
#[cfg(test)]
pub async fn loopback_pair() -> (TcpStream, TcpStream) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let near = TcpStream::connect(listener.local_addr().unwrap());
    let (near, far) = tokio::join!(near, listener.accept());
    (near.unwrap(), far.unwrap().0)
}
