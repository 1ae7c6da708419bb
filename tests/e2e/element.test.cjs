// The drop-in for course pages: a page on another origin loads
// kafkascope-element.js from the kafkascope site and writes
// <kafkascope-map> and <kafkascope-steps> with attributes (seed, knob, story,
// step, scenario). Each renders its part inside its own shadow root (the
// course page's styles do not reach it), hears the part's events as DOM
// events and drives it with its methods; a scenario from the course page's
// own server plays as a story, and a broken one says where it is wrong.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { launch, listenLocal, screenshotPath, APP_URL } = require('./browser.cjs');

let browser;
let host;
let hostUrl = '';

const SCENARIO = JSON.stringify({
  name: 'A broker dies',
  seed: 1,
  config: {
    brokers: 3,
    topics: [{ name: 'orders', partitions: 3, replicationFactor: 3, minInsyncReplicas: 2 }],
    producers: [{ topic: 'orders' }],
  },
  inputs: [
    { atMs: 1000, input: { type: 'produce', producer: 0, count: 10 } },
    { atMs: 2000, input: { type: 'killBroker', broker: 1 } },
  ],
  runUntilMs: 8000,
}, null, 2);
// Line 3 names a field scenarios do not have.
const BROKEN = '{\n  "name": "broken",\n  "seeed": 1\n}\n';

// The course page: the elements, a list of what they said, and styles that
// would wreck an iframe if they could reach it.
function coursePage(body) {
  return `<!doctype html><html lang="en"><title>course</title>
    <style>iframe { border: 17px solid red !important; } body { font-family: serif; }</style>
    <script type="module" src="${APP_URL}kafkascope-element.js"></script>
    <h1>A course page</h1>
    ${body}
    <script>
      window.heard = [];
      for (const type of ['ready', 'stepChanged', 'storyFinished', 'knobChanged', 'recordLost', 'error']) {
        document.addEventListener('kafkascope:' + type, (event) => window.heard.push({ tag: event.target.localName, id: event.target.id, ...event.detail }));
      }
    </script>`;
}

const PAGES = {
  '/outer': '<iframe sandbox="allow-scripts" src="/opaque" title="a sandboxed course page" style="width: 900px; height: 760px"></iframe>',
  '/opaque': '<kafkascope-map id="map" play="0"></kafkascope-map>',
  '/map': '<kafkascope-map id="map" seed="7" knob="acks:1" play="0" height="640px"></kafkascope-map>',
  '/steps': '<kafkascope-steps id="steps" story="happy-path" step="3"></kafkascope-steps>',
  '/scenario': '<kafkascope-steps id="mine" scenario="/scenarios/broker-dies.json"></kafkascope-steps>'
    + '<kafkascope-steps id="broken" scenario="/scenarios/broken.json"></kafkascope-steps>'
    + '<kafkascope-steps id="missing" scenario="/scenarios/missing.json"></kafkascope-steps>',
  '/bad-src': '<kafkascope-map id="bracket" src="http://[::1"></kafkascope-map>'
    + '<kafkascope-steps id="script" src="javascript:alert(1)"></kafkascope-steps>',
};

before(async () => {
  browser = await launch();
  host = http.createServer((request, response) => {
    const url = new URL(request.url, hostUrl);
    if (PAGES[url.pathname]) {
      response.setHeader('Content-Type', 'text/html; charset=utf-8');
      response.end(coursePage(PAGES[url.pathname]));
    } else if (url.pathname === '/scenarios/broker-dies.json' || url.pathname === '/scenarios/broken.json') {
      // The course's own scenarios, allowed to be read from kafkascope's origin.
      response.setHeader('Content-Type', 'application/json');
      response.setHeader('Access-Control-Allow-Origin', '*');
      response.end(url.pathname.endsWith('broken.json') ? BROKEN : SCENARIO);
    } else {
      response.statusCode = 404;
      response.setHeader('Access-Control-Allow-Origin', '*');
      response.end();
    }
  });
  hostUrl = await listenLocal(host);
});
after(async () => {
  await browser?.close();
  host?.close();
});

async function open(path) {
  const page = await browser.newPage({ viewport: { width: 1000, height: 900 } });
  const errors = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(hostUrl + path);
  const waitFor = async (type, id, match = () => true) => {
    await page.waitForFunction(
      ([type, id, source]) => window.heard.some((m) => m.type === type && m.id === id && new Function('m', `return (${source})(m)`)(m)),
      [type, id, match.toString()],
      { timeout: 30000 },
    );
  };
  return { page, errors, waitFor };
}

test('<kafkascope-map> renders the map from its attributes in its own style scope and is driven by its methods', async () => {
  const { page, errors, waitFor } = await open('/map');
  await waitFor('ready', 'map', (m) => m.sections.includes('map'));
  const frame = page.frameLocator('kafkascope-map iframe');
  const live = frame.getByTestId('cluster');
  await live.waitFor({ timeout: 30000 });
  // The attributes: seed 7, acks=1, paused.
  assert.equal(await live.getByTestId('knob-seed').inputValue(), '7');
  assert.equal(await live.getByTestId('knob-acks').inputValue(), '1');
  // The course page's iframe rule does not reach the element's frame.
  const border = await page.evaluate(() => getComputedStyle(document.querySelector('kafkascope-map').shadowRoot.querySelector('iframe')).borderTopWidth);
  assert.equal(border, '0px');
  assert.equal(await page.evaluate(() => document.querySelector('kafkascope-map').getBoundingClientRect().height), 640);
  // Methods send commands; the element hears the answers.
  await page.evaluate(() => document.getElementById('map').setKnob('acks', 'all'));
  await waitFor('knobChanged', 'map', (m) => m.knob === 'acks' && m.value === 'all');
  assert.equal(await live.getByTestId('knob-acks').inputValue(), 'all');
  await page.evaluate(() => document.getElementById('map').killBroker(99));
  await waitFor('error', 'map', (m) => m.command === 'killBroker');
  await page.screenshot({ path: screenshotPath('element-map') });
  // Moved in the page, the element's part loads again and still takes commands.
  await page.evaluate(() => { document.body.append(document.getElementById('map')); document.getElementById('map').setKnob('acks', 'all'); });
  await page.waitForFunction(() => window.heard.filter((m) => m.type === 'knobChanged' && m.value === 'all').length >= 2, null, { timeout: 30000 });
  await page.waitForFunction(() => window.heard.filter((m) => m.type === 'ready').length >= 2);
  assert.deepEqual(errors, []);
  await page.close();
});

test('<kafkascope-steps> opens a story at a step and moves with goToStep', async () => {
  const { page, errors, waitFor } = await open('/steps');
  await waitFor('stepChanged', 'steps', (m) => m.story === 'happy-path' && m.step === 3);
  await page.evaluate(() => document.getElementById('steps').goToStep(5));
  await waitFor('stepChanged', 'steps', (m) => m.step === 5);
  const steps = page.frameLocator('kafkascope-steps iframe').getByTestId('steps');
  assert.equal(await steps.getAttribute('data-step'), '5');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a scenario attribute plays the course page\'s own file as a story; a broken or missing one says why', async () => {
  const { page, errors } = await open('/scenario');
  const section = (id) => page.frameLocator(`#${id} iframe`).getByTestId('steps');
  await section('mine').and(page.frameLocator('#mine iframe').locator('[data-story^="custom-"]')).waitFor({ timeout: 30000 });
  // A story the address names shows compact: its title and file, no picker.
  const shown = await page.frameLocator('#mine iframe').getByTestId('story-about').locator('summary').innerText();
  assert.match(shown, /broker-dies\.json/);
  assert.equal(await page.frameLocator('#mine iframe').getByTestId('story-select').count(), 0);
  // Its step has a link: the same scenario address at that step.
  const stepLink = await page.frameLocator('#mine iframe').getByTestId('step-link').getAttribute('href');
  const linked = new URL(stepLink, 'http://x/');
  assert.match(linked.searchParams.get('scenario'), /\/scenarios\/broker-dies\.json$/);
  // (The story opens on its first chapter, and the link names that step.)
  const opening = await page.frameLocator('#mine iframe').getByTestId('steps').getAttribute('data-opening');
  assert.equal(linked.searchParams.get('step'), opening);
  assert.equal(linked.searchParams.get('story'), null);
  const broken = page.frameLocator('#broken iframe').getByTestId('scenario-problem');
  await broken.waitFor({ timeout: 30000 });
  assert.match(await broken.innerText(), /broken\.json.*seeed.*line 3/s);
  const missing = page.frameLocator('#missing iframe').getByTestId('scenario-problem');
  await missing.waitFor({ timeout: 30000 });
  assert.match(await missing.innerText(), /HTTP 404/);
  // The course page hears it too: an error without a command, after ready.
  for (const id of ['broken', 'missing']) {
    await page.waitForFunction((id) => window.heard.some((m) => m.id === id && m.type === 'error' && m.command === null), id);
    const order = await page.evaluate((id) => window.heard.filter((m) => m.id === id).map((m) => m.type), id);
    assert.ok(order.indexOf('ready') < order.indexOf('error'), order.join(' '));
    assert.ok(!order.includes('stepChanged') || order.indexOf('stepChanged') > order.indexOf('ready'), `nothing before ready: ${order.join(' ')}`);
  }
  await page.screenshot({ path: screenshotPath('element-scenario'), fullPage: true });
  assert.deepEqual(errors, []);
  await page.close();
});

test('on a course page with an opaque origin the part still shows, and a command says why it cannot be sent', async () => {
  const { page, errors } = await open('/outer');
  const inner = page.frameLocator('iframe[title="a sandboxed course page"]');
  await inner.frameLocator('kafkascope-map iframe').getByTestId('cluster').waitFor({ timeout: 30000 });
  const course = page.frames().find((frame) => frame.url().endsWith('/opaque'));
  await course.evaluate(() => document.getElementById('map').killBroker(1));
  await course.waitForFunction(() => window.heard.some((m) => m.type === 'error' && m.command === 'killBroker' && /opaque origin/.test(m.message)));
  assert.deepEqual(errors, []);
  await page.close();
});

test('an element with an invalid src says so in place and fires kafkascope:error, never an uncaught error', async () => {
  const { page, errors, waitFor } = await open('/bad-src');
  for (const id of ['bracket', 'script']) {
    await waitFor('error', id, (m) => /not a web address/.test(m.message));
    const note = page.locator(`#${id}`).locator('[role="alert"]');
    assert.match(await note.innerText(), /kafkascope cannot open here/);
    assert.equal(await page.locator(`#${id}`).locator('iframe').count(), 0);
  }
  assert.deepEqual(errors, []);
  await page.close();
});
