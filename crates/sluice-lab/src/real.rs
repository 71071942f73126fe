//! Tiers the lab did not start: local processes by pid, remote ones through the
//! Prometheus exporters that already run beside them (node_exporter for a machine, the
//! JMX exporter's Tomcat and HikariCP metrics, sluice's own `/metrics`). No agent of
//! our own: exporters are the agents.
//!
//! `--tier app=1234,1235 --tier db=http://db.internal:9100/metrics`: a tier is a name
//! and a list of pids or URLs. A database's URL (`postgres://`, `mysql://`) is read for
//! its sessions (`crate::database`); on this machine, the process listening on its port
//! is read too. A local process's CPU budget is found the way the kernel
//! applies it: its cgroup's CPU quota (v1 `cpu.cfs_quota_us`, v2 `cpu.max`, the
//! tightest along its path), else its CPU affinity, else the machine's cores.

use crate::budget::{Budget, Throttled};
use crate::database::DbUrl;
use std::path::{Path, PathBuf};

/// Why a `--tier` cannot be watched. Each names the flag as written, to be fixed there.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TierError {
    #[error("--tier {0}: write NAME=PID[,PID...], NAME=http://HOST:PORT/metrics, NAME=postgres://USER@HOST:PORT/DB (or mysql://), NAME=redis://HOST:PORT, NAME=prometheus+http://HOST:PORT/?job=JOB, or NAME=PID@URL")]
    Form(String),
    #[error("--tier {0}: a name and at least one pid or URL")]
    Empty(String),
    #[error("--tier {tier}={item}: HTTPS exporters are not read yet; use an http:// endpoint")]
    Https { tier: String, item: String },
    #[error("--tier {tier}={item}: not a pid nor a URL the lab reads (http://, postgres://, mysql://, redis://, prometheus+http://)")]
    NotPid { tier: String, item: String },
    #[error("--tier {tier}={pid}: no such process")]
    NoProcess { tier: String, pid: u32 },
    /// A Prometheus server that did not answer, or has no target with those labels.
    #[error("--tier {tier}={item}: {why}")]
    Prometheus {
        tier: String,
        item: String,
        why: String,
    },
    #[error("--tier {tier}={item}: {why}")]
    DbUrl {
        tier: String,
        item: String,
        why: String,
    },
    /// A database whose sessions cannot be read (found before the run).
    #[error("--tier {tier}={url}: its sessions cannot be read: {error}")]
    Database {
        tier: String,
        url: String,
        error: String,
    },
    /// An exporter's URL that gave nothing to read (found at the first reading).
    #[error("--tier {tier}={url}: nothing to read there (Prometheus text, or Redis's INFO)")]
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
    /// Where its sessions are read, for a database.
    pub database: Option<DbUrl>,
    /// Where its budget's throttling counters are read.
    pub throttled: Option<Throttled>,
    pub budget: Budget,
}

/// Parses `--tier NAME=ITEM,ITEM...`, each item one instance of the tier: a pid, an
/// `http://` URL of Prometheus text, or both as `PID@URL` (a process and its metrics).
/// The same pid twice is one instance, and so is a bare URL on this machine whose port a
/// bare pid of the list listens on (a Spring Boot actuator, a JMX exporter agent inside
/// the JVM): an operator listing both for the same servers has that many servers, not
/// twice as many. Instances are named by pid (`app[pid 1234]`), or by address for a URL
/// alone (`db[10.0.0.5:9100]`).
pub fn parse_tier(spec: &str) -> Result<Vec<Watched>, TierError> {
    let (tier, list) = spec
        .split_once('=')
        .ok_or_else(|| TierError::Form(spec.into()))?;
    if tier.is_empty() || list.is_empty() {
        return Err(TierError::Empty(spec.into()));
    }
    let mut out: Vec<Watched> = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.starts_with(crate::prometheus::SCHEME) {
            out.extend(prometheus_targets(tier, item)?);
            continue;
        }
        let w = instance(tier, item)?;
        match out.iter_mut().find(|o| w.pid.is_some() && o.pid == w.pid) {
            Some(same) => join(same, w),
            None => out.push(w),
        }
    }
    fold_process_trees(&mut out);
    merge_metrics_into_processes(&mut out);
    join_remote_databases(&mut out);
    for w in &mut out {
        w.name = match (w.pid, w.stats.as_deref(), &w.database) {
            (Some(pid), _, _) => format!("{tier}[pid {pid}]"),
            (None, _, Some(db)) => format!("{tier}[{}:{}]", db.host, db.port),
            // Named by its target's `instance` label already.
            (None, Some(url), _) if url.starts_with(crate::prometheus::SCHEME) => w.name.clone(),
            (None, Some(url), None) => format!("{tier}[{}]", authority(url)),
            (None, None, None) => tier.to_string(),
        };
        if w.port.is_none() {
            // Its sockets: the one port its process listens on, else a loopback URL's
            // (a Spring Boot actuator answers on the app's own port).
            w.port = w
                .pid
                .and_then(only_listening_port)
                .or_else(|| w.stats.as_deref().and_then(local_port));
        }
    }
    Ok(out)
}

/// A Prometheus server's targets of a job: one instance each, named by its `instance`
/// label, read through the server's API.
fn prometheus_targets(tier: &str, item: &str) -> Result<Vec<Watched>, TierError> {
    let error = |why: String| TierError::Prometheus {
        tier: tier.into(),
        item: item.into(),
        why,
    };
    let source = crate::prometheus::Source::parse(item)
        .expect("a prometheus+ URL")
        .map_err(error)?;
    let instances = source.instances().map_err(error)?;
    if instances.is_empty() {
        return Err(error(
            "Prometheus has no target with these labels (up{...} is empty)".into(),
        ));
    }
    Ok(instances
        .iter()
        .map(|instance| Watched {
            name: format!("{tier}[{instance}]"),
            tier: tier.into(),
            pid: None,
            port: None,
            stats: Some(source.instance_url(instance)),
            database: None,
            throttled: None,
            // Filled from its CPU count, or its machine's node_exporter, at the first reading.
            budget: Budget {
                cores: 0.0,
                method: "the exporter's CPU count".into(),
            },
        })
        .collect())
}

/// One item of a `--tier` list: `PID`, `URL` or `PID@URL`.
fn instance(tier: &str, item: &str) -> Result<Watched, TierError> {
    match item.split_once('@') {
        Some((pid, url)) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => {
            let mut w = watched(tier, String::new(), pid)?;
            if url.bytes().all(|b| b.is_ascii_digit()) {
                return Err(TierError::NotPid {
                    tier: tier.into(),
                    item: item.into(),
                });
            }
            let mut of_url = watched(tier, String::new(), url)?;
            // The pid given is the one read, whoever listens on the URL's port.
            of_url.pid = w.pid;
            join(&mut w, of_url);
            Ok(w)
        }
        _ => watched(tier, String::new(), item),
    }
}

/// Two items that are one instance (the same pid; a pid and its URL): what each says.
fn join(into: &mut Watched, other: Watched) {
    into.stats = into.stats.take().or(other.stats);
    into.database = into.database.take().or(other.database);
    into.port = into.port.or(other.port);
}

/// The one port a process tree listens on, if it listens on exactly one: its sockets
/// are the tier's socket figures.
fn only_listening_port(pid: u32) -> Option<u16> {
    match sluice_process::procfs::listening_ports(&sluice_process::procfs::tree(pid))[..] {
        [port] => Some(port),
        _ => None,
    }
}

/// Drops each listed pid that descends from another listed pid (nginx's workers listed
/// beside their master): a process is read with its whole tree, so it would count twice.
/// Its metrics URL, if any, goes to the ancestor.
fn fold_process_trees(list: &mut Vec<Watched>) {
    let trees: Vec<Vec<u32>> = list
        .iter()
        .map(|w| w.pid.map(sluice_process::procfs::tree).unwrap_or_default())
        .collect();
    let mut i = 0;
    while i < list.len() {
        let pid = list[i].pid;
        let ancestor = (0..list.len()).find(|&j| {
            j != i && pid.is_some_and(|p| list[j].pid != Some(p) && trees[j].contains(&p))
        });
        match ancestor {
            Some(j) => {
                let child = list.remove(i);
                let j = if j > i { j - 1 } else { j };
                join(&mut list[j], child);
                return fold_process_trees(list);
            }
            None => i += 1,
        }
    }
}

/// Joins each metrics URL alone on a loopback address to the process of the list that
/// listens on its port.
fn merge_metrics_into_processes(list: &mut Vec<Watched>) {
    join_where(list, |list, alone| {
        let port = match (&alone.pid, alone.stats.as_deref()) {
            (None, Some(url)) => local_port(url)?,
            _ => return None,
        };
        list.iter().position(|w| {
            w.stats.is_none()
                && w.pid.is_some_and(|pid| {
                    let tree = sluice_process::procfs::tree(pid);
                    sluice_process::procfs::listening_ports(&tree).contains(&port)
                })
        })
    });
}

/// A remote database's URL and an `http://` exporter on its host (node_exporter beside
/// it, as on a database's own machine): one instance, its sessions read from the one and
/// its machine's CPU from the other, so the database's CPU is judged where the lab cannot
/// read its process.
fn join_remote_databases(list: &mut Vec<Watched>) {
    join_where(list, |list, exporter| {
        let url = exporter
            .stats
            .as_deref()
            .filter(|u| u.starts_with("http://"))?;
        let (host, _) = authority(url).rsplit_once(':')?;
        if exporter.pid.is_some() || exporter.database.is_some() {
            return None;
        }
        list.iter().position(|w| {
            w.pid.is_none()
                && w.stats.is_none()
                && w.database
                    .as_ref()
                    .is_some_and(|db| !db.is_local() && db.host == host)
        })
    });
}

/// Joins each item of `list` into the one `into` finds for it (given the list and the
/// item), removing it from the list.
fn join_where(list: &mut Vec<Watched>, into: impl Fn(&[Watched], &Watched) -> Option<usize>) {
    let mut i = 0;
    while i < list.len() {
        match into(list, &list[i]).filter(|&o| o != i) {
            Some(o) => {
                let item = list.remove(i);
                let o = if o > i { o - 1 } else { o };
                join(&mut list[o], item);
            }
            None => i += 1,
        }
    }
}

/// `HOST:PORT` of a URL (`http://`, `redis://`), without any user or password.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

/// The port of an `http://` URL on this machine's loopback (`127.x`, `localhost`, `[::1]`).
fn local_port(url: &str) -> Option<u16> {
    // A Prometheus tier's URL is the server's, not its target's.
    if !url.starts_with("http://") {
        return None;
    }
    let (host, port) = authority(url).rsplit_once(':')?;
    let local = crate::url::is_loopback_host(host);
    local.then(|| port.parse().ok()).flatten()
}

fn watched(tier: &str, name: String, item: &str) -> Result<Watched, TierError> {
    if let Some(db) = DbUrl::parse(item) {
        let db = db.map_err(|why| TierError::DbUrl {
            tier: tier.into(),
            item: crate::url::masked(item),
            why,
        })?;
        return Ok(database(tier, name, db));
    }
    if item.starts_with("redis://") {
        return Ok(redis(tier, name, item));
    }
    if item.starts_with("http://") {
        return Ok(Watched {
            name,
            tier: tier.into(),
            pid: None,
            port: None,
            stats: Some(item.into()),
            database: None,
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
        database: None,
        throttled: cgroup.map(Throttled::Cgroup),
        budget,
    })
}

/// Redis: its INFO, and on this machine the process listening on its port. Without
/// that process, its budget is the one core its commands run on.
fn redis(tier: &str, name: String, url: &str) -> Watched {
    let port = crate::redis::address(url)
        .and_then(|(host, _)| host.rsplit_once(':').and_then(|(_, p)| p.parse().ok()));
    let local = local_port(&url.replacen("redis://", "http://", 1)).is_some();
    let pid = port
        .filter(|_| local)
        .and_then(sluice_process::procfs::listener_pid);
    let (budget, cgroup) = match pid {
        Some(pid) => process_budget(pid),
        None => (
            Budget {
                cores: 1.0,
                method: "one core: Redis runs commands on one thread".into(),
            },
            None,
        ),
    };
    Watched {
        name,
        tier: tier.into(),
        pid,
        port,
        stats: Some(url.into()),
        database: None,
        throttled: cgroup.map(Throttled::Cgroup),
        budget,
    }
}

/// A database's URL: its sessions, and on this machine the process listening on its
/// port (found as root, or as the database's own user), with that process's budget.
fn database(tier: &str, name: String, db: DbUrl) -> Watched {
    let pid = db
        .is_local()
        .then(|| sluice_process::procfs::listener_pid(db.port))
        .flatten();
    let (budget, cgroup) = match pid {
        Some(pid) => process_budget(pid),
        None => (
            Budget {
                cores: 0.0,
                method: "not read (the database's process is not on this machine)".into(),
            },
            None,
        ),
    };
    Watched {
        name,
        tier: tier.into(),
        pid,
        port: Some(db.port),
        stats: None,
        throttled: cgroup.map(Throttled::Cgroup),
        budget,
        database: Some(db),
    }
}

/// The CPU a process may use: its cgroup quota, else its affinity, else the machine.
pub fn process_budget(pid: u32) -> (Budget, Option<PathBuf>) {
    if let Some(q) = sluice_process::cpu_budget::quota_of(pid) {
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
                method: format!("CPU affinity: {n} core{}", if n == 1 { "" } else { "s" }),
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
        // The same process twice is one instance.
        let t = parse_tier(&format!("app={me},{me}")).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].name, format!("app[pid {me}]"));
        assert!(t[0].budget.cores > 0.0);
        let db = parse_tier("db=http://127.0.0.1:9100/metrics").unwrap();
        assert_eq!(
            db[0].stats.as_deref(),
            Some("http://127.0.0.1:9100/metrics")
        );
        assert_eq!(db[0].name, "db[127.0.0.1:9100]");
        let both = parse_tier(&format!(
            "app={me}@http://127.0.0.1:8081/actuator/prometheus"
        ));
        let both = both.unwrap();
        assert_eq!((both.len(), both[0].pid), (1, Some(me)));
        assert_eq!(
            both[0].stats.as_deref(),
            Some("http://127.0.0.1:8081/actuator/prometheus")
        );
        assert_eq!(
            parse_tier("app").unwrap_err().to_string(),
            "--tier app: write NAME=PID[,PID...], NAME=http://HOST:PORT/metrics, NAME=postgres://USER@HOST:PORT/DB (or mysql://), NAME=redis://HOST:PORT, NAME=prometheus+http://HOST:PORT/?job=JOB, or NAME=PID@URL"
        );
        assert_eq!(
            parse_tier("app=notapid").unwrap_err().to_string(),
            "--tier app=notapid: not a pid nor a URL the lab reads (http://, postgres://, mysql://, redis://, prometheus+http://)"
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

    #[test]
    fn a_remote_database_and_the_exporter_on_its_host_are_one_instance() {
        let t = parse_tier(
            "db=postgres://lab@10.0.0.5:5432/shop,http://10.0.0.5:9100/metrics,http://10.0.0.6:9100/metrics",
        )
        .unwrap();
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t[0].name, "db[10.0.0.5:5432]");
        assert_eq!(t[0].stats.as_deref(), Some("http://10.0.0.5:9100/metrics"));
        assert_eq!(t[1].name, "db[10.0.0.6:9100]");
        assert!(t[1].database.is_none());
    }

    #[test]
    fn a_child_listed_beside_its_parent_is_counted_once() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let t = parse_tier(&format!("lb={me},{}", child.id())).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(t[0].pid, Some(me));
    }

    #[test]
    fn a_pid_and_the_metrics_url_it_serves_are_one_instance() {
        let me = std::process::id();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let other_port = other.local_addr().unwrap().port();
        drop(other);
        // This process listens on `port`: its URL is its metrics, one server.
        let url = format!("http://127.0.0.1:{port}/actuator/prometheus");
        let t = parse_tier(&format!("app={me},{url}")).unwrap();
        assert_eq!(t.len(), 1, "{t:?}");
        assert_eq!(
            (t[0].pid, t[0].stats.as_deref()),
            (Some(me), Some(url.as_str()))
        );
        // Nothing of it listens on `other_port`: a second instance, named by address.
        let t = parse_tier(&format!("app={me},http://127.0.0.1:{other_port}/metrics")).unwrap();
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t[1].name, format!("app[127.0.0.1:{other_port}]"));
        drop(listener);
    }
}
