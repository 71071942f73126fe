//! Walking the plan's tree as JMeter runs it: the first enabled Thread Group, its
//! settings (users, ramp, loops or duration), and its samplers and controllers in
//! order, each sampler with what is in its scope. In JMeter a config element, timer,
//! assertion or processor applies to every sampler under its parent, wherever it sits
//! among them: each level's scope is gathered first ([`scope_of`]), then its samplers
//! and controllers are read in order. Controllers that shape the loop (Once Only, Loop,
//! Throughput) are kept as groups for [`super::shape`]; the rest are inlined or dropped.

use super::checks::{self, Pause};
use super::http::{self, Scope, Step};
use super::tree::{child_place, friendly, label, plain, Element};
use super::{data, Cx, ImportError};

/// The thread group's contents: steps and pauses, and the controllers that shape them.
#[derive(Debug, Clone)]
pub enum Part {
    Step(Box<Step>),
    /// A pause with no step of its own (a Flow Control Action's, a dropped sampler's
    /// timers): it lengthens the think of the step before it.
    Pause(Vec<Pause>),
    /// A Once Only Controller.
    Once(Group),
    /// A Throughput Controller, by percentage.
    Throughput(Group, f64),
    /// A Loop Controller: its count, `None` for ever.
    Loop(Group, Option<u64>),
}

/// A controller kept for its shape.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub place: String,
    pub line: usize,
    pub class: String,
    pub parts: Vec<Part>,
}

/// How long the thread group's users run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    Iterations(u64),
    Seconds(u64),
}

/// The thread group, translated.
#[derive(Debug, Clone)]
pub struct Run {
    pub users: u64,
    pub ramp_secs: u64,
    pub length: Length,
    /// Its loop runs once (loop count 1): a Loop Controller in it is the real loop.
    pub loops_once: bool,
    /// Its scheduler's duration, when it has one.
    pub scheduled: Option<u64>,
    pub parts: Vec<Part>,
}

/// The first enabled Thread Group of `plan`, walked; the others are listed as dropped.
pub fn thread_group(cx: &mut Cx, plan: &Element) -> Result<Run, ImportError> {
    let root = plain(plan);
    let plan_scope = scope_of(cx, &plan.children, &Scope::default(), &root, false);
    let mut chosen: Option<&Element> = None;
    let mut others = Vec::new();
    for el in plan.children.iter().filter(|e| e.enabled) {
        let here = root.as_str();
        match kind(el) {
            Kind::ThreadGroup if el.class == "ThreadGroup" && chosen.is_none() => chosen = Some(el),
            Kind::ThreadGroup => {
                others.push(format!("{} '{}'", friendly(el), el.name));
                cx.drop(el, here, other_group_why(el));
            }
            Kind::Sampler | Kind::Controller => cx.drop(el, here, "outside any thread group: JMeter never runs it"),
            Kind::Fragment => cx.drop(el, here, "a Test Fragment runs where a Module or Include Controller calls it: not translated"),
            _ => {}
        }
    }
    let Some(group) = chosen else {
        let found = match others.is_empty() {
            true => String::new(),
            false => format!(" (only {})", others.join(", ")),
        };
        return Err(ImportError::NoThreadGroup {
            file: cx.file.clone(),
            found,
        });
    };
    if !has_http(&group.children) {
        let group = group.name.clone();
        return Err(ImportError::NoHttpSampler {
            file: cx.file.clone(),
            group,
        });
    }
    let place = child_place(&root, group);
    let scope = scope_of(cx, &group.children, &plan_scope, &place, false);
    if cx.target.is_none() {
        cx.target = scope.defaults.origin(cx);
    }
    let mut run = settings(cx, group, &place);
    run.parts = in_order(cx, &group.children, &scope, &place);
    Ok(run)
}

fn other_group_why(el: &Element) -> String {
    match el.class.as_str() {
        "SetupThreadGroup" => "a setUp Thread Group: its own users, before the test's; sluice's [[setup]] steps run in each user, before its loop".into(),
        "PostThreadGroup" => "a tearDown Thread Group: its own users, after the test's; sluice's [[teardown]] steps run in each user, after its loop".into(),
        "ThreadGroup" => "one thread group per scenario file: import writes the first".into(),
        "OpenModelThreadGroup" => "an open model: `sluice bench --rate` sends requests at a rate".into(),
        _ => format!("not a plain Thread Group ({}): import writes the first plain one", el.class),
    }
}

/// Whether there is an enabled HTTP Request among `elements`, at any depth.
fn has_http(elements: &[Element]) -> bool {
    elements
        .iter()
        .filter(|e| e.enabled)
        .any(|e| is_http(e) || has_http(&e.children))
}

fn is_http(el: &Element) -> bool {
    matches!(
        el.class.as_str(),
        "HTTPSamplerProxy" | "HTTPSampler" | "HTTPSampler2"
    )
}

/// The thread group's users, ramp and length.
fn settings(cx: &mut Cx, group: &Element, place: &str) -> Run {
    let p = &group.props;
    let number = |cx: &mut Cx, text: &str, what: &str, fallback: i64| -> i64 {
        match cx.fixed(text).ok().and_then(|t| t.trim().parse().ok()) {
            Some(n) => n,
            None if text.trim().is_empty() => fallback,
            None => {
                cx.note(format!(
                    "{place}: its {what} {text:?} could not be read: {fallback} written"
                ));
                fallback
            }
        }
    };
    let users = number(
        cx,
        p.text("ThreadGroup.num_threads"),
        "number of threads",
        1,
    )
    .max(1) as u64;
    let ramp_secs = number(cx, p.text("ThreadGroup.ramp_time"), "ramp-up period", 0).max(0) as u64;
    let main = p
        .element("ThreadGroup.main_controller")
        .cloned()
        .unwrap_or_default();
    let loops = number(cx, main.text("LoopController.loops"), "loop count", 1);
    let scheduled = (p.flag("ThreadGroup.scheduler") == Some(true))
        .then(|| number(cx, p.text("ThreadGroup.duration"), "duration", 0))
        .filter(|d| *d > 0)
        .map(|d| d as u64);
    let length = match (scheduled, loops) {
        (Some(secs), _) => Length::Seconds(secs),
        (None, n) if n < 0 => {
            cx.note(format!("{place}: it loops for ever, with no duration: duration = \"60s\" written (sluice bench -d changes it)"));
            Length::Seconds(60)
        }
        (None, n) => Length::Iterations(n.max(1) as u64),
    };
    group_notes(cx, p, place);
    Run {
        users,
        ramp_secs,
        length,
        loops_once: loops == 1,
        scheduled,
        parts: Vec::new(),
    }
}

/// The thread group's settings sluice does otherwise.
fn group_notes(cx: &mut Cx, p: &super::tree::Props, place: &str) {
    let on_error = p.text("ThreadGroup.on_sample_error");
    if !matches!(on_error, "" | "continue") {
        cx.note(format!("{place}: on a sampler error JMeter would {}; a sluice user counts the error and goes on", on_error.replace('_', " ")));
    }
    if p.flag("ThreadGroup.same_user_on_next_iteration") == Some(false) {
        cx.note(format!("{place}: each iteration was a new user in JMeter (its cookies dropped); a sluice user keeps its cookies"));
    }
    if !matches!(p.text("ThreadGroup.delay").trim(), "" | "0")
        && p.flag("ThreadGroup.scheduler") == Some(true)
    {
        cx.note(format!(
            "{place}: its startup delay is not translated: the users start at once"
        ));
    }
}

/// The parts of one level: its samplers and controllers in order, with its scope.
fn children(cx: &mut Cx, elements: &[Element], outer: &Scope, place: &str) -> Vec<Part> {
    let scope = scope_of(cx, elements, outer, place, false);
    in_order(cx, elements, &scope, place)
}

/// The samplers and controllers of one level in order, `scope` the level's.
fn in_order(cx: &mut Cx, elements: &[Element], scope: &Scope, place: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    for el in elements.iter().filter(|e| e.enabled) {
        match kind(el) {
            Kind::Sampler => parts.extend(sampler(cx, el, scope, place)),
            Kind::Controller => parts.extend(controller(cx, el, scope, place)),
            _ => {}
        }
    }
    parts
}

/// What applies at this level, added to `outer`; what cannot is listed as dropped.
/// `sampler`: these are a sampler's own children (its extractors are translated).
fn scope_of(cx: &mut Cx, elements: &[Element], outer: &Scope, place: &str, sampler: bool) -> Scope {
    let mut s = Scope {
        extracts: Vec::new(),
        ..outer.clone()
    };
    for el in elements {
        let here = place;
        if !el.enabled {
            cx.note(format!(
                "{}: disabled in the plan, not translated",
                label(place, el)
            ));
            continue;
        }
        match kind(el) {
            Kind::Config => config(cx, el, &mut s, here),
            Kind::Timer => s.timers.extend(checks::timer(cx, el, here)),
            Kind::Assertion => s.checks.extend(checks::assertion(cx, el, here)),
            Kind::Extractor if sampler => s.extracts.extend(checks::extractors(cx, el, here)),
            Kind::Extractor => cx.drop(el, here, "it applies to every sampler under it: sluice extracts in a step; put it under the sampler whose response holds the value"),
            Kind::Processor => cx.drop(el, here, processor_why(el)),
            Kind::Listener => cx.listeners.push(friendly(el)),
            Kind::Other => cx.drop(el, here, "not translated: sluice has no equivalent"),
            _ => {}
        }
    }
    s
}

fn processor_why(el: &Element) -> String {
    if el.class.starts_with("JSR223") || el.class.starts_with("BeanShell") {
        return "a script: not translated".into();
    }
    format!("a {} sluice has no equivalent for", friendly(el))
}

/// A Cookie Manager's user-defined cookies, as each user's jar starts with them.
fn user_cookies(cx: &mut Cx, el: &Element, me: &str) {
    for c in el.props.items("CookieManager.cookies") {
        let value = match cx.fixed(c.text("Cookie.value")) {
            Ok(v) => v,
            Err(why) => {
                let place = format!("{me} > cookie {}", c.text("@name"));
                cx.drop_at(el.line, &place, "Cookie", why);
                continue;
            }
        };
        let mut cookie = format!("{}={value}", c.text("@name"));
        let path = c.text("Cookie.path");
        cookie.push_str(&format!(
            "; Path={}",
            if path.is_empty() { "/" } else { path }
        ));
        if !c.text("Cookie.domain").is_empty() {
            cookie.push_str(&format!("; Domain={}", c.text("Cookie.domain")));
        }
        if c.flag("Cookie.secure") == Some(true) {
            cookie.push_str("; Secure");
        }
        cx.initial_cookies.push(cookie);
    }
}

/// A config element's part of the scope (defaults, headers) or of the scenario;
/// `here` is its parent's place.
fn config(cx: &mut Cx, el: &Element, s: &mut Scope, here: &str) {
    let me = label(here, el);
    match el.class.as_str() {
        "ConfigTestElement" if el.gui == "HttpDefaultsGui" => s.defaults = s.defaults.merged(&el.props),
        "HeaderManager" => headers(cx, el, s, here),
        "CookieManager" => {
            if el.props.flag("CookieManager.clearEachIteration") == Some(true) {
                cx.note(format!("{me}: its cookies were cleared each iteration; a sluice user keeps its cookies for its life"));
            }
            user_cookies(cx, el, &me);
            cx.cookies.get_or_insert(me);
        }
        "CacheManager" => cx.drop(el, here, "sluice sends no conditional requests: every request goes to the server (JMeter's cache answered some itself)"),
        "CSVDataSet" => data::csv(cx, el, here),
        "Arguments" => {}
        "RandomVariableConfig" if cx.vars.has_random(el.props.text("variableName")) => cx.note(format!("{me}: written as {{random(min,max)}}, drawn afresh for each use (JMeter drew it once per iteration)")),
        "RandomVariableConfig" => cx.drop(el, here, "an output format or bounds that are not whole numbers: not translated"),
        "AuthManager" => cx.drop(el, here, "credentials are not translated: give the steps an Authorization header (for Basic, base64 of user:password)"),
        "DNSCacheManager" => cx.drop(el, here, "sluice resolves the target itself (`sluice bench --resolve HOST:PORT:ADDRESS` pins an address)"),
        "CounterConfig" => cx.drop(el, here, "a counter: not translated ({user} numbers the users, {random(a,b)} draws numbers)"),
        _ => cx.drop(el, here, "a config element sluice has no equivalent for"),
    }
}

/// A Header Manager's headers, replacing those of the same names from farther out.
fn headers(cx: &mut Cx, el: &Element, s: &mut Scope, here: &str) {
    for h in el.props.items("HeaderManager.headers") {
        let name = h.text("Header.name").trim().to_string();
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains(':') {
            cx.note(format!(
                "{}: its header {name:?} is not a header name: left out",
                label(here, el)
            ));
            continue;
        }
        s.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
        s.headers.push((name, h.text("Header.value").to_string()));
    }
}

/// A sampler's part: a step, a pause, or (dropped) the pause its timers still make;
/// `here` is its parent's place.
fn sampler(cx: &mut Cx, el: &Element, scope: &Scope, here: &str) -> Option<Part> {
    let own = scope_of(cx, &el.children, scope, &child_place(here, el), true);
    if is_http(el) {
        let step = http::step(cx, el, &own, here);
        return Some(step.map_or(Part::Pause(own.timers), |s| Part::Step(Box::new(s))));
    }
    if el.class == "TestAction" {
        return Some(flow_action(cx, el, own, here));
    }
    let why = match el.class.as_str() {
        "DebugSampler" => {
            "a debugging aid: sluice's report keeps each step's first failures with their responses"
        }
        c if c.starts_with("JSR223") || c.starts_with("BeanShell") => "a script: not translated",
        _ => {
            "sluice bench sends HTTP requests (and WebSocket and STOMP frames): not this sampler's"
        }
    };
    cx.drop(el, here, why);
    Some(Part::Pause(own.timers))
}

/// A Flow Control Action: a pause (its own and its timers') or, dropped, a jump.
fn flow_action(cx: &mut Cx, el: &Element, own: Scope, here: &str) -> Part {
    let mut pauses = own.timers;
    if el.props.text("ActionProcessor.action").trim() != "1" {
        cx.drop(
            el,
            here,
            "it stops the thread or starts its next loop: sluice scenarios have no such control",
        );
        return Part::Pause(pauses);
    }
    match cx
        .fixed(el.props.text("ActionProcessor.duration"))
        .map(|d| d.trim().parse::<u64>())
    {
        Ok(Ok(ms)) if ms > 0 => pauses.push(Pause::Fixed(ms)),
        Ok(Ok(_)) => {}
        _ => cx.drop(
            el,
            here,
            "its pause is not a number of milliseconds known before the run",
        ),
    }
    Part::Pause(pauses)
}

/// A controller: inlined, kept as a group, or dropped with its samplers; `here` is its
/// parent's place.
fn controller(cx: &mut Cx, el: &Element, scope: &Scope, here: &str) -> Vec<Part> {
    let p = &el.props;
    let (inside, me) = (child_place(here, el), label(here, el));
    let inner = |cx: &mut Cx| children(cx, &el.children, scope, &inside);
    let group = |cx: &mut Cx| Group {
        name: el.name.clone(),
        place: me.clone(),
        line: el.line,
        class: el.class.clone(),
        parts: inner(cx),
    };
    match el.class.as_str() {
        "GenericController" | "RecordingController" => inner(cx),
        "TransactionController" => {
            cx.note(format!("{me}: its requests are reported each under its own name, prefixed \"{}: \", not as one transaction", el.name));
            prefixed(inner(cx), &el.name)
        }
        "CriticalSectionController" => {
            cx.note(format!(
                "{me}: its requests are not serialized across users (sluice has no lock)"
            ));
            inner(cx)
        }
        "OnceOnlyController" => vec![Part::Once(group(cx))],
        "LoopController" => match count(cx, p.text("LoopController.loops")) {
            Ok(n) => vec![Part::Loop(group(cx), n)],
            Err(why) => drop_with_children(cx, el, here, &why),
        },
        "ThroughputController" => throughput(cx, el, here, group),
        "IfController" if always_true(p.text("IfController.condition")) => inner(cx),
        "IfController" => match simple_condition(p.text("IfController.condition")) {
            Some(c) => {
                let parts = inner(cx);
                conditioned(cx, parts, c, (el, here))
            }
            None => drop_with_children(cx, el, here, controller_why(el)),
        },
        _ => drop_with_children(cx, el, here, controller_why(el)),
    }
}

/// A Throughput Controller by percentage; by total executions, dropped.
fn throughput(
    cx: &mut Cx,
    el: &Element,
    here: &str,
    group: impl Fn(&mut Cx) -> Group,
) -> Vec<Part> {
    let p = &el.props;
    if p.text("ThroughputController.style").trim() != "1" {
        return drop_with_children(cx, el, here, "it runs its children a number of times in all: not translated (weighted [[flow]]s take percentages)");
    }
    let percent = cx.fixed(p.text("ThroughputController.percentThroughput"));
    match percent.map(|t| t.trim().parse::<f64>()) {
        Ok(Ok(pct)) if pct > 0.0 && pct.is_finite() => vec![Part::Throughput(group(cx), pct)],
        Ok(Ok(_)) => drop_with_children(cx, el, here, "it runs its children 0% of the time"),
        _ => drop_with_children(
            cx,
            el,
            here,
            "its percentage is not a number known before the run",
        ),
    }
}

/// A Loop Controller's count: `None` for ever (-1).
fn count(cx: &mut Cx, text: &str) -> Result<Option<u64>, String> {
    let t = cx.fixed(text)?;
    match t.trim().parse::<i64>() {
        Ok(n) if n < 0 => Ok(None),
        Ok(n) => Ok(Some(n as u64)),
        Err(_) => Err(format!("its loop count {t:?} is not a number")),
    }
}

/// An If Controller's condition that holds whatever happens.
/// An If Controller's condition when it compares one variable with a text (what plans
/// test after an extractor: `${__jexl3("${token}" != "NOT_FOUND")}`, `"${role}" ==
/// "admin"`): the variable, and the scenario's `if`.
fn simple_condition(condition: &str) -> Option<(String, String)> {
    let mut c = condition.trim();
    for wrapper in ["${__jexl3(", "${__groovy(", "${__javaScript(", "${__jexl2("] {
        if let Some(inner) = c.strip_prefix(wrapper).and_then(|r| r.strip_suffix(")}")) {
            c = inner.trim();
        }
    }
    let (left, op, right) = ["==", "!="]
        .iter()
        .find_map(|op| c.split_once(op).map(|(l, r)| (l.trim(), *op, r.trim())))?;
    let name = unquote(left)
        .strip_prefix("${")
        .and_then(|n| n.strip_suffix('}'))
        .filter(|n| crate::scenario::is_name(n))?;
    let value = unquote(right);
    if value.contains("${") || value.contains(['{', '}']) {
        return None;
    }
    let value = match value.is_empty() || value.contains(' ') {
        true => format!("'{value}'"),
        false => value.to_string(),
    };
    Some((name.to_string(), format!("{{{name}}} {op} {value}")))
}

fn unquote(text: &str) -> &str {
    ['"', '\'']
        .iter()
        .find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q)))
        .unwrap_or(text)
}

/// An If Controller's requests, each taking its condition; one already under another
/// If (sluice's steps take one condition), or a controller kept for its shape inside
/// it, drops the whole.
fn conditioned(
    cx: &mut Cx,
    parts: Vec<Part>,
    (var, condition): (String, String),
    (el, here): (&Element, &str),
) -> Vec<Part> {
    let simple = parts.iter().all(|p| match p {
        Part::Step(s) => s.condition.is_none(),
        Part::Pause(_) => true,
        _ => false,
    });
    if !simple {
        let why = "its condition applies to controllers or nested If Controllers: not translated (a step takes one `if`)";
        return drop_with_children(cx, el, here, why);
    }
    let me = label(here, el);
    cx.note(format!("{me}: its requests each take `if = \"{condition}\"` (an unset variable counts as empty text)"));
    parts
        .into_iter()
        .map(|p| match p {
            Part::Step(mut s) => {
                s.uses.insert(var.clone());
                s.condition = Some(condition.clone());
                Part::Step(s)
            }
            other => other,
        })
        .collect()
}

fn always_true(condition: &str) -> bool {
    let c = condition.trim().to_ascii_lowercase();
    matches!(
        c.as_str(),
        "true" | "${__jexl3(true)}" | "${__groovy(true)}" | "${__javascript(true)}"
    )
}

fn controller_why(el: &Element) -> &'static str {
    match el.class.as_str() {
        "IfController" => "a condition other than one variable compared with a text (== or !=): not translated",
        "WhileController" => "it repeats while a condition holds: a sluice step repeats a fixed number of times",
        "ForeachController" => "it loops over variables: not translated",
        "SwitchController" => "it picks a child by a value: not translated",
        "RandomController" => "it runs one child at random: not translated (weighted [[flow]]s are the nearest)",
        "RandomOrderController" => "it runs its children in a random order: not translated",
        "InterleaveControl" => "it runs one child each time round, in turn: not translated",
        "ModuleController" | "IncludeController" => "it runs elements from elsewhere: not translated (copy them here in JMeter and import again)",
        "RunTime" => "it runs its children for a time: not translated",
        _ => "a controller sluice has no equivalent for",
    }
}

/// Lists `el` as dropped, naming the HTTP requests under it that go with it.
fn drop_with_children(cx: &mut Cx, el: &Element, here: &str, why: &str) -> Vec<Part> {
    let mut names = Vec::new();
    http_names(&el.children, &mut names);
    let list = match names.len() {
        0 => String::new(),
        _ => format!(": its samplers {} are not imported", names.join(", ")),
    };
    cx.drop(el, here, format!("{why}{list}"));
    Vec::new()
}

fn http_names(elements: &[Element], out: &mut Vec<String>) {
    for el in elements.iter().filter(|e| e.enabled) {
        if is_http(el) {
            out.push(format!("'{}'", el.name));
        }
        http_names(&el.children, out);
    }
}

/// The parts with their steps' names prefixed by a transaction's.
fn prefixed(parts: Vec<Part>, name: &str) -> Vec<Part> {
    let group = |mut g: Group| {
        g.parts = prefixed(g.parts, name);
        g
    };
    parts
        .into_iter()
        .map(|part| match part {
            Part::Step(mut s) => {
                s.name = format!("{name}: {}", s.name);
                Part::Step(s)
            }
            Part::Once(g) => Part::Once(group(g)),
            Part::Throughput(g, pct) => Part::Throughput(group(g), pct),
            Part::Loop(g, n) => Part::Loop(group(g), n),
            pause => pause,
        })
        .collect()
}

/// What kind of element a class is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ThreadGroup,
    Fragment,
    Sampler,
    Controller,
    Config,
    Timer,
    Assertion,
    /// An extractor sluice translates.
    Extractor,
    /// Another pre- or post-processor.
    Processor,
    Listener,
    Other,
}

fn kind(el: &Element) -> Kind {
    let c = el.class.as_str();
    let ends = |suffixes: &[&str]| suffixes.iter().any(|s| c.ends_with(s));
    match c {
        "TestFragmentController" => Kind::Fragment,
        "RegexExtractor" | "JSONPostProcessor" | "BoundaryExtractor" => Kind::Extractor,
        "TestAction" | "HTTPSamplerProxy" | "HTTPSampler" | "HTTPSampler2" => Kind::Sampler,
        "InterleaveControl" | "RunTime" => Kind::Controller,
        "ResultCollector" | "BackendListener" | "Summariser" | "ResultSaver" => Kind::Listener,
        "UserParameters"
        | "AnchorModifier"
        | "URLRewritingModifier"
        | "RegExUserParameters"
        | "ResultAction"
        | "SampleTimeout" => Kind::Processor,
        "ConfigTestElement" | "Arguments" | "CSVDataSet" | "LoginConfig" => Kind::Config,
        _ if ends(&["ThreadGroup"]) => Kind::ThreadGroup,
        _ if ends(&["Controller"]) => Kind::Controller,
        _ if ends(&["Sampler", "SamplerProxy"]) => Kind::Sampler,
        _ if ends(&["Timer"]) => Kind::Timer,
        _ if ends(&["Assertion"]) => Kind::Assertion,
        _ if ends(&["PreProcessor", "PostProcessor", "Extractor"]) => Kind::Processor,
        _ if ends(&["Listener", "ResultCollector", "Visualizer"]) => Kind::Listener,
        _ if ends(&["Manager", "Config", "ConfigElement"]) => Kind::Config,
        _ => Kind::Other,
    }
}
