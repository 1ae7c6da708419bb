//! Power loss (issue #36, item 1): each log keeps a flushed prefix (its
//! recovery point) and the rest lives in the page cache; a process crash
//! keeps it, a power loss does not. Kafka flushes when `flush.messages` or
//! `flush.ms` say so (by default never), when a segment rolls, and at a
//! clean shutdown.

use kafkascope_engine::protocol::TopicPartition;
use kafkascope_engine::sim::checks;
use kafkascope_engine::sim::jepsen::NotJudged;
use kafkascope_engine::sim::scenario::Scenario;
use kafkascope_engine::sim::trace::{LossCause, TraceKind, TruncationReason};
use kafkascope_engine::sim::Simulation;

/// Three brokers, one topic of one partition on all three with
/// `min.insync.replicas=2`, an `acks=all` producer and a reader; `topic`
/// and `cluster` add settings (each ending in a comma when not empty).
fn play(topic: &str, cluster: &str, inputs: &str, until_ms: u64) -> Simulation {
    let text = format!(
        r#"{{"name": "power", "description": "", "seed": 3, "runUntilMs": {until_ms},
        "config": {{"brokers": 3, {cluster}
          "topics": [{{{topic} "name": "t", "partitions": 1, "replicationFactor": 3, "minInsyncReplicas": 2}}],
          "producers": [{{"topic": "t", "acks": "all"}}],
          "consumers": [{{"group": "g", "topics": ["t"], "autoOffsetReset": "earliest"}}]}},
        "inputs": [{{"atMs": 2000, "input": {{"type": "produce", "producer": 0, "count": 10}}}} {inputs}]}}"#
    );
    Scenario::from_json(&text)
        .expect("parses")
        .run_with_history()
        .expect("plays")
        .simulation
}

/// Every broker loses power at 5 s and restarts at 8 s.
const EVERY_BROKER_LOSES_POWER: &str = r#", {"atMs": 5000, "input": {"type": "powerLoss", "brokers": [1, 2, 3]}},
    {"atMs": 8000, "input": {"type": "restartBroker", "broker": 1}},
    {"atMs": 8000, "input": {"type": "restartBroker", "broker": 2}},
    {"atMs": 8000, "input": {"type": "restartBroker", "broker": 3}}"#;

/// (broker, records removed) for each log a power loss cut.
fn power_cuts(simulation: &Simulation) -> Vec<(u32, u64)> {
    simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::Truncated {
                broker,
                removed,
                reason: TruncationReason::PowerLoss,
                partition,
                ..
            } if partition.topic.as_ref() == "t" => Some((*broker, *removed)),
            _ => None,
        })
        .collect()
}

/// The causes named for acknowledged records lost, in order.
fn loss_causes(simulation: &Simulation) -> Vec<LossCause> {
    simulation
        .trace()
        .iter()
        .filter_map(|event| match &event.kind {
            TraceKind::RecordsLost { reason, .. } => Some(reason.causes.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

fn violations(simulation: &Simulation) -> usize {
    simulation
        .trace()
        .iter()
        .filter(|event| matches!(event.kind, TraceKind::InvariantViolated { .. }))
        .count()
}

fn lost(simulation: &Simulation) -> usize {
    simulation.records().iter().filter(|record| record.lost).count()
}

#[test]
fn a_power_loss_of_one_replica_cuts_its_log_and_loses_nothing_acknowledged() {
    let simulation = play(
        "",
        "",
        r#", {"atMs": 5000, "input": {"type": "powerLoss", "brokers": [1]}},
           {"atMs": 8000, "input": {"type": "restartBroker", "broker": 1}}"#,
        60_000,
    );
    let cuts = power_cuts(&simulation);
    assert_eq!(
        cuts,
        vec![(1, 10)],
        "nothing was flushed: the whole log was in the page cache"
    );
    assert_eq!(lost(&simulation), 0);
    assert_eq!(violations(&simulation), 0);
    // It fetched everything again from the leader.
    let log = &simulation.brokers()[&1].logs[&TopicPartition::new("t", 0)];
    assert_eq!(log.log_end_offset(), 10);
    // A process crash keeps the page cache: nothing is cut.
    let crashed = play(
        "",
        "",
        r#", {"atMs": 5000, "input": {"type": "killBroker", "broker": 1}},
           {"atMs": 8000, "input": {"type": "restartBroker", "broker": 1}}"#,
        20_000,
    );
    assert!(power_cuts(&crashed).is_empty());
}

/// Every replica loses power at once: each log loses its unflushed tail.
/// With eligible leader replicas off (before Kafka 4.1's default), the
/// last replica of the ISR leads again with what its disk kept, and the
/// acknowledged records are lost, named as the power loss's (never a
/// silent loss, never counted as a broken guarantee: Kafka promises no
/// more when every replica loses what it had not flushed).
#[test]
fn a_power_loss_of_every_replica_loses_the_unflushed_records_and_names_the_cause() {
    let simulation = play(
        "",
        r#""eligibleLeaderReplicasEnable": false,"#,
        EVERY_BROKER_LOSES_POWER,
        60_000,
    );
    let mut cut: Vec<u32> = power_cuts(&simulation).iter().map(|(broker, _)| *broker).collect();
    cut.sort_unstable();
    assert_eq!(cut, vec![1, 2, 3]);
    assert_eq!(lost(&simulation), 10, "{:?}", loss_causes(&simulation));
    assert_eq!(loss_causes(&simulation), vec![LossCause::PowerLoss]);
    assert_eq!(violations(&simulation), 0);
    // Named, and Kafka's design: no safety failure for the fuzzer.
    assert_eq!(checks::safety_failures(&simulation, true), Vec::<String>::new());
}

/// After every replica lost the records, new ones take their offsets:
/// Jepsen's checks would see two values at one offset. The verdict does
/// not judge a partition whose acknowledged records a power loss erased
/// from every replica that could lead; the ledger has named the loss.
#[test]
fn after_a_power_loss_of_every_replica_the_rewritten_partition_is_not_judged() {
    let simulation = play(
        "",
        r#""eligibleLeaderReplicasEnable": false,"#,
        &format!(
            r#"{EVERY_BROKER_LOSES_POWER},
            {{"atMs": 30000, "input": {{"type": "produce", "producer": 0, "count": 5}}}}"#
        ),
        60_000,
    );
    assert_eq!(loss_causes(&simulation), vec![LossCause::PowerLoss]);
    let verdict = simulation.jepsen_verdict().expect("kept");
    assert!(verdict.findings.is_empty(), "{verdict}");
    assert!(
        verdict.not_judged.iter().any(|(_, why)| *why == NotJudged::PowerLoss),
        "{verdict}"
    );
    assert!(
        verdict.to_string().contains("a power loss erased acknowledged records"),
        "{verdict}"
    );
}

#[test]
fn flush_messages_one_keeps_every_record_through_a_power_loss() {
    let simulation = play(
        r#""flushMessages": 1,"#,
        r#""eligibleLeaderReplicasEnable": false,"#,
        EVERY_BROKER_LOSES_POWER,
        60_000,
    );
    assert!(power_cuts(&simulation).is_empty());
    assert_eq!(lost(&simulation), 0);
}

#[test]
fn a_clean_shutdown_flushes_every_log() {
    let simulation = play(
        "",
        "",
        r#", {"atMs": 5000, "input": {"type": "stopBroker", "broker": 1}},
           {"atMs": 30000, "input": {"type": "powerLoss", "brokers": [1]}}"#,
        35_000,
    );
    assert!(power_cuts(&simulation).is_empty());
}

/// `flush.ms` alone does nothing: the broker's log flusher runs every
/// `log.flush.scheduler.interval.ms`, which is never unless set.
#[test]
fn flush_ms_needs_the_log_flusher_to_run() {
    let inputs = r#", {"atMs": 40000, "input": {"type": "powerLoss", "brokers": [1]}}"#;
    let without_flusher = play(r#""flushMs": 1000,"#, "", inputs, 41_000);
    assert_eq!(power_cuts(&without_flusher), vec![(1, 10)]);
    let with_flusher = play(
        r#""flushMs": 1000,"#,
        r#""logFlushSchedulerIntervalMs": 500,"#,
        inputs,
        41_000,
    );
    assert!(power_cuts(&with_flusher).is_empty());
}

/// A segment roll flushes the segments it closes (`UnifiedLog#roll`).
#[test]
fn a_segment_roll_flushes_the_closed_segments() {
    // Ten records in one batch, then four batches of one: the small
    // segments roll between them.
    let simulation = play(
        r#""internalSegmentBytes": 400,"#,
        "",
        r#", {"atMs": 3000, "input": {"type": "produce", "producer": 0}},
           {"atMs": 3100, "input": {"type": "produce", "producer": 0}},
           {"atMs": 3200, "input": {"type": "produce", "producer": 0}},
           {"atMs": 3300, "input": {"type": "produce", "producer": 0}},
           {"atMs": 5000, "input": {"type": "powerLoss", "brokers": [1]}}"#,
        6_000,
    );
    let log = &simulation.brokers()[&1].logs[&TopicPartition::new("t", 0)];
    let cuts = power_cuts(&simulation);
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    let (_, removed) = cuts[0];
    assert!(removed > 0 && removed < 14, "{cuts:?}");
    assert_eq!(log.log_end_offset(), 14 - removed);
    assert_eq!(
        log.log.segments().last().map(|segment| segment.base_offset),
        Some(log.log_end_offset())
    );
}

#[test]
fn wrong_power_settings_are_refused_with_where() {
    let refused = |topic: &str, cluster: &str, inputs: &str| {
        let text = format!(
            r#"{{"name": "power", "description": "", "seed": 3, "runUntilMs": 1000,
            "config": {{"brokers": 3, {cluster} "topics": [{{{topic} "name": "t"}}]}},
            "inputs": [{inputs}]}}"#
        );
        match Scenario::from_json(&text).and_then(|scenario| scenario.run().map(drop)) {
            Ok(()) => panic!("accepted: {text}"),
            Err(error) => error,
        }
    };
    assert!(refused(r#""flushMessages": 0,"#, "", "").contains("flush.messages"));
    assert!(refused("", r#""logFlushSchedulerIntervalMs": 0,"#, "").contains("logFlushSchedulerIntervalMs"));
    let wrong_broker = refused(
        "",
        "",
        r#"{"atMs": 10, "input": {"type": "powerLoss", "brokers": [1, 9]}}"#,
    );
    assert!(wrong_broker.contains("not broker 9"), "{wrong_broker}");
}

/// The fuzzer cuts power in one case of three: of one broker at a time
/// (seed 3: a minority of every partition's replicas, nothing acknowledged
/// lost, the case judged as safe), or of every broker at once (seed 31:
/// acknowledged records no replica had flushed are gone, each named as
/// lost to the power loss, and the case is judged as lossy). Seed 7182
/// cut every broker too: `__transaction_state` lost the exactly-once
/// app's producer id, its producer stopped on a fatal error with a batch
/// in flight, and that batch fails with it rather than waiting forever.
#[test]
fn the_fuzzer_cuts_power_and_judges_a_correlated_loss_as_lossy() {
    use kafkascope_engine::sim::config::Input;
    use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
    let cuts = |case: &FuzzCase| -> Vec<usize> {
        case.inputs
            .iter()
            .filter_map(|input| match &input.input {
                Input::PowerLoss { brokers } => Some(brokers.len()),
                _ => None,
            })
            .collect()
    };
    let powered = (0..60)
        .filter(|&seed| !cuts(&FuzzCase::generate(seed, Mix::All)).is_empty())
        .count();
    assert!(powered > 10, "{powered}");

    let one = FuzzCase::generate(3, Mix::All);
    assert_eq!(cuts(&one), vec![1]);
    let verdict = one.run();
    assert!(verdict.passed(), "{verdict:?}");
    assert!(
        !verdict.correlated_power_loss && verdict.lost_to_power == 0,
        "{verdict:?}"
    );

    for seed in [31, 7182] {
        let case = FuzzCase::generate(seed, Mix::All);
        assert!(case.safe);
        let cut = cuts(&case);
        assert!(
            cut.len() == 1 && cut[0] >= 3,
            "seed {seed}: every broker at once, {cut:?}"
        );
        let verdict = case.run();
        assert!(verdict.passed(), "seed {seed}: {verdict:?}");
        assert!(verdict.correlated_power_loss, "seed {seed}: {verdict:?}");
    }
    assert!(FuzzCase::generate(31, Mix::All).run().lost_to_power > 0);
}
