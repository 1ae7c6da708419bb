// Eager against cooperative when a member leaves
// Under the eager protocol every member gives up all its partitions when
// the group rebalances; cooperative-sticky keeps what it can and only
// moves the leaver's partitions.
const group = {
  topics: { orders: 6 },
  members: ['a', 'b', 'c'].map((memberId) => ({ memberId, topics: ['orders'] })),
};
for (const strategy of ['range', 'cooperative-sticky']) {
  const rounds = rebalance(strategy, group, [{ leave: ['c'] }]);
  const { assignment, moves } = rounds[rounds.length - 1].report;
  const taken = moves.map((move) => `${move.partition} ${move.from}->${move.to}`).join(', ') || 'none';
  console.log(`${strategy}: a=[${assignment.a.join(' ')}] b=[${assignment.b.join(' ')}]; taken from a member that stayed: ${taken}`);
}
show(rebalance('cooperative-sticky', group, [{ leave: ['c'] }]).at(-1).report, 'cooperative-sticky after c leaves');
