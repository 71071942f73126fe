//! Sending the open model's requests on time.
//!
//! tokio's timer has millisecond resolution: a request meant for t goes out up to a
//! millisecond later, and that lateness would count as the server's latency (measured
//! from t). The pacer waits on a Linux timerfd instead, armed with the exact delay and
//! driven by the event loop like any socket, with the thread's timer slack lowered from
//! the default 50 µs.
//!
//! That leaves the time the thread takes to run again once its timer expires: on a
//! virtual machine whose idle CPU halts, 40 µs at a 1 ms beat and 100 µs at a 10 ms one
//! (the median, measured here), all of it counted as latency. So the pacer learns that
//! delay ([`Lead`]) and arms its timer that much early: a wait then ends around its
//! time, a little early as often as a little late, at no cost in CPU (spinning the
//! last microseconds would cost some at every wake-up). A request sent early is timed
//! from its send, one sent late from when it was meant to go (`Worker::settle`), and
//! the report's send lag says how close they went.

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use std::io;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

/// A timerfd, as the event loop watches it.
struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

pub struct Pacer {
    timer: AsyncFd<Timer>,
    /// What the timer is armed for: a wait for a time it will reach anyway, after one
    /// given up (the thread woke for something else meanwhile) or on its period, arms
    /// nothing again.
    armed: Option<Armed>,
    lead: Lead,
}

/// A timer's waits: `first`, then every `period` after it if it has one; it expires
/// `lead` before each.
#[derive(Clone, Copy)]
struct Armed {
    first: Instant,
    period: Option<Duration>,
    lead: Duration,
}

/// How long the thread takes to run once its timer expired, as the median of its
/// recent wake-ups: each moves the estimate a step toward itself, so that a wake-up
/// late because the thread was busy (not asleep) moves it no more than any other.
#[derive(Default)]
struct Lead(Duration);

impl Lead {
    /// The most a wait is armed early, and so the earliest it may end.
    const MAX: Duration = Duration::from_micros(250);
    const STEP: Duration = Duration::from_micros(2);
    /// How far the lead may move from the one a repeating timer was armed with before
    /// it is armed again.
    const SLACK: Duration = Duration::from_micros(10);

    fn get(&self) -> Duration {
        self.0
    }

    fn observe(&mut self, delay: Duration) {
        self.0 = if delay > self.0 {
            (self.0 + Self::STEP).min(Self::MAX)
        } else {
            self.0.saturating_sub(Self::STEP)
        };
    }
}

impl Armed {
    fn reaches(&self, at: Instant) -> bool {
        match self.period {
            None => at == self.first,
            Some(period) => {
                at >= self.first
                    && (at - self.first)
                        .as_nanos()
                        .is_multiple_of(period.as_nanos())
            }
        }
    }
}

impl Pacer {
    /// A pacer for this thread (it also lowers this thread's timer slack to 1 ns).
    pub fn new() -> io::Result<Pacer> {
        // Best effort: without it, wake-ups are up to 50 µs late.
        let _ = nix::sys::prctl::set_timerslack(1);
        let flags = TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC;
        let fd = TimerFd::new(ClockId::CLOCK_MONOTONIC, flags)?;
        // tokio 1.54 deprecates this safe constructor for `unsafe fn register`, because
        // a type could hand out a different descriptor than the one registered. Ours
        // owns its timerfd for as long as the registration lives and always returns it,
        // and this workspace forbids `unsafe`.
        #[allow(deprecated)]
        let timer = AsyncFd::new(Timer(fd))?;
        Ok(Pacer {
            timer,
            armed: None,
            lead: Lead::default(),
        })
    }

    /// Completes around `at` (at once if it is nearer than the thread's wake-up delay),
    /// never more than [`Lead::MAX`] before. With `period`, the timer is armed to repeat
    /// every `period` from `at`, so that waits for `at + period`, `at + 2 x period`, ...
    /// (a pacer's steady beat) cost no system call to arm it again: one a wake-up fewer,
    /// at 1,000 wake-ups a second (issue 27).
    pub async fn wait_until(&mut self, at: Instant, period: Option<Duration>) -> io::Result<()> {
        let now = Instant::now();
        let lead = self.lead.get();
        if at <= now + lead {
            return Ok(());
        }
        // Armed for `at` already, and early by about what the thread now takes to wake:
        // kept (a repeating timer's beat costs no system call); the lead moved, armed
        // again.
        let kept = |a: &Armed| a.reaches(at) && a.lead.abs_diff(lead) < Lead::SLACK;
        let armed = match self.armed.filter(kept) {
            Some(armed) => armed,
            None => {
                let armed = Armed {
                    first: at,
                    period: period.filter(|p| !p.is_zero()),
                    lead,
                };
                self.arm(at - now - lead, armed.period)?;
                self.armed = Some(armed);
                armed
            }
        };
        let expires = at - armed.lead;
        loop {
            self.expired().await?;
            // An earlier expiry (one that came while the thread was busy past it, the
            // wait given up) does not end this wait: only the clock does.
            let woke = Instant::now();
            if woke >= expires {
                self.lead.observe(woke - expires);
                return Ok(());
            }
        }
    }

    /// Arms the timer to expire after `first`, and every `period` (not zero) after if
    /// given. Arming again also clears an expiry not seen yet.
    fn arm(&self, first: Duration, period: Option<Duration>) -> io::Result<()> {
        let first = TimeSpec::from_duration(first);
        let expiration = match period {
            Some(p) => Expiration::IntervalDelayed(first, TimeSpec::from_duration(p)),
            None => Expiration::OneShot(first),
        };
        self.timer
            .get_ref()
            .0
            .set(expiration, TimerSetTimeFlags::empty())?;
        Ok(())
    }

    /// Waits for the timer's next expiry and reads it.
    async fn expired(&self) -> io::Result<()> {
        loop {
            let mut ready = self.timer.readable().await?;
            // Reading the expiration count clears it, and is what makes a repeating
            // timerfd go on (the kernel re-arms it on the read); EAGAIN means not yet.
            match ready.try_io(|t| t.get_ref().0.wait().map_err(io::Error::from)) {
                Ok(result) => {
                    // Read, the timer has nothing more until it expires again: without
                    // this, the next wait would begin with a read that finds nothing
                    // (one wasted system call per wake-up).
                    ready.clear_ready();
                    return result;
                }
                Err(_would_block) => continue,
            }
        }
    }

    /// Stops a repeating timer, so that it wakes the thread no more (a run that has
    /// nothing left to send, waiting for its last answers).
    pub fn stop(&mut self) -> io::Result<()> {
        if self.armed.take().is_some_and(|a| a.period.is_some()) {
            self.timer.get_ref().0.unset()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Waits for `at` on `pacer` and returns how far from it the wait ended: never more
    /// than the lead's bound early.
    async fn offset(pacer: &mut Pacer, at: Instant, period: Option<Duration>) -> Duration {
        pacer.wait_until(at, period).await.unwrap();
        let now = Instant::now();
        assert!(now + Lead::MAX >= at, "ended {:?} early", at - now);
        now.max(at) - now.min(at)
    }

    /// The median of the waits' offsets is a fraction of a millisecond (tokio's own
    /// timer would be up to a whole millisecond late, half on average).
    fn assert_median_under_400us(mut offsets: Vec<Duration>) {
        offsets.sort();
        let median = offsets[offsets.len() / 2];
        assert!(
            median < Duration::from_micros(400),
            "median offset {median:?}"
        );
    }

    /// The lead follows the wake-ups' median, not their mean: a few late wake-ups (the
    /// thread busy) do not raise it; and it never passes its bound.
    #[test]
    fn the_lead_learns_the_median_wake_up_delay() {
        let mut lead = Lead::default();
        let us = Duration::from_micros;
        for i in 0..400u64 {
            // Mostly 40 to 60 µs, one in five 5 ms (a busy thread's).
            let delay = if i % 5 == 4 {
                us(5_000)
            } else {
                us(40 + i % 21)
            };
            lead.observe(delay);
        }
        assert!(
            lead.get() > us(40) && lead.get() < us(70),
            "lead {:?}",
            lead.get()
        );
        for _ in 0..400 {
            lead.observe(us(5_000));
        }
        assert_eq!(lead.get(), Lead::MAX);
        for _ in 0..400 {
            lead.observe(Duration::ZERO);
        }
        assert_eq!(lead.get(), Duration::ZERO);
    }

    #[tokio::test]
    async fn wakes_within_a_fraction_of_a_millisecond() {
        let mut pacer = Pacer::new().unwrap();
        let mut late = Vec::new();
        for i in 0..50u64 {
            let at = Instant::now() + Duration::from_micros(300 + i * 37);
            late.push(offset(&mut pacer, at, None).await);
        }
        assert_median_under_400us(late);
        pacer.wait_until(Instant::now(), None).await.unwrap();
    }

    /// On a beat (the timer armed once, repeating), each wait ends around its own time:
    /// not a beat before, even after the thread was busy past a few beats (their
    /// expiries are waiting to be read), and not a beat late.
    #[tokio::test]
    async fn a_repeating_timer_keeps_the_beat_and_never_ends_a_wait_a_beat_early() {
        let mut pacer = Pacer::new().unwrap();
        let beat = Duration::from_millis(2);
        let first = Instant::now() + beat;
        let mut late = Vec::new();
        for k in 0..40u32 {
            if k == 20 {
                // Busy past three beats without waiting (the event loop not turning).
                std::thread::sleep(beat * 3);
            }
            let skipped = if k >= 20 { 3 } else { 0 };
            let at = first + beat * (k + skipped);
            late.push(offset(&mut pacer, at, Some(beat)).await);
        }
        assert_median_under_400us(late);
        pacer.stop().unwrap();
        // Stopped, a wait arms the timer again.
        let at = Instant::now() + Duration::from_millis(1);
        offset(&mut pacer, at, None).await;
    }
}
