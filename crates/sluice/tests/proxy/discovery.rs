//! Servers found in DNS and followed without a reload (`{ dns = ... }`), against a real
//! DNS server on loopback: dnsmasq, whose records the tests change while sluice runs.

use super::harness::*;
use sluice_simulated::backend::{self, Options};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// dnsmasq answering from a hosts file and SRV records, on a loopback port of its own.
struct Dnsmasq {
    child: Option<Child>,
    port: u16,
    hosts: PathBuf,
    srv: Vec<String>,
    _dir: TempDir,
}

fn dnsmasq_binary() -> PathBuf {
    crate::support::tool("dnsmasq")
}

impl Dnsmasq {
    /// Serves `hosts` (lines of "IP name") and `srv` (dnsmasq `--srv-host` values) with
    /// a TTL of one second.
    fn start(hosts: &str, srv: &[&str]) -> Dnsmasq {
        let dir = TempDir::new("dns");
        // dnsmasq takes TCP and UDP, and a test restarts it on the same port.
        let port = crate::support::port_below_ephemeral_range();
        let mut dns = Dnsmasq {
            child: None,
            port,
            hosts: dir.file("hosts", hosts),
            srv: srv.iter().map(|s| s.to_string()).collect(),
            _dir: dir,
        };
        dns.run();
        dns
    }

    fn run(&mut self) {
        let mut cmd = Command::new(dnsmasq_binary());
        cmd.args([
            "--keep-in-foreground",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
        ])
        .args(["--listen-address=127.0.0.1", "--local-ttl=1", "--pid-file="])
        // Authoritative for .test: a name it lacks does not exist (NXDOMAIN).
        .arg("--local=/test/")
        .arg("--conf-file=/dev/null")
        .arg(format!("--port={}", self.port))
        .arg(format!("--addn-hosts={}", self.hosts.display()))
        .args(self.srv.iter().map(|s| format!("--srv-host={s}")))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        self.child = Some(cmd.spawn().expect("dnsmasq starts"));
        // Up once it answers a query.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !answers(self.port) {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("dnsmasq exited with {status}");
            }
            assert!(Instant::now() < deadline, "dnsmasq never answered");
        }
    }

    /// New hosts-file records; dnsmasq rereads them on SIGHUP.
    fn set_hosts(&self, hosts: &str) {
        std::fs::write(&self.hosts, hosts).unwrap();
        let pid = self.child.as_ref().unwrap().id().to_string();
        assert!(Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success());
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Dnsmasq {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Whether a DNS server on `port` answers a query (any answer) within 200 ms.
fn answers(port: u16) -> bool {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    // id 0x5151, recursion desired, one question: ready.test A IN.
    let mut query = vec![0x51, 0x51, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    for label in ["ready", "test"] {
        query.push(label.len() as u8);
        query.extend_from_slice(label.as_bytes());
    }
    query.extend_from_slice(&[0, 0, 1, 0, 1]);
    if socket.send_to(&query, ("127.0.0.1", port)).is_err() {
        return false;
    }
    let mut reply = [0u8; 512];
    matches!(socket.recv(&mut reply), Ok(n) if n >= 12 && reply[..2] == [0x51, 0x51])
}

/// Waits up to 10 s for sluice's log to hold `text`.
async fn until_logged(sluice: &SluiceProcess, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sluice.log().contains(text) {
        assert!(
            Instant::now() < deadline,
            "no {text:?} in:\n{}",
            sluice.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn options(name: &str) -> Options {
    Options {
        name: name.into(),
        delay: Duration::ZERO,
        stomp: false,
    }
}

async fn backend_at(name: &str, addr: SocketAddr) -> SocketAddr {
    backend::spawn(addr, options(name))
        .await
        .expect("backend binds")
}

/// Backends `two` on 127.0.0.2 and `three` on 127.0.0.3, on the same port (one name,
/// one port, two addresses): the port the kernel gave the first, tried on the second
/// address until one is free on both (another test may hold it there).
async fn two_backends_on_one_port() -> (SocketAddr, SocketAddr) {
    for _ in 0..20 {
        let two = backend_at("two", "127.0.0.2:0".parse().unwrap()).await;
        let at = SocketAddr::from(([127, 0, 0, 3], two.port()));
        if let Ok(three) = backend::spawn(at, options("three")).await {
            return (two, three);
        }
    }
    panic!("no port free on both 127.0.0.2 and 127.0.0.3 in 20 tries");
}

/// A config with one upstream whose servers are `servers` (TOML list entries), asking
/// the dnsmasq on `dns_port` with TTLs bounded to 100 ms..500 ms; and its admin address.
fn config(servers: &str, dns_port: u16) -> (String, SocketAddr) {
    let admin = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let text = format!(
        "[[listener]]\nbind = \"127.0.0.1:0\"\n\
         [[route]]\nupstream = \"app\"\n\
         [upstream.app]\nservers = [{servers}]\n\
         [resolver]\nservers = [\"127.0.0.1:{dns_port}\"]\nmin_ttl = \"100ms\"\nmax_ttl = \"500ms\"\n\
         [admin]\nbind = \"{admin}\"\n"
    );
    (text, admin)
}

/// The `X-Backend` names of `n` requests (or "none" for an answer from sluice itself).
async fn names(addr: SocketAddr, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        let reply = get(addr, "/").await;
        out.push(reply.header("x-backend").unwrap_or("none").to_string());
    }
    out.sort();
    out.dedup();
    out
}

/// Waits up to 10 s for `n` requests to reach exactly the backends `want`.
async fn until_served_by(addr: SocketAddr, want: &[&str], log: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = names(addr, 12).await;
        if seen == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still served by {seen:?}, not {want:?}; sluice's log:\n{}",
            log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Requests the server at `addr` has answered, by the admin API.
async fn answered(admin: SocketAddr, addr: SocketAddr) -> u64 {
    let body = get(admin, "/api/upstreams").await.body;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let servers = v["upstreams"][0]["servers"].as_array().unwrap().clone();
    let s = servers
        .iter()
        .find(|s| s["addr"] == addr.to_string())
        .unwrap_or_else(|| panic!("{addr} not among {servers:?}"));
    s["requests"]["2xx"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs dnsmasq and promtool"]
async fn a_name_is_followed_as_its_addresses_come_and_go() {
    let (two, three) = two_backends_on_one_port().await;
    let port = two.port();
    let mut dns = Dnsmasq::start("", &[]);
    let (text, admin) = config(&format!("{{ dns = \"app.test:{port}\" }}"), dns.port);
    let sluice = SluiceProcess::serve("dns.toml", &text, "info").await;
    let addr = sluice.addr();
    let log = || sluice.log();

    // No such name yet: sluice starts anyway, with no server to send to.
    let first = get(addr, "/").await;
    assert!(first.status >= 500, "{}", first.status);
    assert!(!sluice.log().contains("lookup failed"), "{}", sluice.log());
    dns.set_hosts("127.0.0.2 app.test\n");
    until_served_by(addr, &["two"], log).await;
    dns.set_hosts("127.0.0.2 app.test\n127.0.0.3 app.test\n");
    until_served_by(addr, &["three", "two"], log).await;
    until_logged(&sluice, &format!("+{three}")).await;

    // The resolver fails: the servers found last stay.
    dns.stop();
    until_logged(&sluice, "keeping the 2 server(s) found last").await;
    // ... and the metrics say so, in a form promtool accepts.
    let text = super::metrics::scrape(admin).await;
    let name = format!("app.test:{port}");
    let of = |result: &'static str| [("name", name.as_str()), ("result", result)];
    let failed = super::metrics::value(&text, "sluice_dns_lookups_total", &of("failed"));
    let asked = super::metrics::value(&text, "sluice_dns_lookups_total", &of("answered"));
    assert!(failed >= 1.0 && asked >= 3.0, "{text}");
    let servers = [("name", name.as_str())];
    assert_eq!(
        super::metrics::value(&text, "sluice_dns_servers", &servers),
        2.0
    );
    super::metrics::promtool_accepts(&text).await;
    assert_eq!(names(addr, 12).await, ["three", "two"]);

    // Back with one address gone: the server that stays keeps its state (its request
    // count goes on from where it was).
    let before = answered(admin, three).await;
    assert!(before > 0);
    std::fs::write(&dns.hosts, "127.0.0.3 app.test\n").unwrap();
    dns.run();
    until_served_by(addr, &["three"], log).await;
    // (A request is counted after its last byte is written: wait for the last one.)
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut now = answered(admin, three).await;
    while now < before + 12 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        now = answered(admin, three).await;
    }
    assert!(now >= before + 12, "{now} after {before}");
    until_logged(&sluice, &format!("-{two}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs dnsmasq"]
async fn srv_records_give_ports_weights_and_backups() {
    let a = backend_at("a", loopback()).await;
    let b = backend_at("b", loopback()).await;
    let c = backend_at("c", loopback()).await;
    let srv = [
        format!("_http._tcp.app.test,a.test,{},0,10", a.port()),
        format!("_http._tcp.app.test,b.test,{},0,10", b.port()),
        format!("_http._tcp.app.test,c.test,{},1,10", c.port()),
    ];
    let srv: Vec<&str> = srv.iter().map(String::as_str).collect();
    let hosts = "127.0.0.1 a.test\n127.0.0.1 b.test\n127.0.0.1 c.test\n";
    let dns = Dnsmasq::start(hosts, &srv);
    let (text, admin) = config("{ dns = \"_http._tcp.app.test\" }", dns.port);
    let sluice = SluiceProcess::serve("srv.toml", &text, "info").await;
    let addr = sluice.addr();

    // Priority 0 serves; c, of priority 1, is a backup.
    assert_eq!(names(addr, 12).await, ["a", "b"]);
    let body = get(admin, "/api/upstreams").await.body;
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let backup = |port: u16| {
        v["upstreams"][0]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["addr"] == format!("127.0.0.1:{port}"))
            .unwrap_or_else(|| panic!("no server on port {port}: {v}"))["backup"]
            .as_bool()
            .unwrap()
    };
    assert!(!backup(a.port()) && !backup(b.port()) && backup(c.port()));
    let followed = &v["upstreams"][0]["dns"][0];
    assert_eq!(followed["name"], "_http._tcp.app.test", "{v}");
    assert_eq!(followed["servers"], 3, "{v}");
    assert_eq!(followed["failures"], 0, "{v}");
}

#[test]
fn a_bad_dns_entry_is_refused_with_its_place() {
    let text = "[[listener]]\nbind = \"127.0.0.1:0\"\n[[route]]\nupstream = \"app\"\n\
                [upstream.app]\nservers = [{ dns = \"app.test\" }]\n";
    let err = sluice_config::parse("bad.toml", text)
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.toml:6:") && err.contains("SRV"), "{err}");
}
