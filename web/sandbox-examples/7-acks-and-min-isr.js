// acks=all with min.insync.replicas=2 and two brokers killed
// With only the leader left in sync, acks=all writes are refused
// (NOT_ENOUGH_REPLICAS) instead of being acknowledged and later lost.
const cluster = new Cluster({
  brokers: 3,
  topics: [{ name: 'orders', partitions: 1, replicationFactor: 3, minInsyncReplicas: 2 }],
  producers: [{ topic: 'orders', acks: 'all', requestTimeoutMs: 5000, deliveryTimeoutMs: 10000 }],
}, 1);
cluster.runFor(100);
cluster.produce(0, 'order-1', 5);
cluster.runFor(100);
cluster.killBroker(1);
cluster.killBroker(2);
cluster.runFor(15000);
cluster.produce(0, 'order-2', 5);
cluster.runFor(15000);
const summary = cluster.summary();
console.log(`acknowledged ${summary.acknowledged}, failed ${summary.failed}, lost ${summary.lost}`);
const partition = cluster.state().partitions.find((p) => p.partition === 'orders-0');
console.log(`orders-0 leader broker-${partition.leader}, ISR [${partition.isr.join(', ')}]`);
show(summary, 'what happened to the writes');
