// Retention deletes old segments, read or not
// Topic clicks keeps 20 seconds of records in 1 KB segments; every broker
// checks retention every 5 seconds. Group report is paused for 40 s: when
// it comes back its position is gone (OFFSET_OUT_OF_RANGE) and
// auto.offset.reset=earliest moves it to the new log start.
const cluster = new Cluster({
  brokers: 3,
  logRetentionCheckIntervalMs: 5000,
  topics: [{ name: 'clicks', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2, internalSegmentBytes: 1024, retentionMs: 20000 }],
  producers: [{ topic: 'clicks' }],
  consumers: [{ group: 'report', topics: ['clicks'], autoOffsetReset: 'earliest' }],
}, 7);
cluster.runFor(5000);
cluster.input({ type: 'pauseConsumer', consumer: 0, durationMs: 40000 });
for (let second = 0; second < 60; second++) {
  cluster.produce(0, null, 5, 50);
  cluster.runFor(1000);
}
cluster.runFor(10000);
const replica = cluster.state().brokers[0].replicas.find((r) => r.partition === 'clicks-0');
console.log(`log start ${replica.logStartOffset}, log end ${replica.logEndOffset}, ${replica.segmentCount} segments, ${replica.sizeBytes} bytes`);
console.log('files:', replica.segments.map((s) => s.fileStem + '.log').slice(-2).join(' '));
const resets = cluster.trace().filter((e) => e.kind === 'offset-out-of-range');
console.log(`OFFSET_OUT_OF_RANGE resets: ${resets.length}`);
for (const view of cluster.ledger()) {
  const never = view.neverProcessed.map(([reason, count]) => `${count} ${reason}`).join(', ') || 'none';
  console.log(`${view.group}: once ${view.processedOnce}, never: ${never}`);
}
show(cluster.ledger(), 'what group report read, and what retention deleted first');
