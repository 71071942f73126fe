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
//!
//! Beside the pid file, `serve` listens for a binary upgrade (`crate::upgrade`): `sluice
//! serve --upgrade` takes its sockets over, and `sluice upgrade` or SIGUSR2 starts that
//! new process; once it serves, this one drains as at a stop, and exits.

use crate::exit::{BAD_INPUT as BAD_CONFIG, INTERRUPTED};
use crate::signals::{signal_channel, Signal};
use crate::upgrade::{self, Ask, Handover, Taken, Takeover};
use anyhow::{anyhow, Context};
use sluice_discovery::Discovery;
use sluice_proxy::Proxy;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Callers of the admin API waiting for the result of the next reload.
pub type Waiting = Arc<Mutex<Vec<Sender<Result<String, String>>>>>;

/// After an upgrade, how long connections this process accepted have to send their
/// first request before the drain closes those still idle.
const FIRST_REQUEST_WAIT: Duration = Duration::from_secs(1);

/// How the main loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// A stop signal.
    Stopped,
    /// A new process serves in this one's place.
    Upgraded,
}

/// What the main loop of `serve` uses beside the proxy: the config file, the callers
/// waiting for a reload, the names followed, the admin listener (with its configured
/// address) and the upgrade socket.
pub struct Serving<'a> {
    pub path: &'a Path,
    pub waiting: &'a Waiting,
    pub discovery: &'a Discovery,
    pub admin: Option<(std::net::SocketAddr, &'a sluice_admin::Admin)>,
    pub handover: Option<&'a Handover>,
    /// The binary sluice was started from (SIGUSR2 starts it; looked up at start, before
    /// a package upgrade replaces the file).
    pub exe: Option<&'a Path>,
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

pub fn serve(path: &Path, upgrading: bool) -> anyhow::Result<ExitCode> {
    let Some(config) = load_or_report(path, "") else {
        return Ok(ExitCode::from(BAD_CONFIG));
    };
    for warning in sluice_config::warnings(&config) {
        tracing::warn!("{warning}");
    }
    let pid_file = pid_file(path, config.pid_file.as_deref());
    let exe = std::env::current_exe().ok();
    // The running sluice's sockets, asked for once the config is known good.
    let (takeover, taken) = match upgrading {
        true => Takeover::connect(&upgrade::socket_path(&pid_file)).map(|(t, s)| (Some(t), s))?,
        false => (None, Taken::default()),
    };
    let (signal, signals) = signal_channel()?;
    let admin_config = config.admin.clone();
    let acme = config.acme.clone();
    let (discovery, config) = Discovery::start(config)?;
    let proxy = Proxy::start_with(config, taken.listeners).context("starting the listeners")?;
    discovery.attach(proxy.stats().clone());
    if let Some(acme) = acme {
        sluice_acme::spawn(acme, proxy.challenges()).context("starting the ACME client")?;
    }
    let waiting = Waiting::default();
    let admin = start_admin(
        &admin_config,
        taken.admin,
        &proxy,
        path,
        (&signal, &waiting),
    )?;
    if let Err(e) = takeover.map_or(Ok(()), Takeover::serving) {
        proxy.shutdown();
        let _ = proxy.wait();
        return Err(e.context("not serving: the running sluice keeps serving"));
    }
    std::fs::write(&pid_file, format!("{}\n", std::process::id()))
        .with_context(|| format!("writing the pid file {}", pid_file.display()))?;
    let handover = open_handover(&pid_file, path, &signal);
    tracing::info!(pid_file = %pid_file.display(), "reload with SIGHUP or `sluice reload -c {}`", path.display());
    crate::notify::ready_as_main(&format!("serving {}", path.display()), upgrading);
    let serving = Serving {
        path,
        waiting: &waiting,
        discovery: &discovery,
        admin: admin_config.as_ref().map(|a| a.bind).zip(admin.as_ref()),
        handover: handover.as_ref(),
        exe: exe.as_deref(),
    };
    let stopped = serve_until_stopped(&proxy, signals, serving);
    if stopped == Stopped::Upgraded {
        // The new process answers on the admin socket now.
        drop(admin);
    }
    let waited = proxy.wait();
    remove_if_ours(&pid_file);
    if let Some(handover) = &handover {
        handover.close();
    }
    waited?;
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The admin listener, if the config has one: on the socket taken over if its address
/// is unchanged, else on one bound now.
fn start_admin(
    config: &Option<sluice_config::Admin>,
    taken: Option<(std::net::SocketAddr, std::net::TcpListener)>,
    proxy: &Proxy,
    path: &Path,
    (signal, waiting): (&Sender<Signal>, &Waiting),
) -> anyhow::Result<Option<sluice_admin::Admin>> {
    let Some(admin) = config else {
        return Ok(None);
    };
    let info = sluice_admin::Info {
        config_file: Some(path.to_path_buf()),
        reload: Some(reload_on_request(signal.clone(), waiting.clone())),
    };
    let inherited = taken.filter(|(configured, _)| *configured == admin.bind);
    let socket = inherited.map(|(_, socket)| socket);
    Ok(Some(sluice_admin::start_with(
        admin,
        socket,
        proxy.view(),
        info,
    )?))
}

/// The upgrade socket beside the pid file; without it (a path too long for a unix
/// socket, a directory not writable) sluice serves, and says that it cannot be upgraded.
fn open_handover(pid_file: &Path, config: &Path, signal: &Sender<Signal>) -> Option<Handover> {
    let path = upgrade::socket_path(pid_file);
    let signal = signal.clone();
    let tell = move |ask| signal.send(Signal::Handover(ask)).is_ok();
    match Handover::open(path.clone(), config, Box::new(tell)) {
        Ok(handover) => Some(handover),
        Err(e) => {
            tracing::warn!(socket = %path.display(), cause = %e, "no upgrade socket: binary upgrades of this process are not possible");
            None
        }
    }
}

/// Serves until stopped or upgraded, following the config's names meanwhile.
fn serve_until_stopped(proxy: &Proxy, signals: Receiver<Signal>, serving: Serving<'_>) -> Stopped {
    let discovery = serving.discovery;
    std::thread::scope(|scope| {
        // Stops the following thread however this scope ends (a panic too), or the
        // scope would wait for it forever.
        struct StopOnExit<'a>(&'a Discovery);
        impl Drop for StopOnExit<'_> {
            fn drop(&mut self) {
                self.0.stop();
            }
        }
        let _stop = StopOnExit(discovery);
        scope.spawn(|| discovery.follow(proxy));
        run_until_stopped(proxy, signals, Some(serving))
    })
}

/// Removes the pid file if it still names this process (after an upgrade it names the
/// new one).
fn remove_if_ours(pid_file: &Path) {
    let text = std::fs::read_to_string(pid_file).unwrap_or_default();
    if text.trim() == std::process::id().to_string() {
        let _ = std::fs::remove_file(pid_file);
    }
}

/// `sluice upgrade -c FILE`: the config checked, then the running sluice of FILE asked
/// to start this binary in its place.
pub fn upgrade(path: &Path) -> anyhow::Result<ExitCode> {
    let Some(config) = load_or_report(
        path,
        "\nsluice: not upgrading; the running sluice keeps serving",
    ) else {
        return Ok(ExitCode::from(BAD_CONFIG));
    };
    upgrade::upgrade(&pid_file(path, config.pid_file.as_deref()))
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

/// Serves until a stop signal or an upgrade, reloading the config on SIGHUP, then
/// starts the drain; a second stop signal exits at once. Without `serving` (the demo)
/// there is no config to reload and no upgrade.
pub fn run_until_stopped(
    proxy: &Proxy,
    signals: Receiver<Signal>,
    serving: Option<Serving<'_>>,
) -> Stopped {
    let stopped = loop {
        match signals.recv() {
            Ok(Signal::Reload) => reload_from(proxy, serving.as_ref()),
            Ok(Signal::Reopen) => match proxy.reopen_logs() {
                Ok(()) => tracing::info!("access log reopened"),
                Err(e) => {
                    tracing::error!(cause = %e, "access log not reopened; still writing to the old file")
                }
            },
            Ok(Signal::Upgrade) => match serving.as_ref().and_then(|s| s.handover.zip(s.exe)) {
                Some((handover, exe)) => handover.spawn(exe.to_path_buf()),
                None => tracing::warn!("SIGUSR2 ignored: this sluice cannot be upgraded"),
            },
            Ok(Signal::Handover(Ask::Lend(to))) => {
                let admin = serving.as_ref().and_then(|s| s.admin);
                let _ = to.send(upgrade::lend(proxy, admin));
            }
            Ok(Signal::Handover(Ask::Upgraded(pid))) => {
                tracing::info!(pid, "upgraded: the new process serves; stopping here: no new connections; finishing requests in flight");
                break Stopped::Upgraded;
            }
            Ok(Signal::Stop) | Err(_) => break Stopped::Stopped,
        }
    };
    match stopped {
        Stopped::Stopped => {
            tracing::info!("stopping: no new connections; finishing requests in flight");
            // Not after an upgrade: systemd follows the new process, which is not stopping.
            crate::notify::stopping();
        }
        Stopped::Upgraded => {
            proxy.stop_accepting();
            // A connection accepted here just before has its request on the way: it is
            // answered (with `Connection: close`) once it comes, where a drain at once
            // would close the connection unanswered, a failure no client retries.
            std::thread::sleep(FIRST_REQUEST_WAIT);
        }
    }
    proxy.shutdown();
    std::thread::spawn(move || {
        while let Ok(signal) = signals.recv() {
            if matches!(signal, Signal::Stop) {
                eprintln!("sluice: second signal, exiting without waiting for requests in flight");
                std::process::exit(i32::from(INTERRUPTED));
            }
        }
    });
    stopped
}

/// SIGHUP or the admin API: the config reloaded, and every caller waiting told how.
fn reload_from(proxy: &Proxy, serving: Option<&Serving<'_>>) {
    let Some(serving) = serving else {
        return tracing::warn!("SIGHUP ignored: this sluice has no config file to reload");
    };
    let path = serving.path;
    crate::notify::reloading();
    let result = apply(proxy, path, serving.discovery);
    let said = match &result {
        Ok(summary) => format!("serving {}: reloaded ({summary})", path.display()),
        Err(why) => format!("serving {}: reload refused ({why})", path.display()),
    };
    crate::notify::ready(&said);
    let waiting = serving.waiting;
    let callers = std::mem::take(&mut *waiting.lock().unwrap_or_else(|p| p.into_inner()));
    for caller in callers {
        let _ = caller.send(result.clone());
    }
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
