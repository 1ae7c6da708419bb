//! A partition's log on one broker: the storage log with its producer
//! state, transaction index and leader epochs, as `UnifiedLog` keeps them.

use super::*;

/// One replica's log of one partition; it survives crashes. The records
/// live in segments ([`crate::storage::Log`]); the rest is what Kafka
/// rebuilds from them (producer state, aborted transactions) or keeps
/// beside them (high watermark, leader epochs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionLog {
    /// The segments and their records.
    #[serde(skip)]
    pub log: StorageLog<Record>,
    /// This replica's high watermark.
    pub high_watermark: Offset,
    /// The leader-epoch history.
    pub epoch_cache: LeaderEpochCache,
    /// Idempotent and transactional producers' state, with the open
    /// transactions.
    #[serde(skip)]
    pub producers: ProducerStateTable,
    /// Aborted transactions (`TransactionIndex`).
    #[serde(skip)]
    pub txn_index: TransactionIndex,
    /// The offsets of the transaction markers in the log, in order.
    marker_offsets: Vec<Offset>,
}

impl Default for PartitionLog {
    fn default() -> Self {
        PartitionLog::new(LogConfig::default(), 0)
    }
}

impl PartitionLog {
    /// An empty log with the topic's storage settings.
    pub fn new(config: LogConfig, now_ms: u64) -> Self {
        PartitionLog {
            log: StorageLog::new(config, now_ms as i64),
            high_watermark: 0,
            epoch_cache: LeaderEpochCache::default(),
            producers: ProducerStateTable::default(),
            txn_index: TransactionIndex::default(),
            marker_offsets: Vec::new(),
        }
    }

    /// The log end offset.
    pub fn log_end_offset(&self) -> Offset {
        self.log.log_end_offset
    }

    /// The log start offset: the first offset a fetch may ask for.
    pub fn log_start_offset(&self) -> Offset {
        self.log.log_start_offset
    }

    /// The records from `from` (or the first after it) on, in order.
    pub fn records_from(&self, from: Offset) -> impl Iterator<Item = &Record> + '_ {
        self.log
            .batches_from(from)
            .flat_map(|batch| batch.records.iter())
            .skip_while(move |record| record.offset < from)
    }

    /// Every record in the log, in order.
    pub fn records(&self) -> impl Iterator<Item = &Record> + '_ {
        self.records_from(0)
    }

    /// Whether the record at `offset` was removed by the cleaner: it is
    /// below the cleaner's checkpoint and no longer in the log.
    pub fn compacted_away(&self, offset: Offset) -> bool {
        self.log
            .cleaner_checkpoint
            .is_some_and(|checkpoint| offset < checkpoint)
            && self.record_at(offset).is_none()
    }

    /// The record at `offset`, if the log holds it: in the first batch
    /// that reaches it, if anywhere (a later batch starts past it), found by
    /// halving, since a batch's records are in offset order.
    pub fn record_at(&self, offset: Offset) -> Option<&Record> {
        Self::record_in(self.log.first_batch_from(offset)?, offset)
    }

    /// The record at `offset` in `batch`, if it holds it.
    pub fn record_in(batch: &LogBatch<Record>, offset: Offset) -> Option<&Record> {
        let records = &batch.records;
        records
            .get(records.partition_point(|record| record.offset < offset))
            .filter(|record| record.offset == offset)
    }

    /// Up to `max` records from `from`, below `until`.
    pub fn copy_records(&self, from: Offset, until: Offset, max: usize) -> Vec<Record> {
        self.records_from(from)
            .take_while(|record| record.offset < until)
            .take(max)
            .cloned()
            .collect()
    }

    /// What a consumer fetch from `from` returns: up to `max` records
    /// below `bound`, and where the next fetch starts (past the last batch
    /// read whole, so that batches compaction emptied are skipped).
    /// At most `max_bytes` of batches, but always the first one
    /// (`fetch.max.bytes` as `UnifiedLog#read` applies it).
    pub fn consumer_read(&self, from: Offset, bound: Offset, max: usize, max_bytes: u64) -> (Vec<Record>, Offset, u64) {
        let mut records = Vec::new();
        let mut next = from;
        let mut bytes = 0;
        for batch in self.log.batches_from(from) {
            if batch.base_offset >= bound || records.len() >= max {
                break;
            }
            // Whole batches go over the wire.
            let size = u64::from(batch.size_bytes);
            if bytes > 0 && bytes + size > max_bytes {
                break;
            }
            bytes += size;
            let mut whole = batch.last_offset < bound;
            for record in batch.records.iter().filter(|record| record.offset >= from) {
                if record.offset >= bound || records.len() >= max {
                    whole = false;
                    break;
                }
                records.push(record.clone());
                next = record.offset + 1;
            }
            if !whole {
                break;
            }
            next = next.max(batch.next_offset());
        }
        (records, next, bytes)
    }

    /// Whole batches from the one holding `from`, up to about `max`
    /// records, as a leader sends them to a follower.
    pub fn copy_batches(&self, from: Offset, max: usize) -> Vec<LogBatch<Record>> {
        let mut count = 0;
        self.log
            .batches_from(from)
            .take_while(|batch| {
                let take = count < max;
                count += batch.records.len().max(1);
                take
            })
            .cloned()
            .collect()
    }

    /// Appends one batch of records (consecutive offsets from the log end)
    /// at `now_ms`, and updates the producer state for it.
    pub(crate) fn append_records(&mut self, records: Vec<Record>, now_ms: u64) {
        let producer = records.first().and_then(|record| record.batch).map(batch_producer);
        self.append_batch(LogBatch::new(records, producer), now_ms);
    }

    /// Appends a batch as its leader wrote it (a follower's append).
    pub(crate) fn append_batch(&mut self, batch: LogBatch<Record>, now_ms: u64) {
        let from = batch.base_offset;
        self.log.append(batch, now_ms as i64);
        self.track_producers_from(from, true);
    }

    /// How many transaction markers (control records) the log holds.
    pub fn txn_markers(&self) -> u64 {
        self.marker_offsets.len() as u64
    }

    /// The offsets of the last `at_most` transaction markers, in order.
    pub fn recent_marker_offsets(&self, at_most: usize) -> &[Offset] {
        &self.marker_offsets[self.marker_offsets.len().saturating_sub(at_most)..]
    }

    /// Where a consumer at `isolation` may read up to.
    pub fn read_bound(&self, isolation: IsolationLevel) -> Offset {
        match isolation {
            IsolationLevel::ReadUncommitted => self.high_watermark,
            IsolationLevel::ReadCommitted => self.last_stable_offset(),
        }
    }

    /// The last stable offset: where `read_committed` consumers stop
    /// (`UnifiedLog#lastStableOffset`).
    pub fn last_stable_offset(&self) -> Offset {
        last_stable_offset(
            self.producers.first_unstable_offset_below(self.high_watermark),
            self.high_watermark,
        )
    }

    /// Updates the producer state for the batches appended from `from` on:
    /// one entry per idempotent batch, and each transaction marker closing
    /// its producer's transaction, as every replica does when it appends
    /// (`AppendOrigin.REPLICATION`: the leader checked them before).
    /// `appended`: they are new (not a rebuild from the log), so a
    /// transactional one ends its producer's verification here.
    pub(crate) fn track_producers_from(&mut self, from: Offset, appended: bool) {
        let batches: Vec<(Offset, BatchSequence, i64)> = self
            .log
            .batches_from(from)
            .filter(|batch| batch.base_offset >= from)
            .filter_map(|batch| {
                let timestamp = batch.records.iter().map(|record| record.timestamp).max()?;
                Some((batch.base_offset, batch.records.first()?.batch?, timestamp))
            })
            .collect();
        for (offset, batch, timestamp) in batches {
            // A replica never refuses what its leader wrote, so errors
            // (which replication only logs in Kafka) are ignored. The
            // batch's newest record timestamp is when the producer was
            // last seen (`producer.id.expiration.ms` counts from it).
            if batch.transactional && appended {
                self.producers.transactional_appended(
                    batch.producer_id,
                    producer_epoch(batch.epoch),
                    batch.marker.is_some(),
                );
            }
            if let Some(marker) = batch.marker {
                self.marker_offsets.push(offset);
                let _ = self.producers.append_marker(
                    AppendOrigin::Replication,
                    batch.producer_id,
                    marker.control,
                    producer_epoch(batch.epoch),
                    marker.coordinator_epoch,
                    offset,
                    timestamp,
                    &mut self.txn_index,
                );
                continue;
            }
            // A v2 batch's offset delta is its sequence delta (which wraps
            // after Integer.MAX_VALUE).
            let offset_delta = (i64::from(batch.last_sequence) - i64::from(batch.first_sequence))
                .rem_euclid(i64::from(i32::MAX) + 1) as Offset;
            let _ = self.producers.record(
                batch.producer_id,
                &DataBatch {
                    producer_epoch: producer_epoch(batch.epoch),
                    first_seq: batch.first_sequence,
                    last_seq: batch.last_sequence,
                    first_offset: offset,
                    last_offset: offset + offset_delta,
                    max_timestamp: timestamp,
                    is_transactional: batch.transactional,
                },
            );
        }
    }

    /// A power loss: the records past the recovery point were in the page
    /// cache only and are gone, and what depends on them is rebuilt, as
    /// `LogLoader` finds the log on the next start (the simulator writes no
    /// torn batch, so recovery from the recovery point finds every batch
    /// on disk valid and truncates nothing more). Returns the offset the log
    /// now ends at, where it ended, and the records lost, if any were.
    pub(crate) fn lose_unflushed(&mut self, now_ms: u64) -> Option<(Offset, Offset, Vec<crate::sim::types::RecordId>)> {
        let from = self.log.recovery_point.max(self.log.log_start_offset);
        let end = self.log_end_offset();
        if from >= end {
            return None;
        }
        let lost = self.records_from(from).map(|record| record.id).collect();
        self.truncate_to(from, now_ms);
        Some((from, end, lost))
    }

    /// Cuts the log back to `offset`, rebuilding what depends on it.
    pub(crate) fn truncate_to(&mut self, offset: Offset, now_ms: u64) {
        self.log.truncate_to(offset, now_ms as i64);
        self.epoch_cache.truncate_from_end(offset);
        self.high_watermark = self.high_watermark.min(offset);
        self.rebuild_producer_state();
    }

    /// Raises the log start offset (a follower following its leader's);
    /// the leader-epoch history is cut to it (`maybeIncrementLogStartOffset`).
    pub(crate) fn increment_log_start_offset(&mut self, offset: Offset) {
        self.log.increment_log_start_offset(offset);
        self.epoch_cache.truncate_from_start(self.log.log_start_offset);
    }

    /// Empties the log and starts it at `offset` (`truncateFullyAndStartAt`):
    /// a follower whose next record the leader no longer has.
    pub(crate) fn truncate_fully_and_start_at(&mut self, offset: Offset, now_ms: u64) {
        self.log.truncate_fully_and_start_at(offset, now_ms as i64);
        self.epoch_cache = LeaderEpochCache::default();
        self.high_watermark = offset;
        self.rebuild_producer_state();
    }

    /// Cleans the log if it is compacted and dirty enough (see
    /// [`crate::storage::Log::clean`]), below its last stable offset;
    /// batches of aborted transactions go (the transaction index says
    /// which).
    /// How dirty the log is, if the cleaner would pick it now
    /// (`LogCleanerManager#grabFilthiestCompactedLog`'s eligibility).
    pub(crate) fn cleanable_ratio(&self, now_ms: u64) -> Option<f64> {
        let to_clean = self.log.to_clean(now_ms as i64, self.last_stable_offset())?;
        if !to_clean.should_clean(self.log.config.min_cleanable_dirty_ratio) {
            return None;
        }
        to_clean.dirty_ratio()
    }

    pub(crate) fn clean(&mut self, now_ms: u64) -> Option<crate::storage::CleanOutcome> {
        let to_clean = self.log.to_clean(now_ms as i64, self.last_stable_offset())?;
        if !to_clean.should_clean(self.log.config.min_cleanable_dirty_ratio) {
            return None;
        }
        let aborted_txns = self.txn_index.entries().to_vec();
        let aborted = move |batch: &LogBatch<Record>| {
            batch.producer.is_some_and(|producer| {
                producer.transactional
                    && !producer.control
                    && aborted_txns.iter().any(|txn| {
                        txn.producer_id == producer.producer_id
                            && txn.first_offset <= batch.base_offset
                            && batch.last_offset <= txn.last_offset
                    })
            })
        };
        // The batch holding an active producer's last sequence, or with
        // no data batch left its last marker's epoch, stays
        // (`Cleaner#cleanSegments`'s `lastRecordsOfActiveProducers`).
        let last_records: BTreeMap<u64, (Option<Offset>, i16)> = self
            .producers
            .active_producers()
            .iter()
            .map(|(producer_id, entry)| (*producer_id, (entry.last_data_offset(), entry.producer_epoch)))
            .gather();
        let last_of_active_producer = move |batch: &LogBatch<Record>| {
            batch
                .producer
                .is_some_and(|producer| match last_records.get(&producer.producer_id) {
                    Some((Some(last_data_offset), _)) => batch.last_offset == *last_data_offset,
                    Some((None, epoch)) => producer.control && producer.producer_epoch == *epoch,
                    None => false,
                })
        };
        Some(
            self.log
                .clean_with_producers(&to_clean, now_ms as i64, &aborted, &last_of_active_producer),
        )
    }

    /// Deletes the segments retention is due to delete (see
    /// [`crate::storage::Log::delete_old_segments`]); the leader-epoch
    /// history is cut to the new log start.
    pub(crate) fn delete_old_segments(&mut self, now_ms: u64) -> crate::storage::RetentionOutcome {
        let outcome = self.log.delete_old_segments(now_ms as i64, self.high_watermark);
        self.epoch_cache.truncate_from_start(self.log.log_start_offset);
        outcome
    }

    /// UnifiedLog#truncateTo rebuilds the producer state from the log (and
    /// truncates the transaction index).
    fn rebuild_producer_state(&mut self) {
        self.producers.clear();
        self.txn_index.clear();
        self.marker_offsets.clear();
        // Verifications in progress are kept (in memory, not in the log).
        self.track_producers_from(0, false);
    }
}

/// A simulated batch's producer as the batch header carries it.
fn batch_producer(batch: BatchSequence) -> BatchProducer {
    BatchProducer {
        producer_id: batch.producer_id,
        producer_epoch: producer_epoch(batch.epoch),
        base_sequence: batch.first_sequence,
        transactional: batch.transactional,
        control: batch.marker.is_some(),
    }
}

/// The simulation's producer epoch as Kafka's `short`.
pub(super) fn producer_epoch(epoch: u16) -> i16 {
    i16::try_from(epoch).expect("producer epochs stay below Short.MAX_VALUE")
}
