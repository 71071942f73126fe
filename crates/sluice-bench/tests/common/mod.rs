//! What the tests of the generator share: servers to load, and plans to run.
#![allow(dead_code)]

use sluice_bench::report::Report;
use sluice_bench::{Plan, RequestSpec, Step, Target, Weighted};
use sluice_simulated::backend::{self, Options};
use std::net::SocketAddr;
use std::time::Duration;

pub fn backend_addr(name: &str) -> SocketAddr {
    spawn_backend(name, false)
}

/// A lab backend whose WebSocket clients speak STOMP to its own broker.
pub fn stomp_backend_addr(name: &str) -> SocketAddr {
    spawn_backend(name, true)
}

fn spawn_backend(name: &str, stomp: bool) -> SocketAddr {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let options = Options {
        name: name.into(),
        delay: Duration::ZERO,
        stomp,
    };
    let addr = runtime
        .block_on(backend::spawn("127.0.0.1:0".parse().unwrap(), options))
        .unwrap();
    // The backend runs on this runtime's thread for the rest of the test process.
    std::mem::forget(runtime);
    addr
}

/// The requests a lab backend has answered (its own count, minus this question).
pub fn answered(addr: SocketAddr) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /__stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let n: u64 = text
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("requests="))
        .unwrap()
        .parse()
        .unwrap();
    n - 1
}

pub fn plan(url: &str, steps: Vec<Step>, keep_alive: bool) -> Plan {
    let target = Target::parse(url).unwrap();
    Plan {
        steps,
        requests: vec![Weighted {
            request: RequestSpec::new("GET", target, &[], vec![]).unwrap(),
            weight: 1,
        }],
        keep_alive,
        timeout: Duration::from_secs(5),
        pace: Duration::from_micros(100),
        threads: 2,
        source_addrs: vec![],
        scenario: None,
        beside: Vec::new(),
        ok_status: Default::default(),
        tls: None,
        h2_streams: None,
        follow: false,
        resolve: Vec::new(),
    }
}

pub fn run(plan: Plan) -> Report {
    let (_tx, stop) = tokio::sync::watch::channel(false);
    sluice_bench::run(plan, &stop, &|_, _, _| {}, &mut |_| {}).unwrap()
}

/// A field of a lab backend's `/__stats` answer.
pub fn stats_field(addr: SocketAddr, key: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /__stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key))
        .unwrap()
        .parse()
        .unwrap()
}
