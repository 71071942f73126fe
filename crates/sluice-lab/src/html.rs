//! The `--html` report of `sluice lab`: one self-contained page (no network) with the
//! verdict and its evidence, the scaling curve (throughput and p99 against users, one
//! line per number of servers), each tier's utilisation per step, the steps' table, per
//! configuration where a request's time went and the scalability fit, and the proof. The frame and the charts (uPlot, vendored once) are `sluice bench`'s;
//! `assets/lab.js` builds the page from the report's JSON, inserting every string as
//! text (tier names and evidence can be user text).

use crate::report::LabReport;

const PAGE_JS: &str = include_str!("../assets/lab.js");
const PAGE_CSS: &str = include_str!("../assets/lab.css");

/// The whole page for `report`.
pub fn render(report: &LabReport) -> String {
    // A LabReport has only plain fields and string keys: serializing cannot fail; were
    // it to, the page's script fails on `null` and says so in `data-error`.
    let data = serde_json::to_string(report).unwrap_or_else(|_| "null".into());
    sluice_bench::html::page("sluice lab report", &data, PAGE_CSS, PAGE_JS)
}
