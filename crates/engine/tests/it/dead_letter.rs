//! Poison records and the dead letter queue: the application's policy,
//! not a broker rule. A handler that gives up sends the record to
//! `<topic>.DLQ` with headers naming where it came from (Kafka Connect's
//! `DeadLetterQueueReporter` header names) and goes on; without a policy
//! the exception stops the member, and closing an auto-committing consumer
//! commits past what it never handled.

use kafkascope_engine::sim::config::{
    AfterFailures, ClusterConfig, CommitMode, ConsumerConfig, FailurePolicy, Input, OffsetReset, ProducerConfig,
    ScheduledInput, TopicConfig,
};
use kafkascope_engine::sim::consumer::ConsumerPhase;
use kafkascope_engine::sim::ledger::NeverReason;
use kafkascope_engine::sim::trace::TraceKind;
use kafkascope_engine::sim::Simulation;

fn config(policy: FailurePolicy, mode: CommitMode) -> ClusterConfig {
    let topic = |name: &str, partitions| TopicConfig {
        name: name.into(),
        partitions,
        replication_factor: 3,
        min_insync_replicas: 2,
        ..TopicConfig::default()
    };
    let mut consumer = ConsumerConfig::new("billing", vec!["orders".into()]);
    consumer.auto_offset_reset = OffsetReset::Earliest;
    consumer.processing_ms_per_record = 10;
    consumer.commit_mode = mode;
    consumer.on_failure = policy;
    let mut audit = ConsumerConfig::new("dlq-audit", vec!["orders.DLQ".into()]);
    audit.auto_offset_reset = OffsetReset::Earliest;
    ClusterConfig {
        topics: vec![topic("orders", 1), topic("orders.DLQ", 1)],
        producers: vec![ProducerConfig::new("orders"), ProducerConfig::new("orders.DLQ")],
        consumers: vec![consumer, audit],
        offsets_topic_partitions: 3,
        ..ClusterConfig::default()
    }
}

fn run(config: ClusterConfig) -> Simulation {
    let mut simulation = Simulation::new(config, 2).expect("valid");
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    let produce = |key: &str, count| Input::Produce {
        producer: 0,
        key: Some(key.into()),
        count,
        bytes: 100,
    };
    for input in [
        at(
            1_000,
            Input::PoisonRecords {
                topic: "orders".into(),
                key: Some("bad".into()),
                partition: None,
                offset: None,
            },
        ),
        at(5_000, produce("good", 3)),
        at(5_000, produce("bad", 1)),
        at(5_000, produce("good", 3)),
    ] {
        simulation.schedule(input);
    }
    simulation.run_until(30_000);
    simulation
}

#[test]
fn a_poison_record_goes_to_the_dead_letter_topic_with_its_origin_and_the_group_goes_on() {
    let policy = FailurePolicy {
        retries: 2,
        backoff_ms: 100,
        then: AfterFailures::DeadLetter,
        dead_letter_producer: Some(1),
    };
    let simulation = run(config(policy, CommitMode::AfterProcessing));
    let letters: Vec<(u32, u64)> = simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::DeadLettered {
                attempts,
                dead_letter,
                offset,
                ..
            } => Some((*attempts, *dead_letter)).filter(|_| *offset == 3),
            _ => None,
        })
        .collect();
    assert_eq!(letters.len(), 1, "the record at offset 3 is dead-lettered once");
    let (attempts, letter) = letters[0];
    assert_eq!(attempts, 3, "the first try and two retries");
    let headers = simulation.records()[letter as usize]
        .dead_letter
        .clone()
        .expect("headers");
    assert_eq!(
        headers.headers()[..3],
        [
            ("__connect.errors.topic", "orders".to_string()),
            ("__connect.errors.partition", "0".to_string()),
            ("__connect.errors.offset", "3".to_string()),
        ]
    );
    let ledger = simulation.ledger_views();
    let billing = ledger.iter().find(|view| view.group == "billing").expect("billing");
    assert_eq!(
        (billing.processed_once, billing.dead_lettered, billing.processed_more),
        (6, 1, 0)
    );
    assert!(billing.never_processed.is_empty(), "{billing:?}");
    assert_eq!(
        simulation.consumers()[1].records_read,
        1,
        "dlq-audit reads the dead letter"
    );
    assert_eq!(
        simulation.consumers()[0].phase,
        ConsumerPhase::Consuming,
        "billing goes on"
    );
}

#[test]
fn without_a_policy_the_failure_stops_the_member_and_auto_commit_on_close_skips_the_rest() {
    let simulation = run(config(FailurePolicy::default(), CommitMode::Auto));
    assert_eq!(simulation.consumers()[0].phase, ConsumerPhase::Stopped);
    let billing = simulation
        .ledger_views()
        .into_iter()
        .find(|view| view.group == "billing")
        .expect("billing");
    assert_eq!(billing.processed_once, 3, "{billing:?}");
    assert_eq!(
        billing.never_processed,
        vec![(NeverReason::SkippedWhenTheHandlerFailed, 4)],
        "the poison record and the three after it: committed on close, never handled"
    );
    // With manual commits nothing is committed past them: they stay ahead.
    let simulation = run(config(FailurePolicy::default(), CommitMode::AfterProcessing));
    let billing = simulation
        .ledger_views()
        .into_iter()
        .find(|view| view.group == "billing")
        .expect("billing");
    assert!(billing.never_processed.is_empty(), "{billing:?}");
    assert_eq!(billing.not_yet, 4, "{billing:?}");
}

#[test]
fn a_dead_letter_policy_needs_the_topic_s_dead_letter_producer() {
    let refused = |policy: FailurePolicy| match Simulation::new(config(policy, CommitMode::Auto), 1) {
        Err(error) => error,
        Ok(_) => panic!("accepted"),
    };
    let dead_letter = |producer| FailurePolicy {
        then: AfterFailures::DeadLetter,
        dead_letter_producer: producer,
        ..FailurePolicy::default()
    };
    assert!(refused(dead_letter(None)).contains("needs a deadLetterProducer"));
    assert!(refused(dead_letter(Some(0))).contains("not to the dead letter topic orders.DLQ"));
    assert!(refused(dead_letter(Some(7))).contains("not one of the 2 producers"));
    assert!(refused(FailurePolicy {
        retries: 1_000,
        ..FailurePolicy::default()
    })
    .contains("retries must be at most 100"));
}
