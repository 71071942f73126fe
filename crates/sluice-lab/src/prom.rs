//! Reading the Prometheus text format (and OpenMetrics, its superset for what is read
//! here): the lab's window into tiers it did not write, through the exporters that
//! already run beside them (node_exporter, the JMX exporter, sluice's own `/metrics`).
//!
//! Hand-written rather than a crate: a sample line is `name{labels} value [timestamp]`,
//! and the lab needs only names, labels and values (no types, no exemplars).

use std::collections::BTreeMap;

/// One sample: a metric's name, its labels and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Every sample of an exposition, in order; lines that are not samples are skipped.
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines().filter_map(sample).collect()
}

fn sample(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    let (labels, rest) = if line[name_end..].starts_with('{') {
        let close = closing_brace(line, name_end)?;
        (labels(&line[name_end + 1..close]), &line[close + 1..])
    } else {
        (BTreeMap::new(), &line[name_end..])
    };
    let value = match rest.split_whitespace().next()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// The `}` closing the label set opened at `open`, skipping quoted values.
fn closing_brace(line: &str, open: usize) -> Option<usize> {
    let (mut quoted, mut escaped) = (false, false);
    for (i, c) in line[open..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '}' if !quoted => return Some(open + i),
            _ => {}
        }
    }
    None
}

fn labels(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().trim_start_matches(',').trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let Some(body) = after.strip_prefix('"') else {
            break;
        };
        let mut value = String::new();
        let mut chars = body.char_indices();
        let mut end = body.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, other)) => value.push(other),
                    None => {}
                },
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        out.insert(key, value);
        rest = &body[end..];
    }
    out
}

/// The sum of every sample named `name` whose labels include all of `with`.
pub fn sum(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for s in samples.iter().filter(|s| s.name == name) {
        if with
            .iter()
            .all(|(k, v)| s.labels.get(*k).is_some_and(|x| x == v))
        {
            *found.get_or_insert(0.0) += s.value;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_with_and_without_labels_are_read() {
        let text = "# HELP x y\n# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 10.5\nnode_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 4.5\nnode_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 3\nup 1\nodd{path=\"/a}b\",q=\"x\\\"y\"} 2 1700000000\n";
        let s = parse(text);
        assert_eq!(s.len(), 5);
        assert_eq!(
            sum(&s, "node_cpu_seconds_total", &[("mode", "idle")]),
            Some(15.0)
        );
        assert_eq!(sum(&s, "node_cpu_seconds_total", &[]), Some(18.0));
        assert_eq!(sum(&s, "up", &[]), Some(1.0));
        assert_eq!(s[4].labels["path"], "/a}b");
        assert_eq!(s[4].labels["q"], "x\"y");
        assert_eq!(sum(&s, "missing", &[]), None);
    }
}
