//! Kafka's client-side `RoundRobinAssignor`.
//!
//! All subscribed topics sorted by name, each topic's partitions in order,
//! dealt to members in member order like cards; a member not subscribed to a
//! partition's topic is skipped (`CircularIterator` advances past it). With
//! unequal subscriptions this can be very unbalanced.

use crate::sorting::Gather;
use std::collections::BTreeSet;

use super::{empty_assignment, member_order, Assignment, GroupInput, Member, TopicPartition};

pub(super) fn assign(input: &GroupInput) -> Assignment {
    let mut assignment = empty_assignment(input);
    let mut members: Vec<&Member> = input.members.iter().collect();
    crate::sorting::sort_by(&mut members, |left, right| member_order(left, right));
    if members.is_empty() {
        return assignment;
    }
    // Topics known to the metadata that at least one member subscribes to,
    // sorted by name (a BTreeSet of names).
    let subscribed: BTreeSet<&str> = members
        .iter()
        .flat_map(|member| member.topics.iter().map(|topic| &**topic))
        .filter(|topic| input.topics.contains_key(*topic))
        .gather();

    let mut next = 0usize;
    for topic in subscribed {
        for partition in 0..input.topics[topic] {
            // Some member subscribes to this topic, so this loop ends.
            while !members[next % members.len()]
                .topics
                .iter()
                .any(|subscribed| &**subscribed == topic)
            {
                next += 1;
            }
            let member = members[next % members.len()];
            next += 1;
            let owned = assignment.get_mut(&member.member_id).expect("every member is listed");
            owned.push(TopicPartition::new(topic, partition));
        }
    }
    assignment
}
