//! The buffers a client connection works with, and a worker's stash of spare ones.
//!
//! A connection waiting for its next request holds no buffer: it hands its read buffer
//! and scratch space to the worker's stash and takes a set back when bytes arrive. Ten
//! thousand idle keep-alive clients then cost their sockets and tasks, not 16 KiB each,
//! and a busy connection still does not allocate per request: the stash is a stack that
//! the last connection to go idle fills and the next one to wake up empties.

use crate::io::conn::READ_CHUNK;
use bytes::BytesMut;
use std::cell::{Cell, RefCell};

/// Buffers reused by every request on a connection, so the hot path does not allocate.
#[derive(Default)]
pub struct Scratch {
    /// The request head as it goes to the server.
    pub head: Vec<u8>,
    /// The request's hash key, when its upstream hashes.
    pub key: Vec<u8>,
    /// Bytes on their way out (response heads, body chunks, error replies).
    pub out: Vec<u8>,
    /// The request line, Referer and User-Agent, for the access log (when there is one).
    pub log: String,
    /// Header lines the route adds to the request and to the response (evaluated for
    /// this request), when it has any.
    pub request_edits: Vec<u8>,
    pub response_edits: Vec<u8>,
    /// A rate limit's key for this request, when its route has limits.
    pub limit_key: Vec<u8>,
}

/// What a busy client connection needs besides its socket.
pub struct Buffers {
    pub read: BytesMut,
    pub scratch: Scratch,
}

/// Spare buffer sets kept per worker. More than this many idle connections give theirs
/// back to the allocator.
const MAX_SPARE: usize = 32;

/// A bigger buffer is freed rather than kept (a large body grew it).
const MAX_KEPT_CAPACITY: usize = 4 * READ_CHUNK;

#[derive(Default)]
pub struct Stash {
    spare: RefCell<Vec<Buffers>>,
    /// Sets taken so far: one per request, or per wake-up of an idle connection; how
    /// busy the worker is (see `runtime::give_back`).
    taken: Cell<u64>,
}

impl Stash {
    /// A set of buffers: a spare one, or a new one.
    pub fn take(&self) -> Buffers {
        self.taken.set(self.taken.get() + 1);
        self.spare.borrow_mut().pop().unwrap_or_else(|| Buffers {
            read: BytesMut::with_capacity(READ_CHUNK),
            scratch: Scratch::default(),
        })
    }

    /// Sets taken since the worker started.
    pub fn taken(&self) -> u64 {
        self.taken.get()
    }

    /// Frees the spare sets: for a worker gone quiet, whose next requests can afford a
    /// new set each (`runtime::give_back`).
    pub fn release(&self) {
        self.spare.borrow_mut().clear();
        self.spare.borrow_mut().shrink_to_fit();
    }

    /// Keeps `buffers` for the next connection that needs them, if there is room and
    /// they are not oversized; frees them otherwise.
    pub fn give(&self, mut buffers: Buffers) {
        let Scratch {
            head,
            key,
            out,
            log,
            request_edits,
            response_edits,
            limit_key,
        } = &mut buffers.scratch;
        let oversized = [
            head.capacity(),
            key.capacity(),
            out.capacity(),
            log.capacity(),
            request_edits.capacity(),
            response_edits.capacity(),
            limit_key.capacity(),
        ]
        .into_iter()
        .chain([buffers.read.capacity()])
        .any(|c| c > MAX_KEPT_CAPACITY);
        let mut spare = self.spare.borrow_mut();
        // A buffer without capacity was never allocated (or was handed on): nothing to keep.
        if oversized || buffers.read.capacity() == 0 || spare.len() >= MAX_SPARE {
            return;
        }
        head.clear();
        key.clear();
        out.clear();
        log.clear();
        request_edits.clear();
        limit_key.clear();
        response_edits.clear();
        buffers.read.clear();
        spare.push(buffers);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_stash_keeps_no_spare_set_and_still_hands_out_sets() {
        let stash = Stash::default();
        let sets: Vec<Buffers> = (0..4).map(|_| stash.take()).collect();
        sets.into_iter().for_each(|b| stash.give(b));
        assert_eq!(stash.spare.borrow().len(), 4);
        stash.release();
        assert_eq!(stash.spare.borrow().capacity(), 0);
        let again = stash.take();
        assert_eq!(again.read.capacity(), READ_CHUNK);
        assert_eq!(stash.taken(), 5);
    }
}
