//! A scenario's virtual users (the closed model): each runs its setup steps once, loops
//! over the steps until the load step's duration is over (or `iterations` times),
//! listens a while for the STOMP messages still due to it, and runs its teardown.
//! HTTP steps share one keep-alive connection per user; WebSocket and STOMP steps, the
//! user's one WebSocket. Every step's outcome is a sample under the step's name.

use crate::conn::{open_stream, Connection, ExchangeError};
use crate::cookies::Jar;
use crate::open_model::planned_requests;
use crate::plan::Length;
use crate::redirect::is_redirect;
use crate::scenario::{Action, Context, Per, Scenario, ScenarioStep, Stomp, Template, Unset};
use crate::stomp;
use crate::target::RequestSpec;
use crate::websocket::{Incoming, SocketError, WsConn};
use crate::worker::{Check, Outgoing, StepOutcome, UserSide, Worker};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// How often a user that finished its loop looks whether its messages have all come.
const DELIVERY_POLL: Duration = Duration::from_millis(20);

/// Why a WebSocket or STOMP step failed. Its `Display` is the error kind reports count
/// by: the words are the ones the generator always counted.
#[derive(Debug, thiserror::Error)]
enum StepError {
    #[error("no websocket open (a ws step comes first)")]
    NoSocket,
    /// The TCP connection for the WebSocket (its words: `connect: ...`).
    #[error(transparent)]
    Connect(ExchangeError),
    #[error(transparent)]
    Socket(#[from] SocketError),
    #[error("not subscribed to {0}")]
    NotSubscribed(String),
    /// The broker's ERROR frame, by its `message` header (else its body).
    #[error("STOMP ERROR: {0}")]
    Stomp(String),
    /// Text where a STOMP frame was due: a frame that did not parse (described by the
    /// reader) or a message that is no STOMP at all, counted as its own words.
    #[error("{0}")]
    NotAFrame(String),
    #[error("timeout")]
    Timeout,
    #[error(transparent)]
    Unset(#[from] Unset),
}

/// This thread's users of a scenario step: users `index, index + threads, ...`.
pub async fn run_scenario(
    w: Rc<Worker>,
    scenario: Arc<Scenario>,
    users: usize,
    ramp: Duration,
    length: Length,
) {
    let deadline = w.deadline(length);
    let tasks: Vec<_> = w
        .my_users(users, ramp)
        .map(|(u, offset)| {
            let user = VirtualUser::new(w.clone(), scenario.clone(), u);
            tokio::task::spawn_local(user.run(offset, length, deadline))
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
}

/// This thread's arrivals of a `rate` scenario's step (the open model): user `k`
/// arrives at `start + k / rate` (this thread's are `k = index, index + threads, ...`),
/// runs its setup, one time round the loop and its teardown, and leaves. At most the
/// scenario's `max_users` (this thread's share of them) are in at once: an arrival
/// past them waits for one to leave, and is missed if the step ends first.
pub async fn run_arrivals(w: Rc<Worker>, scenario: Arc<Scenario>, rate: f64, duration: Duration) {
    let end = w.start + duration;
    let (index, threads) = (w.index as u64, w.threads as u64);
    let planned = planned_requests(rate, duration, index, threads);
    let room = Arc::new(tokio::sync::Semaphore::new(
        scenario.max_users.div_ceil(w.threads).max(1),
    ));
    let mut tasks = Vec::new();
    for n in 0..planned {
        let k = n * threads + index;
        let due = w.start + Duration::from_secs_f64(k as f64 / rate);
        if !w.sleep_until(due).await {
            break;
        }
        let permit = tokio::select! {
            p = room.clone().acquire_owned() => p.ok(),
            () = tokio::time::sleep_until(end) => None,
            () = w.interrupted() => None,
        };
        let Some(permit) = permit else {
            if !w.stopped() {
                w.recorder.borrow_mut().missed += planned - n;
            }
            break;
        };
        let user = VirtualUser::new(w.clone(), scenario.clone(), k as usize);
        tasks.push(tokio::task::spawn_local(async move {
            user.arrive(end).await;
            drop(permit);
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
}

struct VirtualUser {
    w: Rc<Worker>,
    scenario: Arc<Scenario>,
    user: u32,
    room: usize,
    http: Option<Connection>,
    ws: Option<WsConn>,
    /// STOMP SENDs so far: each one's number in its marker.
    sent: u32,
    /// Frames that needed an id (subscriptions, receipts).
    frames: u32,
    /// Destination -> subscription id.
    subscriptions: Vec<(String, String)>,
    /// Its cookie jar, unless the scenario turned cookies off.
    cookies: Option<RefCell<Jar>>,
    /// Its values of the scenario's variables (data columns, extractions), by slot.
    vars: RefCell<Vec<Option<String>>>,
}

impl VirtualUser {
    fn new(w: Rc<Worker>, scenario: Arc<Scenario>, u: usize) -> VirtualUser {
        let cookies = scenario.cookies.then(|| {
            // Checked against the target where it was given: a jar that took them
            // then takes them now.
            Jar::with(&scenario.target.url, &scenario.initial_cookies)
                .ok()
                .or_else(|| Jar::new(&scenario.target.url))
        });
        VirtualUser {
            w,
            room: u % scenario.rooms,
            user: u as u32,
            http: None,
            ws: None,
            sent: 0,
            frames: 0,
            subscriptions: Vec::new(),
            cookies: cookies.flatten().map(RefCell::new),
            vars: RefCell::new(vec![None; scenario.vars.len()]),
            scenario,
        }
    }

    /// An arrival of the open model: its setup, one time round the loop, its teardown,
    /// its steps cut short at `end` (the teardown runs still).
    async fn arrive(mut self, end: Instant) {
        let w = self.w.clone();
        let scenario = self.scenario.clone();
        if !self.take_row(Per::User) {
            return;
        }
        w.progress.active(1);
        let set = self.steps(&scenario.setup, Some(end)).await;
        if set && self.take_row(Per::Iteration) {
            self.steps(&scenario.pick_flow().steps, Some(end)).await;
        }
        self.leave().await;
    }

    /// The end of a user's life: the STOMP messages still due to it, its teardown
    /// (unless the run was interrupted), and its leaving.
    async fn leave(&mut self) {
        let (w, scenario) = (self.w.clone(), self.scenario.clone());
        if scenario.uses_stomp() {
            self.await_deliveries().await;
        }
        if !w.stopped() {
            self.steps(&scenario.teardown, None).await;
        }
        w.deliveries.leave(self.user);
        w.progress.active(-1);
    }

    async fn run(mut self, offset: Duration, length: Length, deadline: Option<Instant>) {
        let w = self.w.clone();
        if !w.sleep_until(w.start + offset).await {
            return;
        }
        let scenario = self.scenario.clone();
        // A user given no row (the data ran out, not recycled) does not start.
        if !self.take_row(Per::User) {
            return;
        }
        w.progress.active(1);
        let mut looped = self.steps(&scenario.setup, deadline).await;
        let mut n = 0;
        while looped {
            let over = match length {
                Length::Iterations(k) => n >= k,
                Length::Duration(_) => deadline.is_some_and(|d| Instant::now() >= d),
            };
            if over || w.stopped() || !self.take_row(Per::Iteration) {
                break;
            }
            looped = self.steps(&scenario.pick_flow().steps, deadline).await;
            n += 1;
        }
        self.leave().await;
    }

    /// Runs `steps` in order; false when the deadline passed or the run was
    /// interrupted before the last.
    async fn steps(&mut self, steps: &[ScenarioStep], deadline: Option<Instant>) -> bool {
        let w = self.w.clone();
        for step in steps {
            let skipped = |c: &crate::scenario::Condition| !c.holds(&self.vars.borrow());
            if step.condition.as_ref().is_some_and(skipped) {
                continue;
            }
            for _ in 0..step.repeat {
                if w.stopped() || deadline.is_some_and(|d| Instant::now() >= d) {
                    return false;
                }
                self.step(step).await;
                if !step.think.is_zero() {
                    if let Some(conn) = self.http.as_mut() {
                        conn.idle();
                    }
                    let wake = Instant::now() + step.think.draw();
                    if !w.sleep_until(deadline.map_or(wake, |d| wake.min(d))).await {
                        return false;
                    }
                }
            }
        }
        true
    }

    async fn step(&mut self, step: &ScenarioStep) {
        let w = self.w.clone();
        let timeout = step.timeout.unwrap_or(w.plan.timeout);
        if let Action::Http { .. } = step.action {
            return self.http(step, timeout).await;
        }
        let began = Instant::now();
        let outcome = tokio::select! {
            r = tokio::time::timeout(timeout, self.socket_step(&step.action)) => {
                r.unwrap_or_else(|_| StepOutcome {
                    error: Some(StepError::Timeout.to_string()),
                    ..Default::default()
                })
            }
            () = w.interrupted() => return,
        };
        w.record(&step.name, (began, Instant::now()), outcome);
    }

    /// When the scenario's data gives rows `per` this, the user's next row into its
    /// variables; false when the rows ran out (and are not recycled).
    fn take_row(&self, per: Per) -> bool {
        let Some(data) = self.scenario.data.as_ref().filter(|d| d.per == per) else {
            return true;
        };
        let Some(row) = data.row(self.user as usize) else {
            self.w.recorder.borrow_mut().out_of_rows += 1;
            return false;
        };
        let mut vars = self.vars.borrow_mut();
        for (slot, value) in data.slots.iter().zip(row) {
            vars[*slot] = Some(value.clone());
        }
        true
    }

    fn render(&self, t: &Template) -> Result<String, Unset> {
        let values = self.vars.borrow();
        t.render(&Context {
            user: self.user as usize,
            room: self.room,
            values: &values,
        })
    }

    fn render_headers(
        &self,
        headers: &[(String, Template)],
    ) -> Result<Vec<(String, String)>, Unset> {
        headers
            .iter()
            .map(|(n, v)| Ok((n.clone(), self.render(v)?)))
            .collect()
    }

    async fn http(&mut self, step: &ScenarioStep, timeout: Duration) {
        let Action::Http {
            method,
            expect_status,
            ..
        } = &step.action
        else {
            return;
        };
        let w = self.w.clone();
        // A variable with no value yet (its extraction failed): the step is not sent.
        let request = match self.rendered(&step.action) {
            Ok(r) => r,
            Err(e) => return w.failed(&step.name, e.to_string()),
        };
        let bytes = self.encode_http(method, &request);
        let user = UserSide {
            jar: self.cookies.as_ref(),
            path: &request.path,
            extract: &step.extract,
            vars: &self.vars,
        };
        let out = Outgoing {
            target: &self.scenario.target,
            bytes: &bytes,
            head: method == "HEAD",
            label: &step.name,
            check: Check {
                statuses: expect_status,
                body: request.expected.as_deref(),
            },
            timeout,
            user: Some(user),
        };
        let came = w.send(&mut self.http, &out, Instant::now()).await;
        let redirected = came
            .as_ref()
            .is_some_and(|(status, location)| is_redirect(*status) && location.is_some());
        if w.plan.follow && redirected {
            let mut target = self.scenario.target.clone();
            target.path = request.path.clone();
            let first = RequestSpec {
                method: method.clone(),
                target,
                headers: request.headers.clone(),
                body: request.body.clone().into_bytes(),
                label: step.name.clone(),
            };
            Box::pin(w.follow(&mut self.http, &first, came, (out.check, Some(user)))).await;
        }
    }

    /// An HTTP step's templates rendered for this user.
    fn rendered(&self, action: &Action) -> Result<Rendered, Unset> {
        let Action::Http {
            path,
            headers,
            body,
            expect_body,
            ..
        } = action
        else {
            return Ok(Rendered::default());
        };
        Ok(Rendered {
            path: self.render(path)?,
            headers: self.render_headers(headers)?,
            body: self.render(body)?,
            expected: expect_body.as_ref().map(|t| self.render(t)).transpose()?,
        })
    }

    fn encode_http(&self, method: &str, request: &Rendered) -> Vec<u8> {
        let Rendered {
            path,
            headers,
            body,
            ..
        } = request;
        let mut out = format!("{method} {path} HTTP/1.1\r\n");
        let has = |name: &str| headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if !has("host") {
            out.push_str(&format!("Host: {}\r\n", self.scenario.target.authority));
        }
        // The user's cookies for this path, unless the step sets its own header.
        let jar = self.cookies.as_ref().filter(|_| !has("cookie"));
        if let Some(cookies) = jar.and_then(|j| j.borrow_mut().header(path)) {
            out.push_str(&format!("Cookie: {cookies}\r\n"));
        }
        for (name, value) in headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() && !has("content-length") {
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        if !self.w.plan.keep_alive && !has("connection") {
            out.push_str("Connection: close\r\n");
        }
        out.push_str("\r\n");
        out.push_str(body);
        out.into_bytes()
    }

    /// A WebSocket or STOMP step.
    async fn socket_step(&mut self, action: &Action) -> StepOutcome {
        let result = match action {
            Action::WsOpen { path, headers } => self.open(path, headers).await.map(|()| 0),
            Action::WsSend(text) => match (self.render(text), self.ws()) {
                (Ok(text), Ok(ws)) => ws.send(text).await.map_err(StepError::from),
                (Err(e), _) => Err(e.into()),
                (_, Err(e)) => Err(e),
            },
            Action::WsExpect(text) => self.expect(text).await,
            Action::WsClose => self.close().await,
            Action::Stomp(s) => self.stomp(s).await,
            Action::Http { .. } => Ok(0),
        };
        let bytes_in = self
            .ws
            .as_ref()
            .map_or(0, |ws| ws.inbox.bytes_in.replace(0));
        match result {
            Ok(bytes_out) => StepOutcome {
                error: None,
                bytes_in,
                bytes_out,
            },
            Err(e) => StepOutcome {
                error: Some(e.to_string()),
                bytes_in,
                bytes_out: 0,
            },
        }
    }

    fn ws(&mut self) -> Result<&mut WsConn, StepError> {
        self.ws.as_mut().ok_or(StepError::NoSocket)
    }

    async fn open(
        &mut self,
        path: &Template,
        headers: &[(String, Template)],
    ) -> Result<(), StepError> {
        self.ws = None;
        let target = &self.scenario.target;
        let tls = self.w.plan.tls.as_ref();
        let (stream, handshake) = open_stream(target, tls, self.w.source())
            .await
            .map_err(StepError::Connect)?;
        self.w.recorder.borrow_mut().opened(handshake);
        let headers = self.render_headers(headers)?;
        let path = self.render(path)?;
        let deliveries = self.w.deliveries.clone();
        let ws = WsConn::open(
            stream,
            &target.authority,
            &path,
            &headers,
            self.user,
            deliveries,
        )
        .await?;
        self.ws = Some(ws);
        Ok(())
    }

    /// Waits for a message containing `text`, dropping others (as JMeter's WebSocket
    /// read sampler does).
    async fn expect(&mut self, text: &Template) -> Result<u64, StepError> {
        let needle = self.render(text)?;
        let ws = self.ws()?;
        ws.inbox
            .wait_for(|item| {
                let text = match item {
                    Incoming::Text(t) => t,
                    Incoming::Frame(f) => &f.body,
                };
                text.contains(&needle).then_some(Ok(0))
            })
            .await
    }

    async fn close(&mut self) -> Result<u64, StepError> {
        let result = self.ws()?.close().await;
        self.ws = None;
        result?;
        Ok(0)
    }

    /// The next id for a subscription or a receipt, unique within this user.
    fn next_id(&mut self, prefix: &str) -> String {
        self.frames += 1;
        format!("{prefix}-{}-{}", self.user, self.frames)
    }

    async fn stomp(&mut self, step: &Stomp) -> Result<u64, StepError> {
        match step {
            Stomp::Connect { headers } => self.stomp_connect(headers).await,
            Stomp::Subscribe {
                destination,
                headers,
                receipt,
            } => self.subscribe(destination, headers, *receipt).await,
            Stomp::Unsubscribe { destination } => self.unsubscribe(destination).await,
            Stomp::Send {
                destination,
                headers,
                body,
            } => self.stomp_send(destination, headers, body).await,
            Stomp::Disconnect { receipt } => self.disconnect(*receipt).await,
        }
    }

    async fn stomp_connect(&mut self, headers: &[(String, Template)]) -> Result<u64, StepError> {
        let host = self.scenario.target.authority.clone();
        let extra = self.render_headers(headers)?;
        // The step's headers first: in STOMP the first of a repeated header counts, and a
        // broker may read `host` as its virtual host (RabbitMQ does).
        let mut all: Vec<(&str, &str)> = extra
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        for (name, value) in [
            ("accept-version", "1.2"),
            ("host", host.as_str()),
            ("heart-beat", "0,0"),
        ] {
            if !all.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                all.push((name, value));
            }
        }
        let frame = stomp::encode("CONNECT", &all, "");
        let ws = self.ws()?;
        ws.inbox.stomp.set(true);
        let n = ws.send(frame).await?;
        ws.inbox
            .wait_for(|item| answer(item, "CONNECTED", None))
            .await?;
        Ok(n)
    }

    async fn subscribe(
        &mut self,
        destination: &Template,
        headers: &[(String, Template)],
        receipt: bool,
    ) -> Result<u64, StepError> {
        let destination = self.render(destination)?;
        let id = self.next_id("sub");
        let receipt_id = self.next_id("receipt");
        let extra = self.render_headers(headers)?;
        let mut all = vec![("destination", destination.as_str()), ("id", id.as_str())];
        if receipt {
            all.push(("receipt", receipt_id.as_str()));
        }
        all.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let frame = stomp::encode("SUBSCRIBE", &all, "");
        let deliveries = self.w.deliveries.clone();
        let user = self.user;
        self.subscriptions.push((destination.clone(), id));
        // From now on copies may come; they are due once the receipt is back.
        deliveries.subscribed(&destination, user, !receipt);
        let ws = self.ws()?;
        let n = ws.send(frame).await?;
        if receipt {
            let want = Some(receipt_id.as_str());
            ws.inbox
                .wait_for(|item| answer(item, "RECEIPT", want))
                .await?;
            deliveries.subscribed(&destination, user, true);
        }
        Ok(n)
    }

    async fn unsubscribe(&mut self, destination: &Template) -> Result<u64, StepError> {
        let destination = self.render(destination)?;
        let i = self
            .subscriptions
            .iter()
            .position(|(d, _)| *d == destination)
            .ok_or_else(|| StepError::NotSubscribed(destination.clone()))?;
        let (destination, id) = self.subscriptions.swap_remove(i);
        self.w.deliveries.unsubscribed(&destination, self.user);
        let frame = stomp::encode("UNSUBSCRIBE", &[("id", id.as_str())], "");
        Ok(self.ws()?.send(frame).await?)
    }

    async fn stomp_send(
        &mut self,
        destination: &Template,
        headers: &[(String, Template)],
        body: &Template,
    ) -> Result<u64, StepError> {
        let destination = self.render(destination)?;
        let seq = self.sent;
        self.sent += 1;
        let body = format!("{} {}", self.render(body)?, stomp::marker(self.user, seq));
        let extra = self.render_headers(headers)?;
        let mut all = vec![
            ("destination", destination.as_str()),
            ("content-type", "text/plain"),
        ];
        all.extend(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let frame = stomp::encode("SEND", &all, &body);
        let deliveries = self.w.deliveries.clone();
        deliveries.sending(&destination, self.user, seq, std::time::Instant::now());
        let sent = match self.ws() {
            Ok(ws) => ws.send(frame).await.map_err(StepError::from),
            Err(e) => Err(e),
        };
        if sent.is_err() {
            deliveries.not_sent(self.user, seq);
        }
        sent
    }

    async fn disconnect(&mut self, receipt: bool) -> Result<u64, StepError> {
        self.w.deliveries.leave(self.user);
        self.subscriptions.clear();
        let receipt_id = self.next_id("receipt");
        let headers: &[(&str, &str)] = if receipt {
            &[("receipt", receipt_id.as_str())]
        } else {
            &[]
        };
        let frame = stomp::encode("DISCONNECT", headers, "");
        let ws = self.ws()?;
        let n = ws.send(frame).await?;
        if receipt {
            let want = Some(receipt_id.as_str());
            match ws
                .inbox
                .wait_for(|item| answer(item, "RECEIPT", want))
                .await
            {
                // Some brokers (RabbitMQ's web-stomp) close at once instead of sending
                // the receipt: after a DISCONNECT that is the graceful end too.
                Err(StepError::Socket(SocketError::Closed)) => {}
                other => other?,
            }
        }
        Ok(n)
    }

    /// After its loop, a user stays subscribed until every message sent to its
    /// destinations so far has reached it, or `delivery_wait` passed (the rest is lost).
    async fn await_deliveries(&self) {
        let until = Instant::now() + self.scenario.delivery_wait;
        while !self.w.deliveries.leave_if_done(self.user) {
            let now = Instant::now();
            if now >= until || !self.w.sleep_until(now + DELIVERY_POLL).await {
                break;
            }
        }
    }
}

/// An HTTP step's request as this user sends it, and the text its answer must hold.
#[derive(Default)]
struct Rendered {
    path: String,
    headers: Vec<(String, String)>,
    body: String,
    expected: Option<String>,
}

/// Whether `item` is the frame a STOMP step waits for (`command`, with `receipt-id`
/// `receipt` when given): `Some(Ok)` if so, `Some(Err)` for an ERROR frame or garbage,
/// `None` to drop it and keep waiting.
fn answer(item: &Incoming, command: &str, receipt: Option<&str>) -> Option<Result<(), StepError>> {
    match item {
        Incoming::Frame(f) if f.command == command => {
            (receipt.is_none() || f.header("receipt-id") == receipt).then_some(Ok(()))
        }
        Incoming::Frame(f) if f.command == "ERROR" => Some(Err(StepError::Stomp(
            f.header("message").unwrap_or(f.body.trim()).into(),
        ))),
        Incoming::Frame(_) => None,
        Incoming::Text(t) => Some(Err(StepError::NotAFrame(t.clone()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(command: &str, headers: &[(&str, &str)], body: &str) -> Incoming {
        Incoming::Frame(stomp::Frame {
            command: command.into(),
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.into(),
        })
    }

    /// Reports count errors by their words: the typed errors must read as the strings
    /// they replaced.
    #[test]
    fn step_errors_read_as_the_kinds_reports_count() {
        let words = |item: &Incoming| match answer(item, "RECEIPT", Some("r-1")) {
            Some(Err(e)) => e.to_string(),
            other => panic!("{other:?}"),
        };
        let denied = frame("ERROR", &[("message", "denied")], "details");
        assert_eq!(words(&denied), "STOMP ERROR: denied");
        assert_eq!(words(&frame("ERROR", &[], " body \n")), "STOMP ERROR: body");
        let garbage = Incoming::Text("malformed STOMP frame: x".into());
        assert_eq!(words(&garbage), "malformed STOMP frame: x");
        assert!(answer(
            &frame("RECEIPT", &[("receipt-id", "r-1")], ""),
            "RECEIPT",
            Some("r-1")
        )
        .is_some_and(|r| r.is_ok()));
        assert!(answer(
            &frame("RECEIPT", &[("receipt-id", "r-2")], ""),
            "RECEIPT",
            Some("r-1")
        )
        .is_none());
        let closed = StepError::from(SocketError::Closed);
        assert_eq!(closed.to_string(), "websocket closed");
        assert_eq!(StepError::Timeout.to_string(), "timeout");
        assert_eq!(SocketError::Rejected(403).to_string(), "status 403");
        assert_eq!(
            StepError::Connect(ExchangeError::Connect("connection refused".into())).to_string(),
            "connect: connection refused"
        );
        assert_eq!(
            StepError::NotSubscribed("/topic/a".into()).to_string(),
            "not subscribed to /topic/a"
        );
    }
}
