//! The broker's producer state: what a partition leader remembers about each
//! idempotent producer, and how it judges an incoming batch by it.
//!
//! Kafka keeps, per partition, a table from producer id to an entry
//! (`ProducerStateManager`, `ProducerStateEntry`): the producer's epoch, its
//! last five batches (`BatchMetadata`), the time of its last write and, for
//! transactional producers, the coordinator epoch and the first offset of the
//! open transaction. A batch from a client is checked in the order
//! `UnifiedLog#analyzeAndValidateProducerState` uses:
//!
//! 1. a batch whose (epoch, first sequence, last sequence) matches one of the
//!    cached batches exactly is a duplicate: nothing is written and the
//!    client gets the original offsets (`ProducerStateEntry#findDuplicateBatch`);
//! 2. an epoch older than the entry's fails with `INVALID_PRODUCER_EPOCH`
//!    (`ProducerAppendInfo#checkProducerEpoch`);
//! 3. a new epoch must start at sequence 0, the same epoch must continue the
//!    last sequence (wrapping after `Integer.MAX_VALUE`), else
//!    `OUT_OF_ORDER_SEQUENCE_NUMBER` (`ProducerAppendInfo#checkSequence`). A
//!    producer the table does not know (new, or expired) is accepted at any
//!    sequence and any epoch.
//!
//! Accepted batches are folded into the entry (`ProducerAppendInfo#appendDataBatch`,
//! `ProducerStateManager#update`); idle producers are dropped after
//! `producer.id.expiration.ms` (`ProducerStateManager#removeExpiredProducers`).
//! Transactions (KIP-98) add to the same table: a transactional batch opens
//! a transaction at its first offset, a `COMMIT` or `ABORT` marker from the
//! transaction coordinator closes it (`ProducerAppendInfo#appendEndTxnMarker`),
//! and the table keeps the open ones and the closed ones whose marker the
//! high watermark has not passed yet (`ongoingTxns`, `unreplicatedTxns`),
//! which is what the last stable offset is made of
//! (see [`super::transactions`]).

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use super::transactions::{AbortedTxn, CompletedTxn, ControlType, TransactionIndex, TxnMetadata};
use super::Offset;

/// Batches per producer the broker remembers for duplicate detection
/// (`ProducerStateEntry.NUM_BATCHES_TO_RETAIN`).
pub const BATCHES_RETAINED: usize = 5;

pub use crate::protocol::{ProducerEpoch, ProducerId};

/// The epoch of an entry that has seen no batch (`RecordBatch.NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_EPOCH: ProducerEpoch = -1;

/// The sequence of an entry with no cached batch (`RecordBatch.NO_SEQUENCE`).
pub const NO_SEQUENCE: i32 = -1;

/// The timestamp of an entry that has seen no batch (`RecordBatch.NO_TIMESTAMP`).
pub const NO_TIMESTAMP: i64 = -1;

/// The coordinator epoch of an entry that has seen no transaction marker.
pub const NO_COORDINATOR_EPOCH: i32 = -1;

/// `producer.id.expiration.ms`'s default (one day).
pub const DEFAULT_PRODUCER_ID_EXPIRATION_MS: i64 = 86_400_000;

/// `sequence + increment`, wrapping past `Integer.MAX_VALUE` to 0
/// (`DefaultRecordBatch#incrementSequence`).
pub fn increment_sequence(sequence: i32, increment: i32) -> i32 {
    if sequence > i32::MAX - increment {
        increment - (i32::MAX - sequence) - 1
    } else {
        sequence + increment
    }
}

/// `sequence - decrement`, wrapping below 0 to `Integer.MAX_VALUE`
/// (`DefaultRecordBatch#decrementSequence`).
pub fn decrement_sequence(sequence: i32, decrement: i32) -> i32 {
    if sequence < decrement {
        i32::MAX - (decrement - sequence) + 1
    } else {
        sequence - decrement
    }
}

/// Whether `next` directly follows `last` (`ProducerAppendInfo#inSequence`):
/// `last + 1` computed without overflow, or 0 after `Integer.MAX_VALUE`.
fn in_sequence(last: i32, next: i32) -> bool {
    i64::from(next) == i64::from(last) + 1 || (next == 0 && last == i32::MAX)
}

/// The sequence expected after `last` (0 after `Integer.MAX_VALUE`, and 0
/// when there is no last sequence).
fn next_sequence(last: i32) -> i32 {
    if last == i32::MAX {
        0
    } else {
        last + 1
    }
}

/// One cached batch of a producer (`BatchMetadata`): stored by its end, the
/// start derived from the offset delta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchMetadata {
    /// The last record's sequence.
    pub last_seq: i32,
    /// The last record's offset.
    pub last_offset: Offset,
    /// `last_offset - first_offset` (also the sequence delta of a v2 batch).
    pub offset_delta: i32,
    /// The batch's max timestamp.
    pub timestamp: i64,
}

impl BatchMetadata {
    /// The first record's sequence (`BatchMetadata#firstSeq`, wrapping).
    pub fn first_seq(&self) -> i32 {
        decrement_sequence(self.last_seq, self.offset_delta)
    }

    /// The first record's offset (`BatchMetadata#firstOffset`).
    pub fn first_offset(&self) -> Offset {
        self.last_offset - self.offset_delta as Offset
    }
}

/// What the broker remembers about one producer on one partition
/// (`ProducerStateEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProducerStateEntry {
    /// The producer's epoch ([`NO_PRODUCER_EPOCH`] before its first batch).
    pub producer_epoch: ProducerEpoch,
    /// The epoch of the transaction coordinator that wrote its last marker.
    pub coordinator_epoch: i32,
    /// The timestamp of its last batch or marker (what expiry measures).
    pub last_timestamp: i64,
    /// The first offset of its open transaction, if one is open.
    pub current_txn_first_offset: Option<Offset>,
    /// Its last batches of the current epoch, oldest first, at most
    /// [`BATCHES_RETAINED`].
    pub batch_metadata: VecDeque<BatchMetadata>,
}

impl Default for ProducerStateEntry {
    fn default() -> Self {
        Self::empty()
    }
}

impl ProducerStateEntry {
    /// An entry that has seen nothing (`ProducerStateEntry.empty`).
    pub fn empty() -> Self {
        Self {
            producer_epoch: NO_PRODUCER_EPOCH,
            coordinator_epoch: NO_COORDINATOR_EPOCH,
            last_timestamp: NO_TIMESTAMP,
            current_txn_first_offset: None,
            batch_metadata: VecDeque::new(),
        }
    }

    /// Whether no batch is cached (`ProducerStateEntry#isEmpty`).
    pub fn is_empty(&self) -> bool {
        self.batch_metadata.is_empty()
    }

    /// The oldest cached batch's first sequence, or [`NO_SEQUENCE`]
    /// (`ProducerStateEntry#firstSeq`).
    pub fn first_seq(&self) -> i32 {
        self.batch_metadata
            .front()
            .map_or(NO_SEQUENCE, BatchMetadata::first_seq)
    }

    /// The newest cached batch's last sequence, or [`NO_SEQUENCE`]
    /// (`ProducerStateEntry#lastSeq`).
    pub fn last_seq(&self) -> i32 {
        self.batch_metadata.back().map_or(NO_SEQUENCE, |batch| batch.last_seq)
    }

    /// The oldest cached batch's first offset (`ProducerStateEntry#firstDataOffset`,
    /// -1 there when empty).
    pub fn first_data_offset(&self) -> Option<Offset> {
        self.batch_metadata.front().map(BatchMetadata::first_offset)
    }

    /// The newest cached batch's last offset (`ProducerStateEntry#lastDataOffset`,
    /// -1 there when empty).
    pub fn last_data_offset(&self) -> Option<Offset> {
        self.batch_metadata.back().map(|batch| batch.last_offset)
    }

    /// The cached batch a client batch repeats: same epoch and exactly the
    /// same sequence range (`ProducerStateEntry#findDuplicateBatch`,
    /// `#batchWithSequenceRange`).
    pub fn find_duplicate_batch(
        &self,
        producer_epoch: ProducerEpoch,
        first_seq: i32,
        last_seq: i32,
    ) -> Option<BatchMetadata> {
        if producer_epoch != self.producer_epoch {
            return None;
        }
        self.batch_metadata
            .iter()
            .find(|batch| batch.first_seq() == first_seq && batch.last_seq == last_seq)
            .copied()
    }

    /// Adopts `producer_epoch`, forgetting the cached batches if it is a
    /// different one (`ProducerStateEntry#maybeUpdateProducerEpoch`). Returns
    /// whether the epoch changed.
    pub fn maybe_update_producer_epoch(&mut self, producer_epoch: ProducerEpoch) -> bool {
        if self.producer_epoch == producer_epoch {
            return false;
        }
        self.batch_metadata.clear();
        self.producer_epoch = producer_epoch;
        true
    }

    /// Caches a batch, dropping the oldest beyond [`BATCHES_RETAINED`]
    /// (`ProducerStateEntry#addBatchMetadata`).
    fn add_batch_metadata(&mut self, batch: BatchMetadata) {
        if self.batch_metadata.len() == BATCHES_RETAINED {
            self.batch_metadata.pop_front();
        }
        self.batch_metadata.push_back(batch);
    }

    /// Records an appended batch (`ProducerStateEntry#addBatch`).
    pub fn add_batch(&mut self, producer_epoch: ProducerEpoch, batch: BatchMetadata) {
        self.maybe_update_producer_epoch(producer_epoch);
        self.last_timestamp = batch.timestamp;
        self.add_batch_metadata(batch);
    }

    /// Folds the entry an append produced into this one
    /// (`ProducerStateEntry#update(ProducerStateEntry)`): its epoch (a new
    /// one clears the cache), its batches, coordinator epoch, open
    /// transaction and timestamp.
    pub fn update(&mut self, next: ProducerStateEntry) {
        self.maybe_update_producer_epoch(next.producer_epoch);
        for batch in next.batch_metadata {
            self.add_batch_metadata(batch);
        }
        self.coordinator_epoch = next.coordinator_epoch;
        self.current_txn_first_offset = next.current_txn_first_offset;
        self.last_timestamp = next.last_timestamp;
    }
}

/// Where an append comes from, which decides how much is checked
/// (`AppendOrigin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AppendOrigin {
    /// A producer's request: epoch, sequence and duplicate checks.
    Client,
    /// A follower copying the leader's log: no checks (already validated).
    Replication,
    /// A coordinator (offset commits, transaction markers): epoch checks,
    /// no sequence checks.
    Coordinator,
}

/// Why a batch was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "error", rename_all = "kebab-case")]
pub enum ProducerStateError {
    /// `OutOfOrderSequenceException` (`OUT_OF_ORDER_SEQUENCE_NUMBER`): a gap,
    /// an old sequence that is not an exact duplicate, or a new epoch not
    /// starting at 0.
    OutOfOrderSequence {
        /// The sequence the broker expected.
        expected: i32,
    },
    /// `InvalidProducerEpochException` (`INVALID_PRODUCER_EPOCH`): an older
    /// epoch than the broker knows.
    InvalidProducerEpoch {
        /// The epoch the broker knows.
        current: ProducerEpoch,
    },
    /// `InvalidTxnStateException`: a non-transactional batch while the
    /// producer has a transaction open.
    InvalidTxnState,
    /// `TransactionCoordinatorFencedException` (`TRANSACTION_COORDINATOR_FENCED`):
    /// a marker from a coordinator epoch older than the last one seen.
    TransactionCoordinatorFenced {
        /// The coordinator epoch the partition knows.
        current: i32,
    },
}

impl ProducerStateError {
    /// The Java exception's simple name.
    pub fn exception_name(&self) -> &'static str {
        match self {
            Self::OutOfOrderSequence { .. } => "OutOfOrderSequenceException",
            Self::InvalidProducerEpoch { .. } => "InvalidProducerEpochException",
            Self::InvalidTxnState => "InvalidTxnStateException",
            Self::TransactionCoordinatorFenced { .. } => "TransactionCoordinatorFencedException",
        }
    }
}

/// A data batch as the producer-state checks see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DataBatch {
    /// The producer epoch.
    pub producer_epoch: ProducerEpoch,
    /// The first record's sequence.
    pub first_seq: i32,
    /// The last record's sequence (wrapped past `Integer.MAX_VALUE`).
    pub last_seq: i32,
    /// The offset the first record gets.
    pub first_offset: Offset,
    /// The offset the last record gets.
    pub last_offset: Offset,
    /// The batch's max timestamp.
    pub max_timestamp: i64,
    /// Whether the batch belongs to a transaction.
    pub is_transactional: bool,
}

/// `VerificationGuard.SENTINEL`: no verification (a partition already in
/// the producer's transaction, or none asked).
pub const SENTINEL_GUARD: u64 = 0;

/// A leader's verification of one producer's transaction in progress
/// (KIP-890, `VerificationStateEntry`): the guard the verified append must
/// bring, and the lowest sequence and highest epoch seen while it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct VerificationState {
    /// Unique per verification (`VerificationGuard`; never
    /// [`SENTINEL_GUARD`]).
    pub guard: u64,
    /// The lowest first sequence of the batches verifying
    /// (`lowestSequence`): a later append must not start above it.
    pub lowest_sequence: i32,
    /// The epoch they carry.
    pub epoch: ProducerEpoch,
    /// A transaction version 2 producer (the add also bumps epochs).
    pub supports_epoch_bump: bool,
}

impl VerificationState {
    /// `maybeUpdateLowestSequenceAndEpoch`: a newer epoch starts over; a
    /// lower sequence of the same one is kept.
    fn update(&mut self, sequence: i32, epoch: ProducerEpoch) {
        if self.epoch < epoch {
            self.lowest_sequence = sequence;
            self.epoch = epoch;
        } else if self.lowest_sequence > sequence {
            self.lowest_sequence = sequence;
        }
    }
}

/// The validation and accumulation of one append's batches from one producer
/// (`ProducerAppendInfo`): checked against the entry as it was before the
/// append, then against the batches of this append.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerAppendInfo {
    producer_id: ProducerId,
    origin: AppendOrigin,
    current_entry: ProducerStateEntry,
    updated_entry: ProducerStateEntry,
    /// Transactions this append opened (`ProducerAppendInfo#startedTransactions`).
    started_transactions: Vec<TxnMetadata>,
    /// The producer's verification in progress, if any.
    verification: Option<VerificationState>,
}

impl ProducerAppendInfo {
    /// Starts an append for `producer_id` whose entry is `current_entry`
    /// (empty for an unknown producer). The updated entry starts as a copy
    /// without batches (`ProducerStateEntry#withProducerIdAndBatchMetadata`).
    pub fn new(producer_id: ProducerId, current_entry: ProducerStateEntry, origin: AppendOrigin) -> Self {
        let updated_entry = ProducerStateEntry {
            batch_metadata: VecDeque::new(),
            ..current_entry.clone()
        };
        Self {
            producer_id,
            origin,
            current_entry,
            updated_entry,
            started_transactions: Vec::new(),
            verification: None,
        }
    }

    /// The producer this append is for.
    pub fn producer_id(&self) -> ProducerId {
        self.producer_id
    }

    /// The entry this append leads to, to be folded in by
    /// [`ProducerStateTable::update`] (`ProducerAppendInfo#toEntry`).
    pub fn to_entry(&self) -> &ProducerStateEntry {
        &self.updated_entry
    }

    /// An epoch older than the known one is refused, except from replication
    /// (`ProducerAppendInfo#checkProducerEpoch`).
    fn check_producer_epoch(&self, producer_epoch: ProducerEpoch) -> Result<(), ProducerStateError> {
        if producer_epoch < self.updated_entry.producer_epoch && self.origin != AppendOrigin::Replication {
            return Err(ProducerStateError::InvalidProducerEpoch {
                current: self.updated_entry.producer_epoch,
            });
        }
        Ok(())
    }

    /// The sequence rule (`ProducerAppendInfo#checkSequence`, without the
    /// transaction verification guard): a new epoch starts at 0 unless the
    /// producer had no epoch; the same epoch continues the last sequence,
    /// unless the producer had no epoch.
    fn check_sequence(&self, producer_epoch: ProducerEpoch, first_seq: i32) -> Result<(), ProducerStateError> {
        if let Some(verification) = self.verification {
            // Kafka 4.1: a transaction version 2 producer with no state
            // here starts at sequence 0 ("Expected sequence 0 for
            // transactions v2 idempotent producer with no existing state").
            if verification.supports_epoch_bump && first_seq != 0 && self.current_entry.is_empty() {
                return Err(ProducerStateError::OutOfOrderSequence { expected: 0 });
            }
            // No batch may overtake the lowest one still verifying.
            if first_seq > verification.lowest_sequence {
                return Err(ProducerStateError::OutOfOrderSequence {
                    expected: verification.lowest_sequence,
                });
            }
        }
        if producer_epoch != self.updated_entry.producer_epoch {
            if first_seq != 0 && self.updated_entry.producer_epoch != NO_PRODUCER_EPOCH {
                return Err(ProducerStateError::OutOfOrderSequence { expected: 0 });
            }
            return Ok(());
        }
        let current_last_seq = if !self.updated_entry.is_empty() {
            self.updated_entry.last_seq()
        } else if producer_epoch == self.current_entry.producer_epoch {
            self.current_entry.last_seq()
        } else {
            NO_SEQUENCE
        };
        // With no epoch (all its records deleted, or never seen) any
        // sequence is accepted.
        if self.current_entry.producer_epoch == NO_PRODUCER_EPOCH || in_sequence(current_last_seq, first_seq) {
            Ok(())
        } else {
            Err(ProducerStateError::OutOfOrderSequence {
                expected: next_sequence(current_last_seq),
            })
        }
    }

    /// The checks of a data batch, without recording it
    /// (`ProducerAppendInfo#maybeValidateDataBatch`): the epoch always, the
    /// sequence for client batches.
    pub fn validate_data_batch(&self, producer_epoch: ProducerEpoch, first_seq: i32) -> Result<(), ProducerStateError> {
        self.check_producer_epoch(producer_epoch)?;
        if self.origin == AppendOrigin::Client {
            self.check_sequence(producer_epoch, first_seq)?;
        }
        Ok(())
    }

    /// Checks a data batch and records it in the updated entry
    /// (`ProducerAppendInfo#appendDataBatch`); a transactional batch with no
    /// open transaction opens one at its first offset.
    pub fn append_data_batch(&mut self, batch: &DataBatch) -> Result<(), ProducerStateError> {
        self.validate_data_batch(batch.producer_epoch, batch.first_seq)?;
        let offset_delta =
            i32::try_from(batch.last_offset - batch.first_offset).expect("a batch's offset delta is an int");
        self.updated_entry.add_batch(
            batch.producer_epoch,
            BatchMetadata {
                last_seq: batch.last_seq,
                last_offset: batch.last_offset,
                offset_delta,
                timestamp: batch.max_timestamp,
            },
        );
        match (self.updated_entry.current_txn_first_offset, batch.is_transactional) {
            (Some(_), false) => Err(ProducerStateError::InvalidTxnState),
            (None, true) => {
                self.updated_entry.current_txn_first_offset = Some(batch.first_offset);
                self.started_transactions.push(TxnMetadata {
                    producer_id: self.producer_id,
                    first_offset: batch.first_offset,
                    last_offset: None,
                });
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Checks a `COMMIT` or `ABORT` marker written at `offset` and records it
    /// (`ProducerAppendInfo#appendEndTxnMarker`): an older producer epoch is
    /// refused (`INVALID_PRODUCER_EPOCH`), so is an older coordinator epoch
    /// (`TRANSACTION_COORDINATOR_FENCED`), except from replication. A marker
    /// closing an open transaction completes it; one with nothing open is
    /// written but completes nothing. Either way the producer adopts the
    /// marker's epochs and has no transaction open.
    pub fn append_end_txn_marker(
        &mut self,
        control: ControlType,
        producer_epoch: ProducerEpoch,
        coordinator_epoch: i32,
        offset: Offset,
        timestamp: i64,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        self.check_producer_epoch(producer_epoch)?;
        if self.updated_entry.coordinator_epoch > coordinator_epoch && self.origin != AppendOrigin::Replication {
            return Err(ProducerStateError::TransactionCoordinatorFenced {
                current: self.updated_entry.coordinator_epoch,
            });
        }
        let completed = self
            .updated_entry
            .current_txn_first_offset
            .map(|first_offset| CompletedTxn {
                producer_id: self.producer_id,
                first_offset,
                last_offset: offset,
                is_aborted: control == ControlType::Abort,
            });
        self.updated_entry.maybe_update_producer_epoch(producer_epoch);
        self.updated_entry.current_txn_first_offset = None;
        self.updated_entry.coordinator_epoch = coordinator_epoch;
        self.updated_entry.last_timestamp = timestamp;
        Ok(completed)
    }
}

/// What a client's batch leads to (`UnifiedLog#append` for
/// `AppendOrigin.CLIENT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ClientAppend {
    /// Written at these offsets.
    Appended {
        /// The first record's offset.
        first_offset: Offset,
        /// The last record's offset.
        last_offset: Offset,
    },
    /// A repeat of a cached batch: nothing written, these are the original
    /// offsets.
    Duplicate {
        /// The first record's original offset.
        first_offset: Offset,
        /// The last record's original offset.
        last_offset: Offset,
    },
}

/// The verdict on an incoming client batch, before any offset is assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SequenceCheck {
    /// In sequence: append it.
    Append,
    /// Seen before: do not append; answer with the original offsets.
    Duplicate {
        /// The offset the batch's first record got the first time.
        first_offset: Offset,
        /// The offset the batch's last record got the first time.
        last_offset: Offset,
    },
    /// `OUT_OF_ORDER_SEQUENCE_NUMBER`: a gap, an old sequence that is not an
    /// exact duplicate, or a new epoch not starting at 0.
    OutOfOrder {
        /// The sequence the broker expected.
        expected: i32,
    },
    /// `INVALID_PRODUCER_EPOCH`: an older epoch than the broker knows.
    StaleEpoch,
    /// `INVALID_TXN_STATE` ("Record was not part of an ongoing
    /// transaction"): a transactional batch that neither continues the
    /// producer's open transaction here nor brings the guard of a
    /// verification that said the partition is in it (KIP-890).
    NotInTransaction,
}

/// One partition's producer state: producer id → entry, and the
/// transactions that hold the last stable offset back
/// (`ProducerStateManager`, without snapshots and verification state).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProducerStateTable {
    producers: BTreeMap<ProducerId, ProducerStateEntry>,
    /// Open transactions by first offset (`ongoingTxns`).
    ongoing: BTreeMap<Offset, TxnMetadata>,
    /// Closed transactions whose marker is not yet below the high
    /// watermark, by first offset (`unreplicatedTxns`).
    unreplicated: BTreeMap<Offset, TxnMetadata>,
    /// Verifications in progress on this partition's leader, by producer
    /// (`verificationStates`; in memory only, never rebuilt from the log).
    verification: BTreeMap<ProducerId, VerificationState>,
    /// The last guard handed out here.
    last_guard: u64,
}

impl ProducerStateTable {
    /// The entry of `producer_id`, if the table knows it
    /// (`ProducerStateManager#lastEntry`).
    pub fn last_entry(&self, producer_id: ProducerId) -> Option<&ProducerStateEntry> {
        self.producers.get(&producer_id)
    }

    /// Every known producer, by id (`ProducerStateManager#activeProducers`).
    pub fn active_producers(&self) -> &BTreeMap<ProducerId, ProducerStateEntry> {
        &self.producers
    }

    /// Forgets every producer and transaction (before rebuilding from the
    /// log); verifications in progress stay.
    pub fn clear(&mut self) {
        self.producers.clear();
        self.ongoing.clear();
        self.unreplicated.clear();
    }

    /// Whether the producer's transaction at `producer_epoch` is open here
    /// (`UnifiedLog#hasOngoingTransaction`).
    pub fn has_ongoing_transaction(&self, producer_id: ProducerId, producer_epoch: ProducerEpoch) -> bool {
        self.last_entry(producer_id)
            .is_some_and(|entry| entry.current_txn_first_offset.is_some() && entry.producer_epoch == producer_epoch)
    }

    /// A transactional batch arrives at the leader
    /// (`UnifiedLog#maybeStartTransactionVerification`): an epoch older than
    /// the producer's here is refused at once (Kafka 4.1); a batch of the
    /// transaction already open here needs no verification
    /// ([`SENTINEL_GUARD`]); otherwise a verification starts, or the one in
    /// progress goes on, and its guard is returned
    /// (`ProducerStateManager#maybeCreateVerificationStateEntry`).
    pub fn maybe_start_verification(
        &mut self,
        producer_id: ProducerId,
        sequence: i32,
        producer_epoch: ProducerEpoch,
        supports_epoch_bump: bool,
    ) -> Result<u64, ProducerStateError> {
        if let Some(entry) = self.last_entry(producer_id) {
            if producer_epoch < entry.producer_epoch {
                return Err(ProducerStateError::InvalidProducerEpoch {
                    current: entry.producer_epoch,
                });
            }
        }
        if self.has_ongoing_transaction(producer_id, producer_epoch) {
            return Ok(SENTINEL_GUARD);
        }
        let next_guard = self.last_guard + 1;
        let state = self.verification.entry(producer_id).or_insert(VerificationState {
            guard: next_guard,
            lowest_sequence: sequence,
            epoch: producer_epoch,
            supports_epoch_bump,
        });
        if state.guard == next_guard {
            self.last_guard = next_guard;
        }
        state.update(sequence, producer_epoch);
        Ok(state.guard)
    }

    /// The producer's verification in progress, if any.
    pub fn verification(&self, producer_id: ProducerId) -> Option<&VerificationState> {
        self.verification.get(&producer_id)
    }

    /// A transactional batch (data or marker) of `producer_id` at
    /// `producer_epoch` was appended: its verification is over
    /// (`UnifiedLog#updateProducers`). Except a transaction version 2
    /// marker at the epoch the verification carries: that verification
    /// is already the next transaction's (the marker of the one before
    /// bumped the epoch to it), so it stays.
    pub fn transactional_appended(&mut self, producer_id: ProducerId, producer_epoch: ProducerEpoch, control: bool) {
        let next_transaction_started = self
            .verification
            .get(&producer_id)
            .is_some_and(|state| state.supports_epoch_bump && control && state.epoch == producer_epoch);
        if !next_transaction_started {
            self.verification.remove(&producer_id);
        }
    }

    /// Open transactions, oldest first (`ongoingTxns`).
    pub fn ongoing_txns(&self) -> impl Iterator<Item = &TxnMetadata> {
        self.ongoing.values()
    }

    /// Closed transactions whose marker the high watermark has not passed,
    /// oldest first (`unreplicatedTxns`).
    pub fn unreplicated_txns(&self) -> impl Iterator<Item = &TxnMetadata> {
        self.unreplicated.values()
    }

    /// The first offset of the oldest open transaction
    /// (`ProducerStateManager#firstUndecidedOffset`).
    pub fn first_undecided_offset(&self) -> Option<Offset> {
        self.ongoing.keys().next().copied()
    }

    /// The first offset a `read_committed` reader may not pass: the oldest
    /// open transaction's, or an older closed one's whose marker is not
    /// replicated yet (`ProducerStateManager#firstUnstableOffset`).
    pub fn first_unstable_offset(&self) -> Option<Offset> {
        match (self.unreplicated.keys().next(), self.ongoing.keys().next()) {
            (Some(&unreplicated), Some(&undecided)) => Some(unreplicated.min(undecided)),
            (one, other) => one.or(other).copied(),
        }
    }

    /// [`Self::first_unstable_offset`] once the high watermark is at
    /// `high_watermark` (as if `on_high_watermark_updated` had run): closed
    /// transactions whose marker is below it no longer count.
    pub fn first_unstable_offset_below(&self, high_watermark: Offset) -> Option<Offset> {
        let unreplicated = self
            .unreplicated
            .values()
            .find(|txn| txn.last_offset.is_none_or(|last| last >= high_watermark))
            .map(|txn| txn.first_offset);
        match (unreplicated, self.ongoing.keys().next().copied()) {
            (Some(unreplicated), Some(undecided)) => Some(unreplicated.min(undecided)),
            (one, other) => one.or(other),
        }
    }

    /// What the transaction index records as the last stable offset when
    /// `completed` closes (`ProducerStateManager#lastStableOffset(CompletedTxn)`):
    /// the first offset of the oldest other producer's open transaction, or
    /// the offset after the marker.
    pub fn last_stable_offset_after(&self, completed: &CompletedTxn) -> Offset {
        self.ongoing
            .values()
            .find(|txn| txn.producer_id != completed.producer_id)
            .map_or(completed.last_offset + 1, |txn| txn.first_offset)
    }

    /// Moves a closed transaction from open to unreplicated
    /// (`ProducerStateManager#completeTxn`).
    pub fn complete_txn(&mut self, completed: &CompletedTxn) {
        let mut txn = self
            .ongoing
            .remove(&completed.first_offset)
            .expect("a completed transaction was open");
        txn.last_offset = Some(completed.last_offset);
        self.unreplicated.insert(completed.first_offset, txn);
    }

    /// Forgets closed transactions whose marker is below the new high
    /// watermark (`ProducerStateManager#onHighWatermarkUpdated`).
    pub fn on_high_watermark_updated(&mut self, high_watermark: Offset) {
        self.unreplicated
            .retain(|_, txn| txn.last_offset.is_none_or(|last| last >= high_watermark));
    }

    /// A marker written by the transaction coordinator at `offset`, as
    /// `UnifiedLog#append` handles it for `AppendOrigin.COORDINATOR` (or
    /// `origin`): checked and recorded; a closed transaction is completed,
    /// and an aborted one enters `index` with the last stable offset of that
    /// moment (`LogSegment#updateTxnIndex`).
    #[allow(clippy::too_many_arguments)]
    pub fn append_marker(
        &mut self,
        origin: AppendOrigin,
        producer_id: ProducerId,
        control: ControlType,
        producer_epoch: ProducerEpoch,
        coordinator_epoch: i32,
        offset: Offset,
        timestamp: i64,
        index: &mut TransactionIndex,
    ) -> Result<Option<CompletedTxn>, ProducerStateError> {
        let mut append = self.prepare_update(producer_id, origin);
        let completed = append.append_end_txn_marker(control, producer_epoch, coordinator_epoch, offset, timestamp)?;
        self.update(append);
        if let Some(completed) = &completed {
            let last_stable_offset = self.last_stable_offset_after(completed);
            if completed.is_aborted {
                index.append(AbortedTxn {
                    producer_id,
                    first_offset: completed.first_offset,
                    last_offset: completed.last_offset,
                    last_stable_offset,
                });
            }
            self.complete_txn(completed);
        }
        Ok(completed)
    }

    /// Starts an append for `producer_id` against its current entry, or an
    /// empty one (`ProducerStateManager#prepareUpdate`).
    pub fn prepare_update(&self, producer_id: ProducerId, origin: AppendOrigin) -> ProducerAppendInfo {
        let current = self.last_entry(producer_id).cloned().unwrap_or_default();
        let mut append = ProducerAppendInfo::new(producer_id, current, origin);
        append.verification = self.verification.get(&producer_id).copied();
        append
    }

    /// Folds an append's result into the table (`ProducerStateManager#update`).
    pub fn update(&mut self, append: ProducerAppendInfo) {
        let ProducerAppendInfo {
            producer_id,
            updated_entry,
            started_transactions,
            ..
        } = append;
        match self.producers.get_mut(&producer_id) {
            Some(entry) => entry.update(updated_entry),
            None => {
                self.producers.insert(producer_id, updated_entry);
            }
        }
        for txn in started_transactions {
            self.ongoing.insert(txn.first_offset, txn);
        }
    }

    /// Judges a client batch without changing anything: the duplicate check
    /// of `UnifiedLog#analyzeAndValidateProducerState` first, then
    /// `ProducerAppendInfo#maybeValidateDataBatch`.
    pub fn check(
        &self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        first_seq: i32,
        last_seq: i32,
    ) -> SequenceCheck {
        self.check_client(producer_id, producer_epoch, first_seq, last_seq, false, None)
    }

    /// [`Self::check`] for a batch that may be transactional: after the
    /// duplicate check, a transactional batch that does not continue an
    /// open transaction must bring the guard of the producer's
    /// verification when the log checks them (`verification` holds the
    /// request's guard when `transaction.partition.verification.enable`
    /// is on; `UnifiedLog#batchMissingRequiredVerification`).
    pub fn check_client(
        &self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        first_seq: i32,
        last_seq: i32,
        transactional: bool,
        verification: Option<u64>,
    ) -> SequenceCheck {
        if let Some(duplicate) = self
            .last_entry(producer_id)
            .and_then(|entry| entry.find_duplicate_batch(producer_epoch, first_seq, last_seq))
        {
            return SequenceCheck::Duplicate {
                first_offset: duplicate.first_offset(),
                last_offset: duplicate.last_offset,
            };
        }
        if let (true, Some(request_guard)) = (transactional, verification) {
            let verified = request_guard != SENTINEL_GUARD
                && self
                    .verification
                    .get(&producer_id)
                    .is_some_and(|state| state.guard == request_guard);
            if !self.has_ongoing_transaction(producer_id, producer_epoch) && !verified {
                return SequenceCheck::NotInTransaction;
            }
        }
        match self
            .prepare_update(producer_id, AppendOrigin::Client)
            .validate_data_batch(producer_epoch, first_seq)
        {
            Ok(()) => SequenceCheck::Append,
            Err(ProducerStateError::OutOfOrderSequence { expected }) => SequenceCheck::OutOfOrder { expected },
            Err(
                ProducerStateError::InvalidProducerEpoch { .. }
                | ProducerStateError::InvalidTxnState
                | ProducerStateError::TransactionCoordinatorFenced { .. },
            ) => SequenceCheck::StaleEpoch,
        }
    }

    /// A client's batch of `record_count` records from
    /// sequence `first_seq`, offered at `log_end_offset`, as
    /// `UnifiedLog#append` handles it: a duplicate returns the cached
    /// offsets, otherwise the batch is validated
    /// (`UnifiedLog.updateProducers`) and recorded (`ProducerStateManager#update`)
    /// at `log_end_offset..log_end_offset + record_count`. A transactional
    /// batch opens a transaction if its producer has none open.
    #[allow(clippy::too_many_arguments)]
    pub fn append_client(
        &mut self,
        producer_id: ProducerId,
        producer_epoch: ProducerEpoch,
        first_seq: i32,
        record_count: u32,
        log_end_offset: Offset,
        max_timestamp: i64,
        is_transactional: bool,
    ) -> Result<ClientAppend, ProducerStateError> {
        assert!(record_count > 0, "a batch has records");
        let delta = i32::try_from(record_count - 1).expect("a batch's record count is an int");
        let last_seq = increment_sequence(first_seq, delta);
        if let Some(duplicate) = self
            .last_entry(producer_id)
            .and_then(|entry| entry.find_duplicate_batch(producer_epoch, first_seq, last_seq))
        {
            return Ok(ClientAppend::Duplicate {
                first_offset: duplicate.first_offset(),
                last_offset: duplicate.last_offset,
            });
        }
        let batch = DataBatch {
            producer_epoch,
            first_seq,
            last_seq,
            first_offset: log_end_offset,
            last_offset: log_end_offset + Offset::from(record_count - 1),
            max_timestamp,
            is_transactional,
        };
        let mut append = self.prepare_update(producer_id, AppendOrigin::Client);
        append.append_data_batch(&batch)?;
        self.update(append);
        Ok(ClientAppend::Appended {
            first_offset: batch.first_offset,
            last_offset: batch.last_offset,
        })
    }

    /// Records a batch already in the log without checking it, as a replica
    /// does when it appends or rebuilds from its log
    /// (`AppendOrigin.REPLICATION`; an older epoch is only logged there).
    pub fn record(&mut self, producer_id: ProducerId, batch: &DataBatch) -> Result<(), ProducerStateError> {
        let mut append = self.prepare_update(producer_id, AppendOrigin::Replication);
        append.append_data_batch(batch)?;
        self.update(append);
        Ok(())
    }

    /// Drops the producers with no open transaction whose last write is at
    /// least `expiration_ms` (`producer.id.expiration.ms`) before `now_ms`
    /// (`ProducerStateManager#removeExpiredProducers`, `#isProducerExpired`);
    /// returns their ids, ascending.
    pub fn remove_expired_producers(&mut self, now_ms: i64, expiration_ms: i64) -> Vec<ProducerId> {
        let expired: Vec<ProducerId> = self
            .producers
            .iter()
            .filter(|(_, entry)| {
                entry.current_txn_first_offset.is_none() && now_ms - entry.last_timestamp >= expiration_ms
            })
            .map(|(&producer_id, _)| producer_id)
            .collect();
        for producer_id in &expired {
            self.producers.remove(producer_id);
        }
        expired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table where producer 7 (epoch 0) last wrote `last_seq - 1..=last_seq`
    /// at offsets 40..=41 (or just `last_seq` at 40).
    fn table_with_last(last_seq: i32) -> ProducerStateTable {
        let mut table = ProducerStateTable::default();
        let first_seq = last_seq.saturating_sub(1).max(0);
        let delta = (last_seq - first_seq) as u64;
        table
            .record(
                7,
                &DataBatch {
                    producer_epoch: 0,
                    first_seq,
                    last_seq,
                    first_offset: 40,
                    last_offset: 40 + delta,
                    max_timestamp: 1_000,
                    is_transactional: false,
                },
            )
            .unwrap();
        table
    }

    /// A transactional batch of producer 7 appended as the leader does
    /// after its checks: recorded, then its verification is over.
    fn append_transactional(table: &mut ProducerStateTable, epoch: ProducerEpoch, first_seq: i32, offset: Offset) {
        table
            .record(
                7,
                &DataBatch {
                    producer_epoch: epoch,
                    first_seq,
                    last_seq: first_seq,
                    first_offset: offset,
                    last_offset: offset,
                    max_timestamp: 0,
                    is_transactional: true,
                },
            )
            .unwrap();
        table.transactional_appended(7, epoch, false);
    }

    /// `UnifiedLogTest#testTransactionIsOngoingAndVerificationGuardTV2`
    /// (and its TV1 twin): a guard while verifying, none needed while the
    /// transaction is open, a new one after the marker.
    #[test]
    fn a_verification_guard_lasts_until_the_transaction_is_open_here() {
        for supports_epoch_bump in [false, true] {
            let mut table = ProducerStateTable::default();
            let guard = table.maybe_start_verification(7, 0, 0, supports_epoch_bump).unwrap();
            assert_ne!(guard, SENTINEL_GUARD);
            assert_eq!(
                table.maybe_start_verification(7, 0, 0, supports_epoch_bump),
                Ok(guard),
                "the same verification goes on"
            );
            assert_eq!(table.check_client(7, 0, 0, 0, true, Some(guard)), SequenceCheck::Append);
            assert_eq!(
                table.check_client(7, 0, 0, 0, true, Some(guard + 1)),
                SequenceCheck::NotInTransaction
            );
            append_transactional(&mut table, 0, 0, 0);
            assert!(table.verification(7).is_none(), "the first append ends it");
            assert!(table.has_ongoing_transaction(7, 0));
            assert_eq!(
                table.maybe_start_verification(7, 1, 0, supports_epoch_bump),
                Ok(SENTINEL_GUARD)
            );
            let marker_epoch = if supports_epoch_bump { 1 } else { 0 };
            table
                .append_marker(
                    AppendOrigin::Coordinator,
                    7,
                    ControlType::Commit,
                    marker_epoch,
                    0,
                    1,
                    0,
                    &mut TransactionIndex::default(),
                )
                .unwrap();
            let next = table
                .maybe_start_verification(7, 0, marker_epoch, supports_epoch_bump)
                .unwrap();
            assert!(
                next != SENTINEL_GUARD && next != guard,
                "a new guard for the next transaction"
            );
        }
    }

    /// `UnifiedLogTest#testNextTransactionVerificationGuardNotCleared`: a
    /// version 2 verification at the epoch a marker carries is the next
    /// transaction's; `#testEmptyTransactionStillClearsVerificationGuard`:
    /// any other marker ends it.
    #[test]
    fn a_version_2_marker_keeps_the_next_transactions_guard() {
        let mut table = ProducerStateTable::default();
        let guard = table.maybe_start_verification(7, 0, 1, true).unwrap();
        table.transactional_appended(7, 1, true);
        assert_eq!(table.verification(7).map(|state| state.guard), Some(guard));
        table.transactional_appended(7, 0, true);
        assert!(table.verification(7).is_none());
        let mut table = ProducerStateTable::default();
        table.maybe_start_verification(7, 0, 1, false).unwrap();
        table.transactional_appended(7, 1, true);
        assert!(table.verification(7).is_none(), "version 1 clears it");
    }

    /// `UnifiedLogTest#testEnablingVerificationWhenRequestIsAtLogLayer`:
    /// with verification on, a transactional batch without a guard and
    /// without an open transaction is refused; with it off, it is not.
    #[test]
    fn an_unverified_transactional_batch_is_refused() {
        let table = ProducerStateTable::default();
        assert_eq!(
            table.check_client(7, 0, 0, 0, true, Some(SENTINEL_GUARD)),
            SequenceCheck::NotInTransaction
        );
        assert_eq!(table.check_client(7, 0, 0, 0, true, None), SequenceCheck::Append);
        assert_eq!(
            table.check_client(7, 0, 0, 0, false, Some(SENTINEL_GUARD)),
            SequenceCheck::Append
        );
    }

    /// `UnifiedLogTest#testNonZeroSequenceOnFirstAppendNonZeroEpoch` (4.1):
    /// a version 2 producer with no state here starts at sequence 0;
    /// `ReplicaManagerTest#testTransactionVerificationBlocksOutOfOrderSequence`:
    /// no batch overtakes the lowest one verifying.
    #[test]
    fn verification_keeps_sequences_in_order() {
        let mut table = ProducerStateTable::default();
        let guard = table.maybe_start_verification(7, 3, 1, true).unwrap();
        assert_eq!(
            table.check_client(7, 1, 3, 3, true, Some(guard)),
            SequenceCheck::OutOfOrder { expected: 0 }
        );
        let mut table = ProducerStateTable::default();
        let guard = table.maybe_start_verification(7, 3, 1, false).unwrap();
        assert_eq!(table.check_client(7, 1, 3, 3, true, Some(guard)), SequenceCheck::Append);
        let mut table = ProducerStateTable::default();
        let guard = table.maybe_start_verification(7, 5, 0, false).unwrap();
        assert_eq!(table.maybe_start_verification(7, 2, 0, false), Ok(guard));
        assert_eq!(
            table.check_client(7, 0, 5, 5, true, Some(guard)),
            SequenceCheck::OutOfOrder { expected: 2 }
        );
    }

    /// `ReplicaManagerTest#testTransactionVerificationRejectsLowerProducerEpoch`
    /// (4.1): an epoch older than the partition's is refused before anyone
    /// is asked.
    #[test]
    fn an_older_epoch_is_refused_before_verification() {
        let mut table = ProducerStateTable::default();
        append_transactional(&mut table, 5, 0, 0);
        assert_eq!(
            table.maybe_start_verification(7, 1, 4, false),
            Err(ProducerStateError::InvalidProducerEpoch { current: 5 })
        );
    }

    #[test]
    fn sequences_follow_kafkas_rules() {
        assert_eq!(table_with_last(4).check(7, 0, 5, 5), SequenceCheck::Append);
        assert_eq!(table_with_last(i32::MAX).check(7, 0, 0, 0), SequenceCheck::Append);
        assert_eq!(
            table_with_last(4).check(7, 0, 7, 7),
            SequenceCheck::OutOfOrder { expected: 5 }
        );
        assert_eq!(
            table_with_last(4).check(7, 0, 3, 4),
            SequenceCheck::Duplicate {
                first_offset: 40,
                last_offset: 41
            }
        );
        // Not an exact range: out of order, not a duplicate.
        assert_eq!(
            table_with_last(4).check(7, 0, 4, 4),
            SequenceCheck::OutOfOrder { expected: 5 }
        );
        assert_eq!(table_with_last(4).check(7, 1, 0, 0), SequenceCheck::Append);
        assert_eq!(
            table_with_last(4).check(7, 1, 3, 3),
            SequenceCheck::OutOfOrder { expected: 0 }
        );
        // An unknown producer is accepted at any sequence and epoch.
        assert_eq!(table_with_last(4).check(8, 3, 99, 99), SequenceCheck::Append);
        let mut newer = table_with_last(4);
        assert_eq!(
            newer.append_client(7, 2, 0, 1, 50, 2_000, false),
            Ok(ClientAppend::Appended {
                first_offset: 50,
                last_offset: 50
            })
        );
        assert_eq!(newer.check(7, 1, 1, 1), SequenceCheck::StaleEpoch);
        assert_eq!(newer.last_entry(7).unwrap().batch_metadata.len(), 1);
    }

    #[test]
    fn sequences_wrap_after_integer_max_value() {
        assert_eq!(increment_sequence(i32::MAX - 1, 3), 1);
        assert_eq!(decrement_sequence(1, 3), i32::MAX - 1);
        let mut table = ProducerStateTable::default();
        let appended = table.append_client(1, 0, i32::MAX - 1, 4, 0, 5, false).unwrap();
        assert_eq!(
            appended,
            ClientAppend::Appended {
                first_offset: 0,
                last_offset: 3
            }
        );
        let entry = table.last_entry(1).unwrap();
        assert_eq!((entry.first_seq(), entry.last_seq()), (i32::MAX - 1, 1));
        assert_eq!(table.check(1, 0, 2, 2), SequenceCheck::Append);
        assert_eq!(
            table.check(1, 0, i32::MAX - 1, 1),
            SequenceCheck::Duplicate {
                first_offset: 0,
                last_offset: 3
            }
        );
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut table = ProducerStateTable::default();
        for sequence in 0..7 {
            table
                .append_client(1, 0, sequence, 1, sequence as u64, 0, false)
                .unwrap();
        }
        assert_eq!(table.last_entry(1).unwrap().batch_metadata.len(), BATCHES_RETAINED);
        assert_eq!(table.check(1, 0, 1, 1), SequenceCheck::OutOfOrder { expected: 7 });
        assert_eq!(
            table.check(1, 0, 3, 3),
            SequenceCheck::Duplicate {
                first_offset: 3,
                last_offset: 3
            }
        );
    }

    #[test]
    fn idle_producers_expire() {
        let mut table = ProducerStateTable::default();
        table.append_client(1, 0, 0, 1, 0, 1_000, false).unwrap();
        table.append_client(2, 0, 0, 1, 1, 2_000, false).unwrap();
        assert_eq!(table.remove_expired_producers(60_999, 60_000), Vec::<ProducerId>::new());
        assert_eq!(table.remove_expired_producers(61_000, 60_000), vec![1]);
        assert!(table.last_entry(1).is_none());
        // Forgotten, it may start again anywhere.
        assert_eq!(table.check(1, 0, 42, 42), SequenceCheck::Append);
    }
}
