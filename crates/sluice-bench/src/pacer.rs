//! Sending the open model's requests on time.
//!
//! tokio's timer has millisecond resolution: a request meant for t goes out up to a
//! millisecond later, and that lateness would count as the server's latency (measured
//! from t). The pacer waits on a Linux timerfd instead, armed with the exact delay and
//! driven by the event loop like any socket, with the thread's timer slack lowered from
//! the default 50 µs: requests then go out within some tens of microseconds of their
//! time, and the report's send lag says how close.

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
}

/// A timer's expirations: `first`, then every `period` after it if it has one.
#[derive(Clone, Copy)]
struct Armed {
    first: Instant,
    period: Option<Duration>,
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
        Ok(Pacer { timer, armed: None })
    }

    /// Completes at `at` (at once if it has passed). With `period`, the timer is armed
    /// to repeat every `period` from `at`, so that waits for `at + period`, `at + 2 x
    /// period`, ... (a pacer's steady beat) cost no system call to arm it again: one
    /// a wake-up fewer, at 1,000 wake-ups a second (issue 27).
    pub async fn wait_until(&mut self, at: Instant, period: Option<Duration>) -> io::Result<()> {
        let now = Instant::now();
        if at <= now {
            return Ok(());
        }
        if !self.armed.is_some_and(|a| a.reaches(at)) {
            // Arming again also clears an expiry not seen yet.
            let first = TimeSpec::from_duration(at - now);
            let period = period.filter(|p| !p.is_zero());
            let expiration = match period {
                Some(p) => Expiration::IntervalDelayed(first, TimeSpec::from_duration(p)),
                None => Expiration::OneShot(first),
            };
            let timer = &self.timer.get_ref().0;
            timer.set(expiration, TimerSetTimeFlags::empty())?;
            self.armed = Some(Armed { first: at, period });
        }
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
                    result?;
                }
                Err(_would_block) => continue,
            }
            // An earlier expiry (one that came while the thread was busy past it, the
            // wait given up) does not end this wait: only the clock does.
            if Instant::now() >= at {
                return Ok(());
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

    /// Waits for `at` on `pacer` and returns how late it ended; never early.
    async fn lateness(pacer: &mut Pacer, at: Instant, period: Option<Duration>) -> Duration {
        pacer.wait_until(at, period).await.unwrap();
        let now = Instant::now();
        assert!(now >= at, "ended {:?} early", at - now);
        now - at
    }

    /// The median of the waits' lateness is a fraction of a millisecond (tokio's own
    /// timer would be up to a whole millisecond late, half on average).
    fn assert_median_under_400us(mut late: Vec<Duration>) {
        late.sort();
        let median = late[late.len() / 2];
        assert!(
            median < Duration::from_micros(400),
            "median lateness {median:?}"
        );
    }

    #[tokio::test]
    async fn wakes_within_a_fraction_of_a_millisecond() {
        let mut pacer = Pacer::new().unwrap();
        let mut late = Vec::new();
        for i in 0..50u64 {
            let at = Instant::now() + Duration::from_micros(300 + i * 37);
            late.push(lateness(&mut pacer, at, None).await);
        }
        assert_median_under_400us(late);
        pacer.wait_until(Instant::now(), None).await.unwrap();
    }

    /// On a beat (the timer armed once, repeating), each wait ends on its own time: not
    /// before, even after the thread was busy past a few beats (their expiries are
    /// waiting to be read), and not a beat late.
    #[tokio::test]
    async fn a_repeating_timer_keeps_the_beat_and_never_ends_a_wait_early() {
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
            late.push(lateness(&mut pacer, at, Some(beat)).await);
        }
        assert_median_under_400us(late);
        pacer.stop().unwrap();
        // Stopped, a wait arms the timer again.
        let at = Instant::now() + Duration::from_millis(1);
        lateness(&mut pacer, at, None).await;
    }
}
