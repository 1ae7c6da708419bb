// A course package's side of the SCORM run-time: find the learning
// platform's API object, start the session, set values, commit, and end
// the session when the learner leaves. What to set comes from the page's
// reducer (`course_model.rs`); this file only speaks to the platform.
//
// SCORM's discovery: the API object (`API` for SCORM 1.2, `API_1484_11`
// for SCORM 2004) sits on a window above the content, so look at each
// parent in turn, then at the opener's chain (a platform that opens the
// content in a new window). A window of another origin cannot be read;
// it is skipped, not an error.
//
// The state lives on `globalThis`: the page's two modules (the lesson's
// and the simulator's) each import this file from their own folder, and
// must share one session.

const MOST_WINDOWS = 500;

function apiOn(win, name) {
  try {
    const api = win[name];
    return api && typeof api === 'object' ? api : null;
  } catch {
    return null;
  }
}

function search(start, name) {
  let win = start;
  for (let hops = 0; win && hops < MOST_WINDOWS; hops++) {
    const api = apiOn(win, name);
    if (api) return api;
    let parent = null;
    try { parent = win.parent; } catch { parent = null; }
    if (!parent || parent === win) break;
    win = parent;
  }
  return null;
}

function find(name) {
  const here = search(window, name);
  if (here) return here;
  let opener = null;
  try { opener = window.opener; } catch { opener = null; }
  return opener ? search(opener, name) : null;
}

const course = (globalThis.__kafkascopeCourse ??= { api: null, v12: false, started: false, finished: false, problem: null });

function call(method12, method2004, ...args) {
  const api = course.api;
  if (!api || course.finished) return '';
  const method = course.v12 ? method12 : method2004;
  try {
    return String(api[method](...args));
  } catch (error) {
    course.problem = `the platform's ${method} failed: ${error && error.message || error}`;
    return '';
  }
}

function lastError() {
  const code = call('LMSGetLastError', 'GetLastError');
  if (!code || code === '0') return null;
  const text = call('LMSGetErrorString', 'GetErrorString', code);
  return `${code} ${text}`.trim();
}

/** The session's length as the version writes a timespan. */
function sessionTime(seconds) {
  const hundredths = Math.round(seconds * 100);
  if (!course.v12) return `PT${hundredths / 100}S`;
  const hours = Math.min(Math.floor(hundredths / 360000), 9999);
  const minutes = Math.floor((hundredths % 360000) / 6000);
  const rest = ((hundredths % 6000) / 100).toFixed(2).padStart(5, '0');
  return `${String(hours).padStart(2, '0')}:${String(minutes).padStart(2, '0')}:${rest}`;
}

function finish() {
  if (!course.started || course.finished || !course.api) return;
  const seconds = Math.max(0, (performance.now() - course.since) / 1000);
  call('LMSSetValue', 'SetValue', course.v12 ? 'cmi.core.session_time' : 'cmi.session_time', sessionTime(seconds));
  call('LMSCommit', 'Commit', '');
  call('LMSFinish', 'Terminate', '');
  course.finished = true;
}

/**
 * Starts the session for `version` (`1.2` or `2004`) once per page;
 * returns null, or why there is none (no platform found, or it refused).
 */
export function courseStart(version) {
  if (course.started) return course.problem;
  course.started = true;
  course.since = performance.now();
  course.v12 = version === '1.2';
  const name = course.v12 ? 'API' : 'API_1484_11';
  course.api = find(name);
  if (!course.api) {
    course.problem = `no SCORM ${version} platform found (no ${name} object above this page): the package works, but nothing is recorded`;
    return course.problem;
  }
  const started = call('LMSInitialize', 'Initialize', '');
  if (started !== 'true') {
    const why = course.problem || lastError() || `it answered ${JSON.stringify(started)}`;
    course.problem = `the learning platform did not start the session, so nothing is recorded: ${why}`;
    course.api = null;
    console.warn(`kafkascope: ${course.problem}`);
    return course.problem;
  }
  // Leaving the page ends the session with a last commit.
  window.addEventListener('pagehide', finish);
  return null;
}

/** A value of the data model, or '' when there is none. */
export function courseGet(key) {
  return course.api ? call('LMSGetValue', 'GetValue', key) : '';
}

/** Sets each [key, value] pair and commits; returns the platform's errors. */
export function courseReport(pairs) {
  if (!course.api || course.finished) return [];
  const errors = [];
  for (const [key, value] of pairs) {
    if (call('LMSSetValue', 'SetValue', key, value) !== 'true') errors.push(`${key}: ${lastError() || 'refused'}`);
  }
  call('LMSCommit', 'Commit', '');
  return errors;
}
