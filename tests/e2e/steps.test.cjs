// Sequence steps as a learner uses them: pick a story, step through it,
// read the captions, jump with the timeline, open a deep link, ask why,
// fork, export. Every story plays in the browser.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, showView, screenshotPath, steps, within, stepsAttr: attr, chooseStory, shippedStories } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const caption = async (page) => within(page, 'step-caption').innerText();
// Sets the timeline scrubber to a position among the shown steps.
const scrub = async (page, position) => {
  await within(page, 'step-scrubber').evaluate((input, value) => {
    input.value = String(value);
    input.dispatchEvent(new Event('input', { bubbles: true }));
  }, position);
};
const filterName = async (page, name) => within(page, 'filter-name').selectOption(name);

// The stories are the scenario files with a `story` block, in their order:
// a new story is one scenario file, and it is tested here with no change.
const scenarios = shippedStories();
// What a story must show beyond its chapters and the outcome its
// expectations imply.
const EXTRA = {
  'controller-failover': { event: 'controller-elected' },
  'idle-consumer': { event: 'rebalance', text: /gets nothing and idles/ },
  'two-groups': { event: 'rebalance', text: /consumer-\d gets orders-0, orders-1, orders-2/ },
  'follower-leaves-isr': { event: 'isr-changed', text: /\[3, 2\] → \[3, 2, 1\]/ },
  'idempotent-producer': { event: 'duplicate-ignored', text: /answers with the original offsets/ },
  'read-committed': { event: 'marker-written', text: /COMMIT marker .* read_committed consumers/ },
  'exactly-once': { event: 'transaction-rolled-back', text: /count for nothing/ },
  'dead-letter-queue': { event: 'dead-lettered', text: /gave up as its policy says/ },
  retention: { event: 'offset-out-of-range', text: /OFFSET_OUT_OF_RANGE/ },
  compaction: { event: 'log-cleaned', text: /the latest record of each key/ },
  quota: { event: 'throttled', text: /throttle_time_ms=\d+/ },
};
const STORIES = Object.fromEntries(scenarios.map((scenario) => {
  const expects = scenario.expect.map((expectation) => expectation.type);
  const outcome = expects.includes('recordsLost') || expects.includes('someRecordsLost') ? 'loss'
    : expects.includes('producerError') ? 'error' : undefined;
  return [scenario.story.id, {
    chapters: (scenario.story.chapters || []).map((chapter) => chapter.text),
    inputs: scenario.inputs.length,
    outcome,
    ...EXTRA[scenario.story.id],
  }];
}));

test('the stories are the scenario files with a story block, listed in their order on Learn and in the picker', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'stories' });
  const picker = await within(page, 'story-select').locator('option').evaluateAll((options) => options.map((option) => option.value));
  assert.deepEqual(picker, Object.keys(STORIES));
  const learn = await page.getByTestId('learn').locator('a[data-testid^="learn-"]').evaluateAll((links) => links.map((link) => link.dataset.testid.slice('learn-'.length)));
  assert.deepEqual(learn, Object.keys(STORIES));
  assert.ok(Object.keys(STORIES).includes('follower-leaves-isr'), 'the story added as one scenario file is listed');
  assert.deepEqual(problems, []);
  await page.close();
});

test('every story plays in the browser with its captions, chapters and outcomes', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'stories' });
  for (const [id, expected] of Object.entries(STORIES)) {
    await chooseStory(page, id);
    assert.ok(Number(await attr(page, 'data-steps')) > 5, `${id} has no steps`);
    // Play the story for a moment: it advances by itself.
    const start = Number(await attr(page, 'data-step'));
    await within(page, 'step-play').click();
    await page.waitForFunction((from) => Number(document.querySelector('[data-testid="steps"]').dataset.step) > from, start, { timeout: 5000 });
    await within(page, 'step-play').click();
    if (expected.chapters.length) {
      await filterName(page, 'input');
      await within(page, 'step-first').click();
      const chapters = [];
      for (let index = 0; index < expected.inputs; index++) {
        const chapter = within(page, 'step-chapter');
        if (await chapter.count()) chapters.push(await chapter.innerText());
        await within(page, 'step-next').click();
      }
      for (const text of expected.chapters) {
        assert.ok(chapters.some((shown) => shown.includes(text)), `${id}: ${JSON.stringify(text)} not among ${JSON.stringify(chapters)}`);
      }
    }
    if (expected.outcome) {
      await filterName(page, expected.outcome === 'loss' ? 'records-lost' : 'produce-failed');
      await within(page, 'step-first').click();
      assert.equal(await within(page, 'step-outcome').textContent(), expected.outcome, id);
    }
    if (expected.event) {
      await filterName(page, expected.event);
      await within(page, 'step-last').click();
      if (expected.text) assert.match(await caption(page), expected.text, id);
      else assert.ok((await caption(page)).length > 10, id);
    }
    await within(page, 'filter-name').selectOption('');
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('every story opens at the step its link names, from Learn or from an address', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  // The learner's map has run for 10 s; a Learn link must not reload the
  // page and throw that away.
  await page.getByTestId('cluster').getByTestId('cluster-run-10s').click();
  const mapTime = await page.getByTestId('cluster').getByTestId('cluster-time').textContent();
  await showView(page, 'learn');
  await page.getByTestId('learn-exercise').click();
  await page.getByTestId('view-stories').waitFor();
  await page.waitForFunction(() => document.querySelector('[data-testid="steps"]')?.dataset.story === 'exercise');
  // A story opens on its first chapter.
  assert.equal(await attr(page, 'data-step'), await attr(page, 'data-opening'));
  assert.equal(await page.getByTestId('cluster').getByTestId('cluster-time').textContent(), mapTime, 'the page reloaded');
  assert.ok(page.url().endsWith(`?play=0&story=exercise&step=${await attr(page, 'data-step')}#steps`), page.url());
  for (const id of Object.keys(STORIES)) {
    await page.goto(`${page.url().split('?')[0]}?play=0&story=${id}&step=4`, { waitUntil: 'networkidle' });
    await steps(page).waitFor();
    assert.equal(await attr(page, 'data-story'), id);
    assert.equal(await attr(page, 'data-step'), '4', id);
    // The position names the step's own number, the one the link names.
    assert.match(await within(page, 'step-position').textContent(), /^step 4 of \d+/);
    assert.ok((await caption(page)).length > 10, id);
  }
  assert.deepEqual(problems, []);
  await page.close();
});

test('a link to no such story or step says so; a filter that hides the current step moves to the nearest shown one', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=no-such-story&step=2' });
  await steps(page).waitFor();
  assert.match(await within(page, 'link-problem').innerText(), /"no-such-story" that does not exist/);
  await page.goto(`${page.url().split('?')[0]}?play=0&story=happy-path&step=999`, { waitUntil: 'networkidle' });
  await steps(page).waitFor();
  assert.match(await within(page, 'link-problem').innerText(), /step 999, but the story has steps 1 to \d+/);
  assert.equal(await attr(page, 'data-step'), await attr(page, 'data-steps'), 'the nearest step is the last');
  await within(page, 'step-first').click();
  assert.equal(await within(page, 'link-problem').count(), 0, 'moving clears the message');

  // The first step comes before any produce request; a filter on Produce
  // hides it, and the steps move to the nearest step the filter keeps.
  await filterName(page, 'Produce');
  const step = Number(await attr(page, 'data-step'));
  assert.ok(step > 1, `still at step ${step}`);
  assert.match(await caption(page), /produce/i);
  assert.deepEqual(problems, []);
  await page.close();
});

test('loading the page never rewrites its address', async () => {
  for (const address of ['?preset=bench&play=0#sandbox', '?play=0&story=happy-path&step=3#map']) {
    const { page, problems } = await openApp(browser, { query: address });
    await page.waitForTimeout(500);
    assert.ok(page.url().endsWith(address), `${page.url()} is not ${address}`);
    assert.deepEqual(problems, []);
    await page.close();
  }
});

test('the happy path shows metadata, produce, append, fetch, high watermark and acknowledgement in order', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=happy-path' });
  await filterName(page, 'input');
  await within(page, 'step-first').click();
  await within(page, 'filter-name').selectOption('');
  const captions = [];
  for (let index = 0; index < 50; index++) {
    captions.push(await caption(page));
    await within(page, 'step-next').click();
  }
  const order = [/asks broker-\d for metadata/, /sends a batch to broker-\d, the leader/, /appends offsets 0–9 of orders-0.*The high watermark stays at 0/s,
    /a follower, fetches from broker-\d/, /high watermark of orders-0 moves from 0 to 10/, /answers producer-0: ProduceResponse \[orders-0 baseOffset=0\]/,
    /producer-0 learns that 10 record\(s\) of orders-0 are written, starting at offset 0/];
  let from = 0;
  for (const pattern of order) {
    const found = captions.slice(from).findIndex((text) => pattern.test(text));
    assert.ok(found >= 0, `${pattern} not found after step ${from}:\n${captions.slice(from).join('\n')}`);
    from += found;
  }
  // The diagram draws the current step and the map highlights its edge.
  assert.equal(await steps(page).locator('svg.sequence .row.current').count(), 1);
  await page.screenshot({ path: screenshotPath('steps-happy-path'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('deep links open at their step; rewinding and replaying reach the same trace hash', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=acks1-loss&step=30' });
  assert.equal(await attr(page, 'data-step'), '30');
  const linked = await caption(page);
  const hash = await attr(page, 'data-trace-hash');
  assert.match(await within(page, 'step-link').getAttribute('href'), /story=acks1-loss&step=30/);
  assert.match(page.url(), /story=acks1-loss&step=30/);
  // Rewind to the start with the timeline, then come back step by step.
  await scrub(page, 0);
  assert.ok(Number(await attr(page, 'data-step')) < 30);
  assert.notEqual(await attr(page, 'data-trace-hash'), hash);
  await scrub(page, 20);
  for (let step = Number(await attr(page, 'data-step')); step < 30; step++) await within(page, 'step-next').click();
  assert.equal(await attr(page, 'data-step'), '30');
  assert.equal(await attr(page, 'data-trace-hash'), hash);
  assert.equal(await caption(page), linked);
  // A fresh page at the same link agrees.
  const again = await browser.newPage();
  await again.goto(page.url(), { waitUntil: 'networkidle' });
  await again.getByTestId('steps').waitFor();
  assert.equal(await again.getByTestId('steps').getAttribute('data-trace-hash'), hash);
  await again.close();
  assert.deepEqual(problems, []);
  await page.close();
});

test('why shows the chain of causes; a fork discards the future; the steps export as Mermaid', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=exercise' });
  await filterName(page, 'produce-failed');
  await within(page, 'step-first').click();
  for (let index = 0; index < 30 && !/NOT_ENOUGH_REPLICAS/.test(await caption(page)); index++) {
    await within(page, 'step-next').click();
  }
  assert.match(await caption(page), /NOT_ENOUGH_REPLICAS/);
  // The map beside the diagram shows the state at this step: the producer's
  // refusal, and orders-1 led by broker-3 alone.
  assert.match(await within(page, 'node-producer-0').textContent(), /NOT_ENOUGH_REPLICAS/);
  assert.match(await within(page, 'replica-3-orders-1').locator(':scope > title').textContent(), /: leader, in sync/);
  await within(page, 'step-why').click();
  const chain = await within(page, 'why-chain').locator('li').allInnerTexts();
  assert.ok(chain.length >= 2, JSON.stringify(chain));
  assert.ok(chain.some((line) => /Produce/.test(line)), JSON.stringify(chain));

  // Later, the unclean election: broker-1 leads orders-1 again, with less.
  await filterName(page, 'records-lost');
  await within(page, 'step-first').click();
  // (The controller has committed the election; broker-1 itself learns it
  // from the next metadata update.)
  assert.match(await within(page, 'last-election').textContent(), /→ broker-1/);
  assert.match(await within(page, 'replica-1-orders-1').locator(':scope > title').textContent(), /in sync, log end offset 10,/);
  await within(page, 'filter-name').selectOption('');
  await chooseStory(page, 'happy-path');
  await filterName(page, 'input');
  await within(page, 'step-first').click();
  const before = Number(await attr(page, 'data-steps'));
  for (const broker of [1, 2, 3]) {
    await within(page, 'fork-input').selectOption(`kill-${broker}`);
    await within(page, 'fork-apply').click();
  }
  assert.match(await within(page, 'fork-list').innerText(), /kill broker-1, then kill broker-2, then kill broker-3/);
  assert.notEqual(Number(await attr(page, 'data-steps')), before);
  // The forks are kept in the link: opening it replays them to the same run.
  assert.match(page.url(), /&fork=\d+:kill-1,\d+:kill-2,\d+:kill-3#steps$/);
  const forked = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await forked.goto(page.url(), { waitUntil: 'networkidle' });
  await steps(forked).waitFor({ timeout: 30000 });
  assert.equal(await attr(forked, 'data-trace-hash'), await attr(page, 'data-trace-hash'));
  assert.equal(await attr(forked, 'data-step'), await attr(page, 'data-step'));
  assert.match(await within(forked, 'fork-list').innerText(), /kill broker-1, then kill broker-2, then kill broker-3/);
  await forked.goto(page.url().replace(/&fork=[^#]*/, '&fork=3:explode'), { waitUntil: 'networkidle' });
  await steps(forked).waitFor({ timeout: 30000 });
  assert.match(await within(forked, 'link-problem').innerText(), /fork "3:explode" names no such step or choice/);
  await forked.close();
  // With every broker dead nothing is acknowledged any more.
  const kinds = await within(page, 'filter-name').locator('option').allTextContents();
  assert.ok(!kinds.includes('acknowledged'), JSON.stringify(kinds));

  await within(page, 'filter-name').selectOption('');
  await within(page, 'export-sequence').click();
  const text = await within(page, 'sequence-mermaid').inputValue();
  assert.match(text, /^sequenceDiagram\n/);
  // Three forks at the producer's send, each killing a broker: the run
  // after them holds the three kills (a seek into a fork's first events
  // once replayed the old future there, and the kills after the first
  // were made on a cluster where broker-1 still ran).
  assert.match(text, /participant broker_1 as broker-1/);
  for (const broker of [1, 2, 3]) {
    assert.match(text, new RegExp(`Note over broker_${broker}: killed`));
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await steps(page).screenshot({ path: screenshotPath('steps-phone') });
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page scrolls sideways (${width}px)`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('why on a loss names the acknowledgement and the followers that never had the records', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=acks1-loss' });
  await filterName(page, 'records-lost');
  await within(page, 'step-first').click();
  assert.equal(await within(page, 'step-outcome').textContent(), 'loss');
  await within(page, 'step-why').click();
  const chain = await within(page, 'why-chain').locator('li').allInnerTexts();
  assert.ok(chain.some((line) => /records acknowledged.*told these records were written/.test(line)), JSON.stringify(chain));
  assert.ok(chain.some((line) => /were only on broker-3; broker-1 and broker-2 never fetched them/.test(line)), JSON.stringify(chain));
  assert.ok(chain.some((line) => /cut off from the leader/.test(line)), JSON.stringify(chain));
  assert.deepEqual(problems, []);
  await page.close();
});

test('the map beside the steps draws the last stable offset where a transaction is open, and the markers in the log', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'stories' });
  await chooseStory(page, 'exactly-once');
  // The first COMMIT marker: the zombie's transaction on receipts-0 is
  // still open, so that partition's last stable offset is below its HW.
  await filterName(page, 'marker-written');
  await within(page, 'step-first').click();
  const lso = steps(page).getByTestId('map').locator('[data-testid^="lso-"]');
  assert.ok(await lso.count() >= 1, 'no last stable offset drawn');
  const row = steps(page).getByTestId('map').locator('.replica', { has: page.locator('[data-testid^="lso-"]') }).first();
  assert.match(await row.locator(':scope > title').textContent(), /receipts-0 .*, last stable offset 0/);
  await within(page, 'step-last').click();
  assert.ok(await steps(page).getByTestId('map').locator('.replica .marker').count() >= 1, 'no marker drawn');
  await steps(page).getByTestId('map').screenshot({ path: screenshotPath('steps-map-last-stable-offset') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the retention story: deleted segments on the map, and the reset of the slow group at that step', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'stories' });
  await chooseStory(page, 'retention');
  await filterName(page, 'segments-deleted');
  await within(page, 'step-first').click();
  assert.match(await caption(page), /retention check deleted \d+ whole segment/);
  assert.ok(await steps(page).getByTestId('map').locator('[data-testid^="deleted-"]').count() >= 1, 'no deleted stretch drawn');
  await filterName(page, 'offset-reset');
  await within(page, 'step-first').click();
  await within(page, 'step-groups').locator('summary').click();
  const resets = await within(page, 'step-groups').locator('[data-testid^="step-reset-nightly-report-"]').allTextContents();
  assert.ok(resets.some((text) => /^\d+ → \d+ \(OFFSET_OUT_OF_RANGE\)$/.test(text)), `no reset shown: ${JSON.stringify(resets)}`);
  await within(page, 'step-groups').screenshot({ path: screenshotPath('steps-retention-reset') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the compaction story: the map marks how far the log is clean, and a tombstone is removed later', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'stories' });
  await chooseStory(page, 'compaction');
  await filterName(page, 'log-cleaned');
  await within(page, 'step-first').click();
  assert.match(await caption(page), /compacted its copy of profiles-0 below offset \d+/);
  const cleaned = steps(page).getByTestId('map').locator('[data-testid^="cleaned-"]');
  assert.ok(await cleaned.count() >= 1, 'no clean mark drawn');
  // A later cleaning removes the tombstone, once delete.retention.ms has passed.
  let removed = false;
  for (let step = 0; step < 40 && !removed; step++) {
    await within(page, 'step-next').click();
    removed = /tombstone\(s\) older than delete.retention.ms went too/.test(await caption(page));
  }
  assert.ok(removed, 'no cleaning removed the tombstone');
  await steps(page).getByTestId('map').screenshot({ path: screenshotPath('steps-compaction') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the quota story: the map shows the throttled producer, the other producer is never throttled', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'stories' });
  await chooseStory(page, 'quota');
  await filterName(page, 'throttled');
  await within(page, 'step-first').click();
  assert.match(await caption(page), /throttle_time_ms=\d+.*other clients are not slowed down/s);
  const map = steps(page).getByTestId('map');
  assert.match(await map.getByTestId('node-producer-0').textContent(), /THROTTLED until \d+ ms/);
  assert.doesNotMatch(await map.getByTestId('node-producer-1').textContent(), /THROTTLED/);
  await map.screenshot({ path: screenshotPath('steps-quota-throttled') });
  assert.deepEqual(problems, []);
  await page.close();
});
