//! [`Message::facts`]: what a message is about, as typed fields, one
//! function per family of messages.

use crate::protocol::metadata::MetadataRecord;
use crate::protocol::transactions::ControlType;
use crate::protocol::{ErrorCode, TopicPartition};

use super::{Message, MessageFacts};

impl Message {
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
            | Message::OffsetForLeaderEpoch { .. }
            | Message::OffsetForLeaderEpochResponse { .. }
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
            | Message::LeaderAddPartitionsToTxn { .. }
            | Message::LeaderAddPartitionsToTxnResponse { .. }
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
            topic: crate::protocol::TopicName::from("__cluster_metadata"),
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
            Message::AlterPartition { partition, .. }
            | Message::ListOffsets { partition, .. }
            | Message::OffsetForLeaderEpoch { partition, .. } => facts.partitions.push(partition.clone()),
            Message::OffsetForLeaderEpochResponse { partition, result } => {
                facts.partitions.push(partition.clone());
                facts.errors.extend(result.as_ref().err());
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
            Message::Produce {
                acks,
                batches,
                transactional_id,
                transaction_v2,
                ..
            } => {
                facts.acks = Some(*acks);
                facts.transactional_id = transactional_id.clone();
                facts.transaction_v2 = *transaction_v2;
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
                epoch,
                transaction_v2,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.producer_epoch = Some(*epoch);
                facts.transaction_v2 = *transaction_v2;
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
            Message::LeaderAddPartitionsToTxn {
                transactional_id,
                partitions,
                verify_only,
                epoch,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.partitions.extend(partitions.iter().cloned());
                facts.verify_only = Some(*verify_only);
                facts.producer_epoch = Some(*epoch);
                facts.transaction_v2 = !*verify_only;
            }
            Message::EndTxnResponse { error, producer, .. } => {
                facts.errors.extend(*error);
                facts.producer_epoch = producer.map(|(_, epoch)| epoch);
                facts.transaction_v2 = producer.is_some();
            }
            Message::AddPartitionsToTxnResponse { error, .. } | Message::AddOffsetsToTxnResponse { error, .. } => {
                facts.errors.extend(*error);
            }
            Message::LeaderAddPartitionsToTxnResponse { results, .. } => {
                for (partition, error) in results {
                    facts.partitions.push(partition.clone());
                    facts.errors.extend(*error);
                }
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
                transaction_v2,
                ..
            } => {
                facts.transactional_id = Some(transactional_id.clone());
                facts.transaction_v2 = *transaction_v2;
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
}
