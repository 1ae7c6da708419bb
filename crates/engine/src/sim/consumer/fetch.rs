//! A consumer's fetching and polling: positions, fetch requests to each
//! leader, what comes back (`read_committed` included), and `poll`
//! handing records to the application (`Fetcher`, `FetchCollector`).

use super::*;

impl Consumer {
    /// Asks the coordinator for the committed offsets of owned partitions
    /// that have no position yet (one OffsetFetch at a time).
    pub(crate) fn fetch_positions(&mut self, context: &mut ConsumerContext<'_>) {
        let Some(coordinator) = self.coordinator else {
            return;
        };
        if self.phase != ConsumerPhase::Consuming || self.offset_fetch_in_flight {
            return;
        }
        // A reset whose `ListOffsets` answer was lost is asked again.
        let resets: Vec<(TopicPartition, OffsetSpec, Option<BrokerId>)> = self
            .resetting
            .iter()
            .filter(|(partition, _)| self.assignment.contains(*partition))
            .map(|(partition, (spec, _))| (partition.clone(), *spec, self.leaders.get(partition).copied().flatten()))
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
        let partitions: Vec<TopicPartition> = self
            .assignment
            .iter()
            .filter(|partition| !self.positions.contains_key(*partition) && !self.resetting.contains_key(*partition))
            .cloned()
            .collect();
        if partitions.is_empty() {
            return;
        }
        let group = self.config.group.clone();
        self.offset_fetch_in_flight = true;
        self.send(context, coordinator, Message::OffsetFetch { group, partitions });
    }

    /// Sends a fetch for every owned partition with a position and a known
    /// leader, one at a time per partition.
    pub(crate) fn fetch_all(&mut self, context: &mut ConsumerContext<'_>) {
        // A position that moved (a reset, a committed offset, a revoked
        // partition) while it awaited validation has no epoch to check.
        let keep: Vec<bool> = self
            .validating
            .keys()
            .map(|partition| self.assignment.contains(partition) && self.position_epoch(partition).is_some())
            .collect();
        let mut keep = keep.into_iter();
        self.validating.retain(|_, _| keep.next().unwrap_or(false));
        // During a cooperative rebalance a member still reads what it owns.
        let reading = matches!(
            self.phase,
            ConsumerPhase::Consuming | ConsumerPhase::Joining | ConsumerPhase::Syncing
        );
        if !reading {
            return;
        }
        let mut requests = Vec::new();
        let mut validations = Vec::new();
        for partition in &self.assignment {
            if let Some(in_flight) = self.validating.get(partition) {
                if let (None, Some(Some(leader)), Some((_, epoch)), Some(current)) = (
                    in_flight,
                    self.leaders.get(partition),
                    self.position_epoch(partition),
                    self.leader_epochs.get(partition),
                ) {
                    validations.push((partition.clone(), *leader, epoch, *current));
                }
                continue;
            }
            if self.fetching.get(partition) == Some(&true) || self.buffer.contains_key(partition) {
                continue;
            }
            let (Some(&position), Some(Some(leader))) = (self.positions.get(partition), self.leaders.get(partition))
            else {
                continue;
            };
            if self
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
        let leaderless = self
            .assignment
            .iter()
            .any(|partition| !matches!(self.leaders.get(partition), Some(Some(_))));
        if leaderless && self.refresh_pending.is_none() && self.metadata_in_flight.is_none() {
            let broker = self.bootstrap_attempt % context.config().brokers + 1;
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
        self.refresh_pending = Some(broker);
        let incarnation = self.incarnation;
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
        // Only the answer to the fetch in flight counts.
        if from != NodeId::Broker(self.fetch_brokers.get(&partition).copied().unwrap_or(0))
            || self.fetching.get(&partition) != Some(&true)
        {
            return;
        }
        self.fetching.insert(partition.clone(), false);
        if !self.assignment.contains(&partition) {
            return;
        }
        // A fetch answered after the position went into validation is
        // dropped: the partition is not fetchable until then (KIP-320).
        if self.validating.contains_key(&partition) {
            return;
        }
        if error == Some(ErrorCode::OffsetOutOfRange) {
            // The position is gone (retention deleted it) or past the end:
            // `auto.offset.reset` decides where to go (`SubscriptionState#
            // requestOffsetReset`, then a `ListOffsets`).
            let Some(position) = self.positions.remove(&partition) else {
                return;
            };
            self.buffer.remove(&partition);
            let reset = self.config.auto_offset_reset;
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
            if error == ErrorCode::NotLeaderOrFollower && self.refresh_pending.is_none() {
                self.leaders.clear();
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
        let isolation = self.config.isolation_level;
        let bound = match isolation {
            IsolationLevel::ReadUncommitted => high_watermark,
            IsolationLevel::ReadCommitted => last_stable_offset,
        };
        self.high_watermarks.insert(partition.clone(), bound);
        let Some(&position) = self.positions.get(&partition) else {
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
        let above: Vec<Offset> = fresh
            .iter()
            .map(|record| record.offset)
            .filter(|&offset| offset >= bound)
            .collect();
        if !fresh.is_empty() {
            // The fetch buffer holds them until the application polls.
            self.buffer.insert(
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
            self.positions.insert(partition.clone(), next_offset);
            if let Some(epoch) = last_epoch {
                self.position_epochs.insert(partition.clone(), (next_offset, epoch));
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
        if self.phase == ConsumerPhase::Stopped || self.processing_until.is_some() {
            return;
        }
        if self.paused_until.is_some_and(|until| until > now) {
            return;
        }
        if self.awaiting_commit && !self.pending_commits.is_empty() {
            // `commitSync()` has not returned yet.
            return;
        }
        self.awaiting_commit = false;
        self.last_poll_ms = now;
        if std::mem::take(&mut self.rejoin_on_poll) {
            if self.coordinator.is_some() {
                // `onJoinPrepare`: commit what was consumed, then join.
                self.commit(context);
                self.join(context);
            } else {
                self.phase = ConsumerPhase::FindingCoordinator;
                self.assignment.clear();
                self.fetching.clear();
                self.buffer.clear();
                self.schedule_retry(context, RETRY_BACKOFF_MS);
            }
        }
        self.metadata_changed(context);
        if std::mem::take(&mut self.commit_due) {
            self.commit(context);
        }
        // Jepsen's checks read this poll unless a `read_uncommitted`
        // consumer may see what a transaction later aborts.
        let judged = context.jepsen_judges(self.config.isolation_level);
        if self.awaiting_txn.is_some() {
            // `commitTransaction()` has not returned yet.
            return;
        }
        let mut budget = self.config.max_poll_records.max(1) as usize;
        let mut taken = Vec::new();
        let mut sources = Vec::new();
        let mut polled = Vec::new();
        let partitions: Vec<TopicPartition> = self.buffer.keys().cloned().collect();
        for partition in partitions {
            if budget == 0 {
                break;
            }
            if !self.assignment.contains(&partition) {
                self.buffer.remove(&partition);
                continue;
            }
            let Some(fetched) = self.buffer.get_mut(&partition) else {
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
                self.buffer.remove(&partition);
            }
            if let Some(epoch) = epoch {
                self.position_epochs.insert(partition.clone(), (next_offset, epoch));
            }
            budget -= count;
            sources.extend(batch.iter().map(|record| record.id));
            if judged {
                polled.extend(batch.iter().map(|record| (partition.clone(), record.offset, record.id)));
            }
            self.in_process
                .extend(batch.iter().map(|record| crate::sim::ledger::InProcess {
                    partition: partition.clone(),
                    offset: record.offset,
                    record: record.id,
                }));
            if let (Some(first), Some(last)) = (batch.first(), batch.last()) {
                let (from, to) = (first.offset, last.offset + 1);
                self.positions.insert(partition.clone(), next_offset);
                self.records_read += batch.len() as u64;
                let high_watermark = self.high_watermarks.get(&partition).copied().unwrap_or(to);
                taken.push((partition, from, to, high_watermark, batch.len() as u64));
            }
        }
        let per_record = self.config.processing_ms_per_record;
        let count: u64 = taken.iter().map(|(.., count)| *count).sum();
        let incarnation = self.incarnation;
        self.processing_started_ms = now;
        if count > 0 && self.config.commit_mode == CommitMode::BeforeProcessing {
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
        let policy = &self.config.on_failure;
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
        self.poisoned = poisoned;
        if count > 0 && busy > 0 {
            self.processing_until = Some(now + busy);
            // The heartbeat thread wakes at least every retry.backoff.ms
            // and leaves the group as soon as the poll timer has expired
            // (`AbstractCoordinator.HeartbeatThread#run`,
            // `Heartbeat#pollTimeoutExpired`), not only at its next
            // heartbeat; here it notices at the moment of expiry.
            let deadline = self.last_poll_ms.saturating_add(self.config.max_poll_interval_ms);
            if now + busy > deadline {
                context.timer(incarnation, deadline.saturating_sub(now), Timer::ConsumerPollTimer);
            }
            context.timer(incarnation, busy, Timer::ConsumerProcessed);
        } else {
            let done = std::mem::take(&mut self.in_process);
            if self.config.commit_mode == CommitMode::Transactional {
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
