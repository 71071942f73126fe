//! The proxy's part of ACME: answering HTTP-01 challenges and serving a placeholder
//! certificate until the first real one is obtained. The protocol (account, orders,
//! renewal) is `sluice-acme`'s, which publishes tokens here and writes the certificate
//! files that `runtime::certificates` then swaps in.

use crate::tls::certs::Leaf;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Where HTTP-01 challenges are asked for.
pub const CHALLENGE_PATH: &str = "/.well-known/acme-challenge/";

/// The key authorizations being validated, by token. Shared by every worker (a CA
/// fetches the token from any of them, several times) and kept across reloads.
#[derive(Default)]
pub struct Challenges {
    by_token: Mutex<HashMap<String, String>>,
    /// How many there are, read without the lock on every request.
    count: AtomicUsize,
}

impl Challenges {
    /// Answers `token` with `key_authorization` until it is withdrawn.
    pub fn publish(&self, token: &str, key_authorization: &str) {
        let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        map.insert(token.to_string(), key_authorization.to_string());
        self.count.store(map.len(), Ordering::Release);
    }

    pub fn withdraw(&self, token: &str) {
        let mut map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(token);
        self.count.store(map.len(), Ordering::Release);
    }

    /// The key authorization for a request to `path`, if it asks for a published token.
    pub fn answer(&self, path: &str) -> Option<String> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        let token = path.strip_prefix(CHALLENGE_PATH)?;
        let token = token.split('?').next().unwrap_or(token);
        let map = self.by_token.lock().unwrap_or_else(|p| p.into_inner());
        map.get(token).cloned()
    }
}

/// Writes a self-signed certificate for `domains` into `dir` (fullchain.pem,
/// privkey.pem) unless a certificate obtained from the CA and still valid is there, so
/// that a TLS listener can start before the first one is obtained (or after sluice was
/// down past its expiry, when only the ACME client can fix it). Its subject says what it
/// is; it is valid for a week and made anew at every start.
pub fn ensure_placeholder(dir: &Path, domains: &[String]) -> std::io::Result<bool> {
    let (cert, key) = (dir.join("fullchain.pem"), dir.join("privkey.pem"));
    if key.exists() && obtained_and_valid(&cert) {
        return Ok(false);
    }
    std::fs::create_dir_all(dir)?;
    let mut params =
        rcgen::CertificateParams::new(domains.to_vec()).map_err(std::io::Error::other)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, PLACEHOLDER);
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(7);
    let signer = rcgen::KeyPair::generate().map_err(std::io::Error::other)?;
    let made = params.self_signed(&signer).map_err(std::io::Error::other)?;
    write_atomically(&key, signer.serialize_pem().as_bytes())?;
    write_atomically(&cert, made.pem().as_bytes())?;
    Ok(true)
}

/// True when `cert` holds a certificate from the CA (not a placeholder) that has not
/// expired.
fn obtained_and_valid(cert: &Path) -> bool {
    let now = crate::tls::certs::now();
    obtained(cert).is_some_and(|leaf| (leaf.not_before..=leaf.not_after).contains(&now))
}

/// The certificate in `cert` when it is one the CA issued (not the placeholder).
pub fn obtained(cert: &Path) -> Option<Leaf> {
    crate::tls::certs::leaf_of_file(cert)
        .filter(|leaf| leaf.common_name.as_deref() != Some(PLACEHOLDER))
}

/// The common name of the placeholder certificate.
pub const PLACEHOLDER: &str = "sluice placeholder (no ACME certificate yet)";

/// Writes `bytes` to `path` through a temporary file and a rename, so that a reader
/// (the certificate watcher) sees the old file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_published_tokens_are_answered() {
        let c = Challenges::default();
        assert_eq!(c.answer("/.well-known/acme-challenge/abc"), None);
        c.publish("abc", "abc.thumb");
        assert_eq!(
            c.answer("/.well-known/acme-challenge/abc").as_deref(),
            Some("abc.thumb")
        );
        assert_eq!(c.answer("/.well-known/acme-challenge/abcd"), None);
        assert_eq!(c.answer("/other/abc"), None);
        c.withdraw("abc");
        assert_eq!(c.answer("/.well-known/acme-challenge/abc"), None);
    }
}
