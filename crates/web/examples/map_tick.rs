//! The map's play tick, natively: the bench preset (6 brokers, 3 topics of
//! 12 partitions, RF 3, each producer sending 5 keyed records a second) at
//! full speed, where one tick (a 16-ms frame) advances 1.6 s of simulated time, followed by
//! the view, the panels and the map layout the page draws from. `cargo
//! xtask bench` runs it next to the in-browser figure
//! (`tests/bench/map-tick.bench.cjs`). Prints figures only.

use std::time::Instant;

use kafkascope_engine::sim::config::{Input, ScheduledInput};
use kafkascope_engine::sim::Simulation;
use kafkascope_web::cluster_model::{bench_config, describe_groups, describe_topics, DEFAULT_SEED};
use kafkascope_web::map_model::layout;

const TICKS: u64 = 60;
const TICK_MS: u64 = 1_600;
const RECORD_EVERY_MS: u64 = 200;

fn main() {
    let Ok(mut simulation) = Simulation::new(bench_config(), DEFAULT_SEED) else {
        eprintln!("the bench cluster is not valid");
        std::process::exit(1);
    };
    if std::env::var_os("NO_MESSAGE_TRACE").is_some() {
        simulation.set_trace_options(kafkascope_engine::sim::TraceOptions { messages: false });
    }
    let producers = simulation.config().producers.len() as u32;
    let mut next_record = 0;
    let mut sent = 0u64;
    let mut tick = |simulation: &mut Simulation| {
        let target = simulation.now() + TICK_MS;
        while next_record <= target {
            for producer in 0..producers {
                simulation.schedule(ScheduledInput {
                    at_ms: next_record,
                    input: Input::Produce {
                        producer,
                        key: Some(format!("user-{}", sent % 7)),
                        count: 1,
                        bytes: 100,
                    },
                });
            }
            sent += 1;
            next_record += RECORD_EVERY_MS;
        }
        simulation.run_until(target);
    };
    for _ in 0..10 {
        tick(&mut simulation);
    }
    let events_before = simulation.events_processed();
    let mut simulate = 0.0;
    let mut draw = 0.0;
    for _ in 0..TICKS {
        let started = Instant::now();
        tick(&mut simulation);
        simulate += started.elapsed().as_secs_f64();
        let started = Instant::now();
        let view = simulation.view();
        std::hint::black_box((describe_topics(&view), describe_groups(&view), layout(&view)));
        draw += started.elapsed().as_secs_f64();
    }
    let events = (simulation.events_processed() - events_before) / TICKS;
    println!(
        "native map tick (6 brokers, 3x12 partitions, RF 3, 1.6 s simulated): {:.2} ms simulation ({events} events), {:.2} ms view + panels + map layout",
        simulate * 1000.0 / TICKS as f64,
        draw * 1000.0 / TICKS as f64
    );
}
