//! TLS to servers (an upstream's `tls`): one rustls client config per upstream, with
//! the roots it trusts (a CA file, or the system's) and the name it verifies (and sends
//! as SNI), or the server's IP address when no name is given.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use sluice_config::{ConfigError, UpstreamTls};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio_rustls::TlsConnector;

/// How an upstream's servers are reached over TLS.
#[derive(Clone)]
pub struct ClientTls {
    pub connector: TlsConnector,
    /// The name verified in every server's certificate, when configured.
    name: Option<ServerName<'static>>,
}

impl ClientTls {
    /// Reads the roots and builds the config; the error names the file and the reason.
    pub fn new(settings: &UpstreamTls) -> Result<ClientTls, ConfigError> {
        let fail = |why: String| ConfigError::at_place(&settings.at, why, "");
        let mut roots = rustls::RootCertStore::empty();
        match &settings.ca {
            Some(ca) => {
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(ca)
                    .and_then(|c| c.collect())
                    .map_err(|e| {
                        fail(format!(
                            "{}: cannot read CA certificates: {e:?}",
                            ca.display()
                        ))
                    })?;
                let (added, _) = roots.add_parsable_certificates(certs);
                if added == 0 {
                    return Err(fail(format!(
                        "{}: no usable CA certificate in the file",
                        ca.display()
                    )));
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
                if roots.is_empty() {
                    return Err(fail(
                        "no CA certificates found on this system; give `ca`".into(),
                    ));
                }
            }
        }
        let name = match &settings.server_name {
            Some(n) => Some(
                ServerName::try_from(n.clone())
                    .map_err(|e| fail(format!("`server_name` \"{n}\": {e}")))?,
            ),
            None => None,
        };
        let config = rustls::ClientConfig::builder_with_provider(super::provider().clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(format!("TLS setup failed: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(ClientTls {
            connector: TlsConnector::from(Arc::new(config)),
            name,
        })
    }

    /// The name a connection to `addr` verifies: the configured one, or the address.
    pub fn name_for(&self, addr: SocketAddr) -> ServerName<'static> {
        self.name
            .clone()
            .unwrap_or_else(|| ServerName::IpAddress(addr.ip().into()))
    }
}
