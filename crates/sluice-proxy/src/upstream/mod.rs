//! The server side of a request: a worker's pool of idle server connections (`pool`)
//! and one attempt on one server (`attempt`). Upstream connections are HTTP/1.1 over
//! TCP or TLS (`io::server`), whatever the client speaks.

pub mod attempt;
pub mod pool;
