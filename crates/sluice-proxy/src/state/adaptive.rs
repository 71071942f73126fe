//! `limit = "adaptive"`: each server's concurrency limit found from its latency, with
//! TCP Vegas's rule (Brakmo and Peterson, 1994) as Netflix's concurrency-limits library
//! applies it to requests (`VegasLimit`): the lowest recent latency is the server with
//! no queue; `limit × (1 − rtt_noload / rtt)` estimates how many requests wait in the
//! server's own queue; the limit grows while that queue is shorter than `alpha` and
//! shrinks while it is longer than `beta`, so it settles a few requests above the
//! server's knee (its thread pool). A failed request (timeout, refusal) shrinks it at
//! once.
//!
//! Two choices differ from the library's defaults, for a limit within 30% of the knee:
//! `alpha` and `beta` are 5% and 10% of the limit (at least 1 and 2) rather than 3 and 6
//! times its log10, which would keep 4 to 8 requests queued at a 20-thread server; and
//! the no-load latency is measured the way Envoy's adaptive concurrency filter does it:
//! now and then the limit drops to a quarter for a few requests, so the server's queue
//! drains and their lowest latency is the server's own; then the limit comes back. (A
//! minimum of recent latencies would not do: under steady overload every request has
//! waited in the server's queue, and the limit would creep up with it.)
//!
//! It only computes the number; `state::queue` enforces it like a configured
//! `max_conns`.

use std::time::Duration;

/// The limit a server starts at, before any latency is known.
pub const INITIAL: f64 = 10.0;
/// Windows between two measurements of the no-load latency.
const EVERY: u32 = 100;
/// Samples a measurement takes (at a quarter of the limit).
const MEASURE: u32 = 20;
/// Samples in a window, at least (and at least the limit): one latency's noise must not
/// move the limit, so it moves once per window on the window's median latency (Netflix's
/// `WindowedLimit` with a percentile sample window).
const WINDOW: u32 = 10;
/// Latencies a window keeps for its median, at most (a larger window's first ones).
const KEPT: usize = 512;

#[derive(Debug, Clone)]
pub struct Vegas {
    limit: f64,
    max: f64,
    noload: Option<Duration>,
    window: Window,
    windows: u32,
    /// Measuring the no-load latency: the limit to come back to, samples left, and the
    /// lowest latency so far.
    measuring: Option<(f64, u32, Option<Duration>)>,
}

/// The samples of the window under way.
///
/// The median rather than the mean: noise only ever adds latency (a stalled thread, a
/// busy machine), and a few slow samples in a window moved the mean enough for Vegas to
/// read a queue and shrink the limit below the knee (an adaptive limit of 8 to 21 for a
/// knee of 20 on a shared host, with the mean). A real queue at the server delays
/// every request, and moves the median as much as the mean.
#[derive(Debug, Clone, Default)]
struct Window {
    samples: u32,
    rtts: Vec<Duration>,
    in_flight_max: u32,
    failed: bool,
}

impl Window {
    /// The median latency of the samples kept (zero for none), and starts the next
    /// window (keeping the room).
    fn close(&mut self) -> (Duration, u32, bool) {
        let median = if self.rtts.is_empty() {
            Duration::ZERO
        } else {
            let middle = self.rtts.len() / 2;
            *self.rtts.select_nth_unstable(middle).1
        };
        let closed = (median, self.in_flight_max, self.failed);
        self.rtts.clear();
        (self.samples, self.in_flight_max, self.failed) = (0, 0, false);
        closed
    }
}

impl Vegas {
    /// A limit that never goes above `max` (the server's `max_conns`, if any).
    pub fn new(max: u32) -> Vegas {
        let limit = INITIAL.min(f64::from(max));
        let mut v = Vegas {
            limit,
            max: f64::from(max),
            noload: None,
            window: Window::default(),
            windows: 0,
            measuring: None,
        };
        v.measure();
        v
    }

    pub fn limit(&self) -> u32 {
        self.limit as u32
    }

    /// A new cap (a reload changed `max_conns`); returns the limit under it.
    pub fn cap(&mut self, max: u32) -> u32 {
        self.max = f64::from(max);
        self.limit = self.limit.min(self.max);
        self.limit()
    }

    /// A request took `rtt` to answer with `in_flight` requests on the server
    /// (`failed`: it timed out or was refused). Returns the limit, changed at the end
    /// of a window.
    pub fn sample(&mut self, rtt: Duration, in_flight: u32, failed: bool) -> u32 {
        if !failed && self.measuring(rtt) {
            return self.limit();
        }
        let w = &mut self.window;
        w.samples += 1;
        if w.rtts.len() < KEPT {
            w.rtts.push(rtt);
        }
        w.in_flight_max = w.in_flight_max.max(in_flight);
        w.failed |= failed;
        if w.samples < WINDOW.max(self.limit as u32) {
            return self.limit();
        }
        let (rtt, in_flight_max, failed) = w.close();
        self.windows += 1;
        if self.windows >= EVERY {
            self.windows = 0;
            self.measure();
            return self.limit();
        }
        self.update(rtt, in_flight_max, failed);
        self.limit()
    }

    /// Vegas's rule on one window: its median latency, the most requests it saw on the
    /// server, and whether any failed.
    fn update(&mut self, rtt: Duration, in_flight: u32, failed: bool) {
        let step = self.limit.log10().max(1.0);
        let Some(noload) = self.noload.filter(|_| !failed && !rtt.is_zero()) else {
            if failed {
                self.limit = (self.limit - step).max(1.0);
            }
            return;
        };
        let queue = self.limit * (1.0 - noload.as_secs_f64() / rtt.as_secs_f64());
        let alpha = (self.limit * 0.05).max(1.0);
        // Only a limit that was reached may grow: a server given fewer requests than
        // its limit says nothing of more (the library's rule, half the limit, let it
        // drift to twice the knee under a load just below it, then let a burst
        // through).
        let reached = f64::from(in_flight) + 1.0 >= self.limit;
        let next = if queue < alpha && reached {
            self.limit + step
        } else if queue > 2.0 * alpha {
            self.limit - step
        } else {
            self.limit
        };
        self.limit = next.clamp(1.0, self.max);
    }

    /// Starts measuring the no-load latency: a quarter of the limit for a while.
    fn measure(&mut self) {
        self.measuring = Some((self.limit, MEASURE, None));
        self.limit = (self.limit / 4.0).max(1.0);
    }

    /// Counts `rtt` toward a measurement under way; false when none is.
    fn measuring(&mut self, rtt: Duration) -> bool {
        let Some((restore, left, lowest)) = self.measuring.as_mut() else {
            return false;
        };
        let low = lowest.map_or(rtt, |l| l.min(rtt));
        *lowest = Some(low);
        *left -= 1;
        if *left == 0 {
            self.limit = *restore;
            self.noload = Some(low);
            self.measuring = None;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server with `threads` threads and `work` per request, under more demand than
    /// it takes: requests beyond the threads wait in its queue.
    fn settle(threads: u32, work: Duration) -> Vec<u32> {
        settle_with(threads, work, |_| 1.0)
    }

    /// [`settle`], the `i`th latency multiplied by `noise(i)`.
    fn settle_with(threads: u32, work: Duration, noise: impl Fn(u32) -> f64) -> Vec<u32> {
        let mut vegas = Vegas::new(10_000);
        let mut seen = Vec::new();
        for i in 0..200_000 {
            let in_flight = vegas.limit();
            let waves = (f64::from(in_flight) / f64::from(threads)).max(1.0);
            let rtt = work.mul_f64(waves * noise(i));
            vegas.sample(rtt, in_flight, false);
            // The limit outside the short measurements of the no-load latency.
            if i >= 100_000 && vegas.measuring.is_none() {
                seen.push(vegas.limit());
            }
        }
        seen
    }

    #[test]
    fn the_limit_settles_just_above_the_servers_thread_pool() {
        for threads in [10, 20, 100, 400] {
            let seen = settle(threads, Duration::from_millis(20));
            let (lo, hi) = (*seen.iter().min().unwrap(), *seen.iter().max().unwrap());
            let knee = f64::from(threads);
            assert!(
                f64::from(lo) >= knee && f64::from(hi) <= knee * 1.3,
                "{threads} threads: the limit went from {lo} to {hi}"
            );
        }
        // Four threads: a queue of one or two is already a third of the pool.
        let seen = settle(4, Duration::from_millis(20));
        assert!(seen.iter().all(|l| (4..=7).contains(l)), "{seen:?}");
    }

    #[test]
    fn stalls_on_some_requests_do_not_pull_the_limit_under_the_knee() {
        // One request in four takes twice as long (a busy machine), whatever the queue.
        let seen = settle_with(20, Duration::from_millis(20), |i| {
            if i % 4 == 0 {
                2.0
            } else {
                1.0
            }
        });
        let (lo, hi) = (*seen.iter().min().unwrap(), *seen.iter().max().unwrap());
        assert!(lo >= 20 && hi <= 26, "the limit went from {lo} to {hi}");
    }

    #[test]
    fn a_limit_the_load_does_not_reach_does_not_grow() {
        let mut v = Vegas::new(1000);
        // 20 requests at once on a server that takes them without a queue.
        for _ in 0..10_000 {
            let in_flight = v.limit().min(20);
            v.sample(Duration::from_millis(20), in_flight, false);
        }
        assert!((20..=22).contains(&v.limit()), "{}", v.limit());
    }

    #[test]
    fn failures_shrink_it_and_it_never_passes_its_max() {
        let mut v = Vegas::new(12);
        for _ in 0..300 {
            v.sample(Duration::from_millis(5), 12, false);
        }
        assert_eq!(v.limit(), 12);
        for _ in 0..12 {
            v.sample(Duration::from_millis(5), 12, true);
        }
        assert!(v.limit() < 12);
    }
}
