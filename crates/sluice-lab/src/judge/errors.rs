//! Requests that failed: what came back instead of answers, as the load generator
//! counted it (its error kinds: `status 503`, `connect: connection refused`). Some
//! failures are a finding beside any verdict; a step they dominate measured the
//! target's errors, not a saturation, and names no tier: fast failures run at a rate
//! no working server reaches, and would read as the generator's or a tier's limit.

use super::thresholds::ERRORS_DOMINATE;
use super::{Finding, FindingKind, Load, Verdict};

/// Error kinds a finding names, the most frequent first; the JSON's step has them all.
const KINDS_SHOWN: usize = 3;

/// The step's failures in words: `92% of requests failed (920 of 1000): 900 x status
/// 503, 20 x timeout`.
pub(super) fn finding(load: Load) -> Option<Finding> {
    if load.errors == 0 || load.requests == 0 {
        return None;
    }
    let mut kinds: Vec<(&String, &u64)> = load.error_kinds.iter().collect();
    kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut named: Vec<String> = kinds
        .iter()
        .take(KINDS_SHOWN)
        .map(|(kind, n)| format!("{n} x {kind}"))
        .collect();
    if kinds.len() > KINDS_SHOWN {
        named.push(format!("{} other kinds", kinds.len() - KINDS_SHOWN));
    }
    let share = load.errors as f64 / load.requests as f64 * 100.0;
    let mut text = format!(
        "{} of requests failed ({} of {})",
        percent(share),
        load.errors,
        load.requests
    );
    if !named.is_empty() {
        text.push_str(": ");
        text.push_str(&named.join(", "));
    }
    Some(Finding::new(FindingKind::Errors, "target", text))
}

/// `0.4%`, `12%`: a small share keeps its decimal, so that it never reads as none.
fn percent(share: f64) -> String {
    if share < 10.0 {
        format!("{share:.1}%")
    } else {
        format!("{share:.0}%")
    }
}

/// Why a step whose failures are at least [`ERRORS_DOMINATE`] of its requests is not
/// judged; `None` for any other step.
pub(super) fn dominated(load: Load, finding: Option<&Finding>) -> Option<String> {
    let f = finding?;
    if (load.errors as f64) < ERRORS_DOMINATE * load.requests as f64 {
        return None;
    }
    Some(format!(
        "{}: the step measured errors, not a saturation (fix what they say first)",
        f.text
    ))
}

/// The verdict of a step its errors dominated: no tier, and nothing to enlarge.
pub(super) fn verdict(why: &str, finding: &Finding) -> Verdict {
    Verdict {
        tier: None,
        resource: None,
        summary: format!("invalid step: {why}"),
        evidence: vec![finding.text.clone()],
        ..Default::default()
    }
}
