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
use super::contexts::BrokerContext;
use super::trace::{BrokerChange, HighWatermarkReason, HighWatermarkTrigger, TraceId, TraceKind, TruncationReason};
use super::types::{
    BatchSequence, ErrorCode, Message, MessageName, MetadataImage, NodeId, OffsetSpec, ProducerBatch, Record, Time,
    TxnMarker,
};
use super::Timer;

pub use super::purgatory::{Parked, ParkedReply};
use log::producer_epoch;
pub use log::PartitionLog;

pub mod coordinator;
mod fetch;
mod log;
mod metadata;
mod produce;
mod replication;
pub mod txn;
pub mod verification;

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
    pub coordinators: BTreeMap<TopicPartition, coordinator::Coordinator>,
    /// Transactions it coordinates (reloaded from `__transaction_state`
    /// when it becomes that partition's leader).
    pub txn_coordinators: BTreeMap<TopicPartition, txn::TxnCoordinator>,
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
    pub verifications: BTreeMap<u64, verification::Verification>,
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

    /// What lives only in the process's memory goes (it died, or starts
    /// again): its roles per partition, the coordinators it hosted, the
    /// requests it was answering, client quotas and muted connections,
    /// its block of producer ids. Its logs stay on disk.
    fn forget_roles(&mut self) {
        self.leading.clear();
        self.following.clear();
        self.coordinators.clear();
        self.txn_coordinators.clear();
        self.produce_requests.clear();
        self.produce_request_bytes.clear();
        self.client_rates.clear();
        self.muted.clear();
        self.producer_ids = None;
    }

    /// A new verification request id.
    pub(crate) fn next_verification(&mut self) -> u64 {
        self.verification_requests += 1;
        self.verification_requests
    }
}

impl Broker {
    /// The controller this broker talks to.
    fn controller_of(&self) -> NodeId {
        NodeId::Controller(self.controller)
    }

    /// Starts a broker process: register with the controller.
    pub(crate) fn start(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        self.boot(context);
        let incarnation = self.incarnation;
        context.send(
            self.controller_of(),
            Message::BrokerRegistration {
                broker: id,
                incarnation,
                previous_broker_epoch: self.previous_broker_epoch,
            },
        );
    }

    /// A broker that was already registered and unfenced when the run
    /// began (the cluster is in a steady state at time 0).
    pub(crate) fn start_registered(
        &mut self,
        context: &mut BrokerContext<'_>,
        broker_epoch: u64,
        image: MetadataImage,
    ) {
        self.boot(context);
        self.broker_epoch = Some(broker_epoch);
        self.fenced = false;
        self.apply_metadata(context, image);
    }

    fn boot(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        self.status = BrokerStatus::Running;
        context.set_running(true);
        self.incarnation += 1;
        self.broker_epoch = None;
        self.fenced = true;
        self.shutting_down = None;
        self.previous_broker_epoch = self.clean_shutdown_epoch.take();
        self.metadata = None;
        // The log stays on disk; what is committed is learned again from
        // the leader.
        self.metadata_log.high_watermark = 0;
        self.metadata_log.in_flight = None;
        self.forget_roles();
        let incarnation = self.incarnation;
        context.trace(TraceKind::BrokerStatus {
            broker: id,
            status: BrokerChange::Started,
        });
        // `LogManager#startup` schedules its retention task
        // `log.initial.task.delay.ms` (30 s) after startup, then every
        // `log.retention.check.interval.ms`: the first check waits the
        // 30 s even when the interval is shorter.
        let first_retention_check = LOG_MANAGER_INITIAL_DELAY_MS;
        for (delay, timer) in [
            (context.config().broker_heartbeat_interval_ms, Timer::BrokerHeartbeat),
            (context.config().replica_lag_time_max_ms / 2, Timer::IsrExpiration),
            (context.config().log_cleaner_backoff_ms, Timer::LogCleaner),
            (first_retention_check, Timer::RetentionCheck),
            (
                context.config().producer_id_expiration_check_interval_ms,
                Timer::ProducerIdExpiration,
            ),
        ] {
            context.timer(incarnation, delay, timer);
        }
        // `LogManager#startup` schedules the flusher after
        // `log.initial.task.delay.ms`, then every
        // `log.flush.scheduler.interval.ms` (unset: never).
        if context.config().log_flush_scheduler_interval_ms.is_some() {
            context.timer(incarnation, LOG_MANAGER_INITIAL_DELAY_MS, Timer::LogFlush);
        }
        self.fetch_metadata(context);
    }

    /// The broker process ends (a crash, or the end of a controlled
    /// shutdown): its in-memory roles go, its logs stay.
    pub(crate) fn stop(&mut self, context: &mut BrokerContext<'_>, status: BrokerChange) {
        let id = self.id;
        if self.status == BrokerStatus::Dead {
            return;
        }
        self.status = BrokerStatus::Dead;
        self.forget_roles();
        self.verifications.clear();
        self.stalled.clear();
        self.produce_connections.clear();
        self.shutting_down = None;
        // A clean stop ends with `LogManager#shutdown`, which flushes every
        // log (and writes the recovery-point checkpoint).
        if matches!(
            status,
            BrokerChange::StoppedAfterControlledShutdown
                | BrokerChange::StoppedShutdownTimedOut
                | BrokerChange::StoppedUnregistered
        ) {
            let now = context.now() as i64;
            for log in self.logs.values_mut() {
                log.log.flush(now);
            }
        }
        context.trace(TraceKind::BrokerStatus { broker: id, status });
        context.set_running(false);
    }

    /// The broker loses power: a running process dies, and its logs lose
    /// what was past their recovery points.
    pub(crate) fn lose_power(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        if self.status == BrokerStatus::Dead {
            context.trace(TraceKind::BrokerStatus {
                broker: id,
                status: BrokerChange::PowerLost,
            });
        } else {
            self.stop(context, BrokerChange::PowerLost);
        }
        let now = context.now();
        let partitions: Vec<TopicPartition> = self.logs.keys().cloned().collect();
        for partition in partitions {
            let log = self.logs.get_mut(&partition).expect("listed above");
            let Some((to_offset, end, lost)) = log.lose_unflushed(now) else {
                continue;
            };
            context.note_power_loss(&partition, lost);
            context.trace(TraceKind::Truncated {
                broker: id,
                partition,
                to_offset,
                removed: end - to_offset,
                reason: TruncationReason::PowerLoss,
            });
        }
    }

    /// A graceful stop (`kafka-server-stop`): the broker asks the
    /// controller for a controlled shutdown (`BrokerLifecycleManager`,
    /// heartbeat with `wantShutDown`); the controller moves its leaderships
    /// and ISR places to other replicas, then lets it stop. No client waits
    /// for a session timeout. A broker not registered stops at once; one
    /// whose leaderships cannot move stops after
    /// `CONTROLLED_SHUTDOWN_TIMEOUT_MS` anyway.
    pub(crate) fn graceful_stop(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        let now = context.now();
        if self.status == BrokerStatus::Dead || self.shutting_down.is_some() {
            return;
        }
        if self.broker_epoch.is_none() {
            self.stop(context, BrokerChange::StoppedUnregistered);
            return;
        }
        self.shutting_down = Some(now);
        context.trace(TraceKind::BrokerStatus {
            broker: id,
            status: BrokerChange::AskedForControlledShutdown,
        });
        self.send_heartbeat(context);
    }

    pub(crate) fn pause(&mut self, context: &mut BrokerContext<'_>, duration_ms: u64) {
        let id = self.id;
        let now = context.now();
        if self.status != BrokerStatus::Running {
            return;
        }
        self.status = BrokerStatus::Paused {
            until: now.saturating_add(duration_ms),
        };
        let incarnation = self.incarnation;
        context.trace(TraceKind::BrokerStatus {
            broker: id,
            status: BrokerChange::Paused { duration_ms },
        });
        context.timer(incarnation, duration_ms, Timer::PauseEnd);
    }

    /// Sends a heartbeat (or, unregistered, a registration) to the
    /// controller the broker believes active.
    fn send_heartbeat(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        let incarnation = self.incarnation;
        self.heartbeat_outstanding = true;
        match self.broker_epoch {
            Some(broker_epoch) => {
                let metadata_offset = self.metadata_log.committed().map_or(0, |state| state.offset);
                let want_shut_down = self.shutting_down.is_some();
                context.send(
                    self.controller_of(),
                    Message::BrokerHeartbeat {
                        broker: id,
                        broker_epoch,
                        metadata_offset,
                        want_shut_down,
                    },
                );
            }
            None => {
                context.send(
                    self.controller_of(),
                    Message::BrokerRegistration {
                        broker: id,
                        incarnation,
                        previous_broker_epoch: self.previous_broker_epoch,
                    },
                );
            }
        }
    }

    pub(crate) fn timer(&mut self, context: &mut BrokerContext<'_>, timer: Timer) {
        let id = self.id;
        let incarnation = self.incarnation;
        match timer {
            Timer::PauseEnd => {
                self.status = BrokerStatus::Running;
                context.trace(TraceKind::BrokerStatus {
                    broker: id,
                    status: BrokerChange::Resumed,
                });
            }
            Timer::BrokerHeartbeat => self.heartbeat_due(context),
            Timer::IsrExpiration => {
                context.timer(
                    incarnation,
                    (context.config().replica_lag_time_max_ms / 2).max(1),
                    Timer::IsrExpiration,
                );
                self.leader_maybe_shrink_isr(context);
            }
            Timer::LogCleaner => {
                context.timer(
                    incarnation,
                    context.config().log_cleaner_backoff_ms.max(1),
                    Timer::LogCleaner,
                );
                self.clean_logs(context);
            }
            Timer::Unmute(client) => self.unmute(context, client),
            Timer::ProducerIdExpiration => {
                context.timer(
                    incarnation,
                    context.config().producer_id_expiration_check_interval_ms.max(1),
                    Timer::ProducerIdExpiration,
                );
                self.expire_producers(context);
            }
            Timer::LogFlush => {
                let Some(interval) = context.config().log_flush_scheduler_interval_ms else {
                    return;
                };
                context.timer(incarnation, interval.max(1), Timer::LogFlush);
                let now = context.now() as i64;
                for log in self.logs.values_mut() {
                    log.log.flush_if_due(now);
                }
            }
            Timer::RetentionCheck => {
                context.timer(
                    incarnation,
                    context.config().log_retention_check_interval_ms.max(1),
                    Timer::RetentionCheck,
                );
                self.retention_check(context);
            }
            Timer::FollowerFetch(partition) => self.follower_fetch(context, &partition),
            Timer::MetadataFetchRetry => self.fetch_metadata(context),
            Timer::MetadataFetchTimeout(fetch) => {
                // No answer in controller.quorum.request.timeout.ms: ask
                // another voter who leads.
                let controllers = context.config().controllers;
                if self.metadata_log.in_flight.is_some_and(|(id, _)| id == fetch) {
                    self.metadata_log.in_flight = None;
                    self.controller = self.controller % controllers + 1;
                    self.fetch_metadata(context);
                }
            }
            Timer::CoordinatorPoll(partition) => self.coordinator_poll(context, &partition),
            Timer::TxnTick(partition) => self.txn_tick(context, &partition),
            Timer::FollowerFetchTimeout(partition, fetch) => {
                if let Some(state) = self.following.get_mut(&partition) {
                    if state.in_flight == Some(fetch) {
                        state.in_flight = None;
                        self.follower_fetch(context, &partition);
                    }
                }
            }
            Timer::DelayedFetchExpiry(partition, held) => self.leader_held_fetch_expired(context, &partition, held),
            Timer::ProduceExpiry(partition, request) => {
                self.leader_parked_produce_expired(context, &partition, request)
            }
            Timer::VerificationRetry(request) => self.verification_retry(context, request),
            Timer::VerificationTimeout(request) => self.verification_lost(context, request),
            Timer::StalledRequest(stalled) => match self.stalled.remove(&stalled) {
                Some((from, message @ Message::Produce { .. }, connection)) => {
                    self.handle_produce(context, from, message, connection);
                }
                Some((from, message, _)) => self.handle(context, from, message),
                None => {}
            },
            _ => {}
        }
    }

    /// The heartbeat timer: a controlled shutdown that took too long
    /// stops the broker; otherwise the next heartbeat goes out (to the next
    /// controller if the last one had no answer).
    fn heartbeat_due(&mut self, context: &mut BrokerContext<'_>) {
        let incarnation = self.incarnation;
        if self
            .shutting_down
            .is_some_and(|asked| context.now() >= asked + CONTROLLED_SHUTDOWN_TIMEOUT_MS)
        {
            self.stop(context, BrokerChange::StoppedShutdownTimedOut);
            return;
        }
        let controllers = context.config().controllers;
        if self.heartbeat_outstanding {
            // No answer to the last heartbeat: try the next controller.
            self.controller = self.controller % controllers + 1;
        }
        context.timer(
            incarnation,
            context.config().broker_heartbeat_interval_ms,
            Timer::BrokerHeartbeat,
        );
        self.send_heartbeat(context);
    }

    /// A fetch held for `fetch.max.wait.ms` is answered with what there is.
    fn leader_held_fetch_expired(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition, held: u64) {
        let Some(leader) = self.leading.get_mut(partition) else {
            return;
        };
        let Some(position) = leader.held.iter().position(|fetch| fetch.id == held) else {
            return;
        };
        let fetch = leader.held.remove(position);
        self.answer_held(context, partition, fetch);
    }

    /// An acks=all produce still waiting when its timeout ends is answered
    /// REQUEST_TIMED_OUT.
    fn leader_parked_produce_expired(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        request: u64,
    ) {
        let Some(leader) = self.leading.get_mut(partition) else {
            return;
        };
        let Some(position) = leader.parked.iter().position(|parked| parked.timer == request) else {
            return;
        };
        let parked = leader.parked.remove(position);
        self.answer_parked(context, partition, parked, Err(ErrorCode::RequestTimedOut));
    }

    pub(crate) fn receive(&mut self, context: &mut BrokerContext<'_>, from: NodeId, message: Message) {
        let id = self.id;
        let message = match self.hold_if_muted(context, from, message) {
            Some(message) => message,
            None => return,
        };
        let request = message.name();
        if let (MessageName::Produce | MessageName::EndTxn, NodeId::Producer(_)) = (request, from) {
            if let Some(delay) = context.take_stall(from, request) {
                // The request was read; a handler takes it `delay` later,
                // whatever became of its connection (`RequestChannel`).
                // Until then the connection stays muted, as Kafka's
                // `SocketServer` mutes a connection from reading one
                // request until its answer is sent: what the client sends
                // behind it waits unread, and is lost if the client closes
                // the connection.
                let stalled = self.next_verification();
                let connection = context.connection(from);
                self.stalled.insert(stalled, (from, message, connection));
                let incarnation = self.incarnation;
                context.timer(incarnation, delay, Timer::StalledRequest(stalled));
                self.mute(context, from, delay);
                context.trace(TraceKind::RequestStalled {
                    broker: id,
                    client: from,
                    request,
                    delay_ms: delay,
                });
                return;
            }
        }
        self.handle(context, from, message);
    }

    /// A request a handler takes (at once, or after a stall).
    fn handle(&mut self, context: &mut BrokerContext<'_>, from: NodeId, message: Message) {
        if self.txn_receive(context, from, &message) {
            return;
        }
        if self.coordinator_receive(context, from, &message) {
            return;
        }
        match message {
            Message::ConsumerFetch {
                partition,
                offset,
                isolation,
                current_leader_epoch,
            } => match self.check_leader_epoch(&partition, current_leader_epoch) {
                Ok(()) => self.leader_consumer_fetch(context, from, &partition, offset, isolation),
                Err(error) => context.send(from, Message::consumer_fetch_error(partition, error)),
            },
            Message::OffsetForLeaderEpoch {
                partition,
                leader_epoch,
                current_leader_epoch,
            } => self.offset_for_leader_epoch(context, from, partition, leader_epoch, current_leader_epoch),
            Message::ListOffsets {
                partition,
                spec,
                isolation,
            } => self.list_offsets(context, from, partition, spec, isolation),
            Message::BrokerHeartbeatResponse {
                broker_epoch,
                fenced,
                should_shut_down,
                ..
            } => self.heartbeat_answer(context, from, broker_epoch, fenced, should_shut_down),
            Message::BrokerRegistrationResponse { result } => self.registration_answer(context, from, result),
            Message::MetadataFetchResponse(answer) => {
                if let NodeId::Controller(controller) = from {
                    self.metadata_response(context, controller, &answer);
                }
            }
            Message::ConnectionClosed => self.connection_closed(context, from),
            // `NOT_CONTROLLER`: the request goes again to the controller
            // named as leader (`NodeToControllerChannelManager`), at once;
            // with no name, the next heartbeat tries another one.
            Message::NotController { leader } => self.not_controller(context, from, leader),
            Message::MetadataRequest => self.metadata_answer(context, from),
            Message::Produce { .. } => {
                let connection = context.connection(from);
                self.handle_produce(context, from, message, connection);
            }
            Message::LeaderAddPartitionsToTxnResponse { request, results } => {
                self.verification_answered(context, request, results)
            }
            Message::InitProducerId { request, .. } => {
                let result = Ok((self.next_producer_id(), 0));
                let finalized = self.transaction_version(context);
                context.send(
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
                context,
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
                context,
                &partition,
                leader_epoch,
                batches,
                high_watermark,
                log_start_offset,
                error,
                diverging,
            ),
            Message::AlterPartitionResponse { partition, result } => {
                self.alter_partition_answer(context, partition, result)
            }
            _ => {}
        }
    }

    /// KIP-320's check of a client's leader epoch before a consumer fetch
    /// or an `OffsetForLeaderEpoch` (`Partition#checkCurrentLeaderEpoch`,
    /// then a leader is required): older than this broker's, the client is
    /// fenced (FENCED_LEADER_EPOCH); newer, this broker is behind
    /// (UNKNOWN_LEADER_EPOCH); no epoch, or the same, goes on if it leads.
    fn check_leader_epoch(
        &self,
        partition: &TopicPartition,
        current_leader_epoch: Option<u32>,
    ) -> Result<(), ErrorCode> {
        let local = self
            .leading
            .get(partition)
            .map(|leader| leader.leader_epoch)
            .or_else(|| self.following.get(partition).map(|follower| follower.leader_epoch));
        match (current_leader_epoch, local) {
            (Some(client), Some(local)) if client < local => Err(ErrorCode::FencedLeaderEpoch),
            (Some(client), Some(local)) if client > local => Err(ErrorCode::UnknownLeaderEpoch),
            _ if self.leading.contains_key(partition) => Ok(()),
            _ => Err(ErrorCode::NotLeaderOrFollower),
        }
    }

    /// KIP-320: a consumer's `OffsetForLeaderEpoch`
    /// (`ReplicaManager#lastOffsetForLeaderEpoch`, always from the leader):
    /// the largest epoch at or below the one asked for and where it ends
    /// in this leader's log (`LeaderEpochFileCache#endOffsetFor`).
    fn offset_for_leader_epoch(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        partition: TopicPartition,
        leader_epoch: u32,
        current_leader_epoch: u32,
    ) {
        let result = self
            .check_leader_epoch(&partition, Some(current_leader_epoch))
            .map(|()| {
                let log = &self.logs[&partition];
                let (epoch, end_offset) = log
                    .epoch_cache
                    .end_offset_for(i64::from(leader_epoch), log.log_end_offset());
                (epoch >= 0 && end_offset >= 0).then_some((epoch as u32, end_offset as Offset))
            });
        context.send(from, Message::OffsetForLeaderEpochResponse { partition, result });
    }

    /// `ListOffsets`: a partition's log start offset or high watermark, from
    /// its leader.
    fn list_offsets(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        partition: TopicPartition,
        spec: OffsetSpec,
        isolation: IsolationLevel,
    ) {
        let result = match self.leading.get(&partition) {
            Some(_) => {
                let log = &self.logs[&partition];
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
        context.send(from, Message::ListOffsetsResponse { partition, result });
    }

    /// The controller's `BrokerHeartbeatResponse`: fenced or not, and at the
    /// end of a controlled shutdown, stop.
    fn heartbeat_answer(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        broker_epoch: u64,
        fenced: bool,
        should_shut_down: bool,
    ) {
        self.heartbeat_outstanding = false;
        if let NodeId::Controller(controller) = from {
            self.controller = controller;
        }
        if self.broker_epoch != Some(broker_epoch) {
            return;
        }
        self.fenced = fenced;
        if should_shut_down && self.shutting_down.is_some() {
            // `BrokerServer#shutdown` writes the clean-shutdown
            // file with the broker epoch.
            self.clean_shutdown_epoch = Some(broker_epoch);
            self.stop(context, BrokerChange::StoppedAfterControlledShutdown);
        }
    }

    /// The controller's `BrokerRegistrationResponse`: the broker's new epoch.
    fn registration_answer(&mut self, context: &mut BrokerContext<'_>, from: NodeId, result: Result<u64, ErrorCode>) {
        self.heartbeat_outstanding = false;
        if let NodeId::Controller(controller) = from {
            self.controller = controller;
        }
        // Refused (DUPLICATE_BROKER_REGISTRATION): the next
        // heartbeat interval registers again.
        if let Ok(epoch) = result {
            self.broker_epoch = Some(epoch);
            self.publish_metadata(context);
        }
    }

    /// `NOT_CONTROLLER` from the controller the broker asked.
    fn not_controller(&mut self, context: &mut BrokerContext<'_>, from: NodeId, leader: Option<u32>) {
        let controllers = context.config().controllers;
        self.heartbeat_outstanding = false;
        self.controller = leader.unwrap_or(self.controller % controllers + 1);
        if leader.is_some_and(|leader| NodeId::Controller(leader) != from) {
            self.send_heartbeat(context);
        }
    }

    /// A client's `Metadata`: leaders and epochs as this broker's metadata
    /// knows them.
    fn metadata_answer(&mut self, context: &mut BrokerContext<'_>, from: NodeId) {
        let leaders = self
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
        context.send(from, Message::MetadataResponse { leaders });
    }

    /// The controller's `AlterPartitionResponse`: the leader's new ISR, if it
    /// is still current.
    fn alter_partition_answer(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: TopicPartition,
        result: Result<PartitionRegistration, ErrorCode>,
    ) {
        let Some(leader) = self.leading.get_mut(&partition) else {
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
        self.leader_maybe_advance_hw(context, &partition, HighWatermarkTrigger::IsrChanged);
    }

    /// A connection of this broker broke (`NetworkClient` disconnect on the
    /// client side, a closed channel on the server side).
    fn connection_closed(&mut self, context: &mut BrokerContext<'_>, peer: NodeId) {
        let incarnation = self.incarnation;
        let controllers = context.config().controllers;
        match peer {
            NodeId::Controller(controller) => {
                // The heartbeat in flight failed: the next one tries another
                // controller (`NodeToControllerChannelManager` looks for
                // the active controller again); an AlterPartition in flight
                // failed and is proposed again.
                if self.controller == controller {
                    self.controller = controller % controllers + 1;
                    self.heartbeat_outstanding = false;
                }
                // The metadata fetch in flight failed: fetch again (from
                // the next controller) after the reconnect backoff.
                if self.metadata_log.in_flight.is_some_and(|(_, to)| to == controller) {
                    self.metadata_log.in_flight = None;
                    context.timer(
                        incarnation,
                        super::quorum::RECONNECT_BACKOFF_MS,
                        Timer::MetadataFetchRetry,
                    );
                }
                for leader in self.leading.values_mut() {
                    leader.pending_isr = None;
                }
            }
            NodeId::Broker(other) => {
                self.verifications_disconnected(context, other);
                // As a follower: the fetch in flight to that leader failed;
                // the fetcher backs off (`replica.fetch.backoff.ms`, 1000)
                // and fetches again.
                let mut refetch = Vec::new();
                for (partition, state) in self.following.iter_mut() {
                    if state.leader == other && state.in_flight.is_some() {
                        state.in_flight = None;
                        refetch.push(partition.clone());
                    }
                }
                // As a leader: fetches that follower parked are gone with
                // its connection.
                for leader in self.leading.values_mut() {
                    leader
                        .held
                        .retain(|fetch| fetch.consumer.is_some() || fetch.replica != other);
                }
                for partition in refetch {
                    context.timer(incarnation, FETCH_BACKOFF_MS, Timer::FollowerFetch(partition));
                }
            }
            client => {
                // A client's parked requests are answered on a connection
                // that is gone: drop them.
                for leader in self.leading.values_mut() {
                    leader.held.retain(|fetch| fetch.consumer != Some(client));
                    leader.parked.retain(|parked| {
                        !(parked.client == client && matches!(parked.reply, ParkedReply::Produce { .. }))
                    });
                }
                self.produce_requests.retain(|(waiting, _), _| *waiting != client);
                self.produce_connections.retain(|(waiting, _), _| *waiting != client);
            }
        }
    }

    /// A leader that steps down (or starts a new epoch) answers the fetches
    /// it was holding with `NOT_LEADER_OR_FOLLOWER` (`DelayedFetch`
    /// completes when the partition is no longer led here), so followers
    /// and consumers look for the new leader instead of waiting.
    fn fail_held(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        held: Vec<HeldFetch>,
        leader_epoch: u32,
    ) {
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
            context.send(client, message);
        }
    }

    fn fail_parked(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        parked: Vec<Parked>,
        error: ErrorCode,
    ) {
        for parked in parked {
            self.answer_parked(context, partition, parked, Err(error));
        }
    }

    /// Answers a parked append: a ProduceResponse, or the end of an offset commit.
    fn answer_parked(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        parked: Parked,
        result: Result<Offset, ErrorCode>,
    ) {
        match parked.reply {
            ParkedReply::Produce { request, .. } => {
                self.produce_partition_done(context, parked.client, request, partition, result)
            }
            ParkedReply::CoordinatorWrite { write } => {
                self.coordinator_parked_done(context, partition, write, result.map(|_| ()));
            }
            ParkedReply::TxnWrite { write } => self.txn_parked_done(context, partition, write, result.map(|_| ())),
            ParkedReply::TxnMarker { transactional_id } => {
                self.txn_marker_parked_done(context, partition, parked.client, transactional_id, result.map(|_| ()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::transactions::ControlType;
    use crate::sim::types::MARKER_RECORD_BASE;
    use crate::sim::Simulation;

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
            |broker: BrokerId, epoch: Option<u32>| simulation.brokers[&broker].check_leader_epoch(&partition, epoch);
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
