// The `sluice bench --html` page: builds the tables and charts from the report's JSON
// (the element #data, embedded by src/html.rs). Labels, URLs and error kinds are user
// text: every string goes in with textContent, never innerHTML.
// When all is drawn, the body's data-rendered attribute counts the charts, which is what
// the browser test waits for; an error sets data-error instead (window.onerror, set
// earlier, in src/html.rs).
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("data").textContent);
  var root = document.getElementById("report");
  var charts = 0;
  var open = data.model === "open";

  // The columns of the summary tables, in the order and words of JMeter's Aggregate and
  // Summary Reports. `of(summary)` gives the cell's text.
  var SUMMARY_COLUMNS = [
    ["samples", "# Samples", function (s) { return String(s.samples); }],
    ["errors", "Errors", function (s) { return String(s.errors); }],
    ["error_pct", "Error %", function (s) { return fixed(s.error_pct, 2) + "%"; }],
    ["mean", "Average", ms("mean_ms")],
    ["min", "Min", ms("min_ms")],
    ["max", "Max", ms("max_ms")],
    ["stddev", "Std. Dev.", ms("stddev_ms")],
    ["p50", "Median", ms("p50_ms")],
    ["p90", "90% Line", ms("p90_ms")],
    ["p95", "95% Line", ms("p95_ms")],
    ["p99", "99% Line", ms("p99_ms")],
    ["p999", "99.9% Line", ms("p999_ms")],
    ["throughput", "Throughput /s", function (s) { return fixed(s.throughput_rps, 2); }],
    ["peak_tps", "Peak TPS", function (s) { return String(s.peak_tps); }],
    ["received", "Received KiB/s", function (s) { return fixed(s.received_kib_s, 2); }],
    ["sent", "Sent KiB/s", function (s) { return fixed(s.sent_kib_s, 2); }],
    ["statuses", "Status codes", statuses]
  ];

  // The latency figures of a `Latencies` (flattened into a summary, or on its own).
  var LATENCY_COLUMNS = [
    ["mean", "Average", "mean_ms"], ["min", "Min", "min_ms"], ["max", "Max", "max_ms"],
    ["stddev", "Std. Dev.", "stddev_ms"], ["p50", "Median", "p50_ms"],
    ["p90", "90%", "p90_ms"], ["p95", "95%", "p95_ms"], ["p99", "99%", "p99_ms"],
    ["p999", "99.9%", "p999_ms"]
  ];

  // `200 × 9900, 503 × 100`: every response by its status (results written before
  // statuses were counted have none).
  function statuses(s) {
    var codes = Object.keys(s.statuses || {});
    if (codes.length === 0) { return "-"; }
    return codes.map(function (c) { return c + " \u00d7 " + s.statuses[c]; }).join(", ");
  }

  function fixed(n, digits) {
    return n === null || n === undefined ? "-" : Number(n).toFixed(digits);
  }

  function ms(key) {
    return function (s) { return fixed(s[key], 3); };
  }

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) { e.className = className; }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  function add(parent, tag, className, text) {
    return parent.appendChild(el(tag, className, text));
  }

  function stepName(step) {
    if (step.users !== undefined && step.users !== null) { return step.users + " users"; }
    if (step.rate !== undefined && step.rate !== null) { return step.rate + " req/s"; }
    return "-";
  }

  // A table in a scrolling box: the summary has many columns.
  function table(parent, caption, headers) {
    var box = add(parent, "div", "table-box");
    var t = add(box, "table");
    add(t, "caption", null, caption);
    var tr = add(add(t, "thead"), "tr");
    headers.forEach(function (h) { add(tr, "th", null, h); });
    return add(t, "tbody");
  }

  function header() {
    add(root, "h1", null, "sluice bench report");
    var model = open
      ? "open model (arrival rate): latency counts from each request's intended send " +
        "time, corrected for coordinated omission"
      : "closed model (users in steps)";
    add(root, "p", "meta", data.tool + " \u2014 " + model);
    if (data.steps.length > 0) {
      var started = new Date(data.steps[0].started_unix_ms);
      add(root, "p", "meta", "started " + started.toISOString());
    }
    if (data.interrupted) {
      add(root, "p", "warning",
        "Interrupted: the run was stopped (Ctrl-C); the last step holds what was " +
        "measured until then.");
    }
    var body = table(root, "Requests", ["Label", "Method", "URL", "Weight"]);
    data.requests.forEach(function (r) {
      var tr = add(body, "tr");
      [r.label, r.method, r.url].forEach(function (text) { add(tr, "td", "text", text); });
      add(tr, "td", null, String(r.weight));
    });
  }

  function summaryRow(body, step, label, summary) {
    var tr = add(body, "tr", label === null ? "total" : null);
    add(tr, "td", "step", stepName(step));
    add(tr, "td", "label", label === null ? "TOTAL" : label).title = label || "";
    SUMMARY_COLUMNS.forEach(function (c) { add(tr, "td", c[0], c[2](summary)); });
    return tr;
  }

  function summaryTable(section, step, i) {
    var headers = ["Step", "Label"].concat(SUMMARY_COLUMNS.map(function (c) { return c[1]; }));
    var body = table(section, "Summary (times in ms)", headers);
    body.parentNode.id = "summary-" + i;
    Object.keys(step.labels).forEach(function (label) {
      summaryRow(body, step, label, step.labels[label]);
    });
    summaryRow(body, step, null, step).id = "step-" + i + "-total";
  }

  function latencyRow(body, label, what, l) {
    var tr = add(body, "tr", label === null ? "total" : null);
    add(tr, "td", "label", label === null ? "TOTAL" : label);
    add(tr, "td", "what", what);
    LATENCY_COLUMNS.forEach(function (c) { add(tr, "td", c[0], fixed(l[c[2]], 3)); });
  }

  // Open model only: what a tool without coordinated-omission correction would have shown.
  function uncorrectedTable(section, step) {
    add(section, "p", "note",
      "Corrected latency counts from when each request was due; uncorrected, from when " +
      "it was actually sent (what tools without coordinated-omission correction report). " +
      "Send lag: how late requests went out after their intended time.");
    var headers = ["Label", "Latency"].concat(LATENCY_COLUMNS.map(function (c) { return c[1]; }));
    var body = table(section, "Corrected vs uncorrected latency (ms)", headers);
    var rows = [[null, step]].concat(Object.keys(step.labels).map(function (label) {
      return [label, step.labels[label]];
    }));
    rows.forEach(function (row) {
      latencyRow(body, row[0], "corrected", row[1]);
      latencyRow(body, row[0], "uncorrected", row[1].uncorrected);
      latencyRow(body, row[0], "send lag", row[1].send_lag);
    });
  }

  // STOMP scenarios only: each SEND is due at every subscriber of its destination.
  function deliveryTable(section, d) {
    var counts = [["messages", "Messages"], ["expected", "Copies due"],
      ["delivered", "Delivered"], ["lost", "Lost"]];
    var headers = counts.map(function (c) { return c[1]; }).concat(["Lost %", "Unexpected",
      "Delivered /s"], LATENCY_COLUMNS.map(function (c) { return c[1] + " ms"; }));
    var body = table(section, "STOMP message delivery (latency from the SEND)", headers);
    body.parentNode.className = "delivery";
    var tr = add(body, "tr");
    counts.forEach(function (c) { add(tr, "td", c[0], String(d[c[0]])); });
    add(tr, "td", "lost_pct", fixed(d.lost_pct, 2) + "%");
    add(tr, "td", "unexpected", String(d.unexpected));
    add(tr, "td", "delivered_per_s", fixed(d.delivered_per_s, 2));
    LATENCY_COLUMNS.forEach(function (c) { add(tr, "td", c[0], fixed(d[c[2]], 3)); });
  }

  function stepFacts(section, step) {
    var facts = "duration " + fixed(step.duration_s, 3) + " s, started " +
      new Date(step.started_unix_ms).toISOString();
    add(section, "p", "meta", facts);
    if (step.interrupted) {
      add(section, "p", "warning", "This step was interrupted: it holds what was measured until then.");
    }
    if (step.missed > 0) {
      add(section, "p", "warning", step.missed + " requests missed: their time came and " +
        "they could not be sent before the step ended (raise --max-in-flight).");
    }
    var c = step.connections;
    if (c && c.tls_handshakes > 0) {
      add(section, "p", "meta", "TLS: " + c.tls_handshakes + " handshakes (" + c.tls_resumed +
        " resumed), " + fixed(c.tls_handshakes_per_s, 1) + "/s over " + c.opened +
        " connections; handshake p50 " + fixed(c.handshake.p50_ms, 3) + " ms, p99 " +
        fixed(c.handshake.p99_ms, 3) + " ms.");
    }
    (step.warnings || []).forEach(function (w) { add(section, "p", "warning", w); });
    var kinds = Object.keys(step.error_kinds);
    if (kinds.length > 0) {
      var list = add(section, "ul", "errors");
      kinds.forEach(function (k) { add(list, "li", null, step.error_kinds[k] + " \u00d7 " + k); });
    }
    failures(section, step);
  }

  // Each label's first failure of each kind, as JMeter's View Results Tree shows a
  // sample: what was sent (with its cookies) and the start of the answer. Text only.
  function failures(section, step) {
    Object.keys(step.labels).forEach(function (label) {
      (step.labels[label].failures || []).forEach(function (f) {
        var box = add(section, "details", "failure");
        add(box, "summary", null, label + ": " + f.error + (f.request ? " \u2014 " + f.request : ""));
        if (f.cookies) { add(box, "p", "meta", "Cookie: " + f.cookies); }
        if (f.response) { add(box, "pre", null, f.response); }
      });
    });
  }

  // Fits two charts side by side on a wide page, one per row on a narrow one. The slack
  // is for the scrollbar, which appears only once the page has grown.
  function chartWidth(section) {
    var available = section.clientWidth || 800;
    var half = Math.floor((available - 16 - 32) / 2);
    return half >= 420 ? half : Math.max(320, available - 8);
  }

  // A chart of `columns` (x first) in `parent`; `x` is the x axis (its label, and
  // how its ticks read).
  function chart(parent, title, x, yLabel, series, columns) {
    var box = add(parent, "div", "chart");
    add(box, "h3", null, title);
    var opts = {
      width: chartWidth(parent.parentNode),
      height: 260,
      scales: { x: { time: false } },
      axes: [x, { label: yLabel, size: 60 }],
      series: [{ label: x.label }].concat(series)
    };
    new uPlot(opts, columns, box);
    charts += 1;
  }

  // The x axis of a step's charts: its seconds, whole ones only.
  var SECONDS = { label: "second of the step", values: function (u, ticks) {
    return ticks.map(function (t) { return Number.isInteger(t) ? String(t) : ""; });
  } };

  function line(label, color, dash) {
    var s = { label: label, stroke: color, width: 2, points: { show: true, size: 5 } };
    if (dash) { s.dash = [6, 4]; }
    return s;
  }

  function stepCharts(section, step) {
    var row = add(section, "div", "charts");
    var per = step.per_second;
    var x = per.map(function (p) { return p.second; });
    // A second without completions has no latency: a gap, not a zero.
    var lat = function (key) {
      return per.map(function (p) { return p.requests > 0 ? p[key] : null; });
    };
    // The last second is cut by the step's end: its counts are scaled to a rate, so
    // that the curve does not fall towards zero where the load did not.
    var covered = lastCovered(step);
    var rate = function (key) {
      return per.map(function (p, i) {
        return i === per.length - 1 && covered < 0.999 ? p[key] / Math.max(covered, 0.001) : p[key];
      });
    };
    chart(row, "Transactions per second", SECONDS, "requests / s",
      [line("requests/s", "#1f6fb2"), line("errors/s", "#c62828")],
      [x, rate("requests"), rate("errors")]);
    chart(row, "Latency over time", SECONDS, "ms",
      [line("mean", "#6a1b9a"), line("p50", "#2e7d32"), line("p99", "#ef6c00"),
        line("max", "#c62828", true)],
      [x, lat("mean_ms"), lat("p50_ms"), lat("p99_ms"), lat("max_ms")]);
    var note = per.length === 0 ? "No request completed in this step."
      : "Each point is one second of the step, by when requests completed" +
        partialSecond(step) + (open ? "; latency corrected for coordinated omission." : ".");
    add(section, "p", "note", note);
  }

  // How much of its last second a step lasted (1 when it ended on a whole second).
  function lastCovered(step) {
    var per = step.per_second;
    if (per.length === 0) { return 1; }
    return Math.min(1, step.duration_s - per[per.length - 1].second);
  }

  function partialSecond(step) {
    var covered = lastCovered(step);
    return covered < 0.999 ? "; the last covers only " + fixed(covered, 3) +
      " s, its counts scaled to a rate" : "";
  }

  // The curve a stepped test exists for: each step's load against its throughput,
  // latency and errors (drawn when there are two steps or more).
  function acrossSteps() {
    if (data.steps.length < 2) { return; }
    var section = add(root, "section", "steps");
    add(section, "h2", null, "Across steps");
    var row = add(section, "div", "charts");
    var x = data.steps.map(function (s) { return open ? s.rate : s.users; });
    var xLabel = open ? "requests / s offered" : "users";
    var of = function (key) { return data.steps.map(function (s) { return s[key]; }); };
    chart(row, "Throughput by step", { label: xLabel }, "requests / s",
      [line("throughput", "#1f6fb2"), line("error %", "#c62828", true)],
      [x, of("throughput_rps"), of("error_pct")]);
    chart(row, "Latency by step", { label: xLabel }, "ms",
      [line("p50", "#2e7d32"), line("p99", "#ef6c00"), line("max", "#c62828", true)],
      [x, of("p50_ms"), of("p99_ms"), of("max_ms")]);
    add(section, "p", "note", "Each point is one step. Throughput flat while latency " +
      "rises with the load is saturation: more " + (open ? "offered load" : "users") +
      " only wait longer.");
  }

  function step(s, i) {
    var section = add(root, "section", "step");
    add(section, "h2", null, "Step " + (i + 1) + ": " + stepName(s));
    stepFacts(section, s);
    summaryTable(section, s, i);
    if (open || (s.rate !== undefined && s.rate !== null)) { uncorrectedTable(section, s); }
    if (s.delivery) { deliveryTable(section, s.delivery); }
    stepCharts(section, s);
  }

  header();
  acrossSteps();
  data.steps.forEach(step);
  document.body.dataset.rendered = String(charts);
})();
