//! A coordinator's writes to `__consumer_offsets`: records appended as a
//! batch by the partition's leader, answers parked until the records are
//! committed (or the append fails), and replay into the shard
//! (`CoordinatorRuntime`).

use super::*;

impl Broker {
    /// Appends a write's records and parks what waits for them.
    pub(super) fn coordinator_write(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        write: Write,
    ) {
        let mut offsets: Option<(String, Vec<(TopicPartition, Offset)>)> = None;
        for record in &write.records {
            if let CoordinatorRecord::OffsetCommit {
                group,
                topic,
                partition,
                value: Some(value),
            } = record
            {
                offsets
                    .get_or_insert_with(|| (group.clone(), Vec::new()))
                    .1
                    .push((TopicPartition::new(topic.as_str(), *partition), value.offset as Offset));
            }
        }
        let metadata = write
            .records
            .iter()
            .any(|record| matches!(record, CoordinatorRecord::GroupMetadata { .. }));
        let mut last = None;
        let batch = write.transactional.map(|(producer_id, epoch)| BatchSequence {
            producer_id,
            epoch,
            first_sequence: -1,
            last_sequence: -1,
            transactional: true,
            marker: None,
        });
        for record in &write.records {
            let offset =
                match self.coordinator_append_batch(context, partition, CommitRecord::Classic(record.clone()), batch) {
                    Some(offset) => offset,
                    None => {
                        last = None;
                        break;
                    }
                };
            last = Some(offset);
            if write.replay {
                if let Some(coordinator) = self.coordinators.get_mut(partition) {
                    coordinator
                        .shard
                        .replay_at(record, offset, batch.map(|batch| batch.producer_id));
                }
            }
        }
        if write.transactional.is_some() {
            // Pending until the marker: not a commit to trace yet.
            offsets = None;
        }
        let pending = PendingWrite {
            callback: write.callback,
            response: write.response,
            heartbeat: None,
            target: None,
            offsets,
        };
        let Some(last) = last else {
            // Nothing appended (no records, or this broker no longer leads).
            let result = if write.records.is_empty() {
                Ok(())
            } else {
                Err(ErrorCode::NotLeaderOrFollower)
            };
            self.coordinator_write_done(context, partition, pending, result);
            return;
        };
        let trigger = if metadata {
            HighWatermarkTrigger::GenerationStored
        } else {
            HighWatermarkTrigger::OffsetCommitAppended
        };
        self.coordinator_park_write(context, partition, pending, last, trigger);
    }

    /// Parks a write until the high watermark passes `last`.
    pub(super) fn coordinator_park_write(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        pending: PendingWrite,
        last: Offset,
        trigger: HighWatermarkTrigger,
    ) {
        let id = self.id;
        let Some(coordinator) = self.coordinators.get_mut(partition) else {
            return;
        };
        coordinator.next_write += 1;
        let write_id = coordinator.next_write;
        coordinator.writes.insert(write_id, pending);
        self.leader_park_reply(
            context,
            partition,
            NodeId::Broker(id),
            last,
            1,
            ParkedReply::CoordinatorWrite { write: write_id },
        );
        self.leader_release_held_fetches_pub(context, partition);
        self.leader_maybe_advance_hw_pub(context, partition, trigger);
        self.coordinator_arm(context, partition);
    }

    /// Appends one coordinator record (a group's or a transaction's) to
    /// the internal partition this broker must lead; returns its offset.
    pub(crate) fn coordinator_append(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        commit: CommitRecord,
    ) -> Option<Offset> {
        self.coordinator_append_batch(context, partition, commit, None)
    }

    /// [`coordinator_append`](Self::coordinator_append), in a producer's
    /// transactional batch when `batch` is given (a `TxnOffsetCommit`'s
    /// records: the partition tracks the open transaction).
    pub(super) fn coordinator_append_batch(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        commit: CommitRecord,
        batch: Option<BatchSequence>,
    ) -> Option<Offset> {
        let id = self.id;
        let leader_epoch = self.leading.get(partition)?.leader_epoch;
        let (key, tombstone) = (commit.key(), commit.is_tombstone());
        let record_id = context.push_commit(commit);
        let now = context.now();
        let log = self.logs.get_mut(partition)?;
        let offset = log.log_end_offset();
        log.append_records(
            vec![Record {
                offset,
                leader_epoch,
                id: record_id,
                bytes: if tombstone { 0 } else { 64 },
                batch,
                timestamp: now as i64,
                key: Some(std::rc::Rc::from(key.as_str())),
                tombstone,
                headers_size: 1,
            }],
            now,
        );
        context.trace(TraceKind::Appended {
            broker: id,
            partition: partition.clone(),
            first_offset: offset,
            count: 1,
            leader_epoch,
        });
        Some(offset)
    }

    /// A parked coordinator write is committed (or failed).
    pub(crate) fn coordinator_parked_done(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        write: u64,
        result: Result<(), ErrorCode>,
    ) {
        let Some(pending) = self
            .coordinators
            .get_mut(partition)
            .and_then(|coordinator| coordinator.writes.remove(&write))
        else {
            return;
        };
        self.coordinator_write_done(context, partition, pending, result);
    }

    pub(super) fn coordinator_write_done(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        pending: PendingWrite,
        result: Result<(), ErrorCode>,
    ) {
        let now = context.now();
        let Some(coordinator) = self.coordinators.get_mut(partition) else {
            return;
        };
        coordinator.shard.set_time(now);
        let mut output = Output::default();
        if let Some(callback) = &pending.callback {
            output = match result {
                Ok(()) => coordinator.shard.committed(callback),
                Err(error) => coordinator.shard.append_failed(callback, append_error(error)),
            };
            if let (Ok(()), AppendCallback::Assignment { group, generation, .. }) = (result, callback) {
                self.coordinator_trace_rebalance(context, partition, group, *generation);
            }
        }
        if let (Ok(()), Some((group, offsets))) = (result, pending.offsets) {
            context.trace(TraceKind::OffsetsCommitted { group, offsets });
        }
        if let (Ok(()), Some(target)) = (result, pending.target) {
            context.trace(target);
        }
        if let Some((request, response)) = pending.heartbeat {
            let response = match result {
                Ok(()) => response,
                Err(error) => HeartbeatResponse::error(append_error(error)),
            };
            self.coordinator_answer_heartbeat(context, partition, request, response);
        }
        if let Some((request, response)) = pending.response {
            let response = match (result, response) {
                (Err(error), Response::OffsetCommit(_)) => Response::OffsetCommit(Some(append_error(error))),
                (Err(error), Response::TxnOffsetCommit(request, _)) => {
                    Response::TxnOffsetCommit(request, Some(append_error(error)))
                }
                (_, response) => response,
            };
            output.responses.push((request, response));
        }
        self.coordinator_route(context, partition, output);
    }
}
