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
