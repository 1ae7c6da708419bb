// A lost produce response, without and with enable.idempotence
// The leader writes the batch, its answer is lost and the producer sends it
// again: without idempotence the log holds the records twice; with it the
// leader recognises the sequences and answers with the original offsets.
for (const enableIdempotence of [false, true]) {
  const cluster = new Cluster({
    brokers: 3,
    topics: [{ name: 'payments', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 }],
    producers: [{ topic: 'payments', acks: 'all', enableIdempotence }],
  }, 1);
  cluster.runFor(3000);
  cluster.input({ type: 'loseProduceResponse', producer: 0 });
  cluster.produce(0, null, 5);
  cluster.runFor(5000);
  const summary = cluster.summary();
  console.log(`enable.idempotence=${enableIdempotence}: produced ${summary.produced}, acknowledged ${summary.acknowledged}, duplicated ${summary.duplicated}`);
  if (enableIdempotence) show(summary, 'with enable.idempotence=true');
}
