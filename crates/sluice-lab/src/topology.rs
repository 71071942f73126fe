//! Starting and stopping the tiers of one configuration: the simulated database, the
//! simulated app servers and the balancer, each a process of its own on loopback, each
//! in its own CPU budget when the experiment gives one.
//!
//! A budget is a cgroup (v1 `cpu` controller quota) the process joins before its first
//! instruction (`sh -c 'echo $$ > cgroup.procs; exec ...'`), so the children it forks at
//! once (nginx's workers) are inside too. Where no cgroup can be made (not root), it is
//! the lab's user-space duty cycle (`sluice_process::cpu_duty`) over the process's tree; the
//! report names which each tier had.

use crate::budget::{machine_budget, thread_budget, Budget, Enforcement, Throttled};
use crate::error::Error;
use crate::lb_config::{self, Layout};
use crate::spec::{Experiment, LbKind};
use sluice_process::cpu_budget::CpuBudget;
use sluice_process::cpu_duty::{self, DutyBudget};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a tier has to accept connections once started: generous, since a tier not
/// listening by then is stuck and the step would measure nothing.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// One running process of a tier.
pub struct Proc {
    /// `lb`, `app-1`, `db`.
    pub name: String,
    /// `lb`, `app`, `db`: the tier it belongs to.
    pub tier: String,
    pub pid: u32,
    pub addr: SocketAddr,
    pub budget: Budget,
    pub limit: Option<Limit>,
    /// Where its counters are read: a simulated tier's `/__stats`, sluice's or HAProxy's
    /// `/metrics`.
    pub stats: Option<String>,
    child: Child,
}

/// What holds a process to its budget.
pub enum Limit {
    Cgroup(CpuBudget),
    Duty(DutyBudget),
}

impl Limit {
    fn budget(&self) -> Budget {
        let (cores, method) = match self {
            Limit::Cgroup(b) => (b.cpus, b.method),
            Limit::Duty(d) => (d.cpus, cpu_duty::METHOD),
        };
        Budget {
            cores,
            method: method.into(),
        }
    }

    fn throttled(&self) -> Throttled {
        match self {
            Limit::Cgroup(b) => Throttled::Cgroup(b.dir().to_path_buf()),
            Limit::Duty(d) => Throttled::Duty(d.meter()),
        }
    }
}

/// The tiers of one configuration, stopped when dropped.
pub struct Topology {
    pub procs: Vec<Proc>,
    /// Where the users send their requests: the balancer.
    pub target: SocketAddr,
    /// Why some tier has not the budget it was given, or not the kind decided.
    pub warnings: Vec<String>,
}

/// How to start the tiers.
pub struct Launch<'a> {
    pub sluice: &'a Path,
    pub dir: &'a Path,
    /// How budgets are held on this machine.
    pub budgets: &'a Enforcement,
}

impl Topology {
    /// Starts the database (if any), `servers` app servers and the balancer, and waits
    /// until each accepts connections.
    pub fn start(e: &Experiment, servers: usize, how: &Launch) -> Result<Topology, Error> {
        create_dir(how.dir)?;
        // Absolute: nginx reads its paths against its prefix, not our directory.
        let dir = how
            .dir
            .canonicalize()
            .map_err(Error::io(format!("resolving {}", how.dir.display())))?;
        let how = &Launch {
            sluice: how.sluice,
            dir: &dir,
            budgets: how.budgets,
        };
        let mut t = Topology {
            procs: Vec::new(),
            target: free_addr()?,
            warnings: Vec::new(),
        };
        let db = match &e.db {
            Some(db) => {
                let addr = free_addr()?;
                let args = backend_args(addr, "db", db.work, db.threads, 100_000, db.delay);
                t.spawn_simulated("db", "db", addr, db.cpu, how, args)?;
                Some(addr)
            }
            None => None,
        };
        let mut apps = Vec::new();
        for i in 1..=servers {
            let addr = free_addr()?;
            let name = format!("app-{i}");
            let args = app_args(e, addr, &name, db);
            t.spawn_simulated(&name, "app", addr, e.app.cpu, how, args)?;
            apps.push(addr);
        }
        t.start_lb(e, &apps, how)?;
        for p in &mut t.procs {
            wait_ready(p, how.dir)?;
        }
        Ok(t)
    }

    fn start_lb(&mut self, e: &Experiment, apps: &[SocketAddr], how: &Launch) -> Result<(), Error> {
        let dir = how.dir.join("lb");
        create_dir(&dir)?;
        let admin = free_addr()?;
        let layout = Layout {
            listen: self.target,
            admin,
            servers: apps,
            dir: &dir,
        };
        let (file, text) = lb_config::render(&e.lb, &layout);
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(Error::io(format!("writing {}", path.display())))?;
        let p = path.display().to_string();
        let d = format!("{}/", dir.display());
        let (program, args): (PathBuf, Vec<String>) = match e.lb.run {
            LbKind::Sluice => (how.sluice.into(), vec!["serve".into(), "-c".into(), p]),
            LbKind::Nginx => (
                find_program("nginx")?,
                [
                    "-p",
                    &d,
                    "-e",
                    &format!("{d}error.log"),
                    "-c",
                    &p,
                    "-g",
                    "daemon off;",
                ]
                .map(String::from)
                .to_vec(),
            ),
            LbKind::Haproxy => (find_program("haproxy")?, vec!["-f".into(), p, "-db".into()]),
        };
        let target = self.target;
        let lb = self.spawn("lb", "lb", target, e.lb.cpu, how, &program, &args)?;
        if e.lb.run != LbKind::Nginx {
            lb.stats = Some(format!("http://{admin}/metrics"));
        }
        lb.budget = thread_budget(lb.budget.clone(), e.lb.workers);
        Ok(())
    }

    /// Starts a `sluice backend` (an app server or the database) with its counters on a
    /// port of their own (`--stats-listen`), readable when its cap or pool is full.
    fn spawn_simulated(
        &mut self,
        name: &str,
        tier: &str,
        addr: SocketAddr,
        cpu: Option<f64>,
        how: &Launch,
        mut args: Vec<String>,
    ) -> Result<(), Error> {
        let stats = free_addr()?;
        args.extend(["--stats-listen".into(), stats.to_string()]);
        let p = self.spawn(name, tier, addr, cpu, how, how.sluice, &args)?;
        p.stats = Some(format!("http://{stats}/__stats"));
        Ok(())
    }

    /// Starts one process, inside a budget of `cpu` cores when given and possible.
    #[allow(clippy::too_many_arguments)]
    fn spawn(
        &mut self,
        name: &str,
        tier: &str,
        addr: SocketAddr,
        cpu: Option<f64>,
        how: &Launch,
        program: &Path,
        args: &[String],
    ) -> Result<&mut Proc, Error> {
        let cgroup = match (cpu, how.budgets) {
            (Some(c), Enforcement::Cgroup(_)) => match CpuBudget::create(name, c) {
                Ok(b) => Some(b),
                Err(e) => {
                    self.warnings.push(format!(
                        "{name}: no cgroup ({e}); the lab's duty cycle holds it instead"
                    ));
                    None
                }
            },
            _ => None,
        };
        let log = how.dir.join(format!("{name}.log"));
        // Its temporary files (sluice serve's default pid file) in the run's directory:
        // a tier killed after its 3 s to stop would leave them in /tmp for good.
        let child = command(cgroup.as_ref(), program, args, &log)?
            .env("TMPDIR", how.dir)
            .spawn()
            .map_err(|source| Error::Start {
                name: name.into(),
                program: program.into(),
                source,
            })?;
        let limit = match (cgroup, cpu) {
            (Some(b), _) => Some(Limit::Cgroup(b)),
            (None, Some(c)) => match DutyBudget::start(child.id(), c) {
                Ok(d) => Some(Limit::Duty(d)),
                Err(e) => {
                    self.warnings.push(format!(
                        "{name}: no CPU budget, it runs on the machine's cores ({e})"
                    ));
                    None
                }
            },
            (None, None) => None,
        };
        let budget = limit.as_ref().map_or_else(machine_budget, Limit::budget);
        let last = self.procs.len();
        self.procs.push(Proc {
            name: name.into(),
            tier: tier.into(),
            pid: child.id(),
            addr,
            budget,
            limit,
            stats: None,
            child,
        });
        Ok(&mut self.procs[last])
    }

    /// What the sampler watches: each process, its port, counters and budget.
    pub fn watched(&self) -> Vec<crate::real::Watched> {
        self.procs
            .iter()
            .map(|p| crate::real::Watched {
                name: p.name.clone(),
                tier: p.tier.clone(),
                pid: Some(p.pid),
                port: Some(p.addr.port()),
                stats: p.stats.clone(),
                database: None,
                throttled: p.limit.as_ref().map(Limit::throttled),
                budget: p.budget.clone(),
            })
            .collect()
    }

    /// The processes of one tier.
    pub fn tier<'a>(&'a self, tier: &'a str) -> impl Iterator<Item = &'a Proc> + 'a {
        self.procs.iter().filter(move |p| p.tier == tier)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // The balancer first, so no request is sent to a server already gone.
        for p in self.procs.iter_mut().rev() {
            stop(p);
        }
    }
}

/// SIGTERM to the process and its children, then SIGKILL to what is left after 3 s.
fn stop(p: &mut Proc) {
    // A process the duty cycle stopped would not see the TERM until continued.
    if let Some(Limit::Duty(d)) = &mut p.limit {
        d.release();
    }
    let tree = sluice_process::procfs::tree(p.pid);
    signal("-TERM", p.pid);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if matches!(p.child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in tree {
        if std::fs::metadata(format!("/proc/{pid}")).is_ok() {
            signal("-KILL", pid);
        }
    }
    let _ = p.child.kill();
    let _ = p.child.wait();
}

/// The command that starts `program` with `args`, its output to a new file `log`,
/// inside `cgroup` from its first instruction when given (the shell joins the group,
/// then becomes the program).
fn command(
    cgroup: Option<&CpuBudget>,
    program: &Path,
    args: &[String],
    log: &Path,
) -> Result<Command, Error> {
    let (stdout, stderr) = std::fs::File::create(log)
        .and_then(|f| Ok((f.try_clone()?, f)))
        .map_err(Error::io(format!("creating {}", log.display())))?;
    let mut cmd = match cgroup {
        Some(b) => {
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg(format!(
                    "echo $$ > '{}' && exec \"$@\"",
                    b.procs_file().display()
                ))
                .arg("sh")
                .arg(program);
            c
        }
        None => Command::new(program),
    };
    // Each tier in a process group of its own: a group holding a process the duty
    // cycle stopped gets SIGHUP from the kernel when it is orphaned (POSIX), and the
    // lab's group is orphaned when the shell that started it exits (a closed terminal,
    // `nohup`, a CI step). A tier's own group keeps its parent, the lab, outside it.
    cmd.process_group(0);
    cmd.args(args)
        .env("NO_COLOR", "1")
        // One calibration for every tier, measured here outside any quota: the CPU
        // work per request is then the same amount in every process.
        .env(
            sluice_simulated::cpu::RATE_ENV,
            sluice_simulated::cpu::per_microsecond().to_string(),
        )
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    Ok(cmd)
}

/// Sends `sig` to `pid` with kill(1) (quietly: the process may be gone already).
fn signal(sig: &str, pid: u32) {
    let _ = Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

fn backend_args(
    addr: SocketAddr,
    name: &str,
    work: Duration,
    threads: usize,
    queue: usize,
    delay: Duration,
) -> Vec<String> {
    vec![
        "backend".into(),
        "--listen".into(),
        addr.to_string(),
        "--name".into(),
        name.into(),
        "--cpu".into(),
        millis(work),
        "--threads".into(),
        threads.to_string(),
        "--queue".into(),
        queue.to_string(),
        "--delay".into(),
        millis(delay),
    ]
}

/// A duration as the command line's flags take it, to the microsecond.
fn millis(d: Duration) -> String {
    format!("{}ms", d.as_micros() as f64 / 1000.0)
}

fn app_args(e: &Experiment, addr: SocketAddr, name: &str, db: Option<SocketAddr>) -> Vec<String> {
    let a = &e.app;
    let mut args = backend_args(addr, name, a.work, a.threads, a.queue, a.delay);
    args.extend(["--max-conns".into(), a.max_conns.to_string()]);
    if a.stomp {
        args.push("--stomp".into());
    }
    if let Some(db) = db {
        args.extend([
            "--db".into(),
            db.to_string(),
            "--db-pool".into(),
            a.db_pool.to_string(),
            "--db-queries".into(),
            a.db_queries.to_string(),
        ]);
    }
    args
}

/// A loopback address no one listens on now, below the kernel's ephemeral range: a port
/// the kernel hands out (`127.0.0.1:0`) is one an outgoing connection can take too (the
/// load generator opens thousands) between now and the tier's own bind, which then fails
/// with "Address already in use". Ports below the range are never given to outgoing
/// connections.
fn free_addr() -> Result<SocketAddr, Error> {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let low = ephemeral_low().unwrap_or(32768);
    let (first, span) = (10_000u32, low.saturating_sub(10_000).max(1));
    let seed = std::process::id().wrapping_mul(7919);
    for _ in 0..500 {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = first + seed.wrapping_add(n.wrapping_mul(104_729)) % span;
        if let Ok(l) = TcpListener::bind(("127.0.0.1", port as u16)) {
            return l
                .local_addr()
                .map_err(Error::io("picking a free loopback port".into()));
        }
    }
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(Error::io("picking a free loopback port".into()))
}

/// The first port of the kernel's ephemeral range (`ip_local_port_range`).
fn ephemeral_low() -> Option<u32> {
    let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    range.split_whitespace().next()?.parse().ok()
}

fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))
}

fn find_program(name: &str) -> Result<PathBuf, Error> {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return Ok(p);
        }
    }
    Err(Error::NotInstalled(name.into()))
}

/// Waits until `p` accepts connections ([`READY_WITHIN`]), or says why it did not,
/// with its log.
fn wait_ready(p: &mut Proc, dir: &Path) -> Result<(), Error> {
    let deadline = Instant::now() + READY_WITHIN;
    loop {
        if TcpStream::connect_timeout(&p.addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        let log = dir.join(format!("{}.log", p.name));
        let tail = || std::fs::read_to_string(&log).unwrap_or_default();
        if let Ok(Some(status)) = p.child.try_wait() {
            return Err(Error::Exited {
                name: p.name.clone(),
                status,
                log: tail(),
            });
        }
        if Instant::now() > deadline {
            return Err(Error::NotReady {
                name: p.name.clone(),
                addr: p.addr,
                within: READY_WITHIN,
                log: tail(),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
