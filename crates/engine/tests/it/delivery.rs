//! Delivery semantics in the simulation: what happens to each record when
//! a member crashes in the middle of a batch, by commit mode. Drawn from
//! the seeds' table ("commit-before-process is at-most-once loss;
//! commit-after is at-least-once") and Kafka's consumer documentation of
//! `enable.auto.commit`, `commitSync` and `commitAsync`.

use kafkascope_engine::sim::config::{CommitMode, Input, ScheduledInput};
use kafkascope_engine::sim::ledger::{DuplicateReason, LedgerView, NeverReason};
use kafkascope_engine::sim::trace::TraceKind;
use kafkascope_engine::sim::Simulation;

/// One member of `billing` on one partition, its handler taking 100 ms a
/// record, with `mode`; 20 records arrive at 5 s, it crashes at 6.5 s (in
/// the middle of the batch) and starts again at 8 s; its new process joins
/// once the old one's session has ended.
fn crash_mid_batch(mode: CommitMode, idempotent: bool) -> (Simulation, LedgerView) {
    let mut config = crate::simulator::billing_config(1);
    config.consumers[0].processing_ms_per_record = 100;
    config.consumers[0].commit_mode = mode;
    config.consumers[0].idempotent_handler = idempotent;
    let mut simulation = Simulation::new(config, 7).expect("valid");
    let at = |at_ms, input| ScheduledInput { at_ms, input };
    simulation.schedule(at(
        5_000,
        Input::Produce {
            producer: 0,
            key: None,
            count: 20,
            bytes: 100,
        },
    ));
    simulation.schedule(at(6_500, Input::CrashConsumer { consumer: 0 }));
    simulation.schedule(at(8_000, Input::StartConsumer { consumer: 0 }));
    simulation.run_until(90_000);
    for event in simulation.trace() {
        let line = event.line();
        if std::env::var("DEBUG_DELIVERY").is_ok() && line.contains("consumer-0") && !line.contains("delivered") {
            eprintln!("{line}");
        }
    }
    let ledger = simulation
        .ledger_views()
        .into_iter()
        .find(|view| view.group == "billing")
        .expect("billing has a ledger");
    (simulation, ledger)
}

#[test]
fn committing_before_processing_loses_the_rest_of_the_batch_on_a_crash() {
    let (simulation, ledger) = crash_mid_batch(CommitMode::BeforeProcessing, false);
    assert_eq!(ledger.processed_more, 0, "{ledger:?}");
    let lost = ledger
        .never_processed
        .iter()
        .find(|(reason, _)| *reason == NeverReason::CommittedBeforeProcessing)
        .map_or(0, |(_, count)| *count);
    assert!(lost > 0, "at most once: {ledger:?}");
    assert_eq!(ledger.processed_once + lost, 20, "{ledger:?}");
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::ProcessingInterrupted { committed_unprocessed, .. } if !committed_unprocessed.is_empty()
    )));
}

#[test]
fn committing_after_processing_processes_the_done_part_again_after_a_crash() {
    let (simulation, ledger) = crash_mid_batch(CommitMode::AfterProcessing, false);
    assert!(ledger.never_processed.is_empty(), "at least once: {ledger:?}");
    assert_eq!(ledger.processed_once + ledger.processed_more, 20, "{ledger:?}");
    assert!(ledger.processed_more > 0, "{ledger:?}");
    assert_eq!(
        ledger.duplicates,
        vec![(DuplicateReason::CrashBeforeCommit, ledger.processed_more)],
        "{ledger:?}"
    );
    assert!(simulation.trace().iter().any(|event| matches!(
        &event.kind,
        TraceKind::ProcessedAgain {
            reason: DuplicateReason::CrashBeforeCommit,
            skipped: false,
            ..
        }
    )));
}

#[test]
fn an_idempotent_handler_turns_the_duplicates_into_no_ops() {
    let (_, ledger) = crash_mid_batch(CommitMode::AfterProcessing, true);
    assert_eq!(ledger.processed_more, 0, "{ledger:?}");
    assert!(ledger.skipped_duplicates > 0, "{ledger:?}");
    assert_eq!(ledger.processed_once, 20, "{ledger:?}");
}

#[test]
fn auto_commit_reads_everything_and_counts_what_it_repeats() {
    let (_, ledger) = crash_mid_batch(CommitMode::Auto, false);
    assert!(ledger.never_processed.is_empty(), "{ledger:?}");
    assert_eq!(ledger.processed_once + ledger.processed_more, 20, "{ledger:?}");
    assert_eq!(ledger.not_yet, 0, "{ledger:?}");
}

/// With no transaction in the log, the last stable offset is the high
/// watermark: a `read_committed` member reads exactly what a
/// `read_uncommitted` one does, and its fetches say so.
#[test]
fn read_committed_reads_everything_when_no_transaction_is_open() {
    use kafkascope_engine::replication::transactions::IsolationLevel;
    let mut config = crate::simulator::billing_config(2);
    let mut audit = config.consumers[0].clone();
    audit.group = "audit".to_string();
    audit.isolation_level = IsolationLevel::ReadCommitted;
    config.consumers.push(audit);
    let mut simulation = Simulation::new(config, 3).expect("valid");
    simulation.schedule(ScheduledInput {
        at_ms: 5_000,
        input: Input::Produce {
            producer: 0,
            key: None,
            count: 30,
            bytes: 100,
        },
    });
    simulation.run_until(40_000);
    let view = simulation.view();
    let read: Vec<u64> = view.consumers.iter().map(|consumer| consumer.records_read).collect();
    assert_eq!(read, vec![30, 30], "{read:?}");
    assert_eq!(simulation.summary().invariant_violations, 0);
    assert!(view
        .brokers
        .iter()
        .flat_map(|broker| &broker.replicas)
        .all(|replica| replica.last_stable_offset == replica.high_watermark && replica.markers == 0));
    assert!(simulation
        .trace()
        .iter()
        .any(|event| event.line().contains("(consumer, read_committed)")));
}
