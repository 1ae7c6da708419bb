// kafkascope's drop-in for course pages: custom elements that show one part
// of kafkascope inside someone else's page.
//
//   <script type="module" src="https://YOUR-HOST/kafkascope/kafkascope-element.js"></script>
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
// paused), `height` (CSS, default 600px), `src` (where kafkascope is hosted;
// by default the folder this script was loaded from).
'use strict';

const API_VERSION = 1;
const HERE = new URL('./', import.meta.url).href;
// The attributes that become the embedded page's address parameters.
const PARAMS = ['story', 'step', 'seed', 'scenario', 'knob', 'play'];
const STYLE = `
  :host { display: block; position: relative; width: 100%; height: 600px; contain: content; }
  :host([hidden]) { display: none; }
  iframe { display: block; width: 100%; height: 100%; border: 0; margin: 0; padding: 0; }
`;

class KafkascopeSection extends HTMLElement {
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
  }

  attributeChangedCallback() {
    if (this.isConnected) this._render();
  }

  /** The part of kafkascope this element shows (`map`, `steps`, …). */
  get part() {
    return this.constructor.part;
  }

  /** The embedded page's address for the current attributes. */
  get url() {
    const site = new URL(this.getAttribute('src') || HERE, document.baseURI);
    const url = new URL('./', site);
    url.search = '';
    url.searchParams.set('embed', this.part);
    for (const name of PARAMS) {
      let value = this.getAttribute(name);
      if (value === null) continue;
      if (name === 'scenario') value = new URL(value, document.baseURI).href;
      url.searchParams.set(name, value);
    }
    // Pin this page as the only host the embedded page listens to.
    if (window.location.origin !== 'null') url.searchParams.set('host', window.location.origin);
    return url;
  }

  /** Sends a host API command (`{ type: 'play' }`); queued until ready. */
  send(command) {
    const message = { kafkascope: API_VERSION, ...command };
    if (this._ready) {
      this._frame.contentWindow.postMessage(message, this._origin);
    } else {
      this._queue.push(message);
    }
  }

  play(section) { this.send(section ? { type: 'play', section } : { type: 'play' }); }
  pause(section) { this.send(section ? { type: 'pause', section } : { type: 'pause' }); }
  goToStep(step) { this.send({ type: 'goToStep', step }); }
  loadScenario(scenario, name) { this.send(name ? { type: 'loadScenario', scenario, name } : { type: 'loadScenario', scenario }); }
  setKnob(knob, value) { this.send({ type: 'setKnob', knob, value: String(value) }); }
  killBroker(broker) { this.send({ type: 'killBroker', broker }); }
  restartBroker(broker) { this.send({ type: 'restartBroker', broker }); }

  _render() {
    const url = this.url;
    if (this._frame && this._frame.dataset.url === url.href) return;
    clearInterval(this._hello);
    this._ready = false;
    this._origin = url.origin;
    const style = document.createElement('style');
    style.textContent = STYLE;
    const frame = document.createElement('iframe');
    frame.src = url.href;
    frame.dataset.url = url.href;
    frame.title = this.getAttribute('title') || `kafkascope: ${this.part}`;
    frame.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-popups allow-popups-to-escape-sandbox allow-downloads');
    frame.setAttribute('allow', 'clipboard-write');
    frame.setAttribute('part', 'frame');
    this.style.height = this.getAttribute('height') || '';
    this.shadowRoot.replaceChildren(style, frame);
    this._frame = frame;
    // Say hello until the page answers `ready` (it listens once it has
    // loaded); then send what was queued.
    const hello = { kafkascope: API_VERSION, type: 'hello' };
    this._hello = setInterval(() => frame.contentWindow?.postMessage(hello, this._origin), 200);
  }

  _receive(event) {
    if (!this._frame || event.source !== this._frame.contentWindow || event.origin !== this._origin) return;
    const data = event.data;
    if (!data || data.kafkascope !== API_VERSION || typeof data.type !== 'string') return;
    if (data.type === 'ready') {
      if (this._ready) return;
      this._ready = true;
      clearInterval(this._hello);
      for (const message of this._queue.splice(0)) this._frame.contentWindow.postMessage(message, this._origin);
    }
    this.dispatchEvent(new CustomEvent(`kafkascope:${data.type}`, { detail: data, bubbles: true, composed: true }));
  }
}

const PARTS = { 'kafkascope-map': 'map', 'kafkascope-steps': 'steps', 'kafkascope-lesson': 'lesson', 'kafkascope-sandbox': 'sandbox' };
for (const [tag, part] of Object.entries(PARTS)) {
  if (!customElements.get(tag)) {
    customElements.define(tag, class extends KafkascopeSection { static part = part; });
  }
}

export { KafkascopeSection };
