//! The storage layer against Kafka's own `LogSegment`, `OffsetIndex`,
//! `TimeIndex` and cleaner, writing real files (`vectors-log-storage.json`,
//! SEMANTICS.md §13): every segment-rolling, retention and compaction case,
//! replayed into a fresh [`Log`] and compared field by field. Batch sizes
//! are computed by the engine from the records and must equal the bytes
//! Kafka wrote.

use std::rc::Rc;

use kafkascope_engine::storage::{segment_file_name, CleanupPolicy, Log, LogBatch, LogConfig, LogRecord, Segment};
use serde_json::{json, Value};

/// A record with nothing attached.
type Plain = LogRecord<()>;

use crate::vectors;

/// How many failing cases are printed in full.
const SHOWN: usize = 8;

fn int(value: &Value, field: &str) -> i64 {
    value[field]
        .as_i64()
        .unwrap_or_else(|| panic!("{field} is not an integer in {value}"))
}

/// A vector's batch as the engine's batch, its offsets from `firstOffset`.
fn batch(value: &Value) -> LogBatch<Plain> {
    let first = int(value, "firstOffset") as u64;
    let records = value["records"]
        .as_array()
        .expect("records")
        .iter()
        .enumerate()
        .map(|(index, record)| LogRecord {
            offset: first + index as u64,
            timestamp: int(record, "timestamp"),
            key: record["key"].as_str().map(Rc::from),
            value_size: if record["tombstone"].as_bool() == Some(true) {
                None
            } else {
                Some(int(record, "valueSize") as u32)
            },
            headers: Vec::new(),
            payload: (),
        })
        .collect();
    LogBatch::new(records, None)
}

/// Appends a case's batches, checking each batch's size and segment.
fn append_all(log: &mut Log<Plain>, batches: &Value, default_now: i64, problems: &mut Vec<String>) {
    for (index, value) in batches.as_array().expect("batches").iter().enumerate() {
        let batch = batch(value);
        if i64::from(batch.size_bytes) != int(value, "batchBytes") {
            problems.push(format!(
                "batch {index}: {} bytes, Kafka wrote {}",
                batch.size_bytes, value["batchBytes"]
            ));
        }
        let now = value["appendTimeMs"].as_i64().unwrap_or(default_now);
        let segment = log.append(batch, now);
        if segment as i64 != int(value, "segmentBaseOffset") {
            problems.push(format!(
                "batch {index} went to segment {segment}, Kafka's to {}",
                value["segmentBaseOffset"]
            ));
        }
    }
}

/// The vectors' clock start (`startTimeMs` where a case omits it).
const VECTOR_START_MS: i64 = 1_700_000_000_000;

/// A case's `cleanup.policy`.
fn policy(config: &Value) -> CleanupPolicy {
    CleanupPolicy::parse(config["cleanup.policy"].as_str().expect("a policy")).expect("a known policy")
}

/// A log with a case's `batches` appended, checked against `segmentsBefore`.
fn replay_before(case: &Value, config: LogConfig, problems: &mut Vec<String>) -> Log<Plain> {
    let mut log = Log::new(config, VECTOR_START_MS);
    append_all(&mut log, &case["batches"], VECTOR_START_MS, problems);
    let before: Vec<Value> = log.segments().map(segment_summary).collect();
    diff(
        "segmentsBefore",
        &case["segmentsBefore"],
        &Value::Array(before),
        problems,
    );
    log
}

fn segment_summary(segment: &Segment<Plain>) -> Value {
    json!({
        "baseOffset": segment.base_offset,
        "sizeBytes": segment.size_bytes,
        "nextOffset": segment.next_offset,
        "largestTimestamp": segment.largest_record_timestamp(),
    })
}

/// The differences between `expected` and `actual`, one `path: expected != actual` each.
fn diff(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(expected_fields), Value::Object(_)) => {
            for (key, expected_value) in expected_fields {
                diff(&format!("{path}.{key}"), expected_value, &actual[key], out);
            }
        }
        (Value::Array(expected_items), Value::Array(actual_items)) if expected_items.len() == actual_items.len() => {
            for (index, (expected_item, actual_item)) in expected_items.iter().zip(actual_items).enumerate() {
                diff(&format!("{path}[{index}]"), expected_item, actual_item, out);
            }
        }
        (Value::Number(expected_number), Value::Number(actual_number))
            if expected_number
                .as_f64()
                .zip(actual_number.as_f64())
                .is_some_and(|(a, b)| (a - b).abs() < 1e-12) => {}
        _ if expected == actual => {}
        _ => out.push(format!("{path}: {expected} != {actual}")),
    }
}

/// Runs `check` on every case of one kind and fails with the first
/// [`SHOWN`] cases that differ.
fn check_cases(kind: &str, check: impl Fn(&Value, &mut Vec<String>)) {
    let file = vectors::load("vectors-log-storage.json");
    let cases = file[kind].as_array().unwrap_or_else(|| panic!("no {kind} cases"));
    assert!(
        cases.len() >= 100,
        "expected at least 100 {kind} cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in cases {
        let mut problems = Vec::new();
        check(case, &mut problems);
        if !problems.is_empty() {
            failures.push((case["id"].to_string(), problems));
        }
    }
    if failures.is_empty() {
        return;
    }
    let mut text = format!(
        "{} of {} {kind} cases differ from Kafka:\n",
        failures.len(),
        cases.len()
    );
    for (id, problems) in failures.iter().take(SHOWN) {
        text.push_str(&format!("  {id}:\n"));
        for problem in problems.iter().take(12) {
            text.push_str(&format!("    {problem}\n"));
        }
    }
    panic!("{text}");
}

#[test]
fn segments_roll_and_index_as_kafka_writes_them() {
    check_cases("segments", |case, problems| {
        let config = &case["config"];
        let log_config = LogConfig {
            segment_bytes: int(config, "segment.bytes") as u64,
            segment_ms: int(config, "segment.ms"),
            index_interval_bytes: int(config, "index.interval.bytes") as u64,
            segment_index_bytes: int(config, "segment.index.bytes") as u32,
            ..LogConfig::default()
        };
        let start = int(case, "startTimeMs");
        let mut log = Log::new(log_config, start);
        append_all(&mut log, &case["batches"], start, problems);
        let actual: Vec<Value> = log
            .segments()
            .map(|segment| {
                let mut summary = segment_summary(segment);
                summary["offsetIndex"] = json!(segment.offset_index);
                summary["timeIndex"] = json!(segment.time_index);
                summary
            })
            .collect();
        diff("segments", &case["segments"], &Value::Array(actual), problems);
        // Every batch is found where Kafka wrote it: its segment, and the
        // file position after the batches before it in that segment.
        let mut position = 0;
        let mut segment = None;
        for value in case["batches"].as_array().expect("batches") {
            let base = int(value, "segmentBaseOffset");
            if segment != Some(base) {
                segment = Some(base);
                position = 0;
            }
            let first = int(value, "firstOffset") as u64;
            match log.lookup(first) {
                Some(found)
                    if found.segment_base_offset as i64 == base && i64::from(found.batch_position) == position => {}
                other => problems.push(format!(
                    "offset {first}: found {other:?}, Kafka wrote it at {base}:{position}"
                )),
            }
            position += int(value, "batchBytes");
        }
        diff(
            "logEndOffset",
            &case["logEndOffset"],
            &json!(log.log_end_offset),
            problems,
        );
    });
}

#[test]
fn retention_deletes_the_segments_kafka_deletes() {
    check_cases("retention", |case, problems| {
        let config = &case["config"];
        let log_config = LogConfig {
            segment_bytes: int(config, "segment.bytes") as u64,
            retention_ms: int(config, "retention.ms"),
            retention_bytes: int(config, "retention.bytes"),
            cleanup_policy: policy(config),
            ..LogConfig::default()
        };
        let mut log = replay_before(case, log_config, problems);
        diff(
            "logSizeBefore",
            &case["logSizeBefore"],
            &json!(log.size_bytes()),
            problems,
        );
        diff(
            "logEndOffset",
            &case["logEndOffset"],
            &json!(log.log_end_offset),
            problems,
        );
        let outcome = log.delete_old_segments(int(case, "nowMs"), int(case, "highWatermark") as u64);
        let deleted = |reason| {
            outcome
                .deleted
                .iter()
                .filter(|(_, _, why)| *why == reason)
                .map(|(base, _, _)| *base)
                .collect::<Vec<_>>()
        };
        use kafkascope_engine::storage::DeletionReason;
        diff(
            "deletedBySize",
            &case["deletedBySize"],
            &json!(deleted(DeletionReason::RetentionBytes)),
            problems,
        );
        diff(
            "deletedByTime",
            &case["deletedByTime"],
            &json!(deleted(DeletionReason::RetentionMs)),
            problems,
        );
        diff(
            "logStartOffsetAfter",
            &case["logStartOffsetAfter"],
            &json!(log.log_start_offset),
            problems,
        );
        let after: Vec<Value> = log.segments().map(segment_summary).collect();
        diff("segmentsAfter", &case["segmentsAfter"], &Value::Array(after), problems);
        if log.active_segment().base_offset > log.log_end_offset
            || log.log_start_offset > int(case, "highWatermark") as u64
        {
            problems.push("the log start passed the high watermark".into());
        }
    });
}

/// One cleaner pass as the vectors print it.
fn clean_pass(log: &mut Log<Plain>, expected: &Value, problems: &mut Vec<String>, name: &str) {
    let now = int(expected, "nowMs");
    let lso = log.log_end_offset;
    let to_clean = log.to_clean(now, lso).expect("a compacted log");
    let ratio = to_clean.dirty_ratio();
    let cleaned = to_clean.should_clean(log.config.min_cleanable_dirty_ratio);
    let mut actual = json!({
        "nowMs": now,
        "firstDirtyOffset": to_clean.first_dirty_offset,
        "firstUncleanableOffset": to_clean.first_uncleanable_offset,
        "cleanBytes": to_clean.clean_bytes,
        "cleanableBytes": to_clean.cleanable_bytes,
        "dirtyRatio": ratio,
        "cleaned": cleaned,
    });
    if cleaned {
        let outcome = log.clean(&to_clean, now, &|_| false);
        actual["offsetMapLatestOffset"] = json!(outcome.offset_map_latest_offset);
        actual["groups"] = json!(outcome.groups);
        actual["checkpointAfter"] = json!(outcome.checkpoint_after);
    } else {
        actual["checkpointAfter"] = json!(log.cleaner_checkpoint);
    }
    let mut records = Vec::new();
    for segment in log.segments() {
        for batch in segment.batches() {
            for record in &batch.records {
                records.push(json!({
                    "offset": record.offset,
                    "key": record.key.as_deref(),
                    "tombstone": record.is_tombstone(),
                    "valueSize": record.value_size,
                    "segment": segment.base_offset,
                    "batchDeleteHorizonMs": batch.delete_horizon_ms,
                }));
            }
        }
    }
    actual["logAfter"] = Value::Array(records);
    actual["segmentsAfter"] = Value::Array(log.segments().map(segment_summary).collect());
    diff(name, expected, &actual, problems);
}

#[test]
fn compaction_keeps_what_kafkas_cleaner_keeps() {
    check_cases("compaction", |case, problems| {
        let config = &case["config"];
        let log_config = LogConfig {
            segment_bytes: int(config, "segment.bytes") as u64,
            cleanup_policy: policy(config),
            min_cleanable_dirty_ratio: config["min.cleanable.dirty.ratio"].as_f64().expect("ratio"),
            min_compaction_lag_ms: int(config, "min.compaction.lag.ms"),
            max_compaction_lag_ms: int(config, "max.compaction.lag.ms"),
            delete_retention_ms: int(config, "delete.retention.ms"),
            ..LogConfig::default()
        };
        let mut log = replay_before(case, log_config, problems);
        clean_pass(&mut log, &case["pass1"], problems, "pass1");
        append_all(&mut log, &case["batches2"], VECTOR_START_MS, problems);
        clean_pass(&mut log, &case["pass2"], problems, "pass2");
    });
}

#[test]
fn segment_files_are_named_as_kafka_names_them() {
    let file = vectors::load("vectors-log-and-quotas.json");
    for vector in file["segment_file_names"]["vectors"].as_array().expect("vectors") {
        let base = vector["baseOffset"].as_u64().expect("an offset");
        assert_eq!(segment_file_name(base, ".log"), vector["log"].as_str().unwrap());
        assert_eq!(segment_file_name(base, ".index"), vector["index"].as_str().unwrap());
        assert_eq!(
            segment_file_name(base, ".timeindex"),
            vector["timeindex"].as_str().unwrap()
        );
    }
}

/// `ClientQuotaManagerTest#testQuotaViolation` as the vector file states it:
/// ten 400-byte produces a second apart under a 500 B/s quota, then a
/// 2300-byte one half a second after the tenth second.
#[test]
fn quota_throttle_time_matches_kafkas_test() {
    use kafkascope_engine::storage::ByteRate;
    let file = vectors::load("vectors-log-and-quotas.json");
    let vector = &file["quotas"]["from_test"];
    let quota = vector["quota_bytes_per_sec"].as_f64().expect("a quota");
    let mut rate = ByteRate::new();
    let mut now = 0;
    for _ in 0..10 {
        assert_eq!(
            rate.record_and_throttle_ms(400.0, now, quota),
            0,
            "under the quota at {now} ms"
        );
        now += 1_000;
    }
    now += 500;
    let throttle = rate.record_and_throttle_ms(2_300.0, now, quota);
    assert_eq!(throttle as i64, int(vector, "expected_throttle_ms"));
}

/// Fifteen single-record batches (`TestUtils.singletonRecords("test")`),
/// five to a segment, as `UnifiedLogTest`'s retention tests write them.
fn fifteen_singletons(config: LogConfig, key: Option<&str>, timestamp: i64) -> Log<Plain> {
    let mut log = Log::new(config, 1_700_000_000_000);
    for offset in 0..15 {
        let record = LogRecord {
            offset,
            timestamp,
            key: key.map(Rc::from),
            value_size: Some(4),
            headers: Vec::new(),
            payload: (),
        };
        log.append(LogBatch::new(vec![record], None), 1_700_000_000_000);
    }
    log
}

/// `UnifiedLogTest#shouldDeleteSizeBasedSegments`,
/// `#shouldNotDeleteSizeBasedSegmentsWhenUnderRetentionSize`,
/// `#shouldDeleteTimeBasedSegmentsReadyToBeDeleted`,
/// `#shouldNotDeleteTimeBasedSegmentsWhenNoneReadyToBeDeleted`,
/// `#shouldNotDeleteSegmentsWhenPolicyDoesNotIncludeDelete` and
/// `#shouldDeleteSegmentsReadyToBeDeletedWhenCleanupPolicyIsCompactAndDelete`.
#[test]
fn unified_log_test_retention_cases() {
    let now = 1_700_000_000_000;
    let one = fifteen_singletons(LogConfig::default(), None, 10)
        .active_segment()
        .size_bytes
        / 15;
    let keyed = fifteen_singletons(LogConfig::default(), Some("test"), 10)
        .active_segment()
        .size_bytes
        / 15;
    let sized = |retention_bytes: i64| LogConfig {
        segment_bytes: one * 5,
        retention_bytes,
        ..LogConfig::default()
    };
    let timed = |retention_ms: i64, policy: &str| LogConfig {
        segment_bytes: if policy == "delete" { one * 5 } else { keyed * 5 },
        retention_ms,
        cleanup_policy: CleanupPolicy::parse(policy).expect("a policy"),
        ..LogConfig::default()
    };
    let after_retention = |mut log: Log<Plain>| {
        let high_watermark = log.log_end_offset;
        log.delete_old_segments(now, high_watermark);
        log.segment_count()
    };
    // singletonRecords without a timestamp: the time pass falls back to
    // the segment's last-modified time, which is now.
    let no_timestamp = -1;
    assert_eq!(
        after_retention(fifteen_singletons(sized(one as i64 * 10), None, no_timestamp)),
        2
    );
    assert_eq!(
        after_retention(fifteen_singletons(sized(one as i64 * 15), None, no_timestamp)),
        3
    );
    assert_eq!(
        after_retention(fifteen_singletons(timed(10_000, "delete"), None, 10)),
        1
    );
    assert_eq!(
        after_retention(fifteen_singletons(timed(10_000_000, "delete"), None, now)),
        3
    );
    assert_eq!(
        after_retention(fifteen_singletons(timed(10_000, "compact"), Some("test"), 10)),
        3
    );
    assert_eq!(
        after_retention(fifteen_singletons(timed(10_000, "compact,delete"), Some("test"), 10)),
        1
    );
}
