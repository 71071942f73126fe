//! `--fail-if` thresholds, k6-style: `p99>250ms`, `errors>1%`, `throughput<1000`. A run
//! fails when any step meets any of them.

use crate::report::{step_name, Report, Summary};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Above,
    AtLeast,
    Below,
    AtMost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    Mean,
    Min,
    Max,
    Stddev,
    P50,
    P90,
    P95,
    P99,
    P999,
    /// Percent of samples.
    Errors,
    Throughput,
    Missed,
}

/// One `--fail-if` condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    text: String,
    metric: Metric,
    op: Op,
    /// In ms for latencies, % for errors, req/s or a count otherwise.
    value: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--fail-if '{text}': {why} (write it as METRIC OP VALUE, e.g. 'p99>250ms', 'errors>1%', 'throughput<1000'; metrics: mean, min, max, stddev, p50, p90, p95, p99, p999, errors, throughput, missed)")]
pub struct ThresholdError {
    text: String,
    why: &'static str,
}

impl Threshold {
    pub fn parse(text: &str) -> Result<Threshold, ThresholdError> {
        let err = |why| ThresholdError {
            text: text.into(),
            why,
        };
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let at = compact.find(['<', '>']).ok_or_else(|| err("no < or >"))?;
        let (name, rest) = compact.split_at(at);
        let (op, value) = match rest.as_bytes() {
            [b'>', b'=', ..] => (Op::AtLeast, &rest[2..]),
            [b'<', b'=', ..] => (Op::AtMost, &rest[2..]),
            [b'>', ..] => (Op::Above, &rest[1..]),
            _ => (Op::Below, &rest[1..]),
        };
        let metric = match name.to_ascii_lowercase().as_str() {
            "mean" | "avg" => Metric::Mean,
            "min" => Metric::Min,
            "max" => Metric::Max,
            "stddev" => Metric::Stddev,
            "p50" | "median" => Metric::P50,
            "p90" => Metric::P90,
            "p95" => Metric::P95,
            "p99" => Metric::P99,
            "p999" | "p99.9" => Metric::P999,
            "errors" | "error_pct" => Metric::Errors,
            "throughput" | "rps" => Metric::Throughput,
            "missed" => Metric::Missed,
            _ => return Err(err("unknown metric")),
        };
        let value = parse_value(metric, value).ok_or_else(|| err("bad value or unit"))?;
        Ok(Threshold {
            text: text.into(),
            metric,
            op,
            value,
        })
    }

    fn measure(&self, s: &Summary, missed: u64) -> f64 {
        let l = &s.latency;
        match self.metric {
            Metric::Mean => l.mean_ms,
            Metric::Min => l.min_ms,
            Metric::Max => l.max_ms,
            Metric::Stddev => l.stddev_ms,
            Metric::P50 => l.p50_ms,
            Metric::P90 => l.p90_ms,
            Metric::P95 => l.p95_ms,
            Metric::P99 => l.p99_ms,
            Metric::P999 => l.p999_ms,
            Metric::Errors => s.error_pct,
            Metric::Throughput => s.throughput_rps,
            Metric::Missed => missed as f64,
        }
    }

    fn met(&self, v: f64) -> bool {
        match self.op {
            Op::Above => v > self.value,
            Op::AtLeast => v >= self.value,
            Op::Below => v < self.value,
            Op::AtMost => v <= self.value,
        }
    }
}

/// Latencies take ms, s or us (ms if no unit); errors may end in `%`.
fn parse_value(metric: Metric, text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let latency = !matches!(metric, Metric::Errors | Metric::Throughput | Metric::Missed);
    let scale = match (latency, unit) {
        (true, "" | "ms") => 1.0,
        (true, "s") => 1000.0,
        (true, "us" | "µs") => 0.001,
        (false, "") => 1.0,
        (false, "%") if metric == Metric::Errors => 1.0,
        _ => return None,
    };
    Some(number * scale)
}

/// Every threshold a step of `report` met, as `step: threshold (measured value)`.
pub fn failures(report: &Report, thresholds: &[Threshold]) -> Vec<String> {
    let mut failed = Vec::new();
    for step in &report.steps {
        for t in thresholds {
            let v = t.measure(&step.summary, step.missed);
            if t.met(v) {
                failed.push(format!("{}: {} (measured {v})", step_name(step), t.text));
            }
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_users_write() {
        let t = Threshold::parse("p99>250ms").unwrap();
        assert_eq!((t.metric, t.op, t.value), (Metric::P99, Op::Above, 250.0));
        let t = Threshold::parse("p99.9 >= 1.5s").unwrap();
        assert_eq!(
            (t.metric, t.op, t.value),
            (Metric::P999, Op::AtLeast, 1500.0)
        );
        let t = Threshold::parse("errors>1%").unwrap();
        assert_eq!((t.metric, t.value), (Metric::Errors, 1.0));
        let t = Threshold::parse("throughput<1000").unwrap();
        assert_eq!(
            (t.metric, t.op, t.value),
            (Metric::Throughput, Op::Below, 1000.0)
        );
        assert!(t.met(999.0) && !t.met(1000.0));
        for bad in [
            "p99",
            "p98>1ms",
            "p99>fast",
            "errors>1ms",
            "throughput<1%",
            "",
        ] {
            assert!(Threshold::parse(bad).is_err(), "{bad}");
        }
        let e = Threshold::parse("p99=3").unwrap_err().to_string();
        assert!(e.contains("'p99=3'") && e.contains("p99>250ms"), "{e}");
    }
}
