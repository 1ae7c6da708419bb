// Two members split three partitions
// The range assignor gives each member a contiguous range; the first
// member in member-id order takes the extra partition.
const report = assign('range', {
  topics: { orders: 3 },
  members: [
    { memberId: 'consumer-a', topics: ['orders'] },
    { memberId: 'consumer-b', topics: ['orders'] },
  ],
});
console.log(report.assignment);
show(report, 'range: 2 members, 3 partitions');
