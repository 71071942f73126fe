//! A database's sessions as the exporters users already run count them, read from the
//! tier's metrics URL once a second: mysqld_exporter's global status (threads running,
//! InnoDB row-lock waits now, connections, `max_connections`); postgres_exporter's
//! connections by `pg_stat_activity_count` against `max_connections`, its active
//! sessions said as a finding: by default it counts them but not what they wait on (its
//! `pg_locks_count` leaves out the transaction locks a row's waiters queue on). Counts
//! only: the statements need the database's own URL (`postgres://`, `mysql://`).

use super::{Class, Session, Snapshot};
use std::collections::BTreeMap;

/// postgres_exporter's sessions by state (derived counters).
pub const PG_ACTIVE: &str = "pg_sessions_active";
pub const PG_IDLE_IN_TRANSACTION: &str = "pg_sessions_idle_in_transaction";
pub const PG_SESSIONS: &str = "pg_sessions";

/// The derived counter a postgres_exporter sample adds to, if any.
pub fn derived(name: &str, labels: &BTreeMap<String, String>) -> Vec<&'static str> {
    let label = |k: &str| labels.get(k).map_or("", |v| v.as_str());
    match name {
        "pg_stat_activity_count" => match label("state") {
            "active" => vec![PG_SESSIONS, PG_ACTIVE],
            s if s.starts_with("idle in transaction") => vec![PG_SESSIONS, PG_IDLE_IN_TRANSACTION],
            _ => vec![PG_SESSIONS],
        },
        _ => Vec::new(),
    }
}

/// One sample from an exporter's counters; `None` when they are not a database's.
pub fn snapshot(c: &BTreeMap<String, f64>) -> Option<Snapshot> {
    let get = |k: &str| c.get(k).copied();
    if let Some(running) = get("mysql_global_status_threads_running") {
        let waits = get("mysql_global_status_innodb_row_lock_current_waits").unwrap_or(0.0);
        return Some(counts(
            // The exporter's own query is one of the threads running.
            (running - waits - 1.0).max(0.0),
            waits,
            0.0,
            "row lock (InnoDB)",
            get("mysql_global_status_threads_connected").unwrap_or(0.0),
            get("mysql_global_variables_max_connections").unwrap_or(0.0),
        ));
    }
    // Connections only: which of the active sessions wait, and on what, it does not say.
    get(PG_ACTIVE)?;
    let reserved = get("pg_settings_superuser_reserved_connections").unwrap_or(0.0);
    Some(counts(
        0.0,
        0.0,
        0.0,
        "",
        get(PG_SESSIONS).unwrap_or(0.0),
        (get("pg_settings_max_connections").unwrap_or(0.0) - reserved).max(0.0),
    ))
}

fn counts(
    running: f64,
    waiting: f64,
    idle_in_transaction: f64,
    event: &str,
    connections: f64,
    max_connections: f64,
) -> Snapshot {
    let session = |class: Class, event: Option<&str>| Session {
        class,
        event: event.map(String::from),
        statement: None,
        blocker: None,
    };
    let mut sessions = Vec::new();
    for (n, class, e) in [
        (running, Class::Running, None),
        (waiting, Class::Lock, Some(event)),
        (idle_in_transaction, Class::IdleInTransaction, None),
    ] {
        sessions.extend((0..n.round() as usize).map(|_| session(class, e)));
    }
    Snapshot {
        sessions,
        connections: connections as u64,
        max_connections: max_connections as u64,
        hidden: false,
        counts_only: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::exposition_counters;

    #[test]
    fn mysqld_exporters_status_gives_running_and_waiting_sessions() {
        let c = exposition_counters(
            "mysql_global_status_threads_running 10\nmysql_global_status_innodb_row_lock_current_waits 8\nmysql_global_status_threads_connected 12\nmysql_global_variables_max_connections 151\n",
        );
        let s = snapshot(&c).unwrap();
        let n = |class| s.sessions.iter().filter(|x| x.class == class).count();
        assert_eq!((n(Class::Running), n(Class::Lock)), (1, 8));
        assert_eq!(
            (s.connections, s.max_connections, s.counts_only),
            (12, 151, true)
        );
    }

    #[test]
    fn postgres_exporters_counts_give_its_connections_against_the_limit() {
        let c = exposition_counters(
            "pg_stat_activity_count{datname=\"shop\",state=\"active\"} 9\npg_stat_activity_count{datname=\"shop\",state=\"idle in transaction\"} 1\npg_stat_activity_count{datname=\"shop\",state=\"idle\"} 2\npg_settings_max_connections 100\npg_settings_superuser_reserved_connections 3\n",
        );
        assert_eq!((c[PG_ACTIVE], c[PG_IDLE_IN_TRANSACTION]), (9.0, 1.0));
        let s = snapshot(&c).unwrap();
        assert!(s.sessions.is_empty());
        assert_eq!((s.connections, s.max_connections), (12, 97));
        // Not a database's metrics: nothing.
        assert!(snapshot(&exposition_counters("node_cpu_seconds_total 1\n")).is_none());
    }
}
