//! The machine's CPU over a step, split into the tiers' processes on it, the load
//! generator (this process) and everything else; and tiers that share the machine
//! without budgets judged together against it: two JVMs at 45% of the machine each are
//! one app tier at 90%, not two tiers with room to spare.

use super::thresholds::{CPU_SATURATED, OTHER_PROCESSES_PCT};
use super::{pct, round2, Delta, Kind, Resource};
use crate::sample::Reading;
use serde::Serialize;

/// Cores of the machine busy over a step, and who used them.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MachineCpu {
    pub cores: f64,
    pub busy: f64,
    /// The tiers' processes on this machine.
    pub tiers: f64,
    pub generator: f64,
    /// Everything else: what "other processes" means.
    pub other: f64,
}

impl MachineCpu {
    /// `busy` machine CPU seconds over `seconds`, of which the tiers' processes
    /// (`deltas`) and the generator used their part.
    pub(super) fn split(busy: f64, generator: f64, seconds: f64, deltas: &[Delta]) -> MachineCpu {
        let cores = crate::budget::machine_budget().cores;
        let local = deltas.iter().filter(|d| d.info.local);
        let tiers = local.map(|d| d.b.cpu_s - d.a.cpu_s).sum::<f64>() / seconds;
        let (busy, generator) = (busy / seconds, generator / seconds);
        MachineCpu {
            cores,
            busy: round2(busy),
            tiers: round2(tiers.max(0.0)),
            generator: round2(generator),
            other: round2((busy - tiers - generator).max(0.0)),
        }
    }

    /// Whether processes other than the tiers and the generator used a share of the
    /// machine worth blaming ([`OTHER_PROCESSES_PCT`]).
    pub fn others_matter(&self) -> bool {
        self.other >= self.cores * OTHER_PROCESSES_PCT / 100.0
    }

    pub fn describe(&self) -> String {
        format!(
            "the machine's CPU: {:.2} of {} cores busy: the tiers {:.2}, the load generator {:.2}, other processes {:.2}",
            self.busy, self.cores, self.tiers, self.generator, self.other
        )
    }
}

/// The machine's CPU between readings `first` and `last`, `seconds` apart; `None` where
/// the kernel does not say.
pub(super) fn split(
    first: &Reading,
    last: &Reading,
    seconds: f64,
    deltas: &[Delta],
) -> Option<MachineCpu> {
    let busy = last.machine_busy_s? - first.machine_busy_s?;
    let generator = last.generator_cpu_s - first.generator_cpu_s;
    Some(MachineCpu::split(busy, generator, seconds, deltas))
}

/// The machine's CPU pressure (PSI some) between readings `first` and `last`, percent
/// of the `seconds` between them; `None` where the kernel does not say.
pub(super) fn pressure(first: &Reading, last: &Reading, seconds: f64) -> Option<f64> {
    let (a, b) = (first.pressure_us?, last.pressure_us?);
    Some(pct(b.saturating_sub(a) as f64 / 1e6, seconds))
}

/// The resources of tiers sharing the machine without budgets: each such tier's
/// processes together, and the machine itself when it is full.
pub(super) fn shared(deltas: &[Delta], m: Option<&MachineCpu>) -> Vec<Resource> {
    let mut out = shared_tiers(deltas);
    out.extend(m.and_then(|m| shared_machine(deltas, m)));
    out
}

/// A process nobody limited: its budget is the machine's cores.
fn unbudgeted(d: &Delta) -> bool {
    d.info.local && d.info.budget.starts_with("the machine's")
}

/// Each tier with several processes on this machine and no budget, judged as one: their
/// CPU together against the machine's cores.
fn shared_tiers(deltas: &[Delta]) -> Vec<Resource> {
    let mut names: Vec<&str> = deltas
        .iter()
        .filter(|d| unbudgeted(d))
        .map(|d| d.info.tier.as_str())
        .collect();
    names.dedup();
    names
        .into_iter()
        .filter_map(|tier| {
            let ds: Vec<&Delta> = deltas
                .iter()
                .filter(|d| unbudgeted(d) && d.info.tier == tier)
                .collect();
            (ds.len() > 1).then(|| tier_together(tier, &ds))
        })
        .collect()
}

fn tier_together(tier: &str, ds: &[&Delta]) -> Resource {
    let cores = ds[0].info.budget_cores;
    let used: f64 = ds.iter().map(|d| d.b.cpu_s - d.a.cpu_s).sum::<f64>() / ds[0].seconds;
    let u = used / cores;
    let names: Vec<&str> = ds.iter().map(|d| d.info.name.as_str()).collect();
    Resource {
        tier: tier.into(),
        resource: Kind::Cpu,
        label: format!(
            "the {tier} tier's CPU ({} processes sharing the machine's {cores} cores)",
            ds.len()
        ),
        utilisation: round2(u),
        saturated: u >= CPU_SATURATED,
        evidence: vec![format!(
            "{} used {used:.2} of the machine's {cores} cores together: {:.0}%",
            names.join(", "),
            u * 100.0
        )],
        enlarge: None,
        machine: false,
    }
}

/// " on its one worker thread (one core at most)": beside the share of a tier that is
/// one process saying it runs one worker, which cannot use more of the machine however
/// idle it is.
fn one_worker(ds: &[&Delta]) -> &'static str {
    match ds {
        [d] if super::resources::workers(d) == Some(1) => {
            " on its one worker thread (one core at most)"
        }
        _ => "",
    }
}

/// The machine itself, when tiers without budgets share it and it is full: named for
/// the unbudgeted tier that used the most of it, with the split as evidence.
fn shared_machine(deltas: &[Delta], m: &MachineCpu) -> Option<Resource> {
    let sharing: Vec<&Delta> = deltas.iter().filter(|d| unbudgeted(d)).collect();
    let u = m.busy / m.cores;
    if sharing.len() < 2 || u < CPU_SATURATED {
        return None;
    }
    let mut by_tier: Vec<(&str, f64, Vec<&Delta>)> = Vec::new();
    for d in &sharing {
        let used = (d.b.cpu_s - d.a.cpu_s) / d.seconds;
        match by_tier.iter_mut().find(|(t, _, _)| *t == d.info.tier) {
            Some((_, sum, ds)) => {
                *sum += used;
                ds.push(d);
            }
            None => by_tier.push((&d.info.tier, used, vec![d])),
        }
    }
    let (tier, _, _) = by_tier.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let tier = *tier;
    let mut users: Vec<String> = by_tier
        .iter()
        .map(|(t, used, ds)| format!("{t} {used:.2}{}", one_worker(ds)))
        .collect();
    // The machine was full partly because of others: say so where the verdict is read.
    if m.others_matter() {
        users.push(format!("other processes {:.2}", m.other));
    }
    Some(Resource {
        tier: tier.into(),
        resource: Kind::Cpu,
        label: format!(
            "the machine's CPU ({} cores, shared by tiers without budgets: {})",
            m.cores,
            users.join(", ")
        ),
        utilisation: round2(u),
        saturated: true,
        evidence: vec![m.describe()],
        enlarge: None,
        machine: true,
    })
}
