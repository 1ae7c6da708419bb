//! Plain data the page shows, derived from engine answers.
//!
//! Nothing here knows about Yew or the DOM; it is the boundary the native
//! tests check. Every user-typed value is parsed here and turned into either
//! a view or a message, never a panic.

use kafkascope_engine::java::to_positive;
use kafkascope_engine::partitioning::{murmur2, partition_for_key};

/// The largest partition count the key explorer draws as boxes. Kafka allows
/// far more; a page of boxes does not.
pub const PARTITION_COUNT_MAX: u32 = 64;

/// What the "which partition?" card shows for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPlacement {
    /// The key as typed; it is hashed as UTF-8, like Kafka's StringSerializer.
    pub key: String,
    /// murmur2 of the key's bytes as Kafka computes it (a signed Java int).
    pub murmur2: i32,
    /// `murmur2 & 0x7fffffff`, the non-negative value the modulo uses.
    pub positive_hash: i32,
    /// How many partitions the topic has.
    pub partition_count: u32,
    /// The partition the record goes to.
    pub partition: u32,
}

/// Computes the placement of `key`, or explains why the partition count the
/// user typed cannot be used.
pub fn key_placement(key: &str, partition_count_text: &str) -> Result<KeyPlacement, String> {
    let partition_count = parse_partition_count(partition_count_text)?;
    let hash = murmur2(key.as_bytes());
    let partition = partition_for_key(key.as_bytes(), partition_count)
        .ok_or_else(|| "A topic needs at least one partition.".to_string())?;
    Ok(KeyPlacement {
        key: key.to_string(),
        murmur2: hash,
        positive_hash: to_positive(hash),
        partition_count,
        partition,
    })
}

fn parse_partition_count(text: &str) -> Result<u32, String> {
    match text.trim().parse::<u32>() {
        Ok(count) if (1..=PARTITION_COUNT_MAX).contains(&count) => Ok(count),
        _ => Err(format!(
            "Partitions must be a whole number from 1 to {PARTITION_COUNT_MAX}."
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_uses_kafkas_partitioner() {
        // The empty key: murmur2 275646681, partition 9 of 12 (Kafka's vectors).
        let placement = key_placement("", "12").expect("valid");
        assert_eq!(placement.murmur2, 275646681);
        assert_eq!(placement.partition, 9);
    }

    #[test]
    fn bad_counts_get_a_message() {
        for text in ["0", "-1", "abc", "", "65", "2.5"] {
            let message = key_placement("k", text).expect_err(text);
            assert!(message.contains("1 to 64"), "{text}: {message}");
        }
    }
}
