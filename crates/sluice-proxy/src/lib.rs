//! sluice's data path: listeners, TLS, routing, upstream connection pools, and
//! forwarding of HTTP/1.1 and HTTP/2 requests and WebSocket tunnels.
//!
//! This crate owns everything that touches a request between accept and the last byte of
//! its response. It speaks HTTP/1.1 itself (heads parsed with `httparse`, bodies streamed
//! through fixed buffers) so that the per-request work stays small: one read and one write
//! on each side for a typical request. HTTP/2 from clients goes through the `h2` crate
//! (vendored with four patches: vendor/README.md), TLS through rustls, to the same stages as HTTP/1.1; servers
//! are spoken to in HTTP/1.1, in plain TCP or TLS. It must never panic on input, never
//! buffer a whole body, never block a worker thread, and never connect anywhere but a
//! configured server. Balancing decisions come from `sluice-balance`; configuration from
//! `sluice-config`.
//!
//! # A request's path
//!
//! 1. **Accept** (`runtime::worker`): a worker's listener accepts; the connection's
//!    facts are written down once (`client::Client`) and it gets a task running
//!    [`session::serve`] (or `session::h2::serve`) with the worker's
//!    [`context::Context`].
//! 2. **Read the head** (`session::h1`): with no buffer while idle
//!    (`downstream::buffers`), within `header_timeout` (from the accept for the first
//!    request) or `keepalive_timeout` of idleness. An HTTP/2 stream's fields stand for
//!    the same head (`session::h2::head`).
//! 3. **Parse** (`http1::request`), then the stages both protocols share
//!    (`session::stages`): **check** (`http1::check`: method, target, `Host`, framing),
//!    **route** (`route`: host and path, and the hash key), the route's rate limits and
//!    **guards** ([`guard`]: address rules, basic auth; a password is hashed off the
//!    worker, in step 4, before anything else), and **encode** the head for the server
//!    (`http1::encode`). Then one function serves the
//!    request (`session::request`): steps 4 to 6.
//! 4. **Forward** (`forward`) or answer (`answer`, `session::refusals`): pick a server
//!    (`state::group`), make an **attempt**
//!    (`upstream::attempt`: a pooled or new connection from `upstream::pool`, head and
//!    body out, response head back), retry on another server when the [`failure`]
//!    allows it and the budget has a token.
//! 5. **Deliver** through the client seam (`downstream`): the response head and streamed
//!    body (`io::body`; compressed on a route with `compress`, as `compress` decides), or a tunnel after `101` (`io::tunnel`), or sluice's own error
//!    reply (`http1::reply`); then the connection's cleanup (lingering close).
//! 6. **Record** (`record`): the request's outcome, once: its listener's and route's
//!    counts, its access log line and its tracing line. Then the session reads the
//!    next head or closes.
//!
//! Dependencies point one way, from the stages above to the layers below:
//! `runtime` -> `session` -> `forward` -> {`upstream`, `downstream`, `route`, `state`,
//! `record`, `failure`} -> `io` -> `http1`; `context`, `clock` and `compress` are leaves
//! the stages share. `docs/decisions.md` has the graph, checked by `scripts/module-graph.py`.

mod access_log;
pub mod acme;
mod answer;
mod client;
mod clock;
mod compress;
mod context;
mod downstream;
mod failure;
mod files;
mod forward;
pub mod guard;
mod http1;
mod idle_waits;
mod io;
pub mod metrics;
mod record;
mod route;
mod runtime;
mod session;
mod state;
pub mod tls;
mod upstream;

pub use runtime::leases::{Drained, LeaseError, Limited};
pub use runtime::listen::Inherited;
pub use runtime::server::{Proxy, ReloadSummary};
pub use runtime::view::{
    DnsView, LimitView, ListenerView, QueueView, RouteView, ServerView, Snapshot, UpstreamView,
    View,
};
pub use runtime::worker::Lent;
pub use state::drain::DrainedWithoutLease;
pub use state::group::ServerError;

#[doc(hidden)]
pub mod testing;
