// A course page on another origin embeds kafkascope and drives it over
// postMessage: it says hello and hears ready, sets a knob and hears it
// changed, kills a broker, plays and pauses; an embedded story goes to a
// step, loads a scenario and says when it has finished; mistakes come
// back as error events; an embed that pins another host origin ignores
// this one.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { launch, listenLocal, screenshotPath, APP_URL } = require('./browser.cjs');

let browser;
let host;
let hostUrl = '';

// The course page: the app in an iframe, a list of what it heard, and a
// send() that posts to the app's origin only.
function coursePage(query) {
  const appOrigin = new URL(APP_URL).origin;
  return `<!doctype html><title>course</title><h1>A course page</h1>
    <iframe id="app" src="${APP_URL}?${query}" title="kafkascope" style="width: 900px; height: 700px"></iframe>
    <script>
      window.received = [];
      window.addEventListener('message', (event) => {
        if (event.origin === ${JSON.stringify(appOrigin)} && event.data && event.data.kafkascope === 1) window.received.push(event.data);
      });
      window.send = (message) => document.getElementById('app').contentWindow.postMessage(Object.assign({ kafkascope: 1 }, message), ${JSON.stringify(appOrigin)});
    </script>`;
}

before(async () => {
  browser = await launch();
  host = http.createServer((request, response) => {
    if (request.url.startsWith('/course')) {
      response.setHeader('Content-Type', 'text/html; charset=utf-8');
      response.end(coursePage(decodeURIComponent(new URL(request.url, hostUrl).search.slice(1))));
    } else {
      response.statusCode = 404;
      response.end();
    }
  });
  hostUrl = await listenLocal(host);
});
after(async () => {
  await browser?.close();
  host?.close();
});

// Opens the course page with the app at `query` and says hello until the
// app answers ready (its listener starts with the app).
async function course(query) {
  const page = await browser.newPage({ viewport: { width: 1000, height: 800 } });
  const errors = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  await page.goto(`${hostUrl}/course?${encodeURIComponent(query)}`);
  const heard = (type) => page.evaluate((type) => window.received.filter((message) => message.type === type), type);
  const waitFor = (type, test = () => true) => page.waitForFunction(
    ([type, source]) => window.received.some((message) => message.type === type && new Function('m', `return ${source}`)(message)),
    [type, test.toString().replace(/^\(?\w*\)?\s*=>\s*/, '')],
  );
  const send = (message) => page.evaluate((message) => window.send(message), message);
  return { page, errors, heard, waitFor, send, frame: page.frameLocator('#app') };
}

async function hello({ page, send, heard }) {
  for (let attempt = 0; attempt < 100 && (await heard('ready')).length === 0; attempt++) {
    await send({ type: 'hello' });
    await page.waitForTimeout(100);
  }
  return (await heard('ready'))[0];
}

test('a course page on another origin drives the embedded map and hears its events', async () => {
  const app = await course('embed=map&play=0');
  const ready = await hello(app);
  assert.deepEqual(ready, { kafkascope: 1, type: 'ready', sections: ['map'] });

  await app.send({ type: 'setKnob', knob: 'acks', value: '1' });
  await app.waitFor('knobChanged', (m) => m.knob === 'acks' && m.value === '1');
  assert.equal(await app.frame.getByTestId('knob-acks').inputValue(), '1');

  await app.send({ type: 'setKnob', knob: 'compression.type', value: 'zstd' });
  await app.waitFor('error', (m) => m.command === 'setKnob' && /no live knob "compression.type"/.test(m.message));
  await app.send({ type: 'killBroker', broker: 9 });
  await app.waitFor('error', (m) => m.command === 'killBroker' && /brokers 1 to 3, not 9/.test(m.message));
  await app.send({ type: 'explode' });
  await app.waitFor('error', (m) => /unknown variant `explode`/.test(m.message) && m.command === null);
  // A command the page knows, sent with a field it does not: the error
  // names the command.
  await app.send({ type: 'killBroker', broker: 1, now: true });
  await app.waitFor('error', (m) => m.command === 'killBroker' && /unknown field `now`/.test(m.message));
  // Another hello, heard before the command after it: still one ready.
  await app.send({ type: 'hello' });
  await app.send({ type: 'killBroker', broker: 8 });
  await app.waitFor('error', (m) => m.command === 'killBroker' && /not 8/.test(m.message));
  assert.equal((await app.heard('ready')).length, 1);
  await app.send({ type: 'goToStep', step: 3 });
  await app.waitFor('error', (m) => m.command === 'goToStep' && /no sequence steps/.test(m.message));

  await app.send({ type: 'killBroker', broker: 2 });
  await app.frame.getByTestId('cluster-run-1s').click();
  assert.match(await app.frame.getByTestId('node-broker-2').getAttribute('aria-label'), /dead/);
  await app.send({ type: 'restartBroker', broker: 2 });
  await app.frame.getByTestId('cluster-run-10s').click();
  assert.doesNotMatch(await app.frame.getByTestId('node-broker-2').getAttribute('aria-label'), /dead/);

  await app.send({ type: 'play' });
  await app.frame.locator('[data-testid="cluster-play"][aria-pressed="true"]').waitFor();
  await app.send({ type: 'pause' });
  await app.frame.locator('[data-testid="cluster-play"][aria-pressed="false"]').waitFor();
  // A knob the learner changes in the frame is heard too.
  await app.frame.getByTestId('tab-knobs').click();
  await app.frame.getByTestId('knob-acks').selectOption('all');
  await app.waitFor('knobChanged', (m) => m.knob === 'acks' && m.value === 'all');
  await app.page.screenshot({ path: screenshotPath('host-api-map') });
  assert.deepEqual(app.errors, []);
  await app.page.close();
});

test('a course page drives an embedded story: steps, a loaded scenario, the end of the story', async () => {
  const app = await course('embed=steps&play=0&story=happy-path');
  const ready = await hello(app);
  assert.deepEqual(ready.sections, ['steps']);
  await app.send({ type: 'goToStep', step: 5 });
  await app.waitFor('stepChanged', (m) => m.story === 'happy-path' && m.step === 5);
  await app.send({ type: 'goToStep', step: 100000 });
  await app.waitFor('error', (m) => m.command === 'goToStep' && /steps 1 to \d+, not 100000/.test(m.message));
  // Play goes to the story on a page that shows only the steps.
  await app.send({ type: 'play' });
  await app.frame.locator('[data-testid="step-play"][aria-pressed="true"]').waitFor();
  await app.send({ type: 'pause' });
  await app.frame.locator('[data-testid="step-play"][aria-pressed="false"]').waitFor();

  const scenario = fs.readFileSync(path.join(__dirname, '../../scenarios/third-consumer-idles.json'), 'utf8');
  await app.send({ type: 'loadScenario', scenario, name: 'mine.json' });
  // (It opens on its first chapter, as a shipped story does.)
  await app.waitFor('stepChanged', (m) => m.story === 'custom-idle-consumer');
  await app.send({ type: 'loadScenario', scenario: '{ "name": 1 }' });
  await app.waitFor('error', (m) => m.command === 'loadScenario' && /scenario\.json: bad scenario/.test(m.message));
  // Inputs that name what the cluster does not have: the field, the line
  // and the column, as any other mistake.
  const wrong = JSON.parse(scenario);
  wrong.inputs.push({ atMs: 1000, input: { type: 'stopBroker', broker: 9 } });
  await app.send({ type: 'loadScenario', scenario: JSON.stringify(wrong, null, 2), name: 'wrong.json' });
  await app.waitFor('error', (m) => m.command === 'loadScenario'
    && /wrong\.json: bad scenario: inputs\[\d+\]\.input\.broker: the cluster has brokers 1 to \d+, not broker 9 at line \d+ column \d+/.test(m.message));
  const said = (await app.heard('error')).find((m) => /wrong\.json/.test(m.message)).message;
  assert.ok(said.includes(`inputs[${wrong.inputs.length - 1}]`), said);
  const steps = (await app.heard('stepChanged')).filter((m) => m.story === 'custom-idle-consumer')[0].steps;
  await app.send({ type: 'goToStep', step: steps });
  await app.waitFor('storyFinished', (m) => m.story === 'custom-idle-consumer');
  assert.deepEqual(app.errors, []);
  await app.page.close();
});

test('an embed that pins another host origin ignores this page', async () => {
  const app = await course('embed=map&play=0&host=https%3A%2F%2Fcourse.example');
  for (let attempt = 0; attempt < 15; attempt++) {
    await app.send({ type: 'hello' });
    await app.send({ type: 'setKnob', knob: 'acks', value: '1' });
    await app.page.waitForTimeout(100);
  }
  assert.deepEqual(await app.page.evaluate(() => window.received), []);
  assert.equal(await app.frame.getByTestId('knob-acks').inputValue(), 'all');
  await app.page.close();
});

test('an embedded lesson or sandbox answers ready once, names its part, and says it takes no map or story commands', async () => {
  for (const [query, ready] of [['embed=lesson', 'lesson'], ['embed=sandbox', 'sandbox']]) {
    const app = await course(query);
    await app.frame.getByTestId(ready).waitFor({ timeout: 30000 });
    const answer = await hello(app);
    assert.ok(answer, `${query} answered ready`);
    assert.deepEqual(answer.sections, [ready]);
    await app.send({ type: 'killBroker', broker: 1 });
    await app.waitFor('error', (m) => m.command === 'killBroker');
    const [error] = await app.heard('error');
    assert.match(error.message, /no live map/);
    // More hellos: no second ready.
    await app.send({ type: 'hello' });
    await app.send({ type: 'pause', section: ready });
    await app.waitFor('error', (m) => m.command === 'pause');
    assert.match((await app.heard('error')).find((m) => m.command === 'pause').message, new RegExp(`the ${ready} takes no commands`));
    assert.equal((await app.heard('ready')).length, 1);
    assert.deepEqual(app.errors, []);
    await app.page.close();
  }
});

test('the course page hears recordLost when acks=1 loses acknowledged records on the embedded map', async () => {
  // The sequence session.rs's acks_1_loses_… test plays: acks=1, the
  // followers in a GC pause, keyed records acknowledged by broker 1 alone,
  // broker 1 killed; a follower without them becomes the leader.
  const app = await course('embed=map&play=0');
  await hello(app);
  await app.send({ type: 'setKnob', knob: 'acks', value: '1' });
  await app.waitFor('knobChanged', (m) => m.knob === 'acks' && m.value === '1');
  const clickNode = (id) => app.frame.getByTestId(id).click({ position: { x: 30, y: 10 } });
  for (let second = 0; second < 3; second++) await app.frame.getByTestId('cluster-run-1s').click();
  for (const broker of [2, 3]) {
    await clickNode(`node-broker-${broker}`);
    await app.frame.getByTestId(`inspector-pause-broker-${broker}`).click();
  }
  await clickNode('node-producer-0');
  await app.frame.getByTestId('inspector-produce-keyed').click();
  await app.frame.getByTestId('cluster-run-1s').click();
  await app.send({ type: 'killBroker', broker: 1 });
  await app.frame.locator('[data-testid="node-broker-1"][aria-label*="dead"]').waitFor();
  for (let step = 0; step < 3; step++) await app.frame.getByTestId('cluster-run-10s').click();
  await app.waitFor('recordLost', (m) => m.newly > 0 && m.lost >= m.newly);
  const [lost] = await app.heard('recordLost');
  assert.equal(lost.lost, 10);
  assert.deepEqual(app.errors, []);
  await app.page.close();
});

test('the course page hears an error when the embedded simulator stops (a trap), once, with what failed', async () => {
  const app = await course('embed=map&play=0');
  await hello(app);
  const frame = app.page.frames().find((candidate) => candidate.url().startsWith(APP_URL));
  await app.frame.getByTestId('cluster').waitFor();
  // A real trap in the simulator's module, after the panic event its hook
  // says (crash.test.cjs does the same on the whole page).
  await frame.evaluate(async () => {
    const script = performance.getEntriesByType('resource').map((entry) => entry.name)
      .find((name) => /\/sim\/kafkascope-sim-[0-9a-f]{16}\.js$/.test(new URL(name).pathname));
    const glue = await import(script);
    const wasm = await glue.default();
    setTimeout(() => {
      dispatchEvent(new CustomEvent('kafkascope-panic', { detail: { module: 'simulator', message: "kafkascope's simulator module failed: a stand-in" } }));
      wasm.__wbindgen_malloc(0xfffffff0, 3);
    }, 0);
  });
  await app.waitFor('error', (m) => m.command === null && /^the simulator \(the map and the steps\) stopped because of a bug in kafkascope; reloading the page starts it again\. What failed: .*a stand-in/.test(m.message));
  await app.frame.getByTestId('crash-note').first().waitFor();
  assert.equal((await app.heard('error')).length, 1, 'heard once');
  await app.page.close();
});

test('a host that says hello once, as the frame loads, hears ready with both parts of the whole page', async () => {
  const app = await course('play=0');
  // Sent before the app has started (the simulator's module comes later):
  // the page keeps it and answers once the map and the steps are drawn.
  await app.page.evaluate(() => window.send({ type: 'hello' }));
  await app.waitFor('ready');
  const ready = await app.heard('ready');
  assert.equal(ready.length, 1, JSON.stringify(ready));
  assert.deepEqual(ready[0].sections, ['lesson', 'map', 'steps', 'sandbox']);
  await app.send({ type: 'goToStep', step: 3 });
  await app.waitFor('stepChanged', (m) => m.step === 3);
  assert.deepEqual(await app.heard('error'), []);
  assert.deepEqual(app.errors, []);
  await app.page.close();
});
