//! [`TraceEvent::text`]: what happened, in one line for people, one
//! function per family of events.

use crate::sim::config::{OffsetReset, QuotaType};
use crate::sim::types::ErrorCode;
use crate::sorting::Gather;

use super::{member_assignments, ranges, ChangeReason, TraceEvent, TraceKind};

impl TraceEvent {
    /// What happened, in one line without the time and id columns.
    pub fn text(&self) -> String {
        match &self.kind {
            TraceKind::Input { .. }
            | TraceKind::Sent { .. }
            | TraceKind::Delivered { .. }
            | TraceKind::Dropped { .. }
            | TraceKind::InvariantViolated { .. }
            | TraceKind::LimitReached { .. }
            | TraceKind::ChangeRefused { .. } => self.run_text(),
            TraceKind::BrokerStatus { .. }
            | TraceKind::BrokerFencing { .. }
            | TraceKind::LeaderElected { .. }
            | TraceKind::IsrChanged { .. }
            | TraceKind::ControllerStatus { .. }
            | TraceKind::ControllerElection { .. }
            | TraceKind::ControllerElected { .. }
            | TraceKind::ElectLeadersFailed { .. }
            | TraceKind::PartitionsCreated { .. }
            | TraceKind::CreatePartitionsFailed { .. }
            | TraceKind::InternalTopicNotCreated { .. }
            | TraceKind::Throttled { .. } => self.cluster_text(),
            TraceKind::Appended { .. }
            | TraceKind::HighWatermark { .. }
            | TraceKind::Truncated { .. }
            | TraceKind::RecordsLost { .. }
            | TraceKind::SegmentsDeleted { .. }
            | TraceKind::LogCleaned { .. } => self.log_text(),
            TraceKind::Acknowledged { .. }
            | TraceKind::ProduceFailed { .. }
            | TraceKind::DuplicateIgnored { .. }
            | TraceKind::RequestStalled { .. }
            | TraceKind::ProducersExpired { .. }
            | TraceKind::TransactionalWriteRefused { .. }
            | TraceKind::TransactionState { .. }
            | TraceKind::TransactionEnded { .. }
            | TraceKind::TransactionRolledBack { .. }
            | TraceKind::MarkerWritten { .. } => self.producer_text(),
            TraceKind::GroupRebalanced { .. }
            | TraceKind::TargetAssignment { .. }
            | TraceKind::OffsetsCommitted { .. }
            | TraceKind::ConsumerStatus { .. }
            | TraceKind::NoOffsetForPartition { .. }
            | TraceKind::OffsetOutOfRange { .. }
            | TraceKind::OffsetReset { .. }
            | TraceKind::LogTruncationDetected { .. } => self.group_text(),
            TraceKind::ProcessedAgain { .. }
            | TraceKind::ProcessingInterrupted { .. }
            | TraceKind::Consumed { .. }
            | TraceKind::DeadLettered { .. }
            | TraceKind::HandlerFailed { .. } => self.processing_text(),
        }
    }

    /// [`TraceEvent::text`] of inputs, messages on the network, broken
    /// invariants and refused changes.
    fn run_text(&self) -> String {
        match &self.kind {
            TraceKind::Input { description, .. } => format!("input: {description}"),
            TraceKind::Sent { from, to, summary, .. } => format!("{from} -> {to}: {summary}"),
            TraceKind::Delivered { from, to, name } => format!("{to} <- {from}: {name} delivered"),
            TraceKind::Dropped { from, to, name, reason } => format!("{from} -x {to}: {name} dropped ({reason:?})"),
            TraceKind::InvariantViolated { invariant, detail } => format!("INVARIANT {invariant:?} violated: {detail}"),
            TraceKind::LimitReached { what, limit } => {
                format!("stopped at kafkascope's limit of {limit} for {what}")
            }
            TraceKind::ChangeRefused { change, reason } => format!("refused to {change}: {reason}"),
            _ => unreachable!("TraceEvent::text routes no other TraceKind here"),
        }
    }

    /// [`TraceEvent::text`] of brokers' and controllers' status, elections,
    /// ISR changes, quotas and operators' requests.
    fn cluster_text(&self) -> String {
        match &self.kind {
            TraceKind::BrokerStatus { broker, status } => format!("broker-{broker} {status}"),
            TraceKind::BrokerFencing { broker, fenced, reason } => {
                format!(
                    "controller {} broker-{broker}: {reason}",
                    if *fenced { "fenced" } else { "unfenced" }
                )
            }
            TraceKind::LeaderElected {
                partition,
                leader,
                leader_epoch,
                isr,
                unclean,
                reason,
            } => format!(
                "{partition}: leader {} at epoch {leader_epoch}, isr {isr:?}{} ({reason})",
                leader.map_or("none".to_string(), |leader| format!("broker-{leader}")),
                if *unclean { ", UNCLEAN" } else { "" }
            ),
            TraceKind::IsrChanged {
                partition,
                from,
                to,
                elr,
                partition_epoch,
                reason,
            } => {
                let elr = if elr.is_empty() {
                    String::new()
                } else {
                    format!(", elr {elr:?}")
                };
                if *reason == ChangeReason::MinInsyncReplicasChanged {
                    format!("{partition}: elr cleared, isr stays {to:?} (partition epoch {partition_epoch}; {reason})")
                } else {
                    format!("{partition}: isr {from:?} -> {to:?}{elr} (partition epoch {partition_epoch}; {reason})")
                }
            }
            TraceKind::ControllerStatus { controller, status } => format!("controller-{controller} {status}"),
            TraceKind::Throttled {
                client,
                broker,
                throttle_time_ms,
                quota,
            } => match quota {
                QuotaType::Produce => format!(
                    "broker-{broker} throttles {client} for {throttle_time_ms} ms: it produced faster than its quota ({quota}), so it sends that broker nothing until then"
                ),
                QuotaType::Fetch => format!(
                    "broker-{broker} throttles {client} for {throttle_time_ms} ms: its fetches took more bytes than its quota ({quota}), so the broker answers this fetch empty and it fetches nothing from that broker until then"
                ),
            },
            TraceKind::ElectLeadersFailed {
                election_type,
                partition,
                error,
            } => match partition {
                Some(partition) => format!("{election_type} leader election for {partition}: {error}"),
                None => format!("{election_type} leader election: {error} (no active controller answered)"),
            },
            TraceKind::PartitionsCreated { topic, from, to } => format!(
                "{topic} now has {to} partitions (was {from}): clients see the new ones at their next metadata refresh"
            ),
            TraceKind::CreatePartitionsFailed { topic, count, error } => match error {
                ErrorCode::InvalidPartitions => {
                    format!("{topic} --partitions {count} refused: {error} (a topic's partitions can only grow)")
                }
                ErrorCode::RequestTimedOut => {
                    format!("{topic} --partitions {count}: {error} (no active controller answered)")
                }
                _ => format!("{topic} --partitions {count} refused: {error}"),
            },
            TraceKind::InternalTopicNotCreated {
                topic,
                replication_factor,
                brokers,
            } => format!(
                "{topic} not created: INVALID_REPLICATION_FACTOR (its replication factor {replication_factor} needs {replication_factor} usable brokers, {brokers} can take a replica); lookups answer COORDINATOR_NOT_AVAILABLE until it can be"
            ),
            TraceKind::ControllerElection {
                controller,
                epoch,
                reason,
            } => {
                format!("controller-{controller} asks for votes in epoch {epoch} ({reason})")
            }
            TraceKind::ControllerElected {
                controller,
                epoch,
                votes,
            } => format!(
                "controller-{controller} is the active controller in epoch {epoch} (votes from {})",
                votes
                    .iter()
                    .map(|vote| format!("controller-{vote}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => unreachable!("TraceEvent::text routes no other TraceKind here"),
        }
    }

    /// [`TraceEvent::text`] of what happens to a partition's log: appends, the
    /// high watermark, truncation, lost records, retention and cleaning.
    fn log_text(&self) -> String {
        match &self.kind {
            TraceKind::Appended {
                broker,
                partition,
                first_offset,
                count,
                leader_epoch,
            } => format!(
                "broker-{broker} {partition}: appended offsets {first_offset}..{} in epoch {leader_epoch}",
                first_offset + count
            ),
            TraceKind::HighWatermark {
                broker,
                partition,
                from,
                to,
                reason,
            } => {
                format!(
                    "broker-{broker} {partition}: high watermark {from} -> {to} ({})",
                    reason.text(*to)
                )
            }
            TraceKind::Truncated {
                broker,
                partition,
                to_offset,
                removed,
                reason,
            } => {
                format!("broker-{broker} {partition}: truncated to {to_offset}, removing {removed} records ({reason})")
            }
            TraceKind::RecordsLost {
                partition,
                records,
                reason,
            } => {
                format!("{partition}: acknowledged records {} LOST ({reason})", ranges(records))
            }
            TraceKind::SegmentsDeleted {
                broker,
                partition,
                bytes,
                segments,
                log_start_offset,
            } => {
                let reasons: std::collections::BTreeSet<String> =
                    segments.iter().map(|(_, _, reason)| reason.to_string()).gather();
                format!(
                    "broker-{broker} deleted {} segment{} of {partition} ({bytes} bytes, {}); the log now starts at offset {log_start_offset}",
                    segments.len(),
                    if segments.len() == 1 { "" } else { "s" },
                    reasons.into_iter().collect::<Vec<_>>().join(", ")
                )
            }
            TraceKind::LogCleaned {
                broker,
                partition,
                records_before,
                records_after,
                bytes_before,
                bytes_after,
                tombstones_removed,
                markers_removed,
                checkpoint,
            } => format!(
                "broker-{broker}'s cleaner compacted {partition} below offset {checkpoint}: {records_before} records ({bytes_before} bytes) became {records_after} ({bytes_after} bytes), the latest of each key{}{}",
                if *tombstones_removed > 0 {
                    format!("; {tombstones_removed} tombstone(s) past delete.retention.ms removed")
                } else {
                    String::new()
                },
                if *markers_removed > 0 {
                    format!("; {markers_removed} transaction marker(s) whose transactions were gone, past delete.retention.ms, removed")
                } else {
                    String::new()
                }
            ),
            _ => unreachable!("TraceEvent::text routes no other TraceKind here"),
        }
    }

    /// [`TraceEvent::text`] of producers' answers and transactions.
    fn producer_text(&self) -> String {
        match &self.kind {
            TraceKind::Acknowledged {
                producer,
                partition,
                base_offset,
                records,
            } => format!(
                "producer-{producer} {partition}: {} records acknowledged{}",
                records.len(),
                base_offset.map_or(" (acks=0, no offset)".to_string(), |offset| format!(
                    " at offset {offset}"
                ))
            ),
            TraceKind::ProduceFailed {
                producer,
                partition,
                error,
                records,
                will_retry,
            } => format!(
                "producer-{producer} {partition}: {} records failed with {error}{}",
                records.len(),
                if *will_retry { ", retrying" } else { ", giving up" }
            ),
            TraceKind::TransactionState {
                transactional_id,
                producer_id,
                producer_epoch,
                state,
                partitions,
            } => format!(
                "transaction {transactional_id} (producer {producer_id}, epoch {producer_epoch}) -> {state} [{}]",
                partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
            TraceKind::TransactionEnded {
                producer,
                transactional_id,
                outcome,
            } => format!("producer-{producer} ({transactional_id}): {outcome}"),
            TraceKind::TransactionRolledBack {
                group,
                consumer,
                records,
                rewound,
            } => format!(
                "consumer-{consumer} ({group}): its transaction aborted; {records} record{} to process again from the committed offsets{}",
                if *records == 1 { "" } else { "s" },
                if rewound.is_empty() {
                    " (by whoever owns their partitions now)".to_string()
                } else {
                    format!(
                        " (it was at {})",
                        rewound
                            .iter()
                            .map(|(partition, offset)| format!("{partition}={offset}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ),
            TraceKind::MarkerWritten {
                broker,
                partition,
                producer_id,
                control,
                offset,
            } => format!("broker-{broker} wrote the {control} marker for producer {producer_id} at {partition} offset {offset}"),
            TraceKind::DuplicateIgnored {
                broker,
                partition,
                producer_id,
                first_sequence,
                last_sequence,
                first_offset,
            } => format!(
                "broker-{broker} already has producer {producer_id}'s sequences {first_sequence}..={last_sequence} on {partition} (from offset {first_offset}): answered with the original offsets, nothing written again"
            ),
            TraceKind::TransactionalWriteRefused {
                broker,
                partition,
                producer_id,
                producer_epoch,
                error,
            } => format!(
                "broker-{broker} refused producer {producer_id}'s transactional batch for {partition} at epoch {producer_epoch}: {error}, nothing written (KIP-890)"
            ),
            TraceKind::ProducersExpired {
                broker,
                partition,
                producer_ids,
            } => format!(
                "broker-{broker} forgot producers {producer_ids:?} on {partition}: idle past producer.id.expiration.ms, their next batch is taken as a new producer's"
            ),
            TraceKind::RequestStalled {
                broker,
                client,
                request,
                delay_ms,
            } => format!(
                "broker-{broker} read {client}'s {request} request; it waits {delay_ms} ms in the request queue before a handler takes it"
            ),
            _ => unreachable!("TraceEvent::text routes no other TraceKind here"),
        }
    }

    /// [`TraceEvent::text`] of groups and their members: rebalances,
    /// assignments, commits and where a member starts reading.
    fn group_text(&self) -> String {
        match &self.kind {
            TraceKind::GroupRebalanced {
                group,
                generation,
                assignment,
                reason,
            } => format!(
                "group {group} generation {generation}: {} ({reason})",
                member_assignments(assignment)
            ),
            TraceKind::TargetAssignment {
                group,
                epoch,
                assignment,
                reason,
            } => format!(
                "group {group} epoch {epoch}: target assignment {} ({reason})",
                member_assignments(assignment)
            ),
            TraceKind::OffsetsCommitted { group, offsets } => format!(
                "group {group}: committed {}",
                offsets
                    .iter()
                    .map(|(partition, offset)| format!("{partition}={offset}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            TraceKind::ConsumerStatus { consumer, status } => format!("consumer-{consumer} {status}"),
            TraceKind::NoOffsetForPartition { client, partition } => format!(
                "{client} owns {partition}, its group has no committed offset there and auto.offset.reset=none: poll() throws NoOffsetForPartitionException"
            ),
            TraceKind::OffsetOutOfRange {
                client,
                partition,
                position,
                reset,
            } if *reset == OffsetReset::None => format!(
                "{client}'s position {position} on {partition} is no longer in the log (OFFSET_OUT_OF_RANGE) and auto.offset.reset=none: poll() throws OffsetOutOfRangeException"
            ),
            TraceKind::OffsetOutOfRange {
                client,
                partition,
                position,
                reset,
            } => format!(
                "{client}'s position {position} on {partition} is no longer in the log (OFFSET_OUT_OF_RANGE): auto.offset.reset={reset} decides where it goes"
            ),
            TraceKind::OffsetReset {
                client,
                partition,
                offset,
            } => format!("{client} resets its position on {partition} to offset {offset}"),
            TraceKind::LogTruncationDetected {
                client,
                partition,
                position,
                diverging,
                reset,
            } => {
                let found = match diverging {
                    Some(end) => format!("the new leader's log ends that epoch at {end}, below its position {position}"),
                    None => format!("the new leader knows no end for the epoch of its position {position}"),
                };
                let next = match (diverging, reset) {
                    (_, OffsetReset::None) => "auto.offset.reset=none: poll() throws LogTruncationException".to_string(),
                    (Some(end), _) => format!("it seeks to {end}"),
                    (None, reset) => format!("auto.offset.reset={reset} decides where it goes"),
                };
                format!("{client} validated its position on {partition} (KIP-320): {found}, so the log was truncated under it; {next}")
            }
            _ => unreachable!("TraceEvent::text routes no other TraceKind here"),
        }
    }

    /// [`TraceEvent::text`] of what a consumer's handler did with records.
    fn processing_text(&self) -> String {
        match &self.kind {
            TraceKind::ProcessedAgain {
                group,
                consumer,
                partition,
                from,
                to,
                count,
                reason,
                skipped,
            } => format!(
                "group {group}: consumer-{consumer} {} {count} record(s) of {partition} (offsets {from}..={to}) again: {reason}",
                if *skipped { "recognised and skipped" } else { "processed" }
            ),
            TraceKind::ProcessingInterrupted {
                group,
                consumer,
                processed,
                unprocessed,
                uncommitted_processed,
                committed_unprocessed,
                in_transaction,
            } => {
                let mut text = format!(
                    "group {group}: consumer-{consumer} crashed mid-batch after processing {processed} of {} record(s)",
                    processed + unprocessed
                );
                if *in_transaction {
                    text.push_str("; its outputs and offsets are in a transaction that will abort, so none of it counts (exactly-once)");
                }
                if *uncommitted_processed > 0 {
                    text.push_str(&format!(
                        "; {uncommitted_processed} processed but not committed will be processed again (at-least-once)"
                    ));
                }
                if !committed_unprocessed.is_empty() {
                    let ranges: Vec<String> = committed_unprocessed
                        .iter()
                        .map(|(partition, from, to)| format!("{partition} {from}..={to}"))
                        .collect();
                    text.push_str(&format!(
                        "; {} were committed before processing and will never be processed (at-most-once)",
                        ranges.join(", ")
                    ));
                }
                text
            }
            TraceKind::Consumed {
                consumer,
                partition,
                from,
                to,
                high_watermark,
            } => format!(
                "consumer-{consumer} {partition}: read offsets {from}..{to} (high watermark {high_watermark}, lag {})",
                high_watermark.saturating_sub(*to)
            ),
            TraceKind::DeadLettered {
                group,
                consumer,
                partition,
                offset,
                attempts,
                topic,
                dead_letter,
            } => format!(
                "consumer-{consumer} ({group}) failed {attempts} time{} on {partition} offset {offset} and sent it to {topic} (record #{dead_letter}, headers name the error and where it came from), then went on",
                if *attempts == 1 { "" } else { "s" }
            ),
            TraceKind::HandlerFailed {
                group,
                consumer,
                partition,
                offset,
                attempts,
                skipped,
            } => format!(
                "consumer-{consumer} ({group}) failed {attempts} time{} on {partition} offset {offset}: the exception stops it ({skipped} record{} of its last poll not handled)",
                if *attempts == 1 { "" } else { "s" },
                if *skipped == 1 { "" } else { "s" }
            ),
            _ => unreachable!("TraceEvent::text routes no other TraceKind here"),
        }
    }
}
