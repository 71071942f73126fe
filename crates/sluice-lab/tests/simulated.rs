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
