//! Sampling every tier once a second while a step runs: each process's CPU (its whole
//! process tree), CPU throttling of its budget, memory, open files, its listening port's
//! sockets by state and accept queue, and the tier's own counters (a simulated tier's
//! `/__stats`, sluice's `/metrics`); and the machine's CPU pressure (PSI), listen-queue
//! overflows and the load generator's own CPU.
//!
//! Readings are cumulative counters as the kernel and the tiers give them; what a step
//! did is the difference between two readings (`judge.rs`). Every read is cheap (a few
//! files, one loopback HTTP request per tier), so sampling does not load what it measures.
//! A database's sessions and a local JVM's threads are sampled more often, each on a
//! thread of its own (`crate::database`, `crate::jvm`, which bounds what its thread dumps
//! stop the JVM), and read here as they stand.

use crate::database::{DbReading, DbSampler};
use crate::jvm::{JvmReading, JvmSampler};
use crate::real::Watched;
use sluice_process::cpu_budget::Throttling;
use sluice_process::procfs::{self, TcpStates};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One process at one moment.
#[derive(Debug, Clone, Default)]
pub struct ProcReading {
    pub cpu_s: f64,
    pub rss_kib: u64,
    pub fds: u64,
    pub throttling: Throttling,
    /// CPU seconds of each thread of its process tree, by thread id: a process whose one
    /// busy thread is full is saturated however many cores it may use.
    pub threads: BTreeMap<u32, f64>,
    /// Sockets with its listening port at either end.
    pub tcp: TcpStates,
    /// Its own counters: `/__stats` keys, or each `/metrics` family summed over labels.
    pub counters: BTreeMap<String, f64>,
    /// A database's sessions, sampled since the start (`crate::database`).
    pub db: Option<crate::database::DbReading>,
    /// A JVM's request threads and GC, sampled since the start (`crate::jvm`).
    pub jvm: Option<JvmReading>,
}

/// Every tier at one moment.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Seconds since the sampler started.
    pub t: f64,
    /// In the order of the topology's processes.
    pub procs: Vec<ProcReading>,
    /// The load generator: this process.
    pub generator_cpu_s: f64,
    /// Its cgroup quota's throttling counters (zero without a quota).
    pub generator_throttling: Throttling,
    /// The machine's busy CPU seconds since boot (all its CPUs).
    pub machine_busy_s: Option<f64>,
    pub listen_overflows: u64,
    pub pressure_us: Option<u64>,
}

/// A thread reading every tier each second until dropped.
pub struct Sampler {
    readings: Arc<Mutex<Vec<Reading>>>,
    sources: Arc<Sources>,
    started: Instant,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the sampler reads: the watched processes and URLs, and beside each that is a
/// database, the thread sampling its sessions.
struct Sources {
    watched: Vec<Watched>,
    databases: Vec<Option<DbSampler>>,
    /// Beside each local process that is a JVM (or runs one), the thread sampling it.
    jvms: Vec<Option<JvmSampler>>,
    /// Each tier's database sessions as its exporter counts them, added up here.
    exported: Vec<Mutex<DbReading>>,
    /// The cgroup whose CPU quota holds the load generator (this process), if one does.
    generator_quota: Option<std::path::PathBuf>,
}

impl Sources {
    fn new(watched: Vec<Watched>, databases: Vec<Option<DbSampler>>) -> Sources {
        Sources {
            exported: watched.iter().map(|_| Mutex::default()).collect(),
            generator_quota: crate::real::process_budget(std::process::id()).1,
            jvms: watched.iter().map(|w| w.pid.and_then(jvm_in)).collect(),
            watched,
            databases,
        }
    }
}

impl Sampler {
    pub fn start(watched: &[Watched]) -> Sampler {
        Sampler::with_databases(watched, Vec::new())
    }

    /// A sampler that also reads each database's sessions from `databases` (in the
    /// order of `watched`; `None` for a tier that is not one).
    pub fn with_databases(watched: &[Watched], databases: Vec<Option<DbSampler>>) -> Sampler {
        let sources = Arc::new(Sources::new(watched.to_vec(), databases));
        let readings = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let started = Instant::now();
        let thread = {
            let (sources, readings, stop) = (sources.clone(), readings.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut next = Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = read(&sources, started);
                    readings.lock().expect("not poisoned").push(r);
                    next += Duration::from_secs(1);
                    while Instant::now() < next && !stop.load(std::sync::atomic::Ordering::Relaxed)
                    {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            })
        };
        Sampler {
            readings,
            sources,
            started,
            stop,
            thread: Some(thread),
        }
    }

    /// A reading now (at a step's start or end), kept with the others.
    pub fn now(&self) -> Reading {
        let r = read(&self.sources, self.started);
        self.readings.lock().expect("not poisoned").push(r.clone());
        r
    }

    /// The last two readings, in time order: what the last second did.
    pub fn last_two(&self) -> Option<(Reading, Reading)> {
        let readings = self.readings.lock().expect("not poisoned");
        let mut latest: Vec<&Reading> = readings.iter().rev().take(2).collect();
        latest.sort_by(|a, b| a.t.total_cmp(&b.t));
        match latest[..] {
            [a, b] if b.t > a.t => Some((a.clone(), b.clone())),
            _ => None,
        }
    }

    /// Every reading taken from `from` to `to` (seconds since the start), in time order.
    pub fn between(&self, from: f64, to: f64) -> Vec<Reading> {
        let mut all: Vec<Reading> = self
            .readings
            .lock()
            .expect("not poisoned")
            .iter()
            .filter(|r| r.t >= from && r.t <= to)
            .cloned()
            .collect();
        all.sort_by(|a, b| a.t.total_cmp(&b.t));
        all
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn read(sources: &Sources, started: Instant) -> Reading {
    let watched = &sources.watched;
    // The process table and the socket tables are read once for every tier.
    let pids: Vec<u32> = watched.iter().filter_map(|w| w.pid).collect();
    let mut trees = procfs::trees(&pids).into_iter();
    let ports: Vec<u16> = watched.iter().filter_map(|w| w.port).collect();
    let mut tcp = procfs::tcp_states_of(&ports).into_iter();
    let procs = watched
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let tree = w.pid.and_then(|_| trees.next());
            let tcp = w.port.and_then(|_| tcp.next()).unwrap_or_default();
            let mut r = read_proc(w, tree, tcp);
            r.db = sources
                .databases
                .get(i)
                .and_then(|d| d.as_ref().map(DbSampler::reading));
            if r.db.is_none() {
                r.db = exported_sessions(sources, i, &r.counters);
            }
            r.jvm = sources
                .jvms
                .get(i)
                .and_then(|j| j.as_ref().map(JvmSampler::reading));
            if let Some(jvm) = &r.jvm {
                jvm.gc_counters(&mut r.counters);
            }
            r
        })
        .collect();
    Reading {
        t: started.elapsed().as_secs_f64(),
        procs,
        generator_cpu_s: procfs::cpu_seconds(std::process::id()),
        generator_throttling: sources
            .generator_quota
            .as_deref()
            .map(sluice_process::cpu_budget::throttling_at)
            .unwrap_or_default(),
        machine_busy_s: procfs::machine_busy_seconds(),
        listen_overflows: procfs::listen_overflows().unwrap_or(0),
        pressure_us: procfs::cpu_pressure_total_us(),
    }
}

/// The sampler of the JVM that `pid` is, or that runs in its process tree (a script
/// that starts `java`).
fn jvm_in(pid: u32) -> Option<JvmSampler> {
    let tree = procfs::trees(&[pid]).into_iter().next();
    let jvm = tree
        .unwrap_or_else(|| vec![pid])
        .into_iter()
        .find(|p| crate::jvm::is_jvm(*p))?;
    Some(JvmSampler::start(jvm))
}

/// A database's sessions from its exporter's counters (mysqld_exporter's,
/// postgres_exporter's), one sample a reading, added to those before.
fn exported_sessions(
    sources: &Sources,
    i: usize,
    counters: &BTreeMap<String, f64>,
) -> Option<DbReading> {
    let snapshot = crate::database::exported::snapshot(counters)?;
    let mut sum = sources.exported.get(i)?.lock().expect("not poisoned");
    sum.add(&snapshot);
    Some(sum.clone())
}

/// One tier's reading: its process tree's figures (`tree`, for a local process) or its
/// exporter's, its counters, its throttling, and its port's sockets (`tcp`).
fn read_proc(w: &Watched, tree: Option<Vec<u32>>, tcp: TcpStates) -> ProcReading {
    let counters = w.stats.as_deref().map(counters).unwrap_or_default();
    let mut r = ProcReading {
        throttling: w
            .throttled
            .as_ref()
            .map(crate::budget::Throttled::read)
            .unwrap_or_default(),
        tcp,
        ..ProcReading::default()
    };
    match tree {
        Some(tree) => {
            r.cpu_s = tree.iter().map(|p| procfs::cpu_seconds(*p)).sum();
            r.rss_kib = tree.iter().map(|p| procfs::rss_kib(*p)).sum();
            r.fds = tree.iter().map(|p| procfs::open_fds(*p)).sum();
            r.threads = tree
                .iter()
                .flat_map(|p| procfs::thread_cpu_seconds(*p))
                .collect();
        }
        // A remote tier: its machine's busy CPU (node_exporter), else its process's;
        // an exporter's `process_*` families are its own, not the process it reports on.
        None => {
            let own = !exports_another_process(&counters);
            let get = |k: &str| {
                counters
                    .get(k)
                    .copied()
                    .filter(|_| own || !k.starts_with("process_"))
            };
            // Micrometer (Spring Boot) counts a JVM's CPU in nanoseconds; the
            // Prometheus client libraries in seconds.
            r.cpu_s = get(NODE_BUSY)
                .or(get("process_cpu_seconds_total"))
                .or(get("process_cpu_time_ns_total").map(|ns| ns / 1e9))
                .or(get(crate::redis::REDIS_CPU))
                .unwrap_or(0.0);
            r.rss_kib = get("process_resident_memory_bytes").map_or(0, |b| (b / 1024.0) as u64);
            r.fds = get("process_open_fds").map_or(0, |n| n as u64);
        }
    }
    r.counters = counters;
    r
}

/// Whether these are the metrics of an exporter reporting on another process or a
/// machine (node_exporter, postgres_exporter, mysqld_exporter, redis_exporter: each
/// publishes `<name>_exporter_build_info`): their `process_*` families, CPU, memory and
/// descriptors, are the exporter's own. The JMX exporter runs inside the JVM it
/// reports on (a Java agent), so its `process_*` are that JVM's.
pub fn exports_another_process(counters: &BTreeMap<String, f64>) -> bool {
    counters.keys().any(|k| {
        k.strip_suffix("_exporter_build_info")
            .is_some_and(|name| name != "jmx")
    })
}

/// node_exporter's CPU seconds not idle, summed over CPUs (a derived counter).
pub const NODE_BUSY: &str = "node_cpu_busy_seconds";
/// sluice's attempts on its servers that ended 5xx or without a response (derived).
pub const LB_FAILED: &str = "sluice_upstream_failed";
/// node_exporter's CPU count (a derived gauge).
pub const NODE_CPUS: &str = "node_cpus";
/// The app's requests and their seconds (Micrometer's `http_server_requests_seconds`),
/// without the actuator's own (the lab's scrapes among them): derived counters.
pub const APP_REQUESTS: &str = "app_requests";
pub const APP_REQUEST_SECONDS: &str = "app_request_seconds";

/// A tier's counters from `url`: `key=value` words (`/__stats`), Prometheus text, or
/// Redis's INFO (`redis://`).
pub fn counters(url: &str) -> BTreeMap<String, f64> {
    if url.starts_with("redis://") {
        return crate::redis::counters(url);
    }
    if let Some(Ok(source)) = crate::prometheus::Source::parse(url) {
        return counters_of(&source.series());
    }
    let Some(body) = crate::fetch::http_get(url) else {
        return BTreeMap::new();
    };
    if url.ends_with("/__stats") {
        return body
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
            .collect();
    }
    exposition_counters(&body)
}

/// Each family of a Prometheus exposition summed over its labels, plus the derived
/// counters the judge reads (node_exporter's busy CPU and CPU count, sluice's failed
/// attempts).
pub fn exposition_counters(body: &str) -> BTreeMap<String, f64> {
    counters_of(&crate::prom::parse(body))
}

/// [`exposition_counters`] of samples however read (an exporter's text, Prometheus's API).
pub fn counters_of(samples: &[crate::prom::Sample]) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let mut cpus = std::collections::BTreeSet::new();
    for s in samples {
        if s.name == "sluice_upstream_requests_total"
            && s.labels.get("code").is_some_and(|c| c == "5xx")
        {
            *out.entry(LB_FAILED.to_string()).or_insert(0.0) += s.value;
        }
        for key in crate::database::exported::derived(&s.name, &s.labels) {
            *out.entry(key.to_string()).or_insert(0.0) += s.value;
        }
        let actuator = s
            .labels
            .get("uri")
            .is_some_and(|u| u.starts_with("/actuator"));
        match s.name.as_str() {
            "http_server_requests_seconds_count" if !actuator => {
                *out.entry(APP_REQUESTS.to_string()).or_insert(0.0) += s.value
            }
            "http_server_requests_seconds_sum" if !actuator => {
                *out.entry(APP_REQUEST_SECONDS.to_string()).or_insert(0.0) += s.value
            }
            _ => {}
        }
        if s.name == "node_cpu_seconds_total" {
            let mode = s.labels.get("mode").map_or("", |m| m.as_str());
            if !matches!(mode, "idle" | "iowait" | "steal") {
                *out.entry(NODE_BUSY.to_string()).or_insert(0.0) += s.value;
            }
            cpus.extend(s.labels.get("cpu").cloned());
        }
        *out.entry(s.name.clone()).or_insert(0.0) += s.value;
    }
    if !cpus.is_empty() {
        out.insert(NODE_CPUS.to_string(), cpus.len() as f64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// An exporter answering every request with `body` as Prometheus text, on loopback.
    fn exporter(body: &'static str) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let mut buf = [0u8; 4096];
                let _ = std::io::Read::read(&mut s, &mut buf);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(body.as_bytes());
            }
        });
        format!("http://{addr}/actuator/prometheus")
    }

    /// One reading of a tier `app` read from `url` alone.
    fn reading_of(url: &str) -> Reading {
        let tier = crate::real::parse_tier(&format!("app={url}")).unwrap();
        read(&Sources::new(tier, Vec::new()), Instant::now())
    }

    #[test]
    fn a_jvm_metrics_url_gives_its_cpu_in_nanoseconds() {
        // What a real Spring Boot 3.5.7 app published (`lab/spring-app`), in both of
        // its formats.
        let om = exporter(include_str!(
            "../tests/fixtures/spring-boot-3.5.7-under-load-openmetrics.txt"
        ));
        assert_eq!(reading_of(&om).procs[0].cpu_s, 18.84);
        let url = exporter(include_str!(
            "../tests/fixtures/spring-boot-3.5.7-under-load.txt"
        ));
        let r = reading_of(&url);
        assert_eq!(r.procs[0].cpu_s, 14.26);
        assert_eq!(r.procs[0].counters.get("system_cpu_count"), Some(&2.0));
    }

    #[test]
    fn an_exporters_own_process_figures_are_not_its_tiers() {
        // postgres_exporter's families (as Debian's 0.11 publishes them): its CPU,
        // memory and descriptors are its own, not the database's.
        let exporter_of_db = exporter(
            "pg_up 1\npostgres_exporter_build_info{version=\"0.11.1\"} 1\nprocess_cpu_seconds_total 3.5\nprocess_resident_memory_bytes 2.048e+07\nprocess_open_fds 9\n",
        );
        let r = reading_of(&exporter_of_db);
        assert_eq!(
            (r.procs[0].cpu_s, r.procs[0].rss_kib, r.procs[0].fds),
            (0.0, 0, 0)
        );
        // The JMX exporter runs inside the JVM it reports on: its figures are the JVM's.
        let agent = exporter(
            "jmx_exporter_build_info{version=\"1.0.1\"} 1\nprocess_cpu_seconds_total 3.5\nprocess_open_fds 9\n",
        );
        let r = reading_of(&agent);
        assert_eq!((r.procs[0].cpu_s, r.procs[0].fds), (3.5, 9));
    }
}
