//! The trace: everything that happened in a run, in order, as typed events
//! with cause links. The sequence diagram, the "why" panel, golden tests and
//! `kafkascope run` all read it.

use serde::Serialize;

use crate::protocol::{BrokerId, Offset, TopicPartition};

pub use crate::protocol::RebalanceReason;

use super::config::ElectionType;
use super::config::Input;
use super::network::DropReason;
use super::types::{ErrorCode, MessageFacts, MessageName, NodeId, RecordId, Time};

mod text;

/// Identifies a trace event; causes point at earlier ids.
pub type TraceId = u64;

/// One thing that happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceEvent {
    /// Position in the trace.
    pub id: TraceId,
    /// Virtual time.
    pub time: Time,
    /// The event that led to this one, if known.
    pub cause: Option<TraceId>,
    /// What happened.
    pub kind: TraceKind,
}

/// How a transactional producer's transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransactionOutcome {
    /// `commitTransaction()` returned.
    Committed,
    /// `abortTransaction()` returned.
    Aborted,
    /// A newer instance (or the coordinator's timeout) fenced it: fatal,
    /// its unsent records fail.
    Fenced,
    /// Another fatal error (`INVALID_TXN_STATE` answering an `EndTxn`,
    /// as `TransactionManager`'s `EndTxnHandler` treats it): the
    /// application can only close the producer; its unsent records fail.
    Fatal(ErrorCode),
}

impl std::fmt::Display for TransactionOutcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TransactionOutcome::Committed => formatter.write_str("transaction committed"),
            TransactionOutcome::Aborted => formatter.write_str("transaction aborted"),
            TransactionOutcome::Fenced => {
                formatter.write_str("fenced (PRODUCER_FENCED): a newer epoch exists, it stops")
            }
            TransactionOutcome::Fatal(error) => {
                write!(formatter, "fatal error ({error}): it can only be closed, it stops")
            }
        }
    }
}

/// The safety properties checked after every event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Invariant {
    /// The leader's high watermark is never above the log end of an ISR member.
    HighWatermarkWithinIsr,
    /// A leader's high watermark never moves back within its epoch.
    HighWatermarkMonotonic,
    /// At most one broker leads a partition in a given leader epoch.
    OneLeaderPerEpoch,
    /// No record acknowledged under acks=all, min.insync.replicas >= 2 and
    /// clean elections is ever lost.
    NoAcknowledgedRecordLost,
    /// Consumers never read at or above the high watermark.
    ConsumerReadsBelowHighWatermark,
    /// Within one group generation, no partition has two owners among the
    /// members the group's coordinator counts in that generation (a member
    /// cut off from its coordinator keeps reading until it learns it was
    /// dropped, as Kafka's does).
    OneOwnerPerGeneration,
    /// At most one active controller per quorum epoch.
    OneActiveControllerPerEpoch,
    /// A `read_committed` consumer never returns a record of an aborted
    /// transaction (nor, as it reads below the last stable offset, of an
    /// undecided one).
    ReadCommittedSkipsAborted,
    /// A partition's last stable offset never passes its high watermark.
    LastStableOffsetWithinHighWatermark,
    /// A transaction is never decided to commit at a producer epoch older
    /// than one its coordinator has already handed out for that producer
    /// id (a fenced instance never commits). Not checked where unclean
    /// leader election may lose the coordinator's own records.
    FencedEpochNeverCommits,
    /// A leader's log start offset never passes its high watermark:
    /// retention deletes only what every in-sync replica has.
    LogStartWithinHighWatermark,
}

impl std::fmt::Display for Invariant {
    /// The promise that broke, in a sentence a learner reads.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Invariant::HighWatermarkWithinIsr => "a high watermark passed the log end of an in-sync replica",
            Invariant::HighWatermarkMonotonic => "a leader's high watermark moved back within its epoch",
            Invariant::OneLeaderPerEpoch => "two brokers led a partition in the same leader epoch",
            Invariant::NoAcknowledgedRecordLost => {
                "a record acknowledged with acks=all, min.insync.replicas of 2 or more and clean elections was lost"
            }
            Invariant::ConsumerReadsBelowHighWatermark => "a consumer read at or above the high watermark",
            Invariant::OneOwnerPerGeneration => "two members of one group generation owned the same partition",
            Invariant::OneActiveControllerPerEpoch => "two controllers were active in the same quorum epoch",
            Invariant::ReadCommittedSkipsAborted => {
                "a read_committed consumer returned a record of an aborted transaction"
            }
            Invariant::LastStableOffsetWithinHighWatermark => "a last stable offset passed its high watermark",
            Invariant::FencedEpochNeverCommits => "a fenced producer epoch committed a transaction",
            Invariant::LogStartWithinHighWatermark => "a log start offset passed its high watermark",
        })
    }
}

/// A member's partitions in a new generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberAssignment {
    /// The member id the coordinator gave it.
    pub member_id: String,
    /// The consumer it is.
    pub consumer: NodeId,
    /// Its partitions.
    pub partitions: Vec<TopicPartition>,
}

/// What happened to a broker (`Display` is the trace's text).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum BrokerChange {
    Started,
    /// Crashed; its disk survives.
    Killed,
    /// It lost power: its process died and its logs lost what was in the
    /// page cache only (past each one's recovery point).
    PowerLost,
    /// Stopped before it ever registered.
    StoppedUnregistered,
    /// A controlled shutdown took longer than Kafka waits for it.
    StoppedShutdownTimedOut,
    /// Stopped once its controlled shutdown was done.
    StoppedAfterControlledShutdown,
    /// It asked the controller for a controlled shutdown.
    AskedForControlledShutdown,
    /// The controller moves its leaderships and ISR places away.
    InControlledShutdown,
    #[serde(rename_all = "camelCase")]
    Paused {
        duration_ms: u64,
    },
    Resumed,
    /// It cut its copy of the metadata log back to where it matches the
    /// controller's.
    #[serde(rename_all = "camelCase")]
    TruncatedMetadataLog {
        length: usize,
        controller: u32,
        epoch: u32,
        end_offset: usize,
    },
}

impl std::fmt::Display for BrokerChange {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BrokerChange::Started => write!(formatter, "started"),
            BrokerChange::Killed => write!(formatter, "killed (its log stays on disk)"),
            BrokerChange::PowerLost => write!(
                formatter,
                "lost power: its process died, and what its logs held in the page cache only, never flushed to disk, is gone"
            ),
            BrokerChange::StoppedUnregistered => write!(formatter, "stopped (it was not registered)"),
            BrokerChange::StoppedShutdownTimedOut => {
                write!(formatter, "stopped: its controlled shutdown did not finish in time")
            }
            BrokerChange::StoppedAfterControlledShutdown => {
                write!(formatter, "stopped after a controlled shutdown (its log stays on disk)")
            }
            BrokerChange::AskedForControlledShutdown => write!(formatter, "asked for a controlled shutdown"),
            BrokerChange::InControlledShutdown => write!(
                formatter,
                "is in controlled shutdown: the controller moves its leaderships and ISR places first"
            ),
            BrokerChange::Paused { duration_ms } => write!(formatter, "paused for {duration_ms} ms"),
            BrokerChange::Resumed => write!(formatter, "resumed"),
            BrokerChange::TruncatedMetadataLog {
                length,
                controller,
                epoch,
                end_offset,
            } => write!(
                formatter,
                "truncated its metadata log to offset {length}: it diverged from controller-{controller}'s, where epoch {epoch} ends at offset {end_offset}"
            ),
        }
    }
}

/// What happened to a consumer (`Display` is the trace's text).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum ConsumerChange {
    Started {
        group: String,
    },
    /// A clean stop: it committed and left its group.
    Closed,
    Crashed,
    /// A request to this broker got no answer in `request.timeout.ms`: the
    /// client disconnects from it (`NetworkClient`).
    TimedOut {
        broker: BrokerId,
    },
    /// Another member took its `group.instance.id` (`FENCED_INSTANCE_ID`).
    Fenced,
    /// The coordinator refused it for good (`INCONSISTENT_GROUP_PROTOCOL`:
    /// its assignor is not one every member supports).
    Refused {
        error: crate::sim::types::ErrorCode,
    },
    /// Its process stopped (a garbage-collection pause).
    Paused {
        duration_ms: u64,
    },
    /// Its process runs again.
    Resumed,
    /// It did not call `poll()` within `max.poll.interval.ms`: it leaves
    /// its group and joins again at its next poll.
    PollTimeout {
        max_poll_interval_ms: u64,
    },
    /// KIP-848: it moved to a new member epoch, giving up `revoked` (after
    /// committing) or taking `added`.
    Reconciled {
        epoch: u32,
        added: Vec<TopicPartition>,
        revoked: Vec<TopicPartition>,
    },
    /// KIP-848: the coordinator no longer knows it at its epoch
    /// (`FENCED_MEMBER_EPOCH`, `UNKNOWN_MEMBER_ID`): it drops its
    /// partitions without committing and joins again at epoch 0.
    EpochFenced {
        error: crate::sim::types::ErrorCode,
    },
}

impl std::fmt::Display for ConsumerChange {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConsumerChange::Started { group } => write!(formatter, "started in group {group}"),
            ConsumerChange::Closed => write!(formatter, "closed (committed and left its group)"),
            ConsumerChange::Crashed => write!(formatter, "crashed"),
            ConsumerChange::Paused { duration_ms } => {
                write!(formatter, "pauses for {duration_ms} ms: no polls, no heartbeats")
            }
            ConsumerChange::Resumed => write!(formatter, "resumes"),
            ConsumerChange::Refused { error } => {
                let why = match error {
                    crate::sim::types::ErrorCode::InconsistentGroupProtocol => {
                        " (its assignor is not one every member supports)"
                    }
                    crate::sim::types::ErrorCode::UnsupportedAssignor => " (the broker has no such server-side assignor)",
                    crate::sim::types::ErrorCode::GroupIdNotFound => " (the group exists with the other protocol)",
                    _ => "",
                };
                write!(formatter, "was refused by its group's coordinator with {error}{why}; it stops")
            }
            ConsumerChange::Reconciled { epoch, added, revoked } => {
                let list = |partitions: &[TopicPartition]| {
                    partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
                };
                match (added.is_empty(), revoked.is_empty()) {
                    (_, false) => write!(
                        formatter,
                        "gives up [{}] (committed first) at member epoch {epoch}",
                        list(revoked)
                    ),
                    (false, true) => write!(formatter, "takes [{}] at member epoch {epoch}", list(added)),
                    (true, true) => write!(formatter, "is at member epoch {epoch} with no change of partitions"),
                }
            }
            ConsumerChange::EpochFenced { error } => write!(
                formatter,
                "was fenced ({error}): it drops its partitions without committing and joins again at epoch 0"
            ),
            ConsumerChange::PollTimeout { max_poll_interval_ms } => write!(
                formatter,
                "has not polled within max.poll.interval.ms ({max_poll_interval_ms} ms): it leaves the group and joins again at its next poll"
            ),
            ConsumerChange::Fenced => write!(
                formatter,
                "was fenced: another member joined with its group.instance.id (FENCED_INSTANCE_ID); it stops"
            ),
            ConsumerChange::TimedOut { broker } => write!(
                formatter,
                "got no answer from broker-{broker} within its request timeout: disconnects"
            ),
        }
    }
}

/// What happened to a controller (`Display` is the trace's text).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "kebab-case")]
pub enum ControllerChange {
    Started,
    /// Crashed; its metadata log survives.
    Killed,
    /// The active controller lost touch with a majority and resigned
    /// (`LeaderState#timeUntilCheckQuorumExpires`).
    Resigned {
        epoch: u32,
    },
    /// It lost its leader and asks for pre-votes (KIP-996).
    Prospective {
        epoch: u32,
    },
    /// It cut its metadata log back to where it matches the leader's.
    #[serde(rename_all = "camelCase")]
    TruncatedMetadataLog {
        length: usize,
        leader: u32,
        epoch: u32,
        end_offset: usize,
    },
}

impl std::fmt::Display for ControllerChange {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ControllerChange::Started => write!(formatter, "started"),
            ControllerChange::Killed => write!(formatter, "killed (its metadata log stays on disk)"),
            ControllerChange::Resigned { epoch } => write!(
                formatter,
                "resigned as active controller in epoch {epoch}: no word from a majority of the quorum within 1.5 × controller.quorum.fetch.timeout.ms"
            ),
            ControllerChange::Prospective { epoch } => write!(
                formatter,
                "is prospective in epoch {epoch}: it asks for pre-votes before standing for epoch {} (no leader heard within controller.quorum.fetch.timeout.ms, or its election timed out)",
                epoch + 1
            ),
            ControllerChange::TruncatedMetadataLog {
                length,
                leader,
                epoch,
                end_offset,
            } => write!(
                formatter,
                "truncated its metadata log to offset {length}: it diverged from controller-{leader}'s, where epoch {epoch} ends at offset {end_offset}"
            ),
        }
    }
}

/// Why the controller changed a partition's leader or ISR (`Display` is
/// the trace's text).
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum ChangeReason {
    /// `AlterPartition` from the leader, shrinking the ISR.
    FollowersFellBehind,
    /// `AlterPartition` from the leader, expanding the ISR.
    FollowerCaughtUp,
    /// The broker asked for a controlled shutdown.
    BrokerShuttingDown {
        broker: BrokerId,
    },
    BrokerFenced {
        broker: BrokerId,
    },
    BrokerUnfenced {
        broker: BrokerId,
    },
    /// It registered again after a crash (`handleBrokerUncleanShutdown`).
    UncleanRestart {
        broker: BrokerId,
    },
    /// `auto.leader.rebalance.enable`: back to the first replica.
    PreferredLeader {
        broker: BrokerId,
    },
    /// The controller's periodic unclean election pass.
    UncleanPass,
    /// `kafka-leader-election --election-type preferred`.
    OperatorPreferred,
    /// `kafka-leader-election --election-type unclean`.
    OperatorUnclean,
    /// The topic's `min.insync.replicas` changed: its ELRs are cleared
    /// (`ClearElrRecord`).
    MinInsyncReplicasChanged,
}

impl std::fmt::Display for ChangeReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChangeReason::FollowersFellBehind => {
                write!(formatter, "the leader reported followers that stopped catching up")
            }
            ChangeReason::FollowerCaughtUp => write!(formatter, "the leader reported a follower caught up"),
            ChangeReason::BrokerShuttingDown { broker } => write!(formatter, "broker-{broker} is shutting down"),
            ChangeReason::BrokerFenced { broker } => write!(formatter, "broker-{broker} was fenced"),
            ChangeReason::BrokerUnfenced { broker } => write!(formatter, "broker-{broker} was unfenced"),
            ChangeReason::UncleanRestart { broker } => {
                write!(formatter, "broker-{broker} restarted after an unclean shutdown")
            }
            ChangeReason::PreferredLeader { broker } => write!(
                formatter,
                "preferred leader election: broker-{broker} is the first replica (auto.leader.rebalance.enable)"
            ),
            ChangeReason::UncleanPass => write!(
                formatter,
                "the controller's periodic unclean leader election pass (unclean.leader.election.enable)"
            ),
            ChangeReason::OperatorPreferred => write!(
                formatter,
                "an operator's preferred leader election (kafka-leader-election --election-type preferred)"
            ),
            ChangeReason::OperatorUnclean => write!(
                formatter,
                "an operator's unclean leader election (kafka-leader-election --election-type unclean)"
            ),
            ChangeReason::MinInsyncReplicasChanged => write!(
                formatter,
                "min.insync.replicas changed, so the controller cleared the ELRs (ClearElrRecord)"
            ),
        }
    }
}

/// Why the controller fenced or unfenced a broker.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum FencingReason {
    /// No heartbeat within `broker.session.timeout.ms`.
    #[serde(rename_all = "camelCase")]
    SessionExpired { timeout_ms: u64 },
    /// Its controlled shutdown is done.
    ControlledShutdownDone,
    /// Its heartbeat shows it caught up with its own registration.
    #[serde(rename_all = "camelCase")]
    CaughtUp { metadata_offset: u64, broker_epoch: u64 },
}

impl std::fmt::Display for FencingReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FencingReason::SessionExpired { timeout_ms } => write!(
                formatter,
                "no heartbeat for more than broker.session.timeout.ms ({timeout_ms} ms)"
            ),
            FencingReason::ControlledShutdownDone => write!(formatter, "it finished a controlled shutdown"),
            FencingReason::CaughtUp {
                metadata_offset,
                broker_epoch,
            } => write!(
                formatter,
                "heartbeat shows metadata offset {metadata_offset} >= registration offset {broker_epoch}"
            ),
        }
    }
}

/// Why a controller stood for election.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CandidacyReason {
    /// A majority granted its pre-vote (KIP-996).
    PreVoteGranted,
}

impl std::fmt::Display for CandidacyReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CandidacyReason::PreVoteGranted => write!(formatter, "a majority granted its pre-vote"),
        }
    }
}

/// What made a leader look at its high watermark again.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "trigger", rename_all = "kebab-case")]
pub enum HighWatermarkTrigger {
    IsrChanged,
    BecameLeader,
    DuplicateBatch,
    LeaderAppended,
    /// A follower fetched from this offset (so it holds everything below).
    #[serde(rename_all = "camelCase")]
    Fetched {
        replica: BrokerId,
        fetch_offset: Offset,
    },
    OffsetCommitAppended,
    GenerationStored,
}

impl std::fmt::Display for HighWatermarkTrigger {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HighWatermarkTrigger::IsrChanged => write!(formatter, "the ISR changed"),
            HighWatermarkTrigger::BecameLeader => write!(formatter, "became leader"),
            HighWatermarkTrigger::DuplicateBatch => write!(formatter, "a duplicate batch arrived"),
            HighWatermarkTrigger::LeaderAppended => write!(formatter, "the leader appended"),
            HighWatermarkTrigger::Fetched { replica, fetch_offset } => {
                write!(formatter, "broker-{replica} fetched from offset {fetch_offset}")
            }
            HighWatermarkTrigger::OffsetCommitAppended => {
                write!(formatter, "the coordinator appended an offset commit")
            }
            HighWatermarkTrigger::GenerationStored => {
                write!(formatter, "the coordinator stored the group's generation")
            }
        }
    }
}

/// Why a replica's high watermark moved.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum HighWatermarkReason {
    /// The leader advanced it to the slowest counted replicas' log end.
    Advanced {
        trigger: HighWatermarkTrigger,
        slowest: Vec<BrokerId>,
    },
    /// A follower took the leader's from a fetch response.
    FromLeader,
}

impl HighWatermarkReason {
    /// In words, for a high watermark that moved to `to`.
    pub fn text(&self, to: Offset) -> String {
        match self {
            HighWatermarkReason::Advanced { trigger, slowest } => match slowest.as_slice() {
                [one] => format!("{trigger}; the slowest counted replica is broker-{one}"),
                several => format!(
                    "{trigger}; the slowest counted replicas, {}, are all at offset {to}",
                    broker_names(several)
                ),
            },
            HighWatermarkReason::FromLeader => "learned from the leader's fetch response".to_string(),
        }
    }
}

/// Why a follower cut its log back.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "kebab-case")]
pub enum TruncationReason {
    /// The leader's answer says where its epoch ends (KIP-101, KIP-279).
    #[serde(rename_all = "camelCase")]
    DivergingEpoch { epoch: u32, end_offset: Offset },
    /// The leader's log starts past this replica's log end: retention
    /// deleted what it would fetch next (`OFFSET_OUT_OF_RANGE`), so it
    /// empties its log and starts at the leader's log start.
    BelowLeaderLogStart,
    /// The broker lost power: the records past the log's recovery point
    /// were in the page cache only (on the next start `LogLoader` finds the
    /// files as the disk kept them).
    PowerLoss,
}

impl std::fmt::Display for TruncationReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TruncationReason::DivergingEpoch { epoch, end_offset } => {
                write!(formatter, "the leader's epoch {epoch} ends at offset {end_offset}")
            }
            TruncationReason::BelowLeaderLogStart => {
                formatter.write_str("the leader's log now starts past this log's end (OFFSET_OUT_OF_RANGE)")
            }
            TruncationReason::PowerLoss => formatter.write_str(
                "power was lost, and the records past the log's recovery point were in the page cache only, never flushed to disk",
            ),
        }
    }
}

/// Brokers by name, in order: `broker-1, broker-3`.
pub fn broker_names(brokers: &[BrokerId]) -> String {
    brokers
        .iter()
        .map(|broker| format!("broker-{broker}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why acknowledged records are gone, for one kind of record among them.
/// (Ordered as their texts sort, which is the order the trace lists them.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossCause {
    /// A power loss erased them from the replica that leads now before they
    /// were flushed (every replica that had them lost power, or the others
    /// could not lead).
    PowerLoss,
    /// `acks=1`: the leader answered before any follower had them.
    AcksOneUnreplicated,
    /// `acks=all`, and still not on the new leader (a configuration that
    /// is not safe, such as `min.insync.replicas=1`).
    AcksAllMissing,
    /// `acks=0`: nothing was promised.
    NoGuarantee,
    /// An unclean election chose a replica that did not have them.
    UncleanElection,
}

impl std::fmt::Display for LossCause {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            LossCause::PowerLoss => {
                "a power loss erased them from the replica that now leads before they were flushed to disk"
            }
            LossCause::AcksOneUnreplicated => "acknowledged with acks=1 by a leader that had not replicated them",
            LossCause::AcksAllMissing => "acknowledged with acks=all, yet missing from the new leader",
            LossCause::NoGuarantee => "acknowledged without a guarantee",
            LossCause::UncleanElection => "an unclean election made a replica outside the ISR the leader",
        })
    }
}

/// Why acknowledged records are gone: the kinds of guarantee they had, and
/// the leader that now leads without them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LossReason {
    /// Each kind among the lost records, in order.
    pub causes: Vec<LossCause>,
    /// The new leader.
    pub leader: BrokerId,
    /// Its leader epoch.
    pub leader_epoch: u32,
}

impl std::fmt::Display for LossReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let causes: Vec<String> = self.causes.iter().map(ToString::to_string).collect();
        write!(
            formatter,
            "{}; broker-{} now leads at epoch {} without them",
            causes.join("; "),
            self.leader,
            self.leader_epoch
        )
    }
}

/// The kinds of trace events. (Fields are named for what they hold.)
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum TraceKind {
    /// A scheduled input was applied.
    Input {
        description: String,
        /// The input itself.
        input: Box<Input>,
    },
    /// A message left a node.
    Sent {
        from: NodeId,
        to: NodeId,
        name: MessageName,
        summary: String,
        /// What the summary says, as typed facts.
        facts: Box<MessageFacts>,
    },
    /// A message arrived.
    Delivered {
        from: NodeId,
        to: NodeId,
        name: MessageName,
    },
    /// A message was lost.
    Dropped {
        from: NodeId,
        to: NodeId,
        name: MessageName,
        reason: DropReason,
    },
    /// A broker process started or stopped, or its state changed.
    BrokerStatus { broker: BrokerId, status: BrokerChange },
    /// The controller fenced or unfenced a broker.
    BrokerFencing {
        broker: BrokerId,
        fenced: bool,
        reason: FencingReason,
    },
    /// The controller chose a leader (or none).
    LeaderElected {
        partition: TopicPartition,
        leader: Option<BrokerId>,
        leader_epoch: u32,
        isr: Vec<BrokerId>,
        unclean: bool,
        reason: ChangeReason,
    },
    /// The controller committed an ISR change.
    IsrChanged {
        partition: TopicPartition,
        from: Vec<BrokerId>,
        to: Vec<BrokerId>,
        /// The eligible leader replicas after the change (KIP-966).
        elr: Vec<BrokerId>,
        partition_epoch: u32,
        reason: ChangeReason,
    },
    /// Records were appended to a replica's log.
    Appended {
        broker: BrokerId,
        partition: TopicPartition,
        first_offset: Offset,
        count: u64,
        leader_epoch: u32,
    },
    /// A replica's high watermark moved.
    HighWatermark {
        broker: BrokerId,
        partition: TopicPartition,
        from: Offset,
        to: Offset,
        reason: HighWatermarkReason,
    },
    /// A follower cut its log back to match the leader's.
    Truncated {
        broker: BrokerId,
        partition: TopicPartition,
        to_offset: Offset,
        removed: u64,
        reason: TruncationReason,
    },
    /// A producer's records were acknowledged.
    Acknowledged {
        producer: u32,
        partition: TopicPartition,
        base_offset: Option<Offset>,
        records: Vec<RecordId>,
    },
    /// A produce attempt failed.
    ProduceFailed {
        producer: u32,
        partition: TopicPartition,
        error: ErrorCode,
        records: Vec<RecordId>,
        will_retry: bool,
    },
    /// Acknowledged records are gone from the partition's leader.
    RecordsLost {
        partition: TopicPartition,
        records: Vec<RecordId>,
        reason: LossReason,
    },
    /// A safety property broke.
    InvariantViolated { invariant: Invariant, detail: String },
    /// A group finished a rebalance.
    GroupRebalanced {
        group: String,
        generation: u32,
        assignment: Vec<MemberAssignment>,
        reason: RebalanceReason,
    },
    /// KIP-848: a consumer group's coordinator stored a new target
    /// assignment at a new group epoch; each member moves to it on its own
    /// (revoking first), with no stop of the whole group.
    TargetAssignment {
        group: String,
        epoch: u32,
        assignment: Vec<MemberAssignment>,
        reason: RebalanceReason,
    },
    /// A group's handler processed records again: why, and whether an
    /// idempotent handler recognised and skipped them.
    ProcessedAgain {
        group: String,
        consumer: u32,
        partition: TopicPartition,
        from: Offset,
        to: Offset,
        count: u64,
        reason: DuplicateReason,
        skipped: bool,
    },
    /// A consumer crashed in the middle of a batch: how many records its
    /// handler finished, how many of those were not committed (they will
    /// be processed again), and which unprocessed offsets were already
    /// committed (nobody will process them).
    ProcessingInterrupted {
        group: String,
        consumer: u32,
        processed: u64,
        unprocessed: u64,
        uncommitted_processed: u64,
        committed_unprocessed: Vec<(TopicPartition, Offset, Offset)>,
        /// Exactly once: what it did is in a transaction that will abort.
        in_transaction: bool,
    },
    /// A consumer read records.
    Consumed {
        consumer: u32,
        partition: TopicPartition,
        from: Offset,
        to: Offset,
        high_watermark: Offset,
    },
    /// A group's offsets were committed to `__consumer_offsets`.
    OffsetsCommitted {
        group: String,
        offsets: Vec<(TopicPartition, Offset)>,
    },
    /// A consumer process started or stopped.
    ConsumerStatus { consumer: u32, status: ConsumerChange },
    /// A controller process started or stopped, or its role changed.
    ControllerStatus { controller: u32, status: ControllerChange },
    /// A controller became a candidate.
    ControllerElection {
        controller: u32,
        epoch: u32,
        reason: CandidacyReason,
    },
    /// A controller won the vote and is active.
    ControllerElected {
        controller: u32,
        epoch: u32,
        votes: Vec<u32>,
    },
    /// The run met one of kafkascope's limits ([`crate::limits`]) and refused
    /// to go past it (`what` names what was counted).
    LimitReached { what: String, limit: u64 },
    /// A partition leader wrote a transaction marker (a control record)
    /// for a producer's transaction.
    MarkerWritten {
        broker: BrokerId,
        partition: TopicPartition,
        producer_id: u64,
        control: crate::replication::transactions::ControlType,
        offset: Offset,
    },
    /// A transaction coordinator writes a transaction's new state to
    /// `__transaction_state`.
    TransactionState {
        transactional_id: String,
        producer_id: u64,
        producer_epoch: u16,
        state: crate::txn_coordinator::TxnState,
        partitions: Vec<TopicPartition>,
    },
    /// A transactional producer's transaction ended (its `EndTxn` was
    /// answered), or the producer was fenced.
    TransactionEnded {
        producer: u32,
        transactional_id: String,
        outcome: TransactionOutcome,
    },
    /// A consume-transform-produce app's transaction aborted: the records
    /// it processed in it count for nothing, and its positions go back to
    /// the last committed offsets to do them again.
    TransactionRolledBack {
        group: String,
        consumer: u32,
        records: u64,
        rewound: Vec<(TopicPartition, Offset)>,
    },
    /// A handler failed on a record (a poison record) as often as its
    /// policy allows and sent it to the dead letter queue: `dead_letter` is
    /// the record produced to `topic` (`<topic>.DLQ`).
    DeadLettered {
        group: String,
        consumer: u32,
        partition: TopicPartition,
        offset: Offset,
        attempts: u32,
        topic: String,
        dead_letter: super::types::RecordId,
    },
    /// A handler failed on a record as often as its policy allows and the
    /// exception stopped its member (it closed and left the group);
    /// `skipped` are the records of the same poll it never handled.
    HandlerFailed {
        group: String,
        consumer: u32,
        partition: TopicPartition,
        offset: Offset,
        attempts: u32,
        skipped: u64,
    },
    /// A broker's retention check deleted whole segments of a replica's
    /// log (`UnifiedLog#deleteOldSegments`); the log now starts at
    /// `log_start_offset`. Each segment: (base offset, bytes, why).
    SegmentsDeleted {
        broker: BrokerId,
        partition: TopicPartition,
        /// The bytes of all of them.
        bytes: u64,
        segments: Vec<(Offset, u64, crate::storage::DeletionReason)>,
        log_start_offset: Offset,
    },
    /// A broker's log cleaner compacted a replica's log (`Cleaner#clean`):
    /// only the latest record of each key is left below `checkpoint`.
    LogCleaned {
        broker: BrokerId,
        partition: TopicPartition,
        records_before: u64,
        records_after: u64,
        bytes_before: u64,
        bytes_after: u64,
        tombstones_removed: u64,
        /// Transaction markers removed: no batch of their transaction was
        /// left and their delete horizon had passed (`Cleaner#doClean`).
        #[serde(default, skip_serializing_if = "is_zero")]
        markers_removed: u64,
        checkpoint: Offset,
    },
    /// A broker answered a client over its byte-rate quota with a
    /// throttle time and muted its connection; the client sends that
    /// broker nothing until it is over (KIP-219). A throttled fetch is
    /// answered empty.
    Throttled {
        client: NodeId,
        broker: BrokerId,
        throttle_time_ms: u64,
        quota: super::config::QuotaType,
    },
    /// A consumer with `auto.offset.reset=none` owns a partition its group
    /// never committed an offset for: `poll()` throws
    /// `NoOffsetForPartitionException`.
    NoOffsetForPartition { client: NodeId, partition: TopicPartition },
    /// A consumer's position is no longer in the log (retention deleted
    /// it): `OFFSET_OUT_OF_RANGE`, and `auto.offset.reset` decides.
    OffsetOutOfRange {
        client: NodeId,
        partition: TopicPartition,
        position: Offset,
        reset: super::config::OffsetReset,
    },
    /// KIP-320: after a leader change a consumer's position is past the
    /// end of its last record's leader epoch on the new leader (or the
    /// leader knows no such epoch): the log it read was truncated under it
    /// (an unclean election). `diverging` is where the logs part (the end
    /// of that epoch); with `auto.offset.reset` set it seeks there (or,
    /// when unknown, resets), with `none` `poll()` throws
    /// `LogTruncationException`.
    LogTruncationDetected {
        client: NodeId,
        partition: TopicPartition,
        position: Offset,
        diverging: Option<Offset>,
        reset: super::config::OffsetReset,
    },
    /// A consumer moved its position as `auto.offset.reset` said.
    OffsetReset {
        client: NodeId,
        partition: TopicPartition,
        offset: Offset,
    },
    /// A knob change Kafka would refuse was not applied.
    ChangeRefused { change: String, reason: String },
    /// A partition leader recognised a batch it had already written (an
    /// idempotent producer's retry: same producer id, epoch and
    /// sequences) and answered with the original offsets instead of
    /// writing it again (`ProducerStateEntry#findDuplicateBatch`).
    DuplicateIgnored {
        broker: BrokerId,
        partition: TopicPartition,
        producer_id: u64,
        first_sequence: i32,
        last_sequence: i32,
        first_offset: Offset,
    },
    /// A partition leader refused a transaction's batch before writing it
    /// (KIP-890): the transaction coordinator says the partition is not in
    /// an open transaction of that producer and epoch, or the partition has
    /// seen a newer epoch, or the batch brought no valid verification.
    TransactionalWriteRefused {
        broker: BrokerId,
        partition: TopicPartition,
        producer_id: u64,
        producer_epoch: u16,
        error: ErrorCode,
    },
    /// A broker's log forgot producers idle past `producer.id.expiration.ms`.
    ProducersExpired {
        broker: BrokerId,
        partition: TopicPartition,
        producer_ids: Vec<u64>,
    },
    /// A broker read a client's request (`Produce` or `EndTxn`) and left it
    /// in its request queue (the `StallProduce` and `StallEndTxn` inputs):
    /// a handler takes it `delay_ms` later.
    RequestStalled {
        broker: BrokerId,
        client: NodeId,
        request: MessageName,
        delay_ms: u64,
    },
    /// An operator's `ElectLeaders` elected nobody for a partition (or, with
    /// no partition, for the whole request: no controller was active).
    ElectLeadersFailed {
        election_type: ElectionType,
        partition: Option<TopicPartition>,
        error: ErrorCode,
    },
    /// An operator's `CreatePartitions` committed: `topic` has `to`
    /// partitions where it had `from` (clients learn of them at their next
    /// metadata refresh).
    PartitionsCreated { topic: String, from: u32, to: u32 },
    /// An operator's `CreatePartitions` was refused (or, with
    /// `REQUEST_TIMED_OUT`, found no active controller).
    CreatePartitionsFailed {
        topic: String,
        count: u32,
        error: ErrorCode,
    },
    /// The active controller could not create an internal topic
    /// (`__consumer_offsets`, `__transaction_state`) on a client's first
    /// coordinator lookup: fewer usable brokers than its replication factor
    /// (`INVALID_REPLICATION_FACTOR`). Lookups answer
    /// `COORDINATOR_NOT_AVAILABLE` until it can.
    InternalTopicNotCreated {
        topic: String,
        replication_factor: u32,
        brokers: u32,
    },
}

impl TraceEvent {
    /// One line for `kafkascope run`.
    pub fn line(&self) -> String {
        format!("{:>8} ms  #{:<6} {}", self.time, self.id, self.text())
    }
}

/// A hash of a trace: equal hashes mean identical runs. FNV-1a over each
/// event's line, so it is the same natively and in wasm.
pub fn hash(events: &[TraceEvent]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for event in events {
        for byte in event.line().bytes().chain([b'\n']) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// `[3, 4, 5, 9]` as `3-5, 9`.
pub fn ranges(ids: &[RecordId]) -> String {
    let mut sorted = ids.to_vec();
    crate::sorting::sort_u64(&mut sorted);
    sorted.dedup();
    let mut parts = Vec::new();
    let mut index = 0;
    while index < sorted.len() {
        let start = sorted[index];
        let mut end = start;
        while index + 1 < sorted.len() && sorted[index + 1] == end + 1 {
            index += 1;
            end = sorted[index];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        index += 1;
    }
    parts.join(", ")
}

fn member_assignments(assignment: &[MemberAssignment]) -> String {
    assignment
        .iter()
        .map(|member| {
            format!(
                "{} <- [{}]",
                member.member_id,
                member
                    .partitions
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why a record was processed more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DuplicateReason {
    /// The producer retried without idempotence and the log holds the
    /// record twice, at two offsets.
    ProducerRetry,
    /// The member that processed it crashed before its offset was
    /// committed; the group read it again from the last commit.
    CrashBeforeCommit,
    /// Its partition moved (a rebalance, a fenced or timed-out member)
    /// before its offset was committed; the next owner read it again.
    RebalanceBeforeCommit,
}

impl std::fmt::Display for DuplicateReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            DuplicateReason::ProducerRetry => "the producer retried without idempotence, so the log holds it twice",
            DuplicateReason::CrashBeforeCommit => "its member crashed after processing it and before committing",
            DuplicateReason::RebalanceBeforeCommit => "its partition moved before its offset was committed",
        })
    }
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}
