//! The consumer group protocol of KIP-848 on the coordinator's broker:
//! `ConsumerGroupHeartbeat` to the consumer shard, its offset commits
//! (transactional ones too), and routing a consumer's requests to the
//! shard of its group's protocol (`GroupCoordinatorService`).

use super::*;

impl Broker {
    /// A `ConsumerGroupHeartbeat` goes to the consumer shard; its records
    /// are appended and its answer waits for them.
    pub(super) fn coordinator_consumer_heartbeat(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        partition: &TopicPartition,
        message: &Message,
    ) {
        let Message::ConsumerGroupHeartbeat {
            group,
            member_id,
            member_epoch,
            rebalance_timeout_ms,
            topics,
            assignor,
            owned,
        } = message
        else {
            return;
        };
        let now = context.now();
        let counts = self.topic_counts();
        let connection = context.connection(from);
        let Some(coordinator) = self.coordinators.get_mut(partition) else {
            return;
        };
        coordinator.next_request += 1;
        let request = coordinator.next_request;
        coordinator.requests.insert(request, (from, group.clone(), connection));
        let classic_members = coordinator
            .shard
            .group(group)
            .is_some_and(|classic| !classic.members.is_empty());
        if classic_members {
            // `getOrMaybeCreateConsumerGroup`: "Group is not a consumer group."
            self.coordinator_answer_heartbeat(
                context,
                partition,
                request,
                HeartbeatResponse::error(ErrorCode::GroupIdNotFound),
            );
            return;
        }
        if assignor
            .as_deref()
            .is_some_and(|name| !crate::sim::config::REMOTE_ASSIGNORS.contains(&name))
        {
            self.coordinator_answer_heartbeat(
                context,
                partition,
                request,
                HeartbeatResponse::error(ErrorCode::UnsupportedAssignor),
            );
            return;
        }
        // The shard's metadata image follows the broker's.
        for (topic, count) in &counts {
            if coordinator.consumer.topic_partitions(topic) != Some(*count) {
                coordinator.consumer.set_topic(topic, *count);
            }
        }
        coordinator.consumer.set_time(now);
        let joining = *member_epoch == 0;
        let request_body = HeartbeatRequest {
            group_id: group.clone(),
            member_id: member_id.clone(),
            member_epoch: *member_epoch,
            instance_id: None,
            rebalance_timeout_ms: i32::try_from(*rebalance_timeout_ms).unwrap_or(i32::MAX),
            subscribed_topic_names: Some(topics.clone()),
            server_assignor: assignor.clone(),
            owned: Some(
                owned
                    .iter()
                    .map(|partition| (partition.topic.to_string(), partition.partition))
                    .collect(),
            ),
            client_id: from.to_string(),
        };
        let output = coordinator.consumer.heartbeat(&request_body);
        context.note_member_client(member_id.clone(), from);
        let reason = if *member_epoch == modern::LEAVE_GROUP_MEMBER_EPOCH {
            RebalanceReason::Left {
                member: member_id.clone(),
            }
        } else if joining {
            RebalanceReason::Joined {
                member: member_id.clone(),
            }
        } else {
            RebalanceReason::Unstated
        };
        self.coordinator_route_consumer(context, partition, group, output, Some(request), reason);
    }

    /// An OffsetCommit for a consumer-protocol group: the member and its
    /// epoch are checked (`ConsumerGroup#validateOffsetCommit`), then the
    /// offsets are written like any group's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn coordinator_modern_commit(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        partition: &TopicPartition,
        group: &str,
        member_id: &str,
        epoch: u32,
        offsets: &[(TopicPartition, Offset)],
    ) {
        let now = context.now();
        let connection = context.connection(from);
        let Some(coordinator) = self.coordinators.get_mut(partition) else {
            return;
        };
        let validated = match coordinator
            .consumer
            .group(group)
            .and_then(|state| state.members.get(member_id))
        {
            None => Err(ErrorCode::UnknownMemberId),
            Some(member) if i64::from(member.member_epoch) != i64::from(epoch) => Err(ErrorCode::StaleMemberEpoch),
            Some(_) => Ok(()),
        };
        coordinator.next_request += 1;
        let request = coordinator.next_request;
        coordinator
            .requests
            .insert(request, (from, group.to_string(), connection));
        coordinator.shard.set_time(now);
        let output = match validated {
            Err(error) => Output {
                responses: vec![(request, Response::OffsetCommit(Some(error)))],
                ..Output::default()
            },
            Ok(()) => {
                let offsets = shard_offsets(offsets);
                coordinator.shard.commit_offsets(request, group, &offsets)
            }
        };
        self.coordinator_route(context, partition, output);
    }

    /// A `TxnOffsetCommit` for a consumer-protocol group: the member and
    /// its epoch are checked (`ConsumerGroup#validateOffsetCommit` with
    /// `isTransactional`; a stale epoch is `ILLEGAL_GENERATION` here,
    /// `OffsetMetadataManager#validateTransactionalOffsetCommit`).
    pub(super) fn coordinator_modern_txn_commit(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        partition: &TopicPartition,
        group: &str,
        message: &Message,
    ) {
        let Message::TxnOffsetCommit {
            request: client_request,
            producer_id,
            epoch,
            generation,
            member_id,
            offsets,
            ..
        } = message
        else {
            return;
        };
        let now = context.now();
        let connection = context.connection(from);
        let Some(coordinator) = self.coordinators.get_mut(partition) else {
            return;
        };
        let validated = match coordinator
            .consumer
            .group(group)
            .and_then(|state| state.members.get(member_id.as_str()))
        {
            None => Err(ErrorCode::UnknownMemberId),
            Some(member) if i64::from(member.member_epoch) != i64::from(*generation) => {
                Err(ErrorCode::IllegalGeneration)
            }
            Some(_) => Ok(()),
        };
        coordinator.next_request += 1;
        let request = coordinator.next_request;
        coordinator
            .requests
            .insert(request, (from, group.to_string(), connection));
        coordinator.shard.set_time(now);
        let output = match validated {
            Err(error) => Output {
                responses: vec![(request, Response::TxnOffsetCommit(*client_request, Some(error)))],
                ..Output::default()
            },
            Ok(()) => {
                let offsets = shard_offsets(offsets);
                coordinator.shard.transactional_offsets_write(
                    request,
                    *client_request,
                    group,
                    (*producer_id, *epoch),
                    &offsets,
                )
            }
        };
        self.coordinator_route(context, partition, output);
    }

    /// Appends the consumer shard's records (replaying each), and answers
    /// once they are committed; a new target assignment is traced then.
    pub(super) fn coordinator_route_consumer(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        group: &str,
        output: ConsumerOutput,
        request: Option<RequestId>,
        reason: RebalanceReason,
    ) {
        let target = output.records.iter().find_map(|record| match record {
            ConsumerRecord::TargetAssignmentMetadata {
                group: target_group,
                value: Some(epoch),
            } if target_group == group => Some(*epoch),
            _ => None,
        });
        let bumped = output.records.iter().any(|record| {
            matches!(record, ConsumerRecord::GroupMetadata { group: bumped, value: Some(_) } if bumped == group)
        });
        let mut reason = reason;
        if let Some(coordinator) = self.coordinators.get_mut(partition) {
            if bumped && reason != RebalanceReason::Unstated {
                coordinator.epoch_reasons.insert(group.to_string(), reason.clone());
            }
            if target.is_some() {
                reason = coordinator.epoch_reasons.remove(group).unwrap_or(reason);
            }
        }
        let mut last = None;
        let mut failed = false;
        for record in &output.records {
            match self.coordinator_append(context, partition, CommitRecord::Consumer(record.clone())) {
                Some(offset) => last = Some(offset),
                None => {
                    failed = true;
                    break;
                }
            }
            if let Some(coordinator) = self.coordinators.get_mut(partition) {
                coordinator.consumer.replay(record);
            }
        }
        let heartbeat = request.zip(output.response);
        if !failed && last.is_none() && heartbeat.is_some() {
            // An answer that wrote nothing still reads state written
            // before it: it waits until the last written offset is
            // committed (`CoordinatorRuntime`: "the read needs to wait on
            // the last write operation to be completed"), so no member
            // acts on an assignment a new coordinator would not load.
            let uncommitted = self
                .logs
                .get(partition)
                .filter(|log| log.high_watermark < log.log_end_offset())
                .map(|log| log.log_end_offset() - 1);
            if let Some(last_written) = uncommitted {
                let pending = PendingWrite {
                    callback: None,
                    response: None,
                    heartbeat,
                    target: None,
                    offsets: None,
                };
                self.coordinator_park_write(
                    context,
                    partition,
                    pending,
                    last_written,
                    HighWatermarkTrigger::GenerationStored,
                );
                return;
            }
        }
        if failed || last.is_none() {
            if let Some((request, response)) = heartbeat {
                let response = if failed {
                    HeartbeatResponse::error(ErrorCode::NotCoordinator)
                } else {
                    response
                };
                self.coordinator_answer_heartbeat(context, partition, request, response);
            }
            self.coordinator_arm(context, partition);
            return;
        }
        let Some(last) = last else { return };
        let target = target.and_then(|epoch| self.coordinator_target_trace(context, partition, group, epoch, reason));
        let pending = PendingWrite {
            callback: None,
            response: None,
            heartbeat,
            target,
            offsets: None,
        };
        self.coordinator_park_write(
            context,
            partition,
            pending,
            last,
            HighWatermarkTrigger::GenerationStored,
        );
    }

    /// Answers a `ConsumerGroupHeartbeat` on the connection it came on.
    pub(super) fn coordinator_answer_heartbeat(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        request: RequestId,
        response: HeartbeatResponse,
    ) {
        let Some((client, group)) = self.coordinator_take_request(context, partition, request) else {
            return;
        };
        let result = match response.error {
            Some(error) => Err(error),
            None => Ok(MemberEpochAnswer {
                member_id: response.member_id,
                member_epoch: response.member_epoch,
                heartbeat_interval_ms: response.heartbeat_interval_ms,
                assignment: response.assignment.map(|partitions| {
                    partitions
                        .into_iter()
                        .map(|(topic, partition)| TopicPartition::new(topic.as_str(), partition))
                        .collect()
                }),
            }),
        };
        context.send(client, Message::ConsumerGroupHeartbeatResponse { group, result });
    }

    /// The consumer shard's settings, from the cluster's.
    pub(super) fn consumer_shard_config(&self, context: &BrokerContext<'_>) -> modern::ConsumerConfig {
        modern::ConsumerConfig {
            session_timeout_ms: context.config().group_consumer_session_timeout_ms,
            heartbeat_interval_ms: context.config().group_consumer_heartbeat_interval_ms,
        }
    }

    /// Partition counts of the topics in a broker's metadata image.
    pub(super) fn topic_counts(&self) -> BTreeMap<String, u32> {
        let mut counts: BTreeMap<String, u32> = BTreeMap::new();
        if let Some(image) = self.metadata.as_ref() {
            for partition in image.partitions.keys() {
                let count = counts.entry(partition.topic.to_string()).or_insert(0);
                *count = (*count).max(partition.partition + 1);
            }
        }
        counts.remove(OFFSETS_TOPIC);
        counts
    }
}
