//! sluice's data path: listeners, routing, upstream connection pools and forwarding of
//! HTTP/1.1 requests and responses.
//!
//! This crate owns everything that touches a request between accept and the last byte of
//! its response. It speaks HTTP/1.1 itself (heads parsed with `httparse`, bodies streamed
//! through fixed buffers) so that the per-request work stays small: one read and one write
//! on each side for a typical request. It must never panic on input, never buffer a whole
//! body, never block a worker thread, and never connect anywhere but a configured server.
//! Balancing decisions come from `sluice-balance`; configuration from `sluice-config`.

mod authority;
mod body;
mod buffers;
mod checks;
mod chunked;
mod client;
mod clock;
mod conn;
mod exchange;
mod forward;
mod head;
mod health;
mod key;
mod listen;
mod pool;
mod reply;
mod request;
mod response;
mod route;
mod server;
mod state;
mod tunnel;
mod upstream;
mod worker;

pub use server::{Proxy, ReloadSummary};

#[doc(hidden)]
pub mod testing;
