// A poison record: retry, then the dead letter queue
// Every handler fails on the record with key "bad-order". Group billing
// retries twice, then sends it to orders.DLQ with headers saying where it
// came from, and goes on. Group shipping has no policy: the failure stops
// its member.
const topic = (name, partitions) => ({ name, partitions, replicationFactor: 3, minInsyncReplicas: 2 });
const cluster = new Cluster({
  brokers: 3,
  topics: [topic('orders', 1), topic('orders.DLQ', 1)],
  producers: [{ topic: 'orders' }, { topic: 'orders.DLQ' }],
  consumers: [
    {
      group: 'billing', topics: ['orders'], autoOffsetReset: 'earliest', processingMsPerRecord: 20,
      commitMode: 'after-processing',
      onFailure: { retries: 2, backoffMs: 500, then: 'dead-letter', deadLetterProducer: 1 },
    },
    { group: 'shipping', topics: ['orders'], autoOffsetReset: 'earliest', processingMsPerRecord: 20 },
    { group: 'dlq-audit', topics: ['orders.DLQ'], autoOffsetReset: 'earliest' },
  ],
}, 3);
cluster.input({ type: 'poisonRecords', topic: 'orders', key: 'bad-order' });
cluster.runFor(5000);
cluster.produce(0, 'good', 3);
cluster.produce(0, 'bad-order', 1);
cluster.produce(0, 'good', 3);
cluster.runFor(15000);
for (const view of cluster.ledger()) {
  const never = view.neverProcessed.map(([reason, count]) => `${count} ${reason}`).join(', ') || 'none';
  console.log(`${view.group}: once ${view.processedOnce}, dead-lettered ${view.deadLettered}, never: ${never}`);
}
for (const consumer of cluster.state().consumers) {
  console.log(`${consumer.group}: ${consumer.phase}`);
}
show(cluster.ledger(), 'what each group did with each record');
