//! `sluice bench` against what our users serve: sluice itself over HTTPS (a test CA made
//! here, the certificate's name aimed at loopback with `--resolve`), full and resumed
//! handshakes, a plain listener that redirects every request to HTTPS, and a server
//! whose errors are counted by status. Every count is checked against the backend's own.

mod support;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use serde_json::Value;
use std::net::SocketAddr;
use std::process::Command;
use support::{answered, backend, free_addr};

/// The name the test certificate is for; never resolved, always aimed with --resolve.
const NAME: &str = "shop.test";

use support::TempDir as Dir;

/// A test CA (`ca.pem`) and a certificate for [`NAME`] it signed (`cert.pem`,
/// `key.pem`), in `dir`.
fn certificates(dir: &Dir) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "bench test CA");
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![NAME.to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    dir.file("ca.pem", &ca.pem());
    dir.file("cert.pem", &cert.pem());
    dir.file("key.pem", &key.serialize_pem());
}

/// sluice in this process: an HTTPS listener in front of `app`, and a plain one that
/// sends every request to HTTPS (as every seed's nginx.conf does). Returns the proxy
/// and the two addresses.
fn front_door(dir: &Dir, app: SocketAddr) -> (sluice_proxy::Proxy, SocketAddr, SocketAddr) {
    let (https, plain) = (free_addr(), free_addr());
    let (cert, key) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    let text = format!(
        "workers = 1\n\
         [[listener]]\nbind = \"{https}\"\ntls = {{ cert = {cert:?}, key = {key:?} }}\n\
         [[listener]]\nbind = \"{plain}\"\n\
         [[route]]\nlistener = \"{plain}\"\nredirect = \"https\"\n\
         [[route]]\nlistener = \"{https}\"\nupstream = \"app\"\n\
         [upstream.app]\nservers = [\"{app}\"]\n"
    );
    let config = sluice_config::parse("bench-tls.toml", &text).unwrap();
    let proxy = sluice_proxy::Proxy::start(config).unwrap();
    (proxy, https, plain)
}

/// Runs `sluice bench` with `args`; its exit code, stdout, and the JSON it wrote.
fn bench(dir: &Dir, args: &[&str]) -> (i32, String, Value) {
    let json = dir.0.join("out.json");
    let _ = std::fs::remove_file(&json);
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .env("SLUICE_LOG", "warn")
        .arg("bench")
        .args(args)
        .args(["--quiet", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = std::fs::read_to_string(&json)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_else(|_| panic!("no JSON written; stdout:\n{stdout}\nstderr:\n{stderr}"));
    (out.status.code().unwrap_or(-1), stdout, report)
}

/// Requests `app` answered since `before` (an earlier [`answered`]), not counting that
/// earlier question itself.
fn served_since(app: SocketAddr, before: u64) -> u64 {
    answered(app) - before - 1
}

fn url(addr: SocketAddr, path: &str) -> String {
    format!("https://{NAME}:{}{path}", addr.port())
}

fn aim(addr: SocketAddr) -> String {
    format!("{NAME}:{}:{}", addr.port(), addr.ip())
}

fn ca(dir: &Dir) -> String {
    dir.0.join("ca.pem").display().to_string()
}

#[test]
fn https_through_sluice_is_loaded_and_counted_exactly() {
    let dir = Dir::new("bench-tls-count");
    certificates(&dir);
    let app = backend();
    let (_proxy, https, _) = front_door(&dir, app);
    let before = answered(app);
    let (code, table, report) = bench(
        &dir,
        &[
            &url(https, "/"),
            "--resolve",
            &aim(https),
            "--cacert",
            &ca(&dir),
            "--users",
            "4",
            "--iterations",
            "50",
        ],
    );
    assert_eq!(code, 0, "{table}");
    let step = &report["steps"][0];
    assert_eq!(step["samples"], 200, "{table}");
    assert_eq!(step["errors"], 0, "{table}");
    assert_eq!(step["statuses"]["200"], 200);
    assert_eq!(step["status_classes"]["2xx"], 200);
    assert_eq!(served_since(app, before), 200, "the backend's own count");
    // Keep-alive: one connection, so one handshake, per user.
    assert_eq!(step["connections"]["opened"], 4);
    assert_eq!(step["connections"]["tls_handshakes"], 4);
    assert!(step["connections"]["handshake"]["p50_ms"].as_f64().unwrap() > 0.0);
    assert!(table.contains("TLS: 4 handshakes"), "{table}");
    assert!(
        table.contains("statuses: 200 x 200 (2xx 100.0%)"),
        "{table}"
    );
}

#[test]
fn a_handshake_per_request_resumes_unless_told_not_to() {
    let dir = Dir::new("bench-tls-resume");
    certificates(&dir);
    let (_proxy, https, _) = front_door(&dir, backend());
    let run = |resume: &str| {
        let (code, table, report) = bench(
            &dir,
            &[
                &url(https, "/"),
                "--resolve",
                &aim(https),
                "--cacert",
                &ca(&dir),
                "--users",
                "2",
                "--iterations",
                "30",
                "--no-keepalive",
                "--tls-resume",
                resume,
            ],
        );
        assert_eq!(code, 0, "{table}");
        let c = report["steps"][0]["connections"].clone();
        assert_eq!(c["tls_handshakes"], 60, "one per request: {table}");
        c["tls_resumed"].as_u64().unwrap()
    };
    assert_eq!(run("off"), 0);
    // Each user's first handshake is full; most later ones resume a ticket.
    let resumed = run("on");
    assert!(resumed >= 40, "{resumed} of 60 resumed");
}

#[test]
fn an_untrusted_certificate_is_an_error_unless_insecure() {
    let dir = Dir::new("bench-tls-trust");
    certificates(&dir);
    let app = backend();
    let (_proxy, https, _) = front_door(&dir, app);
    let target = url(https, "/");
    let common = [
        target.as_str(),
        "--resolve",
        &aim(https),
        "--users",
        "1",
        "--iterations",
        "5",
    ];
    // The system's roots do not know the test CA.
    let (_, table, report) = bench(&dir, &common);
    let step = &report["steps"][0];
    assert_eq!(step["errors"], 5, "{table}");
    let kinds = step["error_kinds"].as_object().unwrap();
    assert!(
        kinds
            .keys()
            .all(|k| k.starts_with("tls: invalid peer certificate")),
        "{kinds:?}"
    );
    let mut insecure = common.to_vec();
    insecure.push("--insecure");
    let (code, table, report) = bench(&dir, &insecure);
    assert_eq!(
        (code, report["steps"][0]["errors"].as_u64()),
        (0, Some(0)),
        "{table}"
    );
}

/// A self-signed certificate as a user makes one for a test (`openssl req -x509`, which
/// marks it a CA), given as `--cacert`, is trusted as curl trusts it; for its own name
/// only.
#[test]
#[ignore = "needs openssl"]
fn a_self_signed_certificate_given_as_cacert_is_trusted_for_its_name() {
    let dir = Dir::new("bench-tls-self-signed");
    support::self_signed(&dir.0, NAME);
    let app = backend();
    let (_proxy, https, _) = front_door(&dir, app);
    let cert = dir.0.join("cert.pem").display().to_string();
    let run = |name: &str| {
        let target = format!("https://{name}:{}/", https.port());
        let aim = format!("{name}:{}:{}", https.port(), https.ip());
        let args = ["--resolve", &aim, "--cacert", &cert, "--users", "1"];
        let (_, table, report) = bench(
            &dir,
            &[&[target.as_str()][..], &args, &["--iterations", "5"]].concat(),
        );
        (report["steps"][0]["errors"].as_u64(), table)
    };
    let (errors, table) = run(NAME);
    assert_eq!(errors, Some(0), "{table}");
    let (errors, table) = run("other.test");
    assert_eq!(errors, Some(5), "{table}");
}

#[test]
fn a_redirecting_listener_shows_its_301s_and_says_so() {
    let dir = Dir::new("bench-tls-redirect");
    certificates(&dir);
    let app = backend();
    let (_proxy, _, plain) = front_door(&dir, app);
    let before = answered(app);
    let target = format!("http://{plain}/cart");
    let (code, table, report) = bench(&dir, &[&target, "--users", "2", "--iterations", "20"]);
    assert_eq!(code, 0, "{table}");
    let step = &report["steps"][0];
    assert_eq!(step["statuses"]["301"], 40, "{table}");
    assert_eq!(step["errors"], 0, "a redirect is no error by default");
    let location = format!("https://{}/cart", plain.ip());
    assert_eq!(step["redirects"][&location], 40, "{}", step["redirects"]);
    let warning = step["warnings"][0].as_str().unwrap();
    assert!(
        warning.starts_with(&format!(
            "all 40 responses were 301 to {location}: did you mean https://?"
        )),
        "{warning}"
    );
    assert!(table.contains(&format!("warning: {warning}")), "{table}");
    assert_eq!(
        served_since(app, before),
        0,
        "no request reached the application"
    );
    // Counted as errors when the user says only 2xx is success.
    let (_, _, report) = bench(
        &dir,
        &[
            &target,
            "--users",
            "1",
            "--iterations",
            "5",
            "--ok-status",
            "200-299",
        ],
    );
    assert_eq!(report["steps"][0]["errors"], 5);
    assert_eq!(report["steps"][0]["error_kinds"]["status 301"], 5);
}

#[test]
fn a_server_failing_one_request_in_ten_shows_ten_percent_errors() {
    let dir = Dir::new("bench-tls-errors");
    let app = backend();
    let ok = format!("http://{app}/ok@9");
    let failing = format!("http://{app}/status/500@1");
    let (_, table, report) = bench(
        &dir,
        &[&ok, &failing, "--users", "2", "--iterations", "500"],
    );
    let step = &report["steps"][0];
    let (fine, failed) = (
        step["statuses"]["200"].as_u64().unwrap(),
        step["statuses"]["500"].as_u64().unwrap(),
    );
    assert_eq!(fine + failed, 1000, "{table}");
    assert_eq!(step["errors"].as_u64().unwrap(), failed);
    assert_eq!(step["status_classes"]["5xx"].as_u64().unwrap(), failed);
    let pct = step["error_pct"].as_f64().unwrap();
    assert!((8.0..=12.0).contains(&pct), "{pct}% errors: {table}");
    // Per label too.
    let label = &step["labels"]["GET /status/500"];
    assert_eq!(label["statuses"]["500"].as_u64().unwrap(), failed);
}

/// Seed 003's chat as production runs it: STOMP over wss:// through sluice's HTTPS
/// listener, hashed on the room, and not one message lost.
#[test]
fn a_stomp_chat_over_wss_through_sluice_loses_nothing() {
    let dir = Dir::new("bench-tls-wss");
    certificates(&dir);
    let brokers = support::backends(&["s1", "s2", "s3"], true);
    let https = free_addr();
    let (cert, key) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    let list: Vec<String> = brokers.iter().map(|s| format!("\"{s}\"")).collect();
    let text = format!(
        "[[listener]]\nbind = \"{https}\"\ntls = {{ cert = {cert:?}, key = {key:?} }}\n\
         [[route]]\nupstream = \"chat\"\nupgrade = [\"websocket\"]\n\
         [upstream.chat]\nservers = [{}]\nbalance = \"hash\"\nhash_key = \"$arg_room\"\n",
        list.join(", ")
    );
    let config = sluice_config::parse("wss.toml", &text).unwrap();
    let _proxy = sluice_proxy::Proxy::start(config).unwrap();
    // Seed 003's scenario with its target where production has it: a name, over TLS,
    // aimed at loopback by --resolve.
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/bench/stomp-chat.toml");
    let text = std::fs::read_to_string(example).unwrap();
    let target = format!("target = \"https://{NAME}:{}\"", https.port());
    let text = text.replace("target = \"http://127.0.0.1:8080\"", &target);
    assert!(text.contains(&target));
    let scenario = dir.file("chat.toml", &text);
    let (code, table, report) = bench(
        &dir,
        &[
            "--scenario",
            scenario.to_str().unwrap(),
            "--resolve",
            &aim(https),
            "--cacert",
            &ca(&dir),
            "--users",
            "20",
            "--iterations",
            "2",
            "--ramp",
            "0s",
        ],
    );
    assert_eq!(code, 0, "{table}");
    let step = &report["steps"][0];
    for name in ["open", "connect", "subscribe", "disconnect"] {
        assert_eq!(step["labels"][name]["errors"], 0, "{name}: {table}");
        assert_eq!(step["labels"][name]["samples"], 20, "{name}: {table}");
    }
    assert_eq!(
        step["connections"]["tls_handshakes"], 20,
        "one wss:// per user"
    );
    let d = &step["delivery"];
    assert_eq!(d["messages"], 60, "{d}");
    assert_eq!(d["lost"], 0, "{d}");
    assert!(d["delivered"].as_u64().unwrap() >= 60, "{d}");
}

/// Users share HTTP/2 connections, `--streams` at once on each: 20 users at 10 streams
/// open 2 connections (over TLS, chosen by ALPN), and every request is counted.
#[test]
fn http2_users_share_connections_and_every_stream_is_counted() {
    let dir = Dir::new("bench-tls-h2");
    certificates(&dir);
    let app = backend();
    let (_proxy, https, _) = front_door(&dir, app);
    let before = answered(app);
    let (code, table, report) = bench(
        &dir,
        &[
            &url(https, "/"),
            "--resolve",
            &aim(https),
            "--cacert",
            &ca(&dir),
            "--h2",
            "--streams",
            "10",
            "--users",
            "20",
            "--iterations",
            "25",
            "--threads",
            "1",
        ],
    );
    assert_eq!(code, 0, "{table}");
    assert_eq!(report["protocol"], "h2");
    assert_eq!(report["streams_per_connection"], 10);
    let step = &report["steps"][0];
    assert_eq!(step["samples"], 500, "{table}");
    assert_eq!(step["statuses"]["200"], 500, "{table}");
    assert_eq!(served_since(app, before), 500, "the backend's own count");
    assert_eq!(step["connections"]["opened"], 2, "{table}");
    assert_eq!(step["connections"]["tls_handshakes"], 2, "{table}");
}

/// h2c with prior knowledge, on a plain listener that takes it.
#[test]
fn http2_over_plain_tcp_is_h2c() {
    let dir = Dir::new("bench-tls-h2c");
    let app = backend();
    let text = format!(
        "[[listener]]\nbind = \"127.0.0.1:0\"\nhttp2 = true\n\
         [[listener]]\nbind = \"{}\"\n\
         [[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n",
        free_addr()
    );
    let proxy =
        sluice_proxy::Proxy::start(sluice_config::parse("h2c.toml", &text).unwrap()).unwrap();
    let target = format!("http://{}/", proxy.local_addrs()[0]);
    let (code, table, report) = bench(
        &dir,
        &[
            &target,
            "--h2",
            "--streams",
            "4",
            "--users",
            "4",
            "--iterations",
            "10",
        ],
    );
    assert_eq!(code, 0, "{table}");
    assert_eq!(report["steps"][0]["statuses"]["200"], 40, "{table}");
    // Servers that do not speak h2c: one closes on the preface (the lab backend's
    // hyper), one answers it as a bad HTTP/1.1 request (sluice's HTTP/1.1 listener),
    // which reads as a frame too large, said so. No GOAWAY is the server's: the
    // client sent them.
    let h1 = format!("http://{}/", proxy.local_addrs()[1]);
    for (plain, hint) in [
        (format!("http://{}/", backend()), ""),
        (h1, "does it speak HTTP/2?"),
    ] {
        let args = [plain.as_str(), "--h2", "--users", "1", "--iterations", "2"];
        let (_, table, report) = bench(&dir, &args);
        let step = &report["steps"][0];
        assert_eq!(step["errors"], 2, "{table}");
        assert_eq!(step["connections"]["h2_goaways"], 0, "{table}");
        let kinds = step["error_kinds"].as_object().unwrap();
        assert!(kinds.keys().all(|k| k.contains(hint)), "{table}");
    }
}

/// An HTTP/2 server of the test's own (the `h2` crate): it resets every tenth stream
/// (RST_STREAM) and ends each connection after 25 streams (GOAWAY, then the streams in
/// flight finish). Returns its address and its own counts: resets, GOAWAYs.
fn unsteady_h2_server() -> (
    SocketAddr,
    std::sync::Arc<[std::sync::atomic::AtomicU64; 2]>,
) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let counts: std::sync::Arc<[AtomicU64; 2]> = std::sync::Arc::default();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let shared = counts.clone();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let streams = std::sync::Arc::new(AtomicU64::new(0));
            while let Ok((socket, _)) = listener.accept().await {
                let (counts, streams) = (shared.clone(), streams.clone());
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(socket).await else {
                        return;
                    };
                    let mut served = 0;
                    while let Some(Ok((_, mut respond))) = conn.accept().await {
                        served += 1;
                        if streams.fetch_add(1, Ordering::SeqCst) % 10 == 9 {
                            respond.send_reset(h2::Reason::INTERNAL_ERROR);
                            counts[0].fetch_add(1, Ordering::SeqCst);
                        } else {
                            let head = http::Response::builder().status(200).body(()).unwrap();
                            let mut body = respond.send_response(head, false).unwrap();
                            let _ = body.send_data(bytes::Bytes::from_static(b"ok\n"), true);
                        }
                        if served == 25 {
                            conn.graceful_shutdown();
                            counts[1].fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
    });
    (addr, counts)
}

/// GOAWAY and RST_STREAM are counted, never hidden: a reset stream is an error of its
/// own kind, and a request the closing connection refused before it was sent goes on a
/// new connection.
#[test]
fn http2_goaway_and_reset_streams_are_counted() {
    use std::sync::atomic::Ordering;
    let dir = Dir::new("bench-tls-goaway");
    let (server, counts) = unsteady_h2_server();
    let target = format!("http://{server}/");
    let (_, table, report) = bench(
        &dir,
        &[
            &target,
            "--h2",
            "--streams",
            "4",
            "--users",
            "4",
            "--iterations",
            "30",
            "--threads",
            "1",
        ],
    );
    let step = &report["steps"][0];
    let (resets, goaways) = (
        counts[0].load(Ordering::SeqCst),
        counts[1].load(Ordering::SeqCst),
    );
    assert_eq!(step["samples"], 120, "{table}");
    assert_eq!(resets, 12, "every tenth of 120 streams");
    assert_eq!(step["errors"].as_u64(), Some(resets), "{table}");
    assert_eq!(
        step["error_kinds"]["h2: RST_STREAM (INTERNAL_ERROR)"].as_u64(),
        Some(resets)
    );
    assert_eq!(
        step["statuses"]["200"].as_u64(),
        Some(120 - resets),
        "{table}"
    );
    let c = &step["connections"];
    assert_eq!(c["h2_resets"].as_u64(), Some(resets), "{c}");
    // 120 streams at 25 or more a connection (the streams a client opens before the
    // GOAWAY reaches it are still served).
    assert!(goaways >= 2, "the server ended {goaways} connections");
    let seen = c["h2_goaways"].as_u64().unwrap();
    assert!(
        seen + 1 >= goaways && seen <= goaways,
        "{seen} of {goaways} GOAWAYs seen: {c}"
    );
    assert!(c["opened"].as_u64().unwrap() >= goaways, "{c}");
    assert!(
        table.contains("connections ended by the server (GOAWAY)"),
        "{table}"
    );
}

/// `--follow`: each redirect is followed to the page it names (here from the plain
/// listener to the HTTPS one, by the certificate's name), each hop a sample of its own;
/// a loop stops after 10 hops, as an error.
#[test]
fn follow_reaches_the_backend_and_counts_each_hop() {
    let dir = Dir::new("bench-tls-follow");
    certificates(&dir);
    let app = backend();
    let (https, plain) = (free_addr(), free_addr());
    let (cert, key) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    let text = format!(
        "[[listener]]\nbind = \"{https}\"\ntls = {{ cert = {cert:?}, key = {key:?} }}\n\
         [[listener]]\nbind = \"{plain}\"\n\
         [[route]]\nlistener = \"{plain}\"\npath = \"/loop\"\n\
         return = {{ status = 302, location = \"/loop\" }}\n\
         [[route]]\nlistener = \"{plain}\"\n\
         return = {{ status = 301, location = \"https://{NAME}:{}$request_uri\" }}\n\
         [[route]]\nlistener = \"{https}\"\nupstream = \"app\"\n\
         [upstream.app]\nservers = [\"{app}\"]\n",
        https.port()
    );
    let _proxy =
        sluice_proxy::Proxy::start(sluice_config::parse("follow.toml", &text).unwrap()).unwrap();
    let before = answered(app);
    let start = format!("http://{plain}/cart");
    let (code, table, report) = bench(
        &dir,
        &[
            &start,
            "--follow",
            "--resolve",
            &aim(https),
            "--cacert",
            &ca(&dir),
            "--users",
            "2",
            "--iterations",
            "10",
        ],
    );
    assert_eq!(code, 0, "{table}");
    let step = &report["steps"][0];
    assert_eq!(
        step["labels"]["GET /cart"]["statuses"]["301"], 20,
        "{table}"
    );
    assert_eq!(
        step["labels"]["GET /cart (redirected)"]["statuses"]["200"], 20,
        "{table}"
    );
    assert_eq!(step["errors"], 0, "{table}");
    assert_eq!(
        served_since(app, before),
        20,
        "every chain reached the application"
    );
    assert!(
        step.get("warnings").is_none(),
        "followed: no warning: {table}"
    );
    // A redirect to itself: ten hops followed, then an error.
    let looping = format!("http://{plain}/loop");
    let (_, table, report) = bench(
        &dir,
        &[&looping, "--follow", "--users", "1", "--iterations", "2"],
    );
    let step = &report["steps"][0];
    assert_eq!(
        step["error_kinds"]["redirect: more than 10 hops"], 2,
        "{table}"
    );
    assert_eq!(step["statuses"]["302"], 22, "{table}");
}

/// `--follow` with `--h2`: a redirect to the same server is another stream on the
/// connections the users share, not a connection of its own.
#[test]
fn http2_follow_stays_on_the_shared_connections() {
    let dir = Dir::new("bench-tls-h2-follow");
    certificates(&dir);
    let app = backend();
    let https = free_addr();
    let (cert, key) = (dir.0.join("cert.pem"), dir.0.join("key.pem"));
    let text = format!(
        "[[listener]]\nbind = \"{https}\"\ntls = {{ cert = {cert:?}, key = {key:?} }}\n\
         [[route]]\npath = \"/old\"\nreturn = {{ status = 302, location = \"/cart\" }}\n\
         [[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [\"{app}\"]\n"
    );
    let _proxy =
        sluice_proxy::Proxy::start(sluice_config::parse("h2-follow.toml", &text).unwrap()).unwrap();
    let before = answered(app);
    let (code, table, report) = bench(
        &dir,
        &[
            &url(https, "/old"),
            "--resolve",
            &aim(https),
            "--cacert",
            &ca(&dir),
            "--h2",
            "--streams",
            "4",
            "--follow",
            "--users",
            "4",
            "--iterations",
            "10",
            "--threads",
            "1",
        ],
    );
    assert_eq!(code, 0, "{table}");
    let step = &report["steps"][0];
    assert_eq!(step["labels"]["GET /old"]["statuses"]["302"], 40, "{table}");
    assert_eq!(
        step["labels"]["GET /old (redirected)"]["statuses"]["200"], 40,
        "{table}"
    );
    assert_eq!(served_since(app, before), 40);
    assert_eq!(
        step["connections"]["opened"], 1,
        "4 users, 4 streams: {table}"
    );
}
