//! Results of several generators, started anywhere (ssh, a Kubernetes indexed Job), made
//! into one: their histograms are added, so the percentiles of the whole are exact,
//! never averages of percentiles. Step `i` of every report is merged with step `i` of
//! the others; seconds are aligned by wall-clock start.

use crate::delivery::DeliverySummary;
use crate::plan::{Length, Load, Step};
use crate::report::{ConnectionsReport, Latencies, Report, SecondReport, StepReport, Summary};
use crate::runner::StepRun;
use crate::stats::{Connections, Latency, Moments, Recorder, Second, Tally};
use base64::Engine;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;
use std::time::{Duration, UNIX_EPOCH};

/// Reports and steps are counted from 1 in the words (the order given, as a user counts
/// them) and from 0 in the fields.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    #[error("nothing to merge")]
    Nothing,
    #[error("report {} has {got} steps, the first has {expected}: only runs of the same plan merge", .index + 1)]
    Steps {
        index: usize,
        got: usize,
        expected: usize,
    },
    #[error("report {}, step {} is {got}, the first report's is {expected}: only runs of the same plan merge", .index + 1, .step + 1)]
    Kind {
        index: usize,
        step: usize,
        got: String,
        expected: String,
    },
    #[error(
        "report {} spoke {got}, the first report {expected}: only runs of the same plan merge",
        .index + 1
    )]
    Protocol {
        index: usize,
        got: String,
        expected: String,
    },
    #[error("report {} is the same run as report {} (same start and samples): give each generator's file once", .index + 1, .other + 1)]
    Twice { index: usize, other: usize },
    #[error("report {}, step {}: a histogram does not decode ({why})", .index + 1, .step + 1)]
    Histogram {
        index: usize,
        step: usize,
        why: DecodeError,
    },
}

/// Why a histogram of a report (base64 of V2 + DEFLATE) cannot be read back. The
/// histogram crate's own errors are kept as their words: they compare as nothing else.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("not base64: {0}")]
    Base64(#[from] base64::DecodeError),
    #[error("not an HdrHistogram: {0}")]
    Histogram(String),
    #[error("beyond the recorder's bounds: {0}")]
    Bounds(String),
}

/// One report of all of `reports`, step by step.
pub fn merge(reports: &[Report]) -> Result<Report, MergeError> {
    let first = reports.first().ok_or(MergeError::Nothing)?;
    for (index, r) in reports.iter().enumerate() {
        same_plan(first, r, index)?;
        let twin = reports[..index].iter().position(|o| same_run(o, r));
        if let Some(other) = twin {
            return Err(MergeError::Twice { index, other });
        }
    }
    let steps = (0..first.steps.len())
        .map(|i| merge_step(reports, i))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Report {
        tool: first.tool.clone(),
        requests: first.requests.clone(),
        model: first.model.clone(),
        protocol: first.protocol.clone(),
        streams_per_connection: first.streams_per_connection,
        interrupted: reports.iter().any(|r| r.interrupted),
        steps,
    })
}

/// Report `index` ran the plan `first` ran: as many steps, each of the same kind.
fn same_plan(first: &Report, r: &Report, index: usize) -> Result<(), MergeError> {
    if r.protocol != first.protocol {
        return Err(MergeError::Protocol {
            index,
            got: r.protocol.clone(),
            expected: first.protocol.clone(),
        });
    }
    if r.steps.len() != first.steps.len() {
        return Err(MergeError::Steps {
            index,
            got: r.steps.len(),
            expected: first.steps.len(),
        });
    }
    let kind = |s: &StepReport| if s.users.is_some() { "users" } else { "rate" };
    for (step, (a, b)) in first.steps.iter().zip(&r.steps).enumerate() {
        if kind(a) != kind(b) {
            return Err(MergeError::Kind {
                index,
                step,
                got: kind(b).into(),
                expected: kind(a).into(),
            });
        }
    }
    Ok(())
}

/// The same file given twice: every step started at the same millisecond with the same
/// samples and the same histogram.
fn same_run(a: &Report, b: &Report) -> bool {
    a.steps.iter().zip(&b.steps).all(|(x, y)| {
        x.started_unix_ms == y.started_unix_ms
            && x.summary.samples == y.summary.samples
            && x.summary.hdr == y.summary.hdr
    })
}

fn merge_step(reports: &[Report], i: usize) -> Result<StepReport, MergeError> {
    let steps: Vec<&StepReport> = reports.iter().map(|r| &r.steps[i]).collect();
    let start_ms = steps.iter().map(|s| s.started_unix_ms).min().unwrap_or(0);
    let end_ms = steps
        .iter()
        .map(|s| s.started_unix_ms + (s.duration_s * 1000.0) as u64)
        .max()
        .unwrap_or(start_ms);
    let mut recorder = Recorder::default();
    for (index, s) in steps.iter().enumerate() {
        let bad = |why: DecodeError| MergeError::Histogram {
            index,
            step: i,
            why,
        };
        let offset_us = (s.started_unix_ms - start_ms) * 1000;
        let mut part = Recorder {
            total: tally(&s.summary, &s.per_second, offset_us).map_err(bad)?,
            missed: s.missed,
            widest_beat: std::time::Duration::from_secs_f64(
                s.widened_pace_ms.unwrap_or(0.0) / 1000.0,
            ),
            connections: connections(s.connections.as_ref()).map_err(bad)?,
            ..Recorder::default()
        };
        for (label, summary) in &s.labels {
            let t = tally(summary, &[], offset_us).map_err(bad)?;
            part.labels.insert(label.clone(), t);
        }
        recorder.merge(&part);
    }
    let load = match (steps[0].users, steps[0].rate) {
        (Some(_), _) => Load::Users {
            users: steps.iter().filter_map(|s| s.users).sum(),
            ramp: Duration::ZERO,
            think: Duration::ZERO,
        },
        _ => Load::Rate {
            rate: steps.iter().filter_map(|s| s.rate).sum(),
            max_in_flight: 0,
        },
    };
    let elapsed = Duration::from_millis(end_ms - start_ms);
    let run = StepRun {
        step: Step {
            load,
            length: Length::Duration(elapsed),
        },
        started: UNIX_EPOCH + Duration::from_millis(start_ms),
        elapsed,
        recorder,
        delivery: delivery(&steps).map_err(|why| MergeError::Histogram {
            index: 0,
            step: i,
            why,
        })?,
        memory: None,
        interrupted: steps.iter().any(|s| s.interrupted),
    };
    let mut merged = StepReport::of(&run);
    merged.arrivals = steps.iter().any(|s| s.arrivals);
    for warning in steps.iter().flat_map(|s| &s.warnings) {
        if !merged.warnings.contains(warning) {
            merged.warnings.push(warning.clone());
        }
    }
    Ok(merged)
}

/// The steps' STOMP deliveries added up, if they have any.
fn delivery(steps: &[&StepReport]) -> Result<Option<DeliverySummary>, DecodeError> {
    let mut total: Option<DeliverySummary> = None;
    for d in steps.iter().filter_map(|s| s.delivery.as_ref()) {
        let part = DeliverySummary {
            messages: d.messages,
            expected: d.expected,
            delivered: d.delivered,
            unexpected: d.unexpected,
            lost: d.lost,
            latency: Latency {
                histogram: decode(&d.hdr)?,
                moments: moments(d.delivered, &d.latency),
            },
        };
        total
            .get_or_insert_with(DeliverySummary::default)
            .merge(&part);
    }
    Ok(total)
}

/// What a report says of a set of samples, back as a tally, its times shifted by
/// `offset_us` (its start's distance from the earliest start).
fn tally(s: &Summary, seconds: &[SecondReport], offset_us: u64) -> Result<Tally, DecodeError> {
    let latency = |hdr: &str, l: &Latencies| -> Result<Latency, DecodeError> {
        Ok(Latency {
            histogram: decode(hdr)?,
            moments: moments(s.samples, l),
        })
    };
    let skip = (offset_us / 1_000_000) as usize;
    let mut per_second: Vec<Second> = (0..skip).map(|_| Second::default()).collect();
    for sec in seconds {
        let histogram = decode(&sec.hdr)?;
        let moments = Moments {
            count: sec.requests,
            sum: sec.mean_ms * 1000.0 * sec.requests as f64,
            sum_squares: 0.0,
            min_us: histogram.min(),
            max_us: (sec.max_ms * 1000.0).round() as u64,
        };
        per_second.push(Second {
            requests: sec.requests,
            errors: sec.errors,
            latency: Latency { histogram, moments },
        });
    }
    Ok(Tally {
        corrected: latency(&s.hdr, &s.latency)?,
        sent: latency(&s.hdr_uncorrected, &s.uncorrected)?,
        send_lag: latency(&s.hdr_send_lag, &s.send_lag)?,
        errors: s.errors,
        error_kinds: s.error_kinds.clone(),
        statuses: s
            .statuses
            .iter()
            .filter_map(|(code, n)| Some((code.parse().ok()?, *n)))
            .collect(),
        locations: s.redirects.clone(),
        failures: s.failures.clone(),
        bytes_in: s.received_bytes,
        bytes_out: s.sent_bytes,
        seconds: per_second,
        first_start_us: (s.samples > 0).then_some(offset_us),
        last_end_us: offset_us + (s.span_s * 1e6).round() as u64,
    })
}

/// A report's connections and handshakes, back as counts and a histogram.
fn connections(c: Option<&ConnectionsReport>) -> Result<Connections, DecodeError> {
    let Some(c) = c else {
        return Ok(Connections::default());
    };
    let handshakes = match (&c.hdr_handshake, &c.handshake) {
        (Some(hdr), Some(l)) => Latency {
            histogram: decode(hdr)?,
            moments: moments(c.tls_handshakes, l),
        },
        _ => Latency::default(),
    };
    Ok(Connections {
        opened: c.opened,
        handshakes,
        resumed: c.tls_resumed,
        goaways: c.h2_goaways,
        resets: c.h2_resets,
    })
}

/// The exact moments behind a reported mean and standard deviation.
fn moments(count: u64, l: &Latencies) -> Moments {
    let (mean, sd) = (l.mean_ms * 1000.0, l.stddev_ms * 1000.0);
    Moments {
        count,
        sum: mean * count as f64,
        sum_squares: (sd * sd + mean * mean) * count as f64,
        min_us: (l.min_ms * 1000.0).round() as u64,
        max_us: (l.max_ms * 1000.0).round() as u64,
    }
}

/// A histogram from its base64 V2 (+ DEFLATE) form, widened to the recorder's bounds.
pub(crate) fn decode(text: &str) -> Result<Histogram<u64>, DecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text)?;
    let mut h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| DecodeError::Histogram(format!("{e:?}")))?;
    // Merged histograms must share the recorder's bounds.
    let mut wide = Latency::default().histogram;
    wide.add(&h)
        .map_err(|e| DecodeError::Bounds(format!("{e:?}")))?;
    std::mem::swap(&mut h, &mut wide);
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::RequestInfo;
    use crate::stats::Sample;

    /// A one-step report of `samples` (sent at µs, latency µs, error), started at
    /// `start_ms`.
    fn report(samples: &[(u64, u64, bool)], start_ms: u64, rate: f64) -> Report {
        let mut recorder = Recorder::default();
        for &(at, latency, error) in samples {
            recorder.record(&Sample {
                label: if latency % 3 == 0 { "GET /a" } else { "GET /b" },
                intended_us: at,
                sent_us: at + 7,
                ended_us: at + latency,
                error: error.then(|| "status 503".to_string()),
                status: Some(if error { 503 } else { 200 }),
                location: None,
                bytes_in: 100,
                bytes_out: 40,
                detail: None,
            });
        }
        let run = StepRun {
            step: Step {
                load: Load::Rate {
                    rate,
                    max_in_flight: 10,
                },
                length: Length::Duration(Duration::from_secs(3)),
            },
            started: UNIX_EPOCH + Duration::from_millis(start_ms),
            elapsed: Duration::from_millis(3_000),
            recorder,
            delivery: None,
            memory: None,
            interrupted: false,
        };
        Report {
            tool: "t".into(),
            requests: vec![RequestInfo {
                label: "GET /a".into(),
                method: "GET".into(),
                url: "http://t/a".into(),
                weight: 1,
            }],
            model: "open".into(),
            protocol: "http/1.1".into(),
            streams_per_connection: None,
            interrupted: false,
            steps: vec![StepReport::of(&run)],
        }
    }

    fn through_json(r: &Report) -> Report {
        serde_json::from_str(&serde_json::to_string(r).unwrap()).unwrap()
    }

    #[test]
    fn merged_percentiles_are_those_of_all_samples() {
        let a: Vec<(u64, u64, bool)> = (1..=200)
            .map(|i| (i * 10_000, i * 137 % 5000 + 100, i % 50 == 0))
            .collect();
        let b: Vec<(u64, u64, bool)> = (1..=100)
            .map(|i| (i * 25_000, i * 911 % 90_000 + 3000, false))
            .collect();
        let all: Vec<(u64, u64, bool)> = a.iter().chain(&b).copied().collect();
        let merged = merge(&[
            through_json(&report(&a, 1_000, 100.0)),
            through_json(&report(&b, 1_000, 50.0)),
        ])
        .unwrap();
        let whole = report(&all, 1_000, 150.0);
        let (m, w) = (&merged.steps[0].summary, &whole.steps[0].summary);
        assert_eq!(
            (m.samples, m.errors, m.received_bytes),
            (w.samples, w.errors, w.received_bytes)
        );
        for (got, want) in [
            (m.latency.p50_ms, w.latency.p50_ms),
            (m.latency.p90_ms, w.latency.p90_ms),
            (m.latency.p99_ms, w.latency.p99_ms),
            (m.latency.p999_ms, w.latency.p999_ms),
            (m.latency.max_ms, w.latency.max_ms),
            (m.latency.min_ms, w.latency.min_ms),
            (m.uncorrected.p99_ms, w.uncorrected.p99_ms),
        ] {
            assert_eq!(got, want);
        }
        assert!((m.latency.mean_ms - w.latency.mean_ms).abs() < 0.002);
        assert!((m.latency.stddev_ms - w.latency.stddev_ms).abs() < 0.002);
        assert_eq!(merged.steps[0].rate, Some(150.0));
        assert_eq!(
            merged.steps[0].labels["GET /a"].samples,
            whole.steps[0].labels["GET /a"].samples
        );
        let seconds = |r: &StepReport| {
            r.per_second
                .iter()
                .map(|s| (s.requests, s.p99_ms))
                .collect::<Vec<_>>()
        };
        assert_eq!(seconds(&merged.steps[0]), seconds(&whole.steps[0]));
    }

    #[test]
    fn seconds_align_by_wall_clock() {
        let a = report(&[(0, 500, false)], 10_000, 1.0);
        let b = report(&[(0, 500, false)], 12_000, 1.0);
        let merged = merge(&[a, b]).unwrap();
        let per: Vec<u64> = merged.steps[0]
            .per_second
            .iter()
            .map(|s| s.requests)
            .collect();
        assert_eq!(per, vec![1, 0, 1]);
        assert_eq!(merged.steps[0].started_unix_ms, 10_000);
    }

    #[test]
    fn a_file_given_twice_or_a_different_kind_of_step_is_refused() {
        let a = through_json(&report(&[(0, 1000, false)], 1_000, 10.0));
        let b = through_json(&report(&[(0, 2000, false)], 1_500, 10.0));
        assert_eq!(
            merge(&[a.clone(), b.clone(), a.clone()]),
            Err(MergeError::Twice { index: 2, other: 0 })
        );
        let mut users = b.clone();
        users.steps[0].rate = None;
        users.steps[0].users = Some(4);
        assert!(matches!(
            merge(&[a, users]),
            Err(MergeError::Kind {
                index: 1,
                step: 0,
                ..
            })
        ));
    }

    #[test]
    fn only_runs_of_one_plan_merge() {
        let mut two = report(&[(0, 500, false)], 0, 1.0);
        two.steps.push(two.steps[0].clone());
        let one = report(&[(0, 500, false)], 0, 1.0);
        assert!(matches!(
            merge(&[one, two]),
            Err(MergeError::Steps {
                index: 1,
                got: 2,
                expected: 1
            })
        ));
        assert_eq!(merge(&[]), Err(MergeError::Nothing));
        // HTTP/2 and HTTP/1.1 runs measure different things: not one plan.
        let mut h2 = report(&[(0, 500, false)], 10, 1.0);
        h2.protocol = "h2".into();
        let h1 = report(&[(0, 500, false)], 0, 1.0);
        let refused = merge(&[h1, h2]).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "report 2 spoke h2, the first report http/1.1: only runs of the same plan merge"
        );
    }
}
