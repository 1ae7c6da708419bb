//! Kafka's own scale case for the sticky assignors
//! (`AbstractStickyAssignorTest#testLargeAssignmentAndGroupWithUniformSubscription`):
//! 500 topics of 2,000 partitions (a million partitions) and 2,000 consumers
//! that all subscribe to every topic. The benchmarks, the CLI checks and the
//! sandbox's scale example all build the group here, so they measure the
//! same thing.

use crate::sorting::Gather;
use super::{Assignment, GroupInput, Member, TopicName};

/// Topics in Kafka's scale case.
pub const SCALE_TOPIC_COUNT: usize = 500;
/// Partitions per topic in Kafka's scale case.
pub const SCALE_PARTITIONS_PER_TOPIC: u32 = 2_000;
/// Consumers in Kafka's scale case.
pub const SCALE_CONSUMER_COUNT: usize = 2_000;

/// Kafka's test names: a prefix and the index zero-padded to the width of
/// the count (`getCanonicalName`), so `t000`..`t499` and `c0000`..`c1999`.
fn canonical_name(prefix: &str, index: usize, count: usize) -> String {
    let width = count.to_string().len();
    format!("{prefix}{index:0width$}")
}

/// The first step: `consumer_count` fresh members subscribed to
/// `topic_count` topics of `partitions_per_topic` partitions each.
pub fn uniform_group(topic_count: usize, partitions_per_topic: u32, consumer_count: usize) -> GroupInput {
    // Every member's list holds the same name allocations, as Kafka's test
    // hands every consumer the same list of `String`s.
    let topics: Vec<TopicName> = (0..topic_count)
        .map(|index| canonical_name("t", index, topic_count).into())
        .collect();
    GroupInput {
        topics: topics
            .iter()
            .map(|topic| (topic.to_string(), partitions_per_topic))
            .gather(),
        members: (0..consumer_count)
            .map(|index| Member {
                member_id: canonical_name("c", index, consumer_count),
                topics: topics.clone(),
                ..Member::default()
            })
            .collect(),
        ..GroupInput::default()
    }
}

/// The second step, as Kafka's test builds it: every member except the
/// first now owns what `assignment` gave it (generation `generation`); the
/// first rejoins owning nothing.
pub fn rejoin_with_ownership(first_step: &GroupInput, assignment: &Assignment, generation: i32) -> GroupInput {
    let mut next = first_step.clone();
    for member in next.members.iter_mut().skip(1) {
        member.owned = assignment.get(&member.member_id).cloned().unwrap_or_default();
        member.generation = Some(generation);
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_zero_padded_like_kafkas() {
        assert_eq!(canonical_name("t", 7, 500), "t007");
        assert_eq!(canonical_name("c", 1999, 2000), "c1999");
    }
}
