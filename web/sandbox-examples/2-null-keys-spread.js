// Records without a key spread over the partitions
// Since Kafka 3.3 (KIP-794) keyless records stick to one partition per
// batch, then move on, so the counts even out over many batches.
const choices = simulateKeyless({ strategy: 'uniform-sticky', partitions: 6, records: 3000 });
const counts = new Array(6).fill(0);
for (const choice of choices) counts[choice.partition]++;
console.log('records per partition:', counts.join(', '));
console.log('first choice:', choices[0].reason);
show(counts, 'keyless records per partition');
