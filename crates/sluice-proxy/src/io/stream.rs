//! What sluice needs of a client connection's byte stream.

use std::io;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// A connection's byte stream: read, write, and wait for bytes to read without offering
/// a buffer. The last is what lets an idle connection or tunnel hold no buffer at all.
/// A TLS stream implements it by asking the socket under it.
pub trait Stream: AsyncRead + AsyncWrite + Unpin {
    /// Whether closing the connection takes a message (TLS's close_notify), sent by
    /// shutting the stream down; without it, a TLS client cannot tell a response cut
    /// short from a whole one.
    const CLOSE_NOTIFY: bool = false;

    /// Ready when the stream may have bytes to read (or has ended). A hint: a read that
    /// follows may still find nothing, and must then be waited for again.
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;
}

impl Stream for TcpStream {
    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        TcpStream::poll_read_ready(self, cx)
    }
}

impl Stream for tokio_rustls::server::TlsStream<TcpStream> {
    const CLOSE_NOTIFY: bool = true;

    fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let (tcp, tls) = self.get_ref();
        tls_read_ready(tcp, tls.wants_read(), cx)
    }
}

/// Readiness of a TLS stream over `tcp` (client or server side): at once when rustls
/// does not want to read, because it holds decrypted bytes not yet read (a read took
/// fewer than it had) or the peer's close_notify, which the socket may never signal
/// again; otherwise when the socket is readable.
pub fn tls_read_ready(
    tcp: &TcpStream,
    wants_read: bool,
    cx: &mut Context<'_>,
) -> Poll<io::Result<()>> {
    if !wants_read {
        return Poll::Ready(Ok(()));
    }
    tcp.poll_read_ready(cx)
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
