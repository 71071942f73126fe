//! The slow end-to-end tests, in a target of their own so they neither hold up nor
//! crowd the quick ones: the fault-injection suite (servers killed, hanging, answering
//! garbage, 50 reloads under load), soak tests (10,000 connections, 1 GiB bodies) and
//! `sluice bench` with 10,000 users, binary upgrades under `sluice bench`.
//! `cargo test` runs them with everything else.

mod support;

mod proxy {
    pub mod harness;
    pub mod load;

    mod bench_scale;
    mod faults;
    mod soak;
    mod upgrade;
}
