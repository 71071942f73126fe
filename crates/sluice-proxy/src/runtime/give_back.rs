//! When a worker gives the memory its busy time freed back to the system.
//!
//! The allocator (`sluice_alloc`) returns freed memory only when the thread that freed
//! it allocates again: a worker that went quiet after a burst kept the burst's buffers
//! resident for as long as it stayed quiet (3 KiB per client that stayed connected,
//! where an idle client holds 1). The worker's upkeep tick asks [`Quiet`] whether to give
//! back; how busy it was is the buffer sets its connections took (one per request). When
//! it gives back it frees its stash's spare sets first (5,000 clients idle after a burst:
//! 1.48 -> 1.27 KiB each, medians of five `idle_clients burst` runs).

/// Buffer sets taken in one tick at or below which a worker is quiet.
const QUIET_TAKES: u64 = 16;

/// Ticks a worker gives back on once it is quiet. The allocator returns memory in steps,
/// each a delay after the one before (empty pages, then their memory: its purge delay;
/// then a freed segment's: 10 times that): measured after a burst of 5,000 requests,
/// two calls half a second apart left 10.2 MB of it resident, six 7.6 MB (1.52 KiB per
/// client, against 0.94 for clients that came one after another).
const GIVES: u8 = 6;

/// A worker's busyness, tick by tick.
#[derive(Debug)]
pub struct Quiet {
    /// Buffer sets taken by the last tick.
    taken: u64,
    /// Quiet ticks left to give back on.
    gives: u8,
}

impl Quiet {
    /// Starts from the buffer sets taken so far.
    pub fn new(taken: u64) -> Quiet {
        Quiet { taken, gives: 0 }
    }

    /// At a tick, with the buffer sets taken so far: whether to give memory back now
    /// (on each of the first [`GIVES`] quiet ticks after a busy one).
    pub fn tick(&mut self, taken: u64) -> bool {
        let busy = taken - std::mem::replace(&mut self.taken, taken) > QUIET_TAKES;
        if busy {
            self.gives = GIVES;
            return false;
        }
        let give = self.gives > 0;
        self.gives = self.gives.saturating_sub(1);
        give
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_gives_back_on_the_quiet_ticks_after_a_busy_one_and_then_stops() {
        let mut q = Quiet::new(100);
        // Idle from the start: nothing to give back.
        assert!(!q.tick(100));
        assert!(!q.tick(100 + QUIET_TAKES));
        // Busy, then quiet: gives back GIVES times, then no more.
        let mut taken = 100 + QUIET_TAKES + 1000;
        assert!(!q.tick(taken), "not while busy");
        let gave: Vec<bool> = (0..GIVES + 3)
            .map(|_| {
                taken += 1;
                q.tick(taken)
            })
            .collect();
        let expected: Vec<bool> = (0..GIVES + 3).map(|i| i < GIVES).collect();
        assert_eq!(gave, expected);
        // Busy again in the middle of giving back: it starts over once quiet again.
        taken += QUIET_TAKES + 1;
        assert!(!q.tick(taken));
        assert!(q.tick(taken));
    }
}
