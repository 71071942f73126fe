//! Steady load for the fault-injection tests: clients sending GETs in a loop until told
//! to stop, counting what they got. Bounded: every client stops at the stop signal or at
//! its deadline, whichever comes first.

use super::harness::Client;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the clients saw.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    pub sent: usize,
    pub ok: usize,
    /// Failures by status (0: no response at all), with the time each happened.
    pub failures: Vec<(Duration, u16)>,
    /// Responses per backend name.
    pub by_backend: BTreeMap<String, usize>,
    /// Requests that took at least `slow` (see [`Load::start`]), with when they ended.
    pub slow: Vec<Duration>,
    /// Every response: when it ended, and which backend answered (for shares over time).
    pub timeline: Vec<(Duration, String, Duration)>,
}

pub struct Load {
    stop: Arc<AtomicBool>,
    tally: Arc<Mutex<Tally>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    pub started: Instant,
}

impl Load {
    /// `clients` connections sending `GET path` back to back for at most `limit`.
    pub fn start(
        addr: SocketAddr,
        clients: usize,
        path: &'static str,
        limit: Duration,
        slow: Duration,
    ) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let tally = Arc::new(Mutex::new(Tally::default()));
        let started = Instant::now();
        let tasks = (0..clients)
            .map(|_| {
                let (stop, tally) = (stop.clone(), tally.clone());
                tokio::spawn(async move {
                    client_loop(addr, path, started, started + limit, slow, &stop, &tally).await
                })
            })
            .collect();
        Load {
            stop,
            tally,
            tasks,
            started,
        }
    }

    pub async fn stop(self) -> Tally {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.tasks {
            let _ = t.await;
        }
        let tally = self.tally.lock().unwrap().clone();
        tally
    }
}

async fn client_loop(
    addr: SocketAddr,
    path: &str,
    started: Instant,
    deadline: Instant,
    slow: Duration,
    stop: &AtomicBool,
    tally: &Mutex<Tally>,
) {
    let mut client: Option<Client> = None;
    while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
        if client.is_none() {
            client = tokio::net::TcpStream::connect(addr)
                .await
                .ok()
                .map(Client::from_stream);
        }
        let sent_at = Instant::now();
        let reply = match client.as_mut() {
            Some(c) => {
                match c
                    .try_send(&format!("GET {path} HTTP/1.1\r\nHost: load\r\n\r\n"))
                    .await
                {
                    Ok(()) => c.read_reply().await.ok(),
                    Err(_) => None,
                }
            }
            None => None,
        };
        record(tally, &reply, started.elapsed(), sent_at.elapsed(), slow);
        let closing = reply
            .as_ref()
            .is_none_or(|r| r.header("connection") == Some("close"));
        if closing {
            client = None;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

fn record(
    tally: &Mutex<Tally>,
    reply: &Option<super::harness::Reply>,
    at: Duration,
    took: Duration,
    slow: Duration,
) {
    let mut t = tally.lock().unwrap();
    t.sent += 1;
    match reply {
        Some(r) if r.status == 200 => {
            t.ok += 1;
            let name = r.header("x-backend").unwrap_or("?").to_string();
            *t.by_backend.entry(name.clone()).or_default() += 1;
            t.timeline.push((at, name, took));
        }
        Some(r) => t.failures.push((at, r.status)),
        None => t.failures.push((at, 0)),
    }
    if took >= slow {
        t.slow.push(at);
    }
}
