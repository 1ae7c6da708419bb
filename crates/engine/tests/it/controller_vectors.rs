//! The KRaft controller's partition rules against
//! `vectors-controller-differential.json` (SEMANTICS.md §11): outputs of
//! Kafka's own `PartitionChangeBuilder.build()` and
//! `PartitionRegistration.merge()` on random partitions.
//!
//! Every case is checked; failures are collected and reported together.

use std::collections::BTreeSet;

use kafkascope_engine::controller::partition_change::{
    Election, LeaderRecovery, PartitionChange, PartitionChangeRecord, PartitionRegistration,
};
use serde_json::{json, Map, Value};

use crate::vectors::load;

/// Kafka's -1 ("no leader").
const NO_LEADER: i64 = -1;

fn ids(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .map(|list| list.iter().map(|item| item.as_i64().expect("broker id")).collect())
        .unwrap_or_default()
}

fn brokers(value: &Value) -> Vec<u32> {
    ids(value)
        .into_iter()
        .map(|id| u32::try_from(id).expect("a broker id"))
        .collect()
}

fn optional_broker(id: i64) -> Option<u32> {
    (id != NO_LEADER).then(|| u32::try_from(id).expect("a broker id"))
}

fn optional_brokers(value: &Value) -> Vec<Option<u32>> {
    ids(value).into_iter().map(optional_broker).collect()
}

fn to_id(broker: Option<u32>) -> i64 {
    broker.map_or(NO_LEADER, i64::from)
}

fn recovery(name: &str) -> LeaderRecovery {
    match name {
        "RECOVERED" => LeaderRecovery::Recovered,
        "RECOVERING" => LeaderRecovery::Recovering,
        other => panic!("unknown leaderRecoveryState {other}"),
    }
}

fn recovery_name(state: LeaderRecovery) -> &'static str {
    match state {
        LeaderRecovery::Recovered => "RECOVERED",
        LeaderRecovery::Recovering => "RECOVERING",
    }
}

fn election(name: &str) -> Election {
    match name {
        "PREFERRED" => Election::Preferred,
        "ONLINE" => Election::Online,
        "UNCLEAN" => Election::Unclean,
        other => panic!("unknown election {other}"),
    }
}

/// A list Kafka builds from a `HashSet`: compared as a set.
fn as_set(value: &Value) -> Value {
    let set: BTreeSet<i64> = ids(value).into_iter().collect();
    json!(set.into_iter().collect::<Vec<_>>())
}

fn registration(input: &Value) -> PartitionRegistration {
    PartitionRegistration {
        replicas: brokers(&input["replicas"]),
        isr: brokers(&input["isr"]),
        leader: optional_broker(input["leader"].as_i64().expect("leader")),
        leader_epoch: input["leaderEpoch"].as_u64().expect("leaderEpoch") as u32,
        partition_epoch: input["partitionEpoch"].as_u64().expect("partitionEpoch") as u32,
        leader_recovery: recovery(input["leaderRecoveryState"].as_str().expect("leaderRecoveryState")),
        elr: brokers(&input["elr"]),
        last_known_elr: optional_brokers(&input["lastKnownElr"]),
        removing_replicas: brokers(&input["removingReplicas"]),
        adding_replicas: brokers(&input["addingReplicas"]),
    }
}

/// The registration in the vectors' `after` shape (sets as sorted lists).
fn registration_json(registration: &PartitionRegistration) -> Value {
    json!({
        "replicas": registration.replicas,
        "isr": registration.isr,
        "leader": to_id(registration.leader),
        "leaderEpoch": registration.leader_epoch,
        "partitionEpoch": registration.partition_epoch,
        "leaderRecoveryState": recovery_name(registration.leader_recovery),
        "elr": as_set(&json!(registration.elr)),
        "lastKnownElr": as_set(&json!(registration.last_known_elr.iter().map(|id| to_id(*id)).collect::<Vec<_>>())),
        "removingReplicas": registration.removing_replicas,
        "addingReplicas": registration.adding_replicas,
    })
}

/// The expected `after`, with the set-valued lists sorted.
fn expected_after(after: &Value) -> Value {
    let mut after = after.clone();
    for field in ["elr", "lastKnownElr"] {
        after[field] = as_set(&after[field]);
    }
    after
}

/// The record in Kafka's JSON shape, without the constant topic/partition
/// ids and the directories (always `UNASSIGNED` here).
fn record_json(record: &PartitionChangeRecord) -> Value {
    let mut fields = Map::new();
    if let Some(isr) = &record.isr {
        fields.insert("isr".into(), json!(isr));
    }
    if let Some(leader) = record.leader {
        fields.insert("leader".into(), json!(to_id(leader)));
    }
    if let Some(replicas) = &record.replicas {
        fields.insert("replicas".into(), json!(replicas));
    }
    if let Some(removing) = &record.removing_replicas {
        fields.insert("removingReplicas".into(), json!(removing));
    }
    if let Some(adding) = &record.adding_replicas {
        fields.insert("addingReplicas".into(), json!(adding));
    }
    if let Some(elr) = &record.elr {
        fields.insert("eligibleLeaderReplicas".into(), as_set(&json!(elr)));
    }
    if let Some(last_known_elr) = &record.last_known_elr {
        let last_known: Vec<i64> = last_known_elr.iter().map(|id| to_id(*id)).collect();
        fields.insert("lastKnownElr".into(), as_set(&json!(last_known)));
    }
    if let Some(state) = record.leader_recovery {
        let value = match state {
            LeaderRecovery::Recovered => 0,
            LeaderRecovery::Recovering => 1,
        };
        fields.insert("leaderRecoveryState".into(), json!(value));
    }
    Value::Object(fields)
}

/// Kafka's record JSON reduced the same way as [`record_json`].
fn expected_record(record: &Value) -> Value {
    let mut fields = record.as_object().expect("a record").clone();
    for constant in ["partitionId", "topicId", "directories"] {
        fields.remove(constant);
    }
    for set in ["eligibleLeaderReplicas", "lastKnownElr"] {
        if let Some(value) = fields.get_mut(set) {
            *value = as_set(value);
        }
    }
    Value::Object(fields)
}

/// Runs one case; `Err` describes the first mismatch.
fn check(case: &Value) -> Result<(), String> {
    let input = &case["input"];
    let partition = registration(input);
    let acceptable: BTreeSet<u32> = brokers(&input["acceptableLeaders"]).into_iter().collect();
    let mut change = PartitionChange::kafka(
        &partition,
        election(input["election"].as_str().expect("election")),
        &acceptable,
    );
    change.eligible_leader_replicas_enabled = input["eligibleLeaderReplicasEnabled"].as_bool().expect("elr flag");
    change.min_isr = input["minIsr"].as_u64().expect("minIsr") as usize;
    match input["change"].as_str().expect("change") {
        "targetIsr" => change.target_isr = brokers(&input["targetIsr"]),
        "reassignment" => {
            // ReplicationControlManager.changePartitionReassignment sets
            // only what differs; the vectors carry exactly those.
            if !input["targetReplicas"].is_null() {
                change.target_replicas = brokers(&input["targetReplicas"]);
            }
            if !input["targetRemoving"].is_null() {
                change.target_removing = brokers(&input["targetRemoving"]);
            }
            if !input["targetAdding"].is_null() {
                change.target_adding = brokers(&input["targetAdding"]);
            }
        }
        "none" => {}
        other => panic!("unknown change {other}"),
    }
    if !input["uncleanShutdownReplicas"].is_null() {
        change.unclean_shutdown_replicas = brokers(&input["uncleanShutdownReplicas"]);
    }
    if let Some(state) = input["targetLeaderRecoveryState"].as_str() {
        change.target_leader_recovery = recovery(state);
    }
    let record = change.build();
    let got_record = record.as_ref().map_or(Value::Null, record_json);
    let want_record = if case["record"].is_null() {
        Value::Null
    } else {
        expected_record(&case["record"])
    };
    if got_record != want_record {
        return Err(format!("record: got {got_record}, want {want_record}"));
    }
    let mut after = partition.clone();
    if let Some(record) = &record {
        after.merge(record);
    }
    let got_after = registration_json(&after);
    let want_after = expected_after(&case["after"]);
    if got_after != want_after {
        return Err(format!("after: got {got_after}, want {want_after}"));
    }
    Ok(())
}

#[test]
fn partition_changes_match_kafkas_partition_change_builder() {
    let vectors = load("vectors-controller-differential.json");
    let cases = vectors["partition_change_random"]
        .as_array()
        .expect("partition_change_random");
    assert!(!cases.is_empty(), "no partition_change_random cases");
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            check(case).err().map(|diff| {
                format!(
                    "{}: {diff}\n  input: {}",
                    case["id"].as_str().unwrap_or("?"),
                    case["input"]
                )
            })
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} partition_change_random cases differ from Kafka; first ones:\n{}",
        failures.len(),
        cases.len(),
        failures.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
}
