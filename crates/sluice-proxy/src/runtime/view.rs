//! A running proxy seen from outside the data path (the admin listener): what it serves
//! and every counter, copied out as plain data. Taking a snapshot sums the workers'
//! counter slots and takes no lock a request takes.

use crate::metrics::{HistogramTotal, ListenerTotals, ProxyStats, ServerTotals};
use crate::runtime::capacity::ClientCap;
use crate::state::generation::Shared;
use crate::state::group::ServerError;
use crate::state::health::now_ns;
use sluice_config::{Action, Balance};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::sync::watch;

/// A handle on a running proxy for observers; cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct View {
    pub(crate) current: watch::Receiver<Arc<Shared>>,
    pub(crate) stats: Arc<ProxyStats>,
    pub(crate) listening: Arc<Mutex<Vec<(SocketAddr, SocketAddr)>>>,
    pub(crate) workers: usize,
    pub(crate) cap: Arc<ClientCap>,
}

/// Everything an observer reads, at one moment.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub started: SystemTime,
    pub workers: usize,
    /// Client connections open now, on every listener.
    pub client_connections: u64,
    /// The most client connections open at once: what the open-file limit leaves after
    /// a reserve (new ones wait in the listen queue at it).
    pub client_connections_max: u64,
    /// 1 at start, one more per applied reload.
    pub generation: u64,
    pub reloads: u64,
    pub reload_failures: u64,
    pub last_reload: Option<SystemTime>,
    pub listeners: Vec<ListenerView>,
    pub routes: Vec<RouteView>,
    pub upstreams: Vec<UpstreamView>,
    pub limits: Vec<LimitView>,
    /// Server names followed in DNS.
    pub dns: Vec<DnsView>,
}

/// A server name followed in DNS: its lookups, and the servers it gives now.
#[derive(Debug, Clone)]
pub struct DnsView {
    pub upstream: String,
    pub name: String,
    pub lookups: u64,
    pub failures: u64,
    pub servers: u64,
}

/// A `[limit.NAME]`: requests it refused, and the clients it holds state for now.
#[derive(Debug, Clone)]
pub struct LimitView {
    pub name: String,
    pub rejected: u64,
    pub keys: u64,
}

#[derive(Debug, Clone)]
pub struct ListenerView {
    /// As configured.
    pub bind: SocketAddr,
    /// As bound (port 0 resolved).
    pub bound: SocketAddr,
    pub totals: ListenerTotals,
}

#[derive(Debug, Clone)]
pub struct RouteView {
    /// `host` + `path`, as a label: `example.com/api/` or `/api/` for any host.
    pub name: String,
    pub upstream: String,
    /// Requests by the status the client got, 1xx to 5xx.
    pub responses: [u64; 5],
    /// Requests its guards refused, by [`crate::metrics::Refused::ALL`].
    pub refused: [u64; 2],
}

#[derive(Debug, Clone)]
pub struct UpstreamView {
    pub name: String,
    pub balance: String,
    pub servers: Vec<ServerView>,
    pub queue: QueueView,
    /// Changes to its set of servers or to a server's drain since it was first
    /// configured, by anyone: a drain, an undrain, a lease running out, a reload, DNS.
    pub changes: u64,
    /// How it keeps sessions on their server, when it is `sticky`.
    pub sticky: Option<StickyView>,
}

/// An upstream's `sticky`: by which cookie, and (`learn`) how many sessions it knows.
#[derive(Debug, Clone)]
pub struct StickyView {
    /// `cookie` (sluice's own) or `learn` (the application's).
    pub mode: &'static str,
    pub cookie: String,
    pub sessions: Option<usize>,
}

/// The upstream's queue of requests waiting for a server below its `max_conns`.
#[derive(Debug, Clone, Default)]
pub struct QueueView {
    /// Waiting now.
    pub waiting: u64,
    /// How long requests waited, each once however its wait ended.
    pub wait: HistogramTotal,
    /// Answered 503: the wait ran out, or the queue was full.
    pub timeouts: u64,
    pub rejected: u64,
}

#[derive(Debug, Clone)]
pub struct ServerView {
    pub addr: SocketAddr,
    pub weight: u32,
    pub backup: bool,
    pub in_flight: u32,
    /// Its concurrency limit now: its `max_conns` (a trial's while one holds), or its
    /// adaptive limit.
    pub max_conns: Option<u32>,
    /// Its `max_conns` in the config.
    pub max_conns_config: Option<u32>,
    /// What its trial limit's lease has left, while one holds.
    pub limit_lease: Option<Duration>,
    /// Idle pooled connections to its address (all upstreams listing it share them).
    pub idle_pooled: u64,
    /// Active health checks' verdict (true without checks).
    pub checked_up: bool,
    /// How much longer a passive ejection lasts, if the server is ejected now.
    pub ejected_for: Option<Duration>,
    /// Drained through the admin API: no new requests.
    pub drained: bool,
    /// What the drain's lease has left, when it is drained with a lease.
    pub lease: Option<Duration>,
    pub totals: ServerTotals,
    /// Its last failures, oldest first.
    pub last_errors: Vec<ServerError>,
}

impl ServerView {
    /// Whether requests may go to it now (a drained server may still be up).
    pub fn up(&self) -> bool {
        self.checked_up && self.ejected_for.is_none()
    }
}

impl View {
    pub fn snapshot(&self) -> Snapshot {
        let shared = self.current.borrow().clone();
        let stats = &self.stats;
        let last = stats.last_reload_unix_ms();
        Snapshot {
            started: stats.started,
            workers: self.workers,
            client_connections: self.cap.open() as u64,
            client_connections_max: self.cap.max() as u64,
            generation: stats.generation.get(),
            reloads: stats.reloads.get(),
            reload_failures: stats.reload_failures.get(),
            last_reload: (last > 0).then(|| SystemTime::UNIX_EPOCH + Duration::from_millis(last)),
            listeners: self.listeners(),
            routes: routes(&shared),
            upstreams: upstreams(&shared, stats),
            dns: dns(stats),
            limits: shared
                .limits
                .iter()
                .map(|l| LimitView {
                    name: l.config.name.clone(),
                    rejected: l.rejected.get(),
                    keys: l.keys() as u64,
                })
                .collect(),
        }
    }

    fn listeners(&self) -> Vec<ListenerView> {
        let listening = self
            .listening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let stats = self.stats.listeners();
        listening
            .into_iter()
            .map(|(bind, bound)| ListenerView {
                bind,
                bound,
                totals: stats
                    .iter()
                    .find(|(a, _)| *a == bound)
                    .map(|(_, s)| s.totals())
                    .unwrap_or_default(),
            })
            .collect()
    }
}

fn routes(shared: &Shared) -> Vec<RouteView> {
    let config = &shared.config;
    config
        .routes
        .iter()
        .zip(&shared.routes)
        .map(|(r, stats)| {
            let host = match &r.host {
                None => String::new(),
                Some(sluice_config::HostMatch::Exact(h)) => h.clone(),
                Some(sluice_config::HostMatch::Suffix(s)) => format!("*{s}"),
            };
            RouteView {
                name: format!("{host}{}", r.path),
                upstream: match &r.action {
                    Action::Proxy { upstream } => config.upstreams[*upstream].name.clone(),
                    Action::Return(ret) => format!("(return {})", ret.status),
                    Action::Files { root, .. } => format!("(files {})", root.display()),
                },
                responses: stats.totals(),
                refused: stats.refused(),
            }
        })
        .collect()
}

fn balance_name(b: &Balance) -> &'static str {
    match b {
        Balance::RoundRobin => "round_robin",
        Balance::LeastConn => "least_conn",
        Balance::RandomTwo => "random_two",
        Balance::PeakEwma { .. } => "peak_ewma",
        Balance::Hash { .. } => "hash",
    }
}

fn dns(stats: &ProxyStats) -> Vec<DnsView> {
    use std::sync::atomic::Ordering;
    stats
        .dns_names()
        .into_iter()
        .map(|(upstream, name, n)| DnsView {
            upstream,
            name,
            lookups: n.lookups.get(),
            failures: n.failures.get(),
            servers: n.servers.load(Ordering::Relaxed),
        })
        .collect()
}

fn upstreams(shared: &Shared, stats: &ProxyStats) -> Vec<UpstreamView> {
    let now = now_ns();
    shared
        .upstreams
        .iter()
        .map(|u| UpstreamView {
            name: u.config.name.clone(),
            balance: balance_name(&u.config.balance).into(),
            servers: u
                .servers
                .iter()
                .zip(&u.config.servers)
                .map(|(state, config)| {
                    let until = state.health.ejected_until_ns();
                    ServerView {
                        addr: state.addr,
                        weight: config.weight,
                        backup: config.backup,
                        in_flight: state.in_flight(),
                        max_conns: state.limited().then(|| state.limit()),
                        max_conns_config: state.configured_max_conns(),
                        limit_lease: state.trial.lease_left(now),
                        idle_pooled: stats.idle(state.addr) + state.idle.len() as u64,
                        checked_up: state.health.checked_up(),
                        ejected_for: (until > now).then(|| Duration::from_nanos(until - now)),
                        drained: state.drained(),
                        lease: state.drain.lease_left(now),
                        totals: state.stats.totals(),
                        last_errors: state.last_errors(),
                    }
                })
                .collect(),
            queue: QueueView {
                waiting: u.queue.len() as u64,
                wait: u.queue.wait.total(),
                timeouts: u.queue.timeouts.get(),
                rejected: u.queue.rejected.get(),
            },
            changes: u.changes(),
            sticky: u.sticky.as_ref().map(|s| StickyView {
                mode: if s.sessions().is_some() {
                    "learn"
                } else {
                    "cookie"
                },
                cookie: s.cookie.clone(),
                sessions: s.sessions(),
            }),
        })
        .collect()
}
