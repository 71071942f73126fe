//! sluice's load generator: what JMeter, nGrinder and wrk gave our users, in one tool,
//! honest about latency.
//!
//! - **Closed model** (users in steps, JMeter thread groups, nGrinder vusers): each user
//!   sends, waits, thinks, and goes again.
//! - **Open model** (arrival rate, wrk2, k6 arrival-rate): requests at fixed intended
//!   times; latency counts from the intended time, so a stalled server cannot hide
//!   (coordinated omission corrected as wrk2 does), and the uncorrected figures are
//!   kept beside it.
//! - Results per step and label in JMeter's and nGrinder's terms plus HdrHistogram
//!   percentiles, a per-second series and peak TPS ([`report`]), what came back by
//!   status code, connections and TLS handshakes; `--fail-if` thresholds.
//! - Over plain TCP or TLS ([`tls`], rustls), HTTP/1.1 or HTTP/2 ([`http2`]).
//!
//! This crate owns generating load and measuring it. It never imports the proxy: its
//! HTTP/1 client is its own (on `httparse`), so a bug in the proxy's parser cannot hide
//! behind the same bug here. HTTP/2 is the `h2` crate's, which the proxy's server side
//! also uses: the frame codec is shared, the proxy's own checks of a request are not.
//! The CLI (`sluice bench`) is a thin layer over [`run`].

pub mod capacity;
pub mod conn;
pub mod cookies;
pub mod delivery;
pub mod har;
pub mod hdrlog;
pub mod html;
pub mod http2;
pub mod jmx;
pub mod merge;
mod open_model;
mod pacer;
pub mod plan;
pub mod progress;
pub mod redirect;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod stats;
pub mod stomp;
pub mod target;
pub mod threshold;
pub mod tls;
mod virtual_user;
mod websocket;
mod worker;

pub use plan::{Length, Load, Plan, Step, Weighted};
pub use progress::Snapshot;
pub use report::Report;
pub use target::{RequestSpec, Target};

use report::{RequestInfo, StepReport};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Runs every step of `plan` in turn. `observe(step, snapshot, elapsed)` is called about
/// once a second while a step runs, and `finished(step)` after each. `stop` turning true
/// interrupts the run; the report then holds what was measured until then.
pub fn run(
    plan: Plan,
    stop: &watch::Receiver<bool>,
    observe: &(dyn Fn(usize, &Snapshot, Duration) + Sync),
    finished: &mut dyn FnMut(&StepReport),
) -> std::io::Result<Report> {
    let plan = Arc::new(plan);
    let mut steps = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if *stop.borrow() {
            break;
        }
        let watch_step = |s: &Snapshot, elapsed: Duration| observe(i, s, elapsed);
        let ran = runner::run_step(&plan, *step, stop, &watch_step)?;
        let mut report = StepReport::of(&ran);
        report.arrivals = plan.scenario.is_some() && report.rate.is_some();
        // Followed, redirects are the way to the pages, not a mistake to point out.
        if !plan.follow {
            report
                .warnings
                .extend(report::redirect_warning(&report.summary));
        }
        finished(&report);
        steps.push(report);
    }
    let model = match plan.steps.first().map(|s| s.load) {
        Some(Load::Rate { .. }) => "open",
        _ => "closed",
    };
    Ok(Report {
        tool: format!("sluice bench {}", env!("CARGO_PKG_VERSION")),
        requests: request_infos(&plan),
        model: model.into(),
        protocol: if plan.h2_streams.is_some() {
            "h2"
        } else {
            "http/1.1"
        }
        .into(),
        streams_per_connection: plan.h2_streams,
        interrupted: *stop.borrow(),
        steps,
    })
}

/// What each request of the plan is; for a scenario, each of its steps (the method
/// says what the step does: `GET`, `WS`, `WS_SEND`, `STOMP SEND`, ...).
fn request_infos(plan: &Plan) -> Vec<RequestInfo> {
    if let Some(scenario) = &plan.scenario {
        return scenario
            .all_steps()
            .map(|step| RequestInfo {
                label: step.name.clone(),
                method: step.action.kind(),
                url: scenario.target.url.clone(),
                weight: step.repeat,
            })
            .collect();
    }
    plan.requests
        .iter()
        .map(|w| RequestInfo {
            label: w.request.label.clone(),
            method: w.request.method.clone(),
            url: w.request.target.url.clone(),
            weight: w.weight,
        })
        .collect()
}
