//! The Grafana dashboard in `examples/grafana/`: importable (one Prometheus datasource
//! input that every panel uses, a layout without overlaps), every query parsed by
//! promtool (Prometheus' own PromQL parser), every metric it queries present in a real
//! `/metrics` scrape with the labels it matches on and groups by, and every panel's
//! queries returning data when Prometheus' engine (`promtool test rules`) evaluates them
//! over that scrape. Renaming a metric or a label without updating the dashboard fails
//! here.

use super::harness::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

const DATASOURCE: &str = "${DS_PROMETHEUS}";

/// Labels Prometheus attaches to every series it scrapes (target labels): never in
/// `/metrics` itself, always in a query's result.
const TARGET_LABELS: [&str; 2] = ["instance", "job"];

fn dashboard_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/grafana/sluice-dashboard.json")
}

fn dashboard() -> Value {
    let path = dashboard_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// Every panel, rows' nested panels included (a collapsed row holds its panels).
fn panels(d: &Value) -> Vec<&Value> {
    fn walk<'a>(list: &'a Value, out: &mut Vec<&'a Value>) {
        for p in list.as_array().into_iter().flatten() {
            out.push(p);
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&d["panels"], &mut out);
    out
}

/// One PromQL expression of the dashboard.
#[derive(Debug)]
struct Query {
    /// Where it is, for messages: a panel's title, a variable's or annotation's name.
    place: String,
    expr: String,
    /// For a `label_values(expr, label)` variable: the label whose values it lists.
    lists_label: Option<String>,
}

/// Every query: panel targets, templating variables, annotations.
fn queries(d: &Value) -> Vec<Query> {
    let mut out = Vec::new();
    for p in panels(d) {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap_or_default();
            out.push(Query {
                place: format!(
                    "panel {:?} ({})",
                    p["title"].as_str().unwrap_or_default(),
                    t["refId"].as_str().unwrap_or_default()
                ),
                expr: expr.to_string(),
                lists_label: None,
            });
        }
    }
    for v in d["templating"]["list"].as_array().into_iter().flatten() {
        if v["type"] != "query" {
            continue;
        }
        // Grafana 10 saves an object; older versions a string.
        let q = v["query"]["query"]
            .as_str()
            .or(v["query"].as_str())
            .unwrap_or_default();
        let (expr, lists_label) = variable_query(q);
        out.push(Query {
            place: format!("variable {}", v["name"].as_str().unwrap_or_default()),
            expr: expr.unwrap_or_default(),
            lists_label,
        });
    }
    for a in d["annotations"]["list"].as_array().into_iter().flatten() {
        if let Some(expr) = a["expr"].as_str() {
            out.push(Query {
                place: format!("annotation {:?}", a["name"].as_str().unwrap_or_default()),
                expr: expr.to_string(),
                lists_label: None,
            });
        }
    }
    out
}

/// A Prometheus query variable's query, in Grafana's functions: `label_values(expr,
/// label)`, `label_values(label)` or `query_result(expr)`. Returns the PromQL in it and
/// the label listed.
fn variable_query(q: &str) -> (Option<String>, Option<String>) {
    let q = q.trim();
    if let Some(args) = q
        .strip_prefix("label_values(")
        .and_then(|r| r.strip_suffix(')'))
    {
        return match args.rsplit_once(',') {
            Some((expr, label)) => (Some(expr.trim().into()), Some(label.trim().into())),
            None => (None, Some(args.trim().into())),
        };
    }
    if let Some(expr) = q
        .strip_prefix("query_result(")
        .and_then(|r| r.strip_suffix(')'))
    {
        return (Some(expr.trim().into()), None);
    }
    panic!("a variable query this test does not read: {q:?}");
}

/// What a PromQL expression refers to.
#[derive(Debug, Default, PartialEq)]
struct Uses {
    /// Metric names, each with the label names its braces match on.
    selectors: Vec<(String, Vec<String>)>,
    /// Label names in `by`, `without`, `on`, `ignoring`, `group_left`, `group_right`.
    grouping: Vec<String>,
}

impl Uses {
    fn metrics(&self) -> impl Iterator<Item = &str> {
        self.selectors.iter().map(|(m, _)| m.as_str())
    }
}

/// Keywords followed by a list of label names in parentheses.
const GROUPING: [&str; 6] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// Words that are neither metrics nor functions: binary operators, modifiers, and the
/// number literals that look like identifiers.
const KEYWORDS: [&str; 7] = ["and", "or", "unless", "bool", "offset", "inf", "nan"];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The index just past the string literal opening at `i` (`"` and `'` with backslash
/// escapes, `` ` `` raw).
fn skip_string(c: &[char], i: usize) -> usize {
    let quote = c[i];
    let mut j = i + 1;
    while j < c.len() && c[j] != quote {
        if c[j] == '\\' && quote != '`' {
            j += 1;
        }
        j += 1;
    }
    j + 1
}

/// The index just past the identifier starting at `i`.
fn skip_ident(c: &[char], i: usize) -> usize {
    let mut j = i;
    while j < c.len() && is_ident(c[j]) {
        j += 1;
    }
    j
}

/// Identifiers between `start` and the `close` that ends the list (strings skipped), and
/// the index past it: label names, in a selector's braces (whose values are strings) or
/// a grouping list.
fn label_names(c: &[char], start: usize, close: char) -> (Vec<String>, usize) {
    let mut names = Vec::new();
    let mut i = start;
    while i < c.len() && c[i] != close {
        if matches!(c[i], '"' | '\'' | '`') {
            i = skip_string(c, i);
        } else if is_ident_start(c[i]) {
            let end = skip_ident(c, i);
            names.push(c[i..end].iter().collect());
            i = end;
        } else {
            i += 1;
        }
    }
    (names, i + 1)
}

/// Reads `expr` (PromQL with Grafana's `$variables`) for the metrics and labels it uses.
/// Skips strings, numbers and durations, range and subquery brackets, `$variables`,
/// function and aggregation names (an identifier before `(`) and keywords.
fn uses(expr: &str) -> Uses {
    let c: Vec<char> = expr.chars().collect();
    let mut u = Uses::default();
    // The selector a `{` belongs to: the metric name just before it.
    let mut last_metric: Option<usize> = None;
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let after_metric = last_metric.take();
        if ch.is_whitespace() {
            last_metric = after_metric;
            i += 1;
        } else if matches!(ch, '"' | '\'' | '`') {
            i = skip_string(&c, i);
        } else if ch == '$' {
            // $name or ${name...}
            i += 1;
            if c.get(i) == Some(&'{') {
                while i < c.len() && c[i] != '}' {
                    i += 1;
                }
                i += 1;
            } else {
                i = skip_ident(&c, i);
            }
        } else if ch == '[' {
            // A range or subquery: durations and variables only.
            while i < c.len() && c[i] != ']' {
                i += 1;
            }
            i += 1;
        } else if ch == '{' {
            let (labels, end) = label_names(&c, i + 1, '}');
            match after_metric {
                Some(n) => u.selectors[n].1.extend(labels),
                None => panic!("a selector without a metric name in {expr:?}"),
            }
            i = end;
        } else if ch.is_ascii_digit()
            || (ch == '.' && c.get(i + 1).is_some_and(char::is_ascii_digit))
        {
            // A number (1.5, 1e-3, 0x1f) or a duration (5m).
            while i < c.len()
                && (c[i].is_ascii_alphanumeric()
                    || c[i] == '.'
                    || (matches!(c[i], '+' | '-') && matches!(c[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
        } else if is_ident_start(ch) {
            let end = skip_ident(&c, i);
            let word: String = c[i..end].iter().collect();
            let lower = word.to_ascii_lowercase();
            let next = c[end..]
                .iter()
                .position(|c| !c.is_whitespace())
                .map(|n| end + n);
            let paren = next.filter(|&n| c[n] == '(');
            // An aggregation may put its grouping first: `sum by (le) (...)`.
            let next_word: String = next
                .map(|n| c[n..skip_ident(&c, n)].iter().collect())
                .unwrap_or_default();
            let aggregation = matches!(next_word.as_str(), "by" | "without");
            i = end;
            if GROUPING.contains(&lower.as_str()) {
                // `group_left` may stand without a list.
                if let Some(open) = paren {
                    let (labels, end) = label_names(&c, open + 1, ')');
                    u.grouping.extend(labels);
                    i = end;
                }
            } else if KEYWORDS.contains(&lower.as_str()) || paren.is_some() || aggregation {
                // An operator or number; or a function or aggregation.
            } else {
                u.selectors.push((word, Vec::new()));
                last_metric = Some(u.selectors.len() - 1);
            }
        } else {
            i += 1;
        }
    }
    u
}

/// Sample names in a scrape (classic text format), each with the label names its
/// samples carry.
fn samples(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let labels = out.entry(line[..end].to_string()).or_default();
        if line[end..].starts_with('{') {
            let c: Vec<char> = line[end + 1..].chars().collect();
            labels.extend(label_names(&c, 0, '}').0);
        }
    }
    out
}

/// What in `queries` is not in the scrape: metrics, labels matched on or grouped by, and
/// labels a variable lists.
fn problems(queries: &[Query], scrape: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    let target = |l: &str| TARGET_LABELS.contains(&l);
    for q in queries {
        let u = uses(&q.expr);
        if u.selectors.is_empty() {
            out.push(format!("{}: no metric in {:?}", q.place, q.expr));
        }
        let mut all_known = true;
        for (metric, labels) in &u.selectors {
            let Some(have) = scrape.get(metric) else {
                out.push(format!("{}: {metric} is not in /metrics", q.place));
                all_known = false;
                continue;
            };
            for l in labels.iter().filter(|l| !target(l) && !have.contains(*l)) {
                out.push(format!("{}: {metric} has no label {l}", q.place));
            }
        }
        // Labels of an unknown metric are unknown: its name was reported.
        let on_some_metric = |l: &str| {
            !all_known
                || target(l)
                || u.metrics()
                    .any(|m| scrape.get(m).is_some_and(|have| have.contains(l)))
        };
        for l in u.grouping.iter().filter(|l| !on_some_metric(l)) {
            out.push(format!(
                "{}: no metric of {:?} has label {l}",
                q.place, q.expr
            ));
        }
        if let Some(l) = q.lists_label.as_deref().filter(|l| !on_some_metric(l)) {
            out.push(format!(
                "{}: lists label {l}, which {:?} has not",
                q.place, q.expr
            ));
        }
    }
    out
}

#[test]
fn the_query_reader_finds_metrics_not_labels_functions_or_variables() {
    let u = uses(
        r#"histogram_quantile(0.99, sum by (upstream, le) (rate(sluice_upstream_request_duration_seconds_bucket{instance=~"$instance", upstream=~"a{b}(c)"}[$__rate_interval])))"#,
    );
    assert_eq!(
        u,
        Uses {
            selectors: vec![(
                "sluice_upstream_request_duration_seconds_bucket".into(),
                vec!["instance".into(), "upstream".into()]
            )],
            grouping: vec!["upstream".into(), "le".into()],
        }
    );
    let u = uses(
        "(time() - process_start_time_seconds) * on (instance, job) group_left (version) sluice_build_info offset 5m > bool 1e3 and sluice_up unless nan",
    );
    let metrics: Vec<&str> = u.metrics().collect();
    assert_eq!(
        metrics,
        [
            "process_start_time_seconds",
            "sluice_build_info",
            "sluice_up"
        ]
    );
    assert_eq!(u.grouping, ["instance", "job", "version"]);
    assert_eq!(
        variable_query(r#"label_values(sluice_x{a=~"$a"}, server)"#),
        (Some(r#"sluice_x{a=~"$a"}"#.into()), Some("server".into()))
    );
    // A renamed metric or label is reported.
    let scrape = samples("# TYPE sluice_x_total counter\nsluice_x_total{upstream=\"a,b\",server=\"c\"} 1\nsluice_y 2\n");
    let query = |expr: &str| Query {
        place: "test".into(),
        expr: expr.into(),
        lists_label: None,
    };
    let ok = query(r#"sum by (server) (rate(sluice_x_total{upstream="a"}[5m])) / sluice_y"#);
    assert!(problems(&[ok], &scrape).is_empty());
    for wrong in [
        "rate(sluice_x[5m])",
        r#"sluice_x_total{route="a"}"#,
        "sum by (code) (sluice_x_total)",
    ] {
        assert_eq!(problems(&[query(wrong)], &scrape).len(), 1, "{wrong}");
    }
}

#[test]
fn the_dashboard_is_importable_and_every_panel_uses_the_prometheus_input() {
    let d = dashboard();
    let inputs = d["__inputs"].as_array().expect("__inputs");
    assert!(
        inputs.iter().any(|i| i["name"] == "DS_PROMETHEUS"
            && i["type"] == "datasource"
            && i["pluginId"] == "prometheus"),
        "{inputs:?}"
    );
    assert!(d["schemaVersion"].as_u64().unwrap() >= 36);
    assert!(d["uid"].as_str().is_some_and(|u| !u.is_empty()));
    let on_input =
        |v: &Value| v["uid"] == DATASOURCE && v["type"].as_str().is_none_or(|t| t == "prometheus");
    let all = panels(&d);
    let mut ids = BTreeSet::new();
    let mut graphs = Vec::new();
    for p in &all {
        let title = &p["title"];
        assert!(
            ids.insert(p["id"].as_u64().expect("an id")),
            "id of {title} again"
        );
        let pos = &p["gridPos"];
        let (x, w) = (pos["x"].as_u64().unwrap(), pos["w"].as_u64().unwrap());
        assert!(
            x + w <= 24 && pos["h"].as_u64().unwrap() > 0,
            "{title}: {pos}"
        );
        if p["type"] == "row" {
            continue;
        }
        assert!(on_input(&p["datasource"]), "{title}: {}", p["datasource"]);
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}");
        for t in targets {
            assert!(on_input(&t["datasource"]), "{title}: {t}");
            assert!(t["expr"].as_str().is_some_and(|e| !e.is_empty()), "{title}");
        }
        graphs.push(p);
    }
    assert!(graphs.len() >= 12, "{} panels", graphs.len());
    // No two panels (rows included) overlap.
    let rect = |p: &Value| {
        let g = &p["gridPos"];
        let n = |k: &str| g[k].as_u64().unwrap();
        (n("x"), n("y"), n("x") + n("w"), n("y") + n("h"))
    };
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            let (ra, rb) = (rect(a), rect(b));
            let apart = ra.2 <= rb.0 || rb.2 <= ra.0 || ra.3 <= rb.1 || rb.3 <= ra.1;
            assert!(apart, "{} and {} overlap", a["title"], b["title"]);
        }
    }
    let vars = d["templating"]["list"].as_array().unwrap();
    // File provisioning does not fill in __inputs: a data source variable of the same
    // name stands in for it there.
    assert!(
        vars.iter().any(|v| v["name"] == "DS_PROMETHEUS"
            && v["type"] == "datasource"
            && v["query"] == "prometheus"),
        "no data source variable DS_PROMETHEUS"
    );
    for name in ["upstream", "server"] {
        let v = vars.iter().find(|v| v["name"] == name).expect(name);
        assert!(on_input(&v["datasource"]), "variable {name}");
        let (_, label) = variable_query(v["query"]["query"].as_str().unwrap());
        assert_eq!(label.as_deref(), Some(name));
    }
    for a in d["annotations"]["list"].as_array().unwrap() {
        if a["expr"].is_string() {
            assert!(on_input(&a["datasource"]), "annotation {}", a["name"]);
        }
    }
}

/// Grafana's interval variables, replaced by durations for promtool.
const INTERVALS: [(&str, &str); 4] = [
    ("${__rate_interval}", "5m"),
    ("$__rate_interval", "5m"),
    ("$__interval", "1m"),
    ("$__range", "1h"),
];

/// `expr` as Prometheus gets it from Grafana: intervals as durations, and the
/// dashboard's variables (used in regular-expression matchers) as "all" (`.*`).
fn concrete(d: &Value, expr: &str) -> String {
    let mut e = INTERVALS
        .iter()
        .fold(expr.to_string(), |e, (var, d)| e.replace(var, d));
    for v in d["templating"]["list"].as_array().into_iter().flatten() {
        let name = v["name"].as_str().unwrap_or_default();
        e = e
            .replace(&format!("${{{name}}}"), ".*")
            .replace(&format!("${name}"), ".*");
    }
    e
}

/// Runs `promtool` with `args` and then `file`; its exit status and all it said.
fn promtool(args: &[&str], file: &std::path::Path) -> (bool, String) {
    let out = std::process::Command::new("promtool")
        .args(args)
        .arg(file)
        .output()
        .expect("promtool (Debian's prometheus package; scripts/test.sh installs it)");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), said)
}

#[test]
#[ignore = "needs promtool"]
fn promtool_parses_every_query_of_the_dashboard() {
    let d = dashboard();
    let all = queries(&d);
    let rules: Vec<Value> = all
        .iter()
        .enumerate()
        .map(|(n, q)| {
            let expr = concrete(&d, &q.expr);
            serde_json::json!({ "record": format!("dashboard:query_{n}"), "expr": expr })
        })
        .collect();
    // A rules file (YAML, of which JSON is a part) with each query as a recording rule:
    // `promtool check rules` parses every expression with Prometheus' parser.
    let dir = TempDir::new("grafana");
    let file = dir.file(
        "dashboard-rules.yml",
        &serde_json::json!({ "groups": [{ "name": "dashboard", "rules": rules }] }).to_string(),
    );
    let (ok, said) = promtool(&["check", "rules"], &file);
    let names: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(n, q)| format!("dashboard:query_{n} is {}: {}", q.place, q.expr))
        .collect();
    assert!(ok, "promtool check rules:\n{said}\n{}", names.join("\n"));
    assert!(
        said.contains(&format!("SUCCESS: {} rules found", rules.len())),
        "{said}"
    );
}

/// A scrape (classic text format) as input series of a promtool unit test: each sample
/// a series of 20 one-minute steps with the labels Prometheus would add; counters and
/// histograms grow by their value each step, gauges stay at theirs.
fn input_series(text: &str) -> Vec<Value> {
    let target = r#"instance="sluice-1:9901",job="sluice""#;
    let mut kind = "";
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            kind = rest.rsplit(' ').next().unwrap_or_default();
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let series = match series.strip_suffix('}') {
            Some(s) => format!("{s},{target}}}"),
            None => format!("{series}{{{target}}}"),
        };
        let values = if matches!(kind, "counter" | "histogram") {
            format!("0+{value}x20")
        } else {
            format!("{value}x20")
        };
        out.push(serde_json::json!({ "series": series, "values": values }));
    }
    out
}

/// The panel queries that Prometheus' own engine (`promtool test rules`) finds no data
/// for, evaluated over series made of the scrape `text` (see [`input_series`]).
fn empty_panels(d: &Value, text: &str) -> Vec<String> {
    let panel_queries: Vec<(String, String)> = queries(d)
        .into_iter()
        .filter(|q| q.place.starts_with("panel"))
        .map(|q| (q.place, concrete(d, &q.expr)))
        .collect();
    // Each query expects nothing, so promtool reports every query that returns
    // something, with what it got: the ones it does not report came back empty.
    let tests: Vec<Value> = panel_queries
        .iter()
        .map(|(_, e)| serde_json::json!({ "expr": e, "eval_time": "15m", "exp_samples": [] }))
        .collect();
    let test = serde_json::json!({
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{ "interval": "1m", "input_series": input_series(text), "promql_expr_test": tests }],
    });
    let dir = TempDir::new("grafana-eval");
    let file = dir.file("dashboard-test.yml", &test.to_string());
    let (_, said) = promtool(&["test", "rules"], &file);
    panel_queries
        .into_iter()
        .filter(|(_, e)| !said.contains(&format!("expr: {e:?},")))
        .map(|(place, e)| format!("{place}: no data for {e}"))
        .chain(
            // promtool could not run the test at all.
            (!said.contains("got:")).then(|| format!("promtool test rules:\n{said}")),
        )
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs promtool"]
async fn every_metric_the_dashboard_queries_is_in_the_scrape() {
    // Traffic through every path the dashboard shows: answers from a server, a dead
    // server (connect failures, a retry, an ejection), a host without a route (a 404
    // sluice answers itself) and a reload. Families with nothing to count (tunnels, the
    // retry budget) are still written, with zeros.
    let a = backend("a").await;
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = format!(
        "workers = 2\n[[route]]\nhost = \"app.test\"\nupstream = \"app\"\n[upstream.app]\nservers = [\"{a}\", \"{dead}\"]\nmax_fails = 1\neject_for = \"30s\"\n"
    );
    let p = proxy(&config);
    let admin = sluice_admin::start(
        &sluice_config::Admin::new(loopback(), None),
        p.view(),
        sluice_admin::Info::default(),
    )
    .unwrap();
    let mut client = Client::connect(p.addr).await;
    for host in ["app.test"; 6].into_iter().chain(["other.test"; 2]) {
        client
            .send(&format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n"))
            .await;
        let status = client.read_reply().await.expect("a reply").status;
        assert_eq!(status, if host == "app.test" { 200 } else { 404 });
    }
    p.reload(&config);
    let reply = get(admin.addr, "/metrics").await;
    assert_eq!(reply.status, 200);
    let text = reply.text();
    assert!(!text.contains("# EOF"), "not the classic format:\n{text}");
    let scrape = samples(&text);
    let tunnels = text
        .lines()
        .find(|l| l.starts_with("sluice_upstream_tunnels_open{"));
    assert!(
        tunnels.is_some_and(|l| l.ends_with(" 0")),
        "a family without traffic is written with zeros:\n{text}"
    );

    let d = dashboard();
    let all = queries(&d);
    let found = problems(&all, &scrape);
    assert!(found.is_empty(), "{found:#?}\n\n/metrics:\n{text}");
    // And every panel shows something: each query, evaluated by Prometheus' engine over
    // series made of this scrape, returns data.
    let empty = empty_panels(&d, &text);
    assert!(empty.is_empty(), "{empty:#?}");
    let used: BTreeSet<String> = all
        .iter()
        .flat_map(|q| uses(&q.expr).selectors)
        .map(|(m, _)| m)
        .collect();
    println!("the dashboard queries {} metrics: {used:#?}", used.len());
    for must in [
        "sluice_upstream_requests_total",
        "sluice_upstream_request_duration_seconds_bucket",
        "sluice_upstream_first_byte_duration_seconds_bucket",
        "sluice_upstream_connect_duration_seconds_bucket",
        "sluice_route_requests_total",
        "sluice_listener_rejects_total",
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
    ] {
        assert!(used.contains(must), "{must}");
    }

    // The same check on the dashboard with one metric misspelled fails, naming it.
    let text = std::fs::read_to_string(dashboard_path()).unwrap().replace(
        "sluice_upstream_tunnels_open",
        "sluice_upstream_tunnel_open",
    );
    let found = problems(&queries(&serde_json::from_str(&text).unwrap()), &scrape);
    assert!(
        !found.is_empty()
            && found
                .iter()
                .all(|f| f.contains("sluice_upstream_tunnel_open")),
        "{found:#?}"
    );
}
