//! Peak-EWMA: prefer the server with the lowest expected wait, latency x load.
//!
//! Each server's latency estimate jumps to a new sample at once when the sample is higher
//! (a server that slows down is avoided immediately) and otherwise moves toward it as an
//! exponentially weighted average with time constant `decay` (a server that recovers wins
//! traffic back gradually). Estimates also decay toward zero while a server gets no
//! traffic, so an avoided server is tried again now and then. The cost of a server is its
//! estimate x (in-flight + 1); two servers are drawn at random and the cheaper one wins
//! (Finagle's and linkerd's design).

use crate::{Candidate, RandomTwo};

#[derive(Clone, Copy, Debug, Default)]
struct Estimate {
    latency_ns: f64,
    stamp_ns: u64,
    measured: bool,
}

#[derive(Clone, Debug)]
pub struct PeakEwma {
    decay_ns: f64,
    estimates: Vec<Estimate>,
}

impl PeakEwma {
    /// `decay_ns`: the time constant of the moving average (Finagle and linkerd use 10 s).
    pub fn new(decay_ns: u64) -> Self {
        PeakEwma {
            decay_ns: decay_ns.max(1) as f64,
            estimates: Vec::new(),
        }
    }

    fn ensure(&mut self, len: usize) {
        if self.estimates.len() != len {
            self.estimates.resize(len, Estimate::default());
        }
    }

    /// Records that a request to `server` took `rtt_ns`, observed at `now_ns`.
    pub fn observe(&mut self, len: usize, server: usize, rtt_ns: u64, now_ns: u64) {
        self.ensure(len);
        let decay_ns = self.decay_ns;
        let Some(e) = self.estimates.get_mut(server) else {
            return;
        };
        let rtt = rtt_ns as f64;
        if !e.measured || rtt > e.latency_ns {
            e.latency_ns = rtt;
        } else {
            let w = weight(now_ns.saturating_sub(e.stamp_ns), decay_ns);
            e.latency_ns = e.latency_ns * w + rtt * (1.0 - w);
        }
        e.measured = true;
        e.stamp_ns = now_ns;
    }

    /// The current latency estimate of `server` in ns, decayed to `now_ns`; `None` until
    /// the server has been measured.
    pub fn latency(&self, server: usize, now_ns: u64) -> Option<f64> {
        let e = self.estimates.get(server).filter(|e| e.measured)?;
        Some(e.latency_ns * weight(now_ns.saturating_sub(e.stamp_ns), self.decay_ns))
    }

    pub fn pick(
        &mut self,
        len: usize,
        view: impl Fn(usize) -> Candidate,
        random: u64,
        now_ns: u64,
    ) -> Option<usize> {
        self.ensure(len);
        // Unmeasured servers get the mean of the measured ones: neither shunned nor flooded.
        let measured: Vec<f64> = (0..len).filter_map(|i| self.latency(i, now_ns)).collect();
        let neutral = if measured.is_empty() {
            1.0
        } else {
            measured.iter().sum::<f64>() / measured.len() as f64
        };
        let cost = |i: usize| {
            let c = view(i);
            self.latency(i, now_ns).unwrap_or(neutral) * (f64::from(c.active) + 1.0)
                / f64::from(c.weight.max(1))
        };
        let (a, b) = RandomTwo::draw(len, &view, random)?;
        match b {
            Some(b) if cost(b) < cost(a) => Some(b),
            _ => Some(a),
        }
    }
}

/// How much of the old estimate survives `elapsed_ns`.
fn weight(elapsed_ns: u64, decay_ns: f64) -> f64 {
    (-(elapsed_ns as f64) / decay_ns).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn peaks_count_at_once_and_recovery_is_gradual() {
        let mut p = PeakEwma::new(10_000 * MS);
        p.observe(2, 0, 10 * MS, 0);
        p.observe(2, 0, 200 * MS, MS);
        assert_eq!(p.latency(0, MS), Some(200.0 * MS as f64));
        p.observe(2, 0, 10 * MS, 2 * MS);
        let after_one_fast = p.latency(0, 2 * MS).unwrap();
        assert!(after_one_fast > 190.0 * MS as f64, "{after_one_fast}");
        for t in 1..=100 {
            p.observe(2, 0, 10 * MS, 2 * MS + t * 500 * MS);
        }
        let recovered = p.latency(0, 2 * MS + 100 * 500 * MS).unwrap();
        assert!(recovered < 20.0 * MS as f64, "{recovered}");
    }

    #[test]
    fn prefers_the_faster_and_less_loaded() {
        let mut p = PeakEwma::new(10_000 * MS);
        p.observe(2, 0, 100 * MS, 0);
        p.observe(2, 1, 10 * MS, 0);
        let idle = |_| Candidate::idle(1);
        for r in 0..50u64 {
            assert_eq!(
                p.pick(2, idle, r.wrapping_mul(0x9e37_79b9_7f4a_7c15), MS),
                Some(1)
            );
        }
        // 10 ms x 20 in flight costs more than 100 ms x 1.
        let busy = |i: usize| Candidate {
            weight: 1,
            active: if i == 1 { 19 } else { 0 },
            available: true,
        };
        assert_eq!(p.pick(2, busy, 12345, MS), Some(0));
    }
}
