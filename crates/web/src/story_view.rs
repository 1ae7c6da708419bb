//! What a story shows by default: its outline. The steps before the
//! story's first input (brokers registering, groups forming, coordinator
//! lookups) fold into one "the cluster starts" step; a story opens on its
//! first chapter; its key moments (a loss, an election, a rebalance, a
//! refusal, a fence) are marks on the timeline to jump between; and a long
//! story shows, by default, only the steps that carry it (at most
//! [`MAX_DEFAULT_STEPS`]), with every step one switch away. Plain data
//! over [`Step`]s, tested natively; [`crate::story_cursor`] keeps the
//! learner's place in it and [`crate::sequence`] draws it.

use kafkascope_engine::sorting::Gather;
use std::collections::BTreeSet;
use std::ops::Range;

use crate::sequence_model::{Step, StepKind};

/// The most steps a story's default view has.
pub const MAX_DEFAULT_STEPS: usize = 150;

/// The longest a story plays at its default pace, in milliseconds.
pub const MAX_PLAY_MS: u32 = 90_000;

/// The slowest default pace (real milliseconds a step), for a short story.
pub const SLOWEST_PACE_MS: u32 = 900;

/// A key moment: the kinds of step a learner jumps between.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Moment {
    /// Acknowledged records are gone.
    Loss,
    /// A partition or the controller quorum got a new leader.
    Election,
    /// A group moved to a new generation or epoch.
    Rebalance,
    /// A write was refused or failed.
    Refusal,
    /// The controller fenced a broker.
    Fence,
}

impl Moment {
    /// The moment a step is, if any.
    pub fn of(step: &Step) -> Option<Moment> {
        match step.name.as_str() {
            "records-lost" => Some(Moment::Loss),
            "leader-elected" | "controller-elected" => Some(Moment::Election),
            "rebalance" => Some(Moment::Rebalance),
            "produce-failed" | "write-refused" => Some(Moment::Refusal),
            // (An unfencing is a fencing step that needs no explaining.)
            "fencing" if step.explainable => Some(Moment::Fence),
            _ => None,
        }
    }

    /// Its name on the timeline.
    pub fn label(self) -> &'static str {
        match self {
            Moment::Loss => "loss",
            Moment::Election => "election",
            Moment::Rebalance => "rebalance",
            Moment::Refusal => "refusal",
            Moment::Fence => "fence",
        }
    }
}

/// A chapter: the input step that opens it and its caption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chapter {
    pub index: usize,
    pub title: String,
}

/// The steps before the story's first input, folded into one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Startup {
    /// The steps folded (all before the first input).
    pub folded: Range<usize>,
    /// The step that stands for them: the last, so the map beside it shows
    /// the cluster once it has started.
    pub shown: usize,
    /// What happened, in one paragraph.
    pub text: String,
}

/// A story's outline: chapters, key moments, the folded start-up and the
/// default view.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    pub chapters: Vec<Chapter>,
    /// Every key moment, in order (index into all steps; those of the
    /// start-up are shown when it is open).
    pub moments: Vec<(usize, Moment)>,
    pub startup: Option<Startup>,
    /// The steps of the default view, in order, the start-up step included.
    default_view: BTreeSet<usize>,
    /// Whether the default view leaves out steps after the start-up (a long
    /// story shows only what carries it).
    pub abridged: bool,
}

impl Outline {
    /// The outline of a story's steps.
    pub fn of(steps: &[Step]) -> Outline {
        let first_input = steps
            .iter()
            .position(|step| matches!(step.kind, StepKind::Input { .. }))
            .unwrap_or(0);
        let startup = (first_input >= 2).then(|| Startup {
            folded: 0..first_input,
            shown: first_input - 1,
            text: startup_text(&steps[..first_input]),
        });
        let mut chapters: Vec<Chapter> = steps
            .iter()
            .enumerate()
            .filter(|(_, step)| matches!(step.kind, StepKind::Input { .. }))
            .filter_map(|(index, step)| {
                step.chapter.as_ref().map(|title| Chapter {
                    index,
                    title: title.clone(),
                })
            })
            .collect();
        if chapters.is_empty() && first_input < steps.len() {
            // A story without chapters has one: its first input.
            chapters.push(Chapter {
                index: first_input,
                title: "The story begins".to_string(),
            });
        }
        let moments = steps
            .iter()
            .enumerate()
            .filter_map(|(index, step)| Moment::of(step).map(|moment| (index, moment)))
            .collect();
        let body = first_input.min(steps.len())..steps.len();
        let mut default_view: BTreeSet<usize> = body.clone().gather();
        let mut abridged = false;
        if default_view.len() + usize::from(startup.is_some()) > MAX_DEFAULT_STEPS {
            abridged = true;
            default_view = key_steps(steps, body.clone(), &chapters, false);
            if default_view.len() + usize::from(startup.is_some()) > MAX_DEFAULT_STEPS {
                default_view = key_steps(steps, body, &chapters, true);
            }
        }
        if let Some(startup) = &startup {
            default_view.insert(startup.shown);
        } else {
            default_view.extend(0..first_input);
        }
        Outline {
            chapters,
            moments,
            startup,
            default_view,
            abridged,
        }
    }

    /// Whether step `index` is in the default view, with the start-up open
    /// or folded.
    pub fn in_default_view(&self, index: usize, startup_open: bool) -> bool {
        self.default_view.contains(&index)
            || (startup_open
                && self
                    .startup
                    .as_ref()
                    .is_some_and(|startup| startup.folded.contains(&index)))
    }

    /// How many steps the default view has (start-up folded).
    pub fn default_len(&self) -> usize {
        self.default_view.len()
    }

    /// The step a story opens on: its first chapter's input.
    pub fn opening_step(&self) -> usize {
        self.chapters.first().map_or(0, |chapter| chapter.index)
    }

    /// The step that stands for the folded start-up, when `index` is it and
    /// the start-up is folded.
    pub fn folded_startup(&self, index: usize, startup_open: bool) -> Option<&Startup> {
        self.startup
            .as_ref()
            .filter(|startup| !startup_open && startup.shown == index)
    }

    /// The chapter step `index` is in (its position in [`Self::chapters`]).
    pub fn chapter_of(&self, index: usize) -> Option<usize> {
        self.chapters.iter().rposition(|chapter| chapter.index <= index)
    }

    /// The chapter after (`forward`) or before the one `index` is in: where
    /// its input step is. Backward from inside a chapter goes to its start.
    pub fn chapter_jump(&self, index: usize, forward: bool) -> Option<usize> {
        if forward {
            self.chapters.iter().map(|chapter| chapter.index).find(|&at| at > index)
        } else {
            self.chapters
                .iter()
                .map(|chapter| chapter.index)
                .filter(|&at| at < index)
                .last()
        }
    }

    /// The key moment after (`forward`) or before `index` among `shown`.
    pub fn moment_jump(&self, index: usize, forward: bool, shown: &[usize]) -> Option<usize> {
        let visible = |at: &usize| shown.binary_search(at).is_ok();
        let mut candidates = self.moments.iter().map(|(at, _)| *at).filter(visible);
        if forward {
            candidates.find(|&at| at > index)
        } else {
            candidates.filter(|&at| at < index).last()
        }
    }

    /// The default pace (real milliseconds a step) for `shown` steps: slow
    /// for a short story, and never longer than [`MAX_PLAY_MS`] in all for
    /// the default view.
    pub fn pace_ms(&self) -> u32 {
        let steps = self.default_len().max(1) as u32;
        (MAX_PLAY_MS / steps).min(SLOWEST_PACE_MS)
    }
}

/// A step's kind of event on its lifeline, numbers left out: steps with the
/// same one say the same thing again ("append 10..20 → LEO 20").
fn likeness(step: &Step) -> (String, String) {
    let (on, text) = match &step.kind {
        StepKind::Note { over, text } => (over.to_string(), text.as_str()),
        StepKind::Input { text } => (String::new(), text.as_str()),
        StepKind::Arrow { from, to, label, .. } => (format!("{from}→{to}"), label.as_str()),
    };
    (
        format!("{}:{on}", step.name),
        text.chars().filter(|c| !c.is_ascii_digit()).collect(),
    )
}

/// A step about one of Kafka's internal topics only (`__consumer_offsets`,
/// `__transaction_state`): housekeeping in a story about something else.
fn internal_only(step: &Step) -> bool {
    !step.partitions.is_empty() && step.partitions.iter().all(|partition| partition.starts_with("__"))
}

/// The steps that carry a long story: every chapter, key moment and
/// outcome other than a plain acknowledgement, and of everything else the
/// first of each kind in each chapter (no messages, no internal topics'
/// housekeeping). With `tight`, only chapters, moments, losses and errors.
fn key_steps(steps: &[Step], body: Range<usize>, chapters: &[Chapter], tight: bool) -> BTreeSet<usize> {
    let mut kept = BTreeSet::new();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for index in body {
        let step = &steps[index];
        if chapters.iter().any(|chapter| chapter.index == index) {
            kept.insert(index);
            seen.clear();
            continue;
        }
        if Moment::of(step).is_some() || matches!(step.outcome, Some("loss") | Some("error")) {
            kept.insert(index);
            continue;
        }
        if tight || matches!(step.kind, StepKind::Arrow { .. }) || internal_only(step) {
            continue;
        }
        if seen.insert(likeness(step)) {
            kept.insert(index);
        }
    }
    kept
}

/// What the start-up did: its state changes in a few words each, and the
/// messages that carried them.
fn startup_text(steps: &[Step]) -> String {
    let end = steps.last().map_or(0, |step| step.time);
    let mut happened: Vec<String> = Vec::new();
    let mut messages: BTreeSet<String> = BTreeSet::new();
    for step in steps {
        match &step.kind {
            StepKind::Arrow { name, .. } => {
                messages.insert(name.to_string());
            }
            StepKind::Note { over, text } if !internal_only(step) => {
                let line = format!("{over}: {text}");
                if !happened.contains(&line) {
                    happened.push(line);
                }
            }
            _ => {}
        }
    }
    let when = if end == 0 {
        "at 0 ms".to_string()
    } else {
        format!("0–{end} ms")
    };
    let mut text = format!(
        "The cluster starts ({when}): before the story begins, {} steps get it ready, shown here as this one.",
        steps.len()
    );
    if !happened.is_empty() {
        text.push_str(&format!(" What changed, node by node: {}.", happened.join("; ")));
    }
    if !messages.is_empty() {
        text.push_str(&format!(
            " The requests and answers it took: {}.",
            messages.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence_model::{stories, StoryRun};

    #[test]
    fn every_story_opens_on_its_first_chapter_with_at_most_150_default_steps_and_its_start_up_folded() {
        for story in stories() {
            let run = StoryRun::start(story).unwrap_or_else(|error| panic!("{}: {error}", story.id));
            let outline = &run.outline;
            assert!(
                outline.default_len() <= MAX_DEFAULT_STEPS,
                "{}: {} default steps",
                story.id,
                outline.default_len()
            );
            assert!(!outline.chapters.is_empty(), "{}: no chapter", story.id);
            let opening = outline.opening_step();
            assert!(
                matches!(run.steps[opening].kind, StepKind::Input { .. }),
                "{}: opens on step {opening}, not an input",
                story.id
            );
            assert!(outline.in_default_view(opening, false), "{}", story.id);
            // Every chapter's input and every key moment is in the default view.
            for chapter in &outline.chapters {
                assert!(
                    outline.in_default_view(chapter.index, false),
                    "{}: {:?}",
                    story.id,
                    chapter
                );
                assert!(matches!(run.steps[chapter.index].kind, StepKind::Input { .. }));
            }
            let after_startup = outline.startup.as_ref().map_or(0, |startup| startup.folded.end);
            for (index, moment) in outline.moments.iter().filter(|(index, _)| *index >= after_startup) {
                assert!(
                    outline.in_default_view(*index, false),
                    "{}: {moment:?} at {index} hidden",
                    story.id
                );
            }
            // The start-up is one step, and opening it shows every step of it.
            if let Some(startup) = &outline.startup {
                let shown = startup
                    .folded
                    .clone()
                    .filter(|&index| outline.in_default_view(index, false));
                assert_eq!(shown.collect::<Vec<_>>(), [startup.shown], "{}", story.id);
                assert!(startup.folded.clone().all(|index| outline.in_default_view(index, true)));
                assert!(startup.text.starts_with("The cluster starts"), "{}", story.id);
            }
            // Played at its default pace, it ends within 90 s.
            assert!(
                outline.pace_ms() as usize * outline.default_len() <= MAX_PLAY_MS as usize,
                "{}",
                story.id
            );
        }
    }

    #[test]
    fn chapter_and_moment_jumps_land_on_the_chapters_input_and_the_moment() {
        let run = StoryRun::start(crate::sequence_model::story("exercise").expect("story")).expect("plays");
        let outline = &run.outline;
        assert!(outline.chapters.len() >= 3);
        let mut at = outline.opening_step();
        assert_eq!(at, outline.chapters[0].index);
        for chapter in &outline.chapters[1..] {
            at = outline.chapter_jump(at, true).expect("a next chapter");
            assert_eq!(at, chapter.index);
            assert!(matches!(run.steps[at].kind, StepKind::Input { .. }));
        }
        assert_eq!(outline.chapter_jump(at, true), None);
        assert_eq!(
            outline.chapter_jump(at + 1, false),
            Some(at),
            "back from inside a chapter: its start"
        );
        let shown: Vec<usize> = (0..run.steps.len()).collect();
        let first = outline.moment_jump(0, true, &shown).expect("a moment");
        assert_eq!(first, outline.moments[0].0);
        assert_eq!(outline.moment_jump(first, false, &shown), None);
    }

    #[test]
    fn a_short_story_shows_every_step_after_its_start_up() {
        let run = StoryRun::start(crate::sequence_model::story("happy-path").expect("story")).expect("plays");
        let outline = &run.outline;
        assert!(!outline.abridged);
        let startup = outline.startup.as_ref().expect("the happy path has a start-up");
        assert!((startup.folded.end..run.steps.len()).all(|index| outline.in_default_view(index, false)));
    }
}
