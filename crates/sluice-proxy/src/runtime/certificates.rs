//! Follows certificate files: once a second, every TLS listener of the current
//! generation reads its certificates again if one of their files changed, so a renewal
//! (certbot's, or sluice's own ACME) is served without a reload. One thread for the
//! process; a check is a few `stat` calls.

use crate::state::generation::Shared;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

const EVERY: Duration = Duration::from_secs(1);

/// Starts the watching thread; it follows `generations` until `stop` turns true.
pub fn spawn(
    generations: watch::Receiver<Arc<Shared>>,
    stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("sluice-certs".into())
        .spawn(move || {
            while !*stop.borrow() {
                std::thread::sleep(EVERY);
                let shared = generations.borrow().clone();
                refresh(&shared);
            }
        })?;
    Ok(())
}

fn refresh(shared: &Shared) {
    for (addr, listener) in &shared.tls {
        match listener.refresh() {
            Ok(false) => {}
            Ok(true) => {
                tracing::info!(listener = %addr, files = %listener.describe(), "certificates changed on disk; now serving the new ones")
            }
            Err(errors) => {
                for e in errors {
                    tracing::error!(listener = %addr, error = %e, "a certificate file changed but cannot be used; still serving the previous certificates");
                }
            }
        }
    }
}
