//! What an assignment changed, and why each partition went where it did.
//!
//! A learner comparing assignors wants more than the final map: which
//! partitions moved away from their previous owner, what each member has to
//! give up, how many partitions each member ends with, and a sentence per
//! partition explaining the assignor's rule as it applied here.

use crate::sorting::Gather;
use std::collections::BTreeMap;

use serde::Serialize;

use super::{member_order, Assignment, GroupInput, Member, Strategy, TopicPartition};

/// One partition changing owner against the previous generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionMove {
    /// The partition that moves.
    pub partition: TopicPartition,
    /// The member that owned it before.
    pub from: String,
    /// The member it is assigned to now.
    pub to: String,
}

/// An assignment together with its consequences and reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssignmentReport {
    /// Member id to its partitions, as the assignor returned them.
    pub assignment: Assignment,
    /// Partitions whose previous owner differs from the new one.
    pub moves: Vec<PartitionMove>,
    /// For each member, the partitions it owned and no longer gets.
    pub revoked: BTreeMap<String, Vec<TopicPartition>>,
    /// Partitions held back from their new owner this round until the old
    /// owner has revoked them (the cooperative protocol); empty for eager
    /// assignors.
    pub withheld: Vec<TopicPartition>,
    /// How many partitions each member ends with.
    pub counts: BTreeMap<String, usize>,
    /// One sentence per assigned partition: why it went to its owner.
    pub reasons: BTreeMap<TopicPartition, String>,
}

/// Builds the report for `assignment`, which `strategy` computed from
/// `input`, withholding `withheld` this round.
pub(super) fn report(
    strategy: Strategy,
    input: &GroupInput,
    assignment: Assignment,
    withheld: Vec<TopicPartition>,
) -> AssignmentReport {
    let mut new_owner: BTreeMap<&TopicPartition, &str> = BTreeMap::new();
    for (member, partitions) in &assignment {
        for partition in partitions {
            new_owner.insert(partition, member);
        }
    }
    let mut moves = Vec::new();
    let mut revoked = BTreeMap::new();
    for member in &input.members {
        let mut lost = Vec::new();
        for partition in &member.owned {
            match new_owner.get(partition) {
                Some(owner) if *owner == member.member_id => {}
                Some(owner) => {
                    moves.push(PartitionMove {
                        partition: partition.clone(),
                        from: member.member_id.clone(),
                        to: owner.to_string(),
                    });
                    lost.push(partition.clone());
                }
                None => lost.push(partition.clone()),
            }
        }
        if !lost.is_empty() {
            revoked.insert(member.member_id.clone(), lost);
        }
    }
    crate::sorting::sort_by(&mut moves, |left, right| left.partition.cmp(&right.partition));
    let counts = assignment
        .iter()
        .map(|(member, partitions)| (member.clone(), partitions.len()))
        .gather();
    let reasons = reasons(strategy, input, &assignment);
    AssignmentReport {
        assignment,
        moves,
        revoked,
        withheld,
        counts,
        reasons,
    }
}

fn reasons(strategy: Strategy, input: &GroupInput, assignment: &Assignment) -> BTreeMap<TopicPartition, String> {
    let mut sorted: Vec<&Member> = input.members.iter().collect();
    crate::sorting::sort_by(&mut sorted, |left, right| member_order(left, right));
    let order_text: Vec<&str> = sorted.iter().map(|member| member.member_id.as_str()).collect();
    let mut reasons = BTreeMap::new();
    for (member_id, partitions) in assignment {
        for partition in partitions {
            let reason = match strategy {
                Strategy::Range | Strategy::ServerRange => {
                    let subscribers: Vec<&str> = sorted
                        .iter()
                        .filter(|member| member.topics.iter().any(|topic| **topic == *partition.topic))
                        .map(|member| member.member_id.as_str())
                        .collect();
                    let count = input.topics.get(&*partition.topic).copied().unwrap_or(0) as usize;
                    let position = subscribers.iter().position(|id| id == member_id).unwrap_or(0);
                    let each = count / subscribers.len().max(1);
                    let extra = count % subscribers.len().max(1);
                    format!(
                        "range splits {}'s {count} partitions into consecutive blocks over its {} subscribers \
                         in member order ({}): {each} each, and one more for the first {extra}; \
                         {member_id} is number {} in that order",
                        partition.topic,
                        subscribers.len(),
                        subscribers.join(", "),
                        position + 1
                    )
                }
                Strategy::Sticky | Strategy::CooperativeSticky | Strategy::Uniform => {
                    let owned_before = input
                        .members
                        .iter()
                        .any(|member| &member.member_id == member_id && member.owned.contains(partition));
                    if owned_before {
                        format!(
                            "{member_id} owned {partition} before and keeping it stays within its fair share, \
                             so the {} assignor leaves it where it is", strategy.name()
                        )
                    } else {
                        format!(
                            "nobody could keep {partition}, so the {} assignor gave it to {member_id}, \
                             a member still below its fair share, to keep every member within one partition of the others",
                            strategy.name()
                        )
                    }
                }
                Strategy::RoundRobin => format!(
                    "roundrobin deals every subscribed partition, topic by topic in name order, to members in \
                     turn ({}), skipping members not subscribed to the topic; {member_id}'s turn came up for {partition}",
                    order_text.join(", ")
                ),
            };
            reasons.insert(partition.clone(), reason);
        }
    }
    reasons
}
