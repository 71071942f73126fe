//! sluice's configuration: TOML text in, a validated [`Config`] out.
//!
//! This crate owns the config file format (its key names are the user's interface: extend
//! them, never rename them), its defaults, and every error message a user sees about a
//! config. Each problem is reported with `file:line:col`, a message and a hint, and all
//! problems are reported at once. It must never panic on input, never touch the network or
//! resolve names, and never start anything: it only reads and checks.

mod acme;
mod admin;
mod answer;
mod balance;
mod compress;
mod discover;
mod entry;
mod error;
mod guard;
mod headers;
mod identity;
mod key;
mod limits;
mod location;
mod model;
mod pattern;
mod proxies;
mod rate;
mod reader;
pub mod reference;
mod resilience;
mod route;
mod servers;
mod sticky;
mod tls;
mod validate;

pub use admin::DEFAULT_BIND as DEFAULT_ADMIN_BIND;
pub use error::{ConfigError, Errors};
pub use guard::warnings;
pub use model::{
    AccessLog, AccessRule, Acme, Action, Admin, Balance, BasicAuth, Captures, CertificateFiles,
    Compress, Config, CookieAttributes, Discover, DnsQuery, FailurePolicy, Guard, HashMethod,
    HeaderEdits, HealthCheck, HostMatch, Http2Limits, KeyPart, KeyTemplate, Listener, LogFormat,
    LogTarget, Matching, Network, Pattern, Place, QueuePolicy, RateLimit, RequestIdentity,
    Resolver, RetryPolicy, Return, Rewrite, RewriteFlag, Route, SameSite, Satisfy, Server, Sticky,
    Tls, Upstream, UpstreamTls, Variable, Verdict,
};
pub use reader::{parse_duration, Reader};
/// The TOML library the [`Reader`] walks documents of.
pub use toml_edit;

use std::path::Path;

/// Reads and validates the config file at `path`, and what it names on disk.
pub fn load(path: &Path) -> Result<Config, Errors> {
    read(path, Disk::Check)
}

/// Validates config `text` (`name` is the file name used in error messages), and what
/// it names on disk.
pub fn parse(name: &str, text: &str) -> Result<Config, Errors> {
    validate::document(name, text, Disk::Check)
}

/// Reads and validates the config file at `path` as written, without looking at what it
/// names on disk: for `sluice check`, which checks that ([`on_disk`]) together with the
/// server names and the certificates, so that all their problems come in one round.
pub fn load_as_written(path: &Path) -> Result<Config, Errors> {
    read(path, Disk::Later)
}

/// Whether validation looks at what the config names on disk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Disk {
    Check,
    Later,
}

fn read(path: &Path, disk: Disk) -> Result<Config, Errors> {
    let name = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => validate::document(&name, &text, disk),
        Err(e) => Err(Errors(vec![ConfigError::whole_file(
            &name,
            format!("cannot read the config file: {e}"),
            "check the path given with -c",
        )])),
    }
}

/// What `config` names on disk, besides certificates (which the proxy reads): every
/// route's `root` is a directory.
pub fn on_disk(config: &Config) -> Result<(), Errors> {
    let errors = disk_errors(config);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Errors(errors))
    }
}

fn disk_errors(config: &Config) -> Vec<ConfigError> {
    let not_a_directory = |route: &Route| match &route.action {
        Action::Files { root, at } if !root.is_dir() => Some(ConfigError::at_place(
            at,
            format!("root \"{}\" is not a directory", root.display()),
            "give the directory the route serves files from",
        )),
        _ => None,
    };
    config.routes.iter().filter_map(not_a_directory).collect()
}
