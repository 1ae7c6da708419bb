//! One log segment (`LogSegment`): a `.log` file of batches with its sparse
//! offset index (`OffsetIndex`) and time index (`TimeIndex`).

use serde::Serialize;

use super::record::{LogBatch, StoredRecord, NO_TIMESTAMP};
use crate::chunked::ChunkedVec;
use crate::protocol::Offset;

/// Bytes of one offset-index entry (relative offset, position).
pub const OFFSET_INDEX_ENTRY_BYTES: u32 = 8;
/// Bytes of one time-index entry (timestamp, relative offset).
pub const TIME_INDEX_ENTRY_BYTES: u32 = 12;

/// One segment's records and indexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment<R: StoredRecord> {
    /// The offset its files are named after; no record in it is lower.
    pub base_offset: Offset,
    /// Its batches in offset order.
    #[serde(skip)]
    pub(crate) batches: ChunkedVec<LogBatch<R>>,
    /// Where each batch starts in the `.log` file.
    #[serde(skip)]
    positions: ChunkedVec<u32>,
    /// The `.log` file's size in bytes.
    pub size_bytes: u64,
    /// The offset after its last batch, or its base offset when empty
    /// (`readNextOffset`).
    pub next_offset: Offset,
    /// The `.index` file: (offset, file position), sparse.
    pub offset_index: Vec<(Offset, u32)>,
    /// The `.timeindex` file: (timestamp, offset), timestamps increasing.
    pub time_index: Vec<(i64, Offset)>,
    /// The largest timestamp written so far and the last offset of its batch.
    pub max_timestamp_so_far: Option<(i64, Offset)>,
    /// The first batch's largest timestamp, which `segment.ms` counts from.
    pub rolling_based_timestamp: Option<i64>,
    /// Bytes appended since the last offset-index entry.
    pub bytes_since_last_index_entry: u64,
    /// When the segment was created (virtual ms).
    pub created_ms: i64,
    /// When its files last changed (virtual ms); what `largestTimestamp`
    /// falls back to for a segment without records.
    pub last_modified_ms: i64,
    /// How many entries each index holds before the segment must roll
    /// (`segment.index.bytes` / entry size).
    pub max_offset_index_entries: usize,
    /// The same for the time index.
    pub max_time_index_entries: usize,
}

impl<R: StoredRecord> Segment<R> {
    /// An empty segment at `base_offset` (`LogSegment.open`).
    pub fn new(base_offset: Offset, segment_index_bytes: u32, now_ms: i64) -> Self {
        Segment {
            base_offset,
            batches: ChunkedVec::new(),
            positions: ChunkedVec::new(),
            size_bytes: 0,
            next_offset: base_offset,
            offset_index: Vec::new(),
            time_index: Vec::new(),
            max_timestamp_so_far: None,
            rolling_based_timestamp: None,
            bytes_since_last_index_entry: 0,
            created_ms: now_ms,
            last_modified_ms: now_ms,
            max_offset_index_entries: (segment_index_bytes / OFFSET_INDEX_ENTRY_BYTES) as usize,
            max_time_index_entries: (segment_index_bytes / TIME_INDEX_ENTRY_BYTES) as usize,
        }
    }

    /// Its batches in offset order.
    pub fn batches(&self) -> impl Iterator<Item = &LogBatch<R>> + '_ {
        self.batches.iter()
    }

    /// The first of its batches whose last offset is at or past `from`
    /// (the first of [`Segment::batches_from`], found without an iterator).
    pub fn first_batch_from(&self, from: Offset) -> Option<&LogBatch<R>> {
        self.batches
            .get(self.batches.partition_point(|batch| batch.last_offset < from))
    }

    /// Its batches from the first whose last offset is at or past `from`.
    pub fn batches_from(&self, from: Offset) -> impl Iterator<Item = &LogBatch<R>> + '_ {
        let first = self.batches.partition_point(|batch| batch.last_offset < from);
        self.batches.iter_from(first)
    }

    /// How many batches it holds.
    pub fn batch_count(&self) -> usize {
        self.batches.len()
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.size_bytes == 0
    }

    /// The largest record timestamp in it, or when it was last modified if
    /// it has none (`largestTimestamp`). Time-based retention compares
    /// this with the clock.
    pub fn largest_timestamp(&self) -> i64 {
        match self.max_timestamp_so_far {
            Some((timestamp, _)) if timestamp >= 0 => timestamp,
            _ => self.last_modified_ms,
        }
    }

    /// The largest record timestamp, if any record has one.
    pub fn largest_record_timestamp(&self) -> Option<i64> {
        self.max_timestamp_so_far
            .map(|(timestamp, _)| timestamp)
            .filter(|timestamp| *timestamp >= 0)
    }

    /// The file names Kafka gives this segment's files
    /// (`LogFileUtils.filenamePrefixFromOffset`: 20 digits, zero padded).
    pub fn file_name(&self, suffix: &str) -> String {
        segment_file_name(self.base_offset, suffix)
    }

    /// Whether the segment must roll before a batch of `batch_bytes` with
    /// largest timestamp `max_timestamp` and last offset `last_offset` is
    /// appended (`LogSegment#shouldRoll`, `RollParams`).
    pub fn should_roll(
        &self,
        segment_bytes: u64,
        segment_ms: i64,
        batch_bytes: u64,
        max_timestamp: i64,
        last_offset: Offset,
        now_ms: i64,
    ) -> bool {
        let reached_roll_ms = self.time_waited_for_roll(now_ms, max_timestamp) > segment_ms;
        self.size_bytes > segment_bytes.saturating_sub(batch_bytes)
            || (self.size_bytes > 0 && reached_roll_ms)
            || self.offset_index.len() >= self.max_offset_index_entries
            // TimeIndex#isFull keeps its last slot for the entry written on roll.
            || self.time_index.len() + 1 >= self.max_time_index_entries
            || last_offset - self.base_offset > i32::MAX as Offset
    }

    /// How long the segment has been open, for `segment.ms`: from its first
    /// batch's timestamp to the incoming batch's (`timeWaitedForRoll`), or
    /// by the clock when records carry no timestamps.
    fn time_waited_for_roll(&self, now_ms: i64, message_timestamp: i64) -> i64 {
        match self.rolling_based_timestamp {
            Some(timestamp) if timestamp >= 0 => message_timestamp - timestamp,
            _ => now_ms - self.created_ms,
        }
    }

    /// Appends one batch (`LogSegment#append`): a sparse offset-index entry
    /// when more than `index_interval_bytes` were written since the last
    /// one (counted before this batch), and a time-index entry when the
    /// largest timestamp grew.
    pub fn append(&mut self, batch: LogBatch<R>, index_interval_bytes: u64, now_ms: i64) {
        let last_offset = batch.last_offset;
        let bytes = u64::from(batch.size_bytes);
        let max_timestamp = batch.max_timestamp;
        self.append_chunk(
            vec![batch],
            bytes,
            last_offset,
            max_timestamp,
            last_offset,
            index_interval_bytes,
        );
        self.last_modified_ms = now_ms;
    }

    /// Appends batches written together (the cleaner copies a whole source
    /// segment at once): one index decision for all of them, keyed by
    /// `largest_offset`, as `LogSegment#append` makes for one `MemoryRecords`.
    pub(crate) fn append_chunk(
        &mut self,
        batches: Vec<LogBatch<R>>,
        bytes: u64,
        largest_offset: Offset,
        largest_timestamp: i64,
        offset_of_max_timestamp: Offset,
        index_interval_bytes: u64,
    ) {
        if bytes == 0 {
            return;
        }
        let position = self.size_bytes;
        if position == 0 {
            self.rolling_based_timestamp = Some(largest_timestamp);
        }
        if let Some(last) = batches.last() {
            self.next_offset = last.next_offset();
        }
        let mut at = position as u32;
        for batch in &batches {
            self.positions.push(at);
            at += batch.size_bytes;
        }
        self.batches.extend(batches);
        self.size_bytes += bytes;
        if largest_timestamp > self.max_timestamp_so_far() {
            self.max_timestamp_so_far = Some((largest_timestamp, offset_of_max_timestamp));
        }
        if self.bytes_since_last_index_entry > index_interval_bytes {
            self.append_offset_index(largest_offset, position as u32);
            self.maybe_append_time_index();
            self.bytes_since_last_index_entry = 0;
        }
        self.bytes_since_last_index_entry += bytes;
    }

    /// The largest timestamp so far, `NO_TIMESTAMP` if none.
    fn max_timestamp_so_far(&self) -> i64 {
        self.max_timestamp_so_far
            .map_or(NO_TIMESTAMP, |(timestamp, _)| timestamp)
    }

    fn append_offset_index(&mut self, offset: Offset, position: u32) {
        if self.offset_index.last().is_none_or(|(last, _)| offset > *last) {
            self.offset_index.push((offset, position));
        }
    }

    /// `TimeIndex#maybeAppend`: only when the timestamp grew.
    fn maybe_append_time_index(&mut self) {
        let Some((timestamp, offset)) = self.max_timestamp_so_far else {
            return;
        };
        let last = self.time_index.last().map_or(NO_TIMESTAMP, |(timestamp, _)| *timestamp);
        if timestamp > last {
            self.time_index.push((timestamp, offset));
        }
    }

    /// The segment stops being the active one (`onBecomeInactiveSegment`):
    /// its time index gets a final entry for the largest timestamp.
    pub(crate) fn on_become_inactive(&mut self) {
        self.maybe_append_time_index();
    }

    /// Where a fetch for `target` starts reading (`OffsetIndex#lookup`):
    /// the last index entry at or below it, or the file's start.
    pub fn index_lookup(&self, target: Offset) -> (Offset, u32) {
        let slot = self.offset_index.partition_point(|(offset, _)| *offset <= target);
        if slot == 0 {
            (self.base_offset, 0)
        } else {
            self.offset_index[slot - 1]
        }
    }

    /// How a read of `target` finds its batch (`LogSegment#translateOffset`):
    /// the index entry, then a scan of the batches from its position.
    /// Returns the entry, how many batches were read, and the found
    /// batch's base offset and position.
    pub fn find(&self, target: Offset) -> Option<((Offset, u32), usize, Offset, u32)> {
        let entry = self.index_lookup(target);
        let from = self.positions.partition_point(|position| *position < entry.1);
        let found = self.batches.partition_point(|batch| batch.last_offset < target);
        let batch = self.batches.get(found)?;
        Some((
            entry,
            found.saturating_sub(from) + 1,
            batch.base_offset,
            self.positions[found],
        ))
    }

    /// Drops every batch at or after `offset` (a follower truncating to its
    /// leader); index entries past the new end go too.
    pub(crate) fn truncate_to(&mut self, offset: Offset) {
        let keep = self
            .batches
            .iter()
            .take_while(|batch| batch.base_offset < offset)
            .count();
        let mut kept: Vec<LogBatch<R>> = self.batches.copy_range(0, keep);
        if let Some(last) = kept.last_mut() {
            if last.last_offset >= offset {
                last.records.retain(|record| record.offset() < offset);
                last.last_offset = offset - 1;
                last.max_timestamp = last
                    .records
                    .iter()
                    .map(StoredRecord::timestamp)
                    .max()
                    .unwrap_or(NO_TIMESTAMP);
                last.size_bytes = last.encoded_size();
            }
        }
        let size: u64 = kept.iter().map(|batch| u64::from(batch.size_bytes)).sum();
        self.next_offset = kept.last().map_or(self.base_offset, LogBatch::next_offset);
        self.offset_index
            .retain(|(entry, position)| *entry < offset && u64::from(*position) < size);
        self.time_index.retain(|(_, entry)| *entry < offset);
        self.max_timestamp_so_far =
            kept.iter()
                .filter(|batch| batch.max_timestamp >= 0)
                .fold(None, |best: Option<(i64, Offset)>, batch| match best {
                    Some((timestamp, _)) if timestamp >= batch.max_timestamp => best,
                    _ => Some((batch.max_timestamp, batch.last_offset)),
                });
        if kept.is_empty() {
            self.rolling_based_timestamp = None;
        }
        self.positions = ChunkedVec::new();
        let mut at = 0;
        for batch in &kept {
            self.positions.push(at);
            at += batch.size_bytes;
        }
        self.batches = ChunkedVec::new();
        self.batches.extend(kept);
        self.size_bytes = size;
        self.bytes_since_last_index_entry = 0;
    }
}

/// A segment file's name: the base offset in 20 zero-padded digits and the
/// suffix (`.log`, `.index`, `.timeindex`, `.txnindex`).
pub fn segment_file_name(base_offset: Offset, suffix: &str) -> String {
    format!("{base_offset:020}{suffix}")
}
