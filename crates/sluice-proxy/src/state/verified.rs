//! The users and passwords a worker verified lately, so that a slow hash is computed
//! once per user a while, not once per request (nginx hashes every request). Keyed by
//! a SHA-256 of the users' file (its place in memory), the user and the password, with
//! a random salt of the process's: the password itself is never kept. Per worker and
//! per generation: a reload, which reads the file again, starts empty.

use super::htpasswd::Users;
use crate::clock;
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;

pub(crate) type Key = [u8; 32];

/// Entries a worker keeps at most: past that, the expired go, then all (a flood of
/// right passwords for many users is not a case to optimise).
const MOST: usize = 4096;

#[derive(Default)]
pub(crate) struct Verified {
    until: RefCell<HashMap<Key, Instant>>,
}

impl Verified {
    /// Whether `key` was verified within its cache time.
    pub(crate) fn fresh(&self, key: &Key) -> bool {
        let until = self.until.borrow();
        until.get(key).is_some_and(|t| clock::now() < *t)
    }

    /// Remembers a verified `key` for `cache` (nothing when zero).
    pub(crate) fn remember(&self, key: Key, cache: Duration) {
        if cache.is_zero() {
            return;
        }
        let now = clock::now();
        let mut until = self.until.borrow_mut();
        if until.len() >= MOST {
            until.retain(|_, t| now < *t);
            if until.len() >= MOST {
                until.clear();
            }
        }
        until.insert(key, now + cache);
    }
}

/// The cache's key for `user` and `password` in `users`, as remembered for `cache`:
/// routes sharing a file but not a cache time each keep their own (a `"0s"` route never
/// takes another's verification).
pub(crate) fn key(users: &Arc<Users>, cache: Duration, user: &str, password: &[u8]) -> Key {
    let file = Arc::as_ptr(users) as usize;
    Sha256::new()
        .chain_update(salt())
        .chain_update(file.to_le_bytes())
        .chain_update(cache.as_nanos().to_le_bytes())
        .chain_update((user.len() as u64).to_le_bytes())
        .chain_update(user)
        .chain_update(password)
        .finalize()
        .into()
}

/// Random bytes of this process, so that a key taken from its memory cannot be
/// checked against guessed passwords elsewhere.
fn salt() -> &'static [u8; 16] {
    static SALT: OnceLock<[u8; 16]> = OnceLock::new();
    SALT.get_or_init(|| {
        let mut salt = [0; 16];
        // The process's randomness source of std's HashMap, seeded by the OS.
        for chunk in salt.chunks_mut(8) {
            use std::hash::{BuildHasher, Hasher};
            let hasher = std::collections::hash_map::RandomState::new().build_hasher();
            chunk.copy_from_slice(&hasher.finish().to_le_bytes());
        }
        salt
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn remembered_for_its_cache_time_only() {
        let users = Arc::new(Users::parse("f", "a:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n").unwrap());
        let verified = Verified::default();
        let minute = Duration::from_secs(60);
        let key = key(&users, minute, "a", b"password");
        assert_ne!(key, super::key(&users, minute, "a", b"passwore"));
        assert_ne!(key, super::key(&users, Duration::ZERO, "a", b"password"));
        assert!(!verified.fresh(&key));
        verified.remember(key, minute);
        assert!(verified.fresh(&key));
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(!verified.fresh(&key));
        verified.remember(key, Duration::ZERO);
        assert!(!verified.fresh(&key), "a zero cache remembers nothing");
    }
}
