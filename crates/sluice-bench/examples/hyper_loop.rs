//! The closed loop of `sluice bench --users N --threads 1`, with hyper's HTTP/1 client in
//! place of the generator's own: the measurement behind choosing our own codec
//! (`bench/loadgen.sh` runs both on the same target).
//!
//!   cargo run --release -p sluice-bench --example hyper_loop -- URL CONNECTIONS SECONDS
//!
//! Prints one JSON line: requests, rps, p50_ms, p99_ms, errors. Same event loop
//! (tokio, current thread), same histogram (HdrHistogram, µs), same sample span (from
//! the request's send to its last byte).

use bytes::Bytes;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, conns, secs] = args.as_slice() else {
        eprintln!("usage: hyper_loop URL CONNECTIONS SECONDS");
        std::process::exit(2);
    };
    let uri: hyper::Uri = url.parse().expect("a URL");
    let conns: usize = conns.parse().expect("a number of connections");
    let duration = Duration::from_secs_f64(secs.parse().expect("seconds"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let local = tokio::task::LocalSet::new();
    let histogram = Rc::new(RefCell::new(
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).expect("bounds"),
    ));
    let errors = Rc::new(RefCell::new(0u64));
    let started = Instant::now();
    local.block_on(&runtime, async {
        let end = started + duration;
        let tasks: Vec<_> = (0..conns)
            .map(|_| {
                let (uri, histogram, errors) = (uri.clone(), histogram.clone(), errors.clone());
                tokio::task::spawn_local(async move {
                    if let Err(e) = connection(&uri, end, &histogram).await {
                        eprintln!("{e}");
                        *errors.borrow_mut() += 1;
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let h = histogram.borrow();
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    println!(
        "{{\"requests\": {}, \"rps\": {:.1}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"errors\": {}}}",
        h.len(),
        h.len() as f64 / elapsed,
        ms(0.5),
        ms(0.99),
        errors.borrow()
    );
}

/// One keep-alive connection sending GETs one after another until `end`.
async fn connection(
    uri: &hyper::Uri,
    end: Instant,
    histogram: &RefCell<Histogram<u64>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let authority = uri.authority().ok_or("no authority")?.clone();
    let stream = tokio::net::TcpStream::connect(authority.as_str()).await?;
    stream.set_nodelay(true)?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::task::spawn_local(conn);
    while Instant::now() < end {
        let request = hyper::Request::get(uri.path())
            .header(hyper::header::HOST, authority.as_str())
            .body(Empty::<Bytes>::new())?;
        let sent = Instant::now();
        let response = sender.send_request(request).await?;
        let status = response.status();
        response.into_body().collect().await?;
        let us = sent.elapsed().as_micros() as u64;
        histogram.borrow_mut().saturating_record(us.max(1));
        if !status.is_success() {
            return Err(format!("status {status}").into());
        }
        sender.ready().await?;
    }
    Ok(())
}
