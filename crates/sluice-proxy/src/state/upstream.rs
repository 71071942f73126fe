//! An upstream as all workers share it: its servers (in-flight counts and health), its
//! balancer, and its retry budget.
//!
//! One balancer serves every worker: `least_conn` and `random_two` see the whole
//! process's load, and round robin keeps its exact sequence however the kernel spreads
//! connections over workers (nginx without a shared zone does not). The lock is held for
//! a few arithmetic operations per request.

use crate::state::health::{now_ns, Health, LazyNow};
use crate::tls::client::ClientTls;
use sluice_balance::{
    default_table_size, Balancer, Candidate, ConsistentHash, Context, LeastConn, PeakEwma,
    RandomTwo, Server, SmoothWeighted,
};
use sluice_config::{Balance, HashMethod, KeyTemplate, Upstream};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;
use tokio::sync::Notify;

/// Weights are scaled by this so slow start can hand out fractions of a weight of 1.
const WEIGHT_SCALE: f64 = 1000.0;

/// One server's shared state. Kept across reloads while the server stays in its upstream,
/// so in-flight counts and health survive a config change.
pub struct ServerState {
    pub addr: SocketAddr,
    active: AtomicU32,
    pub health: Health,
    /// Set when a reload takes the server out of its upstream: its tunnels close.
    retired: AtomicBool,
    retire: Notify,
    /// Its counters and histograms; they survive reloads with the server.
    pub stats: crate::metrics::ServerStats,
    /// Drained by the operator: no new requests (in-flight ones finish).
    drained: AtomicBool,
    /// Its last failures, newest last, for the admin API.
    errors: Mutex<VecDeque<ServerError>>,
}

/// A failure blamed on a server, as the admin API shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub at: SystemTime,
    pub route: String,
    pub status: u16,
    pub cause: String,
}

/// Failures kept per server.
const KEPT_ERRORS: usize = 20;

impl ServerState {
    pub fn new(addr: SocketAddr) -> Arc<Self> {
        Arc::new(ServerState {
            addr,
            active: AtomicU32::new(0),
            health: Health::default(),
            retired: AtomicBool::new(false),
            retire: Notify::new(),
            stats: Default::default(),
            drained: AtomicBool::new(false),
            errors: Mutex::new(VecDeque::new()),
        })
    }

    /// Stops (true) or resumes (false) sending new requests to the server.
    pub fn set_drained(&self, drained: bool) {
        self.drained.store(drained, Ordering::Relaxed);
    }

    pub fn drained(&self) -> bool {
        self.drained.load(Ordering::Relaxed)
    }

    /// Keeps a failure blamed on the server (a rare path: a lock is fine here).
    pub fn remember(&self, error: ServerError) {
        let mut errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        if errors.len() == KEPT_ERRORS {
            errors.pop_front();
        }
        errors.push_back(error);
    }

    /// Its last failures, oldest first.
    pub fn last_errors(&self) -> Vec<ServerError> {
        let errors = self.errors.lock().unwrap_or_else(|p| p.into_inner());
        errors.iter().cloned().collect()
    }

    /// Requests (and tunnels) on this server now, all workers together.
    pub fn in_flight(&self) -> u32 {
        self.active.load(Ordering::Relaxed)
    }

    /// Marks the server as gone from the config and wakes its tunnels.
    pub fn retire(&self) {
        self.retired.store(true, Ordering::SeqCst);
        self.retire.notify_waiters();
    }

    /// Completes once the server has been retired.
    pub async fn retired(&self) {
        loop {
            let notified = self.retire.notified();
            if self.retired.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

/// Counts one request in flight on a server until dropped.
pub struct InFlight(Arc<ServerState>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}

pub struct UpstreamShared {
    pub config: Upstream,
    /// TLS to the servers, when the upstream has `tls`.
    pub tls: Option<ClientTls>,
    pub servers: Vec<Arc<ServerState>>,
    balancer: Mutex<Balancer>,
    budget: Mutex<RetryBudget>,
}

impl UpstreamShared {
    /// Builds the upstream, reusing the state of servers listed in `previous`.
    pub fn new(
        config: Upstream,
        previous: Option<&UpstreamShared>,
        tls: Option<ClientTls>,
    ) -> Self {
        let servers = config
            .servers
            .iter()
            .map(|s| {
                previous
                    .and_then(|p| p.servers.iter().find(|old| old.addr == s.addr))
                    .cloned()
                    .unwrap_or_else(|| ServerState::new(s.addr))
            })
            .collect();
        let balancer = Mutex::new(balancer_for(&config));
        UpstreamShared {
            tls,
            servers,
            balancer,
            budget: Mutex::new(RetryBudget::carried(config.retry.budget, previous)),
            config,
        }
    }

    pub fn addr(&self, server: usize) -> SocketAddr {
        self.servers[server].addr
    }

    /// The hash key template, when this upstream balances by consistent hashing.
    pub fn key_template(&self) -> Option<&KeyTemplate> {
        match &self.config.balance {
            Balance::Hash { key, .. } => Some(key),
            _ => None,
        }
    }

    /// Picks an available server not in `tried` for a request with hash `key`, and counts
    /// the request as in flight on it. Backup servers are candidates only while no
    /// primary is available. When failures have ejected every server that the checks
    /// still consider up, they are tried anyway (as nginx does): an all-server blip must
    /// not turn into `eject_for` of 503s once the servers are back.
    pub fn pick(&self, key: &[u8], random: u64, tried: &[usize]) -> Option<(usize, InFlight)> {
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
        let ctx = Context {
            key,
            random,
            now_ns: if self.wants_latency() { now.get() } else { 0 },
        };
        let mut balancer = self.balancer.lock().unwrap_or_else(|p| p.into_inner());
        // One consistent view for the whole pick, however other workers change the state.
        let server = balancer.pick(n, |i| snapshot[i], ctx)?;
        let state = &self.servers[server];
        state.active.fetch_add(1, Ordering::Relaxed);
        Some((server, InFlight(state.clone())))
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
                active: self.servers[i].active.load(Ordering::Relaxed),
                available: usable(i) && servers[i].backup != primaries_up,
            };
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
    fn carried(ratio: f64, previous: Option<&UpstreamShared>) -> Self {
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
