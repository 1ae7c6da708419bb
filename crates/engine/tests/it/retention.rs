//! Retention in the running simulation: brokers delete whole closed
//! segments on their retention check (`UnifiedLog#deleteOldSegments`), the
//! log start offset moves on every replica, and a consumer whose position
//! fell below it gets `OFFSET_OUT_OF_RANGE` and goes where
//! `auto.offset.reset` says.

use kafkascope_engine::groups::assignors::TopicPartition;
use kafkascope_engine::sim::config::{
    ClusterConfig, ConsumerConfig, Input, OffsetReset, ProducerConfig, ScheduledInput, TopicConfig,
};
use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
use kafkascope_engine::sim::trace::TraceKind;
use kafkascope_engine::sim::Simulation;

/// One partition, RF 3, 400-byte segments kept 20 s; a producer sends
/// a record every 200 ms for a minute; a consumer that stops for 40 s.
fn slow_reader(reset: OffsetReset) -> Simulation {
    let mut consumer = ConsumerConfig::new("audit", vec!["events".into()]);
    consumer.auto_offset_reset = reset;
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![TopicConfig {
            name: "events".into(),
            partitions: 1,
            replication_factor: 3,
            min_insync_replicas: 2,
            segment_bytes: 400,
            retention_ms: 20_000,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("events")],
        consumers: vec![consumer],
        offsets_topic_partitions: 1,
        log_retention_check_interval_ms: 5_000,
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 7).expect("a valid cluster");
    for step in 0..300u64 {
        simulation.schedule(ScheduledInput {
            at_ms: 5_000 + step * 200,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 1,
                bytes: 50,
            },
        });
    }
    simulation.schedule(ScheduledInput {
        at_ms: 12_000,
        input: Input::PauseConsumer {
            consumer: 0,
            duration_ms: 40_000,
        },
    });
    simulation
}

fn partition() -> TopicPartition {
    TopicPartition::new("events", 0)
}

#[test]
fn retention_deletes_closed_segments_on_every_replica_and_a_late_consumer_resets() {
    let mut simulation = slow_reader(OffsetReset::Earliest);
    simulation.run_until(90_000);
    let deleted: Vec<_> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::SegmentsDeleted {
                broker,
                partition,
                log_start_offset,
                ..
            } if *partition == self::partition() => Some((*broker, *log_start_offset)),
            _ => None,
        })
        .collect();
    assert!(
        deleted
            .iter()
            .map(|(broker, _)| broker)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == 3,
        "every replica deletes its own segments: {deleted:?}"
    );
    for (id, broker) in simulation.brokers() {
        let log = &broker.logs[&partition()];
        assert!(log.log_start_offset() > 0, "broker-{id} kept everything");
        assert!(
            log.log_start_offset() <= log.high_watermark,
            "broker-{id}: log start past the high watermark"
        );
        assert!(log.log.segment_count() >= 1);
    }
    let resets: Vec<_> = simulation
        .trace()
        .iter()
        .filter(|event| {
            matches!(
                event.kind,
                TraceKind::OffsetOutOfRange { .. } | TraceKind::OffsetReset { .. }
            )
        })
        .map(|event| event.text())
        .collect();
    assert!(
        resets.len() >= 2,
        "the paused consumer fell below the log start and reset: {resets:?}"
    );
    assert!(resets[0].contains("OFFSET_OUT_OF_RANGE"), "{resets:?}");
    // The consumer went on from the log start and caught up.
    let consumer = &simulation.consumers()[0];
    let leader_hw = simulation
        .brokers()
        .values()
        .map(|broker| broker.logs[&partition()].high_watermark)
        .max()
        .unwrap();
    assert_eq!(consumer.positions.get(&partition()).copied(), Some(leader_hw));
    let ledger = simulation.ledger_views();
    let never: u64 = ledger[0].never_processed.iter().map(|(_, count)| count).sum();
    assert!(
        never > 0,
        "records retention deleted count as never processed: {ledger:?}"
    );
    assert_eq!(simulation.summary().invariant_violations, 0);
}

#[test]
fn latest_reset_skips_to_the_end() {
    let mut simulation = slow_reader(OffsetReset::Latest);
    simulation.run_until(90_000);
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::OffsetOutOfRange {
            reset: OffsetReset::Latest,
            ..
        }
    )));
}

/// The fuzzer's storage stream does make brokers delete segments (and
/// consumers reset), so that its safety and liveness checks cover them.
#[test]
fn the_fuzzer_exercises_retention() {
    let mut deleting = 0;
    for seed in 0..40 {
        let case = FuzzCase::generate(seed, Mix::All);
        if case
            .config
            .topics
            .iter()
            .all(|topic| topic.retention_bytes < 0 && topic.retention_ms > 60_000)
        {
            continue;
        }
        let mut simulation = Simulation::new(case.config.clone(), seed).expect("valid");
        for input in &case.inputs {
            simulation.schedule(input.clone());
        }
        simulation.run_until(case.check_at_ms);
        if simulation
            .trace()
            .iter()
            .any(|event| matches!(event.kind, TraceKind::SegmentsDeleted { .. }))
        {
            deleting += 1;
        }
    }
    assert!(deleting >= 3, "only {deleting} of 40 fuzz cases deleted segments");
}
