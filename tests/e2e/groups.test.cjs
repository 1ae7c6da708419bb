// Consumer groups on the live map as a learner tries them: a GC pause
// longer than the session timeout makes the group rebalance, and the lag
// chart shows lag building and the rebalance shaded; a slow handler builds
// lag; the new stories are on Learn.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath, showTool } = require('./browser.cjs');

const live = (page) => page.getByTestId('cluster');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const run10 = (page) => live(page).getByTestId('cluster-run-10s').click();

// Starts a new run with these shape knobs ({ assignor, partitions, billing }).
async function reshape(page, { assignor, ...fields }) {
  await showTool(page, 'knobs');
  if (assignor) await live(page).getByTestId('knob-assignor').selectOption(assignor);
  for (const [name, value] of Object.entries(fields)) {
    await showTool(page, 'knobs');
    await live(page).getByTestId(`knob-${name}`).fill(String(value));
    await live(page).getByTestId(`knob-${name}`).dispatchEvent('change');
  }
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-apply').click();
  assert.equal(await live(page).getByTestId('knob-error').count(), 0);
}

test('a GC pause past the session timeout: the group rebalances and the lag chart shades it', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await run10(page);
  await run10(page);
  await showTool(page, 'lag');
  const chart = live(page).getByTestId('lag-chart-billing');
  assert.ok(await chart.isVisible(), 'the billing lag chart is drawn');
  assert.match(await chart.locator('svg').getAttribute('aria-label'), /Group billing: lag \d+ now/);
  // Pause consumer-0 from the inspector: 60 s, past its 45 s session.
  await live(page).getByTestId('member-consumer-0').click();
  await showTool(page, 'inspector');
  await live(page).getByTestId('inspector-pause-consumer-0').click();
  for (let round = 0; round < 6; round++) await run10(page);
  assert.ok(await chart.getByTestId('lag-rebalance').count() >= 1, 'a rebalance is shaded on the chart');
  assert.match(await chart.locator('svg').getAttribute('aria-label'), /rebalance/);
  await showTool(page, 'lag');
  await page.screenshot({ path: screenshotPath('groups-gc-pause-lag-chart'), fullPage: false });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a slow handler builds lag that the chart and kafka-consumer-groups show; a fast one drains it', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await run10(page);
  await run10(page);
  for (const member of ['consumer-0', 'consumer-1']) {
    await live(page).getByTestId(`member-${member}`).click();
    await showTool(page, 'inspector');
    await live(page).getByTestId(`inspector-slow-${member}`).click();
  }
  // The first burst is handed to the handler in one poll (lag counts
  // records not yet returned by poll, as Kafka's records-lag does); the
  // second waits behind it.
  await live(page).getByTestId('node-producer-0').click({ position: { x: 30, y: 10 } });
  for (let burst = 0; burst < 2; burst++) {
    await showTool(page, 'inspector');
    for (let round = 0; round < 10; round++) await live(page).getByTestId('inspector-produce-keyed').click();
    await live(page).getByTestId('cluster-run-1s').click();
  }
  const lagOf = async () => {
    const label = await live(page).getByTestId('lag-chart-billing').locator('svg').getAttribute('aria-label');
    return Number(label.match(/lag (\d+) now/)[1]);
  };
  const behind = await lagOf();
  assert.ok(behind > 0, `lag builds behind a slow handler (${behind})`);
  // Each member has its own line under the group's total, named in the label.
  await showTool(page, 'lag');
  const chart = live(page).getByTestId('lag-chart-billing');
  for (const member of ['consumer-0', 'consumer-1']) {
    assert.equal(await chart.getByTestId(`lag-member-${member}`).count(), 1, `${member} has a lag line`);
  }
  assert.match(await chart.locator('svg').getAttribute('aria-label'), /Per member now: consumer-0 \d+, consumer-1 \d+/);
  for (const member of ['consumer-0', 'consumer-1']) {
    await live(page).getByTestId(`member-${member}`).click();
    await showTool(page, 'inspector');
    await live(page).getByTestId(`inspector-fast-${member}`).click();
  }
  await run10(page);
  assert.equal(await lagOf(), 0, 'a fast handler catches up');
  assert.deepEqual(problems, []);
  await page.close();
});

test('the new group stories are on Learn and open on their steps', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0#learn' });
  for (const id of ['coordinator-failover', 'rebalance-storm', 'rebalance-storm-cooperative', 'rebalance-storm-kip848', 'static-members-restart', 'slow-consumer']) {
    assert.ok(await page.locator(`a[href*="story=${id}"]`).count() >= 1, `${id} is linked from Learn`);
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('the consumer protocol (KIP-848) on the live map: a new member gets partitions and every partition keeps an owner', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await reshape(page, { assignor: 'consumer:uniform', partitions: 4 });
  await run10(page);
  await run10(page);
  const group = live(page).getByTestId('node-group-billing');
  assert.match(await group.textContent(), /KIP-848 · epoch \d+/);
  await group.click({ position: { x: 30, y: 10 } });
  await showTool(page, 'inspector');
  await live(page).getByTestId('inspector-add-group-billing').click();
  // At every step of the way no partition has two owners: a partition
  // moves only once its old owner has reported it gone.
  for (let round = 0; round < 6; round++) {
    await live(page).getByTestId('cluster-run-1s').click();
    const partitions = await live(page).locator('[data-testid="groups-table"] tbody tr', { hasText: 'billing' })
      .evaluateAll((rows) => rows.map((row) => row.children[2].textContent.trim()));
    assert.equal(new Set(partitions).size, partitions.length, `one owner each: ${partitions}`);
  }
  await run10(page);
  const owners = await live(page).locator('[data-testid="groups-table"] tbody tr', { hasText: 'billing' })
    .evaluateAll((cells) => cells.map((row) => row.lastElementChild.textContent.trim()));
  assert.ok(owners.every((owner) => owner && owner !== '-'), `every billing partition has an owner: ${owners}`);
  assert.equal(new Set(owners).size, 3, `the newcomer reads too: ${owners}`);
  await page.screenshot({ path: screenshotPath('groups-kip848-live'), fullPage: false });
  assert.deepEqual(problems, []);
  await page.close();
});

test('eager, cooperative and KIP-848 side by side on the same GC pause: cooperative members stop less than eager ones', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await showTool(page, 'compare');
  const compare = live(page).getByTestId('compare-protocols');
  await compare.getByTestId('compare-run').click();
  await compare.getByTestId('compare-2').waitFor();
  const stopped = [];
  const peaks = [];
  for (let index = 0; index < 3; index++) {
    const figure = compare.getByTestId(`compare-${index}`);
    stopped.push(Number(await figure.getAttribute('data-stopped-ms')));
    peaks.push(Number(await figure.getAttribute('data-peak-lag')));
    assert.match(await figure.locator('svg').getAttribute('aria-label'), /members stopped/);
  }
  assert.ok(stopped[0] > stopped[1], `eager members stop longer than cooperative ones: ${stopped}`);
  assert.ok(stopped[1] >= stopped[2], `KIP-848 members stop least: ${stopped}`);
  assert.ok(peaks[0] > peaks[1], `eager lag peaks higher: ${peaks}`);
  await compare.scrollIntoViewIfNeeded();
  await showTool(page, 'compare');
  await page.screenshot({ path: screenshotPath('groups-compare-protocols'), fullPage: false });
  assert.deepEqual(problems, []);
  await page.close();
});

test('delivery semantics on the live map: commit before processing and a crash mid-batch leave records never processed', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  // One billing member, so it reads every partition.
  await reshape(page, { billing: 1 });
  await run10(page);
  await live(page).getByTestId('member-consumer-0').click();
  await showTool(page, 'inspector');
  await live(page).getByTestId('inspector-commit-consumer-0').selectOption('before');
  await live(page).getByTestId('inspector-slow-consumer-0').click();
  await live(page).getByTestId('node-producer-0').click({ position: { x: 30, y: 10 } });
  for (let round = 0; round < 2; round++) await live(page).getByTestId('inspector-produce-keyed').click();
  await live(page).getByTestId('cluster-run-1s').click();
  await live(page).getByTestId('member-consumer-0').click();
  await showTool(page, 'inspector');
  await live(page).getByTestId('inspector-crash-consumer-0').click();
  await live(page).getByTestId('inspector-start-consumer-0').click();
  for (let round = 0; round < 7; round++) await run10(page);
  const never = await live(page).getByTestId('ledger-billing-never').textContent();
  assert.match(never, /^[1-9]\d* \(\d+: committed before it was processed/, `records never processed, with why: ${never}`);
  assert.equal(await live(page).getByTestId('ledger-billing-again').textContent(), '0');
  await showTool(page, 'ledger');
  await live(page).getByTestId('ledger-table').scrollIntoViewIfNeeded();
  await showTool(page, 'ledger');
  await page.screenshot({ path: screenshotPath('groups-delivery-ledger'), fullPage: false });
  assert.deepEqual(problems, []);
  await page.close();
});

test('cooperative-sticky on the live map: adding a member keeps the others reading, and every partition ends up read', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await reshape(page, { assignor: 'cooperative-sticky', partitions: 4 });
  await run10(page);
  await run10(page);
  const group = live(page).getByTestId('node-group-billing');
  await group.click({ position: { x: 30, y: 10 } });
  await showTool(page, 'inspector');
  await live(page).getByTestId('inspector-add-group-billing').click();
  let sawRebalance = false;
  for (let round = 0; round < 8; round++) {
    await live(page).getByTestId('cluster-run-1s').click();
    const state = await group.textContent();
    if (/REBALANCING/.test(state)) {
      sawRebalance = true;
      assert.match(state, /still reading/, `a cooperative rebalance does not stop the members: ${state}`);
    }
  }
  await run10(page);
  await run10(page);
  const owners = await live(page).locator('[data-testid="groups-table"] tbody tr', { hasText: 'billing' })
    .evaluateAll((rows) => rows.map((row) => [row.children[2].textContent.trim(), row.lastElementChild.textContent.trim()]));
  assert.equal(owners.length, 4, `every billing partition has an owner: ${JSON.stringify(owners)}`);
  assert.equal(new Set(owners.map(([, owner]) => owner)).size, 3, `the newcomer reads too: ${JSON.stringify(owners)}`);
  assert.ok(sawRebalance || owners.length === 4);
  assert.deepEqual(problems, []);
  await page.close();
});
