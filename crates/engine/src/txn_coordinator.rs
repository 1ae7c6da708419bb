//! The transaction coordinator's rules (KIP-98), as a plain state machine:
//! what one `__transaction_state` partition's coordinator decides for the
//! transactional ids it owns (`TransactionCoordinator`,
//! `TransactionMetadata`, `TransactionStateManager`, Kafka 4.1, with the
//! transaction version 1 protocol: the client's `EndTxn` carries the
//! epoch it was given, markers are written with that epoch).
//!
//! Every change of a transaction goes through the log first: the shard
//! sets a *pending* transition, asks for a record to be written, and only
//! when the record is committed (the high watermark passed it) does the
//! transition complete and the client get its answer
//! (`TransactionStateManager#appendTransactionToLog`). While a transition
//! is pending, other requests for that id get `CONCURRENT_TRANSACTIONS`.
//!
//! * `InitProducerId` gives a transactional id a producer id and bumps its
//!   epoch, which fences any older instance of the producer: its
//!   `AddPartitionsToTxn`, `EndTxn` and (through the markers' epoch) its
//!   produce requests are refused from then on. A transaction the old
//!   instance left open is aborted first, with the bumped epoch (Kafka
//!   passes through `PrepareEpochFence` in memory; the log sees
//!   `PrepareAbort`), and the new instance is told to retry
//!   (`CONCURRENT_TRANSACTIONS`).
//! * `AddPartitionsToTxn` records which partitions a transaction writes to,
//!   so the coordinator knows where markers go; the first one opens the
//!   transaction (`Ongoing`) and starts its `transaction.timeout.ms`.
//! * `EndTxn` writes `PrepareCommit` or `PrepareAbort`; once that is
//!   committed the answer goes back and the markers go out to every
//!   partition of the transaction; when every marker is written the
//!   coordinator writes `CompleteCommit` or `CompleteAbort`. From
//!   `PrepareCommit` on, the outcome is decided: a new coordinator that
//!   loads the log finishes sending the markers.
//! * A transaction open longer than its timeout is aborted by the
//!   coordinator with a bumped epoch (`abortTimedOutTransactions`), which
//!   fences the producer that left it open.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::protocol::{ProducerEpoch, ProducerId, TopicPartition};
use crate::replication::transactions::ControlType;

/// `transaction.max.timeout.ms` (900000): the longest `transaction.timeout.ms`
/// a producer may ask for.
pub const TRANSACTION_MAX_TIMEOUT_MS: u64 = 900_000;

/// `transaction.abort.timed.out.transaction.cleanup.interval.ms` (10000):
/// how often the coordinator looks for transactions past their timeout.
pub const ABORT_TIMED_OUT_INTERVAL_MS: u64 = 10_000;

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
        })
    }
}

/// One transactional id's metadata, as its `__transaction_state` record
/// stores it (`TransactionLogValue`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TxnMetadata {
    /// The producer id it was given.
    pub producer_id: ProducerId,
    /// The current producer epoch (-1 before the first `InitProducerId`).
    pub producer_epoch: ProducerEpoch,
    /// `transaction.timeout.ms` the producer asked for.
    pub timeout_ms: u64,
    /// Its state.
    pub state: TxnState,
    /// The partitions of the open (or completing) transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the open transaction started (its first `AddPartitionsToTxn`).
    pub start_ms: Option<u64>,
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
    /// `AddPartitionsToTxn` or `EndTxn` succeeded.
    Done,
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
    /// The epoch the markers carry.
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
    /// id the shard has never seen. A transaction left open by an older
    /// instance is aborted with a bumped epoch first: the call returns that
    /// write, and once it is committed the caller answers the producer with
    /// `CONCURRENT_TRANSACTIONS` (see [`AfterCommit::reply`]).
    pub fn init_producer_id(
        &mut self,
        transactional_id: &str,
        timeout_ms: u64,
        new_producer_id: ProducerId,
    ) -> Decision {
        if timeout_ms == 0 || timeout_ms > TRANSACTION_MAX_TIMEOUT_MS {
            return Decision::Answer(Err(TxnError::InvalidTransactionTimeout));
        }
        if self.pending(transactional_id) {
            return Decision::Answer(Err(TxnError::ConcurrentTransactions));
        }
        let current = self.txns.get(transactional_id).cloned().unwrap_or(TxnMetadata {
            producer_id: new_producer_id,
            producer_epoch: -1,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: None,
        });
        match current.state {
            TxnState::PrepareCommit | TxnState::PrepareAbort => Decision::Answer(Err(TxnError::ConcurrentTransactions)),
            TxnState::Ongoing => {
                // `prepareFenceProducerEpoch`, then the abort of the open
                // transaction (`endTransaction(ABORT, isFromClient = false)`):
                // its markers carry the bumped epoch. The new instance
                // retries and gets a further epoch once it is complete.
                self.propose(
                    transactional_id,
                    TxnMetadata {
                        producer_epoch: current.producer_epoch + 1,
                        state: TxnState::PrepareAbort,
                        ..current
                    },
                )
            }
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
                // `prepareIncrementProducerEpoch` (a new id starts at 0).
                self.propose(
                    transactional_id,
                    TxnMetadata {
                        producer_epoch: current.producer_epoch + 1,
                        timeout_ms,
                        state: TxnState::Empty,
                        partitions: BTreeSet::new(),
                        start_ms: None,
                        ..current
                    },
                )
            }
        }
    }

    /// Checks a client's producer id and epoch against the metadata.
    fn check_producer(
        &self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
    ) -> Result<TxnMetadata, TxnError> {
        let current = self
            .txns
            .get(transactional_id)
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        if current.producer_id != producer_id {
            return Err(TxnError::InvalidProducerIdMapping);
        }
        if current.producer_epoch != producer_epoch {
            return Err(TxnError::ProducerFenced);
        }
        if self.pending(transactional_id) {
            return Err(TxnError::ConcurrentTransactions);
        }
        Ok(current.clone())
    }

    /// `AddPartitionsToTxn` (`TransactionCoordinator#handleAddPartitionsToTransaction`,
    /// `TransactionMetadata#prepareAddPartitions`): partitions already in
    /// the open transaction need no write; others open it or join it.
    pub fn add_partitions(
        &mut self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        partitions: &[TopicPartition],
        now: u64,
    ) -> Decision {
        let current = match self.check_producer(transactional_id, producer_id, producer_epoch) {
            Ok(current) => current,
            Err(error) => return Decision::Answer(Err(error)),
        };
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
                let start_ms = if state == TxnState::Ongoing {
                    current.start_ms
                } else {
                    Some(now)
                };
                let mut all = if state == TxnState::Ongoing {
                    current.partitions.clone()
                } else {
                    BTreeSet::new()
                };
                all.extend(partitions.iter().cloned());
                self.propose(
                    transactional_id,
                    TxnMetadata {
                        state: TxnState::Ongoing,
                        partitions: all,
                        start_ms,
                        ..current
                    },
                )
            }
        }
    }

    /// `EndTxn` from the client (`TransactionCoordinator#handleEndTransaction`):
    /// an open transaction moves to `PrepareCommit` or `PrepareAbort`; a
    /// retry of a completed one succeeds; anything else is refused.
    pub fn end_txn(
        &mut self,
        transactional_id: &str,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        commit: bool,
    ) -> Decision {
        let current = match self.check_producer(transactional_id, producer_id, producer_epoch) {
            Ok(current) => current,
            Err(error) => return Decision::Answer(Err(error)),
        };
        let answer = |result| Decision::Answer(result);
        match (current.state, commit) {
            (TxnState::Ongoing, _) => self.propose(
                transactional_id,
                TxnMetadata {
                    state: if commit {
                        TxnState::PrepareCommit
                    } else {
                        TxnState::PrepareAbort
                    },
                    ..current
                },
            ),
            (TxnState::CompleteCommit, true) | (TxnState::CompleteAbort, false) => answer(Ok(TxnReply::Done)),
            (TxnState::PrepareCommit, true) | (TxnState::PrepareAbort, false) => {
                answer(Err(TxnError::ConcurrentTransactions))
            }
            _ => answer(Err(TxnError::InvalidTxnState)),
        }
    }

    /// Transactions open longer than their timeout at `now`
    /// (`TransactionStateManager#timedOutTransactions`): each is aborted
    /// with a bumped epoch, which fences the producer that left it open
    /// (`TransactionCoordinator#abortTimedOutTransactions`). Returns the
    /// writes.
    pub fn abort_timed_out(&mut self, now: u64) -> Vec<TxnRecord> {
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
                match self.propose(
                    &id,
                    TxnMetadata {
                        producer_epoch: current.producer_epoch + 1,
                        state: TxnState::PrepareAbort,
                        ..current
                    },
                ) {
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
                reply: Some(Ok(TxnReply::Done)),
                markers: Some(markers(ControlType::Commit)),
            },
            TxnState::PrepareAbort => AfterCommit {
                reply: Some(if fencing {
                    Err(TxnError::ConcurrentTransactions)
                } else {
                    Ok(TxnReply::Done)
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
    /// state goes to the log.
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
        match self.propose(
            transactional_id,
            TxnMetadata {
                state,
                partitions: BTreeSet::new(),
                start_ms: None,
                ..current
            },
        ) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(partition: u32) -> TopicPartition {
        TopicPartition::new(std::sync::Arc::from("payments"), partition)
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

    #[test]
    fn a_transaction_commits_through_prepare_markers_and_complete() {
        let mut shard = TxnShard::default();
        let decision = shard.init_producer_id("tx", 60_000, 4000);
        let (answer, _) = commit(&mut shard, "tx", decision);
        assert_eq!(answer, Ok(TxnReply::ProducerIdAndEpoch(4000, 0)));
        let decision = shard.add_partitions("tx", 4000, 0, &[tp(0), tp(1)], 10);
        assert!(matches!(decision, Decision::Write(_)));
        // While it is written, the id is busy.
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true),
            Decision::Answer(Err(TxnError::ConcurrentTransactions))
        );
        shard.committed("tx", false);
        // Partitions already added need no write.
        assert_eq!(
            shard.add_partitions("tx", 4000, 0, &[tp(1)], 20),
            Decision::Answer(Ok(TxnReply::Done))
        );
        let decision = shard.end_txn("tx", 4000, 0, true);
        let (answer, after) = commit(&mut shard, "tx", decision);
        assert_eq!(answer, Ok(TxnReply::Done));
        let markers = after.markers.expect("markers go out");
        assert_eq!(markers.control, ControlType::Commit);
        assert_eq!(markers.partitions.len(), 2);
        // A retried commit while the markers are out must wait.
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true),
            Decision::Answer(Err(TxnError::ConcurrentTransactions))
        );
        let complete = shard.markers_written("tx").expect("complete");
        assert_eq!(complete.metadata.state, TxnState::CompleteCommit);
        shard.committed("tx", false);
        assert_eq!(shard.end_txn("tx", 4000, 0, true), Decision::Answer(Ok(TxnReply::Done)));
        assert_eq!(
            shard.end_txn("tx", 4000, 0, false),
            Decision::Answer(Err(TxnError::InvalidTxnState))
        );
    }

    #[test]
    fn a_new_instance_fences_the_old_one_and_aborts_what_it_left_open() {
        let mut shard = TxnShard::default();
        let decision = shard.init_producer_id("tx", 60_000, 4000);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        let decision = shard.add_partitions("tx", 4000, 0, &[tp(0)], 10);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        // The new instance: the open transaction is aborted with epoch 1.
        let Decision::Write(record) = shard.init_producer_id("tx", 60_000, 9999) else {
            panic!("a write");
        };
        assert_eq!(record.metadata.producer_epoch, 1);
        let after = shard.committed("tx", true);
        assert_eq!(after.reply, Some(Err(TxnError::ConcurrentTransactions)));
        let markers = after.markers.expect("abort markers");
        assert_eq!((markers.control, markers.producer_epoch), (ControlType::Abort, 1));
        // The zombie is fenced.
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true),
            Decision::Answer(Err(TxnError::ProducerFenced))
        );
        assert_eq!(
            shard.add_partitions("tx", 4000, 0, &[tp(1)], 30),
            Decision::Answer(Err(TxnError::ProducerFenced))
        );
        // The new instance retries until the abort is complete.
        assert_eq!(
            shard.init_producer_id("tx", 60_000, 9999),
            Decision::Answer(Err(TxnError::ConcurrentTransactions))
        );
        shard.markers_written("tx").expect("complete");
        shard.committed("tx", false);
        let decision = shard.init_producer_id("tx", 60_000, 9999);
        let (answer, _) = commit(&mut shard, "tx", decision);
        assert_eq!(
            answer,
            Ok(TxnReply::ProducerIdAndEpoch(4000, 2)),
            "same id, a newer epoch"
        );
    }

    #[test]
    fn a_transaction_past_its_timeout_is_aborted_with_a_bumped_epoch() {
        let mut shard = TxnShard::default();
        let decision = shard.init_producer_id("tx", 1_000, 4000);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        let decision = shard.add_partitions("tx", 4000, 0, &[tp(0)], 100);
        assert!(commit(&mut shard, "tx", decision).0.is_ok());
        assert!(shard.abort_timed_out(1_100).is_empty(), "not past it yet");
        let writes = shard.abort_timed_out(1_101);
        assert_eq!(writes.len(), 1);
        assert_eq!(writes[0].metadata.state, TxnState::PrepareAbort);
        let after = shard.committed("tx", false);
        assert_eq!(after.markers.map(|markers| markers.control), Some(ControlType::Abort));
        assert_eq!(
            shard.end_txn("tx", 4000, 0, true),
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
                producer_id: 7,
                producer_epoch: 2,
                timeout_ms: 60_000,
                state: TxnState::PrepareCommit,
                partitions,
                start_ms: Some(5),
            },
        });
        let resend = loaded.on_loaded();
        assert_eq!(resend.len(), 1);
        assert_eq!((resend[0].control, resend[0].producer_epoch), (ControlType::Commit, 2));
        assert_eq!(
            loaded.init_producer_id("other", 900_001, 1),
            Decision::Answer(Err(TxnError::InvalidTransactionTimeout))
        );
        // A failed write leaves the metadata as it was.
        let decision = loaded.init_producer_id("fresh", 60_000, 11);
        assert!(matches!(decision, Decision::Write(_)));
        assert_eq!(loaded.write_failed("fresh"), Err(TxnError::NotCoordinator));
        assert!(loaded.get("fresh").is_none());
    }
}
