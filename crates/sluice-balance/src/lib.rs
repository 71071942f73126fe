//! Load-balancing algorithms over a set of servers, as plain data structures.
//!
//! This crate owns the decision "which server gets the next request". It must never do
//! I/O, read a clock or draw random numbers itself: the caller passes in what the algorithm
//! needs (each server's weight, in-flight count and availability, and a random word), so
//! every algorithm is deterministic under test and two processes with the same inputs make
//! the same choices.

mod least_conn;
mod random_two;
mod round_robin;

pub use least_conn::LeastConn;
pub use random_two::RandomTwo;
pub use round_robin::SmoothWeighted;

/// What an algorithm may know about one server at the moment of a pick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Relative capacity, at least 1.
    pub weight: u32,
    /// Requests (or tunnels) currently in flight on this server.
    pub active: u32,
    /// False when the server is down or draining: it must not be picked.
    pub available: bool,
}

impl Candidate {
    /// An available server with this weight and nothing in flight.
    pub fn idle(weight: u32) -> Self {
        Candidate {
            weight,
            active: 0,
            available: true,
        }
    }
}

/// The algorithms a pool can be configured with.
#[derive(Clone, Debug)]
pub enum Balancer {
    RoundRobin(SmoothWeighted),
    LeastConn(LeastConn),
    RandomTwo(RandomTwo),
}

impl Balancer {
    /// Picks a server index in `0..len`, or `None` when no server is available.
    ///
    /// `view(i)` describes server `i` now; `random` is a uniformly random word that only
    /// the randomised algorithms consume.
    pub fn pick(
        &mut self,
        len: usize,
        view: impl Fn(usize) -> Candidate,
        random: u64,
    ) -> Option<usize> {
        match self {
            Balancer::RoundRobin(rr) => rr.pick(len, view),
            Balancer::LeastConn(lc) => lc.pick(len, view),
            Balancer::RandomTwo(p2c) => p2c.pick(len, view, random),
        }
    }
}

/// True when `a` carries strictly less load per unit of weight than `b`.
///
/// Compares `a.active / a.weight < b.active / b.weight` without division, so weights are
/// honoured exactly (nginx's least_conn does the same cross-multiplication).
pub(crate) fn less_loaded(a: Candidate, b: Candidate) -> bool {
    u64::from(a.active) * u64::from(b.weight.max(1))
        < u64::from(b.active) * u64::from(a.weight.max(1))
}
