//! The exercises, predict then reveal: the learner labels each case (for
//! the pitfalls: idle, continue, error, loss) before the simulation runs
//! it; the run's own trace then says what happened in each case, with its
//! numbers, and the answers are scored. The cases, their prompts and the
//! choices offered are lesson data (`exercises` in `web/lesson.json`); the
//! outcomes are never written down, only read from the run.

use kafkascope_engine::replication::high_watermark::Acks;
use kafkascope_engine::sim::trace::{MemberAssignment, TraceEvent, TraceKind};
use kafkascope_engine::sim::types::{ErrorCode, NodeId};
use serde::{Deserialize, Serialize};

use crate::sequence_model::{story, StoryRun};

/// What a case ends in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// A consumer gets no partition.
    Idle,
    /// Writes go on.
    Continue,
    /// Writes are refused.
    Error,
    /// Acknowledged records are gone.
    Loss,
    /// A member that had no partition gets some.
    Assigned,
    /// A key's new records go where its old ones went.
    Stays,
    /// A key's new records go to another partition.
    Moves,
    /// The group's lag grows.
    Grows,
    /// The group's lag shrinks: it catches up.
    Shrinks,
    /// The failing record goes to the dead letter topic and the group
    /// goes on.
    #[serde(rename = "dead-lettered")]
    DeadLettered,
    /// The failure stops the member.
    Stops,
}

impl Outcome {
    /// The pitfalls' four outcomes (a case without `choices` offers these).
    pub const PITFALLS: [Outcome; 4] = [Outcome::Idle, Outcome::Continue, Outcome::Error, Outcome::Loss];
    pub const ALL: [Outcome; 11] = [
        Outcome::Idle,
        Outcome::Continue,
        Outcome::Error,
        Outcome::Loss,
        Outcome::Assigned,
        Outcome::Stays,
        Outcome::Moves,
        Outcome::Grows,
        Outcome::Shrinks,
        Outcome::DeadLettered,
        Outcome::Stops,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Idle => "idle",
            Outcome::Continue => "continue",
            Outcome::Error => "error",
            Outcome::Loss => "loss",
            Outcome::Assigned => "assigned",
            Outcome::Stays => "stays",
            Outcome::Moves => "moves",
            Outcome::Grows => "grows",
            Outcome::Shrinks => "shrinks",
            Outcome::DeadLettered => "dead-lettered",
            Outcome::Stops => "stops",
        }
    }

    pub fn parse(text: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|outcome| outcome.label() == text)
    }
}

/// One case: what happens, from which input of the story on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    pub id: String,
    /// The story input that opens the case (its index in the scenario).
    pub input: usize,
    pub prompt: String,
    /// The outcomes offered (none: the pitfalls' four). Which ones decide
    /// what the run is asked: a key's partition (stays, moves), an idle
    /// member (idle, assigned), lag (grows, shrinks), a failing record
    /// (dead-lettered, stops).
    #[serde(default)]
    pub choices: Vec<Outcome>,
    /// The key a stays/moves case is about.
    #[serde(default)]
    pub key: Option<String>,
    /// The group a dead-lettered/stops case is about.
    #[serde(default)]
    pub group: Option<String>,
}

impl Case {
    /// The outcomes offered.
    pub fn choices(&self) -> &[Outcome] {
        if self.choices.is_empty() {
            &Outcome::PITFALLS
        } else {
            &self.choices
        }
    }
}

/// The exercise.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exercise {
    pub id: String,
    pub title: String,
    pub intro: String,
    /// The story that runs it.
    pub story: String,
    pub cases: Vec<Case>,
}

/// What a case turned out to be in the run, and the run's evidence (the
/// simulator's module sends it to the page's first module as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
pub struct Revealed {
    pub outcome: Outcome,
    pub evidence: String,
    /// The first step of the story inside the case (1-based), to open it.
    pub step: usize,
}

/// Plays the exercise's story and reads each case's outcome from its
/// trace, between the case's input and the next case's.
pub fn reveal(exercise: &Exercise) -> Result<Vec<Revealed>, String> {
    let definition = story(&exercise.story).ok_or_else(|| format!("no story {}", exercise.story))?;
    let run = StoryRun::start(definition)?;
    let inputs = &definition.scenario.inputs;
    let time_of = |input: usize| inputs.get(input).map(|scheduled| scheduled.at_ms);
    let mut revealed = Vec::new();
    for (index, case) in exercise.cases.iter().enumerate() {
        let from = time_of(case.input).ok_or_else(|| format!("case {}: no input {}", case.id, case.input))?;
        // Up to the next case's input (cases that start together, such as
        // two groups reading the same records, each see the rest of the run).
        let until = exercise
            .cases
            .get(index + 1)
            .and_then(|next| time_of(next.input))
            .filter(|next| *next > from)
            .unwrap_or(u64::MAX);
        let window: Vec<&TraceEvent> = run
            .trace()
            .iter()
            .filter(|event| event.time >= from && event.time < until)
            .collect();
        let (outcome, evidence) = judge_case(case, &window, &run, (from, until))?;
        // "Watch it" opens the step that shows the outcome (the loss, the
        // refusal), else the case's first step.
        let shown = |label: &str| {
            run.steps
                .iter()
                .position(|step| step.time >= from && step.time < until && step.outcome == Some(label))
        };
        let step = match outcome {
            Outcome::Loss => shown("loss"),
            Outcome::Error => shown("error"),
            _ => None,
        }
        .or_else(|| run.steps.iter().position(|step| step.time >= from))
        .map_or(1, |index| index + 1);
        revealed.push(Revealed {
            outcome,
            evidence,
            step,
        });
    }
    Ok(revealed)
}

/// A case's outcome, by the question its choices ask.
fn judge_case(
    case: &Case,
    window: &[&TraceEvent],
    run: &StoryRun,
    (from, until): (u64, u64),
) -> Result<(Outcome, String), String> {
    let (trace, simulation) = (run.trace(), run.recording.simulation());
    let choices = case.choices();
    let offers = |outcome: Outcome| choices.contains(&outcome);
    if offers(Outcome::Moves) || offers(Outcome::Stays) {
        let key = case
            .key
            .as_deref()
            .ok_or_else(|| format!("case {}: which key?", case.id))?;
        return judge_key(key, simulation, from).ok_or_else(|| format!("case {}: no records keyed {key}", case.id));
    }
    if offers(Outcome::Assigned) {
        return Ok(judge_assigned(window));
    }
    if offers(Outcome::Grows) || offers(Outcome::Shrinks) {
        return Ok(judge_lag(trace, from, until));
    }
    if offers(Outcome::DeadLettered) || offers(Outcome::Stops) {
        let group = case
            .group
            .as_deref()
            .ok_or_else(|| format!("case {}: which group?", case.id))?;
        return Ok(judge_failure(group, window));
    }
    Ok(judge(window, trace))
}

/// Where `key`'s records went when sent before `from`, and from then on.
fn judge_key(key: &str, simulation: &kafkascope_engine::sim::Simulation, from: u64) -> Option<(Outcome, String)> {
    let partition = |before: bool| {
        simulation
            .records()
            .iter()
            .filter(|record| record.key.as_deref() == Some(key) && (record.timestamp < from) == before)
            .filter_map(|record| record.partition.as_ref().map(ToString::to_string))
            .last()
    };
    let (first, last) = (partition(true)?, partition(false)?);
    Some(if first == last {
        (
            Outcome::Stays,
            format!("Records keyed {key} went to {first} before and to {last} after: its hash lands on the same partition either way"),
        )
    } else {
        (
            Outcome::Moves,
            format!("Records keyed {key} went to {first} before and to {last} after: with more partitions its hash lands elsewhere, and its new records no longer queue behind its old ones"),
        )
    })
}

/// The rebalances of a window: time, group, generation, assignment.
fn rebalances<'a>(
    window: &'a [&'a TraceEvent],
) -> impl Iterator<Item = (u64, &'a String, &'a u32, &'a Vec<MemberAssignment>)> + 'a {
    window.iter().filter_map(|event| match &event.kind {
        TraceKind::GroupRebalanced {
            group,
            generation,
            assignment,
            ..
        } => Some((event.time, group, generation, assignment)),
        _ => None,
    })
}

/// Whether a member that got no partition in a rebalance gets some in a
/// later one.
fn judge_assigned(window: &[&TraceEvent]) -> (Outcome, String) {
    let rebalances: Vec<_> = rebalances(window).collect();
    match rebalances.last() {
        Some((time, group, generation, assignment))
            if assignment.iter().all(|member| !member.partitions.is_empty()) =>
        {
            (
                Outcome::Assigned,
                format!(
                    "At {time} ms group {group} generation {generation} gave every member partitions: {}",
                    crate::sequence_model::owners(assignment, "reads", "reads nothing").join("; ")
                ),
            )
        }
        Some((time, group, generation, _)) => (
            Outcome::Idle,
            format!("At {time} ms group {group} generation {generation} still left a member without a partition"),
        ),
        None => (
            Outcome::Idle,
            "No rebalance happened: the idle member stayed idle".to_string(),
        ),
    }
}

/// The group's lag as `kafka-consumer-groups --describe` shows it (each
/// partition's high watermark minus the group's committed offset, summed
/// over the partitions it has committed) at its first commit inside the
/// window and at its last.
fn judge_lag(trace: &[TraceEvent], from: u64, until: u64) -> (Outcome, String) {
    use std::collections::BTreeMap;
    let mut high_watermarks: BTreeMap<String, u64> = BTreeMap::new();
    let mut committed: BTreeMap<String, u64> = BTreeMap::new();
    let mut first = None;
    let mut last = (0, 0);
    for event in trace.iter().take_while(|event| event.time < until) {
        match &event.kind {
            TraceKind::HighWatermark { partition, to, .. } if !partition.topic.starts_with("__") => {
                let known = high_watermarks.entry(partition.to_string()).or_default();
                *known = (*known).max(*to);
            }
            TraceKind::OffsetsCommitted { offsets, .. } => {
                for (partition, offset) in offsets {
                    committed.insert(partition.to_string(), *offset);
                }
                if event.time >= from {
                    let lag: u64 = committed
                        .iter()
                        .map(|(partition, offset)| {
                            high_watermarks
                                .get(partition)
                                .copied()
                                .unwrap_or(0)
                                .saturating_sub(*offset)
                        })
                        .sum();
                    first.get_or_insert((event.time, lag));
                    last = (event.time, lag);
                }
            }
            _ => {}
        }
    }
    let (first_time, first) = first.unwrap_or((from, 0));
    let (last_time, last) = last;
    if last > first {
        (
            Outcome::Grows,
            format!("The group's lag (high watermark minus committed offset) was {first} record(s) at {first_time} ms and {last} at {last_time} ms: records arrive faster than it handles them"),
        )
    } else {
        (
            Outcome::Shrinks,
            format!("The group's lag (high watermark minus committed offset) was {first} record(s) at {first_time} ms and {last} at {last_time} ms: it catches up"),
        )
    }
}

/// What a group did with the record its handler failed on.
fn judge_failure(group: &str, window: &[&TraceEvent]) -> (Outcome, String) {
    for event in window {
        match &event.kind {
            TraceKind::DeadLettered {
                group: failed,
                partition,
                offset,
                attempts,
                topic,
                ..
            } if failed == group => {
                return (
                    Outcome::DeadLettered,
                    format!("At {} ms group {group} gave up on {partition} offset {offset} after {attempts} attempt(s), wrote it to {topic} and went on", event.time),
                )
            }
            TraceKind::HandlerFailed {
                group: failed,
                consumer,
                partition,
                offset,
                skipped,
                ..
            } if failed == group => {
                return (
                    Outcome::Stops,
                    format!(
                        "At {} ms the handler's exception on {partition} offset {offset} stopped {}; closing committed past {skipped} record(s) it never handled",
                        event.time,
                        NodeId::Consumer(*consumer)
                    ),
                )
            }
            _ => {}
        }
    }
    (Outcome::DeadLettered, format!("Group {group} never failed on a record"))
}

/// A case's outcome from its events: a loss outweighs an error, which
/// outweighs an idle member; otherwise writes went on.
fn judge(window: &[&TraceEvent], trace: &[TraceEvent]) -> (Outcome, String) {
    // A loss is told by the records' own history: which acks each was
    // written with, and which election discarded them.
    for event in window {
        if let Some(history) = crate::sequence_model::LossHistory::of(trace, event) {
            let mut evidence = format!(
                "At {} ms {} acknowledged record(s) of {} were gone",
                history.time, history.lost, history.partition
            );
            if let Some(election) = history.election_line() {
                evidence.push_str(&format!(": {election}"));
            }
            let batches = history.batch_lines();
            if !batches.is_empty() {
                evidence.push_str(&format!(". They were {}", batches.join("; ")));
            }
            if history.batches.iter().any(|batch| batch.acks == Some(Acks::All)) {
                evidence.push_str(". An unclean election discards records written with acks=all too");
            }
            return (Outcome::Loss, evidence);
        }
    }
    for event in window {
        if let TraceKind::ProduceFailed {
            producer,
            partition,
            error,
            records,
            ..
        } = &event.kind
        {
            if *error == ErrorCode::NotEnoughReplicas {
                return (
                    Outcome::Error,
                    format!(
                        "At {} ms {} was refused {} record(s) of {partition} with {error}: the ISR is smaller than min.insync.replicas",
                        event.time,
                        NodeId::Producer(*producer),
                        records.len()
                    ),
                );
            }
        }
    }
    let mut rebalances = rebalances(window);
    if let Some((time, group, generation, assignment)) =
        rebalances.find(|(_, _, _, assignment)| assignment.iter().any(|member| member.partitions.is_empty()))
    {
        let idle: Vec<String> = assignment
            .iter()
            .filter(|member| member.partitions.is_empty())
            .map(|member| member.consumer.to_string())
            .collect();
        return (
            Outcome::Idle,
            format!(
                "At {time} ms group {group} generation {generation} gave {} member(s) partitions and {} none: {} member(s) more than there are partitions",
                assignment.len() - idle.len(),
                idle.join(", "),
                idle.len()
            ),
        );
    }
    // The election of a user topic's partition (internal topics' leaders
    // move with the same broker, but are not what the case is about).
    let elected = window.iter().find_map(|event| match &event.kind {
        TraceKind::LeaderElected {
            partition,
            leader: Some(leader),
            leader_epoch,
            isr,
            ..
        } if !partition.topic.starts_with("__") => Some(format!(
            "{} became leader of {partition} in epoch {leader_epoch} with ISR {:?}",
            NodeId::Broker(*leader),
            isr
        )),
        _ => None,
    });
    let acknowledged: usize = window
        .iter()
        .map(|event| match &event.kind {
            TraceKind::Acknowledged { records, .. } => records.len(),
            _ => 0,
        })
        .sum();
    let evidence = match elected {
        Some(elected) => format!("{elected}; {acknowledged} record(s) were acknowledged after it"),
        None => format!("{acknowledged} record(s) were acknowledged"),
    };
    (Outcome::Continue, evidence)
}

/// The learner's score: right answers out of the cases.
pub fn score(answers: &[Option<Outcome>], revealed: &[Revealed]) -> usize {
    answers
        .iter()
        .zip(revealed)
        .filter(|(answer, revealed)| **answer == Some(revealed.outcome))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documents' exercise, run: a fourth member idles, the first
    /// leader's death is survived, the second's refuses writes, and the
    /// unclean election loses records.
    #[test]
    fn the_run_reveals_idle_continue_error_loss() {
        let exercise = crate::lesson_model::lesson().exercises[0].clone();
        let revealed = reveal(&exercise).expect("the exercise plays");
        let outcomes: Vec<Outcome> = revealed.iter().map(|case| case.outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::Idle, Outcome::Continue, Outcome::Error, Outcome::Loss],
            "{revealed:#?}"
        );
        assert!(
            revealed[2].evidence.contains("NOT_ENOUGH_REPLICAS"),
            "{}",
            revealed[2].evidence
        );
        assert!(revealed.windows(2).all(|pair| pair[0].step < pair[1].step));
        // The loss is told by the records' real history, and "watch it"
        // opens the loss itself.
        let loss = &revealed[3].evidence;
        assert!(loss.contains("in an unclean election"), "{loss}");
        assert!(loss.contains("acknowledged with acks=all"), "{loss}");
        assert!(loss.contains("acknowledged with acks=1"), "{loss}");
        assert!(loss.contains("NOT_ENOUGH_REPLICAS at"), "{loss}");
        let run = StoryRun::start(story("exercise").expect("story")).expect("plays");
        assert_eq!(run.steps[revealed[3].step - 1].outcome, Some("loss"));
        let answers = [Some(Outcome::Idle), Some(Outcome::Error), None, Some(Outcome::Loss)];
        assert_eq!(score(&answers, &revealed), 2);
    }

    fn outcomes_of(id: &str) -> Vec<(Outcome, String)> {
        let exercise = crate::lesson_model::lesson()
            .exercises
            .iter()
            .find(|exercise| exercise.id == id)
            .expect("the exercise");
        reveal(exercise)
            .expect("the exercise plays")
            .into_iter()
            .map(|case| (case.outcome, case.evidence))
            .collect()
    }

    /// Growing a topic gives the idle member work; alice's hash lands on
    /// the same partition of 4 as of 2, bob's does not.
    #[test]
    fn the_partition_count_exercise_reveals_assigned_stays_moves() {
        let revealed = outcomes_of("partitions");
        let outcomes: Vec<Outcome> = revealed.iter().map(|(outcome, _)| *outcome).collect();
        assert_eq!(
            outcomes,
            [Outcome::Assigned, Outcome::Stays, Outcome::Moves],
            "{revealed:#?}"
        );
        for (key, partitions) in [("alice", (2, 4)), ("bob", (2, 4))] {
            let before =
                kafkascope_engine::partitioning::partition_for_key(key.as_bytes(), partitions.0).expect("some");
            let after = kafkascope_engine::partitioning::partition_for_key(key.as_bytes(), partitions.1).expect("some");
            let case = if key == "alice" { &revealed[1] } else { &revealed[2] };
            assert!(
                case.0
                    == if before == after {
                        Outcome::Stays
                    } else {
                        Outcome::Moves
                    }
            );
            assert!(
                case.1
                    .contains(&format!("orders-{before} before and to orders-{after} after")),
                "{}",
                case.1
            );
        }
    }

    #[test]
    fn the_slow_consumer_exercise_reveals_lag_growing_then_shrinking() {
        let revealed = outcomes_of("slow-consumer");
        let outcomes: Vec<Outcome> = revealed.iter().map(|(outcome, _)| *outcome).collect();
        assert_eq!(outcomes, [Outcome::Grows, Outcome::Shrinks], "{revealed:#?}");
    }

    #[test]
    fn the_poison_exercise_reveals_dead_letter_and_stop() {
        let revealed = outcomes_of("poison");
        let outcomes: Vec<Outcome> = revealed.iter().map(|(outcome, _)| *outcome).collect();
        assert_eq!(outcomes, [Outcome::DeadLettered, Outcome::Stops], "{revealed:#?}");
        assert!(revealed[0].1.contains("orders.DLQ"), "{}", revealed[0].1);
    }

    /// Every case offers its outcomes and names what its question needs.
    #[test]
    fn every_case_can_be_judged() {
        for exercise in &crate::lesson_model::lesson().exercises {
            assert!(
                crate::sequence_model::story(&exercise.story).is_some(),
                "{}",
                exercise.story
            );
            for case in &exercise.cases {
                assert!(case.choices().len() >= 2, "{}", case.id);
                if case.choices().contains(&Outcome::Moves) {
                    assert!(case.key.is_some(), "{}", case.id);
                }
                if case.choices().contains(&Outcome::Stops) {
                    assert!(case.group.is_some(), "{}", case.id);
                }
            }
        }
    }
}
