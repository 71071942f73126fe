//! Why an experiment or a deployment could not be measured. Each error says what failed
//! in words a user can act on; its cause (an io error, a URL's fault) is its `source()`,
//! printed after it by [`chain`] (or by anyhow's `{:#}` in the binary), so the words
//! read as `starting app-1: /usr/bin/sluice: No such file or directory`.

use crate::real::TierError;
use sluice_bench::target::TargetError;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

/// Why the lab could not run an experiment or measure a deployment.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A tier's process could not be started (its program missing, not executable).
    #[error("starting {name}: {}", program.display())]
    Start {
        name: String,
        program: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A tier's process ended before it accepted connections; its log says why.
    #[error("{name} exited ({status}) before it listened:\n{log}")]
    Exited {
        name: String,
        status: ExitStatus,
        log: String,
    },
    /// A tier did not accept connections in time; its log may say why.
    #[error("{name} did not listen on {addr} within {} s:\n{log}", within.as_secs())]
    NotReady {
        name: String,
        addr: SocketAddr,
        within: Duration,
        log: String,
    },
    /// The balancer the experiment names is not installed on this machine.
    #[error("--lb {0}: {0} is not installed (on Debian: apt-get install {0})")]
    NotInstalled(String),
    /// A `--tier` that cannot be watched, or an exporter with no metrics.
    #[error(transparent)]
    Tier(#[from] TierError),
    /// The URL the users are sent to is not one the load generator takes.
    #[error("{url}")]
    Target {
        url: String,
        #[source]
        source: TargetError,
    },
    /// The experiment's scenario does not parse (each error with its place).
    #[error(transparent)]
    Scenario(sluice_config::Errors),
    /// The users' GET request could not be built.
    #[error(transparent)]
    Request(TargetError),
    /// The load generator could not run (its threads, a worker that panicked).
    #[error("running the load generator")]
    Load(#[source] io::Error),
    /// The running sluice's upstream could not be resized, or was not put back.
    #[error(transparent)]
    Resize(#[from] crate::resize::ResizeError),
    /// A change the proof makes on a deployment (a quota, a server, the user's command).
    #[error("the proof's change: {0}")]
    Change(String),
    #[error("the step was interrupted before it started")]
    Interrupted,
    /// A file or directory of the tiers, or a loopback port for one: `what` was done.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// What wraps an io error with what was being done:
    /// `.map_err(Error::io(format!("creating {}", dir.display())))`.
    pub(crate) fn io(what: String) -> impl FnOnce(io::Error) -> Error {
        move |source| Error::Io { what, source }
    }
}

/// `e` and its causes, `: `-separated (as anyhow's `{:#}`): for the report's warnings,
/// which are text and must not lose the cause.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_reads_as_the_messages_did() {
        let e = Error::Start {
            name: "app-1".into(),
            program: "/no/sluice".into(),
            source: io::Error::new(io::ErrorKind::NotFound, "gone"),
        };
        assert_eq!(chain(&e), "starting app-1: /no/sluice: gone");
        let e = Error::Target {
            url: "ftp://x/".into(),
            source: TargetError::NotHttp("ftp://x/".into()),
        };
        assert_eq!(
            chain(&e),
            "ftp://x/: `ftp://x/` is not an http:// or https:// URL (write it as http://host:port/path)"
        );
        let e = Error::Tier(TierError::NoMetrics {
            tier: "db".into(),
            url: "http://h/metrics".into(),
        });
        assert_eq!(
            chain(&e),
            "--tier db=http://h/metrics: nothing to read there (Prometheus text, or Redis's INFO)"
        );
        assert_eq!(
            Error::NotInstalled("nginx".into()).to_string(),
            "--lb nginx: nginx is not installed (on Debian: apt-get install nginx)"
        );
    }
}
