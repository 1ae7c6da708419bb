// When kafkascope's own code fails (a WebAssembly trap: a Rust panic aborts
// in the release build), the part that stopped says so, says it is a bug,
// and offers to reload the page; the page never just stops answering.
//
// The traps here are real: the test asks a module's allocator for an
// impossible block (wasm-bindgen's `__wbindgen_malloc` with an alignment of
// 3), which aborts, from a timer, so the RuntimeError reaches the page as an
// uncaught error as a trap in the page's own timers and handlers does. For
// the simulator, the test first says `kafkascope-panic` as the module's
// panic hook does just before its trap (`crash.rs`).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { launch, openApp, showView, withSimulator, screenshotPath, seriousViolations } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** Makes the module whose script's address matches `pattern` trap from a timer. */
async function trap(page, pattern, panic) {
  await page.evaluate(async ({ source, panic }) => {
    const script = performance.getEntriesByType('resource')
      .map((entry) => entry.name)
      .find((name) => new RegExp(source).test(new URL(name).pathname));
    if (!script) throw new Error(`no script matches ${source}`);
    const glue = await import(script);
    const wasm = await glue.default();
    setTimeout(() => {
      if (panic) dispatchEvent(new CustomEvent('kafkascope-panic', { detail: panic }));
      wasm.__wbindgen_malloc(0xfffffff0, 3);
    }, 0);
  }, { source: pattern.source, panic });
}

/** The rendered size of the note's text and of its button. */
async function sizes(note) {
  return note.evaluate((box) => {
    const button = box.querySelector('button').getBoundingClientRect();
    return {
      font: parseFloat(getComputedStyle(box.querySelector('p:not(.crash-heading)')).fontSize),
      button: { width: button.width, height: button.height },
    };
  });
}


test('a trap in the simulator stops the map and the steps with a note in each, and Reload starts them again', async () => {
  const { page, problems } = await openApp(browser, { view: 'map' });
  await page.getByTestId('cluster').waitFor();
  await trap(page, /\/sim\/kafkascope-sim-[0-9a-f]{16}\.js$/, {
    module: 'simulator',
    message: "kafkascope's simulator module failed: panicked at a stand-in for the test",
  });
  const mapNote = page.locator('#map [data-testid="crash-note"]');
  await mapNote.waitFor({ timeout: 10000 });
  assert.equal(await page.locator('#steps [data-testid="crash-note"]').count(), 1, 'the steps say nothing');
  assert.equal(await page.locator('body > [data-testid="crash-note"]').count(), 0, 'the whole page was said to stop');
  assert.equal(await page.evaluate(() => document.documentElement.dataset.crashed), 'simulator');
  const text = await mapNote.innerText();
  assert.match(text, /The simulator stopped/);
  assert.match(text, /This is a bug in kafkascope, not anything you did/);
  assert.equal(await mapNote.getAttribute('role'), 'alert');
  await mapNote.locator('summary').click();
  assert.match(await mapNote.locator('code').innerText(), /panicked at a stand-in/);
  const measured = await sizes(mapNote);
  assert.ok(measured.font >= 14, `the note's text is ${measured.font} px`);
  assert.ok(measured.button.width >= 44 && measured.button.height >= 44, JSON.stringify(measured.button));
  assert.deepEqual(await seriousViolations(page), []);
  await mapNote.scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshotPath('crash-simulator') });
  // The trap itself is the one problem the page had.
  assert.ok(problems.length >= 1 && problems.every((problem) => /unreachable|RuntimeError/.test(problem)), problems.join('\n'));

  await Promise.all([page.waitForEvent('load'), mapNote.getByTestId('crash-reload').click()]);
  await page.getByTestId('app-nav').waitFor({ timeout: 30000 });
  await showView(page, 'map');
  await withSimulator(page);
  assert.equal(await page.getByTestId('crash-note').count(), 0);
  const before = await page.getByTestId('cluster-time').innerText();
  await page.getByTestId('cluster-run-1s').click();
  assert.notEqual(await page.getByTestId('cluster-time').innerText(), before, 'the map does not run after Reload');
  await page.close();
});

test('a trap in the page itself, on a phone, puts a note at the top of the page', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, simulator: false });
  await trap(page, /\/kafkascope-web-[0-9a-f]+\.js$/, null);
  const note = page.locator('body > [data-testid="crash-note"]');
  await note.waitFor({ timeout: 10000 });
  assert.equal(await page.evaluate(() => document.documentElement.dataset.crashed), 'page');
  assert.match(await note.innerText(), /kafkascope stopped/);
  const box = await note.boundingBox();
  assert.ok(box.x >= 0 && box.x + box.width <= 390, `the note is ${box.width} px wide at x ${box.x}`);
  assert.ok(box.y < 844, 'the note is not on the screen');
  const measured = await sizes(note);
  assert.ok(measured.font >= 14, `the note's text is ${measured.font} px`);
  assert.ok(measured.button.width >= 44 && measured.button.height >= 44, JSON.stringify(measured.button));
  await page.screenshot({ path: screenshotPath('crash-page-phone') });
  assert.ok(problems.every((problem) => /unreachable|RuntimeError/.test(problem)), problems.join('\n'));
  await page.close();
});
