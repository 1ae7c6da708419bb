//! A partition of a topic (Kafka's `TopicPartition`), the key nearly
//! every layer's state is kept by: assignments, logs, replicas, offsets,
//! transactions.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A partition of a topic, written `topic-partition` as Kafka prints it.
/// Ordered by topic name, then partition; comparisons skip the name when
/// both share one allocation (the simulator's maps are keyed by these, so
/// this is its hottest comparison).
#[derive(Debug, Clone, Eq)]
pub struct TopicPartition {
    /// The topic's name, shared: a large assignment names each topic
    /// thousands of times without copying it.
    pub topic: Arc<str>,
    /// The partition's index within the topic.
    pub partition: u32,
}

impl std::hash::Hash for TopicPartition {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.topic.hash(state);
        self.partition.hash(state);
    }
}

impl PartialEq for TopicPartition {
    fn eq(&self, other: &Self) -> bool {
        self.partition == other.partition && (Arc::ptr_eq(&self.topic, &other.topic) || self.topic == other.topic)
    }
}

impl Ord for TopicPartition {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if Arc::ptr_eq(&self.topic, &other.topic) {
            return self.partition.cmp(&other.partition);
        }
        // Topic names usually differ in their first byte, which decides.
        if let (Some(left), Some(right)) = (self.topic.as_bytes().first(), other.topic.as_bytes().first()) {
            if left != right {
                return left.cmp(right);
            }
        }
        (&*self.topic, self.partition).cmp(&(&*other.topic, other.partition))
    }
}

impl PartialOrd for TopicPartition {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl TopicPartition {
    /// A partition of `topic`.
    pub fn new(topic: impl Into<Arc<str>>, partition: u32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }

    /// Parses Kafka's `topic-partition` notation (the last `-` splits, since
    /// topic names may contain dashes).
    pub fn parse(text: &str) -> Option<TopicPartition> {
        let (topic, partition) = text.rsplit_once('-')?;
        if topic.is_empty() || partition.is_empty() || !partition.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(TopicPartition::new(topic, partition.parse().ok()?))
    }
}

impl Serialize for TopicPartition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A topic partition as a string (`orders-0`), for the format's schema.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for TopicPartition {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TopicPartition".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A topic and a partition as TOPIC-N, such as orders-0.",
            "type": "string"
        })
    }
}

impl<'de> Deserialize<'de> for TopicPartition {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        TopicPartition::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("{text:?} is not a partition such as \"orders-0\"")))
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}-{}", self.topic, self.partition)
    }
}
