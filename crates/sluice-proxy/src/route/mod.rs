//! Routing: which route a request's host and path select (`router`), the rewrites and
//! the server's path that follow (`locate`), and the hash key an upstream balances on,
//! from nginx-style variables (`key`). Pure lookups over a request's parts; knows
//! nothing of connections or server state.

pub mod key;
pub mod locate;
pub mod router;

/// A route's place in its generation: its index in `config.routes` and in the
/// generation's route counters alike. A type of its own, so that a route and an
/// upstream index never swap silently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteId(pub(crate) usize);

/// An upstream's place in its generation: in `config.upstreams` and the generation's
/// upstream states alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpstreamId(pub(crate) usize);
