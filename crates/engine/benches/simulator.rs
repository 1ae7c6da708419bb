//! Benchmark: simulated records per wall-clock second — 3 brokers, a topic
//! with RF 3, acks=all, one producer — natively. (The wasm figure comes from
//! `crates/js/tests/bench_scale.rs`; `cargo xtask bench` runs both.)

use std::time::Instant;

use kafkascope_engine::random::Rng;
use kafkascope_engine::sim::bench::{long_recording, throughput_run};

fn main() {
    // `-- --throughput-only`: skip the seek benchmark (for a profiler).
    let throughput_only = std::env::args().any(|argument| argument == "--throughput-only");
    let records = 1_000_000;
    // Warm up once, then measure.
    throughput_run(50_000);
    let started = Instant::now();
    let (acknowledged, events, virtual_ms) = throughput_run(records);
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "simulator: {records} records (acks=all, RF 3, 3 brokers, one consumer group): {acknowledged} acknowledged, {events} events, {virtual_ms} virtual ms in {:.1} ms = {:.0} records/s, {:.0} events/s",
        elapsed * 1000.0,
        records as f64 / elapsed,
        events as f64 / elapsed
    );

    if throughput_only {
        return;
    }
    // Seek: any point of a 100,000-event run.
    let started = Instant::now();
    let mut recording = long_recording(100_000, 500);
    let recorded_ms = started.elapsed().as_secs_f64() * 1000.0;
    let end = recording.position();
    let mut rng = Rng::new(1, 1);
    let mut worst: f64 = 0.0;
    let mut total = 0.0;
    let seeks = 200;
    for _ in 0..seeks {
        let target = u64::from(rng.next_u32()) % end;
        let started = Instant::now();
        recording.seek(target);
        let elapsed = started.elapsed().as_secs_f64() * 1000.0;
        worst = worst.max(elapsed);
        total += elapsed;
    }
    println!(
        "seek: {end}-event run recorded in {recorded_ms:.0} ms (snapshot every 500 events); {seeks} random seeks: mean {:.2} ms, worst {worst:.2} ms",
        total / f64::from(seeks)
    );
}
