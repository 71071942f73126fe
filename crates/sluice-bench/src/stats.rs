//! Recording what happened to every request, cheaply, and summing it up the way JMeter
//! and nGrinder users read it.
//!
//! Each worker thread records into its own [`Recorder`] (no lock on the request path);
//! a step's recorders are merged at its end. Latencies go into HdrHistograms (the
//! official `hdrhistogram` crate) in microseconds, 1 µs to 1 hour at 3 significant
//! digits; mean, standard deviation, min and max are kept exactly beside them, since
//! JMeter reports those from the raw samples.

use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::time::Duration;

/// The largest latency recorded, in µs (an hour); longer ones count as an hour.
const MAX_US: u64 = 3_600_000_000;

/// Exact moments of a sample (µs): for mean and standard deviation without rounding.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Moments {
    pub count: u64,
    pub sum: f64,
    pub sum_squares: f64,
    pub min_us: u64,
    pub max_us: u64,
}

impl Moments {
    fn add(&mut self, us: u64) {
        if self.count == 0 || us < self.min_us {
            self.min_us = us;
        }
        self.max_us = self.max_us.max(us);
        self.count += 1;
        let v = us as f64;
        self.sum += v;
        self.sum_squares += v * v;
    }

    fn merge(&mut self, other: &Moments) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 || other.min_us < self.min_us {
            self.min_us = other.min_us;
        }
        self.max_us = self.max_us.max(other.max_us);
        self.count += other.count;
        self.sum += other.sum;
        self.sum_squares += other.sum_squares;
    }

    pub fn mean_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum / self.count as f64
        }
    }

    /// Population standard deviation (as JMeter reports it).
    pub fn stddev_us(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let mean = self.mean_us();
        (self.sum_squares / self.count as f64 - mean * mean)
            .max(0.0)
            .sqrt()
    }
}

/// Latency of one kind (as experienced, or as sent).
#[derive(Debug, Clone)]
pub struct Latency {
    pub histogram: Histogram<u64>,
    pub moments: Moments,
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            histogram: Histogram::new_with_bounds(1, MAX_US, 3).expect("valid bounds"),
            moments: Moments::default(),
        }
    }
}

impl Latency {
    pub fn record(&mut self, latency: Duration) {
        let us = (latency.as_micros() as u64).clamp(1, MAX_US);
        self.histogram.saturating_record(us);
        self.moments.add(us);
    }

    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.histogram.add(&other.histogram);
        self.moments.merge(&other.moments);
    }
}

/// One second of a step.
#[derive(Debug, Clone, Default)]
pub struct Second {
    pub requests: u64,
    pub errors: u64,
    pub latency: Latency,
}

/// Everything recorded about one label (one kind of request) in a step.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// From each request's intended send time: the latency a user arriving then would
    /// have seen. For users in a closed loop, the same as `sent`.
    pub corrected: Latency,
    /// From the moment the request was actually written.
    pub sent: Latency,
    /// How late each request went out after its intended time: the generator's own
    /// scheduling plus any wait for a free slot.
    pub send_lag: Latency,
    pub errors: u64,
    /// Failures by kind (`status 503`, `connect: connection refused`, `timeout`, ...).
    pub error_kinds: BTreeMap<String, u64>,
    /// Responses by status code, whether they count as errors or not.
    pub statuses: BTreeMap<u16, u64>,
    /// Where redirects pointed (`Location`), the first [`MAX_LOCATIONS`] distinct ones.
    pub locations: BTreeMap<String, u64>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Per second of the step, by completion time.
    pub seconds: Vec<Second>,
    /// The first failure of each kind, with its exchange (when the sample kept it).
    pub failures: Vec<Failure>,
    /// First send and last completion, in µs from the step's start.
    pub first_start_us: Option<u64>,
    pub last_end_us: u64,
}

/// The outcome of one request, as the engines report it.
pub struct Sample<'a> {
    pub label: &'a str,
    /// µs from the step's start: when it was meant to go, went, and completed.
    pub intended_us: u64,
    pub sent_us: u64,
    pub ended_us: u64,
    pub error: Option<String>,
    /// The response's status, when one came (none for a transport error or a
    /// WebSocket or STOMP step).
    pub status: Option<u16>,
    /// A redirect's `Location`.
    pub location: Option<&'a str>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// What was sent and what came back, for a failure's details (a scenario's users
    /// keep them; the plain path has none).
    pub detail: Option<Detail<'a>>,
}

/// The exchange behind a sample: read only when it failed.
#[derive(Debug, Clone, Copy)]
pub struct Detail<'a> {
    pub request: &'a [u8],
    pub head: &'a [u8],
    pub body: &'a [u8],
}

/// The first failures of each kind a label had, told as JMeter's "View Results Tree"
/// shows them: the request, the cookies it carried, the response's start.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The request line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub request: String,
    /// The `Cookie` header it sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookies: Option<String>,
    /// The response's head and the start of its body.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub response: String,
}

/// Failures kept per label: the first of each error kind, this many kinds at most.
pub const MAX_FAILURES: usize = 5;

/// How much of a response's head, and of its body, a failure keeps.
pub const FAILURE_BYTES: usize = 1024;

impl Failure {
    fn of(error: &str, status: Option<u16>, d: &Detail<'_>) -> Failure {
        let request = String::from_utf8_lossy(d.request);
        let mut lines = request.split("\r\n");
        let request_line = lines.next().unwrap_or_default().to_string();
        let cookies = lines.take_while(|l| !l.is_empty()).find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("cookie")
                .then(|| value.trim().to_string())
        });
        let start = |b: &[u8]| b[..b.len().min(FAILURE_BYTES)].to_vec();
        let mut response = start(d.head);
        response.extend(start(d.body));
        Failure {
            error: error.to_string(),
            status,
            request: request_line,
            cookies,
            response: String::from_utf8_lossy(&response).into_owned(),
        }
    }
}

/// Keeps `failure` among `kept` if its kind is new there and there is room.
fn keep_failure(kept: &mut Vec<Failure>, failure: impl FnOnce() -> Failure, kind: &str) {
    if kept.len() < MAX_FAILURES && !kept.iter().any(|f| f.error == kind) {
        kept.push(failure());
    }
}

/// Distinct redirect targets kept per label: enough to name where redirects go without
/// letting a server that redirects everywhere grow the report.
pub const MAX_LOCATIONS: usize = 8;

impl Tally {
    fn record(&mut self, s: &Sample<'_>) {
        let corrected = Duration::from_micros(s.ended_us.saturating_sub(s.intended_us));
        let sent = Duration::from_micros(s.ended_us.saturating_sub(s.sent_us));
        self.corrected.record(corrected);
        self.sent.record(sent);
        self.send_lag.record(Duration::from_micros(
            s.sent_us.saturating_sub(s.intended_us),
        ));
        self.bytes_in += s.bytes_in;
        self.bytes_out += s.bytes_out;
        let second = (s.ended_us / 1_000_000) as usize;
        if self.seconds.len() <= second {
            self.seconds.resize_with(second + 1, Second::default);
        }
        let slot = &mut self.seconds[second];
        slot.requests += 1;
        slot.latency.record(corrected);
        if let Some(kind) = &s.error {
            self.errors += 1;
            slot.errors += 1;
            *self.error_kinds.entry(kind.clone()).or_default() += 1;
            if let Some(d) = &s.detail {
                keep_failure(&mut self.failures, || Failure::of(kind, s.status, d), kind);
            }
        }
        if let Some(status) = s.status {
            *self.statuses.entry(status).or_default() += 1;
        }
        if let Some(location) = s.location {
            count_location(&mut self.locations, location, 1);
        }
        self.first_start_us = Some(
            self.first_start_us
                .map_or(s.intended_us, |f| f.min(s.intended_us)),
        );
        self.last_end_us = self.last_end_us.max(s.ended_us);
    }

    pub fn merge(&mut self, other: &Tally) {
        self.corrected.merge(&other.corrected);
        self.sent.merge(&other.sent);
        self.send_lag.merge(&other.send_lag);
        self.errors += other.errors;
        for (kind, n) in &other.error_kinds {
            *self.error_kinds.entry(kind.clone()).or_default() += n;
        }
        for f in &other.failures {
            keep_failure(&mut self.failures, || f.clone(), &f.error);
        }
        for (status, n) in &other.statuses {
            *self.statuses.entry(*status).or_default() += n;
        }
        for (location, n) in &other.locations {
            count_location(&mut self.locations, location, *n);
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        if self.seconds.len() < other.seconds.len() {
            self.seconds
                .resize_with(other.seconds.len(), Second::default);
        }
        for (mine, theirs) in self.seconds.iter_mut().zip(&other.seconds) {
            mine.requests += theirs.requests;
            mine.errors += theirs.errors;
            mine.latency.merge(&theirs.latency);
        }
        self.first_start_us = match (self.first_start_us, other.first_start_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.last_end_us = self.last_end_us.max(other.last_end_us);
    }

    pub fn samples(&self) -> u64 {
        self.corrected.moments.count
    }
}

/// Counts `n` redirects to `location`, unless [`MAX_LOCATIONS`] others are counted
/// already.
pub fn count_location(locations: &mut BTreeMap<String, u64>, location: &str, n: u64) {
    if let Some(count) = locations.get_mut(location) {
        *count += n;
    } else if locations.len() < MAX_LOCATIONS {
        locations.insert(location.to_string(), n);
    }
}

/// The connections a step opened, and what their TLS handshakes cost.
#[derive(Debug, Clone, Default)]
pub struct Connections {
    pub opened: u64,
    /// Each TLS handshake's time (without the TCP connect before it).
    pub handshakes: Latency,
    /// Handshakes that resumed a session.
    pub resumed: u64,
    /// HTTP/2: connections the server ended with GOAWAY, and streams it reset.
    pub goaways: u64,
    pub resets: u64,
}

impl Connections {
    pub fn merge(&mut self, other: &Connections) {
        self.opened += other.opened;
        self.handshakes.merge(&other.handshakes);
        self.resumed += other.resumed;
        self.goaways += other.goaways;
        self.resets += other.resets;
    }
}

/// A worker's record of one step: a tally per label, and the whole.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    pub total: Tally,
    pub labels: BTreeMap<String, Tally>,
    /// Requests an open-model step meant to send but could not before it ended.
    pub missed: u64,
    pub connections: Connections,
    /// The open model's widest beat, when wake-ups ran late and it was widened past
    /// the pace; zero when never.
    pub widest_beat: Duration,
    /// A scenario's users that ended (or never began) for want of a data row: its
    /// rows ran out, not recycled.
    pub out_of_rows: u64,
}

impl Recorder {
    /// Counts an HTTP/2 stream the server reset (RST_STREAM).
    pub fn h2_error(&mut self, e: &crate::http2::H2Error) {
        if let crate::http2::H2Error::Reset(_) = e {
            self.connections.resets += 1;
        }
    }

    /// Counts a connection opened, with its TLS handshake if it had one.
    pub fn opened(&mut self, handshake: Option<crate::tls::Handshake>) {
        self.connections.opened += 1;
        if let Some(h) = handshake {
            self.connections.handshakes.record(h.took);
            self.connections.resumed += u64::from(h.resumed);
        }
    }

    pub fn record(&mut self, s: &Sample<'_>) {
        self.total.record(s);
        if let Some(t) = self.labels.get_mut(s.label) {
            t.record(s);
        } else {
            let mut t = Tally::default();
            t.record(s);
            self.labels.insert(s.label.to_string(), t);
        }
    }

    pub fn merge(&mut self, other: &Recorder) {
        self.total.merge(&other.total);
        for (label, t) in &other.labels {
            self.labels.entry(label.clone()).or_default().merge(t);
        }
        self.missed += other.missed;
        self.connections.merge(&other.connections);
        self.widest_beat = self.widest_beat.max(other.widest_beat);
        self.out_of_rows += other.out_of_rows;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(
        label: &str,
        intended: u64,
        sent: u64,
        ended: u64,
        error: Option<&str>,
    ) -> Sample<'static> {
        Sample {
            label: Box::leak(label.to_string().into_boxed_str()),
            intended_us: intended,
            sent_us: sent,
            ended_us: ended,
            error: error.map(String::from),
            status: Some(if error.is_some() { 503 } else { 200 }),
            location: None,
            bytes_in: 10,
            bytes_out: 5,
            detail: None,
        }
    }

    #[test]
    fn moments_are_exact_and_population_based() {
        let mut l = Latency::default();
        for ms in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            l.record(Duration::from_millis(ms));
        }
        // The textbook population example: mean 5, standard deviation 2.
        assert_eq!(l.moments.mean_us(), 5000.0);
        assert!((l.moments.stddev_us() - 2000.0).abs() < 1e-6);
        assert_eq!((l.moments.min_us, l.moments.max_us), (2000, 9000));
        assert_eq!(l.histogram.len(), 8);
    }

    #[test]
    fn recorders_merge_per_label_and_per_second() {
        let mut a = Recorder::default();
        a.record(&sample("GET /", 0, 0, 1_000, None));
        a.record(&sample(
            "GET /",
            100,
            500_000,
            1_500_000,
            Some("status 503"),
        ));
        let mut b = Recorder::default();
        b.record(&sample("POST /x", 0, 0, 2_000, None));
        b.missed = 3;
        a.merge(&b);
        assert_eq!(a.total.samples(), 3);
        assert_eq!(a.total.errors, 1);
        assert_eq!(a.total.error_kinds["status 503"], 1);
        assert_eq!(a.total.statuses, BTreeMap::from([(200, 2), (503, 1)]));
        assert_eq!(
            a.labels["GET /"].statuses,
            BTreeMap::from([(200, 1), (503, 1)])
        );
        assert_eq!(a.labels["GET /"].samples(), 2);
        assert_eq!(a.labels["POST /x"].samples(), 1);
        assert_eq!(a.missed, 3);
        assert_eq!(a.total.seconds.len(), 2);
        assert_eq!(
            (a.total.seconds[0].requests, a.total.seconds[1].requests),
            (2, 1)
        );
        assert_eq!(a.total.seconds[1].errors, 1);
        // Corrected from the intended time, "sent" from the actual one.
        assert_eq!(a.labels["GET /"].corrected.moments.max_us, 1_499_900);
        assert_eq!(a.labels["GET /"].sent.moments.max_us, 1_000_000);
        assert_eq!((a.total.bytes_in, a.total.bytes_out), (30, 15));
        assert_eq!(
            (a.total.first_start_us, a.total.last_end_us),
            (Some(0), 1_500_000)
        );
    }
}
