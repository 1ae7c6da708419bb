//! A partition of a topic (Kafka's `TopicPartition`), the key nearly
//! every layer's state is kept by: assignments, logs, replicas, offsets,
//! transactions.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A topic's name as partitions carry it: one allocation shared by every
/// partition of the topic. Reference-counted without atomics: the engine
/// runs on one thread (a simulation is built and run where it lives), and a
/// large assignment clones a name a million times.
pub type TopicName = std::rc::Rc<str>;

/// A partition of a topic, written `topic-partition` as Kafka prints it.
/// Ordered by topic name, then partition; comparisons skip the name when
/// both share one allocation (the simulator's maps are keyed by these, so
/// this is its hottest comparison).
#[derive(Debug, Clone, Eq)]
pub struct TopicPartition {
    /// The topic's name, shared: a large assignment names each topic
    /// thousands of times without copying it.
    pub topic: TopicName,
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
        self.partition == other.partition && (TopicName::ptr_eq(&self.topic, &other.topic) || self.topic == other.topic)
    }
}

impl Ord for TopicPartition {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        if TopicName::ptr_eq(&self.topic, &other.topic) {
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
    pub fn new(topic: impl Into<TopicName>, partition: u32) -> Self {
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

/// The longest topic name Kafka accepts (`Topic.MAX_NAME_LENGTH`: 255
/// less room for a partition suffix in a log directory's name).
pub const MAX_TOPIC_NAME_LENGTH: usize = 249;

/// Why Kafka refuses `name` as a topic name, in Kafka's words
/// (`org.apache.kafka.common.internals.Topic#validate`, which
/// `CreateTopics` and the controller apply): not empty, not `.` or `..`,
/// at most 249 characters, each an ASCII letter or digit, `.`, `_` or
/// `-`. A name that passes is safe wherever it is written: a file name,
/// a Mermaid label, an SVG text, an address.
pub fn invalid_topic_name(name: &str) -> Option<String> {
    let reason = if name.is_empty() {
        "the empty string is not allowed".to_string()
    } else if name == "." || name == ".." {
        format!("'{name}' is not allowed")
    } else if name.chars().count() > MAX_TOPIC_NAME_LENGTH {
        format!(
            "the length of '{}…' is longer than the max allowed length {MAX_TOPIC_NAME_LENGTH}",
            name.chars().take(40).collect::<String>()
        )
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        format!("{name:?} contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
    } else {
        return None;
    };
    Some(format!("Topic name is invalid: {reason}"))
}

#[cfg(test)]
mod name_tests {
    use super::*;

    /// `TopicTest#testInvalidTopicNames` and `#testValidTopicNames`.
    #[test]
    fn kafka_accepts_only_its_legal_topic_names() {
        for valid in [
            "valid",
            "TOPIC",
            "nAmEs",
            "ar6",
            "VaL1d",
            "_0-9_.",
            "...",
            ".a",
            "a".repeat(249).as_str(),
        ] {
            assert_eq!(invalid_topic_name(valid), None, "{valid}");
        }
        let long = "x".repeat(250);
        for invalid in [
            "",
            "foo bar",
            "..",
            ".",
            "foo:bar",
            "foo=bar",
            "a\"]\n",
            "a\u{a0}b",
            "é",
            long.as_str(),
        ] {
            let reason = invalid_topic_name(invalid).unwrap_or_else(|| panic!("{invalid:?} is refused"));
            assert!(reason.starts_with("Topic name is invalid: "), "{reason}");
        }
        assert_eq!(
            invalid_topic_name("a b").as_deref(),
            Some("Topic name is invalid: \"a b\" contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")
        );
        assert_eq!(
            invalid_topic_name(".").as_deref(),
            Some("Topic name is invalid: '.' is not allowed")
        );
    }
}
