//! The simulated app tier against real sockets: a worker pool that makes requests wait
//! and refuses them past its queue, with the evidence in `/__stats`, CPU work that
//! takes its time, and a connection pool to a simulated database (another backend).

use sluice_simulated::backend::{serve_simulated, Options, Simulated};
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
    // The server closes the third (it asked to): this request's connection takes its
    // place beside the one still held.
    assert_eq!((stat(addr, "max_conns"), stat(addr, "conns_open")), (2, 2));
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

/// `n` requests to `/` at once, each on a connection of its own: their statuses, sorted,
/// and how long all took.
fn burst(addr: SocketAddr, n: usize) -> (Vec<u16>, Duration) {
    let t = Instant::now();
    let requests: Vec<_> = (0..n)
        .map(|_| std::thread::spawn(move || get(addr, "/").0))
        .collect();
    let mut statuses: Vec<u16> = requests.into_iter().map(|r| r.join().unwrap()).collect();
    statuses.sort_unstable();
    (statuses, t.elapsed())
}

/// A simulated database: a backend whose delay is each query's time.
fn database(delay: Duration) -> SocketAddr {
    start(delay, Simulated::default())
}

#[test]
fn a_small_db_pool_makes_requests_wait_for_a_connection() {
    let db = database(Duration::from_millis(50));
    let app = start(
        Duration::ZERO,
        Simulated {
            db: Some(db),
            db_pool: 2,
            ..Simulated::default()
        },
    );
    let (statuses, took) = burst(app, 8);
    assert_eq!(statuses, [200; 8]);
    // Two connections at a time, 50 ms a query: at least four rounds.
    assert!(took >= Duration::from_millis(200), "{took:?}");
    // The database's own count, this /__stats request included: the eight queries came
    // over at most two connections, kept open by the pool.
    let (_, db_stats) = get(db, "/__stats");
    let key = |k: &str| -> u64 {
        db_stats
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(key("requests") - 1, 8, "{db_stats}");
    assert!((1..=2).contains(&(key("connections") - 1)), "{db_stats}");
    assert_eq!(key("conns_open"), key("connections"), "{db_stats}");
    assert_eq!(stat(app, "db_pool_size"), 2);
    assert_eq!(stat(app, "db_queries"), 8);
    assert!(stat(app, "db_waits") > 0);
    assert!(stat(app, "db_wait_ms") > 0);
    // Eight queries of at least 50 ms each, a connection held through each.
    assert!(stat(app, "db_pool_busy_ms") >= 8 * 50);
    assert_eq!(
        (stat(app, "db_pool_busy"), stat(app, "db_pool_waiting")),
        (0, 0)
    );
    assert_eq!((stat(app, "db_errors"), stat(app, "db_timeouts")), (0, 0));
}

#[test]
fn pool_busy_ms_is_threads_times_time_when_full() {
    let sim = Simulated {
        threads: 2,
        queue: 10,
        ..Simulated::default()
    };
    let app = start(Duration::from_millis(300), sim);
    let before = stat(app, "pool_busy_ms");
    let (statuses, took) = burst(app, 6);
    assert_eq!(statuses, [200; 6]);
    let busy = stat(app, "pool_busy_ms") - before;
    // Six requests of at least 300 ms each; and never more than both threads all along.
    assert!(busy >= 6 * 300, "{busy} ms");
    let full = 2 * took.as_millis() as u64;
    assert!(busy <= full + 5, "{busy} ms in {took:?}");
    // Kept full by the queue, the pool was busy most of the time.
    assert!(busy * 2 >= full, "{busy} ms in {took:?}");
    assert_eq!(stat(app, "pool_entered"), 6);
    let waits = stat(app, "queue_waits");
    assert!((1..=4).contains(&waits), "{waits}");
}

#[test]
fn a_database_that_is_down_gives_502() {
    // A port just freed: nothing listens there.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let app = start(
        Duration::ZERO,
        Simulated {
            db: Some(down),
            ..Simulated::default()
        },
    );
    for _ in 0..2 {
        let (status, body) = get(app, "/");
        assert_eq!(status, 502, "{body}");
        assert!(body.starts_with("db error"), "{body}");
    }
    assert_eq!((stat(app, "db_errors"), stat(app, "db_queries")), (2, 2));
    assert_eq!(stat(app, "db_pool_busy"), 0);
}

#[test]
fn waiting_past_db_timeout_gives_503() {
    let db = database(Duration::from_millis(300));
    let app = start(
        Duration::ZERO,
        Simulated {
            db: Some(db),
            db_pool: 1,
            db_timeout: Duration::from_millis(50),
            ..Simulated::default()
        },
    );
    let (statuses, _) = burst(app, 2);
    assert_eq!(statuses, [200, 503]);
    assert_eq!(stat(app, "db_timeouts"), 1);
    assert_eq!((stat(app, "db_waits"), stat(app, "db_queries")), (1, 1));
    assert!(stat(app, "db_wait_ms") >= 50);
}

#[test]
fn a_connection_the_database_closed_is_replaced() {
    // A database that answers one query per connection, then closes it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let db = listener.local_addr().unwrap();
    let accepted = std::thread::spawn(move || {
        for _ in 0..2 {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).unwrap();
            write!(s, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n").unwrap();
        }
    });
    let app = start(
        Duration::ZERO,
        Simulated {
            db: Some(db),
            db_pool: 1,
            ..Simulated::default()
        },
    );
    assert_eq!(get(app, "/").0, 200);
    // Time for the pool to see the close; then the next request opens a new connection.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get(app, "/").0, 200);
    accepted.join().unwrap();
    assert_eq!((stat(app, "db_queries"), stat(app, "db_errors")), (2, 0));
}
