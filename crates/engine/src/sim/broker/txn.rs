//! The transaction coordinator on the brokers (KIP-98): a transactional id
//! lives on the broker that leads its `__transaction_state` partition
//! (`abs(transactionalId.hashCode()) % transaction.state.log.num.partitions`),
//! found with `FindCoordinator` (key type `TRANSACTION`), as a group lives
//! on its `__consumer_offsets` partition. That broker runs the partition's
//! [`TxnShard`] ([`crate::txn_coordinator`]):
//!
//! - `InitProducerId`, `AddPartitionsToTxn` and `EndTxn` go to the shard;
//!   each change of a transaction is a record appended to the partition and
//!   replicated, and the client's answer waits for the high watermark to
//!   pass it (`TransactionStateManager#appendTransactionToLog`);
//! - a decided transaction's markers go out as `WriteTxnMarkers` to the
//!   leader of each of its partitions (`TransactionMarkerChannelManager`),
//!   which writes the control record and answers once it is replicated;
//!   unanswered or failed markers are sent again, to the leader the
//!   coordinator knows then; once every partition has its marker the
//!   complete state is written;
//! - the coordinator epoch is the partition's leader epoch; a new leader
//!   loads the transactions from the partition's records and finishes the
//!   decided ones;
//! - every `transaction.abort.timed.out.transaction.cleanup.interval.ms`
//!   it aborts transactions past their `transaction.timeout.ms`, fencing
//!   their producers.
//!
//! Simplifications: one marker request per partition (Kafka batches the
//! markers for one broker into one request); the coordinator's own appends
//! wait `offsets.commit.timeout.ms` like the group coordinator's.

use crate::sorting::Gather;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::protocol::transactions::TransactionVersion;
use crate::protocol::TopicPartition;
use crate::txn_coordinator::{
    Decision, MarkerRequest, TxnError, TxnRecord, TxnReply, TxnShard, ABORT_TIMED_OUT_INTERVAL_MS,
};

use super::coordinator::{CommitRecord, COMMIT_RECORD_BASE};
use super::Broker;
use crate::sim::contexts::BrokerContext;
use crate::sim::purgatory::ParkedReply;
use crate::sim::trace::{HighWatermarkTrigger, TraceKind};
use crate::sim::types::{ErrorCode, Message, NodeId, TxnMarker};
use crate::sim::Timer;

pub use crate::protocol::TRANSACTION_STATE_TOPIC;

/// How often a coordinator looks at markers still unanswered (and sends
/// them again after [`MARKER_RESEND_MS`]).
const TICK_MS: u64 = 500;

/// A marker request unanswered this long is sent again.
const MARKER_RESEND_MS: u64 = 5_000;

/// Which client request waits for a write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Waiting {
    /// `InitProducerId` (its request id); `fencing` when the write aborts
    /// what an older instance left open.
    InitProducerId {
        /// The request id.
        request: u64,
        /// Whether it fences an open transaction first.
        fencing: bool,
    },
    /// `AddPartitionsToTxn`.
    AddPartitions {
        /// The request id.
        request: u64,
    },
    /// `EndTxn`.
    EndTxn {
        /// The request id.
        request: u64,
    },
    /// `AddOffsetsToTxn`.
    AddOffsets {
        /// The request id.
        request: u64,
    },
    /// A partition leader's `AddPartitionsToTxn` (KIP-890 part 2).
    LeaderAdd {
        /// The leader's request id.
        request: u64,
        /// Its partitions.
        partitions: Vec<TopicPartition>,
    },
}

/// A coordinator write waiting for the high watermark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingTxnWrite {
    /// Its transactional id.
    pub transactional_id: String,
    /// The client and request waiting for it, if any (and the connection
    /// the request came on: an answer goes back on it or nowhere).
    pub client: Option<(NodeId, u32, Waiting)>,
}

/// The markers of one decided transaction still to be written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkersOut {
    /// What to write.
    pub request: MarkerRequest,
    /// Partitions without their marker yet, and when the last request for
    /// each went out (none: to send).
    pub remaining: BTreeMap<TopicPartition, Option<u64>>,
}

/// One `__transaction_state` partition's coordinator on its leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TxnCoordinator {
    /// The transactions.
    pub shard: TxnShard,
    /// The coordinator epoch (the partition's leader epoch).
    pub epoch: i32,
    writes: BTreeMap<u64, PendingTxnWrite>,
    next_write: u64,
    /// Decided transactions whose markers are out, by transactional id.
    pub markers: BTreeMap<String, MarkersOut>,
    /// When it last looked for timed-out transactions.
    last_timeout_check: u64,
}

fn error_code(error: TxnError) -> ErrorCode {
    match error {
        TxnError::ConcurrentTransactions => ErrorCode::ConcurrentTransactions,
        TxnError::ProducerFenced => ErrorCode::ProducerFenced,
        TxnError::InvalidProducerIdMapping => ErrorCode::InvalidProducerIdMapping,
        TxnError::InvalidTxnState => ErrorCode::InvalidTxnState,
        TxnError::InvalidTransactionTimeout => ErrorCode::InvalidTransactionTimeout,
        TxnError::NotCoordinator => ErrorCode::NotCoordinator,
        TxnError::TransactionAbortable => ErrorCode::TransactionAbortable,
    }
}

/// The simulation's producer epoch as Kafka's `short`, and back.
fn short(epoch: u16) -> i16 {
    i16::try_from(epoch).unwrap_or(i16::MAX)
}
fn unsigned(epoch: i16) -> u16 {
    u16::try_from(epoch).unwrap_or(0)
}

impl Broker {
    /// The broker took or lost leadership of a `__transaction_state`
    /// partition: the old coordinator unloads (writes still waiting fail
    /// with `NOT_COORDINATOR`); a new leader loads the transactions from
    /// the partition's records and sends the markers of decided ones
    /// (`TransactionStateManager#loadTransactionsForTxnTopicPartition`).
    pub(crate) fn txn_partition_changed(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        leading: bool,
    ) {
        if let Some(coordinator) = self.txn_coordinators.remove(partition) {
            for pending in coordinator.writes.into_values() {
                if let Some((client, connection, waiting)) = pending.client {
                    self.txn_answer(context, client, connection, waiting, Err(ErrorCode::NotCoordinator));
                }
            }
        }
        if !leading {
            return;
        }
        let Some(log) = self.logs.get(partition) else {
            return;
        };
        let epoch = self
            .leading
            .get(partition)
            .map_or(0, |leader| i32::try_from(leader.leader_epoch).unwrap_or(i32::MAX));
        let mut shard = TxnShard::default();
        for record in log.records() {
            if record.id < COMMIT_RECORD_BASE {
                continue;
            }
            if let Some(CommitRecord::Transaction(txn)) = context.commit_record(record.id) {
                shard.replay(txn);
            }
        }
        let resend = shard.on_loaded();
        let now = context.now();
        self.txn_coordinators.insert(
            partition.clone(),
            TxnCoordinator {
                shard,
                epoch,
                writes: BTreeMap::new(),
                next_write: 0,
                markers: BTreeMap::new(),
                last_timeout_check: now,
            },
        );
        for request in resend {
            self.txn_send_markers(context, partition, request);
        }
        self.txn_arm_tick(context, partition);
    }

    /// The coordinator's next periodic tick.
    fn txn_arm_tick(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition) {
        let incarnation = self.incarnation;
        context.timer(incarnation, TICK_MS, Timer::TxnTick(partition.clone()));
    }

    /// Handles transaction requests and marker answers; returns `false`
    /// for other messages.
    pub(crate) fn txn_receive(&mut self, context: &mut BrokerContext<'_>, from: NodeId, message: &Message) -> bool {
        let (transactional_id, waiting) = match message {
            Message::FindTxnCoordinator { transactional_id } => {
                self.txn_find_coordinator(context, from, transactional_id);
                return true;
            }
            Message::WriteTxnMarkers { .. } => {
                self.txn_marker_request(context, from, message);
                return true;
            }
            Message::WriteTxnMarkersResponse {
                transactional_id,
                partition,
                error,
            } => {
                self.txn_marker_answered(context, transactional_id, partition, *error);
                return true;
            }
            Message::LeaderAddPartitionsToTxn {
                request,
                transactional_id,
                verify_only: true,
                ..
            } => {
                self.txn_verify(context, from, message, transactional_id, *request);
                return true;
            }
            Message::LeaderAddPartitionsToTxn {
                request,
                transactional_id,
                partitions,
                ..
            } => (
                transactional_id.clone(),
                Waiting::LeaderAdd {
                    request: *request,
                    partitions: partitions.clone(),
                },
            ),
            Message::InitProducerId {
                request,
                transactional_id: Some(transactional_id),
                ..
            } => (
                transactional_id.clone(),
                Waiting::InitProducerId {
                    request: *request,
                    fencing: false,
                },
            ),
            Message::AddPartitionsToTxn {
                request,
                transactional_id,
                ..
            } => (transactional_id.clone(), Waiting::AddPartitions { request: *request }),
            Message::EndTxn {
                request,
                transactional_id,
                ..
            } => (transactional_id.clone(), Waiting::EndTxn { request: *request }),
            Message::AddOffsetsToTxn {
                request,
                transactional_id,
                ..
            } => (transactional_id.clone(), Waiting::AddOffsets { request: *request }),
            _ => return false,
        };
        let connection = context.connection(from);
        let partition = context.txn_partition(&transactional_id);
        if !self.txn_coordinators.contains_key(&partition) {
            self.txn_answer(context, from, connection, waiting, Err(ErrorCode::NotCoordinator));
            return true;
        }
        let Some((decision, waiting)) = self.txn_decide(context, &partition, &transactional_id, message, waiting)
        else {
            return false;
        };
        match decision {
            Decision::Answer(result) => self.txn_answer(context, from, connection, waiting, result.map_err(error_code)),
            Decision::Write(record) => self.txn_write(context, &partition, record, Some((from, connection, waiting))),
        }
        true
    }

    /// A leader's `AddPartitionsToTxn` with `verifyOnly=true` (KIP-890
    /// part 1): answered at once, nothing written.
    fn txn_verify(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        message: &Message,
        transactional_id: &str,
        request: u64,
    ) {
        let Message::LeaderAddPartitionsToTxn {
            producer_id,
            epoch,
            partitions,
            ..
        } = message
        else {
            return;
        };
        let txn_partition = context.txn_partition(transactional_id);
        let results = match self.txn_coordinators.get(&txn_partition) {
            None => partitions
                .iter()
                .map(|partition| (partition.clone(), Some(ErrorCode::NotCoordinator)))
                .collect(),
            Some(coordinator) => coordinator
                .shard
                .verify_partitions(transactional_id, *producer_id, short(*epoch), partitions)
                .into_iter()
                .map(|(partition, result)| (partition, result.err().map(error_code)))
                .collect(),
        };
        context.send(from, Message::LeaderAddPartitionsToTxnResponse { request, results });
    }

    /// `FindCoordinator` for a transactional id: the leader of its
    /// `__transaction_state` partition as this broker's metadata knows it.
    fn txn_find_coordinator(&mut self, context: &mut BrokerContext<'_>, from: NodeId, transactional_id: &str) {
        let partition = context.txn_partition(transactional_id);
        let (known, coordinator) = self.coordinator_as_known(&partition);
        if !known {
            context.create_transaction_topic();
        }
        let reply = Message::FindTxnCoordinatorResponse {
            transactional_id: transactional_id.to_string(),
            coordinator,
        };
        context.send(from, reply);
    }

    /// `WriteTxnMarkers` on a partition this broker leads: the marker is
    /// written and answered once replicated, or refused at once.
    fn txn_marker_request(&mut self, context: &mut BrokerContext<'_>, from: NodeId, message: &Message) {
        let Message::WriteTxnMarkers {
            transactional_id,
            producer_id,
            epoch,
            coordinator_epoch,
            control,
            partition,
        } = message
        else {
            return;
        };
        let marker = TxnMarker {
            control: *control,
            coordinator_epoch: *coordinator_epoch,
        };
        match self.write_txn_marker(context, partition, *producer_id, *epoch, marker) {
            Ok(offset) => self.leader_park_reply(
                context,
                partition,
                from,
                offset,
                1,
                ParkedReply::TxnMarker {
                    transactional_id: transactional_id.clone(),
                },
            ),
            Err(error) => context.send(
                from,
                Message::WriteTxnMarkersResponse {
                    transactional_id: transactional_id.clone(),
                    partition: partition.clone(),
                    error: Some(error),
                },
            ),
        }
    }

    /// What the transaction coordinator decides on a request for
    /// `transactional_id`: an answer, or a record to write first.
    fn txn_decide(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        transactional_id: &str,
        message: &Message,
        waiting: Waiting,
    ) -> Option<(Decision, Waiting)> {
        let now = context.now();
        Some(match message {
            Message::InitProducerId {
                transaction_timeout_ms,
                expected,
                ..
            } => self.txn_decide_init(
                context,
                partition,
                transactional_id,
                (*transaction_timeout_ms, *expected),
                waiting,
            ),
            Message::AddPartitionsToTxn {
                producer_id,
                epoch,
                partitions,
                ..
            }
            | Message::LeaderAddPartitionsToTxn {
                producer_id,
                epoch,
                partitions,
                ..
            } => {
                // From the producer: versions 0 and 1; from a partition
                // leader (`AddPartitionsToTxn` v4 and above): version 2.
                let version = if matches!(message, Message::LeaderAddPartitionsToTxn { .. }) {
                    TransactionVersion::TV_2
                } else {
                    TransactionVersion::TV_0
                };
                let coordinator = self.txn_coordinators.get_mut(partition).expect("checked");
                let decision = coordinator.shard.add_partitions(
                    transactional_id,
                    *producer_id,
                    short(*epoch),
                    partitions,
                    now,
                    version,
                );
                (decision, waiting)
            }
            Message::AddOffsetsToTxn {
                producer_id,
                epoch,
                group,
                ..
            } => {
                // The group's `__consumer_offsets` partition joins the
                // transaction (`TransactionCoordinator#handleAddPartitionsToTransaction`
                // with `partitionFor(groupId)`), so its marker settles the
                // offsets.
                let offsets_partition = context.offsets_partition(group);
                let coordinator = self.txn_coordinators.get_mut(partition).expect("checked");
                let decision = coordinator.shard.add_partitions(
                    transactional_id,
                    *producer_id,
                    short(*epoch),
                    &[offsets_partition],
                    now,
                    TransactionVersion::TV_0,
                );
                (decision, waiting)
            }
            Message::EndTxn {
                producer_id,
                epoch,
                commit,
                transaction_v2,
                ..
            } => {
                // `transactionVersionForEndTxn`: the request's version
                // decides, not the cluster's feature.
                let version = if *transaction_v2 {
                    TransactionVersion::TV_2
                } else {
                    TransactionVersion::TV_0
                };
                let new_producer_id = self.txn_new_producer_id(partition, transactional_id);
                let coordinator = self.txn_coordinators.get_mut(partition).expect("checked");
                let decision = coordinator.shard.end_txn(
                    transactional_id,
                    *producer_id,
                    short(*epoch),
                    *commit,
                    now,
                    version,
                    new_producer_id,
                );
                (decision, waiting)
            }
            _ => return None,
        })
    }

    /// `InitProducerId` (`TransactionCoordinator#handleInitProducerId`):
    /// the decision, and whether it fences an ongoing transaction (the
    /// answer then waits for its abort). `asked` is the request's
    /// transaction timeout and the producer id and epoch it expects.
    fn txn_decide_init(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        transactional_id: &str,
        asked: (u64, Option<(u64, u16)>),
        waiting: Waiting,
    ) -> (Decision, Waiting) {
        let (transaction_timeout_ms, expected) = asked;
        let new_producer_id = self.txn_new_producer_id(partition, transactional_id);
        let server_version = self.transaction_version(context);
        let coordinator = self.txn_coordinators.get_mut(partition).expect("checked");
        let ongoing = coordinator
            .shard
            .get(transactional_id)
            .is_some_and(|txn| txn.state == crate::txn_coordinator::TxnState::Ongoing);
        let expected = expected.map(|(producer_id, epoch)| (producer_id, short(epoch)));
        let decision = coordinator.shard.init_producer_id(
            transactional_id,
            transaction_timeout_ms,
            new_producer_id,
            expected,
            server_version,
        );
        let Waiting::InitProducerId { request, .. } = waiting else {
            unreachable!()
        };
        (
            decision,
            Waiting::InitProducerId {
                request,
                fencing: ongoing,
            },
        )
    }

    /// A producer id for a request that may need one (a new transactional
    /// id, or an epoch about to run out), taken from this broker's block;
    /// otherwise the id's own.
    fn txn_new_producer_id(&mut self, partition: &TopicPartition, transactional_id: &str) -> u64 {
        let shard = &self.txn_coordinators[partition].shard;
        match shard.get(transactional_id) {
            Some(txn) if !shard.needs_new_producer_id(transactional_id) => txn.producer_id,
            _ => self.next_producer_id(),
        }
    }

    /// Appends a transaction record and parks it until the high watermark
    /// passes it.
    fn txn_write(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        record: TxnRecord,
        client: Option<(NodeId, u32, Waiting)>,
    ) {
        let id = self.id;
        // The epoch the producer ended with: version 2 bumps it in the
        // prepare state and keeps the one before.
        let epoch = unsigned(if record.metadata.client_version.supports_epoch_bump() {
            record.metadata.last_producer_epoch
        } else {
            record.metadata.producer_epoch
        });
        let newer = context
            .handed_epoch(record.metadata.producer_id)
            .filter(|handed| *handed > epoch);
        if let (crate::txn_coordinator::TxnState::PrepareCommit, Some(handed), false) = (
            record.metadata.state,
            newer,
            context.config().unclean_leader_election_enable,
        ) {
            context.violation();
            context.trace(TraceKind::InvariantViolated {
                invariant: crate::sim::trace::Invariant::FencedEpochNeverCommits,
                detail: format!(
                    "{} decided to commit at producer epoch {epoch}, but epoch {handed} was already handed out",
                    record.transactional_id
                ),
            });
        }
        context.trace(TraceKind::TransactionState {
            transactional_id: record.transactional_id.clone(),
            producer_id: record.metadata.producer_id,
            producer_epoch: unsigned(record.metadata.producer_epoch),
            state: record.metadata.state,
            partitions: record.metadata.partitions.iter().cloned().collect(),
        });
        let pending = PendingTxnWrite {
            transactional_id: record.transactional_id.clone(),
            client,
        };
        let Some(offset) = self.coordinator_append(context, partition, CommitRecord::Transaction(record)) else {
            self.txn_write_done(context, partition, pending, Err(ErrorCode::NotCoordinator));
            return;
        };
        let Some(coordinator) = self.txn_coordinators.get_mut(partition) else {
            return;
        };
        coordinator.next_write += 1;
        let write = coordinator.next_write;
        coordinator.writes.insert(write, pending);
        self.leader_park_reply(
            context,
            partition,
            NodeId::Broker(id),
            offset,
            1,
            ParkedReply::TxnWrite { write },
        );
        self.leader_release_held_fetches_pub(context, partition);
        self.leader_maybe_advance_hw_pub(context, partition, HighWatermarkTrigger::LeaderAppended);
    }

    /// A parked transaction write is committed (or failed).
    pub(crate) fn txn_parked_done(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        write: u64,
        result: Result<(), ErrorCode>,
    ) {
        let Some(pending) = self
            .txn_coordinators
            .get_mut(partition)
            .and_then(|coordinator| coordinator.writes.remove(&write))
        else {
            return;
        };
        self.txn_write_done(context, partition, pending, result);
    }

    fn txn_write_done(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        pending: PendingTxnWrite,
        result: Result<(), ErrorCode>,
    ) {
        let Some(coordinator) = self.txn_coordinators.get_mut(partition) else {
            return;
        };
        let transactional_id = pending.transactional_id;
        if result.is_err() {
            let answer = coordinator.shard.write_failed(&transactional_id).map_err(error_code);
            // A decided transaction whose complete state could not be
            // written (it was not replicated in time) is written again at
            // the next tick, as `TransactionMarkerChannelManager#tryAppendToLog`
            // retries while it is still the coordinator.
            if !coordinator.markers.contains_key(&transactional_id) {
                if let Some(request) = coordinator.shard.marker_request(&transactional_id) {
                    coordinator.markers.insert(
                        transactional_id.clone(),
                        MarkersOut {
                            request,
                            remaining: BTreeMap::new(),
                        },
                    );
                }
            }
            if let Some((client, connection, waiting)) = pending.client {
                self.txn_answer(context, client, connection, waiting, answer);
            }
            return;
        }
        let fencing = matches!(
            pending.client,
            Some((_, _, Waiting::InitProducerId { fencing: true, .. }))
        );
        let after = coordinator.shard.committed(&transactional_id, fencing);
        if let (Some((client, connection, waiting)), Some(reply)) = (pending.client, after.reply) {
            self.txn_answer(context, client, connection, waiting, reply.map_err(error_code));
        }
        if let Some(markers) = after.markers {
            self.txn_send_markers(context, partition, markers);
        }
    }

    /// Answers a client's transaction request on the connection it came on.
    fn txn_answer(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        connection: u32,
        waiting: Waiting,
        result: Result<TxnReply, ErrorCode>,
    ) {
        if context.connection(client) != connection {
            return;
        }
        if let (Waiting::InitProducerId { .. }, Ok(TxnReply::ProducerIdAndEpoch(producer_id, epoch))) =
            (&waiting, &result)
        {
            context.note_handed_epoch(*producer_id, unsigned(*epoch));
        }
        let error = result.as_ref().err().copied();
        let finalized = self.transaction_version(context);
        let message = match waiting {
            Waiting::InitProducerId { request, .. } => Message::InitProducerIdResponse {
                request,
                result: match result {
                    Ok(TxnReply::ProducerIdAndEpoch(producer_id, epoch)) => Ok((producer_id, unsigned(epoch))),
                    Ok(TxnReply::Done | TxnReply::Ended(_)) => Err(ErrorCode::ConcurrentTransactions),
                    Err(error) => Err(error),
                },
                finalized,
            },
            Waiting::AddPartitions { request } => Message::AddPartitionsToTxnResponse { request, error },
            Waiting::EndTxn { request } => Message::EndTxnResponse {
                request,
                error,
                producer: match result {
                    Ok(TxnReply::Ended(Some((producer_id, epoch)))) => Some((producer_id, unsigned(epoch))),
                    _ => None,
                },
                finalized,
            },
            Waiting::AddOffsets { request } => Message::AddOffsetsToTxnResponse { request, error },
            Waiting::LeaderAdd { request, partitions } => Message::LeaderAddPartitionsToTxnResponse {
                request,
                results: partitions.into_iter().map(|partition| (partition, error)).collect(),
            },
        };
        context.send(client, message);
    }

    /// Sends the markers of a decided transaction to its partitions'
    /// leaders; a transaction with no partitions completes at once.
    fn txn_send_markers(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        request: MarkerRequest,
    ) {
        let Some(coordinator) = self.txn_coordinators.get_mut(partition) else {
            return;
        };
        let transactional_id = request.transactional_id.clone();
        let remaining = request
            .partitions
            .iter()
            .map(|partition| (partition.clone(), None))
            .gather();
        coordinator
            .markers
            .insert(transactional_id.clone(), MarkersOut { request, remaining });
        self.txn_flush_markers(context, partition, &transactional_id);
    }

    /// Sends the markers not yet sent (or sent too long ago) of one
    /// transaction, each to the leader this broker knows; one without a
    /// known leader waits for the next tick.
    fn txn_flush_markers(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        transactional_id: &str,
    ) {
        let now = context.now();
        let Some(coordinator) = self.txn_coordinators.get(partition) else {
            return;
        };
        let epoch = coordinator.epoch;
        let Some(out) = coordinator.markers.get(transactional_id) else {
            return;
        };
        if out.remaining.is_empty() {
            let complete = self.txn_coordinators.get_mut(partition).and_then(|coordinator| {
                coordinator.markers.remove(transactional_id);
                coordinator.shard.markers_written(transactional_id)
            });
            if let Some(record) = complete {
                self.txn_write(context, partition, record, None);
            }
            return;
        }
        let request = out.request.clone();
        let due: Vec<TopicPartition> = out
            .remaining
            .iter()
            .filter(|(_, sent)| sent.is_none_or(|sent| now >= sent + MARKER_RESEND_MS))
            .map(|(partition, _)| partition.clone())
            .collect();
        for target in due {
            let leader = self
                .metadata
                .as_ref()
                .and_then(|image| image.partitions.get(&target))
                .and_then(|registration| registration.leader);
            let Some(leader) = leader else { continue };
            if let Some(out) = self
                .txn_coordinators
                .get_mut(partition)
                .and_then(|coordinator| coordinator.markers.get_mut(transactional_id))
            {
                out.remaining.insert(target.clone(), Some(now));
            }
            context.send(
                NodeId::Broker(leader),
                Message::WriteTxnMarkers {
                    transactional_id: transactional_id.to_string(),
                    producer_id: request.producer_id,
                    epoch: unsigned(request.producer_epoch),
                    coordinator_epoch: epoch,
                    control: request.control,
                    partition: target,
                },
            );
        }
    }

    /// A partition leader answered a marker request
    /// (`TransactionMarkerRequestCompletionHandler`): written, or already
    /// superseded there (a newer producer epoch or coordinator), the
    /// partition is done; any other error sends it again at the next tick.
    fn txn_marker_answered(
        &mut self,
        context: &mut BrokerContext<'_>,
        transactional_id: &str,
        target: &TopicPartition,
        error: Option<ErrorCode>,
    ) {
        let partition = context.txn_partition(transactional_id);
        let Some(out) = self
            .txn_coordinators
            .get_mut(&partition)
            .and_then(|coordinator| coordinator.markers.get_mut(transactional_id))
        else {
            return;
        };
        match error {
            None | Some(ErrorCode::InvalidProducerEpoch | ErrorCode::TransactionCoordinatorFenced) => {
                out.remaining.remove(target);
                self.txn_flush_markers(context, &partition, transactional_id);
            }
            Some(_) => {
                out.remaining.insert(target.clone(), None);
            }
        }
    }

    /// A parked marker is replicated (or failed): the coordinator hears.
    pub(crate) fn txn_marker_parked_done(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        coordinator: NodeId,
        transactional_id: String,
        result: Result<(), ErrorCode>,
    ) {
        context.send(
            coordinator,
            Message::WriteTxnMarkersResponse {
                transactional_id,
                partition: partition.clone(),
                error: result.err(),
            },
        );
    }

    /// The coordinator's periodic work: markers to send again, and every
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms` the
    /// transactions past their timeout aborted.
    pub(crate) fn txn_tick(&mut self, context: &mut BrokerContext<'_>, partition: &TopicPartition) {
        let now = context.now();
        let server_version = self.transaction_version(context);
        let Some(coordinator) = self.txn_coordinators.get_mut(partition) else {
            return;
        };
        let mut timed_out = Vec::new();
        if now >= coordinator.last_timeout_check + ABORT_TIMED_OUT_INTERVAL_MS {
            coordinator.last_timeout_check = now;
            timed_out = coordinator.shard.abort_timed_out(now, server_version);
        }
        let waiting: Vec<String> = coordinator.markers.keys().cloned().collect();
        for record in timed_out {
            self.txn_write(context, partition, record, None);
        }
        for transactional_id in waiting {
            self.txn_flush_markers(context, partition, &transactional_id);
        }
        self.txn_arm_tick(context, partition);
    }
}
