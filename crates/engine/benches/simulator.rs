//! Benchmark: simulated records per wall-clock second — 3 brokers, a topic
//! with RF 3, acks=all, one producer — natively. (The wasm figure comes from
//! `crates/js/tests/bench_scale.rs`; `cargo xtask bench` runs both.)

use std::time::Instant;

use kafkascope_engine::sim::bench::throughput_run;

fn main() {
    let records = 1_000_000;
    // Warm up once, then measure.
    throughput_run(50_000);
    let started = Instant::now();
    let (acknowledged, events, virtual_ms) = throughput_run(records);
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "simulator: {records} records (acks=all, RF 3, 3 brokers): {acknowledged} acknowledged, {events} events, {virtual_ms} virtual ms in {:.1} ms = {:.0} records/s, {:.0} events/s",
        elapsed * 1000.0,
        records as f64 / elapsed,
        events as f64 / elapsed
    );
}
