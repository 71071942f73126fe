//! An upstream (a named group of servers) as all workers share it: its servers, its
//! balancer, its retry budget, and its queue (picking a server goes through the queue
//! when servers have `max_conns`).
//!
//! One balancer serves every worker: `least_conn` and `random_two` see the whole
//! process's load, and round robin keeps its exact sequence however the kernel spreads
//! connections over workers (nginx without a shared zone does not). The lock is held for
//! a few arithmetic operations per request.

use crate::state::health::{now_ns, LazyNow};
pub use crate::state::queue::{InFlight, Queue, Queued};
pub use crate::state::server::{ServerError, ServerState};
use crate::state::sticky::Stickiness;
use crate::tls::client::ClientTls;
use sluice_balance::{
    default_table_size, Balancer, Candidate, ConsistentHash, Context, LeastConn, PeakEwma,
    RandomTwo, Server, SmoothWeighted,
};
use sluice_config::{Balance, HashMethod, KeyTemplate, Upstream};
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The change counter of the upstream `previous` (a new one for a new upstream), with
/// one change more if its set of servers is not `servers`' (a reload or DNS changed it).
fn carried_changes(previous: Option<&ServerGroup>, servers: &[Arc<ServerState>]) -> Arc<AtomicU64> {
    let Some(previous) = previous else {
        return Arc::default();
    };
    let set = |list: &[Arc<ServerState>]| list.iter().map(|s| s.addr).collect::<HashSet<_>>();
    if set(&previous.servers) != set(servers) {
        previous.changed();
    }
    previous.changes.clone()
}

/// Weights are scaled by this so slow start can hand out fractions of a weight of 1.
const WEIGHT_SCALE: f64 = 1000.0;

/// What picking a server came to.
pub enum Pick<'q> {
    /// A server with room, and the slot taken on it.
    Server(usize, InFlight<'q>),
    /// Every server that would do is at its `max_conns`: the request waits.
    Queued(Queued),
    /// Every server that would do is full, and so is the queue.
    QueueFull,
    /// No server is available at all.
    None,
}

pub struct ServerGroup {
    pub config: Upstream,
    /// TLS to the servers, when the upstream has `tls`.
    pub tls: Option<ClientTls>,
    pub servers: Vec<Arc<ServerState>>,
    balancer: Mutex<Balancer>,
    budget: Mutex<RetryBudget>,
    /// Requests waiting for a server with room; carried across reloads.
    pub queue: Arc<Queue>,
    /// Some server has `max_conns`: picks go through the queue's lock.
    limited: bool,
    /// Changes to its set of servers or to a server's drain or trial limit, by anyone (see
    /// [`ServerGroup::changed`]); carried across reloads.
    changes: Arc<AtomicU64>,
    /// Its sticky sessions, when it has `sticky`; learned ones carried across reloads.
    pub sticky: Option<Stickiness>,
}

impl ServerGroup {
    /// Builds the upstream, reusing the state of servers listed in `previous`.
    pub fn new(config: Upstream, previous: Option<&ServerGroup>, tls: Option<ClientTls>) -> Self {
        let servers: Vec<Arc<ServerState>> = config
            .servers
            .iter()
            .map(|s| {
                let state = previous
                    .and_then(|p| p.servers.iter().find(|old| old.addr == s.addr))
                    .cloned()
                    .unwrap_or_else(|| ServerState::new(s.addr));
                state.configure(s.max_conns, config.adaptive);
                state
            })
            .collect();
        let balancer = Mutex::new(balancer_for(&config));
        let queue = previous.map(|p| p.queue.clone()).unwrap_or_default();
        let changes = carried_changes(previous, &servers);
        let sticky = config
            .sticky
            .as_ref()
            .map(|s| Stickiness::new(s, &servers, previous.and_then(|p| p.sticky.as_ref())));
        if !queue.is_empty() {
            // Limits raised or servers added: waiters take the new room first.
            queue.pump(&mut queue.lock(), &servers);
        }
        ServerGroup {
            tls,
            limited: config.adaptive || config.servers.iter().any(|s| s.max_conns.is_some()),
            servers,
            balancer,
            budget: Mutex::new(RetryBudget::carried(config.retry.budget, previous)),
            queue,
            config,
            changes,
            sticky,
        }
    }

    /// Counts a change to its servers' drains or limits. A tool that drains servers or
    /// tries limits (`sluice lab`) compares the count with its own changes to see that
    /// nobody else changed the upstream meanwhile: anything that changes its set of
    /// servers, a server's drain or its trial limit must count, and nothing that changes
    /// none of them (a lease's renewal) may.
    pub fn changed(&self) -> u64 {
        self.changes.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// How many changes it has seen (see [`ServerGroup::changed`]).
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Relaxed)
    }

    pub fn addr(&self, server: usize) -> SocketAddr {
        self.servers[server].addr
    }

    /// The hash key template, when this upstream balances by consistent hashing (with
    /// `sticky`, the key is the session cookie's value instead).
    pub fn key_template(&self) -> Option<&KeyTemplate> {
        match &self.config.balance {
            Balance::Hash { key, .. } => Some(key),
            _ => None,
        }
    }

    /// Picks an available server not in `tried` for a request with hash `key`, and takes
    /// a slot on it; or queues the request when every server that would do is at its
    /// `max_conns` (when hashing, the key's server is the only one that would do).
    pub fn pick(&self, key: &[u8], random: u64, tried: &[usize]) -> Pick<'_> {
        if !self.limited && self.queue.is_empty() {
            return match self.choose(key, random, tried, false) {
                Some(server) => {
                    Pick::Server(server, InFlight::take(&self.servers[server], &self.queue))
                }
                None => Pick::None,
            };
        }
        let mut waiters = self.queue.lock();
        if !waiters.is_empty() {
            self.queue.pump(&mut waiters, &self.servers);
        }
        let hashing = self.key_template().is_some();
        let chosen = self.choose(key, random, tried, !hashing);
        if let Some(server) = chosen.filter(|s| self.servers[*s].has_room()) {
            return Pick::Server(server, InFlight::take(&self.servers[server], &self.queue));
        }
        let accepts: Vec<SocketAddr> = match chosen {
            Some(server) => vec![self.addr(server)],
            None => self.usable_ignoring_room(tried),
        };
        if accepts.is_empty() {
            Pick::None
        } else if waiters.len() >= self.config.queue.max {
            self.queue.rejected.add(1);
            Pick::QueueFull
        } else {
            Pick::Queued(self.queue.push(&mut waiters, accepts))
        }
    }

    /// The balancer's choice among the available servers not in `tried` (with room, when
    /// `room`). When failures have ejected every server that the checks still consider
    /// up, they are tried anyway (as nginx does): an all-server blip must not turn into
    /// `eject_for` of 503s once the servers are back.
    fn choose(&self, key: &[u8], random: u64, tried: &[usize], room: bool) -> Option<usize> {
        let now = LazyNow::default();
        let n = self.servers.len();
        let mut stack = [Candidate::idle(1); 32];
        let mut heap = Vec::new();
        let snapshot: &mut [Candidate] = if n <= stack.len() {
            &mut stack[..n]
        } else {
            heap.resize(n, Candidate::idle(1));
            &mut heap
        };
        self.snapshot(snapshot, tried, &now, false);
        if !snapshot.iter().any(|c| c.available) {
            self.snapshot(snapshot, tried, &now, true);
        }
        if room {
            for (i, c) in snapshot.iter_mut().enumerate() {
                c.available &= self.servers[i].has_room();
            }
        }
        // A session's server takes it while the balancer could give it the request.
        let stuck = self
            .sticky
            .as_ref()
            .and_then(|s| s.server(key, &self.servers));
        if let Some(server) = stuck.filter(|s| snapshot[*s].available) {
            return Some(server);
        }
        let ctx = Context {
            key,
            random,
            now_ns: if self.wants_latency() { now.get() } else { 0 },
        };
        let mut balancer = self.balancer.lock().unwrap_or_else(|p| p.into_inner());
        // One consistent view for the whole pick, however other workers change the state.
        balancer.pick(n, |i| snapshot[i], ctx)
    }

    /// The servers a queued request would take: available and not tried, full or not.
    fn usable_ignoring_room(&self, tried: &[usize]) -> Vec<SocketAddr> {
        let now = LazyNow::default();
        let n = self.servers.len();
        let mut snapshot = vec![Candidate::idle(1); n];
        self.snapshot(&mut snapshot, tried, &now, false);
        if !snapshot.iter().any(|c| c.available) {
            self.snapshot(&mut snapshot, tried, &now, true);
        }
        (0..n)
            .filter(|i| snapshot[*i].available)
            .map(|i| self.addr(i))
            .collect()
    }

    /// What the balancer may know of each server now.
    fn snapshot(
        &self,
        out: &mut [Candidate],
        tried: &[usize],
        now: &LazyNow,
        ignore_ejection: bool,
    ) {
        let servers = &self.config.servers;
        let usable = |i: usize| {
            let health = &self.servers[i].health;
            !tried.contains(&i)
                && !self.servers[i].drained()
                && if ignore_ejection {
                    health.checked_up()
                } else {
                    health.available(now)
                }
        };
        let primaries_up = (0..servers.len()).any(|i| !servers[i].backup && usable(i));
        for (i, slot) in out.iter_mut().enumerate() {
            let ramp = self.servers[i].health.ramp(now, self.config.slow_start);
            *slot = Candidate {
                weight: ((f64::from(servers[i].weight) * WEIGHT_SCALE * ramp) as u32).max(1),
                active: self.servers[i].in_flight(),
                available: usable(i) && servers[i].backup != primaries_up,
            };
        }
    }

    /// Tells an adaptive limit how long `server` took to answer (`failed`: it timed
    /// out, refused, or answered a status that counts as a failure).
    pub fn learn(&self, server: usize, rtt: std::time::Duration, failed: bool) {
        if self.config.adaptive {
            self.servers[server].learn(rtt, failed);
        }
    }

    /// True when the balancer learns from response times (peak-EWMA).
    pub fn wants_latency(&self) -> bool {
        matches!(self.config.balance, Balance::PeakEwma { .. })
    }

    /// Tells a latency-aware balancer how long `server` took to answer.
    pub fn observe(&self, server: usize, rtt: std::time::Duration) {
        if self.wants_latency() {
            let mut balancer = self.balancer.lock().unwrap_or_else(|p| p.into_inner());
            balancer.observe(
                self.config.servers.len(),
                server,
                rtt.as_nanos() as u64,
                now_ns(),
            );
        }
    }

    /// Counts `requests` toward the retry budget (workers report in batches).
    pub fn deposit(&self, requests: u32) {
        let mut budget = self.budget.lock().unwrap_or_else(|p| p.into_inner());
        (0..requests).for_each(|_| budget.deposit());
    }

    /// Takes one retry from the budget, if it has one.
    pub fn withdraw(&self) -> bool {
        self.budget
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .withdraw()
    }
}

/// The algorithm an upstream's config asks for, built over its servers.
fn balancer_for(config: &Upstream) -> Balancer {
    let servers: Vec<Server> = config
        .servers
        .iter()
        .map(|s| Server {
            name: &s.name,
            weight: s.weight,
        })
        .collect();
    match &config.balance {
        Balance::RoundRobin => Balancer::RoundRobin(SmoothWeighted::new()),
        Balance::LeastConn => Balancer::LeastConn(LeastConn::new()),
        Balance::RandomTwo => Balancer::RandomTwo(RandomTwo::new()),
        Balance::PeakEwma { decay } => Balancer::PeakEwma(PeakEwma::new(decay.as_nanos() as u64)),
        Balance::Hash {
            method: HashMethod::Ketama,
            bound,
            ..
        } => Balancer::Hash(ConsistentHash::ketama(&servers, *bound)),
        Balance::Hash {
            method: HashMethod::Maglev,
            bound,
            ..
        } => Balancer::Hash(ConsistentHash::maglev(
            &servers,
            default_table_size(servers.len()),
            *bound,
        )),
    }
}

/// Retries may add at most `ratio` of the request rate: every request deposits `ratio`
/// of a token, every retry spends a whole one. A small reserve lets a quiet upstream
/// retry at all; the cap keeps a long calm spell from funding a retry storm.
struct RetryBudget {
    ratio: f64,
    tokens: f64,
}

const BUDGET_RESERVE: f64 = 10.0;

impl RetryBudget {
    /// A budget that keeps the tokens of the upstream it replaces: a reload must not hand a
    /// failing upstream a fresh reserve of retries.
    fn carried(ratio: f64, previous: Option<&ServerGroup>) -> Self {
        let tokens = previous.map_or(BUDGET_RESERVE, |p| {
            p.budget.lock().unwrap_or_else(|e| e.into_inner()).tokens
        });
        RetryBudget { ratio, tokens }
    }

    fn deposit(&mut self) {
        self.tokens = (self.tokens + self.ratio).min(BUDGET_RESERVE + 100.0 * self.ratio);
    }

    fn withdraw(&mut self) -> bool {
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_allows_about_its_ratio_of_retries() {
        let mut b = RetryBudget::carried(0.2, None);
        let mut retried = 0;
        for _ in 0..1000 {
            b.deposit();
            if b.withdraw() {
                retried += 1;
            }
        }
        // 20% of 1,000 plus the reserve of 10.
        assert!((205..=211).contains(&retried), "{retried}");
    }
}
