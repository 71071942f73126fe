//! Weighted least connections.
//!
//! The server with the fewest in-flight requests per unit of weight wins. Ties are broken
//! by a cursor that moves on after every pick, so idle servers share a light load evenly
//! instead of the first one taking everything.

use crate::{less_loaded, Candidate};

#[derive(Clone, Debug, Default)]
pub struct LeastConn {
    cursor: usize,
}

impl LeastConn {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn pick(&mut self, len: usize, view: impl Fn(usize) -> Candidate) -> Option<usize> {
        if len == 0 {
            return None;
        }
        let start = self.cursor % len;
        let mut best: Option<(usize, Candidate)> = None;
        for offset in 0..len {
            let i = (start + offset) % len;
            let c = view(i);
            if c.available && best.is_none_or(|(_, b)| less_loaded(c, b)) {
                best = Some((i, c));
            }
        }
        let (chosen, _) = best?;
        self.cursor = chosen + 1;
        Some(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_least_loaded() {
        let load = [5u32, 2, 9];
        let mut lc = LeastConn::new();
        let view = |i: usize| Candidate {
            weight: 1,
            active: load[i],
            available: true,
        };
        assert_eq!(lc.pick(3, view), Some(1));
        assert_eq!(lc.pick(3, view), Some(1));
    }

    #[test]
    fn weight_scales_the_load() {
        // 6 in flight on weight 3 is 2 per unit; 3 in flight on weight 1 is 3 per unit.
        let view = |i: usize| {
            [
                Candidate {
                    weight: 3,
                    active: 6,
                    available: true,
                },
                Candidate {
                    weight: 1,
                    active: 3,
                    available: true,
                },
            ][i]
        };
        assert_eq!(LeastConn::new().pick(2, view), Some(0));
    }

    #[test]
    fn ties_rotate() {
        let mut lc = LeastConn::new();
        let picks: Vec<_> = (0..6)
            .map(|_| lc.pick(3, |_| Candidate::idle(1)).unwrap())
            .collect();
        assert_eq!(picks, vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn skips_unavailable() {
        let view = |i: usize| Candidate {
            weight: 1,
            active: if i == 0 { 0 } else { 4 },
            available: i != 0,
        };
        assert_eq!(LeastConn::new().pick(3, view), Some(1));
        assert_eq!(LeastConn::new().pick(0, view), None);
    }
}
