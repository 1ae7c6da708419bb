// Stories that get to the point, as a learner meets them at 1280×800 and on
// a 390×844 phone: every shipped story opens on its first chapter with at
// most 150 steps in view and its start-up folded into one step; chapter and
// key-moment jumps land where they say, by button and by key; every step is
// one switch away; a story looks the same from the picker as from a link;
// "Why?" runs in causal order back to the input.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath, steps, within, stepsAttr: attr, chooseStory, shippedStories, seriousViolations } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const number = async (page, name) => Number(await attr(page, name));
const stories = shippedStories();

for (const [label, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]]) {
  test(`${label}: every story opens on its first chapter with at most 150 steps, and its chapter jumps land on the chapter's input`, async () => {
    const { page, problems } = await openApp(browser, { width, height, query: '?play=0#steps' });
    for (const scenario of stories) {
      const id = scenario.story.id;
      await chooseStory(page, id);
      assert.equal(await attr(page, 'data-step'), await attr(page, 'data-opening'), `${id} does not open on its first chapter`);
      assert.ok(await number(page, 'data-shown') <= 150, `${id} shows ${await attr(page, 'data-shown')} steps`);
      assert.ok(await number(page, 'data-pace-ms') * await number(page, 'data-shown') <= 90000, `${id} plays longer than 90 s`);
      assert.equal(await within(page, 'step-chapter').count(), 1, `${id}: the first step shown is not a chapter`);
      // Nothing of any story scrolls sideways (a long chapter strip did).
      const wide = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(wide <= width, `${id}: the page scrolls sideways at ${width} px (${wide} px)`);
      const chapters = (scenario.story.chapters || []).map((chapter) => chapter.text);
      // Each chapter button lands on that chapter's input step, whose
      // caption is the chapter's text.
      // (A story of one chapter has no chapter strip: its caption says it.)
      const buttons = await within(page, 'story-timeline').locator('.chapter-button').count();
      assert.equal(buttons, chapters.length > 1 ? chapters.length : 0, id);
      for (let chapter = 0; chapters.length > 1 && chapter < chapters.length; chapter++) {
        await within(page, `chapter-${chapter + 1}`).click();
        assert.equal(await within(page, 'step-chapter').innerText(), chapters[chapter], `${id} chapter ${chapter + 1}`);
        assert.equal(await within(page, `chapter-${chapter + 1}`).getAttribute('aria-current'), 'step');
        // The chapter's title shows beside the buttons, not only as a tooltip.
        assert.ok((await within(page, 'chapter-now').innerText()).startsWith(`Chapter ${chapter + 1} of ${chapters.length}: `), `${id} chapter ${chapter + 1}`);
      }
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(overflow <= width, `the page scrolls sideways at ${width} px (${overflow} px)`);
    await steps(page).screenshot({ path: screenshotPath(`stories-${label}`) });
    assert.deepEqual(problems, []);
    await page.close();
  });
}

test('the start-up folds into one step that opens on demand; every step is one switch away; keys jump by chapter and key moment', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=exercise#steps' });
  const opening = await number(page, 'data-step');
  const shown = await number(page, 'data-shown');
  const all = await number(page, 'data-steps');
  assert.ok(shown < all, 'the exercise shows every step by default');
  // One step before the first chapter: the folded start-up.
  await within(page, 'step-first').click();
  assert.match(await within(page, 'startup-caption').innerText(), /^The cluster starts \((0–\d+|at 0) ms\): before the story begins, \d+ steps get it ready, shown here as this one\./);
  await within(page, 'startup-open').click();
  assert.equal(await attr(page, 'data-step'), '1', 'opening the start-up goes to its first step');
  assert.ok(await number(page, 'data-shown') > shown);
  await within(page, 'startup-fold').click();
  assert.equal(await number(page, 'data-shown'), shown);
  // Every step, and back.
  await within(page, 'every-step').click();
  assert.equal(await within(page, 'every-step').getAttribute('aria-pressed'), 'true');
  assert.equal(await number(page, 'data-shown'), all);
  await within(page, 'every-step').click();
  assert.equal(await number(page, 'data-shown'), shown);
  // Keys: ] next chapter, [ back, Shift+→ the next key moment.
  await within(page, 'chapter-1').click();
  assert.equal(await number(page, 'data-step'), opening);
  await steps(page).focus();
  await page.keyboard.press(']');
  assert.equal(await within(page, 'chapter-2').getAttribute('aria-current'), 'step');
  await page.keyboard.press('[');
  assert.equal(await number(page, 'data-step'), opening);
  await page.keyboard.press('Shift+ArrowRight');
  assert.ok(await number(page, 'data-step') > opening);
  const moment = await number(page, 'data-step');
  await within(page, 'moment-next').click();
  assert.ok(await number(page, 'data-step') > moment);
  await within(page, 'moment-prev').click();
  assert.equal(await number(page, 'data-step'), moment);
  assert.match(await within(page, 'moment-counts').innerText(), /election/);
  await steps(page).screenshot({ path: screenshotPath('stories-exercise-timeline') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a story looks the same from the picker as from a link, with no filter applied', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=acks1-loss#steps' });
  const linked = [await attr(page, 'data-step'), await attr(page, 'data-shown')];
  assert.equal(await within(page, 'filter-partition').inputValue(), '');
  await chooseStory(page, 'happy-path');
  await chooseStory(page, 'acks1-loss');
  assert.deepEqual([await attr(page, 'data-step'), await attr(page, 'data-shown')], linked);
  assert.equal(await within(page, 'filter-partition').inputValue(), '');
  assert.deepEqual(problems, []);
  await page.close();
});

test('"Why?" on an election runs oldest first, from the input that started it', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=acks1-loss#steps' });
  await within(page, 'filter-name').selectOption('leader-elected');
  await within(page, 'step-first').click();
  await within(page, 'step-why').click();
  // (Each line's text includes its raw message, folded beside the plain words.)
  const chain = await within(page, 'why-chain').locator('li').allTextContents();
  assert.ok(await within(page, 'why-chain').locator('details.why-raw').count() > 0, 'no message is said in plain words');
  assert.match(chain[0], /input: kill broker-3 \(where this starts\)/, JSON.stringify(chain));
  assert.ok(chain.some((line) => /fenced broker-3/.test(line)), JSON.stringify(chain));
  assert.match(chain[chain.length - 1], /leader broker-1/, JSON.stringify(chain));
  const times = chain.map((line) => Number(line.match(/^(\d+) ms/)[1]));
  assert.deepEqual(times, [...times].sort((a, b) => a - b), 'not in causal order');
  assert.deepEqual(problems, []);
  await page.close();
});

test('the sequence diagram keeps its whole cast while the window of steps moves', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=rebalance-storm#steps' });
  const cast = () => within(page, 'sequence-diagram').locator('.lifeline-name').allTextContents();
  const first = await cast();
  assert.ok(first.length >= 4, `cast: ${first.join(', ')}`);
  for (let move = 0; move < 6; move++) {
    if (await within(page, 'moment-next').isDisabled()) break;
    await within(page, 'moment-next').click();
    assert.deepEqual(await cast(), first, `after ${move + 1} key moments`);
  }
  await within(page, 'step-last').click();
  assert.deepEqual(await cast(), first, 'at the end');
  assert.deepEqual(problems, []);
  await page.close();
});

test('on a phone the step\'s caption sits right under the step buttons, on screen while stepping', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, query: '?play=0&story=happy-path#steps' });
  for (let move = 0; move < 3; move++) {
    await within(page, 'step-next').click();
    const next = await within(page, 'step-next').boundingBox();
    const caption = await within(page, 'step-caption').boundingBox();
    assert.ok(caption.y > next.y, 'the caption comes after the buttons');
    assert.ok(caption.y + 60 <= 844, `the caption starts at ${caption.y} px, off a 844 px screen`);
  }
  await page.screenshot({ path: screenshotPath('stories-phone-caption') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('a click on a box of the side map shows only its steps, and the chapter arrows stop at the ends', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0&story=acks1-loss#steps' });
  const side = steps(page).locator('.steps-map');
  // A broker's header selects the broker: the steps are filtered to it.
  await side.getByTestId('select-broker-2').click({ force: true });
  await page.waitForFunction(() => document.querySelector('[data-testid="filter-node"]').value === 'broker-2');
  const shown = Number(await attr(page, 'data-shown'));
  assert.ok(shown < Number(await attr(page, 'data-steps')), `${shown} steps shown`);
  // A replica row filters to its partition.
  await side.locator('[data-testid^="replica-1-"]').first().click();
  await page.waitForFunction(() => document.querySelector('[data-testid="filter-partition"]').value !== '');
  // Chapter arrows: disabled before the first chapter's start and after the last.
  await within(page, 'chapter-1').click();
  assert.ok(await within(page, 'chapter-prev').isDisabled(), 'previous chapter from chapter 1');
  const chapters = await within(page, 'story-timeline').locator('.chapter-button').count();
  await within(page, `chapter-${chapters}`).click();
  assert.ok(await within(page, 'chapter-next').isDisabled(), 'next chapter from the last');
  assert.deepEqual(problems, []);
  await page.close();
});

// Issue 36: "What Jepsen would say about this run" beside the steps. A story
// whose run writes a batch twice names the duplicates, each with a button
// to the step that shows it; a safe story says it found nothing. Read as a
// learner would, at desktop and phone width.
for (const [label, width, height] of [['desktop', 1280, 800], ['phone', 390, 844]]) {
  test(`${label}: Jepsen's verdict on a story's run names each anomaly and goes to its step`, async () => {
    const { page, problems } = await openApp(browser, { width, height, query: '?play=0&story=idempotent-producer#steps' });
    const panel = within(page, 'jepsen');
    // An anomaly opens the panel.
    assert.notEqual(await panel.getAttribute('open'), null);
    assert.equal(await panel.getAttribute('data-findings'), '5');
    assert.match(await panel.locator('summary').innerText(), /^What Jepsen would say about this run: duplicate × 5 in \d+ operations$/);
    // One batch written twice: one row for its five records.
    const findings = within(page, 'jepsen-finding');
    assert.equal(await findings.count(), 1);
    assert.equal(await panel.locator('li').count(), 1, 'nothing more to list');
    assert.match(await findings.first().innerText(), /^duplicate on payments-0: records #0–#4\. One record was written to the log twice, at two offsets\. Go to step \d+$/);
    // Its button goes to the step that shows it: the retry's batch
    // acknowledged at its second offset.
    const go = findings.first().getByTestId('jepsen-step');
    const target = await go.getAttribute('data-step');
    const box = await go.boundingBox();
    assert.ok(box.width >= 44 && box.height >= 44, `the step button is ${box.width}×${box.height} px`);
    await go.click();
    assert.equal(await attr(page, 'data-step'), target);
    assert.match(await within(page, 'step-caption').innerText(), /producer-0 learns that 5 record\(s\) of payments-0 are written, starting at offset 5\./);
    await panel.scrollIntoViewIfNeeded();
    await panel.screenshot({ path: screenshotPath(`jepsen-anomaly-${label}`) });
    assert.deepEqual(await seriousViolations(page), []);
    // A safe story: the panel is closed and says there is no anomaly.
    await chooseStory(page, 'exactly-once');
    assert.equal(await within(page, 'jepsen').getAttribute('open'), null);
    assert.equal(await within(page, 'jepsen').getAttribute('data-findings'), '0');
    await within(page, 'jepsen').locator('summary').click();
    assert.match(await within(page, 'jepsen-clean').innerText(), /^No anomaly: /);
    await within(page, 'jepsen').screenshot({ path: screenshotPath(`jepsen-clean-${label}`) });
    // An opened file whose two transactions write one partition by turns:
    // no anomaly, and what Kafka's design allows listed apart, with why.
    const send = (atMs, producer) => ({ atMs, input: { type: 'produce', producer, key: 'k', count: 1 } });
    const commit = (atMs, producer) => ({ atMs, input: { type: 'commitTransaction', producer } });
    const byTurns = {
      name: 'by turns', description: 'Two transactions write one partition by turns.', seed: 1, runUntilMs: 15000,
      config: {
        brokers: 3, topics: [{ name: 't', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 }],
        producers: [{ topic: 't', transactionalId: 'a' }, { topic: 't', transactionalId: 'b' }],
        consumers: [{ group: 'g', topics: ['t'], autoOffsetReset: 'earliest', isolationLevel: 'read_committed' }],
      },
      inputs: [send(1000, 0), send(1000, 1), commit(2000, 0), commit(2000, 1), send(5000, 0), send(5100, 1), send(5200, 0), commit(6000, 0), commit(6000, 1)],
    };
    await within(page, 'open-scenario').setInputFiles({ name: 'by-turns.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(byTurns)) });
    await page.waitForFunction(() => document.querySelector('[data-testid="jepsen"]')?.dataset.allowed > 0);
    assert.equal(await within(page, 'jepsen').getAttribute('data-findings'), '0');
    // (Still open as the learner left it on the last story.)
    assert.notEqual(await within(page, 'jepsen').getAttribute('open'), null);
    const allowed = within(page, 'jepsen-allowed');
    assert.equal(await allowed.count(), 2);
    assert.match(await allowed.first().innerText(), /^Allowed by Kafka's design: write cycle \(G0\)\. Kafka's transactions are atomic/);
    await within(page, 'jepsen').screenshot({ path: screenshotPath(`jepsen-allowed-${label}`) });
    assert.deepEqual(await seriousViolations(page), []);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(overflow <= width, `the page scrolls sideways at ${width} px (${overflow} px)`);
    assert.deepEqual(problems, []);
    await page.close();
  });
}
