//! `sluice lab`: the command line of the lab (the work is `sluice-lab`'s).

use anyhow::Context;
use clap::Args;
use sluice_bench::scenario::Scenario;
use sluice_lab::budget::Enforcement;
use sluice_lab::live::Live;
use sluice_lab::resize::{Balancer, Resize};
use sluice_lab::spec::{Experiment, LbKind, ScenarioFile};
use sluice_lab::text::{self, Width};
use sluice_lab::{builtin, report, run};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

// The experiment or the command line cannot be used; interrupted (what was measured
// is written all the same).
use crate::exit::{BAD_INPUT, INTERRUPTED};

#[derive(Args, Debug)]
pub struct LabArgs {
    /// The experiment: a TOML file, or a built-in's name (see --list). Default: the
    /// scale-out experiment (1, 2, 3 app servers sharing a database).
    #[arg(short, long)]
    experiment: Option<String>,
    /// List the built-in experiments and exit.
    #[arg(long)]
    list: bool,
    /// Print a built-in experiment's TOML (a file to start from) and exit.
    #[arg(long, value_name = "NAME")]
    print: Option<String>,
    /// The balancer in front of the app servers: sluice, nginx or haproxy (configs
    /// generated with the same servers, algorithm, workers and keep-alive).
    #[arg(long)]
    lb: Option<String>,
    /// App servers per configuration, e.g. 1,2,3 (overrides the experiment's). With
    /// --target, the scale-out experiment on your own servers: behind sluice or HAProxy
    /// the upstream's other servers are drained through its admin API (--admin) or
    /// HAProxy's runtime API (--haproxy-socket) for each count; behind any other
    /// balancer, your command --enlarge app.servers='... {n}' gives each count; put back
    /// as they were after the run (--restore app.servers='...').
    #[arg(long, value_delimiter = ',')]
    servers: Vec<usize>,
    /// Users per step, e.g. 10,20,40 (overrides the experiment's).
    #[arg(long, value_delimiter = ',')]
    users: Vec<usize>,
    /// Measured time of each step, e.g. 8s (overrides the experiment's).
    #[arg(long, short = 'd')]
    duration: Option<String>,
    /// Load before each step's measurement, not counted, e.g. 2s.
    #[arg(long)]
    warmup: Option<String>,
    /// Skip the proof (re-running the plateau with the named resource enlarged).
    #[arg(long)]
    no_prove: bool,
    /// Measure a running deployment instead of an experiment: the URL its users reach
    /// (with --tier for each tier, --users, --duration).
    #[arg(long, conflicts_with_all = ["experiment", "lb"])]
    target: Option<String>,
    /// The admin API of the sluice in front of the deployment (http://HOST:PORT), which
    /// --servers drains servers through; by default the one of --tier lb=PID@URL's
    /// /metrics URL.
    #[arg(long, requires = "target", value_name = "URL")]
    admin: Option<String>,
    /// HAProxy's runtime API, which --servers drains servers through when HAProxy is in
    /// front: the path of its `stats socket ... level admin` (e.g.
    /// /run/haproxy/admin.sock) or HOST:PORT for `stats socket ipv4@HOST:PORT`. Its
    /// drains are not leases: the commands that undo them are printed before the run.
    #[arg(
        long,
        requires = "target",
        conflicts_with = "admin",
        value_name = "ADDR"
    )]
    haproxy_socket: Option<String>,
    /// The upstream --servers scales over, or HAProxy's backend (by default the only one
    /// with more than one server).
    #[arg(long, requires = "servers", value_name = "NAME")]
    upstream: Option<String>,
    /// For the proof on a deployment: a command that enlarges a resource,
    /// TIER.KIND='COMMAND' (the report's kinds: app.db_pool, db.cpu, ...), or
    /// TIER.servers='COMMAND' with {n} the servers wanted (kubectl scale ...
    /// --replicas={n}), which also gives --servers its counts when the balancer has no
    /// API the lab knows. Repeatable.
    #[arg(long, requires = "target", value_name = "TIER.KIND=COMMAND")]
    enlarge: Vec<String>,
    /// The command that puts back what --enlarge changed, for the same TIER.KIND.
    /// Repeatable.
    #[arg(long, requires = "enlarge", value_name = "TIER.KIND=COMMAND")]
    restore: Vec<String>,
    /// A tier of the deployment, one item per instance: NAME=PID[,PID...] for local
    /// processes, NAME=http://HOST:PORT/metrics for a Prometheus exporter (node_exporter,
    /// the JMX exporter, Spring Boot's actuator, sluice's /metrics),
    /// NAME=postgres://USER@HOST:PORT/DB or mysql://... for a database's sessions
    /// (read-only), NAME=redis://HOST:PORT for Redis's INFO,
    /// NAME=prometheus+http://HOST:9090/?job=JOB for a job's targets through Prometheus,
    /// or NAME=PID@URL for a process and its metrics (a loopback URL on a port a listed
    /// pid listens on is joined to it). Repeatable.
    #[arg(long, requires = "target")]
    tier: Vec<String>,
    /// The rate the deployment must hold at its peak, req/s (`sluice plan`'s "peak
    /// rate"): with 4 or more --users steps, the scalability law fitted to them says how
    /// far its ceiling is from it.
    #[arg(long, requires = "target", value_name = "REQ_PER_S")]
    peak_rate: Option<f64>,
    /// Pause of each user between requests (closed model; overrides the experiment's).
    #[arg(long)]
    think: Option<String>,
    /// What each user does, instead of a GET loop: a `sluice bench --scenario` file. Its
    /// steps go to the experiment's balancer (or to --target), in place of its target.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,
    /// Print every cell and sentence in full, however wide (by default lines keep
    /// within 120 columns and the table's saturated cells are short).
    #[arg(long)]
    wide: bool,
    /// While it runs, serve a page at this address (e.g. 127.0.0.1:9090) showing each
    /// tier's CPU against its budget, throughput, p99 and errors once a second, the steps
    /// done and the verdict forming.
    #[arg(long, value_name = "ADDR")]
    live: Option<std::net::SocketAddr>,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the report as one HTML page (charts included, no network) to this file.
    #[arg(long)]
    html: Option<PathBuf>,
    /// Write everything to this directory: report.json, report.txt, report.html, and
    /// each tier's config and log.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub fn lab(args: LabArgs) -> anyhow::Result<ExitCode> {
    if args.list {
        for (name, _) in builtin::ALL {
            let about = builtin::get(name).map(|e| e.about).unwrap_or_default();
            println!("{name:<16} {about}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(name) = &args.print {
        // An unknown name is bad input, as a bad experiment file is (exit 2).
        let Some(text) = builtin::text(name) else {
            eprintln!("sluice lab: no built-in experiment `{name}` (see sluice lab --list)");
            return Ok(ExitCode::from(BAD_INPUT));
        };
        print!("{text}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(target) = &args.target {
        return deployment(&args, target);
    }
    let e = match experiment(&args) {
        Ok(e) => e,
        Err(message) => {
            eprintln!("{message}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let stop = crate::bench::interrupt_on_signal("sluice lab")?;
    let dir = match &args.out {
        Some(out) => out.join("tiers"),
        None => std::env::temp_dir().join(format!("sluice-lab-{}", std::process::id())),
    };
    let budgets = Enforcement::decide();
    let w = width(&args);
    eprint!("{}", text::wrap(&intro(&e), "", "  ", w));
    for line in budgets.describe(&rerun_command()).lines() {
        // The command to copy stays whole, however long.
        match line.starts_with("  sudo ") {
            true => eprintln!("{line}"),
            false => eprint!("{}", text::wrap(line, "", "  ", w)),
        }
    }
    let options = progress_options(&args, &e.name, dir.clone(), Some(budgets))?;
    let result = run::run(&e, &options, &stop);
    if let Ok(report) = &result {
        options.live.finish(&report.verdict.summary);
    }
    if args.out.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    finish(&args, result?)
}

/// `--target URL --tier ...`: measure a deployment the lab did not start.
fn deployment(args: &LabArgs, target: &str) -> anyhow::Result<ExitCode> {
    let mut d = match deployment_of(args, target) {
        Ok(d) => d,
        Err(message) => {
            eprintln!("sluice lab: {message}");
            return Ok(ExitCode::from(BAD_INPUT));
        }
    };
    let stop = crate::bench::interrupt_on_signal("sluice lab")?;
    // A deployment's budgets are its own, read from its processes: none is made here.
    let options = progress_options(args, target, std::env::temp_dir(), None)?;
    let report = run::run_deployment(&mut d, &options, &stop)?;
    options.live.finish(&report.verdict.summary);
    finish(args, report)
}

/// The deployment the flags describe, its target probed and its upstream opened for
/// `--servers`; or what is wrong with them.
fn deployment_of(args: &LabArgs, target: &str) -> Result<run::Deployment, String> {
    if args.tier.is_empty() {
        return Err("--target needs at least one --tier NAME=PID or NAME=URL".into());
    }
    if args.users.is_empty() || args.users.contains(&0) {
        return Err("--target needs --users, e.g. --users 50,100,200".into());
    }
    let mut tiers = Vec::new();
    for spec in &args.tier {
        tiers.extend(sluice_lab::real::parse_tier(spec).map_err(|e| format!("{e:#}"))?);
    }
    let (duration, warmup, think) = times(args)?;
    let scenario = answering(args, target)?;
    let commands = sluice_lab::change::Commands::parse(&args.enlarge, &args.restore)?;
    authorize_admin(args, &tiers);
    let resize = resize(args, &tiers, &commands)?;
    Ok(run::Deployment {
        target: target.to_string(),
        tiers,
        users: args.users.clone(),
        think,
        warmup,
        duration,
        peak_rate: args.peak_rate,
        scenario,
        resize,
        prove: (!args.no_prove).then_some(commands),
    })
}

/// `--duration`, `--warmup` and `--think` (10 s, 2 s and none by default).
fn times(args: &LabArgs) -> Result<(Duration, Duration, Duration), String> {
    let time = |flag: &str, text: Option<&String>, default: &str| {
        let text = text.map_or(default, |t| t.as_str());
        sluice_config::parse_duration(text)
            .ok_or_else(|| format!("{flag} {text}: not a duration (write e.g. 10s)"))
    };
    Ok((
        time("--duration", args.duration.as_ref(), "10s")?,
        time("--warmup", args.warmup.as_ref(), "2s")?,
        time("--think", args.think.as_ref(), "0ms")?,
    ))
}

/// The token of a sluice admin API that has one, from `SLUICE_ADMIN_TOKEN` (never a flag:
/// a command line is readable by every user of the machine), for `--admin` and the
/// origin of a balancer tier's `/metrics` URL alone.
fn authorize_admin(args: &LabArgs, tiers: &[sluice_lab::real::Watched]) {
    let Ok(token) = std::env::var("SLUICE_ADMIN_TOKEN") else {
        return;
    };
    let from_tiers = tiers
        .iter()
        .filter(|w| w.tier == "lb")
        .filter_map(|w| w.stats.as_deref()?.strip_suffix("/metrics"));
    for origin in args.admin.as_deref().into_iter().chain(from_tiers) {
        sluice_lab::fetch::authorize(origin, &token);
    }
}

/// With `--servers`: the upstream to resize, through `--haproxy-socket`, `--admin` or the
/// admin API whose `/metrics` a balancer tier is read at; or the user's own command
/// (`--enlarge TIER.servers='... {n}'` with its `--restore`).
fn resize(
    args: &LabArgs,
    tiers: &[sluice_lab::real::Watched],
    commands: &sluice_lab::change::Commands,
) -> Result<Option<(Resize, Vec<usize>)>, String> {
    if args.servers.is_empty() {
        return Ok(None);
    }
    if args.servers.contains(&0) {
        return Err("--servers takes numbers above 0".into());
    }
    let from_tier = || {
        tiers
            .iter()
            .filter(|w| w.tier == "lb")
            .find_map(|w| w.stats.as_deref()?.strip_suffix("/metrics"))
            .map(String::from)
    };
    let balancer = match (&args.haproxy_socket, args.admin.clone().or_else(from_tier)) {
        (Some(socket), _) => Balancer::Haproxy {
            socket: socket.clone(),
        },
        (None, Some(admin)) => Balancer::Sluice { admin },
        (None, None) => by_command(commands)?,
    };
    let most = args.servers.iter().copied().max().unwrap_or(1);
    let resize =
        Resize::start(balancer, args.upstream.as_deref(), most).map_err(|e| e.to_string())?;
    let fewest = args.servers.iter().copied().min().unwrap_or(most);
    let by_hand = resize.by_hand(fewest);
    if !by_hand.is_empty() {
        // HAProxy's drains and a command's servers outlive a lab killed with kill -9:
        // say how to undo them first.
        eprintln!(
            "sluice lab: the servers are put back when the run ends; \
             if it is killed (kill -9) first, put them back with:\n  {}",
            by_hand.join("\n  ")
        );
    }
    Ok(Some((resize, args.servers.clone())))
}

/// Any other balancer: the servers are given by the user's `--enlarge TIER.servers`
/// command, which must say how many (`{n}`) and come with the `--restore` command that
/// puts the deployment back as it was (the lab cannot know how it was).
fn by_command(commands: &sluice_lab::change::Commands) -> Result<Balancer, String> {
    let scale = commands
        .enlarge
        .iter()
        .find(|(k, _)| k.ends_with(".servers"));
    let Some((key, scale)) = scale else {
        return Err(
            "--servers with --target resizes the upstream of the balancer in front: \
                give a sluice's admin API with --admin http://HOST:PORT or \
                --tier lb=PID@http://HOST:PORT/metrics, HAProxy's runtime API with \
                --haproxy-socket PATH|HOST:PORT, or your own command for any other: \
                --enlarge app.servers='COMMAND {n}' --restore app.servers='COMMAND'"
                .into(),
        );
    };
    if !scale.contains("{n}") {
        return Err(format!(
            "--enlarge {key}='{scale}': say where the number of servers goes with {{n}}"
        ));
    }
    let Some(restore) = commands.restore.get(key) else {
        return Err(format!(
            "--servers by your command --enlarge {key} needs --restore {key}='COMMAND' \
             to put your servers back as they were after the run"
        ));
    };
    Ok(Balancer::Command {
        key: key.clone(),
        scale: scale.clone(),
        restore: restore.clone(),
    })
}

fn width(args: &LabArgs) -> Width {
    if args.wide {
        Width::Wide
    } else {
        Width::Narrow
    }
}

/// Progress lines on stdout, as each step ends.
fn progress_options(
    args: &LabArgs,
    name: &str,
    dir: PathBuf,
    budgets: Option<Enforcement>,
) -> anyhow::Result<run::Options> {
    let live = Live::new(name);
    if let Some(addr) = args.live {
        let bound = live
            .serve(addr)
            .with_context(|| format!("--live {addr}: serving the live page"))?;
        eprintln!("sluice lab: live view at http://{bound}/");
    }
    Ok(run::Options {
        sluice: std::env::current_exe().context("finding the sluice binary")?,
        dir,
        budgets,
        width: width(args),
        header_shown: Default::default(),
        live,
        progress: Box::new(|line| {
            println!("{line}");
            let _ = std::io::stdout().flush();
        }),
    })
}

/// The summary after the steps' lines, the files asked for, and the exit code (130
/// after an interruption: what was measured is written all the same).
fn finish(args: &LabArgs, mut report: report::LabReport) -> anyhow::Result<ExitCode> {
    report.version = Some(format!("sluice {}", env!("SLUICE_VERSION")));
    report.command = Some(command_line("sluice".into()));
    print!("{}", text::summary(&report, width(args)));
    let run = format!(
        "$ {}\n{}\n\n",
        report.command.as_deref().unwrap_or_default(),
        report.version.as_deref().unwrap_or_default()
    );
    let table = run + &text::table(&report, width(args));
    write_files(args, &report, &table)?;
    Ok(if report.interrupted {
        ExitCode::from(INTERRUPTED)
    } else {
        ExitCode::SUCCESS
    })
}

fn write_files(args: &LabArgs, report: &report::LabReport, text: &str) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(report)?;
    if let Some(path) = &args.json {
        std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
    }
    let page = sluice_lab::html::render(report);
    if let Some(path) = &args.html {
        std::fs::write(path, &page).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)?;
        std::fs::write(out.join("report.json"), &json)?;
        std::fs::write(out.join("report.html"), &page)?;
        std::fs::write(out.join("report.txt"), text)?;
        if !report.profiles.is_empty() {
            let dir = out.join("profiles");
            std::fs::create_dir_all(&dir)?;
            for p in &report.profiles {
                std::fs::write(dir.join(p.file_name()), p.folded())?;
            }
        }
        eprintln!("sluice lab: report in {}", out.display());
    }
    Ok(())
}

/// The experiment the flags describe, or the message saying why there is none.
fn experiment(args: &LabArgs) -> Result<Experiment, String> {
    let name = args.experiment.as_deref().unwrap_or(builtin::DEFAULT);
    let path = std::path::Path::new(name);
    let mut e = if path.exists() || name.ends_with(".toml") {
        Experiment::load(path).map_err(|e| e.to_string())?
    } else {
        builtin::get(name).ok_or_else(|| {
            format!(
                "sluice lab: no experiment file or built-in named `{name}` (see sluice lab --list)"
            )
        })?
    };
    if let Some(lb) = &args.lb {
        e.lb.run = LbKind::parse(lb)
            .ok_or_else(|| format!("sluice lab: --lb {lb}: one of sluice, nginx, haproxy"))?;
    }
    if !args.servers.is_empty() {
        e.servers = args.servers.clone();
    }
    if !args.users.is_empty() {
        e.users = args.users.clone();
    }
    let duration = |flag: &str, text: &str| {
        sluice_config::parse_duration(text)
            .ok_or_else(|| format!("sluice lab: {flag} {text}: not a duration (write e.g. 8s)"))
    };
    if let Some(d) = &args.duration {
        e.duration = duration("--duration", d)?;
    }
    if let Some(d) = &args.warmup {
        e.warmup = duration("--warmup", d)?;
    }
    if let Some(d) = &args.think {
        e.think = duration("--think", d)?;
    }
    if args.no_prove {
        e.prove = false;
    }
    if let Some((file, _)) = scenario_file(args).map_err(|e| format!("sluice lab: {e}"))? {
        e.scenario = Some(file);
    }
    if e.servers.contains(&0) || e.users.contains(&0) {
        return Err("sluice lab: --servers and --users take numbers above 0".into());
    }
    Ok(e)
}

/// `--scenario`'s file, once the target answered its first request (or a GET): a
/// target that does not answer would have every step measure its failures.
fn answering(args: &LabArgs, target: &str) -> Result<Option<ScenarioFile>, String> {
    let scenario = scenario_file(args)?;
    sluice_lab::probe::probe(target, scenario.as_ref().map(|(_, parsed)| parsed))
        .map_err(|refusal| refusal.to_string())?;
    Ok(scenario.map(|(file, _)| file))
}

/// `--scenario FILE`, read and parsed as `sluice bench --scenario` does: every problem
/// at once, each with its place (`chat.toml:3:1: ...`).
fn scenario_file(args: &LabArgs) -> Result<Option<(ScenarioFile, Scenario)>, String> {
    let Some(path) = &args.scenario else {
        return Ok(None);
    };
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--scenario {name}: cannot read it: {e}"))?;
    let parsed = Scenario::parse(&name, &text).map_err(|e| e.to_string())?;
    Ok(Some((ScenarioFile { name, text }, parsed)))
}

/// This very command, as root would run it: the binary by its full path (root's PATH
/// rarely has `~/.cargo/bin`), each argument quoted where the shell needs it.
fn rerun_command() -> String {
    let exe = std::env::current_exe().map_or("sluice".into(), |p| p.display().to_string());
    command_line(exe)
}

/// `program` and this process's arguments, each quoted for a shell where it needs it.
fn command_line(program: String) -> String {
    let args = std::env::args().skip(1).map(|a| {
        let plain = a
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
        if plain {
            a
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    });
    std::iter::once(program)
        .chain(args)
        .collect::<Vec<_>>()
        .join(" ")
}

/// What is about to run, and for about how long.
fn intro(e: &Experiment) -> String {
    let step = (e.duration + e.warmup).as_secs_f64();
    let proofs = if e.prove { 3.0 * step } else { 0.0 };
    let total = e.step_count() as f64 * step + proofs + 2.0 * e.servers.len() as f64;
    format!(
        "sluice lab: {} ({}), {} in front; servers {:?} x users {:?}, {} per step: about {:.0} s",
        e.name,
        e.about,
        e.lb.run.name(),
        e.servers,
        e.users,
        sluice_lab::spec::text(e.duration),
        total
    )
}
