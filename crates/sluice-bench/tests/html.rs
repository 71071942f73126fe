//! The `--html` report in a real browser: a real run against the lab's backend on
//! 127.0.0.1, its page opened by headless Chromium, and the DOM the page's script built
//! checked (charts drawn, no script error, the summary's numbers those of the report).
//!
//! Chromium is a system package; `scripts/test.sh` installs it. The pages are left in
//! `target/tmp/sluice-bench-html/` to open by hand.

mod common;

use common::{backend_addr, plan, run};
use sluice_bench::report::{ConnectionsReport, DeliveryReport, Report};
use sluice_bench::{html, Length, Load, RequestSpec, Step, Target, Weighted};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A label that would break the page if it went in as HTML or closed the data script.
const EVIL_LABEL: &str = "GET /b </script><!--<script><b>bold</b>";

/// Charts per step: TPS over time and latency over time.
const CHARTS_PER_STEP: usize = 2;

/// How long Chromium may take before the test kills it and fails.
const BROWSER_DEADLINE: Duration = Duration::from_secs(60);

/// Two steps of `loads`, two labels (two URLs, one with a hostile label).
fn report_of(name: &str, loads: [Load; 2]) -> Report {
    let addr = backend_addr(name);
    let steps = loads
        .iter()
        .map(|&load| Step {
            load,
            length: Length::Duration(Duration::from_millis(1500)),
        })
        .collect();
    let mut plan = plan(&format!("http://{addr}/a"), steps, true);
    let target = Target::parse(&format!("http://{addr}/b")).unwrap();
    let mut second = RequestSpec::new("GET", target, &[], vec![]).unwrap();
    second.label = EVIL_LABEL.into();
    plan.requests.push(Weighted {
        request: second,
        weight: 1,
    });
    let report = run(plan);
    assert_eq!(report.steps.len(), 2);
    for step in &report.steps {
        assert_eq!(step.labels.len(), 2, "both labels ran");
        assert!(step.per_second.len() >= 2, "{:?}", step.per_second.len());
    }
    report
}

fn chromium() -> PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("chromium"))
            .find(|p| p.is_file())
    });
    let found = on_path.or_else(|| {
        let p = PathBuf::from("/usr/bin/chromium");
        p.is_file().then_some(p)
    });
    found.unwrap_or_else(|| {
        panic!(
            "chromium not found on PATH: this test opens the --html report in headless \
             Chromium. scripts/test.sh installs it (Debian package `chromium`)."
        )
    })
}

/// The page's DOM after its scripts ran, as headless Chromium dumps it. Chromium's
/// stderr (noisy: it finds no D-Bus here) goes to `log`.
fn dump_dom(page: &Path, profile: &Path, log: &Path) -> String {
    let stderr = std::fs::File::create(log).unwrap();
    let mut child = Command::new(chromium())
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .args([
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
        ])
        .args([
            "--disable-background-networking",
            "--disable-component-update",
        ])
        // The page is a file and needs no network: resolve no name at all.
        .arg("--host-resolver-rules=MAP * ~NOTFOUND")
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=5000", "--dump-dom"])
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (done, dumped) = mpsc::channel();
    std::thread::spawn(move || {
        let mut dom = String::new();
        let read = stdout.read_to_string(&mut dom);
        let _ = done.send(read.map(|_| dom));
    });
    let dom = match dumped.recv_timeout(BROWSER_DEADLINE) {
        Ok(dom) => dom.unwrap(),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {BROWSER_DEADLINE:?}; killed it");
        }
    };
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "chromium: {status}; see {}",
        log.display()
    );
    dom
}

/// Writes the page and returns the DOM Chromium built from it.
fn render_in_browser(name: &str, report: &Report) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sluice-bench-html");
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html::render(report)).unwrap();
    let profile = dir.join(format!("{name}-profile-{}", std::process::id()));
    let log = dir.join(format!("{name}.chromium.log"));
    let dom = dump_dom(&page, &profile, &log);
    let _ = std::fs::remove_dir_all(&profile);
    dom
}

/// The opening tag of `<body>`, where the page reports how it went.
fn body_tag(dom: &str) -> &str {
    let start = dom.find("<body").expect("a <body> in the DOM");
    let end = start + dom[start..].find('>').unwrap();
    &dom[start..=end]
}

/// The text of the first `<td class="{class}">` after `id="{row_id}"`.
fn cell_after(dom: &str, row_id: &str, class: &str) -> String {
    let row = dom
        .find(&format!("id=\"{row_id}\""))
        .unwrap_or_else(|| panic!("no row {row_id} in the DOM"));
    let open = format!("<td class=\"{class}\">");
    let start = row + dom[row..].find(&open).unwrap() + open.len();
    let len = dom[start..].find("</td>").unwrap();
    dom[start..start + len].to_string()
}

fn latency_of(report: &Report) -> sluice_bench::report::Latencies {
    report.steps[0].summary.latency.clone()
}

/// What every page must show, whatever the model.
fn check_page(dom: &str, report: &Report) {
    // Two charts per step, and two across the steps when there are several.
    let across = if report.steps.len() > 1 { 2 } else { 0 };
    let charts = report.steps.len() * CHARTS_PER_STEP + across;
    assert_eq!(dom.contains("<h2>Across steps</h2>"), across > 0);
    let body = body_tag(dom);
    assert!(!body.contains("data-error"), "script error: {body}");
    assert!(
        body.contains(&format!("data-rendered=\"{charts}\"")),
        "not rendered: {body}"
    );
    // uPlot draws on one canvas per chart.
    assert_eq!(dom.matches("<canvas").count(), charts, "canvases");
    assert_eq!(dom.matches("class=\"uplot").count(), charts, "uPlot roots");
    for (i, step) in report.steps.iter().enumerate() {
        let shown = cell_after(dom, &format!("step-{i}-total"), "samples");
        let shown: u64 = shown
            .parse()
            .unwrap_or_else(|_| panic!("samples cell {shown:?}"));
        assert_eq!(shown, step.summary.samples, "step {i} samples");
        assert!(step.summary.samples > 0);
        // Every response of the lab backend is a 200, and the page counts them.
        let statuses = cell_after(dom, &format!("step-{i}-total"), "statuses");
        assert_eq!(statuses, format!("200 \u{d7} {}", step.summary.samples));
    }
    // The hostile label is text in the page, not markup: no <b> element came of it.
    assert!(dom.contains("GET /b &lt;/script&gt;&lt;!--&lt;script&gt;&lt;b&gt;bold&lt;/b&gt;"));
    assert!(!dom.contains("<b>bold</b>"));
}

#[test]
#[ignore = "needs chromium"]
fn closed_model_page_draws_its_charts_and_tables() {
    let users = |users| Load::Users {
        users,
        ramp: Duration::ZERO,
        think: Duration::from_millis(5),
    };
    let mut report = report_of("html-closed", [users(2), users(4)]);
    // Made-up STOMP figures (tests/scenario.rs measures real ones): only that the page
    // shows them, without a script error.
    let latency = report.steps[1].summary.latency.clone();
    report.steps[1].delivery = Some(DeliveryReport {
        messages: 5,
        expected: 20,
        delivered: 19,
        lost: 1,
        lost_pct: 5.0,
        unexpected: 0,
        latency,
        delivered_per_s: 12.5,
        hdr: String::new(),
    });
    // Made-up TLS figures and a warning: only that the page shows them.
    report.steps[0].connections = Some(ConnectionsReport {
        opened: 2,
        tls_handshakes: 3,
        tls_resumed: 1,
        tls_handshakes_per_s: 1.5,
        handshake: Some(latency_of(&report)),
        hdr_handshake: None,
        h2_goaways: 0,
        h2_resets: 0,
    });
    report.steps[0].warnings = vec!["all 3 responses were 301 to https://shop.test/".into()];
    let dom = render_in_browser("closed", &report);
    check_page(&dom, &report);
    assert!(dom.contains("TLS: 3 handshakes (1 resumed), 1.5/s over 2 connections"));
    assert!(dom.contains("<p class=\"warning\">all 3 responses were 301 to https://shop.test/</p>"));
    assert_eq!(
        dom.matches("class=\"delivery\"").count(),
        1,
        "delivery table"
    );
    assert!(dom.contains("<td class=\"delivered\">19</td>"));
    // The JSON and the script name them too: look for the table's rows.
    assert!(
        !dom.contains("<td class=\"what\">"),
        "uncorrected figures are for the open model"
    );
}

#[test]
#[ignore = "needs chromium"]
fn open_model_page_shows_uncorrected_latency_too() {
    let rate = |rate| Load::Rate {
        rate,
        max_in_flight: 50,
    };
    let report = report_of("html-open", [rate(200.0), rate(400.0)]);
    assert_eq!(report.model, "open");
    let dom = render_in_browser("open", &report);
    check_page(&dom, &report);
    // Per step: corrected, uncorrected and send lag for the total and each of two labels.
    assert_eq!(
        dom.matches("<td class=\"what\">uncorrected</td>").count(),
        2 * 3
    );
}
