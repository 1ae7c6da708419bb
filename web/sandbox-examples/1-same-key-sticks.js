// The same key always goes to the same partition
// Kafka hashes the key's bytes with murmur2 and takes it modulo the
// partition count, so every record with key "user-42" lands together.
for (let send = 1; send <= 3; send++) {
  console.log(`send ${send}: user-42 -> partition ${partitionFor('user-42', 6)}`);
}
show(partitionMap(['user-42', 'user-42', 'user-42', 'user-7', 'order-9'], 6), 'keys on a 6-partition topic');
