//! The generator's numbers against what servers saw: real sockets on 127.0.0.1, the lab's
//! backend (which counts the requests it answers) and raw servers that misbehave on
//! purpose.

mod common;

use common::{answered, backend_addr, plan, run, stats_field};
use sluice_bench::{Length, Load, Step};
use std::time::Duration;

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

/// Runs `steps` against a fresh backend, reading the backend's own count as each step
/// ends; returns each step's report and the requests the backend answered during it.
fn per_step_counts(name: &str, steps: Vec<Step>) -> Vec<(sluice_bench::report::StepReport, u64)> {
    let addr = backend_addr(name);
    let (_tx, stop) = tokio::sync::watch::channel(false);
    let mut seen = Vec::new();
    let mut last = answered(addr);
    let mut finished = |step: &sluice_bench::report::StepReport| {
        // `answered` leaves its own question out; the previous one counts here.
        let now = answered(addr);
        seen.push((step.clone(), now - last - 1));
        last = now;
    };
    let plan = plan(&format!("http://{addr}/"), steps, true);
    sluice_bench::run(plan, &stop, &|_, _, _| {}, &mut finished).unwrap();
    seen
}

#[test]
fn each_steps_throughput_is_the_backends_own_count_over_that_step() {
    let users = |users| Step {
        load: Load::Users {
            users,
            ramp: Duration::ZERO,
            think: Duration::from_millis(2),
        },
        length: Length::Duration(Duration::from_millis(1500)),
    };
    let rate = |rate| Step {
        load: Load::Rate {
            rate,
            max_in_flight: 100,
        },
        length: Length::Duration(Duration::from_millis(1500)),
    };
    let closed = per_step_counts("steps-closed", vec![users(2), users(6)]);
    let open = per_step_counts("steps-open", vec![rate(300.0), rate(900.0)]);
    for (step, backend) in closed.iter().chain(&open) {
        let s = &step.summary;
        assert_eq!(
            s.samples, *backend,
            "every sample of the step, and only those"
        );
        // The span the reported throughput implies for the backend's count is the
        // step, less the first request's start and the last one's end: a step's
        // duration counted the progress watcher's last 100 ms tick once. (Compared in
        // time rather than as 2% of the rate: on a busy machine one stalled request at
        // a step's edge took 41 ms.)
        let implied = *backend as f64 / s.throughput_rps;
        let edges = step.duration_s - implied;
        assert!(
            (-0.002..0.08).contains(&edges),
            "{} req/s reported: {backend} answers over {implied:.3} s of a {} s step",
            s.throughput_rps,
            step.duration_s
        );
    }
    // The steps differ: more users, higher rate, more throughput.
    assert!(
        closed[1].1 > closed[0].1 * 2,
        "{} vs {}",
        closed[1].1,
        closed[0].1
    );
    assert!(open[1].1 == 3 * open[0].1, "{} vs {}", open[1].1, open[0].1);
}

/// A raw server on 127.0.0.1 that answers each connection's first request with
/// `answer` (then keeps writing `then`, at most 64 MiB, for as long as the client
/// reads), and closes.
fn misbehaving(answer: &'static [u8], then: &'static [u8]) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut c in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let _ = c.read(&mut [0; 4096]);
                let _ = c.write_all(answer);
                for _ in 0..(64 << 20) / then.len().max(1) {
                    if then.is_empty() || c.write_all(then).is_err() {
                        break;
                    }
                }
            });
        }
    });
    addr
}

/// What a server sends that is no HTTP response is counted as such, and bounded: a
/// head that never ends stops at 256 KiB (not buffered until the timeout), and a body
/// framed two ways is malformed, not one framing picked.
#[test]
fn a_misbehaving_server_is_counted_and_bounded() {
    let endless = misbehaving(b"HTTP/1.1 200 OK\r\nX-Long: ", &[b'a'; 4096]);
    let split = misbehaving(
        b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nabcde",
        b"",
    );
    for (addr, kind) in [
        (endless, "response head over 256 KiB"),
        (split, "malformed response"),
    ] {
        let steps = vec![Step {
            load: Load::Users {
                users: 2,
                ramp: Duration::ZERO,
                think: Duration::ZERO,
            },
            length: Length::Iterations(3),
        }];
        let report = run(plan(&format!("http://{addr}/"), steps, true));
        let summary = &report.steps[0].summary;
        assert_eq!(summary.samples, 6, "{kind}");
        assert_eq!(
            summary.error_kinds.get(kind),
            Some(&6),
            "{:?}",
            summary.error_kinds
        );
    }
}
