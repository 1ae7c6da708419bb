//! A plain-data picture of a simulation at one moment, for the web app's
//! view models and the JavaScript API: what each broker holds, who leads
//! what, the controllers, the groups. Nothing here is needed to run the
//! simulation; it only reads it.

use serde::Serialize;

use crate::controller::partition_change::LeaderRecovery;
use crate::protocol::{BrokerId, Offset, TopicPartition};
use crate::replication::high_watermark::Acks;

/// How many of a producer's latest records the view lists.
const RECENT_RECORDS: usize = 8;

use super::broker::BrokerStatus;
pub use super::consumer::ConsumerPhase;
pub use super::quorum::Role;
use super::trace::{CandidacyReason, ChangeReason, RebalanceReason, TraceKind};
use super::types::{ErrorCode, MessageName, NodeId};
use super::Event;
use super::Simulation;

/// The whole cluster at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterView {
    /// Virtual time.
    pub time_ms: u64,
    /// Events processed.
    pub events: u64,
    /// The brokers.
    pub brokers: Vec<BrokerView>,
    /// Every partition as the committed metadata has it.
    pub partitions: Vec<PartitionView>,
    /// The controllers.
    pub controllers: Vec<ControllerView>,
    /// The consumers.
    pub consumers: Vec<ConsumerView>,
    /// The producers.
    pub producers: Vec<ProducerView>,
    /// Messages on the network now, oldest first.
    pub in_flight: Vec<MessageView>,
    /// The latest notable events.
    pub highlights: Highlights,
    /// The cluster's finalized features and transaction settings.
    pub features: FeaturesView,
}

/// What `kafka-features describe` shows, and the broker setting that goes
/// with transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeaturesView {
    /// The finalized `transaction.version` in the committed metadata.
    pub transaction_version: u8,
    /// `transaction.partition.verification.enable` on the brokers.
    pub transaction_partition_verification: bool,
}

/// A message travelling between two nodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageView {
    /// Sender (JSON: `broker-1`, `producer-0`, ...).
    #[serde(serialize_with = "as_text")]
    pub from: NodeId,
    /// Receiver.
    #[serde(serialize_with = "as_text")]
    pub to: NodeId,
    /// The request or response name (`Produce`, `FetchResponse`, ...).
    pub name: MessageName,
    /// What it carries, in a few words.
    pub summary: String,
    /// When it left.
    pub sent_ms: u64,
    /// When it arrives.
    pub arrives_ms: u64,
}

/// One producer client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerView {
    /// Its index.
    pub id: u32,
    /// The topic it writes.
    pub topic: String,
    /// `0`, `1` or `all`.
    pub acks: Acks,
    /// `linger.ms`.
    pub linger_ms: u64,
    /// `batch.size` in bytes.
    pub batch_size: u32,
    /// Records waiting for metadata (not yet partitioned).
    pub waiting: usize,
    /// Records in the accumulator's batches, not yet sent.
    pub buffered_records: usize,
    /// Bytes in those batches.
    pub buffered_bytes: u64,
    /// Batches in the accumulator.
    pub buffered_batches: usize,
    /// Produce requests awaiting an answer.
    pub in_flight: usize,
    /// `max.in.flight.requests.per.connection`: the most per broker.
    pub max_in_flight_per_connection: u32,
    /// Whether it is idempotent.
    pub idempotent: bool,
    /// The producer id `InitProducerId` gave it, once it has one.
    pub producer_id: Option<u64>,
    /// Its producer epoch (bumped locally when a sequenced batch fails, KIP-360).
    pub producer_epoch: u16,
    /// A transactional producer's state: its `transactional.id`, where it
    /// is, the partitions of its open transaction, and its transactions
    /// committed and aborted so far.
    pub transaction: Option<TransactionView>,
    /// Records it sent, acknowledged, and failed for good.
    pub sent: u64,
    /// Acknowledged records.
    pub acknowledged: u64,
    /// Records whose delivery failed for good.
    pub failed: u64,
    /// The last few records: key (if any) and the partition chosen.
    pub recent: Vec<RecentRecord>,
    /// The last produce error, if any.
    pub last_error: Option<ProduceErrorNote>,
    /// Until when a broker throttles it (over its produce quota), if one
    /// does now.
    pub throttled_until: Option<u64>,
}

/// A record the producer sent recently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecentRecord {
    /// Its key.
    pub key: Option<String>,
    /// The partition number, once chosen.
    pub partition: Option<u32>,
    /// Acknowledged (with its offset, if the acks setting gives one).
    pub acknowledged: bool,
}

/// A produce attempt that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProduceErrorNote {
    /// When.
    pub time_ms: u64,
    /// `topic-partition`.
    pub partition: String,
    /// Kafka's error (JSON: its name, `NOT_ENOUGH_REPLICAS`).
    pub error: ErrorCode,
    /// Whether the producer retries.
    pub will_retry: bool,
}

/// A leader election the controller committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ElectionNote {
    /// When.
    pub time_ms: u64,
    /// `topic-partition`.
    pub partition: String,
    /// The new leader (none: offline).
    pub leader: Option<BrokerId>,
    /// The new leader epoch.
    pub leader_epoch: u32,
    /// From outside the ISR.
    pub unclean: bool,
    /// Why the controller elected.
    pub reason: ChangeReason,
}

/// The latest notable events, updated as they are traced (so the view
/// never scans the trace).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Highlights {
    /// The last partition leader election.
    pub last_leader_election: Option<ElectionNote>,
    /// The last controller election: when, the winner, its epoch.
    pub last_controller_election: Option<(u64, u32, u32)>,
    /// Why the last controller candidacy started.
    pub last_candidacy_reason: Option<CandidacyReason>,
    /// Each producer's last error (shown in [`ProducerView::last_error`]).
    #[serde(skip)]
    pub producer_errors: std::collections::BTreeMap<u32, ProduceErrorNote>,
    /// Each group's last rebalance: when, generation, why.
    pub rebalances: std::collections::BTreeMap<String, (u64, u32, RebalanceReason)>,
    /// Per producer: records sent, acknowledged, failed for good (shown
    /// in [`ProducerView`]).
    #[serde(skip)]
    pub tally: std::collections::BTreeMap<u32, [u64; 3]>,
}

impl Highlights {
    /// Takes note of a traced event.
    pub(crate) fn note(&mut self, time: u64, kind: &TraceKind) {
        match kind {
            TraceKind::LeaderElected {
                partition,
                leader,
                leader_epoch,
                unclean,
                reason,
                ..
            } => {
                self.last_leader_election = Some(ElectionNote {
                    time_ms: time,
                    partition: partition.to_string(),
                    leader: *leader,
                    leader_epoch: *leader_epoch,
                    unclean: *unclean,
                    reason: *reason,
                })
            }
            TraceKind::ControllerElected { controller, epoch, .. } => {
                self.last_controller_election = Some((time, *controller, *epoch))
            }
            TraceKind::ControllerElection { reason, .. } => self.last_candidacy_reason = Some(*reason),
            TraceKind::ProduceFailed {
                producer,
                partition,
                error,
                will_retry,
                ..
            } => {
                self.producer_errors.insert(
                    *producer,
                    ProduceErrorNote {
                        time_ms: time,
                        partition: partition.to_string(),
                        error: *error,
                        will_retry: *will_retry,
                    },
                );
            }
            TraceKind::GroupRebalanced {
                group,
                generation,
                reason,
                ..
            }
            | TraceKind::TargetAssignment {
                group,
                epoch: generation,
                reason,
                ..
            } => {
                self.rebalances
                    .insert(group.clone(), (time, *generation, reason.clone()));
            }
            _ => {}
        }
    }
}

/// Whether Kafka keeps the topic for itself (`Topic#isInternal`: the
/// group coordinator's `__consumer_offsets`, the transaction
/// coordinator's `__transaction_state`).
pub fn is_internal(topic: &str) -> bool {
    topic == "__consumer_offsets" || topic == "__transaction_state"
}

/// Kafka's name for an error code (`NOT_ENOUGH_REPLICAS`).
pub fn error_name(error: ErrorCode) -> String {
    error.to_string()
}

/// Whether a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessStatus {
    /// It runs.
    Running,
    /// It crashed (its disk survives).
    Dead,
    /// It is stopped in a long pause (a GC pause).
    Paused,
}

impl std::fmt::Display for ProcessStatus {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            ProcessStatus::Running => "running",
            ProcessStatus::Dead => "dead",
            ProcessStatus::Paused => "paused",
        })
    }
}

/// What a broker believes it is for one of its partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReplicaRole {
    /// It leads the partition.
    Leader,
    /// It follows the leader, fetching.
    Follower,
    /// Neither: it has not learned a role, or the partition has no leader.
    Offline,
}

impl std::fmt::Display for ReplicaRole {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            ReplicaRole::Leader => "leader",
            ReplicaRole::Follower => "follower",
            ReplicaRole::Offline => "offline",
        })
    }
}

/// Writes a value as its `Display` text (node ids as `broker-1`).
fn as_text<T: std::fmt::Display, S: serde::Serializer>(value: &T, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// One broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerView {
    /// Its id.
    pub id: BrokerId,
    /// Whether its process runs.
    pub status: ProcessStatus,
    /// Whether the controller has fenced it.
    pub fenced: bool,
    /// A controlled shutdown is under way: it asked to stop, and its
    /// leaderships are moving to other replicas first.
    pub shutting_down: bool,
    /// Its replicas.
    pub replicas: Vec<ReplicaView>,
    /// Its replica of the metadata log (it is an observer of the quorum).
    pub metadata: MetadataLogView,
}

/// A broker's replica of `__cluster_metadata`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetadataLogView {
    /// The controller it fetches from (the one it believes active).
    pub controller: u32,
    /// Entries it holds (its log end offset).
    pub log_end_offset: usize,
    /// The high watermark the leader last reported.
    pub high_watermark: usize,
    /// The metadata offset it has applied, once registered and caught up.
    pub applied_offset: Option<u64>,
    /// How many of the committed entries it holds its applied image
    /// includes (none before it has applied one of them).
    pub applied_entries: Option<usize>,
}

/// A voter or an observer as the active controller sees it
/// (`kafka-metadata-quorum describe --replication`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FetcherView {
    /// `controller-N` or `broker-N`.
    pub node: NodeId,
    /// A voter (a controller) or an observer (a broker).
    pub voter: bool,
    /// Its log end offset at its last fetch.
    pub log_end_offset: usize,
    /// When it last fetched.
    pub last_fetch_ms: u64,
    /// When it last fetched up to the leader's end.
    pub last_caught_up_ms: Option<u64>,
}

/// How many of a replica's latest transaction markers a view lists.
pub const MARKERS_SHOWN: usize = 64;

/// One replica on a broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaView {
    /// `topic-partition`.
    pub partition: String,
    /// Its topic.
    pub topic: String,
    /// Its partition number within the topic.
    pub index: u32,
    /// A topic Kafka keeps for itself (`__consumer_offsets`).
    pub internal: bool,
    /// Leader, follower or offline (this broker's belief).
    pub role: ReplicaRole,
    /// Log end offset.
    pub log_end_offset: Offset,
    /// High watermark.
    pub high_watermark: Offset,
    /// Last stable offset: where `read_committed` consumers stop (the high
    /// watermark unless a transaction is open or its marker is not yet
    /// replicated).
    pub last_stable_offset: Offset,
    /// Transaction markers in the log (control records).
    pub markers: u64,
    /// The offsets of the last [`MARKERS_SHOWN`] of them, in order.
    pub marker_offsets: Vec<Offset>,
    /// The leader epoch this broker is in, if it leads or follows.
    pub leader_epoch: Option<u32>,
    /// In the committed ISR.
    pub in_isr: bool,
    /// As the leader tracks this follower: its last fetch.
    pub last_fetch_ms: Option<u64>,
    /// As the leader tracks this follower: when it was last caught up.
    pub last_caught_up_ms: Option<u64>,
    /// The log start offset: retention deleted everything below it.
    pub log_start_offset: Offset,
    /// The log's size on disk, in bytes (all segments).
    pub size_bytes: u64,
    /// How many segments the log has.
    pub segment_count: usize,
    /// The last [`SEGMENTS_SHOWN`] segments, oldest first; the last is the
    /// active one.
    pub segments: Vec<SegmentView>,
    /// How a read of the offset halfway through the log finds it on disk
    /// (segment, index entry, scan), if the log holds records.
    pub lookup: Option<crate::storage::Lookup>,
    /// For a compacted log: where the cleaner's last pass stopped. Below
    /// it each key has one record (the clean part); above it, the dirty
    /// part may hold stale records of the same keys.
    pub cleaned_up_to: Option<Offset>,
    /// The recovery point: the records below it are flushed to disk; from
    /// it to the log end they are in the page cache only (a power loss
    /// loses them, a crash does not).
    pub recovery_point: Offset,
}

/// How many segments of a log the view lists.
pub const SEGMENTS_SHOWN: usize = 16;

/// One segment of a replica's log: what `ls` shows in its partition's
/// directory (`<base offset>.log`, `.index`, `.timeindex`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SegmentView {
    /// The offset its files are named after.
    pub base_offset: Offset,
    /// The file names' common part: the base offset in 20 digits.
    pub file_stem: String,
    /// The offset after its last batch.
    pub next_offset: Offset,
    /// The `.log` file's size in bytes.
    pub size_bytes: u64,
    /// Entries in its `.index` file (8 bytes each).
    pub offset_index_entries: usize,
    /// Entries in its `.timeindex` file (12 bytes each).
    pub time_index_entries: usize,
    /// Its newest record's timestamp, if it has records.
    pub largest_timestamp: Option<i64>,
    /// Whether appends go to it (the last segment).
    pub active: bool,
}

impl SegmentView {
    fn of(segment: &crate::storage::Segment<super::types::Record>, active: bool) -> SegmentView {
        SegmentView {
            base_offset: segment.base_offset,
            file_stem: crate::storage::segment_file_name(segment.base_offset, ""),
            next_offset: segment.next_offset,
            size_bytes: segment.size_bytes,
            offset_index_entries: segment.offset_index.len(),
            time_index_entries: segment.time_index.len(),
            largest_timestamp: segment.largest_record_timestamp(),
            active,
        }
    }
}

/// A transactional producer's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionView {
    /// `transactional.id`.
    pub transactional_id: String,
    /// Where it is.
    pub phase: super::producer::transactions::TxnPhase,
    /// Partitions (of its topic) in the open transaction.
    pub partitions: Vec<u32>,
    /// A commit (true) or abort (false) under way.
    pub ending: Option<bool>,
    /// Transactions committed so far.
    pub committed: u64,
    /// Transactions aborted so far.
    pub aborted: u64,
    /// It runs transaction version 2 (the cluster's level when its current
    /// transaction began).
    pub transaction_v2: bool,
}

/// One partition in the committed metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PartitionView {
    /// `topic-partition`.
    pub partition: String,
    /// The topic.
    pub topic: String,
    /// Its partition number within the topic.
    pub index: u32,
    /// A topic Kafka keeps for itself (`__consumer_offsets`).
    pub internal: bool,
    /// The leader, if any.
    pub leader: Option<BrokerId>,
    /// Assigned replicas.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas.
    pub isr: Vec<BrokerId>,
    /// Leader epoch.
    pub leader_epoch: u32,
    /// Partition epoch.
    pub partition_epoch: u32,
    /// Led by an unclean election and not recovered.
    pub recovering: bool,
    /// Eligible leader replicas (KIP-966): out of the ISR while it was
    /// below `min.insync.replicas`, still safe to lead.
    pub elr: Vec<BrokerId>,
    /// The last known ELR (`LastKnownElr`; `None` is Kafka's -1).
    pub last_known_elr: Vec<Option<BrokerId>>,
}

/// One controller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerView {
    /// Its id.
    pub id: u32,
    /// Whether it runs.
    pub alive: bool,
    /// Leader (the active controller), follower, prospective or candidate.
    pub role: Role,
    /// Its quorum epoch.
    pub epoch: u32,
    /// Metadata log entries it holds, and how many are committed.
    pub log_length: usize,
    /// Committed entries.
    pub committed: usize,
    /// The leader it knows.
    pub leader: Option<u32>,
    /// As the active controller: its voters and observers, voters first.
    pub fetchers: Vec<FetcherView>,
}

/// One consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerView {
    /// Its index.
    pub id: u32,
    /// Its group.
    pub group: String,
    /// Its member id, once joined.
    pub member_id: Option<String>,
    /// Where it is in its life.
    pub phase: ConsumerPhase,
    /// Its generation (classic protocol) or member epoch (consumer
    /// protocol).
    pub generation: u32,
    /// `group.protocol`.
    pub group_protocol: super::config::GroupProtocol,
    /// Whether it rebalances cooperatively (KIP-429, `cooperative-sticky`):
    /// it keeps reading what it owns through a rebalance.
    pub cooperative: bool,
    /// Its partitions with position, high watermark and lag.
    pub partitions: Vec<ConsumerPartitionView>,
    /// Records read so far.
    pub records_read: u64,
    /// The broker coordinating its group (the leader of the group's
    /// `__consumer_offsets` partition), if any.
    pub coordinator: Option<BrokerId>,
    /// Until when a broker throttles its fetches (`consumer_byte_rate`),
    /// the latest of them; none when no broker does.
    pub throttled_until: Option<u64>,
    /// Its `client.id` (what quotas match).
    pub client_id: String,
    /// Its `auto.offset.reset`.
    pub auto_offset_reset: super::config::OffsetReset,
}

/// A consumer's partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerPartitionView {
    /// `topic-partition`.
    pub partition: String,
    /// Its topic.
    pub topic: String,
    /// Its partition number within the topic.
    pub index: u32,
    /// Next offset to read.
    pub position: Option<Offset>,
    /// The last offset this member committed for it, if any.
    pub committed: Option<Offset>,
    /// Last high watermark seen.
    pub high_watermark: Offset,
    /// `high watermark - position`.
    pub lag: Offset,
    /// The last time its position fell out of the log
    /// (`OFFSET_OUT_OF_RANGE`) and `auto.offset.reset` moved it: (from, to).
    pub last_reset: Option<(Offset, Offset)>,
}

/// One record as a replica's log holds it (`kafka-dump-log
/// --print-data-log`, in the simulation's words).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogRecordView {
    /// Its offset.
    pub offset: Offset,
    /// The base offset of the batch holding it.
    pub batch_base_offset: Offset,
    /// The leader epoch it was appended in.
    pub leader_epoch: u32,
    /// Its key, if any.
    pub key: Option<String>,
    /// Its value's size in bytes; none for a tombstone (a null value).
    pub value_size: Option<u32>,
    /// The encoded size of its headers (1 byte when it has none).
    pub headers_size: u32,
    /// Its timestamp (`CreateTime`), in ms of the virtual clock.
    pub timestamp: i64,
    /// The producer id of its batch, when its producer is idempotent.
    pub producer_id: Option<u64>,
    /// Below the high watermark: committed, readable by consumers.
    pub committed: bool,
}

/// The most records [`Simulation::log_records`] lists at once.
pub const LOG_RECORDS_MAX: usize = 1_000;

impl Simulation {
    /// The records of `partition` in one replica's log (`broker`; none: the
    /// partition's leader), from offset `from`, at most [`LOG_RECORDS_MAX`]:
    /// what compaction and retention left, with each batch's base offset.
    pub fn log_records(
        &self,
        partition: &TopicPartition,
        broker: Option<BrokerId>,
        from: Offset,
    ) -> Result<Vec<LogRecordView>, String> {
        let broker = match broker {
            Some(broker) => broker,
            None => self
                .controller
                .partitions
                .get(partition)
                .ok_or_else(|| format!("no partition {partition}"))?
                .leader
                .ok_or_else(|| format!("{partition} has no leader now: name a broker"))?,
        };
        let log = self
            .brokers
            .get(&broker)
            .ok_or_else(|| format!("no broker {broker}"))?
            .logs
            .get(partition)
            .ok_or_else(|| format!("broker-{broker} holds no replica of {partition}"))?;
        let high_watermark = log.high_watermark;
        let mut records = Vec::new();
        'batches: for batch in log.log.batches_from(from) {
            for record in batch.records.iter().filter(|record| record.offset >= from) {
                if records.len() >= LOG_RECORDS_MAX {
                    break 'batches;
                }
                records.push(LogRecordView {
                    offset: record.offset,
                    batch_base_offset: batch.base_offset,
                    leader_epoch: record.leader_epoch,
                    key: record.key.as_deref().map(str::to_string),
                    value_size: (!record.tombstone).then_some(record.bytes),
                    headers_size: record.headers_size,
                    timestamp: record.timestamp,
                    producer_id: record.batch.as_ref().map(|batch| batch.producer_id),
                    committed: record.offset < high_watermark,
                });
            }
        }
        Ok(records)
    }

    /// Each broker as the map draws it: status, metadata log, replicas.
    fn broker_views(&self) -> Vec<BrokerView> {
        self.brokers
            .values()
            .map(|broker| BrokerView {
                id: broker.id,
                status: match broker.status {
                    BrokerStatus::Running => ProcessStatus::Running,
                    BrokerStatus::Dead => ProcessStatus::Dead,
                    BrokerStatus::Paused { .. } => ProcessStatus::Paused,
                },
                fenced: self.controller.brokers.get(&broker.id).is_none_or(|state| state.fenced),
                shutting_down: broker.shutting_down.is_some(),
                metadata: MetadataLogView {
                    controller: broker.controller,
                    log_end_offset: broker.metadata_log.log.len(),
                    high_watermark: broker.metadata_log.high_watermark,
                    applied_offset: broker.metadata.as_ref().map(|image| image.offset),
                    applied_entries: broker.metadata.as_ref().and_then(|image| {
                        let committed = broker.metadata_log.high_watermark.min(broker.metadata_log.log.len());
                        broker.metadata_log.log[..committed]
                            .iter()
                            .rposition(|entry| entry.state.offset <= image.offset)
                            .map(|index| index + 1)
                    }),
                },
                replicas: broker
                    .logs
                    .iter()
                    .map(|(partition, log)| {
                        let (role, leader_epoch) = if let Some(leader) = broker.leading.get(partition) {
                            (ReplicaRole::Leader, Some(leader.leader_epoch))
                        } else if let Some(follower) = broker.following.get(partition) {
                            (ReplicaRole::Follower, Some(follower.leader_epoch))
                        } else {
                            (ReplicaRole::Offline, None)
                        };
                        let registration = self.controller.partitions.get(partition);
                        let tracked = registration
                            .and_then(|registration| registration.leader)
                            .and_then(|leader| self.brokers.get(&leader))
                            .and_then(|leader| leader.leading.get(partition))
                            .and_then(|state| state.followers.get(&broker.id));
                        ReplicaView {
                            partition: partition.to_string(),
                            topic: partition.topic.to_string(),
                            index: partition.partition,
                            internal: is_internal(&partition.topic),
                            role,
                            log_end_offset: log.log_end_offset(),
                            high_watermark: log.high_watermark,
                            last_stable_offset: log.last_stable_offset(),
                            markers: log.txn_markers(),
                            marker_offsets: log.recent_marker_offsets(MARKERS_SHOWN).to_vec(),
                            leader_epoch,
                            in_isr: registration.is_some_and(|registration| registration.isr.contains(&broker.id)),
                            last_fetch_ms: tracked.and_then(|info| info.state.last_fetch_time_ms),
                            last_caught_up_ms: tracked.and_then(|info| info.state.last_caught_up_time_ms),
                            log_start_offset: log.log_start_offset(),
                            size_bytes: log.log.size_bytes(),
                            segment_count: log.log.segment_count(),
                            segments: {
                                let count = log.log.segment_count();
                                log.log
                                    .segments()
                                    .enumerate()
                                    .skip(count.saturating_sub(SEGMENTS_SHOWN))
                                    .map(|(index, segment)| SegmentView::of(segment, index + 1 == count))
                                    .collect()
                            },
                            lookup: log
                                .log
                                .lookup(log.log_start_offset() + (log.log_end_offset() - log.log_start_offset()) / 2),
                            cleaned_up_to: log.log.cleaner_checkpoint,
                            recovery_point: log.log.recovery_point,
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    /// Each consumer as the map draws it.
    fn consumer_views(&self) -> Vec<ConsumerView> {
        self.consumers
            .iter()
            .map(|consumer| ConsumerView {
                id: consumer.id,
                group: consumer.config.group.clone(),
                member_id: consumer.member_id.clone(),
                phase: consumer.phase,
                generation: consumer.generation,
                group_protocol: consumer.config.group_protocol,
                cooperative: consumer.cooperative() && !consumer.config.consumer_protocol(),
                partitions: consumer
                    .assignment
                    .iter()
                    .map(|partition| {
                        let position = consumer.positions.get(partition).copied();
                        let high_watermark = consumer.high_watermarks.get(partition).copied().unwrap_or(0);
                        ConsumerPartitionView {
                            partition: partition.to_string(),
                            topic: partition.topic.to_string(),
                            index: partition.partition,
                            position,
                            committed: consumer.committed.get(partition).copied(),
                            high_watermark,
                            lag: high_watermark.saturating_sub(position.unwrap_or(0)),
                            last_reset: consumer.last_resets.get(partition).copied(),
                        }
                    })
                    .collect(),
                records_read: consumer.records_read,
                throttled_until: consumer
                    .throttled_until
                    .values()
                    .copied()
                    .filter(|until| *until > self.now)
                    .max(),
                client_id: self.consumer_client_id(consumer.id),
                auto_offset_reset: consumer.config.auto_offset_reset,
                coordinator: crate::groups::coordinator_partition(
                    &consumer.config.group,
                    self.config.offsets_topic_partitions,
                )
                .and_then(|partition| {
                    self.controller.partitions.get(&TopicPartition {
                        topic: self.offsets_topic.clone(),
                        partition,
                    })
                })
                .and_then(|registration| registration.leader),
            })
            .collect()
    }

    /// Each producer as the map draws it.
    fn producer_views(&self) -> Vec<ProducerView> {
        self.producers
            .iter()
            .map(|producer| {
                let batches = producer.batches.values().flatten();
                let mut recent: Vec<RecentRecord> = Vec::new();
                let [sent, acknowledged, failed] = self.highlights.tally.get(&producer.id).copied().unwrap_or_default();
                for index in (0..self.records.len()).rev() {
                    let record = &self.records[index];
                    if record.producer != producer.id {
                        continue;
                    }
                    recent.push(RecentRecord {
                        key: record.key.as_deref().map(str::to_string),
                        partition: record.partition.as_ref().map(|partition| partition.partition),
                        acknowledged: record.acknowledged.is_some(),
                    });
                    if recent.len() == RECENT_RECORDS {
                        break;
                    }
                }
                ProducerView {
                    id: producer.id,
                    topic: producer.config.topic.clone(),
                    acks: producer.config.acks,
                    linger_ms: producer.config.linger_ms,
                    batch_size: producer.config.batch_size,
                    waiting: producer.waiting.len(),
                    buffered_records: batches.clone().map(|batch| batch.records.len()).sum(),
                    buffered_bytes: batches.clone().map(|batch| u64::from(batch.bytes)).sum(),
                    buffered_batches: batches.count(),
                    in_flight: producer.in_flight.len(),
                    max_in_flight_per_connection: producer.config.max_in_flight_requests_per_connection,
                    idempotent: producer.config.idempotence(),
                    producer_id: producer.producer_id,
                    producer_epoch: producer.epoch,
                    transaction: producer.txn.as_ref().map(|txn| TransactionView {
                        transactional_id: txn.transactional_id.clone(),
                        phase: txn.phase,
                        partitions: txn.added.iter().copied().collect(),
                        ending: txn.ending,
                        committed: txn.committed,
                        aborted: txn.aborted,
                        transaction_v2: txn.v2,
                    }),
                    sent,
                    acknowledged,
                    failed,
                    recent,
                    last_error: self.highlights.producer_errors.get(&producer.id).cloned(),
                    throttled_until: producer
                        .throttled_until
                        .values()
                        .copied()
                        .filter(|until| *until > self.now)
                        .max(),
                }
            })
            .collect()
    }

    /// A picture of the cluster now.
    pub fn view(&self) -> ClusterView {
        let brokers = self.broker_views();
        let partitions = self
            .controller
            .partitions
            .iter()
            .map(|(partition, registration)| PartitionView {
                partition: partition.to_string(),
                topic: partition.topic.to_string(),
                index: partition.partition,
                internal: is_internal(&partition.topic),
                leader: registration.leader,
                replicas: registration.replicas.clone(),
                isr: registration.isr.clone(),
                leader_epoch: registration.leader_epoch,
                partition_epoch: registration.partition_epoch,
                recovering: registration.leader_recovery == LeaderRecovery::Recovering,
                elr: registration.elr.clone(),
                last_known_elr: registration.last_known_elr.clone(),
            })
            .collect();
        let controllers = self
            .quorum
            .nodes
            .values()
            .map(|node| ControllerView {
                id: node.id,
                alive: node.alive,
                role: node.role,
                epoch: node.epoch,
                log_length: node.log.len(),
                committed: node.committed,
                leader: node.leader,
                fetchers: if node.role == Role::Leader && node.alive {
                    let voters = node
                        .voters
                        .iter()
                        .filter(|(&voter, _)| voter != node.id)
                        .map(|(&voter, progress)| (NodeId::Controller(voter), true, progress));
                    let observers = node
                        .observers
                        .iter()
                        .map(|(&broker, progress)| (NodeId::Broker(broker), false, progress));
                    voters
                        .chain(observers)
                        .map(|(node, voter, progress)| FetcherView {
                            node,
                            voter,
                            log_end_offset: progress.fetch_offset,
                            last_fetch_ms: progress.last_fetch_ms,
                            last_caught_up_ms: progress.last_caught_up_ms,
                        })
                        .collect()
                } else {
                    Vec::new()
                },
            })
            .collect();
        let consumers = self.consumer_views();
        let producers = self.producer_views();
        let in_flight = self
            .queue
            .iter()
            .filter_map(|(&(arrives_ms, _), event)| match event {
                Event::Deliver {
                    from,
                    to,
                    message,
                    sent_at,
                    ..
                } => Some(MessageView {
                    from: *from,
                    to: *to,
                    name: message.name(),
                    summary: message.summary(),
                    sent_ms: *sent_at,
                    arrives_ms,
                }),
                _ => None,
            })
            .collect();
        ClusterView {
            time_ms: self.now,
            events: self.events_processed(),
            brokers,
            partitions,
            controllers,
            consumers,
            producers,
            in_flight,
            highlights: self.highlights.clone(),
            features: FeaturesView {
                transaction_version: self.controller.transaction_version.0,
                transaction_partition_verification: self.config.transaction_partition_verification_enable,
            },
        }
    }
}
