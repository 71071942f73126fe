//! The open model: requests sent on an arrival schedule (`--rate`), whatever the
//! server's answers, so that a slow server meets a queue as it would in production.
//!
//! One task per worker thread sends its share of the schedule and drives every request
//! it has in flight (a `FuturesUnordered`), rather than a task per request: a request
//! then costs no task of its own, no wake-up of its own and no copy of its state into
//! one. This module decides when each request goes; what a request is and how it is
//! recorded is the [`Worker`]'s.

use crate::conn::Connection;
use crate::pacer::Pacer;
use crate::worker::Worker;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;
use tokio::time::Instant;

/// This thread's share of the arrival schedule, request `k` of the whole step being due
/// at `start + k / rate`; thread `i` of `n` sends `k = i, i+n, ...`.
struct Schedule {
    start: Instant,
    rate: f64,
    index: u64,
    threads: u64,
    /// How many this thread is to send, how many it has, and when the next is due.
    planned: u64,
    sent: u64,
    due: Instant,
    /// The time of the last batch (the pacer's last wake-up), and when the thread woke
    /// for it: requests due by then belong to it.
    woke: Instant,
    batch_until: Instant,
    /// How late the thread's wake-ups have run.
    late: Lateness,
}

/// How late the thread's wake-ups run, as the median of its recent ones (each moves the
/// estimate a step toward itself, as the pacer's lead does). On a machine whose CPU is
/// taken from the generator (a hypervisor's steal, a CI job beside it), a thread asked
/// to wake every millisecond runs every few: each wake-up it asks for past that costs
/// CPU and sends nothing sooner. The beat is then widened to the lateness, so that the
/// thread wakes about as often as it can run, and sends what fell due in one batch.
#[derive(Debug, Default)]
struct Lateness(Duration);

impl Lateness {
    const STEP: Duration = Duration::from_micros(50);
    /// The widest beat: h2load's, whose clients send what is due every 10 ms.
    const WIDEST: Duration = Duration::from_millis(10);

    fn observe(&mut self, late: Duration) {
        self.0 = if late > self.0 {
            (self.0 + Self::STEP).min(Self::WIDEST)
        } else {
            self.0.saturating_sub(Self::STEP)
        };
    }

    /// The beat for `pace`: the pace, or the lateness rounded up to a whole number of
    /// paces (a repeating timer is not re-armed at each small change), at most
    /// [`Lateness::WIDEST`] (or the pace, if wider).
    fn beat(&self, pace: Duration) -> Duration {
        if self.0 <= pace || pace.is_zero() {
            return pace;
        }
        let paces = self.0.as_nanos().div_ceil(pace.as_nanos()) as u32;
        (pace * paces).min(Self::WIDEST.max(pace))
    }
}

impl Schedule {
    fn new(w: &Worker, rate: f64, duration: Duration) -> Schedule {
        let (index, threads) = (w.index as u64, w.threads as u64);
        let mut schedule = Schedule {
            start: w.start,
            rate,
            index,
            threads,
            planned: planned_requests(rate, duration, index, threads),
            sent: 0,
            due: w.start,
            woke: w.start,
            batch_until: w.start,
            late: Lateness::default(),
        };
        schedule.due = schedule.due_time(index);
        schedule
    }

    fn due_time(&self, k: u64) -> Instant {
        self.start + Duration::from_secs_f64(k as f64 / self.rate)
    }

    /// Whether requests are left to send.
    fn pending(&self) -> bool {
        self.sent < self.planned
    }

    /// The next request if it belongs to the batch already woken for: its number, and
    /// when it was meant to go (its batch's time, or its own if later).
    fn take_due(&mut self) -> Option<(u64, Instant)> {
        if !self.pending() || self.due > self.batch_until {
            return None;
        }
        let (k, intended) = (
            self.sent * self.threads + self.index,
            self.due.max(self.woke),
        );
        self.sent += 1;
        self.due = self.due_time(k + self.threads);
        Some((k, intended))
    }

    /// When to wake for the next batch: when its first request is due, but never
    /// sooner than a beat after the last wake-up; whether that is the beat (a request
    /// falls due between beats), which the pacer keeps without re-arming; and the beat:
    /// `pace`, widened while wake-ups run late.
    fn next_wake(&self, pace: Duration) -> Option<(Instant, Option<Duration>)> {
        let beat = self.late.beat(pace);
        let next = self.woke + beat;
        self.pending()
            .then(|| (self.due.max(next), (self.due <= next).then_some(beat)))
    }

    /// The thread woke for the batch of `at`; `slept`: it had waited for it (a batch
    /// already due when its wait began says nothing of how late wake-ups run).
    fn woke_for(&mut self, at: Instant, slept: bool) {
        let now = Instant::now();
        if slept {
            self.late.observe(now.saturating_duration_since(at));
        }
        self.woke = at;
        self.batch_until = now.max(at);
    }
}

/// The open model's step on this thread. The thread wakes at most once per `pace` and
/// sends, as one batch, what fell due since its last wake-up: a request is meant to go at
/// its batch's time (its own time, when requests are further apart than `pace`), and
/// its latency counts from then, so that the pace chosen is the schedule offered, not a
/// wait charged to the server (h2load's clients send in batches the same way, every
/// 10 ms). At most `max_in_flight / n` requests wait for answers at once; the next goes
/// as soon as one is answered, late, its latency counted from when it was meant to go.
/// Requests whose time came and that could not go before the step ended are missed.
pub async fn run_rate(w: Rc<Worker>, rate: f64, max_in_flight: usize, duration: Duration) {
    // A task of the thread's `LocalSet`, like the connections' tasks that wake it: as
    // the future the thread blocks on, each wake-up from one of them would cost the
    // thread an extra turn of its event loop (tokio checks for I/O before polling it).
    let task =
        tokio::task::spawn_local(async move { drive(&w, rate, max_in_flight, duration).await });
    let _ = task.await;
}

async fn drive(w: &Worker, rate: f64, max_in_flight: usize, duration: Duration) {
    let cap = max_in_flight.div_ceil(w.threads).max(1);
    let end = w.start + duration;
    let mut schedule = Schedule::new(w, rate, duration);
    let idle: RefCell<Vec<Connection>> = RefCell::default();
    let mut in_flight = FuturesUnordered::new();
    let mut pacer = Pacer::new().ok();
    let interrupted = w.interrupted();
    tokio::pin!(interrupted);
    loop {
        while in_flight.len() < cap {
            let Some((k, intended)) = schedule.take_due() else {
                break;
            };
            w.progress.active(1);
            in_flight.push(one_request(w, &idle, k, intended));
        }
        let room = in_flight.len() < cap;
        let (wake, beat) = match schedule.next_wake(w.plan.pace).filter(|_| room) {
            Some((at, beat)) => (Some(at), beat),
            None => (None, None),
        };
        if let Some(beat) = beat.filter(|b| *b > w.plan.pace) {
            let mut recorder = w.recorder.borrow_mut();
            recorder.widest_beat = recorder.widest_beat.max(beat);
        }
        let blocked = schedule.pending() && !room;
        if wake.is_none() {
            // Nothing to send until an answer comes: the beat would only wake the thread.
            if let Some(p) = &mut pacer {
                let _ = p.stop();
            }
        }
        let done = wake.is_none() && !blocked && in_flight.is_empty();
        if done || blocked && Instant::now() >= end {
            break;
        }
        // A request in flight ends at once when the run is interrupted (it waits for
        // that too): the stop signal is this loop's to watch only while none is.
        if w.stopped() {
            break;
        }
        let sleeps = wake.is_some_and(|at| at > Instant::now());
        tokio::select! {
            biased;
            Some(()) = in_flight.next(), if !in_flight.is_empty() => {}
            () = &mut interrupted, if in_flight.is_empty() => break,
            () = wait_until(&mut pacer, wake, beat), if wake.is_some() => {
                schedule.woke_for(wake.unwrap_or(end), sleeps);
            }
            () = tokio::time::sleep_until(end), if blocked => {}
        }
    }
    if !w.stopped() {
        w.recorder.borrow_mut().missed += schedule.planned - schedule.sent;
    }
    // Answered, timed out, or (the run interrupted) abandoned at once by each request:
    // polled to their end, so that each is counted out of the progress line.
    in_flight.for_each(|()| async {}).await;
}

/// Request number `k`, meant to go at `intended`, on an idle connection of this thread's
/// if there is one (and the connection kept for the next one after).
async fn one_request(w: &Worker, idle: &RefCell<Vec<Connection>>, k: u64, intended: Instant) {
    let mut slot = idle.borrow_mut().pop();
    w.request(&mut slot, k, intended).await;
    if let Some(conn) = slot {
        idle.borrow_mut().push(conn);
    }
    w.progress.active(-1);
}

/// Waits until `at` on the pacer, which repeats every `beat` if given (tokio's
/// millisecond timer without a pacer, or if the pacer fails).
async fn wait_until(pacer: &mut Option<Pacer>, at: Option<Instant>, beat: Option<Duration>) {
    let Some(at) = at else {
        return std::future::pending().await;
    };
    if let Some(p) = pacer {
        if p.wait_until(at, beat).await.is_ok() {
            return;
        }
        *pacer = None;
    }
    tokio::time::sleep_until(at).await
}

/// How many of a step's requests thread `index` of `threads` is to send: those `k` with
/// `k % threads == index` whose time `k / rate` falls within `duration`.
pub fn planned_requests(rate: f64, duration: Duration, index: u64, threads: u64) -> u64 {
    let total = (rate * duration.as_secs_f64()).ceil() as u64;
    if total <= index {
        return 0;
    }
    (total - index).div_ceil(threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Wake-ups on time keep the pace; late ones (the median of them) widen the beat to
    /// a whole number of paces, never past 10 ms; back on time, the pace again.
    #[test]
    fn the_beat_widens_while_wake_ups_run_late_and_narrows_after() {
        let (ms, us) = (Duration::from_millis, Duration::from_micros);
        let mut late = Lateness::default();
        for i in 0..200u64 {
            // Mostly on time; one in five 20 ms late (a thread busy, not asleep).
            late.observe(if i % 5 == 4 { ms(20) } else { us(30) });
        }
        assert_eq!(late.beat(ms(1)), ms(1));
        for _ in 0..200 {
            late.observe(ms(3) + us(300));
        }
        assert_eq!(late.beat(ms(1)), ms(4), "{late:?}");
        assert_eq!(late.beat(ms(10)), ms(10));
        for _ in 0..400 {
            late.observe(ms(30));
        }
        assert_eq!(late.beat(ms(1)), ms(10), "at most h2load's 10 ms");
        assert_eq!(late.beat(ms(20)), ms(20), "a wider pace is kept");
        for _ in 0..400 {
            late.observe(us(20));
        }
        assert_eq!(late.beat(ms(1)), ms(1));
    }

    #[test]
    fn the_schedule_is_split_without_gaps_or_overlap() {
        for (rate, secs, threads) in [
            (1000.0, 2.0, 2),
            (333.0, 1.5, 3),
            (10.0, 0.25, 4),
            (7.0, 1.0, 8),
        ] {
            let d = Duration::from_secs_f64(secs);
            let sum: u64 = (0..threads)
                .map(|i| planned_requests(rate, d, i, threads))
                .sum();
            assert_eq!(sum, (rate * secs).ceil() as u64, "{rate} {secs} {threads}");
        }
    }
}
