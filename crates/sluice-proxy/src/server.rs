//! Starting and stopping the proxy: bind every listener, start one worker thread per
//! core (or as configured), and stop them gracefully.

use crate::listen;
use crate::upstream::SharedLoad;
use crate::worker::{self, Start};
use sluice_config::Config;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::sync::watch;

/// A running proxy. Dropping it does not stop it: call [`Proxy::shutdown`] and [`Proxy::wait`].
pub struct Proxy {
    addrs: Vec<SocketAddr>,
    shutdown: watch::Sender<bool>,
    workers: Vec<JoinHandle<io::Result<()>>>,
}

impl Proxy {
    /// Binds every listener and starts the workers. Fails (starting nothing) if any
    /// address cannot be bound.
    pub fn start(config: Config) -> io::Result<Proxy> {
        raise_fd_limit();
        let workers = match config.workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let mut addrs = Vec::new();
        let mut per_worker: Vec<Vec<std::net::TcpListener>> =
            (0..workers).map(|_| Vec::new()).collect();
        for l in &config.listeners {
            let (actual, group) = listen::bind_group(l.bind, workers)?;
            addrs.push(actual);
            group
                .into_iter()
                .zip(per_worker.iter_mut())
                .for_each(|(listener, list)| list.push(listener));
        }
        let loads: Vec<_> = config.upstreams.iter().map(SharedLoad::new).collect();
        let config = Arc::new(config);
        let (shutdown, receiver) = watch::channel(false);
        let mut handles = Vec::new();
        for (index, listeners) in per_worker.into_iter().enumerate() {
            let start = Start {
                index,
                config: config.clone(),
                loads: loads.clone(),
                listeners,
                shutdown: receiver.clone(),
            };
            handles.push(
                std::thread::Builder::new()
                    .name(format!("sluice-worker-{index}"))
                    .spawn(move || worker::run(start))?,
            );
        }
        tracing::info!(workers, listeners = ?addrs, "sluice is serving");
        Ok(Proxy {
            addrs,
            shutdown,
            workers: handles,
        })
    }

    /// The bound address of each listener, in config order (port 0 resolved).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// Stops accepting; requests in flight finish within the grace period.
    pub fn shutdown(&self) {
        let _ = self.shutdown.send(true);
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

/// Lifts the open-file limit to the hard limit, so the number of concurrent clients is
/// bounded by the machine and not by a default of 1024.
fn raise_fd_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        tracing::warn!(cause = %e, "could not raise the open-file limit");
    }
}
