// Measures the page's memory over a long run with retention on (#16): the
// live map with 1 KB segments and retention.ms=60000 produces 10 records per
// producer every 10 s and runs ten minutes of the cluster, 10 s at a time;
// after each minute it prints the WebAssembly memory (which never shrinks,
// so it shows the high-water mark) and the JavaScript heap.
// Run by hand after `cargo xtask build`, with dist/ served:
//   KAFKASCOPE_URL=http://127.0.0.1:8097/ CHROMIUM=/usr/bin/chromium node tests/bench/page-memory.cjs
'use strict';

const { launch, openApp } = require('../e2e/browser.cjs');

(async () => {
  const browser = await launch();
  const context = await browser.newContext();
  await context.addInitScript(() => {
    addEventListener('TrunkApplicationStarted', (event) => { window.__wasm = event.detail.wasm; });
  });
  const { page } = await openApp(context, { query: '?play=0' });
  const live = page.getByTestId('cluster');
  const setKnob = async (id, value) => {
    await live.getByTestId(id).fill(value);
    await live.getByTestId(id).press('Enter');
  };
  await setKnob('knob-internal-segment-bytes', '1024');
  await setKnob('knob-retention-ms', '60000');
  const sample = async (minute) => {
    const numbers = await page.evaluate(() => ({
      wasm: window.__wasm ? window.__wasm.memory.buffer.byteLength : null,
      heap: performance.memory ? performance.memory.usedJSHeapSize : null,
      time: document.querySelector('[data-testid="cluster-time"]').textContent,
    }));
    const mib = (bytes) => (bytes == null ? 'n/a' : `${(bytes / 1048576).toFixed(1)} MiB`);
    console.log(`minute ${String(minute).padStart(2)}: ${numbers.time}, wasm memory ${mib(numbers.wasm)}, JS heap ${mib(numbers.heap)}`);
  };
  await sample(0);
  for (let minute = 1; minute <= 10; minute++) {
    for (let second = 0; second < 60; second += 10) {
      await live.getByTestId('cluster-produce').click();
      await live.getByTestId('cluster-run-10s').click();
    }
    await sample(minute);
  }
  await browser.close();
})().catch((error) => { console.error(error); process.exit(1); });
