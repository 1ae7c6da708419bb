//! Client quotas in the running simulation (`ClientQuotaManager`,
//! KIP-219): a fetch over `consumer_byte_rate` is answered empty with a
//! throttle time; the broker mutes the client's connection for that
//! time and the client sends nothing there until it is over; requests
//! waiting in a muted connection do not time out. And
//! `auto.offset.reset=none`: `poll()` throws where the other policies
//! would move the position.

use kafkascope_engine::sim::config::{
    ClientQuota, ClusterConfig, ConsumerConfig, Input, OffsetReset, ProducerConfig, QuotaType, ScheduledInput,
    TopicConfig,
};
use kafkascope_engine::sim::trace::{ConsumerChange, TraceKind};
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::Simulation;

fn topic() -> TopicConfig {
    TopicConfig {
        name: "events".into(),
        partitions: 1,
        replication_factor: 3,
        min_insync_replicas: 2,
        ..TopicConfig::default()
    }
}

fn throttles(simulation: &Simulation, client: NodeId) -> Vec<(u64, QuotaType)> {
    simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::Throttled {
                client: throttled,
                throttle_time_ms,
                quota,
                ..
            } if *throttled == client => Some((*throttle_time_ms, *quota)),
            _ => None,
        })
        .collect()
}

/// Two groups read the same 2000-record backlog; the `reports` client
/// has a 3000 B/s fetch quota, the other none. The throttled one is
/// answered empty and keeps to about its rate, yet reads everything;
/// the other reads the backlog at once and is never throttled.
#[test]
fn a_fetch_quota_slows_one_consumer_and_not_the_other() {
    let mut slow = ConsumerConfig::new("reports", vec!["events".into()]);
    slow.auto_offset_reset = OffsetReset::Earliest;
    slow.client_id = Some("reports".into());
    let mut fast = ConsumerConfig::new("alerts", vec!["events".into()]);
    fast.auto_offset_reset = OffsetReset::Earliest;
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![topic()],
        producers: vec![ProducerConfig::new("events")],
        consumers: vec![slow, fast],
        offsets_topic_partitions: 1,
        quotas: vec![ClientQuota {
            client_id: Some("reports".into()),
            producer_byte_rate: None,
            consumer_byte_rate: Some(3_000),
        }],
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 11).expect("a valid cluster");
    simulation.schedule(ScheduledInput {
        at_ms: 1_000,
        input: Input::Produce {
            producer: 0,
            key: None,
            count: 2_000,
            bytes: 100,
        },
    });
    simulation.run_until(30_000);
    let view = simulation.view();
    let read = |id: u32| view.consumers[id as usize].records_read;
    assert_eq!(read(1), 2_000, "the unthrottled group read the backlog");
    assert!(read(0) < 2_000, "the throttled group is still reading: {}", read(0));
    // About 3000 B/s: a 100-byte record is about 70 bytes on the wire in
    // batches, so a few hundred records in the first half minute (one
    // 500-record fetch before the rate is known, then the quota).
    assert!(read(0) <= 500 + 30 * 3_000 / 60, "read {} records", read(0));
    let slow_throttles = throttles(&simulation, NodeId::Consumer(0));
    assert!(!slow_throttles.is_empty());
    assert!(slow_throttles.iter().all(|(_, quota)| *quota == QuotaType::Fetch));
    assert!(throttles(&simulation, NodeId::Consumer(1)).is_empty());
    assert!(view.consumers[0].throttled_until.is_some() || read(0) > 0);
    // Every throttled answer was empty.
    simulation.run_until(400_000);
    assert_eq!(
        simulation.view().consumers[0].records_read,
        2_000,
        "it read everything in the end"
    );
}

/// A 1000 B/s produce quota and four 15 KB sends a millisecond apart
/// (`acks=1`, so each is answered as it arrives): the first answer
/// throttles the producer and mutes its connection, the broker holds the
/// other requests unread until the mute is over, and the last is answered
/// long after `request.timeout.ms` (30 s). None of them times out,
/// because each throttle time the producer hears of extends the requests
/// it has in flight on that connection.
#[test]
fn requests_held_by_a_muted_connection_do_not_time_out() {
    let mut producer = ProducerConfig::new("events");
    producer.linger_ms = 0;
    producer.acks = kafkascope_engine::replication::high_watermark::Acks::Leader;
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![topic()],
        producers: vec![producer],
        offsets_topic_partitions: 1,
        quotas: vec![ClientQuota {
            client_id: None,
            producer_byte_rate: Some(1_000),
            consumer_byte_rate: None,
        }],
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 3).expect("a valid cluster");
    for step in 0..4 {
        simulation.schedule(ScheduledInput {
            at_ms: 1_000 + step,
            input: Input::Produce {
                producer: 0,
                key: None,
                count: 140,
                bytes: 100,
            },
        });
    }
    simulation.run_until(150_000);
    let view = simulation.view();
    assert_eq!(view.producers[0].acknowledged, 560);
    assert_eq!(view.producers[0].failed, 0);
    let failed = simulation
        .trace()
        .iter()
        .any(|event| matches!(event.kind, TraceKind::ProduceFailed { .. }));
    assert!(!failed, "a request held in the muted connection failed (timed out)");
    let throttled_at: Vec<u64> = simulation
        .trace()
        .iter()
        .filter(|event| matches!(event.kind, TraceKind::Throttled { .. }))
        .map(|event| event.time)
        .collect();
    assert!(throttled_at.len() >= 3, "{throttled_at:?}");
    let last = throttled_at.iter().copied().max().expect("throttled");
    assert!(last > 31_000, "the last answer came at {last} ms: {throttled_at:?}");
}

fn closed(simulation: &Simulation, consumer: u32) -> bool {
    simulation.trace().iter().any(|event| {
        matches!(
            event.kind,
            TraceKind::ConsumerStatus { consumer: id, status: ConsumerChange::Closed } if id == consumer
        )
    })
}

/// `auto.offset.reset=none` and a group with no committed offset:
/// `poll()` throws `NoOffsetForPartitionException`; the application does
/// not catch it and closes its consumer.
#[test]
fn reset_none_without_a_committed_offset_throws() {
    let mut consumer = ConsumerConfig::new("strict", vec!["events".into()]);
    consumer.auto_offset_reset = OffsetReset::None;
    let config = ClusterConfig {
        brokers: 3,
        topics: vec![topic()],
        producers: vec![ProducerConfig::new("events")],
        consumers: vec![consumer],
        offsets_topic_partitions: 1,
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 5).expect("a valid cluster");
    simulation.run_until(20_000);
    assert!(simulation
        .trace()
        .iter()
        .any(|event| matches!(event.kind, TraceKind::NoOffsetForPartition { .. })));
    assert!(closed(&simulation, 0));
    assert!(simulation.view().consumers[0].partitions.is_empty());
}

/// A third of the fuzzer's cases put clients under default quotas; some
/// of them get throttled, producers and consumers both.
#[test]
fn the_fuzzer_exercises_quotas() {
    use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
    let (mut produce, mut fetch) = (0, 0);
    for seed in 0..40 {
        let case = FuzzCase::generate(seed, Mix::All);
        if case.config.quotas.is_empty() {
            continue;
        }
        let mut simulation = Simulation::new(case.config.clone(), seed).expect("valid");
        for input in &case.inputs {
            simulation.schedule(input.clone());
        }
        simulation.run_until(case.check_at_ms);
        let kinds: Vec<QuotaType> = simulation
            .trace()
            .iter()
            .filter_map(|event| match event.kind {
                TraceKind::Throttled { quota, .. } => Some(quota),
                _ => None,
            })
            .collect();
        produce += usize::from(kinds.contains(&QuotaType::Produce));
        fetch += usize::from(kinds.contains(&QuotaType::Fetch));
    }
    assert!(produce >= 2, "only {produce} of 40 fuzz cases throttled a producer");
    assert!(fetch >= 2, "only {fetch} of 40 fuzz cases throttled a consumer");
}

/// Quota, compaction and reset changes are inputs of the scenario format
/// (what the sandbox's `cluster.input` takes), each with Kafka's names.
#[test]
fn quota_and_topic_changes_read_from_scenario_json() {
    let inputs = [
        r#"{"type":"setConfig","knob":"quota","clientId":"reports","consumerByteRate":2000}"#,
        r#"{"type":"setConfig","knob":"quota","producerByteRate":500}"#,
        r#"{"type":"setConfig","knob":"cleanupPolicy","topic":"events","policy":"compact,delete"}"#,
        r#"{"type":"setConfig","knob":"minCleanableDirtyRatio","topic":"events","ratio":0.1}"#,
        r#"{"type":"setConfig","knob":"topicStorage","topic":"events","setting":"delete.retention.ms","value":1000}"#,
        r#"{"type":"setConfig","knob":"autoOffsetReset","consumer":0,"reset":"none"}"#,
    ];
    let config = ClusterConfig {
        brokers: 1,
        topics: vec![TopicConfig {
            replication_factor: 1,
            min_insync_replicas: 1,
            ..topic()
        }],
        consumers: vec![ConsumerConfig::new("g", vec!["events".into()])],
        offsets_topic_partitions: 1,
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 1).expect("a valid cluster");
    for text in inputs {
        let input: Input = serde_json::from_str(text).unwrap_or_else(|error| panic!("{text}: {error}"));
        let at_ms = simulation.now();
        simulation.schedule(ScheduledInput { at_ms, input });
        simulation.run_until(at_ms + 1);
    }
    let config = simulation.config();
    assert_eq!(config.client_quota("reports", QuotaType::Fetch), Some(2_000));
    assert_eq!(config.client_quota("reports", QuotaType::Produce), Some(500));
    assert_eq!(config.client_quota("other", QuotaType::Fetch), None);
    let topic = &config.topics[0];
    assert_eq!(
        topic.cleanup_policy,
        kafkascope_engine::storage::CleanupPolicy::COMPACT_DELETE
    );
    assert_eq!(topic.min_cleanable_dirty_ratio.0, 0.1);
    assert_eq!(topic.delete_retention_ms, 1_000);
    assert_eq!(config.consumers[0].auto_offset_reset, OffsetReset::None);
    let refused: Input =
        serde_json::from_str(r#"{"type":"setConfig","knob":"quota","producerByteRate":0}"#).expect("parses");
    let at_ms = simulation.now();
    simulation.schedule(ScheduledInput { at_ms, input: refused });
    simulation.run_until(at_ms + 1);
    assert!(simulation
        .trace()
        .iter()
        .any(|event| matches!(&event.kind, TraceKind::ChangeRefused { reason, .. } if reason.contains("at least 1"))));
}
