//! Binary upgrade without a dropped connection (nginx's USR2 + QUIT): a new `sluice
//! serve` takes over the running one's listening sockets, the very sockets with the
//! connections queued on them, and the running one stops accepting, drains its
//! connections and exits.
//!
//! The running `sluice serve` listens on a unix socket beside its pid file
//! (`<pid file>.upgrade.sock`, mode 0600, a peer of another user refused: `handover`).
//! A new `sluice serve --upgrade -c FILE` (`takeover`) asks it for its sockets: it gets a
//! manifest (which listener each socket serves) and the sockets as descriptors
//! (`passing`), starts serving on them (binding only what its config adds), says
//! "serving", and once the running one answers "stopping" writes the pid file and tells
//! systemd its new main pid. Until that "serving", nothing changes for the running one: a
//! new process that fails (a bad config, a port it cannot bind, a crash) leaves it
//! serving, and it says so. `sluice upgrade -c FILE` and SIGUSR2 ask the running one to
//! start the new process itself (the binary `sluice upgrade` is, or the one it was
//! started from), so that it runs where the running one runs (its systemd unit).
//!
//! This module owns the handover; it never stops the proxy itself (the main loop does,
//! as at a stop) and never closes a socket it handed over before the new process has it.

mod handover;
mod passing;
mod takeover;

pub use handover::{Ask, Handover};
pub use passing::Kind;
pub use takeover::{Taken, Takeover};

use crate::exit::FAILURE;
use anyhow::Context;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Copies of the sockets to hand over, each with what it is.
pub type Lent = Vec<(Kind, OwnedFd)>;

/// The upgrade socket of the `sluice serve` whose pid file is `pid_file`.
pub fn socket_path(pid_file: &Path) -> PathBuf {
    let mut name = pid_file.as_os_str().to_owned();
    name.push(".upgrade.sock");
    PathBuf::from(name)
}

/// Copies of every socket this process serves on: the proxy's listeners, and the admin
/// listener's.
/// (`admin`: the admin listener with the address it was configured at).
pub fn lend(
    proxy: &sluice_proxy::Proxy,
    admin: Option<(std::net::SocketAddr, &sluice_admin::Admin)>,
) -> std::io::Result<Lent> {
    let listeners = proxy.lend_listeners()?.into_iter();
    let mut lent: Lent = listeners
        .map(|l| (Kind::Listener(l.configured), l.socket))
        .collect();
    if let Some((configured, admin)) = admin {
        lent.push((Kind::Admin(configured), admin.lend()?));
    }
    Ok(lent)
}

/// `sluice upgrade -c FILE`: asks the running `sluice serve` of FILE (through its
/// upgrade socket, beside its pid file `pid_file`) to start this binary as its
/// successor, and says how that went.
pub fn upgrade(pid_file: &Path) -> anyhow::Result<ExitCode> {
    let path = socket_path(pid_file);
    let stream = UnixStream::connect(&path).with_context(|| {
        format!(
            "no running sluice for this config answers on {} (started before binary upgrades, or with another pid_file or TMPDIR?)",
            path.display()
        )
    })?;
    let exe = std::env::current_exe().context("this binary's path")?;
    let exe = exe.to_str().filter(|p| !p.contains('\n'));
    let exe = exe.context("this binary's path is not one line of UTF-8")?;
    // The new process's start and the running one's handover, with time to spare.
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    writeln!(&stream, "spawn {exe}")?;
    let answer = passing_line(&stream)?;
    let words: Vec<&str> = answer.split_whitespace().collect();
    if let ["upgraded", old, new] = words[..] {
        println!("sluice upgraded: pid {new} ({exe}) serves; pid {old} finishes its requests in flight and exits");
        return Ok(ExitCode::SUCCESS);
    }
    let why = answer.strip_prefix("refused ").unwrap_or(&answer);
    eprintln!("sluice: upgrade failed: {why}\nsluice: the running sluice keeps serving");
    Ok(ExitCode::from(FAILURE))
}

fn passing_line(stream: &UnixStream) -> anyhow::Result<String> {
    passing::read_line(stream).context("no answer from the running sluice")
}
