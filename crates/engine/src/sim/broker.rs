//! A broker: its logs (which survive a crash), and the in-memory roles it
//! plays per partition — leader (answering produce and fetch, tracking
//! followers, moving the high watermark, asking the controller to change the
//! ISR) or follower (fetching from the leader, truncating where its log
//! diverged). Kafka: `ReplicaManager`, `Partition`, `AbstractFetcherThread`.

use crate::sorting::Gather;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::protocol::metadata::PartitionRegistration;
use crate::protocol::{BrokerId, Offset, TopicPartition};
use crate::replication::epoch_cache::LeaderEpochCache;
use crate::replication::high_watermark::{
    admit_produce, check_parked_produce, evaluate, Acks, HighWatermarkDecision, HighWatermarkInputs, ParkedProduce,
    ProduceAdmission,
};
use crate::replication::idempotence::{AppendOrigin, DataBatch, ProducerStateTable, SequenceCheck, NO_TIMESTAMP};
use crate::replication::replica::ReplicaState;
use crate::replication::transactions::{last_stable_offset, IsolationLevel, TransactionIndex};
use crate::storage::{BatchProducer, Log as StorageLog, LogBatch, LogConfig};

use super::config::QuotaType;
use super::trace::{BrokerChange, HighWatermarkReason, HighWatermarkTrigger, TraceId, TraceKind, TruncationReason};
use super::types::{
    BatchSequence, ErrorCode, Message, MessageName, MetadataImage, NodeId, OffsetSpec, ProducerBatch, Record, Time,
    TxnMarker, MARKER_RECORD_BASE,
};
use super::{Simulation, Timer};

pub use super::purgatory::{Parked, ParkedReply};

/// Records a follower gets per fetch at most (`replica.fetch.max.bytes`,
/// counted in records here).
const FETCH_MAX_RECORDS: usize = 500;
/// `replica.fetch.backoff.ms`.
const FETCH_BACKOFF_MS: u64 = 1_000;
/// How long a follower waits for a fetch answer (`replica.socket.timeout.ms`).
const FETCH_TIMEOUT_MS: u64 = 30_000;
/// How long an AlterPartition may wait for its answer before the leader
/// proposes the change again (the controller channel's request timeout,
/// `controller.socket.timeout.ms`, 30000).
const ALTER_PARTITION_TIMEOUT_MS: u64 = 30_000;
/// How long after startup a broker's log manager first checks retention
/// (`LogManager.InitialTaskDelayMs`).
const LOG_MANAGER_INITIAL_DELAY_MS: u64 = 30_000;
/// How long a broker waits for its controlled shutdown before it stops
/// anyway (`BrokerServer#shutdown` waits five minutes).
const CONTROLLED_SHUTDOWN_TIMEOUT_MS: u64 = 300_000;

/// Whether the broker process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum BrokerStatus {
    /// Running.
    Running,
    /// Crashed; its disk survives.
    Dead,
    /// Stopped the world (a long GC pause) until the given time.
    Paused {
        /// When it resumes.
        until: u64,
    },
}

/// One replica's log of one partition; it survives crashes. The records
/// live in segments ([`crate::storage::Log`]); the rest is what Kafka
/// rebuilds from them (producer state, aborted transactions) or keeps
/// beside them (high watermark, leader epochs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionLog {
    /// The segments and their records.
    #[serde(skip)]
    pub log: StorageLog<Record>,
    /// This replica's high watermark.
    pub high_watermark: Offset,
    /// The leader-epoch history.
    pub epoch_cache: LeaderEpochCache,
    /// Idempotent and transactional producers' state, with the open
    /// transactions.
    #[serde(skip)]
    pub producers: ProducerStateTable,
    /// Aborted transactions (`TransactionIndex`).
    #[serde(skip)]
    pub txn_index: TransactionIndex,
    /// The offsets of the transaction markers in the log, in order.
    marker_offsets: Vec<Offset>,
}

impl Default for PartitionLog {
    fn default() -> Self {
        PartitionLog::new(LogConfig::default(), 0)
    }
}

impl PartitionLog {
    /// An empty log with the topic's storage settings.
    pub fn new(config: LogConfig, now_ms: u64) -> Self {
        PartitionLog {
            log: StorageLog::new(config, now_ms as i64),
            high_watermark: 0,
            epoch_cache: LeaderEpochCache::default(),
            producers: ProducerStateTable::default(),
            txn_index: TransactionIndex::default(),
            marker_offsets: Vec::new(),
        }
    }

    /// The log end offset.
    pub fn log_end_offset(&self) -> Offset {
        self.log.log_end_offset
    }

    /// The log start offset: the first offset a fetch may ask for.
    pub fn log_start_offset(&self) -> Offset {
        self.log.log_start_offset
    }

    /// The records from `from` (or the first after it) on, in order.
    pub fn records_from(&self, from: Offset) -> impl Iterator<Item = &Record> + '_ {
        self.log
            .batches_from(from)
            .flat_map(|batch| batch.records.iter())
            .skip_while(move |record| record.offset < from)
    }

    /// Every record in the log, in order.
    pub fn records(&self) -> impl Iterator<Item = &Record> + '_ {
        self.records_from(0)
    }

    /// Whether the record at `offset` was removed by the cleaner: it is
    /// below the cleaner's checkpoint and no longer in the log.
    pub fn compacted_away(&self, offset: Offset) -> bool {
        self.log
            .cleaner_checkpoint
            .is_some_and(|checkpoint| offset < checkpoint)
            && self.record_at(offset).is_none()
    }

    /// The record at `offset`, if the log holds it: in the first batch
    /// that reaches it, if anywhere (a later batch starts past it), found by
    /// halving, since a batch's records are in offset order.
    pub fn record_at(&self, offset: Offset) -> Option<&Record> {
        Self::record_in(self.log.first_batch_from(offset)?, offset)
    }

    /// The record at `offset` in `batch`, if it holds it.
    pub fn record_in(batch: &LogBatch<Record>, offset: Offset) -> Option<&Record> {
        let records = &batch.records;
        records
            .get(records.partition_point(|record| record.offset < offset))
            .filter(|record| record.offset == offset)
    }

    /// Up to `max` records from `from`, below `until`.
    pub fn copy_records(&self, from: Offset, until: Offset, max: usize) -> Vec<Record> {
        self.records_from(from)
            .take_while(|record| record.offset < until)
            .take(max)
            .cloned()
            .collect()
    }

    /// What a consumer fetch from `from` returns: up to `max` records
    /// below `bound`, and where the next fetch starts (past the last batch
    /// read whole, so that batches compaction emptied are skipped).
    /// At most `max_bytes` of batches, but always the first one
    /// (`fetch.max.bytes` as `UnifiedLog#read` applies it).
    pub fn consumer_read(&self, from: Offset, bound: Offset, max: usize, max_bytes: u64) -> (Vec<Record>, Offset, u64) {
        let mut records = Vec::new();
        let mut next = from;
        let mut bytes = 0;
        for batch in self.log.batches_from(from) {
            if batch.base_offset >= bound || records.len() >= max {
                break;
            }
            // Whole batches go over the wire.
            let size = u64::from(batch.size_bytes);
            if bytes > 0 && bytes + size > max_bytes {
                break;
            }
            bytes += size;
            let mut whole = batch.last_offset < bound;
            for record in batch.records.iter().filter(|record| record.offset >= from) {
                if record.offset >= bound || records.len() >= max {
                    whole = false;
                    break;
                }
                records.push(record.clone());
                next = record.offset + 1;
            }
            if !whole {
                break;
            }
            next = next.max(batch.next_offset());
        }
        (records, next, bytes)
    }

    /// Whole batches from the one holding `from`, up to about `max`
    /// records, as a leader sends them to a follower.
    pub fn copy_batches(&self, from: Offset, max: usize) -> Vec<LogBatch<Record>> {
        let mut count = 0;
        self.log
            .batches_from(from)
            .take_while(|batch| {
                let take = count < max;
                count += batch.records.len().max(1);
                take
            })
            .cloned()
            .collect()
    }

    /// Appends one batch of records (consecutive offsets from the log end)
    /// at `now_ms`, and updates the producer state for it.
    pub(crate) fn append_records(&mut self, records: Vec<Record>, now_ms: u64) {
        let producer = records.first().and_then(|record| record.batch).map(batch_producer);
        self.append_batch(LogBatch::new(records, producer), now_ms);
    }

    /// Appends a batch as its leader wrote it (a follower's append).
    pub(crate) fn append_batch(&mut self, batch: LogBatch<Record>, now_ms: u64) {
        let from = batch.base_offset;
        self.log.append(batch, now_ms as i64);
        self.track_producers_from(from, true);
    }

    /// How many transaction markers (control records) the log holds.
    pub fn txn_markers(&self) -> u64 {
        self.marker_offsets.len() as u64
    }

    /// The offsets of the last `at_most` transaction markers, in order.
    pub fn recent_marker_offsets(&self, at_most: usize) -> &[Offset] {
        &self.marker_offsets[self.marker_offsets.len().saturating_sub(at_most)..]
    }

    /// Where a consumer at `isolation` may read up to.
    pub fn read_bound(&self, isolation: IsolationLevel) -> Offset {
        match isolation {
            IsolationLevel::ReadUncommitted => self.high_watermark,
            IsolationLevel::ReadCommitted => self.last_stable_offset(),
        }
    }

    /// The last stable offset: where `read_committed` consumers stop
    /// (`UnifiedLog#lastStableOffset`).
    pub fn last_stable_offset(&self) -> Offset {
        last_stable_offset(
            self.producers.first_unstable_offset_below(self.high_watermark),
            self.high_watermark,
        )
    }

    /// Updates the producer state for the batches appended from `from` on:
    /// one entry per idempotent batch, and each transaction marker closing
    /// its producer's transaction, as every replica does when it appends
    /// (`AppendOrigin.REPLICATION`: the leader checked them before).
    /// `appended`: they are new (not a rebuild from the log), so a
    /// transactional one ends its producer's verification here.
    pub(crate) fn track_producers_from(&mut self, from: Offset, appended: bool) {
        let batches: Vec<(Offset, BatchSequence, i64)> = self
            .log
            .batches_from(from)
            .filter(|batch| batch.base_offset >= from)
            .filter_map(|batch| {
                let timestamp = batch.records.iter().map(|record| record.timestamp).max()?;
                Some((batch.base_offset, batch.records.first()?.batch?, timestamp))
            })
            .collect();
        for (offset, batch, timestamp) in batches {
            // A replica never refuses what its leader wrote, so errors
            // (which replication only logs in Kafka) are ignored. The
            // batch's newest record timestamp is when the producer was
            // last seen (`producer.id.expiration.ms` counts from it).
            if batch.transactional && appended {
                self.producers.transactional_appended(
                    batch.producer_id,
                    producer_epoch(batch.epoch),
                    batch.marker.is_some(),
                );
            }
            if let Some(marker) = batch.marker {
                self.marker_offsets.push(offset);
                let _ = self.producers.append_marker(
                    AppendOrigin::Replication,
                    batch.producer_id,
                    marker.control,
                    producer_epoch(batch.epoch),
                    marker.coordinator_epoch,
                    offset,
                    timestamp,
                    &mut self.txn_index,
                );
                continue;
            }
            // A v2 batch's offset delta is its sequence delta (which wraps
            // after Integer.MAX_VALUE).
            let offset_delta = (i64::from(batch.last_sequence) - i64::from(batch.first_sequence))
                .rem_euclid(i64::from(i32::MAX) + 1) as Offset;
            let _ = self.producers.record(
                batch.producer_id,
                &DataBatch {
                    producer_epoch: producer_epoch(batch.epoch),
                    first_seq: batch.first_sequence,
                    last_seq: batch.last_sequence,
                    first_offset: offset,
                    last_offset: offset + offset_delta,
                    max_timestamp: timestamp,
                    is_transactional: batch.transactional,
                },
            );
        }
    }

    /// A power loss: the records past the recovery point were in the page
    /// cache only and are gone, and what depends on them is rebuilt, as
    /// `LogLoader` finds the log on the next start (the simulator writes no
    /// torn batch, so recovery from the recovery point finds every batch
    /// on disk valid and truncates nothing more). Returns the offset the log
    /// now ends at, where it ended, and the records lost, if any were.
    pub(crate) fn lose_unflushed(&mut self, now_ms: u64) -> Option<(Offset, Offset, Vec<super::types::RecordId>)> {
        let from = self.log.recovery_point.max(self.log.log_start_offset);
        let end = self.log_end_offset();
        if from >= end {
            return None;
        }
        let lost = self.records_from(from).map(|record| record.id).collect();
        self.truncate_to(from, now_ms);
        Some((from, end, lost))
    }

    /// Cuts the log back to `offset`, rebuilding what depends on it.
    pub(crate) fn truncate_to(&mut self, offset: Offset, now_ms: u64) {
        self.log.truncate_to(offset, now_ms as i64);
        self.epoch_cache.truncate_from_end(offset);
        self.high_watermark = self.high_watermark.min(offset);
        self.rebuild_producer_state();
    }

    /// Raises the log start offset (a follower following its leader's);
    /// the leader-epoch history is cut to it (`maybeIncrementLogStartOffset`).
    pub(crate) fn increment_log_start_offset(&mut self, offset: Offset) {
        self.log.increment_log_start_offset(offset);
        self.epoch_cache.truncate_from_start(self.log.log_start_offset);
    }

    /// Empties the log and starts it at `offset` (`truncateFullyAndStartAt`):
    /// a follower whose next record the leader no longer has.
    pub(crate) fn truncate_fully_and_start_at(&mut self, offset: Offset, now_ms: u64) {
        self.log.truncate_fully_and_start_at(offset, now_ms as i64);
        self.epoch_cache = LeaderEpochCache::default();
        self.high_watermark = offset;
        self.rebuild_producer_state();
    }

    /// Cleans the log if it is compacted and dirty enough (see
    /// [`crate::storage::Log::clean`]), below its last stable offset;
    /// batches of aborted transactions go (the transaction index says
    /// which).
    /// How dirty the log is, if the cleaner would pick it now
    /// (`LogCleanerManager#grabFilthiestCompactedLog`'s eligibility).
    pub(crate) fn cleanable_ratio(&self, now_ms: u64) -> Option<f64> {
        let to_clean = self.log.to_clean(now_ms as i64, self.last_stable_offset())?;
        if !to_clean.should_clean(self.log.config.min_cleanable_dirty_ratio) {
            return None;
        }
        to_clean.dirty_ratio()
    }

    pub(crate) fn clean(&mut self, now_ms: u64) -> Option<crate::storage::CleanOutcome> {
        let to_clean = self.log.to_clean(now_ms as i64, self.last_stable_offset())?;
        if !to_clean.should_clean(self.log.config.min_cleanable_dirty_ratio) {
            return None;
        }
        let aborted_txns = self.txn_index.entries().to_vec();
        let aborted = move |batch: &LogBatch<Record>| {
            batch.producer.is_some_and(|producer| {
                producer.transactional
                    && !producer.control
                    && aborted_txns.iter().any(|txn| {
                        txn.producer_id == producer.producer_id
                            && txn.first_offset <= batch.base_offset
                            && batch.last_offset <= txn.last_offset
                    })
            })
        };
        // The batch holding an active producer's last sequence, or with
        // no data batch left its last marker's epoch, stays
        // (`Cleaner#cleanSegments`'s `lastRecordsOfActiveProducers`).
        let last_records: BTreeMap<u64, (Option<Offset>, i16)> = self
            .producers
            .active_producers()
            .iter()
            .map(|(producer_id, entry)| (*producer_id, (entry.last_data_offset(), entry.producer_epoch)))
            .gather();
        let last_of_active_producer = move |batch: &LogBatch<Record>| {
            batch
                .producer
                .is_some_and(|producer| match last_records.get(&producer.producer_id) {
                    Some((Some(last_data_offset), _)) => batch.last_offset == *last_data_offset,
                    Some((None, epoch)) => producer.control && producer.producer_epoch == *epoch,
                    None => false,
                })
        };
        Some(
            self.log
                .clean_with_producers(&to_clean, now_ms as i64, &aborted, &last_of_active_producer),
        )
    }

    /// Deletes the segments retention is due to delete (see
    /// [`crate::storage::Log::delete_old_segments`]); the leader-epoch
    /// history is cut to the new log start.
    pub(crate) fn delete_old_segments(&mut self, now_ms: u64) -> crate::storage::RetentionOutcome {
        let outcome = self.log.delete_old_segments(now_ms as i64, self.high_watermark);
        self.epoch_cache.truncate_from_start(self.log.log_start_offset);
        outcome
    }

    /// UnifiedLog#truncateTo rebuilds the producer state from the log (and
    /// truncates the transaction index).
    fn rebuild_producer_state(&mut self) {
        self.producers.clear();
        self.txn_index.clear();
        self.marker_offsets.clear();
        // Verifications in progress are kept (in memory, not in the log).
        self.track_producers_from(0, false);
    }
}

/// A simulated batch's producer as the batch header carries it.
fn batch_producer(batch: BatchSequence) -> BatchProducer {
    BatchProducer {
        producer_id: batch.producer_id,
        producer_epoch: producer_epoch(batch.epoch),
        base_sequence: batch.first_sequence,
        transactional: batch.transactional,
        control: batch.marker.is_some(),
    }
}

/// The simulation's producer epoch as Kafka's `short`.
fn producer_epoch(epoch: u16) -> i16 {
    i16::try_from(epoch).expect("producer epochs stay below Short.MAX_VALUE")
}

/// A follower as its leader tracks it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FollowerInfo {
    /// Fetch state and caught-up time.
    pub state: ReplicaState,
    /// The trace event of its last fetch (the cause of an ISR shrink).
    pub last_fetch: Option<TraceId>,
}

/// A fetch held until data arrives or the wait ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeldFetch {
    /// Held-fetch id.
    pub id: u64,
    /// A consumer's fetch (answered up to the high watermark), or a follower's.
    pub consumer: Option<NodeId>,
    /// The follower.
    pub replica: BrokerId,
    /// Where it fetches from.
    pub fetch_offset: Offset,
    /// A consumer's `isolation.level`.
    pub isolation: IsolationLevel,
}

/// The leader role for one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaderState {
    /// This leadership's epoch.
    pub leader_epoch: u32,
    /// The partition epoch the leader last saw.
    pub partition_epoch: u32,
    /// The committed ISR.
    pub isr: Vec<BrokerId>,
    /// The ISR of an AlterPartition in flight.
    pub pending_isr: Option<Vec<BrokerId>>,
    /// When that AlterPartition was sent (it is sent again when no answer
    /// came within the controller channel's timeout).
    pub pending_isr_sent_ms: u64,
    /// All replicas.
    pub replicas: Vec<BrokerId>,
    /// The followers.
    pub followers: BTreeMap<BrokerId, FollowerInfo>,
    /// The first offset of this epoch (a follower must reach it to rejoin).
    pub epoch_start_offset: Offset,
    /// acks=all requests waiting.
    pub parked: Vec<Parked>,
    /// Followers' fetches held for data.
    pub held: Vec<HeldFetch>,
}

impl LeaderState {
    /// `maximalIsr`: the ISR plus members an in-flight change adds.
    pub fn maximal_isr(&self) -> Vec<BrokerId> {
        let mut maximal = self.isr.clone();
        if let Some(pending) = &self.pending_isr {
            for member in pending {
                if !maximal.contains(member) {
                    maximal.push(*member);
                }
            }
        }
        maximal
    }
}

/// A broker's replica of the metadata log: it is an observer of the
/// controller quorum, fetching `__cluster_metadata` from the active
/// controller and applying what is committed (`KafkaRaftClient` as an
/// observer, `MetadataLoader`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MetadataReplica {
    /// The log (on disk).
    #[serde(skip)]
    pub log: Vec<super::quorum::LogEntry>,
    /// The high watermark the leader last reported (0 after a restart,
    /// until the first answer).
    pub high_watermark: usize,
    /// The quorum epoch it knows.
    pub epoch: u32,
    /// The fetch in flight: its id and the controller it went to.
    pub in_flight: Option<(u64, u32)>,
}

impl MetadataReplica {
    /// The committed controller state it has fetched, if any.
    pub fn committed(&self) -> Option<&crate::protocol::metadata::Controller> {
        self.log
            .get(self.high_watermark.checked_sub(1)?)
            .map(|entry| &*entry.state)
    }
}

/// The follower role for one partition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FollowerState {
    /// Whom it fetches from.
    pub leader: BrokerId,
    /// The leader's epoch.
    pub leader_epoch: u32,
    /// A fetch is on its way (its id).
    pub in_flight: Option<u64>,
}

/// One partition's part of a produce request: its result once done.
pub type PartitionProduceResult = (TopicPartition, Option<Result<Offset, ErrorCode>>);

/// A broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Broker {
    /// `node.id`.
    pub id: BrokerId,
    /// Running, dead or paused.
    pub status: BrokerStatus,
    /// Bumped at every start; timers of an older incarnation are ignored.
    pub incarnation: u32,
    /// The epoch the controller gave its registration.
    pub broker_epoch: Option<u64>,
    /// Whether the controller says it is fenced.
    pub fenced: bool,
    /// The metadata it has applied (once registered and caught up with its
    /// own registration).
    pub metadata: Option<MetadataImage>,
    /// Its replica of the metadata log.
    pub metadata_log: MetadataReplica,
    /// The controller it believes active (where it fetches metadata and
    /// sends heartbeats).
    pub controller: u32,
    /// A heartbeat got no answer yet (if the next one is due, it tries
    /// another controller).
    pub heartbeat_outstanding: bool,
    /// When a controlled shutdown was asked for (heartbeats then carry
    /// `wantShutDown` until the controller lets it stop).
    pub shutting_down: Option<u64>,
    /// The broker epoch of its last clean (controlled) shutdown, kept on
    /// disk; read and cleared at start (Kafka's clean-shutdown file).
    pub clean_shutdown_epoch: Option<u64>,
    /// What this incarnation read from that file at start.
    pub previous_broker_epoch: Option<u64>,
    /// Logs, by partition (on disk).
    pub logs: BTreeMap<TopicPartition, PartitionLog>,
    /// Partitions it leads.
    pub leading: BTreeMap<TopicPartition, LeaderState>,
    /// Partitions it follows.
    pub following: BTreeMap<TopicPartition, FollowerState>,
    /// Groups it coordinates (in memory; committed offsets are reloaded
    /// from `__consumer_offsets` when it becomes coordinator).
    pub coordinators: BTreeMap<TopicPartition, super::coordinator::Coordinator>,
    /// Transactions it coordinates (reloaded from `__transaction_state`
    /// when it becomes that partition's leader).
    pub txn_coordinators: BTreeMap<TopicPartition, super::txn::TxnCoordinator>,
    /// Produce requests (acks 1 or all) not yet answered, by client and
    /// request id: each partition's result once that partition is done
    /// (Kafka's `DelayedProduce` answers when every partition is).
    pub produce_requests: BTreeMap<(NodeId, u64), Vec<PartitionProduceResult>>,
    /// The bytes of each produce request not yet answered, recorded in
    /// its client's quota rate when it is (`KafkaApis#handleProduceRequest`).
    pub produce_request_bytes: BTreeMap<(NodeId, u64), (String, u64)>,
    /// Each client id's produce and fetch rates on this broker
    /// (`ClientQuotaManager`, one per quota type; in memory, so a restart
    /// starts them over).
    pub client_rates: BTreeMap<(QuotaType, String), crate::storage::ByteRate>,
    /// Client connections muted after a throttled answer, until when, and
    /// the requests that arrived meanwhile, read once it is unmuted
    /// (`SocketServer`'s channel muting, KIP-219).
    pub muted: BTreeMap<NodeId, (Time, Vec<Message>)>,
    /// Producer ids it hands out: the next one and the end of its block.
    pub producer_ids: Option<(u64, u64)>,
    /// Blocks of producer ids this broker took so far (on disk, so a
    /// restarted broker never hands out an id twice).
    pub producer_id_blocks: u64,
    /// Transactions' first batches (and offsets) waiting for the
    /// transaction coordinator (KIP-890), by request id.
    pub verifications: BTreeMap<u64, super::verification::Verification>,
    /// The last verification request id.
    verification_requests: u64,
    /// `LoseProduceResponse`'s sibling: produce requests a stalled
    /// request handler has not taken yet, by id.
    pub stalled: BTreeMap<u64, (NodeId, Message, u32)>,
    /// The connection each produce request not yet answered was read
    /// from: its answer goes back on it, or nowhere if it closed.
    pub produce_connections: BTreeMap<(NodeId, u64), u32>,
    next_id: u64,
}

impl Broker {
    /// A broker that has not started.
    pub fn new(id: BrokerId) -> Broker {
        Broker {
            id,
            status: BrokerStatus::Dead,
            incarnation: 0,
            broker_epoch: None,
            fenced: true,
            metadata: None,
            metadata_log: MetadataReplica::default(),
            controller: 1,
            heartbeat_outstanding: false,
            shutting_down: None,
            clean_shutdown_epoch: None,
            previous_broker_epoch: None,
            logs: BTreeMap::new(),
            leading: BTreeMap::new(),
            following: BTreeMap::new(),
            coordinators: BTreeMap::new(),
            txn_coordinators: BTreeMap::new(),
            produce_requests: BTreeMap::new(),
            produce_request_bytes: BTreeMap::new(),
            client_rates: BTreeMap::new(),
            muted: BTreeMap::new(),
            producer_ids: None,
            producer_id_blocks: 0,
            verifications: BTreeMap::new(),
            verification_requests: 0,
            stalled: BTreeMap::new(),
            produce_connections: BTreeMap::new(),
            next_id: 0,
        }
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A new verification request id.
    pub(crate) fn next_verification(&mut self) -> u64 {
        self.verification_requests += 1;
        self.verification_requests
    }
}

impl Simulation {
    /// `partition`'s log on its leader.
    pub(crate) fn leader_log(&self, partition: &TopicPartition) -> Option<&PartitionLog> {
        let leader = self.controller.partitions.get(partition)?.leader?;
        self.brokers.get(&leader)?.logs.get(partition)
    }

    /// The controller broker `id` talks to.
    fn controller_of(&self, id: BrokerId) -> NodeId {
        NodeId::Controller(self.brokers[&id].controller)
    }

    pub(crate) fn broker(&mut self, id: BrokerId) -> &mut Broker {
        self.brokers.get_mut(&id).expect("known broker")
    }

    /// Starts a broker process: register with the controller.
    pub(crate) fn broker_start(&mut self, id: BrokerId) {
        self.broker_boot(id);
        let incarnation = self.brokers[&id].incarnation;
        self.send(
            NodeId::Broker(id),
            self.controller_of(id),
            Message::BrokerRegistration {
                broker: id,
                incarnation,
                previous_broker_epoch: self.brokers[&id].previous_broker_epoch,
            },
        );
    }

    /// A broker that was already registered and unfenced when the run
    /// began (the cluster is in a steady state at time 0).
    pub(crate) fn broker_start_registered(&mut self, id: BrokerId, broker_epoch: u64, image: MetadataImage) {
        self.broker_boot(id);
        let broker = self.broker(id);
        broker.broker_epoch = Some(broker_epoch);
        broker.fenced = false;
        self.broker_apply_metadata(id, image);
    }

    fn broker_boot(&mut self, id: BrokerId) {
        let broker = self.broker(id);
        broker.status = BrokerStatus::Running;
        broker.incarnation += 1;
        broker.broker_epoch = None;
        broker.fenced = true;
        broker.shutting_down = None;
        broker.previous_broker_epoch = broker.clean_shutdown_epoch.take();
        broker.metadata = None;
        // The log stays on disk; what is committed is learned again from
        // the leader.
        broker.metadata_log.high_watermark = 0;
        broker.metadata_log.in_flight = None;
        broker.leading.clear();
        broker.following.clear();
        broker.coordinators.clear();
        broker.txn_coordinators.clear();
        broker.produce_requests.clear();
        broker.produce_request_bytes.clear();
        broker.client_rates.clear();
        broker.muted.clear();
        broker.producer_ids = None;
        let incarnation = broker.incarnation;
        self.record(TraceKind::BrokerStatus {
            broker: id,
            status: BrokerChange::Started,
        });
        // `LogManager#startup` schedules its retention task
        // `log.initial.task.delay.ms` (30 s) after startup, then every
        // `log.retention.check.interval.ms`: the first check waits the
        // 30 s even when the interval is shorter.
        let first_retention_check = LOG_MANAGER_INITIAL_DELAY_MS;
        for (delay, timer) in [
            (self.config.broker_heartbeat_interval_ms, Timer::BrokerHeartbeat),
            (self.config.replica_lag_time_max_ms / 2, Timer::IsrExpiration),
            (self.config.log_cleaner_backoff_ms, Timer::LogCleaner),
            (first_retention_check, Timer::RetentionCheck),
            (
                self.config.producer_id_expiration_check_interval_ms,
                Timer::ProducerIdExpiration,
            ),
        ] {
            self.schedule_timer(NodeId::Broker(id), incarnation, delay, timer);
        }
        // `LogManager#startup` schedules the flusher after
        // `log.initial.task.delay.ms`, then every
        // `log.flush.scheduler.interval.ms` (unset: never).
        if self.config.log_flush_scheduler_interval_ms.is_some() {
            self.schedule_timer(
                NodeId::Broker(id),
                incarnation,
                LOG_MANAGER_INITIAL_DELAY_MS,
                Timer::LogFlush,
            );
        }
        self.broker_fetch_metadata(id);
    }

    /// Fetches the metadata log from the controller it believes active,
    /// unless a fetch is in flight.
    pub(crate) fn broker_fetch_metadata(&mut self, id: BrokerId) {
        let broker = self.broker(id);
        if broker.status == BrokerStatus::Dead || broker.metadata_log.in_flight.is_some() {
            return;
        }
        let fetch = broker.next_id();
        broker.metadata_log.in_flight = Some((fetch, broker.controller));
        let replica = &broker.metadata_log;
        let message = Message::MetadataFetch {
            epoch: replica.epoch,
            fetch_offset: replica.log.len(),
            last_fetched_epoch: replica.log.last().map_or(0, |entry| entry.epoch),
        };
        let (incarnation, controller) = (broker.incarnation, broker.controller);
        self.send(NodeId::Broker(id), NodeId::Controller(controller), message);
        self.schedule_timer(
            NodeId::Broker(id),
            incarnation,
            super::quorum::REQUEST_TIMEOUT_MS,
            Timer::MetadataFetchTimeout(fetch),
        );
    }

    /// An answer to the broker's metadata fetch
    /// (`KafkaRaftClient#handleFetchResponse` as an observer).
    fn broker_metadata_response(&mut self, id: BrokerId, from: u32, answer: &super::types::MetadataFetchAnswer) {
        let super::types::MetadataFetchAnswer {
            epoch,
            leader,
            error,
            from_offset,
            ref entries,
            high_watermark,
            diverging,
        } = *answer;
        let controllers = self.config.controllers;
        let incarnation = self.brokers[&id].incarnation;
        let broker = self.broker(id);
        if broker.metadata_log.in_flight.is_none_or(|(_, to)| to != from) {
            // An answer to a fetch given up on.
            return;
        }
        broker.metadata_log.in_flight = None;
        let newer = epoch > broker.metadata_log.epoch;
        if epoch >= broker.metadata_log.epoch {
            broker.metadata_log.epoch = epoch;
            if let Some(leader) = leader {
                broker.controller = leader;
            }
        }
        if error.is_some() || leader != Some(from) {
            if newer && leader.is_some_and(|leader| leader != from) {
                // Told who leads: fetch from it now.
                self.broker_fetch_metadata(id);
            } else {
                // No better hint: ask another voter after a backoff.
                if leader.is_none() || !newer {
                    broker.controller = from % controllers + 1;
                }
                self.schedule_timer(
                    NodeId::Broker(id),
                    incarnation,
                    super::quorum::RECONNECT_BACKOFF_MS,
                    Timer::MetadataFetchRetry,
                );
            }
            return;
        }
        let replica = &mut broker.metadata_log;
        let (log, hw) = (&mut replica.log, &mut replica.high_watermark);
        let before = *hw;
        super::quorum::apply_fetched(log, hw, from_offset, entries, high_watermark, diverging);
        if let Some((epoch, end)) = diverging {
            let length = broker.metadata_log.log.len();
            self.record(TraceKind::BrokerStatus {
                broker: id,
                status: BrokerChange::TruncatedMetadataLog {
                    length,
                    controller: from,
                    epoch,
                    end_offset: end,
                },
            });
        }
        let broker = self.broker(id);
        if broker.metadata_log.high_watermark != before {
            self.broker_publish_metadata(id);
        }
        self.broker_fetch_metadata(id);
    }

    /// Applies the committed metadata, once the broker is registered and
    /// has caught up with its own registration (`BrokerLifecycleManager`'s
    /// initial catch-up: until then the broker takes on no partition).
    fn broker_publish_metadata(&mut self, id: BrokerId) {
        let broker = &self.brokers[&id];
        let (Some(state), Some(epoch)) = (broker.metadata_log.committed(), broker.broker_epoch) else {
            return;
        };
        if state.offset < epoch
            || broker
                .metadata
                .as_ref()
                .is_some_and(|image| image.offset >= state.offset)
        {
            return;
        }
        let image = state.image();
        self.broker_apply_metadata(id, image);
    }

    pub(crate) fn broker_kill(&mut self, id: BrokerId) {
        self.broker_stop(id, BrokerChange::Killed);
    }

    /// `brokers` lose power at once: a running one's process dies (an
    /// unclean shutdown), and every listed broker's logs lose what was past
    /// their recovery points. The metadata log is not touched: KRaft
    /// flushes it before it acknowledges anything (`KafkaRaftClient`).
    pub(crate) fn broker_power_loss(&mut self, brokers: &[BrokerId]) {
        let mut seen = std::collections::BTreeSet::new();
        for &id in brokers {
            if !self.brokers.contains_key(&id) || !seen.insert(id) {
                continue;
            }
            if self.brokers[&id].status == BrokerStatus::Dead {
                self.record(TraceKind::BrokerStatus {
                    broker: id,
                    status: BrokerChange::PowerLost,
                });
            } else {
                self.broker_stop(id, BrokerChange::PowerLost);
            }
            let now = self.now;
            let partitions: Vec<TopicPartition> = self.brokers[&id].logs.keys().cloned().collect();
            for partition in partitions {
                let log = self.broker(id).logs.get_mut(&partition).expect("listed above");
                let Some((to_offset, end, lost)) = log.lose_unflushed(now) else {
                    continue;
                };
                self.monitor.note_power_loss(id, &partition, lost);
                self.record(TraceKind::Truncated {
                    broker: id,
                    partition,
                    to_offset,
                    removed: end - to_offset,
                    reason: TruncationReason::PowerLoss,
                });
            }
        }
        let partitions = self
            .controller
            .partitions
            .iter()
            .map(|(partition, registration)| (partition, registration.replicas.as_slice()));
        self.monitor.note_power_cut(&seen, partitions);
    }

    /// The broker process ends (a crash, or the end of a controlled
    /// shutdown): its in-memory roles go, its logs stay.
    fn broker_stop(&mut self, id: BrokerId, status: BrokerChange) {
        let Some(broker) = self.brokers.get_mut(&id) else {
            return;
        };
        if broker.status == BrokerStatus::Dead {
            return;
        }
        broker.status = BrokerStatus::Dead;
        broker.leading.clear();
        broker.following.clear();
        broker.coordinators.clear();
        broker.txn_coordinators.clear();
        broker.produce_requests.clear();
        broker.produce_request_bytes.clear();
        broker.client_rates.clear();
        broker.muted.clear();
        broker.verifications.clear();
        broker.stalled.clear();
        broker.produce_connections.clear();
        broker.producer_ids = None;
        broker.shutting_down = None;
        // A clean stop ends with `LogManager#shutdown`, which flushes every
        // log (and writes the recovery-point checkpoint).
        if matches!(
            status,
            BrokerChange::StoppedAfterControlledShutdown
                | BrokerChange::StoppedShutdownTimedOut
                | BrokerChange::StoppedUnregistered
        ) {
            let now = self.now as i64;
            for log in broker.logs.values_mut() {
                log.log.flush(now);
            }
        }
        self.record(TraceKind::BrokerStatus { broker: id, status });
        self.close_connections(NodeId::Broker(id));
    }

    /// A graceful stop (`kafka-server-stop`): the broker asks the
    /// controller for a controlled shutdown (`BrokerLifecycleManager`,
    /// heartbeat with `wantShutDown`); the controller moves its leaderships
    /// and ISR places to other replicas, then lets it stop. No client waits
    /// for a session timeout. A broker not registered stops at once; one
    /// whose leaderships cannot move stops after
    /// `CONTROLLED_SHUTDOWN_TIMEOUT_MS` anyway.
    pub(crate) fn broker_graceful_stop(&mut self, id: BrokerId) {
        let now = self.now;
        let Some(broker) = self.brokers.get_mut(&id) else {
            return;
        };
        if broker.status == BrokerStatus::Dead || broker.shutting_down.is_some() {
            return;
        }
        if broker.broker_epoch.is_none() {
            self.broker_stop(id, BrokerChange::StoppedUnregistered);
            return;
        }
        broker.shutting_down = Some(now);
        self.record(TraceKind::BrokerStatus {
            broker: id,
            status: BrokerChange::AskedForControlledShutdown,
        });
        self.broker_send_heartbeat(id);
    }

    /// Every connection of a process that dies breaks: its peers see a
    /// disconnect and fail what they had in flight on it (a JoinGroup
    /// waiting for the rebalance, a long-poll fetch, a produce).
    pub(crate) fn close_connections(&mut self, node: NodeId) {
        let mut peers: Vec<NodeId> = self.brokers.keys().map(|&broker| NodeId::Broker(broker)).collect();
        peers.extend(
            self.quorum
                .nodes
                .keys()
                .map(|&controller| NodeId::Controller(controller)),
        );
        peers.extend((0..self.producers.len() as u32).map(NodeId::Producer));
        peers.extend((0..self.consumers.len() as u32).map(NodeId::Consumer));
        for peer in peers {
            if peer != node {
                self.connection_reset(node, peer);
            }
        }
    }

    pub(crate) fn broker_restart(&mut self, id: BrokerId) {
        if self
            .brokers
            .get(&id)
            .is_some_and(|broker| broker.status == BrokerStatus::Dead)
        {
            self.broker_start(id);
        }
    }

    pub(crate) fn broker_pause(&mut self, id: BrokerId, duration_ms: u64) {
        let now = self.now;
        let Some(broker) = self.brokers.get_mut(&id) else {
            return;
        };
        if broker.status != BrokerStatus::Running {
            return;
        }
        broker.status = BrokerStatus::Paused {
            until: now.saturating_add(duration_ms),
        };
        let incarnation = broker.incarnation;
        self.record(TraceKind::BrokerStatus {
            broker: id,
            status: BrokerChange::Paused { duration_ms },
        });
        self.schedule_timer(NodeId::Broker(id), incarnation, duration_ms, Timer::PauseEnd);
    }

    /// Sends a heartbeat (or, unregistered, a registration) to the
    /// controller the broker believes active.
    fn broker_send_heartbeat(&mut self, id: BrokerId) {
        let node = NodeId::Broker(id);
        let incarnation = self.brokers[&id].incarnation;
        self.broker(id).heartbeat_outstanding = true;
        let broker = &self.brokers[&id];
        match broker.broker_epoch {
            Some(broker_epoch) => {
                let metadata_offset = broker.metadata_log.committed().map_or(0, |state| state.offset);
                let want_shut_down = broker.shutting_down.is_some();
                self.send(
                    node,
                    self.controller_of(id),
                    Message::BrokerHeartbeat {
                        broker: id,
                        broker_epoch,
                        metadata_offset,
                        want_shut_down,
                    },
                );
            }
            None => {
                self.send(
                    node,
                    self.controller_of(id),
                    Message::BrokerRegistration {
                        broker: id,
                        incarnation,
                        previous_broker_epoch: broker.previous_broker_epoch,
                    },
                );
            }
        }
    }

    pub(crate) fn broker_timer(&mut self, id: BrokerId, timer: Timer) {
        let incarnation = self.brokers[&id].incarnation;
        let node = NodeId::Broker(id);
        match timer {
            Timer::PauseEnd => {
                self.broker(id).status = BrokerStatus::Running;
                self.record(TraceKind::BrokerStatus {
                    broker: id,
                    status: BrokerChange::Resumed,
                });
            }
            Timer::BrokerHeartbeat => {
                if self.brokers[&id]
                    .shutting_down
                    .is_some_and(|asked| self.now >= asked + CONTROLLED_SHUTDOWN_TIMEOUT_MS)
                {
                    self.broker_stop(id, BrokerChange::StoppedShutdownTimedOut);
                    return;
                }
                let controllers = self.config.controllers;
                let broker = self.broker(id);
                if broker.heartbeat_outstanding {
                    // No answer to the last heartbeat: try the next controller.
                    broker.controller = broker.controller % controllers + 1;
                }
                self.schedule_timer(
                    node,
                    incarnation,
                    self.config.broker_heartbeat_interval_ms,
                    Timer::BrokerHeartbeat,
                );
                self.broker_send_heartbeat(id);
            }
            Timer::IsrExpiration => {
                self.schedule_timer(
                    node,
                    incarnation,
                    (self.config.replica_lag_time_max_ms / 2).max(1),
                    Timer::IsrExpiration,
                );
                self.leader_maybe_shrink_isr(id);
            }
            Timer::LogCleaner => {
                self.schedule_timer(
                    node,
                    incarnation,
                    self.config.log_cleaner_backoff_ms.max(1),
                    Timer::LogCleaner,
                );
                self.broker_clean_logs(id);
            }
            Timer::Unmute(client) => self.broker_unmute(id, client),
            Timer::ProducerIdExpiration => {
                self.schedule_timer(
                    node,
                    incarnation,
                    self.config.producer_id_expiration_check_interval_ms.max(1),
                    Timer::ProducerIdExpiration,
                );
                self.broker_expire_producers(id);
            }
            Timer::LogFlush => {
                let Some(interval) = self.config.log_flush_scheduler_interval_ms else {
                    return;
                };
                self.schedule_timer(node, incarnation, interval.max(1), Timer::LogFlush);
                let now = self.now as i64;
                for log in self.broker(id).logs.values_mut() {
                    log.log.flush_if_due(now);
                }
            }
            Timer::RetentionCheck => {
                self.schedule_timer(
                    node,
                    incarnation,
                    self.config.log_retention_check_interval_ms.max(1),
                    Timer::RetentionCheck,
                );
                self.broker_retention_check(id);
            }
            Timer::FollowerFetch(partition) => self.follower_fetch(id, &partition),
            Timer::MetadataFetchRetry => self.broker_fetch_metadata(id),
            Timer::MetadataFetchTimeout(fetch) => {
                // No answer in controller.quorum.request.timeout.ms: ask
                // another voter who leads.
                let controllers = self.config.controllers;
                let broker = self.broker(id);
                if broker.metadata_log.in_flight.is_some_and(|(id, _)| id == fetch) {
                    broker.metadata_log.in_flight = None;
                    broker.controller = broker.controller % controllers + 1;
                    self.broker_fetch_metadata(id);
                }
            }
            Timer::CoordinatorPoll(partition) => self.coordinator_poll(id, &partition),
            Timer::TxnTick(partition) => self.txn_tick(id, &partition),
            Timer::FollowerFetchTimeout(partition, fetch) => {
                let broker = self.broker(id);
                if let Some(state) = broker.following.get_mut(&partition) {
                    if state.in_flight == Some(fetch) {
                        state.in_flight = None;
                        self.follower_fetch(id, &partition);
                    }
                }
            }
            Timer::DelayedFetchExpiry(partition, held) => {
                let broker = self.broker(id);
                let Some(leader) = broker.leading.get_mut(&partition) else {
                    return;
                };
                let Some(position) = leader.held.iter().position(|fetch| fetch.id == held) else {
                    return;
                };
                let fetch = leader.held.remove(position);
                self.answer_held(id, &partition, fetch);
            }
            Timer::ProduceExpiry(partition, request) => {
                let broker = self.broker(id);
                let Some(leader) = broker.leading.get_mut(&partition) else {
                    return;
                };
                let Some(position) = leader.parked.iter().position(|parked| parked.timer == request) else {
                    return;
                };
                let parked = leader.parked.remove(position);
                self.answer_parked(id, &partition, parked, Err(ErrorCode::RequestTimedOut));
            }
            Timer::VerificationRetry(request) => self.verification_retry(id, request),
            Timer::VerificationTimeout(request) => self.verification_lost(id, request),
            Timer::StalledRequest(stalled) => match self.broker(id).stalled.remove(&stalled) {
                Some((from, message @ Message::Produce { .. }, connection)) => {
                    self.broker_handle_produce(id, from, message, connection);
                }
                Some((from, message, _)) => self.broker_handle(id, from, message),
                None => {}
            },
            _ => {}
        }
    }

    pub(crate) fn broker_receive(&mut self, id: BrokerId, from: NodeId, message: Message) {
        let node = NodeId::Broker(id);
        let message = match self.broker_hold_if_muted(id, from, message) {
            Some(message) => message,
            None => return,
        };
        let request = message.name();
        if let (MessageName::Produce | MessageName::EndTxn, NodeId::Producer(_)) = (request, from) {
            if let Some(delay) = self.network.take_stall(from, request) {
                // The request was read; a handler takes it `delay` later,
                // whatever became of its connection (`RequestChannel`).
                // Until then the connection stays muted, as Kafka's
                // `SocketServer` mutes a connection from reading one
                // request until its answer is sent: what the client sends
                // behind it waits unread, and is lost if the client closes
                // the connection.
                let stalled = self.broker(id).next_verification();
                let connection = self.network.connection(node, from);
                self.broker(id).stalled.insert(stalled, (from, message, connection));
                let incarnation = self.brokers[&id].incarnation;
                self.schedule_timer(node, incarnation, delay, Timer::StalledRequest(stalled));
                self.broker_mute(id, from, delay);
                self.record(TraceKind::RequestStalled {
                    broker: id,
                    client: from,
                    request,
                    delay_ms: delay,
                });
                return;
            }
        }
        self.broker_handle(id, from, message);
    }

    /// A request a handler takes (at once, or after a stall).
    fn broker_handle(&mut self, id: BrokerId, from: NodeId, message: Message) {
        let node = NodeId::Broker(id);
        if self.txn_receive(id, from, &message) {
            return;
        }
        if self.coordinator_receive(id, from, &message) {
            return;
        }
        match message {
            Message::ConsumerFetch {
                partition,
                offset,
                isolation,
                current_leader_epoch,
            } => match self.broker_check_leader_epoch(id, &partition, current_leader_epoch) {
                Ok(()) => self.leader_consumer_fetch(id, from, &partition, offset, isolation),
                Err(error) => self.send(
                    NodeId::Broker(id),
                    from,
                    Message::consumer_fetch_error(partition, error),
                ),
            },
            Message::OffsetForLeaderEpoch {
                partition,
                leader_epoch,
                current_leader_epoch,
            } => self.broker_offset_for_leader_epoch(id, from, partition, leader_epoch, current_leader_epoch),
            Message::ListOffsets {
                partition,
                spec,
                isolation,
            } => self.broker_list_offsets(id, from, partition, spec, isolation),
            Message::BrokerHeartbeatResponse {
                broker_epoch,
                fenced,
                should_shut_down,
                ..
            } => self.broker_heartbeat_answer(id, from, broker_epoch, fenced, should_shut_down),
            Message::BrokerRegistrationResponse { result } => self.broker_registration_answer(id, from, result),
            Message::MetadataFetchResponse(answer) => {
                if let NodeId::Controller(controller) = from {
                    self.broker_metadata_response(id, controller, &answer);
                }
            }
            Message::ConnectionClosed => self.broker_connection_closed(id, from),
            // `NOT_CONTROLLER`: the request goes again to the controller
            // named as leader (`NodeToControllerChannelManager`), at once;
            // with no name, the next heartbeat tries another one.
            Message::NotController { leader } => self.broker_not_controller(id, from, leader),
            Message::MetadataRequest => self.broker_metadata_answer(id, from),
            Message::Produce { .. } => {
                let connection = self.network.connection(node, from);
                self.broker_handle_produce(id, from, message, connection);
            }
            Message::LeaderAddPartitionsToTxnResponse { request, results } => {
                self.verification_answered(id, request, results)
            }
            Message::InitProducerId { request, .. } => {
                let result = Ok((self.broker_next_producer_id(id), 0));
                let finalized = self.broker_transaction_version(id);
                self.send(
                    node,
                    from,
                    Message::InitProducerIdResponse {
                        request,
                        result,
                        finalized,
                    },
                );
            }
            Message::Fetch {
                partition,
                replica,
                fetch_offset,
                last_fetched_epoch,
                current_leader_epoch,
                log_start_offset,
            } => self.leader_fetch(
                id,
                &partition,
                replica,
                fetch_offset,
                last_fetched_epoch,
                current_leader_epoch,
                log_start_offset,
            ),
            Message::FetchResponse {
                partition,
                leader_epoch,
                batches,
                high_watermark,
                log_start_offset,
                error,
                diverging,
            } => self.follower_handle_response(
                id,
                &partition,
                leader_epoch,
                batches,
                high_watermark,
                log_start_offset,
                error,
                diverging,
            ),
            Message::AlterPartitionResponse { partition, result } => {
                self.broker_alter_partition_answer(id, partition, result)
            }
            _ => {}
        }
    }

    /// KIP-320's check of a client's leader epoch before a consumer fetch
    /// or an `OffsetForLeaderEpoch` (`Partition#checkCurrentLeaderEpoch`,
    /// then a leader is required): older than this broker's, the client is
    /// fenced (FENCED_LEADER_EPOCH); newer, this broker is behind
    /// (UNKNOWN_LEADER_EPOCH); no epoch, or the same, goes on if it leads.
    fn broker_check_leader_epoch(
        &self,
        id: BrokerId,
        partition: &TopicPartition,
        current_leader_epoch: Option<u32>,
    ) -> Result<(), ErrorCode> {
        let broker = &self.brokers[&id];
        let local = broker
            .leading
            .get(partition)
            .map(|leader| leader.leader_epoch)
            .or_else(|| broker.following.get(partition).map(|follower| follower.leader_epoch));
        match (current_leader_epoch, local) {
            (Some(client), Some(local)) if client < local => Err(ErrorCode::FencedLeaderEpoch),
            (Some(client), Some(local)) if client > local => Err(ErrorCode::UnknownLeaderEpoch),
            _ if broker.leading.contains_key(partition) => Ok(()),
            _ => Err(ErrorCode::NotLeaderOrFollower),
        }
    }

    /// KIP-320: a consumer's `OffsetForLeaderEpoch`
    /// (`ReplicaManager#lastOffsetForLeaderEpoch`, always from the leader):
    /// the largest epoch at or below the one asked for and where it ends
    /// in this leader's log (`LeaderEpochFileCache#endOffsetFor`).
    fn broker_offset_for_leader_epoch(
        &mut self,
        id: BrokerId,
        from: NodeId,
        partition: TopicPartition,
        leader_epoch: u32,
        current_leader_epoch: u32,
    ) {
        let result = self
            .broker_check_leader_epoch(id, &partition, Some(current_leader_epoch))
            .map(|()| {
                let log = &self.brokers[&id].logs[&partition];
                let (epoch, end_offset) = log
                    .epoch_cache
                    .end_offset_for(i64::from(leader_epoch), log.log_end_offset());
                (epoch >= 0 && end_offset >= 0).then_some((epoch as u32, end_offset as Offset))
            });
        self.send(
            NodeId::Broker(id),
            from,
            Message::OffsetForLeaderEpochResponse { partition, result },
        );
    }

    /// `ListOffsets`: a partition's log start offset or high watermark, from
    /// its leader.
    fn broker_list_offsets(
        &mut self,
        id: BrokerId,
        from: NodeId,
        partition: TopicPartition,
        spec: OffsetSpec,
        isolation: IsolationLevel,
    ) {
        let result = match self.brokers[&id].leading.get(&partition) {
            Some(_) => {
                let log = &self.brokers[&id].logs[&partition];
                // LATEST is the end a consumer of that isolation level may
                // read to (`Partition#fetchOffsetForTimestamp`): the high
                // watermark, or for `read_committed` the last stable offset.
                Ok(match (spec, isolation) {
                    (OffsetSpec::Earliest, _) => log.log_start_offset(),
                    (OffsetSpec::Latest, IsolationLevel::ReadUncommitted) => log.high_watermark,
                    (OffsetSpec::Latest, IsolationLevel::ReadCommitted) => log.last_stable_offset(),
                })
            }
            None => Err(ErrorCode::NotLeaderOrFollower),
        };
        self.send(
            NodeId::Broker(id),
            from,
            Message::ListOffsetsResponse { partition, result },
        );
    }

    /// The controller's `BrokerHeartbeatResponse`: fenced or not, and at the
    /// end of a controlled shutdown, stop.
    fn broker_heartbeat_answer(
        &mut self,
        id: BrokerId,
        from: NodeId,
        broker_epoch: u64,
        fenced: bool,
        should_shut_down: bool,
    ) {
        let broker = self.broker(id);
        broker.heartbeat_outstanding = false;
        if let NodeId::Controller(controller) = from {
            broker.controller = controller;
        }
        if broker.broker_epoch != Some(broker_epoch) {
            return;
        }
        broker.fenced = fenced;
        if should_shut_down && broker.shutting_down.is_some() {
            // `BrokerServer#shutdown` writes the clean-shutdown
            // file with the broker epoch.
            broker.clean_shutdown_epoch = Some(broker_epoch);
            self.broker_stop(id, BrokerChange::StoppedAfterControlledShutdown);
        }
    }

    /// The controller's `BrokerRegistrationResponse`: the broker's new epoch.
    fn broker_registration_answer(&mut self, id: BrokerId, from: NodeId, result: Result<u64, ErrorCode>) {
        let broker = self.broker(id);
        broker.heartbeat_outstanding = false;
        if let NodeId::Controller(controller) = from {
            broker.controller = controller;
        }
        // Refused (DUPLICATE_BROKER_REGISTRATION): the next
        // heartbeat interval registers again.
        if let Ok(epoch) = result {
            broker.broker_epoch = Some(epoch);
            self.broker_publish_metadata(id);
        }
    }

    /// `NOT_CONTROLLER` from the controller the broker asked.
    fn broker_not_controller(&mut self, id: BrokerId, from: NodeId, leader: Option<u32>) {
        let controllers = self.config.controllers;
        let broker = self.broker(id);
        broker.heartbeat_outstanding = false;
        broker.controller = leader.unwrap_or(broker.controller % controllers + 1);
        if leader.is_some_and(|leader| NodeId::Controller(leader) != from) {
            self.broker_send_heartbeat(id);
        }
    }

    /// A client's `Metadata`: leaders and epochs as this broker's metadata
    /// knows them.
    fn broker_metadata_answer(&mut self, id: BrokerId, from: NodeId) {
        let leaders = self.brokers[&id]
            .metadata
            .as_ref()
            .map(|image| {
                image
                    .partitions
                    .iter()
                    .map(|(partition, registration)| {
                        (partition.clone(), (registration.leader, registration.leader_epoch))
                    })
                    .gather()
            })
            .unwrap_or_default();
        self.send(NodeId::Broker(id), from, Message::MetadataResponse { leaders });
    }

    /// The controller's `AlterPartitionResponse`: the leader's new ISR, if it
    /// is still current.
    fn broker_alter_partition_answer(
        &mut self,
        id: BrokerId,
        partition: TopicPartition,
        result: Result<PartitionRegistration, ErrorCode>,
    ) {
        let broker = self.broker(id);
        let Some(leader) = broker.leading.get_mut(&partition) else {
            return;
        };
        leader.pending_isr = None;
        if let Ok(registration) = result {
            if registration.leader_epoch == leader.leader_epoch
                && registration.partition_epoch >= leader.partition_epoch
            {
                leader.isr = registration.isr;
                leader.partition_epoch = registration.partition_epoch;
            }
        }
        self.leader_maybe_advance_hw(id, &partition, HighWatermarkTrigger::IsrChanged);
    }

    /// Takes on the roles the new metadata gives this broker
    /// (`ReplicaManager#applyDelta`: `makeLeader` / `makeFollower`).
    fn broker_apply_metadata(&mut self, id: BrokerId, image: MetadataImage) {
        if self.brokers[&id]
            .metadata
            .as_ref()
            .is_some_and(|current| current.offset >= image.offset)
        {
            return;
        }
        let now = self.now;
        let incarnation = self.brokers[&id].incarnation;
        let partitions: Vec<_> = image
            .partitions
            .iter()
            .filter(|(_, registration)| registration.replicas.contains(&id))
            .map(|(partition, registration)| (partition.clone(), registration.clone()))
            .collect();
        self.broker(id).fenced = image.fenced.contains(&id);
        self.broker(id).metadata = Some(image);
        for (partition, registration) in partitions {
            let log_config = self.log_config(&partition);
            self.broker(id)
                .logs
                .entry(partition.clone())
                .or_insert_with(|| PartitionLog::new(log_config, now));
            if registration.leader == Some(id) {
                let broker = self.broker(id);
                match broker.leading.get_mut(&partition) {
                    Some(leader) if leader.leader_epoch == registration.leader_epoch => {
                        if registration.partition_epoch > leader.partition_epoch {
                            leader.isr = registration.isr.clone();
                            leader.partition_epoch = registration.partition_epoch;
                            leader.replicas = registration.replicas.clone();
                        }
                        continue;
                    }
                    Some(leader) if leader.leader_epoch > registration.leader_epoch => continue,
                    _ => {}
                }
                let was_leader = broker.leading.contains_key(&partition);
                broker.following.remove(&partition);
                let log = broker.logs.get_mut(&partition).expect("created above");
                let log_end = log.log_end_offset();
                log.epoch_cache.assign(registration.leader_epoch, log_end);
                let followers = registration
                    .replicas
                    .iter()
                    .filter(|&&replica| replica != id)
                    .map(|&replica| {
                        let mut state = broker
                            .leading
                            .get(&partition)
                            .and_then(|leader| leader.followers.get(&replica))
                            .map(|info| info.state)
                            .unwrap_or_default();
                        state.reset_on_leader_change(now, log_end, !was_leader, registration.isr.contains(&replica));
                        (
                            replica,
                            FollowerInfo {
                                state,
                                last_fetch: None,
                            },
                        )
                    })
                    .gather();
                let (parked_before, held_before) = broker
                    .leading
                    .remove(&partition)
                    .map(|leader| (leader.parked, (leader.held, leader.leader_epoch)))
                    .unwrap_or_default();
                broker.leading.insert(
                    partition.clone(),
                    LeaderState {
                        leader_epoch: registration.leader_epoch,
                        partition_epoch: registration.partition_epoch,
                        isr: registration.isr.clone(),
                        pending_isr: None,
                        pending_isr_sent_ms: 0,
                        replicas: registration.replicas.clone(),
                        followers,
                        epoch_start_offset: log_end,
                        parked: Vec::new(),
                        held: Vec::new(),
                    },
                );
                self.fail_parked(id, &partition, parked_before, ErrorCode::NotLeaderOrFollower);
                self.fail_held(id, &partition, held_before.0, held_before.1);
                self.leader_maybe_advance_hw(id, &partition, HighWatermarkTrigger::BecameLeader);
                if *partition.topic == *super::coordinator::OFFSETS_TOPIC {
                    self.coordinator_partition_changed(id, &partition, true);
                }
                if *partition.topic == *super::txn::TRANSACTION_STATE_TOPIC {
                    self.txn_partition_changed(id, &partition, true);
                }
            } else {
                let broker = self.broker(id);
                let old_leader = broker.leading.remove(&partition);
                let was_leader = old_leader.is_some();
                let (parked, held) = old_leader
                    .map(|leader| (leader.parked, (leader.held, leader.leader_epoch)))
                    .unwrap_or_default();
                match registration.leader {
                    Some(leader) => {
                        let already = broker.following.get(&partition).is_some_and(|state| {
                            state.leader == leader && state.leader_epoch == registration.leader_epoch
                        });
                        if !already {
                            broker.following.insert(
                                partition.clone(),
                                FollowerState {
                                    leader,
                                    leader_epoch: registration.leader_epoch,
                                    in_flight: None,
                                },
                            );
                            self.schedule_timer(
                                NodeId::Broker(id),
                                incarnation,
                                0,
                                Timer::FollowerFetch(partition.clone()),
                            );
                        }
                    }
                    None => {
                        broker.following.remove(&partition);
                    }
                }
                self.fail_parked(id, &partition, parked, ErrorCode::NotLeaderOrFollower);
                self.fail_held(id, &partition, held.0, held.1);
                if was_leader && *partition.topic == *super::coordinator::OFFSETS_TOPIC {
                    self.coordinator_partition_changed(id, &partition, false);
                }
                if was_leader && *partition.topic == *super::txn::TRANSACTION_STATE_TOPIC {
                    self.txn_partition_changed(id, &partition, false);
                }
            }
        }
    }

    /// A connection of broker `id` broke (`NetworkClient` disconnect on the
    /// client side, a closed channel on the server side).
    fn broker_connection_closed(&mut self, id: BrokerId, peer: NodeId) {
        let incarnation = self.brokers[&id].incarnation;
        let controllers = self.config.controllers;
        let broker = self.broker(id);
        match peer {
            NodeId::Controller(controller) => {
                // The heartbeat in flight failed: the next one tries another
                // controller (`NodeToControllerChannelManager` looks for
                // the active controller again); an AlterPartition in flight
                // failed and is proposed again.
                if broker.controller == controller {
                    broker.controller = controller % controllers + 1;
                    broker.heartbeat_outstanding = false;
                }
                // The metadata fetch in flight failed: fetch again (from
                // the next controller) after the reconnect backoff.
                if broker.metadata_log.in_flight.is_some_and(|(_, to)| to == controller) {
                    broker.metadata_log.in_flight = None;
                    self.schedule_timer(
                        NodeId::Broker(id),
                        incarnation,
                        super::quorum::RECONNECT_BACKOFF_MS,
                        Timer::MetadataFetchRetry,
                    );
                }
                let broker = self.broker(id);
                for leader in broker.leading.values_mut() {
                    leader.pending_isr = None;
                }
            }
            NodeId::Broker(other) => {
                self.verifications_disconnected(id, other);
                let broker = self.broker(id);
                // As a follower: the fetch in flight to that leader failed;
                // the fetcher backs off (`replica.fetch.backoff.ms`, 1000)
                // and fetches again.
                let mut refetch = Vec::new();
                for (partition, state) in broker.following.iter_mut() {
                    if state.leader == other && state.in_flight.is_some() {
                        state.in_flight = None;
                        refetch.push(partition.clone());
                    }
                }
                // As a leader: fetches that follower parked are gone with
                // its connection.
                for leader in broker.leading.values_mut() {
                    leader
                        .held
                        .retain(|fetch| fetch.consumer.is_some() || fetch.replica != other);
                }
                for partition in refetch {
                    self.schedule_timer(
                        NodeId::Broker(id),
                        incarnation,
                        FETCH_BACKOFF_MS,
                        Timer::FollowerFetch(partition),
                    );
                }
            }
            client => {
                // A client's parked requests are answered on a connection
                // that is gone: drop them.
                for leader in broker.leading.values_mut() {
                    leader.held.retain(|fetch| fetch.consumer != Some(client));
                    leader.parked.retain(|parked| {
                        !(parked.client == client && matches!(parked.reply, ParkedReply::Produce { .. }))
                    });
                }
                broker.produce_requests.retain(|(waiting, _), _| *waiting != client);
                broker.produce_connections.retain(|(waiting, _), _| *waiting != client);
            }
        }
    }

    /// A leader that steps down (or starts a new epoch) answers the fetches
    /// it was holding with `NOT_LEADER_OR_FOLLOWER` (`DelayedFetch`
    /// completes when the partition is no longer led here), so followers
    /// and consumers look for the new leader instead of waiting.
    fn fail_held(&mut self, id: BrokerId, partition: &TopicPartition, held: Vec<HeldFetch>, leader_epoch: u32) {
        let node = NodeId::Broker(id);
        for fetch in held {
            let message = match fetch.consumer {
                Some(_) => Message::consumer_fetch_error(partition.clone(), ErrorCode::NotLeaderOrFollower),
                None => Message::FetchResponse {
                    partition: partition.clone(),
                    leader_epoch,
                    batches: Vec::new(),
                    high_watermark: 0,
                    log_start_offset: 0,
                    error: Some(ErrorCode::NotLeaderOrFollower),
                    diverging: None,
                },
            };
            let client = fetch.consumer.unwrap_or(NodeId::Broker(fetch.replica));
            self.send(node, client, message);
        }
    }

    fn fail_parked(&mut self, id: BrokerId, partition: &TopicPartition, parked: Vec<Parked>, error: ErrorCode) {
        for parked in parked {
            self.answer_parked(id, partition, parked, Err(error));
        }
    }

    /// Answers a parked append: a ProduceResponse, or the end of an offset commit.
    fn answer_parked(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        parked: Parked,
        result: Result<Offset, ErrorCode>,
    ) {
        match parked.reply {
            ParkedReply::Produce { request, .. } => {
                self.produce_partition_done(id, parked.client, request, partition, result)
            }
            ParkedReply::CoordinatorWrite { write } => {
                self.coordinator_parked_done(id, partition, write, result.map(|_| ()));
            }
            ParkedReply::TxnWrite { write } => self.txn_parked_done(id, partition, write, result.map(|_| ())),
            ParkedReply::TxnMarker { transactional_id } => {
                self.txn_marker_parked_done(id, partition, parked.client, transactional_id, result.map(|_| ()));
            }
        }
    }

    /// A produce request a handler takes, read from `connection`
    /// (`KafkaApis#handleProduceRequest`, `ReplicaManager#appendRecords`):
    /// every partition's batch is appended (or refused) on its own, a
    /// transaction's first batch on a partition after the transaction
    /// coordinator is asked (KIP-890, see [`super::verification`]); with
    /// acks=1 the answer goes out at once, with acks=all once every
    /// partition's high watermark passed its batch or that partition failed
    /// or timed out (`DelayedProduce` completes when no partition is still
    /// pending). One `ProduceResponse` answers them all, on the connection
    /// the request came on; acks=0 gets none.
    fn broker_handle_produce(&mut self, id: BrokerId, client: NodeId, message: Message, connection: u32) {
        let Message::Produce {
            request,
            acks,
            timeout_ms,
            batches,
            transactional_id,
            transaction_v2,
        } = message
        else {
            return;
        };
        if acks != Acks::None {
            let pending = batches.iter().map(|(partition, _)| (partition.clone(), None)).collect();
            self.broker(id).produce_requests.insert((client, request), pending);
            self.broker(id)
                .produce_connections
                .insert((client, request), connection);
            if let NodeId::Producer(producer) = client {
                let bytes = batches
                    .iter()
                    .flat_map(|(_, batch)| batch.records.iter())
                    .map(|(_, bytes)| u64::from(*bytes))
                    .sum();
                let client_id = self.producer_client_id(producer);
                self.broker(id)
                    .produce_request_bytes
                    .insert((client, request), (client_id, bytes));
            }
        }
        let ready = self.leader_verify_batches(
            id,
            client,
            request,
            acks,
            timeout_ms,
            transactional_id,
            transaction_v2,
            batches,
        );
        for (partition, batch, verification) in ready {
            self.leader_produce(id, client, request, partition, batch, acks, timeout_ms, verification);
        }
    }

    /// The `transaction.version` broker `id` has finalized, as its
    /// metadata says (a new 4.1 cluster's before it has any).
    pub(crate) fn broker_transaction_version(&self, id: BrokerId) -> crate::protocol::transactions::TransactionVersion {
        self.brokers[&id]
            .metadata
            .as_ref()
            .map_or(self.config.transaction_version, |image| image.transaction_version)
    }

    /// One partition of a produce request is done; once every partition
    /// is, the request is answered (`DelayedProduce#tryComplete`).
    pub(crate) fn produce_partition_done(
        &mut self,
        id: BrokerId,
        client: NodeId,
        request: u64,
        partition: &TopicPartition,
        result: Result<Offset, ErrorCode>,
    ) {
        let broker = self.broker(id);
        let Some(parts) = broker.produce_requests.get_mut(&(client, request)) else {
            return;
        };
        if let Some(slot) = parts
            .iter_mut()
            .find(|(part, slot)| part == partition && slot.is_none())
        {
            slot.1 = Some(result);
        }
        if parts.iter().any(|(_, slot)| slot.is_none()) {
            return;
        }
        let parts = broker
            .produce_requests
            .remove(&(client, request))
            .expect("looked up above");
        let responses = parts
            .into_iter()
            .map(|(partition, result)| (partition, result.expect("every partition is done")))
            .collect();
        // The client's produce quota (`ClientQuotaManager#maybeRecordAndGetThrottleTimeMs`):
        // the request's bytes go into its rate; over the quota, the answer
        // says how long to wait (KIP-219: the client waits before its next
        // request to this broker).
        let now = self.now;
        let throttle_time_ms = match self.broker(id).produce_request_bytes.remove(&(client, request)) {
            Some((client_id, bytes)) => match self.config.client_quota(&client_id, QuotaType::Produce) {
                Some(quota) => self
                    .broker(id)
                    .client_rates
                    .entry((QuotaType::Produce, client_id))
                    .or_default()
                    .record_and_throttle_ms(bytes as f64, now as i64, quota as f64),
                None => 0,
            },
            None => 0,
        };
        self.broker_mute(id, client, throttle_time_ms);
        let read_from = self.broker(id).produce_connections.remove(&(client, request));
        if read_from.is_some_and(|read_from| read_from != self.network.connection(NodeId::Broker(id), client)) {
            // Its connection closed while it was handled: the answer has
            // nowhere to go.
            return;
        }
        self.send(
            NodeId::Broker(id),
            client,
            Message::ProduceResponse {
                request,
                responses,
                throttle_time_ms,
            },
        );
    }

    /// The next producer id this broker hands out (`ProducerIdManager`).
    /// Simplification: instead of asking the active controller for a
    /// block (`AllocateProducerIds`, `RPCProducerIdManager`), a broker takes
    /// its blocks of 1000 ids from a range no other broker uses (its own
    /// block numbers, interleaved by broker id), counting the blocks it
    /// took on disk so a restart never hands an id out twice.
    pub(crate) fn broker_next_producer_id(&mut self, id: BrokerId) -> u64 {
        const BLOCK_SIZE: u64 = 1_000;
        const BROKER_SLOTS: u64 = 1_024;
        let broker = self.broker(id);
        let (next, end) = match broker.producer_ids {
            Some((next, end)) if next < end => (next, end),
            _ => {
                let block = broker.producer_id_blocks;
                broker.producer_id_blocks += 1;
                let start = (block * BROKER_SLOTS + u64::from(id) % BROKER_SLOTS) * BLOCK_SIZE;
                (start, start + BLOCK_SIZE)
            }
        };
        broker.producer_ids = Some((next + 1, end));
        next
    }

    /// Writes a transaction marker to `partition` on its leader `broker`,
    /// as a `WriteTxnMarkers` request from the transaction coordinator
    /// does (`ReplicaManager#appendRecords` with `AppendOrigin.COORDINATOR`):
    /// refused with `INVALID_PRODUCER_EPOCH` for an epoch older than the
    /// producer's, `TRANSACTION_COORDINATOR_FENCED` for an older
    /// coordinator epoch (`ProducerAppendInfo#appendEndTxnMarker`),
    /// `NOT_LEADER_OR_FOLLOWER` elsewhere; otherwise appended and
    /// replicated like any record: the producer's transaction closes, an
    /// aborted one enters the transaction index, and the last stable
    /// offset moves once the high watermark passes the marker. Returns the
    /// marker's offset. (The transaction coordinator that sends these is
    /// not simulated yet.)
    pub fn write_txn_marker(
        &mut self,
        broker: BrokerId,
        partition: &TopicPartition,
        producer_id: u64,
        epoch: u16,
        marker: TxnMarker,
    ) -> Result<Offset, ErrorCode> {
        let leader = self
            .brokers
            .get(&broker)
            .and_then(|state| state.leading.get(partition))
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        let (leader_epoch, isr_size) = (leader.leader_epoch, leader.isr.len() as u32);
        // Markers are appended with acks=-1 (`KafkaApis#handleWriteTxnMarkersRequest`),
        // so `Partition#appendRecordsToLeader` refuses them below
        // min.insync.replicas; the coordinator sends them again.
        let (min_isr, replication_factor) = self
            .topic_config(partition)
            .map_or((1, 1), |topic| (topic.min_insync_replicas, topic.replication_factor));
        if admit_produce(Acks::All, isr_size, min_isr, replication_factor) == ProduceAdmission::RejectNotEnoughReplicas
        {
            return Err(ErrorCode::NotEnoughReplicas);
        }
        let log = &self.brokers[&broker].logs[partition];
        let offset = log.log_end_offset();
        log.producers
            .prepare_update(producer_id, AppendOrigin::Coordinator)
            .append_end_txn_marker(
                marker.control,
                producer_epoch(epoch),
                marker.coordinator_epoch,
                offset,
                NO_TIMESTAMP,
            )
            .map_err(|error| match error {
                crate::replication::idempotence::ProducerStateError::TransactionCoordinatorFenced { .. } => {
                    ErrorCode::TransactionCoordinatorFenced
                }
                _ => ErrorCode::InvalidProducerEpoch,
            })?;
        let id = MARKER_RECORD_BASE + self.markers_written;
        self.markers_written += 1;
        let now = self.now;
        let log = self
            .broker(broker)
            .logs
            .get_mut(partition)
            .expect("a leader has its log");
        log.append_records(
            vec![Record {
                offset,
                leader_epoch,
                id,
                // A control batch with one record (`EndTransactionMarker`):
                // its value is the version and the coordinator epoch. (Its
                // 4-byte key, the version and type, is left out.)
                bytes: 6,
                batch: Some(BatchSequence {
                    producer_id,
                    epoch,
                    first_sequence: -1,
                    last_sequence: -1,
                    transactional: true,
                    marker: Some(marker),
                }),
                timestamp: now as i64,
                key: None,
                tombstone: false,
                headers_size: 1,
            }],
            now,
        );
        // A marker on a `__consumer_offsets` partition settles the
        // transaction's pending offsets there (`GroupCoordinatorShard#replayEndTransactionMarker`).
        let commit = marker.control == crate::replication::transactions::ControlType::Commit;
        let settled = match self.broker(broker).coordinators.get_mut(partition) {
            Some(coordinator) => coordinator.shard.replay_end_transaction(producer_id, commit),
            None => Vec::new(),
        };
        for (group, offsets) in settled {
            self.record(TraceKind::OffsetsCommitted { group, offsets });
        }
        self.record(TraceKind::MarkerWritten {
            broker,
            partition: partition.clone(),
            producer_id,
            control: marker.control,
            offset,
        });
        self.leader_release_held_fetches_pub(broker, partition);
        self.leader_maybe_advance_hw(broker, partition, HighWatermarkTrigger::LeaderAppended);
        Ok(offset)
    }

    /// `appendRecordsToLeader` for one partition's batch of a produce
    /// request: each partition passes its own checks (leadership,
    /// `NOT_ENOUGH_REPLICAS`, the idempotent producer's sequence).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn leader_produce(
        &mut self,
        id: BrokerId,
        client: NodeId,
        request: u64,
        partition: TopicPartition,
        batch: ProducerBatch,
        acks: Acks,
        timeout_ms: u64,
        verification: Option<u64>,
    ) {
        let respond = |simulation: &mut Simulation, result| {
            if acks != Acks::None {
                simulation.produce_partition_done(id, client, request, &partition, result);
            }
        };
        let Some(leader) = self.brokers[&id].leading.get(&partition) else {
            respond(self, Err(ErrorCode::NotLeaderOrFollower));
            return;
        };
        let (isr_size, leader_epoch) = (leader.isr.len() as u32, leader.leader_epoch);
        // `Partition#appendRecordsToLeader` checks min.insync.replicas
        // first, before the log validates the records and the producer
        // state looks for a duplicate: a retried batch is refused
        // NOT_ENOUGH_REPLICAS while the ISR is too small, even if the
        // leader already has it.
        let (min_isr, replication_factor) = self
            .topic_config(&partition)
            .map_or((1, 1), |topic| (topic.min_insync_replicas, topic.replication_factor));
        match admit_produce(acks, isr_size, min_isr, replication_factor) {
            ProduceAdmission::RejectNotEnoughReplicas => {
                respond(self, Err(ErrorCode::NotEnoughReplicas));
                return;
            }
            ProduceAdmission::AppendAndAnswer | ProduceAdmission::AppendAndWait => {}
        }
        // `LogValidator`: a compacted topic keeps the latest record per
        // key, so a record without one is refused.
        let compacted = self.brokers[&id].logs[&partition].log.config.cleanup_policy.compact;
        if compacted
            && batch.records.iter().any(|(record, _)| {
                self.records
                    .get(*record as usize)
                    .is_some_and(|made| made.key.is_none())
            })
        {
            respond(self, Err(ErrorCode::InvalidRecord));
            return;
        }
        let log = &self.brokers[&id].logs[&partition];
        if let Some((producer_id, epoch, first_sequence)) = batch.idempotence {
            let last_sequence = first_sequence + batch.records.len() as i32 - 1;
            // No state for the producer: any sequence is taken on trust.
            let unchecked = first_sequence != 0
                && log
                    .producers
                    .last_entry(producer_id)
                    .is_none_or(|entry| entry.producer_epoch == crate::txn_coordinator::NO_PRODUCER_EPOCH);
            match log.producers.check_client(
                producer_id,
                producer_epoch(epoch),
                first_sequence,
                last_sequence,
                batch.transactional,
                verification,
            ) {
                SequenceCheck::Append => {
                    if unchecked {
                        self.monitor
                            .unchecked_sequences
                            .extend(batch.records.iter().map(|(record, _)| *record));
                    }
                }
                SequenceCheck::Duplicate {
                    first_offset: base_offset,
                    ..
                } => {
                    self.record(TraceKind::DuplicateIgnored {
                        broker: id,
                        partition: partition.clone(),
                        producer_id,
                        first_sequence,
                        last_sequence,
                        first_offset: base_offset,
                    });
                    // A duplicate is answered with the original offsets, but an
                    // acks=all request still waits for the high watermark to
                    // pass them (`ReplicaManager#appendRecords`).
                    if acks == Acks::All {
                        let count = batch.records.len() as u64;
                        self.leader_park_reply(
                            id,
                            &partition,
                            client,
                            base_offset,
                            count,
                            ParkedReply::Produce { request, timeout_ms },
                        );
                        self.leader_maybe_advance_hw(id, &partition, HighWatermarkTrigger::DuplicateBatch);
                    } else {
                        respond(self, Ok(base_offset));
                    }
                    return;
                }
                // A batch of an epoch older than the partition's producer
                // state (`ProducerStateManager#checkProducerEpoch` throws
                // `InvalidProducerEpochException`), transactional or not.
                SequenceCheck::StaleEpoch => {
                    respond(self, Err(ErrorCode::InvalidProducerEpoch));
                    return;
                }
                SequenceCheck::OutOfOrder { .. } => {
                    respond(self, Err(ErrorCode::OutOfOrderSequenceNumber));
                    return;
                }
                // KIP-890: not part of an open transaction and not verified
                // ("Record was not part of an ongoing transaction").
                SequenceCheck::NotInTransaction => {
                    self.record_refused(id, &partition, &batch, ErrorCode::InvalidTxnState);
                    respond(self, Err(ErrorCode::InvalidTxnState));
                    return;
                }
            }
        }
        let base_offset = self.brokers[&id].logs[&partition].log_end_offset();
        let sequence = batch
            .idempotence
            .map(|(producer_id, epoch, first_sequence)| BatchSequence {
                producer_id,
                epoch,
                first_sequence,
                last_sequence: first_sequence + batch.records.len() as i32 - 1,
                transactional: batch.transactional,
                marker: None,
            });
        let records = batch
            .records
            .iter()
            .enumerate()
            .map(|(index, &(record_id, bytes))| {
                let made = self.records.get(record_id as usize);
                Record {
                    offset: base_offset + index as u64,
                    leader_epoch,
                    id: record_id,
                    bytes,
                    batch: sequence,
                    timestamp: made.map_or(0, |made| made.timestamp as i64),
                    key: made.and_then(|made| made.key.clone()),
                    tombstone: made.is_some_and(|made| made.tombstone),
                    headers_size: made.map_or(1, super::ProducedRecord::headers_size),
                }
            })
            .collect();
        let now = self.now;
        let log = self.broker(id).logs.get_mut(&partition).expect("leader has a log");
        log.append_records(records, now);
        let count = batch.records.len() as u64;
        self.record(TraceKind::Appended {
            broker: id,
            partition: partition.clone(),
            first_offset: base_offset,
            count,
            leader_epoch,
        });
        if acks == Acks::All {
            self.leader_park_reply(
                id,
                &partition,
                client,
                base_offset,
                count,
                ParkedReply::Produce { request, timeout_ms },
            );
        } else {
            respond(self, Ok(base_offset));
        }
        self.leader_release_held_fetches(id, &partition);
        self.leader_maybe_advance_hw(id, &partition, HighWatermarkTrigger::LeaderAppended);
    }

    /// Parks an acks=all request until the high watermark passes its records
    /// or `request.timeout.ms` ends.
    pub(crate) fn leader_park_reply(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        client: NodeId,
        base_offset: Offset,
        count: u64,
        reply: ParkedReply,
    ) {
        let incarnation = self.brokers[&id].incarnation;
        // A produce waits as long as the request allows (its timeout is the
        // producer's request.timeout.ms); the coordinator's own appends wait
        // offsets.commit.timeout.ms.
        let timeout = match &reply {
            ParkedReply::Produce { timeout_ms, .. } => *timeout_ms,
            _ => super::coordinator::OFFSETS_COMMIT_TIMEOUT_MS,
        };
        let broker = self.broker(id);
        let timer = broker.next_id();
        let Some(leader) = broker.leading.get_mut(partition) else {
            return;
        };
        leader.parked.push(Parked {
            reply,
            timer,
            client,
            base_offset,
            required_offset: base_offset + count,
        });
        self.schedule_timer(
            NodeId::Broker(id),
            incarnation,
            timeout,
            Timer::ProduceExpiry(partition.clone(), timer),
        );
    }

    /// A follower's fetch arrives at the leader (`Partition#fetchRecords`).
    #[allow(clippy::too_many_arguments)]
    fn leader_fetch(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        replica: BrokerId,
        fetch_offset: Offset,
        last_fetched_epoch: Option<u32>,
        current_leader_epoch: u32,
        log_start_offset: Offset,
    ) {
        let node = NodeId::Broker(id);
        let error_response = |simulation: &mut Simulation, epoch: u32, error: ErrorCode| {
            simulation.send(
                node,
                NodeId::Broker(replica),
                Message::FetchResponse {
                    partition: partition.clone(),
                    leader_epoch: epoch,
                    batches: Vec::new(),
                    high_watermark: 0,
                    log_start_offset: 0,
                    error: Some(error),
                    diverging: None,
                },
            );
        };
        let Some(leader) = self.brokers[&id].leading.get(partition) else {
            error_response(self, current_leader_epoch, ErrorCode::NotLeaderOrFollower);
            return;
        };
        let leader_epoch = leader.leader_epoch;
        if current_leader_epoch < leader_epoch {
            error_response(self, current_leader_epoch, ErrorCode::FencedLeaderEpoch);
            return;
        }
        if current_leader_epoch > leader_epoch {
            error_response(self, current_leader_epoch, ErrorCode::UnknownLeaderEpoch);
            return;
        }
        let log = &self.brokers[&id].logs[partition];
        let log_end = log.log_end_offset();
        // KIP-320: where did the follower's last epoch end on the leader?
        if let Some(epoch) = last_fetched_epoch {
            let (end_epoch, end_offset) = log.epoch_cache.end_offset_for(i64::from(epoch), log_end);
            if end_epoch < i64::from(epoch) || end_offset < fetch_offset as i64 {
                let diverging = Some((end_epoch.max(0) as u32, end_offset.max(0) as Offset));
                let high_watermark = log.high_watermark;
                self.send(
                    node,
                    NodeId::Broker(replica),
                    Message::FetchResponse {
                        partition: partition.clone(),
                        leader_epoch,
                        batches: Vec::new(),
                        high_watermark,
                        log_start_offset: self.brokers[&id].logs[partition].log_start_offset(),
                        error: None,
                        diverging,
                    },
                );
                return;
            }
        }
        let now = self.now;
        let fetch_trace = self.current_cause;
        let hw = log.high_watermark;
        let fenced = self.brokers[&id]
            .metadata
            .as_ref()
            .is_some_and(|image| image.fenced.contains(&replica));
        let leader = self.broker(id).leading.get_mut(partition).expect("checked above");
        if let Some(info) = leader.followers.get_mut(&replica) {
            info.state.record_fetch(fetch_offset, log_start_offset, now, log_end);
            info.last_fetch = fetch_trace;
        }
        // ISR expansion (`maybeExpandIsr`): caught up to the HW and into this epoch.
        let expand = !leader.isr.contains(&replica)
            && leader.pending_isr.is_none()
            && fetch_offset >= hw
            && fetch_offset >= leader.epoch_start_offset
            && !fenced
            && leader.replicas.contains(&replica);
        if expand {
            let mut new_isr = leader.isr.clone();
            new_isr.push(replica);
            leader.pending_isr = Some(new_isr.clone());
            leader.pending_isr_sent_ms = now;
            let message = Message::AlterPartition {
                partition: partition.clone(),
                leader: id,
                leader_epoch,
                partition_epoch: leader.partition_epoch,
                leader_recovery: crate::controller::partition_change::LeaderRecovery::Recovered,
                new_isr,
            };
            self.send(node, self.controller_of(id), message);
        }
        self.leader_maybe_advance_hw(id, partition, HighWatermarkTrigger::Fetched { replica, fetch_offset });
        if fetch_offset < log_end {
            self.leader_answer_fetch(id, partition, replica, fetch_offset);
        } else {
            // Nothing new: hold the fetch (`replica.fetch.wait.max.ms`).
            let incarnation = self.brokers[&id].incarnation;
            let broker = self.broker(id);
            let held = broker.next_id();
            let leader = broker.leading.get_mut(partition).expect("checked above");
            leader.held.push(HeldFetch {
                id: held,
                consumer: None,
                replica,
                fetch_offset,
                isolation: IsolationLevel::ReadUncommitted,
            });
            self.schedule_timer(
                node,
                incarnation,
                self.config.replica_fetch_wait_max_ms,
                Timer::DelayedFetchExpiry(partition.clone(), held),
            );
        }
    }

    fn leader_answer_fetch(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        replica: BrokerId,
        fetch_offset: Offset,
    ) {
        let Some(leader) = self.brokers[&id].leading.get(partition) else {
            return;
        };
        let leader_epoch = leader.leader_epoch;
        let log = &self.brokers[&id].logs[partition];
        let log_start_offset = log.log_start_offset();
        // A follower behind the leader's log start (retention deleted what
        // it would fetch next) is told so (`OFFSET_OUT_OF_RANGE`) and
        // starts over from the leader's log start.
        let (batches, error) = if fetch_offset < log_start_offset {
            (Vec::new(), Some(ErrorCode::OffsetOutOfRange))
        } else {
            (log.copy_batches(fetch_offset, FETCH_MAX_RECORDS), None)
        };
        let high_watermark = log.high_watermark;
        self.send(
            NodeId::Broker(id),
            NodeId::Broker(replica),
            Message::FetchResponse {
                partition: partition.clone(),
                leader_epoch,
                batches,
                high_watermark,
                log_start_offset,
                error,
                diverging: None,
            },
        );
    }

    /// The retention check (`LogManager#cleanupLogs`): every log on the
    /// broker, leader's and follower's alike, deletes the segments its
    /// policy no longer keeps, never past its own high watermark.
    fn broker_retention_check(&mut self, id: BrokerId) {
        let now = self.now;
        let partitions: Vec<TopicPartition> = self.brokers[&id].logs.keys().cloned().collect();
        for partition in partitions {
            let log = self.broker(id).logs.get_mut(&partition).expect("listed above");
            let outcome = log.delete_old_segments(now);
            if outcome.deleted.is_empty() {
                continue;
            }
            self.record(TraceKind::SegmentsDeleted {
                broker: id,
                partition,
                bytes: outcome.deleted.iter().map(|(_, bytes, _)| bytes).sum(),
                segments: outcome.deleted,
                log_start_offset: outcome.log_start_after,
            });
        }
    }

    /// The log cleaner's pass (`LogCleaner`): every compacted log on the
    /// broker dirtier than `min.cleanable.dirty.ratio` is cleaned up to its
    /// last stable offset, leader's and follower's alike. (Kafka's cleaner
    /// threads take the dirtiest log first, one at a time, and back off
    /// when none is dirty enough; here each pass cleans all of them.)
    /// `producer.id.expiration.ms`: every
    /// `producer.id.expiration.check.interval.ms` each log forgets the
    /// producers with no open transaction whose last batch is older
    /// (`ProducerStateManager#removeExpiredProducers`). A producer that
    /// writes again is taken as a new one, with any sequence: its duplicates
    /// are no longer recognised (a 4.1 broker never answers
    /// UNKNOWN_PRODUCER_ID).
    fn broker_expire_producers(&mut self, id: BrokerId) {
        let now = self.now as i64;
        let expiration = i64::try_from(self.config.producer_id_expiration_ms).unwrap_or(i64::MAX);
        let partitions: Vec<TopicPartition> = self.brokers[&id].logs.keys().cloned().collect();
        for partition in partitions {
            let log = self.broker(id).logs.get_mut(&partition).expect("listed above");
            let expired = log.producers.remove_expired_producers(now, expiration);
            if !expired.is_empty() {
                self.record(TraceKind::ProducersExpired {
                    broker: id,
                    partition,
                    producer_ids: expired,
                });
            }
        }
    }

    fn broker_clean_logs(&mut self, id: BrokerId) {
        let now = self.now;
        // The dirtiest log first (`grabFilthiestCompactedLog`: the highest
        // cleanable ratio; ties in partition order), then the next: a
        // cleaner thread that cleaned something looks again at once, and a
        // cleaning takes no simulated time.
        let mut partitions: Vec<(f64, TopicPartition)> = self.brokers[&id]
            .logs
            .iter()
            .filter_map(|(partition, log)| Some((log.cleanable_ratio(now)?, partition.clone())))
            .collect();
        crate::sorting::sort_by(&mut partitions, |(a, first), (b, second)| {
            b.total_cmp(a).then_with(|| first.cmp(second))
        });
        for (_, partition) in partitions {
            let log = self.broker(id).logs.get_mut(&partition).expect("listed above");
            let Some(outcome) = log.clean(now) else { continue };
            self.record(TraceKind::LogCleaned {
                broker: id,
                partition: partition.clone(),
                records_before: outcome.records_read,
                records_after: outcome.records_kept,
                bytes_before: outcome.bytes_before,
                bytes_after: outcome.bytes_after,
                tombstones_removed: outcome.tombstones_removed,
                markers_removed: outcome.markers_removed,
                checkpoint: outcome.checkpoint_after,
            });
        }
    }

    /// New records: answer the followers' held fetches.
    pub(crate) fn leader_release_held_fetches_pub(&mut self, id: BrokerId, partition: &TopicPartition) {
        self.leader_release_held(id, partition, false);
    }

    fn leader_release_held_fetches(&mut self, id: BrokerId, partition: &TopicPartition) {
        self.leader_release_held(id, partition, false);
    }

    /// Answers held fetches of followers (new records) or of consumers (the
    /// high watermark moved).
    fn leader_release_held(&mut self, id: BrokerId, partition: &TopicPartition, consumers: bool) {
        let Some(leader) = self.broker(id).leading.get_mut(partition) else {
            return;
        };
        let (release, keep): (Vec<HeldFetch>, Vec<HeldFetch>) = std::mem::take(&mut leader.held)
            .into_iter()
            .partition(|fetch| fetch.consumer.is_some() == consumers);
        leader.held = keep;
        for fetch in release {
            self.answer_held(id, partition, fetch);
        }
    }

    fn answer_held(&mut self, id: BrokerId, partition: &TopicPartition, fetch: HeldFetch) {
        match fetch.consumer {
            Some(client) => self.leader_answer_consumer(id, client, partition, fetch.fetch_offset, fetch.isolation),
            None => self.leader_answer_fetch(id, partition, fetch.replica, fetch.fetch_offset),
        }
    }

    /// A consumer's fetch (`Partition#fetchRecords`): records below the
    /// high watermark (`read_uncommitted`) or the last stable offset
    /// (`read_committed`), or held until that moves (`fetch.max.wait.ms`,
    /// 500).
    fn leader_consumer_fetch(
        &mut self,
        id: BrokerId,
        client: NodeId,
        partition: &TopicPartition,
        offset: Offset,
        isolation: IsolationLevel,
    ) {
        let node = NodeId::Broker(id);
        if !self.brokers[&id].leading.contains_key(partition) {
            let message = Message::consumer_fetch_error(partition.clone(), ErrorCode::NotLeaderOrFollower);
            self.send(node, client, message);
            return;
        }
        let log = &self.brokers[&id].logs[partition];
        if offset < log.log_start_offset() || offset > log.log_end_offset() {
            // `ReplicaManager#readFromLocalLog`: the log does not hold it.
            let message = Message::consumer_fetch_error(partition.clone(), ErrorCode::OffsetOutOfRange);
            self.send(node, client, message);
            return;
        }
        if offset < log.read_bound(isolation) {
            self.leader_answer_consumer(id, client, partition, offset, isolation);
        } else {
            let incarnation = self.brokers[&id].incarnation;
            let broker = self.broker(id);
            let held = broker.next_id();
            let leader = broker.leading.get_mut(partition).expect("checked above");
            leader.held.push(HeldFetch {
                id: held,
                consumer: Some(client),
                replica: 0,
                fetch_offset: offset,
                isolation,
            });
            self.schedule_timer(
                node,
                incarnation,
                500,
                Timer::DelayedFetchExpiry(partition.clone(), held),
            );
        }
    }

    /// Answers a consumer's fetch: up to [`FETCH_MAX_RECORDS`] records below
    /// its bound; a `read_committed` answer lists the aborted transactions
    /// the records may overlap (`UnifiedLog#collectAbortedTransactions`, up
    /// to the log end offset: the simulation has no offset index, see
    /// [`TransactionIndex::collect_aborted_txns`]).
    fn leader_answer_consumer(
        &mut self,
        id: BrokerId,
        client: NodeId,
        partition: &TopicPartition,
        offset: Offset,
        isolation: IsolationLevel,
    ) {
        let Some(log) = self.brokers[&id].logs.get(partition) else {
            return;
        };
        if offset < log.log_start_offset() {
            // Retention deleted it while the fetch was held.
            let message = Message::consumer_fetch_error(partition.clone(), ErrorCode::OffsetOutOfRange);
            self.send(NodeId::Broker(id), client, message);
            return;
        }
        let (high_watermark, last_stable_offset) = (log.high_watermark, log.last_stable_offset());
        let bound = log.read_bound(isolation);
        // A consumer's fetch is capped at what its quota lets through in
        // a quota window (`ClientQuotaManager#getMaxValueInQuotaWindow`:
        // the quota over ten one-second samples), else a large answer would be
        // throttled every time.
        let max_bytes = match client {
            NodeId::Consumer(consumer) => self
                .config
                .client_quota(&self.consumer_client_id(consumer), QuotaType::Fetch)
                .map_or(u64::MAX, crate::storage::quota::max_bytes_in_quota_window),
            _ => u64::MAX,
        };
        let log = &self.brokers[&id].logs[partition];
        let (records, next_offset, bytes) = log.consumer_read(offset, bound, FETCH_MAX_RECORDS, max_bytes);
        // The client's fetch quota (`KafkaApis#handleFetchRequest`): the
        // answer's bytes go into its rate; over the quota, they are taken
        // back out and the answer is empty, with the time to wait.
        let throttle_time_ms = self.broker_fetch_throttle(id, client, bytes);
        if throttle_time_ms > 0 {
            self.broker_mute(id, client, throttle_time_ms);
            self.send(
                NodeId::Broker(id),
                client,
                Message::ConsumerFetchResponse {
                    partition: partition.clone(),
                    records: Vec::new(),
                    high_watermark,
                    last_stable_offset,
                    aborted: Vec::new(),
                    error: None,
                    fetch_offset: offset,
                    next_offset: offset,
                    throttle_time_ms,
                },
            );
            return;
        }
        let log = &self.brokers[&id].logs[partition];
        let aborted = if isolation == IsolationLevel::ReadCommitted && !records.is_empty() {
            log.txn_index
                .collect_aborted_txns(offset, log.log_end_offset())
                .iter()
                .map(|txn| (txn.producer_id, txn.first_offset))
                .collect()
        } else {
            Vec::new()
        };
        self.send(
            NodeId::Broker(id),
            client,
            Message::ConsumerFetchResponse {
                partition: partition.clone(),
                records,
                high_watermark,
                last_stable_offset,
                aborted,
                error: None,
                fetch_offset: offset,
                next_offset,
                throttle_time_ms: 0,
            },
        );
    }

    /// Records a fetch answer's bytes in the consumer's `consumer_byte_rate`
    /// and returns its throttle time; a throttled answer is sent empty, so
    /// its bytes are taken back (`ClientQuotaManager#unrecordQuotaSensor`).
    fn broker_fetch_throttle(&mut self, id: BrokerId, client: NodeId, bytes: u64) -> u64 {
        let NodeId::Consumer(consumer) = client else {
            return 0;
        };
        let client_id = self.consumer_client_id(consumer);
        let Some(quota) = self.config.client_quota(&client_id, QuotaType::Fetch) else {
            return 0;
        };
        let now = self.now as i64;
        let rate = self
            .broker(id)
            .client_rates
            .entry((QuotaType::Fetch, client_id))
            .or_default();
        let throttle_time_ms = rate.record_and_throttle_ms(bytes as f64, now, quota as f64);
        if throttle_time_ms > 0 {
            rate.unrecord(bytes as f64, now);
        }
        throttle_time_ms
    }

    /// After a throttled answer the broker mutes the client's connection
    /// for the throttle time (`RequestChannel#sendResponse` with a
    /// throttle, `SocketServer` `ChannelMuteState`): requests that arrive
    /// meanwhile wait unread.
    fn broker_mute(&mut self, id: BrokerId, client: NodeId, throttle_time_ms: u64) {
        if throttle_time_ms == 0 {
            return;
        }
        let until = self.now + throttle_time_ms;
        let incarnation = self.brokers[&id].incarnation;
        let entry = self.broker(id).muted.entry(client).or_insert((until, Vec::new()));
        if entry.0 > until {
            return;
        }
        entry.0 = until;
        self.schedule_timer(NodeId::Broker(id), incarnation, throttle_time_ms, Timer::Unmute(client));
    }

    /// A request on a muted connection waits; `None` when it was held. A
    /// producer has one connection to the broker; a consumer's fetches and
    /// offset lookups share one, its group coordinator requests use
    /// another (Kafka's consumer connects to the coordinator as a separate
    /// node), which is not muted.
    fn broker_hold_if_muted(&mut self, id: BrokerId, from: NodeId, message: Message) -> Option<Message> {
        let same_connection = match from {
            NodeId::Producer(_) => true,
            NodeId::Consumer(_) => matches!(
                message,
                Message::ConsumerFetch { .. } | Message::ListOffsets { .. } | Message::OffsetForLeaderEpoch { .. }
            ),
            _ => false,
        };
        if matches!(message, Message::ConnectionClosed) {
            // The connection is gone, with the requests it had not read;
            // a new one starts unmuted.
            self.broker(id).muted.remove(&from);
            return Some(message);
        }
        let now = self.now;
        match self.broker(id).muted.get_mut(&from) {
            // Also while held requests wait for the unmute at this very
            // moment: they are read first.
            Some((until, held)) if same_connection && (*until > now || !held.is_empty()) => {
                held.push(message);
                None
            }
            _ => Some(message),
        }
    }

    /// The mute is over: the broker reads what waited, in order.
    fn broker_unmute(&mut self, id: BrokerId, client: NodeId) {
        let now = self.now;
        let broker = self.broker(id);
        if broker.muted.get(&client).is_none_or(|(until, _)| *until > now) {
            return;
        }
        let (_, held) = broker.muted.remove(&client).expect("looked up above");
        for message in held {
            self.broker_receive(id, client, message);
        }
    }

    /// [`Self::leader_maybe_advance_hw`] for the coordinator.
    pub(crate) fn leader_maybe_advance_hw_pub(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        trigger: HighWatermarkTrigger,
    ) {
        self.leader_maybe_advance_hw(id, partition, trigger);
    }

    /// `maybeIncrementLeaderHW`, then answering acks=all requests it commits.
    fn leader_maybe_advance_hw(&mut self, id: BrokerId, partition: &TopicPartition, trigger: HighWatermarkTrigger) {
        let now = self.now;
        let lag = self.config.replica_lag_time_max_ms;
        let (min_isr, replication_factor) = self
            .topic_config(partition)
            .map_or((1, 1), |topic| (topic.min_insync_replicas, topic.replication_factor));
        let broker = &self.brokers[&id];
        let Some(leader) = broker.leading.get(partition) else {
            return;
        };
        let log = &broker.logs[partition];
        let log_end = log.log_end_offset();
        let maximal = leader.maximal_isr();
        let fenced = broker
            .metadata
            .as_ref()
            .map(|image| image.fenced.clone())
            .unwrap_or_default();
        let follower_ends: BTreeMap<BrokerId, Offset> = leader
            .followers
            .iter()
            .map(|(&replica, info)| (replica, info.state.log_end_offset.unwrap_or(0)))
            .gather();
        let caught_up: Vec<BrokerId> = leader
            .followers
            .iter()
            .filter(|(replica, info)| {
                !maximal.contains(replica) && !fenced.contains(replica) && info.state.is_caught_up(log_end, now, lag)
            })
            .map(|(&replica, _)| replica)
            .collect();
        let decision = evaluate(&HighWatermarkInputs {
            leader_log_end_offset: log_end,
            current: log.high_watermark,
            isr: &leader.isr,
            maximal_isr: &maximal,
            leader: id,
            follower_log_end_offsets: &follower_ends,
            caught_up_eligible: &caught_up,
            min_insync_replicas: min_isr,
            replication_factor,
        });
        let maximal_size = maximal.len() as u32;
        if let HighWatermarkDecision::Advanced { to, held_back_by } = &decision {
            let from = log.high_watermark;
            let to = *to;
            self.broker(id)
                .logs
                .get_mut(partition)
                .expect("leader log")
                .high_watermark = to;
            let reason = HighWatermarkReason::Advanced {
                trigger,
                slowest: held_back_by.clone(),
            };
            self.record(TraceKind::HighWatermark {
                broker: id,
                partition: partition.clone(),
                from,
                to,
                reason,
            });
            // Consumers waiting at the old high watermark can read now.
            self.leader_release_held(id, partition, true);
        }
        // Answer parked acks=all requests the high watermark now covers.
        let hw = self.brokers[&id].logs[partition].high_watermark;
        let Some(leader) = self.broker(id).leading.get_mut(partition) else {
            return;
        };
        let mut done = Vec::new();
        leader.parked.retain(|parked| {
            match check_parked_produce(hw, parked.required_offset, maximal_size, min_isr, replication_factor) {
                ParkedProduce::Waiting => true,
                ParkedProduce::Committed => {
                    done.push((parked.clone(), Ok(parked.base_offset)));
                    false
                }
                ParkedProduce::NotEnoughReplicasAfterAppend => {
                    done.push((parked.clone(), Err(ErrorCode::NotEnoughReplicasAfterAppend)));
                    false
                }
            }
        });
        for (parked, result) in done {
            self.answer_parked(id, partition, parked, result);
        }
    }

    /// The ISR-expiration task (`Partition#maybeShrinkIsr`).
    fn leader_maybe_shrink_isr(&mut self, id: BrokerId) {
        let now = self.now;
        let lag = self.config.replica_lag_time_max_ms;
        let partitions: Vec<TopicPartition> = self.brokers[&id].leading.keys().cloned().collect();
        for partition in partitions {
            // An AlterPartition that got no answer within the controller
            // channel's timeout is given up and the change proposed again
            // (`AlterPartitionManager` retries until it gets an answer).
            let leader = self.broker(id).leading.get_mut(&partition).expect("leading");
            if leader.pending_isr.is_some() && now >= leader.pending_isr_sent_ms + ALTER_PARTITION_TIMEOUT_MS {
                leader.pending_isr = None;
            }
            let broker = &self.brokers[&id];
            let leader = &broker.leading[&partition];
            if leader.pending_isr.is_some() {
                continue;
            }
            let log_end = broker.logs[&partition].log_end_offset();
            let lagging: Vec<BrokerId> = leader
                .isr
                .iter()
                .copied()
                .filter(|&member| member != id)
                .filter(|member| {
                    leader
                        .followers
                        .get(member)
                        .is_none_or(|info| !info.state.is_caught_up(log_end, now, lag))
                })
                .collect();
            if lagging.is_empty() {
                continue;
            }
            let cause = lagging
                .iter()
                .find_map(|member| leader.followers.get(member).and_then(|info| info.last_fetch));
            let new_isr: Vec<BrokerId> = leader
                .isr
                .iter()
                .copied()
                .filter(|member| !lagging.contains(member))
                .collect();
            let message = Message::AlterPartition {
                partition: partition.clone(),
                leader: id,
                leader_epoch: leader.leader_epoch,
                partition_epoch: leader.partition_epoch,
                leader_recovery: crate::controller::partition_change::LeaderRecovery::Recovered,
                new_isr: new_isr.clone(),
            };
            let leader = self.broker(id).leading.get_mut(&partition).expect("leading");
            leader.pending_isr = Some(new_isr);
            leader.pending_isr_sent_ms = now;
            let previous = self.current_cause;
            if cause.is_some() {
                self.current_cause = cause;
            }
            self.send(NodeId::Broker(id), self.controller_of(id), message);
            self.current_cause = previous;
        }
    }

    fn follower_fetch(&mut self, id: BrokerId, partition: &TopicPartition) {
        let incarnation = self.brokers[&id].incarnation;
        let broker = self.broker(id);
        let Some(state) = broker.following.get(partition) else {
            return;
        };
        if state.in_flight.is_some() {
            return;
        }
        let (leader, leader_epoch) = (state.leader, state.leader_epoch);
        let (log_config, now) = (self.log_config(partition), self.now);
        let broker = self.broker(id);
        let fetch = broker.next_id();
        let log = broker
            .logs
            .entry(partition.clone())
            .or_insert_with(|| PartitionLog::new(log_config, now));
        let message = Message::Fetch {
            partition: partition.clone(),
            replica: id,
            fetch_offset: log.log_end_offset(),
            last_fetched_epoch: log.epoch_cache.latest_epoch(),
            current_leader_epoch: leader_epoch,
            log_start_offset: 0,
        };
        broker.following.get_mut(partition).expect("following").in_flight = Some(fetch);
        self.send(NodeId::Broker(id), NodeId::Broker(leader), message);
        self.schedule_timer(
            NodeId::Broker(id),
            incarnation,
            FETCH_TIMEOUT_MS,
            Timer::FollowerFetchTimeout(partition.clone(), fetch),
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn follower_handle_response(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        leader_epoch: u32,
        batches: Vec<LogBatch<Record>>,
        leader_high_watermark: Offset,
        leader_log_start_offset: Offset,
        error: Option<ErrorCode>,
        diverging: Option<(u32, Offset)>,
    ) {
        let incarnation = self.brokers[&id].incarnation;
        let node = NodeId::Broker(id);
        let broker = self.broker(id);
        let Some(state) = broker.following.get_mut(partition) else {
            return;
        };
        // An answer to no fetch in flight (one given up on) is ignored.
        if state.leader_epoch != leader_epoch || state.in_flight.is_none() {
            return;
        }
        state.in_flight = None;
        if error == Some(ErrorCode::OffsetOutOfRange) {
            // The leader's log starts past this log's end: what this replica
            // would fetch next is gone. It empties its log and starts at the
            // leader's log start (`AbstractFetcherThread#fetchOffsetAndTruncate`).
            let now = self.now;
            let log = self.broker(id).logs.get_mut(partition).expect("follower log");
            let log_end = log.log_end_offset();
            if leader_log_start_offset > log_end {
                log.truncate_fully_and_start_at(leader_log_start_offset, now);
                self.record(TraceKind::Truncated {
                    broker: id,
                    partition: partition.clone(),
                    to_offset: leader_log_start_offset,
                    removed: 0,
                    reason: TruncationReason::BelowLeaderLogStart,
                });
            }
            self.schedule_timer(node, incarnation, 0, Timer::FollowerFetch(partition.clone()));
            return;
        }
        if error.is_some() {
            self.schedule_timer(
                node,
                incarnation,
                FETCH_BACKOFF_MS,
                Timer::FollowerFetch(partition.clone()),
            );
            return;
        }
        let now = self.now;
        let log = self.broker(id).logs.get_mut(partition).expect("follower log");
        if let Some((epoch, end_offset)) = diverging {
            // Truncate to where the logs agree (KIP-279), then fetch again.
            // (When it lacks the leader's epoch it truncates to its own
            // largest smaller epoch and the next fetch asks again.)
            let log_end = log.log_end_offset();
            let (truncate_to, _complete) =
                crate::replication::epoch_cache::truncation_offset(&log.epoch_cache, log_end, epoch, end_offset);
            let removed = log_end - truncate_to;
            log.truncate_to(truncate_to, now);
            if removed > 0 {
                self.record(TraceKind::Truncated {
                    broker: id,
                    partition: partition.clone(),
                    to_offset: truncate_to,
                    removed,
                    reason: TruncationReason::DivergingEpoch { epoch, end_offset },
                });
                self.monitor.mark_dirty(partition);
            }
            self.schedule_timer(node, incarnation, 0, Timer::FollowerFetch(partition.clone()));
            return;
        }
        // Only append what extends this log (a stale answer may overlap);
        // offsets may jump where the leader's cleaner left a gap.
        let log_end = log.log_end_offset();
        let fresh: Vec<LogBatch<Record>> = batches
            .into_iter()
            .filter(|batch| batch.base_offset >= log_end)
            .collect();
        if !fresh.is_empty() {
            let count: u64 = fresh.iter().map(|batch| batch.records.len() as u64).sum();
            let mut epoch = leader_epoch;
            for batch in fresh {
                if let Some(first) = batch.records.first() {
                    log.epoch_cache.assign(first.leader_epoch, first.offset);
                    epoch = first.leader_epoch;
                }
                log.append_batch(batch, now);
            }
            self.record(TraceKind::Appended {
                broker: id,
                partition: partition.clone(),
                first_offset: log_end,
                count,
                leader_epoch: epoch,
            });
        }
        let log = self.broker(id).logs.get_mut(partition).expect("follower log");
        let new_hw = leader_high_watermark.min(log.log_end_offset());
        if new_hw > log.high_watermark {
            let from = log.high_watermark;
            log.high_watermark = new_hw;
            self.record(TraceKind::HighWatermark {
                broker: id,
                partition: partition.clone(),
                from,
                to: new_hw,
                reason: HighWatermarkReason::FromLeader,
            });
        }
        // The follower's log start follows the leader's, up to its own high
        // watermark (`maybeIncrementLogStartOffset`); the next retention
        // check deletes the segments below it.
        let log = self.broker(id).logs.get_mut(partition).expect("follower log");
        if leader_log_start_offset > log.log_start_offset() && leader_log_start_offset <= log.high_watermark {
            log.increment_log_start_offset(leader_log_start_offset);
        }
        // The leader holds empty fetches, so the next one can go at once.
        self.schedule_timer(node, incarnation, 0, Timer::FollowerFetch(partition.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::transactions::ControlType;

    /// A record at `offset` for the tests.
    fn record(offset: Offset, id: u64, bytes: u32, batch: BatchSequence) -> Record {
        Record {
            offset,
            leader_epoch: 0,
            id,
            bytes,
            batch: Some(batch),
            timestamp: 0,
            key: None,
            tombstone: false,
            headers_size: 1,
        }
    }

    /// A log with `count` records of one batch from `producer`, transactional or not.
    fn push_batch(log: &mut PartitionLog, producer: u64, first_sequence: i32, count: u32, transactional: bool) {
        let offset = log.log_end_offset();
        let batch = BatchSequence {
            producer_id: producer,
            epoch: 0,
            first_sequence,
            last_sequence: first_sequence + count as i32 - 1,
            transactional,
            marker: None,
        };
        let records = (0..count)
            .map(|index| record(offset + u64::from(index), offset + u64::from(index), 100, batch))
            .collect();
        log.append_records(records, 0);
    }

    fn push_marker(log: &mut PartitionLog, producer: u64, control: ControlType) {
        let offset = log.log_end_offset();
        let marker = BatchSequence {
            producer_id: producer,
            epoch: 0,
            first_sequence: -1,
            last_sequence: -1,
            transactional: true,
            marker: Some(TxnMarker {
                control,
                coordinator_epoch: 0,
            }),
        };
        log.append_records(vec![record(offset, MARKER_RECORD_BASE + offset, 6, marker)], 0);
    }

    /// KIP-320's epoch check, as `PartitionTest`'s
    /// `testOffsetForLeaderEpochValidationForLeader` and `ForFollower` pin
    /// it: at leader epoch 5, no epoch or 5 goes on (on a follower,
    /// NOT_LEADER_OR_FOLLOWER), 4 is fenced, 6 is unknown.
    #[test]
    fn a_clients_leader_epoch_is_checked_before_it_reads() {
        let config = crate::sim::config::ClusterConfig {
            brokers: 3,
            topics: vec![crate::sim::config::TopicConfig {
                name: "t".into(),
                partitions: 1,
                replication_factor: 3,
                ..Default::default()
            }],
            producers: Vec::new(),
            consumers: Vec::new(),
            ..Default::default()
        };
        let mut simulation = Simulation::new(config, 1).expect("a valid cluster");
        simulation.run_until(10_000);
        let partition = TopicPartition::new("t", 0);
        let leader = *simulation
            .brokers
            .iter()
            .find(|(_, broker)| broker.leading.contains_key(&partition))
            .expect("a leader")
            .0;
        let follower = *simulation
            .brokers
            .iter()
            .find(|(_, broker)| broker.following.contains_key(&partition))
            .expect("a follower")
            .0;
        let state = simulation.broker(leader).leading.get_mut(&partition).expect("leads");
        state.leader_epoch = 5;
        let state = simulation
            .broker(follower)
            .following
            .get_mut(&partition)
            .expect("follows");
        state.leader_epoch = 5;
        let check =
            |broker: BrokerId, epoch: Option<u32>| simulation.broker_check_leader_epoch(broker, &partition, epoch);
        assert_eq!(check(leader, None), Ok(()));
        assert_eq!(check(leader, Some(5)), Ok(()));
        assert_eq!(check(leader, Some(4)), Err(ErrorCode::FencedLeaderEpoch));
        assert_eq!(check(leader, Some(6)), Err(ErrorCode::UnknownLeaderEpoch));
        assert_eq!(check(follower, None), Err(ErrorCode::NotLeaderOrFollower));
        assert_eq!(check(follower, Some(5)), Err(ErrorCode::NotLeaderOrFollower));
        assert_eq!(check(follower, Some(4)), Err(ErrorCode::FencedLeaderEpoch));
        assert_eq!(check(follower, Some(6)), Err(ErrorCode::UnknownLeaderEpoch));
    }

    #[test]
    fn the_last_stable_offset_waits_for_open_transactions_and_replicated_markers() {
        let mut log = PartitionLog::default();
        push_batch(&mut log, 1, 0, 3, true); // 0..=2, open
        push_batch(&mut log, 2, 0, 2, false); // 3..=4, plain idempotent
        log.high_watermark = 5;
        assert_eq!(
            log.last_stable_offset(),
            0,
            "an open transaction holds it at its first offset"
        );
        assert_eq!(log.read_bound(IsolationLevel::ReadUncommitted), 5);
        assert_eq!(log.read_bound(IsolationLevel::ReadCommitted), 0);
        push_marker(&mut log, 1, ControlType::Abort); // 5
        assert_eq!(
            log.last_stable_offset(),
            0,
            "the marker is not below the high watermark yet"
        );
        log.high_watermark = 6;
        assert_eq!(log.last_stable_offset(), 6);
        assert_eq!(log.txn_index.entries().len(), 1);
        assert_eq!(log.txn_markers(), 1);
        // Truncation rebuilds all of it from the log.
        log.truncate_to(5, 0);
        assert_eq!((log.txn_markers(), log.txn_index.entries().len()), (0, 0));
        assert_eq!(log.last_stable_offset(), 0, "the transaction is open again");
    }
}
