//! Replication: the leader's high watermark and ISR shrinking, and the
//! follower's fetches and what it does with the answers
//! (`Partition#maybeIncrementLeaderHW`, `maybeShrinkIsr`,
//! `AbstractFetcherThread`).

use super::*;

impl Simulation {
    /// [`Self::leader_maybe_advance_hw`] for the coordinator.
    pub(crate) fn leader_maybe_advance_hw_pub(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        trigger: HighWatermarkTrigger,
    ) {
        self.leader_maybe_advance_hw(id, partition, trigger);
    }

    /// `maybeIncrementLeaderHW`, then answering acks=all requests it commits.
    pub(super) fn leader_maybe_advance_hw(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        trigger: HighWatermarkTrigger,
    ) {
        let now = self.now;
        let lag = self.config.replica_lag_time_max_ms;
        let (min_isr, replication_factor) = self
            .topic_config(partition)
            .map_or((1, 1), |topic| (topic.min_insync_replicas, topic.replication_factor));
        let broker = &self.brokers[&id];
        let Some(leader) = broker.leading.get(partition) else {
            return;
        };
        let log = &broker.logs[partition];
        let log_end = log.log_end_offset();
        let maximal = leader.maximal_isr();
        let fenced = broker
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
            self.broker(id)
                .logs
                .get_mut(partition)
                .expect("leader log")
                .high_watermark = to;
            let reason = HighWatermarkReason::Advanced {
                trigger,
                slowest: held_back_by.clone(),
            };
            self.record(TraceKind::HighWatermark {
                broker: id,
                partition: partition.clone(),
                from,
                to,
                reason,
            });
            // Consumers waiting at the old high watermark can read now.
            self.leader_release_held(id, partition, true);
        }
        // Answer parked acks=all requests the high watermark now covers.
        let hw = self.brokers[&id].logs[partition].high_watermark;
        let Some(leader) = self.broker(id).leading.get_mut(partition) else {
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
            self.answer_parked(id, partition, parked, result);
        }
    }

    /// The ISR-expiration task (`Partition#maybeShrinkIsr`).
    pub(super) fn leader_maybe_shrink_isr(&mut self, id: BrokerId) {
        let now = self.now;
        let lag = self.config.replica_lag_time_max_ms;
        let partitions: Vec<TopicPartition> = self.brokers[&id].leading.keys().cloned().collect();
        for partition in partitions {
            // An AlterPartition that got no answer within the controller
            // channel's timeout is given up and the change proposed again
            // (`AlterPartitionManager` retries until it gets an answer).
            let leader = self.broker(id).leading.get_mut(&partition).expect("leading");
            if leader.pending_isr.is_some() && now >= leader.pending_isr_sent_ms + ALTER_PARTITION_TIMEOUT_MS {
                leader.pending_isr = None;
            }
            let broker = &self.brokers[&id];
            let leader = &broker.leading[&partition];
            if leader.pending_isr.is_some() {
                continue;
            }
            let log_end = broker.logs[&partition].log_end_offset();
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
            let leader = self.broker(id).leading.get_mut(&partition).expect("leading");
            leader.pending_isr = Some(new_isr);
            leader.pending_isr_sent_ms = now;
            let previous = self.current_cause;
            if cause.is_some() {
                self.current_cause = cause;
            }
            self.send(NodeId::Broker(id), self.controller_of(id), message);
            self.current_cause = previous;
        }
    }

    pub(super) fn follower_fetch(&mut self, id: BrokerId, partition: &TopicPartition) {
        let incarnation = self.brokers[&id].incarnation;
        let broker = self.broker(id);
        let Some(state) = broker.following.get(partition) else {
            return;
        };
        if state.in_flight.is_some() {
            return;
        }
        let (leader, leader_epoch) = (state.leader, state.leader_epoch);
        let (log_config, now) = (self.log_config(partition), self.now);
        let broker = self.broker(id);
        let fetch = broker.next_id();
        let log = broker
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
        broker.following.get_mut(partition).expect("following").in_flight = Some(fetch);
        self.send(NodeId::Broker(id), NodeId::Broker(leader), message);
        self.schedule_timer(
            NodeId::Broker(id),
            incarnation,
            FETCH_TIMEOUT_MS,
            Timer::FollowerFetchTimeout(partition.clone(), fetch),
        );
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn follower_handle_response(
        &mut self,
        id: BrokerId,
        partition: &TopicPartition,
        leader_epoch: u32,
        batches: Vec<LogBatch<Record>>,
        leader_high_watermark: Offset,
        leader_log_start_offset: Offset,
        error: Option<ErrorCode>,
        diverging: Option<(u32, Offset)>,
    ) {
        let incarnation = self.brokers[&id].incarnation;
        let node = NodeId::Broker(id);
        let broker = self.broker(id);
        let Some(state) = broker.following.get_mut(partition) else {
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
            let now = self.now;
            let log = self.broker(id).logs.get_mut(partition).expect("follower log");
            let log_end = log.log_end_offset();
            if leader_log_start_offset > log_end {
                log.truncate_fully_and_start_at(leader_log_start_offset, now);
                self.record(TraceKind::Truncated {
                    broker: id,
                    partition: partition.clone(),
                    to_offset: leader_log_start_offset,
                    removed: 0,
                    reason: TruncationReason::BelowLeaderLogStart,
                });
            }
            self.schedule_timer(node, incarnation, 0, Timer::FollowerFetch(partition.clone()));
            return;
        }
        if error.is_some() {
            self.schedule_timer(
                node,
                incarnation,
                FETCH_BACKOFF_MS,
                Timer::FollowerFetch(partition.clone()),
            );
            return;
        }
        let now = self.now;
        let log = self.broker(id).logs.get_mut(partition).expect("follower log");
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
                self.record(TraceKind::Truncated {
                    broker: id,
                    partition: partition.clone(),
                    to_offset: truncate_to,
                    removed,
                    reason: TruncationReason::DivergingEpoch { epoch, end_offset },
                });
                self.monitor.mark_dirty(partition);
            }
            self.schedule_timer(node, incarnation, 0, Timer::FollowerFetch(partition.clone()));
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
            self.record(TraceKind::Appended {
                broker: id,
                partition: partition.clone(),
                first_offset: log_end,
                count,
                leader_epoch: epoch,
            });
        }
        let log = self.broker(id).logs.get_mut(partition).expect("follower log");
        let new_hw = leader_high_watermark.min(log.log_end_offset());
        if new_hw > log.high_watermark {
            let from = log.high_watermark;
            log.high_watermark = new_hw;
            self.record(TraceKind::HighWatermark {
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
        let log = self.broker(id).logs.get_mut(partition).expect("follower log");
        if leader_log_start_offset > log.log_start_offset() && leader_log_start_offset <= log.high_watermark {
            log.increment_log_start_offset(leader_log_start_offset);
        }
        // The leader holds empty fetches, so the next one can go at once.
        self.schedule_timer(node, incarnation, 0, Timer::FollowerFetch(partition.clone()));
    }
}
