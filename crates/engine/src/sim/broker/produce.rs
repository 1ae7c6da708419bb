//! The leader's side of produce: appending a producer's batches after its
//! checks, parking `acks=all` answers until the high watermark passes them,
//! and writing transaction markers (`ReplicaManager#appendRecords`,
//! `Partition#appendRecordsToLeader`).

use super::*;

impl Broker {
    /// A produce request a handler takes, read from `connection`
    /// (`KafkaApis#handleProduceRequest`, `ReplicaManager#appendRecords`):
    /// every partition's batch is appended (or refused) on its own, a
    /// transaction's first batch on a partition after the transaction
    /// coordinator is asked (KIP-890, see [`crate::sim::verification`]); with
    /// acks=1 the answer goes out at once, with acks=all once every
    /// partition's high watermark passed its batch or that partition failed
    /// or timed out (`DelayedProduce` completes when no partition is still
    /// pending). One `ProduceResponse` answers them all, on the connection
    /// the request came on; acks=0 gets none.
    pub(super) fn handle_produce(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        message: Message,
        connection: u32,
    ) {
        let Message::Produce {
            request,
            acks,
            timeout_ms,
            batches,
            transactional_id,
            transaction_v2,
        } = message
        else {
            return;
        };
        if acks != Acks::None {
            let pending = batches.iter().map(|(partition, _)| (partition.clone(), None)).collect();
            self.produce_requests.insert((client, request), pending);
            self.produce_connections.insert((client, request), connection);
            if let NodeId::Producer(producer) = client {
                let bytes = batches
                    .iter()
                    .flat_map(|(_, batch)| batch.records.iter())
                    .map(|(_, bytes)| u64::from(*bytes))
                    .sum();
                let client_id = context.producer_client_id(producer);
                self.produce_request_bytes.insert((client, request), (client_id, bytes));
            }
        }
        let ready = self.leader_verify_batches(
            context,
            client,
            request,
            acks,
            timeout_ms,
            transactional_id,
            transaction_v2,
            batches,
        );
        for (partition, batch, verification) in ready {
            self.leader_produce(
                context,
                client,
                request,
                partition,
                batch,
                acks,
                timeout_ms,
                verification,
            );
        }
    }

    /// The `transaction.version` this broker has finalized, as its
    /// metadata says (a new 4.1 cluster's before it has any).
    pub(crate) fn transaction_version(
        &self,
        context: &mut BrokerContext<'_>,
    ) -> crate::protocol::transactions::TransactionVersion {
        self.metadata
            .as_ref()
            .map_or(context.config().transaction_version, |image| image.transaction_version)
    }

    /// One partition of a produce request is done; once every partition
    /// is, the request is answered (`DelayedProduce#tryComplete`).
    pub(crate) fn produce_partition_done(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        request: u64,
        partition: &TopicPartition,
        result: Result<Offset, ErrorCode>,
    ) {
        let Some(parts) = self.produce_requests.get_mut(&(client, request)) else {
            return;
        };
        if let Some(slot) = parts
            .iter_mut()
            .find(|(part, slot)| part == partition && slot.is_none())
        {
            slot.1 = Some(result);
        }
        if parts.iter().any(|(_, slot)| slot.is_none()) {
            return;
        }
        let parts = self
            .produce_requests
            .remove(&(client, request))
            .expect("looked up above");
        let responses = parts
            .into_iter()
            .map(|(partition, result)| (partition, result.expect("every partition is done")))
            .collect();
        // The client's produce quota (`ClientQuotaManager#maybeRecordAndGetThrottleTimeMs`):
        // the request's bytes go into its rate; over the quota, the answer
        // says how long to wait (KIP-219: the client waits before its next
        // request to this broker).
        let now = context.now();
        let throttle_time_ms = match self.produce_request_bytes.remove(&(client, request)) {
            Some((client_id, bytes)) => match context.config().client_quota(&client_id, QuotaType::Produce) {
                Some(quota) => self
                    .client_rates
                    .entry((QuotaType::Produce, client_id))
                    .or_default()
                    .record_and_throttle_ms(bytes as f64, now as i64, quota as f64),
                None => 0,
            },
            None => 0,
        };
        self.mute(context, client, throttle_time_ms);
        let read_from = self.produce_connections.remove(&(client, request));
        if read_from.is_some_and(|read_from| read_from != context.connection(client)) {
            // Its connection closed while it was handled: the answer has
            // nowhere to go.
            return;
        }
        context.send(
            client,
            Message::ProduceResponse {
                request,
                responses,
                throttle_time_ms,
            },
        );
    }

    /// The next producer id this broker hands out (`ProducerIdManager`).
    /// Simplification: instead of asking the active controller for a
    /// block (`AllocateProducerIds`, `RPCProducerIdManager`), a broker takes
    /// its blocks of 1000 ids from a range no other broker uses (its own
    /// block numbers, interleaved by broker id), counting the blocks it
    /// took on disk so a restart never hands an id out twice.
    pub(crate) fn next_producer_id(&mut self) -> u64 {
        let id = self.id;
        const BLOCK_SIZE: u64 = 1_000;
        const BROKER_SLOTS: u64 = 1_024;
        let (next, end) = match self.producer_ids {
            Some((next, end)) if next < end => (next, end),
            _ => {
                let block = self.producer_id_blocks;
                self.producer_id_blocks += 1;
                let start = (block * BROKER_SLOTS + u64::from(id) % BROKER_SLOTS) * BLOCK_SIZE;
                (start, start + BLOCK_SIZE)
            }
        };
        self.producer_ids = Some((next + 1, end));
        next
    }

    /// Writes a transaction marker to `partition` on its leader `broker`,
    /// as a `WriteTxnMarkers` request from the transaction coordinator
    /// does (`ReplicaManager#appendRecords` with `AppendOrigin.COORDINATOR`):
    /// refused with `INVALID_PRODUCER_EPOCH` for an epoch older than the
    /// producer's, `TRANSACTION_COORDINATOR_FENCED` for an older
    /// coordinator epoch (`ProducerAppendInfo#appendEndTxnMarker`),
    /// `NOT_LEADER_OR_FOLLOWER` elsewhere; otherwise appended and
    /// replicated like any record: the producer's transaction closes, an
    /// aborted one enters the transaction index, and the last stable
    /// offset moves once the high watermark passes the marker. Returns the
    /// marker's offset. (The transaction coordinator that sends these is
    /// not simulated yet.)
    pub(crate) fn write_txn_marker(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        producer_id: u64,
        epoch: u16,
        marker: TxnMarker,
    ) -> Result<Offset, ErrorCode> {
        let broker = self.id;
        let leader = self.leading.get(partition).ok_or(ErrorCode::NotLeaderOrFollower)?;
        let (leader_epoch, isr_size) = (leader.leader_epoch, leader.isr.len() as u32);
        // Markers are appended with acks=-1 (`KafkaApis#handleWriteTxnMarkersRequest`),
        // so `Partition#appendRecordsToLeader` refuses them below
        // min.insync.replicas; the coordinator sends them again.
        let (min_isr, replication_factor) = context
            .topic_config(partition)
            .map_or((1, 1), |topic| (topic.min_insync_replicas, topic.replication_factor));
        if admit_produce(Acks::All, isr_size, min_isr, replication_factor) == ProduceAdmission::RejectNotEnoughReplicas
        {
            return Err(ErrorCode::NotEnoughReplicas);
        }
        let log = &self.logs[partition];
        let offset = log.log_end_offset();
        log.producers
            .prepare_update(producer_id, AppendOrigin::Coordinator)
            .append_end_txn_marker(
                marker.control,
                producer_epoch(epoch),
                marker.coordinator_epoch,
                offset,
                NO_TIMESTAMP,
            )
            .map_err(|error| match error {
                crate::replication::idempotence::ProducerStateError::TransactionCoordinatorFenced { .. } => {
                    ErrorCode::TransactionCoordinatorFenced
                }
                _ => ErrorCode::InvalidProducerEpoch,
            })?;
        let id = context.new_marker_id();
        let now = context.now();
        let log = self.logs.get_mut(partition).expect("a leader has its log");
        log.append_records(
            vec![Record {
                offset,
                leader_epoch,
                id,
                // A control batch with one record (`EndTransactionMarker`):
                // its value is the version and the coordinator epoch. (Its
                // 4-byte key, the version and type, is left out.)
                bytes: 6,
                batch: Some(BatchSequence {
                    producer_id,
                    epoch,
                    first_sequence: -1,
                    last_sequence: -1,
                    transactional: true,
                    marker: Some(marker),
                }),
                timestamp: now as i64,
                key: None,
                tombstone: false,
                headers_size: 1,
            }],
            now,
        );
        // A marker on a `__consumer_offsets` partition settles the
        // transaction's pending offsets there (`GroupCoordinatorShard#replayEndTransactionMarker`).
        let commit = marker.control == crate::replication::transactions::ControlType::Commit;
        let settled = match self.coordinators.get_mut(partition) {
            Some(coordinator) => coordinator.shard.replay_end_transaction(producer_id, commit),
            None => Vec::new(),
        };
        for (group, offsets) in settled {
            context.trace(TraceKind::OffsetsCommitted { group, offsets });
        }
        context.trace(TraceKind::MarkerWritten {
            broker,
            partition: partition.clone(),
            producer_id,
            control: marker.control,
            offset,
        });
        self.leader_release_held_fetches_pub(context, partition);
        self.leader_maybe_advance_hw(context, partition, HighWatermarkTrigger::LeaderAppended);
        Ok(offset)
    }

    /// `appendRecordsToLeader` for one partition's batch of a produce
    /// request: each partition passes its own checks (leadership,
    /// `NOT_ENOUGH_REPLICAS`, the idempotent producer's sequence).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn leader_produce(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        request: u64,
        partition: TopicPartition,
        batch: ProducerBatch,
        acks: Acks,
        timeout_ms: u64,
        verification: Option<u64>,
    ) {
        let id = self.id;
        let respond = |broker: &mut Broker, context: &mut BrokerContext<'_>, result| {
            if acks != Acks::None {
                broker.produce_partition_done(context, client, request, &partition, result);
            }
        };
        let Some(leader) = self.leading.get(&partition) else {
            respond(self, context, Err(ErrorCode::NotLeaderOrFollower));
            return;
        };
        let (isr_size, leader_epoch) = (leader.isr.len() as u32, leader.leader_epoch);
        // `Partition#appendRecordsToLeader` checks min.insync.replicas
        // first, before the log validates the records and the producer
        // state looks for a duplicate: a retried batch is refused
        // NOT_ENOUGH_REPLICAS while the ISR is too small, even if the
        // leader already has it.
        let (min_isr, replication_factor) = context
            .topic_config(&partition)
            .map_or((1, 1), |topic| (topic.min_insync_replicas, topic.replication_factor));
        match admit_produce(acks, isr_size, min_isr, replication_factor) {
            ProduceAdmission::RejectNotEnoughReplicas => {
                respond(self, context, Err(ErrorCode::NotEnoughReplicas));
                return;
            }
            ProduceAdmission::AppendAndAnswer | ProduceAdmission::AppendAndWait => {}
        }
        // `LogValidator`: a compacted topic keeps the latest record per
        // key, so a record without one is refused.
        let compacted = self.logs[&partition].log.config.cleanup_policy.compact;
        if compacted
            && batch
                .records
                .iter()
                .any(|(record, _)| context.produced(*record).is_some_and(|made| made.key.is_none()))
        {
            respond(self, context, Err(ErrorCode::InvalidRecord));
            return;
        }
        match self.leader_check_sequence(context, &partition, &batch, verification) {
            SequenceOutcome::Append => {}
            SequenceOutcome::Refuse(error) => {
                respond(self, context, Err(error));
                return;
            }
            // A duplicate is answered with the original offsets, but an
            // acks=all request still waits for the high watermark to pass
            // them (`ReplicaManager#appendRecords`).
            SequenceOutcome::Duplicate(base_offset) => {
                if acks == Acks::All {
                    let count = batch.records.len() as u64;
                    self.leader_park_reply(
                        context,
                        &partition,
                        client,
                        base_offset,
                        count,
                        ParkedReply::Produce { request, timeout_ms },
                    );
                    self.leader_maybe_advance_hw(context, &partition, HighWatermarkTrigger::DuplicateBatch);
                } else {
                    respond(self, context, Ok(base_offset));
                }
                return;
            }
        }
        let base_offset = self.logs[&partition].log_end_offset();
        let records = self.leader_batch_records(context, &batch, base_offset, leader_epoch);
        let now = context.now();
        let log = self.logs.get_mut(&partition).expect("leader has a log");
        log.append_records(records, now);
        let count = batch.records.len() as u64;
        context.trace(TraceKind::Appended {
            broker: id,
            partition: partition.clone(),
            first_offset: base_offset,
            count,
            leader_epoch,
        });
        if acks == Acks::All {
            self.leader_park_reply(
                context,
                &partition,
                client,
                base_offset,
                count,
                ParkedReply::Produce { request, timeout_ms },
            );
        } else {
            respond(self, context, Ok(base_offset));
        }
        self.leader_release_held_fetches(context, &partition);
        self.leader_maybe_advance_hw(context, &partition, HighWatermarkTrigger::LeaderAppended);
    }

    /// The producer-state check of an idempotent or transactional batch
    /// (`ProducerStateManager`, `ProducerAppendInfo`): append it, refuse
    /// it with an error, or answer it as a duplicate of the batch at the
    /// offset given (traced here). A batch without a producer id appends.
    fn leader_check_sequence(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        batch: &ProducerBatch,
        verification: Option<u64>,
    ) -> SequenceOutcome {
        let id = self.id;
        let Some((producer_id, epoch, first_sequence)) = batch.idempotence else {
            return SequenceOutcome::Append;
        };
        let log = &self.logs[partition];
        let last_sequence = first_sequence + batch.records.len() as i32 - 1;
        // No state for the producer: any sequence is taken on trust.
        let unchecked = first_sequence != 0
            && log
                .producers
                .last_entry(producer_id)
                .is_none_or(|entry| entry.producer_epoch == crate::txn_coordinator::NO_PRODUCER_EPOCH);
        match log.producers.check_client(
            producer_id,
            producer_epoch(epoch),
            first_sequence,
            last_sequence,
            batch.transactional,
            verification,
        ) {
            SequenceCheck::Append => {
                if unchecked {
                    context.unchecked_sequences(batch.records.iter().map(|(record, _)| *record));
                }
                SequenceOutcome::Append
            }
            SequenceCheck::Duplicate {
                first_offset: base_offset,
                ..
            } => {
                context.trace(TraceKind::DuplicateIgnored {
                    broker: id,
                    partition: partition.clone(),
                    producer_id,
                    first_sequence,
                    last_sequence,
                    first_offset: base_offset,
                });
                SequenceOutcome::Duplicate(base_offset)
            }
            // A batch of an epoch older than the partition's producer
            // state (`ProducerStateManager#checkProducerEpoch` throws
            // `InvalidProducerEpochException`), transactional or not.
            SequenceCheck::StaleEpoch => SequenceOutcome::Refuse(ErrorCode::InvalidProducerEpoch),
            SequenceCheck::OutOfOrder { .. } => SequenceOutcome::Refuse(ErrorCode::OutOfOrderSequenceNumber),
            // KIP-890: not part of an open transaction and not verified
            // ("Record was not part of an ongoing transaction").
            SequenceCheck::NotInTransaction => {
                self.record_refused(context, partition, batch, ErrorCode::InvalidTxnState);
                SequenceOutcome::Refuse(ErrorCode::InvalidTxnState)
            }
        }
    }

    /// A batch's records as the leader appends them from `base_offset`.
    fn leader_batch_records(
        &self,
        context: &BrokerContext<'_>,
        batch: &ProducerBatch,
        base_offset: u64,
        leader_epoch: u32,
    ) -> Vec<Record> {
        let sequence = batch
            .idempotence
            .map(|(producer_id, epoch, first_sequence)| BatchSequence {
                producer_id,
                epoch,
                first_sequence,
                last_sequence: first_sequence + batch.records.len() as i32 - 1,
                transactional: batch.transactional,
                marker: None,
            });
        batch
            .records
            .iter()
            .enumerate()
            .map(|(index, &(record_id, bytes))| {
                let made = context.produced(record_id);
                Record {
                    offset: base_offset + index as u64,
                    leader_epoch,
                    id: record_id,
                    bytes,
                    batch: sequence,
                    timestamp: made.map_or(0, |made| made.timestamp as i64),
                    key: made.and_then(|made| made.key.clone()),
                    tombstone: made.is_some_and(|made| made.tombstone),
                    headers_size: made.map_or(1, crate::sim::ProducedRecord::headers_size),
                }
            })
            .collect()
    }

    /// Parks an acks=all request until the high watermark passes its records
    /// or `request.timeout.ms` ends.
    pub(crate) fn leader_park_reply(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        client: NodeId,
        base_offset: Offset,
        count: u64,
        reply: ParkedReply,
    ) {
        let incarnation = self.incarnation;
        // A produce waits as long as the request allows (its timeout is the
        // producer's request.timeout.ms); the coordinator's own appends wait
        // offsets.commit.timeout.ms.
        let timeout = match &reply {
            ParkedReply::Produce { timeout_ms, .. } => *timeout_ms,
            _ => super::coordinator::OFFSETS_COMMIT_TIMEOUT_MS,
        };
        let timer = self.next_id();
        let Some(leader) = self.leading.get_mut(partition) else {
            return;
        };
        leader.parked.push(Parked {
            reply,
            timer,
            client,
            base_offset,
            required_offset: base_offset + count,
        });
        context.timer(incarnation, timeout, Timer::ProduceExpiry(partition.clone(), timer));
    }
}

/// What the producer-state check says of a batch.
enum SequenceOutcome {
    Append,
    Refuse(ErrorCode),
    /// A duplicate of the batch appended at this offset.
    Duplicate(u64),
}
