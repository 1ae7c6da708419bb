//! One share-partition on its leader (KIP-932): which records of a
//! partition a share group has handed out, to whom, how often, and where its
//! window starts and ends. Kafka 4.1's `kafka.server.share.SharePartition`,
//! sans-IO and synchronous: the share coordinator's writes always succeed
//! and complete at once, and an acquisition lock is a deadline the owner of
//! this state turns into a timer ([`SharePartition::next_lock_deadline`],
//! [`SharePartition::expire_locks`]).
//!
//! Share groups are a preview in Kafka 4.1 (`share.version=1`, set with
//! `kafka-features.sh`; off on a new cluster). Their records are not
//! consumed by offset: a member *acquires* records for
//! `group.share.record.lock.duration.ms`, then accepts, releases or rejects
//! each. A record released or whose lock runs out is delivered again, up to
//! `group.share.delivery.count.limit` times; then it is archived.
//!
//! The rules, with the Kafka 4.1.0 method each follows (read in
//! `core/src/main/java/kafka/server/share/SharePartition.java` at
//! 13f70256, the 4.1.0 release commit):
//! - states and their transitions: `RecordState#validateTransition`,
//!   `InFlightState#tryUpdateState` (a record that would become available
//!   with its delivery count at the limit is archived instead; archiving
//!   never changes the count);
//! - acquisition of whole log batches, re-acquisition of available cached
//!   ones, per-offset tracking once a batch is touched in part: `acquire`,
//!   `acquireNewBatchRecords`, `createBatches`, `acquireSubsetBatchRecords`,
//!   `lastOffsetFromBatchWithRequestOffset`, `maybeArchiveStaleBatches`;
//! - acknowledgements, all of one request applied or none:
//!   `acknowledge`, `fetchSubMapForAcknowledgementBatch`,
//!   `acknowledgeBatchRecords`, `rollbackOrProcessStateUpdates`, with the
//!   request checks of `KafkaApis#validateAcknowledgementBatches`;
//! - a closed share session's records: `releaseAcquiredRecords` (the
//!   delivery count goes back down: those records were never delivered);
//! - lock timeouts: `releaseAcquisitionLockOnTimeout`;
//! - the window: `maybeUpdateCachedStateAndOffsets`, `canMoveStartOffset`,
//!   `findLastOffsetAcknowledged`, `nextFetchOffset`, `canAcquireRecords`,
//!   `updateCacheAndOffsets` (the log start offset moved past records).
//!
//! - a new leader starts from what the share coordinator kept
//!   (`maybeInitialize`): the persisted batches, none of them acquired, and
//!   an initial read gap for the offsets between them it has no state for,
//!   which count as never delivered until the end offset moves on
//!   (`InitialReadGapOffset`).
//!
//! Not modelled yet: failed writes, and `read_committed` filtering of
//! aborted transactions.

use std::collections::BTreeMap;
use std::fmt;

/// `group.share.delivery.count.limit` (`ShareGroupConfig`, 2 to 10).
pub const DELIVERY_COUNT_LIMIT: u16 = 5;
/// `group.share.partition.max.record.locks` (`ShareGroupConfig`, 100 to
/// 10,000): a soft limit on the records between the start and end offsets.
pub const MAX_RECORD_LOCKS: u64 = 2_000;
/// `group.share.record.lock.duration.ms` (`ShareGroupConfig`, 1,000 to
/// 3,600,000).
pub const RECORD_LOCK_DURATION_MS: u64 = 30_000;

/// The settings one share-partition runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareConfig {
    /// `group.share.delivery.count.limit`.
    pub delivery_count_limit: u16,
    /// `group.share.partition.max.record.locks`.
    pub max_record_locks: u64,
    /// `group.share.record.lock.duration.ms` (or the group's
    /// `share.record.lock.duration.ms`).
    pub record_lock_duration_ms: u64,
}

impl Default for ShareConfig {
    fn default() -> Self {
        ShareConfig {
            delivery_count_limit: DELIVERY_COUNT_LIMIT,
            max_record_locks: MAX_RECORD_LOCKS,
            record_lock_duration_ms: RECORD_LOCK_DURATION_MS,
        }
    }
}

/// A record's state in a share-partition (`SharePartition.RecordState`,
/// with the id the share coordinator stores).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// May be acquired.
    Available,
    /// Locked by one member until it acknowledges or its lock runs out.
    Acquired,
    /// Accepted: done.
    Acknowledged,
    /// Rejected, a gap, past the delivery limit or below the log start: done.
    Archived,
}

impl RecordState {
    /// The id `__share_group_state` stores (acquired is never stored).
    pub fn id(self) -> i8 {
        match self {
            RecordState::Available => 0,
            RecordState::Acquired => 1,
            RecordState::Acknowledged => 2,
            RecordState::Archived => 4,
        }
    }

    /// Whether the record is done with.
    pub fn is_terminal(self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }

    /// `RecordState#validateTransition`.
    fn can_become(self, next: RecordState) -> bool {
        matches!(
            (self, next),
            (RecordState::Available, RecordState::Acquired)
                | (
                    RecordState::Acquired,
                    RecordState::Available | RecordState::Acknowledged | RecordState::Archived
                )
        )
    }
}

impl fmt::Display for RecordState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordState::Available => "AVAILABLE",
            RecordState::Acquired => "ACQUIRED",
            RecordState::Acknowledged => "ACKNOWLEDGED",
            RecordState::Archived => "ARCHIVED",
        })
    }
}

/// How a member acknowledges a record (`AcknowledgeType`, and the broker's
/// type 0 for an offset with no record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AcknowledgeType {
    /// No record at this offset (compacted away, a control record).
    Gap,
    /// Processed.
    Accept,
    /// Give it back to be delivered again.
    Release,
    /// Cannot be processed: do not deliver it again.
    Reject,
}

impl AcknowledgeType {
    /// `SharePartition#fetchRecordState`.
    fn target(self) -> RecordState {
        match self {
            AcknowledgeType::Accept => RecordState::Acknowledged,
            AcknowledgeType::Release => RecordState::Available,
            AcknowledgeType::Gap | AcknowledgeType::Reject => RecordState::Archived,
        }
    }
}

/// The state of a record, or of a whole batch of them (`InFlightState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightState {
    /// Where the record is.
    pub state: RecordState,
    /// Times it was acquired (less those a closed session gave back).
    pub delivery_count: u16,
    /// The member holding it, while acquired.
    pub member: Option<String>,
    /// When its acquisition lock runs out, while acquired.
    pub lock_deadline_ms: Option<u64>,
}

/// What a transition does to the delivery count (`DeliveryCountOps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Count {
    Increase,
    Decrease,
    Keep,
}

impl InFlightState {
    /// `InFlightState#tryUpdateState`: false when the transition is not
    /// allowed (nothing changes then).
    fn try_update(&mut self, next: RecordState, count: Count, limit: u16, member: Option<&str>) -> bool {
        let next = if next == RecordState::Available && count != Count::Decrease && self.delivery_count >= limit {
            RecordState::Archived
        } else {
            next
        };
        if !self.state.can_become(next) {
            return false;
        }
        self.state = next;
        if next != RecordState::Archived {
            match count {
                Count::Increase => self.delivery_count += 1,
                Count::Decrease => self.delivery_count = self.delivery_count.saturating_sub(1),
                Count::Keep => {}
            }
        }
        self.member = member.map(str::to_string);
        self.lock_deadline_ms = None;
        true
    }

    /// `InFlightState#archive`: archived whatever it was.
    fn archive(&mut self) {
        self.state = RecordState::Archived;
        self.member = None;
        self.lock_deadline_ms = None;
    }

    fn acquired_by(member: &str, delivery_count: u16, deadline_ms: u64) -> InFlightState {
        InFlightState {
            state: RecordState::Acquired,
            delivery_count,
            member: Some(member.to_string()),
            lock_deadline_ms: Some(deadline_ms),
        }
    }
}

/// A batch of records in the share-partition's cache: one state for all,
/// or one per offset once they differ (`InFlightBatch`; it never goes back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFlightBatch {
    /// Its first offset (the cache's key).
    pub first: u64,
    /// Its last offset.
    pub last: u64,
    /// Its records' state.
    pub records: BatchRecords,
}

/// The state of a batch's records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchRecords {
    /// One state for the whole batch.
    Whole(InFlightState),
    /// A state per offset.
    PerOffset(BTreeMap<u64, InFlightState>),
}

impl InFlightBatch {
    /// `InFlightBatch#maybeInitializeOffsetStateUpdate`: a state per offset
    /// from here on, each with the batch's lock deadline.
    fn split(&mut self) {
        if let BatchRecords::Whole(state) = &self.records {
            let offsets = (self.first..=self.last).map(|offset| (offset, state.clone())).collect();
            self.records = BatchRecords::PerOffset(offsets);
        }
    }

    fn whole(&self) -> Option<&InFlightState> {
        match &self.records {
            BatchRecords::Whole(state) => Some(state),
            BatchRecords::PerOffset(_) => None,
        }
    }

    /// The state of the record at `offset`.
    pub fn state_at(&self, offset: u64) -> Option<&InFlightState> {
        match &self.records {
            BatchRecords::Whole(state) => (self.first..=self.last).contains(&offset).then_some(state),
            BatchRecords::PerOffset(states) => states.get(&offset),
        }
    }
}

/// A log batch a fetch read: its first and last offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBatch {
    /// Its first offset.
    pub base: u64,
    /// Its last offset.
    pub last: u64,
}

/// Records handed to a member by one fetch (`AcquiredRecords`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquiredRecords {
    /// The first offset handed out.
    pub first: u64,
    /// The last offset handed out.
    pub last: u64,
    /// Which delivery of these records this is.
    pub delivery_count: u16,
}

/// What one fetch acquired, and how many offsets that covers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acquired {
    /// The ranges handed out, in offset order.
    pub records: Vec<AcquiredRecords>,
    /// The offsets they cover.
    pub count: u64,
}

/// Acknowledgements of a range of offsets (`ShareAcknowledgementBatch`):
/// one type for all, or one per offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AcknowledgementBatch {
    /// The first offset acknowledged.
    pub first: u64,
    /// The last offset acknowledged.
    pub last: u64,
    /// One type for all, or one per offset.
    pub types: Vec<AcknowledgeType>,
}

impl AcknowledgementBatch {
    /// One type for every offset of `first..=last`.
    pub fn all(first: u64, last: u64, kind: AcknowledgeType) -> AcknowledgementBatch {
        AcknowledgementBatch {
            first,
            last,
            types: vec![kind],
        }
    }
}

impl AcknowledgementBatch {
    /// One type, or one per offset.
    fn types_fit(&self) -> bool {
        let count = (self.last + 1).saturating_sub(self.first);
        self.first <= self.last && (self.types.len() == 1 || self.types.len() as u64 == count)
    }
}

/// A range written to the share coordinator (`PersisterStateBatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    /// The first offset of the range.
    pub first: u64,
    /// The last offset of the range.
    pub last: u64,
    /// Its state now.
    pub state: RecordState,
    /// Its delivery count now.
    pub delivery_count: u16,
}

/// Why an acknowledgement was refused, with Kafka's error and message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShareError {
    /// `INVALID_RECORD_STATE`: the records are not acquired by this member.
    InvalidRecordState(&'static str),
    /// `INVALID_REQUEST`: the acknowledgement itself is malformed or out of range.
    InvalidRequest(&'static str),
}

impl ShareError {
    /// Kafka's name for the error.
    pub fn name(self) -> &'static str {
        match self {
            ShareError::InvalidRecordState(_) => "INVALID_RECORD_STATE",
            ShareError::InvalidRequest(_) => "INVALID_REQUEST",
        }
    }
}

impl fmt::Display for ShareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ShareError::InvalidRecordState(message) | ShareError::InvalidRequest(message)) = self;
        write!(f, "{}: {message}", self.name())
    }
}

const TYPES_DO_NOT_FIT: ShareError = ShareError::InvalidRequest("Acknowledge types do not match the batch's offsets");
const NOT_IN_CACHE: ShareError =
    ShareError::InvalidRecordState("Batch record not found. The request batch offsets are not found in the cache.");
const BATCH_NOT_ACQUIRED: ShareError =
    ShareError::InvalidRecordState("The batch cannot be acknowledged. The batch is not in the acquired state.");
const SUBSET_NOT_ACQUIRED: ShareError =
    ShareError::InvalidRecordState("The batch cannot be acknowledged. The subset batch is not in the acquired state.");
const OFFSET_NOT_ACQUIRED: ShareError =
    ShareError::InvalidRecordState("The batch cannot be acknowledged. The offset is not acquired.");
const NOT_BATCH_OWNER: ShareError = ShareError::InvalidRecordState("Member is not the owner of batch record");
const NOT_OFFSET_OWNER: ShareError = ShareError::InvalidRecordState("Member is not the owner of offset");

/// One share group's view of one partition, on the partition's leader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartition {
    config: ShareConfig,
    /// The share-partition start offset (SPSO): below it everything is done.
    start_offset: u64,
    /// The share-partition end offset (SPEO): the last cached offset, or the
    /// start offset when nothing is cached.
    end_offset: u64,
    /// Batches handed out at least once, by first offset.
    cached: BTreeMap<u64, InFlightBatch>,
    /// Whether records came back and the next fetch must look for them.
    find_next_fetch_offset: bool,
    /// After initialising from the share coordinator: the end offset then,
    /// and the first offset it had no state for that is not yet acquired
    /// (`InitialReadGapOffset`); it counts while the end offset stays.
    initial_read_gap: Option<(u64, u64)>,
}

/// Why a share-partition cannot start from the state the share coordinator
/// returned (Kafka fails the share-partition then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitializeError {
    /// A batch starts below the start offset.
    BatchBelowStartOffset,
    /// A batch is stored as acquired, which is never written.
    AcquiredBatch,
}

impl SharePartition {
    /// A share-partition whose first record to deliver is `start_offset`
    /// (from `share.auto.offset.reset`: the high watermark for `latest`,
    /// the log start for `earliest`).
    pub fn new(config: ShareConfig, start_offset: u64) -> SharePartition {
        SharePartition {
            config,
            start_offset,
            end_offset: start_offset,
            cached: BTreeMap::new(),
            find_next_fetch_offset: false,
            initial_read_gap: None,
        }
    }

    /// A share-partition on a new leader, from the share coordinator's
    /// state: its start offset and the batches it kept, in offset order
    /// (`maybeInitialize`).
    pub fn initialized(config: ShareConfig, start_offset: u64, batches: &[StateBatch]) -> Result<SharePartition, InitializeError> {
        let mut share = SharePartition::new(config, start_offset);
        let mut gap_start = None;
        let mut previous_last = start_offset.checked_sub(1);
        for batch in batches {
            if batch.first < start_offset {
                return Err(InitializeError::BatchBelowStartOffset);
            }
            if batch.state == RecordState::Acquired {
                return Err(InitializeError::AcquiredBatch);
            }
            let next = previous_last.map_or(0, |last| last + 1);
            if gap_start.is_none() && batch.first > next {
                gap_start = Some(next);
            }
            previous_last = Some(batch.last);
            let state = InFlightState {
                state: batch.state,
                delivery_count: batch.delivery_count,
                member: None,
                lock_deadline_ms: None,
            };
            share.cached.insert(
                batch.first,
                InFlightBatch {
                    first: batch.first,
                    last: batch.last,
                    records: BatchRecords::Whole(state),
                },
            );
        }
        match share.last_cached_offset() {
            Some(last) => {
                share.find_next_fetch_offset = true;
                share.end_offset = last;
                share.initial_read_gap = gap_start.map(|gap| (last, gap));
                share.maybe_update_cached_state_and_offsets();
            }
            None => share.end_offset = start_offset,
        }
        Ok(share)
    }

    /// The initial read gap's start, while it counts
    /// (`isInitialReadGapOffsetWindowActive`).
    pub fn initial_read_gap_start(&self) -> Option<u64> {
        self.initial_read_gap
            .filter(|&(end, _)| end == self.end_offset)
            .map(|(_, start)| start)
    }

    /// `maybeUpdateReadGapFetchOffset`: the gap now starts at `offset`, or
    /// is over once the end offset moved past the one it was made for.
    fn update_read_gap(&mut self, offset: u64) {
        if let Some((end, start)) = &mut self.initial_read_gap {
            if *end == self.end_offset {
                *start = offset;
            } else {
                self.initial_read_gap = None;
            }
        }
    }

    /// The share-partition start offset.
    pub fn start_offset(&self) -> u64 {
        self.start_offset
    }

    /// The share-partition end offset.
    pub fn end_offset(&self) -> u64 {
        self.end_offset
    }

    /// The cached batches, in offset order.
    pub fn batches(&self) -> impl Iterator<Item = &InFlightBatch> {
        self.cached.values()
    }

    /// The state of the record at `offset`, while it is cached.
    pub fn record(&self, offset: u64) -> Option<&InFlightState> {
        let (_, batch) = self.cached.range(..=offset).next_back()?;
        batch.state_at(offset)
    }

    /// Offsets from the start offset to the end offset, done or not
    /// (`numInFlightRecords`): what `group.share.partition.max.record.locks`
    /// limits.
    pub fn in_flight_records(&self) -> u64 {
        if self.cached.is_empty() {
            0
        } else {
            self.end_offset - self.start_offset + 1
        }
    }

    /// The earliest acquisition lock still running.
    pub fn next_lock_deadline(&self) -> Option<u64> {
        self.states().filter_map(|(_, _, state)| state.lock_deadline_ms).min()
    }

    /// Every state with the offsets it covers.
    fn states(&self) -> impl Iterator<Item = (u64, u64, &InFlightState)> {
        self.cached.values().flat_map(|batch| {
            let states: Vec<(u64, u64, &InFlightState)> = match &batch.records {
                BatchRecords::Whole(state) => vec![(batch.first, batch.last, state)],
                BatchRecords::PerOffset(states) => states.iter().map(|(&offset, state)| (offset, offset, state)).collect(),
            };
            states
        })
    }

    fn last_cached_offset(&self) -> Option<u64> {
        self.cached.values().next_back().map(|batch| batch.last)
    }

    /// Where the next read of the log starts (`nextFetchOffset`): the first
    /// record given back, if any, else just past the end offset.
    pub fn next_fetch_offset(&mut self) -> u64 {
        let past_the_cache = self.last_cached_offset().is_none_or(|last| self.start_offset > last);
        if !self.find_next_fetch_offset {
            return if past_the_cache { self.end_offset } else { self.end_offset + 1 };
        }
        if past_the_cache {
            self.find_next_fetch_offset = false;
            return self.end_offset;
        }
        let mut gap = self.initial_read_gap_start();
        let mut available = None;
        for batch in self.cached.values() {
            if let Some(gap_start) = &mut gap {
                if batch.first > *gap_start {
                    available = Some(*gap_start);
                    break;
                }
                *gap_start = batch.last + 1;
            }
            let first_available = match &batch.records {
                BatchRecords::Whole(state) => (state.state == RecordState::Available).then_some(batch.first),
                BatchRecords::PerOffset(states) => states
                    .iter()
                    .find(|(_, state)| state.state == RecordState::Available)
                    .map(|(&offset, _)| offset),
            };
            if first_available.is_some() {
                available = first_available;
                break;
            }
        }
        available.unwrap_or_else(|| {
            self.find_next_fetch_offset = false;
            self.end_offset + 1
        })
    }

    /// Whether a fetch may read more of the log for this share-partition
    /// (`canAcquireRecords`): records given back may always be delivered
    /// again; new ones only below `group.share.partition.max.record.locks`.
    pub fn can_acquire_records(&mut self) -> bool {
        self.next_fetch_offset() != self.end_offset + 1 || self.in_flight_records() < self.config.max_record_locks
    }

    /// Acquires for `member` what a fetch from `fetch_offset` read
    /// (`batches`, in order), at most about `max_records` (whole log batches
    /// are taken), in acquired batches of about `batch_size` (`acquire`).
    pub fn acquire(
        &mut self,
        member: &str,
        batch_size: u64,
        max_records: u64,
        fetch_offset: u64,
        batches: &[LogBatch],
        now_ms: u64,
    ) -> Acquired {
        let (Some(first_batch), Some(last_batch)) = (batches.first(), batches.last()) else {
            return Acquired::default();
        };
        if max_records == 0 {
            return Acquired::default();
        }
        self.archive_stale_batches(fetch_offset, first_batch.base);
        let mut base = first_batch.base;
        if let Some((&key, batch)) = self.cached.range(..=base).next_back() {
            if batch.last >= base {
                base = key;
            }
        }
        let keys: Vec<u64> = self.cached.range(base..=last_batch.last).map(|(&key, _)| key).collect();
        let Some(&last_key) = keys.last() else {
            return self.acquire_new(member, batches, first_batch.base, last_batch.last, batch_size, max_records, now_ms);
        };
        let deadline = now_ms + self.config.record_lock_duration_ms;
        let limit = self.config.delivery_count_limit;
        let mut acquired = Acquired::default();
        let mut maybe_gap_start = base;
        for key in keys {
            if acquired.count >= max_records {
                break;
            }
            if self.initial_read_gap_start().is_some() {
                // Offsets the share coordinator had no state for are new.
                if maybe_gap_start < key {
                    let gap = self.acquire_new(member, batches, maybe_gap_start, key - 1, batch_size, max_records, now_ms);
                    acquired.records.extend(gap.records);
                    acquired.count += gap.count;
                }
                maybe_gap_start = self.cached[&key].last + 1;
                if acquired.count >= max_records {
                    break;
                }
            }
            let Some(batch) = self.cached.get_mut(&key) else { continue };
            let full = batch.first >= first_batch.base && batch.last <= last_batch.last;
            if !full || matches!(batch.records, BatchRecords::PerOffset(_)) {
                if batch.whole().is_some_and(|state| state.state != RecordState::Available) {
                    continue;
                }
                batch.split();
                acquired.count += acquire_subset(batch, member, first_batch.base, last_batch.last, limit, deadline, &mut acquired.records);
                continue;
            }
            let BatchRecords::Whole(state) = &mut batch.records else { continue };
            if state.state != RecordState::Available || !state.try_update(RecordState::Acquired, Count::Increase, limit, Some(member)) {
                continue;
            }
            state.lock_deadline_ms = Some(deadline);
            acquired.records.push(AcquiredRecords {
                first: batch.first,
                last: batch.last,
                delivery_count: state.delivery_count,
            });
            acquired.count += batch.last - batch.first + 1;
        }
        let cached_last = self.cached[&last_key].last;
        if acquired.count < max_records && cached_last < last_batch.last {
            let more = self.acquire_new(member, batches, cached_last + 1, last_batch.last, batch_size, max_records - acquired.count, now_ms);
            acquired.records.extend(more.records);
            acquired.count += more.count;
        }
        if let Some(last) = acquired.records.last() {
            self.update_read_gap(last.last + 1);
        }
        acquired
    }

    /// Records read for the first time (`acquireNewBatchRecords`).
    #[allow(clippy::too_many_arguments)]
    fn acquire_new(
        &mut self,
        member: &str,
        batches: &[LogBatch],
        first: u64,
        last: u64,
        batch_size: u64,
        max_records: u64,
        now_ms: u64,
    ) -> Acquired {
        let mut first_acquired = first;
        if self.cached.is_empty() && self.end_offset > first_acquired {
            first_acquired = self.end_offset;
        }
        if first_acquired > last {
            return Acquired::default();
        }
        let mut last_acquired = last;
        if max_records < last_acquired - first_acquired + 1 {
            last_acquired = last_offset_of_batch_with(batches, first_acquired + max_records - 1);
        }
        let records = self.create_batches(member, batches, first_acquired, last_acquired, batch_size, now_ms);
        if self.cached.keys().next() == Some(&first_acquired) {
            self.start_offset = first_acquired;
        }
        self.end_offset = self.end_offset.max(last_acquired);
        self.update_read_gap(last_acquired + 1);
        Acquired {
            records,
            count: last_acquired - first_acquired + 1,
        }
    }

    /// Splits `first..=last` into acquired batches of about `batch_size`,
    /// only where a log batch starts (`createBatches`).
    fn create_batches(
        &mut self,
        member: &str,
        batches: &[LogBatch],
        first: u64,
        last: u64,
        batch_size: u64,
        now_ms: u64,
    ) -> Vec<AcquiredRecords> {
        let mut ranges = Vec::new();
        let mut current = first;
        if last - first + 1 > batch_size {
            for batch in batches {
                if batch.base > last {
                    break;
                }
                if i128::from(batch.base) - i128::from(current) >= i128::from(batch_size) {
                    ranges.push((current, batch.base - 1));
                    current = batch.base;
                }
            }
        }
        ranges.push((current, last));
        let deadline = now_ms + self.config.record_lock_duration_ms;
        ranges
            .into_iter()
            .map(|(first, last)| {
                let state = InFlightState::acquired_by(member, 1, deadline);
                self.cached.insert(
                    first,
                    InFlightBatch {
                        first,
                        last,
                        records: BatchRecords::Whole(state),
                    },
                );
                AcquiredRecords {
                    first,
                    last,
                    delivery_count: 1,
                }
            })
            .collect()
    }

    /// A fetch that starts past `fetch_offset` means the records between
    /// were compacted away: available ones there are archived
    /// (`maybeArchiveStaleBatches`).
    fn archive_stale_batches(&mut self, fetch_offset: u64, base: u64) {
        if self.cached.is_empty() || fetch_offset >= base {
            return;
        }
        let mut floor = fetch_offset;
        if let Some((&key, batch)) = self.cached.range(..=fetch_offset).next_back() {
            if batch.last >= fetch_offset {
                floor = key;
            }
        }
        let keys: Vec<u64> = self.cached.range(floor..base).map(|(&key, _)| key).collect();
        if self.archive_available(fetch_offset, base, &keys) {
            self.find_next_fetch_offset = true;
        }
    }

    /// Archives the available records of `from..until` in the batches
    /// `keys` (`archiveRecords` with `AVAILABLE`).
    fn archive_available(&mut self, from: u64, until: u64, keys: &[u64]) -> bool {
        let mut archived = false;
        for key in keys {
            if *key >= until {
                break;
            }
            let Some(batch) = self.cached.get_mut(key) else { continue };
            let full = batch.first >= from && batch.last < until;
            if full {
                if let BatchRecords::Whole(state) = &mut batch.records {
                    if state.state == RecordState::Available {
                        state.archive();
                        archived = true;
                    }
                    continue;
                }
            }
            if batch.whole().is_some_and(|state| state.state != RecordState::Available) {
                continue;
            }
            batch.split();
            if let BatchRecords::PerOffset(states) = &mut batch.records {
                for (_, state) in states.range_mut(from..until) {
                    if state.state == RecordState::Available {
                        state.archive();
                        archived = true;
                    }
                }
            }
        }
        archived
    }

    /// The log's start offset moved to `log_start_offset`: records below it
    /// that are available are archived, and the start offset follows
    /// (`updateCacheAndOffsets`; acquired ones are archived when given back).
    pub fn update_cache_and_offsets(&mut self, log_start_offset: u64) {
        if log_start_offset <= self.start_offset {
            return;
        }
        if self.cached.is_empty() {
            self.start_offset = log_start_offset;
            self.end_offset = log_start_offset;
            return;
        }
        let keys: Vec<u64> = self.cached.keys().copied().collect();
        if self.archive_available(self.start_offset, log_start_offset, &keys) {
            self.find_next_fetch_offset = true;
        }
        self.start_offset = log_start_offset;
        self.end_offset = self.end_offset.max(self.start_offset);
    }

    /// `member` acknowledges `batches` (one request's, for this partition):
    /// all of them take effect, or on the first refusal none do
    /// (`acknowledge`). Returns what is written to the share coordinator.
    /// The broker checks the request first
    /// ([`validate_acknowledgement_batches`]); this checks only that each
    /// batch has its types.
    pub fn acknowledge(&mut self, member: &str, batches: &[AcknowledgementBatch]) -> Result<Vec<StateBatch>, ShareError> {
        if batches.iter().any(|batch| !batch.types_fit()) {
            return Err(TYPES_DO_NOT_FIT);
        }
        let before = (self.cached.clone(), self.find_next_fetch_offset);
        let mut written = Vec::new();
        let outcome = batches.iter().try_for_each(|batch| {
            if batch.last < self.start_offset {
                return Ok(());
            }
            let keys = self.batches_for_acknowledgement(batch)?;
            for key in keys {
                self.acknowledge_batch(member, batch, key, &mut written)?;
            }
            Ok(())
        });
        if let Err(error) = outcome {
            (self.cached, self.find_next_fetch_offset) = before;
            return Err(error);
        }
        if !written.is_empty() {
            self.maybe_update_cached_state_and_offsets();
        }
        Ok(written)
    }

    /// The cached batches an acknowledgement covers
    /// (`fetchSubMapForAcknowledgementBatch`).
    fn batches_for_acknowledgement(&self, batch: &AcknowledgementBatch) -> Result<Vec<u64>, ShareError> {
        let floor = match self.cached.range(..=batch.first).next_back() {
            Some((&key, _)) => key,
            None if batch.first < self.start_offset && batch.last >= self.start_offset => self
                .cached
                .range(..=self.start_offset)
                .next_back()
                .map(|(&key, _)| key)
                .ok_or(NOT_IN_CACHE)?,
            None => return Err(NOT_IN_CACHE),
        };
        let keys: Vec<u64> = self.cached.range(floor..=batch.last).map(|(&key, _)| key).collect();
        let last = keys.last().map_or(0, |key| self.cached[key].last);
        if last < batch.first {
            return Err(ShareError::InvalidRequest(
                "Batch record not found. The first offset in request is past acquired records.",
            ));
        }
        if batch.last > last {
            return Err(ShareError::InvalidRequest(
                "Batch record not found. The last offset in request is past acquired records.",
            ));
        }
        Ok(keys)
    }

    /// One cached batch's part of an acknowledgement
    /// (`acknowledgeBatchRecords`).
    fn acknowledge_batch(
        &mut self,
        member: &str,
        request: &AcknowledgementBatch,
        key: u64,
        written: &mut Vec<StateBatch>,
    ) -> Result<(), ShareError> {
        let (start, limit) = (self.start_offset, self.config.delivery_count_limit);
        let Some(batch) = self.cached.get_mut(&key) else { return Ok(()) };
        if batch.last < start {
            return Ok(());
        }
        if let Some(state) = batch.whole() {
            match state.member.as_deref() {
                None => return Err(BATCH_NOT_ACQUIRED),
                Some(owner) if owner != member => return Err(NOT_BATCH_OWNER),
                Some(_) => {}
            }
        }
        let full = batch.first >= request.first && batch.last <= request.last;
        let start_inside = batch.first < start && batch.last >= start;
        let mut released = false;
        if !full || request.types.len() > 1 || start_inside || batch.whole().is_none() {
            if batch.whole().is_some_and(|state| state.state != RecordState::Acquired) {
                return Err(SUBSET_NOT_ACQUIRED);
            }
            batch.split();
            let BatchRecords::PerOffset(states) = &mut batch.records else { return Ok(()) };
            for (&offset, state) in states.range_mut(request.first.max(start)..=request.last) {
                if state.state != RecordState::Acquired {
                    return Err(OFFSET_NOT_ACQUIRED);
                }
                if state.member.as_deref() != Some(member) {
                    return Err(NOT_OFFSET_OWNER);
                }
                let kind = if request.types.len() > 1 {
                    request.types[(offset - request.first) as usize]
                } else {
                    request.types[0]
                };
                if !state.try_update(kind.target(), Count::Keep, limit, None) {
                    return Err(ShareError::InvalidRecordState("Unable to acknowledge records for the batch"));
                }
                written.push(StateBatch {
                    first: offset,
                    last: offset,
                    state: state.state,
                    delivery_count: state.delivery_count,
                });
                released |= kind.target() == RecordState::Available && state.state != RecordState::Archived;
            }
        } else {
            let (first, last) = (batch.first, batch.last);
            let BatchRecords::Whole(state) = &mut batch.records else { return Ok(()) };
            if state.state != RecordState::Acquired {
                return Err(BATCH_NOT_ACQUIRED);
            }
            let target = request.types[0].target();
            if !state.try_update(target, Count::Keep, limit, None) {
                return Err(ShareError::InvalidRecordState("Unable to acknowledge records for the batch"));
            }
            written.push(StateBatch {
                first,
                last,
                state: state.state,
                delivery_count: state.delivery_count,
            });
            released = target == RecordState::Available && state.state != RecordState::Archived;
        }
        self.find_next_fetch_offset |= released;
        Ok(())
    }

    /// `member`'s share session closed: what it holds goes back, its
    /// delivery count down by one, since it was never delivered
    /// (`releaseAcquiredRecords`). Returns what is written.
    pub fn release_acquired_records(&mut self, member: &str) -> Vec<StateBatch> {
        let (start, limit) = (self.start_offset, self.config.delivery_count_limit);
        let mut written = Vec::new();
        let mut released = false;
        for batch in self.cached.values_mut() {
            let start_inside = batch.first < start && batch.last >= start;
            if start_inside
                && batch
                    .whole()
                    .is_some_and(|state| state.state == RecordState::Acquired && state.member.as_deref() == Some(member))
            {
                batch.split();
            }
            let (first, last) = (batch.first, batch.last);
            match &mut batch.records {
                BatchRecords::PerOffset(states) => {
                    for (&offset, state) in states.iter_mut() {
                        // Kafka stops at the first record another member
                        // holds and leaves the rest of this batch to time out.
                        if state.member.as_deref().is_some_and(|owner| owner != member) {
                            break;
                        }
                        if state.state == RecordState::Acquired {
                            released |= give_back(state, (offset, offset), start, Count::Decrease, limit, &mut written);
                        }
                    }
                }
                BatchRecords::Whole(state) => {
                    if state.member.as_deref().is_some_and(|owner| owner != member) || state.state != RecordState::Acquired {
                        continue;
                    }
                    released |= give_back(state, (first, last), start, Count::Decrease, limit, &mut written);
                }
            }
        }
        self.find_next_fetch_offset |= released;
        if !written.is_empty() {
            self.maybe_update_cached_state_and_offsets();
        }
        written
    }

    /// Runs out every acquisition lock due by `now_ms`, earliest first (and
    /// by offset): its records become available again, or archived at the
    /// delivery limit or below the start offset
    /// (`releaseAcquisitionLockOnTimeout`). Returns what is written.
    pub fn expire_locks(&mut self, now_ms: u64) -> Vec<StateBatch> {
        let mut written = Vec::new();
        loop {
            let due = self
                .states()
                .filter_map(|(first, last, state)| state.lock_deadline_ms.map(|deadline| (deadline, first, last)))
                .filter(|(deadline, _, _)| *deadline <= now_ms)
                .min();
            let Some((deadline, first, last)) = due else { break };
            let before = written.len();
            self.time_out(first, last, &mut written);
            if written.len() > before {
                self.maybe_update_cached_state_and_offsets();
            }
            if self.record(first).is_some_and(|state| state.lock_deadline_ms == Some(deadline)) {
                // Every lock that runs out changes its records; never loop on one.
                break;
            }
        }
        written
    }

    /// One lock over `first..=last` ran out.
    fn time_out(&mut self, first: u64, last: u64, written: &mut Vec<StateBatch>) {
        let (start, limit) = (self.start_offset, self.config.delivery_count_limit);
        let Some((&floor, _)) = self.cached.range(..=first).next_back() else { return };
        let mut released = false;
        for (_, batch) in self.cached.range_mut(floor..=last) {
            let start_inside = batch.first < start && batch.last >= start;
            if start_inside && batch.whole().is_some_and(|state| state.state == RecordState::Acquired) {
                batch.split();
            }
            let (batch_first, batch_last) = (batch.first, batch.last);
            match &mut batch.records {
                BatchRecords::Whole(state) => {
                    if state.state == RecordState::Acquired {
                        released |= give_back(state, (batch_first, batch_last), start, Count::Keep, limit, written);
                    }
                }
                BatchRecords::PerOffset(states) => {
                    for (&offset, state) in states.range_mut(first..=last) {
                        if state.state == RecordState::Acquired {
                            released |= give_back(state, (offset, offset), start, Count::Keep, limit, written);
                        }
                    }
                }
            }
        }
        self.find_next_fetch_offset |= released;
    }

    /// Moves the start offset past the records that are done, and drops the
    /// batches wholly below it (`maybeUpdateCachedStateAndOffsets`).
    fn maybe_update_cached_state_and_offsets(&mut self) {
        if !self.can_move_start_offset() {
            return;
        }
        let Some(acknowledged) = self.last_offset_acknowledged() else { return };
        let Some(last_cached) = self.last_cached_offset() else { return };
        if acknowledged == last_cached {
            self.start_offset = last_cached + 1;
            self.end_offset = last_cached + 1;
            self.cached.clear();
            return;
        }
        let Some((&key, batch)) = self.cached.range(..=acknowledged).next_back() else { return };
        let keep_from = if acknowledged == batch.last {
            let next = self.cached.range(acknowledged + 1..).next().map(|(&next, _)| next);
            let start = next.unwrap_or(acknowledged + 1);
            self.start_offset = self.initial_read_gap_start().map_or(start, |gap| gap.min(start));
            next
        } else {
            self.start_offset = acknowledged + 1;
            Some(key)
        };
        if let Some(keep_from) = keep_from {
            self.cached = self.cached.split_off(&keep_from);
        }
    }

    /// `canMoveStartOffset`: the record at the start offset is done (as
    /// Kafka reads it: a whole batch's state even when the start offset is
    /// past the batch's end).
    fn can_move_start_offset(&self) -> bool {
        let Some((_, batch)) = self.cached.range(..=self.start_offset).next_back() else { return false };
        let state = match &batch.records {
            BatchRecords::Whole(state) => Some(state),
            BatchRecords::PerOffset(states) => states.get(&self.start_offset),
        };
        state.is_some_and(|state| state.state.is_terminal())
    }

    /// `findLastOffsetAcknowledged`: the end of the run of done records at
    /// the front of the cache.
    fn last_offset_acknowledged(&self) -> Option<u64> {
        let gap = self.initial_read_gap_start();
        let mut last = None;
        for batch in self.cached.values() {
            if gap.is_some_and(|gap| batch.last >= gap) {
                return last;
            }
            match &batch.records {
                BatchRecords::Whole(state) if !state.state.is_terminal() => return last,
                BatchRecords::Whole(_) => last = Some(batch.last),
                BatchRecords::PerOffset(states) => {
                    for (&offset, state) in states {
                        if !state.state.is_terminal() {
                            return last;
                        }
                        last = Some(offset);
                    }
                }
            }
        }
        last
    }
}

/// Acquired records over `range` go back: available again, or archived
/// below the start offset (or at the delivery limit, unless a closed
/// session gives them back). Notes what is written; true when they can be
/// delivered again.
fn give_back(
    state: &mut InFlightState,
    (first, last): (u64, u64),
    start: u64,
    count: Count,
    limit: u16,
    written: &mut Vec<StateBatch>,
) -> bool {
    let target = if last < start { RecordState::Archived } else { RecordState::Available };
    if !state.try_update(target, count, limit, None) {
        return false;
    }
    written.push(StateBatch {
        first,
        last,
        state: state.state,
        delivery_count: state.delivery_count,
    });
    state.state != RecordState::Archived
}

/// `KafkaApis#validateAcknowledgementBatches`, the broker's check of a
/// request before any share-partition sees it: ranges in order, not
/// overlapping, with one type or one per offset.
pub fn validate_acknowledgement_batches(batches: &[AcknowledgementBatch]) -> Result<(), ShareError> {
    let mut previous_last: Option<u64> = None;
    for batch in batches {
        if batch.first > batch.last || previous_last.is_some_and(|previous| batch.first < previous) {
            return Err(ShareError::InvalidRequest("Acknowledgement batches are not in order or overlap"));
        }
        if !batch.types_fit() {
            return Err(TYPES_DO_NOT_FIT);
        }
        previous_last = Some(batch.last);
    }
    Ok(())
}

/// The state of offsets `first..` of a per-offset batch, acquired for
/// `member` where available (`acquireSubsetBatchRecords`): one acquired
/// range per offset, as Kafka 4.1 answers.
fn acquire_subset(
    batch: &mut InFlightBatch,
    member: &str,
    first: u64,
    last: u64,
    limit: u16,
    deadline: u64,
    out: &mut Vec<AcquiredRecords>,
) -> u64 {
    let BatchRecords::PerOffset(states) = &mut batch.records else { return 0 };
    let mut count = 0;
    for (&offset, state) in states.range_mut(first..=last) {
        if state.state != RecordState::Available || !state.try_update(RecordState::Acquired, Count::Increase, limit, Some(member)) {
            continue;
        }
        state.lock_deadline_ms = Some(deadline);
        out.push(AcquiredRecords {
            first: offset,
            last: offset,
            delivery_count: state.delivery_count,
        });
        count += 1;
    }
    count
}

/// The last offset of the log batch holding `offset`, or `offset` itself
/// when it falls between batches (`lastOffsetFromBatchWithRequestOffset`).
fn last_offset_of_batch_with(batches: &[LogBatch], offset: u64) -> u64 {
    let holding = batches.iter().take_while(|batch| offset >= batch.base).last();
    match holding {
        Some(batch) if offset <= batch.last => batch.last,
        _ => offset,
    }
}

/// Kafka 4.1.0's `SharePartitionTest` cases, by name, as vectors: the same
/// calls in the same order, and the states, delivery counts and offsets it
/// expects (its builder: start offset 0, lock 30 s or 100 ms where the case
/// times locks out, the member "member-1", batch size 500, no record cap).
#[cfg(test)]
mod tests {
    use super::AcknowledgeType::{Accept, Gap, Reject, Release};
    use super::*;

    const M1: &str = "member-1";

    fn partition(limit: u16, locks: u64, lock_ms: u64) -> SharePartition {
        SharePartition::new(
            ShareConfig {
                delivery_count_limit: limit,
                max_record_locks: locks,
                record_lock_duration_ms: lock_ms,
            },
            0,
        )
    }

    fn default_partition() -> SharePartition {
        partition(5, 200, 30_000)
    }

    /// `fetchAcquiredRecords`: one log batch `base..base+count`, fetched from its base.
    fn fetch(share: &mut SharePartition, member: &str, base: u64, count: u64, now_ms: u64) -> Acquired {
        let batch = LogBatch {
            base,
            last: base + count - 1,
        };
        share.acquire(member, 500, u64::MAX, base, &[batch], now_ms)
    }

    fn ack(share: &mut SharePartition, member: &str, first: u64, last: u64, kind: AcknowledgeType) -> Result<(), ShareError> {
        share
            .acknowledge(member, &[AcknowledgementBatch::all(first, last, kind)])
            .map(|_| ())
    }

    fn state(share: &SharePartition, offset: u64) -> (RecordState, u16, Option<&str>) {
        let state = share.record(offset).expect("cached");
        (state.state, state.delivery_count, state.member.as_deref())
    }

    fn ranges(acquired: &Acquired) -> Vec<(u64, u64, u16)> {
        acquired
            .records
            .iter()
            .map(|records| (records.first, records.last, records.delivery_count))
            .collect()
    }

    fn log(spans: &[(u64, u64)]) -> Vec<LogBatch> {
        spans.iter().map(|&(base, last)| LogBatch { base, last }).collect()
    }

    #[test]
    fn test_acquire_multiple_records() {
        let mut share = default_partition();
        let acquired = fetch(&mut share, M1, 10, 5, 0);
        assert_eq!((ranges(&acquired), acquired.count), (vec![(10, 14, 1)], 5));
        assert_eq!((share.start_offset(), share.end_offset(), share.next_fetch_offset()), (10, 14, 15));
        assert_eq!(state(&share, 12), (RecordState::Acquired, 1, Some(M1)));
    }

    #[test]
    fn test_acquire_with_multiple_batches_and_max_fetch_records() {
        let mut share = default_partition();
        let acquired = share.acquire(M1, 500, 10, 10, &log(&[(10, 14), (15, 29), (30, 44)]), 0);
        assert_eq!((ranges(&acquired), acquired.count), (vec![(10, 29, 1)], 20));
        assert_eq!((share.batches().count(), share.next_fetch_offset()), (1, 30));
    }

    #[test]
    fn test_acquire_with_batch_size_and_multiple_batches() {
        let mut share = default_partition();
        let acquired = share.acquire(M1, 5, 100, 2, &log(&[(2, 6), (10, 14), (15, 21), (22, 27)]), 0);
        assert_eq!(ranges(&acquired), vec![(2, 9, 1), (10, 14, 1), (15, 21, 1), (22, 27, 1)]);
        assert_eq!((acquired.count, share.batches().count(), share.next_fetch_offset()), (26, 4, 28));
    }

    #[test]
    fn test_acquire_with_batch_size_and_max_fetch_records() {
        let mut share = default_partition();
        let acquired = share.acquire(M1, 2, 10, 0, &log(&[(0, 4), (5, 19), (20, 34)]), 0);
        assert_eq!((ranges(&acquired), acquired.count), (vec![(0, 4, 1), (5, 19, 1)], 20));
        assert_eq!(share.next_fetch_offset(), 20);
    }

    #[test]
    fn test_acquire_released_record() {
        let mut share = default_partition();
        fetch(&mut share, M1, 10, 5, 0);
        ack(&mut share, M1, 12, 13, Release).expect("released");
        assert_eq!(share.next_fetch_offset(), 12);
        assert_eq!(state(&share, 11), (RecordState::Acquired, 1, Some(M1)));
        assert_eq!(state(&share, 12), (RecordState::Available, 1, None));
        let again = fetch(&mut share, M1, 10, 5, 0);
        assert_eq!((ranges(&again), again.count), (vec![(12, 12, 2), (13, 13, 2)], 2));
        assert_eq!(share.next_fetch_offset(), 15);
    }

    #[test]
    fn test_acknowledge_multiple_record_batch_with_gap_offsets() {
        let mut share = default_partition();
        fetch(&mut share, M1, 5, 2, 0);
        fetch(&mut share, M1, 10, 9, 0);
        let per_offset = vec![Release, Release, Release, Release, Release, Gap, Gap, Gap, Accept];
        let written = share
            .acknowledge(
                M1,
                &[
                    AcknowledgementBatch::all(5, 6, Release),
                    AcknowledgementBatch {
                        first: 10,
                        last: 18,
                        types: per_offset,
                    },
                ],
            )
            .expect("acknowledged");
        assert_eq!(written.len(), 10);
        assert_eq!(share.next_fetch_offset(), 5);
        assert!(matches!(share.batches().next().map(|batch| &batch.records), Some(BatchRecords::Whole(_))));
        assert_eq!(state(&share, 6), (RecordState::Available, 1, None));
        assert_eq!(state(&share, 14), (RecordState::Available, 1, None));
        assert_eq!(state(&share, 16), (RecordState::Archived, 1, None));
        assert_eq!(state(&share, 18), (RecordState::Acknowledged, 1, None));
    }

    #[test]
    fn test_acknowledge_when_offset_not_acquired() {
        let mut share = default_partition();
        fetch(&mut share, M1, 5, 5, 0);
        ack(&mut share, M1, 5, 9, Release).expect("released");
        assert_eq!(ack(&mut share, M1, 5, 9, Accept).map_err(ShareError::name), Err("INVALID_RECORD_STATE"));
        fetch(&mut share, M1, 5, 5, 0);
        ack(&mut share, M1, 6, 8, Reject).expect("rejected");
        assert_eq!(ack(&mut share, M1, 6, 8, Reject), Err(OFFSET_NOT_ACQUIRED));
    }

    #[test]
    fn test_acknowledge_out_of_range_cached_data() {
        let mut share = default_partition();
        assert_eq!(ack(&mut share, M1, 0, 15, Reject), Err(NOT_IN_CACHE));
        fetch(&mut share, M1, 5, 5, 0);
        assert_eq!(ack(&mut share, M1, 20, 25, Reject).map_err(ShareError::name), Err("INVALID_REQUEST"));
    }

    #[test]
    fn test_acknowledge_with_another_member() {
        let mut share = default_partition();
        fetch(&mut share, M1, 5, 5, 0);
        assert_eq!(ack(&mut share, "member-2", 5, 9, Reject), Err(NOT_BATCH_OWNER));
    }

    #[test]
    fn test_acknowledge_rollback_with_full_batch_error() {
        let mut share = default_partition();
        for base in [5, 10, 15] {
            fetch(&mut share, M1, base, 5, 0);
        }
        let before = share.clone();
        let request = [
            AcknowledgementBatch::all(5, 9, Release),
            AcknowledgementBatch::all(10, 14, Accept),
            AcknowledgementBatch::all(15, 19, Accept),
            AcknowledgementBatch::all(15, 19, Accept),
        ];
        assert_eq!(share.acknowledge(M1, &request), Err(BATCH_NOT_ACQUIRED));
        assert_eq!(share, before);
        for offset in [5, 10, 15] {
            assert_eq!(state(&share, offset), (RecordState::Acquired, 1, Some(M1)));
        }
        // The broker's own check refuses that request before it gets here.
        assert!(validate_acknowledgement_batches(&request).is_err());
    }

    #[test]
    fn test_acknowledge_after_acquisition_lock_timeout() {
        let mut share = partition(5, 200, 100);
        fetch(&mut share, M1, 5, 5, 0);
        assert_eq!(share.next_lock_deadline(), Some(100));
        share.expire_locks(120);
        assert_eq!(state(&share, 5), (RecordState::Available, 1, None));
        assert_eq!((share.next_fetch_offset(), share.next_lock_deadline()), (5, None));
        assert_eq!(ack(&mut share, M1, 5, 9, Accept), Err(BATCH_NOT_ACQUIRED));
        assert_eq!(ack(&mut share, M1, 5, 9, Reject), Err(BATCH_NOT_ACQUIRED));
    }

    #[test]
    fn test_acquisition_lock_timeout_cause_max_delivery_count_exceed() {
        let mut share = partition(2, 200, 100);
        fetch(&mut share, M1, 0, 10, 0);
        fetch(&mut share, M1, 10, 10, 0);
        share.expire_locks(100);
        assert_eq!((state(&share, 0), state(&share, 10)), ((RecordState::Available, 1, None), (RecordState::Available, 1, None)));
        assert_eq!(share.next_fetch_offset(), 0);
        fetch(&mut share, M1, 10, 10, 100);
        assert_eq!(state(&share, 10), (RecordState::Acquired, 2, Some(M1)));
        share.expire_locks(200);
        assert_eq!(state(&share, 15), (RecordState::Archived, 2, None));
        assert_eq!(share.next_fetch_offset(), 0);
    }

    #[test]
    fn test_acquisition_lock_timeout_cause_spso_move_forward() {
        let mut share = partition(2, 200, 100);
        fetch(&mut share, M1, 0, 10, 0);
        share.expire_locks(100);
        fetch(&mut share, M1, 0, 5, 100);
        assert_eq!(state(&share, 4), (RecordState::Acquired, 2, Some(M1)));
        assert_eq!(state(&share, 5), (RecordState::Available, 1, None));
        share.expire_locks(200);
        assert_eq!(state(&share, 4), (RecordState::Archived, 2, None));
        assert_eq!(state(&share, 5), (RecordState::Available, 1, None));
        assert_eq!((share.start_offset(), share.next_fetch_offset(), share.batches().count()), (5, 5, 1));
    }

    #[test]
    fn test_acquisition_lock_timeout_cause_spso_move_forward_and_clear_cached_state() {
        let mut share = partition(2, 200, 100);
        fetch(&mut share, M1, 0, 10, 0);
        share.expire_locks(100);
        fetch(&mut share, M1, 0, 10, 100);
        share.expire_locks(200);
        assert_eq!((share.batches().count(), share.next_fetch_offset()), (0, 10));
    }

    #[test]
    fn test_max_delivery_count_limit_exceeded_for_record_batch() {
        let mut share = partition(2, 200, 30_000);
        fetch(&mut share, M1, 5, 10, 0);
        ack(&mut share, M1, 5, 14, Release).expect("released");
        fetch(&mut share, M1, 5, 10, 0);
        ack(&mut share, M1, 5, 14, Release).expect("released");
        assert_eq!(share.batches().count(), 0);
        assert_eq!((share.start_offset(), share.end_offset(), share.next_fetch_offset()), (15, 15, 15));
    }

    #[test]
    fn test_max_delivery_count_limit_exceeded_for_records_subset_and_cached_state_not_cleared() {
        let mut share = partition(2, 200, 30_000);
        fetch(&mut share, M1, 0, 5, 0);
        ack(&mut share, M1, 0, 1, Release).expect("released");
        let again = fetch(&mut share, M1, 0, 2, 0);
        assert_eq!(ranges(&again), vec![(0, 0, 2), (1, 1, 2)]);
        ack(&mut share, M1, 0, 4, Release).expect("released");
        assert_eq!(state(&share, 1), (RecordState::Archived, 2, None));
        assert_eq!(state(&share, 2), (RecordState::Available, 1, None));
        assert_eq!((share.next_fetch_offset(), share.batches().count()), (2, 1));
    }

    #[test]
    fn test_release_single_record_batch() {
        let mut share = default_partition();
        fetch(&mut share, M1, 0, 1, 0);
        let written = share.release_acquired_records(M1);
        assert_eq!(
            written,
            vec![StateBatch {
                first: 0,
                last: 0,
                state: RecordState::Available,
                delivery_count: 0
            }]
        );
        assert_eq!(state(&share, 0), (RecordState::Available, 0, None));
        assert_eq!(share.next_fetch_offset(), 0);
    }

    #[test]
    fn test_release_acquired_records_after_different_acknowledges() {
        let mut share = default_partition();
        fetch(&mut share, M1, 5, 5, 0);
        ack(&mut share, M1, 5, 6, Release).expect("released");
        ack(&mut share, M1, 8, 9, Accept).expect("accepted");
        share.release_acquired_records(M1);
        assert_eq!(state(&share, 6), (RecordState::Available, 1, None));
        assert_eq!(state(&share, 7), (RecordState::Available, 0, None));
        assert_eq!(state(&share, 9), (RecordState::Acknowledged, 1, None));
        assert_eq!(share.next_fetch_offset(), 5);
    }

    #[test]
    fn test_release_acquired_records_decrease_delivery_count() {
        let mut share = default_partition();
        fetch(&mut share, M1, 5, 5, 0);
        fetch(&mut share, M1, 10, 5, 0);
        ack(&mut share, M1, 12, 13, Accept).expect("accepted");
        share.update_cache_and_offsets(11);
        assert_eq!((share.start_offset(), share.end_offset(), share.next_fetch_offset()), (11, 14, 15));
        share.release_acquired_records(M1);
        assert_eq!(state(&share, 7), (RecordState::Archived, 1, None));
        assert_eq!(state(&share, 10), (RecordState::Archived, 1, None));
        assert_eq!(state(&share, 11), (RecordState::Available, 0, None));
        assert_eq!(state(&share, 13), (RecordState::Acknowledged, 1, None));
        assert_eq!(state(&share, 14), (RecordState::Available, 0, None));
    }

    #[test]
    fn test_lso_movement_for_archiving_batches() {
        let mut share = default_partition();
        for base in (2..=32).step_by(5) {
            fetch(&mut share, M1, base, 5, 0);
        }
        share
            .acknowledge(
                M1,
                &[
                    AcknowledgementBatch::all(2, 6, Accept),
                    AcknowledgementBatch::all(12, 16, Release),
                    AcknowledgementBatch::all(22, 26, Release),
                    AcknowledgementBatch::all(27, 31, Reject),
                ],
            )
            .expect("acknowledged");
        share.update_cache_and_offsets(20);
        assert_eq!((share.start_offset(), share.end_offset(), share.next_fetch_offset()), (20, 36, 22));
        assert_eq!(share.batches().count(), 6);
        let states: Vec<RecordState> = [7, 12, 17, 22, 27, 32].iter().map(|&offset| state(&share, offset).0).collect();
        use RecordState::{Acquired, Archived, Available};
        assert_eq!(states, vec![Acquired, Archived, Acquired, Available, Archived, Acquired]);
        assert!(share.record(7).is_some_and(|state| state.lock_deadline_ms.is_some()));
    }

    #[test]
    fn test_lso_movement_ahead_of_end_offset() {
        let mut share = default_partition();
        fetch(&mut share, M1, 2, 5, 0);
        fetch(&mut share, M1, 7, 5, 0);
        share.update_cache_and_offsets(14);
        assert_eq!((share.start_offset(), share.end_offset(), share.next_fetch_offset()), (14, 14, 14));
        assert_eq!(state(&share, 9), (RecordState::Acquired, 1, Some(M1)));
    }

    #[test]
    fn test_maybe_update_cached_state_when_acknowledgements_in_between() {
        let mut share = partition(5, 20, 30_000);
        fetch(&mut share, M1, 0, 15, 0);
        assert!(share.can_acquire_records());
        fetch(&mut share, M1, 15, 15, 0);
        assert!(!share.can_acquire_records());
        ack(&mut share, M1, 10, 14, Reject).expect("rejected");
        assert_eq!(state(&share, 9), (RecordState::Acquired, 1, Some(M1)));
        assert_eq!((share.start_offset(), share.end_offset(), share.next_fetch_offset()), (0, 29, 30));
        assert!(!share.can_acquire_records());
    }

    #[test]
    fn test_maybe_update_cached_state_when_all_records_in_cached_state_are_acknowledged() {
        let mut share = partition(5, 20, 30_000);
        fetch(&mut share, M1, 0, 15, 0);
        fetch(&mut share, M1, 15, 15, 0);
        ack(&mut share, M1, 0, 29, Accept).expect("accepted");
        assert_eq!((share.start_offset(), share.end_offset(), share.next_fetch_offset()), (30, 30, 30));
        assert!(share.can_acquire_records());
    }

    #[test]
    fn test_can_acquire_records_with_cached_data_and_limit_reached() {
        let mut share = partition(5, 1, 30_000);
        fetch(&mut share, M1, 0, 5, 0);
        assert!(!share.can_acquire_records());
    }

    #[test]
    fn test_next_fetch_offset_with_multiple_consumers() {
        let mut share = partition(5, 100, 30_000);
        fetch(&mut share, M1, 0, 3, 0);
        assert_eq!(share.next_fetch_offset(), 3);
        ack(&mut share, M1, 0, 2, Release).expect("released");
        assert_eq!(share.next_fetch_offset(), 0);
        fetch(&mut share, "member-2", 3, 2, 0);
        assert_eq!(share.next_fetch_offset(), 0);
        fetch(&mut share, M1, 0, 3, 0);
        assert_eq!(share.next_fetch_offset(), 5);
        ack(&mut share, "member-2", 3, 4, Release).expect("released");
        assert_eq!(share.next_fetch_offset(), 3);
    }

    fn persisted(batches: &[(u64, u64, RecordState, u16)]) -> Vec<StateBatch> {
        batches
            .iter()
            .map(|&(first, last, state, delivery_count)| StateBatch {
                first,
                last,
                state,
                delivery_count,
            })
            .collect()
    }

    /// `maybeInitialize` from the share coordinator's start offset and
    /// batches: (start, end, next fetch offset, cached batches, gap start).
    fn initialized(start: u64, batches: &[(u64, u64, RecordState, u16)]) -> SharePartition {
        SharePartition::initialized(ShareConfig::default(), start, &persisted(batches)).expect("initialised")
    }

    fn window(share: &mut SharePartition) -> (u64, u64, u64, usize, Option<u64>) {
        let next = share.next_fetch_offset();
        (share.start_offset(), share.end_offset(), next, share.batches().count(), share.initial_read_gap_start())
    }

    use RecordState::{Acknowledged as Acked, Archived as Arch, Available as Avail};

    #[test]
    fn test_maybe_initialize() {
        let mut share = initialized(5, &[(5, 10, Avail, 2), (11, 15, Arch, 3)]);
        assert_eq!(window(&mut share), (5, 15, 5, 2, None));
        assert_eq!(state(&share, 7), (Avail, 2, None));
        assert_eq!(state(&share, 12), (Arch, 3, None));
    }

    #[test]
    fn test_maybe_initialize_state_batches_with_gaps() {
        let mut at_beginning = initialized(10, &[(15, 20, Acked, 2), (21, 30, Arch, 3)]);
        assert_eq!(window(&mut at_beginning), (10, 30, 10, 2, Some(10)));
        let mut multiple = initialized(10, &[(15, 20, Acked, 2), (30, 40, Arch, 3)]);
        assert_eq!(window(&mut multiple), (10, 40, 10, 2, Some(10)));
        let mut not_at_beginning = initialized(15, &[(15, 20, Acked, 2), (30, 40, Arch, 3)]);
        assert_eq!(window(&mut not_at_beginning), (21, 40, 21, 1, Some(21)));
        let mut without = initialized(15, &[(15, 20, Acked, 2), (21, 30, Arch, 3)]);
        assert_eq!(window(&mut without), (31, 31, 31, 0, None));
        let invalid = SharePartition::initialized(ShareConfig::default(), 10, &persisted(&[(5, 20, Acked, 1)]));
        assert_eq!(invalid, Err(InitializeError::BatchBelowStartOffset));
    }

    #[test]
    fn test_maybe_initialize_when_read_state_rpc_returns_zero_available_records() {
        let mut batches = vec![(233, 233, Arch, 1)];
        batches.extend((234..=733).map(|offset| (offset, offset, Acked, 1)));
        let mut share = initialized(233, &batches);
        assert_eq!(window(&mut share), (734, 734, 734, 0, None));
    }

    fn gap_fetch(share: &mut SharePartition, spans: &[(u64, u64)], max: u64) -> (Vec<(u64, u64, u16)>, u64) {
        let acquired = share.acquire(M1, 500, max, 0, &log(spans), 0);
        (ranges(&acquired), acquired.count)
    }

    #[test]
    fn test_acquire_gap_at_beginning_and_records_fetched_from_gap() {
        let mut share = initialized(11, &[(21, 30, Acked, 2), (31, 40, Arch, 1)]);
        assert_eq!(gap_fetch(&mut share, &[(11, 15)], u64::MAX), (vec![(11, 15, 1)], 5));
        assert_eq!(window(&mut share), (11, 40, 16, 3, Some(16)));
    }

    #[test]
    fn test_acquire_gap_at_beginning_and_fetched_records_overlap_in_flight_batches() {
        let mut share = initialized(11, &[(21, 30, Acked, 2), (31, 40, Arch, 1)]);
        assert_eq!(gap_fetch(&mut share, &[(11, 25)], u64::MAX), (vec![(11, 20, 1)], 10));
        assert_eq!(window(&mut share), (11, 40, 41, 3, Some(21)));
    }

    #[test]
    fn test_acquire_gap_at_beginning_and_fetched_records_overlap_in_flight_available_batches() {
        let mut share = initialized(11, &[(21, 30, Avail, 2), (31, 40, Arch, 1)]);
        let expected = vec![(11, 20, 1), (21, 21, 3), (22, 22, 3), (23, 23, 3), (24, 24, 3), (25, 25, 3)];
        assert_eq!(gap_fetch(&mut share, &[(11, 25)], u64::MAX), (expected, 15));
        assert_eq!(window(&mut share), (11, 40, 26, 3, Some(26)));
    }

    #[test]
    fn test_acquire_when_cached_state_contains_gaps_and_records_fetched_from_non_gap_offset() {
        let mut share = initialized(11, &[(11, 20, Avail, 2), (31, 40, Arch, 1)]);
        assert_eq!(gap_fetch(&mut share, &[(11, 25)], u64::MAX), (vec![(11, 20, 3), (21, 25, 1)], 15));
        assert_eq!(window(&mut share), (11, 40, 26, 3, Some(26)));
    }

    #[test]
    fn test_acquire_gap_at_beginning_and_fetched_records_overlap_multiple_in_flight_batches() {
        let mut share = initialized(
            11,
            &[(21, 30, Acked, 2), (41, 50, Avail, 1), (61, 70, Arch, 1), (81, 90, Avail, 1)],
        );
        let mut expected = vec![(11, 20, 1), (31, 40, 1), (41, 50, 2), (51, 60, 1), (71, 80, 1)];
        expected.extend((81..=85).map(|offset| (offset, offset, 2)));
        assert_eq!(gap_fetch(&mut share, &[(11, 85)], u64::MAX), (expected, 55));
        let (start, end, next, _, gap) = window(&mut share);
        assert_eq!((start, end, next, gap), (11, 90, 86, Some(86)));
    }

    #[test]
    fn test_acquire_gap_at_beginning_and_fetched_records_end_just_before_gap() {
        let mut share = initialized(11, &[(21, 30, Avail, 2), (41, 50, Acked, 1), (61, 70, Arch, 1)]);
        assert_eq!(gap_fetch(&mut share, &[(11, 30)], u64::MAX), (vec![(11, 20, 1), (21, 30, 3)], 20));
        let (start, end, next, _, gap) = window(&mut share);
        assert_eq!((start, end, next, gap), (11, 70, 31, Some(31)));
    }

    #[test]
    fn test_acquire_gap_at_beginning_and_fetched_records_include_gap_offsets_at_end() {
        let mut share = initialized(
            11,
            &[(21, 30, Acked, 2), (41, 50, Avail, 1), (61, 70, Arch, 1), (81, 90, Avail, 1)],
        );
        let expected = vec![(11, 20, 1), (31, 40, 1), (41, 50, 2), (51, 60, 1), (71, 75, 1)];
        assert_eq!(gap_fetch(&mut share, &[(11, 75)], u64::MAX), (expected, 45));
        let (start, end, next, _, gap) = window(&mut share);
        assert_eq!((start, end, next, gap), (11, 90, 76, Some(76)));
    }

    #[test]
    fn test_acquire_when_records_fetched_from_gap_and_max_fetch_records_is_exceeded() {
        let mut share = initialized(11, &[(11, 20, Acked, 2), (31, 40, Arch, 1)]);
        assert_eq!(gap_fetch(&mut share, &[(21, 23), (24, 26), (27, 28)], 6), (vec![(21, 26, 1)], 6));
        let (start, end, next, _, gap) = window(&mut share);
        assert_eq!((start, end, next, gap), (21, 40, 27, Some(27)));
    }

    #[test]
    fn test_acquire_max_fetch_records_exceeded_after_and_before_acquiring_gaps() {
        let mut after = initialized(11, &[(21, 30, Avail, 2), (31, 40, Arch, 1)]);
        assert_eq!(gap_fetch(&mut after, &[(11, 20), (21, 30)], 8), (vec![(11, 20, 1)], 10));
        let (start, end, next, _, gap) = window(&mut after);
        assert_eq!((start, end, next, gap), (11, 40, 21, Some(21)));
        let mut before = initialized(11, &[(11, 20, Avail, 2), (31, 40, Avail, 1)]);
        assert_eq!(gap_fetch(&mut before, &[(11, 20), (21, 40)], 8), (vec![(11, 20, 3)], 10));
        let (start, end, next, _, gap) = window(&mut before);
        assert_eq!((start, end, next, gap), (11, 40, 21, Some(21)));
    }

    /// A record that keeps coming back is delivered at most the limit's
    /// number of times and then archived (the poison record of the lesson).
    #[test]
    fn a_record_released_every_time_is_delivered_the_limit_times_then_archived() {
        let mut share = default_partition();
        let mut deliveries = Vec::new();
        for round in 0..10 {
            let acquired = fetch(&mut share, M1, 0, 1, round);
            let Some(records) = acquired.records.first() else { break };
            deliveries.push(records.delivery_count);
            ack(&mut share, M1, 0, 0, Release).expect("released");
        }
        assert_eq!(deliveries, vec![1, 2, 3, 4, 5]);
        assert_eq!((share.start_offset(), share.batches().count()), (1, 0));
    }
}
