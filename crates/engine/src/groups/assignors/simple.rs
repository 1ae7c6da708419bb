//! Kafka's share-group assignor `SimpleAssignor` (KIP-932, `simple`, the
//! only value `group.share.assignors` accepts in Kafka 4.1;
//! `group-coordinator/.../assignor/SimpleAssignor.java`).
//!
//! Unlike a consumer group's assignors, it may give one partition to
//! several members: records of a share-partition are handed out one
//! acquisition at a time, so more members than partitions still all get
//! work. Balance (no member more than one partition ahead of another) comes
//! before stickiness.
//!
//! * Homogeneous group (every member subscribes to the same topics): each
//!   member is first hashed onto one partition (`abs(memberId.hashCode() %
//!   P)`, several members may land on one); then it keeps partitions from its
//!   current assignment, up to `ceil(P / M)`, skipping those just hashed;
//!   then the partitions nobody has are dealt round-robin, a member taking
//!   at most one more than `ceil(P / M)`.
//! * Heterogeneous group: each member is hashed onto one of its own
//!   subscribed partitions; the partitions neither hashed nor currently
//!   assigned are dealt round-robin, topic by topic, over that topic's
//!   subscribers; then members keep their current partitions of topics they
//!   still subscribe to (no cap).
//!
//! Only *assignable* partitions are dealt: in Kafka 4.1 a share-partition
//! becomes assignable once the share coordinator has initialised its state
//! (`GroupSpec#isPartitionAssignable`).
//!
//! Java iteration orders decide ties, and we follow them: members in the
//! coordinator's map order (`HashMap` in production), each member's topics
//! in the order its subscription set yields them (the caller passes them in
//! that order; [`subscription_order`] gives production's `HashSet` order),
//! and the current assignment in the order of a
//! `HashMap<TopicIdPartition, List<String>>`.

use std::collections::{BTreeMap, BTreeSet};

use super::uniform::{member_order, topic_id};
use super::{AssignError, Assignment, GroupInput, MemberMap, SubscriptionType, TopicName, TopicPartition};
use crate::java::{
    hash_map_capacity, hash_map_iteration_order, hash_set_copy_capacity, string_hash_code, uuid_bits_hash_code,
};
use crate::sorting::Gather;

/// The partitions of each topic that may be assigned: `None` means every
/// partition of every topic (Kafka's `GroupSpec` without its map).
pub type Assignable = BTreeMap<String, BTreeSet<u32>>;

/// A partition as the assignor indexes it: (topic index, partition).
type Part = (usize, usize);

/// A topic as the assignor sees it.
struct Topic {
    name: TopicName,
    partitions: usize,
    /// `Uuid#hashCode` of its topic id.
    id_hash: i32,
}

/// The order in which `new HashSet<>(list)` of topic names yields them:
/// how a share group member's subscription is held in Kafka 4.1
/// (`ShareGroupMember.Builder#maybeUpdateSubscribedTopicNames`), and so the
/// order the assignor walks its topics.
pub fn subscription_order(names: &[TopicName]) -> Vec<TopicName> {
    let mut distinct: Vec<&TopicName> = Vec::with_capacity(names.len());
    for name in names {
        if !distinct.contains(&name) {
            distinct.push(name);
        }
    }
    let hashes: Vec<i32> = distinct.iter().map(|name| string_hash_code(name)).collect();
    hash_map_iteration_order(&hashes, hash_set_copy_capacity(hashes.len()))
        .into_iter()
        .map(|index| distinct[index].clone())
        .collect()
}

/// `SimpleAssignor#assign`. Members of `input` subscribe to topics in the
/// order their lists give; `options.map` chooses the member map (`HashMap`
/// unless told otherwise) and `options.type` may force the subscription
/// type. Every member of the group is in the result, empty if it gets
/// nothing, except where Kafka answers an empty assignment outright (no
/// members, or a homogeneous group subscribed to nothing).
pub fn assign(input: &GroupInput, assignable: Option<&Assignable>) -> Result<Assignment, AssignError> {
    super::check_input(input)?;
    let options = input.options.clone().unwrap_or_default();
    let order = member_order(input, options.map.unwrap_or(MemberMap::Hashmap));
    if order.is_empty() {
        return Ok(Assignment::new());
    }
    let model = Model::new(input, assignable, order)?;
    let homogeneous = match options.subscription_type {
        Some(SubscriptionType::Homogeneous) => true,
        Some(SubscriptionType::Heterogeneous) => false,
        None => {
            let sets: Vec<BTreeSet<usize>> = model
                .subscriptions
                .iter()
                .map(|subscription| subscription.iter().copied().gather())
                .collect();
            sets.iter().all(|set| *set == sets[0])
        }
    };
    let per_member = if homogeneous {
        match model.homogeneous()? {
            Some(per_member) => per_member,
            None => return Ok(Assignment::new()),
        }
    } else {
        model.heterogeneous()?
    };
    Ok(model.into_assignment(per_member))
}

struct Model<'a> {
    input: &'a GroupInput,
    topics: Vec<Topic>,
    /// Per member (input index): subscribed topic indices in walk order, or
    /// the name of a topic the metadata does not have.
    subscriptions: Vec<Vec<usize>>,
    missing: Vec<Option<String>>,
    /// Per member: its current partitions, grouped by topic.
    current: Vec<BTreeMap<usize, BTreeSet<usize>>>,
    assignable: Option<&'a Assignable>,
    /// Members in the coordinator's map order.
    order: Vec<usize>,
}

impl<'a> Model<'a> {
    fn new(input: &'a GroupInput, assignable: Option<&'a Assignable>, order: Vec<usize>) -> Result<Self, AssignError> {
        let mut topics: Vec<Topic> = Vec::with_capacity(input.topics.len());
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for (name, &count) in &input.topics {
            let (most, least) = topic_id(input, name)?;
            index.insert(name.as_str(), topics.len());
            topics.push(Topic {
                name: TopicName::from(name.as_str()),
                partitions: count as usize,
                id_hash: uuid_bits_hash_code(most, least),
            });
        }
        let mut subscriptions = Vec::with_capacity(input.members.len());
        let mut missing = Vec::with_capacity(input.members.len());
        let mut current = Vec::with_capacity(input.members.len());
        for member in &input.members {
            let mut subscribed: Vec<usize> = Vec::new();
            let mut unknown = None;
            for name in &member.topics {
                match index.get(&**name) {
                    Some(&topic) if !subscribed.contains(&topic) => subscribed.push(topic),
                    Some(_) => {}
                    None => unknown = unknown.or_else(|| Some(name.to_string())),
                }
            }
            subscriptions.push(subscribed);
            missing.push(unknown);
            let mut owned: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
            for partition in &member.owned {
                // Partitions of topics the metadata no longer has, or beyond a
                // topic's count, are left out.
                if let Some(&topic) = index.get(&*partition.topic) {
                    if (partition.partition as usize) < topics[topic].partitions {
                        owned.entry(topic).or_default().insert(partition.partition as usize);
                    }
                }
            }
            current.push(owned);
        }
        Ok(Model {
            input,
            topics,
            subscriptions,
            missing,
            current,
            assignable,
            order,
        })
    }

    fn member_hash(&self, member: usize) -> i32 {
        string_hash_code(&self.input.members[member].member_id)
    }

    /// `computeTargetPartitions`: the assignable partitions of a member's
    /// topics, topic by topic in its walk order. A topic missing from the
    /// metadata is Kafka's `PartitionAssignorException`.
    fn target_partitions(&self, member: usize) -> Result<Vec<Part>, AssignError> {
        if let Some(name) = &self.missing[member] {
            return Err(AssignError::new(format!(
                "Members are subscribed to topic {name} which doesn't exist in the topic metadata."
            )));
        }
        let mut parts = Vec::new();
        for &topic in &self.subscriptions[member] {
            for partition in 0..self.topics[topic].partitions {
                if self.is_assignable(topic, partition) {
                    parts.push((topic, partition));
                }
            }
        }
        Ok(parts)
    }

    fn is_assignable(&self, topic: usize, partition: usize) -> bool {
        match self.assignable {
            None => true,
            Some(map) => map
                .get(self.topics[topic].name.as_ref())
                .is_some_and(|partitions| partitions.contains(&(partition as u32))),
        }
    }

    /// `memberHashAssignment` for one member: `abs(hashCode % size)` with
    /// Java's truncating remainder.
    fn hashed(&self, member: usize, parts: &[Part]) -> Option<Part> {
        if parts.is_empty() {
            return None;
        }
        let remainder = self.member_hash(member) % parts.len() as i32;
        Some(parts[remainder.unsigned_abs() as usize])
    }

    /// `currentAssignment`: every partition some member holds now, with its
    /// holders, in the iteration order of Kafka's
    /// `HashMap<TopicIdPartition, List<String>>`. Keys go in member by member
    /// (map order), each member's topics in `Uuid` hash order and partitions
    /// in `Integer` hash order, which decides the order within a bucket.
    fn current_assignment(&self) -> Vec<(Part, Vec<usize>)> {
        let mut entries: Vec<(Part, Vec<usize>)> = Vec::new();
        let mut position: BTreeMap<Part, usize> = BTreeMap::new();
        for &member in &self.order {
            let owned = &self.current[member];
            let topics: Vec<usize> = owned.keys().copied().collect();
            let topic_hashes: Vec<i32> = topics.iter().map(|&topic| self.topics[topic].id_hash).collect();
            for topic_index in hash_map_iteration_order(&topic_hashes, hash_map_capacity(16, topics.len())) {
                let topic = topics[topic_index];
                let partitions: Vec<usize> = owned[&topic].iter().copied().collect();
                let partition_hashes: Vec<i32> = partitions.iter().map(|&partition| partition as i32).collect();
                for partition_index in
                    hash_map_iteration_order(&partition_hashes, hash_map_capacity(16, partitions.len()))
                {
                    let part = (topic, partitions[partition_index]);
                    match position.get(&part) {
                        Some(&at) => entries[at].1.push(member),
                        None => {
                            position.insert(part, entries.len());
                            entries.push((part, vec![member]));
                        }
                    }
                }
            }
        }
        // `TopicIdPartition#hashCode` is `Objects.hash(topicId, partitionId)`.
        let hashes: Vec<i32> = entries
            .iter()
            .map(|((topic, partition), _)| {
                31i32
                    .wrapping_mul(31i32.wrapping_add(self.topics[*topic].id_hash))
                    .wrapping_add(*partition as i32)
            })
            .collect();
        let capacity = hash_map_capacity(16, entries.len());
        let order = hash_map_iteration_order(&hashes, capacity);
        let mut slots: Vec<Option<(Part, Vec<usize>)>> = entries.into_iter().map(Some).collect();
        order
            .into_iter()
            .map(|index| slots[index].take().expect("each entry once"))
            .collect()
    }

    /// `newAssignmentHomogeneous`. `None` when the group subscribes to
    /// nothing (Kafka answers an empty assignment).
    fn homogeneous(&self) -> Result<Option<Vec<BTreeSet<Part>>>, AssignError> {
        let first = self.order[0];
        if self.subscriptions[first].is_empty() && self.missing[first].is_none() {
            return Ok(None);
        }
        let targets = self.target_partitions(first)?;
        let subscribed: BTreeSet<usize> = self.subscriptions[first].iter().copied().gather();
        let members = self.order.len();
        let desired = (targets.len() + members - 1) / members;

        let mut per_member: Vec<BTreeSet<Part>> = vec![BTreeSet::new(); self.input.members.len()];
        let mut taken: BTreeSet<Part> = BTreeSet::new();
        // Each member hashed onto one partition.
        let mut hashed: BTreeSet<Part> = BTreeSet::new();
        for &member in &self.order {
            if let Some(part) = self.hashed(member, &targets) {
                hashed.insert(part);
                per_member[member].insert(part);
                taken.insert(part);
            }
        }
        // Then what members hold now, up to the desired count.
        for (part, holders) in self.current_assignment() {
            if !subscribed.contains(&part.0) || hashed.contains(&part) {
                continue;
            }
            for member in holders {
                if per_member[member].len() < desired {
                    per_member[member].insert(part);
                    taken.insert(part);
                }
            }
        }
        // Then the rest, round-robin.
        let unassigned: Vec<Part> = targets.into_iter().filter(|part| !taken.contains(part)).collect();
        round_robin_with_count(&self.order, &unassigned, &mut per_member, desired)?;
        Ok(Some(per_member))
    }

    /// `newAssignmentHeterogeneous`.
    fn heterogeneous(&self) -> Result<Vec<BTreeSet<Part>>, AssignError> {
        // `HashMap<String, List<TopicIdPartition>>` of members with a
        // subscription, in its iteration order.
        let mut subscribers: Vec<usize> = Vec::new();
        let mut targets: Vec<Vec<Part>> = vec![Vec::new(); self.input.members.len()];
        for &member in &self.order {
            if self.subscriptions[member].is_empty() && self.missing[member].is_none() {
                continue;
            }
            targets[member] = self.target_partitions(member)?;
            subscribers.push(member);
        }
        let hashes: Vec<i32> = subscribers.iter().map(|&member| self.member_hash(member)).collect();
        let walk: Vec<usize> = hash_map_iteration_order(&hashes, hash_map_capacity(16, subscribers.len()))
            .into_iter()
            .map(|index| subscribers[index])
            .collect();

        // Every target partition once, in first-seen order, and each topic's
        // subscribers in first-seen order.
        let mut all_targets: Vec<Part> = Vec::new();
        let mut seen: BTreeSet<Part> = BTreeSet::new();
        let mut topic_members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &member in &walk {
            for &part in &targets[member] {
                if seen.insert(part) {
                    all_targets.push(part);
                }
                let list = topic_members.entry(part.0).or_default();
                if !list.contains(&member) {
                    list.push(member);
                }
            }
        }

        // Step 1: each member hashed onto one of its partitions.
        let mut assigned: BTreeMap<Part, Vec<usize>> = BTreeMap::new();
        for &member in &walk {
            if let Some(part) = self.hashed(member, &targets[member]) {
                assigned.entry(part).or_default().push(member);
            }
        }
        // Step 2: partitions neither hashed nor held now, round-robin over
        // each topic's subscribers.
        let currently_held: BTreeSet<Part> = self.current_assignment().into_iter().map(|(part, _)| part).gather();
        let mut unassigned: BTreeMap<usize, Vec<Part>> = BTreeMap::new();
        for &part in &all_targets {
            if !assigned.contains_key(&part) && !currently_held.contains(&part) {
                unassigned.entry(part.0).or_default().push(part);
            }
        }
        for (topic, parts) in &unassigned {
            let members = &topic_members[topic];
            for (at, &part) in parts.iter().enumerate() {
                assigned.entry(part).or_default().push(members[at % members.len()]);
            }
        }
        // Step 3: the new assignment, plus current partitions of topics the
        // member still subscribes to that the new one did not place.
        let mut per_member: Vec<BTreeSet<Part>> = vec![BTreeSet::new(); self.input.members.len()];
        for (part, members) in &assigned {
            for &member in members {
                per_member[member].insert(*part);
            }
        }
        for (part, holders) in self.current_assignment() {
            if assigned.contains_key(&part) {
                continue;
            }
            for member in holders {
                if topic_members.get(&part.0).is_some_and(|list| list.contains(&member)) {
                    per_member[member].insert(part);
                }
            }
        }
        Ok(per_member)
    }

    fn into_assignment(self, per_member: Vec<BTreeSet<Part>>) -> Assignment {
        let mut assignment = Assignment::new();
        for (member, parts) in per_member.into_iter().enumerate() {
            let mut list: Vec<TopicPartition> = parts
                .into_iter()
                .map(|(topic, partition)| TopicPartition::new(self.topics[topic].name.clone(), partition as u32))
                .collect();
            crate::sorting::sort(&mut list);
            assignment.insert(self.input.members[member].member_id.clone(), list);
        }
        assignment
    }
}

/// `roundRobinAssignmentWithCount`: deals `parts` over the members in
/// order, cycling; a member that already holds more than `desired` leaves
/// the rotation (so none ends above `desired + 1`). Kafka throws if the
/// rotation empties with partitions left; so do we.
fn round_robin_with_count(
    order: &[usize],
    parts: &[Part],
    per_member: &mut [BTreeSet<Part>],
    desired: usize,
) -> Result<(), AssignError> {
    let mut rotation: Vec<usize> = order.to_vec();
    let mut at = 0;
    let mut next = 0;
    while next < parts.len() {
        if at >= rotation.len() {
            at = 0;
            if rotation.is_empty() {
                return Err(AssignError::new("Inconsistent number of member IDs"));
            }
        }
        let member = rotation[at];
        if per_member[member].len() <= desired {
            per_member[member].insert(parts[next]);
            next += 1;
            at += 1;
        } else {
            rotation.remove(at);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    // Cases mirrored from Kafka 4.1's `SimpleAssignorTest`, each named after
    // the test it follows. Kafka's tests give topics random ids and hold each
    // member's subscription in a `LinkedHashSet`, so their expectations never
    // depend on the ids' hashes; members sit in a `HashMap` ("A", "B", "C"
    // hash to 65, 66, 67 and iterate in that order).

    use super::*;
    use crate::groups::assignors::Member;

    fn tp(topic: &str, partition: u32) -> TopicPartition {
        TopicPartition::new(topic, partition)
    }

    fn member(id: &str, topics: &[&str], owned: &[(&str, u32)]) -> Member {
        Member {
            member_id: id.to_string(),
            topics: topics.iter().map(|&topic| TopicName::from(topic)).collect(),
            owned: owned.iter().map(|&(topic, partition)| tp(topic, partition)).collect(),
            ..Member::default()
        }
    }

    fn group(topics: &[(&str, u32)], members: Vec<Member>) -> GroupInput {
        GroupInput {
            topics: topics.iter().map(|&(name, count)| (name.to_string(), count)).collect(),
            members,
            ..GroupInput::default()
        }
    }

    fn expect(pairs: &[(&str, &[(&str, u32)])]) -> Assignment {
        pairs
            .iter()
            .map(|&(id, parts)| {
                let mut list: Vec<TopicPartition> =
                    parts.iter().map(|&(topic, partition)| tp(topic, partition)).collect();
                crate::sorting::sort(&mut list);
                (id.to_string(), list)
            })
            .collect()
    }

    fn assignable(pairs: &[(&str, &[u32])]) -> Assignable {
        pairs
            .iter()
            .map(|&(topic, partitions)| (topic.to_string(), partitions.iter().copied().collect()))
            .collect()
    }

    fn heterogeneous(mut input: GroupInput) -> GroupInput {
        input.options = Some(super::super::ServerOptions {
            map: None,
            subscription_type: Some(SubscriptionType::Heterogeneous),
        });
        input
    }

    const T1: &str = "topic1";
    const T2: &str = "topic2";
    const T3: &str = "topic3";
    const T4: &str = "topic4";

    #[test]
    fn test_assign_with_empty_members() {
        assert_eq!(assign(&group(&[], vec![]), None).unwrap(), Assignment::new());
        assert_eq!(
            assign(&heterogeneous(group(&[], vec![])), None).unwrap(),
            Assignment::new()
        );
    }

    #[test]
    fn test_assign_with_no_subscribed_topic() {
        let input = group(&[(T1, 3)], vec![member("A", &[], &[])]);
        assert_eq!(assign(&input, None).unwrap(), Assignment::new());
    }

    #[test]
    fn test_assign_with_subscribed_to_non_existent_topic() {
        let input = group(&[(T1, 3)], vec![member("A", &[T2], &[])]);
        let error = assign(&input, None).unwrap_err();
        assert!(error.message.contains("doesn't exist in the topic metadata"), "{error}");
    }

    fn two_members_two_topics() -> GroupInput {
        group(
            &[(T1, 3), (T3, 2)],
            vec![member("A", &[T1, T3], &[]), member("B", &[T1, T3], &[])],
        )
    }

    #[test]
    fn test_assign_with_two_members_and_two_topics_homogeneous() {
        // Hashing: A (65 % 5 = 0) -> topic1:0, B (66 % 5 = 1) -> topic1:1; the
        // rest round-robin: topic1:2 A, topic3:0 B, topic3:1 A.
        let expected = expect(&[("A", &[(T1, 0), (T1, 2), (T3, 1)]), ("B", &[(T1, 1), (T3, 0)])]);
        assert_eq!(assign(&two_members_two_topics(), None).unwrap(), expected);
    }

    #[test]
    fn test_assign_with_two_members_and_two_topics_homogeneous_with_allowed_map() {
        let allowed = assignable(&[(T1, &[0, 1, 2]), (T3, &[0, 1])]);
        let expected = expect(&[("A", &[(T1, 0), (T1, 2), (T3, 1)]), ("B", &[(T1, 1), (T3, 0)])]);
        assert_eq!(assign(&two_members_two_topics(), Some(&allowed)).unwrap(), expected);
    }

    #[test]
    fn test_assign_with_two_members_and_two_topics_homogeneous_with_non_assignable_topic() {
        // Only topic1's three partitions: A (65 % 3 = 2) -> 2, B (66 % 3 = 0)
        // -> 0, and 1 round-robin to A.
        let allowed = assignable(&[(T1, &[0, 1, 2])]);
        let expected = expect(&[("A", &[(T1, 1), (T1, 2)]), ("B", &[(T1, 0)])]);
        assert_eq!(assign(&two_members_two_topics(), Some(&allowed)).unwrap(), expected);
    }

    fn three_members_three_topics() -> GroupInput {
        heterogeneous(group(
            &[(T1, 3), (T2, 3), (T3, 2)],
            vec![
                member("A", &[T1, T2], &[]),
                member("B", &[T3], &[]),
                member("C", &[T2, T3], &[]),
            ],
        ))
    }

    #[test]
    fn test_assign_with_three_members_three_topics_heterogeneous() {
        // Hashing: A -> topic2:2, B -> topic3:0, C -> topic2:2; then topic1
        // round-robin over A, topic2:0 and 1 over A and C, topic3:1 over B and C.
        let expected = expect(&[
            ("A", &[(T1, 0), (T1, 1), (T1, 2), (T2, 0), (T2, 2)]),
            ("B", &[(T3, 0), (T3, 1)]),
            ("C", &[(T2, 1), (T2, 2)]),
        ]);
        assert_eq!(assign(&three_members_three_topics(), None).unwrap(), expected);
    }

    #[test]
    fn test_assign_with_three_members_three_topics_heterogeneous_with_allowed_map() {
        let allowed = assignable(&[(T1, &[0, 1, 2]), (T2, &[0, 1, 2]), (T3, &[0, 1])]);
        let expected = expect(&[
            ("A", &[(T1, 0), (T1, 1), (T1, 2), (T2, 0), (T2, 2)]),
            ("B", &[(T3, 0), (T3, 1)]),
            ("C", &[(T2, 1), (T2, 2)]),
        ]);
        assert_eq!(assign(&three_members_three_topics(), Some(&allowed)).unwrap(), expected);
    }

    #[test]
    fn test_assign_with_three_members_three_topics_heterogeneous_with_non_assignable_topic() {
        let allowed = assignable(&[(T1, &[0, 1, 2]), (T2, &[0, 1, 2])]);
        let expected = expect(&[
            ("A", &[(T1, 0), (T1, 1), (T1, 2), (T2, 0), (T2, 2)]),
            ("B", &[]),
            ("C", &[(T2, 1)]),
        ]);
        assert_eq!(assign(&three_members_three_topics(), Some(&allowed)).unwrap(), expected);
    }

    #[test]
    fn test_assign_with_one_member_no_assigned_topic_heterogeneous() {
        let input = heterogeneous(group(
            &[(T1, 3), (T2, 2)],
            vec![member("A", &[T1, T2], &[]), member("B", &[], &[])],
        ));
        let expected = expect(&[("A", &[(T1, 0), (T1, 1), (T1, 2), (T2, 0), (T2, 1)]), ("B", &[])]);
        assert_eq!(assign(&input, None).unwrap(), expected);
    }

    #[test]
    fn test_member_hash_assignment() {
        // memberHashAssignment over three one-partition topics: member1..4 hash
        // to 948881623..948881626 and "AaAaAaAa" to -540425984 (a negative
        // hash: Java's remainder keeps the sign, then `abs`). With five members
        // and three partitions nothing is left to deal, so the hashing is the
        // whole answer.
        let topics = [T1, T2, T3];
        let input = group(
            &[(T1, 1), (T2, 1), (T3, 1)],
            ["member1", "member2", "member3", "member4", "AaAaAaAa"]
                .iter()
                .map(|id| member(id, &topics, &[]))
                .collect(),
        );
        let expected = expect(&[
            ("member3", &[(T1, 0)]),
            ("member1", &[(T2, 0)]),
            ("member4", &[(T2, 0)]),
            ("member2", &[(T3, 0)]),
            ("AaAaAaAa", &[(T3, 0)]),
        ]);
        assert_eq!(assign(&input, None).unwrap(), expected);
    }

    #[test]
    fn test_round_robin_assignment_with_count() {
        // member1 and member2 each hold partition1; partitions 2, 3, 4 are dealt
        // with a desired count of 2: member1 may take one more than that.
        let parts = [(1, 0), (2, 0), (3, 0)];
        let mut per_member = vec![BTreeSet::from([(0, 0)]), BTreeSet::from([(0, 0)])];
        round_robin_with_count(&[0, 1], &parts, &mut per_member, 2).unwrap();
        assert_eq!(per_member[0], BTreeSet::from([(0, 0), (1, 0), (3, 0)]));
        assert_eq!(per_member[1], BTreeSet::from([(0, 0), (2, 0)]));
    }

    #[test]
    fn test_round_robin_assignment_with_count_too_many_partitions() {
        let parts = [(1, 0), (2, 0), (3, 0), (3, 1), (3, 2)];
        let mut per_member = vec![BTreeSet::from([(0, 0)]), BTreeSet::from([(0, 0)])];
        let error = round_robin_with_count(&[0, 1], &parts, &mut per_member, 2).unwrap_err();
        assert_eq!(error.message, "Inconsistent number of member IDs");
    }

    #[test]
    fn test_assign_with_current_assignment_homogeneous() {
        let first = group(
            &[(T1, 3), (T2, 2)],
            vec![member("A", &[T1, T2], &[]), member("B", &[T1, T2], &[])],
        );
        let expected_first = expect(&[("A", &[(T1, 0), (T1, 2), (T2, 1)]), ("B", &[(T1, 1), (T2, 0)])]);
        assert_eq!(assign(&first, None).unwrap(), expected_first);

        // Three members on topic2 and topic3: hashing gives A topic2:0, B
        // topic2:1, C topic3:0; A's and B's current topic2 partitions are the
        // hashed ones, so nothing is kept; topic3:1 and 2 go round-robin.
        let second = group(
            &[(T2, 2), (T3, 3)],
            vec![
                member("A", &[T2, T3], &[(T1, 0), (T1, 2), (T2, 1)]),
                member("B", &[T2, T3], &[(T1, 1), (T2, 0)]),
                member("C", &[T2, T3], &[]),
            ],
        );
        let expected_second = expect(&[
            ("A", &[(T2, 0), (T3, 1)]),
            ("B", &[(T2, 1), (T3, 2)]),
            ("C", &[(T3, 0)]),
        ]);
        assert_eq!(assign(&second, None).unwrap(), expected_second);
    }

    #[test]
    fn test_assign_with_current_assignment_heterogeneous() {
        let second = heterogeneous(group(
            &[(T1, 3), (T2, 3), (T3, 2), (T4, 1)],
            vec![
                member("A", &[T1, T2, T3], &[(T1, 0), (T1, 1), (T1, 2), (T2, 0), (T2, 2)]),
                member("B", &[T3, T4], &[(T3, 0), (T3, 1)]),
            ],
        ));
        // Hashing: A (65 % 8 = 1) -> topic1:1, B (66 % 3 = 0) -> topic3:0; then
        // topic2:1 to A and topic4:0 to B round-robin; the rest kept.
        let expected = expect(&[
            ("A", &[(T1, 0), (T1, 1), (T1, 2), (T2, 0), (T2, 1), (T2, 2)]),
            ("B", &[(T3, 0), (T3, 1), (T4, 0)]),
        ]);
        assert_eq!(assign(&second, None).unwrap(), expected);
    }

    /// Our own, worked by hand from `SimpleAssignor`: the cap on kept
    /// partitions is `ceil(P / M)`, but the round-robin that follows lets a
    /// member take one beyond it and starts at the first member in map order,
    /// so "balance within one" is not guaranteed: here A ends with three and
    /// the newcomer B with one.
    #[test]
    fn a_newcomer_gets_the_partition_it_hashes_to() {
        let topics = [T1];
        let input = group(
            &[(T1, 4)],
            vec![
                member("A", &topics, &[(T1, 0), (T1, 1), (T1, 2), (T1, 3)]),
                member("B", &topics, &[]),
            ],
        );
        // A hashes onto 65 % 4 = 1 and B onto 66 % 4 = 2; A keeps topic1:0 (its
        // second, the desired count); topic1:3 is dealt round-robin from A,
        // which holds 2 <= 2 and so takes it.
        let expected = expect(&[("A", &[(T1, 0), (T1, 1), (T1, 3)]), ("B", &[(T1, 2)])]);
        assert_eq!(assign(&input, None).unwrap(), expected);
    }

    /// Our own: more members than partitions all get work, several on one
    /// partition, and every partition has someone.
    #[test]
    fn more_members_than_partitions_share_them() {
        let topics = [T1];
        let ids: Vec<String> = (0..7).map(|n| format!("member-{n}")).collect();
        let input = group(&[(T1, 3)], ids.iter().map(|id| member(id, &topics, &[])).collect());
        let assignment = assign(&input, None).unwrap();
        assert!(assignment.values().all(|parts| parts.len() == 1), "{assignment:?}");
        let covered: BTreeSet<u32> = assignment.values().flatten().map(|part| part.partition).collect();
        assert_eq!(covered, BTreeSet::from([0, 1, 2]), "{assignment:?}");
    }

    #[test]
    fn production_walks_topics_in_hash_set_order() {
        // "topic1".."topic3" hash to consecutive values; `new HashSet<>(list)`
        // yields them by bucket whatever order they were listed in.
        let listed: Vec<TopicName> = [T3, T1, T2, T1].iter().map(|&name| TopicName::from(name)).collect();
        let order: Vec<String> = subscription_order(&listed)
            .iter()
            .map(|name| name.to_string())
            .collect();
        let mut hashes: Vec<(usize, &str)> = [T1, T2, T3]
            .iter()
            .map(|&name| (crate::java::hash_map_bucket(string_hash_code(name), 16), name))
            .collect();
        crate::sorting::sort(&mut hashes);
        let expected: Vec<String> = hashes.iter().map(|(_, name)| name.to_string()).collect();
        assert_eq!(order, expected);
        assert_eq!(order.len(), 3);
    }
}
