//! Inside the processes, as the terminal shows it per configuration: a sampled JVM's
//! request threads, a table of their states (rows) over the steps (columns) as the
//! breakdown shows the time, and where the busy threads were at the most loaded step
//! (the wall-clock profile's top frames) with what sampling them cost; and each native
//! process's on-CPU profile's top frames at that step.

use super::{cut, wrap, Width};
use crate::judge::thread_states::ThreadStates;
use crate::jvm::dump::State;
use crate::profile::Frame;
use crate::report::StepResult;
use std::fmt::Write;

/// A state's name in the table, indent included.
const STATE_WIDTH: usize = 40;
/// Steps shown side by side: the last ones, the most loaded.
const STEPS: usize = 8;

/// Every sampled JVM's table over `steps` (the valid ones), and its profile's top at
/// the last of them.
pub(super) fn tables(steps: &[StepResult], w: Width) -> String {
    let valid: Vec<&StepResult> = steps.iter().filter(|s| s.judged.valid).collect();
    let shown = &valid[valid.len().saturating_sub(STEPS)..];
    let Some(last) = shown.last() else {
        return String::new();
    };
    let mut out = String::new();
    for t in &last.judged.jvm_threads {
        let per_step: Vec<(usize, Option<&ThreadStates>)> = shown
            .iter()
            .map(|s| {
                (
                    s.users,
                    s.judged.jvm_threads.iter().find(|o| o.process == t.process),
                )
            })
            .collect();
        out.push_str(&table(t, &per_step));
        out.push_str(&wrap(&profile_line(t, last.users), "      ", "        ", w));
    }
    out
}

fn table(t: &ThreadStates, per_step: &[(usize, Option<&ThreadStates>)]) -> String {
    let server = t.server.unwrap_or("request");
    let mut out = format!(
        "      {}'s {server} request threads, on average in a thread dump:\n",
        t.process
    );
    let mut line = format!("        {:<STATE_WIDTH$}", "users");
    for (users, _) in per_step {
        let _ = write!(line, " {users:>7}");
    }
    let _ = writeln!(out, "{line}");
    for state in State::ALL {
        let cells: Vec<Option<f64>> = per_step
            .iter()
            .map(|(_, s)| s.map(|s| s.states.get(&state).copied().unwrap_or(0.0)))
            .collect();
        if cells.iter().all(|c| c.unwrap_or(0.0) == 0.0) {
            continue;
        }
        let mut line = format!("        {:<STATE_WIDTH$}", cut(state.words(), STATE_WIDTH));
        for c in cells {
            let cell = c.map_or("-".to_string(), |v| format!("{v:.1}"));
            let _ = write!(line, " {cell:>7}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// Each native process's on-CPU top frames at the last valid step of `steps`.
pub(super) fn on_cpu(steps: &[StepResult], w: Width) -> String {
    let Some(last) = steps.iter().rev().find(|s| s.judged.valid) else {
        return String::new();
    };
    let mut out = String::new();
    for p in &last.judged.on_cpu {
        let mut text = format!(
            "{} on CPU at {} users (perf at 49 Hz, {} samples): {}",
            p.process,
            last.users,
            p.samples,
            list(&p.top_frames)
        );
        if !p.top_own.is_empty() && p.top_own != p.top_frames {
            let _ = write!(text, "; outside the kernel and libc: {}", list(&p.top_own));
        }
        out.push_str(&wrap(&text, "      ", "        ", w));
    }
    out
}

/// "lab.Hot.work 94%, java.lang.Thread.sleep 6%".
fn list(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|f| format!("{} {:.0}%", f.frame, f.pct))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "where the busy threads were at 16 users (wall clock): lab.Hot.work 94%, ...; in
/// the app's own code: ...; 22 thread dumps, ...".
fn profile_line(t: &ThreadStates, users: usize) -> String {
    let mut text = format!("where the busy threads were at {users} users (wall clock)");
    if t.top_frames.is_empty() {
        text.push_str(": none was busy");
    } else {
        let _ = write!(text, ": {}", list(&t.top_frames));
    }
    if !t.top_own.is_empty() {
        let _ = write!(text, "; in the app's own code: {}", list(&t.top_own));
    }
    if let Some(gc) = &t.gc {
        let _ = write!(text, "; {gc}");
    }
    let _ = write!(text, "; {}", t.cost);
    text
}
