//! The producer's sender: batches waiting per partition, draining the
//! ready ones to each leader (`max.in.flight.requests.per.connection`,
//! muted partitions) and the `Produce` requests it sends
//! (`RecordAccumulator#drain`, `Sender#sendProduceRequests`).

use super::*;

impl Producer {
    /// Partitions records waiting for metadata and appends them to batches.
    pub(crate) fn partition_waiting(&mut self, context: &mut ProducerContext) {
        let Some(leaders) = self.leaders.clone() else {
            self.request_metadata(context);
            return;
        };
        let partition_count = leaders.len() as u32;
        if partition_count == 0 {
            return;
        }
        let now = context.now();
        // What the partitioner sees of each partition: whether its leader is
        // known (fixed here) and how many batches are queued for it, kept up
        // to date as records open new batches.
        let mut states: Vec<PartitionState> = (0..partition_count)
            .map(|partition| PartitionState {
                leader_known: leaders.get(&partition).is_some_and(|(leader, _)| leader.is_some()),
                queued_batches: self.batches.get(&partition).map(|queue| queue.len() as u32),
            })
            .collect();
        while let Some((record, key, bytes)) = self.waiting.pop_front() {
            let state = &mut *self;
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
            let topic_partition = self.partition_key(partition);
            context.placed(record, topic_partition);
            let linger = self.config.linger_ms;
            if linger > 0 && new_batch {
                // The sender wakes when this batch has lingered long enough.
                context.timer(linger, Timer::ProducerDrain);
            }
        }
    }

    /// The sender (`Sender#runOnce`): an idempotent producer first gets a
    /// producer id; then every broker leading a partition with a sendable
    /// batch gets produce requests, each carrying at most one batch per
    /// partition that broker leads, while its connection has room.
    pub(crate) fn drain(&mut self, context: &mut ProducerContext) {
        if self.crashed {
            return;
        }
        self.expire_batches(context);
        // A transactional producer sends only to partitions in its open
        // transaction, once it has its producer id.
        let allowed = self.txn_step(context);
        if allowed.as_ref().is_some_and(BTreeSet::is_empty) {
            return;
        }
        // Nothing is sent before the producer has an id and epoch:
        // `TransactionManager#bumpIdempotentEpochAndResetIdIfNeeded`
        // enqueues `InitProducerId`, `Sender#maybeSendAndPollTransactionalRequest`
        // sends it and sends nothing else while it is in flight, and
        // `RecordAccumulator#shouldStopDrainBatchesForPartition` drains
        // nothing while the producer id is not valid.
        if self.idempotent() && self.producer_id.is_none() {
            if allowed.is_none() {
                self.init_producer_id(context);
            }
            return;
        }
        let Some(mut leaders) = self.leaders.clone() else {
            return;
        };
        // A partition with records to send and no known leader asks for
        // new metadata (`Sender#sendProducerData`: unknown leaders request
        // an update), with a backoff that grows to retry.backoff.max.ms.
        let leaderless = self.batches.iter().any(|(partition, queue)| {
            !queue.is_empty() && leaders.get(partition).is_none_or(|(leader, _)| leader.is_none())
        });
        if leaderless {
            self.schedule_refresh(context);
        }
        if let Some(allowed) = &allowed {
            leaders.retain(|partition, _| allowed.contains(partition));
        }
        // `RecordAccumulator#ready`: the leaders of partitions with a
        // sendable batch.
        let now = context.now();
        let mut nodes: Vec<BrokerId> = Vec::new();
        for (partition, (leader, _)) in &leaders {
            if let Some(leader) = leader {
                if !nodes.contains(leader) && self.partition_ready(now, *partition) {
                    nodes.push(*leader);
                }
            }
        }
        crate::sorting::sort(&mut nodes);
        let max_in_flight = self.config.max_in_flight_requests_per_connection as usize;
        for node in nodes {
            // `NetworkClient#canSendRequest`: not to a broker that throttles it.
            if self.throttled_until.get(&node).is_some_and(|until| *until > now) {
                continue;
            }
            loop {
                // `NetworkClient#canSendRequest` / `InFlightRequests#canSendMore`:
                // at most max.in.flight.requests.per.connection requests
                // await an answer on one broker's connection.
                let in_flight = self.in_flight.values().filter(|request| request.broker == node).count();
                if in_flight >= max_in_flight {
                    break;
                }
                let batches = self.drain_node(now, node, &leaders);
                if batches.is_empty() {
                    break;
                }
                self.send_request(context, node, batches);
                let still_ready = leaders
                    .iter()
                    .any(|(&partition, (leader, _))| *leader == Some(node) && self.partition_ready(now, partition));
                if !still_ready {
                    break;
                }
            }
        }
    }

    /// Whether a partition's first batch is sendable
    /// (`RecordAccumulator#partitionReady`): full (or not the last one),
    /// lingered `linger.ms`, and not in its retry backoff.
    pub(super) fn partition_ready(&self, now: Time, partition: u32) -> bool {
        let Some(queue) = self.batches.get(&partition) else {
            return false;
        };
        let Some(batch) = queue.front() else { return false };
        if now < batch.ready_at_ms || self.partition_muted(partition) {
            return false;
        }
        let full = queue.len() > 1 || batch.bytes >= self.config.batch_size;
        full || now >= batch.created_ms + self.config.linger_ms
    }

    /// With max.in.flight.requests.per.connection=1 a partition with a
    /// batch in flight is muted (`RecordAccumulator#isMuted`,
    /// `Sender#guaranteeMessageOrder`).
    pub(super) fn partition_muted(&self, partition: u32) -> bool {
        self.config.max_in_flight_requests_per_connection == 1 && self.partition_in_flight(partition) > 0
    }

    /// Batches of a partition in flight.
    pub(super) fn partition_in_flight(&self, partition: u32) -> usize {
        self.in_flight
            .values()
            .filter(|request| request.batches.iter().any(|(queued, _)| *queued == partition))
            .count()
    }

    /// `RecordAccumulator#drainBatchesForOneNode`: from the partitions
    /// `node` leads, starting at that node's drain index, the first batch of
    /// each (not in backoff) while the request stays under
    /// `max.request.size`; an idempotent producer's sequence is assigned
    /// here.
    pub(super) fn drain_node(
        &mut self,
        now: Time,
        node: BrokerId,
        leaders: &BTreeMap<u32, (Option<BrokerId>, u32)>,
    ) -> Vec<(u32, PendingBatch)> {
        let parts: Vec<u32> = leaders
            .iter()
            .filter(|(_, (leader, _))| *leader == Some(node))
            .map(|(&partition, _)| partition)
            .collect();
        let mut ready: Vec<(u32, PendingBatch)> = Vec::new();
        if parts.is_empty() {
            return ready;
        }
        let mut drain_index = self.drain_index.get(&node).copied().unwrap_or(0) % parts.len();
        let start = drain_index;
        let mut size = 0u64;
        loop {
            let partition = parts[drain_index];
            self.drain_index.insert(node, drain_index);
            drain_index = (drain_index + 1) % parts.len();
            let muted = self.partition_muted(partition);
            let partition_in_flight = self.partition_in_flight(partition);
            let state = &mut *self;
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
    pub(super) fn send_request(
        &mut self,
        context: &mut ProducerContext,
        node: BrokerId,
        batches: Vec<(u32, PendingBatch)>,
    ) {
        let state = &mut *self;
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
        context.send(node, message);
        if acks == Acks::None {
            // acks=0: done as soon as it is on the wire, with no offset.
            for (partition, batch) in batches {
                let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
                for &record in &records {
                    context.acknowledged(record, None, Acks::None);
                }
                let partition_key = self.partition_key(partition);
                context.trace(TraceKind::Acknowledged {
                    producer: self.id,
                    partition: partition_key,
                    base_offset: None,
                    records,
                });
            }
            return;
        }
        self.in_flight.insert(
            request,
            InFlight {
                batches,
                broker: node,
                throttled_ms: 0,
            },
        );
        context.timer(timeout, Timer::ProducerRequestTimeout(request));
    }
}
