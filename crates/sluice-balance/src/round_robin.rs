//! Smooth weighted round robin, the sequence nginx produces.
//!
//! Every pick adds each server's weight to its running score, takes the highest score and
//! subtracts the total weight from it. Weights 5,1,1 give `a a b a c a a`: the heavy server
//! is spread out instead of getting five requests in a row.

use crate::Candidate;

#[derive(Clone, Debug, Default)]
pub struct SmoothWeighted {
    current: Vec<i64>,
}

impl SmoothWeighted {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn pick(&mut self, len: usize, view: impl Fn(usize) -> Candidate) -> Option<usize> {
        if self.current.len() != len {
            self.current = vec![0; len];
        }
        let mut total: i64 = 0;
        let mut best: Option<usize> = None;
        for i in 0..len {
            let c = view(i);
            if !c.available {
                continue;
            }
            let weight = i64::from(c.weight.max(1));
            self.current[i] += weight;
            total += weight;
            if best.is_none_or(|b| self.current[i] > self.current[b]) {
                best = Some(i);
            }
        }
        let chosen = best?;
        self.current[chosen] -= total;
        Some(chosen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sequence(weights: &[u32], n: usize) -> String {
        let mut rr = SmoothWeighted::new();
        (0..n)
            .map(|_| {
                let i = rr
                    .pick(weights.len(), |i| Candidate::idle(weights[i]))
                    .unwrap();
                (b'a' + i as u8) as char
            })
            .collect()
    }

    #[test]
    fn nginx_sequence_for_5_1_1() {
        assert_eq!(sequence(&[5, 1, 1], 7), "aabacaa");
        assert_eq!(sequence(&[5, 1, 1], 14), "aabacaaaabacaa");
    }

    #[test]
    fn equal_weights_rotate() {
        assert_eq!(sequence(&[1, 1, 1], 6), "abcabc");
    }

    #[test]
    fn shares_follow_weights_exactly_per_cycle() {
        let weights = [3, 2, 7, 1];
        let cycle: u32 = weights.iter().sum();
        let seq = sequence(&weights, cycle as usize * 10);
        for (i, w) in weights.iter().enumerate() {
            let got = seq.bytes().filter(|b| *b == b'a' + i as u8).count();
            assert_eq!(got, *w as usize * 10);
        }
    }

    #[test]
    fn unavailable_servers_are_skipped() {
        let mut rr = SmoothWeighted::new();
        let view = |i: usize| Candidate {
            weight: 1,
            active: 0,
            available: i != 1,
        };
        let picks: Vec<_> = (0..4).map(|_| rr.pick(3, view).unwrap()).collect();
        assert_eq!(picks, vec![0, 2, 0, 2]);
        let none = |_| Candidate {
            weight: 1,
            active: 0,
            available: false,
        };
        assert_eq!(rr.pick(3, none), None);
    }
}
