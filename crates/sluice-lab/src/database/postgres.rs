//! PostgreSQL's sessions from `pg_stat_activity`: each client backend's state, what it
//! waits on (`wait_event_type`/`wait_event`), its statement, and for a lock wait the
//! statement of the session holding the lock (`pg_blocking_pids`). Statements of other
//! users' sessions need `pg_read_all_stats` (or a superuser).

use super::{statement_text, Class, Session, Sessions, Snapshot, StatementTime};
use std::time::Duration;

/// The sessions of the whole server, except this one (other users' sessions show as a
/// row with a hidden statement and nothing else, to a user without the privilege).
/// `pg_blocking_pids` is asked only for a session waiting on a lock: it takes the lock
/// manager's locks to answer. Of the sessions it names, one that is not waiting on a
/// lock itself is the holder (the others queued ahead of this one for the same lock).
const SESSIONS: &str = "SELECT a.state, a.wait_event_type, a.wait_event, a.query,
    CASE WHEN a.wait_event_type = 'Lock' THEN
        (SELECT b.query FROM pg_stat_activity b WHERE b.pid = ANY(pg_blocking_pids(a.pid))
          ORDER BY b.wait_event_type IS NOT DISTINCT FROM 'Lock' LIMIT 1)
    END
  FROM pg_stat_activity a
  WHERE a.pid <> pg_backend_pid()
    AND (a.backend_type = 'client backend' OR a.query = '<insufficient privilege>')";

/// The statements' totals, the most time-consuming first (PostgreSQL 13's names).
const STATEMENT_TIMES: &str = "SELECT query, calls, total_exec_time FROM pg_stat_statements
  ORDER BY total_exec_time DESC LIMIT 50";

/// What to do when `pg_stat_statements` cannot be read.
const NO_STATEMENTS: &str =
    "pg_stat_statements is not installed: add it to shared_preload_libraries \
  (a restart) and CREATE EXTENSION pg_stat_statements in the database the lab connects to";

/// Connections to the server's databases, which any user may read.
const CONNECTIONS: &str = "SELECT sum(numbackends)::bigint FROM pg_stat_database";

/// What `pg_stat_activity` shows in place of another user's statement.
const HIDDEN: &str = "<insufficient privilege>";

pub struct Postgres {
    client: postgres::Client,
    /// Connections a client may open: `max_connections` less the superusers' reserve.
    max_connections: u64,
}

pub fn connect(url: &str) -> Result<Postgres, String> {
    let mut config: postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
    config
        .connect_timeout(Duration::from_secs(2))
        .application_name("sluice lab");
    let mut client = config
        .connect(postgres::NoTls)
        .map_err(|e| error_text(&e))?;
    // A sample that cannot finish in a second is abandoned, never left running.
    client
        .batch_execute("SET statement_timeout = '1s'")
        .map_err(|e| error_text(&e))?;
    let row = client
        .query_one(
            "SELECT current_setting('max_connections')::int
                  - current_setting('superuser_reserved_connections')::int",
            &[],
        )
        .map_err(|e| error_text(&e))?;
    let max: i32 = row.get(0);
    Ok(Postgres {
        client,
        max_connections: max.max(0) as u64,
    })
}

/// The server's own words (a wrong password, a missing database) before the driver's.
fn error_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    }
}

impl Sessions for Postgres {
    fn sample(&mut self) -> Result<Snapshot, String> {
        let rows = self
            .client
            .query(SESSIONS, &[])
            .map_err(|e| error_text(&e))?;
        let connections: Option<i64> = self
            .client
            .query_one(CONNECTIONS, &[])
            .map_err(|e| error_text(&e))?
            .get(0);
        let mut snapshot = Snapshot {
            connections: connections.unwrap_or(0).max(0) as u64,
            max_connections: self.max_connections,
            ..Snapshot::default()
        };
        for row in rows {
            let state: Option<String> = row.get(0);
            let wait_type: Option<String> = row.get(1);
            let wait: Option<String> = row.get(2);
            let query: Option<String> = row.get(3);
            let blocker: Option<String> = row.get(4);
            if query.as_deref() == Some(HIDDEN) {
                snapshot.hidden = true;
            }
            let Some(class) = classify(state.as_deref(), wait_type.as_deref()) else {
                continue;
            };
            snapshot.sessions.push(Session {
                class,
                event: wait_type.map(|t| format!("{t}:{}", wait.unwrap_or_default())),
                statement: query.as_deref().map(statement_text),
                blocker: blocker.as_deref().map(statement_text),
            });
        }
        Ok(snapshot)
    }

    fn statement_times(&mut self) -> Result<Vec<(String, StatementTime)>, String> {
        let rows = self.client.query(STATEMENT_TIMES, &[]).map_err(|e| {
            // Its view missing (or unreadable): what to turn on, with the server's words.
            match e.as_db_error().map(|d| d.code().code()) {
                Some("42P01") => NO_STATEMENTS.to_string(),
                _ => format!("pg_stat_statements: {}", error_text(&e)),
            }
        })?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let query: Option<String> = row.get(0);
                let calls: i64 = row.get(1);
                let ms: f64 = row.get(2);
                let text = statement_text(query.as_deref().unwrap_or(""));
                let time = StatementTime {
                    calls: calls.max(0) as u64,
                    ms,
                };
                (text, time)
            })
            .collect())
    }
}

/// A session's class from its state and wait; `None` for an idle one.
fn classify(state: Option<&str>, wait_type: Option<&str>) -> Option<Class> {
    match (state?, wait_type) {
        ("active" | "fastpath function call", None) => Some(Class::Running),
        ("active" | "fastpath function call", Some("Lock")) => Some(Class::Lock),
        ("active" | "fastpath function call", Some("IO")) => Some(Class::Io),
        ("active" | "fastpath function call", Some(_)) => Some(Class::Other),
        (s, _) if s.starts_with("idle in transaction") => Some(Class::IdleInTransaction),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_classed_by_state_and_wait() {
        let table = [
            (Some("active"), None, Some(Class::Running)),
            (Some("active"), Some("Lock"), Some(Class::Lock)),
            (Some("active"), Some("IO"), Some(Class::Io)),
            (Some("active"), Some("LWLock"), Some(Class::Other)),
            (
                Some("idle in transaction"),
                Some("Client"),
                Some(Class::IdleInTransaction),
            ),
            (
                Some("idle in transaction (aborted)"),
                None,
                Some(Class::IdleInTransaction),
            ),
            (Some("idle"), Some("Client"), None),
            (None, None, None),
        ];
        for (state, wait, class) in table {
            assert_eq!(classify(state, wait), class, "{state:?} {wait:?}");
        }
    }
}
