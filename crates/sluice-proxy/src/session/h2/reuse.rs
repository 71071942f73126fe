//! A stream's future in a box that outlives it. When the stream finishes, the box comes
//! back empty and the connection's next stream is put in it: a stream's state (4,456
//! bytes) is too large for the allocator's per-thread cache, and a fresh allocation of
//! it for every stream showed up in `malloc` and `free` (callgrind). A connection keeps
//! one spare box, not one per stream it once had at the same time.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

/// A box for a stream's future, empty between streams.
pub type Slot<F> = Pin<Box<Option<F>>>;

/// `future`, in `spare` if there is one; its output is the box, emptied.
pub struct Reused<F> {
    slot: Option<Slot<F>>,
}

impl<F: Future<Output = ()>> Reused<F> {
    /// The future `make` makes, in `spare` if there is one. Made where it is to stay:
    /// a future passed in by value was copied whole into the box (4,456 bytes, of
    /// which a new future uses its arguments' few hundred), about 450 instructions a
    /// stream in `memcpy` (callgrind).
    #[inline(always)]
    pub fn new(spare: Option<Slot<F>>, make: impl FnOnce() -> F) -> Self {
        let mut slot = spare.unwrap_or_else(|| Box::pin(None));
        slot.set(Some(make()));
        Reused { slot: Some(slot) }
    }
}

impl<F: Future<Output = ()>> Future for Reused<F> {
    type Output = Slot<F>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Slot<F>> {
        // Polled again after it gave its box back: it has nothing left to do.
        let Some(slot) = self.slot.as_mut() else {
            return Poll::Pending;
        };
        if let Some(future) = slot.as_mut().as_pin_mut() {
            ready!(future.poll(cx));
        }
        // The stream's state is dropped now, not when the box is next filled.
        slot.set(None);
        Poll::Ready(self.slot.take().unwrap_or_else(|| Box::pin(None)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[tokio::test]
    async fn the_box_comes_back_empty_and_carries_the_next_future() {
        let dropped = Rc::new(Cell::new(0));
        let counted = |n: u32| {
            let dropped = dropped.clone();
            async move {
                struct OnDrop(Rc<Cell<u32>>);
                impl Drop for OnDrop {
                    fn drop(&mut self) {
                        self.0.set(self.0.get() + 1);
                    }
                }
                let _guard = OnDrop(dropped);
                tokio::task::yield_now().await;
                let _ = n;
            }
        };
        let first = Reused::new(None, || counted(1)).await;
        assert!(first.is_none());
        assert_eq!(dropped.get(), 1, "the finished future was dropped");
        let at = &*first as *const Option<_> as usize;
        let second = Reused::new(Some(first), || counted(2)).await;
        assert_eq!(&*second as *const Option<_> as usize, at, "the same box");
        assert_eq!(dropped.get(), 2);
    }
}
