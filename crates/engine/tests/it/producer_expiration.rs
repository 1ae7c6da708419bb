//! Producer state the brokers forget: `producer.id.expiration.ms`.

/// `producer.id.expiration.ms`: a producer that writes nothing for that
/// long (and has no transaction open) is forgotten by every replica at
/// the next `producer.id.expiration.check.interval.ms` pass
/// (`ProducerStateManager#removeExpiredProducers`).
#[test]
fn an_idle_producer_is_forgotten_after_producer_id_expiration_ms() {
    use kafkascope_engine::sim::config::{ClusterConfig, Input, ProducerConfig, ScheduledInput, TopicConfig};
    use kafkascope_engine::sim::trace::TraceKind;
    use kafkascope_engine::sim::Simulation;
    let config = ClusterConfig {
        topics: vec![TopicConfig {
            name: "t".into(),
            partitions: 1,
            replication_factor: 3,
            min_insync_replicas: 2,
            ..TopicConfig::default()
        }],
        producers: vec![ProducerConfig::new("t")],
        producer_id_expiration_ms: 60_000,
        producer_id_expiration_check_interval_ms: 10_000,
        ..ClusterConfig::default()
    };
    let mut simulation = Simulation::new(config, 1).expect("a valid cluster");
    simulation.schedule(ScheduledInput {
        at_ms: 5_000,
        input: Input::Produce {
            producer: 0,
            key: None,
            count: 3,
            bytes: 100,
        },
    });
    let known = |simulation: &Simulation| {
        simulation
            .brokers()
            .values()
            .filter(|broker| {
                broker
                    .logs
                    .values()
                    .any(|log| !log.producers.active_producers().is_empty())
            })
            .count()
    };
    simulation.run_until(30_000);
    assert_eq!(known(&simulation), 3, "every replica knows the producer");
    simulation.run_until(61_000);
    assert_eq!(known(&simulation), 3, "not idle for a minute yet");
    simulation.run_until(90_000);
    assert_eq!(known(&simulation), 0, "forgotten everywhere");
    assert!(simulation
        .trace()
        .iter()
        .any(|event| matches!(event.kind, TraceKind::ProducersExpired { .. })));
}
