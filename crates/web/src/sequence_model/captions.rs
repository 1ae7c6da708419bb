//! Step captions: one row per kind of trace event, each a function of the
//! event's typed facts and the numbers the run had then ([`Captioner`]
//! follows them while the trace is scanned).

use std::collections::BTreeMap;

use kafkascope_engine::replication::high_watermark::Acks;
use kafkascope_engine::replication::transactions::ControlType;
use kafkascope_engine::sim::config::{OffsetReset, QuotaType};
use kafkascope_engine::sim::trace::{ranges, TraceEvent, TraceKind};
use kafkascope_engine::sim::types::{ErrorCode, MessageFacts, MessageName, NodeId};

use super::{owners, Step, StepKind, StoryDef};
use crate::selection::{as_broker, as_consumer, as_controller, as_producer};

/// What a step row marks besides its drawing: an outcome, whether it has
/// causes worth showing, the chapter it opens.
#[derive(Default)]
struct Marks {
    outcome: Option<&'static str>,
    explainable: bool,
    chapter: Option<String>,
}

/// A step's drawing, caption, partitions and name.
type Drawn = (StepKind, String, Vec<String>, String);

/// Follows the run's state while scanning its trace, to caption steps with
/// the numbers they had then.
#[derive(Debug, Default)]
pub(super) struct Captioner {
    high_watermarks: BTreeMap<(u32, String), u64>,
    leaders: BTreeMap<String, u32>,
    active_controller: Option<u32>,
    /// Each group's coordinator as the last FindCoordinator answer named it
    /// (the broker leading the group's `__consumer_offsets` partition).
    coordinators: BTreeMap<String, NodeId>,
    /// Each group's generation before its latest rebalance, and after it.
    generations: BTreeMap<String, (Option<u32>, u32)>,
}

impl Captioner {
    pub(super) fn observe(&mut self, event: &TraceEvent) {
        match &event.kind {
            TraceKind::GroupRebalanced { group, generation, .. } => {
                let before = self.generations.get(group).map(|(_, now)| *now);
                self.generations.insert(group.clone(), (before, *generation));
            }
            TraceKind::HighWatermark {
                broker, partition, to, ..
            } => {
                self.high_watermarks.insert((*broker, partition.to_string()), *to);
            }
            TraceKind::LeaderElected { partition, leader, .. } => match leader {
                Some(leader) => {
                    self.leaders.insert(partition.to_string(), *leader);
                }
                None => {
                    self.leaders.remove(&partition.to_string());
                }
            },
            TraceKind::ControllerElected { controller, .. } => self.active_controller = Some(*controller),
            TraceKind::Sent { from, name, facts, .. } => {
                // Before any election is traced, the active controller is
                // the one answering metadata fetches as leader.
                if let (MessageName::FetchResponse, NodeId::Controller(id), None) = (name, from, self.active_controller)
                {
                    if facts.leader == Some(*id) && facts.errors.is_empty() {
                        self.active_controller = Some(*id);
                    }
                }
                if let (MessageName::FindCoordinatorResponse, Some(group), Some(coordinator)) =
                    (name, &facts.group, facts.coordinator)
                {
                    self.coordinators.insert(group.clone(), NodeId::Broker(coordinator));
                }
            }
            _ => {}
        }
    }

    fn controller(&self) -> NodeId {
        NodeId::Controller(self.active_controller.unwrap_or(1))
    }

    /// A group's note, over its coordinator (or its first member).
    fn group_note(
        &self,
        group: &str,
        assignment: &[kafkascope_engine::sim::trace::MemberAssignment],
        text: String,
    ) -> StepKind {
        StepKind::Note {
            over: self
                .coordinators
                .get(group)
                .copied()
                .unwrap_or_else(|| assignment.first().map_or(self.controller(), |member| member.consumer)),
            text,
        }
    }

    /// The step for a trace event (none for a delivery, which the arrow
    /// already shows): one table row per kind of event, grouped by what it
    /// is about, each a function of the event's typed facts.
    pub(super) fn step(
        &self,
        event: &TraceEvent,
        cause: Option<&TraceEvent>,
        position: u64,
        story: &StoryDef,
    ) -> Option<Step> {
        use TraceKind as K;
        let mut marks = Marks::default();
        let drawn = match &event.kind {
            K::Input { .. } | K::Sent { .. } | K::Dropped { .. } => self.message_step(event, story, &mut marks),
            K::Appended { .. }
            | K::HighWatermark { .. }
            | K::Truncated { .. }
            | K::LeaderElected { .. }
            | K::IsrChanged { .. } => self.replication_step(event, cause, &mut marks),
            K::Acknowledged { .. }
            | K::ProduceFailed { .. }
            | K::RecordsLost { .. }
            | K::DuplicateIgnored { .. }
            | K::Throttled { .. } => self.produce_step(event, &mut marks),
            K::RequestStalled { .. } | K::TransactionalWriteRefused { .. } | K::ProducersExpired { .. } => {
                self.late_write_step(event, &mut marks)
            }
            K::GroupRebalanced { .. }
            | K::TargetAssignment { .. }
            | K::OffsetsCommitted { .. }
            | K::NoOffsetForPartition { .. }
            | K::OffsetReset { .. }
            | K::LogTruncationDetected { .. }
            | K::OffsetOutOfRange { .. } => self.membership_step(event, &mut marks),
            K::Consumed { .. }
            | K::ProcessedAgain { .. }
            | K::ProcessingInterrupted { .. }
            | K::HandlerFailed { .. }
            | K::DeadLettered { .. } => self.consuming_step(event, &mut marks),
            K::BrokerFencing { .. }
            | K::BrokerStatus { .. }
            | K::ConsumerStatus { .. }
            | K::ControllerStatus { .. }
            | K::ControllerElection { .. }
            | K::ControllerElected { .. } => self.process_step(event, &mut marks),
            K::TransactionState { .. }
            | K::TransactionRolledBack { .. }
            | K::TransactionEnded { .. }
            | K::MarkerWritten { .. } => self.transaction_step(event, &mut marks),
            K::SegmentsDeleted { .. }
            | K::LogCleaned { .. }
            | K::ChangeRefused { .. }
            | K::LimitReached { .. }
            | K::ElectLeadersFailed { .. }
            | K::PartitionsCreated { .. }
            | K::CreatePartitionsFailed { .. }
            | K::InternalTopicNotCreated { .. }
            | K::InvariantViolated { .. } => self.admin_step(event, &mut marks),
            K::Delivered { .. } => None,
        };
        let (kind, caption, partitions, name) = drawn?;
        Some(Step {
            trace_id: event.id,
            time: event.time,
            position,
            kind,
            caption,
            chapter: marks.chapter,
            outcome: marks.outcome,
            partitions,
            name,
            explainable: marks.explainable,
        })
    }

    /// Steps for an input, or a message sent or lost.
    fn message_step(&self, event: &TraceEvent, story: &StoryDef, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::Input { description, input } => {
                marks.chapter = story.chapter_at(event.time, input).map(str::to_string);
                (
                    StepKind::Input {
                        text: description.clone(),
                    },
                    format!("At {} ms: {description}.", event.time),
                    Vec::new(),
                    "input".to_string(),
                )
            }
            TraceKind::Sent {
                from,
                to,
                name,
                summary,
                facts,
            } => {
                let caption = self.message_caption(*from, *to, *name, facts, summary);
                let partitions = facts.partitions.iter().map(ToString::to_string).collect();
                (
                    StepKind::Arrow {
                        from: *from,
                        to: *to,
                        name: *name,
                        label: summary.clone(),
                        dropped: false,
                    },
                    caption,
                    partitions,
                    name.to_string(),
                )
            }
            TraceKind::Dropped { from, to, name, reason } => (
                StepKind::Arrow {
                    from: *from,
                    to: *to,
                    name: *name,
                    label: format!("{name} lost ({reason})"),
                    dropped: true,
                },
                format!("The {name} from {from} never reaches {to}: {reason}."),
                Vec::new(),
                name.to_string(),
            ),
            _ => return None,
        })
    }

    /// Steps for a replica's log, its high watermark, a leader or an ISR.
    fn replication_step(&self, event: &TraceEvent, cause: Option<&TraceEvent>, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::Appended {
                broker,
                partition,
                first_offset,
                count,
                leader_epoch,
            } => {
                let end = first_offset + count;
                let hw = self
                    .high_watermarks
                    .get(&(*broker, partition.to_string()))
                    .copied()
                    .unwrap_or(0);
                // A leader appends what a client sent it; a follower what
                // it fetched.
                let from_client = matches!(
                    cause.map(|cause| &cause.kind),
                    Some(TraceKind::Delivered { from, .. }) if !matches!(from, NodeId::Broker(_))
                );
                let leads = from_client || self.leaders.get(&partition.to_string()) == Some(broker);
                let mut caption = format!(
                    "{broker_broker} appends offset{} {first_offset}{} of {partition} (leader epoch {leader_epoch}); its log end is now {end}.",
                    if *count == 1 { "" } else { "s" },
                    if *count == 1 { String::new() } else { format!("–{}", end - 1) }, broker_broker = as_broker(broker));
                if leads && hw < end {
                    caption.push_str(&format!(
                        " The high watermark stays at {hw} until every in-sync follower has fetched from {end}."
                    ));
                }
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: if *count == 1 {
                            format!("append {first_offset} → LEO {end}")
                        } else {
                            format!("append {first_offset}–{} → LEO {end}", end - 1)
                        },
                    },
                    caption,
                    vec![partition.to_string()],
                    "append".to_string(),
                )
            }
            TraceKind::HighWatermark {
                broker,
                partition,
                from,
                to,
                reason,
            } => {
                let leads = self.leaders.get(&partition.to_string()) == Some(broker);
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("HW {from} → {to}"),
                    },
                    format!(
                        "{broker_broker}'s high watermark of {partition} moves from {from} to {to}: {}.{}",
                        reason.text(*to),
                        if leads { format!(" Consumers may now read offsets below {to}.") } else { String::new() }, broker_broker = as_broker(broker)),
                    vec![partition.to_string()],
                    "high-watermark".to_string(),
                )
            }
            TraceKind::Truncated {
                broker,
                partition,
                to_offset,
                removed,
                reason,
            } => (
                StepKind::Note {
                    over: NodeId::Broker(*broker),
                    text: format!("truncate to {to_offset} (−{removed})"),
                },
                format!("{broker_broker} cuts its log of {partition} back to offset {to_offset}, removing {removed} record(s): {reason}.", broker_broker = as_broker(broker)),
                vec![partition.to_string()],
                "truncate".to_string(),
            ),
            TraceKind::LeaderElected {
                partition,
                leader,
                leader_epoch,
                isr,
                unclean,
                reason,
            } => {
                marks.explainable = true;
                let leader = leader.map_or("no leader".to_string(), |leader| format!("{broker_leader}", broker_leader = as_broker(leader)));
                (
                    StepKind::Note {
                        over: self.controller(),
                        text: format!("{partition}: leader {leader}, epoch {leader_epoch}{}", if *unclean { " (unclean)" } else { "" }),
                    },
                    format!(
                        "The active controller makes {leader} the leader of {partition} at leader epoch {leader_epoch}, ISR {isr:?}{}: {reason}.",
                        if *unclean { ", from outside the ISR (an unclean election)" } else { "" }
                    ),
                    vec![partition.to_string()],
                    "leader-elected".to_string(),
                )
            }
            TraceKind::IsrChanged {
                partition,
                from,
                to,
                elr,
                partition_epoch,
                reason,
            } => {
                marks.explainable = true;
                if *reason == kafkascope_engine::sim::trace::ChangeReason::MinInsyncReplicasChanged {
                    return Some((
                        StepKind::Note {
                            over: self.controller(),
                            text: format!("{partition}: ELR cleared"),
                        },
                        format!("An operator changed {partition}'s min.insync.replicas. Its eligible leader replicas were chosen against the old value, so the controller clears them in the same write (ClearElrRecord, partition epoch {partition_epoch}); the leader and the ISR {to:?} stay."),
                        vec![partition.to_string()],
                        "elr-cleared".to_string(),
                    ));
                }
                let eligible = if elr.is_empty() {
                    String::new()
                } else {
                    format!(" {elr:?} left an ISR already below min.insync.replicas, so they stay eligible to lead (ELR, KIP-966).")
                };
                (
                    StepKind::Note {
                        over: self.controller(),
                        text: if elr.is_empty() {
                            format!("{partition}: ISR {from:?} → {to:?}")
                        } else {
                            format!("{partition}: ISR {from:?} → {to:?}, ELR {elr:?}")
                        },
                    },
                    format!("The controller commits a new ISR for {partition}: {from:?} → {to:?} (partition epoch {partition_epoch}): {reason}.{eligible}"),
                    vec![partition.to_string()],
                    "isr-changed".to_string(),
                )
            }
            _ => return None,
        })
    }

    /// Steps for what became of records a producer sent.
    fn produce_step(&self, event: &TraceEvent, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::Acknowledged {
                producer,
                partition,
                base_offset,
                records,
            } => {
                marks.outcome = Some("continue");
                (
                    StepKind::Note {
                        over: NodeId::Producer(*producer),
                        text: format!("acked {} record(s)", records.len()),
                    },
                    format!(
                        "{producer_producer} learns that {} record(s) of {partition} are written{}.",
                        records.len(),
                        base_offset.map_or(" (acks=0: no offset comes back)".to_string(), |offset| format!(
                            ", starting at offset {offset}"
                        )),
                        producer_producer = as_producer(producer)
                    ),
                    vec![partition.to_string()],
                    "acknowledged".to_string(),
                )
            }
            TraceKind::ProduceFailed {
                producer,
                partition,
                error,
                records,
                will_retry,
            } => {
                marks.outcome = Some("error");
                marks.explainable = true;
                let why = produce_failure_why(*error, *will_retry);
                (
                    StepKind::Note {
                        over: NodeId::Producer(*producer),
                        text: format!("✗ {error}"),
                    },
                    format!(
                        "{producer_producer}'s {} record(s) for {partition} fail with {error}{}.{why}",
                        records.len(),
                        if *will_retry { "; it will retry" } else { " for good" },
                        producer_producer = as_producer(producer)
                    ),
                    vec![partition.to_string()],
                    "produce-failed".to_string(),
                )
            }
            TraceKind::RecordsLost {
                partition,
                records,
                reason,
            } => {
                marks.outcome = Some("loss");
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: self
                            .leaders
                            .get(&partition.to_string())
                            .map_or(self.controller(), |leader| NodeId::Broker(*leader)),
                        text: format!("LOST {}", ranges(records)),
                    },
                    format!(
                        "Acknowledged records {} of {partition} are gone: {reason}.",
                        ranges(records)
                    ),
                    vec![partition.to_string()],
                    "records-lost".to_string(),
                )
            }
            TraceKind::DuplicateIgnored {
                broker,
                partition,
                producer_id,
                first_sequence,
                last_sequence,
                first_offset,
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: "duplicate batch ignored".to_string(),
                    },
                    format!(
                        "{} already wrote producer id {producer_id}'s sequences {first_sequence}–{last_sequence} on {partition}, at offset {first_offset}: this is a retry of a batch whose answer was lost. It writes nothing and answers with the original offsets, so the idempotent producer's retry leaves one copy in the log.",
                        NodeId::Broker(*broker)
                    ),
                    vec![partition.to_string()],
                    "duplicate-ignored".to_string(),
                )
            }
            TraceKind::Throttled {
                client,
                broker,
                throttle_time_ms,
                quota,
            } => {
                marks.explainable = true;
                let broker = NodeId::Broker(*broker);
                (
                    StepKind::Note {
                        over: *client,
                        text: format!("throttled {throttle_time_ms} ms"),
                    },
                    match quota {
                        QuotaType::Produce => format!(
                            "{broker} measured {client} producing faster than its quota ({quota}, per broker, over the last ~10 s) and answered with throttle_time_ms={throttle_time_ms}: the time it takes for the rate to fall back to the quota. It mutes the connection for that long and the producer sends this broker nothing until then (KIP-219); other clients are not slowed down."
                        ),
                        QuotaType::Fetch => format!(
                            "{broker} measured {client} fetching more bytes than its quota ({quota}, per broker, over the last ~10 s) allows: it takes this answer's bytes back, answers empty with throttle_time_ms={throttle_time_ms} and mutes the connection for that long. The consumer fetches nothing from this broker until then (KIP-219); its lag grows while other groups read at full speed."
                        ),
                    },
                    Vec::new(),
                    "throttled".to_string(),
                )
            }
            _ => return None,
        })
    }

    /// Steps for a group's generations, assignments and positions.
    fn membership_step(&self, event: &TraceEvent, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::GroupRebalanced {
                group,
                generation,
                assignment,
                reason,
            } => {
                marks.explainable = true;
                let owners = owners(assignment, "gets", "gets nothing and idles");
                // A generation the coordinator began (JoinGroup complete)
                // but left before its leader's assignment was stored: the
                // group rebalanced again first, so it has no step of its own.
                let skipped = match self.generations.get(group) {
                    Some((Some(before), now)) if *now == *generation && *generation > before + 1 => {
                        let missing: Vec<String> = (before + 1..*generation).map(|each| each.to_string()).collect();
                        format!(
                            " (Generation {} began but never became stable: the group rebalanced again first, so it has no step of its own and is not counted as a rebalance.)",
                            missing.join(" and ")
                        )
                    }
                    _ => String::new(),
                };
                (
                    self.group_note(group, assignment, format!("{group} generation {generation}")),
                    format!("Group {group} moves to generation {generation} ({reason}): {}.{skipped}", owners.join("; ")),
                    Vec::new(),
                    "rebalance".to_string(),
                )
            }
            TraceKind::TargetAssignment {
                group,
                epoch,
                assignment,
                reason,
            } => {
                marks.explainable = true;
                let owners = owners(assignment, "gets", "gets nothing");
                (
                    self.group_note(group, assignment, format!("{group} epoch {epoch}")),
                    format!(
                        "Group {group} moves to epoch {epoch} ({reason}). The coordinator's own assignor sets the target: {}. Nobody stops: each member moves there on its next heartbeat, giving up partitions first; a partition goes to its new owner only once the old one reports it gone (KIP-848).",
                        owners.join("; ")
                    ),
                    Vec::new(),
                    "rebalance".to_string(),
                )
            }
            TraceKind::OffsetsCommitted { group, offsets } => (
                StepKind::Note {
                    over: self.coordinators.get(group).copied().unwrap_or_else(|| self.controller()),
                    text: format!("{group} committed"),
                },
                format!(
                    "Group {group}'s positions are stored in __consumer_offsets: {}.",
                    offsets.iter().map(|(partition, offset)| format!("{partition} at {offset}")).collect::<Vec<_>>().join(", ")
                ),
                offsets.iter().map(|(partition, _)| partition.to_string()).collect(),
                "offsets-committed".to_string(),
            ),
            TraceKind::NoOffsetForPartition { client, partition } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: *client,
                        text: "NoOffsetForPartitionException".to_string(),
                    },
                    format!(
                        "{client} owns {partition}, but its group never committed an offset there and its auto.offset.reset=none names no place to start: poll() throws NoOffsetForPartitionException. The application here does not catch it, so it closes the consumer and leaves the group."
                    ),
                    vec![partition.to_string()],
                    "no-offset".to_string(),
                )
            }
            TraceKind::OffsetReset {
                client,
                partition,
                offset,
            } => (
                StepKind::Note {
                    over: *client,
                    text: format!("reset to {offset}"),
                },
                format!("{client} moves its position on {partition} to offset {offset}, as auto.offset.reset says, and fetches from there."),
                vec![partition.to_string()],
                "offset-reset".to_string(),
            ),
            TraceKind::OffsetOutOfRange {
                client,
                partition,
                position,
                reset,
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: *client,
                        text: "OFFSET_OUT_OF_RANGE".to_string(),
                    },
                    if *reset == OffsetReset::None {
                        format!(
                            "{client} asked for offset {position} of {partition}, which the log no longer holds (retention deleted it, or the log is shorter): OFFSET_OUT_OF_RANGE. With auto.offset.reset=none nothing moves its position: poll() throws OffsetOutOfRangeException, and this application, which does not catch it, closes the consumer."
                        )
                    } else {
                        format!(
                            "{client} asked for offset {position} of {partition}, which the log no longer holds (retention deleted it, or the log is shorter): OFFSET_OUT_OF_RANGE. Its auto.offset.reset={reset} decides where it goes next; the records it skipped were never read by its group."
                        )
                    },
                    vec![partition.to_string()],
                    "offset-out-of-range".to_string(),
                )
            }
            TraceKind::LogTruncationDetected {
                client,
                partition,
                position,
                diverging,
                reset,
            } => {
                marks.explainable = true;
                let next = match (diverging, reset) {
                    (_, OffsetReset::None) => "With auto.offset.reset=none it does not move: poll() throws LogTruncationException, and this application, which does not catch it, closes the consumer.".to_string(),
                    (Some(end), _) => format!("It seeks to {end}, where the two logs part, and reads the new leader's records from there; the records it had read above {end} are gone from the log."),
                    (None, reset) => format!("The new leader cannot say where the logs part, so auto.offset.reset={reset} decides where it goes."),
                };
                (
                    StepKind::Note {
                        over: *client,
                        text: "log truncation detected".to_string(),
                    },
                    format!(
                        "{client} was at offset {position} of {partition}, but the new leader's log does not hold the records it read last: their leader epoch ends {} there. The log was truncated under it, as an unclean election does (KIP-320 found it by OffsetForLeaderEpoch, before fetching). {next}",
                        diverging.map_or("nowhere known".to_string(), |end| format!("at {end}"))
                    ),
                    vec![partition.to_string()],
                    "log-truncation".to_string(),
                )
            }
            _ => return None,
        })
    }

    /// Steps for a request left in a broker's queue, a transaction's batch
    /// a leader refused (KIP-890), and producer state a log forgot.
    fn late_write_step(&self, event: &TraceEvent, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::ProducersExpired {
                broker,
                partition,
                producer_ids,
            } => (
                StepKind::Note {
                    over: NodeId::Broker(*broker),
                    text: format!("forgot {} producer(s)", producer_ids.len()),
                },
                format!(
                    "{} forgets producer id(s) {producer_ids:?} on {partition}: none has written there for producer.id.expiration.ms and none has a transaction open. If one writes again it is taken as a new producer, whatever its sequence, so a retry of an old batch would no longer be recognised as a duplicate.",
                    NodeId::Broker(*broker)
                ),
                vec![partition.to_string()],
                "producers-expired".to_string(),
            ),
            TraceKind::TransactionalWriteRefused {
                broker,
                partition,
                producer_id,
                producer_epoch,
                error,
            } => {
                marks.outcome = Some("error");
                marks.explainable = true;
                let why = match error {
                    ErrorCode::InvalidProducerEpoch => "the producer has moved to a newer epoch since the batch was sent, so the batch belongs to a transaction that is over",
                    ErrorCode::TransactionAbortable => "the transaction coordinator says the partition is not in the producer's open transaction",
                    ErrorCode::InvalidTxnState => "the batch continues no open transaction here and brings no valid verification",
                    _ => "the transaction coordinator refused it",
                };
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("✗ late write refused ({error})"),
                    },
                    format!(
                        "{} refuses producer id {producer_id}'s batch for {partition} (epoch {producer_epoch}) and writes nothing: {why} ({error}). Without this check (KIP-890) the batch would have opened a transaction on {partition} that no coordinator knows of.",
                        NodeId::Broker(*broker)
                    ),
                    vec![partition.to_string()],
                    "write-refused".to_string(),
                )
            }
            TraceKind::RequestStalled {
                broker,
                client,
                request,
                delay_ms,
            } => {
                marks.explainable = true;
                let late = if *request == MessageName::EndTxn {
                    "the end of a transaction arrives late, on whatever transaction is open by then"
                } else {
                    "the write arrives late"
                };
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("request waits {delay_ms} ms"),
                    },
                    format!(
                        "{} has read {client}'s {request} request, but no request handler takes it for {delay_ms} ms (a stalled handler thread). If {client} gives up meanwhile (request.timeout.ms), it closes the connection, yet the broker still handles the request later: {late}.",
                        NodeId::Broker(*broker)
                    ),
                    Vec::new(),
                    "request-stalled".to_string(),
                )
            }
            _ => return None,
        })
    }

    /// Steps for what an application did with the records it polled.
    fn consuming_step(&self, event: &TraceEvent, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::Consumed {
                consumer,
                partition,
                from,
                to,
                high_watermark,
            } => (
                StepKind::Note {
                    over: NodeId::Consumer(*consumer),
                    text: format!("read {from}–{}", to.saturating_sub(1)),
                },
                format!(
                    "{consumer_consumer} reads offsets {from}–{} of {partition}; the high watermark is {high_watermark}, so nothing above it is visible.",
                    to.saturating_sub(1), consumer_consumer = as_consumer(consumer)),
                vec![partition.to_string()],
                "consumed".to_string(),
            ),
            TraceKind::ProcessedAgain {
                group,
                consumer,
                partition,
                from,
                to,
                count,
                reason,
                skipped,
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: if *skipped { format!("{count} duplicate(s) skipped") } else { format!("{count} processed twice") },
                    },
                    format!(
                        "{} {} {count} record(s) of {partition} (offsets {from}–{to}) a second time for group {group}: {reason}.{}",
                        NodeId::Consumer(*consumer),
                        if *skipped { "meets" } else { "processes" },
                        if *skipped {
                            " Its handler is idempotent: it recognises them and does nothing, so at-least-once delivery still has each effect once."
                        } else {
                            " At-least-once delivery: nothing is lost, but the handler's effects happen twice unless it is idempotent."
                        }
                    ),
                    vec![partition.to_string()],
                    "processed-again".to_string(),
                )
            }
            TraceKind::ProcessingInterrupted {
                group,
                consumer,
                processed,
                unprocessed,
                uncommitted_processed,
                committed_unprocessed,
                in_transaction,
            } => {
                marks.explainable = true;
                let mut caption = format!(
                    "{} crashes in the middle of a batch for group {group}: its handler finished {processed} of {} record(s).",
                    NodeId::Consumer(*consumer),
                    processed + unprocessed
                );
                if *in_transaction {
                    caption.push_str(" Its outputs and its offsets are in one open transaction, which its coordinator will abort (when a new instance fences it, or when transaction.timeout.ms passes): none of this work counts, and the group does it again from the last committed offsets (exactly-once).");
                }
                if *uncommitted_processed > 0 {
                    caption.push_str(&format!(
                        " {uncommitted_processed} of them were processed but not committed: the group will read them again from the last commit (at-least-once)."
                    ));
                }
                if !committed_unprocessed.is_empty() {
                    let ranges: Vec<String> = committed_unprocessed
                        .iter()
                        .map(|(partition, from, to)| format!("{partition} {from}–{to}"))
                        .collect();
                    caption.push_str(&format!(
                        " Offsets {} were committed before they were processed: the group starts after them, so they are never processed (at-most-once).",
                        ranges.join(", ")
                    ));
                }
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: format!("crash: {processed} of {} done", processed + unprocessed),
                    },
                    caption,
                    committed_unprocessed.iter().map(|(partition, ..)| partition.to_string()).collect(),
                    "processing-interrupted".to_string(),
                )
            }
            TraceKind::HandlerFailed {
                group,
                consumer,
                partition,
                offset,
                attempts,
                skipped,
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: "handler failed".to_string(),
                    },
                    format!(
                        "{}'s handler (group {group}) failed {attempts} time(s) on offset {offset} of {partition} and has no way around it: the exception leaves the poll loop and the app closes its consumer, which leaves the group. {skipped} record(s) of its last poll were never handled. With auto-commit, closing commits the positions poll() already moved past them (at most once); with manual commits the next owner of {partition} reads the same record and fails the same way (a poison pill).",
                        NodeId::Consumer(*consumer)
                    ),
                    vec![partition.to_string()],
                    "handler-failed".to_string(),
                )
            }
            TraceKind::DeadLettered {
                group,
                consumer,
                partition,
                offset,
                attempts,
                topic,
                dead_letter,
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: format!("to {topic}"),
                    },
                    format!(
                        "{}'s handler (group {group}) failed {attempts} time(s) on offset {offset} of {partition}, a poison record, and gave up as its policy says: it produces the record to {topic} (record #{dead_letter}) with headers naming the error and the source topic, partition and offset, then goes on with the next record. Its offset is committed like the others, so the group is not stuck; the dead letter waits in {topic} for someone to inspect or replay it.",
                        NodeId::Consumer(*consumer)
                    ),
                    vec![partition.to_string()],
                    "dead-lettered".to_string(),
                )
            }
            _ => return None,
        })
    }

    /// Steps for a process stopping, starting, fenced or elected.
    fn process_step(&self, event: &TraceEvent, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::BrokerFencing { broker, fenced, reason } => {
                marks.explainable = *fenced;
                (
                    StepKind::Note {
                        over: self.controller(),
                        text: format!(
                            "{} {broker_broker}",
                            if *fenced { "fence" } else { "unfence" },
                            broker_broker = as_broker(broker)
                        ),
                    },
                    format!(
                        "The controller {} {broker_broker}: {reason}.",
                        if *fenced { "fences" } else { "unfences" },
                        broker_broker = as_broker(broker)
                    ),
                    Vec::new(),
                    "fencing".to_string(),
                )
            }
            TraceKind::BrokerStatus { broker, status } => (
                StepKind::Note {
                    over: NodeId::Broker(*broker),
                    text: status.to_string(),
                },
                format!("{broker_broker} {status}.", broker_broker = as_broker(broker)),
                Vec::new(),
                "broker-status".to_string(),
            ),
            TraceKind::ConsumerStatus { consumer, status } => (
                StepKind::Note {
                    over: NodeId::Consumer(*consumer),
                    text: status.to_string(),
                },
                format!(
                    "{consumer_consumer} {status}.",
                    consumer_consumer = as_consumer(consumer)
                ),
                Vec::new(),
                "consumer-status".to_string(),
            ),
            TraceKind::ControllerStatus { controller, status } => (
                StepKind::Note {
                    over: NodeId::Controller(*controller),
                    text: status.to_string(),
                },
                format!(
                    "{controller_controller} {status}.",
                    controller_controller = as_controller(controller)
                ),
                Vec::new(),
                "controller-status".to_string(),
            ),
            TraceKind::ControllerElection {
                controller,
                epoch,
                reason,
            } => (
                StepKind::Note {
                    over: NodeId::Controller(*controller),
                    text: format!("candidate, epoch {epoch}"),
                },
                format!(
                    "{controller_controller} stands for election in epoch {epoch}: {reason}.",
                    controller_controller = as_controller(controller)
                ),
                Vec::new(),
                "controller-election".to_string(),
            ),
            TraceKind::ControllerElected {
                controller,
                epoch,
                votes,
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Controller(*controller),
                        text: format!("active, epoch {epoch}"),
                    },
                    format!("{controller_controller} wins epoch {epoch} with votes from {votes:?} and becomes the active controller.", controller_controller = as_controller(controller)),
                    Vec::new(),
                    "controller-elected".to_string(),
                )
            }
            _ => return None,
        })
    }

    /// Steps for a transaction's state and its markers.
    fn transaction_step(&self, event: &TraceEvent, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::TransactionState {
                transactional_id,
                producer_id,
                producer_epoch,
                state,
                partitions,
            } => (
                StepKind::Input {
                    text: format!("{transactional_id}: {state}"),
                },
                format!(
                    "The transaction coordinator writes transactional.id {transactional_id} (producer id {producer_id}, epoch {producer_epoch}) as {state}{} to __transaction_state; the change counts once that record is replicated.",
                    if partitions.is_empty() {
                        String::new()
                    } else {
                        format!(" with {}", partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
                    }
                ),
                partitions.iter().map(ToString::to_string).collect(),
                "transaction-state".to_string(),
            ),
            TraceKind::TransactionRolledBack {
                group,
                consumer,
                records,
                rewound,
            } => {
                marks.explainable = true;
                let back = if rewound.is_empty() {
                    "the member that owns their partitions now does them again from the committed offsets".to_string()
                } else {
                    format!(
                        "it goes back to the last committed offsets of {} (where it was: {}) and does them again",
                        rewound.iter().map(|(partition, _)| partition.to_string()).collect::<Vec<_>>().join(", "),
                        rewound.iter().map(|(partition, offset)| format!("{partition} {offset}")).collect::<Vec<_>>().join(", ")
                    )
                };
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: "transaction aborted".to_string(),
                    },
                    format!(
                        "{}'s transaction aborted, so the {records} record(s) of group {group} it handled in it count for nothing: their outputs are hidden from read_committed readers and their offsets were never committed; {back}.",
                        NodeId::Consumer(*consumer)
                    ),
                    rewound.iter().map(|(partition, _)| partition.to_string()).collect(),
                    "transaction-rolled-back".to_string(),
                )
            }
            TraceKind::TransactionEnded {
                producer,
                transactional_id,
                outcome,
            } => (
                StepKind::Note {
                    over: NodeId::Producer(*producer),
                    text: outcome.to_string(),
                },
                format!("{} ({transactional_id}): {outcome}.", NodeId::Producer(*producer)),
                Vec::new(),
                "transaction-ended".to_string(),
            ),
            TraceKind::MarkerWritten {
                broker,
                partition,
                producer_id,
                control,
                offset,
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("{control} marker"),
                    },
                    format!(
                        "{} writes {} {control} marker for producer id {producer_id}'s transaction at offset {offset} of {partition}: a control record that read_committed consumers use to decide the transaction's records, and that no consumer returns to its application. Once the high watermark passes it, the last stable offset can move past the transaction.",
                        NodeId::Broker(*broker),
                        if *control == ControlType::Abort { "an" } else { "a" }
                    ),
                    vec![partition.to_string()],
                    "marker-written".to_string(),
                )
            }
            _ => return None,
        })
    }

    /// Steps for storage, the admin changes and broken invariants.
    fn admin_step(&self, event: &TraceEvent, marks: &mut Marks) -> Option<Drawn> {
        Some(match &event.kind {
            TraceKind::SegmentsDeleted {
                broker,
                partition,
                bytes,
                segments,
                log_start_offset,
            } => {
                marks.explainable = true;
                let why = segments.first().map_or(String::new(), |(_, _, reason)| reason.to_string());
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("deleted {} segment(s)", segments.len()),
                    },
                    format!(
                        "{}'s retention check deleted {} whole segment(s) of {partition} ({bytes} bytes, {why}). Retention never looks at who has read a record: it removes whole segments, oldest first and only below the high watermark, by age (retention.ms) or size (retention.bytes); when every segment is past retention.ms, even the active one goes, after the log rolls a new, empty one. The log now starts at offset {log_start_offset}; a consumer still behind it gets OFFSET_OUT_OF_RANGE.",
                        NodeId::Broker(*broker),
                        segments.len()
                    ),
                    vec![partition.to_string()],
                    "segments-deleted".to_string(),
                )
            }
            TraceKind::LogCleaned {
                broker,
                partition,
                records_before,
                records_after,
                tombstones_removed,
                markers_removed,
                checkpoint,
                ..
            } => {
                marks.explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: "compacted".to_string(),
                    },
                    format!(
                        "{}'s log cleaner compacted its copy of {partition} below offset {checkpoint}: of {records_before} records it kept {records_after}, the latest record of each key, at their original offsets (the offsets of the others are now gaps){}. Compaction is not deletion by age: a key's latest value stays however old it is, and a consumer reading from the start still sees every key. The active segment and anything above the last stable offset are never cleaned.{}",
                        NodeId::Broker(*broker),
                        if *tombstones_removed > 0 {
                            format!("; {tombstones_removed} tombstone(s) older than delete.retention.ms went too, so their keys are gone")
                        } else {
                            String::new()
                        },
                        if *markers_removed > 0 {
                            format!(" It also removed {markers_removed} transaction marker(s): once no record of a marker's transaction was left, an earlier cleaning stamped it to go after delete.retention.ms, and that time has passed.")
                        } else {
                            String::new()
                        }
                    ),
                    vec![partition.to_string()],
                    "log-cleaned".to_string(),
                )
            }
            TraceKind::ChangeRefused { change, reason } => (
                StepKind::Input {
                    text: "refused".to_string(),
                },
                format!("Kafka would refuse to {change}: {reason} Nothing changed."),
                Vec::new(),
                "change-refused".to_string(),
            ),
            TraceKind::LimitReached { what, limit } => (
                StepKind::Input {
                    text: format!("limit: {what}"),
                },
                format!("The simulation stops at kafkascope's limit of {limit} for {what}."),
                Vec::new(),
                "limit-reached".to_string(),
            ),
            TraceKind::ElectLeadersFailed {
                election_type,
                partition,
                error,
            } => (
                StepKind::Input {
                    text: format!("{election_type} election: {error}"),
                },
                match partition {
                    Some(partition) => {
                        format!("An operator's {election_type} leader election elects nobody for {partition}: {error}.")
                    }
                    None => format!(
                        "An operator's {election_type} leader election gets no answer: no controller is active ({error})."
                    ),
                },
                Vec::new(),
                "elect-leaders-failed".to_string(),
            ),
            TraceKind::PartitionsCreated { topic, from, to } => (
                StepKind::Input {
                    text: format!("{topic}: {from} → {to} partitions"),
                },
                format!(
                    "The active controller commits {count} new partition record(s): {topic} has {to} partitions where it had {from}. \
                     Producers and consumers do not hear of them until their next metadata refresh (metadata.max.age.ms); \
                     from then on a key may hash to a different partition, so its new records are no longer behind its old ones.",
                    count = to - from
                ),
                Vec::new(),
                "partitions-created".to_string(),
            ),
            TraceKind::CreatePartitionsFailed { topic, count, error } => (
                StepKind::Input {
                    text: format!("{topic} --partitions {count}: {error}"),
                },
                format!("An operator asks for {count} partitions of {topic}; the answer is {error}."),
                Vec::new(),
                "create-partitions-failed".to_string(),
            ),
            TraceKind::InternalTopicNotCreated {
                topic,
                replication_factor,
                brokers,
            } => (
                StepKind::Input {
                    text: format!("{topic} not created: INVALID_REPLICATION_FACTOR"),
                },
                format!(
                    "A client looked for its coordinator, so the active controller tries to create {topic} with its replication factor, {replication_factor}; only {brokers} broker(s) can take a replica, so the creation fails. Every lookup answers COORDINATOR_NOT_AVAILABLE until enough brokers are up (a one-broker quickstart sets the replication factor to 1)."
                ),
                Vec::new(),
                "internal-topic-not-created".to_string(),
            ),
            TraceKind::InvariantViolated { invariant, detail } => (
                StepKind::Input {
                    text: format!("invariant broken: {invariant:?}"),
                },
                format!("A safety property broke ({invariant:?}): {detail}."),
                Vec::new(),
                "invariant".to_string(),
            ),
            _ => return None,
        })
    }

    /// A message's caption: the metadata log, produce and fetch to one
    /// function, the group and transaction coordinators to another.
    pub(super) fn message_caption(
        &self,
        from: NodeId,
        to: NodeId,
        name: MessageName,
        facts: &MessageFacts,
        summary: &str,
    ) -> String {
        use MessageName as M;
        match name {
            M::HeartbeatResponse if !facts.errors.is_empty() => {
                self.coordinator_caption(from, to, name, facts, summary)
            }
            M::InitProducerId
            | M::InitProducerIdResponse
            | M::FindCoordinator
            | M::FindCoordinatorResponse
            | M::AddPartitionsToTxn
            | M::AddPartitionsToTxnResponse
            | M::EndTxn
            | M::EndTxnResponse
            | M::WriteTxnMarkers
            | M::WriteTxnMarkersResponse
            | M::AddOffsetsToTxn
            | M::AddOffsetsToTxnResponse
            | M::TxnOffsetCommit
            | M::TxnOffsetCommitResponse
            | M::JoinGroup
            | M::JoinGroupResponse
            | M::SyncGroup
            | M::SyncGroupResponse
            | M::OffsetCommit
            | M::OffsetCommitResponse
            | M::OffsetFetch
            | M::OffsetFetchResponse
            | M::LeaveGroup
            | M::ConsumerGroupHeartbeat
            | M::ConsumerGroupHeartbeatResponse => self.coordinator_caption(from, to, name, facts, summary),
            M::Fetch
            | M::FetchResponse
            | M::BeginQuorumEpoch
            | M::Metadata
            | M::MetadataResponse
            | M::Produce
            | M::ProduceResponse
            | M::AlterPartition
            | M::AlterPartitionResponse
            | M::ListOffsets
            | M::OffsetForLeaderEpoch
            | M::OffsetForLeaderEpochResponse
            | M::Vote
            | M::VoteResponse
            | M::BrokerHeartbeat => self.log_caption(from, to, name, facts, summary),
            M::BrokerRegistration
            | M::BrokerRegistrationResponse
            | M::BrokerHeartbeatResponse
            | M::NotController
            | M::Heartbeat
            | M::HeartbeatResponse
            | M::ListOffsetsResponse
            | M::ConnectionClosed => format!("{from} → {to}: {summary}."),
        }
    }

    /// Messages of the metadata log, of producing and of fetching.
    fn log_caption(&self, from: NodeId, to: NodeId, name: MessageName, facts: &MessageFacts, summary: &str) -> String {
        use MessageName as M;
        let client = matches!(from, NodeId::Consumer(_));
        let metadata_log = matches!(to, NodeId::Controller(_)) || matches!(from, NodeId::Controller(_));
        let offset = facts.fetch_offset.unwrap_or(0);
        match name {
            M::Fetch if metadata_log => format!(
                "{from} fetches the metadata log (__cluster_metadata) from {to} from offset {offset}: {}",
                if matches!(from, NodeId::Broker(_)) {
                    "a broker is an observer of the controller quorum; it learns leaders, ISRs and fencing by fetching, and applies only what is committed."
                } else {
                    "a voter follows the active controller by fetching; the leader counts an entry committed once a majority of voters fetched past it."
                }
            ),
            M::FetchResponse if metadata_log => format!("{from} answers {to}'s metadata fetch: {summary}."),
            M::BeginQuorumEpoch => format!("{from}, the new active controller, tells {to} it leads: {summary}; {to} now fetches from it."),
            M::Metadata => format!("{from} asks {to} for metadata: which broker leads each partition, at which leader epoch."),
            M::MetadataResponse => format!("{from} answers {to} with the leaders it knows ({summary})."),
            M::Produce => {
                let partitions = facts.partitions.len();
                let acks = match facts.acks {
                    Some(Acks::All) if partitions > 1 => {
                        " With acks=all the leader answers once the high watermark passes every batch (or a partition fails or times out): one answer for them all."
                    }
                    Some(Acks::All) => " With acks=all the leader answers only once the high watermark passes the batch.",
                    Some(Acks::Leader) => " With acks=1 the leader answers as soon as it has appended the batches.",
                    Some(Acks::None) | None => " With acks=0 no answer will come.",
                };
                let what = if partitions > 1 {
                    format!("one request with a batch for each of {partitions} partitions it leads")
                } else {
                    "a batch".to_string()
                };
                format!("{from} sends {what} to {to}, the leader: {summary}.{acks}")
            }
            M::ProduceResponse => {
                let mut why = String::new();
                for (error, sentence) in [
                    (ErrorCode::NotEnoughReplicasAfterAppend, " The batch was appended, but the ISR fell below min.insync.replicas before it was committed."),
                    (ErrorCode::NotEnoughReplicas, " The ISR is smaller than min.insync.replicas, so the leader appended nothing."),
                    (ErrorCode::NotLeaderOrFollower, " That broker does not lead the partition (any more)."),
                    (ErrorCode::OutOfOrderSequenceNumber, " The batch's sequence does not follow the last one the leader has from this producer: it retries in order."),
                    (ErrorCode::RequestTimedOut, " The high watermark did not pass the batch within the request's timeout."),
                ] {
                    if facts.errors.contains(&error) {
                        why.push_str(sentence);
                    }
                }
                format!("{from} answers {to}: {summary}.{why}")
            }
            M::Fetch if client => format!(
                "{from} fetches from {to}, the leader, starting at offset {offset}; it only gets records below the high watermark."
            ),
            M::Fetch => format!(
                "{from}, a follower, fetches from {to}, the leader, starting at offset {offset}: the leader learns that {from} holds everything below {offset}."
            ),
            M::FetchResponse => format!(
                "{from} sends {to} {} record(s) and its high watermark {} ({summary}).",
                facts.records.unwrap_or(0),
                facts.high_watermark.unwrap_or(0)
            ),
            M::AlterPartition => format!("{from}, the leader, asks the controller to change the ISR: {summary}."),
            M::AlterPartitionResponse => format!("The controller answers {to}: {summary}."),
            M::ListOffsets => format!("{from} asks {to} where the log starts or ends ({summary})."),
            M::OffsetForLeaderEpoch => format!(
                "The leader changed, so before it fetches again {from} checks that its position is still on the log (KIP-320): it asks the new leader {to} where the leader epoch of the last record it read ends there ({summary}). If that end is below its position, the log it read from was truncated."
            ),
            M::OffsetForLeaderEpochResponse => format!(
                "{from} answers {to}: {summary}. At or past the position, nothing {to} read is gone and it fetches on; below it, those records are gone from the log."
            ),
            M::Vote => format!("{from} asks {to} for its vote: {summary}."),
            M::VoteResponse => format!("{from} answers {to}: {summary}."),
            M::BrokerHeartbeat => format!("{from} heartbeats to the controller ({summary})."),
            _ => format!("{from} → {to}: {summary}."),
        }
    }

    /// Messages to and from the group and transaction coordinators.
    fn coordinator_caption(
        &self,
        from: NodeId,
        to: NodeId,
        name: MessageName,
        facts: &MessageFacts,
        summary: &str,
    ) -> String {
        use MessageName as M;
        match name {
            M::InitProducerId if facts.transactional_id.is_some() => format!(
                "{from}, a transactional producer (transactional.id={}), asks its transaction coordinator {to} for a producer id and epoch. The coordinator bumps the epoch: any older instance with this id is fenced, a late write from an earlier epoch is refused where it lands, and a transaction left open is aborted first.",
                facts.transactional_id.as_deref().unwrap_or_default()
            ),
            M::InitProducerId => format!(
                "{from}, an idempotent producer, asks {to} (the least loaded broker) for a producer id and epoch; it sends no record before it has them."
            ),
            M::InitProducerIdResponse if !facts.errors.is_empty() => {
                format!("{from} answers {to}: {summary}.{}", txn_error_why(&facts.errors))
            }
            M::InitProducerIdResponse => format!(
                "{from} gives {to} its producer id ({summary}): every batch now carries the id, the epoch and a sequence per partition, so leaders drop duplicates and keep each partition in order."
            ),
            M::FindCoordinator if facts.transactional_id.is_some() => format!(
                "{from} asks {to} which broker coordinates transactional.id {}: the leader of its __transaction_state partition.",
                facts.transactional_id.as_deref().unwrap_or_default()
            ),
            M::FindCoordinator => format!("{from} asks {to} which broker coordinates its group."),
            M::FindCoordinatorResponse if facts.transactional_id.is_some() => {
                format!("{from} tells {to} its transaction coordinator ({summary}).")
            }
            M::FindCoordinatorResponse => format!("{from} tells {to} its group's coordinator ({summary})."),
            M::AddPartitionsToTxn if facts.verify_only == Some(true) => format!(
                "{from} leads {} and got the first batch of {}'s transaction there. Before it writes anything it asks the transaction coordinator {to} whether the producer added the partition to that transaction (KIP-890 verification, transaction.partition.verification.enable=true): a late batch from a transaction that has already ended is refused instead of opening one no coordinator knows about.{}",
                facts.partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                facts.transactional_id.as_deref().unwrap_or_default(),
                asks_itself(from, to)
            ),
            M::AddPartitionsToTxn if facts.verify_only == Some(false) => format!(
                "{from} leads {} and got {}'s first write of this transaction there (a batch, or the offsets of a TxnOffsetCommit), so it adds the partition to the transaction at the coordinator {to} itself (transaction version 2, KIP-890): the producer sends no AddPartitionsToTxn of its own. The coordinator stores the partition in __transaction_state before {from} appends.{}",
                facts.partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
                facts.transactional_id.as_deref().unwrap_or_default(),
                asks_itself(from, to)
            ),
            M::AddPartitionsToTxn => format!(
                "{from} tells its transaction coordinator {to} that its open transaction writes to {}: the coordinator stores that in __transaction_state before {from} sends a record there, so it knows where the markers must go.",
                facts.partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
            M::AddPartitionsToTxnResponse if matches!(to, NodeId::Broker(_)) && !facts.errors.is_empty() => format!(
                "The transaction coordinator {from} answers the leader {to}: {summary}.{}",
                verification_error_why(&facts.errors)
            ),
            M::AddPartitionsToTxnResponse if matches!(to, NodeId::Broker(_)) => format!(
                "The transaction coordinator {from} answers the leader {to}: the partition is in the transaction ({summary}), so {to} appends what was waiting."
            ),
            M::EndTxn => match facts.control {
                Some(ControlType::Commit) => format!(
                    "{from} has every record of its transaction acknowledged and asks {to} to commit it: the coordinator writes PrepareCommit to __transaction_state. From then on the transaction will commit, whatever fails."
                ),
                _ => format!(
                    "{from} asks {to} to abort its transaction: the coordinator writes PrepareAbort to __transaction_state, then ABORT markers."
                ),
            },
            M::AddPartitionsToTxnResponse | M::EndTxnResponse if !facts.errors.is_empty() => {
                format!("The transaction coordinator {from} answers {to}: {summary}.{}", txn_error_why(&facts.errors))
            }
            M::AddPartitionsToTxnResponse => format!(
                "The transaction coordinator {from} has stored the partitions ({summary}): {to} may send records there."
            ),
            M::EndTxnResponse if facts.transaction_v2 => format!(
                "The transaction coordinator {from} has stored the decision and bumped the producer epoch ({summary}): {to} starts its next transaction at epoch {}, with sequences from 0. The markers the coordinator now writes carry that epoch too, so each partition leader, having seen it, refuses a late write from the transaction just ended (transaction version 2, KIP-890).",
                facts.producer_epoch.map_or_else(String::new, |epoch| epoch.to_string())
            ),
            M::EndTxnResponse => format!(
                "The transaction coordinator {from} has stored the decision ({summary}); it now writes a marker to every partition of the transaction, and {to} may start the next one."
            ),
            M::WriteTxnMarkers => format!(
                "The transaction coordinator {from} asks {to}, the leader of {}, to write a {} marker for the transaction ({summary}).",
                facts.partitions.first().map(ToString::to_string).unwrap_or_default(),
                facts.control.map_or_else(String::new, |control| control.to_string())
            ),
            M::WriteTxnMarkersResponse => format!("{from} answers the transaction coordinator {to}: {summary}."),
            M::AddOffsetsToTxn => format!(
                "{from} is about to put its app's consumed positions in the open transaction (sendOffsetsToTransaction), so it tells its transaction coordinator {to} that the transaction also writes to group {}'s __consumer_offsets partition: that partition will get the marker too.",
                facts.group.as_deref().unwrap_or_default()
            ),
            M::AddOffsetsToTxnResponse if !facts.errors.is_empty() => {
                format!("The transaction coordinator {from} answers {to}: {summary}.{}", txn_error_why(&facts.errors))
            }
            M::AddOffsetsToTxnResponse => format!(
                "The transaction coordinator {from} has stored the group's partition ({summary}): {to} now sends the offsets to the group coordinator."
            ),
            M::TxnOffsetCommit => format!(
                "{from} sends the app's positions to group {}'s coordinator {to} inside its transaction ({summary}). They are written to __consumer_offsets as pending: they count only once the transaction's COMMIT marker reaches that partition, and vanish if it aborts. The request carries the member's generation, so an app instance that lost its partitions cannot commit (KIP-447).",
                facts.group.as_deref().unwrap_or_default()
            ),
            M::TxnOffsetCommitResponse if !facts.errors.is_empty() => format!(
                "The group coordinator {from} refuses {to}'s offsets: {summary}.{}",
                txn_offsets_error_why(&facts.errors)
            ),
            M::TxnOffsetCommitResponse => format!(
                "The group coordinator {from} has written the pending offsets ({summary}): {to} may now commit the transaction."
            ),
            M::JoinGroup => format!("{from} joins its group at the coordinator {to}, listing its topics and assignor."),
            M::JoinGroupResponse => format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors)),
            M::SyncGroup => format!("{from} asks the coordinator {to} for its partitions ({summary})."),
            M::SyncGroupResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors))
            }
            M::SyncGroupResponse => format!("The coordinator {from} gives {to} its assignment ({summary})."),
            M::HeartbeatResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}'s heartbeat: {summary}.{}", group_error_why(&facts.errors))
            }
            M::OffsetCommit => format!("{from} commits its positions to the coordinator {to}, which writes them to __consumer_offsets ({summary})."),
            M::OffsetCommitResponse => format!("The commit is durable: {summary}."),
            M::OffsetFetch => format!("{from} asks the coordinator {to} where its group stopped reading."),
            M::OffsetFetchResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors))
            }
            M::OffsetFetchResponse => format!("The coordinator {from} answers {to}: {summary}."),
            M::LeaveGroup => format!("{from} leaves its group at the coordinator {to}."),
            M::ConsumerGroupHeartbeat => {
                let owned = facts.partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                match facts.member_epoch {
                    Some(0) => format!("{from} joins its group at the coordinator {to} with a ConsumerGroupHeartbeat at member epoch 0 (KIP-848): no JoinGroup, no SyncGroup, no leader member."),
                    Some(-1) => format!("{from} leaves its group: a ConsumerGroupHeartbeat at member epoch -1."),
                    Some(epoch) if owned.is_empty() => format!("{from} heartbeats to the coordinator {to} at member epoch {epoch}, owning nothing yet."),
                    Some(epoch) => format!("{from} heartbeats to the coordinator {to} at member epoch {epoch} and reports what it owns: {owned}."),
                    None => format!("{from} → {to}: {summary}."),
                }
            }
            M::ConsumerGroupHeartbeatResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors))
            }
            M::ConsumerGroupHeartbeatResponse if facts.partitions.is_empty() => format!(
                "The coordinator {from} answers {to} ({summary}): nothing to read yet, either because the target gives it nothing or because the partitions it will get are still owned by members giving them up."
            ),
            M::ConsumerGroupHeartbeatResponse => format!(
                "The coordinator {from} answers {to} with its member epoch and the partitions it should own now ({summary}). {to} gives up what is not in the list (committing first), starts on what is new, and says so in a heartbeat at once."
            ),
            _ => format!("{from} → {to}: {summary}."),
        }
    }
}

/// Why a transaction coordinator answered with these errors (Kafka 4.1's
/// `TransactionCoordinator` and the client's `TransactionManager`), as a
/// caption's tail.
pub(super) fn txn_error_why(errors: &[ErrorCode]) -> String {
    let mut why = String::new();
    for (error, sentence) in [
        (ErrorCode::ConcurrentTransactions, " The coordinator is still changing this transactional id's state (writing it, or finishing the last transaction's markers): the producer asks again after retry.backoff.ms."),
        (ErrorCode::ProducerFenced, " A newer instance with the same transactional.id has a newer epoch: this producer is a zombie. For Kafka's client that is fatal: it stops, and what it had not sent fails."),
        (ErrorCode::NotCoordinator, " This broker does not coordinate the id (any more): the producer looks for the coordinator again."),
        (ErrorCode::CoordinatorNotAvailable, " The coordinator is not ready (__transaction_state is being created or loaded): the producer asks again."),
        (ErrorCode::InvalidTxnState, " The request does not fit the transaction's state."),
        (ErrorCode::InvalidProducerIdMapping, " The producer id is not this transactional id's."),
        (ErrorCode::TransactionAbortable, " The partition is not in the producer's open transaction (KIP-890): the batch is refused, and the producer can only abort."),
    ] {
        if errors.contains(&error) {
            why.push_str(sentence);
        }
    }
    why
}

/// Why a producer's batch failed, as a caption's tail.
fn produce_failure_why(error: ErrorCode, will_retry: bool) -> &'static str {
    match error {
            ErrorCode::NotEnoughReplicas => " The ISR is smaller than min.insync.replicas, so the leader refused to append the batch.",
            ErrorCode::NotEnoughReplicasAfterAppend => " The leader appended the batch, but the ISR shrank below min.insync.replicas before it was committed.",
            ErrorCode::NotLeaderOrFollower => " The broker it asked no longer leads the partition; the producer refreshes its metadata.",
            ErrorCode::NetworkException => " The connection to the leader broke: its process is gone.",
            ErrorCode::RequestTimedOut => " No answer came within request.timeout.ms.",
            ErrorCode::DeliveryTimeout => {
                " delivery.timeout.ms has passed since the batch was created, so the producer stops retrying and fails it (\"Expiring N record(s) … ms has passed since batch creation\")."
            }
            ErrorCode::OutOfOrderSequenceNumber if will_retry => {
                " The broker's producer state expects an earlier sequence. If this is the batch right after the last acknowledged one, those sequences are gone (an unclean election): an idempotent producer bumps its epoch, starts the partition's sequences at 0 and sends it again."
            }
            ErrorCode::InvalidProducerEpoch => {
                " The partition has seen a newer epoch of this producer id. A transactional producer can now only abort; the abort's EndTxn says whether it is fenced."
            }
            ErrorCode::TransactionAbortable => {
                " The leader asked the transaction coordinator, which says the partition is not in this producer's open transaction (KIP-890): nothing is written, and the transaction can only abort."
            }
            ErrorCode::InvalidTxnState => {
                " The batch was not part of an open transaction the leader knows of (KIP-890's check at the log): nothing is written, and the transaction can only abort."
            }
            ErrorCode::ConcurrentTransactions => {
                " The coordinator is still finishing the producer's previous transaction, so the partition cannot join the new one yet: the producer sends the batch again."
            }
            _ => "",
    }
}

/// A leader's question to the transaction coordinator when both are the
/// same broker: the arrow starts and ends on one lifeline.
fn asks_itself(from: NodeId, to: NodeId) -> String {
    if from == to {
        format!(" ({from} is also this transactional id's coordinator, so it asks itself: the arrow starts and ends on its own line.)")
    } else {
        String::new()
    }
}

/// Why a transaction coordinator's answer to a leader's verification
/// (KIP-890) keeps the batch out, as a caption's tail.
fn verification_error_why(errors: &[ErrorCode]) -> String {
    let mut why = String::new();
    for (error, sentence) in [
        (ErrorCode::ProducerFenced, " The producer has a newer epoch than this batch carries: the batch belongs to a transaction that is already over (the leader tells the producer INVALID_PRODUCER_EPOCH), so nothing is written."),
        (ErrorCode::TransactionAbortable, " The partition is not in the producer's open transaction: the batch is refused (TRANSACTION_ABORTABLE) and nothing is written."),
        (ErrorCode::ConcurrentTransactions, " The coordinator is still writing a change of this transaction (another partition joining it, or the end of the one before): the leader asks again shortly, then lets the producer retry."),
        (ErrorCode::InvalidProducerIdMapping, " The coordinator has no such producer for this transactional id: the batch is refused."),
        (ErrorCode::NotCoordinator, " That broker does not coordinate the transactional id (any more): the producer is told NOT_ENOUGH_REPLICAS and retries."),
        (ErrorCode::CoordinatorNotAvailable, " The coordinator cannot answer now: the producer is told NOT_ENOUGH_REPLICAS and retries."),
    ] {
        if errors.contains(&error) {
            why.push_str(sentence);
        }
    }
    why
}

/// Why a group coordinator refused a `TxnOffsetCommit` (the client's
/// `TransactionManager.TxnOffsetCommitHandler`), as a caption's tail.
fn txn_offsets_error_why(errors: &[ErrorCode]) -> String {
    let mut why = String::new();
    for (error, sentence) in [
        (ErrorCode::UnknownMemberId, " The group no longer has this member: the app instance is a zombie whose partitions were given to another. Its transaction can only abort, so nothing it wrote in it counts."),
        (ErrorCode::IllegalGeneration, " The member's generation is over: its partitions may belong to another member now. Its transaction can only abort, so nothing it wrote in it counts."),
        (ErrorCode::FencedInstanceId, " Another process holds this group.instance.id: the transaction can only abort."),
        (ErrorCode::NotCoordinator, " This broker does not coordinate the group (any more): the producer looks for it again."),
        (ErrorCode::CoordinatorNotAvailable, " The group coordinator cannot answer now: the producer looks for it again."),
        (ErrorCode::ProducerFenced, " A newer instance has this transactional.id: fatal for this producer."),
        (ErrorCode::InvalidProducerEpoch, " The offsets partition has seen a newer epoch of this producer: fatal for it (ProducerFencedException)."),
        (ErrorCode::TransactionAbortable, " The offsets partition is not in the producer's transaction: it can only abort."),
        (ErrorCode::InvalidTxnState, " The transaction ended while the offsets waited: the producer can only abort."),
        (ErrorCode::ConcurrentTransactions, " The previous transaction is still completing: the producer sends the offsets again."),
    ] {
        if errors.contains(&error) {
            why.push_str(sentence);
        }
    }
    why
}

/// Why a group coordinator answered with these errors (Kafka 4.1's
/// `GroupMetadataManager` and `ConsumerCoordinator`), as a caption's tail.
pub(super) fn group_error_why(errors: &[ErrorCode]) -> String {
    let mut why = String::new();
    for (error, sentence) in [
        (ErrorCode::UnstableOffsetCommit, " A transaction holds offsets for these partitions that are not decided yet (KIP-447): the consumer asks again and starts reading only once the transaction commits or aborts, so it neither reads again what the transaction covers nor skips what it aborted."),
        (ErrorCode::MemberIdRequired, " A new member gets its member id first and joins again with it (KIP-394), so a member that never comes back is not waited for."),
        (ErrorCode::RebalanceInProgress, " The group is rebalancing: the member joins again (at its next poll)."),
        (ErrorCode::IllegalGeneration, " The member's generation is over: what it owned is lost and it joins again."),
        (ErrorCode::UnknownMemberId, " The coordinator does not know this member (its session expired, or a new coordinator never had it): it joins again as a new member."),
        (ErrorCode::FencedInstanceId, " Another process now holds this group.instance.id: for Kafka's client that is fatal, and this one stops."),
        (ErrorCode::InconsistentGroupProtocol, " Its assignor is not one every member of the group supports: for Kafka's client that is fatal."),
        (ErrorCode::NotCoordinator, " This broker no longer coordinates the group: the member looks for the new coordinator and, if it has partitions, keeps reading them meanwhile."),
        (ErrorCode::CoordinatorNotAvailable, " The coordinator cannot answer now (its group is loading or could not be written): the member looks for it again."),
        (ErrorCode::FencedMemberEpoch, " The member's epoch is not one the coordinator accepts: it drops its partitions without committing and joins again at epoch 0 (KIP-848)."),
        (ErrorCode::StaleMemberEpoch, " The commit carried an old member epoch: it is refused, and the member learns its new epoch from its next heartbeat."),
        (ErrorCode::UnsupportedAssignor, " The broker has no server-side assignor by that name (group.consumer.assignors): for Kafka's client that is fatal."),
        (ErrorCode::GroupIdNotFound, " The group exists with the other protocol: for Kafka's client that is fatal (Kafka can migrate a group between protocols; the simulator does not)."),
    ] {
        if errors.contains(&error) {
            why.push_str(sentence);
        }
    }
    why
}
