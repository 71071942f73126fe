// sluice's dashboard, its arithmetic: from two polls of api/upstreams to the figures of
// the second between them, and how they are written. Pure functions, no DOM.
(() => {
  'use strict';

  function counters(s, at) {
    const r = s.requests;
    return {
      at,
      requests: r['1xx'] + r['2xx'] + r['3xx'] + r['4xx'] + r['5xx'],
      errors: r['5xx'],
      bounds: s.latency.bounds_s,
      counts: s.latency.counts.slice(),
    };
  }

  /** What happened between two polls; null when a counter went back (a reload
   * replaced the server) or no time passed. */
  function delta(prev, cur) {
    const dt = cur.at - prev.at;
    const counts = cur.counts.map((c, i) => c - prev.counts[i]);
    const requests = cur.requests - prev.requests;
    if (!(dt > 0) || requests < 0 || counts.some((c) => c < 0)) return null;
    return { dt, requests, errors: cur.errors - prev.errors, bounds: cur.bounds, counts };
  }

  function add(total, d) {
    if (!total) return { ...d, counts: d.counts.slice() };
    total.requests += d.requests;
    total.errors += d.errors;
    d.counts.forEach((c, i) => { total.counts[i] += c; });
    return total;
  }

  /** The q-quantile of a histogram, interpolated linearly within its bucket as
   * Prometheus' histogram_quantile does; Infinity above the last bound. */
  function quantile(bounds, counts, q) {
    const total = counts.reduce((a, b) => a + b, 0);
    if (total === 0) return null;
    const rank = q * total;
    let below = 0;
    for (let i = 0; i < counts.length; i++) {
      const c = counts[i];
      if (c > 0 && below + c >= rank) {
        if (i >= bounds.length) return Infinity;
        const low = i === 0 ? 0 : bounds[i - 1];
        return low + ((bounds[i] - low) * (rank - below)) / c;
      }
      below += c;
    }
    return Infinity;
  }

  function sample(at, d) {
    const ms = (q) => {
      const s = quantile(d.bounds, d.counts, q);
      return s === null ? null : s * 1000;
    };
    return {
      at,
      rps: d.requests / d.dt,
      err: d.requests > 0 ? d.errors / d.requests : null,
      p50: ms(0.5),
      p99: ms(0.99),
    };
  }

  const NUMBER = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

  /** A whole number, with thousands separated: 12,345. */
  const fmtCount = (n) => NUMBER.format(n);

  function fmtRate(v) {
    if (v === null || v === undefined) return '–';
    return v < 10 ? v.toFixed(1) : NUMBER.format(v);
  }

  function fmtMs(v) {
    if (v === null || v === undefined) return '–';
    if (v === Infinity) return '> 10 s';
    if (v < 1) return `${v.toFixed(2)} ms`;
    if (v < 10) return `${v.toFixed(1)} ms`;
    return `${NUMBER.format(v)} ms`;
  }

  function fmtShare(v) {
    if (v === null || v === undefined) return '–';
    if (v === 0) return '0 %';
    const pct = v * 100;
    return `${pct < 1 ? pct.toFixed(2) : pct.toFixed(1)} %`;
  }

  function fmtDuration(s) {
    const d = Math.floor(s / 86400);
    const h = Math.floor((s % 86400) / 3600);
    const m = Math.floor((s % 3600) / 60);
    if (d > 0) return `${d} d ${h} h`;
    if (h > 0) return `${h} h ${String(m).padStart(2, '0')} min`;
    if (m > 0) return `${m} min ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
    return `${Math.floor(s)} s`;
  }

  function fmtClock(unix) {
    const t = new Date(unix * 1000);
    const two = (n) => String(n).padStart(2, '0');
    return `${two(t.getHours())}:${two(t.getMinutes())}:${two(t.getSeconds())}`;
  }

  window.sluiceFigures = {
    counters, delta, add, quantile, sample,
    fmtCount, fmtRate, fmtMs, fmtShare, fmtDuration, fmtClock,
  };
})();
