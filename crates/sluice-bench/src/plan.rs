//! A load test as data: its steps, what each sends, and the limits it runs under.

use crate::scenario::Scenario;
use crate::target::RequestSpec;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// The load of one step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// A closed model (JMeter thread groups, nGrinder vusers): `users` each send a
    /// request, wait for its response, pause `think`, and go again. They start evenly
    /// over `ramp`.
    Users {
        users: usize,
        ramp: Duration,
        think: Duration,
    },
    /// An open model (wrk2, k6 arrival-rate): `rate` requests per second at fixed
    /// intended times, whatever the responses do, with at most `max_in_flight` waiting
    /// for an answer; a request that cannot go when meant goes late and its latency
    /// still counts from when it was meant to go.
    Rate { rate: f64, max_in_flight: usize },
}

/// How long a step lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Duration(Duration),
    /// Requests per user (a closed model only; JMeter's loop count).
    Iterations(u64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub load: Load,
    pub length: Length,
}

/// A request and how often it is chosen among the plan's requests.
#[derive(Debug, Clone)]
pub struct Weighted {
    pub request: RequestSpec,
    pub weight: u32,
}

/// A whole load test.
#[derive(Debug, Clone)]
pub struct Plan {
    pub steps: Vec<Step>,
    pub requests: Vec<Weighted>,
    /// One connection per user (or in-flight slot), reused; false opens one per request.
    pub keep_alive: bool,
    /// A request that takes longer fails as `timeout`.
    pub timeout: Duration,
    /// Worker threads (each with its own event loop); 0 = one per core.
    pub threads: usize,
    /// The open model wakes at most once per this interval and sends every request
    /// that is due: finer is more punctual and costs more CPU (a wake-up per request).
    pub pace: Duration,
    /// Source addresses to spread connections over (ephemeral ports run out at about
    /// 28,000 connections per source address and target).
    pub source_addrs: Vec<IpAddr>,
    /// What each user does, when it is a scenario rather than `requests` (then empty).
    pub scenario: Option<Arc<Scenario>>,
}

impl Plan {
    pub fn threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The `i`-th pick among the requests, by weight (a fixed, spread-out sequence,
    /// so that every step sends the mix the weights say).
    pub fn pick(&self, i: u64) -> &RequestSpec {
        let total: u64 = self.requests.iter().map(|w| u64::from(w.weight)).sum();
        if self.requests.len() == 1 || total == 0 {
            return &self.requests[0].request;
        }
        // Golden-ratio stepping spreads the picks instead of sending them in runs.
        let point = (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 11) % total;
        let mut acc = 0;
        for w in &self.requests {
            acc += u64::from(w.weight);
            if point < acc {
                return &w.request;
            }
        }
        &self.requests[0].request
    }
}
