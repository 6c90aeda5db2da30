// The dashboard under load (bench/dashboard.sh runs it), against a running `tpufleet
// serve`:
//
//   1. Page load alone: LOADS times, Debian's chromium, headless (puppeteer-core, from
//      test/browser's node_modules), opens the dashboard in a fresh browser context (a
//      person's own browser, nothing cached, the token already given); timed from the
//      navigation's start to the node table holding every node ("nodes"), and to every
//      panel filled: nodes, the spend per person, the goodput verdict and the jobs
//      ("all").
//   2. DASHBOARDS dashboards open at once, replayed here (replayDashboard): the requests
//      dashboard.js makes, on its timers, each dashboard with a pool of connections of
//      its own; a fifth of them with node PLOT_NODE selected, a tenth following the log
//      of job LOG_JOB. (Fifty real pages would be fifty chromium renderers on the same
//      cores as serve: the bench would measure chromium.) After SETTLE seconds, a window
//      of SECONDS: every request is timed from its start to its answer's last byte,
//      serve's CPU is read from /proc/SERVE_PID/stat, and LOADS page loads are timed in
//      chromium as in 1.
//
// Prints markdown: one row per phase, then a row per kind of request of the loaded window.
// Usage: node dashboard_load.js URL TOKEN_FILE NODES SERVE_PID DASHBOARDS SECONDS SETTLE
//            LOADS PLOT_NODE LOG_JOB
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const os = require('node:os');
const https = require('node:https');
const { performance } = require('node:perf_hooks');
const puppeteer = require(path.join(__dirname, '../test/browser/node_modules/puppeteer-core'));

const [url, tokenFile, nodesArg, servePid, dashboardsArg, secondsArg, settleArg, loadsArg,
       plotNode, logJob] = process.argv.slice(2);
const nodes = Number(nodesArg);
const dashboards = Number(dashboardsArg);
const seconds = Number(secondsArg);
const settle = Number(settleArg);
const loads = Number(loadsArg);
const token = fs.readFileSync(tokenFile, 'utf8').trim();
const kLoadTimeoutMs = 120000;
const hz = 100;  // USER_HZ: /proc's clock ticks on Linux

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function serveCpuSeconds() {
  const stat = fs.readFileSync(`/proc/${servePid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / hz;  // utime + stime
}

function serveRssMiB() {
  const m = /VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${servePid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

function quantile(sorted, q) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

const ms = (v) => (Number.isNaN(v) ? '—' : `${Math.round(v)} ms`);

// A dashboard page in a context of its own, logged in (the token in its session storage,
// as the login form leaves it).
async function openDashboard(browser) {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({ width: 1280, height: 1000 });
  await page.evaluateOnNewDocument((t) => sessionStorage.setItem('tpufleet-token', t), token);
  return { context, page };
}

// The kind of a request, for the table: the route, or the command's first words.
function kindOf(path, argv) {
  if (!argv) return `GET ${path.split('?')[0]}`;
  return 'command ' + argv.filter((a) => a !== '--json').slice(0, 4).join(' ')
      .replace(plotNode, 'NODE').replace(logJob, 'JOB');
}

// Why a request that got an answer failed ('' if it did not): its HTTP status, or for a
// command the exit code its stream ended with ("exit ?" when the end never came).
function whyFailed(status, argv, tail) {
  if (status >= 400) return `HTTP ${status}`;
  if (argv === undefined) return '';
  const end = /\{"exit_code":(-?\d+)\}\s*$/.exec(tail);
  if (!end) return 'exit ?';
  return end[1] === '0' ? '' : `exit ${end[1]}`;
}

// One open dashboard, replayed: the requests dashboard.js makes, on its timers, through
// a keep-alive pool of at most 6 connections, as a browser's. Dashboard i has the node
// PLOT_NODE selected when i % 5 == 1 (its plots ask `top` every 10 s) and follows the
// log of LOG_JOB when i % 10 == 2. While `log.on`, each request that ended is recorded:
// {kind, ms (start to the answer's last byte), status, failed: why, or '' (a status over
// 399: "HTTP 503"; a command's exit code other than 0: "exit 2"; no answer: the
// connection's error, "ECONNRESET")}.
function replayDashboard(i, log, stop) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 6, rejectUnauthorized: false });
  const timers = [];
  let follow = null;  // the followed log's request, while it lasts
  const send = (path, argv, maxAge) => new Promise((resolve) => {
    const t0 = performance.now();
    const on = log.on;
    let status = 0;
    let tail = '';
    const done = (failed) => {
      if (on && log.on && !(argv && argv[0] === 'logs')) {
        log.rows.push({ kind: kindOf(path, argv), ms: performance.now() - t0, status, failed });
      }
      resolve();
    };
    const req = https.request(url + path, {
      method: argv ? 'POST' : 'GET',
      agent,
      headers: Object.assign({ Authorization: 'Bearer ' + token },
                             argv ? { 'Content-Type': 'application/json' } : {}),
    }, (res) => {
      status = res.statusCode;
      res.setEncoding('utf8');
      res.on('data', (piece) => { tail = (tail + piece).slice(-200); });
      res.on('end', () => done(whyFailed(status, argv, tail)));
      res.on('error', (e) => done(e.code || e.message));
    });
    req.on('error', (e) => done(stop.now ? '' : e.code || e.message));
    req.setTimeout(kLoadTimeoutMs, () => req.destroy(new Error('timed out')));
    if (argv && argv[0] === 'logs') follow = req;
    const body = maxAge ? { argv, max_age_seconds: maxAge } : { argv };
    req.end(argv ? JSON.stringify(body) : undefined);
  });
  const every = (ms, fn) => {
    fn();
    timers.push(setInterval(fn, ms));
  };
  const spend = async () => {
    await send('/v1/command', ['cost', '--by', 'node', '--goodput', '--json'], 30);
    await send('/v1/command', ['cost', '--by', 'person', '--json'], 30);
    await send('/v1/command', ['cost', '--by', 'day', '--json'], 30);
  };
  const start = setTimeout(() => {
    every(30000, spend);
    every(5000, () => send('/v1/status?'));
    every(5000, () => send('/v1/events?since=24h&limit=200'));
    every(10000, () => send('/v1/command', ['jobs', '--json'], 5));
    if (i % 5 === 1) {
      every(10000, () => send('/v1/command', ['top', plotNode, '--json', '--since', '300s'], 5));
    } else if (i % 10 === 2) {
      follow = true;
      send('/v1/command', ['logs', '-f', logJob]).then(() => { follow = null; });
    }
  }, Math.random() * 5000);  // the pages were not all opened at the same moment
  return {
    follows: i % 5 !== 1 && i % 10 === 2,
    following: () => follow !== null,
    end: () => {
      clearTimeout(start);
      timers.forEach(clearInterval);
      if (follow && follow !== true) follow.destroy();
      agent.destroy();
    },
  };
}

// One fresh page load: ms to the nodes shown and to every panel filled; {failed: why}
// when it did not get there.
async function timeOneLoad(browser) {
  const { context, page } = await openDashboard(browser);
  try {
    const t0 = Date.now();
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: kLoadTimeoutMs });
    const wait = (fn, arg) =>
      page.waitForFunction(fn, { timeout: kLoadTimeoutMs, polling: 20 }, arg);
    await wait((n) => document.querySelectorAll('#nodes tbody tr').length >= n, nodes);
    const shown = Date.now() - t0;
    await wait(() => document.querySelectorAll('#spend tbody tr').length > 0 &&
        document.querySelector('#verdict').textContent !== '' &&
        document.querySelectorAll('#jobs tbody tr').length > 0);
    return { shown, all: Date.now() - t0 };
  } catch (e) {
    console.error(`dashboard bench: a page load failed: ${String(e.message).split('\n')[0]}`);
    return { failed: String(e.message).split('\n')[0] };
  } finally {
    await context.close();
  }
}

async function timeLoads(browser, n, spacingMs) {
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(await timeOneLoad(browser));
    if (i + 1 < n) await sleep(spacingMs);
  }
  return out;
}

function loadCells(results) {
  const done = results.filter((r) => !r.failed);
  const shown = done.map((r) => r.shown).sort((a, b) => a - b);
  const all = done.map((r) => r.all).sort((a, b) => a - b);
  const failed = results.length - done.length;
  return `${ms(quantile(shown, 0.5))} / ${ms(shown[shown.length - 1])} | ` +
      `${ms(quantile(all, 0.5))} / ${ms(all[all.length - 1])}` +
      (failed ? ` (${failed} of ${results.length} failed)` : '');
}

async function main() {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    acceptInsecureCerts: true,  // serve's own certificate
    protocolTimeout: kLoadTimeoutMs,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-proxy-server',
           '--disable-background-networking', '--disable-component-update', '--no-first-run',
           // Every page is looked at: no timer of a page in the background is slowed.
           '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
           '--disable-backgrounding-occluded-windows'],
  });
  const rows = [];
  try {
    console.error('dashboard bench: page loads, no other dashboard open');
    const c0 = serveCpuSeconds();
    const t0 = Date.now();
    const alone = await timeLoads(browser, loads, 2000);
    const aloneCpu = serveCpuSeconds() - c0;
    const aloneWall = (Date.now() - t0) / 1000;
    rows.push(`| 0 | ${aloneWall.toFixed(0)} s | — | — | ${loadCells(alone)} | ` +
        `${aloneCpu.toFixed(2)} s (${(100 * aloneCpu / aloneWall).toFixed(1)} % of a core) | ` +
        `${serveRssMiB().toFixed(1)} MiB | ${os.loadavg()[0].toFixed(2)} |`);

    console.error(`dashboard bench: ${dashboards} dashboards replayed`);
    const log = { on: false, rows: [] };
    const stop = { now: false };
    const replays = [];
    for (let i = 0; i < dashboards; i++) replays.push(replayDashboard(i, log, stop));
    console.error(`dashboard bench: ${dashboards} open; settling ${settle} s`);
    await sleep(settle * 1000);
    console.error(`dashboard bench: the ${seconds} s window`);
    log.on = true;
    const c1 = serveCpuSeconds();
    const t1 = Date.now();
    const loaded = await timeLoads(browser, loads, Math.max(0, (seconds * 1000) / loads - 5000));
    const left = seconds * 1000 - (Date.now() - t1);
    if (left > 0) await sleep(left);
    log.on = false;
    const cpu = serveCpuSeconds() - c1;
    const wall = (Date.now() - t1) / 1000;
    const following = replays.filter((r) => r.follows).length;
    const stillFollowing = replays.filter((r) => r.follows && r.following()).length;
    stop.now = true;
    replays.forEach((r) => r.end());
    const failed = log.rows.filter((r) => r.failed);
    rows.push(`| ${dashboards} | ${wall.toFixed(0)} s | ${log.rows.length} ` +
        `(${(log.rows.length / wall).toFixed(1)}/s) | ${failed.length} | ` +
        `${loadCells(loaded)} | ` +
        `${cpu.toFixed(2)} s (${(100 * cpu / wall).toFixed(1)} % of a core) | ` +
        `${serveRssMiB().toFixed(1)} MiB | ${os.loadavg()[0].toFixed(2)} |`);

    console.log('| dashboards open | window | requests | failed | page load: nodes p50 / max | ' +
        'page load: all p50 / max | serve CPU | serve RSS | load |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    rows.forEach((r) => console.log(r));
    console.log();
    console.log(`Logs still followed at the window's end: ${stillFollowing} of ${following}.`);
    console.log();
    console.log('| request (loaded window) | count | failed | p50 | p95 | max |');
    console.log('|---|---|---|---|---|---|');
    const kinds = [...new Set(log.rows.map((r) => r.kind))].sort();
    for (const kind of kinds) {
      const of = log.rows.filter((r) => r.kind === kind);
      const t = of.map((r) => r.ms).sort((a, b) => a - b);
      console.log(`| ${kind} | ${of.length} | ${of.filter((r) => r.failed).length} | ` +
          `${ms(quantile(t, 0.5))} | ${ms(quantile(t, 0.95))} | ${ms(t[t.length - 1])} |`);
    }
    if (failed.length > 0) {
      console.log();
      console.log('| failed request (loaded window) | why | count |');
      console.log('|---|---|---|');
      const causes = new Map();
      for (const r of failed) {
        const key = `| ${r.kind} | ${r.failed} |`;
        causes.set(key, (causes.get(key) || 0) + 1);
      }
      [...causes].sort((a, b) => b[1] - a[1]).forEach(([k, n]) => console.log(`${k} ${n} |`));
    }
  } finally {
    await browser.close();
  }
}

main().catch((e) => {
  console.error(`dashboard bench: ${e.stack || e}`);
  process.exit(1);
});
