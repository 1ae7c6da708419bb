//! Benchmark, not a test: Kafka's million-partition scale case for the
//! sticky assignors, compiled to wasm and run in headless Chromium. Ignored
//! by the test run; `cargo xtask bench` runs it and prints the figures.

use kafkascope_engine::groups::assignors::scale::{
    rejoin_with_ownership, uniform_group, SCALE_CONSUMER_COUNT, SCALE_PARTITIONS_PER_TOPIC, SCALE_TOPIC_COUNT,
};
use kafkascope_engine::groups::assignors::{assign, Strategy};
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn now_ms() -> f64 {
    js_sys::Date::now()
}

#[wasm_bindgen_test]
#[ignore = "a benchmark: run it with `cargo xtask bench`"]
fn scale_case_sticky_assignors_in_wasm() {
    let first = uniform_group(SCALE_TOPIC_COUNT, SCALE_PARTITIONS_PER_TOPIC, SCALE_CONSUMER_COUNT);
    for strategy in [Strategy::Sticky, Strategy::CooperativeSticky] {
        let started = now_ms();
        let assignment = assign(strategy, &first).expect("the scale case is valid");
        let initial = now_ms() - started;
        let second = rejoin_with_ownership(&first, &assignment, 1);
        let started = now_ms();
        let rebalanced = assign(strategy, &second).expect("the scale case is valid");
        let rebalance = now_ms() - started;
        let assigned: usize = rebalanced.values().map(Vec::len).sum();
        console_log!(
            "wasm {:<20} initial {:>8.1} ms   rebalance {:>8.1} ms   ({assigned} partitions)",
            strategy.name(),
            initial,
            rebalance
        );
        assert_eq!(assigned, 1_000_000);
    }
}

#[wasm_bindgen_test]
#[ignore = "a benchmark: run it with `cargo xtask bench`"]
fn simulator_throughput_in_wasm() {
    let records = 1_000_000;
    kafkascope_engine::sim::bench::throughput_run(50_000);
    let started = now_ms();
    let (acknowledged, events, virtual_ms) = kafkascope_engine::sim::bench::throughput_run(records);
    let elapsed_ms = now_ms() - started;
    console_log!(
        "wasm simulator: {records} records (acks=all, RF 3, 3 brokers, one consumer group): {acknowledged} acknowledged, {events} events, {virtual_ms} virtual ms in {elapsed_ms:.0} ms = {:.0} records/s",
        f64::from(records) / (elapsed_ms / 1000.0)
    );
    assert_eq!(acknowledged, u64::from(records));
}
