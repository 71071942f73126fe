//! nginx and sluice side by side: nginx started on a config of a test's, that config
//! imported by `sluice import`, and the import served by `sluice serve`, each on a
//! loopback port, so that a test can send both the same requests.

use super::TempDir;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A process the test started, stopped with SIGTERM (nginx's master must live to stop
/// its workers) and waited for when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let pid = self.0.id().to_string();
            let _ = Command::new("kill").args(["-TERM", &pid]).status();
        }
        let _ = self.0.wait();
    }
}

/// nginx on a free loopback port, its config `conf_on(port)` written in `dir`. It cannot
/// listen on port 0, so a port is picked for it; should another process take it first,
/// nginx fails to bind and another is tried.
pub fn start_nginx(dir: &Path, conf_on: impl Fn(u16) -> String) -> (Running, u16, PathBuf) {
    let nginx = super::tool("nginx");
    for _ in 0..5 {
        let port = super::free_port();
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, conf_on(port)).unwrap();
        let child = Command::new(&nginx)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts");
        let mut running = Running(child);
        if listening(port, &mut running.0) {
            return (running, port, conf);
        }
    }
    let log = std::fs::read_to_string(dir.join("error.log")).unwrap_or_default();
    panic!("nginx did not start on any of 5 ports:\n{log}");
}

/// Waits until `port` accepts connections (10 s at most); false if `child` exits first.
fn listening(port: u16, child: &mut Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nothing listens on {port} after 10 s");
}

/// `sluice import` of `conf`, with `extra` arguments (`--force`).
pub fn import(conf: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("import")
        .args(extra)
        .arg(conf)
        .env("SLUICE_LOG", "warn")
        .output()
        .unwrap()
}

/// `toml` with its listener and admin listener moved to ports the kernel picks (nginx
/// holds the one it was written with; the admin's is fixed).
pub fn on_free_ports(toml: &str, port: u16) -> String {
    let listener = format!("bind = \"127.0.0.1:{port}\"");
    assert!(toml.contains(&listener), "{toml}");
    super::admin_on_a_free_port(&toml.replace(&listener, "bind = \"127.0.0.1:0\""))
}

/// `sluice serve` of `toml` (written in `dir`), once it says where it listens.
pub fn serve(dir: &TempDir, toml: &str) -> (Running, SocketAddr) {
    let config = dir.file("sluice.toml", toml);
    let log = dir.0.join("sluice.log");
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("serve")
        .arg("-c")
        .arg(&config)
        .env("SLUICE_LOG", "warn,sluice_proxy::runtime::server=info")
        .env("NO_COLOR", "1")
        .env("TMPDIR", &dir.0)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut running = Running(child);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let ready = text.lines().find(|l| l.contains("sluice is serving"));
        if let Some(addr) = ready.and_then(first_addr) {
            return (running, addr);
        }
        if let Ok(Some(status)) = running.0.try_wait() {
            panic!("sluice serve exited with {status}:\n{text}\n{toml}");
        }
        assert!(Instant::now() < deadline, "sluice never served:\n{text}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The first socket address in a log line.
pub fn first_addr(line: &str) -> Option<SocketAddr> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':'))
        .find_map(|word| word.trim_matches(':').parse().ok())
}
