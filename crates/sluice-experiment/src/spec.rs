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
    pub keepalive: bool,
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
}

impl Default for Lb {
    fn default() -> Lb {
        Lb {
            run: LbKind::Sluice,
            cpu: None,
            workers: 1,
            balance: "round_robin".into(),
            keepalive: true,
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
];
const LB_KEYS: &[&str] = &["run", "cpu", "workers", "balance", "keepalive"];
const APP_KEYS: &[&str] = &[
    "cpu",
    "work",
    "threads",
    "queue",
    "max_conns",
    "delay",
    "db_pool",
    "db_queries",
];
const DB_KEYS: &[&str] = &["cpu", "work", "threads", "delay"];
const BALANCES: &[&str] = &["round_robin", "least_conn", "random_two", "peak_ewma"];

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
        };
        if let Some(t) = section(&mut r, top, "lb", LB_KEYS) {
            e.lb = read_lb(&mut r, t);
        }
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
        self.servers.len() * self.users.len()
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

fn read_lb(r: &mut Reader, t: &dyn TableLike) -> Lb {
    let d = Lb::default();
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
    Lb {
        run,
        cpu: cores(r, t, "cpu"),
        workers: r
            .integer(t, "workers", 64)
            .map_or(d.workers, |n| n.max(1) as usize),
        balance,
        keepalive: r.boolean(t, "keepalive").unwrap_or(d.keepalive),
    }
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
