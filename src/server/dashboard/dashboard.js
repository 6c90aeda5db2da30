// tpufleet's dashboard: the team server's own API (docs/serve.md) read with the caller's
// token, so a person sees exactly what their role lets the CLI show them. Plain DOM, no
// framework and nothing from another origin; every value from the server is set as
// text, never as markup.
'use strict';

const kTokenKey = 'tpufleet-token';
const kRefreshMs = 5000;       // nodes, events, jobs
const kSpendRefreshMs = 30000; // the ledger moves slowly
const kPlotRefreshMs = 10000;  // the agents sample every few seconds
// The plots' span: `top --since` gives 20 points of it (a point every 15 s).
const kPlotSeconds = 300;
// How old an answer of the server's may be (max_age_seconds, docs/serve.md): every page
// open asks the same reports, and the server makes each one once in this time for all
// of the same person's pages.
const kSpendAnswerAge = 30;
const kAnswerAge = 5;  // jobs and plots

let token = sessionStorage.getItem(kTokenKey) || '';
let timers = [];
let selectedNode = '';
let spendByNode = new Map();  // "fleet/node" -> usd spent in the last 30 days
let logAbort = null;

class AuthError extends Error {}

const $ = (id) => document.getElementById(id);

function headers(extra) {
  return Object.assign({ Authorization: 'Bearer ' + token }, extra || {});
}

async function getJson(path) {
  const r = await fetch(path, { headers: headers() });
  if (r.status === 401) throw new AuthError('not authenticated');
  const body = await r.json();
  if (!r.ok) throw new Error(body.error ? body.error.message : 'HTTP ' + r.status);
  return body;
}

// Runs `argv` on the server (POST /v1/command) and calls onText with each piece of its
// stdout as it comes; resolves to {code, err} once the command ended. With maxAge (s),
// an answer the server made that long ago for the same person will do.
async function runCommand(argv, onText, signal, maxAge) {
  const r = await fetch('/v1/command', {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json' }),
    body: JSON.stringify(maxAge ? { argv, max_age_seconds: maxAge } : { argv }),
    signal,
  });
  if (r.status === 401) throw new AuthError('not authenticated');
  if (!r.ok) {
    const body = await r.json().catch(() => ({}));
    throw new Error(body.error ? body.error.message : 'HTTP ' + r.status);
  }
  const reader = r.body.getReader();
  const decoder = new TextDecoder();
  let pending = '';
  let err = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    pending += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (!line) continue;
      const msg = JSON.parse(line);
      if (typeof msg.stdout === 'string') onText(msg.stdout);
      if (typeof msg.stderr === 'string') err += msg.stderr;
      if (typeof msg.exit_code === 'number') return { code: msg.exit_code, err };
    }
  }
  throw new Error('the server cut the answer short');
}

// The whole stdout of a report that prints one JSON document, made at most maxAge ago.
async function commandJson(argv, maxAge) {
  let out = '';
  const { code, err } = await runCommand(argv, (t) => { out += t; }, undefined, maxAge);
  if (!out) throw new Error(err.trim() || argv[0] + ' exited ' + code);
  return JSON.parse(out);
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text === undefined || text === null ? '' : String(text);
  if (className) td.className = className;
  return td;
}

function fillTable(id, rows) {
  const tbody = $(id).querySelector('tbody');
  tbody.replaceChildren(...rows);
}

function usd(v) {
  return '$' + Number(v).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return '';
  const s = Math.round(seconds);
  if (s < 90) return s + 's';
  if (s < 5400) return Math.round(s / 60) + 'm';
  if (s < 172800) return (s / 3600).toFixed(1) + 'h';
  return Math.round(s / 86400) + 'd';
}

function showError(where, e) {
  if (e instanceof AuthError) {
    logout('Your token is no longer accepted; log in again.');
    return;
  }
  $('serve-line').textContent = where + ': ' + e.message;
}

// --- Nodes -----------------------------------------------------------------------------

async function refreshStatus() {
  const s = await getJson('/v1/status');
  const serve = s.serve || {};
  const ago = serve.last_pass_seconds_ago;
  $('serve-line').textContent = 'serve ' + (serve.host || '?') + ' · fleets ' +
      (serve.fleets || []).join(', ') + ' · last pass ' +
      (ago === null || ago === undefined ? 'not yet' : duration(ago) + ' ago') +
      ' · ' + (serve.preemptions || 0) + ' preemptions, ' + (serve.recoveries || 0) + ' recovered';
  const rows = (s.nodes || []).map((n) => {
    const tr = document.createElement('tr');
    tr.className = 'clickable' + (n.node === selectedNode ? ' selected' : '');
    tr.dataset.node = n.node;
    const spent = spendByNode.get(n.fleet + '/' + n.node);
    tr.append(cell(n.node), cell(n.fleet), cell(n.state, 'state-' + n.state), cell(n.zone),
              cell(n.type), cell(n.capacity), cell(duration(n.age_seconds)),
              cell(spent === undefined ? '' : usd(spent), 'num'),
              cell(duration(n.last_recover_seconds)));
    tr.addEventListener('click', () => selectNode(n.node));
    return tr;
  });
  fillTable('nodes', rows);
  const warnings = s.warnings || [];
  $('warnings-section').hidden = warnings.length === 0;
  $('warnings').replaceChildren(...warnings.map((w) => {
    const li = document.createElement('li');
    li.textContent = w;
    return li;
  }));
}

// --- Plots -----------------------------------------------------------------------------

const kPalette = ['#1f5fbf', '#b3261e', '#1e7b34', '#8a5a00', '#6a3fb5', '#00838f', '#ad1457', '#546e7a'];

function svgEl(name, attrs) {
  const el = document.createElementNS('http://www.w3.org/2000/svg', name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

// Draws `series` ([{label, points: [[t_ms, value 0..100]]}]) over [t0, t1] in the SVG.
function drawPlot(svg, series, t0, t1) {
  const W = 600, H = 200, L = 34, R = 8, T = 8, B = 22;
  const kids = [];
  for (const v of [0, 50, 100]) {
    const y = T + (H - T - B) * (1 - v / 100);
    kids.push(svgEl('line', { x1: L, x2: W - R, y1: y, y2: y, class: 'grid' }));
    const label = svgEl('text', { x: 2, y: y + 3, class: 'axis' });
    label.textContent = v + '%';
    kids.push(label);
  }
  const left = svgEl('text', { x: L, y: H - 6, class: 'axis' });
  left.textContent = new Date(t0).toISOString().slice(11, 16) + ' UTC';
  const right = svgEl('text', { x: W - R - 60, y: H - 6, class: 'axis' });
  right.textContent = new Date(t1).toISOString().slice(11, 16) + ' UTC';
  kids.push(left, right);
  series.forEach((s, i) => {
    if (s.points.length === 0) return;
    const d = s.points.map(([t, v], j) => {
      const x = L + (W - L - R) * (t - t0) / Math.max(1, t1 - t0);
      const y = T + (H - T - B) * (1 - Math.max(0, Math.min(100, v)) / 100);
      return (j ? 'L' : 'M') + x.toFixed(1) + ' ' + y.toFixed(1);
    }).join(' ');
    const path = svgEl('path', { d, class: 'series', stroke: kPalette[i % kPalette.length] });
    path.dataset.worker = s.label;
    path.dataset.points = String(s.points.length);
    const title = svgEl('title', {});
    title.textContent = 'worker ' + s.label;
    path.append(title);
    kids.push(path);
  });
  svg.replaceChildren(...kids);
}

async function refreshPlots() {
  if (!selectedNode) return;
  const node = selectedNode;
  const doc = await commandJson(['top', node, '--json', '--since', kPlotSeconds + 's'], kAnswerAge);
  if (node !== selectedNode) return;
  const t1 = doc.time_unix_ms;
  const t0 = t1 - kPlotSeconds * 1000;
  const duty = [], hbm = [];
  let missing = 0;
  for (const n of doc.nodes || []) {
    for (const w of n.workers || []) {
      const history = (w.report && w.report.history) || [];
      if (!w.report) missing++;
      duty.push({ label: String(w.worker), points: history
          .filter((p) => p.duty_cycle_percent !== undefined)
          .map((p) => [p.time_unix_ms, p.duty_cycle_percent]) });
      hbm.push({ label: String(w.worker), points: history
          .filter((p) => p.hbm_used_bytes !== undefined && p.hbm_total_bytes)
          .map((p) => [p.time_unix_ms, 100 * p.hbm_used_bytes / p.hbm_total_bytes]) });
    }
  }
  drawPlot($('plot-duty'), duty, t0, t1);
  drawPlot($('plot-hbm'), hbm, t0, t1);
  const points = duty.reduce((a, s) => a + s.points.length, 0);
  $('plot-note').textContent = points + ' samples from ' + duty.length + ' workers' +
      (missing ? '; ' + missing + ' did not answer' : '') + '.';
}

function selectNode(node) {
  selectedNode = node;
  $('plots-section').hidden = false;
  $('plot-node').textContent = node;
  for (const tr of $('nodes').querySelectorAll('tbody tr')) {
    tr.classList.toggle('selected', tr.dataset.node === node);
  }
  refreshPlots().catch((e) => showError('plots', e));
}

// --- Spend -----------------------------------------------------------------------------

// Every UTC day of a `cost --by day` report's span, with what it spent and who spent it
// ({day, usd, persons: [{person, usd}]}; 0 and none for a day without spend).
function calendarDays(report) {
  const spent = new Map(report.lines.map((l) => [l.day, l]));
  const out = [];
  const end = report.now.slice(0, 10);
  for (let t = Date.parse(report.since.slice(0, 10) + 'T00:00:00Z'); ; t += 86400000) {
    const day = new Date(t).toISOString().slice(0, 10);
    const line = spent.get(day);
    out.push({ day, usd: line ? line.usd : 0, persons: line ? line.persons : [] });
    if (day >= end || out.length > 400) break;
  }
  return out;
}

// The people who spent within the days, most first, each with a colour of the palette.
function personColours(days) {
  const total = new Map();
  for (const d of days) {
    for (const p of d.persons) total.set(p.person, (total.get(p.person) || 0) + p.usd);
  }
  return [...total.entries()].sort((a, b) => b[1] - a[1])
      .map(([person, usd], i) => ({ person, usd, colour: kPalette[i % kPalette.length] }));
}

// Bars of each day's spend (lines: calendarDays'), oldest left, each split by the people
// who spent it (colours: personColours'), under a dashed line at the daily budget (0: none).
function drawDays(svg, lines, budget, colours) {
  const W = 600, H = 200, L = 52, R = 8, T = 8, B = 22;
  const top = Math.max(budget, ...lines.map((l) => l.usd), 1e-9) * 1.1;
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const kids = [];
  for (const v of [0, top / 2, top / 1.1]) {
    kids.push(svgEl('line', { x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid' }));
    const label = svgEl('text', { x: 2, y: y(v) + 3, class: 'axis' });
    label.textContent = usd(v);
    kids.push(label);
  }
  const slot = (W - L - R) / Math.max(1, lines.length);
  const colourOf = new Map(colours.map((c) => [c.person, c.colour]));
  lines.forEach((l, i) => {
    let below = 0;  // the day's spend already drawn, from the bottom up
    for (const p of l.persons) {
      const bar = svgEl('rect', { x: L + i * slot + 1, y: y(below + p.usd),
                                  width: Math.max(1, slot - 2),
                                  height: Math.max(0, y(below) - y(below + p.usd)), class: 'day' });
      bar.style.fill = colourOf.get(p.person) || kPalette[0];
      bar.dataset.day = l.day;
      bar.dataset.person = p.person;
      const title = svgEl('title', {});
      title.textContent = l.day + ': ' + usd(p.usd) + ' by ' + (p.person || '(no one)') +
          ' of ' + usd(l.usd);
      bar.append(title);
      kids.push(bar);
      below += p.usd;
    }
  });
  if (lines.length) {
    const first = svgEl('text', { x: L, y: H - 6, class: 'axis' });
    first.textContent = lines[0].day;
    kids.push(first);
  }
  if (lines.length > 1) {
    const last = svgEl('text', { x: W - R - 64, y: H - 6, class: 'axis' });
    last.textContent = lines[lines.length - 1].day;
    kids.push(last);
  }
  if (budget > 0) {
    kids.push(svgEl('line', { x1: L, x2: W - R, y1: y(budget), y2: y(budget), class: 'budget' }));
  }
  svg.replaceChildren(...kids);
}

function percentOf(part, whole) {
  return whole > 0 ? Math.round(100 * part / whole) + ' %' : '';
}

// Where each node's spend went (which also gives the nodes' cost column), and the verdict.
async function refreshGoodput() {
  const byNode =
      await commandJson(['cost', '--by', 'node', '--goodput', '--json'], kSpendAnswerAge);
  spendByNode = new Map(byNode.lines.map((l) => [l.node, l.usd]));
  fillTable('goodput', byNode.lines.map((l) => {
    const tr = document.createElement('tr');
    const u = l.usd_split;
    tr.append(cell(l.node), cell(usd(l.usd), 'num'), cell(percentOf(u.busy, l.usd), 'num'),
              cell(percentOf(u.preempted, l.usd), 'num'), cell(percentOf(u.idle, l.usd), 'num'),
              cell(percentOf(u.input_bound, l.usd), 'num'), cell(percentOf(u.other, l.usd), 'num'),
              cell(percentOf(u.unmeasured, l.usd), 'num'));
    return tr;
  }));
  $('verdict').textContent = byNode.verdict;
}

// A failed goodput report (the server's catalog, say) leaves the rest of the spend shown.
async function refreshSpend() {
  await refreshGoodput().catch((e) => { $('verdict').textContent = 'goodput: ' + e.message; });
  const r = await commandJson(['cost', '--by', 'person', '--json'], kSpendAnswerAge);
  const top = Math.max(1, ...r.lines.map((l) => l.usd));
  fillTable('spend', r.lines.map((l) => {
    const tr = document.createElement('tr');
    const bar = document.createElement('span');
    bar.className = 'bar';
    bar.style.width = (8 * l.usd / top).toFixed(2) + 'em';
    const barCell = document.createElement('td');
    barCell.append(bar);
    tr.append(cell(l.person || '(no one)'), cell(usd(l.usd), 'num'),
              cell(l.node_hours.toFixed(1), 'num'),
              cell(l.usd_per_hour > 0 ? usd(l.usd_per_hour) + '/h' : '-', 'num'), barCell);
    return tr;
  }));
  $('spend-summary').textContent = 'Today (UTC) ' + usd(r.today_usd) + ', ' +
      usd(r.forecast_day_usd) + ' by midnight at ' + usd(r.usd_per_hour) + '/h; this month ' +
      usd(r.month_usd) + ', ' + usd(r.forecast_month_usd) + ' by its end.';
  $('budgets').replaceChildren(...r.budgets.map((b) => {
    const li = document.createElement('li');
    const parts = [];
    if (b.usd_per_day !== null) parts.push(usd(b.left_today_usd) + ' of ' + usd(b.usd_per_day) + ' left today');
    if (b.usd_total !== null) parts.push(usd(b.left_total_usd) + ' of ' + usd(b.usd_total) + ' left in all');
    li.textContent = 'Budget of ' + b.fleet + ': ' + parts.join('; ') + (b.reached ? ' (reached)' : '');
    li.className = b.reached ? 'bad' : '';
    return li;
  }));
  const days =
      calendarDays(await commandJson(['cost', '--by', 'day', '--json'], kSpendAnswerAge));
  const budget = r.budgets.reduce((a, b) => a + (b.usd_per_day || 0), 0);
  const colours = personColours(days);
  drawDays($('plot-days'), days, budget, colours);
  $('days-legend').replaceChildren(...colours.map((c) => {
    const li = document.createElement('li');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = c.colour;
    li.dataset.person = c.person;
    li.append(swatch, document.createTextNode((c.person || '(no one)') + ' ' + usd(c.usd)));
    return li;
  }));
}

// --- Jobs ------------------------------------------------------------------------------

async function refreshJobs() {
  const list = await commandJson(['jobs', '--json'], kAnswerAge);
  fillTable('jobs', (list.jobs || []).map((j) => {
    const tr = document.createElement('tr');
    tr.className = 'clickable';
    tr.dataset.job = j.id;
    tr.append(cell(j.id), cell(j.name), cell(j.node), cell(j.user), cell(j.state),
              cell(j.verdict), cell(j.command));
    tr.addEventListener('click', () => followLog(j.id));
    return tr;
  }));
}

function followLog(id) {
  if (logAbort) logAbort.abort();
  logAbort = new AbortController();
  const pre = $('log');
  pre.textContent = '';
  $('log-job').textContent = id;
  $('log-section').hidden = false;
  const signal = logAbort.signal;
  runCommand(['logs', '-f', id], (text) => {
    const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.append(document.createTextNode(text));
    if (stick) pre.scrollTop = pre.scrollHeight;
  }, signal).then(({ code, err }) => {
    pre.append(document.createTextNode((err ? err : '') + '\n[log ended: exit ' + code + ']\n'));
  }).catch((e) => {
    if (e.name !== 'AbortError') showError('log', e);
  });
}

// --- Events ----------------------------------------------------------------------------

async function refreshEvents() {
  const events = await getJson('/v1/events?since=24h&limit=200');
  const rows = events.slice().reverse().map((e) => {
    const tr = document.createElement('tr');
    let detail = e.detail;
    const recovered = /(?:^|\s)seconds=([0-9.]+)/.exec(e.detail);
    if (e.kind === 'recovered' && recovered) detail = 'in ' + duration(Number(recovered[1])) + ' (' + e.detail + ')';
    const kindClass = e.kind === 'preempted' || e.kind === 'budget-reached' ? 'bad'
        : e.kind === 'recovered' || e.kind === 'ready' ? 'good' : '';
    tr.dataset.kind = e.kind;
    tr.append(cell(e.time.slice(0, 19).replace('T', ' ')),
              cell(e.node ? e.fleet + '/' + e.node : e.fleet), cell(e.kind, kindClass), cell(detail));
    return tr;
  });
  fillTable('events', rows);
}

// --- Log in and the refresh loop -------------------------------------------------------

function every(ms, fn, where) {
  const run = () => fn().catch((e) => showError(where, e));
  run();
  timers.push(setInterval(run, ms));
}

function start() {
  $('login').hidden = true;
  $('app').hidden = false;
  $('logout').hidden = false;
  every(kSpendRefreshMs, refreshSpend, 'spend');
  every(kRefreshMs, refreshStatus, 'nodes');
  every(kRefreshMs, refreshEvents, 'events');
  every(kRefreshMs * 2, refreshJobs, 'jobs');
  every(kPlotRefreshMs, refreshPlots, 'plots');
}

function logout(message) {
  timers.forEach(clearInterval);
  timers = [];
  if (logAbort) logAbort.abort();
  token = '';
  sessionStorage.removeItem(kTokenKey);
  $('app').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  $('serve-line').textContent = '';
  $('login-error').textContent = message || '';
}

async function login(event) {
  event.preventDefault();
  token = $('token').value.trim();
  try {
    await getJson('/v1/status');
  } catch (e) {
    token = '';
    $('login-error').textContent = e instanceof AuthError
        ? 'This server does not know that token.' : 'Cannot reach the server: ' + e.message;
    return;
  }
  sessionStorage.setItem(kTokenKey, token);
  $('token').value = '';
  $('login-error').textContent = '';
  start();
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', login);
  $('logout').addEventListener('click', () => logout(''));
  $('log-close').addEventListener('click', () => {
    if (logAbort) logAbort.abort();
    $('log-section').hidden = true;
  });
  if (token) start();
});
