//! The one place where the rules' results are edited by what other rules found. Each
//! rule reads the step alone and makes its resources and findings; some of what one
//! finds changes what another made (a database limit nobody waited on is no longer
//! saturated, a balancer's queue makes the pool behind it saturated). Those edits run
//! here, after every rule and before the choice, in the order below.

use super::database::{self, Sessions};
use super::findings::{blame_keepalive, Finding};
use super::{queue, Delta, FindingKind, Resource};

/// Settles what the rules made: `resources` (edited in place) by `findings` (the rules'
/// own, read only), the databases' `sessions`, the step's `errors`. Returns the findings
/// the edits make, in the order the reports print them after the rules' own.
///
/// The order, and why:
/// 1. `database::connections_unwaited`: a database's `max_connections` reached while no
///    pool waited and no request failed is no longer saturated, but a finding. It reads
///    the database pools' saturation as their own rule judged it: nothing here changes
///    a database pool.
/// 2. `queue::attribute`: the balancer's saturated queue (from its metrics, or requests
///    it failed itself) makes the thread pools at their knee saturated, with its
///    evidence, and is then no longer saturated itself. It reads the thread pools as
///    their rule judged them; an edit that reads a thread pool's saturation goes after.
/// 3. `findings::blame_keepalive`: with keep-alive off, the balancer's saturated CPU is
///    renamed for it ([`super::Kind::KeepaliveOff`]). Nothing before reads that CPU; an
///    edit that reads the balancer's CPU by its kind goes before.
/// 4. `database::place_sessions`: each database's sessions, evidence beside its CPU, or
///    a finding where its CPU is not read. Evidence only: it changes no verdict.
///
/// Today the four touch disjoint resources (max_connections; the queue and thread
/// pools; the balancer's CPU; a database's CPU's evidence), so only a new edit that
/// reads what one of them writes can make the order matter: put it after that one.
pub(super) fn settle(
    resources: &mut [Resource],
    findings: &[Finding],
    sessions: Vec<Sessions>,
    deltas: &[Delta],
    errors: u64,
) -> Vec<Finding> {
    let unwaited = database::connections_unwaited(resources, errors);
    queue::attribute(resources, deltas);
    if let Some(off) = findings
        .iter()
        .find(|f| f.kind == FindingKind::KeepaliveOff)
    {
        blame_keepalive(resources, off);
    }
    let mut out = database::place_sessions(resources, sessions);
    out.extend(unwaited);
    out
}
