//! Forwarding one request: pick a server, make an attempt, and on a failure the server is
//! to blame for, count it against the server and, when it is safe and the retry budget
//! allows, try another server. Then relay the response back, or open a tunnel. Returns
//! the request's [`Outcome`] for the record stage.

use crate::context::Context;
use crate::downstream::Downstream;
use crate::failure::{Body, Failure, Kind, Retry};
use crate::http1::check::Request;
use crate::http1::head::Framing;
use crate::http1::reply::Extra;
use crate::http1::response::MAX_RESPONSE_HEAD;
use crate::io::body::{Transfer, TransferError};
use crate::io::conn::bounded;
use crate::io::{Conn, ServerStream, Stream};
use crate::metrics::EjectCause;
use crate::record::{summary, Outcome};
use crate::route::{RouteId, UpstreamId};
use crate::state::generation::Generation;
use crate::state::group::{InFlight, Pick, ServerError, ServerGroup};
use crate::state::health::now_ns;
use crate::upstream::attempt::{Attempt, Received};
use std::sync::Arc;

/// Servers one request may try: the first plus at most this many retries.
const MAX_TRIES: usize = 11;

/// Forwards `req` (its head for the server in `head`, its hash key in `key`) on `route`
/// (the route and its upstream).
pub async fn forward<'g, S: Stream>(
    ctx: &Context,
    generation: &'g Generation,
    down: &mut Downstream<'_, S>,
    req: &Request,
    route: (RouteId, UpstreamId),
    head: &[u8],
    key: &[u8],
) -> Outcome<'g> {
    let mut queued = None;
    let mut outcome =
        try_servers(ctx, generation, down, (req, head, key), route, &mut queued).await;
    outcome.queue_time = queued;
    outcome
}

/// [`forward`]'s tries; `queued` adds up the time spent waiting for a server with room.
async fn try_servers<'g, S: Stream>(
    ctx: &Context,
    generation: &'g Generation,
    down: &mut Downstream<'_, S>,
    (req, head, key): (&Request, &[u8], &[u8]),
    route: (RouteId, UpstreamId),
    queued: &mut Option<std::time::Duration>,
) -> Outcome<'g> {
    let (route, u) = route;
    let up = generation.shared.upstream(u);
    let scope = Scope {
        ctx,
        generation,
        route,
        up,
    };
    generation.count_request(u);
    let body = match buffer_body(&generation.shared.config, up, down, req).await {
        Ok(body) => body,
        Err(f) => return scope.fail(down, req, None, f, 0).await,
    };
    // What is left of the body on the client connection if no try is made.
    let left = match body {
        Some(_) => Body::Whole,
        None => Body::unread(req.framing),
    };
    let deadline = generation
        .shared
        .route(route)
        .timeout
        .map(|t| crate::clock::now() + t);
    let mut tried = [0usize; MAX_TRIES];
    let mut tries = 0;
    let mut last: Option<(usize, Failure)> = None;
    loop {
        let (server, _in_flight) = match slot(up, key, ctx.random(), &tried[..tries], queued).await
        {
            Ok(picked) => picked,
            Err(Some(mut f)) => {
                f.body = left;
                return scope.fail(down, req, None, f, tries).await;
            }
            Err(None) => {
                let (server, f) = match last {
                    Some((s, f)) => (Some(s), f),
                    None => (None, Failure::unavailable(left)),
                };
                return scope.fail(down, req, server, f, tries).await;
            }
        };
        if let Some((from, f)) = &last {
            scope.retrying(*from, server, f);
        }
        tried[tries] = server;
        tries += 1;
        let started = crate::clock::now();
        let attempt = Attempt {
            pool: &ctx.pool,
            up,
            server,
            req,
            draining: ctx.draining(),
            max_trailer_bytes: generation.shared.config.max_header_bytes,
            body_timeout: generation.shared.config.request_body_timeout,
            body: body.as_deref(),
            session: key,
        };
        let ran = bounded(deadline, attempt.run(down, head)).await;
        match ran.unwrap_or_else(|_| Err(past_deadline(req, body.is_some()))) {
            Ok(received) => return scope.deliver(down, server, received, tries, started).await,
            Err(f) => {
                let stats = up.servers[server].stats.local();
                stats.response(f.status);
                let took = started.elapsed();
                stats.total.observe(took);
                scope.blame(server, &f);
                if f.server_fault() {
                    up.learn(server, took, true);
                }
                match may_retry(up, req, &f, tries, || generation.report(u)) {
                    Retrying::Yes => stats.retries.add(1),
                    Retrying::BudgetEmpty => {
                        stats.budget_exhausted.add(1);
                        return scope.fail(down, req, Some(server), f, tries).await;
                    }
                    Retrying::No => return scope.fail(down, req, Some(server), f, tries).await,
                }
                last = Some((server, f));
            }
        }
    }
}

/// A try that ran past the route's `timeout`.
fn past_deadline(req: &Request, buffered: bool) -> Failure {
    // How much of a streamed body went is unknown: its connection cannot go on.
    let body = match req.framing {
        Framing::None => Body::None,
        _ if buffered => Body::Whole,
        _ => Body::Partial,
    };
    Failure::deadline(body)
}

/// The request body read whole, when the upstream's `retry_buffer` holds it, so that
/// another try can send it again; `None` when it streams (larger, of unknown length,
/// none, or a `100-continue` or upgrade, which wait for the server's word).
async fn buffer_body<S: Stream>(
    config: &sluice_config::Config,
    up: &ServerGroup,
    down: &mut Downstream<'_, S>,
    req: &Request,
) -> Result<Option<Vec<u8>>, Failure> {
    let Framing::Length(n) = req.framing else {
        return Ok(None);
    };
    let fits = n > 0 && n <= up.config.retry.buffer as u64;
    if !fits || req.expect_continue || req.upgrade.is_some() {
        return Ok(None);
    }
    let mut body = Vec::with_capacity(n as usize);
    let t = Transfer {
        framing: req.framing,
        dechunk: false,
        max_trailer_bytes: config.max_header_bytes,
        read_timeout: down.timeout(),
        write_timeout: down.timeout(),
    };
    let deadline = config.request_body_timeout.map(|t| crate::clock::now() + t);
    let read = bounded(deadline, down.send_request_body(&[], &mut body, t))
        .await
        .unwrap_or_else(|_| Err(TransferError::Read(std::io::ErrorKind::TimedOut.into())));
    match read {
        Ok(()) => Ok(Some(body)),
        Err(TransferError::Read(e) | TransferError::Write(e)) => {
            let status = if e.kind() == std::io::ErrorKind::TimedOut {
                408
            } else {
                400
            };
            let cause = format!("reading the request body from the client: {e}");
            Err(Failure::downstream(
                Kind::reading_client(&e),
                status,
                cause,
                Body::Partial,
            ))
        }
    }
}

/// A server for the next try and the slot taken on it: at once, or after waiting in
/// the upstream's queue. `Err(None)`: no server is available; `Err(Some)`: the queue
/// was full or the wait ran out.
async fn slot<'u>(
    up: &'u ServerGroup,
    key: &[u8],
    random: u64,
    tried: &[usize],
    waited: &mut Option<std::time::Duration>,
) -> Result<(usize, InFlight<'u>), Option<Failure>> {
    loop {
        let queued = match up.pick(key, random, tried) {
            Pick::Server(server, slot) => return Ok((server, slot)),
            Pick::None => return Err(None),
            Pick::QueueFull => return Err(Some(Failure::overloaded("queue full", Body::None))),
            Pick::Queued(queued) => queued,
        };
        let (slot, took) = queued.wait(up.config.queue.timeout).await;
        *waited = Some(waited.unwrap_or_default() + took);
        let Some(slot) = slot else {
            let cause = "no server had room within queue_timeout";
            return Err(Some(Failure::overloaded(cause, Body::None)));
        };
        // A slot on a server a reload has taken out of this upstream goes back.
        if let Some(server) = up
            .servers
            .iter()
            .position(|s| Arc::ptr_eq(s, slot.server()))
        {
            return Ok((server, slot.into_in_flight(&up.queue)));
        }
    }
}

/// Whether a failed request goes to another server.
enum Retrying {
    Yes,
    No,
    /// It could have, but the retry budget had no token left.
    BudgetEmpty,
}

/// Whether a failed request may go to another server: the failure allows it (see
/// [`Failure::may_retry_elsewhere`]), tries remain, a server is left that it has not
/// tried (never, in a one-server upstream: no retry is counted there, no token spent),
/// and the retry budget has a token. `report` brings the budget up to date before a
/// token is spent from it.
fn may_retry(
    up: &ServerGroup,
    req: &Request,
    f: &Failure,
    tries: usize,
    report: impl FnOnce(),
) -> Retrying {
    let allowed = f.may_retry_elsewhere(req.idempotent, up.config.retry.non_idempotent)
        && tries <= up.config.retry.retries as usize
        && tries < up.servers.len().min(MAX_TRIES);
    if !allowed {
        return Retrying::No;
    }
    report();
    if up.withdraw() {
        Retrying::Yes
    } else {
        Retrying::BudgetEmpty
    }
}

/// Where a request is going: what logging and failure accounting need.
struct Scope<'a, 'g> {
    ctx: &'a Context,
    generation: &'g Generation,
    route: RouteId,
    up: &'g ServerGroup,
}

impl<'g> Scope<'_, 'g> {
    /// Counts a failure against the server, and logs when it ejects it.
    fn blame(&self, server: usize, f: &Failure) {
        if !f.server_fault() {
            return;
        }
        let up = self.up;
        let route = &self.generation.shared.route(self.route);
        up.servers[server].remember(ServerError {
            at: std::time::SystemTime::now(),
            route: route.path.clone(),
            status: f.status,
            kind: f.kind.name(),
            cause: f.cause.to_string(),
        });
        if let Some(eject) = up.servers[server]
            .health
            .failed(&up.config.failure, now_ns())
        {
            let cause = eject_cause(f) as usize;
            up.servers[server].stats.local().ejections[cause].add(1);
            let route = &self.generation.shared.route(self.route).path;
            tracing::warn!(route = %route, upstream = %up.config.name, server = %up.addr(server), cause = %f.cause, eject_for = ?eject, "server ejected after repeated failures");
        }
    }

    /// Logs a retry once its server is picked (so that the line is true), once a second
    /// per server and kind of failure with how many were not logged: in an outage under
    /// load every request retries.
    fn retrying(&self, from: usize, to: usize, f: &Failure) {
        if !tracing::enabled!(tracing::Level::INFO) {
            return;
        }
        let (up, line) = (self.up, "retrying on another server");
        let (name, server) = (&up.config.name, up.addr(from));
        let Some(suppressed) = summary::admit(line, Some(name), Some(server), f.kind.name()) else {
            return;
        };
        tracing::info!(upstream = %name, %server, next = %up.addr(to), cause = %f.cause, suppressed, "retrying on another server");
    }

    /// The outcome so far, on `server` with the status the client got.
    fn outcome(&self, server: Option<usize>, status: u16, tries: usize) -> Outcome<'g> {
        Outcome {
            client: None,
            route: Some(self.route),
            upstream: Some(&self.up.config.name),
            server: server.map(|s| self.up.addr(s)),
            status,
            tries,
            failure: None,
            keep_alive: false,
            bytes_sent: 0,
            upstream_time: None,
            queue_time: None,
            identity: None,
        }
    }

    /// Relays the response; records its status for passive health.
    async fn deliver<S: Stream>(
        &self,
        down: &mut Downstream<'_, S>,
        server: usize,
        received: Received,
        tries: usize,
        started: tokio::time::Instant,
    ) -> Outcome<'g> {
        let Received {
            mut upstream,
            resp,
            delivery,
            request_body_unread,
        } = received;
        let mut outcome = self.outcome(Some(server), resp.status, tries);
        let up = self.up;
        let stats = up.servers[server].stats.local();
        stats.response(resp.status);
        let first_byte = started.elapsed();
        stats.first_byte.observe(first_byte);
        let failed_status = up.config.failure.fail_status.contains(&resp.status);
        up.learn(server, first_byte, failed_status);
        if resp.upgraded {
            stats.tunnels_opened.add(1);
            self.tunnel(down, server, &mut upstream).await;
            stats.tunnels_closed.add(1);
            return outcome;
        }
        if failed_status {
            self.blame(server, &Failure::status(resp.status));
        }
        let t = Transfer {
            framing: resp.framing,
            dechunk: delivery.dechunk,
            max_trailer_bytes: MAX_RESPONSE_HEAD,
            read_timeout: up.config.read_timeout,
            write_timeout: down.timeout(),
        };
        match down.relay_response(&mut upstream, t).await {
            Ok(sent) => {
                outcome.bytes_sent = sent;
                if !failed_status && up.servers[server].health.succeeded() {
                    let route = &self.generation.shared.route(self.route).path;
                    tracing::info!(route = %route, upstream = %up.config.name, server = %up.addr(server), "server back after its ejection: a request succeeded");
                }
                if resp.reusable {
                    let (config, state) = (&up.config, &up.servers[server]);
                    self.ctx
                        .pool
                        .checkin(state, upstream, config.keepalive, config.idle_timeout);
                }
                outcome.keep_alive = down.conclude(request_body_unread, !delivery.close).await;
            }
            Err(TransferError::Read(e)) => {
                self.blame(server, &Failure::status(502));
                let cause = format!(
                    "server failed in the middle of a response ({e}); closing the client connection"
                );
                outcome.failure = Some(Failure::upstream(
                    Kind::Reset,
                    502,
                    cause,
                    Body::Whole,
                    Retry::Never,
                ));
            }
            Err(TransferError::Write(e)) => {
                tracing::debug!(cause = %e, "client stopped reading the response");
            }
        }
        let took = started.elapsed();
        stats.total.observe(took);
        outcome.upstream_time = Some(took);
        outcome
    }

    /// Runs the tunnel a `101` opened, until it ends; the connection ends with it.
    async fn tunnel<S: Stream>(
        &self,
        down: &mut Downstream<'_, S>,
        server: usize,
        upstream: &mut Conn<ServerStream>,
    ) {
        let (route, up) = (&self.generation.shared.route(self.route), self.up);
        let retired = up.servers[server].retired();
        let end = down
            .tunnel(upstream, route.tunnel_idle_timeout, retired)
            .await;
        tracing::debug!(route = %route.path, upstream = %up.config.name, server = %up.addr(server), end = ?end, "tunnel closed");
    }

    /// Answers the client with the failure's status.
    async fn fail<S: Stream>(
        &self,
        down: &mut Downstream<'_, S>,
        req: &Request,
        server: Option<usize>,
        f: Failure,
        tries: usize,
    ) -> Outcome<'g> {
        let consumed = f.body.consumed();
        let keep_alive = req.keep_alive && consumed && !self.ctx.draining();
        let sent = down
            .send_error_after(f.status, !keep_alive, f.retry_after.map(Extra::RetryAfter))
            .await;
        let mut outcome = self.outcome(server, f.status, tries);
        outcome.keep_alive = sent && down.conclude(!consumed, keep_alive).await;
        outcome.failure = Some(f);
        outcome
    }
}

/// What an ejection is counted as, from the failure that caused it.
fn eject_cause(f: &Failure) -> EjectCause {
    match f.kind {
        Kind::Connect => EjectCause::Connect,
        Kind::Timeout | Kind::Deadline => EjectCause::Timeout,
        Kind::Status => EjectCause::Status,
        _ => EjectCause::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ejection_is_counted_by_the_kind_of_its_failure() {
        let upstream =
            |kind, status| Failure::upstream(kind, status, "x", Body::None, Retry::Never);
        let table = [
            (upstream(Kind::Connect, 502), EjectCause::Connect),
            (upstream(Kind::Connect, 504), EjectCause::Connect),
            (upstream(Kind::Timeout, 504), EjectCause::Timeout),
            (Failure::status(503), EjectCause::Status),
            (upstream(Kind::Reset, 502), EjectCause::Error),
            (upstream(Kind::BadResponse, 502), EjectCause::Error),
        ];
        for (f, cause) in table {
            assert_eq!(eject_cause(&f), cause, "{:?}", f.kind);
        }
    }
}
