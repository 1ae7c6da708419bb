// Course pages embed kafkascope in an iframe. The sandbox works there too:
// every example and every API reference example runs when the app is in a
// cross-origin iframe, and the sandbox frame is still isolated (it cannot
// reach the network from inside the embedded app).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { launch, listenLocal, APP_URL } = require('./browser.cjs');

const EXPECTED = JSON.parse(
  fs.readFileSync(path.join(__dirname, '../../web/sandbox-examples/expected.json'), 'utf8'),
).examples;
const REFERENCE = JSON.parse(fs.readFileSync(path.join(__dirname, '../../web/api-reference.json'), 'utf8')).entries;

let browser;
let host;
let hostUrl = '';
const arrivals = [];

before(async () => {
  // The course page: another origin (another port) embedding the app.
  host = http.createServer((request, response) => {
    if (request.url.startsWith('/course')) {
      const sandbox = request.url.includes('sandboxed') ? ' sandbox="allow-scripts"' : '';
      response.setHeader('Content-Type', 'text/html; charset=utf-8');
      response.end(`<!doctype html><title>course</title><h1>A course page</h1>
        <iframe${sandbox} src="${APP_URL}" title="kafkascope" style="width: 1240px; height: 860px"></iframe>`);
    } else if (request.url === '/favicon.ico') {
      response.statusCode = 404;
      response.end();
    } else {
      arrivals.push(request.url);
      response.end('arrived');
    }
  });
  hostUrl = await listenLocal(host);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  host?.close();
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

test('in a cross-origin iframe, every example and API reference example runs, and snippets stay offline', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.goto(`${hostUrl}/course`);
  const app = page.frameLocator('iframe[title="kafkascope"]');
  await app.getByTestId('partition').waitFor({ timeout: 30000 });

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
    const worker = new Worker(URL.createObjectURL(new Blob(["fetch('${hostUrl}/from-embedded').then(() => postMessage('reached'), (e) => postMessage(String(e)))"])));
    console.log(await new Promise((resolve) => { worker.onmessage = (event) => resolve(event.data); }));`);
  assert.match(await run(app), /Failed to fetch/);
  assert.deepEqual(arrivals, []);
  assert.deepEqual(problems, []);
  await page.close();
});

test('in an iframe sandboxed with allow-scripts only, the app either runs its sandbox or says it cannot start', async (context) => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const messages = [];
  page.on('console', (message) => messages.push(message.text()));
  await page.goto(`${hostUrl}/course?sandboxed`);
  const app = page.frameLocator('iframe[title="kafkascope"]');
  const started = await app.getByTestId('partition').waitFor({ timeout: 10000 }).then(() => true, () => false);
  if (!started) {
    // The app itself (its module script and wasm, fetched from an opaque
    // origin without CORS headers) does not load there yet: the embedding
    // issue's job, not the sandbox's.
    console.log(`the app did not start in the sandboxed iframe: ${messages.join(' | ').slice(0, 600)}`);
    context.skip('the app does not load in an allow-scripts-only iframe (no CORS for an opaque origin)');
    await page.close();
    return;
  }
  await app.getByTestId('sandbox-example').selectOption(Object.keys(EXPECTED)[0]);
  const output = await run(app);
  assert.ok(/partition|the sandbox could not start/.test(output), output);
  await page.close();
});
