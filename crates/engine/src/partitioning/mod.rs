//! Which partition a record goes to.
//!
//! Kafka's producer decides a record's partition on the client side
//! (`KafkaProducer#partition`): an explicit partition wins; otherwise a keyed
//! record is hashed with murmur2 over its *serialized* key bytes.

mod murmur2;
pub mod null_key;

pub use murmur2::murmur2;

use crate::java::to_positive;

/// The partition Kafka's built-in partitioner picks for a keyed record:
/// `toPositive(murmur2(key_bytes)) % partition_count`
/// (`BuiltInPartitioner#partitionForKey`).
///
/// `partition_count` is the number of *all* partitions of the topic, including
/// partitions that currently have no leader: a keyed record may target an
/// unavailable partition, exactly as in Kafka. Returns `None` when
/// `partition_count` is zero, since there is no partition to choose.
pub fn partition_for_key(key_bytes: &[u8], partition_count: u32) -> Option<u32> {
    if partition_count == 0 {
        return None;
    }
    // to_positive leaves a value in 0..=i32::MAX, so the cast is lossless.
    let positive_hash = to_positive(murmur2(key_bytes)) as u32;
    Some(positive_hash % partition_count)
}

/// A record key as the producer's serializers turn it into bytes.
///
/// Kafka hashes serialized bytes, so the key `42` as a string and the key
/// `42` as an integer land on different partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKey {
    /// `StringSerializer`: the UTF-8 bytes of the text.
    Text(String),
    /// `IntegerSerializer`: 4 bytes, big-endian.
    Int(i32),
    /// `LongSerializer`: 8 bytes, big-endian.
    Long(i64),
    /// `ByteArraySerializer`: the bytes as given.
    Bytes(Vec<u8>),
}

impl RecordKey {
    /// The bytes Kafka's matching serializer would produce.
    pub fn serialize(&self) -> Vec<u8> {
        match self {
            RecordKey::Text(text) => text.as_bytes().to_vec(),
            RecordKey::Int(value) => value.to_be_bytes().to_vec(),
            RecordKey::Long(value) => value.to_be_bytes().to_vec(),
            RecordKey::Bytes(bytes) => bytes.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_partitions_has_no_answer() {
        assert_eq!(partition_for_key(b"user-42", 0), None);
    }

    #[test]
    fn one_partition_always_answers_zero() {
        assert_eq!(partition_for_key(b"anything", 1), Some(0));
    }

    #[test]
    fn integer_keys_serialize_big_endian() {
        assert_eq!(RecordKey::Int(2).serialize(), vec![0, 0, 0, 2]);
        assert_eq!(RecordKey::Long(-1).serialize(), vec![0xff; 8]);
        assert_eq!(RecordKey::Text("é".into()).serialize(), vec![0xc3, 0xa9]);
    }
}
