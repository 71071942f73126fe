//! 0002-idle-memory.patch: `server::Connection::release_idle_memory` frees an idle
//! connection's read and write buffers (and its streams' room once none is open); a
//! freed read buffer waits for the next bytes in the stack and replays them; a client
//! frees its buffers after every read and write. What is freed is counted by this
//! binary's allocator; that every byte still arrives, by echoing bodies of the sizes
//! around the buffers' edges.

use crate::read_body;
use crate::within;
use bytes::Bytes;
use h2::server::{self, SendResponse};
use h2::{client, RecvStream};
use http::{Request, Response};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;
use tokio::io::{duplex, DuplexStream};
use tokio::sync::oneshot;

/// The system allocator, counting the bytes each thread frees.
struct CountingFrees;

thread_local! {
    static FREED: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingFrees {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // try_with: not while the thread's locals are being torn down.
        let _ = FREED.try_with(|freed| freed.set(freed.get() + layout.size()));
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: CountingFrees = CountingFrees;

/// The bytes `f` frees on this thread (the tests' runtimes have one thread).
fn freed_by(f: impl FnOnce()) -> usize {
    let before = FREED.with(Cell::get);
    f();
    FREED.with(Cell::get) - before
}

/// Bytes that differ from one request to the next and along the body.
fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 31 + seed) % 251) as u8).collect()
}

fn post() -> Request<()> {
    Request::post("http://example.com/echo").body(()).unwrap()
}

/// Answers a request with its own body.
async fn echo(request: Request<RecvStream>, mut respond: SendResponse<Bytes>) {
    let body = read_body(&mut request.into_body()).await.unwrap();
    let mut stream = respond
        .send_response(Response::new(()), body.is_empty())
        .unwrap();
    if !body.is_empty() {
        stream.send_data(body.into(), true).unwrap();
    }
}

/// An echo server that releases its idle memory every millisecond, whatever the
/// connection is doing: between frames, between the halves of a frame, with streams open.
fn spawn_echo_releasing(mut connection: server::Connection<DuplexStream, Bytes>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        loop {
            tokio::select! {
                accepted = connection.accept() => match accepted {
                    Some(Ok((request, respond))) => {
                        tokio::spawn(echo(request, respond));
                    }
                    _ => return,
                },
                _ = tick.tick() => connection.release_idle_memory(),
            }
        }
    });
}

/// Sends `body` and checks that it comes back whole.
async fn round_trip(send: &mut client::SendRequest<Bytes>, body: Vec<u8>) {
    let mut send = send.clone().ready().await.unwrap();
    let (response, mut stream) = send.send_request(post(), body.is_empty()).unwrap();
    if !body.is_empty() {
        stream.send_data(Bytes::from(body.clone()), true).unwrap();
    }
    let echoed = read_body(&mut response.await.unwrap().into_body())
        .await
        .unwrap();
    assert!(
        echoed == body,
        "{} bytes sent, {} echoed, or other bytes",
        body.len(),
        echoed.len()
    );
}

/// Around 4 KiB (the idle wait's read into the stack), 8 KiB (the read buffer), 16 KiB
/// (the write buffer and the largest frame) and the 64 KiB flow-control window.
const SIZES: &[usize] = &[
    0, 1, 100, 4095, 4096, 4097, 8191, 8192, 8193, 16383, 16384, 16385, 65535, 65536, 100_000,
];

#[tokio::test]
async fn an_idle_server_connection_gives_its_buffers_back_and_goes_on() {
    within(async {
        let (client_io, server_io) = duplex(1 << 20);
        let (got, got_it) = oneshot::channel();
        let (go, go_on) = oneshot::channel::<()>();
        let client = tokio::spawn(async move {
            let (mut send, connection) = client::handshake(client_io).await.unwrap();
            tokio::spawn(connection);
            let (response, _) = send.send_request(post(), true).unwrap();
            let body = read_body(&mut response.await.unwrap().into_body())
                .await
                .unwrap();
            got.send(body).unwrap();
            go_on.await.unwrap();
            for (seed, &size) in SIZES.iter().enumerate() {
                round_trip(&mut send, pattern(size, seed)).await;
            }
        });

        let mut connection = server::handshake(server_io).await.unwrap();
        let (_request, mut respond) = connection.accept().await.unwrap().unwrap();
        let mut stream = respond.send_response(Response::new(()), false).unwrap();
        stream
            .send_data(Bytes::from_static(b"hello"), true)
            .unwrap();
        let body = tokio::select! {
            accepted = connection.accept() => panic!("{accepted:?}"),
            body = got_it => body.unwrap(),
        };
        assert_eq!(body, b"hello");
        // Idle: nothing more comes.
        let idle = tokio::time::timeout(Duration::from_millis(50), connection.accept()).await;
        assert!(idle.is_err(), "{idle:?}");

        // The write buffer (16 KiB) and the read buffer (8 KiB), and the stream tables' room.
        let freed = freed_by(|| connection.release_idle_memory());
        assert!(
            freed >= 24 * 1024,
            "release_idle_memory freed {freed} bytes"
        );
        let again = freed_by(|| connection.release_idle_memory());
        assert!(
            again < 1024,
            "a second release_idle_memory freed {again} bytes"
        );

        // And the connection serves what comes next, the read buffer taken again.
        go.send(()).unwrap();
        spawn_echo_releasing(connection);
        client.await.unwrap();
    })
    .await
}

#[tokio::test]
async fn a_release_while_a_stream_is_open_keeps_the_stream() {
    within(async {
        let (client_io, server_io) = duplex(1 << 16);
        let client = tokio::spawn(async move {
            let (mut send, connection) = client::handshake(client_io).await.unwrap();
            tokio::spawn(connection);
            let (response, mut stream) = send.send_request(post(), false).unwrap();
            stream
                .send_data(Bytes::from(pattern(10_000, 1)), true)
                .unwrap();
            read_body(&mut response.await.unwrap().into_body())
                .await
                .unwrap()
        });
        let mut connection = server::handshake(server_io).await.unwrap();
        let (request, respond) = connection.accept().await.unwrap().unwrap();
        connection.release_idle_memory();
        let echoing = tokio::spawn(echo(request, respond));
        spawn_echo_releasing(connection);
        echoing.await.unwrap();
        assert!(client.await.unwrap() == pattern(10_000, 1));
    })
    .await
}

#[tokio::test]
async fn a_client_that_frees_its_buffers_after_each_read_and_write_loses_no_byte() {
    within(async {
        // A small pipe: reads and writes of parts of frames.
        let (client_io, server_io) = duplex(4096);
        tokio::spawn(async move {
            spawn_echo_releasing(server::handshake(server_io).await.unwrap());
        });
        let (mut send, connection) = client::handshake(client_io).await.unwrap();
        tokio::spawn(connection);
        for (seed, &size) in SIZES.iter().enumerate() {
            round_trip(&mut send, pattern(size, seed)).await;
        }
        // And streams at once, their frames interleaved.
        let mut at_once = Vec::new();
        for seed in 0..8 {
            let mut send = send.clone();
            at_once.push(tokio::spawn(async move {
                round_trip(&mut send, pattern(30_000 + seed * 1000, seed)).await
            }));
        }
        for stream in at_once {
            stream.await.unwrap();
        }
    })
    .await
}
