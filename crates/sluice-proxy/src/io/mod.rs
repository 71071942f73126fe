//! Moving bytes: connections with their read buffers and deadlines (`conn`), message
//! bodies streamed from one side to the other (`body`), and tunnels (`tunnel`).
//!
//! Generic over the stream ([`Stream`]): a client's connection is TCP today and may be
//! TLS tomorrow. This module knows framing (from `http1`) but never routing, servers or
//! the config.

pub mod body;
pub mod conn;
pub mod proxy_protocol;
pub mod server;
pub mod stream;
pub mod tunnel;

pub use conn::{write_all, Conn};
pub use server::ServerStream;
pub use stream::Stream;
