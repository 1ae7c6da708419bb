//! "What Jepsen would say about this run": a run judged by Jepsen's Kafka
//! checks (`kafkascope_engine::history`), as the Stories view shows it
//! beside the steps (a story's whole run) and the map's "Jepsen's checks"
//! tool (the live run so far). The one reducer of that panel, tested
//! natively: each finding with its class, what the class means, where, the
//! records involved, when, and (in a story) the step that shows it; the
//! classes Kafka's design allows, with why; what the checks leave
//! unjudged, with why.

use std::collections::BTreeMap;

use kafkascope_engine::history::Finding;
use kafkascope_engine::sim::jepsen::{NotJudged, Verdict};
use kafkascope_engine::sim::trace::ranges;

use crate::sequence_model::Step;

/// At most this many rows in each list (the rest are counted).
pub const MAX_ROWS: usize = 30;

/// One finding as the panel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindingRow {
    /// Jepsen's name for the class.
    pub class: &'static str,
    /// What the class means, in a sentence.
    pub meaning: &'static str,
    /// Where and which records: "on payments-0: record #2".
    pub detail: String,
    /// The step that shows it (its index in the story's steps).
    pub step: Option<usize>,
    /// When it happened (virtual ms).
    pub at_ms: Option<u64>,
}

/// A class Kafka's design allows, as the panel lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// Jepsen's name for the class.
    pub class: &'static str,
    /// Why Kafka allows it.
    pub why: &'static str,
    /// Its findings (at most [`MAX_ROWS`] rows).
    pub rows: Vec<FindingRow>,
    /// How many of them the rows leave out.
    pub hidden: usize,
}

/// The panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JepsenPanel {
    /// What run the verdict is on, in a sentence.
    pub scope: String,
    /// Whether the history held the whole run (else the first part of it).
    pub complete: bool,
    /// Operations judged (sends, polls, transaction ends, repositions).
    pub operations: usize,
    /// The headline: "no anomaly" or the classes with their counts.
    pub headline: String,
    /// The anomalies (at most [`MAX_ROWS`] rows; findings of one class on
    /// one partition shown by one step share a row).
    pub findings: Vec<FindingRow>,
    /// How many anomalies in all.
    pub finding_count: usize,
    /// How many of them the rows shown leave out.
    pub hidden: usize,
    /// What Kafka's design allows, each class once with why, and its rows.
    pub allowed: Vec<Allowed>,
    /// How many allowed findings in all.
    pub allowed_count: usize,
    /// What was left unjudged: (why, how many records).
    pub not_judged: Vec<(String, usize)>,
    /// Transactions whose producer asked to commit and never learned the
    /// outcome: their records may be read or not.
    pub unknown_commits: usize,
}

impl JepsenPanel {
    /// The panel for `verdict` over a story whose steps are `steps`.
    pub fn of(verdict: &Verdict, steps: &[Step]) -> JepsenPanel {
        JepsenPanel::build(
            verdict,
            &|id| step_at(steps, id),
            "This is its verdict on the whole of this story's run, to its end.".to_string(),
        )
    }

    /// The panel for `verdict` over the live map's run, taken at `at_ms`.
    pub fn live(verdict: &Verdict, at_ms: u64) -> JepsenPanel {
        JepsenPanel::build(
            verdict,
            &|_| None,
            format!(
                "This is its verdict on this run from its start to t = {at_ms} ms. The run goes on: check again to include what has happened since."
            ),
        )
    }

    fn build(verdict: &Verdict, step_of: &dyn Fn(u64) -> Option<usize>, scope: String) -> JepsenPanel {
        let row = |finding: &Finding| FindingRow {
            class: finding.kind.name(),
            meaning: finding.kind.meaning(),
            detail: records_on(&finding.partition.to_string(), &finding.values),
            step: verdict.trace_id(finding).and_then(step_of),
            at_ms: verdict.time_of(finding),
        };
        // Findings of one class on one partition shown by one step are one
        // row ("records #0–#4"), not one row each.
        // The rows, and how many findings the rows left out stand for.
        let rows = |findings: &mut dyn Iterator<Item = &Finding>| -> (Vec<FindingRow>, usize) {
            let mut merged: Vec<(FindingRow, String, Vec<u64>, usize)> = Vec::new();
            for finding in findings {
                let new = row(finding);
                let partition = finding.partition.to_string();
                match merged.last_mut() {
                    Some((last, known, values, count))
                        if last.class == new.class && last.step == new.step && *known == partition =>
                    {
                        values.extend(finding.values.iter().copied());
                        last.detail = records_on(known, values);
                        *count += 1;
                    }
                    _ => merged.push((new, partition, finding.values.clone(), 1)),
                }
            }
            let hidden = merged.iter().skip(MAX_ROWS).map(|(.., count)| count).sum();
            (merged.into_iter().take(MAX_ROWS).map(|(row, ..)| row).collect(), hidden)
        };
        let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
        for finding in &verdict.findings {
            *counts.entry(finding.kind.name()).or_default() += 1;
        }
        let headline = if counts.is_empty() {
            "no anomaly".to_string()
        } else {
            counts
                .iter()
                .map(|(class, count)| format!("{class} × {count}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut allowed = Vec::new();
        let mut kinds: Vec<_> = verdict.allowed.iter().map(|finding| finding.kind).collect();
        kinds.dedup();
        for kind in kinds {
            let (of_kind, hidden) = rows(&mut verdict.allowed.iter().filter(|finding| finding.kind == kind));
            allowed.push(Allowed {
                class: kind.name(),
                why: kind.allowed().unwrap_or_default(),
                rows: of_kind,
                hidden,
            });
        }
        let mut left_out: BTreeMap<NotJudged, usize> = BTreeMap::new();
        for (finding, why) in &verdict.not_judged {
            *left_out.entry(*why).or_default() += finding.values.len();
        }
        let (findings, hidden) = rows(&mut verdict.findings.iter());
        JepsenPanel {
            scope,
            complete: verdict.complete,
            operations: verdict.operations,
            headline,
            findings,
            hidden,
            finding_count: verdict.findings.len(),
            allowed,
            allowed_count: verdict.allowed.len(),
            not_judged: left_out
                .into_iter()
                .map(|(why, count)| (why.to_string(), count))
                .collect(),
            unknown_commits: verdict.unknown_commits,
        }
    }

    /// What the verdict says of transactions of unknown outcome.
    pub fn unknown_text(&self) -> String {
        let (count, whose) = match self.unknown_commits {
            1 => ("One transaction".to_string(), "its producer"),
            count => (format!("{count} transactions"), "their producers"),
        };
        format!(
            "{count} ended unknown to {whose}: it asked to commit, then crashed or was fenced before the answer came. The commit may have happened, so reading those records is no aborted read and missing them is no lost write (Jepsen counts such an operation as indeterminate)."
        )
    }

    /// The panel's summary line.
    pub fn summary(&self) -> String {
        format!(
            "What Jepsen would say about this run: {} in {} operations",
            self.headline, self.operations
        )
    }
}

/// "on payments-0: records #0–#4, #7".
fn records_on(partition: &str, values: &[u64]) -> String {
    let mut distinct = values.to_vec();
    kafkascope_engine::sorting::sort(&mut distinct);
    distinct.dedup();
    format!(
        "on {partition}: record{} #{}",
        if distinct.len() == 1 { "" } else { "s" },
        ranges(&distinct).replace(", ", ", #").replace('-', "–#")
    )
}

/// The first step showing trace event `id` or anything after it.
fn step_at(steps: &[Step], id: u64) -> Option<usize> {
    steps.iter().position(|step| step.trace_id >= id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence_model::{stories, StoryRun};

    fn panel_of(id: &str) -> (JepsenPanel, StoryRun) {
        let story = stories().iter().find(|story| story.id == id).expect("a story");
        let run = StoryRun::start(story).expect("plays");
        let verdict = run.verdict.clone().expect("a story keeps its history");
        (JepsenPanel::of(&verdict, &run.steps), run)
    }

    #[test]
    fn a_duplicate_links_to_the_step_that_acknowledged_it() {
        let (panel, run) = panel_of("idempotent-producer");
        assert_eq!(panel.headline, "duplicate × 5");
        assert_eq!(panel.finding_count, 5);
        let verdict = run.verdict.clone().expect("kept");
        // One batch written twice: one row, its five records.
        assert_eq!(panel.findings.len(), 1, "{:?}", panel.findings);
        assert_eq!(panel.hidden, 0);
        let row = &panel.findings[0];
        assert_eq!(row.class, "duplicate");
        assert!(row.meaning.ends_with('.'));
        assert_eq!(row.detail, "on payments-0: records #0–#4");
        // The step shows exactly the event of each finding's operation.
        let step = &run.steps[row.step.expect("a step")];
        for finding in &verdict.findings {
            assert_eq!(Some(step.trace_id), verdict.trace_id(finding), "{step:?}");
        }
        assert!(panel
            .summary()
            .starts_with("What Jepsen would say about this run: duplicate × 5 in "));
    }

    #[test]
    fn a_safe_story_has_nothing_to_say_and_says_so() {
        let (panel, _) = panel_of("exactly-once");
        assert_eq!(panel.headline, "no anomaly");
        assert!(panel.findings.is_empty());
        assert!(panel.operations > 0);
    }

    /// An opened file whose two transactions write one partition by turns:
    /// no anomaly, and what Kafka allows listed with why and its step.
    #[test]
    fn what_kafka_allows_is_listed_apart_with_why() {
        let send = |at: u32, producer: u32| {
            format!(
                r#"{{"atMs": {at}, "input": {{"type": "produce", "producer": {producer}, "key": "k", "count": 1}}}}"#
            )
        };
        let commit = |at: u32, producer: u32| {
            format!(r#"{{"atMs": {at}, "input": {{"type": "commitTransaction", "producer": {producer}}}}}"#)
        };
        let inputs = [
            send(1000, 0),
            send(1000, 1),
            commit(2000, 0),
            commit(2000, 1),
            send(5000, 0),
            send(5100, 1),
            send(5200, 0),
            commit(6000, 0),
            commit(6000, 1),
        ]
        .join(",");
        let text = format!(
            r#"{{"name": "by turns", "description": "", "seed": 1, "runUntilMs": 15000,
            "config": {{"brokers": 3, "topics": [{{"name": "t", "partitions": 1, "replicationFactor": 3, "minInsyncReplicas": 2}}],
              "producers": [{{"topic": "t", "transactionalId": "a"}}, {{"topic": "t", "transactionalId": "b"}}],
              "consumers": [{{"group": "g", "topics": ["t"], "autoOffsetReset": "earliest", "isolationLevel": "read_committed"}}]}},
            "inputs": [{inputs}]}}"#
        );
        let story = crate::sequence_model::custom_story("by-turns.json", &text).expect("opens");
        let run = StoryRun::start(story).expect("plays");
        let panel = run.jepsen.clone().expect("a panel");
        assert_eq!(panel.headline, "no anomaly");
        let classes: Vec<&str> = panel.allowed.iter().map(|allowed| allowed.class).collect();
        assert_eq!(classes, vec!["write cycle (G0)", "interleaved sends"]);
        for allowed in &panel.allowed {
            assert!(allowed.why.contains("Kafka"), "{}", allowed.why);
            assert_eq!(allowed.hidden, 0);
            assert!(allowed.rows.iter().all(|row| row.step.is_some()), "{allowed:?}");
        }
    }

    #[test]
    fn the_live_run_is_judged_to_a_moment_with_times_and_no_steps() {
        let story = stories()
            .iter()
            .find(|story| story.id == "idempotent-producer")
            .expect("a story");
        let run = StoryRun::start(story).expect("plays");
        let verdict = run.verdict.clone().expect("kept");
        let panel = JepsenPanel::live(&verdict, 12_345);
        assert!(panel
            .scope
            .starts_with("This is its verdict on this run from its start to t = 12345 ms."));
        assert!(panel.complete);
        let row = &panel.findings[0];
        assert_eq!(row.step, None);
        // The time of the step the story links to.
        let linked = JepsenPanel::of(&verdict, &run.steps);
        let step = &run.steps[linked.findings[0].step.expect("a step")];
        assert_eq!(row.at_ms, Some(step.time));
    }

    #[test]
    fn a_commit_whose_answer_was_lost_is_judged_as_perhaps_committed() {
        // The producer's EndTxn reaches the coordinator, which commits; the
        // answer is lost in a partition and the producer restarts.
        let text = r#"{"name": "unknown", "description": "", "seed": 1, "runUntilMs": 12000,
            "config": {"brokers": 3, "topics": [{"name": "t", "partitions": 1, "replicationFactor": 3, "minInsyncReplicas": 2}],
              "producers": [{"topic": "t", "transactionalId": "a"}],
              "consumers": [{"group": "g", "topics": ["t"], "autoOffsetReset": "earliest", "isolationLevel": "read_committed"}]},
            "inputs": [
              {"atMs": 3000, "input": {"type": "produce", "producer": 0, "key": null, "count": 3, "bytes": 100}},
              {"atMs": 5000, "input": {"type": "commitTransaction", "producer": 0}},
              {"atMs": 5001, "input": {"type": "partition", "side": [{"kind": "producer", "id": 0}]}},
              {"atMs": 8000, "input": {"type": "restartProducer", "producer": 0}},
              {"atMs": 9000, "input": {"type": "healNetwork"}}]}"#;
        let story = crate::sequence_model::custom_story("unknown.json", text).expect("opens");
        let run = StoryRun::start(story).expect("plays");
        let panel = run.jepsen.clone().expect("a panel");
        assert_eq!(panel.headline, "no anomaly");
        assert_eq!(panel.unknown_commits, 1);
        assert!(panel
            .unknown_text()
            .starts_with("One transaction ended unknown to its producer"));
    }

    #[test]
    fn what_is_not_judged_is_counted_with_why() {
        let (panel, _) = panel_of("unclean-election");
        assert_eq!(panel.headline, "no anomaly");
        assert_eq!(panel.not_judged.len(), 1);
        assert!(panel.not_judged[0].0.starts_with("acknowledged but unread"));
    }
}
