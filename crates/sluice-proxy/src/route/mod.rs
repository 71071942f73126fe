//! Routing: which route a request's host and path select (`router`), and the hash key
//! an upstream balances on, from nginx-style variables (`key`). Pure lookups over a
//! request's parts; knows nothing of connections or server state.

pub mod key;
pub mod router;
