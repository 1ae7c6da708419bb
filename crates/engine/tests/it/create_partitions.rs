//! Adding partitions to a live topic (`kafka-topics --alter --partitions`,
//! `ReplicationControlManager#createPartitions`): the active controller
//! writes the new partitions; producers see them at their next metadata
//! refresh (`metadata.max.age.ms`) and keys that hash differently move
//! there; a classic group's leader notices and rejoins, a KIP-848 group's
//! coordinator assigns them from the broker's metadata; refusals carry
//! Kafka's errors.

use kafkascope_engine::sim::config::{ClusterConfig, GroupProtocol, Input, ScheduledInput};
use kafkascope_engine::sim::consumer::ConsumerPhase;
use kafkascope_engine::sim::trace::TraceKind;
use kafkascope_engine::sim::types::ErrorCode;
use kafkascope_engine::sim::Simulation;

use crate::simulator::billing_config;

const KEYS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

fn send_keys(simulation: &mut Simulation, at_ms: u64) {
    for key in KEYS {
        simulation.schedule(ScheduledInput {
            at_ms,
            input: Input::Produce {
                producer: 0,
                key: Some(key.to_string()),
                count: 2,
                bytes: 100,
            },
        });
    }
}

fn grow(simulation: &mut Simulation, at_ms: u64, topic: &str, count: u32) {
    simulation.schedule(ScheduledInput {
        at_ms,
        input: Input::CreatePartitions {
            topic: topic.to_string(),
            count,
        },
    });
}

/// The partition each key's records went to, in the order they were sent.
fn partitions_by_key(simulation: &Simulation) -> Vec<(String, Vec<u32>)> {
    KEYS.iter()
        .map(|key| {
            let partitions = simulation
                .records()
                .iter()
                .filter(|record| record.key.as_deref() == Some(*key))
                .filter_map(|record| record.partition.as_ref().map(|partition| partition.partition))
                .collect();
            (key.to_string(), partitions)
        })
        .collect()
}

fn assert_group_reads_everything(simulation: &Simulation, partitions: u32) {
    let consuming: Vec<_> = simulation
        .consumers()
        .iter()
        .filter(|consumer| consumer.phase == ConsumerPhase::Consuming)
        .collect();
    assert!(!consuming.is_empty(), "no member is consuming");
    for index in 0..partitions {
        let owner = consuming
            .iter()
            .find(|consumer| consumer.assignment.iter().any(|owned| owned.partition == index))
            .unwrap_or_else(|| panic!("nobody owns orders-{index}"));
        let partition = owner
            .assignment
            .iter()
            .find(|owned| owned.partition == index)
            .expect("owned");
        let leader = simulation.controller().partitions[partition].leader.expect("a leader");
        let high_watermark = simulation.brokers()[&leader].logs[partition].high_watermark;
        assert_eq!(
            owner.positions.get(partition).copied().unwrap_or(0),
            high_watermark,
            "{partition} is not read to its end"
        );
    }
}

fn run(config: ClusterConfig) -> Simulation {
    let mut simulation = Simulation::new(config, 5).expect("valid");
    send_keys(&mut simulation, 1_000);
    grow(&mut simulation, 20_000, "orders", 4);
    // After the clients' next metadata refresh (five minutes by default).
    send_keys(&mut simulation, 400_000);
    simulation.run_until(460_000);
    simulation
}

fn created(simulation: &Simulation) -> Vec<(u32, u32)> {
    simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::PartitionsCreated { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
        .collect()
}

#[test]
fn added_partitions_take_keys_and_a_classic_group_reads_them() {
    let simulation = run(billing_config(2));
    assert_eq!(created(&simulation), vec![(2, 4)]);
    assert_eq!(simulation.topic_partition_count("orders"), 4);
    let by_key = partitions_by_key(&simulation);
    // Before: murmur2 % 2; after: murmur2 % 4. A key whose hash modulo 4 is
    // 2 or 3 moved; its new records are no longer behind its old ones.
    let moved: Vec<&String> = by_key
        .iter()
        .filter(|(_, partitions)| partitions.first() != partitions.last())
        .map(|(key, _)| key)
        .collect();
    assert!(!moved.is_empty(), "no key moved: {by_key:?}");
    for (key, partitions) in &by_key {
        let expected_before =
            kafkascope_engine::partitioning::partition_for_key(key.as_bytes(), 2).expect("partitions");
        let expected_after = kafkascope_engine::partitioning::partition_for_key(key.as_bytes(), 4).expect("partitions");
        assert_eq!(
            partitions,
            &vec![expected_before, expected_before, expected_after, expected_after]
        );
    }
    assert!(simulation.records().iter().all(|record| record.acknowledged.is_some()));
    assert_group_reads_everything(&simulation, 4);
}

#[test]
fn a_consumer_protocol_group_gets_the_new_partitions_from_its_coordinator() {
    let mut config = billing_config(2);
    config.consumers[0].group_protocol = GroupProtocol::Consumer;
    let simulation = run(config);
    assert_eq!(created(&simulation), vec![(2, 4)]);
    assert!(simulation.records().iter().all(|record| record.acknowledged.is_some()));
    assert_group_reads_everything(&simulation, 4);
}

#[test]
fn a_shorter_metadata_max_age_finds_new_partitions_sooner() {
    let mut config = billing_config(2);
    config.producers[0].metadata_max_age_ms = 10_000;
    let mut simulation = Simulation::new(config, 5).expect("valid");
    grow(&mut simulation, 1_000, "orders", 4);
    send_keys(&mut simulation, 15_000);
    simulation.run_until(20_000);
    let partitions: Vec<u32> = partitions_by_key(&simulation)
        .into_iter()
        .flat_map(|(_, partitions)| partitions)
        .collect();
    assert!(partitions.iter().any(|&partition| partition >= 2), "{partitions:?}");
}

#[test]
fn refusals_carry_kafkas_errors() {
    let mut simulation = Simulation::new(billing_config(3), 5).expect("valid");
    grow(&mut simulation, 1_000, "orders", 3);
    grow(&mut simulation, 2_000, "orders", 2);
    grow(&mut simulation, 3_000, "missing", 4);
    grow(&mut simulation, 4_000, "orders", 5_000);
    simulation.run_until(10_000);
    let errors: Vec<(String, u32, ErrorCode)> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::CreatePartitionsFailed { topic, count, error } => Some((topic.clone(), *count, *error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        errors,
        vec![
            ("orders".to_string(), 3, ErrorCode::InvalidPartitions),
            ("orders".to_string(), 2, ErrorCode::InvalidPartitions),
            ("missing".to_string(), 4, ErrorCode::UnknownTopicOrPartition),
        ]
    );
    assert!(simulation
        .trace()
        .iter()
        .any(|event| matches!(&event.kind, TraceKind::LimitReached { what, .. } if what == "partitions")));
    assert_eq!(simulation.topic_partition_count("orders"), 3);
    assert!(simulation
        .check_input(&Input::CreatePartitions {
            topic: "orders".into(),
            count: 5_000
        })
        .is_err());
}

/// A crashed broker still registered may get a replica (out of the ISR
/// until it is back); with every broker fenced the placer refuses.
#[test]
fn fenced_brokers_get_replicas_but_not_the_isr_and_all_fenced_is_refused() {
    let mut simulation = Simulation::new(billing_config(2), 5).expect("valid");
    simulation.schedule(ScheduledInput {
        at_ms: 500,
        input: Input::KillBroker { broker: 3 },
    });
    // After the broker session (9 s) the controller fences it.
    grow(&mut simulation, 20_000, "orders", 5);
    simulation.run_until(25_000);
    assert_eq!(created(&simulation), vec![(2, 5)]);
    for index in 2..5 {
        let registration = &simulation.controller().partitions
            [&kafkascope_engine::groups::assignors::TopicPartition::new("orders", index)];
        assert_eq!(registration.replicas.len(), 3);
        assert!(
            registration.replicas.contains(&3),
            "every broker holds a replica with RF 3"
        );
        assert!(!registration.isr.contains(&3), "a fenced broker is not in the ISR");
        assert_ne!(registration.leader, Some(3));
    }
    for broker in [1, 2] {
        simulation.schedule(ScheduledInput {
            at_ms: 26_000,
            input: Input::KillBroker { broker },
        });
    }
    grow(&mut simulation, 50_000, "orders", 6);
    simulation.run_until(55_000);
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::CreatePartitionsFailed {
            error: ErrorCode::InvalidReplicationFactor,
            ..
        }
    )));
    assert_eq!(simulation.topic_partition_count("orders"), 5);
}

/// The fault fuzzer adds partitions to a topic in some of its cases (an
/// operator's `kafka-topics --alter` during the faults or soon after), and
/// the clients find them.
#[test]
fn the_fuzzer_adds_partitions_under_faults() {
    use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
    let mut grown = 0;
    for seed in 0..40 {
        let case = FuzzCase::generate(seed, Mix::All);
        if !case
            .inputs
            .iter()
            .any(|input| matches!(input.input, Input::CreatePartitions { .. }))
        {
            continue;
        }
        let verdict = case.run();
        assert!(verdict.passed(), "seed {seed}: {verdict:?}");
        grown += 1;
    }
    assert!(grown >= 3, "only {grown} of 40 fuzz cases added partitions");
}
