//! A plateau: throughput that stopped growing while users kept growing. By the
//! interactive response time law (R = N / X - Z), a flat X with N growing means the
//! response time grows with N: requests queue at some resource that is full, whether the
//! lab measured it or not. So a configuration whose steps plateau is never "headroom",
//! even when no measured resource crossed its bar.

use super::thresholds::{FLAT_GAIN_PCT, PLATEAU_USERS_RATIO};
use super::Breakdown;

/// One step, as the rule reads it.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    pub users: usize,
    pub tps: f64,
    pub mean_ms: f64,
}

/// Two steps of one configuration between which throughput was flat.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plateau {
    pub users: (usize, usize),
    pub tps: (f64, f64),
    pub mean_ms: (f64, f64),
}

/// The widest plateau ending at the last step of `points` (valid steps, in order of
/// users): an earlier step with [`PLATEAU_USERS_RATIO`] times fewer users or less, from
/// which throughput gained under [`FLAT_GAIN_PCT`] percent.
pub fn plateau(points: &[Point]) -> Option<Plateau> {
    let last = points.last()?;
    points
        .iter()
        .filter(|p| p.users > 0 && last.users as f64 / p.users as f64 >= PLATEAU_USERS_RATIO)
        .find(|p| p.tps > 0.0 && (last.tps / p.tps - 1.0) * 100.0 < FLAT_GAIN_PCT)
        .map(|p| Plateau {
            users: (p.users, last.users),
            tps: (p.tps, last.tps),
            mean_ms: (p.mean_ms, last.mean_ms),
        })
}

impl Plateau {
    /// "a plateau at 2527-2675 req/s from 4 to 8 users".
    pub fn summary_short(&self) -> String {
        format!(
            "a plateau at {:.0}-{:.0} req/s from {} to {} users",
            self.tps.0.min(self.tps.1),
            self.tps.0.max(self.tps.1),
            self.users.0,
            self.users.1
        )
    }

    /// The verdict's sentence when no measured resource was saturated.
    pub fn summary(&self) -> String {
        format!(
            "a plateau: throughput stayed at {:.0}-{:.0} req/s from {} to {} users while the mean response time went from {:.1} to {:.1} ms, so requests queued at a resource that was full though the lab did not measure it",
            self.tps.0.min(self.tps.1),
            self.tps.0.max(self.tps.1),
            self.users.0,
            self.users.1,
            self.mean_ms.0,
            self.mean_ms.1
        )
    }
}

/// Which part of a request's time grew most from the plateau's first step (`a`) to its
/// last (`b`): where the requests queued, when no resource there was measured full. Of
/// nested parts, the innermost (the app's wait for a connection, not the app's time).
pub fn grew(a: &Breakdown, b: &Breakdown) -> Option<String> {
    let leaf = |i: usize| {
        b.parts
            .get(i + 1)
            .is_none_or(|next| next.depth <= b.parts[i].depth)
    };
    let (part, before, after) = b
        .parts
        .iter()
        .enumerate()
        .filter(|(i, _)| leaf(*i))
        .filter_map(|(_, p)| {
            let before = a.parts.iter().find(|q| q.part == p.part)?.ms;
            Some((p.part.as_str(), before, p.ms))
        })
        .max_by(|x, y| (x.2 - x.1).total_cmp(&(y.2 - y.1)))?;
    (after > before).then(|| {
        format!(
            "the time that grew: {part}, {before:.1} -> {after:.1} ms a request ({:.0}% of the response time's growth, {:.1} -> {:.1} ms)",
            (after - before) / (b.response_ms - a.response_ms).max(f64::EPSILON) * 100.0,
            a.response_ms,
            b.response_ms
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::Part;

    fn breakdown(response_ms: f64, parts: &[(&str, f64, u8)]) -> Breakdown {
        Breakdown {
            response_ms,
            parts: parts
                .iter()
                .map(|(part, ms, depth)| Part {
                    part: part.to_string(),
                    ms: *ms,
                    depth: *depth,
                })
                .collect(),
        }
    }

    #[test]
    fn the_part_that_grew_most_is_named_innermost_first() {
        let a = breakdown(
            30.0,
            &[
                ("before the app", 2.0, 0),
                ("in the app server", 28.0, 0),
                ("waiting for a pooled connection", 1.0, 1),
                ("holding a pooled connection", 25.0, 1),
            ],
        );
        let b = breakdown(
            120.0,
            &[
                ("before the app", 8.0, 0),
                ("in the app server", 112.0, 0),
                ("waiting for a pooled connection", 56.0, 1),
                ("holding a pooled connection", 55.0, 1),
            ],
        );
        assert_eq!(
            grew(&a, &b).unwrap(),
            "the time that grew: waiting for a pooled connection, 1.0 -> 56.0 ms a request (61% of the response time's growth, 30.0 -> 120.0 ms)"
        );
        // Nothing grew: nothing to say.
        assert_eq!(grew(&b, &b), None);
    }
}
