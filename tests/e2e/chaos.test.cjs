// Chaos mode on the live map, as a learner uses it: choose the faults,
// start chaos, let the map run until the first anomaly stops it, read
// whether it is Kafka's design or a bug, copy the link and open it again
// to the same stop; at desktop and at phone width.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath, showTool, seriousViolations } = require('./browser.cjs');

const live = (page) => page.getByTestId('cluster');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// Every target of the Chaos tab a learner clicks is at least 44 px square
// (checkboxes by their label), measured as drawn.
async function assertTargets(page) {
  const tool = live(page).getByTestId('chaos-tool');
  const targets = tool.locator('button, label.chaos-kind, input[type=text], input:not([type])');
  for (let index = 0; index < await targets.count(); index += 1) {
    const target = targets.nth(index);
    if (!(await target.isVisible())) continue;
    const box = await target.boundingBox();
    const name = (await target.innerText().catch(() => '')) || await target.getAttribute('data-testid');
    assert.ok(box.height >= 44 && box.width >= 44, `"${name}" is ${box.width}×${box.height} px`);
  }
}

// Power losses only, as many a minute as chaos allows: one of them soon
// cuts every broker at once, which loses what no disk had.
async function startPowerChaos(page) {
  await showTool(page, 'chaos');
  const tool = live(page).getByTestId('chaos-tool');
  for (const kind of ['crash', 'pause', 'partition', 'lossy-links', 'slow-node']) {
    await tool.getByTestId(`chaos-kind-${kind}`).uncheck();
  }
  await tool.getByTestId('chaos-rate').fill('60');
  await tool.getByTestId('chaos-rate').press('Enter');
  assert.equal(await tool.getByTestId('chaos-error').count(), 0);
  assert.ok(await tool.getByTestId('chaos-stop-at-anomaly').isChecked(), 'chaos stops at the first anomaly by default');
  await tool.getByTestId('chaos-start').click();
  assert.match(await live(page).getByTestId('chaos-notice').innerText(), /^Chaos is on: 0 faults so far\./);
  return tool;
}

// Acknowledged records, then ten seconds at a time until chaos stops the map.
async function runUntilHalt(page) {
  await live(page).getByTestId('cluster-produce').click();
  const halt = live(page).getByTestId('chaos-halt');
  for (let round = 0; round < 30 && await halt.count() === 0; round += 1) {
    await live(page).getByTestId('cluster-run-10s').click();
  }
  assert.equal(await halt.count(), 1, 'chaos named no anomaly in five minutes of power losses');
  return halt;
}

test('chaos strikes the running map, stops it at the first anomaly, says it is Kafka\'s design, and its link replays to the same stop', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  const tool = await startPowerChaos(page);
  await assertTargets(page);
  const halt = await runUntilHalt(page);
  // The loss of every broker's unflushed records: the trace named it.
  assert.match(await halt.innerText(), /^Chaos stopped the map at t = \d+ ms, trace event #\d+: \d+ acknowledged records? lost from orders-\d+: a power loss erased them/);
  assert.equal(await halt.getAttribute('data-judgement'), 'design');
  assert.match(await halt.innerText(), /Kafka's design: Kafka does not sync each write to disk .* a power loss of every replica that had them takes what no disk held yet/);
  assert.match(await tool.getByTestId('chaos-try').innerText(), /set flush\.messages to 1 on the Knobs tab/);
  assert.match(await tool.getByTestId('chaos-faults').innerText(), /cut the power of broker-1, broker-2, broker-3/);
  assert.match(await live(page).getByTestId('chaos-notice').innerText(), /It stopped the map at t = \d+ ms: \d+ acknowledged records? lost/);
  // Held there: the summary counts the loss, and play shows paused.
  assert.match(await live(page).getByTestId('cluster-summary').innerText(), /lost [1-9]/);
  assert.match(await live(page).getByTestId('cluster-play').innerText(), /Play/);
  const event = await halt.getAttribute('data-event');
  const time = await live(page).getByTestId('cluster-time').innerText();
  await assertTargets(page);
  assert.deepEqual(await seriousViolations(page), []);
  await page.screenshot({ path: screenshotPath('map-chaos-stopped') });
  await tool.screenshot({ path: screenshotPath('map-chaos-tab') });
  // The faults listed have all struck by the moment the map stopped at.
  const now = Number(time.match(/\d+/)[0]);
  for (const line of (await tool.getByTestId('chaos-faults').innerText()).split('\n')) {
    assert.ok(Number(line.match(/t = (\d+) ms/)[1]) <= now, `${line} is after t = ${now} ms`);
  }

  // The link to this moment replays the same faults to the same stop.
  await tool.getByTestId('chaos-copy-link').click();
  const url = await live(page).getByTestId('run-link').inputValue();
  const again = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await again.goto(url);
  await again.getByTestId('run-restored').waitFor({ timeout: 60_000 });
  assert.equal(await live(again).getByTestId('cluster-time').innerText(), time);
  await showTool(again, 'chaos');
  assert.equal(await live(again).getByTestId('chaos-halt').getAttribute('data-event'), event);
  assert.match(await live(again).getByTestId('chaos-notice').innerText(), /It stopped the map at/);
  await again.close();

  // Playing on: chaos strikes again until stopped; stopping ends the line.
  await tool.getByTestId('chaos-resume').click();
  assert.match(await live(page).getByTestId('cluster-play').innerText(), /Pause/);
  await live(page).getByTestId('chaos-notice-stop').click();
  assert.equal(await live(page).getByTestId('chaos-notice').count(), 0);
  await live(page).getByTestId('cluster-play').click();

  // The other way: every record synced (flush.messages=1), the same chaos
  // cuts every broker's power and loses nothing acknowledged.
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-flush-messages').fill('1');
  await live(page).getByTestId('knob-flush-messages').press('Enter');
  assert.equal(await live(page).getByTestId('knob-error').count(), 0);
  const lost = await live(page).getByTestId('cluster-summary').innerText();
  await showTool(page, 'chaos');
  await tool.getByTestId('chaos-start').click();
  await live(page).getByTestId('cluster-produce').click();
  for (let round = 0; round < 6; round += 1) await live(page).getByTestId('cluster-run-10s').click();
  const struck = Number((await tool.getByTestId('chaos-status').innerText()).match(/(\d+) faults so far/)[1]);
  assert.ok(struck >= 30, `${struck} faults`);
  assert.equal(await live(page).getByTestId('chaos-halt').count(), 0, 'chaos stopped at a loss with every record synced');
  assert.equal((await live(page).getByTestId('cluster-summary').innerText()).match(/lost (\d+)/)[1], lost.match(/lost (\d+)/)[1]);
  assert.deepEqual(problems, []);
  await page.close();
});

test('chaos at phone width: the tab, the line above the map and the stop all fit and answer', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, query: '?play=0', view: 'map' });
  await startPowerChaos(page);
  await assertTargets(page);
  const halt = await runUntilHalt(page);
  assert.equal(await halt.getAttribute('data-judgement'), 'design');
  // Nothing of the tab runs off the screen's side.
  const box = await live(page).getByTestId('chaos-tool').boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 390, `the Chaos tab spans ${box.x}–${box.x + box.width} px`);
  const notice = await live(page).getByTestId('chaos-notice').boundingBox();
  assert.ok(notice.x + notice.width <= 390, 'the chaos line fits the screen');
  await assertTargets(page);
  assert.deepEqual(await seriousViolations(page), []);
  await live(page).getByTestId('chaos-tool').screenshot({ path: screenshotPath('map-chaos-phone') });
  await live(page).getByTestId('chaos-open').click();
  await live(page).getByTestId('chaos-stop').click();
  assert.equal(await live(page).getByTestId('chaos-notice').count(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});
