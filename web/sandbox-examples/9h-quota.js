// A produce quota throttles a noisy client
// tenant-a sends 60 KB a second, over its quota of 10 KB a second on each
// broker; tenant-b sends a little and has no quota. Brokers answer
// tenant-a with a throttle time and it waits; tenant-b is never slowed.
const cluster = new Cluster({
  brokers: 3,
  topics: [{ name: 'events', partitions: 3, replicationFactor: 3, minInsyncReplicas: 2 }],
  producers: [{ topic: 'events', clientId: 'tenant-a' }, { topic: 'events', clientId: 'tenant-b' }],
  quotas: [{ clientId: 'tenant-a', producerByteRate: 10000 }],
}, 2);
for (let second = 0; second < 20; second++) {
  cluster.produce(0, null, 60, 1000);
  cluster.produce(1, null, 5, 100);
  cluster.runFor(1000);
}
const throttled = cluster.trace().filter((e) => e.kind === 'throttled');
const by = (producer) => throttled.filter((e) => e.line.includes(`producer-${producer} `)).length;
console.log(`throttled answers: tenant-a ${by(0)}, tenant-b ${by(1)}`);
const [a, b] = cluster.state().producers;
console.log(`tenant-a acked ${a.acknowledged} of ${a.sent}, tenant-b acked ${b.acknowledged} of ${b.sent}`);
show(throttled.slice(0, 5).map((e) => e.line), 'the first throttled answers');
