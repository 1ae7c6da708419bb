// The simulator's module, loaded when the page first needs it.
//
// The page's first module (the shell: the lesson, the partitioner, the
// sandbox's panel, Learn) does not hold the simulator. The live map, the
// sequence steps and the exercises' runs are a second wasm module,
// `sim/kafkascope-sim-<content hash>.js` next to the page (index.html's
// `kafkascope-simulator` meta names it), fetched once: when the map or the
// steps come near the screen, when a link or the address asks for them, or
// when an exercise runs. See ARCHITECTURE.md ("Two modules").
//
// The state is on <html data-simulator>: waiting, loading, ready or failed.

let loading = null;
// A failed module import may be remembered by the browser for its address:
// a second try asks for it under a new one.
let tries = 0;

function setState(state) {
  document.documentElement.dataset.simulator = state;
}

/** Marks the simulator as not yet asked for, unless it already is. */
export function simulatorWaiting() {
  if (!document.documentElement.dataset.simulator) setState('waiting');
}

/** Loads the module once; resolves with it (a failed load may be tried again). */
export function loadSimulator() {
  if (!loading) {
    setState('loading');
    loading = (async () => {
      // The build names the module after its content (index.html's meta).
      const named = document.querySelector('meta[name="kafkascope-simulator"]')?.content || 'sim/kafkascope-sim.js';
      const address = new URL(named, document.baseURI);
      const wasm = new URL(address.pathname.replace(/\.js$/, '_bg.wasm'), address);
      if (tries > 0) address.searchParams.set('try', String(tries));
      tries += 1;
      const module = await import(address.href);
      await module.default({ module_or_path: wasm });
      setState('ready');
      return module;
    })().catch((error) => {
      loading = null;
      setState('failed');
      throw error instanceof Error ? error : new Error(String(error));
    });
  }
  return loading;
}

/** Draws `part` ("map" or "steps") of the simulator into `element`. */
export async function mountSimulator(part, element) {
  const module = await loadSimulator();
  module.mount(part, element);
}

/** Runs the lesson's exercise `index` and resolves with its JSON result. */
export async function revealExercise(index) {
  const module = await loadSimulator();
  return module.revealExercise(index);
}

/**
 * Calls `callback` once `element` comes within half a screen of the
 * viewport; returns the function that stops watching.
 */
export function whenNear(element, callback) {
  if (typeof IntersectionObserver !== 'function') {
    callback();
    return () => {};
  }
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting)) {
      observer.disconnect();
      callback();
    }
  }, { rootMargin: '50% 0px 50% 0px' });
  observer.observe(element);
  return () => observer.disconnect();
}
