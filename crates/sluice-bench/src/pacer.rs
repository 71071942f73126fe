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
    /// The time the timer is armed for: a wait for the same time, after one given up
    /// (the thread woke for something else meanwhile), arms nothing again.
    armed: Option<Instant>,
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

    /// Completes at `at` (at once if it has passed).
    pub async fn wait_until(&mut self, at: Instant) -> io::Result<()> {
        let now = Instant::now();
        if at <= now {
            return Ok(());
        }
        if self.armed != Some(at) {
            // Arming again also clears an expiry not read yet.
            let delay = TimeSpec::from_duration(at - now);
            self.timer
                .get_ref()
                .0
                .set(Expiration::OneShot(delay), TimerSetTimeFlags::empty())?;
            self.armed = Some(at);
        }
        loop {
            let mut ready = self.timer.readable().await?;
            // Reading the expiration count clears it; EAGAIN means not yet.
            match ready.try_io(|t| t.get_ref().0.wait().map_err(io::Error::from)) {
                Ok(result) => {
                    // Read, the timer has nothing more until it is armed again: without
                    // this, the next wait would begin with a read that finds nothing
                    // (one wasted system call per wake-up).
                    ready.clear_ready();
                    self.armed = None;
                    return result;
                }
                Err(_would_block) => continue,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn wakes_within_a_fraction_of_a_millisecond() {
        let mut pacer = Pacer::new().unwrap();
        let mut late = Vec::new();
        for i in 0..50u64 {
            let at = Instant::now() + Duration::from_micros(300 + i * 37);
            pacer.wait_until(at).await.unwrap();
            let now = Instant::now();
            assert!(now >= at, "woke early");
            late.push(now - at);
        }
        late.sort();
        // tokio's own timer would be up to a whole millisecond late, half on average.
        assert!(
            late[25] < Duration::from_micros(400),
            "median lateness {:?}",
            late[25]
        );
        pacer.wait_until(Instant::now()).await.unwrap();
    }
}
