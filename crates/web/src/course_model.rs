//! A course package's reports to the learning platform: what the learner
//! did (answers, a story's step, a run of the sandbox) as the values of the
//! SCORM 1.2 and SCORM 2004 (4th edition) run-time data model, and the
//! learner's place kept in `suspend_data` so that a learner who leaves and
//! comes back finds it again.
//!
//! `cargo xtask course` writes the package; its launch address names the
//! SCORM version, the part and the mastery score
//! (`?embed=lesson&scorm=2004&exercise=pitfalls&mastery=75`). This module
//! is the one reducer: from the progress to the values, tested natively;
//! `crates/web/js/course.js` finds the platform's API and sets them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::exercise_model::{Exercise, Outcome};

/// The run-time API a package speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scorm {
    /// SCORM 1.2: `window.API`, `cmi.core.*`.
    V12,
    /// SCORM 2004 4th edition: `window.API_1484_11`, `cmi.*`.
    V2004,
}

impl Scorm {
    /// Its name in the launch address (`scorm=1.2`, `scorm=2004`).
    pub fn name(self) -> &'static str {
        match self {
            Scorm::V12 => "1.2",
            Scorm::V2004 => "2004",
        }
    }

    pub fn parse(text: &str) -> Option<Scorm> {
        [Scorm::V12, Scorm::V2004].into_iter().find(|scorm| scorm.name() == text)
    }

    /// The most `suspend_data` may hold (characters).
    pub fn suspend_limit(self) -> usize {
        match self {
            Scorm::V12 => 4096,
            Scorm::V2004 => 64000,
        }
    }
}

/// What a package's launch address asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub scorm: Scorm,
    /// The share of right answers that passes, in percent (none: a
    /// finished part is "completed", neither passed nor failed).
    pub mastery: Option<u8>,
    /// The one exercise scored (none: every exercise of the lesson).
    pub exercise: Option<String>,
}

/// The launch a page's address asks for, if it is a course package's.
pub fn launch(query: &str) -> Option<Launch> {
    let param = |name: &str| crate::view_model::query_param(query, name);
    let scorm = Scorm::parse(param("scorm")?)?;
    let mastery = param("mastery").and_then(|text| text.parse::<u8>().ok()).filter(|percent| *percent <= 100);
    Some(Launch {
        scorm,
        mastery,
        exercise: param("exercise").map(str::to_string),
    })
}

/// One exercise as the learner left it: an answer per case, and once run,
/// what each case turned out to be (the same at every run) and the
/// answers of the learner's best run, which is what the platform scores:
/// changing an answer afterwards, or a worse run, takes nothing away.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExerciseProgress {
    #[serde(rename = "a")]
    pub answers: Vec<Option<Outcome>>,
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<Vec<Outcome>>,
    #[serde(rename = "b", default, skip_serializing_if = "Option::is_none")]
    pub best: Option<Vec<Option<Outcome>>>,
}

fn right_answers(answers: &[Option<Outcome>], outcomes: &[Outcome]) -> usize {
    answers
        .iter()
        .zip(outcomes)
        .filter(|(answer, outcome)| **answer == Some(**outcome))
        .count()
}

impl ExerciseProgress {
    /// The learner's answers now and, after a run, its outcomes: a run
    /// that scores better than the best so far becomes the best.
    pub fn record(&mut self, answers: &[Option<Outcome>], outcomes: Option<Vec<Outcome>>) {
        self.answers = answers.to_vec();
        let Some(outcomes) = outcomes else { return };
        let better = match &self.best {
            Some(best) => right_answers(answers, &outcomes) > right_answers(best, &outcomes),
            None => true,
        };
        if better {
            self.best = Some(answers.to_vec());
        }
        self.outcomes = Some(outcomes);
    }

    /// The best run's right answers and cases.
    pub fn best_score(&self) -> Option<(usize, usize)> {
        let (best, outcomes) = (self.best.as_ref()?, self.outcomes.as_ref()?);
        Some((right_answers(best, outcomes), outcomes.len()))
    }
}

/// What the platform keeps of a learner's visit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Progress {
    /// The exercises, by id.
    #[serde(rename = "e", default, skip_serializing_if = "BTreeMap::is_empty")]
    pub exercises: BTreeMap<String, ExerciseProgress>,
    /// The story's step (1-based) and whether its last step was reached.
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub step: Option<usize>,
    #[serde(rename = "f", default, skip_serializing_if = "std::ops::Not::not")]
    pub finished: bool,
    /// The sandbox ran the learner's code.
    #[serde(rename = "r", default, skip_serializing_if = "std::ops::Not::not")]
    pub ran: bool,
}

impl Progress {
    /// As `suspend_data`: compact JSON.
    pub fn suspend_data(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// What `suspend_data` kept; a damaged or foreign text keeps nothing
    /// (the learner starts again rather than seeing an error).
    pub fn resume(text: &str) -> Progress {
        serde_json::from_str(text).unwrap_or_default()
    }
}

/// The part a package is: what completes it and what scores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Exercises, scored: complete once each has been run.
    Exercises,
    /// A story: complete at its last step.
    Story,
    /// The sandbox: complete once the learner's code has run.
    Sandbox,
}

/// The right answers and the cases of the scored exercises, once every
/// one of them has been run (`None` before).
fn scored(progress: &Progress, exercises: &[&Exercise]) -> Option<(usize, usize)> {
    let mut right = 0;
    let mut total = 0;
    for exercise in exercises {
        let (best, cases) = progress.exercises.get(&exercise.id)?.best_score()?;
        total += cases;
        right += best;
    }
    (total > 0).then_some((right, total))
}

/// The data model's values for the progress, in the order to set them.
pub fn values(launch: &Launch, part: Part, progress: &Progress, exercises: &[&Exercise]) -> Vec<(String, String)> {
    let v12 = launch.scorm == Scorm::V12;
    let mut out: Vec<(String, String)> = Vec::new();
    let mut set = |key: &str, value: String| out.push((key.to_string(), value));
    let (complete, score) = match part {
        Part::Exercises => {
            let score = scored(progress, exercises);
            (score.is_some(), score)
        }
        Part::Story => (progress.finished, None),
        Part::Sandbox => (progress.ran, None),
    };
    let passed = match (score, launch.mastery) {
        (Some((right, total)), Some(mastery)) => Some(right * 100 >= usize::from(mastery) * total),
        _ => None,
    };
    if let Some((right, total)) = score {
        if v12 {
            // 1.2's raw score is read as a percentage by most platforms.
            set("cmi.core.score.raw", ((right * 100 + total / 2) / total).to_string());
            set("cmi.core.score.min", "0".into());
            set("cmi.core.score.max", "100".into());
        } else {
            set("cmi.score.raw", right.to_string());
            set("cmi.score.min", "0".into());
            set("cmi.score.max", total.to_string());
            set("cmi.score.scaled", scaled(right, total));
        }
    }
    if v12 {
        let status = match (complete, passed) {
            (false, _) => "incomplete",
            (true, None) => "completed",
            (true, Some(true)) => "passed",
            (true, Some(false)) => "failed",
        };
        set("cmi.core.lesson_status", status.into());
        set("cmi.core.exit", if complete { "" } else { "suspend" }.into());
    } else {
        set("cmi.completion_status", if complete { "completed" } else { "incomplete" }.into());
        set(
            "cmi.success_status",
            match passed {
                None => "unknown",
                Some(true) => "passed",
                Some(false) => "failed",
            }
            .into(),
        );
        set("cmi.exit", if complete { "normal" } else { "suspend" }.into());
    }
    if let Some(step) = progress.step {
        set(if v12 { "cmi.core.lesson_location" } else { "cmi.location" }, format!("step={step}"));
    }
    let suspend = progress.suspend_data();
    if suspend.chars().count() <= launch.scorm.suspend_limit() {
        set("cmi.suspend_data", suspend);
    }
    let mut index = 0;
    for exercise in exercises {
        let Some(saved) = progress.exercises.get(&exercise.id) else { continue };
        let (Some(outcomes), Some(best)) = (&saved.outcomes, &saved.best) else { continue };
        for ((case, answer), outcome) in exercise.cases.iter().zip(best).zip(outcomes) {
            let key = |field: &str| format!("cmi.interactions.{index}.{field}");
            set(&key("id"), format!("{}-{}", exercise.id, case.id));
            set(&key("type"), "choice".into());
            // SCORM 1.2 writes a choice as a letter (a for the first one
            // offered); 2004 takes the outcome's own word.
            let spell = |outcome: Outcome| match v12 {
                true => case
                    .choices()
                    .iter()
                    .position(|offered| *offered == outcome)
                    .and_then(|position| u8::try_from(position).ok())
                    .map_or_else(|| outcome.label().to_string(), |position| char::from(b'a' + position).to_string()),
                false => outcome.label().to_string(),
            };
            let response = answer.map(spell).unwrap_or_default();
            set(&key(if v12 { "student_response" } else { "learner_response" }), response);
            set(&key("correct_responses.0.pattern"), spell(*outcome));
            let right = *answer == Some(*outcome);
            set(
                &key("result"),
                match (right, v12) {
                    (true, _) => "correct",
                    (false, true) => "wrong",
                    (false, false) => "incorrect",
                }
                .into(),
            );
            if !v12 {
                set(&key("description"), shortened(&case.prompt, 250));
            }
            index += 1;
        }
    }
    out
}

/// At most `most` characters, cut at a word with an ellipsis.
fn shortened(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_string();
    }
    let cut: String = text.chars().take(most - 1).collect();
    let cut = cut.rfind(' ').map_or(cut.as_str(), |space| &cut[..space]);
    format!("{}…", cut.trim_end_matches([',', ';', ':', '.']))
}

/// `right / total` as 2004's scaled score: a decimal from 0 to 1.
fn scaled(right: usize, total: usize) -> String {
    let value = right as f64 / total as f64;
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The part an address shows, as a package reports it.
pub fn part(query: &str) -> Part {
    use crate::view_model::Embed;
    match crate::view_model::embed_mode(query) {
        Ok(Some(Embed::Steps)) => Part::Story,
        Ok(Some(Embed::Sandbox)) => Part::Sandbox,
        _ => Part::Exercises,
    }
}

/// The exercises a package scores: the one its launch names, or all.
pub fn scored_exercises<'a>(launch: &Launch, all: &'a [Exercise]) -> Vec<&'a Exercise> {
    all.iter()
        .filter(|exercise| launch.exercise.as_ref().is_none_or(|only| *only == exercise.id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exercises() -> &'static [Exercise] {
        &crate::lesson_model::lesson().exercises
    }

    fn pitfalls(launch: &Launch) -> Vec<&'static Exercise> {
        scored_exercises(launch, exercises())
    }

    fn answered(right_of_four: usize) -> Progress {
        // The pitfalls exercise's four cases; the first `right_of_four`
        // answered as the run turns out.
        let outcomes = vec![Outcome::Idle, Outcome::Continue, Outcome::Error, Outcome::Loss];
        let answers: Vec<Option<Outcome>> = outcomes
            .iter()
            .enumerate()
            .map(|(index, outcome)| Some(if index < right_of_four { *outcome } else { Outcome::Idle }))
            .collect();
        let mut progress = Progress::default();
        let mut saved = ExerciseProgress::default();
        saved.record(&answers, Some(outcomes));
        progress.exercises.insert("pitfalls".into(), saved);
        progress
    }

    fn value<'a>(values: &'a [(String, String)], key: &str) -> Option<&'a str> {
        values.iter().rev().find(|(each, _)| each == key).map(|(_, value)| value.as_str())
    }

    #[test]
    fn the_launch_names_the_version_the_mastery_and_the_exercise() {
        assert_eq!(
            launch("?embed=lesson&scorm=2004&exercise=pitfalls&mastery=75"),
            Some(Launch {
                scorm: Scorm::V2004,
                mastery: Some(75),
                exercise: Some("pitfalls".into())
            })
        );
        assert_eq!(launch("?scorm=1.2").map(|launch| (launch.scorm, launch.mastery)), Some((Scorm::V12, None)));
        assert_eq!(launch("?scorm=1.3"), None);
        assert_eq!(launch("?embed=lesson"), None);
        assert_eq!(launch("?scorm=2004&mastery=150").and_then(|launch| launch.mastery), None);
        assert_eq!(part("?embed=steps&story=happy-path&scorm=1.2"), Part::Story);
        assert_eq!(part("?embed=sandbox&scorm=1.2"), Part::Sandbox);
        assert_eq!(part("?embed=lesson&scorm=1.2"), Part::Exercises);
    }

    #[test]
    fn an_exercise_not_yet_run_is_incomplete_and_unscored() {
        for scorm in [Scorm::V12, Scorm::V2004] {
            let launch = Launch { scorm, mastery: Some(75), exercise: Some("pitfalls".into()) };
            let mut progress = answered(4);
            if let Some(saved) = progress.exercises.get_mut("pitfalls") {
                saved.outcomes = None;
                saved.best = None;
            }
            let values = values(&launch, Part::Exercises, &progress, &pitfalls(&launch));
            match scorm {
                Scorm::V12 => {
                    assert_eq!(value(&values, "cmi.core.lesson_status"), Some("incomplete"));
                    assert_eq!(value(&values, "cmi.core.exit"), Some("suspend"));
                    assert_eq!(value(&values, "cmi.core.score.raw"), None);
                }
                Scorm::V2004 => {
                    assert_eq!(value(&values, "cmi.completion_status"), Some("incomplete"));
                    assert_eq!(value(&values, "cmi.success_status"), Some("unknown"));
                    assert_eq!(value(&values, "cmi.score.scaled"), None);
                }
            }
            assert!(values.iter().all(|(key, _)| !key.starts_with("cmi.interactions")));
            // What was answered is kept for the learner's return.
            let kept = value(&values, "cmi.suspend_data").expect("suspend data");
            assert_eq!(Progress::resume(kept), progress);
        }
    }

    #[test]
    fn a_run_exercise_is_scored_passed_or_failed_against_the_mastery_with_each_answer_an_interaction() {
        let v2004 = Launch { scorm: Scorm::V2004, mastery: Some(75), exercise: Some("pitfalls".into()) };
        let values_3 = values(&v2004, Part::Exercises, &answered(3), &pitfalls(&v2004));
        assert_eq!(value(&values_3, "cmi.completion_status"), Some("completed"));
        assert_eq!(value(&values_3, "cmi.success_status"), Some("passed"));
        assert_eq!(value(&values_3, "cmi.score.raw"), Some("3"));
        assert_eq!(value(&values_3, "cmi.score.max"), Some("4"));
        assert_eq!(value(&values_3, "cmi.score.scaled"), Some("0.75"));
        assert_eq!(value(&values_3, "cmi.interactions.0.id"), Some("pitfalls-fourth-member"));
        assert_eq!(value(&values_3, "cmi.interactions.3.result"), Some("incorrect"));
        assert_eq!(value(&values_3, "cmi.interactions.3.learner_response"), Some("idle"));
        assert_eq!(value(&values_3, "cmi.interactions.3.correct_responses.0.pattern"), Some("loss"));
        assert_eq!(value(&values_3, "cmi.interactions.4.id"), None);
        let values_2 = values(&v2004, Part::Exercises, &answered(2), &pitfalls(&v2004));
        assert_eq!(value(&values_2, "cmi.success_status"), Some("failed"));
        let v12 = Launch { scorm: Scorm::V12, ..v2004.clone() };
        let values_12 = values(&v12, Part::Exercises, &answered(3), &pitfalls(&v12));
        assert_eq!(value(&values_12, "cmi.core.lesson_status"), Some("passed"));
        assert_eq!(value(&values_12, "cmi.core.score.raw"), Some("75"));
        assert_eq!(value(&values_12, "cmi.core.score.max"), Some("100"));
        assert_eq!(value(&values_12, "cmi.interactions.3.result"), Some("wrong"));
        // 1.2 spells a choice as its letter: idle is a, loss is d.
        assert_eq!(value(&values_12, "cmi.interactions.3.student_response"), Some("a"));
        assert_eq!(value(&values_12, "cmi.interactions.3.correct_responses.0.pattern"), Some("d"));
        assert_eq!(value(&values_12, "cmi.interactions.1.student_response"), Some("b"));
        assert_eq!(value(&values_12, "cmi.core.exit"), Some(""));
        // Without a mastery score a finished exercise is completed.
        let free = Launch { mastery: None, ..v12 };
        assert_eq!(
            value(&values(&free, Part::Exercises, &answered(0), &pitfalls(&free)), "cmi.core.lesson_status"),
            Some("completed")
        );
    }

    #[test]
    fn the_best_run_counts_and_changing_an_answer_afterwards_takes_nothing_away() {
        let launch = Launch { scorm: Scorm::V2004, mastery: Some(75), exercise: Some("pitfalls".into()) };
        let mut progress = answered(4);
        let outcomes = vec![Outcome::Idle, Outcome::Continue, Outcome::Error, Outcome::Loss];
        let Some(saved) = progress.exercises.get_mut("pitfalls") else { panic!("saved") };
        // A changed answer, then a worse run.
        saved.record(&[Some(Outcome::Loss), None, None, None], None);
        assert_eq!(saved.best_score(), Some((4, 4)));
        saved.record(&[Some(Outcome::Loss); 4], Some(outcomes.clone()));
        assert_eq!(saved.best_score(), Some((4, 4)));
        assert_eq!(saved.answers, vec![Some(Outcome::Loss); 4]);
        let values = values(&launch, Part::Exercises, &progress, &pitfalls(&launch));
        assert_eq!(value(&values, "cmi.success_status"), Some("passed"));
        assert_eq!(value(&values, "cmi.score.raw"), Some("4"));
        assert_eq!(value(&values, "cmi.interactions.0.learner_response"), Some("idle"));
        // What the learner sees again is the answers as they left them.
        let kept = Progress::resume(value(&values, "cmi.suspend_data").expect("kept"));
        assert_eq!(kept.exercises["pitfalls"].answers, vec![Some(Outcome::Loss); 4]);
    }

    #[test]
    fn a_long_prompt_is_cut_at_a_word() {
        let cut = shortened(&"word ".repeat(100), 250);
        assert!(cut.chars().count() <= 250 && cut.ends_with("word…"), "{cut}");
        assert_eq!(shortened("short", 250), "short");
    }

    #[test]
    fn the_whole_lesson_completes_once_every_exercise_has_run() {
        let launch = Launch { scorm: Scorm::V2004, mastery: None, exercise: None };
        let all = scored_exercises(&launch, exercises());
        assert!(all.len() >= 4);
        let values = values(&launch, Part::Exercises, &answered(4), &all);
        assert_eq!(value(&values, "cmi.completion_status"), Some("incomplete"));
        assert_eq!(value(&values, "cmi.score.raw"), None);
    }

    #[test]
    fn a_story_completes_at_its_last_step_and_keeps_the_step_as_its_location() {
        let launch = Launch { scorm: Scorm::V12, mastery: Some(80), exercise: None };
        let mut progress = Progress { step: Some(5), ..Progress::default() };
        let before = values(&launch, Part::Story, &progress, &[]);
        assert_eq!(value(&before, "cmi.core.lesson_status"), Some("incomplete"));
        assert_eq!(value(&before, "cmi.core.lesson_location"), Some("step=5"));
        progress.finished = true;
        let after = values(&launch, Part::Story, &progress, &[]);
        assert_eq!(value(&after, "cmi.core.lesson_status"), Some("completed"));
        let sandbox = Progress { ran: true, ..Progress::default() };
        let v2004 = Launch { scorm: Scorm::V2004, ..launch };
        assert_eq!(value(&values(&v2004, Part::Sandbox, &sandbox, &[]), "cmi.completion_status"), Some("completed"));
    }

    #[test]
    fn damaged_suspend_data_starts_afresh() {
        for text in ["", "garbage", "{\"e\": 5}", "[1,2]"] {
            assert_eq!(Progress::resume(text), Progress::default(), "{text}");
        }
    }
}
