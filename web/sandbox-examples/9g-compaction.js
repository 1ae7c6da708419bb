// Compaction keeps the latest value of each key
// A compacted topic of user profiles: three users update theirs again and
// again, then user-2 is deleted with a tombstone. Each broker's cleaner
// rewrites the closed segments keeping the latest record of each key; the
// tombstone goes once delete.retention.ms has passed.
const cluster = new Cluster({
  brokers: 3,
  logCleanerBackoffMs: 2000,
  topics: [{ name: 'profiles', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2, cleanupPolicy: 'compact', internalSegmentBytes: 600, deleteRetentionMs: 5000 }],
  producers: [{ topic: 'profiles' }],
}, 4);
for (let round = 0; round < 30; round++) {
  cluster.produce(0, `user-${round % 3}`, 1, 40);
  if (round === 12) cluster.input({ type: 'produceTombstone', producer: 0, key: 'user-2' });
  cluster.runFor(1000);
}
cluster.runFor(15000);
const cleanings = cluster.trace().filter((e) => e.kind === 'log-cleaned');
console.log(`cleanings: ${cleanings.length}`);
console.log(cleanings[cleanings.length - 1].line.replace(/^.*cleaner/, 'last: cleaner'));
const replica = cluster.state().brokers[0].replicas.find((r) => r.partition === 'profiles-0');
console.log(`log end offset ${replica.logEndOffset}, clean below ${replica.cleanedUpTo}`);
show(cluster.trace().filter((e) => e.kind === 'log-cleaned').map((e) => e.line), 'each cleaning on each broker');
