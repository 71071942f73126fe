//! One configuration generation: the validated config with the shared state built from
//! it, process-wide (`Shared`) and per worker (`Generation`, which adds the router).
//!
//! A reload builds the next generation from the previous one: an upstream whose config
//! did not change is carried over whole (balancer, budget, servers); a changed one keeps
//! the state of every server it still lists. Requests in flight finish on the generation
//! they started with.

use crate::access_log::AccessLog;
use crate::acme::Challenges;
use crate::metrics::RouteStats;
use crate::route::router::Router;
use crate::route::{RouteId, UpstreamId};
use crate::state::clients::ClientConns;
use crate::state::group::{ServerGroup, ServerState};
use crate::state::htpasswd::{self, Users};
use crate::state::limits::{self, Limiter};
use crate::state::verified::Verified;
use crate::tls::client::ClientTls;
use crate::tls::TlsListener;
use sluice_config::{Config, Route};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;

pub struct Shared {
    pub config: Arc<Config>,
    pub upstreams: Vec<Arc<ServerGroup>>,
    /// Each route's counters (by index of `config.routes`), carried over a reload for a
    /// route with the same host and path.
    pub routes: Vec<Arc<RouteStats>>,
    /// Every server address any upstream lists (pools keep connections only to these).
    pub addresses: HashSet<SocketAddr>,
    /// Where finished requests are logged, when `access_log` is set.
    pub access_log: Option<Arc<AccessLog>>,
    /// The TLS listeners, by configured address (carried over a reload, certificates
    /// read again).
    pub tls: HashMap<SocketAddr, Arc<TlsListener>>,
    /// ACME HTTP-01 challenges being validated (one set for the process's life).
    pub challenges: Arc<Challenges>,
    /// The rate limits, by index of `config.limits`.
    pub limits: Vec<Arc<Limiter>>,
    /// Connections per client, for listeners with `max_conns_per_client` (by bind).
    pub clients: HashMap<SocketAddr, Arc<ClientConns>>,
    /// The users of each route with `auth_basic` (by index of `config.routes`), read
    /// from their htpasswd files with the config.
    users: Vec<Option<Arc<Users>>>,
}

impl Shared {
    /// Route `r`'s settings.
    pub fn route(&self, r: RouteId) -> &sluice_config::Route {
        &self.config.routes[r.0]
    }

    /// The users who may use route `r`, when it has `auth_basic`.
    pub fn users(&self, r: RouteId) -> Option<&Arc<Users>> {
        self.users.get(r.0)?.as_ref()
    }

    /// Route `r`'s counters.
    pub fn route_stats(&self, r: RouteId) -> &RouteStats {
        &self.routes[r.0]
    }

    /// Upstream `u`'s state (its servers, balancer and queue).
    pub fn upstream(&self, u: UpstreamId) -> &ServerGroup {
        &self.upstreams[u.0]
    }

    /// The upstream route `r` forwards to, if it forwards.
    pub fn upstream_of(&self, r: RouteId) -> Option<UpstreamId> {
        self.route(r).upstream().map(UpstreamId)
    }

    /// The state for `config`, carried over from `previous` where it stays. The access
    /// log is `previous`'s when its settings did not change; [`Shared::open`] opens a
    /// new one.
    #[cfg(test)]
    pub fn new(config: Config, previous: Option<&Shared>) -> Self {
        let log = previous
            .and_then(|p| p.access_log.clone())
            .filter(|log| Some(&log.config) == config.access_log.as_ref());
        let tls =
            crate::tls::listeners(&config, previous.map(|p| &p.tls)).expect("test certificates");
        let clients =
            crate::tls::clients(&config, |u| unchanged(previous, u)).expect("test CA files");
        let users = htpasswd::for_routes(&config).expect("test htpasswd files");
        Self::with_log(config, previous, log, (tls, clients, users))
    }

    /// Like [`Shared::new`], opening the access log when it is new or changed and
    /// reading the certificates (an error names the file, and nothing changes).
    pub fn open(config: Config, previous: Option<&Shared>) -> std::io::Result<Self> {
        let kept = previous
            .and_then(|p| p.access_log.clone())
            .filter(|log| Some(&log.config) == config.access_log.as_ref());
        let log = match (kept, &config.access_log) {
            (Some(log), _) => Some(log),
            (None, Some(settings)) => Some(Arc::new(AccessLog::open(settings)?)),
            (None, None) => None,
        };
        let invalid = |e: sluice_config::Errors| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string())
        };
        let clients = crate::tls::clients(&config, |u| unchanged(previous, u)).map_err(invalid)?;
        let users = htpasswd::for_routes(&config).map_err(invalid)?;
        // Last: certificates are swapped into the listeners that stay, so nothing
        // after this may fail.
        let tls = crate::tls::listeners(&config, previous.map(|p| &p.tls)).map_err(invalid)?;
        Ok(Self::with_log(config, previous, log, (tls, clients, users)))
    }

    fn with_log(
        config: Config,
        previous: Option<&Shared>,
        access_log: Option<Arc<AccessLog>>,
        (tls, clients, users): Read,
    ) -> Self {
        let upstreams: Vec<Arc<ServerGroup>> = config
            .upstreams
            .iter()
            .zip(clients)
            .map(|(u, client)| {
                let old =
                    previous.and_then(|p| p.upstreams.iter().find(|o| o.config.name == u.name));
                match old {
                    Some(old) if old.config == *u => old.clone(),
                    _ => Arc::new(ServerGroup::new(u.clone(), old.map(|o| &**o), client)),
                }
            })
            .collect();
        let addresses = upstreams
            .iter()
            .flat_map(|u| u.servers.iter().map(|s| s.addr))
            .collect();
        let routes = config
            .routes
            .iter()
            .map(|r| {
                let old = previous.and_then(|p| {
                    let same = |o: &&Route| o.host == r.host && o.path == r.path;
                    let i = p.config.routes.iter().position(|o| same(&o))?;
                    p.routes.get(i).cloned()
                });
                old.unwrap_or_default()
            })
            .collect();
        let limits = limits::carried(&config.limits, previous.map_or(&[], |p| &p.limits[..]));
        let clients = config
            .listeners
            .iter()
            .filter(|l| l.max_conns_per_client.is_some())
            .map(|l| {
                let kept = previous.and_then(|p| p.clients.get(&l.bind).cloned());
                (l.bind, kept.unwrap_or_default())
            })
            .collect();
        let next = Shared {
            config: Arc::new(config),
            upstreams,
            routes,
            addresses,
            access_log,
            tls,
            challenges: previous.map(|p| p.challenges.clone()).unwrap_or_default(),
            limits,
            clients,
            users,
        };
        if let Some(previous) = previous {
            previous.retire_missing(&next);
        }
        next
    }

    /// Retires every server of `self` that `next` no longer has (as the same state), so
    /// that its tunnels close; the others' tunnels stay open across the reload.
    fn retire_missing(&self, next: &Shared) {
        let kept: Vec<&Arc<ServerState>> = next
            .upstreams
            .iter()
            .flat_map(|u| u.servers.iter())
            .collect();
        for server in self.upstreams.iter().flat_map(|u| u.servers.iter()) {
            if !kept.iter().any(|k| Arc::ptr_eq(k, server)) {
                server.retire();
            }
        }
    }
}

/// What a generation reads from files besides the config: the TLS listeners'
/// certificates, the upstreams' TLS clients and each route's htpasswd users.
type Read = (
    HashMap<SocketAddr, Arc<TlsListener>>,
    Vec<Option<ClientTls>>,
    Vec<Option<Arc<Users>>>,
);

/// True when `previous` has upstream `u` with the same settings (it is then reused whole).
fn unchanged(previous: Option<&Shared>, u: &sluice_config::Upstream) -> bool {
    previous.is_some_and(|p| p.upstreams.iter().any(|o| o.config == *u))
}

/// What a worker serves a request with: taken once per request, so a reload never
/// changes the rules halfway through one.
pub struct Generation {
    pub shared: Arc<Shared>,
    pub router: Router,
    /// Requests not yet added to each upstream's retry budget: reported in batches so the
    /// budget's lock is not taken on every request.
    unreported: Vec<Cell<u32>>,
    /// Users and passwords this worker verified lately (`guard`).
    pub verified: Verified,
}

/// Requests a worker counts before it reports them to the retry budget.
const REPORT_EVERY: u32 = 32;

impl Generation {
    /// Counts a request to upstream `u` toward its retry budget.
    pub fn count_request(&self, u: UpstreamId) {
        let n = self.unreported[u.0].get() + 1;
        self.unreported[u.0].set(n);
        if n >= REPORT_EVERY {
            self.report(u);
        }
    }

    /// Adds the requests counted so far to upstream `u`'s budget (before spending from it).
    pub fn report(&self, u: UpstreamId) {
        self.shared
            .upstream(u)
            .deposit(self.unreported[u.0].replace(0));
    }

    pub fn new(shared: Arc<Shared>) -> Self {
        Generation {
            router: Router::new(&shared.config),
            unreported: shared.upstreams.iter().map(|_| Cell::new(0)).collect(),
            verified: Verified::default(),
            shared,
        }
    }
}
