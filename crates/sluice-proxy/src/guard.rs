//! A route's guards, at the request's head, after its rate limits (nginx's order: the
//! limits' phase comes before access): the client's address against `access`, its
//! `Authorization` against `auth_basic`'s users, the two combined by `satisfy`. A
//! refusal is sluice's own `403` or `401` and never reaches a server.
//!
//! bcrypt takes milliseconds by design, so a password is never hashed on a worker
//! thread (it would stall every connection of the worker): it goes to the hashing
//! threads, on half the cores at most, and the request waits. A verified user and
//! password are remembered per worker for the route's `cache`, as a SHA-256 of them
//! (never the password), so a browser's requests cost one hash, not one each.

pub use crate::state::htpasswd::Users;

use crate::route::RouteId;
use crate::state::generation::Generation;
use crate::state::verified;
use sluice_config::{Config, Errors, Satisfy, Verdict};
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::Semaphore;

/// Why a guard refused a request: the metrics' kind of refusal, the one type for it.
pub(crate) use crate::metrics::Refused as Refusal;

/// What the guard says of a request's head, and the user it named (for the log).
pub(crate) struct Decision {
    pub verdict: Outcome,
    pub user: Option<Box<str>>,
}

pub(crate) enum Outcome {
    Pass,
    Refuse(Refusal),
    /// A password to verify on the hashing threads before the request goes on.
    Verify(Pending),
}

/// A password waiting for its hash.
pub(crate) struct Pending {
    users: Arc<Users>,
    user: String,
    password: Vec<u8>,
    key: verified::Key,
    cache: Duration,
}

/// The guard's decision on route `r` for a client at `ip` sending `headers`.
pub(crate) fn decide(
    generation: &Generation,
    r: RouteId,
    ip: IpAddr,
    headers: &[httparse::Header<'_>],
) -> Decision {
    let guard = &generation.shared.route(r).guard;
    let verdict = guard.first_match(ip);
    let address_passes = verdict != Some(Verdict::Deny);
    let pass = |verdict| Decision {
        verdict,
        user: None,
    };
    let Some(auth) = &guard.auth else {
        return pass(match address_passes {
            true => Outcome::Pass,
            false => Outcome::Refuse(Refusal::Address),
        });
    };
    // The route's config says whether it asks for a password; its users are read
    // with the generation. Were they ever missing, nobody passes (closed, not open).
    let Some(users) = generation.shared.users(r) else {
        return pass(Outcome::Refuse(Refusal::Credentials));
    };
    match guard.satisfy {
        // nginx: under `any`, an address passes only by a rule allowing it; else the
        // password decides (and its 401 is the answer).
        Satisfy::Any if verdict == Some(Verdict::Allow) => return pass(Outcome::Pass),
        Satisfy::All if !address_passes => return pass(Outcome::Refuse(Refusal::Address)),
        _ => {}
    }
    credentials(generation, users, headers, auth.cache)
}

/// The decision on the `Authorization` a request sent.
fn credentials(
    generation: &Generation,
    users: &Arc<Users>,
    headers: &[httparse::Header<'_>],
    cache: Duration,
) -> Decision {
    let Some((user, password)) = basic_credentials(headers) else {
        return Decision {
            verdict: Outcome::Refuse(Refusal::Credentials),
            user: None,
        };
    };
    let key = verified::key(users, cache, &user, &password);
    let verdict = if generation.verified.fresh(&key) {
        Outcome::Pass
    } else if users.cheap() {
        match users.verify(&user, &password) {
            true => {
                generation.verified.remember(key, cache);
                Outcome::Pass
            }
            false => Outcome::Refuse(Refusal::Credentials),
        }
    } else {
        Outcome::Verify(Pending {
            users: users.clone(),
            user: user.clone(),
            password,
            key,
            cache,
        })
    };
    Decision {
        verdict,
        user: Some(user.into_boxed_str()),
    }
}

/// The user and password of `Authorization: Basic ...`, when the request sent one that
/// decodes. The user is text; the password any bytes, as the hash takes them. Two
/// `Authorization` fields are none (nginx answers them 400): sluice would check one
/// and a server might read the other.
fn basic_credentials(headers: &[httparse::Header<'_>]) -> Option<(String, Vec<u8>)> {
    use base64::Engine;
    let mut fields = headers
        .iter()
        .filter(|h| h.name.eq_ignore_ascii_case("authorization"));
    let (Some(field), None) = (fields.next(), fields.next()) else {
        return None;
    };
    let value = field.value.trim_ascii();
    let (scheme, token) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(token.trim_ascii())
        .ok()?;
    let colon = decoded.iter().position(|b| *b == b':')?;
    let user = std::str::from_utf8(&decoded[..colon]).ok()?.to_string();
    Some((user, decoded[colon + 1..].to_vec()))
}

impl Pending {
    /// Verifies the password on the hashing threads; remembers it in `generation`'s
    /// cache when it is right.
    pub(crate) async fn verify(self, generation: &Generation) -> bool {
        // The permit goes with the hash, not with this future: a request dropped while
        // its hash runs does not free a place until the hash is done.
        let Ok(permit) = hashing().clone().acquire_owned().await else {
            return false;
        };
        // While it waited, a request with the same password may have verified it (a
        // browser's burst after the cache time ran out): one hash for them all.
        if generation.verified.fresh(&self.key) {
            return true;
        }
        let Pending {
            users,
            user,
            password,
            key,
            cache,
        } = self;
        let right = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            users.verify(&user, &password)
        })
        .await
        .unwrap_or(false);
        if right {
            generation.verified.remember(key, cache);
        }
        right
    }
}

/// Passwords hashed at once, all workers together: half the cores (at least one), so
/// that a flood of wrong passwords leaves the workers cores to serve everyone else.
fn hashing() -> &'static Arc<Semaphore> {
    static HASHING: OnceLock<Arc<Semaphore>> = OnceLock::new();
    HASHING.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Arc::new(Semaphore::new((cores / 2).max(1)))
    })
}

/// Reads every htpasswd file `config` names, for `sluice check`: each problem with its
/// file and line.
pub fn check(config: &Config) -> Result<(), Errors> {
    crate::state::htpasswd::for_routes(config).map(|_| ())
}
