//! nginx's `server` blocks: their listeners, names and locations, and, once every block
//! is read, the routes they make (a name-based virtual host becomes a route `host`; the
//! default server of an address takes the requests no name matched, as in nginx).

use super::{Scope, Translator};
use crate::guard::{self, Level};
use crate::location;
use crate::plan::{
    bind, Action, ClosedBy, Closure, Guard, Listener, Matching, Plan, Route, Server, Upstream,
};
use crate::tree::Node;
use crate::Notes;

/// A `server` block read, waiting for the others to know which is each address's default.
pub struct Draft {
    binds: Vec<String>,
    /// The binds it is `default_server` of.
    defaults: Vec<String>,
    names: Vec<String>,
    routes: Vec<Route>,
    from: Node,
}

/// Directives of a `server` block this module reads itself.
const READ_HERE: &[&str] = &[
    "listen",
    "server_name",
    "location",
    "return",
    "root",
    "ssl_certificate",
    "ssl_certificate_key",
    "proxy_set_header",
    "add_header",
    "proxy_hide_header",
    "proxy_connect_timeout",
    "proxy_read_timeout",
    "limit_req",
    "proxy_pass",
];

impl Translator {
    pub(super) fn server(&mut self, block: &Node, outer: &Scope, notes: &mut Notes) {
        let mut scope = outer.enter(Level::Outer, block.block(), &mut self.plan, notes);
        let (binds, defaults) = self.listens(block, &scope, notes);
        let names = names(block, notes);
        let tls = block
            .block()
            .iter()
            .any(|d| d.name == "listen" && d.args.iter().any(|a| a == "ssl"));
        if !tls {
            scope.plain(block, notes);
        }
        let routes = self.routes(block, &scope, notes);
        for d in block
            .block()
            .iter()
            .filter(|d| !READ_HERE.contains(&d.name.as_str()) && !scope.claims(d))
        {
            crate::known::note(d, notes);
        }
        self.servers.push(Draft {
            binds,
            defaults,
            names,
            routes,
            from: Node {
                children: None,
                ..block.clone()
            },
        });
    }

    /// Its `listen`s as listeners (nginx's default without one: port 80).
    fn listens(
        &mut self,
        block: &Node,
        scope: &Scope,
        notes: &mut Notes,
    ) -> (Vec<String>, Vec<String>) {
        let (mut binds, mut defaults) = (Vec::new(), Vec::new());
        for l in block.block().iter().filter(|d| d.name == "listen") {
            let Some(b) = l.arg(0).and_then(bind) else {
                notes.push(l.note(format!(
                    "{}: a unix socket or host name; sluice listens on IP:port only, left out",
                    l.arg(0).unwrap_or("")
                )));
                continue;
            };
            let ssl = l.args.iter().any(|a| a == "ssl");
            for p in &l.args[1..] {
                match p.split('=').next().unwrap_or("") {
                    "ssl" | "http2" | "default_server" | "default" | "reuseport" => {}
                    "proxy_protocol" => {}
                    _ => notes.push(l.note(format!("{p}: not translated"))),
                }
            }
            if l.args
                .iter()
                .any(|a| a == "default_server" || a == "default")
            {
                defaults.push(b.clone());
            }
            self.listener(&b, ssl, scope, l, notes);
            if l.args.iter().any(|a| a == "proxy_protocol") {
                let listener = self.plan.listeners.iter_mut().find(|x| x.bind == b);
                listener.expect("just added").proxy_protocol = true;
            }
            binds.push(b);
        }
        if binds.is_empty() {
            let b = "0.0.0.0:80".to_string();
            self.listener(&b, false, scope, block, notes);
            binds.push(b);
        }
        (binds, defaults)
    }

    fn listener(&mut self, b: &str, ssl: bool, scope: &Scope, at: &Node, notes: &mut Notes) {
        let certs: Vec<(String, String)> = if ssl {
            scope.certs().to_vec()
        } else {
            Vec::new()
        };
        if ssl && certs.is_empty() {
            notes.push(at.note(format!("{b} ssl: no ssl_certificate and ssl_certificate_key here; add tls = {{ cert, key }} (or acme) to the listener")));
        }
        let listeners = &mut self.plan.listeners;
        match listeners.iter_mut().find(|l| l.bind == b) {
            Some(l) => {
                for c in certs {
                    if !l.certs.contains(&c) {
                        l.certs.push(c);
                    }
                }
            }
            None => listeners.push(Listener {
                bind: b.to_string(),
                certs,
                proxy_protocol: false,
                from: format!("{}:{}", at.file, at.line),
            }),
        }
    }
}

/// Its `server_name`s as route hosts (`_` and regexes name none).
fn names(block: &Node, notes: &mut Notes) -> Vec<String> {
    let mut out = Vec::new();
    for d in block.block().iter().filter(|d| d.name == "server_name") {
        for name in &d.args {
            match name.as_str() {
                "" | "_" => {}
                n if n.starts_with('~') => notes.push(d.note(format!(
                    "{n}: a regular expression; sluice matches exact names and *.suffix: left out"
                ))),
                n if n.ends_with(".*") => notes.push(d.note(format!(
                    "{n}: a trailing wildcard; sluice matches *.suffix only: left out"
                ))),
                n if n.starts_with('.') => {
                    out.push(n[1..].to_string());
                    out.push(format!("*{n}"));
                }
                n => out.push(n.to_ascii_lowercase()),
            }
        }
    }
    out
}

impl Translator {
    /// The routes of a server's locations (or of its `return`, which answers before any
    /// location is chosen).
    fn routes(&mut self, block: &Node, scope: &Scope, notes: &mut Notes) -> Vec<Route> {
        let locations: Vec<&Node> = block
            .block()
            .iter()
            .filter(|d| d.name == "location")
            .collect();
        if let Some(ret) = block.block().iter().find(|d| d.name == "return") {
            for loc in &locations {
                notes.push(loc.note(format!(
                "never used: nginx answers every request of this server with the return at line {} before choosing a location; left out, as nginx leaves it",
                ret.line
            )));
            }
            let mut route = location::route(block, scope, notes);
            route.path = "/".into();
            route.action = location::action(ret, notes).unwrap_or_default();
            return vec![route];
        }
        let mut found = Found::default();
        for loc in locations {
            self.nested(loc, (scope, None), &mut found, notes);
        }
        let Found {
            routes: mut out,
            gone,
            ..
        } = found;
        if let Some(pass) = block.block().iter().find(|d| d.name == "proxy_pass") {
            notes.push(pass.note("proxy_pass outside a location: not valid nginx; left out"));
        }
        if !out.iter().any(|r| r.path == "/") {
            if let Some(root) = &scope.root {
                let mut route = location::route(block, scope, notes);
                route.path = "/".into();
                route.action = Action::Root(root.clone());
                out.push(route);
            }
        }
        let out = collapse(out, notes);
        exposed::note(&out, gone, notes);
        out
    }

    /// A location's route, and those of the locations inside it. `parent`: the prefix
    /// location it is nested in, if it is.
    fn nested(
        &mut self,
        loc: &Node,
        (outer, parent): (&Scope, Option<&str>),
        found: &mut Found,
        notes: &mut Notes,
    ) {
        let mut at = match location::prefix(loc) {
            Ok(at) => at,
            Err(why) => {
                return found
                    .gone
                    .extend(exposed::unroutable(loc, outer, why, notes))
            }
        };
        if let Matching::Regex { under, .. } = &mut at.matching {
            *under = parent.map(str::to_string);
        }
        let scope = outer.enter(Level::Location, loc.block(), &mut self.plan, notes);
        let mut route = location::route(loc, &scope, notes);
        let prefix = matches!(at.matching, Matching::Prefix | Matching::Preferred);
        route.path = at.path;
        route.matching = at.matching;
        for d in loc.block() {
            if d.name == "location" {
                let parent = prefix.then_some(route.path.as_str()).or(parent);
                self.nested(d, (&scope, parent), found, notes);
            } else if location::action(d, &mut Vec::new()).is_none()
                && d.name != "rewrite"
                && !scope.claims(d)
            {
                crate::known::note(d, notes);
            }
        }
        if matches!(route.action, Action::None) && !route.rewrites.is_empty() {
            notes.push(loc.note("only rewrites here: a request none of them sends elsewhere gets nginx's answer from its default root, written as return = 404"));
            route.action = Action::Return {
                status: 404,
                location: None,
                body: None,
            };
        }
        if matches!(route.action, Action::None) {
            if !route.guard.restricts() {
                notes.push(loc.note("nothing sluice can answer with here (no proxy_pass, return or root translated); left out"));
                return;
            }
            notes.push(unserved(loc, &mut route));
        }
        found.routes.push(route);
    }
}

/// A server's locations read so far.
#[derive(Default)]
struct Found {
    routes: Vec<Route>,
    /// Guarded locations sluice cannot route, whose paths fall to other routes.
    gone: Vec<exposed::Gone>,
}

/// A location nginx guards that sluice has nothing to answer with, closed (return =
/// 403) rather than left out: its paths would fall to a shorter route (`/`, often the
/// application), open to whom nginx refused. Its note: nginx's own answer where nginx
/// refuses everyone, what is not carried over elsewhere.
fn unserved(loc: &Node, route: &mut Route) -> crate::Note {
    let what = match location::content(loc) {
        Some(d) => format!("{} {}", d.name, d.args.join(" ")),
        None => "no proxy_pass, return or root".into(),
    };
    let checks = route.guard.describe();
    let place = loc.args.join(" ");
    let note = if route.guard.refuses_everyone() {
        loc.note(format!("{place}: nginx refuses everyone here ({checks}), and there is nothing else sluice can answer with ({what}): written as return = 403, nginx's answer, rather than left out (its paths would fall to a shorter route); nothing more to write")).of_kind(crate::NoteKind::Done)
    } else {
        loc.note(format!("{place}: nothing sluice can answer with here ({what}: not translated), and nginx checked who may reach it ({checks}): written closed (return = 403) rather than left out, where its paths would fall to a shorter route; whom nginx let in gets 403 until it is carried over by hand")).of_kind(crate::NoteKind::Lost)
    };
    route.guard.closed.push(Closure {
        by: ClosedBy::Unserved { what },
        directive: "location".into(),
        args: place,
        from: route.from.clone(),
    });
    note
}

/// Places every server's routes, now that each address's default server is known, and
/// gives each `proxy_pass` its upstream.
pub fn finish(plan: &mut Plan, drafts: Vec<Draft>, notes: &mut Notes) {
    let default_of = |bind: &str| {
        drafts
            .iter()
            .position(|d| d.defaults.iter().any(|b| b == bind))
            .or_else(|| {
                drafts
                    .iter()
                    .position(|d| d.binds.iter().any(|b| b == bind))
            })
    };
    let several = plan.listeners.len() > 1;
    let mut routes = Vec::new();
    for (i, draft) in drafts.iter().enumerate() {
        let (default, named): (Vec<String>, Vec<String>) = draft
            .binds
            .iter()
            .cloned()
            .partition(|b| default_of(b) == Some(i));
        if !named.is_empty() && draft.names.is_empty() {
            notes.push(draft.from.note("a server without a name that is not its address's default: nginx reaches it only for requests without a Host; left out on those addresses"));
        }
        let listeners = |binds: &[String]| if several { binds.to_vec() } else { Vec::new() };
        for route in &draft.routes {
            if !default.is_empty() {
                routes.push(Route {
                    listeners: listeners(&default),
                    ..route.clone()
                });
            }
            for name in draft.names.iter().filter(|_| !named.is_empty()) {
                routes.push(Route {
                    host: Some(name.clone()),
                    listeners: listeners(&named),
                    ..route.clone()
                });
            }
        }
    }
    plan.routes = dedupe(routes, notes);
    crate::guard::settle(&mut plan.routes, notes);
    targets(plan, notes);
    prune(plan, notes);
}

/// Leaves out servers that would loop back into sluice's own listeners (nginx served
/// them itself, in another `server` block), then upstreams left without a server and
/// the routes to them.
fn prune(plan: &mut Plan, notes: &mut Notes) {
    let binds: Vec<String> = plan.listeners.iter().map(|l| l.bind.clone()).collect();
    for up in &mut plan.upstreams {
        up.servers.retain(|s| {
            let loops = binds.iter().any(|b| loops_into(&s.addr, b));
            if loops {
                notes.push(crate::Note::at(&up.from, "server", format!(
                    "{}: one of this config's own listeners (nginx answered it in another server block); sluice refuses a server that loops back into it: left out",
                    s.addr
                )));
            }
            !loops
        });
    }
    let empty: Vec<(String, String)> = plan
        .upstreams
        .iter()
        .filter(|u| u.servers.is_empty())
        .map(|u| (u.name.clone(), u.from.clone()))
        .collect();
    for (name, from) in &empty {
        notes.push(crate::Note::at(
            from,
            "upstream",
            format!(
                "{name}: no server left that sluice can reach; left out, with the routes to it"
            ),
        ));
    }
    plan.upstreams.retain(|u| !u.servers.is_empty());
    plan.routes
        .retain(|r| !matches!(&r.action, Action::Upstream(u) if empty.iter().any(|(n, _)| n == u)));
}

/// Whether server `addr` is listener `bind` (same port, on loopback or the same IP).
fn loops_into(addr: &str, bind: &str) -> bool {
    let (Some((host, port)), Some((bhost, bport))) = (addr.rsplit_once(':'), bind.rsplit_once(':'))
    else {
        return false;
    };
    let local = matches!(host, "localhost" | "[::1]") || host.starts_with("127.");
    port == bport && (host == bhost || (local && matches!(bhost, "0.0.0.0" | "[::]")))
}

/// Whether two routes match alike but for their path: two prefixes (`/p` and `^~ /p`,
/// which nginx refuses as a duplicate), two exact paths, two regular expressions.
fn same_kind(a: &Route, b: &Route) -> bool {
    let kind = |r: &Route| match &r.matching {
        Matching::Prefix | Matching::Preferred => (0, None),
        Matching::Exact => (1, None),
        Matching::Regex { under, .. } => (2, under.clone()),
    };
    kind(a) == kind(b)
}

/// One route per path of a server: two locations that match alike (nginx takes the
/// first). Where their checks differ the stricter
/// is kept, and said at the location left out.
fn collapse(routes: Vec<Route>, notes: &mut Notes) -> Vec<Route> {
    let mut out: Vec<Route> = Vec::new();
    for r in routes {
        match out
            .iter_mut()
            .find(|o| o.path == r.path && same_kind(o, &r))
        {
            Some(first) => merge(first, r, notes),
            None => out.push(r),
        }
    }
    out
}

/// `dup` has `first`'s path. Kept, in this order: closed, with every check that closed
/// either (each keeps its Closed note); the same checks: `first`, as nginx's first
/// location; the one that checks anyone over one that checks no one; and two different
/// checks close the route, as sluice cannot keep both (closed over open).
fn merge(first: &mut Route, dup: Route, notes: &mut Notes) {
    let (mine, theirs) = (guard::in_force(first), guard::in_force(&dup));
    let note = |at: &str, text: String| crate::Note::at(at, "location", text);
    let same = |other: &str| {
        format!(
            "{}: the same path as the route from {other} (nginx's first location of the two is kept)",
            dup.path
        )
    };
    // A closure for want of anything to answer with adds no check to a closed route.
    let unserved = |c: &Closure| matches!(c.by, ClosedBy::Unserved { .. });
    let adds = |c: &&Closure| {
        let new = !mine.closed.contains(c);
        new && (mine.closed.is_empty() || !unserved(c))
    };
    let mut closed = mine.closed.clone();
    closed.extend(theirs.closed.iter().filter(adds).cloned());
    if closed.len() > mine.closed.len() {
        first.guard = Guard { closed, ..mine };
        // Closed whatever it answered: `guard::settle` writes it 403.
        first.action = Action::None;
        let text = format!("{}, with other checks: one route, kept closed (return = 403) as the stricter, so that each check that closed either still closes it", same(&first.from));
        notes.push(note(&dup.from, text));
    } else if mine.same_checks(&theirs) || !mine.closed.is_empty() {
        let why = if mine.closed.is_empty() {
            ""
        } else {
            " (closed: the stricter)"
        };
        notes.push(note(
            &dup.from,
            format!("{}{why}; left out", same(&first.from)),
        ));
    } else if !theirs.restricts() {
        notes.push(note(&dup.from, format!(
            "{}, which checks who may reach it: that route is kept, as the stricter; this one, which lets anyone in, is left out",
            same(&first.from)
        )));
    } else if !mine.restricts() {
        notes.push(note(&first.from, format!(
            "{}, which checks who may reach it: that route is kept, as the stricter; this one, which lets anyone in, is left out",
            same(&dup.from)
        )));
        *first = dup;
    } else {
        first.guard.closed.push(Closure {
            by: ClosedBy::Collapsed {
                with: first.from.clone(),
            },
            directive: "location".into(),
            args: dup.path.clone(),
            from: dup.from.clone(),
        });
        first.action = Action::None;
    }
}

/// Drops a route that repeats another's host, path and listeners: a `server_name` two
/// `server` blocks share, which nginx answers with the first (a server's own paths are
/// one route each already, [`collapse`]).
fn dedupe(routes: Vec<Route>, notes: &mut Notes) -> Vec<Route> {
    let mut out: Vec<Route> = Vec::new();
    for r in routes {
        let same = |o: &&Route| o.host == r.host && o.path == r.path && same_kind(o, &r);
        match out.iter().find(|o| same(o) && o.listeners == r.listeners) {
            Some(first) => notes.push(crate::Note::at(
                &r.from,
                "location",
                format!("{}: the same host and path as the route from {}, whose server nginx answers that name with (the first); left out", r.path, first.from),
            )),
            None => out.push(r),
        }
    }
    out
}

/// Points each `proxy_pass` at an upstream: a block of that name, or one made for its
/// address; and gives each upstream the timeouts of the locations that use it.
fn targets(plan: &mut Plan, notes: &mut Notes) {
    let mut routes = std::mem::take(&mut plan.routes);
    for route in &mut routes {
        let Action::Upstream(target) = &route.action else {
            continue;
        };
        let (tls, authority) = match target.strip_prefix("https://") {
            Some(a) => (true, a.to_string()),
            None => (false, target.clone()),
        };
        let name = match plan.upstreams.iter().find(|u| u.name == authority) {
            Some(u) => u.name.clone(),
            None => made(plan, &authority, tls, &route.from),
        };
        let up = plan
            .upstreams
            .iter_mut()
            .find(|u| u.name == name)
            .expect("just found or made");
        up.tls |= tls;
        for (mine, theirs) in [
            (&mut up.connect_timeout, &route.connect_timeout),
            (&mut up.read_timeout, &route.read_timeout),
        ] {
            match (&*mine, theirs) {
                (None, Some(t)) => *mine = Some(t.clone()),
                (Some(m), Some(t)) if m != t => notes.push(crate::Note::at(
                    &route.from,
                    "location",
                    format!("its proxy timeout {t} differs from another location's using {name}; sluice sets timeouts per upstream: {m} kept"),
                )),
                _ => {}
            }
        }
        route.action = Action::Upstream(name);
    }
    plan.routes = routes;
}

/// An upstream for a `proxy_pass` to an address rather than to an upstream block.
fn made(plan: &mut Plan, authority: &str, tls: bool, from: &str) -> String {
    let addr = if authority.contains(':') && !authority.ends_with(']') {
        authority.to_string()
    } else {
        format!("{authority}:{}", if tls { 443 } else { 80 })
    };
    let name: String = authority
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !plan.upstreams.iter().any(|u| u.name == name) {
        plan.upstreams.push(Upstream {
            name: name.clone(),
            servers: vec![Server {
                addr,
                weight: 1,
                backup: false,
                max_conns: None,
                dns: false,
            }],
            tls,
            from: from.to_string(),
            ..Upstream::default()
        });
    }
    name
}

mod exposed;
