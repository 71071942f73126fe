//! A discrete-event simulation of one slow server among three, in simulated time.
//!
//! Each server works on up to 8 requests at once and queues the rest; two answer in about
//! 10 ms, one in about 100 ms (10x slower). Requests arrive as a Poisson stream at 600/s
//! for 60 simulated seconds, and each balancer picks a server seeing what sluice sees: the
//! in-flight count of every server and, for peak-EWMA, the latency of finished requests.
//! Round robin keeps feeding the slow server a third of the traffic, which is more than it
//! can serve, so its queue and its users' waits grow for the whole run.

use sluice_balance::{
    Balancer, Candidate, Context, LeastConn, PeakEwma, RandomTwo, SmoothWeighted,
};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt::Write;

const MS: u64 = 1_000_000;
const SERVICE_MS: [u64; 3] = [10, 100, 10];
const SLOTS: usize = 8;
const RATE_PER_S: f64 = 600.0;
const DURATION_NS: u64 = 60_000 * MS;

/// The simulation's table as Markdown.
pub fn report() -> String {
    let mut out = String::from("## One server 10x slower (simulated: 3 servers, 8 concurrent slots each, 10/100/10 ms, Poisson 600 req/s for 60 s)\n\n");
    out.push_str("| balance | share to the slow server | p50 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|\n");
    let algorithms: [(&str, Balancer); 4] = [
        ("round_robin", Balancer::RoundRobin(SmoothWeighted::new())),
        ("least_conn", Balancer::LeastConn(LeastConn::new())),
        ("random_two", Balancer::RandomTwo(RandomTwo::new())),
        ("peak_ewma", Balancer::PeakEwma(PeakEwma::new(10_000 * MS))),
    ];
    for (name, balancer) in algorithms {
        let r = simulate(balancer);
        let _ = writeln!(
            out,
            "| {name} | {:.1}% | {:.1} | {:.1} | {:.1} |",
            100.0 * r.slow_share,
            r.p50_ms,
            r.p99_ms,
            r.max_ms
        );
    }
    out
}

pub struct Outcome {
    pub slow_share: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// A request finishes on a server; holds when it arrived.
    Done {
        server: usize,
        arrived: u64,
    },
    Arrival,
}

struct Server {
    busy: usize,
    queue: VecDeque<u64>,
}

/// The simulated world: servers, the event queue, the random stream, what was measured.
struct Sim {
    servers: Vec<Server>,
    events: BinaryHeap<Reverse<(u64, Event)>>,
    rng: u64,
    latencies: Vec<u64>,
    to_slow: usize,
    arrivals: usize,
}

/// Runs the simulation with `balancer` deciding every request.
pub fn simulate(mut balancer: Balancer) -> Outcome {
    let servers = (0..3)
        .map(|_| Server {
            busy: 0,
            queue: VecDeque::new(),
        })
        .collect();
    let mut sim = Sim {
        servers,
        events: BinaryHeap::new(),
        rng: 0x9e37_79b9_7f4a_7c15,
        latencies: Vec::new(),
        to_slow: 0,
        arrivals: 0,
    };
    sim.events.push(Reverse((0, Event::Arrival)));
    while let Some(Reverse((now, event))) = sim.events.pop() {
        match event {
            Event::Arrival if now < DURATION_NS => sim.arrive(&mut balancer, now),
            Event::Arrival => {}
            Event::Done { server, arrived } => sim.finish(&mut balancer, server, arrived, now),
        }
    }
    sim.latencies.sort_unstable();
    let at =
        |q: f64| sim.latencies[((sim.latencies.len() - 1) as f64 * q) as usize] as f64 / MS as f64;
    Outcome {
        slow_share: sim.to_slow as f64 / sim.arrivals.max(1) as f64,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: at(1.0),
    }
}

impl Sim {
    /// A request arrives: the balancer picks, seeing each server's requests in flight.
    fn arrive(&mut self, balancer: &mut Balancer, now: u64) {
        let servers = &self.servers;
        let view = |i: usize| Candidate {
            weight: 1,
            active: (servers[i].busy + servers[i].queue.len()) as u32,
            available: true,
        };
        let s = balancer
            .pick(
                3,
                view,
                Context {
                    key: b"",
                    random: next(&mut self.rng),
                    now_ns: now,
                },
            )
            .unwrap_or(0);
        self.arrivals += 1;
        self.to_slow += usize::from(s == 1);
        self.admit(s, now, now);
        let gap = (-(1.0 - unit(&mut self.rng)).ln() / RATE_PER_S * 1e9) as u64;
        self.events
            .push(Reverse((now + gap.max(1), Event::Arrival)));
    }

    /// A request finishes: record it, tell the balancer, start the next queued one.
    fn finish(&mut self, balancer: &mut Balancer, server: usize, arrived: u64, now: u64) {
        self.latencies.push(now - arrived);
        balancer.observe(3, server, now - arrived, now);
        self.servers[server].busy -= 1;
        if let Some(waiting) = self.servers[server].queue.pop_front() {
            self.admit(server, waiting, now);
        }
    }

    /// Starts the request that arrived at `arrived` on `server` now, or queues it.
    fn admit(&mut self, server: usize, arrived: u64, now: u64) {
        let s = &mut self.servers[server];
        if s.busy >= SLOTS {
            s.queue.push_back(arrived);
            return;
        }
        s.busy += 1;
        // Service time within +-20% of the server's typical time.
        let service = (SERVICE_MS[server] * MS) as f64 * (0.8 + 0.4 * unit(&mut self.rng));
        self.events.push(Reverse((
            now + service as u64,
            Event::Done { server, arrived },
        )));
    }
}

fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn unit(state: &mut u64) -> f64 {
    (next(state) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_ewma_avoids_the_slow_server_and_round_robin_does_not() {
        let rr = simulate(Balancer::RoundRobin(SmoothWeighted::new()));
        let ewma = simulate(Balancer::PeakEwma(PeakEwma::new(10_000 * MS)));
        assert!(
            (rr.slow_share - 1.0 / 3.0).abs() < 0.01,
            "round robin share {}",
            rr.slow_share
        );
        assert!(
            ewma.slow_share < 0.10,
            "peak_ewma share {}",
            ewma.slow_share
        );
        assert!(
            ewma.p99_ms < rr.p99_ms / 10.0,
            "p99 {} vs {}",
            ewma.p99_ms,
            rr.p99_ms
        );
    }
}
