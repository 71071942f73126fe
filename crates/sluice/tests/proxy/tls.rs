//! HTTPS listeners: curl over TLS, the certificate chosen by the name the client asks
//! for, sessions resumed on any worker, certificates rotated on disk under load with no
//! failed request, and bad certificates refused with their file and reason. The
//! certificates come from a test CA made here (rcgen); the clients are curl and rustls.

use super::harness::{backend, proxy_with, TempDir, TestProxy};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, SerialNumber,
};
use rustls::pki_types::{CertificateDer, ServerName};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A test certificate authority and the files it issues, in a directory of its own.
struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
    dir: TempDir,
}

impl Pki {
    fn new() -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "sluice test CA");
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let dir = TempDir::new("pki");
        dir.file("ca.pem", &ca.pem());
        Pki { ca, dir }
    }

    fn ca_file(&self) -> PathBuf {
        self.dir.0.join("ca.pem")
    }

    /// Issues a certificate for `names` as `stem.pem` and `stem.key`; `serial` tells
    /// two issues apart, `expired` backdates it.
    fn issue(&self, stem: &str, names: &[&str], serial: u64, expired: bool) -> (PathBuf, PathBuf) {
        let (cert, key) = self.make(names, serial, expired);
        (
            self.dir.file(&format!("{stem}.pem"), &cert),
            self.dir.file(&format!("{stem}.key"), &key),
        )
    }

    /// A certificate and its key, as PEM text.
    fn make(&self, names: &[&str], serial: u64, expired: bool) -> (String, String) {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name.push(DnType::CommonName, names[0]);
        params.serial_number = Some(SerialNumber::from(serial));
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A rustls client that trusts this CA, offering `versions`; it resumes sessions
    /// (as rustls does by default) when `resume`.
    fn client(
        &self,
        versions: &[&'static rustls::SupportedProtocolVersion],
        resume: bool,
    ) -> TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        if !resume {
            config.resumption = rustls::client::Resumption::disabled();
        }
        TlsConnector::from(Arc::new(config))
    }
}

/// `[[listener]]` on 127.0.0.1:0 serving `certs` (the first the default).
fn tls_listener(certs: &[&(PathBuf, PathBuf)]) -> String {
    let pairs: Vec<String> = certs
        .iter()
        .map(|(c, k)| format!("{{ cert = {c:?}, key = {k:?} }}"))
        .collect();
    format!(
        "[[listener]]\nbind = \"127.0.0.1:0\"\ntls = {{ cert = {:?}, key = {:?}, certificates = [{}] }}\n",
        certs[0].0,
        certs[0].1,
        pairs[1..].join(", ")
    )
}

async fn tls_proxy(certs: &[&(PathBuf, PathBuf)], workers: usize) -> TestProxy {
    let app = backend("a").await;
    let body =
        format!("workers = {workers}\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n");
    proxy_with(&body, &tls_listener(certs))
}

async fn curl(args: Vec<String>) -> (i32, String) {
    super::harness::curl(&args).await
}

/// curl's arguments to ask for `https://name:port/path` at `addr`, trusting `ca`.
fn at(name: &str, addr: SocketAddr, path: &str, ca: &std::path::Path) -> Vec<String> {
    vec![
        "--cacert".into(),
        ca.display().to_string(),
        "--resolve".into(),
        format!("{name}:{}:127.0.0.1", addr.port()),
        format!("https://{name}:{}{path}", addr.port()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn curl_gets_https_and_the_backend_is_told_so() {
    let pki = Pki::new();
    let site = pki.issue("site", &["localhost"], 1, false);
    let p = tls_proxy(&[&site], 1).await;
    let mut args = at("localhost", p.addr, "/headers", &pki.ca_file());
    args.extend(["-w", "\n%{http_code} %{http_version} %{ssl_verify_result}"].map(String::from));
    // curl offers h2 first and gets it (ALPN); then HTTP/1.1 when it asks for that.
    for (version, asked) in [("2", None), ("1.1", Some("--http1.1"))] {
        let mut args = args.clone();
        args.extend(asked.map(String::from));
        let (code, text) = curl(args).await;
        assert_eq!(code, 0, "{text}");
        assert!(text.ends_with(&format!("\n200 {version} 0")), "{text}");
        assert!(text.contains("x-forwarded-proto: https"), "{text}");
    }
    // A keep-alive connection carries several requests.
    let mut args = at("localhost", p.addr, "/", &pki.ca_file());
    args.push(args[4].clone());
    args.push("--http1.1".into());
    args.extend(["-w", "%{num_connects} "].map(String::from));
    let (code, text) = curl(args).await;
    assert_eq!((code, text.as_str()), (0, "a\n1 a\n0 "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn the_certificate_is_chosen_by_the_name_asked_for() {
    let pki = Pki::new();
    let default = pki.issue("default", &["localhost"], 1, false);
    let api = pki.issue("api", &["api.test"], 2, false);
    let apps = pki.issue("apps", &["*.apps.test", "apps.test"], 3, false);
    let p = tls_proxy(&[&default, &api, &apps], 1).await;
    let ca = pki.ca_file();
    // curl checks the name against the certificate it gets: each succeeds only if
    // sluice chose the certificate for that name.
    for name in [
        "localhost",
        "api.test",
        "one.apps.test",
        "apps.test",
        "API.Test",
    ] {
        let (code, text) = curl(at(name, p.addr, "/", &ca)).await;
        assert_eq!((code, text.as_str()), (0, "a\n"), "{name}");
    }
    // A name no certificate has gets the default one, which curl rejects for it.
    for name in ["other.test", "a.b.apps.test"] {
        let mut args = at(name, p.addr, "/", &ca);
        args.insert(0, "-v".into());
        let (code, text) = curl(args).await;
        assert_eq!(code, 60, "{name}: {text}");
        assert!(text.contains("CN=localhost"), "{name}: {text}");
    }
}

/// Connects, sends one request and reads its whole answer (TLS 1.3 tickets arrive
/// after the handshake, so the answer is read); how the handshake went and the leaf.
async fn one_request(
    connector: &TlsConnector,
    addr: SocketAddr,
) -> std::io::Result<(rustls::HandshakeKind, CertificateDer<'static>)> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await?;
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await?;
    let mut answer = Vec::new();
    tls.read_to_end(&mut answer).await?;
    if !answer.starts_with(b"HTTP/1.1 200 ") {
        return Err(std::io::Error::other(
            String::from_utf8_lossy(&answer).to_string(),
        ));
    }
    let (_, conn) = tls.get_ref();
    let kind = conn.handshake_kind().unwrap();
    Ok((kind, conn.peer_certificates().unwrap()[0].clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_resume_on_any_worker_with_tls12_and_tls13() {
    let pki = Pki::new();
    let site = pki.issue("site", &["localhost"], 1, false);
    // Two workers, each with its own listening socket: the kernel spreads the
    // connections over both, and a session made on one resumes on the other.
    let p = tls_proxy(&[&site], 2).await;
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let client = pki.client(&[version], true);
        let mut kinds = Vec::new();
        for _ in 0..16 {
            kinds.push(one_request(&client, p.addr).await.unwrap().0);
        }
        assert_eq!(kinds[0], rustls::HandshakeKind::Full, "{version:?}");
        assert!(
            kinds[1..]
                .iter()
                .all(|k| *k == rustls::HandshakeKind::Resumed),
            "{version:?}: {kinds:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn certificates_rotated_on_disk_are_served_with_no_failed_request() {
    let pki = Pki::new();
    let site = pki.issue("site", &["localhost"], 1, false);
    let p = tls_proxy(&[&site], 2).await;
    let old = Arc::new(old_der(&std::fs::read_to_string(&site.0).unwrap()));
    let (new_cert, new_key) = pki.make(&["localhost"], 2, false);
    let served: Arc<std::sync::Mutex<Vec<bool>>> = Arc::default();
    let failures = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut clients = Vec::new();
    for _ in 0..4 {
        // Full handshakes only: a resumed one sends no certificate.
        let client = pki.client(rustls::DEFAULT_VERSIONS, false);
        let (served, failures, old) = (served.clone(), failures.clone(), old.clone());
        let addr = p.addr;
        clients.push(tokio::spawn(async move {
            // New connections only, each a handshake; bounded in count and time.
            for _ in 0..3000 {
                if Instant::now() > deadline {
                    break;
                }
                match one_request(&client, addr).await {
                    Ok((_, leaf)) => served.lock().unwrap().push(leaf.as_ref() != &old[..]),
                    Err(e) => {
                        eprintln!("failed: {e}");
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    // Written in place and one after the other, as a careless renewal would: for a
    // moment the key does not match the certificate, which sluice must sit out.
    std::fs::write(&site.0, &new_cert).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    std::fs::write(&site.1, &new_key).unwrap();
    for c in clients {
        c.await.unwrap();
    }
    let served = served.lock().unwrap();
    assert_eq!(failures.load(Ordering::Relaxed), 0);
    let first_new = served
        .iter()
        .position(|new| *new)
        .expect("the new certificate is served");
    assert!(first_new > 0, "the old certificate was served first");
    // Four clients run at once: a handshake that began before the swap may finish
    // after one that began later, so allow a few stragglers, no more.
    let stale = served[first_new..].iter().filter(|new| !**new).count();
    assert!(
        stale <= 4,
        "{stale} old certificates after the first new one"
    );
    assert!(
        served.len() > first_new + 20,
        "too few requests after the rotation"
    );
}

/// The DER of the first certificate in PEM `text`.
fn old_der(text: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(text.as_bytes())
        .unwrap()
        .to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn a_reload_with_a_bad_certificate_changes_nothing() {
    let pki = Pki::new();
    let site = pki.issue("site", &["localhost"], 1, false);
    let expired = pki.issue("expired", &["localhost"], 2, true);
    let p = tls_proxy(&[&site], 1).await;
    let app = backend("b").await;
    let text = format!(
        "[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n{}",
        tls_listener(&[&expired])
    );
    let e = p.try_reload(&text).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("test.toml:")
            && text.contains("expired.pem: the certificate expired on 2021-01-01"),
        "{text}"
    );
    // Still the old upstream, over the old certificate.
    let (code, text) = curl(at("localhost", p.addr, "/", &pki.ca_file())).await;
    assert_eq!((code, text.as_str()), (0, "a\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl"]
async fn a_failed_handshake_is_counted_and_hurts_no_one() {
    let pki = Pki::new();
    let site = pki.issue("site", &["localhost"], 1, false);
    let p = tls_proxy(&[&site], 1).await;
    // Plain HTTP to the TLS port.
    let mut plain = TcpStream::connect(p.addr).await.unwrap();
    plain
        .write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut rest)).await;
    let (code, text) = curl(at("localhost", p.addr, "/", &pki.ca_file())).await;
    assert_eq!((code, text.as_str()), (0, "a\n"));
    let listener = &p.view().snapshot().listeners[0];
    assert_eq!(listener.totals.tls_failed, 1);
    assert_eq!(
        listener.totals.accepted, 1,
        "only curl's connection was accepted"
    );
}

/// A TLS 1.3 client that trusts `pki`'s CA and offers HTTP/2 (ALPN `h2`).
fn h2_client(pki: &Pki) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    TlsConnector::from(Arc::new(config))
}

/// Connects, begins its handshake `late`, then sends `sent` and stops: what it was
/// sent until sluice closed it, and when that was after the connect (`None`: still
/// open 5 s after the handshake).
async fn late_handshake(
    connector: &TlsConnector,
    addr: SocketAddr,
    late: Duration,
    sent: &str,
) -> (String, Option<Duration>) {
    let connected = Instant::now();
    let tcp = TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(late).await;
    let name = ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    tls.write_all(sent.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tls.read_to_end(&mut got)).await;
    let closed = read.is_ok().then(|| connected.elapsed());
    (String::from_utf8_lossy(&got).into_owned(), closed)
}

/// The handshake is part of what comes before the first head, as on h2c and PROXY
/// listeners (issue 47): a client slow to begin it, then slow with its head (HTTP/1.1)
/// or preface (h2 by ALPN), is closed at `header_timeout` from the accept, not given a
/// new one when the handshake ends; a timely head is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handshake_leaves_the_first_head_the_rest_of_header_timeout() {
    let pki = Pki::new();
    let site = pki.issue("site", &["localhost"], 1, false);
    let app = backend("a").await;
    let body = format!(
        "header_timeout = \"2s\"\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n"
    );
    let p = proxy_with(&body, &tls_listener(&[&site]));
    let (http1, h2) = (
        pki.client(&[&rustls::version::TLS13], false),
        h2_client(&pki),
    );
    let late = Duration::from_millis(1200);
    let whole = "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    let (whole, head, preface) = tokio::join!(
        late_handshake(&http1, p.addr, late, whole),
        late_handshake(&http1, p.addr, late, "GET / HT"),
        late_handshake(&h2, p.addr, late, "PRI * HT"),
    );
    assert!(whole.0.starts_with("HTTP/1.1 200 "), "{whole:?}");
    assert!(head.0.starts_with("HTTP/1.1 408 "), "{head:?}");
    for (what, (_, closed)) in [("GET / HT", head), ("part of the preface", preface)] {
        let closed = closed.unwrap_or_else(|| panic!("{what}: still open after 5 s"));
        assert!(
            closed >= Duration::from_millis(1800) && closed < Duration::from_millis(2900),
            "{what}: closed {closed:?} after it connected (header_timeout 2 s, the header 1.2 s late; a timeout of its own, 3.2 s, was the bug)"
        );
    }
}

/// `sluice check` on a config whose certificate is `cert` and key `key`.
fn check(dir: &TempDir, cert: &std::path::Path, key: &std::path::Path) -> (i32, String) {
    let config = dir.file(
        "sluice.toml",
        &format!(
            "[[listener]]\nbind = \"127.0.0.1:8443\"\ntls = {{ cert = {cert:?}, key = {key:?} }}\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"127.0.0.1:9\"]\n"
        ),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["check", "-c"])
        .arg(&config)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap(), text)
}

#[test]
fn sluice_check_names_a_bad_certificate_its_file_and_reason() {
    let pki = Pki::new();
    let good = pki.issue("good", &["localhost"], 1, false);
    let expired = pki.issue("expired", &["localhost"], 2, true);
    let other = pki.issue("other", &["localhost"], 3, false);
    let not_pem = pki.dir.file("notes.txt", "not a certificate\n");
    let missing = pki.dir.0.join("missing.pem");
    let (code, text) = check(&pki.dir, &good.0, &good.1);
    assert_eq!(code, 0, "{text}");
    let place = format!("{}:3:", pki.dir.0.join("sluice.toml").display());
    let cases = [
        (
            &expired.0,
            &expired.1,
            "expired.pem: the certificate expired on 2021-01-01 00:00:00 UTC",
        ),
        (
            &good.0,
            &other.1,
            "other.key: the private key does not belong to the certificate in",
        ),
        (
            &missing,
            &good.1,
            "missing.pem: cannot read: No such file or directory",
        ),
        (
            &not_pem,
            &good.1,
            "notes.txt: no CERTIFICATE block in the file",
        ),
        (
            &good.0,
            &not_pem,
            "notes.txt: no PEM block of the right kind in the file",
        ),
    ];
    for (cert, key, reason) in cases {
        let (code, text) = check(&pki.dir, cert, key);
        assert_eq!(code, 2, "{text}");
        assert!(
            text.starts_with(&place) && text.contains(reason),
            "{reason}:\n{text}"
        );
    }
}

#[test]
fn sluice_check_lists_every_file_and_name_problem_at_once() {
    // Seed 000's migration: certificate and key both missing, a server name that does
    // not resolve, certbot's webroot not there. One round of `sluice check FILE` (no -c,
    // as nginx -t users type it).
    let dir = TempDir::new("check-all");
    let (cert, key) = (dir.0.join("fullchain.pem"), dir.0.join("privkey.pem"));
    let config = dir.file(
        "sluice.toml",
        &format!(
            "[[listener]]\nbind = \"127.0.0.1:8443\"\ntls = {{ cert = {cert:?}, key = {key:?} }}\n[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"no-such-host.invalid:8080\"]\n[[route]]\npath = \"/.well-known/acme-challenge/\"\nroot = \"/var/www/certbot-nowhere\"\n"
        ),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("check")
        .arg(&config)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    for said in [
        "fullchain.pem: cannot read",
        "privkey.pem: cannot read",
        "no-such-host.invalid",
        ":10:8: root \"/var/www/certbot-nowhere\" is not a directory",
    ] {
        assert!(text.contains(said), "{said} missing from:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_are_reached_over_tls_verified_with_sni_and_pooled() {
    let pki = Pki::new();
    let site = pki.issue("site", &["localhost"], 1, false);
    // The server side: a sluice with a TLS listener in front of backend `a`.
    let inner = tls_proxy(&[&site], 1).await;
    let ca = pki.ca_file();
    let outer = |tls: &str, extra: &str| {
        super::harness::proxy(&super::harness::one_upstream(
            &[inner.addr],
            &format!("tls = {tls}\n{extra}"),
        ))
    };
    let verified = format!("{{ server_name = \"localhost\", ca = {ca:?} }}");
    let good = outer(&verified, "");
    let mut c = super::harness::Client::connect(good.addr).await;
    for _ in 0..3 {
        let reply = c.get("/headers").await;
        assert_eq!(reply.status, 200);
        // The inner sluice saw an HTTPS client, so the TLS went all the way.
        assert!(
            reply.text().contains("x-forwarded-proto: https"),
            "{}",
            reply.text()
        );
    }
    // One handshake: the connection was pooled and reused for the next two.
    assert_eq!(inner.view().snapshot().listeners[0].totals.accepted, 1);
    // Active health checks speak TLS too.
    let checked = outer(
        &verified,
        "[upstream.app.health]\npath = \"/\"\ninterval = \"100ms\"\nfall = 1\n",
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    let server = &checked.view().snapshot().upstreams[0].servers[0];
    assert!(server.checked_up, "health checks over TLS fail");
    assert!(inner.view().snapshot().listeners[0].totals.accepted >= 3);
    // A certificate for another name, or an unknown CA, is refused: 502, never served.
    let wrong_name = outer(
        &format!("{{ server_name = \"other.test\", ca = {ca:?} }}"),
        "",
    );
    let other = Pki::new();
    let wrong_ca = outer(
        &format!(
            "{{ server_name = \"localhost\", ca = {:?} }}",
            other.ca_file()
        ),
        "",
    );
    let no_ip_san = outer(&format!("{{ ca = {ca:?} }}"), "");
    for p in [&wrong_name, &wrong_ca, &no_ip_san] {
        let reply = super::harness::get(p.addr, "/").await;
        assert_eq!(reply.status, 502, "{}", reply.text());
    }
}
