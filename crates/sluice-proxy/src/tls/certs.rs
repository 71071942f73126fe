//! Certificates from PEM files: read, checked (the key matches, the certificate is in
//! its validity period), indexed by the names they are for, and chosen by the server
//! name a client asks for (SNI).

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use sluice_config::{CertificateFiles, ConfigError};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

/// One certificate chain with its key, and what the leaf says of itself.
pub struct Loaded {
    pub key: Arc<CertifiedKey>,
    /// DNS names of the leaf (subject alternative names; the common name when it has
    /// none), lower-case; wildcards as `*.example.com`.
    pub names: Vec<String>,
    /// End of the validity period, seconds since the epoch.
    pub not_after: i64,
}

/// What to do when certbot's files are not sluice's to read: certbot keeps keys root-only,
/// the shipped unit runs sluice as its own user.
const CERTBOT_HINT: &str = "certbot's keys are root's only: install dist/certbot-deploy-hook (it copies each renewal to /etc/sluice/tls/NAME for the sluice group) and point cert and key there";

/// The hint for a file sluice could not use: certbot's, when it was not sluice's to read.
fn hint_for<'h>(path: &std::path::Path, why: &str, hint: &'h str) -> &'h str {
    if why.contains("Permission denied") && path.starts_with("/etc/letsencrypt") {
        CERTBOT_HINT
    } else {
        hint
    }
}

/// Reads and checks one certificate and key pair. The error names the file, the reason
/// and the place in the config that points to it.
pub fn load(
    files: &CertificateFiles,
    provider: &CryptoProvider,
) -> Result<Loaded, Vec<ConfigError>> {
    let fail = |path: &std::path::Path, why: String, hint: &str| {
        let hint = hint_for(path, &why, hint);
        ConfigError::at_place(&files.at, format!("{}: {why}", path.display()), hint)
    };
    let chain_hint = "give the PEM file of the certificate chain (fullchain.pem)";
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<CertificateDer<'static>>, _>>())
        .map_err(|e| fail(&files.cert, pem_error(e), chain_hint))
        .and_then(|chain| match chain.is_empty() {
            true => Err(fail(
                &files.cert,
                "no CERTIFICATE block in the file".into(),
                chain_hint,
            )),
            false => Ok(chain),
        });
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| {
        fail(
            &files.key,
            pem_error(e),
            "give the PEM file of the private key (privkey.pem)",
        )
    });
    // Both files' problems at once: a missing key is said beside a missing certificate.
    let (chain, key) = match (chain, key) {
        (Ok(chain), Ok(key)) => (chain, key),
        (chain, key) => return Err(chain.err().into_iter().chain(key.err()).collect()),
    };
    let signer = provider.key_provider.load_private_key(key).map_err(|e| {
        fail(
            &files.key,
            format!("unusable private key: {e}"),
            "use an RSA, ECDSA or Ed25519 key",
        )
    });
    let signer = signer.map_err(|e| vec![e])?;
    let key = CertifiedKey::new(chain, signer);
    if key.keys_match().is_err() {
        let why = format!(
            "the private key does not belong to the certificate in {}",
            files.cert.display()
        );
        return Err(vec![fail(
            &files.key,
            why,
            "give the key that was issued with this certificate",
        )]);
    }
    let leaf = leaf_facts(&key.cert[0])
        .map_err(|why| vec![fail(&files.cert, why, "give a valid X.509 certificate")])?;
    check_validity((leaf.not_before, leaf.not_after), now())
        .map_err(|why| vec![fail(&files.cert, why, "renew the certificate")])?;
    Ok(Loaded {
        key: Arc::new(key),
        names: leaf.names,
        not_after: leaf.not_after,
    })
}

fn pem_error(e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error;
    match e {
        Error::Io(e) => format!("cannot read: {e}"),
        Error::NoItemsFound => "no PEM block of the right kind in the file".into(),
        other => format!("not a valid PEM file: {other:?}"),
    }
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// What a leaf certificate says of itself.
pub struct Leaf {
    /// DNS names (subject alternative names; the common name when it has none),
    /// lower-case.
    pub names: Vec<String>,
    pub common_name: Option<String>,
    /// The validity period, seconds since the epoch.
    pub not_before: i64,
    pub not_after: i64,
}

/// The first certificate of the PEM file at `path`, if it can be read and parsed.
pub fn leaf_of_file(path: &std::path::Path) -> Option<Leaf> {
    let der = CertificateDer::from_pem_file(path).ok()?;
    leaf_facts(&der).ok()
}

/// The leaf's names and validity period.
fn leaf_facts(der: &[u8]) -> Result<Leaf, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("the first certificate cannot be parsed: {e}"))?;
    let validity = cert.validity();
    let common_name = cert
        .subject()
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .map(str::to_string);
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for name in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(n) = name {
                names.push(n.to_ascii_lowercase());
            }
        }
    }
    if names.is_empty() {
        names.extend(common_name.as_deref().map(str::to_ascii_lowercase));
    }
    Ok(Leaf {
        names,
        common_name,
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
    })
}

/// An error when `now` is outside the period.
fn check_validity((not_before, not_after): (i64, i64), now: i64) -> Result<(), String> {
    if now > not_after {
        return Err(format!("the certificate expired on {}", date(not_after)));
    }
    if now < not_before {
        return Err(format!(
            "the certificate is not valid before {}",
            date(not_before)
        ));
    }
    Ok(())
}

/// `2026-11-23 18:04:02 UTC`, from seconds since the epoch (1970 for earlier ones).
pub fn date(secs: i64) -> String {
    let (year, month, day, h, m, s) = crate::clock::civil(secs.max(0) as u64);
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{s:02} UTC")
}

/// A listener's certificates, indexed by name.
pub struct CertSet {
    default: Arc<CertifiedKey>,
    exact: HashMap<String, Arc<CertifiedKey>>,
    /// `*.example.com` is kept under `example.com`.
    wildcard: HashMap<String, Arc<CertifiedKey>>,
}

impl CertSet {
    /// The set of `loaded`, the first being the default; a name claimed by two
    /// certificates goes to the first that claims it.
    pub fn new(loaded: &[Loaded]) -> Option<CertSet> {
        let mut set = CertSet {
            default: loaded.first()?.key.clone(),
            exact: HashMap::new(),
            wildcard: HashMap::new(),
        };
        for l in loaded {
            for name in &l.names {
                let (map, name) = match name.strip_prefix("*.") {
                    Some(parent) => (&mut set.wildcard, parent),
                    None => (&mut set.exact, name.as_str()),
                };
                map.entry(name.to_string()).or_insert_with(|| l.key.clone());
            }
        }
        Some(set)
    }

    /// The certificate for `server_name`: an exact name, then a wildcard one label
    /// deep, then the default (also for clients that send no name).
    pub fn pick(&self, server_name: Option<&str>) -> Arc<CertifiedKey> {
        let Some(name) = server_name.map(str::to_ascii_lowercase) else {
            return self.default.clone();
        };
        if let Some(key) = self.exact.get(&name) {
            return key.clone();
        }
        let parent = name.split_once('.').map(|(_, p)| p);
        parent
            .and_then(|p| self.wildcard.get(p))
            .unwrap_or(&self.default)
            .clone()
    }
}

/// The resolver a listener's TLS config asks during each handshake. Its set is
/// replaced in place when certificates change, so the config (and with it the session
/// tickets and cache clients resume from) outlives any rotation.
pub struct Resolver {
    current: RwLock<Arc<CertSet>>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
    }
}

impl Resolver {
    pub fn new(set: CertSet) -> Self {
        Resolver {
            current: RwLock::new(Arc::new(set)),
        }
    }

    pub fn replace(&self, set: CertSet) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(set);
    }

    fn set(&self) -> Arc<CertSet> {
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.set().pick(hello.server_name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certbots_unreadable_keys_get_the_deploy_hook_as_their_hint() {
        let denied = "cannot read: Permission denied (os error 13)";
        let key = std::path::Path::new("/etc/letsencrypt/live/example.com/privkey.pem");
        assert_eq!(hint_for(key, denied, "give the key"), CERTBOT_HINT);
        // Another file, or another reason: the usual hint.
        let other = std::path::Path::new("/etc/sluice/privkey.pem");
        assert_eq!(hint_for(other, denied, "give the key"), "give the key");
        assert_eq!(
            hint_for(key, "cannot read: No such file", "give the key"),
            "give the key"
        );
    }

    #[test]
    fn dates_are_civil() {
        assert_eq!(date(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(date(951_782_400), "2000-02-29 00:00:00 UTC");
        assert_eq!(date(1_795_456_800), "2026-11-23 18:00:00 UTC");
    }

    #[test]
    fn validity_is_checked_both_ways() {
        assert!(check_validity((100, 200), 150).is_ok());
        let expired = check_validity((100, 200), 201).unwrap_err();
        assert_eq!(
            expired,
            "the certificate expired on 1970-01-01 00:03:20 UTC"
        );
        assert!(check_validity((100, 200), 99)
            .unwrap_err()
            .contains("not valid before"));
    }
}
