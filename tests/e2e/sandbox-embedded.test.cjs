// Course pages embed kafkascope in an iframe. The sandbox works there too:
// every example and every API reference example runs when the app is in a
// cross-origin iframe and in an iframe sandboxed with `allow-scripts` only
// (an opaque origin), and the sandbox frame is still isolated (it cannot
// reach the network from inside the embedded app). Where the app cannot
// run, it says so: a host that forbids scripts gets the <noscript>
// message, a host that does not send the CORS header an opaque origin
// needs gets the "could not start" message, never a blank frame.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { launch, listenLocal, screenshotPath, APP_URL } = require('./browser.cjs');

const EXPECTED = JSON.parse(
  fs.readFileSync(path.join(__dirname, '../../web/sandbox-examples/expected.json'), 'utf8'),
).examples;
const REFERENCE = JSON.parse(fs.readFileSync(path.join(__dirname, '../../web/api-reference.json'), 'utf8')).entries;

let browser;
let host;
let hostUrl = '';
let bare;
let bareUrl = '';
const arrivals = [];

// The course page's iframe for a query: `sandboxed` (allow-scripts only),
// `noscript` (sandbox="" : no scripts at all), `bare` (allow-scripts only,
// the app from a host without the CORS header); else a plain iframe.
function coursePage(query) {
  const sandbox = { sandboxed: ' sandbox="allow-scripts"', bare: ' sandbox="allow-scripts"', noscript: ' sandbox=""' }[query] || '';
  const src = query === 'bare' ? `${bareUrl}${new URL(APP_URL).pathname}` : APP_URL;
  return `<!doctype html><title>course</title><h1>A course page</h1>
    <iframe${sandbox} src="${src}" title="kafkascope" style="width: 1240px; height: 860px"></iframe>`;
}

before(async () => {
  // The course page: another origin (another port) embedding the app.
  host = http.createServer((request, response) => {
    if (request.url.startsWith('/course')) {
      response.setHeader('Content-Type', 'text/html; charset=utf-8');
      response.end(coursePage(new URL(request.url, hostUrl).search.slice(1)));
    } else if (request.url === '/favicon.ico') {
      response.statusCode = 404;
      response.end();
    } else {
      arrivals.push(request.url);
      response.end('arrived');
    }
  });
  hostUrl = await listenLocal(host);
  // A static host that does not send Access-Control-Allow-Origin: the
  // app's files, relayed from the test server with only their type.
  bare = http.createServer(async (request, response) => {
    const upstream = await fetch(new URL(request.url, APP_URL));
    response.writeHead(upstream.status, { 'Content-Type': upstream.headers.get('content-type') || 'text/plain' });
    response.end(Buffer.from(await upstream.arrayBuffer()));
  });
  bareUrl = await listenLocal(bare);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  host?.close();
  bare?.close();
});

async function finishedRuns(app) {
  return Number(await app.getByTestId('sandbox').getAttribute('data-finished-runs'));
}

async function run(app) {
  const before = await finishedRuns(app);
  await app.getByTestId('sandbox-run').click();
  await app.locator(`[data-testid="sandbox"][data-finished-runs="${before + 1}"]`).waitFor({ timeout: 30000 });
  return app.getByTestId('sandbox-console').innerText();
}

// Runs every example and every API reference example in the embedded app
// and checks each one's output, then probes the network from a snippet's
// nested worker: nothing may reach the course host.
async function runEverything(app, probe) {
  for (const id of Object.keys(EXPECTED)) {
    await app.getByTestId('sandbox-example').selectOption(id);
    const output = await run(app);
    for (const fragment of EXPECTED[id].output) {
      assert.ok(output.includes(fragment), `${id}: missing ${JSON.stringify(fragment)} in\n${output}`);
    }
    assert.equal(await app.getByTestId('sandbox-error').count(), 0, `${id} failed:\n${output}`);
  }
  await app.getByTestId('api-reference').locator('summary').click();
  for (const entry of REFERENCE) {
    await app.getByTestId(`try-${entry.name}`).click();
    const output = await run(app);
    for (const fragment of entry.expect) {
      assert.ok(output.includes(fragment), `${entry.name}: missing ${JSON.stringify(fragment)} in\n${output}`);
    }
  }

  await app.getByTestId('sandbox-editor').fill(`
    const worker = new Worker(URL.createObjectURL(new Blob(["fetch('${hostUrl}/${probe}').then(() => postMessage('reached'), (e) => postMessage(String(e)))"])));
    console.log(await new Promise((resolve) => { worker.onmessage = (event) => resolve(event.data); }));`);
  assert.match(await run(app), /Failed to fetch/);
  assert.deepEqual(arrivals, []);
}

// Opens the course page for `query` and returns the page, the embedded app
// and the problems it reported (uncaught errors, on the page or in a frame).
async function openCourse(query) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.goto(`${hostUrl}/course${query ? `?${query}` : ''}`);
  return { page, problems, app: page.frameLocator('iframe[title="kafkascope"]') };
}

test('in a cross-origin iframe, every example and API reference example runs, and snippets stay offline', async () => {
  const { page, problems, app } = await openCourse('');
  await app.getByTestId('app-nav').waitFor({ timeout: 30000 });
  await app.getByTestId('nav-sandbox').click();
  await runEverything(app, 'from-embedded');
  assert.equal(await app.getByTestId('startup-failed').count(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('in an iframe sandboxed with allow-scripts only (an opaque origin), every example and API reference example runs, and snippets stay offline', async () => {
  const { page, problems, app } = await openCourse('sandboxed');
  await app.getByTestId('app-nav').waitFor({ timeout: 30000 });
  await app.getByTestId('nav-sandbox').click();
  const frame = page.frames().find((candidate) => candidate.url().startsWith(APP_URL));
  assert.equal(await frame.evaluate(() => self.origin), 'null', 'the app should run in an opaque origin');
  // The stylesheet applied (its integrity check needs a CORS response there).
  assert.notEqual(await app.locator('body').evaluate((body) => getComputedStyle(body).margin), '8px');
  // A deep link rewrites the address (history.replaceState) in the opaque origin.
  await app.getByTestId('nav-stories').click();
  await app.getByTestId('step-next').click();
  // The clipboard is refused there (no clipboard-write): the copy button says so.
  await app.getByTestId('nav-map').click();
  await app.getByTestId('tab-export').click();
  await app.getByTestId('export-mermaid').click();
  await app.getByTestId('copy-mermaid').click();
  await app.getByText('Not allowed here: select the text and copy it').waitFor({ timeout: 5000 });
  await app.getByTestId('nav-sandbox').click();
  await runEverything(app, 'from-opaque');
  assert.equal(await app.getByTestId('startup-failed').count(), 0);
  assert.deepEqual(problems, []);
  await page.screenshot({ path: screenshotPath('embedded-allow-scripts-only'), fullPage: true });
  await page.close();
});

test('in an iframe that forbids scripts (sandbox=""), the app says it needs JavaScript and links to its own tab', async () => {
  const { page, app } = await openCourse('noscript');
  const message = app.getByTestId('no-script');
  await message.waitFor({ timeout: 10000 });
  assert.match(await message.innerText(), /needs JavaScript and WebAssembly[\s\S]*must allow scripts[\s\S]*Open kafkascope in its own tab/);
  assert.equal(await message.getByRole('link').evaluate((link) => link.href), APP_URL);
  await page.screenshot({ path: screenshotPath('embedded-no-scripts'), fullPage: true });
  await page.close();
});

test('from a host without the CORS header, an allow-scripts-only iframe says kafkascope could not start', async () => {
  const { page, app } = await openCourse('bare');
  const started = Date.now();
  const message = app.getByTestId('startup-failed');
  await message.waitFor({ timeout: 10000 });
  const text = await message.innerText();
  assert.match(text, /could not start here[\s\S]*Access-Control-Allow-Origin: \*[\s\S]*own tab/);
  assert.ok(text.includes(`${bareUrl}${new URL(APP_URL).pathname}`), text);
  assert.equal(await app.getByRole('alert').count(), 1);
  console.log(`the "could not start" message showed ${Date.now() - started} ms after the course page loaded`);
  await page.screenshot({ path: screenshotPath('embedded-without-cors'), fullPage: true });
  await page.close();
});

test('without WebAssembly, the page says kafkascope could not start', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(() => { delete globalThis.WebAssembly; });
  await page.goto(APP_URL);
  const message = page.getByTestId('startup-failed');
  await message.waitFor({ timeout: 10000 });
  assert.match(await message.innerText(), /could not start here[\s\S]*WebAssembly/);
  await page.close();
});

test('while the code downloads, a progress indicator shows; it goes once the app starts', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  await page.route(/\.wasm$/, async (route) => { await gate; await route.continue(); });
  await page.goto(APP_URL);
  const loading = page.getByTestId('startup-loading');
  await loading.waitFor({ timeout: 10000 });
  assert.equal(await loading.getAttribute('role'), 'status');
  assert.match(await loading.innerText(), /Loading kafkascope/);
  assert.equal(await loading.locator('progress').count(), 1);
  await page.screenshot({ path: screenshotPath('startup-loading'), fullPage: true });
  release();
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  assert.equal(await page.getByTestId('startup-loading').count(), 0);
  assert.equal(await page.getByTestId('startup-failed').count(), 0);
  await page.close();
});

test('a load that stalls shows the message after 20 s; a started app never shows it', async () => {
  const stalled = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await stalled.clock.install();
  await stalled.route(/\.wasm$/, () => {}); // never answered
  await stalled.goto(APP_URL);
  await stalled.clock.fastForward(19000);
  assert.equal(await stalled.getByTestId('startup-failed').count(), 0);
  await stalled.clock.fastForward(2000);
  assert.match(await stalled.getByTestId('startup-failed').innerText(), /not started after 20 seconds/);
  await stalled.close();

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.clock.install();
  await page.goto(APP_URL);
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  await page.clock.fastForward(30000);
  assert.equal(await page.getByTestId('startup-failed').count(), 0);
  await page.close();
});
