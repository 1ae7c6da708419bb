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
  const { page, problems } = await openApp(browser, { view: 'partitioner' });
  assert.equal(await page.title(), "kafkascope: Kafka's internals in your browser");
  await page.screenshot({ path: screenshotPath('home-desktop'), fullPage: true });
  assert.deepEqual(problems, []);
  assert.ok(fs.statSync(screenshotPath('home-desktop')).size > 0);
  await page.close();
});

test('a key typed on the page lands on the partition Kafka picks', async () => {
  const { page, problems } = await openApp(browser, { view: 'partitioner' });
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
  const { page } = await openApp(browser, { view: 'partitioner' });
  await page.getByTestId('key-input').fill('user-42');
  await page.getByTestId('partitions-input').fill('6');
  assert.equal(await page.getByTestId('murmur2').textContent(), murmur2);
  assert.equal(await page.getByTestId('partition').textContent(), partition);
  await page.close();
});

test('a bad partition count gets a message, not a crash', async () => {
  const { page, problems } = await openApp(browser, { view: 'partitioner' });
  await page.getByTestId('partitions-input').fill('0');
  assert.match(await page.getByTestId('partition-error').textContent(), /1 to 64/);
  await page.getByTestId('partitions-input').fill('3');
  assert.ok(['0', '1', '2'].includes(await page.getByTestId('partition').textContent()));
  assert.deepEqual(problems, []);
  await page.close();
});

test('the page fits a phone-width screen', async () => {
  const { page, problems } = await openApp(browser, { width: 390, height: 844, view: 'partitioner' });
  await page.screenshot({ path: screenshotPath('home-phone'), fullPage: true });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `page is ${overflow}px wider than the screen`);
  assert.deepEqual(problems, []);
  await page.close();
});

test('many keys: a hot key makes a hot partition, and adding partitions moves the keys the CLI says move', async (t) => {
  const cli = process.env.KAFKASCOPE_CLI;
  if (!cli || !fs.existsSync(cli)) {
    t.skip('the kafkascope CLI has not been built');
    return;
  }
  const { page, problems } = await openApp(browser, { query: '?play=0', view: 'partitioner' });
  const view = page.getByTestId('key-distribution');
  await view.locator('summary').click();
  const keys = ['router-1', 'router-2', 'router-3', 'router-4', 'router-5', 'router-6'];
  await view.getByTestId('keys-input').fill(`router-1 50\n${keys.slice(1).join('\n')}`);
  await view.getByTestId('keys-partitions').fill('3');
  await view.getByTestId('keys-after').fill('5');
  assert.equal(await view.getByTestId('keys-load').locator('li').count(), 3);
  assert.equal(await view.getByTestId('keys-load-after').locator('li').count(), 5);
  // 50 of 55 records a second come from router-1: its partition takes at least 90%.
  assert.match(await view.getByTestId('keys-hottest').innerText(), /takes (9\d|100)% of the records/);
  // Which keys move, checked against the CLI's partitioner.
  const place = (count) => Object.fromEntries(execFileSync(cli, ['partition', '--partitions', String(count), ...keys], { encoding: 'utf8' })
    .trim().split('\n').map((line) => { const [key, , partition] = line.split('\t'); return [key, Number(partition)]; }));
  const [before, after] = [place(3), place(5)];
  const moving = keys.filter((key) => before[key] !== after[key]);
  const moved = await view.getByTestId('keys-moved').innerText();
  if (moving.length === 0) {
    assert.equal(moved, 'No key moves.');
  } else {
    assert.match(moved, new RegExp(`^${moving.length} of 6 keys move`));
    for (const key of moving) {
      assert.ok(moved.includes(`${key} (p${before[key]} → p${after[key]})`), `${key} missing from ${moved}`);
    }
  }
  await view.screenshot({ path: screenshotPath('partitioner-key-distribution') });
  await view.getByTestId('keys-after').fill('2');
  assert.match(await view.getByTestId('keys-error').innerText(), /only adds partitions/);
  assert.deepEqual(problems, []);
  await page.close();
});
