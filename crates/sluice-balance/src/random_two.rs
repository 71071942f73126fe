//! Power of two random choices, weighted.
//!
//! Draws two different servers with probability proportional to weight and sends the
//! request to the less loaded of the two. It needs no shared cursor, so many workers can
//! use it at once without agreeing on anything, and it avoids least-connections' herd
//! behaviour where every balancer piles onto the same momentarily idle server.

use crate::{less_loaded, Candidate};

#[derive(Clone, Debug, Default)]
pub struct RandomTwo;

impl RandomTwo {
    pub fn new() -> Self {
        RandomTwo
    }

    /// `random` supplies both draws: its low and high 32 bits.
    pub fn pick(
        &mut self,
        len: usize,
        view: impl Fn(usize) -> Candidate,
        random: u64,
    ) -> Option<usize> {
        let (first, second) = Self::draw(len, &view, random)?;
        match second {
            // Equal load: keep the first draw, which is already weight-proportional.
            Some(second) if less_loaded(view(second), view(first)) => Some(second),
            _ => Some(first),
        }
    }

    /// Two different available servers drawn with probability proportional to weight
    /// (the second is `None` when only one server is available).
    pub fn draw(
        len: usize,
        view: &impl Fn(usize) -> Candidate,
        random: u64,
    ) -> Option<(usize, Option<usize>)> {
        let total: u64 = (0..len)
            .map(view)
            .filter(|c| c.available)
            .map(|c| u64::from(c.weight.max(1)))
            .sum();
        if total == 0 {
            return None;
        }
        let first = weighted_draw(len, view, random & 0xffff_ffff, total, None)?;
        let rest = total.saturating_sub(u64::from(view(first).weight.max(1)));
        if rest == 0 {
            return Some((first, None));
        }
        Some((
            first,
            weighted_draw(len, view, random >> 32, rest, Some(first)),
        ))
    }
}

/// The server whose weight interval contains `r mod total`, skipping `exclude`.
fn weighted_draw(
    len: usize,
    view: &impl Fn(usize) -> Candidate,
    r: u64,
    total: u64,
    exclude: Option<usize>,
) -> Option<usize> {
    let mut point = r % total;
    for i in 0..len {
        let c = view(i);
        if !c.available || Some(i) == exclude {
            continue;
        }
        let w = u64::from(c.weight.max(1));
        if point < w {
            return Some(i);
        }
        point -= w;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator so the test needs no dependency.
    fn splitmix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn prefers_the_less_loaded_of_two() {
        let load = [10u32, 0];
        let view = |i: usize| Candidate {
            weight: 1,
            active: load[i],
            available: true,
        };
        let mut seed = 1;
        for _ in 0..100 {
            assert_eq!(RandomTwo::new().pick(2, view, splitmix(&mut seed)), Some(1));
        }
    }

    #[test]
    fn idle_servers_get_weight_proportional_shares() {
        let weights = [1u32, 3];
        let view = |i: usize| Candidate::idle(weights[i]);
        let mut seed = 7;
        let mut counts = [0u32; 2];
        for _ in 0..40_000 {
            counts[RandomTwo::new().pick(2, view, splitmix(&mut seed)).unwrap()] += 1;
        }
        let share = f64::from(counts[1]) / 40_000.0;
        assert!(
            (share - 0.75).abs() < 0.02,
            "share of the weight-3 server: {share}"
        );
    }

    #[test]
    fn never_picks_unavailable_and_handles_one_server() {
        let view = |i: usize| Candidate {
            weight: 1,
            active: 0,
            available: i == 2,
        };
        let mut seed = 3;
        for _ in 0..50 {
            assert_eq!(RandomTwo::new().pick(3, view, splitmix(&mut seed)), Some(2));
        }
        assert_eq!(
            RandomTwo::new().pick(
                3,
                |_| Candidate {
                    weight: 1,
                    active: 0,
                    available: false
                },
                5
            ),
            None
        );
    }
}
