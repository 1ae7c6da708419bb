//! Consumer groups: where a group's coordinator lives and, as they land,
//! how its members share partitions; and share groups' record-by-record
//! delivery on a partition's leader (`share_partition`, KIP-932).

pub mod assignors;
pub mod classic;
pub mod consumer;
pub mod share_coordinator;
pub mod share_partition;
pub mod timer;

use crate::java::{kafka_abs, string_hash_code};

/// Kafka's default number of `__consumer_offsets` partitions
/// (`offsets.topic.num.partitions`).
pub const OFFSETS_TOPIC_PARTITIONS_DEFAULT: u32 = 50;

/// The `__consumer_offsets` partition that stores a group's offsets; the
/// leader of that partition is the group's coordinator.
///
/// Kafka: `Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`
/// (`GroupCoordinatorService#partitionFor`). `hashCode` is Java's, over
/// UTF-16 code units, and `Utils.abs(i32::MIN)` is 0. Returns `None` for a
/// partition count of zero.
pub fn coordinator_partition(group_id: &str, offsets_partition_count: u32) -> Option<u32> {
    if offsets_partition_count == 0 {
        return None;
    }
    // kafka_abs never returns a negative value, so the cast is lossless.
    let hash = kafka_abs(string_hash_code(group_id)) as u32;
    Some(hash % offsets_partition_count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_code_min_value_maps_to_partition_zero() {
        // "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(string_hash_code("polygenelubricants"), i32::MIN);
        assert_eq!(coordinator_partition("polygenelubricants", 50), Some(0));
    }

    #[test]
    fn zero_partitions_has_no_coordinator() {
        assert_eq!(coordinator_partition("g", 0), None);
    }
}
