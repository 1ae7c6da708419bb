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

    /// Partitions records waiting for metadata and appends them to batches.
    pub(crate) fn producer_partition_waiting(&mut self, producer: u32) {
        let index = producer as usize;
        let Some(leaders) = self.producers[index].leaders.clone() else {
            self.producer_request_metadata(producer);
            return;
        };
        let partition_count = leaders.len() as u32;
        if partition_count == 0 {
            return;
        }
        let now = self.now;
        // What the partitioner sees of each partition: whether its leader is
        // known (fixed here) and how many batches are queued for it, kept up
        // to date as records open new batches.
        let mut states: Vec<PartitionState> = {
            let state = &self.producers[index];
            (0..partition_count)
                .map(|partition| PartitionState {
                    leader_known: leaders.get(&partition).is_some_and(|(leader, _)| leader.is_some()),
                    queued_batches: state.batches.get(&partition).map(|queue| queue.len() as u32),
                })
                .collect()
        };
        while let Some((record, key, bytes)) = self.producers[index].waiting.pop_front() {
            let state = &mut self.producers[index];
            let partition = match &key {
                // Keyed: murmur2 over all partitions, leader or not.
                Some(key) => partition_for_key(key.as_bytes(), partition_count).unwrap_or(0),
                None => {
                    let batch_size = state.config.batch_size;
                    let batches = &state.batches;
                    let opens_new_batch = |partition: u32| {
                        batches
                            .get(&partition)
                            .and_then(|queue| queue.back())
                            .is_none_or(|batch| batch.attempts > 0 || batch.bytes + bytes > batch_size)
                    };
                    let choice = state.partitioner.choose(&states, opens_new_batch, &mut state.rng);
                    choice.map_or(0, |choice| choice.partition)
                }
            };
            // Append to the open batch, or start one.
            let batch_size = state.config.batch_size;
            let queue = state.batches.entry(partition).or_default();
            let new_batch = match queue.back_mut() {
                Some(batch) if batch.attempts == 0 && batch.bytes + bytes <= batch_size => {
                    batch.records.push((record, bytes));
                    batch.bytes += bytes;
                    false
                }
                _ => {
                    queue.push_back(PendingBatch {
                        records: vec![(record, bytes)],
                        bytes,
                        created_ms: now,
                        attempts: 0,
                        ready_at_ms: now,
                        sequence: None,
                        producer_id: 0,
                        epoch: 0,
                    });
                    true
                }
            };
            let queued = queue.len() as u32;
            if let Some(seen) = states.get_mut(partition as usize) {
                seen.queued_batches = Some(queued);
            }
            if key.is_none() {
                let full = queue.back().is_some_and(|batch| batch.bytes + bytes > batch_size);
                let ready = state.config.linger_ms == 0 || full;
                state
                    .partitioner
                    .appended(partition, bytes, &states, ready, &mut state.rng);
            }
            let topic_partition = self.partition_key(producer, partition);
            self.records[record as usize].partition = Some(topic_partition);
            let linger = self.producers[index].config.linger_ms;
            if linger > 0 && new_batch {
                // The sender wakes when this batch has lingered long enough.
                self.schedule_timer(Self::producer_node(producer), 0, linger, Timer::ProducerDrain);
            }
        }
    }

    /// The sender (`Sender#runOnce`): an idempotent producer first gets a
    /// producer id; then every broker leading a partition with a sendable
    /// batch gets produce requests, each carrying at most one batch per
    /// partition that broker leads, while its connection has room.
    pub(crate) fn producer_drain(&mut self, producer: u32) {
        let index = producer as usize;
        if self.producers[index].crashed {
            return;
        }
        self.producer_expire_batches(producer);
        // A transactional producer sends only to partitions in its open
        // transaction, once it has its producer id.
        let allowed = self.producer_txn_step(producer);
        if allowed.as_ref().is_some_and(BTreeSet::is_empty) {
            return;
        }
        // Nothing is sent before the producer has an id and epoch:
        // `TransactionManager#bumpIdempotentEpochAndResetIdIfNeeded`
        // enqueues `InitProducerId`, `Sender#maybeSendAndPollTransactionalRequest`
        // sends it and sends nothing else while it is in flight, and
        // `RecordAccumulator#shouldStopDrainBatchesForPartition` drains
        // nothing while the producer id is not valid.
        if self.producers[index].idempotent() && self.producers[index].producer_id.is_none() {
            if allowed.is_none() {
                self.producer_init_producer_id(producer);
            }
            return;
        }
        let Some(mut leaders) = self.producers[index].leaders.clone() else {
            return;
        };
        // A partition with records to send and no known leader asks for
        // new metadata (`Sender#sendProducerData`: unknown leaders request
        // an update), with a backoff that grows to retry.backoff.max.ms.
        let leaderless = self.producers[index].batches.iter().any(|(partition, queue)| {
            !queue.is_empty() && leaders.get(partition).is_none_or(|(leader, _)| leader.is_none())
        });
        if leaderless {
            self.producer_schedule_refresh(producer);
        }
        if let Some(allowed) = &allowed {
            leaders.retain(|partition, _| allowed.contains(partition));
        }
        // `RecordAccumulator#ready`: the leaders of partitions with a
        // sendable batch.
        let mut nodes: Vec<BrokerId> = Vec::new();
        for (partition, (leader, _)) in &leaders {
            if let Some(leader) = leader {
                if !nodes.contains(leader) && self.producer_partition_ready(producer, *partition) {
                    nodes.push(*leader);
                }
            }
        }
        crate::sorting::sort(&mut nodes);
        let max_in_flight = self.producers[index].config.max_in_flight_requests_per_connection as usize;
        let now = self.now;
        for node in nodes {
            // `NetworkClient#canSendRequest`: not to a broker that throttles it.
            if self.producers[index]
                .throttled_until
                .get(&node)
                .is_some_and(|until| *until > now)
            {
                continue;
            }
            loop {
                // `NetworkClient#canSendRequest` / `InFlightRequests#canSendMore`:
                // at most max.in.flight.requests.per.connection requests
                // await an answer on one broker's connection.
                let in_flight = self.producers[index]
                    .in_flight
                    .values()
                    .filter(|request| request.broker == node)
                    .count();
                if in_flight >= max_in_flight {
                    break;
                }
                let batches = self.producer_drain_node(producer, node, &leaders);
                if batches.is_empty() {
                    break;
                }
                self.producer_send_request(producer, node, batches);
                let still_ready = leaders.iter().any(|(&partition, (leader, _))| {
                    *leader == Some(node) && self.producer_partition_ready(producer, partition)
                });
                if !still_ready {
                    break;
                }
            }
        }
    }

    /// Whether a partition's first batch is sendable
    /// (`RecordAccumulator#partitionReady`): full (or not the last one),
    /// lingered `linger.ms`, and not in its retry backoff.
    fn producer_partition_ready(&self, producer: u32, partition: u32) -> bool {
        let state = &self.producers[producer as usize];
        let Some(queue) = state.batches.get(&partition) else {
            return false;
        };
        let Some(batch) = queue.front() else { return false };
        if self.now < batch.ready_at_ms || self.producer_partition_muted(producer, partition) {
            return false;
        }
        let full = queue.len() > 1 || batch.bytes >= state.config.batch_size;
        full || self.now >= batch.created_ms + state.config.linger_ms
    }

    /// With max.in.flight.requests.per.connection=1 a partition with a
    /// batch in flight is muted (`RecordAccumulator#isMuted`,
    /// `Sender#guaranteeMessageOrder`).
    fn producer_partition_muted(&self, producer: u32, partition: u32) -> bool {
        let state = &self.producers[producer as usize];
        state.config.max_in_flight_requests_per_connection == 1
            && self.producer_partition_in_flight(producer, partition) > 0
    }

    /// Batches of a partition in flight.
    fn producer_partition_in_flight(&self, producer: u32, partition: u32) -> usize {
        self.producers[producer as usize]
            .in_flight
            .values()
            .filter(|request| request.batches.iter().any(|(queued, _)| *queued == partition))
            .count()
    }

    /// `RecordAccumulator#drainBatchesForOneNode`: from the partitions
    /// `node` leads, starting at that node's drain index, the first batch of
    /// each (not in backoff) while the request stays under
    /// `max.request.size`; an idempotent producer's sequence is assigned
    /// here.
    fn producer_drain_node(
        &mut self,
        producer: u32,
        node: BrokerId,
        leaders: &BTreeMap<u32, (Option<BrokerId>, u32)>,
    ) -> Vec<(u32, PendingBatch)> {
        let index = producer as usize;
        let now = self.now;
        let parts: Vec<u32> = leaders
            .iter()
            .filter(|(_, (leader, _))| *leader == Some(node))
            .map(|(&partition, _)| partition)
            .collect();
        let mut ready: Vec<(u32, PendingBatch)> = Vec::new();
        if parts.is_empty() {
            return ready;
        }
        let mut drain_index = self.producers[index].drain_index.get(&node).copied().unwrap_or(0) % parts.len();
        let start = drain_index;
        let mut size = 0u64;
        loop {
            let partition = parts[drain_index];
            self.producers[index].drain_index.insert(node, drain_index);
            drain_index = (drain_index + 1) % parts.len();
            let muted = self.producer_partition_muted(producer, partition);
            let partition_in_flight = self.producer_partition_in_flight(producer, partition);
            let state = &mut self.producers[index];
            let idempotent = state.idempotent();
            if let Some(first) = state.batches.get(&partition).and_then(|queue| queue.front()) {
                if !muted && now >= first.ready_at_ms {
                    if size + u64::from(first.bytes) > MAX_REQUEST_SIZE && !ready.is_empty() {
                        break;
                    }
                    // An idempotent producer resends a failed batch only
                    // once the requests before it are answered, so the
                    // broker sees sequences in order
                    // (`RecordAccumulator#shouldStopDrainBatchesForPartition`
                    // stops the whole drain for this node).
                    if idempotent && first.attempts > 0 && partition_in_flight > 0 {
                        break;
                    }
                    let mut batch = state
                        .batches
                        .get_mut(&partition)
                        .and_then(VecDeque::pop_front)
                        .expect("checked front");
                    let producer_id = state.producer_id.unwrap_or(0);
                    if batch.epoch != state.epoch || batch.producer_id != producer_id {
                        // Sequenced under an epoch (or id) since replaced: it
                        // gets a sequence of the new one.
                        batch.sequence = None;
                    }
                    if idempotent && batch.sequence.is_none() {
                        let next = state.sequences.entry(partition).or_insert(0);
                        batch.sequence = Some(*next);
                        batch.producer_id = producer_id;
                        batch.epoch = state.epoch;
                        *next = next.wrapping_add(batch.records.len() as i32);
                    }
                    batch.attempts += 1;
                    size += u64::from(batch.bytes);
                    ready.push((partition, batch));
                }
            }
            if drain_index == start {
                break;
            }
        }
        ready
    }

    /// Sends one produce request to `node` with the drained batches
    /// (`Sender#sendProduceRequest`); with acks=0 they count as
    /// acknowledged once on the wire.
    fn producer_send_request(&mut self, producer: u32, node: BrokerId, batches: Vec<(u32, PendingBatch)>) {
        let index = producer as usize;
        let state = &mut self.producers[index];
        state.next_request += 1;
        let request = state.next_request;
        let acks = state.config.acks;
        let idempotent = state.idempotent();
        let timeout = state.config.request_timeout_ms;
        let message = Message::Produce {
            request,
            acks,
            timeout_ms: timeout,
            transactional_id: state.txn.as_ref().map(|txn| txn.transactional_id.clone()),
            transaction_v2: state.txn.as_ref().is_some_and(|txn| txn.v2),
            batches: batches
                .iter()
                .map(|(partition, batch)| {
                    (
                        TopicPartition {
                            topic: state.topic.clone(),
                            partition: *partition,
                        },
                        ProducerBatch {
                            records: batch.records.clone(),
                            idempotence: batch
                                .sequence
                                .filter(|_| idempotent)
                                .map(|sequence| (batch.producer_id, batch.epoch, sequence)),
                            transactional: state.txn.is_some(),
                        },
                    )
                })
                .collect(),
        };
        self.send(Self::producer_node(producer), NodeId::Broker(node), message);
        if acks == Acks::None {
            // acks=0: done as soon as it is on the wire, with no offset.
            for (partition, batch) in batches {
                let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
                for &record in &records {
                    self.mark_acknowledged(record, None);
                    self.records[record as usize].acks = Some(Acks::None);
                }
                let partition_key = self.partition_key(producer, partition);
                self.record(TraceKind::Acknowledged {
                    producer,
                    partition: partition_key,
                    base_offset: None,
                    records,
                });
            }
            return;
        }
        self.producers[index].in_flight.insert(
            request,
            InFlight {
                batches,
                broker: node,
                throttled_ms: 0,
            },
        );
        self.schedule_timer(
            Self::producer_node(producer),
            0,
            timeout,
            Timer::ProducerRequestTimeout(request),
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
            Message::ProduceResponse {
                request,
                responses,
                throttle_time_ms,
            } => self.producer_produce_answer(producer, request, responses, throttle_time_ms),
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

    /// A `MetadataResponse`: the leaders of the producer's topic.
    fn producer_metadata_answer(&mut self, producer: u32, leaders: BTreeMap<TopicPartition, (Option<BrokerId>, u32)>) {
        let index = producer as usize;
        let state = &mut self.producers[index];
        state.metadata_in_flight = None;
        let topic = state.config.topic.clone();
        let mut mine: BTreeMap<u32, (Option<BrokerId>, u32)> = leaders
            .into_iter()
            .filter(|(partition, _)| *partition.topic == *topic)
            .map(|(partition, leader)| (partition.partition, leader))
            .gather();
        // KIP-320 (`Metadata#updateLatestMetadata`): a partition whose
        // leader epoch is older than one this producer has seen keeps the
        // leader it knew; a broker cut off from the controller may still
        // name itself leader at a replaced epoch.
        for (partition, leader) in &mut mine {
            let seen = state.leader_epochs.entry(*partition).or_insert(leader.1);
            if leader.1 < *seen {
                *leader = state.known_leaders.get(partition).copied().unwrap_or((None, *seen));
            } else {
                *seen = leader.1;
            }
        }
        for (&partition, &leader) in &mine {
            state.known_leaders.insert(partition, leader);
        }
        if mine.is_empty() {
            // This broker knows no metadata yet: ask again soon.
            self.schedule_timer(Self::producer_node(producer), 0, 100, Timer::ProducerMetadataTimeout(0));
            return;
        }
        if mine.values().all(|(leader, _)| leader.is_some()) {
            state.metadata_retries = 0;
        }
        state.metadata_at = self.now;
        state.leaders = Some(mine);
        self.producer_partition_waiting(producer);
        self.producer_drain(producer);
    }

    /// A `ProduceResponse`: each partition's batch acknowledged, retried or
    /// failed, after the broker's throttle time.
    fn producer_produce_answer(
        &mut self,
        producer: u32,
        request: u64,
        responses: Vec<(TopicPartition, Result<Offset, ErrorCode>)>,
        throttle_time_ms: u64,
    ) {
        let index = producer as usize;
        let Some(in_flight) = self.producers[index].in_flight.remove(&request) else {
            return;
        };
        if throttle_time_ms > 0 {
            // KIP-219: no request to this broker until the throttle
            // time is over (`NetworkClient#maybeThrottle`).
            let broker = in_flight.broker;
            let until = self.now + throttle_time_ms;
            let state = &mut self.producers[index];
            let entry = state.throttled_until.entry(broker).or_insert(until);
            *entry = (*entry).max(until);
            self.record(TraceKind::Throttled {
                client: Self::producer_node(producer),
                broker,
                throttle_time_ms,
                quota: QuotaType::Produce,
            });
            // Its other requests to that broker wait in the muted
            // connection: their timeouts grow by the throttle
            // time (`InFlightRequests#incrementThrottleTime`).
            for other in self.producers[index].in_flight.values_mut() {
                if other.broker == broker {
                    other.throttled_ms += throttle_time_ms;
                }
            }
            self.schedule_timer(Self::producer_node(producer), 0, throttle_time_ms, Timer::ProducerDrain);
        }
        let mut batches = in_flight.batches;
        for (partition, result) in responses {
            let Some(position) = batches.iter().position(|(queued, _)| {
                *queued == partition.partition && *partition.topic == *self.producers[index].topic
            }) else {
                continue;
            };
            let (number, batch) = batches.remove(position);
            match result {
                Ok(base_offset) => self.producer_acknowledged(producer, number, &batch, base_offset),
                Err(error) => self.producer_retry_or_fail(producer, number, batch, error),
            }
        }
        // A partition the answer does not name (never in this
        // simulation) is retried.
        for (number, batch) in batches {
            self.producer_retry_or_fail(producer, number, batch, ErrorCode::NetworkException);
        }
        self.producer_drain(producer);
    }

    /// A partition's batch was acknowledged at `base_offset`.
    fn producer_acknowledged(&mut self, producer: u32, partition: u32, batch: &PendingBatch, base_offset: u64) {
        let index = producer as usize;
        let state = &mut self.producers[index];
        if let (Some(sequence), true) = (
            batch.sequence,
            batch.epoch == state.epoch && Some(batch.producer_id) == state.producer_id,
        ) {
            let last = sequence.wrapping_add(batch.records.len() as i32 - 1);
            let acked = state.acked_sequences.entry(partition).or_insert(-1);
            *acked = (*acked).max(last);
        }
        let acks = state.config.acks;
        let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
        for (position, &record) in records.iter().enumerate() {
            self.mark_acknowledged(record, Some(base_offset + position as u64));
            self.records[record as usize].acks = Some(acks);
        }
        let partition = self.partition_key(producer, partition);
        self.record(TraceKind::Acknowledged {
            producer,
            partition: partition.clone(),
            base_offset: Some(base_offset),
            records: records.clone(),
        });
        // An acknowledgement can arrive after a new leader took over.
        self.check_acknowledged(&partition, Some(&records));
    }

    /// Schedules a metadata refresh after `retry.backoff.ms`, doubling with
    /// each refresh in a row up to `retry.backoff.max.ms` (KIP-580).
    fn producer_schedule_refresh(&mut self, producer: u32) {
        let state = &mut self.producers[producer as usize];
        if state.refresh_scheduled || state.metadata_in_flight.is_some() {
            return;
        }
        state.refresh_scheduled = true;
        let backoff = (state.config.retry_backoff_ms << state.metadata_retries.min(10)).min(RETRY_BACKOFF_MAX_MS);
        state.metadata_retries += 1;
        self.schedule_timer(
            Self::producer_node(producer),
            0,
            backoff,
            Timer::ProducerMetadataRefresh,
        );
    }

    /// Batches still in the accumulator whose `delivery.timeout.ms` ran out
    /// fail, sent or not (`RecordAccumulator#expiredBatches`).
    fn producer_expire_batches(&mut self, producer: u32) {
        let index = producer as usize;
        let now = self.now;
        let timeout = self.producers[index].config.delivery_timeout();
        let partitions: Vec<u32> = self.producers[index].batches.keys().copied().collect();
        for partition in partitions {
            loop {
                let queue = self.producers[index].batches.entry(partition).or_default();
                let Some(batch) = queue.front() else { break };
                if now < batch.created_ms + timeout {
                    break;
                }
                let batch = queue.pop_front().expect("checked front");
                let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
                let sequenced = batch.sequence.is_some();
                if let Some((&first, later)) = records.split_first() {
                    for &record in later {
                        self.expired_with_older_batch.insert(record, first);
                    }
                }
                self.producer_fail_records(producer, partition, records, ErrorCode::DeliveryTimeout);
                if sequenced {
                    self.producer_bump_epoch(producer);
                }
            }
        }
    }

    /// KIP-360: a sequenced batch failed for good, so the broker will never
    /// see its sequence numbers. The producer bumps its epoch locally and
    /// every partition's sequence starts again at 0 (the broker accepts a
    /// new epoch from sequence 0). Only an epoch that would pass
    /// `Short.MAX_VALUE` needs a new producer id from `InitProducerId`
    /// (`TransactionManager#bumpIdempotentProducerEpoch`).
    fn producer_bump_epoch(&mut self, producer: u32) {
        if self.producers[producer as usize].txn.is_some() {
            // A transactional producer's epoch is the coordinator's: the
            // transaction can only abort now.
            self.producer_txn_abortable(producer);
            return;
        }
        let state = &mut self.producers[producer as usize];
        if !state.idempotent() {
            return;
        }
        if state.epoch >= i16::MAX as u16 {
            state.producer_id = None;
            state.epoch = 0;
        } else {
            state.epoch += 1;
        }
        state.sequences.clear();
        state.acked_sequences.clear();
    }

    /// Marks records as failed for good and traces it.
    pub(crate) fn producer_fail_records(
        &mut self,
        producer: u32,
        partition: u32,
        records: Vec<RecordId>,
        error: ErrorCode,
    ) {
        for &record in &records {
            if !self.records[record as usize].failed {
                self.records[record as usize].failed = true;
                self.failed_count += 1;
                self.highlights.tally.entry(producer).or_default()[2] += 1;
            }
        }
        let partition = self.partition_key(producer, partition);
        self.record(TraceKind::ProduceFailed {
            producer,
            partition,
            error,
            records,
            will_retry: false,
        });
    }

    /// Fails every record `producer` has not sent yet with `error`: its
    /// queued batches, the records waiting for metadata, and those its
    /// transaction holds for the next one.
    pub(crate) fn producer_fail_unsent(&mut self, producer: u32, error: ErrorCode) {
        let state = &mut self.producers[producer as usize];
        let queued: Vec<(u32, PendingBatch)> = std::mem::take(&mut state.batches)
            .into_iter()
            .flat_map(|(partition, queue)| queue.into_iter().map(move |batch| (partition, batch)))
            .collect();
        let mut waiting: Vec<RecordId> = state.waiting.drain(..).map(|(record, _, _)| record).collect();
        if let Some(txn) = state.txn.as_mut() {
            waiting.extend(txn.held.drain(..).map(|(record, _, _)| record));
        }
        for (partition, batch) in queued {
            let records = batch.records.iter().map(|&(record, _)| record).collect();
            self.producer_fail_records(producer, partition, records, error);
        }
        if !waiting.is_empty() {
            self.producer_fail_records(producer, 0, waiting, error);
        }
    }

    fn producer_retry_or_fail(&mut self, producer: u32, number: u32, batch: PendingBatch, error: ErrorCode) {
        let index = producer as usize;
        if let Some(fatal) = self.producers[index].txn.as_ref().and_then(|txn| txn.fatal) {
            // A fatal error stopped the producer while this batch was in
            // flight: it is not retried but fails with that error, as
            // `Sender#maybeAbortBatches` fails every incomplete batch.
            let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
            self.producer_fail_records(producer, number, records, fatal);
            return;
        }
        if self.producers[index].txn.is_some()
            && matches!(error, ErrorCode::ProducerFenced | ErrorCode::InvalidProducerIdMapping)
        {
            // Fenced: fatal (brokers never answer a produce so; kept for
            // completeness).
            let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
            self.producer_fail_records(producer, number, records, error);
            self.producer_txn_fatal(producer, ErrorCode::ProducerFenced);
            return;
        }
        if self.producers[index].txn.is_some() && error == ErrorCode::InvalidProducerEpoch {
            // A newer epoch wrote to this partition. Kafka 4.1's client
            // makes that an abortable error (`InvalidProducerEpochException`
            // is an `ApplicationRecoverableException`): the transaction can
            // only abort, and the abort's EndTxn learns whether the
            // producer is fenced (`PRODUCER_FENCED`).
            let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
            self.producer_fail_records(producer, number, records, error);
            self.producer_txn_abortable(producer);
            return;
        }
        let now = self.now;
        let state = &mut self.producers[index];
        let mut batch = batch;
        let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
        let backoff =
            (state.config.retry_backoff_ms << batch.attempts.saturating_sub(1).min(10)).min(RETRY_BACKOFF_MAX_MS);
        // `ProducerBatch#hasReachedDeliveryTimeout`: a batch is retried
        // until its `delivery.timeout.ms` has run out; one still waiting
        // then expires from the queue (`RecordAccumulator#expiredBatches`).
        let deadline = batch.created_ms + state.config.delivery_timeout();
        let expired = now >= deadline;
        let partition = TopicPartition {
            topic: state.topic.clone(),
            partition: number,
        };
        // OUT_OF_ORDER_SEQUENCE_NUMBER for the batch right after the last
        // acknowledged one means the broker lost sequences it had
        // acknowledged (an unclean election). A transactional producer's
        // batch fails (the transaction becomes abortable); an idempotent
        // producer bumps its epoch, starts the partition's sequences at 0
        // again and retries, so the records still land
        // (`TransactionManager#canRetry` and `bumpIdempotentProducerEpoch`,
        // KIP-360; `SenderTest#testBumpEpochWhenOutOfOrderSequenceReceived`).
        // For a later batch it only waits for the ones before it.
        let next_in_line = error == ErrorCode::OutOfOrderSequenceNumber
            && batch.epoch == state.epoch
            && Some(batch.producer_id) == state.producer_id
            && batch.sequence
                == Some(
                    state
                        .acked_sequences
                        .get(&number)
                        .map_or(0, |acked| acked.wrapping_add(1)),
                );
        let bump_and_retry = next_in_line && state.txn.is_none();
        if bump_and_retry && !expired {
            // The partition's batches are renumbered from 0 under the new
            // epoch when they are next drained.
            self.producer_bump_epoch(producer);
        }
        let state = &mut self.producers[index];
        if error.retriable() && !expired && (!next_in_line || bump_and_retry) {
            batch.ready_at_ms = now + backoff;
            // Re-enqueue in sequence order (`RecordAccumulator#insertInSequenceOrder`).
            let queue = state.batches.entry(number).or_default();
            let position = match batch.sequence {
                Some(sequence) => queue
                    .iter()
                    .position(|queued| queued.sequence.is_none_or(|queued_sequence| queued_sequence > sequence))
                    .unwrap_or(queue.len()),
                None => 0,
            };
            queue.insert(position, batch);
            if error.invalidates_metadata() {
                state.leaders = None;
            }
            self.record(TraceKind::ProduceFailed {
                producer,
                partition,
                error,
                records,
                will_retry: true,
            });
            if self.producers[index].leaders.is_none() {
                self.producer_request_metadata(producer);
            }
            self.schedule_timer(Self::producer_node(producer), 0, backoff, Timer::ProducerDrain);
            if now + backoff > deadline {
                // The sender wakes at the next expiry
                // (`RecordAccumulator#nextExpiryTimeMs`), not only at the
                // end of the backoff.
                self.schedule_timer(Self::producer_node(producer), 0, deadline - now, Timer::ProducerDrain);
            }
        } else {
            let error = if expired { ErrorCode::DeliveryTimeout } else { error };
            let sequenced =
                batch.sequence.is_some() && batch.epoch == state.epoch && Some(batch.producer_id) == state.producer_id;
            self.producer_fail_records(producer, number, records, error);
            if sequenced || self.producers[index].txn.is_some() {
                // A transactional producer's failed batch makes the
                // transaction abortable (TRANSACTION_ABORTABLE and
                // INVALID_TXN_STATE from a leader's verification included).
                self.producer_bump_epoch(producer);
            }
        }
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
