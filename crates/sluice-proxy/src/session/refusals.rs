//! What sluice answers itself instead of forwarding: a 404 when no route matches, a 429
//! when a limit refuses, and the record of a request refused before its stages ended
//! (a malformed, oversized or too slow head).

use crate::client::Client;
use crate::context::Context;
use crate::downstream::Downstream;
use crate::failure::{Body, Failure, Kind};
use crate::guard::Refusal;
use crate::http1::check::Request;
use crate::http1::reply::Extra;
use crate::io::Stream;
use crate::metrics::ListenerStats;
use crate::record::{record, Logged, Outcome};
use crate::route::RouteId;
use crate::state::generation::Generation;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// Records a request refused before its stages ended (its reply, or its stream's
/// reset, went out already). Its access log line shows `-` for the request line,
/// Referer and User-Agent: a head that failed its checks is not repeated in the log.
/// `started`: when sluice began to refuse it.
pub(crate) fn refused(
    ctx: &Context,
    (client, stats): (&Client, &ListenerStats),
    failure: Failure,
    started: (Instant, SystemTime),
) {
    let mut outcome = Outcome::unrouted(failure.status, failure);
    outcome.client = Some(client.peer);
    let logged = Logged {
        started,
        request: "-",
        referer: "-",
        user_agent: "-",
        user: None,
        identity: None,
    };
    record(ctx, &ctx.generation(), stats, &outcome, Some(logged));
}

/// Answers a request a rate limit refused: 429, with when to come back.
pub(crate) async fn limited<S: Stream>(
    down: &mut Downstream<'_, S>,
    req: &Request,
    route: Option<RouteId>,
    wait: Duration,
) -> Outcome<'static> {
    // The body was not read: the connection cannot be reused unless there was none.
    let body = Body::unread(req.framing);
    let keep_alive = req.keep_alive && body.consumed() && route.is_some();
    let after = wait.as_secs_f64().ceil().max(1.0) as u32;
    let sent = down
        .send_error_after(429, !keep_alive, Some(Extra::RetryAfter(after)))
        .await;
    let keep_alive = sent && down.conclude(!body.consumed(), keep_alive).await;
    let cause = match route {
        Some(_) => "over the route's rate limit",
        None => "the client has max_conns_per_client connections open",
    };
    Outcome {
        keep_alive,
        route,
        ..Outcome::unrouted(429, Failure::downstream(Kind::Limited, 429, cause, body))
    }
}

/// Answers a request route `route`'s guard refused: 403, or 401 with its realm. Like
/// any answer of sluice's own, it keeps the connection when no body was left unread.
pub(crate) async fn guarded<'g, S: Stream>(
    generation: &'g Generation,
    down: &mut Downstream<'_, S>,
    req: &Request,
    route: RouteId,
    why: Refusal,
) -> Outcome<'g> {
    let body = Body::unread(req.framing);
    let keep_alive = req.keep_alive && body.consumed();
    let status = why.status();
    let guard = &generation.shared.route(route).guard;
    let realm = guard.auth.as_ref().map(|a| a.realm.as_str());
    let extra = realm
        .filter(|_| why == Refusal::Credentials)
        .map(Extra::Authenticate);
    let sent = down.send_error_after(status, !keep_alive, extra).await;
    let keep_alive = sent && down.conclude(!body.consumed(), keep_alive).await;
    let (kind, cause) = match why {
        Refusal::Address => (Kind::Forbidden, "the route's access rules deny the address"),
        Refusal::Credentials => (
            Kind::Unauthorized,
            "no valid user and password for the route",
        ),
    };
    Outcome {
        keep_alive,
        route: Some(route),
        ..Outcome::unrouted(status, Failure::downstream(kind, status, cause, body))
    }
}

/// Answers a request no route matches: 404, naming its host and path in the failure.
pub(crate) async fn not_found<S: Stream>(
    down: &mut Downstream<'_, S>,
    req: &Request,
    what: String,
) -> Outcome<'static> {
    // The body was not read: the connection cannot be reused unless there was none.
    let body = Body::unread(req.framing);
    let keep_alive = req.keep_alive && body.consumed();
    let sent = down.send_error(404, !keep_alive).await;
    let keep_alive = sent && down.conclude(!body.consumed(), keep_alive).await;
    let failure = Failure::downstream(Kind::NoRoute, 404, format!("no route matches {what}"), body);
    Outcome {
        keep_alive,
        ..Outcome::unrouted(404, failure)
    }
}

/// `host HOST, path PATH` of a request head, for a log line (the head is valid).
pub(crate) fn host_and_path(head: &[u8]) -> String {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let target = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or("-");
    let host = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("host"))
        .map_or("-", |(_, v)| v.trim());
    let path = target.split('?').next().unwrap_or(target);
    format!("host {host}, path {path}")
}
