//! An HTTP Request sampler as an `http` step: its method and path, its arguments (a
//! query for a GET, a form body for a POST, or the raw body), the HTTP Request
//! Defaults in scope for what it leaves empty, the headers of the Header Managers in
//! scope, and the checks and extractions under it. A scenario has one target: the
//! first server named (by the defaults or a sampler) is it, and a sampler to another
//! is dropped.

use super::checks::{Check, CheckAt, Extract, Pause};
use super::tree::{Element, Props};
use super::Cx;
use crate::scenario::is_name;
use std::collections::BTreeSet;
use std::fmt::Write;

/// Where requests go: the scenario's `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub port: u16,
}

impl Origin {
    pub fn url(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!("{}://{host}:{}", self.scheme, self.port)
    }
}

/// The HTTP Request Defaults in scope: what a sampler leaves empty.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    protocol: String,
    domain: String,
    port: String,
    path: String,
    timeout: String,
    /// Arguments added to every sampler's.
    args: Vec<Props>,
}

impl Defaults {
    /// These, with what the HTTP Request Defaults `p` (nearer the samplers) sets.
    pub fn merged(&self, p: &Props) -> Defaults {
        let pick = |mine: &str, key: &str| or(p.text(key), mine).to_string();
        let mut args = self.args.clone();
        args.extend(arguments(p));
        Defaults {
            protocol: pick(&self.protocol, "HTTPSampler.protocol"),
            domain: pick(&self.domain, "HTTPSampler.domain"),
            port: pick(&self.port, "HTTPSampler.port"),
            path: pick(&self.path, "HTTPSampler.path"),
            timeout: pick(&self.timeout, "HTTPSampler.response_timeout"),
            args,
        }
    }

    /// The server they name, when it is known before the run.
    pub fn origin(&self, cx: &mut Cx) -> Option<Origin> {
        if self.domain.trim().is_empty() {
            return None;
        }
        origin(cx, &self.protocol, &self.domain, &self.port).ok()
    }
}

/// `text`, or `fallback` when it is empty.
fn or<'a>(text: &'a str, fallback: &'a str) -> &'a str {
    if text.trim().is_empty() {
        fallback
    } else {
        text
    }
}

fn arguments(p: &Props) -> Vec<Props> {
    p.element("HTTPsampler.Arguments")
        .map(|a| {
            a.items("Arguments.arguments")
                .into_iter()
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// A scenario step, as it will be written.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: String,
    /// Where it came from: a step dropped later is listed with these.
    pub line: usize,
    pub place: String,
    pub class: String,
    pub method: String,
    /// The path and query, a scenario template.
    pub path: String,
    pub headers: Vec<String>,
    pub body: Option<String>,
    pub expect_status: Vec<u16>,
    pub expect_body: Option<String>,
    pub extract: Vec<Extract>,
    pub timeout_ms: Option<u64>,
    pub repeat: u32,
    /// JMeter's timers in its scope: pauses before it.
    pub before: Vec<Pause>,
    /// The pause after it (sluice's think), laid out by `shape`.
    pub think: Vec<Pause>,
    /// The scenario variables it uses.
    pub uses: BTreeSet<String>,
    /// Its `if` (an If Controller's simple condition), as the scenario writes it.
    pub condition: Option<String>,
}

/// What applies to the samplers under one level of the tree.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// The Header Managers' headers, a nearer one replacing a farther one's of a name.
    pub headers: Vec<(String, String)>,
    pub defaults: Defaults,
    /// Timers: each a pause before every sampler in scope.
    pub timers: Vec<Pause>,
    pub checks: Vec<CheckAt>,
    /// Extractors: under a sampler only.
    pub extracts: Vec<Extract>,
}

/// The step for the HTTP Request `el` (a child of the place `place`); `None` (listed as
/// dropped) when it cannot be one.
pub fn step(cx: &mut Cx, el: &Element, scope: &Scope, place: &str) -> Option<Step> {
    build(cx, el, scope, place)
        .map_err(|why| cx.drop(el, place, why))
        .ok()
}

fn build(cx: &mut Cx, el: &Element, scope: &Scope, place: &str) -> Result<Step, String> {
    let p = &el.props;
    let d = &scope.defaults;
    let files = p.element("HTTPsampler.Files");
    if p.flag("HTTPSampler.DO_MULTIPART_POST") == Some(true)
        || files.is_some_and(|f| !f.items("HTTPFileArgs.files").is_empty())
    {
        return Err("it sends a multipart/form-data body (files): not translated".into());
    }
    let (origin, raw_path) = target(cx, p, d)?;
    same_target(cx, &origin)?;
    let method = or(p.text("HTTPSampler.method"), "GET")
        .trim()
        .to_ascii_uppercase();
    let mut t = Texts::default();
    let (path, body, form) = request(cx, p, d, &method, &raw_path, &mut t);
    let headers = headers(cx, scope, form, &mut t);
    if !t.problems.is_empty() {
        t.problems.dedup();
        return Err(t.problems.join("; "));
    }
    let place = super::tree::label(place, el);
    sampler_notes(cx, p, &place);
    let mut step = Step {
        name: or(&el.name, &format!("{method} {path}")).to_string(),
        line: el.line,
        place,
        class: el.class.clone(),
        method,
        path,
        headers,
        body,
        expect_status: Vec::new(),
        expect_body: None,
        extract: scope.extracts.clone(),
        timeout_ms: millis(cx, or(p.text("HTTPSampler.response_timeout"), &d.timeout)),
        repeat: 1,
        before: scope.timers.clone(),
        think: Vec::new(),
        uses: t.uses,
        condition: None,
    };
    apply_checks(cx, &mut step, &scope.checks);
    Ok(step)
}

/// The server a sampler's request goes to, and its path as written.
fn target(cx: &mut Cx, p: &Props, d: &Defaults) -> Result<(Origin, String), String> {
    let path = or(p.text("HTTPSampler.path"), &d.path).trim();
    let lower = path.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        let (scheme, rest) = path.split_once("://").expect("checked");
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let (host, port) = host_port(authority);
        return Ok((origin(cx, scheme, host, port)?, path.to_string()));
    }
    let domain = or(p.text("HTTPSampler.domain"), &d.domain);
    if domain.trim().is_empty() {
        return Err("it names no server, and no HTTP Request Defaults in its scope does".into());
    }
    let protocol = or(p.text("HTTPSampler.protocol"), &d.protocol);
    let port = or(p.text("HTTPSampler.port"), &d.port);
    Ok((origin(cx, protocol, domain, port)?, path.to_string()))
}

/// `host:port`, `host`, `[::1]:port` or `[::1]`: the host (no brackets) and the port.
fn host_port(authority: &str) -> (&str, &str) {
    match authority.strip_prefix('[').and_then(|a| a.split_once(']')) {
        Some((host, rest)) => (host, rest.strip_prefix(':').unwrap_or("")),
        None => authority.split_once(':').unwrap_or((authority, "")),
    }
}

fn origin(cx: &mut Cx, protocol: &str, domain: &str, port: &str) -> Result<Origin, String> {
    let scheme = cx.fixed(protocol)?.trim().to_ascii_lowercase();
    let scheme = if scheme.is_empty() {
        "http".into()
    } else {
        scheme
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!(
            "its protocol is {scheme}: sluice bench speaks http and https"
        ));
    }
    let host = cx
        .fixed(domain)
        .map_err(|why| format!("its server: {why}"))?;
    let host = host.trim().trim_start_matches('[').trim_end_matches(']');
    let port = cx.fixed(port)?;
    let port = match port.trim() {
        "" if scheme == "https" => 443,
        "" => 80,
        p => p
            .parse()
            .map_err(|_| format!("its port {p:?} is not a port"))?,
    };
    Ok(Origin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

/// The first server is the scenario's target; a request to another cannot be a step.
fn same_target(cx: &mut Cx, origin: &Origin) -> Result<(), String> {
    match &cx.target {
        None => {
            cx.target = Some(origin.clone());
            Ok(())
        }
        Some(t) if t == origin => Ok(()),
        Some(t) => Err(format!(
            "a scenario has one target, {}: this request goes to {}",
            t.url(),
            origin.url()
        )),
    }
}

/// The step's path (with its query) and body, and whether the body is a form.
fn request(
    cx: &mut Cx,
    p: &Props,
    d: &Defaults,
    method: &str,
    raw_path: &str,
    t: &mut Texts,
) -> (String, Option<String>, bool) {
    let (mut path, _) = t.template(cx, raw_path);
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    let mut args = arguments(p);
    args.extend(d.args.iter().cloned());
    if p.flag("HTTPSampler.postBodyRaw") == Some(true) {
        let raw: String = args.iter().map(|a| a.text("Argument.value")).collect();
        return (path, Some(t.template(cx, &raw).0), false);
    }
    let pairs = pairs(cx, &args, t);
    if pairs.is_empty() {
        return (path, None, false);
    }
    let joined = pairs.join("&");
    if matches!(method, "POST" | "PUT" | "PATCH") {
        return (path, Some(joined), true);
    }
    let sep = if path.contains('?') { '&' } else { '?' };
    (format!("{path}{sep}{joined}"), None, false)
}

/// Arguments as `name=value`, URL-encoded where JMeter encodes them.
fn pairs(cx: &mut Cx, args: &[Props], t: &mut Texts) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        if a.text("Argument.name").is_empty() {
            continue;
        }
        let encode = a.flag("HTTPArgument.always_encode") == Some(true);
        let (name, _) = t.template(cx, a.text("Argument.name"));
        let (value, varies) = t.template(cx, a.text("Argument.value"));
        if encode && varies {
            cx.note("arguments' variables are sent as their values are: JMeter URL-encoded them (a value with spaces or & in it needs encoding in the data)");
        }
        let (name, value) = if encode {
            (form_encode(&name), form_encode(&value))
        } else {
            (name, value)
        };
        let bare = a.flag("HTTPArgument.use_equals") == Some(false) && value.is_empty();
        out.push(if bare {
            name
        } else {
            format!("{name}={value}")
        });
    }
    out
}

/// `text` encoded as an HTML form encodes it (Java's URLEncoder), its scenario
/// variables (`{name}`, `{random(a,b)}`) kept as they are.
fn form_encode(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(end) = rest.find('}').filter(|_| c == '{') {
            let inner = &rest[1..end];
            if is_name(inner) || inner.starts_with("random(") {
                out.push_str(&rest[..=end]);
                rest = &rest[end + 1..];
                continue;
            }
        }
        rest = &rest[c.len_utf8()..];
        match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '-' | '*' | '_' => out.push(c),
            ' ' => out.push('+'),
            _ => {
                for b in c.to_string().bytes() {
                    let _ = write!(out, "%{b:02X}");
                }
            }
        }
    }
    out
}

/// The Header Managers' headers in scope, and a form's content type.
fn headers(cx: &mut Cx, scope: &Scope, form: bool, t: &mut Texts) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (name, value) in &scope.headers {
        let (value, _) = t.template(cx, value);
        out.push(format!("{name}: {value}"));
    }
    let typed = scope
        .headers
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
    if form && !typed {
        out.push("Content-Type: application/x-www-form-urlencoded".into());
    }
    out
}

/// What the sampler does that a step does differently.
fn sampler_notes(cx: &mut Cx, p: &Props, place: &str) {
    let follows = p.flag("HTTPSampler.follow_redirects") == Some(true)
        || p.flag("HTTPSampler.auto_redirects") == Some(true);
    if follows {
        cx.follow.0 += 1;
    } else {
        cx.follow.1 += 1;
    }
    if p.flag("HTTPSampler.image_parser") == Some(true) {
        cx.note(format!("{place}: its embedded resources (images, scripts, styles) are not fetched: the step requests the page alone"));
    }
    if p.flag("HTTPSampler.use_keepalive") == Some(false) {
        cx.note(format!("{place}: sent on the user's kept-alive connection (JMeter closed the connection after it)"));
    }
}

fn millis(cx: &mut Cx, text: &str) -> Option<u64> {
    cx.fixed(text)
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|ms| *ms > 0)
}

/// The assertions in scope as the step's expectations, the nearest first: a second
/// one that a step cannot also check is listed as dropped.
fn apply_checks(cx: &mut Cx, step: &mut Step, checks: &[CheckAt]) {
    for c in checks.iter().rev() {
        let conflict = match &c.check {
            Check::Status(codes) if step.expect_status.is_empty() => {
                step.expect_status = codes.clone();
                None
            }
            Check::Status(codes) => {
                let both: Vec<u16> = step.expect_status.iter().copied().filter(|s| codes.contains(s)).collect();
                if both.is_empty() {
                    Some(format!("the step already expects status {:?}: no status passes both", step.expect_status))
                } else {
                    step.expect_status = both;
                    None
                }
            }
            Check::Body(text, uses) => match &step.expect_body {
                None => {
                    step.expect_body = Some(text.clone());
                    step.uses.extend(uses.iter().cloned());
                    None
                }
                Some(same) if same == text => None,
                Some(other) => Some(format!("the step already checks its body for {other:?}: sluice checks one text per step")),
            },
            Check::Within(ms) => {
                step.timeout_ms = Some(step.timeout_ms.map_or(*ms, |t| t.min(*ms)));
                cx.note(format!("{}: written as the step's timeout: a slower response fails as a timeout, abandoned, rather than as a failed assertion", c.place));
                None
            }
        };
        if let Some(why) = conflict {
            cx.drop_at(c.line, &c.place, &c.class, why);
        }
    }
}

/// What a step's texts use, and why they cannot be written.
#[derive(Default)]
struct Texts {
    uses: BTreeSet<String>,
    problems: Vec<String>,
}

impl Texts {
    /// `text` resolved as a scenario template, and whether it varies.
    fn template(&mut self, cx: &mut Cx, text: &str) -> (String, bool) {
        let r = cx.resolve(text);
        self.uses.extend(r.uses);
        self.problems.extend(r.problems);
        for b in r.braces {
            self.problems.push(format!("its text {b} would read as a scenario variable (a scenario's texts have no escape for braces)"));
        }
        (r.text, r.varies)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_in_the_path_gives_its_host_and_port() {
        assert_eq!(host_port("shop.test:8443"), ("shop.test", "8443"));
        assert_eq!(host_port("shop.test"), ("shop.test", ""));
        assert_eq!(host_port("[::1]:8080"), ("::1", "8080"));
        assert_eq!(host_port("[::1]"), ("::1", ""));
    }

    #[test]
    fn form_values_are_encoded_around_scenario_variables() {
        assert_eq!(form_encode("a b&c={user}"), "a+b%26c%3D{user}");
        assert_eq!(form_encode("{\"x\":1}"), "%7B%22x%22%3A1%7D");
        assert_eq!(form_encode("é-{random(1,5)}"), "%C3%A9-{random(1,5)}");
    }
}
