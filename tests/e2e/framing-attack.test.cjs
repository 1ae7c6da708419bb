// Issue 39's first attack, as the red team ran it: a page on another origin
// frames kafkascope, navigates the hidden sandbox frame to a document of its
// own, and that document pretends to be the sandbox: it offers the page a
// channel, hoping to receive the learner's code and to answer with a forged
// result ("every test passed"). The page now accepts a channel only from
// the document it made (a secret written into it), takes a later load of
// the frame as interference, and says so; the attacker receives nothing,
// and the next run gets a fresh sandbox that works.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const { launch, listenLocal, screenshotPath, APP_URL } = require('./browser.cjs');

let browser;
let host;
let hostUrl = '';
// How often the sandbox frame was navigated to the impostor (the page may
// tear the frame down before the impostor's script even runs).
let impostorRequests = 0;

// The framing page: kafkascope in an iframe, and the attack in two forms:
// `attackNow()` navigates the (idle) sandbox frame to the impostor, and
// `armed` makes a loop navigate the sandbox frame there is, or the next
// one the moment it appears, before kafkascope's own document has loaded
// in it (whether kafkascope made a new frame right after the first attack
// or makes it at the next run is the page's business, not the test's).
const framingPage = () => `<!doctype html><title>a page that frames kafkascope</title>
<iframe id="app" src="${APP_URL}" title="kafkascope" style="width: 1240px; height: 860px"></iframe>
<script>
  const impostor = '${hostUrl}/impostor';
  window.stolen = [];
  window.addEventListener('message', (event) => {
    if (event.data && typeof event.data.stolen === 'string') window.stolen.push(event.data.stolen);
  });
  window.attackNow = () => { frames[0].frames[0].location = impostor; };
  window.armed = false;
  setInterval(() => {
    if (!window.armed) return;
    try {
      // The sandbox frame there is (kafkascope may have made a new one
      // already), else the next one the moment it appears.
      const app = frames[0];
      if (app.frames.length > 0) {
        window.armed = false;
        app.frames[app.frames.length - 1].location = impostor;
      }
    } catch (error) { /* not there yet */ }
  }, 1);
</script>`;

// The impostor: it offers the page a channel as the sandbox's document does
// (it cannot know the secret), reports to the framing page whatever comes
// over it, and answers any run with a forged success.
const impostor = () => `<!doctype html><title>impostor</title><script>
  top.postMessage({ stolen: 'impostor loaded' }, '*');
  const channel = new MessageChannel();
  const forged = { logs: [{ kind: 'log', text: 'every test passed' }], shows: [], error: null, timedOut: false, capped: false, ms: 1 };
  channel.port1.onmessage = (event) => {
    const data = event.data || {};
    top.postMessage({ stolen: String(data.type) + ':' + String(data.code || '') }, '*');
    if (data.type === 'init') channel.port1.postMessage({ type: 'ready' });
    if (data.type === 'run') channel.port1.postMessage({ type: 'result', id: data.id, result: forged });
  };
  parent.postMessage({ type: 'kafkascope-sandbox-hello', secret: 'a guess' }, '*', [channel.port2]);
  window.addEventListener('message', (event) => {
    top.postMessage({ stolen: 'message:' + JSON.stringify(event.data).slice(0, 200) }, '*');
  });
</script>`;

before(async () => {
  host = http.createServer((request, response) => {
    response.setHeader('Content-Type', 'text/html; charset=utf-8');
    if (request.url.startsWith('/framing')) response.end(framingPage());
    else if (request.url.startsWith('/impostor')) {
      impostorRequests += 1;
      response.end(impostor());
    }
    else {
      response.statusCode = 404;
      response.end();
    }
  });
  hostUrl = await listenLocal(host);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  host?.close();
});

async function run(app) {
  const before = Number(await app.getByTestId('sandbox').getAttribute('data-finished-runs'));
  await app.getByTestId('sandbox-run').click();
  await app.locator(`[data-testid="sandbox"][data-finished-runs="${before + 1}"]`).waitFor({ timeout: 60000 });
  return app.getByTestId('sandbox').innerText();
}

async function runCode(app, code) {
  await app.getByTestId('sandbox-editor').fill(code);
  return run(app);
}

test('a framing page that swaps the sandbox frame\'s document gets no code and cannot forge a result', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  await page.goto(`${hostUrl}/framing`);
  const app = page.frameLocator('#app');
  await app.getByTestId('nav-sandbox').click({ timeout: 30000 });
  await app.getByTestId('sandbox-editor').waitFor({ timeout: 30000 });
  const secret = "console.log('the learner\\'s secret answer 7193')";
  assert.match(await runCode(app, "console.log('warming up')"), /warming up/);

  // An idle sandbox frame swapped: the next run says so and sends nothing.
  await page.evaluate(() => window.attackNow());
  for (let tries = 0; tries < 100 && impostorRequests === 0; tries += 1) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(impostorRequests, 1, 'the attack ran');
  const idle = await runCode(app, secret);
  assert.match(idle, /the sandbox was interfered with: another page replaced its frame's document/);
  assert.doesNotMatch(idle, /every test passed|7193\n/);
  await page.screenshot({ path: screenshotPath('sandbox-interfered') });

  // A new sandbox frame swapped the moment it appears. Whichever wins the
  // race, the impostor gets nothing: either the run says the sandbox was
  // interfered with, or it ran in kafkascope's own frame before the swap
  // (and the swap is then reported by the next run).
  // (A swap can also lose outright: the frame's own document starts
  // loading after the swap and replaces the impostor before it is even
  // requested. Then the attack is tried again, on the frame that is now
  // there, until it reaches the impostor's server.)
  for (let attempt = 0; attempt < 5 && impostorRequests < 2; attempt += 1) {
    await page.evaluate(() => { window.armed = true; });
    const racing = await runCode(app, secret);
    for (let tries = 0; tries < 100 && impostorRequests < 2; tries += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.match(racing, /the sandbox was interfered with|the learner's secret answer 7193/);
    assert.doesNotMatch(racing, /every test passed/);
  }
  assert.equal(impostorRequests, 2, 'the second attack ran');

  const stolen = await page.evaluate(() => window.stolen);
  assert.ok(!stolen.some((item) => /7193|warming|init|run:/.test(item)), JSON.stringify(stolen));
  // The page still answers, and a run in a new frame, left alone, runs the
  // code (the first may report the swap that came after the race).
  let again = await run(app);
  if (/interfered/.test(again)) again = await run(app);
  assert.match(again, /the learner's secret answer 7193/);
  assert.doesNotMatch(again, /every test passed|interfered/);
  assert.ok(!(await page.evaluate(() => window.stolen)).some((item) => /7193/.test(item)));
  assert.deepEqual(problems, []);
  await page.close();
});
