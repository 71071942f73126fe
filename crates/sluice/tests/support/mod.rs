//! What the end-to-end test targets share: lab backends in this process and their own
//! counts, and free loopback ports for what a test starts.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

pub mod nginx;
pub mod stacks;

/// Lab backends named `names` in this process, on a runtime thread of their own (it
/// runs for the rest of the test process); `stomp`: their WebSockets speak STOMP.
pub fn backends(names: &[&str], stomp: bool) -> Vec<SocketAddr> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let addrs = names
        .iter()
        .map(|name| {
            let options = sluice_simulated::backend::Options {
                name: name.to_string(),
                delay: Duration::ZERO,
                stomp,
            };
            let any = "127.0.0.1:0".parse().unwrap();
            runtime
                .block_on(sluice_simulated::backend::spawn(any, options))
                .unwrap()
        })
        .collect();
    std::mem::forget(runtime);
    addrs
}

/// One lab backend named `a`.
pub fn backend() -> SocketAddr {
    backends(&["a"], false)[0]
}

/// A field of a lab backend's `/__stats` (this question counts in `requests`).
pub fn stat(addr: SocketAddr, key: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /__stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split_whitespace()
        .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("no {key} in {text}"))
        .parse()
        .unwrap()
}

/// The requests a lab backend has answered (its own count, minus this question).
pub fn answered(addr: SocketAddr) -> u64 {
    stat(addr, "requests") - 1
}

/// The program `name`, one a test needs beyond Rust: its path on the PATH, or in
/// /usr/sbin or /sbin, where Debian keeps nginx, haproxy and dnsmasq (often not on a
/// user's PATH). A test that needs one is `#[ignore = "needs NAME"]`: plain `cargo test`
/// lists it as ignored; `scripts/test.sh` installs NAME and runs it (`--include-ignored`),
/// and where NAME is missing all the same the test fails here, saying which program.
pub fn tool(name: &str) -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let sbin = ["/usr/local/sbin", "/usr/sbin", "/sbin"].map(std::path::PathBuf::from);
    std::env::split_paths(&path)
        .chain(sbin)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is not installed (on the PATH or in /usr/sbin): scripts/test.sh installs it")
        })
}

/// A loopback address with a port free now (the kernel's pick), for a process a test
/// starts that must be told its address before it binds.
pub fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The port of [`free_addr`].
pub fn free_port() -> u16 {
    free_addr().port()
}

/// A loopback port free now for TCP and UDP both, below the kernel's ephemeral range:
/// for a server that must bind it again later (dnsmasq stopped and restarted on the
/// same port). A port from the range (`127.0.0.1:0`) can be taken meanwhile by any
/// test's outgoing connection or query; one below it is never handed out.
pub fn port_below_ephemeral_range() -> u16 {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range");
    let low: u32 = range
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let span = low.saturating_sub(10_000).max(1);
    let seed = std::process::id().wrapping_mul(7919)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
    for n in 0..1000u32 {
        let port = (10_000 + seed.wrapping_add(n.wrapping_mul(104_729)) % span) as u16;
        let udp = std::net::UdpSocket::bind(("127.0.0.1", port));
        if udp.is_ok() && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port below {low} for TCP and UDP");
}

/// Waits until `port` on loopback accepts connections (10 s at most).
pub fn wait_listening(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on {port}");
}

/// The DOM headless Chromium builds from `page` once its scripts ran (60 s at most).
pub fn browser_dom(page: &std::path::Path) -> String {
    let profile = page.with_extension("profile");
    browser_dom_of(&format!("file://{}", page.display()), &profile)
}

/// The DOM of the page at `url` after its scripts ran, in headless Chromium with its
/// profile in `profile`.
pub fn browser_dom_of(url: &str, profile: &std::path::Path) -> String {
    let out = std::process::Command::new("timeout")
        .arg("60")
        .arg(tool("chromium"))
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
        ])
        .args([
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--virtual-time-budget=5000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .stderr(std::process::Stdio::null())
        .output()
        .expect("timeout runs chromium");
    assert!(out.status.success(), "chromium: {}", out.status);
    let _ = std::fs::remove_dir_all(profile);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A self-signed certificate for `name` made by openssl, as a user makes one (which
/// marks it a CA), written as `cert.pem` and `key.pem` in `dir`; their paths.
pub fn self_signed(dir: &std::path::Path, name: &str) -> (String, String) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new(tool("openssl"))
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", &format!("/CN={name}")])
        .args(["-addext", &format!("subjectAltName=DNS:{name}"), "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    (cert.display().to_string(), key.display().to_string())
}

/// The Python interpreter that has the tests' packages (PyYAML): `SLUICE_PYTHON`, which
/// scripts/test.sh points at the virtual environment it installs them into
/// (`target/test-venv/bin/python`), or `python3`.
pub fn python() -> String {
    std::env::var("SLUICE_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// A directory of the test's own under the system temp dir, removed when dropped.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("sluice-{label}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// Writes `text` to `name` in this directory; returns its path.
    pub fn file(&self, name: &str, text: &str) -> std::path::PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A config `sluice import` wrote, its admin listener moved from the fixed
/// 127.0.0.1:9901 it writes (nginx had none) to a port the kernel picks: a test that
/// serves it must not fail beside anything holding that port.
pub fn admin_on_a_free_port(toml: &str) -> String {
    let admin = "bind = \"127.0.0.1:9901\"";
    assert!(toml.contains(admin), "{toml}");
    toml.replace(admin, "bind = \"127.0.0.1:0\"")
}
