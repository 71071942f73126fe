//! The record stage: every finished request passes here once, with its [`Outcome`].
//!
//! This is where the access log and per-worker counters and histograms attach (the
//! observability work fills it in); today it writes the request's log line: a warning for
//! a failure, naming route, upstream, server, status and cause, and a debug line otherwise.

use crate::failure::{Failure, Side};
use std::net::SocketAddr;

/// What became of one request.
#[derive(Debug)]
pub struct Outcome<'a> {
    /// The client's address (set by the connection that read the request).
    pub client: Option<SocketAddr>,
    /// The route's path prefix, or `None` when no route matched.
    pub route: Option<&'a str>,
    pub upstream: Option<&'a str>,
    /// The server that answered last (or failed last).
    pub server: Option<SocketAddr>,
    /// The status the client got (or was to get: the connection may have broken).
    pub status: u16,
    /// Servers tried.
    pub tries: usize,
    /// Why it failed, if it did. A response relayed whole has none, whatever its status.
    pub failure: Option<Failure>,
    /// The client connection can carry another request.
    pub keep_alive: bool,
    /// Bytes of a relayed response sent to the client (0 for sluice's own replies).
    pub bytes_sent: u64,
    /// The last attempt's time, from its start to the response's end or the failure.
    pub upstream_time: Option<std::time::Duration>,
    /// Time spent in the upstream's queue waiting for a server with room, if any.
    pub queue_time: Option<std::time::Duration>,
}

impl Outcome<'_> {
    /// A request that never reached a route: refused as it came, or matching none.
    pub fn unrouted(status: u16, failure: Failure) -> Outcome<'static> {
        Outcome {
            client: None,
            route: None,
            upstream: None,
            server: None,
            status,
            tries: 0,
            failure: Some(failure),
            keep_alive: false,
            bytes_sent: 0,
            upstream_time: None,
            queue_time: None,
        }
    }
}

/// Records one finished request. A failure the client caused is logged at info level
/// (they are common and not the operator's to fix); others are warnings. Nothing is
/// formatted unless its log line is enabled: this runs on every request.
pub fn record(outcome: &Outcome<'_>) {
    let client = Shown(outcome.client.map(|c| c.ip()));
    let route = outcome.route.unwrap_or("-");
    let upstream = outcome.upstream.unwrap_or("-");
    let server = Shown(outcome.server);
    let status = outcome.status;
    match &outcome.failure {
        Some(f) if f.side == Side::Downstream => {
            tracing::info!(%client, route, status, kind = f.kind.name(), cause = %f.cause, "request refused")
        }
        Some(f) => tracing::warn!(
            %client,
            route,
            upstream,
            %server,
            status,
            tries = outcome.tries,
            side = ?f.side,
            kind = f.kind.name(),
            cause = %f.cause,
            "request failed"
        ),
        None => tracing::debug!(%client, route, upstream, %server, status, "request done"),
    }
}

/// A value, or `-` when there is none (as access logs write it).
pub(crate) struct Shown<T>(pub Option<T>);

impl<T: std::fmt::Display> std::fmt::Display for Shown<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(v) => v.fmt(f),
            None => f.write_str("-"),
        }
    }
}
