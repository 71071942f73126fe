//! One worker thread's share of a step: its own single-threaded event loop, its users
//! (closed model) or what sends its share of the arrival schedule (open model:
//! [`crate::open_model`]), and its own [`Recorder`]. Nothing on the request path takes a lock or allocates per request.

use crate::conn::{Capture, Connection, ExchangeError, Reply, MAX_CAPTURE};
use crate::cookies::Jar;
use crate::delivery::Deliveries;
use crate::http2::{H2Error, H2Pool, H2Request};
use crate::plan::{Length, OkStatus, Plan};
use crate::progress::Progress;
use crate::redirect::{is_redirect, Redirects, MAX_HOPS};
use crate::scenario::{Extraction, Response};
use crate::stats::{Detail, Recorder, Sample, FAILURE_BYTES};
use crate::target::RequestSpec;
use std::cell::{Cell, RefCell};
use std::net::IpAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// What a worker thread needs for one step.
pub struct Worker {
    pub plan: Arc<Plan>,
    /// Each request of the plan, encoded once.
    encoded: Vec<Vec<u8>>,
    heads: Vec<bool>,
    pub index: usize,
    pub threads: usize,
    /// The step's start, shared by all threads.
    pub start: Instant,
    stop: watch::Receiver<bool>,
    pub progress: Arc<Progress>,
    pub recorder: RefCell<Recorder>,
    next_source: Cell<usize>,
    /// STOMP deliveries of the step, shared by all its threads.
    pub deliveries: Arc<Deliveries>,
    /// With `--h2`: this thread's HTTP/2 connections, shared by its users, and each
    /// request of the plan as a stream sends it.
    h2: Option<(H2Pool, Vec<Result<H2Request, H2Error>>)>,
    /// With `--follow`: where redirects led, resolved once.
    redirects: Redirects,
}

impl Worker {
    pub fn new(
        plan: Arc<Plan>,
        index: usize,
        threads: usize,
        start: Instant,
        stop: watch::Receiver<bool>,
        progress: Arc<Progress>,
        deliveries: Arc<Deliveries>,
    ) -> Self {
        let h2 = plan.h2_streams.map(|streams| {
            let requests = plan.requests.iter().map(|w| H2Request::new(&w.request));
            (H2Pool::new(streams), requests.collect())
        });
        Worker {
            encoded: plan
                .requests
                .iter()
                .map(|w| w.request.encode(plan.keep_alive))
                .collect(),
            heads: plan
                .requests
                .iter()
                .map(|w| w.request.method == "HEAD")
                .collect(),
            plan,
            index,
            threads,
            start,
            stop,
            progress,
            recorder: RefCell::new(Recorder::default()),
            next_source: Cell::new(index),
            deliveries,
            h2,
            redirects: Redirects::default(),
        }
    }

    /// This thread's record of the step, once it is over (with its HTTP/2 connections'
    /// GOAWAYs).
    pub fn finish(&self) -> Recorder {
        let mut recorder = self.recorder.take();
        if let Some((pool, _)) = &self.h2 {
            recorder.connections.goaways += pool.goaways.get();
        }
        recorder
    }

    /// When a step of `length` ends: its start plus its duration; none for iterations.
    pub fn deadline(&self, length: Length) -> Option<Instant> {
        match length {
            Length::Duration(d) => Some(self.start + d),
            Length::Iterations(_) => None,
        }
    }

    /// This thread's users of a step of `users` (`index, index + threads, ...`), each
    /// with when it starts: evenly over `ramp`.
    pub fn my_users(
        &self,
        users: usize,
        ramp: Duration,
    ) -> impl Iterator<Item = (usize, Duration)> {
        (self.index..users)
            .step_by(self.threads)
            .map(move |u| (u, ramp.mul_f64(u as f64 / users as f64)))
    }

    pub fn stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Completes when the run is interrupted.
    pub async fn interrupted(&self) {
        let mut stop = self.stop.clone();
        let _ = stop.wait_for(|s| *s).await;
    }

    fn micros(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.start).as_micros() as u64
    }

    pub fn source(&self) -> Option<IpAddr> {
        let sources = &self.plan.source_addrs;
        if sources.is_empty() {
            return None;
        }
        let i = self.next_source.get();
        self.next_source.set(i + 1);
        Some(sources[i % sources.len()])
    }

    /// Sends request number `pick` of the plan's mix on `slot` (opening a connection if
    /// it holds none; with `--h2`, on a shared connection instead), and records it with
    /// its latency counted from `intended`.
    ///
    /// What most requests never do (follow a redirect, open a connection and shake
    /// hands) is boxed where it happens: held inline, its state made every request's
    /// task as large as the largest of them (the open model's task: 3,616 bytes, 1,576
    /// boxed), copied into and out of tokio's task cell for each request.
    pub async fn request(&self, slot: &mut Option<Connection>, pick: u64, intended: Instant) {
        let i = self.plan_index(pick);
        let request = &self.plan.requests[i].request;
        if let Some((pool, prepared)) = &self.h2 {
            let came = self.send_h2(pool, (request, &prepared[i]), intended).await;
            if self.plan.follow {
                Box::pin(self.follow(slot, request, came, (Check::default(), None))).await;
            }
            return;
        }
        let out = Outgoing {
            target: &request.target,
            bytes: &self.encoded[i],
            head: self.heads[i],
            label: &request.label,
            check: Check::default(),
            timeout: self.plan.timeout,
            user: None,
        };
        let came = self.send(slot, &out, intended).await;
        if self.plan.follow {
            Box::pin(self.follow(slot, request, came, (Check::default(), None))).await;
        }
    }

    /// `--follow`: sends the request each redirect asks for, one sample per hop, until
    /// an answer that is no redirect (or [`MAX_HOPS`]). A hop to the request's own
    /// server goes on the user's connection (with `--h2`, as a stream on the thread's
    /// connections); one elsewhere on an HTTP/1.1 connection of its own. `check` is
    /// what the answer at the end of the chain must be (a scenario step's expectation);
    /// each redirect on the way is judged by `--ok-status`, as any response is. `user`:
    /// a scenario's user, whose cookies go with hops to its own target and whose
    /// extractions read the answer at the end.
    pub async fn follow(
        &self,
        slot: &mut Option<Connection>,
        first: &RequestSpec,
        came: Came,
        (check, user): (Check<'_>, Option<UserSide<'_>>),
    ) {
        let (mut came, mut current) = (came, None::<RequestSpec>);
        for hop in 0..=MAX_HOPS {
            let Some((status, Some(location))) = came.take() else {
                return;
            };
            if !is_redirect(status) || self.stopped() {
                return;
            }
            let from = current.as_ref().unwrap_or(first);
            let mut next = match self.hop(hop, from, status, &location) {
                Ok(next) => next,
                Err(e) => return self.failed(&format!("{} (redirected)", first.label), e),
            };
            let home = next.target.addr == first.target.addr && next.target.tls == first.target.tls;
            // The user's cookies go with a hop to its own target (a log-in's 302 to the
            // home page needs the session it just set), and it keeps what the hop sets.
            let jar = user.and_then(|u| u.jar).filter(|_| home);
            if let Some(value) = jar.and_then(|j| j.borrow_mut().header(&next.target.path)) {
                next.headers
                    .retain(|(n, _)| !n.eq_ignore_ascii_case("cookie"));
                next.headers.push(("Cookie".into(), value));
            }
            let bytes = next.encode(self.plan.keep_alive);
            let out = Outgoing {
                target: &next.target,
                bytes: &bytes,
                head: next.method == "HEAD",
                label: &next.label,
                check,
                timeout: self.plan.timeout,
                user: user.map(|u| UserSide {
                    jar,
                    path: &next.target.path,
                    ..u
                }),
            };
            came = match (home, &self.h2) {
                (true, Some((pool, _))) => {
                    let prepared = H2Request::new(&next);
                    self.send_h2(pool, (&next, &prepared), Instant::now()).await
                }
                (true, None) => self.send(slot, &out, Instant::now()).await,
                (false, _) => self.send(&mut None, &out, Instant::now()).await,
            };
            current = Some(next);
        }
    }

    /// Where redirect number `hop` of `from` (its `status` and `location`) leads; `Err`
    /// past [`MAX_HOPS`] or for a `Location` that cannot be followed.
    fn hop(
        &self,
        hop: usize,
        from: &RequestSpec,
        status: u16,
        location: &str,
    ) -> Result<RequestSpec, String> {
        if hop == MAX_HOPS {
            return Err(format!("redirect: more than {MAX_HOPS} hops"));
        }
        self.redirects
            .next(from, status, location, &self.plan.resolve)
            .map_err(|e| format!("redirect: {e}"))
    }

    /// Records a sample that failed before anything was sent (a redirect that cannot be
    /// followed).
    pub fn failed(&self, label: &str, error: String) {
        let now = Instant::now();
        self.settle((label, 0), (now, now), Err(error), &Check::default(), None);
    }

    /// Sends `out` on `slot` (opening a connection if it holds none) and records the
    /// sample, its latency counted from `intended`. An interrupted run abandons the
    /// request: it has no outcome to record.
    pub async fn send(
        &self,
        slot: &mut Option<Connection>,
        out: &Outgoing<'_>,
        intended: Instant,
    ) -> Came {
        let before = Instant::now();
        let limit = capture_limit(out);
        let mut body = (limit > 0).then(Vec::new);
        let exchange = self.exchange(slot, out, body.as_mut().map(|b| (b, limit)));
        let result = tokio::select! {
            r = tokio::time::timeout(out.timeout, exchange) => r,
            () = self.interrupted() => return None,
        };
        let body = body.unwrap_or_default();
        let (got, head, extracted) = match result {
            Ok(Ok((reply, opened))) => {
                let extracted = out.user.and_then(|u| self.keep(&u, &reply, &body));
                let got = Got {
                    sent: opened.unwrap_or(reply.written),
                    status: reply.status,
                    location: reply.location,
                    bytes_in: reply.bytes_in,
                    completed: reply.completed,
                };
                (Ok(got), reply.head, extracted)
            }
            Ok(Err(e)) => (Err(e.to_string()), Vec::new(), None),
            Err(_) => {
                *slot = None;
                (Err("timeout".to_string()), Vec::new(), None)
            }
        };
        let came = got.as_ref().ok().map(|g| (g.status, g.location.clone()));
        let sample = (out.label, out.bytes.len() as u64);
        let detail = out.user.map(|_| Detail {
            request: out.bytes,
            head: &head,
            body: &body,
        });
        let outcome = Outcome {
            got,
            body: &body,
            extracted,
            detail,
        };
        self.settle_full(sample, (intended, before), outcome, &out.check);
        came
    }

    /// What a scenario's user keeps of a response: its cookies, and, from the answer
    /// that ends a step (no redirect about to be followed), the step's extractions.
    /// The first extraction that found nothing, as its error kind.
    fn keep(&self, user: &UserSide<'_>, reply: &Reply, body: &[u8]) -> Option<String> {
        if let Some(jar) = user.jar.filter(|_| !reply.set_cookies.is_empty()) {
            jar.borrow_mut().store(user.path, &reply.set_cookies);
        }
        let followed = self.plan.follow && is_redirect(reply.status) && reply.location.is_some();
        if followed || user.extract.is_empty() {
            return None;
        }
        let cookie = |name: &str| user.jar.and_then(|j| j.borrow().value(name));
        let response = Response {
            head: &reply.head,
            body,
            cookie: &cookie,
        };
        let mut vars = user.vars.borrow_mut();
        let mut failed = None;
        for e in user.extract {
            match e.apply(&response) {
                Ok(value) => vars[e.slot] = Some(value),
                Err(e) => failed = failed.or(Some(e.to_string())),
            }
        }
        failed
    }

    /// Sends `request` as an HTTP/2 stream on one of `pool`'s connections, and records
    /// it (its GOAWAY or RST_STREAM, if the server sent one, counted apart too).
    async fn send_h2(
        &self,
        pool: &H2Pool,
        (request, prepared): (&RequestSpec, &Result<H2Request, H2Error>),
        intended: Instant,
    ) -> Came {
        let before = Instant::now();
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => {
                self.failed(&request.label, e.to_string());
                return None;
            }
        };
        let connect = (self.plan.tls.as_ref(), self.source());
        let exchange = pool.exchange((prepared, &request.target), connect);
        let result = tokio::select! {
            r = tokio::time::timeout(self.plan.timeout, exchange) => r,
            () = self.interrupted() => return None,
        };
        let got = match result {
            Ok(Ok((reply, opened))) => {
                if let Some(o) = &opened {
                    self.recorder.borrow_mut().opened(o.handshake);
                }
                Ok(Got {
                    sent: opened.map_or(reply.written, |o| o.started),
                    status: reply.status,
                    location: reply.location,
                    bytes_in: reply.bytes_in,
                    completed: reply.completed,
                })
            }
            Ok(Err(e)) => {
                self.recorder.borrow_mut().h2_error(&e);
                Err(e.to_string())
            }
            Err(_) => Err("timeout".to_string()),
        };
        let came = got.as_ref().ok().map(|g| (g.status, g.location.clone()));
        let sample = (request.label.as_str(), request.body.len() as u64);
        self.settle(sample, (intended, before), got, &Check::default(), None);
        came
    }

    /// Records an exchange's sample that kept no more than its body.
    fn settle(
        &self,
        sample: (&str, u64),
        times: (Instant, Instant),
        got: Result<Got, String>,
        check: &Check<'_>,
        body: Option<&[u8]>,
    ) {
        let outcome = Outcome {
            got,
            body: body.unwrap_or_default(),
            extracted: None,
            detail: None,
        };
        self.settle_full(sample, times, outcome, check);
    }

    /// Records one exchange's sample: `(label, bytes sent)`, `(intended, before)` (when
    /// it was meant to go, and when the attempt began), what came back or why nothing
    /// did, and the check its response must pass.
    fn settle_full(
        &self,
        (label, bytes_out): (&str, u64),
        (intended, before): (Instant, Instant),
        outcome: Outcome<'_>,
        check: &Check<'_>,
    ) {
        let Outcome {
            got,
            body,
            extracted,
            detail,
        } = outcome;
        let body = Some(body);
        // A sample spans from its write (or its connect, for a new connection) to its
        // last byte; a failure, from the start of the attempt to when it was seen.
        let (error, sent, ended) = match &got {
            Ok(g) if self.plan.follow && is_redirect(g.status) && g.location.is_some() => (
                Check::default().verdict(&self.plan.ok_status, g.status, None),
                g.sent,
                g.completed,
            ),
            Ok(g) => (
                check
                    .verdict(&self.plan.ok_status, g.status, body)
                    .or(extracted),
                g.sent,
                g.completed,
            ),
            Err(e) => (Some(e.clone()), before, Instant::now()),
        };
        let got = got.ok();
        // In the closed model a request is meant to go when it goes.
        let intended = intended.min(sent);
        self.progress.count(error.is_some());
        self.recorder.borrow_mut().record(&Sample {
            label,
            intended_us: self.micros(intended),
            sent_us: self.micros(sent),
            ended_us: self.micros(ended),
            error,
            status: got.as_ref().map(|g| g.status),
            location: got.as_ref().and_then(|g| g.location.as_deref()),
            bytes_in: got.as_ref().map_or(0, |g| g.bytes_in),
            bytes_out,
            detail,
        });
    }

    /// Records a sample of a step other than an HTTP request (WebSocket, STOMP): from
    /// `began` to `ended`, no coordinated omission to correct (a user does one thing
    /// after another).
    pub fn record(&self, label: &str, span: (Instant, Instant), outcome: StepOutcome) {
        let (began, ended) = span;
        self.progress.count(outcome.error.is_some());
        self.recorder.borrow_mut().record(&Sample {
            label,
            intended_us: self.micros(began),
            sent_us: self.micros(began),
            ended_us: self.micros(ended),
            error: outcome.error,
            status: None,
            location: None,
            bytes_in: outcome.bytes_in,
            bytes_out: outcome.bytes_out,
            detail: None,
        });
    }

    fn plan_index(&self, pick: u64) -> usize {
        if self.plan.requests.len() == 1 {
            return 0;
        }
        let chosen = self.plan.pick(pick);
        self.plan
            .requests
            .iter()
            .position(|w| std::ptr::eq(&w.request, chosen))
            .unwrap_or(0)
    }

    /// One exchange; a kept-alive connection the server closed meanwhile is replaced by
    /// a new one and the request sent again, once (it never reached the application).
    /// Returns the reply and, when a connection was opened for it, when that began.
    async fn exchange(
        &self,
        slot: &mut Option<Connection>,
        out: &Outgoing<'_>,
        mut body: Option<Capture<'_>>,
    ) -> Result<(Reply, Option<Instant>), ExchangeError> {
        for _ in 0..2 {
            let reused = slot.is_some();
            let mut opened = None;
            let conn = match slot {
                Some(conn) => conn,
                None => {
                    opened = Some(Instant::now());
                    let tls = self.plan.tls.as_ref();
                    let (conn, handshake) =
                        Box::pin(Connection::open(out.target, tls, self.source())).await?;
                    self.recorder.borrow_mut().opened(handshake);
                    slot.insert(conn)
                }
            };
            conn.keep_head = out.user.is_some();
            let capture = body.as_mut().map(|(b, limit)| (&mut **b, *limit));
            match conn.exchange(out.bytes, out.head, capture).await {
                Ok(reply) => {
                    if !reply.reusable || !self.plan.keep_alive {
                        *slot = None;
                    }
                    return Ok((reply, opened));
                }
                Err(ExchangeError::Closed) if reused => *slot = None,
                Err(e) => {
                    *slot = None;
                    return Err(e);
                }
            }
        }
        Err(ExchangeError::Closed)
    }

    /// Waits until `at`, or returns false at once if the run is interrupted first.
    pub async fn sleep_until(&self, at: Instant) -> bool {
        tokio::select! {
            () = tokio::time::sleep_until(at) => true,
            () = self.interrupted() => false,
        }
    }
}

/// The status of what came back and, for a redirect, its `Location`; none when nothing
/// came back.
pub type Came = Option<(u16, Option<String>)>;

/// What one exchange came to, whatever the protocol: when it went (its connect, for a
/// new connection) and ended, and what came back.
struct Got {
    sent: Instant,
    completed: Instant,
    status: u16,
    location: Option<String>,
    bytes_in: u64,
}

/// How a step other than an HTTP request went.
#[derive(Debug, Default)]
pub struct StepOutcome {
    pub error: Option<String>,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// A request about to go: where, its bytes, and what its sample is.
pub struct Outgoing<'a> {
    pub target: &'a crate::target::Target,
    pub bytes: &'a [u8],
    /// A HEAD request (its response has no body).
    pub head: bool,
    pub label: &'a str,
    pub check: Check<'a>,
    /// A request taking longer fails as `timeout`.
    pub timeout: Duration,
    /// A scenario's user sends it: what it keeps of the response.
    pub user: Option<UserSide<'a>>,
}

/// A scenario's user's side of a request: what it keeps of the response.
#[derive(Clone, Copy)]
pub struct UserSide<'a> {
    /// Its cookie jar (none with `cookies = false`), and the request's path: what the
    /// response sets is kept there.
    pub jar: Option<&'a RefCell<Jar>>,
    pub path: &'a str,
    /// The values the step takes from its answer, into the user's variables.
    pub extract: &'a [Extraction],
    pub vars: &'a RefCell<Vec<Option<String>>>,
}

/// How much of a response's body `out` keeps: all its checks and extractions read (up
/// to 1 MiB), the start a failure shows for a scenario's user, none on the plain path.
fn capture_limit(out: &Outgoing<'_>) -> usize {
    let extracts = out
        .user
        .is_some_and(|u| u.extract.iter().any(Extraction::reads_body));
    match (out.check.body.is_some() || extracts, out.user.is_some()) {
        (true, _) => MAX_CAPTURE,
        (false, true) => FAILURE_BYTES,
        (false, false) => 0,
    }
}

/// What an exchange came to, for its sample.
struct Outcome<'a> {
    got: Result<Got, String>,
    body: &'a [u8],
    /// The first extraction that found nothing.
    extracted: Option<String>,
    detail: Option<Detail<'a>>,
}

/// What a response must be to count as a success.
#[derive(Debug, Clone, Copy, Default)]
pub struct Check<'a> {
    /// Statuses that pass; empty: those of the plan's `--ok-status`.
    pub statuses: &'a [u16],
    /// Text the body must contain.
    pub body: Option<&'a str>,
}

impl Check<'_> {
    /// The error kind a response with `status` and `body` counts as, if any. `ok`: the
    /// statuses that pass when the check names none.
    pub fn verdict(&self, ok: &OkStatus, status: u16, body: Option<&[u8]>) -> Option<String> {
        if self.statuses.is_empty() {
            if !ok.passes(status) {
                return Some(format!("status {status}"));
            }
        } else if !self.statuses.contains(&status) {
            return Some(format!("check: status {status}"));
        }
        let needle = self.body?;
        let found = body.is_some_and(|b| {
            b.windows(needle.len().max(1))
                .any(|w| w == needle.as_bytes())
        });
        (!found).then(|| format!("check: body lacks {needle:?}"))
    }
}

/// The closed model: this thread's users, each in a loop until the step ends.
pub async fn run_users(
    w: Rc<Worker>,
    users: usize,
    ramp: Duration,
    think: Duration,
    length: Length,
) {
    let deadline = w.deadline(length);
    let tasks: Vec<_> = w
        .my_users(users, ramp)
        .map(|(u, offset)| {
            let w = w.clone();
            let user = UserPlan {
                u,
                users,
                offset,
                think,
                length,
                deadline,
            };
            tokio::task::spawn_local(async move { user.run(&w).await })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

/// One virtual user of the closed model.
struct UserPlan {
    u: usize,
    users: usize,
    offset: Duration,
    think: Duration,
    length: Length,
    deadline: Option<Instant>,
}

impl UserPlan {
    async fn run(&self, w: &Worker) {
        let UserPlan {
            u,
            users,
            offset,
            think,
            length,
            deadline,
        } = *self;
        if !w.sleep_until(w.start + offset).await {
            return;
        }
        w.progress.active(1);
        let mut slot = None;
        let mut n: u64 = 0;
        loop {
            let over = match length {
                Length::Iterations(k) => n >= k,
                Length::Duration(_) => deadline.is_some_and(|d| Instant::now() >= d),
            };
            if over || w.stopped() {
                break;
            }
            w.request(&mut slot, n * users as u64 + u as u64, Instant::now())
                .await;
            n += 1;
            if !think.is_zero() {
                if let Some(conn) = slot.as_mut() {
                    conn.idle();
                }
                let wake = Instant::now() + think;
                let wake = deadline.map_or(wake, |d| wake.min(d));
                if !w.sleep_until(wake).await {
                    break;
                }
            }
        }
        w.progress.active(-1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        let any = Check::default();
        let ok = OkStatus::default();
        assert_eq!(any.verdict(&ok, 204, None), None);
        assert_eq!(any.verdict(&ok, 500, None).as_deref(), Some("status 500"));
        let statuses = [200, 404];
        let c = Check {
            statuses: &statuses,
            body: Some("ok"),
        };
        assert_eq!(c.verdict(&ok, 404, Some(b"is ok")), None);
        assert_eq!(
            c.verdict(&ok, 201, Some(b"ok")).as_deref(),
            Some("check: status 201")
        );
        assert_eq!(
            c.verdict(&ok, 200, Some(b"nope")).as_deref(),
            Some("check: body lacks \"ok\"")
        );
    }

    #[test]
    fn statuses_that_count_as_errors() {
        let verdict = |ok: &OkStatus, status| Check::default().verdict(ok, status, None);
        let default = OkStatus::default();
        assert_eq!(verdict(&default, 200), None);
        assert_eq!(verdict(&default, 304), None);
        assert_eq!(verdict(&default, 399), None);
        assert_eq!(verdict(&default, 400).as_deref(), Some("status 400"));
        assert_eq!(verdict(&default, 503).as_deref(), Some("status 503"));
        assert_eq!(verdict(&default, 101).as_deref(), Some("status 101"));
        let custom = OkStatus::parse("200-299, 404").unwrap();
        assert_eq!(custom.to_string(), "200-299,404");
        assert_eq!(verdict(&custom, 404), None);
        assert_eq!(verdict(&custom, 301).as_deref(), Some("status 301"));
        assert_eq!(verdict(&custom, 405).as_deref(), Some("status 405"));
        for bad in ["", "20x", "200-", "99", "600", "399-200"] {
            assert!(OkStatus::parse(bad).is_err(), "{bad}");
        }
    }
}
