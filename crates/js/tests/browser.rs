//! The JavaScript API run in a real browser (headless Chromium through
//! `wasm-bindgen-test-runner`): the engine compiled to wasm must give the
//! same answers as natively.

use wasm_bindgen::JsValue;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn murmur2_in_wasm_matches_kafka_utils_test() {
    assert_eq!(
        kafkascope_js::murmur2(JsValue::from_str("21")).ok().unwrap(),
        -973932308
    );
    assert_eq!(
        kafkascope_js::murmur2(JsValue::from_str("foobar")).ok().unwrap(),
        -790332482
    );
    assert_eq!(
        kafkascope_js::murmur2(JsValue::from_str("a-little-bit-long-string"))
            .ok()
            .unwrap(),
        -985981536
    );
    assert_eq!(
        kafkascope_js::murmur2(JsValue::from_str("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"))
            .ok()
            .unwrap(),
        -58897971
    );
}

#[wasm_bindgen_test]
fn partition_for_in_wasm_matches_kafka() {
    // From vectors-partitioning.json: "" hashes to 275646681, 12 partitions -> 9.
    assert_eq!(kafkascope_js::partition_for(JsValue::from_str(""), 12.0).ok(), Some(9));
    assert!(kafkascope_js::partition_for(JsValue::from_str("key"), 0.0).is_err());
    assert!(kafkascope_js::partition_for(JsValue::from_str("key"), 2.5).is_err());
}

/// The same scenario gives the same trace in wasm as natively: the hash in
/// `scenarios/golden/happy-path.hash` is what the native golden test checks.
#[wasm_bindgen_test]
fn simulation_trace_in_wasm_matches_the_native_golden_hash() {
    let scenario =
        kafkascope_engine::sim::scenario::Scenario::from_json(include_str!("../../../scenarios/happy-path.json"))
            .expect("valid scenario");
    let outcome = scenario.run().expect("runs");
    let expected = include_str!("../../../scenarios/golden/happy-path.hash").trim();
    assert_eq!(format!("{:016x}", outcome.simulation.trace_hash()), expected);
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
}

#[wasm_bindgen_test]
fn lossy_scenario_in_wasm_loses_the_same_records() {
    let scenario = kafkascope_engine::sim::scenario::Scenario::from_json(include_str!(
        "../../../scenarios/acks1-leader-crash-loses-records.json"
    ))
    .expect("valid scenario");
    let outcome = scenario.run().expect("runs");
    let expected = include_str!("../../../scenarios/golden/acks1-leader-crash-loses-records.hash").trim();
    assert_eq!(format!("{:016x}", outcome.simulation.trace_hash()), expected);
    assert_eq!(outcome.summary.lost, 5);
}
