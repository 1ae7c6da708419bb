// A link to a moment of the live run, as a teacher sends one: change the
// cluster, copy the link, open it elsewhere and find the same run (the
// same time, counts and run fingerprint); a damaged or newer link says
// why and the page still works.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath, showTool, showView } = require('./browser.cjs');

const live = (page) => page.getByTestId('cluster');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('a copied link to this moment opens the same run: same time, same counts, same fingerprint', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('node-broker-2').click({ position: { x: 30, y: 10 } });
  await live(page).getByTestId('inspector-kill-broker-2').click();
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-step').click();
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-acks').selectOption('1');
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-1s').click();
  await live(page).getByTestId('copy-run-link').click();
  const share = live(page).getByTestId('run-share');
  await share.waitFor();
  const url = await live(page).getByTestId('run-link').inputValue();
  assert.match(url, /\?play=0&run=1\.[A-Za-z0-9_-]+#map$/);
  const hash = await share.getAttribute('data-run-hash');
  const time = await live(page).getByTestId('cluster-time').innerText();
  const summary = await live(page).getByTestId('cluster-summary').innerText();
  await share.screenshot({ path: screenshotPath('run-link-copied') });

  const other = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  other.on('pageerror', (error) => errors.push(String(error)));
  await other.goto(url);
  const restored = live(other).getByTestId('run-restored');
  await restored.waitFor();
  assert.equal(await restored.getAttribute('data-run-hash'), hash);
  assert.equal(await live(other).getByTestId('cluster-time').innerText(), time);
  assert.equal(await live(other).getByTestId('cluster-summary').innerText(), summary);
  assert.equal(await live(other).getByTestId('knob-acks').inputValue(), '1');
  // The restored run goes on like any other.
  await live(other).getByTestId('cluster-run-1s').click();
  assert.notEqual(await live(other).getByTestId('cluster-time').innerText(), time);
  assert.deepEqual(errors, []);
  assert.deepEqual(problems, []);
  await other.close();
  await page.close();
});

test('a damaged or newer run link says why in plain words and the default cluster runs', async () => {
  // A link whose run was edited: a field of its cluster misspelt.
  const edited = `1.${require('node:zlib').deflateRawSync('{"v":1,"seed":1,"config":{"brokers":3,"mitopics":[]},"inputs":[],"events":0,"nowMs":0}').toString('base64url')}`;
  for (const [run, says] of [['2.AAAA', /newer kafkascope/], ['1.%%%', /damaged/], ['1.AAAA', /damaged or too large/],
    [edited, /this run link is damaged: it names settings or inputs kafkascope does not have \(a part of it was changed by hand\)\. Copy the link again/]]) {
    const { page, problems } = await openApp(browser, { query: `?play=0&run=${run}` });
    const problem = live(page).getByTestId('run-link-problem');
    await problem.waitFor();
    assert.match(await problem.innerText(), says);
    // No parser's words: no field lists, no backticks.
    assert.doesNotMatch(await problem.innerText(), /`|expected one of/);
    await live(page).getByTestId('cluster-run-1s').click();
    assert.match(await live(page).getByTestId('cluster-time').innerText(), /t = 1000 ms/);
    assert.deepEqual(problems.filter((problem) => !/run link/.test(problem)), []);
    await page.close();
  }
});

test('the live run downloads as a scenario file that opens in Sequence steps; a bad file says where', async () => {
  const fs = require('node:fs');
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-1s').click();
  await showTool(page, 'export');
  const [download] = await Promise.all([page.waitForEvent('download'), live(page).getByTestId('export-scenario').click()]);
  assert.equal(download.suggestedFilename(), 'kafkascope-run.json');
  const scenario = fs.readFileSync(await download.path(), 'utf8');
  assert.equal(JSON.parse(scenario).runUntilMs, 1000);
  const [traceDownload] = await Promise.all([page.waitForEvent('download'), live(page).getByTestId('export-trace').click()]);
  assert.ok(Array.isArray(JSON.parse(fs.readFileSync(await traceDownload.path(), 'utf8'))));

  await showView(page, 'stories');
  const steps = page.getByTestId('steps');
  await steps.getByTestId('open-scenario').setInputFiles({ name: 'kafkascope-run.json', mimeType: 'application/json', buffer: Buffer.from(scenario) });
  await page.waitForFunction(() => document.querySelector('[data-testid="steps"]').dataset.story === 'custom-custom');
  assert.ok(Number(await steps.getAttribute('data-steps')) > 10);
  assert.match(await steps.getByTestId('story-select').locator('option:checked').innerText(), /from kafkascope-run\.json/);
  const opened = Number(await steps.getAttribute('data-step'));
  await steps.getByTestId('step-next').click();
  assert.ok(Number(await steps.getAttribute('data-step')) > opened);
  assert.equal(await steps.getByTestId('step-link').count(), 0, 'a story from a file has no link to share');

  // A mistake names its line, or the field.
  const broken = '{\n  "name": "mine",\n  "config": { "brokers": 3 },\n  "runUntilMs": 1000,\n  "inputs": [ { "atMs": 10, "input": { "type": "killBrokr", "broker": 1 } } ]\n}';
  await steps.getByTestId('open-scenario').setInputFiles({ name: 'mine.json', mimeType: 'application/json', buffer: Buffer.from(broken) });
  const problem = steps.getByTestId('scenario-problem');
  await problem.waitFor();
  assert.match(await problem.innerText(), /^mine\.json: bad scenario: unknown variant `killBrokr`.* line 5/);
  assert.equal(await steps.getAttribute('data-story'), 'custom-custom', 'the story shown stays');
  await steps.screenshot({ path: screenshotPath('steps-open-scenario-problem') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a link to the sandbox\'s code opens it in the editor, ready to run; a damaged one says why', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'sandbox' });
  const sandbox = page.getByTestId('sandbox');
  const code = "// shared with a learner\nconsole.log('user-42 ->', partitionFor('user-42', 6));\n";
  await sandbox.getByTestId('sandbox-editor').fill(code);
  await sandbox.getByTestId('copy-code-link').click();
  const url = await sandbox.getByTestId('code-link').inputValue();
  assert.match(url, /\?code=1\.[A-Za-z0-9_-]+#sandbox$/);
  await sandbox.getByTestId('code-share').screenshot({ path: screenshotPath('sandbox-code-link') });

  const other = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await other.goto(url);
  const opened = other.getByTestId('sandbox');
  await opened.getByTestId('sandbox-editor').waitFor();
  assert.equal(await opened.getByTestId('sandbox-editor').inputValue(), code);
  assert.equal(await opened.getByTestId('sandbox-example').inputValue(), '', 'no example is claimed');
  assert.equal(await opened.getAttribute('data-finished-runs'), '0', 'a link never runs code by itself');
  await opened.getByTestId('sandbox-run').click();
  await other.locator('[data-testid="sandbox"][data-finished-runs="1"]').waitFor({ timeout: 30000 });
  assert.match(await opened.getByTestId('sandbox-console').innerText(), /user-42 -> \d/);
  await other.close();

  const damaged = await browser.newPage();
  await damaged.goto(url.replace(/code=1\.[^#]+/, 'code=1.AAAA'));
  const problem = damaged.getByTestId('code-link-problem');
  await problem.waitFor({ timeout: 30000 });
  assert.match(await problem.innerText(), /damaged/);
  await damaged.close();
  assert.deepEqual(problems, []);
  await page.close();
});

test('the scenario format reference and its JSON Schema are published with the site', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'stories' });
  const link = page.getByTestId('steps').getByTestId('scenario-format-link');
  const [reference] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
  await reference.waitForLoadState();
  assert.match(await reference.locator('h1').innerText(), /scenario file format/);
  for (const kind of ['killBroker', 'createPartitions', 'setConfig']) {
    assert.ok(await reference.locator(`h3:has-text('"${kind}"')`).count() > 0, kind);
  }
  await reference.locator('a[href="#clusterconfig"]').first().click();
  assert.equal(new URL(reference.url()).hash, '#clusterconfig');
  await reference.screenshot({ path: screenshotPath('scenario-format-reference') });
  const schema = await (await fetch(new URL('scenario.schema.json', reference.url()))).json();
  assert.equal(schema.title, 'Scenario');
  assert.ok(schema.$defs.Input.oneOf.length > 20);
  await reference.close();
  assert.deepEqual(problems, []);
  await page.close();
});

test('an address with a #section opens there: a story step, a seed, a code link', async () => {
  const inView = (page, id) => page.waitForFunction((id) => {
    const box = document.getElementById(id)?.getBoundingClientRect();
    return box && box.top < innerHeight && box.bottom > 0;
  }, id, { timeout: 10000 });
  for (const [query, id] of [['?story=happy-path&step=28#steps', 'steps'], ['?play=0&seed=42#map', 'map'], ['?code=1.AAAA#sandbox', 'sandbox']]) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const { APP_URL } = require('./browser.cjs');
    await page.goto(APP_URL + query);
    await inView(page, id);
    await page.close();
  }
});
