// Drives Debian's chromium, headless, through the dashboard of a running `tpufleet
// serve` (puppeteer-core over the DevTools protocol; no browser is downloaded), as a
// person would use it, and takes a screenshot of each page into OUTDIR:
//   login    the page asks for a token; a wrong one is refused in one line
//   nodes    logged in, the fleet's node is listed with its state
//   spend    the ledger's spend, billed to the fleet's owner; the owner's part of today's
//            bar in the plot of spend per day (and in its legend), under the daily
//            budget's line; the pod's line of where
//            the spend went, and the verdict
//   log      a job's log followed live: a line printed after it was opened arrives
//   plot     the node's duty cycle drawn from its agents' samples
//   events   a preemption (PREEMPT_COMMAND, run here) appears among the events
// Prints "ok - STEP" or "not ok - STEP: why" per step (test/dashboard_e2e.sh makes each
// a check) and exits 1 if any failed.
// Usage: node dashboard.js URL TOKEN_FILE OUTDIR OWNER PREEMPT_COMMAND
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const puppeteer = require('puppeteer-core');

const [url, tokenFile, outDir, owner, preemptCommand] = process.argv.slice(2);
// The longest one step waits: serve's pass, the agents' sampling and a preemption's
// notice each take seconds; the emulated pod is slower on a loaded machine.
const kStepMs = 120000;

let failures = 0;

async function step(name, fn) {
  try {
    await fn();
    console.log(`ok - ${name}`);
  } catch (e) {
    failures++;
    console.log(`not ok - ${name}: ${String(e.message).split('\n')[0]}`);
  }
}

async function shot(page, name) {
  const file = path.join(outDir, `dashboard-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`# screenshot ${file}`);
}

// Waits until `fn` (run in the page, with `arg`) returns something true, and returns it.
function until(page, fn, arg) {
  return page.waitForFunction(fn, { timeout: kStepMs, polling: 250 }, arg)
      .then((handle) => handle.jsonValue());
}

async function main() {
  const token = fs.readFileSync(tokenFile, 'utf8').trim();
  fs.mkdirSync(outDir, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // serve's certificate is its own (pinned by tpufleet's clients, unknown to a browser).
    acceptInsecureCerts: true,
    // Root runs the tests: chromium's sandbox needs an unprivileged user. Nothing leaves
    // loopback: no proxy, no background fetches.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-proxy-server',
           '--disable-background-networking', '--disable-component-update', '--no-first-run',
           '--window-size=1280,1000'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 1000 });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));

  await step('login: the page asks for a token, and a wrong one is refused in one line', async () => {
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: kStepMs });
    await page.waitForSelector('#login-form', { visible: true, timeout: kStepMs });
    await page.type('#token', 'not-a-token');
    await page.click('#login-button');
    const said = await until(page, () => document.querySelector('#login-error').textContent);
    if (!/does not know that token/.test(said)) throw new Error(`it said "${said}"`);
    await shot(page, 'login');
  });

  await step('nodes: logged in, the pod is listed READY', async () => {
    await page.$eval('#token', (el) => { el.value = ''; });
    await page.type('#token', token);
    await page.click('#login-button');
    const state = await until(page, () => {
      const row = document.querySelector('#nodes tbody tr[data-node="pod"]');
      return row && row.children[2].textContent === 'READY' && row.children[2].textContent;
    });
    if (state !== 'READY') throw new Error(`pod is ${state}`);
    await shot(page, 'nodes');
  });

  await step(`spend: the ledger bills the fleet's owner (${owner})`, async () => {
    const who = await until(page, (want) => {
      const first = document.querySelector('#spend tbody tr td');
      return first && first.textContent === want && first.textContent;
    }, owner);
    if (who !== owner) throw new Error(`the first line is ${who}`);
    const today = new Date().toISOString().slice(0, 10);
    const bar = await until(page, ([day, person]) => {
      const rect = document.querySelector(
          `#plot-days rect.day[data-day="${day}"][data-person="${person}"]`);
      return rect && Number(rect.getAttribute('height')) > 0 &&
          document.querySelector('#plot-days line.budget') &&
          document.querySelector(`#days-legend li[data-person="${person}"]`) && day;
    }, [today, owner]);
    if (bar !== today) throw new Error(`no part of ${owner} in the bar of ${today} under a budget line`);
    const verdict = await until(page, () => {
      const pod = [...document.querySelectorAll('#goodput tbody tr td')]
          .some((td) => td.textContent.endsWith('/pod'));
      const text = document.querySelector('#verdict').textContent;
      return pod && / % of the spend was /.test(text) && text;
    });
    if (!verdict) throw new Error('no goodput line of the pod, or no verdict');
    await page.$eval('#spend', (el) => el.scrollIntoView());
    await shot(page, 'spend');
  });

  await step('log: a job\'s log is followed live, and a new line arrives', async () => {
    await until(page, () => document.querySelector('#jobs tbody tr[data-job]'));
    await page.click('#jobs tbody tr[data-job]');
    const steps = () => (document.querySelector('#log').textContent.match(/ step /g) || []).length;
    const first = await until(page, `(${steps})()`);
    const later = await until(page, `(${steps})() > ${first} && (${steps})()`);
    if (!(later > first)) throw new Error(`${first} lines, then ${later}`);
    await page.$eval('#log-section', (el) => el.scrollIntoView());
    await shot(page, 'log');
  });

  await step('plot: the pod\'s duty cycle is drawn from its agents\' samples', async () => {
    await page.click('#nodes tbody tr[data-node="pod"]');
    const points = await until(page, () => {
      const lines = [...document.querySelectorAll('#plot-duty path.series')];
      const most = Math.max(0, ...lines.map((p) => Number(p.dataset.points)));
      return most >= 2 && most;
    });
    if (!(points >= 2)) throw new Error(`${points} points`);
    await page.$eval('#plots-section', (el) => el.scrollIntoView());
    await shot(page, 'plot');
  });

  await step('events: a preemption appears among the events', async () => {
    execFileSync('bash', ['-c', preemptCommand], { stdio: 'inherit', timeout: kStepMs });
    await until(page, () => document.querySelector('#events tbody tr[data-kind="preempted"]'));
    await page.$eval('#events', (el) => el.scrollIntoView());
    await shot(page, 'events');
  });

  await step('the page raised no script error', async () => {
    if (pageErrors.length) throw new Error(pageErrors.join('; '));
  });
  await browser.close();
}

main().then(() => process.exit(failures ? 1 : 0), (e) => {
  console.log(`not ok - the browser: ${e.message}`);
  process.exit(1);
});
