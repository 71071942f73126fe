//! Active health checks: a GET to every server of every upstream with a `health` table,
//! on a timer, from one thread for the whole process (not one per worker, which would
//! multiply the probes by the number of cores).
//!
//! A server goes down after `fall` failed checks in a row and comes back after `rise`
//! good ones; each change is logged. Checks follow reloads: new servers get checks,
//! removed ones lose them, and a server whose upstream drops its `health` table is
//! considered up again.

use crate::failure::Kind;
use crate::state::generation::Shared;
use crate::state::group::ServerState;
use crate::state::health::now_ns;
use crate::tls::client::ClientTls;
use sluice_config::{HealthCheck, UpstreamTls};
use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;
use tokio::task::JoinHandle;

type Key = (String, SocketAddr);

/// A check, and the upstream's TLS settings it connects with.
type Settings = (HealthCheck, Option<UpstreamTls>);

struct Running {
    check: Settings,
    server: Arc<ServerState>,
    task: JoinHandle<()>,
}

/// Starts the checking thread; it follows `generations` until `stop` turns true.
pub fn spawn(
    mut generations: watch::Receiver<Arc<Shared>>,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::Builder::new()
        .name("sluice-health".into())
        .spawn(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, async move {
                let mut running: HashMap<Key, Running> = HashMap::new();
                loop {
                    let shared = generations.borrow_and_update().clone();
                    follow(&mut running, &shared);
                    tokio::select! {
                        changed = generations.changed() => if changed.is_err() { return },
                        _ = stop.wait_for(|s| *s) => return,
                    }
                }
            });
        })?;
    Ok(())
}

/// Starts, restarts and stops check tasks so that they match `shared`.
fn follow(running: &mut HashMap<Key, Running>, shared: &Shared) {
    let mut wanted: HashMap<Key, (Settings, Arc<ServerState>)> = HashMap::new();
    let mut tls: HashMap<String, Option<ClientTls>> = HashMap::new();
    for u in &shared.upstreams {
        if let Some(check) = &u.config.health {
            tls.insert(u.config.name.clone(), u.tls.clone());
            for s in &u.servers {
                let settings = (check.clone(), u.config.tls.clone());
                wanted.insert((u.config.name.clone(), s.addr), (settings, s.clone()));
            }
        }
    }
    running.retain(|key, r| {
        let wanted_now = wanted
            .get(key)
            .filter(|(_, server)| Arc::ptr_eq(server, &r.server));
        let keep = wanted_now.is_some_and(|(check, _)| *check == r.check);
        if !keep {
            r.task.abort();
            // No longer checked at all: nothing says it is down any more. (A changed check
            // restarts below and keeps the current verdict.)
            if wanted_now.is_none() {
                r.server.health.set_checked(true, now_ns());
            }
        }
        keep
    });
    for (key, (check, server)) in wanted {
        if let std::collections::hash_map::Entry::Vacant(slot) = running.entry(key) {
            let client = tls.get(&slot.key().0).cloned().flatten();
            let task = tokio::task::spawn_local(check_loop(
                slot.key().0.clone(),
                server.clone(),
                check.0.clone(),
                client,
            ));
            slot.insert(Running {
                check,
                server,
                task,
            });
        }
    }
}

async fn check_loop(
    upstream: String,
    server: Arc<ServerState>,
    check: HealthCheck,
    tls: Option<ClientTls>,
) {
    let (mut good, mut bad) = (0u32, 0u32);
    let mut tick = tokio::time::interval(check.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let result = probe(server.addr, &check, tls.as_ref()).await;
        let now = now_ns();
        let up = server.health.checked_up();
        match result {
            Ok(()) => {
                (good, bad) = (good + 1, 0);
                if !up && good >= check.rise {
                    // Back from the dead: also end any ejection its failures caused. (A
                    // server that passes checks but fails real traffic stays ejected.)
                    server.health.set_checked(true, now);
                    server.health.reinstate(now);
                    tracing::info!(upstream = %upstream, server = %server.addr, "server up: health checks pass");
                }
            }
            Err(cause) => {
                (good, bad) = (0, bad + 1);
                if up && bad >= check.fall && server.health.set_checked(false, now) {
                    tracing::warn!(upstream = %upstream, server = %server.addr, cause = %cause, "server down: health checks fail");
                    // Shown with its request failures, so one look says why it is down.
                    server.remember(crate::state::group::ServerError {
                        at: std::time::SystemTime::now(),
                        route: format!("health check {}", check.path),
                        status: cause.status,
                        kind: cause.kind.name(),
                        cause: format!("server down: {cause}"),
                    });
                }
            }
        }
    }
}

/// A failed check: what kind of failure, the status when the server answered one (0
/// otherwise), and why in words.
#[derive(Debug)]
struct Failed {
    kind: Kind,
    status: u16,
    cause: String,
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.cause)
    }
}

/// One check: connect, GET the path, read the status line, all within the timeout.
async fn probe(
    addr: SocketAddr,
    check: &HealthCheck,
    tls: Option<&ClientTls>,
) -> Result<(), Failed> {
    let failed = |kind, status, cause| {
        Err(Failed {
            kind,
            status,
            cause,
        })
    };
    match tokio::time::timeout(check.timeout, exchange(addr, check, tls)).await {
        Ok(Ok(status)) if (check.expect.0..=check.expect.1).contains(&status) => Ok(()),
        Ok(Ok(status)) => failed(Kind::Status, status, format!("status {status}")),
        Ok(Err(e)) => failed(exchange_kind(&e), 0, e.to_string()),
        Err(_) => failed(
            Kind::Timeout,
            0,
            format!("no answer within {:?}", check.timeout),
        ),
    }
}

/// The kind of a check that failed before a status came back.
fn exchange_kind(e: &io::Error) -> Kind {
    match e.kind() {
        io::ErrorKind::ConnectionRefused | io::ErrorKind::HostUnreachable => Kind::Connect,
        io::ErrorKind::InvalidData => Kind::BadResponse,
        _ => Kind::Reset,
    }
}

/// The status of one check request, over TLS when the upstream has it.
async fn exchange(
    addr: SocketAddr,
    check: &HealthCheck,
    tls: Option<&ClientTls>,
) -> io::Result<u16> {
    let mut stream = crate::upstream::attempt::open(addr, tls).await?;
    let host = check.host.clone().unwrap_or_else(|| addr.to_string());
    let request = format!("GET {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: sluice-health-check\r\nConnection: close\r\n\r\n", check.path);
    stream.write_all(request.as_bytes()).await?;
    let mut buf = Vec::with_capacity(1024);
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut res = httparse::Response::new(&mut headers);
        match res.parse(&buf) {
            Ok(httparse::Status::Complete(_)) | Ok(httparse::Status::Partial)
                if res.code.is_some() =>
            {
                return Ok(res.code.unwrap_or(0))
            }
            Ok(_) if buf.len() < 16 * 1024 => {}
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "not an HTTP response",
                ))
            }
        }
        if stream.read_buf(&mut buf).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
}
