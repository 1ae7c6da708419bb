//! What a consumer's application does with records beyond reading them:
//! poison records and the dead letter queue, and the outputs and
//! transactions of a consume-transform-produce pipeline.

use super::*;

impl Consumer {
    /// The handler finished a batch with poison records in it: under
    /// `dead-letter` each goes to `<topic>.DLQ` and the rest are processed
    /// (returned); under `stop` the records before the first are
    /// processed, the exception stops the member, and nothing is returned.
    pub(super) fn handle_poison(
        &mut self,
        context: &mut ConsumerContext<'_>,
        done: Vec<crate::sim::ledger::InProcess>,
    ) -> Option<Vec<crate::sim::ledger::InProcess>> {
        let id = self.id;
        let poisoned = std::mem::take(&mut self.poisoned);
        if poisoned.is_empty() {
            return Some(done);
        }
        let policy = self.config.on_failure.clone();
        let group = self.config.group.clone();
        let attempts = policy.retries.saturating_add(1);
        match (policy.then, policy.dead_letter_producer) {
            (AfterFailures::DeadLetter, Some(producer)) => {
                let mut rest = Vec::new();
                for (index, record) in done.into_iter().enumerate() {
                    if !poisoned.contains(&index) {
                        rest.push(record);
                        continue;
                    }
                    let headers = crate::sim::DeadLetterHeaders {
                        topic: record.partition.topic.to_string(),
                        partition: record.partition.partition,
                        offset: record.offset,
                        error: "the handler could not process this record (a poison record)".to_string(),
                        attempts,
                    };
                    let topic = context.producer_topic(producer);
                    let Some(dead_letter) = context.producer_send_dead_letter(producer, record.record, headers) else {
                        continue;
                    };
                    context.dead_letter(&group, &[record.record]);
                    context.trace(TraceKind::DeadLettered {
                        group: group.clone(),
                        consumer: id,
                        partition: record.partition.clone(),
                        offset: record.offset,
                        attempts,
                        topic,
                        dead_letter,
                    });
                }
                Some(rest)
            }
            _ => {
                let first = poisoned[0].min(done.len().saturating_sub(1));
                self.processed(context, &done[..first]);
                let abandoned: Vec<crate::sim::types::RecordId> =
                    done[first..].iter().map(|record| record.record).collect();
                context.abandon(&group, &abandoned);
                if let Some(failed) = done.get(first) {
                    context.trace(TraceKind::HandlerFailed {
                        group,
                        consumer: id,
                        partition: failed.partition.clone(),
                        offset: failed.offset,
                        attempts,
                        skipped: (done.len() - first) as u64,
                    });
                }
                self.fail(context);
                None
            }
        }
    }

    /// The handler's exception left the poll loop: the app closes its
    /// self. `close()` commits what `poll()` consumed when
    /// auto-commit is on (past the failed batch: at most once for the
    /// rest of it), nothing otherwise; the member leaves the group.
    pub(super) fn fail(&mut self, context: &mut ConsumerContext<'_>) {
        let id = self.id;
        self.commit(context);
        let member_id = self.member_id.clone();
        self.leave_group(context, member_id);
        self.phase = ConsumerPhase::Stopped;
        context.set_running(false);
        self.incarnation += 1;
        self.assignment.clear();
        self.buffer.clear();
        context.trace(TraceKind::ConsumerStatus {
            consumer: id,
            status: ConsumerChange::Closed,
        });
    }

    /// The handler sends one output record per record it starts on
    /// through its `outputProducer` (consume-transform-produce).
    pub(super) fn send_outputs(&mut self, context: &mut ConsumerContext<'_>, records: &[crate::sim::types::RecordId]) {
        let Some(producer) = self.config.output_producer else {
            return;
        };
        for &source in records {
            context.producer_send_derived(producer, source);
        }
    }

    /// With `commitMode: "transactional"`: the batch is processed, so the
    /// positions go into the output transaction
    /// (`sendOffsetsToTransaction(positions, groupMetadata())`) and it
    /// commits (`commitTransaction()`); the next poll waits for it.
    pub(super) fn commit_transaction(
        &mut self,
        context: &mut ConsumerContext<'_>,
        done: Vec<crate::sim::ledger::InProcess>,
    ) {
        let Some(producer) = self.config.output_producer else {
            return;
        };
        self.in_transaction.extend(done);
        let offsets: Vec<(TopicPartition, Offset)> = self
            .positions
            .iter()
            .filter(|(partition, _)| self.assignment.contains(partition))
            .map(|(partition, position)| (partition.clone(), *position))
            .collect();
        let send = crate::sim::producer::transactions::SendOffsets {
            group: self.config.group.clone(),
            generation: i32::try_from(self.generation).unwrap_or(i32::MAX),
            member_id: self.member_id.clone().unwrap_or_default(),
            instance: self.config.group_instance_id.clone(),
            offsets: offsets.clone(),
            added: false,
        };
        self.awaiting_txn = Some(offsets);
        context.producer_send_offsets(producer, send);
        context.producer_end_transaction(producer, true);
    }

    /// The output producer's transaction ended: committed (`Some(true)`),
    /// the records of it are processed once and its offsets committed;
    /// aborted (`Some(false)`), the app goes back to the last committed
    /// offsets and does them again (the usual recovery: `abortTransaction()`
    /// then seek to the committed positions); fenced (`None`), a newer
    /// instance owns the transactional id: the app closes.
    pub(crate) fn output_transaction_ended(&mut self, context: &mut ConsumerContext<'_>, outcome: Option<bool>) {
        let id = self.id;
        if self.config.commit_mode != CommitMode::Transactional {
            return;
        }
        let sent = self.awaiting_txn.take();
        let done = std::mem::take(&mut self.in_transaction);
        match outcome {
            Some(true) => {
                if let Some(offsets) = sent {
                    self.committed.extend(offsets);
                }
                self.processed(context, &done);
                self.poll(context);
                self.fetch_all(context);
            }
            Some(false) => {
                let group = self.config.group.clone();
                self.buffer.clear();
                let rewound: Vec<(TopicPartition, Offset)> = self
                    .assignment
                    .iter()
                    .filter_map(|partition| {
                        self.positions
                            .remove(partition)
                            .map(|position| (partition.clone(), position))
                    })
                    .collect();
                context.trace(TraceKind::TransactionRolledBack {
                    group,
                    consumer: id,
                    records: done.len() as u64,
                    rewound,
                });
                self.fetch_positions(context);
            }
            None => self.stop(context, true),
        }
    }
}
