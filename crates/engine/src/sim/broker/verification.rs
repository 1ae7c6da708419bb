//! KIP-890 on the partition leader: before a partition takes the first
//! batch of a producer's transaction, its leader asks the transaction
//! coordinator (`ReplicaManager#maybeSendPartitionsToTransactionCoordinator`,
//! `AddPartitionsToTxnManager`, Kafka 4.1).
//!
//! - Under transaction version 2 (a `Produce` v12 and above) the leader
//!   *adds* the partition to the transaction (`AddPartitionsToTxn` with
//!   `verifyOnly=false`): the producer sends no `AddPartitionsToTxn` of its
//!   own.
//! - Under versions 0 and 1, with `transaction.partition.verification.enable`
//!   (true by default), it only *verifies* that the producer added it
//!   (`verifyOnly=true`, KIP-890 part 1). A produce that arrives late,
//!   after its transaction was aborted, is refused (`TRANSACTION_ABORTABLE`)
//!   instead of opening a transaction no coordinator knows: a hanging
//!   transaction, which would hold back the last stable offset for good.
//! - A batch of the transaction already open on the partition needs
//!   neither; one with an epoch older than the partition's producer state
//!   is refused at once (`INVALID_PRODUCER_EPOCH`, Kafka 4.1).
//! - Each verification has a guard (`VerificationGuard`) kept in the
//!   partition's producer state; the batch is appended only if the guard
//!   is still there, so a marker written between the answer and the
//!   append cannot let a stale batch in (see
//!   [`crate::replication::idempotence::ProducerStateTable::maybe_start_verification`]).
//! - The coordinator's errors reach the producer as Kafka translates them
//!   (`postVerificationCallback`): a coordinator that cannot be reached or
//!   is moving becomes `NOT_ENOUGH_REPLICAS`, which the producer retries;
//!   `PRODUCER_FENCED` becomes `INVALID_PRODUCER_EPOCH`. Under version 2
//!   a `CONCURRENT_TRANSACTIONS` (the previous transaction's markers are
//!   still out) is retried by the broker every 20 ms for up to 100 ms
//!   (`add.partitions.to.txn.retry.backoff.ms` and `.max.ms`), then
//!   answered as it is; the producer retries it.
//!
//! A group coordinator asks the same for its `__consumer_offsets`
//! partition before it writes a `TxnOffsetCommit`'s offsets
//! (`CoordinatorPartitionWriter#maybeStartTransactionVerification`).
//!
//! Simplification: only the batches that need the coordinator wait for
//! it; Kafka holds the whole produce request until the answer.

use serde::Serialize;

use crate::protocol::acks::Acks;
use crate::protocol::records::ProducerBatch;
use crate::protocol::{BrokerId, TopicPartition};
use crate::replication::idempotence::SENTINEL_GUARD;

use super::Broker;
use crate::sim::contexts::BrokerContext;
use crate::sim::types::{ErrorCode, Message, NodeId, Time};
use crate::sim::Timer;

/// `add.partitions.to.txn.retry.backoff.ms` (20).
const RETRY_BACKOFF_MS: u64 = 20;
/// `add.partitions.to.txn.retry.backoff.max.ms` (100).
const RETRY_BACKOFF_MAX_MS: u64 = 100;
/// The broker's own `request.timeout.ms` (30000) for its requests to the
/// transaction coordinator.
const REQUEST_TIMEOUT_MS: u64 = 30_000;

/// What waits for a verification's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Waiting {
    /// Transactional batches of a produce request, each with its guard.
    Produce {
        /// The producer.
        client: NodeId,
        /// Its request id.
        request: u64,
        /// The request's `acks`.
        acks: Acks,
        /// The request's `timeoutMs`.
        timeout_ms: u64,
        /// The batches waiting, with their guards.
        batches: Vec<(TopicPartition, ProducerBatch, u64)>,
    },
    /// A `TxnOffsetCommit` to a group this broker coordinates, with the
    /// guard on its `__consumer_offsets` partition.
    TxnOffsetCommit {
        /// The producer that sent it.
        client: NodeId,
        /// The request.
        message: Message,
        /// The offsets partition.
        partition: TopicPartition,
        /// The guard.
        guard: u64,
    },
}

/// A verification out to a transaction coordinator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verification {
    /// Whose transaction.
    pub transactional_id: String,
    /// The producer id.
    pub producer_id: u64,
    /// The producer epoch.
    pub epoch: u16,
    /// Add (version 2) rather than verify.
    pub transaction_v2: bool,
    /// The coordinator asked.
    pub coordinator: BrokerId,
    /// When it started (the version 2 retries stop 100 ms later).
    pub started_ms: Time,
    /// What waits for it.
    pub waiting: Waiting,
}

impl Verification {
    fn partitions(&self) -> Vec<TopicPartition> {
        match &self.waiting {
            Waiting::Produce { batches, .. } => batches.iter().map(|(partition, _, _)| partition.clone()).collect(),
            Waiting::TxnOffsetCommit { partition, .. } => vec![partition.clone()],
        }
    }

    /// Every partition's answer: `error`.
    fn failed(&self, error: ErrorCode) -> Vec<(TopicPartition, Option<ErrorCode>)> {
        self.partitions()
            .into_iter()
            .map(|partition| (partition, Some(error)))
            .collect()
    }
}

/// The producer's error for a verification's answer, as
/// `AddPartitionsToTxnManager` and `ReplicaManager#postVerificationCallback`
/// translate it for a 4.1 client (`Produce` v11 and above).
fn produce_error(error: ErrorCode, transaction_v2: bool) -> ErrorCode {
    match error {
        ErrorCode::ProducerFenced => ErrorCode::InvalidProducerEpoch,
        ErrorCode::NetworkException | ErrorCode::CoordinatorNotAvailable | ErrorCode::NotCoordinator => {
            ErrorCode::NotEnoughReplicas
        }
        ErrorCode::ConcurrentTransactions if !transaction_v2 => ErrorCode::NotEnoughReplicas,
        other => other,
    }
}

/// The `TxnOffsetCommit` error for it (`GroupCoordinatorService`
/// normalizes an unreachable transaction coordinator to
/// `COORDINATOR_NOT_AVAILABLE`).
fn offsets_error(error: ErrorCode) -> ErrorCode {
    match produce_error(error, true) {
        ErrorCode::NotEnoughReplicas => ErrorCode::CoordinatorNotAvailable,
        other => other,
    }
}

impl Broker {
    /// The transactional batches of a produce request that must ask the
    /// transaction coordinator first are held; the others are returned,
    /// each with the guard its append is checked with.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn leader_verify_batches(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        request: u64,
        acks: Acks,
        timeout_ms: u64,
        transactional_id: Option<String>,
        transaction_v2: bool,
        batches: Vec<(TopicPartition, ProducerBatch)>,
    ) -> Vec<(TopicPartition, ProducerBatch, Option<u64>)> {
        let verifying = transaction_v2 || context.config().transaction_partition_verification_enable;
        let Some(transactional_id) = transactional_id.filter(|_| verifying) else {
            let guard = context.log_guard(SENTINEL_GUARD);
            return batches
                .into_iter()
                .map(|(partition, batch)| (partition, batch, guard))
                .collect();
        };
        let mut ready = Vec::new();
        let mut held = Vec::new();
        let mut stamp = None;
        for (partition, batch) in batches {
            let (Some((producer_id, epoch, sequence)), true) = (batch.idempotence, batch.transactional) else {
                ready.push((partition, batch, context.log_guard(SENTINEL_GUARD)));
                continue;
            };
            let leading = self.leading.contains_key(&partition);
            let Some(log) = self.logs.get_mut(&partition).filter(|_| leading) else {
                // Not the leader: the append answers NOT_LEADER_OR_FOLLOWER
                // before anything is verified.
                ready.push((partition, batch, context.log_guard(SENTINEL_GUARD)));
                continue;
            };
            let short = i16::try_from(epoch).unwrap_or(i16::MAX);
            match log
                .producers
                .maybe_start_verification(producer_id, sequence, short, transaction_v2)
            {
                Err(_) => {
                    self.record_refused(context, &partition, &batch, ErrorCode::InvalidProducerEpoch);
                    self.verification_refused(
                        context,
                        client,
                        request,
                        acks,
                        &partition,
                        ErrorCode::InvalidProducerEpoch,
                    )
                }
                Ok(SENTINEL_GUARD) => ready.push((partition, batch, context.log_guard(SENTINEL_GUARD))),
                Ok(guard) => {
                    stamp = Some((producer_id, epoch));
                    held.push((partition, batch, guard));
                }
            }
        }
        if let Some((producer_id, epoch)) = stamp {
            let waiting = Waiting::Produce {
                client,
                request,
                acks,
                timeout_ms,
                batches: held,
            };
            self.verification_start(context, transactional_id, producer_id, epoch, transaction_v2, waiting);
        }
        ready
    }

    /// Traces a transaction's batch kept out of the log.
    pub(crate) fn record_refused(
        &mut self,
        context: &mut BrokerContext<'_>,
        partition: &TopicPartition,
        batch: &ProducerBatch,
        error: ErrorCode,
    ) {
        let id = self.id;
        let Some((producer_id, producer_epoch, _)) = batch.idempotence else {
            return;
        };
        context.trace(crate::sim::trace::TraceKind::TransactionalWriteRefused {
            broker: id,
            partition: partition.clone(),
            producer_id,
            producer_epoch,
            error,
        });
    }

    /// A batch refused before it is verified.
    fn verification_refused(
        &mut self,
        context: &mut BrokerContext<'_>,
        client: NodeId,
        request: u64,
        acks: Acks,
        partition: &TopicPartition,
        error: ErrorCode,
    ) {
        if acks != Acks::None {
            self.produce_partition_done(context, client, request, partition, Err(error));
        }
    }

    /// A group coordinator on this broker got a `TxnOffsetCommit`: if the
    /// producer's transaction is not open on the group's offsets partition
    /// yet, the transaction coordinator is asked first (and `true`
    /// returned: the request waits, or was answered).
    pub(crate) fn coordinator_verify_offsets(
        &mut self,
        context: &mut BrokerContext<'_>,
        from: NodeId,
        partition: &TopicPartition,
        message: &Message,
    ) -> bool {
        let Message::TxnOffsetCommit {
            transactional_id,
            producer_id,
            epoch,
            transaction_v2,
            ..
        } = message
        else {
            return false;
        };
        if !*transaction_v2 && !context.config().transaction_partition_verification_enable {
            return false;
        }
        let short = i16::try_from(*epoch).unwrap_or(i16::MAX);
        let Some(log) = self.logs.get_mut(partition) else {
            return false;
        };
        match log
            .producers
            .maybe_start_verification(*producer_id, -1, short, *transaction_v2)
        {
            Ok(SENTINEL_GUARD) => false,
            Err(_) => {
                self.coordinator_answer_txn_offsets(context, from, message, ErrorCode::InvalidProducerEpoch);
                true
            }
            Ok(guard) => {
                let waiting = Waiting::TxnOffsetCommit {
                    client: from,
                    message: message.clone(),
                    partition: partition.clone(),
                    guard,
                };
                self.verification_start(
                    context,
                    transactional_id.clone(),
                    *producer_id,
                    *epoch,
                    *transaction_v2,
                    waiting,
                );
                true
            }
        }
    }

    /// Sends a verification to the transaction coordinator this broker's
    /// metadata names; with none known, it fails at once
    /// (`COORDINATOR_NOT_AVAILABLE`).
    fn verification_start(
        &mut self,
        context: &mut BrokerContext<'_>,
        transactional_id: String,
        producer_id: u64,
        epoch: u16,
        transaction_v2: bool,
        waiting: Waiting,
    ) {
        let id = self.id;
        let txn_partition = context.txn_partition(&transactional_id);
        let coordinator = self
            .metadata
            .as_ref()
            .and_then(|image| image.partitions.get(&txn_partition))
            .and_then(|registration| registration.leader);
        let now = context.now();
        let verification = Verification {
            transactional_id,
            producer_id,
            epoch,
            transaction_v2,
            coordinator: coordinator.unwrap_or(id),
            started_ms: now,
            waiting,
        };
        if coordinator.is_none() {
            let results = verification.failed(ErrorCode::CoordinatorNotAvailable);
            self.verification_finish(context, verification, results);
            return;
        }
        let request = self.next_verification();
        self.verification_send(context, request, &verification);
        self.verifications.insert(request, verification);
        let incarnation = self.incarnation;
        context.timer(incarnation, REQUEST_TIMEOUT_MS, Timer::VerificationTimeout(request));
    }

    fn verification_send(&mut self, context: &mut BrokerContext<'_>, request: u64, verification: &Verification) {
        context.send(
            NodeId::Broker(verification.coordinator),
            Message::LeaderAddPartitionsToTxn {
                request,
                transactional_id: verification.transactional_id.clone(),
                producer_id: verification.producer_id,
                epoch: verification.epoch,
                partitions: verification.partitions(),
                verify_only: !verification.transaction_v2,
            },
        );
    }

    /// The transaction coordinator answered a verification.
    pub(crate) fn verification_answered(
        &mut self,
        context: &mut BrokerContext<'_>,
        request: u64,
        results: Vec<(TopicPartition, Option<ErrorCode>)>,
    ) {
        let Some(verification) = self.verifications.remove(&request) else {
            return;
        };
        let now = context.now();
        let concurrent = results
            .iter()
            .any(|(_, error)| *error == Some(ErrorCode::ConcurrentTransactions));
        let window = match &verification.waiting {
            Waiting::Produce { timeout_ms, .. } => RETRY_BACKOFF_MAX_MS.min(*timeout_ms),
            Waiting::TxnOffsetCommit { .. } => 0,
        };
        if verification.transaction_v2 && concurrent && now + RETRY_BACKOFF_MS <= verification.started_ms + window {
            // `maybeRetryOnConcurrentTransactions`: the previous
            // transaction is completing; ask again shortly.
            self.verifications.insert(request, verification);
            let incarnation = self.incarnation;
            context.timer(incarnation, RETRY_BACKOFF_MS, Timer::VerificationRetry(request));
            return;
        }
        self.verification_finish(context, verification, results);
    }

    /// A verification's retry is due.
    pub(crate) fn verification_retry(&mut self, context: &mut BrokerContext<'_>, request: u64) {
        let Some(verification) = self.verifications.get(&request).cloned() else {
            return;
        };
        self.verification_send(context, request, &verification);
    }

    /// A verification got no answer in time, or its connection broke: it
    /// fails (`NETWORK_EXCEPTION`).
    pub(crate) fn verification_lost(&mut self, context: &mut BrokerContext<'_>, request: u64) {
        let Some(verification) = self.verifications.remove(&request) else {
            return;
        };
        let results = verification.failed(ErrorCode::NetworkException);
        self.verification_finish(context, verification, results);
    }

    /// The connection to broker `other` broke: its verifications fail.
    pub(crate) fn verifications_disconnected(&mut self, context: &mut BrokerContext<'_>, other: BrokerId) {
        let lost: Vec<u64> = self
            .verifications
            .iter()
            .filter(|(_, verification)| verification.coordinator == other)
            .map(|(&request, _)| request)
            .collect();
        for request in lost {
            self.verification_lost(context, request);
        }
    }

    /// What waited goes on: verified batches are appended (with their
    /// guard), the others answered with their error.
    fn verification_finish(
        &mut self,
        context: &mut BrokerContext<'_>,
        verification: Verification,
        results: Vec<(TopicPartition, Option<ErrorCode>)>,
    ) {
        let error_of = |partition: &TopicPartition| {
            results
                .iter()
                .find(|(answered, _)| answered == partition)
                .map_or(Some(ErrorCode::NetworkException), |(_, error)| *error)
        };
        match verification.waiting {
            Waiting::Produce {
                client,
                request,
                acks,
                timeout_ms,
                batches,
            } => {
                for (partition, batch, guard) in batches {
                    match error_of(&partition) {
                        None => {
                            let guard = context.log_guard(guard);
                            self.leader_produce(context, client, request, partition, batch, acks, timeout_ms, guard);
                        }
                        Some(error) => {
                            let error = produce_error(error, verification.transaction_v2);
                            // A coordinator that cannot be reached refuses
                            // nothing: the producer retries.
                            if error != ErrorCode::NotEnoughReplicas && error != ErrorCode::ConcurrentTransactions {
                                self.record_refused(context, &partition, &batch, error);
                            }
                            self.verification_refused(context, client, request, acks, &partition, error);
                        }
                    }
                }
            }
            Waiting::TxnOffsetCommit {
                client,
                message,
                partition,
                guard,
            } => match error_of(&partition) {
                Some(error) => self.coordinator_answer_txn_offsets(context, client, &message, offsets_error(error)),
                // The group moved meanwhile: its new coordinator takes the
                // commit (`NOT_COORDINATOR`, the client looks it up again).
                None if !self.coordinators.contains_key(&partition) => {
                    self.coordinator_answer_txn_offsets(context, client, &message, ErrorCode::NotCoordinator)
                }
                None => {
                    let short = i16::try_from(verification.epoch).unwrap_or(i16::MAX);
                    let still_verified = self.logs.get(&partition).is_some_and(|log| {
                        log.producers.has_ongoing_transaction(verification.producer_id, short)
                            || log
                                .producers
                                .verification(verification.producer_id)
                                .is_some_and(|state| state.guard == guard)
                    });
                    if !context.config().transaction_partition_verification_enable || still_verified {
                        self.coordinator_handle(context, client, &message);
                    } else {
                        // "Record was not part of an ongoing transaction".
                        self.coordinator_answer_txn_offsets(context, client, &message, ErrorCode::InvalidTxnState);
                    }
                }
            },
        }
    }
}
