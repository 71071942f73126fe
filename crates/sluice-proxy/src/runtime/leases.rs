//! Changing servers from outside the data path (the admin API): drains, for good or for a
//! lease, and trial limits (a `max_conns` for a lease); and the thread that ends the
//! leases that ran out.
//!
//! Leases are ended here, in the balancer, and not by the tool that took them: a tool
//! killed with `kill -9` cannot undo anything, and the upstream must still end up as it
//! was. The thread ticks every [`TICK`], so a lease ends at most that long after its
//! time; workers never look at leases (a request costs nothing more).

use crate::runtime::view::View;
use crate::state::drain::DrainedWithoutLease;
use crate::state::generation::Shared;
use crate::state::group::{ServerGroup, ServerState};
use crate::state::health::now_ns;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How often leases are checked: a drain outlives its lease by at most this.
const TICK: Duration = Duration::from_millis(250);

/// A server's drain after a drain or undrain, as the admin API answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drained {
    pub drained: bool,
    /// What its lease has left, if it is drained with one.
    pub lease: Option<Duration>,
    /// Its upstream's change count (see `ServerGroup::changed`), this one included.
    pub changes: u64,
}

/// A server's limit after a trial limit began or ended, as the admin API answers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    /// Its `max_conns` now (the trial's while one holds).
    pub max_conns: Option<u32>,
    /// Its `max_conns` in the config, which it has again when the trial ends.
    pub configured: Option<u32>,
    /// What the trial's lease has left, while one holds.
    pub lease: Option<Duration>,
    /// Its upstream's change count (see `ServerGroup::changed`), this one included.
    pub changes: u64,
}

/// Why a drain, an undrain or a trial limit was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeaseError {
    #[error("no upstream named {0:?}")]
    NoUpstream(String),
    #[error("upstream {upstream:?} has no server {addr}")]
    NoServer { upstream: String, addr: SocketAddr },
    #[error(transparent)]
    WithoutLease(#[from] DrainedWithoutLease),
    /// A trial limit changes a server's `max_conns`; one without is not limited at all,
    /// and its upstream's requests do not go through the queue a limit needs.
    #[error("server {addr} of upstream {upstream:?} has no max_conns (nor an adaptive limit) to try another of: give it one in the config")]
    Unlimited { upstream: String, addr: SocketAddr },
}

impl View {
    /// Drains the server at `addr` of `upstream`: it gets no new requests while those
    /// in flight finish. With a `lease`, only until the lease runs out unless a drain
    /// with a lease renews it (an operator's drain without a lease is refused, never
    /// taken over); without one, for good (ending a lease). Stays drained, lease and
    /// all, across reloads while its upstream keeps it.
    pub fn drain(
        &self,
        upstream: &str,
        addr: SocketAddr,
        lease: Option<Duration>,
    ) -> Result<Drained, LeaseError> {
        let (group, server) = self.find(upstream, addr)?;
        let now = now_ns();
        let changed = server.drain.drain(lease, now)?;
        let lease_ms = lease.map(|d| d.as_millis() as u64);
        if changed {
            group.changed();
            tracing::info!(upstream, server = %addr, lease_ms, "server drained: no new requests");
        } else {
            tracing::debug!(upstream, server = %addr, lease_ms, "server's drain renewed");
        }
        Ok(state(&group, &server, now))
    }

    /// Ends the drain (and its lease) of the server at `addr` of `upstream`.
    pub fn undrain(&self, upstream: &str, addr: SocketAddr) -> Result<Drained, LeaseError> {
        let (group, server) = self.find(upstream, addr)?;
        if server.drain.undrain() {
            group.changed();
            tracing::info!(upstream, server = %addr, "server undrained");
        }
        Ok(state(&group, &server, now_ns()))
    }

    /// Gives the server at `addr` of `upstream` a `max_conns` of `max_conns` for `lease`
    /// in place of the config's (renewed by the same call), which comes back when the
    /// lease runs out or [`View::end_limit`]. Requests waiting in the upstream's queue
    /// take the room a larger limit makes at once. Only a server limited already (by
    /// `max_conns` or an adaptive limit) may be given one.
    pub fn try_limit(
        &self,
        upstream: &str,
        addr: SocketAddr,
        max_conns: u32,
        lease: Duration,
    ) -> Result<Limited, LeaseError> {
        let (group, server) = self.find(upstream, addr)?;
        if !server.limited() {
            return Err(LeaseError::Unlimited {
                upstream: upstream.into(),
                addr,
            });
        }
        let now = now_ns();
        if server.trial.set(max_conns, lease, now) {
            retuned(&group, &server);
            tracing::info!(upstream, server = %addr, max_conns, lease_ms = lease.as_millis() as u64,
                "server given a trial max_conns for a lease");
        }
        Ok(limited(&group, &server, now))
    }

    /// Ends the trial limit of the server at `addr` of `upstream`: the config's again.
    pub fn end_limit(&self, upstream: &str, addr: SocketAddr) -> Result<Limited, LeaseError> {
        let (group, server) = self.find(upstream, addr)?;
        if server.trial.end() {
            retuned(&group, &server);
            tracing::info!(upstream, server = %addr, "server's trial max_conns ended: the config's again");
        }
        Ok(limited(&group, &server, now_ns()))
    }

    fn find(
        &self,
        upstream: &str,
        addr: SocketAddr,
    ) -> Result<(Arc<ServerGroup>, Arc<ServerState>), LeaseError> {
        let shared = self.current.borrow().clone();
        let group = shared
            .upstreams
            .iter()
            .find(|u| u.config.name == upstream)
            .ok_or_else(|| LeaseError::NoUpstream(upstream.into()))?;
        let server = group
            .servers
            .iter()
            .find(|s| s.addr == addr)
            .ok_or_else(|| LeaseError::NoServer {
                upstream: upstream.into(),
                addr,
            })?;
        Ok((group.clone(), server.clone()))
    }
}

/// After `server`'s trial limit changed: its limit recomputed, waiters given any room
/// it made, one change counted.
fn retuned(group: &ServerGroup, server: &ServerState) {
    server.retune();
    group.queue.pump(&mut group.queue.lock(), &group.servers);
    group.changed();
}

fn limited(group: &ServerGroup, server: &ServerState, now: u64) -> Limited {
    Limited {
        max_conns: server.limited().then(|| server.limit()),
        configured: server.configured_max_conns(),
        lease: server.trial.lease_left(now),
        changes: group.changes(),
    }
}

fn state(group: &ServerGroup, server: &ServerState, now: u64) -> Drained {
    Drained {
        drained: server.drained(),
        lease: server.drain.lease_left(now),
        changes: group.changes(),
    }
}

/// Starts the thread that ends drains and trial limits whose lease ran out; it follows `generations`
/// until `stop` turns true.
pub fn spawn(
    generations: watch::Receiver<Arc<Shared>>,
    stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("sluice-leases".into())
        .spawn(move || {
            while !*stop.borrow() {
                std::thread::sleep(TICK);
                let shared = generations.borrow().clone();
                expire(&shared, now_ns());
            }
        })?;
    Ok(())
}

/// Undrains every server of `shared` whose drain's lease ran out at `now`, and gives
/// back the config's `max_conns` to those whose trial limit's did.
fn expire(shared: &Shared, now: u64) {
    for group in &shared.upstreams {
        for server in group.servers.iter().filter(|s| s.drain.expire(now)) {
            let changes = group.changed();
            tracing::warn!(
                upstream = %group.config.name,
                server = %server.addr,
                changes,
                "server undrained: the drain's lease ran out (whoever drained it stopped renewing it)"
            );
        }
        for server in group.servers.iter().filter(|s| s.trial.expire(now)) {
            retuned(group, server);
            tracing::warn!(
                upstream = %group.config.name,
                server = %server.addr,
                max_conns = server.configured_max_conns(),
                "server's trial max_conns ended: its lease ran out (whoever set it stopped renewing it)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn shared(servers: &str, previous: Option<&Shared>) -> Shared {
        let text = format!("[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{servers}]\n");
        Shared::new(sluice_config::parse("t.toml", &text).unwrap(), previous)
    }

    /// A lease runs out at its end (a change), and a reload that keeps the server keeps
    /// its lease; one that changes the set of servers counts a change.
    #[test]
    fn leases_run_out_on_the_tick_and_reloads_keep_them_and_count_their_changes() {
        let one = shared("\"127.0.0.1:9\", \"127.0.0.1:10\"", None);
        let group = &one.upstreams[0];
        assert_eq!(
            group.servers[0]
                .drain
                .drain(Some(Duration::from_secs(1)), 0),
            Ok(true)
        );
        group.changed();
        let two = shared("\"127.0.0.1:9\"", Some(&one));
        assert_eq!(
            two.upstreams[0].changes(),
            2,
            "drain, then a server removed"
        );
        let same = shared("\"127.0.0.1:9\"", Some(&two));
        assert_eq!(same.upstreams[0].changes(), 2);
        let server = &same.upstreams[0].servers[0];
        expire(&same, S - 1);
        assert_eq!(
            server.drain.lease_left(S / 2),
            Some(Duration::from_millis(500))
        );
        expire(&same, S);
        assert!(!server.drained());
        assert_eq!(same.upstreams[0].changes(), 3);
        expire(&same, 2 * S);
        assert_eq!(same.upstreams[0].changes(), 3);
    }

    /// A trial limit holds over the config's across a reload (which still changes what
    /// comes back), and the config's comes back when its lease runs out.
    #[test]
    fn a_trial_limit_outlives_a_reload_and_ends_with_its_lease() {
        let limited = |max: u32| format!("{{ addr = \"127.0.0.1:9\", max_conns = {max} }}");
        let one = shared(&limited(10), None);
        let server = one.upstreams[0].servers[0].clone();
        assert!(server.trial.set(15, Duration::from_secs(1), 0));
        retuned(&one.upstreams[0], &server);
        assert_eq!((server.limit(), one.upstreams[0].changes()), (15, 1));
        let two = shared(&limited(12), Some(&one));
        assert_eq!(
            server.limit(),
            15,
            "the trial holds over the reloaded config"
        );
        assert_eq!(server.configured_max_conns(), Some(12));
        expire(&two, S - 1);
        assert_eq!(server.limit(), 15);
        expire(&two, S);
        assert_eq!(server.limit(), 12, "the config's as reloaded");
        assert_eq!(two.upstreams[0].changes(), 2);
    }
}
