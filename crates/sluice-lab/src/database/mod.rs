//! Inside a database: its sessions sampled four times a second (active session history,
//! the method of Performance Insights' "DB load by wait event" and pg_wait_sampling),
//! through a read-only URL: PostgreSQL's `pg_stat_activity`, MySQL's and MariaDB's
//! process list and InnoDB transactions. Each sample counts the sessions running (on
//! CPU), waiting on a lock, on I/O or on something else, and the statements that wait
//! and hold; the counts add up, so a step is the difference of two readings, as for
//! every other counter the lab reads.
//!
//! Once a second it also reads the statements' own totals, where the database keeps them
//! (PostgreSQL's `pg_stat_statements`, MySQL's and MariaDB's statement digests in
//! `performance_schema`): a step's difference is its Top SQL, the statements that took
//! the database's time, by time.
//!
//! It only reads: one connection, one query a sample, no table of the user's touched.

pub mod exported;
mod mysql;
mod postgres;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a database's sessions are sampled: often enough that a 10 s step has 40
/// samples of sessions whose transactions last milliseconds, at one cheap query each.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Samples between two reads of the statements' totals: once a second.
const STATEMENTS_EVERY: u64 = 4;

/// The kinds of database the lab reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Postgres,
    Mysql,
}

/// A database's read-only URL, as given to `--tier`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbUrl {
    pub kind: Kind,
    /// As given, password and all: what the client connects with.
    pub url: String,
    pub host: String,
    pub port: u16,
}

impl DbUrl {
    /// `postgres://`, `postgresql://`, `mysql://` or `mariadb://` URLs; `None` for
    /// anything else.
    pub fn parse(url: &str) -> Option<Result<DbUrl, String>> {
        let (scheme, rest) = url.split_once("://")?;
        let (kind, default_port) = match scheme {
            "postgres" | "postgresql" => (Kind::Postgres, 5432),
            "mysql" | "mariadb" => (Kind::Mysql, 3306),
            _ => return None,
        };
        let authority = rest.split(['/', '?']).next().unwrap_or("");
        let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if hostport.is_empty() {
            return Some(Err("a host: write SCHEME://USER@HOST:PORT/DATABASE".into()));
        }
        let (host, port) = match split_port(hostport) {
            (host, None) => (host, default_port),
            (host, Some(p)) => match p.parse::<u16>() {
                Ok(port) => (host, port),
                Err(_) => return Some(Err(format!("{p:?} is not a port"))),
            },
        };
        Some(Ok(DbUrl {
            kind,
            url: url.to_string(),
            host: host.to_string(),
            port,
        }))
    }

    /// The URL without its password, for reports and errors.
    pub fn shown(&self) -> String {
        crate::url::masked(&self.url)
    }

    /// On this machine's loopback: its process can be found by its port.
    pub fn is_local(&self) -> bool {
        crate::url::is_loopback_host(&self.host)
    }

    /// One sampling connection.
    pub fn connect(&self) -> Result<Box<dyn Sessions>, String> {
        match self.kind {
            Kind::Postgres => postgres::connect(&self.url).map(|c| Box::new(c) as _),
            Kind::Mysql => mysql::connect(&self.url).map(|c| Box::new(c) as _),
        }
    }
}

/// `HOST[:PORT]` or `[V6][:PORT]` split into the host and the port's text.
fn split_port(hostport: &str) -> (&str, Option<&str>) {
    if let Some(v6) = hostport.strip_prefix('[') {
        let (host, rest) = v6.split_once(']').unwrap_or((v6, ""));
        return (host, rest.strip_prefix(':'));
    }
    match hostport.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (hostport, None),
    }
}

/// What a session was doing when sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Running a statement, waiting on nothing the database names: on CPU (or, on
    /// MySQL without performance_schema, on CPU or I/O).
    Running,
    /// Waiting for a lock another session holds.
    Lock,
    /// Waiting on a read or write.
    Io,
    /// Waiting on anything else (internal latches, `pg_sleep`, replication).
    Other,
    /// In a transaction, between statements: waiting on its client, holding its locks.
    IdleInTransaction,
}

impl Class {
    pub fn key(self) -> &'static str {
        match self {
            Class::Running => "running",
            Class::Lock => "lock",
            Class::Io => "io",
            Class::Other => "other",
            Class::IdleInTransaction => "idle_in_transaction",
        }
    }
}

/// One session at one moment.
#[derive(Debug, Clone)]
pub struct Session {
    pub class: Class,
    /// The wait, as the database names it (`Lock:transactionid`, `row lock (InnoDB)`).
    pub event: Option<String>,
    /// Its statement, or the last one of an idle transaction.
    pub statement: Option<String>,
    /// For a lock wait: the statement of the session holding the lock, where known.
    pub blocker: Option<String>,
}

/// One sample of a database.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Sessions doing something (idle ones are only counted in `connections`).
    pub sessions: Vec<Session>,
    pub connections: u64,
    /// Connections a client may open before the database refuses one.
    pub max_connections: u64,
    /// Statements hidden for want of privileges.
    pub hidden: bool,
    /// Counts only, no statements: read from an exporter's metrics, not a URL.
    pub counts_only: bool,
}

/// A statement's totals since the database began counting: its calls, and the time it
/// took, ms.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatementTime {
    pub calls: u64,
    pub ms: f64,
}

/// A database the lab can sample.
pub trait Sessions: Send {
    fn sample(&mut self) -> Result<Snapshot, String>;
    /// The statements' totals (the most time-consuming first, a few dozen), by their
    /// text; or why the database keeps none the lab can read (what to turn on).
    fn statement_times(&mut self) -> Result<Vec<(String, StatementTime)>, String>;
}

/// A database's samples added up since its sampler started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbReading {
    pub samples: u64,
    /// Session-samples by class (`Class::key`): divided by `samples`, average sessions.
    pub sessions: BTreeMap<String, u64>,
    /// Samples in which at least one session was of the class.
    pub samples_with: BTreeMap<String, u64>,
    /// Session-samples by wait event.
    pub events: BTreeMap<String, u64>,
    /// Session-samples of each statement, by class (`Class::key`): what ran, what
    /// waited on a lock, on I/O.
    pub statements: BTreeMap<String, BTreeMap<String, u64>>,
    /// Session-samples of each statement holding a lock others waited for.
    pub holding: BTreeMap<String, u64>,
    /// Connections, summed over samples; samples at `max_connections`.
    pub connections: u64,
    pub at_max: u64,
    pub max_connections: u64,
    pub hidden: bool,
    /// Read from an exporter's counts (`exported`): no statements, no blockers.
    pub counts_only: bool,
    /// The last failure to sample, if the last sample failed.
    pub error: Option<String>,
    /// The statements' totals as the database counts them, by text (since it began; a
    /// step's are the difference of two readings).
    pub statement_times: BTreeMap<String, StatementTime>,
    /// Why the statements' totals are not read, when they are not.
    pub statement_times_unread: Option<String>,
    /// The sampling queries' own time, seconds, as the lab waited for them: what
    /// sampling cost the database, at most.
    pub query_s: f64,
}

impl DbReading {
    pub(crate) fn add(&mut self, s: &Snapshot) {
        self.samples += 1;
        self.connections += s.connections;
        self.max_connections = s.max_connections;
        self.at_max += u64::from(s.max_connections > 0 && s.connections >= s.max_connections);
        self.hidden |= s.hidden;
        self.counts_only |= s.counts_only;
        self.error = None;
        let mut seen = std::collections::BTreeSet::new();
        for session in &s.sessions {
            let key = session.class.key().to_string();
            *self.sessions.entry(key.clone()).or_default() += 1;
            seen.insert(key.clone());
            if let Some(e) = &session.event {
                *self.events.entry(e.clone()).or_default() += 1;
            }
            let statement = session.statement.clone().unwrap_or_default();
            let of_class = self.statements.entry(key.clone()).or_default();
            *of_class.entry(statement).or_default() += 1;
            if session.class == Class::Lock {
                let holder = session.blocker.clone().unwrap_or_default();
                *self.holding.entry(holder).or_default() += 1;
            }
        }
        for key in seen {
            *self.samples_with.entry(key).or_default() += 1;
        }
    }

    /// What happened between `earlier` and this reading.
    pub fn since(&self, earlier: &DbReading) -> DbReading {
        let minus = |a: &BTreeMap<String, u64>, b: &BTreeMap<String, u64>| {
            a.iter()
                .map(|(k, v)| (k.clone(), v.saturating_sub(b.get(k).copied().unwrap_or(0))))
                .filter(|(_, v)| *v > 0)
                .collect()
        };
        DbReading {
            samples: self.samples.saturating_sub(earlier.samples),
            sessions: minus(&self.sessions, &earlier.sessions),
            samples_with: minus(&self.samples_with, &earlier.samples_with),
            events: minus(&self.events, &earlier.events),
            statements: self
                .statements
                .iter()
                .map(|(class, now)| {
                    let before = earlier.statements.get(class).cloned().unwrap_or_default();
                    (class.clone(), minus(now, &before))
                })
                .collect(),
            holding: minus(&self.holding, &earlier.holding),
            statement_times: self
                .statement_times
                .iter()
                .filter_map(|(text, now)| {
                    let before = earlier
                        .statement_times
                        .get(text)
                        .copied()
                        .unwrap_or_default();
                    let calls = now.calls.checked_sub(before.calls).filter(|c| *c > 0)?;
                    Some((
                        text.clone(),
                        StatementTime {
                            calls,
                            ms: (now.ms - before.ms).max(0.0),
                        },
                    ))
                })
                .collect(),
            statement_times_unread: self.statement_times_unread.clone(),
            connections: self.connections.saturating_sub(earlier.connections),
            at_max: self.at_max.saturating_sub(earlier.at_max),
            max_connections: self.max_connections,
            hidden: self.hidden,
            counts_only: self.counts_only,
            error: self.error.clone(),
            query_s: (self.query_s - earlier.query_s).max(0.0),
        }
    }

    /// Average sessions of a class over the samples.
    pub fn average(&self, class: Class) -> f64 {
        let n = self.sessions.get(class.key()).copied().unwrap_or(0);
        n as f64 / self.samples.max(1) as f64
    }

    /// The statements of a class's sessions, by session-samples.
    pub fn statements_of(&self, class: Class) -> BTreeMap<String, u64> {
        self.statements
            .get(class.key())
            .cloned()
            .unwrap_or_default()
    }

    /// The statements that took the most time, most first: (text, its time, its share
    /// of all the statements' time).
    pub fn top_sql(&self, n: usize) -> Vec<(&str, StatementTime, f64)> {
        let total: f64 = self.statement_times.values().map(|t| t.ms).sum();
        let mut all: Vec<_> = self.statement_times.iter().collect();
        all.sort_by(|a, b| b.1.ms.total_cmp(&a.1.ms));
        all.into_iter()
            .take(n)
            .map(|(text, t)| (text.as_str(), *t, t.ms / total.max(f64::EPSILON)))
            .collect()
    }

    /// The share of samples with at least one session of a class.
    pub fn share_with(&self, class: Class) -> f64 {
        let n = self.samples_with.get(class.key()).copied().unwrap_or(0);
        n as f64 / self.samples.max(1) as f64
    }
}

/// The most frequent key of a tally and its share of the whole.
pub fn top(tally: &BTreeMap<String, u64>) -> Option<(&str, f64)> {
    let total: u64 = tally.values().sum();
    tally
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(k, n)| (k.as_str(), *n as f64 / total.max(1) as f64))
}

/// A statement as reports show it: whitespace collapsed, at most 120 characters.
pub fn statement_text(raw: &str) -> String {
    let one_line = raw.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(117) {
        Some((i, _)) => format!("{}...", &one_line[..i]),
        None => one_line,
    }
}

/// A thread sampling one database every [`SAMPLE_EVERY`] until dropped; its readings
/// add up.
pub struct DbSampler {
    reading: Arc<Mutex<DbReading>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl DbSampler {
    /// Starts sampling through `conn`, already connected (so a wrong URL is refused
    /// before the run, not found in its report).
    pub fn start(db: DbUrl, conn: Box<dyn Sessions>) -> DbSampler {
        let reading = Arc::new(Mutex::new(DbReading::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (reading, stop) = (reading.clone(), stop.clone());
            std::thread::spawn(move || sample_until(db, conn, &reading, &stop))
        };
        DbSampler {
            reading,
            stop,
            thread: Some(thread),
        }
    }

    /// The samples so far.
    pub fn reading(&self) -> DbReading {
        self.reading.lock().expect("not poisoned").clone()
    }
}

fn sample_until(
    db: DbUrl,
    mut conn: Box<dyn Sessions>,
    reading: &Mutex<DbReading>,
    stop: &AtomicBool,
) {
    let mut next = Instant::now();
    let mut sampled: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        // The statements' totals once a second: the step's Top SQL is their difference.
        if sampled.is_multiple_of(STATEMENTS_EVERY) {
            let times = conn.statement_times();
            let mut reading = reading.lock().expect("not poisoned");
            match times {
                Ok(times) => {
                    reading.statement_times = times.into_iter().collect();
                    reading.statement_times_unread = None;
                }
                Err(why) => reading.statement_times_unread = Some(why),
            }
        }
        sampled += 1;
        let started = Instant::now();
        let sample = conn.sample();
        reading.lock().expect("not poisoned").query_s += started.elapsed().as_secs_f64();
        match sample {
            Ok(s) => reading.lock().expect("not poisoned").add(&s),
            Err(e) => {
                reading.lock().expect("not poisoned").error = Some(e);
                // A dropped connection (the database restarted) is made again.
                if let Ok(c) = db.connect() {
                    conn = c;
                }
            }
        }
        next += SAMPLE_EVERY;
        while Instant::now() < next && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(10));
        }
        next = next.max(Instant::now() - SAMPLE_EVERY);
    }
}

impl Drop for DbSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steps_top_sql_is_the_difference_of_the_totals_most_time_first() {
        let at = |pairs: &[(&str, u64, f64)]| DbReading {
            statement_times: pairs
                .iter()
                .map(|(t, calls, ms)| {
                    (
                        t.to_string(),
                        StatementTime {
                            calls: *calls,
                            ms: *ms,
                        },
                    )
                })
                .collect(),
            ..DbReading::default()
        };
        let before = at(&[("fast", 1000, 100.0), ("slow", 10, 500.0), ("idle", 5, 5.0)]);
        let after = at(&[
            ("fast", 1900, 190.0),
            ("slow", 110, 5500.0),
            ("idle", 5, 5.0),
        ]);
        let step = after.since(&before);
        let top = step.top_sql(3);
        let names: Vec<&str> = top.iter().map(|t| t.0).collect();
        // Only what ran in the step; the slow one first by time, though fewer calls.
        assert_eq!(names, ["slow", "fast"]);
        assert_eq!(
            top[0].1,
            StatementTime {
                calls: 100,
                ms: 5000.0
            }
        );
        assert!((top[0].2 - 5000.0 / 5090.0).abs() < 1e-9);
    }

    #[test]
    fn database_urls_are_read_with_their_kind_host_and_port() {
        let pg = DbUrl::parse("postgres://lab:secret@127.0.0.1:5433/shop")
            .unwrap()
            .unwrap();
        assert_eq!(
            (pg.kind, pg.host.as_str(), pg.port),
            (Kind::Postgres, "127.0.0.1", 5433)
        );
        assert_eq!(pg.shown(), "postgres://lab:***@127.0.0.1:5433/shop");
        assert!(pg.is_local());
        let my = DbUrl::parse("mysql://root@db.internal/shop")
            .unwrap()
            .unwrap();
        assert_eq!(
            (my.kind, my.port, my.is_local()),
            (Kind::Mysql, 3306, false)
        );
        assert_eq!(my.shown(), "mysql://root@db.internal/shop");
        let v6 = DbUrl::parse("postgresql://u@[::1]:6000/x")
            .unwrap()
            .unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 6000));
        assert!(DbUrl::parse("http://h:9100/metrics").is_none());
        assert!(DbUrl::parse("mysql://u@h:port/x").unwrap().is_err());
        assert!(DbUrl::parse("mysql:///x").unwrap().is_err());
    }

    fn session(class: Class, statement: &str, blocker: Option<&str>) -> Session {
        Session {
            class,
            event: (class == Class::Lock).then(|| "Lock:transactionid".to_string()),
            statement: Some(statement.into()),
            blocker: blocker.map(String::from),
        }
    }

    #[test]
    fn samples_add_up_and_a_step_is_their_difference() {
        let hot = "UPDATE stock SET n = n - 1 WHERE id = 1";
        let waiting = Snapshot {
            sessions: vec![
                session(Class::Lock, hot, Some(hot)),
                session(Class::Lock, hot, Some(hot)),
                session(Class::IdleInTransaction, hot, None),
            ],
            connections: 10,
            max_connections: 10,
            hidden: false,
            counts_only: false,
        };
        let running = Snapshot {
            sessions: vec![session(Class::Running, "SELECT 1", None)],
            connections: 4,
            max_connections: 10,
            hidden: false,
            counts_only: false,
        };
        let mut r = DbReading::default();
        r.add(&running);
        let before = r.clone();
        r.add(&waiting);
        r.add(&waiting);
        r.add(&running);
        let step = r.since(&before);
        assert_eq!(step.samples, 3);
        assert_eq!(step.average(Class::Lock), 4.0 / 3.0);
        assert_eq!(step.share_with(Class::Lock), 2.0 / 3.0);
        assert_eq!(step.average(Class::Running), 1.0 / 3.0);
        assert_eq!(step.at_max, 2);
        assert_eq!(top(&step.statements_of(Class::Lock)), Some((hot, 1.0)));
        assert_eq!(
            top(&step.statements_of(Class::Running)),
            Some(("SELECT 1", 1.0))
        );
        assert_eq!(top(&step.holding), Some((hot, 1.0)));
        assert_eq!(step.events["Lock:transactionid"], 4);
    }

    #[test]
    fn statements_are_shown_on_one_line_and_cut() {
        assert_eq!(
            statement_text("UPDATE  t\n   SET n = 1"),
            "UPDATE t SET n = 1"
        );
        let long = "x".repeat(300);
        assert_eq!(statement_text(&long).len(), 120);
    }
}
