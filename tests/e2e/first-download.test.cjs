// The first download: the page starts with its first module (the lesson, the
// partitioner, the sandbox's panel, Learn) and fetches the simulator's
// module (the map, the steps, the exercises' runs) only when it is needed:
// when the map comes near the screen, when the learner asks, when an
// exercise runs. What the browser downloads before that is at most 400 KB,
// counted as it came over the wire. A snippet runs on the simulator's
// module too: the engine is downloaded once.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath } = require('./browser.cjs');

const BUDGET_BYTES = 400 * 1000;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** Records every response of `page`: its path and its body's size on the wire. */
function recordDownloads(page) {
  const downloads = [];
  page.on('requestfinished', async (request) => {
    const sizes = await request.sizes().catch(() => null);
    downloads.push({ path: new URL(request.url()).pathname, bytes: sizes ? Math.max(0, sizes.responseBodySize) : 0 });
  });
  return downloads;
}

test('the page opens with at most 400 KB and fetches the simulator when the learner opens the map', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const downloads = recordDownloads(page);
  const problems = [];
  page.on('pageerror', (error) => problems.push(String(error)));
  await page.goto(process.env.KAFKASCOPE_URL || 'http://127.0.0.1:8080/', { waitUntil: 'networkidle' });
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  await page.waitForLoadState('networkidle');
  // The lesson works without the simulator; the map and the steps wait.
  assert.equal(await page.evaluate(() => document.documentElement.dataset.simulator), 'waiting');
  assert.equal(await page.getByTestId('map-stand-in').count(), 1);
  assert.equal(await page.getByTestId('steps-stand-in').count(), 1);
  const first = downloads.filter((download) => !download.path.endsWith('/sw.js'));
  const total = first.reduce((sum, download) => sum + download.bytes, 0);
  console.log(`first download: ${total} bytes over the wire in ${first.length} files:\n${first.map((d) => `  ${d.path} ${d.bytes}`).join('\n')}`);
  assert.ok(!first.some((download) => download.path.includes('/sim/')), 'the simulator came with the first download');
  assert.ok(first.some((download) => download.path.endsWith('_bg.wasm')), 'the first module was downloaded');
  assert.ok(total <= BUDGET_BYTES, `the first download is ${total} bytes, over ${BUDGET_BYTES}`);

  // Opening the map fetches the simulator once and draws both parts.
  await page.getByTestId('nav-map').click();
  await page.getByTestId('cluster').waitFor({ timeout: 30000 });
  await page.getByTestId('steps').waitFor({ state: 'attached', timeout: 30000 });
  assert.equal(await page.evaluate(() => document.documentElement.dataset.simulator), 'ready');
  assert.equal(await page.locator('[data-sim-stand-in]').count(), 0, 'the stand-ins are gone');
  assert.equal(await page.locator('#map').count(), 1, 'one element is #map');
  assert.equal(downloads.filter((download) => /\/sim\/kafkascope-sim-[0-9a-f]{16}_bg\.wasm$/.test(download.path)).length, 1);
  // Each module's Yew numbers its apps apart: the first module's marks stay
  // outside the slots, the simulator's inside (else one would take the
  // other's events).
  const marks = await page.evaluate(() => {
    const outside = new Set();
    const inside = new Set();
    for (const element of document.querySelectorAll('*')) {
      const mark = element.__yew_subtree_id;
      if (mark !== undefined) (element.closest('.sim-slot') ? inside : outside).add(mark);
    }
    return { outside: [...outside], inside: [...inside] };
  });
  assert.ok(marks.inside.length > 0 && marks.outside.length > 0, JSON.stringify(marks));
  assert.ok(marks.outside.every((mark) => !marks.inside.includes(mark)), JSON.stringify(marks));
  // The two modules live side by side: the map plays, the partitioner answers.
  const before = await page.getByTestId('cluster-time').innerText();
  await page.getByTestId('cluster-run-1s').click();
  assert.notEqual(await page.getByTestId('cluster-time').innerText(), before);
  await page.getByTestId('nav-partitioner').click();
  await page.getByTestId('key-input').fill('foobar');
  await page.getByTestId('partitions-input').fill('12');
  await page.waitForFunction(() => document.querySelector('[data-testid="partition"]').textContent === '6');

  // A snippet runs on the same module: the sandbox asks for the file the
  // map loaded and the browser's cache answers, so nothing of the engine
  // comes over the wire twice, and there is no second engine to fetch.
  await page.getByTestId('nav-sandbox').click();
  await page.getByTestId('sandbox-editor').fill('console.log(partitionFor("foobar", 12));');
  await page.getByTestId('sandbox-run').click();
  await page.locator('[data-testid="sandbox"][data-finished-runs="1"]').waitFor({ timeout: 60000 });
  assert.equal((await page.getByTestId('sandbox-console').innerText()).trim(), '6');
  await page.waitForLoadState('networkidle');
  const engine = downloads.filter((download) => /\/sim\/kafkascope-sim-[0-9a-f]{16}_bg\.wasm$/.test(download.path));
  assert.ok(engine.length >= 1, 'the sandbox did not ask for the simulator');
  assert.equal(new Set(engine.map((download) => download.path)).size, 1, 'two different engine modules');
  assert.equal(engine.filter((download) => download.bytes > 0).length, 1,
    `the engine came over the wire more than once: ${JSON.stringify(engine)}`);
  const modules = new Set(downloads.filter((download) => download.path.endsWith('.wasm')).map((download) => download.path));
  assert.equal(modules.size, 2, `wasm modules fetched: ${[...modules].join(', ')}`);
  assert.deepEqual(problems, []);
  await page.close();
});

/**
 * Opens the page as a learner who has not scrolled near the map: the
 * browser's IntersectionObserver never reports the stand-ins (whatever the
 * lesson's height on this screen), so only a click or a run loads the
 * simulator.
 */
async function openUnscrolled(options) {
  const page = await browser.newPage({ viewport: { width: options.width, height: options.height } });
  const problems = [];
  page.on('pageerror', (error) => problems.push(String(error)));
  page.on('console', (message) => { if (message.type() === 'error') problems.push(message.text()); });
  await page.addInitScript(() => {
    window.IntersectionObserver = class { observe() {} disconnect() {} };
  });
  await page.goto((process.env.KAFKASCOPE_URL || 'http://127.0.0.1:8080/') + (options.query || ''), { waitUntil: 'networkidle' });
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  return { page, problems };
}

test('on a phone, opening Stories loads the simulator and draws the map and the steps', async () => {
  const { page, problems } = await openUnscrolled({ width: 390, height: 844 });
  assert.equal(await page.evaluate(() => document.documentElement.dataset.simulator), 'waiting');
  assert.match(await page.getByTestId('steps-stand-in').textContent(), /The simulator loads when this view opens/);
  await page.getByTestId('nav-stories').click();
  await page.getByTestId('steps').waitFor({ timeout: 30000 });
  await page.getByTestId('cluster').waitFor({ state: 'attached', timeout: 30000 });
  await page.screenshot({ path: screenshotPath('simulator-stories-phone') });
  assert.equal(await page.locator('[data-sim-stand-in]').count(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('an exercise runs in the simulator before the map was ever drawn', async () => {
  const { page, problems } = await openUnscrolled({ width: 1280, height: 900, query: '#exercise' });
  assert.equal(await page.evaluate(() => document.documentElement.dataset.simulator), 'waiting');
  const exercise = page.getByTestId('exercise-pitfalls');
  const answers = { 'fourth-member': 'idle', 'leader-dies': 'continue', 'second-leader-dies': 'error', 'unclean': 'loss' };
  for (const [id, answer] of Object.entries(answers)) await exercise.getByTestId(`case-${id}-${answer}`).check();
  await exercise.getByTestId('exercise-run').click();
  assert.equal(await exercise.getByTestId('exercise-score').innerText(), '4 of 4 right.');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.simulator), 'ready');
  assert.equal(await page.getByTestId('map-stand-in').count(), 1, 'the run drew nothing');
  // A verdict's link opens the steps: the simulator draws them then.
  await exercise.getByTestId('verdict-unclean').locator('.lesson-link').click();
  await page.waitForFunction(() => document.querySelector('[data-testid="steps"]')?.dataset.story === 'exercise', null, { timeout: 30000 });
  assert.deepEqual(problems, []);
  await page.close();
});

test('when the simulator cannot load, the map says so and loads on a second try', async () => {
  // No service worker: the test's own network answers every request.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  // Not scrolled near the map: only the button loads it (see openUnscrolled).
  await page.addInitScript(() => {
    window.IntersectionObserver = class { observe() {} disconnect() {} };
  });
  const simulator = /\/sim\/kafkascope-sim-[0-9a-f]{16}\.js(\?|$)/;
  await page.route(simulator, (route) => route.fulfill({ status: 503, body: 'down for a minute' }));
  await page.goto(process.env.KAFKASCOPE_URL || 'http://127.0.0.1:8080/', { waitUntil: 'networkidle' });
  await page.getByTestId('nav-map').click();
  const failed = page.getByTestId('map-load-failed');
  await failed.waitFor({ timeout: 30000 });
  await page.getByTestId('map-stand-in').screenshot({ path: screenshotPath('simulator-failed') });
  assert.match(await failed.innerText(), /^The simulator could not load: .+\. Try again$/);
  await page.unroute(simulator);
  await failed.getByRole('button', { name: 'Try again' }).click();
  await page.getByTestId('cluster').waitFor({ timeout: 30000 });
  await page.getByTestId('steps').waitFor({ state: 'attached', timeout: 30000 });
  await context.close();
});
