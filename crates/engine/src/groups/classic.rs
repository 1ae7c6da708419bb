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

    // ----- loading -------------------------------------------------------

    /// Applies one record of the partition (`GroupCoordinatorShard#replay`).
    pub fn replay(&mut self, record: &CoordinatorRecord) {
        match record {
            CoordinatorRecord::GroupMetadata { group, value: None } => {
                self.groups.remove(group);
            }
            CoordinatorRecord::GroupMetadata {
                group,
                value: Some(value),
            } => {
                let protocol_type = Some(value.protocol_type.clone()).filter(|kind| !kind.is_empty());
                let mut loaded = ClassicGroup {
                    group_id: group.clone(),
                    state: if value.members.is_empty() {
                        ClassicState::Empty
                    } else {
                        ClassicState::Stable
                    },
                    previous_state: ClassicState::Dead,
                    current_state_timestamp: u64::try_from(value.current_state_timestamp).ok(),
                    protocol_type: protocol_type.clone(),
                    protocol_name: value.protocol.clone(),
                    generation: value.generation,
                    leader: value.leader.clone(),
                    members: Vec::new(),
                    pending_join: BTreeSet::new(),
                    pending_sync: BTreeSet::new(),
                    rebalance_reason: RebalanceReason::Unstated,
                    new_member_added: false,
                };
                for member in &value.members {
                    loaded.members.push(ClassicMember {
                        member_id: member.member_id.clone(),
                        group_instance_id: member.group_instance_id.clone(),
                        client_id: member.client_id.clone(),
                        rebalance_timeout_ms: member.rebalance_timeout_ms,
                        session_timeout_ms: member.session_timeout_ms,
                        protocol_type: value.protocol_type.clone(),
                        protocols: vec![Protocol {
                            name: value.protocol.clone().unwrap_or_default(),
                            metadata: member.subscription.clone(),
                        }],
                        assignment: member.assignment.clone(),
                        awaiting_join: None,
                        awaiting_sync: None,
                        is_new: false,
                    });
                    if loaded.leader.is_none() {
                        loaded.leader = Some(member.member_id.clone());
                    }
                    if loaded.protocol_type.is_none() {
                        loaded.protocol_type = Some(value.protocol_type.clone());
                    }
                }
                self.groups.insert(group.clone(), loaded);
            }
            CoordinatorRecord::OffsetCommit {
                group,
                topic,
                partition,
                value,
            } => match value {
                Some(value) => {
                    if !self.groups.contains_key(group) {
                        // A "simple" group: offsets without membership.
                        self.groups.insert(group.clone(), ClassicGroup::new(group, self.now_ms));
                    }
                    self.offsets
                        .entry(group.clone())
                        .or_default()
                        .insert((topic.clone(), *partition), value.clone());
                }
                None => {
                    if let Some(offsets) = self.offsets.get_mut(group) {
                        offsets.remove(&(topic.clone(), *partition));
                        if offsets.is_empty() {
                            self.offsets.remove(group);
                        }
                    }
                }
            },
        }
    }

    /// Applies one record at log offset `record_offset`, written by
    /// `producer_id` if it came in a transactional batch
    /// (`OffsetMetadataManager#replay`): a transactional offset waits in
    /// the pending store for its marker; a tombstone also drops pending
    /// offsets of that partition.
    pub fn replay_at(&mut self, record: &CoordinatorRecord, record_offset: u64, producer_id: Option<u64>) {
        if let CoordinatorRecord::OffsetCommit {
            group,
            topic,
            partition,
            value,
        } = record
        {
            let key = (group.clone(), topic.clone(), *partition);
            match (value, producer_id) {
                (Some(value), Some(producer_id)) => {
                    if !self.groups.contains_key(group) {
                        self.groups.insert(group.clone(), ClassicGroup::new(group, self.now_ms));
                    }
                    self.pending_txn_offsets
                        .entry(producer_id)
                        .or_default()
                        .insert(key, (value.clone(), record_offset));
                    return;
                }
                (Some(_), None) => {
                    self.record_offsets.insert(key, record_offset);
                }
                (None, _) => {
                    self.record_offsets.remove(&key);
                    for pending in self.pending_txn_offsets.values_mut() {
                        pending.remove(&key);
                    }
                }
            }
        }
        self.replay(record);
    }

    /// A transaction marker for `producer_id` (`replayEndTransactionMarker`):
    /// on commit its pending offsets become the committed ones, unless a
    /// newer commit (a later record) is already there; on abort they go.
    /// Returns the offsets that became committed, per group.
    pub fn replay_end_transaction(
        &mut self,
        producer_id: u64,
        commit: bool,
    ) -> Vec<(String, Vec<(TopicPartition, u64)>)> {
        let Some(pending) = self.pending_txn_offsets.remove(&producer_id) else {
            return Vec::new();
        };
        let mut settled: BTreeMap<String, Vec<(TopicPartition, u64)>> = BTreeMap::new();
        if !commit {
            return Vec::new();
        }
        for ((group, topic, partition), (value, record_offset)) in pending {
            let key = (group.clone(), topic.clone(), partition);
            let newer = self
                .record_offsets
                .get(&key)
                .is_some_and(|existing| *existing > record_offset);
            if newer {
                continue;
            }
            self.record_offsets.insert(key, record_offset);
            settled.entry(group.clone()).or_default().push((
                TopicPartition::new(topic.as_str(), partition),
                u64::try_from(value.offset).unwrap_or(0),
            ));
            self.offsets.entry(group).or_default().insert((topic, partition), value);
        }
        settled.into_iter().collect()
    }

    /// Whether a transaction's offsets for this partition are still
    /// pending (`hasPendingTransactionalOffsets`): an `OffsetFetch`
    /// (which consumers send with `requireStable`) gets
    /// `UNSTABLE_OFFSET_COMMIT` for it.
    pub fn has_pending_transactional_offsets(&self, group: &str, topic: &str, partition: u32) -> bool {
        let key = (group.to_string(), topic.to_string(), partition);
        self.pending_txn_offsets
            .values()
            .any(|pending| pending.contains_key(&key))
    }

    /// A `TxnOffsetCommit` (`OffsetMetadataManager#commitTransactionalOffset`):
    /// the member is checked as for an `OffsetCommit` but the group's
    /// state is not (`validateOffsetCommit` with `isTransactional`); an
    /// unknown group with a generation gets `ILLEGAL_GENERATION`. The
    /// records are written with the producer's id and epoch and answered
    /// once committed; they count only after the transaction's marker.
    #[allow(clippy::too_many_arguments)]
    pub fn commit_transactional(
        &mut self,
        request_id: RequestId,
        client_request: u64,
        group_id: &str,
        member: &MemberIdentity,
        generation: i32,
        producer: (u64, u16),
        offsets: &[(String, u32, i64)],
    ) -> Output {
        let now = self.now_ms;
        let validated = match self.groups.get(group_id) {
            None if generation < 0 => {
                self.groups
                    .insert(group_id.to_string(), ClassicGroup::new(group_id, now));
                Ok(())
            }
            None => Err(ErrorCode::IllegalGeneration),
            Some(group) => {
                group.validate_offset_commit(&member.member_id, member.group_instance_id.as_deref(), generation, true)
            }
        };
        if let Err(error) = validated {
            self.respond(request_id, Response::TxnOffsetCommit(client_request, Some(error)));
            return self.take();
        }
        self.transactional_offsets_write(request_id, client_request, group_id, producer, offsets)
    }

    /// Writes a `TxnOffsetCommit`'s offsets without checking the member
    /// (for a group another protocol's shard owns, which checked it).
    pub fn transactional_offsets_write(
        &mut self,
        request_id: RequestId,
        client_request: u64,
        group_id: &str,
        producer: (u64, u16),
        offsets: &[(String, u32, i64)],
    ) -> Output {
        let response = Response::TxnOffsetCommit(client_request, None);
        self.offsets_write(request_id, group_id, offsets, response, Some(producer))
    }

    /// Writes offset commit records for `offsets`, answered with `response`
    /// once committed; in `producer`'s transactional batch if given.
    fn offsets_write(
        &mut self,
        request_id: RequestId,
        group_id: &str,
        offsets: &[(String, u32, i64)],
        response: Response,
        transactional: Option<(u64, u16)>,
    ) -> Output {
        let now = self.now_ms;
        let records = offsets
            .iter()
            .map(|(topic, partition, offset)| CoordinatorRecord::OffsetCommit {
                group: group_id.to_string(),
                topic: topic.clone(),
                partition: *partition,
                value: Some(OffsetCommitValue {
                    offset: *offset,
                    leader_epoch: -1,
                    metadata: String::new(),
                    commit_timestamp: now,
                }),
            })
            .collect();
        self.out.writes.push(Write {
            records,
            replay: true,
            callback: None,
            response: Some((request_id, response)),
            transactional,
        });
        self.take()
    }

    /// The partition is loaded (`onLoaded`): every member's session timer
    /// starts again, and the shard's periodic jobs are scheduled.
    pub fn on_loaded(&mut self) {
        let members: Vec<(String, String, u64)> = self
            .groups
            .values()
            .flat_map(|group| {
                group.members.iter().map(|member| {
                    (
                        group.group_id.clone(),
                        member.member_id.clone(),
                        member.session_timeout_ms,
                    )
                })
            })
            .collect();
        for (group, member, session) in members {
            self.reschedule_heartbeat(&group, &member, session);
        }
        self.schedule(
            GROUP_EXPIRATION_KEY.to_string(),
            self.config.offsets_retention_check_interval_ms,
            TimerOp::ExpireGroupMetadata,
        );
        self.schedule(
            SIZE_COUNTER_KEY.to_string(),
            SIZE_COUNTER_INTERVAL_MS,
            TimerOp::SizeCounter,
        );
    }

    /// The partition moves away (`onUnloaded`): groups turn Dead, and
    /// parked JoinGroup / SyncGroup requests are answered `NOT_COORDINATOR`
    /// so their members look for the new coordinator.
    pub fn unload(&mut self) -> Output {
        let now = self.now_ms;
        let mut answers = Vec::new();
        for group in self.groups.values_mut() {
            group.transition_to(ClassicState::Dead, now);
            match group.previous_state {
                ClassicState::PreparingRebalance => {
                    for member in &mut group.members {
                        if let Some(request) = member.awaiting_join.take() {
                            answers.push((
                                request,
                                Response::Join(JoinResponse::error(&member.member_id, ErrorCode::NotCoordinator)),
                            ));
                        }
                    }
                }
                ClassicState::CompletingRebalance | ClassicState::Stable => {
                    for member in &mut group.members {
                        if let Some(request) = member.awaiting_sync.take() {
                            answers.push((request, Response::Sync(SyncResponse::error(ErrorCode::NotCoordinator))));
                        }
                    }
                }
                ClassicState::Empty | ClassicState::Dead => {}
            }
        }
        self.out.responses.extend(answers);
        self.take()
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

    // ----- JoinGroup -----------------------------------------------------

    /// A JoinGroup as `GroupCoordinatorService` takes it: the session
    /// timeout is checked against the broker's bounds first.
    pub fn join(&mut self, request_id: RequestId, request: &JoinRequest) -> Output {
        if request.group_id.is_empty() {
            // INVALID_GROUP_ID is not among the errors the engine names;
            // an empty group id cannot be configured in the simulator.
            self.join_error(request_id, &request.member_id, ErrorCode::InconsistentGroupProtocol);
            return self.take();
        }
        if request.session_timeout_ms < self.config.min_session_timeout_ms
            || request.session_timeout_ms > self.config.max_session_timeout_ms
        {
            self.join_error(request_id, &request.member_id, ErrorCode::InvalidSessionTimeout);
            return self.take();
        }
        self.shard_join(request_id, request)
    }

    /// A JoinGroup as the shard takes it (`classicGroupJoinToClassicGroup`),
    /// without the service's session-timeout check.
    pub fn shard_join(&mut self, request_id: RequestId, request: &JoinRequest) -> Output {
        let group_id = request.group_id.clone();
        let unknown = request.member_id == UNKNOWN_MEMBER_ID;
        let is_new_group = !self.groups.contains_key(&group_id);
        if is_new_group {
            if !unknown {
                self.join_error(request_id, &request.member_id, ErrorCode::UnknownMemberId);
                return self.take();
            }
            self.groups
                .insert(group_id.clone(), ClassicGroup::new(&group_id, self.now_ms));
        }
        let written = if unknown {
            self.join_new_member(request_id, request)
        } else {
            self.join_existing_member(request_id, request)
        };
        match written {
            None if is_new_group => {
                // The new group is committed with an empty metadata record.
                let group = &self.groups[&group_id];
                let record = CoordinatorRecord::GroupMetadata {
                    group: group_id.clone(),
                    value: Some(GroupMetadataValue {
                        protocol_type: String::new(),
                        generation: 0,
                        protocol: None,
                        leader: None,
                        current_state_timestamp: group.state_timestamp(),
                        members: Vec::new(),
                    }),
                };
                self.out.writes.push(Write {
                    transactional: None,
                    records: vec![record],
                    replay: false,
                    callback: Some(AppendCallback::NewGroup {
                        group: group_id,
                        request: request_id,
                    }),
                    response: None,
                });
            }
            written => self.push(written),
        }
        self.take()
    }

    fn join_new_member(&mut self, request_id: RequestId, request: &JoinRequest) -> Written {
        let group = &self.groups[&request.group_id];
        if group.state == ClassicState::Dead {
            self.join_error(request_id, UNKNOWN_MEMBER_ID, ErrorCode::CoordinatorNotAvailable);
            return None;
        }
        if !group.supports_protocols(&request.protocol_type, &request.protocols) {
            self.join_error(request_id, UNKNOWN_MEMBER_ID, ErrorCode::InconsistentGroupProtocol);
            return None;
        }
        let new_member_id = self.generate_member_id(&request.client_id, request.group_instance_id.as_deref());
        match &request.group_instance_id {
            Some(instance) => match self.groups[&request.group_id].static_member_id(instance) {
                // A known static member restarted: it takes over its old
                // id's place (KIP-345).
                Some(existing) => self.update_static_member(request_id, request, &existing, &new_member_id),
                None => self.add_member_then_rebalance(request_id, request, new_member_id),
            },
            None => {
                // JoinGroup v4+: hand out an id and ask the member to join
                // again with it (KIP-394); it is pending until then.
                let group_id = request.group_id.clone();
                if let Some(group) = self.groups.get_mut(&group_id) {
                    group.pending_join.insert(new_member_id.clone());
                }
                self.reschedule_heartbeat(&group_id, &new_member_id, request.session_timeout_ms);
                self.join_error(request_id, &new_member_id, ErrorCode::MemberIdRequired);
                None
            }
        }
    }

    fn join_existing_member(&mut self, request_id: RequestId, request: &JoinRequest) -> Written {
        let member_id = request.member_id.clone();
        let group = &self.groups[&request.group_id];
        if group.state == ClassicState::Dead {
            self.join_error(request_id, &member_id, ErrorCode::CoordinatorNotAvailable);
            return None;
        }
        if !group.supports_protocols(&request.protocol_type, &request.protocols) {
            self.join_error(request_id, &member_id, ErrorCode::InconsistentGroupProtocol);
            return None;
        }
        if group.pending_join.contains(&member_id) {
            return self.add_member_then_rebalance(request_id, request, member_id);
        }
        if let Err(error) = group.validate_member(&member_id, request.group_instance_id.as_deref()) {
            let mut response = JoinResponse::error(&member_id, error);
            response.protocol_name = None;
            self.respond(request_id, Response::Join(response));
            return None;
        }
        let member = group.member(&member_id)?;
        let same_metadata = member.protocols == request.protocols;
        match group.state {
            ClassicState::PreparingRebalance => self.update_member_then_rebalance(request_id, request),
            ClassicState::CompletingRebalance if same_metadata => {
                // It missed its JoinGroup answer: send the current one.
                let response = group.join_response(&member_id, group.is_leader(&member_id), false);
                self.respond(request_id, Response::Join(response));
                None
            }
            ClassicState::CompletingRebalance => self.update_member_then_rebalance(request_id, request),
            ClassicState::Stable if group.is_leader(&member_id) || !same_metadata => {
                // The leader's JoinGroup, or new metadata, starts a rebalance.
                self.update_member_then_rebalance(request_id, request)
            }
            ClassicState::Stable => {
                let response = group.join_response(&member_id, false, false);
                self.respond(request_id, Response::Join(response));
                None
            }
            ClassicState::Empty | ClassicState::Dead => {
                self.join_error(request_id, &member_id, ErrorCode::UnknownMemberId);
                None
            }
        }
    }

    /// `updateMember` then `maybePrepareRebalanceOrCompleteJoin`. A member
    /// that was already waiting in a JoinGroup waits on the new one (the
    /// old request is never answered, as in Kafka).
    fn update_member_then_rebalance(&mut self, request_id: RequestId, request: &JoinRequest) -> Written {
        let group = self.groups.get_mut(&request.group_id)?;
        let member = group.member_mut(&request.member_id)?;
        member.protocols = request.protocols.clone();
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.session_timeout_ms = request.session_timeout_ms;
        member.awaiting_join = Some(request_id);
        self.maybe_prepare_rebalance_or_complete_join(
            &request.group_id,
            RebalanceReason::Rejoined {
                member: request.member_id.clone(),
            },
        )
    }

    /// `addMemberThenRebalanceOrCompleteJoin`.
    fn add_member_then_rebalance(
        &mut self,
        request_id: RequestId,
        request: &JoinRequest,
        member_id: String,
    ) -> Written {
        let group_id = request.group_id.clone();
        let group = self.groups.get_mut(&group_id)?;
        if group.state == ClassicState::PreparingRebalance && group.previous_state == ClassicState::Empty {
            // The initial rebalance waits longer while members keep coming.
            group.new_member_added = true;
        }
        if group.members.is_empty() {
            group.protocol_type = Some(request.protocol_type.clone());
        }
        if group.leader.is_none() {
            group.leader = Some(member_id.clone());
        }
        group.members.push(ClassicMember {
            member_id: member_id.clone(),
            group_instance_id: request.group_instance_id.clone(),
            client_id: request.client_id.clone(),
            rebalance_timeout_ms: request.rebalance_timeout_ms,
            session_timeout_ms: request.session_timeout_ms,
            protocol_type: request.protocol_type.clone(),
            protocols: request.protocols.clone(),
            assignment: Vec::new(),
            awaiting_join: Some(request_id),
            awaiting_sync: None,
            is_new: true,
        });
        group.pending_join.remove(&member_id);
        let joined = member_id.clone();
        // A new member cannot heartbeat while its JoinGroup is parked; it
        // gets the new-member join timeout instead of its session timeout.
        self.reschedule_heartbeat(&group_id, &member_id, self.config.new_member_join_timeout_ms);
        self.maybe_prepare_rebalance_or_complete_join(&group_id, RebalanceReason::Joined { member: joined })
    }

    /// `updateStaticMemberThenRebalanceOrCompleteJoin`.
    fn update_static_member(
        &mut self,
        request_id: RequestId,
        request: &JoinRequest,
        old_member_id: &str,
        new_member_id: &str,
    ) -> Written {
        let group_id = request.group_id.clone();
        self.replace_static_member(&group_id, old_member_id, new_member_id);
        let session = {
            let group = self.groups.get_mut(&group_id)?;
            let member = group.member_mut(new_member_id)?;
            member.session_timeout_ms
        };
        self.reschedule_heartbeat(&group_id, new_member_id, session);
        let group = self.groups.get_mut(&group_id)?;
        let member = group.member_mut(new_member_id)?;
        member.protocols = request.protocols.clone();
        member.rebalance_timeout_ms = request.rebalance_timeout_ms;
        member.session_timeout_ms = request.session_timeout_ms;
        member.awaiting_join = Some(request_id);
        match group.state {
            ClassicState::Stable => {
                if group.protocol_name.clone().unwrap_or_default() == group.select_protocol().unwrap_or_default() {
                    // Same protocol: persist the new id, no rebalance; the
                    // answer goes out once the record is committed.
                    let assignment = group.group_assignment();
                    let record = group.metadata_record(&assignment);
                    Some(Write {
                        transactional: None,
                        records: vec![record],
                        replay: false,
                        callback: Some(AppendCallback::StaticMemberReplaced {
                            group: group_id,
                            request: request_id,
                            old_member_id: old_member_id.to_string(),
                            new_member_id: new_member_id.to_string(),
                        }),
                        response: None,
                    })
                } else {
                    self.maybe_prepare_rebalance_or_complete_join(
                        &group_id,
                        RebalanceReason::Rejoined {
                            member: new_member_id.to_string(),
                        },
                    )
                }
            }
            ClassicState::CompletingRebalance => self.prepare_rebalance(
                &group_id,
                RebalanceReason::Rejoined {
                    member: new_member_id.to_string(),
                },
            ),
            _ => self.maybe_complete_join_phase(&group_id),
        }
    }

    /// `ClassicGroup#replaceStaticMember`: the old id's parked requests are
    /// answered `FENCED_INSTANCE_ID`; the new id takes its place.
    fn replace_static_member(&mut self, group_id: &str, old_member_id: &str, new_member_id: &str) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        let Some(index) = group
            .members
            .iter()
            .position(|member| member.member_id == old_member_id)
        else {
            return;
        };
        let mut answers = Vec::new();
        let member = &mut group.members[index];
        if let Some(request) = member.awaiting_join.take() {
            let mut response = JoinResponse::error(old_member_id, ErrorCode::FencedInstanceId);
            response.protocol_name = None;
            answers.push((request, Response::Join(response)));
        }
        if let Some(request) = member.awaiting_sync.take() {
            answers.push((
                request,
                Response::Sync(SyncResponse::error(ErrorCode::FencedInstanceId)),
            ));
        }
        member.member_id = new_member_id.to_string();
        member.is_new = false;
        // Kafka re-inserts the member under its new id.
        let moved = group.members.remove(index);
        group.members.push(moved);
        if group.is_leader(old_member_id) {
            group.leader = Some(new_member_id.to_string());
        }
        self.out.responses.extend(answers);
    }

    /// `maybePrepareRebalanceOrCompleteJoin`.
    fn maybe_prepare_rebalance_or_complete_join(&mut self, group_id: &str, reason: RebalanceReason) -> Written {
        if self.groups.get(group_id)?.can_rebalance() {
            self.prepare_rebalance(group_id, reason)
        } else {
            self.maybe_complete_join_phase(group_id)
        }
    }

    /// `maybeCompleteJoinPhase`: not during the initial rebalance, and only
    /// once every member has rejoined.
    fn maybe_complete_join_phase(&mut self, group_id: &str) -> Written {
        let group = self.groups.get(group_id)?;
        if group.state != ClassicState::PreparingRebalance
            || group.previous_state == ClassicState::Empty
            || !group.has_all_members_joined()
        {
            return None;
        }
        self.complete_join(group_id)
    }

    /// `prepareRebalance`.
    fn prepare_rebalance(&mut self, group_id: &str, reason: RebalanceReason) -> Written {
        let now = self.now_ms;
        if self.groups.get(group_id)?.state == ClassicState::CompletingRebalance {
            self.reset_and_propagate_assignment(group_id, ErrorCode::RebalanceInProgress);
        }
        self.remove_sync_expiration(group_id);
        let group = self.groups.get_mut(group_id)?;
        group.rebalance_reason = reason;
        let initial = group.state == ClassicState::Empty;
        if initial {
            let delay = self.config.initial_rebalance_delay_ms;
            let remaining = group.rebalance_timeout_ms().saturating_sub(delay);
            group.transition_to(ClassicState::PreparingRebalance, now);
            self.schedule(
                join_key(group_id),
                delay,
                TimerOp::InitialJoin {
                    group: group_id.to_string(),
                    delay_ms: delay,
                    remaining_ms: remaining,
                },
            );
            return None;
        }
        group.transition_to(ClassicState::PreparingRebalance, now);
        self.maybe_complete_join_else_schedule(group_id)
    }

    fn maybe_complete_join_else_schedule(&mut self, group_id: &str) -> Written {
        let group = self.groups.get(group_id)?;
        if group.has_all_members_joined() {
            self.complete_join(group_id)
        } else {
            let timeout = group.rebalance_timeout_ms();
            self.schedule(
                join_key(group_id),
                timeout,
                TimerOp::CompleteJoin {
                    group: group_id.to_string(),
                },
            );
            None
        }
    }

    /// `tryCompleteInitialRebalanceElseSchedule`: while new members keep
    /// joining, wait another delay, up to the rebalance timeout.
    fn try_complete_initial_rebalance(&mut self, group_id: &str, delay_ms: u64, remaining_ms: u64) -> Written {
        let initial_delay = self.config.initial_rebalance_delay_ms;
        let group = self.groups.get_mut(group_id)?;
        if group.new_member_added && remaining_ms != 0 {
            group.new_member_added = false;
            let new_delay = initial_delay.min(remaining_ms);
            let new_remaining = remaining_ms.saturating_sub(delay_ms);
            self.schedule(
                join_key(group_id),
                new_delay,
                TimerOp::InitialJoin {
                    group: group_id.to_string(),
                    delay_ms: new_delay,
                    remaining_ms: new_remaining,
                },
            );
            None
        } else {
            self.complete_join(group_id)
        }
    }

    /// `completeClassicGroupJoin`: dynamic members that did not rejoin are
    /// removed, the generation moves on, and every waiting member gets its
    /// JoinGroup answer (the leader with the member list).
    fn complete_join(&mut self, group_id: &str) -> Written {
        let now = self.now_ms;
        let hint = self.hint();
        self.timer.cancel(&join_key(group_id));
        let group = self.groups.get_mut(group_id)?;
        let not_rejoined: Vec<String> = group
            .members
            .iter()
            .filter(|member| member.awaiting_join.is_none() && member.group_instance_id.is_none())
            .map(|member| member.member_id.clone())
            .collect();
        for member_id in &not_rejoined {
            group.remove(member_id, &hint);
        }
        for member_id in &not_rejoined {
            self.timer.cancel(&heartbeat_key(group_id, member_id));
        }
        let group = self.groups.get_mut(group_id)?;
        if group.state == ClassicState::Dead {
            return None;
        }
        if !group.maybe_elect_new_joined_leader(&hint) && !group.members.is_empty() {
            // Nobody rejoined: wait another rebalance timeout for the
            // session timeouts to clear the group.
            let timeout = group.rebalance_timeout_ms();
            self.schedule(
                join_key(group_id),
                timeout,
                TimerOp::CompleteJoin {
                    group: group_id.to_string(),
                },
            );
            return None;
        }
        group.init_next_generation(now);
        if group.state == ClassicState::Empty {
            let record = group.metadata_record(&BTreeMap::new());
            return Some(Write {
                transactional: None,
                records: vec![record],
                replay: false,
                callback: None,
                response: None,
            });
        }
        let answers: Vec<(RequestId, Response)> = group
            .members
            .iter()
            .filter_map(|member| {
                let request = member.awaiting_join?;
                let leader = group.is_leader(&member.member_id);
                Some((
                    request,
                    Response::Join(group.join_response(&member.member_id, leader, false)),
                ))
            })
            .collect();
        let mut sessions = Vec::new();
        for member in &mut group.members {
            member.awaiting_join = None;
            sessions.push((member.member_id.clone(), member.session_timeout_ms));
            member.is_new = false;
        }
        group.pending_sync = group.members.iter().map(|member| member.member_id.clone()).gather();
        let sync_timeout = group.rebalance_timeout_ms();
        self.out.responses.extend(answers);
        for (member, session) in sessions {
            self.reschedule_heartbeat(group_id, &member, session);
        }
        self.schedule(
            sync_key(group_id),
            sync_timeout,
            TimerOp::PendingSync {
                group: group_id.to_string(),
            },
        );
        None
    }

    /// `expireClassicGroupMemberHeartbeat`.
    fn expire_member_heartbeat(&mut self, group_id: &str, member_id: &str) -> Written {
        let group = self.groups.get_mut(group_id)?;
        if group.state == ClassicState::Dead {
            return None;
        }
        if group.pending_join.contains(member_id) {
            // A pending member that never came back.
            group.remove(member_id, &[]);
            if group.state == ClassicState::PreparingRebalance && group.has_all_members_joined() {
                return self.complete_join(group_id);
            }
            return None;
        }
        let member = group.member(member_id)?;
        if member.has_satisfied_heartbeat() {
            return None;
        }
        self.remove_member_and_update_group(group_id, member_id)
    }

    /// `removeMemberAndUpdateClassicGroup`: a parked JoinGroup is answered
    /// `UNKNOWN_MEMBER_ID` first.
    fn remove_member_and_update_group(&mut self, group_id: &str, member_id: &str) -> Written {
        let hint = self.hint();
        let group = self.groups.get_mut(group_id)?;
        if let Some(request) = group
            .member_mut(member_id)
            .and_then(|member| member.awaiting_join.take())
        {
            self.out.responses.push((
                request,
                Response::Join(JoinResponse::error(UNKNOWN_MEMBER_ID, ErrorCode::UnknownMemberId)),
            ));
        }
        group.remove(member_id, &hint);
        match group.state {
            ClassicState::Stable | ClassicState::CompletingRebalance => self.maybe_prepare_rebalance_or_complete_join(
                group_id,
                RebalanceReason::SessionTimeout {
                    members: vec![member_id.to_string()],
                },
            ),
            ClassicState::PreparingRebalance if group.has_all_members_joined() => self.complete_join(group_id),
            _ => None,
        }
    }

    // ----- SyncGroup -----------------------------------------------------

    /// A SyncGroup. The leader's carries the assignment, which is written
    /// to the log; every member gets its part once that is committed.
    pub fn sync(&mut self, request_id: RequestId, request: &SyncRequest) -> Output {
        let written = self.sync_inner(request_id, request);
        self.push(written);
        self.take()
    }

    fn sync_inner(&mut self, request_id: RequestId, request: &SyncRequest) -> Written {
        let Some(group) = self.groups.get(&request.group_id) else {
            self.respond(
                request_id,
                Response::Sync(SyncResponse::error(ErrorCode::UnknownMemberId)),
            );
            return None;
        };
        if group.state == ClassicState::Empty {
            self.respond(
                request_id,
                Response::Sync(SyncResponse::error(ErrorCode::UnknownMemberId)),
            );
            return None;
        }
        let error = if group.state == ClassicState::Dead {
            Some(ErrorCode::CoordinatorNotAvailable)
        } else if let Err(error) = group.validate_member(&request.member_id, request.group_instance_id.as_deref()) {
            Some(error)
        } else if request.generation != group.generation {
            Some(ErrorCode::IllegalGeneration)
        } else if group.state == ClassicState::PreparingRebalance {
            Some(ErrorCode::RebalanceInProgress)
        } else {
            None
        };
        if let Some(error) = error {
            self.respond(request_id, Response::Sync(SyncResponse::error(error)));
            return None;
        }
        let group_id = request.group_id.clone();
        match group.state {
            ClassicState::CompletingRebalance => {
                let group = self.groups.get_mut(&group_id)?;
                if let Some(member) = group.member_mut(&request.member_id) {
                    member.awaiting_sync = Some(request_id);
                }
                self.remove_pending_sync_member(&group_id, &request.member_id);
                let group = self.groups.get(&group_id)?;
                if !group.is_leader(&request.member_id) {
                    return None;
                }
                let mut assignment: BTreeMap<String, Vec<u8>> = request.assignments.iter().cloned().gather();
                for member in &group.members {
                    assignment.entry(member.member_id.clone()).or_default();
                }
                let record = group.metadata_record(&assignment);
                Some(Write {
                    transactional: None,
                    records: vec![record],
                    replay: false,
                    callback: Some(AppendCallback::Assignment {
                        group: group_id,
                        generation: request.generation,
                        assignment,
                    }),
                    response: None,
                })
            }
            ClassicState::Stable => {
                self.remove_pending_sync_member(&group_id, &request.member_id);
                let group = self.groups.get(&group_id)?;
                let member = group.member(&request.member_id)?;
                let response = SyncResponse {
                    error: None,
                    protocol_type: group.protocol_type.clone(),
                    protocol_name: group.protocol_name.clone(),
                    assignment: member.assignment.clone(),
                };
                self.respond(request_id, Response::Sync(response));
                None
            }
            _ => None,
        }
    }

    fn remove_pending_sync_member(&mut self, group_id: &str, member_id: &str) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        group.pending_sync.remove(member_id);
        let cancel = match group.state {
            ClassicState::Dead | ClassicState::Empty | ClassicState::PreparingRebalance => true,
            ClassicState::CompletingRebalance | ClassicState::Stable => group.pending_sync.is_empty(),
        };
        if cancel {
            self.timer.cancel(&sync_key(group_id));
        }
    }

    fn remove_sync_expiration(&mut self, group_id: &str) {
        if let Some(group) = self.groups.get_mut(group_id) {
            group.pending_sync.clear();
        }
        self.timer.cancel(&sync_key(group_id));
    }

    /// `resetAndPropagateAssignmentWithError`.
    fn reset_and_propagate_assignment(&mut self, group_id: &str, error: ErrorCode) {
        if let Some(group) = self.groups.get_mut(group_id) {
            for member in &mut group.members {
                member.assignment.clear();
            }
        }
        self.propagate_assignment(group_id, Some(error));
    }

    /// `propagateAssignment`: answers every parked SyncGroup and restarts
    /// those members' session timers.
    fn propagate_assignment(&mut self, group_id: &str, error: Option<ErrorCode>) {
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        let (protocol_type, protocol_name) = if error.is_none() {
            (group.protocol_type.clone(), group.protocol_name.clone())
        } else {
            (None, None)
        };
        let mut answers = Vec::new();
        let mut sessions = Vec::new();
        for member in &mut group.members {
            if let Some(request) = member.awaiting_sync.take() {
                answers.push((
                    request,
                    Response::Sync(SyncResponse {
                        error,
                        protocol_type: protocol_type.clone(),
                        protocol_name: protocol_name.clone(),
                        assignment: member.assignment.clone(),
                    }),
                ));
                sessions.push((member.member_id.clone(), member.session_timeout_ms));
            }
        }
        self.out.responses.extend(answers);
        for (member, session) in sessions {
            self.reschedule_heartbeat(group_id, &member, session);
        }
    }

    /// `expirePendingSync`: members that never sent SyncGroup are removed
    /// and the group rebalances without them.
    fn expire_pending_sync(&mut self, group_id: &str) -> Written {
        let hint = self.hint();
        let group = self.groups.get_mut(group_id)?;
        if !matches!(group.state, ClassicState::CompletingRebalance | ClassicState::Stable)
            || group.pending_sync.is_empty()
        {
            return None;
        }
        let missing: Vec<String> = group.pending_sync.iter().cloned().collect();
        for member_id in &missing {
            group.remove(member_id, &hint);
        }
        for member_id in &missing {
            self.timer.cancel(&heartbeat_key(group_id, member_id));
        }
        self.prepare_rebalance(group_id, RebalanceReason::SyncTimeout)
    }

    // ----- Heartbeat, LeaveGroup, OffsetCommit -----------------------------

    /// A Heartbeat: restarts the member's session timer; during a
    /// rebalance it answers `REBALANCE_IN_PROGRESS`, the cue to rejoin.
    pub fn heartbeat(
        &mut self,
        request_id: RequestId,
        group_id: &str,
        member: &MemberIdentity,
        generation: i32,
    ) -> Output {
        let error = self.heartbeat_inner(group_id, member, generation).err();
        let error = match error {
            Some(error) => Some(error),
            None => match self.groups.get(group_id).map(|group| group.state) {
                Some(ClassicState::PreparingRebalance) => Some(ErrorCode::RebalanceInProgress),
                _ => None,
            },
        };
        self.respond(request_id, Response::Heartbeat(error));
        self.take()
    }

    fn heartbeat_inner(&mut self, group_id: &str, identity: &MemberIdentity, generation: i32) -> Result<(), ErrorCode> {
        let group = self.groups.get(group_id).ok_or(ErrorCode::UnknownMemberId)?;
        if group.state == ClassicState::Dead {
            return Err(ErrorCode::CoordinatorNotAvailable);
        }
        group.validate_member(&identity.member_id, identity.group_instance_id.as_deref())?;
        if generation != group.generation {
            return Err(ErrorCode::IllegalGeneration);
        }
        if group.state == ClassicState::Empty {
            return Err(ErrorCode::UnknownMemberId);
        }
        let session = group
            .member(&identity.member_id)
            .map_or(0, |member| member.session_timeout_ms);
        self.reschedule_heartbeat(group_id, &identity.member_id, session);
        Ok(())
    }

    /// A LeaveGroup for one or more members (v3+ member identities).
    pub fn leave(&mut self, request_id: RequestId, group_id: &str, members: &[MemberIdentity]) -> Output {
        let Some(group) = self.groups.get(group_id) else {
            self.respond(
                request_id,
                Response::Leave(LeaveResponse {
                    error: Some(ErrorCode::UnknownMemberId),
                    members: Vec::new(),
                }),
            );
            return self.take();
        };
        if group.state == ClassicState::Dead {
            self.respond(
                request_id,
                Response::Leave(LeaveResponse {
                    error: Some(ErrorCode::CoordinatorNotAvailable),
                    members: Vec::new(),
                }),
            );
            return self.take();
        }
        let hint = self.hint();
        let mut answers = Vec::new();
        for identity in members {
            let group = self.groups.get_mut(group_id).expect("checked above");
            let error = if identity.member_id == UNKNOWN_MEMBER_ID {
                // Removal by instance id (an administrator's).
                match identity
                    .group_instance_id
                    .as_deref()
                    .and_then(|instance| group.static_member_id(instance))
                {
                    Some(member_id) => {
                        self.remove_current_member(group_id, &member_id, &hint);
                        None
                    }
                    None => Some(ErrorCode::UnknownMemberId),
                }
            } else if group.pending_join.contains(&identity.member_id) {
                group.remove(&identity.member_id, &[]);
                self.timer.cancel(&heartbeat_key(group_id, &identity.member_id));
                None
            } else {
                match group.validate_member(&identity.member_id, identity.group_instance_id.as_deref()) {
                    Ok(()) => {
                        self.remove_current_member(group_id, &identity.member_id, &hint);
                        None
                    }
                    Err(error) => Some(error),
                }
            };
            answers.push(LeaveMemberResponse {
                member_id: identity.member_id.clone(),
                group_instance_id: identity.group_instance_id.clone(),
                error,
            });
        }
        let mut written = None;
        if let Some(answer) = answers.iter().find(|answer| answer.error.is_none()) {
            let left = match answer.member_id.as_str() {
                UNKNOWN_MEMBER_ID => answer.group_instance_id.clone().unwrap_or_default(),
                member => member.to_string(),
            };
            written = match self.groups.get(group_id).map(|group| group.state) {
                Some(ClassicState::Stable | ClassicState::CompletingRebalance) => {
                    self.maybe_prepare_rebalance_or_complete_join(group_id, RebalanceReason::Left { member: left })
                }
                Some(ClassicState::PreparingRebalance) => self.maybe_complete_join_phase(group_id),
                _ => None,
            };
        }
        let response = Response::Leave(LeaveResponse {
            error: None,
            members: answers,
        });
        match written {
            Some(mut write) => {
                write.response = Some((request_id, response));
                self.out.writes.push(write);
            }
            None => self.respond(request_id, response),
        }
        self.take()
    }

    /// `removeCurrentMemberFromClassicGroup`.
    fn remove_current_member(&mut self, group_id: &str, member_id: &str, hint: &[String]) {
        self.timer.cancel(&heartbeat_key(group_id, member_id));
        let Some(group) = self.groups.get_mut(group_id) else {
            return;
        };
        if let Some(request) = group
            .member_mut(member_id)
            .and_then(|member| member.awaiting_join.take())
        {
            self.out.responses.push((
                request,
                Response::Join(JoinResponse::error(UNKNOWN_MEMBER_ID, ErrorCode::UnknownMemberId)),
            ));
        }
        group.remove(member_id, hint);
    }

    /// An OffsetCommit (v9) of one or more partitions. It is answered once
    /// its records are committed.
    pub fn commit(
        &mut self,
        request_id: RequestId,
        group_id: &str,
        member: &MemberIdentity,
        generation: i32,
        offsets: &[(String, u32, i64)],
    ) -> Output {
        let now = self.now_ms;
        let validated = match self.groups.get(group_id) {
            None if generation < 0 => {
                // A "simple" group, made by its first commit.
                self.groups
                    .insert(group_id.to_string(), ClassicGroup::new(group_id, now));
                Ok(())
            }
            None => Err(ErrorCode::GroupIdNotFound),
            Some(group) => group.validate_offset_commit(
                &member.member_id,
                member.group_instance_id.as_deref(),
                generation,
                false,
            ),
        };
        if let Err(error) = validated {
            self.respond(request_id, Response::OffsetCommit(Some(error)));
            return self.take();
        }
        let state = self.groups.get(group_id).map(|group| group.state);
        if matches!(state, Some(ClassicState::Stable | ClassicState::PreparingRebalance)) {
            // A commit keeps the member's session alive.
            let session = self
                .groups
                .get(group_id)
                .and_then(|group| group.member(&member.member_id))
                .map(|member| member.session_timeout_ms);
            if let Some(session) = session {
                self.reschedule_heartbeat(group_id, &member.member_id, session);
            }
        }
        self.commit_offsets(request_id, group_id, offsets)
    }

    /// Writes an OffsetCommit's offsets without checking the member: for a
    /// group another protocol's shard owns, which checked it
    /// (`ConsumerGroup#validateOffsetCommit`).
    pub fn commit_offsets(&mut self, request_id: RequestId, group_id: &str, offsets: &[(String, u32, i64)]) -> Output {
        self.offsets_write(request_id, group_id, offsets, Response::OffsetCommit(None), None)
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
