//! The elements that act on a sampler's request and response: timers (a pause before
//! it: a step's `think`), assertions (`expect_status`, `expect_body`, a Duration
//! Assertion as `timeout`) and extractors (`extract`: regular expression, JSON and
//! boundary). Each is translated, or listed as dropped with why.

use super::tree::{Element, Props};
use super::vars::scenario_name;
use super::Cx;
use crate::scenario::is_name;
use std::collections::BTreeSet;

/// A pause, in milliseconds, as JMeter's timers draw them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pause {
    Fixed(u64),
    /// Uniform from the first to the second (Uniform Random Timer).
    Between(u64, u64),
    /// Normal around `mean` (Gaussian Random Timer).
    Gaussian {
        mean: u64,
        deviation: u64,
    },
}

/// A timer's pause; `None` (and the timer listed as dropped) for one sluice has not.
pub fn timer(cx: &mut Cx, el: &Element, place: &str) -> Option<Pause> {
    let pause = match el.class.as_str() {
        "ConstantTimer" => millis(cx, &el.props, "ConstantTimer.delay").map(Pause::Fixed),
        "UniformRandomTimer" => offset_range(cx, &el.props).map(|(d, r)| Pause::Between(d, d + r)),
        "GaussianRandomTimer" => offset_range(cx, &el.props)
            .map(|(mean, deviation)| Pause::Gaussian { mean, deviation }),
        "ConstantThroughputTimer" | "PreciseThroughputTimer" => Err("paces requests to a throughput: run the load open with `sluice bench --rate`, or give the steps think times".into()),
        "PoissonRandomTimer" => Err("not translated: think = { exponential = \"...\" } (exponential pauses around a mean) is the nearest".into()),
        "SyncTimer" => Err("a rendezvous: sluice's users do not wait for each other".into()),
        _ => Err("a timer sluice has no equivalent for (scripts are not translated)".into()),
    };
    pause.map_err(|why| cx.drop(el, place, why)).ok()
}

/// A Uniform or Gaussian Random Timer's offset (`ConstantTimer.delay`) and range.
fn offset_range(cx: &mut Cx, p: &Props) -> Result<(u64, u64), String> {
    Ok((
        millis(cx, p, "ConstantTimer.delay")?,
        millis(cx, p, "RandomTimer.range")?,
    ))
}

/// A property of milliseconds (JMeter writes a range as `100.0`); empty is 0.
fn millis(cx: &mut Cx, p: &Props, name: &str) -> Result<u64, String> {
    let text = cx.fixed(p.text(name))?;
    match text.trim() {
        "" => Ok(0),
        t => t
            .parse::<f64>()
            .ok()
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| ms.round() as u64)
            .ok_or_else(|| format!("{name} = {t:?} is no number of milliseconds")),
    }
}

/// What a step checks of its response.
#[derive(Debug, Clone, PartialEq)]
pub enum Check {
    Status(Vec<u16>),
    /// The body contains this text (a scenario template), which uses these variables.
    Body(String, BTreeSet<String>),
    /// The response comes within so many milliseconds (a Duration Assertion).
    Within(u64),
}

/// A check and the assertion it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckAt {
    pub check: Check,
    pub line: usize,
    pub place: String,
    pub class: String,
}

/// An assertion's check; `None` (and the assertion listed as dropped) for one sluice
/// cannot make.
pub fn assertion(cx: &mut Cx, el: &Element, place: &str) -> Option<CheckAt> {
    let check = match el.class.as_str() {
        "ResponseAssertion" => response(cx, &el.props),
        "DurationAssertion" => match millis(cx, &el.props, "DurationAssertion.duration") {
            Ok(0) => Err("a duration of 0 ms: no response passes it".into()),
            ms => ms.map(Check::Within),
        },
        "JSONPathAssertion" => Err("not translated: an extract with no default fails the step when its path finds nothing (extract.x = { json = \"$.path\" })".into()),
        _ => Err("sluice checks a response's status and the text its body holds only".into()),
    };
    let at = |check| CheckAt {
        check,
        line: el.line,
        place: super::tree::label(place, el),
        class: el.class.clone(),
    };
    check.map(at).map_err(|why| cx.drop(el, place, why)).ok()
}

/// Response Assertion test types (JMeter's bits).
const MATCHES: u32 = 1;
const CONTAINS: u32 = 2;
const NOT: u32 = 4;
const EQUALS: u32 = 8;
const SUBSTRING: u32 = 16;
const OR: u32 = 32;

fn response(cx: &mut Cx, p: &Props) -> Result<Check, String> {
    let ty: u32 = p
        .text("Assertion.test_type")
        .trim()
        .parse()
        .unwrap_or(SUBSTRING);
    // "Asserion": JMeter's spelling in the saved file.
    let strings = p.texts("Asserion.test_strings");
    if ty & NOT != 0 {
        return Err(
            "a negated assertion (Not): sluice checks what a response holds, not what it lacks"
                .into(),
        );
    }
    if strings.is_empty() {
        return Err("it has no pattern to test".into());
    }
    match p.text("Assertion.test_field") {
        "Assertion.response_code" => status(cx, ty, &strings),
        "Assertion.response_data" | "" => body(cx, ty & !OR, &strings),
        other => Err(format!(
            "it tests the {}: sluice checks a response's status and body only",
            other.trim_start_matches("Assertion.").replace('_', " ")
        )),
    }
}

/// The codes a response code assertion takes (`200`, or alternatives `200|302`).
fn status(cx: &mut Cx, ty: u32, strings: &[&str]) -> Result<Check, String> {
    let regex = ty & (MATCHES | CONTAINS) != 0;
    let mut codes: Vec<u16> = Vec::new();
    for s in strings {
        let s = cx.fixed(s)?;
        let alternatives: Vec<&str> = if regex {
            s.split('|').collect()
        } else {
            vec![&s]
        };
        for a in alternatives {
            let a = a.trim();
            match a.parse::<u16>() {
                Ok(code) if a.len() == 3 && (100..=599).contains(&code) => codes.push(code),
                _ => {
                    return Err(format!(
                        "the pattern {a:?} is not a status code: sluice expects a list of codes"
                    ))
                }
            }
        }
    }
    codes.sort_unstable();
    codes.dedup();
    if codes.len() > 1 && ty & OR == 0 && strings.len() > 1 {
        return Err("several codes that must all match: no response has them all".into());
    }
    Ok(Check::Status(codes))
}

/// A body assertion: one text the body contains (its variables the scenario's).
fn body(cx: &mut Cx, ty: u32, strings: &[&str]) -> Result<Check, String> {
    if ty & (EQUALS | MATCHES) != 0 || ty == 0 {
        return Err(
            "the whole body must equal or match it: sluice checks that a body contains a text"
                .into(),
        );
    }
    let [text] = strings else {
        return Err("several texts: sluice checks one text in a step's body".into());
    };
    let r = cx.resolve(text);
    if let Some(problem) = r.problems.into_iter().next() {
        return Err(problem);
    }
    if let Some(b) = r.braces.first() {
        return Err(format!("its text {b} would read as a scenario variable (a scenario's texts have no escape for braces)"));
    }
    let text = match ty {
        SUBSTRING => Some(r.text),
        _ => plain(&r.text),
    };
    text.map(|t| Check::Body(t, r.uses)).ok_or_else(|| {
        "a regular expression: sluice's expect_body is a text the body contains".into()
    })
}

/// The text a "Contains" pattern (a regular expression) matches when it is plain text
/// (with `\`-escaped punctuation, and `.` read as a dot); its scenario variables
/// (`{name}`) are kept.
fn plain(pattern: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        let rest = chars.as_str();
        let variable = rest.split_once('}').filter(|(name, _)| is_name(name));
        match c {
            '{' if variable.is_some() => {
                let (name, after) = variable.expect("checked");
                out.push_str(&format!("{{{name}}}"));
                chars = after.chars();
            }
            '\\' => out.push(chars.next().filter(char::is_ascii_punctuation)?),
            '^' | '$' | '|' | '?' | '*' | '+' | '(' | ')' | '[' | ']' | '{' | '}' => return None,
            _ => out.push(c),
        }
    }
    Some(out)
}

/// A value a step takes from its response.
#[derive(Debug, Clone, PartialEq)]
pub struct Extract {
    /// Its name in the scenario.
    pub name: String,
    pub from: Source,
    /// 1 the first match, 0 one at random.
    pub nth: u32,
    pub default: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Regex(String),
    Json(String),
    Boundary(String, String),
}

/// The values an extractor under a sampler takes; what it cannot is listed as dropped.
pub fn extractors(cx: &mut Cx, el: &Element, place: &str) -> Vec<Extract> {
    let p = &el.props;
    let taken = match el.class.as_str() {
        "RegexExtractor" => regex(cx, p).map(|e| vec![e]),
        "BoundaryExtractor" => boundary(cx, p).map(|e| vec![e]),
        _ => json(cx, p),
    };
    taken
        .map_err(|why| cx.drop(el, place, why))
        .unwrap_or_default()
}

fn regex(cx: &mut Cx, p: &Props) -> Result<Extract, String> {
    reads_body(p, "RegexExtractor.useHeaders")?;
    let name = var_name(p.text("RegexExtractor.refname"))?;
    let pattern = cx.fixed(p.text("RegexExtractor.regex"))?;
    let pattern = with_group(&pattern, p.text("RegexExtractor.template"))?;
    if let Err(e) = regex::Regex::new(&pattern) {
        let first = e
            .to_string()
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_string();
        return Err(format!(
            "its regular expression is not one sluice (Rust's regex) reads: {first}"
        ));
    }
    Ok(Extract {
        name,
        from: Source::Regex(pattern),
        nth: nth(p.text("RegexExtractor.match_number"))?,
        default: default(cx, p, "RegexExtractor")?,
    })
}

fn boundary(cx: &mut Cx, p: &Props) -> Result<Extract, String> {
    reads_body(p, "BoundaryExtractor.useHeaders")?;
    let name = var_name(p.text("BoundaryExtractor.refname"))?;
    let left = cx.fixed(p.text("BoundaryExtractor.lboundary"))?;
    let right = cx.fixed(p.text("BoundaryExtractor.rboundary"))?;
    if left.is_empty() || right.is_empty() {
        return Err("an empty boundary: sluice's boundary takes the texts on both sides".into());
    }
    Ok(Extract {
        name,
        from: Source::Boundary(left, right),
        nth: nth(p.text("BoundaryExtractor.match_number"))?,
        default: default(cx, p, "BoundaryExtractor")?,
    })
}

/// A JSON Extractor's values (its names, paths, match numbers and defaults are
/// `;`-separated lists).
fn json(cx: &mut Cx, p: &Props) -> Result<Vec<Extract>, String> {
    let list =
        |name: &str| -> Vec<String> { p.text(name).split(';').map(str::to_string).collect() };
    let (names, paths) = (
        list("JSONPostProcessor.referenceNames"),
        list("JSONPostProcessor.jsonPathExprs"),
    );
    let (numbers, defaults) = (
        list("JSONPostProcessor.match_numbers"),
        list("JSONPostProcessor.defaultValues"),
    );
    let mut out = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let path = cx.fixed(paths.get(i).map_or("", String::as_str))?;
        if let Err(e) = serde_json_path::JsonPath::parse(&path) {
            return Err(format!(
                "its JSONPath {path:?} is not one sluice reads (RFC 9535): {e}"
            ));
        }
        let default = match defaults.get(i) {
            Some(d) if !d.is_empty() => Some(cx.fixed(d)?),
            _ => None,
        };
        out.push(Extract {
            name: var_name(name)?,
            from: Source::Json(path),
            nth: nth(numbers.get(i).map_or("", String::as_str))?,
            default,
        });
    }
    Ok(out)
}

/// Which part of the response an extractor reads: the body, or (dropped) another.
fn reads_body(p: &Props, key: &str) -> Result<(), String> {
    if p.text("Sample.scope") == "variable" {
        return Err("it reads a JMeter variable, not the response".into());
    }
    match p.text(key) {
        "" | "false" | "unescaped" => Ok(()),
        "true" => Err("it reads the response headers: sluice takes a header by name (extract.NAME = { header = \"Location\" }), not by a regular expression over them all".into()),
        other => Err(format!("it reads the response's {other}: sluice extracts from the body, a header or a cookie")),
    }
}

fn var_name(refname: &str) -> Result<String, String> {
    scenario_name(refname.trim()).ok_or_else(|| {
        format!("{refname:?} cannot name a scenario variable (letters, digits and _)")
    })
}

/// JMeter's match number: 0 random, N the Nth (empty reads as 0, as JMeter reads it).
fn nth(text: &str) -> Result<u32, String> {
    match text.trim() {
        "" => Ok(0),
        "-1" => Err("match number -1 takes every match as NAME_1..NAME_n: a scenario variable holds one value".into()),
        t => t.parse().map_err(|_| format!("match number {t:?} is not a number")),
    }
}

/// An extractor's default: its text, or "" when "use empty default value" is ticked.
fn default(cx: &mut Cx, p: &Props, prefix: &str) -> Result<Option<String>, String> {
    let text = p.text(&format!("{prefix}.default"));
    if !text.is_empty() {
        return cx.fixed(text).map(Some);
    }
    let empty = p.flag(&format!("{prefix}.default_empty_value")) == Some(true);
    Ok(empty.then(String::new))
}

/// `pattern` rewritten so that its first group (or none, for the whole match) is
/// what the template `$N$` takes: the groups before it made non-capturing.
fn with_group(pattern: &str, template: &str) -> Result<String, String> {
    let t = template.trim();
    let wanted = match t.strip_prefix('$').and_then(|t| t.strip_suffix('$')) {
        _ if t.is_empty() => return Ok(pattern.to_string()),
        Some(n) if n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() => n
            .parse::<usize>()
            .map_err(|_| format!("template {t:?}"))?,
        _ => return Err(format!("its template {t:?} joins several groups or text: a scenario's extract takes one group ($N$)")),
    };
    if wanted == 1 {
        return Ok(pattern.to_string());
    }
    Ok(uncapture(pattern, wanted))
}

/// `pattern` with its capturing groups other than the `keep`th made non-capturing.
fn uncapture(pattern: &str, keep: usize) -> String {
    let mut out = String::new();
    let (mut group, mut in_class) = (0, false);
    let mut chars = pattern.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some((_, n)) = chars.next() {
                    out.push(n);
                }
                continue;
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            '(' if !in_class => {
                let rest = &pattern[i + 1..];
                let named =
                    rest.starts_with("?<") && !rest.starts_with("?<=") && !rest.starts_with("?<!")
                        || rest.starts_with("?P<");
                if rest.starts_with('?') && !named {
                    out.push(c);
                    continue;
                }
                group += 1;
                if group == keep {
                    out.push(c);
                    continue;
                }
                out.push_str("(?:");
                if named {
                    // Past the name, to its `>`.
                    for (_, n) in chars.by_ref() {
                        if n == '>' {
                            break;
                        }
                    }
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_picks_its_group_by_making_the_others_non_capturing() {
        assert_eq!(with_group("a(b)(c)", "$2$").unwrap(), "a(?:b)(c)");
        assert_eq!(with_group("a(b)(c)", "$0$").unwrap(), "a(?:b)(?:c)");
        assert_eq!(with_group(r"\((x)[(]", "$1$").unwrap(), r"\((x)[(]");
        assert_eq!(with_group("(?i)(?<n>a)(b)", "$2$").unwrap(), "(?i)(?:a)(b)");
        assert!(with_group("(a)(b)", "$1$-$2$").is_err());
    }

    #[test]
    fn a_contains_pattern_is_plain_text_when_it_has_no_regex_in_it() {
        assert_eq!(plain(r"orders of user\d").as_deref(), None);
        assert_eq!(plain(r"Total: \$5.00").as_deref(), Some("Total: $5.00"));
        assert_eq!(plain("a|b"), None);
        assert_eq!(
            plain("orders of {username}.").as_deref(),
            Some("orders of {username}.")
        );
    }
}
