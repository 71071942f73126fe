//! Opens many idle WebSocket tunnels through a balancer and measures what they cost it.
//!
//! `ws_tunnels TARGET TUNNELS PID [SOURCES]`: opens TUNNELS WebSockets to
//! `ws://TARGET/echo`, spreading their source addresses over 127.0.0.2 .. 127.0.0.(1 +
//! SOURCES) so ephemeral ports do not run out; reads the resident memory of process PID
//! and its children before and after; then, with all tunnels open and idle, sends 2,000
//! echo messages on randomly chosen tunnels, one at a time, and times each round trip.
//! Prints one JSON line. Loopback only; every step has a deadline.

use futures_util::{SinkExt, StreamExt};
use sluice_process::procfs::tree_rss_kib;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::net::TcpSocket;
use tokio_tungstenite::tungstenite::Message;

const SAMPLES: usize = 2000;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: ws_tunnels TARGET TUNNELS PID [SOURCES]";
    let target: SocketAddr = args.get(1).ok_or(usage)?.parse()?;
    let tunnels: usize = args.get(2).ok_or(usage)?.parse()?;
    let pid: u32 = args.get(3).ok_or(usage)?.parse()?;
    let sources: u8 = args.get(4).map_or(Ok(4), |s| s.parse())?;
    if !target.ip().is_loopback() {
        return Err("TARGET must be a loopback address".into());
    }
    let before = tree_rss_kib(pid);
    let started = Instant::now();
    let mut open = Vec::with_capacity(tunnels);
    for i in 0..tunnels {
        let source = IpAddr::V4(Ipv4Addr::new(
            127,
            0,
            0,
            2 + (i % usize::from(sources)) as u8,
        ));
        open.push(tokio::time::timeout(Duration::from_secs(10), connect(target, source)).await??);
    }
    let open_secs = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = tree_rss_kib(pid);
    let mut latencies = Vec::with_capacity(SAMPLES);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for n in 0..SAMPLES {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let ws = &mut open[(state % tunnels as u64) as usize];
        let sent = Instant::now();
        ws.send(Message::text(format!("ping {n}"))).await?;
        match tokio::time::timeout(Duration::from_secs(5), ws.next()).await {
            Ok(Some(Ok(Message::Text(_)))) => latencies.push(sent.elapsed()),
            other => return Err(format!("echo {n} failed: {other:?}").into()),
        }
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    let per_tunnel = (after as f64 - before as f64) / tunnels as f64;
    println!(
        "{{\"tunnels\":{tunnels},\"open_seconds\":{open_secs:.2},\"rss_before_kib\":{before},\"rss_after_kib\":{after},\"kib_per_tunnel\":{per_tunnel:.2},\"echo_p50_ms\":{:.3},\"echo_p99_ms\":{:.3}}}",
        at(0.5),
        at(0.99)
    );
    Ok(())
}

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn connect(target: SocketAddr, source: IpAddr) -> Result<Ws, Box<dyn std::error::Error>> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(source, 0))?;
    let stream = socket.connect(target).await?;
    let (ws, _) = tokio_tungstenite::client_async(format!("ws://{target}/echo"), stream).await?;
    Ok(ws)
}
