//! sluice's performance lab: for now, the simulated backend (an app server stand-in).
//!
//! This crate owns the things a load test runs against or alongside the proxy. It must
//! never be imported by the data path: the proxy does not know the lab exists.

pub mod backend;
