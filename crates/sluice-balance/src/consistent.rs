//! Consistent hashing on a key (ketama ring or Maglev table), optionally with bounded
//! loads (Mirrokni, Thorup, Zadimoghaddam, 2016).
//!
//! Without a bound, a key goes to the first available server in its preference order, so
//! a key moves only when its server leaves. With a bound `c`, no server takes a request
//! that would put it above `ceil(c x average)` of the in-flight load (scaled by weight);
//! the key walks on to its next preferred server instead. That caps hot spots, at a
//! price: requests with the same key can land on different servers while the first is
//! full, which splits a chat room. That is why the bound is off unless asked for.

use crate::{Candidate, Ketama, LeastConn, Maglev, Server};

#[derive(Clone, Debug)]
pub enum Table {
    Ketama(Ketama),
    Maglev(Maglev),
}

#[derive(Clone, Debug)]
pub struct ConsistentHash {
    table: Table,
    bound: Option<f64>,
    /// For requests whose key is empty: they have no home, so they go where load is least.
    keyless: LeastConn,
}

impl ConsistentHash {
    pub fn ketama(servers: &[Server<'_>], bound: Option<f64>) -> Self {
        ConsistentHash {
            table: Table::Ketama(Ketama::new(servers)),
            bound,
            keyless: LeastConn::new(),
        }
    }

    pub fn maglev(servers: &[Server<'_>], size: usize, bound: Option<f64>) -> Self {
        ConsistentHash {
            table: Table::Maglev(Maglev::new(servers, size)),
            bound,
            keyless: LeastConn::new(),
        }
    }

    pub fn table(&self) -> &Table {
        &self.table
    }

    pub fn pick(
        &mut self,
        len: usize,
        view: impl Fn(usize) -> Candidate,
        key: &[u8],
    ) -> Option<usize> {
        if key.is_empty() {
            return self.keyless.pick(len, view);
        }
        let limit = self.bound.map(|c| Limit::new(c, len, &view));
        let fits = |s: usize| {
            let c = view(s);
            c.available && limit.as_ref().is_none_or(|l| l.admits(c))
        };
        match &self.table {
            Table::Ketama(ring) => ring.walk(Ketama::hash_key(key)).find(|s| fits(*s)),
            Table::Maglev(table) => table.walk(Maglev::hash_key(key)).find(|s| fits(*s)),
        }
    }
}

/// The bounded-load capacity check for one pick.
struct Limit {
    /// `c x (load + 1) / total weight`: capacity per unit of weight.
    per_weight: f64,
}

impl Limit {
    fn new(c: f64, len: usize, view: &impl Fn(usize) -> Candidate) -> Self {
        let (mut load, mut weight) = (0u64, 0u64);
        for c in (0..len).map(view).filter(|c| c.available) {
            load += u64::from(c.active);
            weight += u64::from(c.weight.max(1));
        }
        Limit {
            per_weight: c * (load + 1) as f64 / weight.max(1) as f64,
        }
    }

    /// True when one more request keeps the server within `ceil(c x its fair share)`.
    fn admits(&self, c: Candidate) -> bool {
        let capacity = (self.per_weight * f64::from(c.weight.max(1))).ceil();
        f64::from(c.active) + 1.0 <= capacity
    }
}
