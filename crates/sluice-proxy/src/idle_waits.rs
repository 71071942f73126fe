//! How long idle client connections may wait for their next bytes: one table of
//! deadlines per worker, checked by one timer, instead of a timer in every connection.
//!
//! An idle HTTP/1.1 connection's future is most of what the proxy holds per idle client
//! (issue 32), and tokio's `Sleep` is 112 bytes of it, the drain signal's `Notified` 64
//! more; a wait here is 16 (the table and a key) and its row in the table 32. A deadline
//! is met within [`TICK`] after it passes, never before; the worker's drain ends every
//! wait at once.
//!
//! This module owns when a wait ends and whom to wake then; it must never hold a
//! connection's state nor decide what happens to it once its wait is over.

use slab::Slab;
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How late past its deadline a wait may end: the table is read this often while it has
/// rows.
pub const TICK: Duration = Duration::from_millis(100);

/// A worker's idle waits.
pub struct IdleWaits {
    table: RefCell<Slab<Row>>,
    /// What the rows' deadlines count from.
    epoch: Instant,
    /// The worker is draining: every wait is over, new ones too.
    ended: Cell<bool>,
    /// Wakes [`IdleWaits::sweep`] when the table gets a row after being empty.
    filled: Notify,
}

/// A wait's row: 32 bytes (an `Instant` would make it 40).
struct Row {
    /// Milliseconds from the epoch, rounded up.
    until: u64,
    waker: Option<Waker>,
    over: bool,
}

impl Default for IdleWaits {
    fn default() -> Self {
        IdleWaits {
            table: RefCell::default(),
            epoch: crate::clock::now(),
            ended: Cell::new(false),
            filled: Notify::new(),
        }
    }
}

impl IdleWaits {
    /// A wait that completes once `until` has passed or the worker drains.
    pub fn wait(&self, until: Instant) -> IdleWait<'_> {
        let mut table = self.table.borrow_mut();
        if table.is_empty() {
            self.filled.notify_one();
        }
        let over = self.ended.get();
        let from_epoch = until.saturating_duration_since(self.epoch);
        let key = table.insert(Row {
            until: from_epoch.as_nanos().div_ceil(1_000_000) as u64,
            waker: None,
            over,
        });
        IdleWait { waits: self, key }
    }

    /// Ends every wait, now and from now on (the worker drains).
    pub fn end_all(&self) {
        self.ended.set(true);
        self.end_where(|_| true);
    }

    /// Ends the waits whose deadline has passed, every [`TICK`] while there are any; runs
    /// for the worker's life.
    pub async fn sweep(&self) {
        loop {
            if self.table.borrow().is_empty() {
                self.filled.notified().await;
            }
            tokio::time::sleep(TICK).await;
            let now = crate::clock::now().saturating_duration_since(self.epoch);
            let now = now.as_millis() as u64;
            self.end_where(|row| row.until <= now);
        }
    }

    fn end_where(&self, due: impl Fn(&Row) -> bool) {
        let mut table = self.table.borrow_mut();
        for (_, row) in table.iter_mut().filter(|(_, row)| !row.over && due(row)) {
            row.over = true;
            // Schedules the connection's task; tokio never polls it from inside `wake`.
            if let Some(waker) = row.waker.take() {
                waker.wake();
            }
        }
        // The table's room is kept while it is in use (keys stay put); given back once
        // it is empty, so that a burst of idle clients leaves no table behind.
        if table.is_empty() && table.capacity() > 1024 {
            *table = Slab::new();
        }
    }

    #[cfg(test)]
    fn rows(&self) -> usize {
        self.table.borrow().len()
    }
}

/// One connection's wait (its row leaves the table when it is dropped).
pub struct IdleWait<'a> {
    waits: &'a IdleWaits,
    key: usize,
}

impl Future for IdleWait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut table = self.waits.table.borrow_mut();
        let row = &mut table[self.key];
        if row.over {
            return Poll::Ready(());
        }
        if !row.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            row.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for IdleWait<'_> {
    fn drop(&mut self) {
        self.waits.table.borrow_mut().remove(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_after_its_deadline_within_a_tick_and_never_before() {
        let waits = Rc::new(IdleWaits::default());
        let sweeping = tokio::task::LocalSet::new();
        let w = waits.clone();
        sweeping.spawn_local(async move { w.sweep().await });
        sweeping
            .run_until(async {
                let start = Instant::now();
                let (short, long) = (Duration::from_millis(250), Duration::from_secs(2));
                let first = async {
                    waits.wait(start + short).await;
                    start.elapsed()
                };
                let second = async {
                    waits.wait(start + long).await;
                    start.elapsed()
                };
                let (a, b) = tokio::join!(first, second);
                assert!(a >= short && a <= short + TICK, "{a:?}");
                assert!(b >= long && b <= long + TICK, "{b:?}");
                assert_eq!(waits.rows(), 0, "a finished wait leaves its row");
            })
            .await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_drain_ends_every_wait_and_the_ones_after() {
        let waits = IdleWaits::default();
        let far = Instant::now() + Duration::from_secs(3600);
        let (a, b) = (waits.wait(far), waits.wait(far));
        let ended = async {
            tokio::task::yield_now().await;
            waits.end_all();
        };
        let ((), (), ()) = tokio::join!(a, b, ended);
        waits.wait(far).await;
        assert_eq!(waits.rows(), 0);
    }
}
