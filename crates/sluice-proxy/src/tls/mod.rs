//! TLS for client connections (rustls): each TLS listener has one server config for the
//! whole process, shared by every worker, so the session tickets and session cache a
//! client resumes from are the same whichever worker accepts it. Certificates live in
//! the config's resolver (`certs`) and are swapped in place, on reload and when their
//! files change (`runtime::certificates`), without a new config and without failing a handshake.
//!
//! Certificates are all read and checked before any is swapped in: a reload with one
//! bad file changes none, and its error names the file, the reason and the config line.

pub mod certs;
pub mod client;

use certs::{CertSet, Loaded, Resolver};
use rustls::crypto::CryptoProvider;
use rustls::server::ServerSessionMemoryCache;
use rustls::ServerConfig;
use sluice_config::{CertificateFiles, Config, ConfigError, Errors, Tls};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;
use tokio_rustls::TlsAcceptor;

/// Sessions kept for resumption by ID (TLS 1.2 clients without tickets), process-wide.
const SESSION_CACHE: usize = 20_000;

/// The crypto provider: aws-lc-rs, rustls's default, or ring when built with the `ring`
/// feature (kept to measure one against the other: docs/benchmarks.md has the figures).
pub fn provider() -> &'static Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    #[cfg(not(feature = "ring"))]
    let make = rustls::crypto::aws_lc_rs::default_provider;
    #[cfg(feature = "ring")]
    let make = rustls::crypto::ring::default_provider;
    PROVIDER.get_or_init(|| Arc::new(make()))
}

/// Session tickets from the same provider: rotated every 6 hours, the previous key
/// still accepted (rustls's rotator).
fn ticketer() -> Result<Arc<dyn rustls::server::ProducesTickets>, rustls::Error> {
    #[cfg(not(feature = "ring"))]
    return rustls::crypto::aws_lc_rs::Ticketer::new();
    #[cfg(feature = "ring")]
    return rustls::crypto::ring::Ticketer::new();
}

/// A listener's TLS: the acceptor its workers hand new connections to.
pub struct TlsListener {
    pub acceptor: TlsAcceptor,
    /// HTTP/2 is offered (ALPN `h2` before `http/1.1`).
    pub http2: bool,
    resolver: Arc<Resolver>,
    files: Mutex<Files>,
}

/// The files a listener's certificates came from, and how they looked when read.
struct Files {
    settings: Tls,
    stamps: Vec<Stamp>,
}

/// What tells a file changed: modification time, size, inode (a renewal replaces the
/// file or the symlink to it, as certbot does).
type Stamp = Option<(SystemTime, u64, u64)>;

fn stamps(settings: &Tls) -> Vec<Stamp> {
    let stamp = |p: &std::path::Path| {
        let m = std::fs::metadata(p).ok()?;
        Some((m.modified().ok()?, m.len(), m.ino()))
    };
    settings
        .certificates
        .iter()
        .flat_map(|c| [stamp(&c.cert), stamp(&c.key)])
        .collect()
}

/// Reads and checks every certificate `settings` names: all of them, or every error.
fn load(settings: &Tls) -> Result<(CertSet, Vec<Loaded>), Vec<ConfigError>> {
    let (mut loaded, mut errors) = (Vec::new(), Vec::new());
    for files in &settings.certificates {
        match certs::load(files, provider()) {
            Ok(l) => loaded.push(l),
            Err(e) => errors.extend(e),
        }
    }
    match CertSet::new(&loaded) {
        Some(set) if errors.is_empty() => Ok((set, loaded)),
        _ => Err(errors),
    }
}

impl TlsListener {
    fn new(settings: &Tls, set: CertSet, http2: bool) -> Result<TlsListener, rustls::Error> {
        let resolver = Arc::new(Resolver::new(set));
        let mut config = ServerConfig::builder_with_provider(provider().clone())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(resolver.clone());
        config.alpn_protocols = match http2 {
            true => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            false => vec![b"http/1.1".to_vec()],
        };
        config.ticketer = ticketer()?;
        // The server's order of cipher suites (rustls': AES-256-GCM, AES-128-GCM,
        // ChaCha20-Poly1305), not whatever a client lists first.
        config.ignore_client_order = true;
        config.session_storage = ServerSessionMemoryCache::new(SESSION_CACHE);
        Ok(TlsListener {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            http2,
            resolver,
            files: Mutex::new(Files {
                settings: settings.clone(),
                stamps: stamps(settings),
            }),
        })
    }

    fn replace(&self, settings: &Tls, set: CertSet) {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        self.resolver.replace(set);
        *files = Files {
            settings: settings.clone(),
            stamps: stamps(settings),
        };
    }

    /// Reads the certificates again if any of their files changed since they were
    /// read: `Ok(true)` when new ones are in use. On an error the old ones stay, and
    /// the same files are not tried again until they change once more.
    pub fn refresh(&self) -> Result<bool, Vec<ConfigError>> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let now = stamps(&files.settings);
        if now == files.stamps {
            return Ok(false);
        }
        files.stamps = now;
        let (set, _) = load(&files.settings)?;
        self.resolver.replace(set);
        Ok(true)
    }

    /// The files this listener serves, for log lines.
    pub fn describe(&self) -> String {
        let files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let names: Vec<String> = files
            .settings
            .certificates
            .iter()
            .map(|c: &CertificateFiles| c.cert.display().to_string())
            .collect();
        names.join(", ")
    }
}

/// The TLS listeners of `config`, by configured address. A listener `previous` had
/// keeps its acceptor (so sessions resume across the reload) with the certificates read
/// again; nothing is swapped unless every file of every listener is good.
pub fn listeners(
    config: &Config,
    previous: Option<&HashMap<SocketAddr, Arc<TlsListener>>>,
) -> Result<HashMap<SocketAddr, Arc<TlsListener>>, Errors> {
    let mut sets = Vec::new();
    let mut errors = Vec::new();
    for l in &config.listeners {
        let Some(settings) = &l.tls else { continue };
        match load(settings) {
            Ok((set, _)) => sets.push((l, settings, set)),
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(Errors(errors));
    }
    let mut out = HashMap::new();
    for (l, settings, set) in sets {
        let bind = l.bind;
        let kept = previous
            .and_then(|p| p.get(&bind))
            .filter(|old| old.http2 == l.http2);
        let listener = match kept {
            Some(old) => {
                old.replace(settings, set);
                old.clone()
            }
            None => Arc::new(TlsListener::new(settings, set, l.http2).map_err(|e| {
                let at = &settings.certificates[0].at;
                Errors(vec![ConfigError::at_place(
                    at,
                    format!("TLS setup failed: {e}"),
                    "",
                )])
            })?),
        };
        out.insert(bind, listener);
    }
    Ok(out)
}

/// The TLS client config of each upstream (in config order), `None` for plain ones and
/// for those `kept` (a reload reuses an unchanged upstream whole: its CA file or the
/// system's roots are not read again).
pub fn clients(
    config: &Config,
    kept: impl Fn(&sluice_config::Upstream) -> bool,
) -> Result<Vec<Option<client::ClientTls>>, Errors> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for u in &config.upstreams {
        let settings = u.tls.as_ref().filter(|_| !kept(u));
        match settings.map(client::ClientTls::new).transpose() {
            Ok(c) => out.push(c),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(Errors(errors))
    }
}

/// Checks every certificate `config` names, as `sluice check` does: the errors, or the
/// soonest expiry per file (for a warning when it is near).
pub fn check(config: &Config) -> Result<Vec<(String, i64)>, Errors> {
    let mut expiries = Vec::new();
    let mut errors = Vec::new();
    for settings in config.listeners.iter().filter_map(|l| l.tls.as_ref()) {
        // The ACME certificate is sluice's to obtain and renew (a placeholder stands in
        // until then, and for an expired one at start): nothing for a check to refuse.
        let mut settings = settings.clone();
        settings.certificates.retain(|c| !c.acme);
        if settings.certificates.is_empty() {
            continue;
        }
        let settings = &settings;
        match load(settings) {
            Ok((_, loaded)) => {
                for (files, l) in settings.certificates.iter().zip(&loaded) {
                    expiries.push((files.cert.display().to_string(), l.not_after));
                }
            }
            Err(e) => errors.extend(e),
        }
    }
    if let Err(Errors(e)) = clients(config, |_| false) {
        errors.extend(e);
    }
    if errors.is_empty() {
        Ok(expiries)
    } else {
        Err(Errors(errors))
    }
}
