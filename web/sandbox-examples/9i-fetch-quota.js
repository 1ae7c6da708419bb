// A fetch quota slows one group, not the other
// Two groups read the same 2,000-record backlog. The reports app's
// client.id has consumer_byte_rate 3,000 bytes a second: when its fetches
// go over it, brokers answer them empty with a throttle time, so it reads
// at about that rate. The alerts app has no quota and reads it all at once.
const cluster = new Cluster({
  brokers: 3,
  topics: [{ name: 'events', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 }],
  producers: [{ topic: 'events' }],
  consumers: [
    { group: 'reports', topics: ['events'], autoOffsetReset: 'earliest', clientId: 'reports' },
    { group: 'alerts', topics: ['events'], autoOffsetReset: 'earliest' },
  ],
  quotas: [{ clientId: 'reports', consumerByteRate: 3000 }],
}, 1);
cluster.runFor(1000);
cluster.produce(0, null, 2000, 100);
for (const until of [5000, 30000, 120000]) {
  cluster.runFor(until - cluster.now);
  const [reports, alerts] = cluster.state().consumers;
  console.log(`at ${until / 1000} s: reports read ${reports.recordsRead}, alerts read ${alerts.recordsRead}`);
}
const throttled = cluster.trace().filter((e) => e.kind === 'throttled');
show(throttled.slice(0, 4).map((e) => e.line), 'the first throttled fetches');
