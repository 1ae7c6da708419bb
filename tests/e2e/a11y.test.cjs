// Accessibility as a screen-reader or keyboard user meets the page: axe-core
// over the whole page (every section: the map with its inspector open, the
// sequence steps, the sandbox, the lesson cards) at desktop and phone
// width, with no serious or critical violation.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { readFileSync } = require('node:fs');
const { launch, openApp, screenshotPath } = require('./browser.cjs');

const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function seriousViolations(page) {
  await page.addScriptTag({ content: AXE });
  const result = await page.evaluate(() => globalThis.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.impact} ${violation.id} (${violation.nodes.length}): ${violation.help}; first: ${violation.nodes[0].target.join(' ')}`);
}

for (const [width, height] of [[1280, 900], [390, 844]]) {
  test(`axe finds no serious or critical violation at ${width} px, with the inspector open`, async () => {
    const { page, problems } = await openApp(browser, { width, height, query: '?play=0' });
    const live = page.getByTestId('cluster');
    await live.getByTestId('cluster-run-1s').click();
    // A broker's box is a labelled group; its header button selects it
    // from the keyboard.
    await live.getByTestId('select-broker-1').focus();
    await page.keyboard.press('Enter');
    await live.getByTestId('inspector-title').waitFor();
    assert.deepEqual(await seriousViolations(page), []);
    await page.screenshot({ path: screenshotPath(`a11y-${width}`), fullPage: false });
    assert.deepEqual(problems, []);
    await page.close();
  });
}
