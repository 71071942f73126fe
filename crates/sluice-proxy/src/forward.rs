//! Forwarding one request: pick a server, make an attempt, and on a failure the server is
//! to blame for, count it against the server and, when it is safe and the retry budget
//! allows, try another server. Then relay the response back. Every failure the client
//! sees comes with a log line naming the route, upstream, server and cause.

use crate::body::{relay, Transfer, TransferError};
use crate::buffers::Scratch;
use crate::client::linger;
use crate::conn::{write_all, Conn};
use crate::exchange::{Attempt, Failure};
use crate::health::now_ns;
use crate::reply;
use crate::request::Request;
use crate::response::{Delivery, Response, MAX_RESPONSE_HEAD};
use crate::state::Generation;
use crate::tunnel;
use crate::upstream::UpstreamShared;
use crate::worker::Worker;

/// Servers one request may try: the first plus at most this many retries.
const MAX_TRIES: usize = 11;

/// The upstream head to send is in `scratch.head`. Returns whether the client connection
/// can carry another request.
pub async fn forward(
    w: &Worker,
    gen: &Generation,
    client: &mut Conn,
    req: &Request,
    route: usize,
    scratch: &mut Scratch,
) -> bool {
    let Scratch { head, key, out } = scratch;
    let u = gen.shared.config.routes[route].upstream;
    let up = &gen.shared.upstreams[u];
    let scope = Scope { w, gen, route, up };
    gen.count_request(u);
    let mut tried = [0usize; MAX_TRIES];
    let mut tries = 0;
    let mut last: Option<(usize, Failure)> = None;
    loop {
        let Some((server, _in_flight)) = up.pick(key, w.random(), &tried[..tries]) else {
            let (server, f) = match last {
                Some((s, f)) => (Some(s), f),
                None => (None, Failure::unavailable(req)),
            };
            return scope.fail(client, req, server, f, out).await;
        };
        tried[tries] = server;
        tries += 1;
        let attempt = Attempt {
            w,
            gen,
            up,
            server,
            req,
        };
        match attempt.run(client, head, out).await {
            Ok(answer) => return scope.deliver(server, client, answer, out).await,
            Err(f) => {
                scope.blame(server, &f);
                if !may_retry(up, req, &f, tries, || gen.report(u)) {
                    return scope.fail(client, req, Some(server), f, out).await;
                }
                tracing::info!(upstream = %up.config.name, server = %up.addr(server), cause = %f.cause, "retrying on another server");
                last = Some((server, f));
            }
        }
    }
}

/// Whether a failed request may go to another server: only if the server is to blame, the
/// request body is still unread (nothing to replay), the request cannot have had an effect
/// or its method is idempotent, tries remain, and the retry budget has a token.
/// `report` brings the budget up to date before a token is spent from it.
fn may_retry(
    up: &UpstreamShared,
    req: &Request,
    f: &Failure,
    tries: usize,
    report: impl FnOnce(),
) -> bool {
    let safe = !f.sent || req.idempotent || up.config.retry.non_idempotent;
    let allowed = f.server_fault
        && f.body_untouched
        && safe
        && tries <= up.config.retry.retries as usize
        && tries < MAX_TRIES;
    allowed && {
        report();
        up.withdraw()
    }
}

/// Where a request is going: what logging and failure accounting need.
struct Scope<'a> {
    w: &'a Worker,
    gen: &'a Generation,
    route: usize,
    up: &'a UpstreamShared,
}

impl Scope<'_> {
    /// Counts a failure against the server, and logs when it ejects it.
    fn blame(&self, server: usize, f: &Failure) {
        if !f.server_fault {
            return;
        }
        let up = self.up;
        if let Some(eject) = up.servers[server]
            .health
            .failed(&up.config.failure, now_ns())
        {
            let route = &self.gen.shared.config.routes[self.route].path;
            tracing::warn!(route = %route, upstream = %up.config.name, server = %up.addr(server), cause = %f.cause, eject_for = ?eject, "server ejected after repeated failures");
        }
    }

    /// Relays the response; records its status for passive health. Returns keep-alive.
    async fn deliver(
        &self,
        server: usize,
        client: &mut Conn,
        answer: (Conn, Response, Delivery),
        out: &mut Vec<u8>,
    ) -> bool {
        let (mut upstream, resp, delivery) = answer;
        let up = self.up;
        if resp.upgraded {
            return self.tunnel(server, client, upstream, out).await;
        }
        let failed_status = up.config.failure.fail_status.contains(&resp.status);
        if failed_status {
            self.blame(server, &Failure::status(resp.status));
        }
        let t = Transfer {
            framing: resp.framing,
            dechunk: delivery.dechunk,
            max_trailer_bytes: MAX_RESPONSE_HEAD,
            read_timeout: up.config.read_timeout,
            write_timeout: self.gen.shared.config.client_idle_timeout,
        };
        match relay(&mut upstream, &mut client.stream, out, t).await {
            Ok(()) => {
                if !failed_status {
                    up.servers[server].health.succeeded();
                }
                if resp.reusable {
                    self.w.pool.checkin(
                        up.addr(server),
                        upstream,
                        up.config.keepalive,
                        up.config.idle_timeout,
                    );
                }
                if delivery.request_body_unread {
                    linger(client).await;
                }
                !delivery.close
            }
            Err(TransferError::Read(e)) => {
                let route = &self.gen.shared.config.routes[self.route].path;
                tracing::warn!(route = %route, upstream = %up.config.name, server = %up.addr(server), cause = %e, "server failed in the middle of a response; closing the client connection");
                self.blame(server, &Failure::status(502));
                false
            }
            Err(TransferError::Write(e)) => {
                tracing::debug!(cause = %e, "client stopped reading the response");
                false
            }
        }
    }

    /// Sends the `101` head (in `out`) and runs the tunnel; the connection ends with it.
    async fn tunnel(
        &self,
        server: usize,
        client: &mut Conn,
        mut upstream: Conn,
        out: &mut Vec<u8>,
    ) -> bool {
        if write_all(
            &mut client.stream,
            out,
            self.gen.shared.config.client_idle_timeout,
        )
        .await
        .is_err()
        {
            return false;
        }
        // Nothing of the HTTP exchange is needed any more: give its buffers back.
        *out = Vec::new();
        let route = &self.gen.shared.config.routes[self.route];
        let end = tunnel::run(
            client,
            &mut upstream,
            route.tunnel_idle_timeout,
            &self.up.servers[server],
        )
        .await;
        tracing::debug!(route = %route.path, upstream = %self.up.config.name, server = %self.up.addr(server), end = ?end, "tunnel closed");
        false
    }

    /// Answers the client with the failure's status and logs why. Returns keep-alive.
    async fn fail(
        &self,
        client: &mut Conn,
        req: &Request,
        server: Option<usize>,
        f: Failure,
        out: &mut Vec<u8>,
    ) -> bool {
        let up = self.up;
        let server = server
            .map(|s| up.addr(s).to_string())
            .unwrap_or_else(|| "-".into());
        let route = &self.gen.shared.config.routes[self.route].path;
        tracing::warn!(route = %route, upstream = %up.config.name, server = %server, status = f.status, cause = %f.cause, "request failed");
        let keep_alive = req.keep_alive && f.body_consumed && !self.w.draining();
        out.clear();
        reply::error(out, f.status, !keep_alive);
        let sent = write_all(
            &mut client.stream,
            out,
            self.gen.shared.config.client_idle_timeout,
        )
        .await
        .is_ok();
        if sent && !f.body_consumed {
            linger(client).await;
        }
        sent && keep_alive
    }
}
