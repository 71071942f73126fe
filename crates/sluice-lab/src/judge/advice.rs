//! What to change for a verdict: one sentence per kind of resource, and, where it
//! matters, per tier (a balancer's CPU wants workers, an app server's more servers).
//! The advice is a `match` over every [`Kind`] with no wildcard: a kind added to the
//! judge does not build until it has its advice here.

use super::{Kind, Verdict};

/// Where a saturated resource is, as the advice tells tiers apart.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// The balancer (`lb`).
    Balancer,
    /// The database (`db`): whatever filled there, it wants capacity or fewer queries.
    Database,
    /// An app server (`app`, or no tier).
    Elsewhere,
    /// A tier of a deployment's own name: a cache, a service the app calls. More app
    /// servers do nothing for it.
    Service,
}

impl Place {
    fn of(tier: Option<&str>) -> Place {
        match tier {
            Some("lb") => Place::Balancer,
            Some("db") => Place::Database,
            Some("app") | None => Place::Elsewhere,
            Some(_) => Place::Service,
        }
    }
}

const DATABASE: &str = "add database capacity, or send it fewer queries";
const BALANCER: &str = "give the balancer more CPU or workers";

/// What to change for verdict `v`. `database_unread`: a deployment whose database's
/// sessions the lab did not read, so a full pool in front of it may be a row lock's
/// queue, which more pool only lengthens: the advice asks for the sessions first.
pub fn advice(v: &Verdict, database_unread: bool) -> String {
    if v.tier.as_deref() == Some("loadgen") {
        return "give the load generator more CPU or another machine".into();
    }
    let Some(kind) = v.resource else {
        return String::new();
    };
    let mut advice = of(kind, Place::of(v.tier.as_deref())).to_string();
    if kind == Kind::DbPool && database_unread {
        advice.push_str(", once the database says what its sessions wait on (--tier db=postgres://... or mysql://...): more pool in front of a row lock only lengthens the queue");
    }
    advice
}

/// The advice for a saturated `kind` at `place`.
fn of(kind: Kind, place: Place) -> &'static str {
    // What a kind wants at the balancer, and elsewhere; the database wants capacity.
    let at = |balancer: &'static str, elsewhere: &'static str| match place {
        Place::Balancer => balancer,
        Place::Database => DATABASE,
        Place::Elsewhere | Place::Service => elsewhere,
    };
    match kind {
        Kind::Locks => {
            "more pool or app servers will not help: every request waits on the same lock; shorten the transaction that holds it (commit sooner, nothing slow inside it) or spread the hot row (a row per shard, updates batched)"
        }
        Kind::DiskIo => {
            "give the database more memory for its cache (shared_buffers, innodb_buffer_pool_size), faster storage, or fewer reads (an index)"
        }
        Kind::MaxConnections => {
            "keep the app servers' pools (pool size x servers) below the database's max_connections, or raise it"
        }
        Kind::Cpu if place == Place::Service => {
            "give it more CPU (a larger quota or machine), or send it less work (Redis: fewer or cheaper commands; a service: cache its answers)"
        }
        Kind::Cpu => at(BALANCER, "add app servers or CPU"),
        Kind::BusiestThread => at(
            "give the balancer more worker processes or threads (nginx: worker_processes auto; sluice: workers): one worker is one core however many the machine has",
            "spread its work over more threads or processes (nginx: worker_processes auto; Redis: shard it, or move slow commands and scripts off its one thread; a single-threaded app: more instances)",
        ),
        Kind::ThreadPool => at(
            BALANCER,
            "raise the thread pool if the CPU has room, or add servers",
        ),
        Kind::DbPool => at(BALANCER, "add pool or database capacity"),
        Kind::ConnectionCap => at(BALANCER, "raise the connection cap"),
        Kind::Workers => at(BALANCER, WORKERS),
        Kind::Monitor => "shorten what runs holding that lock (nothing slow inside it: no I/O, no call to another service), split it, or use a concurrent structure; more threads only queue at it, while each app server added brings a lock of its own",
        Kind::Downstream => "more app threads or servers will not help: requests queue in a service the app calls; give the lab that service as a tier (--tier NAME=PID or its metrics URL) to see what it is short of, then enlarge that",
        Kind::Waits => "more pool or app servers will not help: requests queue inside the database; give the lab its URL to see on what (a row lock, I/O, a slow statement), then shorten that",
        Kind::Heap => at(
            BALANCER,
            "give the JVM a larger heap (-Xmx, or its container's memory) or keep less per request; more users or servers with the same heap only collect more often",
        ),
        // A balancer's own, whatever a deployment named its tier.
        Kind::Queue => at(QUEUE, QUEUE),
        Kind::KeepaliveOff => at(KEEPALIVE, KEEPALIVE),
        Kind::RoomsSplit => at(ROOMS, ROOMS),
        Kind::Plateau => {
            "expose what saturated: give the tiers CPU budgets (a full one shows), and the app's pools their metrics (Tomcat's threads need server.tomcat.mbeanregistry.enabled=true; HikariCP's come with Micrometer); a single-threaded process (nginx with worker_processes 1, Redis, Node.js) is full at one core"
        }
    }
}

const QUEUE: &str =
    "raise max_conns to what the servers can take, or let limit = \"adaptive\" find it";
const KEEPALIVE: &str = "turn upstream keep-alive on";
const WORKERS: &str = "give it more workers if its CPU has room (gunicorn --workers or --threads, uWSGI processes, PHP-FPM pm.max_children, Puma threads), or more servers; a worker waiting on a slower service only moves the queue there";
const ROOMS: &str = "hash on the room, so each room stays on one server";

#[cfg(test)]
mod tests {
    use super::{advice, Kind};
    use crate::judge::Verdict;

    fn at(tier: Option<&str>, kind: Option<Kind>) -> String {
        let v = Verdict {
            tier: tier.map(str::to_string),
            resource: kind,
            ..Verdict::default()
        };
        advice(&v, false)
    }

    #[test]
    fn the_advice_depends_on_the_kind_and_where_it_saturated() {
        let table = [
            (Some("loadgen"), None, "give the load generator more CPU"),
            (
                Some("lb"),
                Some(Kind::Cpu),
                "give the balancer more CPU or workers",
            ),
            (Some("app"), Some(Kind::Cpu), "add app servers or CPU"),
            // A capped Redis (or a service the app calls) wants CPU, not app servers.
            (Some("redis"), Some(Kind::Cpu), "give it more CPU"),
            (Some("db"), Some(Kind::Cpu), "add database capacity"),
            (Some("db"), Some(Kind::ThreadPool), "add database capacity"),
            (
                Some("db"),
                Some(Kind::Locks),
                "more pool or app servers will not help",
            ),
            (
                Some("lb"),
                Some(Kind::BusiestThread),
                "give the balancer more worker",
            ),
            (Some("app"), Some(Kind::BusiestThread), "spread its work"),
            (
                Some("lb"),
                Some(Kind::KeepaliveOff),
                "turn upstream keep-alive on",
            ),
            (Some("lb"), Some(Kind::RoomsSplit), "hash on the room"),
            (Some("lb"), Some(Kind::Queue), "raise max_conns"),
            // A deployment's balancer is the tier its user named.
            (Some("edge"), Some(Kind::Queue), "raise max_conns"),
            (
                Some("app"),
                Some(Kind::DbPool),
                "add pool or database capacity",
            ),
            (None, Some(Kind::Plateau), "expose what saturated"),
            (None, None, ""),
        ];
        for (tier, kind, starts) in table {
            let said = at(tier, kind);
            assert!(said.starts_with(starts), "{tier:?} {kind:?}: {said}");
        }
    }
}
