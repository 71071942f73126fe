//! What a running step has done so far, for the live progress line: counters the
//! request path bumps with relaxed atomics, and each worker's latency histogram, which
//! the worker publishes twice a second (never locked per request).

use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

#[derive(Default)]
pub struct Progress {
    requests: AtomicU64,
    errors: AtomicU64,
    active: AtomicI64,
    /// The latest histogram of each worker thread, by index.
    published: Mutex<Vec<Option<Histogram<u64>>>>,
}

/// A moment's view of a step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Snapshot {
    pub requests: u64,
    pub errors: u64,
    /// Users running (closed model) or requests in flight (open model).
    pub active: i64,
    pub p99: Duration,
}

impl Progress {
    /// Starts a step: everything back to zero.
    pub fn reset(&self, threads: usize) {
        self.requests.store(0, Ordering::Relaxed);
        self.errors.store(0, Ordering::Relaxed);
        self.active.store(0, Ordering::Relaxed);
        *self.published.lock().unwrap_or_else(|p| p.into_inner()) = vec![None; threads];
    }

    pub fn count(&self, error: bool) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if error {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn active(&self, delta: i64) {
        self.active.fetch_add(delta, Ordering::Relaxed);
    }

    /// A worker's histogram so far.
    pub fn publish(&self, worker: usize, histogram: &Histogram<u64>) {
        let mut published = self.published.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = published.get_mut(worker) {
            match slot {
                Some(h) => h.clone_from(histogram),
                None => *slot = Some(histogram.clone()),
            }
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let published = self.published.lock().unwrap_or_else(|p| p.into_inner());
        let mut all: Option<Histogram<u64>> = None;
        for h in published.iter().flatten() {
            match &mut all {
                Some(a) => {
                    let _ = a.add(h);
                }
                None => all = Some(h.clone()),
            }
        }
        let p99 = all.map_or(0, |h| h.value_at_quantile(0.99));
        Snapshot {
            requests: self.requests.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            active: self.active.load(Ordering::Relaxed),
            p99: Duration::from_micros(p99),
        }
    }
}
