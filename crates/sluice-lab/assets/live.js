// The `sluice lab --live` page: polls /live.json once a second and redraws. Every
// string goes in with textContent, never innerHTML (tier names can be user text). The
// body's data-updated attribute counts the readings drawn (what the browser test reads);
// data-done is set once the run's verdict is in, and polling stops.
(function () {
  "use strict";

  var updates = 0;

  function cell(row, text, className) {
    var td = row.insertCell();
    td.textContent = String(text);
    if (className) { td.className = className; }
    return td;
  }

  function fill(tbody, rows, draw) {
    while (tbody.firstChild) { tbody.removeChild(tbody.firstChild); }
    rows.forEach(function (r) { draw(tbody.insertRow(), r); });
  }

  function drawTier(row, t) {
    cell(row, t.name, "text");
    cell(row, t.tier, "text");
    cell(row, t.cpu_pct.toFixed(0));
    var bar = document.createElement("span");
    bar.className = t.cpu_pct >= 85 ? "bar full" : "bar";
    bar.style.width = Math.min(t.cpu_pct, 100) * 1.5 + "px";
    cell(row, "", "text").appendChild(bar);
    cell(row, t.budget, "text");
    drawThreads(cell(row, "", "text threads"), t.threads || []);
  }

  var STATE_COLORS = {
    running: "#2ca02c", database: "#1f77b4", downstream: "#17becf", pool: "#ff7f0e",
    blocked: "#d62728", waiting: "#9467bd", idle: "#ddd"
  };

  // A JVM's request threads as one bar, a segment per state as wide as its threads
  // (8 px a thread), with the counts beside it.
  function drawThreads(td, threads) {
    if (!threads.length) { return; }
    threads.forEach(function (t) {
      var seg = document.createElement("span");
      seg.className = "seg";
      seg.style.width = t.threads * 8 + "px";
      seg.style.background = STATE_COLORS[t.state] || "#888";
      seg.title = t.state + ": " + t.threads.toFixed(1);
      td.appendChild(seg);
    });
    var words = threads.filter(function (t) { return t.threads > 0; })
      .map(function (t) { return t.state + " " + t.threads.toFixed(1); });
    td.appendChild(document.createTextNode(" " + words.join(", ")));
  }

  function drawStep(row, s) {
    cell(row, s.servers);
    cell(row, s.users);
    cell(row, s.tps.toFixed(1));
    cell(row, s.p99_ms.toFixed(1));
    cell(row, s.error_pct.toFixed(1));
    cell(row, s.saturated, "text");
  }

  // Redrawn whole each second, as the tables are: the lab keeps at most a few hundred.
  function drawEvents(events) {
    var list = document.getElementById("events");
    while (list.firstChild) { list.removeChild(list.firstChild); }
    events.forEach(function (e) {
      var li = document.createElement("li");
      var at = document.createElement("span");
      at.className = "at";
      at.textContent = e.at_s.toFixed(0) + " s  ";
      li.appendChild(at);
      li.appendChild(document.createTextNode(e.text));
      list.appendChild(li);
    });
  }

  function draw(s) {
    document.getElementById("title").textContent = "sluice lab: " + s.experiment;
    document.getElementById("phase").textContent =
      s.done ? "done" : s.phase + ", " + s.elapsed_s.toFixed(0) + " s";
    document.getElementById("servers").textContent =
      s.servers === null ? "-" : String(s.servers);
    document.getElementById("verdict").textContent = s.verdict || "no verdict yet";
    document.getElementById("tps").textContent = s.tps.toFixed(1);
    document.getElementById("p99").textContent = s.p99_ms.toFixed(1);
    document.getElementById("err").textContent = s.error_pct.toFixed(1);
    fill(document.querySelector("#tiers tbody"), s.tiers, drawTier);
    fill(document.querySelector("#steps tbody"), s.steps, drawStep);
    drawEvents(s.events);
    updates += 1;
    document.body.setAttribute("data-updated", String(updates));
    if (s.done) { document.body.setAttribute("data-done", "true"); }
  }

  function poll() {
    fetch("/live.json", { cache: "no-store" })
      .then(function (r) { return r.json(); })
      .then(function (s) {
        document.getElementById("phase").classList.remove("stale");
        draw(s);
        if (!s.done) { setTimeout(poll, 1000); }
      })
      .catch(function () {
        // The run ended (its process gone) or the network blinked: say so, try again.
        var p = document.getElementById("phase");
        p.classList.add("stale");
        p.textContent = "no answer from the lab; trying again";
        setTimeout(poll, 2000);
      });
  }

  poll();
})();
