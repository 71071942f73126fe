//! How many client connections the process holds at once: all the open-file limit
//! allows, less a reserve, so that a flood of clients on the proxy's listeners leaves
//! descriptors for what serving them needs (a connection to a server for each request,
//! health checks, the access log, a reload's files) and for the admin listener, whose
//! own cap bounds what a flood there can take. At the cap the workers stop accepting:
//! new connections wait in the kernel's listen queue (as at HAProxy's `maxconn`) until
//! one closes, and the first wait is logged with the figures and how to raise them.

use sluice_accept::{OpenFiles, Rarely, HOW_TO_RAISE};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Descriptors kept back from client connections, at least: servers' connections,
/// health checks, logs, DNS, a reload.
const MIN_RESERVE: u64 = 256;

/// The process's count of open client connections against its cap, shared by the
/// workers.
pub struct ClientCap {
    open: AtomicUsize,
    max: usize,
    limit: OpenFiles,
    freed: Notify,
    warned: Mutex<Rarely>,
}

/// One client connection counted against the cap, for as long as it lives.
pub struct Slot(Arc<ClientCap>);

impl Drop for Slot {
    fn drop(&mut self) {
        let before = self.0.open.fetch_sub(1, Ordering::AcqRel);
        if before >= self.0.max {
            self.0.freed.notify_waiters();
        }
    }
}

impl ClientCap {
    /// The cap for `limit`, keeping `admin` descriptors for the admin listener's
    /// connections besides the reserve: an eighth of the limit, at least 256.
    pub fn new(limit: OpenFiles, admin: usize) -> ClientCap {
        let reserve = MIN_RESERVE.max(limit.soft / 8) + admin as u64;
        let max = limit.soft.saturating_sub(reserve).max(1);
        ClientCap {
            open: AtomicUsize::new(0),
            max: usize::try_from(max).unwrap_or(usize::MAX),
            limit,
            freed: Notify::new(),
            warned: Mutex::new(Rarely::default()),
        }
    }

    /// The most client connections open at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// The open-file limit the cap was made for.
    pub fn limit(&self) -> OpenFiles {
        self.limit
    }

    /// Client connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Returns once the process is under its cap (at once when it is). Room is not
    /// taken: an accept loop waits here, then accepts and [`enter`](Self::enter)s, so
    /// a loop waiting for a connection holds no slot. Workers taking the last room at
    /// the same moment may go over the cap by one connection each.
    pub async fn room(&self) {
        loop {
            // Registered before the check, so a slot freed in between still wakes us.
            let mut freed = pin!(self.freed.notified());
            freed.as_mut().enable();
            if self.open() < self.max {
                return;
            }
            self.warn();
            freed.await;
        }
    }

    /// Counts an accepted connection for as long as its slot lives.
    pub fn enter(self: &Arc<Self>) -> Slot {
        self.open.fetch_add(1, Ordering::AcqRel);
        Slot(self.clone())
    }

    fn warn(&self) {
        if !self.warned.lock().unwrap_or_else(|p| p.into_inner()).due() {
            return;
        }
        tracing::warn!(
            max = self.max,
            "client connections at their cap of {}, what {} leave after a reserve for \
             servers' connections and the admin listener: new connections wait in the listen \
             queue until one closes. To allow more, {HOW_TO_RAISE}",
            self.max,
            self.limit
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cap(soft: u64) -> Arc<ClientCap> {
        Arc::new(ClientCap::new(OpenFiles { soft, hard: soft }, 64))
    }

    #[test]
    fn the_reserve_is_an_eighth_of_the_limit_at_least_256_plus_the_admin_cap() {
        assert_eq!(cap(1024).max(), 1024 - 256 - 64);
        assert_eq!(cap(20_000).max(), 20_000 - 2_500 - 64);
        assert_eq!(cap(100).max(), 1);
    }

    #[tokio::test]
    async fn at_the_cap_a_connection_waits_for_one_to_close() {
        let cap = cap(322);
        assert_eq!(cap.max(), 2);
        cap.room().await;
        let a = cap.enter();
        cap.room().await;
        let _b = cap.enter();
        assert_eq!(cap.open(), 2);
        let waiting = tokio::spawn({
            let cap = cap.clone();
            async move { cap.room().await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !waiting.is_finished(),
            "room for a third connection in a cap of 2"
        );
        drop(a);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("a freed slot wakes the waiting accept")
            .unwrap();
        assert_eq!(cap.open(), 1);
    }
}
