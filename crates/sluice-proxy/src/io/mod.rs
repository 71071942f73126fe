//! Moving bytes: connections with their read buffers and deadlines (`conn`), message
//! bodies streamed from one side to the other (`body`), tunnels (`tunnel`), a server
//! connection over TCP or TLS (`server`) and the PROXY protocol's header
//! (`proxy_protocol`).
//!
//! Generic over the stream ([`Stream`]): TCP or TLS, on either side. This module knows framing (from `http1`) but never routing, servers or
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
