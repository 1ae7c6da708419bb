//! A consumer's answers from its coordinator and the brokers: metadata,
//! `FindCoordinator`, `JoinGroup`, `SyncGroup`, committed offsets,
//! `ListOffsets`, offset validation (KIP-320), throttles and closed
//! connections (`ConsumerCoordinator`, `OffsetFetcher`).

use super::*;

impl Consumer {
    /// A `MetadataResponse`: the leaders and partition counts of the
    /// consumer's topics.
    pub(super) fn metadata_answer(
        &mut self,
        context: &mut ConsumerContext<'_>,
        leaders: BTreeMap<TopicPartition, (Option<BrokerId>, u32)>,
    ) {
        let topics = self.config.topics.clone();
        self.metadata_in_flight = None;
        self.metadata_at = context.now();
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        for (partition, (leader, epoch)) in leaders {
            if topics.iter().any(|topic| **topic == *partition.topic) {
                let count = counts.entry(partition.topic.to_string()).or_insert(0);
                *count = (*count).max(partition.partition + 1);
                // KIP-320: a broker cut off from the controller may still
                // name itself leader at an epoch this client has seen
                // replaced; that partition keeps what the client knew.
                if self.leader_epochs.get(&partition).is_some_and(|&seen| epoch < seen) {
                    continue;
                }
                let newer = self
                    .leader_epochs
                    .insert(partition.clone(), epoch)
                    .is_some_and(|seen| seen < epoch);
                // KIP-320 (`SubscriptionState#maybeValidatePositionForCurrentLeader`):
                // a new leader epoch puts a position with an epoch into
                // validation; its buffered records are dropped.
                if newer && self.position_epoch(&partition).is_some() && self.assignment.contains(&partition) {
                    self.validating.insert(partition.clone(), None);
                    self.buffer.remove(&partition);
                }
                self.leaders.insert(partition, leader);
            }
        }
        if !counts.is_empty() {
            self.partition_counts = counts;
        }
        if self.metadata_changed(context) {
            return;
        }
        self.fetch_all(context);
    }

    /// A `FindCoordinatorResponse`: join the group, or go on with a
    /// coordinator found again.
    pub(super) fn coordinator_found(&mut self, context: &mut ConsumerContext<'_>, coordinator: Option<BrokerId>) {
        if self.coordinator.is_some() {
            return;
        }
        if let Some(coordinator) = coordinator {
            self.coordinator = Some(coordinator);
            // A member that kept consuming while its coordinator was
            // unknown just heartbeats to the new one, which loaded
            // the group from __consumer_offsets: no rejoin.
            if self.phase == ConsumerPhase::FindingCoordinator {
                self.join(context);
            } else {
                self.fetch_positions(context);
                if self.config.consumer_protocol() {
                    self.member_heartbeat(context);
                }
            }
        }
    }

    /// A `JoinGroupResponse`: the new generation, or what its error asks for.
    pub(super) fn join_answer(
        &mut self,
        context: &mut ConsumerContext<'_>,
        member_id: String,
        result: Result<JoinResult, ErrorCode>,
    ) {
        match result {
            Ok(join) => self.joined(context, join),
            Err(ErrorCode::MemberIdRequired) => {
                // KIP-394: join again, with the id the coordinator gave.
                if self.phase == ConsumerPhase::Joining {
                    self.member_id = Some(member_id);
                    self.join(context);
                }
            }
            Err(ErrorCode::UnknownMemberId) => {
                // The coordinator does not know this member (a new
                // coordinator without its group, or it expired): join
                // again as a new member (`resetStateAndGeneration`).
                if self.phase == ConsumerPhase::Joining {
                    self.member_id = None;
                    self.join(context);
                }
            }
            Err(error) => self.group_error(context, error),
        }
    }

    /// A `SyncGroupResponse`: the member's partitions for the generation.
    pub(super) fn sync_answer(
        &mut self,
        context: &mut ConsumerContext<'_>,
        result: Result<Vec<TopicPartition>, ErrorCode>,
    ) {
        match result {
            Ok(partitions) => {
                if self.phase != ConsumerPhase::Syncing {
                    return;
                }
                self.phase = ConsumerPhase::Consuming;
                self.offset_fetch_in_flight = false;
                if self.cooperative() {
                    // KIP-429 (`ConsumerCoordinator#onJoinComplete`): keep
                    // what stays, start on what was added, and give up
                    // what moves; if anything was given up, join again
                    // so the next round hands it to its new owner.
                    let revoked: Vec<TopicPartition> = self
                        .assignment
                        .iter()
                        .filter(|partition| !partitions.contains(partition))
                        .cloned()
                        .collect();
                    if !revoked.is_empty() {
                        self.commit(context);
                    }
                    self.positions.retain(|partition, _| partitions.contains(partition));
                    self.resetting.retain(|partition, _| partitions.contains(partition));
                    self.fetching.retain(|partition, _| partitions.contains(partition));
                    self.buffer.retain(|partition, _| partitions.contains(partition));
                    self.assignment = partitions;
                    self.fetch_positions(context);
                    self.fetch_all(context);
                    if !revoked.is_empty() {
                        self.join(context);
                    }
                } else {
                    self.assignment = partitions;
                    // Eager protocol: every partition was revoked before
                    // the join, so each one assigned starts from its
                    // committed offset (`SubscriptionState#assignFromSubscribed`).
                    self.positions.clear();
                    self.resetting.clear();
                    self.buffer.clear();
                    self.fetch_positions(context);
                }
            }
            Err(error) => self.group_error(context, error),
        }
    }

    /// An `OffsetFetchResponse`: each partition starts at its committed
    /// offset, or where `auto.offset.reset` says.
    pub(super) fn committed_offsets(
        &mut self,
        context: &mut ConsumerContext<'_>,
        offsets: Vec<(TopicPartition, Option<Offset>)>,
    ) {
        let id = self.id;
        let reset = self.config.auto_offset_reset;
        self.offset_fetch_in_flight = false;
        for (partition, committed) in offsets {
            if self.resetting.contains_key(&partition) {
                continue;
            }
            match committed {
                Some(offset) => {
                    self.positions.insert(partition.clone(), offset);
                    self.committed.insert(partition, offset);
                }
                None if reset == OffsetReset::Earliest => {
                    self.positions.insert(partition, 0);
                }
                None if reset == OffsetReset::None => {
                    context.trace(TraceKind::NoOffsetForPartition {
                        client: NodeId::Consumer(id),
                        partition,
                    });
                    self.exception_stops(context);
                    return;
                }
                None => {
                    // Start at the end: ask the leader for its high watermark.
                    if let Some(Some(leader)) = self.leaders.get(&partition).copied() {
                        self.send(
                            context,
                            leader,
                            Message::ListOffsets {
                                partition,
                                spec: OffsetSpec::Latest,
                                isolation: self.config.isolation_level,
                            },
                        );
                    }
                }
            }
        }
        self.fetch_all(context);
    }

    /// A `ListOffsetsResponse`: where a partition being reset starts.
    pub(super) fn list_offsets_answer(
        &mut self,
        context: &mut ConsumerContext<'_>,
        partition: TopicPartition,
        offset: Offset,
    ) {
        let id = self.id;
        if let Some((_, from)) = self.resetting.remove(&partition) {
            if self.assignment.contains(&partition) {
                self.positions.insert(partition.clone(), offset);
                self.last_resets.insert(partition.clone(), (from, offset));
                context.trace(TraceKind::OffsetReset {
                    client: NodeId::Consumer(id),
                    partition,
                    offset,
                });
            }
        } else if self.assignment.contains(&partition) {
            self.positions.entry(partition).or_insert(offset);
        }
        self.fetch_all(context);
    }

    /// An `OffsetCommitResponse` with an error.
    pub(super) fn commit_failed(&mut self, context: &mut ConsumerContext<'_>, error: ErrorCode) {
        self.pending_commits.pop_front();
        self.sync_commit_settled(context);
        let modern = self.config.consumer_protocol();
        self.member_commit_settled(context);
        // A consumer-protocol member learns about its membership
        // from its heartbeats: a commit refused with a stale epoch
        // or an unknown member is only a failed commit.
        let membership = matches!(error, ErrorCode::StaleMemberEpoch | ErrorCode::UnknownMemberId);
        if !(modern && membership) {
            self.group_error(context, error);
        }
    }

    /// A broker answered a fetch empty with a throttle time: no fetch to
    /// it until then (`NetworkClient#maybeThrottle`), and what is in flight
    /// on that connection gets that much longer before it times out
    /// (`InFlightRequests#incrementThrottleTime`).
    pub(super) fn throttled(&mut self, context: &mut ConsumerContext<'_>, from: NodeId, throttle_time_ms: u64) {
        let id = self.id;
        let NodeId::Broker(broker) = from else {
            return;
        };
        let until = context.now() + throttle_time_ms;
        let entry = self.throttled_until.entry(broker).or_insert(until);
        *entry = (*entry).max(until);
        if let Some(queue) = self.outstanding.get_mut(&broker) {
            for (_, deadline) in queue.iter_mut() {
                *deadline += throttle_time_ms;
            }
        }
        let incarnation = self.incarnation;
        context.trace(TraceKind::Throttled {
            client: NodeId::Consumer(id),
            broker,
            throttle_time_ms,
            quota: QuotaType::Fetch,
        });
        context.timer(incarnation, throttle_time_ms, Timer::ConsumerUnthrottled);
    }

    /// Resets a lost `position` as `auto.offset.reset` says: asks the
    /// leader `from` for its start or end (`ListOffsets` at the consumer's
    /// isolation level) and remembers the reset until the answer.
    pub(super) fn reset_position(
        &mut self,
        context: &mut ConsumerContext<'_>,
        from: NodeId,
        partition: TopicPartition,
        spec: OffsetSpec,
        position: Offset,
    ) {
        self.resetting.insert(partition.clone(), (spec, position));
        let isolation = self.config.isolation_level;
        // Answers come from brokers only.
        let NodeId::Broker(leader) = from else { return };
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

    /// KIP-320: the leader's answer to `OffsetForLeaderEpoch`
    /// (`OffsetsForLeaderEpochUtils#handleResponse`,
    /// `SubscriptionState#maybeCompleteValidation`). An error keeps the
    /// position awaiting validation and asks for metadata again; an end
    /// offset at or past the position completes it; one below it means the
    /// log was truncated under the consumer: with `auto.offset.reset` set it
    /// seeks to that end, with `none` `poll()` throws
    /// `LogTruncationException`; no end known at all resets the position
    /// by `auto.offset.reset`.
    pub(super) fn validation_answer(
        &mut self,
        context: &mut ConsumerContext<'_>,
        from: NodeId,
        partition: TopicPartition,
        result: Result<Option<(u32, Offset)>, ErrorCode>,
    ) {
        let id = self.id;
        let NodeId::Broker(broker) = from else { return };
        if self.validating.get(&partition) != Some(&Some(broker)) {
            return;
        }
        let Some((position, _)) = self.position_epoch(&partition) else {
            self.validating.remove(&partition);
            self.fetch_all(context);
            return;
        };
        let answer = match result {
            Ok(answer) => answer,
            Err(_) => {
                // Retried after a metadata update (`OffsetFetcherUtils`:
                // `requestUpdate`, and not before `retry.backoff.ms`): the
                // partition's leader is unknown until that answer comes.
                self.validating.insert(partition.clone(), None);
                self.leaders.insert(partition, None);
                if self.refresh_pending.is_none() {
                    self.schedule_refresh(context, broker % context.config().brokers + 1);
                }
                return;
            }
        };
        self.validating.remove(&partition);
        let diverging = match answer {
            Some((_, end_offset)) if end_offset >= position => {
                self.fetch_all(context);
                return;
            }
            Some((epoch, end_offset)) => Some((epoch, end_offset)),
            None => None,
        };
        let reset = self.config.auto_offset_reset;
        context.trace(TraceKind::LogTruncationDetected {
            client: NodeId::Consumer(id),
            partition: partition.clone(),
            position,
            diverging: diverging.map(|(_, end_offset)| end_offset),
            reset,
        });
        self.buffer.remove(&partition);
        match (diverging, reset) {
            (_, OffsetReset::None) => {
                self.exception_stops(context);
                return;
            }
            (Some((epoch, end_offset)), _) => {
                self.positions.insert(partition.clone(), end_offset);
                self.position_epochs.insert(partition, (end_offset, epoch));
            }
            (None, reset) => {
                // `requestOffsetReset` with the default strategy.
                self.positions.remove(&partition);
                let spec = if reset == OffsetReset::Earliest {
                    OffsetSpec::Earliest
                } else {
                    OffsetSpec::Latest
                };
                self.reset_position(context, from, partition, spec, position);
            }
        }
        self.fetch_all(context);
    }

    /// Every request in flight to `from` failed: fetches it held are retried
    /// after a metadata refresh, and a lost coordinator is looked up again.
    pub(super) fn connection_closed(&mut self, context: &mut ConsumerContext<'_>, from: NodeId) {
        let NodeId::Broker(broker) = from else {
            return;
        };
        let lost_fetches: Vec<TopicPartition> = self
            .fetching
            .iter()
            .filter(|(partition, in_flight)| **in_flight && self.fetch_brokers.get(*partition) == Some(&broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        let lost_coordinator = self.coordinator == Some(broker);
        if self.metadata_in_flight == Some(broker) {
            self.metadata_in_flight = None;
        }
        for partition in lost_fetches {
            self.fetched(
                context,
                from,
                partition,
                FetchAnswer::default(),
                Some(ErrorCode::NotLeaderOrFollower),
            );
        }
        let lost_validations: Vec<TopicPartition> = self
            .validating
            .iter()
            .filter(|(_, in_flight)| **in_flight == Some(broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in lost_validations {
            self.validation_answer(context, from, partition, Err(ErrorCode::NetworkException));
        }
        if lost_coordinator && self.phase != ConsumerPhase::Stopped {
            self.group_error(context, ErrorCode::NetworkException);
        }
        self.fetch_all(context);
    }

    pub(super) fn joined(&mut self, context: &mut ConsumerContext<'_>, join: JoinResult) {
        if self.phase != ConsumerPhase::Joining {
            return;
        }
        self.member_id = Some(join.member_id.clone());
        self.generation = join.generation;
        self.phase = ConsumerPhase::Syncing;
        let group = self.config.group.clone();
        let Some(coordinator) = self.coordinator else {
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
        self.assignment_snapshot = (join.member_id == join.leader).then(|| self.partition_counts.clone());
        let assignment = leader.then(|| {
            let partition_counts = self.partition_counts.clone();
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
            instance: self.config.group_instance_id.clone(),
            assignment,
        };
        self.send(context, coordinator, message);
    }

    pub(crate) fn group_error(&mut self, context: &mut ConsumerContext<'_>, error: ErrorCode) {
        let id = self.id;
        match error {
            ErrorCode::RebalanceInProgress | ErrorCode::IllegalGeneration => {
                if self.phase == ConsumerPhase::Consuming || self.phase == ConsumerPhase::Syncing {
                    if error == ErrorCode::IllegalGeneration {
                        // Its generation is gone: what it owned is lost
                        // (`onPartitionsLost`), cooperative or not.
                        self.commit(context);
                        self.assignment.clear();
                        self.fetching.clear();
                        self.buffer.clear();
                    }
                    if self.processing_until.is_some() {
                        // The heartbeat thread only asks for a rejoin; the
                        // application joins in its next poll()
                        // (`AbstractCoordinator#requestRejoin`), so a busy
                        // handler holds up the whole group's join round.
                        self.rejoin_on_poll = true;
                    } else {
                        self.commit(context);
                        self.join(context);
                    }
                }
            }
            ErrorCode::UnknownMemberId => {
                self.member_id = None;
                self.assignment.clear();
                self.fetching.clear();
                // A JoinGroup already in flight will get the new id; a
                // second one would make this client two members.
                if self.phase != ConsumerPhase::Joining {
                    self.join(context);
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
                self.phase = ConsumerPhase::Stopped;
                context.set_running(false);
                self.incarnation += 1;
                self.assignment.clear();
                self.fetching.clear();
                let status = if error == ErrorCode::FencedInstanceId {
                    ConsumerChange::Fenced
                } else {
                    ConsumerChange::Refused { error }
                };
                context.trace(TraceKind::ConsumerStatus { consumer: id, status });
                self.drop_connections(context);
            }
            _ => {
                // NOT_COORDINATOR and the like: the coordinator is unknown
                // (`markCoordinatorUnknown`), and the client disconnects from
                // it, so nothing it still holds (a parked JoinGroup) answers
                // later. A member that has its partitions keeps reading them
                // while it looks for the coordinator again; one that was
                // joining joins again once it is found.
                let old = self.coordinator.take();
                if let (Some(broker), false) = (old, error == ErrorCode::NetworkException) {
                    context.connection_reset(broker);
                }
                // Requests on the old coordinator connection get no answer.
                self.pending_commits.clear();
                self.offset_fetch_in_flight = false;
                self.heartbeat_in_flight = false;
                self.member_commit_settled(context);
                self.sync_commit_settled(context);
                if self.phase != ConsumerPhase::Consuming {
                    self.phase = ConsumerPhase::FindingCoordinator;
                    self.assignment.clear();
                    self.fetching.clear();
                }
                // Not at once: the lookup waits retry.backoff.ms, as
                // `AbstractCoordinator.ensureCoordinatorReady` does, or a
                // coordinator that is gone but still in the metadata would
                // be asked again at network speed.
                self.schedule_retry(context, RETRY_BACKOFF_MS);
            }
        }
    }
}
