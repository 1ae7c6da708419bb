//! The group coordinator on the brokers (classic protocol:
//! `GroupMetadataManager`, `ClassicGroupState`): a group lives on the
//! broker that leads its `__consumer_offsets` partition
//! (`abs(groupId.hashCode()) % offsets.topic.num.partitions`). It runs the
//! JoinGroup / SyncGroup rounds, watches heartbeats, and stores committed
//! offsets as records of that partition, answering a commit once the
//! record is committed (the high watermark passed it).
//!
//! Simplifications, each a later step: no MEMBER_ID_REQUIRED round trip
//! (KIP-394), no static membership, no KIP-848 protocol; the initial
//! rebalance delay is `group.initial.rebalance.delay.ms` (3000) from the
//! first join.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::groups::assignors::TopicPartition;
use crate::groups::coordinator_partition;
use crate::replication::{BrokerId, Offset};

use super::broker::ParkedReply;
use super::trace::{HighWatermarkTrigger, MemberAssignment, RebalanceReason, TraceKind};
use super::types::{ErrorCode, JoinResult, Message, NodeId, Record};
use super::{Simulation, Timer};

/// The internal topic holding committed offsets.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";
/// `group.initial.rebalance.delay.ms`.
const INITIAL_REBALANCE_DELAY_MS: u64 = 3_000;
/// The rebalance timeout (`max.poll.interval.ms`, 300000).
const REBALANCE_TIMEOUT_MS: u64 = 300_000;
/// `offsets.commit.timeout.ms` (5000): how long an offset commit (or a new
/// generation) waits for its record to be replicated before it fails.
pub const OFFSETS_COMMIT_TIMEOUT_MS: u64 = 5_000;
/// Record ids of offset commits start here, apart from produced records.
pub const COMMIT_RECORD_BASE: u64 = 1 << 62;

/// A group's phase (`ClassicGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum GroupPhase {
    /// No members.
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Waiting for the leader's assignment.
    CompletingRebalance,
    /// Everyone has an assignment.
    Stable,
}

/// A member as the coordinator knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupMember {
    /// Its id.
    pub member_id: String,
    /// The client process.
    pub client: NodeId,
    /// Its subscription.
    pub topics: Vec<String>,
    /// What it owned (sticky assignors use it).
    pub owned: Vec<TopicPartition>,
    /// Its assignor.
    pub assignor: String,
    /// When it last showed life.
    pub last_heartbeat_ms: u64,
    /// Whether it joined in the rebalance under way.
    pub joined: bool,
}

/// A group on its coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupState {
    /// The phase.
    pub phase: GroupPhase,
    /// The generation (bumped by every completed join round).
    pub generation: u32,
    /// Members, in join order.
    pub members: Vec<GroupMember>,
    /// The leader's member id.
    pub leader: Option<String>,
    /// The current generation's assignment.
    pub assignment: BTreeMap<String, Vec<TopicPartition>>,
    /// Committed offsets.
    pub committed: BTreeMap<TopicPartition, Offset>,
    /// When the rebalance under way may complete at the earliest.
    pub rebalance_not_before_ms: u64,
    /// When it must complete at the latest.
    pub rebalance_deadline_ms: u64,
    /// Members waiting for their SyncGroup answer.
    pub pending_syncs: Vec<(String, NodeId)>,
    /// Why the rebalance under way started.
    pub rebalance_reason: RebalanceReason,
    next_member: u32,
}

impl GroupState {
    fn new() -> GroupState {
        GroupState {
            phase: GroupPhase::Empty,
            generation: 0,
            members: Vec::new(),
            leader: None,
            assignment: BTreeMap::new(),
            committed: BTreeMap::new(),
            rebalance_not_before_ms: 0,
            rebalance_deadline_ms: 0,
            pending_syncs: Vec::new(),
            rebalance_reason: RebalanceReason::Unstated,
            next_member: 0,
        }
    }
}

/// A record of `__consumer_offsets`: an offset commit, or the group's
/// metadata after a rebalance (its generation), so that a new coordinator
/// continues the generation numbering.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommitRecord {
    /// The group.
    pub group: String,
    /// What it commits (empty for a group-metadata record).
    pub offsets: Vec<(TopicPartition, Offset)>,
    /// The generation, for a group-metadata record.
    pub generation: Option<u32>,
}

impl Simulation {
    /// The `__consumer_offsets` partition a group lives on.
    pub(crate) fn offsets_partition(&self, group: &str) -> TopicPartition {
        let partition = coordinator_partition(group, self.config.offsets_topic_partitions).unwrap_or(0);
        TopicPartition::new(self.offsets_topic.clone(), partition)
    }

    fn is_coordinator(&self, id: BrokerId, group: &str) -> bool {
        let partition = self.offsets_partition(group);
        self.brokers[&id].leading.contains_key(&partition)
    }

    fn group_mut(&mut self, id: BrokerId, group: &str) -> &mut GroupState {
        self.brokers
            .get_mut(&id)
            .expect("broker")
            .groups
            .entry(group.to_string())
            .or_insert_with(GroupState::new)
    }

    /// The broker took or lost leadership of an offsets partition: load the
    /// committed offsets of its groups from the log, or drop them.
    pub(crate) fn coordinator_partition_changed(&mut self, id: BrokerId, partition: &TopicPartition, leading: bool) {
        let groups: Vec<String> = self.brokers[&id]
            .groups
            .keys()
            .filter(|group| self.offsets_partition(group) == *partition)
            .cloned()
            .collect();
        let broker = self.brokers.get_mut(&id).expect("broker");
        let mut unloaded = Vec::new();
        for group in groups {
            if let Some(state) = broker.groups.remove(&group) {
                unloaded.push((group, state));
            }
        }
        // Requests the group was holding (JoinGroups waiting for the round
        // to complete, SyncGroups waiting for the leader's assignment) are
        // answered NOT_COORDINATOR as the group unloads, so their members
        // look for the new coordinator (`GroupMetadataManager#onUnloaded`).
        for (group, state) in unloaded {
            let node = NodeId::Broker(id);
            if state.phase == GroupPhase::PreparingRebalance {
                for member in state.members.iter().filter(|member| member.joined) {
                    self.send(
                        node,
                        member.client,
                        Message::JoinGroupResponse {
                            group: group.clone(),
                            result: Err(ErrorCode::NotCoordinator),
                        },
                    );
                }
            }
            for (_, client) in &state.pending_syncs {
                self.send(
                    node,
                    *client,
                    Message::SyncGroupResponse {
                        group: group.clone(),
                        result: Err(ErrorCode::NotCoordinator),
                    },
                );
            }
        }
        if !leading {
            return;
        }
        let Some(log) = self.brokers[&id].logs.get(partition) else {
            return;
        };
        let mut loaded: BTreeMap<String, (BTreeMap<TopicPartition, Offset>, u32)> = BTreeMap::new();
        for record in log.records.iter() {
            if record.id < COMMIT_RECORD_BASE {
                continue;
            }
            if let Some(commit) = self.commits.get((record.id - COMMIT_RECORD_BASE) as usize) {
                let (offsets, generation) = loaded.entry(commit.group.clone()).or_default();
                for (topic_partition, offset) in &commit.offsets {
                    offsets.insert(topic_partition.clone(), *offset);
                }
                *generation = (*generation).max(commit.generation.unwrap_or(0));
            }
        }
        for (group, (committed, generation)) in loaded {
            let state = self.group_mut(id, &group);
            state.committed = committed;
            state.generation = generation;
        }
    }

    /// Handles group requests; returns `false` for other messages.
    pub(crate) fn coordinator_receive(&mut self, id: BrokerId, from: NodeId, message: &Message) -> bool {
        let node = NodeId::Broker(id);
        match message {
            Message::FindCoordinator { group } => {
                let partition = self.offsets_partition(group);
                let known = self.brokers[&id]
                    .metadata
                    .as_ref()
                    .and_then(|image| image.partitions.get(&partition));
                let coordinator = known.and_then(|registration| registration.leader);
                if known.is_none() {
                    // The first group of a cluster: `__consumer_offsets` is
                    // created now, and found on a later lookup.
                    self.controller_create_offsets_topic();
                }
                self.send(
                    node,
                    from,
                    Message::FindCoordinatorResponse {
                        group: group.clone(),
                        coordinator,
                    },
                );
            }
            Message::JoinGroup {
                group,
                member_id,
                topics,
                owned,
                assignor,
            } => {
                if !self.is_coordinator(id, group) {
                    let message = Message::JoinGroupResponse {
                        group: group.clone(),
                        result: Err(ErrorCode::NotCoordinator),
                    };
                    self.send(node, from, message);
                    return true;
                }
                self.coordinator_join(
                    id,
                    from,
                    group,
                    member_id.clone(),
                    topics.clone(),
                    owned.clone(),
                    assignor.clone(),
                );
            }
            Message::SyncGroup {
                group,
                generation,
                member_id,
                assignment,
            } => {
                self.coordinator_sync(id, from, group, *generation, member_id, assignment.clone());
            }
            Message::Heartbeat {
                group,
                generation,
                member_id,
            } => {
                let now = self.now;
                let error = if !self.is_coordinator(id, group) {
                    Some(ErrorCode::NotCoordinator)
                } else {
                    let state = self.group_mut(id, group);
                    match state.members.iter_mut().find(|member| &member.member_id == member_id) {
                        None => Some(ErrorCode::UnknownMemberId),
                        Some(member) => {
                            member.last_heartbeat_ms = now;
                            if state.phase == GroupPhase::PreparingRebalance {
                                Some(ErrorCode::RebalanceInProgress)
                            } else if *generation != state.generation {
                                Some(ErrorCode::IllegalGeneration)
                            } else {
                                None
                            }
                        }
                    }
                };
                self.send(
                    node,
                    from,
                    Message::HeartbeatResponse {
                        group: group.clone(),
                        error,
                    },
                );
            }
            Message::LeaveGroup { group, member_id } => {
                if self.is_coordinator(id, group) {
                    let state = self.group_mut(id, group);
                    state.members.retain(|member| &member.member_id != member_id);
                    self.coordinator_start_rebalance(
                        id,
                        group,
                        RebalanceReason::Left {
                            member: member_id.clone(),
                        },
                    );
                }
            }
            Message::OffsetCommit {
                group,
                generation,
                member_id,
                offsets,
            } => {
                self.coordinator_commit(id, from, group, *generation, member_id, offsets.clone());
            }
            Message::OffsetFetch { group, partitions } => {
                let result = if self.is_coordinator(id, group) {
                    let state = self.group_mut(id, group);
                    Ok(partitions
                        .iter()
                        .map(|partition| (partition.clone(), state.committed.get(partition).copied()))
                        .collect())
                } else {
                    Err(ErrorCode::NotCoordinator)
                };
                self.send(
                    node,
                    from,
                    Message::OffsetFetchResponse {
                        group: group.clone(),
                        result,
                    },
                );
            }
            _ => return false,
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn coordinator_join(
        &mut self,
        id: BrokerId,
        client: NodeId,
        group: &str,
        member_id: Option<String>,
        topics: Vec<String>,
        owned: Vec<TopicPartition>,
        assignor: String,
    ) {
        let now = self.now;
        let state = self.group_mut(id, group);
        let known = member_id
            .as_ref()
            .and_then(|member_id| state.members.iter().position(|member| &member.member_id == member_id));
        let member_id = match known {
            Some(index) => {
                let member = &mut state.members[index];
                member.joined = true;
                member.client = client;
                member.topics = topics;
                member.owned = owned;
                member.last_heartbeat_ms = now;
                member.member_id.clone()
            }
            None => {
                state.next_member += 1;
                let member_id = format!("{client}-{}", state.next_member);
                state.members.push(GroupMember {
                    member_id: member_id.clone(),
                    client,
                    topics,
                    owned,
                    assignor,
                    last_heartbeat_ms: now,
                    joined: true,
                });
                member_id
            }
        };
        let phase = self.group_mut(id, group).phase;
        if phase != GroupPhase::PreparingRebalance {
            let reason = if known.is_some() {
                RebalanceReason::Rejoined {
                    member: member_id.clone(),
                }
            } else {
                RebalanceReason::Joined {
                    member: member_id.clone(),
                }
            };
            self.coordinator_start_rebalance(id, group, reason);
            // The member just joined: keep its flag.
            if let Some(member) = self
                .group_mut(id, group)
                .members
                .iter_mut()
                .find(|member| member.member_id == member_id)
            {
                member.joined = true;
            }
        }
        self.coordinator_maybe_complete_join(id, group);
    }

    /// Moves a group to PreparingRebalance (or Empty when nobody is left).
    fn coordinator_start_rebalance(&mut self, id: BrokerId, group: &str, reason: RebalanceReason) {
        let now = self.now;
        let incarnation = self.brokers[&id].incarnation;
        let state = self.group_mut(id, group);
        if state.members.is_empty() {
            state.phase = GroupPhase::Empty;
            state.assignment.clear();
            return;
        }
        // Already preparing: the round goes on; members that already sent
        // their JoinGroup stay joined (Kafka's `maybePrepareRebalance`
        // only acts on a group that can rebalance; a member removed
        // meanwhile just lets the join round complete sooner).
        if state.phase == GroupPhase::PreparingRebalance {
            return;
        }
        let was_empty = state.phase == GroupPhase::Empty;
        state.phase = GroupPhase::PreparingRebalance;
        state.rebalance_reason = reason;
        let waiting = std::mem::take(&mut state.pending_syncs);
        for member in &mut state.members {
            member.joined = false;
        }
        // SyncGroups held for the round that is abandoned are answered
        // REBALANCE_IN_PROGRESS: their members join again.
        for (_, client) in waiting {
            self.send(
                NodeId::Broker(id),
                client,
                Message::SyncGroupResponse {
                    group: group.to_string(),
                    result: Err(ErrorCode::RebalanceInProgress),
                },
            );
        }
        let state = self.group_mut(id, group);
        state.rebalance_not_before_ms = if was_empty {
            now + INITIAL_REBALANCE_DELAY_MS
        } else {
            now
        };
        state.rebalance_deadline_ms = now + REBALANCE_TIMEOUT_MS;
        let delay = if was_empty { INITIAL_REBALANCE_DELAY_MS } else { 0 };
        self.schedule_timer(
            NodeId::Broker(id),
            incarnation,
            delay,
            Timer::GroupRebalanceCheck(group.to_string()),
        );
    }

    /// Completes the join round when every member rejoined (and the initial
    /// delay passed), or when the rebalance timeout ends.
    pub(crate) fn coordinator_maybe_complete_join(&mut self, id: BrokerId, group: &str) {
        let now = self.now;
        let node = NodeId::Broker(id);
        let state = self.group_mut(id, group);
        if state.phase != GroupPhase::PreparingRebalance || now < state.rebalance_not_before_ms {
            return;
        }
        let all_joined = state.members.iter().all(|member| member.joined);
        if !all_joined && now < state.rebalance_deadline_ms {
            return;
        }
        // Members that did not rejoin in time are removed.
        state.members.retain(|member| member.joined);
        if state.members.is_empty() {
            state.phase = GroupPhase::Empty;
            return;
        }
        state.generation += 1;
        state.phase = GroupPhase::CompletingRebalance;
        // Members have the rebalance timeout to send their SyncGroup (the
        // coordinator's pending-sync timeout).
        state.rebalance_deadline_ms = now + REBALANCE_TIMEOUT_MS;
        let leader = match &state.leader {
            Some(leader) if state.members.iter().any(|member| &member.member_id == leader) => leader.clone(),
            _ => state.members[0].member_id.clone(),
        };
        state.leader = Some(leader.clone());
        state.assignment.clear();
        let generation = state.generation;
        let assignor = state.members[0].assignor.clone();
        let members: Vec<(String, Vec<String>, Vec<TopicPartition>)> = state
            .members
            .iter()
            .map(|member| (member.member_id.clone(), member.topics.clone(), member.owned.clone()))
            .collect();
        let clients: Vec<(String, NodeId)> = state
            .members
            .iter()
            .map(|member| (member.member_id.clone(), member.client))
            .collect();
        for (member_id, client) in clients {
            let result = JoinResult {
                generation,
                member_id: member_id.clone(),
                leader: leader.clone(),
                assignor: assignor.clone(),
                members: if member_id == leader {
                    members.clone()
                } else {
                    Vec::new()
                },
            };
            self.send(
                node,
                client,
                Message::JoinGroupResponse {
                    group: group.to_string(),
                    result: Ok(result),
                },
            );
        }
    }

    fn coordinator_sync(
        &mut self,
        id: BrokerId,
        client: NodeId,
        group: &str,
        generation: u32,
        member_id: &str,
        assignment: Option<BTreeMap<String, Vec<TopicPartition>>>,
    ) {
        let node = NodeId::Broker(id);
        if !self.is_coordinator(id, group) {
            self.send(
                node,
                client,
                Message::SyncGroupResponse {
                    group: group.to_string(),
                    result: Err(ErrorCode::NotCoordinator),
                },
            );
            return;
        }
        let state = self.group_mut(id, group);
        let error = if !state.members.iter().any(|member| member.member_id == member_id) {
            Some(ErrorCode::UnknownMemberId)
        } else if generation != state.generation {
            Some(ErrorCode::IllegalGeneration)
        } else if state.phase == GroupPhase::PreparingRebalance {
            Some(ErrorCode::RebalanceInProgress)
        } else {
            None
        };
        if let Some(error) = error {
            self.send(
                node,
                client,
                Message::SyncGroupResponse {
                    group: group.to_string(),
                    result: Err(error),
                },
            );
            return;
        }
        state.pending_syncs.push((member_id.to_string(), client));
        if let (Some(assignment), Some(leader)) = (assignment, state.leader.clone()) {
            if leader == member_id && state.phase == GroupPhase::CompletingRebalance && state.assignment.is_empty() {
                // The assignment becomes the group's once it is durable in
                // __consumer_offsets (`GroupMetadataManager#storeGroup`).
                state.assignment = assignment;
                let generation = state.generation;
                self.coordinator_store_generation(id, group, generation);
            }
        }
        self.coordinator_answer_syncs(id, group);
    }

    fn coordinator_commit(
        &mut self,
        id: BrokerId,
        client: NodeId,
        group: &str,
        generation: u32,
        member_id: &str,
        offsets: Vec<(TopicPartition, Offset)>,
    ) {
        let node = NodeId::Broker(id);
        let respond = |simulation: &mut Simulation, result| {
            simulation.send(
                node,
                client,
                Message::OffsetCommitResponse {
                    group: group.to_string(),
                    result,
                },
            );
        };
        if !self.is_coordinator(id, group) {
            respond(self, Err(ErrorCode::NotCoordinator));
            return;
        }
        let state = self.group_mut(id, group);
        let error = if !state.members.iter().any(|member| member.member_id == member_id) {
            Some(ErrorCode::UnknownMemberId)
        } else if generation != state.generation {
            Some(ErrorCode::IllegalGeneration)
        } else if state.phase == GroupPhase::CompletingRebalance {
            Some(ErrorCode::RebalanceInProgress)
        } else {
            None
        };
        if let Some(error) = error {
            respond(self, Err(error));
            return;
        }
        // The commit is a record of the group's offsets partition.
        let partition = self.offsets_partition(group);
        let commit = CommitRecord {
            group: group.to_string(),
            offsets: offsets.clone(),
            generation: None,
        };
        let Some(offset) = self.coordinator_append(id, &partition, commit) else {
            respond(self, Err(ErrorCode::NotCoordinator));
            return;
        };
        self.leader_park_reply(
            id,
            &partition,
            client,
            offset,
            1,
            ParkedReply::OffsetCommit {
                group: group.to_string(),
                offsets,
            },
        );
        self.leader_release_held_fetches_pub(id, &partition);
        self.leader_maybe_advance_hw_pub(id, &partition, HighWatermarkTrigger::OffsetCommitAppended);
    }

    /// Appends one coordinator record (an offset commit or a group's
    /// generation) to the group's offsets partition, which broker `id`
    /// must lead; returns its offset.
    fn coordinator_append(&mut self, id: BrokerId, partition: &TopicPartition, commit: CommitRecord) -> Option<Offset> {
        let leader_epoch = self.brokers[&id].leading.get(partition)?.leader_epoch;
        self.commits.push(commit);
        let record_id = COMMIT_RECORD_BASE + (self.commits.len() - 1) as u64;
        let log = self.brokers.get_mut(&id)?.logs.get_mut(partition)?;
        let offset = log.log_end_offset();
        log.records.push(Record {
            offset,
            leader_epoch,
            id: record_id,
            bytes: 64,
            batch: None,
        });
        self.record(TraceKind::Appended {
            broker: id,
            partition: partition.clone(),
            first_offset: offset,
            count: 1,
            leader_epoch,
        });
        Some(offset)
    }

    /// Writes the group's new generation to its offsets partition (Kafka's
    /// GroupMetadata record), so a later coordinator continues from it.
    fn coordinator_store_generation(&mut self, id: BrokerId, group: &str, generation: u32) {
        let partition = self.offsets_partition(group);
        let commit = CommitRecord {
            group: group.to_string(),
            offsets: Vec::new(),
            generation: Some(generation),
        };
        let Some(offset) = self.coordinator_append(id, &partition, commit) else {
            return;
        };
        let reply = ParkedReply::GroupMetadata {
            group: group.to_string(),
            generation,
        };
        self.leader_park_reply(id, &partition, NodeId::Broker(id), offset, 1, reply);
        self.leader_release_held_fetches_pub(id, &partition);
        self.leader_maybe_advance_hw_pub(id, &partition, HighWatermarkTrigger::GenerationStored);
    }

    /// The group's new generation is durable (or could not be stored):
    /// answer the members' SyncGroup requests.
    pub(crate) fn coordinator_generation_stored(&mut self, id: BrokerId, group: &str, generation: u32, stored: bool) {
        let node = NodeId::Broker(id);
        let Some(state) = self
            .brokers
            .get_mut(&id)
            .and_then(|broker| broker.groups.get_mut(group))
        else {
            return;
        };
        if state.generation != generation || state.phase != GroupPhase::CompletingRebalance {
            return;
        }
        if !stored {
            state.assignment.clear();
            let pending = std::mem::take(&mut state.pending_syncs);
            for (_, client) in pending {
                let message = Message::SyncGroupResponse {
                    group: group.to_string(),
                    result: Err(ErrorCode::NotCoordinator),
                };
                self.send(node, client, message);
            }
            self.coordinator_start_rebalance(id, group, RebalanceReason::GenerationNotStored);
            return;
        }
        state.phase = GroupPhase::Stable;
        let summary: Vec<MemberAssignment> = state
            .members
            .iter()
            .map(|member| MemberAssignment {
                member_id: member.member_id.clone(),
                consumer: member.client,
                partitions: state.assignment.get(&member.member_id).cloned().unwrap_or_default(),
            })
            .collect();
        let reason = state.rebalance_reason.clone();
        self.record(TraceKind::GroupRebalanced {
            group: group.to_string(),
            generation,
            assignment: summary,
            reason,
        });
        self.coordinator_answer_syncs(id, group);
    }

    fn coordinator_answer_syncs(&mut self, id: BrokerId, group: &str) {
        let node = NodeId::Broker(id);
        let state = self.group_mut(id, group);
        if state.phase != GroupPhase::Stable {
            return;
        }
        let pending = std::mem::take(&mut state.pending_syncs);
        let answers: Vec<(NodeId, Vec<TopicPartition>)> = pending
            .into_iter()
            .map(|(member_id, client)| (client, state.assignment.get(&member_id).cloned().unwrap_or_default()))
            .collect();
        for (client, partitions) in answers {
            self.send(
                node,
                client,
                Message::SyncGroupResponse {
                    group: group.to_string(),
                    result: Ok(partitions),
                },
            );
        }
    }

    /// A commit reached the high watermark: it is durable.
    pub(crate) fn coordinator_commit_done(
        &mut self,
        id: BrokerId,
        client: NodeId,
        group: &str,
        offsets: Vec<(TopicPartition, Offset)>,
        result: Result<(), ErrorCode>,
    ) {
        if result.is_ok() {
            let state = self.group_mut(id, group);
            for (partition, offset) in &offsets {
                state.committed.insert(partition.clone(), *offset);
            }
            self.record(TraceKind::OffsetsCommitted {
                group: group.to_string(),
                offsets,
            });
        }
        self.send(
            NodeId::Broker(id),
            client,
            Message::OffsetCommitResponse {
                group: group.to_string(),
                result,
            },
        );
    }

    /// Periodic: expire members without heartbeats, finish due rebalances.
    pub(crate) fn coordinator_check_sessions(&mut self, id: BrokerId) {
        let now = self.now;
        let session_timeout = |simulation: &Simulation, client: NodeId| match client {
            NodeId::Consumer(consumer) => simulation
                .config
                .consumers
                .get(consumer as usize)
                .map_or(45_000, |config| config.session_timeout_ms),
            _ => 45_000,
        };
        let groups: Vec<String> = self.brokers[&id].groups.keys().cloned().collect();
        for group in groups {
            // Members waiting in a JoinGroup or a SyncGroup satisfy their
            // heartbeats (`ClassicGroupMember#hasSatisfiedHeartbeat`): only
            // the others expire.
            let state = &self.brokers[&id].groups[&group];
            let waiting = |member: &GroupMember| {
                (state.phase == GroupPhase::PreparingRebalance && member.joined)
                    || state.phase == GroupPhase::CompletingRebalance
            };
            let expired: Vec<String> = state
                .members
                .iter()
                .filter(|member| !waiting(member))
                .filter(|member| now.saturating_sub(member.last_heartbeat_ms) > session_timeout(self, member.client))
                .map(|member| member.member_id.clone())
                .collect();
            let state = &self.brokers[&id].groups[&group];
            if state.phase == GroupPhase::CompletingRebalance && now >= state.rebalance_deadline_ms {
                // Members that never sent their SyncGroup are removed and the
                // group rebalances without them.
                let synced: Vec<String> = state.pending_syncs.iter().map(|(member, _)| member.clone()).collect();
                let state = self.group_mut(id, &group);
                state.members.retain(|member| synced.contains(&member.member_id));
                state.phase = GroupPhase::Stable;
                self.coordinator_start_rebalance(id, &group, RebalanceReason::SyncTimeout);
            }
            if !expired.is_empty() {
                let state = self.group_mut(id, &group);
                state.members.retain(|member| !expired.contains(&member.member_id));
                self.coordinator_start_rebalance(id, &group, RebalanceReason::SessionTimeout { members: expired });
            }
            self.coordinator_maybe_complete_join(id, &group);
        }
    }
}
