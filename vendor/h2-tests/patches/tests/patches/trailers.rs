//! 0001-trailers-pseudo-headers.patch: pseudo-header fields in trailers make the
//! message malformed, a stream error PROTOCOL_ERROR (RFC 9113 sections 8.1, 8.1.1); a
//! HEADERS frame after the peer's END_STREAM is a stream error STREAM_CLOSED (section
//! 5.1), and the connection goes on.

use crate::raw::{self, Raw, DATA, END_STREAM, PING, RST_STREAM};
use crate::within;
use crate::{body_and_trailers, spawn_server};
use h2::{client, Reason};
use http::Request;
use tokio::io::duplex;

#[tokio::test]
async fn request_trailers_with_a_pseudo_header_reset_the_stream() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let mut raw = Raw::client(client_io).await;
        raw.headers(1, raw::POST, false).await;
        raw.send(DATA, 0, 1, b"body").await;
        raw.headers(1, &[(":path", "/elsewhere"), ("x-sum", "1")], true)
            .await;

        let reset = raw.recv_kind(RST_STREAM).await;
        assert_eq!((reset.stream, reset.error_code()), (1, raw::PROTOCOL_ERROR));
        // The request's reader learns it too: the request never completes.
        let (request, _respond) = requests.recv().await.unwrap();
        let err = body_and_trailers(&mut request.into_body())
            .await
            .unwrap_err();
        assert_eq!(err.reason(), Some(Reason::PROTOCOL_ERROR), "{err}");
    })
    .await
}

#[tokio::test]
async fn request_trailers_without_pseudo_headers_are_received() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let mut raw = Raw::client(client_io).await;
        raw.headers(1, raw::POST, false).await;
        raw.send(DATA, 0, 1, b"body").await;
        raw.headers(1, &[("x-sum", "1")], true).await;

        let (request, _respond) = requests.recv().await.unwrap();
        let trailers = body_and_trailers(&mut request.into_body()).await.unwrap();
        assert_eq!(trailers.unwrap()["x-sum"], "1");
    })
    .await
}

#[tokio::test]
async fn headers_after_end_stream_reset_the_stream_and_the_connection_goes_on() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let mut raw = Raw::client(client_io).await;
        raw.headers(1, raw::GET, true).await;
        let (_request, _respond) = requests.recv().await.unwrap();
        // Stream 1 is half-closed (remote): whatever this frame carries, STREAM_CLOSED
        // (0.4.20 closed the whole connection with GOAWAY PROTOCOL_ERROR).
        raw.headers(1, &[(":path", "/again"), ("x-sum", "1")], true)
            .await;

        let reset = raw.recv_kind(RST_STREAM).await;
        assert_eq!((reset.stream, reset.error_code()), (1, raw::STREAM_CLOSED));
        raw.send(PING, 0, 0, b"12345678").await;
        let pong = raw.recv_kind(PING).await;
        assert_eq!(
            (pong.flags, &pong.payload[..]),
            (raw::ACK, &b"12345678"[..])
        );
        raw.headers(3, raw::GET, true).await;
        let (request, _respond) = requests.recv().await.unwrap();
        assert_eq!(request.uri().path(), "/");
    })
    .await
}

#[tokio::test]
async fn response_trailers_with_a_pseudo_header_reset_the_stream() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let client = tokio::spawn(async move {
            let (mut send, connection) = client::handshake(client_io).await.unwrap();
            tokio::spawn(connection);
            let request = Request::get("http://example.com/").body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            let response = response.await.unwrap();
            body_and_trailers(&mut response.into_body()).await
        });
        let mut raw = Raw::server(server_io).await;
        let request = raw.recv_kind(raw::HEADERS).await;
        assert_eq!(
            (request.stream, request.flags & END_STREAM),
            (1, END_STREAM)
        );
        raw.headers(1, &[(":status", "200")], false).await;
        raw.headers(1, &[(":status", "200")], true).await;

        let reset = raw.recv_kind(RST_STREAM).await;
        assert_eq!((reset.stream, reset.error_code()), (1, raw::PROTOCOL_ERROR));
        let err = client.await.unwrap().unwrap_err();
        assert_eq!(err.reason(), Some(Reason::PROTOCOL_ERROR), "{err}");
    })
    .await
}
