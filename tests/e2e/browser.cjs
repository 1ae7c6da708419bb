// Shared set-up for the end-to-end tests: launches Debian's Chromium through
// playwright-core and records console errors and failed requests, so every
// test can assert the page loaded cleanly.
'use strict';

const path = require('node:path');
const { chromium } = require('playwright-core');

const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-quic',
  '--no-first-run',
];

/** The served app's URL (set by `cargo xtask test`). */
const APP_URL = process.env.KAFKASCOPE_URL || 'http://127.0.0.1:8080/';
/** Where screenshots go for review. */
const ARTIFACTS = process.env.KAFKASCOPE_ARTIFACTS || path.resolve('target/e2e-artifacts');

async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: CHROMIUM_ARGS,
  });
}

/**
 * Opens the app in a new page and collects its problems: console errors,
 * uncaught exceptions, failed requests and HTTP errors.
 */
async function openApp(browser, { width = 1280, height = 900, query = '', ready = 'app-nav', simulator = true, view } = {}) {
  const page = await browser.newPage({ viewport: { width, height } });
  const problems = [];
  page.on('console', (message) => {
    if (message.type() === 'error') {
      problems.push(`console error: ${message.text()} (${message.location()?.url || 'no url'})`);
    }
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => {
    const error = request.failure()?.errorText;
    // The sandbox frame loads its workers' scripts from blob: URLs it made
    // and stops a worker once its run is over; a worker stopped while
    // Chromium still counts its script's load as open reports that load as
    // aborted (seen once in CI, in a run whose output was right). Nothing
    // was fetched from a network and nothing failed for the learner; every
    // other failed request is a problem.
    if (request.url().startsWith('blob:') && error === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${request.url()} (${error})`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`);
  });
  await page.goto(APP_URL + query, { waitUntil: 'networkidle' });
  // The wasm app has started once the first card is on the page (or, for
  // an embedded part, whatever `ready` names).
  await page.getByTestId(ready).waitFor({ timeout: 30000 });
  if (simulator) await withSimulator(page);
  if (view) await showView(page, view);
  return { page, problems };
}

/**
 * Shows one of the page's views (learn, map, stories, sandbox,
 * partitioner) as a learner does: with its link in the top bar.
 */
async function showView(page, view) {
  const link = page.getByTestId(`nav-${view}`);
  if (await link.getAttribute('aria-current') !== 'page') await link.click();
  await page.getByTestId(`view-${view}`).waitFor({ state: 'visible', timeout: 10000 });
}

/** Shows one of the map's tabs (inspector, knobs, recent, lag, topics, groups, ledger, quorum, compare). */
async function showTool(page, id) {
  const tab = page.getByTestId('cluster').getByTestId(`tab-${id}`);
  if (await tab.getAttribute('aria-selected') !== 'true') await tab.click();
}

/**
 * Makes sure the simulator's module has drawn the map and the steps. It
 * loads when they come near the screen (or at once when the address needs
 * them); here the map's "Load it now" is pressed, without scrolling or
 * moving the focus, so the test goes on from the top of the page. A page
 * without the simulator's parts is left alone.
 */
async function withSimulator(page) {
  const state = await page.evaluate(() => document.documentElement.dataset.simulator);
  if (state === undefined) return;
  if (state === 'waiting') {
    await page.evaluate(() => document.querySelector('[data-sim-stand-in] button')?.click());
    await page.waitForFunction(() => document.documentElement.dataset.simulator !== 'waiting', null, { timeout: 10000 });
  }
  await page.waitForFunction(() => document.documentElement.dataset.simulator !== 'loading'
    && !document.querySelector('[data-sim-stand-in]'), null, { timeout: 30000 })
    .catch(() => {});
  const failed = await page.evaluate(() => document.documentElement.dataset.simulator);
  if (failed !== 'ready') throw new Error(`the simulator did not load (${failed})`);
}

// Starts `server` on 127.0.0.1 at a free port and resolves with its base URL.
async function listenLocal(server) {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${server.address().port}`;
}

/**
 * axe-core's serious and critical violations on `page`, with WCAG 2.2's
 * target size (2.5.8: at least 24 by 24 CSS px, or spaced as far apart),
 * which is off in axe's defaults: the page is held to it.
 */
async function seriousViolations(page) {
  const axe = require('node:fs').readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.addScriptTag({ content: axe });
  const result = await page.evaluate(() => globalThis.axe.run(document, {
    resultTypes: ['violations'],
    rules: { 'target-size': { enabled: true } },
  }));
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.impact} ${violation.id} (${violation.nodes.length}): ${violation.help}; at ${violation.nodes.slice(0, 4).map((node) => node.target.join(' ')).join(', ')}`);
}

function screenshotPath(name) {
  return path.join(ARTIFACTS, `${name}.png`);
}

// The "Sequence steps" section and its parts, for the tests that read a
// story: the section, a part by test id, one of its data attributes, and
// picking a story in its picker.
const steps = (page) => page.getByTestId('steps');
const within = (page, id) => steps(page).getByTestId(id);
const stepsAttr = async (page, name) => steps(page).getAttribute(name);
const chooseStory = async (page, id) => {
  await within(page, 'story-select').selectOption(id);
  await page.waitForFunction((wanted) => document.querySelector('[data-testid="steps"]').dataset.story === wanted, id);
};

// The shipped stories: the scenario files with a `story` block, in their
// stated order.
function shippedStories() {
  const fs = require('node:fs');
  const folder = path.join(__dirname, '..', '..', 'scenarios');
  return fs.readdirSync(folder)
    .filter((file) => file.endsWith('.json'))
    .map((file) => JSON.parse(fs.readFileSync(path.join(folder, file), 'utf8')))
    .filter((scenario) => scenario.story)
    // As the page orders them: by order, then by id.
    .sort((a, b) => a.story.order - b.story.order || (a.story.id < b.story.id ? -1 : a.story.id > b.story.id ? 1 : 0));
}

// A run link's text as the page writes it: raw deflate, base64url.
const decodeRun = (text) => JSON.parse(require('node:zlib').inflateRawSync(Buffer.from(text.split('.')[1], 'base64url')).toString());
const encodeRun = (run) => `1.${require('node:zlib').deflateRawSync(Buffer.from(JSON.stringify(run)), { level: 9 }).toString('base64url')}`;

// As large a scenario as a file may carry: 64 brokers, 1,000 partitions,
// ten minutes (the page stops it at its work limit).
const LARGEST_SCENARIO = {
  name: 'big', description: 'as large as a scenario file may be', seed: 1,
  config: {
    brokers: 64,
    topics: [{ name: 't', partitions: 1000, replicationFactor: 3, minInsyncReplicas: 2 }],
    producers: [{ topic: 't', acks: 'all' }],
    consumers: [{ group: 'g', topics: ['t'] }],
  },
  inputs: [{ atMs: 100, input: { type: 'produce', producer: 0, count: 100 } }],
  runUntilMs: 600000,
};

module.exports = {
  decodeRun, encodeRun, LARGEST_SCENARIO,
  launch, openApp, showView, showTool, withSimulator, screenshotPath, listenLocal, APP_URL, seriousViolations,
  steps, within, stepsAttr, chooseStory, shippedStories,
};
