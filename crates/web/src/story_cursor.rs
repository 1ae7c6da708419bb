//! Where a learner is in a story, and the one mutator of it: a
//! [`StoryCursor`] owns the played story ([`StoryRun`]), its forks, the
//! current step, the filter, whether "Why?" is open and the message about a
//! bad link, and changes only through [`StoryCursor::apply`]. The
//! recording is moved to the current step there, so the step shown and the
//! state drawn beside it are one truth. Plain Rust, tested natively; the
//! component in [`crate::sequence`] holds one and dispatches to it.

use kafkascope_engine::sim::config::{ConfigChange, Input};
use kafkascope_engine::sim::types::NodeId;

use crate::selection::{as_broker, parse_node};
use crate::sequence_model::{nearest_shown, Filter, ForkLink, StoryDef, StoryRun};
use crate::story_loader::{LoadProgress, Loaded, StoryLoader, OPEN_WORK, SLICE_WORK};

/// Which filter a choice sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterField {
    Partition,
    Node,
    Name,
}

/// Everything that moves the cursor.
#[derive(Debug, Clone)]
pub enum CursorAction {
    /// Open a story at a step (`None`: on its first chapter) with a
    /// filter; the same story keeps its run and forks, another starts
    /// afresh.
    Open {
        story: &'static StoryDef,
        step: Option<usize>,
        filter: Filter,
    },
    /// Go to a step (an index into all steps).
    Go(usize),
    /// Move by this many shown steps (previous, next).
    By(isize),
    /// The first or last shown step.
    First,
    Last,
    /// The shown step at this place on the timeline.
    Scrub(usize),
    /// Set one filter (`None`: any); a filter that hides the current step
    /// moves to the nearest shown one.
    Filter(FilterField, Option<String>),
    /// Fork at the current step with a choice of [`fork_choices`].
    Fork(String),
    /// Open or close "Why?".
    ToggleWhy,
    /// The next (`true`) or previous chapter: its input step.
    Chapter(bool),
    /// The next or previous key moment shown.
    Moment(bool),
    /// Show every step, or only the story's default view.
    Every(bool),
    /// Unfold or fold the start-up's steps.
    Startup(bool),
    /// Play the story being opened on by a slice.
    PlaySlice,
    /// Open the story being opened as far as it has played.
    StopOpening,
}

/// A story being read.
pub struct StoryCursor {
    run: StoryRun,
    forks: Vec<ForkLink>,
    current: usize,
    filter: Filter,
    why_open: bool,
    problem: Option<String>,
    /// Another story being opened, a slice at a time.
    loading: Option<StoryLoader>,
    /// Why the last story asked for did not open (a scenario file too
    /// costly to play).
    open_problem: Option<String>,
}

impl StoryCursor {
    /// The story a page address names (or the first), at its step, with its
    /// forks replayed; a bad story, step or fork is said in [`Self::problem`].
    pub fn from_link(query: &str) -> Result<StoryCursor, String> {
        let mut loader = StoryLoader::from_link(query)?;
        loader.finish();
        StoryCursor::from_loaded(loader.loaded()?)
    }

    /// The cursor on a story a [`StoryLoader`] has opened.
    pub fn from_loaded(loaded: Loaded) -> Result<StoryCursor, String> {
        // A story opens on its first chapter; a link to a step opens there
        // (with every step shown if the default view leaves it out).
        let current = loaded
            .step
            .map_or(loaded.run.outline.opening_step(), |step| step.saturating_sub(1));
        let mut cursor = StoryCursor {
            run: loaded.run,
            forks: loaded.forks,
            current,
            filter: loaded.filter,
            why_open: false,
            problem: loaded.problem,
            loading: None,
            open_problem: None,
        };
        cursor.show(current);
        cursor.settle();
        Ok(cursor)
    }

    /// The story.
    pub fn story(&self) -> &'static StoryDef {
        self.run.story
    }

    /// The played story at the current step (its recording is there).
    pub fn run(&self) -> &StoryRun {
        &self.run
    }

    /// The current step (an index into all steps).
    pub fn index(&self) -> usize {
        self.current
    }

    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    pub fn forks(&self) -> &[ForkLink] {
        &self.forks
    }

    pub fn why_open(&self) -> bool {
        self.why_open
    }

    /// What is wrong with the link that opened it, until the learner moves.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// The steps shown, as indices into all steps: the story's default
    /// view (or every step), less what the filters leave out.
    pub fn visible(&self) -> Vec<usize> {
        self.run
            .steps
            .iter()
            .enumerate()
            .filter(|(index, step)| self.in_view(*index) && self.filter.keeps(step))
            .map(|(index, _)| index)
            .collect()
    }

    /// Whether step `index` is in the view chosen: the default view, or
    /// every step (the switch, or a filter: a filter picks from every step,
    /// so a message the default view leaves out can still be found).
    fn in_view(&self, index: usize) -> bool {
        self.filter.every
            || self.filter.partition.is_some()
            || self.filter.node.is_some()
            || self.filter.name.is_some()
            || self.run.outline.in_default_view(index, self.filter.startup_open)
    }

    /// Whether every step is in view (the switch on, or a filter set).
    pub fn every_step(&self) -> bool {
        self.filter.every || self.filter.partition.is_some() || self.filter.node.is_some() || self.filter.name.is_some()
    }

    /// Makes step `index` part of the view: a step the default view leaves
    /// out (a link to it, a host page's `goToStep`) shows every step, or
    /// opens the start-up, and the switch says so.
    fn show(&mut self, index: usize) {
        if self.in_view(index) {
            return;
        }
        if self.run.outline.in_default_view(index, true) {
            self.filter.startup_open = true;
        } else {
            self.filter.every = true;
        }
    }

    /// The next shown step after the current one, for auto-play (`None`
    /// at the end).
    pub fn next_shown(&self) -> Option<usize> {
        let visible = self.visible();
        let at = visible.partition_point(|&shown| shown <= self.current);
        visible.get(at).copied()
    }

    /// The one way the cursor changes.
    pub fn apply(&mut self, action: CursorAction) {
        match action {
            CursorAction::Open { story, step, filter } => {
                // Whatever was opening is given up for this.
                self.loading = None;
                self.open_problem = None;
                // Another story, or the same file opened again (its own
                // definition, maybe edited): play it afresh, at once if it
                // is small, else a slice at a time.
                if !std::ptr::eq(self.run.story, story) {
                    match StoryLoader::open(story, step, filter) {
                        Ok(mut loader) => {
                            if loader.slice(OPEN_WORK) {
                                self.opened(loader);
                            } else {
                                self.loading = Some(loader);
                            }
                        }
                        Err(problem) => self.problem = Some(problem),
                    }
                    return;
                }
                self.filter = filter;
                let target = step.unwrap_or(self.run.outline.opening_step());
                self.show(target);
                self.move_to(target);
            }
            CursorAction::PlaySlice => {
                if let Some(loader) = self.loading.as_mut() {
                    if loader.slice(SLICE_WORK) {
                        let loader = self.loading.take().expect("loading");
                        self.opened(loader);
                    }
                }
            }
            CursorAction::StopOpening => {
                if let Some(mut loader) = self.loading.take() {
                    loader.stop();
                    self.opened(loader);
                }
            }
            CursorAction::Go(target) => {
                self.show(target);
                self.move_to(target);
            }
            CursorAction::By(delta) => {
                let visible = self.visible();
                if visible.is_empty() {
                    return;
                }
                let at = visible.partition_point(|&shown| shown < self.current);
                let at = if visible.get(at) == Some(&self.current) {
                    at as isize
                } else {
                    at as isize - isize::from(delta > 0)
                };
                let next = (at + delta).clamp(0, visible.len() as isize - 1) as usize;
                self.move_to(visible[next]);
            }
            CursorAction::First => {
                if let Some(&first) = self.visible().first() {
                    self.move_to(first);
                }
            }
            CursorAction::Last => {
                if let Some(&last) = self.visible().last() {
                    self.move_to(last);
                }
            }
            CursorAction::Scrub(place) => {
                if let Some(&target) = self.visible().get(place) {
                    self.move_to(target);
                }
            }
            CursorAction::Filter(field, value) => {
                match field {
                    FilterField::Partition => self.filter.partition = value,
                    FilterField::Node => self.filter.node = value.as_deref().and_then(parse_node),
                    FilterField::Name => self.filter.name = value,
                }
                self.keep_in_view();
            }
            CursorAction::Fork(choice) => {
                let Some(at) = self.run.steps.get(self.current).map(|step| step.trace_id) else {
                    return;
                };
                let label = fork_label(self.run.scenario.config.brokers, &choice).unwrap_or_else(|| choice.clone());
                let played = self.run.fork(self.current, fork_inputs(&choice), label);
                self.forks.push((self.current, choice));
                let next = self.run.step_at_or_after(at);
                self.show(next);
                self.move_to(next);
                // Said after the move, which clears the last message.
                if let Err(problem) = played {
                    self.problem = Some(format!("The fork stops early: {problem}."));
                }
            }
            CursorAction::ToggleWhy => self.why_open = !self.why_open,
            CursorAction::Chapter(forward) => {
                if let Some(target) = self.run.outline.chapter_jump(self.current, forward) {
                    // A chapter's input is always in the default view; a
                    // filter may hide it, and then the jump clears it.
                    if !self.visible().contains(&target) {
                        self.filter.partition = None;
                        self.filter.node = None;
                        self.filter.name = None;
                    }
                    self.move_to(target);
                }
            }
            CursorAction::Moment(forward) => {
                if let Some(target) = self.run.outline.moment_jump(self.current, forward, &self.visible()) {
                    self.move_to(target);
                }
            }
            CursorAction::Every(every) => {
                self.filter.every = every;
                self.keep_in_view();
            }
            CursorAction::Startup(open) => {
                self.filter.startup_open = open;
                let target = match (open, &self.run.outline.startup) {
                    // Opening it goes to its first step.
                    (true, Some(startup)) if !self.filter.every => Some(startup.folded.start),
                    _ => None,
                };
                match target {
                    Some(target) => self.move_to(target),
                    None => self.keep_in_view(),
                }
            }
        }
    }

    /// Another story being opened, and how far it is.
    pub fn opening(&self) -> Option<(&'static StoryDef, LoadProgress)> {
        self.loading.as_ref().map(|loader| (loader.story(), loader.progress()))
    }

    /// Why the last story asked for did not open.
    pub fn open_problem(&self) -> Option<&str> {
        self.open_problem.as_deref()
    }

    /// A story opened: the steps show it (or say why it does not open; a
    /// scenario file that does not play is remembered as such).
    fn opened(&mut self, loader: StoryLoader) {
        let story = loader.story();
        match loader.loaded() {
            Ok(loaded) => {
                let target = loaded.step.unwrap_or(loaded.run.outline.opening_step());
                self.run = loaded.run;
                self.forks = loaded.forks;
                self.filter = loaded.filter;
                self.show(target);
                self.move_to(target);
                self.problem = loaded.problem;
            }
            Err(problem) => {
                let problem = crate::sequence_model::unplayable(story, problem);
                self.open_problem = Some(problem);
            }
        }
    }

    /// After the view changed: the current step, or the nearest shown one.
    fn keep_in_view(&mut self) {
        if let Some(nearest) = nearest_shown(&self.visible(), self.current) {
            self.move_to(nearest);
        }
    }

    fn move_to(&mut self, target: usize) {
        self.problem = None;
        self.why_open = false;
        self.current = target;
        self.settle();
    }

    /// Keeps the current step within the story and the recording at it.
    fn settle(&mut self) {
        self.current = self.current.min(self.run.steps.len().saturating_sub(1));
        self.run.seek(self.current);
    }
}

/// The faults and knob changes a fork can start with: (choice, label).
pub fn fork_choices(brokers: u32) -> Vec<(String, String)> {
    let mut choices: Vec<(String, String)> = Vec::new();
    for broker in 1..=brokers {
        choices.push((format!("kill-{broker}"), format!("kill {}", as_broker(broker))));
        choices.push((format!("restart-{broker}"), format!("restart {}", as_broker(broker))));
    }
    choices.push(("acks-1".into(), "set acks=1".into()));
    choices.push(("acks-all".into(), "set acks=all".into()));
    choices.push(("unclean".into(), "enable unclean.leader.election".into()));
    choices.push(("produce".into(), "produce 10 records".into()));
    choices.push(("slow-1".into(), "slow broker-1 by 300 ms".into()));
    choices
}

pub(crate) fn fork_label(brokers: u32, choice: &str) -> Option<String> {
    fork_choices(brokers)
        .into_iter()
        .find(|(value, _)| value == choice)
        .map(|(_, label)| label)
}

/// The inputs a fork choice stands for.
pub fn fork_inputs(choice: &str) -> Vec<Input> {
    use kafkascope_engine::replication::high_watermark::Acks;
    let number = |prefix: &str| choice.strip_prefix(prefix).and_then(|id| id.parse::<u32>().ok());
    if let Some(broker) = number("kill-") {
        vec![Input::KillBroker { broker }]
    } else if let Some(broker) = number("restart-") {
        vec![Input::RestartBroker { broker }]
    } else {
        match choice {
            "acks-1" => vec![Input::SetConfig(ConfigChange::Acks {
                producer: 0,
                acks: Acks::Leader,
            })],
            "acks-all" => vec![Input::SetConfig(ConfigChange::Acks {
                producer: 0,
                acks: Acks::All,
            })],
            "unclean" => vec![Input::SetConfig(ConfigChange::UncleanLeaderElection { enable: true })],
            "produce" => vec![Input::Produce {
                producer: 0,
                key: None,
                count: 10,
                bytes: 100,
            }],
            "slow-1" => vec![Input::SlowNode {
                node: NodeId::Broker(1),
                extra_latency_ms: 300,
            }],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence_model::story;

    #[test]
    fn the_recording_is_always_at_the_current_step() {
        let mut cursor = StoryCursor::from_link("?story=acks1-loss&step=10").expect("opens");
        assert_eq!(cursor.index(), 9);
        let at = |cursor: &StoryCursor| cursor.run().recording.simulation().events_processed();
        assert_eq!(at(&cursor), cursor.run().steps[9].position);
        for action in [
            CursorAction::By(1),
            CursorAction::Last,
            CursorAction::First,
            CursorAction::Go(20),
            CursorAction::Scrub(3),
        ] {
            cursor.apply(action.clone());
            assert_eq!(at(&cursor), cursor.run().steps[cursor.index()].position, "{action:?}");
        }
    }

    #[test]
    fn a_link_opens_its_story_step_and_forks_and_names_what_is_wrong() {
        let cursor = StoryCursor::from_link("?story=exercise&step=5&fork=3:kill-1").expect("opens");
        assert_eq!(cursor.story().id, "exercise");
        assert_eq!(cursor.forks(), [(2, "kill-1".to_string())]);
        assert_eq!(cursor.filter().partition, None, "a link to a step opens unfiltered");
        let cursor = StoryCursor::from_link("?story=exercise").expect("opens");
        assert_eq!(
            cursor.filter(),
            &Filter::default(),
            "a story opens unfiltered, however it is opened"
        );
        assert_eq!(
            cursor.index(),
            cursor.run().outline.opening_step(),
            "on its first chapter"
        );
        let mut cursor = StoryCursor::from_link("?story=nope&step=2").expect("opens the first story");
        assert!(cursor.problem().is_some_and(|problem| problem.contains("\"nope\"")));
        cursor.apply(CursorAction::By(1));
        assert_eq!(cursor.problem(), None, "moving clears it");
        let cursor = StoryCursor::from_link("?story=happy-path&fork=999:kill-1").expect("opens");
        assert!(cursor.problem().is_some_and(|problem| problem.contains("999:kill-1")));
        assert!(cursor.forks().is_empty());
    }

    #[test]
    fn a_filter_that_hides_the_step_moves_to_the_nearest_and_next_stays_within_it() {
        let mut cursor = StoryCursor::from_link("?story=acks1-loss&step=1").expect("opens");
        cursor.apply(CursorAction::Filter(FilterField::Name, Some("records-lost".into())));
        let visible = cursor.visible();
        assert!(visible.contains(&cursor.index()));
        cursor.apply(CursorAction::By(1));
        assert!(visible.contains(&cursor.index()));
        cursor.apply(CursorAction::Filter(FilterField::Name, None));
        cursor.apply(CursorAction::Filter(FilterField::Node, Some("broker-3".into())));
        assert_eq!(cursor.filter().node, Some(NodeId::Broker(3)));
        assert!(
            cursor.run().steps[cursor.index()].nodes().contains(&NodeId::Broker(3))
                || cursor.visible().contains(&cursor.index())
        );
    }

    #[test]
    fn a_fork_replays_from_the_current_step_and_opening_another_story_drops_forks() {
        let mut cursor = StoryCursor::from_link("?story=acks1-loss&step=8").expect("opens");
        cursor.apply(CursorAction::Fork("produce".into()));
        assert_eq!(cursor.forks(), [(7, "produce".to_string())]);
        cursor.apply(CursorAction::ToggleWhy);
        assert!(cursor.why_open());
        let same = story("acks1-loss").expect("story");
        cursor.apply(CursorAction::Open {
            story: same,
            step: Some(0),
            filter: Filter::default(),
        });
        assert_eq!(cursor.forks().len(), 1, "the same story keeps its forks");
        assert!(!cursor.why_open());
        cursor.apply(CursorAction::Open {
            story: story("happy-path").expect("story"),
            step: Some(3),
            filter: Filter::default(),
        });
        assert!(cursor.forks().is_empty());
        assert_eq!((cursor.story().id.as_str(), cursor.index()), ("happy-path", 3));
        assert_eq!(cursor.next_shown(), Some(4));
        assert!(
            cursor.filter().startup_open,
            "a step of the folded start-up opens it, visibly"
        );
    }

    #[test]
    fn a_story_opens_the_same_however_it_is_opened_and_jumps_by_chapter_and_moment() {
        let exercise = story("exercise").expect("story");
        let linked = StoryCursor::from_link("?story=exercise").expect("opens");
        let mut picked = StoryCursor::from_link("?story=happy-path").expect("opens");
        picked.apply(CursorAction::Open {
            story: exercise,
            step: None,
            filter: Filter::default(),
        });
        assert_eq!(linked.index(), picked.index());
        assert_eq!(linked.visible(), picked.visible());
        let outline = picked.run().outline.clone();
        assert!(picked.visible().len() <= crate::story_view::MAX_DEFAULT_STEPS);
        for chapter in &outline.chapters[1..] {
            picked.apply(CursorAction::Chapter(true));
            assert_eq!(picked.index(), chapter.index);
        }
        picked.apply(CursorAction::Chapter(false));
        assert_eq!(picked.index(), outline.chapters[outline.chapters.len() - 2].index);
        picked.apply(CursorAction::Moment(true));
        assert!(outline.moments.iter().any(|(at, _)| *at == picked.index()));
        // Every step is one switch away, and back.
        let default_view = picked.visible();
        picked.apply(CursorAction::Every(true));
        assert_eq!(picked.visible().len(), picked.run().steps.len());
        picked.apply(CursorAction::Go(1));
        picked.apply(CursorAction::Every(false));
        assert_eq!(picked.visible(), default_view);
        assert!(default_view.contains(&picked.index()));
        // A linked step the default view leaves out shows every step.
        let hidden = (0..picked.run().steps.len())
            .find(|index| !outline.in_default_view(*index, true))
            .expect("the exercise is abridged");
        let cursor = StoryCursor::from_link(&format!("?story=exercise&step={}", hidden + 1)).expect("opens");
        assert_eq!(cursor.index(), hidden);
        assert!(cursor.filter().every && cursor.visible().contains(&hidden));
    }
}
