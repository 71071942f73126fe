//! A request head's stages, the same for both protocols: check, route (with the hash
//! key), the route's rate limits and guards, and encode (the head for the server, or
//! the whole answer when sluice answers itself). What comes out is a [`Staged`]
//! request: where it goes, the generation that routed it, and what its guard asked.

use crate::answer::{self, Local};
use crate::client::Client;
use crate::compress::accept::Accepted;
use crate::compress::Plan;
use crate::context::Context;
use crate::downstream::buffers::Scratch;
use crate::guard::{self, Pending, Refusal};
use crate::http1::check::{check, Checked, Request};
use crate::http1::encode::{self, Edits};
use crate::http1::request::{self, RawRequest, Rejection};
use crate::record::Identity;
use crate::route::key::{self, View};
use crate::route::locate::Located;
use crate::route::{self, RouteId, UpstreamId};
use crate::state::generation::Generation;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;
use std::time::Duration;

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
    /// The route's guard refused it: 403 or 401.
    Refused(RouteId, Refusal),
}

impl Target {
    /// The route whose response header edits apply to what the client gets.
    pub(crate) fn route(&self) -> Option<RouteId> {
        match self {
            Target::Forward(r, _) | Target::Answer(r, _) => Some(*r),
            // sluice's own refusal: not edited like the route's answers.
            Target::Challenge(_) | Target::Unrouted | Target::Limited(..) | Target::Refused(..) => {
                None
            }
        }
    }
}

/// A request whose head passed its stages: the request, where it goes, and the
/// generation that routed it (the request is served by that generation to the end).
pub(crate) struct Staged {
    pub request: Request,
    pub target: Target,
    pub generation: Rc<Generation>,
    /// What the route's guard asked of the request beyond its head.
    pub guarded: Guarded,
    /// How its response may be compressed, on a route with `compress`.
    pub compress: Option<Plan>,
}

/// What a request's guard left for later, and what the log says of its client.
#[derive(Default)]
pub(crate) struct Guarded {
    /// A password to verify before the request goes on (refused 401 if wrong).
    /// Boxed: rare, and every request's staged state stays a pointer wide for it.
    pub pending: Option<Box<Pending>>,
    /// The user its basic auth named, where the route asked for one.
    pub user: Option<Box<str>>,
    /// The client's address as a trusted proxy in front named it, if one did.
    pub forwarded_for: Option<IpAddr>,
    /// The request's identity, when `[request_id]` asks for one.
    pub identity: Option<Box<Identity>>,
}

impl Staged {
    /// The same request, answered 429 whatever it asked for: its client is over
    /// `max_conns_per_client`.
    pub(crate) fn crowded(self) -> Staged {
        Staged {
            target: Target::Limited(None, Duration::from_secs(1)),
            ..self
        }
    }
}

/// A parsed head through its stages: check, route, encode. The head for the server (or
/// the answer's head) ends up in `scratch.head`, the hash key (when the upstream
/// hashes) in `scratch.key`. HTTP/2 streams come in here with the head their fields
/// stand for (`session::h2`), without writing it out.
pub(crate) fn head_stages(
    ctx: &Context,
    raw: &RawRequest<'_, '_>,
    client: &Client,
    scratch: &mut Scratch,
) -> Result<Staged, Rejection> {
    let generation = ctx.generation();
    let checked = check(raw)?;
    if raw.head_len > generation.shared.config.max_header_bytes {
        return Err(too_large());
    }
    let trusted = &generation.shared.config.trusted_proxies;
    let forwarded_for = client.forwarded_for(raw.headers, trusted);
    let forwarded_text = forwarded_for.map(|ip| ip.to_string());
    let view = View {
        host: checked.routing_host(),
        target: checked.routing_path(),
        headers: raw.headers,
        client_ip: forwarded_text.as_deref().unwrap_or(&client.ip),
        scheme: client.proto(),
        identity: generation.shared.config.request_id.as_ref(),
        request_id: Default::default(),
        traceparent: Default::default(),
        captured: Default::default(),
    };
    let mut guarded = Guarded {
        forwarded_for,
        ..Guarded::default()
    };
    let staged = |request, target, mut guarded: Guarded| {
        guarded.identity = identity(&view);
        Staged {
            request,
            target,
            generation: generation.clone(),
            guarded,
            compress: None,
        }
    };
    if let Some(key_authorization) = acme_challenge(&generation, view.target) {
        let local = answer::challenge(&key_authorization, &checked, &mut scratch.head);
        return Ok(staged(checked.request, Target::Challenge(local), guarded));
    }
    let (route, server_path) = match route_stage(&generation, client, &view, &checked, scratch) {
        Routed::To(route, path) => (route, path),
        Routed::Answered(route, local) => {
            return Ok(staged(
                checked.request,
                Target::Answer(route, local),
                guarded,
            ));
        }
    };
    hash_key(&generation, route, &view, &mut scratch.key);
    if let Some(r) = route {
        let ip = forwarded_for.unwrap_or(client.peer.ip());
        let kept = (&mut scratch.limit_key, &mut guarded);
        if let Some(target) = refusal(&generation, r, (&view, ip), kept) {
            return Ok(staged(checked.request, target, guarded));
        }
    }
    if let Some(c) = route.map(|r| generation.shared.route(r)) {
        if !c.response_headers.set.is_empty() {
            key::render(&c.response_headers, &view, &mut scratch.response_edits);
        }
    }
    let (request, target) = match route {
        Some(r) if generation.shared.route(r).upstream().is_none() => {
            let path = server_path.as_deref().unwrap_or(checked.path);
            let local = answer_locally(&generation, r, &view, (raw, &checked, path), scratch);
            (checked.request, Target::Answer(r, local))
        }
        _ => {
            let request = (raw, checked, server_path.as_deref());
            encode_for_server(&generation, route, &view, request, client, scratch)?
        }
    };
    let compress = route.and_then(|r| plan(&generation, r, &request, raw.headers));
    Ok(Staged {
        compress,
        ..staged(request, target, guarded)
    })
}

/// How route `r` may compress the response to `request`: when it has `compress`, and
/// the response can have a body an HTTP/1.1 or HTTP/2 client can take compressed (an
/// HTTP/1.0 client gets none, as from nginx: it knows no chunked framing).
fn plan(
    generation: &Generation,
    r: RouteId,
    request: &Request,
    headers: &[httparse::Header<'_>],
) -> Option<Plan> {
    let compress = generation.shared.route(r).compress.as_ref()?;
    if request.is_head || request.http10 {
        return None;
    }
    Some(Accepted::read(headers).plan(compress))
}

/// The request's identity for its log lines, when `[request_id]` asks for one (what its
/// headers carried, or made now for a request whose route sent none).
fn identity(view: &View<'_>) -> Option<Box<Identity>> {
    let config = view.identity?;
    let request_id = String::from_utf8_lossy(key::request_id(view)).into();
    let trace_id = config.traceparent.then(|| {
        let mut id = [0u8; 32];
        id.copy_from_slice(&key::traceparent(view)[3..35]);
        id
    });
    Some(Box::new(Identity {
        request_id,
        trace_id,
    }))
}

/// Route `r`'s rate limits, then its guard (nginx's order), for the request `view`
/// from `ip`: the refusal, if one refuses. Uses `limit_key` for the limits' keys; what
/// the guard leaves for later goes in `guarded`.
fn refusal(
    generation: &Generation,
    r: RouteId,
    (view, ip): (&View<'_>, IpAddr),
    (limit_key, guarded): (&mut Vec<u8>, &mut Guarded),
) -> Option<Target> {
    if let Some(wait) = rate_limited(generation, r, view, limit_key) {
        return Some(Target::Limited(Some(r), wait));
    }
    guard(generation, r, ip, view.headers, guarded).map(|why| Target::Refused(r, why))
}

/// What route `r`'s guard says of a request from `ip`: a refusal, or nothing (it
/// passes, or its password is left in `guarded` to verify).
fn guard(
    generation: &Generation,
    r: RouteId,
    ip: IpAddr,
    headers: &[httparse::Header<'_>],
    guarded: &mut Guarded,
) -> Option<Refusal> {
    if generation.shared.route(r).guard.is_open() {
        return None;
    }
    let decision = guard::decide(generation, r, ip, headers);
    guarded.user = decision.user;
    match decision.verdict {
        guard::Outcome::Pass => None,
        guard::Outcome::Refuse(refusal) => Some(refusal),
        guard::Outcome::Verify(pending) => {
            guarded.pending = Some(Box::new(pending));
            None
        }
    }
}

/// The whole answer of route `r`, which answers itself, into `scratch.head`.
fn answer_locally(
    generation: &Generation,
    r: RouteId,
    view: &View<'_>,
    (raw, checked, path): (&RawRequest<'_, '_>, &Checked<'_>, &str),
    scratch: &mut Scratch,
) -> Local {
    let c = generation.shared.route(r);
    let edits = (!c.response_headers.is_empty())
        .then_some(Edits::new(&c.response_headers, &scratch.response_edits));
    answer::prepare(
        c,
        view,
        (checked, path),
        raw.headers,
        edits.as_ref(),
        &mut scratch.head,
    )
}

/// The answer of route `r` that rewriting gave: a redirect to `location`, or (none) a
/// `500`, into `scratch.head`.
fn redirected(
    generation: &Generation,
    (r, view): (RouteId, &View<'_>),
    (status, location): (u16, Option<String>),
    checked: &Checked<'_>,
    scratch: &mut Scratch,
) -> Local {
    let c = generation.shared.route(r);
    if !c.response_headers.set.is_empty() {
        key::render(&c.response_headers, view, &mut scratch.response_edits);
    }
    let edits = (!c.response_headers.is_empty())
        .then_some(Edits::new(&c.response_headers, &scratch.response_edits));
    let location = location.as_deref().map(str::as_bytes);
    answer::status(status, location, checked, edits.as_ref(), &mut scratch.head)
}

/// The head for the server into `scratch.head` (with the route's request header edits
/// and the upgrade it allows), and where the request goes: its route's upstream, or
/// nowhere.
fn encode_for_server(
    generation: &Generation,
    route: Option<RouteId>,
    view: &View<'_>,
    (raw, mut checked, path): (&RawRequest<'_, '_>, Checked<'_>, Option<&str>),
    client: &Client,
    scratch: &mut Scratch,
) -> Result<(Request, Target), Rejection> {
    let config = route.map(|r| generation.shared.route(r));
    let edits = config.filter(|c| !c.request_headers.is_empty()).map(|c| {
        key::render(&c.request_headers, view, &mut scratch.request_edits);
        Edits {
            drops_tracestate: key::started_trace(view),
            ..Edits::new(&c.request_headers, &scratch.request_edits)
        }
    });
    let upgrade = checked
        .offered_upgrade
        .filter(|p| allows_upgrade(generation, route, p));
    let lines = encode::request_head(
        &mut scratch.head,
        raw.headers,
        (&checked, path.unwrap_or(checked.path)),
        client,
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
    Ok((checked.request, target))
}

/// What the route stage came to: the route (none: no route matches) and the path its
/// server gets when it is not the one received; or the answer rewriting gave.
enum Routed {
    To(Option<RouteId>, Option<String>),
    Answered(RouteId, Local),
}

/// The route stage: where the request's path leads (`route::locate`), with its groups
/// left in `view` for the templates.
fn route_stage(
    generation: &Generation,
    client: &Client,
    view: &View<'_>,
    checked: &Checked<'_>,
    scratch: &mut Scratch,
) -> Routed {
    match locate(generation, client.listener, view) {
        Located::Route {
            route,
            path,
            captured,
        } => {
            if let Some(c) = captured {
                let _ = view.captured.set(c);
            }
            Routed::To(Some(route), path)
        }
        Located::Answer {
            route,
            status,
            location,
        } => {
            let answer = (status, location);
            let local = redirected(generation, (route, view), answer, checked, scratch);
            Routed::Answered(route, local)
        }
        Located::Nowhere => Routed::To(None, None),
    }
}

/// Where the request goes through the generation's routes (`route::locate`).
fn locate(generation: &Generation, listener: SocketAddr, view: &View<'_>) -> Located {
    let routes = &generation.shared.config.routes;
    route::locate::locate(&generation.router, routes, listener, view)
}

/// The request's hash key into `key`, when its route's upstream hashes; with `sticky`,
/// its session cookie's value.
fn hash_key(generation: &Generation, route: Option<RouteId>, view: &View<'_>, key: &mut Vec<u8>) {
    key.clear();
    let Some(upstream) = route.and_then(|r| generation.shared.upstream_of(r)) else {
        return;
    };
    let group = generation.shared.upstream(upstream);
    if let Some(template) = group.key_template() {
        key::evaluate(template, view, key);
    } else if let Some(sticky) = &group.sticky {
        key.extend_from_slice(key::cookie(view.headers, &sticky.cookie).unwrap_or_default());
    }
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

/// The refusal of a head larger than `max_header_bytes`.
pub(crate) fn too_large() -> Rejection {
    Rejection {
        status: 431,
        reason: "request head larger than max_header_bytes",
    }
}
