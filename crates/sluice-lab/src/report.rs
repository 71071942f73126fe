//! The lab's results: per configuration (servers) its steps, each judged, the
//! configuration's verdict, the scale-out gains, the proof, and one verdict in plain
//! words. Serialized as the `--json` report, printed as the terminal table.
//!
//! This module assembles; `judge` decides: a configuration's plateau
//! (`judge::plateau`), the proof's rows and bar (`judge::proof`), what to change
//! (`judge::advice`), when throughput stopped growing with servers (`plateau::flat`).
//!
//! The JSON's `verdict` objects (`{"tier": NAME, "evidence": [...]}`), at the top and in
//! each configuration, are an interface: add fields, never rename.

use crate::judge::advice::advice;
use crate::judge::plateau::{self, Point};
use crate::judge::proof::{Proof, ProofRow, Rerun, Role};
use crate::judge::{whole, Finding, Judged, Kind, Verdict};
use crate::profile::{Profile, ProfileKind, Taken};
use crate::spec::Experiment;
use serde::Serialize;
use sluice_bench::report::StepReport;

#[derive(Debug, Clone, Serialize)]
pub struct LabReport {
    pub tool: String,
    /// The build that ran (`sluice --version`'s text, with its commit) and the command
    /// line, the program written `sluice`: set by the CLI, so that a report kept in
    /// lab/runs says how to run it again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The experiment run; absent when a running deployment was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experiment: Option<Experiment>,
    /// The deployment measured (`--target`, `--tier`), when not an experiment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentInfo>,
    /// When the run began (its first configuration's start).
    pub started_unix_ms: u64,
    /// Why a budget could not be applied, and other limits of this run.
    pub warnings: Vec<String>,
    pub interrupted: bool,
    pub configurations: Vec<Configuration>,
    /// Peak throughput from each number of servers to the next.
    pub scale_out: Vec<Gain>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proof: Option<Proof>,
    /// The rate the deployment must hold at its peak (`--peak-rate`, `sluice plan`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rate: Option<f64>,
    /// The profiles of the step the verdict is about (`crate::profile`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Profile>,
    pub verdict: Verdict,
}

/// Now, as milliseconds since the Unix epoch.
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A deployment the lab measured without starting it.
#[derive(Debug, Clone, Serialize)]
pub struct DeploymentInfo {
    pub target: String,
    pub tiers: Vec<TierInfo>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TierInfo {
    pub name: String,
    pub tier: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub budget_cores: f64,
    pub budget: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Configuration {
    pub servers: usize,
    /// The experiment's variant (balancer settings) it ran with, if it has variants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub steps: Vec<StepResult>,
    /// The highest throughput of a valid step.
    pub peak_tps: f64,
    /// The verdict of its last valid step (the most users).
    pub verdict: Verdict,
    /// That step's findings (keep-alive off, messages lost, CPU taken by others).
    pub findings: Vec<Finding>,
    /// The Universal Scalability Law fitted to its valid steps, with four or more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usl: Option<crate::usl::Usl>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub servers: usize,
    pub users: usize,
    pub tps: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub error_pct: f64,
    pub requests: u64,
    /// A scenario's requests by step name (its label), when it has more than one.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub labels: std::collections::BTreeMap<String, u64>,
    /// STOMP messages, for a scenario that sends them: copies due, delivered, lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<Delivery>,
    #[serde(flatten)]
    pub judged: Judged,
}

/// A step's STOMP delivery, from the load generator's matching of every copy.
#[derive(Debug, Clone, Serialize)]
pub struct Delivery {
    pub messages: u64,
    pub expected: u64,
    pub delivered: u64,
    pub lost: u64,
    pub lost_pct: f64,
    pub mean_ms: f64,
    pub p99_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Gain {
    pub from: usize,
    pub to: usize,
    pub tps_from: f64,
    pub tps_to: f64,
    pub gain_pct: f64,
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

impl StepResult {
    /// This step as a re-run of the proof reads it.
    pub fn rerun(&self) -> Rerun<'_> {
        Rerun {
            tps: self.tps,
            verdict: &self.judged.verdict,
        }
    }

    pub fn of(servers: usize, users: usize, s: &StepReport, judged: Judged) -> StepResult {
        let l = &s.summary.latency;
        StepResult {
            servers,
            users,
            tps: round1(s.summary.throughput_rps),
            mean_ms: l.mean_ms,
            p50_ms: l.p50_ms,
            p99_ms: l.p99_ms,
            error_pct: s.summary.error_pct,
            requests: s.summary.samples,
            labels: match s.labels.len() {
                0 | 1 => Default::default(),
                _ => s
                    .labels
                    .iter()
                    .map(|(l, x)| (l.clone(), x.samples))
                    .collect(),
            },
            delivery: s.delivery.as_ref().map(|d| Delivery {
                messages: d.messages,
                expected: d.expected,
                delivered: d.delivered,
                lost: d.lost,
                lost_pct: d.lost_pct,
                mean_ms: d.latency.mean_ms,
                p99_ms: d.latency.p99_ms,
            }),
            judged,
        }
    }
}

impl Configuration {
    pub fn of(servers: usize, variant: Option<String>, steps: Vec<StepResult>) -> Configuration {
        let valid = || steps.iter().filter(|s| s.judged.valid);
        let last_valid = steps.iter().rev().find(|s| s.judged.valid);
        let peak_tps = valid().map(|s| s.tps).fold(0.0, f64::max);
        let (last, findings) = match last_valid.or(steps.last()) {
            Some(s) => (s.judged.verdict.clone(), s.judged.findings.clone()),
            None => (Verdict::default(), Vec::new()),
        };
        let valid_steps: Vec<plateau::Step> = valid()
            .map(|s| plateau::Step {
                point: Point {
                    users: s.users,
                    tps: s.tps,
                    mean_ms: s.mean_ms,
                },
                judged: &s.judged,
            })
            .collect();
        let verdict = crate::judge::capped::verdict(&valid_steps)
            .or_else(|| crate::judge::downstream::service_verdict(&valid_steps))
            .or_else(|| plateau::verdict(&valid_steps))
            .or_else(|| crate::judge::downstream::verdict(&valid_steps))
            .unwrap_or(last);
        let points: Vec<Point> = valid_steps.iter().map(|s| s.point).collect();
        let usl = crate::usl::Usl::fit(
            &points
                .iter()
                .map(|p| (p.users as f64, p.tps))
                .collect::<Vec<_>>(),
        );
        Configuration {
            servers,
            variant,
            steps,
            peak_tps,
            verdict,
            findings,
            usl,
        }
    }
}

/// The profiles of `at`'s last valid step: the one its verdict is about.
fn profiles(at: &Configuration) -> Vec<Profile> {
    let Some(s) = at.steps.iter().rev().find(|s| s.judged.valid) else {
        return Vec::new();
    };
    let at = |process, tier, kind| Taken {
        process,
        tier,
        kind,
        servers: s.servers,
        users: s.users,
    };
    let wall = s.judged.jvm_threads.iter().map(|t| {
        let taken = at(&t.process, &t.tier, ProfileKind::Wall);
        Profile::of(taken, &t.folded)
    });
    let cpu = s.judged.on_cpu.iter().map(|p| {
        let taken = at(&p.process, &p.tier, ProfileKind::Cpu);
        Profile::of(taken, &p.folded)
    });
    wall.chain(cpu).collect()
}

/// Peak throughput from each number of servers to the next (of the same variant).
fn gains(configurations: &[Configuration]) -> Vec<Gain> {
    configurations
        .windows(2)
        .filter(|w| w[0].variant == w[1].variant)
        .map(|w| Gain {
            from: w[0].servers,
            to: w[1].servers,
            tps_from: w[0].peak_tps,
            tps_to: w[1].peak_tps,
            gain_pct: round1((w[1].peak_tps / w[0].peak_tps.max(1e-9) - 1.0) * 100.0),
        })
        .collect()
}

/// The verdict moved to the runner-up when the proof contradicts it
/// ([`Proof::overturned`]), with the runner-up's own evidence and the proof's numbers;
/// or, when nothing the proof changed moved throughput ([`Proof::disproved`]), a
/// plateau behind the named resource.
fn overturn(v: &mut Verdict, p: &Proof, at: &Configuration) {
    let named = p.rows.iter().find(|r| r.role == Role::Named);
    let Some(row) = p.overturned() else {
        if let Some(named) = p.disproved() {
            disprove(v, named);
        }
        return;
    };
    let step = at.steps.iter().find(|s| s.users == p.users);
    let resource = step.and_then(|s| {
        s.judged
            .resources
            .iter()
            .find(|r| r.tier == row.tier && Some(r.resource) == row.resource)
    });
    let Some(resource) = resource else { return };
    let was = std::mem::take(&mut v.summary);
    let named_change = named.map_or("", |n| n.change.as_str());
    let named_gain = named.map_or(0.0, |n| n.gain_pct);
    v.summary = format!(
        "{} was the limit, not what the steps named ({was}): the proof enlarged that ({named_change}: \
         {named_gain:+.0}% TPS) and nothing moved; {} gave {:+.0}%",
        if row.more_servers { format!("the {} servers' own capacity", row.tier) } else { resource.label.clone() },
        row.change,
        row.gain_pct
    );
    // One more server moved throughput: the tier's servers were full, whichever of
    // their resources the row was chosen by; the proof is the evidence.
    v.evidence = match row.more_servers {
        true => vec![format!(
            "one more {} server ({}) gave {:+.0}% where a larger {named_change} gave {named_gain:+.0}%: \
             each server was doing all it can at once",
            row.tier, row.change, row.gain_pct
        )],
        false => resource.evidence.clone(),
    };
    v.tier = Some(row.tier.clone());
    v.resource = row.resource;
}

/// The named resource enlarged, and throughput did not move: it held requests back
/// without being what limited them (a limit set at the knee of what is behind it). What
/// is full behind it is not something the lab measured full or could change.
fn disprove(v: &mut Verdict, named: &ProofRow) {
    let was = std::mem::take(&mut v.summary);
    v.summary = format!(
        "a plateau behind what the steps named ({was}): the proof enlarged that ({}: {:+.0}% TPS) \
         and throughput did not move, so it only sits at the knee of what is behind it, which is full \
         and which the lab could neither measure full nor change",
        named.change, named.gain_pct
    );
    v.tier = None;
    v.resource = Some(Kind::Plateau);
}

impl LabReport {
    pub fn new(
        e: &Experiment,
        configurations: Vec<Configuration>,
        warnings: Vec<String>,
        interrupted: bool,
    ) -> LabReport {
        let scale_out = gains(&configurations);
        let mut r = LabReport::new_empty(interrupted);
        r.experiment = Some(e.clone());
        r.warnings = warnings;
        r.configurations = configurations;
        r.scale_out = scale_out;
        r
    }

    /// The report of a measured deployment: its configurations (one, or one for each
    /// number of servers the lab resized its upstream to), their steps.
    pub fn deployment(
        target: &str,
        watched: &[crate::real::Watched],
        configurations: Vec<Configuration>,
        interrupted: bool,
    ) -> LabReport {
        let tiers = watched
            .iter()
            .map(|w| TierInfo {
                name: w.name.clone(),
                tier: w.tier.clone(),
                pid: w.pid,
                // Where it is read, never with a password.
                url: w
                    .stats
                    .as_deref()
                    .map(crate::url::masked)
                    .or_else(|| w.database.as_ref().map(|d| d.shown())),
                budget_cores: w.budget.cores,
                budget: w.budget.method.clone(),
            })
            .collect();
        let mut r = LabReport::new_empty(interrupted);
        r.deployment = Some(DeploymentInfo {
            target: target.to_string(),
            tiers,
        });
        r.scale_out = gains(&configurations);
        r.configurations = configurations;
        r
    }

    pub(crate) fn new_empty(interrupted: bool) -> LabReport {
        LabReport {
            tool: format!("sluice lab {}", env!("CARGO_PKG_VERSION")),
            version: None,
            command: None,
            experiment: None,
            deployment: None,
            started_unix_ms: 0,
            warnings: Vec::new(),
            interrupted,
            configurations: Vec::new(),
            scale_out: Vec::new(),
            proof: None,
            peak_rate: None,
            profiles: Vec::new(),
            verdict: Verdict::default(),
        }
    }

    /// The run's verdict in plain words: where adding a server stopped helping, the
    /// tier saturated there; else the last configuration's.
    pub fn conclude(&mut self) {
        if self.configurations.is_empty() {
            self.verdict.summary = "nothing was measured".into();
            return;
        }
        if self.configurations.iter().any(|c| c.variant.is_some()) {
            self.verdict = self.compare_variants();
            return;
        }
        for c in &mut self.configurations {
            if let Some(u) = &mut c.usl {
                u.summary = u.describe(self.peak_rate);
            }
        }
        let flat = self.scale_out.iter().find(|g| plateau::flat(g.gain_pct));
        let last = self
            .configurations
            .last()
            .expect("not empty, checked above");
        let at = flat
            .and_then(|g| self.configurations.iter().find(|c| c.servers == g.to))
            .unwrap_or(last);
        self.profiles = profiles(at);
        let mut v = at.verdict.clone();
        if let Some(p) = self.proof.as_ref().filter(|p| p.servers == at.servers) {
            overturn(&mut v, p, at);
        }
        v.limit = v.summary.clone();
        v.advice = advice(&v, self.database_unread());
        let cause = match &v.tier {
            Some(_) => format!("{}: {}; {}", v.summary, v.evidence.join("; "), v.advice),
            None => v.summary.clone(),
        };
        v.context = self.context(flat, at);
        v.summary = format!("{}: {cause}", v.context);
        if let Some(p) = &self.proof {
            v.evidence.push(format!("proof: {}", p.summary));
        }
        v.evidence
            .extend(at.usl.as_ref().map(|u| u.summary.clone()));
        self.verdict = v;
    }

    /// A deployment whose database's sessions were not read (no tier's URL is a
    /// database's): the advice for a full pool asks for them first.
    fn database_unread(&self) -> bool {
        self.deployment.as_ref().is_some_and(|d| {
            !d.tiers
                .iter()
                .any(|t| t.url.as_deref().is_some_and(is_database_url))
        })
    }

    /// Where the run stopped scaling, or what it came to.
    fn context(&self, flat: Option<&Gain>, at: &Configuration) -> String {
        match flat {
            Some(g) => format!(
                "the {} server added {:.0}% TPS ({:.0} -> {:.0} req/s)",
                ordinal(g.to),
                whole(g.gain_pct),
                g.tps_from,
                g.tps_to
            ),
            None if self.scale_out.is_empty() => {
                format!("with {} server{}", at.servers, plural(at.servers))
            }
            None => format!(
                "throughput grew with every server added ({}); with {} server{}",
                self.scale_out
                    .iter()
                    .map(|g| format!("{:+.0}%", whole(g.gain_pct)))
                    .collect::<Vec<_>>()
                    .join(", "),
                at.servers,
                plural(at.servers)
            ),
        }
    }
}

impl LabReport {
    /// An experiment of variants: what each configuration came to, side by side; the
    /// tier is the first one any of them named.
    fn compare_variants(&self) -> Verdict {
        let parts: Vec<String> = self
            .configurations
            .iter()
            .map(|c| {
                let name = c.variant.as_deref().unwrap_or("");
                format!(
                    "{name}, {} server{}: {}",
                    c.servers,
                    plural(c.servers),
                    c.verdict.summary
                )
            })
            .collect();
        let named = self
            .configurations
            .iter()
            .find(|c| c.verdict.tier.is_some());
        Verdict {
            tier: named.and_then(|c| c.verdict.tier.clone()),
            resource: named.and_then(|c| c.verdict.resource),
            summary: parts.join("; "),
            evidence: named
                .map(|c| c.verdict.evidence.clone())
                .unwrap_or_default(),
            ..Default::default()
        }
    }
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn is_database_url(url: &str) -> bool {
    crate::database::DbUrl::parse(url).is_some()
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::judge::{Kind, Verdict};

    /// A valid step of `users` at `tps` (Little's law: mean = users / tps), whose own
    /// verdict named nothing, its busiest resource the app server's CPU at 31%.
    pub(crate) fn step(users: usize, tps: f64) -> super::StepResult {
        let cpu = crate::judge::Resource {
            tier: "app".into(),
            resource: Kind::Cpu,
            label: "the app server's CPU".into(),
            utilisation: 0.31,
            saturated: false,
            evidence: vec!["app[pid 7] used 0.62 of its 2 cores".into()],
            enlarge: None,
            machine: false,
        };
        super::StepResult {
            servers: 1,
            users,
            tps,
            mean_ms: users as f64 / tps * 1000.0,
            p50_ms: 0.0,
            p99_ms: 0.0,
            error_pct: 0.0,
            requests: 0,
            labels: Default::default(),
            delivery: None,
            judged: crate::judge::Judged {
                valid: true,
                invalid_reason: None,
                users_in_system: users as f64,
                generator_cpu_util: 0.3,
                cpu_pressure_pct: None,
                listen_overflows: 0,
                machine_cpu: None,
                tiers: Vec::new(),
                findings: Vec::new(),
                jvm_threads: Vec::new(),
                on_cpu: Vec::new(),
                breakdown: None,
                verdict: Verdict {
                    summary: format!(
                        "no tier was saturated (the busiest: the app server's CPU, 31%){}",
                        crate::judge::choice::HEADROOM
                    ),
                    evidence: cpu.evidence.clone(),
                    ..Verdict::default()
                },
                resources: vec![cpu],
            },
        }
    }

    /// A step of `users` at `tps` whose app (one process) used `cores` of CPU, its
    /// busiest thread `thread` of one core.
    fn threaded_step(users: usize, tps: f64, thread: f64, cores: f64) -> super::StepResult {
        let mut s = step(users, tps);
        s.judged.resources.push(crate::judge::Resource {
            tier: "app".into(),
            resource: Kind::BusiestThread,
            label: "the app server's busiest thread (one core at most)".into(),
            utilisation: thread,
            saturated: false,
            evidence: vec!["app[pid 7]: its thread 7 used ...".into()],
            enlarge: None,
            machine: false,
        });
        s.judged.tiers.push(crate::judge::TierFigures {
            tier: "app".into(),
            processes: 1,
            cpu_cores: cores,
            cpu_util: cores / 2.0,
            budget: "2 cores".into(),
            throttled_pct: 0.0,
            rss_kib: 0,
            fds: 0,
            time_wait: 0,
            established: 0,
            accept_queue_max: 0,
        });
        s
    }

    #[test]
    fn a_plateau_with_a_busy_single_threaded_process_names_it() {
        // As tried: a Python HTTPServer behind nginx, 2,527-2,675 req/s from 4 to 8
        // users, its one thread at 74% of a core.
        let of = |thread: f64, cores: f64| {
            let steps = vec![step(4, 2527.0), threaded_step(8, 2675.0, thread, cores)];
            super::Configuration::of(1, None, steps).verdict
        };
        let v = of(0.74, 0.75);
        assert_eq!(
            (v.tier.as_deref(), v.resource),
            (Some("app"), Some(Kind::BusiestThread))
        );
        assert!(v.summary.starts_with("a plateau at 2527-2675 req/s from 4 to 8 users: the app server's busiest thread (one core at most) was the likely limit (74% of one core"), "{}", v.summary);
        // Below the bar, or a process whose other threads work too: a plateau, unnamed.
        assert_eq!(
            of(crate::judge::thresholds::PLATEAU_THREAD_BUSY - 0.01, 0.6).resource,
            Some(Kind::Plateau)
        );
        assert_eq!(of(0.74, 1.5).resource, Some(Kind::Plateau));
    }

    #[test]
    fn a_full_pool_in_a_deployment_asks_the_database_before_more_pool() {
        let pool = |watched: &[crate::real::Watched]| {
            let mut s = step(20, 190.0);
            s.judged.verdict = Verdict {
                tier: Some("app".into()),
                resource: Some(Kind::DbPool),
                summary: "app's database pool (10) was saturated".into(),
                ..Verdict::default()
            };
            let c = super::Configuration::of(1, None, vec![s]);
            let mut r =
                super::LabReport::deployment("http://127.0.0.1:1/", watched, vec![c], false);
            r.conclude();
            r.verdict.advice
        };
        let app = crate::real::parse_tier("app=http://127.0.0.1:1/metrics").unwrap();
        let advice = pool(&app);
        assert!(advice.starts_with("add pool or database capacity, once the database says what its sessions wait on (--tier db=postgres://"), "{advice}");
        // With the database's sessions read, its own resources speak for it.
        let mut both = app.clone();
        both.extend(crate::real::parse_tier("db=postgres://lab@10.0.0.5/shop").unwrap());
        assert_eq!(pool(&both), "add pool or database capacity");
    }

    #[test]
    fn a_plateau_with_nothing_measured_saturated_is_not_called_headroom() {
        // As tried: 16 -> 32 users, 37.6k -> 38.3k req/s, latency doubled.
        let c = super::Configuration::of(1, None, vec![step(16, 37_600.0), step(32, 38_300.0)]);
        assert_eq!(c.verdict.resource, Some(Kind::Plateau), "{:?}", c.verdict);
        assert!(c
            .verdict
            .summary
            .starts_with("a plateau: throughput stayed at 37600-38300 req/s from 16 to 32 users"));
        assert!(
            !c.verdict.summary.contains("more users"),
            "{}",
            c.verdict.summary
        );
        assert!(c.verdict.evidence[0].contains("the app server's CPU, 31%"));
        // Four steps or more: the scalability law, with the plan's rate against it.
        let steps = vec![
            step(10, 190.0),
            step(20, 200.0),
            step(40, 199.0),
            step(80, 201.0),
        ];
        let mut r = super::LabReport::new_empty(false);
        r.configurations = vec![super::Configuration::of(1, None, steps)];
        r.peak_rate = Some(450.0);
        r.conclude();
        let usl = r.verdict.evidence.last().unwrap();
        assert!(
            usl.starts_with("Universal Scalability Law over 4 steps")
                && usl.ends_with("the plan's peak rate 450 req/s is beyond it: the limit named has to move first"),
            "{usl}"
        );
        // Throughput that grew with the users is headroom indeed.
        let c = super::Configuration::of(1, None, vec![step(16, 20_000.0), step(32, 38_300.0)]);
        assert_eq!(c.verdict.resource, None);
        assert!(c.verdict.summary.ends_with(crate::judge::choice::HEADROOM));
    }

    #[test]
    fn a_gain_that_rounds_to_nothing_prints_without_a_sign_of_its_own() {
        use crate::judge::whole;
        assert_eq!(format!("{:.0}%", whole(-0.3)), "0%");
        assert_eq!(format!("{:+.0}%", whole(-0.3)), "+0%");
        assert_eq!(format!("{:+.0}%", whole(-11.4)), "-11%");
        assert_eq!(super::ordinal(3), "3rd");
        assert_eq!(super::ordinal(11), "11th");
        assert_eq!(super::ordinal(22), "22nd");
    }
}
