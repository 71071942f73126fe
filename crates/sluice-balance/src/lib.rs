//! Load-balancing algorithms over a set of servers, as plain data structures.
//!
//! This crate owns the decision "which server gets the next request". It must never do
//! I/O, read a clock or draw random numbers itself: the caller passes in what the algorithm
//! needs (each server's weight, in-flight count and availability, the request's hash key,
//! a random word, the time), so every algorithm is deterministic under test and two
//! processes with the same inputs make the same choices.

mod consistent;
mod crc32;
mod ketama;
mod least_conn;
mod maglev;
mod peak_ewma;
mod random_two;
mod round_robin;

pub use consistent::{ConsistentHash, Table};
pub use crc32::crc32;
pub use ketama::Ketama;
pub use least_conn::LeastConn;
pub use maglev::{default_table_size, Maglev};
pub use peak_ewma::PeakEwma;
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

/// A server as the hashing algorithms see it: its name places it on the ring or in the
/// table (for nginx compatibility, the address as written in the config).
#[derive(Clone, Copy, Debug)]
pub struct Server<'a> {
    pub name: &'a str,
    pub weight: u32,
}

/// What a pick may depend on besides the servers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Context<'a> {
    /// The request's hash key (consistent hashing only).
    pub key: &'a [u8],
    /// A uniformly random word (randomised algorithms only).
    pub random: u64,
    /// Monotonic time in ns (peak-EWMA only).
    pub now_ns: u64,
}

/// The algorithms a pool can be configured with.
#[derive(Clone, Debug)]
pub enum Balancer {
    RoundRobin(SmoothWeighted),
    LeastConn(LeastConn),
    RandomTwo(RandomTwo),
    PeakEwma(PeakEwma),
    Hash(ConsistentHash),
}

impl Balancer {
    /// Picks a server index in `0..len`, or `None` when no server is available.
    /// `view(i)` describes server `i` now.
    pub fn pick(
        &mut self,
        len: usize,
        view: impl Fn(usize) -> Candidate,
        ctx: Context<'_>,
    ) -> Option<usize> {
        match self {
            Balancer::RoundRobin(rr) => rr.pick(len, view),
            Balancer::LeastConn(lc) => lc.pick(len, view),
            Balancer::RandomTwo(p2c) => p2c.pick(len, view, ctx.random),
            Balancer::PeakEwma(ewma) => ewma.pick(len, view, ctx.random, ctx.now_ns),
            Balancer::Hash(hash) => hash.pick(len, view, ctx.key),
        }
    }

    /// Reports how long a request to `server` took to answer. Only peak-EWMA learns from it.
    pub fn observe(&mut self, len: usize, server: usize, rtt_ns: u64, now_ns: u64) {
        if let Balancer::PeakEwma(ewma) = self {
            ewma.observe(len, server, rtt_ns, now_ns);
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
