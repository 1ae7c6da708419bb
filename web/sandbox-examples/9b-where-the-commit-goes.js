// At most once or at least once: where the commit goes
// The same crash in the middle of a batch, with the commit before the
// handler runs and after it. Before: the rest of the batch is never
// processed. After: what the handler finished is processed again.
for (const commitMode of ['before-processing', 'after-processing']) {
  const cluster = new Cluster({
    brokers: 3,
    topics: [{ name: 'orders', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 }],
    producers: [{ topic: 'orders', acks: 'all' }],
    consumers: [{ group: 'billing', topics: ['orders'], autoOffsetReset: 'earliest', processingMsPerRecord: 100, commitMode }],
  }, 7);
  cluster.runFor(5000);
  cluster.produce(0, null, 20);
  cluster.runFor(1500);
  cluster.input({ type: 'crashConsumer', consumer: 0 });
  cluster.runFor(1500);
  cluster.input({ type: 'startConsumer', consumer: 0 });
  cluster.runFor(82000);
  const [ledger] = cluster.ledger();
  const never = ledger.neverProcessed.reduce((sum, [, count]) => sum + count, 0);
  console.log(`${commitMode}: once ${ledger.processedOnce}, again ${ledger.processedMore}, never ${never}`);
  if (commitMode === 'after-processing') show(ledger, 'billing after the crash, committing after processing');
}
