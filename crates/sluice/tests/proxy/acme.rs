//! ACME against Let's Encrypt's test server, pebble (Debian's package), offline: a
//! `sluice serve` with `[acme]` starts on a placeholder certificate, answers pebble's
//! HTTP-01 challenges on its plain listener (ahead of a redirect-to-HTTPS route, as the
//! ACME path must be), obtains a certificate, and serves it without a restart.

use super::harness::{backend, SluiceProcess, TempDir};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// pebble, killed when dropped.
struct Pebble {
    child: std::process::Child,
    directory: String,
    management: u16,
}

impl Drop for Pebble {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts pebble with an HTTPS certificate from a CA made here (`ca.pem` in `dir`; the
/// package ships none), validating HTTP-01 against port `http_port` of 127.0.0.1.
async fn pebble(dir: &TempDir, http_port: u16) -> Pebble {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "pebble test CA");
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    dir.file("ca.pem", &ca.pem());
    let params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let (cert_path, key_path) = (
        dir.file("pebble.pem", &cert.pem()),
        dir.file("pebble.key", &key.serialize_pem()),
    );
    let (listen, management) = (crate::support::free_port(), crate::support::free_port());
    let config = serde_json::json!({"pebble": {
        "listenAddress": format!("127.0.0.1:{listen}"),
        "managementListenAddress": format!("127.0.0.1:{management}"),
        "certificate": cert_path, "privateKey": key_path,
        "httpPort": http_port, "tlsPort": crate::support::free_port(), "ocspResponderURL": "",
        "externalAccountBindingRequired": false,
    }});
    let config_path = dir.file("pebble.json", &config.to_string());
    let child = std::process::Command::new("pebble")
        .args(["-config", config_path.to_str().unwrap(), "-strict=false"])
        .env("PEBBLE_VA_NOSLEEP", "1")
        .env("PEBBLE_WFE_NONCEREJECT", "0")
        .stdout(std::fs::File::create(dir.0.join("pebble.log")).unwrap())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("pebble is installed (Debian package `pebble`)");
    let pebble = Pebble {
        child,
        directory: format!("https://127.0.0.1:{listen}/dir"),
        management,
    };
    let until = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", listen))
        .await
        .is_err()
    {
        assert!(Instant::now() < until, "pebble did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    pebble
}

async fn curl(args: Vec<String>) -> (i32, String) {
    super::harness::curl(&args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs curl and pebble"]
async fn a_certificate_is_obtained_from_pebble_and_served_without_a_restart() {
    let dir = TempDir::new("acme");
    let app = backend("a").await;
    let (http_port, https_port) = (crate::support::free_port(), crate::support::free_port());
    let pebble = pebble(&dir, http_port).await;
    let (http, https): (SocketAddr, SocketAddr) = (
        format!("127.0.0.1:{http_port}").parse().unwrap(),
        format!("127.0.0.1:{https_port}").parse().unwrap(),
    );
    let config = format!(
        r#"[[listener]]
bind = "{http}"
[[listener]]
bind = "{https}"
tls = {{ acme = true }}
[acme]
directory = "{}"
ca = {:?}
domains = ["localhost"]
storage = {:?}
[[route]]
listener = "{http}"
redirect = "https"
[[route]]
listener = "{https}"
upstream = "app"
[upstream.app]
servers = ["{app}"]
"#,
        pebble.directory,
        dir.0.join("ca.pem"),
        dir.0.join("acme"),
    );
    let sluice = SluiceProcess::serve("acme.toml", &config, "info").await;
    // Plain HTTP still redirects; the challenge path is answered only while a token is out.
    let (_, text) = curl(vec!["-i".into(), format!("http://{http}/x")]).await;
    assert!(text.starts_with("HTTP/1.1 301"), "{text}");
    // pebble's root, to check what sluice serves against.
    let root = dir.0.join("root.pem");
    let roots = format!("https://127.0.0.1:{}/roots/0", pebble.management);
    let (code, text) = curl(vec![
        "-k".into(),
        "-o".into(),
        root.display().to_string(),
        roots,
    ])
    .await;
    assert_eq!(code, 0, "{text}");
    let site = format!("https://localhost:{https_port}/");
    let resolve = format!("localhost:{https_port}:127.0.0.1");
    let ask = || {
        vec![
            "--cacert".into(),
            root.display().to_string(),
            "--resolve".into(),
            resolve.clone(),
            site.clone(),
        ]
    };
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, text) = curl(ask()).await;
        if code == 0 {
            assert_eq!(text, "a\n");
            break;
        }
        assert!(
            Instant::now() < until,
            "no certificate from pebble within 60 s:\n{}",
            sluice.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        sluice.log().contains("ACME certificate obtained"),
        "{}",
        sluice.log()
    );
    let stored = dir.0.join("acme");
    for file in ["fullchain.pem", "privkey.pem", "account.json"] {
        assert!(stored.join(file).exists(), "{file} not stored");
    }
}
