//! The broker's producer state against Kafka's own `ProducerStateManager`,
//! `ProducerAppendInfo` and `ProducerStateEntry`: every `idempotence` case
//! of `vectors-producer-state.json` (SEMANTICS.md §14), replayed step by
//! step into a fresh [`ProducerStateTable`], compared field by field.
//!
//! The `transactions` and `read_committed` cases are not checked yet.

use kafkascope_engine::replication::idempotence::{
    increment_sequence, ClientAppend, ProducerStateEntry, ProducerStateTable,
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

/// Replays one append step; returns what it produced in the vector's shape.
fn replay_append(table: &mut ProducerStateTable, log_end_offset: &mut u64, step: &Value) -> Value {
    let producer_id = int(step, "producerId") as u64;
    let epoch = i16::try_from(int(step, "producerEpoch")).expect("a short epoch");
    let base_sequence = i32::try_from(int(step, "baseSequence")).expect("an int sequence");
    let record_count = u32::try_from(int(step, "recordCount")).expect("a positive count");
    let result = table.append_client_batch(
        producer_id,
        epoch,
        base_sequence,
        record_count,
        *log_end_offset,
        int(step, "timeMs"),
    );
    let mut actual = json!({
        "lastSequence": increment_sequence(base_sequence, record_count as i32 - 1),
    });
    match result {
        Ok(ClientAppend::Appended {
            first_offset,
            last_offset,
        }) => {
            *log_end_offset = last_offset + 1;
            actual["result"] = json!("appended");
            actual["firstOffset"] = json!(first_offset);
            actual["lastOffset"] = json!(last_offset);
        }
        Ok(ClientAppend::Duplicate {
            first_offset,
            last_offset,
        }) => {
            actual["result"] = json!("duplicate");
            actual["firstOffset"] = json!(first_offset);
            actual["lastOffset"] = json!(last_offset);
        }
        Err(error) => actual["result"] = json!(error.exception_name()),
    }
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
            let mut differences = Vec::new();
            diff("", &expected, &actual, &mut differences);
            if !differences.is_empty() {
                let mut input = step.clone();
                if let Some(fields) = input.as_object_mut() {
                    fields.remove("entryAfter");
                }
                failures.push(format!(
                    "{id} step {index} ({input}):\n    {}",
                    differences.join("\n    ")
                ));
            }
        }
        if failures.len() > failures_before {
            failed_cases += 1;
        }
    }
    let shown: Vec<&String> = failures.iter().take(SHOWN).collect();
    assert!(
        failures.is_empty(),
        "{} of {steps_checked} steps differ ({failed_cases} of {} cases); first {}:\n{}",
        failures.len(),
        cases.len(),
        shown.len(),
        shown
            .iter()
            .map(|failure| failure.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!("{} idempotence cases, {steps_checked} steps: all match", cases.len());
}
