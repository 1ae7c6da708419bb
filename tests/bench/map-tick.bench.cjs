// The live cluster's tick plus render, in headless Chromium: the bench
// preset (6 brokers, 3 topics of 12 partitions, RF 3, a producer per topic,
// a 3-member group) at full speed, where one play tick is 10 s of simulated
// time. Each measured tick produces 10 records per producer, runs 10 s and
// waits for the page to redraw. Prints figures; asserts nothing about time.
'use strict';

const { launch, openApp } = require('../e2e/browser.cjs');

(async () => {
  const browser = await launch();
  const { page, problems } = await openApp(browser, { query: '?preset=bench' });
  const figures = await page.evaluate(async () => {
    const byId = (id) => document.querySelector(`[data-testid="${id}"]`);
    // Yields to the event loop without setTimeout's 4 ms clamp, so Yew's
    // scheduled render runs before the next tick.
    const yieldToPage = () => new Promise((resolve) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => resolve();
      channel.port2.postMessage(null);
    });
    const tick = async () => {
      byId('cluster-produce').click();
      byId('cluster-run-10s').click();
      await yieldToPage();
    };
    for (let warm = 0; warm < 5; warm++) await tick();
    const samples = [];
    for (let index = 0; index < 60; index++) {
      const started = performance.now();
      await tick();
      samples.push(performance.now() - started);
    }
    samples.sort((left, right) => left - right);
    const mean = samples.reduce((sum, sample) => sum + sample, 0) / samples.length;
    return {
      mean,
      median: samples[Math.floor(samples.length / 2)],
      p95: samples[Math.floor(samples.length * 0.95)],
      worst: samples[samples.length - 1],
      events: Number(byId('cluster').getAttribute('data-events')),
      time: byId('cluster-time').textContent,
      partitions: document.querySelectorAll('[data-testid="topics-table"] tbody tr').length,
    };
  });
  console.log(
    `map tick+render (6 brokers, 3x12 partitions, RF 3, 10 s simulated per tick): ` +
      `mean ${figures.mean.toFixed(1)} ms, median ${figures.median.toFixed(1)} ms, ` +
      `p95 ${figures.p95.toFixed(1)} ms, worst ${figures.worst.toFixed(1)} ms ` +
      `(${figures.partitions} partitions drawn, ${figures.events} events by ${figures.time})`,
  );
  if (problems.length) console.log('page problems:', problems);
  await browser.close();
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
