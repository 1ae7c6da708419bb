//! The storage invariants over random histories (proptest): appends of
//! keyed records and tombstones, retention checks and cleanings, at random
//! times. After every step: the log start offset never passes the high
//! watermark; no retention pass deletes the segment that is active; and a
//! compacted log keeps the latest value of every key whose latest record
//! is not a tombstone.

use std::collections::BTreeMap;
use std::rc::Rc;

use kafkascope_engine::storage::{CleanupPolicy, Log, LogBatch, LogConfig, LogRecord};
use proptest::prelude::*;

/// A record with nothing attached.
type Plain = LogRecord<()>;

#[derive(Debug, Clone)]
enum Step {
    /// Records as (key index, value size or a tombstone).
    Append(Vec<(u8, Option<u8>)>),
    /// Time passes.
    Wait(u32),
    /// The high watermark catches up with part of the log.
    Replicate(u8),
    /// The broker's retention check.
    Retention,
    /// The cleaner's pass, if the log is dirty enough.
    Clean,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => proptest::collection::vec((0u8..6, proptest::option::weighted(0.85, 0u8..60)), 1..5).prop_map(Step::Append),
        2 => (0u32..5_000).prop_map(Step::Wait),
        2 => (0u8..=100).prop_map(Step::Replicate),
        1 => Just(Step::Retention),
        2 => Just(Step::Clean),
    ]
}

fn config() -> impl Strategy<Value = LogConfig> {
    (
        150u64..1_200,
        prop_oneof![Just("compact"), Just("compact,delete"), Just("delete")],
        prop_oneof![Just(-1i64), 500..20_000i64],
        prop_oneof![Just(-1i64), 300..3_000i64],
        0.0f64..0.9,
        0i64..3_000,
    )
        .prop_map(
            |(segment_bytes, policy, retention_ms, retention_bytes, ratio, delete_retention_ms)| LogConfig {
                segment_bytes,
                segment_ms: 20_000,
                index_interval_bytes: 100,
                cleanup_policy: CleanupPolicy::parse(policy).expect("a policy"),
                retention_ms,
                retention_bytes,
                min_cleanable_dirty_ratio: ratio,
                delete_retention_ms,
                ..LogConfig::default()
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn storage_invariants_hold(config in config(), steps in proptest::collection::vec(step(), 1..80)) {
        let mut now = 1_000_000i64;
        let mut log: Log<Plain> = Log::new(config, now);
        let mut high_watermark = 0u64;
        // The latest record of each key: (offset, value size or tombstone).
        let mut latest: BTreeMap<u8, (u64, Option<u32>)> = BTreeMap::new();
        let mut retention_ran = false;
        for step in steps {
            match step {
                Step::Append(records) => {
                    let first = log.log_end_offset;
                    let records: Vec<Plain> = records.iter().enumerate().map(|(index, (key, value))| {
                        let offset = first + index as u64;
                        latest.insert(*key, (offset, value.map(u32::from)));
                        LogRecord {
                            offset,
                            timestamp: now,
                            key: Some(Rc::from(format!("k{key}").as_str())),
                            value_size: value.map(u32::from),
                            headers: Vec::new(),
                            payload: (),
                        }
                    }).collect();
                    log.append(LogBatch::new(records, None), now);
                }
                Step::Wait(ms) => now += i64::from(ms),
                Step::Replicate(percent) => {
                    let target = log.log_end_offset * u64::from(percent) / 100;
                    high_watermark = high_watermark.max(target);
                }
                Step::Retention => {
                    let active_before = log.active_segment().base_offset;
                    let outcome = log.delete_old_segments(now, high_watermark);
                    retention_ran |= !outcome.deleted.is_empty();
                    for (base, _, _) in &outcome.deleted {
                        prop_assert!(*base != log.active_segment().base_offset, "deleted the active segment {base}");
                        prop_assert!(*base <= active_before);
                    }
                }
                Step::Clean => {
                    if let Some(to_clean) = log.to_clean(now, high_watermark) {
                        if to_clean.should_clean(log.config.min_cleanable_dirty_ratio) {
                            log.clean(&to_clean, now, &|_| false);
                        }
                    }
                }
            }
            prop_assert!(log.log_start_offset <= high_watermark, "log start {} passed the high watermark {high_watermark}", log.log_start_offset);
            // Offsets only increase, across segments and batches.
            let mut previous: Option<u64> = None;
            for segment in log.segments() {
                for batch in segment.batches() {
                    prop_assert!(batch.base_offset >= segment.base_offset);
                    for record in &batch.records {
                        prop_assert!(previous.is_none_or(|previous| record.offset > previous));
                        previous = Some(record.offset);
                    }
                }
            }
            // Compaction never loses a key's latest value (retention may,
            // by design, when the policy includes delete).
            if log.config.cleanup_policy.compact && !retention_ran {
                let present: BTreeMap<u64, Option<u32>> = log
                    .segments()
                    .flat_map(|segment| segment.batches())
                    .flat_map(|batch| batch.records.iter())
                    .map(|record| (record.offset, record.value_size))
                    .collect();
                for (key, (offset, value)) in &latest {
                    if value.is_some() {
                        prop_assert_eq!(present.get(offset), Some(value), "key k{} lost its latest value at {}", key, offset);
                    }
                }
            }
        }
    }
}
