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
use log::producer_epoch;
pub use log::PartitionLog;

mod fetch;
mod log;
mod metadata;
mod produce;
mod replication;

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
            self.controller_processes
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
            Timer::BrokerHeartbeat => self.broker_heartbeat_due(id),
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
            Timer::DelayedFetchExpiry(partition, held) => self.leader_held_fetch_expired(id, &partition, held),
            Timer::ProduceExpiry(partition, request) => self.leader_parked_produce_expired(id, &partition, request),
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

    /// The heartbeat timer: a controlled shutdown that took too long
    /// stops the broker; otherwise the next heartbeat goes out (to the next
    /// controller if the last one had no answer).
    fn broker_heartbeat_due(&mut self, id: BrokerId) {
        let incarnation = self.brokers[&id].incarnation;
        let node = NodeId::Broker(id);
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

    /// A fetch held for `fetch.max.wait.ms` is answered with what there is.
    fn leader_held_fetch_expired(&mut self, id: BrokerId, partition: &TopicPartition, held: u64) {
        let broker = self.broker(id);
        let Some(leader) = broker.leading.get_mut(partition) else {
            return;
        };
        let Some(position) = leader.held.iter().position(|fetch| fetch.id == held) else {
            return;
        };
        let fetch = leader.held.remove(position);
        self.answer_held(id, partition, fetch);
    }

    /// An acks=all produce still waiting when its timeout ends is answered
    /// REQUEST_TIMED_OUT.
    fn leader_parked_produce_expired(&mut self, id: BrokerId, partition: &TopicPartition, request: u64) {
        let broker = self.broker(id);
        let Some(leader) = broker.leading.get_mut(partition) else {
            return;
        };
        let Some(position) = leader.parked.iter().position(|parked| parked.timer == request) else {
            return;
        };
        let parked = leader.parked.remove(position);
        self.answer_parked(id, partition, parked, Err(ErrorCode::RequestTimedOut));
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
