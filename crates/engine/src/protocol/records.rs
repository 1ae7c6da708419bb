//! Records and record batches as the simulator's logs and messages carry
//! them: a produced record with the id that ties it to its producer's
//! bookkeeping, an idempotent or transactional batch's identity, a
//! transaction marker, a producer's batch for one partition, and the
//! batch a log keeps (`LogBatch`, whose rules live in `crate::storage`).

use std::rc::Rc;

use serde::Serialize;

use super::transactions::ControlType;
use super::Offset;

/// Identifies one produced record across the whole run, so that loss and
/// duplication can be tracked from the producer to every replica.
pub type RecordId = u64;

/// A record as stored in a replica's log: what the storage rules read
/// (timestamp, key, value size or a tombstone, headers' size), and the id
/// that ties it to the producer's bookkeeping, where the rest lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Record {
    /// Its offset in the partition.
    pub offset: Offset,
    /// The leader epoch it was appended in.
    pub leader_epoch: u32,
    /// Which produced record it is.
    pub id: RecordId,
    /// Its value's size in bytes (0 for a tombstone).
    pub bytes: u32,
    /// The idempotent batch it came in, so that every replica can rebuild
    /// the producer state (`ProducerStateManager`) from its log.
    pub batch: Option<BatchSequence>,
    /// Its timestamp (`CreateTime`: when its producer made it), in ms of
    /// the virtual clock.
    pub timestamp: i64,
    /// Its key, if any (shared: logs copy records often).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<Rc<str>>,
    /// Whether its value is null: a tombstone, which deletes its key from a
    /// compacted topic.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tombstone: bool,
    /// The encoded size of its headers (1 byte when it has none).
    pub headers_size: u32,
}

/// An idempotent producer batch's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchSequence {
    /// The producer id.
    pub producer_id: u64,
    /// The producer epoch.
    pub epoch: u16,
    /// The first record's sequence.
    pub first_sequence: i32,
    /// The last record's sequence.
    pub last_sequence: i32,
    /// Whether the batch belongs to a transaction (KIP-98).
    pub transactional: bool,
    /// For a control batch, the marker that ends a transaction (its
    /// sequences are then -1).
    pub marker: Option<TxnMarker>,
}

/// A transaction marker: the control record the transaction coordinator
/// writes to each partition a transaction touched (`EndTransactionMarker`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TxnMarker {
    /// `COMMIT` or `ABORT`.
    pub control: ControlType,
    /// The epoch of the coordinator that wrote it.
    pub coordinator_epoch: i32,
}

/// Record ids of transaction markers start here, apart from produced
/// records and coordinator records.
pub const MARKER_RECORD_BASE: u64 = 1 << 61;

/// A producer's batch for one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProducerBatch {
    /// The records, in order.
    pub records: Vec<(RecordId, u32)>,
    /// Idempotence: producer id, epoch and the first record's sequence.
    pub idempotence: Option<(u64, u16, i32)>,
    /// Whether it belongs to a transaction (`RecordBatch#isTransactional`).
    pub transactional: bool,
}

/// Who wrote a batch, for idempotence and transactions (KIP-98). Carried
/// as Kafka carries it in the batch header; the storage rules only ask
/// whether a batch is a control batch (a transaction marker).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchProducer {
    /// The producer id.
    pub producer_id: u64,
    /// The producer epoch.
    pub producer_epoch: i16,
    /// The first record's sequence.
    pub base_sequence: i32,
    /// Whether the batch is part of a transaction.
    pub transactional: bool,
    /// Whether it is a control batch (a transaction marker).
    pub control: bool,
}

/// A record batch in a segment. Offsets are never rewritten: a batch the
/// cleaner shrank keeps its base and last offsets even when records in
/// between (or all of them) are gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogBatch<R> {
    /// The first offset the batch was written with.
    pub base_offset: Offset,
    /// The last offset the batch was written with.
    pub last_offset: Offset,
    /// The largest record timestamp when it was written (`maxTimestamp`),
    /// kept by an emptied batch.
    pub max_timestamp: i64,
    /// When the cleaner may drop its tombstones (KIP-534), stamped the
    /// first time a cleaning keeps one; stored in the base timestamp.
    pub delete_horizon_ms: Option<i64>,
    /// The producer that wrote it, if idempotent or transactional.
    pub producer: Option<BatchProducer>,
    /// The records still in it.
    pub records: Vec<R>,
    /// Its size in bytes as v2 encodes it.
    pub size_bytes: u32,
}
