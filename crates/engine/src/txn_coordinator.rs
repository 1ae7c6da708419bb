//! The transaction coordinator's rules (KIP-98, KIP-890), as a plain state
//! machine: what one `__transaction_state` partition's coordinator decides
//! for the transactional ids it owns (`TransactionCoordinator`,
//! `TransactionMetadata`, `TransactionStateManager`, Kafka 4.1).
//!
//! Every change of a transaction goes through the log first: the shard
//! sets a *pending* transition, asks for a record to be written, and only
//! when the record is committed (the high watermark passed it) does the
//! transition complete and the client get its answer
//! (`TransactionStateManager#appendTransactionToLog`). While a transition
//! is pending, other requests for that id get `CONCURRENT_TRANSACTIONS`.
//!
//! * `InitProducerId` gives a transactional id a producer id and bumps its
//!   epoch, which fences any older instance of the producer. A transaction
//!   the old instance left open is aborted first, with the bumped epoch
//!   (Kafka passes through `PrepareEpochFence` in memory; the log sees
//!   `PrepareAbort`), and the new instance is told to retry
//!   (`CONCURRENT_TRANSACTIONS`). A producer that asks with the id and
//!   epoch it has (KIP-360, after an abortable error) gets the next epoch.
//! * A partition joins the open transaction, so the coordinator knows
//!   where markers go: under `transaction.version` 0 and 1 by the
//!   producer's `AddPartitionsToTxn`; under 2 by the partition leader's
//!   `AddPartitionsToTxn` (`verifyOnly=false`) when the first batch
//!   arrives (KIP-890 part 2). The first one opens the transaction
//!   (`Ongoing`) and starts its `transaction.timeout.ms`. A leader may also
//!   only ask whether a partition is in the transaction (`verifyOnly=true`,
//!   KIP-890 part 1), which writes nothing.
//! * `EndTxn` writes `PrepareCommit` or `PrepareAbort`; once that is
//!   committed the answer goes back and the markers go out to every
//!   partition of the transaction; when every marker is written the
//!   coordinator writes `CompleteCommit` or `CompleteAbort`. Under
//!   version 2 the prepare state bumps the epoch, the markers carry the
//!   bumped epoch and the answer hands it to the producer; an epoch about
//!   to run out (32766) moves the id to a new producer id at epoch 0 when
//!   the transaction completes. From `PrepareCommit` on, the outcome is
//!   decided: a new coordinator that loads the log finishes sending the
//!   markers.
//! * A transaction open longer than its timeout is aborted by the
//!   coordinator with a bumped epoch (`abortTimedOutTransactions`), which
//!   fences the producer that left it open.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::protocol::transactions::TransactionVersion;
use crate::protocol::{ProducerEpoch, ProducerId, TopicPartition};
use crate::replication::transactions::ControlType;

/// `transaction.max.timeout.ms` (900000): the longest `transaction.timeout.ms`
/// a producer may ask for.
pub const TRANSACTION_MAX_TIMEOUT_MS: u64 = 900_000;

/// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10000):
/// how often the coordinator looks for transactions past their timeout.
pub const ABORT_TIMED_OUT_INTERVAL_MS: u64 = 10_000;

/// `RecordBatch.NO_PRODUCER_EPOCH`.
pub const NO_PRODUCER_EPOCH: ProducerEpoch = -1;

/// An epoch at which the next bump would reach `Short.MAX_VALUE`
/// (`TransactionMetadata#isEpochExhausted`: 32766 and above).
pub fn is_epoch_exhausted(epoch: ProducerEpoch) -> bool {
    epoch >= i16::MAX - 1
}

/// A transaction's state (`TransactionState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "PascalCase")]
pub enum TxnState {
    /// No transaction open (a producer id, no partitions).
    Empty,
    /// Partitions were added: records may be in their logs.
    Ongoing,
    /// The producer asked to commit; markers go out.
    PrepareCommit,
    /// The producer (or the coordinator) asked to abort; markers go out.
    PrepareAbort,
    /// Every commit marker is written.
    CompleteCommit,
    /// Every abort marker is written.
    CompleteAbort,
}

impl std::fmt::Display for TxnState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
        })
    }
}

/// What a transaction request can fail with (Kafka's `Errors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TxnError {
    /// Another change of this transactional id is being written, or its
    /// transaction is being completed: retry.
    ConcurrentTransactions,
    /// The epoch is older than the coordinator's: a newer instance of the
    /// producer exists (fatal for the client).
    ProducerFenced,
    /// The producer id is not the one of this transactional id.
    InvalidProducerIdMapping,
    /// The request does not fit the transaction's state (an `EndTxn` with
    /// nothing open, a commit of an aborting transaction).
    InvalidTxnState,
    /// `transaction.timeout.ms` above `transaction.max.timeout.ms`.
    InvalidTransactionTimeout,
    /// The record could not be written (the partition moved, or was not
    /// replicated in time): look for the coordinator again.
    NotCoordinator,
    /// A leader's verification: the partition is not in the open
    /// transaction (`TRANSACTION_ABORTABLE`,
    /// `TransactionCoordinator#handleVerifyPartitionsInTransaction`).
    TransactionAbortable,
}

impl std::fmt::Display for TxnError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            TxnError::ConcurrentTransactions => "CONCURRENT_TRANSACTIONS",
            TxnError::ProducerFenced => "PRODUCER_FENCED",
            TxnError::InvalidProducerIdMapping => "INVALID_PRODUCER_ID_MAPPING",
            TxnError::InvalidTxnState => "INVALID_TXN_STATE",
            TxnError::InvalidTransactionTimeout => "INVALID_TRANSACTION_TIMEOUT",
            TxnError::NotCoordinator => "NOT_COORDINATOR",
            TxnError::TransactionAbortable => "TRANSACTION_ABORTABLE",
        })
    }
}

/// One transactional id's metadata, as its `__transaction_state` record
/// stores it (`TransactionLogValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TxnMetadata {
    /// The producer id it was given.
    pub producer_id: ProducerId,
    /// The producer id before the last transition (`prevProducerId`;
    /// after an id rotation, the old id, so a retried `EndTxn` with it is
    /// recognised).
    pub prev_producer_id: Option<ProducerId>,
    /// The id a transaction that exhausted the epoch moves to when it
    /// completes (`nextProducerId`).
    pub next_producer_id: Option<ProducerId>,
    /// The current producer epoch (-1 before the first `InitProducerId`).
    pub producer_epoch: ProducerEpoch,
    /// The epoch before the last bump (`lastProducerEpoch`, -1 when none
    /// is kept): a retried request with it is not a fenced one.
    pub last_producer_epoch: ProducerEpoch,
    /// `transaction.timeout.ms` the producer asked for.
    pub timeout_ms: u64,
    /// Its state.
    pub state: TxnState,
    /// The partitions of the open (or completing) transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the open transaction started (its first partition).
    pub start_ms: Option<u64>,
    /// The protocol its last transaction ran (`clientTransactionVersion`):
    /// version 2 completes with the bumped epoch, or a new producer id.
    pub client_version: TransactionVersion,
}

impl TxnMetadata {
    /// A transactional id seen for the first time (`InitProducerId`
    /// creates it with no epoch).
    pub fn new(producer_id: ProducerId, timeout_ms: u64) -> TxnMetadata {
        TxnMetadata {
            producer_id,
            prev_producer_id: None,
            next_producer_id: None,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: None,
            client_version: TransactionVersion::TV_0,
        }
    }

    /// The metadata after a transition (`prepareTransitionTo`): the
    /// previous producer id is always the one before it.
    fn transit(&self, change: impl FnOnce(&mut TxnMetadata)) -> TxnMetadata {
        let mut next = self.clone();
        next.prev_producer_id = Some(self.producer_id);
        change(&mut next);
        next
    }

    /// The producer id and epoch the client uses once the transaction in
    /// a prepare state completes (what a version 2 `EndTxn` answers:
    /// `prepareComplete`'s result).
    pub fn after_completion(&self) -> (ProducerId, ProducerEpoch) {
        match self.next_producer_id {
            Some(next) if self.client_version.supports_epoch_bump() => (next, 0),
            _ => (self.producer_id, self.producer_epoch),
        }
    }
}

/// A record the coordinator asks to write to its `__transaction_state`
/// partition: the transactional id and its new metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TxnRecord {
    /// The transactional id (the record's key).
    pub transactional_id: String,
    /// The metadata after the transition (the record's value).
    pub metadata: TxnMetadata,
}

/// What a request gets once its record is committed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum TxnReply {
    /// `InitProducerId`: the producer id and epoch to use.
    ProducerIdAndEpoch(ProducerId, ProducerEpoch),
    /// `AddPartitionsToTxn` succeeded.
    Done,
    /// `EndTxn` succeeded; a version 2 answer carries the producer id and
    /// epoch to use from now on (`EndTxnResponse` v5).
    Ended(Option<(ProducerId, ProducerEpoch)>),
}

/// Markers to write: the partitions of a decided transaction, with the
/// producer id and epoch and the coordinator's epoch
/// (`TransactionMarkerChannelManager#addTxnMarkersToSend`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkerRequest {
    /// Whose transaction.
    pub transactional_id: String,
    /// The producer id.
    pub producer_id: ProducerId,
    /// The epoch the markers carry (under version 2 the bumped one).
    pub producer_epoch: ProducerEpoch,
    /// `COMMIT` or `ABORT`.
    pub control: ControlType,
    /// The partitions to write to.
    pub partitions: BTreeSet<TopicPartition>,
}

/// The coordinator's answer to a request or event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Decision {
    /// Answer at once (an error, or nothing to change).
    Answer(Result<TxnReply, TxnError>),
    /// Write `record`; once it is committed call [`TxnShard::committed`],
    /// which completes the transition and gives the answer.
    Write(TxnRecord),
}

/// What follows a committed record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AfterCommit {
    /// The answer for the request that asked for the write, if one did.
    pub reply: Option<Result<TxnReply, TxnError>>,
    /// Markers to send now (a transaction was decided); once they are all
    /// written, [`TxnShard::markers_written`] gives the complete state's
    /// record.
    pub markers: Option<MarkerRequest>,
}

/// One `__transaction_state` partition's coordinator state
/// (`TransactionStateManager`'s cache for that partition).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TxnShard {
    /// Metadata per transactional id, as last committed.
    txns: BTreeMap<String, TxnMetadata>,
    /// Transitions written but not yet committed (`pendingState`).
    pending: BTreeMap<String, TxnMetadata>,
}

impl TxnShard {
    /// Every transactional id's committed metadata.
    pub fn transactions(&self) -> &BTreeMap<String, TxnMetadata> {
        &self.txns
    }

    /// A transactional id's metadata as the next request sees it.
    pub fn get(&self, transactional_id: &str) -> Option<&TxnMetadata> {
        self.txns.get(transactional_id)
    }

    /// Whether a transition of this id is being written.
    pub fn pending(&self, transactional_id: &str) -> bool {
        self.pending.contains_key(transactional_id)
    }

    /// Whether a request for this id may need a fresh producer id: the id
    /// is new, or its epoch is about to run out. The caller takes one from
    /// its producer id block before asking (`ProducerIdManager`).
    pub fn needs_new_producer_id(&self, transactional_id: &str) -> bool {
        self.txns
            .get(transactional_id)
            .is_none_or(|txn| is_epoch_exhausted(txn.producer_epoch))
    }

    fn propose(&mut self, transactional_id: &str, metadata: TxnMetadata) -> Decision {
        self.pending.insert(transactional_id.to_string(), metadata.clone());
        Decision::Write(TxnRecord {
            transactional_id: transactional_id.to_string(),
            metadata,
        })
    }

    /// `InitProducerId` with a transactional id
    /// (`TransactionCoordinator#handleInitProducerId`,
    /// `#prepareInitProducerIdTransit`). `new_producer_id` is used for an
    /// id the shard has never seen, and for one whose epoch ran out
    /// (`prepareProducerIdRotation`). `expected` is the producer id and
    /// epoch the client already has (KIP-360), if it sent them. A
    /// transaction left open by an older instance is aborted with a
    /// bumped epoch first, as `server_version` runs it: the call returns
    /// that write, and once it is committed the caller answers the producer
    /// with `CONCURRENT_TRANSACTIONS` (see [`AfterCommit::reply`]).
    pub fn init_producer_id(
        &mut self,
        transactional_id: &str,
        timeout_ms: u64,
        new_producer_id: ProducerId,
        expected: Option<(ProducerId, ProducerEpoch)>,
        server_version: TransactionVersion,
    ) -> Decision {
        if timeout_ms == 0 || timeout_ms > TRANSACTION_MAX_TIMEOUT_MS {
            return Decision::Answer(Err(TxnError::InvalidTransactionTimeout));
        }
        let current = self
            .txns
            .get(transactional_id)
            .cloned()
            .unwrap_or_else(|| TxnMetadata::new(new_producer_id, timeout_ms));
        // `isValidProducerId`.
        let valid = expected.is_none_or(|(producer_id, epoch)| {
            current.producer_epoch == NO_PRODUCER_EPOCH
                || producer_id == current.producer_id
                || (Some(producer_id) == current.prev_producer_id && is_epoch_exhausted(epoch))
        });
        if !valid {
            return Decision::Answer(Err(TxnError::InvalidProducerIdMapping));
        }
        if self.pending(transactional_id) {
            return Decision::Answer(Err(TxnError::ConcurrentTransactions));
        }
        match current.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => Decision::Answer(Err(TxnError::ConcurrentTransactions)),
            TxnState::Ongoing => match fence_and_abort(&current, server_version) {
                Some(aborting) => self.propose(transactional_id, aborting),
                None => Decision::Answer(Err(TxnError::InvalidTxnState)),
            },
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                let next = if is_epoch_exhausted(current.producer_epoch)
                    && expected.is_none_or(|(_, epoch)| epoch == current.producer_epoch)
                {
                    // `prepareProducerIdRotation`: a new id at epoch 0.
                    current.transit(|next| {
                        next.producer_id = new_producer_id;
                        next.producer_epoch = 0;
                        next.last_producer_epoch = if expected.is_some() {
                            current.producer_epoch
                        } else {
                            NO_PRODUCER_EPOCH
                        };
                    })
                } else {
                    // `prepareIncrementProducerEpoch`.
                    let (epoch, last) = match expected {
                        None => (current.producer_epoch + 1, NO_PRODUCER_EPOCH),
                        Some((_, expected))
                            if current.producer_epoch == NO_PRODUCER_EPOCH || expected == current.producer_epoch =>
                        {
                            (current.producer_epoch + 1, current.producer_epoch)
                        }
                        // A retry of a bump that already happened.
                        Some((_, expected)) if expected == current.last_producer_epoch => {
                            (current.producer_epoch, current.last_producer_epoch)
                        }
                        Some(_) => return Decision::Answer(Err(TxnError::ProducerFenced)),
                    };
                    current.transit(|next| {
                        next.producer_epoch = epoch;
                        next.last_producer_epoch = last;
                    })
                };
                self.propose(
                    transactional_id,
                    TxnMetadata {
                        next_producer_id: None,
                        timeout_ms,
                        state: TxnState::Empty,
                        partitions: BTreeSet::new(),
                        start_ms: None,
                        ..next
                    },
                )
            }
        }
    }

    /// `AddPartitionsToTxn` (`TransactionCoordinator#handleAddPartitionsToTransaction`,
    /// `TransactionMetadata#prepareAddPartitions`), from the producer
    /// (versions 0 and 1: `version` below 2) or from a partition leader
    /// that adds the partition for a version 2 producer. Partitions already
    /// in the open transaction need no write; others open it or join it.
    pub fn add_partitions(
        &mut self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
        now: u64,
        version: TransactionVersion,
    ) -> Decision {
        let Some(current) = self.txns.get(transactional_id).cloned() else {
            return Decision::Answer(Err(TxnError::InvalidProducerIdMapping));
        };
        // Kafka 4.1 checks the pending transition first, so a completing
        // id rotation can finish (the producer may already use the new id).
        if self.pending(transactional_id) {
            return Decision::Answer(Err(TxnError::ConcurrentTransactions));
        }
        if current.producer_id != producer_id {
            return Decision::Answer(Err(TxnError::InvalidProducerIdMapping));
        }
        if current.producer_epoch != producer_epoch {
            return Decision::Answer(Err(TxnError::ProducerFenced));
        }
        match current.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => Decision::Answer(Err(TxnError::ConcurrentTransactions)),
            TxnState::Ongoing
                if partitions
                    .iter()
                    .all(|partition| current.partitions.contains(partition)) =>
            {
                Decision::Answer(Ok(TxnReply::Done))
            }
            state => {
                let ongoing = state == TxnState::Ongoing;
                let next = current.transit(|next| {
                    next.state = TxnState::Ongoing;
                    if !ongoing {
                        next.start_ms = Some(now);
                        next.partitions.clear();
                    }
                    next.partitions.extend(partitions.iter().cloned());
                    next.client_version = version;
                });
                self.propose(transactional_id, next)
            }
        }
    }

    /// A partition leader's `AddPartitionsToTxn` with `verifyOnly=true`
    /// (KIP-890 part 1, `TransactionCoordinator#handleVerifyPartitionsInTransaction`):
    /// whether each partition is in the open transaction of this producer
    /// id and epoch. Nothing is written; the pending transition is not
    /// looked at.
    pub fn verify_partitions(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
    ) -> Vec<(TopicPartition, Result<(), TxnError>)> {
        let all = |error: TxnError| {
            partitions
                .iter()
                .map(|partition| (partition.clone(), Err(error)))
                .collect()
        };
        let Some(current) = self.txns.get(transactional_id) else {
            return all(TxnError::InvalidProducerIdMapping);
        };
        if current.producer_id != producer_id {
            return all(TxnError::InvalidProducerIdMapping);
        }
        if current.producer_epoch != producer_epoch {
            return all(TxnError::ProducerFenced);
        }
        if matches!(current.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return all(TxnError::ConcurrentTransactions);
        }
        partitions
            .iter()
            .map(|partition| {
                let answer = if current.partitions.contains(partition) {
                    Ok(())
                } else {
                    Err(TxnError::TransactionAbortable)
                };
                (partition.clone(), answer)
            })
            .collect()
    }

    /// `EndTxn` from the client (`TransactionCoordinator#handleEndTransaction`).
    /// `version` is the protocol the request runs (`EndTxn` v5 and above
    /// is version 2). `new_producer_id` is the id to move to if the epoch
    /// is exhausted (version 2 only). Version 0 and 1
    /// (`endTransactionWithTV1`): an open transaction moves to
    /// `PrepareCommit` or `PrepareAbort` with the same epoch; a retry of a
    /// completed one succeeds; anything else is refused. Version 2: the
    /// prepare state bumps the epoch; a retry carries the epoch before the
    /// bump; an abort with nothing open still bumps the epoch.
    pub fn end_txn(
        &mut self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
        now: u64,
        version: TransactionVersion,
        new_producer_id: ProducerId,
    ) -> Decision {
        let Some(current) = self.txns.get(transactional_id).cloned() else {
            return Decision::Answer(Err(TxnError::InvalidProducerIdMapping));
        };
        if version.supports_epoch_bump() {
            return self.end_txn_v2(
                transactional_id,
                current,
                producer_id,
                producer_epoch,
                commit,
                now,
                new_producer_id,
            );
        }
        if current.producer_id != producer_id {
            return Decision::Answer(Err(TxnError::InvalidProducerIdMapping));
        }
        if current.producer_epoch != producer_epoch {
            return Decision::Answer(Err(TxnError::ProducerFenced));
        }
        if self.pending(transactional_id) {
            return Decision::Answer(Err(TxnError::ConcurrentTransactions));
        }
        let answer = |result| Decision::Answer(result);
        match (current.state, commit) {
            (TxnState::Ongoing, _) => {
                let next = current.transit(|next| {
                    next.state = prepare_state(commit);
                    next.next_producer_id = None;
                    next.client_version = version;
                });
                self.propose(transactional_id, next)
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => answer(Ok(TxnReply::Ended(None))),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                answer(Err(TxnError::ConcurrentTransactions))
            }
            _ => answer(Err(TxnError::InvalidTxnState)),
        }
    }

    /// `endTransaction` for version 2 (KIP-890 part 2), in Kafka 4.1's
    /// order: a pending transition first (KAFKA-18464), then the producer
    /// id (unless this is the retry of an end that moved the id), then the
    /// epoch, whose valid values depend on the state.
    #[allow(clippy::too_many_arguments)]
    fn end_txn_v2(
        &mut self,
        transactional_id: &str,
        current: TxnMetadata,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
        now: u64,
        new_producer_id: ProducerId,
    ) -> Decision {
        if self.pending(transactional_id) {
            return Decision::Answer(Err(TxnError::ConcurrentTransactions));
        }
        let retry_on_overflow = current.prev_producer_id == Some(producer_id)
            && producer_epoch == i16::MAX - 1
            && current.producer_epoch == 0;
        let retry_on_epoch_bump = i32::from(current.producer_epoch) == i32::from(producer_epoch) + 1;
        if current.producer_id != producer_id && !retry_on_overflow {
            return Decision::Answer(Err(TxnError::InvalidProducerIdMapping));
        }
        let valid = match current.state {
            TxnState::Ongoing | TxnState::Empty => producer_epoch == current.producer_epoch,
            TxnState::PrepareCommit | TxnState::PrepareAbort => retry_on_epoch_bump,
            TxnState::CompleteCommit | TxnState::CompleteAbort => {
                retry_on_epoch_bump || retry_on_overflow || producer_epoch == current.producer_epoch
            }
        };
        if !valid {
            return Decision::Answer(Err(TxnError::ProducerFenced));
        }
        let retry = retry_on_epoch_bump || retry_on_overflow;
        let done = Decision::Answer(Ok(TxnReply::Ended(Some((current.producer_id, current.producer_epoch)))));
        let refused = |error| Decision::Answer(Err(error));
        match (current.state, commit) {
            (TxnState::Ongoing, _) => {
                let next = bump_and_prepare(&current, commit, false, now, new_producer_id);
                self.propose(transactional_id, next)
            }
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) if retry => done,
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, true) => refused(TxnError::InvalidTxnState),
            (TxnState::CompleteCommit, false) if retry => refused(TxnError::InvalidTxnState),
            // An abort with nothing open: the epoch is bumped all the same
            // (`noPartitionAdded`), so a producer can always fence its own
            // late writes.
            (TxnState::CompleteCommit | TxnState::CompleteAbort | TxnState::Empty, false) => {
                let next = bump_and_prepare(&current, false, true, now, new_producer_id);
                self.propose(transactional_id, next)
            }
            (TxnState::Empty, true) => refused(TxnError::InvalidTxnState),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                refused(TxnError::ConcurrentTransactions)
            }
            (TxnState::PrepareCommit, false) | (TxnState::PrepareAbort, true) => refused(TxnError::InvalidTxnState),
        }
    }

    /// Transactions open longer than their timeout at `now`
    /// (`TransactionStateManager#timedOutTransactions`): each is aborted
    /// with a bumped epoch, which fences the producer that left it open
    /// (`TransactionCoordinator#abortTimedOutTransactions`), as
    /// `server_version` runs it. Returns the writes.
    pub fn abort_timed_out(&mut self, now: u64, server_version: TransactionVersion) -> Vec<TxnRecord> {
        let timed_out: Vec<(String, TxnMetadata)> = self
            .txns
            .iter()
            .filter(|(id, txn)| {
                txn.state == TxnState::Ongoing
                    && !self.pending.contains_key(*id)
                    && txn.start_ms.is_some_and(|start| start + txn.timeout_ms < now)
            })
            .map(|(id, txn)| (id.clone(), txn.clone()))
            .collect();
        timed_out
            .into_iter()
            .filter_map(|(id, current)| {
                let aborting = fence_and_abort(&current, server_version)?;
                match self.propose(&id, aborting) {
                    Decision::Write(record) => Some(record),
                    Decision::Answer(_) => None,
                }
            })
            .collect()
    }

    /// The pending record of `transactional_id` is committed: the
    /// transition completes (`TransactionMetadata#completeTransitionTo`).
    /// `fencing` says the write was an `InitProducerId` aborting what an
    /// older instance left open: that producer gets
    /// `CONCURRENT_TRANSACTIONS` and asks again.
    pub fn committed(&mut self, transactional_id: &str, fencing: bool) -> AfterCommit {
        let Some(metadata) = self.pending.remove(transactional_id) else {
            return AfterCommit::default();
        };
        self.txns.insert(transactional_id.to_string(), metadata.clone());
        let markers = |control| MarkerRequest {
            transactional_id: transactional_id.to_string(),
            producer_id: metadata.producer_id,
            producer_epoch: metadata.producer_epoch,
            control,
            partitions: metadata.partitions.clone(),
        };
        let ended = || {
            Ok(TxnReply::Ended(
                metadata
                    .client_version
                    .supports_epoch_bump()
                    .then(|| metadata.after_completion()),
            ))
        };
        match metadata.state {
            TxnState::Empty => AfterCommit {
                reply: Some(Ok(TxnReply::ProducerIdAndEpoch(
                    metadata.producer_id,
                    metadata.producer_epoch,
                ))),
                ..AfterCommit::default()
            },
            TxnState::Ongoing => AfterCommit {
                reply: Some(Ok(TxnReply::Done)),
                ..AfterCommit::default()
            },
            TxnState::PrepareCommit => AfterCommit {
                reply: Some(ended()),
                markers: Some(markers(ControlType::Commit)),
            },
            TxnState::PrepareAbort => AfterCommit {
                reply: Some(if fencing {
                    Err(TxnError::ConcurrentTransactions)
                } else {
                    ended()
                }),
                markers: Some(markers(ControlType::Abort)),
            },
            TxnState::CompleteCommit | TxnState::CompleteAbort => AfterCommit::default(),
        }
    }

    /// The pending record could not be written (the partition moved or it
    /// was not replicated in time): the transition is dropped and the
    /// client told to find the coordinator again.
    pub fn write_failed(&mut self, transactional_id: &str) -> Result<TxnReply, TxnError> {
        self.pending.remove(transactional_id);
        Err(TxnError::NotCoordinator)
    }

    /// Every marker of a decided transaction is written
    /// (`TransactionMarkerChannelManager#tryAppendToLog`): the complete
    /// state goes to the log (`TransactionMetadata#prepareComplete`; under
    /// version 2 an exhausted epoch moves to the next producer id here).
    pub fn markers_written(&mut self, transactional_id: &str) -> Option<TxnRecord> {
        let current = self.txns.get(transactional_id)?.clone();
        let state = match current.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            TxnState::PrepareAbort => TxnState::CompleteAbort,
            _ => return None,
        };
        if self.pending(transactional_id) {
            return None;
        }
        let (producer_id, producer_epoch) = current.after_completion();
        let complete = current.transit(|next| {
            next.state = state;
            next.producer_id = producer_id;
            next.producer_epoch = producer_epoch;
            next.next_producer_id = None;
            next.partitions = BTreeSet::new();
            next.start_ms = None;
        });
        match self.propose(transactional_id, complete) {
            Decision::Write(record) => Some(record),
            Decision::Answer(_) => None,
        }
    }

    /// Loads a record from the partition's log (a new coordinator reading
    /// `__transaction_state`, `TransactionStateManager#loadTransactionMetadata`):
    /// the last record of an id wins.
    pub fn replay(&mut self, record: &TxnRecord) {
        self.txns
            .insert(record.transactional_id.clone(), record.metadata.clone());
    }

    /// The markers a decided (`PrepareCommit`, `PrepareAbort`) transaction
    /// still needs, as its committed metadata says.
    pub fn marker_request(&self, transactional_id: &str) -> Option<MarkerRequest> {
        let txn = self.txns.get(transactional_id)?;
        let control = match txn.state {
            TxnState::PrepareCommit => ControlType::Commit,
            TxnState::PrepareAbort => ControlType::Abort,
            _ => return None,
        };
        Some(MarkerRequest {
            transactional_id: transactional_id.to_string(),
            producer_id: txn.producer_id,
            producer_epoch: txn.producer_epoch,
            control,
            partitions: txn.partitions.clone(),
        })
    }

    /// After loading: the decided transactions whose markers must be sent
    /// (again) before they can complete
    /// (`TransactionStateManager#loadTransactionsForTxnTopicPartition`).
    pub fn on_loaded(&self) -> Vec<MarkerRequest> {
        self.txns.keys().filter_map(|id| self.marker_request(id)).collect()
    }
}

/// `PrepareCommit` or `PrepareAbort`.
fn prepare_state(commit: bool) -> TxnState {
    if commit {
        TxnState::PrepareCommit
    } else {
        TxnState::PrepareAbort
    }
}

/// A version 2 `prepareAbortOrCommit`: the epoch goes up by one (the
/// markers carry it), the epoch before it is kept for retries, and an
/// exhausted epoch names the producer id to move to at completion. An
/// abort with nothing open (`noPartitionAdded`) restarts the
/// transaction's clock.
fn bump_and_prepare(
    current: &TxnMetadata,
    commit: bool,
    no_partition_added: bool,
    now: u64,
    new_producer_id: ProducerId,
) -> TxnMetadata {
    current.transit(|next| {
        next.state = prepare_state(commit);
        next.producer_epoch = current.producer_epoch + 1;
        next.last_producer_epoch = current.producer_epoch;
        next.next_producer_id = is_epoch_exhausted(current.producer_epoch).then_some(new_producer_id);
        next.client_version = TransactionVersion::TV_2;
        if no_partition_added {
            next.start_ms = Some(now);
        }
    })
}

/// The coordinator aborts an open transaction itself (a new instance's
/// `InitProducerId`, or its timeout): `prepareFenceProducerEpoch`, then
/// `endTransaction(ABORT, isFromClient = false)` with the cluster's
/// `transaction.version`. Either way the markers carry the epoch one above
/// the producer's, so its late writes are refused; version 2 keeps the
/// epoch before it (one bump in all, as Kafka 4.1 after KAFKA-19367) and
/// never moves to a new producer id here. `None` when the epoch cannot
/// grow (`Short.MAX_VALUE`).
fn fence_and_abort(current: &TxnMetadata, server_version: TransactionVersion) -> Option<TxnMetadata> {
    if current.producer_epoch == i16::MAX {
        return None;
    }
    Some(current.transit(|next| {
        next.state = TxnState::PrepareAbort;
        next.producer_epoch = current.producer_epoch + 1;
        next.next_producer_id = None;
        next.client_version = server_version;
        next.last_producer_epoch = if server_version.supports_epoch_bump() {
            current.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: TransactionVersion = TransactionVersion::TV_1;
    const V2: TransactionVersion = TransactionVersion::TV_2;

    fn tp(partition: u32) -> TopicPartition {
        TopicPartition::new(crate::protocol::TopicName::from("payments"), partition)
    }

    /// Writes and commits whatever `decision` asks for; returns the answer.
    fn commit(shard: &mut TxnShard, id: &str, decision: Decision) -> (Result<TxnReply, TxnError>, AfterCommit) {
        match decision {
            Decision::Answer(answer) => (answer, AfterCommit::default()),
            Decision::Write(record) => {
                assert_eq!(record.transactional_id, id);
                let after = shard.committed(id, false);
                (after.reply.clone().expect("a reply"), after)
            }
        }
    }

    fn init(shard: &mut TxnShard, producer_id: ProducerId) {
        let decision = shard.init_producer_id("tx", 60_000, producer_id, None, V2);
        assert!(commit(shard, "tx", decision).0.is_ok());
    }

    #[test]
    fn a_transaction_commits_through_prepare_markers_and_complete() {
        let mut shard = TxnShard::default();
        let decision = shard.init_producer_id("tx", 60_000, 4000, None, V1);
        let (answer, _) = commit(&mut shard, "tx", decision);
        assert_eq!(answer, Ok(TxnReply::ProducerIdAndEpoch(4000, 0)));
        let decision = shard.add_partitions("tx", 4000, 0, &[tp(0), tp(1)], 10, V1);
        assert!(matches!(decision, Decision::Write(_)));
        // While it is written, the id is busy.
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true, 15, V1, 0),
            Decision::Answer(Err(TxnError::ConcurrentTransactions))
        );
        shard.committed("tx", false);
        // Partitions already added need no write.
        assert_eq!(
            shard.add_partitions("tx", 4000, 0, &[tp(1)], 20, V1),
            Decision::Answer(Ok(TxnReply::Done))
        );
        let decision = shard.end_txn("tx", 4000, 0, true, 25, V1, 0);
        let (answer, after) = commit(&mut shard, "tx", decision);
        assert_eq!(answer, Ok(TxnReply::Ended(None)));
        let markers = after.markers.expect("markers go out");
        assert_eq!((markers.control, markers.producer_epoch), (ControlType::Commit, 0));
        assert_eq!(markers.partitions.len(), 2);
        // A retried commit while the markers are out must wait.
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true, 30, V1, 0),
            Decision::Answer(Err(TxnError::ConcurrentTransactions))
        );
        let complete = shard.markers_written("tx").expect("complete");
        assert_eq!(complete.metadata.state, TxnState::CompleteCommit);
        assert_eq!(complete.metadata.producer_epoch, 0, "version 1 keeps the epoch");
        shard.committed("tx", false);
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true, 40, V1, 0),
            Decision::Answer(Ok(TxnReply::Ended(None)))
        );
        assert_eq!(
            shard.end_txn("tx", 4000, 0, false, 40, V1, 0),
            Decision::Answer(Err(TxnError::InvalidTxnState))
        );
    }

    /// `TransactionMetadataTest#testEpochBumpOnEndTxn` and
    /// `TransactionCoordinatorTest#testEndTxnWhenStatusIsCompleteCommitAndResultIsCommitInV2`.
    #[test]
    fn version_2_bumps_the_epoch_at_every_end_and_hands_it_back() {
        let mut shard = TxnShard::default();
        init(&mut shard, 4000);
        let decision = shard.add_partitions("tx", 4000, 0, &[tp(0)], 10, V2);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        let Decision::Write(prepare) = shard.end_txn("tx", 4000, 0, true, 20, V2, 0) else {
            panic!("a write")
        };
        assert_eq!(
            (prepare.metadata.producer_epoch, prepare.metadata.last_producer_epoch),
            (1, 0)
        );
        let after = shard.committed("tx", false);
        assert_eq!(after.reply, Some(Ok(TxnReply::Ended(Some((4000, 1))))));
        assert_eq!(after.markers.map(|markers| markers.producer_epoch), Some(1));
        let complete = shard.markers_written("tx").expect("complete");
        assert_eq!(complete.metadata.producer_epoch, 1, "no second bump");
        shard.committed("tx", false);
        // The same request again is a retry: answered, nothing written.
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true, 30, V2, 0),
            Decision::Answer(Ok(TxnReply::Ended(Some((4000, 1)))))
        );
        assert_eq!(
            shard.end_txn("tx", 4000, 0, false, 30, V2, 0),
            Decision::Answer(Err(TxnError::InvalidTxnState))
        );
        // A commit at the current epoch with nothing open.
        assert_eq!(
            shard.end_txn("tx", 4000, 1, true, 30, V2, 0),
            Decision::Answer(Err(TxnError::InvalidTxnState))
        );
        // An abort at the current epoch bumps it even with nothing open.
        let Decision::Write(empty_abort) = shard.end_txn("tx", 4000, 1, false, 40, V2, 0) else {
            panic!("a write")
        };
        assert_eq!(
            (
                empty_abort.metadata.state,
                empty_abort.metadata.producer_epoch,
                empty_abort.metadata.start_ms
            ),
            (TxnState::PrepareAbort, 2, Some(40))
        );
        // Older epochs are fenced.
        shard.committed("tx", false);
        assert_eq!(
            shard.end_txn("tx", 4000, 0, false, 50, V2, 0),
            Decision::Answer(Err(TxnError::ProducerFenced))
        );
    }

    /// `TransactionMetadataTest#testEpochBumpOnEndTxnOverflow`,
    /// `TransactionCoordinatorTest#shouldGenerateNewProducerIdIfEpochsExhaustedV2`
    /// and `#shouldReturnOkOnEndTxnV2IfEndTxnV2RetryEpochOverflow`.
    #[test]
    fn an_exhausted_epoch_moves_to_a_new_producer_id_when_the_transaction_completes() {
        let mut shard = TxnShard::default();
        shard.replay(&TxnRecord {
            transactional_id: "tx".into(),
            metadata: TxnMetadata {
                producer_epoch: i16::MAX - 1,
                state: TxnState::Ongoing,
                partitions: [tp(0)].into_iter().collect(),
                start_ms: Some(0),
                client_version: V2,
                ..TxnMetadata::new(10, 60_000)
            },
        });
        assert!(shard.needs_new_producer_id("tx"));
        let Decision::Write(prepare) = shard.end_txn("tx", 10, i16::MAX - 1, true, 5, V2, 11) else {
            panic!("a write")
        };
        assert_eq!(
            (
                prepare.metadata.producer_id,
                prepare.metadata.producer_epoch,
                prepare.metadata.next_producer_id
            ),
            (10, i16::MAX, Some(11))
        );
        let after = shard.committed("tx", false);
        assert_eq!(after.reply, Some(Ok(TxnReply::Ended(Some((11, 0))))));
        assert_eq!(
            after
                .markers
                .map(|markers| (markers.producer_id, markers.producer_epoch)),
            Some((10, i16::MAX))
        );
        let complete = shard.markers_written("tx").expect("complete");
        assert_eq!(
            (
                complete.metadata.producer_id,
                complete.metadata.producer_epoch,
                complete.metadata.prev_producer_id,
                complete.metadata.last_producer_epoch
            ),
            (11, 0, Some(10), i16::MAX - 1)
        );
        shard.committed("tx", false);
        assert_eq!(
            shard.end_txn("tx", 10, i16::MAX - 1, true, 9, V2, 12),
            Decision::Answer(Ok(TxnReply::Ended(Some((11, 0))))),
            "a retry with the old id is recognised"
        );
    }

    #[test]
    fn a_new_instance_fences_the_old_one_and_aborts_what_it_left_open() {
        for version in [V1, V2] {
            let mut shard = TxnShard::default();
            let decision = shard.init_producer_id("tx", 60_000, 4000, None, version);
            assert!(commit(&mut shard, "tx", decision).0.is_ok());
            let decision = shard.add_partitions("tx", 4000, 0, &[tp(0)], 10, version);
            assert!(commit(&mut shard, "tx", decision).0.is_ok());
            // The new instance: the open transaction is aborted with epoch 1
            // (one bump under either version: KAFKA-19367).
            let Decision::Write(record) = shard.init_producer_id("tx", 60_000, 9999, None, version) else {
                panic!("a write");
            };
            assert_eq!(record.metadata.producer_epoch, 1);
            let after = shard.committed("tx", true);
            assert_eq!(after.reply, Some(Err(TxnError::ConcurrentTransactions)));
            let markers = after.markers.expect("abort markers");
            assert_eq!((markers.control, markers.producer_epoch), (ControlType::Abort, 1));
            // The zombie is fenced.
            assert_eq!(
                shard.end_txn("tx", 4000, 0, true, 20, V1, 0),
                Decision::Answer(Err(TxnError::ProducerFenced))
            );
            assert_eq!(
                shard.add_partitions("tx", 4000, 0, &[tp(1)], 30, version),
                Decision::Answer(Err(TxnError::ProducerFenced))
            );
            // The new instance retries until the abort is complete.
            assert_eq!(
                shard.init_producer_id("tx", 60_000, 9999, None, version),
                Decision::Answer(Err(TxnError::ConcurrentTransactions))
            );
            shard.markers_written("tx").expect("complete");
            shard.committed("tx", false);
            let decision = shard.init_producer_id("tx", 60_000, 9999, None, version);
            let (answer, _) = commit(&mut shard, "tx", decision);
            assert_eq!(
                answer,
                Ok(TxnReply::ProducerIdAndEpoch(4000, 2)),
                "same id, a newer epoch"
            );
        }
    }

    /// `TransactionMetadataTest#testEpochBumpWithCurrentEpochProvided`,
    /// `#testAttemptedEpochBumpWithLastEpoch`, `#testAttemptedEpochBumpWithFencedEpoch`.
    #[test]
    fn a_producer_that_names_its_epoch_gets_the_next_one_once() {
        let mut shard = TxnShard::default();
        init(&mut shard, 4000);
        let decision = shard.init_producer_id("tx", 60_000, 1, Some((4000, 0)), V1);
        assert_eq!(
            commit(&mut shard, "tx", decision).0,
            Ok(TxnReply::ProducerIdAndEpoch(4000, 1))
        );
        // A retry with the epoch it had: the same answer, no new bump.
        let decision = shard.init_producer_id("tx", 60_000, 1, Some((4000, 0)), V1);
        assert_eq!(
            commit(&mut shard, "tx", decision).0,
            Ok(TxnReply::ProducerIdAndEpoch(4000, 1))
        );
        assert_eq!(
            shard.init_producer_id("tx", 60_000, 1, Some((4000, 7)), V1),
            Decision::Answer(Err(TxnError::ProducerFenced))
        );
        assert_eq!(
            shard.init_producer_id("tx", 60_000, 1, Some((555, 1)), V1),
            Decision::Answer(Err(TxnError::InvalidProducerIdMapping))
        );
    }

    /// KIP-890 part 1 (`TransactionCoordinatorTest#shouldReturnTransactionAbortable...`,
    /// `handleVerifyPartitionsInTransaction`).
    #[test]
    fn a_leader_learns_whether_a_partition_is_in_the_transaction() {
        let mut shard = TxnShard::default();
        init(&mut shard, 4000);
        let decision = shard.add_partitions("tx", 4000, 0, &[tp(0)], 10, V1);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        assert_eq!(
            shard.verify_partitions("tx", 4000, 0, &[tp(0), tp(1)]),
            vec![(tp(0), Ok(())), (tp(1), Err(TxnError::TransactionAbortable))]
        );
        assert_eq!(
            shard.verify_partitions("tx", 4000, 1, &[tp(0)]),
            vec![(tp(0), Err(TxnError::ProducerFenced))]
        );
        assert_eq!(
            shard.verify_partitions("nobody", 4000, 0, &[tp(0)]),
            vec![(tp(0), Err(TxnError::InvalidProducerIdMapping))]
        );
    }

    #[test]
    fn a_transaction_past_its_timeout_is_aborted_with_a_bumped_epoch() {
        let mut shard = TxnShard::default();
        let decision = shard.init_producer_id("tx", 1_000, 4000, None, V1);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        let decision = shard.add_partitions("tx", 4000, 0, &[tp(0)], 100, V1);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        assert!(shard.abort_timed_out(1_100, V1).is_empty(), "not past it yet");
        let writes = shard.abort_timed_out(1_101, V1);
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0].metadata.state, TxnState::PrepareAbort);
        let after = shard.committed("tx", false);
        assert_eq!(after.markers.map(|markers| markers.control), Some(ControlType::Abort));
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true, 1_200, V1, 0),
            Decision::Answer(Err(TxnError::ProducerFenced))
        );
    }

    #[test]
    fn a_new_coordinator_finishes_decided_transactions_and_refuses_bad_timeouts() {
        let mut loaded = TxnShard::default();
        let mut partitions = BTreeSet::new();
        partitions.insert(tp(3));
        loaded.replay(&TxnRecord {
            transactional_id: "tx".into(),
            metadata: TxnMetadata {
                producer_epoch: 2,
                state: TxnState::PrepareCommit,
                partitions,
                start_ms: Some(5),
                ..TxnMetadata::new(7, 60_000)
            },
        });
        let resend = loaded.on_loaded();
        assert_eq!(resend.len(), 1);
        assert_eq!((resend[0].control, resend[0].producer_epoch), (ControlType::Commit, 2));
        assert_eq!(
            loaded.init_producer_id("other", 900_001, 1, None, V2),
            Decision::Answer(Err(TxnError::InvalidTransactionTimeout))
        );
        // A failed write leaves the metadata as it was.
        let decision = loaded.init_producer_id("fresh", 60_000, 11, None, V2);
        assert!(matches!(decision, Decision::Write(_)));
        assert_eq!(loaded.write_failed("fresh"), Err(TxnError::NotCoordinator));
        assert!(loaded.get("fresh").is_none());
    }
}
