//! Kafka's vocabulary, shared by every layer of the engine: the ids of
//! its processes, virtual time, offsets, topic-partitions, error codes,
//! the reasons a group rebalances, `acks`, transactions' control types and
//! isolation levels, records and record batches, the KRaft metadata, and
//! the request and response messages with their typed facts. Plain values
//! with no behaviour of the simulator: `groups`, `storage`,
//! `replication`, `controller`, the transaction coordinator and `sim` all
//! import them from here, and this module imports none of them.

pub mod acks;
pub mod errors;
pub mod ids;
pub mod messages;
pub mod metadata;
pub mod rebalance;
pub mod records;
pub mod topic_partition;
pub mod transactions;

pub use errors::ErrorCode;
pub use ids::{BrokerId, NodeId, ProducerEpoch, ProducerId};
pub use rebalance::RebalanceReason;
pub use topic_partition::{TopicName, TopicPartition};

/// The internal topic holding groups' metadata and committed offsets
/// (Kafka's `Topic.GROUP_METADATA_TOPIC_NAME`).
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The internal topic holding transactions' states (Kafka's
/// `Topic.TRANSACTION_STATE_TOPIC_NAME`).
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// Virtual time in milliseconds since the run started.
pub type Time = u64;

/// An offset in a partition's log.
pub type Offset = u64;
