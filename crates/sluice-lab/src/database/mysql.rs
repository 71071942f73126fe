//! MySQL's and MariaDB's sessions from `information_schema`: the process list (each
//! connection's command, state and statement), InnoDB's transactions (`LOCK WAIT`: a
//! row lock), and who blocks whom (MariaDB's `INNODB_LOCK_WAITS`, MySQL 8's
//! `performance_schema.data_lock_waits`). Needs the `PROCESS` privilege to see other
//! users' connections. Without performance_schema's wait events a running statement
//! is on CPU or reading: the process's own CPU tells which.

use super::{statement_text, Class, Session, Sessions, Snapshot, StatementTime};
use mysql::prelude::Queryable;
use std::collections::HashMap;
use std::time::Duration;

const SESSIONS: &str = "SELECT p.COMMAND, p.STATE, p.INFO, t.trx_state, CAST(t.trx_id AS CHAR)
  FROM information_schema.PROCESSLIST p
  LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
  WHERE p.ID <> CONNECTION_ID()";

/// Who blocks whom: (waiting transaction, blocking transaction, the blocker's statement,
/// its connection's). Most rows are a waiter blocked by another waiter queued ahead of it
/// for the same row: the holder is found by following them ([`holders`]).
const BLOCKERS: [&str; 2] = [
    // MariaDB, MySQL 5.7
    "SELECT CAST(w.requesting_trx_id AS CHAR), CAST(w.blocking_trx_id AS CHAR), b.trx_query, p.INFO
       FROM information_schema.INNODB_LOCK_WAITS w
       JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
       LEFT JOIN information_schema.PROCESSLIST p ON p.ID = b.trx_mysql_thread_id",
    // MySQL 8
    "SELECT CAST(w.REQUESTING_ENGINE_TRANSACTION_ID AS CHAR),
            CAST(w.BLOCKING_ENGINE_TRANSACTION_ID AS CHAR), b.trx_query, p.INFO
       FROM performance_schema.data_lock_waits w
       JOIN information_schema.INNODB_TRX b ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID
       LEFT JOIN information_schema.PROCESSLIST p ON p.ID = b.trx_mysql_thread_id",
];

/// The statement digests' totals, the most time-consuming first (the timer counts
/// picoseconds).
const STATEMENT_TIMES: &str = "SELECT DIGEST_TEXT, CAST(COUNT_STAR AS CHAR),
    CAST(SUM_TIMER_WAIT / 1000000000 AS CHAR)
  FROM performance_schema.events_statements_summary_by_digest
  WHERE DIGEST_TEXT IS NOT NULL ORDER BY SUM_TIMER_WAIT DESC LIMIT 50";

pub struct Mysql {
    conn: mysql::Conn,
    max_connections: u64,
    /// Which of [`BLOCKERS`] this server answers (found at the first lock wait).
    blockers: Option<usize>,
}

pub fn connect(url: &str) -> Result<Mysql, String> {
    // The driver knows one scheme.
    let url = match url.strip_prefix("mariadb://") {
        Some(rest) => format!("mysql://{rest}"),
        None => url.to_string(),
    };
    let opts = mysql::Opts::from_url(&url).map_err(|e| e.to_string())?;
    let opts = mysql::OptsBuilder::from_opts(opts)
        .tcp_connect_timeout(Some(Duration::from_secs(2)))
        .read_timeout(Some(Duration::from_secs(2)));
    let mut conn = mysql::Conn::new(opts).map_err(|e| e.to_string())?;
    let max: Option<u64> = conn
        .query_first("SELECT @@max_connections")
        .map_err(|e| e.to_string())?;
    // Refused here, not at every sample, when the PROCESS privilege is missing.
    conn.query_drop("SELECT 1 FROM information_schema.INNODB_TRX LIMIT 1")
        .map_err(|e| {
            format!("{e} (the lab reads InnoDB's transactions: GRANT PROCESS ON *.* TO the user)")
        })?;
    Ok(Mysql {
        conn,
        max_connections: max.unwrap_or(0),
        blockers: None,
    })
}

type Row = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

impl Sessions for Mysql {
    fn sample(&mut self) -> Result<Snapshot, String> {
        let rows: Vec<Row> = self.conn.query(SESSIONS).map_err(|e| e.to_string())?;
        let waiting = rows.iter().any(|r| r.3.as_deref() == Some("LOCK WAIT"));
        let blockers = if waiting {
            self.blockers()
        } else {
            HashMap::new()
        };
        let mut snapshot = Snapshot {
            connections: rows.len() as u64 + 1,
            max_connections: self.max_connections,
            ..Snapshot::default()
        };
        for (command, state, info, trx_state, trx_id) in rows {
            let Some(class) = classify(
                command.as_deref(),
                state.as_deref(),
                trx_state.as_deref(),
                trx_id.is_some(),
            ) else {
                continue;
            };
            let event = match class {
                Class::Lock if trx_state.as_deref() == Some("LOCK WAIT") => {
                    Some("row lock (InnoDB)".to_string())
                }
                Class::Lock => state.clone(),
                _ => None,
            };
            let blocker = trx_id.and_then(|id| blockers.get(&id).cloned());
            snapshot.sessions.push(Session {
                class,
                event,
                statement: info.as_deref().map(statement_text),
                blocker,
            });
        }
        Ok(snapshot)
    }

    fn statement_times(&mut self) -> Result<Vec<(String, StatementTime)>, String> {
        let on: Option<String> = self
            .conn
            .query_first("SELECT CAST(@@performance_schema AS CHAR)")
            .map_err(|e| e.to_string())?;
        if on.as_deref() != Some("1") {
            return Err("performance_schema is off: set performance_schema = ON in the server's config (a restart) to see its statements' totals".into());
        }
        let rows: Vec<(Option<String>, Option<String>, Option<String>)> = self
            .conn
            .query(STATEMENT_TIMES)
            .map_err(|e| format!("performance_schema's statement digests: {e}"))?;
        Ok(rows
            .into_iter()
            .filter_map(|(text, calls, ms)| {
                let time = StatementTime {
                    calls: calls?.parse().ok()?,
                    ms: ms?.parse().ok()?,
                };
                Some((statement_text(&text?), time))
            })
            .collect())
    }
}

/// A waiting transaction, its blocker, the blocker's statement, and its connection's.
type Blocker = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

impl Mysql {
    /// Each waiting transaction's holder's statement (empty: the holder runs none, idle
    /// in its transaction), from whichever table this server has; none when neither
    /// answers.
    fn blockers(&mut self) -> HashMap<String, String> {
        let order: Vec<usize> = match self.blockers {
            Some(i) => vec![i],
            None => (0..BLOCKERS.len()).collect(),
        };
        for i in order {
            let rows: Result<Vec<Blocker>, _> = self.conn.query(BLOCKERS[i]);
            if let Ok(rows) = rows {
                self.blockers = Some(i);
                let waits = rows
                    .into_iter()
                    .filter_map(|(waiter, blocker, trx_query, info)| {
                        let statement = trx_query.or(info).map(|s| statement_text(&s));
                        Some((waiter?, blocker?, statement))
                    });
                return holders(waits);
            }
        }
        HashMap::new()
    }
}

/// Each waiter's holder's statement (empty when it runs none), from `(waiter, blocker,
/// the blocker's statement)` rows: a blocker that waits too is followed to the
/// transaction it waits on, until one that waits on nothing (the holder). A cycle (a
/// deadlock InnoDB has not broken yet) ends at the last transaction before it repeats.
fn holders(
    waits: impl Iterator<Item = (String, String, Option<String>)>,
) -> HashMap<String, String> {
    let mut blocked_by: HashMap<String, String> = HashMap::new();
    let mut statement: HashMap<String, String> = HashMap::new();
    for (waiter, blocker, text) in waits {
        statement.insert(blocker.clone(), text.unwrap_or_default());
        // A waiter blocked by several (a shared lock's holders) follows the first.
        blocked_by.entry(waiter).or_insert(blocker);
    }
    let holder_of = |waiter: &String| {
        let mut at = blocked_by.get(waiter)?;
        let mut seen = vec![waiter];
        while let Some(next) = blocked_by.get(at).filter(|n| !seen.contains(n)) {
            seen.push(at);
            at = next;
        }
        statement.get(at).cloned()
    };
    blocked_by
        .keys()
        .filter_map(|w| Some((w.clone(), holder_of(w)?)))
        .collect()
}

/// A connection's class from its command, state and transaction; `None` when idle.
fn classify(
    command: Option<&str>,
    state: Option<&str>,
    trx_state: Option<&str>,
    in_transaction: bool,
) -> Option<Class> {
    match command? {
        "Sleep" if in_transaction => Some(Class::IdleInTransaction),
        "Query" | "Execute" => {
            let lock_state = state.is_some_and(|s| s.to_ascii_lowercase().contains("lock"));
            if trx_state == Some("LOCK WAIT") || lock_state {
                Some(Class::Lock)
            } else {
                Some(Class::Running)
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_classed_by_command_state_and_transaction() {
        let table = [
            (
                Some("Query"),
                Some("Updating"),
                Some("LOCK WAIT"),
                true,
                Some(Class::Lock),
            ),
            (
                Some("Query"),
                Some("Waiting for table metadata lock"),
                None,
                false,
                Some(Class::Lock),
            ),
            (
                Some("Query"),
                Some("Sending data"),
                Some("RUNNING"),
                true,
                Some(Class::Running),
            ),
            (Some("Execute"), None, None, false, Some(Class::Running)),
            (
                Some("Sleep"),
                None,
                Some("RUNNING"),
                true,
                Some(Class::IdleInTransaction),
            ),
            (Some("Sleep"), None, None, false, None),
            (Some("Daemon"), None, None, false, None),
            (None, None, None, false, None),
        ];
        for (command, state, trx, in_trx, class) in table {
            assert_eq!(
                classify(command, state, trx, in_trx),
                class,
                "{command:?} {state:?}"
            );
        }
    }

    #[test]
    fn a_waiter_queued_behind_another_waiter_is_held_by_the_holder() {
        // 12 holds the row, idle in its transaction; 13 waits on it, 14 and 15 on 13.
        let rows = [
            ("13", "12", None),
            ("14", "13", Some("UPDATE stock SET n = n - 1 WHERE id = 1")),
            ("15", "13", Some("UPDATE stock SET n = n - 1 WHERE id = 1")),
            ("15", "14", Some("UPDATE stock SET n = n - 1 WHERE id = 1")),
        ];
        let waits = rows
            .iter()
            .map(|(w, b, s)| (w.to_string(), b.to_string(), s.map(String::from)));
        let found = holders(waits);
        for waiter in ["13", "14", "15"] {
            assert_eq!(
                found[waiter], "",
                "{waiter}: held by 12, which runs no statement"
            );
        }
        // A deadlock not broken yet: each waits on the other; neither loops forever.
        let cycle = [("1", "2", Some("A")), ("2", "1", Some("B"))]
            .map(|(w, b, s)| (w.to_string(), b.to_string(), s.map(String::from)));
        assert_eq!(holders(cycle.into_iter()).len(), 2);
    }
}
