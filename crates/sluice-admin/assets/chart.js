// sluice's dashboard, its charts: a few lines over the last minutes, drawn as SVG
// with DOM calls (labels are text nodes; nothing here writes markup).
(() => {
  'use strict';

  const SVG = 'http://www.w3.org/2000/svg';
  const W = 600;
  const H = 140;

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    return e;
  }

  /** The smallest 1, 2, 2.5 or 5 times a power of ten at least `v`. */
  function niceCeil(v) {
    if (!(v > 0)) return 1;
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
  }

  /** A figure charting `value` of each line's points ({at, ...}, oldest first) over
   * the `span` seconds up to `now`; a silence longer than `gap` seconds breaks a line.
   * Lines are {points, colour, cls}; `fmt` writes the axis' values. */
  function chart({ title, lines, value, fmt, now, span, gap }) {
    const from = now - span;
    let max = 0;
    for (const l of lines) {
      for (const p of l.points) {
        const v = value(p);
        if (v !== null && p.at >= from && v > max) max = v;
      }
    }
    const top = niceCeil(max);
    const x = (at) => (((at - from) / span) * W).toFixed(1);
    const y = (v) => (H - (Math.min(v, top) / top) * H).toFixed(1);
    const minutes = span / 60;
    const figure = el('figure', 'chart');
    const caption = el('figcaption');
    caption.append(el('span', 'title', title), el('span', 'muted', ` last ${minutes} minutes`));
    const s = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img' });
    const label = svg('title', {});
    label.textContent = `${title}, last ${minutes} minutes`;
    s.append(label);
    for (const f of [0, 0.5, 1]) {
      s.append(svg('line', { x1: 0, x2: W, y1: f * H, y2: f * H, class: 'grid' }));
    }
    for (let m = 1; m < minutes; m++) {
      const gx = ((m * 60) / span) * W;
      s.append(svg('line', { x1: gx, x2: gx, y1: 0, y2: H, class: 'grid' }));
    }
    for (const l of lines) {
      let d = '';
      let last = null;
      for (const p of l.points) {
        const v = value(p);
        if (v === null || p.at < from) {
          last = null;
          continue;
        }
        d += `${last === null || p.at - last > gap ? 'M' : 'L'}${x(p.at)},${y(v)}`;
        last = p.at;
      }
      if (d) {
        s.append(svg('path', {
          d, class: `line ${l.cls}`, stroke: l.colour, 'vector-effect': 'non-scaling-stroke',
        }));
      }
    }
    const plot = el('div', 'plot');
    plot.append(s, el('span', 'ymax', fmt(top)), el('span', 'ymid', fmt(top / 2)));
    const axis = el('div', 'axis');
    axis.append(el('span', '', `−${minutes} min`), el('span', '', 'now'));
    figure.append(caption, plot, axis);
    return figure;
  }

  window.sluiceChart = chart;
})();
