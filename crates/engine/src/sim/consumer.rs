//! A consumer client (`KafkaConsumer`, `ConsumerCoordinator`, `Fetcher`):
//! it finds its group's coordinator, joins the group (the leader member
//! computes the assignment with the group's assignor), fetches committed
//! offsets, reads from partition leaders up to the high watermark, and
//! commits its positions every `auto.commit.interval.ms`. Eager protocol:
//! on a rebalance it commits and gives up all partitions before rejoining.
//! If its coordinator is lost it keeps reading its partitions while it
//! looks for the new one, then heartbeats on in the same generation.

use crate::replication::transactions::{returned_records, IsolationLevel};
use crate::sorting::Gather;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::groups::assignors::{assign, GroupInput, Member, Strategy, TopicPartition};
use crate::protocol::{BrokerId, Offset};

use super::config::{AfterFailures, CommitMode, ConsumerConfig, OffsetReset, QuotaType};
use super::trace::{ConsumerChange, Invariant, TraceKind};
use super::types::{ErrorCode, JoinResult, Message, NodeId, OffsetSpec, Time};
use super::{Simulation, Timer};

/// Where a consumer is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConsumerPhase {
    /// Not running.
    Stopped,
    /// Looking up its coordinator and the topic metadata.
    FindingCoordinator,
    /// Sent JoinGroup.
    Joining,
    /// Sent SyncGroup.
    Syncing,
    /// Has its partitions; reading.
    Consuming,
}

impl std::fmt::Display for ConsumerPhase {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            ConsumerPhase::Stopped => "stopped",
            ConsumerPhase::FindingCoordinator => "finding-coordinator",
            ConsumerPhase::Joining => "joining",
            ConsumerPhase::Syncing => "syncing",
            ConsumerPhase::Consuming => "consuming",
        })
    }
}

/// Records a fetch returned that the application has not polled yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fetched {
    /// What `poll()` may return, in order (control records and, for
    /// `read_committed`, aborted transactions' records already dropped).
    pub records: Vec<super::types::Record>,
    /// Where the position moves once they are all returned: past a trailing
    /// marker or aborted batch too (`CompletedFetch#nextFetchOffset`).
    pub next_offset: Offset,
    /// The leader epoch of the last batch fetched, markers included
    /// (`CompletedFetch#lastEpoch`): the position's epoch once they are
    /// all returned.
    pub last_epoch: Option<u32>,
}

/// A consumer's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Consumer {
    /// Index among the configured consumers.
    pub id: u32,
    /// Its settings.
    pub config: ConsumerConfig,
    /// Its phase.
    pub phase: ConsumerPhase,
    /// Bumped at every start, so old timers are ignored.
    pub incarnation: u32,
    /// The coordinator broker.
    pub coordinator: Option<BrokerId>,
    /// Its member id.
    pub member_id: Option<String>,
    /// Its generation.
    pub generation: u32,
    /// Its partitions this generation.
    pub assignment: Vec<TopicPartition>,
    /// Next offset to read, per partition.
    pub positions: BTreeMap<TopicPartition, Offset>,
    /// Last high watermark seen, per partition (for lag).
    pub high_watermarks: BTreeMap<TopicPartition, Offset>,
    /// Committed positions, as last acknowledged.
    pub committed: BTreeMap<TopicPartition, Offset>,
    /// Commits sent and not yet answered, oldest first (answers come back in
    /// order on the coordinator connection).
    pub pending_commits: std::collections::VecDeque<Vec<(TopicPartition, Offset)>>,
    /// Partition leaders and partition counts from metadata.
    pub leaders: BTreeMap<TopicPartition, Option<BrokerId>>,
    /// The newest leader epoch seen for each partition: metadata naming
    /// an older one is stale and ignored (KIP-320, `Metadata#updateLatestMetadata`).
    #[serde(skip)]
    pub leader_epochs: BTreeMap<TopicPartition, u32>,
    /// KIP-320: the leader epoch of the last record consumed before each
    /// position, with that position (`FetchPosition#offsetEpoch`); it
    /// counts only while the position is still that offset, so a position
    /// set any other way (a committed offset, whose epoch this simulation
    /// does not keep, or a reset) has none and is never validated.
    #[serde(skip)]
    pub position_epochs: BTreeMap<TopicPartition, (Offset, u32)>,
    /// KIP-320: positions awaiting validation after a leader change
    /// (`AWAIT_VALIDATION`: not fetched), with the broker an
    /// `OffsetForLeaderEpoch` is out to.
    #[serde(skip)]
    pub validating: BTreeMap<TopicPartition, Option<BrokerId>>,
    /// Partitions with a fetch out.
    pub fetching: BTreeMap<TopicPartition, bool>,
    /// Records read so far.
    pub records_read: u64,
    bootstrap_attempt: u32,
    /// A metadata refresh waits for its backoff (the broker it will ask).
    refresh_pending: Option<BrokerId>,
    /// When the one pending coordinator lookup retry fires.
    retry_at: Option<u64>,
    /// The broker a metadata request in flight went to.
    metadata_in_flight: Option<BrokerId>,
    /// When its metadata last came back (`metadata.max.age.ms` counts
    /// from here).
    metadata_at: u64,
    /// The broker each fetch in flight went to (its connection).
    fetch_brokers: BTreeMap<TopicPartition, BrokerId>,
    /// Partitions per subscribed topic, from the latest metadata (kept
    /// when leaders are forgotten).
    partition_counts: BTreeMap<String, u32>,
    /// As the leader: the partition counts its last assignment used
    /// (`ConsumerCoordinator`'s assignment snapshot).
    assignment_snapshot: Option<BTreeMap<String, u32>>,
    /// Requests waiting for an answer, per broker connection, oldest
    /// first: (request number, deadline).
    outstanding: BTreeMap<BrokerId, std::collections::VecDeque<(u64, u64)>>,
    next_request: u64,
    /// Connections with a request-timeout check scheduled (one at a time).
    timeout_armed: std::collections::BTreeSet<BrokerId>,
    /// An OffsetFetch for partitions without a position is out.
    offset_fetch_in_flight: bool,
    /// Partitions whose position `auto.offset.reset` is resetting (it fell
    /// out of range), with the `ListOffsets` spec asked for and the lost
    /// position.
    pub(crate) resetting: BTreeMap<TopicPartition, (OffsetSpec, Offset)>,
    /// The last reset of each partition's position after
    /// `OFFSET_OUT_OF_RANGE`: (from, to).
    pub last_resets: BTreeMap<TopicPartition, (Offset, Offset)>,
    /// Brokers that throttled its fetches (`consumer_byte_rate`), until
    /// when: it fetches nothing from them before (KIP-219).
    pub throttled_until: BTreeMap<BrokerId, Time>,
    /// Records fetched and not yet returned by `poll()`, per partition
    /// (Kafka's fetch buffer; a partition with buffered records is not
    /// fetched again until they are returned).
    pub buffer: BTreeMap<TopicPartition, Fetched>,
    /// The handler works on the last poll's records until then.
    pub processing_until: Option<u64>,
    /// When the application last called `poll()`.
    pub last_poll_ms: u64,
    /// Its process is paused (a GC pause) until then.
    pub paused_until: Option<u64>,
    /// An auto-commit came due while the handler worked: it goes out at
    /// the next poll, as Kafka's does.
    commit_due: bool,
    /// It left the group on a poll timeout: it joins again at its next poll.
    pub(crate) rejoin_on_poll: bool,
    /// KIP-848: a `ConsumerGroupHeartbeat` is in flight.
    pub(crate) heartbeat_in_flight: bool,
    /// KIP-848: how often to heartbeat, as the coordinator last said.
    pub(crate) heartbeat_interval_ms: u64,
    /// KIP-848: when the one pending heartbeat timer is due.
    pub(crate) heartbeat_due_at: Option<u64>,
    /// KIP-848: a revocation waits for its commit before it is reported.
    pub(crate) ack_after_commit: bool,
    /// The records of the last poll the handler is working through, and
    /// when it started on them.
    pub in_process: Vec<super::ledger::InProcess>,
    processing_started_ms: u64,
    /// `commitSync()` after processing is out: the next poll waits for it.
    awaiting_commit: bool,
    /// Consume-transform-produce: `commitTransaction()` is out (the next
    /// poll waits for it), with the positions sent in it.
    pub(crate) awaiting_txn: Option<Vec<(TopicPartition, Offset)>>,
    /// Records processed in the open transaction: processed for good once
    /// it commits, to do again if it aborts.
    pub in_transaction: Vec<super::ledger::InProcess>,
    /// The positions in `in_process` of the records its handler fails on
    /// (poison records).
    pub(crate) poisoned: Vec<usize>,
}

/// `retry.backoff.ms` (100): the least time between a failed fetch and the
/// metadata refresh it triggers.
const RETRY_BACKOFF_MS: u64 = 100;
/// `request.timeout.ms` (30000).
const CONSUMER_REQUEST_TIMEOUT_MS: u64 = 30_000;

impl Consumer {
    /// A consumer that has not started.
    pub fn new(id: u32, config: ConsumerConfig) -> Consumer {
        Consumer {
            id,
            config,
            phase: ConsumerPhase::Stopped,
            incarnation: 0,
            coordinator: None,
            member_id: None,
            generation: 0,
            assignment: Vec::new(),
            positions: BTreeMap::new(),
            high_watermarks: BTreeMap::new(),
            committed: BTreeMap::new(),
            pending_commits: std::collections::VecDeque::new(),
            leaders: BTreeMap::new(),
            leader_epochs: BTreeMap::new(),
            position_epochs: BTreeMap::new(),
            validating: BTreeMap::new(),
            fetching: BTreeMap::new(),
            records_read: 0,
            bootstrap_attempt: 0,
            refresh_pending: None,
            retry_at: None,
            metadata_in_flight: None,
            metadata_at: 0,
            fetch_brokers: BTreeMap::new(),
            partition_counts: BTreeMap::new(),
            assignment_snapshot: None,
            outstanding: BTreeMap::new(),
            next_request: 0,
            timeout_armed: std::collections::BTreeSet::new(),
            offset_fetch_in_flight: false,
            resetting: BTreeMap::new(),
            last_resets: BTreeMap::new(),
            throttled_until: BTreeMap::new(),
            buffer: BTreeMap::new(),
            processing_until: None,
            last_poll_ms: 0,
            paused_until: None,
            commit_due: false,
            rejoin_on_poll: false,
            heartbeat_in_flight: false,
            heartbeat_interval_ms: 5_000,
            heartbeat_due_at: None,
            ack_after_commit: false,
            in_process: Vec::new(),
            processing_started_ms: 0,
            awaiting_commit: false,
            awaiting_txn: None,
            in_transaction: Vec::new(),
            poisoned: Vec::new(),
        }
    }

    /// The position of `partition` and the leader epoch of the record
    /// before it, if it has one (KIP-320's `offsetEpoch`).
    pub fn position_epoch(&self, partition: &TopicPartition) -> Option<(Offset, u32)> {
        let position = *self.positions.get(partition)?;
        self.position_epochs
            .get(partition)
            .filter(|(offset, _)| *offset == position)
            .map(|(_, epoch)| (position, *epoch))
    }

    /// Whether it rebalances cooperatively (KIP-429): its assignor supports
    /// only the `COOPERATIVE` protocol among the ones the engine runs
    /// (`ConsumerPartitionAssignor#supportedProtocols`).
    pub fn cooperative(&self) -> bool {
        Strategy::from_name(&self.config.assignor) == Some(Strategy::CooperativeSticky)
    }

    /// Lag per assigned partition: high watermark minus position.
    pub fn lag(&self) -> BTreeMap<TopicPartition, Offset> {
        self.assignment
            .iter()
            .map(|partition| {
                let hw = self.high_watermarks.get(partition).copied().unwrap_or(0);
                let position = self.positions.get(partition).copied().unwrap_or(0);
                (partition.clone(), hw.saturating_sub(position))
            })
            .gather()
    }
}

impl Simulation {
    fn consumer_node(id: u32) -> NodeId {
        NodeId::Consumer(id)
    }

    /// The consumers.
    pub fn consumers(&self) -> &[Consumer] {
        &self.consumers
    }

    /// A consumer that was not in the configuration starts. It takes the
    /// next index; one the cluster would refuse is ignored (drivers check
    /// with [`ClusterConfig::validate_consumer`](super::config::ClusterConfig::validate_consumer) first).
    pub(crate) fn consumer_add(&mut self, config: super::config::ConsumerConfig) {
        if self.config.validate_consumer(&config).is_err() || self.consumers.len() >= crate::limits::MAX_CONSUMERS {
            return;
        }
        let id = self.consumers.len() as u32;
        self.config.consumers.push(config.clone());
        self.consumers.push(Consumer::new(id, config));
        self.consumer_start(id);
    }

    pub(crate) fn consumer_start(&mut self, id: u32) {
        let Some(consumer) = self.consumers.get_mut(id as usize) else {
            return;
        };
        if consumer.phase != ConsumerPhase::Stopped {
            return;
        }
        consumer.incarnation += 1;
        consumer.retry_at = None;
        consumer.refresh_pending = None;
        consumer.metadata_in_flight = None;
        consumer.outstanding.clear();
        consumer.timeout_armed.clear();
        consumer.phase = ConsumerPhase::FindingCoordinator;
        consumer.member_id = None;
        consumer.generation = 0;
        consumer.assignment.clear();
        consumer.positions.clear();
        consumer.resetting.clear();
        consumer.fetching.clear();
        consumer.coordinator = None;
        consumer.pending_commits.clear();
        consumer.buffer.clear();
        consumer.processing_until = None;
        consumer.paused_until = None;
        consumer.last_poll_ms = self.now;
        consumer.commit_due = false;
        consumer.rejoin_on_poll = false;
        consumer.heartbeat_in_flight = false;
        consumer.heartbeat_interval_ms = self.config.group_consumer_heartbeat_interval_ms;
        consumer.heartbeat_due_at = None;
        consumer.ack_after_commit = false;
        consumer.in_process.clear();
        consumer.awaiting_commit = false;
        consumer.awaiting_txn = None;
        consumer.in_transaction.clear();
        consumer.poisoned.clear();
        let incarnation = consumer.incarnation;
        // The app's producer starts with it (a new instance: it fences
        // the one that died, KIP-98). One that a fatal error stopped (the
        // app closed it and stopped) is replaced by a new instance too.
        if let Some(producer) = consumer.config.output_producer {
            let fenced = self
                .producers
                .get(producer as usize)
                .and_then(|state| state.txn.as_ref())
                .is_some_and(|txn| txn.phase == super::txn_client::TxnPhase::Fenced);
            if fenced {
                self.producer_crash(producer);
            }
            self.producer_revive(producer);
        }
        let consumer = &mut self.consumers[id as usize];
        let group = consumer.config.group.clone();
        self.record(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::Started {
                group: group.to_string(),
            },
        });
        self.consumer_bootstrap(id);
        let heartbeat = self.consumers[id as usize].config.heartbeat_interval_ms;
        let commit = self.consumers[id as usize].config.auto_commit_interval_ms;
        self.schedule_timer(
            Self::consumer_node(id),
            incarnation,
            heartbeat,
            Timer::ConsumerHeartbeat,
        );
        self.schedule_timer(Self::consumer_node(id), incarnation, commit, Timer::ConsumerCommit);
        let max_age = self.consumers[id as usize].config.metadata_max_age_ms;
        self.consumers[id as usize].metadata_at = self.now;
        self.schedule_timer(
            Self::consumer_node(id),
            incarnation,
            max_age,
            Timer::ConsumerMetadataMaxAge,
        );
    }

    /// Asks a bootstrap broker for metadata and the coordinator.
    /// Schedules the coordinator lookup's next try, unless one is already
    /// due as soon: a client has one retry pending, never a growing number.
    fn consumer_schedule_retry(&mut self, id: u32, delay: u64) {
        let at = self.now + delay;
        let consumer = &mut self.consumers[id as usize];
        if consumer.retry_at.is_some_and(|pending| pending <= at) {
            return;
        }
        consumer.retry_at = Some(at);
        let incarnation = consumer.incarnation;
        self.schedule_timer(Self::consumer_node(id), incarnation, delay, Timer::ConsumerRetry);
    }

    fn consumer_bootstrap(&mut self, id: u32) {
        let consumer = &mut self.consumers[id as usize];
        let broker = consumer.bootstrap_attempt % self.config.brokers + 1;
        consumer.bootstrap_attempt += 1;
        consumer.metadata_in_flight = Some(broker);
        let group = consumer.config.group.clone();
        self.send(
            Self::consumer_node(id),
            NodeId::Broker(broker),
            Message::MetadataRequest,
        );
        self.send(
            Self::consumer_node(id),
            NodeId::Broker(broker),
            Message::FindCoordinator { group },
        );
        self.consumer_schedule_retry(id, 1_000);
    }

    /// A consumer's `client.id`: as configured, else `consumer-N`.
    pub(crate) fn consumer_client_id(&self, id: u32) -> String {
        self.consumers
            .get(id as usize)
            .and_then(|consumer| consumer.config.client_id.clone())
            .unwrap_or_else(|| format!("consumer-{id}"))
    }

    pub(crate) fn consumer_stop(&mut self, id: u32, clean: bool) {
        let Some(consumer) = self.consumers.get(id as usize) else {
            return;
        };
        if consumer.phase == ConsumerPhase::Stopped {
            return;
        }
        if clean {
            // A clean shutdown lets the handler finish its batch, then
            // commits (auto-commit on close, or the application's own).
            let done = std::mem::take(&mut self.consumers[id as usize].in_process);
            // Under exactly-once, work counts only with its transaction.
            if self.consumers[id as usize].config.commit_mode != CommitMode::Transactional {
                self.consumer_processed(id, &done);
            }
            self.consumer_commit(id);
            self.consumer_commit_after_processing(id);
            let consumer = &self.consumers[id as usize];
            let member_id = consumer.member_id.clone();
            self.consumer_leave_group(id, member_id);
        } else {
            self.consumer_interrupted(id);
        }
        let consumer = &mut self.consumers[id as usize];
        consumer.phase = ConsumerPhase::Stopped;
        consumer.incarnation += 1;
        consumer.assignment.clear();
        consumer.throttled_until.clear();
        let status = if clean {
            ConsumerChange::Closed
        } else {
            ConsumerChange::Crashed
        };
        self.record(TraceKind::ConsumerStatus { consumer: id, status });
        if !clean {
            // The process died with its sockets: nothing still in flight on
            // them reaches a process started later.
            self.consumer_drop_connections(id);
            // Its producer dies with it: an open transaction stays open on
            // the coordinator until a new instance fences it or
            // `transaction.timeout.ms` passes.
            if let Some(producer) = self.consumers[id as usize].config.output_producer {
                self.producer_crash(producer);
            }
        }
        let consumer = &mut self.consumers[id as usize];
        consumer.awaiting_txn = None;
        consumer.in_transaction.clear();
        consumer.poisoned.clear();
    }

    /// `poll()` threw (`auto.offset.reset=none` and no position to start
    /// from). The simulated application does not catch it: its poll loop
    /// ends and it closes the consumer, which leaves the group (its
    /// partitions move to the others, who hit the same wall).
    fn consumer_exception_stops(&mut self, id: u32) {
        self.consumer_stop(id, true);
    }

    /// Whether every handler fails on this record (a `PoisonRecords` rule
    /// matches it).
    fn is_poison(&self, record: &super::ledger::InProcess) -> bool {
        if self.poison.is_empty() {
            return false;
        }
        let key = self
            .records
            .get(record.record as usize)
            .and_then(|made| made.key.as_deref());
        self.poison.iter().any(|rule| {
            *rule.topic == *record.partition.topic
                && rule.key.as_deref().is_none_or(|poison_key| Some(poison_key) == key)
                && rule
                    .partition
                    .is_none_or(|partition| partition == record.partition.partition)
                && rule.offset.is_none_or(|offset| offset == record.offset)
        })
    }

    /// The handler finished a batch with poison records in it: under
    /// `dead-letter` each goes to `<topic>.DLQ` and the rest are processed
    /// (returned); under `stop` the records before the first are
    /// processed, the exception stops the member, and nothing is returned.
    fn consumer_handle_poison(
        &mut self,
        id: u32,
        done: Vec<super::ledger::InProcess>,
    ) -> Option<Vec<super::ledger::InProcess>> {
        let consumer = &mut self.consumers[id as usize];
        let poisoned = std::mem::take(&mut consumer.poisoned);
        if poisoned.is_empty() {
            return Some(done);
        }
        let policy = consumer.config.on_failure.clone();
        let group = consumer.config.group.clone();
        let attempts = policy.retries.saturating_add(1);
        match (policy.then, policy.dead_letter_producer) {
            (AfterFailures::DeadLetter, Some(producer)) => {
                let mut rest = Vec::new();
                for (index, record) in done.into_iter().enumerate() {
                    if !poisoned.contains(&index) {
                        rest.push(record);
                        continue;
                    }
                    let headers = super::DeadLetterHeaders {
                        topic: record.partition.topic.to_string(),
                        partition: record.partition.partition,
                        offset: record.offset,
                        error: "the handler could not process this record (a poison record)".to_string(),
                        attempts,
                    };
                    let topic = self
                        .producers
                        .get(producer as usize)
                        .map(|state| state.config.topic.clone())
                        .unwrap_or_default();
                    let Some(dead_letter) = self.producer_send_dead_letter(producer, record.record, headers) else {
                        continue;
                    };
                    self.ledger.dead_letter(&group, &[record.record]);
                    self.record(TraceKind::DeadLettered {
                        group: group.clone(),
                        consumer: id,
                        partition: record.partition.clone(),
                        offset: record.offset,
                        attempts,
                        topic,
                        dead_letter,
                    });
                }
                Some(rest)
            }
            _ => {
                let first = poisoned[0].min(done.len().saturating_sub(1));
                self.consumer_processed(id, &done[..first]);
                let abandoned: Vec<super::types::RecordId> = done[first..].iter().map(|record| record.record).collect();
                self.ledger.abandon(&group, &abandoned);
                if let Some(failed) = done.get(first) {
                    self.record(TraceKind::HandlerFailed {
                        group,
                        consumer: id,
                        partition: failed.partition.clone(),
                        offset: failed.offset,
                        attempts,
                        skipped: (done.len() - first) as u64,
                    });
                }
                self.consumer_fail(id);
                None
            }
        }
    }

    /// The handler's exception left the poll loop: the app closes its
    /// consumer. `close()` commits what `poll()` consumed when
    /// auto-commit is on (past the failed batch: at most once for the
    /// rest of it), nothing otherwise; the member leaves the group.
    fn consumer_fail(&mut self, id: u32) {
        self.consumer_commit(id);
        let member_id = self.consumers[id as usize].member_id.clone();
        self.consumer_leave_group(id, member_id);
        let consumer = &mut self.consumers[id as usize];
        consumer.phase = ConsumerPhase::Stopped;
        consumer.incarnation += 1;
        consumer.assignment.clear();
        consumer.buffer.clear();
        self.record(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::Closed,
        });
    }

    /// The handler sends one output record per record it starts on
    /// through its `outputProducer` (consume-transform-produce).
    fn consumer_send_outputs(&mut self, id: u32, records: &[super::types::RecordId]) {
        let Some(producer) = self.consumers[id as usize].config.output_producer else {
            return;
        };
        for &source in records {
            let (key, bytes) = match self.records.get(source as usize) {
                Some(record) => (record.key.as_ref().map(|key| key.to_string()), record.bytes),
                None => (None, 100),
            };
            self.producer_send_derived(producer, source, key, bytes);
        }
    }

    /// With `commitMode: "transactional"`: the batch is processed, so the
    /// positions go into the output transaction
    /// (`sendOffsetsToTransaction(positions, groupMetadata())`) and it
    /// commits (`commitTransaction()`); the next poll waits for it.
    fn consumer_commit_transaction(&mut self, id: u32, done: Vec<super::ledger::InProcess>) {
        let consumer = &mut self.consumers[id as usize];
        let Some(producer) = consumer.config.output_producer else {
            return;
        };
        consumer.in_transaction.extend(done);
        let offsets: Vec<(TopicPartition, Offset)> = consumer
            .positions
            .iter()
            .filter(|(partition, _)| consumer.assignment.contains(partition))
            .map(|(partition, position)| (partition.clone(), *position))
            .collect();
        let send = super::txn_client::SendOffsets {
            group: consumer.config.group.clone(),
            generation: i32::try_from(consumer.generation).unwrap_or(i32::MAX),
            member_id: consumer.member_id.clone().unwrap_or_default(),
            instance: consumer.config.group_instance_id.clone(),
            offsets: offsets.clone(),
            added: false,
        };
        consumer.awaiting_txn = Some(offsets);
        self.producer_send_offsets(producer, send);
        self.producer_end_transaction(producer, true);
    }

    /// The output producer's transaction ended: committed (`Some(true)`),
    /// the records of it are processed once and its offsets committed;
    /// aborted (`Some(false)`), the app goes back to the last committed
    /// offsets and does them again (the usual recovery: `abortTransaction()`
    /// then seek to the committed positions); fenced (`None`), a newer
    /// instance owns the transactional id: the app closes.
    pub(crate) fn consumer_output_transaction_ended(&mut self, producer: u32, outcome: Option<bool>) {
        let Some(id) = self.consumers.iter().position(|consumer| {
            consumer.config.output_producer == Some(producer) && consumer.phase != ConsumerPhase::Stopped
        }) else {
            return;
        };
        let id = id as u32;
        let consumer = &mut self.consumers[id as usize];
        if consumer.config.commit_mode != CommitMode::Transactional {
            return;
        }
        let sent = consumer.awaiting_txn.take();
        let done = std::mem::take(&mut consumer.in_transaction);
        match outcome {
            Some(true) => {
                if let Some(offsets) = sent {
                    consumer.committed.extend(offsets);
                }
                self.consumer_processed(id, &done);
                self.consumer_poll(id);
                self.consumer_fetch_all(id);
            }
            Some(false) => {
                let group = consumer.config.group.clone();
                consumer.buffer.clear();
                let rewound: Vec<(TopicPartition, Offset)> = consumer
                    .assignment
                    .iter()
                    .filter_map(|partition| {
                        consumer
                            .positions
                            .remove(partition)
                            .map(|position| (partition.clone(), position))
                    })
                    .collect();
                self.record(TraceKind::TransactionRolledBack {
                    group,
                    consumer: id,
                    records: done.len() as u64,
                    rewound,
                });
                self.consumer_fetch_positions(id);
            }
            None => self.consumer_stop(id, true),
        }
    }

    /// The leader rejoins when the metadata its assignment used changed
    /// (`ConsumerCoordinator#rejoinNeededOrPending`: "cached metadata has
    /// changed"), checked when it polls (after a metadata answer, after its
    /// handler is done, on its heartbeat timer when idle); while its
    /// handler works or its coordinator is unknown the need stays.
    fn consumer_metadata_changed(&mut self, id: u32) -> bool {
        let consumer = &mut self.consumers[id as usize];
        // The check belongs to poll(): not while the handler works on the
        // last poll's records or the process is paused.
        if consumer.phase != ConsumerPhase::Consuming
            || consumer.processing_until.is_some()
            || consumer.paused_until.is_some_and(|until| until > self.now)
            || consumer.coordinator.is_none()
            || consumer.config.consumer_protocol()
            || consumer
                .assignment_snapshot
                .as_ref()
                .is_none_or(|snapshot| *snapshot == consumer.partition_counts)
        {
            return false;
        }
        consumer.assignment_snapshot = None;
        self.consumer_commit(id);
        self.consumer_join(id);
        true
    }

    fn consumer_join(&mut self, id: u32) {
        if self.consumers[id as usize].config.consumer_protocol() {
            self.member_join(id);
            return;
        }
        let consumer = &mut self.consumers[id as usize];
        let Some(coordinator) = consumer.coordinator else {
            return;
        };
        consumer.phase = ConsumerPhase::Joining;
        let owned = if consumer.cooperative() {
            // Cooperative protocol (KIP-429): keep reading what it owns
            // through the rebalance, and tell the leader what that is.
            consumer.assignment.clone()
        } else {
            // Eager protocol: give up everything before joining.
            consumer.fetching.clear();
            consumer.buffer.clear();
            std::mem::take(&mut consumer.assignment)
        };
        let message = Message::JoinGroup {
            group: consumer.config.group.clone(),
            member_id: consumer.member_id.clone(),
            instance: consumer.config.group_instance_id.clone(),
            session_timeout_ms: consumer.config.session_timeout_ms,
            rebalance_timeout_ms: consumer.config.max_poll_interval_ms,
            topics: consumer.config.topics.clone(),
            owned,
            assignor: consumer.config.assignor.clone(),
        };
        self.send(Self::consumer_node(id), NodeId::Broker(coordinator), message);
    }

    /// An automatic commit (`enable.auto.commit`): every interval, before a
    /// rebalance, on close. Nothing when the application commits itself.
    pub(crate) fn consumer_commit(&mut self, id: u32) {
        if self.consumers[id as usize].config.commit_mode == CommitMode::Auto {
            self.consumer_send_commit(id);
        }
    }

    /// Commits every consumed position; returns whether a commit went out.
    fn consumer_send_commit(&mut self, id: u32) -> bool {
        let consumer = &self.consumers[id as usize];
        let (Some(coordinator), Some(member_id)) = (consumer.coordinator, consumer.member_id.clone()) else {
            return false;
        };
        if consumer.phase != ConsumerPhase::Consuming {
            return false;
        }
        // Auto-commit sends every consumed position each interval (`maybeAutoCommitOffsetsAsync`).
        let offsets: Vec<(TopicPartition, Offset)> = consumer
            .positions
            .iter()
            .map(|(partition, position)| (partition.clone(), *position))
            .collect();
        if offsets.is_empty() {
            return false;
        }
        let message = Message::OffsetCommit {
            group: consumer.config.group.clone(),
            generation: consumer.generation,
            member_id,
            instance: consumer.config.group_instance_id.clone(),
            offsets: offsets.clone(),
        };
        self.consumers[id as usize].pending_commits.push_back(offsets);
        self.send(Self::consumer_node(id), NodeId::Broker(coordinator), message);
        true
    }

    /// Applies a live change to a consumer's settings.
    pub(crate) fn consumer_config_change(&mut self, id: u32, change: impl Fn(&mut ConsumerConfig)) {
        if let Some(consumer) = self.consumers.get_mut(id as usize) {
            change(&mut consumer.config);
        }
        if let Some(config) = self.config.consumers.get_mut(id as usize) {
            change(config);
        }
    }

    /// The handler finished these records: the ledger notes them, and the
    /// duplicates among them are traced with why.
    fn consumer_processed(&mut self, id: u32, records: &[super::ledger::InProcess]) {
        if records.is_empty() {
            return;
        }
        let consumer = &self.consumers[id as usize];
        let group = consumer.config.group.clone();
        let (incarnation, idempotent) = (consumer.incarnation, consumer.config.idempotent_handler);
        let lives: Vec<u32> = self.consumers.iter().map(|consumer| consumer.incarnation).collect();
        let found = self
            .ledger
            .process(&group, id, incarnation, idempotent, records, |who, life| {
                lives.get(who as usize).is_some_and(|now| *now != life)
            });
        for ((partition, reason), (from, to, count, skipped)) in found {
            self.record(TraceKind::ProcessedAgain {
                group: group.clone(),
                consumer: id,
                partition,
                from,
                to,
                count,
                reason,
                skipped,
            });
        }
    }

    /// The application commits after processing (`commitSync` or
    /// `commitAsync`), if that is its mode.
    fn consumer_commit_after_processing(&mut self, id: u32) {
        let mode = self.consumers[id as usize].config.commit_mode;
        if matches!(mode, CommitMode::AfterProcessing | CommitMode::AfterProcessingAsync) {
            let sent = self.consumer_send_commit(id);
            self.consumers[id as usize].awaiting_commit = sent && mode == CommitMode::AfterProcessing;
        }
    }

    pub(crate) fn consumer_timer(&mut self, id: u32, incarnation: u32, timer: Timer) {
        let Some(consumer) = self.consumers.get(id as usize) else {
            return;
        };
        if consumer.incarnation != incarnation || consumer.phase == ConsumerPhase::Stopped {
            return;
        }
        let node = Self::consumer_node(id);
        match timer {
            Timer::ConsumerHeartbeat => {
                // (The simulation's consumer polls on its heartbeat timer
                // too when it has nothing to process.)
                if self.consumer_metadata_changed(id) {
                    let heartbeat = self.consumers[id as usize].config.heartbeat_interval_ms;
                    self.schedule_timer(node, incarnation, heartbeat, Timer::ConsumerHeartbeat);
                    return;
                }
                let consumer = &self.consumers[id as usize];
                let heartbeat = consumer.config.heartbeat_interval_ms;
                // The heartbeat thread notices a handler that has not
                // polled within max.poll.interval.ms: the member leaves
                // (`AbstractCoordinator.HeartbeatThread`, "consumer poll
                // timeout has expired").
                let interval = consumer.config.max_poll_interval_ms;
                if consumer.processing_until.is_some()
                    && consumer.member_id.is_some()
                    && !consumer.rejoin_on_poll
                    && self.now.saturating_sub(consumer.last_poll_ms) > interval
                {
                    self.consumer_poll_timeout(id);
                }
                let consumer = &self.consumers[id as usize];
                // Heartbeats belong to a joined member: none while it looks for
                // the coordinator or waits for its JoinGroup answer.
                // A consumer-protocol member heartbeats on its own timer.
                let joined = matches!(consumer.phase, ConsumerPhase::Syncing | ConsumerPhase::Consuming)
                    && !consumer.config.consumer_protocol();
                if let (true, Some(coordinator), Some(member_id)) =
                    (joined, consumer.coordinator, consumer.member_id.clone())
                {
                    let message = Message::Heartbeat {
                        group: consumer.config.group.clone(),
                        generation: consumer.generation,
                        member_id,
                        instance: consumer.config.group_instance_id.clone(),
                    };
                    self.send(node, NodeId::Broker(coordinator), message);
                }
                // `updateFetchPositions` runs at every poll: partitions still
                // without a position (their OffsetFetch or ListOffsets was
                // lost) are asked for again.
                self.consumer_fetch_positions(id);
                self.schedule_timer(node, incarnation, heartbeat, Timer::ConsumerHeartbeat);
            }
            Timer::ConsumerCommit => {
                let interval = consumer.config.auto_commit_interval_ms;
                // Auto-commit runs inside poll(): while the handler works it
                // waits for the next poll.
                if consumer.processing_until.is_some() {
                    self.consumers[id as usize].commit_due = true;
                } else {
                    self.consumer_commit(id);
                }
                self.schedule_timer(node, incarnation, interval, Timer::ConsumerCommit);
            }
            Timer::ConsumerPollTimer => {
                let consumer = &self.consumers[id as usize];
                if consumer.processing_until.is_some()
                    && consumer.member_id.is_some()
                    && !consumer.rejoin_on_poll
                    && self.now.saturating_sub(consumer.last_poll_ms) >= consumer.config.max_poll_interval_ms
                {
                    self.consumer_poll_timeout(id);
                }
            }
            Timer::ConsumerProcessed => {
                let consumer = &mut self.consumers[id as usize];
                consumer.processing_until = None;
                let done = std::mem::take(&mut consumer.in_process);
                let Some(done) = self.consumer_handle_poison(id, done) else {
                    return;
                };
                let consumer = &mut self.consumers[id as usize];
                if consumer.config.commit_mode == CommitMode::Transactional {
                    self.consumer_commit_transaction(id, done);
                } else {
                    self.consumer_processed(id, &done);
                    self.consumer_commit_after_processing(id);
                }
                self.consumer_poll(id);
                self.consumer_fetch_all(id);
            }
            Timer::ConsumerPauseEnd => {
                let consumer = &mut self.consumers[id as usize];
                if consumer.paused_until.is_some_and(|until| until <= self.now) {
                    consumer.paused_until = None;
                    self.record(TraceKind::ConsumerStatus {
                        consumer: id,
                        status: ConsumerChange::Resumed,
                    });
                    self.consumer_poll(id);
                    self.consumer_fetch_all(id);
                }
            }
            // Only the one pending retry counts (later ones replace none);
            // a pause may have held it past its time.
            Timer::ConsumerRetry if consumer.retry_at.is_some_and(|at| at <= self.now) => {
                self.consumers[id as usize].retry_at = None;
                if self.consumers[id as usize].coordinator.is_none() {
                    self.consumer_bootstrap(id);
                }
            }
            Timer::ConsumerRequestTimeout(broker) => {
                let now = self.now;
                let consumer = &mut self.consumers[id as usize];
                consumer.timeout_armed.remove(&broker);
                let Some(&(_, deadline)) = consumer.outstanding.get(&broker).and_then(|queue| queue.front()) else {
                    return;
                };
                if deadline > now {
                    // The oldest request still has time: check again then.
                    consumer.timeout_armed.insert(broker);
                    self.schedule_timer(node, incarnation, deadline - now, Timer::ConsumerRequestTimeout(broker));
                } else {
                    // `NetworkClient#handleTimedOutRequests`: a request with no
                    // answer within its timeout closes its connection, which
                    // fails everything in flight on it.
                    self.record(TraceKind::ConsumerStatus {
                        consumer: id,
                        status: ConsumerChange::TimedOut { broker },
                    });
                    self.connection_reset(node, NodeId::Broker(broker));
                }
            }
            Timer::ConsumerGroupHeartbeat => self.member_heartbeat_due(id),
            Timer::ConsumerUnthrottled => {
                let now = self.now;
                self.consumers[id as usize]
                    .throttled_until
                    .retain(|_, until| *until > now);
                self.consumer_fetch_all(id);
            }
            // `metadata.max.age.ms` (`Metadata#timeToNextUpdate`): metadata
            // older than that is refreshed even when nothing failed; this is
            // how a group leader finds partitions added to a subscribed
            // topic, and rejoins so they get owners.
            Timer::ConsumerMetadataMaxAge => {
                let max_age = consumer.config.metadata_max_age_ms;
                let due = consumer.metadata_at + max_age;
                if due <= self.now && consumer.metadata_in_flight.is_none() && consumer.refresh_pending.is_none() {
                    let broker = consumer.bootstrap_attempt % self.config.brokers + 1;
                    let consumer = &mut self.consumers[id as usize];
                    consumer.bootstrap_attempt += 1;
                    consumer.metadata_in_flight = Some(broker);
                    self.send(node, NodeId::Broker(broker), Message::MetadataRequest);
                }
                let next = if due <= self.now { max_age } else { due - self.now };
                self.schedule_timer(node, incarnation, next, Timer::ConsumerMetadataMaxAge);
            }
            Timer::ConsumerMetadataRefresh => {
                if let Some(broker) = self.consumers[id as usize].refresh_pending.take() {
                    self.consumers[id as usize].metadata_in_flight = Some(broker);
                    self.send(node, NodeId::Broker(broker), Message::MetadataRequest);
                }
            }
            _ => {}
        }
    }

    /// Notes a request the consumer sends to a broker, with its timeout:
    /// `request.timeout.ms` (30000), or for a JoinGroup the rebalance
    /// timeout plus five seconds, as `ConsumerCoordinator` sets it.
    pub(crate) fn consumer_note_request(&mut self, id: u32, broker: BrokerId, message: &Message) {
        let timeout = match message {
            Message::JoinGroup {
                rebalance_timeout_ms, ..
            } => rebalance_timeout_ms + 5_000,
            Message::LeaveGroup { .. } => return,
            Message::ConsumerGroupHeartbeat { member_epoch: -1, .. } => return,
            _ => CONSUMER_REQUEST_TIMEOUT_MS,
        };
        let now = self.now;
        let Some(consumer) = self.consumers.get_mut(id as usize) else {
            return;
        };
        consumer.next_request += 1;
        let request = consumer.next_request;
        consumer
            .outstanding
            .entry(broker)
            .or_default()
            .push_back((request, now + timeout));
        // One timer per connection at a time, for its oldest request.
        if consumer.timeout_armed.insert(broker) {
            let incarnation = consumer.incarnation;
            self.schedule_timer(
                NodeId::Consumer(id),
                incarnation,
                timeout,
                Timer::ConsumerRequestTimeout(broker),
            );
        }
    }

    pub(crate) fn consumer_receive(&mut self, id: u32, from: NodeId, message: Message) {
        let Some(consumer) = self.consumers.get(id as usize) else {
            return;
        };
        if consumer.phase == ConsumerPhase::Stopped {
            return;
        }
        // An answer from a broker settles the oldest request on that
        // connection; a disconnect settles them all.
        if let NodeId::Broker(broker) = from {
            let consumer = &mut self.consumers[id as usize];
            if message == Message::ConnectionClosed {
                consumer.outstanding.remove(&broker);
            } else if let Some(queue) = consumer.outstanding.get_mut(&broker) {
                queue.pop_front();
            }
        }
        match message {
            Message::MetadataResponse { leaders } => self.consumer_metadata_answer(id, leaders),
            Message::FindCoordinatorResponse { coordinator, .. } => self.consumer_coordinator_found(id, coordinator),
            Message::JoinGroupResponse { result, member_id, .. } => self.consumer_join_answer(id, member_id, result),
            Message::SyncGroupResponse { result, .. } => self.consumer_sync_answer(id, result),
            Message::HeartbeatResponse { error: Some(error), .. } => self.consumer_group_error(id, error),
            Message::ConsumerGroupHeartbeatResponse { result, .. } => self.member_answer(id, result),
            Message::OffsetFetchResponse {
                result: Ok(offsets), ..
            } => self.consumer_committed_offsets(id, offsets),
            Message::OffsetFetchResponse {
                result: Err(ErrorCode::UnstableOffsetCommit),
                ..
            } => {
                // KIP-447: a transaction's offsets for these partitions are
                // not decided yet; asked again (here at the next heartbeat
                // tick rather than after `retry.backoff.ms`).
                self.consumers[id as usize].offset_fetch_in_flight = false;
            }
            Message::OffsetFetchResponse { result: Err(error), .. } => self.consumer_group_error(id, error),
            Message::ListOffsetsResponse {
                partition,
                result: Ok(offset),
            } => self.consumer_list_offsets_answer(id, partition, offset),
            Message::OffsetCommitResponse { result: Ok(()), .. } => {
                let consumer = &mut self.consumers[id as usize];
                if let Some(offsets) = consumer.pending_commits.pop_front() {
                    consumer.committed.extend(offsets);
                }
                self.member_commit_settled(id);
                self.consumer_sync_commit_settled(id);
            }
            Message::OffsetCommitResponse { result: Err(error), .. } => self.consumer_commit_failed(id, error),
            Message::ConsumerFetchResponse {
                partition,
                records,
                high_watermark,
                last_stable_offset,
                aborted,
                error,
                fetch_offset,
                next_offset,
                throttle_time_ms,
            } => {
                if throttle_time_ms > 0 {
                    self.consumer_throttled(id, from, throttle_time_ms);
                }
                self.consumer_fetched(
                    id,
                    from,
                    partition,
                    FetchAnswer {
                        records,
                        high_watermark,
                        last_stable_offset,
                        aborted,
                        fetch_offset,
                        next_offset,
                    },
                    error,
                );
            }
            Message::OffsetForLeaderEpochResponse { partition, result } => {
                self.consumer_validation_answer(id, from, partition, result)
            }
            Message::ConnectionClosed => self.consumer_connection_closed(id, from),
            _ => {}
        }
    }

    /// A `MetadataResponse`: the leaders and partition counts of the
    /// consumer's topics.
    fn consumer_metadata_answer(&mut self, id: u32, leaders: BTreeMap<TopicPartition, (Option<BrokerId>, u32)>) {
        let topics = self.consumers[id as usize].config.topics.clone();
        let consumer = &mut self.consumers[id as usize];
        consumer.metadata_in_flight = None;
        consumer.metadata_at = self.now;
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for (partition, (leader, epoch)) in leaders {
            if topics.iter().any(|topic| **topic == *partition.topic) {
                let count = counts.entry(partition.topic.to_string()).or_insert(0);
                *count = (*count).max(partition.partition + 1);
                // KIP-320: a broker cut off from the controller may still
                // name itself leader at an epoch this client has seen
                // replaced; that partition keeps what the client knew.
                if consumer.leader_epochs.get(&partition).is_some_and(|&seen| epoch < seen) {
                    continue;
                }
                let newer = consumer
                    .leader_epochs
                    .insert(partition.clone(), epoch)
                    .is_some_and(|seen| seen < epoch);
                // KIP-320 (`SubscriptionState#maybeValidatePositionForCurrentLeader`):
                // a new leader epoch puts a position with an epoch into
                // validation; its buffered records are dropped.
                if newer && consumer.position_epoch(&partition).is_some() && consumer.assignment.contains(&partition) {
                    consumer.validating.insert(partition.clone(), None);
                    consumer.buffer.remove(&partition);
                }
                consumer.leaders.insert(partition, leader);
            }
        }
        if !counts.is_empty() {
            consumer.partition_counts = counts;
        }
        if self.consumer_metadata_changed(id) {
            return;
        }
        self.consumer_fetch_all(id);
    }

    /// A `FindCoordinatorResponse`: join the group, or go on with a
    /// coordinator found again.
    fn consumer_coordinator_found(&mut self, id: u32, coordinator: Option<BrokerId>) {
        let consumer = &mut self.consumers[id as usize];
        if consumer.coordinator.is_some() {
            return;
        }
        if let Some(coordinator) = coordinator {
            consumer.coordinator = Some(coordinator);
            // A member that kept consuming while its coordinator was
            // unknown just heartbeats to the new one, which loaded
            // the group from __consumer_offsets: no rejoin.
            if consumer.phase == ConsumerPhase::FindingCoordinator {
                self.consumer_join(id);
            } else {
                self.consumer_fetch_positions(id);
                if self.consumers[id as usize].config.consumer_protocol() {
                    self.member_heartbeat(id);
                }
            }
        }
    }

    /// A `JoinGroupResponse`: the new generation, or what its error asks for.
    fn consumer_join_answer(&mut self, id: u32, member_id: String, result: Result<JoinResult, ErrorCode>) {
        match result {
            Ok(join) => self.consumer_joined(id, join),
            Err(ErrorCode::MemberIdRequired) => {
                // KIP-394: join again, with the id the coordinator gave.
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase == ConsumerPhase::Joining {
                    consumer.member_id = Some(member_id);
                    self.consumer_join(id);
                }
            }
            Err(ErrorCode::UnknownMemberId) => {
                // The coordinator does not know this member (a new
                // coordinator without its group, or it expired): join
                // again as a new member (`resetStateAndGeneration`).
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase == ConsumerPhase::Joining {
                    consumer.member_id = None;
                    self.consumer_join(id);
                }
            }
            Err(error) => self.consumer_group_error(id, error),
        }
    }

    /// A `SyncGroupResponse`: the member's partitions for the generation.
    fn consumer_sync_answer(&mut self, id: u32, result: Result<Vec<TopicPartition>, ErrorCode>) {
        match result {
            Ok(partitions) => {
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase != ConsumerPhase::Syncing {
                    return;
                }
                consumer.phase = ConsumerPhase::Consuming;
                consumer.offset_fetch_in_flight = false;
                if consumer.cooperative() {
                    // KIP-429 (`ConsumerCoordinator#onJoinComplete`): keep
                    // what stays, start on what was added, and give up
                    // what moves; if anything was given up, join again
                    // so the next round hands it to its new owner.
                    let revoked: Vec<TopicPartition> = consumer
                        .assignment
                        .iter()
                        .filter(|partition| !partitions.contains(partition))
                        .cloned()
                        .collect();
                    if !revoked.is_empty() {
                        self.consumer_commit(id);
                    }
                    let consumer = &mut self.consumers[id as usize];
                    consumer.positions.retain(|partition, _| partitions.contains(partition));
                    consumer.resetting.retain(|partition, _| partitions.contains(partition));
                    consumer.fetching.retain(|partition, _| partitions.contains(partition));
                    consumer.buffer.retain(|partition, _| partitions.contains(partition));
                    consumer.assignment = partitions;
                    self.consumer_fetch_positions(id);
                    self.consumer_fetch_all(id);
                    if !revoked.is_empty() {
                        self.consumer_join(id);
                    }
                } else {
                    consumer.assignment = partitions;
                    // Eager protocol: every partition was revoked before
                    // the join, so each one assigned starts from its
                    // committed offset (`SubscriptionState#assignFromSubscribed`).
                    consumer.positions.clear();
                    consumer.resetting.clear();
                    consumer.buffer.clear();
                    self.consumer_fetch_positions(id);
                }
            }
            Err(error) => self.consumer_group_error(id, error),
        }
    }

    /// An `OffsetFetchResponse`: each partition starts at its committed
    /// offset, or where `auto.offset.reset` says.
    fn consumer_committed_offsets(&mut self, id: u32, offsets: Vec<(TopicPartition, Option<Offset>)>) {
        let reset = self.consumers[id as usize].config.auto_offset_reset;
        self.consumers[id as usize].offset_fetch_in_flight = false;
        for (partition, committed) in offsets {
            if self.consumers[id as usize].resetting.contains_key(&partition) {
                continue;
            }
            match committed {
                Some(offset) => {
                    let consumer = &mut self.consumers[id as usize];
                    consumer.positions.insert(partition.clone(), offset);
                    consumer.committed.insert(partition, offset);
                }
                None if reset == OffsetReset::Earliest => {
                    self.consumers[id as usize].positions.insert(partition, 0);
                }
                None if reset == OffsetReset::None => {
                    self.record(TraceKind::NoOffsetForPartition {
                        client: Self::consumer_node(id),
                        partition,
                    });
                    self.consumer_exception_stops(id);
                    return;
                }
                None => {
                    // Start at the end: ask the leader for its high watermark.
                    if let Some(Some(leader)) = self.consumers[id as usize].leaders.get(&partition).copied() {
                        self.send(
                            Self::consumer_node(id),
                            NodeId::Broker(leader),
                            Message::ListOffsets {
                                partition,
                                spec: OffsetSpec::Latest,
                                isolation: self.consumers[id as usize].config.isolation_level,
                            },
                        );
                    }
                }
            }
        }
        self.consumer_fetch_all(id);
    }

    /// A `ListOffsetsResponse`: where a partition being reset starts.
    fn consumer_list_offsets_answer(&mut self, id: u32, partition: TopicPartition, offset: Offset) {
        let consumer = &mut self.consumers[id as usize];
        if let Some((_, from)) = consumer.resetting.remove(&partition) {
            if consumer.assignment.contains(&partition) {
                consumer.positions.insert(partition.clone(), offset);
                consumer.last_resets.insert(partition.clone(), (from, offset));
                self.record(TraceKind::OffsetReset {
                    client: Self::consumer_node(id),
                    partition,
                    offset,
                });
            }
        } else if consumer.assignment.contains(&partition) {
            consumer.positions.entry(partition).or_insert(offset);
        }
        self.consumer_fetch_all(id);
    }

    /// An `OffsetCommitResponse` with an error.
    fn consumer_commit_failed(&mut self, id: u32, error: ErrorCode) {
        let consumer = &mut self.consumers[id as usize];
        consumer.pending_commits.pop_front();
        self.consumer_sync_commit_settled(id);
        let consumer = &mut self.consumers[id as usize];
        let modern = consumer.config.consumer_protocol();
        self.member_commit_settled(id);
        // A consumer-protocol member learns about its membership
        // from its heartbeats: a commit refused with a stale epoch
        // or an unknown member is only a failed commit.
        let membership = matches!(error, ErrorCode::StaleMemberEpoch | ErrorCode::UnknownMemberId);
        if !(modern && membership) {
            self.consumer_group_error(id, error);
        }
    }

    /// A broker answered a fetch empty with a throttle time: no fetch to
    /// it until then (`NetworkClient#maybeThrottle`), and what is in flight
    /// on that connection gets that much longer before it times out
    /// (`InFlightRequests#incrementThrottleTime`).
    fn consumer_throttled(&mut self, id: u32, from: NodeId, throttle_time_ms: u64) {
        let NodeId::Broker(broker) = from else {
            return;
        };
        let until = self.now + throttle_time_ms;
        let consumer = &mut self.consumers[id as usize];
        let entry = consumer.throttled_until.entry(broker).or_insert(until);
        *entry = (*entry).max(until);
        if let Some(queue) = consumer.outstanding.get_mut(&broker) {
            for (_, deadline) in queue.iter_mut() {
                *deadline += throttle_time_ms;
            }
        }
        let incarnation = consumer.incarnation;
        self.record(TraceKind::Throttled {
            client: Self::consumer_node(id),
            broker,
            throttle_time_ms,
            quota: QuotaType::Fetch,
        });
        self.schedule_timer(
            Self::consumer_node(id),
            incarnation,
            throttle_time_ms,
            Timer::ConsumerUnthrottled,
        );
    }

    /// Resets a lost `position` as `auto.offset.reset` says: asks the
    /// leader `from` for its start or end (`ListOffsets` at the consumer's
    /// isolation level) and remembers the reset until the answer.
    fn consumer_reset_position(
        &mut self,
        id: u32,
        from: NodeId,
        partition: TopicPartition,
        spec: OffsetSpec,
        position: Offset,
    ) {
        let consumer = &mut self.consumers[id as usize];
        consumer.resetting.insert(partition.clone(), (spec, position));
        let isolation = consumer.config.isolation_level;
        self.send(
            Self::consumer_node(id),
            from,
            Message::ListOffsets {
                partition,
                spec,
                isolation,
            },
        );
    }

    /// KIP-320: the leader's answer to `OffsetForLeaderEpoch`
    /// (`OffsetsForLeaderEpochUtils#handleResponse`,
    /// `SubscriptionState#maybeCompleteValidation`). An error keeps the
    /// position awaiting validation and asks for metadata again; an end
    /// offset at or past the position completes it; one below it means the
    /// log was truncated under the consumer: with `auto.offset.reset` set it
    /// seeks to that end, with `none` `poll()` throws
    /// `LogTruncationException`; no end known at all resets the position
    /// by `auto.offset.reset`.
    fn consumer_validation_answer(
        &mut self,
        id: u32,
        from: NodeId,
        partition: TopicPartition,
        result: Result<Option<(u32, Offset)>, ErrorCode>,
    ) {
        let NodeId::Broker(broker) = from else { return };
        let consumer = &mut self.consumers[id as usize];
        if consumer.validating.get(&partition) != Some(&Some(broker)) {
            return;
        }
        let Some((position, _)) = consumer.position_epoch(&partition) else {
            consumer.validating.remove(&partition);
            self.consumer_fetch_all(id);
            return;
        };
        let answer = match result {
            Ok(answer) => answer,
            Err(_) => {
                // Retried after a metadata update (`OffsetFetcherUtils`:
                // `requestUpdate`, and not before `retry.backoff.ms`): the
                // partition's leader is unknown until that answer comes.
                consumer.validating.insert(partition.clone(), None);
                consumer.leaders.insert(partition, None);
                if consumer.refresh_pending.is_none() {
                    self.consumer_schedule_refresh(id, broker % self.config.brokers + 1);
                }
                return;
            }
        };
        consumer.validating.remove(&partition);
        let diverging = match answer {
            Some((_, end_offset)) if end_offset >= position => {
                self.consumer_fetch_all(id);
                return;
            }
            Some((epoch, end_offset)) => Some((epoch, end_offset)),
            None => None,
        };
        let reset = consumer.config.auto_offset_reset;
        self.record(TraceKind::LogTruncationDetected {
            client: Self::consumer_node(id),
            partition: partition.clone(),
            position,
            diverging: diverging.map(|(_, end_offset)| end_offset),
            reset,
        });
        let consumer = &mut self.consumers[id as usize];
        consumer.buffer.remove(&partition);
        match (diverging, reset) {
            (_, OffsetReset::None) => {
                self.consumer_exception_stops(id);
                return;
            }
            (Some((epoch, end_offset)), _) => {
                consumer.positions.insert(partition.clone(), end_offset);
                consumer.position_epochs.insert(partition, (end_offset, epoch));
            }
            (None, reset) => {
                // `requestOffsetReset` with the default strategy.
                consumer.positions.remove(&partition);
                let spec = if reset == OffsetReset::Earliest {
                    OffsetSpec::Earliest
                } else {
                    OffsetSpec::Latest
                };
                self.consumer_reset_position(id, from, partition, spec, position);
            }
        }
        self.consumer_fetch_all(id);
    }

    /// Every request in flight to `from` failed: fetches it held are retried
    /// after a metadata refresh, and a lost coordinator is looked up again.
    fn consumer_connection_closed(&mut self, id: u32, from: NodeId) {
        let NodeId::Broker(broker) = from else {
            return;
        };
        let consumer = &self.consumers[id as usize];
        let lost_fetches: Vec<TopicPartition> = consumer
            .fetching
            .iter()
            .filter(|(partition, in_flight)| **in_flight && consumer.fetch_brokers.get(*partition) == Some(&broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        let lost_coordinator = consumer.coordinator == Some(broker);
        if consumer.metadata_in_flight == Some(broker) {
            self.consumers[id as usize].metadata_in_flight = None;
        }
        for partition in lost_fetches {
            self.consumer_fetched(
                id,
                from,
                partition,
                FetchAnswer::default(),
                Some(ErrorCode::NotLeaderOrFollower),
            );
        }
        let lost_validations: Vec<TopicPartition> = self.consumers[id as usize]
            .validating
            .iter()
            .filter(|(_, in_flight)| **in_flight == Some(broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in lost_validations {
            self.consumer_validation_answer(id, from, partition, Err(ErrorCode::NetworkException));
        }
        if lost_coordinator && self.consumers[id as usize].phase != ConsumerPhase::Stopped {
            self.consumer_group_error(id, ErrorCode::NetworkException);
        }
        self.consumer_fetch_all(id);
    }

    fn consumer_joined(&mut self, id: u32, join: JoinResult) {
        let consumer = &mut self.consumers[id as usize];
        if consumer.phase != ConsumerPhase::Joining {
            return;
        }
        consumer.member_id = Some(join.member_id.clone());
        consumer.generation = join.generation;
        consumer.phase = ConsumerPhase::Syncing;
        let group = consumer.config.group.clone();
        let Some(coordinator) = consumer.coordinator else {
            return;
        };
        // The leader computes everyone's assignment with the group's
        // assignor, unless the coordinator kept the current one (a static
        // leader that rejoined, KIP-814).
        let leader = join.member_id == join.leader && !join.skip_assignment;
        // Only the leader watches the metadata. A static leader that skips
        // the assignment takes the metadata it has now as its snapshot
        // (`onLeaderElected`: `assignmentSnapshot = metadataSnapshot`), so a
        // change made while it was away goes unnoticed, as in Kafka; a
        // later one does not.
        consumer.assignment_snapshot = (join.member_id == join.leader).then(|| consumer.partition_counts.clone());
        let assignment = leader.then(|| {
            let partition_counts = consumer.partition_counts.clone();
            let input = GroupInput {
                topics: partition_counts,
                members: join
                    .members
                    .iter()
                    .map(|(member_id, topics, owned)| Member {
                        member_id: member_id.clone(),
                        topics: topics.iter().map(|topic| topic.as_str().into()).collect(),
                        owned: owned.clone(),
                        generation: Some(join.generation.saturating_sub(1) as i32),
                        ..Member::default()
                    })
                    .collect(),
                ..GroupInput::default()
            };
            let strategy = Strategy::from_name(&join.assignor).unwrap_or(Strategy::Range);
            assign(strategy, &input).unwrap_or_default()
        });
        let message = Message::SyncGroup {
            group,
            generation: join.generation,
            member_id: join.member_id,
            instance: consumer.config.group_instance_id.clone(),
            assignment,
        };
        self.send(Self::consumer_node(id), NodeId::Broker(coordinator), message);
    }

    pub(crate) fn consumer_group_error(&mut self, id: u32, error: ErrorCode) {
        let consumer = &mut self.consumers[id as usize];
        match error {
            ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration => {
                if consumer.phase == ConsumerPhase::Consuming || consumer.phase == ConsumerPhase::Syncing {
                    if error == ErrorCode::IllegalGeneration {
                        // Its generation is gone: what it owned is lost
                        // (`onPartitionsLost`), cooperative or not.
                        self.consumer_commit(id);
                        let consumer = &mut self.consumers[id as usize];
                        consumer.assignment.clear();
                        consumer.fetching.clear();
                        consumer.buffer.clear();
                    }
                    let consumer = &mut self.consumers[id as usize];
                    if consumer.processing_until.is_some() {
                        // The heartbeat thread only asks for a rejoin; the
                        // application joins in its next poll()
                        // (`AbstractCoordinator#requestRejoin`), so a busy
                        // handler holds up the whole group's join round.
                        consumer.rejoin_on_poll = true;
                    } else {
                        self.consumer_commit(id);
                        self.consumer_join(id);
                    }
                }
            }
            ErrorCode::UnknownMemberId => {
                consumer.member_id = None;
                consumer.assignment.clear();
                consumer.fetching.clear();
                // A JoinGroup already in flight will get the new id; a
                // second one would make this client two members.
                if consumer.phase != ConsumerPhase::Joining {
                    self.consumer_join(id);
                }
            }
            ErrorCode::FencedInstanceId
            | ErrorCode::InconsistentGroupProtocol
            | ErrorCode::UnsupportedAssignor
            | ErrorCode::GroupIdNotFound
            | ErrorCode::InvalidRequest => {
                // Fatal for Kafka's client: another process took this
                // group.instance.id, or the group's members share no
                // assignor (`InconsistentGroupProtocolException`). The
                // consumer stops.
                consumer.phase = ConsumerPhase::Stopped;
                consumer.incarnation += 1;
                consumer.assignment.clear();
                consumer.fetching.clear();
                let status = if error == ErrorCode::FencedInstanceId {
                    ConsumerChange::Fenced
                } else {
                    ConsumerChange::Refused { error }
                };
                self.record(TraceKind::ConsumerStatus { consumer: id, status });
                self.consumer_drop_connections(id);
            }
            _ => {
                // NOT_COORDINATOR and the like: the coordinator is unknown
                // (`markCoordinatorUnknown`), and the client disconnects from
                // it, so nothing it still holds (a parked JoinGroup) answers
                // later. A member that has its partitions keeps reading them
                // while it looks for the coordinator again; one that was
                // joining joins again once it is found.
                let old = consumer.coordinator.take();
                if let (Some(broker), false) = (old, error == ErrorCode::NetworkException) {
                    self.connection_reset(Self::consumer_node(id), NodeId::Broker(broker));
                }
                let consumer = &mut self.consumers[id as usize];
                // Requests on the old coordinator connection get no answer.
                consumer.pending_commits.clear();
                consumer.offset_fetch_in_flight = false;
                consumer.heartbeat_in_flight = false;
                self.member_commit_settled(id);
                self.consumer_sync_commit_settled(id);
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase != ConsumerPhase::Consuming {
                    consumer.phase = ConsumerPhase::FindingCoordinator;
                    consumer.assignment.clear();
                    consumer.fetching.clear();
                }
                // Not at once: the lookup waits retry.backoff.ms, as
                // `AbstractCoordinator.ensureCoordinatorReady` does, or a
                // coordinator that is gone but still in the metadata would
                // be asked again at network speed.
                self.consumer_schedule_retry(id, RETRY_BACKOFF_MS);
            }
        }
    }

    /// The member did not poll in time: a dynamic member sends LeaveGroup
    /// (a static one stays until its session ends); either forgets its
    /// member id and generation and joins again at its next poll
    /// (`maybeLeaveGroup`, `resetStateAndGeneration`).
    fn consumer_poll_timeout(&mut self, id: u32) {
        let consumer = &mut self.consumers[id as usize];
        let interval = consumer.config.max_poll_interval_ms;
        if consumer.config.consumer_protocol() {
            // `ConsumerMembershipManager#transitionToStale`: it leaves with
            // epoch -1, its partitions are lost, and it joins again (same
            // member id) at its next poll.
            self.member_leave(id);
            let consumer = &mut self.consumers[id as usize];
            consumer.generation = 0;
            consumer.rejoin_on_poll = true;
            consumer.pending_commits.clear();
            consumer.assignment.clear();
            consumer.positions.clear();
            consumer.resetting.clear();
            consumer.fetching.clear();
            consumer.buffer.clear();
            consumer.phase = ConsumerPhase::Joining;
            self.record(TraceKind::ConsumerStatus {
                consumer: id,
                status: ConsumerChange::PollTimeout {
                    max_poll_interval_ms: interval,
                },
            });
            return;
        }
        let member_id = consumer.member_id.take();
        consumer.generation = 0;
        consumer.rejoin_on_poll = true;
        consumer.pending_commits.clear();
        self.consumer_leave_group(id, member_id);
        self.record(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::PollTimeout {
                max_poll_interval_ms: interval,
            },
        });
    }

    /// Asks the coordinator for the committed offsets of owned partitions
    /// that have no position yet (one OffsetFetch at a time).
    pub(crate) fn consumer_fetch_positions(&mut self, id: u32) {
        let consumer = &self.consumers[id as usize];
        let Some(coordinator) = consumer.coordinator else {
            return;
        };
        if consumer.phase != ConsumerPhase::Consuming || consumer.offset_fetch_in_flight {
            return;
        }
        // A reset whose `ListOffsets` answer was lost is asked again.
        let resets: Vec<(TopicPartition, OffsetSpec, Option<BrokerId>)> = consumer
            .resetting
            .iter()
            .filter(|(partition, _)| consumer.assignment.contains(*partition))
            .map(|(partition, (spec, _))| {
                (
                    partition.clone(),
                    *spec,
                    consumer.leaders.get(partition).copied().flatten(),
                )
            })
            .collect();
        for (partition, spec, leader) in resets {
            if let Some(leader) = leader {
                let isolation = self.consumers[id as usize].config.isolation_level;
                self.send(
                    Self::consumer_node(id),
                    NodeId::Broker(leader),
                    Message::ListOffsets {
                        partition,
                        spec,
                        isolation,
                    },
                );
            }
        }
        let consumer = &self.consumers[id as usize];
        let partitions: Vec<TopicPartition> = consumer
            .assignment
            .iter()
            .filter(|partition| {
                !consumer.positions.contains_key(*partition) && !consumer.resetting.contains_key(*partition)
            })
            .cloned()
            .collect();
        if partitions.is_empty() {
            return;
        }
        let group = consumer.config.group.clone();
        self.consumers[id as usize].offset_fetch_in_flight = true;
        self.send(
            Self::consumer_node(id),
            NodeId::Broker(coordinator),
            Message::OffsetFetch { group, partitions },
        );
    }

    /// Sends a fetch for every owned partition with a position and a known
    /// leader, one at a time per partition.
    pub(crate) fn consumer_fetch_all(&mut self, id: u32) {
        // A position that moved (a reset, a committed offset, a revoked
        // partition) while it awaited validation has no epoch to check.
        let consumer = &mut self.consumers[id as usize];
        let keep: Vec<bool> = consumer
            .validating
            .keys()
            .map(|partition| consumer.assignment.contains(partition) && consumer.position_epoch(partition).is_some())
            .collect();
        let mut keep = keep.into_iter();
        consumer.validating.retain(|_, _| keep.next().unwrap_or(false));
        let consumer = &self.consumers[id as usize];
        // During a cooperative rebalance a member still reads what it owns.
        let reading = matches!(
            consumer.phase,
            ConsumerPhase::Consuming | ConsumerPhase::Joining | ConsumerPhase::Syncing
        );
        if !reading {
            return;
        }
        let mut requests = Vec::new();
        let mut validations = Vec::new();
        for partition in &consumer.assignment {
            if let Some(in_flight) = consumer.validating.get(partition) {
                if let (None, Some(Some(leader)), Some((_, epoch)), Some(current)) = (
                    in_flight,
                    consumer.leaders.get(partition),
                    consumer.position_epoch(partition),
                    consumer.leader_epochs.get(partition),
                ) {
                    validations.push((partition.clone(), *leader, epoch, *current));
                }
                continue;
            }
            if consumer.fetching.get(partition) == Some(&true) || consumer.buffer.contains_key(partition) {
                continue;
            }
            let (Some(&position), Some(Some(leader))) =
                (consumer.positions.get(partition), consumer.leaders.get(partition))
            else {
                continue;
            };
            if consumer
                .throttled_until
                .get(leader)
                .is_some_and(|until| *until > self.now)
            {
                continue;
            }
            requests.push((partition.clone(), position, *leader));
        }
        // An owned partition without a known leader asks for metadata again
        // after retry.backoff.ms (the client's `Metadata` refresh when a
        // leader is unknown), until one is known.
        let consumer = &self.consumers[id as usize];
        let leaderless = consumer
            .assignment
            .iter()
            .any(|partition| !matches!(consumer.leaders.get(partition), Some(Some(_))));
        if leaderless && consumer.refresh_pending.is_none() && consumer.metadata_in_flight.is_none() {
            let broker = consumer.bootstrap_attempt % self.config.brokers + 1;
            self.consumers[id as usize].bootstrap_attempt += 1;
            self.consumer_schedule_refresh(id, broker);
        }
        for (partition, leader, leader_epoch, current_leader_epoch) in validations {
            self.consumers[id as usize]
                .validating
                .insert(partition.clone(), Some(leader));
            self.send(
                Self::consumer_node(id),
                NodeId::Broker(leader),
                Message::OffsetForLeaderEpoch {
                    partition,
                    leader_epoch,
                    current_leader_epoch,
                },
            );
        }
        for (partition, offset, leader) in requests {
            self.consumers[id as usize].fetching.insert(partition.clone(), true);
            self.consumers[id as usize]
                .fetch_brokers
                .insert(partition.clone(), leader);
            let current_leader_epoch = self.consumers[id as usize].leader_epochs.get(&partition).copied();
            self.send(
                Self::consumer_node(id),
                NodeId::Broker(leader),
                Message::ConsumerFetch {
                    partition,
                    offset,
                    isolation: self.consumers[id as usize].config.isolation_level,
                    current_leader_epoch,
                },
            );
        }
    }

    /// Asks `broker` for metadata once `retry.backoff.ms` has passed (the
    /// client's `Metadata` refresh backoff).
    fn consumer_schedule_refresh(&mut self, id: u32, broker: BrokerId) {
        let consumer = &mut self.consumers[id as usize];
        consumer.refresh_pending = Some(broker);
        let incarnation = consumer.incarnation;
        self.schedule_timer(
            Self::consumer_node(id),
            incarnation,
            RETRY_BACKOFF_MS,
            Timer::ConsumerMetadataRefresh,
        );
    }

    #[allow(clippy::too_many_arguments)]
    fn consumer_fetched(
        &mut self,
        id: u32,
        from: NodeId,
        partition: TopicPartition,
        answer: FetchAnswer,
        error: Option<ErrorCode>,
    ) {
        let FetchAnswer {
            records,
            high_watermark,
            last_stable_offset,
            aborted,
            fetch_offset,
            next_offset: batches_end,
        } = answer;
        let consumer = &mut self.consumers[id as usize];
        // Only the answer to the fetch in flight counts.
        if from != NodeId::Broker(consumer.fetch_brokers.get(&partition).copied().unwrap_or(0))
            || consumer.fetching.get(&partition) != Some(&true)
        {
            return;
        }
        consumer.fetching.insert(partition.clone(), false);
        if !consumer.assignment.contains(&partition) {
            return;
        }
        // A fetch answered after the position went into validation is
        // dropped: the partition is not fetchable until then (KIP-320).
        if consumer.validating.contains_key(&partition) {
            return;
        }
        if error == Some(ErrorCode::OffsetOutOfRange) {
            // The position is gone (retention deleted it) or past the end:
            // `auto.offset.reset` decides where to go (`SubscriptionState#
            // requestOffsetReset`, then a `ListOffsets`).
            let Some(position) = consumer.positions.remove(&partition) else {
                return;
            };
            consumer.buffer.remove(&partition);
            let reset = consumer.config.auto_offset_reset;
            self.record(TraceKind::OffsetOutOfRange {
                client: Self::consumer_node(id),
                partition: partition.clone(),
                position,
                reset,
            });
            let spec = match reset {
                OffsetReset::Earliest => OffsetSpec::Earliest,
                OffsetReset::Latest => OffsetSpec::Latest,
                OffsetReset::None => {
                    self.consumer_exception_stops(id);
                    return;
                }
            };
            self.consumer_reset_position(id, from, partition, spec, position);
            return;
        }
        if let Some(error) = error {
            // The client refreshes its metadata, but not sooner than
            // retry.backoff.ms after the failure (Kafka's `Metadata`
            // refresh backoff), so a dead leader costs one request per
            // backoff rather than a storm.
            if error == ErrorCode::NotLeaderOrFollower && consumer.refresh_pending.is_none() {
                consumer.leaders.clear();
                let broker = match from {
                    NodeId::Broker(broker) => broker % self.config.brokers + 1,
                    _ => 1,
                };
                self.consumer_schedule_refresh(id, broker);
            }
            // KIP-320: FENCED_LEADER_EPOCH, the consumer's metadata is
            // older than the broker's: it asks for metadata again, position
            // unchanged (`FetchCollector#handleInitializeErrors`).
            // UNKNOWN_LEADER_EPOCH, the broker is behind: Kafka fetches
            // again at the next poll; here after the same backoff.
            if matches!(error, ErrorCode::FencedLeaderEpoch | ErrorCode::UnknownLeaderEpoch)
                && self.consumers[id as usize].refresh_pending.is_none()
            {
                let broker = match from {
                    NodeId::Broker(broker) => broker,
                    _ => 1,
                };
                self.consumer_schedule_refresh(id, broker);
            }
            return;
        }
        // A read_committed consumer's end is the last stable offset
        // (`SubscriptionState#partitionLag`).
        let isolation = consumer.config.isolation_level;
        let bound = match isolation {
            IsolationLevel::ReadUncommitted => high_watermark,
            IsolationLevel::ReadCommitted => last_stable_offset,
        };
        consumer.high_watermarks.insert(partition.clone(), bound);
        let Some(&position) = consumer.positions.get(&partition) else {
            return;
        };
        let current = fetch_offset == position;
        if !current && records.first().is_some_and(|first| first.offset > position) {
            // Fetched from another position (before a rewind): stale
            // (`AbstractFetch`: "Discarding stale fetch response"). From
            // the position itself, records may start later: compaction
            // left a gap.
            self.consumer_fetch_all(id);
            return;
        }
        let last_epoch = records.last().map(|record| record.leader_epoch);
        let (fresh, next_offset) = returned_records(records, isolation, &aborted, position);
        // Past batches compaction emptied (`nextFetchOffset`).
        let next_offset = if current {
            next_offset.max(batches_end)
        } else {
            next_offset
        };
        if isolation == IsolationLevel::ReadCommitted {
            self.check_read_committed(id, from, &partition, &fresh);
        }
        let consumer = &mut self.consumers[id as usize];
        let above: Vec<Offset> = fresh
            .iter()
            .map(|record| record.offset)
            .filter(|&offset| offset >= bound)
            .collect();
        if !fresh.is_empty() {
            // The fetch buffer holds them until the application polls.
            consumer.buffer.insert(
                partition.clone(),
                Fetched {
                    records: fresh,
                    next_offset,
                    last_epoch,
                },
            );
        } else if next_offset > position {
            // Only markers or aborted records: nothing for the
            // application, and the position moves past them.
            consumer.positions.insert(partition.clone(), next_offset);
            if let Some(epoch) = last_epoch {
                consumer.position_epochs.insert(partition.clone(), (next_offset, epoch));
            }
        }
        if !above.is_empty() {
            self.monitor.violations += 1;
            let limit = match isolation {
                IsolationLevel::ReadUncommitted => "high watermark",
                IsolationLevel::ReadCommitted => "last stable offset",
            };
            self.record(TraceKind::InvariantViolated {
                invariant: Invariant::ConsumerReadsBelowHighWatermark,
                detail: format!("consumer-{id} read offsets {above:?} of {partition} at or above the {limit} {bound}"),
            });
        }
        self.consumer_poll(id);
        self.consumer_fetch_all(id);
    }

    /// The monitor: no record a `read_committed` consumer returns belongs
    /// to a transaction its leader's transaction index lists as aborted.
    fn check_read_committed(
        &mut self,
        id: u32,
        from: NodeId,
        partition: &TopicPartition,
        returned: &[super::types::Record],
    ) {
        let NodeId::Broker(broker) = from else { return };
        let Some(log) = self.brokers.get(&broker).and_then(|broker| broker.logs.get(partition)) else {
            return;
        };
        let aborted: Vec<Offset> = returned
            .iter()
            .filter_map(|record| {
                let batch = record.batch?;
                (batch.transactional
                    && log.txn_index.entries().iter().any(|txn| {
                        txn.producer_id == batch.producer_id
                            && (txn.first_offset..=txn.last_offset).contains(&record.offset)
                    }))
                .then_some(record.offset)
            })
            .collect();
        if !aborted.is_empty() {
            self.monitor.violations += 1;
            self.record(TraceKind::InvariantViolated {
                invariant: Invariant::ReadCommittedSkipsAborted,
                detail: format!("consumer-{id} (read_committed) returned offsets {aborted:?} of {partition}, which belong to aborted transactions"),
            });
        }
    }

    /// The application calls `poll()`: an auto-commit that came due goes
    /// out, a member that left on a poll timeout joins again, and up to
    /// `max.poll.records` buffered records are handed to the handler, which
    /// takes `processing_ms_per_record` each before the next poll. With
    /// nothing buffered the application waits in `poll()` for the next
    /// fetch to return records.
    fn consumer_poll(&mut self, id: u32) {
        let now = self.now;
        let consumer = &mut self.consumers[id as usize];
        if consumer.phase == ConsumerPhase::Stopped || consumer.processing_until.is_some() {
            return;
        }
        if consumer.paused_until.is_some_and(|until| until > now) {
            return;
        }
        if consumer.awaiting_commit && !consumer.pending_commits.is_empty() {
            // `commitSync()` has not returned yet.
            return;
        }
        consumer.awaiting_commit = false;
        consumer.last_poll_ms = now;
        if std::mem::take(&mut consumer.rejoin_on_poll) {
            if consumer.coordinator.is_some() {
                // `onJoinPrepare`: commit what was consumed, then join.
                self.consumer_commit(id);
                self.consumer_join(id);
            } else {
                consumer.phase = ConsumerPhase::FindingCoordinator;
                consumer.assignment.clear();
                consumer.fetching.clear();
                consumer.buffer.clear();
                self.consumer_schedule_retry(id, RETRY_BACKOFF_MS);
            }
        }
        self.consumer_metadata_changed(id);
        let consumer = &mut self.consumers[id as usize];
        if std::mem::take(&mut consumer.commit_due) {
            self.consumer_commit(id);
        }
        // Jepsen's checks read this poll unless a `read_uncommitted`
        // consumer may see what a transaction later aborts.
        let judged = self.jepsen.is_some()
            && (self.consumers[id as usize].config.isolation_level == IsolationLevel::ReadCommitted
                || self
                    .producers
                    .iter()
                    .all(|producer| producer.config.transactional_id.is_none()));
        let consumer = &mut self.consumers[id as usize];
        if consumer.awaiting_txn.is_some() {
            // `commitTransaction()` has not returned yet.
            return;
        }
        let mut budget = consumer.config.max_poll_records.max(1) as usize;
        let mut taken = Vec::new();
        let mut sources = Vec::new();
        let mut polled = Vec::new();
        let partitions: Vec<TopicPartition> = consumer.buffer.keys().cloned().collect();
        for partition in partitions {
            if budget == 0 {
                break;
            }
            if !consumer.assignment.contains(&partition) {
                consumer.buffer.remove(&partition);
                continue;
            }
            let Some(fetched) = consumer.buffer.get_mut(&partition) else {
                continue;
            };
            let count = budget.min(fetched.records.len());
            let batch: Vec<super::types::Record> = fetched.records.drain(..count).collect();
            let mut next_offset = batch.last().map_or(0, |last| last.offset + 1);
            let mut epoch = batch.last().map(|last| last.leader_epoch);
            if fetched.records.is_empty() {
                if fetched.next_offset > next_offset {
                    next_offset = fetched.next_offset;
                    epoch = fetched.last_epoch.or(epoch);
                }
                consumer.buffer.remove(&partition);
            }
            if let Some(epoch) = epoch {
                consumer.position_epochs.insert(partition.clone(), (next_offset, epoch));
            }
            budget -= count;
            sources.extend(batch.iter().map(|record| record.id));
            if judged {
                polled.extend(batch.iter().map(|record| (partition.clone(), record.offset, record.id)));
            }
            consumer
                .in_process
                .extend(batch.iter().map(|record| super::ledger::InProcess {
                    partition: partition.clone(),
                    offset: record.offset,
                    record: record.id,
                }));
            if let (Some(first), Some(last)) = (batch.first(), batch.last()) {
                let (from, to) = (first.offset, last.offset + 1);
                consumer.positions.insert(partition.clone(), next_offset);
                consumer.records_read += batch.len() as u64;
                let high_watermark = consumer.high_watermarks.get(&partition).copied().unwrap_or(to);
                taken.push((partition, from, to, high_watermark, batch.len() as u64));
            }
        }
        let per_record = consumer.config.processing_ms_per_record;
        let count: u64 = taken.iter().map(|(.., count)| *count).sum();
        let incarnation = consumer.incarnation;
        consumer.processing_started_ms = now;
        if count > 0 && consumer.config.commit_mode == CommitMode::BeforeProcessing {
            // `commitSync()` before the handler runs: at most once.
            self.consumer_send_commit(id);
        }
        self.consumer_send_outputs(id, &sources);
        let next_id = self.next_trace_id();
        if let Some(recorder) = self.jepsen.as_deref_mut() {
            recorder.poll(id, polled, next_id, now);
        }
        let poisoned: Vec<usize> = self.consumers[id as usize]
            .in_process
            .iter()
            .enumerate()
            .filter(|(_, record)| self.is_poison(record))
            .map(|(index, _)| index)
            .collect();
        let consumer = &mut self.consumers[id as usize];
        let policy = &consumer.config.on_failure;
        // Each failed attempt takes the handler's time for a record, and
        // each retry waits its backoff first.
        let retrying = u64::from(policy.retries).saturating_mul(per_record.saturating_add(policy.backoff_ms));
        let busy = match (poisoned.first(), policy.then) {
            (None, _) => count.saturating_mul(per_record),
            (Some(_), AfterFailures::DeadLetter) => count
                .saturating_mul(per_record)
                .saturating_add((poisoned.len() as u64).saturating_mul(retrying)),
            (Some(&first), AfterFailures::Stop) => {
                (first as u64 + 1).saturating_mul(per_record).saturating_add(retrying)
            }
        };
        // A failing record always takes a moment: the handler's time.
        let busy = if poisoned.is_empty() { busy } else { busy.max(1) };
        consumer.poisoned = poisoned;
        if count > 0 && busy > 0 {
            consumer.processing_until = Some(now + busy);
            // The heartbeat thread wakes at least every retry.backoff.ms
            // and leaves the group as soon as the poll timer has expired
            // (`AbstractCoordinator.HeartbeatThread#run`,
            // `Heartbeat#pollTimeoutExpired`), not only at its next
            // heartbeat; here it notices at the moment of expiry.
            let deadline = consumer
                .last_poll_ms
                .saturating_add(consumer.config.max_poll_interval_ms);
            if now + busy > deadline {
                self.schedule_timer(
                    Self::consumer_node(id),
                    incarnation,
                    deadline.saturating_sub(now),
                    Timer::ConsumerPollTimer,
                );
            }
            self.schedule_timer(Self::consumer_node(id), incarnation, busy, Timer::ConsumerProcessed);
        } else {
            let done = std::mem::take(&mut consumer.in_process);
            if consumer.config.commit_mode == CommitMode::Transactional {
                if count > 0 {
                    self.consumer_commit_transaction(id, done);
                }
            } else {
                self.consumer_processed(id, &done);
                if count > 0 {
                    self.consumer_commit_after_processing(id);
                }
            }
        }
        for (partition, from, to, high_watermark, _) in taken {
            self.record(TraceKind::Consumed {
                consumer: id,
                partition,
                from,
                to,
                high_watermark,
            });
        }
        // Handled at once: the application polls again straight away.
        if count > 0
            && per_record == 0
            && !self.consumers[id as usize].buffer.is_empty()
            && self.consumers[id as usize].awaiting_txn.is_none()
        {
            self.consumer_poll(id);
        }
    }

    /// `commitSync()` returned (or failed): the application polls again.
    fn consumer_sync_commit_settled(&mut self, id: u32) {
        let consumer = &mut self.consumers[id as usize];
        if consumer.awaiting_commit && consumer.pending_commits.is_empty() {
            consumer.awaiting_commit = false;
            self.consumer_poll(id);
            self.consumer_fetch_all(id);
        }
    }

    /// The process crashed mid-batch: the records its handler finished are
    /// processed, the rest are not; those whose offsets were already
    /// committed (or on their way) will not be read by the group again.
    fn consumer_interrupted(&mut self, id: u32) {
        let now = self.now;
        let consumer = &mut self.consumers[id as usize];
        let batch = std::mem::take(&mut consumer.in_process);
        if batch.is_empty() {
            return;
        }
        let per_record = consumer.config.processing_ms_per_record.max(1);
        let done = (now.saturating_sub(consumer.processing_started_ms) / per_record).min(batch.len() as u64) as usize;
        let mut committed: BTreeMap<TopicPartition, Offset> = consumer.committed.clone();
        for offsets in &consumer.pending_commits {
            for (partition, offset) in offsets {
                let best = committed.entry(partition.clone()).or_insert(*offset);
                *best = (*best).max(*offset);
            }
        }
        let group = consumer.config.group.clone();
        let mut skipped: BTreeMap<TopicPartition, (Offset, Offset)> = BTreeMap::new();
        for record in &batch[done..] {
            if committed
                .get(&record.partition)
                .is_some_and(|offset| *offset > record.offset)
            {
                let range = skipped
                    .entry(record.partition.clone())
                    .or_insert((record.offset, record.offset));
                range.0 = range.0.min(record.offset);
                range.1 = range.1.max(record.offset);
            }
        }
        let uncommitted_done = batch[..done]
            .iter()
            .filter(|record| {
                committed
                    .get(&record.partition)
                    .is_none_or(|offset| *offset <= record.offset)
            })
            .count() as u64;
        let in_transaction = self.consumers[id as usize].config.commit_mode == CommitMode::Transactional;
        let uncommitted_done = if in_transaction { 0 } else { uncommitted_done };
        if !in_transaction {
            self.consumer_processed(id, &batch[..done]);
        }
        self.record(TraceKind::ProcessingInterrupted {
            in_transaction,
            group,
            consumer: id,
            processed: done as u64,
            unprocessed: (batch.len() - done) as u64,
            uncommitted_processed: uncommitted_done,
            committed_unprocessed: skipped
                .into_iter()
                .map(|(partition, (from, to))| (partition, from, to))
                .collect(),
        });
    }

    /// Sends LeaveGroup for a dynamic member. Only dynamic members leave:
    /// a static member (`group.instance.id`) stays in the group until its
    /// session times out, so a quick restart gets its partitions back with
    /// no rebalance (KIP-345, `AbstractCoordinator#maybeLeaveGroup`).
    fn consumer_leave_group(&mut self, id: u32, member_id: Option<String>) {
        if self.consumers[id as usize].config.consumer_protocol() {
            self.member_leave(id);
            return;
        }
        let consumer = &self.consumers[id as usize];
        let dynamic = consumer.config.group_instance_id.is_none();
        if let (true, Some(coordinator), Some(member_id)) = (dynamic, consumer.coordinator, member_id) {
            let group = consumer.config.group.clone();
            self.send(
                Self::consumer_node(id),
                NodeId::Broker(coordinator),
                Message::LeaveGroup {
                    group,
                    member_id,
                    instance: None,
                },
            );
        }
    }

    /// Breaks the consumer's connections to every broker.
    fn consumer_drop_connections(&mut self, id: u32) {
        for broker in 1..=self.config.brokers {
            self.connection_reset(Self::consumer_node(id), NodeId::Broker(broker));
        }
    }

    /// The consumer's process stops for `duration_ms` (a GC pause).
    pub(crate) fn consumer_pause(&mut self, id: u32, duration_ms: u64) {
        let now = self.now;
        let Some(consumer) = self.consumers.get_mut(id as usize) else {
            return;
        };
        if consumer.phase == ConsumerPhase::Stopped || duration_ms == 0 {
            return;
        }
        let until = now.saturating_add(duration_ms);
        consumer.paused_until = Some(consumer.paused_until.map_or(until, |current| current.max(until)));
        let incarnation = consumer.incarnation;
        self.record(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::Paused { duration_ms },
        });
        self.schedule_timer(
            Self::consumer_node(id),
            incarnation,
            duration_ms,
            Timer::ConsumerPauseEnd,
        );
    }

    /// Until when a consumer's process is paused, if it is now.
    pub(crate) fn consumer_paused_until(&self, id: u32) -> Option<u64> {
        self.consumers
            .get(id as usize)
            .and_then(|consumer| consumer.paused_until)
            .filter(|until| *until > self.now)
    }
}

/// A consumer fetch's answer, as `consumer_fetched` takes it.
#[derive(Debug, Default)]
struct FetchAnswer {
    records: Vec<super::types::Record>,
    high_watermark: Offset,
    last_stable_offset: Offset,
    aborted: Vec<(u64, Offset)>,
    fetch_offset: Offset,
    next_offset: Offset,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::transactions::ControlType;
    use crate::sim::types::{BatchSequence, Record, TxnMarker};

    fn record(offset: Offset, producer: u64, transactional: bool, marker: Option<ControlType>) -> Record {
        Record {
            offset,
            leader_epoch: 0,
            id: offset,
            bytes: 1,
            batch: Some(BatchSequence {
                producer_id: producer,
                epoch: 0,
                first_sequence: if marker.is_some() { -1 } else { 0 },
                last_sequence: if marker.is_some() { -1 } else { 1 },
                transactional,
                marker: marker.map(|control| TxnMarker {
                    control,
                    coordinator_epoch: 0,
                }),
            }),
            timestamp: 0,
            key: None,
            tombstone: false,
            headers_size: 1,
        }
    }

    #[test]
    fn read_committed_drops_aborted_records_and_markers_and_moves_past_them() {
        // Producer 7's transaction (0..=1) aborted at 3; producer 8's
        // record 2 is not transactional.
        let records = vec![
            record(0, 7, true, None),
            record(1, 7, true, None),
            record(2, 8, false, None),
            record(3, 7, true, Some(ControlType::Abort)),
        ];
        let (committed, next) = returned_records(records.clone(), IsolationLevel::ReadCommitted, &[(7, 0)], 0);
        assert_eq!(committed.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![2]);
        assert_eq!(next, 4);
        let (uncommitted, next) = returned_records(records.clone(), IsolationLevel::ReadUncommitted, &[], 0);
        assert_eq!(uncommitted.iter().map(|r| r.offset).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(next, 4);
        // Only the marker left: nothing returned, the position moves on.
        let (none, next) = returned_records(records[3..].to_vec(), IsolationLevel::ReadCommitted, &[], 3);
        assert!(none.is_empty());
        assert_eq!(next, 4);
    }
}
