//! Tiers the lab did not start: local processes by pid, remote ones through the
//! Prometheus exporters that already run beside them (node_exporter for a machine, the
//! JMX exporter's Tomcat and HikariCP metrics, sluice's own `/metrics`). No agent of
//! our own: exporters are the agents.
//!
//! `--tier app=1234,1235 --tier db=http://db.internal:9100/metrics`: a tier is a name
//! and a list of pids or URLs. A local process's CPU budget is found the way the kernel
//! applies it: its cgroup's CPU quota (v1 `cpu.cfs_quota_us`, v2 `cpu.max`, the
//! tightest along its path), else its CPU affinity, else the machine's cores.

use crate::budget::{Budget, Throttled};
use std::path::{Path, PathBuf};

/// Why a `--tier` cannot be watched. Each names the flag as written, to be fixed there.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TierError {
    #[error("--tier {0}: write NAME=PID[,PID...] or NAME=http://HOST:PORT/metrics")]
    Form(String),
    #[error("--tier {0}: a name and at least one pid or URL")]
    Empty(String),
    #[error("--tier {tier}={item}: HTTPS exporters are not read yet; use an http:// endpoint")]
    Https { tier: String, item: String },
    #[error("--tier {tier}={item}: not a pid or an http:// URL")]
    NotPid { tier: String, item: String },
    #[error("--tier {tier}={pid}: no such process")]
    NoProcess { tier: String, pid: u32 },
    /// An exporter's URL that gave nothing to read (found at the first reading).
    #[error("--tier {tier}={url}: no Prometheus metrics there")]
    NoMetrics { tier: String, url: String },
}

/// One thing the sampler watches: a local process or an exporter's URL.
#[derive(Debug, Clone)]
pub struct Watched {
    pub name: String,
    pub tier: String,
    pub pid: Option<u32>,
    /// A port whose sockets are counted (the tier's listening port, when known).
    pub port: Option<u16>,
    /// Where its counters are read.
    pub stats: Option<String>,
    /// Where its budget's throttling counters are read.
    pub throttled: Option<Throttled>,
    pub budget: Budget,
}

/// Parses `--tier NAME=PID,PID` / `--tier NAME=URL`, each element a pid or an
/// `http://` URL of Prometheus text.
pub fn parse_tier(spec: &str) -> Result<Vec<Watched>, TierError> {
    let (tier, list) = spec
        .split_once('=')
        .ok_or_else(|| TierError::Form(spec.into()))?;
    if tier.is_empty() || list.is_empty() {
        return Err(TierError::Empty(spec.into()));
    }
    let items: Vec<&str> = list.split(',').collect();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let name = if items.len() == 1 {
            tier.to_string()
        } else {
            format!("{tier}-{}", i + 1)
        };
        out.push(watched(tier, name, item.trim())?);
    }
    Ok(out)
}

fn watched(tier: &str, name: String, item: &str) -> Result<Watched, TierError> {
    if item.starts_with("http://") {
        return Ok(Watched {
            name,
            tier: tier.into(),
            pid: None,
            port: None,
            stats: Some(item.into()),
            throttled: None,
            // Filled from the exporter's CPU count at the first reading.
            budget: Budget {
                cores: 0.0,
                method: "the exporter's CPU count".into(),
            },
        });
    }
    if item.starts_with("https://") {
        return Err(TierError::Https {
            tier: tier.into(),
            item: item.into(),
        });
    }
    let pid: u32 = item.parse().map_err(|_| TierError::NotPid {
        tier: tier.into(),
        item: item.into(),
    })?;
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return Err(TierError::NoProcess {
            tier: tier.into(),
            pid,
        });
    }
    let (budget, cgroup) = process_budget(pid);
    Ok(Watched {
        name,
        tier: tier.into(),
        pid: Some(pid),
        port: None,
        stats: None,
        throttled: cgroup.map(Throttled::Cgroup),
        budget,
    })
}

/// The CPU a process may use: its cgroup quota, else its affinity, else the machine.
pub fn process_budget(pid: u32) -> (Budget, Option<PathBuf>) {
    if let Some(q) = sluice_lab::cpu_budget::quota_of(pid) {
        let method = q.method.into();
        return (
            Budget {
                cores: q.cores,
                method,
            },
            Some(q.dir),
        );
    }
    let machine = crate::budget::machine_budget();
    match affinity(pid) {
        Some(n) if (n as f64) < machine.cores => (
            Budget {
                cores: n as f64,
                method: format!("CPU affinity: {n} cores"),
            },
            None,
        ),
        _ => (machine, None),
    }
}

/// CPUs the process may run on (`Cpus_allowed_list`, e.g. `0-1,4`).
fn affinity(pid: u32) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?
        .trim();
    let mut n = 0;
    for part in list.split(',') {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<usize>().ok()? - a.parse::<usize>().ok()? + 1,
            None => 1,
        };
    }
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_read_from_the_command_line() {
        let me = std::process::id();
        let t = parse_tier(&format!("app={me},{me}")).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].name.as_str(), t[1].name.as_str()), ("app-1", "app-2"));
        assert!(t[0].budget.cores > 0.0);
        let db = parse_tier("db=http://127.0.0.1:9100/metrics").unwrap();
        assert_eq!(
            db[0].stats.as_deref(),
            Some("http://127.0.0.1:9100/metrics")
        );
        assert_eq!(
            parse_tier("app").unwrap_err().to_string(),
            "--tier app: write NAME=PID[,PID...] or NAME=http://HOST:PORT/metrics"
        );
        assert_eq!(
            parse_tier("app=notapid").unwrap_err().to_string(),
            "--tier app=notapid: not a pid or an http:// URL"
        );
        let max = u32::MAX;
        assert_eq!(
            parse_tier(&format!("app={max}")).unwrap_err().to_string(),
            format!("--tier app={max}: no such process")
        );
        assert!(matches!(parse_tier("app="), Err(TierError::Empty(_))));
        assert!(matches!(
            parse_tier("db=https://h/"),
            Err(TierError::Https { .. })
        ));
        assert_eq!(affinity(me).map(|n| n > 0), Some(true));
    }
}
