//! Before a deployment's first step, a few requests to its target with the load
//! generator's own client (`sluice-bench`'s connection): a target that refuses
//! connections, fails TLS, does not answer in time, or answers only errors is refused
//! with its own words, before any step. Otherwise every step would run against nothing
//! and its fast failures would read as a throughput the generator could not exceed.

use sluice_bench::conn::{Connection, ExchangeError, MAX_CAPTURE};
use sluice_bench::scenario::{Action, Context, Scenario};
use sluice_bench::target::TargetError;
use sluice_bench::{RequestSpec, Target};
use std::time::Duration;
use tokio::time::{timeout_at, Instant};

/// Requests the probe sends: one answered well is enough, one failure is not (a
/// server starting up, a balancer whose first backend is down).
const ATTEMPTS: usize = 3;
/// How long the whole probe may take: a target that has not answered by then will
/// not answer a step's users either.
const WITHIN: Duration = Duration::from_secs(3);

/// Why the target cannot be measured.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("the target {url}: {source}")]
    Target {
        url: String,
        #[source]
        source: TargetError,
    },
    /// No answer at all: connection refused or reset, TLS failed, a timeout.
    #[error("the target {url} does not answer: {cause}")]
    NoAnswer { url: String, cause: String },
    /// Answers, but each was an error (a status outside 200-399).
    #[error("the target {url} answered only errors: {status}{}", body_line(.body))]
    OnlyErrors {
        url: String,
        /// `503 Service Unavailable`.
        status: String,
        body: String,
    },
}

fn body_line(body: &str) -> String {
    match body.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => format!(": {}", line.chars().take(200).collect::<String>()),
        None => String::new(),
    }
}

/// Probes `url` with the scenario's first HTTP request when there is one, else a GET.
pub fn probe(url: &str, scenario: Option<&Scenario>) -> Result<(), Refusal> {
    let target = Target::parse(url).map_err(|source| Refusal::Target {
        url: url.into(),
        source,
    })?;
    let request = first_request(target.clone(), scenario);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Refusal::NoAnswer {
            url: url.into(),
            cause: format!("starting the probe: {e}"),
        })?;
    runtime.block_on(attempts(&target, &request))
}

/// The request the steps' users send first: the scenario's first HTTP step (templates
/// filled for user 0), else `GET` of the URL's path.
fn first_request(target: Target, scenario: Option<&Scenario>) -> Vec<u8> {
    let http = scenario.and_then(|s| {
        s.all_steps().find_map(|step| match &step.action {
            Action::Http {
                method,
                path,
                headers,
                body,
                ..
            } => Some((method, path, headers, body)),
            _ => None,
        })
    });
    let Some((method, path, headers, body)) = http else {
        return get(target);
    };
    // Templates for user 0, before any value is extracted: a step that needs one
    // cannot go first, and the probe sends a GET instead.
    let cx = Context::bare(0, 0);
    let rendered = (|| {
        let mut t = target.clone();
        t.path = path.render(&cx).ok()?;
        let headers: Option<Vec<String>> = headers
            .iter()
            .map(|(n, v)| Some(format!("{n}: {}", v.render(&cx).ok()?)))
            .collect();
        let body = body.render(&cx).ok()?.into_bytes();
        // The scenario's parser has checked its steps: an error is not expected.
        RequestSpec::new(method, t, &headers?, body).ok()
    })();
    match rendered {
        Some(spec) => spec.encode(true),
        None => get(target),
    }
}

fn get(target: Target) -> Vec<u8> {
    let spec = RequestSpec {
        label: String::new(),
        method: "GET".into(),
        target,
        headers: Vec::new(),
        body: Vec::new(),
    };
    spec.encode(true)
}

/// Up to [`ATTEMPTS`] requests, each on a connection of its own, within [`WITHIN`].
async fn attempts(target: &Target, request: &[u8]) -> Result<(), Refusal> {
    let deadline = Instant::now() + WITHIN;
    let url = target.url.clone();
    let no_answer = |cause: String| Refusal::NoAnswer {
        url: url.clone(),
        cause,
    };
    // The OS's own words (`Connection refused (os error 111)`), which the generator's
    // error kinds shorten to a kind.
    match timeout_at(deadline, tokio::net::TcpStream::connect(target.addr)).await {
        Err(_) => return Err(no_answer(format!("connect {}: {}", target.addr, late()))),
        Ok(Err(e)) => return Err(no_answer(format!("connect {}: {e}", target.addr))),
        Ok(Ok(_)) => {}
    }
    let mut refused = None;
    for _ in 0..ATTEMPTS {
        match timeout_at(deadline, one(target, request)).await {
            Err(_) => return Err(refused.unwrap_or_else(|| no_answer(late()))),
            Ok(Err(e)) => return Err(refused.unwrap_or_else(|| no_answer(e.to_string()))),
            Ok(Ok((status, _))) if (200..400).contains(&status) => return Ok(()),
            Ok(Ok((status, body))) => {
                refused.get_or_insert(Refusal::OnlyErrors {
                    url: url.clone(),
                    status: status_line(status),
                    body: String::from_utf8_lossy(&body).into_owned(),
                });
            }
        }
    }
    Err(refused.unwrap_or_else(|| no_answer(late())))
}

fn late() -> String {
    format!("no answer within {} s", WITHIN.as_secs())
}

/// One request on a new connection: its status and body.
async fn one(target: &Target, request: &[u8]) -> Result<(u16, Vec<u8>), ExchangeError> {
    let (mut conn, _) = Connection::open(target, None, None).await?;
    let mut body = Vec::new();
    let reply = conn
        .exchange(request, false, Some((&mut body, MAX_CAPTURE)))
        .await?;
    Ok((reply.status, body))
}

/// `503 Service Unavailable`.
fn status_line(status: u16) -> String {
    let reason = hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason());
    match reason {
        Some(r) => format!("{status} {r}"),
        None => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A server answering every connection with `response`, on a port of its own.
    fn answering(response: &'static str) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut buf = [0; 4096];
                let _ = conn.read(&mut buf);
                let _ = conn.write_all(response.as_bytes());
            }
        });
        format!("http://{addr}/")
    }

    #[test]
    fn a_closed_port_is_refused_in_the_systems_words() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://127.0.0.1:{port}/");
        let said = probe(&url, None).unwrap_err().to_string();
        assert!(
            said.starts_with(&format!(
                "the target {url} does not answer: connect 127.0.0.1:{port}: "
            )),
            "{said}"
        );
        assert!(said.contains("refused"), "{said}");
    }

    #[test]
    fn only_errors_are_refused_with_the_status_and_the_body() {
        let url = answering(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 14\r\n\r\n\nno backends\n\n",
        );
        let said = probe(&url, None).unwrap_err().to_string();
        assert_eq!(
            said,
            format!("the target {url} answered only errors: 503 Service Unavailable: no backends")
        );
    }

    #[test]
    fn an_answer_in_the_ok_set_passes() {
        let url = answering("HTTP/1.1 302 Found\r\nLocation: /x\r\nContent-Length: 0\r\n\r\n");
        probe(&url, None).unwrap();
    }

    #[test]
    fn a_server_closing_without_an_answer_does_not_answer() {
        let url = answering("");
        let said = probe(&url, None).unwrap_err().to_string();
        assert_eq!(
            said,
            format!("the target {url} does not answer: closed before a whole response")
        );
    }
}
