//! Benchmark: Kafka's million-partition scale case for `sticky` and
//! `cooperative-sticky`, natively. Prints the wall-clock time of each step.
//!
//! `cargo bench -p kafkascope-engine --bench assignors` (add `-- --write DIR`
//! to also write each step's input as the CLI's JSON, for
//! `kafkascope assign`). Each step is timed as Kafka's Java figures in
//! BENCHMARKS.md were: warm (one run first), the median of three.
//! Before any step is timed, every step of both strategies runs once, so the
//! process is warm as a JVM is after its warm-up: the step measured first
//! does not pay alone for growing the heap (a page fault for every 4 KiB of
//! its 24 MB answer).
//! `-- --repeat-initial N` runs only the sticky first assignment N times,
//! for a profiler.

use std::time::Instant;

use kafkascope_engine::groups::assignors::scale::{
    rejoin_with_ownership, uniform_group, SCALE_CONSUMER_COUNT, SCALE_PARTITIONS_PER_TOPIC, SCALE_TOPIC_COUNT,
};
use kafkascope_engine::groups::assignors::{assign, Strategy};

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    let write_dir = arguments
        .iter()
        .position(|argument| argument == "--write")
        .and_then(|index| arguments.get(index + 1));

    let first = uniform_group(SCALE_TOPIC_COUNT, SCALE_PARTITIONS_PER_TOPIC, SCALE_CONSUMER_COUNT);
    if let Some(count) = arguments
        .iter()
        .position(|argument| argument == "--repeat-initial")
        .and_then(|index| arguments.get(index + 1))
        .and_then(|count| count.parse::<usize>().ok())
    {
        for _ in 0..count {
            drop(assign(Strategy::Sticky, &first).expect("the scale case is valid"));
        }
        return;
    }
    println!(
        "scale case: {} topics x {} partitions, {} consumers",
        SCALE_TOPIC_COUNT, SCALE_PARTITIONS_PER_TOPIC, SCALE_CONSUMER_COUNT
    );
    // Warm (one run first), then the median of three. The previous answer
    // is dropped before the clock starts: Kafka's Java figures do not count
    // the garbage collector freeing it, and a warm JVM reuses its heap as
    // the allocator here reuses the freed memory.
    let timed = |strategy: Strategy, group: &kafkascope_engine::groups::assignors::GroupInput| {
        let mut result = assign(strategy, group).expect("the scale case is valid");
        let mut times = Vec::new();
        for _ in 0..3 {
            drop(result);
            let started = Instant::now();
            result = assign(strategy, group).expect("the scale case is valid");
            times.push(started.elapsed());
        }
        times.sort();
        (result, times[1])
    };
    // The whole process is warmed first, every step of both strategies once,
    // so the step measured first does not pay alone for growing the heap.
    for strategy in [Strategy::Sticky, Strategy::CooperativeSticky] {
        let assignment = assign(strategy, &first).expect("the scale case is valid");
        let second = rejoin_with_ownership(&first, &assignment, 1);
        drop(assignment);
        drop(assign(strategy, &second).expect("the scale case is valid"));
    }
    for strategy in [Strategy::Sticky, Strategy::CooperativeSticky] {
        let (assignment, initial) = timed(strategy, &first);
        let second = rejoin_with_ownership(&first, &assignment, 1);
        let (rebalanced, rebalance) = timed(strategy, &second);
        let assigned: usize = rebalanced.values().map(Vec::len).sum();
        println!(
            "{:<20} initial {:>8.1} ms   rebalance {:>8.1} ms   (warm, median of 3; {assigned} partitions assigned after the rebalance)",
            strategy.name(),
            initial.as_secs_f64() * 1000.0,
            rebalance.as_secs_f64() * 1000.0
        );
        if let Some(dir) = write_dir {
            std::fs::create_dir_all(dir).expect("create the output folder");
            for (step, input) in [("initial", &first), ("rebalance", &second)] {
                let path = format!("{dir}/scale-{}-{step}.json", strategy.name());
                std::fs::write(&path, serde_json::to_vec(input).expect("JSON")).expect("write the input");
            }
        }
    }
}
