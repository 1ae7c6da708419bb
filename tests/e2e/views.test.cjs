// The page as an app (#32): one view at a time (Learn, Map, Stories,
// Sandbox, Partitioner), switched from a top bar that stays put. Every
// address that worked on the one-column page opens what it opened, the
// browser's Back and Forward move between views, and a view keeps its
// state while another is shown.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, showView, screenshotPath } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

const VIEWS = ['learn', 'map', 'stories', 'sandbox', 'partitioner'];

// The one view shown, checked against what the top bar says.
async function shownView(page) {
  const shown = await page.locator('main [data-view]').evaluateAll((all) => all.filter((view) => !view.hidden).map((view) => view.dataset.view));
  assert.equal(shown.length, 1, `views shown: ${shown.join(', ')}`);
  const current = await page.locator('.app-nav a[aria-current="page"]').evaluateAll((all) => all.map((link) => link.dataset.testid));
  assert.deepEqual(current, [`nav-${shown[0]}`], 'the top bar marks the view shown');
  return shown[0];
}

test('every old address opens its view, and only that view', async () => {
  const addresses = [
    ['?play=0', 'learn', 'lesson'],
    ['?play=0#lesson', 'learn', 'lesson'],
    ['?play=0#qa', 'learn', 'lesson-panel-qa'],
    ['?play=0#learn', 'learn', 'learn'],
    ['?play=0#exercise-partitions', 'learn', 'exercise-partitions'],
    ['?play=0#map', 'map', 'cluster'],
    ['?play=0#steps', 'stories', 'steps'],
    ['?play=0&story=happy-path&step=4#steps', 'stories', 'steps'],
    ['?play=0&story=happy-path', 'stories', 'steps'],
    ['?play=0&preset=bench', 'map', 'cluster'],
    ['?play=0&knob=acks:1#map', 'map', 'cluster'],
    ['?play=0#sandbox', 'sandbox', 'sandbox'],
    ['?play=0#partitioner', 'partitioner', 'key-input'],
  ];
  for (const [query, view, element] of addresses) {
    const { page, problems } = await openApp(browser, { query });
    await page.getByTestId(`view-${view}`).waitFor();
    assert.equal(await shownView(page), view, query);
    await page.getByTestId(element).first().waitFor({ timeout: 15000 });
    assert.ok(await page.getByTestId(element).first().isVisible(), `${query}: ${element} is not shown`);
    assert.deepEqual(problems, [], query);
    await page.close();
  }
});

test('Back and Forward move between views, and a view keeps its state while another is shown', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0' });
  assert.equal(await shownView(page), 'learn');
  await showView(page, 'map');
  const live = page.getByTestId('cluster');
  await live.getByTestId('cluster-run-1s').click();
  const time = await live.getByTestId('cluster-time').innerText();
  await showView(page, 'stories');
  await page.getByTestId('steps').getByTestId('step-next').click();
  const step = await page.getByTestId('steps').getAttribute('data-step');
  await showView(page, 'partitioner');
  await page.getByTestId('key-input').fill('order-7');
  assert.equal(await shownView(page), 'partitioner');
  await page.goBack();
  await page.getByTestId('view-stories').waitFor();
  assert.equal(await shownView(page), 'stories');
  assert.equal(await page.getByTestId('steps').getAttribute('data-step'), step, 'the story kept its step');
  await page.goBack();
  await page.getByTestId('view-map').waitFor();
  assert.equal(await live.getByTestId('cluster-time').innerText(), time, 'the map kept its run');
  await page.goBack();
  await page.getByTestId('view-learn').waitFor();
  await page.goForward();
  await page.getByTestId('view-map').waitFor();
  assert.equal(await shownView(page), 'map');
  await showView(page, 'partitioner');
  assert.equal(await page.getByTestId('key-input').inputValue(), 'order-7', 'the partitioner kept its key');
  assert.deepEqual(problems, []);
  await page.close();
});

for (const [width, height] of [[1280, 800], [390, 844]]) {
  test(`at ${width} px the top bar fits, its links are easy to hit, it stays put, and no view scrolls sideways`, async () => {
    const { page, problems } = await openApp(browser, { width, height, query: '?play=0' });
    const bar = await page.locator('header.app-header').boundingBox();
    assert.ok(bar.height <= (width < 700 ? 100 : 64), `the top bar is ${bar.height} px tall`);
    for (const view of VIEWS) {
      const link = await page.getByTestId(`nav-${view}`).boundingBox();
      assert.ok(link.width >= 24 && link.height >= 24, `nav-${view} is ${link.width}×${link.height}`);
      assert.ok(link.x >= 0 && link.x + link.width <= width, `nav-${view} is off the screen`);
    }
    for (const view of VIEWS) {
      await showView(page, view);
      assert.equal(await shownView(page), view);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
      assert.ok(overflow <= width, `${view} scrolls sideways (${overflow} px)`);
      await page.screenshot({ path: screenshotPath(`views-${view}-${width}`) });
      if (view === 'map') {
        // Every run control is on the screen: none hides past its edge.
        const controls = await page.getByTestId('cluster').locator('[aria-label="run controls"] button, [aria-label="run controls"] select')
          .evaluateAll((all) => all.map((each) => { const box = each.getBoundingClientRect(); return { id: each.dataset.testid, left: box.left, right: box.right }; }));
        const off = controls.filter((each) => each.left < 0 || each.right > width);
        assert.deepEqual(off, [], 'run controls off the screen');
      }
      // Scrolled down, the top bar is still at the top of the screen.
      await page.evaluate(() => window.scrollTo(0, 600));
      const after = await page.locator('header.app-header').boundingBox();
      assert.ok(Math.abs(after.y) < 1, `${view}: the top bar moved to ${after.y}`);
      await page.evaluate(() => window.scrollTo(0, 0));
    }
    assert.deepEqual(problems, []);
    await page.close();
  });
}
