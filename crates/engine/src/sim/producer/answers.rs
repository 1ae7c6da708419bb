//! What comes back to a producer: metadata, `Produce` answers, and what
//! it does with an error: retry, bump its epoch, expire batches past
//! `delivery.timeout.ms`, or fail them (`Sender#completeBatch`,
//! `TransactionManager`).

use super::*;

impl Producer {
    /// A `MetadataResponse`: the leaders of the producer's topic.
    pub(super) fn metadata_answer(
        &mut self,
        context: &mut ProducerContext,
        leaders: BTreeMap<TopicPartition, (Option<BrokerId>, u32)>,
    ) {
        let state = &mut *self;
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
            context.timer(100, Timer::ProducerMetadataTimeout(0));
            return;
        }
        if mine.values().all(|(leader, _)| leader.is_some()) {
            state.metadata_retries = 0;
        }
        state.metadata_at = context.now();
        state.leaders = Some(mine);
        self.partition_waiting(context);
        self.drain(context);
    }

    /// A `ProduceResponse`: each partition's batch acknowledged, retried or
    /// failed, after the broker's throttle time.
    pub(super) fn produce_answer(
        &mut self,
        context: &mut ProducerContext,
        request: u64,
        responses: Vec<(TopicPartition, Result<Offset, ErrorCode>)>,
        throttle_time_ms: u64,
    ) {
        let Some(in_flight) = self.in_flight.remove(&request) else {
            return;
        };
        if throttle_time_ms > 0 {
            // KIP-219: no request to this broker until the throttle
            // time is over (`NetworkClient#maybeThrottle`).
            let broker = in_flight.broker;
            let until = context.now() + throttle_time_ms;
            let entry = self.throttled_until.entry(broker).or_insert(until);
            *entry = (*entry).max(until);
            context.trace(TraceKind::Throttled {
                client: NodeId::Producer(self.id),
                broker,
                throttle_time_ms,
                quota: QuotaType::Produce,
            });
            // Its other requests to that broker wait in the muted
            // connection: their timeouts grow by the throttle
            // time (`InFlightRequests#incrementThrottleTime`).
            for other in self.in_flight.values_mut() {
                if other.broker == broker {
                    other.throttled_ms += throttle_time_ms;
                }
            }
            context.timer(throttle_time_ms, Timer::ProducerDrain);
        }
        let mut batches = in_flight.batches;
        for (partition, result) in responses {
            let Some(position) = batches
                .iter()
                .position(|(queued, _)| *queued == partition.partition && *partition.topic == *self.topic)
            else {
                continue;
            };
            let (number, batch) = batches.remove(position);
            match result {
                Ok(base_offset) => self.acknowledged(context, number, &batch, base_offset),
                Err(error) => self.retry_or_fail(context, number, batch, error),
            }
        }
        // A partition the answer does not name (never in this
        // simulation) is retried.
        for (number, batch) in batches {
            self.retry_or_fail(context, number, batch, ErrorCode::NetworkException);
        }
        self.drain(context);
    }

    /// A partition's batch was acknowledged at `base_offset`.
    pub(super) fn acknowledged(
        &mut self,
        context: &mut ProducerContext,
        partition: u32,
        batch: &PendingBatch,
        base_offset: u64,
    ) {
        let state = &mut *self;
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
            context.acknowledged(record, Some(base_offset + position as u64), acks);
        }
        let partition = self.partition_key(partition);
        context.trace(TraceKind::Acknowledged {
            producer: self.id,
            partition: partition.clone(),
            base_offset: Some(base_offset),
            records: records.clone(),
        });
        // An acknowledgement can arrive after a new leader took over.
        context.check_acknowledged(&partition, &records);
    }

    /// Schedules a metadata refresh after `retry.backoff.ms`, doubling with
    /// each refresh in a row up to `retry.backoff.max.ms` (KIP-580).
    pub(super) fn schedule_refresh(&mut self, context: &mut ProducerContext) {
        let state = &mut *self;
        if state.refresh_scheduled || state.metadata_in_flight.is_some() {
            return;
        }
        state.refresh_scheduled = true;
        let backoff = (state.config.retry_backoff_ms << state.metadata_retries.min(10)).min(RETRY_BACKOFF_MAX_MS);
        state.metadata_retries += 1;
        context.timer(backoff, Timer::ProducerMetadataRefresh);
    }

    /// Batches still in the accumulator whose `delivery.timeout.ms` ran out
    /// fail, sent or not (`RecordAccumulator#expiredBatches`).
    pub(super) fn expire_batches(&mut self, context: &mut ProducerContext) {
        let now = context.now();
        let timeout = self.config.delivery_timeout();
        let partitions: Vec<u32> = self.batches.keys().copied().collect();
        for partition in partitions {
            loop {
                let queue = self.batches.entry(partition).or_default();
                let Some(batch) = queue.front() else { break };
                if now < batch.created_ms + timeout {
                    break;
                }
                let batch = queue.pop_front().expect("checked front");
                let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
                let sequenced = batch.sequence.is_some();
                if let Some((&first, later)) = records.split_first() {
                    for &record in later {
                        context.expired_with(record, first);
                    }
                }
                self.fail_records(context, partition, records, ErrorCode::DeliveryTimeout);
                if sequenced {
                    self.bump_epoch();
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
    pub(super) fn bump_epoch(&mut self) {
        if self.txn.is_some() {
            // A transactional producer's epoch is the coordinator's: the
            // transaction can only abort now.
            self.txn_abortable();
            return;
        }
        let state = &mut *self;
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
    pub(crate) fn fail_records(
        &mut self,
        context: &mut ProducerContext,
        partition: u32,
        records: Vec<RecordId>,
        error: ErrorCode,
    ) {
        for &record in &records {
            context.failed(record);
        }
        let partition = self.partition_key(partition);
        context.trace(TraceKind::ProduceFailed {
            producer: self.id,
            partition,
            error,
            records,
            will_retry: false,
        });
    }

    /// Fails every record `producer` has not sent yet with `error`: its
    /// queued batches, the records waiting for metadata, and those its
    /// transaction holds for the next one.
    pub(crate) fn fail_unsent(&mut self, context: &mut ProducerContext, error: ErrorCode) {
        let state = &mut *self;
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
            self.fail_records(context, partition, records, error);
        }
        if !waiting.is_empty() {
            self.fail_records(context, 0, waiting, error);
        }
    }

    pub(super) fn retry_or_fail(
        &mut self,
        context: &mut ProducerContext,
        number: u32,
        batch: PendingBatch,
        error: ErrorCode,
    ) {
        if let Some(fatal) = self.txn.as_ref().and_then(|txn| txn.fatal) {
            // A fatal error stopped the producer while this batch was in
            // flight: it is not retried but fails with that error, as
            // `Sender#maybeAbortBatches` fails every incomplete batch.
            let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
            self.fail_records(context, number, records, fatal);
            return;
        }
        if self.txn.is_some() && matches!(error, ErrorCode::ProducerFenced | ErrorCode::InvalidProducerIdMapping) {
            // Fenced: fatal (brokers never answer a produce so; kept for
            // completeness).
            let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
            self.fail_records(context, number, records, error);
            self.txn_fatal(context, ErrorCode::ProducerFenced);
            return;
        }
        if self.txn.is_some() && error == ErrorCode::InvalidProducerEpoch {
            // A newer epoch wrote to this partition. Kafka 4.1's client
            // makes that an abortable error (`InvalidProducerEpochException`
            // is an `ApplicationRecoverableException`): the transaction can
            // only abort, and the abort's EndTxn learns whether the
            // producer is fenced (`PRODUCER_FENCED`).
            let records: Vec<RecordId> = batch.records.iter().map(|&(record, _)| record).collect();
            self.fail_records(context, number, records, error);
            self.txn_abortable();
            return;
        }
        let now = context.now();
        let state = &mut *self;
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
            self.bump_epoch();
        }
        let state = &mut *self;
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
            context.trace(TraceKind::ProduceFailed {
                producer: self.id,
                partition,
                error,
                records,
                will_retry: true,
            });
            if self.leaders.is_none() {
                self.request_metadata(context);
            }
            context.timer(backoff, Timer::ProducerDrain);
            if now + backoff > deadline {
                // The sender wakes at the next expiry
                // (`RecordAccumulator#nextExpiryTimeMs`), not only at the
                // end of the backoff.
                context.timer(deadline - now, Timer::ProducerDrain);
            }
        } else {
            let error = if expired { ErrorCode::DeliveryTimeout } else { error };
            let sequenced =
                batch.sequence.is_some() && batch.epoch == state.epoch && Some(batch.producer_id) == state.producer_id;
            self.fail_records(context, number, records, error);
            if sequenced || self.txn.is_some() {
                // A transactional producer's failed batch makes the
                // transaction abortable (TRANSACTION_ABORTABLE and
                // INVALID_TXN_STATE from a leader's verification included).
                self.bump_epoch();
            }
        }
    }
}
