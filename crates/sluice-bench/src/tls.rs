//! TLS for `https://` targets (and for the WebSocket steps of a scenario whose target is
//! one): the client config of a run (the roots it trusts, ALPN, the versions, session
//! resumption), the handshake, measured, and the stream a connection reads and writes,
//! plain TCP or TLS.
//!
//! rustls with aws-lc-rs, as the proxy uses. One config serves every connection of a
//! run, so with resumption on, a new connection resumes a session another one began
//! (a returning browser); with it off, every connection pays a full handshake (a
//! visitor the front door has never seen). Certificates are verified unless the user
//! asks otherwise (`--insecure`).

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, HandshakeKind, SignatureScheme};
use std::io;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use tokio_util::either::Either;

/// How a run speaks TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// Accept any certificate (curl's `--insecure`): for a test server with a
    /// self-signed certificate.
    pub insecure: bool,
    /// Trust the CA certificates in this PEM file instead of the system's.
    pub cacert: Option<PathBuf>,
    /// Resume sessions on new connections; off, every connection does a full handshake.
    pub resume: bool,
    /// Only this version; none: TLS 1.2 and 1.3, as the server prefers.
    pub version: Option<Version>,
    /// The ALPN protocols offered, in order of preference.
    pub alpn: Vec<Vec<u8>>,
}

impl Default for TlsOptions {
    fn default() -> Self {
        TlsOptions {
            insecure: false,
            cacert: None,
            resume: true,
            version: None,
            alpn: vec![b"http/1.1".to_vec()],
        }
    }
}

/// A TLS version a run can be held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Tls12,
    Tls13,
}

impl std::str::FromStr for Version {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "1.2" => Ok(Version::Tls12),
            "1.3" => Ok(Version::Tls13),
            _ => Err(format!(
                "`{s}` is not a TLS version this tool speaks (1.2 or 1.3)"
            )),
        }
    }
}

/// Why TLS could not be set up for a run.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("--cacert {path}: {why}")]
    CaFile { path: String, why: String },
    #[error("no CA certificates found on this system: give --cacert FILE (or --insecure for a test server)")]
    NoRoots,
    #[error("TLS setup failed: {0}")]
    Setup(rustls::Error),
}

/// The client config for a run with `options`.
pub fn client_config(options: &TlsOptions) -> Result<Arc<ClientConfig>, TlsError> {
    let provider = provider();
    // aws-lc seeds its random generator on first use, from CPU jitter: some tens of
    // milliseconds of CPU that would otherwise land in the first handshake's time.
    let _ = provider.secure_random.fill(&mut [0u8; 16]);
    let versions: &[&rustls::SupportedProtocolVersion] = match options.version {
        None => rustls::DEFAULT_VERSIONS,
        Some(Version::Tls12) => &[&rustls::version::TLS12],
        Some(Version::Tls13) => &[&rustls::version::TLS13],
    };
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .map_err(TlsError::Setup)?;
    let mut config = if options.insecure {
        let verifier = Arc::new(AnyCertificate(provider.clone()));
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth()
    } else {
        let (roots, pinned) = roots(options.cacert.as_ref())?;
        let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .map_err(|e| TlsError::Setup(rustls::Error::General(e.to_string())))?;
        let verifier = Arc::new(CaFile { webpki, pinned });
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth()
    };
    config.alpn_protocols = options.alpn.clone();
    config.resumption = if options.resume {
        Resumption::default()
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(config))
}

/// The config of a run that set none (a plan made in code): the system's roots,
/// resumption on. Made once per process.
pub fn default_config() -> Result<Arc<ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| client_config(&TlsOptions::default()).map_err(|e| e.to_string()))
        .clone()
}

fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
        .clone()
}

/// The roots a run trusts: the certificates of `cacert`, or the system's; and the
/// certificates of `cacert` as they are, for [`CaFile`].
fn roots(
    cacert: Option<&PathBuf>,
) -> Result<(rustls::RootCertStore, Vec<CertificateDer<'static>>), TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    let Some(path) = cacert else {
        let found = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(found.certs);
        return if roots.is_empty() {
            Err(TlsError::NoRoots)
        } else {
            Ok((roots, Vec::new()))
        };
    };
    let failed = |why: String| TlsError::CaFile {
        path: path.display().to_string(),
        why,
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect())
        .map_err(|e| failed(format!("cannot read certificates: {e}")))?;
    let (added, _) = roots.add_parsable_certificates(certs.iter().cloned());
    if added == 0 {
        return Err(failed("no usable CA certificate in the file".into()));
    }
    Ok((roots, certs))
}

/// Verification against the roots (webpki's checks: chain, dates, name), and, as curl
/// does, a server certificate that is itself in the `--cacert` file trusted as it is,
/// for its names (its dates are not read: webpki stops at the CA flag): `openssl req
/// -x509`, how users make a test certificate, marks it a CA, which webpki refuses as a
/// server's own.
#[derive(Debug)]
struct CaFile {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for CaFile {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        if verified.is_err() && self.pinned.iter().any(|c| c == end_entity) {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_name(&cert, server_name)?;
            return Ok(ServerCertVerified::assertion());
        }
        verified
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `--insecure`: any certificate passes, but the handshake's signatures are still
/// checked, so the key exchange costs what it costs with a verified certificate.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A handshake, as the report counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// From the first byte of the ClientHello to the handshake's end (the TCP connect
    /// before it is not included).
    pub took: Duration,
    /// The session was resumed (no certificate sent, no full key exchange).
    pub resumed: bool,
}

/// The TLS handshake on `tcp` for `name`.
pub async fn handshake(
    tcp: TcpStream,
    config: &Arc<ClientConfig>,
    name: ServerName<'static>,
) -> io::Result<(ClientStream, Handshake)> {
    let started = Instant::now();
    let stream = TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await?;
    let resumed = stream.get_ref().1.handshake_kind() == Some(HandshakeKind::Resumed);
    let done = Handshake {
        took: started.elapsed(),
        resumed,
    };
    Ok((Either::Right(Box::new(stream)), done))
}

/// A connection's stream: plain TCP (`Left`), or TLS over it (`Right`). tokio-util's
/// `Either` reads and writes whichever it holds.
pub type ClientStream = Either<TcpStream, Box<TlsStream<TcpStream>>>;

/// The protocol ALPN chose on `stream`, if any.
pub fn alpn(stream: &ClientStream) -> Option<&[u8]> {
    match stream {
        Either::Left(_) => None,
        Either::Right(tls) => tls.get_ref().1.alpn_protocol(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_as_written() {
        assert_eq!("1.2".parse(), Ok(Version::Tls12));
        assert_eq!("1.3".parse(), Ok(Version::Tls13));
        assert!("1.1".parse::<Version>().is_err());
    }

    #[test]
    fn a_missing_ca_file_is_named() {
        let options = TlsOptions {
            cacert: Some("/nonexistent/ca.pem".into()),
            ..TlsOptions::default()
        };
        let e = client_config(&options).unwrap_err().to_string();
        assert!(e.starts_with("--cacert /nonexistent/ca.pem: "), "{e}");
    }
}
