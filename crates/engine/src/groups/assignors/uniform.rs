//! Kafka's server-side `UniformAssignor` (KIP-848, `uniform`), the default of
//! `group.consumer.assignors` (`group-coordinator/.../assignor/`).
//!
//! The group coordinator computes a *target* assignment from the members'
//! subscriptions and their current assignment:
//!
//! * homogeneous group (every member subscribes to the same topics):
//!   `UniformHomogeneousAssignmentBuilder` gives each member a quota
//!   (`P / M`, and one more for the first `P % M` members it visits), keeps
//!   owned partitions up to the quota, and deals out the rest in order;
//! * heterogeneous group: `UniformHeterogeneousAssignmentBuilder` keeps owned
//!   partitions of still-subscribed topics, hands the rest out topic by topic
//!   to the least-loaded subscribers, then rebalances topic by topic (at most
//!   16 rounds).
//!
//! Kafka identifies topics by `Uuid`; the homogeneous builder walks topics in
//! `HashSet<Uuid>` order and the heterogeneous one breaks ties by topic id, so
//! the ids change the answer. Members are visited in the order of the map
//! that holds them (`TreeMap` in Kafka's tests, `HashMap` in production).

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};

use super::{AssignError, Assignment, GroupInput, MemberMap, SubscriptionType, TopicPartition};
use crate::java::{
    compare_strings, hash_map_capacity, hash_map_iteration_order, hash_set_copy_capacity, string_hash_code, uuid_bits,
    uuid_bits_hash_code,
};
use crate::partitioning::murmur2;

/// Kafka's tie-break in the heterogeneous builder: at most this many passes
/// over the topics when rebalancing (`MAX_ITERATION_COUNT`).
const MAX_BALANCE_ROUNDS: usize = 16;
/// Marks an unowned partition.
const UNOWNED: usize = usize::MAX;

/// A topic as the server-side assignor sees it.
struct Topic {
    name: String,
    partitions: usize,
    /// `Uuid` halves (most, least significant).
    id: (i64, i64),
}

pub(super) fn assign(input: &GroupInput) -> Result<Assignment, AssignError> {
    let options = input.options.clone().unwrap_or_default();
    let member_order = member_order(input, options.map.unwrap_or(MemberMap::Hashmap));

    // Topics by name, with their ids.
    let mut topics: Vec<Topic> = Vec::new();
    let mut topic_index: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, &count) in &input.topics {
        let id = topic_id(input, name)?;
        topic_index.insert(name.as_str(), topics.len());
        topics.push(Topic {
            name: name.clone(),
            partitions: count as usize,
            id,
        });
    }

    // Subscriptions as topic indices; a missing topic is an error on the server.
    let mut subscriptions: Vec<Vec<usize>> = Vec::with_capacity(input.members.len());
    for member in &input.members {
        let mut subscribed = Vec::new();
        for name in &member.topics {
            let topic = *topic_index.get(&**name).ok_or_else(|| {
                AssignError::new(format!(
                    "member {} is subscribed to topic {name} which doesn't exist in the topic metadata",
                    member.member_id
                ))
            })?;
            if !subscribed.contains(&topic) {
                subscribed.push(topic);
            }
        }
        subscriptions.push(subscribed);
    }

    // Current assignments: topic to partitions, topics in first-seen order
    // (Kafka's tests hand over an insertion-ordered map).
    let current: Vec<Vec<(usize, Vec<usize>)>> = input
        .members
        .iter()
        .map(|member| {
            let mut by_topic: Vec<(usize, Vec<usize>)> = Vec::new();
            for owned in &member.owned {
                let Some(&topic) = topic_index.get(&*owned.topic) else {
                    continue;
                };
                if owned.partition as usize >= topics[topic].partitions {
                    continue;
                }
                match by_topic.iter_mut().find(|(existing, _)| *existing == topic) {
                    Some((_, partitions)) => {
                        if !partitions.contains(&(owned.partition as usize)) {
                            partitions.push(owned.partition as usize);
                        }
                    }
                    None => by_topic.push((topic, vec![owned.partition as usize])),
                }
            }
            by_topic
        })
        .collect();

    let homogeneous = match options.subscription_type {
        Some(SubscriptionType::Homogeneous) => true,
        Some(SubscriptionType::Heterogeneous) => false,
        None => {
            let first: Option<BTreeSet<usize>> = subscriptions.first().map(|s| s.iter().copied().gather());
            subscriptions
                .iter()
                .all(|s| Some(s.iter().copied().gather::<BTreeSet<usize>>()) == first)
        }
    };
    let model = Model {
        topics: &topics,
        subscriptions: &subscriptions,
        current: &current,
        member_order: &member_order,
    };
    let owners = if homogeneous {
        model.homogeneous()?
    } else {
        model.heterogeneous()
    };
    let Some(owners) = owners else {
        // Nobody subscribes to anything: Kafka returns an empty assignment.
        return Ok(Assignment::new());
    };

    let mut assignment: Assignment = input
        .members
        .iter()
        .map(|member| (member.member_id.clone(), Vec::new()))
        .gather();
    for (topic, partition_owners) in owners.iter().enumerate() {
        for (partition, &owner) in partition_owners.iter().enumerate() {
            if owner != UNOWNED {
                let list = assignment
                    .get_mut(&input.members[owner].member_id)
                    .expect("every member is listed");
                list.push(TopicPartition::new(topics[topic].name.clone(), partition as u32));
            }
        }
    }
    for list in assignment.values_mut() {
        crate::sorting::sort(list);
    }
    Ok(assignment)
}

/// The id of topic `name`: the one `input` gives, or a stand-in derived
/// from the name.
pub(super) fn topic_id(input: &GroupInput, name: &str) -> Result<(i64, i64), AssignError> {
    match input.topic_ids.get(name) {
        Some(text) => uuid_bits(text).ok_or_else(|| {
            AssignError::new(format!(
                "topicIds.{name}: {text:?} is not a Kafka topic id (22 characters of base64url)"
            ))
        }),
        None => Ok(derived_topic_id(name)),
    }
}

/// A stable stand-in topic id for a topic given without one: Kafka assigns
/// random ids, so any fixed choice is as faithful as another; this one is
/// derived from the name so a run is reproducible.
fn derived_topic_id(name: &str) -> (i64, i64) {
    let high = murmur2(name.as_bytes()) as u32 as i64;
    let low = murmur2(format!("{name}\u{0}id").as_bytes()) as u32 as i64;
    ((high << 32) | low, (low << 32) | high)
}

/// The order in which the coordinator's member map is iterated.
pub(super) fn member_order(input: &GroupInput, map: MemberMap) -> Vec<usize> {
    match map {
        MemberMap::Treemap => {
            let mut order: Vec<usize> = (0..input.members.len()).collect();
            crate::sorting::sort_by(&mut order, |&left, &right| {
                compare_strings(&input.members[left].member_id, &input.members[right].member_id)
            });
            order
        }
        MemberMap::Hashmap => {
            let hashes: Vec<i32> = input
                .members
                .iter()
                .map(|member| string_hash_code(&member.member_id))
                .collect();
            hash_map_iteration_order(&hashes, hash_map_capacity(16, hashes.len()))
        }
    }
}

struct Model<'a> {
    topics: &'a [Topic],
    /// Per member (input index), subscribed topic indices.
    subscriptions: &'a [Vec<usize>],
    /// Per member, current partitions grouped by topic.
    current: &'a [Vec<(usize, Vec<usize>)>],
    /// Members in the coordinator's map order.
    member_order: &'a [usize],
}

impl Model<'_> {
    fn empty_owners(&self) -> Vec<Vec<usize>> {
        self.topics
            .iter()
            .map(|topic| vec![UNOWNED; topic.partitions])
            .collect()
    }

    fn topic_hash(&self, topic: usize) -> i32 {
        let (most, least) = self.topics[topic].id;
        uuid_bits_hash_code(most, least)
    }

    /// `UniformHomogeneousAssignmentBuilder#build`. Returns the owner of every
    /// partition, or `None` when nobody subscribes to anything.
    fn homogeneous(&self) -> Result<Option<Vec<Vec<usize>>>, AssignError> {
        let Some(&first_member) = self.member_order.first() else {
            return Ok(None);
        };
        // `new HashSet<>(first member's subscription)`: Uuid hash order.
        let first_subscription = &self.subscriptions[first_member];
        if first_subscription.is_empty() {
            return Ok(None);
        }
        let hashes: Vec<i32> = first_subscription.iter().map(|&topic| self.topic_hash(topic)).collect();
        let topic_order: Vec<usize> = hash_map_iteration_order(&hashes, hash_set_copy_capacity(hashes.len()))
            .into_iter()
            .map(|index| first_subscription[index])
            .collect();
        let subscribed: BTreeSet<usize> = first_subscription.iter().copied().gather();

        let mut owners = self.empty_owners();
        let mut currently_owned = self.empty_owners();
        for &member in self.member_order {
            for (topic, partitions) in &self.current[member] {
                for &partition in partitions {
                    currently_owned[*topic][partition] = member;
                }
            }
        }
        let mut unassigned: Vec<(usize, usize)> = Vec::new();
        let mut total = 0;
        for &topic in &topic_order {
            for (partition, &owner) in currently_owned[topic].iter().enumerate() {
                if owner == UNOWNED {
                    unassigned.push((topic, partition));
                }
            }
            total += self.topics[topic].partitions;
        }

        let member_count = self.member_order.len();
        let minimum_quota = total / member_count;
        let mut extra = total % member_count;
        let mut unfilled: Vec<(usize, usize)> = Vec::new();
        for &member in self.member_order {
            let mut quota = minimum_quota;
            if extra > 0 {
                quota += 1;
                extra -= 1;
            }
            for (topic, partitions) in &self.current[member] {
                if !subscribed.contains(topic) {
                    continue;
                }
                if partitions.len() <= quota {
                    quota -= partitions.len();
                    for &partition in partitions {
                        owners[*topic][partition] = member;
                    }
                } else {
                    for &partition in partitions {
                        if quota > 0 {
                            quota -= 1;
                            owners[*topic][partition] = member;
                        } else {
                            unassigned.push((*topic, partition));
                        }
                    }
                }
            }
            if quota > 0 {
                unfilled.push((member, quota));
            }
        }

        let mut next = 0;
        for (member, quota) in unfilled {
            for _ in 0..quota {
                let Some(&(topic, partition)) = unassigned.get(next) else {
                    break;
                };
                next += 1;
                owners[topic][partition] = member;
            }
        }
        if next < unassigned.len() {
            return Err(AssignError::new(
                "partitions were left unassigned (Kafka's PartitionAssignorException)",
            ));
        }
        Ok(Some(owners))
    }

    /// `UniformHeterogeneousAssignmentBuilder#build`.
    fn heterogeneous(&self) -> Option<Vec<Vec<usize>>> {
        // Members are numbered in map order; `index_of` maps back.
        let members: &[usize] = self.member_order;
        let member_count = members.len();
        let mut subscribers: Vec<Vec<usize>> = vec![Vec::new(); self.topics.len()];
        for (index, &member) in members.iter().enumerate() {
            for &topic in &self.subscriptions[member] {
                subscribers[topic].push(index);
            }
        }
        let subscribed: Vec<usize> = (0..self.topics.len())
            .filter(|&topic| !subscribers[topic].is_empty())
            .collect();
        if subscribed.is_empty() {
            return None;
        }

        // Keep owned partitions of topics the member still subscribes to.
        let mut owners = self.empty_owners();
        let mut sizes = vec![0usize; member_count];
        for (index, &member) in members.iter().enumerate() {
            for (topic, partitions) in &self.current[member] {
                if self.subscriptions[member].contains(topic) {
                    sizes[index] += partitions.len();
                    for &partition in partitions {
                        owners[*topic][partition] = index;
                    }
                }
            }
        }

        let mut state = Heterogeneous {
            model: self,
            subscribers,
            owners,
            sizes,
        };
        // Hand out what nobody owns, topic by topic.
        let with_unassigned: Vec<usize> = subscribed
            .iter()
            .copied()
            .filter(|&topic| state.owners[topic].contains(&UNOWNED))
            .collect();
        for topic in state.sort_topics(with_unassigned) {
            let mut balancer = Balancer::new(&state.subscribers[topic], &state.sizes);
            for partition in 0..self.topics[topic].partitions {
                if state.owners[topic][partition] == UNOWNED {
                    let member = balancer.next_least_loaded(&state.sizes);
                    state.assign(topic, partition, member);
                }
            }
        }
        let movable: Vec<usize> = subscribed
            .into_iter()
            .filter(|&topic| state.subscribers[topic].len() >= 2)
            .collect();
        if !movable.is_empty() {
            state.balance_topics(movable);
        }

        // Back from map-order numbers to input members.
        let owners = state
            .owners
            .into_iter()
            .map(|partition_owners| {
                partition_owners
                    .into_iter()
                    .map(|index| if index == UNOWNED { UNOWNED } else { members[index] })
                    .collect()
            })
            .collect();
        Some(owners)
    }
}

/// The heterogeneous builder's working state; members are numbered in the
/// coordinator's map order.
struct Heterogeneous<'a, 'b> {
    model: &'a Model<'b>,
    /// Per topic, subscriber numbers ascending.
    subscribers: Vec<Vec<usize>>,
    owners: Vec<Vec<usize>>,
    sizes: Vec<usize>,
}

impl Heterogeneous<'_, '_> {
    /// Partitions per subscriber descending, then subscriber count
    /// ascending, then topic id ascending (`Uuid#compareTo`).
    fn sort_topics(&self, mut topics: Vec<usize>) -> Vec<usize> {
        crate::sorting::sort_by(&mut topics, |&left, &right| {
            let per_subscriber =
                |topic: usize| self.model.topics[topic].partitions as f64 / self.subscribers[topic].len() as f64;
            per_subscriber(right)
                .total_cmp(&per_subscriber(left))
                .then(self.subscribers[left].len().cmp(&self.subscribers[right].len()))
                .then(self.model.topics[left].id.cmp(&self.model.topics[right].id))
        });
        topics
    }

    fn assign(&mut self, topic: usize, partition: usize, member: usize) {
        let old = self.owners[topic][partition];
        if old != UNOWNED {
            self.sizes[old] -= 1;
        }
        self.owners[topic][partition] = member;
        self.sizes[member] += 1;
    }

    /// `balanceTopics`: passes over the topics until a whole pass moves
    /// nothing, at most 16 times.
    fn balance_topics(&mut self, topics: Vec<usize>) {
        let sorted = self.sort_topics(topics);
        let mut last_rebalanced: Option<usize> = None;
        for _ in 0..MAX_BALANCE_ROUNDS {
            for (position, &topic) in sorted.iter().enumerate() {
                if last_rebalanced == Some(position) {
                    return;
                }
                let moved = self.balance_topic(topic);
                if moved > 0 || last_rebalanced.is_none() {
                    last_rebalanced = Some(position);
                }
            }
        }
    }

    /// `balanceTopic`: moves the topic's partitions from its most loaded
    /// subscribers (their highest-numbered partition first) to its least
    /// loaded ones until their totals differ by at most one.
    fn balance_topic(&mut self, topic: usize) -> usize {
        let subscribers = self.subscribers[topic].clone();
        let mut balancer = Balancer::new(&subscribers, &self.sizes);
        if balancer.imbalance(&self.sizes) <= 1 {
            return 0;
        }
        let owners = &self.owners[topic];
        let mut partitions: Vec<usize> = (0..owners.len()).collect();
        crate::sorting::sort_by_key(&mut partitions, |&partition| (owners[partition], partition));
        let mut start: BTreeMap<usize, usize> = BTreeMap::new();
        let mut end: BTreeMap<usize, usize> = BTreeMap::new();
        for (index, &partition) in partitions.iter().enumerate() {
            start.entry(owners[partition]).or_insert(index);
            end.insert(owners[partition], index + 1);
        }

        let mut moved = 0;
        while !balancer.is_balanced() {
            let mut most_loaded = None;
            while let Some(member) = balancer.next_most_loaded(&self.sizes) {
                let has_some = match (start.get(&member), end.get(&member)) {
                    (Some(&first), Some(&last)) => last > first,
                    _ => false,
                };
                if has_some {
                    most_loaded = Some(member);
                    break;
                }
                balancer.exclude_most_loaded();
            }
            let Some(most_loaded) = most_loaded else { break };
            let last = end[&most_loaded] - 1;
            let partition = partitions[last];
            end.insert(most_loaded, last);
            let least_loaded = balancer.next_least_loaded(&self.sizes);
            if balancer.is_balanced() {
                break;
            }
            self.assign(topic, partition, least_loaded);
            moved += 1;
        }
        moved
    }
}

/// `MemberAssignmentBalancer`: over a topic's subscribers sorted by load,
/// a growing range of least loaded members to give partitions to and a
/// growing range of most loaded members to take them from.
struct Balancer {
    sorted: Vec<usize>,
    least_end: usize,
    least_count: isize,
    next_least: usize,
    most_start: usize,
    most_end: usize,
    most_count: isize,
    next_most: isize,
}

impl Balancer {
    fn new(members: &[usize], sizes: &[usize]) -> Balancer {
        let mut sorted = members.to_vec();
        crate::sorting::sort_by_key(&mut sorted, |&member| (sizes[member], member));
        let first = sizes[sorted[0]] as isize;
        let last = sizes[sorted[sorted.len() - 1]] as isize;
        Balancer {
            least_end: 0,
            least_count: first - 1,
            next_least: 0,
            most_start: sorted.len(),
            most_end: sorted.len(),
            most_count: last + 1,
            next_most: sorted.len() as isize - 1,
            sorted,
        }
    }

    fn imbalance(&self, sizes: &[usize]) -> usize {
        sizes[self.sorted[self.sorted.len() - 1]] - sizes[self.sorted[0]]
    }

    fn next_least_loaded(&mut self, sizes: &[usize]) -> usize {
        if self.next_least >= self.least_end {
            self.least_count += 1;
            while self.least_end < self.sorted.len() && sizes[self.sorted[self.least_end]] as isize == self.least_count
            {
                self.least_end += 1;
            }
            self.next_least = 0;
        }
        let member = self.sorted[self.next_least];
        self.next_least += 1;
        member
    }

    fn next_most_loaded(&mut self, sizes: &[usize]) -> Option<usize> {
        if self.next_most < self.most_start as isize {
            if self.most_end <= self.most_start && self.most_start > 0 {
                self.most_count = sizes[self.sorted[self.most_start - 1]] as isize;
            } else {
                self.most_count -= 1;
            }
            while self.most_start > 0 && sizes[self.sorted[self.most_start - 1]] as isize == self.most_count {
                self.most_start -= 1;
            }
            self.next_most = self.most_end as isize - 1;
        }
        if self.next_most < 0 {
            return None;
        }
        let member = self.sorted[self.next_most as usize];
        self.next_most -= 1;
        Some(member)
    }

    /// Drops the member `next_most_loaded` just returned from the range.
    fn exclude_most_loaded(&mut self) {
        let position = (self.next_most + 1) as usize;
        self.sorted.swap(position, self.most_end - 1);
        self.most_end -= 1;
    }

    fn is_balanced(&self) -> bool {
        self.most_count - self.least_count <= 1
    }
}
