//! sluice's ACME client (RFC 8555, through `instant-acme`): obtains the `[acme]`
//! certificate over HTTP-01 and renews it when it has fewer than `renew_days` left.
//!
//! It owns the account (kept in `storage/account.json` and reused), the orders, and
//! writing `storage/fullchain.pem` and `storage/privkey.pem` (each through a rename, so
//! no reader sees half a file). Answering the CA's challenges is the proxy's
//! (`sluice_proxy::acme::Challenges`, where tokens are published here), and serving the
//! new certificate is the proxy's certificate watcher's, which sees the files change. It
//! must never serve traffic, and never write outside `storage`.

use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier, NewAccount,
    NewOrder, OrderStatus, RetryPolicy,
};
use sluice_config::Acme;
use sluice_proxy::acme::{obtained, write_atomically, Challenges};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often a certificate that is not due is looked at again.
const CHECK_EVERY: Duration = Duration::from_secs(12 * 3600);
/// The first wait after a failed attempt; it doubles up to `MAX_BACKOFF` (a CA's rate
/// limits punish clients that retry in a loop).
const FIRST_BACKOFF: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(3600);

/// Starts the thread that keeps the certificate obtained and renewed, for the rest of
/// the process.
pub fn spawn(settings: Acme, challenges: Arc<Challenges>) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("sluice-acme".into())
        .spawn(move || runtime.block_on(keep(settings, challenges)))?;
    Ok(())
}

/// Obtains a certificate whenever one is due, forever.
async fn keep(settings: Acme, challenges: Arc<Challenges>) {
    let mut backoff = FIRST_BACKOFF;
    loop {
        let wait = match due_in(&settings) {
            Some(wait) => wait,
            None => match obtain(&settings, &challenges).await {
                Ok(()) => {
                    backoff = FIRST_BACKOFF;
                    tracing::info!(domains = ?settings.domains, dir = %settings.storage.display(), "ACME certificate obtained; serving it");
                    continue;
                }
                Err(e) => {
                    tracing::error!(domains = ?settings.domains, directory = %settings.directory, error = %e, retry_in_s = backoff.as_secs(), "could not obtain an ACME certificate; still serving the current one");
                    let wait = backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    wait
                }
            },
        };
        tokio::time::sleep(wait).await;
    }
}

/// How long until the certificate in storage is due, or `None` when it is due now
/// (missing, a placeholder, for other names, or within `renew_days` of its end).
pub fn due_in(settings: &Acme) -> Option<Duration> {
    let leaf = obtained(&settings.storage.join("fullchain.pem"))?;
    if !settings.domains.iter().all(|d| leaf.names.contains(d)) {
        return None;
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?.as_secs() as i64;
    let left = leaf.not_after - i64::from(settings.renew_days) * 86_400 - now;
    (left > 0).then(|| Duration::from_secs(left as u64).min(CHECK_EVERY))
}

/// One issuance: account, order, HTTP-01 challenges answered by the proxy, finalize
/// (the key and CSR made here), and the chain and key written to storage.
pub async fn obtain(settings: &Acme, challenges: &Challenges) -> Result<(), instant_acme::Error> {
    let account = account(settings).await?;
    let identifiers: Vec<Identifier> = settings
        .domains
        .iter()
        .map(|d| Identifier::Dns(d.clone()))
        .collect();
    let mut order = account.new_order(&NewOrder::new(&identifiers)).await?;
    let published = prove(&mut order, challenges).await;
    let retry = RetryPolicy::new()
        .initial_delay(Duration::from_millis(250))
        .backoff(1.5)
        .timeout(Duration::from_secs(90));
    let ready = match &published {
        Ok(_) => Some(order.poll_ready(&retry).await),
        Err(_) => None,
    };
    // Withdrawn whatever happened: the CA has checked them, or never will.
    for token in published.as_deref().unwrap_or(&[]) {
        challenges.withdraw(token);
    }
    published?;
    let status = ready.unwrap_or(Ok(OrderStatus::Invalid))?;
    if status != OrderStatus::Ready {
        return Err(instant_acme::Error::Str("the order did not become ready"));
    }
    let key = order.finalize().await?;
    let chain = order.poll_certificate(&retry).await?;
    let store = |name: &str, bytes: &[u8]| write_atomically(&settings.storage.join(name), bytes);
    // The key first: the watcher takes the pair once the certificate matches it.
    store("privkey.pem", key.as_bytes())
        .and_then(|()| store("fullchain.pem", chain.as_bytes()))
        .map_err(|e| instant_acme::Error::Other(Box::new(e)))
}

/// Publishes each pending authorization's HTTP-01 answer and tells the CA to check it;
/// the tokens published.
async fn prove(
    order: &mut instant_acme::Order,
    challenges: &Challenges,
) -> Result<Vec<String>, instant_acme::Error> {
    let mut tokens = Vec::new();
    let mut authorizations = order.authorizations();
    while let Some(authz) = authorizations.next().await {
        let mut authz = authz?;
        if authz.status == AuthorizationStatus::Valid {
            continue;
        }
        let mut challenge =
            authz
                .challenge(ChallengeType::Http01)
                .ok_or(instant_acme::Error::Str(
                    "the CA offers no HTTP-01 challenge",
                ))?;
        challenges.publish(&challenge.token, challenge.key_authorization().as_str());
        tokens.push(challenge.token.clone());
        challenge.set_ready().await?;
    }
    Ok(tokens)
}

/// The stored account, or a new one (then stored).
async fn account(settings: &Acme) -> Result<Account, instant_acme::Error> {
    let path = settings.storage.join("account.json");
    let builder = || match &settings.ca {
        Some(ca) => Account::builder_with_root(ca),
        None => Account::builder(),
    };
    if let Ok(bytes) = std::fs::read(&path) {
        if let Ok(credentials) = serde_json::from_slice::<AccountCredentials>(&bytes) {
            return builder()?.from_credentials(credentials).await;
        }
    }
    let contact: Vec<&str> = settings.contact.iter().map(String::as_str).collect();
    let new = NewAccount {
        contact: &contact,
        terms_of_service_agreed: true,
        only_return_existing: false,
    };
    let (account, credentials) = builder()?
        .create(&new, settings.directory.clone(), None)
        .await?;
    let json = serde_json::to_vec_pretty(&credentials)
        .map_err(|e| instant_acme::Error::Other(Box::new(e)))?;
    std::fs::create_dir_all(&settings.storage)
        .and_then(|()| write_atomically(&path, &json))
        .map_err(|e| instant_acme::Error::Other(Box::new(e)))?;
    Ok(account)
}
