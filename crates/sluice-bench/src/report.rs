//! Results as users of JMeter and nGrinder know them: samples, mean, min, max, standard
//! deviation (population), error %, throughput, KiB/s, plus HdrHistogram percentiles, a
//! per-second series and peak TPS, per step and per label.
//!
//! The JSON field names are an interface (other tools and `sluice bench merge` read
//! them): add fields, never rename. Each step also carries its histograms, serialized
//! (HdrHistogram V2 + DEFLATE, base64), so results of several generators merge by their
//! histograms, never by averaging percentiles.

use crate::delivery::DeliverySummary;
use crate::plan::{Length, Load};
use crate::runner::StepRun;
use crate::stats::{Connections, Failure, Latency, Tally};
use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub tool: String,
    /// What each request was: its label and URL.
    pub requests: Vec<RequestInfo>,
    /// `closed` (users) or `open` (rate).
    pub model: String,
    /// What the requests spoke: `http/1.1`, or `h2` with `--h2` (and how many streams
    /// at once per connection).
    #[serde(default = "http11")]
    pub protocol: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub streams_per_connection: Option<usize>,
    /// The run was interrupted (Ctrl-C): the last step holds what was measured until then.
    pub interrupted: bool,
    pub steps: Vec<StepReport>,
}

fn http11() -> String {
    "http/1.1".into()
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestInfo {
    pub label: String,
    pub method: String,
    pub url: String,
    pub weight: u32,
}

/// One step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepReport {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub users: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rate: Option<f64>,
    /// The `rate` is of a scenario's users arriving each second (each running its
    /// steps), not of requests.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub arrivals: bool,
    /// Wall time of the step, from its start until its last request completed.
    pub duration_s: f64,
    pub started_unix_ms: u64,
    #[serde(flatten)]
    pub summary: Summary,
    /// Requests an open-model step meant to send but could not before it ended.
    pub missed: u64,
    /// The open model's widest beat (ms) when the generator's wake-ups ran late and its
    /// pace was widened to send what fell due in fewer, larger batches.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub widened_pace_ms: Option<f64>,
    pub per_second: Vec<SecondReport>,
    pub labels: BTreeMap<String, Summary>,
    /// STOMP message delivery, for a scenario that speaks STOMP.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub delivery: Option<DeliveryReport>,
    /// The connections the step opened and their TLS handshakes (absent from results
    /// written before they were counted).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub connections: Option<ConnectionsReport>,
    /// What the reader should know before trusting the figures (most responses were
    /// redirects, ...).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What the step cost the generator itself (absent from merged results).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub generator: Option<GeneratorReport>,
    pub interrupted: bool,
}

/// The connections of a step: how many were opened, and their TLS handshakes (the cost
/// a front door pays per new client: `--no-keepalive` makes one per request).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ConnectionsReport {
    pub opened: u64,
    pub tls_handshakes: u64,
    /// Handshakes that resumed a session (`--tls-resume on`).
    pub tls_resumed: u64,
    /// Full and resumed handshakes per second over the step.
    pub tls_handshakes_per_s: f64,
    /// Each handshake's time, from the ClientHello to its end (the TCP connect before it
    /// not included).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub handshake: Option<Latencies>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hdr_handshake: Option<String>,
    /// HTTP/2: connections the server ended with GOAWAY, and streams it reset.
    #[serde(default)]
    pub h2_goaways: u64,
    #[serde(default)]
    pub h2_resets: u64,
}

impl ConnectionsReport {
    pub fn of(c: &Connections, elapsed_s: f64) -> ConnectionsReport {
        let handshakes = c.handshakes.moments.count;
        let tls = handshakes > 0;
        ConnectionsReport {
            opened: c.opened,
            tls_handshakes: handshakes,
            tls_resumed: c.resumed,
            tls_handshakes_per_s: (handshakes as f64 / elapsed_s.max(1e-6) * 100.0).round() / 100.0,
            handshake: tls.then(|| Latencies::of(&c.handshakes)),
            hdr_handshake: tls.then(|| encode_histogram(&c.handshakes.histogram)),
            h2_goaways: c.goaways,
            h2_resets: c.resets,
        }
    }
}

/// The generator's own memory over a step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GeneratorReport {
    /// Resident memory before the step, KiB.
    pub rss_before_kib: u64,
    /// Its peak during the step (sampled every 100 ms), KiB.
    pub rss_peak_kib: u64,
    /// For users: the growth over the step divided by its users (an idle user's cost,
    /// when the users mostly think). It includes the step's fixed costs (threads, event
    /// loops, the allocator's arenas): telling with thousands of users only.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kib_per_user: Option<f64>,
}

/// STOMP messages of a step: each SEND is expected at every user subscribed to its
/// destination; each copy arrived (with its latency from the SEND) or was lost.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DeliveryReport {
    /// SENDs written.
    pub messages: u64,
    /// Copies due: each SEND times the subscribers of its destination then.
    pub expected: u64,
    pub delivered: u64,
    /// Copies due that had not arrived when the step ended.
    pub lost: u64,
    pub lost_pct: f64,
    /// Copies that arrived where none was due (a subscription not yet confirmed by its
    /// receipt, or a duplicate).
    pub unexpected: u64,
    /// From just before the SEND was written to each copy's arrival.
    #[serde(flatten)]
    pub latency: Latencies,
    /// Delivered copies per second over the step.
    pub delivered_per_s: f64,
    pub hdr: String,
}

impl DeliveryReport {
    pub fn of(d: &DeliverySummary, elapsed_s: f64) -> DeliveryReport {
        DeliveryReport {
            messages: d.messages,
            expected: d.expected,
            delivered: d.delivered,
            lost: d.lost,
            lost_pct: if d.expected == 0 {
                0.0
            } else {
                (d.lost as f64 * 10_000.0 / d.expected as f64).round() / 100.0
            },
            unexpected: d.unexpected,
            latency: Latencies::of(&d.latency),
            delivered_per_s: (d.delivered as f64 / elapsed_s.max(1e-6) * 100.0).round() / 100.0,
            hdr: encode_histogram(&d.latency.histogram),
        }
    }
}

/// The figures of a set of samples.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub samples: u64,
    pub errors: u64,
    pub error_pct: f64,
    #[serde(flatten)]
    pub latency: Latencies,
    /// Samples per second from the first send to the last completion (JMeter's).
    pub throughput_rps: f64,
    /// The busiest whole second.
    pub peak_tps: u64,
    pub received_kib_s: f64,
    pub sent_kib_s: f64,
    pub received_bytes: u64,
    pub sent_bytes: u64,
    /// From the first send to the last completion (what throughput divides by).
    pub span_s: f64,
    pub error_kinds: BTreeMap<String, u64>,
    /// Responses by status code (`"200": n`), errors or not; a transport error has none.
    #[serde(default)]
    pub statuses: BTreeMap<String, u64>,
    /// The same by class (`"2xx": n`).
    #[serde(default)]
    pub status_classes: BTreeMap<String, u64>,
    /// Where redirects pointed (`Location`: count), the first 8 distinct targets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub redirects: BTreeMap<String, u64>,
    /// The first failure of each kind (at most 5): its request, the cookies it sent
    /// and the response's start (a scenario's users keep them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<Failure>,
    /// Latency from when each request was actually sent: what a tool without
    /// coordinated-omission correction reports. Equal to the above for users.
    pub uncorrected: Latencies,
    /// How late requests went out after their intended time (open model): the
    /// generator's own timing (tens of µs, see `pacer.rs`) and waits for a free
    /// in-flight slot. Zero for users.
    pub send_lag: Latencies,
    /// The latency histograms, serialized (HdrHistogram V2 + DEFLATE, base64; µs).
    pub hdr: String,
    pub hdr_uncorrected: String,
    pub hdr_send_lag: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Latencies {
    pub mean_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub stddev_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SecondReport {
    pub second: u64,
    pub requests: u64,
    pub errors: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// This second's latency histogram, serialized like the step's.
    pub hdr: String,
}

fn ms(us: f64) -> f64 {
    (us / 1000.0 * 1000.0).round() / 1000.0
}

/// The latency at quantile `q`, ms. HdrHistogram answers with its bucket's highest
/// equivalent value, which can lie above the largest sample (a p99.9 of 6.4 ms beside a
/// max of 6.3): it is kept within the exact min and max the moments hold.
fn quantile_ms(l: &Latency, q: f64) -> f64 {
    if l.histogram.is_empty() {
        return 0.0;
    }
    let at = l.histogram.value_at_quantile(q);
    ms(at.min(l.moments.max_us).max(l.moments.min_us) as f64)
}

impl Latencies {
    pub fn of(l: &Latency) -> Latencies {
        let q = |q: f64| quantile_ms(l, q);
        Latencies {
            mean_ms: ms(l.moments.mean_us()),
            min_ms: ms(l.moments.min_us as f64),
            max_ms: ms(l.moments.max_us as f64),
            stddev_ms: ms(l.moments.stddev_us()),
            p50_ms: q(0.50),
            p90_ms: q(0.90),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
        }
    }
}

/// A histogram as base64 of its V2 + DEFLATE serialization.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    // Writing to a Vec cannot fail.
    let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

impl Summary {
    fn of(t: &Tally, elapsed_s: f64) -> Summary {
        let samples = t.samples();
        let span_s = t
            .first_start_us
            .map_or(0.0, |first| {
                t.last_end_us.saturating_sub(first) as f64 / 1e6
            })
            .max(1e-6);
        let whole = (elapsed_s.floor() as usize).max(1).min(t.seconds.len());
        let per = |bytes: u64| (bytes as f64 / 1024.0 / span_s * 100.0).round() / 100.0;
        Summary {
            samples,
            errors: t.errors,
            error_pct: if samples == 0 {
                0.0
            } else {
                (t.errors as f64 * 10_000.0 / samples as f64).round() / 100.0
            },
            latency: Latencies::of(&t.corrected),
            throughput_rps: if samples == 0 {
                0.0
            } else {
                (samples as f64 / span_s * 100.0).round() / 100.0
            },
            peak_tps: t.seconds[..whole]
                .iter()
                .map(|s| s.requests)
                .max()
                .unwrap_or(0),
            received_kib_s: per(t.bytes_in),
            sent_kib_s: per(t.bytes_out),
            received_bytes: t.bytes_in,
            sent_bytes: t.bytes_out,
            span_s: if samples == 0 {
                0.0
            } else {
                (span_s * 1e6).round() / 1e6
            },
            error_kinds: t.error_kinds.clone(),
            statuses: t
                .statuses
                .iter()
                .map(|(code, n)| (code.to_string(), *n))
                .collect(),
            status_classes: classes(&t.statuses),
            redirects: t.locations.clone(),
            failures: t.failures.clone(),
            uncorrected: Latencies::of(&t.sent),
            send_lag: Latencies::of(&t.send_lag),
            hdr: encode_histogram(&t.corrected.histogram),
            hdr_uncorrected: encode_histogram(&t.sent.histogram),
            hdr_send_lag: encode_histogram(&t.send_lag.histogram),
        }
    }
}

impl StepReport {
    pub fn of(run: &StepRun) -> StepReport {
        let elapsed_s = run.elapsed.as_secs_f64();
        let (users, rate) = match run.step.load {
            Load::Users { users, .. } => (Some(users), None),
            Load::Rate { rate, .. } => (None, Some(rate)),
        };
        let t = &run.recorder.total;
        let summary = Summary::of(t, elapsed_s);
        StepReport {
            warnings: out_of_rows(run.recorder.out_of_rows),
            users,
            rate,
            arrivals: false,
            duration_s: (elapsed_s * 1000.0).round() / 1000.0,
            started_unix_ms: run
                .started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            summary,
            missed: run.recorder.missed,
            widened_pace_ms: (!run.recorder.widest_beat.is_zero())
                .then_some(run.recorder.widest_beat.as_secs_f64() * 1000.0),
            connections: Some(ConnectionsReport::of(&run.recorder.connections, elapsed_s)),
            per_second: t
                .seconds
                .iter()
                .enumerate()
                .map(|(i, s)| SecondReport {
                    second: i as u64,
                    requests: s.requests,
                    errors: s.errors,
                    mean_ms: ms(s.latency.moments.mean_us()),
                    p50_ms: quantile_ms(&s.latency, 0.5),
                    p99_ms: quantile_ms(&s.latency, 0.99),
                    max_ms: ms(s.latency.moments.max_us as f64),
                    hdr: encode_histogram(&s.latency.histogram),
                })
                .collect(),
            labels: run
                .recorder
                .labels
                .iter()
                .map(|(label, t)| (label.clone(), Summary::of(t, elapsed_s)))
                .collect(),
            delivery: run
                .delivery
                .as_ref()
                .map(|d| DeliveryReport::of(d, elapsed_s)),
            generator: run.memory.map(|(before, peak)| GeneratorReport {
                rss_before_kib: before,
                rss_peak_kib: peak,
                kib_per_user: users
                    .map(|u| ((peak - before) as f64 / u as f64 * 100.0).round() / 100.0),
            }),
            interrupted: run.interrupted,
        }
    }
}

/// Counts by status class (`2xx`) of counts by status code.
pub fn classes<K: ToString>(statuses: &BTreeMap<K, u64>) -> BTreeMap<String, u64> {
    let mut classes = BTreeMap::new();
    for (code, n) in statuses {
        let code = code.to_string();
        let class = format!("{}xx", &code[..1]);
        *classes.entry(class).or_default() += n;
    }
    classes
}

/// A warning when at least half of a step's responses were redirects: a load test of a
/// redirect measures the redirect, not the page (a plain listener that sends every
/// client to HTTPS answers fast and never errs).
pub fn redirect_warning(s: &Summary) -> Option<String> {
    let redirects = s.status_classes.get("3xx").copied().unwrap_or(0);
    if redirects == 0 || redirects * 2 < s.samples {
        return None;
    }
    let (status, _) = s
        .statuses
        .iter()
        .filter(|(code, _)| code.starts_with('3'))
        .max_by_key(|(_, n)| **n)?;
    let whole = if redirects == s.samples {
        format!("all {redirects} responses were {status}")
    } else {
        let pct = redirects as f64 * 100.0 / s.samples as f64;
        format!(
            "{redirects} of {} responses ({pct:.1}%) were redirects, most {status}",
            s.samples
        )
    };
    let to = s.redirects.iter().max_by_key(|(_, n)| **n).map(|(l, _)| l);
    let hint = match to {
        Some(l) if l.to_ascii_lowercase().starts_with("https://") => "did you mean https://?",
        _ => "the redirects were measured, not the pages they point to",
    };
    let to = to.map(|l| format!(" to {l}")).unwrap_or_default();
    Some(format!(
        "{whole}{to}: {hint} (redirects count as success; --ok-status 200-299 counts them as errors)"
    ))
}

/// How a step is named in the table.
pub fn step_name(s: &StepReport) -> String {
    match (s.users, s.rate) {
        (Some(u), _) => format!("{u} users"),
        (_, Some(r)) if s.arrivals => format!("{r} users/s"),
        (_, Some(r)) => format!("{r} req/s"),
        _ => "-".into(),
    }
}

/// The terminal table: one row per step (and per label when there are several).
pub fn table(report: &Report) -> String {
    let mut out = String::from(
        "step            label                 samples    err%   mean ms    min ms    max ms  stddev ms   p50 ms   p90 ms   p95 ms   p99 ms  p99.9 ms     req/s  peak TPS  recv KiB/s  sent KiB/s\n",
    );
    for step in &report.steps {
        let mut rows = vec![("all".to_string(), &step.summary)];
        if step.labels.len() > 1 {
            rows.extend(step.labels.iter().map(|(l, s)| (l.clone(), s)));
        }
        for (label, s) in rows {
            let l = &s.latency;
            out.push_str(&format!(
                "{:<15} {:<20} {:>8} {:>7.2} {:>9.3} {:>9.3} {:>9.3} {:>10.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>9.1} {:>9} {:>11.1} {:>11.1}\n",
                step_name(step), truncate(&label, 20), s.samples, s.error_pct, l.mean_ms, l.min_ms, l.max_ms, l.stddev_ms,
                l.p50_ms, l.p90_ms, l.p95_ms, l.p99_ms, l.p999_ms, s.throughput_rps, s.peak_tps, s.received_kib_s, s.sent_kib_s
            ));
        }
        if step.missed > 0 {
            out.push_str(&format!("{:<15} {} requests missed: their time came and they could not be sent before the step ended (raise --max-in-flight)\n", step_name(step), step.missed));
        }
        if step.rate.is_some() {
            let u = &step.summary.uncorrected;
            out.push_str(&format!(
                "{:<15} uncorrected (from the actual send, as tools without coordinated-omission correction report): p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms\n",
                step_name(step), u.p50_ms, u.p99_ms, u.p999_ms, u.max_ms
            ));
            let lag = &step.summary.send_lag;
            out.push_str(&format!(
                "{:<15} send lag (how late requests went out after their intended time): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms\n",
                step_name(step), lag.p50_ms, lag.p99_ms, lag.max_ms
            ));
            if let Some(beat) = step.widened_pace_ms {
                out.push_str(&format!(
                    "{:<15} the generator's wake-ups ran late (its CPU taken by others): it sent in batches up to {beat:.0} ms apart, each request timed from its batch's time\n",
                    step_name(step)
                ));
            }
        }
        if let Some(d) = &step.delivery {
            out.push_str(&format!(
                "{:<15} STOMP delivery: {} messages, {} copies due, {} delivered, {} lost ({:.2}%), {} unexpected; latency p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms\n",
                step_name(step), d.messages, d.expected, d.delivered, d.lost, d.lost_pct, d.unexpected,
                d.latency.p50_ms, d.latency.p99_ms, d.latency.max_ms
            ));
        }
        if let Some(g) = &step.generator {
            // Per user only with enough users to outweigh the step's fixed costs
            // (threads, event loops, the allocator's arenas).
            let per_user = match (g.kib_per_user, step.users) {
                (Some(k), Some(users)) if users >= 1000 => {
                    format!(", {k:.1} KiB more per user")
                }
                _ => String::new(),
            };
            out.push_str(&format!(
                "{:<15} generator memory: {:.1} MiB resident at peak{per_user}\n",
                step_name(step),
                g.rss_peak_kib as f64 / 1024.0
            ));
        }
        if let Some(c) = step.connections.as_ref().filter(|c| c.tls_handshakes > 0) {
            out.push_str(&format!("{:<15} {}\n", step_name(step), tls_line(c)));
        }
        if let Some(c) = step
            .connections
            .as_ref()
            .filter(|c| c.h2_goaways + c.h2_resets > 0)
        {
            out.push_str(&format!(
                "{:<15} HTTP/2: {} connections ended by the server (GOAWAY), {} streams reset by it (RST_STREAM)\n",
                step_name(step), c.h2_goaways, c.h2_resets
            ));
        }
        if let Some(line) = statuses_line(&step.summary) {
            out.push_str(&format!("{:<15} {line}\n", step_name(step)));
        }
        for (kind, n) in &step.summary.error_kinds {
            out.push_str(&format!("{:<15} errors: {n} x {kind}\n", step_name(step)));
        }
        for (label, summary) in &step.labels {
            for f in &summary.failures {
                out.push_str(&failure_text(&step_name(step), label, f));
            }
        }
        for warning in &step.warnings {
            out.push_str(&format!("{:<15} warning: {warning}\n", step_name(step)));
        }
    }
    if report.interrupted {
        out.push_str("interrupted: the last step holds what was measured until then\n");
    }
    out
}

/// What a step says when users ended for want of a data row.
fn out_of_rows(users: u64) -> Vec<String> {
    match users {
        0 => Vec::new(),
        n => vec![format!("{n} users ended (or never began) for want of a row: the scenario's data ran out (recycle = false)")],
    }
}

/// A failure's details in two lines: what failed, the request and its cookies; the
/// response's status line and the start of its body.
fn failure_text(step: &str, label: &str, f: &Failure) -> String {
    let mut out = format!("{step:<15} first {:?} in {label}: {}", f.error, f.request);
    if let Some(cookies) = &f.cookies {
        out.push_str(&format!(" (Cookie: {cookies})"));
    }
    out.push('\n');
    let (head, body) = f
        .response
        .split_once("\r\n\r\n")
        .unwrap_or((&f.response, ""));
    let status_line = head.lines().next().unwrap_or_default();
    let body: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let body: String = body.chars().take(160).collect();
    if !status_line.is_empty() {
        out.push_str(&format!("{:<15}   answered {status_line} {body}\n", ""));
    }
    out
}

/// `TLS: 1200 handshakes (1100 resumed), 240.0/s; handshake p50 .. ms, ...`
fn tls_line(c: &ConnectionsReport) -> String {
    let mut line = format!(
        "TLS: {} handshakes ({} resumed), {:.1}/s, {} connections",
        c.tls_handshakes, c.tls_resumed, c.tls_handshakes_per_s, c.opened
    );
    if let Some(h) = &c.handshake {
        line.push_str(&format!(
            "; handshake p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            h.p50_ms, h.p99_ms, h.max_ms
        ));
    }
    line
}

/// `statuses: 200 x 9900, 503 x 100 (2xx 99.0%, 5xx 1.0%)`, when responses came.
pub fn statuses_line(s: &Summary) -> Option<String> {
    let total: u64 = s.statuses.values().sum();
    if total == 0 {
        return None;
    }
    let codes: Vec<String> = s
        .statuses
        .iter()
        .map(|(c, n)| format!("{c} x {n}"))
        .collect();
    let classes: Vec<String> = s
        .status_classes
        .iter()
        .map(|(c, n)| format!("{c} {:.1}%", *n as f64 * 100.0 / total as f64))
        .collect();
    Some(format!(
        "statuses: {} ({})",
        codes.join(", "),
        classes.join(", ")
    ))
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let cut: String = s.chars().take(n - 1).collect();
        format!("{cut}~")
    }
}

/// The step's length as written: `30s` or `100 iterations`.
pub fn length_text(length: Length) -> String {
    match length {
        Length::Duration(d) => format!("{}s", d.as_secs_f64()),
        Length::Iterations(n) => format!("{n} iterations"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{Recorder, Sample};

    #[test]
    fn percentiles_never_read_above_the_largest_sample() {
        // 6,353 µs lies inside an HdrHistogram bucket (3 significant digits) whose
        // highest equivalent value is 6,355: read raw, p99.9 would be above the max.
        let mut l = crate::stats::Latency::default();
        for _ in 0..999 {
            l.record(std::time::Duration::from_micros(1_000));
        }
        l.record(std::time::Duration::from_micros(6_353));
        assert!(
            l.histogram.value_at_quantile(0.9999) > 6_353,
            "the bucket's top"
        );
        let got = Latencies::of(&l);
        assert_eq!(got.max_ms, 6.353);
        assert!(
            got.p999_ms <= got.max_ms,
            "{} > {}",
            got.p999_ms,
            got.max_ms
        );
        assert_eq!(quantile_ms(&l, 1.0), 6.353);
        assert_eq!(quantile_ms(&l, 0.5), 1.0);
    }

    /// The summary of `n` responses of each `(status, location)`.
    fn summary(responses: &[(u64, u16, Option<&str>)]) -> Summary {
        let mut r = Recorder::default();
        for &(n, status, location) in responses {
            for i in 0..n {
                r.record(&Sample {
                    label: "GET /",
                    intended_us: i,
                    sent_us: i,
                    ended_us: i + 100,
                    error: (status >= 400).then(|| format!("status {status}")),
                    status: Some(status),
                    location,
                    bytes_in: 0,
                    bytes_out: 0,
                    detail: None,
                });
            }
        }
        Summary::of(&r.total, 1.0)
    }

    #[test]
    fn statuses_are_counted_by_code_and_class() {
        let s = summary(&[(90, 200, None), (5, 204, None), (5, 503, None)]);
        let counts = |pairs: &[(&str, u64)]| -> BTreeMap<String, u64> {
            pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
        };
        assert_eq!(s.statuses, counts(&[("200", 90), ("204", 5), ("503", 5)]));
        assert_eq!(s.status_classes, counts(&[("2xx", 95), ("5xx", 5)]));
        assert_eq!(
            statuses_line(&s).unwrap(),
            "statuses: 200 x 90, 204 x 5, 503 x 5 (2xx 95.0%, 5xx 5.0%)"
        );
        assert_eq!(redirect_warning(&s), None);
    }

    #[test]
    fn a_step_of_redirects_says_where_they_went() {
        let all = summary(&[(40, 301, Some("https://shop.test/"))]);
        assert_eq!(
            redirect_warning(&all).unwrap(),
            "all 40 responses were 301 to https://shop.test/: did you mean https://? \
             (redirects count as success; --ok-status 200-299 counts them as errors)"
        );
        let most = summary(&[(6, 302, Some("/login")), (4, 200, None)]);
        let warning = redirect_warning(&most).unwrap();
        assert!(
            warning.starts_with("6 of 10 responses (60.0%) were redirects, most 302 to /login: the redirects were measured"),
            "{warning}"
        );
        // Fewer than half: a site's normal redirects, no warning.
        let few = summary(&[(4, 302, Some("/login")), (6, 200, None)]);
        assert_eq!(redirect_warning(&few), None);
    }

    #[test]
    fn redirect_targets_are_bounded() {
        let mut r = Recorder::default();
        for i in 0..100u64 {
            let location = format!("/page/{i}");
            r.record(&Sample {
                label: "GET /",
                intended_us: i,
                sent_us: i,
                ended_us: i + 1,
                error: None,
                status: Some(302),
                location: Some(&location),
                bytes_in: 0,
                bytes_out: 0,
                detail: None,
            });
        }
        assert_eq!(r.total.locations.len(), crate::stats::MAX_LOCATIONS);
        assert_eq!(r.total.statuses[&302], 100);
    }
}
