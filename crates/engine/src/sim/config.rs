//! A cluster's configuration and the inputs a run takes: user actions and
//! faults, each scheduled at a virtual time. Defaults are Kafka's.

use crate::replication::transactions::IsolationLevel;
use serde::{Deserialize, Serialize};

pub use crate::controller::cluster_control::ElectionType;

use crate::partitioning::null_key::NullKeyStrategy;
use crate::protocol::BrokerId;
use crate::replication::high_watermark::Acks;

use super::types::{NodeId, Time};

/// A topic to create when the run starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopicConfig {
    /// The topic's name.
    pub name: String,
    /// Number of partitions.
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    /// Replication factor.
    #[serde(default = "default_replication_factor")]
    pub replication_factor: u32,
    /// `min.insync.replicas` (Kafka's default is 1).
    #[serde(default = "one")]
    pub min_insync_replicas: u32,
    /// `cleanup.policy`: `delete` (the default), `compact` or
    /// `compact,delete`.
    #[serde(default)]
    pub cleanup_policy: crate::storage::CleanupPolicy,
    /// `segment.bytes` (1 GiB, at least 1 MiB in Kafka 4.1, KIP-1030): a
    /// segment rolls before it would pass this.
    #[serde(default = "default_segment_bytes")]
    pub segment_bytes: u64,
    /// `internal.segment.bytes` (unset): Kafka's test-only override of
    /// `segment.bytes` with no minimum (`LogConfig#segmentSize`), which the
    /// stories use so that segments roll within seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_segment_bytes: Option<u64>,
    /// `segment.ms` (7 days): a segment rolls once its records span this.
    #[serde(default = "default_seven_days")]
    pub segment_ms: u64,
    /// `retention.ms` (7 days; -1: keep forever): closed segments whose
    /// newest record is older are deleted.
    #[serde(default = "default_retention_ms")]
    pub retention_ms: i64,
    /// `retention.bytes` (-1: no limit): oldest segments are deleted while
    /// the log is over it.
    #[serde(default = "minus_one")]
    pub retention_bytes: i64,
    /// `index.interval.bytes` (4096): bytes between offset-index entries.
    #[serde(default = "default_index_interval")]
    pub index_interval_bytes: u64,
    /// `min.cleanable.dirty.ratio` (0.5): the cleaner runs on a compacted
    /// log once more than this share of it is dirty.
    #[serde(default = "default_dirty_ratio")]
    pub min_cleanable_dirty_ratio: Ratio,
    /// `min.compaction.lag.ms` (0): records younger than this are not
    /// compacted.
    #[serde(default)]
    pub min_compaction_lag_ms: u64,
    /// `delete.retention.ms` (1 day): how long a tombstone outlives the
    /// cleaning that first kept it.
    #[serde(default = "default_one_day")]
    pub delete_retention_ms: u64,
    /// `flush.messages` (unset: `log.flush.interval.messages`, by default
    /// never): the log is flushed to disk once this many records are not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_messages: Option<u64>,
    /// `flush.ms` (unset: never): the broker's log flusher flushes the log
    /// once it was last flushed this long ago; the flusher runs every
    /// `logFlushSchedulerIntervalMs`, by default never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flush_ms: Option<u64>,
}

impl Default for TopicConfig {
    fn default() -> Self {
        TopicConfig {
            name: String::new(),
            partitions: default_partitions(),
            replication_factor: default_replication_factor(),
            min_insync_replicas: 1,
            cleanup_policy: crate::storage::CleanupPolicy::DELETE,
            segment_bytes: default_segment_bytes(),
            internal_segment_bytes: None,
            segment_ms: default_seven_days(),
            retention_ms: default_retention_ms(),
            retention_bytes: -1,
            index_interval_bytes: default_index_interval(),
            min_cleanable_dirty_ratio: default_dirty_ratio(),
            min_compaction_lag_ms: 0,
            delete_retention_ms: default_one_day(),
            flush_messages: None,
            flush_ms: None,
        }
    }
}

impl TopicConfig {
    /// The storage settings of the topic's logs.
    pub fn log_config(&self) -> crate::storage::LogConfig {
        crate::storage::LogConfig {
            segment_bytes: self.segment_size(),
            segment_ms: self.segment_ms as i64,
            index_interval_bytes: self.index_interval_bytes,
            retention_ms: self.retention_ms,
            retention_bytes: self.retention_bytes,
            cleanup_policy: self.cleanup_policy,
            min_cleanable_dirty_ratio: self.min_cleanable_dirty_ratio.0,
            min_compaction_lag_ms: self.min_compaction_lag_ms as i64,
            delete_retention_ms: self.delete_retention_ms as i64,
            flush_messages: self
                .flush_messages
                .map_or(i64::MAX, |messages| i64::try_from(messages).unwrap_or(i64::MAX)),
            flush_ms: self
                .flush_ms
                .map_or(i64::MAX, |ms| i64::try_from(ms).unwrap_or(i64::MAX)),
            ..crate::storage::LogConfig::default()
        }
    }

    /// The size a segment rolls at: `internal.segment.bytes` when set,
    /// else `segment.bytes` (`LogConfig#segmentSize`).
    pub fn segment_size(&self) -> u64 {
        self.internal_segment_bytes.unwrap_or(self.segment_bytes)
    }

    /// Checks the storage settings against Kafka's bounds (`LogConfig`).
    pub fn validate_storage(&self) -> Result<(), String> {
        let name = &self.name;
        // KIP-1030 (KAFKA-19080, 4.1): `atLeast(1024 * 1024)`, refused as
        // `INVALID_CONFIG` with ConfigDef's own message.
        if self.segment_bytes < MIN_SEGMENT_BYTES {
            return Err(format!(
                "topic {name}: Invalid value {} for configuration segment.bytes: Value must be at least {MIN_SEGMENT_BYTES} \
                 (Kafka 4.1's minimum, 1 MiB; for smaller segments set internal.segment.bytes, Kafka's test-only setting, as the stories do)",
                self.segment_bytes
            ));
        }
        // `flush.messages` is `atLeast(1)` (`LogConfig`).
        if self.flush_messages == Some(0) {
            return Err(format!(
                "topic {name}: Invalid value 0 for configuration flush.messages: Value must be at least 1"
            ));
        }
        // Kafka gives the test-only key no validator; a segment here must
        // at least hold a record's overhead (`RECORD_OVERHEAD_V0`).
        if let Some(internal) = self.internal_segment_bytes.filter(|bytes| *bytes < 14) {
            return Err(format!(
                "topic {name}: internal.segment.bytes must be at least 14 here (a segment must hold a record), got {internal}"
            ));
        }
        if self.segment_ms == 0 {
            return Err(format!("topic {name}: segment.ms must be at least 1"));
        }
        if self.retention_ms < -1 {
            return Err(format!(
                "topic {name}: retention.ms must be -1 (forever) or more, got {}",
                self.retention_ms
            ));
        }
        if self.retention_bytes < -1 {
            return Err(format!(
                "topic {name}: retention.bytes must be -1 (no limit) or more, got {}",
                self.retention_bytes
            ));
        }
        let ratio = self.min_cleanable_dirty_ratio.0;
        if !(0.0..=1.0).contains(&ratio) {
            return Err(format!(
                "topic {name}: min.cleanable.dirty.ratio must be between 0 and 1, got {ratio}"
            ));
        }
        Ok(())
    }
}

/// A ratio between 0 and 1 (`min.cleanable.dirty.ratio`), comparable
/// exactly so that configurations can be compared.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Ratio(pub f64);

impl PartialEq for Ratio {
    fn eq(&self, other: &Ratio) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Ratio {}

/// `segment.bytes`'s minimum in Kafka 4.1 (KIP-1030): 1 MiB.
pub const MIN_SEGMENT_BYTES: u64 = 1024 * 1024;

fn default_segment_bytes() -> u64 {
    1024 * 1024 * 1024
}
fn default_seven_days() -> u64 {
    7 * 24 * 60 * 60 * 1000
}
fn default_retention_ms() -> i64 {
    7 * 24 * 60 * 60 * 1000
}
fn minus_one() -> i64 {
    -1
}
fn default_index_interval() -> u64 {
    4096
}
fn default_dirty_ratio() -> Ratio {
    Ratio(0.5)
}
fn default_one_day() -> u64 {
    24 * 60 * 60 * 1000
}

fn default_partitions() -> u32 {
    3
}
fn default_replication_factor() -> u32 {
    3
}
fn one() -> u32 {
    1
}

/// A producer client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProducerConfig {
    /// The topic it writes to.
    pub topic: String,
    /// `acks` (Kafka's default since 3.0 is `all`).
    #[serde(default = "default_acks")]
    pub acks: Acks,
    /// `linger.ms` (5 since Kafka 4.0, KIP-1030).
    #[serde(default = "default_linger")]
    pub linger_ms: u64,
    /// `batch.size` (16384).
    #[serde(default = "default_batch_size")]
    pub batch_size: u32,
    /// `enable.idempotence` as the user set it: `None` is Kafka's default
    /// (true), which a conflicting `acks` quietly turns off; an explicit
    /// `true` with `acks` other than `all` is refused
    /// (`ProducerConfig#postProcessAndValidateIdempotenceConfigs`). See
    /// [`ProducerConfig::idempotence`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_idempotence: Option<bool>,
    /// `request.timeout.ms` (30000).
    #[serde(default = "default_request_timeout")]
    pub request_timeout_ms: u64,
    /// `delivery.timeout.ms` as the user set it (`None`: 120000, raised to
    /// `linger.ms + request.timeout.ms` when that is larger, as
    /// `KafkaProducer#configureDeliveryTimeout` does; an explicit value
    /// below that sum is refused). See [`ProducerConfig::delivery_timeout`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_timeout_ms: Option<u64>,
    /// `retry.backoff.ms` (100), doubling up to `retry.backoff.max.ms` (1000).
    #[serde(default = "default_retry_backoff")]
    pub retry_backoff_ms: u64,
    /// How records without a key pick a partition.
    #[serde(default = "default_null_key")]
    pub null_key: NullKeyStrategy,
    /// `max.in.flight.requests.per.connection` (5): produce requests
    /// awaiting an answer on one broker connection (`NetworkClient#canSendRequest`).
    #[serde(default = "default_max_in_flight", skip_serializing_if = "is_default_max_in_flight")]
    pub max_in_flight_requests_per_connection: u32,
    /// `transactional.id`: set, the producer is transactional (KIP-98). Its
    /// first send begins a transaction; the `commitTransaction` and
    /// `abortTransaction` inputs end it. Needs idempotence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms` (60000): how long the coordinator lets a
    /// transaction stay open before it aborts it and fences the producer.
    #[serde(
        default = "default_transaction_timeout",
        skip_serializing_if = "is_default_transaction_timeout"
    )]
    pub transaction_timeout_ms: u64,
    /// `client.id`: what brokers know the producer by, for quotas
    /// (default `producer-N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// `metadata.max.age.ms` (300000): the producer asks for metadata this
    /// often even when nothing failed, which is how it learns of partitions
    /// added to its topic (`CommonClientConfigs.METADATA_MAX_AGE_CONFIG`).
    #[serde(
        default = "default_metadata_max_age",
        skip_serializing_if = "is_default_metadata_max_age"
    )]
    pub metadata_max_age_ms: u64,
}

/// `metadata.max.age.ms`'s default (5 minutes).
pub fn default_metadata_max_age() -> u64 {
    300_000
}
fn is_default_metadata_max_age(value: &u64) -> bool {
    *value == default_metadata_max_age()
}

fn default_transaction_timeout() -> u64 {
    60_000
}
fn is_default_transaction_timeout(value: &u64) -> bool {
    *value == default_transaction_timeout()
}

fn default_max_in_flight() -> u32 {
    5
}
fn is_default_max_in_flight(value: &u32) -> bool {
    *value == default_max_in_flight()
}

/// `ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION_FOR_IDEMPOTENCE`.
const MAX_IN_FLIGHT_FOR_IDEMPOTENCE: u32 = 5;

fn default_acks() -> Acks {
    Acks::All
}
fn default_batch_size() -> u32 {
    16_384
}
fn default_true() -> bool {
    true
}
fn default_request_timeout() -> u64 {
    30_000
}
fn default_delivery_timeout() -> u64 {
    120_000
}
fn default_linger() -> u64 {
    5
}
fn default_retry_backoff() -> u64 {
    100
}
fn default_null_key() -> NullKeyStrategy {
    NullKeyStrategy::UniformSticky
}

impl ProducerConfig {
    /// A producer with Kafka's defaults writing to `topic`.
    pub fn new(topic: impl Into<String>) -> ProducerConfig {
        ProducerConfig {
            topic: topic.into(),
            acks: default_acks(),
            linger_ms: default_linger(),
            batch_size: default_batch_size(),
            enable_idempotence: None,
            request_timeout_ms: default_request_timeout(),
            delivery_timeout_ms: None,
            retry_backoff_ms: default_retry_backoff(),
            null_key: default_null_key(),
            max_in_flight_requests_per_connection: default_max_in_flight(),
            transactional_id: None,
            transaction_timeout_ms: default_transaction_timeout(),
            client_id: None,
            metadata_max_age_ms: default_metadata_max_age(),
        }
    }

    /// Whether the producer is idempotent: as set, else Kafka's default
    /// (true) unless `acks` is not `all`, which turns it off
    /// (`ProducerConfig#postProcessAndValidateIdempotenceConfigs`). Since
    /// 4.0 (KAFKA-17927) more than 5 requests in flight no longer turns it
    /// off: [`validate`](Self::validate) refuses them.
    pub fn idempotence(&self) -> bool {
        self.enable_idempotence.unwrap_or(self.acks == Acks::All)
    }

    /// `delivery.timeout.ms` in force: as set, else 120000 or
    /// `linger.ms + request.timeout.ms` if that is larger.
    pub fn delivery_timeout(&self) -> u64 {
        self.delivery_timeout_ms
            .unwrap_or_else(|| default_delivery_timeout().max(self.linger_ms + self.request_timeout_ms))
    }

    /// The combinations Kafka's producer refuses, with its messages.
    pub fn validate(&self) -> Result<(), String> {
        if self.enable_idempotence == Some(true) && self.acks != Acks::All {
            return Err(
                "Must set acks to all in order to use the idempotent producer. Otherwise we cannot guarantee idempotence."
                    .to_string(),
            );
        }
        if let Some(delivery) = self.delivery_timeout_ms {
            if delivery < self.linger_ms.saturating_add(self.request_timeout_ms) {
                return Err(
                    "delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms".to_string(),
                );
            }
        }
        if self.request_timeout_ms == 0 {
            return Err("request.timeout.ms must be at least 1".to_string());
        }
        if self.max_in_flight_requests_per_connection == 0 {
            return Err(
                "Invalid value 0 for configuration max.in.flight.requests.per.connection: Value must be at least 1"
                    .to_string(),
            );
        }
        if self.transactional_id.is_some() && !self.idempotence() {
            return Err(
                "Cannot set a transactional.id without also enabling idempotence (it needs acks=all).".to_string(),
            );
        }
        if self.transactional_id.as_deref() == Some("") {
            return Err("transactional.id must not be empty".to_string());
        }
        if self.transaction_timeout_ms == 0
            || self.transaction_timeout_ms > crate::txn_coordinator::TRANSACTION_MAX_TIMEOUT_MS
        {
            return Err(format!(
                "transaction.timeout.ms must be between 1 and {} (the broker's transaction.max.timeout.ms)",
                crate::txn_coordinator::TRANSACTION_MAX_TIMEOUT_MS
            ));
        }
        // Kafka 4.0 (KAFKA-17927): refused whether idempotence was set or
        // is the default; only `enableIdempotence: false` allows more.
        if self.idempotence() && self.max_in_flight_requests_per_connection > MAX_IN_FLIGHT_FOR_IDEMPOTENCE {
            return Err(
                "Must set max.in.flight.requests.per.connection to at most 5 to use the idempotent producer."
                    .to_string(),
            );
        }
        Ok(())
    }
}

/// Where a consumer starts when its group has no committed offset
/// (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum OffsetReset {
    /// From the first record.
    Earliest,
    /// From the end (Kafka's default).
    Latest,
    /// Nowhere: `poll()` throws (`NoOffsetForPartitionException` without a
    /// committed offset, `OffsetOutOfRangeException` when the position is
    /// gone) and the application decides.
    None,
}

impl std::fmt::Display for OffsetReset {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            OffsetReset::Earliest => "earliest",
            OffsetReset::Latest => "latest",
            OffsetReset::None => "none",
        })
    }
}

/// Which rebalance protocol a consumer speaks (`group.protocol`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum GroupProtocol {
    /// JoinGroup / SyncGroup with a client-side assignor (Kafka 4.1's
    /// default).
    #[default]
    Classic,
    /// KIP-848: `ConsumerGroupHeartbeat` with a server-side assignor.
    Consumer,
}

impl GroupProtocol {
    fn is_classic(&self) -> bool {
        *self == GroupProtocol::Classic
    }
}

impl std::fmt::Display for GroupProtocol {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            GroupProtocol::Classic => "classic",
            GroupProtocol::Consumer => "consumer",
        })
    }
}

/// When the application commits its offsets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum CommitMode {
    /// `enable.auto.commit=true` (Kafka's default): positions are committed
    /// every `auto.commit.interval.ms` inside `poll()`, before a rebalance
    /// and on close. At least once.
    #[default]
    Auto,
    /// `enable.auto.commit=false`; `commitSync()` right after `poll()`,
    /// before the records are processed. At most once: a crash mid-batch
    /// loses the rest of the batch.
    BeforeProcessing,
    /// `enable.auto.commit=false`; `commitSync()` once the batch is
    /// processed; the next `poll()` waits for it. At least once: a crash
    /// mid-batch processes the done part again.
    AfterProcessing,
    /// As `AfterProcessing` with `commitAsync()`: the next `poll()` does
    /// not wait.
    AfterProcessingAsync,
    /// `enable.auto.commit=false`; consume-transform-produce (KIP-98,
    /// KIP-447): the handler's outputs and the consumed positions go in one
    /// transaction of its `outputProducer` (`sendOffsetsToTransaction`
    /// with the group's metadata, then `commitTransaction()`); the next
    /// `poll()` waits for it. Exactly once: outputs and offsets commit or
    /// abort together; after an abort the positions go back to the last
    /// committed offsets.
    Transactional,
}

impl CommitMode {
    fn is_auto(&self) -> bool {
        *self == CommitMode::Auto
    }
}

impl std::fmt::Display for CommitMode {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            CommitMode::Auto => "auto-commit",
            CommitMode::BeforeProcessing => "commit before processing",
            CommitMode::AfterProcessing => "commit after processing (sync)",
            CommitMode::AfterProcessingAsync => "commit after processing (async)",
            CommitMode::Transactional => "offsets in the output transaction",
        })
    }
}

/// What the handler does once its retries on a failing record are spent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "kebab-case")]
pub enum AfterFailures {
    /// The exception leaves the poll loop and the app closes its consumer
    /// (as Kafka Connect's default `errors.tolerance=none` fails the task):
    /// the member leaves the group, and on close an auto-committing
    /// consumer commits the positions `poll()` already moved past.
    #[default]
    Stop,
    /// The record goes to the dead letter queue (`<topic>.DLQ`) with
    /// headers naming the error and where it came from, and the handler
    /// goes on with the next record.
    DeadLetter,
}

impl std::fmt::Display for AfterFailures {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            AfterFailures::Stop => "stop the member",
            AfterFailures::DeadLetter => "send it to the dead letter queue and go on",
        })
    }
}

/// How the handler deals with a record it fails on (a poison record): an
/// application's policy, not a Kafka setting (Kafka Connect's
/// `errors.retry.*`, `errors.tolerance` and
/// `errors.deadletterqueue.topic.name` are the nearest).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailurePolicy {
    /// Attempts after the first that fails.
    #[serde(default)]
    pub retries: u32,
    /// The wait before each retry.
    #[serde(default)]
    pub backoff_ms: u64,
    /// Then what.
    #[serde(default)]
    pub then: AfterFailures,
    /// With `then: "dead-letter"`: the producer (an index into
    /// `producers`) that writes to `<topic>.DLQ`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_letter_producer: Option<u32>,
}

impl FailurePolicy {
    fn is_default(&self) -> bool {
        *self == FailurePolicy::default()
    }
}

/// The server-side assignors of the consumer protocol
/// (`group.consumer.assignors`: `uniform` first, so the default).
pub const REMOTE_ASSIGNORS: [&str; 2] = ["uniform", "range"];

/// A consumer client, member of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsumerConfig {
    /// `group.id`.
    pub group: String,
    /// Topics it subscribes to.
    pub topics: Vec<String>,
    /// `partition.assignment.strategy`: an assignor name (`range` by default,
    /// the first of Kafka's default list).
    #[serde(default = "default_assignor")]
    pub assignor: String,
    /// `auto.offset.reset`.
    #[serde(default = "default_reset")]
    pub auto_offset_reset: OffsetReset,
    /// `auto.commit.interval.ms` (5000).
    #[serde(default = "default_commit_interval")]
    pub auto_commit_interval_ms: u64,
    /// `session.timeout.ms` (45000).
    #[serde(default = "default_consumer_session")]
    pub session_timeout_ms: u64,
    /// `heartbeat.interval.ms` (3000).
    #[serde(default = "default_consumer_heartbeat")]
    pub heartbeat_interval_ms: u64,
    /// Whether it starts with the run (otherwise a `startConsumer` input).
    #[serde(default = "default_true")]
    pub start: bool,
    /// `group.instance.id`: set, the consumer is a static member (KIP-345).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_instance_id: Option<String>,
    /// How long the application's record handler takes per record (not a
    /// Kafka setting: the work done between two `poll()` calls).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub processing_ms_per_record: u64,
    /// `max.poll.records` (500): at most this many records per `poll()`.
    #[serde(default = "default_max_poll_records")]
    pub max_poll_records: u32,
    /// `max.poll.interval.ms` (300000): a member that does not call
    /// `poll()` within this leaves its group; also its rebalance timeout.
    #[serde(default = "default_max_poll_interval")]
    pub max_poll_interval_ms: u64,
    /// `group.protocol`: `classic` (the default) or `consumer` (KIP-848).
    #[serde(default, skip_serializing_if = "GroupProtocol::is_classic")]
    pub group_protocol: GroupProtocol,
    /// `group.remote.assignor`: with the consumer protocol, the server-side
    /// assignor to ask for (`uniform` or `range`); `None` leaves the choice
    /// to the broker (`uniform`). `assignor` is not used then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_remote_assignor: Option<String>,
    /// When the application commits (`enable.auto.commit` and its own
    /// `commitSync`/`commitAsync` calls).
    #[serde(default, skip_serializing_if = "CommitMode::is_auto")]
    pub commit_mode: CommitMode,
    /// The handler recognises a record it already processed and does
    /// nothing the second time (an idempotent handler).
    #[serde(default, skip_serializing_if = "is_false")]
    pub idempotent_handler: bool,
    /// `isolation.level`: `read_uncommitted` (the default) reads up to the
    /// high watermark, open and aborted transactions included;
    /// `read_committed` reads up to the last stable offset and skips
    /// aborted transactions.
    #[serde(default, skip_serializing_if = "is_read_uncommitted")]
    pub isolation_level: IsolationLevel,
    /// Consume-transform-produce: for each record it processes, the
    /// handler sends one output record (same key) through this producer
    /// (an index into `producers`), as it starts on the batch. With
    /// `commitMode: "transactional"` that producer must have a
    /// `transactionalId`; the app and its producer live and crash
    /// together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_producer: Option<u32>,
    /// What the handler does with a record it fails on (see the
    /// `poisonRecords` input).
    #[serde(default, skip_serializing_if = "FailurePolicy::is_default")]
    pub on_failure: FailurePolicy,
    /// `client.id`: what brokers know the consumer by, for quotas
    /// (default `consumer-N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// `metadata.max.age.ms` (300000): the consumer asks for metadata this
    /// often; a group leader that finds a subscribed topic with more
    /// partitions than its assignment used rejoins, so the new partitions
    /// get owners.
    #[serde(
        default = "default_metadata_max_age",
        skip_serializing_if = "is_default_metadata_max_age"
    )]
    pub metadata_max_age_ms: u64,
}

fn is_read_uncommitted(level: &IsolationLevel) -> bool {
    *level == IsolationLevel::ReadUncommitted
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}
fn default_max_poll_records() -> u32 {
    500
}
fn default_max_poll_interval() -> u64 {
    300_000
}

fn default_assignor() -> String {
    "range".to_string()
}
fn default_reset() -> OffsetReset {
    OffsetReset::Latest
}
fn default_commit_interval() -> u64 {
    5_000
}
fn default_consumer_session() -> u64 {
    45_000
}
fn default_consumer_heartbeat() -> u64 {
    3_000
}

impl ConsumerConfig {
    /// A consumer of `group` reading `topics`, with Kafka's defaults.
    pub fn new(group: impl Into<String>, topics: Vec<String>) -> ConsumerConfig {
        ConsumerConfig {
            group: group.into(),
            topics,
            assignor: default_assignor(),
            auto_offset_reset: default_reset(),
            auto_commit_interval_ms: default_commit_interval(),
            session_timeout_ms: default_consumer_session(),
            heartbeat_interval_ms: default_consumer_heartbeat(),
            start: true,
            group_instance_id: None,
            processing_ms_per_record: 0,
            max_poll_records: default_max_poll_records(),
            max_poll_interval_ms: default_max_poll_interval(),
            group_protocol: GroupProtocol::Classic,
            group_remote_assignor: None,
            commit_mode: CommitMode::Auto,
            idempotent_handler: false,
            isolation_level: IsolationLevel::ReadUncommitted,
            output_producer: None,
            on_failure: FailurePolicy::default(),
            client_id: None,
            metadata_max_age_ms: default_metadata_max_age(),
        }
    }

    /// Whether it speaks the KIP-848 consumer protocol.
    pub fn consumer_protocol(&self) -> bool {
        self.group_protocol == GroupProtocol::Consumer
    }
}

/// The network between nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkConfig {
    /// One-way latency of every message.
    #[serde(default = "default_latency")]
    pub latency_ms: u64,
    /// Extra random latency, uniform in `0..=jitter_ms`.
    #[serde(default)]
    pub jitter_ms: u64,
    /// Chance in parts per million that a message is lost.
    #[serde(default)]
    pub drop_per_million: u32,
}

fn default_latency() -> u64 {
    2
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            latency_ms: default_latency(),
            jitter_ms: 1,
            drop_per_million: 0,
        }
    }
}

/// The whole cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterConfig {
    /// Number of brokers (ids 1..=n).
    #[serde(default = "default_brokers")]
    pub brokers: u32,
    /// Number of KRaft controllers in the quorum (ids 1..=n).
    #[serde(default = "default_controllers")]
    pub controllers: u32,
    /// Topics created at start.
    #[serde(default)]
    pub topics: Vec<TopicConfig>,
    /// Producer clients.
    #[serde(default)]
    pub producers: Vec<ProducerConfig>,
    /// Consumer clients.
    #[serde(default)]
    pub consumers: Vec<ConsumerConfig>,
    /// `offsets.topic.num.partitions` (50). `__consumer_offsets` is created
    /// when the run has consumers.
    #[serde(default = "default_offsets_partitions")]
    pub offsets_topic_partitions: u32,
    /// `transaction.state.log.num.partitions` (50). `__transaction_state`
    /// is created when a transactional producer first looks for its
    /// coordinator.
    #[serde(default = "default_offsets_partitions")]
    pub transaction_state_partitions: u32,
    /// `offsets.topic.replication.factor` (3): `__consumer_offsets` is not
    /// created while fewer brokers can take a replica, and groups find no
    /// coordinator (`COORDINATOR_NOT_AVAILABLE`) until they can. A
    /// one-broker quickstart sets it to 1.
    #[serde(default = "default_internal_replication")]
    pub offsets_topic_replication_factor: u32,
    /// `transaction.state.log.replication.factor` (3), likewise for
    /// `__transaction_state` and transactional producers.
    #[serde(default = "default_internal_replication")]
    pub transaction_state_log_replication_factor: u32,
    /// `transaction.state.log.min.isr` (2): `__transaction_state`'s
    /// `min.insync.replicas` (at most its replication factor counts).
    #[serde(default = "default_transaction_min_isr")]
    pub transaction_state_log_min_isr: u32,
    /// `replica.lag.time.max.ms` (30000).
    #[serde(default = "default_lag")]
    pub replica_lag_time_max_ms: u64,
    /// `replica.fetch.wait.max.ms` (500): how long a leader holds an empty fetch.
    #[serde(default = "default_fetch_wait")]
    pub replica_fetch_wait_max_ms: u64,
    /// `broker.heartbeat.interval.ms` (2000).
    #[serde(default = "default_heartbeat")]
    pub broker_heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms` (9000).
    #[serde(default = "default_session")]
    pub broker_session_timeout_ms: u64,
    /// `unclean.leader.election.enable` (false).
    #[serde(default)]
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable` (true): the active controller moves
    /// leadership back to each partition's first replica.
    #[serde(default = "default_true")]
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (300), in milliseconds.
    #[serde(default = "default_imbalance_interval")]
    pub leader_imbalance_check_interval_ms: u64,
    /// Eligible Leader Replicas (KIP-966; `eligible.leader.replicas.version=1`):
    /// a replica that leaves an ISR already below `min.insync.replicas`
    /// stays eligible to lead. On by default, as Kafka 4.1 turns it on for
    /// new clusters (it was off by default in 4.0).
    #[serde(default = "default_true")]
    pub eligible_leader_replicas_enable: bool,
    /// `transaction.version`, the cluster feature (`kafka-features
    /// upgrade --feature transaction.version=N`): 2 on a newly formatted
    /// Kafka 4.1 cluster, an epoch bump per transaction and partitions
    /// added by their leaders (KIP-890 part 2); 0 and 1 run the protocol
    /// as it was before.
    #[serde(default)]
    pub transaction_version: crate::protocol::transactions::TransactionVersion,
    /// `transaction.partition.verification.enable` (true): a leader asks
    /// the transaction coordinator whether a partition is in the
    /// transaction before it appends the transaction's first batch there
    /// (KIP-890 part 1). Under transaction version 2 the leader adds the
    /// partition whatever this says.
    #[serde(default = "default_true")]
    pub transaction_partition_verification_enable: bool,
    /// `unclean.leader.election.interval.ms` (300000, an internal
    /// setting): how often the active controller's periodic pass elects
    /// leaderless partitions uncleanly where the topic allows it.
    #[serde(default = "default_imbalance_interval")]
    pub unclean_leader_election_interval_ms: u64,
    /// `group.consumer.session.timeout.ms` (45000): a consumer-protocol
    /// member that sends no heartbeat for this long is fenced.
    #[serde(default = "default_consumer_session")]
    pub group_consumer_session_timeout_ms: u64,
    /// `group.consumer.heartbeat.interval.ms` (5000): how often
    /// consumer-protocol members heartbeat (the broker tells them).
    #[serde(default = "default_group_consumer_heartbeat")]
    pub group_consumer_heartbeat_interval_ms: u64,
    /// `group.consumer.min.session.timeout.ms` (45000): the lowest
    /// `group.consumer.session.timeout.ms` a broker starts with
    /// (`GroupCoordinatorConfig`).
    #[serde(default = "default_consumer_session")]
    pub group_consumer_min_session_timeout_ms: u64,
    /// `group.consumer.max.session.timeout.ms` (60000).
    #[serde(default = "default_consumer_max_session")]
    pub group_consumer_max_session_timeout_ms: u64,
    /// `group.consumer.min.heartbeat.interval.ms` (5000).
    #[serde(default = "default_group_consumer_heartbeat")]
    pub group_consumer_min_heartbeat_interval_ms: u64,
    /// `group.consumer.max.heartbeat.interval.ms` (15000).
    #[serde(default = "default_group_consumer_max_heartbeat")]
    pub group_consumer_max_heartbeat_interval_ms: u64,
    /// `log.flush.scheduler.interval.ms` (unset: `Long.MAX_VALUE`, never):
    /// how often each broker's log flusher flushes the logs whose `flush.ms`
    /// has passed since their last flush (`LogManager#flushDirtyLogs`). The
    /// first run waits `log.initial.task.delay.ms` (30 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_flush_scheduler_interval_ms: Option<u64>,
    /// `log.retention.check.interval.ms` (300000): how often each broker
    /// deletes the segments retention no longer keeps.
    #[serde(default = "default_imbalance_interval")]
    pub log_retention_check_interval_ms: u64,
    /// `producer.id.expiration.ms` (86400000, a day): a producer with no
    /// open transaction that wrote nothing to a partition for this long is
    /// forgotten there.
    #[serde(default = "default_producer_id_expiration")]
    pub producer_id_expiration_ms: u64,
    /// `producer.id.expiration.check.interval.ms` (600000): how often each
    /// broker looks for them.
    #[serde(default = "default_producer_id_expiration_check")]
    pub producer_id_expiration_check_interval_ms: u64,
    /// `log.cleaner.backoff.ms` (15000): how long each broker's log cleaner
    /// waits when no compacted log is dirty enough.
    #[serde(default = "default_cleaner_backoff")]
    pub log_cleaner_backoff_ms: u64,
    /// `offsets.topic.segment.bytes` (100 MiB): `__consumer_offsets`
    /// segments (and `__transaction_state`'s, whose own setting has the
    /// same default). Below it nothing of those topics is compacted.
    #[serde(default = "default_offsets_segment_bytes")]
    pub offsets_topic_segment_bytes: u64,
    /// Client quotas (`kafka-configs --alter --entity-type clients`): a
    /// byte rate per client id, or for every client id without its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<ClientQuota>,
    /// The network.
    #[serde(default)]
    pub network: NetworkConfig,
}

fn default_internal_replication() -> u32 {
    3
}
fn default_transaction_min_isr() -> u32 {
    2
}
fn default_producer_id_expiration() -> u64 {
    86_400_000
}
fn default_producer_id_expiration_check() -> u64 {
    600_000
}
fn default_cleaner_backoff() -> u64 {
    15_000
}
fn default_offsets_segment_bytes() -> u64 {
    100 * 1024 * 1024
}
fn default_group_consumer_heartbeat() -> u64 {
    5_000
}
fn default_consumer_max_session() -> u64 {
    60_000
}
fn default_group_consumer_max_heartbeat() -> u64 {
    15_000
}

fn default_brokers() -> u32 {
    3
}
fn default_controllers() -> u32 {
    3
}
fn default_offsets_partitions() -> u32 {
    crate::groups::OFFSETS_TOPIC_PARTITIONS_DEFAULT
}
fn default_lag() -> u64 {
    30_000
}
fn default_fetch_wait() -> u64 {
    500
}
fn default_heartbeat() -> u64 {
    2_000
}
fn default_imbalance_interval() -> u64 {
    300_000
}
fn default_session() -> u64 {
    9_000
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            brokers: default_brokers(),
            controllers: default_controllers(),
            topics: Vec::new(),
            producers: Vec::new(),
            consumers: Vec::new(),
            offsets_topic_partitions: default_offsets_partitions(),
            transaction_state_partitions: default_offsets_partitions(),
            offsets_topic_replication_factor: default_internal_replication(),
            transaction_state_log_replication_factor: default_internal_replication(),
            transaction_state_log_min_isr: default_transaction_min_isr(),
            replica_lag_time_max_ms: default_lag(),
            replica_fetch_wait_max_ms: default_fetch_wait(),
            broker_heartbeat_interval_ms: default_heartbeat(),
            broker_session_timeout_ms: default_session(),
            unclean_leader_election_enable: false,
            auto_leader_rebalance_enable: true,
            leader_imbalance_check_interval_ms: default_imbalance_interval(),
            unclean_leader_election_interval_ms: default_imbalance_interval(),
            eligible_leader_replicas_enable: true,
            transaction_version: crate::protocol::transactions::TransactionVersion::default(),
            transaction_partition_verification_enable: true,
            group_consumer_session_timeout_ms: default_consumer_session(),
            group_consumer_heartbeat_interval_ms: default_group_consumer_heartbeat(),
            group_consumer_min_session_timeout_ms: default_consumer_session(),
            group_consumer_max_session_timeout_ms: default_consumer_max_session(),
            group_consumer_min_heartbeat_interval_ms: default_group_consumer_heartbeat(),
            group_consumer_max_heartbeat_interval_ms: default_group_consumer_max_heartbeat(),
            log_flush_scheduler_interval_ms: None,
            log_retention_check_interval_ms: default_imbalance_interval(),
            log_cleaner_backoff_ms: default_cleaner_backoff(),
            producer_id_expiration_ms: default_producer_id_expiration(),
            producer_id_expiration_check_interval_ms: default_producer_id_expiration_check(),
            offsets_topic_segment_bytes: default_offsets_segment_bytes(),
            quotas: Vec::new(),
            network: NetworkConfig::default(),
        }
    }
}

impl ClusterConfig {
    /// Checks one consumer against this cluster: a known assignor and
    /// topics that exist.
    pub fn validate_consumer(&self, consumer: &ConsumerConfig) -> Result<(), String> {
        if crate::groups::assignors::Strategy::from_name(&consumer.assignor).is_none() {
            return Err(format!("unknown assignor {:?}", consumer.assignor));
        }
        if let Some(topic) = consumer
            .topics
            .iter()
            .find(|topic| !self.topics.iter().any(|known| &known.name == *topic))
        {
            return Err(format!("subscribes to unknown topic {topic}"));
        }
        // Zero intervals would schedule timers at the same instant forever.
        for (name, value) in [
            ("autoCommitIntervalMs", consumer.auto_commit_interval_ms),
            ("sessionTimeoutMs", consumer.session_timeout_ms),
            ("heartbeatIntervalMs", consumer.heartbeat_interval_ms),
            ("maxPollRecords", u64::from(consumer.max_poll_records)),
            ("maxPollIntervalMs", consumer.max_poll_interval_ms),
        ] {
            if value == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        // The broker refuses a JoinGroup whose session timeout is outside
        // group.min.session.timeout.ms (6000) .. group.max.session.timeout.ms
        // (1800000) with INVALID_SESSION_TIMEOUT.
        let session = consumer.session_timeout_ms;
        if !(6_000..=1_800_000).contains(&session) {
            return Err(format!(
                "sessionTimeoutMs must be between 6000 and 1800000 (the broker's group.min.session.timeout.ms and group.max.session.timeout.ms), got {session}"
            ));
        }
        // KafkaConsumer: "heartbeat.interval.ms must be lower than session.timeout.ms".
        if consumer.heartbeat_interval_ms >= session {
            return Err(format!(
                "heartbeatIntervalMs ({}) must be lower than sessionTimeoutMs ({session})",
                consumer.heartbeat_interval_ms
            ));
        }
        if consumer.consumer_protocol() {
            if let Some(assignor) = &consumer.group_remote_assignor {
                if !REMOTE_ASSIGNORS.contains(&assignor.as_str()) {
                    // The broker answers UNSUPPORTED_ASSIGNOR.
                    return Err(format!(
                        "groupRemoteAssignor {assignor:?} is not one of the broker's group.consumer.assignors (uniform, range)"
                    ));
                }
            }
            if consumer.group_instance_id.is_some() {
                return Err(
                    "groupInstanceId with groupProtocol \"consumer\": static membership is modelled with the classic protocol only"
                        .to_string(),
                );
            }
        } else if consumer.group_remote_assignor.is_some() {
            // `ConsumerConfig`: group.remote.assignor belongs to the consumer protocol.
            return Err("groupRemoteAssignor is only used with groupProtocol \"consumer\"".to_string());
        }
        // One group, one protocol (Kafka can migrate a group between the two,
        // KIP-848's online migration; that is not modelled).
        if let Some(other) = self
            .consumers
            .iter()
            .find(|other| other.group == consumer.group && other.group_protocol != consumer.group_protocol)
        {
            return Err(format!(
                "group {} already has members with groupProtocol \"{}\"; a group uses one protocol here (Kafka's online migration between the two is not modelled)",
                consumer.group, other.group_protocol
            ));
        }
        match (consumer.output_producer, consumer.commit_mode) {
            (Some(producer), mode) => {
                let Some(output) = self.producers.get(producer as usize) else {
                    return Err(format!(
                        "outputProducer {producer} is not one of the {} producers",
                        self.producers.len()
                    ));
                };
                if mode == CommitMode::Transactional && output.transactional_id.is_none() {
                    return Err(format!(
                        "commitMode \"transactional\" sends offsets in outputProducer {producer}'s transactions: that producer needs a transactionalId"
                    ));
                }
                if let Some(other) = self
                    .consumers
                    .iter()
                    .find(|other| !std::ptr::eq(*other, consumer) && other.output_producer == Some(producer))
                {
                    return Err(format!(
                        "outputProducer {producer} already belongs to a consumer of group {}: each app instance has its own producer",
                        other.group
                    ));
                }
            }
            (None, CommitMode::Transactional) => {
                return Err(
                    "commitMode \"transactional\" needs an outputProducer (the transactional producer its outputs and offsets go through)"
                        .to_string(),
                );
            }
            (None, _) => {}
        }
        let policy = &consumer.on_failure;
        if policy.retries > 100 {
            return Err(format!("onFailure.retries must be at most 100, got {}", policy.retries));
        }
        if policy.backoff_ms > 3_600_000 {
            return Err(format!(
                "onFailure.backoffMs must be at most 3600000 (an hour), got {}",
                policy.backoff_ms
            ));
        }
        match (policy.then, policy.dead_letter_producer) {
            (AfterFailures::DeadLetter, None) => {
                return Err("onFailure.then \"dead-letter\" needs a deadLetterProducer (the producer that writes to <topic>.DLQ)".to_string());
            }
            (AfterFailures::Stop, Some(_)) => {
                return Err("onFailure.deadLetterProducer is only used with then \"dead-letter\"".to_string());
            }
            (AfterFailures::DeadLetter, Some(producer)) => {
                let [topic] = consumer.topics.as_slice() else {
                    return Err("a dead letter queue here belongs to one topic: subscribe to one topic to use onFailure.then \"dead-letter\"".to_string());
                };
                let wanted = format!("{topic}.DLQ");
                match self.producers.get(producer as usize) {
                    None => {
                        return Err(format!(
                            "onFailure.deadLetterProducer {producer} is not one of the {} producers",
                            self.producers.len()
                        ))
                    }
                    Some(dlq) if dlq.topic != wanted => {
                        return Err(format!(
                        "onFailure.deadLetterProducer {producer} writes to {}, not to the dead letter topic {wanted}",
                        dlq.topic
                    ))
                    }
                    Some(_) => {}
                }
                if consumer.commit_mode == CommitMode::Transactional {
                    return Err("a dead letter queue with commitMode \"transactional\" is not modelled".to_string());
                }
            }
            (AfterFailures::Stop, None) => {}
        }
        if let Some(instance) = &consumer.group_instance_id {
            // `JoinGroupRequest.validateGroupInstanceId`.
            let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
            if instance.is_empty() || instance.len() > 249 || !instance.chars().all(legal) {
                return Err(format!(
                    "groupInstanceId {instance:?} must be 1 to 249 characters of a-z, A-Z, 0-9, '.', '_' or '-'"
                ));
            }
        }
        Ok(())
    }

    /// KIP-848's broker bounds (`GroupCoordinatorConfig`'s checks, which
    /// keep a broker from starting): the session timeout and heartbeat
    /// interval within their minimum and maximum, the heartbeat shorter
    /// than the session. A cluster that lowers them lowers the minimums
    /// too, as Kafka requires.
    fn validate_group_consumer_bounds(&self) -> Result<(), String> {
        let (session, heartbeat) = (
            self.group_consumer_session_timeout_ms,
            self.group_consumer_heartbeat_interval_ms,
        );
        let rules = [
            (
                self.group_consumer_max_heartbeat_interval_ms >= self.group_consumer_min_heartbeat_interval_ms,
                "group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                heartbeat >= self.group_consumer_min_heartbeat_interval_ms,
                "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                heartbeat <= self.group_consumer_max_heartbeat_interval_ms,
                "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms",
            ),
            (
                self.group_consumer_max_session_timeout_ms >= self.group_consumer_min_session_timeout_ms,
                "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                session >= self.group_consumer_min_session_timeout_ms,
                "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                session <= self.group_consumer_max_session_timeout_ms,
                "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
            ),
            (
                heartbeat < session,
                "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
            ),
        ];
        match rules.iter().find(|(holds, _)| !holds) {
            Some((_, message)) => Err(format!(
                "{message} (session {session} ms, heartbeat {heartbeat} ms; bounds: session {}..={} ms, heartbeat {}..={} ms)",
                self.group_consumer_min_session_timeout_ms,
                self.group_consumer_max_session_timeout_ms,
                self.group_consumer_min_heartbeat_interval_ms,
                self.group_consumer_max_heartbeat_interval_ms
            )),
            None => Ok(()),
        }
    }

    /// Checks what Kafka would refuse, in one sentence.
    pub fn validate(&self) -> Result<(), String> {
        use crate::limits::{
            at_most, MAX_BROKERS, MAX_CLUSTER_PARTITIONS, MAX_CONSUMERS, MAX_CONTROLLERS, MAX_PARTITIONS_PER_TOPIC,
            MAX_PRODUCERS, MAX_TOPICS,
        };
        if self.brokers == 0 || self.brokers > MAX_BROKERS {
            return Err(format!(
                "brokers must be between 1 and {MAX_BROKERS}, got {}",
                self.brokers
            ));
        }
        crate::protocol::transactions::TransactionVersion::checked(self.transaction_version.0)?;
        self.validate_group_consumer_bounds()?;
        let limit = |result: Result<(), crate::limits::LimitExceeded>| result.map_err(|error| error.to_string());
        limit(at_most("topics", self.topics.len() as u64, MAX_TOPICS as u64))?;
        limit(at_most("producers", self.producers.len() as u64, MAX_PRODUCERS as u64))?;
        limit(at_most("consumers", self.consumers.len() as u64, MAX_CONSUMERS as u64))?;
        let partitions: u64 = self.topics.iter().map(|topic| u64::from(topic.partitions)).sum::<u64>()
            + u64::from(self.offsets_topic_partitions)
            + if self
                .producers
                .iter()
                .any(|producer| producer.transactional_id.is_some())
            {
                u64::from(self.transaction_state_partitions)
            } else {
                0
            };
        limit(at_most(
            "partitions in the cluster (__consumer_offsets and __transaction_state included)",
            partitions,
            MAX_CLUSTER_PARTITIONS,
        ))?;
        for (index, topic) in self.topics.iter().enumerate() {
            if let Some(reason) = crate::protocol::topic_partition::invalid_topic_name(&topic.name) {
                return Err(format!("topic {index}: {reason}"));
            }
            // `ReplicationControlManager#validateNewTopicNames`: names that
            // differ only by '.' and '_' collide (metrics cannot tell them
            // apart); equal names are one topic created twice.
            let unified = |name: &str| name.replace('.', "_");
            if let Some(earlier) = self.topics[..index]
                .iter()
                .find(|earlier| unified(&earlier.name) == unified(&topic.name))
            {
                return Err(if earlier.name == topic.name {
                    format!("topic {} is listed twice", topic.name)
                } else {
                    format!("Topic '{}' collides with existing topic: {}", topic.name, earlier.name)
                });
            }
            if topic.partitions == 0 || topic.partitions > MAX_PARTITIONS_PER_TOPIC {
                return Err(format!(
                    "topic {}: partitions must be between 1 and {MAX_PARTITIONS_PER_TOPIC}",
                    topic.name
                ));
            }
            if topic.replication_factor == 0 || topic.replication_factor > self.brokers {
                return Err(format!(
                    "topic {}: replication factor {} must be between 1 and the number of brokers ({})",
                    topic.name, topic.replication_factor, self.brokers
                ));
            }
            if topic.min_insync_replicas == 0 {
                return Err(format!("topic {}: min.insync.replicas must be at least 1", topic.name));
            }
            topic.validate_storage()?;
        }
        if self.controllers == 0 || self.controllers > MAX_CONTROLLERS {
            return Err(format!(
                "controllers must be between 1 and {MAX_CONTROLLERS}, got {}",
                self.controllers
            ));
        }
        if self.leader_imbalance_check_interval_ms == 0 {
            return Err("leaderImbalanceCheckIntervalMs must be at least 1".to_string());
        }
        for quota in &self.quotas {
            quota.validate()?;
        }
        if self.log_cleaner_backoff_ms == 0 {
            return Err("logCleanerBackoffMs must be at least 1".to_string());
        }
        if self.offsets_topic_segment_bytes < 14 {
            return Err("offsetsTopicSegmentBytes must be at least 14".to_string());
        }
        if self.log_retention_check_interval_ms == 0 {
            return Err("logRetentionCheckIntervalMs must be at least 1".to_string());
        }
        if self.log_flush_scheduler_interval_ms == Some(0) {
            return Err("logFlushSchedulerIntervalMs must be at least 1".to_string());
        }
        if self.unclean_leader_election_interval_ms == 0 {
            return Err("uncleanLeaderElectionIntervalMs must be at least 1".to_string());
        }
        // The broker's bounds (group.consumer.min/max.session.timeout.ms and
        // heartbeat.interval.ms) are widened here so stories can be short.
        let session = self.group_consumer_session_timeout_ms;
        if !(6_000..=1_800_000).contains(&session) {
            return Err(format!(
                "groupConsumerSessionTimeoutMs must be between 6000 and 1800000, got {session}"
            ));
        }
        let heartbeat = self.group_consumer_heartbeat_interval_ms;
        if heartbeat == 0 || heartbeat >= session {
            return Err(format!(
                "groupConsumerHeartbeatIntervalMs ({heartbeat}) must be at least 1 and lower than groupConsumerSessionTimeoutMs ({session})"
            ));
        }
        if self.offsets_topic_partitions == 0 || self.offsets_topic_partitions > 1_000 {
            return Err("offsetsTopicPartitions must be between 1 and 1000".to_string());
        }
        if self.transaction_state_partitions == 0 || self.transaction_state_partitions > 1_000 {
            return Err("transactionStatePartitions must be between 1 and 1000".to_string());
        }
        for (index, consumer) in self.consumers.iter().enumerate() {
            self.validate_consumer(consumer)
                .map_err(|message| format!("consumer {index}: {message}"))?;
        }
        for (index, producer) in self.producers.iter().enumerate() {
            if !self.topics.iter().any(|topic| topic.name == producer.topic) {
                return Err(format!("producer {index} writes to unknown topic {}", producer.topic));
            }
            if producer.batch_size == 0 {
                return Err(format!("producer {index}: batch.size must be at least 1"));
            }
            producer
                .validate()
                .map_err(|message| format!("producer {index}: {message}"))?;
        }
        Ok(())
    }
}

/// A user action or fault, applied at a scheduled time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum Input {
    /// A producer sends `count` records (key as given; `None` = no key).
    #[serde(rename_all = "camelCase")]
    Produce {
        /// Which producer.
        producer: u32,
        /// The key of every record, if any.
        #[serde(default)]
        key: Option<String>,
        /// How many records.
        #[serde(default = "one")]
        count: u32,
        /// Bytes per record.
        #[serde(default = "default_record_bytes")]
        bytes: u32,
    },
    /// A broker crashes (its log survives on disk).
    KillBroker {
        /// Which broker.
        broker: BrokerId,
    },
    /// Brokers lose power at once (one, a rack, every broker): each one's
    /// process dies if it runs, and each of its logs loses the records past
    /// its recovery point, which were in the page cache only. A broker
    /// already down loses them too (the operating system had not written
    /// them). Restart them with [`Input::RestartBroker`].
    PowerLoss {
        /// Which brokers.
        brokers: Vec<BrokerId>,
    },
    /// A crashed broker starts again.
    RestartBroker {
        /// Which broker.
        broker: BrokerId,
    },
    /// A graceful stop: a controlled shutdown, not a crash.
    StopBroker {
        /// Which broker.
        broker: BrokerId,
    },
    /// A broker stops responding for a while (a long GC pause).
    #[serde(rename_all = "camelCase")]
    PauseBroker {
        /// Which broker.
        broker: BrokerId,
        /// For how long.
        duration_ms: u64,
    },
    /// Messages between two nodes are lost in both directions.
    CutLink {
        /// One end.
        a: NodeId,
        /// The other end.
        b: NodeId,
    },
    /// Restores a cut link.
    HealLink {
        /// One end.
        a: NodeId,
        /// The other end.
        b: NodeId,
    },
    /// Splits the network: nodes in `side` reach only each other.
    Partition {
        /// One side of the split.
        side: Vec<NodeId>,
    },
    /// Removes every cut and split.
    HealNetwork,
    /// Adds latency to every message to or from a node (a slow follower).
    #[serde(rename_all = "camelCase")]
    SlowNode {
        /// Which node.
        node: NodeId,
        /// Extra one-way latency.
        extra_latency_ms: u64,
    },
    /// The next produce response to this producer is lost on the way back:
    /// the broker has written the records, the producer never hears so. Its
    /// connection breaks, and it sends the batch again (the case
    /// `enable.idempotence` is for).
    LoseProduceResponse {
        /// Which producer.
        producer: u32,
    },
    /// The next produce request from this producer reaches its broker and
    /// then waits in the broker's request queue for `delayMs` before a
    /// request handler takes it (a stalled handler thread). The producer
    /// may give up on it meanwhile (`request.timeout.ms`); Kafka's broker
    /// still handles a request it has read. The late write KIP-890 is
    /// about.
    #[serde(rename_all = "camelCase")]
    StallProduce {
        /// Which producer.
        producer: u32,
        /// How long it waits.
        delay_ms: u64,
    },
    /// The next `EndTxn` request from this producer reaches its
    /// transaction coordinator and then waits in the broker's request
    /// queue for `delayMs` before a handler takes it. The producer gives up
    /// on it (`request.timeout.ms`) and sends it again; the late one is
    /// still handled, on whatever transaction is open by then: the delayed
    /// `EndTxn` of KAFKA-17754, which transaction version 2 fences.
    #[serde(rename_all = "camelCase")]
    StallEndTxn {
        /// Which producer.
        producer: u32,
        /// How long it waits.
        delay_ms: u64,
    },
    /// A transactional producer commits its open transaction
    /// (`commitTransaction()`: it flushes, then sends `EndTxn`). Ignored by
    /// other producers and when nothing is open.
    CommitTransaction {
        /// Which producer.
        producer: u32,
    },
    /// A transactional producer aborts its open transaction
    /// (`abortTransaction()`).
    AbortTransaction {
        /// Which producer.
        producer: u32,
    },
    /// The producer's application starts it again as a new instance
    /// (what a supervisor does after a fatal error such as
    /// `PRODUCER_FENCED`): what the old one buffered or had in flight is
    /// lost, and a transactional one calls `initTransactions()` first,
    /// which fences the old instance and aborts what it left open.
    RestartProducer {
        /// Which producer.
        producer: u32,
    },
    /// From now on every handler fails on the records of `topic` that
    /// match (a poison record: one it cannot deserialize or process): by
    /// key, or by partition and offset; with neither, every record of the
    /// topic (or of the partition) does. Each consumer's `onFailure`
    /// policy decides what happens then.
    PoisonRecords {
        /// The topic.
        topic: String,
        /// Records with this key.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
        /// Records of this partition.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        partition: Option<u32>,
        /// The record at this offset (with `partition`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset: Option<u64>,
    },
    /// Changes the chance of losing any message.
    #[serde(rename_all = "camelCase")]
    DropMessages {
        /// Parts per million.
        per_million: u32,
    },
    /// A controller crashes (its metadata log survives).
    KillController {
        /// Which controller.
        controller: u32,
    },
    /// A crashed controller starts again.
    RestartController {
        /// Which controller.
        controller: u32,
    },
    /// Starts (or restarts) a consumer; it joins its group.
    StartConsumer {
        /// Which consumer.
        consumer: u32,
    },
    /// A producer sends a tombstone for `key`: a record with a null value,
    /// which a compacted topic's cleaner later turns into "no such key".
    ProduceTombstone {
        /// Which producer.
        producer: u32,
        /// The key to delete.
        key: String,
    },
    /// A consumer closes cleanly: it commits and leaves its group.
    StopConsumer {
        /// Which consumer.
        consumer: u32,
    },
    /// A consumer's process dies: no goodbye, the group notices after
    /// `session.timeout.ms`.
    CrashConsumer {
        /// Which consumer.
        consumer: u32,
    },
    /// A consumer's process stops for a while (a long garbage-collection
    /// pause): no polls, no heartbeats, nothing read from its sockets.
    #[serde(rename_all = "camelCase")]
    PauseConsumer {
        /// Which consumer.
        consumer: u32,
        /// For how long.
        duration_ms: u64,
    },
    /// A new consumer process starts (its id is the next free index); it
    /// joins its group. Ignored when its assignor or a topic is unknown.
    AddConsumer {
        /// The new consumer's configuration.
        consumer: ConsumerConfig,
    },
    /// An operator's `kafka-leader-election` (the `ElectLeaders` admin
    /// request, which the active controller decides): a preferred election
    /// returns leadership to each partition's first replica; an unclean
    /// one gives a leaderless partition any live replica, even outside the
    /// ISR and ELR (data may be lost), whatever
    /// `unclean.leader.election.enable` says.
    #[serde(rename_all = "camelCase")]
    ElectLeaders {
        /// `--election-type`.
        election_type: ElectionType,
        /// The partitions; none means `--all-topic-partitions`.
        #[serde(default)]
        partitions: Vec<PartitionRef>,
    },
    /// An operator's `kafka-topics --alter --topic T --partitions N` (the
    /// `CreatePartitions` admin request, which the active controller
    /// decides, `ReplicationControlManager#createPartitions`): the topic
    /// grows to `count` partitions, placed like a new topic's with its
    /// replication factor. Partitions are never removed; clients learn of
    /// the new ones at their next metadata refresh (`metadata.max.age.ms`).
    CreatePartitions {
        /// The topic.
        topic: String,
        /// Its new partition count.
        count: u32,
    },
    /// Changes a knob mid-run.
    SetConfig(ConfigChange),
}

impl Input {
    /// The topic names this input carries, each checked against Kafka's
    /// rule ([`crate::protocol::topic_partition::invalid_topic_name`]):
    /// `Err` names the first that breaks it. Every entry point (scenario
    /// files, links, the JavaScript API) asks before scheduling, so no name
    /// Kafka would refuse reaches a trace, a caption or an export.
    pub fn check_topic_names(&self) -> Result<(), String> {
        let names: Vec<&str> = match self {
            Input::PoisonRecords { topic, .. } | Input::CreatePartitions { topic, .. } => vec![topic],
            Input::AddConsumer { consumer } => consumer.topics.iter().map(String::as_str).collect(),
            Input::ElectLeaders { partitions, .. } => {
                partitions.iter().map(|partition| partition.topic.as_str()).collect()
            }
            Input::SetConfig(
                ConfigChange::MinInsyncReplicas { topic, .. }
                | ConfigChange::TopicStorage { topic, .. }
                | ConfigChange::CleanupPolicy { topic, .. }
                | ConfigChange::MinCleanableDirtyRatio { topic, .. },
            ) => vec![topic],
            _ => Vec::new(),
        };
        names
            .into_iter()
            .find_map(crate::protocol::topic_partition::invalid_topic_name)
            .map_or(Ok(()), Err)
    }

    /// The length of time an input asks for, by its field's name (a
    /// pause, a slow link), which kafkascope bounds like the run itself.
    pub fn duration(&self) -> Option<(&'static str, u64)> {
        match self {
            Input::PauseBroker { duration_ms, .. } | Input::PauseConsumer { duration_ms, .. } => {
                Some(("durationMs", *duration_ms))
            }
            Input::SlowNode { extra_latency_ms, .. } => Some(("extraLatencyMs", *extra_latency_ms)),
            Input::StallProduce { delay_ms, .. } | Input::StallEndTxn { delay_ms, .. } => Some(("delayMs", *delay_ms)),
            _ => None,
        }
    }
}

/// A partition named in an input.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PartitionRef {
    /// The topic.
    pub topic: String,
    /// The partition's index.
    pub partition: u32,
}

fn default_record_bytes() -> u32 {
    100
}

/// A knob changed mid-run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "knob", rename_all = "camelCase", deny_unknown_fields)]
pub enum ConfigChange {
    /// A producer's `acks`.
    Acks {
        /// Which producer.
        producer: u32,
        /// The new value.
        acks: Acks,
    },
    /// A topic's `min.insync.replicas`.
    #[serde(rename_all = "camelCase")]
    MinInsyncReplicas {
        /// Which topic.
        topic: String,
        /// The new value.
        value: u32,
    },
    /// `unclean.leader.election.enable`.
    UncleanLeaderElection {
        /// The new value.
        enable: bool,
    },
    /// `transaction.version`, with `kafka-features upgrade` or `downgrade`:
    /// the active controller writes a `FeatureLevelRecord`, brokers apply
    /// it, and each transactional producer switches protocol at its next
    /// transaction boundary (never in the middle of a transaction).
    TransactionVersion {
        /// The new level (0, 1 or 2).
        level: u8,
    },
    /// `transaction.partition.verification.enable` on every broker (a
    /// dynamic broker setting).
    TransactionPartitionVerification {
        /// The new value.
        enable: bool,
    },
    /// `replica.lag.time.max.ms`.
    #[serde(rename_all = "camelCase")]
    ReplicaLagTimeMaxMs {
        /// The new value.
        value: u64,
    },
    /// A producer's `linger.ms` (batches already open keep their creation
    /// time; the new value decides when they are ready).
    LingerMs {
        /// Which producer.
        producer: u32,
        /// The new value.
        value: u64,
    },
    /// A producer's `enable.idempotence`. Kafka fixes it when the producer
    /// is created; here it switches between sends: turned on, the producer
    /// gets a new producer id before its next batch (as a new producer
    /// instance would); turned off, new batches carry no sequence. Refused
    /// (see [`crate::sim::Simulation::check_config_change`]) when on with
    /// `acks` other than all.
    EnableIdempotence {
        /// Which producer.
        producer: u32,
        /// On or off.
        enable: bool,
    },
    /// How long a consumer's handler takes per record (from its next poll).
    ProcessingMsPerRecord {
        /// Which consumer.
        consumer: u32,
        /// The new value.
        value: u64,
    },
    /// When a consumer's application commits (from its next poll).
    CommitMode {
        /// Which consumer.
        consumer: u32,
        /// The new mode.
        mode: CommitMode,
    },
    /// Whether a consumer's handler skips records it already processed.
    IdempotentHandler {
        /// Which consumer.
        consumer: u32,
        /// On or off.
        enable: bool,
    },
    /// A consumer's `auto.offset.reset` (the application restarted with
    /// it; the change is seen at the next reset).
    AutoOffsetReset {
        /// Which consumer.
        consumer: u32,
        /// The new policy.
        reset: OffsetReset,
    },
    /// One of a topic's storage settings (`kafka-configs --alter
    /// --entity-type topics --add-config retention.ms=60000`): every
    /// replica's log takes it at once (`LogManager#updateTopicConfig`);
    /// segments already written keep their size.
    #[serde(rename_all = "camelCase")]
    TopicStorage {
        /// Which topic.
        topic: String,
        /// Which setting.
        setting: StorageSetting,
        /// The new value.
        value: i64,
    },
    /// A topic's `cleanup.policy` (`delete`, `compact`, `compact,delete`):
    /// the retention check and the cleaner take it on their next pass.
    #[serde(rename_all = "camelCase")]
    CleanupPolicy {
        /// Which topic.
        topic: String,
        /// The new policy.
        policy: crate::storage::CleanupPolicy,
    },
    /// A topic's `min.cleanable.dirty.ratio` (0 to 1).
    #[serde(rename_all = "camelCase")]
    MinCleanableDirtyRatio {
        /// Which topic.
        topic: String,
        /// The new ratio.
        ratio: Ratio,
    },
    /// A client quota (`kafka-configs --alter --entity-type clients
    /// --entity-name ID` or `--entity-default`): replaces the quota of
    /// that client id (none: the default); a rate left out is removed.
    /// Brokers apply it to the next request they measure.
    Quota(ClientQuota),
}

/// One client quota (`ClientQuotaManager`): the bytes a second each broker
/// lets a client id produce before it throttles it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientQuota {
    /// The client id it applies to; none: every client id without a
    /// quota of its own (`<default>`).
    #[serde(default)]
    pub client_id: Option<String>,
    /// `producer_byte_rate`, bytes a second per broker.
    #[serde(default)]
    pub producer_byte_rate: Option<u64>,
    /// `consumer_byte_rate`, bytes a second per broker (what its fetch
    /// answers carry).
    #[serde(default)]
    pub consumer_byte_rate: Option<u64>,
}

/// Which of a client's byte rates a quota limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum QuotaType {
    /// `producer_byte_rate`: the bytes of its produce requests.
    #[serde(rename = "producer_byte_rate")]
    Produce,
    /// `consumer_byte_rate`: the bytes of its fetch answers.
    #[serde(rename = "consumer_byte_rate")]
    Fetch,
}

impl std::fmt::Display for QuotaType {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            QuotaType::Produce => "producer_byte_rate",
            QuotaType::Fetch => "consumer_byte_rate",
        })
    }
}

impl ClientQuota {
    /// Rates are at least 1 byte a second.
    pub fn validate(&self) -> Result<(), String> {
        for kind in [QuotaType::Produce, QuotaType::Fetch] {
            if self.rate(kind) == Some(0) {
                return Err(format!("{kind} must be at least 1 byte a second"));
            }
        }
        Ok(())
    }

    fn rate(&self, kind: QuotaType) -> Option<u64> {
        match kind {
            QuotaType::Produce => self.producer_byte_rate,
            QuotaType::Fetch => self.consumer_byte_rate,
        }
    }
}

impl ClusterConfig {
    /// Replaces the quota of `quota.client_id` (none: the default); one
    /// with neither rate removes it.
    pub fn set_quota(&mut self, quota: ClientQuota) {
        self.quotas.retain(|known| known.client_id != quota.client_id);
        if quota.producer_byte_rate.is_some() || quota.consumer_byte_rate.is_some() {
            self.quotas.push(quota);
        }
    }

    /// A client id's byte-rate quota of one kind: its own, else the
    /// default one (the most specific match, as `ClientQuotaManager`
    /// resolves it, kind by kind).
    pub fn client_quota(&self, client_id: &str, kind: QuotaType) -> Option<u64> {
        let own = self
            .quotas
            .iter()
            .find(|quota| quota.client_id.as_deref() == Some(client_id))
            .and_then(|quota| quota.rate(kind));
        own.or_else(|| {
            self.quotas
                .iter()
                .find(|quota| quota.client_id.is_none())
                .and_then(|quota| quota.rate(kind))
        })
    }
}

/// A topic storage setting a run can change, with Kafka's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum StorageSetting {
    /// `retention.ms` (-1: forever).
    #[serde(rename = "retention.ms")]
    RetentionMs,
    /// `retention.bytes` (-1: no limit).
    #[serde(rename = "retention.bytes")]
    RetentionBytes,
    /// `segment.bytes` (at least 1 MiB).
    #[serde(rename = "segment.bytes")]
    SegmentBytes,
    /// `internal.segment.bytes`: Kafka's test-only override of
    /// `segment.bytes`; -1 removes it.
    #[serde(rename = "internal.segment.bytes")]
    InternalSegmentBytes,
    /// `segment.ms`.
    #[serde(rename = "segment.ms")]
    SegmentMs,
    /// `min.compaction.lag.ms`: how old a record must be before the
    /// cleaner may compact it away.
    #[serde(rename = "min.compaction.lag.ms")]
    MinCompactionLagMs,
    /// `delete.retention.ms`: how long a tombstone stays after the first
    /// cleaning that saw it.
    #[serde(rename = "delete.retention.ms")]
    DeleteRetentionMs,
    /// `flush.messages`: the log is synced to disk once this many records
    /// are not (-1: not set, `log.flush.interval.messages`, by default
    /// never).
    #[serde(rename = "flush.messages")]
    FlushMessages,
}

impl std::fmt::Display for StorageSetting {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            StorageSetting::RetentionMs => "retention.ms",
            StorageSetting::RetentionBytes => "retention.bytes",
            StorageSetting::SegmentBytes => "segment.bytes",
            StorageSetting::InternalSegmentBytes => "internal.segment.bytes",
            StorageSetting::SegmentMs => "segment.ms",
            StorageSetting::MinCompactionLagMs => "min.compaction.lag.ms",
            StorageSetting::DeleteRetentionMs => "delete.retention.ms",
            StorageSetting::FlushMessages => "flush.messages",
        })
    }
}

impl TopicConfig {
    /// The topic with one storage setting changed, checked against
    /// Kafka's bounds.
    pub fn with_storage(&self, setting: StorageSetting, value: i64) -> Result<TopicConfig, String> {
        let mut changed = self.clone();
        let positive =
            |value: i64| u64::try_from(value).map_err(|_| format!("{setting} must not be negative, got {value}"));
        match setting {
            StorageSetting::RetentionMs => changed.retention_ms = value,
            StorageSetting::RetentionBytes => changed.retention_bytes = value,
            StorageSetting::SegmentBytes => changed.segment_bytes = positive(value)?,
            StorageSetting::InternalSegmentBytes => {
                changed.internal_segment_bytes = if value == -1 { None } else { Some(positive(value)?) }
            }
            StorageSetting::SegmentMs => changed.segment_ms = positive(value)?,
            StorageSetting::MinCompactionLagMs => changed.min_compaction_lag_ms = positive(value)?,
            StorageSetting::DeleteRetentionMs => changed.delete_retention_ms = positive(value)?,
            StorageSetting::FlushMessages => {
                changed.flush_messages = if value == -1 { None } else { Some(positive(value)?) }
            }
        }
        changed.validate_storage()?;
        Ok(changed)
    }
}

/// An input and when it happens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduledInput {
    /// Virtual time of the input.
    pub at_ms: Time,
    /// The input.
    pub input: Input,
}
