//! The `--html` report: one self-contained page (no CDN, no network) with, per step, the
//! TPS and latency over time and the summary tables in JMeter's terms.
//!
//! This module owns the page's frame and the data it carries. The page is static HTML
//! plus the report as JSON; a small script (`assets/report.js`) builds the tables and the
//! charts (uPlot, vendored under `assets/uplot/`) from that JSON. Labels and URLs are
//! user text: the script inserts every string with `textContent`, never `innerHTML`, and
//! the JSON is escaped here so that no string can end its `<script>` element.

use crate::report::Report;
use serde_json::Value;

const UPLOT_JS: &str = include_str!("../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uplot/uPlot.min.css");
const PAGE_JS: &str = include_str!("../assets/report.js");
const PAGE_CSS: &str = include_str!("../assets/report.css");

/// The base64 histograms: what `sluice bench merge` needs, tens of KiB per step that the
/// page never reads.
const HISTOGRAM_KEYS: [&str; 4] = ["hdr", "hdr_uncorrected", "hdr_send_lag", "hdr_handshake"];

/// Installed before anything else runs, so that an error in uPlot itself is reported too.
/// A test (and a user wondering why a chart is missing) reads `data-error` on `<body>`.
const ON_ERROR_JS: &str = "window.onerror = function (message) {\
 document.body.dataset.error = String(message); };";

/// The whole page for `report`.
pub fn render(report: &Report) -> String {
    page("sluice bench report", &data_json(report), PAGE_CSS, PAGE_JS)
}

/// A self-contained page titled `title`: `data` (JSON, embedded safely as `#data`),
/// uPlot, then the page's own style and script, which build it from the data. Shared
/// with `sluice lab`'s report, so both pages draw with the same vendored charts.
pub fn page(title: &str, data: &str, css: &str, js: &str) -> String {
    let data = script_safe(data);
    let mut page = String::with_capacity(UPLOT_JS.len() + data.len() + 16 * 1024);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    page.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    page.push_str("<title>");
    page.push_str(&title.replace('&', "&amp;").replace('<', "&lt;"));
    page.push_str("</title>\n");
    push_element(&mut page, "<style>", UPLOT_CSS, "</style>");
    push_element(&mut page, "<style>", css, "</style>");
    page.push_str("</head>\n<body>\n<main id=\"report\"></main>\n");
    push_element(
        &mut page,
        "<script type=\"application/json\" id=\"data\">",
        &data,
        "</script>",
    );
    push_element(&mut page, "<script>", ON_ERROR_JS, "</script>");
    push_element(&mut page, "<script>", UPLOT_JS, "</script>");
    push_element(&mut page, "<script>", js, "</script>");
    page.push_str("</body>\n</html>\n");
    page
}

fn push_element(page: &mut String, open: &str, body: &str, close: &str) {
    page.push_str(open);
    page.push('\n');
    page.push_str(body);
    page.push('\n');
    page.push_str(close);
    page.push('\n');
}

/// The report as JSON, without its histograms, safe to place inside `<script>`.
fn data_json(report: &Report) -> String {
    // A Report has only string map keys and plain fields: serializing it cannot fail. Were
    // it to, the page says so (the script fails on `null` and sets `data-error`).
    let mut value = serde_json::to_value(report).unwrap_or_default();
    strip_histograms(&mut value);
    value.to_string()
}

fn strip_histograms(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for key in HISTOGRAM_KEYS {
                map.remove(key);
            }
            map.values_mut().for_each(strip_histograms);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_histograms),
        _ => {}
    }
}

/// JSON that cannot end the `<script>` element holding it. In JSON, `<` only occurs inside
/// strings, where `\/` and `\u003c` are valid escapes that `JSON.parse` undoes:
/// - `</` becomes `<\/`: a label `</script>` would otherwise close the element;
/// - `<!--` becomes `\u003c!--`: it (followed by `<script`) would put the HTML parser in
///   the "double escaped" state, where even our own `</script>` no longer closes it.
fn script_safe(json: &str) -> String {
    json.replace("</", "<\\/").replace("<!--", "\\u003c!--")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{
        DeliveryReport, Latencies, RequestInfo, SecondReport, StepReport, Summary,
    };
    use std::collections::BTreeMap;

    const EVIL: &str = "GET /a</script><script>alert(1)</script><!--<script>";

    fn latencies() -> Latencies {
        Latencies {
            mean_ms: 1.5,
            min_ms: 0.5,
            max_ms: 9.0,
            stddev_ms: 0.7,
            p50_ms: 1.2,
            p90_ms: 2.0,
            p95_ms: 3.0,
            p99_ms: 5.0,
            p999_ms: 8.0,
        }
    }

    fn summary() -> Summary {
        Summary {
            samples: 10,
            errors: 1,
            error_pct: 10.0,
            latency: latencies(),
            throughput_rps: 10.0,
            peak_tps: 10,
            received_kib_s: 1.0,
            sent_kib_s: 0.5,
            received_bytes: 1024,
            sent_bytes: 512,
            span_s: 1.0,
            error_kinds: BTreeMap::from([(EVIL.to_string(), 1)]),
            statuses: BTreeMap::from([("200".to_string(), 9), ("503".to_string(), 1)]),
            status_classes: BTreeMap::from([("2xx".to_string(), 9), ("5xx".to_string(), 1)]),
            redirects: BTreeMap::new(),
            failures: vec![crate::stats::Failure {
                error: EVIL.into(),
                status: Some(403),
                request: EVIL.into(),
                cookies: Some(EVIL.into()),
                response: EVIL.into(),
            }],
            uncorrected: latencies(),
            send_lag: latencies(),
            hdr: "HDRBASE64".into(),
            hdr_uncorrected: "HDRBASE64".into(),
            hdr_send_lag: "HDRBASE64".into(),
        }
    }

    fn report() -> Report {
        let step = StepReport {
            users: None,
            rate: Some(10.0),
            arrivals: false,
            duration_s: 1.0,
            started_unix_ms: 0,
            summary: summary(),
            missed: 0,
            widened_pace_ms: None,
            per_second: vec![SecondReport {
                second: 0,
                requests: 10,
                errors: 1,
                mean_ms: 1.5,
                p50_ms: 1.2,
                p99_ms: 5.0,
                max_ms: 9.0,
                hdr: "HDRBASE64".into(),
            }],
            labels: BTreeMap::from([(EVIL.to_string(), summary())]),
            delivery: Some(DeliveryReport {
                messages: 2,
                expected: 4,
                delivered: 4,
                lost: 0,
                lost_pct: 0.0,
                unexpected: 0,
                latency: latencies(),
                delivered_per_s: 4.0,
                hdr: "HDRBASE64".into(),
            }),
            connections: None,
            warnings: vec![EVIL.to_string()],
            generator: None,
            interrupted: false,
        };
        Report {
            tool: "sluice bench test".into(),
            requests: vec![RequestInfo {
                label: EVIL.into(),
                method: "GET".into(),
                url: "http://127.0.0.1/a".into(),
                weight: 1,
            }],
            model: "open".into(),
            protocol: "h2".into(),
            streams_per_connection: Some(10),
            interrupted: true,
            steps: vec![step],
        }
    }

    /// The JSON element's text, as the HTML parser would cut it: up to the first `</script`.
    fn data_element(page: &str) -> &str {
        let open = "<script type=\"application/json\" id=\"data\">";
        let start = page.find(open).unwrap() + open.len();
        let len = page[start..].to_ascii_lowercase().find("</script").unwrap();
        &page[start..start + len]
    }

    #[test]
    fn a_label_cannot_close_the_data_script() {
        let page = render(&report());
        let text = data_element(&page);
        assert!(!text.contains("<!--"), "{text}");
        // The element holds the whole JSON, and it reads back to the labels as written.
        let data: Value = serde_json::from_str(text).unwrap();
        assert_eq!(data["requests"][0]["label"], EVIL);
        assert_eq!(data["steps"][0]["labels"][EVIL]["samples"], 10);
        assert_eq!(data["steps"][0]["error_kinds"][EVIL], 1);
        let failure = &data["steps"][0]["labels"][EVIL]["failures"][0];
        assert_eq!(
            (&failure["response"], &failure["cookies"]),
            (&EVIL.into(), &EVIL.into())
        );
    }

    #[test]
    fn histograms_are_left_out() {
        let page = render(&report());
        assert!(!page.contains("HDRBASE64"));
        let data: Value = serde_json::from_str(data_element(&page)).unwrap();
        assert_eq!(data["steps"][0]["uncorrected"]["p99_ms"], 5.0);
        assert!(data["steps"][0]["per_second"][0].get("hdr").is_none());
        assert_eq!(data["steps"][0]["delivery"]["delivered"], 4);
        assert!(data["steps"][0]["delivery"].get("hdr").is_none());
    }

    #[test]
    fn inlined_assets_cannot_end_their_elements() {
        // The page inlines them into <script> and <style>: a `</` would end those early.
        for (name, text) in [
            ("uPlot.iife.min.js", UPLOT_JS),
            ("uPlot.min.css", UPLOT_CSS),
            ("report.js", PAGE_JS),
            ("report.css", PAGE_CSS),
        ] {
            assert!(!text.contains("</"), "{name} contains `</`");
            assert!(!text.contains("<!--"), "{name} contains `<!--`");
        }
    }
}
