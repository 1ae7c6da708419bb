// What the costliest inputs the page accepts cost in headless Chromium, at
// full speed and with the CPU throttled four times (a slow laptop): a run
// link near its work limit (`limits::MAX_LINK_WORK`) replayed a slice at a
// time, a scenario of 64 brokers and 1,000 partitions played to the story
// work limit (`MAX_STORY_WORK`) and refused, and a story link with the most
// forks a link may carry (`MAX_LINK_FORKS`). For each: the time until the
// page shows the outcome and the longest task the page's main thread ran
// (from the Long Tasks API: tasks over 50 ms). Prints figures; asserts
// nothing about time.
'use strict';

const { launch, APP_URL, decodeRun, encodeRun, LARGEST_SCENARIO } = require('../e2e/browser.cjs');

/** A page with the CPU slowed `rate` times, recording its long tasks. */
async function slowedPage(browser, rate) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, serviceWorkers: 'block' });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Emulation.setCPUThrottlingRate', { rate });
  await page.addInitScript(() => {
    window.__longTasks = [];
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.__longTasks.push(entry.duration);
    }).observe({ type: 'longtask', buffered: true });
  });
  return { page, context };
}

/** Opens `query`, waits for `done` (a selector), and measures. */
async function measure(browser, rate, query, done, prepare) {
  const { page, context } = await slowedPage(browser, rate);
  if (prepare) await prepare(page);
  const started = Date.now();
  await page.goto(APP_URL + query);
  await page.waitForSelector(done, { timeout: 600000 });
  const seconds = (Date.now() - started) / 1000;
  const longTasks = await page.evaluate(() => window.__longTasks);
  const tasksAfterStart = longTasks.filter((duration) => duration > 0);
  await context.close();
  return {
    seconds,
    longest: Math.max(0, ...tasksAfterStart),
    over100: tasksAfterStart.filter((duration) => duration > 100).length,
  };
}

(async () => {
  const browser = await launch();
  // A real link copied from the map, then asked to replay nearly as many
  // events as a link on the default cluster may.
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${APP_URL}?play=0#map`);
  await page.getByTestId('cluster-produce').click();
  await page.getByTestId('cluster-run-1s').click();
  await page.getByTestId('copy-run-link').click();
  const url = await page.getByTestId('run-link').inputValue();
  await page.close();
  const run = decodeRun(new URL(url).searchParams.get('run'));
  run.events = 700000;
  const link = encodeRun(run);

  const big = LARGEST_SCENARIO;
  const serveBig = (page) => page.route('**/attacker/big.json', (route) => route.fulfill({ contentType: 'application/json', body: JSON.stringify(big) }));
  const forks = Array.from({ length: 16 }, (_, index) => `${index + 2}:kill-1`).join(',');

  for (const rate of [1, 4]) {
    const cpu = rate === 1 ? 'full speed' : `CPU slowed ${rate}x`;
    const replay = await measure(browser, rate, `?play=0&run=${link}#map`, '[data-testid="run-restored"]');
    console.log(`run link, 700,000 events on the default cluster (${cpu}): replayed in ${replay.seconds.toFixed(1)} s; longest task ${replay.longest.toFixed(0)} ms, ${replay.over100} tasks over 100 ms`);
    const scenario = await measure(
      browser, rate,
      `?play=0&scenario=${encodeURIComponent(new URL('attacker/big.json', APP_URL).href)}#steps`,
      '[data-testid="scenario-problem"]', serveBig,
    );
    console.log(`scenario, 64 brokers x 1,000 partitions, refused at the story work limit (${cpu}): ${scenario.seconds.toFixed(1)} s; longest task ${scenario.longest.toFixed(0)} ms`);
    const forked = await measure(browser, rate, `?play=0&story=exercise&fork=${forks}#steps`, '[data-testid="steps"][data-steps]');
    console.log(`story link with 16 forks (${cpu}): ${forked.seconds.toFixed(1)} s; longest task ${forked.longest.toFixed(0)} ms`);
  }
  await browser.close();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
