//! Coordinated omission: a server that stalls once must show in the corrected latency
//! exactly as a user arriving during the stall would have felt it, while a tool that
//! measures from the actual send (the uncorrected figures) barely sees it.

mod common;

use sluice_bench::{Length, Load, Step};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RATE: f64 = 500.0;
const RUN: Duration = Duration::from_secs(4);
/// The server stops answering when its request number STALL_AT arrives (about halfway
/// through), for STALL.
const STALL_AT: u64 = 1000;
const STALL: Duration = Duration::from_millis(400);

/// A server that answers at once, except that from its STALL_AT-th request on it holds
/// every answer until STALL has passed.
fn stalling_server() -> std::net::SocketAddr {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(AtomicU64::new(0));
    let until: Arc<Mutex<Option<Instant>>> = Arc::default();
    runtime.spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (seen, until) = (seen.clone(), until.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        buf.drain(..end + 4);
                        if seen.fetch_add(1, Ordering::SeqCst) + 1 == STALL_AT {
                            *until.lock().unwrap() = Some(Instant::now() + STALL);
                        }
                        let hold = *until.lock().unwrap();
                        if let Some(at) = hold.filter(|at| *at > Instant::now()) {
                            tokio::time::sleep_until(at.into()).await;
                        }
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
    addr
}

#[test]
fn a_stall_shows_in_the_corrected_latency_as_users_felt_it() {
    let addr = stalling_server();
    let steps = vec![Step {
        load: Load::Rate {
            rate: RATE,
            max_in_flight: 8,
        },
        length: Length::Duration(RUN),
    }];
    let report = common::run(common::plan(&format!("http://{addr}/"), steps, true));
    let s = &report.steps[0];
    assert_eq!(
        (s.summary.samples, s.missed, s.summary.errors),
        (2000, 0, 0)
    );
    // From first principles: the requests meant to go during the stall, a fraction
    // f = STALL / RUN = 10% of all, are answered when it ends, so their latency is
    // spread evenly over (0, STALL]; the other 90% are answered at once. So for q above
    // 0.9 the q-quantile of the corrected latency is STALL * (q - 0.9) / 0.1.
    let f = STALL.as_secs_f64() / RUN.as_secs_f64();
    let expected = |q: f64| STALL.as_secs_f64() * 1000.0 * (q - (1.0 - f)) / f;
    let c = &s.summary.latency;
    for (q, got) in [(0.95, c.p95_ms), (0.99, c.p99_ms), (0.999, c.p999_ms)] {
        let want = expected(q);
        assert!(
            (got - want).abs() < 40.0,
            "corrected p{}: {got} ms, expected {want:.0} ms",
            q * 100.0
        );
    }
    assert!((c.max_ms - 400.0).abs() < 40.0, "max {}", c.max_ms);
    // Measured from the actual send, only the 8 requests already in flight when it began
    // (0.4%) waited: below p99 the stall all but disappears.
    let u = &s.summary.uncorrected;
    assert!(u.p99_ms < 20.0, "uncorrected p99 {} ms", u.p99_ms);
    assert!(u.max_ms > 300.0, "uncorrected max {} ms", u.max_ms);
    // The wait for a free slot is what made the requests late.
    assert!(
        s.summary.send_lag.p99_ms > 300.0,
        "send lag p99 {}",
        s.summary.send_lag.p99_ms
    );
}
