// Hosting anywhere: the server sends each file precompressed with the right
// Content-Encoding and long caching where names carry a content hash; once
// opened, the page works offline (a learner on a train): it reloads, a story
// opens at a step, the live map runs and a snippet runs, with no network.
'use strict';

const http = require('node:http');
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, APP_URL, withSimulator, screenshotPath } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** GET without decompressing; resolves with the status, headers and size. */
function head(url, acceptEncoding) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { 'accept-encoding': acceptEncoding } }, (response) => {
      let size = 0;
      response.on('data', (chunk) => { size += chunk.length; });
      response.on('end', () => resolve({ status: response.statusCode, headers: response.headers, size }));
    }).on('error', reject);
  });
}

test('files come precompressed, hashed names are cached for a year and the page is revalidated', async () => {
  const page = await head(APP_URL, 'br, gzip');
  assert.equal(page.status, 200);
  assert.equal(page.headers['content-encoding'], 'br');
  assert.equal(page.headers['cache-control'], 'no-cache');
  const html = await (await fetch(APP_URL)).text();
  const wasm = html.match(/'\.\/([^']+_bg\.wasm)'/)?.[1];
  assert.ok(wasm, 'the page names its wasm');
  const raw = await head(APP_URL + wasm, 'identity');
  for (const [encoding, expected] of [['br', 'br'], ['gzip', 'gzip'], ['gzip, deflate, br', 'br']]) {
    const compressed = await head(APP_URL + wasm, encoding);
    assert.equal(compressed.status, 200);
    assert.equal(compressed.headers['content-encoding'], expected, encoding);
    assert.equal(compressed.headers['content-type'], 'application/wasm');
    assert.equal(compressed.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.ok(compressed.size < raw.size / 2, `${encoding}: ${compressed.size} of ${raw.size}`);
  }
  assert.equal(raw.headers['content-encoding'], undefined);
  const worker = await head(APP_URL + 'sw.js', 'gzip');
  assert.equal(worker.headers['cache-control'], 'no-cache');
});

/**
 * A fresh browser profile that has opened the page once, with its service
 * worker installed and in control; `errors` collects uncaught errors.
 */
async function openedOnce() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(APP_URL, { waitUntil: 'networkidle' });
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  // The service worker installs once the app runs and keeps every file.
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => undefined));
  await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30000 });
  return { context, page, errors };
}

test('once opened, the page reloads and works offline: a story at a step, the live map, a snippet', async () => {
  const { context, page, errors } = await openedOnce();
  const cached = await page.evaluate(async () => {
    const names = await caches.keys();
    const cache = await caches.open(names.find((name) => name.startsWith('kafkascope ')));
    return (await cache.keys()).map((request) => new URL(request.url).pathname);
  });
  assert.ok(cached.some((file) => file.endsWith('_bg.wasm')), cached.join(', '));
  // One engine: the sandbox runs the simulator's module, and no second
  // copy of the engine is part of the site.
  assert.ok(!cached.some((file) => file.includes('/pkg/')), cached.join(', '));
  // The simulator's module too, though this visit never opened the map.
  assert.ok(cached.some((file) => /sim\/kafkascope-sim-[0-9a-f]{16}_bg\.wasm$/.test(file)), cached.join(', '));

  await context.setOffline(true);
  await page.reload();
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  // The map loads its module from the cache when the learner opens it.
  await page.getByTestId('nav-map').click();
  await withSimulator(page);
  const live = page.getByTestId('cluster');
  const before = await live.getByTestId('cluster-time').innerText();
  await live.getByTestId('cluster-run-1s').click();
  assert.notEqual(await live.getByTestId('cluster-time').innerText(), before);

  await page.getByTestId('nav-sandbox').click();
  const finished = Number(await page.getByTestId('sandbox').getAttribute('data-finished-runs'));
  await page.getByTestId('sandbox-editor').fill("console.log('offline', partitionFor('alice', 6))");
  await page.getByTestId('sandbox-run').click();
  await page.locator(`[data-testid="sandbox"][data-finished-runs="${finished + 1}"]`).waitFor({ timeout: 30000 });
  assert.match(await page.getByTestId('sandbox-console').innerText(), /offline \d/);

  // A link with its own query (a story at a step) opens from the cache too.
  const story = await context.newPage();
  await story.goto(APP_URL + '?story=happy-path&step=3#steps');
  const steps = story.getByTestId('steps');
  await steps.waitFor({ timeout: 30000 });
  await story.waitForFunction(() => document.querySelector('[data-testid="steps"]').dataset.story === 'happy-path');
  await story.screenshot({ path: screenshotPath('offline-story') });
  assert.deepEqual(errors, []);
  await context.close();
});

// Issue 39's second attack: another project served from the same origin
// under another path (two projects of one static-site account) opens the
// app's cache and plants its own script under the names of kafkascope's
// modules. The worker checks every cached file against the build's SHA-256
// digests before serving it, so the planted copies are deleted and the
// real files come from the network; nothing planted runs.
test('a neighbour on the same origin cannot poison the offline cache: planted files are refused and deleted', async () => {
  const { context, page, errors } = await openedOnce();

  // The neighbour's page: same origin, another path, outside the worker's scope.
  const neighbourUrl = new URL('/neighbour/index.html', APP_URL).href;
  await context.route(neighbourUrl, (route) => route.fulfill({
    contentType: 'text/html',
    body: '<!doctype html><title>a neighbour</title><p>another project on this origin</p>',
  }));
  const neighbour = await context.newPage();
  await neighbour.goto(neighbourUrl);
  const planted = await neighbour.evaluate(async () => {
    const name = (await caches.keys()).find((key) => key.startsWith('kafkascope '));
    const cache = await caches.open(name);
    const evil = "document.documentElement.dataset.poisoned = 'yes';";
    const names = [];
    for (const request of await cache.keys()) {
      if (/kafkascope-web-[0-9a-f]+\.js$|sim\/kafkascope-sim-[0-9a-f]{16}\.js$/.test(request.url)) {
        await cache.put(request, new Response(evil, { headers: { 'Content-Type': 'text/javascript' } }));
        names.push(new URL(request.url).pathname);
      }
    }
    return names;
  });
  assert.equal(planted.length, 2, planted.join(', '));

  // The learner comes back: the app and its simulator are kafkascope's own.
  await page.reload();
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  await page.getByTestId('nav-map').click();
  await withSimulator(page);
  assert.equal(await page.evaluate(() => document.documentElement.dataset.poisoned), undefined);
  const live = page.getByTestId('cluster');
  const before = await live.getByTestId('cluster-time').innerText();
  await live.getByTestId('cluster-run-1s').click();
  assert.notEqual(await live.getByTestId('cluster-time').innerText(), before);
  // The planted copies are gone from the cache.
  const left = await neighbour.evaluate(async (names) => {
    const cache = await caches.open((await caches.keys()).find((key) => key.startsWith('kafkascope ')));
    const still = [];
    for (const name of names) {
      const hit = await cache.match(name);
      if (hit && (await hit.text()).includes('poisoned')) still.push(name);
    }
    return still;
  }, planted);
  assert.deepEqual(left, []);

  // The page's own bytes put back with the neighbour's headers: a Refresh
  // to its own page and a policy that stops every script. The bytes match
  // the build's, so the worker serves them, but with its own headers.
  const swapped = await neighbour.evaluate(async () => {
    const cache = await caches.open((await caches.keys()).find((key) => key.startsWith('kafkascope ')));
    let count = 0;
    for (const request of await cache.keys()) {
      if (/\/(index\.html)?$/.test(new URL(request.url).pathname)) {
        const body = await (await cache.match(request)).arrayBuffer();
        await cache.put(request, new Response(body, {
          headers: { 'Content-Type': 'text/html', Refresh: '0;url=/neighbour/index.html', 'Content-Security-Policy': "script-src 'none'" },
        }));
        count += 1;
      }
    }
    return count;
  });
  assert.equal(swapped, 2);
  // An address under the app that the server does not have falls back to
  // the cached page, and an offline visit comes from the cache: both are
  // kafkascope's page, and it runs.
  const lost = await context.newPage();
  lost.on('pageerror', (error) => errors.push(String(error)));
  await lost.goto(APP_URL + 'no-such-page');
  await lost.getByTestId('app-nav').waitFor({ timeout: 30000 });
  assert.ok(lost.url().startsWith(APP_URL), lost.url());
  await context.setOffline(true);
  await lost.reload();
  await lost.getByTestId('app-nav').waitFor({ timeout: 30000 });
  assert.ok(lost.url().startsWith(APP_URL), lost.url());
  assert.deepEqual(errors, []);
  await context.close();
});
