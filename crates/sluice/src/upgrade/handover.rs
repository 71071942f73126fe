//! The running process's side of a binary upgrade: the upgrade socket, and for a new
//! process that asks (`take`), a copy of every listening socket, then the wait for its
//! "serving" before this process stops accepting; for `sluice upgrade` (`spawn`) or
//! SIGUSR2, starting that new process. Never stops this process itself: it asks the
//! main loop ([`Ask::Upgraded`]), which drains as at a stop; and never hands over twice.

use super::passing::{self, read_line, Kind};
use super::Lent;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long the new process has from its sockets to its "serving": its config's names
/// resolved, its certificates read. Past it, this process keeps serving.
const TAKEOVER_WAIT: Duration = Duration::from_secs(60);
/// How long the main loop has to lend the sockets.
const LEND_WAIT: Duration = Duration::from_secs(15);

/// What the handover asks of the main loop, which owns the proxy.
#[derive(Debug)]
pub enum Ask {
    /// Copies of every socket to hand over.
    Lend(std::sync::mpsc::Sender<io::Result<Lent>>),
    /// The process with this id serves now: stop accepting, drain and exit.
    Upgraded(u32),
}

/// How the handover asks the main loop (false: it no longer listens).
pub type Tell = Box<dyn Fn(Ask) -> bool + Send + Sync>;

/// The upgrade socket of a running `sluice serve`, served by a thread of its own.
pub struct Handover {
    path: PathBuf,
    /// The socket file's inode: a later process's socket at the same path (after an
    /// upgrade) is not removed at exit.
    inode: u64,
    state: Arc<Shared>,
}

/// What the connections' threads share.
struct Shared {
    outcome: Mutex<Outcome>,
    changed: Condvar,
    tell: Tell,
    /// The config file, as `serve` was given it: the new process's `-c`.
    config: PathBuf,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Serving,
    /// A new process was started (SIGUSR2, `sluice upgrade`) and has not asked for the
    /// sockets yet: no second one is started meanwhile.
    Spawning,
    /// Sockets were handed to a new process that has not said "serving" yet.
    HandingOver,
    /// The process with this id serves now.
    Upgraded(u32),
}

/// What a connection asks.
enum Request {
    /// "take": the new process, for the sockets.
    Take,
    /// "spawn PATH": start the binary at PATH as the new process, and say how it went.
    Spawn(PathBuf),
}

impl Handover {
    /// Listens on `path` (mode 0600; a stale socket there is replaced).
    pub fn open(path: PathBuf, config: &Path, tell: Tell) -> io::Result<Handover> {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
        let inode = std::fs::metadata(&path)?.ino();
        let state = Arc::new(Shared {
            outcome: Mutex::new(Outcome::Serving),
            changed: Condvar::new(),
            tell,
            config: config.to_path_buf(),
        });
        let serving = state.clone();
        std::thread::Builder::new()
            .name("sluice-upgrade".into())
            .spawn(move || accept(&listener, &serving))?;
        Ok(Handover { path, inode, state })
    }

    /// SIGUSR2: starts `exe` as the new process, and logs how it went (on a thread).
    pub fn spawn(&self, exe: PathBuf) {
        let state = self.state.clone();
        std::thread::spawn(move || match upgrade_to(&state, &exe) {
            Ok(pid) => tracing::info!(pid, "upgraded: the new process serves"),
            Err(why) => tracing::error!("upgrade failed: {why}; still serving"),
        });
    }

    /// Removes the socket file, unless a new process has put its own there.
    pub fn close(&self) {
        let ours = std::fs::metadata(&self.path).is_ok_and(|m| m.ino() == self.inode);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Serves each connection on a thread of its own (a `spawn` waits for the `take` of
/// the process it started).
fn accept(listener: &UnixListener, state: &Arc<Shared>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let state = state.clone();
        std::thread::spawn(move || {
            if let Err(e) = answer(&stream, &state) {
                tracing::warn!(cause = %e, "upgrade socket: a request was refused");
                let _ = writeln!(&stream, "refused {e}");
            }
        });
    }
}

fn answer(stream: &UnixStream, state: &Shared) -> io::Result<()> {
    let peer = passing::check_peer(stream)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    match parse(&read_line(stream)?)? {
        Request::Take => take(stream, state, peer),
        Request::Spawn(exe) => {
            let said = match upgrade_to(state, &exe) {
                Ok(pid) => format!("upgraded {} {pid}", std::process::id()),
                Err(why) => {
                    tracing::error!("upgrade failed: {why}; still serving");
                    format!("refused {why}")
                }
            };
            writeln!(&*stream, "{said}")
        }
    }
}

fn parse(line: &str) -> io::Result<Request> {
    match line.split_once(' ') {
        None if line == "take" => Ok(Request::Take),
        Some(("spawn", exe)) if Path::new(exe).is_absolute() => Ok(Request::Spawn(exe.into())),
        _ => Err(io::Error::other(format!("unknown request {line:?}"))),
    }
}

/// Hands every listening socket to the new process `peer`, then waits for its
/// "serving": then this process stops accepting and drains (the main loop's), and
/// says "stopping". Without it (the new process failed or took too long), nothing
/// changes here.
fn take(stream: &UnixStream, state: &Shared, peer: u32) -> io::Result<()> {
    {
        let mut outcome = lock(&state.outcome);
        match *outcome {
            Outcome::Serving | Outcome::Spawning => *outcome = Outcome::HandingOver,
            Outcome::HandingOver => return Err(io::Error::other("an upgrade is under way")),
            Outcome::Upgraded(pid) => {
                return Err(io::Error::other(format!(
                    "upgraded already: pid {pid} serves"
                )))
            }
        }
    }
    let result = hand_over(stream, state, peer);
    let mut outcome = lock(&state.outcome);
    *outcome = match &result {
        Ok(()) => Outcome::Upgraded(peer),
        Err(_) => Outcome::Serving,
    };
    state.changed.notify_all();
    drop(outcome);
    if result.is_ok() {
        (state.tell)(Ask::Upgraded(peer));
    }
    result
}

fn hand_over(stream: &UnixStream, state: &Shared, peer: u32) -> io::Result<()> {
    let (tx, rx) = std::sync::mpsc::channel();
    if !(state.tell)(Ask::Lend(tx)) {
        return Err(io::Error::other("this sluice is stopping"));
    }
    let lent = rx
        .recv_timeout(LEND_WAIT)
        .map_err(|_| io::Error::other("this sluice is stopping"))??;
    let sockets: Vec<(Kind, std::os::fd::BorrowedFd<'_>)> =
        lent.iter().map(|(k, fd)| (*k, fd.as_fd())).collect();
    writeln!(&*stream, "sockets")?;
    passing::send(stream, std::process::id(), &sockets)?;
    tracing::info!(
        pid = peer,
        sockets = sockets.len(),
        "upgrade: sockets handed to the new process"
    );
    // Our copies go; the proxy's own stay until it stops accepting.
    drop(lent);
    stream.set_read_timeout(Some(TAKEOVER_WAIT))?;
    if read_line(stream)? != "serving" {
        return Err(io::Error::other(
            "the new process ended before it served (its log says why)",
        ));
    }
    writeln!(&*stream, "stopping")
}

/// Starts `exe` as the new process and waits until it serves (its pid) or fails; one
/// that did not serve in time is killed, so it cannot take over later.
fn upgrade_to(state: &Shared, exe: &Path) -> Result<u32, String> {
    {
        let mut outcome = lock(&state.outcome);
        if *outcome != Outcome::Serving {
            return Err("an upgrade is under way, or done".into());
        }
        *outcome = Outcome::Spawning;
    }
    let spawned = Command::new(exe)
        .args(["serve", "--upgrade", "-c"])
        .arg(&state.config)
        .stdin(Stdio::null())
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            no_longer_spawning(state);
            return Err(format!("{}: {e}", exe.display()));
        }
    };
    tracing::info!(pid = child.id(), exe = %exe.display(), "upgrade: new process started");
    let result = wait_for_successor(state, &mut child);
    if result.is_err() {
        let _ = child.kill();
        let _ = child.wait();
        no_longer_spawning(state);
    }
    result
}

/// Back to serving, when the process started has not asked for the sockets.
fn no_longer_spawning(state: &Shared) {
    let mut outcome = lock(&state.outcome);
    if *outcome == Outcome::Spawning {
        *outcome = Outcome::Serving;
    }
}

/// Waits until the process `child` serves, or has ended (a bad config, a socket it
/// could not bind), or the handover's time is over.
fn wait_for_successor(state: &Shared, child: &mut Child) -> Result<u32, String> {
    let deadline = Instant::now() + TAKEOVER_WAIT + LEND_WAIT;
    let mut outcome = lock(&state.outcome);
    loop {
        if let Outcome::Upgraded(pid) = *outcome {
            return Ok(pid);
        }
        // Not while it has our sockets: its "serving" or its end decides.
        if matches!(*outcome, Outcome::Serving | Outcome::Spawning) {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "the new process (pid {}) exited ({status}) before serving; its log says why",
                    child.id()
                ));
            }
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the new process (pid {}) did not serve in time",
                child.id()
            ));
        }
        // Woken by the handover's end; a child's exit is looked for between.
        outcome = state
            .changed
            .wait_timeout(outcome, Duration::from_millis(50))
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
}
