//! Servers found in DNS (`{ dns = ... }` entries), followed while sluice runs.
//!
//! Each name is asked again when its answer's TTL runs out, kept between `[resolver]`'s
//! `min_ttl` and `max_ttl`. When what a name resolves to changes, the running config is
//! rebuilt with the servers found and applied as a reload is, so the servers that stay
//! keep their state (health, ejections, requests in flight, pooled connections). A
//! lookup that fails keeps the servers found last and says so in the log. This module
//! owns the names; the proxy only ever sees addresses.

use crate::lookup;

use hickory_resolver::TokioResolver;
use sluice_config::{Config, Discover, Server};
use sluice_proxy::metrics::ProxyStats;
use sluice_proxy::Proxy;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A `dns` entry: its upstream and its name as written.
type Key = (String, String);

/// The names of a running config and what they resolved to.
pub struct Discovery {
    runtime: tokio::runtime::Runtime,
    state: Mutex<State>,
    wake: Condvar,
    /// Set by [`Discovery::stop`]; read between lookups without the lock.
    stopping: AtomicBool,
}

struct State {
    /// The config as loaded: fixed servers only.
    base: Config,
    /// Made when the config has names to look up.
    resolver: Option<TokioResolver>,
    found: HashMap<Key, Found>,
    /// Where lookups are counted (`/metrics`, `/api/upstreams`), once the proxy runs.
    stats: Option<Arc<ProxyStats>>,
}

/// The servers a name gave last, and when to ask again.
#[derive(Clone)]
struct Found {
    servers: Vec<Server>,
    due: Instant,
    /// Lookups failed in a row since the last answer.
    failures: u32,
}

impl Discovery {
    /// Looks up every name of `base` once, and returns the config to start with: `base`
    /// with the servers found (none for a name whose lookup failed: it is asked again
    /// soon, and its servers join when it answers).
    pub fn start(base: Config) -> anyhow::Result<(Discovery, Config)> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let resolver = resolver_for(&runtime, &base, None)?;
        let mut state = State {
            base,
            resolver,
            found: HashMap::new(),
            stats: None,
        };
        state.found = runtime.block_on(lookup_all(&state, &HashMap::new()));
        let config = compose(&state.base, &state.found);
        let discovery = Discovery {
            runtime,
            state: Mutex::new(state),
            wake: Condvar::new(),
            stopping: AtomicBool::new(false),
        };
        Ok((discovery, config))
    }

    /// Applies a reloaded config: its names are looked up now (those that fail keep what
    /// they found before, if they were in the old config too), then the proxy reloads.
    pub fn reload(&self, proxy: &Proxy, base: Config) -> Result<String, String> {
        let mut state = self.lock();
        let resolver = resolver_for(&self.runtime, &base, Some(&state))
            .map_err(|e| format!("[resolver]: {e}; still serving the previous config"))?;
        let next = State {
            base,
            resolver,
            found: HashMap::new(),
            stats: state.stats.clone(),
        };
        let found = self.runtime.block_on(lookup_all(&next, &state.found));
        let summary = proxy
            .reload(compose(&next.base, &found))
            .map_err(|e| format!("reload failed: {e}; still serving the previous config"))?;
        *state = State { found, ..next };
        self.wake.notify_all();
        Ok(summary.to_string())
    }

    /// Follows the names until [`Discovery::stop`]: asks each when it is due, and reloads
    /// the proxy when an answer changes its servers.
    pub fn follow(&self, proxy: &Proxy) {
        let mut state = self.lock();
        while !self.stopping.load(Ordering::Acquire) {
            let now = Instant::now();
            let next = state.found.values().map(|f| f.due).min();
            // Without names it sleeps until a reload brings some, or the stop.
            match next {
                Some(due) if due <= now => self.refresh_due(&mut state, proxy),
                Some(due) => state = self.wait(state, Some(due - now)),
                None => state = self.wait(state, None),
            }
        }
    }

    /// Counts lookups in the proxy's `stats` from now on, the first ones (made before the
    /// proxy started) included.
    pub fn attach(&self, stats: Arc<ProxyStats>) {
        let mut state = self.lock();
        for (key, found) in &state.found {
            count(&stats, key, found);
        }
        state.stats = Some(stats);
    }

    /// Ends [`Discovery::follow`], at once or after the lookup under way. The lock is
    /// taken to notify, so `follow` is either before its check of `stopping` or waiting.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        let _state = self.lock();
        self.wake.notify_all();
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait<'a>(
        &self,
        state: MutexGuard<'a, State>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, State> {
        match timeout {
            Some(t) => match self.wake.wait_timeout(state, t) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            },
            None => self.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
        }
    }

    /// Asks every name that is due; reloads the proxy once if any servers changed.
    fn refresh_due(&self, state: &mut State, proxy: &Proxy) {
        let now = Instant::now();
        let due: Vec<Key> = state
            .found
            .iter()
            .filter(|(_, f)| f.due <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let mut changed = Vec::new();
        for key in due {
            if self.stopping.load(Ordering::Acquire) {
                return;
            }
            let Some(entry) = find(&state.base, &key) else {
                state.found.remove(&key);
                continue;
            };
            let before = state.found.get(&key).cloned();
            let after = self
                .runtime
                .block_on(lookup_one(state, &key, entry, before.as_ref()));
            if before.as_ref().map(|b| &b.servers) != Some(&after.servers) {
                changed.push((key.clone(), before));
            }
            state.found.insert(key, after);
        }
        if changed.is_empty() || self.stopping.load(Ordering::Acquire) {
            return;
        }
        let said: Vec<String> = changed
            .iter()
            .map(|(key, before)| describe(key, before.as_ref(), &state.found[key]))
            .collect();
        match proxy.reload(compose(&state.base, &state.found)) {
            Ok(_) => tracing::info!("dns: {}", said.join("; ")),
            Err(e) => {
                tracing::error!(cause = %e, "dns: servers changed ({}) but the reload failed; still serving the previous ones", said.join("; "));
                // Back to what is served, so the next lookup sees the change again.
                for (key, before) in changed {
                    let servers = before.map(|b| b.servers).unwrap_or_default();
                    if let Some(f) = state.found.get_mut(&key) {
                        f.servers = servers;
                    }
                }
            }
        }
    }
}

/// The resolver for `base`: none when it has no names; the one of `before` when its
/// `[resolver]` settings are the same.
fn resolver_for(
    runtime: &tokio::runtime::Runtime,
    base: &Config,
    before: Option<&State>,
) -> anyhow::Result<Option<TokioResolver>> {
    if base.upstreams.iter().all(|u| u.discover.is_empty()) {
        return Ok(None);
    }
    let same = before.filter(|s| s.base.resolver == base.resolver);
    if let Some(resolver) = same.and_then(|s| s.resolver.clone()) {
        return Ok(Some(resolver));
    }
    let made = runtime.block_on(async { lookup::resolver(&base.resolver) });
    made.map(Some)
        .map_err(|e| anyhow::anyhow!("cannot make a DNS resolver: {e}"))
}

/// Looks up every name of `state.base`, all at once (a start or reload waits for the
/// slowest, not for their sum); a failed lookup keeps what `before` had for it.
async fn lookup_all(state: &State, before: &HashMap<Key, Found>) -> HashMap<Key, Found> {
    let names: Vec<(Key, &Discover)> = state
        .base
        .upstreams
        .iter()
        .flat_map(|up| {
            up.discover
                .iter()
                .map(|d| ((up.name.clone(), d.name.clone()), d))
        })
        .collect();
    let lookups = names
        .iter()
        .map(|(key, d)| lookup_one(state, key, d, before.get(key)));
    let found = futures_util::future::join_all(lookups).await;
    names.into_iter().map(|(key, _)| key).zip(found).collect()
}

/// One lookup of `d`, the name `key`: the servers it found and when to ask again; on
/// failure, the servers of `before` (if any), and a retry that backs off to `max_ttl`.
async fn lookup_one(state: &State, key: &Key, d: &Discover, before: Option<&Found>) -> Found {
    let bounds = &state.base.resolver;
    // hickory bounds each query; this bounds the lookup (SRV targets, both families).
    let within = bounds.timeout * 4;
    let answer = match &state.resolver {
        Some(resolver) => tokio::time::timeout(within, lookup::lookup(resolver, d))
            .await
            .unwrap_or_else(|_| Err(format!("no answer within {within:?}"))),
        None => Err("no resolver".to_string()),
    };
    let found = match answer {
        Ok(answer) => Found {
            servers: usable(answer.servers, key, &state.base),
            due: Instant::now() + answer.ttl.clamp(bounds.min_ttl, bounds.max_ttl),
            failures: 0,
        },
        Err(e) => {
            let servers = before.map(|b| b.servers.clone()).unwrap_or_default();
            let failures = before.map_or(1, |b| b.failures.saturating_add(1));
            tracing::warn!(
                upstream = %key.0, name = %key.1, cause = %e,
                "dns: lookup failed; keeping the {} server(s) found last", servers.len()
            );
            let retry = bounds.min_ttl.max(Duration::from_secs(1)) * 2u32.pow(failures.min(6) - 1);
            Found {
                servers,
                due: Instant::now() + retry.min(bounds.max_ttl),
                failures,
            }
        }
    };
    if let Some(stats) = &state.stats {
        count(stats, key, &found);
    }
    found
}

/// The servers found minus those sluice must not connect to (port 0, an unspecified
/// address, one of its own listeners: requests would loop), each dropped with a warning.
fn usable(servers: Vec<Server>, key: &Key, config: &Config) -> Vec<Server> {
    let binds: Vec<_> = config.listeners.iter().map(|l| l.bind).collect();
    servers
        .into_iter()
        .filter(|s| {
            let bad = crate::names::unconnectable(&s.addr) || crate::names::loops(&s.addr, &binds);
            if bad {
                tracing::warn!(upstream = %key.0, name = %key.1, addr = %s.addr, "dns: found an address sluice must not connect to (port 0, unspecified, or its own listener); left out");
            }
            !bad
        })
        .collect()
}

/// One lookup of `key`, and what it left, in the proxy's counters.
fn count(stats: &ProxyStats, key: &Key, found: &Found) {
    let name = stats.dns_name(&key.0, &key.1);
    name.lookups.add(1);
    if found.failures > 0 {
        name.failures.add(1);
    }
    name.servers
        .store(found.servers.len() as u64, Ordering::Relaxed);
}

fn find<'a>(config: &'a Config, key: &Key) -> Option<&'a Discover> {
    let up = config.upstreams.iter().find(|u| u.name == key.0)?;
    up.discover.iter().find(|d| d.name == key.1)
}

/// `base` with the servers found for its names; a server listed fixed and also found
/// in DNS is kept once, as listed.
fn compose(base: &Config, found: &HashMap<Key, Found>) -> Config {
    let mut config = base.clone();
    for up in &mut config.upstreams {
        for d in &up.discover {
            let Some(f) = found.get(&(up.name.clone(), d.name.clone())) else {
                continue;
            };
            for s in &f.servers {
                if !up.servers.iter().any(|have| have.addr == s.addr) {
                    up.servers.push(s.clone());
                }
            }
        }
    }
    config
}

/// "upstream app, app.internal:8080: +10.0.0.7:8080 -10.0.0.5:8080 (2 now)".
fn describe(key: &Key, before: Option<&Found>, after: &Found) -> String {
    let had: Vec<_> = before
        .map(|b| b.servers.iter().map(|s| s.addr).collect())
        .unwrap_or_default();
    let has: Vec<_> = after.servers.iter().map(|s| s.addr).collect();
    let mut parts: Vec<String> = has
        .iter()
        .filter(|a| !had.contains(a))
        .map(|a| format!("+{a}"))
        .collect();
    parts.extend(
        had.iter()
            .filter(|a| !has.contains(a))
            .map(|a| format!("-{a}")),
    );
    if parts.is_empty() {
        parts.push("weights or priorities changed".into());
    }
    format!(
        "upstream {}, {}: {} ({} now)",
        key.0,
        key.1,
        parts.join(" "),
        has.len()
    )
}
