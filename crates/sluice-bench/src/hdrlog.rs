//! HdrHistogram interval logs (the standard V2 log format), so HdrHistogram's own tools
//! (HistogramLogProcessor, HdrHistogramVisualizer) read a run: one interval per second
//! of each step, tagged `step-N`, values in microseconds.

use crate::merge::decode;
use crate::report::Report;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use std::io::{self, Write};
use std::time::{Duration, UNIX_EPOCH};

/// Writes `report`'s per-second latency histograms to `out` as an interval log.
pub fn write(report: &Report, out: &mut impl Write) -> io::Result<()> {
    let base_ms = report.steps.first().map_or(0, |s| s.started_unix_ms);
    let base = UNIX_EPOCH + Duration::from_millis(base_ms);
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(&format!(
            "{}: latency per second, in microseconds",
            report.tool
        ))
        .with_start_time(base)
        .with_base_time(base)
        .with_max_value_divisor(1000.0)
        .begin_log_with(out, &mut serializer)?;
    for (n, step) in report.steps.iter().enumerate() {
        let tag = format!("step-{}", n + 1);
        let offset_ms = step.started_unix_ms.saturating_sub(base_ms);
        for second in &step.per_second {
            let h = decode(&second.hdr).map_err(io::Error::other)?;
            let start = Duration::from_millis(offset_ms) + Duration::from_secs(second.second);
            log.write_histogram(&h, start, Duration::from_secs(1), Tag::new(&tag))
                .map_err(|e| io::Error::other(format!("{e:?}")))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::merge::decode;
    use crate::report::Report;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn the_log_reads_back_with_hdrhistograms_own_reader() {
        // A report with two steps, built through the real recording path.
        let mut report: Option<Report> = None;
        for (start, counts) in [(5_000u64, [3u64, 2]), (9_000, [4, 0])] {
            let mut recorder = crate::stats::Recorder::default();
            for (second, n) in counts.iter().enumerate() {
                for i in 0..*n {
                    let at = second as u64 * 1_000_000 + i * 1000;
                    recorder.record(&crate::stats::Sample {
                        label: "GET /",
                        intended_us: at,
                        sent_us: at,
                        ended_us: at + 250 + i,
                        error: None,
                        status: Some(200),
                        location: None,
                        bytes_in: 1,
                        bytes_out: 1,
                        detail: None,
                    });
                }
            }
            let run = crate::runner::StepRun {
                step: crate::plan::Step {
                    load: crate::plan::Load::Rate {
                        rate: 5.0,
                        max_in_flight: 1,
                    },
                    length: crate::plan::Length::Duration(std::time::Duration::from_secs(2)),
                },
                started: std::time::UNIX_EPOCH + std::time::Duration::from_millis(start),
                elapsed: std::time::Duration::from_secs(2),
                recorder,
                delivery: None,
                memory: None,
                interrupted: false,
            };
            let step = crate::report::StepReport::of(&run);
            match &mut report {
                Some(r) => r.steps.push(step),
                None => {
                    report = Some(Report {
                        tool: "sluice bench test".into(),
                        requests: vec![],
                        model: "open".into(),
                        protocol: "http/1.1".into(),
                        streams_per_connection: None,
                        interrupted: false,
                        steps: vec![step],
                    })
                }
            }
        }
        let mut log = Vec::new();
        super::write(&report.unwrap(), &mut log).unwrap();
        let intervals: Vec<(String, u64, u64)> = IntervalLogIterator::new(&log)
            .filter_map(|e| match e {
                Ok(LogEntry::Interval(h)) => Some(h),
                _ => None,
            })
            .map(|h| {
                let hist = decode(h.encoded_histogram()).unwrap();
                let tag = h.tag().map(|t| t.as_str().to_string()).unwrap_or_default();
                (tag, h.start_timestamp().as_secs(), hist.len())
            })
            .collect();
        assert_eq!(
            intervals,
            vec![
                ("step-1".to_string(), 0, 3),
                ("step-1".to_string(), 1, 2),
                ("step-2".to_string(), 4, 4),
            ]
        );
        let text = String::from_utf8_lossy(&log);
        assert!(
            text.contains("#[StartTime: 5.000") && text.contains("microseconds"),
            "{text}"
        );
    }
}
