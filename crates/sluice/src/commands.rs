//! What each subcommand does, in terms of the library crates.

use anyhow::{anyhow, Context};
use sluice_proxy::Proxy;
use sluice_simulated::backend;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use crate::exit::{BAD_INPUT as BAD_CONFIG, FAILURE};
use crate::plural::counted;

/// "sluice import: 1 check that sluice cannot carry over, 3 directives not carried
/// over (if x2, set), 2 directives carried over differently, 5 directives that sluice
/// does itself (each listed above)"; the checks only when there are some.
fn import_summary(notes: &[sluice_import::Note]) -> String {
    use sluice_import::NoteKind;
    let count = |kind| notes.iter().filter(|n| n.kind() == kind).count();
    let n = |kind, what: &str| format!("{} {what}", counted(count(kind), "directive"));
    let lost = match lost_names(notes) {
        names if names.is_empty() => n(NoteKind::Lost, "not carried over"),
        names => format!("{} ({names})", n(NoteKind::Lost, "not carried over")),
    };
    let closed = match count(NoteKind::Closed) {
        0 => String::new(),
        1 => "1 check that sluice cannot carry over, ".into(),
        c => format!("{c} checks that sluice cannot carry over, "),
    };
    format!(
        "sluice import: {closed}{}, {}, {} (each listed above); check the result with `sluice check FILE`",
        lost,
        n(NoteKind::Changed, "carried over differently"),
        n(NoteKind::Done, "that sluice does itself")
    )
}

/// The directives not carried over, by name, the most frequent first: "if x3, set".
fn lost_names(notes: &[sluice_import::Note]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    let lost = notes
        .iter()
        .filter(|n| n.kind() == sluice_import::NoteKind::Lost);
    for note in lost {
        match counts.iter_mut().find(|(name, _)| *name == note.directive) {
            Some((_, c)) => *c += 1,
            None => counts.push((&note.directive, 1)),
        }
    }
    counts.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
    let named = counts.iter().map(|(name, c)| match c {
        1 => name.to_string(),
        c => format!("{name} x{c}"),
    });
    named.collect::<Vec<_>>().join(", ")
}

/// `sluice import`: the translated config on stdout, the notes on stderr. Routes closed
/// for checks sluice cannot make exit [`BAD_CONFIG`] (the input cannot be carried over
/// as it is), unless `force`: the config is printed either way.
pub fn import(path: &Path, force: bool) -> anyhow::Result<ExitCode> {
    let imported = match sluice_import::import(path) {
        Ok(imported) => imported,
        Err(e) => {
            eprintln!("sluice import: {e}");
            return Ok(ExitCode::from(FAILURE));
        }
    };
    print!("{}", imported.toml);
    for note in &imported.notes {
        eprintln!("{note}");
    }
    eprintln!("{}", import_summary(&imported.notes));
    let closed = imported
        .notes
        .iter()
        .any(|n| n.kind() == sluice_import::NoteKind::Closed);
    if closed && !force {
        eprintln!("sluice import: nginx checked who may reach some paths in ways sluice cannot carry over (each named above): their routes are written closed (return = 403) where sluice can route them as nginx did, and said to be open where it cannot. Carry the checks over by hand, or pass --force to accept the config as it is");
        return Ok(ExitCode::from(BAD_CONFIG));
    }
    Ok(ExitCode::SUCCESS)
}

/// `sluice completions SHELL`: the completion script for `cli`.
pub fn completions(
    shell: clap_complete::Shell,
    mut cli: clap::Command,
) -> anyhow::Result<ExitCode> {
    clap_complete::generate(shell, &mut cli, "sluice", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

pub fn check(paths: &[PathBuf]) -> anyhow::Result<ExitCode> {
    let mut failed = false;
    if paths.is_empty() {
        eprintln!("sluice check: name a config file: sluice check FILE (or -c FILE)");
        return Ok(ExitCode::from(BAD_CONFIG));
    }
    for path in paths {
        match sluice_config::load_as_written(path).and_then(environment) {
            Ok(c) => {
                for warning in sluice_config::warnings(&c) {
                    eprintln!("warning: {warning}");
                }
                let admin = c
                    .admin
                    .as_ref()
                    .map_or(String::new(), |a| format!(", admin on {}", a.bind));
                let log = match c.access_log.as_ref().map(|l| &l.target) {
                    Some(sluice_config::LogTarget::Stdout) => ", access log to stdout".into(),
                    Some(sluice_config::LogTarget::File(f)) => {
                        format!(", access log {}", f.display())
                    }
                    None => String::new(),
                };
                let names: usize = c.upstreams.iter().map(|u| u.discover.len()).sum();
                let dns = match names {
                    0 => String::new(),
                    1 => ", 1 server name followed in DNS from the start".to_string(),
                    n => format!(", {n} server names followed in DNS from the start"),
                };
                println!(
                    "{}: ok ({}, {}, {}{admin}{log}{dns})",
                    path.display(),
                    counted(c.listeners.len(), "listener"),
                    counted(c.routes.len(), "route"),
                    counted(c.upstreams.len(), "upstream")
                )
            }
            Err(errors) => {
                failed = true;
                eprintln!("{errors}");
            }
        }
    }
    Ok(if failed {
        ExitCode::from(BAD_CONFIG)
    } else {
        ExitCode::SUCCESS
    })
}

/// The config with its server names resolved, once what it names on disk, its server
/// names, its certificates and its htpasswd files are all good: the problems of all
/// at once, not a round for each.
fn environment(
    config: sluice_config::Config,
) -> Result<sluice_config::Config, sluice_config::Errors> {
    let disk = sluice_config::on_disk(&config);
    let certs = certificates(&config);
    let users = sluice_proxy::guard::check(&config);
    match (sluice_discovery::names::names(config), disk, certs, users) {
        (Ok(c), Ok(()), Ok(()), Ok(())) => Ok(c),
        (names, disk, certs, users) => {
            let errors = names.err().into_iter().chain(disk.err()).chain(certs.err());
            let errors = errors.chain(users.err());
            let mut errors: Vec<_> = errors.flat_map(|e| e.0).collect();
            errors.sort_by(|a, b| (&a.file, a.line, a.col).cmp(&(&b.file, b.line, b.col)));
            Err(sluice_config::Errors(errors))
        }
    }
}

/// Reads every certificate `config` names (an error for each bad one: unreadable,
/// not PEM, key not matching, expired), warning on stderr of those that expire within
/// two weeks.
fn certificates(config: &sluice_config::Config) -> Result<(), sluice_config::Errors> {
    const SOON: i64 = 14 * 86_400;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    for (file, not_after) in sluice_proxy::tls::check(config)? {
        if not_after - now < SOON {
            let when = sluice_proxy::tls::certs::date(not_after);
            eprintln!("warning: {file}: the certificate expires on {when}; renew it");
        }
    }
    Ok(())
}

pub fn hash_report(keys: usize) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let text = format!(
        "# sluice hash-report\n\n{}\n{}",
        sluice_simulated::hash_report::report(keys.max(1000)),
        sluice_simulated::balance_sim::report()
    );
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}

/// The simulated tier of `sluice backend`'s flags.
pub fn simulated(cpu: &str, threads: usize, queue: usize) -> anyhow::Result<backend::Simulated> {
    let cpu = sluice_config::parse_duration(cpu)
        .ok_or_else(|| anyhow!("--cpu {cpu}: give a number and a unit, e.g. 2ms"))?;
    Ok(backend::Simulated {
        cpu,
        threads,
        queue,
        ..backend::Simulated::default()
    })
}

/// `sim` with the database of `sluice backend`'s --db flags (none without --db, the
/// others then unused).
pub fn database(
    sim: backend::Simulated,
    db: Option<SocketAddr>,
    pool: usize,
    queries: u32,
    timeout: &str,
) -> anyhow::Result<backend::Simulated> {
    let timeout = sluice_config::parse_duration(timeout)
        .ok_or_else(|| anyhow!("--db-timeout {timeout}: a duration, e.g. 5s or 250ms"))?;
    if db.is_some() && pool == 0 {
        // A pool of no connections could only time out every request.
        return Err(anyhow!(
            "--db-pool 0: the pool to --db needs at least one connection"
        ));
    }
    if db.is_some() && queries == 0 {
        return Err(anyhow!(
            "--db-queries 0: give at least 1 query per request, or leave out --db"
        ));
    }
    Ok(backend::Simulated {
        db,
        db_pool: pool,
        db_queries: queries,
        db_timeout: timeout,
        ..sim
    })
}

/// Runs `sluice backend` on `listen` (and its counters on `stats`, when given).
pub fn backend(
    (listen, stats): (SocketAddr, Option<SocketAddr>),
    name: String,
    delay: &str,
    workers: usize,
    stomp: bool,
    sim: backend::Simulated,
) -> anyhow::Result<ExitCode> {
    let delay = parse_delay(delay)?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if workers > 0 {
        builder.worker_threads(workers);
    }
    let runtime = builder.enable_all().build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        let stats = match stats {
            Some(addr) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding --stats-listen {addr}"))?,
            ),
            None => None,
        };
        let open_files = sluice_accept::OpenFiles::raise().map_or(0, |l| l.soft);
        tracing::info!(listen = %listener.local_addr()?, name, open_files, "backend serving");
        let options = backend::Options { name, delay, stomp };
        tokio::select! {
            _ = backend::serve_with_stats(listener, stats, options, sim) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn parse_delay(text: &str) -> anyhow::Result<Duration> {
    sluice_config::parse_duration(text)
        .ok_or_else(|| anyhow!("--delay {text}: give a number and a unit, e.g. 5ms or 1s"))
}

pub fn demo(listen: SocketAddr) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let mut servers = Vec::new();
    for i in 1..=3 {
        let options = backend::Options {
            name: format!("app-{i}"),
            delay: Duration::ZERO,
            stomp: false,
        };
        servers.push(runtime.block_on(backend::spawn("127.0.0.1:0".parse()?, options))?);
    }
    let text = demo_config(listen, &servers);
    let config = sluice_config::parse("demo.toml", &text).map_err(|e| anyhow!("{e}"))?;
    let signals = crate::signals::signals()?;
    let admin_config = config.admin.clone().expect("the demo's config has [admin]");
    let proxy = Proxy::start(config)
        .with_context(|| format!("listening on {listen} (try --listen 127.0.0.1:0)"))?;
    let info = sluice_admin::Info {
        config_file: None,
        reload: None,
    };
    let admin = sluice_admin::start(&admin_config, proxy.view(), info)
        .context("the admin listener (the dashboard)")?;
    let addr = proxy.local_addrs()[0];
    println!("# sluice demo: three backends on loopback, sluice in front of them.\n# The config it runs:\n\n{text}");
    println!(
        "# Try it (each response names the backend that answered):\n  for i in 1 2 3 4 5 6; do curl -s http://{addr}/; done\n\n# Watch it on the dashboard: http://{}/\n# Then load it and watch the dashboard move:\n  sluice bench http://{addr}/ --users 20 -d 30s\n\n# Ctrl-C stops it.",
        admin.addr
    );
    let _ = crate::serve::run_until_stopped(&proxy, signals, None);
    proxy.wait()?;
    drop(admin);
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

fn demo_config(listen: SocketAddr, servers: &[SocketAddr]) -> String {
    let list: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    format!(
        "[[listener]]\nbind = \"{listen}\"\n\n[[route]]\npath = \"/\"\nupstream = \"app\"\n\n[upstream.app]\nbalance = \"round_robin\"\nservers = [{}]\nkeepalive = 128\n\n# The dashboard, /metrics and the admin API (any free loopback port).\n[admin]\nbind = \"127.0.0.1:0\"\n",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays() {
        assert_eq!(parse_delay("5ms").unwrap(), Duration::from_millis(5));
        assert_eq!(parse_delay("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_delay("5").is_err());
        assert!(parse_delay("fast").is_err());
    }
}
