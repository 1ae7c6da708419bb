//! The leader's side of fetch: answering followers and consumers, holding
//! fetches until there is data, quotas' throttles and muted connections
//! (`ReplicaManager#fetchMessages`, `DelayedFetch`).

use super::*;

impl Broker {
    /// A follower's fetch arrives at the leader (`Partition#fetchRecords`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn leader_fetch(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        replica: BrokerId,
        fetch_offset: Offset,
        last_fetched_epoch: Option<u32>,
        current_leader_epoch: u32,
        log_start_offset: Offset,
    ) {
        let id = self.id;
        let error_response = |context: &mut BrokerContext<'_>, epoch: u32, error: ErrorCode| {
            context.send(
                NodeId::Broker(replica),
                Message::FetchResponse {
                    partition: partition.clone(),
                    leader_epoch: epoch,
                    batches: Vec::new(),
                    high_watermark: 0,
                    log_start_offset: 0,
                    error: Some(error),
                    diverging: None,
                },
            );
        };
        let Some(leader) = self.leading.get(partition) else {
            error_response(context, current_leader_epoch, ErrorCode::NotLeaderOrFollower);
            return;
        };
        let leader_epoch = leader.leader_epoch;
        if current_leader_epoch < leader_epoch {
            error_response(context, current_leader_epoch, ErrorCode::FencedLeaderEpoch);
            return;
        }
        if current_leader_epoch > leader_epoch {
            error_response(context, current_leader_epoch, ErrorCode::UnknownLeaderEpoch);
            return;
        }
        let log = &self.logs[partition];
        let log_end = log.log_end_offset();
        // KIP-320: where did the follower's last epoch end on the leader?
        if let Some(epoch) = last_fetched_epoch {
            let (end_epoch, end_offset) = log.epoch_cache.end_offset_for(i64::from(epoch), log_end);
            if end_epoch < i64::from(epoch) || end_offset < fetch_offset as i64 {
                let diverging = Some((end_epoch.max(0) as u32, end_offset.max(0) as Offset));
                let high_watermark = log.high_watermark;
                context.send(
                    NodeId::Broker(replica),
                    Message::FetchResponse {
                        partition: partition.clone(),
                        leader_epoch,
                        batches: Vec::new(),
                        high_watermark,
                        log_start_offset: self.logs[partition].log_start_offset(),
                        error: None,
                        diverging,
                    },
                );
                return;
            }
        }
        let now = context.now();
        let fetch_trace = context.cause();
        let hw = log.high_watermark;
        let fenced = self
            .metadata
            .as_ref()
            .is_some_and(|image| image.fenced.contains(&replica));
        let leader = self.leading.get_mut(partition).expect("checked above");
        if let Some(info) = leader.followers.get_mut(&replica) {
            info.state.record_fetch(fetch_offset, log_start_offset, now, log_end);
            info.last_fetch = fetch_trace;
        }
        // ISR expansion (`maybeExpandIsr`): caught up to the HW and into this epoch.
        let expand = !leader.isr.contains(&replica)
            && leader.pending_isr.is_none()
            && fetch_offset >= hw
            && fetch_offset >= leader.epoch_start_offset
            && !fenced
            && leader.replicas.contains(&replica);
        if expand {
            let mut new_isr = leader.isr.clone();
            new_isr.push(replica);
            leader.pending_isr = Some(new_isr.clone());
            leader.pending_isr_sent_ms = now;
            let message = Message::AlterPartition {
                partition: partition.clone(),
                leader: id,
                leader_epoch,
                partition_epoch: leader.partition_epoch,
                leader_recovery: crate::controller::partition_change::LeaderRecovery::Recovered,
                new_isr,
            };
            context.send(self.controller_of(), message);
        }
        self.leader_maybe_advance_hw(
            context,
            partition,
            HighWatermarkTrigger::Fetched { replica, fetch_offset },
        );
        if fetch_offset < log_end {
            self.leader_answer_fetch(context, partition, replica, fetch_offset);
        } else {
            // Nothing new: hold the fetch (`replica.fetch.wait.max.ms`).
            let incarnation = self.incarnation;
            let held = self.next_id();
            let leader = self.leading.get_mut(partition).expect("checked above");
            leader.held.push(HeldFetch {
                id: held,
                consumer: None,
                replica,
                fetch_offset,
                isolation: IsolationLevel::ReadUncommitted,
            });
            context.timer(
                incarnation,
                context.config().replica_fetch_wait_max_ms,
                Timer::DelayedFetchExpiry(partition.clone(), held),
            );
        }
    }

    pub(super) fn leader_answer_fetch(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        replica: BrokerId,
        fetch_offset: Offset,
    ) {
        let Some(leader) = self.leading.get(partition) else {
            return;
        };
        let leader_epoch = leader.leader_epoch;
        let log = &self.logs[partition];
        let log_start_offset = log.log_start_offset();
        // A follower behind the leader's log start (retention deleted what
        // it would fetch next) is told so (`OFFSET_OUT_OF_RANGE`) and
        // starts over from the leader's log start.
        let (batches, error) = if fetch_offset < log_start_offset {
            (Vec::new(), Some(ErrorCode::OffsetOutOfRange))
        } else {
            (log.copy_batches(fetch_offset, FETCH_MAX_RECORDS), None)
        };
        let high_watermark = log.high_watermark;
        context.send(
            NodeId::Broker(replica),
            Message::FetchResponse {
                partition: partition.clone(),
                leader_epoch,
                batches,
                high_watermark,
                log_start_offset,
                error,
                diverging: None,
            },
        );
    }

    /// The retention check (`LogManager#cleanupLogs`): every log on the
    /// broker, leader's and follower's alike, deletes the segments its
    /// policy no longer keeps, never past its own high watermark.
    pub(super) fn retention_check(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        let now = context.now();
        let partitions: Vec<TopicPartition> = self.logs.keys().cloned().collect();
        for partition in partitions {
            let log = self.logs.get_mut(&partition).expect("listed above");
            let outcome = log.delete_old_segments(now);
            if outcome.deleted.is_empty() {
                continue;
            }
            context.trace(TraceKind::SegmentsDeleted {
                broker: id,
                partition,
                bytes: outcome.deleted.iter().map(|(_, bytes, _)| bytes).sum(),
                segments: outcome.deleted,
                log_start_offset: outcome.log_start_after,
            });
        }
    }

    /// The log cleaner's pass (`LogCleaner`): every compacted log on the
    /// broker dirtier than `min.cleanable.dirty.ratio` is cleaned up to its
    /// last stable offset, leader's and follower's alike. (Kafka's cleaner
    /// threads take the dirtiest log first, one at a time, and back off
    /// when none is dirty enough; here each pass cleans all of them.)
    /// `producer.id.expiration.ms`: every
    /// `producer.id.expiration.check.interval.ms` each log forgets the
    /// producers with no open transaction whose last batch is older
    /// (`ProducerStateManager#removeExpiredProducers`). A producer that
    /// writes again is taken as a new one, with any sequence: its duplicates
    /// are no longer recognised (a 4.1 broker never answers
    /// UNKNOWN_PRODUCER_ID).
    pub(super) fn expire_producers(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        let now = context.now() as i64;
        let expiration = i64::try_from(context.config().producer_id_expiration_ms).unwrap_or(i64::MAX);
        let partitions: Vec<TopicPartition> = self.logs.keys().cloned().collect();
        for partition in partitions {
            let log = self.logs.get_mut(&partition).expect("listed above");
            let expired = log.producers.remove_expired_producers(now, expiration);
            if !expired.is_empty() {
                context.trace(TraceKind::ProducersExpired {
                    broker: id,
                    partition,
                    producer_ids: expired,
                });
            }
        }
    }

    pub(super) fn clean_logs(&mut self, context: &mut BrokerContext<'_>) {
        let id = self.id;
        let now = context.now();
        // The dirtiest log first (`grabFilthiestCompactedLog`: the highest
        // cleanable ratio; ties in partition order), then the next: a
        // cleaner thread that cleaned something looks again at once, and a
        // cleaning takes no simulated time.
        let mut partitions: Vec<(f64, TopicPartition)> = self
            .logs
            .iter()
            .filter_map(|(partition, log)| Some((log.cleanable_ratio(now)?, partition.clone())))
            .collect();
        crate::sorting::sort_by(&mut partitions, |(a, first), (b, second)| {
            b.total_cmp(a).then_with(|| first.cmp(second))
        });
        for (_, partition) in partitions {
            let log = self.logs.get_mut(&partition).expect("listed above");
            let Some(outcome) = log.clean(now) else { continue };
            context.trace(TraceKind::LogCleaned {
                broker: id,
                partition: partition.clone(),
                records_before: outcome.records_read,
                records_after: outcome.records_kept,
                bytes_before: outcome.bytes_before,
                bytes_after: outcome.bytes_after,
                tombstones_removed: outcome.tombstones_removed,
                markers_removed: outcome.markers_removed,
                checkpoint: outcome.checkpoint_after,
            });
        }
    }

    /// New records: answer the followers' held fetches.
    pub(crate) fn leader_release_held_fetches_pub(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
    ) {
        self.leader_release_held(context, partition, false);
    }

    pub(super) fn leader_release_held_fetches(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition) {
        self.leader_release_held(context, partition, false);
    }

    /// Answers held fetches of followers (new records) or of consumers (the
    /// high watermark moved).
    pub(super) fn leader_release_held(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        consumers: bool,
    ) {
        let Some(leader) = self.leading.get_mut(partition) else {
            return;
        };
        let (release, keep): (Vec<HeldFetch>, Vec<HeldFetch>) = std::mem::take(&mut leader.held)
            .into_iter()
            .partition(|fetch| fetch.consumer.is_some() == consumers);
        leader.held = keep;
        for fetch in release {
            self.answer_held(context, partition, fetch);
        }
    }

    pub(super) fn answer_held(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        fetch: HeldFetch,
    ) {
        match fetch.consumer {
            Some(client) => {
                self.leader_answer_consumer(context, client, partition, fetch.fetch_offset, fetch.isolation)
            }
            None => self.leader_answer_fetch(context, partition, fetch.replica, fetch.fetch_offset),
        }
    }

    /// A consumer's fetch (`Partition#fetchRecords`): records below the
    /// high watermark (`read_uncommitted`) or the last stable offset
    /// (`read_committed`), or held until that moves (`fetch.max.wait.ms`,
    /// 500).
    pub(super) fn leader_consumer_fetch(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        partition: &TopicPartition,
        offset: Offset,
        isolation: IsolationLevel,
    ) {
        if !self.leading.contains_key(partition) {
            let message = Message::consumer_fetch_error(partition.clone(), ErrorCode::NotLeaderOrFollower);
            context.send(client, message);
            return;
        }
        let log = &self.logs[partition];
        if offset < log.log_start_offset() || offset > log.log_end_offset() {
            // `ReplicaManager#readFromLocalLog`: the log does not hold it.
            let message = Message::consumer_fetch_error(partition.clone(), ErrorCode::OffsetOutOfRange);
            context.send(client, message);
            return;
        }
        if offset < log.read_bound(isolation) {
            self.leader_answer_consumer(context, client, partition, offset, isolation);
        } else {
            let incarnation = self.incarnation;
            let held = self.next_id();
            let leader = self.leading.get_mut(partition).expect("checked above");
            leader.held.push(HeldFetch {
                id: held,
                consumer: Some(client),
                replica: 0,
                fetch_offset: offset,
                isolation,
            });
            context.timer(incarnation, 500, Timer::DelayedFetchExpiry(partition.clone(), held));
        }
    }

    /// Answers a consumer's fetch: up to [`FETCH_MAX_RECORDS`] records below
    /// its bound; a `read_committed` answer lists the aborted transactions
    /// the records may overlap (`UnifiedLog#collectAbortedTransactions`, up
    /// to the log end offset: the simulation has no offset index, see
    /// [`TransactionIndex::collect_aborted_txns`]).
    pub(super) fn leader_answer_consumer(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        partition: &TopicPartition,
        offset: Offset,
        isolation: IsolationLevel,
    ) {
        let Some(log) = self.logs.get(partition) else {
            return;
        };
        if offset < log.log_start_offset() {
            // Retention deleted it while the fetch was held.
            let message = Message::consumer_fetch_error(partition.clone(), ErrorCode::OffsetOutOfRange);
            context.send(client, message);
            return;
        }
        let (high_watermark, last_stable_offset) = (log.high_watermark, log.last_stable_offset());
        let bound = log.read_bound(isolation);
        // A consumer's fetch is capped at what its quota lets through in
        // a quota window (`ClientQuotaManager#getMaxValueInQuotaWindow`:
        // the quota over ten one-second samples), else a large answer would be
        // throttled every time.
        let max_bytes = match client {
            NodeId::Consumer(consumer) => context
                .config()
                .client_quota(&context.consumer_client_id(consumer), QuotaType::Fetch)
                .map_or(u64::MAX, crate::storage::quota::max_bytes_in_quota_window),
            _ => u64::MAX,
        };
        let log = &self.logs[partition];
        let (records, next_offset, bytes) = log.consumer_read(offset, bound, FETCH_MAX_RECORDS, max_bytes);
        // The client's fetch quota (`KafkaApis#handleFetchRequest`): the
        // answer's bytes go into its rate; over the quota, they are taken
        // back out and the answer is empty, with the time to wait.
        let throttle_time_ms = self.fetch_throttle(context, client, bytes);
        if throttle_time_ms > 0 {
            self.mute(context, client, throttle_time_ms);
            context.send(
                client,
                Message::ConsumerFetchResponse {
                    partition: partition.clone(),
                    records: Vec::new(),
                    high_watermark,
                    last_stable_offset,
                    aborted: Vec::new(),
                    error: None,
                    fetch_offset: offset,
                    next_offset: offset,
                    throttle_time_ms,
                },
            );
            return;
        }
        let log = &self.logs[partition];
        let aborted = if isolation == IsolationLevel::ReadCommitted && !records.is_empty() {
            log.txn_index
                .collect_aborted_txns(offset, log.log_end_offset())
                .iter()
                .map(|txn| (txn.producer_id, txn.first_offset))
                .collect()
        } else {
            Vec::new()
        };
        context.send(
            client,
            Message::ConsumerFetchResponse {
                partition: partition.clone(),
                records,
                high_watermark,
                last_stable_offset,
                aborted,
                error: None,
                fetch_offset: offset,
                next_offset,
                throttle_time_ms: 0,
            },
        );
    }

    /// Records a fetch answer's bytes in the consumer's `consumer_byte_rate`
    /// and returns its throttle time; a throttled answer is sent empty, so
    /// its bytes are taken back (`ClientQuotaManager#unrecordQuotaSensor`).
    pub(super) fn fetch_throttle(&mut self, context: &mut BrokerContext<'_>, client: NodeId, bytes: u64) -> u64 {
        let NodeId::Consumer(consumer) = client else {
            return 0;
        };
        let client_id = context.consumer_client_id(consumer);
        let Some(quota) = context.config().client_quota(&client_id, QuotaType::Fetch) else {
            return 0;
        };
        let now = context.now() as i64;
        let rate = self.client_rates.entry((QuotaType::Fetch, client_id)).or_default();
        let throttle_time_ms = rate.record_and_throttle_ms(bytes as f64, now, quota as f64);
        if throttle_time_ms > 0 {
            rate.unrecord(bytes as f64, now);
        }
        throttle_time_ms
    }

    /// After a throttled answer the broker mutes the client's connection
    /// for the throttle time (`RequestChannel#sendResponse` with a
    /// throttle, `SocketServer` `ChannelMuteState`): requests that arrive
    /// meanwhile wait unread.
    pub(super) fn mute(&mut self, context: &mut BrokerContext<'_>, client: NodeId, throttle_time_ms: u64) {
        if throttle_time_ms == 0 {
            return;
        }
        let until = context.now() + throttle_time_ms;
        let incarnation = self.incarnation;
        let entry = self.muted.entry(client).or_insert((until, Vec::new()));
        if entry.0 > until {
            return;
        }
        entry.0 = until;
        context.timer(incarnation, throttle_time_ms, Timer::Unmute(client));
    }

    /// A request on a muted connection waits; `None` when it was held. A
    /// producer has one connection to the broker; a consumer's fetches and
    /// offset lookups share one, its group coordinator requests use
    /// another (Kafka's consumer connects to the coordinator as a separate
    /// node), which is not muted.
    pub(super) fn hold_if_muted(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        message: Message,
    ) -> Option<Message> {
        let same_connection = match from {
            NodeId::Producer(_) => true,
            NodeId::Consumer(_) => matches!(
                message,
                Message::ConsumerFetch { .. } | Message::ListOffsets { .. } | Message::OffsetForLeaderEpoch { .. }
            ),
            _ => false,
        };
        if matches!(message, Message::ConnectionClosed) {
            // The connection is gone, with the requests it had not read;
            // a new one starts unmuted.
            self.muted.remove(&from);
            return Some(message);
        }
        let now = context.now();
        match self.muted.get_mut(&from) {
            // Also while held requests wait for the unmute at this very
            // moment: they are read first.
            Some((until, held)) if same_connection && (*until > now || !held.is_empty()) => {
                held.push(message);
                None
            }
            _ => Some(message),
        }
    }

    /// The mute is over: the broker reads what waited, in order.
    pub(super) fn unmute(&mut self, context: &mut BrokerContext<'_>, client: NodeId) {
        let now = context.now();
        if self.muted.get(&client).is_none_or(|(until, _)| *until > now) {
            return;
        }
        let (_, held) = self.muted.remove(&client).expect("looked up above");
        for message in held {
            self.receive(context, client, message);
        }
    }
}
