//! The server side of a request: a worker's pool of idle server connections (`pool`)
//! and one attempt on one server (`attempt`). Upstream connections are plain TCP and
//! HTTP/1.1, whatever the client speaks.

pub mod attempt;
pub mod pool;
