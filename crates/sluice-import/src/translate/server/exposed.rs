//! Paths nginx guarded that a server's routes leave open: a guarded location sluice
//! cannot route (a regex that is no prefix), and a guarded regex whose prefix route
//! takes fewer paths than nginx gave it (not anchored, case-insensitive, or with longer
//! prefixes under it, which sluice prefers and nginx did not). Each is a Closed note
//! naming the location, so that the import exits 2, unless every route those paths can
//! now reach checks the same (or is closed).

use super::Scope;
use crate::guard::{self, Level};
use crate::location;
use crate::plan::{ClosedBy, Guard, Matching, Plan, Route};
use crate::tree::Node;
use crate::{Note, Notes};

/// A guarded location left out: its paths go to whichever other route takes them.
pub struct Gone {
    from: String,
    /// Why sluice cannot route it (the note it had before it was found guarded).
    why: String,
    guard: Guard,
}

/// A location sluice cannot route (`why`): noted as left out, or, when nginx guarded
/// it, kept for [`note`] to decide whether its paths are open elsewhere. A named
/// location is not: sluice never reaches it (nor any path that nginx sent to it from
/// another location, whose own route stands instead).
pub fn unroutable(loc: &Node, outer: &Scope, why: String, notes: &mut Notes) -> Option<Gone> {
    let named = loc.arg(0).is_some_and(|a| a.starts_with('@'));
    let guard = (!named)
        .then(|| {
            // Its checks only: what its directives would add to the plan is not written.
            let mut quiet = Vec::new();
            let scope = outer.enter(
                Level::Location,
                loc.block(),
                &mut Plan::default(),
                &mut quiet,
            );
            guard::in_force(&location::route(loc, &scope, &mut quiet))
        })
        .filter(Guard::restricts);
    let Some(guard) = guard else {
        notes.push(loc.note(why));
        return None;
    };
    Some(Gone {
        from: format!("{}:{}", loc.file, loc.line),
        why,
        guard,
    })
}

/// The checks nginx makes on `r`'s requests, as compared with another location's (a
/// closure for want of something to answer with is not a check).
fn checks(r: &Route) -> Guard {
    let mut g = guard::in_force(r);
    g.closed
        .retain(|c| !matches!(c.by, ClosedBy::Unserved { .. }));
    g
}

/// Whether `r` refuses whom `g` refuses: it is closed, or checks the same.
fn covers(g: &Guard, r: &Route) -> bool {
    !r.guard.closed.is_empty() || checks(r).same_checks(g)
}

/// The Closed notes for paths nginx guarded that `routes` (a server's, every one of
/// them placed) leave open.
pub fn note(routes: &[Route], gone: Vec<Gone>, notes: &mut Notes) {
    // A path no route of the server takes may go to another server's: covered only
    // with a `/` of its own.
    let catch_all = routes.iter().any(|r| r.path == "/");
    let everywhere = |g: &Guard| catch_all && routes.iter().all(|r| covers(g, r));
    let closed = |from: &str, text: String| Note::at(from, "location", text).closed();
    for g in gone {
        if everywhere(&g.guard) {
            notes.push(Note::at(&g.from, "location", g.why));
            continue;
        }
        notes.push(closed(&g.from, format!(
            "{}: nginx checked who may reach it ({}), so the paths it matched are now open under the other routes of its server, which check otherwise; close them by hand",
            g.why,
            g.guard.describe()
        )));
    }
    for r in routes {
        let Matching::Regex {
            re,
            anchored,
            caseless,
            order,
        } = &r.matching
        else {
            continue;
        };
        let g = checks(r);
        if !r.guard.restricts() {
            continue;
        }
        let said = g.describe();
        let path = &r.path;
        if !anchored && !everywhere(&g) {
            notes.push(closed(&r.from, format!(
                "{re}: not anchored with ^, so nginx matched it further in a path too (as in /any{path}), and checked who may reach it ({said}); sluice's route {path} takes only the paths that begin with it: the others are open under the other routes of its server, which check otherwise; close them by hand"
            )));
        }
        if *caseless && path.chars().any(|c| c.is_ascii_alphabetic()) && !everywhere(&g) {
            notes.push(closed(&r.from, format!(
                "{re}: case-insensitive in nginx, which checked who may reach it ({said}); sluice's route {path} takes its paths in this case only: the same paths in other cases ({}) are open under the other routes of its server, which check otherwise; close them by hand",
                path.to_ascii_uppercase()
            )));
        }
        // nginx tries regexes, in order, before any prefix but `^~` (and `=`, whose
        // route in sluice takes longer paths too).
        let taken: Vec<&str> = routes
            .iter()
            .filter(|o| o.path.len() > path.len() && o.path.starts_with(path.as_str()))
            .filter(|o| match &o.matching {
                Matching::Prefix | Matching::Exact => true,
                Matching::Preferred => false,
                Matching::Regex { order: theirs, .. } => theirs > order,
            })
            .filter(|o| !covers(&g, o))
            .map(|o| o.path.as_str())
            .collect();
        if !taken.is_empty() {
            notes.push(closed(&r.from, format!(
                "{re}: nginx tries regular expressions before prefix locations, so it took the paths of {} too, and checked who may reach them ({said}); sluice routes by the longest prefix, and those routes check otherwise: they are open to whom nginx refused; close them or give them this location's checks by hand",
                taken.join(", ")
            )));
        }
    }
}
