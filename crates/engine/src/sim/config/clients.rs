//! The clients' configurations: producers (`ProducerConfig`) and
//! consumers (`ConsumerConfig`: group protocol, commits, offsets reset,
//! what to do with records that keep failing), with Kafka's defaults.

use super::*;

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
pub(super) fn is_default_metadata_max_age(value: &u64) -> bool {
    *value == default_metadata_max_age()
}

pub(super) fn default_transaction_timeout() -> u64 {
    60_000
}
pub(super) fn is_default_transaction_timeout(value: &u64) -> bool {
    *value == default_transaction_timeout()
}

pub(super) fn default_max_in_flight() -> u32 {
    5
}
pub(super) fn is_default_max_in_flight(value: &u32) -> bool {
    *value == default_max_in_flight()
}

/// `ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION_FOR_IDEMPOTENCE`.
pub(super) const MAX_IN_FLIGHT_FOR_IDEMPOTENCE: u32 = 5;

pub(super) fn default_acks() -> Acks {
    Acks::All
}
pub(super) fn default_batch_size() -> u32 {
    16_384
}
pub(super) fn default_true() -> bool {
    true
}
pub(super) fn default_request_timeout() -> u64 {
    30_000
}
pub(super) fn default_delivery_timeout() -> u64 {
    120_000
}
pub(super) fn default_linger() -> u64 {
    5
}
pub(super) fn default_retry_backoff() -> u64 {
    100
}
pub(super) fn default_null_key() -> NullKeyStrategy {
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

pub(super) fn is_read_uncommitted(level: &IsolationLevel) -> bool {
    *level == IsolationLevel::ReadUncommitted
}

pub(super) fn is_false(value: &bool) -> bool {
    !*value
}

pub(super) fn is_zero(value: &u64) -> bool {
    *value == 0
}
pub(super) fn default_max_poll_records() -> u32 {
    500
}
pub(super) fn default_max_poll_interval() -> u64 {
    300_000
}

pub(super) fn default_assignor() -> String {
    "range".to_string()
}
pub(super) fn default_reset() -> OffsetReset {
    OffsetReset::Latest
}
pub(super) fn default_commit_interval() -> u64 {
    5_000
}
pub(super) fn default_consumer_session() -> u64 {
    45_000
}
pub(super) fn default_consumer_heartbeat() -> u64 {
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
