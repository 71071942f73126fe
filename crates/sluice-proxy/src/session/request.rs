//! One request, served and recorded: the function both protocols call once its head
//! passed its stages. It dispatches the request (forwarded, answered by sluice, or
//! refused) through the connection's [`Downstream`] and hands the outcome to the record
//! stage, once.

use super::refusals::{guarded, limited, not_found};
use super::stages::{Staged, Target};
use crate::access_log;
use crate::answer;
use crate::client::Client;
use crate::context::Context;
use crate::downstream::{Compressing, Downstream};
use crate::forward::forward;
use crate::guard::{Pending, Refusal};
use crate::http1::check::Request;
use crate::http1::encode::Edits;
use crate::io::Stream;
use crate::metrics::ListenerStats;
use crate::record::{record, Logged, Outcome};
use crate::state::generation::Generation;
use std::net::SocketAddr;
use std::time::SystemTime;
use tokio::time::Instant;

/// What a staged request carries besides its downstream: the head for the server (or
/// the answer's head) and the hash key, what a 404 names, and what the access log
/// writes.
pub(crate) struct Prepared<'a> {
    pub head: &'a [u8],
    pub key: &'a [u8],
    /// `host H, path P` of a request no route matches.
    pub unrouted: Option<String>,
    pub logged: Option<Logged<'a>>,
}

/// Serves `staged` through `down` and records it. True when the connection can carry
/// another request.
pub(crate) async fn serve<S: Stream>(
    ctx: &Context,
    (client, stats): (&Client, &ListenerStats),
    down: &mut Downstream<'_, S>,
    staged: Staged,
    prepared: Prepared<'_>,
) -> bool {
    let Staged {
        request,
        target,
        generation,
        guarded,
        compress: _,
    } = staged;
    let target = match guarded.pending {
        Some(pending) => Box::pin(verified(&generation, *pending, target)).await,
        None => target,
    };
    let head = (prepared.head, prepared.key);
    let mut outcome = dispatch(
        ctx,
        &generation,
        down,
        &request,
        target,
        head,
        prepared.unrouted,
    )
    .await;
    outcome.client = Some(match guarded.forwarded_for {
        Some(ip) => SocketAddr::new(ip, 0),
        None => client.peer,
    });
    outcome.identity = guarded.identity.as_deref();
    let logged = prepared.logged.map(|logged| Logged {
        user: guarded.user.as_deref(),
        identity: guarded.identity.as_deref(),
        ..logged
    });
    record(ctx, &generation, stats, &outcome, logged);
    outcome.keep_alive
}

/// `target` once its password is verified, or the route's 401 when it is wrong.
async fn verified(generation: &Generation, pending: Pending, target: Target) -> Target {
    if pending.verify(generation).await {
        return target;
    }
    match target {
        Target::Forward(r, _) | Target::Answer(r, _) => Target::Refused(r, Refusal::Credentials),
        other => other,
    }
}

/// Forwards, answers or refuses a staged request. `prepared`: the head for the server
/// (or the answer's head) and the hash key.
async fn dispatch<'g, S: Stream>(
    ctx: &Context,
    generation: &'g Generation,
    down: &mut Downstream<'_, S>,
    req: &Request,
    target: Target,
    prepared: (&[u8], &[u8]),
    unrouted: Option<String>,
) -> Outcome<'g> {
    let (head, key) = prepared;
    // Not boxed: a box per request cost more instructions than it saved memory (the
    // heap fragments between request boxes and connection tasks; see
    // docs/decisions.md). The rarer answers below are boxed, keeping their state
    // out of every connection's task.
    match target {
        Target::Forward(r, u) => forward(ctx, generation, down, req, (r, u), head, key).await,
        Target::Answer(r, local) => Box::pin(answer::send(down, req, Some(r), local, head)).await,
        Target::Challenge(local) => Box::pin(answer::send(down, req, None, local, head)).await,
        Target::Unrouted => Box::pin(not_found(down, req, unrouted.unwrap_or_default())).await,
        Target::Limited(r, wait) => Box::pin(limited(down, req, r, wait)).await,
        Target::Refused(r, why) => Box::pin(guarded(generation, down, req, r, why)).await,
    }
}

/// When there is an access log: where the request line, Referer and User-Agent end in
/// the log text (copied from the head), and when the request began.
pub(crate) type Captured = Option<((usize, usize), (Instant, SystemTime))>;

/// Copies the access log's fields of `head` into `log`, and reads the clocks, when there
/// is an access log.
pub(crate) fn logged(generation: &Generation, head: &[u8], log: &mut String) -> Captured {
    generation.shared.access_log.is_some().then(|| {
        let fields = access_log::capture(head, log);
        (fields, (crate::clock::now(), SystemTime::now()))
    })
}

/// What the record stage writes to the access log, from what [`logged`] captured into
/// `text`.
pub(crate) fn captured(captured: Captured, text: &str) -> Option<Logged<'_>> {
    captured.map(|((request_end, referer_end), started)| Logged {
        started,
        request: &text[..request_end],
        referer: &text[request_end..referer_end],
        user_agent: &text[referer_end..],
        user: None,
        identity: None,
    })
}

/// The route's changes to the response head, when it has any.
pub(crate) fn response_edits<'a>(
    generation: &'a Generation,
    target: &Target,
    lines: &'a [u8],
) -> Option<Edits<'a>> {
    let rules = &generation.shared.route(target.route()?).response_headers;
    (!rules.is_empty()).then_some(Edits::new(rules, lines))
}

/// The route's compression of a forwarded request's response, when it has one.
pub(crate) fn compressing<'a>(
    generation: &'a Generation,
    staged: &Staged,
) -> Option<Compressing<'a>> {
    let (Target::Forward(r, _), Some(plan)) = (&staged.target, staged.compress) else {
        return None;
    };
    let config = generation.shared.route(*r).compress.as_ref()?;
    Some(Compressing::new(config, plan))
}
