//! What one process did over a step, as every rule reads it: its first and last
//! readings and every reading between, its counters' differences and its gauges' values
//! under load.

use super::thresholds;
use super::{pct, ProcInfo};
use crate::sample::{ProcReading, Reading};
use sluice_process::cpu_budget::Throttling;

/// What happened to one process over a step: its first and last readings, and every
/// reading between (for gauges, whose samples matter, not their difference).
pub(super) struct Delta<'a> {
    pub info: &'a ProcInfo,
    pub a: &'a ProcReading,
    pub b: &'a ProcReading,
    pub seconds: f64,
    /// This process's place in each reading.
    pub index: usize,
    pub readings: &'a [Reading],
}

impl Delta<'_> {
    /// A gauge's value in each reading taken under load that has it: not the step's
    /// edges (read while the load generator started or stopped its users), nor a reading
    /// within [`thresholds::GAUGE_SETTLE_S`] of the start, which a gauge its exporter
    /// refreshes once a second (HikariCP's) can still show from the idle before. A step
    /// too short to have such readings falls back to all of them.
    pub fn series(&self, key: &str) -> Vec<f64> {
        let i = self.index;
        let has = |r: &Reading| r.procs[i].counters.contains_key(key);
        let inner = self.under_load();
        let chosen: Vec<&Reading> = if inner.iter().any(|&k| has(&self.readings[k])) {
            inner.iter().map(|&k| &self.readings[k]).collect()
        } else {
            self.readings.iter().collect()
        };
        chosen
            .iter()
            .filter_map(|r| r.procs[i].counters.get(key).copied())
            .collect()
    }
    /// A gauge's mean under load; `None` when no reading has it.
    pub fn mean(&self, key: &str) -> Option<f64> {
        let s = self.series(key);
        (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64)
    }
    /// The places of the readings taken under load (see [`Delta::series`]).
    fn under_load(&self) -> Vec<usize> {
        let (start, end) = (self.readings[0].t, self.readings[self.readings.len() - 1].t);
        let settled = start + thresholds::GAUGE_SETTLE_S;
        (0..self.readings.len())
            .filter(|&k| self.readings[k].t >= settled && self.readings[k].t < end)
            .collect()
    }
    /// Its listening port's accept queue in each reading taken under load (see
    /// [`Delta::series`]); every reading's when the step is too short to have such.
    pub fn accept_queues(&self) -> Vec<u64> {
        let i = self.index;
        let mut inner = self.under_load();
        if inner.is_empty() {
            inner = (0..self.readings.len()).collect();
        }
        inner
            .iter()
            .map(|&k| self.readings[k].procs[i].tcp.accept_queue)
            .collect()
    }
    /// The largest accept queue of its port over the step.
    pub fn accept_queue_max(&self) -> u64 {
        let i = self.index;
        self.readings
            .iter()
            .map(|r| r.procs[i].tcp.accept_queue)
            .max()
            .unwrap_or(0)
    }
    /// What the database's sessions did over the step, where they are sampled.
    /// An exporter's counts are a sample a reading, so, like a gauge, only those taken
    /// under load count; the database's own sampler takes four a second, and its step is
    /// the whole of it.
    pub fn db(&self) -> Option<crate::database::DbReading> {
        let b = self.b.db.as_ref()?;
        let at = |k: usize| self.readings[k].procs[self.index].db.as_ref();
        let inner = self.under_load();
        if let (true, Some(&first), Some(&last)) = (b.counts_only, inner.first(), inner.last()) {
            if let (Some(before), Some(end)) = (at(first.saturating_sub(1)), at(last)) {
                return Some(end.since(before));
            }
        }
        Some(match &self.a.db {
            Some(a) => b.since(a),
            None => b.clone(),
        })
    }
    pub fn counter(&self, key: &str) -> f64 {
        let get = |r: &ProcReading| r.counters.get(key).copied().unwrap_or(0.0);
        (get(self.b) - get(self.a)).max(0.0)
    }
    pub fn gauge(&self, key: &str) -> Option<f64> {
        self.b.counters.get(key).copied()
    }
    /// CPU used over the budget; 0 when the budget is unknown (an exporter without a
    /// CPU count).
    pub fn cpu_util(&self) -> f64 {
        if self.info.budget_cores <= 0.0 {
            return 0.0;
        }
        (self.b.cpu_s - self.a.cpu_s) / (self.seconds * self.info.budget_cores)
    }
    pub fn throttled_pct(&self) -> f64 {
        throttled_pct(&self.a.throttling, &self.b.throttling)
    }
}

/// Percent of the quota periods between two readings in which a budget was throttled.
pub(super) fn throttled_pct(a: &Throttling, b: &Throttling) -> f64 {
    let periods = b.periods.saturating_sub(a.periods);
    pct(
        b.throttled.saturating_sub(a.throttled) as f64,
        periods as f64,
    )
}
