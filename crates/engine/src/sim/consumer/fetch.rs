//! A consumer's fetching and polling: positions, fetch requests to each
//! leader, what comes back (`read_committed` included), and `poll`
//! handing records to the application (`Fetcher`, `FetchCollector`).

use super::*;

impl Consumer {
    /// Asks the coordinator for the committed offsets of owned partitions
    /// that have no position yet (one OffsetFetch at a time).
    pub(crate) fn fetch_positions(&mut self, context: &mut ConsumerContext<'_>) {
        let consumer = &*self;
        let Some(coordinator) = consumer.coordinator else {
            return;
        };
        if consumer.phase != ConsumerPhase::Consuming || consumer.offset_fetch_in_flight {
            return;
        }
        // A reset whose `ListOffsets` answer was lost is asked again.
        let resets: Vec<(TopicPartition, OffsetSpec, Option<BrokerId>)> = consumer
            .resetting
            .iter()
            .filter(|(partition, _)| consumer.assignment.contains(*partition))
            .map(|(partition, (spec, _))| {
                (
                    partition.clone(),
                    *spec,
                    consumer.leaders.get(partition).copied().flatten(),
                )
            })
            .collect();
        for (partition, spec, leader) in resets {
            if let Some(leader) = leader {
                let isolation = self.config.isolation_level;
                self.send(
                    context,
                    leader,
                    Message::ListOffsets {
                        partition,
                        spec,
                        isolation,
                    },
                );
            }
        }
        let consumer = &*self;
        let partitions: Vec<TopicPartition> = consumer
            .assignment
            .iter()
            .filter(|partition| {
                !consumer.positions.contains_key(*partition) && !consumer.resetting.contains_key(*partition)
            })
            .cloned()
            .collect();
        if partitions.is_empty() {
            return;
        }
        let group = consumer.config.group.clone();
        self.offset_fetch_in_flight = true;
        self.send(context, coordinator, Message::OffsetFetch { group, partitions });
    }

    /// Sends a fetch for every owned partition with a position and a known
    /// leader, one at a time per partition.
    pub(crate) fn fetch_all(&mut self, context: &mut ConsumerContext<'_>) {
        // A position that moved (a reset, a committed offset, a revoked
        // partition) while it awaited validation has no epoch to check.
        let consumer = &mut *self;
        let keep: Vec<bool> = consumer
            .validating
            .keys()
            .map(|partition| consumer.assignment.contains(partition) && consumer.position_epoch(partition).is_some())
            .collect();
        let mut keep = keep.into_iter();
        consumer.validating.retain(|_, _| keep.next().unwrap_or(false));
        let consumer = &*self;
        // During a cooperative rebalance a member still reads what it owns.
        let reading = matches!(
            consumer.phase,
            ConsumerPhase::Consuming | ConsumerPhase::Joining | ConsumerPhase::Syncing
        );
        if !reading {
            return;
        }
        let mut requests = Vec::new();
        let mut validations = Vec::new();
        for partition in &consumer.assignment {
            if let Some(in_flight) = consumer.validating.get(partition) {
                if let (None, Some(Some(leader)), Some((_, epoch)), Some(current)) = (
                    in_flight,
                    consumer.leaders.get(partition),
                    consumer.position_epoch(partition),
                    consumer.leader_epochs.get(partition),
                ) {
                    validations.push((partition.clone(), *leader, epoch, *current));
                }
                continue;
            }
            if consumer.fetching.get(partition) == Some(&true) || consumer.buffer.contains_key(partition) {
                continue;
            }
            let (Some(&position), Some(Some(leader))) =
                (consumer.positions.get(partition), consumer.leaders.get(partition))
            else {
                continue;
            };
            if consumer
                .throttled_until
                .get(leader)
                .is_some_and(|until| *until > context.now())
            {
                continue;
            }
            requests.push((partition.clone(), position, *leader));
        }
        // An owned partition without a known leader asks for metadata again
        // after retry.backoff.ms (the client's `Metadata` refresh when a
        // leader is unknown), until one is known.
        let consumer = &*self;
        let leaderless = consumer
            .assignment
            .iter()
            .any(|partition| !matches!(consumer.leaders.get(partition), Some(Some(_))));
        if leaderless && consumer.refresh_pending.is_none() && consumer.metadata_in_flight.is_none() {
            let broker = consumer.bootstrap_attempt % context.config().brokers + 1;
            self.bootstrap_attempt += 1;
            self.schedule_refresh(context, broker);
        }
        for (partition, leader, leader_epoch, current_leader_epoch) in validations {
            self.validating.insert(partition.clone(), Some(leader));
            self.send(
                context,
                leader,
                Message::OffsetForLeaderEpoch {
                    partition,
                    leader_epoch,
                    current_leader_epoch,
                },
            );
        }
        for (partition, offset, leader) in requests {
            self.fetching.insert(partition.clone(), true);
            self.fetch_brokers.insert(partition.clone(), leader);
            let current_leader_epoch = self.leader_epochs.get(&partition).copied();
            self.send(
                context,
                leader,
                Message::ConsumerFetch {
                    partition,
                    offset,
                    isolation: self.config.isolation_level,
                    current_leader_epoch,
                },
            );
        }
    }

    /// Asks `broker` for metadata once `retry.backoff.ms` has passed (the
    /// client's `Metadata` refresh backoff).
    pub(super) fn schedule_refresh(&mut self, context: &mut ConsumerContext<'_>, broker: BrokerId) {
        let consumer = &mut *self;
        consumer.refresh_pending = Some(broker);
        let incarnation = consumer.incarnation;
        context.timer(incarnation, RETRY_BACKOFF_MS, Timer::ConsumerMetadataRefresh);
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn fetched(
        &mut self,
        context: &mut ConsumerContext<'_>,
        from: NodeId,
        partition: TopicPartition,
        answer: FetchAnswer,
        error: Option<ErrorCode>,
    ) {
        let id = self.id;
        let FetchAnswer {
            records,
            high_watermark,
            last_stable_offset,
            aborted,
            fetch_offset,
            next_offset: batches_end,
        } = answer;
        let consumer = &mut *self;
        // Only the answer to the fetch in flight counts.
        if from != NodeId::Broker(consumer.fetch_brokers.get(&partition).copied().unwrap_or(0))
            || consumer.fetching.get(&partition) != Some(&true)
        {
            return;
        }
        consumer.fetching.insert(partition.clone(), false);
        if !consumer.assignment.contains(&partition) {
            return;
        }
        // A fetch answered after the position went into validation is
        // dropped: the partition is not fetchable until then (KIP-320).
        if consumer.validating.contains_key(&partition) {
            return;
        }
        if error == Some(ErrorCode::OffsetOutOfRange) {
            // The position is gone (retention deleted it) or past the end:
            // `auto.offset.reset` decides where to go (`SubscriptionState#
            // requestOffsetReset`, then a `ListOffsets`).
            let Some(position) = consumer.positions.remove(&partition) else {
                return;
            };
            consumer.buffer.remove(&partition);
            let reset = consumer.config.auto_offset_reset;
            context.trace(TraceKind::OffsetOutOfRange {
                client: NodeId::Consumer(id),
                partition: partition.clone(),
                position,
                reset,
            });
            let spec = match reset {
                OffsetReset::Earliest => OffsetSpec::Earliest,
                OffsetReset::Latest => OffsetSpec::Latest,
                OffsetReset::None => {
                    self.exception_stops(context);
                    return;
                }
            };
            self.reset_position(context, from, partition, spec, position);
            return;
        }
        if let Some(error) = error {
            // The client refreshes its metadata, but not sooner than
            // retry.backoff.ms after the failure (Kafka's `Metadata`
            // refresh backoff), so a dead leader costs one request per
            // backoff rather than a storm.
            if error == ErrorCode::NotLeaderOrFollower && consumer.refresh_pending.is_none() {
                consumer.leaders.clear();
                let broker = match from {
                    NodeId::Broker(broker) => broker % context.config().brokers + 1,
                    _ => 1,
                };
                self.schedule_refresh(context, broker);
            }
            // KIP-320: FENCED_LEADER_EPOCH, the consumer's metadata is
            // older than the broker's: it asks for metadata again, position
            // unchanged (`FetchCollector#handleInitializeErrors`).
            // UNKNOWN_LEADER_EPOCH, the broker is behind: Kafka fetches
            // again at the next poll; here after the same backoff.
            if matches!(error, ErrorCode::FencedLeaderEpoch | ErrorCode::UnknownLeaderEpoch)
                && self.refresh_pending.is_none()
            {
                let broker = match from {
                    NodeId::Broker(broker) => broker,
                    _ => 1,
                };
                self.schedule_refresh(context, broker);
            }
            return;
        }
        // A read_committed consumer's end is the last stable offset
        // (`SubscriptionState#partitionLag`).
        let isolation = consumer.config.isolation_level;
        let bound = match isolation {
            IsolationLevel::ReadUncommitted => high_watermark,
            IsolationLevel::ReadCommitted => last_stable_offset,
        };
        consumer.high_watermarks.insert(partition.clone(), bound);
        let Some(&position) = consumer.positions.get(&partition) else {
            return;
        };
        let current = fetch_offset == position;
        if !current && records.first().is_some_and(|first| first.offset > position) {
            // Fetched from another position (before a rewind): stale
            // (`AbstractFetch`: "Discarding stale fetch response"). From
            // the position itself, records may start later: compaction
            // left a gap.
            self.fetch_all(context);
            return;
        }
        let last_epoch = records.last().map(|record| record.leader_epoch);
        let (fresh, next_offset) = returned_records(records, isolation, &aborted, position);
        // Past batches compaction emptied (`nextFetchOffset`).
        let next_offset = if current {
            next_offset.max(batches_end)
        } else {
            next_offset
        };
        if isolation == IsolationLevel::ReadCommitted {
            context.check_read_committed(from, &partition, &fresh);
        }
        let consumer = &mut *self;
        let above: Vec<Offset> = fresh
            .iter()
            .map(|record| record.offset)
            .filter(|&offset| offset >= bound)
            .collect();
        if !fresh.is_empty() {
            // The fetch buffer holds them until the application polls.
            consumer.buffer.insert(
                partition.clone(),
                Fetched {
                    records: fresh,
                    next_offset,
                    last_epoch,
                },
            );
        } else if next_offset > position {
            // Only markers or aborted records: nothing for the
            // application, and the position moves past them.
            consumer.positions.insert(partition.clone(), next_offset);
            if let Some(epoch) = last_epoch {
                consumer.position_epochs.insert(partition.clone(), (next_offset, epoch));
            }
        }
        if !above.is_empty() {
            context.violation();
            let limit = match isolation {
                IsolationLevel::ReadUncommitted => "high watermark",
                IsolationLevel::ReadCommitted => "last stable offset",
            };
            context.trace(TraceKind::InvariantViolated {
                invariant: Invariant::ConsumerReadsBelowHighWatermark,
                detail: format!("consumer-{id} read offsets {above:?} of {partition} at or above the {limit} {bound}"),
            });
        }
        self.poll(context);
        self.fetch_all(context);
    }

    /// The application calls `poll()`: an auto-commit that came due goes
    /// out, a member that left on a poll timeout joins again, and up to
    /// `max.poll.records` buffered records are handed to the handler, which
    /// takes `processing_ms_per_record` each before the next poll. With
    /// nothing buffered the application waits in `poll()` for the next
    /// fetch to return records.
    pub(super) fn poll(&mut self, context: &mut ConsumerContext<'_>) {
        let id = self.id;
        let now = context.now();
        let consumer = &mut *self;
        if consumer.phase == ConsumerPhase::Stopped || consumer.processing_until.is_some() {
            return;
        }
        if consumer.paused_until.is_some_and(|until| until > now) {
            return;
        }
        if consumer.awaiting_commit && !consumer.pending_commits.is_empty() {
            // `commitSync()` has not returned yet.
            return;
        }
        consumer.awaiting_commit = false;
        consumer.last_poll_ms = now;
        if std::mem::take(&mut consumer.rejoin_on_poll) {
            if consumer.coordinator.is_some() {
                // `onJoinPrepare`: commit what was consumed, then join.
                self.commit(context);
                self.join(context);
            } else {
                consumer.phase = ConsumerPhase::FindingCoordinator;
                consumer.assignment.clear();
                consumer.fetching.clear();
                consumer.buffer.clear();
                self.schedule_retry(context, RETRY_BACKOFF_MS);
            }
        }
        self.metadata_changed(context);
        let consumer = &mut *self;
        if std::mem::take(&mut consumer.commit_due) {
            self.commit(context);
        }
        // Jepsen's checks read this poll unless a `read_uncommitted`
        // consumer may see what a transaction later aborts.
        let judged = context.jepsen_judges(self.config.isolation_level);
        let consumer = &mut *self;
        if consumer.awaiting_txn.is_some() {
            // `commitTransaction()` has not returned yet.
            return;
        }
        let mut budget = consumer.config.max_poll_records.max(1) as usize;
        let mut taken = Vec::new();
        let mut sources = Vec::new();
        let mut polled = Vec::new();
        let partitions: Vec<TopicPartition> = consumer.buffer.keys().cloned().collect();
        for partition in partitions {
            if budget == 0 {
                break;
            }
            if !consumer.assignment.contains(&partition) {
                consumer.buffer.remove(&partition);
                continue;
            }
            let Some(fetched) = consumer.buffer.get_mut(&partition) else {
                continue;
            };
            let count = budget.min(fetched.records.len());
            let batch: Vec<crate::sim::types::Record> = fetched.records.drain(..count).collect();
            let mut next_offset = batch.last().map_or(0, |last| last.offset + 1);
            let mut epoch = batch.last().map(|last| last.leader_epoch);
            if fetched.records.is_empty() {
                if fetched.next_offset > next_offset {
                    next_offset = fetched.next_offset;
                    epoch = fetched.last_epoch.or(epoch);
                }
                consumer.buffer.remove(&partition);
            }
            if let Some(epoch) = epoch {
                consumer.position_epochs.insert(partition.clone(), (next_offset, epoch));
            }
            budget -= count;
            sources.extend(batch.iter().map(|record| record.id));
            if judged {
                polled.extend(batch.iter().map(|record| (partition.clone(), record.offset, record.id)));
            }
            consumer
                .in_process
                .extend(batch.iter().map(|record| crate::sim::ledger::InProcess {
                    partition: partition.clone(),
                    offset: record.offset,
                    record: record.id,
                }));
            if let (Some(first), Some(last)) = (batch.first(), batch.last()) {
                let (from, to) = (first.offset, last.offset + 1);
                consumer.positions.insert(partition.clone(), next_offset);
                consumer.records_read += batch.len() as u64;
                let high_watermark = consumer.high_watermarks.get(&partition).copied().unwrap_or(to);
                taken.push((partition, from, to, high_watermark, batch.len() as u64));
            }
        }
        let per_record = consumer.config.processing_ms_per_record;
        let count: u64 = taken.iter().map(|(.., count)| *count).sum();
        let incarnation = consumer.incarnation;
        consumer.processing_started_ms = now;
        if count > 0 && consumer.config.commit_mode == CommitMode::BeforeProcessing {
            // `commitSync()` before the handler runs: at most once.
            self.send_commit(context);
        }
        self.send_outputs(context, &sources);
        context.jepsen_poll(polled);
        let poisoned: Vec<usize> = self
            .in_process
            .iter()
            .enumerate()
            .filter(|(_, record)| context.is_poison(record))
            .map(|(index, _)| index)
            .collect();
        let consumer = &mut *self;
        let policy = &consumer.config.on_failure;
        // Each failed attempt takes the handler's time for a record, and
        // each retry waits its backoff first.
        let retrying = u64::from(policy.retries).saturating_mul(per_record.saturating_add(policy.backoff_ms));
        let busy = match (poisoned.first(), policy.then) {
            (None, _) => count.saturating_mul(per_record),
            (Some(_), AfterFailures::DeadLetter) => count
                .saturating_mul(per_record)
                .saturating_add((poisoned.len() as u64).saturating_mul(retrying)),
            (Some(&first), AfterFailures::Stop) => {
                (first as u64 + 1).saturating_mul(per_record).saturating_add(retrying)
            }
        };
        // A failing record always takes a moment: the handler's time.
        let busy = if poisoned.is_empty() { busy } else { busy.max(1) };
        consumer.poisoned = poisoned;
        if count > 0 && busy > 0 {
            consumer.processing_until = Some(now + busy);
            // The heartbeat thread wakes at least every retry.backoff.ms
            // and leaves the group as soon as the poll timer has expired
            // (`AbstractCoordinator.HeartbeatThread#run`,
            // `Heartbeat#pollTimeoutExpired`), not only at its next
            // heartbeat; here it notices at the moment of expiry.
            let deadline = consumer
                .last_poll_ms
                .saturating_add(consumer.config.max_poll_interval_ms);
            if now + busy > deadline {
                context.timer(incarnation, deadline.saturating_sub(now), Timer::ConsumerPollTimer);
            }
            context.timer(incarnation, busy, Timer::ConsumerProcessed);
        } else {
            let done = std::mem::take(&mut consumer.in_process);
            if consumer.config.commit_mode == CommitMode::Transactional {
                if count > 0 {
                    self.commit_transaction(context, done);
                }
            } else {
                self.processed(context, &done);
                if count > 0 {
                    self.commit_after_processing(context);
                }
            }
        }
        for (partition, from, to, high_watermark, _) in taken {
            context.trace(TraceKind::Consumed {
                consumer: id,
                partition,
                from,
                to,
                high_watermark,
            });
        }
        // Handled at once: the application polls again straight away.
        if count > 0 && per_record == 0 && !self.buffer.is_empty() && self.awaiting_txn.is_none() {
            self.poll(context);
        }
    }
}
