//! The lab's report as a terminal shows it: a table of steps (a line as each step ends),
//! a legend, then per configuration what was saturated and why, the scale-out gains, the
//! proof and the verdict on a few lines. Within [`NARROW`] columns unless `--wide`, which
//! gives every cell in full. The JSON report (`report.rs`) is the data; this is only its
//! rendering, and decides nothing.

use crate::judge::proof::{control_spread, settled, Proof, Role};
use crate::judge::thresholds::{CONTROL_DRIFT_PCT, PROOF_GAIN_PCT};
use crate::judge::{whole, Kind};
use crate::report::{plural, LabReport, StepResult};
use std::fmt::Write;

mod inside;

/// The widest a line is by default.
pub const NARROW: usize = 120;
/// Evidence lines the verdict shows (the rest are in the JSON and per configuration).
const VERDICT_EVIDENCE: usize = 3;
/// The fixed columns of a step line: servers, users, req/s, mean, p99, err%.
const FIXED: &str = "servers  users    req/s  mean ms   p99 ms  err%";

/// `Narrow`: every line within [`NARROW`] columns, cells short; `Wide`: everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Narrow,
    Wide,
}

/// The table's header, for the tiers of step `s` (every step of a run has the same).
pub fn header(s: &StepResult, w: Width) -> String {
    let mut out = FIXED.to_string();
    for t in &s.judged.tiers {
        let _ = write!(out, " {:>width$}", t.tier, width = tier_width(&t.tier));
    }
    let _ = write!(out, "  {:<22}  saturated", "fullest pool");
    fit(out, w)
}

/// One line per step, as it finishes.
pub fn step_line(s: &StepResult, w: Width) -> String {
    let mut out = format!(
        "{:>7} {:>6} {:>8.1} {:>8.1} {:>8.1} {:>5.1}",
        s.servers, s.users, s.tps, s.mean_ms, s.p99_ms, s.error_pct
    );
    for t in &s.judged.tiers {
        let cell = format!("{:.0}%", t.cpu_util * 100.0);
        let _ = write!(out, " {cell:>width$}", width = tier_width(&t.tier));
    }
    let _ = write!(out, "  {:<22}  {}", fullest_pool(s), saturated(s, w));
    fit(out, w)
}

/// A tier's CPU column: its name's width, at least "100%"'s.
fn tier_width(tier: &str) -> usize {
    tier.len().max(4)
}

/// The most used pool or cap of any tier in step `s`: `app db_pool 95%`.
fn fullest_pool(s: &StepResult) -> String {
    s.judged
        .resources
        .iter()
        // CPU (and a thread's) has its columns; the balancer's queue is a share of
        // requests held, not a pool's fullness, nor a heap's the time GC stopped it;
        // keep-alive is no pool.
        .filter(|r| {
            !matches!(
                r.resource,
                Kind::Cpu | Kind::BusiestThread | Kind::KeepaliveOff | Kind::Queue | Kind::Heap
            )
        })
        .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation))
        .map_or("-".into(), |r| {
            format!("{} {} {:.0}%", r.tier, r.resource, r.utilisation * 100.0)
        })
}

/// What step `s` named: the tier and resource (the sentence, `Wide`).
fn saturated(s: &StepResult, w: Width) -> String {
    let v = &s.judged.verdict;
    let named = match (s.judged.valid, &v.tier, w) {
        (false, _, Width::Narrow) => "invalid (see below)".to_string(),
        (false, _, Width::Wide) => format!(
            "INVALID: {}",
            s.judged.invalid_reason.as_deref().unwrap_or("")
        ),
        (true, Some(t), Width::Narrow) => match &v.resource {
            Some(r) => format!("{t} {r}"),
            None => t.clone(),
        },
        (true, Some(t), Width::Wide) => format!("{t}: {}", v.summary),
        (true, None, Width::Narrow) => "-".into(),
        (true, None, Width::Wide) => v.summary.clone(),
    };
    match &s.delivery {
        Some(d) => format!("{}% lost; {named}", d.lost_pct),
        None => named,
    }
}

/// The whole report as text: the table of steps, then [`summary`].
pub fn table(r: &LabReport, w: Width) -> String {
    let mut out = String::new();
    let first = r.configurations.iter().flat_map(|c| &c.steps).next();
    if let Some(s) = first {
        let _ = writeln!(out, "{}", header(s, w));
    }
    for s in r.configurations.iter().flat_map(|c| &c.steps) {
        let _ = writeln!(out, "{}", step_line(s, w));
    }
    out.push_str(&summary(r, w));
    out
}

/// What follows the steps: the legend, each configuration's verdict, the steps not
/// judged, the scale-out gains, the proof, the warnings and the verdict.
pub fn summary(r: &LabReport, w: Width) -> String {
    let mut out = String::new();
    out.push_str(&legend(r, w));
    out.push_str(&configurations(r, w));
    if !r.scale_out.is_empty() {
        let gains: Vec<String> = r
            .scale_out
            .iter()
            .map(|g| format!("{} -> {}: {:+.0}%", g.from, g.to, whole(g.gain_pct)))
            .collect();
        let _ = writeln!(out, "\nScale-out: {}", gains.join(", "));
    }
    if let Some(p) = &r.proof {
        out.push_str(&proof_text(p, w));
    }
    for warning in &r.warnings {
        out.push('\n');
        out.push_str(&wrap(&format!("warning: {warning}"), "", "  ", w));
    }
    out.push_str(&verdict(r, w));
    out
}

/// What the table's columns mean, under it.
fn legend(r: &LabReport, w: Width) -> String {
    let tiers: Vec<String> = r
        .configurations
        .iter()
        .flat_map(|c| &c.steps)
        .next()
        .map(|s| s.judged.tiers.iter().map(|t| t.tier.clone()).collect())
        .unwrap_or_default();
    let text = format!(
        "{}: each tier's CPU, % of its budget (its busiest process). fullest pool: the most \
         used pool or cap of any tier, % of its size. saturated: the tier and resource \
         named, said in full below (--wide: in the table).",
        tiers.join(", ")
    );
    format!("\n{}", wrap(&text, "Columns: ", "  ", w))
}

/// Per configuration, its verdict and evidence; then the steps that were not judged.
fn configurations(r: &LabReport, w: Width) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nPer configuration (its step with the most users):");
    for c in &r.configurations {
        let variant = c
            .variant
            .as_ref()
            .map_or(String::new(), |v| format!(" ({v})"));
        let head = format!(
            "{} server{}{variant}: peak {:.0} req/s; {}",
            c.servers,
            plural(c.servers),
            c.peak_tps,
            c.verdict.summary
        );
        out.push_str(&wrap(&head, "  ", "      ", w));
        for e in &c.verdict.evidence {
            out.push_str(&wrap(e, "      ", "        ", w));
        }
        out.push_str(&machine_line(c, w));
        out.push_str(&breakdowns(&c.steps, w));
        out.push_str(&inside::tables(&c.steps, w));
        out.push_str(&inside::on_cpu(&c.steps, w));
        if let Some(u) = c.usl.as_ref().filter(|u| !u.summary.is_empty()) {
            out.push_str(&wrap(&u.summary, "      ", "        ", w));
        }
        let findings = c
            .findings
            .iter()
            // A finding the verdict's evidence already gave (keep-alive off beside the
            // balancer's CPU, messages lost) is printed once, there.
            .filter(|f| !c.verdict.evidence.contains(&f.text));
        for f in findings {
            let line = format!("finding: {}", f.text);
            out.push_str(&wrap(&line, "      ", "        ", w));
        }
    }
    let invalid: Vec<&StepResult> = r
        .configurations
        .iter()
        .flat_map(|c| &c.steps)
        .filter(|s| !s.judged.valid)
        .collect();
    if !invalid.is_empty() && w == Width::Narrow {
        let _ = writeln!(out, "\nSteps not judged:");
        for s in invalid {
            let why = s.judged.invalid_reason.as_deref().unwrap_or("");
            let line = format!("{} servers, {} users: {why}", s.servers, s.users);
            out.push_str(&wrap(&line, "  ", "    ", w));
        }
    }
    out
}

/// The machine's CPU over the configuration's last valid step, unless its verdict's
/// evidence already said it (a verdict naming the machine's CPU has it as evidence).
fn machine_line(c: &crate::report::Configuration, w: Width) -> String {
    let judged = c.steps.iter().rev().find(|s| s.judged.valid);
    match judged.and_then(|s| s.judged.machine_cpu.as_ref()) {
        Some(m) if !c.verdict.evidence.contains(&m.describe()) => {
            wrap(&m.describe(), "      ", "        ", w)
        }
        _ => String::new(),
    }
}

/// Steps shown side by side in a breakdown table: the last ones, the most loaded.
const BREAKDOWN_STEPS: usize = 8;
/// A part's name in a breakdown table, indent included.
const PART_WIDTH: usize = 48;

/// Where a request's time went in the valid steps that measured it: one line for one
/// step, else a table whose rows are the parts (inner parts indented) and whose
/// columns are the steps, so what grew with the users shows.
fn breakdowns(steps: &[StepResult], w: Width) -> String {
    let measured: Vec<(usize, &crate::judge::Breakdown)> = steps
        .iter()
        .filter(|s| s.judged.valid)
        .filter_map(|s| Some((s.users, s.judged.breakdown.as_ref()?)))
        .collect();
    match measured[..] {
        [] => String::new(),
        [(_, b)] => wrap(&breakdown_line(b), "      ", "        ", w),
        _ => breakdown_table(&measured[measured.len().saturating_sub(BREAKDOWN_STEPS)..]),
    }
}

/// The table of [`breakdowns`], ms per request.
fn breakdown_table(measured: &[(usize, &crate::judge::Breakdown)]) -> String {
    // Every part any step has, in the most loaded step's order (it has the most parts),
    // then those only lighter steps had.
    let mut rows: Vec<(String, u8)> = Vec::new();
    for (_, b) in measured.iter().rev() {
        for p in &b.parts {
            if !rows
                .iter()
                .any(|(name, d)| *name == p.part && *d == p.depth)
            {
                rows.push((p.part.clone(), p.depth));
            }
        }
    }
    let mut out = String::from("      where a request's time went (ms):\n");
    let mut line = format!("        {:<PART_WIDTH$}", "users");
    for (users, _) in measured {
        let _ = write!(line, " {users:>7}");
    }
    let _ = writeln!(out, "{line}");
    let mut line = format!("        {:<PART_WIDTH$}", "response time");
    for (_, b) in measured {
        let _ = write!(line, " {:>7.1}", b.response_ms);
    }
    let _ = writeln!(out, "{line}");
    for (part, depth) in rows {
        let name = format!("{}{part}", "  ".repeat(usize::from(depth)));
        let mut line = format!("        {:<PART_WIDTH$}", cut(&name, PART_WIDTH));
        for (_, b) in measured {
            let ms = b.parts.iter().find(|p| p.part == part && p.depth == depth);
            let cell = ms.map_or("-".to_string(), |p| format!("{:.1}", p.ms));
            let _ = write!(line, " {cell:>7}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// `text` within `width` characters, `…` where it was cut.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(width - 1).collect();
    cut.push('…');
    cut
}

/// "a request's 96.0 ms: before the app 2.1; in the database (db[pid 9]) 90.2: waiting
/// on a lock 85.0, running 5.2".
fn breakdown_line(b: &crate::judge::Breakdown) -> String {
    let mut groups: Vec<String> = Vec::new();
    let mut inner: Vec<String> = Vec::new();
    for p in &b.parts {
        let text = format!("{} {:.1}", p.part, p.ms);
        if p.depth == 0 {
            close_group(&mut groups, &mut inner);
            groups.push(text);
        } else {
            inner.push(text);
        }
    }
    close_group(&mut groups, &mut inner);
    format!(
        "where a request's {:.1} ms went (ms): {}",
        b.response_ms,
        groups.join("; ")
    )
}

/// Ends the last group with its inner parts after a colon.
fn close_group(groups: &mut [String], inner: &mut Vec<String>) {
    if let Some(last) = groups.last_mut() {
        if !inner.is_empty() {
            last.push_str(": ");
            last.push_str(&inner.join(", "));
        }
    }
    inner.clear();
}

/// The proof's table: each re-run, its change, its throughput and its gain, the noise
/// (how far the unchanged control moved) beside each gain, and what it settles.
fn proof_text(p: &Proof, w: Width) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nProof ({} servers, {} users, {:.0} req/s; gains against the control run):",
        p.servers, p.users, p.tps
    );
    let noise = whole(p.noise_pct.abs());
    for row in &p.rows {
        let beside = if row.role == Role::Control {
            "  (the noise)".to_string()
        } else {
            format!("  (noise {noise:.0}%)")
        };
        let line = format!(
            "  {:<9} {:<40} {:>8.0} req/s {:>+6.0}%{beside}",
            row.role,
            row.change,
            row.tps,
            whole(row.gain_pct)
        );
        let _ = writeln!(out, "{}", fit(line, w));
    }
    out.push_str(&wrap(&proof_conclusion(p), "  ", "    ", w));
    out
}

/// The proof's last line: what it settles, and by which bar.
fn proof_conclusion(p: &Proof) -> String {
    let noise = whole(p.noise_pct.abs());
    if !settled(p.noise_pct) {
        let spread = whole(control_spread(&p.rows));
        return format!(
            "not confirmed: identical runs differed by {spread:.0}% (over {CONTROL_DRIFT_PCT:.0}% twice), so no gain here can be told from noise"
        );
    }
    if p.confirmed && p.runner_up_widens_named() {
        format!("confirmed: the named gain clears the noise ({noise:.0}%) by {PROOF_GAIN_PCT:.0}% or more; one more server widens the balancer's limit too, so its gain is no evidence against it")
    } else if p.confirmed {
        format!("confirmed: the named gain clears the noise ({noise:.0}%) by {PROOF_GAIN_PCT:.0}% or more, the runner-up's does not")
    } else if p.overturned().is_some() {
        format!("overturned: the named gain does not clear the noise ({noise:.0}%) by {PROOF_GAIN_PCT:.0}%, the runner-up's does: the verdict moves to it")
    } else if p.disproved().is_some() {
        format!("disproved: no gain clears the noise ({noise:.0}%) by {PROOF_GAIN_PCT:.0}%: what the steps named is not what limits throughput")
    } else {
        format!("not confirmed: the named gain does not clear the noise ({noise:.0}%) by {PROOF_GAIN_PCT:.0}%, or the runner-up gained as much")
    }
}

/// The verdict on a few lines: what limits throughput and where, the evidence (at most
/// [`VERDICT_EVIDENCE`] lines), what to change, what the proof showed.
fn verdict(r: &LabReport, w: Width) -> String {
    let v = &r.verdict;
    let tier = v.tier.as_deref().unwrap_or("none");
    if v.limit.is_empty() || w == Width::Wide {
        return format!(
            "\n{}",
            wrap(&v.summary, &format!("Verdict ({tier}): "), "  ", w)
        );
    }
    let mut out = format!(
        "\n{}",
        wrap(&v.limit, &format!("Verdict ({tier}): "), "  ", w)
    );
    out.push_str(&wrap(&v.context, "  where:    ", "            ", w));
    let evidence = v.evidence.iter().filter(|e| !e.starts_with("proof: "));
    for (i, e) in evidence.take(VERDICT_EVIDENCE).enumerate() {
        let first = if i == 0 {
            "  evidence: "
        } else {
            "            "
        };
        out.push_str(&wrap(e, first, "              ", w));
    }
    if !v.advice.is_empty() {
        out.push_str(&wrap(&v.advice, "  change:   ", "            ", w));
    }
    if let Some(p) = &r.proof {
        out.push_str(&wrap(&p.summary, "  proof:    ", "            ", w));
    }
    out
}

/// `text` as lines of at most [`NARROW`] columns (`Narrow`), broken between words, the
/// first line after `first`, the rest after `rest`; one line (`Wide`).
pub fn wrap(text: &str, first: &str, rest: &str, w: Width) -> String {
    if w == Width::Wide {
        return format!("{first}{text}\n");
    }
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ') {
        if !empty && line.chars().count() + 1 + word.chars().count() > NARROW {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&fit(line, w));
    out.push('\n');
    out
}

/// `line`, cut to [`NARROW`] columns (`Narrow`) with `…` where it was cut.
pub fn fit(line: String, w: Width) -> String {
    match w {
        Width::Wide => line,
        Width::Narrow => cut(&line, NARROW),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::judge::proof::ProofRow;

    #[test]
    fn the_proof_prints_the_noise_beside_each_gain_and_why_it_settles_nothing() {
        let row = |role: Role, tps: f64, gain_pct: f64| ProofRow {
            tier: "db".into(),
            resource: Some(Kind::Cpu),
            role,
            change: "CPU budget 0.25 -> 0.38 cores".into(),
            tps,
            gain_pct,
            verdict: Default::default(),
            more_servers: false,
        };
        let rows = vec![
            row(Role::Control, 125.0, -22.0),
            row(Role::Control, 128.0, -20.0),
            row(Role::Named, 240.0, 87.5),
        ];
        let text = proof_text(&Proof::of(3, 40, 160.0, rows), Width::Narrow);
        assert!(text.contains("+88%  (noise 20%)"), "{text}");
        assert!(text.contains("-22%  (the noise)"), "{text}");
        assert!(
            text.contains("not confirmed: identical runs differed by 22% (over 10% twice)"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= NARROW), "{text}");
    }

    #[test]
    fn where_the_time_went_is_a_table_of_the_steps_with_what_grew() {
        let part = |part: &str, ms: f64, depth: u8| crate::judge::Part {
            part: part.into(),
            ms,
            depth,
        };
        let mut steps = Vec::new();
        for (users, lock) in [(2, 1.5), (20, 88.0)] {
            let mut s = crate::report::tests::step(users, 200.0);
            let mut parts = vec![part("in the database (db[pid 9])", lock + 2.0, 0)];
            if lock > 10.0 {
                parts.push(part("waiting on a lock", lock, 1));
            }
            parts.push(part("running", 2.0, 1));
            s.judged.breakdown = Some(crate::judge::Breakdown {
                response_ms: lock + 5.0,
                parts,
            });
            steps.push(s);
        }
        let table = breakdowns(&steps, Width::Narrow);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0].trim(), "where a request's time went (ms):");
        fn cells(line: &str) -> Vec<&str> {
            line.split_whitespace().rev().take(2).collect()
        }
        assert_eq!(cells(lines[1]), ["20", "2"]);
        assert_eq!(cells(lines[2]), ["93.0", "6.5"]);
        assert!(lines[3].trim().starts_with("in the database"), "{table}");
        // A part one step did not have shows as a dash, under its own part, indented.
        assert!(lines[4].contains("  waiting on a lock"), "{table}");
        assert_eq!(cells(lines[4]), ["88.0", "-"]);
        assert!(
            table.lines().all(|l| l.chars().count() <= NARROW),
            "{table}"
        );
        // One step: one line.
        let one = breakdowns(&steps[1..], Width::Narrow);
        assert!(
            one.trim_start()
                .starts_with("where a request's 93.0 ms went"),
            "{one}"
        );
    }

    #[test]
    fn the_machines_cpu_is_printed_once_when_it_is_the_verdicts_evidence() {
        let m = crate::judge::MachineCpu {
            cores: 2.0,
            busy: 1.99,
            tiers: 1.05,
            generator: 0.29,
            other: 0.65,
        };
        // (the verdict's evidence has the machine's line, times it is printed)
        for (in_evidence, times) in [(true, 1), (false, 1)] {
            let mut s = crate::report::tests::step(40, 34_595.0);
            s.judged.machine_cpu = Some(m.clone());
            let mut c = crate::report::Configuration::of(2, None, vec![s]);
            c.verdict.evidence = if in_evidence {
                vec![m.describe()]
            } else {
                vec!["lb used 0.58 of its 2 cores".into()]
            };
            let mut r = crate::report::LabReport::new_empty(false);
            r.configurations = vec![c];
            let text = configurations(&r, Width::Narrow);
            assert_eq!(
                text.matches("the machine's CPU: 1.99").count(),
                times,
                "{text}"
            );
        }
    }

    #[test]
    fn wrapped_lines_keep_within_the_width_and_every_word() {
        let text = "word ".repeat(60) + &"x".repeat(150);
        let wrapped = wrap(&text, "  evidence: ", "            ", Width::Narrow);
        for line in wrapped.lines() {
            assert!(line.chars().count() <= NARROW, "{line}");
        }
        assert!(wrapped.starts_with("  evidence: word word"));
        assert_eq!(wrapped.matches("word").count(), 60);
        assert!(wrapped.trim_end().ends_with('…'), "a word too long is cut");
        let wide = wrap(&text, "> ", "  ", Width::Wide);
        assert_eq!(wide.lines().count(), 1);
    }
}
