//! The transaction coordinator's rules for transaction version 2 (KIP-890)
//! and version 1, case by case as Kafka 4.1's `TransactionCoordinatorTest`
//! and `TransactionMetadataTest` pin them down
//! (`tests/vectors/transaction-coordinator-v2.json`, each case naming the
//! test it mirrors): replay the coordinator's metadata, ask one request,
//! and compare the answer and the record it writes.

use std::path::PathBuf;

use kafkascope_engine::protocol::transactions::TransactionVersion;
use kafkascope_engine::protocol::TopicPartition;
use kafkascope_engine::txn_coordinator::{Decision, TxnError, TxnMetadata, TxnRecord, TxnReply, TxnShard, TxnState};
use serde_json::Value;

const ID: &str = "known";

fn partition(text: &str) -> TopicPartition {
    let (topic, index) = text.rsplit_once('-').expect("topic-partition");
    TopicPartition::new(topic, index.parse().expect("a partition number"))
}

fn state(name: &str) -> TxnState {
    serde_json::from_value(Value::String(name.to_string())).expect("a transaction state")
}

fn int(value: &Value, key: &str) -> i64 {
    value[key].as_i64().unwrap_or_else(|| panic!("{key} in {value}"))
}

fn metadata(value: &Value) -> TxnMetadata {
    TxnMetadata {
        producer_id: int(value, "producerId") as u64,
        prev_producer_id: value["prevProducerId"].as_u64(),
        next_producer_id: value["nextProducerId"].as_u64(),
        producer_epoch: int(value, "producerEpoch") as i16,
        last_producer_epoch: int(value, "lastProducerEpoch") as i16,
        timeout_ms: 60_000,
        state: state(value["state"].as_str().expect("state")),
        partitions: value["partitions"]
            .as_array()
            .expect("partitions")
            .iter()
            .map(|text| partition(text.as_str().expect("a partition")))
            .collect(),
        start_ms: value["startMs"].as_u64(),
        client_version: TransactionVersion(int(value, "clientVersion") as u8),
    }
}

fn error_name(error: TxnError) -> String {
    error.to_string()
}

/// The expected reply, as the vector spells it.
fn reply_matches(expected: &Value, reply: &Result<TxnReply, TxnError>) -> bool {
    match (expected, reply) {
        (Value::String(done), Ok(TxnReply::Done)) => done == "done",
        (Value::Object(map), Ok(TxnReply::Ended(ended))) if map.contains_key("ended") => {
            let want = map["ended"]
                .as_array()
                .map(|pair| (pair[0].as_u64().unwrap_or(0), pair[1].as_i64().unwrap_or(0) as i16));
            want == *ended
        }
        (Value::Object(map), Ok(TxnReply::ProducerIdAndEpoch(id, epoch))) if map.contains_key("producerIdAndEpoch") => {
            let pair = &map["producerIdAndEpoch"];
            pair[0].as_u64() == Some(*id) && pair[1].as_i64() == Some(i64::from(*epoch))
        }
        (Value::Object(map), Err(error)) if map.contains_key("error") => map["error"] == error_name(*error),
        _ => false,
    }
}

/// Whether `record` has every field `expected` names.
fn record_matches(expected: &Value, record: &TxnRecord) -> Result<(), String> {
    let metadata = &record.metadata;
    let checks: [(&str, Value); 7] = [
        ("state", Value::String(metadata.state.to_string())),
        ("producerId", Value::from(metadata.producer_id)),
        ("producerEpoch", Value::from(metadata.producer_epoch)),
        ("lastProducerEpoch", Value::from(metadata.last_producer_epoch)),
        (
            "nextProducerId",
            metadata.next_producer_id.map_or(Value::Null, Value::from),
        ),
        (
            "prevProducerId",
            metadata.prev_producer_id.map_or(Value::Null, Value::from),
        ),
        ("startMs", metadata.start_ms.map_or(Value::Null, Value::from)),
    ];
    for (key, actual) in checks {
        if let Some(want) = expected.get(key) {
            if *want != actual {
                return Err(format!("{key}: expected {want}, wrote {actual}"));
            }
        }
    }
    Ok(())
}

fn run(case: &Value) -> Result<(), String> {
    let mut shard = TxnShard::default();
    shard.replay(&TxnRecord {
        transactional_id: ID.into(),
        metadata: metadata(&case["metadata"]),
    });
    if case["pendingComplete"].as_bool() == Some(true) {
        shard.markers_written(ID).ok_or("no complete state to write")?;
    }
    let now = case["nowMs"].as_u64().unwrap_or(5_000);
    let request = &case["request"];
    let expect = &case["expect"];
    let version = |value: &Value| TransactionVersion(int(value, "version") as u8);
    let decision = if let Some(end) = request.get("endTxn") {
        shard.end_txn(
            ID,
            int(end, "producerId") as u64,
            int(end, "producerEpoch") as i16,
            end["commit"].as_bool().expect("commit"),
            now,
            version(end),
            int(end, "newProducerId") as u64,
        )
    } else if let Some(add) = request.get("addPartitions") {
        let partitions: Vec<TopicPartition> = add["partitions"]
            .as_array()
            .expect("partitions")
            .iter()
            .map(|text| partition(text.as_str().expect("a partition")))
            .collect();
        shard.add_partitions(
            ID,
            int(add, "producerId") as u64,
            int(add, "producerEpoch") as i16,
            &partitions,
            now,
            version(add),
        )
    } else if let Some(verify) = request.get("verify") {
        let partitions: Vec<TopicPartition> = verify["partitions"]
            .as_array()
            .expect("partitions")
            .iter()
            .map(|text| partition(text.as_str().expect("a partition")))
            .collect();
        let results = shard.verify_partitions(
            ID,
            int(verify, "producerId") as u64,
            int(verify, "producerEpoch") as i16,
            &partitions,
        );
        let actual: Vec<Value> = results
            .iter()
            .map(|(partition, result)| {
                Value::Array(vec![
                    Value::String(partition.to_string()),
                    result
                        .err()
                        .map_or(Value::Null, |error| Value::String(error_name(error))),
                ])
            })
            .collect();
        return (Value::Array(actual.clone()) == expect["results"])
            .then_some(())
            .ok_or_else(|| format!("answered {actual:?}"));
    } else if let Some(init) = request.get("initProducerId") {
        let expected = init["expected"]
            .as_array()
            .map(|pair| (pair[0].as_u64().unwrap_or(0), pair[1].as_i64().unwrap_or(0) as i16));
        shard.init_producer_id(
            ID,
            60_000,
            int(init, "newProducerId") as u64,
            expected,
            TransactionVersion(int(init, "serverVersion") as u8),
        )
    } else if let Some(timeout) = request.get("timeout") {
        let writes = shard.abort_timed_out(
            int(timeout, "nowMs") as u64,
            TransactionVersion(int(timeout, "serverVersion") as u8),
        );
        let [record] = writes.as_slice() else {
            return Err(format!("expected one abort, got {}", writes.len()));
        };
        return record_matches(&expect["write"], record);
    } else {
        return Err(format!("unknown request {request}"));
    };
    match decision {
        Decision::Answer(answer) => {
            if expect.get("write").is_some() {
                return Err(format!("answered {answer:?} without writing"));
            }
            let want = expect.get("reply").unwrap_or(expect);
            reply_matches(want, &answer)
                .then_some(())
                .ok_or_else(|| format!("answered {answer:?}"))
        }
        Decision::Write(record) => {
            let Some(write) = expect.get("write") else {
                return Err(format!("wrote {:?} instead of answering", record.metadata));
            };
            record_matches(write, &record)?;
            let after = shard.committed(ID, case["fencing"].as_bool() == Some(true));
            if let Some(want) = expect.get("reply") {
                let reply = after.reply.ok_or("no reply once written")?;
                if !reply_matches(want, &reply) {
                    return Err(format!("once written, answered {reply:?}"));
                }
            }
            if let Some(complete) = case.get("thenComplete") {
                let record = shard.markers_written(ID).ok_or("no complete state")?;
                record_matches(complete, &record)?;
            }
            Ok(())
        }
    }
}

#[test]
fn the_transaction_coordinator_answers_as_kafkas_tests_say() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/transaction-coordinator-v2.json");
    let text = std::fs::read_to_string(&path).expect("the vector file");
    let document: Value = serde_json::from_str(&text).expect("JSON");
    let cases = document["cases"].as_array().expect("cases");
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            run(case)
                .err()
                .map(|why| format!("{}: {why}", case["mirrors"].as_str().unwrap_or("?")))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
