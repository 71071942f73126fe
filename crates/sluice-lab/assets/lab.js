// The `sluice lab --html` page: builds everything from the report's JSON (#data,
// embedded by src/html.rs). Every string goes in with textContent, never innerHTML.
// When all is drawn, the body's data-rendered attribute counts the charts (what the
// browser test waits for); an error sets data-error instead (window.onerror).
(function () {
  "use strict";

  var data = JSON.parse(document.getElementById("data").textContent);
  var root = document.getElementById("report");
  var charts = 0;
  var COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"];

  function el(tag, className, text) {
    var e = document.createElement(tag);
    if (className) { e.className = className; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function add(parent, tag, className, text) {
    return parent.appendChild(el(tag, className, text));
  }

  function fixed(n, digits) {
    return n === null || n === undefined ? "-" : Number(n).toFixed(digits);
  }

  function verdictBox(parent, v, id) {
    var box = add(parent, "div", "verdict");
    box.id = id;
    box.dataset.tier = v.tier === null ? "" : v.tier;
    add(box, "span", "tier", (v.tier === null ? "no tier" : v.tier) + ": ");
    add(box, "span", "summary", v.summary);
    var list = add(box, "ul");
    (v.evidence || []).forEach(function (e) { add(list, "li", "", e); });
  }

  function header() {
    var e = data.experiment;
    add(root, "h1", "", e ? "sluice lab: " + e.name : "sluice lab: " + data.deployment.target);
    if (e) {
      add(root, "p", "about", e.about + " (" + e.lb.run + " in front)");
    } else {
      var tiers = data.deployment.tiers.map(function (t) {
        return t.name + " (" + (t.pid ? "pid " + t.pid : t.url) + ", " + t.budget + ")";
      });
      add(root, "p", "about", "tiers: " + tiers.join("; "));
    }
    verdictBox(root, data.verdict, "verdict");
    (data.warnings || []).forEach(function (w) { add(root, "p", "warning", "warning: " + w); });
  }

  function chart(parent, title, xs, series, xLabel) {
    var box = add(parent, "div", "chart");
    // Whole numbers on x (users, steps), and y from zero: a plateau must look flat,
    // not zoomed into noise.
    var whole = function (u, vals) {
      return vals.map(function (v) { return Number.isInteger(v) ? String(v) : ""; });
    };
    var opts = {
      title: title, width: 470, height: 260,
      scales: {
        x: { time: false },
        y: { range: function (u, min, max) { return [0, max > 0 ? max * 1.1 : 1]; } }
      },
      axes: [{ label: xLabel, values: whole }, {}],
      series: [{ label: xLabel }].concat(series.map(function (s, i) {
        return { label: s.label, stroke: COLORS[i % COLORS.length], width: 2,
                 points: { show: true, size: 6 } };
      }))
    };
    new uPlot(opts, [xs].concat(series.map(function (s) { return s.values; })), box);
    charts += 1;
  }

  // Throughput and p99 against users, one line per number of servers.
  function scaling(parent) {
    var users = [];
    data.configurations.forEach(function (c) {
      c.steps.forEach(function (s) { if (users.indexOf(s.users) < 0) { users.push(s.users); } });
    });
    users.sort(function (a, b) { return a - b; });
    function series(key) {
      return data.configurations.map(function (c) {
        return {
          label: c.servers + " server" + (c.servers === 1 ? "" : "s"),
          values: users.map(function (u) {
            var s = c.steps.filter(function (x) { return x.users === u; })[0];
            return s ? s[key] : null;
          })
        };
      });
    }
    chart(parent, "Throughput (req/s) by users", users, series("tps"), "users");
    chart(parent, "p99 latency (ms) by users", users, series("p99_ms"), "users");
  }

  function allSteps() {
    var out = [];
    data.configurations.forEach(function (c) { c.steps.forEach(function (s) { out.push(s); }); });
    return out;
  }

  // Each tier's CPU against its budget, and its fullest pool, per step.
  function utilisation(parent) {
    var steps = allSteps();
    var tiers = [];
    steps.forEach(function (s) {
      s.tiers.forEach(function (t) { if (tiers.indexOf(t.tier) < 0) { tiers.push(t.tier); } });
    });
    var xs = steps.map(function (_, i) { return i + 1; });
    function pct(s, tier, pool) {
      var rs = s.resources.filter(function (r) {
        // A busiest thread is against one core, neither the budget nor a pool; a heap's
        // figure is the share of time its GC stopped it, no pool's fullness either.
        if (r.tier !== tier || r.resource === "thread" || r.resource === "heap") { return false; }
        return pool ? r.resource !== "cpu" : r.resource === "cpu" || r.resource === "keepalive";
      });
      if (!rs.length) { return null; }
      return Math.max.apply(null, rs.map(function (r) { return r.utilisation * 100; }));
    }
    var cpu = tiers.map(function (t) {
      return { label: t, values: steps.map(function (s) { return pct(s, t, false); }) };
    });
    var pools = tiers.map(function (t) {
      return { label: t, values: steps.map(function (s) { return pct(s, t, true); }) };
    }).filter(function (s) { return s.values.some(function (v) { return v !== null; }); });
    chart(parent, "CPU % of each tier's budget, per step", xs, cpu, "step");
    if (pools.length) { chart(parent, "Fullest pool or cap %, per step", xs, pools, "step"); }
  }

  function stepsTable(parent) {
    var table = add(parent, "table");
    table.id = "steps";
    var head = add(add(table, "thead"), "tr");
    ["step", "servers", "users", "req/s", "mean ms", "p99 ms", "err %", "in system", "saturated"]
      .forEach(function (h, i) { add(head, "th", i === 8 ? "text" : "", h); });
    var body = add(table, "tbody");
    allSteps().forEach(function (s, i) {
      var row = add(body, "tr");
      row.id = "step-" + i;
      [i + 1, s.servers, s.users, fixed(s.tps, 1), fixed(s.mean_ms, 1), fixed(s.p99_ms, 1),
       fixed(s.error_pct, 2), fixed(s.users_in_system, 1)].forEach(function (v) { add(row, "td", "", v); });
      var v = s.verdict;
      var cell = add(row, "td", s.valid ? "text" : "text invalid",
        s.valid ? (v.tier === null ? "" : v.tier + ": ") + v.summary : "invalid: " + s.invalid_reason);
      cell.dataset.tier = v.tier === null ? "" : v.tier;
    });
  }

  // Where a request's time went in each valid step that measured it: a row per part
  // (inner parts indented), a column per step, so what grew with the users shows.
  function breakdowns(parent, steps, id) {
    add(parent, "p", "", "Where a request's time went (ms per request):");
    var table = add(parent, "table", "breakdown");
    table.id = id;
    var head = add(add(table, "thead"), "tr");
    add(head, "th", "text", "users");
    steps.forEach(function (s) { add(head, "th", "", s.users); });
    var body = add(table, "tbody");
    var total = add(body, "tr");
    add(total, "td", "text", "response time");
    steps.forEach(function (s) { add(total, "td", "", fixed(s.breakdown.response_ms, 1)); });
    var same = function (a, b) { return a.part === b.part && a.depth === b.depth; };
    // The most loaded step's parts first (it has the most), then the others'.
    var rows = [];
    steps.slice().reverse().forEach(function (s) {
      s.breakdown.parts.forEach(function (p) {
        if (!rows.some(function (r) { return same(r, p); })) { rows.push(p); }
      });
    });
    rows.forEach(function (r) {
      var row = add(body, "tr");
      add(row, "td", "text", r.part).style.paddingLeft = (0.4 + 1.5 * r.depth) + "em";
      steps.forEach(function (s) {
        var p = s.breakdown.parts.filter(function (q) { return same(q, r); })[0];
        add(row, "td", "", p ? fixed(p.ms, 1) : "-");
      });
    });
  }

  // A JVM's request threads in each valid step that sampled them: a row per state,
  // a column per step (threads on average in a dump), as the breakdown shows the time.
  function threadTables(parent, steps, id) {
    var last = steps[steps.length - 1];
    last.jvm_threads.forEach(function (t, k) {
      add(parent, "p", "", t.process + "'s " + (t.server || "request") + " request threads, on average in a thread dump:");
      var table = add(parent, "table", "threads");
      table.id = id + "-" + k;
      var head = add(add(table, "thead"), "tr");
      add(head, "th", "text", "users");
      steps.forEach(function (s) { add(head, "th", "", s.users); });
      var body = add(table, "tbody");
      Object.keys(t.states).forEach(function (state) {
        var cells = steps.map(function (s) {
          var o = s.jvm_threads.filter(function (x) { return x.process === t.process; })[0];
          return o ? o.states[state] : null;
        });
        if (!cells.some(function (c) { return c; })) { return; }
        var row = add(body, "tr");
        add(row, "td", "text", state);
        cells.forEach(function (c) { add(row, "td", "", fixed(c, 1)); });
      });
      add(parent, "p", "cost", t.cost);
    });
  }

  // A warm colour per frame name, the same name the same colour.
  function color(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) { h = (h * 31 + name.charCodeAt(i)) >>> 0; }
    return "hsl(" + (h % 55) + ", 75%, " + (58 + (h >> 8) % 20) + "%)";
  }

  // The profile of the step the verdict is about as a flame graph (outermost frame on
  // top, each frame as wide as its samples); a click zooms into a frame, a click on the
  // top one zooms out.
  function flame(parent, p, id) {
    var where = p.users + " users, " + p.servers + " server" + (p.servers === 1 ? "" : "s");
    var what = p.kind === "cpu" ? "on CPU (perf): " + p.samples + " samples"
      : "wall clock: " + p.samples + " thread samples";
    add(parent, "h3", "", p.process + " at " + where + " (" + what + ")");
    var root = { name: "all", value: 0, children: {} };
    p.stacks.forEach(function (s) {
      var node = root;
      root.value += s.samples;
      s.frames.split(";").forEach(function (i) {
        var name = p.frames[Number(i)];
        if (!node.children[name]) { node.children[name] = { name: name, value: 0, children: {} }; }
        node = node.children[name];
        node.value += s.samples;
      });
    });
    var box = add(parent, "div", "flame");
    box.id = id;
    drawFlame(box, root, root);
  }

  function drawFlame(box, root, top) {
    while (box.firstChild) { box.removeChild(box.firstChild); }
    var ROW = 18, rows = 0;
    function place(node, x, depth) {
      var width = node.value / top.value * 100;
      if (width < 0.2) { return; }
      var d = add(box, "div", "frame", node.name);
      d.style.left = x + "%";
      d.style.width = width + "%";
      d.style.top = depth * ROW + "px";
      d.style.background = color(node.name);
      d.title = node.name + " (" + node.value + " samples, " + fixed(node.value / root.value * 100, 1) + "%)";
      d.onclick = function () { drawFlame(box, root, node === top ? root : node); };
      rows = Math.max(rows, depth + 1);
      Object.keys(node.children).sort().forEach(function (k) {
        var c = node.children[k];
        place(c, x, depth + 1);
        x += c.value / top.value * 100;
      });
    }
    place(top, 0, 0);
    box.style.height = rows * ROW + "px";
  }

  function profiles(parent) {
    if (!data.profiles || !data.profiles.length) { return; }
    add(parent, "h2", "", "Profile of the step the verdict is about");
    data.profiles.forEach(function (p, i) { flame(parent, p, "flame-" + i); });
  }

  function configurations(parent) {
    data.configurations.forEach(function (c, i) {
      var box = add(parent, "div", "config");
      add(box, "h3", "", c.servers + " server" + (c.servers === 1 ? "" : "s") + ": peak " + fixed(c.peak_tps, 0) + " req/s");
      verdictBox(box, c.verdict, "config-" + i);
      var measured = c.steps.filter(function (s) { return s.valid && s.breakdown; });
      if (measured.length) { breakdowns(box, measured, "breakdown-" + i); }
      var sampled = c.steps.filter(function (s) { return s.valid && s.jvm_threads && s.jvm_threads.length; });
      if (sampled.length) { threadTables(box, sampled, "threads-" + i); }
      if (c.usl && c.usl.summary) { add(box, "p", "usl", c.usl.summary).id = "usl-" + i; }
    });
    if (data.scale_out.length) {
      add(parent, "p", "", "Scale-out: " + data.scale_out.map(function (g) {
        return g.from + " -> " + g.to + ": " + (g.gain_pct >= 0 ? "+" : "") + fixed(g.gain_pct, 0) + "%";
      }).join(", "));
    }
  }

  function proof(parent) {
    var p = data.proof;
    if (!p) { return; }
    add(parent, "h2", "", "Proof: " + p.servers + " servers, " + p.users + " users, " + fixed(p.tps, 0) + " req/s");
    var table = add(parent, "table");
    table.id = "proof";
    var head = add(add(table, "thead"), "tr");
    ["", "change", "req/s", "gain", "noise", "then saturated"].forEach(function (h) { add(head, "th", "text", h); });
    var body = add(table, "tbody");
    // The control's drift from the step is the noise every gain is read against.
    var noise = "\u00b1" + fixed(Math.abs(p.noise_pct), 0) + "%";
    p.rows.forEach(function (r) {
      var row = add(body, "tr");
      [r.role, r.change].forEach(function (v) { add(row, "td", "text", v); });
      add(row, "td", "", fixed(r.tps, 0));
      add(row, "td", "", (r.gain_pct >= 0 ? "+" : "") + fixed(r.gain_pct, 0) + "%");
      add(row, "td", "", r.role === "control" ? "(the noise)" : noise);
      add(row, "td", "text", r.verdict.summary);
    });
    add(parent, "p", "", (p.confirmed ? "Confirmed. " : "Not confirmed. ") + p.summary);
  }

  header();
  add(root, "h2", "", "Scaling");
  var curves = add(root, "div", "charts");
  scaling(curves);
  add(root, "h2", "", "Utilisation of each tier");
  var use = add(root, "div", "charts");
  utilisation(use);
  add(root, "h2", "", "Steps");
  stepsTable(root);
  add(root, "h2", "", "Per configuration");
  configurations(root);
  proof(root);
  profiles(root);
  document.body.dataset.rendered = String(charts);
})();
