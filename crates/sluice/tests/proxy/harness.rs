//! The test harness: backends, a proxy built from TOML, a small raw HTTP client, and
//! `sluice` child processes.

// Shared by two test targets (`proxy` and `slow`), each of which uses part of it.
#![allow(dead_code)]

use sluice_proxy::Proxy;
use sluice_simulated::backend::{self, Options};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Starts a hyper backend named `name` on 127.0.0.1:0.
pub async fn backend(name: &str) -> SocketAddr {
    backend_with_delay(name, Duration::ZERO).await
}

pub async fn backend_with_delay(name: &str, delay: Duration) -> SocketAddr {
    backend::spawn(
        loopback(),
        Options {
            name: name.into(),
            delay,
            stomp: false,
        },
    )
    .await
    .expect("backend binds")
}

/// Starts a backend whose WebSocket clients speak STOMP (and `/echo` echoes).
pub async fn stomp_backend(name: &str) -> SocketAddr {
    let options = Options {
        name: name.into(),
        delay: Duration::ZERO,
        stomp: true,
    };
    backend::spawn(loopback(), options)
        .await
        .expect("backend binds")
}

pub fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// A proxy running in this process; stopped when dropped.
pub struct TestProxy {
    pub addr: SocketAddr,
    proxy: Option<Proxy>,
}

impl TestProxy {
    /// Starts the graceful shutdown (grace: 2 s), as SIGTERM does.
    pub fn shutdown(&self) {
        if let Some(p) = &self.proxy {
            p.shutdown();
        }
    }

    /// A handle for observers (the admin listener).
    pub fn view(&self) -> sluice_proxy::View {
        self.proxy.as_ref().unwrap().view()
    }

    /// Reloads with a new `body`, as [`proxy`] takes it (same listener).
    pub fn reload(&self, body: &str) -> sluice_proxy::ReloadSummary {
        let text =
            format!("shutdown_grace = \"2s\"\n{body}\n[[listener]]\nbind = \"127.0.0.1:0\"\n");
        let config = sluice_config::parse("test.toml", &text).unwrap();
        self.proxy.as_ref().unwrap().reload(config).expect("reload")
    }
}

impl TestProxy {
    /// Waits until `holds` is true of the proxy's state (what the admin API shows), 10 s
    /// at most: tests order events on state, not on time.
    pub async fn until(&self, what: &str, holds: impl Fn(&sluice_proxy::Snapshot) -> bool) {
        let view = self.view();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !holds(&view.snapshot()) {
            assert!(
                std::time::Instant::now() < deadline,
                "never {what} within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Waits until the first upstream has `n` requests in flight on its servers.
    pub async fn until_in_flight(&self, n: u32) {
        self.until(&format!("{n} in flight"), |s| {
            s.upstreams[0]
                .servers
                .iter()
                .map(|v| v.in_flight)
                .sum::<u32>()
                == n
        })
        .await
    }

    /// Waits until `n` requests wait in the first upstream's queue.
    pub async fn until_queued(&self, n: u64) {
        self.until(&format!("{n} queued"), |s| {
            s.upstreams[0].queue.waiting == n
        })
        .await
    }

    /// Reloads with a whole config `text`: what changed, or why nothing did.
    pub fn try_reload(&self, text: &str) -> io::Result<sluice_proxy::ReloadSummary> {
        let config = sluice_config::parse("test.toml", text).unwrap();
        self.proxy.as_ref().unwrap().reload(config)
    }
}

impl Drop for TestProxy {
    fn drop(&mut self) {
        if let Some(p) = self.proxy.take() {
            p.shutdown();
        }
    }
}

/// Starts a proxy on 127.0.0.1:0 with `body` (TOML: top-level keys first, then routes
/// and upstreams) and a listener appended.
pub fn proxy(body: &str) -> TestProxy {
    proxy_with(body, "[[listener]]\nbind = \"127.0.0.1:0\"\n")
}

/// Like [`proxy`], with `listener` (whole `[[listener]]` tables) instead of the plain one.
pub fn proxy_with(body: &str, listener: &str) -> TestProxy {
    let text = format!("shutdown_grace = \"2s\"\n{body}\n{listener}");
    let config = sluice_config::parse("test.toml", &text)
        .unwrap_or_else(|e| panic!("test config invalid:\n{e}\n{text}"));
    let proxy = Proxy::start(config).expect("proxy starts");
    TestProxy {
        addr: proxy.local_addrs()[0],
        proxy: Some(proxy),
    }
}

/// A config with one catch-all route to upstream `app` over `servers`, plus `extra` lines
/// in the upstream section.
pub fn one_upstream(servers: &[SocketAddr], extra: &str) -> String {
    let list: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    format!(
        "[[route]]\nupstream = \"app\"\n[upstream.app]\nservers = [{}]\n{extra}\n",
        list.join(", ")
    )
}

/// A response as the client saw it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A client connection that sends raw bytes and reads Content-Length or chunked replies.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Client {
        Client {
            stream: TcpStream::connect(addr).await.expect("connect to proxy"),
            buf: Vec::new(),
        }
    }

    pub fn from_stream(stream: TcpStream) -> Client {
        Client {
            stream,
            buf: Vec::new(),
        }
    }

    /// Like [`Client::send`], reporting a broken connection instead of panicking.
    pub async fn try_send(&mut self, raw: &str) -> io::Result<()> {
        self.stream.write_all(raw.as_bytes()).await
    }

    pub async fn send(&mut self, raw: &str) {
        self.stream.write_all(raw.as_bytes()).await.expect("send");
    }

    /// `GET path` with Host and keep-alive.
    pub async fn get(&mut self, path: &str) -> Reply {
        self.send(&format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n"))
            .await;
        self.read_reply().await.expect("a reply")
    }

    /// Reads one response (5 s deadline).
    pub async fn read_reply(&mut self) -> io::Result<Reply> {
        self.read_reply_within(Duration::from_secs(5)).await
    }

    /// Reads one response within `deadline`.
    pub async fn read_reply_within(&mut self, deadline: Duration) -> io::Result<Reply> {
        tokio::time::timeout(deadline, self.read_reply_inner())
            .await
            .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
    }

    async fn read_reply_inner(&mut self) -> io::Result<Reply> {
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 64];
            let mut res = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(n) = res
                .parse(&self.buf)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
            {
                let status = res.code.unwrap_or(0);
                let headers: Vec<(String, String)> = res
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                self.buf.drain(..n);
                let mut reply = Reply {
                    status,
                    headers,
                    body: Vec::new(),
                };
                self.read_body(&mut reply).await?;
                return Ok(reply);
            }
            self.more().await?;
        }
    }

    async fn read_body(&mut self, reply: &mut Reply) -> io::Result<()> {
        if let Some(len) = reply
            .header("content-length")
            .map(|v| v.parse::<usize>().unwrap())
        {
            while self.buf.len() < len {
                self.more().await?;
            }
            reply.body = self.buf.drain(..len).collect();
        } else if reply.header("transfer-encoding").is_some() {
            reply.body = self.read_chunked().await?;
        } else if reply.status >= 200 && reply.status != 204 && reply.status != 304 {
            while self.more().await.is_ok() {}
            reply.body = std::mem::take(&mut self.buf);
        }
        Ok(())
    }

    async fn read_chunked(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let line_end = loop {
                if let Some(i) = self.buf.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                self.more().await?;
            };
            let size = usize::from_str_radix(
                std::str::from_utf8(&self.buf[..line_end]).unwrap().trim(),
                16,
            )
            .unwrap();
            self.buf.drain(..line_end + 2);
            while self.buf.len() < size + 2 {
                self.more().await?;
            }
            body.extend(self.buf.drain(..size));
            self.buf.drain(..2);
            if size == 0 {
                return Ok(body);
            }
        }
    }

    async fn more(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 16384];
        match self.stream.read(&mut chunk).await? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                self.buf.extend_from_slice(&chunk[..n]);
                Ok(())
            }
        }
    }

    /// True when the proxy closed the connection (within 2 s).
    pub async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            tokio::time::timeout(Duration::from_secs(2), self.stream.read(&mut byte)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

/// One GET on a new connection.
pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    Client::connect(addr).await.get(path).await
}

/// A raw TCP peer: for each accepted connection, runs `serve` on it. For backends that
/// misbehave in ways a real HTTP server will not.
pub async fn raw_backend<F, Fut>(serve: F) -> SocketAddr
where
    F: Fn(TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind(loopback()).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    addr
}

/// Reads from `stream` until a blank line ends a request head; false if the peer closed.
pub async fn read_head(stream: &mut TcpStream) -> bool {
    let mut seen = Vec::new();
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => seen.push(byte[0]),
            _ => return false,
        }
    }
    true
}

/// The backend's own count of connections and requests, asked directly.
pub async fn backend_stats(addr: SocketAddr) -> (u64, u64) {
    let text = get(addr, "/__stats").await.text();
    let field = |key: &str| {
        text.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    (field("connections="), field("requests="))
}

pub use crate::support::TempDir;

/// A `sluice` child process. It binds what its config or flags say (port 0 is fine: the
/// bound addresses are read from its log), runs with `TMPDIR` in a directory of its own
/// (so its default pid file lands there), and is killed, with its directory removed,
/// when dropped.
pub struct SluiceProcess {
    pub child: std::process::Child,
    /// The addresses it listens on, as it logged them.
    pub addrs: Vec<SocketAddr>,
    pub config: std::path::PathBuf,
    log: std::path::PathBuf,
    pub dir: TempDir,
}

impl SluiceProcess {
    /// `sluice serve` with `config`; `log` is the SLUICE_LOG filter (the line naming the
    /// listeners is always logged).
    pub async fn serve(name: &str, config: &str, log: &str) -> SluiceProcess {
        let dir = TempDir::new("serve");
        let path = dir.file(name, config);
        let args = ["serve".to_string(), "-c".into(), path.display().to_string()];
        let filter = format!("{log},sluice_proxy::runtime::server=info");
        Self::start(dir, path, &args, &filter, "sluice is serving", None).await
    }

    /// [`serve`](Self::serve) under an open-file limit of `nofile`, soft and hard (set
    /// by the shell's `ulimit`, which then runs sluice in its place).
    pub async fn serve_with_nofile(
        name: &str,
        config: &str,
        log: &str,
        nofile: u64,
    ) -> SluiceProcess {
        let dir = TempDir::new("serve");
        let path = dir.file(name, config);
        let args = ["serve".to_string(), "-c".into(), path.display().to_string()];
        let filter = format!("{log},sluice_proxy::runtime::server=info");
        Self::start(dir, path, &args, &filter, "sluice is serving", Some(nofile)).await
    }

    /// `sluice backend --workers 1` named `name` on `listen` (127.0.0.1:0 for any port).
    pub async fn backend(name: &str, listen: SocketAddr) -> SluiceProcess {
        Self::backend_with_nofile(name, listen, None).await
    }

    /// [`backend`](Self::backend), under an open-file limit when `nofile` gives one.
    pub async fn backend_with_nofile(
        name: &str,
        listen: SocketAddr,
        nofile: Option<u64>,
    ) -> SluiceProcess {
        let dir = TempDir::new("backend");
        let args = ["backend", "--workers", "1", "--name", name, "--listen"].map(String::from);
        let mut args = args.to_vec();
        args.push(listen.to_string());
        let path = dir.0.clone();
        Self::start(
            dir,
            path,
            &args,
            "warn,sluice::commands=info,sluice_accept=info",
            "backend serving",
            nofile,
        )
        .await
    }

    async fn start(
        dir: TempDir,
        config: std::path::PathBuf,
        args: &[String],
        filter: &str,
        ready: &str,
        nofile: Option<u64>,
    ) -> SluiceProcess {
        let log = dir.0.join("stderr.log");
        let sluice = env!("CARGO_BIN_EXE_sluice");
        let mut command = match nofile {
            // The shell's `ulimit -n` sets both limits, then sluice runs in its place.
            Some(n) => {
                let mut c = std::process::Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(sluice);
                c
            }
            None => std::process::Command::new(sluice),
        };
        let child = command
            .args(args)
            .env("SLUICE_LOG", filter)
            .env("NO_COLOR", "1")
            .env("TMPDIR", &dir.0)
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut process = SluiceProcess {
            child,
            addrs: Vec::new(),
            config,
            log,
            dir,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let text = process.log();
            if let Some(line) = text.lines().find(|l| l.contains(ready)) {
                process.addrs = socket_addrs(line);
                return process;
            }
            if let Ok(Some(status)) = process.child.try_wait() {
                panic!("sluice {args:?} exited with {status} before it was ready:\n{text}");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "sluice {args:?} never got ready:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// Everything it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Sends a signal (`"TERM"`, `"HUP"`).
    pub fn signal(&self, signal: &str) {
        let sent = std::process::Command::new("kill")
            .args([format!("-{signal}"), self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal} failed");
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SluiceProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// CPU seconds `pid` uses over `period`.
pub async fn cpu_over(pid: u32, period: Duration) -> f64 {
    let cpu_seconds = sluice_process::procfs::cpu_seconds;
    let before = cpu_seconds(pid);
    tokio::time::sleep(period).await;
    cpu_seconds(pid) - before
}

/// The socket addresses written in a log line, in order.
fn socket_addrs(line: &str) -> Vec<SocketAddr> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':'))
        .filter_map(|word| word.trim_matches(':').parse().ok())
        .collect()
}

/// Runs curl with `args` (after `-sS --max-time 10`): its exit code, and its output and
/// errors together.
pub async fn curl<S: AsRef<str>>(args: &[S]) -> (i32, String) {
    let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(crate::support::tool("curl"))
            .args(["-sS", "--max-time", "10"])
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}
