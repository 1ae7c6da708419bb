// A learner opens the page and asks which partition a key goes to.
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const { launch, openApp, screenshotPath } = require('./browser.cjs');

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test('the page loads with no console error and no failed request', async () => {
  const { page, problems } = await openApp(browser);
  assert.equal(await page.title(), "kafkascope: Kafka's internals in your browser");
  await page.screenshot({ path: screenshotPath('home-desktop'), fullPage: true });
  assert.deepEqual(problems, []);
  assert.ok(fs.statSync(screenshotPath('home-desktop')).size > 0);
  await page.close();
});

test('a key typed on the page lands on the partition Kafka picks', async () => {
  const { page, problems } = await openApp(browser);
  // Kafka's UtilsTest: murmur2("foobar") = -790332482.
  await page.getByTestId('key-input').fill('foobar');
  await page.getByTestId('partitions-input').fill('12');
  assert.equal(await page.getByTestId('murmur2').textContent(), '-790332482');
  // toPositive(-790332482) = 1357151166; 1357151166 mod 12 = 6.
  assert.equal(await page.getByTestId('partition').textContent(), '6');
  assert.deepEqual(problems, []);
  await page.close();
});

test('the page and the CLI agree on a key', async (t) => {
  const cli = process.env.KAFKASCOPE_CLI;
  if (!cli || !fs.existsSync(cli)) {
    t.skip('the kafkascope CLI has not been built');
    return;
  }
  const [, murmur2, partition] = execFileSync(cli, ['partition', '--partitions', '6', 'user-42'], { encoding: 'utf8' })
    .trim()
    .split('\t');
  const { page } = await openApp(browser);
  await page.getByTestId('key-input').fill('user-42');
  await page.getByTestId('partitions-input').fill('6');
  assert.equal(await page.getByTestId('murmur2').textContent(), murmur2);
  assert.equal(await page.getByTestId('partition').textContent(), partition);
  await page.close();
});

test('a bad partition count gets a message, not a crash', async () => {
  const { page, problems } = await openApp(browser);
  await page.getByTestId('partitions-input').fill('0');
  assert.match(await page.getByTestId('partition-error').textContent(), /1 to 64/);
  await page.getByTestId('partitions-input').fill('3');
  assert.ok(['0', '1', '2'].includes(await page.getByTestId('partition').textContent()));
  assert.deepEqual(problems, []);
  await page.close();
});

test('the page fits a phone-width screen', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844 });
  await page.screenshot({ path: screenshotPath('home-phone'), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `page is ${overflow}px wider than the screen`);
  assert.deepEqual(problems, []);
  await page.close();
});
