//! sluice's admin listener: `/metrics` (OpenMetrics text, for Prometheus), the JSON
//! admin API (`/api/status`, `/api/upstreams`) and a live dashboard on it (`/`), on an
//! address of its own.
//!
//! This crate owns the admin HTTP server and what it answers. It reads the proxy only
//! through [`sluice_proxy::View`] snapshots, on a thread of its own, so a scrape never
//! runs on a worker and never takes a lock a request takes. It must never share a port
//! with proxied traffic (the config refuses that), and off loopback it answers nobody
//! without the configured bearer token, except for the dashboard's static files, which
//! hold no data (the data they show comes from the API, behind the token).

mod actions;
mod api;
mod dashboard;
mod exposition;
mod process;

pub use api::{Info, Reload};
pub use exposition::{render as render_metrics, CONTENT_TYPE as METRICS_CONTENT_TYPE};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use sluice_accept::{AcceptBackoff, Rarely};
use sluice_proxy::View;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

/// A running admin listener; it stops when this is dropped.
pub struct Admin {
    pub addr: SocketAddr,
    /// A copy of the listening socket, to hand to a new process (a binary upgrade);
    /// closed with the listener's own when this is dropped.
    socket: std::net::TcpListener,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Admin {
    /// A copy of the listening socket, for a new process to serve on (a binary upgrade).
    pub fn lend(&self) -> io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        self.socket.as_fd().try_clone_to_owned()
    }
}

impl Drop for Admin {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What each request is answered from.
pub(crate) struct State {
    view: View,
    info: Info,
    /// `[admin]` as configured: its token and its limits.
    config: sluice_config::Admin,
}

/// The most bytes a request head may take (hyper's read buffer, its smallest): the
/// admin API's requests are a line and a few fields.
const MAX_HEAD: usize = 8192;
/// The most fields a request head may have.
const MAX_FIELDS: usize = 64;
/// The longest a connection stays open, whatever it does: a client that reads a
/// response a byte a minute, or sends a body that slowly, is cut off here.
const MAX_LIFETIME: Duration = Duration::from_secs(60);
/// How long a request in flight at [`MAX_LIFETIME`] has to finish.
const LIFETIME_GRACE: Duration = Duration::from_secs(5);

/// Binds `config.bind` (an error names the address) and serves on a thread of its own.
pub fn start(config: &sluice_config::Admin, view: View, info: Info) -> io::Result<Admin> {
    start_with(config, None, view, info)
}

/// [`start`], serving on `inherited` when a previous sluice handed its admin socket
/// over (a binary upgrade), else on a socket bound now.
pub fn start_with(
    config: &sluice_config::Admin,
    inherited: Option<std::net::TcpListener>,
    view: View,
    info: Info,
) -> io::Result<Admin> {
    let listener = match inherited {
        Some(listener) => listener,
        None => std::net::TcpListener::bind(config.bind).map_err(|e| {
            io::Error::new(e.kind(), format!("admin listener on {}: {e}", config.bind))
        })?,
    };
    listener.set_nonblocking(true)?;
    let socket = listener.try_clone()?;
    let addr = listener.local_addr()?;
    let state = Arc::new(State {
        view,
        info,
        config: config.clone(),
    });
    let (stop, stopped) = watch::channel(false);
    let thread = std::thread::Builder::new()
        .name("sluice-admin".into())
        .spawn(move || serve(listener, state, stopped))?;
    tracing::info!(
        %addr,
        max_conns = config.max_conns,
        "admin listener serving /metrics, /api and the dashboard at /"
    );
    Ok(Admin {
        addr,
        socket,
        stop,
        thread: Some(thread),
    })
}

fn serve(listener: std::net::TcpListener, state: Arc<State>, mut stop: watch::Receiver<bool>) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return tracing::error!(cause = %e, "admin listener could not start"),
    };
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let name = format!(
            "admin listener {}",
            listener
                .local_addr()
                .map_or(String::new(), |a| a.to_string())
        );
        let mut backoff = AcceptBackoff::new(name);
        let max_conns = state.config.max_conns as usize;
        let slots = Arc::new(Semaphore::new(max_conns));
        let mut warned = Rarely::default();
        loop {
            let (stream, _) = tokio::select! {
                accepted = backoff.accept(&listener) => accepted,
                _ = stop.wait_for(|s| *s) => return,
            };
            // At the cap, closed at once: a flood of connections here holds at most
            // `max_conns` descriptors, and the proxy keeps the rest.
            let Ok(slot) = slots.clone().try_acquire_owned() else {
                if warned.due() {
                    warn_at_cap(max_conns);
                }
                continue;
            };
            tokio::spawn(connection(stream, state.clone(), slot));
        }
    });
}

/// Serves one connection within its limits: the head within `header_timeout` of the
/// start or of the previous response, at most [`MAX_HEAD`] bytes and [`MAX_FIELDS`]
/// fields, and the whole connection within [`MAX_LIFETIME`].
async fn connection(stream: tokio::net::TcpStream, state: Arc<State>, _slot: OwnedSemaphorePermit) {
    let header_timeout = state.config.header_timeout;
    let service = hyper::service::service_fn(move |req| answer(req, state.clone()));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEAD)
        .max_headers(MAX_FIELDS);
    let mut served = std::pin::pin!(http.serve_connection(TokioIo::new(stream), service));
    if tokio::time::timeout(MAX_LIFETIME, served.as_mut())
        .await
        .is_err()
    {
        // A request in flight (a dashboard's poll) is finished, then the connection
        // closes; a client that will not take its answer is cut off after a grace.
        served.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(LIFETIME_GRACE, served).await;
    }
}

/// Says that connections are closed at the cap.
fn warn_at_cap(max_conns: usize) {
    tracing::warn!(
        max_conns,
        "admin listener: {max_conns} connections open, its max_conns; new ones are closed at \
         once until some end (raise [admin] max_conns if these are your own clients)"
    );
}

pub(crate) type Reply = Response<Full<Bytes>>;

async fn answer(req: Request<Incoming>, state: Arc<State>) -> Result<Reply, Infallible> {
    if req.method() == Method::GET {
        if let Some(asset) = dashboard::asset(req.uri().path()) {
            return Ok(dashboard::reply(asset));
        }
    }
    if let Some(why) = foreign(&req, state.config.token.is_some()) {
        return Ok(json(
            StatusCode::FORBIDDEN,
            &serde_json::json!({ "error": why }),
        ));
    }
    if !authorized(&req, state.config.token.as_deref()) {
        let mut reply = json(
            StatusCode::UNAUTHORIZED,
            &serde_json::json!({"error": "a bearer token is required"}),
        );
        reply
            .headers_mut()
            .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return Ok(reply);
    }
    if req.method() == Method::POST {
        return Ok(actions::act(req.uri(), &state));
    }
    if req.method() != Method::GET {
        let error = serde_json::json!({"error": "only GET and POST are answered here"});
        return Ok(json(StatusCode::METHOD_NOT_ALLOWED, &error));
    }
    let view = &state.view;
    Ok(match req.uri().path() {
        "/metrics" => metrics(&req, view),
        "/api/status" => json(StatusCode::OK, &api::status(&view.snapshot(), &state.info)),
        "/api/upstreams" => json(StatusCode::OK, &api::upstreams(&view.snapshot())),
        path => not_found(path),
    })
}

pub(crate) fn not_found(path: &str) -> Reply {
    json(
        StatusCode::NOT_FOUND,
        &serde_json::json!({
            "error": format!("no such endpoint: {path}"),
            "endpoints": ["GET / (the dashboard)", "GET /metrics", "GET /api/status", "GET /api/upstreams", "POST /api/reload",
                          "POST /api/upstreams/NAME/servers/IP:PORT/drain[?lease=15s]", "POST /api/upstreams/NAME/servers/IP:PORT/undrain", "POST /api/upstreams/NAME/servers/IP:PORT/limit?max_conns=N&lease=15s", "POST /api/upstreams/NAME/servers/IP:PORT/unlimit"],
        }),
    )
}

/// OpenMetrics for a client that asks for it (Prometheus does), the classic text
/// format otherwise.
fn metrics(req: &Request<Incoming>, view: &View) -> Reply {
    let om = exposition::render(view);
    let wants_om = req
        .headers()
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/openmetrics-text"));
    if wants_om {
        text(om, exposition::CONTENT_TYPE)
    } else {
        text(exposition::classic(&om), exposition::CLASSIC_CONTENT_TYPE)
    }
}

/// Why a request may come from a web page rather than the operator, if it may: a
/// browser can reach a loopback admin listener from any site, so (without a token, which
/// a page cannot know) the `Host` must be an address or `localhost` (a DNS name
/// resolving to 127.0.0.1 is DNS rebinding), and a POST must not come from another
/// origin (a page's form posting to it).
fn foreign(req: &Request<Incoming>, has_token: bool) -> Option<String> {
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let host = header(hyper::header::HOST);
    if !has_token && !host.is_empty() && !is_local_host(host) {
        return Some(format!(
            "Host {host:?} is not this listener's address: use http://IP:PORT/ (or set a token)"
        ));
    }
    let origin = header(hyper::header::ORIGIN);
    let same = origin.strip_prefix("http://").is_some_and(|o| o == host);
    if req.method() == Method::POST && !origin.is_empty() && !same {
        return Some(format!(
            "a POST from {origin} (another site) is refused: run curl or sluice reload"
        ));
    }
    None
}

/// An IP address, or a name without a dot (`localhost`, a machine's own name), with or
/// without a port: no name a site on the Internet can point at 127.0.0.1.
fn is_local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.parse::<std::net::IpAddr>().is_ok() || !name.contains('.')
}

/// Whether the request carries the token (always, when there is none to carry).
fn authorized(req: &Request<Incoming>, token: Option<&str>) -> bool {
    let Some(token) = token else {
        return true;
    };
    let given = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    constant_time_eq(given.as_bytes(), token.as_bytes())
}

/// Compares without stopping at the first difference, so the time taken does not tell
/// how much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        diff |= usize::from(x ^ b.get(i % b.len().max(1)).copied().unwrap_or(0));
    }
    diff == 0
}

fn text(body: String, content_type: &'static str) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(body)));
    reply
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    reply
}

pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Reply {
    let body = serde_json::to_string_pretty(value).unwrap_or_default();
    let mut reply = text(body, "application/json");
    *reply.status_mut() = status;
    reply
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"0123456789abcdef", b"0123456789abcdef"));
        assert!(!constant_time_eq(b"0123456789abcdeX", b"0123456789abcdef"));
        assert!(!constant_time_eq(b"0123456789abcdef0", b"0123456789abcdef"));
        assert!(!constant_time_eq(b"", b"0123456789abcdef"));
    }
}
