//! Replication rules of a partition leader and its followers, each as Kafka
//! states it, as plain state machines and functions the simulator composes.
//!
//! * [`epoch_cache`] — the leader-epoch history every replica keeps
//!   (`LeaderEpochFileCache`), used to find where a follower diverged;
//! * [`replica`] — what a leader knows about each follower
//!   (`Replica.scala`): its log end, when it last caught up, whether it is
//!   caught up;
//! * [`high_watermark`] — when the high watermark may advance, and what a
//!   produce request with `acks` 0, 1 or all gets (`Partition.scala`);
//! * [`idempotence`] — the broker's per-partition producer state and its
//!   sequence, epoch and duplicate checks (`ProducerStateManager`,
//!   `ProducerAppendInfo`, `ProducerStateEntry`), with the transactions it
//!   tracks;
//! * [`transactions`] — markers, the last stable offset, the transaction
//!   index and `read_committed` reading (KIP-98).

pub mod epoch_cache;
pub mod high_watermark;
pub mod idempotence;
pub mod replica;
pub mod transactions;

pub use crate::protocol::{BrokerId, Offset};
