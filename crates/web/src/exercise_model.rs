//! The pitfalls exercise, predict then reveal: the learner labels each
//! case (idle, continue, error, loss) before the simulation runs it; the
//! run's own trace then says what happened in each case, with its
//! numbers, and the answers are scored. The cases and their prompts are
//! lesson data (`exercise` in `web/lesson.json`); the outcomes are never
//! written down, only read from the run.

use kafkascope_engine::sim::trace::{TraceEvent, TraceKind};
use kafkascope_engine::sim::types::{ErrorCode, NodeId};
use serde::Deserialize;

use crate::sequence_model::{story, StoryRun};

/// What a case ends in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
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
}

impl Outcome {
    pub const ALL: [Outcome; 4] = [Outcome::Idle, Outcome::Continue, Outcome::Error, Outcome::Loss];

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Idle => "idle",
            Outcome::Continue => "continue",
            Outcome::Error => "error",
            Outcome::Loss => "loss",
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

/// What a case turned out to be in the run, and the run's evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        let until = exercise
            .cases
            .get(index + 1)
            .and_then(|next| time_of(next.input))
            .unwrap_or(u64::MAX);
        let window: Vec<&TraceEvent> = run
            .trace()
            .iter()
            .filter(|event| event.time >= from && event.time < until)
            .collect();
        let (outcome, evidence) = judge(&window);
        let step = run
            .steps
            .iter()
            .position(|step| step.time >= from)
            .map_or(1, |index| index + 1);
        revealed.push(Revealed {
            outcome,
            evidence,
            step,
        });
    }
    Ok(revealed)
}

/// A case's outcome from its events: a loss outweighs an error, which
/// outweighs an idle member; otherwise writes went on.
fn judge(window: &[&TraceEvent]) -> (Outcome, String) {
    for event in window {
        if let TraceKind::RecordsLost {
            partition,
            records,
            reason,
            ..
        } = &event.kind
        {
            return (
                Outcome::Loss,
                format!(
                    "At {} ms {} acknowledged record(s) of {partition} were gone: {reason}",
                    event.time,
                    records.len()
                ),
            );
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
    let mut rebalances = window.iter().filter_map(|event| match &event.kind {
        TraceKind::GroupRebalanced {
            group,
            generation,
            assignment,
            ..
        } => Some((event.time, group, generation, assignment)),
        _ => None,
    });
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
        let exercise = crate::lesson_model::lesson().exercise.clone();
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
        let answers = [Some(Outcome::Idle), Some(Outcome::Error), None, Some(Outcome::Loss)];
        assert_eq!(score(&answers, &revealed), 2);
    }
}
