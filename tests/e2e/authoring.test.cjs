// docs/authoring.md as a course author uses it: every snippet is taken
// from the guide as written, put in a course page on another origin, and
// does what the guide says, with kafkascope's site sending CORS headers
// and without them. Also the rough edges an author hit: the elements'
// script loaded as a module without CORS shows the link written inside
// each element; a site that refuses to be framed gets a message inside
// the element; a correct embed logs no warnings; `ready` comes once.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { launch, listenLocal, screenshotPath, APP_URL } = require('./browser.cjs');

const GUIDE = fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'authoring.md'), 'utf8');
const PLACEHOLDER = 'https://YOUR-HOST/kafkascope/';

/** The guide's fenced blocks of one language, in order. */
function blocks(language) {
  const found = [];
  const fence = new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g');
  for (let match = fence.exec(GUIDE); match; match = fence.exec(GUIDE)) found.push(match[1]);
  return found;
}

const HTML = blocks('html');
const EMBED = HTML.find((block) => block.trim().startsWith('<iframe'));
const HOST_API = HTML.find((block) => block.includes("addEventListener('message'"));
const ELEMENTS = HTML.find((block) => block.includes('<kafkascope-map'));
const [SCENARIO] = blocks('json');

let browser;
let course;
let courseUrl = '';
let bare;
let bareUrl = '';

// kafkascope's site again, on another origin, as a host that sends no
// CORS headers (and, under /framed-no/, one that refuses to be framed).
function proxy(request, response) {
  const refuse = request.url.startsWith('/framed-no/');
  const target = new URL(request.url.replace(/^\/(framed-no|plain)\//, '/'), APP_URL);
  // (No keep-alive agent: an idle pooled socket would keep the test's
  // process alive after its last test.)
  const upstream = http.request(target, { agent: false, method: request.method, headers: { ...request.headers, host: target.host } }, (answer) => {
    const headers = { ...answer.headers };
    delete headers['access-control-allow-origin'];
    if (refuse) headers['x-frame-options'] = 'DENY';
    response.writeHead(answer.statusCode, headers);
    answer.pipe(response);
  });
  upstream.on('error', () => { response.statusCode = 502; response.end(); });
  // A request the browser gives up on takes its upstream with it.
  response.on('close', () => upstream.destroy());
  request.pipe(upstream);
}

// The course page: a snippet with the guide's placeholder replaced by
// where kafkascope is, and a record of what the page heard from it.
function coursePage(snippet, site) {
  return `<!doctype html><html lang="en"><title>a course</title><h1>A course page</h1>
    <script>
      window.heard = [];
      window.addEventListener('message', (event) => { if (event.data && event.data.kafkascope === 1) window.heard.push(event.data); });
    </script>
    ${snippet.replaceAll(PLACEHOLDER, site)}`;
}

before(async () => {
  browser = await launch();
  bare = http.createServer(proxy);
  bareUrl = await listenLocal(bare);
  course = http.createServer((request, response) => {
    const url = new URL(request.url, courseUrl);
    if (url.pathname === '/favicon.ico') {
      response.statusCode = 204;
      response.end();
      return;
    }
    if (url.pathname === '/scenarios/a-broker-dies.json') {
      response.setHeader('Content-Type', 'application/json');
      response.setHeader('Access-Control-Allow-Origin', '*');
      response.end(SCENARIO);
      return;
    }
    const snippets = { '/embed': EMBED, '/host-api': HOST_API, '/elements': ELEMENTS, '/elements-module': ELEMENTS.replace(/<script src="([^"]+)" defer><\/script>/, '<script type="module" src="$1"></script>') };
    if (!snippets[url.pathname]) {
      response.statusCode = 404;
      response.end();
      return;
    }
    const site = url.searchParams.get('site');
    response.setHeader('Content-Type', 'text/html; charset=utf-8');
    response.end(coursePage(snippets[url.pathname], site));
  });
  courseUrl = await listenLocal(course);
});
after(async () => {
  await browser?.close();
  // Close every connection too, or a lingering one keeps the process up.
  for (const server of [bare, course]) {
    server?.closeAllConnections();
    server?.close();
  }
});

// kafkascope with its CORS headers, and the same site without them.
const SITES = () => [['with CORS', APP_URL], ['without CORS', `${bareUrl}/plain${new URL(APP_URL).pathname}`]];

async function open(pathname, site, { clock = false } = {}) {
  const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  const problems = [];
  const logs = [];
  page.on('console', (message) => {
    if (message.type() === 'warning' || message.type() === 'error') problems.push(`${message.type()}: ${message.text()}`);
    if (message.type() === 'log') logs.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  if (clock) await page.clock.install();
  await page.goto(`${courseUrl}${pathname}?site=${encodeURIComponent(site)}`);
  return { page, problems, logs };
}

test('the guide has the snippets this test runs', () => {
  for (const [name, snippet] of Object.entries({ EMBED, HOST_API, ELEMENTS, SCENARIO })) {
    assert.ok(snippet && snippet.length > 50, name);
  }
  assert.match(EMBED, /width="800" height="600"/);
  assert.ok(ELEMENTS.includes(PLACEHOLDER) && HOST_API.includes(PLACEHOLDER) && EMBED.includes(PLACEHOLDER));
});

for (const [label, site] of [['with CORS', null], ['without CORS', 'bare']]) {
  const where = () => (site ? SITES()[1][1] : APP_URL);

  test(`the guide's iframe shows the map, ${label}`, async () => {
    const { page, problems } = await open('/embed', where());
    const frame = page.frameLocator('iframe');
    await frame.getByTestId('cluster').waitFor({ timeout: 30000 });
    const inside = await page.locator('iframe').evaluate((frame) => [frame.clientWidth, frame.clientHeight]);
    assert.deepEqual(inside, [800, 600]);
    assert.deepEqual(problems, []);
    await page.close();
  });

  test(`the guide's host API example sets up the map once, ${label}`, async () => {
    const { page, problems, logs } = await open('/host-api', where());
    const frame = page.frameLocator('#kafkascope');
    // Its setup: acks=1, broker 2 killed, playing.
    await frame.locator('[data-testid="node-broker-2"][aria-label*="dead"]').waitFor({ timeout: 30000 });
    await frame.locator('[data-testid="cluster-play"][aria-pressed="true"]').waitFor();
    await page.waitForFunction(() => window.heard.some((m) => m.type === 'knobChanged'));
    // Hellos still in flight when ready came are not answered again:
    // wait out a few more of its intervals, then count.
    await page.waitForTimeout(1200);
    const heard = await page.evaluate(() => window.heard.map((m) => m.type));
    assert.equal(heard.filter((type) => type === 'ready').length, 1, heard.join(' '));
    assert.equal(heard.filter((type) => type === 'knobChanged').length, 1, heard.join(' '));
    assert.equal(heard.filter((type) => type === 'error').length, 0, heard.join(' '));
    assert.deepEqual(logs.filter((line) => /refused/.test(line)), []);
    await frame.getByTestId('tab-knobs').click();
    assert.equal(await frame.getByTestId('knob-acks').inputValue(), '1');
    assert.deepEqual(problems, []);
    await page.close();
  });

  test(`the guide's elements show the map, the story and the course's scenario, ${label}`, async () => {
    const { page, problems, logs } = await open('/elements', where());
    const map = page.frameLocator('kafkascope-map iframe');
    await map.getByTestId('cluster').waitFor({ timeout: 30000 });
    // The example's code ran after the elements were defined: its knob
    // reached the map and its listener heard it.
    await page.waitForFunction(() => window.heard.some((m) => m.type === 'knobChanged' && m.value === 'all'), null, { timeout: 30000 });
    await page.waitForFunction(() => document.querySelector('kafkascope-map').shadowRoot.querySelector('iframe'));
    const steps = page.frameLocator('kafkascope-steps[story] iframe');
    await steps.locator('[data-testid="steps"][data-story="happy-path"]').waitFor({ timeout: 30000 });
    const mine = page.frameLocator('kafkascope-steps[scenario] iframe');
    await mine.locator('[data-testid="steps"][data-story="custom-a-broker-dies"]').waitFor({ timeout: 30000 });
    await map.locator('[data-testid="node-broker-2"][aria-label*="dead"]').waitFor();
    assert.ok(logs.includes('acks all'), logs.join('\n'));
    // The links written inside the elements are not shown once they are defined.
    assert.equal(await page.getByRole('link', { name: /Open the (map|story) in kafkascope/ }).filter({ visible: true }).count(), 0);
    await page.screenshot({ path: screenshotPath(`authoring-elements-${site ? 'bare' : 'cors'}`), fullPage: true });
    // A correct embed logs nothing: no "target origin does not match".
    assert.deepEqual(problems, []);
    await page.close();
  });
}

test('the elements\' script loaded as a module from a site without CORS: the links written inside them show', async () => {
  const { page } = await open('/elements-module', SITES()[1][1]);
  const link = page.getByRole('link', { name: 'Open the map in kafkascope' });
  await link.waitFor({ timeout: 30000 });
  assert.ok(await link.isVisible());
  const href = await link.getAttribute('href');
  assert.ok(href.startsWith(SITES()[1][1]) && href.endsWith('#map'), href);
  assert.equal(await page.evaluate(() => customElements.get('kafkascope-map')), undefined);
  await page.screenshot({ path: screenshotPath('authoring-elements-blocked') });
  await page.close();
});

test('an element whose site refuses to be framed says so inside its box, with a link, and fires kafkascope:error', async () => {
  const refused = `${bareUrl}/framed-no${new URL(APP_URL).pathname}`;
  const { page } = await open('/elements', refused, { clock: true });
  await page.evaluate(() => {
    window.errors = [];
    document.addEventListener('kafkascope:error', (event) => window.errors.push(event.detail.message));
  });
  await page.waitForFunction(() => document.querySelector('kafkascope-map')?.shadowRoot?.querySelector('iframe'));
  // A minute of the page's clock, without waiting a minute.
  await page.clock.runFor(61000);
  const note = page.locator('kafkascope-map [part="error"]');
  await note.waitFor({ timeout: 10000 });
  assert.match(await note.innerText(), /did not answer within 60 s/);
  const href = await note.getByRole('link', { name: 'Open kafkascope in a new tab' }).getAttribute('href');
  assert.ok(href.startsWith(refused) && href.includes('embed=map') && !href.includes('host='), href);
  assert.ok((await page.evaluate(() => window.errors)).some((message) => /did not answer/.test(message)));
  await page.screenshot({ path: screenshotPath('authoring-element-refused') });
  await page.close();
});
