//! The kinds of resource the judge names: what each rule makes, what the choice ranks,
//! what the proof enlarges and what the advice is for. An enum, so every `match` on it
//! is checked by the compiler: a kind added here does not build until the choice and the
//! advice say what to do with it.
//!
//! The JSON report spells each kind as it always has (the `rename` of each variant): the
//! page's script (`assets/lab.js`), the end-to-end tests and the runs kept under
//! `lab/runs/` read those names. Add kinds, never rename one.

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
