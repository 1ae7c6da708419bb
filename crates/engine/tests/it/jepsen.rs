//! Jepsen's checks over the simulator's own runs (`sim::jepsen`): the
//! history a run keeps, and the verdict on it, for scenarios whose
//! anomaly (or its absence) is known.

use kafkascope_engine::history::{AnomalyKind, Finding};
use kafkascope_engine::sim::jepsen::{NotJudged, Verdict};
use kafkascope_engine::sim::scenario::{Outcome, Scenario};
use kafkascope_engine::sim::trace::TraceKind;

fn scenario(path: &str) -> Scenario {
    let text =
        std::fs::read_to_string(format!("{}/../../scenarios/{path}", env!("CARGO_MANIFEST_DIR"))).expect("reads");
    Scenario::from_json(&text).expect("parses")
}

/// A scenario played with its history kept, every expectation met.
fn played_with_history(path: &str) -> Outcome {
    let outcome = scenario(path).run_with_history().expect("plays");
    assert!(outcome.failures.is_empty(), "{path}: {:?}", outcome.failures);
    outcome
}

fn verdict_of(path: &str) -> Verdict {
    let outcome = scenario(path).run_with_history().expect("plays");
    outcome.simulation.jepsen_verdict().expect("the run kept its history")
}

/// The values of every finding, in order.
fn finding_values(verdict: &Verdict) -> Vec<u64> {
    verdict
        .findings
        .iter()
        .flat_map(|finding| finding.values.clone())
        .collect()
}

fn kinds(verdict: &Verdict) -> Vec<AnomalyKind> {
    let mut kinds: Vec<AnomalyKind> = verdict.findings.iter().map(|finding| finding.kind).collect();
    kinds.dedup();
    kinds
}

#[test]
fn keeping_the_history_changes_nothing_in_the_run() {
    for path in [
        "happy-path.json",
        "exactly-once-consume-transform-produce.json",
        "rebalance-storm.json",
    ] {
        // Without the expectations that need the history.
        let mut without = scenario(path);
        without.expect.retain(|expectation| !expectation.needs_history());
        let plain = without.run().expect("plays");
        let judged = scenario(path).run_with_history().expect("plays");
        assert_eq!(plain.simulation.trace_hash(), judged.simulation.trace_hash(), "{path}");
        assert!(plain.simulation.jepsen_verdict().is_none());
    }
}

#[test]
fn safe_runs_with_readers_show_no_anomaly() {
    for path in [
        "happy-path.json",
        "at-least-once-commit-after-processing.json",
        "exactly-once-consume-transform-produce.json",
        "read-committed-skips-aborted.json",
        "rebalance-storm.json",
        "rebalance-storm-cooperative.json",
        "rebalance-storm-kip848.json",
        "coordinator-failover-keeps-the-group.json",
        "transactions-bump-the-epoch-at-every-end.json",
    ] {
        let verdict = verdict_of(path);
        assert!(verdict.findings.is_empty(), "{path}: {verdict}");
        assert!(verdict.operations > 0, "{path}");
        assert_eq!(
            verdict.to_string(),
            format!("Jepsen's checks: no anomaly in {} operations", verdict.operations)
        );
    }
}

/// Without KIP-890's verification a late write joins the next transaction
/// and is read though its own transaction aborted (KAFKA-17754's class).
#[test]
fn a_late_write_without_verification_is_an_aborted_read() {
    let verdict = verdict_of("without-verification-a-late-write-joins-the-next-transaction.json");
    assert_eq!(kinds(&verdict), vec![AnomalyKind::AbortedRead], "{verdict}");
    assert!(
        verdict
            .to_string()
            .starts_with("Jepsen's checks: aborted read (G1a) 3 in "),
        "{verdict}"
    );
    // With verification the same late write is refused: nothing to find.
    assert!(verdict_of("a-late-write-after-an-abort-is-refused.json")
        .findings
        .is_empty());
}

/// A lost produce response: without idempotence the retry writes the batch
/// twice (Jepsen's duplicate); with it, the same fault leaves one copy.
#[test]
fn a_retry_without_idempotence_is_a_duplicate_and_with_it_is_not() {
    let verdict = verdict_of("idempotent-producer-retry.json");
    assert_eq!(kinds(&verdict), vec![AnomalyKind::Duplicate], "{verdict}");
    let values = finding_values(&verdict);
    assert_eq!(
        values,
        vec![0, 1, 2, 3, 4],
        "the first five, sent before idempotence was on"
    );
}

/// An unclean election truncates acknowledged records and the offsets are
/// written again with other values.
#[test]
fn a_log_truncated_under_its_readers_has_inconsistent_offsets() {
    let verdict = verdict_of("a-consumer-finds-the-log-truncated-under-it.json");
    assert!(kinds(&verdict).contains(&AnomalyKind::InconsistentOffsets), "{verdict}");
}

/// What the verdict leaves out says why: no reader reached the end, or
/// retention deleted records.
#[test]
fn what_is_not_judged_says_why() {
    let verdict = verdict_of("acks1-leader-crash-loses-records.json");
    assert!(verdict.findings.is_empty(), "{verdict}");
    assert!(!verdict.not_judged.is_empty());
    assert!(verdict.not_judged.iter().all(|(_, why)| *why == NotJudged::NoFinalRead));
    assert!(
        verdict
            .to_string()
            .contains("not judged: 10 acknowledged but unread when the run stopped"),
        "{verdict}"
    );
}

/// The fuzzer's safe clusters (acks=all, min.insync.replicas=2, no unclean
/// election) under random faults: Jepsen's checks find nothing in their
/// histories. (Over seeds 0 to 3,999 on 2026-12-07: none; the test runs
/// the first 200 with the engine's test build.) Each finding is printed
/// with its seed.
#[test]
fn safe_fuzz_cases_give_jepsens_checks_nothing_to_find() {
    use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
    let count: u64 = std::env::var("KAFKASCOPE_JEPSEN_SEEDS")
        .ok()
        .and_then(|count| count.parse().ok())
        .unwrap_or(200);
    let seeds: Vec<u64> = (0..count).collect();
    let verdicts = crate::per_seed_on_threads(&seeds, |seed| {
        let case = FuzzCase::generate(seed, Mix::All);
        if !case.safe {
            return None;
        }
        let outcome = case.scenario().run_with_history().ok()?;
        let verdict = outcome.simulation.jepsen_verdict()?;
        (!verdict.findings.is_empty()).then(|| verdict.to_string())
    });
    let found: Vec<String> = verdicts
        .into_iter()
        .filter_map(|(seed, finding)| finding.map(|finding| format!("seed {seed}: {finding}")))
        .collect();
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Two transactional producers writing the same two partitions at once,
/// in opposite orders, and one of them again after the other: the logs
/// order the transactions one way in one partition and the other way in
/// the other (a write cycle, G0) and put one's record between two of the
/// other's (interleaved sends). Kafka's transactions allow both; the
/// verdict labels them allowed and finds no anomaly.
#[test]
fn concurrent_transactions_show_what_kafka_allows_and_nothing_else() {
    let produce = |at: u64, producer: u32, key: &str| {
        format!(
            r#"{{ "atMs": {at}, "input": {{ "type": "produce", "producer": {producer}, "key": "{key}", "count": 1 }} }}"#
        )
    };
    let commit = |at: u64, producer: u32| {
        format!(r#"{{ "atMs": {at}, "input": {{ "type": "commitTransaction", "producer": {producer} }} }}"#)
    };
    let inputs = [
        // Each producer's first transaction finds its coordinator and its id.
        produce(1000, 0, "carol"),
        produce(1000, 1, "carol"),
        commit(2000, 0),
        commit(2000, 1),
        produce(5000, 0, "alice"),
        produce(5000, 1, "bob"),
        produce(5100, 1, "alice"),
        produce(5100, 0, "bob"),
        produce(5200, 0, "alice"),
        commit(6000, 0),
        commit(6000, 1),
    ]
    .join(",\n");
    let text = format!(
        r#"{{
  "name": "two transactions at once", "description": "", "seed": 3,
  "config": {{
    "brokers": 3,
    "topics": [{{ "name": "payments", "partitions": 2, "replicationFactor": 3, "minInsyncReplicas": 2 }}],
    "producers": [
      {{ "topic": "payments", "acks": "all", "transactionalId": "tx-a" }},
      {{ "topic": "payments", "acks": "all", "transactionalId": "tx-b" }}
    ],
    "consumers": [{{ "group": "ledger", "topics": ["payments"], "autoOffsetReset": "earliest", "isolationLevel": "read_committed" }}]
  }},
  "inputs": [{inputs}],
  "runUntilMs": 20000,
  "expect": [
    {{ "type": "noRecordsLost" }},
    {{ "type": "noJepsenAnomalies" }},
    {{ "type": "jepsenAnomaly", "anomaly": "writeCycle" }},
    {{ "type": "jepsenAnomaly", "anomaly": "interleavedSends" }}
  ]
}}"#
    );
    let scenario = Scenario::from_json(&text).expect("parses");
    let outcome = scenario.run().expect("plays");
    let verdict = outcome
        .simulation
        .jepsen_verdict()
        .expect("its expectations keep the history");
    assert!(
        outcome.failures.is_empty(),
        "{:?}\n{verdict}\n{:#?}",
        outcome.failures,
        outcome.simulation.jepsen_history()
    );
    assert!(verdict.findings.is_empty(), "{verdict}");
    let allowed: Vec<AnomalyKind> = verdict.allowed.iter().map(|finding| finding.kind).collect();
    assert!(allowed.contains(&AnomalyKind::WriteCycle), "{verdict}");
    assert!(allowed.contains(&AnomalyKind::InterleavedSends), "{verdict}");
    assert!(
        verdict
            .to_string()
            .contains("allowed by Kafka's design: write cycle (G0) "),
        "{verdict}"
    );
    // Each allowed finding points at the trace event of a send.
    for finding in &verdict.allowed {
        assert!(
            matches!(event_of(&outcome, &verdict, finding), TraceKind::Acknowledged { .. }),
            "{finding}"
        );
    }
}

/// The trace event a finding points at.
fn event_of<'a>(outcome: &'a Outcome, verdict: &Verdict, finding: &Finding) -> &'a TraceKind {
    let id = verdict.trace_id(finding).expect("a step");
    let event = outcome.simulation.trace().iter().find(|event| event.id == id);
    &event.expect("in the trace").kind
}

/// Every finding of a run points at the trace event of its operation: an
/// aborted read at the `Consumed` step that read it.
#[test]
fn each_finding_points_at_its_step() {
    let outcome = scenario("without-verification-a-late-write-joins-the-next-transaction.json")
        .run_with_history()
        .expect("plays");
    let verdict = outcome.simulation.jepsen_verdict().expect("kept");
    assert!(!verdict.findings.is_empty());
    for finding in &verdict.findings {
        assert!(
            matches!(event_of(&outcome, &verdict, finding), TraceKind::Consumed { .. }),
            "{finding}"
        );
    }
}

/// A history past its limit keeps its first operations and every
/// transaction's end: the verdict judges that part, finds nothing false in
/// it (no read of a transaction whose commit came after the limit counts
/// as an aborted read) and says it is partial.
#[test]
fn a_history_past_its_limit_judges_the_first_part_and_says_so() {
    let whole = verdict_of("exactly-once-consume-transform-produce.json");
    assert!(whole.complete);
    for limit in [5, 20, 40] {
        let scenario = scenario("exactly-once-consume-transform-produce.json");
        let mut simulation =
            kafkascope_engine::sim::Simulation::new(scenario.config.clone(), scenario.seed).expect("starts");
        simulation.keep_history_up_to(limit);
        for input in &scenario.inputs {
            simulation.schedule(input.clone());
        }
        simulation.run_until(scenario.run_until_ms);
        let verdict = simulation.jepsen_verdict().expect("kept");
        assert!(!verdict.complete, "limit {limit}");
        assert!(verdict.findings.is_empty(), "limit {limit}: {verdict}");
        assert!(
            verdict
                .to_string()
                .ends_with("so this judges the first part of the run only"),
            "{verdict}"
        );
        let history = simulation.jepsen_history().expect("kept");
        let kept = history
            .ops
            .iter()
            .filter(|op| !matches!(op, kafkascope_engine::history::Op::EndTransaction { .. }))
            .count();
        assert!(kept <= limit, "limit {limit}: {kept} kept");
    }
}

/// A safe fuzz case that passes, replayed as its scenario file: the fuzzer's
/// verdict, the scenario's outcome, and Jepsen's verdict with no finding
/// whose text says `says`.
fn replay_fuzz_seed(seed: u64, says: &str) -> (kafkascope_engine::sim::fuzz::Verdict, Outcome, Verdict) {
    use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
    let case = FuzzCase::generate(seed, Mix::All);
    assert!(case.safe);
    let verdict = case.run();
    assert!(verdict.passed(), "{verdict:?}");
    let outcome = case.scenario().run().expect("plays");
    let jepsen = clean_verdict(&outcome, says);
    (verdict, outcome, jepsen)
}

/// A scenario's outcome with every expectation met, and Jepsen's verdict
/// on it, with no finding and with `says` in its text.
fn clean_verdict(outcome: &Outcome, says: &str) -> Verdict {
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let jepsen = outcome
        .simulation
        .jepsen_verdict()
        .expect("its expectation keeps the history");
    assert!(jepsen.findings.is_empty(), "{jepsen}");
    assert!(jepsen.to_string().contains(says), "{jepsen}");
    jepsen
}

/// Whether Jepsen's verdict names `kind` among what Kafka allows.
fn allows(jepsen: &Verdict, kind: AnomalyKind) -> bool {
    jepsen.allowed.iter().any(|finding| finding.kind == kind)
}

/// Fuzz seed 5089: an idempotent producer's epoch is bumped (KIP-360) and
/// it resends batches whose outcome it never learned; the leader had
/// written them and writes them again. Jepsen's duplicate check finds them,
/// and the verdict names them as the duplicates Kafka's idempotence allows,
/// so the fuzzer's safe case passes (found by `cargo xtask fuzz` once the
/// fuzzer failed safe cases on Jepsen's findings).
#[test]
fn duplicates_across_an_epoch_bump_are_allowed_and_named() {
    let (verdict, _, jepsen) = replay_fuzz_seed(5089, "allowed by Kafka's design: duplicate across an epoch bump ");
    assert!(verdict.across_epoch_duplicates > 0);
    assert!(allows(&jepsen, AnomalyKind::EpochBumpDuplicate), "{jepsen}");
}

/// Fuzz seed 7729: a transactional producer sends `EndTxn` to commit, the
/// answer is lost in a partition, and the producer is restarted before it
/// learns the outcome. The coordinator had written `PrepareCommit`, so the
/// commit completes and consumers read the records: a commit of unknown
/// outcome (Jepsen's `:info`), not an aborted read.
#[test]
fn a_commit_whose_producer_never_learned_the_outcome_may_be_read() {
    let (_, _, jepsen) = replay_fuzz_seed(7729, "asked to commit and never learned the outcome");
    assert!(jepsen.unknown_commits >= 1, "{jepsen}");
}

/// Fuzz seed 7748 (as generated before power losses joined the fuzzer's
/// mix, kept as a fixture): an idempotent producer's first batches to a partition
/// are refused before the append (`NOT_ENOUGH_REPLICAS`), and a later one
/// already in flight reaches the leader after the ISR grew back. The
/// leader has no state for the producer, so it takes the batch at
/// sequence 23 (`ProducerAppendInfo#checkSequence`); the earlier batches
/// are then refused as out of order until an epoch bump sends them again,
/// behind it. Jepsen's checks see a non-monotonic send, which Kafka
/// allows here and the verdict names.
#[test]
fn a_batch_a_leader_took_without_the_producers_state_may_overtake_earlier_ones() {
    let text = include_str!("fixtures/a-leader-without-producer-state-takes-a-later-batch-first.json");
    let outcome = Scenario::from_json(text).expect("parses").run().expect("plays");
    let jepsen = clean_verdict(
        &outcome,
        "allowed by Kafka's design: non-monotonic send with no producer state",
    );
    assert!(allows(&jepsen, AnomalyKind::UncheckedSequence), "{jepsen}");
    assert!(
        outcome.simulation.trace().iter().any(|event| matches!(
            event.kind,
            TraceKind::ProduceFailed {
                error: kafkascope_engine::protocol::ErrorCode::OutOfOrderSequenceNumber,
                ..
            }
        )),
        "the earlier batches are refused as out of order"
    );
}

/// Fuzz seed 9706, minimised: an idempotent producer writes input records
/// twice across an epoch bump, and the exactly-once pipeline processes
/// each copy once. The audit counts places in the input log, so neither
/// copy's output is a duplicate.
#[test]
fn exactly_once_gives_each_copy_of_a_duplicated_input_its_own_output() {
    let text = include_str!("fixtures/exactly-once-over-duplicated-input.json");
    let scenario = Scenario::from_json(text).expect("parses");
    let outcome = scenario.run().expect("plays");
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    let audit = outcome.simulation.output_audit("eos-out");
    assert!(audit.duplicated.is_empty(), "{audit:?}");
    assert!(audit.outputs > 0);
    let jepsen = outcome.simulation.jepsen_verdict().expect("kept");
    assert!(
        jepsen
            .allowed
            .iter()
            .any(|finding| finding.kind == AnomalyKind::EpochBumpDuplicate),
        "the input holds records written twice: {jepsen}"
    );
}

/// A transactional producer's `EndTxn` reaches its coordinator, which
/// commits, but the answer is lost in a partition and the producer is
/// restarted: the history says the outcome is unknown (Jepsen's `:info`),
/// so the records the consumer reads are no aborted read. Restarted before
/// it asked to commit, the transaction is aborted.
#[test]
fn a_commit_whose_answer_was_lost_is_of_unknown_outcome() {
    let scenario = |commit_at: u64| {
        let text = format!(
            r#"{{"name": "unknown", "description": "", "seed": 1, "runUntilMs": 12000,
            "config": {{"brokers": 3, "topics": [{{"name": "t", "partitions": 1, "replicationFactor": 3, "minInsyncReplicas": 2}}],
              "producers": [{{"topic": "t", "transactionalId": "a"}}],
              "consumers": [{{"group": "g", "topics": ["t"], "autoOffsetReset": "earliest", "isolationLevel": "read_committed"}}]}},
            "inputs": [
              {{"atMs": 3000, "input": {{"type": "produce", "producer": 0, "key": null, "count": 3, "bytes": 100}}}},
              {{"atMs": {commit_at}, "input": {{"type": "commitTransaction", "producer": 0}}}},
              {{"atMs": 5001, "input": {{"type": "partition", "side": [{{"kind": "producer", "id": 0}}]}}}},
              {{"atMs": 8000, "input": {{"type": "restartProducer", "producer": 0}}}},
              {{"atMs": 9000, "input": {{"type": "healNetwork"}}}}],
            "expect": [{{"type": "noJepsenAnomalies"}}]}}"#
        );
        let outcome = Scenario::from_json(&text).expect("parses").run().expect("plays");
        assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
        outcome.simulation.jepsen_verdict().expect("kept")
    };
    let lost_answer = scenario(5000);
    assert_eq!(lost_answer.unknown_commits, 1, "{lost_answer}");
    assert!(lost_answer.findings.is_empty(), "{lost_answer}");
    // Never asked to commit before the restart: aborted, nothing read.
    let never_asked = scenario(8500);
    assert_eq!(never_asked.unknown_commits, 0, "{never_asked}");
    assert!(never_asked.findings.is_empty(), "{never_asked}");
}

/// KAFKA-17754: a commit request (`EndTxn`) stalled in its coordinator's
/// request queue is handled after the producer's retry committed and its
/// next transaction began. Under transaction version 1 both transactions
/// share the producer's epoch, so the late request commits the new one
/// half-way through, and the application's abort then fails with
/// `INVALID_TXN_STATE`: bob's records (ids 2 and 3) are an aborted read.
/// After `transaction.version=2` is finalized the same schedule runs again;
/// the epoch bumped at the end of each transaction fences the late request
/// (`PRODUCER_FENCED`), and nothing of the second half is an anomaly.
#[test]
fn a_delayed_end_txn_commits_the_next_transaction_under_version_1_and_is_fenced_under_version_2() {
    use kafkascope_engine::sim::trace::TransactionOutcome;
    use kafkascope_engine::sim::types::ErrorCode;
    let path = "a-delayed-end-txn-commits-the-next-transaction.json";
    let outcome = played_with_history(path);
    let verdict = outcome.simulation.jepsen_verdict().expect("kept");
    assert_eq!(kinds(&verdict), vec![AnomalyKind::AbortedRead], "{verdict}");
    let values = finding_values(&verdict);
    assert_eq!(values, vec![2, 3], "bob's records, of the first half: {verdict}");
    let trace = outcome.simulation.trace();
    assert!(trace.iter().any(|event| matches!(
        &event.kind,
        TraceKind::TransactionEnded {
            outcome: TransactionOutcome::Fatal(ErrorCode::InvalidTxnState),
            ..
        }
    )));
    let stalled: Vec<u64> = trace
        .iter()
        .filter(|event| matches!(event.kind, TraceKind::RequestStalled { .. }))
        .map(|event| event.time)
        .collect();
    assert_eq!(stalled.len(), 2, "one stalled EndTxn per half");
    // The second half's late request is answered PRODUCER_FENCED.
    assert!(outcome
        .simulation
        .trace()
        .iter()
        .any(|event| event.time > stalled[1] && event.line().contains("EndTxnResponse error=PRODUCER_FENCED")));
}

/// An ambiguous produce error that still committed: alice's three records
/// are written and replicated, the answer is lost in a broken link, and
/// the producer reports a timeout after `delivery.timeout.ms`. The history
/// keeps those sends as indeterminate (Jepsen's `:info`), so the group
/// reading them is no anomaly; the application's own resend is three new
/// values, read too.
#[test]
fn a_send_that_timed_out_but_committed_is_indeterminate_not_failed() {
    use kafkascope_engine::history::{Op, Outcome};
    let outcome = played_with_history("a-timeout-is-not-a-failure.json");
    let history = outcome.simulation.jepsen_history().expect("kept");
    let indeterminate: Vec<u64> = history
        .ops
        .iter()
        .filter_map(|op| match op {
            Op::Send {
                value,
                outcome: Outcome::Indeterminate,
                ..
            } => Some(*value),
            _ => None,
        })
        .collect();
    assert_eq!(indeterminate, vec![0, 1, 2], "alice's first three");
    let verdict = outcome.simulation.jepsen_verdict().expect("kept");
    assert!(verdict.findings.is_empty(), "{verdict}");
}

/// Before Kafka 3.0 a producer ran without idempotence and with five
/// requests in flight: three one-record batches refused at once
/// (`NOT_ENOUGH_REPLICAS`) go back at the head of the queue one by one
/// (`RecordAccumulator#reenqueue`), so the retries write them in reverse,
/// a non-monotonic send Jepsen's checks report (values 2 and 3, written
/// before 1). With `enable.idempotence=true` the same refusal leaves the
/// order alone: nothing after the switch is reported.
#[test]
fn retries_without_idempotence_reorder_writes_and_with_it_do_not() {
    let outcome = played_with_history("without-idempotence-retries-reorder-writes.json");
    let verdict = outcome.simulation.jepsen_verdict().expect("kept");
    assert_eq!(kinds(&verdict), vec![AnomalyKind::NonMonotonicSend], "{verdict}");
    let values = finding_values(&verdict);
    assert_eq!(values, vec![2, 3], "bob and carol, written before alice: {verdict}");
}
