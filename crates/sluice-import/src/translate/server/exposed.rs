//! Paths nginx guarded that a server's routes leave open: a guarded location sluice
//! cannot route (a regular expression its engine does not read, a named location). Guarded: it checks who
//! may come in, or refuses everyone with its own answer (`return 404`, `403`, `444`).
//! Each is a Closed note naming the location, so that the import exits 2, unless every
//! route those paths can now reach refuses them alike (or is closed).

use super::Scope;
use crate::guard::{self, Level};
use crate::location;
use crate::plan::{Action, ClosedBy, Guard, Plan, Route};
use crate::tree::Node;
use crate::{Note, Notes};

/// What nginx refused on a location's paths: whom its checks refuse, or everyone, by
/// its own 4xx answer.
struct Refused {
    guard: Guard,
    answer: Option<u16>,
}

impl Refused {
    /// `r`'s refusals, if it refuses anyone.
    fn of(r: &Route) -> Option<Refused> {
        let refused = Refused {
            guard: checks(r),
            answer: answer(r),
        };
        (r.guard.restricts() || refused.answer.is_some()).then_some(refused)
    }

    /// What nginx did there, for a note.
    fn said(&self) -> String {
        match self.answer {
            Some(status) if !self.guard.restricts() => {
                format!("refused everyone there (it answers {status}: return, or internal)")
            }
            _ => format!("checked who may reach it: {}", self.guard.describe()),
        }
    }

    /// Whether `r` refuses whom this refused: it is closed, refuses everyone itself,
    /// or makes the same checks.
    fn covered_by(&self, r: &Route) -> bool {
        !r.guard.closed.is_empty()
            || answer(r).is_some()
            || (self.answer.is_none() && checks(r).same_checks(&self.guard))
    }
}

/// The 4xx status `r` answers everyone with, if it does (444 is written 403).
fn answer(r: &Route) -> Option<u16> {
    match r.action {
        Action::Return { status, .. } if (400..500).contains(&status) => Some(status),
        _ => None,
    }
}

/// A guarded location left out: its paths go to whichever other route takes them.
pub struct Gone {
    from: String,
    /// Why sluice cannot route it (the note it had before it was found guarded).
    why: String,
    refused: Refused,
}

/// A location sluice cannot route (`why`): noted as left out, or, when nginx guarded
/// it, kept for [`note`] to decide whether its paths are open elsewhere. A named
/// location is not: sluice never reaches it (nor any path that nginx sent to it from
/// another location, whose own route stands instead).
pub fn unroutable(loc: &Node, outer: &Scope, why: String, notes: &mut Notes) -> Option<Gone> {
    let named = loc.arg(0).is_some_and(|a| a.starts_with('@'));
    let refused = (!named)
        .then(|| {
            // Its checks and answer only: what its directives would add to the plan
            // is not written.
            let mut quiet = Vec::new();
            let scope = outer.enter(
                Level::Location,
                loc.block(),
                &mut Plan::default(),
                &mut quiet,
            );
            let mut route = location::route(loc, &scope, &mut quiet);
            route.guard = guard::in_force(&route);
            Refused::of(&route)
        })
        .flatten();
    let Some(refused) = refused else {
        notes.push(loc.note(why));
        return None;
    };
    Some(Gone {
        from: format!("{}:{}", loc.file, loc.line),
        why,
        refused,
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

/// The Closed notes for paths nginx guarded that `routes` (a server's, every one of
/// them placed) leave open.
pub fn note(routes: &[Route], gone: Vec<Gone>, notes: &mut Notes) {
    // A path no route of the server takes may go to another server's: covered only
    // with a `/` of its own.
    let catch_all = routes.iter().any(|r| r.path == "/");
    let everywhere = |refused: &Refused| catch_all && routes.iter().all(|r| refused.covered_by(r));
    for g in gone {
        if everywhere(&g.refused) {
            notes.push(Note::at(&g.from, "location", g.why));
            continue;
        }
        notes.push(closed(&g.from, format!(
            "{}: nginx {}, so the paths it matched are now open under the other routes of its server, which do not refuse them alike; close them by hand",
            g.why,
            g.refused.said()
        )));
    }
}

/// A Closed note of the location at `from`.
fn closed(from: &str, text: String) -> Note {
    Note::at(from, "location", text).closed()
}
