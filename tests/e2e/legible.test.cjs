// The map as a beginner meets it (#32): every text on the live map, on
// the steps' side map and in the sequence diagram is at least 12 px on screen (the font size times the
// SVG's screen transform), at desktop and phone width; the side map shows
// the whole cluster in its box; a click at the centre of any box or row
// selects that box or row (edges never take it), on the default cluster and
// the largest one the knobs make; Kafka's internal topics are one folded
// line per broker until the learner asks for them.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath, showTool, showView } = require('./browser.cjs');

const live = (page) => page.getByTestId('cluster');
const steps = (page) => page.getByTestId('steps');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

// The smallest rendered text of an SVG map, and whether it fits its box.
const measure = (svg) => {
  const sizes = [...svg.querySelectorAll('text')]
    .filter((text) => text.textContent.trim() && text.getBoundingClientRect().width > 0)
    .map((text) => ({
      size: parseFloat(getComputedStyle(text).fontSize) * Math.abs(text.getScreenCTM().a),
      text: text.textContent,
    }));
  const smallest = sizes.reduce((least, item) => (item.size < least.size ? item : least), { size: Infinity, text: '' });
  // Texts that run out of the box (or row) they are drawn in.
  const outside = [...svg.querySelectorAll('.node')].flatMap((node) => {
    const frame = node.querySelector(':scope > .frame')?.getBoundingClientRect();
    if (!frame) return [];
    return [...node.querySelectorAll('text')]
      .filter((text) => text.textContent.trim())
      .filter((text) => {
        const box = text.getBoundingClientRect();
        return box.left < frame.left - 0.5 || box.right > frame.right + 0.5;
      })
      .map((text) => `${node.dataset.testid}: ${text.textContent}`);
  });
  const frame = svg.parentElement;
  return {
    smallest,
    count: sizes.length,
    outside,
    clipped: frame.scrollWidth > frame.clientWidth + 1,
    width: svg.getBoundingClientRect().width,
    frame: frame.clientWidth,
  };
};

for (const [width, height] of [[1280, 800], [390, 844]]) {
  test(`at ${width} px every text of the live map and the side map is at least 12 px and none leaves its box`, async () => {
    const { page, problems } = await openApp(browser, { width, height, query: '?play=0&story=happy-path&step=30', view: 'map' });
    await live(page).getByTestId('cluster-run-10s').click();
    const map = await live(page).getByTestId('map').evaluate(measure);
    assert.ok(map.count > 30, `${map.count} texts`);
    assert.ok(map.smallest.size >= 11.95, `live map text "${map.smallest.text}" at ${map.smallest.size.toFixed(2)} px`);
    assert.deepEqual(map.outside, []);
    assert.ok(!map.clipped, `the live map scrolls sideways (${map.width} px in ${map.frame} px)`);
    await live(page).getByTestId('map').screenshot({ path: screenshotPath(`legible-map-${width}`) });
    await showView(page, 'stories');
    const side = await steps(page).getByTestId('map').evaluate(measure);
    assert.ok(side.smallest.size >= 11.95, `side map text "${side.smallest.text}" at ${side.smallest.size.toFixed(2)} px`);
    assert.deepEqual(side.outside, []);
    assert.ok(!side.clipped, `the side map is cut (${side.width} px in ${side.frame} px)`);
    // The sequence diagram beside it is drawn unscaled: its text too is 12 px or more
    // (on a phone the steps are a list, checked in map.test.cjs).
    if (width >= 700) {
      const diagram = await steps(page).getByTestId('sequence-diagram').evaluate(measure);
      assert.ok(diagram.count > 10, `${diagram.count} diagram texts`);
      assert.ok(diagram.smallest.size >= 11.95, `diagram text "${diagram.smallest.text}" at ${diagram.smallest.size.toFixed(2)} px`);
    }
    // Every broker and controller of the story is in the side map.
    for (const name of ['broker-1', 'broker-2', 'broker-3', 'controller-1', 'controller-2', 'controller-3']) {
      const box = await steps(page).getByTestId(`node-${name}`).boundingBox();
      const frame = await steps(page).locator('.steps-map').boundingBox();
      assert.ok(box && box.x >= frame.x - 0.5 && box.x + box.width <= frame.x + frame.width + 0.5, `${name} is cut off the side map`);
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(overflow <= width, `the page scrolls sideways (${overflow} px)`);
    await steps(page).locator('.steps-map').screenshot({ path: screenshotPath(`legible-side-map-${width}`) });
    assert.deepEqual(problems, []);
    await page.close();
  });
}

// Clicks the centre of every box (a broker's or a group's header, which
// their rows do not cover) and every replica and member row, and checks
// each selected itself: never an edge drawn near it.
async function clickEveryCentre(page) {
  return live(page).getByTestId('map').evaluate((svg) => {
    const targets = [];
    for (const node of svg.querySelectorAll('.nodes > .node')) {
      const frame = node.querySelector(':scope > .frame');
      // A box with rows: its header (left, middle, right); else its centre.
      const points = node.querySelector('.header-hit')
        ? [[0.1, 10], [0.5, 10], [0.9, 10]]
        : [[0.5, null]];
      for (const [share, top] of points) targets.push({ id: node.dataset.testid, element: frame, share, top });
    }
    for (const row of svg.querySelectorAll('.replica, .member')) targets.push({ id: row.dataset.testid, element: row.querySelector('.row'), share: 0.5, top: null });
    const missed = [];
    for (const target of targets) {
      target.element.scrollIntoView({ block: 'center', inline: 'center' });
      const box = target.element.getBoundingClientRect();
      const x = box.left + box.width * target.share;
      const y = target.top === null ? box.top + box.height / 2 : box.top + target.top;
      const element = document.elementFromPoint(x, y);
      const owner = element?.closest('.replica, .member, .edge, .node, .folded');
      const hit = owner?.dataset.testid ?? element?.tagName;
      if (hit !== target.id) missed.push(`${target.id} → ${hit}`);
    }
    return { targets: targets.length, missed };
  });
}

test('a click at the centre of every box and row selects it, on the default cluster and on nine brokers, at desktop and phone width', async () => {
  for (const [width, height] of [[1280, 800], [390, 844]]) {
    const { page, problems } = await openApp(browser, { width, height, query: '?play=0', view: 'map' });
    await live(page).getByTestId('cluster-run-10s').click();
    const small = await clickEveryCentre(page);
    assert.ok(small.targets > 15, `${small.targets} targets`);
    assert.deepEqual(small.missed, [], `at ${width} px`);
    // Real clicks: a replica row, a member row and a broker's header.
    const row = live(page).locator('.replica').first();
    await row.scrollIntoViewIfNeeded();
    const box = await row.locator('.row').boundingBox();
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    assert.match(await row.getAttribute('class'), /selected/);
    // (On a phone the selection's summary sheet now covers the foot of the
    // screen; closing it is the learner's way back to the whole map.)
    if (await page.getByTestId('sheet-close').count()) await page.getByTestId('sheet-close').click();
    await live(page).getByTestId('node-broker-2').scrollIntoViewIfNeeded();
    const broker = await live(page).getByTestId('node-broker-2').locator(':scope > .frame').boundingBox();
    await page.mouse.click(broker.x + broker.width / 2, broker.y + 10);
    await showTool(page, 'inspector');
    assert.equal(await live(page).getByTestId('inspector-title').innerText(), 'broker-2');
    // The largest cluster the knobs make.
    await showTool(page, 'knobs');
    await live(page).getByTestId('knob-brokers').fill('9');
    await live(page).getByTestId('knob-brokers').dispatchEvent('change');
    await live(page).getByTestId('knob-partitions').fill('24');
    await live(page).getByTestId('knob-partitions').dispatchEvent('change');
    await live(page).getByTestId('knob-apply').click();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="cluster"] [data-testid^="node-broker-"]').length === 9);
    await live(page).getByTestId('cluster-run-10s').click();
    const large = await clickEveryCentre(page);
    assert.ok(large.targets > 60, `${large.targets} targets`);
    assert.deepEqual(large.missed, [], `nine brokers at ${width} px`);
    const text = await live(page).getByTestId('map').evaluate(measure);
    assert.ok(text.smallest.size >= 11.95, `nine brokers: "${text.smallest.text}" at ${text.smallest.size.toFixed(2)} px`);
    assert.deepEqual(text.outside, []);
    await live(page).getByTestId('map').screenshot({ path: screenshotPath(`legible-map-nine-${width}`) });
    assert.deepEqual(problems, []);
    await page.close();
  }
});

test('Kafka\'s internal topics are one folded line per broker until the learner shows them', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'map' });
  await live(page).getByTestId('cluster-run-10s').click();
  const internalRows = () => live(page).locator('[data-testid^="replica-"][data-testid*="-__consumer_offsets-"]').count();
  assert.equal(await internalRows(), 0);
  const folded = await live(page).locator('.folded').evaluateAll((lines) => lines.map((line) => line.querySelector('text').textContent));
  assert.equal(folded.length, 3);
  for (const line of folded) assert.match(line, /^\+ \d+ internal replicas? · leads \d+ ▸$/);
  const total = folded.reduce((sum, line) => sum + Number(line.match(/\d+/)[0]), 0);
  await live(page).getByTestId('folded-1').click();
  assert.equal(await internalRows(), total);
  assert.equal(await live(page).getByTestId('toggle-internal').getAttribute('aria-pressed'), 'true');
  await live(page).getByTestId('toggle-internal').click();
  assert.equal(await internalRows(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('on a phone a tap on a broker shows its summary on screen, actions first; the inspector puts Kill before the facts', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, query: '?play=0#map' });
  const broker = live(page).getByTestId('node-broker-2');
  await broker.scrollIntoViewIfNeeded();
  // A tap on its header.
  const header = async () => {
    const frame = await broker.locator(':scope > .frame').boundingBox();
    await page.mouse.click(frame.x + frame.width / 2, frame.y + 10);
  };
  await header();
  const sheet = page.getByTestId('selection-sheet');
  await sheet.waitFor();
  assert.equal(await sheet.getByTestId('sheet-title').innerText(), 'broker-2');
  // On screen: inside the viewport, not 1,270 px below it.
  const box = await sheet.boundingBox();
  assert.ok(box && box.y >= 0 && box.y + box.height <= 844 + 0.5, JSON.stringify(box));
  assert.ok(await sheet.getByTestId('sheet-kill').isVisible());
  // Its actions name the process they act on.
  assert.equal(await sheet.getByTestId('sheet-kill').innerText(), 'Kill broker-2');
  assert.equal(await sheet.getByTestId('sheet-power').innerText(), 'Cut the power of broker-2 (loses what is not flushed)');
  const power = await sheet.getByTestId('sheet-power').boundingBox();
  // As tall as its neighbours' (WCAG's 24 px at least), and as wide as the sheet.
  const kill = await sheet.getByTestId('sheet-kill').boundingBox();
  assert.ok(power.height >= Math.max(24, kill.height) && power.width >= 44, JSON.stringify([power, kill]));
  await page.screenshot({ path: screenshotPath('phone-selection-sheet') });
  // Its way into the full inspector, where the actions come before the facts.
  await sheet.getByTestId('sheet-more').click();
  const inspector = live(page).getByTestId('inspector');
  const order = await inspector.evaluate((element) => {
    const kill = element.querySelector('[data-testid="inspector-kill-broker-2"]');
    const facts = element.querySelector('[data-testid="inspector-facts"]');
    return kill.compareDocumentPosition(facts) & Node.DOCUMENT_POSITION_FOLLOWING ? 'kill first' : 'facts first';
  });
  assert.equal(order, 'kill first');
  // The sheet made way for the full inspector; a tap on another box brings it back, and ✕ closes it.
  assert.equal(await page.getByTestId('selection-sheet').count(), 0, 'the sheet covers the inspector it opened');
  const other = live(page).getByTestId('node-broker-1');
  await other.evaluate((element) => element.scrollIntoView({ block: 'center' }));
  const otherFrame = await other.locator(':scope > .frame').boundingBox();
  await page.mouse.click(otherFrame.x + otherFrame.width / 2, otherFrame.y + 10);
  assert.equal(await page.getByTestId('sheet-title').innerText(), 'broker-1');
  await page.getByTestId('sheet-close').click();
  assert.equal(await page.getByTestId('selection-sheet').count(), 0);
  // At desktop width there is no sheet: the inspector is beside the map.
  await page.setViewportSize({ width: 1280, height: 800 });
  // (In the middle of the screen, clear of the top bar and the toolbar that stay put.)
  await broker.evaluate((element) => element.scrollIntoView({ block: 'center' }));
  await header();
  await showTool(page, 'inspector');
  assert.equal(await live(page).getByTestId('inspector-title').innerText(), 'broker-2');
  assert.equal(await page.getByTestId('selection-sheet').isVisible().catch(() => false), false);
  assert.deepEqual(problems, []);
  await page.close();
});
