// The architecture map as a learner uses it: click a broker, a replica and
// an edge and read the inspector; kill a leader and watch the map and the
// topics panel agree on the new one; change acks and see writes accepted
// again; export the topology; phone width; reduced motion.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, showView, withSimulator, screenshotPath, showTool, seriousViolations } = require('./browser.cjs');

// The live cluster section (the sequence steps section draws a map too).
const live = (page) => page.getByTestId('cluster');
const steps = (page) => page.getByTestId('steps');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const facts = async (page) => {
  await showTool(page, 'inspector');
  const text = await live(page).getByTestId('inspector-facts').innerText();
  return text;
};
// Types a live knob's value and commits it (Enter).
const setKnob = async (page, id, value) => {
  await showTool(page, 'knobs');
  await live(page).getByTestId(id).fill(value);
  await live(page).getByTestId(id).press('Enter');
};
// Clicks a node's header (its centre may be a replica or member row).
const clickNode = (page, id) => live(page).getByTestId(id).click({ position: { x: 30, y: 10 } });
const summaryCount = async (page, name) =>
  Number((await live(page).getByTestId('cluster-summary').innerText()).match(new RegExp(`${name} (\\d+)`))[1]);

test('the map shows brokers, replicas, the quorum, the producer and both groups, and the inspector explains them', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-10s').click();
  for (const id of ['node-broker-1', 'node-broker-2', 'node-broker-3', 'node-controller-1', 'node-producer-0', 'node-group-billing', 'node-group-search']) {
    assert.ok(await live(page).getByTestId(id).isVisible(), `${id} not drawn`);
  }
  // A broker.
  await clickNode(page, 'node-broker-2');
  assert.equal(await live(page).getByTestId('inspector-title').innerText(), 'broker-2');
  assert.match(await facts(page), /State\s+running/);
  assert.match(await facts(page), /Leads\s+\d+ partitions/);
  // A replica row: LEO, HW, leader epoch, ISR and fetch times.
  await live(page).getByTestId('replica-2-orders-0').click();
  await showTool(page, 'inspector');
  assert.equal(await live(page).getByTestId('inspector-title').innerText(), 'orders-0 on broker-2');
  const replica = await facts(page);
  for (const field of ['Log end offset', 'High watermark', 'Leader epoch', 'ISR', 'ELR', 'Leader recovery', 'Last fetch', 'Last caught up', 'Log start offset', 'On disk']) {
    assert.match(replica, new RegExp(field), `${field} missing from ${replica}`);
  }
  // Its files on disk, named as Kafka names them, and how a read finds an
  // offset (on a replica that holds records; rows are selected from the
  // keyboard, as edges cross them).
  const withRecords = await live(page).locator('[data-testid^="replica-2-"]').evaluateAll((rows) => rows
    .find((row) => /log end offset [1-9]/.test(row.querySelector('title').textContent)).dataset.testid);
  await live(page).getByTestId(withRecords).focus();
  await page.keyboard.press('Enter');
  await showTool(page, 'inspector');
  const files = await live(page).getByTestId('inspector-files').innerText();
  for (const name of ['00000000000000000000.log', '00000000000000000000.index', '00000000000000000000.timeindex']) {
    assert.ok(files.includes(name), `${name} not listed in ${files}`);
  }
  assert.match(files, /active: appends go here/);
  await showTool(page, 'inspector');
  await live(page).getByTestId('inspector-lookup').locator('summary').click();
  const lookup = await live(page).getByTestId('inspector-lookup').innerText();
  assert.match(lookup, /Segment: .*Index: .*Scan: /s);
  // An edge: a follower's fetch to its leader.
  // (Edges cross, so select it from the keyboard as a screen-reader user would.)
  const edge = live(page).locator('[data-testid^="edge-broker-"][data-testid*="-to-broker-"]').first();
  await edge.focus();
  await page.keyboard.press('Enter');
  const edgeFacts = await facts(page);
  assert.match(edgeFacts, /Protocol\s+Fetch → FetchResponse/);
  assert.match(edgeFacts, /Direction\s+requests broker-\d → broker-\d/);
  assert.match(edgeFacts, /If it breaks/);
  // The second group reads on its own offsets.
  await clickNode(page, 'node-group-search');
  assert.match(await facts(page), /Committed offsets\s+orders-0 @\d+/);
  // Keyboard: Tab reaches map nodes and Enter selects them.
  await live(page).getByTestId('node-controller-1').focus();
  await page.keyboard.press('Enter');
  await showTool(page, 'inspector');
  assert.equal(await live(page).getByTestId('inspector-title').innerText(), 'controller-1');
  // KRaft as Kafka runs it: the other controllers (voters) and every
  // broker (observers) fetch the metadata log from the active controller.
  assert.match(await facts(page), /Fetching from it\s+voters: controller-2 at offset \d+ \(fetched \d+ ms ago\), controller-3 at offset \d+.*; observers: broker-1 at offset \d+/);
  await clickNode(page, 'node-broker-3');
  // One unit for the metadata log everywhere: its entries (the controller
  // boxes, the controller inspector and kafka-metadata-quorum count them too).
  assert.match(await facts(page), /Metadata log\s+an observer fetching __cluster_metadata from controller-1: it holds \d+ entr(y|ies), \d+ of them committed; it has applied \d+ entr(y|ies)/);
  // A member id is said to be its client id with the coordinator's suffix.
  assert.match(await live(page).getByTestId('member-id-note').textContent(), /consumer-0-3 is the member consumer-0/);
  await showTool(page, 'quorum');
  const replication = await live(page).getByTestId('quorum-replication').innerText();
  assert.match(replication, /1\s+\d+\s+0\s+\d+\s+\d+\s+Leader/);
  assert.match(replication, /2\s+\d+\s+\d+\s+\d+\s+\S+\s+Follower/);
  assert.match(replication, /3\s+\d+\s+\d+\s+\d+\s+\S+\s+Observer/);
  await showTool(page, 'quorum');
  assert.match(await live(page).getByTestId('quorum-status').innerText(), /CurrentObservers:\s+\[1,2,3\]/);
  // The edge from a broker to the active controller carries its metadata fetches.
  const toController = live(page).locator('[data-testid="edge-broker-1-to-controller-1"]');
  await toController.focus();
  await page.keyboard.press('Enter');
  assert.match(await facts(page), /Protocol\s+Fetch → FetchResponse of __cluster_metadata \(the broker, an observer, pulls the metadata log\)/);
  await page.screenshot({ path: screenshotPath('map-desktop'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('killing a leader from the inspector: the map and kafka-topics show a new leader from the ISR within the session timeout', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  const leader = await live(page).getByTestId('leader-orders-0').textContent();
  const isr = (await live(page).getByTestId('isr-orders-0').textContent()).split(',');
  await clickNode(page, `node-broker-${leader}`);
  await live(page).getByTestId(`inspector-kill-broker-${leader}`).click();
  assert.match(await live(page).getByTestId(`node-broker-${leader}`).textContent(), /DEAD/);
  // broker.session.timeout.ms is 9 s after the broker's last heartbeat
  // (sent at most 2 s before the kill): the controller fences it when the
  // session runs out and elects a new leader, committed through its quorum
  // within milliseconds.
  let seconds = 0;
  while ((await live(page).getByTestId('leader-orders-0').textContent()) === leader && seconds < 20) {
    await live(page).getByTestId('cluster-run-1s').click();
    seconds += 1;
  }
  assert.ok(seconds <= 10, `no new leader ${seconds} s after the kill`);
  const newLeader = await live(page).getByTestId('leader-orders-0').textContent();
  assert.notEqual(newLeader, leader);
  assert.ok(isr.includes(newLeader));
  assert.match(await live(page).getByTestId(`replica-${newLeader}-orders-0`).locator(':scope > title').textContent(), /: leader, in sync/);
  const active = await live(page).locator('[data-testid^="node-controller-"].active').getAttribute('data-testid');
  await clickNode(page, active);
  assert.match(await facts(page), new RegExp(`Fenced brokers\\s+broker-${leader}`));
  // "What just happened" lists the fencing and the election.
  await showTool(page, 'recent');
  const recent = await live(page).getByTestId('recent-events').innerText();
  assert.match(recent, new RegExp(`controller fenced broker-${leader}`));
  assert.match(recent, new RegExp(`orders-0: leader broker-${newLeader}`));
  assert.match(await facts(page), /Last leader election\s+\S+ → broker-\d/);
  await page.screenshot({ path: screenshotPath('map-after-leader-kill'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('stopping a leader gracefully: leadership moves before it stops, with no session timeout to wait for', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  const leader = await live(page).getByTestId('leader-orders-0').textContent();
  await clickNode(page, `node-broker-${leader}`);
  await live(page).getByTestId(`inspector-stop-broker-${leader}`).click();
  // The controlled shutdown takes a heartbeat round trip and a quorum
  // commit: a few milliseconds, not broker.session.timeout.ms.
  await live(page).getByTestId('cluster-step').click();
  let steps = 0;
  while ((await live(page).getByTestId('leader-orders-0').textContent()) === leader && steps < 200) {
    await live(page).getByTestId('cluster-step').click();
    steps += 1;
  }
  const newLeader = await live(page).getByTestId('leader-orders-0').textContent();
  assert.notEqual(newLeader, leader);
  assert.match(await live(page).getByTestId(`node-broker-${leader}`).textContent(), /STOPPING/);
  // Its next heartbeat (broker.heartbeat.interval.ms, 2 s) finds it leading
  // nothing, and the controller lets it stop.
  let seconds = 0;
  while (!/DEAD/.test(await live(page).getByTestId(`node-broker-${leader}`).textContent()) && seconds < 5) {
    await live(page).getByTestId('cluster-run-1s').click();
    seconds += 1;
  }
  assert.match(await live(page).getByTestId(`node-broker-${leader}`).textContent(), /DEAD/);
  await showTool(page, 'recent');
  const recent = await live(page).getByTestId('recent-events').innerText();
  assert.match(recent, new RegExp(`controlled shutdown`));
  assert.doesNotMatch(recent, /no heartbeat for more than/);
  await page.screenshot({ path: screenshotPath('map-after-controlled-shutdown'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('acks=all with min.insync.replicas=2 refuses writes once two brokers are gone; acks=1 takes them', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  for (const broker of [2, 3]) {
    await clickNode(page, `node-broker-${broker}`);
    await live(page).getByTestId(`inspector-kill-broker-${broker}`).click();
  }
  await live(page).getByTestId('cluster-run-10s').click();
  await live(page).getByTestId('cluster-run-10s').click();
  const acknowledged = await summaryCount(page, 'acknowledged');
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-1s').click();
  assert.equal(await summaryCount(page, 'acknowledged'), acknowledged);
  assert.match(await live(page).getByTestId('node-producer-0').textContent(), /NOT_ENOUGH_REPLICAS/);

  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-acks').selectOption('1');
  assert.match(await live(page).getByTestId('node-producer-0').textContent(), /acks=1/);
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-1s').click();
  assert.ok(await summaryCount(page, 'acknowledged') > acknowledged, 'acks=1 writes were not acknowledged');
  assert.deepEqual(problems, []);
  await page.close();
});

test('a lost produce response: a retry writes the batch twice without enable.idempotence, once with it', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  // "10 (10: the producer retried without idempotence, …)"
  const again = async () => parseInt(await live(page).getByTestId('ledger-billing-again').textContent(), 10);
  const loseAndProduce = async () => {
    await showTool(page, 'inspector');
    const lose = live(page).getByTestId('inspector-lose-response-producer-0');
    if (!(await lose.isVisible())) await clickNode(page, 'node-producer-0');
    await lose.click();
    await live(page).getByTestId('cluster-produce').click();
    await live(page).getByTestId('cluster-run-10s').click();
  };
  // Jepsen's checks on the run so far: nothing to say yet.
  const jepsen = live(page).getByTestId('jepsen-tool');
  await showTool(page, 'jepsen');
  assert.equal(await jepsen.getByTestId('jepsen-check').innerText(), 'Check the run so far');
  await jepsen.getByTestId('jepsen-check').click();
  assert.match(await jepsen.locator('summary').innerText(), /^What Jepsen would say about this run: no anomaly in \d+ operations$/);
  assert.match(await jepsen.innerText(), /from its start to t = 10\d\d\d ms/);
  // Off: the leader cannot tell the retry from new records.
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-idempotence').uncheck();
  assert.equal(await again(), 0);
  await loseAndProduce();
  const twice = await again();
  assert.ok(twice > 0, 'the group processed the retried records twice');
  // Checked again, Jepsen names the duplicates, when they were written.
  await showTool(page, 'jepsen');
  assert.equal(await jepsen.getByTestId('jepsen-check').innerText(), 'Check again');
  await jepsen.getByTestId('jepsen-check').click();
  assert.match(await jepsen.locator('summary').innerText(), /^What Jepsen would say about this run: duplicate × \d+ in \d+ operations$/);
  assert.match(await jepsen.getByTestId('jepsen-finding').first().innerText(), /^duplicate on orders-\d+: records? #\d+.*\. One record was written to the log twice, at two offsets\. \(at \d+ ms\)$/);
  const check = await jepsen.getByTestId('jepsen-check').boundingBox();
  assert.ok(check.width >= 44 && check.height >= 44, `the check button is ${check.width}×${check.height} px`);
  await jepsen.screenshot({ path: screenshotPath('map-jepsen-duplicates') });
  assert.deepEqual(await seriousViolations(page), []);
  await showTool(page, 'recent');
  assert.match(await live(page).getByTestId('recent-events').innerText(), /lose the next produce response to producer-0/);
  // Kafka refuses idempotence with acks=1, and says why.
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-acks').selectOption('1');
  await live(page).getByTestId('knob-idempotence').click();
  assert.match(await live(page).getByTestId('knob-error').innerText(), /Must set acks to all in order to use the idempotent producer/);
  assert.equal(await live(page).getByTestId('knob-idempotence').isChecked(), false, 'the refused box shows the run\'s state');
  await live(page).getByTestId('knob-acks').selectOption('all');
  await live(page).getByTestId('knob-idempotence').check();
  assert.equal(await live(page).getByTestId('knob-error').count(), 0);
  // On: the leader recognises the sequences and writes nothing again.
  await loseAndProduce();
  assert.equal(await again(), twice, 'no record was processed twice with idempotence on');
  await showTool(page, 'recent');
  assert.match(await live(page).getByTestId('recent-events').innerText(), /answered with the original offsets/);
  await page.screenshot({ path: screenshotPath('map-idempotent-retry') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a poison record on the live map stops the member that reads it, and the ledger says why', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  await clickNode(page, 'node-producer-0');
  await live(page).getByTestId('inspector-poison-producer-0').click();
  await live(page).getByTestId('cluster-run-10s').click();
  await showTool(page, 'recent');
  const events = await live(page).getByTestId('recent-events').innerText();
  assert.match(events, /handlers fail on records of orders with key "poison"/);
  assert.match(events, /failed 1 time on orders-\d+ offset \d+: the exception stops it/);
  assert.match(await live(page).getByTestId('ledger-billing-never').textContent(), /the handler failed in its batch and the member stopped/);
  await page.screenshot({ path: screenshotPath('map-poison-record') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('knob fields take typing while the map plays, and a value that is not a number is quoted back', async () => {
  // The map plays by default and redraws every frame.
  const { page, problems } = await openApp(browser, { view: 'map' });
  assert.equal(await live(page).getByTestId('cluster-play').getAttribute('aria-pressed'), 'true');
  await showTool(page, 'knobs');
  const lag = live(page).getByTestId('knob-lag');
  await lag.click({ clickCount: 3 });
  // One key every 80 ms: several frames redraw between keys.
  await page.keyboard.type('45000', { delay: 80 });
  await page.waitForTimeout(300);
  assert.equal(await lag.inputValue(), '45000', 'a redraw put the old value back while typing');
  await page.keyboard.press('Enter');
  await page.waitForTimeout(300);
  assert.equal(await lag.inputValue(), '45000');
  await showTool(page, 'recent');
  assert.match(await live(page).getByTestId('recent-events').innerText(), /set replica\.lag\.time\.max\.ms=45000/);

  await showTool(page, 'knobs');
  const linger = live(page).getByTestId('knob-linger');
  await linger.click({ clickCount: 3 });
  await page.keyboard.type('4a', { delay: 80 });
  await page.keyboard.press('Enter');
  assert.match(await live(page).getByTestId('knob-error').innerText(), /linger\.ms must be a whole number .*\(got "4a"\)/);
  assert.equal(await linger.inputValue(), '4a', 'what was typed stays next to its message');
  await live(page).getByTestId('cluster-play').click();
  assert.deepEqual(problems, []);
  await page.close();
});

test('the speed menu says when this device cannot keep up with the speed asked for', async () => {
  const { page, problems } = await openApp(browser, { query: '?preset=bench', view: 'map' });
  // A device some times slower cannot play the bench cluster at 100×. How
  // much slower depends on the machine the test runs on, so the throttle
  // grows until the page says it cannot keep up.
  await live(page).getByTestId('cluster-speed').selectOption('100000');
  const cdp = await page.context().newCDPSession(page);
  let shown = false;
  for (const rate of [6, 12, 24, 48]) {
    await cdp.send('Emulation.setCPUThrottlingRate', { rate });
    shown = await page.waitForFunction(() => document.querySelector('[data-testid="speed-reached"]'), null, { timeout: 15000 })
      .then(() => true, () => false);
    if (shown) break;
  }
  assert.ok(shown, 'the page never said it could not keep up, even 48 times slower');
  const [reached, note] = await page.evaluate(() => {
    const section = document.querySelector('[data-testid="cluster"]');
    return [Number(section.dataset.speedReached), section.querySelector('[data-testid="speed-reached"]')?.textContent];
  });
  assert.ok(reached > 0 && reached < 90000, `reached ${reached} ms per second`);
  assert.match(note, /^reaching [\d.]+× \(this device cannot keep up\)$/);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
  await live(page).getByTestId('cluster-play').click();
  // (The pause redraws the toolbar on the next render, not at once.)
  await page.waitForFunction(() => !document.querySelector('[data-testid="speed-reached"]'), null, { timeout: 10000 })
    .catch(() => assert.fail('paused: the page still says a speed is being reached'));
  assert.deepEqual(problems, []);
  await page.close();
});

test('shape knobs start a new run, bad values get a message, and the topology exports as Mermaid', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-rf').fill('5');
  await live(page).getByTestId('knob-rf').dispatchEvent('change');
  await live(page).getByTestId('knob-apply').click();
  assert.match(await live(page).getByTestId('knob-error').innerText(), /replication factor/);
  await live(page).getByTestId('knob-brokers').fill('5');
  await live(page).getByTestId('knob-brokers').dispatchEvent('change');
  await live(page).getByTestId('knob-partitions').fill('6');
  await live(page).getByTestId('knob-partitions').dispatchEvent('change');
  await live(page).getByTestId('knob-apply').click();
  assert.equal(await live(page).getByTestId('knob-error').count(), 0);
  await live(page).getByTestId('cluster-run-10s').click();
  assert.ok(await live(page).getByTestId('node-broker-5').isVisible());
  assert.equal(await live(page).locator('[data-testid="topics-table"] tbody tr').count(), 6);
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-linger').fill('-3');
  await live(page).getByTestId('knob-linger').dispatchEvent('change');
  assert.match(await live(page).getByTestId('knob-error').innerText(), /linger.ms/);

  await showTool(page, 'export');
  await live(page).getByTestId('export-mermaid').click();
  const mermaid = await live(page).getByTestId('mermaid-text').inputValue();
  assert.match(mermaid, /^flowchart LR/);
  assert.match(mermaid, /broker_5/);
  assert.match(mermaid, /-->\|Fetch\|/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('messages move along the edges while playing slowly, and not with reduced motion; phone width stacks', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-speed').selectOption('10');
  await live(page).getByTestId('cluster-play').click();
  await page.waitForFunction(() => document.querySelectorAll('svg.map circle.message').length > 0, null, { timeout: 10000 });
  await live(page).getByTestId('cluster-play').click();
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page scrolls sideways (${width}px)`);
  await page.screenshot({ path: screenshotPath('map-phone'), fullPage: true });
  await page.emulateMedia({ reducedMotion: 'reduce' });
  await page.reload({ waitUntil: 'networkidle' });
  await page.getByTestId('view-map').waitFor();
  await withSimulator(page);
  await live(page).getByTestId('cluster-speed').selectOption('10');
  await live(page).getByTestId('cluster-play').click();
  await page.waitForTimeout(1500);
  assert.equal(await page.locator('svg.map circle.message').count(), 0);
  await live(page).getByTestId('cluster-play').click();
  assert.deepEqual(problems, []);
  await page.close();
});

test('min.insync.replicas above the replication factor is explained as Kafka counts it: acks=all then needs every replica', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await showTool(page, 'knobs');
  const knob = live(page).getByTestId('knob-min-insync');
  await knob.fill('4');
  await knob.press('Enter');
  const warning = live(page).getByTestId('knob-min-insync-warning');
  await warning.waitFor();
  assert.match(await warning.innerText(), /min.insync.replicas=4 is above the replication factor \(3\)\. Kafka accepts it and counts 3 instead/);
  // As the warning says: with all three replicas in sync, acks=all writes go through.
  await live(page).getByTestId('node-producer-0').click();
  await live(page).getByTestId('inspector-produce').click();
  await live(page).getByTestId('cluster-run-1s').click();
  assert.match(await live(page).getByTestId('node-producer-0').textContent(), /no errors/);
  await showTool(page, 'knobs');
  await knob.fill('2');
  await knob.press('Enter');
  await page.waitForFunction(() => !document.querySelector('[data-testid="knob-min-insync-warning"]'));
  assert.deepEqual(problems, []);
  await page.close();
});

test('every replica row\'s HW/LEO text fits inside its row on the nine-broker cluster', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-brokers').fill('9');
  await live(page).getByTestId('knob-brokers').dispatchEvent('change');
  await live(page).getByTestId('knob-apply').click();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="cluster"] [data-testid^="node-broker-"]').length === 9);
  await live(page).getByTestId('node-producer-0').click();
  await live(page).getByTestId('inspector-produce').click();
  for (let index = 0; index < 3; index++) await live(page).getByTestId('cluster-run-10s').click();
  const overflows = await live(page).getByTestId('map').evaluate((map) => [...map.querySelectorAll('.replica')].flatMap((replica) => {
    const row = replica.querySelector('.row').getBBox();
    const text = replica.querySelector('.offsets').getBBox();
    const bar = replica.querySelector('.bar-bg').getBBox();
    const inside = text.x >= bar.x + bar.width && text.x + text.width <= row.x + row.width + 0.5;
    return inside ? [] : [`${replica.dataset.testid}: ${replica.querySelector('.offsets').textContent}`];
  }));
  assert.equal(await live(page).getByTestId('map').locator('.replica').count() >= 9, true);
  assert.deepEqual(overflows, []);
  await page.screenshot({ path: screenshotPath('map-bench-offsets'), fullPage: false });
  assert.deepEqual(problems, []);
  await page.close();
});

test('on a phone the map is one column whose smallest text is at least 11 px, with no sideways scrolling, and the steps read as a list', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, query: '?play=0&story=happy-path&step=12', view: 'map' });
  await live(page).getByTestId('cluster-run-1s').click();
  const measure = (svg) => {
    const box = svg.viewBox.baseVal;
    const scale = svg.getBoundingClientRect().width / box.width;
    const sizes = [...svg.querySelectorAll('text')]
      .filter((text) => text.textContent.trim() && text.getBoundingClientRect().width > 0)
      .map((text) => parseFloat(getComputedStyle(text).fontSize) * scale);
    return { smallest: Math.min(...sizes), width: svg.getBoundingClientRect().width, frame: svg.parentElement.clientWidth, viewBox: box.width };
  };
  const map = await live(page).getByTestId('map').evaluate(measure);
  assert.ok(map.viewBox < 400, `the phone map is one column (${map.viewBox} units wide)`);
  assert.ok(map.smallest >= 11, `map text down to ${map.smallest.toFixed(1)} px`);
  assert.ok(map.width <= map.frame + 1, `the map needs panning (${map.width} px in ${map.frame} px)`);
  await live(page).getByTestId('map').screenshot({ path: screenshotPath('map-phone-column') });
  // The steps read as a vertical list on a phone.
  await showView(page, 'stories');
  const list = await steps(page).getByTestId('sequence-diagram').evaluate((list) => ({
    tag: list.tagName,
    smallest: Math.min(...[...list.querySelectorAll('li *')].map((element) => parseFloat(getComputedStyle(element).fontSize))),
    overflows: list.scrollWidth > list.clientWidth + 1,
    rows: list.querySelectorAll('li').length,
  }));
  assert.equal(list.tag, 'OL');
  assert.ok(list.rows > 5 && !list.overflows, JSON.stringify(list));
  assert.ok(list.smallest >= 11, `step text down to ${list.smallest} px`);
  await steps(page).getByTestId('seq-step-13').click();
  assert.equal(await steps(page).getAttribute('data-step'), '13');
  const stepsMap = await steps(page).getByTestId('map').evaluate(measure);
  assert.ok(stepsMap.smallest >= 11, `the steps' map text down to ${stepsMap.smallest.toFixed(1)} px`);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page scrolls sideways (${width}px)`);
  await steps(page).getByTestId('sequence-diagram').screenshot({ path: screenshotPath('steps-phone-diagram') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('live storage knobs: small segments and retention.bytes make the next retention check delete old segments', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await setKnob(page, 'knob-internal-segment-bytes', '1024');
  await setKnob(page, 'knob-retention-bytes', '1024');
  await setKnob(page, 'knob-retention-bytes', 'lots');
  assert.match(await live(page).getByTestId('knob-error').innerText(), /retention.bytes must be a whole number/);
  // Kafka 4.1's floor (KIP-1030), with its own message.
  await setKnob(page, 'knob-segment-bytes', '1024');
  assert.match(await live(page).getByTestId('knob-error').innerText(), /Invalid value 1024 for configuration segment.bytes: Value must be at least 1048576/);
  await setKnob(page, 'knob-internal-segment-bytes', '10');
  assert.match(await live(page).getByTestId('knob-error').innerText(), /internal.segment.bytes must be at least 14/);
  await setKnob(page, 'knob-internal-segment-bytes', '1024');
  for (let round = 0; round < 8; round++) {
    await live(page).getByTestId('cluster-produce').click();
    await live(page).getByTestId('cluster-run-10s').click();
  }
  // The brokers check retention every 5 minutes (log.retention.check.interval.ms):
  // skip ahead.
  const before = Number((await live(page).getByTestId('cluster-time').textContent()).replace(/[^\d]/g, ''));
  await live(page).getByTestId('cluster-skip-10m').click();
  const after = Number((await live(page).getByTestId('cluster-time').textContent()).replace(/[^\d]/g, ''));
  assert.ok(after > before, `time did not move: ${before} -> ${after}`);
  const deleted = live(page).locator('[data-testid^="deleted-"]');
  assert.ok(await deleted.count() >= 1, 'no replica shows deleted segments');
  const row = (await deleted.first().getAttribute('data-testid')).replace(/^deleted-/, 'replica-');
  await live(page).getByTestId(row).focus();
  await page.keyboard.press('Enter');
  await showTool(page, 'inspector');
  assert.match(await live(page).getByTestId('inspector-facts').innerText(), /Log start offset\s+[1-9]\d* \(retention deleted everything below it\)/);
  assert.match(await live(page).getByTestId('inspector-files').innerText(), /\.log/);
  await live(page).getByTestId('inspector').screenshot({ path: screenshotPath('map-replica-files') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the live knobs are grouped as Kafka groups its settings: producer, topic, broker, consumer', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  const groups = {
    'knobs-producer': ['knob-acks', 'knob-linger', 'knob-idempotence'],
    'knobs-topic': ['knob-min-insync', 'knob-retention-ms', 'knob-retention-bytes', 'knob-segment-bytes', 'knob-internal-segment-bytes'],
    'knobs-broker': ['knob-unclean', 'knob-lag'],
  };
  for (const [group, knobs] of Object.entries(groups)) {
    for (const knob of knobs) {
      assert.equal(await live(page).getByTestId(group).getByTestId(knob).count(), 1, `${knob} is not under ${group}`);
    }
  }
  await showTool(page, 'knobs');
  assert.match(await live(page).getByTestId('knobs-consumer').innerText(), /select it on the map/);
  await live(page).getByTestId('knobs').screenshot({ path: screenshotPath('map-knobs-grouped') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('compaction and quota knobs, a member\'s auto.offset.reset, and skipping an hour with its progress', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  // A fetch quota for every client id: the consumers get throttled.
  await setKnob(page, 'knob-consumer-byte-rate', '0');
  assert.match(await live(page).getByTestId('knob-error').innerText(), /consumer_byte_rate must be a whole number of bytes a second, at least 1/);
  await setKnob(page, 'knob-consumer-byte-rate', '200');
  for (let round = 0; round < 3; round++) {
    await live(page).getByTestId('cluster-produce').click();
    await live(page).getByTestId('cluster-run-10s').click();
  }
  await showTool(page, 'recent');
  assert.match(await live(page).getByTestId('recent-events').innerText(), /throttles consumer-\d+ for \d+ ms: its fetches took more bytes than its quota \(consumer_byte_rate\)/);
  await live(page).getByTestId('knobs-quota').screenshot({ path: screenshotPath('map-knobs-quota') });
  // Compaction settings, with Kafka's names and bounds.
  await showTool(page, 'knobs');
  await live(page).getByTestId('knob-cleanup-policy').selectOption('compact');
  assert.equal(await live(page).getByTestId('knob-error').count(), 0);
  await setKnob(page, 'knob-dirty-ratio', '2');
  assert.match(await live(page).getByTestId('knob-error').innerText(), /min.cleanable.dirty.ratio must be a number from 0 to 1/);
  await setKnob(page, 'knob-dirty-ratio', '0.1');
  await setKnob(page, 'knob-delete-retention', '15000');
  assert.equal(await live(page).getByTestId('knob-error').count(), 0);
  assert.equal(await live(page).getByTestId('knob-cleanup-policy').inputValue(), 'compact');
  // A compacted topic refuses records without a key (INVALID_RECORD).
  await live(page).getByTestId('cluster-produce').click();
  await live(page).getByTestId('cluster-run-1s').click();
  await showTool(page, 'recent');
  assert.match(await live(page).getByTestId('recent-events').innerText(), /failed with INVALID_RECORD/);
  // A member's auto.offset.reset, from its inspector.
  await live(page).getByTestId('member-consumer-0').click();
  await showTool(page, 'inspector');
  await live(page).getByTestId('inspector-reset-consumer-0').selectOption('none');
  assert.match(await live(page).getByTestId('inspector-facts').innerText(), /auto.offset.reset\s+none/);
  assert.match(await live(page).getByTestId('inspector-facts').innerText(), /Quota\s+/);
  // Skip an hour: it runs a minute at a time, shows how far it got, and
  // can be stopped.
  const time = async () => Number((await live(page).getByTestId('cluster-time').textContent()).replace(/[^\d]/g, ''));
  const before = await time();
  await live(page).getByTestId('cluster-skip-1h').click();
  await live(page).getByTestId('skip-progress').waitFor();
  await page.waitForFunction(() => /skipped [2-9]\d* of 60 min|skipped \d{2} of 60 min/.test(document.querySelector('[data-testid="skip-progress"]')?.textContent ?? ''));
  await live(page).getByTestId('skip-progress').screenshot({ path: screenshotPath('map-skip-progress') });
  await live(page).getByTestId('cluster-skip-stop').click();
  await live(page).getByTestId('cluster-skip-1h').waitFor();
  const stopped = await time();
  assert.ok(stopped >= before + 120000 && stopped < before + 3600000, `${before} -> ${stopped}`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a replica lists its latest records, one colour per key; adding a partition grows the topic and the group takes it', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await clickNode(page, 'node-producer-0');
  await live(page).getByTestId('inspector-produce-keyed').click();
  await live(page).getByTestId('inspector-produce').click();
  await live(page).getByTestId('cluster-run-10s').click();
  // A replica that holds records, selected from the keyboard (edges cross rows).
  const withRecords = await live(page).locator('[data-testid^="replica-1-orders-"]').evaluateAll((rows) => rows
    .find((row) => /log end offset [1-9]/.test(row.querySelector('title').textContent)).dataset.testid);
  await live(page).getByTestId(withRecords).focus();
  await page.keyboard.press('Enter');
  const strip = live(page).getByTestId('inspector-records');
  await strip.waitFor();
  const chips = await strip.locator('.record-chip').evaluateAll((items) => items.map((item) => ({
    offset: Number(item.dataset.offset), key: item.dataset.key, hue: [...item.classList].find((name) => name.startsWith('hue-')),
  })));
  assert.ok(chips.length > 0 && chips.length <= 24, `${chips.length} chips`);
  assert.ok(chips.every((chip, index) => index === 0 || chips[index - 1].offset < chip.offset), 'oldest first, in offset order');
  const hues = new Map();
  for (const chip of chips.filter((chip) => chip.key)) {
    assert.equal(hues.get(chip.key) ?? chip.hue, chip.hue, `key ${chip.key} has one colour`);
    hues.set(chip.key, chip.hue);
  }
  await live(page).getByTestId('inspector').screenshot({ path: screenshotPath('map-replica-records') });
  // Add a partition: the controller writes it at once; the group takes it
  // after the clients' next metadata refresh (5 minutes).
  const add = live(page).getByTestId('inspector-add-partition');
  const [, before, after] = (await add.innerText()).match(/Add a partition to orders \((\d+) → (\d+)\)/).map(Number);
  assert.equal(after, before + 1);
  await add.click();
  await live(page).getByTestId('cluster-run-1s').click();
  await live(page).locator(`[data-testid$="-orders-${before}"][data-testid^="replica-"]`).first().waitFor();
  await showTool(page, 'recent');
  assert.match(await live(page).getByTestId('recent-events').innerText(), new RegExp(`kafka-topics --alter --topic orders --partitions ${after}`));
  await live(page).getByTestId('cluster-skip-10m').click();
  const owned = await live(page).locator('[data-testid^="member-"]').evaluateAll((rows) => rows.map((row) => row.querySelector('title')?.textContent ?? row.textContent).join('\n'));
  assert.match(owned, new RegExp(`orders-${before}`), 'a member owns the new partition');
  assert.deepEqual(problems, []);
  await page.close();
});

// Selects controller-1 from the keyboard (its box is mostly its log).
const selectController = async (page) => {
  await live(page).getByTestId('node-controller-1').focus();
  await page.keyboard.press('Enter');
};

test('transaction.version is a cluster feature: the knob finalizes it through the controller, and the controller says which', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-1s').click();
  await selectController(page);
  assert.match(await facts(page), /transaction\.version=2: an epoch bump at every EndTxn/);
  await showTool(page, 'knobs');
  assert.equal(await live(page).getByTestId('knob-transaction-version').inputValue(), '2');
  assert.equal(await live(page).getByTestId('knob-verification').isChecked(), true);
  await live(page).getByTestId('knob-transaction-version').selectOption('1');
  await live(page).getByTestId('cluster-run-1s').click();
  await showTool(page, 'recent');
  assert.match(await live(page).getByTestId('recent-events').innerText(), /transaction\.version=1/);
  // controller-1 is still selected: its inspector follows the run.
  assert.match(await facts(page), /transaction\.version=1: producers add partitions themselves/);
  // Verification is a dynamic broker setting.
  await showTool(page, 'knobs');
  assert.equal(await live(page).getByTestId('knob-transaction-version').inputValue(), '1');
  await live(page).getByTestId('knob-verification').uncheck();
  assert.equal(await live(page).getByTestId('knob-verification').isChecked(), false);
  assert.equal(await live(page).getByTestId('knob-error').count(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});
