// A learner runs snippets in the "Run this" panel: every example prints what
// it promises and draws its diagram; a runaway loop is stopped while the
// page stays usable; snippets cannot reach the network or the page; a
// syntax error says where it is.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { launch, openApp, screenshotPath } = require('./browser.cjs');

const EXPECTED = JSON.parse(
  fs.readFileSync(path.join(__dirname, '../../web/sandbox-examples/expected.json'), 'utf8'),
).examples;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** How many runs have finished on this page. */
async function finishedRuns(page) {
  return Number(await page.getByTestId('sandbox').getAttribute('data-finished-runs'));
}

/** Waits for the run after `before` finished runs to finish. */
async function waitForRun(page, before) {
  await page.locator(`[data-testid="sandbox"][data-finished-runs="${before + 1}"]`).waitFor({ timeout: 30000 });
}

/** Runs what is in the editor and returns the console text. */
async function run(page) {
  const before = await finishedRuns(page);
  await page.getByTestId('sandbox-run').click();
  await waitForRun(page, before);
  return page.getByTestId('sandbox-console').innerText();
}

async function runCode(page, code) {
  await page.getByTestId('sandbox-editor').fill(code);
  return run(page);
}

test('every example runs in the page and prints what it promises', async () => {
  const { page, problems } = await openApp(browser, { view: 'sandbox' });
  const ids = await page.getByTestId('sandbox-example').locator('option').evaluateAll((options) => options.map((o) => o.value));
  assert.deepEqual(ids, Object.keys(EXPECTED));
  for (const id of ids) {
    await page.getByTestId('sandbox-example').selectOption(id);
    const output = await run(page);
    for (const fragment of EXPECTED[id].output) {
      assert.ok(output.includes(fragment), `${id}: missing ${JSON.stringify(fragment)} in\n${output}`);
    }
    assert.equal(await page.getByTestId('sandbox-error').count(), 0, `${id} failed:\n${output}`);
    assert.equal(await page.getByTestId('sandbox-diagram').count(), EXPECTED[id].diagrams, id);
    if (id === '4-third-member-idles') {
      await page.getByTestId('sandbox-diagram').screenshot({ path: screenshotPath('sandbox-assignment-diagram') });
      assert.match(await page.getByTestId('sandbox-diagram').innerText(), /consumer-c\s+idle/);
    }
  }
  await page.screenshot({ path: screenshotPath('sandbox'), fullPage: true });
  assert.deepEqual(problems, []);
  await page.close();
});

test('an endless loop is stopped at the time limit, the page stays responsive, and the next run works', async () => {
  const { page, problems } = await openApp(browser, { view: 'sandbox' });
  await page.getByTestId('sandbox-timeout').fill('1000');
  await page.getByTestId('sandbox-editor').fill('while (true) {}');
  const before = await finishedRuns(page);
  await page.getByTestId('sandbox-run').click();
  // While the worker spins, the page still answers: another view opens and works.
  await page.getByTestId('nav-partitioner').click();
  await page.getByTestId('key-input').fill('foobar');
  await page.getByTestId('partitions-input').fill('12');
  assert.equal(await page.getByTestId('partition').textContent(), '6');
  await page.getByTestId('nav-sandbox').click();
  await waitForRun(page, before);
  assert.match(await page.getByTestId('sandbox-error').innerText(), /stopped after 1000 ms/);
  const output = await runCode(page, "console.log('after', partitionFor('foobar', 12))");
  assert.match(output, /after 6/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('snippets cannot reach the network, storage or the page', async () => {
  const { page, problems } = await openApp(browser, { view: 'sandbox' });
  const requests = [];
  page.on('request', (request) => requests.push(request.url()));
  const refused = {
    'fetch("https://example.org/")': /fetch is not available in the sandbox/,
    'new XMLHttpRequest()': /XMLHttpRequest is not available/,
    'new WebSocket("ws://127.0.0.1:1")': /WebSocket is not available/,
    'importScripts("https://example.org/x.js")': /importScripts is not available/,
    'indexedDB.open("x")': /indexedDB is not available/,
    'document.body.innerHTML = "gone"': /document is not defined/,
    'localStorage.setItem("a", "b")': /localStorage is not defined/,
    'await import("https://example.org/x.js")': /import is not available/,
  };
  for (const [code, message] of Object.entries(refused)) {
    await runCode(page, code);
    assert.match(await page.getByTestId('sandbox-error').innerText(), message, code);
  }
  assert.deepEqual(requests.filter((url) => url.includes('example.org')), []);
  // The page is untouched.
  await page.getByTestId('app-nav').waitFor();
  await page.getByTestId('sandbox-run').waitFor();
  assert.deepEqual(problems, []);
  await page.close();
});

test('a syntax error shows its line and column', async () => {
  const { page, problems } = await openApp(browser, { view: 'sandbox' });
  await runCode(page, "console.log('fine');\nlet x = ;\n");
  assert.match(await page.getByTestId('sandbox-error').innerText(), /SyntaxError: .*\(line 2, column 9\)/);
  await runCode(page, "const a = 1;\nnull.property;");
  assert.match(await page.getByTestId('sandbox-error').innerText(), /TypeError: .*\(line 2, column 6\)/);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the editor indents with Tab, runs with Ctrl+Enter, and Escape then Tab leaves it', async () => {
  const { page } = await openApp(browser, { view: 'sandbox' });
  const editor = page.getByTestId('sandbox-editor');
  await editor.fill('');
  await editor.focus();
  await page.keyboard.press('Tab');
  await page.keyboard.type("console.log('tabbed')");
  assert.equal(await editor.inputValue(), "  console.log('tabbed')");
  const before = await finishedRuns(page);
  await page.keyboard.press('Control+Enter');
  await waitForRun(page, before);
  assert.match(await page.getByTestId('sandbox-console').innerText(), /tabbed/);
  // Escape, then Tab, leaves the editor; the text is untouched.
  await editor.focus();
  await page.keyboard.press('Escape');
  await page.keyboard.press('Tab');
  assert.notEqual(await page.evaluate(() => document.activeElement?.dataset?.testid), 'sandbox-editor');
  assert.equal(await editor.inputValue(), "  console.log('tabbed')");
  await page.close();
});

test('every API reference example loads with "Try it" and runs in the page', async () => {
  const { page, problems } = await openApp(browser, { view: 'sandbox' });
  const { entries } = JSON.parse(fs.readFileSync(path.join(__dirname, '../../web/api-reference.json'), 'utf8'));
  await page.getByTestId('api-reference').locator('summary').click();
  for (const entry of entries) {
    await page.getByTestId(`try-${entry.name}`).click();
    assert.equal(await page.getByTestId('sandbox-editor').inputValue(), entry.example, entry.name);
    const output = await run(page);
    for (const fragment of entry.expect) {
      assert.ok(output.includes(fragment), `${entry.name}: missing ${JSON.stringify(fragment)} in\n${output}`);
    }
  }
  await page.getByTestId('api-reference').screenshot({ path: screenshotPath('api-reference') });
  assert.deepEqual(problems, []);
  await page.close();
});

test('console output is capped', async () => {
  const { page, problems } = await openApp(browser, { view: 'sandbox' });
  await runCode(page, 'for (let i = 0; i < 5000; i++) console.log(i);');
  assert.equal(await page.getByTestId('sandbox-capped').count(), 1);
  const lines = await page.getByTestId('sandbox-console').locator('pre.log').count();
  assert.ok(lines <= 500, `${lines} lines kept`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('a flood of shown values is drawn up to the bounds, says what it left out, and the editor stays usable', async () => {
  const { page, problems } = await openApp(browser, { view: 'sandbox' });
  // The floods a red team found, each within the worker's own limits:
  // nested JSON that pretty-prints to 65 times its size, an assignment of
  // 66,600 chips, and fifty partition maps and fifty bar charts.
  const floods = [
    'let v = Array(99900).fill(0); for (let i = 0; i < 63; i++) v = [v]; for (let i = 0; i < 5; i++) show(v);',
    "const a = { m: Array(66600).fill('') }; for (let i = 0; i < 5; i++) show(a, 'chips');",
    'for (let i = 0; i < 50; i++) show(partitionMap([], 1000));',
    'for (let i = 0; i < 50; i++) show(Array(1000).fill(0));',
  ];
  for (const code of floods) {
    await runCode(page, code);
    assert.ok(await page.getByTestId('sandbox-truncated').count() >= 1, `${code}: nothing says what was left out`);
    const drawn = await page.evaluate(() => {
      const figures = [...document.querySelectorAll('[data-testid="sandbox-diagram"]')];
      return {
        chars: figures.reduce((sum, figure) => sum + figure.textContent.length, 0),
        elements: figures.reduce((sum, figure) => sum + figure.querySelectorAll('*').length, 0),
      };
    });
    assert.ok(drawn.chars <= 350000, `${code}: ${drawn.chars} characters drawn`);
    assert.ok(drawn.elements <= 15000, `${code}: ${drawn.elements} elements drawn`);
    // Typing goes on; the output is not drawn again for each key.
    await page.getByTestId('sandbox-editor').fill('');
    await page.getByTestId('sandbox-editor').type('console.log(1)');
    assert.equal(await page.getByTestId('sandbox-editor').inputValue(), 'console.log(1)');
  }
  await page.getByTestId('sandbox-truncated').last().scrollIntoViewIfNeeded();
  await page.screenshot({ path: screenshotPath('sandbox-flood') });
  assert.deepEqual(problems, []);
  await page.close();
});
