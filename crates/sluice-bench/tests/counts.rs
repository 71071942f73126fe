//! The generator's numbers against what servers saw: real sockets on 127.0.0.1, the lab's
//! backend (which counts the requests it answers) and raw servers that misbehave on
//! purpose.

use sluice_bench::report::Report;
use sluice_bench::{Length, Load, Plan, RequestSpec, Step, Target, Weighted};
use sluice_lab::backend::{self, Options};
use std::net::SocketAddr;
use std::time::Duration;

fn backend_addr(name: &str) -> SocketAddr {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let options = Options {
        name: name.into(),
        delay: Duration::ZERO,
        stomp: false,
    };
    let addr = runtime
        .block_on(backend::spawn("127.0.0.1:0".parse().unwrap(), options))
        .unwrap();
    // The backend runs on this runtime's thread for the rest of the test process.
    std::mem::forget(runtime);
    addr
}

/// The requests a lab backend has answered (its own count, minus this question).
fn answered(addr: SocketAddr) -> u64 {
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
        threads: 2,
        source_addrs: vec![],
    }
}

pub fn run(plan: Plan) -> Report {
    let (_tx, stop) = tokio::sync::watch::channel(false);
    sluice_bench::run(plan, &stop, &|_, _, _| {}, &mut |_| {}).unwrap()
}

#[test]
fn closed_model_samples_are_what_the_backend_answered() {
    let addr = backend_addr("a");
    let users = Load::Users {
        users: 7,
        ramp: Duration::from_millis(100),
        think: Duration::ZERO,
    };
    let steps = vec![
        Step {
            load: users,
            length: Length::Iterations(30),
        },
        Step {
            load: users,
            length: Length::Duration(Duration::from_millis(500)),
        },
    ];
    let report = run(plan(&format!("http://{addr}/"), steps, true));
    let samples: u64 = report.steps.iter().map(|s| s.summary.samples).sum();
    assert_eq!(report.steps[0].summary.samples, 7 * 30);
    assert!(report.steps[1].summary.samples > 100);
    assert_eq!(samples, answered(addr));
    assert!(report.steps.iter().all(|s| s.summary.errors == 0));
}

#[test]
fn closed_model_without_keepalive_opens_a_connection_per_request() {
    let addr = backend_addr("b");
    let steps = vec![Step {
        load: Load::Users {
            users: 3,
            ramp: Duration::ZERO,
            think: Duration::ZERO,
        },
        length: Length::Iterations(20),
    }];
    let report = run(plan(&format!("http://{addr}/"), steps, false));
    assert_eq!(report.steps[0].summary.samples, 60);
    assert_eq!(answered(addr), 60);
    let conns = stats_field(addr, "connections=");
    // 60 connections for the requests, two for the stats questions.
    assert_eq!(conns, 62, "one connection per request");
}

fn stats_field(addr: SocketAddr, key: &str) -> u64 {
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

#[test]
fn open_model_sends_exactly_its_schedule() {
    let addr = backend_addr("c");
    let steps = vec![
        Step {
            load: Load::Rate {
                rate: 400.0,
                max_in_flight: 100,
            },
            length: Length::Duration(Duration::from_millis(1500)),
        },
        Step {
            load: Load::Rate {
                rate: 150.0,
                max_in_flight: 100,
            },
            length: Length::Duration(Duration::from_secs(1)),
        },
    ];
    let report = run(plan(&format!("http://{addr}/"), steps, true));
    assert_eq!(report.steps[0].summary.samples, 600);
    assert_eq!(report.steps[1].summary.samples, 150);
    assert_eq!(answered(addr), 750);
    for s in &report.steps {
        assert_eq!((s.missed, s.summary.errors), (0, 0));
        let expected = s.rate.unwrap();
        let got = s.summary.throughput_rps;
        assert!(
            (got - expected).abs() / expected < 0.05,
            "{got} req/s for {expected}"
        );
    }
}
