//! A plateau: throughput that stopped growing while users kept growing. By the
//! interactive response time law (R = N / X - Z), a flat X with N growing means the
//! response time grows with N: requests queue at some resource that is full, whether the
//! lab measured it or not. So a configuration whose steps plateau is never "headroom",
//! even when no measured resource crossed its bar.

use super::thresholds::{FLAT_GAIN_PCT, PLATEAU_USERS_RATIO};

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
