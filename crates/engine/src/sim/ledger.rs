//! What happened to each record, per consumer group: processed once,
//! processed again (and why), or never processed (and why). The ledger
//! is the simulation's own bookkeeping of what the application's handler
//! did; nothing like it exists in Kafka, which is the point of the
//! delivery-semantics table: at-most-once, at-least-once and exactly-once
//! differ in what ends up here.
//!
//! A record is processed when the handler finishes it: at once with no
//! handler time, else one after another at `processing_ms_per_record`
//! each, from the `poll()` that returned them. A crash in the middle of a
//! batch leaves the rest unprocessed.

use crate::sorting::Gather;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::chunked::ChunkedVec;
use crate::protocol::{Offset, TopicPartition};

use super::types::RecordId;

pub use super::trace::DuplicateReason;

/// Why an acknowledged record was never processed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NeverReason {
    /// Its offset was committed before it was processed, and the member
    /// crashed: the group starts after it.
    CommittedBeforeProcessing,
    /// The broker lost it (an unclean election, `acks` below `all`).
    LostAtBroker,
    /// Its transaction was aborted: a `read_committed` group skips it, as
    /// it should.
    TransactionAborted,
    /// The handler failed on it (or on a record before it in the same
    /// poll) and the member stopped; closing the consumer committed the
    /// positions `poll()` had already moved past it.
    SkippedWhenTheHandlerFailed,
    /// Retention deleted it before the group read it (its position fell
    /// below the log start, `auto.offset.reset` moved it on).
    DeletedByRetention,
    /// Compaction removed it before the group read it: a newer record of
    /// its key (or a tombstone) superseded it.
    CompactedAway,
}

impl std::fmt::Display for NeverReason {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            NeverReason::CommittedBeforeProcessing => "committed before it was processed, then the member crashed",
            NeverReason::LostAtBroker => "lost at the broker",
            NeverReason::TransactionAborted => "its transaction was aborted (read_committed skips it)",
            NeverReason::SkippedWhenTheHandlerFailed => {
                "the handler failed in its batch and the member stopped; closing committed past it"
            }
            NeverReason::DeletedByRetention => "retention deleted it before the group read it",
            NeverReason::CompactedAway => "compaction kept a newer record of its key instead",
        })
    }
}

/// What happened to an acknowledged record at the broker, for the ledger.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecordFate {
    /// The broker lost it.
    pub lost: bool,
    /// Its transaction aborted.
    pub aborted: bool,
    /// Retention deleted it (it is below the leader's log start).
    pub deleted: bool,
    /// The cleaner removed it (a newer record of its key superseded it).
    pub compacted: bool,
}

/// How far past its end the dense table of processed records may grow at
/// once.
const DENSE_GROWTH: usize = 1 << 16;

/// One group's bookkeeping.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
struct GroupBook {
    /// Times each record id was processed (skips by an idempotent handler
    /// not counted), and the offset it was first processed at, indexed by
    /// record id (ids are dense: every produced record's place in the
    /// simulation's table); zero times means never. Shared chunks, so a
    /// snapshot copies only the last.
    processed: ChunkedVec<(u32, Offset)>,
    /// The same for an id far past the dense table's end (none is expected:
    /// ids are handed out in order), so that no id can make it grow huge.
    processed_elsewhere: BTreeMap<RecordId, (u32, Offset)>,
    /// Who processed each offset last: consumer and its incarnation.
    by_offset: BTreeMap<TopicPartition, OffsetTable>,
    /// Duplicates by reason.
    duplicates: BTreeMap<DuplicateReason, u64>,
    /// Duplicates an idempotent handler recognised and skipped.
    skipped: u64,
    /// Records the handler gave up on and sent to the dead letter queue.
    dead_lettered: std::collections::BTreeSet<RecordId>,
    /// Records handed to a handler that then failed and stopped, without
    /// being processed.
    abandoned: std::collections::BTreeSet<RecordId>,
}

impl GroupBook {
    /// How many times `record` was processed and the offset it was first
    /// processed at, if it was.
    fn processed_times(&self, record: RecordId) -> Option<(u32, Offset)> {
        usize::try_from(record)
            .ok()
            .and_then(|index| self.processed.get(index))
            .copied()
            .filter(|(times, _)| *times > 0)
            .or_else(|| self.processed_elsewhere.get(&record).copied())
    }

    fn set_processed(&mut self, record: RecordId, entry: (u32, Offset)) {
        match usize::try_from(record) {
            Ok(index) if index < self.processed.len() + DENSE_GROWTH => {
                while self.processed.len() <= index {
                    self.processed.push((0, 0));
                }
                self.processed[index] = entry;
            }
            _ => {
                self.processed_elsewhere.insert(record, entry);
            }
        }
    }
}

/// Who processed each offset of one partition last, kept densely from the
/// first offset processed on (a group reads a partition's offsets in order,
/// over and over after a rewind); an offset before that, or far past the
/// end, goes to a map instead.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
struct OffsetTable {
    base: Offset,
    dense: ChunkedVec<Option<(u32, u32)>>,
    elsewhere: BTreeMap<Offset, (u32, u32)>,
}

impl OffsetTable {
    fn starting_at(base: Offset) -> OffsetTable {
        OffsetTable {
            base,
            ..OffsetTable::default()
        }
    }

    /// Notes who processed `offset`; returns who did before.
    fn insert(&mut self, offset: Offset, who: (u32, u32)) -> Option<(u32, u32)> {
        let index = offset
            .checked_sub(self.base)
            .and_then(|index| usize::try_from(index).ok())
            .filter(|&index| index < self.dense.len() + DENSE_GROWTH);
        match index {
            Some(index) => {
                while self.dense.len() <= index {
                    self.dense.push(None);
                }
                let before = std::mem::replace(&mut self.dense[index], Some(who));
                before.or_else(|| self.elsewhere.remove(&offset))
            }
            None => self.elsewhere.insert(offset, who),
        }
    }
}

/// Every group's bookkeeping.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Ledger {
    groups: BTreeMap<String, GroupBook>,
}

/// One record handed to the handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InProcess {
    /// Its partition.
    pub partition: TopicPartition,
    /// Its offset.
    pub offset: Offset,
    /// Which produced record it is.
    pub record: RecordId,
}

/// What processing a run of records found: duplicates by partition and
/// reason (first and last offset, how many, whether skipped).
pub type Duplicates = BTreeMap<(TopicPartition, DuplicateReason), (Offset, Offset, u64, bool)>;

/// A group's counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerView {
    /// The group.
    pub group: String,
    /// Acknowledged records processed exactly once.
    pub processed_once: u64,
    /// Records processed twice or more.
    pub processed_more: u64,
    /// Extra processings by reason.
    pub duplicates: Vec<(DuplicateReason, u64)>,
    /// Duplicates an idempotent handler skipped.
    pub skipped_duplicates: u64,
    /// Acknowledged records never processed, by reason.
    pub never_processed: Vec<(NeverReason, u64)>,
    /// Acknowledged records not processed yet (still ahead of the group).
    pub not_yet: u64,
    /// Acknowledged records the handler failed on and sent to the dead
    /// letter queue instead.
    pub dead_lettered: u64,
}

impl Ledger {
    /// The handler of `consumer` (incarnation `incarnation`) in `group`
    /// finished these records; `idempotent` handlers skip records already
    /// processed. Returns the duplicates found.
    pub fn process(
        &mut self,
        group: &str,
        consumer: u32,
        incarnation: u32,
        idempotent: bool,
        records: &[InProcess],
        crashed_since: impl Fn(u32, u32) -> bool,
    ) -> Duplicates {
        let book = self.groups.entry(group.to_string()).or_default();
        let mut found = Duplicates::new();
        for record in records {
            let previous = match book.by_offset.get_mut(&record.partition) {
                Some(table) => table.insert(record.offset, (consumer, incarnation)),
                None => {
                    let mut table = OffsetTable::starting_at(record.offset);
                    table.insert(record.offset, (consumer, incarnation));
                    book.by_offset.insert(record.partition.clone(), table);
                    None
                }
            };
            let seen = book.processed_times(record.record);
            let Some((times, first_offset)) = seen else {
                book.set_processed(record.record, (1, record.offset));
                continue;
            };
            let reason = if first_offset != record.offset {
                DuplicateReason::ProducerRetry
            } else {
                match previous {
                    Some((who, life)) if crashed_since(who, life) => DuplicateReason::CrashBeforeCommit,
                    _ => DuplicateReason::RebalanceBeforeCommit,
                }
            };
            if idempotent {
                book.skipped += 1;
            } else {
                book.set_processed(record.record, (times + 1, first_offset));
                *book.duplicates.entry(reason).or_default() += 1;
            }
            let entry = found.entry((record.partition.clone(), reason)).or_insert((
                record.offset,
                record.offset,
                0,
                idempotent,
            ));
            entry.0 = entry.0.min(record.offset);
            entry.1 = entry.1.max(record.offset);
            entry.2 += 1;
        }
        found
    }

    /// The handler gave up on these records and sent them to the dead
    /// letter queue.
    pub fn dead_letter(&mut self, group: &str, records: &[RecordId]) {
        let book = self.groups.entry(group.to_string()).or_default();
        book.dead_lettered.extend(records.iter().copied());
    }

    /// A handler failed and its member stopped before it processed these.
    pub fn abandon(&mut self, group: &str, records: &[RecordId]) {
        let book = self.groups.entry(group.to_string()).or_default();
        book.abandoned.extend(records.iter().copied());
    }

    /// How many times a group processed a record.
    pub fn times(&self, group: &str, record: RecordId) -> u32 {
        self.groups
            .get(group)
            .and_then(|book| book.processed_times(record))
            .map_or(0, |(times, _)| times)
    }

    /// The groups with a book.
    pub fn groups(&self) -> impl Iterator<Item = &String> {
        self.groups.keys()
    }

    /// A group's counts so far: `records` are the acknowledged records of
    /// the topics it reads, with their partition and offset and whether the
    /// broker lost them, their transaction aborted, or retention deleted
    /// them; `committed` the group's committed offsets.
    pub fn view<'a>(
        &self,
        group: &str,
        records: impl Iterator<Item = (RecordId, &'a TopicPartition, Offset, RecordFate)>,
        committed: &BTreeMap<TopicPartition, Offset>,
    ) -> LedgerView {
        let empty = GroupBook::default();
        let book = self.groups.get(group).unwrap_or(&empty);
        let mut view = LedgerView {
            group: group.to_string(),
            duplicates: book
                .duplicates
                .iter()
                .map(|(reason, count)| (*reason, *count))
                .collect(),
            skipped_duplicates: book.skipped,
            ..LedgerView::default()
        };
        let mut never: BTreeMap<NeverReason, u64> = BTreeMap::new();
        for (record, partition, offset, fate) in records {
            let RecordFate {
                lost,
                aborted,
                deleted,
                compacted,
            } = fate;
            let committed_past = committed.get(partition).is_some_and(|committed| *committed > offset);
            match book.processed_times(record).map_or(0, |(times, _)| times) {
                0 if lost => *never.entry(NeverReason::LostAtBroker).or_default() += 1,
                0 if deleted => *never.entry(NeverReason::DeletedByRetention).or_default() += 1,
                0 if compacted => *never.entry(NeverReason::CompactedAway).or_default() += 1,
                0 if book.dead_lettered.contains(&record) => view.dead_lettered += 1,
                0 if committed_past && book.abandoned.contains(&record) => {
                    *never.entry(NeverReason::SkippedWhenTheHandlerFailed).or_default() += 1;
                }
                0 if aborted && committed.get(partition).is_some_and(|committed| *committed > offset) => {
                    *never.entry(NeverReason::TransactionAborted).or_default() += 1;
                }
                0 if committed.get(partition).is_some_and(|committed| *committed > offset) => {
                    *never.entry(NeverReason::CommittedBeforeProcessing).or_default() += 1;
                }
                0 => view.not_yet += 1,
                1 => view.processed_once += 1,
                _ => view.processed_more += 1,
            }
        }
        view.never_processed = never.into_iter().collect();
        view
    }
}

impl super::Simulation {
    /// Each group's ledger: processed once, again (by reason), never (by
    /// reason) or not yet, over the acknowledged records of the topics it
    /// reads. Committed offsets are the group's coordinator's.
    pub fn ledger_views(&self) -> Vec<LedgerView> {
        let mut groups: BTreeMap<&str, std::collections::BTreeSet<&str>> = BTreeMap::new();
        for consumer in &self.consumers {
            groups
                .entry(consumer.config.group.as_str())
                .or_default()
                .extend(consumer.config.topics.iter().map(String::as_str));
        }
        groups
            .into_iter()
            .map(|(group, topics)| {
                let committed = self.group_committed(group);
                let records = self.records.iter().enumerate().filter_map(|(id, record)| {
                    let partition = record.partition.as_ref()?;
                    let offset = record.acknowledged??;
                    topics.contains(&*partition.topic).then(|| {
                        let fate = RecordFate {
                            lost: record.lost,
                            aborted: self.record_aborted(partition, offset),
                            deleted: self.leader_log_start(partition).is_some_and(|start| offset < start),
                            compacted: self.leader_log(partition).is_some_and(|log| log.compacted_away(offset)),
                        };
                        (id as RecordId, partition, offset, fate)
                    })
                });
                self.ledger.view(group, records, &committed)
            })
            .collect()
    }

    /// The log start offset of `partition` on its leader.
    pub(crate) fn leader_log_start(&self, partition: &TopicPartition) -> Option<Offset> {
        Some(self.leader_log(partition)?.log_start_offset())
    }

    /// Whether the record at `offset` of `partition` belongs to a
    /// transaction its current leader's log has aborted.
    pub(crate) fn record_aborted(&self, partition: &TopicPartition, offset: Offset) -> bool {
        let Some(log) = self
            .controller
            .partitions
            .get(partition)
            .and_then(|registration| registration.leader)
            .and_then(|leader| self.brokers.get(&leader))
            .and_then(|broker| broker.logs.get(partition))
        else {
            return false;
        };
        let Some(batch) = log.record_at(offset).and_then(|record| record.batch) else {
            return false;
        };
        batch.transactional
            && log.txn_index.entries().iter().any(|txn| {
                txn.producer_id == batch.producer_id && (txn.first_offset..=txn.last_offset).contains(&offset)
            })
    }

    /// A group's committed offsets at its coordinator (none while it has
    /// no coordinator).
    pub fn group_committed(&self, group: &str) -> BTreeMap<TopicPartition, Offset> {
        let partition = self.offsets_partition(group);
        let Some(leader) = self
            .controller
            .partitions
            .get(&partition)
            .and_then(|registration| registration.leader)
        else {
            return BTreeMap::new();
        };
        self.brokers
            .get(&leader)
            .and_then(|broker| broker.coordinators.get(&partition))
            .map(|coordinator| {
                coordinator
                    .shard
                    .committed_offsets(group)
                    .into_iter()
                    .filter_map(|((topic, index), offset)| {
                        Some((TopicPartition::new(topic.as_str(), index), u64::try_from(offset).ok()?))
                    })
                    .gather()
            })
            .unwrap_or_default()
    }
}

/// What a consume-transform-produce pipeline wrote to its output topic,
/// as a `read_committed` reader sees it now: the committed outputs (up to
/// each partition leader's last stable offset, aborted transactions
/// skipped) and the input records that have more than one of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OutputAudit {
    /// Committed output records made from an input record.
    pub outputs: u64,
    /// Distinct input records they were made from (places in the input
    /// logs: a record written there twice is two input records).
    pub sources: u64,
    /// Input records with more committed outputs than places in the input
    /// logs: id and copies.
    pub duplicated: Vec<(RecordId, u64)>,
    /// Output records in the log a `read_committed` reader skips
    /// (aborted), or cannot see yet (above the last stable offset).
    pub hidden: u64,
    /// Of those, the ones above the last stable offset (a transaction
    /// still open, or a marker not replicated yet).
    pub open: u64,
}

impl super::Simulation {
    /// What a `read_committed` reader of `partition` gets from its leader
    /// now: records up to the last stable offset, without control records
    /// and aborted transactions (`None` without a leader).
    pub fn read_committed_view(&self, partition: &TopicPartition) -> Option<Vec<super::types::Record>> {
        use crate::replication::transactions::IsolationLevel;
        let leader = self.controller.partitions.get(partition)?.leader?;
        let log = self.brokers.get(&leader)?.logs.get(partition)?;
        let stable = log.last_stable_offset();
        let records = log.copy_records(0, stable, usize::MAX);
        let aborted: Vec<(u64, Offset)> = log
            .txn_index
            .collect_aborted_txns(0, stable)
            .iter()
            .map(|entry| (entry.producer_id, entry.first_offset))
            .collect();
        Some(crate::replication::transactions::returned_records(records, IsolationLevel::ReadCommitted, &aborted, 0).0)
    }

    /// How many records a `read_committed` reader of `partition` gets now.
    pub fn read_committed_records(&self, partition: &TopicPartition) -> u64 {
        self.read_committed_view(partition)
            .map_or(0, |records| records.len() as u64)
    }

    /// The [`OutputAudit`] of `topic`, read from each partition's leader.
    pub fn output_audit(&self, topic: &str) -> OutputAudit {
        let mut copies: BTreeMap<RecordId, u64> = BTreeMap::new();
        let mut audit = OutputAudit::default();
        let partitions = self.topic_partition_count(topic);
        let source = |id: RecordId| self.records.get(id as usize).and_then(|made| made.source);
        for index in 0..partitions {
            let partition = TopicPartition::new(topic, index);
            let Some(visible) = self.read_committed_view(&partition) else {
                continue;
            };
            let Some(log) = self
                .controller
                .partitions
                .get(&partition)
                .and_then(|registration| registration.leader)
                .and_then(|leader| self.brokers.get(&leader))
                .and_then(|broker| broker.logs.get(&partition))
            else {
                continue;
            };
            let stable = log.last_stable_offset();
            let mut in_log = 0;
            for record in log.records() {
                if source(record.id).is_some() {
                    in_log += 1;
                    if record.offset >= stable {
                        audit.open += 1;
                    }
                }
            }
            let mut seen = 0;
            for record in &visible {
                if let Some(source) = source(record.id) {
                    *copies.entry(source).or_default() += 1;
                    seen += 1;
                }
            }
            audit.outputs += seen;
            audit.hidden += in_log - seen;
        }
        // An input record is a place in an input log: a record an
        // idempotent producer wrote twice across an epoch bump (KIP-360) is
        // two input records, and exactly-once gives each its own output.
        let mut views: BTreeMap<TopicPartition, Vec<super::types::Record>> = BTreeMap::new();
        for (source, count) in copies {
            let places = match self
                .records
                .get(source as usize)
                .and_then(|made| made.partition.clone())
            {
                Some(partition) => {
                    let view = views
                        .entry(partition.clone())
                        .or_insert_with(|| self.read_committed_view(&partition).unwrap_or_default());
                    (view.iter().filter(|record| record.id == source).count() as u64).max(1)
                }
                None => 1,
            };
            audit.sources += count.min(places);
            if count > places {
                audit.duplicated.push((source, count));
            }
        }
        audit
    }
}
