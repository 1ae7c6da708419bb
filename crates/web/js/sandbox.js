// Runs a learner's snippet in a fresh module Web Worker, never on the page's
// thread. The worker loads the engine's JavaScript API (`pkg/`, built by
// `cargo xtask package`), then takes away the network and storage before
// the snippet's first line runs. The page stops the worker after the time
// limit, so an endless loop costs one worker, not the page.
//
// The Yew app calls `runSnippet(code, timeoutMs, onDone)`; `onDone` gets
// `{ logs, shows, error, timedOut, capped, ms }`.

const MAX_LOG_LINES = 500;
const MAX_LOG_CHARS = 100000;

// Names a snippet may not use: the network, storage and more workers.
const BLOCKED = [
  'fetch', 'XMLHttpRequest', 'WebSocket', 'WebTransport', 'EventSource', 'importScripts',
  'indexedDB', 'caches', 'BroadcastChannel', 'Worker', 'SharedWorker', 'Request',
  'navigator', 'location', 'close',
];

// The worker's first lines; the snippet starts right after them, so a
// position in the worker maps to the snippet by subtracting PRELUDE_LINES.
function prelude(apiUrl, preludeLines) {
  return [
    `import init, * as kafkascope from ${JSON.stringify(apiUrl)};`,
    `const __post = self.postMessage.bind(self);`,
    `await init();`,
    `const { murmur2, murmur2Bytes, partitionFor, partitionForBytes, coordinatorPartition, assign, assignStats, rebalance, simulateKeyless, Cluster } = kafkascope;`,
    `const __text = (value) => typeof value === 'string' ? value : (() => { try { return JSON.stringify(value, null, 2) ?? String(value); } catch { return String(value); } })();`,
    `const __log = (kind) => (...values) => __post({ type: 'log', kind, text: values.map(__text).join(' ') });`,
    `const console = { log: __log('log'), info: __log('log'), debug: __log('log'), warn: __log('warn'), error: __log('error') };`,
    `const show = (value, title) => { try { __post({ type: 'show', title: title == null ? null : String(title), value: JSON.parse(JSON.stringify(value)) }); } catch (error) { __post({ type: 'log', kind: 'error', text: 'show() needs plain data: ' + error.message }); } };`,
    `const partitionMap = (keys, numPartitions) => ({ kind: 'partition-map', numPartitions, placements: keys.map((key) => ({ key, partition: partitionFor(key, numPartitions) })) });`,
    `for (const name of ${JSON.stringify(BLOCKED)}) { const blocked = () => { throw new Error(name + ' is not available in the sandbox: snippets cannot reach the network, storage or the page'); }; try { Object.defineProperty(self, name, { get: blocked, configurable: false }); } catch {} }`,
    `self.onmessage = null; self.postMessage = undefined;`,
    `const __lineOf = (error) => { for (const frame of String(error && error.stack || '').split('\\n')) { const match = /blob:.*:(\\d+):(\\d+)\\)?\\s*$/.exec(frame); if (match && Number(match[1]) > ${preludeLines}) return { line: Number(match[1]), column: Number(match[2]) }; } return null; };`,
    `try { await (async () => {`,
  ];
}

const PRELUDE_LINE_COUNT = prelude('x', 0).length;

function epilogue() {
  return [
    ``,
    `})(); __post({ type: 'done' }); } catch (error) { __post({ type: 'error', message: String(error && error.message || error), name: String(error && error.name || 'Error'), at: __lineOf(error) }); }`,
  ];
}

// Dynamic import() is syntax, not a global, so it cannot be removed; refuse
// it before the worker starts.
function refuseImports(code) {
  const lines = code.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const column = lines[index].search(/\bimport\s*[(\s{*'"]/);
    if (column >= 0) {
      return { message: 'import is not available in the sandbox: the API is already in scope', line: index + 1, column: column + 1 };
    }
  }
  return null;
}

// A module worker that fails to parse reports no position, so the snippet
// is first parsed (never run) by a classic worker, whose error event says
// where the syntax breaks. Calls back with null or { message, line, column }.
function checkSyntax(code, onChecked) {
  const source = `self.postMessage('parsed'); (async function () {\n${code}\n});`;
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  const worker = new Worker(url, { name: 'kafkascope-syntax-check' });
  const done = (answer) => {
    worker.terminate();
    URL.revokeObjectURL(url);
    onChecked(answer);
  };
  worker.onmessage = () => done(null);
  worker.onerror = (event) => {
    event.preventDefault();
    const message = String(event.message || 'the snippet could not be parsed').replace(/^Uncaught /, '');
    const line = event.lineno - 1;
    done({ message, ...(line >= 1 ? { line, column: event.colno } : {}) });
  };
}

export function runSnippet(code, timeoutMs, onDone) {
  checkSyntax(code, (syntaxError) => {
    if (syntaxError) {
      onDone({ logs: [], shows: [], error: { name: 'SyntaxError', ...syntaxError }, timedOut: false, capped: false, ms: 0 });
    } else {
      runChecked(code, timeoutMs, onDone);
    }
  });
}

function runChecked(code, timeoutMs, onDone) {
  const started = performance.now();
  const result = { logs: [], shows: [], error: null, timedOut: false, capped: false, ms: 0 };
  let finished = false;
  let chars = 0;
  const finish = (worker, url) => {
    if (finished) return;
    finished = true;
    if (worker) worker.terminate();
    if (url) URL.revokeObjectURL(url);
    result.ms = Math.round(performance.now() - started);
    onDone(result);
  };
  const refused = refuseImports(code);
  if (refused) {
    result.error = { name: 'SyntaxError', ...refused };
    finish(null, null);
    return;
  }
  const apiUrl = new URL('pkg/kafkascope_js.js', document.baseURI).href;
  const source = [...prelude(apiUrl, PRELUDE_LINE_COUNT), code, ...epilogue()].join('\n');
  const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  let worker;
  try {
    worker = new Worker(url, { type: 'module', name: 'kafkascope-sandbox' });
  } catch (error) {
    result.error = { name: 'Error', message: `the sandbox could not start: ${error.message}` };
    finish(null, url);
    return;
  }
  const toSnippet = (line, column) => {
    const snippetLine = line - PRELUDE_LINE_COUNT;
    return snippetLine >= 1 ? { line: snippetLine, column } : null;
  };
  const timer = setTimeout(() => {
    result.timedOut = true;
    result.error = { name: 'Timeout', message: `stopped after ${timeoutMs} ms: the snippet ran longer than the time limit (an endless loop?)` };
    finish(worker, url);
  }, timeoutMs);
  worker.onmessage = (event) => {
    const message = event.data;
    if (message.type === 'log') {
      if (result.capped) return;
      chars += message.text.length;
      if (result.logs.length >= MAX_LOG_LINES || chars > MAX_LOG_CHARS) {
        result.capped = true;
        return;
      }
      result.logs.push({ kind: message.kind, text: message.text });
    } else if (message.type === 'show') {
      if (result.shows.length < 50) result.shows.push({ title: message.title, value: message.value });
    } else if (message.type === 'done') {
      clearTimeout(timer);
      finish(worker, url);
    } else if (message.type === 'error') {
      clearTimeout(timer);
      const at = message.at ? toSnippet(message.at.line, message.at.column) : null;
      result.error = { name: message.name, message: message.message, ...(at || {}) };
      finish(worker, url);
    }
  };
  // A syntax error stops the module before it runs: the error event says
  // where.
  worker.onerror = (event) => {
    event.preventDefault();
    clearTimeout(timer);
    const at = toSnippet(event.lineno, event.colno);
    const message = String(event.message || 'the snippet could not be parsed').replace(/^Uncaught /, '');
    result.error = { name: /SyntaxError/.test(message) ? 'SyntaxError' : 'Error', message, ...(at || {}) };
    finish(worker, url);
  };
}
