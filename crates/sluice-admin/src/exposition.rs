//! `/metrics`: a snapshot of the proxy in the OpenMetrics text format, written by
//! `prometheus-client`'s encoder (names get their unit and `_total` from it). Every
//! value is computed at scrape time from the proxy's own counters; nothing is kept here.
//!
//! Label sets are bounded by the config: listeners, routes (host and path as written in
//! the config, never a request's path), upstreams and their servers.

use crate::process;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};
use sluice_proxy::metrics::{HistogramTotal, Refused, BUCKETS, REJECTS};
use sluice_proxy::{QueueView, ServerView, Snapshot, View};
use std::fmt::Error;
use std::time::UNIX_EPOCH;

/// The content type of what [`render`] writes.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The content type of [`classic`]'s text.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The same metrics in Prometheus' classic text format (0.0.4), for clients that do
/// not ask for OpenMetrics (curl, promtool, older servers). The two differ only in
/// their comments: a counter's `# HELP` and `# TYPE` name its `_total` samples, there is
/// no `# UNIT` and no `# EOF`. Samples are the same lines.
pub fn classic(openmetrics: &str) -> String {
    let mut counters = Vec::new();
    for line in openmetrics.lines() {
        if let Some(name) = line
            .strip_prefix("# TYPE ")
            .and_then(|rest| rest.strip_suffix(" counter"))
        {
            counters.push(name);
        }
    }
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        let comment = ["# HELP ", "# TYPE "]
            .into_iter()
            .find(|prefix| line.starts_with(prefix));
        match comment {
            Some(prefix) => {
                let rest = &line[prefix.len()..];
                let (name, tail) = rest.split_once(' ').unwrap_or((rest, ""));
                let suffix = if counters.contains(&name) {
                    "_total"
                } else {
                    ""
                };
                out.push_str(&format!("{prefix}{name}{suffix} {tail}\n"));
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The proxy's metrics, as text.
pub fn render(view: &View) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Metrics(view.clone())));
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

struct Metrics(View);

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("sluice metrics")
    }
}

impl Collector for Metrics {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), Error> {
        let s = self.0.snapshot();
        process::encode(&mut enc, &s)?;
        config(&mut enc, &s)?;
        listeners(&mut enc, &s)?;
        routes(&mut enc, &s)?;
        servers(&mut enc, &s)?;
        queues(&mut enc, &s)?;
        rate_limits(&mut enc, &s)?;
        dns(&mut enc, &s)?;
        histograms(&mut enc, &s)
    }
}

type Labels = Vec<(&'static str, String)>;

/// One metric family: `rows` are its label sets and values.
fn family(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: impl IntoIterator<Item = (Labels, u64)>,
) -> Result<(), Error> {
    let mut m = enc.encode_descriptor(name, help, None, kind)?;
    for (labels, value) in rows {
        let fam = m.encode_family(&labels)?;
        match kind {
            MetricType::Counter => ConstCounter::new(value).encode(fam)?,
            _ => ConstGauge::new(value as i64).encode(fam)?,
        }
    }
    Ok(())
}

/// A metric without labels (written without braces).
fn single(enc: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> Result<(), Error> {
    let m = enc.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(value as i64).encode(m)
}

fn config(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    // A gauge of 1 rather than OpenMetrics' info type, which Prometheus' classic text
    // parser (promtool, older servers) does not know.
    let version = vec![("version", env!("CARGO_PKG_VERSION").to_string())];
    family(
        enc,
        "sluice_build_info",
        "sluice's version, as a label",
        MetricType::Gauge,
        [(version, 1)],
    )?;
    single(
        enc,
        "sluice_config_generation",
        "Configurations applied since start (1: the first)",
        s.generation,
    )?;
    single(
        enc,
        "sluice_workers",
        "Worker threads serving requests",
        s.workers as u64,
    )?;
    single(
        enc,
        "sluice_client_connections",
        "Client connections open now, on every listener",
        s.client_connections,
    )?;
    single(
        enc,
        "sluice_client_connections_max",
        "The most client connections open at once (what the open-file limit leaves after a reserve); at it new ones wait in the listen queue",
        s.client_connections_max,
    )?;
    let reloads = [
        (vec![("result", "applied".to_string())], s.reloads),
        (vec![("result", "refused".to_string())], s.reload_failures),
    ];
    family(
        enc,
        "sluice_reloads",
        "Reloads, applied or refused (the old config kept)",
        MetricType::Counter,
        reloads,
    )?;
    let last = s
        .last_reload
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0.0, |d| d.as_secs_f64());
    let m = enc.encode_descriptor(
        "sluice_last_reload_timestamp",
        "When the last reload was tried (Unix time; 0: none yet)",
        Some(&Unit::Seconds),
        MetricType::Gauge,
    )?;
    ConstGauge::new(last).encode(m)
}

fn listeners(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let label = |l: &sluice_proxy::ListenerView| vec![("listener", l.bind.to_string())];
    let counter = MetricType::Counter;
    let rows = s.listeners.iter().map(|l| (label(l), l.totals.accepted));
    family(
        enc,
        "sluice_listener_connections_accepted",
        "Client connections accepted",
        counter,
        rows,
    )?;
    let rows = s.listeners.iter().map(|l| (label(l), l.totals.open));
    family(
        enc,
        "sluice_listener_connections_open",
        "Client connections open now",
        MetricType::Gauge,
        rows,
    )?;
    let rows = s.listeners.iter().map(|l| (label(l), l.totals.tls_failed));
    family(
        enc,
        "sluice_listener_tls_handshake_failures",
        "TLS handshakes that failed or timed out (not counted as accepted connections)",
        counter,
        rows,
    )?;
    let rows = s.listeners.iter().map(|l| (label(l), l.totals.requests));
    family(
        enc,
        "sluice_listener_requests",
        "Requests read on the listener",
        counter,
        rows,
    )?;
    let rows = s.listeners.iter().flat_map(|l| {
        let statuses = REJECTS
            .iter()
            .map(|s| s.to_string())
            .chain(["other".to_string()]);
        statuses.zip(l.totals.rejects).map(move |(status, n)| {
            let mut labels = label(l);
            labels.push(("status", status));
            (labels, n)
        })
    });
    family(
        enc,
        "sluice_listener_rejects",
        "Requests sluice answered itself, by status: 400 malformed, 404 no route, 408 too slow, 429 over a rate limit, 431 head too large, 503 no server, ...",
        counter,
        rows,
    )
}

fn routes(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let rows = s.routes.iter().flat_map(|r| {
        CLASSES.iter().zip(r.responses).map(move |(class, n)| {
            let labels = vec![
                ("route", r.name.clone()),
                ("upstream", r.upstream.clone()),
                ("code", class.to_string()),
            ];
            (labels, n)
        })
    });
    family(
        enc,
        "sluice_route_requests",
        "Requests by route and the status class the client got",
        MetricType::Counter,
        rows,
    )?;
    let guarded = s.routes.iter().flat_map(|r| {
        Refused::ALL.iter().zip(r.refused).map(move |(why, n)| {
            let labels = vec![
                ("route", r.name.clone()),
                ("reason", why.label().to_string()),
            ];
            (labels, n)
        })
    });
    family(
        enc,
        "sluice_route_refused",
        "Requests a route's guards refused: address (403, its access rules) or credentials (401, auth_basic)",
        MetricType::Counter,
        guarded,
    )
}

/// Every server of every upstream, with its labels.
fn each_server(s: &Snapshot) -> impl Iterator<Item = (Labels, &sluice_proxy::ServerView)> {
    s.upstreams.iter().flat_map(|u| {
        u.servers.iter().map(move |sv| {
            let labels = vec![
                ("upstream", u.name.clone()),
                ("server", sv.addr.to_string()),
            ];
            (labels, sv)
        })
    })
}

/// A metric with a value per server: name, help, type, and how to read it.
type PerServer = (
    &'static str,
    &'static str,
    MetricType,
    fn(&ServerView) -> u64,
);

fn servers(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let rows = each_server(s).flat_map(|(labels, sv)| {
        CLASSES
            .iter()
            .zip(sv.totals.responses)
            .map(move |(class, n)| {
                let mut l = labels.clone();
                l.push(("code", class.to_string()));
                (l, n)
            })
    });
    let counter = MetricType::Counter;
    let gauge = MetricType::Gauge;
    family(enc, "sluice_upstream_requests", "Attempts on a server by the status class they ended with (a failure without a response: 502 or 504)", counter, rows)?;
    let simple: [PerServer; 9] = [
        ("sluice_upstream_idle_connections", "Idle pooled connections to the server's address (upstreams listing the same address share them)", gauge, |v| v.idle_pooled),
        (
            "sluice_upstream_requests_in_flight",
            "Requests and tunnels on the server now",
            gauge,
            |v| u64::from(v.in_flight),
        ),
        (
            "sluice_upstream_connections_opened",
            "Connections opened to the server (attempts minus these reused a pooled one)",
            counter,
            |v| v.totals.connections_opened,
        ),
        (
            "sluice_upstream_up",
            "1 when requests may go to the server (health checks pass and not ejected)",
            gauge,
            |v| u64::from(v.up()),
        ),
        (
            "sluice_upstream_ejected",
            "1 while the server is ejected after repeated failures",
            gauge,
            |v| u64::from(v.ejected_for.is_some()),
        ),
        (
            "sluice_upstream_weight",
            "The server's configured weight",
            gauge,
            |v| u64::from(v.weight),
        ),
        (
            "sluice_upstream_retries",
            "Attempts that failed on the server and went to another",
            counter,
            |v| v.totals.retries,
        ),
        (
            "sluice_upstream_retry_budget_exhausted",
            "Retries refused after a failure on the server because the retry budget was empty",
            counter,
            |v| v.totals.budget_exhausted,
        ),
        (
            "sluice_upstream_tunnels_open",
            "WebSocket and other upgraded connections open to the server",
            gauge,
            |v| v.totals.tunnels_open,
        ),
    ];
    for (name, help, kind, value) in simple {
        family(
            enc,
            name,
            help,
            kind,
            each_server(s).map(|(l, sv)| (l, value(sv))),
        )?;
    }
    let causes = sluice_proxy::metrics::EjectCause::ALL;
    let rows = each_server(s).flat_map(|(labels, sv)| {
        causes.iter().map(move |c| {
            let mut l = labels.clone();
            l.push(("cause", c.name().to_string()));
            (l, sv.totals.ejections[*c as usize])
        })
    });
    family(
        enc,
        "sluice_upstream_ejections",
        "Ejections of the server after repeated failures, by the last failure's cause",
        counter,
        rows,
    )
}

fn histograms(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    type Pick = fn(&sluice_proxy::ServerView) -> &HistogramTotal;
    let all: [(&str, &str, Pick); 3] = [
        (
            "sluice_upstream_connect_duration",
            "Time to connect to the server",
            |v| &v.totals.connect,
        ),
        (
            "sluice_upstream_first_byte_duration",
            "From the attempt's start (connect included) to the server's whole response head",
            |v| &v.totals.first_byte,
        ),
        (
            "sluice_upstream_request_duration",
            "From the attempt's start to the response's last byte, or the failure",
            |v| &v.totals.total,
        ),
    ];
    for (name, help, pick) in all {
        let rows = each_server(s).map(|(labels, sv)| (labels, pick(sv)));
        seconds_histogram(enc, name, help, rows)?;
    }
    Ok(())
}

/// A histogram family in seconds: `rows` are its label sets and counts.
fn seconds_histogram<'h>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, &'h HistogramTotal)>,
) -> Result<(), Error> {
    let mut m = enc.encode_descriptor(name, help, Some(&Unit::Seconds), MetricType::Histogram)?;
    for (labels, h) in rows {
        let bounds = BUCKETS.iter().copied().chain([f64::INFINITY]);
        let buckets: Vec<(f64, u64)> = bounds.zip(h.buckets).collect();
        m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
            h.sum_seconds,
            h.count(),
            &buckets,
            None,
        )?;
    }
    Ok(())
}

/// Server names followed in DNS: lookups answered or not, and the servers each gives.
fn dns(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let label = |d: &sluice_proxy::DnsView, result: Option<&str>| {
        let mut l = vec![("upstream", d.upstream.clone()), ("name", d.name.clone())];
        l.extend(result.map(|r| ("result", r.to_string())));
        l
    };
    let rows = s.dns.iter().flat_map(|d| {
        [
            (label(d, Some("answered")), d.lookups - d.failures),
            (label(d, Some("failed")), d.failures),
        ]
    });
    family(
        enc,
        "sluice_dns_lookups",
        "Lookups of a server name followed in DNS; a failed one keeps the servers found before",
        MetricType::Counter,
        rows,
    )?;
    let rows = s.dns.iter().map(|d| (label(d, None), d.servers));
    family(
        enc,
        "sluice_dns_servers",
        "Servers a name followed in DNS gives now",
        MetricType::Gauge,
        rows,
    )
}

/// The rate limits: requests refused, and clients tracked.
fn rate_limits(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let label = |l: &sluice_proxy::LimitView| vec![("limit", l.name.clone())];
    let rows = s.limits.iter().map(|l| (label(l), l.rejected));
    family(
        enc,
        "sluice_limit_rejected",
        "Requests refused with 429 by the rate limit",
        MetricType::Counter,
        rows,
    )?;
    let rows = s.limits.iter().map(|l| (label(l), l.keys));
    family(
        enc,
        "sluice_limit_keys",
        "Clients (keys) the rate limit holds state for now",
        MetricType::Gauge,
        rows,
    )
}

/// The queues of upstreams whose servers have `max_conns`, and those limits.
fn queues(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let limits = each_server(s).filter_map(|(l, sv)| sv.max_conns.map(|m| (l, u64::from(m))));
    family(
        enc,
        "sluice_upstream_max_conns",
        "The server's concurrency limit now: its max_conns, or its adaptive limit (limit = \"adaptive\")",
        MetricType::Gauge,
        limits,
    )?;
    type PerQueue = (
        &'static str,
        &'static str,
        MetricType,
        fn(&QueueView) -> u64,
    );
    let all: [PerQueue; 3] = [
        (
            "sluice_upstream_queue_length",
            "Requests waiting for a server below its max_conns",
            MetricType::Gauge,
            |q| q.waiting,
        ),
        (
            "sluice_upstream_queue_timeouts",
            "Requests answered 503 because no server had room within queue_timeout",
            MetricType::Counter,
            |q| q.timeouts,
        ),
        (
            "sluice_upstream_queue_rejected",
            "Requests answered 503 at once because the queue was full (max_queue)",
            MetricType::Counter,
            |q| q.rejected,
        ),
    ];
    for (name, help, kind, value) in all {
        let rows = s
            .upstreams
            .iter()
            .map(|u| (vec![("upstream", u.name.clone())], value(&u.queue)));
        family(enc, name, help, kind, rows)?;
    }
    let name = "sluice_upstream_queue_wait_duration";
    let help = "How long requests waited in the upstream's queue, however the wait ended";
    let rows = s
        .upstreams
        .iter()
        .map(|u| (vec![("upstream", u.name.clone())], &u.queue.wait));
    seconds_histogram(enc, name, help, rows)
}

#[cfg(test)]
mod tests {
    use super::classic;

    #[test]
    fn the_classic_format_names_counters_by_their_samples() {
        let om = "# HELP sluice_reloads Reloads.\n# TYPE sluice_reloads counter\nsluice_reloads_total{result=\"applied\"} 2\n# HELP sluice_x_duration_seconds X.\n# TYPE sluice_x_duration_seconds histogram\n# UNIT sluice_x_duration_seconds seconds\nsluice_x_duration_seconds_count 1\n# EOF\n";
        assert_eq!(
            classic(om),
            "# HELP sluice_reloads_total Reloads.\n# TYPE sluice_reloads_total counter\nsluice_reloads_total{result=\"applied\"} 2\n# HELP sluice_x_duration_seconds X.\n# TYPE sluice_x_duration_seconds histogram\nsluice_x_duration_seconds_count 1\n"
        );
    }
}
