//! One HTTP/1 client connection: read request heads one after another (keep-alive and
//! pipelining), take each through parse, check, route and encode, hand it to `forward`,
//! and decide whether the connection goes on. HTTP/2 connections (`h2`) take each
//! stream through the same stages.

pub mod h2;

use crate::access_log;
use crate::answer::{self, Local};
use crate::context::Context;
use crate::downstream::buffers::{Buffers, Scratch};
use crate::downstream::h1::Http1;
use crate::downstream::Downstream;
use crate::failure::{Body, Failure, Kind};
use crate::forward::forward;
use crate::http1::check::{check, Request};
use crate::http1::encode::{self, Edits, Origin};
use crate::http1::request::{self, RawRequest, Rejection};
use crate::io::{Conn, Stream};
use crate::metrics::ListenerStats;
use crate::record::{record, Logged, Outcome};
use crate::route::key::{self, View};
use crate::route::{RouteId, UpstreamId};
use crate::state::generation::Generation;
use bytes::Buf;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// How a connection came in: the listener (its address as configured: routes may be
/// limited to some) and the scheme clients used there (`http` or `https`, for
/// `X-Forwarded-Proto` and `$scheme`).
#[derive(Clone, Copy, Debug)]
pub struct Via {
    pub listener: SocketAddr,
    pub proto: &'static str,
    /// The client had `max_conns_per_client` open already: its request is answered 429
    /// and the connection closed.
    pub crowded: bool,
    /// The client is one of `trusted_proxies`: its forwarding headers are kept.
    pub trusted: bool,
}

/// Serves `stream` until the client closes, an error ends it, or the worker drains.
pub async fn serve<S: Stream>(
    ctx: &Context,
    stream: S,
    peer: SocketAddr,
    listener: &ListenerStats,
    via: Via,
) {
    let _open = Counted::open(listener);
    let mut client = Conn::idle(stream);
    exchange(ctx, &mut client, peer, listener, via).await;
    if S::CLOSE_NOTIFY {
        // TLS says goodbye (close_notify) so that the client knows the response was
        // whole; a client that does not take it in a moment is not waited for.
        let bye = tokio::io::AsyncWriteExt::shutdown(&mut client.stream);
        let _ = tokio::time::timeout(CLOSE_NOTIFY_WAIT, bye).await;
    }
}

/// The longest a closing TLS connection waits to send its close_notify.
const CLOSE_NOTIFY_WAIT: Duration = Duration::from_secs(1);

/// Requests one after another on `client`, until one ends the connection.
async fn exchange<S: Stream>(
    ctx: &Context,
    client: &mut Conn<S>,
    peer: SocketAddr,
    listener: &ListenerStats,
    via: Via,
) {
    let accepted = crate::clock::now();
    let client_ip = peer.ip().to_string();
    let origin = Origin {
        client_ip: &client_ip,
        proto: via.proto,
        listener: via.listener,
        trusted: via.trusted,
    };
    let mut scratch = Scratch::default();
    let mut first = Some(accepted);
    loop {
        let waited = read_head(ctx, client, &origin, &mut scratch, first.take()).await;
        let (req, target, generation) = match waited {
            Ok(Some((req, _, generation))) if via.crowded => (req, crowded(), generation),
            Ok(Some(parsed)) => parsed,
            Ok(None) => return,
            Err(rejection) => {
                let started = (crate::clock::now(), SystemTime::now());
                let timeout = ctx.generation().shared.config.client_idle_timeout;
                let mut down = http1(client, &mut scratch.out, false, timeout, None);
                let mut outcome = Box::pin(reject(&mut down, rejection)).await;
                outcome.client = Some(peer);
                let logged = Logged {
                    started,
                    request: "-",
                    referer: "-",
                    user_agent: "-",
                };
                return record(ctx, &ctx.generation(), listener, &outcome, Some(logged));
            }
        };
        // The access log's view of the head, copied before the head leaves the buffer
        // (and its clocks read only when there is a log).
        let logged = logged(&generation, &client.buf[..req.head_len], &mut scratch.log);
        // Named in the log line of a 404 (read before the head leaves the buffer).
        let unrouted =
            matches!(target, Target::Unrouted).then(|| host_and_path(&client.buf[..req.head_len]));
        client.buf.advance(req.head_len);
        let timeout = generation.shared.config.client_idle_timeout;
        let edits = response_edits(&generation, &target, &scratch.response_edits);
        let mut down = http1(client, &mut scratch.out, req.http10, timeout, edits);
        let (head, key) = (&scratch.head, &scratch.key);
        let mut outcome = dispatch(
            ctx,
            &generation,
            &mut down,
            &req,
            target,
            (head, key),
            unrouted,
        )
        .await;
        outcome.client = Some(peer);
        record(
            ctx,
            &generation,
            listener,
            &outcome,
            captured(logged, &scratch.log),
        );
        if !outcome.keep_alive || ctx.draining() {
            return;
        }
    }
}

/// The answer to every request of a client over `max_conns_per_client`.
pub(crate) fn crowded() -> Target {
    Target::Limited(None, Duration::from_secs(1))
}

/// When there is an access log: where the request line, Referer and User-Agent end in
/// `log` (copied from `head`), and when the request began.
type Captured = Option<((usize, usize), (Instant, SystemTime))>;

fn logged(generation: &Generation, head: &[u8], log: &mut String) -> Captured {
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
    })
}

/// The route's changes to the response head, when it has any.
fn response_edits<'a>(
    generation: &'a Generation,
    target: &Target,
    lines: &'a [u8],
) -> Option<Edits<'a>> {
    let rules = &generation.shared.route(target.route()?).response_headers;
    (!rules.is_empty()).then_some(Edits { rules, lines })
}

/// Serves a request whose head passed its stages: forwarded, answered, or refused for
/// want of a route. `prepared`: the head for the server (or the answer's head) and the
/// hash key. HTTP/1 connections and HTTP/2 streams share it.
pub(crate) async fn dispatch<'g, S: Stream>(
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
    // docs/architecture.md). The rarer answers below are boxed, keeping their state
    // out of every connection's task.
    match target {
        Target::Forward(r, u) => forward(ctx, generation, down, req, (r, u), head, key).await,
        Target::Answer(r, local) => Box::pin(answer::send(down, req, Some(r), local, head)).await,
        Target::Challenge(local) => Box::pin(answer::send(down, req, None, local, head)).await,
        Target::Unrouted => Box::pin(not_found(down, req, unrouted.unwrap_or_default())).await,
        Target::Limited(r, wait) => Box::pin(limited(down, req, r, wait)).await,
    }
}

/// A connection counted open on its listener for as long as it lives.
pub(crate) struct Counted<'a>(&'a ListenerStats);

impl<'a> Counted<'a> {
    pub(crate) fn open(listener: &'a ListenerStats) -> Self {
        listener.local().accepted.add(1);
        Counted(listener)
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.local().closed.add(1);
    }
}

fn http1<'a, S>(
    client: &'a mut Conn<S>,
    out: &'a mut Vec<u8>,
    http10: bool,
    timeout: Duration,
    edits: Option<Edits<'a>>,
) -> Downstream<'a, S> {
    Downstream::Http1(Http1 {
        conn: client,
        out,
        http10,
        timeout,
        edits,
    })
}

/// Where a request goes, decided with its head.
pub(crate) enum Target {
    /// Forward on this route to this upstream (its head for the server is in
    /// `scratch.head`).
    Forward(RouteId, UpstreamId),
    /// Answered by sluice on this route (its whole answer head is in `scratch.head`).
    Answer(RouteId, Local),
    /// An ACME HTTP-01 challenge sluice answers itself (the answer in `scratch.head`).
    Challenge(Local),
    /// No route matches.
    Unrouted,
    /// A limit refused it: 429, come back after this long. The route's rate limit, or
    /// (no route) the client has too many connections open, and this one closes.
    Limited(Option<RouteId>, Duration),
}

impl Target {
    fn route(&self) -> Option<RouteId> {
        match self {
            Target::Forward(r, _) | Target::Answer(r, _) => Some(*r),
            // sluice's own refusal: not edited like the route's answers.
            Target::Challenge(_) | Target::Unrouted | Target::Limited(..) => None,
        }
    }
}

/// What a complete request head gives: the request, where it goes, and the generation
/// that routed it (the request is served by that generation to the end).
pub(crate) type Head = (Request, Target, Rc<Generation>);

/// Reads until a whole request head is buffered. `Ok(None)`: the connection ended
/// quietly (closed by the client, silent or idle too long, or the worker is draining).
///
/// `accepted` is set for a connection's first request: its head must then be complete
/// within `header_timeout` of the accept, so a client that connects and sends nothing
/// is closed at that deadline. Before a later request the connection may idle for
/// `keepalive_timeout`, and its head has `header_timeout` from its first byte.
async fn read_head<S: Stream>(
    ctx: &Context,
    client: &mut Conn<S>,
    origin: &Origin<'_>,
    scratch: &mut Scratch,
    accepted: Option<Instant>,
) -> Result<Option<Head>, Rejection> {
    let (header_timeout, keepalive_timeout) = {
        let config = &ctx.generation().shared.config;
        (config.header_timeout, config.keepalive_timeout)
    };
    let mut deadline = match accepted {
        Some(at) => Some(at + header_timeout),
        None => (!client.buf.is_empty()).then(|| crate::clock::now() + header_timeout),
    };
    loop {
        if let Some(parsed) = parse_head(ctx, &client.buf, origin, scratch)? {
            return Ok(Some(parsed));
        }
        let read = if client.buf.is_empty() {
            let idle_until = crate::clock::now() + keepalive_timeout;
            wait_for_request(ctx, client, scratch, deadline.unwrap_or(idle_until)).await
        } else {
            // The head has begun: one deadline for all of it, however slowly it trickles in.
            let at = *deadline.get_or_insert_with(|| crate::clock::now() + header_timeout);
            client.fill_until(at).await
        };
        match read {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut && !client.buf.is_empty() => {
                return Err(Rejection {
                    status: 408,
                    reason: "request head not received within header_timeout",
                })
            }
            Err(_) => return Ok(None),
        }
    }
}

/// Takes the buffered bytes through the head's stages: parse, check, route, encode.
/// `Ok(None)` when more bytes are needed. The head for the server ends up in
/// `scratch.head`, the hash key (when the upstream hashes) in `scratch.key`.
pub(crate) fn parse_head(
    ctx: &Context,
    buf: &[u8],
    origin: &Origin<'_>,
    scratch: &mut Scratch,
) -> Result<Option<Head>, Rejection> {
    if buf.is_empty() {
        return Ok(None);
    }
    let max = ctx.generation().shared.config.max_header_bytes;
    let mut headers = request::header_slots();
    let Some(raw) = request::parse(buf, &mut headers)? else {
        return if buf.len() >= max {
            Err(too_large())
        } else {
            Ok(None)
        };
    };
    head_stages(ctx, &raw, origin, scratch).map(Some)
}

/// A parsed head through its stages: check, route, encode. HTTP/2 streams come in here
/// with the head their fields stand for (`session::h2`), without writing it out.
pub(crate) fn head_stages(
    ctx: &Context,
    raw: &RawRequest<'_, '_>,
    origin: &Origin<'_>,
    scratch: &mut Scratch,
) -> Result<Head, Rejection> {
    let generation = ctx.generation();
    let mut checked = check(raw)?;
    if raw.head_len > generation.shared.config.max_header_bytes {
        return Err(too_large());
    }
    let view = View {
        host: checked.routing_host(),
        target: checked.routing_path(),
        headers: raw.headers,
        client_ip: origin.client_ip,
        scheme: origin.proto,
    };
    if let Some(key_authorization) = acme_challenge(&generation, view.target) {
        let local = answer::challenge(&key_authorization, &checked, &mut scratch.head);
        return Ok((
            checked.request,
            Target::Challenge(local),
            generation.clone(),
        ));
    }
    let route = route(&generation, origin.listener, &view, &mut scratch.key);
    if let Some(r) = route {
        if let Some(wait) = rate_limited(&generation, r, &view, &mut scratch.limit_key) {
            return Ok((
                checked.request,
                Target::Limited(Some(r), wait),
                generation.clone(),
            ));
        }
    }
    let config = route.map(|r| generation.shared.route(r));
    let answers = config.filter(|c| c.upstream().is_none());
    if let Some(c) = config.filter(|c| !c.response_headers.set.is_empty()) {
        key::render(&c.response_headers, &view, &mut scratch.response_edits);
    }
    if let (Some(r), Some(c)) = (route, answers) {
        let edits = (!c.response_headers.is_empty()).then_some(Edits {
            rules: &c.response_headers,
            lines: &scratch.response_edits,
        });
        let local = answer::prepare(
            c,
            &view,
            &checked,
            raw.headers,
            edits.as_ref(),
            &mut scratch.head,
        );
        return Ok((
            checked.request,
            Target::Answer(r, local),
            generation.clone(),
        ));
    }
    let edits = config.filter(|c| !c.request_headers.is_empty()).map(|c| {
        key::render(&c.request_headers, &view, &mut scratch.request_edits);
        Edits {
            rules: &c.request_headers,
            lines: &scratch.request_edits,
        }
    });
    let upgrade = checked
        .offered_upgrade
        .filter(|p| allows_upgrade(&generation, route, p));
    let lines = encode::request_head(
        &mut scratch.head,
        raw.headers,
        &checked,
        origin,
        upgrade,
        edits.as_ref(),
    );
    request::forwarded_lines_fit(lines)?;
    checked.request.upgrade = upgrade.map(str::to_string);
    let upstream = route.and_then(|r| generation.shared.upstream_of(r));
    let target = match (route, upstream) {
        (Some(r), Some(u)) => Target::Forward(r, u),
        _ => Target::Unrouted,
    };
    Ok((checked.request, target, generation.clone()))
}

/// The route for a request, and its hash key in `key` when its upstream hashes.
fn route(
    generation: &Generation,
    listener: SocketAddr,
    view: &View<'_>,
    key: &mut Vec<u8>,
) -> Option<RouteId> {
    let route = generation.router.find(listener, view.host, view.target)?;
    key.clear();
    let upstream = generation.shared.upstream_of(route);
    if let Some(template) = upstream.and_then(|u| generation.shared.upstream(u).key_template()) {
        key::evaluate(template, view, key);
    }
    Some(route)
}

/// How long until the request would be allowed, if a rate limit of route `r` refuses
/// it (each of the route's limits counts it, in order, until one refuses).
fn rate_limited(
    generation: &Generation,
    r: RouteId,
    view: &View<'_>,
    key: &mut Vec<u8>,
) -> Option<Duration> {
    generation.shared.route(r).limits.iter().find_map(|l| {
        let limiter = &generation.shared.limits[*l];
        key.clear();
        key::evaluate(&limiter.config.key, view, key);
        limiter.check(key)
    })
}

/// The key authorization when the request asks for an ACME challenge sluice is being
/// validated on (before any route: a CA must reach it whatever the routes say).
fn acme_challenge(generation: &Generation, target: &str) -> Option<String> {
    generation.shared.config.acme.as_ref()?;
    generation.shared.challenges.answer(target)
}

/// True when the route lets a client switch to `protocol` (the first one it offers).
fn allows_upgrade(generation: &Generation, route: Option<RouteId>, protocol: &str) -> bool {
    let first = protocol.split(',').next().unwrap_or("");
    let first = first.trim_matches([' ', '\t']);
    let first = first.split('/').next().unwrap_or(first);
    route.is_some_and(|r| {
        generation
            .shared
            .route(r)
            .upgrade
            .iter()
            .any(|p| p.eq_ignore_ascii_case(first))
    })
}

fn too_large() -> Rejection {
    Rejection {
        status: 431,
        reason: "request head larger than max_header_bytes",
    }
}

/// Waits until `until` for the first bytes of a request on a connection with nothing
/// buffered. Meanwhile the connection's buffers are back in the worker's stash: an idle
/// connection holds none. Ends early, as `Ok(0)`, when the worker drains.
async fn wait_for_request<S: Stream>(
    ctx: &Context,
    client: &mut Conn<S>,
    scratch: &mut Scratch,
    until: Instant,
) -> io::Result<usize> {
    loop {
        if ctx.draining() {
            return Ok(0);
        }
        ctx.stash.give(Buffers {
            read: std::mem::take(&mut client.buf),
            scratch: std::mem::take(scratch),
        });
        let drained = ctx.drain_signal();
        tokio::select! {
            ready = tokio::time::timeout_at(until, client.readable()) => {
                ready.map_err(|_| io::Error::from(io::ErrorKind::TimedOut))??;
            }
            _ = drained => return Ok(0),
        }
        let buffers = ctx.stash.take();
        (client.buf, *scratch) = (buffers.read, buffers.scratch);
        match client.try_fill().await {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            read => return read,
        }
    }
}

/// Answers a request that cannot be forwarded, then closes the connection.
async fn reject<S: Stream>(down: &mut Downstream<'_, S>, rejection: Rejection) -> Outcome<'static> {
    if down.send_error(rejection.status, true).await {
        down.conclude(true, false).await;
    }
    let failure = Failure::from(rejection);
    Outcome::unrouted(rejection.status, failure)
}

/// `host HOST, path PATH` of a request head, for a log line (the head is valid).
fn host_and_path(head: &[u8]) -> String {
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

/// Answers a request a rate limit refused: 429, with when to come back.
async fn limited<S: Stream>(
    down: &mut Downstream<'_, S>,
    req: &Request,
    route: Option<RouteId>,
    wait: Duration,
) -> Outcome<'static> {
    // The body was not read: the connection cannot be reused unless there was none.
    let body = Body::unread(req.framing);
    let keep_alive = req.keep_alive && body.consumed() && route.is_some();
    let after = wait.as_secs_f64().ceil().max(1.0) as u32;
    let sent = down.send_error_after(429, !keep_alive, Some(after)).await;
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

async fn not_found<S: Stream>(
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

#[cfg(test)]
mod tests {
    //! The connection's deadlines, on tokio's paused clock: each test waits out minutes of
    //! timeouts in no time, and checks the deadline to the millisecond.

    use super::*;
    use crate::clock;
    use crate::io::stream::loopback_pair;
    use crate::state::generation::Shared;
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A worker context for `top` (timeouts) with one route for host `routed`, whose
    /// upstream is never reached by these tests.
    fn context(top: &str) -> Context {
        let text = format!(
            "{top}\n[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nhost = \"routed\"\nupstream = \"app\"\n[upstream.app]\nservers = [\"127.0.0.1:9\"]\n"
        );
        let config = sluice_config::parse("t.toml", &text).unwrap();
        Context::new(Arc::new(Shared::new(config, None)), 1)
    }

    /// Reads until the proxy closes; returns what it sent and when it closed.
    async fn until_closed(c: &mut TcpStream) -> (String, Instant) {
        let mut got = Vec::new();
        let _ = c.read_to_end(&mut got).await;
        (String::from_utf8_lossy(&got).into_owned(), clock::now())
    }

    /// Reads sluice's own reply for `status` (with `Connection: close` if `close`) whole.
    async fn read_reply<R: AsyncReadExt + Unpin>(c: &mut R, status: u16, close: bool) -> Instant {
        let mut expected = Vec::new();
        crate::http1::reply::error(&mut expected, status, close, None);
        let mut got = vec![0u8; expected.len()];
        c.read_exact(&mut got).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&expected)
        );
        clock::now()
    }

    fn peer() -> SocketAddr {
        "127.0.0.1:40000".parse().unwrap()
    }

    fn via() -> Via {
        Via {
            listener: "127.0.0.1:0".parse().unwrap(),
            proto: "http",
            crowded: false,
            trusted: false,
        }
    }

    fn within_a_millisecond(took: Duration, expected: Duration) {
        assert!(
            took >= expected && took < expected + Duration::from_millis(1),
            "took {took:?}, expected {expected:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_connection_closes_at_header_timeout_without_a_word() {
        let ctx = context("header_timeout = \"7s\"");
        let listener = ListenerStats::default();
        let (mut client, server) = loopback_pair().await;
        let started = clock::now();
        let ((), (said, closed)) = tokio::join!(
            serve(&ctx, server, peer(), &listener, via()),
            until_closed(&mut client)
        );
        assert_eq!(said, "");
        within_a_millisecond(closed - started, Duration::from_secs(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickled_first_head_gets_408_at_header_timeout_from_the_accept() {
        let ctx = context("header_timeout = \"5s\"");
        let listener = ListenerStats::default();
        let (mut client, server) = loopback_pair().await;
        let started = clock::now();
        let (mut reader, mut writer) = client.split();
        let trickle = async {
            writer.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
            for i in 0..20 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let line = format!("X-Slow-{i}: 1\r\n");
                if writer.write_all(line.as_bytes()).await.is_err() {
                    break;
                }
            }
        };
        let answered = read_reply(&mut reader, 408, true);
        let ((), (), at) = tokio::join!(
            serve(&ctx, server, peer(), &listener, via()),
            trickle,
            answered
        );
        within_a_millisecond(at - started, Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_keep_alive_connection_closes_at_keepalive_timeout() {
        let ctx = context("header_timeout = \"5s\"\nkeepalive_timeout = \"45s\"");
        let listener = ListenerStats::default();
        let (mut client, server) = loopback_pair().await;
        let exchange = async {
            // Unrouted: a 404 that keeps the connection.
            client
                .write_all(b"GET / HTTP/1.1\r\nHost: elsewhere\r\n\r\n")
                .await
                .unwrap();
            let answered = read_reply(&mut client, 404, false).await;
            let (_, closed) = until_closed(&mut client).await;
            closed - answered
        };
        let ((), idle) = tokio::join!(serve(&ctx, server, peer(), &listener, via()), exchange);
        within_a_millisecond(idle, Duration::from_secs(45));
    }

    #[tokio::test(start_paused = true)]
    async fn a_later_head_gets_header_timeout_from_its_first_byte() {
        let ctx = context("header_timeout = \"5s\"\nkeepalive_timeout = \"45s\"");
        let listener = ListenerStats::default();
        let (mut client, server) = loopback_pair().await;
        let exchange = async {
            client
                .write_all(b"GET / HTTP/1.1\r\nHost: elsewhere\r\n\r\n")
                .await
                .unwrap();
            read_reply(&mut client, 404, false).await;
            // Idle for 30 s (within keepalive_timeout), then half a head.
            tokio::time::sleep(Duration::from_secs(30)).await;
            let first_byte = clock::now();
            client.write_all(b"GET / HTT").await.unwrap();
            read_reply(&mut client, 408, true).await - first_byte
        };
        let ((), took) = tokio::join!(serve(&ctx, server, peer(), &listener, via()), exchange);
        within_a_millisecond(took, Duration::from_secs(5));
    }
}
