//! The simulated app server, a stand-in for a Spring Boot app in the lab and in tests:
//! HTTP with a worker pool, a database pool and CPU work of a given size (`backend`,
//! `db_pool`, `cpu`), WebSocket and a STOMP broker (`websocket`, `stomp`); and the
//! simulations behind sluice's balancing claims (`balance_sim`, `hash_report`, which
//! `sluice hash-report` prints).
//!
//! It must never be imported by the data path: the proxy does not know it exists.

pub mod backend;
pub mod balance_sim;
pub mod cpu;
pub mod db_pool;
pub mod hash_report;
pub mod stomp;
pub mod websocket;
