//! The scale-out experiment on the user's own servers: the balancer's upstream is resized
//! through its API, a sluice's admin API or HAProxy's runtime API, or, with any other
//! balancer, by the user's own command (`--enlarge app.servers='... {n}'`, with the
//! `--restore` command that puts the deployment back). For each
//! configuration, the servers beyond the count it measures are drained (no new requests;
//! those in flight finish) and the others undrained, then put back as they were when the
//! run ends (normally, on an error, on Ctrl-C: [`Drop`] restores).
//!
//! A sluice's drains are leases the lab renews while it runs, so a lab that is killed
//! leaves nothing behind: it stops renewing and the balancer ends the drains by itself.
//! HAProxy has no leases: a lab killed with `kill -9` leaves its drains, which is why the
//! commands that undo them are given before the run ([`Resize::by_hand`]).
//!
//! Through a sluice, the proof may also try a larger `max_conns` on the servers in
//! service ([`Resize::try_limits`]), a lease renewed and ended as drains are.
//!
//! Only servers in service at the start are used; a server an operator drained is never
//! touched. A change by anyone else stops the run: the lab keeps a [`Mark`] of the
//! upstream as its own changes left it and compares it on every renewal tick.

mod haproxy;
mod sluice;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the leases are renewed and the upstream checked: a third of a sluice
/// lease, so that two renewals may fail (a busy balancer) before one runs out.
const RENEW: Duration = Duration::from_millis(3_000);

/// Why the upstream cannot be resized, in words to act on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResizeError {
    #[error("the admin API at {admin}: {why}")]
    Admin { admin: String, why: String },
    #[error("HAProxy's runtime API at {socket}: {why}")]
    Runtime { socket: String, why: String },
    #[error("{0}")]
    Upstream(String),
    #[error("the upstream {upstream} was changed by someone else during the run ({why}); the run stops: put it back as you want it and run again")]
    Changed { upstream: String, why: String },
    #[error("your command for {key}: {why}")]
    Command { key: String, why: String },
}

/// The balancer whose upstream is resized, and the API it is resized through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Balancer {
    /// A sluice's admin API, `http://HOST:PORT`.
    Sluice { admin: String },
    /// HAProxy's runtime API (`stats socket ... level admin`): a unix socket's path or
    /// `HOST:PORT`.
    Haproxy { socket: String },
    /// Any other balancer: the user's commands, `scale` (its `{n}` the number of servers
    /// wanted) and `restore` (the deployment as it was), for `key` (`app.servers`).
    Command {
        key: String,
        scale: String,
        restore: String,
    },
}

/// What the upstream looks like after the lab's own changes: anything else is someone
/// else's doing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mark {
    /// A sluice upstream's `changes` counter.
    Changes(u64),
    /// A HAProxy backend's servers and their admin states.
    States(BTreeMap<String, u32>),
}

impl Mark {
    /// The mark once this run has changed a sluice server's trial limit.
    fn bumped(&self) -> Mark {
        match self {
            Mark::Changes(n) => Mark::Changes(n + 1),
            states => states.clone(),
        }
    }

    /// The mark once this run has drained (or undrained) `server`.
    fn after(&self, server: &str, drain: bool) -> Mark {
        match self {
            Mark::Changes(n) => Mark::Changes(n + 1),
            Mark::States(states) => Mark::States(haproxy::after(states, server, drain)),
        }
    }

    /// Why `found` is not this mark, in words.
    fn why(&self, found: &Mark) -> String {
        match (self, found) {
            (Mark::Changes(expected), Mark::Changes(found)) => format!(
                "its change count is {found} where the lab's own changes made it {expected}"
            ),
            (Mark::States(expected), Mark::States(found)) => haproxy::differences(expected, found),
            _ => "it answers differently".into(),
        }
    }
}

impl Balancer {
    /// The upstream (by name, or the only one with more than one server), its servers
    /// in service (at least `most`) and its mark now.
    fn open(&self, upstream: Option<&str>, most: usize) -> Result<Opened, ResizeError> {
        match self {
            Balancer::Sluice { admin } => sluice::open(admin, upstream, most),
            Balancer::Haproxy { socket } => {
                let (name, servers, mark) = haproxy::open(socket, upstream, most)?;
                Ok((name, servers, mark, None))
            }
            // The lab cannot see the servers a command gives: numbered, never read.
            Balancer::Command { key, .. } => {
                let servers = (1..=most).map(|i| format!("#{i}")).collect();
                Ok((key.clone(), servers, Mark::States(BTreeMap::new()), None))
            }
        }
    }

    /// Drains (or undrains) `server`; the upstream's mark after.
    fn set(&self, upstream: &str, server: &str, drain: bool) -> Result<Mark, ResizeError> {
        match self {
            Balancer::Sluice { admin } => sluice::call(admin, upstream, server, drain),
            Balancer::Haproxy { socket } => haproxy::set(socket, upstream, server, drain),
            // A command gives a count of servers (see `Resize::set`), never one server.
            Balancer::Command { key, .. } => Err(ResizeError::Command {
                key: key.clone(),
                why: format!("it gives a number of servers, not {server} alone"),
            }),
        }
    }

    /// Renews the drains and trial limits this run holds (a sluice's leases; HAProxy's
    /// drains last until undone) and reads the upstream: the marks seen, which must all
    /// be the run's own.
    fn tick(&self, upstream: &str, held: &Drains) -> Vec<Mark> {
        match self {
            Balancer::Sluice { admin } => {
                let renewed = held.drained.iter();
                let mut marks: Vec<Mark> = renewed
                    .filter_map(|s| sluice::call(admin, upstream, s, true).ok())
                    .collect();
                let limits = held.limits.iter();
                marks.extend(
                    limits.filter_map(|(s, &n)| sluice::limit(admin, upstream, s, Some(n)).ok()),
                );
                marks.extend(sluice::mark(admin, upstream));
                marks
            }
            Balancer::Haproxy { socket } => {
                haproxy::mark(socket, upstream).ok().into_iter().collect()
            }
            // Nothing to renew, nothing the lab can read: no conflict is ever seen.
            Balancer::Command { .. } => Vec::new(),
        }
    }
}

/// An opened upstream: its name, its servers in service, its mark, and how it keeps
/// sessions on their server (a sticky sluice upstream), in words.
type Opened = (String, Vec<String>, Mark, Option<String>);

/// An upstream the lab resizes, and the drains it holds.
pub struct Resize {
    balancer: Balancer,
    upstream: String,
    /// The servers in service at the start, in the API's order: the first `n` serve a
    /// configuration of `n` servers.
    servers: Vec<String>,
    /// How the upstream keeps sessions on their server, when it does (said with each
    /// configuration: a scale-out's new server takes new sessions only).
    sticky: Option<String>,
    shared: Arc<Shared>,
    renewer: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<Drains>,
    done: AtomicBool,
}

struct Drains {
    /// The servers this run drained.
    drained: BTreeSet<String>,
    /// The trial `max_conns` this run holds, by server.
    limits: BTreeMap<String, u32>,
    /// The upstream as this run's last change left it.
    mark: Mark,
    /// The count the user's command last gave (a [`Balancer::Command`]).
    scaled: Option<usize>,
    /// A change by someone else, seen by the renewer.
    conflict: Option<ResizeError>,
}

impl Resize {
    /// The upstream of `balancer`: `upstream` by name, or the only one with more than
    /// one server. It must have at least `most` servers in service and (a sluice) no
    /// drain lease running (another lab's).
    pub fn start(
        balancer: Balancer,
        upstream: Option<&str>,
        most: usize,
    ) -> Result<Resize, ResizeError> {
        let balancer = match balancer {
            Balancer::Sluice { admin } => Balancer::Sluice {
                admin: admin.trim_end_matches('/').to_string(),
            },
            other => other,
        };
        let (name, servers, mark, sticky) = balancer.open(upstream, most)?;
        let shared = Arc::new(Shared {
            state: Mutex::new(Drains {
                drained: BTreeSet::new(),
                limits: BTreeMap::new(),
                mark,
                scaled: None,
                conflict: None,
            }),
            done: AtomicBool::new(false),
        });
        let renewer = {
            let (shared, balancer, name) = (shared.clone(), balancer.clone(), name.clone());
            std::thread::spawn(move || renew(&shared, &balancer, &name))
        };
        Ok(Resize {
            balancer,
            upstream: name,
            servers,
            sticky,
            shared,
            renewer: Some(renewer),
        })
    }

    /// The servers in service at the start, in the order they are kept.
    pub fn servers(&self) -> &[String] {
        &self.servers
    }

    /// "upstream app: A, B in service, C drained (a lease the lab renews)"; "2 servers
    /// (your app.servers command)".
    pub fn in_service(&self, n: usize) -> String {
        let (serving, drained) = self.servers.split_at(n.min(self.servers.len()));
        let drained = match (&self.balancer, drained) {
            (Balancer::Command { key, .. }, _) => {
                return format!("{n} server(s) (your {key} command)")
            }
            (_, []) => String::new(),
            (Balancer::Sluice { .. }, d) => {
                format!(", {} drained (a lease the lab renews)", d.join(", "))
            }
            (Balancer::Haproxy { .. }, d) => {
                format!(", {} drained (until the lab undoes it)", d.join(", "))
            }
        };
        let sticky = self.sticky.as_ref().map(|s| format!("; {s}"));
        format!(
            "upstream {}: {} in service{drained}{}",
            self.upstream,
            serving.join(", "),
            sticky.unwrap_or_default()
        )
    }

    /// The commands that put back the servers a run down to `fewest` servers drains,
    /// should the lab be killed before it can: none for a sluice, whose drains are
    /// leases that end by themselves.
    pub fn by_hand(&self, fewest: usize) -> Vec<String> {
        match &self.balancer {
            Balancer::Sluice { .. } => Vec::new(),
            Balancer::Command { restore, .. } => vec![restore.clone()],
            Balancer::Haproxy { socket } => self.servers[fewest.min(self.servers.len())..]
                .iter()
                .map(|server| haproxy::ready_by_hand(socket, &self.upstream, server))
                .collect(),
        }
    }

    /// Leaves the first `n` servers in service and drains the others (or has the
    /// user's command give `n`).
    pub fn set(&self, n: usize) -> Result<(), ResizeError> {
        let mut drains = self.shared.lock();
        if let Some(e) = drains.conflict.clone() {
            return Err(e);
        }
        if let Balancer::Command { key, scale, .. } = &self.balancer {
            if drains.scaled != Some(n) {
                run(key, &scale.replace("{n}", &n.to_string()))?;
                drains.scaled = Some(n);
            }
            return Ok(());
        }
        for (i, server) in self.servers.iter().enumerate() {
            let drain = i >= n;
            if drain == drains.drained.contains(server) {
                continue;
            }
            let found = self.balancer.set(&self.upstream, server, drain)?;
            if drain {
                drains.drained.insert(server.clone());
            } else {
                drains.drained.remove(server);
            }
            self.note(&mut drains, found, server, drain)?;
        }
        Ok(())
    }

    /// The `max_conns` in the config of the first `n` servers (those with one), when
    /// the balancer is a sluice: what [`Resize::try_limits`] may raise.
    pub fn limits(&self, n: usize) -> Option<Vec<(String, u32)>> {
        let Balancer::Sluice { admin } = &self.balancer else {
            return None;
        };
        let servers = &self.servers[..n.min(self.servers.len())];
        let limits = sluice::limits(admin, &self.upstream, servers).ok()?;
        (!limits.is_empty()).then_some(limits)
    }

    /// Gives each server its trial `max_conns` (a lease renewed while the run lasts).
    pub fn try_limits(&self, limits: &[(String, u32)]) -> Result<(), ResizeError> {
        let Balancer::Sluice { admin } = &self.balancer else {
            return Err(ResizeError::Upstream(
                "only a sluice's limits can be tried".into(),
            ));
        };
        let mut held = self.shared.lock();
        for (server, n) in limits {
            let found = sluice::limit(admin, &self.upstream, server, Some(*n))?;
            held.limits.insert(server.clone(), *n);
            self.noted(&mut held, found)?;
        }
        Ok(())
    }

    /// Ends the trial limits this run holds: the config's `max_conns` again.
    pub fn end_limits(&self) -> Result<(), ResizeError> {
        let Balancer::Sluice { admin } = &self.balancer else {
            return Ok(());
        };
        let mut held = self.shared.lock();
        let mut first_error = None;
        for server in std::mem::take(&mut held.limits).into_keys() {
            // Every limit is ended, whatever happened to the others; a change by someone
            // else is kept as the run's conflict by `noted`.
            match sluice::limit(admin, &self.upstream, &server, None) {
                Ok(found) => {
                    let _ = self.noted(&mut held, found);
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// A change by someone else, seen since the run began.
    pub fn conflict(&self) -> Option<ResizeError> {
        self.shared.lock().conflict.clone()
    }

    /// Undrains every server this run drained, ends its trial limits and stops
    /// renewing: the upstream as it was.
    pub fn restore(&mut self) -> Result<(), ResizeError> {
        self.shared.done.store(true, Ordering::Relaxed);
        if let Some(r) = self.renewer.take() {
            let _ = r.join();
        }
        let mut first_error = self.end_limits().err();
        let mut drains = self.shared.lock();
        if let Balancer::Command { key, restore, .. } = &self.balancer {
            if drains.scaled.take().is_some() {
                if let Err(e) = run(key, restore) {
                    first_error.get_or_insert(e);
                }
            }
        }
        for server in std::mem::take(&mut drains.drained) {
            if let Err(e) = self.balancer.set(&self.upstream, &server, false) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Takes the mark `found` after this run's own change of `server`: anything but
    /// that change is someone else's.
    fn note(
        &self,
        drains: &mut Drains,
        found: Mark,
        server: &str,
        drain: bool,
    ) -> Result<(), ResizeError> {
        let expected = drains.mark.after(server, drain);
        self.expect(drains, expected, found)
    }

    /// Takes the mark `found` after this run changed a trial limit.
    fn noted(&self, drains: &mut Drains, found: Mark) -> Result<(), ResizeError> {
        let expected = drains.mark.bumped();
        self.expect(drains, expected, found)
    }

    /// Keeps `found` as the upstream's mark; a conflict if it is not `expected`.
    fn expect(&self, drains: &mut Drains, expected: Mark, found: Mark) -> Result<(), ResizeError> {
        drains.mark = found.clone();
        if found != expected {
            let e = changed(&self.upstream, &expected, &found);
            drains.conflict = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }
}

impl Drop for Resize {
    fn drop(&mut self) {
        // Whatever ended the run (an error, Ctrl-C): the servers go back in service.
        if !self.shared.done.load(Ordering::Relaxed) {
            let _ = self.restore();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Drains> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs the user's command for `key`.
fn run(key: &str, cmd: &str) -> Result<(), ResizeError> {
    crate::shell::shell(cmd).map_err(|why| ResizeError::Command {
        key: key.into(),
        why,
    })
}

fn changed(upstream: &str, expected: &Mark, found: &Mark) -> ResizeError {
    ResizeError::Changed {
        upstream: upstream.into(),
        why: expected.why(found),
    }
}

/// Renews the drains and checks the upstream every [`RENEW`] until the run is done.
fn renew(shared: &Shared, balancer: &Balancer, upstream: &str) {
    let tick = Duration::from_millis(100);
    let mut waited = Duration::ZERO;
    while !shared.done.load(Ordering::Relaxed) {
        std::thread::sleep(tick);
        waited += tick;
        if waited < RENEW {
            continue;
        }
        waited = Duration::ZERO;
        let mut drains = shared.lock();
        // A renewal changes nothing, so every mark seen must be the run's own.
        for found in balancer.tick(upstream, &drains) {
            if found != drains.mark && drains.conflict.is_none() {
                drains.conflict = Some(changed(upstream, &drains.mark, &found));
            }
        }
    }
}

/// `wanted`, or the only upstream with more than one server: `counts` are each
/// upstream's servers, by name; `what` is what the balancer calls an upstream.
fn choose(
    counts: &BTreeMap<String, usize>,
    wanted: Option<&str>,
    what: &str,
) -> Result<String, ResizeError> {
    let names = || counts.keys().cloned().collect::<Vec<_>>().join(", ");
    if let Some(name) = wanted {
        return match counts.contains_key(name) {
            true => Ok(name.to_string()),
            false => Err(ResizeError::Upstream(format!(
                "--upstream {name}: no such {what} (it has {})",
                names()
            ))),
        };
    }
    let several: Vec<_> = counts.iter().filter(|(_, &n)| n > 1).collect();
    match several.as_slice() {
        [(name, _)] => Ok((*name).clone()),
        [] => Err(ResizeError::Upstream(format!(
            "no {what} has more than one server to scale over ({what}s: {})",
            names()
        ))),
        _ => Err(ResizeError::Upstream(format!(
            "several {what}s have servers to scale over: say which with --upstream ({})",
            names()
        ))),
    }
}

/// Refuses fewer than `most` servers in service, naming them.
fn enough(what: &str, name: &str, ready: &[String], most: usize) -> Result<(), ResizeError> {
    if ready.len() < most {
        return Err(ResizeError::Upstream(format!(
            "{what} {name} has {} server(s) in service ({}); --servers asks for {most}",
            ready.len(),
            ready.join(", ")
        )));
    }
    Ok(())
}
