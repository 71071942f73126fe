//! The simulated app tier against real sockets: a worker pool that makes requests wait
//! and refuses them past its queue, with the evidence in `/__stats`, and CPU work that
//! takes its time.

use sluice_lab::backend::{serve_simulated, Options, Simulated};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

fn start(delay: Duration, sim: Simulated) -> SocketAddr {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let options = Options {
        name: "app".into(),
        delay,
        stomp: false,
    };
    runtime.spawn(serve_simulated(listener, options, sim));
    // The backend runs on this runtime's threads for the rest of the test process.
    std::mem::forget(runtime);
    addr
}

/// One request on a connection of its own: its status line's code and its body.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text[9..12].parse().unwrap();
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn stat(addr: SocketAddr, key: &str) -> u64 {
    let (_, body) = get(addr, "/__stats");
    body.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {body}"))
        .parse()
        .unwrap()
}

#[test]
fn a_full_pool_queues_then_refuses() {
    let sim = Simulated {
        threads: 2,
        queue: 2,
        ..Simulated::default()
    };
    let addr = start(Duration::from_millis(300), sim);
    let requests: Vec<_> = (0..6)
        .map(|_| std::thread::spawn(move || get(addr, "/").0))
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    // Mid-flight: both threads busy, two requests waiting.
    assert_eq!(
        (stat(addr, "pool_busy"), stat(addr, "pool_waiting")),
        (2, 2)
    );
    let mut statuses: Vec<u16> = requests.into_iter().map(|r| r.join().unwrap()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 200, 503, 503]);
    assert_eq!(stat(addr, "rejected"), 2);
    // The two that waited did so for about one request's time (300 ms) each.
    let waited = stat(addr, "queue_wait_ms");
    assert!((450..=1200).contains(&waited), "{waited} ms");
    assert_eq!(
        (stat(addr, "pool_busy"), stat(addr, "pool_waiting")),
        (0, 0)
    );
}

#[test]
fn cpu_work_takes_its_time() {
    let sim = Simulated {
        cpu: Duration::from_millis(300),
        ..Simulated::default()
    };
    let addr = start(Duration::ZERO, sim);
    let t = Instant::now();
    assert_eq!(get(addr, "/").0, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(22),
        "{:?}",
        t.elapsed()
    );
    // Stats answer at once, whatever the work.
    let t = Instant::now();
    get(addr, "/__stats");
    assert!(t.elapsed() < Duration::from_millis(20), "{:?}", t.elapsed());
}

/// One HTTP/1.0 request (a body delimited by the close): status and body bytes.
fn get10(addr: SocketAddr, path: &str) -> (u16, usize) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let status = std::str::from_utf8(&raw[9..12]).unwrap().parse().unwrap();
    (status, raw.len() - head_end)
}

#[test]
fn sizes_and_injected_errors_are_exact() {
    let sim = Simulated {
        size: 10_000,
        errors: 0.25,
        ..Simulated::default()
    };
    let addr = start(Duration::ZERO, sim);
    let answers: Vec<(u16, usize)> = (0..8).map(|_| get10(addr, "/")).collect();
    let errors = answers.iter().filter(|(s, _)| *s == 500).count();
    assert_eq!(errors, 2, "{answers:?}");
    assert!(
        answers
            .iter()
            .filter(|(s, _)| *s == 200)
            .all(|(_, n)| *n == 10_000),
        "{answers:?}"
    );
    assert_eq!(stat(addr, "injected_errors"), 2);
}

#[test]
fn past_the_connection_cap_a_client_waits_unaccepted() {
    let sim = Simulated {
        max_conns: 2,
        ..Simulated::default()
    };
    let addr = start(Duration::ZERO, sim);
    // Two clients hold the two connections open.
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            write!(s, "GET / HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf).unwrap();
            s
        })
        .collect();
    // A third connects (the kernel completes the handshake) but is not served.
    let mut third = TcpStream::connect(addr).unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    write!(
        third,
        "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = [0u8; 512];
    assert!(third.read(&mut buf).is_err(), "served past the cap");
    // One of the two leaves: the third is accepted and answered.
    drop(held.pop());
    third
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let n = third.read(&mut buf).unwrap();
    assert!(std::str::from_utf8(&buf[..n])
        .unwrap()
        .starts_with("HTTP/1.1 200"));
}

#[test]
fn every_nth_request_stalls() {
    let sim = Simulated {
        stall_every: 4,
        stall: Duration::from_millis(300),
        ..Simulated::default()
    };
    let addr = start(Duration::ZERO, sim);
    let took: Vec<Duration> = (0..8)
        .map(|_| {
            let t = Instant::now();
            assert_eq!(get(addr, "/").0, 200);
            t.elapsed()
        })
        .collect();
    let slow: Vec<usize> = (0..8)
        .filter(|i| took[*i] >= Duration::from_millis(300))
        .collect();
    assert_eq!(slow, [3, 7], "{took:?}");
    assert_eq!(stat(addr, "stalls"), 2);
}
