//! The thread group's parts laid out as a scenario: Once Only Controllers' requests as
//! `[[setup]]`; a thread group that loops once around one Loop Controller as setup
//! (before it), loop (its contents) and `[[teardown]]` (after it), JMeter's idiom for
//! "log in, browse N times, log out"; other Loop Controllers as `repeat` or unrolled;
//! Throughput Controllers at the top of the loop as weighted `[[flow]]`s. Then: steps
//! that use a variable nothing defines are dropped, the data file's `per` decided, and
//! timers laid out as think times (JMeter pauses before a sampler, sluice after a step).

use super::checks::Pause;
use super::http::Step;
use super::walk::{Group, Length, Part, Run};
use super::{data, Cx, ImportError};
use std::collections::BTreeSet;

/// The scenario, ready to write.
#[derive(Debug, Clone)]
pub struct Shaped {
    pub users: u64,
    pub ramp_secs: u64,
    pub length: Length,
    pub setup: Vec<Step>,
    /// The loop: one flow (`[[step]]`s), or weighted `[[flow]]`s.
    pub flows: Vec<Flow>,
    pub teardown: Vec<Step>,
}

#[derive(Debug, Clone)]
pub struct Flow {
    pub name: String,
    pub weight: u32,
    pub steps: Vec<Step>,
}

/// A flow's parts, before its steps' thinks are laid out.
struct Parts {
    name: String,
    weight: u32,
    parts: Vec<Part>,
}

/// How many times a Loop Controller of several requests is written out at most.
const UNROLL: u64 = 10;

pub fn shape(cx: &mut Cx, run: Run) -> Result<Shaped, ImportError> {
    let mut length = run.length;
    let (before, looped, after) = split(cx, &run, &mut length);
    let mut setup = inline_once(before);
    let looped = pull_once(cx, looped, &mut setup, false, &mut false);
    let mut setup = flatten(cx, setup, false);
    let mut teardown = flatten(cx, inline_once(after), false);
    let looped = flatten(cx, looped, true);
    let mut flows = flows(cx, looped);
    {
        let mut seqs: Vec<&mut Vec<Part>> = vec![&mut setup, &mut teardown];
        seqs.extend(flows.iter_mut().map(|f| &mut f.parts));
        drop_undefined(cx, &mut seqs);
    }
    decide_per(cx, run.loops_once, &setup, &flows);
    let setup = thinks(cx, setup);
    let teardown = thinks(cx, teardown);
    let flows: Vec<Flow> = flows
        .into_iter()
        .map(|f| Flow {
            name: f.name,
            weight: f.weight,
            steps: thinks(cx, f.parts),
        })
        .collect();
    let mut shaped = Shaped {
        users: run.users,
        ramp_secs: run.ramp_secs,
        length,
        setup,
        flows,
        teardown,
    };
    fill_loop(cx, &mut shaped)?;
    Ok(shaped)
}

/// Setup, loop and teardown: a thread group that loops once around its one Loop
/// Controller loops with it (its count the iterations); any other loops itself.
fn split(cx: &mut Cx, run: &Run, length: &mut Length) -> (Vec<Part>, Vec<Part>, Vec<Part>) {
    let mut parts = run.parts.clone();
    let loops: Vec<usize> = (0..parts.len())
        .filter(|i| matches!(parts[*i], Part::Loop(..)))
        .collect();
    let [i] = loops[..] else {
        return (Vec::new(), parts, Vec::new());
    };
    if !run.loops_once {
        return (Vec::new(), parts, Vec::new());
    }
    let after = parts.split_off(i + 1);
    let Some(Part::Loop(group, count)) = parts.pop() else {
        unreachable!("a Loop Controller at {i}");
    };
    *length = match (run.scheduled, count) {
        (Some(secs), _) => Length::Seconds(secs),
        (None, Some(n)) => Length::Iterations(n.max(1)),
        (None, None) => {
            cx.note(format!(
                "{}: it loops for ever, with no duration: duration = \"60s\" written",
                group.place
            ));
            Length::Seconds(60)
        }
    };
    cx.note(format!("{}: the thread group loops once around it: what comes before it is the [[setup]], what comes after it the [[teardown]], and its contents the loop", group.place));
    (parts, group.parts, after)
}

/// `parts` with their Once Only Controllers' contents in their place.
fn inline_once(parts: Vec<Part>) -> Vec<Part> {
    parts
        .into_iter()
        .flat_map(|part| match part {
            Part::Once(g) => inline_once(g.parts),
            other => vec![other],
        })
        .collect()
}

/// The loop without its Once Only Controllers, whose contents go to `setup`; one that
/// is not at the loop's start (`nested`, or after a step: `seen`) is noted.
fn pull_once(
    cx: &mut Cx,
    parts: Vec<Part>,
    setup: &mut Vec<Part>,
    nested: bool,
    seen: &mut bool,
) -> Vec<Part> {
    let mut out = Vec::new();
    for part in parts {
        match part {
            Part::Once(g) => {
                if nested || *seen {
                    cx.note(format!("{}: not the first thing in the loop: its requests go to the [[setup]], before the loop's", g.place));
                }
                setup.extend(inline_once(g.parts));
            }
            Part::Loop(mut g, n) => {
                g.parts = pull_once(cx, g.parts, setup, true, seen);
                out.push(Part::Loop(g, n));
            }
            Part::Throughput(mut g, pct) => {
                g.parts = pull_once(cx, g.parts, setup, true, seen);
                out.push(Part::Throughput(g, pct));
            }
            Part::Step(_) => {
                *seen = true;
                out.push(part);
            }
            Part::Pause(_) => out.push(part),
        }
    }
    out
}

/// Steps and pauses only (Throughput Controllers too at the loop's `top`): Loop
/// Controllers repeated or unrolled, what cannot be listed as dropped.
fn flatten(cx: &mut Cx, parts: Vec<Part>, top: bool) -> Vec<Part> {
    let mut out = Vec::new();
    for part in parts {
        match part {
            Part::Step(_) | Part::Pause(_) => out.push(part),
            Part::Once(g) => out.extend(flatten(cx, g.parts, false)),
            Part::Throughput(mut g, pct) if top => {
                g.parts = flatten(cx, g.parts, false);
                out.push(Part::Throughput(g, pct));
            }
            Part::Throughput(g, _) => drop_group(cx, &g, "a Throughput Controller inside another controller, or in the [[setup]] or [[teardown]]: sluice weighs [[flow]]s at the top of the loop only"),
            Part::Loop(g, n) => out.extend(unloop(cx, g, n)),
        }
    }
    out
}

/// A Loop Controller: one request as `repeat`, several unrolled (up to [`UNROLL`] times).
fn unloop(cx: &mut Cx, g: Group, count: Option<u64>) -> Vec<Part> {
    let Some(n) = count else {
        drop_group(
            cx,
            &g,
            "it loops for ever inside the thread group's loop: not translated",
        );
        return Vec::new();
    };
    let inner = flatten(cx, g.parts.clone(), false);
    let steps = inner.iter().filter(|p| matches!(p, Part::Step(_))).count();
    match (steps, n) {
        (_, 0) => {
            drop_group(cx, &g, "it runs 0 times");
            Vec::new()
        }
        (0, _) => inner,
        (1, n) => vec![repeated(inner, n)],
        (k, n) if n <= UNROLL => {
            cx.note(format!(
                "{}: unrolled: its {k} requests written {n} times over",
                g.place
            ));
            (0..n).flat_map(|_| inner.clone()).collect()
        }
        (k, n) => {
            let why = format!("it runs {k} requests {n} times: sluice repeats one step (repeat = N), and import unrolls up to {UNROLL} times");
            drop_group(cx, &g, &why);
            Vec::new()
        }
    }
}

/// The one step of a loop's body, repeated `n` times; the body's pauses come before
/// each time round.
fn repeated(inner: Vec<Part>, n: u64) -> Part {
    let mut pauses = Vec::new();
    let mut step = None;
    for part in inner {
        match part {
            Part::Pause(p) => pauses.extend(p),
            Part::Step(s) => step = Some(s),
            _ => {}
        }
    }
    let mut step = step.expect("a body of one step");
    step.before.extend(pauses);
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    step.repeat = step.repeat.saturating_mul(n).min(1_000_000);
    Part::Step(step)
}

/// Lists a kept controller as dropped, naming the requests that go with it.
fn drop_group(cx: &mut Cx, g: &Group, why: &str) {
    let mut names = Vec::new();
    step_names(&g.parts, &mut names);
    let list = match names.len() {
        0 => String::new(),
        _ => format!(": its samplers {} are not imported", names.join(", ")),
    };
    cx.drop_at(g.line, &g.place, &g.class, format!("{why}{list}"));
}

fn step_names(parts: &[Part], out: &mut Vec<String>) {
    for part in parts {
        match part {
            Part::Step(s) => out.push(format!("'{}'", s.name)),
            Part::Once(g) | Part::Throughput(g, _) | Part::Loop(g, _) => step_names(&g.parts, out),
            Part::Pause(_) => {}
        }
    }
}

/// The loop as flows: one of all its steps, or one per Throughput Controller (with the
/// steps common to all around it), weighted by its percentage.
fn flows(cx: &mut Cx, looped: Vec<Part>) -> Vec<Parts> {
    let shares: Vec<(String, f64)> = looped
        .iter()
        .filter_map(|p| match p {
            Part::Throughput(g, pct) => Some((g.name.clone(), *pct)),
            _ => None,
        })
        .collect();
    if shares.is_empty() {
        let parts = looped;
        return vec![Parts {
            name: "steps".into(),
            weight: 1,
            parts,
        }];
    }
    let scale = if shares.iter().all(|(_, p)| p.fract() == 0.0) {
        1.0
    } else {
        10.0
    };
    let weight = |pct: f64| ((pct * scale).round() as u32).max(1);
    let mut out: Vec<Parts> = (0..shares.len())
        .map(|i| Parts {
            name: shares[i].0.clone(),
            weight: weight(shares[i].1),
            parts: one_share(&looped, Some(i)),
        })
        .collect();
    let total: f64 = shares.iter().map(|(_, p)| p).sum();
    let common = one_share(&looped, None);
    if total < 100.0 && common.iter().any(|p| matches!(p, Part::Step(_))) {
        out.push(Parts {
            name: "others".into(),
            weight: weight(100.0 - total),
            parts: common,
        });
    }
    cx.note(format!("Throughput Controllers as weighted [[flow]]s, one flow each time round the loop{}: JMeter ran each controller on its own (an iteration could run several, or none)", if scale > 1.0 { " (weights: tenths of a percent)" } else { "" }));
    out
}

/// The loop's parts with the `i`th Throughput Controller's contents, and no other's.
fn one_share(looped: &[Part], i: Option<usize>) -> Vec<Part> {
    let mut n = 0;
    let mut out = Vec::new();
    for part in looped {
        match part {
            Part::Throughput(g, _) => {
                if Some(n) == i {
                    out.extend(g.parts.iter().cloned());
                }
                n += 1;
            }
            other => out.push(other.clone()),
        }
    }
    out
}

/// Drops the steps that use a variable no kept step, column or value defines (and
/// then those that used what a dropped one extracted), keeping their pauses.
fn drop_undefined(cx: &mut Cx, seqs: &mut [&mut Vec<Part>]) {
    assume_columns(cx, seqs);
    loop {
        let defined = defined(cx, seqs);
        let mut changed = false;
        for part in seqs.iter_mut().flat_map(|s| s.iter_mut()) {
            let Part::Step(s) = part else { continue };
            let Some(missing) = s.uses.iter().find(|u| !defined.contains(*u)) else {
                continue;
            };
            let why = format!("it uses ${{{missing}}}, which nothing translated defines (a CSV column, an extractor's variable, a User Defined Variable)");
            cx.drop_at(s.line, &s.place, &s.class, why);
            *part = Part::Pause(std::mem::take(&mut s.before));
            changed = true;
        }
        if !changed {
            break;
        }
    }
}

/// The data's columns and the steps' extractions.
fn defined(cx: &Cx, seqs: &[&mut Vec<Part>]) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = cx
        .data
        .iter()
        .flat_map(|d| d.names.iter().flatten().cloned())
        .collect();
    for part in seqs.iter().flat_map(|s| s.iter()) {
        if let Part::Step(s) = part {
            names.extend(s.extract.iter().map(|e| e.name.clone()));
        }
    }
    names
}

/// A data file whose header row could not be read: the variables nothing else
/// defines are taken for its columns.
fn assume_columns(cx: &mut Cx, seqs: &[&mut Vec<Part>]) {
    if cx.data.as_ref().is_none_or(|d| d.names.is_some()) {
        return;
    }
    let extracted = defined(cx, seqs);
    let mut columns = BTreeSet::new();
    for part in seqs.iter().flat_map(|s| s.iter()) {
        if let Part::Step(s) = part {
            columns.extend(s.uses.iter().filter(|u| !extracted.contains(*u)).cloned());
        }
    }
    let list: Vec<String> = columns.into_iter().collect();
    cx.note(format!(
        "taken for the data file's columns: {}",
        list.join(", ")
    ));
    if let Some(d) = cx.data.as_mut() {
        d.names = Some(list);
    }
}

/// `per` of the data file, by where its columns are used.
fn decide_per(cx: &mut Cx, reads_once: bool, setup: &[Part], flows: &[Parts]) {
    let Some(mut d) = cx.data.take() else { return };
    let columns: BTreeSet<&String> = d.names.iter().flatten().collect();
    let uses = |parts: &[Part]| {
        parts.iter().any(|p| match p {
            Part::Step(s) => s.uses.iter().any(|u| columns.contains(u)),
            _ => false,
        })
    };
    let in_setup = uses(setup);
    let in_loop = flows.iter().any(|f| uses(&f.parts));
    data::per(cx, &mut d, reads_once, in_setup, in_loop);
    cx.data = Some(d);
}

/// The steps of one sequence with their think times: each pause before a step is
/// the think of the step before it, the first step's that of the last (the sequence
/// goes round); a repeated step's own pauses are its think, once per time round.
fn thinks(cx: &mut Cx, parts: Vec<Part>) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let (mut pending, mut head) = (Vec::new(), None);
    for part in parts {
        match part {
            Part::Pause(p) => pending.extend(p),
            Part::Step(mut s) => {
                let own = std::mem::take(&mut s.before);
                if s.repeat > 1 {
                    s.think.extend(own);
                } else {
                    pending.extend(own);
                }
                match steps.last_mut() {
                    Some(prev) => prev.think.append(&mut pending),
                    None => head = Some(std::mem::take(&mut pending)),
                }
                steps.push(*s);
            }
            _ => unreachable!("flattened"),
        }
    }
    if let Some(last) = steps.last_mut() {
        last.think.append(&mut pending);
        last.think.extend(head.unwrap_or_default());
    }
    for s in &mut steps {
        let (sum, approximate) = sum(&s.think);
        if approximate {
            cx.note(format!("{}: its think adds up several random timers: drawn as one gaussian of their total's mean and deviation", s.place));
        }
        s.think = sum.into_iter().collect();
    }
    if steps.iter().any(|s| !s.think.is_empty()) {
        cx.note("timers: JMeter pauses before a sampler, sluice after a step: each pause is the think of the step before its request (a sequence's first request's, of its last step)");
    }
    steps
}

/// The pauses one after the other as one; true when that is approximate (several
/// random ones, summed as a gaussian of the same mean and variance).
fn sum(pauses: &[Pause]) -> (Option<Pause>, bool) {
    let fixed: u64 = pauses
        .iter()
        .map(|p| if let Pause::Fixed(ms) = p { *ms } else { 0 })
        .sum();
    let random: Vec<&Pause> = pauses
        .iter()
        .filter(|p| !matches!(p, Pause::Fixed(_)))
        .collect();
    match random[..] {
        [] => ((fixed > 0).then_some(Pause::Fixed(fixed)), false),
        [Pause::Between(lo, hi)] => (Some(Pause::Between(lo + fixed, hi + fixed)), false),
        [Pause::Gaussian { mean, deviation }] => (
            Some(Pause::Gaussian {
                mean: mean + fixed,
                deviation: *deviation,
            }),
            false,
        ),
        _ => {
            let (mut mean, mut variance) = (fixed as f64, 0.0);
            for p in random {
                let (m, v) = match *p {
                    Pause::Between(lo, hi) => {
                        ((lo + hi) as f64 / 2.0, ((hi - lo) as f64).powi(2) / 12.0)
                    }
                    Pause::Gaussian { mean, deviation } => {
                        (mean as f64, (deviation as f64).powi(2))
                    }
                    Pause::Fixed(_) => (0.0, 0.0),
                };
                mean += m;
                variance += v;
            }
            let deviation = variance.sqrt().round() as u64;
            (
                Some(Pause::Gaussian {
                    mean: mean.round() as u64,
                    deviation,
                }),
                true,
            )
        }
    }
}

/// A loop left empty (everything once, or dropped) takes the setup's steps, run once.
fn fill_loop(cx: &mut Cx, s: &mut Shaped) -> Result<(), ImportError> {
    let before = s.flows.len();
    s.flows.retain(|f| !f.steps.is_empty());
    if s.flows.len() < before && !s.flows.is_empty() {
        cx.note("a flow left with no request is not written");
    }
    if !s.flows.is_empty() {
        return Ok(());
    }
    let steps = match (s.setup.is_empty(), s.teardown.is_empty()) {
        (false, _) => std::mem::take(&mut s.setup),
        (true, false) => std::mem::take(&mut s.teardown),
        (true, true) => return Err(nothing_left(cx)),
    };
    if s.length != Length::Iterations(1) {
        cx.note("every request runs once per user: written as the loop, with iterations = 1");
    }
    s.length = Length::Iterations(1);
    s.flows = vec![Flow {
        name: "steps".into(),
        weight: 1,
        steps,
    }];
    Ok(())
}

fn nothing_left(cx: &Cx) -> ImportError {
    let http = cx
        .dropped
        .iter()
        .find(|d| d.element.starts_with("HTTPSampler"))
        .or(cx.dropped.first());
    ImportError::NothingLeft {
        file: cx.file.clone(),
        first: http.map_or_else(|| "nothing was listed".into(), ToString::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_add_up_exactly_when_at_most_one_is_random() {
        let g = Pause::Gaussian {
            mean: 300,
            deviation: 100,
        };
        assert_eq!(
            sum(&[Pause::Fixed(100), Pause::Fixed(50)]),
            (Some(Pause::Fixed(150)), false)
        );
        assert_eq!(
            sum(&[Pause::Fixed(100), Pause::Between(1000, 3000)]),
            (Some(Pause::Between(1100, 3100)), false)
        );
        assert_eq!(
            sum(&[g, Pause::Fixed(10)]),
            (
                Some(Pause::Gaussian {
                    mean: 310,
                    deviation: 100
                }),
                false
            )
        );
        // 1000..3000 uniform: mean 2000, variance 2000²/12; with the gaussian's 100².
        let (both, approximate) = sum(&[g, Pause::Between(1000, 3000)]);
        assert!(approximate);
        assert_eq!(
            both,
            Some(Pause::Gaussian {
                mean: 2300,
                deviation: 586
            })
        );
        assert_eq!(sum(&[]), (None, false));
    }
}
