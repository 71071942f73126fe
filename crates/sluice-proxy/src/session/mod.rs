//! A client connection's requests, from the first byte of each head to its record.
//!
//! Both protocols run one pipeline: the connection reads a head (`h1`: HTTP/1 heads one
//! after another, with keep-alive and pipelining; `h2`: each stream's fields as the
//! HTTP/1.1 head they stand for), the head goes through its stages (`stages`: check,
//! route, limits, encode), and the request is served and recorded by one function
//! (`request`): forwarded, answered by sluice, or refused (`refusals`), then passed to
//! the record stage once.

mod h1;
pub mod h2;
mod refusals;
mod request;
mod stages;

pub use h1::{serve, Parts};

use crate::metrics::ListenerStats;

/// A connection counted open on its listener for as long as it lives.
struct Counted<'a>(&'a ListenerStats);

impl<'a> Counted<'a> {
    fn open(listener: &'a ListenerStats) -> Self {
        listener.local().accepted.add(1);
        Counted(listener)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.local().closed.add(1);
    }
}
