//! One configuration generation: the validated config with the shared state built from
//! it, process-wide (`Shared`) and per worker (`Generation`, which adds the router).
//!
//! A reload builds the next generation from the previous one: an upstream whose config
//! did not change is carried over whole (balancer, budget, servers); a changed one keeps
//! the state of every server it still lists. Requests in flight finish on the generation
//! they started with.

use crate::route::Router;
use crate::upstream::UpstreamShared;
use sluice_config::Config;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

pub struct Shared {
    pub config: Arc<Config>,
    pub upstreams: Vec<Arc<UpstreamShared>>,
}

impl Shared {
    pub fn new(config: Config, previous: Option<&Shared>) -> Self {
        let upstreams = config
            .upstreams
            .iter()
            .map(|u| {
                let old =
                    previous.and_then(|p| p.upstreams.iter().find(|o| o.config.name == u.name));
                match old {
                    Some(old) if old.config == *u => old.clone(),
                    _ => Arc::new(UpstreamShared::new(u.clone(), old.map(|o| &**o))),
                }
            })
            .collect();
        Shared {
            config: Arc::new(config),
            upstreams,
        }
    }

    /// Every server address any upstream lists.
    pub fn addresses(&self) -> HashSet<SocketAddr> {
        self.upstreams
            .iter()
            .flat_map(|u| u.servers.iter().map(|s| s.addr))
            .collect()
    }
}

/// What a worker serves a request with: taken once per request, so a reload never
/// changes the rules halfway through one.
pub struct Generation {
    pub config: Arc<Config>,
    pub router: Router,
    pub upstreams: Vec<Arc<UpstreamShared>>,
    pub shared: Arc<Shared>,
}

impl Generation {
    pub fn new(shared: Arc<Shared>) -> Self {
        Generation {
            config: shared.config.clone(),
            router: Router::new(&shared.config),
            upstreams: shared.upstreams.clone(),
            shared,
        }
    }
}
