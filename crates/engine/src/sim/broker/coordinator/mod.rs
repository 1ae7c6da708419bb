//! The group coordinator on the brokers: a group lives on the broker that
//! leads its `__consumer_offsets` partition
//! (`abs(groupId.hashCode()) % offsets.topic.num.partitions`). That
//! broker runs the partition's [`ClassicShard`] (Kafka's
//! `GroupCoordinatorShard` with the classic protocol of
//! `GroupMetadataManager`), as Kafka's `CoordinatorRuntime` does:
//!
//! - requests go to the shard, and its answers go back to the clients;
//! - the records it writes (offset commits, group metadata) are appended
//!   to the partition and replicated like any other, and what waits on
//!   them (an OffsetCommit's answer, the SyncGroup answers of a new
//!   generation) goes out once the high watermark passes them, or fails
//!   after `offsets.commit.timeout.ms`;
//! - when another broker becomes the partition's leader, the old shard is
//!   unloaded (parked JoinGroup / SyncGroup requests get
//!   `NOT_COORDINATOR`) and the new leader loads the groups from the
//!   partition's records: members, generation, assignment and offsets
//!   come back as they were, so members heartbeat on with no rebalance.
//!
//! Beside it runs the partition's [`ConsumerShard`], the KIP-848 half
//! (`group.protocol=consumer`): `ConsumerGroupHeartbeat` requests go to
//! it, its records share the partition's log, its answers wait for them
//! to be committed, and a new leader loads its groups too. The offsets of
//! a consumer-protocol group are kept by the classic shard's offset store
//! after the consumer shard checked the member and its epoch
//! (`ConsumerGroup#validateOffsetCommit`).
//!
//! Simplifications: the shards apply records to their state when they are
//! appended, as Kafka's timeline state does, but never roll them back if
//! the append later fails (Kafka reverts to the last committed snapshot);
//! a group uses one protocol for its life (Kafka's online migration
//! between the two is not modelled): a JoinGroup for a consumer-protocol
//! group gets `INCONSISTENT_GROUP_PROTOCOL`, a `ConsumerGroupHeartbeat`
//! for a classic group with members `GROUP_ID_NOT_FOUND`; offsets of a
//! consumer-protocol group expire like a simple group's.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::groups::classic::{
    AppendCallback, ClassicConfig, ClassicShard, CoordinatorRecord, JoinRequest, MemberIdentity, Output, Protocol,
    RequestId, Response, SyncRequest, Write,
};
use crate::groups::consumer::{
    self as modern, ConsumerOutput, ConsumerRecord, ConsumerShard, HeartbeatRequest, HeartbeatResponse,
};
use crate::protocol::{BrokerId, Offset, TopicPartition};

use super::Broker;
use crate::replication::transactions::ControlType;
use crate::sim::contexts::BrokerContext;
use crate::sim::purgatory::ParkedReply;
use crate::sim::trace::{HighWatermarkTrigger, MemberAssignment, RebalanceReason, TraceKind};
use crate::sim::types::{BatchSequence, ErrorCode, JoinResult, MemberEpochAnswer, Message, NodeId, Record};
use crate::sim::Timer;

mod kip848;
mod writes;

pub use crate::protocol::OFFSETS_TOPIC;
/// `offsets.commit.timeout.ms` (5000): how long a coordinator write waits
/// for its records to be replicated before it fails.
pub const OFFSETS_COMMIT_TIMEOUT_MS: u64 = 5_000;
/// Record ids of coordinator records start here, apart from produced
/// records.
pub const COMMIT_RECORD_BASE: u64 = 1 << 62;

/// A record of `__consumer_offsets`: the classic shard's (group metadata,
/// offsets) or the consumer shard's (KIP-848 group state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CommitRecord {
    /// Written by the classic shard.
    Classic(CoordinatorRecord),
    /// Written by the consumer shard.
    Consumer(ConsumerRecord),
    /// Written by a transaction coordinator to `__transaction_state`.
    Transaction(crate::txn_coordinator::TxnRecord),
}

impl CommitRecord {
    /// The record's key in its compacted topic (each kind of coordinator
    /// record has its own key schema): the cleaner keeps the latest record
    /// of each key, so replaying what is left rebuilds the same state.
    pub fn key(&self) -> String {
        use crate::groups::consumer::ConsumerRecord as C;
        match self {
            CommitRecord::Classic(CoordinatorRecord::GroupMetadata { group, .. }) => format!("group:{group}"),
            CommitRecord::Classic(CoordinatorRecord::OffsetCommit {
                group,
                topic,
                partition,
                ..
            }) => format!("offset:{group}:{topic}-{partition}"),
            CommitRecord::Consumer(record) => match record {
                C::MemberMetadata { group, member, .. } => format!("member:{group}:{member}"),
                C::PartitionMetadata { group, .. } => format!("partitions:{group}"),
                C::GroupMetadata { group, .. } => format!("group:{group}"),
                C::TargetAssignmentMember { group, member, .. } => format!("target:{group}:{member}"),
                C::TargetAssignmentMetadata { group, .. } => format!("target-epoch:{group}"),
                C::CurrentMemberAssignment { group, member, .. } => format!("current:{group}:{member}"),
            },
            CommitRecord::Transaction(record) => format!("txn:{}", record.transactional_id),
        }
    }

    /// Whether the record deletes its key (a tombstone: a null value).
    pub fn is_tombstone(&self) -> bool {
        use crate::groups::consumer::ConsumerRecord as C;
        match self {
            CommitRecord::Classic(CoordinatorRecord::GroupMetadata { value, .. }) => value.is_none(),
            CommitRecord::Classic(CoordinatorRecord::OffsetCommit { value, .. }) => value.is_none(),
            CommitRecord::Consumer(record) => match record {
                C::MemberMetadata { value, .. } => value.is_none(),
                C::PartitionMetadata { value, .. } => value.is_none(),
                C::GroupMetadata { value, .. } => value.is_none(),
                C::TargetAssignmentMember { value, .. } => value.is_none(),
                C::TargetAssignmentMetadata { value, .. } => value.is_none(),
                C::CurrentMemberAssignment { value, .. } => value.is_none(),
            },
            CommitRecord::Transaction(_) => false,
        }
    }
}

/// A write waiting for the high watermark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingWrite {
    /// What the shard does once it is committed.
    pub callback: Option<AppendCallback>,
    /// The answer to send then.
    pub response: Option<(RequestId, Response)>,
    /// A `ConsumerGroupHeartbeat` answer to send then.
    pub heartbeat: Option<(RequestId, HeartbeatResponse)>,
    /// The new target assignment it stores, traced once it is committed.
    pub target: Option<TraceKind>,
    /// The group and the offsets it commits, for the trace.
    pub offsets: Option<(String, Vec<(TopicPartition, Offset)>)>,
}

/// One `__consumer_offsets` partition's coordinator on its leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Coordinator {
    /// The classic groups and every group's offsets.
    pub shard: ClassicShard,
    /// The consumer-protocol (KIP-848) groups.
    pub consumer: ConsumerShard,
    /// Requests the shard holds or will answer: the client, the group, and
    /// the connection the request came on (an answer goes back on it, or
    /// nowhere if it broke meanwhile).
    requests: BTreeMap<RequestId, (NodeId, String, u32)>,
    /// Writes waiting for the high watermark, by id.
    writes: BTreeMap<u64, PendingWrite>,
    next_request: RequestId,
    next_write: u64,
    /// The deadline a poll timer is scheduled for.
    armed_at: Option<u64>,
    /// Why a consumer-protocol group's epoch last moved, until its next
    /// target assignment is computed (a fenced or departed member bumps the
    /// epoch; the next heartbeat computes the target).
    epoch_reasons: BTreeMap<String, RebalanceReason>,
}

/// A consumer's subscription as its JoinGroup metadata carries it
/// (`ConsumerProtocolSubscription`: topics and owned partitions).
pub fn encode_subscription(topics: &[String], owned: &[TopicPartition]) -> Vec<u8> {
    let owned: Vec<String> = owned
        .iter()
        .map(|partition| format!("{}#{}", partition.topic, partition.partition))
        .collect();
    format!("{}\n{}", topics.join(","), owned.join(",")).into_bytes()
}

/// Reads [`encode_subscription`]'s bytes back.
pub fn decode_subscription(bytes: &[u8]) -> (Vec<String>, Vec<TopicPartition>) {
    let text = String::from_utf8_lossy(bytes);
    let (topics, owned) = text.split_once('\n').unwrap_or((&text, ""));
    let topics = topics
        .split(',')
        .filter(|topic| !topic.is_empty())
        .map(str::to_string)
        .collect();
    (topics, decode_partitions(owned))
}

/// A member's assignment as SyncGroup carries it
/// (`ConsumerProtocolAssignment`).
pub fn encode_assignment(partitions: &[TopicPartition]) -> Vec<u8> {
    partitions
        .iter()
        .map(|partition| format!("{}#{}", partition.topic, partition.partition))
        .collect::<Vec<_>>()
        .join(",")
        .into_bytes()
}

/// Reads [`encode_assignment`]'s bytes back.
pub fn decode_assignment(bytes: &[u8]) -> Vec<TopicPartition> {
    decode_partitions(&String::from_utf8_lossy(bytes))
}

fn decode_partitions(text: &str) -> Vec<TopicPartition> {
    text.split(',')
        .filter_map(|item| {
            let (topic, partition) = item.rsplit_once('#')?;
            Some(TopicPartition::new(topic, partition.parse().ok()?))
        })
        .collect()
}

/// Kafka's `appendGroupMetadataErrorToResponseError`: how a failed write
/// reaches the client.
fn append_error(error: ErrorCode) -> ErrorCode {
    match error {
        ErrorCode::NotLeaderOrFollower => ErrorCode::NotCoordinator,
        ErrorCode::UnknownTopicOrPartition | ErrorCode::NotEnoughReplicas | ErrorCode::RequestTimedOut => {
            ErrorCode::CoordinatorNotAvailable
        }
        other => other,
    }
}

impl Broker {
    /// The broker took or lost leadership of an offsets partition: the old
    /// shard unloads; a new leader loads the partition's groups from its
    /// records (`CoordinatorRuntime#scheduleLoadOperation`).
    pub(crate) fn coordinator_partition_changed(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        leading: bool,
    ) {
        let now = context.now();
        if let Some(mut coordinator) = self.coordinators.remove(partition) {
            coordinator.shard.set_time(now);
            let mut output = coordinator.shard.unload();
            // Writes still waiting for the high watermark fail
            // (`CoordinatorRuntime` fails its deferred events with
            // NOT_COORDINATOR when the partition is unloaded).
            let waiting = std::mem::take(&mut coordinator.writes);
            let mut heartbeats = Vec::new();
            for pending in waiting.into_values() {
                if let Some((request, response)) = pending.response {
                    output
                        .responses
                        .push((request, refused(response, ErrorCode::NotCoordinator)));
                }
                if let Some((request, _)) = pending.heartbeat {
                    heartbeats.push((request, heartbeat_error(ErrorCode::NotCoordinator)));
                }
            }
            self.coordinators.insert(partition.clone(), coordinator);
            self.coordinator_route(context, partition, output);
            for (request, response) in heartbeats {
                self.coordinator_answer_heartbeat(context, partition, request, response);
            }
            self.coordinators.remove(partition);
        }
        if !leading {
            return;
        }
        let Some(log) = self.logs.get(partition) else {
            return;
        };
        let mut shard = ClassicShard::new(ClassicConfig::default(), context.now(), context.member_counter());
        let mut consumer = ConsumerShard::new(self.consumer_shard_config(context), context.now(), self.topic_counts());
        for record in log.records() {
            if let Some(BatchSequence {
                producer_id,
                marker: Some(marker),
                ..
            }) = record.batch
            {
                shard.replay_end_transaction(producer_id, marker.control == ControlType::Commit);
                continue;
            }
            if record.id < COMMIT_RECORD_BASE {
                continue;
            }
            match context.commit_record(record.id) {
                Some(CommitRecord::Classic(commit)) => {
                    let producer = record
                        .batch
                        .filter(|batch| batch.transactional)
                        .map(|batch| batch.producer_id);
                    shard.replay_at(commit, record.offset, producer)
                }
                Some(CommitRecord::Consumer(commit)) => consumer.replay(commit),
                Some(CommitRecord::Transaction(_)) | None => {}
            }
        }
        shard.on_loaded();
        consumer.on_loaded();
        self.coordinators.insert(
            partition.clone(),
            Coordinator {
                shard,
                consumer,
                requests: BTreeMap::new(),
                writes: BTreeMap::new(),
                next_request: 0,
                next_write: 0,
                armed_at: None,
                epoch_reasons: BTreeMap::new(),
            },
        );
        self.coordinator_arm(context, partition);
    }

    /// Handles group requests; returns `false` for other messages.
    pub(crate) fn coordinator_receive(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        message: &Message,
    ) -> bool {
        if let Message::FindCoordinator { group } = message {
            self.coordinator_find(context, from, group);
            return true;
        }
        let Some(group) = request_group(message) else {
            return false;
        };
        let partition = context.offsets_partition(group);
        if !self.coordinators.contains_key(&partition) {
            self.coordinator_refuse(context, from, message, ErrorCode::NotCoordinator);
            return true;
        }
        // KIP-890: the transaction must hold the offsets partition first.
        if !self.coordinator_verify_offsets(context, from, &partition, message) {
            self.coordinator_handle(context, from, message);
        }
        true
    }

    /// A `TxnOffsetCommit` refused with `error`.
    pub(crate) fn coordinator_answer_txn_offsets(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        message: &Message,
        error: ErrorCode,
    ) {
        self.coordinator_refuse(context, from, message, error);
    }

    /// A group request for a group this broker coordinates (a
    /// `TxnOffsetCommit` once verified).
    pub(crate) fn coordinator_handle(&mut self, context: &mut BrokerContext<'_>, from: NodeId, message: &Message) {
        let now = context.now();
        let Some(group) = request_group(message).map(str::to_string) else {
            return;
        };
        let partition = context.offsets_partition(&group);
        if !self.coordinators.contains_key(&partition) {
            self.coordinator_refuse(context, from, message, ErrorCode::NotCoordinator);
            return;
        }
        if let Message::OffsetFetch { partitions, .. } = message {
            self.coordinator_offset_fetch(context, from, &partition, group, partitions);
            return;
        }
        if let Message::JoinGroup {
            member_id: Some(member),
            ..
        } = message
        {
            context.note_member_client(member.clone(), from);
        }
        if let Message::ConsumerGroupHeartbeat { .. } = message {
            self.coordinator_consumer_heartbeat(context, from, &partition, message);
            return;
        }
        let modern_group = self.coordinators[&partition].consumer.group(&group).is_some();
        if modern_group {
            match message {
                // One group, one protocol (see the module's notes).
                Message::JoinGroup { .. } | Message::SyncGroup { .. } | Message::Heartbeat { .. } => {
                    self.coordinator_refuse(context, from, message, ErrorCode::InconsistentGroupProtocol);
                    return;
                }
                Message::OffsetCommit {
                    generation,
                    member_id,
                    offsets,
                    ..
                } => {
                    self.coordinator_modern_commit(context, from, &partition, &group, member_id, *generation, offsets);
                    return;
                }
                Message::TxnOffsetCommit { .. } => {
                    self.coordinator_modern_txn_commit(context, from, &partition, &group, message);
                    return;
                }
                _ => {}
            }
        }
        let connection = context.connection(from);
        let Some(coordinator) = self.coordinators.get_mut(&partition) else {
            return;
        };
        coordinator.shard.set_time(now);
        coordinator.next_request += 1;
        let request = coordinator.next_request;
        coordinator.requests.insert(request, (from, group.clone(), connection));
        let shard = &mut coordinator.shard;
        let output = classic_request(shard, request, group, from, message);
        self.coordinator_route(context, &partition, output);
    }

    /// What this broker's metadata knows of a coordinator's partition
    /// (`__consumer_offsets` or `__transaction_state`): whether it exists
    /// there, and its leader, the coordinator `FindCoordinator` answers.
    pub(crate) fn coordinator_as_known(&self, partition: &TopicPartition) -> (bool, Option<BrokerId>) {
        let known = self.metadata.as_ref().and_then(|image| image.partitions.get(partition));
        (known.is_some(), known.and_then(|registration| registration.leader))
    }

    /// `FindCoordinator`: the leader of the group's `__consumer_offsets`
    /// partition as this broker's metadata knows it.
    fn coordinator_find(&mut self, context: &mut BrokerContext<'_>, from: NodeId, group: &str) {
        let partition = context.offsets_partition(group);
        let (known, coordinator) = self.coordinator_as_known(&partition);
        if !known {
            // The first group of a cluster: `__consumer_offsets` is
            // created now, and found on a later lookup.
            context.create_offsets_topic();
        }
        context.send(
            from,
            Message::FindCoordinatorResponse {
                group: group.to_string(),
                coordinator,
            },
        );
    }

    /// `OffsetFetch`: the group's committed offsets for `partitions`, or
    /// `UNSTABLE_OFFSET_COMMIT` while a transaction has some pending.
    fn coordinator_offset_fetch(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        partition: &TopicPartition,
        group: String,
        partitions: &[TopicPartition],
    ) {
        let shard = &self.coordinators[partition].shard;
        // Consumers fetch with `requireStable` (KIP-447): offsets a
        // transaction has not decided yet are not answered.
        let unstable = partitions
            .iter()
            .any(|tp| shard.has_pending_transactional_offsets(&group, &tp.topic, tp.partition));
        if unstable {
            context.send(
                from,
                Message::OffsetFetchResponse {
                    group,
                    result: Err(ErrorCode::UnstableOffsetCommit),
                },
            );
            return;
        }
        let committed = self.coordinators[partition].shard.committed_offsets(&group);
        let result = partitions
            .iter()
            .map(|tp| {
                let offset = committed
                    .get(&(tp.topic.to_string(), tp.partition))
                    .and_then(|offset| u64::try_from(*offset).ok());
                (tp.clone(), offset)
            })
            .collect();
        context.send(
            from,
            Message::OffsetFetchResponse {
                group,
                result: Ok(result),
            },
        );
    }

    /// Answers a group request this broker cannot take.
    fn coordinator_refuse(&mut self, context: &mut BrokerContext<'_>, to: NodeId, message: &Message, error: ErrorCode) {
        let reply = match message {
            Message::JoinGroup { group, member_id, .. } => Message::JoinGroupResponse {
                group: group.clone(),
                member_id: member_id.clone().unwrap_or_default(),
                result: Err(error),
            },
            Message::SyncGroup { group, .. } => Message::SyncGroupResponse {
                group: group.clone(),
                result: Err(error),
            },
            Message::Heartbeat { group, .. } => Message::HeartbeatResponse {
                group: group.clone(),
                error: Some(error),
            },
            Message::OffsetCommit { group, .. } => Message::OffsetCommitResponse {
                group: group.clone(),
                result: Err(error),
            },
            Message::OffsetFetch { group, .. } => Message::OffsetFetchResponse {
                group: group.clone(),
                result: Err(error),
            },
            Message::TxnOffsetCommit { request, group, .. } => Message::TxnOffsetCommitResponse {
                request: *request,
                group: group.clone(),
                error: Some(error),
            },
            Message::ConsumerGroupHeartbeat { group, .. } => Message::ConsumerGroupHeartbeatResponse {
                group: group.clone(),
                result: Err(error),
            },
            _ => return,
        };
        context.send(to, reply);
    }

    /// Sends the shard's answers, appends its writes, and keeps its timer
    /// armed.
    fn coordinator_route(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition, output: Output) {
        if let Some(coordinator) = self.coordinators.get(partition) {
            context.raise_member_counter(coordinator.shard.member_counter());
        }
        for (request, response) in output.responses {
            self.coordinator_answer(context, partition, request, response);
        }
        for write in output.writes {
            self.coordinator_write(context, partition, write);
        }
        self.coordinator_arm(context, partition);
    }

    /// The client and group of a request being answered, unless the
    /// client's connection closed while the request waited (the answer then
    /// goes nowhere).
    fn coordinator_take_request(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        request: RequestId,
    ) -> Option<(NodeId, String)> {
        let (client, group, connection) = self.coordinators.get_mut(partition)?.requests.remove(&request)?;
        (connection == context.connection(client)).then_some((client, group))
    }

    fn coordinator_answer(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        request: RequestId,
        response: Response,
    ) {
        let Some((client, group)) = self.coordinator_take_request(context, partition, request) else {
            return;
        };
        let message = match response {
            Response::Join(join) => {
                if !join.member_id.is_empty() {
                    context.note_member_client(join.member_id.clone(), client);
                }
                let result = match join.error {
                    Some(error) => Err(error),
                    None => {
                        let assignor = join.protocol_name.clone().unwrap_or_default();
                        Ok(JoinResult {
                            generation: join.generation.max(0) as u32,
                            member_id: join.member_id.clone(),
                            leader: join.leader.clone(),
                            assignor,
                            members: join
                                .members
                                .iter()
                                .map(|member| {
                                    let (topics, owned) = decode_subscription(&member.metadata);
                                    (member.member_id.clone(), topics, owned)
                                })
                                .collect(),
                            skip_assignment: join.skip_assignment,
                        })
                    }
                };
                Message::JoinGroupResponse {
                    group,
                    member_id: join.member_id,
                    result,
                }
            }
            Response::Sync(sync) => Message::SyncGroupResponse {
                group,
                result: match sync.error {
                    Some(error) => Err(error),
                    None => Ok(decode_assignment(&sync.assignment)),
                },
            },
            Response::Heartbeat(error) => Message::HeartbeatResponse { group, error },
            Response::OffsetCommit(error) => Message::OffsetCommitResponse {
                group,
                result: error.map_or(Ok(()), Err),
            },
            Response::TxnOffsetCommit(request, error) => Message::TxnOffsetCommitResponse { request, group, error },
            // LeaveGroup's answer is not waited for by the simulated client.
            Response::Leave(_) => return,
        };
        context.send(client, message);
    }

    /// The trace event of a target assignment just written (recorded
    /// once it is committed).
    fn coordinator_target_trace(
        &self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        group: &str,
        epoch: i32,
        reason: RebalanceReason,
    ) -> Option<TraceKind> {
        let state = self.coordinators.get(partition)?.consumer.group(group)?;
        let assignment: Vec<MemberAssignment> = state
            .target
            .iter()
            .map(|(member_id, partitions)| MemberAssignment {
                member_id: member_id.clone(),
                consumer: context.member_client(member_id),
                partitions: partitions
                    .iter()
                    .map(|(topic, partition)| TopicPartition::new(topic.as_str(), *partition))
                    .collect(),
            })
            .collect();
        Some(TraceKind::TargetAssignment {
            group: group.to_string(),
            epoch: epoch.max(0) as u32,
            assignment,
            reason,
        })
    }

    /// A new generation is durable: the trace records who got what.
    fn coordinator_trace_rebalance(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        group: &str,
        generation: i32,
    ) {
        let Some(state) = self.coordinators[partition].shard.group(group) else {
            return;
        };
        if state.generation != generation {
            return;
        }
        let assignment: Vec<MemberAssignment> = state
            .members
            .iter()
            .map(|member| MemberAssignment {
                member_id: member.member_id.clone(),
                consumer: context.member_client(&member.member_id),
                partitions: decode_assignment(&member.assignment),
            })
            .collect();
        let reason = state.rebalance_reason.clone();
        context.trace(TraceKind::GroupRebalanced {
            group: group.to_string(),
            generation: generation.max(0) as u32,
            assignment,
            reason,
        });
    }

    /// Schedules a poll for the shard's earliest timer, unless one is due
    /// as soon.
    fn coordinator_arm(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition) {
        let now = context.now();
        let incarnation = self.incarnation;
        let Some(coordinator) = self.coordinators.get_mut(partition) else {
            return;
        };
        let deadline = match (coordinator.shard.next_deadline(), coordinator.consumer.next_deadline()) {
            (Some(classic), Some(modern)) => classic.min(modern),
            (Some(deadline), None) | (None, Some(deadline)) => deadline,
            (None, None) => return,
        };
        if coordinator
            .armed_at
            .is_some_and(|armed| armed <= deadline && armed >= now)
        {
            return;
        }
        coordinator.armed_at = Some(deadline);
        context.timer(
            incarnation,
            deadline.saturating_sub(now),
            Timer::CoordinatorPoll(partition.clone()),
        );
    }

    /// The shard's timers that are due run (session, join and sync
    /// timeouts, the offsets-expiry job).
    pub(crate) fn coordinator_poll(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition) {
        let now = context.now();
        let Some(coordinator) = self.coordinators.get_mut(partition) else {
            return;
        };
        if coordinator.armed_at.is_some_and(|armed| armed <= now) {
            coordinator.armed_at = None;
        }
        let output = coordinator.shard.poll(now);
        let modern = coordinator.consumer.poll(now);
        self.coordinator_route(context, partition, output);
        // Fenced members: their records, grouped by group, each traced with
        // the timer that fenced them.
        let mut groups: BTreeMap<String, (Vec<ConsumerRecord>, RebalanceReason)> = BTreeMap::new();
        for record in &modern.records {
            let group = modern_record_group(record).to_string();
            groups
                .entry(group)
                .or_insert_with(|| (Vec::new(), RebalanceReason::Unstated))
                .0
                .push(record.clone());
        }
        for (key, _) in &modern.timers_fired {
            for (group, (_, reason)) in groups.iter_mut() {
                if let Some(member) = key.strip_prefix(&format!("session-timeout-{group}-")) {
                    match reason {
                        RebalanceReason::SessionTimeout { members } => members.push(member.to_string()),
                        _ => {
                            *reason = RebalanceReason::SessionTimeout {
                                members: vec![member.to_string()],
                            }
                        }
                    }
                } else if let Some(member) = key.strip_prefix(&format!("rebalance-timeout-{group}-")) {
                    *reason = RebalanceReason::RebalanceTimeout {
                        member: member.to_string(),
                    };
                }
            }
        }
        for (group, (records, reason)) in groups {
            let output = ConsumerOutput {
                records,
                ..ConsumerOutput::default()
            };
            self.coordinator_route_consumer(context, partition, &group, output, None, reason);
        }
        self.coordinator_arm(context, partition);
    }
}

/// Hands a classic-protocol request (or a transactional offset commit) to
/// the group's shard as request `request`; its answers and records come
/// back in the output.
fn classic_request(
    shard: &mut ClassicShard,
    request: RequestId,
    group: String,
    from: NodeId,
    message: &Message,
) -> Output {
    match message {
        Message::JoinGroup {
            member_id,
            instance,
            session_timeout_ms,
            rebalance_timeout_ms,
            topics,
            owned,
            assignor,
            ..
        } => {
            let join = JoinRequest {
                group_id: group,
                member_id: member_id.clone().unwrap_or_default(),
                group_instance_id: instance.clone(),
                session_timeout_ms: *session_timeout_ms,
                rebalance_timeout_ms: *rebalance_timeout_ms,
                protocol_type: "consumer".to_string(),
                protocols: vec![Protocol {
                    name: assignor.clone(),
                    metadata: encode_subscription(topics, owned),
                }],
                client_id: from.to_string(),
            };
            shard.join(request, &join)
        }
        Message::SyncGroup {
            generation,
            member_id,
            instance,
            assignment,
            ..
        } => {
            let sync = SyncRequest {
                group_id: group,
                member_id: member_id.clone(),
                group_instance_id: instance.clone(),
                generation: *generation as i32,
                assignments: assignment
                    .iter()
                    .flatten()
                    .map(|(member, partitions)| (member.clone(), encode_assignment(partitions)))
                    .collect(),
            };
            shard.sync(request, &sync)
        }
        Message::Heartbeat {
            generation,
            member_id,
            instance,
            ..
        } => {
            let identity = MemberIdentity::new(member_id, instance.as_deref());
            shard.heartbeat(request, &group, &identity, *generation as i32)
        }
        Message::LeaveGroup {
            member_id, instance, ..
        } => {
            let identity = MemberIdentity::new(member_id, instance.as_deref());
            shard.leave(request, &group, &[identity])
        }
        Message::OffsetCommit {
            generation,
            member_id,
            instance,
            offsets,
            ..
        } => {
            let identity = MemberIdentity::new(member_id, instance.as_deref());
            let offsets = shard_offsets(offsets);
            shard.commit(request, &group, &identity, *generation as i32, &offsets)
        }
        Message::TxnOffsetCommit {
            request: client_request,
            producer_id,
            epoch,
            generation,
            member_id,
            instance,
            offsets,
            ..
        } => {
            let identity = MemberIdentity::new(member_id, instance.as_deref());
            let offsets = shard_offsets(offsets);
            shard.commit_transactional(
                request,
                *client_request,
                &group,
                &identity,
                *generation,
                (*producer_id, *epoch),
                &offsets,
            )
        }
        _ => Output::default(),
    }
}

/// The group a consumer-shard record belongs to.
fn modern_record_group(record: &ConsumerRecord) -> &str {
    match record {
        ConsumerRecord::MemberMetadata { group, .. }
        | ConsumerRecord::PartitionMetadata { group, .. }
        | ConsumerRecord::GroupMetadata { group, .. }
        | ConsumerRecord::TargetAssignmentMember { group, .. }
        | ConsumerRecord::TargetAssignmentMetadata { group, .. }
        | ConsumerRecord::CurrentMemberAssignment { group, .. } => group,
    }
}

/// Offsets as the shard takes them: (topic, partition, offset).
fn shard_offsets(offsets: &[(TopicPartition, Offset)]) -> Vec<(String, u32, i64)> {
    offsets
        .iter()
        .map(|(tp, offset)| (tp.topic.to_string(), tp.partition, *offset as i64))
        .collect()
}

/// The group a group request is for.
fn request_group(message: &Message) -> Option<&str> {
    match message {
        Message::JoinGroup { group, .. }
        | Message::SyncGroup { group, .. }
        | Message::Heartbeat { group, .. }
        | Message::LeaveGroup { group, .. }
        | Message::OffsetCommit { group, .. }
        | Message::OffsetFetch { group, .. }
        | Message::TxnOffsetCommit { group, .. }
        | Message::ConsumerGroupHeartbeat { group, .. } => Some(group),
        _ => None,
    }
}

/// A classic answer turned into the same answer with `error`.
fn refused(response: Response, error: ErrorCode) -> Response {
    use crate::groups::classic::{JoinResponse, SyncResponse};
    match response {
        Response::Join(join) => Response::Join(JoinResponse::error(&join.member_id, error)),
        Response::Sync(_) => Response::Sync(SyncResponse::error(error)),
        Response::Heartbeat(_) => Response::Heartbeat(Some(error)),
        Response::OffsetCommit(_) => Response::OffsetCommit(Some(error)),
        Response::TxnOffsetCommit(request, _) => Response::TxnOffsetCommit(request, Some(error)),
        Response::Leave(leave) => Response::Leave(leave),
    }
}

/// A failed `ConsumerGroupHeartbeat` answer.
fn heartbeat_error(error: ErrorCode) -> HeartbeatResponse {
    HeartbeatResponse::error(error)
}
