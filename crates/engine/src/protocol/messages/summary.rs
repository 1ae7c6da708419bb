//! [`Message::summary`]: a message in one line for people, one function
//! per family of messages.

use crate::protocol::metadata::{MetadataFetchAnswer, METADATA_PARTITION};
use crate::protocol::transactions::IsolationLevel;
use crate::protocol::{ErrorCode, TopicPartition};

use super::Message;

impl Message {
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
            | Message::LeaderAddPartitionsToTxn { .. }
            | Message::LeaderAddPartitionsToTxnResponse { .. }
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
            | Message::OffsetForLeaderEpoch { .. }
            | Message::OffsetForLeaderEpochResponse { .. }
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
                transactional_id,
                ..
            } => {
                let mut text = format!("Produce acks={acks} timeoutMs={timeout_ms}");
                if let Some(id) = transactional_id {
                    text.push_str(&format!(" transactionalId={id}"));
                }
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
                expected,
                ..
            } => match (transactional_id, expected) {
                (None, _) => "InitProducerId transactionalId=null".to_string(),
                (Some(id), None) => {
                    format!("InitProducerId transactionalId={id} transactionTimeoutMs={transaction_timeout_ms}")
                }
                (Some(id), Some((producer_id, epoch))) => format!(
                    "InitProducerId transactionalId={id} transactionTimeoutMs={transaction_timeout_ms} producerId={producer_id} producerEpoch={epoch}"
                ),
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
            Message::LeaderAddPartitionsToTxn {
                transactional_id,
                producer_id,
                epoch,
                partitions,
                verify_only,
                ..
            } => format!(
                "AddPartitionsToTxn transactionalId={transactional_id} producerId={producer_id} producerEpoch={epoch} verifyOnly={verify_only} [{}]",
                partition_list(partitions)
            ),
            Message::LeaderAddPartitionsToTxnResponse { results, .. } => {
                let parts: Vec<String> = results
                    .iter()
                    .map(|(partition, error)| match error {
                        None => format!("{partition} ok"),
                        Some(error) => format!("{partition} error={error}"),
                    })
                    .collect();
                format!("AddPartitionsToTxnResponse [{}]", parts.join("; "))
            }
            Message::EndTxnResponse {
                error: None,
                producer: Some((producer_id, epoch)),
                ..
            } => format!("EndTxnResponse ok producerId={producer_id} producerEpoch={epoch}"),
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
                ..
            } => match isolation {
                IsolationLevel::ReadUncommitted => format!("Fetch {partition} offset={offset} (consumer)"),
                IsolationLevel::ReadCommitted => {
                    format!("Fetch {partition} offset={offset} (consumer, read_committed)")
                }
            },
            Message::ListOffsets {
                partition,
                spec,
                isolation,
            } => match isolation {
                IsolationLevel::ReadUncommitted => format!("ListOffsets {partition} {spec}"),
                IsolationLevel::ReadCommitted => format!("ListOffsets {partition} {spec} read_committed"),
            },
            Message::ListOffsetsResponse { partition, result } => match result {
                Ok(offset) => format!("ListOffsetsResponse {partition} offset={offset}"),
                Err(error) => format!("ListOffsetsResponse {partition} error={error}"),
            },
            Message::OffsetForLeaderEpoch {
                partition,
                leader_epoch,
                current_leader_epoch,
            } => format!(
                "OffsetForLeaderEpoch {partition} leaderEpoch={leader_epoch} currentLeaderEpoch={current_leader_epoch} (consumer)"
            ),
            Message::OffsetForLeaderEpochResponse { partition, result } => match result {
                Ok(Some((epoch, end_offset))) => {
                    format!("OffsetForLeaderEpochResponse {partition} leaderEpoch={epoch} endOffset={end_offset}")
                }
                Ok(None) => format!("OffsetForLeaderEpochResponse {partition} leaderEpoch=-1 endOffset=-1"),
                Err(error) => format!("OffsetForLeaderEpochResponse {partition} error={error}"),
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
