//! A transactional producer's half of KIP-98 (`TransactionManager`): it
//! finds its transaction coordinator (`FindCoordinator`, key type
//! `TRANSACTION`), gets its producer id and epoch from it
//! (`InitProducerId` with its `transactional.id`, which fences any older
//! instance), adds each partition to the open transaction before its first
//! batch goes there (`AddPartitionsToTxn`; only added partitions are
//! drained), and ends the transaction with `EndTxn` once everything sent is
//! acknowledged (`commitTransaction()` flushes first). Records sent while a
//! transaction ends wait for the next one.
//!
//! Errors: `CONCURRENT_TRANSACTIONS` is retried after `retry.backoff.ms`;
//! `NOT_COORDINATOR`, `COORDINATOR_NOT_AVAILABLE`, a timeout or a broken
//! connection send it looking for the coordinator again;
//! `PRODUCER_FENCED` (or `INVALID_PRODUCER_EPOCH` on a produce) is fatal:
//! a newer instance took the transactional id, this one stops and its
//! unsent records fail. A batch that fails for good makes the transaction
//! abortable: the next commit aborts instead (Kafka's client throws and
//! the application aborts).
//!
//! Transaction version 2 (KIP-890 part 2, the default of a new Kafka 4.1
//! cluster): the producer sends no `AddPartitionsToTxn` or
//! `AddOffsetsToTxn` (partition leaders and the group coordinator add
//! their partitions), its requests say it runs version 2, and each
//! `EndTxn` answer hands it the bumped epoch (or a new producer id) for
//! the next transaction, with sequences from 0. It learns the cluster's
//! `transaction.version` from its coordinator's answers and switches only
//! between transactions (`maybeUpdateTransactionV2Enabled`); moving up to
//! version 2 bumps its epoch once with `InitProducerId`. Under versions 0
//! and 1 an abortable error (a failed batch) is followed, after the abort,
//! by an `InitProducerId` with its producer id and epoch, which bumps the
//! epoch (`clientSideEpochBumpRequired`).
//!
//! Simplification: `abortTransaction()` also sends what is buffered first
//! (Kafka fails unsent batches at once); either way the transaction's
//! records are aborted.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::protocol::transactions::TransactionVersion;
use crate::protocol::BrokerId;

use super::super::contexts::ProducerContext;
use super::super::trace::{TraceKind, TransactionOutcome};
use super::super::types::{ErrorCode, Message, RecordId, Time};
use super::super::Timer;
use super::Producer;

/// Where a transactional producer is (`TransactionManager.State`, reduced).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TxnPhase {
    /// No producer id yet (`initTransactions()` in progress).
    Initializing,
    /// A producer id and epoch, no transaction open.
    Ready,
    /// A transaction is open.
    InTransaction,
    /// Fenced by a newer instance (or by the coordinator's timeout): fatal.
    Fenced,
}

impl std::fmt::Display for TxnPhase {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            TxnPhase::Initializing => "initializing",
            TxnPhase::Ready => "ready",
            TxnPhase::InTransaction => "in a transaction",
            TxnPhase::Fenced => "fenced",
        })
    }
}

/// A request to the transaction coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum TxnCall {
    /// `FindCoordinator`.
    FindCoordinator,
    /// `InitProducerId`.
    InitProducerId,
    /// `AddPartitionsToTxn` for these partitions.
    AddPartitions(Vec<u32>),
    /// `EndTxn` (commit or abort).
    EndTxn(bool),
    /// `AddOffsetsToTxn` for the group.
    AddOffsets(String),
    /// `FindCoordinator` (key type `GROUP`) for the group whose offsets
    /// it commits.
    FindGroupCoordinator(String),
    /// `TxnOffsetCommit` to the group's coordinator.
    TxnOffsetCommit,
}

/// What `sendOffsetsToTransaction(offsets, groupMetadata)` was given:
/// the consumer's positions and its group metadata (KIP-447).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SendOffsets {
    /// `group.id`.
    pub group: String,
    /// The member's generation (its epoch under the consumer protocol).
    pub generation: i32,
    /// The member id.
    pub member_id: String,
    /// `group.instance.id`.
    pub instance: Option<String>,
    /// The positions to commit.
    pub offsets: Vec<(crate::protocol::TopicPartition, crate::protocol::Offset)>,
    /// The group's partition joined the transaction (`AddOffsetsToTxn`
    /// answered); next is the `TxnOffsetCommit`.
    pub added: bool,
}

/// A transactional producer's transaction state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TxnClient {
    /// `transactional.id`.
    pub transactional_id: String,
    /// The coordinator, once found.
    pub coordinator: Option<BrokerId>,
    /// Where it is.
    pub phase: TxnPhase,
    /// Partitions added to the open transaction.
    pub added: BTreeSet<u32>,
    /// The request out: its id, the broker, what it is.
    pub in_flight: Option<(u64, BrokerId, TxnCall)>,
    /// A failed request is sent again from this time on.
    pub retry_at: Time,
    /// `commitTransaction()` (true) or `abortTransaction()` (false) was
    /// called and has not returned.
    pub ending: Option<bool>,
    /// A batch of this transaction failed for good: it can only abort.
    pub abortable: bool,
    /// Records sent after `commitTransaction()` / `abortTransaction()`
    /// was called: they start the next transaction.
    pub held: std::collections::VecDeque<(RecordId, Option<String>, u32)>,
    /// Offsets to send in the open transaction, until the group
    /// coordinator has them.
    pub offsets: Option<SendOffsets>,
    /// The open transaction holds offsets (its group's partition joined).
    pub offsets_added: bool,
    /// The coordinator of the group whose offsets it sends, once found.
    pub group_coordinator: Option<BrokerId>,
    /// Transactions committed and aborted so far.
    pub committed: u64,
    /// See `committed`.
    pub aborted: u64,
    /// It runs transaction version 2 (`isTransactionV2Enabled`).
    pub v2: bool,
    /// The `transaction.version` its coordinator last said the cluster
    /// has finalized.
    pub finalized: Option<TransactionVersion>,
    /// The protocol of the `EndTxn` under way (its retries keep it).
    pub ending_v2: Option<bool>,
    /// After this transaction ends, bump the epoch with `InitProducerId`
    /// (`clientSideEpochBumpRequired`).
    pub epoch_bump_required: bool,
    /// The fatal error that stopped it (`TransactionManager#lastError`):
    /// every batch still incomplete fails with it.
    pub fatal: Option<ErrorCode>,
}

impl TxnClient {
    /// A producer with `transactional.id` set, before `initTransactions()`.
    pub fn new(transactional_id: String) -> TxnClient {
        TxnClient {
            transactional_id,
            coordinator: None,
            phase: TxnPhase::Initializing,
            added: BTreeSet::new(),
            in_flight: None,
            retry_at: 0,
            ending: None,
            abortable: false,
            held: std::collections::VecDeque::new(),
            offsets: None,
            offsets_added: false,
            group_coordinator: None,
            committed: 0,
            aborted: 0,
            v2: false,
            finalized: None,
            ending_v2: None,
            epoch_bump_required: false,
            fatal: None,
        }
    }

    /// `maybeUpdateTransactionV2Enabled`: the protocol follows the level the
    /// cluster finalized; moving up to version 2 between transactions (not
    /// at `initTransactions()`) bumps the epoch once.
    fn follow_finalized(&mut self, on_init: bool) {
        let Some(finalized) = self.finalized else { return };
        let v2 = finalized.supports_epoch_bump();
        if v2 && !self.v2 && !on_init {
            self.epoch_bump_required = true;
        }
        self.v2 = v2;
    }
}

impl Producer {
    /// The transaction work before a drain; returns the partitions whose
    /// batches may be sent now (`None`: not transactional, all may).
    pub(crate) fn txn_step(&mut self, context: &mut ProducerContext) -> Option<BTreeSet<u32>> {
        let now = context.now();
        let state = &*self;
        let txn = state.txn.as_ref()?;
        let none = Some(BTreeSet::new());
        match txn.phase {
            TxnPhase::Fenced => return none,
            TxnPhase::Initializing => {
                if txn.in_flight.is_none() {
                    if now < txn.retry_at {
                        let wait = txn.retry_at - now;
                        context.timer(wait, Timer::ProducerDrain);
                    } else if txn.coordinator.is_none() {
                        self.txn_send(context, TxnCall::FindCoordinator);
                    } else {
                        self.txn_send(context, TxnCall::InitProducerId);
                    }
                }
                return none;
            }
            TxnPhase::Ready | TxnPhase::InTransaction => {}
        }
        if txn.v2 {
            // Version 2 (`maybeAddPartition`): a partition with records is
            // in the transaction as far as the producer knows; its leader
            // adds it to the coordinator's when the first batch arrives.
            let new: Vec<u32> = state
                .batches
                .iter()
                .filter(|(partition, queue)| !queue.is_empty() && !txn.added.contains(partition))
                .map(|(&partition, _)| partition)
                .collect();
            if !new.is_empty() {
                let txn = self.txn.as_mut().expect("transactional");
                txn.added.extend(new);
                txn.phase = TxnPhase::InTransaction;
            }
        }
        let state = &*self;
        let txn = state.txn.as_ref()?;
        let added = txn.added.clone();
        if matches!(txn.in_flight, Some((_, _, TxnCall::EndTxn(_)))) {
            return none;
        }
        if txn.in_flight.is_some() {
            return Some(added);
        }
        if now < txn.retry_at {
            let wait = txn.retry_at - now;
            context.timer(wait, Timer::ProducerDrain);
            return Some(added);
        }
        if txn.coordinator.is_none() {
            self.txn_send(context, TxnCall::FindCoordinator);
            return Some(added);
        }
        // Partitions with records and not in the transaction yet
        // (`TransactionManager#maybeAddPartition`).
        let new: Vec<u32> = state
            .batches
            .iter()
            .filter(|(partition, queue)| !queue.is_empty() && !added.contains(partition))
            .map(|(&partition, _)| partition)
            .collect();
        if !new.is_empty() {
            self.txn_send(context, TxnCall::AddPartitions(new));
            return Some(added);
        }
        // `sendOffsetsToTransaction`: `AddOffsetsToTxn`, then the
        // `TxnOffsetCommit` to the group's coordinator.
        if let Some(offsets) = &txn.offsets {
            let call = if !offsets.added && !txn.v2 {
                TxnCall::AddOffsets(offsets.group.clone())
            } else if txn.group_coordinator.is_none() {
                TxnCall::FindGroupCoordinator(offsets.group.clone())
            } else {
                TxnCall::TxnOffsetCommit
            };
            self.txn_send(context, call);
            return Some(added);
        }
        let flushed = state.waiting.is_empty()
            && state.batches.values().all(|queue| queue.is_empty())
            && state.in_flight.is_empty();
        if let (Some(commit), true) = (txn.ending, flushed) {
            let commit = commit && !txn.abortable;
            if added.is_empty() && !txn.offsets_added {
                // Nothing was sent in it: it ends on the client alone.
                self.txn_ended(context, commit);
            } else {
                self.txn_send(context, TxnCall::EndTxn(commit));
            }
            return none;
        }
        Some(added)
    }

    /// Sends a request to the coordinator (or, to find it, to a broker in
    /// turn), with a timeout of `request.timeout.ms`.
    fn txn_send(&mut self, context: &mut ProducerContext, call: TxnCall) {
        let brokers = context.brokers();
        let state = &mut *self;
        let Some(txn) = state.txn.as_ref() else { return };
        let broker = match (&call, txn.coordinator, txn.group_coordinator) {
            (TxnCall::TxnOffsetCommit, _, Some(group_coordinator)) => group_coordinator,
            (TxnCall::FindCoordinator | TxnCall::FindGroupCoordinator(_), _, _) | (_, None, _) => {
                let broker = state.bootstrap_attempt % brokers.max(1) + 1;
                state.bootstrap_attempt += 1;
                broker
            }
            (_, Some(coordinator), _) => coordinator,
        };
        state.next_request += 1;
        let request = state.next_request;
        let transactional_id = txn.transactional_id.clone();
        let producer_id = state.producer_id.unwrap_or(0);
        let epoch = state.epoch;
        let timeout = state.config.request_timeout_ms;
        let end_v2 = txn.ending_v2.unwrap_or(txn.v2);
        let message = match &call {
            TxnCall::FindCoordinator => Message::FindTxnCoordinator { transactional_id },
            TxnCall::InitProducerId => Message::InitProducerId {
                request,
                transactional_id: Some(transactional_id),
                transaction_timeout_ms: state.config.transaction_timeout_ms,
                expected: (txn.epoch_bump_required && state.producer_id.is_some()).then_some((producer_id, epoch)),
            },
            TxnCall::AddPartitions(partitions) => Message::AddPartitionsToTxn {
                request,
                transactional_id,
                producer_id,
                epoch,
                partitions: partitions
                    .iter()
                    .map(|&partition| crate::protocol::TopicPartition {
                        topic: state.topic_name(),
                        partition,
                    })
                    .collect(),
            },
            TxnCall::EndTxn(commit) => Message::EndTxn {
                request,
                transactional_id,
                producer_id,
                epoch,
                commit: *commit,
                transaction_v2: end_v2,
            },
            TxnCall::AddOffsets(group) => Message::AddOffsetsToTxn {
                request,
                transactional_id,
                producer_id,
                epoch,
                group: group.clone(),
            },
            TxnCall::FindGroupCoordinator(group) => Message::FindCoordinator { group: group.clone() },
            TxnCall::TxnOffsetCommit => {
                let Some(offsets) = txn.offsets.as_ref() else { return };
                Message::TxnOffsetCommit {
                    request,
                    transactional_id,
                    group: offsets.group.clone(),
                    producer_id,
                    epoch,
                    generation: offsets.generation,
                    member_id: offsets.member_id.clone(),
                    instance: offsets.instance.clone(),
                    offsets: offsets.offsets.clone(),
                    transaction_v2: txn.v2,
                }
            }
        };
        let commits = matches!(call, TxnCall::EndTxn(true));
        if let Some(txn) = state.txn.as_mut() {
            if let TxnCall::EndTxn(_) = call {
                // `beginCompletingTransaction`: the request keeps the
                // protocol it was built with; the next transaction follows
                // what the cluster finalized.
                if txn.ending_v2.is_none() {
                    txn.ending_v2 = Some(end_v2);
                    txn.follow_finalized(false);
                }
            }
            txn.in_flight = Some((request, broker, call));
        }
        if commits {
            context.commit_sent();
        }
        context.send(broker, message);
        context.timer(timeout, Timer::ProducerRequestTimeout(request));
    }

    /// The request out failed in a way that calls for the coordinator
    /// again (a timeout, a disconnect, `NOT_COORDINATOR`): it is sent again
    /// after `retry.backoff.ms`, to the coordinator found anew.
    pub(crate) fn txn_lost(&mut self, context: &mut ProducerContext, rediscover: bool) {
        let now = context.now();
        let backoff = self.config.retry_backoff_ms;
        let Some(txn) = self.txn.as_mut() else { return };
        let to_group = matches!(
            txn.in_flight,
            Some((_, _, TxnCall::TxnOffsetCommit | TxnCall::FindGroupCoordinator(_)))
        );
        txn.in_flight = None;
        if rediscover && to_group {
            txn.group_coordinator = None;
        } else if rediscover {
            txn.coordinator = None;
        }
        txn.retry_at = now + backoff;
        context.timer(backoff, Timer::ProducerDrain);
    }

    /// Whether `request` is the transaction request out.
    pub(crate) fn txn_waits_for(&self, request: u64) -> bool {
        self.txn
            .as_ref()
            .is_some_and(|txn| txn.in_flight.as_ref().is_some_and(|(out, _, _)| *out == request))
    }

    /// A connection to `broker` broke: a transaction request on it is lost.
    pub(crate) fn txn_disconnected(&mut self, context: &mut ProducerContext, broker: BrokerId) {
        let lost = self
            .txn
            .as_ref()
            .is_some_and(|txn| txn.in_flight.as_ref().is_some_and(|(_, to, _)| *to == broker));
        if lost {
            self.txn_lost(context, true);
        }
    }

    /// Answers from brokers to a transactional producer's requests;
    /// returns `false` for other messages.
    pub(crate) fn txn_receive(&mut self, context: &mut ProducerContext, message: &Message) -> bool {
        let Some(txn) = self.txn.as_ref() else {
            return false;
        };
        let out = txn.in_flight.clone();
        match message {
            Message::FindTxnCoordinatorResponse { coordinator, .. } => {
                if !matches!(out, Some((_, _, TxnCall::FindCoordinator))) {
                    return true;
                }
                match coordinator {
                    Some(coordinator) => {
                        let txn = self.txn.as_mut().expect("transactional");
                        txn.coordinator = Some(*coordinator);
                        txn.in_flight = None;
                        self.drain(context);
                    }
                    None => self.txn_lost(context, true),
                }
                true
            }
            Message::InitProducerIdResponse {
                request,
                result,
                finalized,
            } => {
                self.txn.as_mut().expect("transactional").finalized = Some(*finalized);
                self.txn_init_answer(context, out, request, result);
                true
            }
            Message::AddPartitionsToTxnResponse { request, error } => {
                let Some(TxnCall::AddPartitions(partitions)) = answered(out, *request) else {
                    return true;
                };
                match error {
                    None => {
                        let txn = self.txn.as_mut().expect("transactional");
                        txn.in_flight = None;
                        txn.phase = TxnPhase::InTransaction;
                        txn.added.extend(partitions);
                        self.drain(context);
                    }
                    Some(error) => self.txn_error(context, *error),
                }
                true
            }
            Message::FindCoordinatorResponse { coordinator, .. } => {
                if !matches!(out, Some((_, _, TxnCall::FindGroupCoordinator(_)))) {
                    return true;
                }
                match coordinator {
                    Some(coordinator) => {
                        let txn = self.txn.as_mut().expect("transactional");
                        txn.group_coordinator = Some(*coordinator);
                        txn.in_flight = None;
                        self.drain(context);
                    }
                    None => self.txn_lost(context, true),
                }
                true
            }
            Message::AddOffsetsToTxnResponse { request, error } => {
                self.txn_offsets_added(context, out, request, error);
                true
            }
            Message::TxnOffsetCommitResponse { request, error, .. } => {
                self.txn_offsets_committed(context, out, request, error);
                true
            }
            Message::EndTxnResponse {
                request,
                error,
                producer: next,
                finalized,
            } => {
                self.txn.as_mut().expect("transactional").finalized = Some(*finalized);
                let Some(TxnCall::EndTxn(commit)) = answered(out, *request) else {
                    return true;
                };
                match error {
                    None => {
                        if let Some((producer_id, epoch)) = next {
                            // Version 2: the next transaction runs at the
                            // bumped epoch (or a new producer id), its
                            // sequences from 0 (`EndTxnHandler`,
                            // `resetSequenceNumbers`).
                            self.producer_id = Some(*producer_id);
                            self.epoch = *epoch;
                            self.sequences.clear();
                            self.acked_sequences.clear();
                        }
                        self.txn_ended(context, commit);
                    }
                    Some(error) => self.txn_error(context, *error),
                }
                true
            }
            _ => false,
        }
    }

    /// An `InitProducerIdResponse` from the transaction coordinator: the
    /// producer's id and epoch, ready for a transaction.
    fn txn_init_answer(
        &mut self,
        context: &mut ProducerContext,
        out: Option<(u64, BrokerId, TxnCall)>,
        request: &u64,
        result: &Result<(u64, u16), ErrorCode>,
    ) {
        if !matches!(answered(out, *request), Some(TxnCall::InitProducerId)) {
            return;
        }
        match result {
            Ok((producer_id, epoch)) => {
                let state = &mut *self;
                state.producer_id = Some(*producer_id);
                state.epoch = *epoch;
                state.sequences.clear();
                state.acked_sequences.clear();
                let txn = state.txn.as_mut().expect("transactional");
                txn.in_flight = None;
                txn.phase = TxnPhase::Ready;
                txn.epoch_bump_required = false;
                txn.follow_finalized(true);
                self.drain(context);
            }
            Err(error) => self.txn_error(context, *error),
        }
    }

    /// An `AddOffsetsToTxnResponse`: the group's offsets partition is in the
    /// transaction.
    fn txn_offsets_added(
        &mut self,
        context: &mut ProducerContext,
        out: Option<(u64, BrokerId, TxnCall)>,
        request: &u64,
        error: &Option<ErrorCode>,
    ) {
        if !matches!(answered(out, *request), Some(TxnCall::AddOffsets(_))) {
            return;
        }
        match error {
            None => {
                let txn = self.txn.as_mut().expect("transactional");
                txn.in_flight = None;
                txn.phase = TxnPhase::InTransaction;
                txn.offsets_added = true;
                if let Some(offsets) = txn.offsets.as_mut() {
                    offsets.added = true;
                }
                self.drain(context);
            }
            Some(error) => self.txn_error(context, *error),
        }
    }

    /// A `TxnOffsetCommitResponse`: the consumer's positions are pending in the
    /// transaction, or what its error asks for.
    fn txn_offsets_committed(
        &mut self,
        context: &mut ProducerContext,
        out: Option<(u64, BrokerId, TxnCall)>,
        request: &u64,
        error: &Option<ErrorCode>,
    ) {
        if !matches!(answered(out, *request), Some(TxnCall::TxnOffsetCommit)) {
            return;
        }
        // `TransactionManager.TxnOffsetCommitHandler`.
        match error {
            None => {
                let txn = self.txn.as_mut().expect("transactional");
                txn.in_flight = None;
                txn.offsets = None;
                self.drain(context);
            }
            Some(ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable) => self.txn_lost(context, true),
            Some(
                ErrorCode::RequestTimedOut | ErrorCode::UnknownTopicOrPartition | ErrorCode::ConcurrentTransactions,
            ) => self.txn_lost(context, false),
            Some(ErrorCode::UnknownMemberId | ErrorCode::IllegalGeneration | ErrorCode::FencedInstanceId) => {
                // "consumer group metadata mismatch": the member
                // lost its partitions; the transaction can only
                // abort (`CommitFailedException`, abortable).
                let txn = self.txn.as_mut().expect("transactional");
                txn.in_flight = None;
                txn.offsets = None;
                txn.abortable = true;
                self.drain(context);
            }
            Some(error) => self.txn_error(context, *error),
        }
    }

    /// A coordinator's error: retried, sent to a new coordinator, or fatal.
    fn txn_error(&mut self, context: &mut ProducerContext, error: ErrorCode) {
        match error {
            ErrorCode::ConcurrentTransactions => self.txn_lost(context, false),
            ErrorCode::NotCoordinator | ErrorCode::CoordinatorNotAvailable | ErrorCode::NetworkException => {
                self.txn_lost(context, true)
            }
            _ => self.txn_fatal(context, error),
        }
    }

    /// `commitTransaction()` or `abortTransaction()` returned.
    fn txn_ended(&mut self, context: &mut ProducerContext, commit: bool) {
        let Some(txn) = self.txn.as_mut() else { return };
        txn.in_flight = None;
        if txn.ending_v2.is_none() {
            // Ended with no `EndTxn` (nothing was sent in it): the next
            // transaction still follows the cluster's level.
            txn.follow_finalized(false);
        }
        txn.ending_v2 = None;
        // `resetTransactionState`: ready, or first an epoch bump
        // (`InitProducerId` with its id and epoch).
        txn.phase = if txn.epoch_bump_required {
            TxnPhase::Initializing
        } else {
            TxnPhase::Ready
        };
        txn.added.clear();
        txn.ending = None;
        txn.offsets = None;
        txn.offsets_added = false;
        let held = std::mem::take(&mut txn.held);
        txn.abortable = false;
        if commit {
            txn.committed += 1;
        } else {
            txn.aborted += 1;
        }
        let transactional_id = txn.transactional_id.clone();
        context.trace(TraceKind::TransactionEnded {
            producer: self.id,
            transactional_id,
            outcome: if commit {
                TransactionOutcome::Committed
            } else {
                TransactionOutcome::Aborted
            },
        });
        // Records sent meanwhile start the next transaction.
        self.waiting.extend(held);
        self.partition_waiting(context);
        self.drain(context);
        context.tell_app(Some(commit));
    }

    /// `sendOffsetsToTransaction(offsets, groupMetadata)`: the offsets go
    /// in the open transaction (sent before it ends).
    pub(crate) fn send_offsets(&mut self, context: &mut ProducerContext, offsets: SendOffsets) {
        let Some(txn) = self.txn.as_mut() else { return };
        if txn.phase == TxnPhase::Fenced || offsets.offsets.is_empty() {
            return;
        }
        if txn.v2 {
            // `transactionStarted`: no `AddOffsetsToTxn` under version 2.
            txn.offsets_added = true;
            txn.phase = TxnPhase::InTransaction;
        }
        txn.offsets = Some(offsets);
        self.drain(context);
    }

    /// A batch of the open transaction failed for good (or another error
    /// the transaction cannot survive): it can only abort
    /// (`maybeTransitionToErrorState`). Under versions 0 and 1 the abort is
    /// followed by an epoch bump (`clientSideEpochBumpRequired`); under
    /// version 2 the abort's `EndTxn` bumps it.
    pub(crate) fn txn_abortable(&mut self) {
        let Some(txn) = self.txn.as_mut() else { return };
        txn.abortable = true;
        if !txn.v2 && txn.ending.is_none() {
            txn.epoch_bump_required = true;
        }
    }

    /// Fatal: a newer epoch exists (`PRODUCER_FENCED`), or another fatal
    /// error. The producer stops; what it has not sent fails.
    pub(crate) fn txn_fatal(&mut self, context: &mut ProducerContext, error: ErrorCode) {
        let Some(txn) = self.txn.as_mut() else {
            return;
        };
        if txn.phase == TxnPhase::Fenced {
            return;
        }
        txn.phase = TxnPhase::Fenced;
        txn.in_flight = None;
        txn.ending = None;
        txn.offsets = None;
        let transactional_id = txn.transactional_id.clone();
        context.trace(TraceKind::TransactionEnded {
            producer: self.id,
            transactional_id,
            outcome: match error {
                ErrorCode::ProducerFenced | ErrorCode::InvalidProducerEpoch => TransactionOutcome::Fenced,
                error => TransactionOutcome::Fatal(error),
            },
        });
        let error = match error {
            ErrorCode::InvalidProducerEpoch => ErrorCode::ProducerFenced,
            error => error,
        };
        if let Some(txn) = self.txn.as_mut() {
            txn.fatal = Some(error);
        }
        self.fail_unsent(context, error);
        context.tell_app(None);
    }

    /// The `commitTransaction` / `abortTransaction` inputs.
    pub(crate) fn end_transaction(&mut self, context: &mut ProducerContext, commit: bool) {
        let Some(txn) = self.txn.as_mut() else { return };
        if txn.phase == TxnPhase::Fenced || txn.ending.is_some() {
            return;
        }
        txn.ending = Some(commit);
        self.drain(context);
    }

    /// Holds a record sent while a transaction ends for the next one;
    /// returns it back when no transaction is ending.
    pub(crate) fn txn_hold(
        &mut self,
        record: (RecordId, Option<String>, u32),
    ) -> Option<(RecordId, Option<String>, u32)> {
        match self.txn.as_mut() {
            Some(txn) if txn.ending.is_some() => {
                txn.held.push_back(record);
                None
            }
            _ => Some(record),
        }
    }
}

/// The call an answer to `request` is for, if it is the request out
/// (a late answer to an older one is ignored).
fn answered(out: Option<(u64, BrokerId, TxnCall)>, request: u64) -> Option<TxnCall> {
    out.filter(|(waiting, _, _)| *waiting == request)
        .map(|(_, _, call)| call)
}
