// Accessibility as a screen-reader or keyboard user meets the page: axe-core
// over the whole page (every section: the map with its inspector open, the
// sequence steps, the sandbox, the lesson cards) at desktop and phone
// width, with no serious or critical violation.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, screenshotPath, showView, showTool, seriousViolations } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

for (const [width, height] of [[1280, 900], [390, 844]]) {
  test(`axe finds no serious or critical violation at ${width} px in any view, with the inspector open`, async () => {
    const { page, problems } = await openApp(browser, { width, height, query: '?play=0', view: 'map' });
    const live = page.getByTestId('cluster');
    await live.getByTestId('cluster-run-1s').click();
    // The side-by-side comparison of rebalance protocols, open with its charts.
    await showTool(page, 'compare');
    await live.getByTestId('compare-run').click();
    await live.getByTestId('compare-2').waitFor();
    // A broker's box is a labelled group; its header button selects it
    // from the keyboard.
    await live.getByTestId('select-broker-1').focus();
    await page.keyboard.press('Enter');
    await live.getByTestId('inspector-title').waitFor();
    assert.deepEqual(await seriousViolations(page), [], 'the map view');
    await page.screenshot({ path: screenshotPath(`a11y-${width}`), fullPage: false });
    for (const view of ['learn', 'stories', 'sandbox', 'partitioner']) {
      await showView(page, view);
      assert.deepEqual(await seriousViolations(page), [], `the ${view} view`);
      await page.screenshot({ path: screenshotPath(`view-${view}-${width}`), fullPage: false });
    }
    assert.deepEqual(problems, []);
    await page.close();
  });
}

test('the first Tab stops are the top bar\'s links to every view, each moving focus into its view; on the map, boxes come before edges', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0' });
  const views = await page.locator('main [data-view]').evaluateAll((all) => all.map((view) => view.dataset.view));
  assert.deepEqual(views, ['learn', 'map', 'stories', 'sandbox', 'partitioner']);
  // The brand (home) and the top bar's links are the first Tab stops.
  const navigation = await page.locator('.app-header a').evaluateAll((all) => all.map((link) => link.getAttribute('href')));
  const links = [];
  for (let index = 0; index < navigation.length; index++) {
    await page.keyboard.press('Tab');
    links.push(await page.evaluate(() => document.activeElement.getAttribute('href')));
  }
  assert.deepEqual(links, navigation, 'the top bar\'s links come first in tab order');
  for (const view of views) {
    await page.getByTestId(`nav-${view}`).focus();
    await page.keyboard.press('Enter');
    await page.waitForFunction((wanted) => document.activeElement?.closest('[data-view]')?.dataset.view === wanted, view);
    assert.equal(await page.getByTestId(`nav-${view}`).getAttribute('aria-current'), 'page');
  }
  // Tab order inside the map: every box (and the rows in it) before any edge.
  const order = await page.getByTestId('cluster').getByTestId('map').evaluate((map) => [...map.querySelectorAll('[tabindex="0"]')]
    .map((element) => (element.closest('.edge-buttons') ? 'edge' : 'box')));
  const firstEdge = order.indexOf('edge');
  assert.ok(firstEdge > 0, 'edges are focusable');
  assert.ok(order.slice(firstEdge).every((kind) => kind === 'edge'), `boxes after an edge: ${order.join(' ')}`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('axe finds no serious or critical violation on the scenario format reference, at desktop and phone width, nor in the shared-code field', async () => {
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'sandbox' });
  await page.getByTestId('sandbox').getByTestId('copy-code-link').click();
  await page.getByTestId('sandbox').getByTestId('code-share').waitFor();
  assert.deepEqual(await seriousViolations(page), []);
  for (const [width, height] of [[1280, 900], [390, 844]]) {
    await page.setViewportSize({ width, height });
    await page.goto(new URL('scenario-format.html', page.url()).href);
    await page.locator('h1').waitFor();
    assert.deepEqual(await seriousViolations(page), [], `at ${width} px`);
  }
  await page.screenshot({ path: screenshotPath('scenario-format-phone') });
  assert.deepEqual(problems, []);
  await page.close();
});
