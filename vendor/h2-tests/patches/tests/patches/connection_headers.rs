//! 0004-one-pass-connection-headers.patch: the connection-specific fields a message
//! must not carry (RFC 9113 section 8.2.2) are found in one pass over its field names;
//! the verdicts are 0.4.20's: a response, a request and trailers with one are refused,
//! `te: trailers` alone passes.

use crate::within;
use crate::{read_body, spawn_server};
use bytes::Bytes;
use h2::client;
use http::{HeaderMap, HeaderName, HeaderValue, Request, Response};
use tokio::io::duplex;

const FORBIDDEN: &[(&str, &str)] = &[
    ("connection", "close"),
    ("transfer-encoding", "chunked"),
    ("upgrade", "websocket"),
    ("keep-alive", "timeout=5"),
    ("proxy-connection", "keep-alive"),
    ("te", "gzip"),
];

fn field(name: &str, value: &str) -> (HeaderName, HeaderValue) {
    (name.parse().unwrap(), value.parse().unwrap())
}

/// A message's ordinary fields, so that the forbidden one is not the only one looked at.
fn ordinary(fields: &mut HeaderMap) {
    for i in 0..10 {
        let (name, value) = field(&format!("x-ordinary-{i}"), "1");
        fields.insert(name, value);
    }
}

fn is_malformed(err: &h2::Error) -> bool {
    err.reason().is_none() && !err.is_io() && err.to_string().contains("malformed headers")
}

#[tokio::test]
async fn responses_with_a_connection_specific_field_are_refused() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let client = tokio::spawn(async move {
            let (send, connection) = client::handshake(client_io).await.unwrap();
            tokio::spawn(connection);
            let mut statuses = Vec::new();
            for _ in FORBIDDEN {
                let mut send = send.clone().ready().await.unwrap();
                let request = Request::get("http://example.com/").body(()).unwrap();
                let (response, _) = send.send_request(request, true).unwrap();
                statuses.push(response.await.unwrap().status().as_u16());
            }
            statuses
        });
        for (name, value) in FORBIDDEN {
            let (_request, mut respond) = requests.recv().await.unwrap();
            let mut response = Response::new(());
            ordinary(response.headers_mut());
            let (name, value) = field(name, value);
            response.headers_mut().insert(name.clone(), value);
            let err = respond.send_response(response, true).unwrap_err();
            assert!(is_malformed(&err), "{name}: {err}");
            // Refused before anything was sent: the stream can still be answered.
            respond.send_response(Response::new(()), true).unwrap();
        }
        assert_eq!(client.await.unwrap(), vec![200; FORBIDDEN.len()]);
    })
    .await
}

#[tokio::test]
async fn requests_with_a_connection_specific_field_are_refused_te_trailers_passes() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let (mut send, connection) = client::handshake(client_io).await.unwrap();
        tokio::spawn(connection);
        for (name, value) in FORBIDDEN {
            let mut request = Request::get("http://example.com/").body(()).unwrap();
            ordinary(request.headers_mut());
            let (name, value) = field(name, value);
            request.headers_mut().insert(name.clone(), value);
            let err = send.send_request(request, true).unwrap_err();
            assert!(is_malformed(&err), "{name}: {err}");
        }
        let mut request = Request::get("http://example.com/").body(()).unwrap();
        ordinary(request.headers_mut());
        let (name, value) = field("te", "trailers");
        request.headers_mut().insert(name, value);
        let (response, _) = send.send_request(request, true).unwrap();
        let (request, mut respond) = requests.recv().await.unwrap();
        assert_eq!(request.headers()["te"], "trailers");
        respond.send_response(Response::new(()), true).unwrap();
        assert_eq!(response.await.unwrap().status(), 200);
    })
    .await
}

#[tokio::test]
async fn trailers_with_a_connection_specific_field_are_refused() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let (mut send, connection) = client::handshake(client_io).await.unwrap();
        tokio::spawn(connection);
        let request = Request::post("http://example.com/").body(()).unwrap();
        let (_response, mut stream) = send.send_request(request, false).unwrap();
        stream
            .send_data(Bytes::from_static(b"body"), false)
            .unwrap();
        for (name, value) in FORBIDDEN {
            let mut trailers = HeaderMap::new();
            ordinary(&mut trailers);
            let (name, value) = field(name, value);
            trailers.insert(name.clone(), value);
            let err = stream.send_trailers(trailers).unwrap_err();
            assert!(is_malformed(&err), "{name}: {err}");
        }
        let mut trailers = HeaderMap::new();
        ordinary(&mut trailers);
        stream.send_trailers(trailers).unwrap();
        let (request, _respond) = requests.recv().await.unwrap();
        let mut body = request.into_body();
        assert_eq!(read_body(&mut body).await.unwrap(), b"body");
        let trailers = body.trailers().await.unwrap().unwrap();
        assert_eq!(trailers["x-ordinary-9"], "1");
    })
    .await
}
