//! The vocabulary of the simulation: records, and the messages nodes
//! exchange. Both live below, in `crate::protocol` (`records`,
//! `messages`, `metadata`), with Kafka's shared vocabulary (node ids,
//! time, error codes); they are re-exported here at their old paths.

use crate::protocol::Offset;

pub use crate::protocol::messages::{JoinResult, MemberEpochAnswer, Message, MessageFacts, MessageName, OffsetSpec};
pub use crate::protocol::metadata::{MetadataFetchAnswer, MetadataImage, MetadataRecord, METADATA_PARTITION};
pub use crate::protocol::records::{BatchSequence, ProducerBatch, Record, RecordId, TxnMarker, MARKER_RECORD_BASE};
pub use crate::protocol::{ErrorCode, NodeId, Time};

impl crate::storage::StoredRecord for Record {
    fn offset(&self) -> Offset {
        self.offset
    }
    fn timestamp(&self) -> i64 {
        self.timestamp
    }
    fn key(&self) -> Option<&std::rc::Rc<str>> {
        self.key.as_ref()
    }
    fn value_size(&self) -> Option<u32> {
        (!self.tombstone).then_some(self.bytes)
    }
    fn headers_size(&self) -> u32 {
        self.headers_size
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn error_codes_print_as_kafka_names_them_and_as_scenario_files_spell_them() {
        let all = [
            ErrorCode::NotLeaderOrFollower,
            ErrorCode::NotEnoughReplicas,
            ErrorCode::NotEnoughReplicasAfterAppend,
            ErrorCode::RequestTimedOut,
            ErrorCode::FencedLeaderEpoch,
            ErrorCode::UnknownLeaderEpoch,
            ErrorCode::OutOfOrderSequenceNumber,
            ErrorCode::InvalidUpdateVersion,
            ErrorCode::IneligibleReplica,
            ErrorCode::DeliveryTimeout,
            ErrorCode::RebalanceInProgress,
            ErrorCode::UnknownMemberId,
            ErrorCode::IllegalGeneration,
            ErrorCode::NotCoordinator,
            ErrorCode::NetworkException,
            ErrorCode::DuplicateBrokerRegistration,
            ErrorCode::ElectionNotNeeded,
            ErrorCode::PreferredLeaderNotAvailable,
            ErrorCode::EligibleLeadersNotAvailable,
            ErrorCode::UnknownTopicOrPartition,
            ErrorCode::InvalidPartitions,
            ErrorCode::InvalidReplicationFactor,
            ErrorCode::InvalidProducerEpoch,
            ErrorCode::TransactionCoordinatorFenced,
            ErrorCode::ConcurrentTransactions,
            ErrorCode::ProducerFenced,
            ErrorCode::InvalidProducerIdMapping,
            ErrorCode::InvalidTxnState,
            ErrorCode::InvalidTransactionTimeout,
            ErrorCode::UnstableOffsetCommit,
            ErrorCode::OffsetOutOfRange,
            ErrorCode::InvalidRecord,
        ];
        for error in all {
            let serialized = serde_json::to_value(error).expect("serializes");
            assert_eq!(serialized.as_str(), Some(error.to_string().as_str()));
        }
    }
}
