//! The messages nodes exchange on the simulated network: every request
//! and response is a closed variant of [`Message`] named after the Kafka
//! request it models, with Kafka's name for it ([`MessageName`]), what it
//! is about as typed facts ([`MessageFacts`]) and its one-line summary
//! for people.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::acks::Acks;
use super::metadata::{LeaderRecovery, MetadataFetchAnswer, MetadataRecord, PartitionRegistration, METADATA_PARTITION};
use super::records::{LogBatch, ProducerBatch, Record};
use super::transactions::{ControlType, IsolationLevel};
use super::{BrokerId, ErrorCode, Offset, TopicPartition};

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
    /// Commit or abort the open transaction (`EndTxn`).
    EndTxn {
        request: u64,
        transactional_id: String,
        producer_id: u64,
        epoch: u16,
        commit: bool,
    },
    #[allow(missing_docs)]
    EndTxnResponse { request: u64, error: Option<ErrorCode> },
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
    InitProducerIdResponse {
        request: u64,
        result: Result<(u64, u16), ErrorCode>,
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
    /// watermark).
    ListOffsets {
        partition: TopicPartition,
        spec: OffsetSpec,
    },
    /// The high watermark.
    ListOffsetsResponse {
        partition: TopicPartition,
        result: Result<Offset, ErrorCode>,
    },
    /// A consumer reads from a leader (`Fetch` from a consumer, with its
    /// `isolation.level`).
    ConsumerFetch {
        partition: TopicPartition,
        offset: Offset,
        isolation: IsolationLevel,
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
            Message::ConsumerFetchResponse { .. } => MessageName::FetchResponse,
            Message::ConnectionClosed => MessageName::ConnectionClosed,
        }
    }

    /// The typed facts of [`Message::summary`].
    pub fn facts(&self) -> MessageFacts {
        let mut facts = MessageFacts::default();
        match self {
            Message::BrokerRegistration { .. }
            | Message::BrokerHeartbeat { .. }
            | Message::BrokerHeartbeatResponse { .. }
            | Message::MetadataRequest
            | Message::MetadataResponse { .. }
            | Message::Vote { .. }
            | Message::ConnectionClosed => {}
            Message::BrokerRegistrationResponse { .. }
            | Message::MetadataFetch { .. }
            | Message::MetadataFetchResponse(..)
            | Message::BeginQuorumEpoch { .. }
            | Message::VoteResponse { .. }
            | Message::NotController { .. } => self.controller_facts(&mut facts),
            Message::AlterPartition { .. }
            | Message::ListOffsets { .. }
            | Message::AlterPartitionResponse { .. }
            | Message::ListOffsetsResponse { .. }
            | Message::Fetch { .. }
            | Message::ConsumerFetch { .. }
            | Message::FetchResponse { .. }
            | Message::ConsumerFetchResponse { .. }
            | Message::Produce { .. }
            | Message::ProduceResponse { .. } => self.partition_facts(&mut facts),
            Message::InitProducerId { .. }
            | Message::FindTxnCoordinator { .. }
            | Message::EndTxn { .. }
            | Message::FindTxnCoordinatorResponse { .. }
            | Message::AddPartitionsToTxn { .. }
            | Message::AddPartitionsToTxnResponse { .. }
            | Message::EndTxnResponse { .. }
            | Message::AddOffsetsToTxnResponse { .. }
            | Message::AddOffsetsToTxn { .. }
            | Message::TxnOffsetCommit { .. }
            | Message::TxnOffsetCommitResponse { .. }
            | Message::WriteTxnMarkers { .. }
            | Message::WriteTxnMarkersResponse { .. }
            | Message::InitProducerIdResponse { .. } => self.transaction_facts(&mut facts),
            Message::FindCoordinator { .. }
            | Message::JoinGroup { .. }
            | Message::SyncGroup { .. }
            | Message::Heartbeat { .. }
            | Message::LeaveGroup { .. }
            | Message::FindCoordinatorResponse { .. }
            | Message::JoinGroupResponse { .. }
            | Message::SyncGroupResponse { .. }
            | Message::HeartbeatResponse { .. }
            | Message::OffsetCommit { .. }
            | Message::OffsetCommitResponse { .. }
            | Message::OffsetFetch { .. }
            | Message::ConsumerGroupHeartbeat { .. }
            | Message::ConsumerGroupHeartbeatResponse { .. }
            | Message::OffsetFetchResponse { .. } => self.group_facts(&mut facts),
        }
        facts
    }

    /// [`Message::facts`] of the controller's and the quorum's messages.
    fn controller_facts(&self, facts: &mut MessageFacts) {
        let metadata = || TopicPartition {
            topic: std::sync::Arc::from("__cluster_metadata"),
            partition: 0,
        };
        match self {
            Message::BrokerRegistrationResponse { result } => facts.errors.extend(result.as_ref().err()),
            Message::MetadataFetch { fetch_offset, .. } => {
                facts.partitions.push(metadata());
                facts.fetch_offset = Some(*fetch_offset as u64);
            }
            Message::MetadataFetchResponse(answer) => {
                facts.partitions.push(metadata());
                facts.leader = answer.leader;
                facts.errors.extend(answer.error);
                if answer.error.is_none() && answer.diverging.is_none() {
                    facts.high_watermark = Some(answer.high_watermark as u64);
                    for record in answer.entries.iter().flat_map(|entry| entry.records.iter()) {
                        if let MetadataRecord::Partition { partition, .. }
                        | MetadataRecord::PartitionChange { partition, .. } = record
                        {
                            facts.partitions.push(partition.clone());
                        }
                    }
                }
            }
            Message::BeginQuorumEpoch { leader, .. } => facts.leader = Some(*leader),
            Message::VoteResponse { leader, .. } | Message::NotController { leader } => facts.leader = *leader,
            _ => unreachable!("Message::facts routes no other Message here"),
        }
    }

    /// [`Message::facts`] of the messages about a partition's records: fetches,
    /// produces, ISR changes and offset lookups.
    fn partition_facts(&self, facts: &mut MessageFacts) {
        match self {
            Message::AlterPartition { partition, .. } | Message::ListOffsets { partition, .. } => {
                facts.partitions.push(partition.clone())
            }
            Message::AlterPartitionResponse { partition, result } => {
                facts.partitions.push(partition.clone());
                facts.errors.extend(result.as_ref().err());
            }
            Message::ListOffsetsResponse { partition, result } => {
                facts.partitions.push(partition.clone());
                facts.errors.extend(result.as_ref().err());
            }
            Message::Fetch {
                partition,
                fetch_offset,
                ..
            }
            | Message::ConsumerFetch {
                partition,
                offset: fetch_offset,
                ..
            } => {
                facts.partitions.push(partition.clone());
                facts.fetch_offset = Some(*fetch_offset);
            }
            Message::FetchResponse {
                partition,
                batches,
                high_watermark,
                error,
                ..
            } => {
                facts.partitions.push(partition.clone());
                facts.errors.extend(*error);
                facts.records = Some(batches.iter().map(|batch| batch.records.len() as u64).sum());
                facts.high_watermark = Some(*high_watermark);
            }
            Message::ConsumerFetchResponse {
                partition,
                records,
                high_watermark,
                error,
                last_stable_offset,
                ..
            } => {
                facts.partitions.push(partition.clone());
                facts.errors.extend(*error);
                facts.records = Some(records.len() as u64);
                facts.high_watermark = Some(*high_watermark);
                facts.last_stable_offset = (last_stable_offset < high_watermark).then_some(*last_stable_offset);
            }
            Message::Produce { acks, batches, .. } => {
                facts.acks = Some(*acks);
                facts
                    .partitions
                    .extend(batches.iter().map(|(partition, _)| partition.clone()));
            }
            Message::ProduceResponse { responses, .. } => {
                for (partition, result) in responses {
                    facts.partitions.push(partition.clone());
                    facts.errors.extend(result.as_ref().err());
                }
            }
            _ => unreachable!("Message::facts routes no other Message here"),
        }
    }

    /// [`Message::facts`] of the producer id and transaction protocol's
    /// messages.
    fn transaction_facts(&self, facts: &mut MessageFacts) {
        match self {
            Message::InitProducerId { transactional_id, .. } => facts.transactional_id = transactional_id.clone(),
            Message::FindTxnCoordinator { transactional_id } => facts.transactional_id = Some(transactional_id.clone()),
            Message::EndTxn {
                transactional_id,
                commit,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.control = Some(if *commit {
                    ControlType::Commit
                } else {
                    ControlType::Abort
                });
            }
            Message::FindTxnCoordinatorResponse {
                transactional_id,
                coordinator,
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                if coordinator.is_none() {
                    facts.errors.push(ErrorCode::CoordinatorNotAvailable);
                }
            }
            Message::AddPartitionsToTxn {
                transactional_id,
                partitions,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.partitions.extend(partitions.iter().cloned());
            }
            Message::AddPartitionsToTxnResponse { error, .. }
            | Message::EndTxnResponse { error, .. }
            | Message::AddOffsetsToTxnResponse { error, .. } => {
                facts.errors.extend(*error);
            }
            Message::AddOffsetsToTxn {
                transactional_id,
                group,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.group = Some(group.clone());
            }
            Message::TxnOffsetCommit {
                transactional_id,
                group,
                offsets,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.group = Some(group.clone());
                facts
                    .partitions
                    .extend(offsets.iter().map(|(partition, _)| partition.clone()));
            }
            Message::TxnOffsetCommitResponse { group, error, .. } => {
                facts.group = Some(group.clone());
                facts.errors.extend(*error);
            }
            Message::WriteTxnMarkers {
                transactional_id,
                partition,
                control,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.control = Some(*control);
                facts.partitions.push(partition.clone());
            }
            Message::WriteTxnMarkersResponse { partition, error, .. } => {
                facts.partitions.push(partition.clone());
                facts.errors.extend(*error);
            }
            Message::InitProducerIdResponse { result, .. } => facts.errors.extend(result.as_ref().err()),
            _ => unreachable!("Message::facts routes no other Message here"),
        }
    }

    /// [`Message::facts`] of the group protocols' messages.
    fn group_facts(&self, facts: &mut MessageFacts) {
        match self {
            Message::FindCoordinator { group }
            | Message::JoinGroup { group, .. }
            | Message::SyncGroup { group, .. }
            | Message::Heartbeat { group, .. }
            | Message::LeaveGroup { group, .. } => facts.group = Some(group.clone()),
            Message::FindCoordinatorResponse { group, coordinator } => {
                facts.group = Some(group.clone());
                facts.coordinator = *coordinator;
            }
            Message::JoinGroupResponse { group, result, .. } => {
                facts.group = Some(group.clone());
                facts.errors.extend(result.as_ref().err());
            }
            Message::SyncGroupResponse { group, result } => {
                facts.group = Some(group.clone());
                match result {
                    Ok(partitions) => facts.partitions.extend(partitions.iter().cloned()),
                    Err(error) => facts.errors.push(*error),
                }
            }
            Message::HeartbeatResponse { group, error } => {
                facts.group = Some(group.clone());
                facts.errors.extend(*error);
            }
            Message::OffsetCommit { group, offsets, .. } => {
                facts.group = Some(group.clone());
                facts
                    .partitions
                    .extend(offsets.iter().map(|(partition, _)| partition.clone()));
            }
            Message::OffsetCommitResponse { group, result } => {
                facts.group = Some(group.clone());
                facts.errors.extend(result.as_ref().err());
            }
            Message::OffsetFetch { group, .. } => facts.group = Some(group.clone()),
            Message::ConsumerGroupHeartbeat {
                group,
                owned,
                member_epoch,
                ..
            } => {
                facts.group = Some(group.clone());
                facts.member_epoch = Some(*member_epoch);
                facts.partitions.extend(owned.iter().cloned());
            }
            Message::ConsumerGroupHeartbeatResponse { group, result } => {
                facts.group = Some(group.clone());
                match result {
                    Ok(answer) => {
                        facts.member_epoch = Some(answer.member_epoch);
                        facts.partitions.extend(answer.assignment.iter().flatten().cloned());
                    }
                    Err(error) => facts.errors.push(*error),
                }
            }
            Message::OffsetFetchResponse { group, result } => {
                facts.group = Some(group.clone());
                match result {
                    Ok(offsets) => facts
                        .partitions
                        .extend(offsets.iter().map(|(partition, _)| partition.clone())),
                    Err(error) => facts.errors.push(*error),
                }
            }
            _ => unreachable!("Message::facts routes no other Message here"),
        }
    }

    /// A one-line summary with this run's numbers.
    pub fn summary(&self) -> String {
        match self {
            Message::BrokerRegistration { .. }
            | Message::BrokerRegistrationResponse { .. }
            | Message::BrokerHeartbeat { .. }
            | Message::BrokerHeartbeatResponse { .. }
            | Message::AlterPartition { .. }
            | Message::AlterPartitionResponse { .. } => self.controller_summary(),
            Message::MetadataFetch { .. }
            | Message::MetadataFetchResponse(..)
            | Message::BeginQuorumEpoch { .. }
            | Message::Vote { .. }
            | Message::VoteResponse { .. }
            | Message::NotController { .. } => self.quorum_summary(),
            Message::Fetch { .. } | Message::FetchResponse { .. } => self.replication_summary(),
            Message::MetadataRequest
            | Message::MetadataResponse { .. }
            | Message::Produce { .. }
            | Message::ProduceResponse { .. }
            | Message::InitProducerId { .. }
            | Message::InitProducerIdResponse { .. } => self.producer_summary(),
            Message::FindTxnCoordinator { .. }
            | Message::FindTxnCoordinatorResponse { .. }
            | Message::AddPartitionsToTxn { .. }
            | Message::AddOffsetsToTxn { .. }
            | Message::TxnOffsetCommit { .. }
            | Message::TxnOffsetCommitResponse { .. }
            | Message::AddPartitionsToTxnResponse { .. }
            | Message::EndTxnResponse { .. }
            | Message::AddOffsetsToTxnResponse { .. }
            | Message::EndTxn { .. }
            | Message::WriteTxnMarkers { .. }
            | Message::WriteTxnMarkersResponse { .. } => self.transaction_summary(),
            Message::FindCoordinator { .. }
            | Message::FindCoordinatorResponse { .. }
            | Message::JoinGroup { .. }
            | Message::JoinGroupResponse { .. }
            | Message::SyncGroup { .. }
            | Message::SyncGroupResponse { .. }
            | Message::Heartbeat { .. }
            | Message::HeartbeatResponse { .. }
            | Message::LeaveGroup { .. } => self.classic_group_summary(),
            Message::ConsumerGroupHeartbeat { .. }
            | Message::ConsumerGroupHeartbeatResponse { .. }
            | Message::OffsetCommit { .. }
            | Message::OffsetCommitResponse { .. }
            | Message::OffsetFetch { .. }
            | Message::OffsetFetchResponse { .. } => self.member_summary(),
            Message::ConsumerFetch { .. }
            | Message::ListOffsets { .. }
            | Message::ListOffsetsResponse { .. }
            | Message::ConsumerFetchResponse { .. }
            | Message::ConnectionClosed => self.consumer_fetch_summary(),
        }
    }

    /// [`Message::summary`] of a broker's requests to the controller and
    /// their answers.
    fn controller_summary(&self) -> String {
        match self {
            Message::BrokerRegistration {
                broker,
                incarnation,
                previous_broker_epoch,
            } => {
                let previous = previous_broker_epoch.map_or(-1, |epoch| epoch as i64);
                format!("BrokerRegistration broker={broker} incarnation={incarnation} previousBrokerEpoch={previous}")
            }
            Message::BrokerRegistrationResponse { result } => match result {
                Ok(epoch) => format!("BrokerRegistrationResponse epoch={epoch}"),
                Err(error) => format!("BrokerRegistrationResponse error={error}"),
            },
            Message::BrokerHeartbeat {
                broker,
                broker_epoch,
                metadata_offset,
                want_shut_down,
            } => {
                let mut text =
                    format!("BrokerHeartbeat broker={broker} epoch={broker_epoch} metadataOffset={metadata_offset}");
                if *want_shut_down {
                    text.push_str(" wantShutDown=true");
                }
                text
            }
            Message::BrokerHeartbeatResponse {
                broker_epoch,
                fenced,
                in_controlled_shutdown,
                should_shut_down,
            } => {
                let mut text = format!("BrokerHeartbeatResponse epoch={broker_epoch} fenced={fenced}");
                if *in_controlled_shutdown {
                    text.push_str(" inControlledShutdown=true");
                }
                if *should_shut_down {
                    text.push_str(" shouldShutDown=true");
                }
                text
            }
            Message::AlterPartition {
                partition,
                leader_epoch,
                partition_epoch,
                new_isr,
                ..
            } => format!(
                "AlterPartition {partition} leaderEpoch={leader_epoch} partitionEpoch={partition_epoch} isr={new_isr:?}"
            ),
            Message::AlterPartitionResponse { partition, result } => match result {
                Ok(registration) => format!(
                    "AlterPartitionResponse {partition} isr={:?} partitionEpoch={}",
                    registration.isr, registration.partition_epoch
                ),
                Err(error) => format!("AlterPartitionResponse {partition} error={error}"),
            },
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }

    /// [`Message::summary`] of the controller quorum's messages.
    fn quorum_summary(&self) -> String {
        match self {
            Message::MetadataFetch {
                epoch,
                fetch_offset,
                last_fetched_epoch,
            } => format!(
                "Fetch {METADATA_PARTITION} offset={fetch_offset} lastFetchedEpoch={last_fetched_epoch} epoch={epoch}"
            ),
            Message::MetadataFetchResponse(MetadataFetchAnswer {
                epoch,
                leader,
                error,
                entries,
                high_watermark,
                diverging,
                ..
            }) => {
                let leader = leader.map_or("unknown".to_string(), |leader| format!("controller-{leader}"));
                let mut text = format!("FetchResponse {METADATA_PARTITION} epoch={epoch} leader={leader}");
                if let Some(error) = error {
                    text.push_str(&format!(" error={error}"));
                } else if let Some((epoch, end)) = diverging {
                    text.push_str(&format!(" divergingEpoch={epoch} endOffset={end}"));
                } else {
                    text.push_str(&format!(" entries={} hw={high_watermark}", entries.len()));
                    let records: Vec<String> = entries
                        .iter()
                        .flat_map(|entry| entry.records.iter().map(ToString::to_string))
                        .collect();
                    if !records.is_empty() {
                        text.push_str(&format!(" [{}]", records.join("; ")));
                    }
                }
                text
            }
            Message::BeginQuorumEpoch { epoch, leader } => {
                format!("BeginQuorumEpoch epoch={epoch} leader=controller-{leader}")
            }
            Message::Vote {
                epoch,
                candidate,
                last_epoch,
                last_index,
                pre_vote,
            } => {
                format!("Vote epoch={epoch} candidate=controller-{candidate} lastEpoch={last_epoch} lastOffset={last_index} preVote={pre_vote}")
            }
            Message::VoteResponse {
                epoch,
                leader,
                granted,
                pre_vote,
            } => {
                let leader = leader.map_or("unknown".to_string(), |leader| format!("controller-{leader}"));
                format!("VoteResponse epoch={epoch} leader={leader} granted={granted} preVote={pre_vote}")
            }
            Message::NotController { leader } => format!(
                "NotController leader={}",
                leader.map_or("unknown".to_string(), |leader| format!("controller-{leader}"))
            ),
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }

    /// [`Message::summary`] of a follower's fetch and its answer.
    fn replication_summary(&self) -> String {
        match self {
            Message::Fetch {
                partition,
                replica,
                fetch_offset,
                current_leader_epoch,
                ..
            } => {
                format!("Fetch {partition} replica={replica} offset={fetch_offset} leaderEpoch={current_leader_epoch}")
            }
            Message::FetchResponse {
                partition,
                batches,
                high_watermark,
                error,
                diverging,
                ..
            } => {
                let records: usize = batches.iter().map(|batch| batch.records.len()).sum();
                let mut text = format!("FetchResponse {partition} records={records} hw={high_watermark}");
                if let Some(error) = error {
                    text.push_str(&format!(" error={error}"));
                }
                if let Some((epoch, end)) = diverging {
                    text.push_str(&format!(" divergingEpoch={epoch} endOffset={end}"));
                }
                text
            }
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }

    /// [`Message::summary`] of a producer's metadata, produce and producer id
    /// requests and their answers.
    fn producer_summary(&self) -> String {
        match self {
            Message::MetadataRequest => "Metadata".to_string(),
            Message::MetadataResponse { leaders } => format!("MetadataResponse partitions={}", leaders.len()),
            Message::Produce {
                acks,
                timeout_ms,
                batches,
                ..
            } => {
                let mut text = format!("Produce acks={acks} timeoutMs={timeout_ms}");
                if let Some((producer_id, epoch, _)) = batches.first().and_then(|(_, batch)| batch.idempotence) {
                    text.push_str(&format!(" producerId={producer_id} producerEpoch={epoch}"));
                }
                let parts: Vec<String> = batches
                    .iter()
                    .map(|(partition, batch)| {
                        let mut part = format!("{partition} records={}", batch.records.len());
                        if let Some((_, _, sequence)) = batch.idempotence {
                            part.push_str(&format!(" baseSequence={sequence}"));
                        }
                        part
                    })
                    .collect();
                text.push_str(&format!(" [{}]", parts.join("; ")));
                text
            }
            Message::ProduceResponse {
                responses,
                throttle_time_ms,
                ..
            } => {
                let parts: Vec<String> = responses
                    .iter()
                    .map(|(partition, result)| match result {
                        Ok(offset) => format!("{partition} baseOffset={offset}"),
                        Err(error) => format!("{partition} error={error}"),
                    })
                    .collect();
                let throttled = if *throttle_time_ms > 0 {
                    format!(" throttleTimeMs={throttle_time_ms}")
                } else {
                    String::new()
                };
                format!("ProduceResponse [{}]{throttled}", parts.join("; "))
            }
            Message::InitProducerId {
                transactional_id,
                transaction_timeout_ms,
                ..
            } => match transactional_id {
                None => "InitProducerId transactionalId=null".to_string(),
                Some(id) => {
                    format!("InitProducerId transactionalId={id} transactionTimeoutMs={transaction_timeout_ms}")
                }
            },
            Message::InitProducerIdResponse { result, .. } => match result {
                Ok((producer_id, epoch)) => {
                    format!("InitProducerIdResponse producerId={producer_id} producerEpoch={epoch}")
                }
                Err(error) => format!("InitProducerIdResponse error={error}"),
            },
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }

    /// [`Message::summary`] of the transaction protocol's messages.
    fn transaction_summary(&self) -> String {
        match self {
            Message::FindTxnCoordinator { transactional_id } => {
                format!("FindCoordinator keyType=TRANSACTION key={transactional_id}")
            }
            Message::FindTxnCoordinatorResponse {
                transactional_id,
                coordinator,
            } => match coordinator {
                Some(broker) => format!("FindCoordinatorResponse key={transactional_id} coordinator=broker-{broker}"),
                None => format!("FindCoordinatorResponse key={transactional_id} error=COORDINATOR_NOT_AVAILABLE"),
            },
            Message::AddPartitionsToTxn {
                transactional_id,
                producer_id,
                epoch,
                partitions,
                ..
            } => format!(
                "AddPartitionsToTxn transactionalId={transactional_id} producerId={producer_id} producerEpoch={epoch} [{}]",
                partition_list(partitions)
            ),
            Message::AddOffsetsToTxn {
                transactional_id,
                producer_id,
                epoch,
                group,
                ..
            } => format!(
                "AddOffsetsToTxn transactionalId={transactional_id} producerId={producer_id} producerEpoch={epoch} groupId={group}"
            ),
            Message::TxnOffsetCommit {
                transactional_id,
                group,
                producer_id,
                epoch,
                generation,
                member_id,
                offsets,
                ..
            } => format!(
                "TxnOffsetCommit transactionalId={transactional_id} groupId={group} producerId={producer_id} producerEpoch={epoch} generation={generation} member={member_id} {}",
                offsets
                    .iter()
                    .map(|(partition, offset)| format!("{partition}={offset}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Message::TxnOffsetCommitResponse { group, error, .. } => match error {
                None => format!("TxnOffsetCommitResponse group={group} ok"),
                Some(error) => format!("TxnOffsetCommitResponse group={group} error={error}"),
            },
            Message::AddPartitionsToTxnResponse { error, .. }
            | Message::EndTxnResponse { error, .. }
            | Message::AddOffsetsToTxnResponse { error, .. } => {
                let name = self.name().as_str();
                match error {
                    None => format!("{name} ok"),
                    Some(error) => format!("{name} error={error}"),
                }
            }
            Message::EndTxn {
                transactional_id,
                producer_id,
                epoch,
                commit,
                ..
            } => format!(
                "EndTxn transactionalId={transactional_id} producerId={producer_id} producerEpoch={epoch} committed={commit}"
            ),
            Message::WriteTxnMarkers {
                producer_id,
                epoch,
                coordinator_epoch,
                control,
                partition,
                ..
            } => format!(
                "WriteTxnMarkers {control} {partition} producerId={producer_id} producerEpoch={epoch} coordinatorEpoch={coordinator_epoch}"
            ),
            Message::WriteTxnMarkersResponse { partition, error, .. } => match error {
                None => format!("WriteTxnMarkersResponse {partition} ok"),
                Some(error) => format!("WriteTxnMarkersResponse {partition} error={error}"),
            },
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }

    /// [`Message::summary`] of the classic group protocol's messages.
    fn classic_group_summary(&self) -> String {
        match self {
            Message::FindCoordinator { group } => format!("FindCoordinator group={group}"),
            Message::FindCoordinatorResponse { group, coordinator } => format!(
                "FindCoordinatorResponse group={group} coordinator={}",
                coordinator.map_or("none".to_string(), |broker| format!("broker-{broker}"))
            ),
            Message::JoinGroup {
                group,
                member_id,
                topics,
                assignor,
                ..
            } => format!(
                "JoinGroup group={group} member={} topics={topics:?} assignor={assignor}",
                member_id.as_deref().unwrap_or("(new)")
            ),
            Message::JoinGroupResponse {
                group,
                member_id,
                result,
            } => match result {
                Ok(join) => format!(
                    "JoinGroupResponse group={group} generation={} member={} leader={}",
                    join.generation, join.member_id, join.leader
                ),
                Err(ErrorCode::MemberIdRequired) => {
                    format!("JoinGroupResponse group={group} error=MEMBER_ID_REQUIRED member={member_id}")
                }
                Err(error) => format!("JoinGroupResponse group={group} error={error}"),
            },
            Message::SyncGroup {
                group,
                generation,
                member_id,
                assignment,
                ..
            } => format!(
                "SyncGroup group={group} generation={generation} member={member_id}{}",
                if assignment.is_some() {
                    " (with the leader's assignment)"
                } else {
                    ""
                }
            ),
            Message::SyncGroupResponse { group, result } => match result {
                Ok(partitions) => format!(
                    "SyncGroupResponse group={group} partitions=[{}]",
                    partitions
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Err(error) => format!("SyncGroupResponse group={group} error={error}"),
            },
            Message::Heartbeat {
                group,
                generation,
                member_id,
                ..
            } => {
                format!("Heartbeat group={group} generation={generation} member={member_id}")
            }
            Message::HeartbeatResponse { group, error } => match error {
                Some(error) => format!("HeartbeatResponse group={group} error={error}"),
                None => format!("HeartbeatResponse group={group}"),
            },
            Message::LeaveGroup { group, member_id, .. } => format!("LeaveGroup group={group} member={member_id}"),
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }

    /// [`Message::summary`] of KIP-848 heartbeats and of a member's offset
    /// commits and fetches.
    fn member_summary(&self) -> String {
        match self {
            Message::ConsumerGroupHeartbeat {
                group,
                member_id,
                member_epoch,
                owned,
                ..
            } => format!(
                "ConsumerGroupHeartbeat group={group} member={member_id} epoch={member_epoch}{} owned=[{}]",
                match member_epoch {
                    0 => " (join)",
                    -1 => " (leave)",
                    _ => "",
                },
                partition_list(owned)
            ),
            Message::ConsumerGroupHeartbeatResponse { group, result } => match result {
                Ok(answer) => format!(
                    "ConsumerGroupHeartbeatResponse group={group} member={} epoch={}{}",
                    answer.member_id,
                    answer.member_epoch,
                    answer.assignment.as_ref().map_or(String::new(), |partitions| format!(
                        " assignment=[{}]",
                        partition_list(partitions)
                    ))
                ),
                Err(error) => format!("ConsumerGroupHeartbeatResponse group={group} error={error}"),
            },
            Message::OffsetCommit {
                group,
                generation,
                offsets,
                ..
            } => format!(
                "OffsetCommit group={group} generation={generation} {}",
                offsets
                    .iter()
                    .map(|(partition, offset)| format!("{partition}={offset}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Message::OffsetCommitResponse { group, result } => match result {
                Ok(()) => format!("OffsetCommitResponse group={group}"),
                Err(error) => format!("OffsetCommitResponse group={group} error={error}"),
            },
            Message::OffsetFetch { group, partitions } => {
                format!("OffsetFetch group={group} partitions={}", partitions.len())
            }
            Message::OffsetFetchResponse { group, result } => match result {
                Ok(offsets) => format!(
                    "OffsetFetchResponse group={group} {}",
                    offsets
                        .iter()
                        .map(|(partition, offset)| format!(
                            "{partition}={}",
                            offset.map_or("none".to_string(), |offset| offset.to_string())
                        ))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                Err(error) => format!("OffsetFetchResponse group={group} error={error}"),
            },
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }

    /// [`Message::summary`] of a consumer's fetches and offset lookups, and of
    /// a closed connection.
    fn consumer_fetch_summary(&self) -> String {
        match self {
            Message::ConsumerFetch {
                partition,
                offset,
                isolation,
            } => match isolation {
                IsolationLevel::ReadUncommitted => format!("Fetch {partition} offset={offset} (consumer)"),
                IsolationLevel::ReadCommitted => {
                    format!("Fetch {partition} offset={offset} (consumer, read_committed)")
                }
            },
            Message::ListOffsets { partition, spec } => format!("ListOffsets {partition} {spec}"),
            Message::ListOffsetsResponse { partition, result } => match result {
                Ok(offset) => format!("ListOffsetsResponse {partition} offset={offset}"),
                Err(error) => format!("ListOffsetsResponse {partition} error={error}"),
            },
            Message::ConsumerFetchResponse {
                partition,
                records,
                high_watermark,
                last_stable_offset,
                aborted,
                error,
                throttle_time_ms,
                ..
            } => match error {
                Some(error) => format!("FetchResponse {partition} error={error}"),
                None if *throttle_time_ms > 0 => {
                    format!("FetchResponse {partition} records=0 (throttled) throttleTimeMs={throttle_time_ms}")
                }
                None => {
                    let mut text = format!(
                        "FetchResponse {partition} records={} hw={high_watermark}",
                        records.len()
                    );
                    if last_stable_offset < high_watermark {
                        text.push_str(&format!(" lso={last_stable_offset}"));
                    }
                    if !aborted.is_empty() {
                        text.push_str(&format!(" abortedTransactions={}", aborted.len()));
                    }
                    text
                }
            },
            Message::ConnectionClosed => "connection closed (the broker process is gone)".to_string(),
            _ => unreachable!("Message::summary routes no other Message here"),
        }
    }
}

fn partition_list(partitions: &[TopicPartition]) -> String {
    partitions
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
