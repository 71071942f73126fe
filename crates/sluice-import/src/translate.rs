//! The walk over nginx's contexts (main, `http`, `server`, `location`), with what each
//! level inherits from the one above, into a [`Plan`].

use crate::guard::{Context, Guards, Level};
use crate::plan::{duration, unknown_variable, Limit, Plan};
pub use crate::scope::Scope;
use crate::tree::Node;
use crate::upstream::upstream;
use crate::Notes;

/// The translation under way.
#[derive(Default)]
pub struct Translator {
    pub plan: Plan,
    /// The `server` blocks read so far; their routes are placed once all are known.
    servers: Vec<server::Draft>,
}

/// Translates a whole config (a main file, or a conf.d file of `server` blocks);
/// `prefix` is nginx's conf prefix, the main file's directory.
pub fn translate(nodes: &[Node], prefix: &std::path::Path, notes: &mut Notes) -> Plan {
    let mut t = Translator::default();
    let scope = Scope::new(Guards::new(Context::new(prefix, nodes)));
    t.level(nodes, &scope, notes);
    server::finish(&mut t.plan, t.servers, notes);
    if !t.plan.access_log_set && !t.plan.routes.is_empty() {
        let http = nodes.iter().find(|d| d.name == "http").or(nodes.first());
        if let Some(at) = http {
            let mut note = at.note("none: nginx logs every request by default (logs/access.log); sluice logs none unless access_log is set: the result has it commented out, to turn on");
            note.directive = "access_log".into();
            notes.push(note);
        }
    }
    t.plan
}

impl Translator {
    /// The main or `http` level: both may hold `server` and `upstream` blocks (a file
    /// meant for inclusion in `http` has them at its top).
    fn level(&mut self, nodes: &[Node], scope: &Scope, notes: &mut Notes) {
        for d in nodes.iter().filter(|d| d.name == "limit_req_zone") {
            self.limit_zone(d, notes);
        }
        let scope = scope.enter(Level::Outer, nodes, &mut self.plan, notes);
        for d in nodes {
            self.directive(d, &scope, notes);
        }
    }

    fn directive(&mut self, d: &Node, scope: &Scope, notes: &mut Notes) {
        match d.name.as_str() {
            "http" => self.level(d.block(), scope, notes),
            "events" => self.events(d, notes),
            "upstream" => {
                let up = upstream(d, notes);
                self.plan.upstreams.push(up);
            }
            "server" => self.server(d, scope, notes),
            "worker_processes" => self.workers(d, notes),
            "access_log" => self.access_log(d, notes),
            "keepalive_timeout" => self.plan.keepalive_timeout = d.arg(0).and_then(duration),
            "set_real_ip_from" => self.trust(d, notes),
            "resolver" => self.resolver(d, notes),
            "limit_req_zone" => {}
            _ if scope.claims(d) => {}
            _ => crate::known::note(d, notes),
        }
    }

    fn events(&mut self, d: &Node, notes: &mut Notes) {
        for e in d.block() {
            if e.name == "worker_connections" {
                notes.push(e.note(format!(
                    "{}: sluice has no per-worker connection cap: it takes as many client connections as its open-file limit allows less a reserve for connections to servers (the limit raised to the hard limit at start; the start-up line says both figures), so this number no longer caps users",
                    e.arg(0).unwrap_or("")
                )));
            } else {
                crate::known::note(e, notes);
            }
        }
    }

    /// `worker_processes`: `auto` is every core; a number is carried over and said, since
    /// it caps sluice at that many cores however many the machine has.
    fn workers(&mut self, d: &Node, notes: &mut Notes) {
        self.plan.workers = match d.arg(0) {
            Some("auto") => Some(0),
            n => n.and_then(|n| n.parse().ok()),
        };
        if let Some(n) = self.plan.workers.filter(|n| *n > 0) {
            notes.push(d.note(format!(
                "carried over as workers = {n}: sluice uses {n} core{} at most however many the machine has; workers = 0 (or no key) uses every core",
                if n == 1 { "" } else { "s" }
            )));
        }
    }

    fn access_log(&mut self, d: &Node, notes: &mut Notes) {
        self.plan.access_log_set = true;
        match d.arg(0) {
            Some("off") | None => {}
            Some(path) => {
                self.plan.access_log.get_or_insert_with(|| path.to_string());
                if d.args.len() > 1 {
                    notes.push(d.note("its format is nginx's combined with upstream timings appended (access_log_format = \"json\" for JSON); a log_format is not translated"));
                }
            }
        }
    }

    /// `resolver ADDR... [valid=TIME] [ipv6=off]`: the DNS servers of `resolve` servers.
    fn resolver(&mut self, d: &Node, notes: &mut Notes) {
        for arg in &d.args {
            let bare = arg.strip_prefix('[').and_then(|a| a.strip_suffix(']'));
            let addr = bare.unwrap_or(arg);
            let is_addr = addr.parse::<std::net::IpAddr>().is_ok()
                || addr.parse::<std::net::SocketAddr>().is_ok();
            if let Some(valid) = arg.strip_prefix("valid=") {
                self.plan.resolver_valid = duration(valid);
            } else if arg.contains('=') {
                notes.push(d.note(format!("{arg}: not translated")));
            } else if !is_addr {
                notes.push(d.note(format!(
                    "{arg}: sluice takes name servers by address; left out"
                )));
            } else if !self.plan.resolver.iter().any(|r| r == addr) {
                self.plan.resolver.push(addr.to_string());
            }
        }
    }

    /// `set_real_ip_from ADDR`: a proxy whose forwarding headers are believed.
    fn trust(&mut self, d: &Node, notes: &mut Notes) {
        let Some(addr) = d.arg(0) else {
            return;
        };
        if addr.starts_with("unix:") {
            return notes.push(d.note("unix: sluice has no unix-socket listeners; left out"));
        }
        notes.push(d.note(format!(
            "{addr}: in trusted_proxies, whose X-Real-IP, X-Forwarded-Proto and X-Forwarded-Host sluice keeps (and to whose X-Forwarded-For it appends); unlike real_ip_header, the client address sluice logs and limits by stays the connection's (or its PROXY protocol header's)"
        )));
        if !self.plan.trusted_proxies.iter().any(|t| t == addr) {
            self.plan.trusted_proxies.push(addr.to_string());
        }
    }

    /// `limit_req_zone KEY zone=NAME:SIZE rate=Nr/s`.
    fn limit_zone(&mut self, d: &Node, notes: &mut Notes) {
        let param = |key: &str| {
            d.args
                .iter()
                .find_map(|a| a.strip_prefix(key)?.strip_prefix('='))
        };
        let (Some(key), Some(zone), Some(rate)) = (d.arg(0), param("zone"), param("rate")) else {
            notes.push(d.note("not translated: a key, zone= and rate= are needed"));
            return;
        };
        let name = zone.split(':').next().unwrap_or(zone).to_string();
        let rate = rate.replace("r/", "/");
        let key = if key == "$binary_remote_addr" {
            "$remote_addr"
        } else {
            key
        };
        if let Some(var) = unknown_variable(key) {
            notes.push(d.note(format!("{key}: sluice has no {var}; not translated")));
            return;
        }
        self.plan.limits.push(Limit {
            name,
            rate,
            burst: None,
            key: key.to_string(),
        });
    }
}

mod server;
