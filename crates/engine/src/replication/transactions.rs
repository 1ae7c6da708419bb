//! Transactions as one partition's log sees them (KIP-98): the markers that
//! close them, the last stable offset, the transaction index of aborted
//! transactions, and what a `read_committed` or `read_uncommitted` consumer
//! returns from a fetch.
//!
//! A transactional producer's batches are ordinary data batches flagged as
//! transactional; the first one opens a transaction at its offset (tracked
//! by [`super::idempotence::ProducerStateTable`]). The transaction
//! coordinator closes it by writing a control batch, a `COMMIT` or `ABORT`
//! marker, to every partition the transaction touched. Until the marker is
//! below the high watermark the transaction holds the partition's **last
//! stable offset** (LSO) back: `read_committed` consumers read up to the LSO,
//! `read_uncommitted` ones up to the high watermark
//! (`UnifiedLog#lastStableOffset`, `ProducerStateManager#firstUnstableOffset`).
//! Aborted transactions enter the transaction index with the LSO of that
//! moment (`TransactionIndex`, `AbortedTxn`); a `read_committed` fetch gets
//! the aborted transactions overlapping what it reads
//! (`TransactionIndex#collectAbortedTxns`), and the consumer drops those
//! producers' batches up to their abort marker
//! (`CompletedFetch#nextFetchedRecord`). Control records are never returned
//! to the application.

use serde::Serialize;

use super::Offset;
use crate::protocol::records::Record;
use crate::protocol::ProducerId;

pub use crate::protocol::transactions::{ControlType, IsolationLevel};

/// A transaction on one partition (`TxnMetadata`): its producer, its first
/// offset and, once its marker is written, the marker's offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TxnMetadata {
    /// The transactional producer.
    pub producer_id: ProducerId,
    /// The offset of its first record on this partition.
    pub first_offset: Offset,
    /// The offset of its marker, once written.
    pub last_offset: Option<Offset>,
}

/// A transaction a marker closed (`CompletedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CompletedTxn {
    /// The transactional producer.
    pub producer_id: ProducerId,
    /// Its first offset on this partition.
    pub first_offset: Offset,
    /// The marker's offset.
    pub last_offset: Offset,
    /// Whether the marker was `ABORT`.
    pub is_aborted: bool,
}

/// An entry of the transaction index (`AbortedTxn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AbortedTxn {
    /// The transactional producer.
    pub producer_id: ProducerId,
    /// Its first offset on this partition.
    pub first_offset: Offset,
    /// The `ABORT` marker's offset.
    pub last_offset: Offset,
    /// The last stable offset when it was aborted (where a search for
    /// aborted transactions below some offset may stop).
    pub last_stable_offset: Offset,
}

/// A partition's aborted transactions in the order they were aborted
/// (`TransactionIndex`, one per segment in Kafka; one per log here).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TransactionIndex {
    entries: Vec<AbortedTxn>,
}

impl TransactionIndex {
    /// Adds an aborted transaction (`TransactionIndex#append`).
    pub fn append(&mut self, aborted: AbortedTxn) {
        self.entries.push(aborted);
    }

    /// Every entry, in order.
    pub fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Forgets everything (before rebuilding from the log).
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Drops entries whose marker is at or after `offset` (`TransactionIndex#truncateTo`).
    pub fn truncate_to(&mut self, offset: Offset) {
        self.entries.retain(|entry| entry.last_offset < offset);
    }

    /// The aborted transactions a fetch from `fetch_offset` reading below
    /// `upper_bound` must be told about: those ending at or after the fetch
    /// offset and starting below the bound; the search stops at the first
    /// entry whose last stable offset reaches the bound
    /// (`TransactionIndex#collectAbortedTxns`).
    pub fn collect_aborted_txns(&self, fetch_offset: Offset, upper_bound: Offset) -> Vec<AbortedTxn> {
        let mut found = Vec::new();
        for entry in &self.entries {
            if entry.last_offset >= fetch_offset && entry.first_offset < upper_bound {
                found.push(*entry);
            }
            if entry.last_stable_offset >= upper_bound {
                break;
            }
        }
        found
    }
}

/// The last stable offset (`UnifiedLog#lastStableOffset`): the first
/// unstable offset if it is below the high watermark, else the high
/// watermark.
pub fn last_stable_offset(first_unstable: Option<Offset>, high_watermark: Offset) -> Offset {
    match first_unstable {
        Some(first) if first < high_watermark => first,
        _ => high_watermark,
    }
}

/// A batch as a fetch returns it, reduced to what the consumer's filter
/// looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FetchedBatch {
    /// Its first offset.
    pub base_offset: Offset,
    /// Its last offset.
    pub last_offset: Offset,
    /// Its producer, if it has one (idempotent or transactional).
    pub producer_id: Option<ProducerId>,
    /// Whether it belongs to a transaction.
    pub transactional: bool,
    /// For a control batch, its marker.
    pub control: Option<ControlType>,
}

/// What a consumer returns to the application from fetched batches
/// (`CompletedFetch#fetchRecords`, `#nextFetchedRecord`): the offsets of
/// the records it hands over, and where its next fetch starts. A
/// `read_committed` consumer learns of an aborted transaction's producer
/// when it reaches the transaction's first offset, skips that producer's
/// transactional batches, and forgets it at its `ABORT` marker; control
/// batches are never returned at either level.
pub fn consume_batches(
    batches: &[FetchedBatch],
    isolation: IsolationLevel,
    aborted: &[(ProducerId, Offset)],
    fetch_offset: Offset,
) -> (Vec<Offset>, Offset) {
    let mut pending: Vec<(ProducerId, Offset)> = aborted.to_vec();
    // A priority queue by first offset in Kafka.
    crate::sorting::sort_by_key(&mut pending, |&(producer, first)| (first, producer));
    let mut pending = std::collections::VecDeque::from(pending);
    let mut aborted_producers = std::collections::BTreeSet::new();
    let mut returned = Vec::new();
    let mut next_fetch_offset = fetch_offset;
    for batch in batches {
        if batch.last_offset < next_fetch_offset {
            continue;
        }
        if isolation == IsolationLevel::ReadCommitted {
            if let Some(producer_id) = batch.producer_id {
                // `consumeAbortedTransactionsUpTo(batch.lastOffset())`.
                while pending.front().is_some_and(|&(_, first)| first <= batch.last_offset) {
                    let (producer, _) = pending.pop_front().expect("checked");
                    aborted_producers.insert(producer);
                }
                if batch.control == Some(ControlType::Abort) {
                    aborted_producers.remove(&producer_id);
                } else if batch.transactional && aborted_producers.contains(&producer_id) {
                    next_fetch_offset = batch.last_offset + 1;
                    continue;
                }
            }
        }
        if batch.control.is_none() {
            returned.extend(batch.base_offset.max(next_fetch_offset)..=batch.last_offset);
        }
        next_fetch_offset = batch.last_offset + 1;
    }
    (returned, next_fetch_offset)
}

/// What a consumer at `isolation` returns from fetched records from
/// `position` on, and where its position goes once they are returned
/// (`CompletedFetch#fetchRecords`): control records never, and for
/// `read_committed` no record of an aborted transaction (see
/// [`consume_batches`]).
pub fn returned_records(
    records: Vec<Record>,
    isolation: IsolationLevel,
    aborted: &[(u64, Offset)],
    position: Offset,
) -> (Vec<Record>, Offset) {
    let mut batches: Vec<FetchedBatch> = Vec::new();
    for (index, record) in records.iter().enumerate() {
        let continues = index > 0 && record.batch.is_some() && records[index - 1].batch == record.batch;
        match batches.last_mut() {
            Some(batch) if continues => batch.last_offset = record.offset,
            _ => batches.push(FetchedBatch {
                base_offset: record.offset,
                last_offset: record.offset,
                producer_id: record.batch.map(|batch| batch.producer_id),
                transactional: record.batch.is_some_and(|batch| batch.transactional),
                control: record.batch.and_then(|batch| batch.marker).map(|marker| marker.control),
            }),
        }
    }
    // The offsets come in ascending order, batch after batch.
    let (returned, next_offset) = consume_batches(&batches, isolation, aborted, position);
    let records = records
        .into_iter()
        .filter(|record| returned.binary_search(&record.offset).is_ok())
        .collect();
    (records, next_offset.max(position))
}

#[cfg(test)]
mod tests {
    use super::super::idempotence::{AppendOrigin, ProducerStateTable};
    use super::*;

    #[test]
    fn an_open_transaction_holds_the_last_stable_offset_back() {
        let mut table = ProducerStateTable::default();
        let mut index = TransactionIndex::default();
        table.append_client(7, 0, 0, 2, 0, 10, true).unwrap();
        table.append_client(8, 0, 0, 1, 2, 11, false).unwrap();
        assert_eq!(table.first_unstable_offset(), Some(0));
        assert_eq!(last_stable_offset(table.first_unstable_offset(), 3), 0);
        let completed = table
            .append_marker(
                AppendOrigin::Coordinator,
                7,
                ControlType::Abort,
                0,
                0,
                3,
                12,
                &mut index,
            )
            .unwrap()
            .unwrap();
        assert!(completed.is_aborted);
        // Closed but the marker is not below the high watermark yet.
        assert_eq!(last_stable_offset(table.first_unstable_offset(), 3), 0);
        table.on_high_watermark_updated(4);
        assert_eq!(last_stable_offset(table.first_unstable_offset(), 4), 4);
        assert_eq!(index.entries().len(), 1);
        let batches = [
            FetchedBatch {
                base_offset: 0,
                last_offset: 1,
                producer_id: Some(7),
                transactional: true,
                control: None,
            },
            FetchedBatch {
                base_offset: 2,
                last_offset: 2,
                producer_id: Some(8),
                transactional: false,
                control: None,
            },
            FetchedBatch {
                base_offset: 3,
                last_offset: 3,
                producer_id: Some(7),
                transactional: true,
                control: Some(ControlType::Abort),
            },
        ];
        let aborted: Vec<_> = index
            .collect_aborted_txns(0, 4)
            .iter()
            .map(|txn| (txn.producer_id, txn.first_offset))
            .collect();
        assert_eq!(
            consume_batches(&batches, IsolationLevel::ReadCommitted, &aborted, 0),
            (vec![2], 4)
        );
        assert_eq!(
            consume_batches(&batches, IsolationLevel::ReadUncommitted, &[], 0),
            (vec![0, 1, 2], 4)
        );
    }
}
