//! What the lab can change on a deployment it did not start, to prove a verdict: a local
//! process's CPU quota (its cgroup's, as root), one more server in service (a spare of
//! the upstream it resizes, or the user's command), a sluice balancer's own `max_conns`
//! (a trial limit with a lease, through its admin API), and anything else through the
//! user's own commands (`--enlarge app.db_pool='...' --restore app.db_pool='...'`:
//! Kubernetes, Ansible, a curl to an app's admin endpoint; no agent of ours). Each change
//! is undone after its re-run.

use crate::judge::thresholds::ENLARGE;
use crate::judge::{Kind, Resource};
use crate::real::Watched;
use crate::resize::Resize;
use crate::shell::shell;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The user's commands, by what they enlarge: `TIER.KIND` (the JSON's kind names:
/// `db.cpu`, `app.db_pool`) or `TIER.servers`, whose `{n}` is the number of servers.
#[derive(Debug, Clone, Default)]
pub struct Commands {
    pub enlarge: BTreeMap<String, String>,
    pub restore: BTreeMap<String, String>,
}

impl Commands {
    /// `--enlarge KEY=COMMAND` and `--restore KEY=COMMAND`, or what is wrong with one.
    pub fn parse(enlarge: &[String], restore: &[String]) -> Result<Commands, String> {
        let split = |flag: &str, s: &String| {
            let (key, cmd) = s
                .split_once('=')
                .filter(|(k, c)| k.contains('.') && !c.trim().is_empty())
                .ok_or_else(|| {
                    format!("{flag} {s}: write TIER.WHAT='COMMAND', e.g. app.db_pool='...'")
                })?;
            Ok::<_, String>((key.trim().to_string(), cmd.trim().to_string()))
        };
        let mut out = Commands::default();
        for s in enlarge {
            let (k, c) = split("--enlarge", s)?;
            out.enlarge.insert(k, c);
        }
        for s in restore {
            let (k, c) = split("--restore", s)?;
            if !out.enlarge.contains_key(&k) {
                return Err(format!("--restore {k}: no --enlarge {k} to undo"));
            }
            out.restore.insert(k, c);
        }
        Ok(out)
    }
}

/// One change the proof makes, and how it is undone.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Each process's cgroup CPU quota, [`ENLARGE`] times larger.
    Quota {
        quotas: Vec<Quota>,
        cores: (f64, f64),
    },
    /// One more server of the resized upstream in service.
    Server { from: usize },
    /// The `max_conns` of the sluice in front, on each server in service ([`ENLARGE`]
    /// times larger): `(server, max_conns in the config)`.
    Limit { limits: Vec<(String, u32)> },
    /// The user's command, and its undoing; `servers`: for a `TIER.servers` command, the
    /// servers it gives (its `{n}`).
    Command {
        key: String,
        enlarge: String,
        restore: Option<String>,
        servers: Option<usize>,
    },
}

/// A cgroup's CPU quota as it was, to write back.
#[derive(Debug, Clone, PartialEq)]
pub struct Quota {
    dir: PathBuf,
    /// `cpu.cfs_quota_us` (v1) or `cpu.max`'s quota (v2), microseconds a period.
    quota_us: i64,
    v2: bool,
}

impl Change {
    /// The change for `r`, if the lab can make one: the user's command for it first,
    /// then the sluice balancer's limit (for its queue), a CPU quota of local processes,
    /// then one more server.
    pub fn find(
        r: &Resource,
        tiers: &[Watched],
        commands: &Commands,
        resize: Option<&Resize>,
        servers: usize,
    ) -> Option<Change> {
        let key = format!("{}.{}", r.tier, r.resource.name());
        if let Some(cmd) = commands.enlarge.get(&key) {
            return Some(Change::command(&key, cmd, commands, None));
        }
        if r.resource == Kind::Queue {
            if let Some(limits) = resize.and_then(|z| z.limits(servers)) {
                return Some(Change::Limit { limits });
            }
        }
        if r.resource == Kind::Cpu && !r.machine {
            if let Some(q) = quotas(&r.tier, tiers) {
                return Some(q);
            }
        }
        let key = format!("{}.servers", r.tier);
        if let Some(cmd) = commands.enlarge.get(&key) {
            let cmd = cmd.replace("{n}", &(servers + 1).to_string());
            return Some(Change::command(&key, &cmd, commands, Some(servers + 1)));
        }
        let spare = resize.is_some_and(|z| z.servers().len() > servers);
        (r.tier == "app" && spare).then_some(Change::Server { from: servers })
    }

    fn command(key: &str, cmd: &str, commands: &Commands, servers: Option<usize>) -> Change {
        Change::Command {
            key: key.into(),
            enlarge: cmd.into(),
            restore: commands.restore.get(key).cloned(),
            servers,
        }
    }

    /// In the proof's table: "CPU quota 0.40 -> 0.60 cores", "servers 3 -> 4".
    pub fn describe(&self) -> String {
        match self {
            Change::Quota { cores, .. } => {
                format!("CPU quota {:.2} -> {:.2} cores", cores.0, cores.1)
            }
            Change::Server { from } => format!("servers {from} -> {}", from + 1),
            Change::Limit { limits } => {
                let low = limits.iter().map(|l| l.1).min().unwrap_or_default();
                let high = limits.iter().map(|l| l.1).max().unwrap_or_default();
                match low == high {
                    true => format!("max_conns {low} -> {}", enlarged(low)),
                    false => format!("max_conns x{ENLARGE} ({low}..{high})"),
                }
            }
            Change::Command {
                key,
                servers: Some(n),
                ..
            } => format!("servers {} -> {n} (your {key} command)", n - 1),
            Change::Command { key, .. } => format!("{key}: your --enlarge command"),
        }
    }

    /// Whether the change puts one more server in service (a spare, or the user's
    /// `TIER.servers` command) rather than enlarging a resource of the servers.
    pub fn adds_server(&self) -> bool {
        match self {
            Change::Server { .. } => true,
            Change::Command { servers, .. } => servers.is_some(),
            Change::Quota { .. } | Change::Limit { .. } => false,
        }
    }

    /// Makes the change.
    pub fn apply(&self, resize: Option<&Resize>) -> Result<(), String> {
        match self {
            Change::Quota { quotas, .. } => quotas
                .iter()
                .try_for_each(|q| q.write((q.quota_us as f64 * ENLARGE) as i64)),
            Change::Server { from } => set(resize, from + 1),
            Change::Limit { limits } => {
                let larger: Vec<_> = limits
                    .iter()
                    .map(|(s, n)| (s.clone(), enlarged(*n)))
                    .collect();
                let resize = resize.ok_or("no balancer to change")?;
                resize.try_limits(&larger).map_err(|e| e.to_string())
            }
            Change::Command { enlarge, .. } => shell(enlarge),
        }
    }

    /// Undoes it: what was there before [`Change::apply`].
    pub fn undo(&self, resize: Option<&Resize>) -> Result<(), String> {
        match self {
            Change::Quota { quotas, .. } => quotas.iter().try_for_each(|q| q.write(q.quota_us)),
            Change::Server { from } => set(resize, *from),
            Change::Limit { .. } => {
                let resize = resize.ok_or("no balancer to change")?;
                resize.end_limits().map_err(|e| e.to_string())
            }
            Change::Command { restore, key, .. } => match restore {
                Some(cmd) => shell(cmd),
                None => Err(format!(
                    "{key} was enlarged by your command and stays so: give --restore {key}='...' to undo it"
                )),
            },
        }
    }
}

/// A limit of `n`, [`ENLARGE`] times larger: at least one more.
fn enlarged(n: u32) -> u32 {
    ((f64::from(n) * ENLARGE).ceil() as u32).max(n + 1)
}

fn set(resize: Option<&Resize>, n: usize) -> Result<(), String> {
    let resize = resize.ok_or("no upstream to resize")?;
    resize.set(n).map_err(|e| e.to_string())
}

/// The CPU quotas of `tier`'s local processes, when each has one the lab may write.
fn quotas(tier: &str, tiers: &[Watched]) -> Option<Change> {
    let mut quotas: Vec<Quota> = Vec::new();
    let mut cores = 0.0;
    for w in tiers.iter().filter(|w| w.tier == tier) {
        let q = sluice_process::cpu_budget::quota_of(w.pid?)?;
        // Two processes in one cgroup share its quota: enlarged once, counted once.
        if quotas.iter().any(|known| known.dir == q.dir) {
            continue;
        }
        let v2 = !q.dir.join("cpu.cfs_quota_us").exists();
        let quota_us = read_quota(&q.dir, v2)?;
        cores += q.cores;
        quotas.push(Quota {
            dir: q.dir,
            quota_us,
            v2,
        });
    }
    let writable = quotas.iter().all(|q| {
        let file = if q.v2 { "cpu.max" } else { "cpu.cfs_quota_us" };
        std::fs::OpenOptions::new()
            .write(true)
            .open(q.dir.join(file))
            .is_ok()
    });
    (!quotas.is_empty() && writable).then_some(Change::Quota {
        quotas,
        cores: (cores, cores * ENLARGE),
    })
}

fn read_quota(dir: &std::path::Path, v2: bool) -> Option<i64> {
    if v2 {
        let text = std::fs::read_to_string(dir.join("cpu.max")).ok()?;
        return text.split_whitespace().next()?.parse().ok();
    }
    let text = std::fs::read_to_string(dir.join("cpu.cfs_quota_us")).ok()?;
    text.trim().parse().ok().filter(|&q: &i64| q > 0)
}

impl Quota {
    fn write(&self, quota_us: i64) -> Result<(), String> {
        let (file, text) = match self.v2 {
            true => {
                let now = std::fs::read_to_string(self.dir.join("cpu.max")).unwrap_or_default();
                let period = now
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("100000")
                    .to_string();
                ("cpu.max", format!("{quota_us} {period}"))
            }
            false => ("cpu.cfs_quota_us", quota_us.to_string()),
        };
        let path = self.dir.join(file);
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_keyed_by_what_they_enlarge() {
        let c = Commands::parse(
            &["app.servers=kubectl scale deploy/app --replicas={n}".into()],
            &[],
        )
        .unwrap();
        assert_eq!(
            c.enlarge["app.servers"],
            "kubectl scale deploy/app --replicas={n}"
        );
        let e = Commands::parse(&["db_pool=x".into()], &[]).unwrap_err();
        assert!(e.contains("TIER.WHAT"), "{e}");
        let e = Commands::parse(&[], &["app.db_pool=y".into()]).unwrap_err();
        assert!(e.contains("no --enlarge app.db_pool"), "{e}");
    }

    #[test]
    fn a_limit_is_raised_half_again_and_at_least_by_one() {
        assert_eq!((enlarged(1), enlarged(4), enlarged(20)), (2, 6, 30));
        let one = Change::Limit {
            limits: vec![("a:1".into(), 4), ("b:1".into(), 4)],
        };
        assert_eq!(one.describe(), "max_conns 4 -> 6");
        let mixed = Change::Limit {
            limits: vec![("a:1".into(), 4), ("b:1".into(), 8)],
        };
        assert_eq!(mixed.describe(), "max_conns x1.5 (4..8)");
    }

    #[test]
    fn a_command_fails_with_its_words() {
        let e = shell("echo nope >&2; exit 3").unwrap_err();
        assert!(e.contains("nope") && e.contains('3'), "{e}");
        assert!(shell("true").is_ok());
    }
}
