//! Kafka's client-side `RangeAssignor` (rack-unaware path).
//!
//! Per topic, independently: the topic's subscribers in member order
//! (static members first); with `P` partitions and `C` subscribers each gets
//! `P / C` consecutive partitions, and the first `P % C` get one more. With
//! several topics the same members get the extra partitions every time,
//! which is why range can be unbalanced across topics.

use super::{empty_assignment, member_order, Assignment, GroupInput, Member, TopicPartition};

pub(super) fn assign(input: &GroupInput) -> Assignment {
    let mut assignment = empty_assignment(input);
    for (topic, &partition_count) in &input.topics {
        let mut subscribers: Vec<&Member> = input
            .members
            .iter()
            .filter(|member| member.topics.iter().any(|subscribed| **subscribed == **topic))
            .collect();
        if subscribers.is_empty() {
            continue;
        }
        crate::sorting::sort_by(&mut subscribers, |left, right| member_order(left, right));
        let subscriber_count = subscribers.len() as u32;
        let per_member = partition_count / subscriber_count;
        let with_extra = partition_count % subscriber_count;
        for (index, member) in subscribers.into_iter().enumerate() {
            let index = index as u32;
            let start = per_member * index + index.min(with_extra);
            let length = per_member + u32::from(index < with_extra);
            let owned = assignment.get_mut(&member.member_id).expect("every member is listed");
            owned.extend((start..start + length).map(|partition| TopicPartition::new(topic.clone(), partition)));
        }
    }
    assignment
}
