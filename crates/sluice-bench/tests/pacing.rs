//! The open model's pace: with `pace` longer than the gap between requests, the server
//! sees batches (what fell due since the last wake-up, sent together), and each request
//! is timed from its batch's time, so the pace chosen is not charged to the server as
//! latency; with no pace, every request goes at its own moment.

mod common;

use sluice_bench::{Length, Load, Step};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RATE: f64 = 1000.0;
const RUN: Duration = Duration::from_secs(1);

/// A server that answers at once and notes when each request arrived.
fn noting_server() -> (std::net::SocketAddr, Arc<Mutex<Vec<Instant>>>) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let arrivals: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let noted = arrivals.clone();
    runtime.spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let noted = noted.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        noted.lock().unwrap().push(Instant::now());
                        let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                        if s.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    std::mem::forget(runtime);
    (addr, arrivals)
}

/// Runs RATE req/s for RUN at `pace` on one thread: the report's step, and the gaps
/// between the requests' arrivals at the server.
fn run_at(pace: Duration) -> (sluice_bench::report::StepReport, Vec<Duration>) {
    let (addr, arrivals) = noting_server();
    let steps = vec![Step {
        load: Load::Rate {
            rate: RATE,
            max_in_flight: 64,
        },
        length: Length::Duration(RUN),
    }];
    let mut plan = common::plan(&format!("http://{addr}/"), steps, true);
    plan.pace = pace;
    plan.threads = 1;
    let report = common::run(plan);
    let arrivals = arrivals.lock().unwrap();
    let gaps = arrivals.windows(2).map(|p| p[1] - p[0]).collect();
    (report.steps[0].clone(), gaps)
}

/// The share of `gaps` shorter than 300 µs: requests that went together.
fn together(gaps: &[Duration]) -> f64 {
    let short = gaps.iter().filter(|g| **g < Duration::from_micros(300));
    short.count() as f64 / gaps.len() as f64
}

#[test]
fn a_long_pace_sends_batches_each_timed_from_its_batch() {
    let (step, gaps) = run_at(Duration::from_millis(20));
    assert_eq!((step.summary.samples, step.summary.errors), (1000, 0));
    // 20 ms at 1,000 req/s: about 50 batches of 20, so 19 gaps in 20 are inside one.
    let batches = 1 + gaps
        .iter()
        .filter(|g| **g >= Duration::from_millis(5))
        .count();
    assert!((40..=70).contains(&batches), "{batches} batches");
    assert!(together(&gaps) > 0.8, "{:.2} together", together(&gaps));
    // Timed from each request's own moment, a batch's requests would have waited 10 ms
    // on average; timed from the batch, they wait only for the server.
    let latency = &step.summary.latency;
    assert!(latency.p50_ms < 5.0, "p50 {} ms", latency.p50_ms);
}

#[test]
fn no_pace_sends_every_request_at_its_own_moment() {
    let (step, gaps) = run_at(Duration::ZERO);
    assert_eq!((step.summary.samples, step.summary.errors), (1000, 0));
    // A request every millisecond, each on its own.
    assert!(together(&gaps) < 0.2, "{:.2} together", together(&gaps));
}
