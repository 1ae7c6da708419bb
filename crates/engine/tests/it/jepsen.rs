//! Jepsen's checks over the simulator's own runs (`sim::jepsen`): the
//! history a run keeps, and the verdict on it, for scenarios whose
//! anomaly (or its absence) is known.

use kafkascope_engine::history::AnomalyKind;
use kafkascope_engine::sim::jepsen::{NotJudged, Verdict};
use kafkascope_engine::sim::scenario::Scenario;

fn scenario(path: &str) -> Scenario {
    let text =
        std::fs::read_to_string(format!("{}/../../scenarios/{path}", env!("CARGO_MANIFEST_DIR"))).expect("reads");
    Scenario::from_json(&text).expect("parses")
}

fn verdict_of(path: &str) -> Verdict {
    let outcome = scenario(path).run_with_history().expect("plays");
    outcome.simulation.jepsen_verdict().expect("the run kept its history")
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
        let plain = scenario(path).run().expect("plays");
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
    let values: Vec<u64> = verdict
        .findings
        .iter()
        .flat_map(|finding| finding.values.clone())
        .collect();
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
