//! Starting, reloading and stopping the proxy: bind every listener, start one worker
//! thread per core (or as configured), hand them new configurations, stop them gracefully.

use crate::metrics::ProxyStats;
use crate::runtime::capacity::ClientCap;
use crate::runtime::checks;
use crate::runtime::listen::{self, Bound, Inherited};
use crate::runtime::view::View;
use crate::runtime::worker::{self, Lent, Order, Reload, Start};
use crate::state::generation::Shared;
use sluice_accept::OpenFiles;
use sluice_config::Config;
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc as sync_mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// The longest `reload` and `shutdown` wait for a worker to acknowledge; a worker stuck
/// longer than this is not waited for (its thread is reported when joined).
const ACK_WAIT: Duration = Duration::from_secs(10);

/// A running proxy. Dropping it does not stop it: call [`Proxy::shutdown`] and [`Proxy::wait`].
pub struct Proxy {
    /// Phase one of a shutdown: every worker closes its listeners.
    shutdown: watch::Sender<bool>,
    /// Phase two, once all have: idle connections close and requests in flight finish.
    drain: watch::Sender<bool>,
    stopping: AtomicBool,
    stopped_accepting: Mutex<sync_mpsc::Receiver<()>>,
    workers: Vec<JoinHandle<io::Result<()>>>,
    /// Each worker's orders: reloads, and lending its sockets.
    reloads: Vec<mpsc::UnboundedSender<Order>>,
    current: watch::Sender<Arc<Shared>>,
    /// Listen address as configured -> as bound (port 0 resolved).
    listening: Arc<Mutex<Vec<(SocketAddr, SocketAddr)>>>,
    stats: Arc<ProxyStats>,
    cap: Arc<ClientCap>,
}

/// What a reload changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReloadSummary {
    pub listeners_added: usize,
    pub listeners_removed: usize,
    pub servers_added: usize,
    pub servers_removed: usize,
    /// Where the access log now goes, when that changed ("off" when it stopped).
    pub access_log: Option<String>,
    /// Routes added, removed or changed (a route is known by its host, path and
    /// listeners).
    pub routes_changed: usize,
    /// Upstreams added or removed, or whose settings (servers aside) changed.
    pub upstreams_changed: usize,
    /// Anything else of the config changed (a timeout, a limit, a certificate's path).
    pub other_changed: bool,
}

impl ReloadSummary {
    /// Whether a listener, server, route, upstream or the access log changed.
    fn counts_a_change(&self) -> bool {
        let counts = [
            self.listeners_added,
            self.listeners_removed,
            self.servers_added,
            self.servers_removed,
            self.routes_changed,
            self.upstreams_changed,
        ];
        counts.iter().any(|n| *n > 0) || self.access_log.is_some()
    }
}

impl std::fmt::Display for ReloadSummary {
    /// What changed, in words: `1 listener added, 2 servers removed, 1 route changed`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counted = [
            (self.listeners_added, "listener", "added"),
            (self.listeners_removed, "listener", "removed"),
            (self.servers_added, "server", "added"),
            (self.servers_removed, "server", "removed"),
            (self.routes_changed, "route", "changed"),
            (self.upstreams_changed, "upstream", "changed"),
        ];
        let parts: Vec<String> = counted
            .into_iter()
            .filter(|(n, _, _)| *n > 0)
            .map(|(n, what, how)| format!("{n} {what}{} {how}", if n == 1 { "" } else { "s" }))
            .chain(self.access_log.as_ref().map(|l| format!("access log {l}")))
            .collect();
        match (parts.is_empty(), self.other_changed) {
            (true, false) => f.write_str("nothing changed"),
            (true, true) => f.write_str("settings changed"),
            (false, false) => f.write_str(&parts.join(", ")),
            (false, true) => write!(f, "{}, other settings changed", parts.join(", ")),
        }
    }
}

impl Proxy {
    /// Binds every listener and starts the workers. Fails (starting nothing) if any
    /// address cannot be bound.
    pub fn start(config: Config) -> io::Result<Proxy> {
        Self::start_with(config, Inherited::default())
    }

    /// [`start`](Self::start), serving on the sockets a previous sluice handed over
    /// where they came for a listener (a binary upgrade); the others are bound. Every
    /// socket handed over is accepted on, several by one worker when more came than
    /// there are workers.
    pub fn start_with(config: Config, mut inherited: Inherited) -> io::Result<Proxy> {
        resolved(&config)?;
        let cap = client_cap(&config);
        let workers = worker_count(&config);
        let mut listening = Vec::new();
        let mut per_worker: Vec<Vec<Bound>> = (0..workers).map(|_| Vec::new()).collect();
        for l in &config.listeners {
            let (actual, group) = listen::open_group(l.bind, workers, &mut inherited)?;
            listening.push((l.bind, actual));
            for (i, listener) in group.into_iter().enumerate() {
                per_worker[i % workers].push((l.bind, listener));
            }
        }
        listen::report_left(&inherited);
        drop(inherited);
        if let Some(acme) = &config.acme {
            if crate::acme::ensure_placeholder(&acme.storage, &acme.domains)? {
                tracing::info!(dir = %acme.storage.display(), "no ACME certificate yet: serving a self-signed placeholder until one is obtained");
            }
        }
        let shared = Arc::new(Shared::open(config, None)?);
        let stats = Arc::new(ProxyStats::default());
        let (shutdown, stop) = watch::channel(false);
        let (drain, draining) = watch::channel(false);
        let (current, generations) = watch::channel(shared.clone());
        checks::spawn(generations.clone(), stop.clone())?;
        crate::runtime::leases::spawn(generations.clone(), stop.clone())?;
        crate::runtime::certificates::spawn(generations, stop.clone())?;
        let (acks, stopped_accepting) = sync_mpsc::channel();
        let (mut handles, mut reloads) = (Vec::new(), Vec::new());
        let draining_workers = Arc::new(AtomicUsize::new(per_worker.len()));
        for (index, listeners) in per_worker.into_iter().enumerate() {
            let (tx, rx) = mpsc::unbounded_channel();
            reloads.push(tx);
            let start = Start {
                index,
                shared: shared.clone(),
                listeners,
                shutdown: stop.clone(),
                drain: draining.clone(),
                reloads: rx,
                stopped_accepting: acks.clone(),
                stats: stats.clone(),
                draining_workers: draining_workers.clone(),
                cap: cap.clone(),
            };
            handles.push(
                std::thread::Builder::new()
                    .name(format!("sluice-worker-{index}"))
                    .spawn(move || worker::run(start))?,
            );
        }
        let addrs: Vec<SocketAddr> = listening.iter().map(|(_, a)| *a).collect();
        tracing::info!(
            workers,
            listeners = ?addrs,
            open_files = cap.limit().soft,
            client_connections_max = cap.max(),
            "sluice is serving"
        );
        Ok(Proxy {
            shutdown,
            drain,
            stopping: AtomicBool::new(false),
            stopped_accepting: Mutex::new(stopped_accepting),
            workers: handles,
            reloads,
            current,
            listening: Arc::new(Mutex::new(listening)),
            stats,
            cap,
        })
    }

    /// Where ACME HTTP-01 challenges are published for the workers to answer.
    pub fn challenges(&self) -> Arc<crate::acme::Challenges> {
        self.current.borrow().challenges.clone()
    }

    /// A handle for observers (the admin listener): snapshots of state and counters.
    pub fn view(&self) -> View {
        View {
            current: self.current.subscribe(),
            stats: self.stats.clone(),
            listening: self.listening.clone(),
            workers: self.workers.len(),
            cap: self.cap.clone(),
        }
    }

    /// Opens the access log file again (after logrotate moved it: SIGUSR1).
    pub fn reopen_logs(&self) -> io::Result<()> {
        match &self.current.borrow().access_log {
            Some(log) => log.reopen(),
            None => Ok(()),
        }
    }

    /// The proxy's counters beside its servers' and routes' (listeners, reloads).
    pub fn stats(&self) -> &Arc<ProxyStats> {
        &self.stats
    }

    /// The bound address of each listener, in config order (port 0 resolved).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.listening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(_, a)| *a)
            .collect()
    }

    /// Switches every worker to `config`. New listen addresses are bound first; if one
    /// cannot be, nothing changes and the error is returned. Requests in flight finish
    /// on the old config; pooled connections and health of servers that stay are kept.
    /// Returns once every worker serves new requests with `config` and listeners that
    /// left it are closed.
    pub fn reload(&self, config: Config) -> io::Result<ReloadSummary> {
        let result = resolved(&config).and_then(|()| self.apply(config));
        self.stats.reloaded(result.is_ok());
        result
    }

    fn apply(&self, config: Config) -> io::Result<ReloadSummary> {
        let mut listening = self.listening.lock().unwrap_or_else(|p| p.into_inner());
        let workers = self.reloads.len();
        if worker_count(&config) != workers {
            tracing::warn!(
                running = workers,
                "a change of `workers` takes effect on restart only"
            );
        }
        let old: HashMap<SocketAddr, SocketAddr> = listening.iter().copied().collect();
        let wanted: Vec<SocketAddr> = config.listeners.iter().map(|l| l.bind).collect();
        let mut added = Vec::new();
        for addr in wanted.iter().filter(|a| !old.contains_key(a)) {
            added.push((*addr, listen::bind_group(*addr, workers)?));
        }
        let closed: Vec<SocketAddr> = listening
            .iter()
            .filter(|(c, _)| !wanted.contains(c))
            .map(|(_, a)| *a)
            .collect();
        let previous = self.current.borrow().clone();
        let shared = Arc::new(Shared::open(config, Some(&previous))?);
        let summary = summarise(&previous, &shared, added.len(), closed.len());
        let mut sockets: Vec<Vec<Bound>> = (0..workers).map(|_| Vec::new()).collect();
        listening.retain(|(c, _)| wanted.contains(c));
        for (configured, (actual, group)) in added {
            listening.push((configured, actual));
            group
                .into_iter()
                .zip(sockets.iter_mut())
                .for_each(|(l, list)| list.push((configured, l)));
        }
        let (applied, acks) = sync_mpsc::channel();
        let mut told = 0;
        for (tx, listeners) in self.reloads.iter().zip(sockets) {
            let reload = Order::Reload(Reload {
                shared: shared.clone(),
                listeners,
                closed: closed.clone(),
                applied: applied.clone(),
            });
            // A worker that has exited (after a shutdown) has nothing to apply.
            told += usize::from(tx.send(reload).is_ok());
        }
        let _ = self.current.send(shared);
        drop(applied);
        wait_for(&acks, told);
        Ok(summary)
    }

    /// A copy of every listening socket of every worker, each with the address its
    /// listener was configured at: what a binary upgrade hands to the new process. The
    /// sockets stay this process's too until [`shutdown`](Self::shutdown) closes its
    /// copies; the new process's keep them open, queued connections included.
    pub fn lend_listeners(&self) -> io::Result<Vec<Lent>> {
        if self.stopping.load(Ordering::SeqCst) {
            return Err(io::Error::other("this sluice is stopping"));
        }
        let (tx, rx) = sync_mpsc::channel();
        for worker in &self.reloads {
            worker
                .send(Order::Lend(tx.clone()))
                .map_err(|_| io::Error::other("a worker has exited"))?;
        }
        drop(tx);
        let mut lent = Vec::new();
        for _ in &self.reloads {
            let sockets = rx
                .recv_timeout(ACK_WAIT)
                .map_err(|_| io::Error::other("a worker did not lend its sockets in time"))?;
            lent.extend(sockets?);
        }
        Ok(lent)
    }

    /// Stops accepting; requests in flight finish within the grace period. Returns once
    /// every worker has closed its listening sockets. Only then do idle connections
    /// close, so a client that sees its idle connection closed also finds new
    /// connections refused. Calling it again does nothing.
    pub fn shutdown(&self) {
        self.stop_accepting();
        let _ = self.drain.send(true);
    }

    /// The first half of [`shutdown`](Self::shutdown): every worker closes its listening
    /// sockets, and returns once all have; the connections they accepted are served on
    /// as before (idle ones are not closed) until `shutdown`. A binary upgrade waits
    /// between the two: a client whose connection this process accepted just before has
    /// its request taken and answered, not its connection closed unanswered. Calling it
    /// again does nothing.
    pub fn stop_accepting(&self) {
        if self.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        let _ = self.shutdown.send(true);
        let acks = self
            .stopped_accepting
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        wait_for(&acks, self.workers.len());
    }

    /// Waits for every worker to finish.
    pub fn wait(self) -> io::Result<()> {
        for handle in self.workers {
            handle
                .join()
                .map_err(|_| io::Error::other("a worker panicked"))??;
        }
        Ok(())
    }
}

/// Waits for `count` acknowledgements (or until the senders are gone, or `ACK_WAIT`).
fn wait_for(acks: &sync_mpsc::Receiver<()>, count: usize) {
    for _ in 0..count {
        if acks.recv_timeout(ACK_WAIT).is_err() {
            tracing::warn!("a worker did not acknowledge in time");
            return;
        }
    }
}

fn worker_count(config: &Config) -> usize {
    match config.workers {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

fn summarise(
    old: &Shared,
    new: &Shared,
    listeners_added: usize,
    listeners_removed: usize,
) -> ReloadSummary {
    let (before, after) = (&old.addresses, &new.addresses);
    let log = |s: &Shared| s.config.access_log.as_ref().map(|l| l.target.clone());
    let access_log = (log(old) != log(new)).then(|| match log(new) {
        Some(sluice_config::LogTarget::Stdout) => "now to stdout".to_string(),
        Some(sluice_config::LogTarget::File(f)) => format!("now to {}", f.display()),
        None => "off".to_string(),
    });
    let mut summary = ReloadSummary {
        listeners_added,
        listeners_removed,
        servers_added: after.difference(before).count(),
        servers_removed: before.difference(after).count(),
        access_log,
        routes_changed: routes_changed(&old.config.routes, &new.config.routes),
        upstreams_changed: upstreams_changed(&old.config.upstreams, &new.config.upstreams),
        other_changed: false,
    };
    summary.other_changed = !summary.counts_a_change() && old.config != new.config;
    summary
}

/// Routes of `new` not in `old` as they were, and routes of `old` whose place (host,
/// path, listeners) is gone.
fn routes_changed(old: &[sluice_config::Route], new: &[sluice_config::Route]) -> usize {
    let place = |r: &sluice_config::Route| (r.host.clone(), r.path.clone(), r.listeners.clone());
    let added_or_changed = new.iter().filter(|r| !old.contains(r)).count();
    let removed = old
        .iter()
        .filter(|o| !new.iter().any(|n| place(n) == place(o)))
        .count();
    added_or_changed + removed
}

/// Upstreams added or removed by name, or kept with other settings (their servers are
/// counted apart).
fn upstreams_changed(old: &[sluice_config::Upstream], new: &[sluice_config::Upstream]) -> usize {
    let settings = |u: &sluice_config::Upstream| {
        let mut u = u.clone();
        u.servers.clear();
        u.discover.clear();
        u
    };
    let changed = new
        .iter()
        .filter(|n| match old.iter().find(|o| o.name == n.name) {
            Some(o) => settings(o) != settings(n),
            None => true,
        })
        .count();
    changed
        + old
            .iter()
            .filter(|o| new.iter().all(|n| n.name != o.name))
            .count()
}

/// Lifts the open-file limit to the hard limit (so the number of concurrent clients is
/// bounded by the machine and not by a default of 1024), and caps client connections
/// below it.
fn client_cap(config: &Config) -> Arc<ClientCap> {
    let limit = OpenFiles::raise().unwrap_or(OpenFiles {
        soft: 1024,
        hard: 1024,
    });
    let admin = config.admin.as_ref().map_or(0, |a| a.max_conns as usize);
    Arc::new(ClientCap::new(limit, admin))
}

/// Refuses a config whose server host names were not resolved (the caller resolves
/// them: a name's placeholder address must never be connected to).
fn resolved(config: &Config) -> io::Result<()> {
    let named = config
        .upstreams
        .iter()
        .flat_map(|u| &u.servers)
        .find(|s| s.host.is_some());
    match named {
        Some(s) => Err(io::Error::other(format!(
            "server {} is a host name not resolved before start or reload",
            s.name
        ))),
        None => Ok(()),
    }
}
