//! Replication and controller rules against `vectors-replication.json`:
//! Kafka's LeaderEpochFileCacheTest, ReplicaTest and PartitionChangeBuilderTest,
//! plus the hand-derived high-watermark and acks cases.

use std::collections::{BTreeMap, BTreeSet};

use kafkascope_engine::controller::partition_change::{
    LeaderRecovery, PartitionChange, PartitionChangeRecord, PartitionRegistration,
};
use kafkascope_engine::replication::epoch_cache::LeaderEpochCache;
use kafkascope_engine::replication::high_watermark::{
    admit_produce, check_parked_produce, evaluate, Acks, HighWatermarkInputs, ParkedProduce, ProduceAdmission,
};
use kafkascope_engine::replication::replica::{ReplicaState, REPLICA_LAG_TIME_MAX_MS_DEFAULT};
use serde_json::Value;

use crate::vectors::load;

fn numbers(value: &Value) -> Vec<i64> {
    crate::vectors::integers(value)
}

fn brokers(value: &Value) -> Vec<u32> {
    numbers(value).into_iter().map(|id| id as u32).collect()
}

fn pairs(value: &Value) -> Vec<(i64, i64)> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .map(|pair| (pair[0].as_i64().expect("a"), pair[1].as_i64().expect("b")))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn leader_epoch_cache_matches_kafkas_tests() {
    let vectors = load("vectors-replication.json");
    let cases = vectors["leader_epoch_cache"]["cases"].as_array().expect("cases");
    assert!(cases.len() >= 20);
    for case in cases {
        let name = case["test"].as_str().expect("test");
        let mut cache = LeaderEpochCache::new();
        let mut previous_epochs = Vec::new();
        for (epoch, offset) in pairs(&case["assign"]) {
            cache.assign(epoch as u32, offset as u64);
            previous_epochs.push(cache.previous_epoch().map(i64::from));
        }
        for query in case["queries"].as_array().into_iter().flatten() {
            let expected = numbers(&query["expect"]);
            let actual = cache.end_offset_for(
                query["epoch"].as_i64().expect("epoch"),
                query["leo"].as_u64().expect("leo"),
            );
            assert_eq!(vec![actual.0, actual.1], expected, "{name}: endOffsetFor {query}");
        }
        for key in [
            "truncateFromEnd",
            "truncateFromStart",
            "truncateFromStart_or_End",
            "then_truncateFromEnd",
        ] {
            if let Some(offset) = case[key].as_i64() {
                // Kafka ignores UNDEFINED_EPOCH_OFFSET (-1) for both truncations.
                if offset >= 0 {
                    if key.contains("Start") && !key.contains("or_End") {
                        cache.truncate_from_start(offset as u64);
                    } else {
                        cache.truncate_from_end(offset as u64);
                    }
                }
            }
        }
        if !case["entries_after"].is_null() {
            let entries: Vec<(i64, i64)> = cache
                .entries()
                .iter()
                .map(|entry| (i64::from(entry.epoch), entry.start_offset as i64))
                .collect();
            assert_eq!(entries, pairs(&case["entries_after"]), "{name}: entries");
        }
        if let Some(expected) = case["previousEpoch_after_each_assign"].as_array() {
            let expected: Vec<Option<i64>> = expected.iter().map(Value::as_i64).collect();
            assert_eq!(previous_epochs, expected, "{name}: previous epochs");
        }
        if let Some(expected) = case["previousEpoch_after"].as_i64() {
            assert_eq!(
                cache.previous_epoch().map(i64::from),
                Some(expected),
                "{name}: previous epoch"
            );
        }
    }
}

/// ReplicaTest's symbolic times.
fn time(value: &Value) -> Option<u64> {
    match value {
        Value::String(name) => Some(match name.as_str() {
            "t1" => 1_000,
            "t2" => 2_000,
            "t3" => 3_000,
            "tr" => 5_000,
            other => panic!("unknown time {other}"),
        }),
        Value::Number(number) if number.as_i64() == Some(0) => None,
        Value::Null => None,
        other => panic!("unexpected time {other}"),
    }
}

fn offset(value: &Value) -> Option<u64> {
    match value.as_i64() {
        Some(-1) => None,
        Some(offset) => Some(offset as u64),
        None => panic!("offset {value}"),
    }
}

fn assert_replica(state: &ReplicaState, expected: &Value, name: &str) {
    assert_eq!(
        state.log_start_offset,
        offset(&expected["logStartOffset"]),
        "{name}: logStartOffset"
    );
    assert_eq!(
        state.log_end_offset,
        offset(&expected["logEndOffset"]),
        "{name}: logEndOffset"
    );
    assert_eq!(
        state.last_caught_up_time_ms,
        time(&expected["lastCaughtUpTimeMs"]),
        "{name}: lastCaughtUpTimeMs"
    );
    assert_eq!(
        state.last_fetch_leader_log_end_offset,
        offset(&expected["lastFetchLeaderLogEndOffset"]),
        "{name}: lastFetchLeaderLogEndOffset"
    );
    assert_eq!(
        state.last_fetch_time_ms,
        time(&expected["lastFetchTimeMs"]),
        "{name}: lastFetchTimeMs"
    );
}

#[test]
fn replica_fetch_state_matches_kafkas_replica_test() {
    let vectors = load("vectors-replication.json");
    for case in vectors["replica_fetch_state"]["from_test"].as_array().expect("cases") {
        let name = case["test"].as_str().expect("test");
        let mut state = ReplicaState::default();
        if !case["expect"].is_null() && case["setup_fetch"].is_null() {
            assert_replica(&state, &case["expect"], name);
        }
        for step in case["steps"].as_array().into_iter().flatten() {
            let fetch = &step["fetch"];
            state.record_fetch(
                fetch["fetchOffset"].as_u64().expect("offset"),
                fetch["followerStartOffset"].as_u64().expect("start"),
                time(&fetch["at"]).expect("time"),
                fetch["leaderEndOffset"].as_u64().expect("leader end"),
            );
            assert_replica(&state, &step["expect"], name);
        }
        if !case["setup_fetch"].is_null() {
            let fetch = &case["setup_fetch"];
            state.record_fetch(
                fetch["fetchOffset"].as_u64().expect("offset"),
                fetch["followerStartOffset"].as_u64().expect("start"),
                500,
                fetch["leaderEndOffset"].as_u64().expect("leader end"),
            );
            let reset = &case["reset"];
            state.reset_on_leader_change(
                time(&reset["at"]).unwrap_or(5_000),
                reset["leaderEndOffset"].as_u64().expect("leader end"),
                reset["isNewLeader"].as_bool().expect("new leader"),
                reset["isFollowerInSync"].as_bool().expect("in sync"),
            );
            assert_replica(&state, &case["expect"], name);
        }
    }
}

#[test]
fn replica_is_caught_up_as_in_kafkas_replica_test() {
    let lag = REPLICA_LAG_TIME_MAX_MS_DEFAULT;
    // testIsCaughtUpWhenReplicaIsCaughtUpToLogEnd
    let mut state = ReplicaState::default();
    let now = 1_000_000;
    assert!(!state.is_caught_up(10, now, lag));
    state.record_fetch(10, 0, now, 10);
    assert!(state.is_caught_up(10, now, lag));
    assert!(
        state.is_caught_up(10, now + 30_001, lag),
        "its log end equals the leader's"
    );
    // testIsCaughtUpWhenReplicaIsNotCaughtUpToLogEnd
    let mut state = ReplicaState::default();
    assert!(!state.is_caught_up(10, now, lag));
    state.record_fetch(5, 0, now, 10);
    assert!(!state.is_caught_up(10, now, lag));
    state.record_fetch(10, 0, now, 15);
    assert!(state.is_caught_up(16, now, lag), "caught up at the previous fetch");
    assert!(!state.is_caught_up(16, now + 30_001, lag));
}

struct Fixture {
    partition: PartitionRegistration,
    acceptable: BTreeSet<u32>,
}

fn fixture(vectors: &Value, name: &str) -> Fixture {
    let fixture = &vectors["partition_change_builder"]["fixtures"][name];
    let leader = fixture["leader"].as_i64().expect("leader");
    let acceptable = match fixture["acceptableLeader"].as_str().expect("acceptable") {
        "any" => (0..10).collect(),
        "r != 3" => (0..10).filter(|&broker| broker != 3).collect(),
        "r == 1" => [1].into_iter().collect(),
        other => panic!("unknown acceptableLeader {other}"),
    };
    Fixture {
        partition: PartitionRegistration {
            replicas: brokers(&fixture["replicas"]),
            isr: brokers(&fixture["isr"]),
            leader: (leader >= 0).then_some(leader as u32),
            leader_epoch: fixture["leaderEpoch"].as_u64().expect("epoch") as u32,
            partition_epoch: fixture["partitionEpoch"].as_u64().expect("epoch") as u32,
            leader_recovery: LeaderRecovery::Recovered,
            elr: Vec::new(),
            last_known_elr: Vec::new(),
            removing_replicas: Vec::new(),
            adding_replicas: Vec::new(),
        },
        acceptable,
    }
}

use crate::vectors::election;

fn change<'a>(fixture: &'a Fixture, case: &Value) -> PartitionChange<'a> {
    let mut change = PartitionChange::new(
        &fixture.partition,
        election(case["election"].as_str().unwrap_or("ONLINE")),
        &fixture.acceptable,
    );
    if !case["targetIsr"].is_null() {
        change.target_isr = brokers(&case["targetIsr"]);
    }
    if !case["targetReplicas"].is_null() {
        change.target_replicas = brokers(&case["targetReplicas"]);
    }
    change
}

#[test]
fn controller_elections_match_partition_change_builder_test() {
    let vectors = load("vectors-replication.json");
    for case in vectors["partition_change_builder"]["electLeader_from_test"]
        .as_array()
        .expect("cases")
    {
        let fixture = fixture(&vectors, case["fixture"].as_str().expect("fixture"));
        let result = change(&fixture, case).elect_leader();
        let expected_leader = case["expect"]["leader"].as_i64().expect("leader");
        assert_eq!(result.leader.map_or(-1, i64::from), expected_leader, "{case}");
        assert_eq!(
            result.unclean,
            case["expect"]["unclean"].as_bool().expect("unclean"),
            "{case}"
        );
    }
}

#[test]
fn controller_records_and_epochs_match_partition_change_builder_test() {
    let vectors = load("vectors-replication.json");
    for case in vectors["partition_change_builder"]["build_from_test"]
        .as_array()
        .expect("cases")
    {
        let test = case["test"].as_str().expect("test");
        if let Some(inputs) = case["cases"].as_array() {
            for input in inputs {
                let mut words = input.as_str().expect("case").split(' ');
                let fixture = fixture(&vectors, words.next().expect("fixture"));
                let mut change = PartitionChange::new(
                    &fixture.partition,
                    election(words.next().expect("election")),
                    &fixture.acceptable,
                );
                change.target_isr = fixture.partition.isr.clone();
                assert_eq!(change.build(), None, "{test}: {input}");
            }
            continue;
        }
        let fixture = fixture(&vectors, case["fixture"].as_str().expect("fixture"));
        let versions: Vec<&str> = case["metadata_versions"]
            .as_array()
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let runs: Vec<bool> = if versions.is_empty() {
            // The latest metadata version, and both when the test says "all MVs".
            if case["expect"].as_str().is_some_and(|text| text.contains("all MVs")) {
                vec![false, true]
            } else {
                vec![false]
            }
        } else {
            // Before 3.6 the controller bumps the leader epoch on ISR shrink.
            vec![versions
                .iter()
                .all(|version| version.starts_with("3.4") || version.starts_with("3.5"))]
        };
        for bump_on_shrink in runs {
            let mut change = change(&fixture, case);
            change.bump_leader_epoch_on_isr_shrink = bump_on_shrink;
            let record = change.build();
            if let Some(expected) = case["expect_record"].as_object() {
                let record = record.clone().expect("a record");
                let expected_record = PartitionChangeRecord {
                    isr: expected.get("isr").map(brokers),
                    leader: expected
                        .get("leader")
                        .map(|leader| Some(leader.as_u64().expect("leader") as u32)),
                    replicas: None,
                    leader_recovery: expected.get("leaderRecoveryState").map(|_| LeaderRecovery::Recovering),
                    ..PartitionChangeRecord::default()
                };
                assert_eq!(record, expected_record, "{test}");
            }
            let expectation = case["expect"].as_str().unwrap_or("");
            let bumps = record.as_ref().is_some_and(|record| record.leader.is_some());
            if expectation.contains("no leaderEpoch bump") || expectation.contains("no leader change") {
                assert!(!bumps, "{test}: {record:?}");
            } else if expectation.contains("leaderEpoch bump") {
                assert!(bumps, "{test}: {record:?}");
            }
            // PartitionRegistration#merge: partition epoch +1, leader epoch +1 iff leader set.
            if let Some(record) = record {
                let mut merged = fixture.partition.clone();
                merged.apply(&record);
                assert_eq!(merged.partition_epoch, fixture.partition.partition_epoch + 1, "{test}");
                assert_eq!(
                    merged.leader_epoch,
                    fixture.partition.leader_epoch + u32::from(bumps),
                    "{test}"
                );
            }
        }
    }
}

#[test]
fn high_watermark_follows_the_derived_cases() {
    let vectors = load("vectors-replication.json");
    for case in vectors["high_watermark_derived"]["cases"].as_array().expect("cases") {
        let isr = brokers(&case["isr"]);
        let leader = case["leader"].as_u64().expect("leader") as u32;
        let log_ends: BTreeMap<u32, u64> = case["leo"]
            .as_object()
            .expect("leo")
            .iter()
            .map(|(broker, end)| (broker.parse().expect("id"), end.as_u64().expect("end")))
            .collect();
        let followers: BTreeMap<u32, u64> = log_ends
            .iter()
            .filter(|(&broker, _)| broker != leader)
            .map(|(&b, &e)| (b, e))
            .collect();
        let caught_up: Vec<u32> = if case["replica3_caught_up"].as_bool() == Some(true) {
            vec![3]
        } else {
            vec![]
        };
        let inputs = HighWatermarkInputs {
            leader_log_end_offset: log_ends[&leader],
            current: case["oldHW"].as_u64().expect("old"),
            isr: &isr,
            maximal_isr: &isr,
            leader,
            follower_log_end_offsets: &followers,
            caught_up_eligible: &caught_up,
            min_insync_replicas: case["minIsr"].as_u64().expect("min isr") as u32,
            replication_factor: case["rf"].as_u64().unwrap_or(log_ends.len() as u64) as u32,
        };
        let decision = evaluate(&inputs);
        assert_eq!(
            decision.value(inputs.current),
            case["expectHW"].as_u64().expect("hw"),
            "{case}: {decision:?}"
        );
    }
}

#[test]
fn produce_acks_follow_the_derived_cases() {
    // acks=all with ISR 1 < min.insync.replicas 2: rejected, nothing appended.
    assert_eq!(
        admit_produce(Acks::All, 1, 2, 3),
        ProduceAdmission::RejectNotEnoughReplicas
    );
    // acks=1 and acks=0 ignore min.insync.replicas.
    assert_eq!(admit_produce(Acks::Leader, 1, 2, 3), ProduceAdmission::AppendAndAnswer);
    assert_eq!(admit_produce(Acks::None, 1, 2, 3), ProduceAdmission::AppendAndAnswer);
    // The ISR shrank to 1 while waiting and the HW reached the records: in the log, but an error.
    assert_eq!(
        check_parked_produce(10, 10, 1, 2, 3),
        ParkedProduce::NotEnoughReplicasAfterAppend
    );
    // Effective min ISR = min(5, rf 2) = 2.
    assert_eq!(admit_produce(Acks::All, 2, 5, 2), ProduceAdmission::AppendAndWait);
    // Success once HW >= last offset + 1; waiting before.
    assert_eq!(check_parked_produce(9, 10, 3, 2, 3), ParkedProduce::Waiting);
    assert_eq!(check_parked_produce(10, 10, 3, 2, 3), ParkedProduce::Committed);
}
