//! An experiment as data, and its TOML file.
//!
//! ```toml
//! name = "scale-out"
//! about = "app servers behind sluice, one shared database"
//! servers = [1, 2, 3]      # app servers per configuration
//! users = [20, 40, 80]     # users per step (closed model)
//! duration = "8s"          # measured time of a step
//! warmup = "2s"            # load before measuring, not counted
//! think = "0ms"
//! prove = true             # re-run the plateau with the named resource enlarged
//!
//! [lb]                     # the balancer
//! run = "sluice"           # or "nginx", "haproxy"
//! cpu = 0.5                # CPU budget, cores (absent: the machine's)
//! workers = 1
//! balance = "round_robin"  # or least_conn, random_two, peak_ewma
//! keepalive = true         # pooled upstream connections
//!
//! [app]                    # each simulated app server
//! cpu = 0.25               # CPU budget of each, cores
//! work = "2ms"             # CPU work per request
//! threads = 200            # worker pool (Tomcat's maxThreads)
//! queue = 100              # requests waiting for a thread (acceptCount)
//! max_conns = 0            # connections served at once; 0: no cap
//! delay = "0ms"            # waiting per request (I/O), no CPU
//! db_pool = 10             # connections to the database (HikariCP's pool)
//! db_queries = 1           # queries per request
//!
//! [db]                     # one simulated database shared by the app servers
//! cpu = 0.3
//! work = "1.5ms"           # CPU per query
//! threads = 8              # queries run at once
//! delay = "0ms"            # I/O per query
//! ```
//!
//! Every problem is reported at once with `file:line:col` and a hint, as configs are.

use sluice_config::toml_edit::{Item, TableLike};
use sluice_config::{ConfigError, Errors, Reader};
use std::time::Duration;

/// A duration in a report as it is written in a file: "1.5ms", "8s".
fn as_text<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&text(*d))
}

/// `d` as the experiment file writes it.
pub fn text(d: Duration) -> String {
    if d.is_zero() {
        "0ms".into()
    } else if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_micros() as f64 / 1000.0)
    }
}

/// Which balancer runs in front of the app servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LbKind {
    Sluice,
    Nginx,
    Haproxy,
}

impl LbKind {
    pub fn parse(s: &str) -> Option<LbKind> {
        match s {
            "sluice" => Some(LbKind::Sluice),
            "nginx" => Some(LbKind::Nginx),
            "haproxy" => Some(LbKind::Haproxy),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            LbKind::Sluice => "sluice",
            LbKind::Nginx => "nginx",
            LbKind::Haproxy => "haproxy",
        }
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Lb {
    pub run: LbKind,
    /// CPU budget in cores; `None`: the machine's.
    pub cpu: Option<f64>,
    pub workers: usize,
    pub balance: String,
    /// The key of `balance = "hash"`: `$arg_room`, `$cookie_NAME`, `$remote_addr`...
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash_key: Option<String>,
    pub keepalive: bool,
    /// Requests each server is given at once (sluice's `max_conns`, HAProxy's server
    /// `maxconn`, nginx's server `max_conns`); `None`: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_conns: Option<u32>,
    /// How long a request may wait for a server below its limit (sluice's
    /// `queue_timeout`, HAProxy's `timeout queue`; nginx has no queue).
    #[serde(serialize_with = "as_text")]
    pub queue_timeout: Duration,
    /// sluice's `limit = "adaptive"`: each server's limit found from its latency (sluice
    /// only: the others have no such thing).
    pub adaptive: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct App {
    pub cpu: Option<f64>,
    #[serde(serialize_with = "as_text")]
    pub work: Duration,
    pub threads: usize,
    pub queue: usize,
    pub max_conns: usize,
    #[serde(serialize_with = "as_text")]
    pub delay: Duration,
    pub db_pool: usize,
    pub db_queries: u32,
    /// WebSocket clients speak STOMP to an in-memory broker per server (Spring's simple
    /// broker): a room split over servers loses messages.
    pub stomp: bool,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Db {
    pub cpu: Option<f64>,
    #[serde(serialize_with = "as_text")]
    pub work: Duration,
    pub threads: usize,
    #[serde(serialize_with = "as_text")]
    pub delay: Duration,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Experiment {
    pub name: String,
    pub about: String,
    pub servers: Vec<usize>,
    pub users: Vec<usize>,
    #[serde(serialize_with = "as_text")]
    pub duration: Duration,
    #[serde(serialize_with = "as_text")]
    pub warmup: Duration,
    #[serde(serialize_with = "as_text")]
    pub think: Duration,
    pub prove: bool,
    pub lb: Lb,
    pub app: App,
    pub db: Option<Db>,
    /// What each user does, when not a GET loop: a `sluice bench` scenario (its name
    /// and file), whose target becomes the balancer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioFile>,
    /// Balancer settings compared side by side: each configuration runs once per
    /// variant (none: once, with `lb` as it is).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub variants: Vec<Variant>,
}

/// A scenario the experiment's users run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ScenarioFile {
    pub name: String,
    #[serde(skip)]
    pub text: String,
}

/// A named change to the balancer: `[[variant]] name = "hash" lb = { balance = "hash" }`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Variant {
    pub name: String,
    pub lb: Lb,
}

impl Default for Lb {
    fn default() -> Lb {
        Lb {
            run: LbKind::Sluice,
            cpu: None,
            workers: 1,
            balance: "round_robin".into(),
            hash_key: None,
            keepalive: true,
            max_conns: None,
            queue_timeout: Duration::from_secs(5),
            adaptive: false,
        }
    }
}

impl Default for App {
    fn default() -> App {
        App {
            cpu: None,
            work: Duration::from_millis(1),
            threads: 200,
            queue: 100,
            max_conns: 0,
            delay: Duration::ZERO,
            db_pool: 10,
            db_queries: 1,
            stomp: false,
        }
    }
}

impl Default for Db {
    fn default() -> Db {
        Db {
            cpu: None,
            work: Duration::from_millis(1),
            threads: 8,
            delay: Duration::ZERO,
        }
    }
}

const TOP_KEYS: &[&str] = &[
    "name", "about", "servers", "users", "duration", "warmup", "think", "prove", "lb", "app", "db",
    "scenario", "variant",
];
const LB_KEYS: &[&str] = &[
    "run",
    "cpu",
    "workers",
    "balance",
    "hash_key",
    "keepalive",
    "max_conns",
    "queue_timeout",
    "adaptive",
];
const APP_KEYS: &[&str] = &[
    "cpu",
    "work",
    "threads",
    "queue",
    "max_conns",
    "delay",
    "db_pool",
    "db_queries",
    "stomp",
];
const DB_KEYS: &[&str] = &["cpu", "work", "threads", "delay"];
const BALANCES: &[&str] = &[
    "round_robin",
    "least_conn",
    "random_two",
    "peak_ewma",
    "hash",
];
/// The scenarios an experiment can name instead of a file.
const SCENARIOS: &[(&str, &str)] = &[(
    "stomp-chat",
    include_str!("../../../examples/bench/stomp-chat.toml"),
)];

impl Experiment {
    /// Reads an experiment file; every problem at once, each at its `file:line:col`.
    pub fn parse(file: &str, text: &str) -> Result<Experiment, Errors> {
        let doc = Reader::parse_document(file, text).map_err(|e| Errors(vec![e]))?;
        let mut r = Reader::new(file, text);
        let top = doc.as_table();
        r.only_keys(top, TOP_KEYS, "an experiment");
        let mut e = Experiment {
            name: r
                .string(top, "name")
                .map_or_else(|| "experiment".into(), |s| s.0),
            about: r.string(top, "about").map_or_else(String::new, |s| s.0),
            servers: counts(&mut r, top, "servers").unwrap_or_else(|| vec![1, 2, 3]),
            users: counts(&mut r, top, "users").unwrap_or_else(|| vec![20, 40, 80]),
            duration: r.timeout(top, "duration").unwrap_or(Duration::from_secs(8)),
            warmup: r.duration(top, "warmup").unwrap_or(Duration::from_secs(2)),
            think: r.duration(top, "think").unwrap_or(Duration::ZERO),
            prove: r.boolean(top, "prove").unwrap_or(true),
            lb: Lb::default(),
            app: App::default(),
            db: None,
            scenario: None,
            variants: Vec::new(),
        };
        if let Some(t) = section(&mut r, top, "lb", LB_KEYS) {
            e.lb = read_lb(&mut r, t, &Lb::default());
        }
        e.scenario = scenario(&mut r, top, file);
        e.variants = variants(&mut r, top, &e.lb);
        if let Some(t) = section(&mut r, top, "app", APP_KEYS) {
            e.app = read_app(&mut r, t);
        }
        if let Some(t) = section(&mut r, top, "db", DB_KEYS) {
            e.db = Some(read_db(&mut r, t));
        }
        if r.errors.is_empty() {
            Ok(e)
        } else {
            Err(Errors(r.errors))
        }
    }

    /// Reads the experiment file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Experiment, Errors> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Errors(vec![ConfigError::whole_file(
                &file,
                format!("cannot read the experiment: {e}"),
                "give the path of a TOML experiment file, or a built-in's name (sluice lab --list)",
            )])
        })?;
        Experiment::parse(&file, &text)
    }

    /// Steps of the whole run, for the time estimate printed at the start.
    pub fn step_count(&self) -> usize {
        self.servers.len() * self.users.len() * self.variants.len().max(1)
    }

    /// The configurations' balancers: each variant's, or `lb` alone.
    pub fn balancers(&self) -> Vec<(Option<String>, Lb)> {
        if self.variants.is_empty() {
            return vec![(None, self.lb.clone())];
        }
        self.variants
            .iter()
            .map(|v| (Some(v.name.clone()), v.lb.clone()))
            .collect()
    }
}

/// A `[name]` table with only `keys` in it.
fn section<'d>(
    r: &mut Reader,
    top: &'d dyn TableLike,
    name: &str,
    keys: &[&str],
) -> Option<&'d dyn TableLike> {
    let item = top.get(name)?;
    match item.as_table_like() {
        Some(t) => {
            r.only_keys(t, keys, &format!("[{name}]"));
            Some(t)
        }
        None => {
            r.error(
                item.span(),
                format!("`{name}` must be a table"),
                format!("write it as a section: [{name}]"),
            );
            None
        }
    }
}

/// A non-empty list of positive integers.
fn counts(r: &mut Reader, t: &dyn TableLike, key: &str) -> Option<Vec<usize>> {
    let item = t.get(key)?;
    let list = match item {
        Item::Value(v) => v.as_array().map(|a| {
            a.iter()
                .map(|v| v.as_integer().filter(|n| *n > 0).map(|n| n as usize))
                .collect::<Option<Vec<_>>>()
        }),
        _ => None,
    };
    match list {
        Some(Some(list)) if !list.is_empty() => Some(list),
        _ => {
            r.error(
                item.span(),
                format!("`{key}` must be a list of whole numbers above 0"),
                format!("write e.g. {key} = [1, 2, 3]"),
            );
            None
        }
    }
}

/// A CPU budget in cores: above 0 and at most 64.
fn cores(r: &mut Reader, t: &dyn TableLike, key: &str) -> Option<f64> {
    let n = r.number(t, key)?;
    if n > 0.0 && n <= 64.0 {
        return Some(n);
    }
    let span = t.get(key).and_then(|v| v.span());
    r.error(
        span,
        format!("`{key}` = {n}: a CPU budget is in cores, above 0"),
        "e.g. cpu = 0.5 for half a core",
    );
    None
}

/// `[lb]`, or a variant's `lb = {...}` over the experiment's `base`.
fn read_lb(r: &mut Reader, t: &dyn TableLike, base: &Lb) -> Lb {
    let d = base.clone();
    let run = match r.string(t, "run") {
        Some((s, span)) => LbKind::parse(&s).unwrap_or_else(|| {
            r.error(
                span,
                format!("unknown balancer `{s}`"),
                "run is one of sluice, nginx, haproxy",
            );
            d.run
        }),
        None => d.run,
    };
    let balance = match r.string(t, "balance") {
        Some((s, _)) if BALANCES.contains(&s.as_str()) => s,
        Some((s, span)) => {
            let hint = format!("balance is one of {}", BALANCES.join(", "));
            r.error(span, format!("unknown balance `{s}`"), hint);
            d.balance
        }
        None => d.balance,
    };
    let hash_key = r.string(t, "hash_key").map(|s| s.0).or(d.hash_key);
    if balance == "hash" && hash_key.is_none() {
        let span = t.get("balance").and_then(|v| v.span());
        r.error(
            span,
            "balance = \"hash\" needs a `hash_key`",
            "add hash_key = \"$arg_room\"",
        );
    }
    Lb {
        run,
        cpu: cores(r, t, "cpu").or(d.cpu),
        workers: r
            .integer(t, "workers", 64)
            .map_or(d.workers, |n| n.max(1) as usize),
        balance,
        hash_key,
        keepalive: r.boolean(t, "keepalive").unwrap_or(d.keepalive),
        max_conns: r
            .integer(t, "max_conns", 1_000_000)
            .map(|n| n.max(1) as u32)
            .or(d.max_conns),
        queue_timeout: r.duration(t, "queue_timeout").unwrap_or(d.queue_timeout),
        adaptive: r.boolean(t, "adaptive").unwrap_or(d.adaptive),
    }
}

/// `scenario = "stomp-chat"` (built in) or a file, relative to the experiment's.
fn scenario(r: &mut Reader, top: &dyn TableLike, file: &str) -> Option<ScenarioFile> {
    let (name, span) = r.string(top, "scenario")?;
    if let Some((_, text)) = SCENARIOS.iter().find(|(n, _)| *n == name) {
        return Some(ScenarioFile {
            name,
            text: (*text).into(),
        });
    }
    let path = std::path::Path::new(file)
        .parent()
        .unwrap_or(std::path::Path::new("."))
        .join(&name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(ScenarioFile {
            name: path.display().to_string(),
            text,
        }),
        Err(e) => {
            r.error(
                span,
                format!("cannot read the scenario {}: {e}", path.display()),
                "give a sluice bench scenario file, relative to this one, or \"stomp-chat\"",
            );
            None
        }
    }
}

/// `[[variant]]` tables: a name and `lb = { ... }` over the experiment's `[lb]`.
fn variants(r: &mut Reader, top: &dyn TableLike, base: &Lb) -> Vec<Variant> {
    let Some(item) = top.get("variant") else {
        return Vec::new();
    };
    let Some(tables) = item.as_array_of_tables() else {
        r.error(
            item.span(),
            "`variant` must be a list of tables",
            "write each as [[variant]]",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for t in tables.iter() {
        r.only_keys(t, &["name", "lb"], "[[variant]]");
        let name = r
            .string(t, "name")
            .map_or_else(|| format!("variant {}", out.len() + 1), |s| s.0);
        let lb = match t.get("lb").and_then(|i| i.as_table_like()) {
            Some(lb) => {
                r.only_keys(lb, LB_KEYS, "a variant's lb");
                read_lb(r, lb, base)
            }
            None => base.clone(),
        };
        out.push(Variant { name, lb });
    }
    out
}

fn read_app(r: &mut Reader, t: &dyn TableLike) -> App {
    let d = App::default();
    let int = |r: &mut Reader, key: &str, default: usize| {
        r.integer(t, key, 100_000).map_or(default, |n| n as usize)
    };
    App {
        cpu: cores(r, t, "cpu"),
        work: r.duration(t, "work").unwrap_or(d.work),
        threads: int(r, "threads", d.threads),
        queue: int(r, "queue", d.queue),
        max_conns: int(r, "max_conns", d.max_conns),
        delay: r.duration(t, "delay").unwrap_or(d.delay),
        db_pool: int(r, "db_pool", d.db_pool).max(1),
        db_queries: int(r, "db_queries", d.db_queries as usize) as u32,
        stomp: r.boolean(t, "stomp").unwrap_or(d.stomp),
    }
}

fn read_db(r: &mut Reader, t: &dyn TableLike) -> Db {
    let d = Db::default();
    Db {
        cpu: cores(r, t, "cpu"),
        work: r.duration(t, "work").unwrap_or(d.work),
        threads: r
            .integer(t, "threads", 10_000)
            .map_or(d.threads, |n| n.max(1) as usize),
        delay: r.duration(t, "delay").unwrap_or(d.delay),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_with_defaults_for_what_it_leaves_out() {
        let e = Experiment::parse(
            "x.toml",
            "name = \"t\"\nservers = [1, 2]\n[app]\ncpu = 0.25\nwork = \"2ms\"\n[db]\nthreads = 2\n",
        )
        .unwrap();
        assert_eq!(e.servers, vec![1, 2]);
        assert_eq!(e.app.cpu, Some(0.25));
        assert_eq!(e.app.work, Duration::from_millis(2));
        assert_eq!(e.db.as_ref().unwrap().threads, 2);
        assert_eq!(e.lb.run, LbKind::Sluice);
    }

    #[test]
    fn variants_change_the_balancer_over_the_experiment_s_own() {
        let text = "scenario = \"stomp-chat\"\n[lb]\nworkers = 2\n[[variant]]\nname = \"rr\"\n[[variant]]\nname = \"hash\"\nlb = { balance = \"hash\", hash_key = \"$arg_room\" }\n";
        let e = Experiment::parse("x.toml", text).unwrap();
        let b = e.balancers();
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].0.as_deref(), Some("rr"));
        assert_eq!(
            (b[0].1.balance.as_str(), b[0].1.workers),
            ("round_robin", 2)
        );
        assert_eq!(b[1].1.hash_key.as_deref(), Some("$arg_room"));
        assert_eq!(
            b[1].1.workers, 2,
            "what a variant leaves out is the experiment's"
        );
        assert!(e.scenario.unwrap().text.contains("SUBSCRIBE"));
        let bad =
            "scenario = \"nope.toml\"\n[[variant]]\nlb = { balance = \"hash\", wieght = 1 }\n";
        let errors = Experiment::parse("x.toml", bad).unwrap_err().to_string();
        assert!(
            errors.contains("x.toml:1:12: cannot read the scenario"),
            "{errors}"
        );
        assert!(errors.contains("needs a `hash_key`"), "{errors}");
        assert!(errors.contains("unknown key `wieght`"), "{errors}");
    }

    #[test]
    fn every_problem_is_reported_with_its_place() {
        let text = "servers = [0]\n[lb]\nrun = \"envoy\"\n[app]\ntreads = 3\ncpu = -1\n";
        let errors = Experiment::parse("x.toml", text).unwrap_err().to_string();
        assert!(errors.contains("x.toml:1:11: `servers`"), "{errors}");
        assert!(
            errors.contains("x.toml:3:7: unknown balancer `envoy`"),
            "{errors}"
        );
        assert!(
            errors.contains("x.toml:5:1: unknown key `treads`"),
            "{errors}"
        );
        assert!(errors.contains("did you mean `threads`?"), "{errors}");
        assert!(errors.contains("x.toml:6:7: `cpu` = -1"), "{errors}");
    }
}
