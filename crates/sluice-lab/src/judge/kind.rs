//! The names the judge speaks in: the kinds of resource it names (what each rule makes,
//! what the choice ranks, what the proof enlarges and what the advice is for), and the
//! kinds of finding it says beside a verdict. Enums, so every `match` on them is checked
//! by the compiler: a resource kind added here does not build until the choice and the
//! advice say what to do with it.
//!
//! The JSON report spells each resource kind as it always has (the `rename` of each
//! variant): the page's script (`assets/lab.js`), the end-to-end tests and the runs kept
//! under `lab/runs/` read those names. Add kinds, never rename one. A finding is written
//! as its sentence alone (`findings::Finding`), so its kind is not in the JSON.

use serde::Serialize;
use std::fmt;

/// A kind of resource, or one of the two things a verdict can name besides a resource
/// ([`Kind::RoomsSplit`], [`Kind::Plateau`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Kind {
    /// A process's CPU against its budget; or a tier's processes sharing the machine,
    /// together; or the machine's own CPU.
    #[serde(rename = "cpu")]
    Cpu,
    /// A process's busiest thread against one core (a single-threaded process is full at
    /// one core however many it may use).
    #[serde(rename = "thread")]
    BusiestThread,
    /// A server's pool of worker threads (the simulated app's, Tomcat's).
    #[serde(rename = "threads")]
    ThreadPool,
    /// An app server's pool of database connections (the simulated app's, HikariCP's).
    #[serde(rename = "db_pool")]
    DbPool,
    /// A server's connection cap (`max_conns`), held with connections waiting.
    #[serde(rename = "connections")]
    ConnectionCap,
    /// The balancer's limit on its servers: its queue, or requests it failed itself.
    #[serde(rename = "queue")]
    Queue,
    /// The balancer's CPU, spent opening an upstream connection per request: a
    /// saturated balancer [`Kind::Cpu`] renamed when keep-alive is off.
    #[serde(rename = "keepalive")]
    KeepaliveOff,
    /// A JVM's heap, by the share of the step GC stopped it.
    #[serde(rename = "heap")]
    Heap,
    /// A database's locks, from its sessions' waits.
    #[serde(rename = "locks")]
    Locks,
    /// A database's disk I/O, from its sessions' waits.
    #[serde(rename = "io")]
    DiskIo,
    /// A database's `max_connections`.
    #[serde(rename = "db_connections")]
    MaxConnections,
    /// A server's workers (processes or threads: gunicorn's, uWSGI's, PHP-FPM's, a fixed
    /// pool) that it does not publish, all busy: connections wait unaccepted in its
    /// listen queue while its CPU has room.
    #[serde(rename = "workers")]
    Workers,
    /// A database's sessions waiting on something the lab did not read (its URL not
    /// given): the pools in front of it held their connections longer at flat throughput.
    #[serde(rename = "waits")]
    Waits,
    /// A JVM's monitor (a `synchronized` method or block) its request threads queued
    /// BLOCKED to enter, from its thread dumps.
    #[serde(rename = "monitor")]
    Monitor,
    /// A verdict only: a service the app calls that the lab was not given, seen from
    /// the app's request threads waiting longer in a read from it at flat throughput.
    #[serde(rename = "downstream")]
    Downstream,
    /// A verdict only: STOMP rooms split over servers, their messages lost.
    #[serde(rename = "balance")]
    RoomsSplit,
    /// A verdict only: throughput flat while users grew, nothing measured full.
    #[serde(rename = "plateau")]
    Plateau,
}

impl Kind {
    /// The JSON's name of the kind, which the terminal report prints too.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cpu => "cpu",
            Kind::BusiestThread => "thread",
            Kind::ThreadPool => "threads",
            Kind::DbPool => "db_pool",
            Kind::ConnectionCap => "connections",
            Kind::Queue => "queue",
            Kind::KeepaliveOff => "keepalive",
            Kind::Heap => "heap",
            Kind::Locks => "locks",
            Kind::DiskIo => "io",
            Kind::MaxConnections => "db_connections",
            Kind::Workers => "workers",
            Kind::Waits => "waits",
            Kind::Monitor => "monitor",
            Kind::Downstream => "downstream",
            Kind::RoomsSplit => "balance",
            Kind::Plateau => "plateau",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`, so a table's `{:<9}` aligns it as it would the name.
        f.pad(self.name())
    }
}

/// What a finding is about, whatever its words: with its subject, what tells two
/// findings apart (`findings::merge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingKind {
    /// Upstream keep-alive off: a new connection to the app servers per request.
    KeepaliveOff,
    /// A process's CPU time read without how many cores it may use: measured, not judged.
    CpuNotJudged,
    /// A JVM without Tomcat's thread metrics: its thread pool cannot be judged.
    NoThreadMetrics,
    /// A database whose sessions could not be read.
    SessionsNotRead,
    /// postgres_exporter's count of sessions, which does not say what they wait on.
    SessionsCounted,
    /// Other users' statements hidden from the lab's database user.
    StatementsHidden,
    /// A database's statements' totals (its Top SQL) not kept where the lab can read
    /// them: what to turn on.
    TopSqlUnread,
    /// What a database's sessions did, where its CPU is not read (else it is evidence
    /// beside that CPU).
    Sessions,
    /// A database's `max_connections` reached while nobody waited for a connection.
    MaxConnectionsUnwaited,
    /// A JVM's GC pauses, a share of the step.
    GcPauses,
    /// A GC pause that the latency tail waited out.
    GcTail,
    /// Users missing from Little's law, held by a tier that had not answered them.
    UsersHeld,
    /// The machine's CPUs contended while no tier was busy.
    CpuContended,
    /// STOMP messages lost between users of one room.
    MessagesLost,
    /// Requests that failed, by the load generator's kinds of error.
    Errors,
    /// A JVM whose threads could not be sampled, or had no server's by name.
    ThreadsNotSampled,
}

#[cfg(test)]
mod tests {
    use super::Kind;

    /// The names the report has always written: a golden vector, so a renamed variant
    /// that changed the JSON fails here, not in a reader of the report.
    #[test]
    fn every_kind_is_written_as_the_report_always_wrote_it() {
        let all = [
            (Kind::Cpu, "cpu"),
            (Kind::BusiestThread, "thread"),
            (Kind::ThreadPool, "threads"),
            (Kind::DbPool, "db_pool"),
            (Kind::ConnectionCap, "connections"),
            (Kind::Queue, "queue"),
            (Kind::KeepaliveOff, "keepalive"),
            (Kind::Heap, "heap"),
            (Kind::Locks, "locks"),
            (Kind::DiskIo, "io"),
            (Kind::MaxConnections, "db_connections"),
            (Kind::Workers, "workers"),
            (Kind::Waits, "waits"),
            (Kind::Monitor, "monitor"),
            (Kind::Downstream, "downstream"),
            (Kind::RoomsSplit, "balance"),
            (Kind::Plateau, "plateau"),
        ];
        for (kind, name) in all {
            assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
            assert_eq!(kind.name(), name);
            assert_eq!(format!("{kind:<9}|"), format!("{name:<9}|"));
        }
    }
}
