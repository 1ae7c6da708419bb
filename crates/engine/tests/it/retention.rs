//! Retention and compaction in the running simulation: brokers delete
//! whole closed segments on their retention check
//! (`UnifiedLog#deleteOldSegments`), the log start offset moves on every
//! replica, and a consumer whose position fell below it gets
//! `OFFSET_OUT_OF_RANGE` and goes where `auto.offset.reset` says; the log
//! cleaner compacts logs, `__consumer_offsets` included, and what it keeps
//! is enough to rebuild a coordinator's state.

use kafkascope_engine::groups::assignors::TopicPartition;
use kafkascope_engine::sim::config::{
    ClusterConfig, ConfigChange, ConsumerConfig, Input, OffsetReset, ProducerConfig, ScheduledInput, TopicConfig,
};
use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
use kafkascope_engine::sim::trace::{ConsumerChange, TraceKind};
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
            internal_segment_bytes: Some(400),
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

/// The fuzzer's storage streams do make brokers delete segments (and
/// consumers reset) and compact the internal topics, so that its safety
/// and liveness checks cover them.
/// `auto.offset.reset=none` and a position retention deleted:
/// `OFFSET_OUT_OF_RANGE`, then `OffsetOutOfRangeException` from `poll()`,
/// and no reset: the application closes its consumer.
#[test]
fn reset_none_after_retention_throws_instead_of_resetting() {
    // It starts with earliest (the group has no offset yet); the operator
    // switches the policy to none while it is paused.
    let mut simulation = slow_reader(OffsetReset::Earliest);
    simulation.schedule(ScheduledInput {
        at_ms: 13_000,
        input: Input::SetConfig(ConfigChange::AutoOffsetReset {
            consumer: 0,
            reset: OffsetReset::None,
        }),
    });
    simulation.run_until(90_000);
    let trace = simulation.trace();
    assert!(trace.iter().any(|event| matches!(
        event.kind,
        TraceKind::OffsetOutOfRange {
            reset: OffsetReset::None,
            ..
        }
    )));
    assert!(!trace
        .iter()
        .any(|event| matches!(event.kind, TraceKind::OffsetReset { .. })));
    assert!(trace.iter().any(|event| matches!(
        event.kind,
        TraceKind::ConsumerStatus {
            consumer: 0,
            status: ConsumerChange::Closed
        }
    )));
}

#[test]
fn the_fuzzer_exercises_retention_and_compaction() {
    let (mut deleting, mut compacting) = (0, 0);
    for seed in 0..40 {
        let case = FuzzCase::generate(seed, Mix::All);
        let mut simulation = Simulation::new(case.config.clone(), seed).expect("valid");
        for input in &case.inputs {
            simulation.schedule(input.clone());
        }
        simulation.run_until(case.check_at_ms);
        let trace = simulation.trace();
        if trace
            .iter()
            .any(|event| matches!(event.kind, TraceKind::SegmentsDeleted { .. }))
        {
            deleting += 1;
        }
        if trace
            .iter()
            .any(|event| matches!(event.kind, TraceKind::LogCleaned { .. }))
        {
            compacting += 1;
        }
    }
    assert!(deleting >= 3, "only {deleting} of 40 fuzz cases deleted segments");
    assert!(compacting >= 3, "only {compacting} of 40 fuzz cases compacted a log");
}

/// `__consumer_offsets` in small segments with a busy cleaner: the group's
/// coordinator compacts its partition (each offset commit keyed by group,
/// topic and partition), then fails over; the new coordinator replays the
/// compacted log and has the same committed offsets.
#[test]
fn a_coordinator_that_replays_a_compacted_offsets_log_keeps_the_committed_offsets() {
    let mut consumer = ConsumerConfig::new("billing", vec!["orders".into()]);
    consumer.auto_offset_reset = OffsetReset::Earliest;
    consumer.auto_commit_interval_ms = 1_000;
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![TopicConfig {
            name: "orders".into(),
            partitions: 3,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("orders")],
        consumers: vec![consumer],
        offsets_topic_partitions: 1,
        offsets_topic_segment_bytes: 600,
        log_cleaner_backoff_ms: 2_000,
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 3).expect("valid");
    for second in 1..30u64 {
        simulation.schedule(ScheduledInput {
            at_ms: second * 1_000,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 5,
                bytes: 50,
            },
        });
    }
    simulation.run_until(35_000);
    let offsets = TopicPartition::new("__consumer_offsets", 0);
    let cleaned = simulation
        .trace()
        .iter()
        .filter(|event| matches!(&event.kind, TraceKind::LogCleaned { partition, .. } if *partition == offsets))
        .count();
    assert!(
        cleaned >= 3,
        "the offsets partition was compacted on every replica: {cleaned}"
    );
    let before = simulation.group_committed("billing");
    assert_eq!(
        before.values().sum::<u64>(),
        145,
        "every record read and committed: {before:?}"
    );
    let coordinator = simulation.controller().partitions[&offsets]
        .leader
        .expect("a coordinator");
    simulation.schedule(ScheduledInput {
        at_ms: 35_000,
        input: Input::KillBroker { broker: coordinator },
    });
    simulation.run_until(70_000);
    let after = simulation.group_committed("billing");
    assert_ne!(simulation.controller().partitions[&offsets].leader, Some(coordinator));
    assert_eq!(after, before, "the new coordinator lost committed offsets");
    assert_eq!(simulation.summary().invariant_violations, 0);
}

/// A compacted topic refuses records without a key (`LogValidator`):
/// `INVALID_RECORD`, which the producer does not retry.
#[test]
fn a_compacted_topic_refuses_keyless_records() {
    use kafkascope_engine::sim::types::ErrorCode;
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![TopicConfig {
            name: "profiles".into(),
            partitions: 1,
            replication_factor: 3,
            min_insync_replicas: 2,
            cleanup_policy: kafkascope_engine::storage::CleanupPolicy::COMPACT,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("profiles")],
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 1).expect("valid");
    for (at_ms, key) in [(2_000, None), (4_000, Some("user-1".to_string()))] {
        simulation.schedule(ScheduledInput {
            at_ms,
            input: Input::Produce {
                producer: 0,
                key,
                count: 2,
                bytes: 10,
            },
        });
    }
    simulation.run_until(10_000);
    let refused: Vec<_> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::ProduceFailed { error, will_retry, .. } => Some((*error, *will_retry)),
            _ => None,
        })
        .collect();
    assert_eq!(refused, vec![(ErrorCode::InvalidRecord, false)]);
    let summary = simulation.summary();
    assert_eq!((summary.acknowledged, summary.failed), (2, 2));
}
