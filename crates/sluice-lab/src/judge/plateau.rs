//! A plateau: throughput that stopped growing while users kept growing. By the
//! interactive response time law (R = N / X - Z), a flat X with N growing means the
//! response time grows with N: requests queue at some resource that is full, whether the
//! lab measured it or not. So a configuration whose steps plateau is never "headroom",
//! even when no measured resource crossed its bar: its verdict ([`verdict`]) says a
//! plateau, names a busy single-threaded process as the likely limit, and which part of
//! a request's time grew.

use super::choice::nothing_saturated;
use super::thresholds::{FLAT_GAIN_PCT, PLATEAU_THREAD_BUSY, PLATEAU_USERS_RATIO};
use super::{Breakdown, Judged, Kind, Resource, Verdict};

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

/// A valid step of a configuration, as the plateau reads it.
pub struct Step<'a> {
    pub point: Point,
    pub judged: &'a Judged,
}

/// The verdict of a configuration whose valid steps are `steps` (in order of users),
/// when the last of them named no tier and they plateau; `None`: the last step's verdict
/// stands.
pub fn verdict(steps: &[Step]) -> Option<Verdict> {
    let last = steps.last().filter(|s| s.judged.verdict.tier.is_none())?;
    let points: Vec<Point> = steps.iter().map(|s| s.point).collect();
    let p = plateau(&points)?;
    let mut verdict = unmeasured(&p, last.judged);
    if let Some(one) = single_threaded(last.judged) {
        verdict = one_thread(&p, verdict, one);
    }
    let parts = |users| {
        let s = steps.iter().find(|s| s.point.users == users)?;
        s.judged.breakdown.as_ref()
    };
    if let (Some(a), Some(b)) = (parts(p.users.0), parts(p.users.1)) {
        verdict.evidence.extend(grew(a, b));
    }
    Some(verdict)
}

/// Steps that plateaued with nothing measured saturated at the `last`: said as a
/// saturation the lab did not see, never as headroom.
fn unmeasured(p: &Plateau, last: &Judged) -> Verdict {
    let measured = nothing_saturated(&last.resources);
    let mut evidence = vec![format!("{measured}, yet users grew and throughput did not")];
    evidence.extend(last.verdict.evidence.iter().cloned());
    Verdict {
        tier: None,
        resource: Some(Kind::Plateau),
        summary: p.summary(),
        evidence,
        ..Default::default()
    }
}

/// The busiest process of a step that runs on one thread (its busiest thread is nearly
/// all its CPU) with that thread on CPU [`PLATEAU_THREAD_BUSY`] of the time or more.
fn single_threaded(step: &Judged) -> Option<&Resource> {
    step.resources
        .iter()
        .filter(|r| r.resource == Kind::BusiestThread && r.utilisation >= PLATEAU_THREAD_BUSY)
        .filter(|r| {
            let t = step.tiers.iter().find(|t| t.tier == r.tier);
            t.is_some_and(|t| t.processes == 1 && r.utilisation >= 0.9 * t.cpu_cores)
        })
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))
}

/// A plateau with a single-threaded process busy at its one core: that process is the
/// likely limit. It serves one request at a time, so its waits on the network hold
/// requests too, which its CPU time does not count.
fn one_thread(p: &Plateau, plateau: Verdict, r: &Resource) -> Verdict {
    let mut evidence = r.evidence.clone();
    evidence.push(
        "a single-threaded process serves one request at a time: its waits on the network hold the others too, which its CPU time does not count"
            .into(),
    );
    evidence.extend(plateau.evidence);
    Verdict {
        tier: Some(r.tier.clone()),
        resource: Some(Kind::BusiestThread),
        summary: format!(
            "{}: {} was the likely limit ({:.0}% of one core, and nothing else near full)",
            p.summary_short(),
            r.label,
            r.utilisation * 100.0
        ),
        evidence,
        ..Default::default()
    }
}

/// The widest plateau ending at the last step of `points` (valid steps, in order of
/// users): an earlier step with [`PLATEAU_USERS_RATIO`] times fewer users or less, from
/// which throughput gained under [`FLAT_GAIN_PCT`] percent.
pub fn plateau(points: &[Point]) -> Option<Plateau> {
    let last = points.last()?;
    points
        .iter()
        .filter(|p| p.users > 0 && last.users as f64 / p.users as f64 >= PLATEAU_USERS_RATIO)
        .find(|p| p.tps > 0.0 && flat((last.tps / p.tps - 1.0) * 100.0))
        .map(|p| Plateau {
            users: (p.users, last.users),
            tps: (p.tps, last.tps),
            mean_ms: (p.mean_ms, last.mean_ms),
        })
}

/// Whether throughput that gained `gain_pct` percent stayed flat ([`FLAT_GAIN_PCT`]):
/// over more users, a plateau; over one more server, scale-out that stopped helping.
pub fn flat(gain_pct: f64) -> bool {
    gain_pct < FLAT_GAIN_PCT
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
/// nested parts, the innermost (the app's wait for a connection, not the app's time); a
/// part the first step did not have counts from zero. A part that grew by less than a
/// tenth of the response time's growth is not where the time went: nothing is said.
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
        .map(|(_, p)| {
            let before = a
                .parts
                .iter()
                .find(|q| q.part == p.part)
                .map_or(0.0, |q| q.ms);
            (p.part.as_str(), before, p.ms)
        })
        .max_by(|x, y| (x.2 - x.1).total_cmp(&(y.2 - y.1)))?;
    let response_grew = b.response_ms - a.response_ms;
    (after > before && after - before >= 0.1 * response_grew).then(|| {
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

    #[test]
    fn a_part_the_first_step_lacked_counts_from_zero_and_a_sliver_is_never_named() {
        // The balancer's own time grew 0.1 ms; the wait before the app, absent from the
        // first step's breakdown, 97 ms.
        let a = breakdown(
            25.0,
            &[("in the balancer", 0.4, 0), ("at the servers", 24.6, 0)],
        );
        let b = breakdown(
            122.0,
            &[
                ("in the balancer", 0.5, 0),
                ("at the servers", 121.5, 0),
                ("before the app", 97.0, 1),
                ("in the app server", 24.5, 1),
            ],
        );
        let said = grew(&a, &b).unwrap();
        assert!(
            said.starts_with("the time that grew: before the app, 0.0 -> 97.0 ms"),
            "{said}"
        );
        let only_balancer = breakdown(
            122.0,
            &[("in the balancer", 0.5, 0), ("at the servers", 24.6, 0)],
        );
        assert_eq!(
            grew(&a, &only_balancer),
            None,
            "0.1 ms of 97 is not where it went"
        );
    }
}
