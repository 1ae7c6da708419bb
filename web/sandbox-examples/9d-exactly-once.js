// Exactly once end to end: consume, transform, produce
// Two app instances of group enricher read orders and write one receipt
// per order through their own transactional producer, with the consumed
// offsets in the same transaction. A long pause turns one of them into a
// zombie: its late commit is refused, its transaction aborts, and a
// read_committed reader still sees each receipt once.
const topic = (name) => ({ name, partitions: 2, replicationFactor: 3, minInsyncReplicas: 2 });
const app = (producer) => ({
  group: 'enricher', topics: ['orders'], autoOffsetReset: 'earliest', sessionTimeoutMs: 10000,
  processingMsPerRecord: 100, commitMode: 'transactional', outputProducer: producer,
  isolationLevel: 'read_committed',
});
const cluster = new Cluster({
  brokers: 3,
  transactionStatePartitions: 3,
  topics: [topic('orders'), topic('receipts')],
  producers: [
    { topic: 'orders' },
    { topic: 'receipts', transactionalId: 'enricher-0' },
    { topic: 'receipts', transactionalId: 'enricher-1' },
  ],
  consumers: [
    app(1), app(2),
    { group: 'billing', topics: ['receipts'], autoOffsetReset: 'earliest', isolationLevel: 'read_committed' },
    { group: 'raw', topics: ['receipts'], autoOffsetReset: 'earliest' },
  ],
}, 7);
cluster.runFor(8000);
cluster.produce(0, 'alice', 6);
cluster.produce(0, 'bob', 6);
cluster.runFor(300);
cluster.input({ type: 'pauseConsumer', consumer: 0, durationMs: 15000 });
cluster.runFor(40000);
const audit = cluster.outputs('receipts');
console.log(`orders with a committed receipt: ${audit.sources}, with two or more: ${audit.duplicated.length}`);
console.log(`receipts in the log that read_committed readers skip: ${audit.hidden}`);
for (const consumer of cluster.state().consumers.slice(2)) {
  console.log(`${consumer.group} read ${consumer.recordsRead}`);
}
for (const producer of cluster.state().producers.slice(1)) {
  const { transactionalId, committed, aborted } = producer.transaction;
  console.log(`${transactionalId}: ${committed} committed, ${aborted} aborted`);
}
show(cluster.ledger(), 'what each group processed');
