//! Draining servers from outside the data path (the admin API), and the thread that
//! ends drains whose lease ran out.
//!
//! Leases are ended here, in the balancer, and not by the tool that took them: a tool
//! killed with `kill -9` cannot undrain anything, and the upstream must still end up as
//! it was. The thread ticks every [`TICK`], so a drain ends at most that long after its
//! lease; workers never look at leases (a request costs nothing more).

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

/// Why a drain or undrain was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DrainError {
    #[error("no upstream named {0:?}")]
    NoUpstream(String),
    #[error("upstream {upstream:?} has no server {addr}")]
    NoServer { upstream: String, addr: SocketAddr },
    #[error(transparent)]
    WithoutLease(#[from] DrainedWithoutLease),
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
    ) -> Result<Drained, DrainError> {
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
    pub fn undrain(&self, upstream: &str, addr: SocketAddr) -> Result<Drained, DrainError> {
        let (group, server) = self.find(upstream, addr)?;
        if server.drain.undrain() {
            group.changed();
            tracing::info!(upstream, server = %addr, "server undrained");
        }
        Ok(state(&group, &server, now_ns()))
    }

    fn find(
        &self,
        upstream: &str,
        addr: SocketAddr,
    ) -> Result<(Arc<ServerGroup>, Arc<ServerState>), DrainError> {
        let shared = self.current.borrow().clone();
        let group = shared
            .upstreams
            .iter()
            .find(|u| u.config.name == upstream)
            .ok_or_else(|| DrainError::NoUpstream(upstream.into()))?;
        let server = group
            .servers
            .iter()
            .find(|s| s.addr == addr)
            .ok_or_else(|| DrainError::NoServer {
                upstream: upstream.into(),
                addr,
            })?;
        Ok((group.clone(), server.clone()))
    }
}

fn state(group: &ServerGroup, server: &ServerState, now: u64) -> Drained {
    Drained {
        drained: server.drained(),
        lease: server.drain.lease_left(now),
        changes: group.changes(),
    }
}

/// Starts the thread that ends drains whose lease ran out; it follows `generations`
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

/// Undrains every server of `shared` whose drain's lease ran out at `now`.
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
}
