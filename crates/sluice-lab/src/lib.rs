//! sluice's performance lab: the simulated backend (an app server stand-in) and the
//! measurements behind sluice's balancing claims (`sluice hash-report`).
//!
//! This crate owns the things a load test runs against or alongside the proxy. It must
//! never be imported by the data path: the proxy does not know the lab exists.

pub mod backend;
pub mod balance_sim;
pub mod cpu;
pub mod cpu_budget;
pub mod cpu_duty;
pub mod db_pool;
pub mod hash_report;
pub mod procfs;
pub mod stomp;
pub mod websocket;
