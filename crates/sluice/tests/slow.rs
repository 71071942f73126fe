//! The slow end-to-end tests, in a target of their own so they neither hold up nor
//! crowd the quick ones: the fault-injection suite (servers killed, hanging, answering
//! garbage, 50 reloads under load) and soak tests (10,000 connections, 1 GiB bodies).
//! `cargo test` runs them with everything else.

mod proxy {
    pub mod harness;
    pub mod load;

    mod faults;
    mod soak;
}
