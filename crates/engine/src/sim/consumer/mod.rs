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
use super::contexts::ConsumerContext;
use super::trace::{ConsumerChange, Invariant, TraceKind};
use super::types::{ErrorCode, JoinResult, Message, NodeId, OffsetSpec, Time};
use super::Timer;

mod answers;
mod fetch;
mod member;
mod outputs;

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

    /// What holds consumer `id`'s place while one of its handlers runs.
    pub(crate) fn stand_in(id: u32) -> Consumer {
        Consumer::new(id, ConsumerConfig::new(String::new(), Vec::new()))
    }

    /// Whether it runs and its application writes with `producer`.
    pub(crate) fn writes_with(&self, producer: u32) -> bool {
        self.config.output_producer == Some(producer) && self.phase != ConsumerPhase::Stopped
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

impl Consumer {
    pub(crate) fn start(&mut self, context: &mut ConsumerContext<'_>) {
        let id = self.id;
        if self.phase != ConsumerPhase::Stopped {
            return;
        }
        self.incarnation += 1;
        self.retry_at = None;
        self.refresh_pending = None;
        self.metadata_in_flight = None;
        self.outstanding.clear();
        self.timeout_armed.clear();
        self.phase = ConsumerPhase::FindingCoordinator;
        context.set_running(true);
        self.member_id = None;
        self.generation = 0;
        self.assignment.clear();
        self.positions.clear();
        self.resetting.clear();
        self.fetching.clear();
        self.coordinator = None;
        self.pending_commits.clear();
        self.buffer.clear();
        self.processing_until = None;
        self.paused_until = None;
        self.last_poll_ms = context.now();
        self.commit_due = false;
        self.rejoin_on_poll = false;
        self.heartbeat_in_flight = false;
        self.heartbeat_interval_ms = context.config().group_consumer_heartbeat_interval_ms;
        self.heartbeat_due_at = None;
        self.ack_after_commit = false;
        self.in_process.clear();
        self.awaiting_commit = false;
        self.awaiting_txn = None;
        self.in_transaction.clear();
        self.poisoned.clear();
        let incarnation = self.incarnation;
        // The app's producer starts with it (a new instance: it fences
        // the one that died, KIP-98). One that a fatal error stopped (the
        // app closed it and stopped) is replaced by a new instance too.
        if let Some(producer) = self.config.output_producer {
            if context.producer_fenced(producer) {
                context.producer_crash(producer);
            }
            context.producer_revive(producer);
        }
        let group = self.config.group.clone();
        context.trace(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::Started {
                group: group.to_string(),
            },
        });
        self.bootstrap(context);
        let heartbeat = self.config.heartbeat_interval_ms;
        let commit = self.config.auto_commit_interval_ms;
        context.timer(incarnation, heartbeat, Timer::ConsumerHeartbeat);
        context.timer(incarnation, commit, Timer::ConsumerCommit);
        let max_age = self.config.metadata_max_age_ms;
        self.metadata_at = context.now();
        context.timer(incarnation, max_age, Timer::ConsumerMetadataMaxAge);
    }

    /// Asks a bootstrap broker for metadata and the coordinator.
    /// Schedules the coordinator lookup's next try, unless one is already
    /// due as soon: a client has one retry pending, never a growing number.
    fn schedule_retry(&mut self, context: &mut ConsumerContext<'_>, delay: u64) {
        let at = context.now() + delay;
        if self.retry_at.is_some_and(|pending| pending <= at) {
            return;
        }
        self.retry_at = Some(at);
        let incarnation = self.incarnation;
        context.timer(incarnation, delay, Timer::ConsumerRetry);
    }

    fn bootstrap(&mut self, context: &mut ConsumerContext<'_>) {
        let broker = self.bootstrap_attempt % context.config().brokers + 1;
        self.bootstrap_attempt += 1;
        self.metadata_in_flight = Some(broker);
        let group = self.config.group.clone();
        self.send(context, broker, Message::MetadataRequest);
        self.send(context, broker, Message::FindCoordinator { group });
        self.schedule_retry(context, 1_000);
    }

    pub(crate) fn stop(&mut self, context: &mut ConsumerContext<'_>, clean: bool) {
        let id = self.id;
        if self.phase == ConsumerPhase::Stopped {
            return;
        }
        if clean {
            // A clean shutdown lets the handler finish its batch, then
            // commits (auto-commit on close, or the application's own).
            let done = std::mem::take(&mut self.in_process);
            // Under exactly-once, work counts only with its transaction.
            if self.config.commit_mode != CommitMode::Transactional {
                self.processed(context, &done);
            }
            self.commit(context);
            self.commit_after_processing(context);
            let member_id = self.member_id.clone();
            self.leave_group(context, member_id);
        } else {
            self.interrupted(context);
        }
        self.phase = ConsumerPhase::Stopped;
        context.set_running(false);
        self.incarnation += 1;
        self.assignment.clear();
        self.throttled_until.clear();
        let status = if clean {
            ConsumerChange::Closed
        } else {
            ConsumerChange::Crashed
        };
        context.trace(TraceKind::ConsumerStatus { consumer: id, status });
        if !clean {
            // The process died with its sockets: nothing still in flight on
            // them reaches a process started later.
            self.drop_connections(context);
            // Its producer dies with it: an open transaction stays open on
            // the coordinator until a new instance fences it or
            // `transaction.timeout.ms` passes.
            if let Some(producer) = self.config.output_producer {
                context.producer_crash(producer);
            }
        }
        self.awaiting_txn = None;
        self.in_transaction.clear();
        self.poisoned.clear();
    }

    /// `poll()` threw (`auto.offset.reset=none` and no position to start
    /// from). The simulated application does not catch it: its poll loop
    /// ends and it closes the consumer, which leaves the group (its
    /// partitions move to the others, who hit the same wall).
    fn exception_stops(&mut self, context: &mut ConsumerContext<'_>) {
        self.stop(context, true);
    }

    /// The leader rejoins when the metadata its assignment used changed
    /// (`ConsumerCoordinator#rejoinNeededOrPending`: "cached metadata has
    /// changed"), checked when it polls (after a metadata answer, after its
    /// handler is done, on its heartbeat timer when idle); while its
    /// handler works or its coordinator is unknown the need stays.
    fn metadata_changed(&mut self, context: &mut ConsumerContext<'_>) -> bool {
        // The check belongs to poll(): not while the handler works on the
        // last poll's records or the process is paused.
        if self.phase != ConsumerPhase::Consuming
            || self.processing_until.is_some()
            || self.paused_until.is_some_and(|until| until > context.now())
            || self.coordinator.is_none()
            || self.config.consumer_protocol()
            || self
                .assignment_snapshot
                .as_ref()
                .is_none_or(|snapshot| *snapshot == self.partition_counts)
        {
            return false;
        }
        self.assignment_snapshot = None;
        self.commit(context);
        self.join(context);
        true
    }

    fn join(&mut self, context: &mut ConsumerContext<'_>) {
        if self.config.consumer_protocol() {
            self.member_join(context);
            return;
        }
        let Some(coordinator) = self.coordinator else {
            return;
        };
        self.phase = ConsumerPhase::Joining;
        let owned = if self.cooperative() {
            // Cooperative protocol (KIP-429): keep reading what it owns
            // through the rebalance, and tell the leader what that is.
            self.assignment.clone()
        } else {
            // Eager protocol: give up everything before joining.
            self.fetching.clear();
            self.buffer.clear();
            std::mem::take(&mut self.assignment)
        };
        let message = Message::JoinGroup {
            group: self.config.group.clone(),
            member_id: self.member_id.clone(),
            instance: self.config.group_instance_id.clone(),
            session_timeout_ms: self.config.session_timeout_ms,
            rebalance_timeout_ms: self.config.max_poll_interval_ms,
            topics: self.config.topics.clone(),
            owned,
            assignor: self.config.assignor.clone(),
        };
        self.send(context, coordinator, message);
    }

    /// An automatic commit (`enable.auto.commit`): every interval, before a
    /// rebalance, on close. Nothing when the application commits itself.
    pub(crate) fn commit(&mut self, context: &mut ConsumerContext<'_>) {
        if self.config.commit_mode == CommitMode::Auto {
            self.send_commit(context);
        }
    }

    /// Commits every consumed position; returns whether a commit went out.
    fn send_commit(&mut self, context: &mut ConsumerContext<'_>) -> bool {
        let (Some(coordinator), Some(member_id)) = (self.coordinator, self.member_id.clone()) else {
            return false;
        };
        if self.phase != ConsumerPhase::Consuming {
            return false;
        }
        // Auto-commit sends every consumed position each interval (`maybeAutoCommitOffsetsAsync`).
        let offsets: Vec<(TopicPartition, Offset)> = self
            .positions
            .iter()
            .map(|(partition, position)| (partition.clone(), *position))
            .collect();
        if offsets.is_empty() {
            return false;
        }
        let message = Message::OffsetCommit {
            group: self.config.group.clone(),
            generation: self.generation,
            member_id,
            instance: self.config.group_instance_id.clone(),
            offsets: offsets.clone(),
        };
        self.pending_commits.push_back(offsets);
        self.send(context, coordinator, message);
        true
    }

    /// The handler finished these records: the ledger notes them, and the
    /// duplicates among them are traced with why.
    fn processed(&mut self, context: &mut ConsumerContext<'_>, records: &[super::ledger::InProcess]) {
        let id = self.id;
        if records.is_empty() {
            return;
        }
        let group = self.config.group.clone();
        let (incarnation, idempotent) = (self.incarnation, self.config.idempotent_handler);
        let found = context.processed(&group, incarnation, idempotent, records);
        for ((partition, reason), (from, to, count, skipped)) in found {
            context.trace(TraceKind::ProcessedAgain {
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
    fn commit_after_processing(&mut self, context: &mut ConsumerContext<'_>) {
        let mode = self.config.commit_mode;
        if matches!(mode, CommitMode::AfterProcessing | CommitMode::AfterProcessingAsync) {
            let sent = self.send_commit(context);
            self.awaiting_commit = sent && mode == CommitMode::AfterProcessing;
        }
    }

    pub(crate) fn timer(&mut self, context: &mut ConsumerContext<'_>, incarnation: u32, timer: Timer) {
        let id = self.id;
        if self.incarnation != incarnation || self.phase == ConsumerPhase::Stopped {
            return;
        }
        match timer {
            Timer::ConsumerHeartbeat => self.heartbeat_due(context, incarnation),
            Timer::ConsumerCommit => {
                let interval = self.config.auto_commit_interval_ms;
                // Auto-commit runs inside poll(): while the handler works it
                // waits for the next poll.
                if self.processing_until.is_some() {
                    self.commit_due = true;
                } else {
                    self.commit(context);
                }
                context.timer(incarnation, interval, Timer::ConsumerCommit);
            }
            Timer::ConsumerPollTimer => {
                if self.processing_until.is_some()
                    && self.member_id.is_some()
                    && !self.rejoin_on_poll
                    && context.now().saturating_sub(self.last_poll_ms) >= self.config.max_poll_interval_ms
                {
                    self.poll_timeout(context);
                }
            }
            Timer::ConsumerProcessed => self.processing_done(context),
            Timer::ConsumerPauseEnd => {
                if self.paused_until.is_some_and(|until| until <= context.now()) {
                    self.paused_until = None;
                    context.trace(TraceKind::ConsumerStatus {
                        consumer: id,
                        status: ConsumerChange::Resumed,
                    });
                    self.poll(context);
                    self.fetch_all(context);
                }
            }
            // Only the one pending retry counts (later ones replace none);
            // a pause may have held it past its time.
            Timer::ConsumerRetry if self.retry_at.is_some_and(|at| at <= context.now()) => {
                self.retry_at = None;
                if self.coordinator.is_none() {
                    self.bootstrap(context);
                }
            }
            Timer::ConsumerRequestTimeout(broker) => self.request_timed_out(context, incarnation, broker),
            Timer::ConsumerGroupHeartbeat => self.member_heartbeat_due(context),
            Timer::ConsumerUnthrottled => {
                let now = context.now();
                self.throttled_until.retain(|_, until| *until > now);
                self.fetch_all(context);
            }
            // `metadata.max.age.ms` (`Metadata#timeToNextUpdate`): metadata
            // older than that is refreshed even when nothing failed; this is
            // how a group leader finds partitions added to a subscribed
            // topic, and rejoins so they get owners.
            Timer::ConsumerMetadataMaxAge => self.metadata_aged(context, incarnation),
            Timer::ConsumerMetadataRefresh => {
                if let Some(broker) = self.refresh_pending.take() {
                    self.metadata_in_flight = Some(broker);
                    self.send(context, broker, Message::MetadataRequest);
                }
            }
            _ => {}
        }
    }

    /// The heartbeat timer of a classic member: the poll-interval check,
    /// a `Heartbeat` to the coordinator once joined, and positions asked
    /// for again (`AbstractCoordinator.HeartbeatThread`).
    fn heartbeat_due(&mut self, context: &mut ConsumerContext<'_>, incarnation: u32) {
        // (The simulation's consumer polls on its heartbeat timer
        // too when it has nothing to process.)
        if self.metadata_changed(context) {
            let heartbeat = self.config.heartbeat_interval_ms;
            context.timer(incarnation, heartbeat, Timer::ConsumerHeartbeat);
            return;
        }
        let heartbeat = self.config.heartbeat_interval_ms;
        // The heartbeat thread notices a handler that has not
        // polled within max.poll.interval.ms: the member leaves
        // (`AbstractCoordinator.HeartbeatThread`, "consumer poll
        // timeout has expired").
        let interval = self.config.max_poll_interval_ms;
        if self.processing_until.is_some()
            && self.member_id.is_some()
            && !self.rejoin_on_poll
            && context.now().saturating_sub(self.last_poll_ms) > interval
        {
            self.poll_timeout(context);
        }
        // Heartbeats belong to a joined member: none while it looks for
        // the coordinator or waits for its JoinGroup answer.
        // A consumer-protocol member heartbeats on its own timer.
        let joined =
            matches!(self.phase, ConsumerPhase::Syncing | ConsumerPhase::Consuming) && !self.config.consumer_protocol();
        if let (true, Some(coordinator), Some(member_id)) = (joined, self.coordinator, self.member_id.clone()) {
            let message = Message::Heartbeat {
                group: self.config.group.clone(),
                generation: self.generation,
                member_id,
                instance: self.config.group_instance_id.clone(),
            };
            self.send(context, coordinator, message);
        }
        // `updateFetchPositions` runs at every poll: partitions still
        // without a position (their OffsetFetch or ListOffsets was
        // lost) are asked for again.
        self.fetch_positions(context);
        context.timer(incarnation, heartbeat, Timer::ConsumerHeartbeat);
    }

    /// The application finished the records of its last poll: poison
    /// records handled, offsets committed (or the transaction), and the
    /// next poll.
    fn processing_done(&mut self, context: &mut ConsumerContext<'_>) {
        self.processing_until = None;
        let done = std::mem::take(&mut self.in_process);
        let Some(done) = self.handle_poison(context, done) else {
            return;
        };
        if self.config.commit_mode == CommitMode::Transactional {
            self.commit_transaction(context, done);
        } else {
            self.processed(context, &done);
            self.commit_after_processing(context);
        }
        self.poll(context);
        self.fetch_all(context);
    }

    /// The oldest request to `broker` has had no answer within its
    /// timeout: its connection is closed (`NetworkClient#handleTimedOutRequests`),
    /// else the check is armed again for when it is due.
    fn request_timed_out(&mut self, context: &mut ConsumerContext<'_>, incarnation: u32, broker: BrokerId) {
        let id = self.id;
        let now = context.now();
        self.timeout_armed.remove(&broker);
        let Some(&(_, deadline)) = self.outstanding.get(&broker).and_then(|queue| queue.front()) else {
            return;
        };
        if deadline > now {
            // The oldest request still has time: check again then.
            self.timeout_armed.insert(broker);
            context.timer(incarnation, deadline - now, Timer::ConsumerRequestTimeout(broker));
        } else {
            // `NetworkClient#handleTimedOutRequests`: a request with no
            // answer within its timeout closes its connection, which
            // fails everything in flight on it.
            context.trace(TraceKind::ConsumerStatus {
                consumer: id,
                status: ConsumerChange::TimedOut { broker },
            });
            context.connection_reset(broker);
        }
    }

    /// `metadata.max.age.ms` has passed since the last metadata: it is
    /// asked for again, and the check armed for the next time.
    fn metadata_aged(&mut self, context: &mut ConsumerContext<'_>, incarnation: u32) {
        let max_age = self.config.metadata_max_age_ms;
        let due = self.metadata_at + max_age;
        if due <= context.now() && self.metadata_in_flight.is_none() && self.refresh_pending.is_none() {
            let broker = self.bootstrap_attempt % context.config().brokers + 1;
            self.bootstrap_attempt += 1;
            self.metadata_in_flight = Some(broker);
            self.send(context, broker, Message::MetadataRequest);
        }
        let next = if due <= context.now() {
            max_age
        } else {
            due - context.now()
        };
        context.timer(incarnation, next, Timer::ConsumerMetadataMaxAge);
    }

    /// Sends `message` to `broker`, noting the request's timeout first.
    fn send(&mut self, context: &mut ConsumerContext<'_>, broker: BrokerId, message: Message) {
        self.note_request(context, broker, &message);
        context.send(broker, message);
    }

    /// Notes a request the consumer sends to a broker, with its timeout:
    /// `request.timeout.ms` (30000), or for a JoinGroup the rebalance
    /// timeout plus five seconds, as `ConsumerCoordinator` sets it.
    fn note_request(&mut self, context: &mut ConsumerContext<'_>, broker: BrokerId, message: &Message) {
        let timeout = match message {
            Message::JoinGroup {
                rebalance_timeout_ms, ..
            } => rebalance_timeout_ms + 5_000,
            Message::LeaveGroup { .. } => return,
            Message::ConsumerGroupHeartbeat { member_epoch: -1, .. } => return,
            _ => CONSUMER_REQUEST_TIMEOUT_MS,
        };
        let now = context.now();
        self.next_request += 1;
        let request = self.next_request;
        self.outstanding
            .entry(broker)
            .or_default()
            .push_back((request, now + timeout));
        // One timer per connection at a time, for its oldest request.
        if self.timeout_armed.insert(broker) {
            let incarnation = self.incarnation;
            context.timer(incarnation, timeout, Timer::ConsumerRequestTimeout(broker));
        }
    }

    pub(crate) fn receive(&mut self, context: &mut ConsumerContext<'_>, from: NodeId, message: Message) {
        if self.phase == ConsumerPhase::Stopped {
            return;
        }
        // An answer from a broker settles the oldest request on that
        // connection; a disconnect settles them all.
        if let NodeId::Broker(broker) = from {
            if message == Message::ConnectionClosed {
                self.outstanding.remove(&broker);
            } else if let Some(queue) = self.outstanding.get_mut(&broker) {
                queue.pop_front();
            }
        }
        match message {
            Message::MetadataResponse { leaders } => self.metadata_answer(context, leaders),
            Message::FindCoordinatorResponse { coordinator, .. } => self.coordinator_found(context, coordinator),
            Message::JoinGroupResponse { result, member_id, .. } => self.join_answer(context, member_id, result),
            Message::SyncGroupResponse { result, .. } => self.sync_answer(context, result),
            Message::HeartbeatResponse { error: Some(error), .. } => self.group_error(context, error),
            Message::ConsumerGroupHeartbeatResponse { result, .. } => self.member_answer(context, result),
            Message::OffsetFetchResponse {
                result: Ok(offsets), ..
            } => self.committed_offsets(context, offsets),
            Message::OffsetFetchResponse {
                result: Err(ErrorCode::UnstableOffsetCommit),
                ..
            } => {
                // KIP-447: a transaction's offsets for these partitions are
                // not decided yet; asked again (here at the next heartbeat
                // tick rather than after `retry.backoff.ms`).
                self.offset_fetch_in_flight = false;
            }
            Message::OffsetFetchResponse { result: Err(error), .. } => self.group_error(context, error),
            Message::ListOffsetsResponse {
                partition,
                result: Ok(offset),
            } => self.list_offsets_answer(context, partition, offset),
            Message::OffsetCommitResponse { result: Ok(()), .. } => {
                if let Some(offsets) = self.pending_commits.pop_front() {
                    self.committed.extend(offsets);
                }
                self.member_commit_settled(context);
                self.sync_commit_settled(context);
            }
            Message::OffsetCommitResponse { result: Err(error), .. } => self.commit_failed(context, error),
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
                    self.throttled(context, from, throttle_time_ms);
                }
                self.fetched(
                    context,
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
                self.validation_answer(context, from, partition, result)
            }
            Message::ConnectionClosed => self.connection_closed(context, from),
            _ => {}
        }
    }

    /// The member did not poll in time: a dynamic member sends LeaveGroup
    /// (a static one stays until its session ends); either forgets its
    /// member id and generation and joins again at its next poll
    /// (`maybeLeaveGroup`, `resetStateAndGeneration`).
    fn poll_timeout(&mut self, context: &mut ConsumerContext<'_>) {
        let id = self.id;
        let interval = self.config.max_poll_interval_ms;
        if self.config.consumer_protocol() {
            // `ConsumerMembershipManager#transitionToStale`: it leaves with
            // epoch -1, its partitions are lost, and it joins again (same
            // member id) at its next poll.
            self.member_leave(context);
            self.generation = 0;
            self.rejoin_on_poll = true;
            self.pending_commits.clear();
            self.assignment.clear();
            self.positions.clear();
            self.resetting.clear();
            self.fetching.clear();
            self.buffer.clear();
            self.phase = ConsumerPhase::Joining;
            context.trace(TraceKind::ConsumerStatus {
                consumer: id,
                status: ConsumerChange::PollTimeout {
                    max_poll_interval_ms: interval,
                },
            });
            return;
        }
        let member_id = self.member_id.take();
        self.generation = 0;
        self.rejoin_on_poll = true;
        self.pending_commits.clear();
        self.leave_group(context, member_id);
        context.trace(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::PollTimeout {
                max_poll_interval_ms: interval,
            },
        });
    }

    /// `commitSync()` returned (or failed): the application polls again.
    fn sync_commit_settled(&mut self, context: &mut ConsumerContext<'_>) {
        if self.awaiting_commit && self.pending_commits.is_empty() {
            self.awaiting_commit = false;
            self.poll(context);
            self.fetch_all(context);
        }
    }

    /// The process crashed mid-batch: the records its handler finished are
    /// processed, the rest are not; those whose offsets were already
    /// committed (or on their way) will not be read by the group again.
    fn interrupted(&mut self, context: &mut ConsumerContext<'_>) {
        let id = self.id;
        let now = context.now();
        let batch = std::mem::take(&mut self.in_process);
        if batch.is_empty() {
            return;
        }
        let per_record = self.config.processing_ms_per_record.max(1);
        let done = (now.saturating_sub(self.processing_started_ms) / per_record).min(batch.len() as u64) as usize;
        let mut committed: BTreeMap<TopicPartition, Offset> = self.committed.clone();
        for offsets in &self.pending_commits {
            for (partition, offset) in offsets {
                let best = committed.entry(partition.clone()).or_insert(*offset);
                *best = (*best).max(*offset);
            }
        }
        let group = self.config.group.clone();
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
        let in_transaction = self.config.commit_mode == CommitMode::Transactional;
        let uncommitted_done = if in_transaction { 0 } else { uncommitted_done };
        if !in_transaction {
            self.processed(context, &batch[..done]);
        }
        context.trace(TraceKind::ProcessingInterrupted {
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
    fn leave_group(&mut self, context: &mut ConsumerContext<'_>, member_id: Option<String>) {
        if self.config.consumer_protocol() {
            self.member_leave(context);
            return;
        }
        let dynamic = self.config.group_instance_id.is_none();
        if let (true, Some(coordinator), Some(member_id)) = (dynamic, self.coordinator, member_id) {
            let group = self.config.group.clone();
            self.send(
                context,
                coordinator,
                Message::LeaveGroup {
                    group,
                    member_id,
                    instance: None,
                },
            );
        }
    }

    /// Breaks the consumer's connections to every broker.
    fn drop_connections(&mut self, context: &mut ConsumerContext<'_>) {
        for broker in 1..=context.config().brokers {
            context.connection_reset(broker);
        }
    }

    /// The consumer's process stops for `duration_ms` (a GC pause).
    pub(crate) fn pause(&mut self, context: &mut ConsumerContext<'_>, duration_ms: u64) {
        let id = self.id;
        let now = context.now();
        if self.phase == ConsumerPhase::Stopped || duration_ms == 0 {
            return;
        }
        let until = now.saturating_add(duration_ms);
        self.paused_until = Some(self.paused_until.map_or(until, |current| current.max(until)));
        let incarnation = self.incarnation;
        context.trace(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::Paused { duration_ms },
        });
        context.timer(incarnation, duration_ms, Timer::ConsumerPauseEnd);
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
