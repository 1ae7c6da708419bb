//! Replication: the leader's high watermark and ISR shrinking, and the
//! follower's fetches and what it does with the answers
//! (`Partition#maybeIncrementLeaderHW`, `maybeShrinkIsr`,
//! `AbstractFetcherThread`).

use super::*;

impl Broker {
    /// [`Self::leader_maybe_advance_hw`] for the coordinator.
    pub(crate) fn leader_maybe_advance_hw_pub(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        trigger: HighWatermarkTrigger,
    ) {
        self.leader_maybe_advance_hw(context, partition, trigger);
    }

    /// `maybeIncrementLeaderHW`, then answering acks=all requests it commits.
    pub(super) fn leader_maybe_advance_hw(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        trigger: HighWatermarkTrigger,
    ) {
        let id = self.id;
        let now = context.now();
        let lag = context.config().replica_lag_time_max_ms;
        let (min_isr, replication_factor) = context
            .topic_config(partition)
            .map_or((1, 1), |topic| (topic.min_insync_replicas, topic.replication_factor));
        let Some(leader) = self.leading.get(partition) else {
            return;
        };
        let log = &self.logs[partition];
        let log_end = log.log_end_offset();
        let maximal = leader.maximal_isr();
        let fenced = self
            .metadata
            .as_ref()
            .map(|image| image.fenced.clone())
            .unwrap_or_default();
        let follower_ends: BTreeMap<BrokerId, Offset> = leader
            .followers
            .iter()
            .map(|(&replica, info)| (replica, info.state.log_end_offset.unwrap_or(0)))
            .gather();
        let caught_up: Vec<BrokerId> = leader
            .followers
            .iter()
            .filter(|(replica, info)| {
                !maximal.contains(replica) && !fenced.contains(replica) && info.state.is_caught_up(log_end, now, lag)
            })
            .map(|(&replica, _)| replica)
            .collect();
        let decision = evaluate(&HighWatermarkInputs {
            leader_log_end_offset: log_end,
            current: log.high_watermark,
            isr: &leader.isr,
            maximal_isr: &maximal,
            leader: id,
            follower_log_end_offsets: &follower_ends,
            caught_up_eligible: &caught_up,
            min_insync_replicas: min_isr,
            replication_factor,
        });
        let maximal_size = maximal.len() as u32;
        if let HighWatermarkDecision::Advanced { to, held_back_by } = &decision {
            let from = log.high_watermark;
            let to = *to;
            self.logs.get_mut(partition).expect("leader log").high_watermark = to;
            let reason = HighWatermarkReason::Advanced {
                trigger,
                slowest: held_back_by.clone(),
            };
            context.trace(TraceKind::HighWatermark {
                broker: id,
                partition: partition.clone(),
                from,
                to,
                reason,
            });
            // Consumers waiting at the old high watermark can read now.
            self.leader_release_held(context, partition, true);
        }
        // Answer parked acks=all requests the high watermark now covers.
        let hw = self.logs[partition].high_watermark;
        let Some(leader) = self.leading.get_mut(partition) else {
            return;
        };
        let mut done = Vec::new();
        leader.parked.retain(|parked| {
            match check_parked_produce(hw, parked.required_offset, maximal_size, min_isr, replication_factor) {
                ParkedProduce::Waiting => true,
                ParkedProduce::Committed => {
                    done.push((parked.clone(), Ok(parked.base_offset)));
                    false
                }
                ParkedProduce::NotEnoughReplicasAfterAppend => {
                    done.push((parked.clone(), Err(ErrorCode::NotEnoughReplicasAfterAppend)));
                    false
                }
            }
        });
        for (parked, result) in done {
            self.answer_parked(context, partition, parked, result);
        }
    }

    /// The ISR-expiration task (`Partition#maybeShrinkIsr`).
    pub(super) fn leader_maybe_shrink_isr(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        let now = context.now();
        let lag = context.config().replica_lag_time_max_ms;
        let partitions: Vec<TopicPartition> = self.leading.keys().cloned().collect();
        for partition in partitions {
            // An AlterPartition that got no answer within the controller
            // channel's timeout is given up and the change proposed again
            // (`AlterPartitionManager` retries until it gets an answer).
            let leader = self.leading.get_mut(&partition).expect("leading");
            if leader.pending_isr.is_some() && now >= leader.pending_isr_sent_ms + ALTER_PARTITION_TIMEOUT_MS {
                leader.pending_isr = None;
            }
            let leader = &self.leading[&partition];
            if leader.pending_isr.is_some() {
                continue;
            }
            let log_end = self.logs[&partition].log_end_offset();
            let lagging: Vec<BrokerId> = leader
                .isr
                .iter()
                .copied()
                .filter(|&member| member != id)
                .filter(|member| {
                    leader
                        .followers
                        .get(member)
                        .is_none_or(|info| !info.state.is_caught_up(log_end, now, lag))
                })
                .collect();
            if lagging.is_empty() {
                continue;
            }
            let cause = lagging
                .iter()
                .find_map(|member| leader.followers.get(member).and_then(|info| info.last_fetch));
            let new_isr: Vec<BrokerId> = leader
                .isr
                .iter()
                .copied()
                .filter(|member| !lagging.contains(member))
                .collect();
            let message = Message::AlterPartition {
                partition: partition.clone(),
                leader: id,
                leader_epoch: leader.leader_epoch,
                partition_epoch: leader.partition_epoch,
                leader_recovery: crate::controller::partition_change::LeaderRecovery::Recovered,
                new_isr: new_isr.clone(),
            };
            let leader = self.leading.get_mut(&partition).expect("leading");
            leader.pending_isr = Some(new_isr);
            leader.pending_isr_sent_ms = now;
            let previous = context.cause();
            if cause.is_some() {
                context.set_cause(cause);
            }
            context.send(self.controller_of(), message);
            context.set_cause(previous);
        }
    }

    pub(super) fn follower_fetch(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition) {
        let id = self.id;
        let incarnation = self.incarnation;
        let Some(state) = self.following.get(partition) else {
            return;
        };
        if state.in_flight.is_some() {
            return;
        }
        let (leader, leader_epoch) = (state.leader, state.leader_epoch);
        let (log_config, now) = (context.log_config(partition), context.now());
        let fetch = self.next_id();
        let log = self
            .logs
            .entry(partition.clone())
            .or_insert_with(|| PartitionLog::new(log_config, now));
        let message = Message::Fetch {
            partition: partition.clone(),
            replica: id,
            fetch_offset: log.log_end_offset(),
            last_fetched_epoch: log.epoch_cache.latest_epoch(),
            current_leader_epoch: leader_epoch,
            log_start_offset: 0,
        };
        self.following.get_mut(partition).expect("following").in_flight = Some(fetch);
        context.send(NodeId::Broker(leader), message);
        context.timer(
            incarnation,
            FETCH_TIMEOUT_MS,
            Timer::FollowerFetchTimeout(partition.clone(), fetch),
        );
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn follower_handle_response(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        leader_epoch: u32,
        batches: Vec<LogBatch<Record>>,
        leader_high_watermark: Offset,
        leader_log_start_offset: Offset,
        error: Option<ErrorCode>,
        diverging: Option<(u32, Offset)>,
    ) {
        let id = self.id;
        let incarnation = self.incarnation;
        let Some(state) = self.following.get_mut(partition) else {
            return;
        };
        // An answer to no fetch in flight (one given up on) is ignored.
        if state.leader_epoch != leader_epoch || state.in_flight.is_none() {
            return;
        }
        state.in_flight = None;
        if error == Some(ErrorCode::OffsetOutOfRange) {
            // The leader's log starts past this log's end: what this replica
            // would fetch next is gone. It empties its log and starts at the
            // leader's log start (`AbstractFetcherThread#fetchOffsetAndTruncate`).
            let now = context.now();
            let log = self.logs.get_mut(partition).expect("follower log");
            let log_end = log.log_end_offset();
            if leader_log_start_offset > log_end {
                log.truncate_fully_and_start_at(leader_log_start_offset, now);
                context.trace(TraceKind::Truncated {
                    broker: id,
                    partition: partition.clone(),
                    to_offset: leader_log_start_offset,
                    removed: 0,
                    reason: TruncationReason::BelowLeaderLogStart,
                });
            }
            context.timer(incarnation, 0, Timer::FollowerFetch(partition.clone()));
            return;
        }
        if error.is_some() {
            context.timer(incarnation, FETCH_BACKOFF_MS, Timer::FollowerFetch(partition.clone()));
            return;
        }
        let now = context.now();
        let log = self.logs.get_mut(partition).expect("follower log");
        if let Some((epoch, end_offset)) = diverging {
            // Truncate to where the logs agree (KIP-279), then fetch again.
            // (When it lacks the leader's epoch it truncates to its own
            // largest smaller epoch and the next fetch asks again.)
            let log_end = log.log_end_offset();
            let (truncate_to, _complete) =
                crate::replication::epoch_cache::truncation_offset(&log.epoch_cache, log_end, epoch, end_offset);
            let removed = log_end - truncate_to;
            log.truncate_to(truncate_to, now);
            if removed > 0 {
                context.trace(TraceKind::Truncated {
                    broker: id,
                    partition: partition.clone(),
                    to_offset: truncate_to,
                    removed,
                    reason: TruncationReason::DivergingEpoch { epoch, end_offset },
                });
                context.mark_dirty(partition);
            }
            context.timer(incarnation, 0, Timer::FollowerFetch(partition.clone()));
            return;
        }
        // Only append what extends this log (a stale answer may overlap);
        // offsets may jump where the leader's cleaner left a gap.
        let log_end = log.log_end_offset();
        let fresh: Vec<LogBatch<Record>> = batches
            .into_iter()
            .filter(|batch| batch.base_offset >= log_end)
            .collect();
        if !fresh.is_empty() {
            let count: u64 = fresh.iter().map(|batch| batch.records.len() as u64).sum();
            let mut epoch = leader_epoch;
            for batch in fresh {
                if let Some(first) = batch.records.first() {
                    log.epoch_cache.assign(first.leader_epoch, first.offset);
                    epoch = first.leader_epoch;
                }
                log.append_batch(batch, now);
            }
            context.trace(TraceKind::Appended {
                broker: id,
                partition: partition.clone(),
                first_offset: log_end,
                count,
                leader_epoch: epoch,
            });
        }
        let log = self.logs.get_mut(partition).expect("follower log");
        let new_hw = leader_high_watermark.min(log.log_end_offset());
        if new_hw > log.high_watermark {
            let from = log.high_watermark;
            log.high_watermark = new_hw;
            context.trace(TraceKind::HighWatermark {
                broker: id,
                partition: partition.clone(),
                from,
                to: new_hw,
                reason: HighWatermarkReason::FromLeader,
            });
        }
        // The follower's log start follows the leader's, up to its own high
        // watermark (`maybeIncrementLogStartOffset`); the next retention
        // check deletes the segments below it.
        let log = self.logs.get_mut(partition).expect("follower log");
        if leader_log_start_offset > log.log_start_offset() && leader_log_start_offset <= log.high_watermark {
            log.increment_log_start_offset(leader_log_start_offset);
        }
        // The leader holds empty fetches, so the next one can go at once.
        context.timer(incarnation, 0, Timer::FollowerFetch(partition.clone()));
    }
}
