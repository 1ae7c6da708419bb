// kafkascope's drop-in for course pages: custom elements that show one part
// of kafkascope inside someone else's page.
//
//   <script src="https://YOUR-HOST/kafkascope/kafkascope-element.js" defer></script>
//   <kafkascope-map seed="7" knob="acks:1" play="0"></kafkascope-map>
//   <kafkascope-steps story="happy-path" step="28"></kafkascope-steps>
//   <kafkascope-steps scenario="my-scenario.json"></kafkascope-steps>
//
// Each element draws the part in an iframe inside its own shadow root: the
// course page's styles do not reach it and its styles do not leak out. It
// speaks the host page API (docs/authoring.md) for you: its events arrive as
// DOM events named `kafkascope:<type>` (`kafkascope:stepChanged`,
// `kafkascope:recordLost`, …) with the message as `detail`, and its methods
// send commands (`play()`, `goToStep(3)`, `setKnob('acks', '1')`, …).
//
// Attributes: `story`, `step`, `seed`, `scenario` (an address, resolved
// against the course page), `knob` (`name:value`), `play` (`0` starts
// paused), `code` (a sandbox code link's `1.…`), `height` (CSS, default
// 600px), `title`, `src` (where kafkascope is hosted; by default the folder
// this script was loaded from).
//
// The file is a classic script and an ES module at once (no `import`,
// `export` or `import.meta`, everything inside one function): as a classic
// script it loads from any site without CORS headers, as a module (or
// `import 'kafkascope/element'` from the npm package) it needs them. Put a
// link inside each element: the page shows it until the element is
// defined, so a learner whose browser could not load this file still has
// a way in.
//
// A course page that is itself in an iframe sandboxed without
// allow-same-origin has an opaque origin: kafkascope cannot answer it, so
// there the element shows its part from its attributes and reports a
// `kafkascope:error` for commands instead of sending them.

(() => {
const API_VERSION = 1;
// The folder this script came from: the classic script's own element, or
// (as a module, where there is no current script) the page's script that
// names this file; a bundled copy has neither and needs `src`.
const HERE = (() => {
  if (typeof document === 'undefined') return '';
  const script = document.currentScript
    || [...document.querySelectorAll('script[src]')].reverse().find((candidate) => /kafkascope-element\.js(?:[?#]|$)/.test(candidate.src));
  return new URL('./', script ? script.src : document.baseURI).href;
})();
// The attributes that become the embedded page's address parameters.
const PARAMS = ['story', 'step', 'seed', 'scenario', 'knob', 'play', 'code'];
// How long to say hello before giving up (the page answers once it runs).
const HELLO_FOR_MS = 60000;
const STYLE = `
  :host { display: block; position: relative; width: 100%; height: 600px; contain: content; }
  :host([hidden]) { display: none; }
  iframe { display: block; width: 100%; height: 100%; border: 0; margin: 0; padding: 0; }
  [part="error"] { position: absolute; inset: 0; margin: 0; padding: 1.5rem; overflow: auto;
    background: #fff; color: #1a1a1a; font: 1rem/1.5 system-ui, sans-serif; border: 2px solid #b42318; }
  [part="error"] a { color: #0b57d0; }
`;

// In a server-side render (no DOM) the module defines nothing.
const Base = typeof HTMLElement === 'undefined' ? class {} : HTMLElement;

class KafkascopeSection extends Base {
  static get observedAttributes() {
    return ['src', 'height', 'title', ...PARAMS];
  }

  constructor() {
    super();
    this.attachShadow({ mode: 'open' });
    this._ready = false;
    this._queue = [];
    this._onMessage = (event) => this._receive(event);
  }

  connectedCallback() {
    window.addEventListener('message', this._onMessage);
    this._render();
  }

  disconnectedCallback() {
    window.removeEventListener('message', this._onMessage);
    clearInterval(this._hello);
    // A moved element's frame loads again: it must say hello again.
    this._ready = false;
    this._frame = null;
  }

  attributeChangedCallback() {
    // Several attributes set in a row reload the part once.
    if (!this.isConnected || this._renderQueued) return;
    this._renderQueued = true;
    queueMicrotask(() => {
      this._renderQueued = false;
      if (this.isConnected) this._render();
    });
  }

  /** The part of kafkascope this element shows (`map`, `steps`, …). */
  get section() {
    return this.constructor.section;
  }

  /** Whether this page can hear kafkascope (not an opaque origin). */
  get canTalk() {
    return self.origin !== 'null';
  }

  /** The embedded page's address for the current attributes. */
  get url() {
    let src = this.getAttribute('src') || HERE;
    // `src` names a folder: `…/kafkascope` is `…/kafkascope/`.
    const last = new URL(src, document.baseURI).pathname.split('/').pop();
    if (last && !last.includes('.')) src += '/';
    const url = new URL('./', new URL(src, document.baseURI));
    url.search = '';
    url.searchParams.set('embed', this.section);
    for (const name of PARAMS) {
      let value = this.getAttribute(name);
      if (value === null) continue;
      if (name === 'scenario') value = new URL(value, document.baseURI).href;
      url.searchParams.set(name, value);
    }
    // Pin this page as the only host the embedded page listens to.
    if (this.canTalk) url.searchParams.set('host', self.origin);
    return url;
  }

  /** Sends a host API command (`{ type: 'play' }`); queued until ready. */
  send(command) {
    const message = { kafkascope: API_VERSION, ...command };
    if (!this.canTalk) {
      this._fail(command.type, 'this page has an opaque origin (an iframe sandboxed without allow-same-origin), so kafkascope cannot take its commands');
    } else if (this._ready && this._frame?.contentWindow) {
      this._frame.contentWindow.postMessage(message, this._origin);
    } else {
      this._queue.push(message);
    }
  }

  play(section) { this.send(section ? { type: 'play', section } : { type: 'play' }); }
  pause(section) { this.send(section ? { type: 'pause', section } : { type: 'pause' }); }
  goToStep(step) { this.send({ type: 'goToStep', step: Number(step) }); }
  loadScenario(scenario, name) { this.send(name ? { type: 'loadScenario', scenario, name } : { type: 'loadScenario', scenario }); }
  setKnob(knob, value) { this.send({ type: 'setKnob', knob, value: String(value) }); }
  killBroker(broker) { this.send({ type: 'killBroker', broker: Number(broker) }); }
  restartBroker(broker) { this.send({ type: 'restartBroker', broker: Number(broker) }); }

  _fail(command, message) {
    this.dispatchEvent(new CustomEvent('kafkascope:error', {
      detail: { kafkascope: API_VERSION, type: 'error', command: command ?? null, message },
      bubbles: true,
      composed: true,
    }));
  }

  /** Says in the element, over its part, why the part is not there. */
  _showProblem(message, href) {
    const note = document.createElement('div');
    note.setAttribute('role', 'alert');
    note.setAttribute('part', 'error');
    const text = document.createElement('p');
    text.textContent = message;
    note.append(text);
    if (href) {
      const link = document.createElement('a');
      link.href = href;
      link.target = '_blank';
      link.rel = 'noopener';
      link.textContent = 'Open kafkascope in a new tab';
      note.append(link);
    }
    this.shadowRoot.querySelector('[part="error"]')?.remove();
    this.shadowRoot.append(note);
  }

  _render() {
    let url;
    try {
      url = this.url;
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`${url.protocol} addresses are not kafkascope's`);
    } catch (error) {
      // A bad `src` or `scenario` attribute: say so in the element and to
      // the page, never as an uncaught error.
      clearInterval(this._hello);
      this._ready = false;
      this._frame = null;
      const message = `kafkascope cannot open here: the src or scenario attribute is not a web address (${error && error.message || error})`;
      const style = document.createElement('style');
      style.textContent = STYLE;
      this.shadowRoot.replaceChildren(style);
      this._showProblem(message);
      this._fail(null, message);
      return;
    }
    this.style.height = this.getAttribute('height') || '';
    if (this._frame) this._frame.title = this.getAttribute('title') || `kafkascope: ${this.section}`;
    if (this._frame && this._frame.dataset.url === url.href) return;
    clearInterval(this._hello);
    this._ready = false;
    this._origin = url.origin;
    const style = document.createElement('style');
    style.textContent = STYLE;
    const frame = document.createElement('iframe');
    frame.src = url.href;
    frame.dataset.url = url.href;
    frame.title = this.getAttribute('title') || `kafkascope: ${this.section}`;
    frame.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-popups allow-popups-to-escape-sandbox allow-downloads');
    frame.setAttribute('allow', 'clipboard-write');
    frame.setAttribute('part', 'frame');
    this.shadowRoot.replaceChildren(style, frame);
    this._frame = frame;
    if (!this.canTalk) return;
    // Say hello, once the frame holds kafkascope's page (before that it
    // holds about:blank, and a message for kafkascope's origin would only
    // warn in the console), until the page answers `ready`; then send what
    // was queued. No answer in a minute (a site that refuses frames, a
    // network that blocks it): say so in the element and to the page.
    const hello = { kafkascope: API_VERSION, type: 'hello' };
    const since = Date.now();
    let loaded = false;
    frame.addEventListener('load', () => { loaded = true; }, { once: true });
    this._hello = setInterval(() => {
      if (Date.now() - since > HELLO_FOR_MS) {
        clearInterval(this._hello);
        const message = `kafkascope at ${this._origin} did not answer within ${HELLO_FOR_MS / 1000} s: the site may be down, refuse to be framed, or be blocked by this network`;
        const whole = new URL(url.href);
        whole.searchParams.delete('host');
        this._showProblem(message, whole.href);
        this._fail(null, message);
        return;
      }
      if (loaded) frame.contentWindow?.postMessage(hello, this._origin);
    }, 200);
  }

  _receive(event) {
    if (!this._frame || event.source !== this._frame.contentWindow || event.origin !== this._origin) return;
    const data = event.data;
    if (!data || data.kafkascope !== API_VERSION || typeof data.type !== 'string') return;
    if (data.type === 'ready') {
      if (this._ready) return;
      this._ready = true;
      clearInterval(this._hello);
      this.shadowRoot.querySelector('[part="error"]')?.remove();
      for (const message of this._queue.splice(0)) this._frame.contentWindow.postMessage(message, this._origin);
    }
    this.dispatchEvent(new CustomEvent(`kafkascope:${data.type}`, { detail: data, bubbles: true, composed: true }));
  }
}

const PARTS = { 'kafkascope-map': 'map', 'kafkascope-steps': 'steps', 'kafkascope-lesson': 'lesson', 'kafkascope-sandbox': 'sandbox' };
for (const [tag, part] of Object.entries(PARTS)) {
  if (typeof customElements !== 'undefined' && !customElements.get(tag)) {
    customElements.define(tag, class extends KafkascopeSection { static section = part; });
  }
}
})();
