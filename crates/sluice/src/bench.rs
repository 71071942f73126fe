//! `sluice bench`: the command line of the load generator (the work is `sluice-bench`'s).

use anyhow::{anyhow, Context};
use clap::{Args, Subcommand};
use sluice_bench::plan::OkStatus;
use sluice_bench::report::{table, Report, StepReport};
use sluice_bench::scenario::{Per, Scenario};
use sluice_bench::target::Resolve;
use sluice_bench::threshold::{failures, Threshold};
use sluice_bench::tls::{self, TlsOptions};
use sluice_bench::{Length, Load, Plan, RequestSpec, Snapshot, Step, Target, Weighted};
use std::io::{IsTerminal, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

// The command line cannot be used; a `--fail-if` threshold was crossed; interrupted
// (Ctrl-C), with the results measured so far written.
use crate::exit::{BAD_INPUT, INTERRUPTED, THRESHOLD_CROSSED};
use crate::plural::counted;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    /// The URLs to load (http://host:port/path); several are sent in turn, or by weight
    /// when written URL@WEIGHT.
    #[arg(required_unless_present_any = ["scenario", "check"])]
    urls: Vec<String>,
    /// Check these scenario files and exit, running nothing: every problem of each at
    /// once, with its file:line:col and a hint (the target's name is resolved, as a run
    /// would; give --resolve for a name this machine does not know).
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["scenario", "urls"])]
    check: Vec<PathBuf>,
    /// What each user does, as a TOML scenario file (HTTP, WebSocket and STOMP steps);
    /// a URL (http://host:port), --users, --duration, --iterations and --ramp given
    /// here override the file's target and load. Given again, each further scenario
    /// runs beside the first at its own load (its file's `users` or `rate`) through
    /// every step of the first.
    #[arg(long, conflicts_with_all = ["rate", "think", "method", "headers", "body"])]
    scenario: Vec<PathBuf>,
    /// Closed model: users per step, e.g. 100,200,400 (JMeter threads, nGrinder vusers).
    #[arg(long, value_delimiter = ',', conflicts_with = "rate")]
    users: Vec<usize>,
    /// Open model: requests per second per step, e.g. 500,1000,2000.
    #[arg(long, value_delimiter = ',')]
    rate: Vec<f64>,
    /// How long each step lasts, e.g. 30s or 2m.
    #[arg(long, short = 'd')]
    duration: Option<String>,
    /// Requests per user instead of a duration (closed model; JMeter's loop count).
    #[arg(long, conflicts_with = "duration")]
    iterations: Option<u64>,
    /// Start a step's users evenly over this time.
    #[arg(long)]
    ramp: Option<String>,
    /// Pause between a user's requests.
    #[arg(long)]
    think: Option<String>,
    /// Open a connection per request (reproduces a TIME_WAIT pile-up).
    #[arg(long, conflicts_with = "h2")]
    no_keepalive: bool,
    /// Speak HTTP/2: over https:// by ALPN, over http:// with prior knowledge (h2c).
    /// Users (or requests in flight) share connections, --streams at once on each.
    #[arg(long, conflicts_with = "scenario")]
    h2: bool,
    /// With --h2: requests at once on one connection (h2load's -m); a new connection is
    /// opened when every one is full.
    #[arg(long, default_value_t = 1, requires = "h2")]
    streams: usize,
    /// Open model: at most this many requests waiting for an answer; later ones go out
    /// late and their latency still counts from when they were meant to go.
    #[arg(long, default_value_t = 10_000)]
    max_in_flight: usize,
    /// The request method.
    #[arg(short = 'X', long, default_value = "GET")]
    method: String,
    /// A request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
    /// The request body: text, or @FILE.
    #[arg(long)]
    body: Option<String>,
    /// A request taking longer fails as `timeout`.
    #[arg(long, default_value = "30s")]
    timeout: String,
    /// Follow redirects (301, 302, 303, 307, 308; 10 hops at most), each hop a sample of
    /// its own under the request's label with " (redirected)" (a scenario's `http` steps
    /// too: their expectations then apply to the page the redirects lead to).
    #[arg(long)]
    follow: bool,
    /// The statuses that count as success, e.g. 200-399,404; any other status is an
    /// error, as is a transport error (k6's `http_req_failed` rule).
    #[arg(long, default_value = "200-399")]
    ok_status: String,
    /// Worker threads; 0 = one per core.
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Open model: wake at most once per this interval and send what fell due as one
    /// batch, each request timed from its batch's time (h2load's clients batch every
    /// 10 ms). Finer is smoother and costs more CPU: `0` sends every request at its own
    /// moment, a wake-up each. Lateness beyond the batch's time counts in the latency
    /// and shows as the send lag.
    #[arg(long, default_value = "1ms")]
    pace: String,
    /// For https:// targets: accept any certificate (a test server's self-signed one).
    #[arg(long, short = 'k')]
    insecure: bool,
    /// For https:// targets: trust the CA certificates in this PEM file instead of the
    /// system's (a self-signed server certificate in it is trusted for its names, as
    /// curl does).
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// Connect to ADDRESS for HOST:PORT, keeping the URL's name for Host, SNI and the
    /// certificate (curl's --resolve), e.g. shop.test:443:127.0.0.1 (repeatable).
    #[arg(long, value_name = "HOST:PORT:ADDRESS")]
    resolve: Vec<String>,
    /// TLS session resumption on new connections: on (a returning visitor) or off (each
    /// connection a new one, a full handshake each).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    tls_resume: String,
    /// Hold TLS to one version, 1.2 or 1.3 (default: both, as the server prefers).
    #[arg(long, value_name = "VERSION")]
    tls_version: Option<String>,
    /// Source addresses to spread connections over, e.g. 127.0.0.2,127.0.0.3.
    #[arg(long, value_delimiter = ',')]
    source_addrs: Vec<IpAddr>,
    /// Write the results as JSON to FILE.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a self-contained HTML report to FILE: per step, TPS and latency
    /// percentiles over time, and the summary tables.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Write an HdrHistogram interval log (V2) to FILE: each second of each step.
    #[arg(long)]
    hdr_log: Option<PathBuf>,
    /// Fail (exit 3) when any step crosses this, e.g. 'p99>250ms', 'errors>1%',
    /// 'throughput<1000' (repeatable).
    #[arg(long = "fail-if")]
    fail_if: Vec<String>,
    /// No live progress line.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Merge the JSON results of generators that ran together (anywhere) into one, by
    /// adding their histograms: percentiles of the whole, never averaged.
    Merge {
        /// The results, from `sluice bench --json`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Write the merged results as JSON to FILE.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write the merged results as a self-contained HTML report to FILE.
        #[arg(long)]
        html: Option<PathBuf>,
    },
    /// Translate a JMeter test plan (.jmx) or a browser's recording (.har) into a
    /// scenario file: on stdout (or to -o FILE), each element not carried over listed on
    /// stderr with its place, and the result checked as `sluice bench --check` checks a
    /// file.
    Import {
        /// The plan: a .jmx file as JMeter 5 saves it, or a .har file as a browser's
        /// developer tools save one.
        plan: PathBuf,
        /// Write the scenario to FILE instead of stdout (a data file the plan reads is
        /// then found from FILE's directory).
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        Some(BenchCommand::Merge { files, json, html }) => {
            return merge(files, json.as_ref(), html.as_ref())
        }
        Some(BenchCommand::Import { plan, output }) => return import(plan, output.as_deref()),
        None => {}
    }
    if !args.check.is_empty() {
        return check_scenarios(&args);
    }
    let (plan, thresholds) = match plan(&args) {
        Ok(p) => p,
        Err(e) => {
            for problem in format!("{e:#}").lines() {
                eprintln!("sluice bench: {problem}");
            }
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let stop = interrupt_on_signal("sluice bench")?;
    let quiet = args.quiet;
    let steps = plan.steps.len();
    let observe = move |step: usize, s: &Snapshot, elapsed: Duration| {
        if !quiet {
            progress_line(step, steps, s, elapsed);
        }
    };
    let mut finished = |step: &StepReport| {
        if !quiet {
            end_progress_line(step);
        }
    };
    let report = sluice_bench::run(plan, &stop, &observe, &mut finished)?;
    print!("{}", table(&report));
    if let Some(path) = &args.json {
        write_json(path, &report)?;
    }
    if let Some(path) = &args.html {
        std::fs::write(path, sluice_bench::html::render(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.hdr_log {
        let mut file =
            std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
        sluice_bench::hdrlog::write(&report, &mut file)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if report.interrupted {
        return Ok(ExitCode::from(INTERRUPTED));
    }
    let failed = failures(&report, &thresholds);
    for f in &failed {
        eprintln!("sluice bench: threshold crossed: {f}");
    }
    Ok(if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(THRESHOLD_CROSSED)
    })
}

fn merge(
    files: &[PathBuf],
    json: Option<&PathBuf>,
    html: Option<&PathBuf>,
) -> anyhow::Result<ExitCode> {
    let mut reports = Vec::new();
    for f in files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("sluice bench merge: {}: {e}", f.display());
                return Ok(ExitCode::from(BAD_INPUT));
            }
        };
        match serde_json::from_str::<Report>(&text) {
            Ok(r) => reports.push(r),
            Err(e) => {
                eprintln!(
                    "sluice bench merge: {}:{}:{}: not a sluice bench result: {e}",
                    f.display(),
                    e.line(),
                    e.column()
                );
                return Ok(ExitCode::from(BAD_INPUT));
            }
        }
    }
    let merged = match sluice_bench::merge::merge(&reports) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("sluice bench merge: {e}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    print!("{}", table(&merged));
    if let Some(path) = json {
        write_json(path, &merged)?;
    }
    if let Some(path) = html {
        std::fs::write(path, sluice_bench::html::render(&merged))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_json(path: &PathBuf, report: &Report) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The plan the arguments describe, or everything that is wrong with them (each
/// problem on a line of its own, found at once: mended in one go, not one per run).
fn plan(args: &BenchArgs) -> anyhow::Result<(Plan, Vec<Threshold>)> {
    let mut problems = Problems::default();
    let thresholds = problems.check(
        args.fail_if
            .iter()
            .map(|t| Threshold::parse(t))
            .collect::<Result<Vec<_>, _>>()
            .map_err(anyhow::Error::from),
    );
    let resolve = problems.check(resolves(args)).unwrap_or_default();
    let mut plan = Plan {
        steps: Vec::new(),
        requests: Vec::new(),
        keep_alive: !args.no_keepalive,
        timeout: problems
            .check(duration("--timeout", &args.timeout))
            .unwrap_or_default(),
        pace: problems
            .check(micros("--pace", &args.pace))
            .unwrap_or_default(),
        threads: args.threads,
        source_addrs: args.source_addrs.clone(),
        scenario: None,
        beside: Vec::new(),
        ok_status: problems
            .check(OkStatus::parse(&args.ok_status).map_err(|e| anyhow!("--ok-status: {e}")))
            .unwrap_or_default(),
        tls: None,
        h2_streams: args.h2.then_some(args.streams.max(1)),
        follow: args.follow,
        resolve: resolve.clone(),
    };
    let _ = problems.check(match args.scenario.as_slice() {
        [] => request_plan(args, &resolve, &mut plan),
        paths => scenario_plan(args, paths, &resolve, &mut plan),
    });
    let tls = problems.check(tls_options(args));
    // Redirects may lead to https:// too; a --cacert given is read whatever the URLs.
    if let Some(tls) = tls.filter(|_| plan.uses_tls() || plan.follow || args.cacert.is_some()) {
        plan.tls = problems.check(tls::client_config(&tls).map_err(anyhow::Error::from));
    }
    problems.into_result()?;
    if let Some(note) = plan.spread_sources(sluice_bench::plan::ephemeral_ports()) {
        eprintln!("sluice bench: {note}");
    }
    enough_files(plan.max_connections())?;
    Ok((plan, thresholds.unwrap_or_default()))
}

/// `--check`: each scenario file read as a run would read it, its problems told, none
/// run. Exit 0 when every file is good.
fn check_scenarios(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let resolve = match resolves(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("sluice bench: {e:#}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let mut failed = false;
    for path in &args.check {
        match Scenario::load(path, &resolve) {
            Ok(s) => println!("{}: ok ({})", path.display(), scenario_summary(&s)),
            Err(errors) => {
                failed = true;
                eprintln!("{errors}");
            }
        }
    }
    Ok(match failed {
        true => ExitCode::from(BAD_INPUT),
        false => ExitCode::SUCCESS,
    })
}

/// `sluice bench import PLAN -o FILE`: the plan translated, what was not carried over
/// told, and the scenario checked as a run would read it (from where it is written).
fn import(plan: &Path, output: Option<&Path>) -> anyhow::Result<ExitCode> {
    let name = plan.display().to_string();
    let text = match std::fs::read_to_string(plan) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("sluice bench import: cannot read {name}: {e}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let imported = match plan.extension().and_then(|e| e.to_str()) {
        Some("jmx") => sluice_bench::jmx::import(&name, &text).map_err(|e| e.to_string()),
        Some("har") => sluice_bench::har::import(&name, &text).map_err(|e| e.to_string()),
        _ => Err(format!(
            "{name}: give a JMeter test plan (.jmx) or a browser's recording (.har)"
        )),
    };
    let imported = match imported {
        Ok(i) => i,
        Err(e) => {
            eprintln!("sluice bench import: {e}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    for dropped in &imported.dropped {
        eprintln!("{name}: not carried over: {dropped}");
    }
    for note in &imported.notes {
        eprintln!("{name}: note: {note}");
    }
    let written = output.map_or_else(|| plan.with_extension("toml"), Path::to_path_buf);
    match output {
        Some(path) => std::fs::write(path, &imported.scenario)
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{}", imported.scenario),
    }
    let checked = Scenario::parse(&written.display().to_string(), &imported.scenario);
    let summary = format!(
        "sluice bench import: {} not carried over, {} (each listed above)",
        counted(imported.dropped.len(), "element"),
        counted(imported.notes.len(), "note"),
    );
    match checked {
        Ok(s) => {
            eprintln!("{summary}; checked: ok ({})", scenario_summary(&s));
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            eprintln!(
                "{errors}\n{summary}; the scenario does not read as it is: fix what is told above"
            );
            Ok(ExitCode::from(BAD_INPUT))
        }
    }
}

/// "2 steps a loop, 1 setup step, target http://127.0.0.1:8080/, users 10,20, 30s a step".
fn scenario_summary(s: &Scenario) -> String {
    let count = |n: usize, what: &str| match n {
        1 => format!("1 {what} step"),
        n => format!("{n} {what} steps"),
    };
    let mut parts = match s.flows.as_slice() {
        [one] => vec![count(one.steps.len(), "loop")],
        flows => {
            let each: Vec<String> = flows
                .iter()
                .map(|f| format!("{} ({} steps, weight {})", f.name, f.steps.len(), f.weight))
                .collect();
            vec![format!("{} flows: {}", flows.len(), each.join(", "))]
        }
    };
    if !s.setup.is_empty() {
        parts.push(count(s.setup.len(), "setup"));
    }
    if !s.teardown.is_empty() {
        parts.push(count(s.teardown.len(), "teardown"));
    }
    if let Some(d) = &s.data {
        let per = match d.per {
            Per::User => "a row per user",
            Per::Iteration => "a row per iteration",
        };
        parts.push(format!(
            "data {} ({} rows of {}; {per})",
            d.file,
            d.rows.len(),
            d.columns.join(",")
        ));
    }
    let extracted = s.all_steps().map(|step| step.extract.len()).sum::<usize>();
    if extracted > 0 {
        parts.push(format!("{extracted} extracted values"));
    }
    parts.push(format!("target {} ({})", s.target.url, s.target.addr));
    if !s.users.is_empty() {
        let users: Vec<String> = s.users.iter().map(usize::to_string).collect();
        parts.push(format!("users {}", users.join(",")));
    }
    match (s.duration, s.iterations) {
        (Some(d), _) => parts.push(format!("{:?} a step", d)),
        (None, Some(n)) => parts.push(format!("{n} iterations a user")),
        (None, None) => {}
    }
    parts.join(", ")
}

/// What is wrong with the arguments, gathered so that each is told at once.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    /// `result`'s value, or none with its error kept.
    fn check<T>(&mut self, result: anyhow::Result<T>) -> Option<T> {
        result.map_err(|e| self.0.push(format!("{e:#}"))).ok()
    }

    fn into_result(self) -> anyhow::Result<()> {
        match self.0.is_empty() {
            true => Ok(()),
            false => Err(anyhow!(self.0.join("\n"))),
        }
    }
}

/// A scenario's steps, with what the command line overrides; further scenarios beside
/// it, each at its own load, their steps labelled with their file's name.
fn scenario_plan(
    args: &BenchArgs,
    paths: &[PathBuf],
    resolve: &[Resolve],
    plan: &mut Plan,
) -> anyhow::Result<()> {
    if args.urls.len() > 1 {
        return Err(anyhow!(
            "with --scenario, give at most one URL: the target in place of the file's (its paths are in the steps)"
        ));
    }
    if paths.len() > 1 && (!args.users.is_empty() || args.ramp.is_some()) {
        return Err(anyhow!(
            "with several scenarios, give each its load in its file (`users` or `rate`, `ramp`): --users and --ramp would not say which"
        ));
    }
    let mut scenarios = Vec::new();
    for path in paths {
        let mut scenario = load_scenario(args, path, resolve)?;
        if paths.len() > 1 {
            let name = path
                .file_stem()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned());
            scenario.label_with(&name);
        }
        scenarios.push(scenario);
    }
    let length = scenario_length(args, &scenarios[0])?;
    let mut rest = scenarios.split_off(1);
    let first = scenarios.remove(0);
    plan.steps = scenario_loads(args, &first, length)?
        .into_iter()
        .map(|load| Step { load, length })
        .collect();
    for scenario in rest.drain(..) {
        let load = match scenario_loads(args, &scenario, length)?.as_slice() {
            [one] => *one,
            _ => {
                return Err(anyhow!(
                    "a scenario beside the first runs one load through every step: give it users = N or rate = R"
                ))
            }
        };
        let scenario = std::sync::Arc::new(scenario);
        plan.beside
            .push(sluice_bench::plan::Beside { scenario, load });
    }
    plan.scenario = Some(std::sync::Arc::new(first));
    Ok(())
}

/// The scenario file at `path`, its target replaced by the URL given.
fn load_scenario(args: &BenchArgs, path: &Path, resolve: &[Resolve]) -> anyhow::Result<Scenario> {
    let mut scenario = Scenario::load(path, resolve).map_err(|e| anyhow!("{e}"))?;
    if let Some(url) = args.urls.first() {
        let target = Target::parse_with(url, resolve)?;
        if target.path != "/" {
            return Err(anyhow!(
                "`{url}`: with --scenario the URL is the target alone, without a path (the steps have the paths)"
            ));
        }
        if let Err(why) = sluice_bench::cookies::Jar::with(&target.url, &scenario.initial_cookies) {
            return Err(anyhow!(
                "the scenario's `cookies`: {why} (the URL given replaces its target)"
            ));
        }
        scenario.target = target;
    }
    Ok(scenario)
}

/// How long each step lasts: the command line's, else the first scenario's.
fn scenario_length(args: &BenchArgs, scenario: &Scenario) -> anyhow::Result<Length> {
    Ok(
        match (
            &args.duration,
            args.iterations,
            scenario.duration,
            scenario.iterations,
        ) {
            (Some(d), _, _, _) => Length::Duration(duration("--duration", d)?),
            (None, Some(0), _, _) => return Err(anyhow!("--iterations must be at least 1")),
            (None, Some(n), _, _) => Length::Iterations(n),
            (None, None, Some(d), _) => Length::Duration(d),
            (None, None, None, n) => Length::Iterations(n.unwrap_or(1).max(1)),
        },
    )
}

/// A scenario's load per step: its users (or --users), or its arrivals per second.
fn scenario_loads(
    args: &BenchArgs,
    scenario: &Scenario,
    length: Length,
) -> anyhow::Result<Vec<Load>> {
    let ramp = match &args.ramp {
        Some(r) => duration("--ramp", r)?,
        None => scenario.ramp,
    };
    if !scenario.rate.is_empty() {
        if matches!(length, Length::Iterations(_)) {
            return Err(anyhow!(
                "a `rate` scenario runs for a duration (each user that arrives runs its loop once): give -d"
            ));
        }
        return Ok(rate_loads(&scenario.rate, scenario.max_users));
    }
    let users = if args.users.is_empty() {
        scenario.users.clone()
    } else {
        args.users.clone()
    };
    if users.contains(&0) {
        return Err(anyhow!("--users: every step needs at least one user"));
    }
    Ok(users
        .into_iter()
        .map(|users| Load::Users {
            users,
            ramp,
            think: Duration::ZERO,
        })
        .collect())
}

/// Open-model steps at `rates`, at most `max_in_flight` waiting at once.
fn rate_loads(rates: &[f64], max_in_flight: usize) -> Vec<Load> {
    rates
        .iter()
        .map(|&rate| Load::Rate {
            rate,
            max_in_flight,
        })
        .collect()
}

/// Requests to URLs, in users or rate steps.
fn request_plan(args: &BenchArgs, resolve: &[Resolve], plan: &mut Plan) -> anyhow::Result<()> {
    let loads = loads(args)?;
    let length = match (&args.duration, args.iterations) {
        (Some(d), _) => Length::Duration(duration("--duration", d)?),
        (None, Some(n)) if n > 0 => Length::Iterations(n),
        (None, Some(_)) => return Err(anyhow!("--iterations must be at least 1")),
        (None, None) => {
            return Err(anyhow!(
                "give each step a --duration (e.g. 30s) or, with --users, --iterations"
            ))
        }
    };
    if matches!(length, Length::Iterations(_)) && !args.rate.is_empty() {
        return Err(anyhow!(
            "--iterations is for --users; give --rate steps a --duration"
        ));
    }
    let body = match &args.body {
        Some(b) if b.starts_with('@') => {
            std::fs::read(&b[1..]).with_context(|| format!("--body {b}"))?
        }
        Some(b) => b.clone().into_bytes(),
        None => Vec::new(),
    };
    let requests = args
        .urls
        .iter()
        .map(|u| weighted(u, resolve, &args.method, &args.headers, &body))
        .collect::<anyhow::Result<Vec<_>>>()?;
    plan.steps = loads
        .into_iter()
        .map(|load| Step { load, length })
        .collect();
    plan.requests = requests;
    Ok(())
}

fn loads(args: &BenchArgs) -> anyhow::Result<Vec<Load>> {
    let (ramp, think) = (
        duration("--ramp", args.ramp.as_deref().unwrap_or("0s"))?,
        duration("--think", args.think.as_deref().unwrap_or("0s"))?,
    );
    if !args.users.is_empty() {
        if args.users.contains(&0) {
            return Err(anyhow!("--users: every step needs at least one user"));
        }
        return Ok(args
            .users
            .iter()
            .map(|&users| Load::Users { users, ramp, think })
            .collect());
    }
    if !args.rate.is_empty() {
        if args.rate.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(anyhow!(
                "--rate: every step needs a rate above 0 requests per second"
            ));
        }
        if args.max_in_flight == 0 {
            return Err(anyhow!("--max-in-flight must be at least 1"));
        }
        return Ok(rate_loads(&args.rate, args.max_in_flight));
    }
    Err(anyhow!("give --users (closed model, e.g. --users 100,200) or --rate (open model, e.g. --rate 500,1000)"))
}

/// `URL` or `URL@WEIGHT`.
fn weighted(
    text: &str,
    resolve: &[Resolve],
    method: &str,
    headers: &[String],
    body: &[u8],
) -> anyhow::Result<Weighted> {
    let (url, weight) = match text.rsplit_once('@') {
        Some((url, w)) if !w.contains('/') => {
            let w: u32 = w
                .parse()
                .map_err(|_| anyhow!("`{text}`: the weight after @ is not a whole number"))?;
            (url, w)
        }
        _ => (text, 1),
    };
    let target = Target::parse_with(url, resolve)?;
    let request = RequestSpec::new(method, target, headers, body.to_vec())?;
    Ok(Weighted { request, weight })
}

/// The `--resolve` overrides.
fn resolves(args: &BenchArgs) -> anyhow::Result<Vec<Resolve>> {
    Ok(args
        .resolve
        .iter()
        .map(|r| r.parse())
        .collect::<Result<Vec<Resolve>, _>>()?)
}

/// How the run speaks TLS, from its flags.
fn tls_options(args: &BenchArgs) -> anyhow::Result<TlsOptions> {
    let version = match &args.tls_version {
        Some(v) => Some(v.parse().map_err(|e| anyhow!("--tls-version: {e}"))?),
        None => None,
    };
    let alpn: &[u8] = if args.h2 { b"h2" } else { b"http/1.1" };
    Ok(TlsOptions {
        insecure: args.insecure,
        cacert: args.cacert.clone(),
        resume: args.tls_resume == "on",
        version,
        alpn: vec![alpn.to_vec()],
    })
}

/// Lifts the open-file limit to the hard limit and checks that every connection fits.
fn enough_files(connections: usize) -> anyhow::Result<()> {
    let limit = sluice_accept::OpenFiles::raise().map_or(1024, |l| l.soft);
    // Some room for the process's own files (stdio, the event loops, the JSON).
    let needed = connections as u64 + 64;
    if needed > limit {
        return Err(anyhow!(
            "{connections} connections need {needed} open files, and this process may open {limit}: {} or use fewer users",
            sluice_accept::HOW_TO_RAISE
        ));
    }
    Ok(())
}

/// A duration that may also be written in microseconds (`100us`).
fn micros(flag: &str, text: &str) -> anyhow::Result<Duration> {
    match text.strip_suffix("us") {
        Some(n) => n
            .parse()
            .map(Duration::from_micros)
            .map_err(|_| anyhow!("{flag} {text}: not a duration (write e.g. 100us or 1ms)")),
        None => duration(flag, text),
    }
}

fn duration(flag: &str, text: &str) -> anyhow::Result<Duration> {
    sluice_config::parse_duration(text)
        .ok_or_else(|| anyhow!("{flag} {text}: not a duration (write e.g. 500ms, 30s, 2m)"))
}

/// A watch that turns true at the first SIGINT or SIGTERM; a second one exits at once.
pub fn interrupt_on_signal(
    tool: &'static str,
) -> anyhow::Result<tokio::sync::watch::Receiver<bool>> {
    let signals = crate::signals::signals()?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    std::thread::spawn(move || {
        let mut stopping = false;
        while let Ok(signal) = signals.recv() {
            if !matches!(signal, crate::signals::Signal::Stop) {
                continue;
            }
            if stopping {
                std::process::exit(i32::from(INTERRUPTED));
            }
            stopping = true;
            eprintln!("\n{tool}: interrupted; writing what was measured (again to quit at once)");
            let _ = tx.send(true);
        }
    });
    Ok(rx)
}

fn progress_line(step: usize, steps: usize, s: &Snapshot, elapsed: Duration) {
    let secs = elapsed.as_secs_f64().max(1e-3);
    let line = format!(
        "step {}/{steps} | {:>5.0}s | {:>8} req | {:>9.0} req/s | p99 {:>8.2} ms | errors {} | active {}",
        step + 1,
        secs,
        s.requests,
        s.requests as f64 / secs,
        s.p99.as_secs_f64() * 1000.0,
        s.errors,
        s.active
    );
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r{line}\x1b[K");
    } else if elapsed.as_secs().is_multiple_of(5) {
        let _ = writeln!(err, "{line}");
    }
}

fn end_progress_line(step: &StepReport) {
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let _ = write!(err, "\r\x1b[K");
    }
    let _ = writeln!(
        err,
        "step done: {} samples, {:.1} req/s, p99 {:.2} ms, errors {:.2}%",
        step.summary.samples,
        step.summary.throughput_rps,
        step.summary.latency.p99_ms,
        step.summary.error_pct
    );
}
