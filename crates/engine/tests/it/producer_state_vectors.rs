//! The broker's producer state against Kafka's own `ProducerStateManager`,
//! `ProducerAppendInfo` and `ProducerStateEntry`: every `idempotence` case
//! of `vectors-producer-state.json` (SEMANTICS.md §14), replayed step by
//! step into a fresh [`ProducerStateTable`], compared field by field.
//!
//! The `transactions` cases replay data batches and markers into a table
//! and a transaction index and compare the producer entry and the
//! partition's transactional state after every step; the `read_committed`
//! cases rebuild each log and compare what a consumer at each isolation
//! level returns from each fetch.

use kafkascope_engine::replication::idempotence::{
    increment_sequence, AppendOrigin, ClientAppend, ProducerStateEntry, ProducerStateError, ProducerStateTable,
};
use kafkascope_engine::replication::transactions::{
    consume_batches, last_stable_offset, AbortedTxn, ControlType, FetchedBatch, IsolationLevel, TransactionIndex,
};
use serde_json::{json, Value};

use crate::vectors;

/// How many failing steps are printed in full.
const SHOWN: usize = 10;

/// An entry as the vectors print it (`entryAfter`).
fn entry_json(entry: Option<&ProducerStateEntry>) -> Value {
    let Some(entry) = entry else { return Value::Null };
    json!({
        "producerEpoch": entry.producer_epoch,
        "firstSequence": entry.first_seq(),
        "lastSequence": entry.last_seq(),
        "lastDataOffset": entry.last_data_offset().map_or(-1, |offset| offset as i64),
        "coordinatorEpoch": entry.coordinator_epoch,
        "lastTimestamp": entry.last_timestamp,
        "currentTxnFirstOffset": entry.current_txn_first_offset,
        "batchMetadata": entry.batch_metadata.iter().map(|batch| json!({
            "firstSeq": batch.first_seq(),
            "lastSeq": batch.last_seq,
            "firstOffset": batch.first_offset(),
            "lastOffset": batch.last_offset,
            "timestamp": batch.timestamp,
        })).collect::<Vec<_>>(),
    })
}

/// The differences between `expected` and `actual`, one `path: expected != actual` each.
fn diff(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(expected_fields), Value::Object(actual_fields)) => {
            for (key, expected_value) in expected_fields {
                let actual_value = actual_fields.get(key).unwrap_or(&Value::Null);
                diff(&format!("{path}.{key}"), expected_value, actual_value, out);
            }
            for (key, actual_value) in actual_fields {
                if !expected_fields.contains_key(key) {
                    out.push(format!("{path}.{key}: (absent) != {actual_value}"));
                }
            }
        }
        (Value::Array(expected_items), Value::Array(actual_items)) if expected_items.len() == actual_items.len() => {
            for (index, (expected_item, actual_item)) in expected_items.iter().zip(actual_items).enumerate() {
                diff(&format!("{path}[{index}]"), expected_item, actual_item, out);
            }
        }
        _ if expected == actual => {}
        _ => out.push(format!("{path}: {expected} != {actual}")),
    }
}

/// The field of a step as an integer.
fn int(step: &Value, field: &str) -> i64 {
    step[field]
        .as_i64()
        .unwrap_or_else(|| panic!("step field {field} is not an integer: {step}"))
}

/// A client append's outcome in the vectors' shape (`result`, and the
/// offsets unless it failed); an appended batch moves the log end offset.
fn client_append_json(result: Result<ClientAppend, ProducerStateError>, log_end_offset: &mut u64) -> Value {
    let (name, first_offset, last_offset) = match result {
        Ok(ClientAppend::Appended {
            first_offset,
            last_offset,
        }) => {
            *log_end_offset = last_offset + 1;
            ("appended", first_offset, last_offset)
        }
        Ok(ClientAppend::Duplicate {
            first_offset,
            last_offset,
        }) => ("duplicate", first_offset, last_offset),
        Err(error) => return json!({ "result": error.exception_name() }),
    };
    json!({ "result": name, "firstOffset": first_offset, "lastOffset": last_offset })
}

/// Replays one append step; returns what it produced in the vector's shape.
fn replay_append(table: &mut ProducerStateTable, log_end_offset: &mut u64, step: &Value) -> Value {
    let producer_id = int(step, "producerId") as u64;
    let epoch = i16::try_from(int(step, "producerEpoch")).expect("a short epoch");
    let base_sequence = i32::try_from(int(step, "baseSequence")).expect("an int sequence");
    let record_count = u32::try_from(int(step, "recordCount")).expect("a positive count");
    let result = table.append_client(
        producer_id,
        epoch,
        base_sequence,
        record_count,
        *log_end_offset,
        int(step, "timeMs"),
        false,
    );
    let mut actual = client_append_json(result, log_end_offset);
    actual["lastSequence"] = json!(increment_sequence(base_sequence, record_count as i32 - 1));
    actual["entryAfter"] = entry_json(table.last_entry(producer_id));
    actual["logEndOffset"] = json!(*log_end_offset);
    actual
}

#[test]
fn idempotence_cases_match_kafkas_producer_state_manager() {
    let file = vectors::load("vectors-producer-state.json");
    let cases = file["idempotence"].as_array().expect("idempotence cases");
    assert!(!cases.is_empty(), "no idempotence cases");
    let (mut steps_checked, mut failures) = (0usize, Vec::new());
    let mut failed_cases = 0usize;
    for case in cases {
        let id = case["id"].as_str().expect("case id");
        let expiration_ms = int(case, "producerIdExpirationMs");
        let mut table = ProducerStateTable::default();
        let mut log_end_offset = 0u64;
        let failures_before = failures.len();
        for (index, step) in case["steps"].as_array().expect("steps").iter().enumerate() {
            steps_checked += 1;
            let (expected, actual) = match step["op"].as_str() {
                Some("append") => {
                    let actual = replay_append(&mut table, &mut log_end_offset, step);
                    let mut expected = json!({});
                    for field in [
                        "lastSequence",
                        "result",
                        "firstOffset",
                        "lastOffset",
                        "entryAfter",
                        "logEndOffset",
                    ] {
                        if let Some(value) = step.get(field) {
                            expected[field] = value.clone();
                        }
                    }
                    (expected, actual)
                }
                Some("expireProducers") => {
                    let removed = table.remove_expired_producers(int(step, "timeMs"), expiration_ms);
                    (
                        json!({ "removedProducerIds": step["removedProducerIds"] }),
                        json!({ "removedProducerIds": removed }),
                    )
                }
                other => panic!("{id} step {index}: unknown op {other:?}"),
            };
            let what = || {
                let mut input = step.clone();
                if let Some(fields) = input.as_object_mut() {
                    fields.remove("entryAfter");
                }
                format!("{id} step {index} ({input})")
            };
            compare(what, &expected, &actual, &mut failures);
        }
        if failures.len() > failures_before {
            failed_cases += 1;
        }
    }
    report("idempotence", cases.len(), steps_checked, failed_cases, &failures);
}

/// The field of a step as a string.
fn text<'a>(step: &'a Value, field: &str) -> &'a str {
    step[field]
        .as_str()
        .unwrap_or_else(|| panic!("step field {field} is not a string: {step}"))
}

fn control_type(name: &str) -> ControlType {
    match name {
        "COMMIT" => ControlType::Commit,
        "ABORT" => ControlType::Abort,
        other => panic!("unknown control type {other}"),
    }
}

/// A partition's transactional state as the vectors print it (`stateAfter`).
fn state_json(table: &ProducerStateTable, log_end_offset: u64, high_watermark: u64) -> Value {
    json!({
        "logEndOffset": log_end_offset,
        "highWatermark": high_watermark,
        "firstUndecidedOffset": table.first_undecided_offset(),
        "firstUnstableOffset": table.first_unstable_offset(),
        "lastStableOffset": last_stable_offset(table.first_unstable_offset(), high_watermark),
        "ongoingTxns": table.ongoing_txns().map(|txn| json!({
            "producerId": txn.producer_id,
            "firstOffset": txn.first_offset,
        })).collect::<Vec<_>>(),
        "unreplicatedCompletedTxns": table.unreplicated_txns().map(|txn| json!({
            "producerId": txn.producer_id,
            "firstOffset": txn.first_offset,
            "lastOffset": txn.last_offset,
        })).collect::<Vec<_>>(),
    })
}

/// Aborted transactions as the vectors print them.
fn aborted_json(entries: &[AbortedTxn]) -> Value {
    json!(entries
        .iter()
        .map(|txn| json!({
            "producerId": txn.producer_id,
            "firstOffset": txn.first_offset,
            "lastOffset": txn.last_offset,
            "lastStableOffset": txn.last_stable_offset,
        }))
        .collect::<Vec<_>>())
}

/// Copies the named fields of `step` that it has.
fn pick(step: &Value, fields: &[&str]) -> Value {
    let mut picked = json!({});
    for field in fields {
        if let Some(value) = step.get(*field) {
            picked[*field] = value.clone();
        }
    }
    picked
}

/// Adds a failure naming `what` if `actual` differs from `expected`.
fn compare(what: impl FnOnce() -> String, expected: &Value, actual: &Value, failures: &mut Vec<String>) {
    let mut differences = Vec::new();
    diff("", expected, actual, &mut differences);
    if !differences.is_empty() {
        failures.push(format!("{}:\n    {}", what(), differences.join("\n    ")));
    }
}

/// Fails with the first few differences, if any.
fn report(kind: &str, cases: usize, steps_checked: usize, failed_cases: usize, failures: &[String]) {
    let shown: Vec<&String> = failures.iter().take(SHOWN).collect();
    assert!(
        failures.is_empty(),
        "{} of {steps_checked} {kind} steps differ ({failed_cases} of {cases} cases); first {}:\n{}",
        failures.len(),
        shown.len(),
        shown
            .iter()
            .map(|failure| failure.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!("{cases} {kind} cases, {steps_checked} steps: all match");
}

#[test]
fn transaction_cases_match_kafkas_producer_state_manager() {
    let file = vectors::load("vectors-producer-state.json");
    let cases = file["transactions"].as_array().expect("transaction cases");
    assert!(!cases.is_empty(), "no transaction cases");
    let (mut steps_checked, mut failures, mut failed_cases) = (0usize, Vec::new(), 0usize);
    for case in cases {
        let id = case["id"].as_str().expect("case id");
        let explicit = case["hwMode"] == "explicit";
        let mut table = ProducerStateTable::default();
        let mut index = TransactionIndex::default();
        let mut log_end_offset = 0u64;
        let failures_before = failures.len();
        for (step_index, step) in case["steps"].as_array().expect("steps").iter().enumerate() {
            steps_checked += 1;
            let producer_id = int(step, "producerId") as u64;
            let epoch = i16::try_from(int(step, "producerEpoch")).expect("a short epoch");
            let mut actual = json!({});
            let mut expected = pick(
                step,
                &[
                    "result",
                    "firstOffset",
                    "lastOffset",
                    "producerEntryAfter",
                    "stateAfter",
                ],
            );
            match text(step, "op") {
                "append" => {
                    let result = table.append_client(
                        producer_id,
                        epoch,
                        i32::try_from(int(step, "baseSequence")).expect("an int sequence"),
                        u32::try_from(int(step, "recordCount")).expect("a positive count"),
                        log_end_offset,
                        int(step, "timeMs"),
                        step["transactional"].as_bool().expect("transactional"),
                    );
                    actual = client_append_json(result, &mut log_end_offset);
                }
                "marker" => {
                    expected = pick(
                        step,
                        &[
                            "result",
                            "firstOffset",
                            "lastOffset",
                            "completedTxn",
                            "abortedTxn",
                            "producerEntryAfter",
                            "stateAfter",
                        ],
                    );
                    let aborted_before = index.entries().len();
                    let result = table.append_marker(
                        AppendOrigin::Coordinator,
                        producer_id,
                        control_type(text(step, "controlType")),
                        epoch,
                        i32::try_from(int(step, "coordinatorEpoch")).expect("an int epoch"),
                        log_end_offset,
                        int(step, "timeMs"),
                        &mut index,
                    );
                    match result {
                        Ok(completed) => {
                            actual["result"] = json!("appended");
                            actual["firstOffset"] = json!(log_end_offset);
                            actual["lastOffset"] = json!(log_end_offset);
                            log_end_offset += 1;
                            actual["completedTxn"] = completed.map_or(Value::Null, |txn| {
                                json!({
                                    "producerId": txn.producer_id,
                                    "firstOffset": txn.first_offset,
                                    "lastOffset": txn.last_offset,
                                    "isAborted": txn.is_aborted,
                                })
                            });
                            // At most one entry: null when the marker aborted nothing.
                            actual["abortedTxn"] = aborted_json(&index.entries()[aborted_before..])[0].clone();
                        }
                        Err(error) => actual["result"] = json!(error.exception_name()),
                    }
                }
                other => panic!("{id} step {step_index}: unknown op {other:?}"),
            }
            let high_watermark = if explicit {
                int(&step["stateAfter"], "highWatermark") as u64
            } else {
                log_end_offset
            };
            table.on_high_watermark_updated(high_watermark);
            actual["producerEntryAfter"] = entry_json(table.last_entry(producer_id));
            actual["stateAfter"] = state_json(&table, log_end_offset, high_watermark);
            let what = || {
                let mut input = step.clone();
                if let Some(fields) = input.as_object_mut() {
                    fields.remove("producerEntryAfter");
                    fields.remove("stateAfter");
                }
                format!("{id} step {step_index} ({input})")
            };
            compare(what, &expected, &actual, &mut failures);
        }
        compare(
            || format!("{id} transaction index"),
            &case["transactionIndex"],
            &aborted_json(index.entries()),
            &mut failures,
        );
        if failures.len() > failures_before {
            failed_cases += 1;
        }
    }
    report("transaction", cases.len(), steps_checked, failed_cases, &failures);
}

#[test]
fn read_committed_cases_match_kafkas_completed_fetch() {
    let file = vectors::load("vectors-producer-state.json");
    let cases = file["read_committed"].as_array().expect("read_committed cases");
    assert!(!cases.is_empty(), "no read_committed cases");
    let (mut fetches_checked, mut failures, mut failed_cases) = (0usize, Vec::new(), 0usize);
    for case in cases {
        let id = case["id"].as_str().expect("case id");
        let failures_before = failures.len();
        // Rebuild the log's transactional state from its batches, as a
        // replica does (`AppendOrigin.REPLICATION` for data; markers as the
        // coordinator wrote them).
        let mut table = ProducerStateTable::default();
        let mut index = TransactionIndex::default();
        let mut batches = Vec::new();
        for batch in case["log"].as_array().expect("log") {
            let producer_id = int(batch, "producerId") as u64;
            let epoch = i16::try_from(int(batch, "producerEpoch")).expect("a short epoch");
            let (base_offset, last_offset) = (int(batch, "baseOffset") as u64, int(batch, "lastOffset") as u64);
            let control = batch["control"].as_str().map(control_type);
            let transactional = batch["transactional"].as_bool().expect("transactional");
            match control {
                Some(control) => {
                    table
                        .append_marker(
                            AppendOrigin::Replication,
                            producer_id,
                            control,
                            epoch,
                            0,
                            base_offset,
                            0,
                            &mut index,
                        )
                        .unwrap_or_else(|error| panic!("{id}: marker at {base_offset}: {error:?}"));
                }
                None => {
                    let base_sequence = i32::try_from(int(batch, "baseSequence")).expect("an int sequence");
                    let count = (last_offset - base_offset + 1) as u32;
                    table
                        .append_client(producer_id, epoch, base_sequence, count, base_offset, 0, transactional)
                        .unwrap_or_else(|error| panic!("{id}: batch at {base_offset}: {error:?}"));
                }
            }
            batches.push(FetchedBatch {
                base_offset,
                last_offset,
                producer_id: Some(producer_id),
                transactional,
                control,
            });
        }
        let log_end_offset = int(case, "logEndOffset") as u64;
        let high_watermark = int(case, "highWatermark") as u64;
        table.on_high_watermark_updated(high_watermark);
        let lso = last_stable_offset(table.first_unstable_offset(), high_watermark);
        compare(
            || format!("{id} log"),
            &json!({ "lastStableOffset": case["lastStableOffset"], "transactionIndex": case["transactionIndex"] }),
            &json!({ "lastStableOffset": lso, "transactionIndex": aborted_json(index.entries()) }),
            &mut failures,
        );
        for (fetch_index, fetch) in case["fetches"].as_array().expect("fetches").iter().enumerate() {
            fetches_checked += 1;
            let fetch_offset = int(fetch, "fetchOffset") as u64;
            let mut actual = json!({});
            for (level, isolation, max_offset) in [
                ("readCommitted", IsolationLevel::ReadCommitted, lso),
                ("readUncommitted", IsolationLevel::ReadUncommitted, high_watermark),
            ] {
                // The broker reads whole batches below the bound
                // (`LocalLog#read` with `maxOffset`).
                let read: Vec<FetchedBatch> = batches
                    .iter()
                    .filter(|batch| batch.last_offset >= fetch_offset && batch.base_offset < max_offset)
                    .copied()
                    .collect();
                // `LogSegment#fetchUpperBoundOffset` looks for an offset
                // index entry past the bytes read; these logs are smaller
                // than one `index.interval.bytes` (4096), so there is none
                // and the bound is the log end offset.
                let upper_bound = log_end_offset;
                let aborted: Vec<(u64, u64)> = if isolation == IsolationLevel::ReadCommitted && !read.is_empty() {
                    index
                        .collect_aborted_txns(fetch_offset, upper_bound)
                        .iter()
                        .map(|txn| (txn.producer_id, txn.first_offset))
                        .collect()
                } else {
                    Vec::new()
                };
                let (returned, next_fetch_offset) = consume_batches(&read, isolation, &aborted, fetch_offset);
                actual[level] = json!({
                    "maxOffset": max_offset,
                    "returnedOffsets": returned,
                    "nextFetchOffset": next_fetch_offset,
                });
                if isolation == IsolationLevel::ReadCommitted {
                    actual[level]["abortedTransactions"] = json!(aborted
                        .iter()
                        .map(|(producer_id, first_offset)| json!({"producerId": producer_id, "firstOffset": first_offset}))
                        .collect::<Vec<_>>());
                }
            }
            let expected = pick(fetch, &["readCommitted", "readUncommitted"]);
            compare(
                || format!("{id} fetch {fetch_index} from {fetch_offset}"),
                &expected,
                &actual,
                &mut failures,
            );
        }
        if failures.len() > failures_before {
            failed_cases += 1;
        }
    }
    report("read_committed", cases.len(), fetches_checked, failed_cases, &failures);
}
