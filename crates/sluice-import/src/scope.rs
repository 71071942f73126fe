//! What each level of nginx's contexts (main, `http`, `server`, `location`) hands down
//! to the levels under it, by nginx's rule for array directives such as
//! `proxy_set_header`: a level that sets any of them inherits none from above (and the
//! access checks, by their modules' rules, in `guard`).

use crate::compress::{self, Compression};
use crate::guard::{Guards, Level};
use crate::plan::{duration, unknown_variable, Plan, Route};
use crate::tree::Node;
use crate::Notes;

/// What a level inherits (nginx's rule for array directives such as `proxy_set_header`
/// and `add_header`: a level that sets any of them inherits none from above).
#[derive(Debug, Clone, Default)]
pub struct Scope {
    request_set: Vec<(String, String)>,
    request_remove: Vec<String>,
    response_set: Vec<(String, String)>,
    response_remove: Vec<String>,
    pub root: Option<String>,
    certs: Vec<(String, String)>,
    cert: Option<String>,
    key: Option<String>,
    connect_timeout: Option<String>,
    read_timeout: Option<String>,
    limits: Vec<String>,
    compress: Compression,
    guards: Guards,
}

impl Scope {
    /// The main level's scope: nothing inherited yet, the access checks knowing the
    /// config as a whole.
    pub fn new(guards: Guards) -> Scope {
        Scope {
            guards,
            ..Scope::default()
        }
    }

    /// Whether `d` is one of the directives a scope takes in (not a directive to note
    /// as not translated).
    pub fn claims(&self, d: &Node) -> bool {
        let name = d.name.as_str();
        INHERITED.contains(&name) || compress::DIRECTIVES.contains(&name) || self.guards.claims(d)
    }

    /// Puts what the scope sets on `route`.
    pub fn apply(&self, route: &mut Route) {
        route.request_set = self.request_set.clone();
        route.request_remove = self.request_remove.clone();
        route.response_set = self.response_set.clone();
        route.response_remove = self.response_remove.clone();
        route.limits = self.limits.clone();
        route.connect_timeout = self.connect_timeout.clone();
        route.read_timeout = self.read_timeout.clone();
        route.guard = self.guards.guard();
        route.compress = self.compress.clone();
    }

    /// A server (`server`, its header) that listens without `ssl`: see
    /// [`Guards::plain`].
    pub fn plain(&mut self, server: &Node, notes: &mut Notes) {
        self.guards.plain(server, notes);
    }

    /// The certificate and key in effect here, if both are set.
    pub fn certs(&self) -> &[(String, String)] {
        &self.certs
    }

    /// The scope of a block inside this one, with the block's own directives taken in.
    pub(crate) fn enter(
        &self,
        level: Level,
        block: &[Node],
        plan: &mut Plan,
        notes: &mut Notes,
    ) -> Scope {
        let mut inner = self.clone();
        let sets = |name: &str| block.iter().any(|d| d.name == name);
        if sets("proxy_set_header") {
            inner.request_set.clear();
            inner.request_remove.clear();
        }
        if sets("add_header") {
            inner.response_set.clear();
        }
        if sets("proxy_hide_header") {
            inner.response_remove.clear();
        }
        if sets("limit_req") {
            inner.limits.clear();
        }
        for d in block {
            inner.take(d, plan, notes);
        }
        inner.guards = self.guards.enter(level, block, notes);
        inner
    }

    /// Takes in one directive of the level, if it is one that is inherited.
    fn take(&mut self, d: &Node, plan: &mut Plan, notes: &mut Notes) {
        let (a0, a1) = (d.arg(0).unwrap_or(""), d.arg(1).unwrap_or(""));
        match d.name.as_str() {
            "proxy_set_header" => self.set_header(d, a0, a1, notes),
            "add_header" => match unknown_variable(a1) {
                Some(var) => {
                    notes.push(d.note(format!("{a0} {a1}: sluice has no {var}; left out")))
                }
                None => self.response_set.push((a0.into(), a1.into())),
            },
            "proxy_hide_header" => self.response_remove.push(a0.into()),
            "root" => self.root(d, a0, notes),
            "ssl_certificate" => self.cert = Some(a0.into()),
            "ssl_certificate_key" => self.key = Some(a0.into()),
            "proxy_connect_timeout" => self.connect_timeout = duration(a0),
            "proxy_read_timeout" => self.read_timeout = duration(a0),
            "limit_req" => self.limit(d, plan, notes),
            name if compress::DIRECTIVES.contains(&name) => self.compress.take(d, notes),
            _ => {}
        }
        if let (Some(c), Some(k)) = (&self.cert, &self.key) {
            let pair = (c.clone(), k.clone());
            if !self.certs.contains(&pair) {
                self.certs = vec![pair];
            }
        }
    }

    /// `root DIR` at any level. A directory named by a variable overrides the inherited
    /// one, and sluice cannot serve it: no root from here down.
    fn root(&mut self, d: &Node, dir: &str, notes: &mut Notes) {
        self.root = (!dir.contains('$')).then(|| dir.into());
        if self.root.is_none() {
            notes.push(d.note(format!(
                "{dir}: a directory named by a variable; sluice's root is a fixed directory: left out"
            )));
        }
    }

    fn set_header(&mut self, d: &Node, name: &str, value: &str, notes: &mut Notes) {
        let lower = name.to_ascii_lowercase();
        let done_by_sluice = match lower.as_str() {
            "host" => value == "$host" || value == "$http_host",
            "x-forwarded-for" => value == "$proxy_add_x_forwarded_for",
            "x-real-ip" => value == "$remote_addr",
            "x-forwarded-proto" => value == "$scheme",
            "x-forwarded-host" => value == "$host" || value == "$http_host",
            "upgrade" | "connection" => true,
            _ => false,
        };
        // What sluice sends itself first: its values name variables sluice has no use for
        // ($proxy_add_x_forwarded_for, $connection_upgrade), which is not a loss.
        if done_by_sluice {
            notes.push(d.note(format!(
                "{name} {value}: sluice sends it itself (Host as the client sent it; X-Forwarded-For, X-Real-IP, X-Forwarded-Proto and -Host set; WebSocket upgrades passed through): nothing to write"
            )));
        } else if let Some(var) = unknown_variable(value) {
            notes.push(d.note(format!("{name} {value}: sluice has no {var}; left out")));
        } else if value.is_empty() {
            self.request_remove.push(name.into());
        } else {
            self.request_set.push((name.into(), value.into()));
        }
    }

    fn limit(&mut self, d: &Node, plan: &mut Plan, notes: &mut Notes) {
        let param = |key: &str| {
            d.args
                .iter()
                .find_map(|a| a.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        };
        let Some(zone) = param("zone") else {
            return;
        };
        let burst = param("burst").and_then(|b| b.parse().ok());
        match plan.limits.iter_mut().find(|l| l.name == zone) {
            Some(l) => {
                l.burst = l.burst.max(burst);
                self.limits.push(zone.to_string());
                if !d.args.iter().any(|a| a == "nodelay") {
                    notes.push(d.note("without nodelay nginx delays requests over the rate (up to burst); sluice answers them 429 at once, as with nodelay"));
                }
            }
            None => notes.push(d.note(format!(
                "zone={zone}: no limit_req_zone of that name; not translated"
            ))),
        }
    }
}

/// Directives a level's [`Scope`] takes in (for the routes under it).
pub(crate) const INHERITED: &[&str] = &[
    "proxy_set_header",
    "add_header",
    "proxy_hide_header",
    "root",
    "ssl_certificate",
    "ssl_certificate_key",
    "proxy_connect_timeout",
    "proxy_read_timeout",
    "limit_req",
];
