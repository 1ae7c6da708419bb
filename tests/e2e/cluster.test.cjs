// A learner kills the leader of a partition and watches Kafka recover: the
// controller fences the dead broker once its session times out and elects
// a new leader from the ISR, which the kafka-topics panel shows.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('killing a leader elects a new one from the ISR, shown in kafka-topics --describe', async () => {
  const { page, problems } = await openApp(browser);
  await page.getByTestId('cluster-run-10s').click();
  await page.getByTestId('cluster-produce').click();
  await page.getByTestId('cluster-run-10s').click();
  const leader = await page.getByTestId('leader-orders-0').textContent();
  const isr = (await page.getByTestId('isr-orders-0').textContent()).split(',');
  assert.equal(isr.length, 3);
  assert.match(await page.getByTestId('groups-table').innerText(), /billing\s+orders\s+0/);

  await page.getByTestId(`kill-broker-${leader}`).click();
  assert.match(await page.getByTestId(`broker-${leader}`).innerText(), /dead/);
  // broker.session.timeout.ms is 9 s: within it the controller still lists
  // the dead broker; after it, a new leader from the ISR.
  await page.getByTestId('cluster-run-10s').click();
  await page.getByTestId('cluster-run-10s').click();
  const newLeader = await page.getByTestId('leader-orders-0').textContent();
  assert.notEqual(newLeader, leader);
  assert.ok(isr.includes(newLeader), `${newLeader} was not in the ISR ${isr}`);
  assert.ok(!(await page.getByTestId('isr-orders-0').textContent()).split(',').includes(leader));
  assert.match(await page.getByTestId('topics-table').innerText(), /under-replicated/);
  assert.match(await page.getByTestId('cluster-summary').innerText(), /lost 0,.*invariant violations 0/);
  await page.screenshot({ path: screenshotPath('cluster-after-leader-kill'), fullPage: true });

  await page.getByTestId(`restart-broker-${leader}`).click();
  await page.getByTestId('cluster-run-10s').click();
  await page.getByTestId('cluster-run-10s').click();
  assert.equal((await page.getByTestId('isr-orders-0').textContent()).split(',').length, 3);
  assert.deepEqual(problems, []);
  await page.close();
});
