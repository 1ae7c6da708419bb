//! The classic consumer-group protocol on the coordinator, sans-IO: the
//! classic half of Kafka 4.x's `GroupMetadataManager` with
//! `classic/ClassicGroup.java` and `ClassicGroupMember.java`, the offset
//! commits of `OffsetMetadataManager`, and the shard's timers
//! (`GroupCoordinatorShard`): JoinGroup (`MEMBER_ID_REQUIRED`, the initial
//! rebalance delay, static members), SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, session / join / sync timeouts, and loading a group back
//! from its `__consumer_offsets` records after a coordinator moves.
//!
//! A [`ClassicShard`] is one `__consumer_offsets` partition's coordinator.
//! It never waits: a request is answered at once, or parked on its member
//! (a JoinGroup waiting for the join phase, a follower's SyncGroup waiting
//! for the leader) and answered by a later call. Records it writes come
//! out as [`Write`]s; whoever owns the log appends them, replays them into
//! the shard when [`Write::replay`] says so (as `CoordinatorRuntime` does),
//! and calls [`ClassicShard::committed`] once they are committed (or
//! [`ClassicShard::append_failed`]). Each call returns an [`Output`]: the
//! answers it completed, the writes and the timers that fired.
//!
//! Replayed against 134 sequences computed by running Kafka's own
//! `GroupCoordinatorShard` (`vectors-group-coordinator.json`).
//!
//! Where Kafka picks from a `HashMap` (a new leader when the leader
//! leaves), this picks the earliest-joined member, or the first eligible
//! one of [`ClassicShard::leader_preference`].

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::timer::CoordinatorTimer;
use crate::protocol::{ErrorCode, RebalanceReason, TopicPartition};

mod join;
mod loading;
mod members;

/// Who sent a request and is waiting for its answer: the caller's handle.
pub type RequestId = u64;

/// Kafka's `JoinGroupRequest.UNKNOWN_MEMBER_ID`.
pub const UNKNOWN_MEMBER_ID: &str = "";

/// The coordinator's settings (`GroupCoordinatorConfig`), with Kafka's
/// defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ClassicConfig {
    /// `group.initial.rebalance.delay.ms` (3000).
    pub initial_rebalance_delay_ms: u64,
    /// How long a new member's parked JoinGroup may wait (300000).
    pub new_member_join_timeout_ms: u64,
    /// `group.min.session.timeout.ms` (6000).
    pub min_session_timeout_ms: u64,
    /// `group.max.session.timeout.ms` (1800000).
    pub max_session_timeout_ms: u64,
    /// `offsets.retention.check.interval.ms` (600000).
    pub offsets_retention_check_interval_ms: u64,
    /// `offsets.retention.minutes` (10080) in milliseconds.
    pub offsets_retention_ms: u64,
}

impl Default for ClassicConfig {
    fn default() -> Self {
        ClassicConfig {
            initial_rebalance_delay_ms: 3_000,
            new_member_join_timeout_ms: 300_000,
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            offsets_retention_check_interval_ms: 600_000,
            offsets_retention_ms: 10_080 * 60_000,
        }
    }
}

/// `ClassicGroupState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClassicState {
    /// No members (offsets may remain).
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Waiting for the leader's assignment.
    CompletingRebalance,
    /// Everyone has an assignment.
    Stable,
    /// Unloaded or deleted.
    Dead,
}

impl std::fmt::Display for ClassicState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            ClassicState::Empty => "Empty",
            ClassicState::PreparingRebalance => "PreparingRebalance",
            ClassicState::CompletingRebalance => "CompletingRebalance",
            ClassicState::Stable => "Stable",
            ClassicState::Dead => "Dead",
        })
    }
}

/// One protocol a member supports (`JoinGroupRequestProtocol`): for a
/// consumer, an assignor name and its subscription bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protocol {
    /// The protocol (assignor) name.
    pub name: String,
    /// Its metadata (the subscription).
    pub metadata: Vec<u8>,
}

/// A JoinGroup request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinRequest {
    /// The group.
    pub group_id: String,
    /// The member id, or [`UNKNOWN_MEMBER_ID`].
    pub member_id: String,
    /// `group.instance.id` for a static member.
    pub group_instance_id: Option<String>,
    /// `session.timeout.ms`.
    pub session_timeout_ms: u64,
    /// The rebalance timeout (the consumer's `max.poll.interval.ms`).
    pub rebalance_timeout_ms: u64,
    /// `consumer` for consumers.
    pub protocol_type: String,
    /// Supported protocols, preferred first.
    pub protocols: Vec<Protocol>,
    /// The client id (the prefix of a generated member id).
    pub client_id: String,
}

/// A member as a JoinGroup response lists it to the leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinMember {
    /// Its id.
    pub member_id: String,
    /// Its `group.instance.id`.
    pub group_instance_id: Option<String>,
    /// Its metadata for the chosen protocol.
    pub metadata: Vec<u8>,
}

/// A JoinGroup response (`JoinGroupResponseData`, defaults included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinResponse {
    /// The error, `None` for `NONE`.
    pub error: Option<ErrorCode>,
    /// The generation (-1 when none).
    pub generation: i32,
    /// The protocol type.
    pub protocol_type: Option<String>,
    /// The chosen protocol (Kafka's default is the empty string).
    pub protocol_name: Option<String>,
    /// The member's id.
    pub member_id: String,
    /// The leader's id (empty when none).
    pub leader: String,
    /// KIP-814: the leader need not assign (a static leader's rejoin).
    pub skip_assignment: bool,
    /// Every member, for the leader only.
    pub members: Vec<JoinMember>,
}

impl JoinResponse {
    /// An answer with only an error.
    pub fn error(member_id: &str, error: ErrorCode) -> JoinResponse {
        JoinResponse {
            error: Some(error),
            generation: -1,
            protocol_type: None,
            protocol_name: Some(String::new()),
            member_id: member_id.to_string(),
            leader: String::new(),
            skip_assignment: false,
            members: Vec::new(),
        }
    }
}

/// A SyncGroup request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncRequest {
    /// The group.
    pub group_id: String,
    /// The member.
    pub member_id: String,
    /// Its `group.instance.id`.
    pub group_instance_id: Option<String>,
    /// The generation it joined.
    pub generation: i32,
    /// The leader's assignment, member id to bytes (empty for followers).
    pub assignments: Vec<(String, Vec<u8>)>,
}

/// A SyncGroup response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SyncResponse {
    /// The error, `None` for `NONE`.
    pub error: Option<ErrorCode>,
    /// The protocol type.
    pub protocol_type: Option<String>,
    /// The protocol.
    pub protocol_name: Option<String>,
    /// The member's assignment.
    pub assignment: Vec<u8>,
}

impl SyncResponse {
    /// An answer with only an error.
    pub fn error(error: ErrorCode) -> SyncResponse {
        SyncResponse {
            error: Some(error),
            protocol_type: None,
            protocol_name: None,
            assignment: Vec::new(),
        }
    }
}

/// A member's identity in a Heartbeat, LeaveGroup or OffsetCommit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberIdentity {
    /// The member id.
    pub member_id: String,
    /// Its `group.instance.id`.
    pub group_instance_id: Option<String>,
}

impl MemberIdentity {
    /// A member id and its `group.instance.id`.
    pub fn new(member_id: &str, group_instance_id: Option<&str>) -> MemberIdentity {
        MemberIdentity {
            member_id: member_id.to_string(),
            group_instance_id: group_instance_id.map(str::to_string),
        }
    }
}

/// One member's answer in a LeaveGroup response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaveMemberResponse {
    /// The member id asked about.
    pub member_id: String,
    /// Its `group.instance.id`.
    pub group_instance_id: Option<String>,
    /// The error, `None` for `NONE`.
    pub error: Option<ErrorCode>,
}

/// A LeaveGroup response: a top-level error, or one answer per member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeaveResponse {
    /// The top-level error.
    pub error: Option<ErrorCode>,
    /// Per-member answers (none with a top-level error).
    pub members: Vec<LeaveMemberResponse>,
}

/// An answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Response {
    /// JoinGroup.
    Join(JoinResponse),
    /// SyncGroup.
    Sync(SyncResponse),
    /// Heartbeat: its error.
    Heartbeat(Option<ErrorCode>),
    /// LeaveGroup.
    Leave(LeaveResponse),
    /// OffsetCommit: its error.
    OffsetCommit(Option<ErrorCode>),
    /// TxnOffsetCommit: the client's request number and the error.
    TxnOffsetCommit(u64, Option<ErrorCode>),
}

/// A member as a GroupMetadata record stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberMetadata {
    /// Its id.
    pub member_id: String,
    /// Its `group.instance.id`.
    pub group_instance_id: Option<String>,
    /// Its client id.
    pub client_id: String,
    /// `session.timeout.ms`.
    pub session_timeout_ms: u64,
    /// The rebalance timeout.
    pub rebalance_timeout_ms: u64,
    /// Its metadata for the group's protocol.
    pub subscription: Vec<u8>,
    /// Its assignment.
    pub assignment: Vec<u8>,
}

/// A GroupMetadata record's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupMetadataValue {
    /// The protocol type ("" when none).
    pub protocol_type: String,
    /// The generation.
    pub generation: i32,
    /// The chosen protocol.
    pub protocol: Option<String>,
    /// The leader.
    pub leader: Option<String>,
    /// When the group entered its state (-1 when unknown).
    pub current_state_timestamp: i64,
    /// The members with their assignments.
    pub members: Vec<MemberMetadata>,
}

/// An OffsetCommit record's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffsetCommitValue {
    /// The next offset to consume.
    pub offset: i64,
    /// The leader epoch of the record consumed last (-1 when not given).
    pub leader_epoch: i32,
    /// Free text from the client.
    pub metadata: String,
    /// When it was committed.
    pub commit_timestamp: u64,
}

/// A record of `__consumer_offsets` (a compacted topic: the latest value
/// per key counts; `None` is a tombstone).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum CoordinatorRecord {
    /// Key: the group.
    GroupMetadata {
        /// The group.
        group: String,
        /// The value, or a tombstone.
        value: Option<GroupMetadataValue>,
    },
    /// Key: group, topic, partition.
    OffsetCommit {
        /// The group.
        group: String,
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The value, or a tombstone.
        value: Option<OffsetCommitValue>,
    },
}

/// What to do once a write is committed (or failed): the `appendFuture`
/// callbacks of Kafka's shard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum AppendCallback {
    /// A new group's empty metadata: on failure, the JoinGroup fails.
    NewGroup {
        /// The group.
        group: String,
        /// The JoinGroup to fail.
        request: RequestId,
    },
    /// The leader's assignment: on success, every member gets its part.
    Assignment {
        /// The group.
        group: String,
        /// The generation it is for.
        generation: i32,
        /// Member id to assignment.
        assignment: BTreeMap<String, Vec<u8>>,
    },
    /// A static member's new id, persisted without a rebalance.
    StaticMemberReplaced {
        /// The group.
        group: String,
        /// The JoinGroup to answer.
        request: RequestId,
        /// The id it replaced.
        old_member_id: String,
        /// The new id.
        new_member_id: String,
    },
}

/// Records to append, and what follows once they are committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Write {
    /// The records, in order.
    pub records: Vec<CoordinatorRecord>,
    /// Whether the log's owner replays them into the shard (offset commits
    /// and deletions are applied that way; classic group metadata is
    /// already applied).
    pub replay: bool,
    /// The callback for [`ClassicShard::committed`].
    pub callback: Option<AppendCallback>,
    /// The request's answer, sent once the records are committed.
    pub response: Option<(RequestId, Response)>,
    /// For a `TxnOffsetCommit`: the producer id and epoch the records are
    /// written with (a transactional batch, pending until its marker).
    pub transactional: Option<(u64, u16)>,
}

/// What one call did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Output {
    /// Answers sent now, in order (including parked requests answered).
    pub responses: Vec<(RequestId, Response)>,
    /// Records to append.
    pub writes: Vec<Write>,
    /// Timers that fired: key and time.
    pub timers_fired: Vec<(String, u64)>,
}

/// A member of a classic group (`ClassicGroupMember`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassicMember {
    /// Its id.
    pub member_id: String,
    /// Its `group.instance.id`.
    pub group_instance_id: Option<String>,
    /// Its client id.
    pub client_id: String,
    /// The rebalance timeout.
    pub rebalance_timeout_ms: u64,
    /// `session.timeout.ms`.
    pub session_timeout_ms: u64,
    /// Its protocol type.
    pub protocol_type: String,
    /// Its protocols.
    pub protocols: Vec<Protocol>,
    /// Its current assignment.
    pub assignment: Vec<u8>,
    /// The JoinGroup it is waiting on.
    pub awaiting_join: Option<RequestId>,
    /// The SyncGroup it is waiting on.
    pub awaiting_sync: Option<RequestId>,
    /// Joined in the rebalance under way and not yet given a generation.
    pub is_new: bool,
}

impl ClassicMember {
    /// `hasSatisfiedHeartbeat`: a member waiting in a JoinGroup or SyncGroup
    /// needs no heartbeats, unless it is new.
    fn has_satisfied_heartbeat(&self) -> bool {
        !self.is_new && (self.awaiting_join.is_some() || self.awaiting_sync.is_some())
    }

    fn metadata(&self, protocol: &str) -> Option<&[u8]> {
        self.protocols
            .iter()
            .find(|candidate| candidate.name == protocol)
            .map(|candidate| candidate.metadata.as_slice())
    }
}

/// A classic group (`ClassicGroup`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassicGroup {
    /// The group id.
    pub group_id: String,
    /// Its state.
    pub state: ClassicState,
    /// The state before.
    pub previous_state: ClassicState,
    /// When it entered its state.
    pub current_state_timestamp: Option<u64>,
    /// Its protocol type.
    pub protocol_type: Option<String>,
    /// The protocol chosen for the generation.
    pub protocol_name: Option<String>,
    /// The generation.
    pub generation: i32,
    /// The leader.
    pub leader: Option<String>,
    /// Members, in the order they were added.
    pub members: Vec<ClassicMember>,
    /// Dynamic members told `MEMBER_ID_REQUIRED` that have not joined yet.
    pub pending_join: BTreeSet<String>,
    /// Members of this generation that have not sent SyncGroup yet.
    pub pending_sync: BTreeSet<String>,
    /// Why the latest rebalance started (Kafka logs it as text).
    pub rebalance_reason: RebalanceReason,
    new_member_added: bool,
}

impl ClassicGroup {
    fn new(group_id: &str, now_ms: u64) -> ClassicGroup {
        ClassicGroup {
            group_id: group_id.to_string(),
            state: ClassicState::Empty,
            previous_state: ClassicState::Dead,
            current_state_timestamp: Some(now_ms),
            protocol_type: None,
            protocol_name: None,
            generation: 0,
            leader: None,
            members: Vec::new(),
            pending_join: BTreeSet::new(),
            pending_sync: BTreeSet::new(),
            rebalance_reason: RebalanceReason::Unstated,
            new_member_added: false,
        }
    }

    /// The member with this id.
    pub fn member(&self, member_id: &str) -> Option<&ClassicMember> {
        self.members.iter().find(|member| member.member_id == member_id)
    }

    fn member_mut(&mut self, member_id: &str) -> Option<&mut ClassicMember> {
        self.members.iter_mut().find(|member| member.member_id == member_id)
    }

    fn has_member(&self, member_id: &str) -> bool {
        self.member(member_id).is_some()
    }

    fn is_leader(&self, member_id: &str) -> bool {
        self.leader.as_deref() == Some(member_id)
    }

    /// The member id holding this `group.instance.id`.
    pub fn static_member_id(&self, instance: &str) -> Option<String> {
        self.members
            .iter()
            .find(|member| member.group_instance_id.as_deref() == Some(instance))
            .map(|member| member.member_id.clone())
    }

    fn awaiting_join_count(&self) -> usize {
        self.members
            .iter()
            .filter(|member| member.awaiting_join.is_some())
            .count()
    }

    /// `hasAllMembersJoined`.
    fn has_all_members_joined(&self) -> bool {
        self.members.len() == self.awaiting_join_count() && self.pending_join.is_empty()
    }

    /// The group's rebalance timeout: the largest of its members'.
    fn rebalance_timeout_ms(&self) -> u64 {
        self.members
            .iter()
            .map(|member| member.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    /// `canRebalance`: Stable, CompletingRebalance or Empty.
    fn can_rebalance(&self) -> bool {
        matches!(
            self.state,
            ClassicState::Stable | ClassicState::CompletingRebalance | ClassicState::Empty
        )
    }

    fn transition_to(&mut self, state: ClassicState, now_ms: u64) {
        self.previous_state = self.state;
        self.state = state;
        self.current_state_timestamp = Some(now_ms);
    }

    /// `validateMember`: the static instance must map to this member id,
    /// and the member must exist.
    fn validate_member(&self, member_id: &str, instance: Option<&str>) -> Result<(), ErrorCode> {
        if let Some(instance) = instance {
            match self.static_member_id(instance) {
                None => return Err(ErrorCode::UnknownMemberId),
                Some(existing) if existing != member_id => return Err(ErrorCode::FencedInstanceId),
                Some(_) => {}
            }
        }
        if self.has_member(member_id) {
            Ok(())
        } else {
            Err(ErrorCode::UnknownMemberId)
        }
    }

    /// Protocols every member supports.
    fn candidate_protocols(&self) -> Vec<String> {
        let Some(first) = self.members.first() else {
            return Vec::new();
        };
        first
            .protocols
            .iter()
            .map(|protocol| protocol.name.clone())
            .filter(|name| {
                self.members
                    .iter()
                    .all(|member| member.protocols.iter().any(|protocol| &protocol.name == name))
            })
            .collect()
    }

    /// `supportsProtocols(protocolType, protocols)`.
    fn supports_protocols(&self, protocol_type: &str, protocols: &[Protocol]) -> bool {
        if self.state == ClassicState::Empty {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols.iter().any(|protocol| {
                    self.members
                        .iter()
                        .all(|member| member.protocols.iter().any(|theirs| theirs.name == protocol.name))
                })
        }
    }

    /// `selectProtocol`: each member votes for its most preferred
    /// candidate; the most votes win (ties: the earliest candidate).
    fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
        for member in &self.members {
            if let Some(vote) = member
                .protocols
                .iter()
                .find(|protocol| candidates.contains(&protocol.name))
            {
                *votes.entry(vote.name.as_str()).or_default() += 1;
            }
        }
        let mut best: Option<(&str, usize)> = None;
        for candidate in &candidates {
            let count = votes.get(candidate.as_str()).copied().unwrap_or(0);
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((candidate.as_str(), count));
            }
        }
        best.map(|(name, _)| name.to_string())
    }

    /// `groupAssignment`.
    fn group_assignment(&self) -> BTreeMap<String, Vec<u8>> {
        self.members
            .iter()
            .map(|member| (member.member_id.clone(), member.assignment.clone()))
            .gather()
    }

    /// A JoinGroup answer for `member_id` in the current generation; the
    /// member list goes with it when `with_members` (the leader's answer).
    fn join_response(&self, member_id: &str, with_members: bool, skip_assignment: bool) -> JoinResponse {
        JoinResponse {
            error: None,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            member_id: member_id.to_string(),
            leader: self.leader.clone().unwrap_or_default(),
            skip_assignment,
            members: if with_members { self.join_members() } else { Vec::new() },
        }
    }

    /// The members as the leader's JoinGroup response lists them.
    fn join_members(&self) -> Vec<JoinMember> {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        self.members
            .iter()
            .map(|member| JoinMember {
                member_id: member.member_id.clone(),
                group_instance_id: member.group_instance_id.clone(),
                metadata: member.metadata(&protocol).map(<[u8]>::to_vec).unwrap_or_default(),
            })
            .collect()
    }

    fn metadata_record(&self, assignment: &BTreeMap<String, Vec<u8>>) -> CoordinatorRecord {
        let protocol = self.protocol_name.clone().unwrap_or_default();
        CoordinatorRecord::GroupMetadata {
            group: self.group_id.clone(),
            value: Some(GroupMetadataValue {
                protocol_type: self.protocol_type.clone().unwrap_or_default(),
                generation: self.generation,
                protocol: self.protocol_name.clone(),
                leader: self.leader.clone(),
                current_state_timestamp: self.state_timestamp(),
                members: self
                    .members
                    .iter()
                    .map(|member| MemberMetadata {
                        member_id: member.member_id.clone(),
                        group_instance_id: member.group_instance_id.clone(),
                        client_id: member.client_id.clone(),
                        session_timeout_ms: member.session_timeout_ms,
                        rebalance_timeout_ms: member.rebalance_timeout_ms,
                        subscription: member.metadata(&protocol).map(<[u8]>::to_vec).unwrap_or_default(),
                        assignment: assignment.get(&member.member_id).cloned().unwrap_or_default(),
                    })
                    .collect(),
            }),
        }
    }

    fn state_timestamp(&self) -> i64 {
        self.current_state_timestamp
            .and_then(|timestamp| i64::try_from(timestamp).ok())
            .unwrap_or(-1)
    }

    /// `ClassicGroup#remove`: drops a member (or a pending one); a new
    /// leader is chosen when the leader goes.
    fn remove(&mut self, member_id: &str, preference: &[String]) {
        self.members.retain(|member| member.member_id != member_id);
        if self.is_leader(member_id) {
            // Kafka takes the first of a HashMap; any member will do.
            let preferred = preference.iter().find(|id| self.has_member(id)).cloned();
            self.leader = preferred.or_else(|| self.members.first().map(|member| member.member_id.clone()));
        }
        self.pending_join.remove(member_id);
        self.pending_sync.remove(member_id);
    }

    /// `maybeElectNewJoinedLeader`: a leader that has not rejoined hands
    /// over to a member that has.
    fn maybe_elect_new_joined_leader(&mut self, preference: &[String]) -> bool {
        let Some(leader) = self.leader.clone() else {
            return false;
        };
        if self
            .member(&leader)
            .is_some_and(|member| member.awaiting_join.is_some())
        {
            return true;
        }
        let joined = |member_id: &str| {
            self.member(member_id)
                .is_some_and(|member| member.awaiting_join.is_some())
        };
        let choice = preference.iter().find(|id| joined(id)).cloned().or_else(|| {
            self.members
                .iter()
                .find(|member| member.awaiting_join.is_some())
                .map(|member| member.member_id.clone())
        });
        match choice {
            Some(member_id) => {
                self.leader = Some(member_id);
                true
            }
            None => false,
        }
    }

    /// `initNextGeneration`.
    fn init_next_generation(&mut self, now_ms: u64) {
        self.generation += 1;
        if self.members.is_empty() {
            self.protocol_name = None;
            self.transition_to(ClassicState::Empty, now_ms);
        } else {
            self.protocol_name = self.select_protocol();
            self.transition_to(ClassicState::CompletingRebalance, now_ms);
        }
        self.pending_sync.clear();
    }

    /// `ClassicGroup#validateOffsetCommit` for a non-transactional commit.
    /// `ClassicGroup#validateOffsetCommit`; a transactional commit
    /// (`TxnOffsetCommit`) needs no member from old clients and is not
    /// checked against the group's state.
    fn validate_offset_commit(
        &self,
        member_id: &str,
        instance: Option<&str>,
        generation: i32,
        transactional: bool,
    ) -> Result<(), ErrorCode> {
        if self.state == ClassicState::Dead {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        if generation < 0 && self.state == ClassicState::Empty {
            // A commit outside group management (admin client, assign()).
            return Ok(());
        }
        if generation >= 0 || !member_id.is_empty() || instance.is_some() {
            self.validate_member(member_id, instance)?;
            if generation != self.generation {
                return Err(ErrorCode::IllegalGeneration);
            }
        } else if !transactional && self.state != ClassicState::Empty {
            return Err(ErrorCode::UnknownMemberId);
        }
        if !transactional && self.state == ClassicState::CompletingRebalance {
            return Err(ErrorCode::RebalanceInProgress);
        }
        Ok(())
    }
}

/// What a timer does when it fires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
enum TimerOp {
    /// `expireClassicGroupMemberHeartbeat`.
    Heartbeat { group: String, member: String },
    /// `completeClassicGroupJoin` by group id.
    CompleteJoin { group: String },
    /// `tryCompleteInitialRebalanceElseSchedule`.
    InitialJoin {
        group: String,
        delay_ms: u64,
        remaining_ms: u64,
    },
    /// `expirePendingSync`.
    PendingSync { group: String },
    /// `cleanupGroupMetadata`.
    ExpireGroupMetadata,
    /// The shard's group-size gauge (metrics only; kept because it sits in
    /// the timer's heap and so decides how equal deadlines break).
    SizeCounter,
}

/// The timer key of the shard's offsets-expiry job.
pub const GROUP_EXPIRATION_KEY: &str = "expire-group-metadata";
/// The timer key of the shard's group-size gauge.
pub const SIZE_COUNTER_KEY: &str = "classic-group-size-counter";
const SIZE_COUNTER_INTERVAL_MS: u64 = 60_000;

fn heartbeat_key(group: &str, member: &str) -> String {
    format!("heartbeat-{group}-{member}")
}

fn join_key(group: &str) -> String {
    format!("join-{group}")
}

fn sync_key(group: &str) -> String {
    format!("sync-{group}")
}

/// A `None` result is Kafka's `EMPTY_RESULT`.
type Written = Option<Write>;

/// One producer's pending transactional offsets: (group, topic,
/// partition) to the value and its record's log offset.
type PendingOffsets = BTreeMap<(String, String, u32), (OffsetCommitValue, u64)>;

/// One `__consumer_offsets` partition's classic group coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassicShard {
    config: ClassicConfig,
    now_ms: u64,
    groups: BTreeMap<String, ClassicGroup>,
    offsets: BTreeMap<String, BTreeMap<(String, u32), OffsetCommitValue>>,
    /// Where each committed offset's record is in the log (the newest
    /// wins when a transaction's offsets are materialized).
    record_offsets: BTreeMap<(String, String, u32), u64>,
    /// KIP-98/447: transactional offsets per producer id, pending until
    /// their transaction's marker (`pendingTransactionalOffsets`), with
    /// their records' log offsets.
    pending_txn_offsets: BTreeMap<u64, PendingOffsets>,
    timer: CoordinatorTimer<TimerOp>,
    member_counter: u64,
    /// Where Kafka picks a new leader from a `HashMap`, the members to
    /// prefer, in order, if eligible (tests follow Kafka's choice this way).
    pub leader_preference: Vec<String>,
    out: Output,
}

impl ClassicShard {
    /// An empty shard at `now_ms`; `member_counter` continues member-id
    /// numbering (carry it over when a coordinator moves).
    pub fn new(config: ClassicConfig, now_ms: u64, member_counter: u64) -> ClassicShard {
        ClassicShard {
            config,
            now_ms,
            groups: BTreeMap::new(),
            offsets: BTreeMap::new(),
            record_offsets: BTreeMap::new(),
            pending_txn_offsets: BTreeMap::new(),
            timer: CoordinatorTimer::default(),
            member_counter,
            leader_preference: Vec::new(),
            out: Output::default(),
        }
    }

    /// The shard's clock.
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// Moves the clock forward without running timers: the time of the
    /// request about to be handled. Timers due by then run at [`poll`](Self::poll).
    pub fn set_time(&mut self, now_ms: u64) {
        self.now_ms = self.now_ms.max(now_ms);
    }

    /// The member-id counter (pass it to the next shard of this partition).
    pub fn member_counter(&self) -> u64 {
        self.member_counter
    }

    /// A group, if it exists.
    pub fn group(&self, group_id: &str) -> Option<&ClassicGroup> {
        self.groups.get(group_id)
    }

    /// All groups.
    pub fn groups(&self) -> impl Iterator<Item = &ClassicGroup> {
        self.groups.values()
    }

    /// A group's committed offsets: (topic, partition) to offset.
    pub fn committed_offsets(&self, group_id: &str) -> BTreeMap<(String, u32), i64> {
        self.offsets
            .get(group_id)
            .map(|offsets| offsets.iter().map(|(key, value)| (key.clone(), value.offset)).gather())
            .unwrap_or_default()
    }

    /// Scheduled timers: key to deadline (without the metrics gauge).
    pub fn timers(&self) -> BTreeMap<String, u64> {
        let mut timers = self.timer.deadlines();
        timers.remove(SIZE_COUNTER_KEY);
        timers
    }

    /// The earliest timer deadline.
    pub fn next_deadline(&self) -> Option<u64> {
        self.timer.next_deadline()
    }

    fn take(&mut self) -> Output {
        std::mem::take(&mut self.out)
    }

    fn respond(&mut self, request: RequestId, response: Response) {
        self.out.responses.push((request, response));
    }

    fn push(&mut self, written: Written) {
        if let Some(write) = written {
            self.out.writes.push(write);
        }
    }

    fn schedule(&mut self, key: String, delay_ms: u64, op: TimerOp) {
        self.timer.schedule(key, self.now_ms, delay_ms, op);
    }

    /// Answers a JoinGroup with an error.
    fn join_error(&mut self, request: RequestId, member_id: &str, error: ErrorCode) {
        self.respond(request, Response::Join(JoinResponse::error(member_id, error)));
    }

    /// `rescheduleClassicGroupMemberHeartbeat`: the member's session (or
    /// join) timer starts again with `timeout_ms`.
    fn reschedule_heartbeat(&mut self, group_id: &str, member_id: &str, timeout_ms: u64) {
        self.schedule(
            heartbeat_key(group_id, member_id),
            timeout_ms,
            TimerOp::Heartbeat {
                group: group_id.to_string(),
                member: member_id.to_string(),
            },
        );
    }

    fn generate_member_id(&mut self, client_id: &str, instance: Option<&str>) -> String {
        self.member_counter += 1;
        format!("{}-{}", instance.unwrap_or(client_id), self.member_counter)
    }

    fn hint(&self) -> Vec<String> {
        self.leader_preference.clone()
    }

    // ----- time ----------------------------------------------------------

    /// Moves the clock to `now_ms` and runs every timer due by then.
    pub fn poll(&mut self, now_ms: u64) -> Output {
        self.now_ms = self.now_ms.max(now_ms);
        while let Some((key, op)) = self.timer.pop_expired(self.now_ms) {
            if op != TimerOp::SizeCounter {
                self.out.timers_fired.push((key, self.now_ms));
            }
            self.run_timer(op);
        }
        self.take()
    }

    fn run_timer(&mut self, op: TimerOp) {
        match op {
            TimerOp::Heartbeat { group, member } => {
                let written = self.expire_member_heartbeat(&group, &member);
                self.push(written);
            }
            TimerOp::CompleteJoin { group } => {
                if self.groups.contains_key(&group) {
                    let written = self.complete_join(&group);
                    self.push(written);
                }
            }
            TimerOp::InitialJoin {
                group,
                delay_ms,
                remaining_ms,
            } => {
                let written = self.try_complete_initial_rebalance(&group, delay_ms, remaining_ms);
                self.push(written);
            }
            TimerOp::PendingSync { group } => {
                let written = self.expire_pending_sync(&group);
                self.push(written);
            }
            TimerOp::ExpireGroupMetadata => {
                let written = self.cleanup_group_metadata();
                self.push(written);
            }
            TimerOp::SizeCounter => {
                self.schedule(
                    SIZE_COUNTER_KEY.to_string(),
                    SIZE_COUNTER_INTERVAL_MS,
                    TimerOp::SizeCounter,
                );
            }
        }
    }

    /// `cleanupGroupMetadata`: expired offsets get tombstones; a group
    /// left Empty with no offsets is deleted.
    fn cleanup_group_metadata(&mut self) -> Written {
        let now = self.now_ms;
        let mut records = Vec::new();
        let group_ids: Vec<String> = self.groups.keys().cloned().collect();
        for group_id in group_ids {
            let group = &self.groups[&group_id];
            let all_expired = match self.offsets.get(&group_id) {
                None => true,
                Some(offsets) => {
                    // Kafka's `offsetExpirationCondition` for a classic group.
                    let base = |value: &OffsetCommitValue| -> Option<u64> {
                        match (&group.protocol_type, group.state) {
                            (Some(_), ClassicState::Empty) => {
                                Some(group.current_state_timestamp.unwrap_or(value.commit_timestamp))
                            }
                            (Some(_), _) => None,
                            (None, _) => Some(value.commit_timestamp),
                        }
                    };
                    let mut all = true;
                    for ((topic, partition), value) in offsets {
                        match base(value) {
                            Some(base) if now >= base.saturating_add(self.config.offsets_retention_ms) => {
                                records.push(CoordinatorRecord::OffsetCommit {
                                    group: group_id.clone(),
                                    topic: topic.clone(),
                                    partition: *partition,
                                    value: None,
                                });
                            }
                            _ => all = false,
                        }
                    }
                    all
                }
            };
            if all_expired && group.state == ClassicState::Empty {
                records.push(CoordinatorRecord::GroupMetadata {
                    group: group_id.clone(),
                    value: None,
                });
            }
        }
        self.schedule(
            GROUP_EXPIRATION_KEY.to_string(),
            self.config.offsets_retention_check_interval_ms,
            TimerOp::ExpireGroupMetadata,
        );
        (!records.is_empty()).then_some(Write {
            transactional: None,
            records,
            replay: true,
            callback: None,
            response: None,
        })
    }

    // ----- after the log ---------------------------------------------------

    /// A write's records are committed: run its callback.
    pub fn committed(&mut self, callback: &AppendCallback) -> Output {
        match callback {
            AppendCallback::NewGroup { .. } => {}
            AppendCallback::Assignment {
                group,
                generation,
                assignment,
            } => {
                let now = self.now_ms;
                if let Some(state) = self.groups.get_mut(group) {
                    if state.state == ClassicState::CompletingRebalance && state.generation == *generation {
                        for member in &mut state.members {
                            member.assignment = assignment.get(&member.member_id).cloned().unwrap_or_default();
                        }
                        self.propagate_assignment(group, None);
                        if let Some(state) = self.groups.get_mut(group) {
                            state.transition_to(ClassicState::Stable, now);
                        }
                    }
                }
            }
            AppendCallback::StaticMemberReplaced {
                group,
                request,
                new_member_id,
                ..
            } => {
                if let Some(state) = self.groups.get_mut(group) {
                    // KIP-814: a static leader that rejoins need not assign
                    // again.
                    let is_leader = state.is_leader(new_member_id);
                    let response = state.join_response(new_member_id, is_leader, is_leader);
                    let parked = state
                        .member_mut(new_member_id)
                        .and_then(|member| member.awaiting_join.take())
                        .is_some();
                    if parked {
                        self.respond(*request, Response::Join(response));
                    }
                }
            }
        }
        self.take()
    }

    /// A write could not be committed (the partition moved or lost its
    /// followers): undo as Kafka's callbacks do.
    pub fn append_failed(&mut self, callback: &AppendCallback, error: ErrorCode) -> Output {
        match callback {
            AppendCallback::NewGroup { request, .. } => {
                self.join_error(*request, UNKNOWN_MEMBER_ID, error);
            }
            AppendCallback::Assignment { group, generation, .. } => {
                let current = self.groups.get(group).is_some_and(|state| {
                    state.state == ClassicState::CompletingRebalance && state.generation == *generation
                });
                if current {
                    self.reset_and_propagate_assignment(group, error);
                    let written =
                        self.maybe_prepare_rebalance_or_complete_join(group, RebalanceReason::GenerationNotStored);
                    self.push(written);
                }
            }
            AppendCallback::StaticMemberReplaced {
                group,
                request,
                old_member_id,
                new_member_id,
            } => {
                // The new id was not persisted: the old one stands again.
                // The answer names the leader as it was before the swap back.
                let Some(mut response) = self
                    .groups
                    .get(group)
                    .map(|state| state.join_response(UNKNOWN_MEMBER_ID, false, false))
                else {
                    return self.take();
                };
                response.error = Some(error);
                if let Some(member) = self
                    .groups
                    .get_mut(group)
                    .and_then(|state| state.member_mut(new_member_id))
                {
                    member.awaiting_join = None;
                }
                self.replace_static_member(group, new_member_id, old_member_id);
                self.respond(*request, Response::Join(response));
            }
        }
        self.take()
    }
}
