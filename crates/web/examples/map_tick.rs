//! The live cluster's simulation tick, natively: the bench preset (6
//! brokers, 3 topics of 12 partitions, RF 3) producing 10 records per
//! producer and running 10 s of simulated time per tick, as the page does
//! at full speed. `cargo xtask bench` runs it next to the in-browser figure
//! (`tests/bench/map-tick.bench.cjs`). Prints figures only.

use std::time::Instant;

use kafkascope_engine::sim::config::{Input, ScheduledInput};
use kafkascope_engine::sim::Simulation;
use kafkascope_web::cluster_model::{bench_config, describe_groups, describe_topics, DEFAULT_SEED};

const TICKS: u32 = 20;

fn main() {
    let Ok(mut simulation) = Simulation::new(bench_config(), DEFAULT_SEED) else {
        eprintln!("the bench cluster is not valid");
        std::process::exit(1);
    };
    simulation.run_until(50_000);
    let events_before = simulation.events_processed();
    let started = Instant::now();
    for _ in 0..TICKS {
        let now = simulation.now();
        for producer in 0..simulation.config().producers.len() as u32 {
            simulation.schedule(ScheduledInput {
                at_ms: now,
                input: Input::Produce {
                    producer,
                    key: None,
                    count: 10,
                    bytes: 100,
                },
            });
        }
        simulation.run_until(now + 10_000);
    }
    let per_tick = started.elapsed().as_secs_f64() * 1000.0 / f64::from(TICKS);
    let events = (simulation.events_processed() - events_before) / u64::from(TICKS);
    let started = Instant::now();
    for _ in 0..TICKS {
        let view = simulation.view();
        std::hint::black_box((describe_topics(&view), describe_groups(&view)));
    }
    let view_ms = started.elapsed().as_secs_f64() * 1000.0 / f64::from(TICKS);
    println!(
        "native map tick (6 brokers, 3x12 partitions, RF 3, 10 s simulated): {per_tick:.1} ms simulation ({events} events), {view_ms:.2} ms view + panels"
    );
}
