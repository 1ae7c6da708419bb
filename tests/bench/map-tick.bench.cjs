// The map's play tick plus its render, in headless Chromium: the bench
// preset (6 brokers, 3 topics of 12 partitions, RF 3, a producer per topic
// sending 5 keyed records a second, a 3-member group) playing at full speed
// (100×), where one tick (every 16 ms of real time, a frame) advances 1.6 s of
// simulated time. The page measures each tick from its start to the end of
// the render it causes and shows the mean of the last 60 in the cluster
// section's data-tick-ms attribute. Prints figures; asserts nothing about
// time.
'use strict';

const { launch, openApp } = require('../e2e/browser.cjs');

(async () => {
  const browser = await launch();
  const { page, problems } = await openApp(browser, { query: '?preset=bench&play=0' });
  await page.getByTestId('cluster-speed').selectOption('100000');
  await page.getByTestId('cluster-play').click();
  const started = Date.now();
  // Warm up, then let a full window of 60 ticks pass.
  await page.waitForTimeout(3000);
  const warm = Number(await page.getByTestId('cluster').getAttribute('data-events'));
  await page.waitForTimeout(4000);
  const read = async (name) => page.getByTestId('cluster').getAttribute(name);
  const tickMs = Number(await read('data-tick-ms'));
  const samples = Number(await read('data-tick-samples'));
  const simulationMs = Number(await read('data-simulation-ms'));
  const events = Number(await read('data-events'));
  await page.getByTestId('cluster-play').click();
  const time = await page.getByTestId('cluster-time').textContent();
  const seconds = (Date.now() - started) / 1000;
  console.log(
    `map tick+render (6 brokers, 3x12 partitions, RF 3, 100x: 1.6 s simulated per 16 ms tick): ` +
      `mean ${tickMs.toFixed(1)} ms over the last ${samples} ticks, of which the simulation ${simulationMs.toFixed(1)} ms ` +
      `(${events - warm} events in the last 4 s of play; ${time} after ${seconds.toFixed(1)} s)`,
  );
  if (problems.length) console.log('page problems:', problems);
  await browser.close();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
