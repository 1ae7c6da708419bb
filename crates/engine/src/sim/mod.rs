//! The cluster simulator: a discrete-event run of brokers, the KRaft
//! controller and producers on a virtual clock.
//!
//! A [`Simulation`] is a plain value. Inputs are scheduled at virtual times;
//! [`Simulation::step`] takes the next event off the queue (a message
//! delivery, a timer or an input), lets the node it concerns react, checks
//! the invariants, and appends what happened to the [`trace`]. Nothing here
//! reads a clock or the OS: the same config, seed and inputs give the same
//! trace everywhere.

pub mod bench;
pub mod broker;
pub mod chaos;
pub mod checks;
pub use crate::chunked;
pub mod config;
pub mod consumer;
pub mod controller;
pub mod fuzz;
pub mod input_names;
pub mod jepsen;
pub mod ledger;
pub mod monitor;
pub mod network;
pub mod producer;
pub mod purgatory;
pub mod quorum;
pub mod recording;
pub mod scenario;
pub mod trace;
pub mod types;
pub mod view;

use crate::sorting::Gather;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::protocol::{BrokerId, TopicPartition};
use crate::random::Rng;

use broker::Broker;
use config::{ClusterConfig, ConfigChange, Input, ScheduledInput};
use controller::Controller;
use monitor::Monitor;
use network::Network;
use producer::Producer;
use trace::{TraceEvent, TraceId, TraceKind};
use types::{ErrorCode, Message, MessageName, NodeId, RecordId, Time};

mod contexts;
mod dispatch;
mod inputs;

/// A timer a node set for itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Timer {
    /// A broker's next heartbeat.
    BrokerHeartbeat,
    /// A follower's next fetch for a partition.
    FollowerFetch(TopicPartition),
    /// A follower's fetch got no answer in time.
    FollowerFetchTimeout(TopicPartition, u64),
    /// The leader's periodic check for lagging followers.
    IsrExpiration,
    /// The broker's periodic retention check over its logs
    /// (`log.retention.check.interval.ms`).
    RetentionCheck,
    /// The broker's log cleaner looks for compacted logs to clean
    /// (`log.cleaner.backoff.ms`).
    LogCleaner,
    /// A client connection's mute after a throttled answer is over.
    Unmute(NodeId),
    /// A held (empty) fetch must be answered now.
    DelayedFetchExpiry(TopicPartition, u64),
    /// A parked acks=all produce timed out.
    ProduceExpiry(TopicPartition, u64),
    /// A paused broker resumes.
    PauseEnd,
    /// The controller looks for brokers whose session expired.
    SessionCheck,
    /// The active controller moves leaders back to preferred replicas.
    LeaderImbalanceCheck,
    /// The active controller's periodic unclean leader election pass.
    UncleanElectionCheck,
    /// A controller's periodic quorum work (replicate, or notice a silent leader).
    QuorumTick,
    /// A candidate's election ran out of time (its epoch).
    ElectionTimeout(u32),
    /// The quorum leader answers a held metadata fetch (its id).
    QuorumFetchExpiry(u64),
    /// A follower controller fetches again after a broken connection.
    QuorumFetchRetry,
    /// A broker fetches the metadata log again after a backoff.
    MetadataFetchRetry,
    /// A broker's metadata fetch got no answer in time (its id).
    MetadataFetchTimeout(u64),
    /// A producer's batch lingered long enough, or a retry backoff ended.
    ProducerDrain,
    /// A produce or `InitProducerId` request got no answer in time.
    ProducerRequestTimeout(u64),
    /// A producer's metadata request got no answer in time.
    ProducerMetadataTimeout(u64),
    /// A producer refreshes its metadata (a partition had no leader).
    ProducerMetadataRefresh,
    /// A producer's metadata may be older than `metadata.max.age.ms`.
    ProducerMetadataMaxAge,
    /// A group coordinator's timers may be due (sessions, join and sync
    /// rounds, offsets expiry).
    CoordinatorPoll(TopicPartition),
    /// A transaction coordinator's periodic work (markers to send again,
    /// timed-out transactions).
    TxnTick(TopicPartition),
    /// A consumer's next heartbeat.
    ConsumerHeartbeat,
    /// A consumer's next auto-commit.
    ConsumerCommit,
    /// A consumer retries finding its coordinator or its metadata.
    ConsumerRetry,
    /// A consumer's oldest request to a broker may have timed out.
    ConsumerRequestTimeout(BrokerId),
    /// A consumer's metadata refresh after a failed fetch, once its
    /// backoff has passed.
    ConsumerMetadataRefresh,
    /// A consumer's metadata may be older than `metadata.max.age.ms`.
    ConsumerMetadataMaxAge,
    /// A consumer's handler finished the records of its last poll.
    ConsumerProcessed,
    /// A consumer's poll timer (`max.poll.interval.ms`) runs out while its
    /// handler is still at work: the heartbeat thread notices.
    ConsumerPollTimer,
    /// A broker's fetch throttle on a consumer is over: it may fetch there
    /// again.
    ConsumerUnthrottled,
    /// A consumer's pause (a GC pause) ends.
    ConsumerPauseEnd,
    /// A consumer-protocol member's next `ConsumerGroupHeartbeat` is due.
    ConsumerGroupHeartbeat,
    /// A leader asks the transaction coordinator again (KIP-890: the
    /// previous transaction was still completing).
    VerificationRetry(u64),
    /// A leader's question to the transaction coordinator got no answer.
    VerificationTimeout(u64),
    /// A request handler takes a stalled request.
    StalledRequest(u64),
    /// A broker's periodic `producer.id.expiration.ms` pass.
    ProducerIdExpiration,
    /// The broker's log flusher (`log.flush.scheduler.interval.ms`).
    LogFlush,
}

/// What the event queue holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Deliver {
        from: NodeId,
        to: NodeId,
        message: Message,
        sent: Option<TraceId>,
        /// When it left `from` (the map draws it between then and arrival).
        sent_at: Time,
        /// The connection it travels on (see [`network`]): discarded if
        /// that connection broke meanwhile.
        connection: u32,
    },
    Timer {
        node: NodeId,
        incarnation: u32,
        timer: Timer,
        cause: Option<TraceId>,
    },
    /// Shared: snapshots copy the queue, and inputs never change.
    Input(std::rc::Rc<Input>),
}

/// A record a producer sent, followed through the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProducedRecord {
    /// Which producer.
    pub producer: u32,
    /// Its key, if any (shared: snapshots copy records often).
    pub key: Option<std::rc::Rc<str>>,
    /// Size in bytes.
    pub bytes: u32,
    /// The partition it went to, once chosen.
    pub partition: Option<TopicPartition>,
    /// Where it was acknowledged: `Some(None)` for acks=0 (no offset).
    pub acknowledged: Option<Option<u64>>,
    /// The producer's acks when it was acknowledged.
    pub acks: Option<crate::replication::high_watermark::Acks>,
    /// Delivery failed for good.
    pub failed: bool,
    /// The run found it missing from its partition's leader.
    pub lost: bool,
    /// For an output of a consume-transform-produce handler: the record
    /// it was made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<RecordId>,
    /// For a dead letter: the headers saying where it came from and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter: Option<std::rc::Rc<DeadLetterHeaders>>,
    /// When the producer made it (its `CreateTime` timestamp), in ms.
    pub timestamp: u64,
    /// Whether its value is null (a tombstone).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tombstone: bool,
}

impl ProducedRecord {
    /// The encoded size of its headers (see [`crate::storage::record::headers_size`]).
    pub fn headers_size(&self) -> u32 {
        let headers: Vec<crate::storage::Header> = self
            .dead_letter
            .iter()
            .flat_map(|headers| headers.headers())
            .map(|(name, value)| crate::storage::Header {
                key: std::rc::Rc::from(name),
                value_size: Some(value.len() as u32),
            })
            .collect();
        crate::storage::record::headers_size(&headers)
    }
}

/// A `PoisonRecords` input: handlers fail on the records of `topic` it
/// matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PoisonRule {
    pub(crate) topic: String,
    pub(crate) key: Option<String>,
    pub(crate) partition: Option<u32>,
    pub(crate) offset: Option<u64>,
}

/// The headers a dead letter carries, named as Kafka Connect's dead
/// letter queue names them (`DeadLetterQueueReporter`:
/// `__connect.errors.topic`, `.partition`, `.offset`,
/// `.exception.message`); a consumer application picks its own names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetterHeaders {
    /// The record's topic.
    pub topic: String,
    /// Its partition.
    pub partition: u32,
    /// Its offset.
    pub offset: crate::protocol::Offset,
    /// What the handler failed with.
    pub error: String,
    /// Attempts made before giving up.
    pub attempts: u32,
}

impl DeadLetterHeaders {
    /// The headers as (name, value) pairs.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        vec![
            ("__connect.errors.topic", self.topic.clone()),
            ("__connect.errors.partition", self.partition.to_string()),
            ("__connect.errors.offset", self.offset.to_string()),
            ("__connect.errors.exception.message", self.error.clone()),
        ]
    }
}

/// Counts for the end of a run (camelCase in JSON, as every JS result).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Records producers sent.
    pub produced: u64,
    /// Records acknowledged to producers.
    pub acknowledged: u64,
    /// Acknowledged records later lost.
    pub lost: u64,
    /// Records that ended up twice in a partition.
    pub duplicated: u64,
    /// Records whose delivery failed for good.
    pub failed: u64,
    /// Leader elections committed.
    pub leader_elections: u64,
    /// Controller elections won after the initial one.
    pub controller_elections: u64,
    /// Invariant violations.
    pub invariant_violations: u64,
    /// Events processed.
    pub events: u64,
    /// Virtual time reached.
    pub time_ms: Time,
}

/// Options that do not change what happens, only what is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceOptions {
    /// Record every message sent and delivered (the sequence diagram needs
    /// it; a throughput benchmark does not).
    pub messages: bool,
}

impl Default for TraceOptions {
    fn default() -> Self {
        TraceOptions { messages: true }
    }
}

/// A running simulation.
#[derive(Debug, Clone)]
pub struct Simulation {
    pub(crate) config: ClusterConfig,
    pub(crate) now: Time,
    sequence: u64,
    queue: BTreeMap<(Time, u64), Event>,
    pub(crate) network: Network,
    network_rng: Rng,
    pub(crate) placement_rng: Rng,
    /// The committed metadata: the cluster's view of the controller state.
    pub(crate) controller: Controller,
    pub(crate) quorum: quorum::Quorum,
    /// Whether each controller's process runs, by id: the network's view
    /// (the quorum keeps its own, and is not in `quorum` while one of its
    /// handlers runs).
    pub(crate) controller_processes: BTreeMap<u32, bool>,
    pub(crate) brokers: BTreeMap<BrokerId, Broker>,
    /// Whether each broker's process runs (a paused one does), by id: the
    /// network's view (a broker is not in `brokers` while one of its
    /// handlers runs).
    pub(crate) broker_processes: BTreeMap<BrokerId, bool>,
    pub(crate) producers: Vec<Producer>,
    pub(crate) consumers: Vec<consumer::Consumer>,
    /// Whether each consumer's process runs, by index: the network's view
    /// (a consumer is not in `consumers` while one of its handlers runs).
    pub(crate) consumer_processes: Vec<bool>,
    /// What producers told their applications during this event (a
    /// transaction ended, or a fatal error), handed to the consumer
    /// applications that own them once the event's handler returns.
    pub(crate) told_apps: std::collections::VecDeque<(u32, Option<bool>)>,
    pub(crate) commits: chunked::ChunkedVec<broker::coordinator::CommitRecord>,
    /// What each group's handlers did with each record.
    pub(crate) ledger: ledger::Ledger,
    /// Group member ids handed out so far (they stay unique across
    /// coordinators).
    pub(crate) member_counter: u64,
    /// Which client each group member id belongs to.
    pub(crate) member_clients: BTreeMap<String, NodeId>,
    pub(crate) records: chunked::ChunkedVec<ProducedRecord>,
    /// Transaction markers written so far (their record ids count from
    /// [`types::MARKER_RECORD_BASE`]).
    pub(crate) markers_written: u64,
    /// The records every handler fails on (`PoisonRecords` inputs).
    pub(crate) poison: Vec<PoisonRule>,
    pub(crate) monitor: Monitor,
    trace: Vec<TraceEvent>,
    /// Ids of events already handed out by [`Simulation::take_trace`].
    trace_base: TraceId,
    /// The event being handled, as the cause of what it triggers.
    pub(crate) current_cause: Option<TraceId>,
    events: u64,
    /// Whether the run reached [`crate::limits::MAX_RUN_MS`] (traced once).
    at_time_limit: bool,
    trace_options: TraceOptions,
    acknowledged_count: u64,
    pub(crate) failed_count: u64,
    /// Records that `delivery.timeout.ms` failed in a batch begun by an
    /// earlier record, with that first record: a record appended to a
    /// batch that waits behind a retrying one expires when the batch does,
    /// counted from the batch's creation (`ProducerBatch#hasReachedDeliveryTimeout`).
    pub(crate) expired_with_older_batch: BTreeMap<RecordId, RecordId>,
    /// Internal topics the controller could not create yet, traced once.
    pub(crate) internal_topics_refused: std::collections::BTreeSet<String>,
    /// The latest notable events, kept for the view as they are traced.
    pub(crate) highlights: view::Highlights,
    /// The run's history for Jepsen's checks, once asked for
    /// ([`Simulation::keep_history`]).
    pub(crate) jepsen: Option<Box<jepsen::Recorder>>,
    /// Topic names, one allocation each (see [`Simulation::shared_topic`]).
    topic_names: BTreeMap<String, crate::protocol::TopicName>,
    /// `__consumer_offsets`, shared.
    pub(crate) offsets_topic: crate::protocol::TopicName,
    /// `__transaction_state`'s name, shared by its partition keys.
    pub(crate) transaction_topic: crate::protocol::TopicName,
}

impl Simulation {
    /// A cluster as `config` describes it, seeded with `seed`. Brokers start
    /// and register at time 0; topics are created by the controller.
    pub fn new(config: ClusterConfig, seed: u64) -> Result<Simulation, String> {
        config.validate()?;
        let root = Rng::new(seed, 0);
        let mut simulation = Simulation {
            network: Network::new(config.network),
            network_rng: root.derive("network"),
            placement_rng: root.derive("replica-placement"),
            controller: Controller::default(),
            quorum: quorum::Quorum::new(1, Controller::default(), root.derive("unused")),
            controller_processes: BTreeMap::new(),
            brokers: BTreeMap::new(),
            broker_processes: BTreeMap::new(),
            producers: Vec::new(),
            consumers: Vec::new(),
            consumer_processes: Vec::new(),
            told_apps: std::collections::VecDeque::new(),
            commits: chunked::ChunkedVec::new(),
            ledger: ledger::Ledger::default(),
            member_counter: 0,
            member_clients: BTreeMap::new(),
            records: chunked::ChunkedVec::new(),
            markers_written: 0,
            poison: Vec::new(),
            monitor: Monitor::default(),
            trace: Vec::new(),
            trace_base: 0,
            current_cause: None,
            now: 0,
            sequence: 0,
            queue: BTreeMap::new(),
            events: 0,
            at_time_limit: false,
            trace_options: TraceOptions::default(),
            acknowledged_count: 0,
            failed_count: 0,
            expired_with_older_batch: BTreeMap::new(),
            internal_topics_refused: std::collections::BTreeSet::new(),
            highlights: view::Highlights::default(),
            jepsen: None,
            topic_names: BTreeMap::new(),
            offsets_topic: crate::protocol::TopicName::from(crate::protocol::OFFSETS_TOPIC),
            transaction_topic: crate::protocol::TopicName::from(crate::protocol::TRANSACTION_STATE_TOPIC),
            config,
        };
        simulation.offsets_topic = simulation.shared_topic(crate::protocol::OFFSETS_TOPIC);
        for (index, producer) in simulation.config.producers.clone().into_iter().enumerate() {
            let rng = root.derive(&format!("producer-{index}"));
            let mut producer = Producer::new(index as u32, producer, rng);
            producer.share_topic(simulation.shared_topic(&producer.config.topic));
            let max_age = producer.config.metadata_max_age_ms;
            simulation.producers.push(producer);
            simulation.schedule_timer(
                NodeId::Producer(index as u32),
                0,
                max_age,
                Timer::ProducerMetadataMaxAge,
            );
        }
        // The run starts from a cluster in a steady state: every broker
        // registered and unfenced, every topic created, metadata known.
        simulation.controller_bootstrap();
        let epochs: Vec<(BrokerId, u64)> = (1..=simulation.config.brokers)
            .map(|id| (id, simulation.controller_register_initial(id)))
            .collect();
        simulation.quorum = quorum::Quorum::new(
            simulation.config.controllers,
            simulation.controller.clone(),
            root.derive("controller-quorum"),
        );
        simulation.controller_processes = simulation.quorum.nodes.keys().map(|&id| (id, true)).gather();
        let image = simulation.controller.image();
        let metadata_log = simulation.quorum.nodes[&1].log.clone();
        for (id, epoch) in epochs {
            let mut broker = Broker::new(id);
            broker.metadata_log.log = metadata_log.clone();
            broker.metadata_log.high_watermark = metadata_log.len();
            broker.metadata_log.epoch = 1;
            simulation.brokers.insert(id, broker);
            simulation.broker_processes.insert(id, false);
            simulation.broker_start_registered(id, epoch, image.clone());
        }
        simulation.quorum_start();
        for (index, consumer) in simulation.config.consumers.clone().into_iter().enumerate() {
            let start = consumer.start;
            simulation.consumer_push(consumer);
            if start {
                simulation.consumer_start(index as u32);
            }
        }
        simulation.hand_over_told_apps();
        Ok(simulation)
    }

    /// The one shared allocation of a topic's name: keys built from it
    /// compare by pointer first, which keeps the maps keyed by partition
    /// cheap.
    pub(crate) fn shared_topic(&mut self, name: &str) -> crate::protocol::TopicName {
        controller::shared_name(&mut self.topic_names, name)
    }

    /// Changes what the trace records.
    pub fn set_trace_options(&mut self, options: TraceOptions) {
        self.trace_options = options;
    }

    /// Whether `input` stays within kafkascope's limits ([`crate::limits`])
    /// given what this simulation already holds: the records a send would
    /// add, the bytes of each, the consumers an addition would make. (The
    /// simulation refuses such an input anyway, with a
    /// [`TraceKind::LimitReached`] event; a driver asks first to answer with
    /// an error.)
    pub fn check_input(&self, input: &Input) -> Result<(), crate::limits::LimitExceeded> {
        use crate::limits::{
            at_most, MAX_CLUSTER_PARTITIONS, MAX_CONSUMERS, MAX_PARTITIONS_PER_TOPIC, MAX_RECORDS, MAX_RECORD_BYTES,
        };
        match input {
            Input::Produce { count, bytes, .. } => {
                at_most("bytes per record", u64::from(*bytes), u64::from(MAX_RECORD_BYTES))?;
                at_most(
                    "records produced",
                    self.records.len() as u64 + u64::from(*count),
                    MAX_RECORDS,
                )
            }
            Input::AddConsumer { .. } => at_most("consumers", self.consumers.len() as u64 + 1, MAX_CONSUMERS as u64),
            Input::PauseBroker { .. } | Input::PauseConsumer { .. } | Input::SlowNode { .. } => {
                let (what, duration) = input.duration().unwrap_or(("durationMs", 0));
                at_most(what, duration, crate::limits::MAX_RUN_MS)
            }
            Input::CreatePartitions { topic, count } => {
                at_most("partitions", u64::from(*count), u64::from(MAX_PARTITIONS_PER_TOPIC))?;
                let now = self.topic_partition_count(topic);
                at_most(
                    "partitions in the cluster",
                    self.controller.partitions.len() as u64 + u64::from(count.saturating_sub(now)),
                    MAX_CLUSTER_PARTITIONS,
                )
            }
            _ => Ok(()),
        }
    }

    /// Schedules an input at `at_ms` (not earlier than now).
    pub fn schedule(&mut self, input: ScheduledInput) {
        let at = input.at_ms.max(self.now);
        self.push(at, Event::Input(std::rc::Rc::new(input.input)));
    }

    /// The current virtual time.
    pub fn now(&self) -> Time {
        self.now
    }

    /// The configuration.
    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    /// Everything recorded so far.
    pub fn trace(&self) -> &[TraceEvent] {
        &self.trace
    }

    /// Moves the trace recorded since the last call out of the simulation
    /// (ids keep counting), so a long run can keep its trace elsewhere and
    /// snapshots stay small.
    pub fn take_trace(&mut self) -> Vec<TraceEvent> {
        let taken = std::mem::take(&mut self.trace);
        self.trace_base += taken.len() as TraceId;
        taken
    }

    /// Drops inputs scheduled after now: the first half of a fork.
    pub fn discard_future_inputs(&mut self) {
        let now = self.now;
        self.queue
            .retain(|&(time, _), event| !(time > now && matches!(event, Event::Input(_))));
    }

    /// Every record producers sent, by id.
    pub fn records(&self) -> &chunked::ChunkedVec<ProducedRecord> {
        &self.records
    }

    /// The ids of acknowledged records found lost, in order.
    pub fn lost_records(&self) -> Vec<RecordId> {
        self.records
            .iter()
            .enumerate()
            .filter(|(_, record)| record.lost)
            .map(|(id, _)| id as RecordId)
            .collect()
    }

    /// The brokers.
    pub fn brokers(&self) -> &BTreeMap<BrokerId, Broker> {
        &self.brokers
    }

    /// The controller.
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    /// What one event costs to process and check, in the unit
    /// [`crate::limits::MAX_STORY_WORK`] and [`crate::limits::MAX_LINK_WORK`]
    /// count: the invariants checked after every event walk every replica,
    /// so an event costs about as much as 256 replicas plus one per replica
    /// the controller has placed and per client (measured natively in the
    /// fuzzer's sweep, 2026-12-06: about 5 µs an event at the generated
    /// sizes, about 60 µs at 64 brokers with 3,000 replicas; the unit
    /// overestimates large clusters, which is the safe side). A driver multiplies it by the events it
    /// will play to bound work before doing it.
    pub fn event_cost(&self) -> u64 {
        256 + self.replica_count() + self.consumers.len() as u64 + self.producers.len() as u64
    }

    /// Replicas the controller has placed, over every partition.
    pub fn replica_count(&self) -> u64 {
        self.controller
            .partitions
            .values()
            .map(|registration| registration.replicas.len() as u64)
            .sum()
    }

    /// Events processed so far.
    pub fn events_processed(&self) -> u64 {
        self.events
    }

    /// Processes the next event. Returns `false` when nothing is left.
    pub fn step(&mut self) -> bool {
        if self
            .queue
            .first_key_value()
            .is_some_and(|(&(time, _), _)| time > crate::limits::MAX_RUN_MS)
        {
            self.reach_time_limit();
            return false;
        }
        let Some(((time, _), event)) = self.queue.pop_first() else {
            return false;
        };
        self.now = time;
        self.events += 1;
        self.current_cause = None;
        // A fetch or a produce request (or their answers), and the timers
        // of one partition's fetches and parked produces, change only that
        // partition's replication state, so the leader invariants need
        // re-checking only there. Client and group traffic that appends
        // nothing and the timers that only send requests change no
        // replica, leader or ISR at all. Anything else (inputs, controller
        // and quorum traffic, ISR checks, group joins and commits, which
        // append to __consumer_offsets) re-checks everything.
        // A produce request changes the partitions it carries batches for.
        let scope = match &event {
            Event::Deliver { message, .. } => match message {
                Message::Fetch { partition, .. }
                | Message::FetchResponse { partition, .. }
                | Message::ConsumerFetch { partition, .. }
                | Message::ConsumerFetchResponse { partition, .. } => Some(Touched::One(partition.clone())),
                Message::Produce { batches, .. } => Some(match batches.as_slice() {
                    [(partition, _)] => Touched::One(partition.clone()),
                    _ => Touched::Many(batches.iter().map(|(partition, _)| partition.clone()).collect()),
                }),
                _ => None,
            },
            Event::Timer { timer, .. } => match timer {
                Timer::FollowerFetch(partition)
                | Timer::FollowerFetchTimeout(partition, _)
                | Timer::DelayedFetchExpiry(partition, _)
                | Timer::ProduceExpiry(partition, _) => Some(Touched::One(partition.clone())),
                _ => None,
            },
            Event::Input(_) => None,
        };
        let clients_only = match &event {
            // A broker that loses a client's connection drops what the
            // client had waiting there (held fetches, parked produces): no
            // log, leader or ISR changes.
            Event::Deliver {
                message: Message::ConnectionClosed,
                from: NodeId::Producer(_) | NodeId::Consumer(_),
                to: NodeId::Broker(_),
                ..
            } => true,
            Event::Deliver { message, to, .. } => {
                matches!(to, NodeId::Producer(_) | NodeId::Consumer(_))
                    || matches!(
                        message,
                        Message::MetadataRequest
                            | Message::FindCoordinator { .. }
                            | Message::Heartbeat { .. }
                            | Message::OffsetFetch { .. }
                            | Message::ListOffsets { .. }
                            | Message::BrokerHeartbeatResponse { .. }
                    )
            }
            Event::Timer { timer, .. } => matches!(
                timer,
                Timer::BrokerHeartbeat
                    | Timer::ProducerDrain
                    | Timer::ProducerRequestTimeout(_)
                    | Timer::ProducerMetadataTimeout(_)
                    | Timer::ProducerMetadataRefresh
                    | Timer::ProducerMetadataMaxAge
                    | Timer::ConsumerMetadataMaxAge
                    | Timer::ConsumerHeartbeat
                    | Timer::ConsumerCommit
                    | Timer::ConsumerRetry
                    | Timer::ConsumerRequestTimeout(..)
                    | Timer::ConsumerMetadataRefresh
            ),
            Event::Input(_) => false,
        };
        match event {
            Event::Deliver {
                from,
                to,
                message,
                sent,
                sent_at,
                connection,
            } => self.deliver(from, to, message, sent, sent_at, connection),
            Event::Timer {
                node,
                incarnation,
                timer,
                cause,
            } => {
                self.current_cause = cause;
                self.fire_timer(node, incarnation, timer);
            }
            Event::Input(input) => self.apply_input(std::rc::Rc::unwrap_or_clone(input)),
        }
        self.hand_over_told_apps();
        self.check_invariants(match (&scope, clients_only) {
            (Some(touched), _) => monitor::CheckScope::Partitions(touched.as_slice()),
            (None, true) => monitor::CheckScope::ClientsOnly,
            (None, false) => monitor::CheckScope::Everything,
        });
        true
    }

    /// When the next event happens, if any.
    pub fn next_event_time(&self) -> Option<Time> {
        self.queue.first_key_value().map(|(&(time, _), _)| time)
    }

    /// Runs until virtual time `until_ms` (events at that time included).
    ///
    /// Simulated time stops at [`crate::limits::MAX_RUN_MS`]: a run asked to
    /// go further stops there, with a [`TraceKind::LimitReached`] event.
    pub fn run_until(&mut self, until_ms: Time) {
        let until_ms = if until_ms > crate::limits::MAX_RUN_MS {
            self.reach_time_limit();
            crate::limits::MAX_RUN_MS
        } else {
            until_ms
        };
        while let Some((&(time, _), _)) = self.queue.first_key_value() {
            if time > until_ms {
                break;
            }
            self.step();
        }
        self.now = self.now.max(until_ms);
    }

    /// [`Simulation::run_until`], but stops just after the first event
    /// that makes a trace event `stop` picks (chaos mode's "stop at the
    /// first anomaly"): that event's id, with the clock left at it.
    pub fn run_until_or(&mut self, until_ms: Time, stop: fn(&TraceKind) -> bool) -> Option<TraceId> {
        let until_ms = until_ms.min(crate::limits::MAX_RUN_MS);
        while let Some((&(time, _), _)) = self.queue.first_key_value() {
            if time > until_ms {
                break;
            }
            let before = self.trace.len();
            self.step();
            if let Some(offset) = self.trace[before.min(self.trace.len())..]
                .iter()
                .position(|event| stop(&event.kind))
            {
                return Some(self.trace_base + (before + offset) as TraceId);
            }
        }
        self.run_until(until_ms);
        None
    }

    fn reach_time_limit(&mut self) {
        if !self.at_time_limit {
            self.at_time_limit = true;
            self.record(TraceKind::LimitReached {
                what: "simulated time (ms)".to_string(),
                limit: crate::limits::MAX_RUN_MS,
            });
        }
    }

    /// Records acknowledged so far (cheap: counted as it happens).
    pub fn acknowledged_count(&self) -> u64 {
        self.acknowledged_count
    }

    /// Records whose delivery failed for good so far.
    pub fn failed_count(&self) -> u64 {
        self.failed_count
    }

    /// Marks a record acknowledged (at `offset`, or without one for acks=0).
    pub(crate) fn mark_acknowledged(&mut self, record: RecordId, offset: Option<u64>) {
        let produced = &mut self.records[record as usize];
        if produced.acknowledged.is_none() {
            self.acknowledged_count += 1;
            let producer = produced.producer;
            self.highlights.tally.entry(producer).or_default()[1] += 1;
        }
        produced.acknowledged = Some(offset);
    }

    /// The end-of-run counts.
    pub fn summary(&self) -> Summary {
        Summary {
            produced: self.records.len() as u64,
            acknowledged: self.acknowledged_count,
            lost: self.records.iter().filter(|record| record.lost).count() as u64,
            duplicated: self.monitor.duplicated_records(self),
            failed: self.failed_count,
            leader_elections: self.controller.elections,
            controller_elections: self.quorum.elections,
            invariant_violations: self.monitor.violations,
            events: self.events,
            time_ms: self.now,
        }
    }

    /// A hash of the trace recorded in this value (see [`trace::hash`]).
    pub fn trace_hash(&self) -> u64 {
        trace::hash(&self.trace)
    }

    // ----- plumbing shared by the node modules -----

    fn push(&mut self, time: Time, event: Event) {
        self.sequence += 1;
        self.queue.insert((time, self.sequence), event);
    }

    /// Records a trace event caused by the event being handled (held while
    /// the active controller decides, until the decision commits).
    pub(crate) fn record(&mut self, kind: TraceKind) -> TraceId {
        let id = self.trace_base + self.trace.len() as TraceId;
        self.highlights.note(self.now, &kind);
        self.note_history(&kind, id);
        self.trace.push(TraceEvent {
            id,
            time: self.now,
            cause: self.current_cause,
            kind,
        });
        id
    }

    /// Keeps the run's history from now on, for Jepsen's checks
    /// ([`Simulation::jepsen_verdict`]); the run itself is unchanged.
    pub fn keep_history(&mut self) {
        self.keep_history_up_to(crate::limits::MAX_HISTORY_OPERATIONS);
    }

    /// Operations the run's history holds (0 without one): what a check
    /// of Jepsen's costs, in proportion.
    pub fn history_operations(&self) -> usize {
        self.jepsen.as_ref().map_or(0, |recorder| recorder.operations())
    }

    /// [`Simulation::keep_history`], keeping at most `limit` operations
    /// (the live map keeps fewer, for its memory).
    pub fn keep_history_up_to(&mut self, limit: usize) {
        let limit = limit.min(crate::limits::MAX_HISTORY_OPERATIONS);
        self.jepsen
            .get_or_insert_with(|| Box::new(jepsen::Recorder::with_limit(limit)));
    }

    /// What Jepsen's checks say about the run so far, if its history is
    /// kept ([`Simulation::keep_history`]).
    pub fn jepsen_verdict(&self) -> Option<jepsen::Verdict> {
        let recorder = self.jepsen.as_ref()?;
        Some(
            recorder.verdict(
                self.records
                    .iter()
                    .enumerate()
                    .filter_map(|(id, record)| Some((record.producer, record.partition.clone()?, id as RecordId))),
                &checks::across_epoch_duplicate_records(self),
                &self.monitor.unchecked_sequences,
                &self.monitor.partitions_lost_to_power,
            ),
        )
    }

    /// The history the run keeps for Jepsen's checks, if any.
    pub fn jepsen_history(&self) -> Option<crate::history::History> {
        self.jepsen.as_deref().map(jepsen::Recorder::history)
    }

    /// The place the next trace event will take.
    pub(crate) fn next_trace_id(&self) -> TraceId {
        self.trace_base + self.trace.len() as TraceId
    }

    fn note_history(&mut self, kind: &TraceKind, id: TraceId) {
        if let Some(recorder) = self.jepsen.as_deref_mut() {
            // From the configuration: a producer's transactional id never
            // changes, and a producer whose handler runs is not in
            // `producers` meanwhile.
            let producers = &self.config.producers;
            recorder.note(kind, id, self.now, |producer| {
                producers
                    .get(producer as usize)
                    .is_some_and(|producer| producer.transactional_id.is_some())
            });
        }
    }

    /// Records a trace event with an explicit cause.
    pub(crate) fn record_caused(&mut self, cause: Option<TraceId>, kind: TraceKind) -> TraceId {
        let id = self.trace_base + self.trace.len() as TraceId;
        self.highlights.note(self.now, &kind);
        self.note_history(&kind, id);
        self.trace.push(TraceEvent {
            id,
            time: self.now,
            cause: cause.or(self.current_cause),
            kind,
        });
        id
    }

    /// The topic configuration of a partition.
    /// A partition's high watermark at its current leader, if it has one
    /// that is running.
    pub fn partition_high_watermark(&self, partition: &TopicPartition) -> Option<crate::protocol::Offset> {
        let leader = self.controller.partitions.get(partition)?.leader?;
        Some(self.brokers.get(&leader)?.logs.get(partition)?.high_watermark)
    }

    pub(crate) fn topic_config(&self, partition: &TopicPartition) -> Option<&config::TopicConfig> {
        self.config.topics.iter().find(|topic| *topic.name == *partition.topic)
    }

    /// The storage settings of a partition's logs: its topic's, or for the
    /// internal topics (`__consumer_offsets`, `__transaction_state`)
    /// Kafka's, which compact rather than delete.
    pub(crate) fn log_config(&self, partition: &TopicPartition) -> crate::storage::LogConfig {
        match self.topic_config(partition) {
            Some(topic) => topic.log_config(),
            None => crate::storage::LogConfig {
                cleanup_policy: crate::storage::CleanupPolicy::COMPACT,
                segment_bytes: self.config.offsets_topic_segment_bytes,
                ..crate::storage::LogConfig::default()
            },
        }
    }

    /// Registers a record a producer sent.
    /// (A tombstone if `tombstone`.)
    pub(crate) fn new_record_with(
        &mut self,
        producer: u32,
        key: Option<String>,
        bytes: u32,
        tombstone: bool,
    ) -> RecordId {
        self.highlights.tally.entry(producer).or_default()[0] += 1;
        self.records.push(ProducedRecord {
            producer,
            key: key.map(|key| std::rc::Rc::from(key.as_str())),
            bytes,
            partition: None,
            acknowledged: None,
            acks: None,
            failed: false,
            lost: false,
            source: None,
            dead_letter: None,
            timestamp: self.now,
            tombstone,
        });
        (self.records.len() - 1) as RecordId
    }
}

/// What an input does, as the trace says it (`kill broker-2`).
pub fn describe_input(input: &Input) -> String {
    match input {
        Input::Produce {
            producer, key, count, ..
        } => match key {
            Some(key) => format!(
                "producer-{producer} sends {count} record{} with key {key:?}",
                if *count == 1 { "" } else { "s" }
            ),
            None => format!(
                "producer-{producer} sends {count} record{} without a key",
                if *count == 1 { "" } else { "s" }
            ),
        },
        Input::KillBroker { broker } => format!("kill broker-{broker}"),
        Input::PowerLoss { brokers } => format!("cut the power of {}", trace::broker_names(brokers)),
        Input::RestartBroker { broker } => format!("restart broker-{broker}"),
        Input::StopBroker { broker } => format!("stop broker-{broker} gracefully (controlled shutdown)"),
        Input::PauseBroker { broker, duration_ms } => format!("pause broker-{broker} for {duration_ms} ms"),
        Input::CutLink { a, b } => format!("cut the link {a} <-> {b}"),
        Input::HealLink { a, b } => format!("heal the link {a} <-> {b}"),
        Input::Partition { side } => format!("partition the network: {side:?} on one side"),
        Input::HealNetwork => "heal the network".to_string(),
        Input::SlowNode { node, extra_latency_ms } => format!("slow {node} by {extra_latency_ms} ms"),
        Input::DropMessages { per_million } => format!("lose {per_million} messages per million"),
        Input::LoseProduceResponse { producer } => format!("lose the next produce response to producer-{producer}"),
        Input::StallProduce { producer, delay_ms } => {
            format!("producer-{producer}'s next produce request waits {delay_ms} ms in its broker's request queue")
        }
        Input::StallEndTxn { producer, delay_ms } => {
            format!("producer-{producer}'s next EndTxn request waits {delay_ms} ms in its coordinator's request queue")
        }
        Input::RestartProducer { producer } => format!("restart producer-{producer} as a new instance"),
        Input::PoisonRecords {
            topic,
            key,
            partition,
            offset,
        } => {
            let which = match (key, partition, offset) {
                (Some(key), _, _) => format!("with key {key:?}"),
                (None, Some(partition), Some(offset)) => format!("at offset {offset} of partition {partition}"),
                (None, Some(partition), None) => format!("of partition {partition}"),
                (None, None, _) => "at all".to_string(),
            };
            format!("from now on handlers fail on records of {topic} {which} (poison records)")
        }
        Input::CommitTransaction { producer } => format!("producer-{producer} commits its transaction"),
        Input::AbortTransaction { producer } => format!("producer-{producer} aborts its transaction"),
        Input::KillController { controller } => format!("kill controller-{controller}"),
        Input::RestartController { controller } => format!("restart controller-{controller}"),
        Input::StartConsumer { consumer } => format!("start consumer-{consumer}"),
        Input::StopConsumer { consumer } => format!("stop consumer-{consumer} (it leaves its group)"),
        Input::ProduceTombstone { producer, key } => format!("producer-{producer} sends a tombstone for key {key}"),
        Input::CrashConsumer { consumer } => format!("crash consumer-{consumer} (no goodbye)"),
        Input::PauseConsumer { consumer, duration_ms } => {
            format!("pause consumer-{consumer} for {duration_ms} ms (a garbage-collection pause)")
        }
        Input::AddConsumer { consumer } => format!(
            "add a consumer in group {} reading {}",
            consumer.group,
            consumer.topics.join(", ")
        ),
        Input::ElectLeaders {
            election_type,
            partitions,
        } => {
            let which = if partitions.is_empty() {
                "--all-topic-partitions".to_string()
            } else {
                partitions
                    .iter()
                    .map(|named| format!("{}-{}", named.topic, named.partition))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!("kafka-leader-election --election-type {election_type} {which}")
        }
        Input::CreatePartitions { topic, count } => {
            format!("kafka-topics --alter --topic {topic} --partitions {count}")
        }
        Input::SetConfig(change) => describe_change(change),
    }
}

fn describe_change(change: &ConfigChange) -> String {
    match change {
        ConfigChange::Acks { producer, acks } => format!(
            "set acks={} on producer-{producer}",
            match acks {
                crate::replication::high_watermark::Acks::None => "0",
                crate::replication::high_watermark::Acks::Leader => "1",
                crate::replication::high_watermark::Acks::All => "all",
            }
        ),
        ConfigChange::MinInsyncReplicas { topic, value } => format!("set min.insync.replicas={value} on topic {topic}"),
        ConfigChange::TopicStorage { topic, setting, value } => format!("set {setting}={value} on topic {topic}"),
        ConfigChange::CleanupPolicy { topic, policy } => format!("set cleanup.policy={policy} on topic {topic}"),
        ConfigChange::MinCleanableDirtyRatio { topic, ratio } => {
            format!("set min.cleanable.dirty.ratio={} on topic {topic}", ratio.0)
        }
        ConfigChange::Quota(quota) => {
            let entity = quota
                .client_id
                .as_ref()
                .map_or("every client id without its own (<default>)".to_string(), |id| {
                    format!("client.id {id}")
                });
            let rate = |rate: Option<u64>| rate.map_or("none".to_string(), |rate| format!("{rate} B/s"));
            format!(
                "set the quota of {entity}: producer_byte_rate {}, consumer_byte_rate {}",
                rate(quota.producer_byte_rate),
                rate(quota.consumer_byte_rate)
            )
        }
        ConfigChange::UncleanLeaderElection { enable } => format!("set unclean.leader.election.enable={enable}"),
        ConfigChange::TransactionVersion { level } => {
            format!("finalize the feature transaction.version={level} (kafka-features upgrade or downgrade)")
        }
        ConfigChange::TransactionPartitionVerification { enable } => {
            format!("set transaction.partition.verification.enable={enable}")
        }
        ConfigChange::ReplicaLagTimeMaxMs { value } => format!("set replica.lag.time.max.ms={value}"),
        ConfigChange::LingerMs { producer, value } => format!("set linger.ms={value} on producer-{producer}"),
        ConfigChange::ProcessingMsPerRecord { consumer, value } => {
            format!("set consumer-{consumer}'s handler to {value} ms per record")
        }
        ConfigChange::CommitMode { consumer, mode } => format!("consumer-{consumer} now uses {mode}"),
        ConfigChange::EnableIdempotence { producer, enable } => {
            format!("set enable.idempotence={enable} on producer-{producer}")
        }
        ConfigChange::IdempotentHandler { consumer, enable } => format!(
            "consumer-{consumer}'s handler {} records it already processed",
            if *enable { "skips" } else { "no longer skips" }
        ),
        ConfigChange::AutoOffsetReset { consumer, reset } => {
            format!("set auto.offset.reset={reset} on consumer-{consumer}")
        }
    }
}

/// The partitions one event can change.
enum Touched {
    One(TopicPartition),
    Many(Vec<TopicPartition>),
}

impl Touched {
    fn as_slice(&self) -> &[TopicPartition] {
        match self {
            Touched::One(partition) => std::slice::from_ref(partition),
            Touched::Many(partitions) => partitions,
        }
    }
}
