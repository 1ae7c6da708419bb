// kafkascope's service worker: the offline mode. Once a learner has opened
// the page, every file of the site is kept in the browser's cache, so the
// page opens again, and runs, without a network (on a train).
//
// `cargo xtask build` writes this file into dist/ with the two placeholders
// below filled in: the build's version (a hash of every file) and the list of
// files (relative to this file). A new build has a new version: the new worker
// caches the new files, and once it takes over it deletes the old cache.
//
// - The page (a navigation): the network first, so a new build is seen at
//   once; the cached page when the network fails.
// - Every other file of the list: the cache first (their names carry a
//   content hash, or they belong to this version), else the network.
// - Anything else (another origin, another method): not touched.
'use strict';

const VERSION = '__KAFKASCOPE_VERSION__';
const FILES = __KAFKASCOPE_FILES__;
const CACHE = 'kafkascope-' + VERSION;

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches.open(CACHE)
      .then((cache) => cache.addAll(FILES.map((file) => new Request(file, { cache: 'reload' }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches.keys()
      .then((names) => Promise.all(
        names.filter((name) => name.startsWith('kafkascope-') && name !== CACHE).map((name) => caches.delete(name)),
      ))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) {
    return;
  }
  if (request.mode === 'navigate') {
    // The page's address carries its state (?story=…&step=…, ?run=…), so the
    // cached page is the same index.html for every query.
    event.respondWith(
      fetch(request).catch(() => caches.open(CACHE).then((cache) =>
        cache.match(request, { ignoreSearch: true })
          .then((page) => page || cache.match(new URL('index.html', self.registration.scope).href))
          .then((page) => page || Response.error()))),
    );
    return;
  }
  event.respondWith(
    caches.open(CACHE).then((cache) => cache.match(request, { ignoreSearch: true }))
      .then((cached) => cached || fetch(request)),
  );
});
