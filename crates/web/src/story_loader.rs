//! Opening a story a slice at a time: its first play and the forks a link
//! carries each replay the story, and a costly one (a large scenario file,
//! a link with many forks) would hold the page's thread for seconds. A
//! [`StoryLoader`] plays a bounded amount of work per call, says how far it
//! is, and can be stopped; the steps section draws its progress between
//! slices and opens the story (or as much of it as played) when it is done.
//! Plain Rust, tested natively.

use std::collections::VecDeque;

use crate::sequence_model::{first_story, link_problem, parse_forks, parse_link, Filter, ForkLink, StoryDef, StoryRun};
use crate::story_cursor::{fork_inputs, fork_label};

/// Work the page plays at once when a story opens: what the shipped
/// stories take at most (a test keeps them within a tenth of
/// [`kafkascope_engine::limits::MAX_STORY_WORK`]), so they open at once as
/// before; anything larger goes on in slices of [`SLICE_WORK`].
pub const OPEN_WORK: u64 = kafkascope_engine::limits::MAX_STORY_WORK / 10;

/// Work of one later slice: the run link's slice
/// ([`crate::share::REPLAY_SLICE_WORK`]), well under the 100 ms a page may
/// hold its thread on a slow laptop.
pub const SLICE_WORK: u64 = crate::share::REPLAY_SLICE_WORK;

/// How far a story being opened is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadProgress {
    /// Simulated time reached, and the time the play goes to.
    pub now_ms: u64,
    pub until_ms: u64,
    /// The fork being replayed (from 1) and how many the link carries; 0
    /// while the story itself plays.
    pub fork: usize,
    pub forks: usize,
}

impl LoadProgress {
    /// The sentence the section shows.
    pub fn text(&self) -> String {
        let played = format!("{} of {} ms", self.now_ms, self.until_ms);
        if self.fork == 0 {
            format!("Playing the story: {played}.")
        } else {
            format!("Replaying this link's fork {} of {}: {played}.", self.fork, self.forks)
        }
    }
}

/// A story being opened.
pub struct StoryLoader {
    run: StoryRun,
    /// Forks replayed (or being replayed), in order.
    forks: Vec<ForkLink>,
    /// Forks still to replay.
    pending: VecDeque<ForkLink>,
    /// How many forks the link carries.
    fork_total: usize,
    /// Whether the story's own first play is over.
    played: bool,
    /// The work every play so far took.
    replayed: u64,
    /// What went wrong with the link's forks, or that the learner stopped.
    problem: Option<String>,
    /// Why the story itself does not open (its first play refused).
    failed: Option<String>,
    /// Where it opens: the step (`None`: its opening) and filter.
    pub step: Option<usize>,
    pub filter: Filter,
    /// The link it came from, for the link's own problems.
    query: Option<String>,
    done: bool,
}

/// A story opened and played: what the steps section opens.
pub struct Loaded {
    pub run: StoryRun,
    pub forks: Vec<ForkLink>,
    pub step: Option<usize>,
    pub filter: Filter,
    /// What the section says about the link or the loading.
    pub problem: Option<String>,
}

impl StoryLoader {
    /// The story a page address names (or the first), at its step, with
    /// the forks it carries still to replay.
    pub fn from_link(query: &str) -> Result<StoryLoader, String> {
        let (linked_story, linked_step) = parse_link(query);
        let mut loader = StoryLoader::open(linked_story.unwrap_or(first_story()), linked_step, Filter::default())?;
        match parse_forks(query) {
            Err(problem) => loader.problem = Some(problem),
            Ok(linked) => {
                loader.fork_total = linked.len();
                loader.pending = linked.into_iter().collect();
            }
        }
        loader.query = Some(query.to_string());
        Ok(loader)
    }

    /// A story to open at `step` with `filter`, nothing played yet.
    pub fn open(story: &'static StoryDef, step: Option<usize>, filter: Filter) -> Result<StoryLoader, String> {
        Ok(StoryLoader {
            run: StoryRun::begin(story)?,
            forks: Vec::new(),
            pending: VecDeque::new(),
            fork_total: 0,
            played: false,
            replayed: 0,
            problem: None,
            failed: None,
            step,
            filter,
            query: None,
            done: false,
        })
    }

    /// The story being opened.
    pub fn story(&self) -> &'static StoryDef {
        self.run.story
    }

    /// How far it is.
    pub fn progress(&self) -> LoadProgress {
        let (now_ms, until_ms) = self
            .run
            .play_progress()
            .unwrap_or((self.run.recording.simulation().now(), self.run.scenario.run_until_ms));
        LoadProgress {
            now_ms,
            until_ms,
            fork: if self.played { self.forks.len() } else { 0 },
            forks: self.fork_total,
        }
    }

    /// Plays on by about `budget` work; `true` once it is done.
    pub fn slice(&mut self, budget: u64) -> bool {
        let mut left = budget;
        while !self.done && left > 0 {
            let before = self.run.play_progress().is_some();
            if !before {
                self.next_fork();
                continue;
            }
            let started_at = self.work_so_far();
            let outcome = self.run.play_slice(left);
            left = left.saturating_sub(self.work_so_far().saturating_sub(started_at).max(1));
            if let Some(outcome) = outcome {
                self.ended(outcome);
            }
        }
        self.done
    }

    /// Plays it all.
    pub fn finish(&mut self) {
        while !self.slice(u64::MAX) {}
    }

    /// The learner's Stop: it opens as far as it has played.
    pub fn stop(&mut self) {
        if self.done {
            return;
        }
        if self.run.play_progress().is_some() {
            let stopped = self.run.stop_play().err().unwrap_or_default();
            self.replayed += self.run.last_work;
            self.problem = Some(if self.played {
                format!(
                    "You stopped replaying this link's forks: {stopped}; it opens after the first {}.",
                    self.forks.len()
                )
            } else {
                format!("You stopped the story: {stopped}; the steps it played are shown.")
            });
        }
        self.played = true;
        self.pending.clear();
        self.done = true;
    }

    /// Whether it is done.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The work of the play under way so far.
    fn work_so_far(&self) -> u64 {
        self.run.play_work()
    }

    /// A play ended (the story's own or a fork's).
    fn ended(&mut self, outcome: Result<(), String>) {
        self.replayed += self.run.last_work;
        if !self.played {
            self.played = true;
            if let Err(problem) = outcome {
                self.failed = Some(problem);
                self.done = true;
            }
            return;
        }
        if let Err(problem) = outcome {
            self.fork_problem(format!("This link's forks stop early: {problem}."));
        } else if self.replayed > 2 * kafkascope_engine::limits::MAX_STORY_WORK {
            // A link's forks together may replay at most twice a story's
            // work (each replays the rest of the story).
            self.fork_problem(format!(
                "This link's forks replay more of the story than kafkascope plays at once; it opens after the first {}.",
                self.forks.len()
            ));
        }
    }

    /// Starts the next fork's replay, or ends.
    fn next_fork(&mut self) {
        let Some((step, choice)) = self.pending.pop_front() else {
            self.done = true;
            return;
        };
        match fork_label(self.run.scenario.config.brokers, &choice) {
            Some(label) if step < self.run.steps.len() => {
                self.run.begin_fork(step, fork_inputs(&choice), label);
                self.forks.push((step, choice));
            }
            _ => self.fork_problem(format!(
                "This link's fork \"{}:{choice}\" names no such step or choice; the story opens without it.",
                step + 1
            )),
        }
    }

    fn fork_problem(&mut self, problem: String) {
        self.problem = Some(problem);
        self.pending.clear();
        self.done = true;
    }

    /// What opens, once it is done: `Err` if the story itself does not.
    pub fn loaded(self) -> Result<Loaded, String> {
        if let Some(failed) = self.failed {
            return Err(failed);
        }
        let problem = self
            .query
            .as_deref()
            .and_then(|query| link_problem(query, self.run.steps.len()))
            .or(self.problem);
        Ok(Loaded {
            run: self.run,
            forks: self.forks,
            step: self.step,
            filter: self.filter,
            problem,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence_model::story;

    #[test]
    fn a_story_played_in_slices_is_the_story_played_at_once() {
        let whole = StoryRun::start(story("acks1-loss").expect("story")).expect("plays");
        let mut loader =
            StoryLoader::open(story("acks1-loss").expect("story"), None, Filter::default()).expect("opens");
        let mut slices = 0;
        let mut last = 0;
        while !loader.slice(whole.last_work / 7 + 1) {
            let progress = loader.progress();
            assert!(progress.now_ms >= last && progress.until_ms == whole.scenario.run_until_ms);
            assert!(progress.text().starts_with("Playing the story: "));
            last = progress.now_ms;
            slices += 1;
        }
        assert!(slices >= 5, "{slices}");
        let loaded = loader.loaded().expect("opens");
        assert_eq!(loaded.run.trace(), whole.trace());
        assert_eq!(loaded.run.steps, whole.steps);
        assert_eq!(loaded.problem, None);
    }

    #[test]
    fn a_link_with_forks_replays_them_in_slices_as_at_once() {
        let query = "?story=acks1-loss&step=12&fork=5:kill-2,9:acks-all";
        let whole = crate::story_cursor::StoryCursor::from_link(query).expect("opens");
        let mut loader = StoryLoader::from_link(query).expect("opens");
        let mut saw_fork = false;
        while !loader.slice(SLICE_WORK / 20) {
            let progress = loader.progress();
            assert_eq!(progress.forks, 2);
            if progress.fork > 0 {
                saw_fork = true;
                assert!(progress.text().contains(&format!("fork {} of 2", progress.fork)));
            }
        }
        assert!(saw_fork);
        let loaded = loader.loaded().expect("opens");
        assert_eq!(loaded.run.trace(), whole.run().trace());
        assert_eq!(loaded.forks, whole.forks());
        assert_eq!(loaded.step, Some(12));
    }

    #[test]
    fn stopped_it_opens_as_far_as_it_played_and_says_so() {
        let mut loader =
            StoryLoader::open(story("acks1-loss").expect("story"), None, Filter::default()).expect("opens");
        assert!(!loader.slice(1_000));
        loader.stop();
        assert!(loader.is_done());
        let loaded = loader.loaded().expect("opens");
        assert!(!loaded.run.steps.is_empty());
        assert!(loaded
            .problem
            .as_deref()
            .is_some_and(|problem| problem.starts_with("You stopped the story: it was stopped at ")));

        let mut forked = StoryLoader::from_link("?story=acks1-loss&fork=5:kill-2,9:acks-all").expect("opens");
        while forked.progress().fork == 0 {
            assert!(!forked.slice(SLICE_WORK / 20));
        }
        forked.stop();
        let loaded = forked.loaded().expect("opens");
        assert_eq!(loaded.forks.len(), 1);
        assert!(loaded
            .problem
            .as_deref()
            .is_some_and(|problem| problem.contains("it opens after the first 1")));
    }
}
