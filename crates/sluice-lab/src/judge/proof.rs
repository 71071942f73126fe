//! The proof: which resources it enlarges (the one a step named, and the runner-up),
//! each re-run's row, and its bar: whether enlarging the named resource, and not the
//! runner-up, moved throughput enough, above the noise of identical runs, to confirm a
//! verdict. `run.rs` runs the re-runs; this decides what they are and what they prove.

use super::thresholds::{CONTROL_DRIFT_PCT, PROOF_GAIN_PCT, PROOF_RUNNER_UP_PCT};
use super::{whole, Kind, Resource, Verdict};
use serde::{Serialize, Serializer};
use std::fmt::{self, Write};

/// What a re-run of the proof is for. The JSON's `role`: `control`, `named`,
/// `runner-up`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The step again, unchanged: the noise the others are read against.
    Control,
    /// The step with the resource its verdict named enlarged.
    Named,
    /// The step with the runner-up enlarged instead.
    RunnerUp,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Control => "control",
            Role::Named => "named",
            Role::RunnerUp => "runner-up",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The counterfactual: the plateau step again with one resource enlarged.
#[derive(Debug, Clone, Serialize)]
pub struct Proof {
    pub servers: usize,
    pub users: usize,
    pub tps: f64,
    pub rows: Vec<ProofRow>,
    /// How far the control run (the step again, unchanged; the last, when it had to be
    /// repeated) moved from the step, percent: the noise the gains are read against.
    pub noise_pct: f64,
    /// Against the control run, the named resource's enlargement raised throughput
    /// enough above the noise and the runner-up's did not ([`confirms`]).
    pub confirmed: bool,
    pub summary: String,
}

/// One re-run of the proof.
#[derive(Debug, Clone, Serialize)]
pub struct ProofRow {
    /// The enlarged resource's tier; empty for the control.
    pub tier: String,
    /// The enlarged resource's kind; `""` in the JSON for the control.
    #[serde(serialize_with = "kind_or_empty")]
    pub resource: Option<Kind>,
    pub role: Role,
    pub change: String,
    pub tps: f64,
    /// Against the control run (the control's own: against the original step).
    pub gain_pct: f64,
    /// What the re-run named.
    pub verdict: Verdict,
    /// The change put one more server in service (rather than enlarging the resource
    /// itself): a gain says the tier's servers were full, whichever of their resources
    /// the row names.
    #[serde(skip)]
    pub more_servers: bool,
}

/// The control row's `"resource": ""`, as the JSON has always had it.
fn kind_or_empty<S: Serializer>(kind: &Option<Kind>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.map_or("", Kind::name))
}

/// A re-run as the proof reads it: its throughput and what it named.
#[derive(Debug, Clone, Copy)]
pub struct Rerun<'a> {
    pub tps: f64,
    pub verdict: &'a Verdict,
}

/// The resources the proof enlarges, in turn, for a step that named `named`: the named
/// resource itself, and the runner-up (the most used of another kind or tier that can
/// be enlarged). `None`: the verdict named no resource of the step (an invalid step, a
/// plateau, rooms split), and there is nothing to prove.
pub fn candidates<'r>(
    resources: &'r [Resource],
    named: &Verdict,
) -> Option<(&'r Resource, Option<&'r Resource>)> {
    let is_named =
        |r: &Resource| Some(&r.tier) == named.tier.as_ref() && Some(r.resource) == named.resource;
    let resource = resources.iter().find(|r| is_named(r))?;
    Some((resource, runner_up(resources, named)))
}

/// The runner-up to `named`: the most used resource of another kind or tier.
pub fn runner_up<'r>(resources: &'r [Resource], named: &Verdict) -> Option<&'r Resource> {
    resources
        .iter()
        .filter(|r| Some(&r.tier) != named.tier.as_ref() || Some(r.resource) != named.resource)
        .filter(|r| r.enlarge.is_some())
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))
}

/// Percent `tps` gained over `before`, to a tenth.
fn gain_pct(tps: f64, before: f64) -> f64 {
    let pct = (tps / before.max(1e-9) - 1.0) * 100.0;
    (pct * 10.0).round() / 10.0
}

impl ProofRow {
    /// The control run: nothing changed; its gain is against the original step's
    /// `original` throughput. A control that moved too far is run once more (`repeat`).
    pub fn control(original: f64, again: Rerun, repeat: bool) -> ProofRow {
        ProofRow {
            tier: String::new(),
            resource: None,
            role: Role::Control,
            change: if repeat {
                "none: the same step, once more"
            } else {
                "none: the same step again"
            }
            .into(),
            tps: again.tps,
            gain_pct: gain_pct(again.tps, original),
            verdict: again.verdict.clone(),
            more_servers: false,
        }
    }

    /// A run with `r` enlarged, as the `role` says; its gain is against the control
    /// run's `before`.
    pub fn of(r: &Resource, role: Role, before: f64, again: Rerun) -> ProofRow {
        ProofRow {
            tier: r.tier.clone(),
            resource: Some(r.resource),
            role,
            change: r.enlarge.clone().unwrap_or_default(),
            tps: again.tps,
            gain_pct: gain_pct(again.tps, before),
            verdict: again.verdict.clone(),
            more_servers: false,
        }
    }
}

/// How far apart identical runs were: the largest drift of a control from its step.
pub fn control_spread(rows: &[ProofRow]) -> f64 {
    rows.iter()
        .filter(|r| r.role == Role::Control)
        .map(|r| r.gain_pct.abs())
        .fold(0.0, f64::max)
}

impl Proof {
    /// The proof of its `rows`, re-runs of the step of `servers` and `users` that gave
    /// `tps`: its noise (the last control's drift), whether it confirms, in a sentence.
    pub fn of(servers: usize, users: usize, tps: f64, rows: Vec<ProofRow>) -> Proof {
        let named = rows.iter().find(|r| r.role == Role::Named);
        let runner = rows.iter().find(|r| r.role == Role::RunnerUp);
        let noise = rows
            .iter()
            .rfind(|r| r.role == Role::Control)
            .map_or(0.0, |c| c.gain_pct);
        // A runner-up that widened the named resource too is no evidence against it.
        let against = runner.filter(|r| !widens(named, r)).map(|r| r.gain_pct);
        let confirmed = named.is_some_and(|n| confirms(n.gain_pct, against, noise));
        let summary = summary(named, runner, noise, &rows, confirmed);
        let mut proof = Proof {
            servers,
            users,
            tps,
            rows,
            noise_pct: noise,
            confirmed,
            summary,
        };
        // Over a quiet control, "not confirmed" says more: which way the proof went.
        let against = match (proof.overturned(), proof.disproved()) {
            (Some(_), _) => "overturned: the runner-up moved throughput, the named did not",
            (None, Some(_)) => "disproved: enlarging the named moved nothing",
            (None, None) => return proof,
        };
        if let Some(start) = proof.summary.strip_suffix(": not confirmed") {
            proof.summary = format!("{start}: {against}");
        }
        proof
    }
}

/// Whether the runner-up's change widened the named resource as well: one more server
/// brings its own `max_conns` to the balancer's limit on its servers.
fn widens(named: Option<&ProofRow>, runner: &ProofRow) -> bool {
    runner.more_servers && named.is_some_and(|n| n.resource == Some(Kind::Queue))
}

impl Proof {
    /// Whether the runner-up's change widened the named resource as well (its gain does
    /// not count against the verdict).
    pub fn runner_up_widens_named(&self) -> bool {
        let named = self.rows.iter().find(|r| r.role == Role::Named);
        let runner = self.rows.iter().find(|r| r.role == Role::RunnerUp);
        runner.is_some_and(|r| widens(named, r))
    }

    /// The runner-up's row when the proof contradicts the verdict: over a quiet control,
    /// enlarging the named resource moved throughput less than the bar and enlarging the
    /// runner-up moved it past the bar (a limit set at the knee of what is behind it,
    /// named where the thing behind it is the limit).
    pub fn overturned(&self) -> Option<&ProofRow> {
        let named = self.rows.iter().find(|r| r.role == Role::Named)?;
        let runner = self.rows.iter().find(|r| r.role == Role::RunnerUp)?;
        (settled(self.noise_pct) && !self.moved(named) && self.moved(runner)).then_some(runner)
    }

    /// The named resource's row when, over a quiet control, enlarging it moved nothing
    /// and nothing else the proof changed moved throughput either: the verdict is wrong,
    /// and what is full is something the lab could not change (a limit at the knee of
    /// servers whose own limit it cannot enlarge).
    pub fn disproved(&self) -> Option<&ProofRow> {
        let named = self.rows.iter().find(|r| r.role == Role::Named)?;
        let runner = self.rows.iter().find(|r| r.role == Role::RunnerUp);
        let quiet = settled(self.noise_pct) && !self.moved(named);
        (quiet && !runner.is_some_and(|r| self.moved(r))).then_some(named)
    }

    /// Whether `row`'s change moved throughput past the bar, above the noise.
    fn moved(&self, row: &ProofRow) -> bool {
        row.gain_pct >= PROOF_GAIN_PCT + self.noise_pct.abs()
    }
}

/// "CPU budget 0.25 -> 0.38 cores (db): +52% TPS; runner-up, db_pool 20 -> 30 (app): -1%
/// TPS (noise 1%): confirmed".
fn summary(
    named: Option<&ProofRow>,
    runner: Option<&ProofRow>,
    noise: f64,
    rows: &[ProofRow],
    confirmed: bool,
) -> String {
    let mut summary = match named {
        Some(n) => format!("{} ({}): {:+.0}% TPS", n.change, n.tier, whole(n.gain_pct)),
        None => "the named resource cannot be enlarged here".into(),
    };
    if let Some(r) = runner {
        let _ = write!(
            summary,
            "; runner-up, {} ({}): {:+.0}% TPS",
            r.change,
            r.tier,
            whole(r.gain_pct)
        );
    }
    let _ = write!(summary, " (noise {:.0}%)", whole(noise.abs()));
    if !settled(noise) {
        let spread = control_spread(rows);
        let _ = write!(
            summary,
            ": not confirmed: identical runs differed by {:.0}%",
            whole(spread)
        );
    } else {
        summary.push_str(if confirmed {
            ": confirmed"
        } else {
            ": not confirmed"
        });
    }
    summary
}

/// Whether the proof's gains confirm the verdict, `noise_pct` being how far the control
/// run (the step again, unchanged) moved: the named resource, enlarged, gains
/// [`PROOF_GAIN_PCT`] more than the noise; the runner-up, enlarged, stays under
/// [`PROOF_RUNNER_UP_PCT`], under the noise, or under a third of the named one's gain
/// (on a shared, noisy machine a runner-up may move by a few percent either way).
pub fn confirms(named_gain_pct: f64, runner_up_gain_pct: Option<f64>, noise_pct: f64) -> bool {
    let noise = noise_pct.abs();
    let runner_up_bar = (named_gain_pct / 3.0).max(PROOF_RUNNER_UP_PCT).max(noise);
    settled(noise)
        && named_gain_pct >= PROOF_GAIN_PCT + noise
        && runner_up_gain_pct.is_none_or(|r| r < runner_up_bar)
}

/// Whether a control that moved `drift_pct` from its step is quiet enough to measure
/// gains against ([`CONTROL_DRIFT_PCT`]).
pub fn settled(drift_pct: f64) -> bool {
    drift_pct.abs() <= CONTROL_DRIFT_PCT
}

#[cfg(test)]
mod tests {
    use super::{Proof, ProofRow, Rerun, Role};
    use crate::judge::{Kind, Resource, Verdict};

    fn row(role: Role, change: &str, tps: f64, gain_pct: f64) -> ProofRow {
        ProofRow {
            tier: "db".into(),
            resource: Some(Kind::Cpu),
            role,
            change: change.into(),
            tps,
            gain_pct,
            verdict: Verdict::default(),
            more_servers: false,
        }
    }

    #[test]
    fn a_proof_whose_control_drifts_twice_is_not_confirmed_and_says_by_how_much() {
        // The step gave 160 req/s; its identical re-runs 125 (-22%) and 128 (-20%).
        let rows = vec![
            row(Role::Control, "none: the same step again", 125.0, -22.0),
            row(
                Role::Control,
                "none: the same step, once more",
                128.0,
                -20.0,
            ),
            row(Role::Named, "CPU budget 0.25 -> 0.38 cores", 240.0, 87.5),
            row(Role::RunnerUp, "db_pool 20 -> 30", 127.0, -0.8),
        ];
        let p = Proof::of(3, 40, 160.0, rows);
        assert!(!p.confirmed);
        assert!(
            p.summary
                .ends_with("not confirmed: identical runs differed by 22%"),
            "{}",
            p.summary
        );
        // The same gains over a quiet control are confirmed.
        let rows = vec![
            row(Role::Control, "none: the same step again", 158.0, -1.2),
            row(Role::Named, "CPU budget 0.25 -> 0.38 cores", 240.0, 51.9),
            row(Role::RunnerUp, "db_pool 20 -> 30", 157.0, -0.6),
        ];
        let p = Proof::of(3, 40, 160.0, rows);
        assert!(
            p.confirmed && p.summary.ends_with("(noise 1%): confirmed"),
            "{}",
            p.summary
        );
    }

    #[test]
    fn a_named_resource_that_moved_nothing_while_the_runner_up_did_is_overturned() {
        // sluice's max_conns at the app's own capacity: raised, nothing moved; the app's
        // CPU, enlarged, gave 40%.
        let rows = vec![
            row(Role::Control, "none: the same step again", 101.0, 1.0),
            row(Role::Named, "connections 8 -> 12", 102.0, 1.0),
            row(Role::RunnerUp, "CPU quota 0.40 -> 0.60 cores", 141.0, 40.0),
        ];
        let p = Proof::of(2, 16, 100.0, rows.clone());
        assert!(!p.confirmed);
        assert_eq!(
            p.overturned().unwrap().change,
            "CPU quota 0.40 -> 0.60 cores"
        );
        // Both moved: not overturned (nor confirmed: the runner-up moved too).
        let mut both = rows.clone();
        both[1].gain_pct = 30.0;
        assert!(Proof::of(2, 16, 100.0, both).overturned().is_none());
        // A noisy control proves nothing either way.
        let mut noisy = rows.clone();
        noisy[0].gain_pct = 25.0;
        assert!(Proof::of(2, 16, 100.0, noisy.clone())
            .overturned()
            .is_none());
        assert!(Proof::of(2, 16, 100.0, noisy).disproved().is_none());
        // Nothing the lab could change moved anything: disproved, not overturned.
        let mut stuck = rows;
        stuck[2].gain_pct = 2.0;
        let p = Proof::of(2, 16, 100.0, stuck.clone());
        assert!(p.overturned().is_none());
        assert_eq!(p.disproved().unwrap().change, "connections 8 -> 12");
        stuck.remove(2);
        assert!(Proof::of(2, 16, 100.0, stuck).disproved().is_some());
    }

    #[test]
    fn one_more_server_beside_a_named_balancer_limit_does_not_count_against_it() {
        // max_conns below what the servers can do: raised, +49%; one more server brings
        // its own max_conns, +50%. The limit binds: confirmed.
        let mut rows = vec![
            row(Role::Control, "none: the same step again", 188.0, 0.5),
            row(Role::Named, "max_conns 2 -> 3", 280.0, 49.0),
            row(Role::RunnerUp, "servers 2 -> 3", 282.0, 50.0),
        ];
        rows[1].resource = Some(Kind::Queue);
        rows[2].more_servers = true;
        let p = Proof::of(2, 32, 187.0, rows.clone());
        assert!(p.confirmed, "{}", p.summary);
        // The runner-up's quota instead of a server: it moved as much, not confirmed.
        rows[2].more_servers = false;
        rows[2].change = "CPU quota 0.40 -> 0.60 cores".into();
        let p = Proof::of(2, 32, 187.0, rows);
        assert!(!p.confirmed && !p.runner_up_widens_named());
    }

    /// The rows as the JSON has always had them: the control's tier and resource
    /// empty, the roles `control`, `named`, `runner-up` (`assets/lab.js` reads them).
    #[test]
    fn a_proofs_rows_are_written_as_the_report_always_wrote_them() {
        let verdict = Verdict::default();
        let again = Rerun {
            tps: 110.0,
            verdict: &verdict,
        };
        let pool = Resource {
            tier: "app".into(),
            resource: Kind::DbPool,
            label: "the database pool (20 connections per app server)".into(),
            utilisation: 0.9,
            saturated: false,
            evidence: Vec::new(),
            enlarge: Some("db_pool 20 -> 30".into()),
            machine: false,
        };
        let json = |r: &ProofRow| {
            let v = serde_json::to_value(r).unwrap();
            (v["tier"].clone(), v["resource"].clone(), v["role"].clone())
        };
        let control = ProofRow::control(100.0, again, false);
        assert_eq!(json(&control), ("".into(), "".into(), "control".into()));
        assert_eq!(control.gain_pct, 10.0);
        let runner = ProofRow::of(&pool, Role::RunnerUp, 100.0, again);
        assert_eq!(
            json(&runner),
            ("app".into(), "db_pool".into(), "runner-up".into())
        );
        let named = ProofRow::of(&pool, Role::Named, 100.0, again);
        assert_eq!(json(&named).2, "named");
        assert_eq!(format!("{:<9}|", Role::Named), "named    |");
    }
}
