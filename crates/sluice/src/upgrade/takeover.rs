//! The new process's side of a binary upgrade (`sluice serve --upgrade`): the running
//! sluice's sockets taken over its upgrade socket, then "serving" said once this process
//! accepts on them, and the running one's "stopping" awaited. Never binds a socket the
//! running one handed over: it serves on the very sockets, queues included.

use super::passing::{self, read_line, Kind};
use anyhow::{anyhow, Context};
use sluice_proxy::Inherited;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// How long the running sluice has to say "stopping" (it closes its listeners first).
const STOPPING_WAIT: Duration = Duration::from_secs(30);

/// A handover under way, from the running process `from`.
pub struct Takeover {
    stream: UnixStream,
    pub from: u32,
}

/// The sockets taken over: the listeners', and the admin listener's with the address
/// it was configured at.
#[derive(Default)]
pub struct Taken {
    pub listeners: Inherited,
    pub admin: Option<(SocketAddr, TcpListener)>,
}

impl Takeover {
    /// Asks the sluice listening on the upgrade socket at `path` for its sockets.
    pub fn connect(path: &Path) -> anyhow::Result<(Takeover, Taken)> {
        let stream = UnixStream::connect(path).with_context(|| {
            format!(
                "--upgrade: no running sluice for this config answers on {}",
                path.display()
            )
        })?;
        passing::check_peer(&stream).context("--upgrade: the upgrade socket")?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        writeln!(&stream, "take")?;
        match read_line(&stream).context("--upgrade: the running sluice's answer")? {
            line if line == "sockets" => {}
            line => match line.strip_prefix("refused ") {
                Some(why) => return Err(anyhow!("the running sluice refused the upgrade: {why}")),
                None => return Err(anyhow!("the running sluice answered {line:?}")),
            },
        }
        let (from, sockets) =
            passing::receive(&stream).context("taking over the running sluice's sockets")?;
        let mut taken = Taken::default();
        for (kind, fd) in sockets {
            match kind {
                Kind::Listener(configured) => taken.listeners.add(configured, fd.into()),
                Kind::Admin(configured) => taken.admin = Some((configured, fd.into())),
            }
        }
        tracing::info!(from, "upgrade: took over the running sluice's sockets");
        Ok((Takeover { stream, from }, taken))
    }

    /// Tells the running sluice that this one serves, and waits until it has stopped
    /// accepting. An error: it did not confirm, and this process must not go on (the
    /// running one goes on serving).
    pub fn serving(self) -> anyhow::Result<()> {
        writeln!(&self.stream, "serving")?;
        self.stream.set_read_timeout(Some(STOPPING_WAIT))?;
        match read_line(&self.stream) {
            Ok(line) if line == "stopping" => Ok(()),
            Ok(line) => Err(anyhow!(
                "the running sluice (pid {}) answered {line:?}",
                self.from
            )),
            Err(e) => Err(anyhow!(
                "the running sluice (pid {}) did not confirm: {e}",
                self.from
            )),
        }
    }
}
