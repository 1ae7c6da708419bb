//! Kafka's vocabulary, shared by every layer of the engine: the ids of
//! its processes, virtual time, offsets, topic-partitions, error codes and
//! the reasons a group rebalances. Plain values with no behaviour of the
//! simulator: `groups`, `storage`, `replication`, `controller`, the
//! transaction coordinator and `sim` all import them from here, and this
//! module imports none of them.

pub mod errors;
pub mod ids;
pub mod rebalance;
pub mod topic_partition;

pub use errors::ErrorCode;
pub use ids::{BrokerId, NodeId, ProducerEpoch, ProducerId};
pub use rebalance::RebalanceReason;
pub use topic_partition::TopicPartition;

/// Virtual time in milliseconds since the run started.
pub type Time = u64;

/// An offset in a partition's log.
pub type Offset = u64;
