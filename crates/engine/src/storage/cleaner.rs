//! Log compaction (`LogCleaner`, `LogCleanerManager`): keep the latest
//! record of every key, never rewrite offsets, remove tombstones only after
//! `delete.retention.ms` has passed since a cleaning first kept them
//! (KIP-534).
//!
//! A pass works on the *dirty* part of the log, from the cleaner's
//! checkpoint to the first uncleanable offset (the active segment, the last
//! stable offset, or the first segment younger than
//! `min.compaction.lag.ms`). It runs only when that part is more than
//! `min.cleanable.dirty.ratio` of the log. It maps each key in the dirty
//! part to its latest offset, then copies every segment up to there into
//! cleaned segments, keeping a record only if no later record has its key.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use serde::Serialize;

use super::log::Log;
use super::record::{LogBatch, StoredRecord, RECORD_BATCH_OVERHEAD};
use super::segment::{Segment, OFFSET_INDEX_ENTRY_BYTES, TIME_INDEX_ENTRY_BYTES};
use crate::protocol::Offset;

/// The cleaner's view of a log before a pass (`LogToClean`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LogToClean {
    /// Where the dirty part starts (the checkpoint, or the log start).
    pub first_dirty_offset: Offset,
    /// Where it ends: the base offset of the first segment that cannot
    /// be cleaned yet.
    pub first_uncleanable_offset: Offset,
    /// Bytes of the segments below the dirty part.
    pub clean_bytes: u64,
    /// Bytes of the dirty segments that can be cleaned.
    pub cleanable_bytes: u64,
    /// Whether some dirty record is older than `max.compaction.lag.ms`.
    pub need_compaction_now: bool,
}

impl LogToClean {
    /// The share of the log that is dirty and cleanable
    /// (`cleanableRatio`), `None` for an empty log.
    pub fn dirty_ratio(&self) -> Option<f64> {
        let total = self.clean_bytes + self.cleanable_bytes;
        (total > 0).then(|| self.cleanable_bytes as f64 / total as f64)
    }

    /// Whether the cleaner picks this log (`grabFilthiestCompactedLog`):
    /// dirtier than `min.cleanable.dirty.ratio`, or overdue by
    /// `max.compaction.lag.ms` with something to clean.
    pub fn should_clean(&self, min_cleanable_dirty_ratio: f64) -> bool {
        let Some(ratio) = self.dirty_ratio() else { return false };
        (self.need_compaction_now && self.cleanable_bytes > 0) || ratio > min_cleanable_dirty_ratio
    }
}

/// What one cleaning did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CleanOutcome {
    /// The largest offset the key map covered (`offsetMap.latestOffset`).
    pub offset_map_latest_offset: Option<Offset>,
    /// The groups of segments (by base offset) copied into one cleaned
    /// segment each.
    pub groups: Vec<Vec<Offset>>,
    /// The new checkpoint: the log is clean below it.
    pub checkpoint_after: Offset,
    /// Records read and records kept.
    pub records_read: u64,
    /// Records kept.
    pub records_kept: u64,
    /// Bytes before and after, over the cleaned segments.
    pub bytes_before: u64,
    /// Bytes after.
    pub bytes_after: u64,
    /// Tombstones removed (their delete horizon had passed).
    pub tombstones_removed: u64,
    /// Transaction markers removed (no batch of their transaction was
    /// left and their delete horizon had passed).
    pub markers_removed: u64,
}

impl<R: StoredRecord> Log<R> {
    /// The cleaner's view of this log at `now_ms` with the partition's
    /// last stable offset (`cleanableOffsets`, `calculateCleanableBytes`),
    /// or `None` for a log that is not compacted.
    pub fn to_clean(&self, now_ms: i64, last_stable_offset: Offset) -> Option<LogToClean> {
        if !self.config.cleanup_policy.compact {
            return None;
        }
        let checkpoint = self.cleaner_checkpoint.unwrap_or(self.log_start_offset);
        let first_dirty = if checkpoint < self.log_start_offset || checkpoint > self.log_end_offset {
            self.log_start_offset
        } else {
            checkpoint
        };
        let active_base = self.active_segment().base_offset;
        let mut uncleanable = last_stable_offset.min(active_base);
        let lag = self.config.min_compaction_lag_ms.max(0);
        if lag > 0 {
            let young = self
                .non_active_segments_from(first_dirty)
                .find(|segment| segment.largest_timestamp() > now_ms - lag)
                .map(|segment| segment.base_offset);
            if let Some(young) = young {
                uncleanable = uncleanable.min(young);
            }
        }
        let uncleanable = uncleanable.max(first_dirty);
        let first_uncleanable = self
            .non_active_segments_from(uncleanable)
            .next()
            .map_or(active_base, |segment| segment.base_offset);
        let clean_bytes = self
            .segments_between(None, first_dirty)
            .map(|segment| segment.size_bytes)
            .sum();
        let cleanable_bytes = self
            .segments_between(Some(first_dirty.min(first_uncleanable)), first_uncleanable)
            .map(|segment| segment.size_bytes)
            .sum();
        // LogCleanerManager#maxCompactionDelay: the earliest first-batch
        // timestamp of a dirty closed segment, against max.compaction.lag.ms.
        let clean_until = now_ms.saturating_sub(self.config.max_compaction_lag_ms.max(0));
        let need_compaction_now = self
            .non_active_segments_from(first_dirty)
            .filter_map(|segment| segment.rolling_based_timestamp.filter(|timestamp| *timestamp > 0))
            .min()
            .is_some_and(|earliest| earliest < clean_until);
        Some(LogToClean {
            first_dirty_offset: first_dirty,
            first_uncleanable_offset: first_uncleanable,
            clean_bytes,
            cleanable_bytes,
            need_compaction_now,
        })
    }

    /// Segments from the one holding `from` up to (not including) the
    /// active one (`nonActiveLogSegmentsFrom`).
    fn non_active_segments_from(&self, from: Offset) -> impl Iterator<Item = &Segment<R>> + '_ {
        let active_base = self.active_segment().base_offset;
        let segments: Box<dyn Iterator<Item = &Segment<R>>> = if from > active_base {
            Box::new(std::iter::empty())
        } else {
            Box::new(self.segments_between(Some(from), active_base))
        };
        segments
    }

    /// Segments whose base offset lies in [floor(from), to)
    /// (`LogSegments#values(from, to)`); `None` starts at the first.
    fn segments_between(&self, from: Option<Offset>, to: Offset) -> impl Iterator<Item = &Segment<R>> + '_ {
        let start = match from {
            Some(from) if from == to => self.segments.len(),
            Some(from) => self
                .segments
                .partition_point(|segment| segment.base_offset <= from)
                .saturating_sub(1),
            None => 0,
        };
        self.segments[start.min(self.segments.len())..]
            .iter()
            .map(|segment| &**segment)
            .take_while(move |segment| segment.base_offset < to)
    }

    /// Cleans the log as `to_clean` describes (`Cleaner#doClean`).
    /// `aborted` says which batches belong to aborted transactions: they
    /// give no key its latest offset, and their records go
    /// (`CleanedTransactionMetadata`). No producer is active: see
    /// [`Log::clean_with_producers`].
    pub fn clean(
        &mut self,
        to_clean: &LogToClean,
        now_ms: i64,
        aborted: &dyn Fn(&LogBatch<R>) -> bool,
    ) -> CleanOutcome {
        self.clean_with_producers(to_clean, now_ms, aborted, &|_| false)
    }

    /// [`Log::clean`], where `last_of_active_producer` says which batch
    /// holds an active producer's last sequence or epoch: it stays, as an
    /// empty batch if nothing of it is left (`isBatchLastRecordOfProducer`).
    /// A transaction marker goes in three passes, as Kafka's do: while a
    /// batch of its transaction is left it stays; the first pass that
    /// finds none stamps its delete horizon (now + `delete.retention.ms`);
    /// the first pass after the horizon removes it.
    pub fn clean_with_producers(
        &mut self,
        to_clean: &LogToClean,
        now_ms: i64,
        aborted: &dyn Fn(&LogBatch<R>) -> bool,
        last_of_active_producer: &dyn Fn(&LogBatch<R>) -> bool,
    ) -> CleanOutcome {
        let upper_bound = to_clean.first_uncleanable_offset;
        let (map, latest) = self.build_offset_map(to_clean.first_dirty_offset, upper_bound, aborted);
        let end_offset = latest.map_or(0, |latest| latest + 1);
        let groups = self.group_segments_by_size(end_offset, upper_bound);
        let mut outcome = CleanOutcome {
            offset_map_latest_offset: latest,
            groups: Vec::new(),
            checkpoint_after: end_offset,
            records_read: 0,
            records_kept: 0,
            bytes_before: 0,
            bytes_after: 0,
            tombstones_removed: 0,
            markers_removed: 0,
        };
        let mut filter = RecordFilter {
            map: &map,
            aborted,
            last_of_active_producer,
            transactions_read: BTreeSet::new(),
            latest,
            now_ms,
            delete_retention_ms: self.config.delete_retention_ms,
            upper_bound,
        };
        for (first, count) in groups {
            let group = &self.segments[first..first + count];
            outcome
                .groups
                .push(group.iter().map(|segment| segment.base_offset).collect());
            let mut cleaned = Segment::new(group[0].base_offset, self.config.segment_index_bytes, now_ms);
            for segment in group {
                outcome.bytes_before += segment.size_bytes;
                filter.clean_into(segment, &mut cleaned, self.config.index_interval_bytes, &mut outcome);
            }
            cleaned.on_become_inactive();
            cleaned.last_modified_ms = group[count - 1].last_modified_ms;
            outcome.bytes_after += cleaned.size_bytes;
            self.segments.splice(first..first + count, [Rc::new(cleaned)]);
        }
        self.cleaner_checkpoint = Some(end_offset);
        outcome
    }

    /// The latest offset of every key in [start, end) (`buildOffsetMap`),
    /// and the largest offset the map covers: the offset before `end`
    /// once any segment was read (`updateLatestOffset` skips over the gaps
    /// compaction left). Kafka's map has a fixed size and may stop early;
    /// this one holds every key.
    fn build_offset_map(
        &self,
        start: Offset,
        end: Offset,
        aborted: &dyn Fn(&LogBatch<R>) -> bool,
    ) -> (BTreeMap<Rc<str>, Offset>, Option<Offset>) {
        let mut map = BTreeMap::new();
        let mut any = false;
        for segment in self.segments_between(Some(start), end) {
            any = true;
            for batch in segment.batches().filter(|batch| !batch.is_control() && !aborted(batch)) {
                for record in &batch.records {
                    if let (Some(key), true) = (record.key(), record.offset() >= start) {
                        map.insert(key.clone(), record.offset());
                    }
                }
            }
        }
        (map, if any { end.checked_sub(1) } else { None })
    }

    /// Groups the segments below `end_offset` so that each group fits one
    /// segment (`groupSegmentsBySize`): at most `segment.bytes` of records
    /// and `segment.index.bytes` of each index, and offsets a 32-bit delta
    /// from the group's base. Returns (first index, count) pairs.
    fn group_segments_by_size(&self, end_offset: Offset, first_uncleanable: Offset) -> Vec<(usize, usize)> {
        let count = self
            .segments
            .partition_point(|segment| segment.base_offset < end_offset);
        let max_size = self.config.segment_bytes;
        let max_index = u64::from(self.config.segment_index_bytes);
        let mut groups = Vec::new();
        let mut index = 0;
        // The groups are replaced one by one, each by one segment, so a
        // group's first index is its position after earlier replacements.
        let mut shift = 0;
        while index < count {
            let head = &self.segments[index];
            let mut log_size = head.size_bytes;
            let mut offset_index = head.offset_index.len() as u64 * u64::from(OFFSET_INDEX_ENTRY_BYTES);
            let mut time_index = head.time_index.len() as u64 * u64::from(TIME_INDEX_ENTRY_BYTES);
            let mut end = index + 1;
            while end < count {
                let next = &self.segments[end];
                let last_offset_of_next = self
                    .segments
                    .get(end + 1)
                    .filter(|_| end + 1 < count)
                    .map_or(first_uncleanable.saturating_sub(1), |after| after.base_offset - 1);
                let next_offset_index = next.offset_index.len() as u64 * u64::from(OFFSET_INDEX_ENTRY_BYTES);
                let next_time_index = next.time_index.len() as u64 * u64::from(TIME_INDEX_ENTRY_BYTES);
                let group_last_base = self.segments[end - 1].base_offset;
                let fits = log_size + next.size_bytes <= max_size
                    && offset_index + next_offset_index <= max_index
                    && time_index + next_time_index <= max_index
                    && (next.is_empty() || last_offset_of_next.saturating_sub(group_last_base) <= i32::MAX as Offset);
                if !fits {
                    break;
                }
                log_size += next.size_bytes;
                offset_index += next_offset_index;
                time_index += next_time_index;
                end += 1;
            }
            groups.push((index - shift, end - index));
            shift += end - index - 1;
            index = end;
        }
        groups
    }
}

/// The cleaner's record filter for one pass (`cleanInto`'s `RecordFilter`).
struct RecordFilter<'a, R> {
    map: &'a BTreeMap<Rc<str>, Offset>,
    aborted: &'a dyn Fn(&LogBatch<R>) -> bool,
    last_of_active_producer: &'a dyn Fn(&LogBatch<R>) -> bool,
    /// Producers of which this pass has read a transactional batch since
    /// their last marker (`CleanedTransactionMetadata`'s
    /// `ongoingCommittedTxns` and the observed batches of
    /// `ongoingAbortedTxns`).
    transactions_read: BTreeSet<u64>,
    latest: Option<Offset>,
    now_ms: i64,
    delete_retention_ms: i64,
    /// The pass's first uncleanable offset: the batch ending there is kept
    /// even if emptied, so the last offset is not lost.
    upper_bound: Offset,
}

impl<R: StoredRecord> RecordFilter<'_, R> {
    /// Whether the pass may discard `batch` (`shouldDiscardBatch`): a
    /// batch of an aborted transaction, or a marker none of whose
    /// transaction's batches this pass read.
    fn can_discard(&mut self, batch: &LogBatch<R>) -> bool {
        match batch.producer {
            Some(producer) if producer.control => !self.transactions_read.remove(&producer.producer_id),
            Some(producer) if producer.transactional => {
                self.transactions_read.insert(producer.producer_id);
                (self.aborted)(batch)
            }
            _ => false,
        }
    }

    /// Copies what survives of `source` into `cleaned` as one write.
    fn clean_into(
        &mut self,
        source: &Segment<R>,
        cleaned: &mut Segment<R>,
        index_interval_bytes: u64,
        outcome: &mut CleanOutcome,
    ) {
        let mut kept: Vec<LogBatch<R>> = Vec::new();
        let mut bytes = 0u64;
        let mut max_offset: Option<Offset> = None;
        let mut max_timestamp: Option<(i64, Offset)> = None;
        for batch in source.batches() {
            outcome.records_read += batch.records.len() as u64;
            let can_discard = self.can_discard(batch);
            // checkBatchRetention: a marker goes only once its horizon has
            // passed; an active producer's last batch and the pass's last
            // batch stay, emptied if need be (RETAIN_EMPTY).
            let discard = if batch.is_control() {
                can_discard && batch.delete_horizon_ms.is_some_and(|horizon| horizon <= self.now_ms)
            } else {
                can_discard
            };
            let retain_empty = batch.next_offset() == self.upper_bound || (self.last_of_active_producer)(batch);
            let marker_for_empty_txn = can_discard && batch.is_control();
            let retained: Vec<_> = batch
                .records
                .iter()
                .filter(|record| !discard && (batch.is_control() || self.should_retain(batch, record)))
                .cloned()
                .collect();
            let (written, batch_max_offset, batch_max_timestamp) = if !retained.is_empty() {
                let tombstones = retained.iter().any(StoredRecord::is_tombstone);
                // MemoryRecords#filterTo stamps the horizon on a kept batch
                // with tombstones or a marker whose transaction is gone.
                let need_horizon = (tombstones || marker_for_empty_txn) && batch.delete_horizon_ms.is_none();
                if retained.len() == batch.records.len() && !need_horizon {
                    (
                        batch.clone(),
                        batch.last_offset,
                        (batch.max_timestamp, batch.last_offset),
                    )
                } else {
                    // MemoryRecords#buildRetainedRecordsInto: same base and
                    // last offsets, the horizon in the base timestamp.
                    let mut rebuilt = batch.clone();
                    rebuilt.delete_horizon_ms = if need_horizon {
                        Some(self.now_ms + self.delete_retention_ms)
                    } else {
                        batch.delete_horizon_ms
                    };
                    let top = retained
                        .iter()
                        .map(StoredRecord::offset)
                        .max()
                        .unwrap_or(batch.last_offset);
                    rebuilt.max_timestamp = retained
                        .iter()
                        .map(StoredRecord::timestamp)
                        .max()
                        .unwrap_or(batch.max_timestamp);
                    rebuilt.records = retained;
                    rebuilt.size_bytes = rebuilt.encoded_size();
                    let stamp = (rebuilt.max_timestamp, rebuilt.last_offset);
                    (rebuilt, top, stamp)
                }
            } else if retain_empty {
                let mut empty = batch.clone();
                empty.records = Vec::new();
                empty.size_bytes = RECORD_BATCH_OVERHEAD;
                (empty, batch.last_offset, (batch.max_timestamp, batch.last_offset))
            } else {
                outcome.tombstones_removed +=
                    batch.records.iter().filter(|record| record.is_tombstone()).count() as u64;
                if batch.is_control() {
                    outcome.markers_removed += 1;
                }
                continue;
            };
            outcome.records_kept += written.records.len() as u64;
            let tombstones = |records: &[R]| records.iter().filter(|record| record.is_tombstone()).count() as u64;
            outcome.tombstones_removed += tombstones(&batch.records) - tombstones(&written.records);
            bytes += u64::from(written.size_bytes);
            max_offset = Some(max_offset.map_or(batch_max_offset, |offset| offset.max(batch_max_offset)));
            if max_timestamp.is_none_or(|(timestamp, _)| batch_max_timestamp.0 > timestamp) {
                max_timestamp = Some(batch_max_timestamp);
            }
            kept.push(written);
        }
        if let (Some(max_offset), Some((timestamp, offset))) = (max_offset, max_timestamp) {
            cleaned.append_chunk(kept, bytes, max_offset, timestamp, offset, index_interval_bytes);
        }
    }

    /// `Cleaner#shouldRetainRecord`: past the map, kept; keyless, dropped;
    /// otherwise kept if it is its key's latest record and it has a value
    /// or its batch's delete horizon has not passed.
    fn should_retain(&self, batch: &LogBatch<R>, record: &R) -> bool {
        if self.latest.is_none_or(|latest| record.offset() > latest) {
            return true;
        }
        let Some(key) = record.key() else { return false };
        let latest_for_key = self.map.get(key).is_none_or(|found| record.offset() >= *found);
        let keep_tombstone = batch.delete_horizon_ms.is_none_or(|horizon| self.now_ms < horizon);
        latest_for_key && (!record.is_tombstone() || keep_tombstone)
    }
}
