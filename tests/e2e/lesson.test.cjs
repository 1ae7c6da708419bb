// The lesson as a learner meets it: the page opens on the Gist with the
// live map one click away; every link in the lesson opens a story step, a
// knob on the map, a part of the page or of the lesson that exists; the
// questions hide their answers until asked; the happy path's cards stand
// in a column on a phone.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { launch, openApp, screenshotPath, showView } = require('./browser.cjs');

const lessonData = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'web', 'lesson.json'), 'utf8'));

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const lesson = (page) => page.getByTestId('lesson');

test('the page opens on the lesson\'s gist, with its objectives, the happy path and the map one click away', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0' });
  // Learn is the page's home: the first view, with the lesson first in it.
  assert.equal(await page.getByTestId('nav-learn').getAttribute('aria-current'), 'page');
  const first = await page.getByTestId('view-learn').locator('section').first().getAttribute('id');
  assert.equal(first, 'lesson');
  assert.ok(!(await page.getByTestId('view-map').isVisible()), 'only one view is shown');
  assert.equal(await lesson(page).getByTestId('lesson-tab-gist').getAttribute('aria-selected'), 'true');
  assert.ok(await lesson(page).getByTestId('lesson-panel-gist').isVisible());
  assert.match(await lesson(page).getByTestId('lesson-summary').innerText(), /in-sync replicas.*partitions.*one partition/);
  assert.equal(await lesson(page).getByTestId('lesson-objectives').locator('li').count(), lessonData.objectives.length);
  assert.equal(await lesson(page).getByTestId('happy-path').locator('li').count(), 5);
  await lesson(page).screenshot({ path: screenshotPath('lesson-gist') });
  await lesson(page).getByTestId('lesson-open-map').click();
  assert.equal(await page.evaluate(() => location.hash), '#map');
  await page.getByTestId('view-map').waitFor();
  assert.ok(!(await lesson(page).isVisible()), 'the map replaces the lesson');
  // Back returns to the lesson; an old address of the Q&A opens that tab.
  await page.goBack();
  await lesson(page).waitFor();
  await page.evaluate(() => { location.hash = '#qa'; });
  await page.waitForFunction(() => document.querySelector('[data-testid="lesson-tab-qa"]').getAttribute('aria-selected') === 'true');
  assert.ok(await lesson(page).getByTestId('lesson-panel-qa').isVisible());
  // The lesson's tabs move with the arrow keys, Home and End, as WAI-ARIA's tabs do.
  await lesson(page).getByTestId('lesson-tab-qa').focus();
  await page.keyboard.press('ArrowRight');
  assert.equal(await lesson(page).getByTestId('lesson-tab-exercise').getAttribute('aria-selected'), 'true');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.testid), 'lesson-tab-exercise');
  await page.keyboard.press('Home');
  assert.equal(await lesson(page).getByTestId('lesson-tab-gist').getAttribute('aria-selected'), 'true');
  assert.deepEqual(problems, []);
  await page.close();
});

test('every link in the lesson opens a step, a knob, a part of the page or a table that exists', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0' });
  const tabs = ['gist', 'tables', 'qa', 'kraft'];
  let checked = 0;
  for (const tab of tabs) {
    await showView(page, 'learn');
    await lesson(page).getByTestId(`lesson-tab-${tab}`).click();
    const panel = lesson(page).getByTestId(`lesson-panel-${tab}`);
    // Open every question so its link is visible.
    await panel.locator('details').evaluateAll((cards) => cards.forEach((card) => { card.open = true; }));
    const count = await panel.locator('.lesson-link').count();
    for (let index = 0; index < count; index++) {
      await showView(page, 'learn');
      await lesson(page).getByTestId(`lesson-tab-${tab}`).click();
      const link = panel.locator('.lesson-link').nth(index);
      const kind = await link.getAttribute('data-kind');
      const href = await link.getAttribute('href');
      const url = new URL(href, 'http://x/');
      await link.click();
      if (kind === 'story') {
        const story = url.searchParams.get('story');
        const step = url.searchParams.get('step');
        // (A link without a step opens the story on its first chapter.)
        await page.waitForFunction(([story, step]) => {
          const steps = document.querySelector('[data-testid="steps"]');
          return steps && steps.dataset.story === story && steps.dataset.step === (step ?? steps.dataset.opening);
        }, [story, step]);
        assert.equal(await page.getByTestId('link-problem').count(), 0, `${href} shows a link problem`);
      } else if (kind === 'knob') {
        const [knob, value] = url.searchParams.get('knob').split(':');
        const control = {
          'acks': 'knob-acks',
          'min.insync.replicas': 'knob-min-insync',
          'unclean.leader.election.enable': 'knob-unclean',
          'retention.ms': 'knob-retention-ms',
        }[knob];
        assert.ok(control, `no control known for ${knob}`);
        const field = page.getByTestId('cluster').getByTestId(control);
        if (value === 'true' || value === 'false') {
          await page.waitForFunction(([id, value]) => document.querySelector(`[data-testid="${id}"]`).checked === (value === 'true'), [control, value]);
        } else {
          await page.waitForFunction(([id, value]) => document.querySelector(`[data-testid="${id}"]`).value === value, [control, value]);
        }
        assert.equal(await page.getByTestId('cluster').getByTestId('knob-error').count(), 0, `${href}: the knob refused it`);
        assert.ok(!(await page.evaluate(() => location.search)).includes('knob='), 'the address still asks for the knob');
        assert.ok(await field.count() === 1);
      } else if (kind === 'section') {
        assert.equal(await page.evaluate(() => location.hash), url.hash);
        assert.ok(await page.locator(url.hash).count() === 1, `${url.hash} is not on the page`);
      } else if (kind === 'anchor') {
        const target = page.locator(url.hash);
        await target.waitFor();
        assert.ok(await target.isVisible(), `${url.hash} is not shown`);
      } else {
        assert.fail(`unknown link kind ${kind}`);
      }
      checked++;
    }
  }
  assert.ok(checked >= 30, `only ${checked} links checked`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('questions hide their answers until asked, and tables and the glossary are there', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0#qa' });
  const card = lesson(page).getByTestId('qa-safe-to-read');
  assert.ok(await card.isVisible());
  assert.ok(!(await card.locator('p').isVisible()), 'the answer shows before it is asked');
  await card.locator('summary').click();
  assert.match(await card.locator('p').innerText(), /high watermark/);
  assert.equal(await lesson(page).getByTestId('lesson-panel-qa').locator('details').count(), lessonData.qa.length);
  await lesson(page).getByTestId('lesson-panel-qa').screenshot({ path: screenshotPath('lesson-qa') });
  await lesson(page).getByTestId('lesson-tab-tables').click();
  for (const table of lessonData.tables) {
    assert.equal(await lesson(page).getByTestId(`lesson-table-${table.id}`).locator('tbody tr').count(), table.rows.length);
  }
  await lesson(page).getByTestId('lesson-table-durability').screenshot({ path: screenshotPath('lesson-durability') });
  await lesson(page).getByTestId('lesson-tab-glossary').click();
  assert.match(await lesson(page).getByTestId('glossary').innerText(), /ISR \(in-sync replicas\)/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('on a phone the happy path\'s cards stand in one column and nothing scrolls sideways', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 800, query: '?play=0' });
  const boxes = await lesson(page).getByTestId('happy-path').locator('li').evaluateAll((cards) =>
    cards.map((card) => { const box = card.getBoundingClientRect(); return { x: Math.round(box.x), y: Math.round(box.y), w: box.width }; }));
  assert.equal(boxes.length, 5);
  for (let index = 1; index < boxes.length; index++) {
    assert.equal(boxes[index].x, boxes[0].x, JSON.stringify(boxes));
    assert.ok(boxes[index].y > boxes[index - 1].y, JSON.stringify(boxes));
  }
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `the page scrolls sideways (${width}px)`);
  await lesson(page).getByTestId('happy-path').screenshot({ path: screenshotPath('lesson-phone-cards') });
  // Every part of the lesson fits a phone (the exercise's choices did not).
  for (const tab of await lesson(page).locator('[role="tab"]').evaluateAll((tabs) => tabs.map((each) => each.dataset.testid))) {
    await lesson(page).getByTestId(tab).click();
    const wide = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(wide <= 390, `${tab}: the page scrolls sideways (${wide}px)`);
  }
  await lesson(page).getByTestId('lesson-tab-exercise').click();
  await page.screenshot({ path: screenshotPath('lesson-phone-exercise') });
  assert.deepEqual(problems, []);
  await page.close();
});

// A stand-in for the browser's speech synthesis: it records what it is
// asked to say and ends an utterance when the test says so.
const FAKE_SPEECH = () => {
  const events = [];
  window.__speech = { spoken: [], events };
  const fake = {
    current: null,
    getVoices: () => [{ name: 'Test Voice', lang: 'en-GB', default: true }],
    speak(utterance) { window.__speech.spoken.push(utterance.text); this.current = utterance; events.push('speak'); },
    cancel() { events.push('cancel'); this.current = null; },
    pause() { events.push('pause'); },
    resume() { events.push('resume'); },
    finish() { const utterance = this.current; this.current = null; utterance?.onend?.(new Event('end')); },
  };
  Object.defineProperty(window, 'speechSynthesis', { value: fake, configurable: true });
};

test('voice readout reads the gist, an answer and a step aloud, pauses, resumes and stops', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('pageerror', (error) => problems.push(error.message));
  await page.addInitScript(FAKE_SPEECH);
  await page.goto(`${process.env.KAFKASCOPE_URL || 'http://127.0.0.1:8080/'}?play=0`);
  await lesson(page).getByTestId('voice-settings').waitFor();
  assert.match(await lesson(page).getByTestId('voice-select').innerText(), /Test Voice/);
  await lesson(page).getByTestId('voice-rate').selectOption({ label: 'slow' });
  await lesson(page).getByTestId('read-gist').click();
  const spoken = () => page.evaluate(() => window.__speech.spoken);
  assert.match((await spoken())[0], /in-sync replicas/);
  assert.ok(await lesson(page).locator('[data-read="gist"].speaking').count() === 1, 'what is read is not marked');
  await lesson(page).getByTestId('read-pause-gist').click();
  assert.equal(await lesson(page).getByTestId('read-pause-gist').innerText(), '▶ Resume');
  await lesson(page).getByTestId('read-pause-gist').click();
  await lesson(page).getByTestId('read-stop-gist').click();
  await lesson(page).getByTestId('read-gist').waitFor();
  assert.equal(await lesson(page).locator('.speaking').count(), 0);
  const events = await page.evaluate(() => window.__speech.events);
  assert.deepEqual(events.filter((event) => event !== 'cancel'), ['speak', 'pause', 'resume']);
  // An answer: reading ends by itself when the utterance ends.
  await lesson(page).getByTestId('lesson-tab-qa').click();
  await lesson(page).getByTestId('qa-isr').locator('summary').click();
  await lesson(page).getByTestId('read-qa-isr').click();
  assert.match((await spoken())[1], /What is the ISR\?.*replica.lag.time.max.ms/);
  await page.evaluate(() => window.speechSynthesis.finish());
  await lesson(page).getByTestId('read-qa-isr').waitFor();
  // The current step's caption.
  await showView(page, 'stories');
  await page.getByTestId('steps').getByTestId('read-step-caption').click();
  const caption = await page.getByTestId('step-caption').locator('p[data-read="step-caption"]').innerText();
  assert.equal((await spoken())[2].trim().endsWith(caption.trim().slice(-40)), true);
  await page.getByTestId('steps').getByTestId('read-stop-step-caption').click();
  await showView(page, 'learn');
  await lesson(page).getByTestId('lesson-tab-gist').click();
  await lesson(page).screenshot({ path: screenshotPath('lesson-voice') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('where the browser has no speech synthesis, the page says so and shows no read button', async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.addInitScript(() => Object.defineProperty(window, 'speechSynthesis', { value: undefined, configurable: true }));
  await page.goto(`${process.env.KAFKASCOPE_URL || 'http://127.0.0.1:8080/'}?play=0`);
  await lesson(page).getByTestId('voice-unavailable').waitFor();
  assert.match(await lesson(page).getByTestId('voice-unavailable').innerText(), /speech synthesis/);
  assert.equal(await page.locator('.read-aloud').count(), 0);
  await page.close();
});

test('the pitfalls exercise: predict each case, run it, and get a score explained with the run\'s numbers', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0#exercise' });
  const exercise = lesson(page).getByTestId('exercise-pitfalls');
  await exercise.waitFor();
  assert.ok(await exercise.getByTestId('exercise-run').isDisabled(), 'it runs before every case is answered');
  const answers = { 'fourth-member': 'idle', 'leader-dies': 'continue', 'second-leader-dies': 'continue', 'unclean': 'loss' };
  for (const [id, answer] of Object.entries(answers)) {
    await exercise.getByTestId(`case-${id}-${answer}`).check();
  }
  await exercise.getByTestId('exercise-run').click();
  await exercise.getByTestId('exercise-score').waitFor();
  assert.equal(await exercise.getByTestId('exercise-score').innerText(), '3 of 4 right.');
  assert.match(await exercise.getByTestId('verdict-fourth-member').innerText(), /^Right: the run says idle\. .*consumer-\d+ none/);
  assert.match(await exercise.getByTestId('verdict-second-leader-dies').innerText(), /^Not quite: the run says error\. .*NOT_ENOUGH_REPLICAS/);
  assert.match(await exercise.getByTestId('verdict-unclean').innerText(), /^Right: the run says loss\. .*acknowledged record\(s\) of orders-1 were gone/);
  await exercise.screenshot({ path: screenshotPath('lesson-exercise') });
  // Each verdict opens its moment in the steps.
  const link = exercise.getByTestId('verdict-second-leader-dies').locator('.lesson-link');
  const step = new URL(await link.getAttribute('href'), 'http://x/').searchParams.get('step');
  await link.click();
  await page.waitForFunction((step) => {
    const steps = document.querySelector('[data-testid="steps"]');
    return steps.dataset.story === 'exercise' && steps.dataset.step === step;
  }, step);
  await page.getByTestId('view-stories').waitFor();
  await page.goBack();
  // Changing an answer hides the old verdicts until it runs again.
  await exercise.getByTestId('case-second-leader-dies-error').check();
  assert.equal(await exercise.getByTestId('exercise-score').count(), 0);
  await exercise.getByTestId('exercise-run').click();
  assert.equal(await exercise.getByTestId('exercise-score').innerText(), '4 of 4 right.');
  assert.deepEqual(problems, []);
  await page.close();
});

test('the other exercises (partition count, slow consumer, poison record) offer their own choices and score from the run', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0#exercise-partitions' });
  // Each exercise lists its own choices, not the pitfalls' four.
  for (const { id, cases } of lessonData.exercises.slice(1)) {
    const exercise = lesson(page).getByTestId(`exercise-${id}`);
    await exercise.waitFor();
    for (const { id: caseId, choices } of cases) {
      const offered = await exercise.getByTestId(`case-${caseId}`).locator('input[type=radio]').evaluateAll((inputs) => inputs.map((input) => input.value));
      assert.deepEqual(offered, choices, caseId);
    }
  }
  const partitions = lesson(page).getByTestId('exercise-partitions');
  const answers = { 'grow-idle': 'assigned', 'grow-alice': 'moves', 'grow-bob': 'moves' };
  for (const [id, answer] of Object.entries(answers)) await partitions.getByTestId(`case-${id}-${answer}`).check();
  await partitions.getByTestId('exercise-run').click();
  await partitions.getByTestId('exercise-score').waitFor();
  assert.equal(await partitions.getByTestId('exercise-score').innerText(), '2 of 3 right.');
  assert.match(await partitions.getByTestId('verdict-grow-idle').innerText(), /^Right: the run says assigned\. .*gave every member partitions/);
  assert.match(await partitions.getByTestId('verdict-grow-alice').innerText(), /^Not quite: the run says stays\. Records keyed alice went to orders-1 before and to orders-1 after/);
  assert.match(await partitions.getByTestId('verdict-grow-bob').innerText(), /^Right: the run says moves\. Records keyed bob went to orders-0 before and to orders-2 after/);
  await partitions.screenshot({ path: screenshotPath('lesson-exercise-partitions') });
  const poison = lesson(page).getByTestId('exercise-poison');
  await poison.getByTestId('case-poison-billing-dead-lettered').check();
  await poison.getByTestId('case-poison-shipping-stops').check();
  await poison.getByTestId('exercise-run').click();
  assert.equal(await poison.getByTestId('exercise-score').innerText(), '2 of 2 right.');
  assert.match(await poison.getByTestId('verdict-poison-billing').innerText(), /orders\.DLQ/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('glossary terms are underlined at their first use on the page and open their definition', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0' });
  for (const term of lessonData.glossary) {
    const uses = await page.locator(`a.term[href="#term-${term.term.replace(/ /g, '-')}"]`).count();
    assert.ok(uses <= 1, `${term.term} is marked ${uses} times`);
  }
  const isr = page.locator('a.term[href="#term-ISR"]');
  assert.equal(await isr.count(), 1);
  assert.match(await isr.getAttribute('title'), /in sync|caught up/);
  assert.ok(await isr.isVisible(), 'the first use of ISR is not on the Gist');
  await isr.click();
  await page.waitForFunction(() => document.querySelector('[data-testid="lesson-tab-glossary"]').getAttribute('aria-selected') === 'true');
  assert.ok(await page.locator('#term-ISR').isVisible());
  assert.deepEqual(problems, []);
  await page.close();
});
