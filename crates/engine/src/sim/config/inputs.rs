//! The inputs a run takes (`Input`): user actions and faults, the
//! configuration changes a run can make (`ConfigChange`), and client
//! quotas.

use super::*;

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

pub(super) fn default_record_bytes() -> u32 {
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
