//! Kafka's error codes, as the protocol's responses carry them: one closed
//! enum named after Kafka's `Errors` (`org.apache.kafka.common.protocol.Errors`),
//! printed as Kafka spells each one, with what a client does about it.

use serde::{Deserialize, Serialize};

/// Kafka error codes the simulation produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The broker is not the partition's leader.
    NotLeaderOrFollower,
    /// `acks=all` and the ISR is under `min.insync.replicas`; nothing appended.
    NotEnoughReplicas,
    /// Appended, but the ISR fell under the minimum before it committed.
    NotEnoughReplicasAfterAppend,
    /// No answer within `request.timeout.ms`.
    RequestTimedOut,
    /// The request carried an older leader epoch than the broker's.
    FencedLeaderEpoch,
    /// The request carried a newer leader epoch than the broker knows.
    UnknownLeaderEpoch,
    /// The producer's sequence left a gap.
    OutOfOrderSequenceNumber,
    /// AlterPartition from a stale partition epoch.
    InvalidUpdateVersion,
    /// AlterPartition adding a fenced or unknown broker.
    IneligibleReplica,
    /// The record could not be delivered within `delivery.timeout.ms`.
    /// Not an error code on the wire: the producer's own
    /// `TimeoutException` ("Expiring N record(s) for T-P: X ms has passed
    /// since batch creation", `ProducerBatch#expire`), spelled so.
    #[serde(rename = "TimeoutException", alias = "DELIVERY_TIMEOUT")]
    DeliveryTimeout,
    /// The group is rebalancing: rejoin.
    RebalanceInProgress,
    /// The coordinator does not know this member.
    UnknownMemberId,
    /// The member's generation is not the group's.
    IllegalGeneration,
    /// This broker is not the group's coordinator.
    NotCoordinator,
    /// The connection failed (the broker process is gone).
    NetworkException,
    /// Another process of this broker id still has a valid session
    /// (`DuplicateBrokerRegistrationException`).
    DuplicateBrokerRegistration,
    /// `ElectLeaders`: the partition already has the leader asked for.
    ElectionNotNeeded,
    /// `ElectLeaders` (preferred): the first replica cannot lead now.
    PreferredLeaderNotAvailable,
    /// `ElectLeaders` (unclean): no live replica can lead.
    EligibleLeadersNotAvailable,
    /// The topic or partition does not exist.
    UnknownTopicOrPartition,
    /// `CreatePartitions`: the count asked for is not an increase
    /// (`InvalidPartitionsException`).
    InvalidPartitions,
    /// Too few usable brokers for the replication factor
    /// (`InvalidReplicationFactorException`).
    InvalidReplicationFactor,
    /// A JoinGroup without a member id: the coordinator hands one out and
    /// asks the member to join again with it (KIP-394).
    MemberIdRequired,
    /// Another member now holds this `group.instance.id` (KIP-345).
    FencedInstanceId,
    /// The group coordinator is loading or unloading the group.
    CoordinatorNotAvailable,
    /// The member's protocol type or protocols do not match the group's.
    InconsistentGroupProtocol,
    /// `session.timeout.ms` outside the broker's
    /// `group.min.session.timeout.ms`..`group.max.session.timeout.ms`.
    InvalidSessionTimeout,
    /// The group does not exist (OffsetCommit v9+ with a generation).
    GroupIdNotFound,
    /// KIP-848: the member's epoch is not one the coordinator accepts; it
    /// gives up its partitions and joins again.
    FencedMemberEpoch,
    /// A malformed request.
    InvalidRequest,
    /// KIP-848: an OffsetCommit whose member epoch is not the member's
    /// current one (`StaleMemberEpochException`).
    StaleMemberEpoch,
    /// KIP-848: the server-side assignor asked for is not one the broker
    /// has (`group.consumer.assignors`).
    UnsupportedAssignor,
    /// A producer epoch older than the one the partition knows
    /// (`InvalidProducerEpochException`).
    InvalidProducerEpoch,
    /// A transaction marker from a coordinator epoch older than the last
    /// one the partition saw (`TransactionCoordinatorFencedException`).
    TransactionCoordinatorFenced,
    /// The transaction coordinator is changing this transactional id's
    /// state: retry (`ConcurrentTransactionsException`).
    ConcurrentTransactions,
    /// A newer instance of this transactional producer exists
    /// (`ProducerFencedException`): fatal for the client.
    ProducerFenced,
    /// The producer id is not this transactional id's.
    InvalidProducerIdMapping,
    /// The request does not fit the transaction's state.
    InvalidTxnState,
    /// `transaction.timeout.ms` above `transaction.max.timeout.ms`.
    InvalidTransactionTimeout,
    /// KIP-890: the partition is not in the producer's open transaction
    /// (the coordinator's answer to a leader's verification), or another
    /// error the transaction cannot survive: the producer can only abort
    /// (`TransactionAbortableException`).
    TransactionAbortable,
    /// KIP-447: an `OffsetFetch` for a partition with transactional
    /// offsets still pending (their transaction is not decided): retry.
    UnstableOffsetCommit,
    /// A fetch asked for an offset the log does not hold: below its log
    /// start (retention deleted it) or past its end.
    OffsetOutOfRange,
    /// The broker refused a record: here, a keyless record for a compacted
    /// topic (`LogValidator`: "Compacted topic cannot accept message
    /// without key").
    InvalidRecord,
}

impl std::fmt::Display for ErrorCode {
    /// Kafka's name for the error (`NOT_ENOUGH_REPLICAS`), as its
    /// `Errors` enum and its logs spell it.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            ErrorCode::NotLeaderOrFollower => "NOT_LEADER_OR_FOLLOWER",
            ErrorCode::NotEnoughReplicas => "NOT_ENOUGH_REPLICAS",
            ErrorCode::NotEnoughReplicasAfterAppend => "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
            ErrorCode::RequestTimedOut => "REQUEST_TIMED_OUT",
            ErrorCode::FencedLeaderEpoch => "FENCED_LEADER_EPOCH",
            ErrorCode::UnknownLeaderEpoch => "UNKNOWN_LEADER_EPOCH",
            ErrorCode::OutOfOrderSequenceNumber => "OUT_OF_ORDER_SEQUENCE_NUMBER",
            ErrorCode::InvalidUpdateVersion => "INVALID_UPDATE_VERSION",
            ErrorCode::IneligibleReplica => "INELIGIBLE_REPLICA",
            ErrorCode::DeliveryTimeout => "TimeoutException",
            ErrorCode::RebalanceInProgress => "REBALANCE_IN_PROGRESS",
            ErrorCode::UnknownMemberId => "UNKNOWN_MEMBER_ID",
            ErrorCode::IllegalGeneration => "ILLEGAL_GENERATION",
            ErrorCode::NotCoordinator => "NOT_COORDINATOR",
            ErrorCode::NetworkException => "NETWORK_EXCEPTION",
            ErrorCode::DuplicateBrokerRegistration => "DUPLICATE_BROKER_REGISTRATION",
            ErrorCode::ElectionNotNeeded => "ELECTION_NOT_NEEDED",
            ErrorCode::PreferredLeaderNotAvailable => "PREFERRED_LEADER_NOT_AVAILABLE",
            ErrorCode::EligibleLeadersNotAvailable => "ELIGIBLE_LEADERS_NOT_AVAILABLE",
            ErrorCode::UnknownTopicOrPartition => "UNKNOWN_TOPIC_OR_PARTITION",
            ErrorCode::InvalidPartitions => "INVALID_PARTITIONS",
            ErrorCode::InvalidReplicationFactor => "INVALID_REPLICATION_FACTOR",
            ErrorCode::MemberIdRequired => "MEMBER_ID_REQUIRED",
            ErrorCode::FencedInstanceId => "FENCED_INSTANCE_ID",
            ErrorCode::CoordinatorNotAvailable => "COORDINATOR_NOT_AVAILABLE",
            ErrorCode::InconsistentGroupProtocol => "INCONSISTENT_GROUP_PROTOCOL",
            ErrorCode::InvalidSessionTimeout => "INVALID_SESSION_TIMEOUT",
            ErrorCode::GroupIdNotFound => "GROUP_ID_NOT_FOUND",
            ErrorCode::FencedMemberEpoch => "FENCED_MEMBER_EPOCH",
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::StaleMemberEpoch => "STALE_MEMBER_EPOCH",
            ErrorCode::UnsupportedAssignor => "UNSUPPORTED_ASSIGNOR",
            ErrorCode::InvalidProducerEpoch => "INVALID_PRODUCER_EPOCH",
            ErrorCode::TransactionCoordinatorFenced => "TRANSACTION_COORDINATOR_FENCED",
            ErrorCode::ConcurrentTransactions => "CONCURRENT_TRANSACTIONS",
            ErrorCode::ProducerFenced => "PRODUCER_FENCED",
            ErrorCode::InvalidProducerIdMapping => "INVALID_PRODUCER_ID_MAPPING",
            ErrorCode::InvalidTxnState => "INVALID_TXN_STATE",
            ErrorCode::InvalidTransactionTimeout => "INVALID_TRANSACTION_TIMEOUT",
            ErrorCode::TransactionAbortable => "TRANSACTION_ABORTABLE",
            ErrorCode::UnstableOffsetCommit => "UNSTABLE_OFFSET_COMMIT",
            ErrorCode::OffsetOutOfRange => "OFFSET_OUT_OF_RANGE",
            ErrorCode::InvalidRecord => "INVALID_RECORD",
        })
    }
}

impl ErrorCode {
    /// Whether the producer retries after this error.
    pub fn retriable(self) -> bool {
        !matches!(
            self,
            ErrorCode::DeliveryTimeout
                | ErrorCode::InvalidProducerEpoch
                | ErrorCode::ProducerFenced
                | ErrorCode::InvalidRecord
                | ErrorCode::InvalidTxnState
                | ErrorCode::TransactionAbortable
        )
    }

    /// Whether the producer refreshes metadata after it (Kafka's
    /// `InvalidMetadataException`s).
    pub fn invalidates_metadata(self) -> bool {
        matches!(
            self,
            ErrorCode::NotLeaderOrFollower
                | ErrorCode::FencedLeaderEpoch
                | ErrorCode::UnknownLeaderEpoch
                | ErrorCode::NetworkException
        )
    }
}
