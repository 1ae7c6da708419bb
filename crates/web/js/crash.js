// When kafkascope's own code fails: a WebAssembly trap (a Rust panic, which
// aborts in the release build, or any other trap) leaves the module that
// trapped unable to go on. Without this the page would look alive and stop
// answering. With it, the part that stopped says so, says it is a bug, and
// offers to reload the page.
//
// Each module's panic hook (`crash.rs`) says `kafkascope-panic` on window
// with the module's name and the panic's message just before the trap; the
// trap itself reaches the page as an uncaught `WebAssembly.RuntimeError`
// (an `error` event, or `unhandledrejection` from a promise). A trap with
// no panic before it is put down to the simulator when its stack passes
// through the simulator's script, else to the page.
//
// The words come from Rust (`crash.rs`), the one place the page's words
// live; this file only places them. It writes only into the module that
// stopped (the simulator's sections, whose own code no longer runs) or at
// the top of the page's body, where the start-up message also goes.

let words = null;
let onStopped = null;
let lastPanic = null;
const shown = new Set();

const isTrap = (error) => typeof WebAssembly === 'object' && error instanceof WebAssembly.RuntimeError;

/**
 * Installs the listeners once; `given` holds the words for each case, and
 * `tell(module, what)` tells a host page (it is the first module's, so it
 * is gone when the page's own module is the one that stopped).
 */
export function watchCrashes(given, tell) {
  if (words) return;
  words = given;
  onStopped = tell;
  addEventListener('kafkascope-panic', (event) => {
    const detail = event.detail;
    if (detail && typeof detail.module === 'string' && typeof detail.message === 'string') lastPanic = detail;
  });
  addEventListener('error', (event) => {
    if (isTrap(event.error)) stopped(event.error);
  });
  addEventListener('unhandledrejection', (event) => {
    if (isTrap(event.reason)) stopped(event.reason);
  });
}

function stopped(error) {
  const panic = lastPanic;
  lastPanic = null;
  let stack = '';
  try { stack = String(error.stack || ''); } catch {}
  const module = panic ? panic.module : (/\/sim\/kafkascope-sim-/.test(stack) ? 'simulator' : 'page');
  const what = panic ? panic.message : String(error.message || error);
  if (shown.has(module)) return;
  shown.add(module);
  document.documentElement.dataset.crashed = [...shown].join(' ');
  const said = words[module] || words.page;
  const sections = module === 'simulator'
    ? [...document.querySelectorAll('.sim-slot')].map((slot) => slot.querySelector('section')).filter(Boolean)
    : [];
  if (sections.length === 0) {
    document.body.prepend(note(said, what, 'page'));
  } else {
    for (const section of sections) section.prepend(note(said, what, section.id || 'section'));
  }
  try { onStopped(module, what); } catch {}
}

function note(said, what, where) {
  const box = document.createElement('div');
  box.className = 'crash-note';
  box.setAttribute('role', 'alert');
  box.setAttribute('data-testid', 'crash-note');
  box.setAttribute('data-part', where);
  const heading = document.createElement('p');
  heading.className = 'crash-heading';
  heading.textContent = said.heading;
  const body = document.createElement('p');
  body.textContent = said.body;
  const reload = document.createElement('button');
  reload.type = 'button';
  reload.textContent = words.reload;
  reload.setAttribute('data-testid', 'crash-reload');
  reload.addEventListener('click', () => location.reload());
  const details = document.createElement('details');
  const summary = document.createElement('summary');
  summary.textContent = words.details;
  const code = document.createElement('code');
  code.textContent = what.length > 500 ? what.slice(0, 500) + '…' : what;
  details.append(summary, code);
  box.append(heading, body, reload, details);
  return box;
}
