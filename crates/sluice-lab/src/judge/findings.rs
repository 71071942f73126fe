//! A finding (what the judge says beside a verdict: a kind, whom it is about, its
//! sentence), and the findings that come with any verdict: upstream keep-alive off,
//! metrics missing for a judgement, the machine's CPUs taken by other processes, STOMP
//! messages lost between rooms split over servers.

use super::thresholds::{
    CONTENDED_PSI_PCT, CONTENDED_TIER_BELOW, KEEPALIVE_OFF_PER_REQUEST, LOST_MESSAGES_PCT,
};
use super::{Delta, FindingKind, Kind, Load, MachineCpu, Resource, Verdict};
use serde::{Serialize, Serializer};

/// One thing the judge says beside a verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub kind: FindingKind,
    /// Whom it is about: a tier, a process, `machine`.
    pub subject: String,
    /// The sentence the reports print.
    pub text: String,
}

impl Finding {
    pub fn new(kind: FindingKind, subject: &str, text: String) -> Finding {
        Finding {
            kind,
            subject: subject.into(),
            text,
        }
    }
}

/// The JSON's findings are their sentences (an interface: `["upstream keep-alive is
/// off: ...", ...]`).
impl Serialize for Finding {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Adds `new` to `findings` unless one of its kind about its subject is there already:
/// a tier's processes each find what is missing of their tier, and it is said once.
pub(super) fn merge(findings: &mut Vec<Finding>, new: Finding) {
    if !findings
        .iter()
        .any(|f| f.kind == new.kind && f.subject == new.subject)
    {
        findings.push(new);
    }
}

/// A new connection to the app servers per request: upstream keep-alive off (or an app
/// server closing each connection), a finding with any verdict. Read from the simulated
/// servers' counters, else from a sluice in front (its connections opened over its
/// attempts), else from the app servers' sockets in TIME_WAIT (each closed connection
/// leaves one for 60 s: over the last minute's requests, or the run's if shorter).
pub(super) fn keepalive_off(deltas: &[Delta], load: Load) -> Option<Finding> {
    let apps: Vec<&Delta> = deltas.iter().filter(|d| d.info.tier == "app").collect();
    let time_wait: u64 = apps.iter().map(|d| d.b.tcp.time_wait).sum();
    let all: Vec<&Delta> = deltas.iter().collect();
    let (per_request, how) = counted(&apps, ("connections", "requests"))
        .map(|n| (n, "new connections to the app servers"))
        .or_else(|| {
            let n = counted(&all, (LB_OPENED, LB_ATTEMPTS))?;
            Some((n, "new connections from the balancer to its servers"))
        })
        .or_else(|| {
            let n = closed(&apps, time_wait, load)?;
            Some((
                n,
                "connections closed by or to the app servers (sockets left in TIME_WAIT)",
            ))
        })?;
    if per_request < KEEPALIVE_OFF_PER_REQUEST {
        return None;
    }
    // With no balancer in front, it is the app servers that close what clients opened.
    if !deltas.iter().any(|d| d.info.tier == "lb") {
        let text = format!(
            "the app servers keep no connection alive: {per_request:.2} {how} per request; {time_wait} sockets in TIME_WAIT"
        );
        return Some(Finding::new(FindingKind::KeepaliveOff, "app", text));
    }
    let text = format!(
        "upstream keep-alive is off: {per_request:.2} {how} per request; {time_wait} sockets in TIME_WAIT"
    );
    Some(Finding::new(FindingKind::KeepaliveOff, "lb", text))
}

/// sluice's connections opened to its servers, and its attempts (its `/metrics`).
const LB_OPENED: &str = "sluice_upstream_connections_opened_total";
const LB_ATTEMPTS: &str = "sluice_upstream_request_duration_seconds_count";

/// Connections opened per request from `(opened, requests)` counters, where `ds` count
/// requests at all.
fn counted(ds: &[&Delta], (opened, requests): (&str, &str)) -> Option<f64> {
    let requests: f64 = ds.iter().map(|d| d.counter(requests)).sum();
    let opened: f64 = ds.iter().map(|d| d.counter(opened)).sum();
    (requests >= 1.0).then(|| opened / requests)
}

/// Connections closed per request, from the app servers' sockets in TIME_WAIT (local
/// processes only) over the requests of the last 60 s, or of the run if it is shorter.
fn closed(apps: &[&Delta], time_wait: u64, load: Load) -> Option<f64> {
    let local = apps.iter().any(|d| d.info.local);
    let run_s = apps.first()?.readings.last()?.t.min(60.0);
    (local && load.tps > 0.0 && run_s > 0.0).then(|| time_wait as f64 / (load.tps * run_s))
}

/// With keep-alive off (`finding`), a saturated balancer CPU is named for it: the CPU
/// is full of opening connections, and what to change is keep-alive, not the CPU.
pub(super) fn blame_keepalive(resources: &mut [Resource], finding: &Finding) {
    if let Some(lb) = resources
        .iter_mut()
        .find(|r| r.tier == "lb" && r.resource == Kind::Cpu && r.saturated)
    {
        lb.resource = Kind::KeepaliveOff;
        lb.label = "the balancer's CPU, spent opening a new upstream connection per request (keep-alive off),".into();
        lb.evidence.push(finding.text.clone());
        lb.enlarge = Some("upstream keep-alive on".into());
    }
}

/// What the lab could not judge for want of a metric, said once per tier: a JVM whose
/// metrics have no Tomcat thread figures (Spring Boot publishes them only with
/// `server.tomcat.mbeanregistry.enabled=true`, so its thread pool, a common limit, cannot
/// be judged), and a process whose CPU time its URL gives without how many cores it may
/// use (a Python or Node.js Prometheus client): its CPU is measured, not judged.
pub(super) fn missing_metrics(deltas: &[Delta]) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in deltas {
        let tier = d.info.tier.as_str();
        let used = (d.b.cpu_s - d.a.cpu_s) / d.seconds;
        if d.info.budget_cores <= 0.0 && used > 0.0 {
            let text = format!(
                "{}: used {used:.2} cores ({}), but its metrics do not say how many it may use (no system_cpu_count, no node_exporter): its CPU is not judged; give its pid as PID@URL, or run it where node_exporter reports its machine",
                d.info.tier, d.info.name
            );
            merge(
                &mut out,
                Finding::new(FindingKind::CpuNotJudged, tier, text),
            );
        }
        let keys = || d.b.counters.keys();
        let jvm = keys().any(|k| k.starts_with("jvm_"));
        let tomcat = keys().any(|k| k.starts_with("tomcat_threads_"));
        // A JVM whose request threads the lab sampled is judged by their states.
        let sampled = d.b.jvm.as_ref().is_some_and(|j| j.server.is_some());
        if jvm && !tomcat && !sampled {
            let text = format!(
                "{tier}: a JVM without Tomcat's thread metrics (set server.tomcat.mbeanregistry.enabled=true): its thread pool cannot be judged"
            );
            merge(
                &mut out,
                Finding::new(FindingKind::NoThreadMetrics, tier, text),
            );
        }
    }
    out
}

/// Tasks waited for a CPU in a fifth of the step or more (PSI) while no tier was at 70%
/// of its CPU budget: the tiers' CPUs were taken, by processes other than the tiers and
/// the load generator when they used a share of the machine worth naming (seed 000's
/// first architecture: nginx starved by its neighbours), else by the lab's own. PSI is
/// machine-wide here (cgroup v1 has none per group), so it is a finding, never a verdict.
pub(super) fn starved(
    pressure: Option<f64>,
    resources: &[Resource],
    machine: Option<&MachineCpu>,
) -> Option<Finding> {
    let p = pressure.filter(|p| *p >= CONTENDED_PSI_PCT)?;
    // A full thread is a full tier too (a single-threaded process at one core).
    let busiest = resources
        .iter()
        .filter(|r| matches!(r.resource, Kind::Cpu | Kind::BusiestThread))
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))?;
    if busiest.utilisation >= CONTENDED_TIER_BELOW {
        return None;
    }
    let who = match machine {
        Some(m) if !m.others_matter() => {
            format!(
                "the lab's own tiers and load generator took them ({})",
                m.describe()
            )
        }
        Some(m) => format!(
            "other processes on this machine take the CPU ({})",
            m.describe()
        ),
        None => "other processes on this machine take the CPU".into(),
    };
    let text = format!(
        "the machine's CPUs were contended in {p}% of the step (PSI) while no tier used 70% of its budget (the busiest: {}, {:.0}%): {who}",
        busiest.label,
        busiest.utilisation * 100.0
    );
    Some(Finding::new(FindingKind::CpuContended, "machine", text))
}

/// Messages lost between users of one room: the balancer sent them to different
/// servers, whose brokers do not share subscriptions. A finding with any verdict, and
/// the verdict itself when no tier was saturated.
pub(super) fn lost_messages(load: Load, verdict: Verdict, findings: &mut Vec<Finding>) -> Verdict {
    let Some(lost) = load.lost_pct.filter(|l| *l > LOST_MESSAGES_PCT) else {
        return verdict;
    };
    let finding = format!(
        "{lost}% of STOMP message copies were lost: users of one room reached different servers, whose brokers do not share subscriptions; hash on the room (balance = \"hash\", hash_key = \"$arg_room\")"
    );
    findings.push(Finding::new(
        FindingKind::MessagesLost,
        "lb",
        finding.clone(),
    ));
    if verdict.tier.is_some() {
        return verdict;
    }
    Verdict {
        tier: Some("lb".into()),
        resource: Some(Kind::RoomsSplit),
        summary: format!("the balancer split rooms over servers: {lost}% of messages lost"),
        evidence: vec![finding],
        ..Default::default()
    }
}
