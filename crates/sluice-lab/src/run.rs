//! Running an experiment: for each number of app servers, start the tiers, load them
//! with users in steps (`sluice-bench`, in this process), sample every tier over each
//! step, judge the step; then prove the last verdict by re-running its step with the
//! named resource enlarged, and with the runner-up enlarged instead.

use crate::budget::Enforcement;
use crate::change::{Change, Commands};
use crate::database::DbSampler;
use crate::error::{chain, Error};
use crate::judge::proof::{Proof, ProofRow, Role};
use crate::judge::thresholds::ENLARGE;
use crate::judge::{self, Kind, Load, ProcInfo, Resource};
use crate::live::{self, Live};
use crate::oncpu;
use crate::profile::OnCpu;
use crate::real::{TierError, Watched};
use crate::report::{self, Configuration, LabReport, StepResult};
use crate::resize::Resize;
use crate::sample::Sampler;
use crate::spec::{Experiment, ScenarioFile};
use crate::topology::{Launch, Topology};
use sluice_bench::scenario::Scenario;
use sluice_bench::{Length, Plan, RequestSpec, Step, Target, Weighted};
use std::path::PathBuf;
use std::time::Duration;
use tokio::sync::watch;

/// Threads of the load generator: one event loop is plenty at the rates the lab's
/// budgets allow, and leaves the other core to the tiers. Its CPU is checked each step.
const GENERATOR_THREADS: usize = 1;

pub struct Options {
    /// The sluice binary, which runs the simulated tiers and the sluice balancer.
    pub sluice: PathBuf,
    /// Where configs and tier logs go.
    pub dir: PathBuf,
    /// How the tiers' CPU budgets are held, decided before the run (to be said first);
    /// `None` for a deployment, which has its own (decided here if an experiment runs).
    pub budgets: Option<Enforcement>,
    /// How wide the progress lines may be.
    pub width: crate::text::Width,
    /// Whether the progress table's header was printed (before the first step's line).
    pub header_shown: std::sync::atomic::AtomicBool,
    /// What the run shows while it runs (the terminal's status line, `--live`'s page).
    pub live: Live,
    /// Called with a line of progress (a step done, a proof run).
    pub progress: Box<dyn Fn(&str) + Sync>,
}

/// Runs `e`; `stop` turning true ends it early with what was measured.
pub fn run(e: &Experiment, o: &Options, stop: &watch::Receiver<bool>) -> Result<LabReport, Error> {
    let started = report::now_unix_ms();
    let budgets = o.budgets.clone().unwrap_or_else(Enforcement::decide);
    let mut configurations = Vec::new();
    let mut warnings = Vec::new();
    'variants: for (i, (variant, lb)) in e.balancers().into_iter().enumerate() {
        let mut ev = e.clone();
        ev.lb = lb;
        if let Some(name) = &variant {
            say(o, &format!("-- {name}"));
        }
        for &servers in &e.servers {
            if *stop.borrow() {
                break;
            }
            o.live.servers(servers);
            let dir = o.dir.join(format!("{servers}-servers-{i}"));
            let launch = Launch {
                sluice: &o.sluice,
                dir: &dir,
                budgets: &budgets,
            };
            // What was measured before a failure is kept: the report says where it
            // stopped and why.
            let measured = Topology::start(&ev, servers, &launch).and_then(|t| {
                warnings.extend(t.warnings.iter().cloned());
                steps(&ev, &t, servers, o, stop)
            });
            match measured {
                Ok(steps) => {
                    configurations.push(Configuration::of(servers, variant.clone(), steps))
                }
                Err(err) if configurations.is_empty() => return Err(err),
                Err(err) => {
                    warnings.push(format!("stopped at {servers} servers: {}", chain(&err)));
                    break 'variants;
                }
            }
        }
    }
    warnings.dedup();
    let mut report = LabReport::new(e, configurations, warnings, *stop.borrow());
    report.started_unix_ms = started;
    if e.prove && !*stop.borrow() {
        match prove(e, &report, o, stop) {
            Ok(proof) => report.proof = proof,
            Err(err) => report.warnings.push(format!("no proof: {}", chain(&err))),
        }
    }
    report.conclude();
    Ok(report)
}

/// Every users step of one configuration.
fn steps(
    e: &Experiment,
    topology: &Topology,
    servers: usize,
    o: &Options,
    stop: &watch::Receiver<bool>,
) -> Result<Vec<StepResult>, Error> {
    let sampler = Sampler::start(&topology.watched());
    let mut steps = Vec::new();
    for &users in &e.users {
        if *stop.borrow() {
            break;
        }
        let target = format!("http://{}/", topology.target);
        let spec = StepSpec::of(e, servers, users);
        let watched = topology.watched();
        let sampling = Sampling::new(o, &sampler, &watched, String::new());
        let step = measure(&target, &sampling, spec, stop)?;
        progress_line(o, &step);
        steps.push(step);
    }
    Ok(steps)
}

/// A progress line that is not the table's: on the terminal, and the live page's events.
fn say(o: &Options, line: &str) {
    o.live.event(line);
    (o.progress)(line);
}

/// A step's line in the progress table, after the table's header for the run's first.
fn progress_line(o: &Options, step: &StepResult) {
    o.live.step_done(step);
    if !o
        .header_shown
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        (o.progress)(&crate::text::header(step, o.width));
    }
    (o.progress)(&crate::text::step_line(step, o.width));
}

/// One step's load: its users, and how long to warm up and to measure.
#[derive(Debug, Clone, Copy)]
pub struct StepSpec<'a> {
    pub servers: usize,
    pub users: usize,
    pub think: Duration,
    pub warmup: Duration,
    pub duration: Duration,
    /// What each user does, when not a GET loop.
    pub scenario: Option<&'a ScenarioFile>,
    /// The balancer limits what it sends each server (`max_conns`, adaptive).
    pub balancer_limited: bool,
}

impl<'a> StepSpec<'a> {
    fn of(e: &'a Experiment, servers: usize, users: usize) -> StepSpec<'a> {
        StepSpec {
            servers,
            users,
            balancer_limited: e.lb.max_conns.is_some() || e.lb.adaptive,
            think: e.think,
            // A scenario's users warm up in their own setup steps.
            warmup: if e.scenario.is_some() {
                Duration::ZERO
            } else {
                e.warmup
            },
            duration: e.duration,
            scenario: e.scenario.as_ref(),
        }
    }
}

/// What a step is measured with: the tiers' sampler, and the live view it feeds.
struct Sampling<'a> {
    live: &'a Live,
    sampler: &'a Sampler,
    watched: &'a [Watched],
    /// Before the step's name in the live view: `proof-control: `.
    prefix: String,
    /// The native processes whose on-CPU profile each step takes (a deployment's).
    on_cpu: Option<&'a oncpu::Targets>,
}

impl<'a> Sampling<'a> {
    fn new(o: &'a Options, sampler: &'a Sampler, watched: &'a [Watched], prefix: String) -> Self {
        Sampling {
            live: &o.live,
            sampler,
            watched,
            prefix,
            on_cpu: None,
        }
    }

    /// Each step's on-CPU profile of `targets`' processes.
    fn profiling(self, targets: Option<&'a oncpu::Targets>) -> Self {
        Sampling {
            on_cpu: targets,
            ..self
        }
    }

    /// The live view's figures, once a second while the generator runs.
    fn observe(&self, snap: &sluice_bench::Snapshot, elapsed: Duration) {
        let tiers = self
            .sampler
            .last_two()
            .map(|(a, b)| live::tiers_between(self.watched, &a, &b))
            .unwrap_or_default();
        self.live.tick(snap, elapsed, tiers);
    }
}

/// One step: warm up, then measure while sampling, then judge.
fn measure(
    target: &str,
    sampling: &Sampling,
    s: StepSpec,
    stop: &watch::Receiver<bool>,
) -> Result<StepResult, Error> {
    let (sampler, watched) = (sampling.sampler, sampling.watched);
    let name = format!(
        "{}{} server{}, {} users",
        sampling.prefix,
        s.servers,
        if s.servers == 1 { "" } else { "s" },
        s.users
    );
    if !s.warmup.is_zero() {
        sampling.live.phase(format!("{name}: warm-up"));
        load(target, &s, s.warmup, stop, sampling)?;
    }
    sampling.live.phase(format!("{name}: measuring"));
    // A proof's re-run may have other servers than the configuration before it.
    sampling.live.servers(s.servers);
    let perf = std::env::temp_dir().join(format!("sluice-lab-{}.perf", std::process::id()));
    let recording = sampling.on_cpu.and_then(|t| t.start(perf).ok());
    let first = sampler.now();
    let bench = load(target, &s, s.duration, stop, sampling)?;
    let last = sampler.now();
    let readings = sampler.between(first.t, last.t);
    let sum = &bench.summary;
    let mut judged = judge::judge(
        &proc_infos(watched),
        &readings,
        Load {
            users: s.users,
            think_s: s.think.as_secs_f64(),
            // A scenario's users think inside their steps: Little's law needs the
            // time each spends per request, which only a GET loop gives.
            littles_law: s.scenario.is_none(),
            lost_pct: bench.delivery.as_ref().map(|d| d.lost_pct),
            tps: sum.throughput_rps,
            mean_ms: sum.latency.mean_ms,
            p50_ms: sum.latency.p50_ms,
            p99_ms: sum.latency.p99_ms,
            requests: sum.samples,
            errors: sum.errors,
            error_kinds: &sum.error_kinds,
            generator_cores: generator_cores(),
            balancer_limited: s.balancer_limited,
        },
    );
    judged.on_cpu = on_cpu(recording, watched);
    Ok(StepResult::of(s.servers, s.users, &bench, judged))
}

/// Whether `perf` may profile `targets` in this run: not when the lab itself runs in a
/// CPU quota (`perf`, its child, would share that quota with the load generator and take
/// from what the step measures), nor where `perf` is missing or refused.
fn profiling_allowed(targets: &oncpu::Targets) -> Result<(), String> {
    if crate::real::process_budget(std::process::id()).1.is_some() {
        return Err(
            "the lab runs in a CPU quota of its own, which perf would take from the load generator"
                .into(),
        );
    }
    targets.check()
}

/// The step's on-CPU profiles, from `perf`'s recording over it.
fn on_cpu(recording: Option<oncpu::Recording>, watched: &[Watched]) -> Vec<OnCpu> {
    let Some(Ok(stacks)) = recording.map(oncpu::Recording::stop) else {
        return Vec::new();
    };
    stacks
        .into_iter()
        .filter(|(_, stacks)| !stacks.is_empty())
        .map(|(i, stacks)| OnCpu::of(&watched[i].name, &watched[i].tier, stacks))
        .collect()
}

/// The CPU the load generator (this process) can use: its threads, or less when its
/// own cgroup quota or affinity says so.
fn generator_cores() -> f64 {
    let (budget, _) = crate::real::process_budget(std::process::id());
    budget.cores.min(GENERATOR_THREADS as f64)
}

fn proc_infos(watched: &[Watched]) -> Vec<ProcInfo> {
    watched
        .iter()
        .map(|p| ProcInfo {
            name: p.name.clone(),
            tier: p.tier.clone(),
            budget_cores: p.budget.cores,
            budget: p.budget.method.clone(),
            local: p.pid.is_some(),
        })
        .collect()
}

/// `users` users against `target` for `length`: one step of the load generator.
fn load(
    url: &str,
    s: &StepSpec,
    length: Duration,
    stop: &watch::Receiver<bool>,
    sampling: &Sampling,
) -> Result<sluice_bench::report::StepReport, Error> {
    let (users, think) = (s.users, s.think);
    let target = Target::parse(url).map_err(|source| Error::Target {
        url: url.into(),
        source,
    })?;
    let scenario = match s.scenario {
        Some(f) => {
            let mut scenario = Scenario::parse(&f.name, &f.text).map_err(Error::Scenario)?;
            scenario.target = target.clone();
            Some(std::sync::Arc::new(scenario))
        }
        None => None,
    };
    let request = RequestSpec::new("GET", target, &[], Vec::new()).map_err(Error::Request)?;
    let plan = Plan {
        steps: vec![Step {
            load: sluice_bench::Load::Users {
                users,
                ramp: Duration::ZERO,
                think,
            },
            length: Length::Duration(length),
        }],
        requests: if scenario.is_some() {
            Vec::new()
        } else {
            vec![Weighted { request, weight: 1 }]
        },
        keep_alive: true,
        timeout: Duration::from_secs(10),
        threads: GENERATOR_THREADS,
        pace: Duration::from_micros(100),
        source_addrs: Vec::new(),
        scenario,
        beside: Vec::new(),
        ok_status: Default::default(),
        tls: None,
        h2_streams: None,
        follow: false,
        resolve: Vec::new(),
    };
    let observe = |_: usize, snap: &sluice_bench::Snapshot, elapsed: Duration| {
        sampling.observe(snap, elapsed)
    };
    let report = sluice_bench::run(plan, stop, &observe, &mut |_| {}).map_err(Error::Load)?;
    report.steps.into_iter().next().ok_or(Error::Interrupted)
}

/// `step` again, on freshly started tiers of experiment `e`.
fn rerun(
    e: &Experiment,
    step: &StepResult,
    name: &str,
    o: &Options,
    stop: &watch::Receiver<bool>,
) -> Result<StepResult, Error> {
    let dir = o.dir.join(name);
    let budgets = o.budgets.clone().unwrap_or_else(Enforcement::decide);
    let launch = Launch {
        sluice: &o.sluice,
        dir: &dir,
        budgets: &budgets,
    };
    let t = Topology::start(e, step.servers, &launch)?;
    let watched = t.watched();
    let sampler = Sampler::start(&watched);
    let target = format!("http://{}/", t.target);
    let spec = StepSpec::of(e, step.servers, step.users);
    let sampling = Sampling::new(o, &sampler, &watched, format!("{name}: "));
    measure(&target, &sampling, spec, stop)
}

/// The experiment with `r` made [`ENLARGE`] times larger (or, for keep-alive, turned on).
pub fn enlarged(e: &Experiment, r: &Resource) -> Option<Experiment> {
    let mut e = e.clone();
    let grow = |n: usize| (n as f64 * ENLARGE).ceil() as usize;
    match (r.tier.as_str(), r.resource) {
        ("lb", Kind::Cpu) => e.lb.cpu = Some(e.lb.cpu? * ENLARGE),
        ("lb", Kind::KeepaliveOff) => e.lb.keepalive = true,
        ("app", Kind::Cpu) => e.app.cpu = Some(e.app.cpu? * ENLARGE),
        ("app", Kind::ThreadPool) => e.app.threads = grow(e.app.threads),
        ("app", Kind::DbPool) => e.app.db_pool = grow(e.app.db_pool),
        ("app", Kind::ConnectionCap) => e.app.max_conns = grow(e.app.max_conns),
        ("db", Kind::Cpu) => {
            let db = e.db.as_mut()?;
            db.cpu = Some(db.cpu? * ENLARGE);
        }
        ("db", Kind::ThreadPool) => {
            let db = e.db.as_mut()?;
            db.threads = grow(db.threads);
        }
        _ => return None,
    }
    Some(e)
}

/// Re-runs the last configuration's top valid step with the named resource enlarged,
/// then with the runner-up enlarged instead.
fn prove(
    e: &Experiment,
    report: &LabReport,
    o: &Options,
    stop: &watch::Receiver<bool>,
) -> Result<Option<Proof>, Error> {
    let Some(config) = report.configurations.last() else {
        return Ok(None);
    };
    let Some(step) = config.steps.iter().rev().find(|s| s.judged.valid) else {
        return Ok(None);
    };
    let judged = &step.judged;
    let Some((named, runner_up)) = judge::proof::candidates(&judged.resources, &judged.verdict)
    else {
        return Ok(None);
    };
    // The control: the same step on freshly started tiers, unchanged. Gains are
    // measured against it, so the noise of a fresh start is not taken for an effect.
    let mut control = rerun(e, step, "proof-control", o, stop)?;
    say(
        o,
        &format!("proof: control (unchanged) -> {:.0} req/s", control.tps),
    );
    let mut rows = vec![ProofRow::control(step.tps, control.rerun(), false)];
    // A control far from its step is run once more: one outlier is not the noise.
    if !judge::proof::settled(rows[0].gain_pct) {
        control = rerun(e, step, "proof-control-2", o, stop)?;
        say(
            o,
            &format!(
                "proof: control once more (the first moved {:+.0}%) -> {:.0} req/s",
                rows[0].gain_pct, control.tps
            ),
        );
        rows.push(ProofRow::control(step.tps, control.rerun(), true));
    }
    let candidates = [(Role::Named, Some(named)), (Role::RunnerUp, runner_up)];
    for (i, (role, r)) in candidates.into_iter().enumerate() {
        let Some(r) = r else { continue };
        let Some(changed) = enlarged(e, r) else {
            continue;
        };
        let again = rerun(&changed, step, &format!("proof-{i}"), o, stop)?;
        let change = r.enlarge.as_deref().unwrap_or("");
        say(o, &format!("proof: {change} -> {:.0} req/s", again.tps));
        rows.push(ProofRow::of(r, role, control.tps, again.rerun()));
    }
    Ok(Some(Proof::of(step.servers, step.users, step.tps, rows)))
}

/// A deployment the lab did not start: its URL and its tiers.
pub struct Deployment {
    pub target: String,
    pub tiers: Vec<Watched>,
    pub users: Vec<usize>,
    pub think: Duration,
    pub warmup: Duration,
    pub duration: Duration,
    /// The rate it must hold at its peak (`sluice plan`'s), for the scalability fit.
    pub peak_rate: Option<f64>,
    /// What each user does (`--scenario`), its steps sent to `target`; none: a GET loop.
    pub scenario: Option<ScenarioFile>,
    /// The scale-out experiment on its own servers: the balancer's upstream drained to
    /// each count of `servers` in turn (`--servers`, through sluice's admin API or
    /// HAProxy's runtime API).
    pub resize: Option<(Resize, Vec<usize>)>,
    /// The proof on its own servers: `None` for none (`--no-prove`), else the user's
    /// commands beside what the lab can change itself.
    pub prove: Option<Commands>,
}

/// Measures a running deployment: users in steps against `d.target`, every tier
/// sampled, each step judged; with `d.resize`, at each number of servers in turn (the
/// others drained), the upstream put back as it was at the end.
pub fn run_deployment(
    d: &mut Deployment,
    o: &Options,
    stop: &watch::Receiver<bool>,
) -> Result<LabReport, Error> {
    let started = report::now_unix_ms();
    fill_exporter_budgets(&mut d.tiers)?;
    let databases = connect_databases(&d.tiers)?;
    let sampler = Sampler::with_databases(&d.tiers, databases);
    let mut warnings = Vec::new();
    let on_cpu = oncpu::Targets::of(&d.tiers).filter(|t| match profiling_allowed(t) {
        Ok(()) => true,
        Err(why) => {
            warnings.push(format!("no on-CPU profiles of the native processes: {why}"));
            false
        }
    });
    let app_processes = d.tiers.iter().filter(|w| w.tier == "app").count().max(1);
    let counts = d
        .resize
        .as_ref()
        .map_or(vec![app_processes], |(_, counts)| counts.clone());
    let mut configurations = Vec::new();
    let mut conflict = None;
    for servers in counts {
        if *stop.borrow() || conflict.is_some() {
            break;
        }
        o.live.servers(servers);
        if let Some((resize, _)) = &d.resize {
            resize.set(servers)?;
            say(o, &resize.in_service(servers));
        }
        let steps = deployment_steps(d, o, (&sampler, on_cpu.as_ref()), servers, stop);
        conflict = d.resize.as_ref().and_then(|(r, _)| r.conflict());
        configurations.push(Configuration::of(servers, None, steps?));
    }
    let interrupted = *stop.borrow() || conflict.is_some();
    let proof = match (&d.prove, configurations.last()) {
        (Some(commands), Some(last)) if !interrupted => {
            let sampling = (&sampler, on_cpu.as_ref());
            prove_deployment(d, commands, last, o, sampling, stop, &mut warnings)?
        }
        _ => None,
    };
    let unrestored = put_back(d, conflict.is_some())?;
    let mut report = LabReport::deployment(&d.target, &d.tiers, configurations, interrupted);
    report.proof = proof;
    // What was measured before someone else changed the upstream is kept, with why the
    // run stopped.
    let stopped = conflict.map(|c| c.to_string());
    report
        .warnings
        .extend(warnings.into_iter().chain(stopped).chain(unrestored));
    report.started_unix_ms = started;
    report.peak_rate = d.peak_rate;
    report
        .warnings
        .extend(scrape_warnings(&d.tiers, d.duration));
    report.conclude();
    Ok(report)
}

/// The proof on a deployment: the configuration's top valid step again (the control),
/// then with the named resource enlarged, then with the runner-up's, each change undone
/// after its re-run. Where the lab cannot change the named resource, no re-run: a warning
/// says how to prove it by hand.
fn prove_deployment(
    d: &Deployment,
    commands: &Commands,
    config: &Configuration,
    o: &Options,
    (sampler, on_cpu): (&Sampler, Option<&oncpu::Targets>),
    stop: &watch::Receiver<bool>,
    warnings: &mut Vec<String>,
) -> Result<Option<Proof>, Error> {
    let Some(step) = config.steps.iter().rev().find(|s| s.judged.valid) else {
        return Ok(None);
    };
    let resources = &step.judged.resources;
    let Some((named, _)) = judge::proof::candidates(resources, &step.judged.verdict) else {
        return Ok(None);
    };
    let resize = d.resize.as_ref().map(|(r, _)| r);
    let change = |r: &Resource| Change::find(r, &d.tiers, commands, resize, step.servers);
    let Some(named_change) = change(named) else {
        warnings.push(unproven(named));
        return Ok(None);
    };
    // A runner-up changed the named one's way (one more server for either of a tier's
    // resources) would only repeat its re-run.
    let runner_up = resources
        .iter()
        .filter(|r| !std::ptr::eq(*r, named))
        .filter_map(|r| Some((r, change(r)?)))
        .filter(|(_, c)| *c != named_change)
        .max_by(|a, b| a.0.utilisation.total_cmp(&b.0.utilisation));
    let again = |name: &str| -> Result<StepResult, Error> {
        let spec = StepSpec {
            servers: step.servers,
            users: step.users,
            think: d.think,
            warmup: d.warmup,
            duration: d.duration,
            scenario: d.scenario.as_ref(),
            balancer_limited: false,
        };
        // As the step it repeats was: profiled, so that the re-runs differ by their
        // change alone.
        let sampling = Sampling::new(o, sampler, &d.tiers, format!("{name}: ")).profiling(on_cpu);
        measure(&d.target, &sampling, spec, stop)
    };
    let control = again("proof-control")?;
    say(
        o,
        &format!("proof: control (unchanged) -> {:.0} req/s", control.tps),
    );
    let mut rows = vec![ProofRow::control(step.tps, control.rerun(), false)];
    let tries = [
        (Role::Named, Some((named, named_change))),
        (Role::RunnerUp, runner_up),
    ];
    for (role, candidate) in tries {
        let Some((r, change)) = candidate else {
            continue;
        };
        change.apply(resize).map_err(Error::Change)?;
        let result = again(&format!("proof-{role}"));
        let undone = change.undo(resize);
        let again = result?;
        if let Err(why) = undone {
            warnings.push(format!("the proof could not undo its change: {why}"));
        }
        say(
            o,
            &format!("proof: {} -> {:.0} req/s", change.describe(), again.tps),
        );
        let mut row = ProofRow::of(r, role, control.tps, again.rerun());
        row.change = change.describe();
        row.more_servers = change.adds_server();
        rows.push(row);
    }
    Ok(Some(Proof::of(step.servers, step.users, step.tps, rows)))
}

/// Why the named resource is unproven, and the flags that would prove it by hand.
fn unproven(r: &Resource) -> String {
    let key = format!("{}.{}", r.tier, r.resource.name());
    format!(
        "unproven: the lab cannot change {} here (no cgroup quota it may write, no spare \
         server); to prove it, give the commands that enlarge it and put it back: \
         --enlarge {key}='COMMAND' --restore {key}='COMMAND' (or --enlarge {}.servers='... {{n}}')",
        r.label, r.tier
    )
}

/// Undoes the lab's drains. After someone else's change, a server they took over is
/// theirs to put back: that is said with the measurements (kept), not an error.
fn put_back(d: &mut Deployment, conflict: bool) -> Result<Option<String>, Error> {
    let Some((resize, _)) = &mut d.resize else {
        return Ok(None);
    };
    match resize.restore() {
        Err(e) if conflict => Ok(Some(e.to_string())),
        r => r.map(|()| None).map_err(Into::into),
    }
}

/// The user steps of one configuration of a deployment; a change of its upstream by
/// someone else (seen while the lab resizes it) ends them after the step it is seen in.
fn deployment_steps(
    d: &Deployment,
    o: &Options,
    (sampler, on_cpu): (&Sampler, Option<&oncpu::Targets>),
    servers: usize,
    stop: &watch::Receiver<bool>,
) -> Result<Vec<StepResult>, Error> {
    let mut steps = Vec::new();
    for &users in &d.users {
        if *stop.borrow() {
            break;
        }
        let spec = StepSpec {
            servers,
            users,
            think: d.think,
            warmup: d.warmup,
            duration: d.duration,
            scenario: d.scenario.as_ref(),
            // A deployment's balancer settings are not known here: its failures are
            // never put down to a limit of its own.
            balancer_limited: false,
        };
        let sampling = Sampling::new(o, sampler, &d.tiers, String::new()).profiling(on_cpu);
        let step = measure(&d.target, &sampling, spec, stop)?;
        progress_line(o, &step);
        steps.push(step);
        if d.resize
            .as_ref()
            .is_some_and(|(r, _)| r.conflict().is_some())
        {
            break;
        }
    }
    Ok(steps)
}

/// For a target read through Prometheus: the CPUs of its host, from a node_exporter the
/// same Prometheus scrapes on that host.
fn machine_cpus_through_prometheus(url: &str) -> Option<f64> {
    let source = crate::prometheus::Source::parse(url)?.ok()?;
    let instance = &source.matchers.iter().find(|(k, _)| k == "instance")?.1;
    let host = instance
        .rsplit_once(':')
        .map_or(instance.as_str(), |(h, _)| h);
    source.machine_cpus(host)
}

/// Prometheus tiers scraped less often than three times a step: their counters move in
/// jumps a step cannot average out.
fn scrape_warnings(tiers: &[Watched], step: Duration) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in tiers {
        let Some(Ok(source)) = w
            .stats
            .as_deref()
            .and_then(crate::prometheus::Source::parse)
        else {
            continue;
        };
        let Some(interval) = source.scrape_interval() else {
            continue;
        };
        let line = format!(
            "tier {}: Prometheus scrapes it every {interval} s, more than a third of a {} s step: its figures are coarse (scrape every few seconds, or run longer steps)",
            w.tier,
            step.as_secs_f64()
        );
        if interval > step.as_secs_f64() / 3.0 && !out.contains(&line) {
            out.push(line);
        }
    }
    out
}

/// A sampler of each database's sessions, connected now: a wrong URL or password, or a
/// user without the privileges to see sessions, is refused before the run.
fn connect_databases(tiers: &[Watched]) -> Result<Vec<Option<DbSampler>>, TierError> {
    tiers
        .iter()
        .map(|w| {
            let Some(db) = &w.database else {
                return Ok(None);
            };
            let conn = db.connect().map_err(|error| TierError::Database {
                tier: w.tier.clone(),
                url: db.shown(),
                error,
            })?;
            Ok(Some(DbSampler::start(db.clone(), conn)))
        })
        .collect()
}

/// An exporter's tier is judged against its machine's CPU count (node_exporter's); a
/// URL with nothing to read is refused (Redis's too, whose budget came with its tier);
/// an exporter reporting on another process gives no socket figures of its own port.
fn fill_exporter_budgets(tiers: &mut [Watched]) -> Result<(), TierError> {
    for w in tiers.iter_mut() {
        let Some(url) = w.stats.clone() else { continue };
        let redis = url.starts_with("redis://");
        if w.pid.is_some() && !redis {
            continue;
        }
        let counters = crate::sample::counters(&url);
        if counters.is_empty() {
            return Err(TierError::NoMetrics {
                tier: w.tier.clone(),
                url: crate::url::masked(&url),
            });
        }
        if redis {
            continue;
        }
        if crate::sample::exports_another_process(&counters) {
            // The sockets of its URL's port are the exporter's, not the tier's.
            w.port = None;
        }
        if let Some(n) = counters.get(crate::sample::NODE_CPUS) {
            w.budget = crate::budget::Budget {
                cores: *n,
                method: format!("the machine's {n} CPUs (node_exporter)"),
            };
        } else if let Some(n) = counters.get("system_cpu_count") {
            // Micrometer's: the CPUs the JVM sees (its container's quota, rounded up).
            w.budget = crate::budget::Budget {
                cores: *n,
                method: format!("the JVM's {n} CPUs (system_cpu_count)"),
            };
        } else if let Some(n) = machine_cpus_through_prometheus(&url) {
            w.budget = crate::budget::Budget {
                cores: n,
                method: format!("its machine's {n} CPUs (node_exporter, through Prometheus)"),
            };
        }
    }
    Ok(())
}
