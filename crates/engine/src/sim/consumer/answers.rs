//! A consumer's answers from its coordinator and the brokers: metadata,
//! `FindCoordinator`, `JoinGroup`, `SyncGroup`, committed offsets,
//! `ListOffsets`, offset validation (KIP-320), throttles and closed
//! connections (`ConsumerCoordinator`, `OffsetFetcher`).

use super::*;

impl Simulation {
    /// A `MetadataResponse`: the leaders and partition counts of the
    /// consumer's topics.
    pub(super) fn consumer_metadata_answer(
        &mut self,
        id: u32,
        leaders: BTreeMap<TopicPartition, (Option<BrokerId>, u32)>,
    ) {
        let topics = self.consumers[id as usize].config.topics.clone();
        let consumer = &mut self.consumers[id as usize];
        consumer.metadata_in_flight = None;
        consumer.metadata_at = self.now;
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for (partition, (leader, epoch)) in leaders {
            if topics.iter().any(|topic| **topic == *partition.topic) {
                let count = counts.entry(partition.topic.to_string()).or_insert(0);
                *count = (*count).max(partition.partition + 1);
                // KIP-320: a broker cut off from the controller may still
                // name itself leader at an epoch this client has seen
                // replaced; that partition keeps what the client knew.
                if consumer.leader_epochs.get(&partition).is_some_and(|&seen| epoch < seen) {
                    continue;
                }
                let newer = consumer
                    .leader_epochs
                    .insert(partition.clone(), epoch)
                    .is_some_and(|seen| seen < epoch);
                // KIP-320 (`SubscriptionState#maybeValidatePositionForCurrentLeader`):
                // a new leader epoch puts a position with an epoch into
                // validation; its buffered records are dropped.
                if newer && consumer.position_epoch(&partition).is_some() && consumer.assignment.contains(&partition) {
                    consumer.validating.insert(partition.clone(), None);
                    consumer.buffer.remove(&partition);
                }
                consumer.leaders.insert(partition, leader);
            }
        }
        if !counts.is_empty() {
            consumer.partition_counts = counts;
        }
        if self.consumer_metadata_changed(id) {
            return;
        }
        self.consumer_fetch_all(id);
    }

    /// A `FindCoordinatorResponse`: join the group, or go on with a
    /// coordinator found again.
    pub(super) fn consumer_coordinator_found(&mut self, id: u32, coordinator: Option<BrokerId>) {
        let consumer = &mut self.consumers[id as usize];
        if consumer.coordinator.is_some() {
            return;
        }
        if let Some(coordinator) = coordinator {
            consumer.coordinator = Some(coordinator);
            // A member that kept consuming while its coordinator was
            // unknown just heartbeats to the new one, which loaded
            // the group from __consumer_offsets: no rejoin.
            if consumer.phase == ConsumerPhase::FindingCoordinator {
                self.consumer_join(id);
            } else {
                self.consumer_fetch_positions(id);
                if self.consumers[id as usize].config.consumer_protocol() {
                    self.member_heartbeat(id);
                }
            }
        }
    }

    /// A `JoinGroupResponse`: the new generation, or what its error asks for.
    pub(super) fn consumer_join_answer(&mut self, id: u32, member_id: String, result: Result<JoinResult, ErrorCode>) {
        match result {
            Ok(join) => self.consumer_joined(id, join),
            Err(ErrorCode::MemberIdRequired) => {
                // KIP-394: join again, with the id the coordinator gave.
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase == ConsumerPhase::Joining {
                    consumer.member_id = Some(member_id);
                    self.consumer_join(id);
                }
            }
            Err(ErrorCode::UnknownMemberId) => {
                // The coordinator does not know this member (a new
                // coordinator without its group, or it expired): join
                // again as a new member (`resetStateAndGeneration`).
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase == ConsumerPhase::Joining {
                    consumer.member_id = None;
                    self.consumer_join(id);
                }
            }
            Err(error) => self.consumer_group_error(id, error),
        }
    }

    /// A `SyncGroupResponse`: the member's partitions for the generation.
    pub(super) fn consumer_sync_answer(&mut self, id: u32, result: Result<Vec<TopicPartition>, ErrorCode>) {
        match result {
            Ok(partitions) => {
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase != ConsumerPhase::Syncing {
                    return;
                }
                consumer.phase = ConsumerPhase::Consuming;
                consumer.offset_fetch_in_flight = false;
                if consumer.cooperative() {
                    // KIP-429 (`ConsumerCoordinator#onJoinComplete`): keep
                    // what stays, start on what was added, and give up
                    // what moves; if anything was given up, join again
                    // so the next round hands it to its new owner.
                    let revoked: Vec<TopicPartition> = consumer
                        .assignment
                        .iter()
                        .filter(|partition| !partitions.contains(partition))
                        .cloned()
                        .collect();
                    if !revoked.is_empty() {
                        self.consumer_commit(id);
                    }
                    let consumer = &mut self.consumers[id as usize];
                    consumer.positions.retain(|partition, _| partitions.contains(partition));
                    consumer.resetting.retain(|partition, _| partitions.contains(partition));
                    consumer.fetching.retain(|partition, _| partitions.contains(partition));
                    consumer.buffer.retain(|partition, _| partitions.contains(partition));
                    consumer.assignment = partitions;
                    self.consumer_fetch_positions(id);
                    self.consumer_fetch_all(id);
                    if !revoked.is_empty() {
                        self.consumer_join(id);
                    }
                } else {
                    consumer.assignment = partitions;
                    // Eager protocol: every partition was revoked before
                    // the join, so each one assigned starts from its
                    // committed offset (`SubscriptionState#assignFromSubscribed`).
                    consumer.positions.clear();
                    consumer.resetting.clear();
                    consumer.buffer.clear();
                    self.consumer_fetch_positions(id);
                }
            }
            Err(error) => self.consumer_group_error(id, error),
        }
    }

    /// An `OffsetFetchResponse`: each partition starts at its committed
    /// offset, or where `auto.offset.reset` says.
    pub(super) fn consumer_committed_offsets(&mut self, id: u32, offsets: Vec<(TopicPartition, Option<Offset>)>) {
        let reset = self.consumers[id as usize].config.auto_offset_reset;
        self.consumers[id as usize].offset_fetch_in_flight = false;
        for (partition, committed) in offsets {
            if self.consumers[id as usize].resetting.contains_key(&partition) {
                continue;
            }
            match committed {
                Some(offset) => {
                    let consumer = &mut self.consumers[id as usize];
                    consumer.positions.insert(partition.clone(), offset);
                    consumer.committed.insert(partition, offset);
                }
                None if reset == OffsetReset::Earliest => {
                    self.consumers[id as usize].positions.insert(partition, 0);
                }
                None if reset == OffsetReset::None => {
                    self.record(TraceKind::NoOffsetForPartition {
                        client: Self::consumer_node(id),
                        partition,
                    });
                    self.consumer_exception_stops(id);
                    return;
                }
                None => {
                    // Start at the end: ask the leader for its high watermark.
                    if let Some(Some(leader)) = self.consumers[id as usize].leaders.get(&partition).copied() {
                        self.send(
                            Self::consumer_node(id),
                            NodeId::Broker(leader),
                            Message::ListOffsets {
                                partition,
                                spec: OffsetSpec::Latest,
                                isolation: self.consumers[id as usize].config.isolation_level,
                            },
                        );
                    }
                }
            }
        }
        self.consumer_fetch_all(id);
    }

    /// A `ListOffsetsResponse`: where a partition being reset starts.
    pub(super) fn consumer_list_offsets_answer(&mut self, id: u32, partition: TopicPartition, offset: Offset) {
        let consumer = &mut self.consumers[id as usize];
        if let Some((_, from)) = consumer.resetting.remove(&partition) {
            if consumer.assignment.contains(&partition) {
                consumer.positions.insert(partition.clone(), offset);
                consumer.last_resets.insert(partition.clone(), (from, offset));
                self.record(TraceKind::OffsetReset {
                    client: Self::consumer_node(id),
                    partition,
                    offset,
                });
            }
        } else if consumer.assignment.contains(&partition) {
            consumer.positions.entry(partition).or_insert(offset);
        }
        self.consumer_fetch_all(id);
    }

    /// An `OffsetCommitResponse` with an error.
    pub(super) fn consumer_commit_failed(&mut self, id: u32, error: ErrorCode) {
        let consumer = &mut self.consumers[id as usize];
        consumer.pending_commits.pop_front();
        self.consumer_sync_commit_settled(id);
        let consumer = &mut self.consumers[id as usize];
        let modern = consumer.config.consumer_protocol();
        self.member_commit_settled(id);
        // A consumer-protocol member learns about its membership
        // from its heartbeats: a commit refused with a stale epoch
        // or an unknown member is only a failed commit.
        let membership = matches!(error, ErrorCode::StaleMemberEpoch | ErrorCode::UnknownMemberId);
        if !(modern && membership) {
            self.consumer_group_error(id, error);
        }
    }

    /// A broker answered a fetch empty with a throttle time: no fetch to
    /// it until then (`NetworkClient#maybeThrottle`), and what is in flight
    /// on that connection gets that much longer before it times out
    /// (`InFlightRequests#incrementThrottleTime`).
    pub(super) fn consumer_throttled(&mut self, id: u32, from: NodeId, throttle_time_ms: u64) {
        let NodeId::Broker(broker) = from else {
            return;
        };
        let until = self.now + throttle_time_ms;
        let consumer = &mut self.consumers[id as usize];
        let entry = consumer.throttled_until.entry(broker).or_insert(until);
        *entry = (*entry).max(until);
        if let Some(queue) = consumer.outstanding.get_mut(&broker) {
            for (_, deadline) in queue.iter_mut() {
                *deadline += throttle_time_ms;
            }
        }
        let incarnation = consumer.incarnation;
        self.record(TraceKind::Throttled {
            client: Self::consumer_node(id),
            broker,
            throttle_time_ms,
            quota: QuotaType::Fetch,
        });
        self.schedule_timer(
            Self::consumer_node(id),
            incarnation,
            throttle_time_ms,
            Timer::ConsumerUnthrottled,
        );
    }

    /// Resets a lost `position` as `auto.offset.reset` says: asks the
    /// leader `from` for its start or end (`ListOffsets` at the consumer's
    /// isolation level) and remembers the reset until the answer.
    pub(super) fn consumer_reset_position(
        &mut self,
        id: u32,
        from: NodeId,
        partition: TopicPartition,
        spec: OffsetSpec,
        position: Offset,
    ) {
        let consumer = &mut self.consumers[id as usize];
        consumer.resetting.insert(partition.clone(), (spec, position));
        let isolation = consumer.config.isolation_level;
        self.send(
            Self::consumer_node(id),
            from,
            Message::ListOffsets {
                partition,
                spec,
                isolation,
            },
        );
    }

    /// KIP-320: the leader's answer to `OffsetForLeaderEpoch`
    /// (`OffsetsForLeaderEpochUtils#handleResponse`,
    /// `SubscriptionState#maybeCompleteValidation`). An error keeps the
    /// position awaiting validation and asks for metadata again; an end
    /// offset at or past the position completes it; one below it means the
    /// log was truncated under the consumer: with `auto.offset.reset` set it
    /// seeks to that end, with `none` `poll()` throws
    /// `LogTruncationException`; no end known at all resets the position
    /// by `auto.offset.reset`.
    pub(super) fn consumer_validation_answer(
        &mut self,
        id: u32,
        from: NodeId,
        partition: TopicPartition,
        result: Result<Option<(u32, Offset)>, ErrorCode>,
    ) {
        let NodeId::Broker(broker) = from else { return };
        let consumer = &mut self.consumers[id as usize];
        if consumer.validating.get(&partition) != Some(&Some(broker)) {
            return;
        }
        let Some((position, _)) = consumer.position_epoch(&partition) else {
            consumer.validating.remove(&partition);
            self.consumer_fetch_all(id);
            return;
        };
        let answer = match result {
            Ok(answer) => answer,
            Err(_) => {
                // Retried after a metadata update (`OffsetFetcherUtils`:
                // `requestUpdate`, and not before `retry.backoff.ms`): the
                // partition's leader is unknown until that answer comes.
                consumer.validating.insert(partition.clone(), None);
                consumer.leaders.insert(partition, None);
                if consumer.refresh_pending.is_none() {
                    self.consumer_schedule_refresh(id, broker % self.config.brokers + 1);
                }
                return;
            }
        };
        consumer.validating.remove(&partition);
        let diverging = match answer {
            Some((_, end_offset)) if end_offset >= position => {
                self.consumer_fetch_all(id);
                return;
            }
            Some((epoch, end_offset)) => Some((epoch, end_offset)),
            None => None,
        };
        let reset = consumer.config.auto_offset_reset;
        self.record(TraceKind::LogTruncationDetected {
            client: Self::consumer_node(id),
            partition: partition.clone(),
            position,
            diverging: diverging.map(|(_, end_offset)| end_offset),
            reset,
        });
        let consumer = &mut self.consumers[id as usize];
        consumer.buffer.remove(&partition);
        match (diverging, reset) {
            (_, OffsetReset::None) => {
                self.consumer_exception_stops(id);
                return;
            }
            (Some((epoch, end_offset)), _) => {
                consumer.positions.insert(partition.clone(), end_offset);
                consumer.position_epochs.insert(partition, (end_offset, epoch));
            }
            (None, reset) => {
                // `requestOffsetReset` with the default strategy.
                consumer.positions.remove(&partition);
                let spec = if reset == OffsetReset::Earliest {
                    OffsetSpec::Earliest
                } else {
                    OffsetSpec::Latest
                };
                self.consumer_reset_position(id, from, partition, spec, position);
            }
        }
        self.consumer_fetch_all(id);
    }

    /// Every request in flight to `from` failed: fetches it held are retried
    /// after a metadata refresh, and a lost coordinator is looked up again.
    pub(super) fn consumer_connection_closed(&mut self, id: u32, from: NodeId) {
        let NodeId::Broker(broker) = from else {
            return;
        };
        let consumer = &self.consumers[id as usize];
        let lost_fetches: Vec<TopicPartition> = consumer
            .fetching
            .iter()
            .filter(|(partition, in_flight)| **in_flight && consumer.fetch_brokers.get(*partition) == Some(&broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        let lost_coordinator = consumer.coordinator == Some(broker);
        if consumer.metadata_in_flight == Some(broker) {
            self.consumers[id as usize].metadata_in_flight = None;
        }
        for partition in lost_fetches {
            self.consumer_fetched(
                id,
                from,
                partition,
                FetchAnswer::default(),
                Some(ErrorCode::NotLeaderOrFollower),
            );
        }
        let lost_validations: Vec<TopicPartition> = self.consumers[id as usize]
            .validating
            .iter()
            .filter(|(_, in_flight)| **in_flight == Some(broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in lost_validations {
            self.consumer_validation_answer(id, from, partition, Err(ErrorCode::NetworkException));
        }
        if lost_coordinator && self.consumers[id as usize].phase != ConsumerPhase::Stopped {
            self.consumer_group_error(id, ErrorCode::NetworkException);
        }
        self.consumer_fetch_all(id);
    }

    pub(super) fn consumer_joined(&mut self, id: u32, join: JoinResult) {
        let consumer = &mut self.consumers[id as usize];
        if consumer.phase != ConsumerPhase::Joining {
            return;
        }
        consumer.member_id = Some(join.member_id.clone());
        consumer.generation = join.generation;
        consumer.phase = ConsumerPhase::Syncing;
        let group = consumer.config.group.clone();
        let Some(coordinator) = consumer.coordinator else {
            return;
        };
        // The leader computes everyone's assignment with the group's
        // assignor, unless the coordinator kept the current one (a static
        // leader that rejoined, KIP-814).
        let leader = join.member_id == join.leader && !join.skip_assignment;
        // Only the leader watches the metadata. A static leader that skips
        // the assignment takes the metadata it has now as its snapshot
        // (`onLeaderElected`: `assignmentSnapshot = metadataSnapshot`), so a
        // change made while it was away goes unnoticed, as in Kafka; a
        // later one does not.
        consumer.assignment_snapshot = (join.member_id == join.leader).then(|| consumer.partition_counts.clone());
        let assignment = leader.then(|| {
            let partition_counts = consumer.partition_counts.clone();
            let input = GroupInput {
                topics: partition_counts,
                members: join
                    .members
                    .iter()
                    .map(|(member_id, topics, owned)| Member {
                        member_id: member_id.clone(),
                        topics: topics.iter().map(|topic| topic.as_str().into()).collect(),
                        owned: owned.clone(),
                        generation: Some(join.generation.saturating_sub(1) as i32),
                        ..Member::default()
                    })
                    .collect(),
                ..GroupInput::default()
            };
            let strategy = Strategy::from_name(&join.assignor).unwrap_or(Strategy::Range);
            assign(strategy, &input).unwrap_or_default()
        });
        let message = Message::SyncGroup {
            group,
            generation: join.generation,
            member_id: join.member_id,
            instance: consumer.config.group_instance_id.clone(),
            assignment,
        };
        self.send(Self::consumer_node(id), NodeId::Broker(coordinator), message);
    }

    pub(crate) fn consumer_group_error(&mut self, id: u32, error: ErrorCode) {
        let consumer = &mut self.consumers[id as usize];
        match error {
            ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration => {
                if consumer.phase == ConsumerPhase::Consuming || consumer.phase == ConsumerPhase::Syncing {
                    if error == ErrorCode::IllegalGeneration {
                        // Its generation is gone: what it owned is lost
                        // (`onPartitionsLost`), cooperative or not.
                        self.consumer_commit(id);
                        let consumer = &mut self.consumers[id as usize];
                        consumer.assignment.clear();
                        consumer.fetching.clear();
                        consumer.buffer.clear();
                    }
                    let consumer = &mut self.consumers[id as usize];
                    if consumer.processing_until.is_some() {
                        // The heartbeat thread only asks for a rejoin; the
                        // application joins in its next poll()
                        // (`AbstractCoordinator#requestRejoin`), so a busy
                        // handler holds up the whole group's join round.
                        consumer.rejoin_on_poll = true;
                    } else {
                        self.consumer_commit(id);
                        self.consumer_join(id);
                    }
                }
            }
            ErrorCode::UnknownMemberId => {
                consumer.member_id = None;
                consumer.assignment.clear();
                consumer.fetching.clear();
                // A JoinGroup already in flight will get the new id; a
                // second one would make this client two members.
                if consumer.phase != ConsumerPhase::Joining {
                    self.consumer_join(id);
                }
            }
            ErrorCode::FencedInstanceId
            | ErrorCode::InconsistentGroupProtocol
            | ErrorCode::UnsupportedAssignor
            | ErrorCode::GroupIdNotFound
            | ErrorCode::InvalidRequest => {
                // Fatal for Kafka's client: another process took this
                // group.instance.id, or the group's members share no
                // assignor (`InconsistentGroupProtocolException`). The
                // consumer stops.
                consumer.phase = ConsumerPhase::Stopped;
                consumer.incarnation += 1;
                consumer.assignment.clear();
                consumer.fetching.clear();
                let status = if error == ErrorCode::FencedInstanceId {
                    ConsumerChange::Fenced
                } else {
                    ConsumerChange::Refused { error }
                };
                self.record(TraceKind::ConsumerStatus { consumer: id, status });
                self.consumer_drop_connections(id);
            }
            _ => {
                // NOT_COORDINATOR and the like: the coordinator is unknown
                // (`markCoordinatorUnknown`), and the client disconnects from
                // it, so nothing it still holds (a parked JoinGroup) answers
                // later. A member that has its partitions keeps reading them
                // while it looks for the coordinator again; one that was
                // joining joins again once it is found.
                let old = consumer.coordinator.take();
                if let (Some(broker), false) = (old, error == ErrorCode::NetworkException) {
                    self.connection_reset(Self::consumer_node(id), NodeId::Broker(broker));
                }
                let consumer = &mut self.consumers[id as usize];
                // Requests on the old coordinator connection get no answer.
                consumer.pending_commits.clear();
                consumer.offset_fetch_in_flight = false;
                consumer.heartbeat_in_flight = false;
                self.member_commit_settled(id);
                self.consumer_sync_commit_settled(id);
                let consumer = &mut self.consumers[id as usize];
                if consumer.phase != ConsumerPhase::Consuming {
                    consumer.phase = ConsumerPhase::FindingCoordinator;
                    consumer.assignment.clear();
                    consumer.fetching.clear();
                }
                // Not at once: the lookup waits retry.backoff.ms, as
                // `AbstractCoordinator.ensureCoordinatorReady` does, or a
                // coordinator that is gone but still in the metadata would
                // be asked again at network speed.
                self.consumer_schedule_retry(id, RETRY_BACKOFF_MS);
            }
        }
    }
}
