//! The `sluice` command: the only `main`. Parses arguments and hands each subcommand to
//! the crate that does the work; owns no logic of its own beyond wiring and exit codes.

mod admin_client;
mod bench;
mod cli_reference;
mod commands;
mod exit;
mod lab;
mod man;
mod notify;
mod plan;
mod plural;
mod serve;
mod signals;
mod upgrade;

use clap::{CommandFactory, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

// The global allocator (mimalloc) is `sluice_alloc`'s: see there for why.
use sluice_alloc as _;
use std::process::ExitCode;

/// sluice: a load balancer with the performance lab built in.
#[derive(Parser)]
#[command(version = env!("SLUICE_VERSION"), about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the load balancer.
    Serve {
        /// The config file.
        #[arg(short, long, default_value = "sluice.toml")]
        config: PathBuf,
        /// Take over from the running `sluice serve` of this config (a binary upgrade):
        /// serve on its listening sockets, then it drains its connections and exits. If
        /// this one fails before it serves, the running one keeps serving. `sluice
        /// upgrade` starts it this way.
        #[arg(long)]
        upgrade: bool,
    },
    /// Validate a config and make the running `sluice serve` of that config load it:
    /// through its admin API when the config has [admin] (waiting for its answer; exit 1
    /// when it refused), else by SIGHUP. An invalid config is refused here.
    Reload {
        /// The config file the running `sluice serve` was started with.
        #[arg(short, long, default_value = "sluice.toml")]
        config: PathBuf,
    },
    /// Replace the running `sluice serve` of this config with this binary, dropping no
    /// connection: the running one starts `sluice serve --upgrade` (this binary's path),
    /// which takes over its listening sockets; then the old one finishes its requests in
    /// flight and exits (nginx's USR2 + QUIT; SIGUSR2 does the same with the binary the
    /// running one was started from). Exit 1 when the new process failed: the running
    /// one keeps serving.
    Upgrade {
        /// The config file the running `sluice serve` was started with.
        #[arg(short, long, default_value = "sluice.toml")]
        config: PathBuf,
    },
    /// The running sluice's servers, health, counters and last errors, as a table (from
    /// its admin API: the config needs an [admin] listener).
    Status {
        /// The running sluice's config file (its [admin] listener is asked).
        #[arg(short, long, default_value = "sluice.toml")]
        config: PathBuf,
    },
    /// Validate config files; list every problem as file:line:col and exit non-zero.
    Check {
        /// The config files (`-c` is optional, as `nginx -t -c` and `haproxy -c -f`
        /// users type it either way).
        #[arg(value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The config files, as `serve -c` takes them.
        #[arg(short, long, num_args = 1..)]
        config: Vec<PathBuf>,
    },
    /// Translate an nginx.conf into a sluice config (on stdout); what does not carry
    /// over is listed on stderr as file:line: directive: what sluice does instead.
    /// allow, deny, auth_basic and satisfy carry over; a check sluice cannot make
    /// (auth_request, auth_jwt, limit_except, an if answering 4xx) writes the routes under
    /// it closed, answering 403, and one it cannot route as nginx did (a guarded regex
    /// location) is named: either exits 2 unless --force.
    Import {
        /// The nginx config file (files it includes are read too).
        nginx_conf: PathBuf,
        /// Exit 0 even when checks sluice cannot carry over closed routes (they still
        /// answer 403) or left paths open.
        #[arg(long)]
        force: bool,
    },
    /// Print a shell's completion script for sluice (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print sluice's man page (roff), made from its command-line definition; with
    /// --dir, write it and one page per subcommand (sluice-serve.1, ...) there.
    Man {
        /// Write sluice.1 and sluice-SUBCOMMAND.1 into this directory.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print the CLI reference in Markdown instead (docs/reference/cli.md).
        #[arg(long, conflicts_with = "dir")]
        markdown: bool,
        /// Print the configuration reference in Markdown instead: every key of the
        /// config file (docs/reference/configuration.md).
        #[arg(long, conflicts_with_all = ["dir", "markdown"])]
        config: bool,
    },
    /// Start three backends on loopback and sluice in front of them.
    Demo {
        /// Where sluice listens.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
    },
    /// Capacity from traffic (seed 004's arithmetic): average and peak rate, and the
    /// users in the system at the peak (Little's law), with the `sluice bench` runs
    /// that check a target holds them.
    Plan(plan::PlanArgs),
    /// Run an experiment (simulated app servers and database behind a balancer, users
    /// in steps), sample every tier, and name the saturated one with its evidence;
    /// with no arguments, the scale-out experiment (about two and a half minutes).
    Lab(Box<lab::LabArgs>),
    /// Measure the balancing algorithms: consistent hashing (balance, keys moved, lookup
    /// cost, bounded loads) and a simulated slow server under each balancer.
    HashReport {
        /// Keys to place.
        #[arg(long, default_value_t = 1_000_000)]
        keys: usize,
    },
    /// Generate load and measure it: users in steps (closed model) or an arrival rate
    /// (open model), with honest latency percentiles; see `sluice bench --help`.
    Bench(Box<bench::BenchArgs>),
    /// Run one simulated app server.
    Backend {
        /// Where it listens, e.g. 127.0.0.1:9101.
        #[arg(long)]
        listen: SocketAddr,
        /// Shown in every response, so you can see which server answered.
        #[arg(long, default_value = "backend")]
        name: String,
        /// Time added before every response, e.g. 5ms.
        #[arg(long, default_value = "0ms")]
        delay: String,
        /// Threads; 0 means one per core.
        #[arg(long, default_value_t = 0)]
        workers: usize,
        /// WebSocket clients (except on /echo) speak STOMP 1.2 to an in-memory broker of
        /// this instance only, like Spring's simple broker.
        #[arg(long)]
        stomp: bool,
        /// CPU work per request, e.g. 2ms (a fixed amount, calibrated on an idle core:
        /// less CPU makes it take longer).
        #[arg(long, default_value = "0ms")]
        cpu: String,
        /// Worker threads (Tomcat's maxThreads): requests beyond them wait; 0: no limit.
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Requests that may wait for a worker thread (Tomcat's acceptCount); beyond,
        /// 503 at once.
        #[arg(long, default_value_t = 100)]
        queue: usize,
        /// Body bytes of each answer (0: the backend's name).
        #[arg(long, default_value_t = 0)]
        size: u64,
        /// The share of requests answered 500, e.g. 0.01.
        #[arg(long, default_value_t = 0.0)]
        errors: f64,
        /// Connections served at once (nginx's worker_connections); beyond, they wait
        /// unaccepted. 0: no cap.
        #[arg(long, default_value_t = 0)]
        max_conns: usize,
        /// Every this many requests the backend receives, one stalls for --stall (a GC
        /// pause); 0: none.
        #[arg(long, default_value_t = 0)]
        stall_every: u64,
        /// How long a stall lasts, e.g. 1s.
        #[arg(long, default_value = "1s")]
        stall: String,
        /// A database: another `sluice backend`, e.g. 127.0.0.1:9000, whose --threads,
        /// --cpu and --delay are its concurrency, CPU and I/O time per query. Each request
        /// runs --db-queries GET /query on a pooled connection, after its CPU work and
        /// holding its worker thread; 502 when a query fails.
        #[arg(long)]
        db: Option<SocketAddr>,
        /// Connections to --db (HikariCP's maximumPoolSize): requests beyond wait for one.
        #[arg(long, default_value_t = 10)]
        db_pool: usize,
        /// Queries per request, one after another on the same connection.
        #[arg(long, default_value_t = 1)]
        db_queries: u32,
        /// How long a request waits for a --db connection before it gets 503 (HikariCP's
        /// connectionTimeout), e.g. 250ms.
        #[arg(long, default_value = "5s")]
        db_timeout: String,
        /// Also answer /__stats on this address, outside the connection cap and the
        /// worker pool (what `sluice lab` samples).
        #[arg(long)]
        stats_listen: Option<SocketAddr>,
    },
}

fn main() -> ExitCode {
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("SLUICE_LOG").unwrap_or_else(|_| "info".into());
    // Colour only for a person at a terminal, and never when NO_COLOR is set
    // (https://no-color.org): log files and pipes get plain text.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .init();
    let cli = Cli::parse();
    // tests/docs.rs checks that every command line in the docs parses, without running
    // one: a parse error has exited with clap's message and status 2 by now.
    if std::env::var_os("SLUICE_PARSE_ONLY").is_some() {
        return ExitCode::SUCCESS;
    }
    let result = match cli.command {
        Command::Serve { config, upgrade } => serve::serve(&config, upgrade),
        Command::Upgrade { config } => serve::upgrade(&config),
        Command::Reload { config } => serve::reload(&config),
        Command::Check { files, config } => {
            commands::check(&files.into_iter().chain(config).collect::<Vec<_>>())
        }
        Command::Import { nginx_conf, force } => commands::import(&nginx_conf, force),
        Command::Completions { shell } => commands::completions(shell, Cli::command()),
        Command::Man { config: true, .. } => {
            print!("{}", sluice_config::reference::markdown());
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { markdown: true, .. } => {
            print!("{}", cli_reference::markdown(&Cli::command()));
            Ok(ExitCode::SUCCESS)
        }
        Command::Man { dir, .. } => man::man(Cli::command(), dir.as_deref()),
        Command::Status { config } => serve::status(&config),
        Command::Demo { listen } => commands::demo(listen),
        Command::HashReport { keys } => commands::hash_report(keys),
        Command::Plan(args) => plan::plan(&args),
        Command::Lab(args) => lab::lab(*args),
        Command::Bench(args) => bench::bench(*args),
        Command::Backend {
            listen,
            name,
            delay,
            workers,
            stomp,
            cpu,
            threads,
            queue,
            size,
            errors,
            max_conns,
            stall_every,
            stall,
            db,
            db_pool,
            db_queries,
            db_timeout,
            stats_listen,
        } => {
            let sim = commands::simulated(&cpu, threads, queue).and_then(|sim| {
                if !(0.0..=1.0).contains(&errors) {
                    return Err(anyhow::anyhow!(
                        "--errors {errors}: a share from 0 to 1, e.g. 0.01"
                    ));
                }
                let stall = sluice_config::parse_duration(&stall)
                    .ok_or_else(|| anyhow::anyhow!("--stall {stall}: a duration, e.g. 1s"))?;
                Ok(sluice_simulated::backend::Simulated {
                    size,
                    errors,
                    max_conns,
                    stall_every,
                    stall,
                    ..sim
                })
            });
            let sim =
                sim.and_then(|sim| commands::database(sim, db, db_pool, db_queries, &db_timeout));
            sim.and_then(|sim| {
                commands::backend((listen, stats_listen), name, &delay, workers, stomp, sim)
            })
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sluice: {e:#}");
            ExitCode::from(exit::FAILURE)
        }
    }
}
