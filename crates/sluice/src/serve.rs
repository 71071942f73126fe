//! `sluice serve` and `sluice reload`: running the proxy under signals, and changing its
//! config without a restart.
//!
//! A running `sluice serve` reloads its config file on SIGHUP, or when its admin API is
//! asked (`POST /api/reload`), and then answers with what changed or why the old config
//! was kept. `sluice reload -c FILE` validates FILE first; with an `[admin]` listener it
//! asks the API and waits for that answer (exit 1 when the reload was refused);
//! without one it sends SIGHUP to the process whose id is in the pid file: `pid_file`
//! from the config, or by default `$TMPDIR/sluice-<hash of the config's full path>.pid`,
//! so `serve` and `reload` given the same file find each other.

use crate::exit::{BAD_INPUT as BAD_CONFIG, INTERRUPTED};
use anyhow::{anyhow, Context};
use sluice_discovery::Discovery;
use sluice_proxy::Proxy;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Callers of the admin API waiting for the result of the next reload.
type Waiting = Arc<Mutex<Vec<Sender<Result<String, String>>>>>;

/// What a signal asks of the running process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGTERM or SIGINT: drain and exit.
    Stop,
    /// SIGHUP: reload the config.
    Reload,
    /// SIGUSR1: reopen the access log (logrotate moved it).
    Reopen,
}

/// The config at `path`, or `None` after printing every error (and `then`, if any).
/// Certificates it names are read and checked too.
fn load_or_report(path: &Path, then: &str) -> Option<sluice_config::Config> {
    let loaded = sluice_config::load(path)
        .and_then(sluice_discovery::names::names)
        .and_then(|c| sluice_proxy::tls::check(&c).map(|_| c));
    match loaded {
        Ok(config) => Some(config),
        Err(errors) => {
            eprintln!("{errors}{then}");
            None
        }
    }
}

pub fn serve(path: &Path) -> anyhow::Result<ExitCode> {
    let Some(config) = load_or_report(path, "") else {
        return Ok(ExitCode::from(BAD_CONFIG));
    };
    for warning in sluice_config::warnings(&config) {
        tracing::warn!("{warning}");
    }
    let pid_file = pid_file(path, config.pid_file.as_deref());
    let (signal, signals) = signal_channel()?;
    let admin_config = config.admin.clone();
    let acme = config.acme.clone();
    let (discovery, config) = Discovery::start(config)?;
    let proxy = Proxy::start(config).context("starting the listeners")?;
    discovery.attach(proxy.stats().clone());
    if let Some(acme) = acme {
        sluice_acme::spawn(acme, proxy.challenges()).context("starting the ACME client")?;
    }
    let waiting = Waiting::default();
    let info = sluice_admin::Info {
        config_file: Some(path.to_path_buf()),
        reload: Some(reload_on_request(signal, waiting.clone())),
    };
    let _admin = match &admin_config {
        Some(admin) => Some(sluice_admin::start(admin, proxy.view(), info)?),
        None => None,
    };
    std::fs::write(&pid_file, format!("{}\n", std::process::id()))
        .with_context(|| format!("writing the pid file {}", pid_file.display()))?;
    tracing::info!(pid_file = %pid_file.display(), "reload with SIGHUP or `sluice reload -c {}`", path.display());
    crate::notify::ready(&format!("serving {}", path.display()));
    std::thread::scope(|scope| {
        // Stops the following thread however this scope ends (a panic too), or the
        // scope would wait for it forever.
        struct StopOnExit<'a>(&'a Discovery);
        impl Drop for StopOnExit<'_> {
            fn drop(&mut self) {
                self.0.stop();
            }
        }
        let _stop = StopOnExit(&discovery);
        scope.spawn(|| discovery.follow(&proxy));
        run_until_stopped(&proxy, signals, Some((path, &waiting, &discovery)));
    });
    let waited = proxy.wait();
    let _ = std::fs::remove_file(&pid_file);
    waited?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

pub fn reload(path: &Path) -> anyhow::Result<ExitCode> {
    let Some(config) = load_or_report(
        path,
        "\nsluice: not reloading; the running sluice keeps its config",
    ) else {
        return Ok(ExitCode::from(BAD_CONFIG));
    };
    if let Some(admin) = &config.admin {
        return crate::admin_client::reload(admin);
    }
    let pid_file = pid_file(path, config.pid_file.as_deref());
    let text = std::fs::read_to_string(&pid_file).with_context(|| {
        format!(
            "no running sluice for this config: cannot read {}",
            pid_file.display()
        )
    })?;
    let pid: u32 = text
        .trim()
        .parse()
        .map_err(|_| anyhow!("{} does not hold a process id", pid_file.display()))?;
    // A stale pid file may name an unrelated process now; SIGHUP would kill most of them.
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    if comm.trim() != "sluice" {
        return Err(anyhow!(
            "no sluice runs as pid {pid} (stale {}); nothing was signalled",
            pid_file.display()
        ));
    }
    let sent = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()?;
    if !sent.success() {
        return Err(anyhow!(
            "sluice (pid {pid}) is not running; remove the stale {}",
            pid_file.display()
        ));
    }
    println!("sent SIGHUP to sluice (pid {pid}); its log says whether the new config took effect");
    Ok(ExitCode::SUCCESS)
}

/// `sluice status -c FILE`: the running sluice's view, through its admin API.
pub fn status(path: &Path) -> anyhow::Result<ExitCode> {
    let Some(config) = load_or_report(path, "") else {
        return Ok(ExitCode::from(BAD_CONFIG));
    };
    let Some(admin) = &config.admin else {
        return Err(anyhow!(
            "{} has no [admin] listener; add [admin] (bind = \"127.0.0.1:9901\") and restart sluice",
            path.display()
        ));
    };
    crate::admin_client::status(admin)
}

/// The pid file for the config at `config_path`: the configured one, or a name derived
/// from the config's full path.
fn pid_file(config_path: &Path, configured: Option<&Path>) -> PathBuf {
    if let Some(p) = configured {
        return p.to_path_buf();
    }
    let full = std::fs::canonicalize(config_path).unwrap_or_else(|_| config_path.to_path_buf());
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in full.to_string_lossy().bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    std::env::temp_dir().join(format!("sluice-{hash:016x}.pid"))
}

/// SIGTERM, SIGINT, SIGHUP and SIGUSR1, delivered over a channel by a thread of their own. The
/// handlers are installed before this returns, so no early signal is lost.
pub fn signals() -> anyhow::Result<Receiver<Signal>> {
    signal_channel().map(|(_, rx)| rx)
}

/// How the admin API reloads: it asks the main loop as SIGHUP does, and waits for the
/// answer of that reload.
fn reload_on_request(signal: Sender<Signal>, waiting: Waiting) -> sluice_admin::Reload {
    let signal = Mutex::new(signal);
    Arc::new(move || {
        let (tx, rx) = std::sync::mpsc::channel();
        waiting.lock().unwrap_or_else(|p| p.into_inner()).push(tx);
        let sent = signal
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(Signal::Reload);
        if sent.is_err() {
            return Err("sluice is stopping".into());
        }
        rx.recv_timeout(Duration::from_secs(60))
            .map_err(|_| "no answer from the reload within 60 s".to_string())?
    })
}

/// The signals' channel, and a sender into it for requests that act like a signal.
fn signal_channel() -> anyhow::Result<(Sender<Signal>, Receiver<Signal>)> {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut term, mut int, mut hup, mut usr1) = runtime.block_on(async {
        Ok::<_, std::io::Error>((
            signal(SignalKind::terminate())?,
            signal(SignalKind::interrupt())?,
            signal(SignalKind::hangup())?,
            signal(SignalKind::user_defined1())?,
        ))
    })?;
    let (tx, rx) = std::sync::mpsc::channel();
    let sender = tx.clone();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            loop {
                let signal = tokio::select! {
                    _ = term.recv() => Signal::Stop,
                    _ = int.recv() => Signal::Stop,
                    _ = hup.recv() => Signal::Reload,
                    _ = usr1.recv() => Signal::Reopen,
                };
                if tx.send(signal).is_err() {
                    return;
                }
            }
        })
    });
    Ok((sender, rx))
}

/// Serves until a stop signal, reloading `config` on SIGHUP, then starts the drain; a
/// second stop signal exits at once.
pub fn run_until_stopped(
    proxy: &Proxy,
    signals: Receiver<Signal>,
    config: Option<(&Path, &Waiting, &Discovery)>,
) {
    loop {
        match signals.recv() {
            Ok(Signal::Reload) => {}
            Ok(Signal::Reopen) => {
                match proxy.reopen_logs() {
                    Ok(()) => tracing::info!("access log reopened"),
                    Err(e) => {
                        tracing::error!(cause = %e, "access log not reopened; still writing to the old file")
                    }
                }
                continue;
            }
            Ok(Signal::Stop) | Err(_) => break,
        }
        match config {
            Some((path, waiting, discovery)) => {
                crate::notify::reloading();
                let result = apply(proxy, path, discovery);
                let said = match &result {
                    Ok(summary) => format!("serving {}: reloaded ({summary})", path.display()),
                    Err(why) => format!("serving {}: reload refused ({why})", path.display()),
                };
                crate::notify::ready(&said);
                let callers =
                    std::mem::take(&mut *waiting.lock().unwrap_or_else(|p| p.into_inner()));
                for caller in callers {
                    let _ = caller.send(result.clone());
                }
            }
            None => tracing::warn!("SIGHUP ignored: this sluice has no config file to reload"),
        }
    }
    tracing::info!("stopping: no new connections; finishing requests in flight");
    crate::notify::stopping();
    proxy.shutdown();
    std::thread::spawn(move || {
        while let Ok(signal) = signals.recv() {
            if signal == Signal::Stop {
                eprintln!("sluice: second signal, exiting without waiting for requests in flight");
                std::process::exit(i32::from(INTERRUPTED));
            }
        }
    });
}

/// Reloads from `path`, or logs why not and keeps the running config. Returns what
/// changed, or why nothing did.
fn apply(proxy: &Proxy, path: &Path, discovery: &Discovery) -> Result<String, String> {
    let config = match sluice_config::load(path).and_then(sluice_discovery::names::names) {
        Ok(config) => config,
        Err(errors) => {
            for e in &errors.0 {
                tracing::error!(error = %e, "reload rejected: the config has errors; still serving the previous one");
            }
            proxy.stats().reloaded(false);
            return Err(errors.to_string());
        }
    };
    match discovery.reload(proxy, config) {
        Ok(summary) => {
            tracing::info!("reloaded {}: {summary}", path.display());
            Ok(summary)
        }
        Err(why) => {
            tracing::error!("{why}");
            Err(why)
        }
    }
}
