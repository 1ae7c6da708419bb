// A learner kills the leader of a partition and watches Kafka recover: the
// controller fences the dead broker once its session times out and elects
// a new leader from the ISR, which the kafka-topics panel shows.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath, showTool } = require('./browser.cjs');

// The live cluster section (the sequence steps section draws a map too).
const live = (page) => page.getByTestId('cluster');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('killing a leader elects a new one from the ISR, shown in kafka-topics --describe', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-10s').click();
  const leader = await live(page).getByTestId('leader-orders-0').textContent();
  const isr = (await live(page).getByTestId('isr-orders-0').textContent()).split(',');
  assert.equal(isr.length, 3);
  await showTool(page, 'groups');
  assert.match(await live(page).getByTestId('groups-table').innerText(), /billing\s+orders\s+0/);

  await live(page).getByTestId(`node-broker-${leader}`).click({ position: { x: 30, y: 10 } });
  await live(page).getByTestId(`inspector-kill-broker-${leader}`).click();
  assert.match(await live(page).getByTestId(`node-broker-${leader}`).getAttribute('aria-label'), /dead/);
  // broker.session.timeout.ms is 9 s: within it the controller still lists
  // the dead broker; after it, a new leader from the ISR.
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-run-10s').click();
  const newLeader = await live(page).getByTestId('leader-orders-0').textContent();
  assert.notEqual(newLeader, leader);
  assert.ok(isr.includes(newLeader), `${newLeader} was not in the ISR ${isr}`);
  assert.ok(!(await live(page).getByTestId('isr-orders-0').textContent()).split(',').includes(leader));
  await showTool(page, 'topics');
  assert.match(await live(page).getByTestId('topics-table').innerText(), /under-replicated/);
  assert.match(await live(page).getByTestId('cluster-summary').innerText(), /lost 0,.*invariant violations 0/);
  await page.screenshot({ path: screenshotPath('cluster-after-leader-kill'), fullPage: true });

  await showTool(page, 'inspector');
  await live(page).getByTestId(`inspector-restart-broker-${leader}`).click();
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-run-10s').click();
  assert.equal((await live(page).getByTestId('isr-orders-0').textContent()).split(',').length, 3);
  assert.deepEqual(problems, []);
  await page.close();
});

test('cutting the power of a leader erases what it had not flushed; the others keep every record', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-10s').click();
  // A leader that took the records: Kafka flushed nothing of them by
  // default, and its row says where the disk ends.
  const written = await live(page).locator('g.replica.leader').evaluateAll((rows) => rows
    .map((row) => [row.dataset.testid, row.querySelector('title').textContent])
    .filter(([, title]) => /flushed to disk below offset 0 \(the rest is in the page cache only\)/.test(title)));
  assert.ok(written.length > 0, 'no leader holds unflushed records');
  const [, leader, partition] = written[0][0].match(/^replica-(\d+)-(.+)$/);
  const row = live(page).getByTestId(`replica-${leader}-${partition}`);
  await live(page).getByTestId(`node-broker-${leader}`).click({ position: { x: 30, y: 10 } });
  await live(page).getByTestId(`inspector-power-broker-${leader}`).click();
  assert.match(await live(page).getByTestId(`node-broker-${leader}`).getAttribute('aria-label'), /dead/);
  assert.match(await row.locator('title').textContent(), /log end offset 0,/);
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-run-10s').click();
  assert.notEqual(await live(page).getByTestId(`leader-${partition}`).textContent(), leader);
  assert.match(await live(page).getByTestId('cluster-summary').innerText(), /lost 0,.*invariant violations 0/);
  await page.screenshot({ path: screenshotPath('cluster-after-power-loss'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('on a phone, cutting a broker\'s power from its sheet kills it and empties what it had not flushed', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-10s').click();
  const broker = live(page).getByTestId('node-broker-2');
  await broker.evaluate((element) => element.scrollIntoView({ block: 'center' }));
  const frame = await broker.locator(':scope > .frame').boundingBox();
  await page.mouse.click(frame.x + frame.width / 2, frame.y + 10);
  await page.getByTestId('selection-sheet').getByTestId('sheet-power').click();
  assert.match(await broker.getAttribute('aria-label'), /dead/);
  const ends = await broker.locator('g.replica title').evaluateAll((titles) => titles
    .map((title) => title.textContent)
    .filter((text) => !text.includes('__'))
    .map((text) => Number(text.match(/log end offset (\d+)/)[1])));
  assert.ok(ends.length > 0 && ends.every((end) => end === 0), JSON.stringify(ends));
  await page.screenshot({ path: screenshotPath('phone-after-power-loss') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('play advances simulated time until paused; Space plays and the right arrow steps one event', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  const time = async () => Number((await live(page).getByTestId('cluster-time').textContent()).match(/\d+/)[0]);
  const events = async () => Number(await page.getByTestId('cluster').getAttribute('data-events'));
  await live(page).getByTestId('cluster-speed').selectOption('10000');
  await live(page).getByTestId('cluster-play').click();
  await page.waitForFunction(() => /t = [1-9]\d{3,} ms/.test(document.querySelector('[data-testid="cluster-time"]').textContent));
  await live(page).getByTestId('cluster-play').click();
  const paused = await time();
  await page.waitForTimeout(400);
  assert.equal(await time(), paused, 'time moved while paused');

  await page.getByTestId('cluster').focus();
  const before = await events();
  await page.keyboard.press('ArrowRight');
  assert.equal(await events(), before + 1);
  await page.keyboard.press('Space');
  assert.equal(await live(page).getByTestId('cluster-play').getAttribute('aria-pressed'), 'true');
  await page.keyboard.press('Space');
  assert.equal(await live(page).getByTestId('cluster-play').getAttribute('aria-pressed'), 'false');
  assert.deepEqual(problems, []);
  await page.close();
});
