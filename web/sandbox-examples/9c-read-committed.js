// Exactly once for readers: read_committed against read_uncommitted
// A transactional producer commits one transaction and aborts the next.
// The aborted records stay in the log; only the read_uncommitted group
// returns them to its application.
const cluster = new Cluster({
  brokers: 3,
  transactionStatePartitions: 3,
  topics: [{ name: 'payments', partitions: 2, replicationFactor: 3, minInsyncReplicas: 2 }],
  producers: [{ topic: 'payments', acks: 'all', transactionalId: 'payments-tx' }],
  consumers: [
    { group: 'audit', topics: ['payments'], autoOffsetReset: 'earliest' },
    { group: 'ledger', topics: ['payments'], autoOffsetReset: 'earliest', isolationLevel: 'read_committed' },
  ],
}, 5);
cluster.runFor(5000);
cluster.produce(0, 'alice', 4);
cluster.runFor(1000);
cluster.input({ type: 'commitTransaction', producer: 0 });
cluster.runFor(4000);
cluster.produce(0, 'bob', 5);
cluster.runFor(1000);
cluster.input({ type: 'abortTransaction', producer: 0 });
cluster.runFor(20000);
for (const consumer of cluster.state().consumers) {
  console.log(`${consumer.group}: read ${consumer.recordsRead}`);
}
const producer = cluster.state().producers[0];
console.log(`transactions committed ${producer.transaction.committed}, aborted ${producer.transaction.aborted}`);
show(cluster.ledger(), 'what each group processed');
