//! What a run shows while it runs, once a second: each tier's CPU against its budget and
//! the step's throughput, p99 and errors; on the terminal's status line (when stderr is
//! a terminal) and, with `--live ADDR`, on a page that also lists the steps done and the
//! verdict forming: every tier's saturation in one place during a test.
//!
//! It only shows: nothing here feeds the judge, which works from the sampler's readings
//! and the generator's report after each step.

use crate::jvm::dump::State;
use crate::real::Watched;
use crate::report::StepResult;
use crate::sample::Reading;
use crate::text::{self, Width};
use serde::Serialize;
use sluice_bench::progress::Snapshot;
use std::io::IsTerminal;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const PAGE: &str = include_str!("../assets/live.html");
const PAGE_JS: &str = include_str!("../assets/live.js");

/// The state the page polls (`/live.json`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveState {
    pub experiment: String,
    /// The servers of the configuration under load now (none before the first).
    pub servers: Option<usize>,
    /// What runs now: `2 servers, 20 users: measuring`, `proof: control`.
    pub phase: String,
    pub elapsed_s: f64,
    pub tps: f64,
    pub p99_ms: f64,
    pub error_pct: f64,
    pub tiers: Vec<LiveTier>,
    pub steps: Vec<LiveStep>,
    /// The last step's verdict: the verdict forming.
    pub verdict: String,
    /// The run's progress lines as they were said (servers drained and put back, the
    /// proof's runs), oldest first, at most [`EVENTS`]: what the table of steps does not
    /// show.
    pub events: Vec<LiveEvent>,
    pub done: bool,
}

/// Events the page keeps: a run says a few per configuration, so this is every one of
/// any run the lab makes, and a bound on the page's size all the same.
const EVENTS: usize = 200;

/// A progress line, and when in the run it was said.
#[derive(Debug, Clone, Serialize)]
pub struct LiveEvent {
    pub at_s: f64,
    pub text: String,
}

/// One process's CPU over the last second, against its budget.
#[derive(Debug, Clone, Serialize)]
pub struct LiveTier {
    pub name: String,
    pub tier: String,
    pub cpu_pct: f64,
    pub budget: String,
    /// A sampled JVM's request threads over the last second, on average in a dump,
    /// by state (`running`, `pool`, `blocked`, ...; none in no state): the page's bars.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<LiveThreads>,
}

/// How many request threads were in one state, on average in the last second's dumps.
#[derive(Debug, Clone, Serialize)]
pub struct LiveThreads {
    pub state: State,
    pub threads: f64,
}

/// A step done, as the table shows it.
#[derive(Debug, Clone, Serialize)]
pub struct LiveStep {
    pub servers: usize,
    pub users: usize,
    pub tps: f64,
    pub p99_ms: f64,
    pub error_pct: f64,
    pub saturated: String,
}

/// The run's live view: its state, shared with the page's server.
pub struct Live {
    state: Arc<Mutex<LiveState>>,
    terminal: bool,
    started: std::time::Instant,
}

impl Live {
    /// A live view of `experiment`, on the terminal when stderr is one.
    pub fn new(experiment: &str) -> Live {
        let state = LiveState {
            experiment: experiment.into(),
            ..LiveState::default()
        };
        Live {
            state: Arc::new(Mutex::new(state)),
            terminal: std::io::stderr().is_terminal(),
            started: std::time::Instant::now(),
        }
    }

    /// Serves the page at `addr` on a thread of its own; the address bound.
    pub fn serve(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = std::net::TcpListener::bind(addr)?;
        listener.set_nonblocking(true)?;
        let bound = listener.local_addr()?;
        let state = self.state.clone();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        std::thread::Builder::new()
            .name("lab-live".into())
            .spawn(move || runtime.block_on(serve(listener, state)))?;
        Ok(bound)
    }

    fn update(&self, f: impl FnOnce(&mut LiveState)) -> LiveState {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut state);
        state.clone()
    }

    /// A new phase: a step's warm-up or measurement, a proof run.
    pub fn phase(&self, phase: String) {
        self.update(|s| {
            s.phase = phase;
            s.elapsed_s = 0.0;
            s.tps = 0.0;
            s.p99_ms = 0.0;
            s.error_pct = 0.0;
        });
    }

    /// The configuration under load now: its number of servers.
    pub fn servers(&self, servers: usize) {
        self.update(|s| s.servers = Some(servers));
    }

    /// A progress line (a drain, a proof's run), into the page's list of events.
    pub fn event(&self, text: &str) {
        let at_s = round1(self.started.elapsed().as_secs_f64());
        self.update(|s| {
            if s.events.len() == EVENTS {
                s.events.remove(0);
            }
            s.events.push(LiveEvent {
                at_s,
                text: text.into(),
            });
        });
    }

    /// The generator's progress in the phase, and the tiers' last second.
    pub fn tick(&self, snap: &Snapshot, elapsed: Duration, tiers: Vec<LiveTier>) {
        let secs = elapsed.as_secs_f64().max(1e-3);
        let s = self.update(|s| {
            s.elapsed_s = round1(secs);
            s.tps = round1(snap.requests as f64 / secs);
            s.p99_ms = round1(snap.p99.as_secs_f64() * 1000.0);
            s.error_pct = round1(snap.errors as f64 * 100.0 / snap.requests.max(1) as f64);
            if !tiers.is_empty() {
                s.tiers = tiers;
            }
        });
        if self.terminal {
            eprint!("\r{}\x1b[K", status_line(&s));
        }
    }

    /// A step done: into the table, its verdict the one forming; the status line cleared
    /// for the step's own line.
    pub fn step_done(&self, step: &StepResult) {
        let v = &step.judged.verdict;
        self.update(|s| {
            s.steps.push(LiveStep {
                servers: step.servers,
                users: step.users,
                tps: step.tps,
                p99_ms: step.p99_ms,
                error_pct: step.error_pct,
                saturated: match (&v.tier, &v.resource) {
                    (Some(t), Some(r)) => format!("{t} {r}"),
                    (Some(t), None) => t.clone(),
                    (None, _) => "-".into(),
                },
            });
            s.verdict = v.summary.clone();
        });
        self.clear();
    }

    /// The run's verdict: the page shows it and stops polling.
    pub fn finish(&self, verdict: &str) {
        self.update(|s| {
            s.verdict = verdict.into();
            s.phase = "done".into();
            s.done = true;
        });
        self.clear();
    }

    /// Clears the terminal's status line, for a line of the table.
    pub fn clear(&self) {
        if self.terminal {
            eprint!("\r\x1b[K");
        }
    }
}

/// The terminal's status line: the phase, the generator's figures, each process's CPU.
fn status_line(s: &LiveState) -> String {
    let tiers: Vec<String> = s
        .tiers
        .iter()
        .map(|t| format!("{} {:.0}%", t.name, t.cpu_pct))
        .collect();
    let line = format!(
        "  {}  {:.0} s  {:.0} req/s  p99 {:.1} ms  {:.1}% err  {}",
        s.phase,
        s.elapsed_s,
        s.tps,
        s.p99_ms,
        s.error_pct,
        tiers.join("  ")
    );
    text::fit(line, Width::Narrow)
}

/// Each watched process's CPU between readings `a` and `b`, as a percent of its budget
/// (0 for an exporter without a CPU count).
pub fn tiers_between(watched: &[Watched], a: &Reading, b: &Reading) -> Vec<LiveTier> {
    let dt = (b.t - a.t).max(1e-3);
    watched
        .iter()
        .zip(a.procs.iter().zip(&b.procs))
        .map(|(w, (pa, pb))| LiveTier {
            name: w.name.clone(),
            tier: w.tier.clone(),
            cpu_pct: if w.budget.cores > 0.0 {
                round1((pb.cpu_s - pa.cpu_s) / dt / w.budget.cores * 100.0)
            } else {
                0.0
            },
            budget: w.budget.method.clone(),
            threads: threads_between(pa, pb),
        })
        .collect()
}

/// A JVM's request threads by state between two readings, where its dumps were taken.
fn threads_between(
    a: &crate::sample::ProcReading,
    b: &crate::sample::ProcReading,
) -> Vec<LiveThreads> {
    let (Some(a), Some(b)) = (&a.jvm, &b.jvm) else {
        return Vec::new();
    };
    let step = b.since(a);
    if step.samples == 0 {
        return Vec::new();
    }
    State::ALL
        .iter()
        .filter_map(|s| {
            let n = *step.states.get(s)?;
            Some(LiveThreads {
                state: *s,
                threads: round1(n as f64 / step.samples as f64),
            })
        })
        .collect()
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// The page (`/`), its script (`/live.js`) and the state (`/live.json`), until the
/// process ends.
async fn serve(listener: std::net::TcpListener, state: Arc<Mutex<LiveState>>) {
    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
        return;
    };
    while let Ok((stream, _)) = listener.accept().await {
        let state = state.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let reply = answer(req.uri().path(), &state);
                async move { Ok::<_, std::convert::Infallible>(reply) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

fn answer(
    path: &str,
    state: &Mutex<LiveState>,
) -> hyper::Response<http_body_util::Full<bytes::Bytes>> {
    let (status, kind, body) = match path {
        "/" => (200, "text/html; charset=utf-8", PAGE.to_string()),
        "/live.js" => (200, "text/javascript", PAGE_JS.to_string()),
        "/live.json" => {
            let s = state.lock().unwrap_or_else(|e| e.into_inner()).clone();
            let json = serde_json::to_string(&s).unwrap_or_else(|_| "null".into());
            (200, "application/json", json)
        }
        _ => (404, "text/plain", "not found\n".to_string()),
    };
    let mut reply = hyper::Response::new(http_body_util::Full::new(bytes::Bytes::from(body)));
    *reply.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    if let Ok(v) = hyper::header::HeaderValue::from_str(kind) {
        reply.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    reply.headers_mut().insert(
        hyper::header::CACHE_CONTROL,
        hyper::header::HeaderValue::from_static("no-store"),
    );
    reply
}
