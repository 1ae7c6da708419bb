// kafkascope as a SCORM package in a learning platform: scorm-again (the
// SCORM 1.2 and 2004 run-time many platforms build on) provides the API on
// a host page that opens the package's launch file in a frame, as a
// platform does. A learner takes the exercise in two visits: answers
// some cases, leaves, comes back to find them, answers the rest and runs
// it; the platform hears the status, the score against the mastery score,
// each answer as an interaction, and where the learner was. A story
// package completes at its last step and reopens where it was left. The
// packages are the ones `cargo xtask course` writes (`cargo xtask test`
// writes them into KAFKASCOPE_COURSES).
'use strict';

const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const zlib = require('node:zlib');
const { launch, listenLocal, screenshotPath } = require('./browser.cjs');

const COURSES = process.env.KAFKASCOPE_COURSES || path.resolve('target/e2e-course');
// (Its package.json is not exported; its main file is dist/scorm-again.js.)
const SCORM_AGAIN = path.dirname(require.resolve('scorm-again'));
// libxml2's schema validation, as WebAssembly (no native parts to install).
const { validateXML } = require('xmllint-wasm');

/** A zip's files, by name (stored or deflated entries). */
function unzip(buffer) {
  const files = new Map();
  const end = buffer.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const count = buffer.readUInt16LE(end + 10);
  let at = buffer.readUInt32LE(end + 16);
  for (let index = 0; index < count; index += 1) {
    const method = buffer.readUInt16LE(at + 10);
    const packed = buffer.readUInt32LE(at + 20);
    const nameLength = buffer.readUInt16LE(at + 28);
    const extra = buffer.readUInt16LE(at + 30);
    const comment = buffer.readUInt16LE(at + 32);
    const local = buffer.readUInt32LE(at + 42);
    const name = buffer.toString('utf8', at + 46, at + 46 + nameLength);
    const start = local + 30 + buffer.readUInt16LE(local + 26) + buffer.readUInt16LE(local + 28);
    const data = buffer.subarray(start, start + packed);
    files.set(name, method === 8 ? zlib.inflateRawSync(data) : Buffer.from(data));
    at += 46 + nameLength + extra + comment;
  }
  return files;
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml', '.xml': 'application/xml' };

let browser;
let server;
let baseUrl = '';
const packages = new Map();

before(async () => {
  for (const file of fs.readdirSync(COURSES).filter((name) => name.endsWith('.zip'))) {
    packages.set(file.replace(/\.zip$/, ''), unzip(fs.readFileSync(path.join(COURSES, file))));
  }
  server = http.createServer((request, response) => {
    const url = new URL(request.url, baseUrl);
    const [, root, name, ...rest] = url.pathname.split('/');
    if (url.pathname === '/favicon.ico') {
      response.statusCode = 204;
      response.end();
    } else if (root === 'scorm-again') {
      response.setHeader('Content-Type', 'text/javascript');
      response.end(fs.readFileSync(path.join(SCORM_AGAIN, path.basename(url.pathname))));
    } else if (root === 'platform' || root === 'platform-window') {
      response.setHeader('Content-Type', 'text/html; charset=utf-8');
      response.end(platformPage(name, url.searchParams.get('saved'), root === 'platform-window'));
    } else if (root === 'pkg' && packages.get(name)?.has(rest.join('/'))) {
      response.setHeader('Content-Type', TYPES[path.extname(rest.join('/'))] || 'application/octet-stream');
      response.end(packages.get(name).get(rest.join('/')));
    } else {
      response.statusCode = 404;
      response.end();
    }
  });
  baseUrl = await listenLocal(server);
  browser = await launch();
});
after(async () => {
  await browser?.close();
  server?.closeAllConnections();
  server?.close();
});

/** The package's launch address, from its manifest. */
function launchOf(name) {
  const manifest = packages.get(name).get('imsmanifest.xml').toString('utf8');
  const href = /adlcp:scorm[tT]ype="sco" href="([^"]+)"/.exec(manifest)[1];
  return href.replaceAll('&amp;', '&');
}

// The platform: scorm-again's API for the package's version, what the
// platform kept from the learner's last visit (`saved`: suspend data and
// location), every value the package set, and the package in a frame (or,
// `windowed`, a button that opens it in a window of its own).
function platformPage(name, saved, windowed = false) {
  const v12 = name.includes('scorm1.2');
  const kept = saved ? JSON.parse(saved) : null;
  return `<!doctype html><html lang="en"><title>a learning platform</title>
    <script src="/scorm-again/${v12 ? 'scorm12.js' : 'scorm2004.js'}"></script>
    <script>
      window.values = {};
      window.events = [];
      const api = new ${v12 ? 'Scorm12API' : 'Scorm2004API'}({ autocommit: false, logLevel: 5 });
      ${kept ? `api.loadFromJSON(${JSON.stringify(v12
    ? { suspend_data: kept.suspend_data, core: { lesson_location: kept.location || '' } }
    : { suspend_data: kept.suspend_data, location: kept.location || '' })});` : ''}
      window.${v12 ? 'API' : 'API_1484_11'} = api;
      for (const event of ${JSON.stringify(v12 ? ['LMSInitialize', 'LMSCommit', 'LMSFinish'] : ['Initialize', 'Commit', 'Terminate'])}) {
        api.on(event, () => window.events.push(event));
      }
      api.on('${v12 ? 'LMSSetValue' : 'SetValue'}.cmi.*', (key, value) => { window.values[key] = value; });
    </script>
    <h1>Course: ${name}</h1>
    ${windowed
    ? `<button type="button" onclick="window.open('/pkg/${name}/${launchOf(name)}', 'activity')">Open the activity</button>`
    : `<iframe id="sco" src="/pkg/${name}/${launchOf(name)}" title="kafkascope" style="width: 1000px; height: 760px"></iframe>`}`;
}

async function visit(name, saved) {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  const errors = [];
  page.on('pageerror', (error) => errors.push(String(error)));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(`${baseUrl}/platform/${name}${saved ? `?saved=${encodeURIComponent(JSON.stringify(saved))}` : ''}`);
  const sco = page.frameLocator('#sco');
  await page.waitForFunction(() => document.getElementById('sco').contentDocument?.documentElement?.dataset.course, null, { timeout: 30000 })
    .catch(() => {});
  return { page, sco, errors };
}

// Leaving: the frame goes (the platform closes the activity), and the
// package ends the session with a last commit.
async function leave({ page }) {
  await page.evaluate(() => document.getElementById('sco').remove());
  const kept = await page.evaluate(() => ({ values: window.values, events: window.events }));
  await page.close();
  return kept;
}

test('the packages hold a SCORM manifest with the required elements, naming every file they carry', () => {
  assert.deepEqual([...packages.keys()].sort(), ['exercise-scorm1.2', 'exercise-scorm2004', 'lesson-scorm1.2', 'sandbox-scorm2004', 'story-scorm2004']);
  for (const [name, files] of packages) {
    const manifest = files.get('imsmanifest.xml').toString('utf8');
    const v12 = name.includes('1.2');
    assert.match(manifest, v12 ? /<schemaversion>1\.2<\/schemaversion>/ : /<schemaversion>2004 4th Edition<\/schemaversion>/);
    assert.match(manifest, v12 ? /xmlns="http:\/\/www\.imsproject\.org\/xsd\/imscp_rootv1p1p2"/ : /xmlns="http:\/\/www\.imsglobal\.org\/xsd\/imscp_v1p1"/);
    for (const element of ['<organizations default="kafkascope-organization">', '<organization identifier="kafkascope-organization">', 'identifierref="kafkascope-sco"', '<resource identifier="kafkascope-sco" type="webcontent"']) {
      assert.ok(manifest.includes(element), `${name}: ${element}`);
    }
    // Every file listed is in the zip, and every file of the zip is listed
    // (but the manifest and its schemas, the package's control documents).
    const listed = [...manifest.matchAll(/<file href="([^"]+)"\/>/g)].map((match) => match[1].replaceAll('&amp;', '&'));
    assert.deepEqual(listed.sort(), [...files.keys()].filter((file) => file !== 'imsmanifest.xml' && !file.endsWith('.xsd')).sort());
    assert.ok(files.has(launchOf(name).split('?')[0]));
    if (name.startsWith('exercise')) assert.match(manifest, v12 ? /<adlcp:masteryscore>75</ : /<imsss:minNormalizedMeasure>0\.75</);
  }
});

for (const version of ['1.2', '2004']) {
  const name = `exercise-scorm${version}`;
  const key = version === '1.2'
    ? { status: 'cmi.core.lesson_status', raw: 'cmi.core.score.raw', max: 'cmi.core.score.max', response: 'student_response', wrong: 'wrong' }
    : { status: 'cmi.completion_status', raw: 'cmi.score.raw', max: 'cmi.score.max', response: 'learner_response', wrong: 'incorrect' };

  test(`SCORM ${version}: the exercise reports its answers, status and score to the platform, and a learner who leaves finds their answers again`, async () => {
    // First visit: three of the four cases answered, then the learner leaves.
    const first = await visit(name);
    assert.equal(await first.page.evaluate(() => document.getElementById('sco').contentDocument.documentElement.dataset.course), 'recording');
    const exercise = first.sco.getByTestId('exercise-pitfalls');
    await exercise.waitFor({ timeout: 30000 });
    // The package for one exercise shows only that exercise.
    assert.equal(await first.sco.locator('.exercise').count(), 1);
    assert.equal(await first.sco.getByTestId('lesson-summary').count(), 0);
    // The platform hears "incomplete" at once, not "not attempted" (which
    // some platforms turn into "completed" when the session ends).
    await first.page.waitForFunction((status) => window.values[status] === 'incomplete', key.status);
    const cases = ['fourth-member', 'leader-dies', 'second-leader-dies'];
    for (const id of cases) await exercise.getByTestId(`case-${id}-continue`).check();
    await first.page.waitForFunction((suspend) => (window.values[suspend] || '').includes('continue'), 'cmi.suspend_data');
    const left = await leave(first);
    assert.equal(left.values[key.status], 'incomplete');
    assert.equal(left.values[version === '1.2' ? 'cmi.core.exit' : 'cmi.exit'], 'suspend');
    assert.ok(left.events.includes(version === '1.2' ? 'LMSFinish' : 'Terminate'), left.events.join(' '));
    // The visit's length, as the version writes a timespan.
    assert.match(left.values[version === '1.2' ? 'cmi.core.session_time' : 'cmi.session_time'],
      version === '1.2' ? /^\d{2,4}:\d{2}:\d{2}\.\d{2}$/ : /^PT\d+(\.\d+)?S$/);
    assert.deepEqual(first.errors, []);

    // Second visit: the platform gives back what it kept.
    const second = await visit(name, { suspend_data: left.values['cmi.suspend_data'] });
    const again = second.sco.getByTestId('exercise-pitfalls');
    await again.waitFor({ timeout: 30000 });
    for (const id of cases) assert.ok(await again.getByTestId(`case-${id}-continue`).isChecked(), `${id} kept`);
    await again.getByTestId('case-unclean-loss').check();
    await again.getByTestId('exercise-run').click();
    await again.getByTestId('exercise-score').waitFor({ timeout: 60000 });
    const right = await again.locator('.verdict.right').count();
    await second.page.waitForFunction((status) => window.values[status] && window.values[status] !== 'incomplete', key.status);
    await second.page.screenshot({ path: screenshotPath(`course-exercise-scorm${version}`) });
    // "watch it in the steps" opens the whole of kafkascope in a new tab
    // (the package has no steps to show).
    const watch = again.locator('.verdict a').first();
    assert.equal(await watch.getAttribute('target'), '_blank');
    const watched = new URL(await watch.getAttribute('href'), 'http://x/');
    assert.ok(watched.searchParams.get('story') && !watched.searchParams.has('embed') && !watched.searchParams.has('scorm'), watched.href);
    // Changing an answer after the run takes nothing away from it.
    const before = await second.page.evaluate((status) => window.values[status], key.status);
    await again.getByTestId('case-unclean-idle').check();
    await second.page.waitForFunction((suspend) => (window.values[suspend] || '').includes('idle'), 'cmi.suspend_data');
    assert.equal(await second.page.evaluate((status) => window.values[status], key.status), before);
    const { values } = await leave(second);
    const passed = right * 100 >= 75 * 4;
    if (version === '1.2') {
      assert.equal(values[key.status], passed ? 'passed' : 'failed');
      assert.equal(values[key.raw], String(Math.round((right * 100) / 4)));
      assert.equal(values[key.max], '100');
    } else {
      assert.equal(values[key.status], 'completed');
      assert.equal(values['cmi.success_status'], passed ? 'passed' : 'failed');
      assert.equal(values[key.raw], String(right));
      assert.equal(values[key.max], '4');
      assert.equal(Number(values['cmi.score.scaled']), right / 4);
    }
    // Each answer is an interaction: its case, the response, the right one.
    // (SCORM 1.2 spells a choice as its letter: idle a, continue b, error c, loss d.)
    const spelt = (word) => (version === '1.2' ? 'abcd'['idle continue error loss'.split(' ').indexOf(word)] : word);
    for (const [index, id] of [...cases, 'unclean'].entries()) {
      assert.equal(values[`cmi.interactions.${index}.id`], `pitfalls-${id}`);
      assert.equal(values[`cmi.interactions.${index}.type`], 'choice');
      assert.equal(values[`cmi.interactions.${index}.${key.response}`], spelt(id === 'unclean' ? 'loss' : 'continue'));
      const correct = values[`cmi.interactions.${index}.correct_responses.0.pattern`];
      assert.equal(values[`cmi.interactions.${index}.result`], correct === values[`cmi.interactions.${index}.${key.response}`] ? 'correct' : key.wrong);
    }
    assert.deepEqual(second.errors, []);

    // A third visit: the answers as left, and the best run the platform keeps.
    const third = await visit(name, { suspend_data: values['cmi.suspend_data'] });
    const kept = third.sco.getByTestId('exercise-kept-score');
    await kept.waitFor({ timeout: 30000 });
    assert.match(await kept.innerText(), new RegExp(`Your best run so far: ${right} of 4 right`));
    assert.ok(await third.sco.getByTestId('case-unclean-idle').isChecked());
    await leave(third);
  });
}

test('SCORM 2004: a story package completes at its last step and reopens at the step the learner left', async () => {
  const first = await visit('story-scorm2004');
  const steps = first.sco.getByTestId('steps');
  await steps.waitFor({ timeout: 30000 });
  await first.sco.getByTestId('step-next').click();
  await first.sco.getByTestId('step-next').click();
  const step = await steps.getAttribute('data-step');
  await first.page.waitForFunction((step) => window.values['cmi.location'] === `step=${step}`, step);
  const left = await leave(first);
  assert.equal(left.values['cmi.completion_status'], 'incomplete');

  const second = await visit('story-scorm2004', { suspend_data: left.values['cmi.suspend_data'], location: left.values['cmi.location'] });
  const reopened = second.sco.getByTestId('steps');
  await reopened.waitFor({ timeout: 30000 });
  assert.equal(await reopened.getAttribute('data-step'), step);
  await second.sco.getByTestId('step-last').click();
  await second.page.waitForFunction(() => window.values['cmi.completion_status'] === 'completed');
  const { values } = await leave(second);
  assert.equal(values['cmi.success_status'], 'unknown');
  assert.deepEqual(second.errors, []);
});

test('outside a platform the package works as the site does, and says it records nothing', async () => {
  const page = await browser.newPage();
  const name = 'exercise-scorm2004';
  await page.goto(`${baseUrl}/pkg/${name}/${launchOf(name)}`);
  await page.getByTestId('exercise-pitfalls').waitFor({ timeout: 30000 });
  assert.equal(await page.evaluate(() => document.documentElement.dataset.course), 'alone');
  assert.match(await page.evaluate(() => document.documentElement.dataset.courseProblem), /no SCORM 2004 platform found/);
  await page.getByTestId('case-fourth-member-idle').check();
  await page.close();
});

test('SCORM 2004: the sandbox package completes once the learner runs code', async () => {
  const first = await visit('sandbox-scorm2004');
  const run = first.sco.getByTestId('sandbox-run');
  await run.waitFor({ timeout: 30000 });
  await first.page.waitForFunction(() => window.values['cmi.completion_status'] === 'incomplete');
  await run.click();
  await first.page.waitForFunction(() => window.values['cmi.completion_status'] === 'completed', null, { timeout: 60000 });
  await first.page.screenshot({ path: screenshotPath('course-sandbox-scorm2004') });
  const left = await leave(first);
  assert.equal(left.values['cmi.completion_status'], 'completed');
  assert.ok(left.events.includes('Terminate'), left.events.join(' '));
  assert.deepEqual(first.errors, []);
});

test('SCORM 1.2: the whole lesson package shows every exercise and stays incomplete until each has run', async () => {
  const first = await visit('lesson-scorm1.2');
  await first.sco.getByTestId('lesson-summary').waitFor({ timeout: 30000 });
  assert.ok(await first.sco.locator('.exercise').count() >= 2, 'the lesson package shows every exercise');
  await first.page.waitForFunction(() => window.values['cmi.core.lesson_status'] === 'incomplete');
  // One exercise run (on the lesson's Exercise tab): its answers reach
  // the platform, the lesson is not done.
  await first.sco.getByTestId('lesson-tab-exercise').click();
  const exercise = first.sco.getByTestId('exercise-pitfalls');
  for (const id of ['fourth-member', 'leader-dies', 'second-leader-dies']) await exercise.getByTestId(`case-${id}-continue`).check();
  await exercise.getByTestId('case-unclean-loss').check();
  await exercise.getByTestId('exercise-run').click();
  await exercise.getByTestId('exercise-score').waitFor({ timeout: 60000 });
  await first.page.waitForFunction(() => window.values['cmi.interactions.3.id'] === 'pitfalls-unclean');
  const left = await leave(first);
  assert.equal(left.values['cmi.core.lesson_status'], 'incomplete');
  assert.ok(left.events.includes('LMSFinish'), left.events.join(' '));
  assert.deepEqual(first.errors, []);
});

test('SCORM 1.2: a platform that opens the package in a window of its own is found through the opener', async () => {
  const page = await browser.newPage();
  await page.goto(`${baseUrl}/platform-window/exercise-scorm1.2`);
  const [popup] = await Promise.all([page.waitForEvent('popup'), page.getByRole('button', { name: 'Open the activity' }).click()]);
  await popup.getByTestId('exercise-pitfalls').waitFor({ timeout: 30000 });
  await popup.waitForFunction(() => document.documentElement.dataset.course, null, { timeout: 30000 });
  assert.equal(await popup.evaluate(() => document.documentElement.dataset.course), 'recording');
  await page.waitForFunction(() => window.values['cmi.core.lesson_status'] === 'incomplete');
  await popup.getByTestId('case-fourth-member-continue').check();
  await page.waitForFunction(() => (window.values['cmi.suspend_data'] || '').includes('continue'));
  await popup.close();
  await page.close();
});

test('each package ships the SCORM schemas its manifest names, and the manifest is valid against them', async () => {
  for (const [name, files] of packages) {
    const manifest = files.get('imsmanifest.xml').toString('utf8');
    const located = /xsi:schemaLocation="([^"]+)"/.exec(manifest)[1].trim().split(/\s+/).filter((_, index) => index % 2 === 1);
    for (const file of located) assert.ok(files.has(file), `${name}: ${file} is named but not shipped`);
    const schemas = [...files.keys()].filter((file) => file.endsWith('.xsd'))
      .map((file) => ({ fileName: file, contents: files.get(file).toString('utf8') }));
    // One schema that imports each namespace the manifest's elements use
    // (those it declares with xmlns), as a platform's validator loads
    // them. (SCORM 1.2's manifest also names IMS's metadata schema, for
    // metadata it does not carry; libxml2 refuses to compile that schema,
    // whose content models XML Schema's rules call ambiguous.)
    const namespaces = /xsi:schemaLocation="([^"]+)"/.exec(manifest)[1].trim().split(/\s+/);
    const imports = [];
    for (let index = 0; index < namespaces.length; index += 2) {
      if (!manifest.includes(`="${namespaces[index]}"`)) continue;
      imports.push(`<xs:import namespace="${namespaces[index]}" schemaLocation="${namespaces[index + 1]}"/>`);
    }
    assert.ok(imports.length >= 2, `${name}: ${imports.length} namespaces`);
    const all = `<?xml version="1.0"?><xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" targetNamespace="urn:kafkascope:manifest">${imports.join('')}</xs:schema>`;
    const result = await validateXML({ xml: [{ fileName: 'imsmanifest.xml', contents: manifest }], schema: [{ fileName: 'all.xsd', contents: all }], preload: schemas });
    assert.ok(result.valid, `${name}: ${result.errors.slice(0, 5).map((error) => error.rawMessage).join('; ')}`);
  }
});
