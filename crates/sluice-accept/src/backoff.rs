//! What an accept loop does after `accept` failed: wait before the next try (longer
//! each time, up to [`MAX_DELAY`]), warn once per episode with the open-file limit when
//! descriptors ran out, and say when it accepts again.

use crate::limit::{OpenFiles, HOW_TO_RAISE};
use crate::rarely::Rarely;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// The first wait after a failed accept.
const FIRST_DELAY: Duration = Duration::from_millis(5);
/// The longest wait: an accept loop out of descriptors recovers within it once one is
/// closed, and costs a few wake-ups a second until then.
pub const MAX_DELAY: Duration = Duration::from_millis(200);

/// The failures of one listener's accept loop: call [`failed`](Self::failed) on an
/// error (it waits) and [`accepted`](Self::accepted) on each connection.
#[derive(Debug)]
pub struct AcceptBackoff {
    /// The listener, as logs name it: `listener 127.0.0.1:8080`, `admin listener ...`.
    what: String,
    /// Failures in a row since the last accepted connection.
    failures: u64,
    /// Episodes are warned about at most once a minute (a listener that runs out again
    /// and again logs one line a minute, not one per episode).
    warned: Rarely,
}

impl AcceptBackoff {
    pub fn new(what: impl Into<String>) -> AcceptBackoff {
        AcceptBackoff {
            what: what.into(),
            failures: 0,
            warned: Rarely::default(),
        }
    }

    /// Failures in a row now.
    pub fn failures(&self) -> u64 {
        self.failures
    }

    /// After a failed accept: logs the first failure of an episode, then waits.
    pub async fn failed(&mut self, e: &io::Error) {
        let wait = self.note_failure(e);
        tokio::time::sleep(wait).await;
    }

    /// Counts a failure, logs it when due, and returns how long to wait.
    fn note_failure(&mut self, e: &io::Error) -> Duration {
        if self.failures == 0 && self.warned.due() {
            self.warn(e);
        }
        // 5 ms, doubling with each failure in a row, up to MAX_DELAY.
        let doublings = self.failures.min(16) as u32;
        self.failures += 1;
        FIRST_DELAY.saturating_mul(1 << doublings).min(MAX_DELAY)
    }

    fn warn(&self, e: &io::Error) {
        let retry = MAX_DELAY.as_millis();
        if out_of_descriptors(e) {
            let limit =
                OpenFiles::current().map_or("an unknown number of".into(), |l| l.to_string());
            tracing::warn!(
                cause = %e,
                "{}: accept failed, out of file descriptors at {limit}; connections wait in the \
                 listen queue, accepting is retried every {retry} ms at most, and the ones open \
                 are served. To allow more, {HOW_TO_RAISE}",
                self.what
            );
        } else {
            tracing::warn!(cause = %e, "{}: accept failed; retrying every {retry} ms at most", self.what);
        }
    }

    /// The next connection on `listener`: a failed accept is waited out
    /// ([`failed`](Self::failed)) and tried again. Cancel-safe, so it can stand in a
    /// `select!` beside a stop signal.
    pub async fn accept(&mut self, listener: &TcpListener) -> (TcpStream, SocketAddr) {
        loop {
            match listener.accept().await {
                Ok(accepted) => {
                    self.accepted();
                    return accepted;
                }
                Err(e) => self.failed(&e).await,
            }
        }
    }

    /// After an accepted connection: ends an episode of failures (and says so).
    pub fn accepted(&mut self) {
        if self.failures > 0 {
            tracing::info!(
                failures = self.failures,
                "{}: accepting again after failed accepts",
                self.what
            );
            self.failures = 0;
        }
    }
}

/// Whether `e` says the process or the system has no descriptor (or socket memory) left.
fn out_of_descriptors(e: &io::Error) -> bool {
    // EMFILE 24, ENFILE 23, ENOBUFS 105, ENOMEM 12 on Linux.
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn emfile() -> io::Error {
        io::Error::from_raw_os_error(24)
    }

    #[test]
    fn waits_grow_to_the_cap_and_reset_after_an_accept() {
        let mut b = AcceptBackoff::new("listener test");
        let waits: Vec<Duration> = (0..8).map(|_| b.note_failure(&emfile())).collect();
        assert_eq!(waits[0], FIRST_DELAY);
        assert!(waits.windows(2).all(|w| w[1] >= w[0]), "{waits:?}");
        assert_eq!(*waits.last().unwrap(), MAX_DELAY);
        assert_eq!(b.failures(), 8);
        b.accepted();
        assert_eq!(b.failures(), 0);
        assert_eq!(b.note_failure(&emfile()), FIRST_DELAY);
    }

    #[test]
    fn an_episode_soon_after_the_last_is_not_warned_about_again() {
        let mut b = AcceptBackoff::new("listener test");
        b.note_failure(&emfile());
        assert!(!b.warned.due(), "the first episode was warned about");
        b.accepted();
        b.note_failure(&emfile());
        assert!(
            !b.warned.due(),
            "the second was not, a minute not having passed"
        );
    }

    #[test]
    fn descriptor_errors_are_told_apart() {
        assert!(out_of_descriptors(&emfile()));
        assert!(out_of_descriptors(&io::Error::from_raw_os_error(23)));
        assert!(!out_of_descriptors(&io::Error::from(
            io::ErrorKind::ConnectionAborted
        )));
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_waits_before_returning() {
        let mut b = AcceptBackoff::new("listener test");
        let start = tokio::time::Instant::now();
        for _ in 0..3 {
            b.failed(&emfile()).await;
        }
        assert_eq!(start.elapsed(), FIRST_DELAY * 7);
    }
}
