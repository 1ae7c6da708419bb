//! Transaction markers removed by compaction, as Kafka 4.1's cleaner
//! removes them (`Cleaner#doClean`, `CleanedTransactionMetadata`,
//! `checkBatchRetention`). Each test mirrors a test of Kafka's
//! `LogCleanerTest` (storage module, 4.1) with the same log and the same
//! expected offsets; a "pass" is one `doClean` over the whole log below the
//! active segment, and `two_pass` is its `runTwoPassClean` (once now, once
//! after `delete.retention.ms`).

use std::collections::BTreeMap;
use std::rc::Rc;

use kafkascope_engine::storage::{BatchProducer, Log, LogBatch, LogConfig, LogRecord, LogToClean};

type Rec = LogRecord<()>;

const NOW: i64 = 1_700_000_000_000;
const DELETE_RETENTION_MS: i64 = 86_400_000;

/// A compacted log and what a broker knows beside it: the aborted
/// transactions (its transaction index) and each producer's last data
/// offset and epoch (its producer state).
struct Harness {
    log: Log<Rec>,
    aborted: Vec<(u64, u64, u64)>,
    open: BTreeMap<u64, u64>,
    producers: BTreeMap<u64, Option<u64>>,
}

impl Harness {
    fn new() -> Harness {
        let mut config = LogConfig::default();
        config.cleanup_policy = kafkascope_engine::storage::CleanupPolicy::COMPACT;
        config.delete_retention_ms = DELETE_RETENTION_MS;
        Harness {
            log: Log::new(config, NOW),
            aborted: Vec::new(),
            open: BTreeMap::new(),
            producers: BTreeMap::new(),
        }
    }

    fn next(&self) -> u64 {
        self.log.log_end_offset
    }

    fn record(offset: u64, key: Option<u32>) -> Rec {
        LogRecord {
            offset,
            timestamp: NOW,
            key: key.map(|key| Rc::from(key.to_string().as_str())),
            value_size: Some(1),
            headers: Vec::new(),
            payload: (),
        }
    }

    /// A transactional batch of `producer` with these keys.
    fn transactional(&mut self, producer: u64, keys: &[u32]) {
        let first = self.next();
        let records = keys
            .iter()
            .enumerate()
            .map(|(index, key)| Harness::record(first + index as u64, Some(*key)))
            .collect();
        let batch = LogBatch::new(records, Some(producer_of(producer, true, false)));
        self.open.entry(producer).or_insert(first);
        self.producers.insert(producer, Some(first + keys.len() as u64 - 1));
        self.log.append(batch, NOW);
    }

    /// A plain record with no producer.
    fn plain(&mut self, key: u32) {
        let offset = self.next();
        self.log
            .append(LogBatch::new(vec![Harness::record(offset, Some(key))], None), NOW);
    }

    fn marker(&mut self, producer: u64, commit: bool) {
        let offset = self.next();
        let first = self.open.remove(&producer).unwrap_or(offset);
        if !commit {
            self.aborted.push((producer, first, offset));
        }
        self.producers.entry(producer).or_insert(None);
        let batch = LogBatch::new(
            vec![Harness::record(offset, None)],
            Some(producer_of(producer, true, true)),
        );
        self.log.append(batch, NOW);
    }

    fn roll(&mut self) {
        self.log.roll(None, NOW);
    }

    /// One cleaning of everything below the active segment at `now`.
    fn pass(&mut self, now: i64) {
        let active = self.log.active_segment().base_offset;
        let to_clean = LogToClean {
            first_dirty_offset: 0,
            first_uncleanable_offset: active,
            clean_bytes: 0,
            cleanable_bytes: 1,
            need_compaction_now: false,
        };
        let aborted_txns = self.aborted.clone();
        let aborted = move |batch: &LogBatch<Rec>| {
            batch.producer.is_some_and(|producer| {
                producer.transactional
                    && !producer.control
                    && aborted_txns.iter().any(|(id, first, last)| {
                        *id == producer.producer_id && *first <= batch.base_offset && batch.last_offset <= *last
                    })
            })
        };
        let producers = self.producers.clone();
        let last_of_active_producer = move |batch: &LogBatch<Rec>| {
            batch
                .producer
                .is_some_and(|producer| match producers.get(&producer.producer_id) {
                    Some(Some(last_data_offset)) => batch.last_offset == *last_data_offset,
                    Some(None) => producer.control,
                    None => false,
                })
        };
        self.log
            .clean_with_producers(&to_clean, now, &aborted, &last_of_active_producer);
    }

    fn two_pass(&mut self, now: i64) {
        self.pass(now);
        self.pass(now + DELETE_RETENTION_MS + 1);
    }

    /// `LogTestUtils.keysInLog`: the keys of the data records left.
    fn keys(&self) -> Vec<u32> {
        self.batches()
            .filter(|batch| !batch.is_control())
            .flat_map(|batch| batch.records.iter())
            .filter_map(|record| record.key.as_ref().map(|key| key.parse().expect("a number")))
            .collect()
    }

    /// `offsetsInLog`: the offsets of the records left, markers included.
    fn offsets(&self) -> Vec<u64> {
        self.batches()
            .flat_map(|batch| batch.records.iter().map(|record| record.offset))
            .collect()
    }

    /// `lastOffsetsPerBatchInLog`, emptied batches included.
    fn last_offsets(&self) -> Vec<u64> {
        self.batches().map(|batch| batch.last_offset).collect()
    }

    fn batches(&self) -> impl Iterator<Item = &LogBatch<Rec>> + '_ {
        self.log.segments().flat_map(|segment| segment.batches())
    }
}

fn producer_of(producer_id: u64, transactional: bool, control: bool) -> BatchProducer {
    BatchProducer {
        producer_id,
        producer_epoch: 0,
        base_sequence: if control { -1 } else { 0 },
        transactional,
        control,
    }
}

/// `testAbortMarkerRemoval`: the aborted records go at once, their marker
/// two cleanings later.
#[test]
fn an_abort_marker_goes_once_its_records_are_gone_and_its_horizon_passed() {
    let mut log = Harness::new();
    log.transactional(1, &[1]);
    log.transactional(1, &[2, 3]);
    log.marker(1, false);
    log.transactional(1, &[3]);
    log.marker(1, true);
    log.roll();
    log.pass(NOW);
    assert_eq!(log.keys(), vec![3]);
    assert_eq!(log.offsets(), vec![3, 4, 5]);
    log.two_pass(NOW);
    assert_eq!(log.keys(), vec![3]);
    assert_eq!(log.offsets(), vec![4, 5]);
}

/// `testCommitMarkerRetentionWithEmptyBatch`: a commit marker stays while a
/// batch of its transaction stays (here an active producer's last batch,
/// kept empty), and goes once the producer has written again.
#[test]
fn a_commit_marker_stays_while_its_producers_last_batch_holds_its_sequence() {
    let mut log = Harness::new();
    log.transactional(1, &[2, 3]);
    log.roll();
    log.transactional(2, &[2, 3]);
    log.marker(2, true);
    log.roll();
    log.plain(2);
    log.plain(3);
    log.marker(1, true);
    log.roll();
    log.pass(NOW);
    assert_eq!(log.keys(), vec![2, 3]);
    assert_eq!(log.offsets(), vec![4, 5, 6, 7]);
    assert_eq!(log.last_offsets(), vec![1, 3, 4, 5, 6, 7]);
    log.pass(NOW);
    assert_eq!(log.offsets(), vec![4, 5, 6, 7]);
    assert_eq!(log.last_offsets(), vec![1, 3, 4, 5, 6, 7]);
    log.transactional(2, &[1]);
    log.marker(2, true);
    log.roll();
    log.pass(NOW);
    assert_eq!(log.keys(), vec![2, 3, 1]);
    assert_eq!(log.offsets(), vec![4, 5, 6, 7, 8, 9]);
    assert_eq!(log.last_offsets(), vec![1, 4, 5, 6, 7, 8, 9]);
    log.two_pass(NOW);
    assert_eq!(log.keys(), vec![2, 3, 1]);
    assert_eq!(log.offsets(), vec![5, 6, 7, 8, 9]);
    assert_eq!(log.last_offsets(), vec![1, 5, 6, 7, 8, 9]);
}

/// `testCleanEmptyControlBatch`: a marker that is an active producer's
/// only batch loses its record but keeps its header (the epoch).
#[test]
fn an_active_producers_only_marker_stays_as_an_empty_batch() {
    let mut log = Harness::new();
    log.marker(1, true);
    log.plain(2);
    log.plain(3);
    log.roll();
    log.two_pass(NOW);
    assert_eq!(log.keys(), vec![2, 3]);
    assert_eq!(log.offsets(), vec![1, 2]);
    assert_eq!(log.last_offsets(), vec![0, 1, 2]);
    log.pass(i64::MAX / 2);
    assert_eq!(log.offsets(), vec![1, 2]);
    assert_eq!(log.last_offsets(), vec![0, 1, 2]);
}

/// `testAbortedTransactionSpanningSegments`: the aborted batch stays empty
/// (its producer's last sequence), so its marker stays too, however late.
#[test]
fn an_abort_marker_stays_while_an_emptied_batch_of_its_transaction_is_kept() {
    let mut log = Harness::new();
    log.transactional(1, &[1]);
    log.roll();
    log.marker(1, false);
    log.roll();
    log.pass(NOW);
    assert_eq!(log.offsets(), vec![1]);
    assert_eq!(log.last_offsets(), vec![0, 1]);
    log.pass(i64::MAX / 2);
    assert_eq!(log.offsets(), vec![1]);
    assert_eq!(log.last_offsets(), vec![0, 1]);
}
