//! The KIP-848 consumer group protocol on the coordinator
//! (`group.protocol=consumer`), sans-IO: the `ConsumerGroupHeartbeat` half
//! of Kafka 4.x's `GroupMetadataManager`, with `ConsumerGroup`,
//! `ConsumerGroupMember`, `TargetAssignmentBuilder` and the member
//! reconciliation of `CurrentAssignmentBuilder`.
//!
//! There is no join or sync round and no global stop. Every member
//! heartbeats (`group.consumer.heartbeat.interval.ms`, 5000); a change of
//! membership or subscribed metadata bumps the *group epoch*, the
//! coordinator computes a new *target assignment* with its server-side
//! assignor (`uniform` by default, or `range`), and each member reconciles
//! towards its target on its own: partitions it must give up are revoked
//! first (it keeps its old *member epoch* until it stops reporting them),
//! partitions another member still owns are withheld until released, and
//! then it moves to the target epoch.
//!
//! As in Kafka, state changes only by replaying the records an operation
//! writes: an operation reads the state, returns records, and whoever
//! owns the log replays them ([`ConsumerShard::replay`]). Timers that fire
//! together all read the state before any of their records is replayed.
//!
//! Replayed against the 67 `consumer_protocol` sequences of
//! `vectors-group-coordinator.json` (SEMANTICS.md §12.1).
//!
//! Not modelled: static members (`group.instance.id` is stored, but a
//! static member is handled as a dynamic one), regular-expression
//! subscriptions, racks, classic-protocol members in a consumer group,
//! group deletion by the offsets-expiry job.

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::Serialize;

use super::assignors::{
    assign, GroupInput, Member, MemberMap, ServerOptions, Strategy, SubscriptionType, TopicPartition,
};
use super::timer::CoordinatorTimer;
use crate::protocol::ErrorCode;

/// A partition: topic name and index.
pub type Partition = (String, u32);

/// Kafka's `LEAVE_GROUP_MEMBER_EPOCH`.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;

/// A member's reconciliation state (`MemberState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MemberState {
    /// At its target epoch with its whole target assignment.
    Stable,
    /// Must stop reporting partitions it is giving up.
    UnrevokedPartitions,
    /// Waits for partitions other members still own.
    UnreleasedPartitions,
    /// Neither (a member that came back unknown).
    Unknown,
}

/// A consumer group's state (`ConsumerGroup.ConsumerGroupState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch is ahead of the target assignment's.
    Assigning,
    /// Some member is not at the target yet.
    Reconciling,
    /// Everyone is at the target.
    Stable,
}

/// A member of a consumer group (`ConsumerGroupMember`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsumerMember {
    /// Its id (the coordinator's).
    pub member_id: String,
    /// Its member epoch.
    pub member_epoch: i32,
    /// The epoch before.
    pub previous_member_epoch: i32,
    /// Where its reconciliation is.
    pub state: MemberState,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// The rebalance timeout (`max.poll.interval.ms`).
    pub rebalance_timeout_ms: i32,
    /// Its client id.
    pub client_id: String,
    /// Topics it subscribes to.
    pub subscribed_topic_names: BTreeSet<String>,
    /// The server assignor it asked for.
    pub server_assignor: Option<String>,
    /// Partitions it owns now.
    pub assigned: BTreeSet<Partition>,
    /// Partitions it must give up.
    pub pending_revocation: BTreeSet<Partition>,
}

impl ConsumerMember {
    fn new(member_id: &str) -> ConsumerMember {
        ConsumerMember {
            member_id: member_id.to_string(),
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            instance_id: None,
            rebalance_timeout_ms: -1,
            client_id: String::new(),
            subscribed_topic_names: BTreeSet::new(),
            server_assignor: None,
            assigned: BTreeSet::new(),
            pending_revocation: BTreeSet::new(),
        }
    }

    fn is_reconciled_to(&self, target_epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == target_epoch
    }
}

/// A consumer group on its coordinator (`ConsumerGroup`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsumerGroup {
    /// The group id.
    pub group_id: String,
    /// Bumped by every change of membership or subscribed metadata.
    pub group_epoch: i32,
    /// The epoch of the target assignment.
    pub assignment_epoch: i32,
    /// Its state.
    pub state: ConsumerGroupState,
    /// Members by id.
    pub members: BTreeMap<String, ConsumerMember>,
    /// Partition counts of the subscribed topics, as last stored.
    pub subscription_metadata: BTreeMap<String, u32>,
    /// The target assignment, per member.
    pub target: BTreeMap<String, BTreeSet<Partition>>,
    subscribed_topic_names: BTreeMap<String, usize>,
    server_assignors: BTreeMap<String, usize>,
    partition_epochs: BTreeMap<Partition, i32>,
    /// When the subscribed metadata must be looked at again, and for which
    /// group epoch.
    metadata_refresh: (u64, i32),
}

impl ConsumerGroup {
    fn new(group_id: &str) -> ConsumerGroup {
        ConsumerGroup {
            group_id: group_id.to_string(),
            group_epoch: 0,
            assignment_epoch: 0,
            state: ConsumerGroupState::Empty,
            members: BTreeMap::new(),
            subscription_metadata: BTreeMap::new(),
            target: BTreeMap::new(),
            subscribed_topic_names: BTreeMap::new(),
            server_assignors: BTreeMap::new(),
            partition_epochs: BTreeMap::new(),
            metadata_refresh: (0, 0),
        }
    }

    /// A member as it is, or a new one.
    fn member_or_new(&self, member_id: &str) -> ConsumerMember {
        self.members
            .get(member_id)
            .cloned()
            .unwrap_or_else(|| ConsumerMember::new(member_id))
    }

    /// The epoch at which a member owns (or is revoking) a partition; -1
    /// when free.
    fn partition_epoch(&self, partition: &Partition) -> i32 {
        self.partition_epochs.get(partition).copied().unwrap_or(-1)
    }

    fn update_state(&mut self) {
        self.state = if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|member| !member.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        };
    }

    fn count(counts: &mut BTreeMap<String, usize>, key: &str, up: bool) {
        if up {
            *counts.entry(key.to_string()).or_default() += 1;
        } else if let Some(count) = counts.get_mut(key) {
            *count -= 1;
            if *count == 0 {
                counts.remove(key);
            }
        }
    }

    /// `ConsumerGroup#updateMember` (and `removeMember` with `None`).
    fn put_member(&mut self, member_id: &str, new: Option<ConsumerMember>) {
        let old = match &new {
            Some(member) => self.members.insert(member_id.to_string(), member.clone()),
            None => self.members.remove(member_id),
        };
        if let Some(old) = &old {
            for topic in &old.subscribed_topic_names {
                Self::count(&mut self.subscribed_topic_names, topic, false);
            }
            if let Some(assignor) = &old.server_assignor {
                Self::count(&mut self.server_assignors, assignor, false);
            }
            for partition in old.assigned.iter().chain(&old.pending_revocation) {
                self.partition_epochs.remove(partition);
            }
        }
        if let Some(new) = &new {
            for topic in &new.subscribed_topic_names {
                Self::count(&mut self.subscribed_topic_names, topic, true);
            }
            if let Some(assignor) = &new.server_assignor {
                Self::count(&mut self.server_assignors, assignor, true);
            }
            for partition in new.assigned.iter().chain(&new.pending_revocation) {
                self.partition_epochs.insert(partition.clone(), new.member_epoch);
            }
        }
        self.update_state();
    }

    /// The subscribed topic counts with `old` replaced by `new`.
    fn subscribed_topics_with(
        &self,
        old: Option<&ConsumerMember>,
        new: Option<&ConsumerMember>,
    ) -> BTreeMap<String, usize> {
        let mut counts = self.subscribed_topic_names.clone();
        for topic in old.into_iter().flat_map(|member| &member.subscribed_topic_names) {
            Self::count(&mut counts, topic, false);
        }
        for topic in new.into_iter().flat_map(|member| &member.subscribed_topic_names) {
            Self::count(&mut counts, topic, true);
        }
        counts
    }

    /// The assignor most members asked for (`computePreferredServerAssignor`).
    fn preferred_assignor(&self, old: &ConsumerMember, new: &ConsumerMember) -> Option<String> {
        let mut counts = self.server_assignors.clone();
        if let Some(assignor) = &old.server_assignor {
            Self::count(&mut counts, assignor, false);
        }
        if let Some(assignor) = &new.server_assignor {
            Self::count(&mut counts, assignor, true);
        }
        let most = counts.values().copied().max()?;
        counts
            .into_iter()
            .find(|(_, count)| *count == most)
            .map(|(name, _)| name)
    }
}

/// A member's subscription record value (`ConsumerGroupMemberMetadataValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberMetadataValue {
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// The rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// The server assignor asked for.
    pub server_assignor: Option<String>,
    /// Subscribed topics.
    pub subscribed_topic_names: Vec<String>,
    /// The client id.
    pub client_id: String,
}

/// A member's current assignment record value
/// (`ConsumerGroupCurrentMemberAssignmentValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CurrentAssignmentValue {
    /// The member epoch.
    pub member_epoch: i32,
    /// The epoch before.
    pub previous_member_epoch: i32,
    /// Its reconciliation state.
    pub state: MemberState,
    /// Partitions it owns.
    pub assigned: BTreeSet<Partition>,
    /// Partitions it must give up.
    pub pending_revocation: BTreeSet<Partition>,
}

/// A record of a consumer group in `__consumer_offsets` (`None` values
/// are tombstones).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum ConsumerRecord {
    /// `ConsumerGroupMemberMetadata`.
    MemberMetadata {
        /// The group.
        group: String,
        /// The member.
        member: String,
        /// The value.
        value: Option<MemberMetadataValue>,
    },
    /// `ConsumerGroupPartitionMetadata`: partition counts of subscribed topics.
    PartitionMetadata {
        /// The group.
        group: String,
        /// The value.
        value: Option<BTreeMap<String, u32>>,
    },
    /// `ConsumerGroupMetadata`: the group epoch.
    GroupMetadata {
        /// The group.
        group: String,
        /// The epoch.
        value: Option<i32>,
    },
    /// `ConsumerGroupTargetAssignmentMember`.
    TargetAssignmentMember {
        /// The group.
        group: String,
        /// The member.
        member: String,
        /// Its target partitions.
        value: Option<BTreeSet<Partition>>,
    },
    /// `ConsumerGroupTargetAssignmentMetadata`: the target's epoch.
    TargetAssignmentMetadata {
        /// The group.
        group: String,
        /// The epoch.
        value: Option<i32>,
    },
    /// `ConsumerGroupCurrentMemberAssignment`.
    CurrentMemberAssignment {
        /// The group.
        group: String,
        /// The member.
        member: String,
        /// The value.
        value: Option<CurrentAssignmentValue>,
    },
}

/// A `ConsumerGroupHeartbeat` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeartbeatRequest {
    /// The group.
    pub group_id: String,
    /// The member id ("" to join).
    pub member_id: String,
    /// 0 to join, -1 to leave, else the last epoch received.
    pub member_epoch: i32,
    /// `group.instance.id`.
    pub instance_id: Option<String>,
    /// -1 when not sent.
    pub rebalance_timeout_ms: i32,
    /// `None` when not sent.
    pub subscribed_topic_names: Option<Vec<String>>,
    /// The server assignor asked for.
    pub server_assignor: Option<String>,
    /// What the member owns now; `None` when not sent.
    pub owned: Option<Vec<Partition>>,
    /// The client id.
    pub client_id: String,
}

/// A `ConsumerGroupHeartbeat` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeartbeatResponse {
    /// The error, `None` for `NONE`.
    pub error: Option<ErrorCode>,
    /// The member id.
    pub member_id: String,
    /// The member epoch.
    pub member_epoch: i32,
    /// When to heartbeat next.
    pub heartbeat_interval_ms: u64,
    /// The assignment, when sent.
    pub assignment: Option<BTreeSet<Partition>>,
}

impl HeartbeatResponse {
    /// An answer with only an error.
    pub fn error(error: ErrorCode) -> HeartbeatResponse {
        HeartbeatResponse {
            error: Some(error),
            member_id: String::new(),
            member_epoch: 0,
            heartbeat_interval_ms: 0,
            assignment: None,
        }
    }
}

/// What one call did: the answer (for a request), the records to append
/// and replay, and the timers that fired.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ConsumerOutput {
    /// The answer to the request.
    pub response: Option<HeartbeatResponse>,
    /// Records to append, then replay, in order.
    pub records: Vec<ConsumerRecord>,
    /// Timers that fired: key and time.
    pub timers_fired: Vec<(String, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
enum TimerOp {
    Session {
        group: String,
        member: String,
    },
    Rebalance {
        group: String,
        member: String,
        epoch: i32,
    },
    /// The shard's offsets-expiry job (deleting empty groups is not
    /// modelled) and its group-size gauge: kept because they sit in the
    /// timer's heap and so decide how equal deadlines break.
    Expire,
    SizeCounter,
}

const EXPIRE_KEY: &str = "expire-group-metadata";
const SIZE_COUNTER_KEY: &str = "classic-group-size-counter";
const EXPIRE_INTERVAL_MS: u64 = 600_000;
const SIZE_COUNTER_INTERVAL_MS: u64 = 60_000;

fn session_key(group: &str, member: &str) -> String {
    format!("session-timeout-{group}-{member}")
}

fn rebalance_key(group: &str, member: &str) -> String {
    format!("rebalance-timeout-{group}-{member}")
}

/// The coordinator's settings, with Kafka's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConsumerConfig {
    /// `group.consumer.session.timeout.ms` (45000).
    pub session_timeout_ms: u64,
    /// `group.consumer.heartbeat.interval.ms` (5000).
    pub heartbeat_interval_ms: u64,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            session_timeout_ms: 45_000,
            heartbeat_interval_ms: 5_000,
        }
    }
}

/// One `__consumer_offsets` partition's consumer-group coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsumerShard {
    config: ConsumerConfig,
    now_ms: u64,
    /// Topic name to partition count (the metadata image).
    topics: BTreeMap<String, u32>,
    groups: BTreeMap<String, ConsumerGroup>,
    timer: CoordinatorTimer<TimerOp>,
    member_counter: u64,
    /// Member ids to hand out next, before generated ones (Kafka's are
    /// random UUIDs; tests give the order they sort in).
    pub next_member_ids: VecDeque<String>,
    /// A target assignment to use instead of the uniform assignor's, when
    /// it covers exactly the members being assigned. Kafka's uniform
    /// assignor iterates a `HashMap` of random member ids, so which member
    /// gets which partition cannot be reproduced; tests follow Kafka's
    /// choice through this after checking the engine's is as balanced.
    pub uniform_override: Option<BTreeMap<String, BTreeSet<Partition>>>,
    /// The uniform assignor's own last answer (what the override replaced).
    pub last_uniform: Option<BTreeMap<String, BTreeSet<Partition>>>,
    out: ConsumerOutput,
}

impl ConsumerShard {
    /// An empty shard at `now_ms` that knows these topics.
    pub fn new(config: ConsumerConfig, now_ms: u64, topics: BTreeMap<String, u32>) -> ConsumerShard {
        ConsumerShard {
            config,
            now_ms,
            topics,
            groups: BTreeMap::new(),
            timer: CoordinatorTimer::default(),
            member_counter: 0,
            next_member_ids: VecDeque::new(),
            uniform_override: None,
            last_uniform: None,
            out: ConsumerOutput::default(),
        }
    }

    /// The shard's clock.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Moves the clock forward without running timers.
    pub fn set_time(&mut self, now_ms: u64) {
        self.now_ms = self.now_ms.max(now_ms);
    }

    /// A group, if it exists.
    pub fn group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.groups.get(group_id)
    }

    /// The partition is loaded (`GroupCoordinatorShard#onLoaded`): every
    /// member's session timeout starts again, a member still revoking gets
    /// its rebalance timeout (`GroupMetadataManager#onLoaded`), and the
    /// shard's periodic jobs are scheduled.
    pub fn on_loaded(&mut self) {
        let members: Vec<(String, ConsumerMember)> = self
            .groups
            .iter()
            .flat_map(|(group, state)| state.members.values().map(|member| (group.clone(), member.clone())))
            .collect();
        for (group, member) in members {
            self.schedule(
                session_key(&group, &member.member_id),
                self.config.session_timeout_ms,
                TimerOp::Session {
                    group: group.clone(),
                    member: member.member_id.clone(),
                },
            );
            if member.state == MemberState::UnrevokedPartitions {
                self.schedule(
                    rebalance_key(&group, &member.member_id),
                    u64::try_from(member.rebalance_timeout_ms).unwrap_or(0),
                    TimerOp::Rebalance {
                        group,
                        member: member.member_id.clone(),
                        epoch: member.member_epoch,
                    },
                );
            }
        }
        self.schedule(EXPIRE_KEY.to_string(), EXPIRE_INTERVAL_MS, TimerOp::Expire);
        self.schedule(
            SIZE_COUNTER_KEY.to_string(),
            SIZE_COUNTER_INTERVAL_MS,
            TimerOp::SizeCounter,
        );
    }

    /// Scheduled member timers: key to deadline.
    pub fn timers(&self) -> BTreeMap<String, u64> {
        let mut timers = self.timer.deadlines();
        timers.remove(EXPIRE_KEY);
        timers.remove(SIZE_COUNTER_KEY);
        timers
    }

    /// The earliest timer deadline.
    pub fn next_deadline(&self) -> Option<u64> {
        self.timer.next_deadline()
    }

    fn take(&mut self) -> ConsumerOutput {
        std::mem::take(&mut self.out)
    }

    fn schedule(&mut self, key: String, delay_ms: u64, op: TimerOp) {
        self.timer.schedule(key, self.now_ms, delay_ms, op);
    }

    /// Every group's member ids.
    pub fn member_ids(&self) -> impl Iterator<Item = (&str, impl Iterator<Item = &str>)> {
        self.groups
            .iter()
            .map(|(group, state)| (group.as_str(), state.members.keys().map(String::as_str)))
    }

    /// A topic's partition count in the shard's metadata image.
    pub fn topic_partitions(&self, topic: &str) -> Option<u32> {
        self.topics.get(topic).copied()
    }

    /// A topic gained partitions (`onNewMetadataImage`): groups subscribed
    /// to it look at their metadata again on their next heartbeat.
    pub fn set_topic(&mut self, topic: &str, partitions: u32) {
        self.topics.insert(topic.to_string(), partitions);
        for group in self.groups.values_mut() {
            if group.subscribed_topic_names.contains_key(topic) {
                group.metadata_refresh = (0, 0);
            }
        }
    }

    // ----- replay --------------------------------------------------------

    /// The group a record is about, created by its first record
    /// (`getOrMaybeCreatePersistedConsumerGroup`).
    fn persisted(&mut self, group: &str) -> &mut ConsumerGroup {
        self.groups
            .entry(group.to_string())
            .or_insert_with(|| ConsumerGroup::new(group))
    }

    /// Applies a record (`GroupMetadataManager#replay`).
    pub fn replay(&mut self, record: &ConsumerRecord) {
        match record {
            ConsumerRecord::MemberMetadata { group, member, value } => match value {
                Some(value) => {
                    let state = self.persisted(group);
                    let mut updated = state.member_or_new(member);
                    updated.instance_id = value.instance_id.clone();
                    updated.rebalance_timeout_ms = value.rebalance_timeout_ms;
                    updated.server_assignor = value.server_assignor.clone();
                    updated.subscribed_topic_names = value.subscribed_topic_names.iter().cloned().gather();
                    updated.client_id = value.client_id.clone();
                    state.put_member(member, Some(updated));
                }
                None => {
                    if let Some(state) = self.groups.get_mut(group) {
                        if state.members.contains_key(member) {
                            state.put_member(member, None);
                        }
                    }
                }
            },
            ConsumerRecord::PartitionMetadata { group, value } => {
                let state = self.persisted(group);
                state.subscription_metadata = value.clone().unwrap_or_default();
            }
            ConsumerRecord::GroupMetadata { group, value } => match value {
                Some(epoch) => {
                    let state = self.persisted(group);
                    state.group_epoch = *epoch;
                    state.update_state();
                }
                None => {
                    self.groups.remove(group);
                }
            },
            ConsumerRecord::TargetAssignmentMember { group, member, value } => match value {
                Some(partitions) => {
                    let state = self.persisted(group);
                    state.target.insert(member.clone(), partitions.clone());
                }
                None => {
                    if let Some(state) = self.groups.get_mut(group) {
                        state.target.remove(member);
                    }
                }
            },
            ConsumerRecord::TargetAssignmentMetadata { group, value } => {
                let state = self.persisted(group);
                state.assignment_epoch = value.unwrap_or(-1);
                state.update_state();
            }
            ConsumerRecord::CurrentMemberAssignment { group, member, value } => match value {
                Some(value) => {
                    let state = self.persisted(group);
                    let mut updated = state.member_or_new(member);
                    updated.member_epoch = value.member_epoch;
                    updated.previous_member_epoch = value.previous_member_epoch;
                    updated.state = value.state;
                    updated.assigned = value.assigned.clone();
                    updated.pending_revocation = value.pending_revocation.clone();
                    state.put_member(member, Some(updated));
                }
                None => {
                    if let Some(state) = self.groups.get_mut(group) {
                        if let Some(old) = state.members.get(member) {
                            let mut updated = old.clone();
                            updated.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                            updated.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                            updated.assigned.clear();
                            updated.pending_revocation.clear();
                            state.put_member(member, Some(updated));
                        }
                    }
                }
            },
        }
    }

    // ----- time ----------------------------------------------------------

    /// Moves the clock to `now_ms` and runs every timer due. All of them
    /// read the state as it was: replay the records afterwards.
    pub fn poll(&mut self, now_ms: u64) -> ConsumerOutput {
        self.set_time(now_ms);
        while let Some((key, op)) = self.timer.pop_expired(self.now_ms) {
            match op {
                TimerOp::Session { group, member } => {
                    self.out.timers_fired.push((key, self.now_ms));
                    self.fence_if_member(&group, &member, None);
                }
                TimerOp::Rebalance { group, member, epoch } => {
                    self.out.timers_fired.push((key, self.now_ms));
                    self.fence_if_member(&group, &member, Some(epoch));
                }
                TimerOp::Expire => self.schedule(key, EXPIRE_INTERVAL_MS, TimerOp::Expire),
                TimerOp::SizeCounter => self.schedule(key, SIZE_COUNTER_INTERVAL_MS, TimerOp::SizeCounter),
            }
        }
        self.take()
    }

    fn fence_if_member(&mut self, group_id: &str, member_id: &str, epoch: Option<i32>) {
        let Some(member) = self.groups.get(group_id).and_then(|group| group.members.get(member_id)) else {
            return;
        };
        if epoch.is_some_and(|epoch| epoch != member.member_epoch) {
            return;
        }
        let member = member.clone();
        self.fence(group_id, &member);
    }

    /// `consumerGroupFenceMember`: the member's three records become
    /// tombstones and the group epoch moves on.
    fn fence(&mut self, group_id: &str, member: &ConsumerMember) {
        let Some(group) = self.groups.get(group_id) else {
            return;
        };
        let member_id = member.member_id.clone();
        let group_name = group_id.to_string();
        let mut records = vec![
            ConsumerRecord::CurrentMemberAssignment {
                group: group_name.clone(),
                member: member_id.clone(),
                value: None,
            },
            ConsumerRecord::TargetAssignmentMember {
                group: group_name.clone(),
                member: member_id.clone(),
                value: None,
            },
            ConsumerRecord::MemberMetadata {
                group: group_name.clone(),
                member: member_id.clone(),
                value: None,
            },
        ];
        let subscribed = group.subscribed_topics_with(Some(member), None);
        let metadata = self.subscription_metadata(&subscribed);
        if metadata != group.subscription_metadata {
            records.push(ConsumerRecord::PartitionMetadata {
                group: group_name.clone(),
                value: Some(metadata),
            });
        }
        records.push(ConsumerRecord::GroupMetadata {
            group: group_name,
            value: Some(group.group_epoch + 1),
        });
        self.out.records.extend(records);
        self.timer.cancel(&session_key(group_id, &member_id));
        self.timer.cancel(&rebalance_key(group_id, &member_id));
    }

    fn subscription_metadata(&self, subscribed: &BTreeMap<String, usize>) -> BTreeMap<String, u32> {
        subscribed
            .keys()
            .filter_map(|topic| self.topics.get(topic).map(|count| (topic.clone(), *count)))
            .gather()
    }

    // ----- ConsumerGroupHeartbeat ------------------------------------------

    /// A `ConsumerGroupHeartbeat`: join (epoch 0), heartbeat, or leave
    /// (epoch -1).
    pub fn heartbeat(&mut self, request: &HeartbeatRequest) -> ConsumerOutput {
        let result = if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH {
            self.leave(request)
        } else {
            self.regular_heartbeat(request)
        };
        let response = match result {
            Ok(response) => response,
            Err(error) => {
                self.out.records.clear();
                HeartbeatResponse::error(error)
            }
        };
        self.out.response = Some(response);
        self.take()
    }

    fn leave(&mut self, request: &HeartbeatRequest) -> Result<HeartbeatResponse, ErrorCode> {
        let group = self.groups.get(&request.group_id).ok_or(ErrorCode::GroupIdNotFound)?;
        let member = group
            .members
            .get(&request.member_id)
            .cloned()
            .ok_or(ErrorCode::UnknownMemberId)?;
        self.fence(&request.group_id, &member);
        Ok(HeartbeatResponse {
            error: None,
            member_id: request.member_id.clone(),
            member_epoch: LEAVE_GROUP_MEMBER_EPOCH,
            heartbeat_interval_ms: 0,
            assignment: None,
        })
    }

    fn regular_heartbeat(&mut self, request: &HeartbeatRequest) -> Result<HeartbeatResponse, ErrorCode> {
        let group_id = request.group_id.clone();
        let joining = request.member_epoch == 0;
        check_heartbeat_request(request)?;
        let transient = !self.groups.contains_key(&group_id);
        if transient && !joining {
            return Err(ErrorCode::GroupIdNotFound);
        }
        let group = self
            .groups
            .get(&group_id)
            .cloned()
            .unwrap_or_else(|| ConsumerGroup::new(&group_id));
        let member_id = if request.member_id.is_empty() {
            self.member_counter += 1;
            self.next_member_ids
                .pop_front()
                .unwrap_or_else(|| format!("{}-{}", request.client_id, self.member_counter))
        } else {
            request.member_id.clone()
        };
        let member = match group.members.get(&member_id) {
            Some(member) => member.clone(),
            None if joining => ConsumerMember::new(&member_id),
            None => return Err(ErrorCode::UnknownMemberId),
        };
        // `throwIfConsumerGroupMemberEpochIsInvalid`: a newer epoch is
        // fenced; an older one only if it is not the previous epoch with a
        // subset of the current assignment (its answer was lost).
        if request.member_epoch > member.member_epoch {
            return Err(ErrorCode::FencedMemberEpoch);
        }
        if request.member_epoch < member.member_epoch {
            let subset = request
                .owned
                .as_ref()
                .is_some_and(|owned| owned.iter().all(|partition| member.assigned.contains(partition)));
            if request.member_epoch != member.previous_member_epoch || !subset {
                return Err(ErrorCode::FencedMemberEpoch);
            }
        }

        let updated = updated_member(&member, request);

        let mut records = Vec::new();
        let is_new = !group.members.contains_key(&member_id);
        let mut bump = false;
        if updated != member || is_new {
            records.push(ConsumerRecord::MemberMetadata {
                group: group_id.clone(),
                member: member_id.clone(),
                value: Some(MemberMetadataValue {
                    instance_id: updated.instance_id.clone(),
                    rebalance_timeout_ms: updated.rebalance_timeout_ms,
                    server_assignor: updated.server_assignor.clone(),
                    subscribed_topic_names: updated.subscribed_topic_names.iter().cloned().collect(),
                    client_id: updated.client_id.clone(),
                }),
            });
            bump = updated.subscribed_topic_names != member.subscribed_topic_names;
        }

        let (group_epoch, subscription_metadata, subscription_type) =
            self.refresh_subscriptions(&group, (!is_new).then_some(&member), &updated, bump, &mut records);

        let (target_epoch, target) = if group_epoch > group.assignment_epoch {
            let (target, target_records) = self.compute_target(
                &group,
                group_epoch,
                &member,
                &updated,
                &subscription_metadata,
                subscription_type,
            );
            records.extend(target_records);
            (group_epoch, target)
        } else {
            (
                group.assignment_epoch,
                group.target.get(&member_id).cloned().unwrap_or_default(),
            )
        };

        let reconciled = self.reconcile(&group, &updated, target_epoch, &target, request.owned.as_deref())?;
        if reconciled != updated {
            self.record_reconciled(&group_id, &member_id, &reconciled, &mut records);
        }
        self.schedule(
            session_key(&group_id, &member_id),
            self.config.session_timeout_ms,
            TimerOp::Session {
                group: group_id.clone(),
                member: member_id.clone(),
            },
        );
        let full = joining
            || (request.rebalance_timeout_ms != -1
                && request.subscribed_topic_names.is_some()
                && request.owned.is_some());
        let assignment = (full || reconciled.assigned != member.assigned).then(|| reconciled.assigned.clone());
        self.out.records.extend(records);
        Ok(HeartbeatResponse {
            error: None,
            member_id,
            member_epoch: reconciled.member_epoch,
            heartbeat_interval_ms: self.config.heartbeat_interval_ms,
            assignment,
        })
    }

    /// A member's reconciled assignment, written as its current
    /// assignment record; its rebalance timer armed while it still owns
    /// partitions it must revoke, else cancelled.
    fn record_reconciled(
        &mut self,
        group_id: &str,
        member_id: &str,
        reconciled: &ConsumerMember,
        records: &mut Vec<ConsumerRecord>,
    ) {
        records.push(ConsumerRecord::CurrentMemberAssignment {
            group: group_id.to_string(),
            member: member_id.to_string(),
            value: Some(CurrentAssignmentValue {
                member_epoch: reconciled.member_epoch,
                previous_member_epoch: reconciled.previous_member_epoch,
                state: reconciled.state,
                assigned: reconciled.assigned.clone(),
                pending_revocation: reconciled.pending_revocation.clone(),
            }),
        });
        if reconciled.state == MemberState::UnrevokedPartitions {
            self.schedule(
                rebalance_key(group_id, member_id),
                u64::try_from(reconciled.rebalance_timeout_ms).unwrap_or(0),
                TimerOp::Rebalance {
                    group: group_id.to_string(),
                    member: member_id.to_string(),
                    epoch: reconciled.member_epoch,
                },
            );
        } else {
            self.timer.cancel(&rebalance_key(group_id, member_id));
        }
    }

    /// The group's subscriptions after the heartbeat: when the member's
    /// subscription changed (`bump`) or the metadata refresh is due, the
    /// subscribed topics' metadata again, and the group epoch bumped if it
    /// changed, with their records. `old` is the member before, if it was
    /// one.
    fn refresh_subscriptions(
        &mut self,
        group: &ConsumerGroup,
        old: Option<&ConsumerMember>,
        updated: &ConsumerMember,
        mut bump: bool,
        records: &mut Vec<ConsumerRecord>,
    ) -> (i32, BTreeMap<String, u32>, Option<SubscriptionType>) {
        let now = self.now_ms;
        let group_id = group.group_id.clone();
        let mut group_epoch = group.group_epoch;
        let mut subscription_metadata = group.subscription_metadata.clone();
        let mut subscription_type = None;
        let expired = now >= group.metadata_refresh.0 || group.group_epoch < group.metadata_refresh.1;
        if bump || expired {
            let subscribed = group.subscribed_topics_with(old, Some(updated));
            subscription_metadata = self.subscription_metadata(&subscribed);
            let members = group.members.len() + usize::from(old.is_none());
            subscription_type = Some(if subscribed.values().all(|count| *count == members) {
                SubscriptionType::Homogeneous
            } else {
                SubscriptionType::Heterogeneous
            });
            if subscription_metadata != group.subscription_metadata {
                bump = true;
                records.push(ConsumerRecord::PartitionMetadata {
                    group: group_id.clone(),
                    value: Some(subscription_metadata.clone()),
                });
            }
            if bump {
                group_epoch += 1;
                records.push(ConsumerRecord::GroupMetadata {
                    group: group_id.clone(),
                    value: Some(group_epoch),
                });
            }
            // The metadata refresh interval is effectively infinite (Kafka's
            // default MAX_INT); a new group's deadline is not kept.
            if let Some(state) = self.groups.get_mut(&group_id) {
                state.metadata_refresh = (now.saturating_add(i32::MAX as u64), group_epoch);
            }
        }
        (group_epoch, subscription_metadata, subscription_type)
    }

    /// `TargetAssignmentBuilder#build`: the assignor over every member (the
    /// updated one as it is now), and a record for each member whose target
    /// changed, then the target's epoch.
    fn compute_target(
        &mut self,
        group: &ConsumerGroup,
        group_epoch: i32,
        member: &ConsumerMember,
        updated: &ConsumerMember,
        subscription_metadata: &BTreeMap<String, u32>,
        subscription_type: Option<SubscriptionType>,
    ) -> (BTreeSet<Partition>, Vec<ConsumerRecord>) {
        let mut members: BTreeMap<String, &ConsumerMember> =
            group.members.iter().map(|(id, member)| (id.clone(), member)).gather();
        members.insert(updated.member_id.clone(), updated);
        let assignor_name = group
            .preferred_assignor(member, updated)
            .unwrap_or_else(|| "uniform".to_string());
        let strategy = if assignor_name == "range" {
            Strategy::ServerRange
        } else {
            Strategy::Uniform
        };
        let input = GroupInput {
            topics: subscription_metadata.clone(),
            members: members
                .values()
                .map(|member| Member {
                    member_id: member.member_id.clone(),
                    group_instance_id: member.instance_id.clone(),
                    topics: member
                        .subscribed_topic_names
                        .iter()
                        .map(|topic| topic.as_str().into())
                        .collect(),
                    owned: group
                        .target
                        .get(&member.member_id)
                        .into_iter()
                        .flatten()
                        .map(|(topic, partition)| TopicPartition::new(topic.as_str(), *partition))
                        .collect(),
                    generation: None,
                })
                .collect(),
            topic_ids: BTreeMap::new(),
            options: Some(ServerOptions {
                map: Some(MemberMap::Hashmap),
                subscription_type,
            }),
        };
        let computed: BTreeMap<String, BTreeSet<Partition>> = assign(strategy, &input)
            .unwrap_or_default()
            .into_iter()
            .map(|(member, partitions)| {
                let partitions = partitions
                    .into_iter()
                    .map(|partition| (partition.topic.to_string(), partition.partition))
                    .gather();
                (member, partitions)
            })
            .gather();
        let mut assignment = computed.clone();
        if strategy == Strategy::Uniform {
            self.last_uniform = Some(computed);
            if let Some(chosen) = self
                .uniform_override
                .take()
                .filter(|chosen| chosen.keys().eq(members.keys()))
            {
                assignment = chosen;
            }
        }
        let mut records = Vec::new();
        for member_id in members.keys() {
            let new = assignment.get(member_id).cloned().unwrap_or_default();
            if group.target.get(member_id) != Some(&new) {
                records.push(ConsumerRecord::TargetAssignmentMember {
                    group: group.group_id.clone(),
                    member: member_id.clone(),
                    value: Some(new),
                });
            }
        }
        records.push(ConsumerRecord::TargetAssignmentMetadata {
            group: group.group_id.clone(),
            value: Some(group_epoch),
        });
        let target = assignment.get(&updated.member_id).cloned().unwrap_or_default();
        (target, records)
    }

    /// `CurrentAssignmentBuilder#build`: one step of the member towards its
    /// target.
    fn reconcile(
        &self,
        group: &ConsumerGroup,
        member: &ConsumerMember,
        target_epoch: i32,
        target: &BTreeSet<Partition>,
        owned: Option<&[Partition]>,
    ) -> Result<ConsumerMember, ErrorCode> {
        if member.is_reconciled_to(target_epoch) {
            return Ok(member.clone());
        }
        // Whether the member still reports any of these partitions (a
        // request without its owned partitions counts as still owning).
        let owns_any = |partitions: &BTreeSet<Partition>| match owned {
            None => true,
            Some(owned) => owned.iter().any(|partition| partitions.contains(partition)),
        };
        let next = |epoch: i32| self.next_assignment(group, member, epoch, target_epoch, target, owned);
        match member.state {
            MemberState::Stable if member.member_epoch != target_epoch => Ok(next(member.member_epoch)),
            MemberState::Stable => Ok(member.clone()),
            MemberState::UnrevokedPartitions => {
                if owns_any(&member.pending_revocation) {
                    Ok(member.clone())
                } else {
                    Ok(next(member.member_epoch + 1))
                }
            }
            MemberState::UnreleasedPartitions => Ok(next(member.member_epoch)),
            MemberState::Unknown => {
                if owned.is_none_or(|owned| !owned.is_empty()) {
                    Err(ErrorCode::FencedMemberEpoch)
                } else {
                    Ok(next(target_epoch))
                }
            }
        }
    }

    /// `computeNextAssignment`.
    fn next_assignment(
        &self,
        group: &ConsumerGroup,
        member: &ConsumerMember,
        member_epoch: i32,
        target_epoch: i32,
        target: &BTreeSet<Partition>,
        owned: Option<&[Partition]>,
    ) -> ConsumerMember {
        let assigned: BTreeSet<Partition> = member.assigned.intersection(target).cloned().gather();
        let revoking: BTreeSet<Partition> = member.assigned.difference(&assigned).cloned().gather();
        let mut pending: BTreeSet<Partition> = target.difference(&assigned).cloned().gather();
        let before = pending.len();
        pending.retain(|partition| group.partition_epoch(partition) == -1);
        let unreleased = pending.len() != before;
        let owns_revoking = match owned {
            None => true,
            Some(owned) => owned.iter().any(|partition| revoking.contains(partition)),
        };
        let mut next = member.clone();
        if !revoking.is_empty() && owns_revoking {
            next.state = MemberState::UnrevokedPartitions;
            next.previous_member_epoch = member.member_epoch;
            next.member_epoch = member_epoch;
            next.assigned = assigned;
            next.pending_revocation = revoking;
            return next;
        }
        let mut assigned = assigned;
        assigned.extend(pending.iter().cloned());
        next.state = if unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        };
        next.previous_member_epoch = member.member_epoch;
        next.member_epoch = target_epoch;
        next.assigned = assigned;
        next.pending_revocation = BTreeSet::new();
        next
    }
}

/// `throwIfConsumerGroupHeartbeatRequestIsInvalid`: a joining member
/// (epoch 0) names its rebalance timeout and subscription and owns
/// nothing; no epoch is below the leave epoch.
fn check_heartbeat_request(request: &HeartbeatRequest) -> Result<(), ErrorCode> {
    let joining = request.member_epoch == 0;
    if joining
        && (request.rebalance_timeout_ms == -1
            || request.owned.as_ref().is_none_or(|owned| !owned.is_empty())
            || request
                .subscribed_topic_names
                .as_ref()
                .is_none_or(|topics| topics.is_empty()))
    {
        return Err(ErrorCode::InvalidRequest);
    }
    if request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH {
        return Err(ErrorCode::InvalidRequest);
    }
    Ok(())
}

/// The member as the heartbeat updates it: instance id, rebalance
/// timeout, server assignor and subscription where the request gives
/// them, and its client id.
fn updated_member(member: &ConsumerMember, request: &HeartbeatRequest) -> ConsumerMember {
    let mut updated = member.clone();
    if let Some(instance) = &request.instance_id {
        updated.instance_id = Some(instance.clone());
    }
    if request.rebalance_timeout_ms != -1 {
        updated.rebalance_timeout_ms = request.rebalance_timeout_ms;
    }
    if let Some(assignor) = &request.server_assignor {
        updated.server_assignor = Some(assignor.clone());
    }
    if let Some(topics) = &request.subscribed_topic_names {
        updated.subscribed_topic_names = topics.iter().cloned().gather();
    }
    updated.client_id = request.client_id.clone();
    updated
}
