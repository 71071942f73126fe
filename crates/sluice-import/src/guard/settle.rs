//! The routes placed, their checks settled: closed where sluice cannot make one, left
//! out where nginx answers before checking anyone; a note for each check that closed
//! routes.

use crate::plan::{Action, ClosedBy, Closure, Guard, Route, Satisfy};
use crate::{Note, Notes};

/// Closes the routes whose checks sluice cannot make (each answers 403), and leaves out
/// the checks of a route nginx answers with `return` before it checks anyone; then one
/// note per check that closed routes, naming them.
pub fn settle(routes: &mut [Route], notes: &mut Notes) {
    for r in routes.iter_mut() {
        if matches!(r.action, Action::Return { .. } | Action::RedirectHttps) {
            not_reached(&mut r.guard);
        }
        if !r.guard.closed.is_empty() {
            r.action = Action::Return {
                status: 403,
                location: None,
                body: None,
            };
        }
    }
    let mut checks: Vec<&Closure> = Vec::new();
    let closures = routes.iter().flat_map(|r| &r.guard.closed);
    // A location with nothing to answer has a note of its own (`translate::server`).
    for c in closures.filter(|c| !matches!(c.by, ClosedBy::Unserved { .. })) {
        if !checks.contains(&c) {
            checks.push(c);
        }
    }
    for c in checks {
        let closed: Vec<String> = routes
            .iter()
            .filter(|r| r.guard.closed.contains(c))
            .map(|r| format!("{}{}", r.host.as_deref().unwrap_or(""), r.path))
            .collect();
        notes.push(closed_note(c, &closed));
    }
}

/// The checks nginx makes on `r`'s requests: its guard, less those a `return` answers
/// before (see [`settle`]).
pub fn in_force(r: &Route) -> Guard {
    let mut g = r.guard.clone();
    if matches!(r.action, Action::Return { .. } | Action::RedirectHttps) {
        not_reached(&mut g);
    }
    g
}

/// nginx answers `return` (rewrite phase) before its access phase: `allow`, `deny`,
/// `auth_basic` and the like never ran there, and sluice must not run them either.
fn not_reached(g: &mut Guard) {
    let mut places: Vec<String> = g.access.iter().map(|r| r.from.clone()).collect();
    places.extend(g.auth.iter().map(|a| a.realm_from.clone()));
    let access_phase = g.closed.iter().filter(|c| !c.by.before_return());
    places.extend(access_phase.map(|c| c.from.clone()));
    places.dedup();
    g.access.clear();
    g.auth = None;
    g.satisfy = Satisfy::All;
    g.satisfy_from = None;
    g.closed.retain(|c| c.by.before_return());
    g.not_reached = places;
}

fn closed_note(c: &Closure, routes: &[String]) -> Note {
    const SHOWN: usize = 6;
    let mut list = routes
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if routes.len() > SHOWN {
        list.push_str(&format!(" and {} more", routes.len() - SHOWN));
    }
    let (s, verb) = if routes.len() == 1 {
        ("", "answers")
    } else {
        ("s", "answer")
    };
    Note::at(
        &c.from,
        &c.directive,
        format!(
            "{}: {}: the route{s} it guards {verb} 403 ({list}); carry the check over by hand",
            c.args,
            c.by.why()
        ),
    )
    .closed()
}
