// sluice's dashboard. Polls api/upstreams and api/status once a second, turns the
// difference between two polls into per-second figures per server and per upstream
// (figures.js), keeps five minutes of them in this tab, and draws tables and charts
// (chart.js).
//
// Every text that comes from the API goes into the page with textContent: nothing here
// writes markup (a unit test in src/dashboard.rs checks that).
(() => {
  'use strict';

  const {
    counters, delta, add, sample, fmtCount, fmtRate, fmtMs, fmtShare, fmtDuration, fmtClock,
  } = window.sluiceFigures;

  const POLL_MS = 1000;
  const HISTORY_S = 300;
  /** A longer silence between two samples breaks a chart's line. */
  const GAP_S = 5;
  const PALETTE = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2',
    '#65a30d', '#dc2626', '#a16207', '#c026d3'];

  const state = {
    polls: 0,
    upstreams: null, // the last answer of api/upstreams
    status: null, // the last answer of api/status
    prev: new Map(), // key -> counters at the previous poll
    history: new Map(), // key -> [{at, rps, err, p50, p99}], oldest first
    listeners: null, // {at, requests} at the previous poll, for requests/s overall
    rps: null,
    selected: null, // {addr, upstream}: whose errors are shown
  };

  const $ = (id) => document.getElementById(id);

  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  const keyOf = (upstream, addr) => `${upstream} ${addr}`;

  // ---- Polling -------------------------------------------------------------------

  class PollError extends Error {
    constructor(message, status) {
      super(message);
      this.status = status;
    }
  }

  async function getJson(url) {
    let reply;
    try {
      reply = await fetch(url, { cache: 'no-store', headers: { Accept: 'application/json' } });
    } catch (e) {
      throw new PollError(`cannot reach sluice's admin listener (${e.message})`, 0);
    }
    if (!reply.ok) throw new PollError(`${url} answered HTTP ${reply.status}`, reply.status);
    try {
      return await reply.json();
    } catch (e) {
      throw new PollError(`${url} answered something other than JSON (${e.message})`, reply.status);
    }
  }

  async function poll() {
    let upstreams;
    let status;
    try {
      [upstreams, status] = await Promise.all([getJson('api/upstreams'), getJson('api/status')]);
    } catch (e) {
      if (!(e instanceof PollError)) throw e;
      return unreachable(e);
    }
    ingest(upstreams, status);
    state.polls += 1;
    message(null);
    document.body.classList.remove('stale');
    render();
    document.body.dataset.polls = String(state.polls);
  }

  function unreachable(e) {
    document.body.classList.add('stale');
    if (e.status === 401) {
      document.body.dataset.auth = 'required';
      message('This admin listener asks for a bearer token, and a page opened in a browser ' +
        'cannot send one, so the dashboard shows nothing here. It works on an admin ' +
        'listener without a token: bind [admin] to 127.0.0.1 (where no token is needed) ' +
        'and reach it through an SSH tunnel (ssh -L 9901:127.0.0.1:9901 HOST, then open ' +
        'http://127.0.0.1:9901/). The API itself takes the token: ' +
        "curl -H 'Authorization: Bearer TOKEN' http://HOST:PORT/api/upstreams");
    } else {
      message(`${e.message}; the figures below are from the last successful poll. ` +
        'Trying again every second.');
    }
  }

  function message(text) {
    const m = $('message');
    m.hidden = text === null;
    m.textContent = text === null ? '' : text;
  }

  function loop() {
    poll()
      .catch(failed)
      .finally(() => setTimeout(loop, POLL_MS));
  }

  function failed(e) {
    const text = e && e.stack ? `${e.message} (${e.stack.split('\n')[1] || ''})` : String(e);
    document.body.dataset.error = text;
    message(`The dashboard failed: ${text}`);
  }

  // ---- Per-second figures, five minutes of them ------------------------------------

  function remember(key, s) {
    let h = state.history.get(key);
    if (!h) state.history.set(key, (h = []));
    h.push(s);
    while (h.length && h[0].at < s.at - HISTORY_S) h.shift();
  }

  function ingest(upstreams, status) {
    const at = upstreams.at_unix;
    const seen = new Set();
    for (const u of upstreams.upstreams) {
      let total = null;
      let complete = true;
      for (const s of u.servers) {
        const key = keyOf(u.name, s.addr);
        seen.add(key);
        const cur = counters(s, at);
        const prev = state.prev.get(key);
        state.prev.set(key, cur);
        const d = prev ? delta(prev, cur) : null;
        if (d) {
          remember(key, sample(at, d));
          total = add(total, d);
        } else {
          complete = false;
        }
      }
      seen.add(keyOf(u.name, '*'));
      if (total && complete) remember(keyOf(u.name, '*'), sample(at, total));
    }
    for (const key of [...state.history.keys()]) {
      if (!seen.has(key)) state.history.delete(key);
    }
    for (const key of [...state.prev.keys()]) {
      if (!seen.has(key)) state.prev.delete(key);
    }
    const requests = status.listeners.reduce((a, l) => a + l.requests, 0);
    const last = state.listeners;
    const dt = last ? status.uptime_s - last.at : 0;
    state.rps = last && dt > 0 && requests >= last.requests ? (requests - last.requests) / dt : null;
    state.listeners = { at: status.uptime_s, requests };
    state.upstreams = upstreams;
    state.status = status;
  }

  // ---- Rendering -------------------------------------------------------------------

  function render() {
    renderStatus();
    const focused = document.activeElement && document.activeElement.dataset
      ? document.activeElement.dataset.key : undefined;
    const main = $('upstreams');
    const ups = state.upstreams.upstreams;
    // The selected server's errors open under the first upstream that has it.
    const sel = state.selected;
    const holder = sel && ups.find((u) => (sel.upstream === null || sel.upstream === u.name)
      && u.servers.some((s) => s.addr === sel.addr));
    main.replaceChildren(...ups.map((u) => upstreamSection(u, u === holder)));
    if (ups.length === 0) {
      main.append(el('p', 'muted', 'This configuration has no upstreams.'));
    }
    if (focused) {
      const row = [...main.querySelectorAll('tr.server')].find((r) => r.dataset.key === focused);
      if (row) row.focus();
    }
  }

  function renderStatus() {
    const s = state.status;
    const items = [
      ['version', s.version],
      ['up', fmtDuration(s.uptime_s)],
      ['config generation', s.reloads.applied + s.reloads.refused === 0 ? String(s.generation)
        : `${s.generation} (${s.reloads.applied} reloads, ${s.reloads.refused} refused)`],
      ['workers', String(s.workers)],
      ['client connections', fmtCount(s.listeners.reduce((a, l) => a + l.connections_open, 0))],
      ['requests/s', fmtRate(state.rps)],
    ];
    const dl = $('status');
    dl.replaceChildren();
    for (const [k, v] of items) {
      const div = el('div');
      div.append(el('dt', '', k), el('dd', '', v));
      dl.append(div);
    }
    $('updated').textContent = `updated ${fmtClock(state.upstreams.at_unix)}`;
  }

  const latest = (key) => {
    const h = state.history.get(key);
    return h && h.length ? h[h.length - 1] : {};
  };

  function upstreamSection(u, withErrors) {
    const section = el('section', 'upstream');
    section.dataset.upstream = u.name;
    const up = u.servers.filter((s) => s.health === 'up').length;
    const h2 = el('h2', '', u.name);
    h2.append(el('span', 'muted', ` ${u.balance} · ${up} of ${u.servers.length} servers up`));
    section.append(h2, serverTable(u, withErrors ? state.selected.addr : null));
    if (withErrors) {
      section.append(errorsPanel(u.servers.find((s) => s.addr === state.selected.addr)));
    }
    section.append(charts(u));
    return section;
  }

  const COLUMNS = [
    ['server', ''], ['health', ''], ['requests/s', 'num'], ['errors', 'num'],
    ['p50', 'num'], ['p99', 'num'], ['in flight', 'num'], ['ejections', 'num'],
    ['tunnels', 'num'], ['drained', ''],
  ];

  function serverTable(u, selected) {
    const table = el('table', 'servers');
    const head = el('tr');
    for (const [name, cls] of COLUMNS) head.append(el('th', cls, name));
    const thead = el('thead');
    thead.append(head);
    table.append(thead);
    const body = el('tbody');
    u.servers.forEach((s, i) => body.append(serverRow(u, s, i, s.addr === selected)));
    table.append(body);
    const foot = el('tfoot');
    foot.append(totalRow(u));
    table.append(foot);
    return table;
  }

  function cells(tr, now, inFlight, ejections, tunnels) {
    tr.append(
      el('td', 'rps num', fmtRate(now.rps)),
      el('td', `err num${now.err > 0 ? ' bad' : ''}`, fmtShare(now.err)),
      el('td', 'p50 num', fmtMs(now.p50)),
      el('td', 'p99 num', fmtMs(now.p99)),
      el('td', 'in-flight num', fmtCount(inFlight)),
      el('td', `ejections num${ejections > 0 ? ' warn' : ''}`, fmtCount(ejections)),
      el('td', 'tunnels num', fmtCount(tunnels)),
    );
  }

  function serverRow(u, s, i, selected) {
    const tr = el('tr', 'server');
    const key = keyOf(u.name, s.addr);
    tr.dataset.key = key;
    tr.dataset.server = s.addr;
    tr.dataset.health = s.health;
    tr.tabIndex = 0;
    if (selected) tr.classList.add('selected');
    tr.title = 'Show its recent errors';
    const addr = el('td', 'addr');
    const swatch = el('span', 'swatch');
    swatch.style.background = PALETTE[i % PALETTE.length];
    addr.append(swatch, el('span', '', s.addr));
    if (s.weight !== 1) addr.append(el('span', 'tag', `weight ${s.weight}`));
    if (s.backup) addr.append(el('span', 'tag', 'backup'));
    const health = el('td', 'health');
    health.append(el('span', `badge health-${s.health}`, s.health));
    if (s.health === 'ejected' && s.ejected_for_s !== null) {
      health.append(el('span', 'muted', ` ${Math.ceil(s.ejected_for_s)} s left`));
    } else if (s.health === 'down' && !s.checked_up) {
      health.append(el('span', 'muted', ' health check'));
    }
    tr.append(addr, health);
    cells(tr, latest(key), s.in_flight, s.ejections, s.tunnels_open);
    // A drain with a lease (a tool's, such as sluice lab) ends by itself: say when.
    const lease = s.lease_ms === null || s.lease_ms === undefined ? '' : ` (lease ${Math.ceil(s.lease_ms / 1000)} s)`;
    tr.append(el('td', 'drained', s.drained ? `drained${lease}` : '–'));
    return tr;
  }

  function totalRow(u) {
    const tr = el('tr', 'total');
    const sum = (f) => u.servers.reduce((a, s) => a + f(s), 0);
    const up = u.servers.filter((s) => s.health === 'up').length;
    tr.append(el('td', 'addr', 'all servers'), el('td', 'health', `${up} of ${u.servers.length} up`));
    cells(tr, latest(keyOf(u.name, '*')), sum((s) => s.in_flight), sum((s) => s.ejections),
      sum((s) => s.tunnels_open));
    tr.append(el('td', 'drained', String(u.servers.filter((s) => s.drained).length)));
    return tr;
  }

  function errorsPanel(s) {
    const panel = el('div', 'errors');
    panel.id = 'errors';
    panel.dataset.server = s.addr;
    const h3 = el('h3', '', `Recent errors of ${s.addr}`);
    const close = el('button', 'close', 'close');
    close.type = 'button';
    close.addEventListener('click', () => select(null));
    h3.append(close);
    panel.append(h3);
    if (s.last_errors.length === 0) {
      panel.append(el('p', 'muted none', 'No failures blamed on this server since sluice started.'));
      return panel;
    }
    const table = el('table');
    const head = el('tr');
    for (const name of ['time', 'ago', 'route', 'status', 'kind', 'cause']) head.append(el('th', '', name));
    const thead = el('thead');
    thead.append(head);
    table.append(thead);
    const body = el('tbody');
    const now = state.upstreams.at_unix;
    for (const e of [...s.last_errors].reverse()) {
      const tr = el('tr', 'error');
      tr.append(
        el('td', 'time', fmtClock(e.at_unix)),
        el('td', 'ago num', `${fmtDuration(Math.max(0, now - e.at_unix))} ago`),
        el('td', 'route', e.route),
        el('td', 'status num', String(e.status)),
        el('td', 'kind', e.kind || ''),
        el('td', 'cause', e.cause),
      );
      body.append(tr);
    }
    table.append(body);
    const scroll = el('div', 'scroll');
    scroll.append(table);
    const n = s.last_errors.length;
    panel.append(scroll, el('p', 'muted', `The last ${n === 1 ? 'failure' : `${n} failures`} ` +
      'blamed on it (sluice keeps 20), newest first.'));
    return panel;
  }
  // ---- Charts ----------------------------------------------------------------------

  function charts(u) {
    const lines = u.servers.map((s, i) => ({
      label: s.addr, colour: PALETTE[i % PALETTE.length], key: keyOf(u.name, s.addr), cls: 'server',
    }));
    lines.push({ label: 'all servers', colour: 'currentColor', key: keyOf(u.name, '*'), cls: 'all' });
    for (const l of lines) l.points = state.history.get(l.key) || [];
    const common = { lines, now: state.upstreams.at_unix, span: HISTORY_S, gap: GAP_S };
    const box = el('div', 'charts');
    box.append(
      window.sluiceChart({ ...common, title: 'requests/s', value: (p) => p.rps, fmt: fmtRate }),
      window.sluiceChart({
        ...common, title: 'p99 latency', value: (p) => (p.p99 === Infinity ? 10000 : p.p99), fmt: fmtMs,
      }),
    );
    const legend = el('div', 'legend');
    for (const l of lines) {
      const item = el('span', `item ${l.cls}`);
      const swatch = el('span', 'swatch');
      if (l.cls === 'server') swatch.style.background = l.colour;
      item.append(swatch, el('span', '', l.label));
      legend.append(item);
    }
    box.append(legend);
    return box;
  }

  // ---- Selection: which server's errors are open (also from the URL) --------------

  function fromHash() {
    const params = new URLSearchParams(location.hash.replace(/^#/, ''));
    const addr = params.get('server');
    state.selected = addr ? { addr, upstream: params.get('upstream') } : null;
  }

  function select(sel) {
    if (sel === null) {
      history.replaceState(null, '', location.pathname + location.search);
    } else {
      // An address is digits, dots, colons and brackets: readable as it is in a link.
      history.replaceState(null, '', `#server=${sel.addr}&upstream=${encodeURIComponent(sel.upstream)}`);
    }
    fromHash();
    if (state.upstreams) render();
  }

  function onRow(event) {
    const tr = event.target.closest('tr.server');
    if (!tr) return;
    const upstream = tr.closest('section').dataset.upstream;
    const sel = state.selected;
    const same = sel && sel.addr === tr.dataset.server && (sel.upstream === null || sel.upstream === upstream);
    select(same ? null : { addr: tr.dataset.server, upstream });
  }

  window.addEventListener('error', (e) => failed(e.error || e.message));
  window.addEventListener('unhandledrejection', (e) => failed(e.reason));
  window.addEventListener('hashchange', () => {
    fromHash();
    if (state.upstreams) render();
  });
  const main = $('upstreams');
  main.addEventListener('click', onRow);
  main.addEventListener('keydown', (e) => {
    if ((e.key === 'Enter' || e.key === ' ') && e.target.matches('tr.server')) {
      e.preventDefault();
      onRow(e);
    }
  });
  fromHash();
  loop();
})();
