//! Connections open per client address on a listener with `max_conns_per_client`
//! (nginx's `limit_conn` on `$binary_remote_addr`), counted for the whole process: one
//! map per listener, in shards so that workers accepting at once rarely meet on a
//! lock. Only listeners with the limit count at all; a reload keeps the counts.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

const SHARDS: usize = 16;

#[derive(Default)]
pub struct ClientConns {
    shards: [Mutex<HashMap<IpAddr, u32>>; SHARDS],
    hasher: RandomState,
}

/// A connection counted for its client until dropped.
pub struct Entered {
    conns: Arc<ClientConns>,
    ip: IpAddr,
}

impl ClientConns {
    fn shard(&self, ip: &IpAddr) -> std::sync::MutexGuard<'_, HashMap<IpAddr, u32>> {
        let i = self.hasher.hash_one(ip) as usize % SHARDS;
        // One insert or update at a time: a panic cannot leave a shard half-changed.
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a new connection from `ip`, unless it has `limit` open already (`None`).
    pub fn enter(self: &Arc<Self>, ip: IpAddr, limit: u32) -> Option<Entered> {
        let mut shard = self.shard(&ip);
        let open = shard.entry(ip).or_insert(0);
        if *open >= limit {
            return None;
        }
        *open += 1;
        Some(Entered {
            conns: self.clone(),
            ip,
        })
    }

    /// Connections `ip` has open now.
    #[cfg(test)]
    pub fn open(&self, ip: IpAddr) -> u32 {
        self.shard(&ip).get(&ip).copied().unwrap_or(0)
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let mut shard = self.conns.shard(&self.ip);
        if let Some(open) = shard.get_mut(&self.ip) {
            *open -= 1;
            if *open == 0 {
                shard.remove(&self.ip);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_has_at_most_its_limit_and_a_closed_one_frees_a_place() {
        let conns = Arc::new(ClientConns::default());
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let first = conns.enter(a, 2).unwrap();
        let _second = conns.enter(a, 2).unwrap();
        assert!(conns.enter(a, 2).is_none());
        assert!(conns.enter(b, 2).is_some(), "another address counts apart");
        drop(first);
        assert_eq!(conns.open(a), 1);
        assert!(conns.enter(a, 2).is_some());
    }
}
