//! A replica's log of one partition (`UnifiedLog`, `LocalLog`): segments
//! in offset order, the last one active; appends roll a new segment on
//! `segment.bytes` or `segment.ms`; the retention check deletes whole
//! closed segments from the front.

use std::rc::Rc;

use serde::Serialize;

use super::record::{LogBatch, StoredRecord};
use super::segment::Segment;
use crate::protocol::Offset;

/// `cleanup.policy`: what happens to old records. Written as Kafka spells
/// it (`delete`, `compact`, `compact,delete`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CleanupPolicy {
    /// `delete`: retention removes old segments.
    pub delete: bool,
    /// `compact`: the cleaner keeps the latest record per key.
    pub compact: bool,
}

impl CleanupPolicy {
    /// `cleanup.policy=delete`, Kafka's default.
    pub const DELETE: CleanupPolicy = CleanupPolicy {
        delete: true,
        compact: false,
    };
    /// `cleanup.policy=compact`.
    pub const COMPACT: CleanupPolicy = CleanupPolicy {
        delete: false,
        compact: true,
    };
    /// `cleanup.policy=compact,delete`.
    pub const COMPACT_DELETE: CleanupPolicy = CleanupPolicy {
        delete: true,
        compact: true,
    };

    /// Parses Kafka's spelling: `delete`, `compact`, or both separated by a comma.
    pub fn parse(text: &str) -> Option<CleanupPolicy> {
        let mut policy = CleanupPolicy {
            delete: false,
            compact: false,
        };
        for part in text.split(',') {
            match part.trim() {
                "delete" => policy.delete = true,
                "compact" => policy.compact = true,
                _ => return None,
            }
        }
        Some(policy)
    }
}

impl Default for CleanupPolicy {
    fn default() -> Self {
        CleanupPolicy::DELETE
    }
}

impl Serialize for CleanupPolicy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `cleanup.policy` as a scenario file writes it, for the format's schema.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for CleanupPolicy {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CleanupPolicy".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The topic's cleanup.policy: delete (by retention), compact (keep each key's latest value), or both.",
            "type": "string",
            "pattern": "^\\s*(delete|compact)\\s*(,\\s*(delete|compact)\\s*)*$",
            "examples": ["delete", "compact", "compact,delete"]
        })
    }
}

impl<'de> serde::Deserialize<'de> for CleanupPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        CleanupPolicy::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "cleanup.policy must be delete, compact or compact,delete, got {text:?}"
            ))
        })
    }
}

impl std::fmt::Display for CleanupPolicy {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.compact, self.delete) {
            (true, true) => formatter.write_str("compact,delete"),
            (true, false) => formatter.write_str("compact"),
            _ => formatter.write_str("delete"),
        }
    }
}

/// A topic's storage settings (`LogConfig`), with Kafka's names and
/// defaults. Sizes in bytes, times in ms; -1 turns a retention limit off.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LogConfig {
    /// `segment.bytes` (1 GiB).
    pub segment_bytes: u64,
    /// `segment.ms` (7 days).
    pub segment_ms: i64,
    /// `index.interval.bytes` (4096).
    pub index_interval_bytes: u64,
    /// `segment.index.bytes` (10 MiB).
    pub segment_index_bytes: u32,
    /// `retention.ms` (7 days; -1: no time limit).
    pub retention_ms: i64,
    /// `retention.bytes` (-1: no size limit).
    pub retention_bytes: i64,
    /// `cleanup.policy` (delete).
    pub cleanup_policy: CleanupPolicy,
    /// `min.cleanable.dirty.ratio` (0.5).
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms` (0).
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` (`Long.MAX_VALUE`).
    pub max_compaction_lag_ms: i64,
    /// `delete.retention.ms` (1 day): how long tombstones outlive a cleaning.
    pub delete_retention_ms: i64,
    /// `flush.messages` (`Long.MAX_VALUE`: never): once this many records
    /// are past the recovery point, the append flushes the log
    /// (`UnifiedLog#append`: `unflushedMessages >= flushInterval`).
    pub flush_messages: i64,
    /// `flush.ms` (`Long.MAX_VALUE`: never): the broker's log flusher
    /// flushes a log last flushed longer ago than this
    /// (`LogManager#flushDirtyLogs`), when it runs at all (every
    /// `log.flush.scheduler.interval.ms`, by default never).
    pub flush_ms: i64,
}

/// Configurations are compared exactly; the ratio is never NaN (it is
/// validated between 0 and 1).
impl Eq for LogConfig {}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1024 * 1024 * 1024,
            segment_ms: 7 * 24 * 60 * 60 * 1000,
            index_interval_bytes: 4096,
            segment_index_bytes: 10 * 1024 * 1024,
            retention_ms: 7 * 24 * 60 * 60 * 1000,
            retention_bytes: -1,
            cleanup_policy: CleanupPolicy::DELETE,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
            delete_retention_ms: 24 * 60 * 60 * 1000,
            flush_messages: i64::MAX,
            flush_ms: i64::MAX,
        }
    }
}

/// Why a retention pass deleted a segment (`SegmentDeletionReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeletionReason {
    /// The log start offset moved past it (`DeleteRecords`, or a follower
    /// following its leader).
    LogStartOffset,
    /// The log was over `retention.bytes`.
    RetentionBytes,
    /// Its newest record was older than `retention.ms`.
    RetentionMs,
}

impl std::fmt::Display for DeletionReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            DeletionReason::LogStartOffset => "below the log start offset",
            DeletionReason::RetentionBytes => "over retention.bytes",
            DeletionReason::RetentionMs => "older than retention.ms",
        })
    }
}

/// What one retention check deleted, by pass, in Kafka's order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RetentionOutcome {
    /// Segments deleted and why, as (base offset, size, reason).
    pub deleted: Vec<(Offset, u64, DeletionReason)>,
    /// The log start offset before the check.
    pub log_start_before: Offset,
    /// The log start offset after it.
    pub log_start_after: Offset,
}

/// A replica's log: segments (the last active), the log start and end
/// offsets and the cleaner's checkpoint, over records of type `R`. Closed segments are shared between copies of the log until
/// one of them changes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Log<R: StoredRecord> {
    /// The topic's storage settings.
    pub config: LogConfig,
    pub(crate) segments: Vec<Rc<Segment<R>>>,
    /// The first offset a consumer can read (`logStartOffset`).
    pub log_start_offset: Offset,
    /// The offset the next record gets.
    pub log_end_offset: Offset,
    /// Where the cleaner's last pass stopped (the "cleaner offset
    /// checkpoint"): below it the log is clean.
    pub cleaner_checkpoint: Option<Offset>,
    /// The recovery point (`LocalLog#recoveryPoint`): every record below it
    /// was flushed to disk. The records from it to the log end are in the
    /// operating system's page cache only: a process crash keeps them, a
    /// power loss does not. Kafka flushes when `flush.messages` or
    /// `flush.ms` say so (by default never), when a segment rolls (the
    /// closed segments), and at a clean shutdown; otherwise durability
    /// rests on replication.
    pub recovery_point: Offset,
    /// When the log was last flushed (`UnifiedLog#lastFlushTime`), in ms.
    pub last_flush_ms: i64,
}

impl<R: StoredRecord> Log<R> {
    /// An empty log with one empty segment at offset 0.
    pub fn new(config: LogConfig, now_ms: i64) -> Self {
        Log {
            config,
            segments: vec![Rc::new(Segment::new(0, config.segment_index_bytes, now_ms))],
            log_start_offset: 0,
            log_end_offset: 0,
            cleaner_checkpoint: None,
            recovery_point: 0,
            last_flush_ms: now_ms,
        }
    }

    /// The segments, oldest first.
    pub fn segments(&self) -> impl Iterator<Item = &Segment<R>> + '_ {
        self.segments.iter().map(|segment| &**segment)
    }

    /// How many segments there are.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// The active segment (the last), where appends go.
    pub fn active_segment(&self) -> &Segment<R> {
        self.segments.last().expect("a log always has a segment")
    }

    /// The log's size: the sum of its segments' sizes.
    pub fn size_bytes(&self) -> u64 {
        self.segments.iter().map(|segment| segment.size_bytes).sum()
    }

    /// Appends a batch whose offsets start at the log end offset or later,
    /// rolling a new segment first if the active one is due
    /// (`UnifiedLog#maybeRoll`). Returns the active segment's base offset.
    ///
    /// # Panics
    /// If the batch starts below the log end offset.
    pub fn append(&mut self, batch: LogBatch<R>, now_ms: i64) -> Offset {
        assert!(batch.base_offset >= self.log_end_offset, "appends go at the log end");
        let roll = self.active_segment().should_roll(
            self.config.segment_bytes,
            self.config.segment_ms,
            u64::from(batch.size_bytes),
            batch.max_timestamp,
            batch.last_offset,
            now_ms,
        );
        if roll {
            let offset = self.roll(Some(batch.base_offset), now_ms);
            // `UnifiedLog#roll` schedules `flushUptoOffsetExclusive` of the
            // new segment's base offset: the closed segments reach the disk
            // (here at once).
            self.flush_up_to(offset, now_ms);
        }
        self.log_end_offset = batch.next_offset();
        let interval = self.config.index_interval_bytes;
        let active = Rc::make_mut(self.segments.last_mut().expect("a segment"));
        active.append(batch, interval, now_ms);
        let base = active.base_offset;
        if self.unflushed_messages() >= self.config.flush_messages.max(1) as u64 {
            self.flush(now_ms);
        }
        base
    }

    /// The records past the recovery point (`LocalLog#unflushedMessages`).
    pub fn unflushed_messages(&self) -> u64 {
        self.log_end_offset.saturating_sub(self.recovery_point)
    }

    /// Writes the whole log to disk (`UnifiedLog#flush`): the recovery
    /// point becomes the log end offset.
    pub fn flush(&mut self, now_ms: i64) {
        self.flush_up_to(self.log_end_offset, now_ms);
    }

    /// Writes the log below `offset` to disk (`UnifiedLog#flush(offset)`,
    /// which does nothing unless `offset` is past the recovery point).
    pub fn flush_up_to(&mut self, offset: Offset, now_ms: i64) {
        let offset = offset.min(self.log_end_offset);
        if offset > self.recovery_point {
            self.recovery_point = offset;
            self.last_flush_ms = now_ms;
        }
    }

    /// The broker's log flusher visits the log (`LogManager#flushDirtyLogs`):
    /// it is flushed if it was last flushed `flush.ms` or more ago.
    pub fn flush_if_due(&mut self, now_ms: i64) {
        if now_ms.saturating_sub(self.last_flush_ms) >= self.config.flush_ms {
            self.flush(now_ms);
        }
    }

    /// Starts a new active segment at `max(expected, log end offset)`
    /// (`LocalLog#roll`); an empty active segment already there is replaced.
    pub fn roll(&mut self, expected_next_offset: Option<Offset>, now_ms: i64) -> Offset {
        let offset = expected_next_offset.unwrap_or(0).max(self.log_end_offset);
        let index_bytes = self.config.segment_index_bytes;
        let active = self.segments.last_mut().expect("a segment");
        if active.base_offset == offset && active.is_empty() {
            *active = Rc::new(Segment::new(offset, index_bytes, now_ms));
            return offset;
        }
        Rc::make_mut(active).on_become_inactive();
        self.segments.push(Rc::new(Segment::new(offset, index_bytes, now_ms)));
        offset
    }

    /// The broker's retention check on this log (`UnifiedLog#deleteOldSegments`):
    /// segments below a raised log start offset, then (with
    /// `cleanup.policy` including `delete`) `retention.bytes`, then
    /// `retention.ms`. Only segments wholly below the high watermark go;
    /// each pass stops at the first segment it keeps. When every segment
    /// is due, a new empty one is rolled first, so the log start offset
    /// becomes the log end offset and the active segment is never the one
    /// deleted.
    pub fn delete_old_segments(&mut self, now_ms: i64, high_watermark: Offset) -> RetentionOutcome {
        let mut outcome = RetentionOutcome {
            log_start_before: self.log_start_offset,
            ..RetentionOutcome::default()
        };
        let log_start = self.log_start_offset;
        self.delete_segments_where(
            high_watermark,
            now_ms,
            DeletionReason::LogStartOffset,
            &mut outcome,
            |_, next| next.is_some_and(|next| next <= log_start),
        );
        if self.config.cleanup_policy.delete {
            let retention_bytes = self.config.retention_bytes;
            let size = self.size_bytes() as i64;
            if retention_bytes >= 0 && size >= retention_bytes {
                let mut diff = size - retention_bytes;
                self.delete_segments_where(
                    high_watermark,
                    now_ms,
                    DeletionReason::RetentionBytes,
                    &mut outcome,
                    |segment, _| {
                        let delete = diff - segment.size_bytes as i64 >= 0;
                        if delete {
                            diff -= segment.size_bytes as i64;
                        }
                        delete
                    },
                );
            }
            let retention_ms = self.config.retention_ms;
            if retention_ms >= 0 {
                self.delete_segments_where(
                    high_watermark,
                    now_ms,
                    DeletionReason::RetentionMs,
                    &mut outcome,
                    |segment, _| now_ms - segment.largest_timestamp() > retention_ms,
                );
            }
        }
        outcome.log_start_after = self.log_start_offset;
        outcome
    }

    /// One pass (`deletableSegments` then `deleteSegments`).
    fn delete_segments_where(
        &mut self,
        high_watermark: Offset,
        now_ms: i64,
        reason: DeletionReason,
        outcome: &mut RetentionOutcome,
        mut predicate: impl FnMut(&Segment<R>, Option<Offset>) -> bool,
    ) {
        let mut deletable = 0;
        for (index, segment) in self.segments.iter().enumerate() {
            let next = self.segments.get(index + 1).map(|next| next.base_offset);
            let last_and_empty = next.is_none() && segment.is_empty();
            let upper_bound = next.unwrap_or(self.log_end_offset);
            if high_watermark >= upper_bound && predicate(segment, next) && !last_and_empty {
                deletable += 1;
            } else {
                break;
            }
        }
        if deletable == 0 {
            return;
        }
        if deletable == self.segments.len() {
            self.roll(None, now_ms);
        }
        let removed: Vec<Rc<Segment<R>>> = self.segments.drain(..deletable).collect();
        self.increment_log_start_offset(self.segments[0].base_offset);
        outcome.deleted.extend(
            removed
                .iter()
                .map(|segment| (segment.base_offset, segment.size_bytes, reason)),
        );
    }

    /// Raises the log start offset (never lowers it).
    pub fn increment_log_start_offset(&mut self, offset: Offset) {
        if offset > self.log_start_offset {
            self.log_start_offset = offset;
        }
    }

    /// Cuts the log back to `offset` (a follower truncating to its leader):
    /// later segments go, the one holding `offset` is cut.
    pub fn truncate_to(&mut self, offset: Offset, now_ms: i64) {
        if offset >= self.log_end_offset {
            return;
        }
        if offset < self.segments[0].base_offset {
            self.truncate_fully_and_start_at(offset, now_ms);
            return;
        }
        self.segments.retain(|segment| segment.base_offset <= offset);
        let index_bytes = self.config.segment_index_bytes;
        let last = self.segments.last_mut().expect("the segment holding the offset");
        if last.base_offset == offset {
            *last = Rc::new(Segment::new(offset, index_bytes, now_ms));
        } else {
            Rc::make_mut(last).truncate_to(offset);
        }
        self.log_end_offset = offset;
        // UnifiedLog#truncateTo: the log start never stays above the end,
        // nor the recovery point.
        self.log_start_offset = self.log_start_offset.min(offset);
        self.recovery_point = self.recovery_point.min(offset);
        if let Some(checkpoint) = self.cleaner_checkpoint {
            self.cleaner_checkpoint = Some(checkpoint.min(offset));
        }
    }

    /// Empties the log and starts it again at `offset` (`truncateFullyAndStartAt`).
    pub fn truncate_fully_and_start_at(&mut self, offset: Offset, now_ms: i64) {
        self.segments = vec![Rc::new(Segment::new(offset, self.config.segment_index_bytes, now_ms))];
        self.log_start_offset = offset;
        self.log_end_offset = offset;
        self.cleaner_checkpoint = None;
        self.recovery_point = offset;
    }

    /// The segment holding `offset`: the last whose base is at or below it.
    pub fn segment_for(&self, offset: Offset) -> Option<&Segment<R>> {
        let slot = self.segments.partition_point(|segment| segment.base_offset <= offset);
        (slot > 0).then(|| &*self.segments[slot - 1])
    }

    /// The batch holding `from`, or the first after it: the first of
    /// [`Log::batches_from`], found without chaining iterators (the
    /// simulator's checks ask for one record a million times).
    pub fn first_batch_from(&self, from: Offset) -> Option<&LogBatch<R>> {
        let first = self
            .segments
            .partition_point(|segment| segment.base_offset <= from)
            .saturating_sub(1);
        self.segments
            .get(first..)?
            .iter()
            .find_map(|segment| segment.first_batch_from(from))
    }

    /// The batches from the one holding `from` (or the first after it) on,
    /// in order.
    pub fn batches_from(&self, from: Offset) -> impl Iterator<Item = &LogBatch<R>> + '_ {
        let first = self
            .segments
            .partition_point(|segment| segment.base_offset <= from)
            .saturating_sub(1);
        self.segments[first..]
            .iter()
            .flat_map(move |segment| segment.batches_from(from))
    }

    /// How a read of `target` finds its place on disk, as Kafka does it:
    /// the segment by base offset, the offset index's last entry at or
    /// below it, then a scan of the batches from that position.
    pub fn lookup(&self, target: Offset) -> Option<Lookup> {
        if target < self.log_start_offset || target >= self.log_end_offset {
            return None;
        }
        let segment = self.segment_for(target)?;
        let (index_entry, batches_scanned, batch_base_offset, batch_position) = segment.find(target)?;
        Some(Lookup {
            target,
            segment_base_offset: segment.base_offset,
            index_entry,
            batches_scanned,
            batch_base_offset,
            batch_position,
        })
    }
}

/// The steps of one offset lookup (see [`Log::lookup`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Lookup {
    /// The offset looked up.
    pub target: Offset,
    /// The segment whose range holds the offset.
    pub segment_base_offset: Offset,
    /// The index entry used: (offset, position), or (base offset, 0) when
    /// no entry is at or below the target.
    pub index_entry: (Offset, u32),
    /// How many batches the scan read from that position.
    pub batches_scanned: usize,
    /// The batch holding the offset (or the first after it, if compaction
    /// removed it).
    pub batch_base_offset: Offset,
    /// That batch's position in the `.log` file.
    pub batch_position: u32,
}
