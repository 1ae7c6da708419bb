// Kafka's scale case: a million partitions, 2,000 members (sticky)
// 500 topics of 2,000 partitions, every member subscribed to all of them,
// as in Kafka's AbstractStickyAssignorTest. It runs in the worker, so the
// page stays responsive however long it takes.
const topics = {};
for (let t = 0; t < 500; t++) topics[`t${String(t).padStart(3, '0')}`] = 2000;
const names = Object.keys(topics);
const members = Array.from({ length: 2000 }, (_, i) => ({ memberId: `c${String(i).padStart(4, '0')}`, topics: names }));
const stats = assignStats('sticky', { topics, members });
console.log(`${stats.partitions} partitions over ${stats.members} members: ` +
  `${stats.minPerMember} to ${stats.maxPerMember} each, ${stats.idleMembers} idle`);
show(stats, 'sticky on a million partitions');
