// The assignors on one group
// Two topics of two partitions, three members: range works topic by
// topic (so member c idles), round robin deals partitions out across topics.
const group = {
  topics: { orders: 2, payments: 2 },
  members: ['a', 'b', 'c'].map((memberId) => ({ memberId, topics: ['orders', 'payments'] })),
};
for (const strategy of ['range', 'roundrobin', 'sticky', 'cooperative-sticky']) {
  const { assignment } = assign(strategy, group);
  console.log(strategy.padEnd(20), Object.entries(assignment).map(([m, p]) => `${m}=[${p.join(' ')}]`).join('  '));
}
show(assign('roundrobin', group), 'roundrobin');
