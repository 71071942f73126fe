//! End-to-end tests of the proxy: real sockets on 127.0.0.1, real backends (hyper, or raw
//! TCP peers that misbehave on purpose), clients that speak HTTP/1.1 byte for byte.
//! The slow fault-injection and soak tests are in `slow.rs`, a target of their own.

mod support;

mod proxy {
    pub mod harness;

    mod access_log;
    mod acme;
    mod admin_cli;
    mod answers;

    mod balancing;
    mod compress;
    mod dashboard;
    mod discovery;
    mod errors;
    mod exhaustion;
    mod forwarded;
    mod framing;
    mod grafana;
    mod guards;
    mod hashing;
    mod headers;
    mod http2;
    mod identity;
    mod import;
    mod install;
    mod leases;
    mod lifecycle;
    mod metrics;
    mod overload;
    mod pooling;
    mod sticky;
    mod strict;
    mod tls;
    mod websocket;
}
