//! Tests of sluice's patches on h2 (vendor/h2-patches), one module per patch; one test
//! binary, so that the suite links once.

mod boxed_frames;
mod connection_headers;
mod idle_memory;
mod raw;
mod trailers;

use bytes::Bytes;
use h2::server::{self, SendResponse};
use h2::RecvStream;
use http::{HeaderMap, Request};
use std::future::Future;
use std::time::Duration;
use tokio::io::DuplexStream;
use tokio::sync::mpsc;

/// A test's body, failed if it has not finished in 60 s: a patch that loses or garbles
/// bytes leaves both peers waiting, and a test that hangs would hold CI up.
pub async fn within<T>(test: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("the test did not finish in 60 s")
}

/// An h2 server on `io`, its connection driven by a task of its own, which hands over
/// each request it accepts.
pub fn spawn_server(
    io: DuplexStream,
) -> mpsc::UnboundedReceiver<(Request<RecvStream>, SendResponse<Bytes>)> {
    let (requests, accepted) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut connection = server::handshake(io).await.unwrap();
        while let Some(Ok(request)) = connection.accept().await {
            let _ = requests.send(request);
        }
    });
    accepted
}

/// A body read to its end (its bytes given back to flow control), then its trailers.
pub async fn body_and_trailers(body: &mut RecvStream) -> Result<Option<HeaderMap>, h2::Error> {
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
    }
    body.trailers().await
}

/// A body read to its end, its bytes given back to flow control.
pub async fn read_body(body: &mut RecvStream) -> Result<Vec<u8>, h2::Error> {
    let mut read = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
        read.extend_from_slice(&chunk);
    }
    Ok(read)
}
