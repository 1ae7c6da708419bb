//! A producer client (`KafkaProducer`, `RecordAccumulator`, `Sender`):
//! metadata from a bootstrap broker, partitioning, batching by `linger.ms`
//! and `batch.size`, `acks`, retries with backoff until
//! `delivery.timeout.ms`, and idempotent sequence numbers.

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::Serialize;

use crate::partitioning::null_key::{NullKeyConfig, NullKeyPartitioner, PartitionState};
use crate::partitioning::partition_for_key;
use crate::protocol::{BrokerId, Offset, TopicPartition};
use crate::random::Rng;
use crate::replication::high_watermark::Acks;

use super::config::{ProducerConfig, QuotaType};
use super::contexts::ProducerContext;
use super::trace::TraceKind;
use super::types::{ErrorCode, Message, NodeId, ProducerBatch, RecordId, Time};
use super::Timer;

mod answers;
mod drain;
pub mod transactions;

/// `retry.backoff.max.ms` (1000).
const RETRY_BACKOFF_MAX_MS: u64 = 1_000;
/// `max.request.size` (1048576 bytes): a produce request takes batches
/// while their bytes (as the simulation counts them) fit, and at least one.
const MAX_REQUEST_SIZE: u64 = 1_048_576;

/// A batch in the accumulator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingBatch {
    /// Records and their sizes.
    pub records: Vec<(RecordId, u32)>,
    /// Bytes so far.
    pub bytes: u32,
    /// When it was created (for `linger.ms` and `delivery.timeout.ms`).
    pub created_ms: Time,
    /// Sends so far.
    pub attempts: u32,
    /// Not before this time (retry backoff).
    pub ready_at_ms: Time,
    /// The first record's sequence, fixed at the first send.
    pub sequence: Option<i32>,
    /// The producer id its sequence belongs to.
    pub producer_id: u64,
    /// The producer epoch its sequence belongs to.
    pub epoch: u16,
}

/// A produce request awaiting its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InFlight {
    /// Its batches, one per partition, to retry them.
    pub batches: Vec<(u32, PendingBatch)>,
    /// The broker it was sent to (its connection).
    pub broker: BrokerId,
    /// Throttle time the broker announced since it was sent: its timeout
    /// waits that much longer.
    pub throttled_ms: u64,
}

/// A producer's state.
#[derive(Debug, Clone, Serialize)]
pub struct Producer {
    /// Index among the configured producers.
    pub id: u32,
    /// Its settings (`acks` can change mid-run).
    pub config: ProducerConfig,
    /// The topic's name, shared by every record's partition.
    #[serde(skip)]
    topic: crate::protocol::TopicName,
    /// Leader and epoch per partition of its topic, once known.
    pub leaders: Option<BTreeMap<u32, (Option<BrokerId>, u32)>>,
    /// The newest leader epoch seen for each partition, and the leader
    /// at it: kept when `leaders` is invalidated, as Kafka's
    /// `Metadata#lastSeenLeaderEpochs` is.
    #[serde(skip)]
    leader_epochs: BTreeMap<u32, u32>,
    #[serde(skip)]
    known_leaders: BTreeMap<u32, (Option<BrokerId>, u32)>,
    /// A metadata request is out (its id).
    pub metadata_in_flight: Option<u64>,
    /// The broker the metadata request in flight went to.
    pub metadata_broker: Option<BrokerId>,
    /// Records waiting for metadata before they can be partitioned.
    pub waiting: VecDeque<(RecordId, Option<String>, u32)>,
    /// The accumulator: batches per partition, oldest first.
    pub batches: BTreeMap<u32, VecDeque<PendingBatch>>,
    /// Produce requests in flight.
    pub in_flight: BTreeMap<u64, InFlight>,
    /// Brokers that throttled it (over its produce quota), until when.
    pub throttled_until: BTreeMap<BrokerId, Time>,
    /// The producer id `InitProducerId` gave it (idempotent producers).
    pub producer_id: Option<u64>,
    /// An `InitProducerId` request is out: its id and the broker.
    pub init_in_flight: Option<(u64, BrokerId)>,
    /// A failed `InitProducerId` is retried from this time on.
    pub init_retry_at: Time,
    /// Where the next drain for each broker starts among the partitions it
    /// leads (`RecordAccumulator`'s per-node drain index).
    pub drain_index: BTreeMap<BrokerId, usize>,
    /// Next sequence per partition.
    pub sequences: BTreeMap<u32, i32>,
    /// The producer epoch (bumped when a sequenced batch fails for good,
    /// KIP-360, so the partitions' sequences start again at 0).
    pub epoch: u16,
    /// Metadata refreshes in a row that found a partition without a
    /// leader (the backoff grows with them).
    pub metadata_retries: u32,
    /// A metadata refresh is scheduled.
    pub refresh_scheduled: bool,
    /// When its metadata last came back (`metadata.max.age.ms` counts
    /// from here).
    pub metadata_at: u64,
    /// The last acknowledged sequence per partition in this epoch
    /// (`TxnPartitionEntry.lastAckedSequence`).
    pub acked_sequences: BTreeMap<u32, i32>,
    /// A transactional producer's transaction state (`transactional.id` set).
    pub txn: Option<transactions::TxnClient>,
    pub(crate) next_request: u64,
    pub(crate) bootstrap_attempt: u32,
    /// Its process died (with the consumer app it belongs to) and has not
    /// started again: it does nothing.
    pub crashed: bool,
    #[serde(skip)]
    partitioner: NullKeyPartitioner,
    #[serde(skip)]
    rng: Rng,
}

impl Producer {
    /// A producer that has not talked to anyone yet.
    pub fn new(id: u32, config: ProducerConfig, rng: Rng) -> Producer {
        let topic = crate::protocol::TopicName::from(config.topic.as_str());
        Producer::build(id, config, rng, topic)
    }

    fn build(id: u32, config: ProducerConfig, rng: Rng, topic: crate::protocol::TopicName) -> Producer {
        let partitioner = NullKeyPartitioner::new(
            config.null_key,
            NullKeyConfig {
                batch_size: config.batch_size,
                adaptive: true,
            },
        );
        let txn = config.transactional_id.clone().map(transactions::TxnClient::new);
        Producer {
            id,
            topic,
            config,
            leaders: None,
            leader_epochs: BTreeMap::new(),
            known_leaders: BTreeMap::new(),
            metadata_in_flight: None,
            metadata_broker: None,
            waiting: VecDeque::new(),
            batches: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            throttled_until: BTreeMap::new(),
            producer_id: None,
            init_in_flight: None,
            init_retry_at: 0,
            drain_index: BTreeMap::new(),
            sequences: BTreeMap::new(),
            epoch: 0,
            metadata_retries: 0,
            refresh_scheduled: false,
            metadata_at: 0,
            acked_sequences: BTreeMap::new(),
            txn,
            next_request: 0,
            bootstrap_attempt: 0,
            crashed: false,
            partitioner,
            rng,
        }
    }

    /// What holds its place while one of its handlers runs (nothing reads
    /// it: the simulation hands the producer to its handlers by value).
    /// Allocates nothing.
    pub(crate) fn stand_in(&self) -> Producer {
        Producer::build(
            self.id,
            ProducerConfig::new(String::new()),
            Rng::new(0, 0),
            self.topic.clone(),
        )
    }

    /// Uses the simulation's shared allocation of its topic's name.
    pub(crate) fn share_topic(&mut self, topic: crate::protocol::TopicName) {
        if *topic == *self.topic {
            self.topic = topic;
        }
    }

    fn idempotent(&self) -> bool {
        self.config.idempotence()
    }

    /// Its topic's name.
    pub(crate) fn topic_name(&self) -> crate::protocol::TopicName {
        self.topic.clone()
    }

    fn partition_key(&self, partition: u32) -> TopicPartition {
        TopicPartition {
            topic: self.topic.clone(),
            partition,
        }
    }

    /// The application sends `count` records (a tombstone: one with a
    /// null value).
    pub(crate) fn send(
        &mut self,
        context: &mut ProducerContext,
        key: Option<String>,
        count: u32,
        bytes: u32,
        tombstone: bool,
    ) {
        // kafkascope's limits ([`crate::limits`]): the whole send is refused.
        let produced = context.records_produced();
        if produced + u64::from(count) > crate::limits::MAX_RECORDS {
            context.trace(TraceKind::LimitReached {
                what: "records produced".to_string(),
                limit: crate::limits::MAX_RECORDS,
            });
            return;
        }
        if bytes > crate::limits::MAX_RECORD_BYTES {
            context.trace(TraceKind::LimitReached {
                what: "bytes per record".to_string(),
                limit: u64::from(crate::limits::MAX_RECORD_BYTES),
            });
            return;
        }
        let fenced = self
            .txn
            .as_ref()
            .is_some_and(|txn| txn.phase == transactions::TxnPhase::Fenced);
        let mut refused = Vec::new();
        for _ in 0..count {
            let record = context.new_record(key.clone(), bytes, tombstone);
            if fenced {
                refused.push(record);
                continue;
            }
            if let Some(entry) = self.txn_hold((record, key.clone(), bytes)) {
                self.waiting.push_back(entry);
            }
        }
        if !refused.is_empty() {
            // A fenced producer is closed: every send fails.
            self.fail_records(context, 0, refused, ErrorCode::ProducerFenced);
        }
        self.partition_waiting(context);
        self.drain(context);
    }

    /// One record sent by the app; its id, unless nothing was sent (a
    /// crashed producer, a limit).
    pub(crate) fn send_one(
        &mut self,
        context: &mut ProducerContext,
        key: Option<String>,
        bytes: u32,
    ) -> Option<RecordId> {
        if self.crashed {
            return None;
        }
        let before = context.records_produced();
        self.send(context, key, 1, bytes, false);
        (context.records_produced() > before).then_some(before as RecordId)
    }

    /// The producer's process dies (with its app): what it buffered and
    /// what it had in flight is gone, its connections break, and it stays
    /// down until [`revive`](Self::revive). A transaction it left open
    /// stays open on the coordinator.
    pub(crate) fn crash(&mut self, context: &mut ProducerContext) {
        if self.crashed {
            return;
        }
        context.crashed();
        // Sends that had not completed never will: they fail with the
        // process (nothing was acknowledged to it).
        let mut gone: Vec<RecordId> = self.waiting.iter().map(|(record, _, _)| *record).collect();
        gone.extend(
            self.batches
                .values()
                .flatten()
                .flat_map(|batch| batch.records.iter().map(|(record, _)| *record)),
        );
        gone.extend(
            self.in_flight
                .values()
                .flat_map(|request| request.batches.iter())
                .flat_map(|(_, batch)| batch.records.iter().map(|(record, _)| *record)),
        );
        if let Some(txn) = &self.txn {
            gone.extend(txn.held.iter().map(|(record, _, _)| *record));
        }
        for record in gone {
            context.lost_with_process(record);
        }
        let mut fresh = Producer::build(self.id, self.config.clone(), self.rng.clone(), self.topic.clone());
        fresh.next_request = self.next_request;
        fresh.bootstrap_attempt = self.bootstrap_attempt;
        fresh.crashed = true;
        *self = fresh;
        context.break_connections();
    }

    /// A crashed producer's process starts again, as a new instance (a
    /// transactional one calls `initTransactions()` first).
    pub(crate) fn revive(&mut self, context: &mut ProducerContext) {
        if !self.crashed {
            return;
        }
        self.crashed = false;
        self.drain(context);
    }

    /// `enable.idempotence` switched mid-run: on, the producer asks for a
    /// new producer id before its next batch and numbers batches from 0,
    /// as a new instance would; off, batches not yet sent go without a
    /// sequence.
    pub(crate) fn set_idempotence(&mut self, context: &mut ProducerContext, enable: bool) {
        let was = self.idempotent();
        self.config.enable_idempotence = Some(enable);
        if enable && !was {
            self.producer_id = None;
            self.epoch = 0;
            self.sequences.clear();
            self.acked_sequences.clear();
        }
        self.drain(context);
    }

    fn request_metadata(&mut self, context: &mut ProducerContext) {
        if self.metadata_in_flight.is_some() {
            return;
        }
        self.next_request += 1;
        let request = self.next_request;
        self.metadata_in_flight = Some(request);
        // Bootstrap servers are tried in turn.
        let broker = self.bootstrap_attempt % context.brokers() + 1;
        self.bootstrap_attempt += 1;
        self.metadata_broker = Some(broker);
        context.send(broker, Message::MetadataRequest);
        context.timer(1_000, Timer::ProducerMetadataTimeout(request));
    }

    /// Sends `InitProducerId` to the least loaded broker
    /// (`NetworkClient#leastLoadedNode`: fewest requests in flight, ties
    /// taken in turn), unless one is out or a failed one waits for its
    /// retry backoff.
    fn init_producer_id(&mut self, context: &mut ProducerContext) {
        let now = context.now();
        let brokers = context.brokers();
        if self.init_in_flight.is_some() || now < self.init_retry_at || brokers == 0 {
            return;
        }
        let start = self.bootstrap_attempt;
        self.bootstrap_attempt += 1;
        let load = |broker: BrokerId| {
            self.in_flight
                .values()
                .filter(|request| request.broker == broker)
                .count()
                + usize::from(self.metadata_in_flight.is_some() && self.metadata_broker == Some(broker))
        };
        let broker = (0..brokers)
            .map(|offset| (start + offset) % brokers + 1)
            .min_by_key(|&broker| load(broker))
            .expect("at least one broker");
        self.next_request += 1;
        let request = self.next_request;
        self.init_in_flight = Some((request, broker));
        let timeout = self.config.request_timeout_ms;
        let transaction_timeout_ms = self.config.transaction_timeout_ms;
        context.send(
            broker,
            Message::InitProducerId {
                request,
                transactional_id: None,
                transaction_timeout_ms,
                expected: None,
            },
        );
        context.timer(timeout, Timer::ProducerRequestTimeout(request));
    }

    /// `InitProducerId` failed (a disconnect, a timeout, an error): it is
    /// enqueued again and sent after `retry.backoff.ms`
    /// (`TxnRequestHandler#reenqueue`, `Sender#maybeSendAndPollTransactionalRequest`).
    fn init_failed(&mut self, context: &mut ProducerContext) {
        self.init_in_flight = None;
        let backoff = self.config.retry_backoff_ms;
        self.init_retry_at = context.now() + backoff;
        context.timer(backoff, Timer::ProducerDrain);
    }

    /// A message from a broker.
    pub(crate) fn receive(&mut self, context: &mut ProducerContext, from: NodeId, message: Message) {
        if self.crashed {
            return;
        }
        if self.txn_receive(context, &message) {
            return;
        }
        match message {
            // The broker asked for metadata is gone (connection refused):
            // Kafka's client asks another node at once (`leastLoadedNode`
            // skips nodes in reconnect backoff).
            // Every request in flight on a broken connection fails with a
            // disconnect (`NetworkClient#handleDisconnections`): produce
            // requests are retried (NETWORK_EXCEPTION, which also asks for
            // new metadata), a metadata request goes to another node.
            Message::ConnectionClosed => self.connection_closed(context, from),
            Message::MetadataResponse { leaders } => self.metadata_answer(context, leaders),
            // One answer for every partition of the request; each
            // partition's result is handled on its own (`Sender#handleProduceResponse`).
            Message::ProduceResponse {
                request,
                responses,
                throttle_time_ms,
            } => self.produce_answer(context, request, responses, throttle_time_ms),
            Message::InitProducerIdResponse { request, result, .. } => {
                if self.init_in_flight.is_none_or(|(waiting, _)| waiting != request) {
                    return;
                }
                match result {
                    Ok((producer_id, epoch)) => {
                        self.init_in_flight = None;
                        self.producer_id = Some(producer_id);
                        self.epoch = epoch;
                        self.sequences.clear();
                        self.acked_sequences.clear();
                        self.drain(context);
                    }
                    // Retriable errors are retried (`InitProducerIdHandler#handleResponse`).
                    Err(_) => self.init_failed(context),
                }
            }
            _ => {}
        }
    }

    /// A broken connection to a broker: what was in flight on it fails and is
    /// retried, and metadata is asked for again.
    fn connection_closed(&mut self, context: &mut ProducerContext, from: NodeId) {
        let NodeId::Broker(broker) = from else { return };
        self.connection_lost(context, broker, ErrorCode::NetworkException);
    }

    /// The connection to `broker` is gone, closed by the broker or by the
    /// producer: every request in flight on it fails, its batches with
    /// `error` (`NetworkClient#processDisconnection`; `Sender` answers a
    /// timed-out connection's batches REQUEST_TIMED_OUT, a broken one's
    /// NETWORK_EXCEPTION), and metadata is asked for again.
    fn connection_lost(&mut self, context: &mut ProducerContext, broker: BrokerId, error: ErrorCode) {
        if self.metadata_in_flight.is_some() && self.metadata_broker == Some(broker) {
            self.metadata_in_flight = None;
            self.request_metadata(context);
        }
        if self.init_in_flight.is_some_and(|(_, to)| to == broker) {
            self.init_failed(context);
        }
        self.txn_disconnected(context, broker);
        let lost: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, request)| request.broker == broker)
            .map(|(&request, _)| request)
            .collect();
        for request in lost {
            if let Some(in_flight) = self.in_flight.remove(&request) {
                for (partition, batch) in in_flight.batches {
                    self.retry_or_fail(context, partition, batch, error);
                }
            }
        }
        // A disconnect also asks for new metadata
        // (`DefaultMetadataUpdater#handleServerDisconnect`): an
        // acks=0 producer learns of a dead leader this way.
        let leads = self
            .leaders
            .as_ref()
            .is_some_and(|leaders| leaders.values().any(|(leader, _)| *leader == Some(broker)));
        if leads {
            self.schedule_refresh(context);
        }
        self.drain(context);
    }

    /// A timer of its own.
    pub(crate) fn timer(&mut self, context: &mut ProducerContext, timer: Timer) {
        let now = context.now();
        match timer {
            Timer::ProducerDrain => self.drain(context),
            Timer::ProducerMetadataRefresh => {
                self.refresh_scheduled = false;
                self.request_metadata(context);
                self.drain(context);
            }
            // `metadata.max.age.ms` (`Metadata#timeToNextUpdate`): metadata
            // older than that is refreshed even when nothing failed; this is
            // how a producer finds partitions added to its topic.
            Timer::ProducerMetadataMaxAge => {
                let max_age = self.config.metadata_max_age_ms;
                let due = self.metadata_at + max_age;
                if due <= now {
                    self.request_metadata(context);
                }
                let next = if due <= now { max_age } else { due - now };
                context.timer(next, Timer::ProducerMetadataMaxAge);
            }
            Timer::ProducerRequestTimeout(request) if self.txn_waits_for(request) => {
                let broker = self
                    .txn
                    .as_ref()
                    .and_then(|txn| txn.in_flight.as_ref().map(|&(_, to, _)| to));
                match broker {
                    // As for a produce request (`NetworkClient#handleTimedOutRequests`):
                    // the connection closes, and everything in flight on it fails.
                    Some(broker) => {
                        context.close_connection(broker);
                        self.connection_lost(context, broker, ErrorCode::RequestTimedOut);
                    }
                    None => self.txn_lost(context, true),
                }
            }
            Timer::ProducerRequestTimeout(request) => {
                if self.init_in_flight.is_some_and(|(waiting, _)| waiting == request) {
                    self.init_failed(context);
                } else if let Some(extra) = self
                    .in_flight
                    .get_mut(&request)
                    .map(|in_flight| std::mem::take(&mut in_flight.throttled_ms))
                    .filter(|extra| *extra > 0)
                {
                    context.timer(extra, Timer::ProducerRequestTimeout(request));
                } else if let Some(broker) = self.in_flight.get(&request).map(|sent| sent.broker) {
                    // `NetworkClient#handleTimedOutRequests` closes the
                    // connection: everything in flight on it fails, not
                    // only the request that timed out.
                    context.close_connection(broker);
                    self.connection_lost(context, broker, ErrorCode::RequestTimedOut);
                }
            }
            Timer::ProducerMetadataTimeout(request) => {
                if request == 0 || self.metadata_in_flight == Some(request) {
                    self.metadata_in_flight = None;
                    if self.leaders.is_none() {
                        self.request_metadata(context);
                    }
                }
                self.drain(context);
            }
            _ => {}
        }
    }
}
