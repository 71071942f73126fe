//! Load-test scenarios: what each virtual user does, in order, as a TOML file.
//!
//! ```toml
//! target = "http://127.0.0.1:8080"   # where the steps' paths go
//! users = [50, 100]                   # steps of users (the closed model)
//! duration = "30s"                    # each step's length (or iterations = N runs)
//! ramp = "5s"
//! rooms = 31                          # {room} is the user's index modulo this
//!
//! [[step]]
//! name = "home"                       # the label its samples are reported under
//! http = "GET /?room={room}"          # METHOD PATH; {user} and {room} are replaced
//! expect_status = 200                 # or a list; anything else is an error
//! expect_body = "Welcome"             # the body must contain this
//! think = "100ms"                     # pause after the step
//! ```
//!
//! Every problem is reported at once, each with `file:line:col` and a hint, the way
//! config errors are.

use crate::target::{Target, TargetError};
use sluice_config::toml_edit::{Item, TableLike, Value};
use sluice_config::{ConfigError, Errors, Reader};
use std::time::Duration;

const TOP_KEYS: &[&str] = &[
    "target",
    "users",
    "duration",
    "iterations",
    "ramp",
    "rooms",
    "step",
];
const STEP_KEYS: &[&str] = &[
    "name",
    "http",
    "headers",
    "body",
    "expect_status",
    "expect_body",
    "think",
    "repeat",
];

/// Text with `{user}` and `{room}` in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template(Vec<Part>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    User,
    Room,
}

impl Template {
    pub fn parse(text: &str) -> Template {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(i) = rest.find('{') {
            let (var, len) = if rest[i..].starts_with("{user}") {
                (Some(Part::User), 6)
            } else if rest[i..].starts_with("{room}") {
                (Some(Part::Room), 6)
            } else {
                (None, 1)
            };
            parts.push(Part::Text(
                rest[..i + if var.is_some() { 0 } else { 1 }].to_string(),
            ));
            if let Some(v) = var {
                parts.push(v);
            }
            rest = &rest[i + len..];
        }
        parts.push(Part::Text(rest.to_string()));
        parts.retain(|p| !matches!(p, Part::Text(t) if t.is_empty()));
        Template(parts)
    }

    pub fn render(&self, user: usize, room: usize) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::User => user.to_string(),
                Part::Room => room.to_string(),
            })
            .collect()
    }
}

/// What a step does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Http {
        method: String,
        path: Template,
        headers: Vec<(String, Template)>,
        body: Template,
        /// Statuses that pass; empty: any 2xx or 3xx.
        expect_status: Vec<u16>,
        expect_body: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioStep {
    pub name: String,
    pub action: Action,
    pub think: Duration,
    /// How many times in a row the step runs.
    pub repeat: u32,
}

/// A whole scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    pub target: Target,
    pub users: Vec<usize>,
    pub duration: Option<Duration>,
    pub iterations: Option<u64>,
    pub ramp: Duration,
    pub rooms: usize,
    pub steps: Vec<ScenarioStep>,
}

impl Scenario {
    /// Reads a scenario from `text`; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, Errors> {
        let doc = Reader::parse_document(file, text).map_err(|e| Errors(vec![e]))?;
        let mut r = Reader::new(file, text);
        let root = doc.as_table();
        r.only_keys(root, TOP_KEYS, "a scenario");
        let target = target(&mut r, root);
        let users = users(&mut r, root);
        let duration = r.timeout(root, "duration");
        let iterations = r.integer(root, "iterations", 1 << 40);
        let given = usize::from(root.get("duration").is_some())
            + usize::from(root.get("iterations").is_some());
        if given != 1 {
            let span = root.get("iterations").and_then(Item::span);
            r.error(
                span,
                "give the steps a `duration` or `iterations`, one of them",
                "e.g. duration = \"30s\" (each step that long) or iterations = 10 (runs per user)",
            );
        }
        let ramp = r.duration(root, "ramp").unwrap_or_default();
        let rooms = r.integer(root, "rooms", 1 << 20).unwrap_or(1).max(1) as usize;
        let steps = steps(&mut r, root);
        if !r.errors.is_empty() {
            r.errors.sort_by_key(|e| (e.line, e.col));
            return Err(Errors(r.errors));
        }
        Ok(Scenario {
            target: target.expect("checked above"),
            users,
            duration,
            iterations,
            ramp,
            rooms,
            steps,
        })
    }

    /// Reads the scenario file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Scenario, Errors> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Errors(vec![ConfigError::whole_file(
                &name,
                format!("cannot read the scenario: {e}"),
                "check the path given with --scenario",
            )])
        })?;
        Scenario::parse(&name, &text)
    }
}

fn target(r: &mut Reader, root: &dyn TableLike) -> Option<Target> {
    let Some((url, span)) = r.string(root, "target") else {
        if root.get("target").is_none() {
            r.error(
                None,
                "a scenario needs a `target`",
                "e.g. target = \"http://127.0.0.1:8080\"",
            );
        }
        return None;
    };
    match Target::parse(&url) {
        Ok(t) if t.path == "/" => Some(t),
        Ok(_) => {
            r.error(
                span,
                "`target` is a base URL: no path",
                "give paths in the steps, e.g. http = \"GET /login\"",
            );
            None
        }
        Err(e) => {
            r.error(span, format!("`target`: {e}"), hint_for(&e));
            None
        }
    }
}

fn hint_for(e: &TargetError) -> &'static str {
    match e {
        TargetError::Resolve { .. } => "check the host name, or give an IP address",
        _ => "write it as http://host:port",
    }
}

/// `users = [50, 100]` or `users = 50`.
fn users(r: &mut Reader, root: &dyn TableLike) -> Vec<usize> {
    let Some(item) = root.get("users") else {
        r.error(
            None,
            "a scenario needs `users`",
            "e.g. users = [50, 100] (one step each)",
        );
        return Vec::new();
    };
    let values: Vec<&Value> = match item.as_value() {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let mut users = Vec::new();
    for v in &values {
        match v.as_integer() {
            Some(n) if (1..=1_000_000).contains(&n) => users.push(n as usize),
            _ => r.error(
                v.span(),
                "`users` takes whole numbers from 1 to 1,000,000",
                "e.g. users = [50, 100]",
            ),
        }
    }
    if values.is_empty() {
        r.error(item.span(), "`users` is empty", "e.g. users = [50, 100]");
    }
    users
}

fn steps(r: &mut Reader, root: &dyn TableLike) -> Vec<ScenarioStep> {
    let Some(item) = root.get("step") else {
        r.error(
            None,
            "a scenario needs at least one [[step]]",
            "add [[step]] tables, e.g. http = \"GET /\"",
        );
        return Vec::new();
    };
    let Some(tables) = item.as_array_of_tables() else {
        r.error(
            item.span(),
            "`step` must be an array of tables",
            "write each step as [[step]]",
        );
        return Vec::new();
    };
    tables
        .iter()
        .enumerate()
        .filter_map(|(i, t)| step(r, t, i))
        .collect()
}

fn step(r: &mut Reader, t: &dyn TableLike, index: usize) -> Option<ScenarioStep> {
    r.only_keys(t, STEP_KEYS, "a [[step]]");
    // Every key is checked, whatever else is wrong with the step.
    let think = r.duration(t, "think").unwrap_or_default();
    let repeat = r.integer(t, "repeat", 1_000_000).unwrap_or(1).max(1) as u32;
    let headers = headers(r, t);
    let body = r.string(t, "body").map_or(String::new(), |(b, _)| b);
    let expect_status = statuses(r, t);
    let expect_body = r.string(t, "expect_body").map(|(b, _)| b);
    let name = r.string(t, "name").map(|(n, _)| n);
    let (method, path, http) = http(r, t)?;
    Some(ScenarioStep {
        name: name.unwrap_or_else(|| format!("{} {}", index + 1, http)),
        action: Action::Http {
            method,
            path: Template::parse(&path),
            headers,
            body: Template::parse(&body),
            expect_status,
            expect_body,
        },
        think,
        repeat,
    })
}

/// `http = "METHOD PATH"`: the method, the path, and the text as written.
fn http(r: &mut Reader, t: &dyn TableLike) -> Option<(String, String, String)> {
    let Some((http, span)) = r.string(t, "http") else {
        if t.get("http").is_none() {
            let span = t
                .iter()
                .next()
                .and_then(|(k, _)| t.key(k))
                .and_then(|k| k.span());
            r.error(
                span,
                "a [[step]] needs what it does",
                "e.g. http = \"GET /\"",
            );
        }
        return None;
    };
    let parts = http
        .split_once(' ')
        .filter(|(m, p)| !m.is_empty() && p.trim().starts_with('/'));
    let Some((method, path)) = parts else {
        r.error(
            span,
            format!("`http` = \"{http}\" is not METHOD PATH"),
            "e.g. http = \"POST /login\"",
        );
        return None;
    };
    Some((method.to_string(), path.trim().to_string(), http.clone()))
}

fn headers(r: &mut Reader, t: &dyn TableLike) -> Vec<(String, Template)> {
    let Some(item) = t.get("headers") else {
        return Vec::new();
    };
    let Some(array) = item.as_array() else {
        r.error(
            item.span(),
            "`headers` must be a list of \"Name: value\"",
            "e.g. headers = [\"Accept: application/json\"]",
        );
        return Vec::new();
    };
    let mut out = Vec::new();
    for v in array.iter() {
        match v.as_str().and_then(|h| h.split_once(':')) {
            Some((name, value)) if !name.trim().is_empty() && !name.contains(' ') => {
                out.push((name.trim().to_string(), Template::parse(value.trim())));
            }
            _ => r.error(
                v.span(),
                "a header must be \"Name: value\"",
                "e.g. \"Content-Type: application/json\"",
            ),
        }
    }
    out
}

fn statuses(r: &mut Reader, t: &dyn TableLike) -> Vec<u16> {
    let Some(item) = t.get("expect_status") else {
        return Vec::new();
    };
    let values: Vec<&Value> = match item.as_value() {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let mut out = Vec::new();
    for v in values {
        match v.as_integer() {
            Some(n) if (100..=599).contains(&n) => out.push(n as u16),
            _ => r.error(
                v.span(),
                "`expect_status` takes HTTP statuses, 100 to 599",
                "e.g. expect_status = [200, 204]",
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates() {
        let t = Template::parse("/chat?room={room}&u={user}&{other}");
        assert_eq!(t.render(7, 3), "/chat?room=3&u=7&{other}");
        assert_eq!(Template::parse("plain").render(1, 1), "plain");
    }

    #[test]
    fn a_scenario_reads() {
        let text = "target = \"http://127.0.0.1:8080\"\nusers = [2, 4]\nduration = \"1s\"\nrooms = 3\n\n[[step]]\nname = \"home\"\nhttp = \"GET /?room={room}\"\nexpect_status = 200\nexpect_body = \"ok\"\nthink = \"10ms\"\n\n[[step]]\nhttp = \"POST /up\"\nbody = \"hi {user}\"\nheaders = [\"Content-Type: text/plain\"]\nrepeat = 3\n";
        let s = Scenario::parse("s.toml", text).unwrap();
        assert_eq!((s.users.clone(), s.rooms), (vec![2, 4], 3));
        assert_eq!(s.duration, Some(Duration::from_secs(1)));
        assert_eq!(s.steps.len(), 2);
        assert_eq!(
            (s.steps[0].name.as_str(), s.steps[0].think),
            ("home", Duration::from_millis(10))
        );
        assert_eq!(
            (s.steps[1].name.as_str(), s.steps[1].repeat),
            ("2 POST /up", 3)
        );
        let Action::Http { expect_status, .. } = &s.steps[0].action;
        assert_eq!(expect_status, &vec![200]);
    }

    #[test]
    fn every_problem_is_reported_with_its_position() {
        let text = "target = \"http://127.0.0.1:8080/x\"\nusers = [0]\nduration = \"soon\"\n\n[[step]]\nhtp = \"GET /\"\n\n[[step]]\nhttp = \"GET nowhere\"\nexpect_status = 99\n";
        let errors = Scenario::parse("bad.toml", text).unwrap_err().to_string();
        for expected in [
            "bad.toml:1:10: `target` is a base URL",
            "bad.toml:2:10: `users` takes whole numbers",
            "bad.toml:3:12: `duration` is not a duration",
            "bad.toml:6:1: unknown key `htp` in a [[step]] (did you mean `http`?)",
            "bad.toml:9:8: `http` = \"GET nowhere\" is not METHOD PATH",
            "bad.toml:10:17: `expect_status` takes HTTP statuses",
        ] {
            assert!(
                errors.contains(expected),
                "missing {expected:?} in:\n{errors}"
            );
        }
        let syntax = Scenario::parse("s.toml", "users = [1\n")
            .unwrap_err()
            .to_string();
        assert!(syntax.starts_with("s.toml:"), "{syntax}");
    }
}
