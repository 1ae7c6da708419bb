//! Java collection ordering against the JVM (`vectors-java-ordering.json`).

use kafkascope_engine::java::{
    hash_map_bucket, hash_map_capacity, hash_map_iteration_order, string_hash_code, uuid_hash_code,
};

use crate::vectors::load;

fn strings(value: &serde_json::Value) -> Vec<&str> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .map(|item| item.as_str().expect("a string"))
        .collect()
}

#[test]
fn string_hash_codes_match_the_jvm() {
    let vectors = load("vectors-java-ordering.json");
    for case in vectors["string_hashcode"].as_array().expect("cases") {
        let text = case["s"].as_str().expect("s");
        assert_eq!(
            i64::from(string_hash_code(text)),
            case["hashCode"].as_i64().expect("hash"),
            "{text:?}"
        );
    }
}

#[test]
fn hash_map_iteration_matches_the_jvm() {
    let vectors = load("vectors-java-ordering.json");
    for case in vectors["hashmap_iteration_order_string_keys"]
        .as_array()
        .expect("cases")
    {
        let keys = strings(&case["insertion_order"]);
        let capacity = hash_map_capacity(16, keys.len());
        assert_eq!(
            capacity as u64,
            case["table_capacity"].as_u64().expect("capacity"),
            "{keys:?}"
        );
        let hashes: Vec<i32> = keys.iter().map(|key| string_hash_code(key)).collect();
        let order: Vec<&str> = hash_map_iteration_order(&hashes, capacity)
            .into_iter()
            .map(|index| keys[index])
            .collect();
        assert_eq!(order, strings(&case["iteration_order"]), "{keys:?}");
    }
}

#[test]
fn topic_id_hash_codes_match_kafka_uuid() {
    let vectors = load("vectors-java-ordering.json");
    for case in vectors["uuid_hashcode"]["test_topic_ids"]
        .as_array()
        .expect("topic ids")
    {
        let uuid = case["uuid"].as_str().expect("uuid");
        let hash = uuid_hash_code(uuid).expect("a Kafka Uuid");
        assert_eq!(i64::from(hash), case["hashCode"].as_i64().expect("hash"), "{uuid}");
        let bucket = hash_map_bucket(hash, 16) as u64;
        assert_eq!(
            bucket,
            case["bucket_in_capacity_16"].as_u64().expect("bucket"),
            "{uuid}"
        );
    }
}
