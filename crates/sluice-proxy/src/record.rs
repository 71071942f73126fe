//! The record stage: every finished request passes here once, with its [`Outcome`],
//! and this is the one place its facts go: the listener's counts (requests, and what
//! sluice answered itself by status), the route's count by status, the access log's
//! line and the tracing line. Per-attempt figures (a server's responses, latency,
//! ejections) stay at the attempt, beside the stage that knows them.

pub use crate::access_log::Identity;
use crate::access_log::{Entry, Shown};
use crate::context::Context;
use crate::failure::{Failure, Kind, Side};
use crate::metrics::{ListenerStats, Refused};
use crate::route::RouteId;
use crate::state::generation::Generation;
use std::net::SocketAddr;
use std::time::SystemTime;
use tokio::time::Instant;

pub(crate) mod summary;

/// What became of one request.
#[derive(Debug)]
pub struct Outcome<'a> {
    /// The client's address (set by the connection that read the request).
    pub client: Option<SocketAddr>,
    /// The route's index in the generation that served the request, or `None` when no
    /// route matched.
    pub route: Option<RouteId>,
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
    /// The request's identity, when `[request_id]` asks for one (for its error lines).
    pub identity: Option<&'a Identity>,
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
            identity: None,
        }
    }
}

/// What the access log needs that only the connection knows: when the request began,
/// and its request line, Referer and User-Agent as the client sent them.
pub struct Logged<'t> {
    pub started: (Instant, SystemTime),
    pub request: &'t str,
    pub referer: &'t str,
    pub user_agent: &'t str,
    /// The user named in the request's basic auth, where the route asked for one.
    pub user: Option<&'t str>,
    /// Its identity, when `[request_id]` asks for one.
    pub identity: Option<&'t Identity>,
}

/// Records one finished request: counted on its listener and route, written to the
/// access log (when there is one and `logged` says what to write), and traced.
pub(crate) fn record(
    ctx: &Context,
    generation: &Generation,
    listener: &ListenerStats,
    outcome: &Outcome<'_>,
    logged: Option<Logged<'_>>,
) {
    count(generation, listener, outcome);
    if let Some(logged) = logged.filter(|_| generation.shared.access_log.is_some()) {
        log(ctx, generation, outcome, logged);
    }
    trace(generation, outcome);
}

/// Counts a request on its listener (with what sluice answered itself, by status) and
/// on its route, by the status the client got.
fn count(generation: &Generation, listener: &ListenerStats, outcome: &Outcome<'_>) {
    let slot = listener.local();
    slot.requests.add(1);
    if let Some(f) = &outcome.failure {
        if f.side != Side::Upstream {
            slot.reject(outcome.status);
        }
    }
    if let Some(r) = outcome.route {
        let stats = generation.shared.route_stats(r);
        stats.response(outcome.status);
        match outcome.failure.as_ref().map(|f| f.kind) {
            Some(Kind::Forbidden) => stats.refuse(Refused::Address),
            Some(Kind::Unauthorized) => stats.refuse(Refused::Credentials),
            _ => {}
        }
    }
}

/// The request's access log line.
fn log(ctx: &Context, generation: &Generation, outcome: &Outcome<'_>, logged: Logged<'_>) {
    ctx.log(
        generation,
        &Entry {
            client: outcome.client,
            at: logged.started.1,
            request: logged.request,
            referer: logged.referer,
            user_agent: logged.user_agent,
            user: logged.user,
            identity: logged.identity,
            status: outcome.status,
            bytes_sent: outcome.bytes_sent,
            request_time: logged.started.0.elapsed(),
            upstream: outcome.server,
            upstream_time: outcome.upstream_time,
            queue_time: outcome.queue_time,
            tries: outcome.tries,
            route: route_path(generation, outcome),
        },
    );
}

fn route_path<'g>(generation: &'g Generation, outcome: &Outcome<'_>) -> Option<&'g str> {
    outcome
        .route
        .map(|r| generation.shared.route(r).path.as_str())
}

/// The request's tracing line. A failure the client caused is logged at info level
/// (they are common and not the operator's to fix); others are warnings. Nothing is
/// formatted unless its line is enabled: this runs on every request.
fn trace(generation: &Generation, outcome: &Outcome<'_>) {
    let client = Shown(outcome.client.map(|c| c.ip()));
    let route = route_path(generation, outcome).unwrap_or("-");
    let upstream = outcome.upstream.unwrap_or("-");
    let server = Shown(outcome.server);
    let status = outcome.status;
    let request_id = outcome.identity.map_or("-", |i| &i.request_id);
    let trace_id = outcome.identity.map_or("-", Identity::trace_id);
    match &outcome.failure {
        Some(f) if f.side == Side::Downstream => {
            tracing::info!(%client, route, status, kind = f.kind.name(), cause = %f.cause, %request_id, %trace_id, "request refused")
        }
        Some(f) => {
            if !tracing::enabled!(tracing::Level::WARN) {
                return;
            }
            // During an outage every request fails the same way: one line a second per
            // server and kind of failure, with how many like it were not logged.
            let (line, kind) = ("request failed", f.kind.name());
            let Some(suppressed) = summary::admit(line, outcome.upstream, outcome.server, kind)
            else {
                return;
            };
            tracing::warn!(
                %client,
                route,
                upstream,
                %server,
                status,
                tries = outcome.tries,
                side = ?f.side,
                kind = f.kind.name(),
                cause = %f.cause,
                suppressed,
                %request_id,
                %trace_id,
                "request failed"
            )
        }
        None => tracing::debug!(%client, route, upstream, %server, status, "request done"),
    }
}
