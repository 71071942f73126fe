//! The standard `process_*` metrics (as Prometheus' client libraries name them), read
//! from Linux's /proc at scrape time.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;
use sluice_proxy::Snapshot;
use std::fmt::Error;
use std::time::UNIX_EPOCH;

/// Linux's clock ticks per second in /proc/*/stat (USER_HZ: 100 on every architecture
/// Linux exports to user space with a fixed value).
const TICKS_PER_SECOND: f64 = 100.0;

/// What /proc says about this process.
#[derive(Debug, Default, PartialEq)]
pub struct Process {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: u64,
    pub max_fds: u64,
}

impl Process {
    pub fn read() -> Process {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        // Fields after the command name (which may hold spaces), from field 3 on.
        let fields: Vec<&str> = stat
            .rsplit_once(") ")
            .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
        let field =
            |n: usize| -> u64 { fields.get(n - 3).and_then(|v| v.parse().ok()).unwrap_or(0) };
        Process {
            cpu_seconds: (field(14) + field(15)) as f64 / TICKS_PER_SECOND,
            virtual_bytes: field(23),
            resident_bytes: resident_kib() * 1024,
            open_fds: std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64),
            max_fds: rlimit::getrlimit(rlimit::Resource::NOFILE).map_or(0, |(soft, _)| soft),
        }
    }
}

/// VmRSS from /proc/self/status (in KiB whatever the page size).
fn resident_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

pub fn encode(enc: &mut DescriptorEncoder, s: &Snapshot) -> Result<(), Error> {
    let p = Process::read();
    let seconds = Some(&Unit::Seconds);
    let bytes = Some(&Unit::Bytes);
    let m = enc.encode_descriptor(
        "process_cpu",
        "Total user and system CPU time spent",
        seconds,
        MetricType::Counter,
    )?;
    ConstCounter::new(p.cpu_seconds).encode(m)?;
    let started = s
        .started
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let gauges: [(&str, &str, Option<&Unit>, f64); 5] = [
        (
            "process_resident_memory",
            "Resident memory size",
            bytes,
            p.resident_bytes as f64,
        ),
        (
            "process_virtual_memory",
            "Virtual memory size",
            bytes,
            p.virtual_bytes as f64,
        ),
        (
            "process_open_fds",
            "Open file descriptors",
            None,
            p.open_fds as f64,
        ),
        (
            "process_max_fds",
            "The limit of open file descriptors",
            None,
            p.max_fds as f64,
        ),
        (
            "process_start_time",
            "Start time of the process since the Unix epoch",
            seconds,
            started,
        ),
    ];
    for (name, help, unit, value) in gauges {
        let m = enc.encode_descriptor(name, help, unit, MetricType::Gauge)?;
        ConstGauge::new(value).encode(m)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_read() {
        let p = Process::read();
        assert!(p.resident_bytes > 1 << 20, "{p:?}");
        assert!(p.virtual_bytes >= p.resident_bytes, "{p:?}");
        assert!(p.open_fds >= 3 && p.max_fds >= p.open_fds, "{p:?}");
    }
}
