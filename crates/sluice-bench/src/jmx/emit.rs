//! The scenario written out as TOML, in the order `docs/load-testing.md` documents its
//! keys: a header of comments (where it came from, how to run it, what was dropped and
//! what is approximate), the load, the data, then `[[setup]]`, the loop (`[[step]]` or
//! `[[flow]]`) and `[[teardown]]`. Strings are quoted here: a regular expression in a
//! literal string ('...') when it has no `'`, anything else in a basic string.

use super::checks::{Extract, Pause, Source};
use super::data::DataSpec;
use super::http::Step;
use super::shape::Shaped;
use super::walk::Length;
use super::Cx;
use std::fmt::Write;

/// The scenario's text.
pub fn toml(cx: &Cx, s: &Shaped) -> String {
    let mut out = header(cx);
    top(&mut out, cx, s);
    for step in &s.setup {
        table(&mut out, "setup", step);
    }
    match &s.flows[..] {
        [only] => only
            .steps
            .iter()
            .for_each(|step| table(&mut out, "step", step)),
        flows => {
            for f in flows {
                let _ = write!(
                    out,
                    "\n[[flow]]\nname = {}\nweight = {}\n",
                    basic(&f.name),
                    f.weight
                );
                f.steps
                    .iter()
                    .for_each(|step| table(&mut out, "flow.step", step));
            }
        }
    }
    for step in &s.teardown {
        table(&mut out, "teardown", step);
    }
    out
}

/// The comments at the top: origin, how to run it, what was dropped and noted.
fn header(cx: &Cx) -> String {
    let mut out = format!(
        "# imported from {} by sluice bench import\n",
        one_line(&cx.file)
    );
    let (follow, not) = cx.follow;
    if follow > 0 {
        out.push_str("# run with: sluice bench --scenario FILE --follow\n");
        if not > 0 {
            let _ = writeln!(out, "#   (the plan's samplers follow redirects, but {not} of them do not: with --follow every step does)");
        }
    }
    if !cx.dropped.is_empty() {
        let _ = writeln!(out, "#\n# Not translated ({}):", cx.dropped.len());
        for d in &cx.dropped {
            let _ = writeln!(out, "#   {}", one_line(&d.to_string()));
        }
    }
    if !cx.notes.is_empty() || !cx.listeners.is_empty() {
        out.push_str("#\n# Translated approximately:\n");
        for n in &cx.notes {
            let _ = writeln!(out, "#   - {}", one_line(n));
        }
        if !cx.listeners.is_empty() {
            let _ = writeln!(out, "#   - {} listener(s) ({}): sluice reports each step itself (--json, --html for files)", cx.listeners.len(), one_line(&cx.listeners.join(", ")));
        }
    }
    out.push('\n');
    out
}

/// The load, the cookies, the data.
fn top(out: &mut String, cx: &Cx, s: &Shaped) {
    let target = cx.target.as_ref().map_or_else(String::new, |t| t.url());
    let _ = writeln!(out, "target = {}", basic(&target));
    let _ = writeln!(out, "users = {}", s.users);
    if s.ramp_secs > 0 {
        let _ = writeln!(out, "ramp = \"{}s\"", s.ramp_secs);
    }
    let _ = match s.length {
        Length::Iterations(n) => writeln!(out, "iterations = {n}"),
        Length::Seconds(secs) => writeln!(out, "duration = \"{secs}s\""),
    };
    let given: Vec<String> = cx.initial_cookies.iter().map(|c| basic(c)).collect();
    let _ = match &cx.cookies {
        Some(from) if !given.is_empty() => {
            let list = given.join(", ");
            writeln!(out, "cookies = [{list}]    # {}", one_line(from))
        }
        Some(from) => writeln!(out, "cookies = true    # {}", one_line(from)),
        None => writeln!(
            out,
            "cookies = false   # the plan has no HTTP Cookie Manager: JMeter kept no cookies"
        ),
    };
    if let Some(d) = &cx.data {
        data(out, d);
    }
}

fn data(out: &mut String, d: &DataSpec) {
    let mut keys = vec![format!("file = {}", basic(&d.file))];
    keys.push(format!(
        "per = \"{}\"",
        if d.per_user { "user" } else { "iteration" }
    ));
    if d.columns {
        let names: Vec<String> = d.names.iter().flatten().map(|n| basic(n)).collect();
        keys.push(format!("columns = [{}]", names.join(", ")));
    }
    if d.delimiter != ',' {
        keys.push(format!("delimiter = {}", basic(&d.delimiter.to_string())));
    }
    if !d.recycle {
        keys.push("recycle = false".into());
    }
    let from = format!("{} (line {})", one_line(&d.place), d.line);
    let _ = writeln!(
        out,
        "data = {{ {} }}    # {from}, relative to this file",
        keys.join(", ")
    );
}

/// One step's table.
fn table(out: &mut String, section: &str, s: &Step) {
    let _ = writeln!(out, "\n# {} (line {})", one_line(&s.place), s.line);
    let _ = writeln!(out, "[[{section}]]");
    let _ = writeln!(out, "name = {}", basic(&s.name));
    let _ = writeln!(out, "http = {}", basic(&format!("{} {}", s.method, s.path)));
    if let Some(condition) = &s.condition {
        let _ = writeln!(out, "if = {}", basic(condition));
    }
    if !s.headers.is_empty() {
        let headers: Vec<String> = s.headers.iter().map(|h| basic(h)).collect();
        let _ = writeln!(out, "headers = [{}]", headers.join(", "));
    }
    if let Some(body) = &s.body {
        let _ = writeln!(out, "body = {}", basic(body));
    }
    let _ = match &s.expect_status[..] {
        [] => Ok(()),
        [one] => writeln!(out, "expect_status = {one}"),
        many => writeln!(out, "expect_status = {many:?}"),
    };
    if let Some(text) = &s.expect_body {
        let _ = writeln!(out, "expect_body = {}", basic(text));
    }
    for e in &s.extract {
        let bare = e
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        let key = if bare { e.name.clone() } else { basic(&e.name) };
        let _ = writeln!(out, "extract.{key} = {}", extract(e));
    }
    if let Some(p) = s.think.first() {
        let _ = writeln!(out, "think = {}", think(p));
    }
    if let Some(ms) = s.timeout_ms {
        let _ = writeln!(out, "timeout = {}", duration(ms));
    }
    if s.repeat > 1 {
        let _ = writeln!(out, "repeat = {}", s.repeat);
    }
}

fn extract(e: &Extract) -> String {
    let mut keys = vec![match &e.from {
        Source::Regex(re) => format!("regex = {}", literal(re)),
        Source::Json(path) => format!("json = {}", basic(path)),
        Source::Boundary(l, r) => format!("boundary = [{}, {}]", literal(l), literal(r)),
    }];
    if e.nth != 1 {
        keys.push(format!("nth = {}", e.nth));
    }
    if let Some(d) = &e.default {
        keys.push(format!("default = {}", basic(d)));
    }
    format!("{{ {} }}", keys.join(", "))
}

fn think(p: &Pause) -> String {
    match *p {
        Pause::Fixed(ms) => duration(ms),
        Pause::Between(lo, hi) => format!("{{ between = [{}, {}] }}", duration(lo), duration(hi)),
        Pause::Gaussian { mean, deviation } => format!(
            "{{ gaussian = {}, deviation = {} }}",
            duration(mean),
            duration(deviation)
        ),
    }
}

/// Milliseconds as a scenario's duration: whole seconds as `"2s"`, else `"250ms"`.
fn duration(ms: u64) -> String {
    if ms.is_multiple_of(1000) && ms > 0 {
        format!("\"{}s\"", ms / 1000)
    } else {
        format!("\"{ms}ms\"")
    }
}

/// A TOML basic string ("...").
pub fn basic(text: &str) -> String {
    let mut out = String::from('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML literal string ('...', backslashes as they are) when `text` can be one.
fn literal(text: &str) -> String {
    if text.contains('\'') || text.chars().any(char::is_control) {
        basic(text)
    } else {
        format!("'{text}'")
    }
}

/// `text` on one line, for a comment.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_quoted_as_toml_reads_them() {
        assert_eq!(basic("a \"b\" \\ \n"), r#""a \"b\" \\ \n""#);
        assert_eq!(literal(r#"value="([^"]+)""#), r#"'value="([^"]+)"'"#);
        assert_eq!(literal(r"it's \d"), r#""it's \\d""#);
        assert_eq!(
            (duration(2000), duration(250), duration(0)),
            ("\"2s\"".into(), "\"250ms\"".into(), "\"0ms\"".into())
        );
    }
}
