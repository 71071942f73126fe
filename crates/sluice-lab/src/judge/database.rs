//! Inside a database, from its sessions sampled over the step (`crate::database`): a
//! lock that most samples found sessions waiting on, I/O the same way, and the
//! connections at `max_connections`. A lock is a resource of one holder at a time, so a
//! queue in nearly every sample is saturation however idle the CPU; and it is the
//! cause of the pool that fills in front of it, which more pool only lengthens.

use super::thresholds::{CAP_HELD_SHARE, DB_WAIT_OF_ACTIVE, DB_WAIT_SHARE};
use super::{pct, round2, tier_word, Delta, Finding, FindingKind, Kind, Resource};
use crate::database::{top, Class, DbReading};

/// What was measured inside each database over the step.
pub(super) fn resources(deltas: &[Delta]) -> Vec<Resource> {
    let mut out = Vec::new();
    for d in deltas {
        let Some(db) = d.db() else { continue };
        if db.samples == 0 {
            continue;
        }
        out.extend(wait(d, &db, Class::Lock));
        out.extend(wait(d, &db, Class::Io));
        out.extend(connections(d, &db));
    }
    out
}

/// What kept the lab from seeing inside each database: its sessions not read, counted
/// by an exporter without what they wait on, other users' statements hidden.
pub(super) fn findings(deltas: &[Delta]) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in deltas {
        let Some(db) = d.db() else { continue };
        let name = d.info.name.as_str();
        if let Some(e) = &db.error {
            let text = format!("{name}: its sessions were not read: {e}");
            out.push(Finding::new(FindingKind::SessionsNotRead, name, text));
        }
        if let Some(line) = postgres_exporter_sessions(d) {
            out.push(Finding::new(FindingKind::SessionsCounted, name, line));
            continue; // it counted connections, not what sessions did
        }
        if let Some(why) = db
            .statement_times_unread
            .as_ref()
            .filter(|_| db.samples > 0)
        {
            let text = format!("{name}: its statements by time (Top SQL) are not read: {why}");
            out.push(Finding::new(FindingKind::TopSqlUnread, name, text));
        }
        if db.samples > 0 && db.hidden {
            let text = format!(
                "{name}: other users' statements are hidden from the lab's user (PostgreSQL: GRANT pg_read_all_stats TO it)"
            );
            out.push(Finding::new(FindingKind::StatementsHidden, name, text));
        }
    }
    out
}

/// Where one database's sessions spent the step, in a line (`sessions_line`), and the
/// statements that took its time (`top_sql`).
pub(super) struct Sessions {
    tier: String,
    name: String,
    line: String,
    top_sql: Option<String>,
}

/// Each sampled database's sessions (not an exporter's count of them).
pub(super) fn sessions(deltas: &[Delta]) -> Vec<Sessions> {
    deltas
        .iter()
        .filter(|d| postgres_exporter_sessions(d).is_none())
        .filter_map(|d| {
            let db = d.db().filter(|db| db.samples > 0)?;
            Some(Sessions {
                tier: d.info.tier.clone(),
                name: d.info.name.clone(),
                line: sessions_line(d, &db),
                top_sql: top_sql(d, &db),
            })
        })
        .collect()
}

/// Each database's sessions as evidence beside its tier's CPU, where the CPU is read;
/// else as a finding, which says how to read it.
pub(super) fn place_sessions(resources: &mut [Resource], sessions: Vec<Sessions>) -> Vec<Finding> {
    let mut out = Vec::new();
    for s in sessions {
        match resources
            .iter_mut()
            .find(|r| r.tier == s.tier && r.resource == Kind::Cpu)
        {
            Some(cpu) => cpu.evidence.extend([s.line].into_iter().chain(s.top_sql)),
            None => {
                out.push(Finding::new(FindingKind::Sessions, &s.name, format!(
                    "{} (its CPU is not read: give its pid, or, on another machine, the node_exporter of its host beside its URL)",
                    s.line
                )));
                out.extend(
                    s.top_sql
                        .map(|t| Finding::new(FindingKind::Sessions, &s.name, t)),
                );
            }
        }
    }
    out
}

/// postgres_exporter's active sessions, which it counts without saying what they wait
/// on: said, with how to see it.
fn postgres_exporter_sessions(d: &Delta) -> Option<String> {
    use crate::database::exported::{PG_ACTIVE, PG_IDLE_IN_TRANSACTION};
    let active = d.mean(PG_ACTIVE)?;
    Some(format!(
        "{}: postgres_exporter counts {:.1} active sessions and {:.1} idle in a transaction on average, not what they wait on: --tier db=postgres://USER@HOST/DB (a read-only user with pg_read_all_stats) shows their lock and I/O waits and statements",
        d.info.name,
        active,
        d.mean(PG_IDLE_IN_TRANSACTION).unwrap_or(0.0)
    ))
}

/// "db[pid 812]'s statements by time (Top SQL): `SELECT ...` 81% (1,234 calls, 2.1 ms
/// each); ...": the three that took most of its statements' time over the step.
fn top_sql(d: &Delta, db: &DbReading) -> Option<String> {
    let top = db.top_sql(3);
    if top.is_empty() {
        return None;
    }
    let said: Vec<String> = top
        .iter()
        .map(|(text, t, share)| {
            format!(
                "`{text}` {:.0}% ({} calls, {:.1} ms each)",
                share * 100.0,
                t.calls,
                t.ms / t.calls.max(1) as f64
            )
        })
        .collect();
    Some(format!(
        "{}'s statements by time (Top SQL): {}",
        d.info.name,
        said.join("; ")
    ))
}

/// "db[pid 812]: 0.4 sessions running on average (most: `SELECT ...`), 9.1 waiting on a
/// lock, 0.8 idle in a transaction (40 samples, 0.9 ms a sampling query)".
fn sessions_line(d: &Delta, db: &DbReading) -> String {
    let mut parts = vec![format!(
        "{:.1} sessions running on average",
        db.average(Class::Running)
    )];
    if let Some((s, _)) = top(&db.statements_of(Class::Running)).filter(|(s, _)| !s.is_empty()) {
        parts[0].push_str(&format!(" (most: `{s}`)"));
    }
    for (class, what) in [
        (Class::Lock, "waiting on a lock"),
        (Class::Io, "waiting on I/O"),
        (Class::Other, "waiting on something else"),
        (Class::IdleInTransaction, "idle in a transaction"),
    ] {
        let n = db.average(class);
        if n >= 0.05 {
            parts.push(format!("{n:.1} {what}"));
        }
    }
    let cost = if db.counts_only || db.query_s <= 0.0 {
        String::new()
    } else {
        format!(
            ", {:.1} ms a sampling query",
            db.query_s * 1000.0 / db.samples.max(1) as f64
        )
    };
    format!(
        "{}: {} ({} samples{cost})",
        d.info.name,
        parts.join(", "),
        db.samples
    )
}

/// A wait class (locks, I/O) is saturated present in [`DB_WAIT_SHARE`] of the samples
/// and taking [`DB_WAIT_OF_ACTIVE`] of the sessions' time in statements.
fn wait(d: &Delta, db: &DbReading, class: Class) -> Option<Resource> {
    let waiting = db.average(class);
    if waiting == 0.0 {
        return None;
    }
    let active: f64 = [Class::Running, Class::Lock, Class::Io, Class::Other]
        .iter()
        .map(|c| db.average(*c))
        .sum();
    let share = db.share_with(class);
    let of_active = waiting / active.max(f64::EPSILON);
    let events: std::collections::BTreeMap<String, u64> = db
        .events
        .iter()
        .filter(|(e, _)| is_of(e, class))
        .map(|(e, n)| (e.clone(), *n))
        .collect();
    let event = top(&events).map_or("", |(e, _)| e).to_string();
    let (resource, what) = match class {
        Class::Lock => (Kind::Locks, lock_kind(&event)),
        _ => (Kind::DiskIo, "disk I/O"),
    };
    let evidence = wait_evidence(d, db, class, &event, (waiting, share, of_active));
    Some(Resource {
        tier: d.info.tier.clone(),
        resource,
        label: format!("{}'s {what}", tier_word(&d.info.tier)),
        utilisation: round2(share),
        saturated: share >= DB_WAIT_SHARE && of_active >= DB_WAIT_OF_ACTIVE,
        evidence,
        enlarge: None,
        machine: false,
    })
}

/// What was seen of a wait class: how many waited how often, on which statements, held
/// by which (`figures`: sessions waiting on average, share of samples, of active time).
fn wait_evidence(
    d: &Delta,
    db: &DbReading,
    class: Class,
    event: &str,
    (waiting, share, of_active): (f64, f64, f64),
) -> Vec<String> {
    let mut evidence = vec![format!(
        "{}: {waiting:.1} sessions on average waited on {} ({event}), in {:.0}% of the samples; {:.0}% of the time its sessions spent in statements",
        d.info.name,
        if class == Class::Lock { "a lock" } else { "I/O" },
        share * 100.0,
        of_active * 100.0
    )];
    if let Some((s, of)) = top(&db.statements_of(class)).filter(|(s, _)| !s.is_empty()) {
        evidence.push(format!("waiting: `{s}` ({:.0}% of the waits)", of * 100.0));
    }
    if db.counts_only {
        evidence.push(
            "its exporter counts sessions, not statements: --tier db=postgres://USER@HOST/DB (or mysql://) names the waiting and holding ones"
                .into(),
        );
    } else if class == Class::Io {
        evidence.extend(top_sql(d, db));
    } else if class == Class::Lock {
        evidence.push(match top(&db.holding) {
            Some((s, _)) if !s.is_empty() => format!("held by: `{s}`"),
            _ => "held by a transaction between statements (its client had not sent the next one)"
                .into(),
        });
    }
    evidence
}

fn is_of(event: &str, class: Class) -> bool {
    match class {
        Class::Lock => event.starts_with("Lock:") || event.contains("lock"),
        Class::Io => event.starts_with("IO:"),
        _ => false,
    }
}

/// What kind of lock a wait event names.
fn lock_kind(event: &str) -> &'static str {
    match event {
        "Lock:transactionid" | "Lock:tuple" | "row lock (InnoDB)" => "row lock",
        "Lock:advisory" => "advisory lock",
        e if e.starts_with("Lock:relation") || e.contains("table") => "table lock",
        _ => "locks",
    }
}

/// A database held at its `max_connections` limits throughput only when clients wait
/// for a connection (an app's pool saturated) or are refused (errors): else its clients'
/// pools are simply full-sized, and what it limits is the next one (another app server's
/// pool, a migration): a finding, not the step's saturation.
pub(super) fn connections_unwaited(resources: &mut [Resource], errors: u64) -> Vec<Finding> {
    let waited = errors > 0
        || resources
            .iter()
            .any(|r| r.saturated && r.resource == Kind::DbPool);
    let mut out = Vec::new();
    for r in resources.iter_mut() {
        if r.resource != Kind::MaxConnections || !r.saturated || waited {
            continue;
        }
        r.saturated = false;
        let text = format!(
            "{} was reached, yet no request waited for a connection (the pools in front of it were open): the next client to connect (another app server's pool, a migration, psql) is refused; {}",
            r.label,
            r.evidence.join("; ")
        );
        let kind = FindingKind::MaxConnectionsUnwaited;
        out.push(Finding::new(kind, &r.tier, text));
    }
    out
}

/// The database at its `max_connections` in [`CAP_HELD_SHARE`] of the samples: the
/// next connection is refused.
fn connections(d: &Delta, db: &DbReading) -> Option<Resource> {
    let max = db.max_connections;
    if max == 0 {
        return None;
    }
    let mean = db.connections as f64 / db.samples as f64;
    let at_max = db.at_max as f64 / db.samples as f64;
    Some(Resource {
        tier: d.info.tier.clone(),
        resource: Kind::MaxConnections,
        label: format!("{}'s max_connections ({max})", tier_word(&d.info.tier)),
        utilisation: round2(mean / max as f64),
        saturated: at_max >= CAP_HELD_SHARE,
        evidence: vec![format!(
            "{}: {mean:.0} connections on average of {max}, at the limit in {}% of the samples",
            d.info.name,
            pct(db.at_max as f64, db.samples as f64)
        )],
        enlarge: None,
        machine: false,
    })
}
