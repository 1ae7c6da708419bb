// kafkascope's service worker: the offline mode. Once a learner has opened
// the page, every file of the site is kept in the browser's cache, so the
// page opens again, and runs, without a network (on a train).
//
// `cargo xtask build` writes this file into dist/ with the two placeholders
// below filled in: the build's version (a hash of every file) and the list of
// files (relative to this file). A new build has a new version: the new worker
// caches the new files, and once it takes over it deletes the old cache.
//
// - Files whose names carry a content hash (trunk's `…-0123456789abcdef.js`,
//   `…_bg.wasm`, `….css`, and the simulator's `sim/kafkascope-sim-….js` and
//   its wasm, named by `cargo xtask build`): the cache first, since a name
//   never changes content.
// - Everything else of the site (the page, the format reference,
//   `snippets/`, whose names stay the same from build to build): the
//   network first, so a new build is never mixed with an old one, and the
//   cache when the network fails or answers with an error.
// - Anything else (another origin, another method): not touched.
//
// The cache is named after this copy's scope, so two copies of kafkascope
// on one origin (two paths of a GitHub Pages site) keep their own. But
// they can reach each other's: any page of the origin can open any cache
// and write into it. So nothing is served from the cache unless its bytes
// have the SHA-256 digest the build wrote for that file into this worker
// (which the browser always fetches from the network, never from a cache
// a page can write): a file not in the list, or whose bytes differ, is
// deleted from the cache and fetched from the network instead.
'use strict';

const VERSION = '__KAFKASCOPE_VERSION__';
/** Each file of the build, relative to this worker, and the SHA-256 digest of its bytes. */
const FILES = __KAFKASCOPE_FILES__;
const DIGESTS = new Map(Object.entries(FILES).map(([name, digest]) => [new URL(name, self.registration.scope).href, digest]));
const PREFIX = 'kafkascope ' + self.registration.scope + ' ';
const CACHE = PREFIX + VERSION;
// trunk's content hash: a dash, up to sixteen hex digits (trunk drops
// leading zeros, so some hashes are shorter; ten or more count), then `.`
// or `_bg.`.
const HASHED = /-[0-9a-f]{10,16}(\.|_bg\.)[^/]*$/;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE)
      // `no-cache`: asked of the server again, but a file the page has just
      // downloaded (the simulator's module, say) is not downloaded twice.
      .then((cache) => cache.addAll(Object.keys(FILES).map((file) => new Request(file, { cache: 'no-cache' }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((names) => Promise.all(
        names.filter((name) => name.startsWith(PREFIX) && name !== CACHE).map((name) => caches.delete(name)),
      ))
      .then(() => self.clients.claim()),
  );
});

/** The network's answer when it is a good one, else the cached copy. */
function networkFirst(request, fallback) {
  return fetch(request)
    .then((response) => {
      if (response.ok) return response;
      return fallback().then((cached) => cached || response);
    })
    .catch(() => fallback().then((cached) => cached || Response.error()));
}

/** The address a file is listed under: without its query or fragment. */
function listed(url) {
  const plainUrl = new URL(url);
  plainUrl.search = '';
  plainUrl.hash = '';
  return plainUrl.href;
}

/** Lower-case hex of a digest's bytes. */
function hex(buffer) {
  return Array.from(new Uint8Array(buffer), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** The content type of each kind of file the build has, by extension. */
const TYPES = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
  wasm: 'application/wasm',
  json: 'application/json',
  svg: 'image/svg+xml',
  md: 'text/markdown; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
};

/** The type the worker itself gives the file at `key` (never a cached header). */
function typeOf(key) {
  const path = new URL(key).pathname;
  const name = path.endsWith('/') ? 'index.html' : path.slice(path.lastIndexOf('/') + 1);
  const extension = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '';
  return TYPES[extension] || 'application/octet-stream';
}

/**
 * The cached copy of the file at `key` (a listed address), if its bytes are
 * the build's, as a fresh response with a status and headers the worker
 * sets itself: another page of this origin can write any headers into the
 * cache (a `Refresh` that sends the learner elsewhere, a policy that stops
 * every script), so none of the cached ones is served. A copy whose bytes
 * are not the build's (planted, or damaged) is deleted, and the caller goes
 * to the network.
 */
function verifiedMatch(cache, request, key, options) {
  const expected = DIGESTS.get(key);
  return cache.match(request, options).then((hit) => {
    if (!hit) return undefined;
    if (!expected) {
      return cache.delete(request, options).then(() => undefined);
    }
    return hit.arrayBuffer()
      .then((bytes) => crypto.subtle.digest('SHA-256', bytes).then((digest) => {
        if (hex(digest) !== expected) return cache.delete(request, options).then(() => undefined);
        return new Response(bytes, { status: 200, headers: { 'Content-Type': typeOf(key) } });
      }));
  });
}


self.addEventListener('fetch', (event) => {
  const request = event.request;
  const url = new URL(request.url);
  if (request.method !== 'GET' || url.origin !== self.location.origin || !url.href.startsWith(self.registration.scope)) {
    return;
  }
  const key = listed(request.url);
  const cached = (options) => caches.open(CACHE).then((cache) => verifiedMatch(cache, request, key, options));
  if (request.mode === 'navigate') {
    // The page's address carries its state (?story=…&step=…, ?run=…), so the
    // cached page is the same index.html for every query.
    const index = new URL('index.html', self.registration.scope).href;
    event.respondWith(networkFirst(request, () => caches.open(CACHE).then((cache) =>
      verifiedMatch(cache, request, key, { ignoreSearch: true })
        .then((page) => page || verifiedMatch(cache, index, index)))));
    return;
  }
  if (HASHED.test(url.pathname)) {
    // A hashed name never changes content, whatever its query (the page
    // asks for the simulator again as `?try=N` after a failed load).
    // A copy that was missing or refused is fetched and kept again, so the
    // offline mode survives a neighbour's tampering.
    event.respondWith(cached({ ignoreSearch: true }).then((hit) => hit || fetch(request).then((response) => {
      if (response.ok && DIGESTS.has(key)) {
        const copy = response.clone();
        event.waitUntil(caches.open(CACHE).then((cache) => cache.put(key, copy)));
      }
      return response;
    })));
    return;
  }
  event.respondWith(networkFirst(request, () => cached()));
});
