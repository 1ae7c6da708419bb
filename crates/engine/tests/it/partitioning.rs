//! Key partitioning against Kafka's own vectors (`vectors-partitioning.json`).

use kafkascope_engine::java::{kafka_abs, string_hash_code, to_positive};
use kafkascope_engine::partitioning::{murmur2, partition_for_key};
use serde_json::Value;

use crate::vectors::{hex_bytes, load};

fn as_i32(value: &Value) -> i32 {
    i32::try_from(value.as_i64().expect("integer")).expect("fits in a Java int")
}

/// Checks murmur2, toPositive and every partition count a case lists.
fn check_key_case(case: &Value, key_bytes: &[u8]) {
    let label = case.to_string();
    assert_eq!(murmur2(key_bytes), as_i32(&case["murmur2"]), "murmur2 of {label}");
    assert_eq!(
        to_positive(murmur2(key_bytes)),
        as_i32(&case["toPositive"]),
        "toPositive of {label}"
    );
    if let Some(partitions) = case["partition_by_num_partitions"].as_object() {
        for (count, expected) in partitions {
            let count: u32 = count.parse().expect("partition count");
            let expected = expected.as_u64().expect("partition") as u32;
            assert_eq!(
                partition_for_key(key_bytes, count),
                Some(expected),
                "{count} partitions for {label}"
            );
        }
    }
}

#[test]
fn murmur2_matches_kafka_utils_test() {
    let vectors = load("vectors-partitioning.json");
    let cases = vectors["kafka_utilstest_murmur2"].as_array().expect("cases");
    assert!(!cases.is_empty());
    for case in cases {
        let bytes = hex_bytes(case["input_hex"].as_str().expect("hex"));
        assert_eq!(bytes, case["input_ascii"].as_str().expect("ascii").as_bytes());
        check_key_case(case, &bytes);
    }
}

#[test]
fn utf8_string_keys_land_where_kafka_puts_them() {
    let vectors = load("vectors-partitioning.json");
    for case in vectors["string_keys_utf8"].as_array().expect("cases") {
        let key = case["key"].as_str().expect("key");
        assert_eq!(key.as_bytes(), hex_bytes(case["key_utf8_hex"].as_str().expect("hex")));
        check_key_case(case, key.as_bytes());
    }
}

#[test]
fn serialized_binary_keys_land_where_kafka_puts_them() {
    let vectors = load("vectors-partitioning.json");
    for case in vectors["binary_keys"].as_array().expect("cases") {
        check_key_case(case, &hex_bytes(case["key_hex"].as_str().expect("hex")));
    }
}

#[test]
fn utils_abs_matches_kafka() {
    let vectors = load("vectors-partitioning.json");
    for case in vectors["kafka_utilstest_abs"].as_array().expect("cases") {
        assert_eq!(kafka_abs(as_i32(&case["in"])), as_i32(&case["out"]), "abs of {case}");
    }
}

#[test]
fn java_string_hash_code_matches_the_jvm() {
    let vectors = load("vectors-partitioning.json");
    for case in vectors["group_coordinator_partition"].as_array().expect("cases") {
        let group = case["group_id"].as_str().expect("group id");
        assert_eq!(
            string_hash_code(group),
            as_i32(&case["java_hashCode"]),
            "hashCode of {group:?}"
        );
        assert_eq!(
            kafka_abs(string_hash_code(group)),
            as_i32(&case["Utils_abs"]),
            "abs of {group:?}"
        );
    }
}

#[test]
fn groups_land_on_the_offsets_partition_kafka_picks() {
    let vectors = load("vectors-partitioning.json");
    for case in vectors["group_coordinator_partition"].as_array().expect("cases") {
        let group = case["group_id"].as_str().expect("group id");
        for (count, expected) in case["offsets_partition_by_n"].as_object().expect("by n") {
            let count: u32 = count.parse().expect("count");
            let expected = expected.as_u64().expect("partition") as u32;
            assert_eq!(
                kafkascope_engine::groups::coordinator_partition(group, count),
                Some(expected),
                "{group:?} over {count} partitions"
            );
        }
    }
}
