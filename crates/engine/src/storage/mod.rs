//! What a broker keeps on disk for each partition, after Kafka's storage
//! layer (`UnifiedLog`, `LocalLog`, `LogSegment`, `OffsetIndex`,
//! `TimeIndex`, `LogCleaner`) and its client quotas (`ClientQuotaManager`).
//!
//! A partition's log is a list of segments named by their base offsets;
//! appends go to the last (active) one and roll a new one by size
//! (`segment.bytes`) or age (`segment.ms`). Each segment has a sparse
//! offset index and a time index. Old data leaves by policy, never because
//! someone read it: retention deletes whole closed segments
//! (`retention.ms`, `retention.bytes`), and compaction keeps only the
//! latest record of each key (`cleanup.policy=compact`).
//!
//! Checked against `vectors-log-storage.json`: Kafka's own storage classes
//! writing real segment and index files (SEMANTICS.md §13).

pub mod cleaner;
pub mod log;
pub mod quota;
pub mod record;
pub mod segment;

pub use cleaner::{CleanOutcome, LogToClean};
pub use log::{CleanupPolicy, DeletionReason, Log, LogConfig, Lookup, RetentionOutcome};
pub use quota::ByteRate;
pub use record::{BatchProducer, Header, LogBatch, LogRecord, StoredRecord};
pub use segment::{segment_file_name, Segment};
