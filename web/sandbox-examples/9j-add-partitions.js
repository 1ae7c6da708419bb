// Adding partitions moves keys
// orders has 2 partitions; each key's records land on murmur2(key) % 2.
// An operator grows it to 4 (kafka-topics --alter --partitions 4). The
// producer and the group leader learn of the new partitions at their next
// metadata refresh (metadata.max.age.ms: 5 minutes by default, 10 s
// here so the example is quick); from then on a key goes to
// murmur2(key) % 4, so some keys change partition and their new records no
// longer queue behind their old ones.
const cluster = new Cluster({
  brokers: 3,
  topics: [{ name: 'orders', partitions: 2, replicationFactor: 3, minInsyncReplicas: 2 }],
  producers: [{ topic: 'orders', metadataMaxAgeMs: 10000 }],
  consumers: [{ group: 'billing', topics: ['orders'], autoOffsetReset: 'earliest', metadataMaxAgeMs: 10000 }],
}, 1);
const keys = ['alice', 'bob', 'carol', 'dave', 'erin', 'frank'];
const where = () => {
  const found = {};
  for (let partition = 0; partition < cluster.state().partitions.filter((p) => p.topic === 'orders').length; partition++) {
    for (const record of cluster.records('orders', partition)) {
      (found[record.key] ??= []).push(partition);
    }
  }
  return found;
};
cluster.runFor(1000);
for (const key of keys) cluster.produce(0, key, 1, 100);
cluster.runFor(5000);
cluster.input({ type: 'createPartitions', topic: 'orders', count: 4 });
cluster.runFor(1000);
const change = cluster.trace().filter((e) => e.kind === 'partitions-created').map((e) => e.line);
cluster.runFor(15000); // the clients' next metadata refresh
for (const key of keys) cluster.produce(0, key, 1, 100);
cluster.runFor(10000);
for (const [key, partitions] of Object.entries(where())) {
  const [before, after] = partitions;
  console.log(`${key}: partition ${before} -> partition ${after}${before === after ? '' : ' (moved)'}`);
}
const billing = cluster.state().consumers[0];
console.log(`billing owns ${billing.partitions.map((p) => p.partition).join(' ')}`);
show(change, 'the change');
