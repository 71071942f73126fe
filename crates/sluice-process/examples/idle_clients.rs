//! Holds many idle client connections on a balancer and measures what they cost it.
//!
//! `idle_clients keepalive TARGET CLIENTS PID [SOURCES]`: opens CLIENTS connections to
//! TARGET, sends one `GET /` on each and reads the response, then leaves them all open
//! and idle; prints the resident memory of process PID and its children before and after.
//!
//! `idle_clients burst TARGET CLIENTS PID [SOURCES]`: the same, but the connections are
//! all opened first and their requests all sent before any response is read, so every
//! request is in flight at once (a burst); then they stay idle, as above. What the
//! balancer kept once the burst's buffers were freed is the difference.
//!
//! `idle_clients h2 TARGET CLIENTS PID CA_FILE NAME [SOURCES]`: CLIENTS HTTP/2
//! connections over TLS (ALPN h2, server name NAME, trusting the CA in CA_FILE), one
//! request each, then idle; the resident memory as above.
//!
//! `idle_clients https TARGET CLIENTS PID CA_FILE NAME [SOURCES]`: CLIENTS HTTP/1.1
//! keep-alive connections over TLS (ALPN http/1.1), one after another, one `GET /`
//! each, then idle; the resident memory as above.
//!
//! `idle_clients silent TARGET CLIENTS [SOURCES]`: opens CLIENTS connections that send
//! nothing, and times how long the balancer keeps each one open (30 s at most).
//!
//! Before measuring, each mode warms the balancer up with `WARM_UP` connections of its
//! kind, then closes them and waits `SETTLE`: what a client adds is then measured, not
//! the code its first requests page in and the balancer's first allocations, made once.
//! Both the resident memory and its anonymous part (without the program's code and other
//! file pages) are printed.
//!
//! Source addresses are spread over 127.0.0.2 .. 127.0.0.(1 + SOURCES) so ephemeral
//! ports do not run out. Prints one JSON line. Loopback only; every step has a deadline.

use sluice_process::procfs::{tree_anon_kib, tree_rss_kib};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

type Error = Box<dyn std::error::Error>;

const USAGE: &str = "usage: idle_clients keepalive|burst TARGET CLIENTS PID [SOURCES]\n       idle_clients h2|https TARGET CLIENTS PID CA_FILE NAME [SOURCES]\n       idle_clients silent TARGET CLIENTS [SOURCES]";

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).ok_or(USAGE);
    let target: SocketAddr = arg(2)?.parse()?;
    let clients: usize = arg(3)?.parse()?;
    if !target.ip().is_loopback() {
        return Err("TARGET must be a loopback address".into());
    }
    match arg(1)?.as_str() {
        mode @ ("keepalive" | "burst") => {
            let pid: u32 = arg(4)?.parse()?;
            let sources = args.get(5).map_or(Ok(4), |s| s.parse())?;
            keepalive(target, clients, pid, sources, mode == "burst").await
        }
        mode @ ("h2" | "https") => {
            let pid: u32 = arg(4)?.parse()?;
            let alpn: &[u8] = if mode == "h2" { b"h2" } else { b"http/1.1" };
            let tls = Tls {
                connector: tls_client(arg(5)?, alpn)?,
                name: rustls::pki_types::ServerName::try_from(arg(6)?.clone())?,
            };
            let sources = args.get(7).map_or(Ok(4), |s| s.parse())?;
            idle_tls(target, clients, pid, (tls, mode == "h2"), sources).await
        }
        "silent" => {
            let sources = args.get(4).map_or(Ok(4), |s| s.parse())?;
            silent(target, clients, sources).await
        }
        _ => Err(USAGE.into()),
    }
}

async fn keepalive(
    target: SocketAddr,
    clients: usize,
    pid: u32,
    sources: u8,
    burst: bool,
) -> Result<(), Error> {
    drop(all_at_once(target, WARM_UP, sources).await?);
    tokio::time::sleep(SETTLE).await;
    let before = Memory::of(pid);
    let started = Instant::now();
    let open = if burst {
        all_at_once(target, clients, sources).await?
    } else {
        one_after_another(target, clients, sources).await?
    };
    report(clients, pid, (before, started), || count_open(&open)).await;
    Ok(())
}

/// Connections a mode opens and closes before measuring (see the module's docs): enough
/// for every worker of a balancer to serve some, few against the clients measured,
/// whose memory an allocator may take from what the warm-up's connections freed (200
/// before 300 HTTPS clients on nginx: 0.00 KiB per client).
const WARM_UP: usize = 20;
/// How long the balancer is left alone after the warm-up: longer than sluice's pooled
/// connections' idle timeout (4 s) and its workers' wait before giving memory back.
const SETTLE: Duration = Duration::from_secs(5);

/// The resident memory of a process and its children, KiB: all of it, and its
/// anonymous part.
#[derive(Clone, Copy)]
struct Memory {
    rss: u64,
    anon: u64,
}

impl Memory {
    fn of(pid: u32) -> Self {
        Memory {
            rss: tree_rss_kib(pid),
            anon: tree_anon_kib(pid),
        }
    }
}

/// Once the connections settled (2 s), prints one JSON line: the resident memory of
/// process `pid` before (`at_start`, with when the connections began to open) and
/// after, per connection, and how many are still open.
async fn report(
    clients: usize,
    pid: u32,
    at_start: (Memory, Instant),
    still_open: impl Fn() -> usize,
) {
    let (before, started) = at_start;
    let open_secs = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = Memory::of(pid);
    let still_open = still_open();
    let per_client = |before: u64, after: u64| (after as f64 - before as f64) / clients as f64;
    println!(
        "{{\"clients\":{clients},\"open_seconds\":{open_secs:.2},\"rss_before_kib\":{},\"rss_after_kib\":{},\"kib_per_client\":{:.2},\"anon_kib_per_client\":{:.2},\"still_open\":{still_open}}}",
        before.rss,
        after.rss,
        per_client(before.rss, after.rss),
        per_client(before.anon, after.anon),
    );
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n";

/// Each connection opened, asked and answered before the next.
async fn one_after_another(
    target: SocketAddr,
    clients: usize,
    sources: u8,
) -> Result<Vec<TcpStream>, Error> {
    let mut open = Vec::with_capacity(clients);
    for i in 0..clients {
        let mut stream = connect(target, source(i, sources)).await?;
        stream.write_all(GET).await?;
        tokio::time::timeout(Duration::from_secs(10), read_response(&mut stream)).await??;
        open.push(stream);
    }
    Ok(open)
}

/// Every connection opened, then every request sent, then every response read.
async fn all_at_once(
    target: SocketAddr,
    clients: usize,
    sources: u8,
) -> Result<Vec<TcpStream>, Error> {
    let mut open = Vec::with_capacity(clients);
    for i in 0..clients {
        open.push(connect(target, source(i, sources)).await?);
    }
    for stream in &mut open {
        stream.write_all(GET).await?;
    }
    let answers = open.iter_mut().map(|stream| async move {
        tokio::time::timeout(Duration::from_secs(60), read_response(stream)).await?
    });
    for answer in futures_util::future::join_all(answers).await {
        answer?;
    }
    Ok(open)
}

/// A TLS client trusting the CA certificates of `ca_file`, offering only `alpn`.
fn tls_client(ca_file: &str, alpn: &[u8]) -> Result<tokio_rustls::TlsConnector, Error> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file)? {
        roots.add(cert?)?;
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(tokio_rustls::TlsConnector::from(std::sync::Arc::new(
        config,
    )))
}

/// A TLS client and the server name it asks for.
struct Tls {
    connector: tokio_rustls::TlsConnector,
    name: rustls::pki_types::ServerName<'static>,
}

impl Tls {
    /// The `i`th client's connection to `target`, its handshake done.
    async fn open(
        &self,
        target: SocketAddr,
        i: usize,
        sources: u8,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Error> {
        let tcp = connect(target, source(i, sources)).await?;
        let handshake = self.connector.connect(self.name.clone(), tcp);
        Ok(tokio::time::timeout(Duration::from_secs(10), handshake).await??)
    }
}

/// A connection kept open over TLS, its request answered.
enum Held {
    H2 {
        /// Kept: dropping a connection's last sender ends it.
        _send: h2::client::SendRequest<bytes::Bytes>,
        driver: tokio::task::JoinHandle<Result<(), h2::Error>>,
    },
    Https(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl Held {
    /// Whether the balancer has not closed it.
    fn open(&self) -> bool {
        match self {
            Held::H2 { driver, .. } => !driver.is_finished(),
            Held::Https(stream) => count_open([stream.get_ref().0]) == 1,
        }
    }
}

/// `clients` connections over TLS, one after another, each speaking HTTP/2 (`h2`) or
/// HTTP/1.1 keep-alive, one request answered on each, then idle.
async fn idle_tls(
    target: SocketAddr,
    clients: usize,
    pid: u32,
    (tls, h2): (Tls, bool),
    sources: u8,
) -> Result<(), Error> {
    let ask = |i| ask_tls(&tls, target, i, sources, h2);
    drop(futures_util::future::try_join_all((0..WARM_UP).map(ask)).await?);
    tokio::time::sleep(SETTLE).await;
    let before = Memory::of(pid);
    let started = Instant::now();
    let mut open = Vec::with_capacity(clients);
    for i in 0..clients {
        open.push(ask(i).await?);
    }
    let still_open = || open.iter().filter(|h| h.open()).count();
    report(clients, pid, (before, started), still_open).await;
    Ok(())
}

/// The `i`th client's connection over TLS, one request answered on it.
async fn ask_tls(
    tls: &Tls,
    target: SocketAddr,
    i: usize,
    sources: u8,
    h2: bool,
) -> Result<Held, Error> {
    let stream = tls.open(target, i, sources).await?;
    match h2 {
        true => ask_h2(stream, &tls.name).await,
        false => ask_https(stream).await,
    }
}

/// One HTTP/2 request on `stream`, its response read whole.
async fn ask_h2(
    stream: tokio_rustls::client::TlsStream<TcpStream>,
    name: &rustls::pki_types::ServerName<'static>,
) -> Result<Held, Error> {
    let (mut send, connection) = h2::client::handshake(stream).await?;
    let driver = tokio::spawn(connection);
    let request = http::Request::get(format!("https://{}/", name.to_str())).body(())?;
    let (response, _) = send.send_request(request, true)?;
    let mut body = tokio::time::timeout(Duration::from_secs(10), response)
        .await??
        .into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        body.flow_control().release_capacity(chunk.len())?;
    }
    Ok(Held::H2 {
        _send: send,
        driver,
    })
}

/// One HTTP/1.1 request on `stream`, its response read whole.
async fn ask_https(mut stream: tokio_rustls::client::TlsStream<TcpStream>) -> Result<Held, Error> {
    stream.write_all(GET).await?;
    tokio::time::timeout(Duration::from_secs(10), read_response(&mut stream)).await??;
    Ok(Held::Https(Box::new(stream)))
}

/// Opens `clients` silent connections and reports when the balancer closed them.
async fn silent(target: SocketAddr, clients: usize, sources: u8) -> Result<(), Error> {
    let mut open = Vec::with_capacity(clients);
    for i in 0..clients {
        open.push((connect(target, source(i, sources)).await?, Instant::now()));
    }
    let waits = open.into_iter().map(|(mut stream, at)| async move {
        let mut buf = [0u8; 512];
        let mut answered = false;
        let deadline = at + Duration::from_secs(30);
        loop {
            match tokio::time::timeout_at(deadline.into(), stream.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => return (Some(at.elapsed()), answered),
                Ok(Ok(_)) => answered = true,
                Err(_) => return (None, answered),
            }
        }
    });
    let results = futures_util::future::join_all(waits).await;
    let mut closed: Vec<f64> = results
        .iter()
        .filter_map(|(t, _)| t.map(|t| t.as_secs_f64()))
        .collect();
    closed.sort_by(f64::total_cmp);
    let answered = results.iter().filter(|(_, a)| *a).count();
    let at = |q: f64| {
        closed
            .get(((closed.len().max(1) - 1) as f64 * q) as usize)
            .copied()
    };
    let show = |v: Option<f64>| v.map_or("null".to_string(), |v| format!("{v:.3}"));
    println!(
        "{{\"clients\":{clients},\"closed\":{},\"answered_before_close\":{answered},\"close_min_s\":{},\"close_p50_s\":{},\"close_max_s\":{}}}",
        closed.len(),
        show(at(0.0)),
        show(at(0.5)),
        show(at(1.0)),
    );
    Ok(())
}

fn source(i: usize, sources: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(
        127,
        0,
        0,
        2 + (i % usize::from(sources.max(1))) as u8,
    ))
}

async fn connect(target: SocketAddr, source: IpAddr) -> Result<TcpStream, Error> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source, 0))?;
    Ok(tokio::time::timeout(Duration::from_secs(10), socket.connect(target)).await??)
}

/// Reads one response with a Content-Length body.
async fn read_response(stream: &mut (impl AsyncRead + Unpin)) -> Result<(), Error> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err("closed before a whole response".into());
        }
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .ok_or("response without Content-Length")?
            .trim()
            .parse()?;
        if got.len() >= end + 4 + length {
            return Ok(());
        }
    }
}

/// How many connections the balancer has not closed (a non-blocking read each).
fn count_open<'a>(open: impl IntoIterator<Item = &'a TcpStream>) -> usize {
    let mut buf = [0u8; 1];
    open.into_iter()
        .filter(|s| matches!(s.try_read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock))
        .count()
}
