// A course author embeds one part of the page: `?embed=lesson|map|steps|sandbox`
// shows only that part with a compact bar and a link to the whole page; it
// fits an 800×600 frame and a phone's width; an unknown part says so.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { launch, openApp, screenshotPath, listenLocal } = require('./browser.cjs');

const APP_URL = process.env.KAFKASCOPE_URL || 'http://127.0.0.1:8080/';

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

for (const [mode, section] of [['lesson', 'lesson'], ['map', 'map'], ['steps', 'steps'], ['sandbox', 'sandbox']]) {
  test(`?embed=${mode} shows only that part, fits 800×600 and 390×600, and links to the whole page`, async () => {
    for (const [width, height] of [[800, 600], [390, 600]]) {
      const { page, problems } = await openApp(browser, { width, height, query: `?embed=${mode}&play=0`, ready: 'embedded' });
      await page.getByTestId('embedded').waitFor();
      // The map and the steps are drawn into a slot that takes no box.
      const sections = await page.locator('main > section, main > .sim-slot > section').evaluateAll((all) => all.map((each) => each.id));
      assert.deepEqual(sections, [section]);
      assert.equal(await page.locator('.app-header').count(), 0, 'the page header is shown');
      const whole = await page.getByTestId('open-whole').getAttribute('href');
      assert.ok(!whole.includes('embed='), whole);
      assert.ok(whole.includes('play=0'), whole);
      const scroll = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(scroll <= width, `${mode} at ${width}px scrolls sideways (${scroll}px)`);
      if (width === 800) {
        await page.screenshot({ path: screenshotPath(`embed-${mode}-800x600`) });
      }
      assert.deepEqual(problems, []);
      await page.close();
    }
  });
}

test('in 800×600, a story the address names is compact and its diagram is in view; every control comes back with controls=all', async () => {
  const { page, problems } = await openApp(browser, { width: 800, height: 600, query: '?embed=steps&story=happy-path&play=0', ready: 'embedded' });
  await page.getByTestId('sequence-diagram').waitFor({ timeout: 30000 });
  assert.equal(await page.getByTestId('story-select').count(), 0);
  assert.equal(await page.getByTestId('open-scenario').count(), 0);
  assert.equal(await page.locator('.filters').count(), 0);
  assert.match(await page.getByTestId('story-about').locator('summary').innerText(), /Happy path/);
  // The diagram starts in the frame with room for its first rows.
  const diagram = await page.getByTestId('sequence-diagram').boundingBox();
  assert.ok(diagram.y + 150 <= 600, `the diagram starts at ${diagram.y}px`);
  const caption = await page.getByTestId('step-caption').boundingBox();
  assert.ok(caption.y >= 0 && caption.y + caption.height <= 600, `the caption at ${caption.y}px`);
  await page.screenshot({ path: screenshotPath('embed-steps-compact-800x600') });
  assert.deepEqual(problems, []);
  await page.close();
  const full = await openApp(browser, { width: 800, height: 600, query: '?embed=steps&story=happy-path&play=0&controls=all', ready: 'embedded' });
  await full.page.getByTestId('story-select').waitFor({ timeout: 30000 });
  assert.equal(await full.page.locator('.filters').count(), 1);
  await full.page.close();
});

test('in 800×600, the embedded map is in view below its toolbar, and a click shows its summary in the frame', async () => {
  const { page, problems } = await openApp(browser, { width: 800, height: 600, query: '?embed=map&play=0', ready: 'embedded' });
  await page.getByTestId('map').waitFor({ timeout: 30000 });
  const toolbar = await page.getByTestId('cluster-run-1s').boundingBox();
  assert.ok(toolbar.y + toolbar.height <= 600);
  // The map's box: starts in the frame and ends at its foot, scrolling inside.
  const box = await page.locator('.map-scroll').boundingBox();
  assert.ok(box.y + 200 <= 600 && box.y + box.height <= 610, `the map's box: ${JSON.stringify(box)}`);
  await page.getByTestId('node-broker-2').click({ position: { x: 30, y: 10 } });
  const sheet = page.getByTestId('selection-sheet');
  await sheet.waitFor();
  const placed = await sheet.boundingBox();
  assert.ok(placed.y >= 0 && placed.y + placed.height <= 600, `the summary at ${JSON.stringify(placed)}`);
  assert.match(await page.getByTestId('sheet-title').innerText(), /broker-2/);
  await page.screenshot({ path: screenshotPath('embed-map-selected-800x600') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('an embedded map runs inside another site\'s 800×600 iframe', async () => {
  const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
  await page.setContent(`<!doctype html><title>course</title><iframe id="k" title="kafkascope" width="800" height="600" src="${APP_URL}?embed=map&play=0"></iframe>`);
  const frame = page.frameLocator('#k');
  await frame.getByTestId('embedded').waitFor();
  await frame.getByTestId('cluster-run-1s').click();
  await frame.getByTestId('cluster-time').filter({ hasText: /t = [1-9]\d* ms/ }).waitFor();
  await page.screenshot({ path: screenshotPath('embed-map-in-iframe') });
  await page.close();
});

test('an unknown part to embed is named, and the whole page shows', async () => {
  const { page, problems } = await openApp(browser, { query: '?embed=nope&play=0' });
  assert.match(await page.getByTestId('embed-problem').innerText(), /"nope", which is not a part of the page \(the parts are lesson, map, steps, sandbox\)/);
  assert.equal(await page.locator('main [data-view]').count(), 5, 'every view is on the page');
  assert.deepEqual(problems, []);
  await page.close();
});

test('"Show the embed code" gives an iframe that works when pasted into a course page', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0' });
  await page.getByTestId('embed-part').selectOption('steps');
  await page.getByTestId('embed-show').click();
  const code = await page.getByTestId('embed-text').inputValue();
  assert.match(code, /^<iframe src="[^"]+\?embed=steps&amp;play=0" width="800" height="600" title="kafkascope: a story step by step"/);
  assert.match(code, /sandbox="allow-scripts allow-same-origin allow-popups allow-popups-to-escape-sandbox"/);
  await page.screenshot({ path: screenshotPath('embed-code'), clip: await page.getByTestId('embed-code').boundingBox().then((box) => ({ x: 0, y: box.y - 10, width: 1280, height: box.height + 220 })) });
  const host = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  await host.setContent(`<!doctype html><title>a course</title><h1>Lesson 3</h1>${code.replace('loading="lazy"', '')}`);
  const frame = host.frameLocator('iframe');
  await frame.getByTestId('embedded').waitFor();
  // (The steps come with the simulator's module, which loads after the
  // page's first module: wait for them rather than count at once.)
  await frame.getByTestId('steps').waitFor({ timeout: 30000 });
  assert.equal(await frame.getByTestId('steps').count(), 1);
  assert.deepEqual(problems, []);
  await host.close();
  await page.close();
});

// kafkascope hosted at the root of an origin (as a user site is), copied
// by a proxy that answers every page address with index.html, as the
// service worker does at the root of its scope.
function rootHost(request, response) {
  const navigate = request.headers['sec-fetch-mode'] === 'navigate';
  const path = request.url.replace(/^\/+/, '');
  const target = new URL(navigate ? 'index.html' : path, APP_URL);
  const upstream = http.request(target, { agent: false, method: request.method, headers: { ...request.headers, host: target.host } }, (answer) => {
    response.writeHead(answer.statusCode, answer.headers);
    answer.pipe(response);
  });
  upstream.on('error', () => { response.statusCode = 502; response.end(); });
  response.on('close', () => upstream.destroy());
  request.pipe(upstream);
}

test('HOST//other.host?embed=map opens the embed, and its "Open in kafkascope" link stays on this host', async () => {
  const server = http.createServer(rootHost);
  const root = await listenLocal(server);
  try {
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    // The attacker's address: two slashes, then another host's name.
    await page.goto(`${root}//other.example?embed=map&play=0`);
    await page.getByTestId('embedded').waitFor({ timeout: 60_000 });
    const href = await page.getByTestId('open-whole').getAttribute('href');
    const opens = new URL(href, page.url());
    assert.equal(opens.origin, root, `"Open in kafkascope" leads to ${opens.href}`);
    assert.ok(!href.startsWith('//') && !href.includes('other.example/'), href);
    // Followed, it opens kafkascope on this host (the whole page).
    const [whole] = await Promise.all([page.context().waitForEvent('page'), page.getByTestId('open-whole').click()]);
    await whole.waitForLoadState('domcontentloaded');
    assert.equal(new URL(whole.url()).origin, root);
    await whole.close();
    await page.close();
  } finally {
    server.close();
  }
});
