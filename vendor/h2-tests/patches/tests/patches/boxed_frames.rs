//! 0003-boxed-headers-frame.patch: `Frame::Headers` and `Frame::PushPromise` are
//! boxed, so that a frame is the size of its DATA variant; HEADERS, CONTINUATION and
//! PUSH_PROMISE frames go out and come in as before.

use crate::within;
use crate::{read_body, spawn_server};
use bytes::Bytes;
use h2::client;
use http::{Request, Response};
use tokio::io::duplex;

#[test]
fn a_frame_holds_its_headers_and_push_promise_variants_boxed() {
    // Inline (h2 0.4.20), the HEADERS variant made every Frame larger than a Headers:
    // 296 bytes on 64-bit targets; boxed, 64.
    let frame = std::mem::size_of::<h2::frame::Frame>();
    let headers = std::mem::size_of::<h2::frame::Headers>();
    let push_promise = std::mem::size_of::<h2::frame::PushPromise>();
    assert!(
        frame < headers && frame < push_promise,
        "a Frame takes {frame} bytes, a Headers {headers}, a PushPromise {push_promise}"
    );
}

#[tokio::test]
async fn a_push_promise_goes_out_and_comes_in() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let client = tokio::spawn(async move {
            let (mut send, connection) = client::handshake(client_io).await.unwrap();
            tokio::spawn(connection);
            let request = Request::get("https://example.com/").body(()).unwrap();
            let (mut response, _) = send.send_request(request, true).unwrap();
            let mut pushes = response.push_promises();
            let push = pushes.push_promise().await.unwrap().unwrap();
            let (pushed_request, pushed) = push.into_parts();
            let pushed_body = read_body(&mut pushed.await.unwrap().into_body())
                .await
                .unwrap();
            let body = read_body(&mut response.await.unwrap().into_body())
                .await
                .unwrap();
            (pushed_request.uri().path().to_owned(), pushed_body, body)
        });
        let (_request, mut respond) = requests.recv().await.unwrap();
        let style = Request::get("https://example.com/style.css")
            .body(())
            .unwrap();
        let mut pushed = respond.push_request(style).unwrap();
        let mut stream = pushed.send_response(Response::new(()), false).unwrap();
        stream.send_data(Bytes::from_static(b"p {}"), true).unwrap();
        let mut stream = respond.send_response(Response::new(()), false).unwrap();
        stream.send_data(Bytes::from_static(b"<p>"), true).unwrap();

        let (path, pushed_body, body) = client.await.unwrap();
        assert_eq!(path, "/style.css");
        assert_eq!(pushed_body, b"p {}");
        assert_eq!(body, b"<p>");
    })
    .await
}

#[tokio::test]
async fn a_header_block_larger_than_a_frame_goes_out_in_continuation_frames() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let mut requests = spawn_server(server_io);
        let client = tokio::spawn(async move {
            let (mut send, connection) = client::handshake(client_io).await.unwrap();
            tokio::spawn(connection);
            let request = Request::get("http://example.com/").body(()).unwrap();
            let (response, _) = send.send_request(request, true).unwrap();
            response.await.unwrap()
        });
        let (_request, mut respond) = requests.recv().await.unwrap();
        // 40 fields of 1,000 bytes: more than twice the 16 KiB a frame may carry.
        let mut response = Response::builder();
        for i in 0..40 {
            response = response.header(format!("x-field-{i}"), "v".repeat(1000));
        }
        respond
            .send_response(response.body(()).unwrap(), true)
            .unwrap();

        let response = client.await.unwrap();
        assert_eq!(response.headers().len(), 40);
        assert_eq!(response.headers()["x-field-39"], "v".repeat(1000));
    })
    .await
}
