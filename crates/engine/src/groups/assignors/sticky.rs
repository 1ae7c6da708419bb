//! Kafka's client-side `StickyAssignor` and `CooperativeStickyAssignor`
//! (`clients/.../consumer/internals/AbstractStickyAssignor.java`, rack-unaware
//! paths).
//!
//! Both keep as many previously owned partitions as balance allows. Kafka
//! picks one of two builders:
//!
//! * every member subscribes to the same topics: the *constrained* builder
//!   keeps up to a quota of each member's owned partitions, then deals the
//!   rest round-robin to members in id order;
//! * otherwise the *general* builder keeps all valid owned partitions, gives
//!   each unassigned partition to the least-loaded eligible member, then moves
//!   partitions one by one while that improves the balance.
//!
//! Some of Kafka's choices depend on the iteration order of Java hash maps
//! (members are held in a `HashMap` keyed by member id). We reproduce that
//! order with [`crate::java::hash_map_iteration_order`] so our answer is the
//! one a real group gets, not merely an equally balanced one.
//!
//! Internally partitions are numbered densely (topics in Java name order,
//! partitions ascending) and members by their position in the input, which
//! keeps the million-partition case fast.

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use super::{Assignment, GroupInput, TopicPartition};
use crate::java::{compare_strings, hash_map_bucket, hash_map_capacity, hash_map_iteration_order, string_hash_code};
use crate::protocol::TopicName;

/// Kafka's `DEFAULT_GENERATION`: a member that reports no generation.
const DEFAULT_GENERATION: i32 = -1;
/// Marks "no member" in dense per-partition tables.
const NOBODY: u32 = u32::MAX;
/// Marks a member's slot in a list it has left.
const REMOVED: usize = usize::MAX;

/// The outcome of the sticky algorithm before the cooperative adjustment.
pub(super) struct StickyOutcome {
    /// Member index to its partitions (dense numbers), in Kafka's list order.
    lists: Vec<Vec<u32>>,
    /// Partitions given to a new owner while another member still owns them
    /// (`partitionsTransferringOwnership`), with their new owner.
    transferring: BTreeMap<u32, usize>,
}

/// `sticky`: the eager protocol, so members give up everything before the
/// rebalance and the full assignment is handed out at once.
pub(super) fn assign_sticky(input: &GroupInput) -> Assignment {
    let universe = Universe::new(input);
    let outcome = run(input, &universe);
    universe.to_assignment(input, &outcome.lists)
}

/// `cooperative-sticky`: the first-phase assignment, in which a partition
/// moving from one member to another is withheld from its new owner until the
/// old owner has revoked it (`CooperativeStickyAssignor#assign`). Returns the
/// assignment and the withheld partitions.
pub(super) fn assign_cooperative(input: &GroupInput) -> (Assignment, Vec<TopicPartition>) {
    let universe = Universe::new(input);
    let mut outcome = run(input, &universe);
    let mut withheld = Vec::new();
    for (&partition, &member) in &outcome.transferring {
        let list = &mut outcome.lists[member];
        if let Some(position) = list.iter().position(|&candidate| candidate == partition) {
            list.remove(position);
            withheld.push(universe.topic_partition(partition));
        }
    }
    (universe.to_assignment(input, &outcome.lists), withheld)
}

/// Dense numbering of every partition of every topic in the metadata.
struct Universe {
    /// Topic names in Java `String.compareTo` order.
    topics: Vec<TopicName>,
    /// Partition count per topic (same order).
    counts: Vec<u32>,
    /// First dense number of each topic's partitions.
    offsets: Vec<u32>,
    total: u32,
    /// Topic name to index. Only ever looked up, never iterated, and hashed
    /// with a fixed function, so it cannot make a run differ.
    by_name: HashMap<TopicName, usize, BuildHasherDefault<Fnv1a>>,
}

impl Universe {
    fn new(input: &GroupInput) -> Universe {
        let mut topics: Vec<TopicName> = input
            .topics
            .keys()
            .map(|topic| TopicName::from(topic.as_str()))
            .collect();
        crate::sorting::sort_by(&mut topics, |left, right| compare_strings(left, right));
        let counts: Vec<u32> = topics.iter().map(|topic| input.topics[&**topic]).collect();
        let mut offsets = Vec::with_capacity(topics.len());
        let mut total = 0u32;
        for count in &counts {
            offsets.push(total);
            total = total.saturating_add(*count);
        }
        let by_name = topics
            .iter()
            .enumerate()
            .map(|(index, topic)| (topic.clone(), index))
            .collect();
        Universe {
            topics,
            counts,
            offsets,
            total,
            by_name,
        }
    }

    fn topic_index(&self, topic: &str) -> Option<usize> {
        self.by_name.get(topic).copied()
    }

    /// Dense numbers of the existing partitions among `partitions`, in
    /// order. Owned lists come in runs of one topic, so the last topic
    /// looked up is tried first.
    fn numbers(&self, partitions: &[TopicPartition]) -> Vec<u32> {
        let mut numbers = Vec::with_capacity(partitions.len());
        let mut last: Option<(&str, usize)> = None;
        for partition in partitions {
            let topic = match last {
                Some((name, index)) if name == &*partition.topic => Some(index),
                _ => self.topic_index(&partition.topic),
            };
            let Some(topic) = topic else { continue };
            last = Some((&partition.topic, topic));
            if partition.partition < self.counts[topic] {
                numbers.push(self.offsets[topic] + partition.partition);
            }
        }
        numbers
    }

    fn topic_of(&self, number: u32) -> usize {
        self.offsets.partition_point(|&offset| offset <= number) - 1
    }

    fn topic_partition(&self, number: u32) -> TopicPartition {
        let topic = self.topic_of(number);
        TopicPartition::new(self.topics[topic].clone(), number - self.offsets[topic])
    }

    fn to_assignment(&self, input: &GroupInput, lists: &[Vec<u32>]) -> Assignment {
        let mut assignment = Assignment::new();
        for (member, list) in input.members.iter().zip(lists) {
            // A member's partitions mostly come in runs of one topic: look
            // the topic up again only when a number leaves the last one's range.
            let mut topic = usize::MAX;
            let (mut start, mut end) = (0, 0);
            let partitions = list
                .iter()
                .map(|&number| {
                    if !(start..end).contains(&number) {
                        // Dealt round-robin, a member's next partition is
                        // often in the next topic: try that before searching.
                        topic = if topic.wrapping_add(1) < self.topics.len()
                            && number >= self.offsets[topic.wrapping_add(1)]
                            && number < self.offsets[topic.wrapping_add(1)] + self.counts[topic.wrapping_add(1)]
                        {
                            topic.wrapping_add(1)
                        } else {
                            self.topic_of(number)
                        };
                        start = self.offsets[topic];
                        end = start + self.counts[topic];
                    }
                    TopicPartition::new(self.topics[topic].clone(), number - start)
                })
                .collect();
            assignment.insert(member.member_id.clone(), partitions);
        }
        assignment
    }
}

/// Per-member facts both builders need.
struct Members {
    /// Iteration order of Kafka's `Map<String, Subscription>` (a `HashMap`).
    hash_order: Vec<usize>,
    /// Each member's rank in Java member-id order (`String.compareTo`).
    id_rank: Vec<usize>,
    generation: Vec<i32>,
    /// Owned partitions as each member reported them (existing ones only).
    raw_owned: Vec<Vec<u32>>,
    /// Owned partitions after resolving claims by several members.
    owned: Vec<Vec<u32>>,
    /// Partitions two members of the same generation both claimed.
    doubly_claimed: Vec<bool>,
    max_generation: i32,
}

fn run(input: &GroupInput, universe: &Universe) -> StickyOutcome {
    let member_count = input.members.len();
    if member_count == 0 {
        return StickyOutcome {
            lists: Vec::new(),
            transferring: BTreeMap::new(),
        };
    }
    let hashes: Vec<i32> = input
        .members
        .iter()
        .map(|member| string_hash_code(&member.member_id))
        .collect();
    let hash_order = hash_map_iteration_order(&hashes, hash_map_capacity(16, member_count));
    let mut by_id: Vec<usize> = (0..member_count).collect();
    crate::sorting::sort_by(&mut by_id, |&left, &right| {
        compare_strings(&input.members[left].member_id, &input.members[right].member_id)
    });
    let mut id_rank = vec![0; member_count];
    for (rank, &member) in by_id.iter().enumerate() {
        id_rank[member] = rank;
    }
    let generation: Vec<i32> = input
        .members
        .iter()
        .map(|member| member.generation.unwrap_or(DEFAULT_GENERATION))
        .collect();
    let raw_owned = input
        .members
        .iter()
        .map(|member| universe.numbers(&member.owned))
        .collect();
    let mut members = Members {
        hash_order,
        id_rank,
        generation,
        raw_owned,
        owned: vec![Vec::new(); member_count],
        doubly_claimed: vec![false; universe.total as usize],
        max_generation: DEFAULT_GENERATION,
    };
    let all_equal = resolve_ownership(input, universe, &mut members);
    if all_equal {
        constrained(universe, &members)
    } else {
        general(input, universe, members)
    }
}

/// `allSubscriptionsEqual`: collects each member's still-valid owned
/// partitions, settling partitions claimed by several members (the higher
/// generation wins; equal generations lose it both), and says whether every
/// subscription is the same.
fn resolve_ownership(input: &GroupInput, universe: &Universe, members: &mut Members) -> bool {
    let mut all_equal = true;
    let mut subscribed: BTreeSet<&str> = BTreeSet::new();
    // Who claimed each partition so far; a first assignment, where nobody
    // owns anything, needs no table (and no million-entry fill).
    let anyone_owns = members.raw_owned.iter().any(|owned| !owned.is_empty());
    let mut previous_owner = if anyone_owns {
        vec![NOBODY; universe.total as usize]
    } else {
        Vec::new()
    };
    let mut reference: &[TopicName] = &[];
    for &member in &members.hash_order {
        let subscription = &input.members[member].topics;
        // Kafka starts from the first non-empty subscription it meets.
        if subscribed.is_empty() {
            subscribed.extend(subscription.iter().map(|topic| &**topic));
            reference = subscription;
        } else if all_equal
            // The same duplicate-free list is the common case and cheap to check.
            && !(same_names(subscription, reference) && reference.len() == subscribed.len())
            && !(subscription.len() == subscribed.len()
                && subscription.iter().all(|topic| subscribed.contains(&**topic)))
        {
            all_equal = false;
        }
        let generation = members.generation[member];
        members.max_generation = members.max_generation.max(generation);
        for index in 0..members.raw_owned[member].len() {
            let number = members.raw_owned[member][index];
            let other = previous_owner[number as usize];
            if other == NOBODY {
                members.owned[member].push(number);
                previous_owner[number as usize] = member as u32;
                continue;
            }
            let other = other as usize;
            let other_generation = members.generation[other];
            if generation == other_generation {
                members.doubly_claimed[number as usize] = true;
                members.owned[other].retain(|&partition| partition != number);
                previous_owner[number as usize] = member as u32;
            } else if generation > other_generation {
                members.owned[member].push(number);
                members.owned[other].retain(|&partition| partition != number);
                previous_owner[number as usize] = member as u32;
            }
        }
    }
    all_equal
}

/// Whether two lists hold the same names in the same order. Names shared by
/// both lists (one allocation) are equal without reading them; others are
/// compared inline: topic names are short, and a call to `memcmp` per name
/// costs more than the comparison itself when a million are compared.
fn same_names(left: &[TopicName], right: &[TopicName]) -> bool {
    left.len() == right.len()
        && left
            .iter()
            .zip(right)
            .all(|(left, right)| same_bytes(left.as_bytes(), right.as_bytes()))
}

/// Whether two byte strings are equal, for short ones with at most two
/// overlapping word loads from each instead of a loop over the bytes (most
/// topic names are 4 to 16 bytes long).
fn same_bytes(left: &[u8], right: &[u8]) -> bool {
    let length = left.len();
    if length != right.len() {
        return false;
    }
    if std::ptr::eq(left.as_ptr(), right.as_ptr()) {
        return true;
    }
    match length {
        0..=3 => left == right,
        4..=8 => {
            word::<4>(left, 0) == word::<4>(right, 0) && word::<4>(left, length - 4) == word::<4>(right, length - 4)
        }
        9..=16 => {
            word::<8>(left, 0) == word::<8>(right, 0) && word::<8>(left, length - 8) == word::<8>(right, length - 8)
        }
        _ => left == right,
    }
}

/// `N` bytes of `bytes` from `at` (which the caller keeps in bounds), as an
/// array the compiler loads in one instruction.
fn word<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut word = [0; N];
    word.copy_from_slice(&bytes[at..at + N]);
    word
}

/// The constrained builder (`ConstrainedAssignmentBuilder`): every member
/// subscribes to the same topics, so quotas are `floor(P/C)` and `ceil(P/C)`.
fn constrained(universe: &Universe, members: &Members) -> StickyOutcome {
    let member_count = members.owned.len();
    let total = universe.total as usize;
    let min_quota = total / member_count;
    let max_quota = total.div_ceil(member_count);
    let expected_over_min = total % member_count;
    let mut current_over_min = 0;

    let mut lists: Vec<Vec<u32>> = (0..member_count).map(|_| Vec::with_capacity(max_quota)).collect();
    let mut assigned = vec![false; total];
    let mut revoked = vec![false; total];
    let mut under_min: Vec<usize> = Vec::new();
    let mut exactly_min: VecDeque<usize> = VecDeque::new();

    // Keep owned partitions up to the quota, in (partition, topic) order.
    for &member in &members.hash_order {
        let owned: Vec<u32> = members.owned[member]
            .iter()
            .copied()
            .filter(|&number| !members.doubly_claimed[number as usize])
            .collect();
        // Kafka sorts by partition, then topic; pack both in one key.
        let mut keyed: Vec<u64> = owned
            .iter()
            .map(|&number| {
                let topic = universe.topic_of(number);
                (u64::from(number - universe.offsets[topic]) << 32) | topic as u64
            })
            .collect();
        crate::sorting::sort_u64(&mut keyed);
        let owned: Vec<u32> = keyed
            .into_iter()
            .map(|key| universe.offsets[(key & 0xffff_ffff) as usize] + (key >> 32) as u32)
            .collect();
        let keep = if owned.len() < min_quota {
            under_min.push(member);
            owned.len()
        } else if owned.len() >= max_quota && current_over_min < expected_over_min {
            current_over_min += 1;
            if current_over_min == expected_over_min {
                exactly_min.clear();
            }
            max_quota
        } else {
            if current_over_min < expected_over_min {
                exactly_min.push_back(member);
            }
            min_quota
        };
        for &number in &owned[..keep] {
            assigned[number as usize] = true;
        }
        for &number in &owned[keep..] {
            revoked[number as usize] = true;
        }
        lists[member].extend_from_slice(&owned[..keep]);
    }

    crate::sorting::sort_by_key(&mut under_min, |&member| members.id_rank[member]);
    crate::sorting::sort_by_key(exactly_min.make_contiguous(), |&member| members.id_rank[member]);

    // Deal the unassigned partitions, in (topic, partition) order, round-robin
    // over the members below the minimum quota, then one more each to members
    // at exactly the minimum. Kafka walks the members below the minimum with
    // a linked list's iterator and removes a member where it stands when it
    // reaches the quota; here the removed member's slot is marked and the
    // list closed up when the walk wraps round, so a removal costs nothing
    // (shifting the list each time cost a quadratic number of moves when
    // every member fills in the same round, as on a first assignment).
    let mut transferring = BTreeMap::new();
    let mut cursor = 0;
    let mut under_min_left = under_min.len();
    for number in (0..universe.total).filter(|&number| !assigned[number as usize]) {
        let from_under_min;
        let member = if cursor < under_min.len() {
            from_under_min = true;
            cursor += 1;
            under_min[cursor - 1]
        } else if under_min_left > 0 {
            // Removed slots are all behind the walk: close them up.
            under_min.retain(|&member| member != REMOVED);
            from_under_min = true;
            cursor = 1;
            under_min[0]
        } else if let Some(member) = exactly_min.pop_front() {
            from_under_min = false;
            member
        } else {
            // Kafka throws here ("No more unfilled consumers"); the quotas
            // make it unreachable.
            debug_assert!(false, "sticky quotas left a partition without a member");
            break;
        };
        lists[member].push(number);
        if revoked[number as usize] || members.doubly_claimed[number as usize] {
            transferring.insert(number, member);
        }
        let count = lists[member].len();
        // (Kafka also counts members reaching the maximum here, only to log.)
        if count == min_quota && from_under_min {
            under_min[cursor - 1] = REMOVED;
            under_min_left -= 1;
            exactly_min.push_back(member);
        }
    }
    StickyOutcome { lists, transferring }
}

/// The general builder (`GeneralAssignmentBuilder`), for groups whose members
/// subscribe to different topics.
fn general(input: &GroupInput, universe: &Universe, members: Members) -> StickyOutcome {
    let mut builder = General::new(input, universe, members);
    builder.build();
    let transferring = builder.transferring();
    StickyOutcome {
        lists: builder.current,
        transferring,
    }
}

struct General<'a> {
    universe: &'a Universe,
    members: Members,
    /// Per topic, the members that subscribe to it, in subscription-map order.
    topic_consumers: Vec<Vec<usize>>,
    /// Per member, the existing topics it subscribes to, in its own order.
    member_topics: Vec<Vec<usize>>,
    /// Per member, whether it subscribes to each topic (dense lookup).
    subscribes: Vec<Vec<bool>>,
    current: Vec<Vec<u32>>,
    owner: Vec<u32>,
    /// `sortedCurrentSubscriptions`: members by (assignment size, member id).
    sorted: BTreeSet<(usize, usize, usize)>,
    /// Members taken out of the balancing because nothing of theirs can move.
    fixed: Vec<bool>,
    movements: PartitionMovements,
    revocation_required: bool,
}

impl<'a> General<'a> {
    fn new(input: &GroupInput, universe: &'a Universe, members: Members) -> General<'a> {
        let member_count = input.members.len();
        let topic_count = universe.topics.len();
        let mut topic_consumers = vec![Vec::new(); topic_count];
        let mut member_topics = vec![Vec::new(); member_count];
        let mut subscribes = vec![vec![false; topic_count]; member_count];
        for &member in &members.hash_order {
            for topic in &input.members[member].topics {
                if let Some(topic) = universe.topic_index(topic) {
                    member_topics[member].push(topic);
                    topic_consumers[topic].push(member);
                    subscribes[member][topic] = true;
                }
            }
        }
        let current = members.owned.clone();
        let mut owner = vec![NOBODY; universe.total as usize];
        for (member, list) in current.iter().enumerate() {
            for &number in list {
                owner[number as usize] = member as u32;
            }
        }
        General {
            universe,
            fixed: vec![false; member_count],
            members,
            topic_consumers,
            member_topics,
            subscribes,
            current,
            owner,
            sorted: BTreeSet::new(),
            movements: PartitionMovements::default(),
            revocation_required: false,
        }
    }

    fn key(&self, member: usize) -> (usize, usize, usize) {
        (self.current[member].len(), self.members.id_rank[member], member)
    }

    fn build(&mut self) {
        let previous = self.previous_assignment();

        // Keep owned partitions of topics the member still subscribes to.
        let mut assigned = vec![false; self.universe.total as usize];
        for member in 0..self.current.len() {
            let subscribes = &self.subscribes[member];
            let universe = self.universe;
            let before = self.current[member].len();
            self.current[member].retain(|&number| subscribes[universe.topic_of(number)]);
            if self.current[member].len() != before {
                self.revocation_required = true;
            }
            for &number in &self.current[member] {
                assigned[number as usize] = true;
            }
        }

        // All partitions, topics ordered by (number of subscribers, name).
        let mut topic_order: Vec<usize> = (0..self.universe.topics.len()).collect();
        crate::sorting::sort_by_key(&mut topic_order, |&topic| (self.topic_consumers[topic].len(), topic));
        let mut sorted_partitions: Vec<u32> = topic_order
            .iter()
            .flat_map(|&topic| {
                let start = self.universe.offsets[topic];
                start..start + self.universe.counts[topic]
            })
            .collect();
        let mut unassigned: Vec<u32> = sorted_partitions
            .iter()
            .copied()
            .filter(|&number| !assigned[number as usize])
            .collect();

        for member in 0..self.current.len() {
            self.sorted.insert(self.key(member));
        }
        self.balance(&previous, &mut sorted_partitions, &mut unassigned);
    }

    /// `prepopulateCurrentAssignments`: for members of older generations,
    /// who owned each partition most recently. The raw claims count here,
    /// including ones lost to conflicts.
    fn previous_assignment(&self) -> BTreeMap<u32, (usize, i32)> {
        let mut previous: BTreeMap<u32, (usize, i32)> = BTreeMap::new();
        let max_generation = self.members.max_generation;
        for &member in &self.members.hash_order {
            let generation = self.members.generation[member];
            let older = if generation != DEFAULT_GENERATION {
                generation < max_generation
            } else {
                max_generation > DEFAULT_GENERATION
            };
            if !older {
                continue;
            }
            for &claimed in &self.members.raw_owned[member] {
                match previous.get(&claimed) {
                    Some(&(_, known)) if generation <= known => {}
                    _ => {
                        previous.insert(claimed, (member, generation));
                    }
                }
            }
        }
        previous
    }

    /// `balance`: assign what is unassigned, then move partitions while that
    /// improves the balance, keeping the result only if it is better.
    fn balance(
        &mut self,
        previous: &BTreeMap<u32, (usize, i32)>,
        sorted_partitions: &mut Vec<u32>,
        unassigned: &mut Vec<u32>,
    ) {
        let initializing = self
            .sorted
            .last()
            .map(|&(_, _, member)| self.current[member].is_empty())
            .unwrap_or(true);

        for &number in unassigned.iter() {
            let topic = self.universe.topic_of(number);
            if self.topic_consumers[topic].is_empty() {
                continue;
            }
            let chosen = self
                .sorted
                .iter()
                .map(|&(_, _, member)| member)
                .find(|&member| self.subscribes[member][topic]);
            if let Some(member) = chosen {
                self.sorted.remove(&self.key(member));
                self.current[member].push(number);
                self.owner[number as usize] = member as u32;
                self.sorted.insert(self.key(member));
            }
        }

        // Only partitions of topics with two or more subscribers can move.
        let movable_topic: Vec<bool> = self
            .topic_consumers
            .iter()
            .map(|consumers| consumers.len() >= 2)
            .collect();
        let universe = self.universe;
        sorted_partitions.retain(|&number| movable_topic[universe.topic_of(number)]);
        unassigned.retain(|&number| movable_topic[universe.topic_of(number)]);

        // Only members that could gain or lose a partition take part.
        for member in 0..self.current.len() {
            let can_gain = self.current[member].len() < self.max_assignment_size(member);
            let can_lose = self.current[member]
                .iter()
                .any(|&number| movable_topic[universe.topic_of(number)]);
            if !can_gain && !can_lose {
                self.sorted.remove(&self.key(member));
                self.fixed[member] = true;
            }
        }

        let before_current = self.current.clone();
        let before_owner = self.owner.clone();
        if !self.revocation_required {
            self.perform_reassignments(unassigned, previous);
        }
        let reassigned = self.perform_reassignments(sorted_partitions, previous);
        if !initializing && reassigned && self.balance_score(&self.current) >= self.balance_score(&before_current) {
            self.current = before_current;
            self.owner = before_owner;
        }
        for member in 0..self.current.len() {
            if self.fixed[member] {
                self.fixed[member] = false;
                self.sorted.insert(self.key(member));
            }
        }
    }

    /// How many partitions a member could hold at most: all partitions of
    /// the topics it subscribes to (`getMaxAssignmentSize`).
    fn max_assignment_size(&self, member: usize) -> usize {
        if self.member_topics[member].len() == self.universe.topics.len() {
            self.universe.total as usize
        } else {
            self.member_topics[member]
                .iter()
                .map(|&topic| self.universe.counts[topic] as usize)
                .sum()
        }
    }

    /// Sum over all pairs of non-fixed members of the difference in their
    /// assignment sizes (`getBalanceScore`); lower is better.
    fn balance_score(&self, assignment: &[Vec<u32>]) -> usize {
        let mut sizes: Vec<usize> = (0..assignment.len())
            .filter(|&member| !self.fixed[member])
            .map(|member| assignment[member].len())
            .collect();
        crate::sorting::sort(&mut sizes);
        let count = sizes.len();
        // With sizes ascending, size i is larger than i others and smaller
        // than count - 1 - i others.
        sizes
            .iter()
            .enumerate()
            .map(|(index, &size)| size * index)
            .sum::<usize>()
            - sizes
                .iter()
                .enumerate()
                .map(|(index, &size)| size * (count - 1 - index))
                .sum::<usize>()
    }

    /// `isBalanced`: sizes differ by at most one, or no member could take a
    /// partition from a member holding two or more than it.
    fn is_balanced(&self) -> bool {
        let (Some(&(min, _, _)), Some(&(max, _, _))) = (self.sorted.first(), self.sorted.last()) else {
            return true;
        };
        if min + 1 >= max {
            return true;
        }
        for &(size, _, member) in &self.sorted {
            if size == self.max_assignment_size(member) {
                continue;
            }
            for &topic in &self.member_topics[member] {
                let start = self.universe.offsets[topic];
                for number in start..start + self.universe.counts[topic] {
                    let other = self.owner[number as usize];
                    if other == NOBODY || other as usize == member || self.fixed[other as usize] {
                        continue;
                    }
                    if size + 1 < self.current[other as usize].len() {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// `performReassignments`: walks the partitions, moving one whenever its
    /// owner holds two or more than another eligible member, until balanced.
    fn perform_reassignments(&mut self, partitions: &[u32], previous: &BTreeMap<u32, (usize, i32)>) -> bool {
        let mut reassigned = false;
        loop {
            let mut modified = false;
            for &number in partitions {
                if self.is_balanced() {
                    break;
                }
                let owner = self.owner[number as usize];
                if owner == NOBODY {
                    continue;
                }
                let owner = owner as usize;
                let owner_size = self.current[owner].len();
                if let Some(&(previous_owner, _)) = previous.get(&number) {
                    if !self.fixed[previous_owner] && owner_size > self.current[previous_owner].len() + 1 {
                        self.reassign_to(number, previous_owner);
                        reassigned = true;
                        modified = true;
                        continue;
                    }
                }
                let topic = self.universe.topic_of(number);
                let better_exists = self.topic_consumers[topic]
                    .iter()
                    .any(|&other| !self.fixed[other] && owner_size > self.current[other].len() + 1);
                if better_exists {
                    let target = self
                        .sorted
                        .iter()
                        .map(|&(_, _, member)| member)
                        .find(|&member| self.subscribes[member][topic])
                        .expect("the topic has an eligible member");
                    self.reassign_to(number, target);
                    reassigned = true;
                    modified = true;
                }
            }
            if !modified {
                return reassigned;
            }
        }
    }

    /// `reassignPartition(partition, newConsumer)`: moves `number`, or, to
    /// avoid moving partitions of one topic back and forth between two
    /// members, a partition that already moved the opposite way.
    fn reassign_to(&mut self, number: u32, new_owner: usize) {
        let owner = self.owner[number as usize] as usize;
        let topic = self.universe.topic_of(number);
        let actual = self
            .movements
            .partition_to_move(self.universe, topic, number, owner, new_owner);
        let old_owner = self.owner[actual as usize] as usize;
        self.sorted.remove(&self.key(old_owner));
        self.sorted.remove(&self.key(new_owner));
        self.movements
            .record_move(self.universe, topic, actual, old_owner, new_owner);
        if let Some(position) = self.current[old_owner]
            .iter()
            .position(|&candidate| candidate == actual)
        {
            self.current[old_owner].remove(position);
        }
        self.current[new_owner].push(actual);
        self.owner[actual as usize] = new_owner as u32;
        self.sorted.insert(self.key(new_owner));
        self.sorted.insert(self.key(old_owner));
    }

    /// `CooperativeStickyAssignor#computePartitionsTransferringOwnership`:
    /// partitions newly assigned to a member while another reported owning them.
    fn transferring(&self) -> BTreeMap<u32, usize> {
        let total = self.universe.total as usize;
        let mut revoked = vec![false; total];
        let mut added = BTreeMap::new();
        for member in 0..self.current.len() {
            let raw = &self.members.raw_owned[member];
            let mine: BTreeSet<u32> = self.current[member].iter().copied().gather();
            let owned: BTreeSet<u32> = raw.iter().copied().gather();
            for &number in &self.current[member] {
                if !owned.contains(&number) {
                    added.insert(number, member);
                }
            }
            for &number in raw {
                if !mine.contains(&number) {
                    revoked[number as usize] = true;
                }
            }
        }
        added.retain(|&number, _| revoked[number as usize]);
        added
    }
}

/// Kafka's `TopicPartition#hashCode`: `31 * (31 + partition) + topic.hashCode()`.
fn topic_partition_hash(universe: &Universe, number: u32) -> i32 {
    let topic = universe.topic_of(number);
    let partition = (number - universe.offsets[topic]) as i32;
    31i32
        .wrapping_add(partition)
        .wrapping_mul(31)
        .wrapping_add(string_hash_code(&universe.topics[topic]))
}

/// A `java.util.HashSet<TopicPartition>` as far as its iteration order goes:
/// elements with their insertion sequence, and the table capacity, which
/// grows with the largest size reached and never shrinks.
#[derive(Debug, Default)]
struct JavaHashSet {
    elements: Vec<(u64, u32)>,
    capacity: usize,
}

impl JavaHashSet {
    fn insert(&mut self, sequence: u64, number: u32) {
        if self.elements.iter().any(|&(_, existing)| existing == number) {
            return;
        }
        self.elements.push((sequence, number));
        self.capacity = hash_map_capacity(self.capacity.max(16), self.elements.len());
    }

    fn remove(&mut self, number: u32) {
        self.elements.retain(|&(_, existing)| existing != number);
    }

    /// The element Java's iterator returns first.
    fn first(&self, universe: &Universe) -> Option<u32> {
        self.elements
            .iter()
            .min_by_key(|&&(sequence, number)| {
                (
                    hash_map_bucket(topic_partition_hash(universe, number), self.capacity),
                    sequence,
                )
            })
            .map(|&(_, number)| number)
    }
}

/// `PartitionMovements`: which partitions moved from which member to which
/// during this rebalance, per topic, so a partition is not moved back and
/// forth between the same two members.
#[derive(Debug, Default)]
struct PartitionMovements {
    /// Partition to its (source, destination) members.
    by_partition: BTreeMap<u32, (usize, usize)>,
    /// Topic to (source, destination) to the partitions that moved so.
    by_topic: BTreeMap<usize, BTreeMap<(usize, usize), JavaHashSet>>,
    sequence: u64,
}

impl PartitionMovements {
    fn remove_record(&mut self, topic: usize, number: u32) -> Option<(usize, usize)> {
        let pair = self.by_partition.remove(&number)?;
        if let Some(pairs) = self.by_topic.get_mut(&topic) {
            if let Some(set) = pairs.get_mut(&pair) {
                set.remove(number);
                if set.elements.is_empty() {
                    pairs.remove(&pair);
                }
            }
            if pairs.is_empty() {
                self.by_topic.remove(&topic);
            }
        }
        Some(pair)
    }

    fn add_record(&mut self, topic: usize, number: u32, pair: (usize, usize)) {
        self.by_partition.insert(number, pair);
        self.sequence += 1;
        self.by_topic
            .entry(topic)
            .or_default()
            .entry(pair)
            .or_default()
            .insert(self.sequence, number);
    }

    /// `movePartition`.
    fn record_move(&mut self, _universe: &Universe, topic: usize, number: u32, old_owner: usize, new_owner: usize) {
        match self.remove_record(topic, number) {
            Some((source, _)) => {
                if source != new_owner {
                    self.add_record(topic, number, (source, new_owner));
                }
            }
            None => self.add_record(topic, number, (old_owner, new_owner)),
        }
    }

    /// `getTheActualPartitionToBeMoved`.
    fn partition_to_move(&self, universe: &Universe, topic: usize, number: u32, owner: usize, new_owner: usize) -> u32 {
        let Some(pairs) = self.by_topic.get(&topic) else {
            return number;
        };
        let owner = self
            .by_partition
            .get(&number)
            .map(|&(source, _)| source)
            .unwrap_or(owner);
        match pairs.get(&(new_owner, owner)) {
            Some(set) => set.first(universe).unwrap_or(number),
            None => number,
        }
    }
}

/// FNV-1a: a fixed, seedless hash for lookup-only tables (std's default
/// hasher is seeded from the OS, which the engine must not touch).
#[derive(Default)]
struct Fnv1a(u64);

impl Hasher for Fnv1a {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for &byte in bytes {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = hash;
    }
}
