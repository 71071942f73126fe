//! nginx's access checks, level by level (main, `http`, `server`, `location`), each
//! inherited as its own module merges it: `allow` and `deny` as one list (a level with
//! any of its own inherits none), `auth_basic` and `auth_basic_user_file` apart (each
//! taken from above while unset here; `auth_basic off` turns the check off), `satisfy`
//! from above. A check sluice cannot make (`auth_request`, `auth_jwt`, `limit_except`,
//! an `if` answering 403 or another 4xx) closes the routes under it:
//! `sluice import` never writes a route nginx guarded without its guard.

mod settle;
pub use settle::{in_force, settle};

use crate::plan::{Auth, ClosedBy, Closure, Guard, Rule, Satisfy, Verdict};
use crate::tree::Node;
use crate::Notes;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// What the whole config tells the checks: nginx's conf prefix (the main file's
/// directory), which a relative `auth_basic_user_file` is taken from, and the
/// variables that `geo` and `map` blocks set.
#[derive(Debug, Default)]
pub struct Context {
    prefix: PathBuf,
    /// Their names, without the `$`.
    vars: Vec<String>,
}

impl Context {
    pub fn new(prefix: &Path, nodes: &[Node]) -> Context {
        let mut vars = Vec::new();
        collect_vars(nodes, &mut vars);
        Context {
            prefix: prefix.to_path_buf(),
            vars,
        }
    }
}

/// The variables `geo [$address] $var { }` and `map $source $var { }` set, at any depth
/// (a conf.d file included into `http` has them at its top).
fn collect_vars(nodes: &[Node], vars: &mut Vec<String>) {
    for d in nodes {
        let set = match d.name.as_str() {
            "geo" => d.args.last(),
            "map" => d.args.get(1),
            _ => None,
        };
        if let Some(var) = set.and_then(|v| v.strip_prefix('$')) {
            vars.push(var.to_string());
        }
        collect_vars(d.block(), vars);
    }
}

/// Variables of the client itself, named in the note of an `if` that refuses by one:
/// it checks who the client is as surely as a `geo` block does
/// (`if ($remote_addr != ...)`, `if ($ssl_client_verify != SUCCESS)`).
const CLIENT_VARS: &[&str] = &[
    "remote_addr",
    "binary_remote_addr",
    "realip_remote_addr",
    "remote_user",
    "http_authorization",
];

/// Which kind of block a level is: nginx keeps some checks to the location that holds
/// them (its `limit_except`, its `if`s) and hands the others down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Main, `http` or `server`: a server's `if`s run before any location is chosen.
    Outer,
    Location,
}

/// A directive's value and where it was set.
#[derive(Debug, Clone)]
struct Set {
    value: String,
    from: String,
}

/// The checks in force at a level, as inherited (a part of [`crate::scope::Scope`]).
#[derive(Debug, Clone, Default)]
pub struct Guards {
    context: Rc<Context>,
    access: Vec<Rule>,
    /// An `allow` or `deny` sluice cannot read: it goes with the list it is part of.
    unreadable: Option<Closure>,
    realm: Option<Set>,
    user_file: Option<Set>,
    satisfy: Option<Set>,
    /// Checks sluice cannot make, by directive, each inherited until a level sets its
    /// own (`None`: turned off, `auth_request off`).
    foreign: Vec<(String, Option<Closure>)>,
    /// `if` checks of the server: run before any of its locations is chosen.
    ifs: Vec<Closure>,
    /// The location's own `limit_except` and `if`s, which nginx runs for it alone, not
    /// for the locations nested in it.
    own: Vec<Closure>,
    /// `ssl on` (before nginx 1.25.1): every listen of the server speaks TLS.
    ssl_on: bool,
}

impl Guards {
    pub fn new(context: Context) -> Guards {
        Guards {
            context: Rc::new(context),
            ..Guards::default()
        }
    }

    /// The checks of a block inside this level, with the block's own taken in.
    pub fn enter(&self, level: Level, block: &[Node], notes: &mut Notes) -> Guards {
        let mut inner = self.clone();
        inner.own.clear();
        if block.iter().any(|d| d.name == "allow" || d.name == "deny") {
            inner.access.clear();
            inner.unreadable = None;
        }
        for d in block {
            inner.take(level, d, notes);
        }
        inner
    }

    /// Whether `d` is a check this module reads (not to be noted as untranslated).
    pub fn claims(&self, d: &Node) -> bool {
        match d.name.as_str() {
            "allow" | "deny" | "auth_basic" | "auth_basic_user_file" | "satisfy" => true,
            "limit_except" | "ssl_verify_client" | "auth_delay" => true,
            "if" => self.if_check(d).is_some(),
            name => foreign(name).is_some(),
        }
    }

    fn take(&mut self, level: Level, d: &Node, notes: &mut Notes) {
        let set = || Set {
            value: d.args.join(" "),
            from: from(d),
        };
        match d.name.as_str() {
            "allow" | "deny" => self.rule(d, notes),
            "auth_basic" => {
                if d.args.join(" ").contains('$') {
                    notes.push(d.note("a realm with a variable: sluice shows it as written"));
                }
                self.realm = Some(set());
            }
            "auth_basic_user_file" => self.user_file = Some(set()),
            "satisfy" => self.satisfy = Some(set()),
            "ssl" => self.ssl_on = d.arg(0) == Some("on"),
            // nginx core (1.17.10): a refusal's answer delayed, to slow guessing down.
            "auth_delay" => notes.push(d.note(format!(
                "{}: not translated: sluice answers at once (nginx waits this long before a 401 or 403, to slow password guessing down)",
                d.args.join(" ")
            ))),
            "limit_except" => self.own.push(closure(d, ClosedBy::Methods)),
            "ssl_verify_client" => {
                let on = d.arg(0) == Some("on");
                self.set_foreign(d, on.then_some(ClosedBy::ClientCert));
            }
            "if" => {
                let check = self.if_check(d);
                match level {
                    Level::Outer => self.ifs.extend(check),
                    Level::Location => self.own.extend(check),
                }
            }
            name => {
                if let Some(by) = foreign(name) {
                    let on = d.arg(0) != Some("off");
                    self.set_foreign(d, on.then_some(by));
                }
            }
        }
    }

    /// `allow` or `deny`: `all`, an address or a network (`unix:` matches nothing sluice
    /// listens on).
    fn rule(&mut self, d: &Node, notes: &mut Notes) {
        let verdict = if d.name == "allow" {
            Verdict::Allow
        } else {
            Verdict::Deny
        };
        let arg = d.arg(0).unwrap_or("");
        if arg == "unix:" {
            notes.push(d.note("unix: matches clients of unix-socket listeners, which sluice has none of: nothing to write"));
            return;
        }
        let Some(who) = who(arg) else {
            self.unreadable = Some(closure(d, ClosedBy::Unreadable));
            return;
        };
        if who != arg {
            notes.push(d.note(format!(
                "{arg}: its host bits set, which nginx ignores (with a warning): carried over as {who}"
            )));
        }
        self.access.push(Rule {
            verdict,
            who,
            from: from(d),
        });
    }

    fn set_foreign(&mut self, d: &Node, by: Option<ClosedBy>) {
        let check = by.map(|by| closure(d, by));
        self.foreign.retain(|(name, _)| *name != d.name);
        self.foreign.push((d.name.clone(), check));
    }

    /// An `if` whose block refuses (answers a 4xx status, or 444): sluice evaluates no
    /// `if`, so whatever its condition reads, the routes under it are closed. What it
    /// reads is named when it is a `geo` or `map` variable or one of the client's
    /// ([`CLIENT_VARS`], `$ssl_client_*`). An `if` that redirects, or answers 2xx or
    /// 5xx, refuses no one: it is noted as not translated.
    fn if_check(&self, d: &Node) -> Option<Closure> {
        let status = d.block().iter().find_map(|r| {
            let code: u16 = r.arg(0).filter(|_| r.name == "return")?.parse().ok()?;
            (400..500).contains(&code).then_some(code)
        })?;
        let condition = d.args.join(" ");
        let var = variables(&condition).find_map(|v| {
            if self.context.vars.contains(&v) {
                Some(format!("${v} (set by a geo or map block)"))
            } else if CLIENT_VARS.contains(&v.as_str()) || v.starts_with("ssl_client_") {
                Some(format!("${v}"))
            } else {
                None
            }
        });
        Some(closure(d, ClosedBy::If { status, var }))
    }

    /// A server (`server`, its header) that listens without `ssl`: nginx asks for a
    /// client certificate on TLS connections only, so `ssl_verify_client on`, wherever
    /// it was set, closes nothing there (unless `ssl on` makes its listens TLS); said
    /// in a note.
    pub fn plain(&mut self, server: &Node, notes: &mut Notes) {
        if self.ssl_on {
            return;
        }
        for (_, check) in &mut self.foreign {
            let Some(c) = check.take_if(|c| c.by == ClosedBy::ClientCert) else {
                continue;
            };
            notes.push(crate::Note::at(&c.from, &c.directive, format!(
                "{}: the server at {} listens without ssl, where nginx asks no one for a certificate: its routes are not closed for it, nothing to write",
                c.args,
                from(server)
            )));
        }
    }

    /// What a route here is guarded by.
    pub fn guard(&self) -> Guard {
        let mut closed: Vec<Closure> = self.foreign.iter().filter_map(|(_, c)| c.clone()).collect();
        closed.extend(self.ifs.iter().chain(&self.own).cloned());
        closed.extend(self.unreadable.clone());
        let auth = match (&self.realm, &self.user_file) {
            (Some(realm), Some(file)) if realm.value != "off" => {
                if file.value.contains('$') {
                    closed.push(Closure {
                        by: ClosedBy::UserFileVariable,
                        directive: "auth_basic_user_file".into(),
                        args: file.value.clone(),
                        from: file.from.clone(),
                    });
                }
                Some(self.auth(realm, file))
            }
            _ => None,
        };
        let any = self.satisfy.as_ref().filter(|s| s.value == "any");
        Guard {
            access: self.access.clone(),
            auth,
            satisfy: if any.is_some() {
                Satisfy::Any
            } else {
                Satisfy::All
            },
            satisfy_from: any.map(|s| s.from.clone()),
            closed,
            not_reached: Vec::new(),
        }
    }

    /// `auth_basic` with its user file, taken from nginx's conf prefix when relative.
    fn auth(&self, realm: &Set, file: &Set) -> Auth {
        let relative = !Path::new(&file.value).is_absolute();
        let user_file = if relative {
            self.context.prefix.join(&file.value).display().to_string()
        } else {
            file.value.clone()
        };
        Auth {
            realm: realm.value.clone(),
            user_file,
            realm_from: realm.from.clone(),
            file_from: file.from.clone(),
            relative: relative.then(|| file.value.clone()),
        }
    }
}

/// The checks sluice cannot make, by directive name: `auth_request`, `auth_jwt`, and
/// any other module's `auth_NAME` (`auth_pam`, `auth_ldap`, `auth_digest`; their
/// settings are `auth_NAME_SETTING`), and OpenResty's `access_by_lua*`.
fn foreign(name: &str) -> Option<ClosedBy> {
    match name {
        "auth_request" => Some(ClosedBy::Subrequest),
        "auth_jwt" => Some(ClosedBy::Jwt),
        "auth_basic" => None,
        // nginx core: how long a refusal waits, not a check.
        "auth_delay" => None,
        "access_by_lua" | "access_by_lua_block" | "access_by_lua_file" => Some(ClosedBy::Module),
        _ => name
            .strip_prefix("auth_")
            .filter(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_alphanumeric()))
            .map(|_| ClosedBy::Module),
    }
}

fn from(d: &Node) -> String {
    format!("{}:{}", d.file, d.line)
}

fn closure(d: &Node, by: ClosedBy) -> Closure {
    Closure {
        by,
        directive: d.name.clone(),
        args: d.args.join(" "),
        from: from(d),
    }
}

/// The names of the variables `text` reads (`$name`, `${name}`).
fn variables(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split('$').skip(1).map(|after| {
        let after = after.strip_prefix('{').unwrap_or(after);
        after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    })
}

/// An `allow`/`deny` argument as sluice writes it: `all`, an address, or a network with
/// its host bits cleared (as nginx clears them); `None` for anything else.
fn who(arg: &str) -> Option<String> {
    if arg == "all" {
        return Some(arg.into());
    }
    let Some((addr, bits)) = arg.split_once('/') else {
        return arg.parse::<IpAddr>().ok().map(|_| arg.to_string());
    };
    let bits: u32 = bits.parse().ok()?;
    let net = match addr.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask))
        }
        IpAddr::V6(v6) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask))
        }
        _ => return None,
    };
    Some(if net == addr.parse::<IpAddr>().ok()? {
        arg.to_string()
    } else {
        format!("{net}/{bits}")
    })
}

#[cfg(test)]
mod tests {
    use super::{foreign, variables, who};
    use crate::plan::ClosedBy;

    #[test]
    fn addresses_and_networks_are_read_as_nginx_reads_them() {
        assert_eq!(who("all").as_deref(), Some("all"));
        assert_eq!(who("10.0.0.0/8").as_deref(), Some("10.0.0.0/8"));
        assert_eq!(who("10.1.2.3/8").as_deref(), Some("10.0.0.0/8"));
        assert_eq!(who("2001:db8::/32").as_deref(), Some("2001:db8::/32"));
        assert_eq!(who("2001:db8::1/32").as_deref(), Some("2001:db8::/32"));
        assert_eq!(who("127.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(who("0.0.0.0/0").as_deref(), Some("0.0.0.0/0"));
        assert_eq!(who("10.0.0.0/33"), None);
        assert_eq!(who("example.com"), None);
        assert_eq!(who("$remote_addr"), None);
    }

    #[test]
    fn checks_are_known_by_name_and_their_settings_are_not_checks() {
        assert_eq!(foreign("auth_request"), Some(ClosedBy::Subrequest));
        assert_eq!(foreign("auth_jwt"), Some(ClosedBy::Jwt));
        assert_eq!(foreign("auth_pam"), Some(ClosedBy::Module));
        assert_eq!(foreign("access_by_lua_block"), Some(ClosedBy::Module));
        for setting in [
            "auth_basic",
            "auth_delay",
            "auth_request_set",
            "auth_jwt_key_file",
            "access_log",
        ] {
            assert_eq!(foreign(setting), None, "{setting}");
        }
    }

    #[test]
    fn variables_are_found_in_conditions() {
        let found: Vec<String> = variables("($allowed = 0) ${blocked}x").collect();
        assert_eq!(found, ["allowed", "blocked"]);
    }
}
