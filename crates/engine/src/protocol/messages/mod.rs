//! The messages nodes exchange on the simulated network: every request
//! and response is a closed variant of [`Message`] named after the Kafka
//! request it models, with Kafka's name for it ([`MessageName`]), what it
//! is about as typed facts ([`MessageFacts`]) and its one-line summary
//! for people.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::acks::Acks;
use super::metadata::{LeaderRecovery, MetadataFetchAnswer, PartitionRegistration};
use super::records::{LogBatch, ProducerBatch, Record};
use super::transactions::{ControlType, IsolationLevel, TransactionVersion};
use super::{BrokerId, ErrorCode, Offset, TopicPartition};

mod facts;
mod summary;

/// Which offset a `ListOffsets` asks for (`OffsetSpec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OffsetSpec {
    /// The log start offset: the first record still on disk.
    Earliest,
    /// The high watermark: where the next committed record will go.
    Latest,
}

impl std::fmt::Display for OffsetSpec {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            OffsetSpec::Earliest => "EARLIEST",
            OffsetSpec::Latest => "LATEST",
        })
    }
}

/// Kafka's name for a message on the wire (`Fetch`, `ProduceResponse`):
/// the requests a client or broker sends and their answers. Several
/// [`Message`]s share a name (a follower's, a consumer's and a metadata
/// fetch are all `Fetch`). JSON spells it as Kafka does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum MessageName {
    #[allow(missing_docs)]
    BrokerRegistration,
    #[allow(missing_docs)]
    BrokerRegistrationResponse,
    #[allow(missing_docs)]
    BrokerHeartbeat,
    #[allow(missing_docs)]
    BrokerHeartbeatResponse,
    #[allow(missing_docs)]
    Fetch,
    #[allow(missing_docs)]
    FetchResponse,
    #[allow(missing_docs)]
    BeginQuorumEpoch,
    #[allow(missing_docs)]
    AlterPartition,
    #[allow(missing_docs)]
    AlterPartitionResponse,
    #[allow(missing_docs)]
    Metadata,
    #[allow(missing_docs)]
    MetadataResponse,
    #[allow(missing_docs)]
    Produce,
    #[allow(missing_docs)]
    ProduceResponse,
    #[allow(missing_docs)]
    InitProducerId,
    #[allow(missing_docs)]
    InitProducerIdResponse,
    #[allow(missing_docs)]
    Vote,
    #[allow(missing_docs)]
    VoteResponse,
    #[allow(missing_docs)]
    NotController,
    #[allow(missing_docs)]
    FindCoordinator,
    #[allow(missing_docs)]
    FindCoordinatorResponse,
    #[allow(missing_docs)]
    JoinGroup,
    #[allow(missing_docs)]
    JoinGroupResponse,
    #[allow(missing_docs)]
    SyncGroup,
    #[allow(missing_docs)]
    SyncGroupResponse,
    #[allow(missing_docs)]
    Heartbeat,
    #[allow(missing_docs)]
    HeartbeatResponse,
    #[allow(missing_docs)]
    LeaveGroup,
    #[allow(missing_docs)]
    ConsumerGroupHeartbeat,
    #[allow(missing_docs)]
    ConsumerGroupHeartbeatResponse,
    #[allow(missing_docs)]
    OffsetCommit,
    #[allow(missing_docs)]
    OffsetCommitResponse,
    #[allow(missing_docs)]
    OffsetFetch,
    #[allow(missing_docs)]
    OffsetFetchResponse,
    #[allow(missing_docs)]
    ListOffsets,
    #[allow(missing_docs)]
    ListOffsetsResponse,
    #[allow(missing_docs)]
    OffsetForLeaderEpoch,
    #[allow(missing_docs)]
    OffsetForLeaderEpochResponse,
    #[allow(missing_docs)]
    ConnectionClosed,
    #[allow(missing_docs)]
    AddPartitionsToTxn,
    #[allow(missing_docs)]
    AddPartitionsToTxnResponse,
    #[allow(missing_docs)]
    EndTxn,
    #[allow(missing_docs)]
    EndTxnResponse,
    #[allow(missing_docs)]
    AddOffsetsToTxn,
    #[allow(missing_docs)]
    AddOffsetsToTxnResponse,
    #[allow(missing_docs)]
    TxnOffsetCommit,
    #[allow(missing_docs)]
    TxnOffsetCommitResponse,
    #[allow(missing_docs)]
    WriteTxnMarkers,
    #[allow(missing_docs)]
    WriteTxnMarkersResponse,
}

impl MessageName {
    /// Kafka's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageName::BrokerRegistration => "BrokerRegistration",
            MessageName::BrokerRegistrationResponse => "BrokerRegistrationResponse",
            MessageName::BrokerHeartbeat => "BrokerHeartbeat",
            MessageName::BrokerHeartbeatResponse => "BrokerHeartbeatResponse",
            MessageName::Fetch => "Fetch",
            MessageName::FetchResponse => "FetchResponse",
            MessageName::BeginQuorumEpoch => "BeginQuorumEpoch",
            MessageName::AlterPartition => "AlterPartition",
            MessageName::AlterPartitionResponse => "AlterPartitionResponse",
            MessageName::Metadata => "Metadata",
            MessageName::MetadataResponse => "MetadataResponse",
            MessageName::Produce => "Produce",
            MessageName::ProduceResponse => "ProduceResponse",
            MessageName::InitProducerId => "InitProducerId",
            MessageName::InitProducerIdResponse => "InitProducerIdResponse",
            MessageName::Vote => "Vote",
            MessageName::VoteResponse => "VoteResponse",
            MessageName::NotController => "NotController",
            MessageName::AddPartitionsToTxn => "AddPartitionsToTxn",
            MessageName::AddPartitionsToTxnResponse => "AddPartitionsToTxnResponse",
            MessageName::EndTxn => "EndTxn",
            MessageName::EndTxnResponse => "EndTxnResponse",
            MessageName::AddOffsetsToTxn => "AddOffsetsToTxn",
            MessageName::AddOffsetsToTxnResponse => "AddOffsetsToTxnResponse",
            MessageName::TxnOffsetCommit => "TxnOffsetCommit",
            MessageName::TxnOffsetCommitResponse => "TxnOffsetCommitResponse",
            MessageName::WriteTxnMarkers => "WriteTxnMarkers",
            MessageName::WriteTxnMarkersResponse => "WriteTxnMarkersResponse",
            MessageName::FindCoordinator => "FindCoordinator",
            MessageName::FindCoordinatorResponse => "FindCoordinatorResponse",
            MessageName::JoinGroup => "JoinGroup",
            MessageName::JoinGroupResponse => "JoinGroupResponse",
            MessageName::SyncGroup => "SyncGroup",
            MessageName::SyncGroupResponse => "SyncGroupResponse",
            MessageName::Heartbeat => "Heartbeat",
            MessageName::HeartbeatResponse => "HeartbeatResponse",
            MessageName::LeaveGroup => "LeaveGroup",
            MessageName::ConsumerGroupHeartbeat => "ConsumerGroupHeartbeat",
            MessageName::ConsumerGroupHeartbeatResponse => "ConsumerGroupHeartbeatResponse",
            MessageName::OffsetCommit => "OffsetCommit",
            MessageName::OffsetCommitResponse => "OffsetCommitResponse",
            MessageName::OffsetFetch => "OffsetFetch",
            MessageName::OffsetFetchResponse => "OffsetFetchResponse",
            MessageName::ListOffsets => "ListOffsets",
            MessageName::ListOffsetsResponse => "ListOffsetsResponse",
            MessageName::OffsetForLeaderEpoch => "OffsetForLeaderEpoch",
            MessageName::OffsetForLeaderEpochResponse => "OffsetForLeaderEpochResponse",
            MessageName::ConnectionClosed => "ConnectionClosed",
        }
    }
}

impl std::fmt::Display for MessageName {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// What a message is about, as typed facts: the views caption, filter and
/// place steps from these, never from [`Message::summary`], which says the
/// same in words for people.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageFacts {
    /// The partitions it concerns, in order: a produce request's batches, a
    /// response's partitions, a fetched partition (the metadata log's
    /// `__cluster_metadata-0` for a quorum fetch, with the partitions its
    /// records change), a group's committed or assigned partitions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub partitions: Vec<TopicPartition>,
    /// The errors it answers with (one per failed partition).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ErrorCode>,
    /// A produce request's `acks`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acks: Option<Acks>,
    /// A fetch's starting offset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetch_offset: Option<u64>,
    /// Records a fetch response carries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<u64>,
    /// The high watermark a fetch response reports.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub high_watermark: Option<u64>,
    /// The transactional id a transaction request is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactional_id: Option<String>,
    /// How a transaction ends (`EndTxn`, `WriteTxnMarkers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlType>,
    /// The last stable offset a fetch answer carries, when it is below
    /// the high watermark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_stable_offset: Option<u64>,
    /// The consumer group it concerns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// A `FindCoordinator` answer's coordinator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coordinator: Option<BrokerId>,
    /// The active controller a quorum message names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leader: Option<u32>,
    /// A `ConsumerGroupHeartbeat`'s member epoch (0 to join, -1 to leave),
    /// or the one its answer gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub member_epoch: Option<i32>,
    /// A partition leader's `AddPartitionsToTxn`: only verifies (KIP-890
    /// part 1, `true`) or adds the partitions (part 2, `false`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify_only: Option<bool>,
    /// The producer epoch a transaction request carries, or the one a
    /// version 2 `EndTxn` answer hands over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer_epoch: Option<u16>,
    /// A transaction request runs transaction version 2.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub transaction_v2: bool,
}

/// Every message on the simulated network. (Fields mirror the Kafka
/// request's fields of the same name.)
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum Message {
    /// A broker (re)starting announces itself (`BrokerRegistrationRequest`).
    BrokerRegistration {
        broker: BrokerId,
        incarnation: u32,
        /// The epoch it had when it last shut down cleanly (a controlled
        /// shutdown), read back from disk at start (`previousBrokerEpoch`;
        /// `None` is Kafka's -1, an unclean shutdown).
        previous_broker_epoch: Option<u64>,
    },
    /// Periodic liveness and metadata progress (`BrokerHeartbeatRequest`).
    BrokerHeartbeat {
        broker: BrokerId,
        broker_epoch: u64,
        metadata_offset: u64,
        /// A controlled shutdown is asked for (`wantShutDown`).
        want_shut_down: bool,
    },
    /// The answer to a registration: the new broker epoch, or
    /// `DUPLICATE_BROKER_REGISTRATION` while another incarnation's session
    /// is still valid (`ClusterControlManager#registerBroker`).
    BrokerRegistrationResponse { result: Result<u64, ErrorCode> },
    /// The controller's answer: the broker's epoch, whether it is fenced,
    /// and during a controlled shutdown whether it may stop now.
    BrokerHeartbeatResponse {
        broker_epoch: u64,
        fenced: bool,
        in_controlled_shutdown: bool,
        should_shut_down: bool,
    },
    /// A voter following the leader, or a broker (an observer), fetches
    /// `__cluster_metadata` from its log end (`Fetch`, KIP-595).
    MetadataFetch {
        /// The quorum epoch the fetcher knows.
        epoch: u32,
        fetch_offset: usize,
        last_fetched_epoch: u32,
    },
    /// The answer to a `MetadataFetch`.
    MetadataFetchResponse(MetadataFetchAnswer),
    /// A new quorum leader announces itself to the voters (`BeginQuorumEpoch`).
    BeginQuorumEpoch { epoch: u32, leader: u32 },
    /// A leader asks the controller to change a partition's ISR.
    AlterPartition {
        partition: TopicPartition,
        leader: BrokerId,
        leader_epoch: u32,
        partition_epoch: u32,
        new_isr: Vec<BrokerId>,
        /// The leader's recovery state: a leader marks itself RECOVERED when
        /// it takes over (`Partition#makeLeader`, KIP-704).
        leader_recovery: LeaderRecovery,
    },
    /// The controller's answer to AlterPartition.
    AlterPartitionResponse {
        partition: TopicPartition,
        result: Result<PartitionRegistration, ErrorCode>,
    },
    /// A follower pulls records from the leader.
    Fetch {
        partition: TopicPartition,
        replica: BrokerId,
        fetch_offset: Offset,
        last_fetched_epoch: Option<u32>,
        current_leader_epoch: u32,
        log_start_offset: Offset,
    },
    /// The leader's answer: records, its high watermark, or where the
    /// follower's log diverged.
    FetchResponse {
        partition: TopicPartition,
        leader_epoch: u32,
        batches: Vec<LogBatch<Record>>,
        high_watermark: Offset,
        log_start_offset: Offset,
        error: Option<ErrorCode>,
        diverging: Option<(u32, Offset)>,
    },
    /// A client asks any broker for leaders.
    MetadataRequest,
    /// Leaders and epochs as this broker knows them.
    MetadataResponse {
        leaders: BTreeMap<TopicPartition, (Option<BrokerId>, u32)>,
    },
    /// A producer sends a leader one batch for each of several partitions
    /// that broker leads, with one `acks` and one `timeoutMs`
    /// (`ProduceRequest`, built by `Sender#sendProduceRequest` from what
    /// `RecordAccumulator#drain` took for that node).
    Produce {
        request: u64,
        acks: Acks,
        timeout_ms: u64,
        batches: Vec<(TopicPartition, ProducerBatch)>,
        /// A transactional producer's `transactional.id`.
        transactional_id: Option<String>,
        /// The request runs transaction version 2 (`Produce` v12 and
        /// above): its leader adds a partition to the transaction itself.
        transaction_v2: bool,
    },
    /// The leader's one answer for every partition of the request: each
    /// batch's base offset, or that partition's error (`ProduceResponse`).
    ProduceResponse {
        request: u64,
        responses: Vec<(TopicPartition, Result<Offset, ErrorCode>)>,
        /// How long the client must wait before its next request to this
        /// broker: over its produce quota (`throttle_time_ms`), else 0.
        throttle_time_ms: u64,
    },
    /// An idempotent producer asks any broker for a producer id and epoch
    /// (`InitProducerId` with a null `transactionalId`).
    InitProducerId {
        request: u64,
        /// `transactional.id`: set, the request goes to the transaction
        /// coordinator, which bumps the id's epoch.
        transactional_id: Option<String>,
        /// `transaction.timeout.ms`.
        transaction_timeout_ms: u64,
        /// The producer id and epoch it has, to have the epoch bumped
        /// (KIP-360: after an abortable error, or when its cluster moves
        /// to transaction version 2).
        expected: Option<(u64, u16)>,
    },
    /// A transactional producer looks for its transaction coordinator
    /// (`FindCoordinator` with key type `TRANSACTION`).
    FindTxnCoordinator { transactional_id: String },
    /// The leader of the id's `__transaction_state` partition, if known.
    FindTxnCoordinatorResponse {
        transactional_id: String,
        coordinator: Option<BrokerId>,
    },
    /// Partitions the open transaction writes to (`AddPartitionsToTxn`).
    AddPartitionsToTxn {
        request: u64,
        transactional_id: String,
        producer_id: u64,
        epoch: u16,
        partitions: Vec<TopicPartition>,
    },
    #[allow(missing_docs)]
    AddPartitionsToTxnResponse { request: u64, error: Option<ErrorCode> },
    /// Commit or abort the open transaction (`EndTxn`; v5 and above run
    /// transaction version 2).
    EndTxn {
        request: u64,
        transactional_id: String,
        producer_id: u64,
        epoch: u16,
        commit: bool,
        transaction_v2: bool,
    },
    /// The end is decided, or why not. Version 2 answers with the
    /// producer id and epoch to use from now on (`EndTxnResponse` v5).
    /// Simplification: it also carries the `transaction.version` the
    /// answering broker has finalized, which Kafka's clients learn from
    /// `ApiVersions`.
    EndTxnResponse {
        request: u64,
        error: Option<ErrorCode>,
        producer: Option<(u64, u16)>,
        finalized: TransactionVersion,
    },
    /// A partition leader asks the transaction coordinator about the
    /// partitions of a produce (or a group coordinator about its offsets
    /// partition) whose first transactional batch just arrived
    /// (`AddPartitionsToTxn` v4 and above, sent by
    /// `AddPartitionsToTxnManager`): with `verify_only` (KIP-890 part 1,
    /// transaction version 0 and 1) whether they are in the open
    /// transaction; without (version 2) to add them.
    LeaderAddPartitionsToTxn {
        request: u64,
        transactional_id: String,
        producer_id: u64,
        epoch: u16,
        partitions: Vec<TopicPartition>,
        verify_only: bool,
    },
    /// Each partition's answer.
    LeaderAddPartitionsToTxnResponse {
        request: u64,
        results: Vec<(TopicPartition, Option<ErrorCode>)>,
    },
    /// KIP-98/447 `sendOffsetsToTransaction`, first half: the group's
    /// `__consumer_offsets` partition joins the open transaction
    /// (`AddOffsetsToTxn`).
    AddOffsetsToTxn {
        request: u64,
        transactional_id: String,
        producer_id: u64,
        epoch: u16,
        group: String,
    },
    #[allow(missing_docs)]
    AddOffsetsToTxnResponse { request: u64, error: Option<ErrorCode> },
    /// Second half: the consumer's positions go to the group coordinator
    /// as offsets pending until the transaction's marker
    /// (`TxnOffsetCommit`, with the member's generation: KIP-447).
    TxnOffsetCommit {
        request: u64,
        transactional_id: String,
        group: String,
        producer_id: u64,
        epoch: u16,
        generation: i32,
        member_id: String,
        instance: Option<String>,
        offsets: Vec<(TopicPartition, Offset)>,
        /// `TxnOffsetCommit` v5 and above: transaction version 2, so the
        /// group coordinator adds its partition to the transaction.
        transaction_v2: bool,
    },
    #[allow(missing_docs)]
    TxnOffsetCommitResponse {
        request: u64,
        group: String,
        error: Option<ErrorCode>,
    },
    /// The transaction coordinator asks a partition's leader to write a
    /// marker (`WriteTxnMarkers`, one partition per request here).
    WriteTxnMarkers {
        transactional_id: String,
        producer_id: u64,
        epoch: u16,
        coordinator_epoch: i32,
        control: ControlType,
        partition: TopicPartition,
    },
    /// The marker is written and replicated, or why not.
    WriteTxnMarkersResponse {
        transactional_id: String,
        partition: TopicPartition,
        error: Option<ErrorCode>,
    },
    /// The producer id and epoch, or an error (`InitProducerIdResponse`).
    /// A transaction coordinator's answer also carries the
    /// `transaction.version` its broker has finalized (see `EndTxnResponse`).
    InitProducerIdResponse {
        request: u64,
        result: Result<(u64, u16), ErrorCode>,
        finalized: TransactionVersion,
    },
    /// A candidate asks for a vote in `epoch` (`Vote`, KIP-595); with
    /// `pre_vote` a prospective in `epoch` asks whether it could win the
    /// next one before bumping its own (KIP-996).
    Vote {
        epoch: u32,
        candidate: u32,
        last_epoch: u32,
        last_index: u64,
        pre_vote: bool,
    },
    /// The voter's answer, with its epoch and the leader it knows.
    VoteResponse {
        epoch: u32,
        leader: Option<u32>,
        granted: bool,
        pre_vote: bool,
    },
    /// `NOT_CONTROLLER`: this controller is not active; here is the one it knows.
    NotController { leader: Option<u32> },
    /// Which broker coordinates a group (`FindCoordinator`).
    FindCoordinator { group: String },
    /// The leader of the group's `__consumer_offsets` partition, if known.
    FindCoordinatorResponse {
        group: String,
        coordinator: Option<BrokerId>,
    },
    /// A member (re)joins its group (`JoinGroup`).
    JoinGroup {
        group: String,
        /// `None` for a member without an id yet.
        member_id: Option<String>,
        /// `group.instance.id` of a static member.
        instance: Option<String>,
        session_timeout_ms: u64,
        /// The consumer's `max.poll.interval.ms`.
        rebalance_timeout_ms: u64,
        topics: Vec<String>,
        owned: Vec<TopicPartition>,
        assignor: String,
    },
    /// The new generation; the leader also gets every member's subscription.
    /// With `MEMBER_ID_REQUIRED`, `member_id` is the id to join with.
    JoinGroupResponse {
        group: String,
        member_id: String,
        result: Result<JoinResult, ErrorCode>,
    },
    /// Members fetch their assignment; the leader brings it (`SyncGroup`).
    SyncGroup {
        group: String,
        generation: u32,
        member_id: String,
        instance: Option<String>,
        assignment: Option<BTreeMap<String, Vec<TopicPartition>>>,
    },
    /// A member's partitions for this generation.
    SyncGroupResponse {
        group: String,
        result: Result<Vec<TopicPartition>, ErrorCode>,
    },
    /// A member is alive (`Heartbeat`).
    Heartbeat {
        group: String,
        generation: u32,
        member_id: String,
        instance: Option<String>,
    },
    /// `REBALANCE_IN_PROGRESS` tells the member to rejoin.
    HeartbeatResponse { group: String, error: Option<ErrorCode> },
    /// A member leaves on purpose (`LeaveGroup`).
    LeaveGroup {
        group: String,
        member_id: String,
        instance: Option<String>,
    },
    /// KIP-848: a member joins (epoch 0), heartbeats (its epoch) or leaves
    /// (epoch -1), and reports what it owns (`ConsumerGroupHeartbeat`).
    ConsumerGroupHeartbeat {
        group: String,
        member_id: String,
        member_epoch: i32,
        /// `max.poll.interval.ms`.
        rebalance_timeout_ms: u64,
        topics: Vec<String>,
        /// `group.remote.assignor`, if set.
        assignor: Option<String>,
        /// The partitions it owns now.
        owned: Vec<TopicPartition>,
    },
    /// The member's epoch and, when it changed (or on a full request), the
    /// partitions it should own now.
    ConsumerGroupHeartbeatResponse {
        group: String,
        result: Result<MemberEpochAnswer, ErrorCode>,
    },
    /// A member commits its positions (`OffsetCommit`).
    OffsetCommit {
        group: String,
        generation: u32,
        member_id: String,
        instance: Option<String>,
        offsets: Vec<(TopicPartition, Offset)>,
    },
    /// The commit is durable (or why not).
    OffsetCommitResponse {
        group: String,
        result: Result<(), ErrorCode>,
    },
    /// A member asks where to start (`OffsetFetch`).
    OffsetFetch {
        group: String,
        partitions: Vec<TopicPartition>,
    },
    /// Committed offsets, `None` where nothing was committed.
    OffsetFetchResponse {
        group: String,
        result: Result<Vec<(TopicPartition, Option<Offset>)>, ErrorCode>,
    },
    /// Where a partition's log starts or ends for consumers (`ListOffsets`
    /// with `EARLIEST`: the log start offset, or `LATEST`: the high
    /// watermark, or for `read_committed` the last stable offset, as
    /// `Partition#fetchOffsetForTimestamp` answers by the request's
    /// isolation level).
    ListOffsets {
        partition: TopicPartition,
        spec: OffsetSpec,
        isolation: IsolationLevel,
    },
    /// The high watermark.
    ListOffsetsResponse {
        partition: TopicPartition,
        result: Result<Offset, ErrorCode>,
    },
    /// KIP-320: a consumer asks the leader where the epoch of the last
    /// record it consumed ends there (`OffsetForLeaderEpoch` with replica
    /// id -1, `OffsetsForLeaderEpochUtils#prepareRequest`), with the leader
    /// epoch it knows, which the leader checks.
    OffsetForLeaderEpoch {
        partition: TopicPartition,
        leader_epoch: u32,
        current_leader_epoch: u32,
    },
    /// The epoch at or below the one asked for and where it ends on the
    /// leader (`LeaderEpochFileCache#endOffsetFor`); `None` when the leader
    /// knows no such epoch (UNDEFINED, -1 and -1).
    OffsetForLeaderEpochResponse {
        partition: TopicPartition,
        result: Result<Option<(u32, Offset)>, ErrorCode>,
    },
    /// A consumer reads from a leader (`Fetch` from a consumer, with its
    /// `isolation.level` and the leader epoch it knows, which the leader
    /// checks: KIP-320).
    ConsumerFetch {
        partition: TopicPartition,
        offset: Offset,
        isolation: IsolationLevel,
        current_leader_epoch: Option<u32>,
    },
    /// Records below the high watermark (`read_uncommitted`) or the last
    /// stable offset (`read_committed`, with the aborted transactions the
    /// records overlap: producer id and first offset).
    ConsumerFetchResponse {
        partition: TopicPartition,
        records: Vec<Record>,
        high_watermark: Offset,
        last_stable_offset: Offset,
        aborted: Vec<(u64, Offset)>,
        error: Option<ErrorCode>,
        /// The offset the fetch asked for (the client remembers it).
        fetch_offset: Offset,
        /// Where the next fetch starts: past the last batch returned, even
        /// where compaction emptied it (`nextFetchOffset`).
        next_offset: Offset,
        /// Over its `consumer_byte_rate`: how long the consumer waits
        /// before it fetches from this broker again (the answer is empty).
        throttle_time_ms: u64,
    },
    /// Not a request: the client's connection to a broker closed because
    /// the broker process died. Kafka's `NetworkClient` fails every request
    /// in flight on it with a `DisconnectException`; a consumer whose
    /// coordinator connection drops marks the coordinator unknown
    /// (`AbstractCoordinator.markCoordinatorUnknown`) and looks for it again.
    ConnectionClosed,
}

/// A successful `ConsumerGroupHeartbeat` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberEpochAnswer {
    /// The member's id.
    pub member_id: String,
    /// Its epoch now (-1 after leaving).
    pub member_epoch: i32,
    /// When to heartbeat next.
    pub heartbeat_interval_ms: u64,
    /// The partitions it should own, when sent.
    pub assignment: Option<Vec<TopicPartition>>,
}

/// What a member learns when a generation starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinResult {
    /// The new generation.
    pub generation: u32,
    /// This member's id.
    pub member_id: String,
    /// The leader's member id.
    pub leader: String,
    /// The assignor the group uses.
    pub assignor: String,
    /// For the leader: every member's id, subscription and owned
    /// partitions, in join order.
    pub members: Vec<(String, Vec<String>, Vec<TopicPartition>)>,
    /// KIP-814: a static leader that rejoined a stable group keeps the
    /// current assignment and need not compute one.
    pub skip_assignment: bool,
}

impl Message {
    /// A consumer fetch's answer with `error` and no records.
    pub fn consumer_fetch_error(partition: TopicPartition, error: ErrorCode) -> Message {
        Message::ConsumerFetchResponse {
            partition,
            records: Vec::new(),
            high_watermark: 0,
            last_stable_offset: 0,
            aborted: Vec::new(),
            error: Some(error),
            fetch_offset: 0,
            next_offset: 0,
            throttle_time_ms: 0,
        }
    }

    /// The Kafka API name, for traces and diagrams.
    pub fn name(&self) -> MessageName {
        match self {
            Message::BrokerRegistration { .. } => MessageName::BrokerRegistration,
            Message::BrokerRegistrationResponse { .. } => MessageName::BrokerRegistrationResponse,
            Message::BrokerHeartbeat { .. } => MessageName::BrokerHeartbeat,
            Message::BrokerHeartbeatResponse { .. } => MessageName::BrokerHeartbeatResponse,
            Message::MetadataFetch { .. } => MessageName::Fetch,
            Message::MetadataFetchResponse(_) => MessageName::FetchResponse,
            Message::BeginQuorumEpoch { .. } => MessageName::BeginQuorumEpoch,
            Message::AlterPartition { .. } => MessageName::AlterPartition,
            Message::AlterPartitionResponse { .. } => MessageName::AlterPartitionResponse,
            Message::Fetch { .. } => MessageName::Fetch,
            Message::FetchResponse { .. } => MessageName::FetchResponse,
            Message::MetadataRequest => MessageName::Metadata,
            Message::MetadataResponse { .. } => MessageName::MetadataResponse,
            Message::Produce { .. } => MessageName::Produce,
            Message::ProduceResponse { .. } => MessageName::ProduceResponse,
            Message::InitProducerId { .. } => MessageName::InitProducerId,
            Message::FindTxnCoordinator { .. } => MessageName::FindCoordinator,
            Message::FindTxnCoordinatorResponse { .. } => MessageName::FindCoordinatorResponse,
            Message::AddPartitionsToTxn { .. } => MessageName::AddPartitionsToTxn,
            Message::AddPartitionsToTxnResponse { .. } => MessageName::AddPartitionsToTxnResponse,
            Message::LeaderAddPartitionsToTxn { .. } => MessageName::AddPartitionsToTxn,
            Message::LeaderAddPartitionsToTxnResponse { .. } => MessageName::AddPartitionsToTxnResponse,
            Message::EndTxn { .. } => MessageName::EndTxn,
            Message::EndTxnResponse { .. } => MessageName::EndTxnResponse,
            Message::AddOffsetsToTxn { .. } => MessageName::AddOffsetsToTxn,
            Message::AddOffsetsToTxnResponse { .. } => MessageName::AddOffsetsToTxnResponse,
            Message::TxnOffsetCommit { .. } => MessageName::TxnOffsetCommit,
            Message::TxnOffsetCommitResponse { .. } => MessageName::TxnOffsetCommitResponse,
            Message::WriteTxnMarkers { .. } => MessageName::WriteTxnMarkers,
            Message::WriteTxnMarkersResponse { .. } => MessageName::WriteTxnMarkersResponse,
            Message::InitProducerIdResponse { .. } => MessageName::InitProducerIdResponse,
            Message::Vote { .. } => MessageName::Vote,
            Message::VoteResponse { .. } => MessageName::VoteResponse,
            Message::NotController { .. } => MessageName::NotController,
            Message::FindCoordinator { .. } => MessageName::FindCoordinator,
            Message::FindCoordinatorResponse { .. } => MessageName::FindCoordinatorResponse,
            Message::JoinGroup { .. } => MessageName::JoinGroup,
            Message::JoinGroupResponse { .. } => MessageName::JoinGroupResponse,
            Message::SyncGroup { .. } => MessageName::SyncGroup,
            Message::SyncGroupResponse { .. } => MessageName::SyncGroupResponse,
            Message::Heartbeat { .. } => MessageName::Heartbeat,
            Message::HeartbeatResponse { .. } => MessageName::HeartbeatResponse,
            Message::LeaveGroup { .. } => MessageName::LeaveGroup,
            Message::ConsumerGroupHeartbeat { .. } => MessageName::ConsumerGroupHeartbeat,
            Message::ConsumerGroupHeartbeatResponse { .. } => MessageName::ConsumerGroupHeartbeatResponse,
            Message::OffsetCommit { .. } => MessageName::OffsetCommit,
            Message::OffsetCommitResponse { .. } => MessageName::OffsetCommitResponse,
            Message::OffsetFetch { .. } => MessageName::OffsetFetch,
            Message::OffsetFetchResponse { .. } => MessageName::OffsetFetchResponse,
            Message::ConsumerFetch { .. } => MessageName::Fetch,
            Message::ListOffsets { .. } => MessageName::ListOffsets,
            Message::ListOffsetsResponse { .. } => MessageName::ListOffsetsResponse,
            Message::OffsetForLeaderEpoch { .. } => MessageName::OffsetForLeaderEpoch,
            Message::OffsetForLeaderEpochResponse { .. } => MessageName::OffsetForLeaderEpochResponse,
            Message::ConsumerFetchResponse { .. } => MessageName::FetchResponse,
            Message::ConnectionClosed => MessageName::ConnectionClosed,
        }
    }
}
