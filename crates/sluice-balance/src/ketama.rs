//! The ketama ring, placed exactly as nginx's `hash $key consistent` places it.
//!
//! Each server gets `160 x weight` points. Point hashes chain: the first is
//! `crc32(host \0 port 0u32le)`, each next one `crc32(host \0 port previous_le)`, where
//! host and port come from the server's address as written in the config. A key goes to
//! the first point at or after `crc32(key)`, wrapping around; an unavailable server is
//! passed over by walking on to the next points. With the same server list written the
//! same way, every key lands where nginx puts it, so users migrate without remapping.

use crate::crc32;
use crate::Server;

/// Points per unit of weight, as in nginx (and libketama's 40 x 4).
const POINTS_PER_WEIGHT: u32 = 160;

#[derive(Clone, Debug)]
pub struct Ketama {
    /// `(hash, server index)`, sorted by hash, no two with the same hash.
    points: Vec<(u32, u32)>,
}

impl Ketama {
    pub fn new(servers: &[Server<'_>]) -> Self {
        let mut points = Vec::new();
        for (index, server) in servers.iter().enumerate() {
            let (host, port) = split_host_port(server.name);
            let base = crc32::update(crc32::update(crc32::update(crc32::INIT, host), &[0]), port);
            let mut previous: u32 = 0;
            for _ in 0..server.weight.max(1) * POINTS_PER_WEIGHT {
                let hash = crc32::finish(crc32::update(base, &previous.to_le_bytes()));
                points.push((hash, index as u32));
                previous = hash;
            }
        }
        // A stable sort keeps the earlier server first among equal hashes; nginx keeps
        // the first of a run of equal points, so ties resolve the same way.
        points.sort_by_key(|p| p.0);
        points.dedup_by_key(|p| p.0);
        Ketama { points }
    }

    /// The hash of a request key on this ring.
    pub fn hash_key(key: &[u8]) -> u32 {
        crc32::crc32(key)
    }

    /// Server indexes in the order a key with `hash` prefers them: the owner of the first
    /// point at or after the hash, then clockwise. Yields one entry per point, so a server
    /// appears many times; the walk ends after one full turn.
    pub fn walk(&self, hash: u32) -> impl Iterator<Item = usize> + '_ {
        let start = self.points.partition_point(|p| p.0 < hash);
        let n = self.points.len();
        (0..n).map(move |i| self.points[(start + i) % n].1 as usize)
    }

    pub fn points(&self) -> usize {
        self.points.len()
    }

    /// The fraction of the hash space each of `n` servers owns: a point owns the arc from
    /// the previous point (exclusive) up to itself.
    pub fn ownership(&self, n: usize) -> Vec<f64> {
        let mut owned = vec![0u64; n];
        let mut previous = self.points.last().map_or(0, |p| p.0);
        for &(hash, server) in &self.points {
            let arc = hash.wrapping_sub(previous) as u64;
            if let Some(o) = owned.get_mut(server as usize) {
                *o += arc;
            }
            previous = hash;
        }
        owned
            .iter()
            .map(|o| *o as f64 / (1u64 << 32) as f64)
            .collect()
    }
}

/// nginx's split of a server name: the port is the run of digits after the last `:`.
fn split_host_port(name: &str) -> (&[u8], &[u8]) {
    let bytes = name.as_bytes();
    if bytes.len() >= 5 && bytes[..5].eq_ignore_ascii_case(b"unix:") {
        return (&bytes[5..], &[]);
    }
    let digits = bytes
        .iter()
        .rev()
        .take_while(|b| b.is_ascii_digit())
        .count();
    match bytes.len().checked_sub(digits + 1) {
        Some(colon) if bytes[colon] == b':' => (&bytes[..colon], &bytes[colon + 1..]),
        _ => (bytes, &[]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_port_split_like_nginx() {
        assert_eq!(
            split_host_port("127.0.0.1:9101"),
            (&b"127.0.0.1"[..], &b"9101"[..])
        );
        assert_eq!(split_host_port("[::1]:80"), (&b"[::1]"[..], &b"80"[..]));
        assert_eq!(split_host_port("backend"), (&b"backend"[..], &b""[..]));
        assert_eq!(split_host_port("unix:/tmp/s"), (&b"/tmp/s"[..], &b""[..]));
    }

    #[test]
    fn points_follow_weights() {
        let ring = Ketama::new(&[
            Server {
                name: "a:1",
                weight: 1,
            },
            Server {
                name: "b:1",
                weight: 3,
            },
        ]);
        assert!((631..=640).contains(&ring.points()));
        let owned_by_b = ring.walk(0).filter(|s| *s == 1).count();
        assert!((475..=480).contains(&owned_by_b));
    }
}
