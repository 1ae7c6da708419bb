//! The workload the throughput benchmarks run, natively and in wasm, so
//! both measure the same thing.

use super::config::{ClusterConfig, ConsumerConfig, Input, OffsetReset, ProducerConfig, ScheduledInput, TopicConfig};
use super::{Simulation, TraceOptions};

/// Produces `records` 100-byte records with acks=all to a 3-broker, RF 3
/// topic (linger.ms=5, so batches fill) while one consumer group reads
/// them, and runs until they are acknowledged. Returns (acknowledged,
/// events, virtual milliseconds).
pub fn throughput_run(records: u32) -> (u64, u64, u64) {
    let mut producer = ProducerConfig::new("events");
    producer.linger_ms = 5;
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![TopicConfig {
            name: "events".into(),
            partitions: 3,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![producer],
        consumers: vec![ConsumerConfig {
            auto_offset_reset: OffsetReset::Earliest,
            ..ConsumerConfig::new("readers", vec!["events".into()])
        }],
        offsets_topic_partitions: 3,
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 42).expect("valid benchmark config");
    simulation.set_trace_options(TraceOptions { messages: false });
    let chunk = 10_000;
    let mut sent = 0;
    let mut at_ms = 10;
    while sent < records {
        let count = chunk.min(records - sent);
        simulation.schedule(ScheduledInput {
            at_ms,
            input: Input::Produce {
                producer: 0,
                key: None,
                count,
                bytes: 100,
            },
        });
        sent += count;
        at_ms += 10;
    }
    let mut until = at_ms;
    loop {
        until += 1_000;
        simulation.run_until(until);
        let done = simulation.acknowledged_count() + simulation.failed_count();
        if done >= u64::from(records) || until > 3_600_000 {
            return (
                simulation.acknowledged_count(),
                simulation.events_processed(),
                simulation.now(),
            );
        }
    }
}

/// A run of at least `events` events with full tracing (3 brokers, 12
/// partitions, a steady producer), recorded with snapshots every
/// `interval` events, for the seek benchmark.
pub fn long_recording(events: u64, interval: u64) -> super::recording::Recording {
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![TopicConfig {
            name: "events".into(),
            partitions: 12,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("events")],
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 7).expect("valid benchmark config");
    for step in 0..20_000u64 {
        simulation.schedule(ScheduledInput {
            at_ms: 10 + step * 50,
            input: Input::Produce {
                producer: 0,
                key: Some(format!("key-{}", step % 97)),
                count: 5,
                bytes: 100,
            },
        });
    }
    let mut recording = super::recording::Recording::new(simulation, interval);
    while recording.position() < events && recording.step() {}
    recording
}
