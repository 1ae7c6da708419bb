// A member beyond the partition count idles
// A partition has one owner in a group, so with two partitions the third
// member gets nothing: more consumers than partitions adds no throughput.
const report = assign('range', {
  topics: { orders: 2 },
  members: ['consumer-a', 'consumer-b', 'consumer-c'].map((memberId) => ({ memberId, topics: ['orders'] })),
});
for (const [member, partitions] of Object.entries(report.assignment)) {
  console.log(member, partitions.length ? partitions.join(', ') : 'idle');
}
show(report, 'range: 3 members, 2 partitions');
