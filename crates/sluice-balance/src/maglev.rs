//! Maglev hashing (Eisenbud et al., NSDI 2016): a lookup table of prime size M filled by
//! the servers in turn, each taking its next preferred free slot.
//!
//! Every server's preference list is a permutation of the slots, `(offset + j x skip) mod
//! M`, derived from its name alone, so the same server list gives the same table on every
//! machine. Shares differ by at most a slot or so per server, lookup is one array index,
//! and a membership change moves few keys (slightly more than a ring). With weights, a
//! server of weight w takes w turns per round.

use crate::Server;

/// The default table size: prime, and at least 100 x the number of servers, which the
/// paper shows keeps every server's share within about 1% of the others.
pub fn default_table_size(servers: usize) -> usize {
    next_prime(65_537.max(servers * 100))
}

#[derive(Clone, Debug)]
pub struct Maglev {
    table: Vec<u32>,
}

impl Maglev {
    pub fn new(servers: &[Server<'_>], size: usize) -> Self {
        let size = next_prime(size.max(2));
        let mut table = vec![u32::MAX; size];
        if servers.is_empty() {
            return Maglev { table: Vec::new() };
        }
        let prefs: Vec<(u64, u64)> = servers
            .iter()
            .map(|s| {
                (
                    hash64(s.name.as_bytes(), 0) % size as u64,
                    hash64(s.name.as_bytes(), 1) % (size as u64 - 1) + 1,
                )
            })
            .collect();
        let mut next = vec![0u64; servers.len()];
        let mut filled = 0;
        while filled < size {
            for (i, server) in servers.iter().enumerate() {
                for _ in 0..server.weight.max(1) {
                    let (offset, skip) = prefs[i];
                    let mut slot = ((offset + next[i] * skip) % size as u64) as usize;
                    while table[slot] != u32::MAX {
                        next[i] += 1;
                        slot = ((offset + next[i] * skip) % size as u64) as usize;
                    }
                    table[slot] = i as u32;
                    next[i] += 1;
                    filled += 1;
                    if filled == size {
                        return Maglev { table };
                    }
                }
            }
        }
        Maglev { table }
    }

    /// The hash of a request key for this table.
    pub fn hash_key(key: &[u8]) -> u64 {
        hash64(key, 2)
    }

    /// Server indexes in the order a key with `hash` prefers them: its slot's owner, then
    /// the owners of the following slots. Ends after one pass over the table.
    pub fn walk(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let n = self.table.len();
        let start = if n == 0 {
            0
        } else {
            (hash % n as u64) as usize
        };
        (0..n).map(move |i| self.table[(start + i) % n] as usize)
    }

    pub fn size(&self) -> usize {
        self.table.len()
    }

    /// The fraction of table slots each of `n` servers owns.
    pub fn ownership(&self, n: usize) -> Vec<f64> {
        let mut owned = vec![0usize; n];
        for &s in &self.table {
            if let Some(o) = owned.get_mut(s as usize) {
                *o += 1;
            }
        }
        owned
            .iter()
            .map(|o| *o as f64 / self.table.len().max(1) as f64)
            .collect()
    }
}

/// FNV-1a over `data` with a seed, then a 64-bit finaliser (splitmix64's) so that nearby
/// inputs spread over the whole range. Stable across platforms and releases, which std's
/// hashers do not promise.
pub(crate) fn hash64(data: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

fn next_prime(mut n: usize) -> usize {
    while !is_prime(n) {
        n += 1;
    }
    n
}

fn is_prime(n: usize) -> bool {
    if n < 2 {
        return false;
    }
    let mut d = 2;
    while d * d <= n {
        if n.is_multiple_of(d) {
            return false;
        }
        d += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_sizes_are_prime_and_large_enough() {
        assert_eq!(default_table_size(3), 65_537);
        assert_eq!(default_table_size(1000), 100_003);
        assert!(is_prime(next_prime(65_538)));
    }

    #[test]
    fn every_slot_is_owned_and_shares_are_even() {
        let names: Vec<String> = (0..7).map(|i| format!("10.0.0.{i}:80")).collect();
        let servers: Vec<Server> = names
            .iter()
            .map(|n| Server { name: n, weight: 1 })
            .collect();
        let m = Maglev::new(&servers, 65_537);
        let mut counts = [0usize; 7];
        m.walk(0).for_each(|s| counts[s] += 1);
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert_eq!(counts.iter().sum::<usize>(), 65_537);
        assert!(max - min <= 1, "{counts:?}");
    }
}
