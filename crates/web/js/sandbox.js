// Runs a learner's snippet isolated by the browser, never on the page's
// thread and never with the page's origin.
//
// Three layers, each with its own job:
//
// - The page (this module, imported by the Yew app) fetches the engine once:
//   the simulator's module (`sim/`, the file the map and the steps run on,
//   which also exports the JavaScript API), so a learner who has opened the
//   map downloads nothing more (#35). It creates one hidden `<iframe
//   sandbox="allow-scripts">` (no `allow-same-origin`, so an opaque origin:
//   no cookie, storage or cache of the app's origin is reachable from it),
//   writes a fresh secret into its document, accepts the MessageChannel the
//   frame opens only with that secret (a page that frames kafkascope can
//   navigate the frame to a document of its own, which knows no secret and
//   gets nothing; a later load of the frame is taken as interference and
//   the frame torn down), hands it the engine's glue source and wasm bytes
//   over that channel, and afterwards only exchanges `run` requests and
//   `result` answers with it. It validates every answer's shape and type and keeps a time limit
//   of its own: a frame that does not answer is removed and recreated.
// - The frame (`frameMain`, a srcdoc document whose Content-Security-Policy
//   forbids every fetch: `default-src 'none'`, scripts only from its own
//   nonce and from blob: URLs it creates, wasm compilation allowed) compiles
//   the engine once, and per run parses the snippet in a throwaway worker
//   (never running it), then runs it in a fresh worker, started ahead of
//   the run with the compiled module and a private MessagePort. It enforces the time limit
//   by terminating the worker, and counts and caps what comes back. No
//   snippet code ever runs in the frame's document.
// - The run worker (`workerMain`) inherits the frame's policy and opaque
//   origin. It instantiates the engine, keeps the port and its own
//   counters in a closure, takes the worker's own `postMessage` away, and
//   only then loads the snippet (a separate blob script), so nothing the
//   snippet does can reach the channel or exceed the caps.
//
// The Yew app calls `runSnippet(code, timeoutMs, onDone)`; `onDone` gets
// `{ logs, shows, error, timedOut, capped, ms }`.

const LIMITS = {
  logLines: 500,
  logChars: 100000,
  shows: 50,
  showChars: 200000,
  showCharsTotal: 1000000,
  showDepth: 64,
  heartbeatMs: 250,
  errorChars: 2000,
  codeChars: 1000000,
};

/// Names that get a friendly error in the worker. The policy and the opaque
/// origin are what stop them; this only says so in plain words. Nested
/// workers stay available: they inherit the same policy and origin and die
/// with the run's worker.
const COURTESY = [
  'fetch', 'XMLHttpRequest', 'WebSocket', 'WebSocketStream', 'WebTransport', 'EventSource', 'importScripts',
  'indexedDB', 'caches', 'BroadcastChannel', 'Request', 'FontFace', 'fonts',
];

/// How long the first start (fetching the engine, compiling it in the
/// frame) may take.
const START_LIMIT_MS = 60000;
/// How much later than the frame's own time limits (one for the check and
/// the worker's start, one for the snippet) the page gives up on the frame
/// and recreates it.
const PAGE_GRACE_MS = 1500;
/// How long the frame may stay silent during a run (it says it is alive
/// every `LIMITS.heartbeatMs`) before the page takes it for dead.
const SILENCE_LIMIT_MS = 3000;
const WATCHDOG_TICK_MS = 500;

// ---------------------------------------------------------------------------
// The run worker. This function's source is put, after the engine's glue,
// into the worker's script; it runs before the snippet exists.
function workerMain(limits, courtesy) {
  'use strict';
  // Everything the sandbox's own code needs later, captured now: the snippet
  // may replace any global or prototype member once it runs.
  const scope = self;
  const bind = Function.prototype.bind;
  const bound = (fn, thisArg) => bind.call(fn, thisArg);
  const load = bound(scope.importScripts, scope);
  const stringify = JSON.stringify;
  const StringOf = String;
  const defineProperty = Object.defineProperty;
  const getPrototypeOf = Object.getPrototypeOf;
  const hasOwn = Object.prototype.hasOwnProperty;
  const apply = Reflect.apply;
  const regexExec = RegExp.prototype.exec;
  const split = String.prototype.split;
  const slice = String.prototype.slice;
  const indexOf = String.prototype.indexOf;
  const StringLength = (text) => text.length;

  let entered = null;
  defineProperty(scope, '__kafkascopeEnter', {
    value: (body) => {
      if (entered === null && typeof body === 'function') entered = body;
    },
    writable: false,
    configurable: false,
  });

  const text = (value) => {
    if (typeof value === 'string') return value;
    try {
      const json = stringify(value, null, 2);
      return typeof json === 'string' ? json : StringOf(value);
    } catch {
      try { return StringOf(value); } catch { return '[value that cannot be printed]'; }
    }
  };
  const clip = (value) => {
    let result;
    try { result = typeof value === 'string' ? value : StringOf(value); } catch { result = ''; }
    return StringLength(result) > limits.errorChars ? apply(slice, result, [0, limits.errorChars]) + '…' : result;
  };

  scope.onmessage = (event) => {
    scope.onmessage = null;
    const data = event.data;
    const port = event.ports[0];
    const send = bound(MessagePort.prototype.postMessage, port);
    let snippetUrl = '';

    let lines = 0;
    let chars = 0;
    let shows = 0;
    let showChars = 0;
    let capped = false;
    const cap = () => {
      if (!capped) {
        capped = true;
        send({ type: 'capped' });
      }
    };
    const log = (kind) => (...values) => {
      if (capped) return;
      let line = '';
      for (let index = 0; index < values.length; index++) {
        const piece = text(values[index]);
        line = index === 0 ? piece : line + ' ' + piece;
        if (chars + StringLength(line) > limits.logChars) break;
      }
      lines += 1;
      chars += StringLength(line);
      if (lines > limits.logLines || chars > limits.logChars) {
        cap();
        return;
      }
      send({ type: 'log', kind, text: line });
    };
    const console = Object.freeze({
      log: log('log'), info: log('log'), debug: log('log'), trace: log('log'),
      warn: log('warn'), error: log('error'),
    });
    const show = (value, title) => {
      let json;
      try {
        json = stringify(value);
      } catch (error) {
        console.error('show() needs plain data: ' + clip(error && error.message));
        return;
      }
      if (typeof json !== 'string') {
        console.error('show() needs plain data (got ' + typeof value + ')');
        return;
      }
      if (shows >= limits.shows) {
        cap();
        return;
      }
      if (StringLength(json) > limits.showChars || showChars + StringLength(json) > limits.showCharsTotal) {
        console.error(`show() was given ${StringLength(json)} characters of JSON; the sandbox draws up to ${limits.showChars}`);
        return;
      }
      shows += 1;
      showChars += StringLength(json);
      send({ type: 'show', title: title == null ? null : clip(title), json });
    };
    const partitionFor = scope.partitionFor;
    const partitionMap = (keys, numPartitions) => ({
      kind: 'partition-map',
      numPartitions,
      placements: keys.map((key) => ({ key, partition: partitionFor(key, numPartitions) })),
    });
    // The position of an error in the snippet: its first stack frame in the
    // snippet's script (line 1 of which is the wrapper).
    const positionOf = (error) => {
      let stack = '';
      try { stack = StringOf(error && error.stack || ''); } catch { return null; }
      const frames = apply(split, stack, ['\n']);
      for (let index = 0; index < frames.length; index++) {
        const frame = frames[index];
        if (apply(indexOf, frame, [snippetUrl]) < 0) continue;
        const match = apply(regexExec, /:(\d+):(\d+)\)?\s*$/, [frame]);
        if (match && +match[1] > 1) return { line: +match[1] - 1, column: +match[2] };
      }
      return null;
    };
    const fail = (error) => {
      let name = 'Error';
      let message = '';
      try { name = clip(error && error.name || 'Error'); } catch {}
      try { message = clip(error && typeof error === 'object' && 'message' in error ? error.message : error); } catch {}
      send({ type: 'error', name, message, at: positionOf(error) });
    };

    try {
      scope.initSync({ module: data.module });
    } catch (error) {
      fail(error);
      return;
    }

    // The engine is ready; the snippet comes with `go` when the frame has
    // checked its syntax (this worker is started ahead of the run).
    port.onmessage = (go) => {
      port.onmessage = null;
      snippetUrl = go.data && typeof go.data.snippetUrl === 'string' ? go.data.snippetUrl : '';
      // The worker's own channel to the frame goes: the frame listens only on
      // the private port, and the snippet cannot post to the frame at all.
      for (let proto = scope; proto; proto = getPrototypeOf(proto)) {
        if (apply(hasOwn, proto, ['postMessage'])) {
          try { delete proto.postMessage; } catch {}
        }
      }
      defineProperty(scope, 'console', { value: console, writable: false, configurable: false });
      for (const name of courtesy) {
        const refuse = () => {
          throw new Error(name + ' is not available in the sandbox: snippets cannot reach the network, storage or the page');
        };
        try { defineProperty(scope, name, { get: refuse, set: refuse, configurable: false }); } catch {}
      }

      send({ type: 'started' });
      try {
        load(snippetUrl);
      } catch (error) {
        fail(error);
        return;
      }
      const body = entered;
      if (typeof body !== 'function') {
        fail(new Error('the snippet did not start'));
        return;
      }
      (async () => {
        try {
          await body(console, show, partitionMap);
          send({ type: 'done' });
        } catch (error) {
          fail(error);
        }
      })();
    };
  };
}

// ---------------------------------------------------------------------------
// The isolated frame's script. Its source goes into the srcdoc, with the
// worker's source and the limits as arguments.
function frameMain(workerSource, limits, courtesy, secret) {
  'use strict';
  let port = null;
  let workerUrl = null;
  let engine = null;
  let current = null;

  // A courtesy for the old friendly message; the policy is what refuses.
  const refuseImports = (code) => {
    const lines = code.split('\n');
    for (let index = 0; index < lines.length; index++) {
      const column = lines[index].search(/\bimport\s*[(\s{*'"]/);
      if (column >= 0) {
        return { message: 'import is not available in the sandbox: the API is already in scope', line: index + 1, column: column + 1 };
      }
    }
    return null;
  };

  // The engine's ES module glue as a classic script: workers created from
  // blob: URLs in an opaque origin cannot be module workers in Chromium.
  // The module also draws the map, and its glue imports the page's own
  // scripts for that (the course's records): in a worker those imports are
  // functions that throw, never called by the JavaScript API.
  const classicGlue = (glue) => {
    const absent = 'const __kafkascopeAbsent = new Proxy({}, { get: (target, name) => function () { '
      + "throw new Error('the sandbox has no ' + String(name)); } });\n";
    const script = absent + glue
      .replace(/^import \{([^}]*)\} from (['"])[^'"\n]*\2;?[ \t]*$/gm,
        (line, names) => `const {${names.replace(/\s+as\s+/g, ': ')}} = __kafkascopeAbsent;`)
      .replace(/^import \* as ([A-Za-z_$][\w$]*) from (['"])[^'"\n]*\2;?[ \t]*$/gm, 'const $1 = __kafkascopeAbsent;')
      .replace(/^export \{[^}]*\};?[ \t]*$/gm, '')
      .replace(/^export (?=(?:async )?function |class |const |let |var )/gm, '')
      .replace(/import\.meta\.url/g, 'self.location.href');
    if (/^\s*(?:export|import)\b/m.test(script)) throw new Error('the engine glue has an unexpected shape');
    return script;
  };

  // Shown values reach the page's Rust code, which walks them recursively:
  // refuse deep nesting here.
  const shallow = (value, maxDepth) => {
    const stack = [[value, 1]];
    while (stack.length > 0) {
      const [item, depth] = stack.pop();
      if (item === null || typeof item !== 'object') continue;
      if (depth > maxDepth) return false;
      for (const key of Object.keys(item)) stack.push([item[key], depth + 1]);
    }
    return true;
  };

  const blobUrl = (source) => URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
  const clip = (value) => {
    const text = typeof value === 'string' ? value : '';
    return text.length > limits.errorChars ? text.slice(0, limits.errorChars) + '…' : text;
  };
  const position = (at) =>
    at && typeof at === 'object' && Number.isInteger(at.line) && Number.isInteger(at.column) && at.line >= 1 && at.column >= 0
      ? { line: at.line, column: at.column }
      : {};

  const start = async (data, channelPort) => {
    port = channelPort;
    try {
      engine = await WebAssembly.compile(data.wasm);
      const glue = classicGlue(String(data.glue));
      workerUrl = blobUrl(`${glue}\n;(${workerSource})(${JSON.stringify(limits)}, ${JSON.stringify(courtesy)});\n`);
      port.onmessage = (event) => onRun(event.data);
      prepareSpare();
      port.postMessage({ type: 'ready' });
    } catch (error) {
      port.postMessage({ type: 'failed', message: clip(String(error && error.message || error)) });
    }
  };

  // This document opens the channel and proves to the page that it is the
  // document the page made: the page wrote `secret` into it and nowhere
  // else. A framing page can navigate this frame to a document of its own,
  // but that document knows no secret, so the page never sends it code
  // (the page also treats any later load of the frame as interference).
  // No snippet code ever runs in a document.
  const channel = new MessageChannel();
  channel.port1.onmessage = (event) => {
    channel.port1.onmessage = null;
    const data = event.data;
    if (!data || data.type !== 'init' || !(data.wasm instanceof ArrayBuffer) || typeof data.glue !== 'string') return;
    start(data, channel.port1);
  };
  // Navigated away (a framing page can do that): say so over the channel,
  // so the page stops trusting this frame at once.
  window.addEventListener('pagehide', () => channel.port1.postMessage({ type: 'leaving' }));
  window.parent.postMessage({ type: 'kafkascope-sandbox-hello', secret }, '*', [channel.port2]);

  const onRun = (request) => {
    if (!request || request.type !== 'run' || current !== null) return;
    const { id, code, timeoutMs } = request;
    if (typeof code !== 'string' || code.length > limits.codeChars || !Number.isFinite(timeoutMs)) {
      port.postMessage({ type: 'result', id, result: { logs: [], shows: [], error: { name: 'Error', message: 'the snippet or its time limit is not acceptable' }, timedOut: false, capped: false, ms: 0 } });
      return;
    }
    const run = {
      id,
      started: performance.now(),
      result: { logs: [], shows: [], error: null, timedOut: false, capped: false, ms: 0 },
      workers: [],
      urls: [],
      ports: [],
      timer: 0,
      stop: null,
      timeoutMs: 0,
      snippetStarted: false,
      alive: 0,
      chars: 0,
      showChars: 0,
    };
    current = run;
    // Tells the page the frame is alive, so a frame that died (a renderer
    // that ran out of memory, say) is noticed long before the time limit.
    run.alive = setInterval(() => port.postMessage({ type: 'alive', id }), limits.heartbeatMs);
    // The limit runs twice at most: once for the syntax check and the
    // worker's start (on a busy machine a first start can be slow, and
    // stopping a worker mid-load is no snippet's fault), and once, from the
    // worker's `started`, for the snippet itself.
    run.stop = () => {
      run.result.timedOut = true;
      run.result.error = { name: 'Timeout', message: `stopped after ${timeoutMs} ms: the snippet ran longer than the time limit (an endless loop?)` };
      finish(run);
    };
    run.timeoutMs = timeoutMs;
    run.timer = setTimeout(run.stop, timeoutMs);
    checkSyntax(run, code, () => {
      const refused = refuseImports(code);
      if (refused) {
        run.result.error = { name: 'SyntaxError', ...refused };
        finish(run);
        return;
      }
      execute(run, code);
    });
  };

  // Tears down everything the run started and answers the page once.
  const finish = (run) => {
    if (current !== run) return;
    current = null;
    clearTimeout(run.timer);
    clearInterval(run.alive);
    for (const worker of run.workers) worker.terminate();
    for (const channelPort of run.ports) channelPort.close();
    for (const url of run.urls) URL.revokeObjectURL(url);
    run.result.ms = Math.round(performance.now() - run.started);
    port.postMessage({ type: 'result', id: run.id, result: run.result });
    prepareSpare();
  };

  // Parses without running: the check script throws before its first
  // statement that could be the snippet's, so a snippet that closes the
  // wrapper early still never executes; a syntax error fails the parse and
  // its event says where.
  const checkSyntax = (run, code, onParsed) => {
    const url = blobUrl(`'use strict'; throw 'kafkascope-parsed'; (async function (console, show, partitionMap) {\n${code}\n});`);
    run.urls.push(url);
    const worker = new Worker(url, { name: 'kafkascope-syntax-check' });
    run.workers.push(worker);
    worker.onerror = (event) => {
      event.preventDefault();
      worker.terminate();
      if (current !== run) return;
      const message = String(event.message || 'the snippet could not be parsed').replace(/^Uncaught /, '');
      if (message === 'kafkascope-parsed') {
        onParsed();
        return;
      }
      const line = event.lineno - 1;
      run.result.error = { name: 'SyntaxError', message: clip(message), ...(line >= 1 ? { line, column: event.colno } : {}) };
      finish(run);
    };
  };

  // The next run's worker, started ahead: its engine is instantiated
  // while nobody waits, and it waits for `go` on its private port.
  let spare = null;
  const prepareSpare = () => {
    if (spare !== null || !workerUrl) return;
    const channel = new MessageChannel();
    const worker = new Worker(workerUrl, { name: 'kafkascope-sandbox' });
    worker.postMessage({ module: engine }, [channel.port2]);
    spare = { worker, port: channel.port1 };
  };
  const takeSpare = () => {
    prepareSpare();
    const taken = spare;
    spare = null;
    return taken;
  };

  const execute = (run, code) => {
    const snippetUrl = blobUrl(`'use strict'; self.__kafkascopeEnter(async function (console, show, partitionMap) {\n${code}\n});`);
    run.urls.push(snippetUrl);
    const { worker, port: runPort } = takeSpare();
    run.ports.push(runPort);
    run.workers.push(worker);
    const result = run.result;
    runPort.onmessage = (event) => {
      if (current !== run) return;
      const message = event.data;
      if (!message || typeof message !== 'object') return;
      if (message.type === 'log' && typeof message.text === 'string' && ['log', 'warn', 'error'].includes(message.kind)) {
        if (result.capped) return;
        run.chars += message.text.length;
        if (result.logs.length >= limits.logLines || run.chars > limits.logChars) {
          result.capped = true;
          return;
        }
        result.logs.push({ kind: message.kind, text: message.text });
      } else if (message.type === 'show' && typeof message.json === 'string' && (message.title === null || typeof message.title === 'string')) {
        run.showChars += message.json.length;
        if (result.shows.length >= limits.shows || message.json.length > limits.showChars || run.showChars > limits.showCharsTotal) {
          result.capped = true;
          return;
        }
        let value;
        try {
          value = JSON.parse(message.json);
        } catch {
          return;
        }
        if (shallow(value, limits.showDepth)) {
          result.shows.push({ title: message.title, value });
        } else if (result.logs.length < limits.logLines) {
          result.logs.push({ kind: 'error', text: `show() was given a value nested deeper than ${limits.showDepth} levels; the sandbox draws up to ${limits.showDepth}` });
        }
      } else if (message.type === 'started') {
        if (run.snippetStarted) return;
        run.snippetStarted = true;
        clearTimeout(run.timer);
        run.started = performance.now();
        run.timer = setTimeout(run.stop, run.timeoutMs);
      } else if (message.type === 'capped') {
        result.capped = true;
      } else if (message.type === 'done') {
        finish(run);
      } else if (message.type === 'error') {
        result.error = { name: clip(message.name) || 'Error', message: clip(message.message), ...position(message.at) };
        finish(run);
      }
    };
    // An error the snippet's own code did not catch (in a timer, say).
    worker.onerror = (event) => {
      event.preventDefault();
      if (current !== run) return;
      const message = String(event.message || 'the snippet failed').replace(/^Uncaught /, '');
      const at = event.filename === snippetUrl && event.lineno > 1 ? { line: event.lineno - 1, column: event.colno } : {};
      result.error = { name: /^(\w*Error)\b/.exec(message)?.[1] || 'Error', message: clip(message), ...at };
      finish(run);
    };
    runPort.postMessage({ type: 'go', snippetUrl });
  };
}

// ---------------------------------------------------------------------------
// The page's side.

let sandbox = null;

/// The frame's document: its policy first, then its one script.
function frameDocument(nonce, secret) {
  const policy = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}' blob: 'wasm-unsafe-eval'`,
    'worker-src blob:',
    "connect-src 'none'",
    "font-src 'none'",
    "img-src 'none'",
    "media-src 'none'",
    "style-src 'none'",
    "object-src 'none'",
    "frame-src 'none'",
    "manifest-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
  const script = `(${frameMain.toString()})(${JSON.stringify(workerMain.toString())}, ${JSON.stringify(LIMITS)}, ${JSON.stringify(COURTESY)}, ${JSON.stringify(secret)});`;
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${policy}">`
    + `<script nonce="${nonce}">${script.replace(/<\/script/gi, '<\\/script')}</script></head><body></body></html>`;
}

function randomNonce() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/// The engine's glue and wasm, fetched by the page once (the frame cannot
/// fetch anything): the simulator's module, at the addresses the map loads
/// it from (index.html's `kafkascope-simulator` meta), so the browser's
/// cache or the offline cache answers when the map came first.
let engineFiles = null;
function fetchEngine() {
  if (!engineFiles) {
    const named = document.querySelector('meta[name="kafkascope-simulator"]')?.content || 'sim/kafkascope-sim.js';
    const script = new URL(named, document.baseURI);
    const module = new URL(script.pathname.replace(/\.js$/, '_bg.wasm'), script);
    const get = async (address, as) => {
      const response = await fetch(address);
      if (!response.ok) throw new Error(`${address.pathname}: HTTP ${response.status}`);
      return as === 'text' ? response.text() : response.arrayBuffer();
    };
    engineFiles = Promise.all([get(script, 'text'), get(module, 'bytes')])
      .then(([glue, wasm]) => ({ glue, wasm }));
    engineFiles.catch(() => { engineFiles = null; });
  }
  return engineFiles;
}

/// Interference found while no run was waiting: the next run reports it.
let interference = null;

/// What the learner reads when a document kafkascope did not make got into
/// the sandbox frame.
const INTERFERED = 'the sandbox was interfered with: another page replaced its frame\'s document, so nothing was sent to it and no result from it is shown; run again to start a new sandbox';

/// Creates the isolated frame (once per page, again after a teardown) and
/// resolves with its port when the engine is compiled in it. The channel is
/// authenticated: the page writes a fresh secret into the frame's document,
/// and accepts the channel only from a `hello` carrying it, sent by the
/// frame's window. A wrong or second `hello`, a second load of the frame,
/// or our document saying it is leaving (each a navigation by a page that
/// frames kafkascope) tears the frame down and fails the run in progress,
/// or the next one, with [`INTERFERED`].
function ensureSandbox() {
  if (sandbox) return sandbox.ready;
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.setAttribute('title', 'kafkascope sandbox (hidden)');
  frame.setAttribute('aria-hidden', 'true');
  frame.setAttribute('tabindex', '-1');
  frame.setAttribute('data-testid', 'sandbox-frame');
  frame.hidden = true;
  const secret = randomNonce();
  frame.srcdoc = frameDocument(randomNonce(), secret);
  const state = { frame, port: null, ready: null, started: false, onResult: null, onInterfered: null, stopListening: null };
  const files = fetchEngine();
  state.ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the sandbox did not start in time')), START_LIMIT_MS);
    const interfered = () => {
      if (sandbox !== state) return;
      clearTimeout(timer);
      reject(new Error(INTERFERED));
      const onInterfered = state.onInterfered;
      teardown(state);
      // A run waiting for the frame to start hears it from the rejection;
      // one in progress from `onInterfered`; with neither, the next run.
      if (onInterfered) onInterfered();
      else if (state.started) interference = INTERFERED;
    };
    // Our document loads once (its hello may come before or after that
    // load); a second load is a navigation nobody here made.
    let loads = 0;
    frame.addEventListener('load', () => {
      loads += 1;
      if (loads > 1) interfered();
    });
    const onHello = (event) => {
      if (sandbox !== state || event.source !== frame.contentWindow) return;
      const data = event.data;
      if (!data || typeof data !== 'object' || data.type !== 'kafkascope-sandbox-hello') return;
      if (state.port !== null || data.secret !== secret || !event.ports[0]) {
        interfered();
        return;
      }
      const port = event.ports[0];
      state.port = port;
      port.onmessage = (message) => {
        const answer = message.data;
        if (!answer || typeof answer !== 'object') return;
        if (answer.type === 'leaving') {
          interfered();
        } else if (answer.type === 'ready') {
          clearTimeout(timer);
          state.started = true;
          resolve(port);
        } else if (answer.type === 'failed') {
          clearTimeout(timer);
          reject(new Error(typeof answer.message === 'string' ? answer.message : 'unknown failure'));
        } else if ((answer.type === 'result' || answer.type === 'alive') && state.onResult) {
          state.onResult(answer);
        }
      };
      files.then(({ glue, wasm }) => {
        if (sandbox === state) port.postMessage({ type: 'init', glue, wasm: wasm.slice(0) });
      }, () => {});
    };
    files.catch((error) => {
      clearTimeout(timer);
      reject(error);
    });
    window.addEventListener('message', onHello);
    state.stopListening = () => window.removeEventListener('message', onHello);
  });
  state.ready.catch(() => teardown(state));
  sandbox = state;
  (document.body || document.documentElement).appendChild(frame);
  return state.ready;
}

/// Removes the frame and everything in it (workers included).
function teardown(state) {
  if (sandbox === state) sandbox = null;
  if (state.stopListening) state.stopListening();
  if (state.port) state.port.close();
  state.frame.remove();
}

const isString = (value, max) => typeof value === 'string' && value.length <= max;
const isPlain = (value) => value !== null && typeof value === 'object';

/// Rebuilds a result from the frame, keeping only well-formed parts.
function validResult(raw) {
  if (!isPlain(raw)) return null;
  const result = { logs: [], shows: [], error: null, timedOut: raw.timedOut === true, capped: raw.capped === true, ms: 0 };
  if (Number.isFinite(raw.ms) && raw.ms >= 0) result.ms = raw.ms;
  if (Array.isArray(raw.logs)) {
    for (const line of raw.logs.slice(0, LIMITS.logLines)) {
      if (isPlain(line) && ['log', 'warn', 'error'].includes(line.kind) && isString(line.text, LIMITS.logChars)) {
        result.logs.push({ kind: line.kind, text: line.text });
      }
    }
  }
  if (Array.isArray(raw.shows)) {
    for (const shown of raw.shows.slice(0, LIMITS.shows)) {
      if (isPlain(shown) && (shown.title === null || isString(shown.title, LIMITS.errorChars + 1)) && 'value' in shown) {
        result.shows.push({ title: shown.title, value: shown.value });
      }
    }
  }
  const error = raw.error;
  if (isPlain(error) && isString(error.name, LIMITS.errorChars + 1) && isString(error.message, LIMITS.errorChars + 1)) {
    result.error = { name: error.name || 'Error', message: error.message };
    if (Number.isInteger(error.line) && error.line >= 1) result.error.line = error.line;
    if (Number.isInteger(error.column) && error.column >= 0) result.error.column = error.column;
  }
  return result;
}

let nextRunId = 1;

export function runSnippet(code, timeoutMs, onDone) {
  const failed = (message, extra = {}) =>
    ({ logs: [], shows: [], error: { name: 'Error', message }, timedOut: false, capped: false, ms: 0, ...extra });
  if (interference) {
    // The frame was replaced while idle: say so before anything else runs.
    const message = interference;
    interference = null;
    onDone(failed(message));
    return;
  }
  ensureSandbox().then((port) => {
    const state = sandbox;
    const id = nextRunId++;
    let finished = false;
    const finish = (result) => {
      if (finished) return;
      finished = true;
      clearTimeout(backstop);
      clearInterval(watchdog);
      if (state) {
        state.onResult = null;
        state.onInterfered = null;
      }
      onDone(result);
    };
    // The frame stops the run at the limit; if it does not answer shortly
    // after, the page removes the frame (and with it every worker).
    const backstop = setTimeout(() => {
      if (state) teardown(state);
      finish(failed(`stopped after ${timeoutMs} ms: the snippet ran longer than the time limit (the sandbox was restarted)`,
        { timedOut: true, error: { name: 'Timeout', message: `stopped after ${timeoutMs} ms: the snippet ran longer than the time limit (the sandbox was restarted)` } }));
    }, 2 * timeoutMs + PAGE_GRACE_MS);
    // A frame whose renderer died (out of memory) goes silent: the page
    // removes it and says so. Only while the page's own timers run on time
    // (a hidden tab's are throttled, and so are the frame's).
    let heard = performance.now();
    let ticked = heard;
    const watchdog = setInterval(() => {
      const now = performance.now();
      if (document.hidden || now - ticked > 2 * WATCHDOG_TICK_MS) heard = now;
      ticked = now;
      if (now - heard > SILENCE_LIMIT_MS) {
        if (state) teardown(state);
        finish(failed('the sandbox stopped answering (did the snippet use too much memory?); it was restarted'));
      }
    }, WATCHDOG_TICK_MS);
    state.onInterfered = () => finish(failed(INTERFERED));
    state.onResult = (message) => {
      if (message.id !== id) return;
      heard = performance.now();
      if (message.type === 'alive') return;
      const result = validResult(message.result);
      finish(result || failed('the sandbox sent a malformed result'));
    };
    port.postMessage({ type: 'run', id, code: String(code), timeoutMs: Number(timeoutMs) });
  }, (error) => {
    const message = error && error.message || String(error);
    onDone(failed(message === INTERFERED ? INTERFERED : `the sandbox could not start: ${message}`));
  });
}
