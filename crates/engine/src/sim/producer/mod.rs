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
use super::trace::TraceKind;
use super::types::{ErrorCode, Message, NodeId, ProducerBatch, RecordId, Time};
use super::{Simulation, Timer};

mod answers;
mod drain;

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
    pub txn: Option<super::txn_client::TxnClient>,
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
        let partitioner = NullKeyPartitioner::new(
            config.null_key,
            NullKeyConfig {
                batch_size: config.batch_size,
                adaptive: true,
            },
        );
        let txn = config.transactional_id.clone().map(super::txn_client::TxnClient::new);
        Producer {
            id,
            topic: crate::protocol::TopicName::from(config.topic.as_str()),
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
}

impl Simulation {
    fn producer_node(id: u32) -> NodeId {
        NodeId::Producer(id)
    }

    fn partition_key(&self, producer: u32, partition: u32) -> TopicPartition {
        TopicPartition {
            topic: self.producers[producer as usize].topic.clone(),
            partition,
        }
    }

    /// A producer's `client.id`: as configured, else `producer-N`.
    pub(crate) fn producer_client_id(&self, producer: u32) -> String {
        self.producers
            .get(producer as usize)
            .and_then(|state| state.config.client_id.clone())
            .unwrap_or_else(|| format!("producer-{producer}"))
    }

    /// The `Produce` input: records enter the producer.
    pub(crate) fn producer_send(&mut self, producer: u32, key: Option<String>, count: u32, bytes: u32) {
        self.producer_send_with(producer, key, count, bytes, false);
    }

    /// The `ProduceTombstone` input: one record with a null value.
    pub(crate) fn producer_send_tombstone(&mut self, producer: u32, key: String) {
        self.producer_send_with(producer, Some(key), 1, 0, true);
    }

    fn producer_send_with(&mut self, producer: u32, key: Option<String>, count: u32, bytes: u32, tombstone: bool) {
        if producer as usize >= self.producers.len() {
            return;
        }
        // kafkascope's limits ([`crate::limits`]): the whole send is refused.
        let produced = self.records.len() as u64;
        if produced + u64::from(count) > crate::limits::MAX_RECORDS {
            self.record(TraceKind::LimitReached {
                what: "records produced".to_string(),
                limit: crate::limits::MAX_RECORDS,
            });
            return;
        }
        if bytes > crate::limits::MAX_RECORD_BYTES {
            self.record(TraceKind::LimitReached {
                what: "bytes per record".to_string(),
                limit: u64::from(crate::limits::MAX_RECORD_BYTES),
            });
            return;
        }
        let fenced = self.producers[producer as usize]
            .txn
            .as_ref()
            .is_some_and(|txn| txn.phase == super::txn_client::TxnPhase::Fenced);
        let mut refused = Vec::new();
        for _ in 0..count {
            let record = self.new_record_with(producer, key.clone(), bytes, tombstone);
            if fenced {
                refused.push(record);
                continue;
            }
            if let Some(entry) = self.producer_txn_hold(producer, (record, key.clone(), bytes)) {
                self.producers[producer as usize].waiting.push_back(entry);
            }
        }
        if !refused.is_empty() {
            // A fenced producer is closed: every send fails.
            self.producer_fail_records(producer, 0, refused, ErrorCode::ProducerFenced);
        }
        self.producer_partition_waiting(producer);
        self.producer_drain(producer);
    }

    /// One output record of a consume-transform-produce handler, made
    /// from record `source` (same key and size).
    pub(crate) fn producer_send_derived(&mut self, producer: u32, source: RecordId, key: Option<String>, bytes: u32) {
        if let Some(made) = self.producer_send_one(producer, key, bytes) {
            self.records[made as usize].source = Some(source);
        }
    }

    /// A dead letter: record `source` again (same key and size) with
    /// headers saying where it came from and why; returns its id.
    pub(crate) fn producer_send_dead_letter(
        &mut self,
        producer: u32,
        source: RecordId,
        headers: super::DeadLetterHeaders,
    ) -> Option<RecordId> {
        let (key, bytes) = match self.records.get(source as usize) {
            Some(record) => (record.key.as_ref().map(|key| key.to_string()), record.bytes),
            None => (None, 100),
        };
        let made = self.producer_send_one(producer, key, bytes)?;
        self.records[made as usize].dead_letter = Some(std::rc::Rc::new(headers));
        Some(made)
    }

    /// One record sent by the app through `producer`; its id, unless
    /// nothing was sent (a crashed producer, a limit).
    fn producer_send_one(&mut self, producer: u32, key: Option<String>, bytes: u32) -> Option<RecordId> {
        if self.producers.get(producer as usize).is_none_or(|state| state.crashed) {
            return None;
        }
        let before = self.records.len();
        self.producer_send(producer, key, 1, bytes);
        (self.records.len() > before).then_some(before as RecordId)
    }

    /// The producer's process dies (with its app): what it buffered and
    /// what it had in flight is gone, its connections break, and it stays
    /// down until [`producer_revive`](Self::producer_revive). A
    /// transaction it left open stays open on the coordinator.
    pub(crate) fn producer_crash(&mut self, producer: u32) {
        let index = producer as usize;
        let Some(state) = self.producers.get(index) else { return };
        if state.crashed {
            return;
        }
        let (next_id, now) = (self.next_trace_id(), self.now);
        if let Some(recorder) = self.jepsen.as_deref_mut() {
            recorder.producer_crashed(producer, next_id, now);
        }
        // Sends that had not completed never will: they fail with the
        // process (nothing was acknowledged to it).
        let mut gone: Vec<RecordId> = state.waiting.iter().map(|(record, _, _)| *record).collect();
        gone.extend(
            state
                .batches
                .values()
                .flatten()
                .flat_map(|batch| batch.records.iter().map(|(record, _)| *record)),
        );
        gone.extend(
            state
                .in_flight
                .values()
                .flat_map(|request| request.batches.iter())
                .flat_map(|(_, batch)| batch.records.iter().map(|(record, _)| *record)),
        );
        if let Some(txn) = &state.txn {
            gone.extend(txn.held.iter().map(|(record, _, _)| *record));
        }
        for record in gone {
            if !self.records[record as usize].failed && self.records[record as usize].acknowledged.is_none() {
                self.records[record as usize].failed = true;
                self.failed_count += 1;
                self.highlights.tally.entry(producer).or_default()[2] += 1;
            }
        }
        let state = &self.producers[index];
        let mut fresh = Producer::new(state.id, state.config.clone(), state.rng.clone());
        fresh.topic = state.topic.clone();
        fresh.next_request = state.next_request;
        fresh.bootstrap_attempt = state.bootstrap_attempt;
        fresh.crashed = true;
        self.producers[index] = fresh;
        for broker in 1..=self.config.brokers {
            self.connection_reset(Self::producer_node(producer), NodeId::Broker(broker));
        }
    }

    /// A crashed producer's process starts again, as a new instance (a
    /// transactional one calls `initTransactions()` first).
    pub(crate) fn producer_revive(&mut self, producer: u32) {
        let Some(state) = self.producers.get_mut(producer as usize) else {
            return;
        };
        if !state.crashed {
            return;
        }
        state.crashed = false;
        self.producer_drain(producer);
    }

    /// `enable.idempotence` switched mid-run: on, the producer asks for a
    /// new producer id before its next batch and numbers batches from 0,
    /// as a new instance would; off, batches not yet sent go without a
    /// sequence.
    pub(crate) fn producer_set_idempotence(&mut self, producer: u32, enable: bool) {
        let Some(state) = self.producers.get_mut(producer as usize) else {
            return;
        };
        let was = state.idempotent();
        state.config.enable_idempotence = Some(enable);
        if enable && !was {
            state.producer_id = None;
            state.epoch = 0;
            state.sequences.clear();
            state.acked_sequences.clear();
        }
        self.producer_drain(producer);
    }

    fn producer_request_metadata(&mut self, producer: u32) {
        let state = &mut self.producers[producer as usize];
        if state.metadata_in_flight.is_some() {
            return;
        }
        state.next_request += 1;
        let request = state.next_request;
        state.metadata_in_flight = Some(request);
        // Bootstrap servers are tried in turn.
        let broker = state.bootstrap_attempt % self.config.brokers + 1;
        state.bootstrap_attempt += 1;
        state.metadata_broker = Some(broker);
        self.send(
            Self::producer_node(producer),
            NodeId::Broker(broker),
            Message::MetadataRequest,
        );
        self.schedule_timer(
            Self::producer_node(producer),
            0,
            1_000,
            Timer::ProducerMetadataTimeout(request),
        );
    }

    /// Sends `InitProducerId` to the least loaded broker
    /// (`NetworkClient#leastLoadedNode`: fewest requests in flight, ties
    /// taken in turn), unless one is out or a failed one waits for its
    /// retry backoff.
    fn producer_init_producer_id(&mut self, producer: u32) {
        let index = producer as usize;
        let now = self.now;
        let brokers = self.config.brokers;
        let state = &mut self.producers[index];
        if state.init_in_flight.is_some() || now < state.init_retry_at || brokers == 0 {
            return;
        }
        let start = state.bootstrap_attempt;
        state.bootstrap_attempt += 1;
        let load = |broker: BrokerId| {
            state
                .in_flight
                .values()
                .filter(|request| request.broker == broker)
                .count()
                + usize::from(state.metadata_in_flight.is_some() && state.metadata_broker == Some(broker))
        };
        let broker = (0..brokers)
            .map(|offset| (start + offset) % brokers + 1)
            .min_by_key(|&broker| load(broker))
            .expect("at least one broker");
        state.next_request += 1;
        let request = state.next_request;
        state.init_in_flight = Some((request, broker));
        let timeout = state.config.request_timeout_ms;
        let transaction_timeout_ms = state.config.transaction_timeout_ms;
        self.send(
            Self::producer_node(producer),
            NodeId::Broker(broker),
            Message::InitProducerId {
                request,
                transactional_id: None,
                transaction_timeout_ms,
                expected: None,
            },
        );
        self.schedule_timer(
            Self::producer_node(producer),
            0,
            timeout,
            Timer::ProducerRequestTimeout(request),
        );
    }

    /// `InitProducerId` failed (a disconnect, a timeout, an error): it is
    /// enqueued again and sent after `retry.backoff.ms`
    /// (`TxnRequestHandler#reenqueue`, `Sender#maybeSendAndPollTransactionalRequest`).
    fn producer_init_failed(&mut self, producer: u32) {
        let state = &mut self.producers[producer as usize];
        state.init_in_flight = None;
        let backoff = state.config.retry_backoff_ms;
        state.init_retry_at = self.now + backoff;
        self.schedule_timer(Self::producer_node(producer), 0, backoff, Timer::ProducerDrain);
    }

    pub(crate) fn producer_receive(&mut self, producer: u32, from: NodeId, message: Message) {
        let index = producer as usize;
        if self.producers[index].crashed {
            return;
        }
        if self.producer_txn_receive(producer, &message) {
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
            Message::ConnectionClosed => self.producer_connection_closed(producer, from),
            Message::MetadataResponse { leaders } => self.producer_metadata_answer(producer, leaders),
            // One answer for every partition of the request; each
            // partition's result is handled on its own (`Sender#handleProduceResponse`).
            // The sender handles the whole answer before the application
            // hears of a fatal error (its thread sees the failed futures
            // afterwards, `Sender#completeBatch`): every partition's batch
            // fails first.
            Message::ProduceResponse {
                request,
                responses,
                throttle_time_ms,
            } => {
                self.producer_told_app = Some(Vec::new());
                self.producer_produce_answer(producer, request, responses, throttle_time_ms);
                for (producer, outcome) in self.producer_told_app.take().unwrap_or_default() {
                    self.consumer_output_transaction_ended(producer, outcome);
                }
            }
            Message::InitProducerIdResponse { request, result, .. } => {
                if self.producers[index]
                    .init_in_flight
                    .is_none_or(|(waiting, _)| waiting != request)
                {
                    return;
                }
                match result {
                    Ok((producer_id, epoch)) => {
                        let state = &mut self.producers[index];
                        state.init_in_flight = None;
                        state.producer_id = Some(producer_id);
                        state.epoch = epoch;
                        state.sequences.clear();
                        state.acked_sequences.clear();
                        self.producer_drain(producer);
                    }
                    // Retriable errors are retried (`InitProducerIdHandler#handleResponse`).
                    Err(_) => self.producer_init_failed(producer),
                }
            }
            _ => {}
        }
    }

    /// A broken connection to a broker: what was in flight on it fails and is
    /// retried, and metadata is asked for again.
    fn producer_connection_closed(&mut self, producer: u32, from: NodeId) {
        let NodeId::Broker(broker) = from else { return };
        self.producer_connection_lost(producer, broker, ErrorCode::NetworkException);
    }

    /// The connection to `broker` is gone, closed by the broker or by the
    /// producer: every request in flight on it fails, its batches with
    /// `error` (`NetworkClient#processDisconnection`; `Sender` answers a
    /// timed-out connection's batches REQUEST_TIMED_OUT, a broken one's
    /// NETWORK_EXCEPTION), and metadata is asked for again.
    fn producer_connection_lost(&mut self, producer: u32, broker: BrokerId, error: ErrorCode) {
        let index = producer as usize;
        let state = &mut self.producers[index];
        if state.metadata_in_flight.is_some() && state.metadata_broker == Some(broker) {
            state.metadata_in_flight = None;
            self.producer_request_metadata(producer);
        }
        if self.producers[index].init_in_flight.is_some_and(|(_, to)| to == broker) {
            self.producer_init_failed(producer);
        }
        self.producer_txn_disconnected(producer, broker);
        let lost: Vec<u64> = self.producers[index]
            .in_flight
            .iter()
            .filter(|(_, request)| request.broker == broker)
            .map(|(&request, _)| request)
            .collect();
        for request in lost {
            if let Some(in_flight) = self.producers[index].in_flight.remove(&request) {
                for (partition, batch) in in_flight.batches {
                    self.producer_retry_or_fail(producer, partition, batch, error);
                }
            }
        }
        // A disconnect also asks for new metadata
        // (`DefaultMetadataUpdater#handleServerDisconnect`): an
        // acks=0 producer learns of a dead leader this way.
        let leads = self.producers[index]
            .leaders
            .as_ref()
            .is_some_and(|leaders| leaders.values().any(|(leader, _)| *leader == Some(broker)));
        if leads {
            self.producer_schedule_refresh(producer);
        }
        self.producer_drain(producer);
    }

    pub(crate) fn producer_timer(&mut self, producer: u32, timer: Timer) {
        let index = producer as usize;
        match timer {
            Timer::ProducerDrain => self.producer_drain(producer),
            Timer::ProducerMetadataRefresh => {
                self.producers[index].refresh_scheduled = false;
                self.producer_request_metadata(producer);
                self.producer_drain(producer);
            }
            // `metadata.max.age.ms` (`Metadata#timeToNextUpdate`): metadata
            // older than that is refreshed even when nothing failed; this is
            // how a producer finds partitions added to its topic.
            Timer::ProducerMetadataMaxAge => {
                let max_age = self.producers[index].config.metadata_max_age_ms;
                let due = self.producers[index].metadata_at + max_age;
                if due <= self.now {
                    self.producer_request_metadata(producer);
                }
                let next = if due <= self.now { max_age } else { due - self.now };
                self.schedule_timer(Self::producer_node(producer), 0, next, Timer::ProducerMetadataMaxAge);
            }
            Timer::ProducerRequestTimeout(request) if self.producer_txn_waits_for(producer, request) => {
                let broker = self.producers[index]
                    .txn
                    .as_ref()
                    .and_then(|txn| txn.in_flight.as_ref().map(|&(_, to, _)| to));
                match broker {
                    // As for a produce request (`NetworkClient#handleTimedOutRequests`):
                    // the connection closes, and everything in flight on it fails.
                    Some(broker) => {
                        self.connection_closed_by(Self::producer_node(producer), NodeId::Broker(broker));
                        self.producer_connection_lost(producer, broker, ErrorCode::RequestTimedOut);
                    }
                    None => self.producer_txn_lost(producer, true),
                }
            }
            Timer::ProducerRequestTimeout(request) => {
                if self.producers[index]
                    .init_in_flight
                    .is_some_and(|(waiting, _)| waiting == request)
                {
                    self.producer_init_failed(producer);
                } else if let Some(extra) = self.producers[index]
                    .in_flight
                    .get_mut(&request)
                    .map(|in_flight| std::mem::take(&mut in_flight.throttled_ms))
                    .filter(|extra| *extra > 0)
                {
                    self.schedule_timer(
                        Self::producer_node(producer),
                        0,
                        extra,
                        Timer::ProducerRequestTimeout(request),
                    );
                } else if let Some(broker) = self.producers[index].in_flight.get(&request).map(|sent| sent.broker) {
                    // `NetworkClient#handleTimedOutRequests` closes the
                    // connection: everything in flight on it fails, not
                    // only the request that timed out.
                    self.connection_closed_by(Self::producer_node(producer), NodeId::Broker(broker));
                    self.producer_connection_lost(producer, broker, ErrorCode::RequestTimedOut);
                }
            }
            Timer::ProducerMetadataTimeout(request) => {
                let state = &mut self.producers[index];
                if request == 0 || state.metadata_in_flight == Some(request) {
                    state.metadata_in_flight = None;
                    if state.leaders.is_none() {
                        self.producer_request_metadata(producer);
                    }
                }
                self.producer_drain(producer);
            }
            _ => {}
        }
    }
}
