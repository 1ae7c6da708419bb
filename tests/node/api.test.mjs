// The JavaScript package (`cargo xtask package`) from Node: the same
// answers as Kafka on the shared vectors, clear errors for bad input, and
// a deterministic cluster.
//
// KAFKASCOPE_PKG names the package folder and KAFKASCOPE_VECTORS the vector
// folder; `cargo xtask test` sets both.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const packageDir = process.env.KAFKASCOPE_PKG;
const vectorsDir = process.env.KAFKASCOPE_VECTORS;
assert.ok(packageDir && vectorsDir, 'run through `cargo xtask test` (KAFKASCOPE_PKG, KAFKASCOPE_VECTORS)');

// Resolving through package.json checks its `exports` too.
const kafkascope = require(packageDir);
const vectors = (name) => JSON.parse(readFileSync(path.join(vectorsDir, name), 'utf8'));
const hex = (text) => Uint8Array.from(text.match(/../g) ?? [], (pair) => parseInt(pair, 16));

test('murmur2 and partitionFor match Kafka on every partitioning vector', () => {
  const partitioning = vectors('vectors-partitioning.json');
  let checked = 0;
  for (const vector of partitioning.kafka_utilstest_murmur2) {
    assert.equal(kafkascope.murmur2Bytes(hex(vector.input_hex)), vector.murmur2, vector.input_ascii);
    checked++;
  }
  for (const vector of partitioning.string_keys_utf8) {
    assert.equal(kafkascope.murmur2(vector.key), vector.murmur2, JSON.stringify(vector.key));
    for (const [partitions, expected] of Object.entries(vector.partition_by_num_partitions)) {
      assert.equal(kafkascope.partitionFor(vector.key, Number(partitions)), expected, `${vector.key} / ${partitions}`);
      checked++;
    }
  }
  for (const vector of partitioning.binary_keys) {
    for (const [partitions, expected] of Object.entries(vector.partition_by_num_partitions)) {
      assert.equal(kafkascope.partitionForBytes(hex(vector.key_hex), Number(partitions)), expected, vector.description);
      checked++;
    }
  }
  for (const vector of partitioning.group_coordinator_partition) {
    for (const [partitions, expected] of Object.entries(vector.offsets_partition_by_n)) {
      assert.equal(kafkascope.coordinatorPartition(vector.group_id, Number(partitions)), expected, vector.group_id);
      checked++;
    }
  }
  assert.ok(checked > 200, `only ${checked} vectors checked`);
});

const STRATEGY = {
  range: 'range',
  roundrobin: 'roundrobin',
  sticky: 'sticky',
  'cooperative-sticky': 'cooperative-sticky',
  'server-uniform': 'uniform',
  'server-range': 'server-range',
};

const sortedSets = (assignment) =>
  Object.fromEntries(Object.entries(assignment).map(([member, partitions]) => [member, [...partitions].sort()]));

test('assign matches Kafka on every assignor vector', () => {
  const { cases } = vectors('vectors-assignors.json');
  let checked = 0;
  for (const vectorCase of cases) {
    const strategy = STRATEGY[vectorCase.assignor];
    assert.ok(strategy, `no strategy for ${vectorCase.assignor}`);
    vectorCase.steps.forEach((step, index) => {
      const input = { ...step.input };
      if (step.topic_ids) input.topicIds = { ...(input.topicIds ?? {}), ...step.topic_ids };
      const report = kafkascope.assign(strategy, input);
      const orderMatters = step.expected_by_test == null || step.compare === 'list';
      const label = `${vectorCase.id} step ${index}`;
      if (orderMatters) {
        assert.deepEqual(report.assignment, step.kafka_output, label);
      } else {
        assert.deepEqual(sortedSets(report.assignment), sortedSets(step.kafka_output), label);
      }
      checked++;
    });
  }
  assert.ok(checked >= 70, `only ${checked} steps checked`);
});

test('bad input becomes an Error with a message, never a crash', () => {
  assert.throws(() => kafkascope.partitionFor('k', 0), /numPartitions|partitions/i);
  assert.throws(() => kafkascope.partitionFor('k', 2.5), /whole number/);
  assert.throws(() => kafkascope.assign('fastest', { topics: {}, members: [] }), /unknown strategy/);
  assert.throws(() => kafkascope.assign('range', { topics: 'nope' }), /bad group/);
  assert.throws(() => kafkascope.assign('range', null), /bad group/);
  assert.throws(() => new kafkascope.Cluster({ brokers: 0 }), /brokers/);
  assert.throws(() => kafkascope.simulateKeyless({ strategy: 'random', partitions: 3, records: 1 }), /unknown strategy/);
  // The module still answers after every refusal.
  assert.equal(kafkascope.partitionFor('order-42', 6), kafkascope.partitionFor('order-42', 6));
});

test('a cooperative rebalance moves a partition in two rounds', () => {
  const group = {
    topics: { t: 4 },
    members: [{ memberId: 'a', topics: ['t'] }],
  };
  const rounds = kafkascope.rebalance('cooperative-sticky', group, [{ join: [{ memberId: 'b', topics: ['t'] }] }]);
  assert.ok(rounds.length >= 3, JSON.stringify(rounds));
  const last = rounds[rounds.length - 1].report.assignment;
  assert.equal(last.a.length, 2);
  assert.equal(last.b.length, 2);
});

const CONFIG = {
  brokers: 3,
  topics: [{ name: 'orders', partitions: 3, replicationFactor: 3, minInsyncReplicas: 2 }],
  producers: [{ topic: 'orders', acks: 'all' }],
  offsetsTopicPartitions: 3,
  consumers: [{ group: 'billing', topics: ['orders'], autoOffsetReset: 'earliest' }],
};

function scriptedRun(seed) {
  const cluster = new kafkascope.Cluster(CONFIG, seed);
  cluster.runFor(200);
  cluster.produce(0, 'order-42', 10);
  cluster.runFor(2000);
  cluster.killBroker(99); // no such broker: ignored
  const leader = cluster.state().partitions.find((partition) => partition.partition === 'orders-0').leader;
  cluster.killBroker(leader);
  cluster.runFor(10000);
  cluster.produce(0, null, 5);
  cluster.runFor(5000);
  return cluster;
}

test('a scripted cluster run is deterministic and keeps acknowledged records', () => {
  const first = scriptedRun(7);
  const second = scriptedRun(7);
  assert.deepEqual(first.trace(), second.trace());
  const summary = first.summary();
  assert.equal(summary.invariantViolations, 0);
  assert.equal(summary.lost, 0);
  assert.equal(summary.acknowledged, 15);
  assert.ok(summary.leaderElections >= 1);
  const state = first.state();
  assert.equal(state.brokers.filter((broker) => broker.status === 'dead').length, 1);
  assert.equal(state.consumers[0].phase, 'consuming');
  const lastId = first.trace().at(-1).id;
  assert.equal(first.trace(lastId).length, 1, 'trace(from) returns events from that id on');
});

test('a cluster and an assignment refuse what is above kafkascope limits, naming the limit', () => {
  const cluster = new kafkascope.Cluster(CONFIG, 1);
  assert.throws(() => cluster.produce(0, null, 1_000_001),
    /records produced is 1000001, above kafkascope's limit of 1000000/);
  assert.throws(() => cluster.runFor(700_000_000), /above kafkascope's limit of 604800000/);
  assert.throws(
    () => kafkascope.assign('range', { topics: { t: 3_000_000_000 }, members: [{ memberId: 'm', topics: ['t'] }] }),
    /partitions is 3000000000, above kafkascope's limit of 2000000/,
  );
  assert.equal(cluster.summary().produced, 0);
  cluster.produce(0, null, 3);
  cluster.runFor(1000);
  assert.equal(cluster.summary().produced, 3);
});

test('a consumer added to a cluster created without consumers joins and reads', () => {
  const cluster = new kafkascope.Cluster({ ...CONFIG, consumers: [] }, 3);
  cluster.produce(0, 'order-1', 4);
  cluster.runFor(1000);
  const id = cluster.addConsumer({ group: 'late', topics: ['orders'], autoOffsetReset: 'earliest' });
  cluster.runFor(15000);
  const consumer = cluster.state().consumers.find((candidate) => candidate.id === id);
  assert.equal(consumer.phase, 'consuming');
  assert.ok(cluster.state().partitions.some((partition) => partition.partition.startsWith('__consumer_offsets-')));
});

test('acks is spelt as Kafka spells it, and read in every spelling Kafka takes', () => {
  for (const [given, shown] of [['all', 'all'], [-1, 'all'], ['-1', 'all'], ['1', '1'], [1, '1'], [0, '0'], ['All', 'all'], ['Leader', '1']]) {
    const cluster = new kafkascope.Cluster({ ...CONFIG, producers: [{ topic: 'orders', acks: given }], consumers: [] }, 1);
    assert.equal(cluster.state().producers[0].acks, shown, `acks ${given}`);
  }
  assert.throws(() => new kafkascope.Cluster({ ...CONFIG, producers: [{ topic: 'orders', acks: 'most' }] }, 1),
    /Invalid value most for configuration acks: String must be one of: all, -1, 0, 1/);
  const cluster = new kafkascope.Cluster(CONFIG, 1);
  cluster.produce(0, 'k', 1);
  cluster.runFor(100);
  assert.ok(cluster.trace().some((event) => event.line.includes('Produce acks=all ')));
  assert.deepEqual(Object.keys(cluster.summary()).filter((key) => key.includes('_')), [], 'camelCase');
});

test('the ES module build (for pages and workers) gives the same answers', async () => {
  const web = await import(path.join(packageDir, 'web/kafkascope_js.js'));
  const bytes = readFileSync(path.join(packageDir, 'web/kafkascope_js_bg.wasm'));
  await web.default({ module_or_path: bytes });
  assert.equal(web.partitionFor('order-42', 6), kafkascope.partitionFor('order-42', 6));
  assert.equal(web.murmur2('kafkascope'), kafkascope.murmur2('kafkascope'));
});

const API_NAMES = ['murmur2', 'murmur2Bytes', 'partitionFor', 'partitionForBytes', 'coordinatorPartition', 'assign',
  'assignStats', 'rebalance', 'simulateKeyless', 'Cluster'];

/** Runs a sandbox snippet with the same names in scope as the sandbox's worker. */
function runLikeTheSandbox(code) {
  const lines = [];
  let diagrams = 0;
  const text = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));
  const console = { log: (...values) => lines.push(values.map(text).join(' ')) };
  const show = () => { diagrams++; };
  const partitionMap = (keys, numPartitions) => ({
    kind: 'partition-map',
    numPartitions,
    placements: keys.map((key) => ({ key, partition: kafkascope.partitionFor(key, numPartitions) })),
  });
  const run = new Function('console', 'show', 'partitionMap', ...API_NAMES, code);
  run(console, show, partitionMap, ...API_NAMES.map((name) => kafkascope[name]));
  return { output: lines.join('\n'), diagrams };
}

const webDir = path.join(path.dirname(new URL(import.meta.url).pathname), '../../web');

test('every sandbox example prints what it promises', () => {
  const examplesDir = path.join(webDir, 'sandbox-examples');
  const { examples } = JSON.parse(readFileSync(path.join(examplesDir, 'expected.json'), 'utf8'));
  for (const [id, expected] of Object.entries(examples)) {
    const { output, diagrams } = runLikeTheSandbox(readFileSync(path.join(examplesDir, `${id}.js`), 'utf8'));
    for (const fragment of expected.output) assert.ok(output.includes(fragment), `${id}: missing ${JSON.stringify(fragment)} in\n${output}`);
    assert.equal(diagrams, expected.diagrams, id);
  }
});

test('the API reference names exactly what the TypeScript definitions export', () => {
  const { entries } = JSON.parse(readFileSync(path.join(webDir, 'api-reference.json'), 'utf8'));
  const declarations = readFileSync(path.join(packageDir, 'node/kafkascope_js.d.ts'), 'utf8');
  const exported = new Set([...declarations.matchAll(/^export (?:function|class) (\w+)/gm)].map((match) => match[1]));
  const classBody = declarations.slice(declarations.indexOf('export class Cluster'));
  const members = classBody.slice(0, classBody.indexOf('\n}'));
  for (const match of members.matchAll(/^ {4}(?:readonly )?(\w+)[(:]/gm)) {
    if (!['free', 'constructor'].includes(match[1])) exported.add(`Cluster.${match[1]}`);
  }
  const documented = new Set(entries.filter((entry) => !entry.helper).map((entry) => entry.name));
  assert.deepEqual([...documented].sort(), [...exported].sort());
  assert.deepEqual(API_NAMES.slice().sort(), [...exported].filter((name) => !name.includes('.')).sort());
});

test('every example in the API reference prints what it promises', () => {
  const { entries } = JSON.parse(readFileSync(path.join(webDir, 'api-reference.json'), 'utf8'));
  for (const entry of entries) {
    const { output } = runLikeTheSandbox(entry.example);
    for (const fragment of entry.expect) {
      assert.ok(output.includes(fragment), `${entry.name}: missing ${JSON.stringify(fragment)} in\n${output}`);
    }
  }
});

test('odd arguments never trap the wasm module: every refusal is an Error with a message', () => {
  const odd = [undefined, null, NaN, -1, 2.5, 1e300, '', 'x'.repeat(10000), {}, [], { topics: 5 }, [1, 'a'], true];
  const calls = [
    (value) => kafkascope.partitionFor('k', value),
    (value) => kafkascope.partitionFor(value, 3),
    (value) => kafkascope.partitionForBytes(value, 3),
    (value) => kafkascope.coordinatorPartition('g', value),
    (value) => kafkascope.assign('range', value),
    (value) => kafkascope.assign(value, { topics: {}, members: [] }),
    (value) => kafkascope.assignStats('sticky', value),
    (value) => kafkascope.rebalance('range', { topics: { t: 1 }, members: [] }, value),
    (value) => kafkascope.simulateKeyless(value),
    (value) => kafkascope.simulateKeyless({ strategy: 'uniform-sticky', partitions: value, records: 3 }),
    (value) => new kafkascope.Cluster(value),
    (value) => new kafkascope.Cluster({ brokers: 1, topics: [], producers: [] }, value),
    (value) => new kafkascope.Cluster({ brokers: 1, topics: [], producers: [] }).input(value),
    (value) => new kafkascope.Cluster({ brokers: 1, topics: [], producers: [] }).runFor(value),
    (value) => new kafkascope.Cluster({ brokers: 1, topics: [], producers: [] }).addConsumer(value),
    (value) => new kafkascope.Cluster({ brokers: 1, topics: [{ name: 't' }], producers: [] })
      .addConsumer({ group: 'g', topics: ['t'], heartbeatIntervalMs: value }),
    (value) => new kafkascope.Cluster({ brokers: 1, topics: [], producers: [] }).trace(value),
  ];
  let refused = 0;
  for (const call of calls) {
    for (const value of odd) {
      try {
        call(value);
      } catch (error) {
        assert.ok(!(error instanceof WebAssembly.RuntimeError), `the module trapped: ${error.stack}`);
        assert.ok(error instanceof Error && error.message.length > 0, String(error));
        refused++;
      }
    }
  }
  assert.ok(refused > 50, `only ${refused} refusals`);
  // Still alive.
  assert.equal(kafkascope.partitionFor('foobar', 12), 6);
});

test('the package ships the custom elements for course pages as kafkascope/element', () => {
  const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'));
  assert.equal(manifest.exports['./element'], './web/kafkascope-element.js');
  const element = readFileSync(path.join(packageDir, manifest.exports['./element']), 'utf8');
  for (const tag of ['kafkascope-map', 'kafkascope-steps']) {
    assert.ok(element.includes(`'${tag}'`), tag);
  }
  // An ES module with no imports: a course page loads it as it is.
  assert.doesNotMatch(element, /^\s*import\s/m);
});
