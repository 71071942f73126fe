//! Load-test scenarios: what each virtual user does, in order, as a TOML file.
//!
//! ```toml
//! target = "http://127.0.0.1:8080"   # where the steps' paths go
//! users = [50, 100]                   # steps of users (the closed model)
//! duration = "30s"                    # each step's length (or iterations = N loops)
//! ramp = "5s"
//! rooms = 31                          # {room} is the user's index modulo this
//! cookies = true                      # each user's cookie jar (the default; or the
//!                                     # cookies it starts with: ["lang=en; Path=/"])
//! data = "accounts.csv"               # a row for each user: {username}, {password}
//!
//! [[setup]]                           # once per user, before the loop
//! ws = "/chat"                        # opens the user's WebSocket
//! [[setup]]
//! stomp = "CONNECT"
//! [[setup]]
//! stomp = "SUBSCRIBE /topic/room.{room}"   # waits for the broker's RECEIPT
//!
//! [[step]]                            # the loop
//! name = "home"                       # the label its samples are reported under
//! http = "GET /?room={room}"          # METHOD PATH; {user}, {room}, {uuid}, {now_ms}
//!                                     # and {random(1,1000)} are replaced, and the
//!                                     # data's columns and extracted values by name
//! expect_status = 200                 # or a list; anything else is an error
//! expect_body = "Welcome"             # the body must contain this
//! extract.csrf = { regex = 'name="_csrf" value="([^"]+)"' }   # see extract.rs
//! if = "{token}"                      # only when a variable says so (condition.rs)
//! think = "100ms"                     # pause after the step (or drawn:
//!                                     # { between = ["1s", "3s"] }, { gaussian = "1s",
//!                                     # deviation = "200ms" }, { exponential = "1s" })
//! [[step]]
//! stomp = "SEND /topic/room.{room}"
//! body = "hello from {user}"
//!
//! [[teardown]]                        # once per user, at the end
//! stomp = "DISCONNECT"
//! ```
//!
//! Instead of `[[step]]`, weighted flows: each time round its loop a user runs one,
//! picked by weight (Locust's task weights, JMeter's Throughput Controller):
//!
//! ```toml
//! [[flow]]
//! name = "browse"
//! weight = 9
//! [[flow.step]]
//! http = "GET /products"
//! [[flow]]
//! name = "buy"
//! weight = 1
//! [[flow.step]]
//! http = "POST /cart"
//! ```
//!
//! Every problem is reported at once, each with `file:line:col` and a hint, the way
//! config errors are.

mod condition;
mod data;
mod extract;
mod steps;
mod template;
mod think;

pub use condition::{Condition, Test};
pub use data::{Data, Order, Per};
pub use extract::{header_values, Extraction, NotFound, Response, Source};
pub use template::{is_name, Context, Template, Unset, Variables};
pub use think::Think;

use crate::target::{Resolve, Target, TargetError};

use sluice_config::toml_edit::{Item, Table, TableLike, Value};
use sluice_config::{ConfigError, Errors, Reader};
use std::time::Duration;

const TOP_KEYS: &[&str] = &[
    "target",
    "users",
    "rate",
    "max_users",
    "duration",
    "iterations",
    "ramp",
    "rooms",
    "delivery_wait",
    "cookies",
    "data",
    "setup",
    "step",
    "flow",
    "teardown",
];

const FLOW_KEYS: &[&str] = &["name", "weight", "step"];

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// An HTTP request on the user's keep-alive connection.
    Http {
        method: String,
        path: Template,
        headers: Vec<(String, Template)>,
        body: Template,
        /// Statuses that pass; empty: any 2xx or 3xx.
        expect_status: Vec<u16>,
        /// Text the body must contain (its variables rendered for each request).
        expect_body: Option<Template>,
    },
    /// Opens the user's WebSocket (one per user) at this path.
    WsOpen {
        path: Template,
        headers: Vec<(String, Template)>,
    },
    /// Sends a text message.
    WsSend(Template),
    /// Waits for a text message containing this.
    WsExpect(Template),
    WsClose,
    /// A STOMP frame on the user's WebSocket.
    Stomp(Stomp),
}

impl Action {
    /// What the step does, in a word or two: `GET`, `WS`, `STOMP SEND`, ...
    pub fn kind(&self) -> String {
        match self {
            Action::Http { method, .. } => method.clone(),
            Action::WsOpen { .. } => "WS".into(),
            Action::WsSend(_) => "WS_SEND".into(),
            Action::WsExpect(_) => "WS_EXPECT".into(),
            Action::WsClose => "WS_CLOSE".into(),
            Action::Stomp(s) => format!(
                "STOMP {}",
                match s {
                    Stomp::Connect { .. } => "CONNECT",
                    Stomp::Subscribe { .. } => "SUBSCRIBE",
                    Stomp::Unsubscribe { .. } => "UNSUBSCRIBE",
                    Stomp::Send { .. } => "SEND",
                    Stomp::Disconnect { .. } => "DISCONNECT",
                }
            ),
        }
    }
}

/// A STOMP step. SUBSCRIBE and DISCONNECT ask for a receipt by default and wait for it,
/// so that a subscription counts only once the broker has it.
#[derive(Debug, Clone, PartialEq)]
pub enum Stomp {
    Connect {
        headers: Vec<(String, Template)>,
    },
    Subscribe {
        destination: Template,
        headers: Vec<(String, Template)>,
        receipt: bool,
    },
    Unsubscribe {
        destination: Template,
    },
    /// Its body carries a marker, so that each subscriber's copy is matched to it:
    /// delivery latency and lost messages.
    Send {
        destination: Template,
        headers: Vec<(String, Template)>,
        body: Template,
    },
    Disconnect {
        receipt: bool,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioStep {
    pub name: String,
    pub action: Action,
    pub think: Think,
    /// How many times in a row the step runs.
    pub repeat: u32,
    /// How long the step may wait (for a response, a message, a receipt); the run's
    /// `--timeout` when not given.
    pub timeout: Option<Duration>,
    /// Values taken from its response into the user's variables.
    pub extract: Vec<Extraction>,
    /// It runs only when this holds (`if = "{token}"`); skipped, it has no sample.
    pub condition: Option<Condition>,
}

/// Steps a user runs in one time round its loop, picked by weight among the scenario's.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    pub name: String,
    pub weight: u32,
    pub steps: Vec<ScenarioStep>,
}

/// A whole scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub target: Target,
    /// Steps of users (the closed model); empty when the scenario gives a `rate`.
    pub users: Vec<usize>,
    /// Steps of arrivals, users per second (the open model): each new user runs its
    /// setup, one time round the loop and its teardown. Empty when it gives `users`.
    pub rate: Vec<f64>,
    /// With a `rate`: the most users at once (an arrival past them waits for one to
    /// leave, and is missed if the step ends first).
    pub max_users: usize,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    pub ramp: Duration,
    pub rooms: usize,
    /// After its last step, how long a user keeps listening for STOMP messages still
    /// due to it before its teardown (messages not arrived by then are lost).
    pub delivery_wait: Duration,
    /// Steps each user runs once, before its loop.
    pub setup: Vec<ScenarioStep>,
    /// The loop: each time round it, one flow picked by weight (one alone when the
    /// scenario gives `[[step]]`s), until the step's duration is over, or `iterations`
    /// times.
    pub flows: Vec<Flow>,
    /// Steps each user runs once at the end, even after the duration is over.
    pub teardown: Vec<ScenarioStep>,
    /// Each user keeps the cookies it is given and sends them back (`cookies = false`:
    /// not).
    pub cookies: bool,
    /// The cookies each user's jar starts with (`Set-Cookie` values, as JMeter's
    /// Cookie Manager's user-defined cookies).
    pub initial_cookies: Vec<String>,
    /// Its own variables by name: the data's columns, then what steps extract.
    pub vars: Variables,
    /// Rows of values given out to users (`data = "accounts.csv"`).
    pub data: Option<Data>,
}

impl Scenario {
    /// Every step, setup to teardown.
    pub fn all_steps(&self) -> impl Iterator<Item = &ScenarioStep> {
        let looped = self.flows.iter().flat_map(|f| &f.steps);
        self.setup.iter().chain(looped).chain(&self.teardown)
    }

    /// Labels each step `PREFIX: its name` (a scenario run beside others, its samples
    /// told apart from theirs).
    pub fn label_with(&mut self, prefix: &str) {
        let looped = self.flows.iter_mut().flat_map(|f| &mut f.steps);
        let all = self
            .setup
            .iter_mut()
            .chain(looped)
            .chain(&mut self.teardown);
        for step in all {
            step.name = format!("{prefix}: {}", step.name);
        }
    }

    /// The flow for one time round the loop, by weight.
    pub fn pick_flow(&self) -> &Flow {
        if self.flows.len() == 1 {
            return &self.flows[0];
        }
        let total: u32 = self.flows.iter().map(|f| f.weight).sum();
        let mut at = fastrand::u32(..total.max(1));
        for flow in &self.flows {
            if at < flow.weight {
                return flow;
            }
            at -= flow.weight;
        }
        &self.flows[0]
    }

    /// True when a step opens a WebSocket (a second connection per user).
    pub fn uses_websocket(&self) -> bool {
        self.all_steps()
            .any(|s| matches!(s.action, Action::WsOpen { .. }))
    }

    /// True when a step speaks STOMP (the report then has a delivery section).
    pub fn uses_stomp(&self) -> bool {
        self.all_steps()
            .any(|s| matches!(s.action, Action::Stomp(_)))
    }
}

impl Scenario {
    /// Reads a scenario from `text`; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, Errors> {
        Scenario::parse_with(file, text, &[])
    }

    /// Like [`Scenario::parse`], its `target` resolved with `resolve` (`--resolve`)
    /// before the system's resolver.
    pub fn parse_with(file: &str, text: &str, resolve: &[Resolve]) -> Result<Scenario, Errors> {
        let doc = Reader::parse_document(file, text).map_err(|e| Errors(vec![e]))?;
        let mut r = Reader::new(file, text);
        let root = doc.as_table();
        r.only_keys(root, TOP_KEYS, "a scenario");
        let target = target(&mut r, root, resolve);
        let (users, rate) = load(&mut r, root);
        let max_users = r
            .integer(root, "max_users", 1_000_000)
            .unwrap_or(1000)
            .max(1) as usize;
        if root.get("rate").is_some() && root.get("iterations").is_some() {
            let span = root.get("iterations").and_then(Item::span);
            r.error(span, "a `rate` scenario runs for a `duration`: each user that arrives runs its loop once", "e.g. duration = \"60s\"");
        }
        let duration = r.timeout(root, "duration");
        let iterations = r.integer(root, "iterations", 1 << 40);
        let given = usize::from(root.get("duration").is_some())
            + usize::from(root.get("iterations").is_some());
        if given != 1 {
            let span = root.get("iterations").and_then(Item::span);
            r.error(
                span,
                "give the steps a `duration` or `iterations`, one of them",
                "e.g. duration = \"30s\" (each step that long) or iterations = 10 (runs per user)",
            );
        }
        let ramp = r.duration(root, "ramp").unwrap_or_default();
        let rooms = r.integer(root, "rooms", 1 << 20).unwrap_or(1).max(1) as usize;
        let delivery_wait = r.duration(root, "delivery_wait");
        let (cookies, initial_cookies) = cookies(&mut r, root, target.as_ref());
        let mut vars = Variables::default();
        let data = data::data(&mut r, root, file, &mut vars);
        for_each_step_table(root, |t| extract::declare(t, &mut vars));
        let mut x = steps::Reading {
            r: &mut r,
            vars: &vars,
        };
        let setup = section(&mut x, root, "setup", false, "");
        let flows = flows(&mut x, root);
        let teardown = section(&mut x, root, "teardown", false, "");
        if !r.errors.is_empty() {
            r.errors.sort_by_key(|e| (e.line, e.col));
            return Err(Errors(r.errors));
        }
        Ok(Scenario {
            target: target.expect("checked above"),
            users,
            rate,
            max_users,
            duration,
            iterations,
            ramp,
            rooms,
            delivery_wait: delivery_wait.unwrap_or(Duration::from_secs(2)),
            setup,
            flows,
            teardown,
            cookies,
            initial_cookies,
            vars,
            data,
        })
    }

    /// Reads the scenario file at `path`, its `target` resolved with `resolve` first.
    pub fn load(path: &std::path::Path, resolve: &[Resolve]) -> Result<Scenario, Errors> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Errors(vec![ConfigError::whole_file(
                &name,
                format!("cannot read the scenario: {e}"),
                "check the path given with --scenario",
            )])
        })?;
        Scenario::parse_with(&name, &text, resolve)
    }
}

fn target(r: &mut Reader, root: &dyn TableLike, resolve: &[Resolve]) -> Option<Target> {
    let Some((url, span)) = r.string(root, "target") else {
        if root.get("target").is_none() {
            r.error(
                None,
                "a scenario needs a `target`",
                "e.g. target = \"http://127.0.0.1:8080\"",
            );
        }
        return None;
    };
    match Target::parse_with(&url, resolve) {
        Ok(t) if t.path == "/" => Some(t),
        Ok(_) => {
            r.error(
                span,
                "`target` is a base URL: no path",
                "give paths in the steps, e.g. http = \"GET /login\"",
            );
            None
        }
        Err(e) => {
            r.error(span, format!("`target`: {e}"), hint_for(&e));
            None
        }
    }
}

/// `cookies = true | false | ["NAME=VALUE; attributes", ...]`: whether users keep
/// cookies, and those they start with; one that could never go to `target` (another
/// domain's, a malformed one) is an error at its place.
fn cookies(r: &mut Reader, root: &dyn TableLike, target: Option<&Target>) -> (bool, Vec<String>) {
    let Some(Value::Array(list)) = root.get("cookies").and_then(Item::as_value) else {
        return (r.boolean(root, "cookies").unwrap_or(true), Vec::new());
    };
    let mut given = Vec::new();
    for v in list.iter() {
        let Some(text) = v.as_str() else {
            r.error(
                v.span(),
                "`cookies` lists cookies as their Set-Cookie text",
                "e.g. cookies = [\"lang=en; Path=/\"]",
            );
            continue;
        };
        let refused =
            target.and_then(|t| crate::cookies::Jar::with(&t.url, &[text.to_string()]).err());
        match refused {
            Some(why) => r.error(
                v.span(),
                format!("`cookies`: {why}"),
                "give the target's host as its Domain, or no Domain",
            ),
            None => given.push(text.to_string()),
        }
    }
    (true, given)
}

fn hint_for(e: &TargetError) -> &'static str {
    match e {
        TargetError::Resolve { .. } => "check the host name, or give an IP address",
        _ => "write it as http://host:port",
    }
}

/// `users = [50, 100]` (or `users = 50`), or `rate = [20, 40]`: one of the two.
fn load(r: &mut Reader, root: &dyn TableLike) -> (Vec<usize>, Vec<f64>) {
    match (root.get("users"), root.get("rate")) {
        (Some(_), Some(rate)) => {
            let why = "a scenario's load is `users` (closed) or `rate` (open), not both";
            r.error(rate.span(), why, "keep one; run the other as a scenario of its own beside it (--scenario A --scenario B)");
            (users(r, root), Vec::new())
        }
        (None, Some(_)) => (Vec::new(), rates(r, root)),
        (Some(_), None) => (users(r, root), Vec::new()),
        (None, None) => {
            let why = "a scenario needs `users` (the closed model) or `rate` (the open model)";
            r.error(
                None,
                why,
                "e.g. users = [50, 100] (one step each), or rate = 20 (users arriving each second)",
            );
            (Vec::new(), Vec::new())
        }
    }
}

/// `rate = [20, 40]` or `rate = 20`: users arriving each second, per step.
fn rates(r: &mut Reader, root: &dyn TableLike) -> Vec<f64> {
    let item = root.get("rate").expect("looked for");
    let values: Vec<&Value> = match item.as_value() {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let mut out = Vec::new();
    for v in &values {
        let n = v.as_float().or_else(|| v.as_integer().map(|i| i as f64));
        match n {
            Some(n) if n > 0.0 && n <= 1_000_000.0 => out.push(n),
            _ => r.error(
                v.span(),
                "`rate` takes users per second, above 0 and up to 1,000,000",
                "e.g. rate = [20, 40]",
            ),
        }
    }
    if values.is_empty() {
        r.error(item.span(), "`rate` is empty", "e.g. rate = [20, 40]");
    }
    out
}

/// `users = [50, 100]` or `users = 50`.
fn users(r: &mut Reader, root: &dyn TableLike) -> Vec<usize> {
    let Some(item) = root.get("users") else {
        return Vec::new();
    };
    let values: Vec<&Value> = match item.as_value() {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let mut users = Vec::new();
    for v in &values {
        match v.as_integer() {
            Some(n) if (1..=1_000_000).contains(&n) => users.push(n as usize),
            _ => r.error(
                v.span(),
                "`users` takes whole numbers from 1 to 1,000,000",
                "e.g. users = [50, 100]",
            ),
        }
    }
    if values.is_empty() {
        r.error(item.span(), "`users` is empty", "e.g. users = [50, 100]");
    }
    users
}

/// Calls `f` with every step's table: setup, steps, flows' steps, teardown.
fn for_each_step_table(root: &dyn TableLike, mut f: impl FnMut(&dyn TableLike)) {
    for key in ["setup", "step", "teardown"] {
        tables(root, key).for_each(|t| f(t));
    }
    for flow in tables(root, "flow") {
        tables(flow, "step").for_each(|t| f(t));
    }
}

/// The `[[key]]` tables of `t`, if it has such.
fn tables<'t>(t: &'t dyn TableLike, key: &str) -> impl Iterator<Item = &'t Table> {
    t.get(key)
        .and_then(Item::as_array_of_tables)
        .into_iter()
        .flat_map(|a| a.iter())
}

/// The loop: `[[step]]` (one flow), or weighted `[[flow]]`s, one of the two.
fn flows(x: &mut steps::Reading<'_, '_>, root: &dyn TableLike) -> Vec<Flow> {
    let Some(item) = root.get("flow") else {
        let steps = section(x, root, "step", true, "");
        let name = String::from("steps");
        return vec![Flow {
            name,
            weight: 1,
            steps,
        }];
    };
    if let Some(step) = root.get("step") {
        let why = "a scenario loops over [[step]]s or over [[flow]]s, not both";
        x.r.error(
            step.span(),
            why,
            "put these steps in a [[flow]] of their own",
        );
    }
    let Some(tables) = item.as_array_of_tables() else {
        x.r.error(
            item.span(),
            "`flow` must be an array of tables",
            "write each as [[flow]]",
        );
        return Vec::new();
    };
    let mut flows = Vec::new();
    for (i, t) in tables.iter().enumerate() {
        x.r.only_keys(t, FLOW_KEYS, "a [[flow]]");
        let name =
            x.r.string(t, "name")
                .map_or_else(|| format!("flow {}", i + 1), |(n, _)| n);
        let weight = x.r.integer(t, "weight", 1_000_000).unwrap_or(1);
        if weight == 0 {
            let span = t.get("weight").and_then(Item::span);
            x.r.error(
                span,
                "a flow's `weight` is at least 1",
                "leave the flow out to run it never",
            );
        }
        let steps = section(x, t, "step", true, &format!("{name}: "));
        flows.push(Flow {
            name,
            weight: weight.max(1) as u32,
            steps,
        });
    }
    flows
}

/// The `[[name]]` tables; `required`: at least one. A step without a `name` is
/// labelled `prefix` and its number and action.
fn section(
    x: &mut steps::Reading<'_, '_>,
    root: &dyn TableLike,
    name: &str,
    required: bool,
    prefix: &str,
) -> Vec<ScenarioStep> {
    let r = &mut *x.r;
    let Some(item) = root.get(name) else {
        if required {
            r.error(
                None,
                format!("a scenario needs at least one [[{name}]]"),
                format!("add [[{name}]] tables, e.g. http = \"GET /\""),
            );
        }
        return Vec::new();
    };
    let Some(tables) = item.as_array_of_tables() else {
        r.error(
            item.span(),
            format!("`{name}` must be an array of tables"),
            format!("write each as [[{name}]]"),
        );
        return Vec::new();
    };
    tables
        .iter()
        .enumerate()
        .filter_map(|(i, t)| steps::step(x, t, name, &format!("{prefix}{}", i + 1)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_times_are_drawn_as_each_step_says_and_a_bad_one_is_told_at_its_place() {
        let text = "target = \"http://127.0.0.1:8080\"\nusers = 1\nduration = \"1s\"\n\n[[step]]\nhttp = \"GET /a\"\nthink = { between = [\"1s\", \"3s\"] }\n\n[[step]]\nhttp = \"GET /b\"\nthink = { gaussian = \"1s\", deviation = \"200ms\" }\n\n[[step]]\nhttp = \"GET /c\"\nthink = { exponential = \"2s\" }\n";
        let s = Scenario::parse("s.toml", text).unwrap();
        let secs = Duration::from_secs;
        assert_eq!(s.flows[0].steps[0].think, Think::Uniform(secs(1), secs(3)));
        let deviation = Duration::from_millis(200);
        assert_eq!(
            s.flows[0].steps[1].think,
            Think::Gaussian {
                mean: secs(1),
                deviation
            }
        );
        assert_eq!(s.flows[0].steps[2].think, Think::Exponential(secs(2)));
        let bad = "target = \"http://127.0.0.1:8080\"\nusers = 1\nduration = \"1s\"\n\n[[step]]\nhttp = \"GET /a\"\nthink = { between = [\"3s\", \"1s\"] }\n\n[[step]]\nhttp = \"GET /b\"\nthink = { gaussian = \"1s\" }\n\n[[step]]\nhttp = \"GET /c\"\nthink = { poisson = \"2s\" }\n";
        let errors = Scenario::parse("s.toml", bad).unwrap_err().to_string();
        for expected in [
            "s.toml:7:21: `between` takes two durations, the shorter first",
            "s.toml:11:9: a gaussian `think` needs its `deviation`",
            "s.toml:15:11: unknown key `poisson`",
        ] {
            assert!(errors.contains(expected), "{expected:?} in {errors}");
        }
    }

    #[test]
    fn flows_are_picked_by_weight_and_their_steps_named_after_them() {
        let text = "target = \"http://127.0.0.1:8080\"\nusers = 1\nduration = \"1s\"\n\n[[flow]]\nname = \"browse\"\nweight = 9\n[[flow.step]]\nhttp = \"GET /products\"\n\n[[flow]]\nname = \"buy\"\n[[flow.step]]\nhttp = \"POST /cart\"\nextract.order = { json = \"$.id\" }\n[[flow.step]]\nhttp = \"GET /orders/{order}\"\n";
        let s = Scenario::parse("s.toml", text).unwrap();
        let names: Vec<(&str, u32, usize)> = s
            .flows
            .iter()
            .map(|f| (f.name.as_str(), f.weight, f.steps.len()))
            .collect();
        assert_eq!(names, [("browse", 9, 1), ("buy", 1, 2)]);
        assert_eq!(s.flows[1].steps[1].name, "buy: 2 GET /orders/{order}");
        assert_eq!(s.vars.names(), ["order"]);
        let buys = (0..10_000).filter(|_| s.pick_flow().name == "buy").count();
        assert!(
            (800..1200).contains(&buys),
            "{buys} of 10,000 at weight 1 in 10"
        );
        let both = format!("{text}\n[[step]]\nhttp = \"GET /\"\n[[flow]]\nweight = 0\n[[flow.step]]\nws_send = \"x\"\nextract.a = {{ header = \"X\" }}\n");
        let errors = Scenario::parse("s.toml", &both).unwrap_err().to_string();
        for expected in [
            "s.toml:19:1: a scenario loops over [[step]]s or over [[flow]]s, not both",
            "s.toml:22:10: a flow's `weight` is at least 1",
            "s.toml:25:1: `extract` reads an HTTP response: this step sends none",
        ] {
            assert!(errors.contains(expected), "{expected:?} in {errors}");
        }
    }

    #[test]
    fn a_load_is_users_or_a_rate_of_arrivals_and_never_both() {
        let head = "target = \"http://127.0.0.1:8080\"\n";
        let step = "\n[[step]]\nhttp = \"GET /\"\n";
        let s = Scenario::parse(
            "s.toml",
            &format!("{head}rate = [20, 40.5]\nmax_users = 50\nduration = \"1s\"\n{step}"),
        )
        .unwrap();
        assert_eq!(
            (s.users.len(), s.rate.clone(), s.max_users),
            (0, vec![20.0, 40.5], 50)
        );
        let bad = format!("{head}users = 5\nrate = 20\niterations = 3\n{step}");
        let errors = Scenario::parse("s.toml", &bad).unwrap_err().to_string();
        assert!(
            errors.contains(
                "s.toml:3:8: a scenario's load is `users` (closed) or `rate` (open), not both"
            ),
            "{errors}"
        );
        let bad = format!("{head}rate = 0\niterations = 3\n{step}");
        let errors = Scenario::parse("s.toml", &bad).unwrap_err().to_string();
        assert!(
            errors.contains("s.toml:2:8: `rate` takes users per second"),
            "{errors}"
        );
        assert!(
            errors.contains("s.toml:3:14: a `rate` scenario runs for a `duration`"),
            "{errors}"
        );
        let none =
            Scenario::parse("s.toml", &format!("{head}duration = \"1s\"\n{step}")).unwrap_err();
        assert!(
            none.to_string()
                .contains("a scenario needs `users` (the closed model) or `rate`"),
            "{none}"
        );
    }

    #[test]
    fn a_scenario_reads() {
        let text = "target = \"http://127.0.0.1:8080\"\nusers = [2, 4]\nduration = \"1s\"\nrooms = 3\n\n[[step]]\nname = \"home\"\nhttp = \"GET /?room={room}\"\nexpect_status = 200\nexpect_body = \"ok\"\nthink = \"10ms\"\n\n[[step]]\nhttp = \"POST /up\"\nbody = \"hi {user}\"\nheaders = [\"Content-Type: text/plain\"]\nrepeat = 3\n";
        let s = Scenario::parse("s.toml", text).unwrap();
        assert_eq!((s.users.clone(), s.rooms), (vec![2, 4], 3));
        assert_eq!(s.duration, Some(Duration::from_secs(1)));
        assert_eq!(s.flows[0].steps.len(), 2);
        assert_eq!(
            (s.flows[0].steps[0].name.as_str(), s.flows[0].steps[0].think),
            ("home", Think::Fixed(Duration::from_millis(10)))
        );
        assert_eq!(
            (
                s.flows[0].steps[1].name.as_str(),
                s.flows[0].steps[1].repeat
            ),
            ("2 POST /up", 3)
        );
        let Action::Http { expect_status, .. } = &s.flows[0].steps[0].action else {
            panic!("not http: {:?}", s.flows[0].steps[0].action);
        };
        assert_eq!(expect_status, &vec![200]);
        assert!(!s.uses_stomp());
    }

    #[test]
    fn websocket_and_stomp_steps_read() {
        let text = "target = \"http://127.0.0.1:8080\"\nusers = 4\niterations = 2\nrooms = 2\n\n[[setup]]\nws = \"/chat\"\n[[setup]]\nstomp = \"CONNECT\"\nheaders = [\"login: guest\"]\n[[setup]]\nstomp = \"SUBSCRIBE /topic/room.{room}\"\n\n[[step]]\nstomp = \"SEND /topic/room.{room}\"\nbody = \"hi from {user}\"\n[[step]]\nws_send = \"ping\"\n[[step]]\nws_expect = \"pong\"\ntimeout = \"1s\"\n\n[[teardown]]\nstomp = \"DISCONNECT\"\nreceipt = false\n[[teardown]]\nws_close = true\n";
        let s = Scenario::parse("chat.toml", text).unwrap();
        assert_eq!(
            (s.setup.len(), s.flows[0].steps.len(), s.teardown.len()),
            (3, 3, 2)
        );
        assert!(s.uses_stomp());
        let Action::Stomp(Stomp::Subscribe {
            destination,
            receipt,
            ..
        }) = &s.setup[2].action
        else {
            panic!("{:?}", s.setup[2].action);
        };
        assert_eq!(
            (
                destination.render(&Context::bare(3, 1)).unwrap().as_str(),
                *receipt
            ),
            ("/topic/room.1", true)
        );
        assert_eq!(s.flows[0].steps[2].timeout, Some(Duration::from_secs(1)));
        assert_eq!(
            s.teardown[0].action,
            Action::Stomp(Stomp::Disconnect { receipt: false })
        );
        assert_eq!(s.teardown[1].action, Action::WsClose);
        assert_eq!(s.delivery_wait, Duration::from_secs(2));
    }

    #[test]
    fn every_problem_is_reported_with_its_position() {
        let text = "target = \"http://127.0.0.1:8080/x\"\nusers = [0]\nduration = \"soon\"\n\n[[step]]\nhtp = \"GET /\"\n\n[[step]]\nhttp = \"GET nowhere\"\nexpect_status = 99\n\n[[step]]\nws = \"/a\"\nhttp = \"GET /\"\n\n[[teardown]]\nstomp = \"PUBLISH /x\"\n";
        let errors = Scenario::parse("bad.toml", text).unwrap_err().to_string();
        for expected in [
            "bad.toml:1:10: `target` is a base URL",
            "bad.toml:2:10: `users` takes whole numbers",
            "bad.toml:3:12: `duration` is not a duration",
            "bad.toml:6:1: unknown key `htp` in a [[step]] (did you mean `http`?)",
            "bad.toml:9:8: `http` = \"GET nowhere\" is not METHOD PATH",
            "bad.toml:10:17: `expect_status` takes HTTP statuses",
            "bad.toml:13:1: a [[step]] does one thing: http, ws",
            "bad.toml:17:9: `stomp` = \"PUBLISH /x\" is not a STOMP step",
        ] {
            assert!(
                errors.contains(expected),
                "missing {expected:?} in:\n{errors}"
            );
        }
        let syntax = Scenario::parse("s.toml", "users = [1\n")
            .unwrap_err()
            .to_string();
        assert!(syntax.starts_with("s.toml:"), "{syntax}");
    }
}
