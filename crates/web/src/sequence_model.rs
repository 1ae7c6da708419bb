//! Sequence steps: the guided stories, the steps of a run picked from its
//! trace, their captions with this run's numbers, the "why" chains, the
//! sequence diagram's layout and its Mermaid export. Everything here is
//! plain data derived from the engine's [`Recording`] and trace, tested
//! natively; the component in [`crate::sequence`] only draws it.

use kafkascope_engine::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};

use kafkascope_engine::limits::{MAX_LINK_FORKS, MAX_STORY_WORK};
use kafkascope_engine::replication::high_watermark::Acks;
use kafkascope_engine::sim::config::{Input, ScheduledInput};
use kafkascope_engine::sim::recording::Recording;
use kafkascope_engine::sim::scenario::{Scenario, Story};
use kafkascope_engine::sim::trace::{hash, TraceEvent, TraceKind};
use kafkascope_engine::sim::types::{ErrorCode, MessageName, NodeId};
use kafkascope_engine::sim::view::Role;
use kafkascope_engine::sim::Simulation;

use crate::selection::as_broker;

mod captions;

use captions::Captioner;

mod files {
    include!(concat!(env!("OUT_DIR"), "/scenario_files.rs"));
}

/// A guided story: a scenario file with a `story` block.
#[derive(Debug)]
pub struct StoryDef {
    /// Its id in URLs (`?story=happy-path&step=12`).
    pub id: String,
    /// The file it comes from (`happy-path.json`).
    pub file: &'static str,
    /// The scenario, story block included.
    pub scenario: Scenario,
}

impl StoryDef {
    /// Whether it was opened from a file (not shipped: no link opens it).
    pub fn is_custom(&self) -> bool {
        self.id.starts_with("custom-")
    }

    /// Its story block.
    pub fn story(&self) -> &Story {
        self.scenario
            .story
            .as_ref()
            .expect("only scenarios with a story block are stories")
    }

    /// The partition the story is about (the filter it opens with).
    pub fn focus(&self) -> Option<&str> {
        self.story().focus.as_deref()
    }

    /// Its title: the scenario's name.
    pub fn title(&self) -> &str {
        &self.scenario.name
    }

    /// The chapter that opens on the trace's input event at `time`, if any:
    /// one whose input is this input at this time.
    fn chapter_at(&self, time: u64, input: &Input) -> Option<&str> {
        self.story().chapters.iter().find_map(|chapter| {
            let scheduled = self.scenario.inputs.get(chapter.input)?;
            (scheduled.at_ms == time && scheduled.input == *input).then_some(chapter.text.as_str())
        })
    }
}

/// The stories: every scenario file of `scenarios/` with a `story` block,
/// in their stated order. A file that does not parse is left out here and
/// fails `every_scenario_file_is_a_valid_scenario`.
pub fn stories() -> &'static [StoryDef] {
    static STORIES: std::sync::OnceLock<Vec<StoryDef>> = std::sync::OnceLock::new();
    STORIES.get_or_init(|| {
        let mut stories: Vec<StoryDef> = files::SCENARIO_FILES
            .iter()
            .filter_map(|(file, text)| {
                let scenario = Scenario::from_json(text).ok()?;
                Some(StoryDef {
                    id: scenario.story.as_ref()?.id.clone(),
                    file,
                    scenario,
                })
            })
            .collect();
        kafkascope_engine::sorting::sort_by(&mut stories, |a, b| {
            (a.story().order, &a.id).cmp(&(b.story().order, &b.id))
        });
        stories
    })
}

/// The stories in their order, as (id, Learn sentence): what [`stories`]
/// gives, read at build time, so listing them needs neither the scenario
/// files nor their reader.
pub fn story_index() -> &'static [(&'static str, &'static str)] {
    files::STORY_INDEX
}

/// The story with this id.
pub fn story(id: &str) -> Option<&'static StoryDef> {
    stories().iter().find(|story| story.id == id)
}

/// The most bytes a scenario file opened in the page may have.
pub const MAX_SCENARIO_FILE_BYTES: usize = 4 * 1024 * 1024;

/// The most simulated time an opened scenario may play as a story (every
/// step is kept, with snapshots to seek; a longer run belongs in the
/// sandbox or `kafkascope run`).
pub const MAX_STORY_RUN_MS: u64 = 600_000;

/// The address parameter naming a scenario file to fetch and play as a
/// story: `?scenario=https%3A%2F%2Fcourse.example%2Fmine.json#steps` (a
/// course page's own scenario; the host must allow the fetch with
/// `Access-Control-Allow-Origin`).
pub const SCENARIO_PARAM: &str = "scenario";

/// Checks a scenario address (already resolved against the page's): only
/// `http:` and `https:` are fetched. Returns the name the story is shown
/// under: the file's name, else `scenario.json`.
pub fn scenario_url_name(url: &str) -> Result<String, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("{url} is not a web address"));
    };
    if !matches!(scheme.to_ascii_lowercase().as_str(), "http" | "https") {
        return Err(format!(
            "{url} is not an http or https address, and kafkascope fetches scenarios only from those"
        ));
    }
    let path = rest.split(['?', '#']).next().unwrap_or_default();
    let name = path
        .split_once('/')
        .map_or("", |(_, path)| path)
        .rsplit('/')
        .next()
        .unwrap_or_default();
    Ok(if name.is_empty() {
        "scenario.json".to_string()
    } else {
        name.to_string()
    })
}

/// A scenario file the learner opened, as a story: checked as every
/// shipped scenario is (its JSON, with the line and column of a mistake
/// and the field's name; kafkascope's limits; its story block), given a
/// plain story block if it has none, and kept for the page's life (each
/// opened file is a little memory, as a shipped story is). It plays when
/// the steps open it.
pub fn custom_story(file_name: &str, text: &str) -> Result<&'static StoryDef, String> {
    if text.len() > MAX_SCENARIO_FILE_BYTES {
        return Err(format!(
            "{file_name} is {} bytes; kafkascope opens scenario files of at most {MAX_SCENARIO_FILE_BYTES}",
            text.len()
        ));
    }
    may_open(file_name, text)?;
    if let Some(kept) = OPENED.with(|opened| opened.borrow().get(&(file_name.to_string(), text_hash(text))).cloned()) {
        return kept;
    }
    let mut scenario = Scenario::from_json(text).map_err(|error| format!("{file_name}: {error}"))?;
    scenario
        .config
        .validate()
        .map_err(|error| format!("{file_name}: the cluster cannot start: {error}"))?;
    if scenario.run_until_ms > MAX_STORY_RUN_MS {
        return Err(format!(
            "{file_name}: runUntilMs is {}; a story plays at most {MAX_STORY_RUN_MS} ms (ten minutes) of simulated time (run longer ones with kafkascope run or in the sandbox)",
            scenario.run_until_ms
        ));
    }
    let story = scenario
        .story
        .get_or_insert_with(|| kafkascope_engine::sim::scenario::Story {
            id: "custom".to_string(),
            order: u32::MAX,
            learn: scenario.description.clone(),
            focus: None,
            chapters: Vec::new(),
        });
    // Its own id: a link to it cannot open elsewhere, so it must not
    // shadow a shipped story's.
    story.id = format!("custom-{}", story.id);
    let definition: &'static StoryDef = Box::leak(Box::new(StoryDef {
        id: story.id.clone(),
        file: Box::leak(file_name.to_string().into_boxed_str()),
        scenario,
    }));
    // It plays when the steps open it (a slice at a time if it is large);
    // if it turns out not to play, [`unplayable`] remembers why, so opening
    // it again says so at once.
    remember(file_name, text, Ok(definition))
}

/// Why `story` does not open, as the page says it: an opened file's name
/// first, and remembered for that file from now on.
pub fn unplayable(story: &'static StoryDef, problem: String) -> String {
    if !story.is_custom() {
        return problem;
    }
    let said = format!("{}: {problem}", story.file);
    OPENED.with(|opened| {
        for kept in opened.borrow_mut().values_mut() {
            if kept.as_ref().is_ok_and(|kept| std::ptr::eq(*kept, story)) {
                *kept = Err(said.clone());
            }
        }
    });
    said
}

/// The most distinct scenario files a page keeps (each opened file stays
/// for the page's life, as a shipped story does, and so does a file that
/// did not play, with why; opening the same file again reuses either).
pub const MAX_OPENED_SCENARIOS: usize = 32;

thread_local! {
    /// The scenario files opened so far: (name, text hash) → their story,
    /// or why it did not play.
    static OPENED: std::cell::RefCell<BTreeMap<(String, u64), Result<&'static StoryDef, String>>> =
        const { std::cell::RefCell::new(BTreeMap::new()) };
}

fn text_hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Whether this page may keep another opened scenario (the same file
/// again always may).
fn may_open(file_name: &str, text: &str) -> Result<(), String> {
    OPENED.with(|opened| {
        let opened = opened.borrow();
        if opened.contains_key(&(file_name.to_string(), text_hash(text))) || opened.len() < MAX_OPENED_SCENARIOS {
            Ok(())
        } else {
            Err(format!(
                "{file_name}: this page has opened {MAX_OPENED_SCENARIOS} scenario files, the most it keeps; reload the page to open more"
            ))
        }
    })
}

/// The story kept for this file (or why it does not play): the first one
/// made for the same name and text, else `made` (kept from now on).
fn remember(file_name: &str, text: &str, made: Result<&'static StoryDef, String>) -> Result<&'static StoryDef, String> {
    OPENED.with(|opened| {
        opened
            .borrow_mut()
            .entry((file_name.to_string(), text_hash(text)))
            .or_insert(made)
            .clone()
    })
}

/// The first story (where the steps open without a link).
pub fn first_story() -> &'static StoryDef {
    stories().first().expect("scenarios/ holds at least one story")
}

/// What a step draws.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepKind {
    /// A message from one lifeline to another (lost if `dropped`).
    Arrow {
        from: NodeId,
        to: NodeId,
        name: MessageName,
        label: String,
        dropped: bool,
    },
    /// A state change on one lifeline.
    Note { over: NodeId, text: String },
    /// A user action or fault, across every lifeline.
    Input { text: String },
}

/// One step of a story.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The trace event it shows.
    pub trace_id: u64,
    pub time: u64,
    /// Events processed when it happened (where seeking lands).
    pub position: u64,
    pub kind: StepKind,
    /// One or two sentences with this run's numbers.
    pub caption: String,
    /// A chapter caption, on the input that opens a chapter.
    pub chapter: Option<String>,
    /// `continue`, `error` or `loss`, where the step is an outcome.
    pub outcome: Option<&'static str>,
    /// The partitions it concerns (for the filter).
    pub partitions: Vec<String>,
    /// The message or event name (for the filter).
    pub name: String,
    /// A step whose causes are worth showing (elections, ISR changes,
    /// refusals, rebalances, losses).
    pub explainable: bool,
}

impl Step {
    /// The lifelines it touches.
    pub fn nodes(&self) -> Vec<NodeId> {
        match &self.kind {
            StepKind::Arrow { from, to, .. } => vec![*from, *to],
            StepKind::Note { over, .. } => vec![*over],
            StepKind::Input { .. } => Vec::new(),
        }
    }
}

/// Filters over the steps; `None` keeps everything. Every story opens
/// with the default (its outline's default view, nothing filtered), however
/// it was opened: a filter is only ever the learner's own choice, shown in
/// its control.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub partition: Option<String>,
    pub node: Option<NodeId>,
    pub name: Option<String>,
    /// Every step, not only the story's default view (the "Every step"
    /// switch).
    pub every: bool,
    /// The start-up's steps unfolded.
    pub startup_open: bool,
}

impl Filter {
    /// Whether the filter keeps `step`. A step without partitions (an
    /// input, a rebalance, a fencing) passes the partition filter.
    pub fn keeps(&self, step: &Step) -> bool {
        self.partition
            .as_ref()
            .is_none_or(|partition| step.partitions.is_empty() || step.partitions.contains(partition))
            && self
                .node
                .as_ref()
                .is_none_or(|node| matches!(step.kind, StepKind::Input { .. }) || step.nodes().contains(node))
            && self.name.as_ref().is_none_or(|name| step.name == *name)
    }
}

/// A story being played: its recording, every step, and where each trace
/// event happened.
#[derive(Debug, Clone)]
pub struct StoryRun {
    pub story: &'static StoryDef,
    pub scenario: Scenario,
    pub recording: Recording,
    /// Events processed when each trace event (by id) was recorded.
    positions: Vec<u64>,
    /// The whole run's trace (the recording shows only the past of the
    /// current point).
    trace: Vec<TraceEvent>,
    pub steps: Vec<Step>,
    /// Its chapters, key moments, folded start-up and default view.
    pub outline: crate::story_view::Outline,
    /// What was changed at forks, in order.
    pub forks: Vec<String>,
    /// The work the last play (the start, or a fork's replay) took.
    pub last_work: u64,
    /// A play under way (the start, or a fork's replay), played a slice
    /// at a time by [`Self::play_slice`]: its work so far and an event's
    /// cost.
    playing: Option<(u64, u64)>,
    /// Jepsen's verdict on the whole run (to its end, or as far as it
    /// played), for "What Jepsen would say about this run".
    pub verdict: Option<kafkascope_engine::sim::jepsen::Verdict>,
    /// The verdict as the panel shows it, linked to the steps.
    pub jepsen: Option<crate::jepsen_model::JepsenPanel>,
}

/// Snapshots every this many events (seeking replays at most this many),
/// or every [`Simulation::event_cost`] events when that is more.
const SNAPSHOT_INTERVAL: u64 = 256;

/// Why a story stopped before its end, in the learner's terms: how far it
/// got, on how large a cluster (the unit, events × cost, stays in the code
/// and ARCHITECTURE.md).
fn too_costly(simulation: &Simulation, until: u64, cost: u64) -> String {
    format!(
        "this story is too large to play on the page: {} brokers with {} partition replicas had taken {} events to reach {} ms of its {until} ms, and a story may take about {} events on a cluster this size; shorten runUntilMs or use fewer brokers and partitions (kafkascope run plays it whole)",
        simulation.config().brokers,
        simulation.replica_count(),
        simulation.events_processed(),
        simulation.now(),
        MAX_STORY_WORK / cost.max(1)
    )
}

impl StoryRun {
    /// Plays a story to its end.
    pub fn start(story: &'static StoryDef) -> Result<StoryRun, String> {
        let mut run = StoryRun::begin(story)?;
        run.play_to_end()?;
        Ok(run)
    }

    /// A story ready to play from its start, a slice at a time
    /// ([`Self::play_slice`]); nothing has played yet.
    pub fn begin(story: &'static StoryDef) -> Result<StoryRun, String> {
        let scenario = story.scenario.clone();
        let mut simulation = Simulation::new(scenario.config.clone(), scenario.seed)?;
        for input in &scenario.inputs {
            simulation.schedule(input.clone());
        }
        // The run's history, for Jepsen's checks; the snapshots share it.
        simulation.keep_history();
        // A large cluster's snapshots are large: space them by what an
        // event costs, so their memory stays about the same at any size.
        let interval = SNAPSHOT_INTERVAL.max(simulation.event_cost());
        let recording = Recording::new(simulation, interval);
        let mut run = StoryRun {
            story,
            scenario,
            positions: vec![0; recording.trace().len()],
            trace: Vec::new(),
            recording,
            steps: Vec::new(),
            outline: Default::default(),
            forks: Vec::new(),
            last_work: 0,
            playing: None,
            verdict: None,
            jepsen: None,
        };
        run.playing = Some((0, run.recording.simulation().event_cost()));
        Ok(run)
    }

    /// Plays from the current point to the story's end, within
    /// [`MAX_STORY_WORK`]; past it the run stops where it is (its steps so
    /// far kept) and `Err` says why.
    fn play_to_end(&mut self) -> Result<(), String> {
        loop {
            if let Some(outcome) = self.play_slice(u64::MAX) {
                return outcome;
            }
        }
    }

    /// Plays the play under way on by about `budget` work: `None` while
    /// there is more to play, else how it ended (as [`Self::play_to_end`]
    /// says). A play's steps are drawn when it ends.
    pub fn play_slice(&mut self, budget: u64) -> Option<Result<(), String>> {
        let (mut work, mut cost) = self.playing.unwrap_or((0, self.recording.simulation().event_cost()));
        let until = self.scenario.run_until_ms;
        let stop_at = work.saturating_add(budget);
        let mut refusal = None;
        while self
            .recording
            .simulation()
            .next_event_time()
            .is_some_and(|time| time <= until)
        {
            if work >= stop_at {
                self.playing = Some((work, cost));
                return None;
            }
            self.recording.step();
            let position = self.recording.position();
            let known = self.recording.trace().len();
            self.positions.resize(known, position);
            work += cost;
            if position % SNAPSHOT_INTERVAL == 0 {
                // Partitions can be added mid-run.
                cost = self.recording.simulation().event_cost();
            }
            if work > MAX_STORY_WORK {
                refusal = Some(too_costly(self.recording.simulation(), until, cost));
                break;
            }
        }
        Some(self.finish_play(work, refusal))
    }

    /// Ends the play under way where it is, as if the story ended there
    /// (the learner's Stop): its steps so far are drawn and `Err` says
    /// where it stopped.
    pub fn stop_play(&mut self) -> Result<(), String> {
        let work = self.playing.map_or(0, |(work, _)| work);
        let stopped = format!(
            "it was stopped at {} ms of its {} ms",
            self.recording.simulation().now(),
            self.scenario.run_until_ms
        );
        self.finish_play(work, Some(stopped))
    }

    /// The work of the play under way so far, or of the last one.
    pub fn play_work(&self) -> u64 {
        self.playing.map_or(self.last_work, |(work, _)| work)
    }

    /// Whether a play is under way, and how far it is: (simulated ms
    /// reached, ms it plays to).
    pub fn play_progress(&self) -> Option<(u64, u64)> {
        self.playing
            .map(|_| (self.recording.simulation().now(), self.scenario.run_until_ms))
    }

    /// Draws the steps of a play that has ended.
    fn finish_play(&mut self, work: u64, refusal: Option<String>) -> Result<(), String> {
        self.playing = None;
        self.last_work = work;
        self.trace = self.recording.trace().to_vec();
        self.steps = steps_of(&self.trace, &self.positions, self.story);
        self.outline = crate::story_view::Outline::of(&self.steps);
        self.verdict = self.recording.simulation().jepsen_verdict();
        self.jepsen = self
            .verdict
            .as_ref()
            .map(|verdict| crate::jepsen_model::JepsenPanel::of(verdict, &self.steps));
        refusal.map_or(Ok(()), Err)
    }

    /// The work this run's story took from its start to its end (a test
    /// keeps the shipped stories well inside [`MAX_STORY_WORK`]).
    pub fn work(&self) -> u64 {
        self.recording.position() * self.recording.simulation().event_cost()
    }

    /// The whole run's trace.
    pub fn trace(&self) -> &[TraceEvent] {
        &self.trace
    }

    /// Moves the run to just after step `index`.
    pub fn seek(&mut self, index: usize) {
        if let Some(step) = self.steps.get(index) {
            self.recording.seek(step.position);
        }
    }

    /// Forks at step `index`: the old future is discarded, `inputs`
    /// happen at that moment, and the run plays to its end again.
    pub fn fork(&mut self, index: usize, inputs: Vec<Input>, description: String) -> Result<(), String> {
        self.begin_fork(index, inputs, description);
        self.play_to_end()
    }

    /// Forks at step `index` as [`Self::fork`] does, to be played a slice
    /// at a time ([`Self::play_slice`]).
    pub fn begin_fork(&mut self, index: usize, inputs: Vec<Input>, description: String) {
        self.seek(index);
        let now = self.recording.simulation().now();
        self.recording.fork(
            inputs
                .into_iter()
                .map(|input| ScheduledInput { at_ms: now, input })
                .collect(),
        );
        self.positions.truncate(self.recording.trace().len());
        self.forks.push(description);
        self.playing = Some((0, self.recording.simulation().event_cost()));
    }

    /// A hash of the trace up to the current point (equal points of equal
    /// runs hash equally).
    pub fn trace_hash(&self) -> u64 {
        hash(self.recording.trace())
    }

    /// The causes of step `index` in causal order, oldest first, as lines:
    /// the input that started the chain (a broker killed, paused or cut
    /// off), what the controller concluded from it (a fencing, an ISR
    /// shrink), the messages that carried the decision, and the step.
    pub fn why(&self, index: usize) -> Vec<String> {
        self.why_lines(index)
            .into_iter()
            .map(|line| format!("{} ms: {}", line.time, line.raw))
            .collect()
    }

    /// "Why?" as the page shows it: each cause at its time, in plain words
    /// where the cause is a message or a state change the story has a step
    /// for (that step's caption), with the trace's own line beside it.
    pub fn why_lines(&self, index: usize) -> Vec<WhyLine> {
        let lines = self.why_raw(index);
        let by_id: BTreeMap<u64, &TraceEvent> = self.trace.iter().map(|event| (event.id, event)).gather();
        lines
            .into_iter()
            .map(|(time, id, raw)| {
                // Only a link of the chain (the trace's own line) gets plain
                // words; the loss and root-cause lines are sentences already.
                let is_link = by_id.get(&id).is_some_and(|event| describe(event) == raw);
                let plain = is_link
                    .then(|| {
                        self.steps
                            .iter()
                            .find(|step| step.trace_id == id && !matches!(step.kind, StepKind::Input { .. }))
                            .map(|step| step.caption.clone())
                    })
                    .flatten()
                    .filter(|plain| *plain != raw);
                WhyLine { time, plain, raw }
            })
            .collect()
    }

    /// The causes of step `index` as (time, trace id, the trace's line),
    /// in causal order.
    fn why_raw(&self, index: usize) -> Vec<(u64, u64, String)> {
        let Some(step) = self.steps.get(index) else {
            return Vec::new();
        };
        let by_id: BTreeMap<u64, &TraceEvent> = self.trace.iter().map(|event| (event.id, event)).gather();
        let Some(&event) = by_id.get(&step.trace_id) else {
            return Vec::new();
        };
        // (time, trace id, line): sorted, that is causal order.
        let mut lines: Vec<(u64, u64, String)> = self.loss_story(event);
        let mut chain: Vec<&TraceEvent> = Vec::new();
        let mut next = Some(step.trace_id);
        while let Some(id) = next {
            let Some(link) = by_id.get(&id) else { break };
            if !matches!(link.kind, TraceKind::Delivered { .. }) {
                chain.push(link);
            }
            next = link.cause;
            if chain.len() >= 12 {
                break;
            }
        }
        let oldest = chain.last().copied().unwrap_or(event);
        if !matches!(oldest.kind, TraceKind::Input { .. }) {
            lines.extend(self.root_causes(event));
        }
        lines.extend(chain.iter().map(|link| (link.time, link.id, describe(link))));
        kafkascope_engine::sorting::sort_by_key(&mut lines, |(time, id, _)| (*time, *id));
        lines.dedup_by_key(|(_, id, _)| *id);
        lines
    }

    /// What started a chain whose cause links stop short of an input (at a
    /// timer, a session that ran out): from the typed reasons of `event`,
    /// the brokers it concerns, their fencing or the ISR shrink, and the
    /// last input that touched them before.
    fn root_causes(&self, event: &TraceEvent) -> Vec<(u64, u64, String)> {
        let before = |limit: u64| self.trace.iter().take_while(move |earlier| earlier.id < limit);
        let mut lines = Vec::new();
        let mut brokers: BTreeSet<u32> = BTreeSet::new();
        let mut from_reason = |reason: &kafkascope_engine::sim::trace::ChangeReason, from: &[u32], to: &[u32]| {
            use kafkascope_engine::sim::trace::ChangeReason;
            match reason {
                ChangeReason::BrokerFenced { broker }
                | ChangeReason::BrokerShuttingDown { broker }
                | ChangeReason::UncleanRestart { broker } => {
                    brokers.insert(*broker);
                }
                ChangeReason::FollowersFellBehind => {
                    brokers.extend(from.iter().filter(|broker| !to.contains(broker)));
                }
                _ => {}
            }
        };
        // (The controller records a fencing when it applies its own record,
        // which may come after the messages that carried it: look before
        // the step itself.)
        let mut limit = event.id;
        match &event.kind {
            TraceKind::LeaderElected { reason, isr, .. } => from_reason(reason, isr, isr),
            TraceKind::IsrChanged { reason, from, to, .. } => from_reason(reason, from, to),
            TraceKind::ProduceFailed { partition, error, .. }
                if matches!(
                    error,
                    ErrorCode::NotEnoughReplicas | ErrorCode::NotEnoughReplicasAfterAppend
                ) =>
            {
                // The ISR shrink that put it below min.insync.replicas.
                let shrink = before(limit).filter(|earlier| {
                    matches!(&earlier.kind, TraceKind::IsrChanged { partition: changed, from, to, .. }
                        if changed == partition && to.len() < from.len())
                });
                if let Some(shrink) = shrink.last() {
                    if let TraceKind::IsrChanged { reason, from, to, .. } = &shrink.kind {
                        from_reason(reason, from, to);
                    }
                    lines.push((shrink.time, shrink.id, describe(shrink)));
                    limit = shrink.id;
                }
            }
            // A rebalance because members went quiet: the input that
            // silenced each (a pause, a crash, a cut link), found by the
            // member's consumer in the group's earlier assignments.
            TraceKind::GroupRebalanced {
                group,
                reason: kafkascope_engine::sim::trace::RebalanceReason::SessionTimeout { members },
                ..
            } => {
                for member in members {
                    let consumer = before(limit).find_map(|earlier| match &earlier.kind {
                        TraceKind::GroupRebalanced {
                            group: known,
                            assignment,
                            ..
                        } if known == group => assignment
                            .iter()
                            .find(|assigned| assigned.member_id == *member)
                            .map(|assigned| assigned.consumer),
                        _ => None,
                    });
                    let input = consumer.and_then(|consumer| {
                        before(limit)
                            .filter(|earlier| match &earlier.kind {
                                TraceKind::Input { input, .. } => input_touches(input, consumer),
                                _ => false,
                            })
                            .last()
                    });
                    if let Some(input) = input {
                        lines.push((input.time, input.id, format!("{} (where this starts)", describe(input))));
                    }
                }
            }
            _ => {}
        }
        for broker in brokers {
            let fencing = before(limit)
                .filter(|earlier| matches!(&earlier.kind, TraceKind::BrokerFencing { broker: fenced, fenced: true, .. } if *fenced == broker))
                .last();
            let mut until = limit;
            if let Some(fencing) = fencing {
                lines.push((fencing.time, fencing.id, describe(fencing)));
                until = fencing.id;
            }
            let input = before(until)
                .filter(|earlier| match &earlier.kind {
                    TraceKind::Input { input, .. } => input_touches(input, NodeId::Broker(broker)),
                    _ => false,
                })
                .last();
            if let Some(input) = input {
                lines.push((input.time, input.id, format!("{} (where this starts)", describe(input))));
            }
        }
        lines
    }

    /// For a loss: when the lost records were acknowledged, which replicas
    /// held them then and which never fetched them (and why, where the
    /// trace shows their fetches being lost). Empty for any other event.
    fn loss_story(&self, loss: &TraceEvent) -> Vec<(u64, u64, String)> {
        let TraceKind::RecordsLost { partition, records, .. } = &loss.kind else {
            return Vec::new();
        };
        let lost: BTreeSet<u64> = records.iter().copied().gather();
        let before = || self.trace.iter().take_while(|event| event.id < loss.id);
        let mut lines = Vec::new();
        let mut offsets: BTreeSet<u64> = BTreeSet::new();
        for event in before() {
            if let TraceKind::Acknowledged {
                partition: acked,
                base_offset,
                records,
                ..
            } = &event.kind
            {
                if acked == partition && records.iter().any(|record| lost.contains(record)) {
                    lines.push((
                        event.time,
                        event.id,
                        format!("{}: the producer was told these records were written.", event.text()),
                    ));
                    if let Some(base) = base_offset {
                        offsets.extend(
                            records
                                .iter()
                                .enumerate()
                                .filter(|(_, record)| lost.contains(record))
                                .map(|(index, _)| base + index as u64),
                        );
                    }
                }
            }
        }
        let (Some(&first), Some(&last)) = (offsets.first(), offsets.last()) else {
            return lines;
        };
        let mut replicas: BTreeSet<u32> = BTreeSet::new();
        let mut holders: BTreeSet<u32> = BTreeSet::new();
        for event in before() {
            match &event.kind {
                TraceKind::Appended {
                    broker,
                    partition: appended,
                    first_offset,
                    count,
                    ..
                } if appended == partition => {
                    replicas.insert(*broker);
                    if *first_offset <= last && first_offset + count > first {
                        holders.insert(*broker);
                    }
                }
                TraceKind::LeaderElected {
                    partition: elected,
                    isr,
                    ..
                } if elected == partition => replicas.extend(isr),
                TraceKind::IsrChanged {
                    partition: changed,
                    from,
                    to,
                    ..
                } if changed == partition => replicas.extend(from.iter().chain(to)),
                _ => {}
            }
        }
        let names = |brokers: &BTreeSet<u32>| {
            brokers
                .iter()
                .map(|broker| as_broker(broker).to_string())
                .collect::<Vec<_>>()
                .join(" and ")
        };
        let missing: BTreeSet<u32> = replicas.difference(&holders).copied().gather();
        if !missing.is_empty() && !holders.is_empty() {
            lines.push((
                loss.time,
                loss.id,
                format!(
                    "offsets {first}–{last} of {partition} were only on {}; {} never fetched them.",
                    names(&holders),
                    names(&missing)
                ),
            ));
        }
        // Why they never fetched them, where the trace says.
        let mut cut: BTreeSet<(u32, u32)> = BTreeSet::new();
        for event in before() {
            if let TraceKind::Dropped {
                from: NodeId::Broker(follower),
                to: NodeId::Broker(leader),
                name: MessageName::Fetch,
                reason,
            } = &event.kind
            {
                if missing.contains(follower) && holders.contains(leader) && cut.insert((*follower, *leader)) {
                    lines.push((
                        event.time,
                        event.id,
                        format!(
                            "{}'s fetch from {} is lost ({reason}): it is cut off from the leader.",
                            as_broker(follower),
                            as_broker(leader)
                        ),
                    ));
                }
            }
        }
        lines
    }

    /// The index of the first step at or after trace position `position`.
    pub fn step_at_or_after(&self, trace_id: u64) -> usize {
        self.steps
            .partition_point(|step| step.trace_id < trace_id)
            .min(self.steps.len().saturating_sub(1))
    }
}

/// One acknowledgement among a loss's records: what the producer was
/// told, when, and with which `acks`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostBatch {
    /// When the producer was told they were written.
    pub acknowledged_at: u64,
    /// How many of the lost records it covered.
    pub count: usize,
    /// Their offsets in the partition (first, last), where the answer said.
    pub offsets: Option<(u64, u64)>,
    /// The `acks` of the produce request that was answered.
    pub acks: Option<Acks>,
    /// How the same records were refused before (a retried batch): each
    /// error the first time it came.
    pub refusals: Vec<(u64, ErrorCode)>,
}

/// A loss's history from the trace: each acknowledgement of the records it
/// lost, with the `acks` each was written with, and the election that
/// discarded them (the leader that now leads without them: its epoch, and
/// whether it came from outside the ISR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossHistory {
    pub time: u64,
    pub partition: String,
    pub lost: usize,
    pub batches: Vec<LostBatch>,
    /// (leader, leader epoch, unclean) of the election that discarded them.
    pub election: Option<(u32, u32, bool)>,
}

impl LossHistory {
    /// The history of the loss `loss` (a `RecordsLost` event of `trace`).
    pub fn of(trace: &[TraceEvent], loss: &TraceEvent) -> Option<LossHistory> {
        let TraceKind::RecordsLost {
            partition,
            records,
            reason,
        } = &loss.kind
        else {
            return None;
        };
        let lost: BTreeSet<u64> = records.iter().copied().gather();
        let before: Vec<&TraceEvent> = trace.iter().take_while(|event| event.id < loss.id).collect();
        let mut batches = Vec::new();
        for (at, event) in before.iter().enumerate() {
            let TraceKind::Acknowledged {
                producer,
                partition: acked,
                base_offset,
                records,
            } = &event.kind
            else {
                continue;
            };
            let ours: Vec<usize> = (0..records.len())
                .filter(|index| lost.contains(&records[*index]))
                .collect();
            if acked != partition || ours.is_empty() {
                continue;
            }
            // The request answered: the producer's last produce of this
            // partition before the answer.
            let acks = before[..at].iter().rev().find_map(|earlier| match &earlier.kind {
                TraceKind::Sent {
                    from: NodeId::Producer(sender),
                    name: MessageName::Produce,
                    facts,
                    ..
                } if sender == producer && facts.partitions.contains(partition) => facts.acks,
                _ => None,
            });
            let mut refusals: Vec<(u64, ErrorCode)> = Vec::new();
            for earlier in &before[..at] {
                if let TraceKind::ProduceFailed {
                    producer: refused,
                    records: failed,
                    error,
                    ..
                } = &earlier.kind
                {
                    let again = refusals.iter().any(|(_, seen)| seen == error);
                    if refused == producer && !again && failed.iter().any(|record| records.contains(record)) {
                        refusals.push((earlier.time, *error));
                    }
                }
            }
            batches.push(LostBatch {
                acknowledged_at: event.time,
                count: ours.len(),
                offsets: base_offset.map(|base| (base + ours[0] as u64, base + ours[ours.len() - 1] as u64)),
                acks,
                refusals,
            });
        }
        let election = before.iter().rev().find_map(|event| match &event.kind {
            TraceKind::LeaderElected {
                partition: elected,
                leader: Some(leader),
                leader_epoch,
                unclean,
                ..
            } if elected == partition && *leader == reason.leader && *leader_epoch == reason.leader_epoch => {
                Some((*leader, *leader_epoch, *unclean))
            }
            _ => None,
        });
        Some(LossHistory {
            time: loss.time,
            partition: partition.to_string(),
            lost: records.len(),
            batches,
            election,
        })
    }

    /// Each acknowledgement in words, in order.
    pub fn batch_lines(&self) -> Vec<String> {
        self.batches
            .iter()
            .map(|batch| {
                let offsets = batch
                    .offsets
                    .map_or(String::new(), |(first, last)| format!(" (offsets {first}–{last})"));
                let acks = batch
                    .acks
                    .map_or("acks unknown".to_string(), |acks| format!("acks={acks}"));
                let refused = if batch.refusals.is_empty() {
                    String::new()
                } else {
                    let each: Vec<String> = batch
                        .refusals
                        .iter()
                        .map(|(time, error)| format!("{error} at {time} ms"))
                        .collect();
                    format!(", after being refused ({}) and retried", each.join(", "))
                };
                format!(
                    "{} record(s){offsets} acknowledged with {acks} at {} ms{refused}",
                    batch.count, batch.acknowledged_at
                )
            })
            .collect()
    }

    /// The election that discarded them, in words.
    pub fn election_line(&self) -> Option<String> {
        self.election.map(|(leader, epoch, unclean)| {
            format!(
                "{} became the leader of {} at leader epoch {epoch}{} and did not have them",
                as_broker(leader),
                self.partition,
                if unclean {
                    " in an unclean election (from outside the ISR)"
                } else {
                    ""
                }
            )
        })
    }
}

/// Whether an input acts on `node` (kills, pauses, cuts off or slows it).
fn input_touches(input: &Input, node: NodeId) -> bool {
    match input {
        Input::KillBroker { broker }
        | Input::RestartBroker { broker }
        | Input::StopBroker { broker }
        | Input::PauseBroker { broker, .. } => node == NodeId::Broker(*broker),
        Input::PowerLoss { brokers } => brokers.iter().any(|broker| node == NodeId::Broker(*broker)),
        Input::CutLink { a, b } | Input::HealLink { a, b } => node == *a || node == *b,
        Input::Partition { side } => side.contains(&node),
        Input::SlowNode { node: slowed, .. } => node == *slowed,
        Input::KillController { controller } | Input::RestartController { controller } => {
            node == NodeId::Controller(*controller)
        }
        Input::StartConsumer { consumer }
        | Input::StopConsumer { consumer }
        | Input::CrashConsumer { consumer }
        | Input::PauseConsumer { consumer, .. } => node == NodeId::Consumer(*consumer),
        _ => false,
    }
}

/// The kinds that are steps of their own.
fn is_state(kind: &TraceKind) -> bool {
    !matches!(
        kind,
        TraceKind::Sent { .. } | TraceKind::Delivered { .. } | TraceKind::Dropped { .. }
    )
}

/// How many causes back a state change pulls messages into the steps.
const CAUSE_HOPS: usize = 6;

/// Picks the steps of a trace: every state change and input, and the
/// messages that led to one (found by following cause links back); idle
/// traffic such as heartbeats and empty fetches stays out.
pub fn steps_of(trace: &[TraceEvent], positions: &[u64], story: &StoryDef) -> Vec<Step> {
    let index_of = |id: u64| trace.binary_search_by_key(&id, |event| event.id).ok();
    let mut wanted: BTreeSet<u64> = BTreeSet::new();
    for event in trace.iter().filter(|event| is_state(&event.kind)) {
        wanted.insert(event.id);
        let mut cause = event.cause;
        for _ in 0..CAUSE_HOPS {
            let Some(index) = cause.and_then(index_of) else { break };
            let earlier = &trace[index];
            if matches!(earlier.kind, TraceKind::Sent { .. }) {
                wanted.insert(earlier.id);
            }
            cause = earlier.cause;
        }
    }
    // A message that was lost is shown if its sending was.
    for event in trace {
        if let (TraceKind::Dropped { .. }, Some(cause)) = (&event.kind, event.cause) {
            if wanted.contains(&cause) {
                wanted.insert(event.id);
            }
        }
    }
    let mut captions = Captioner::default();
    let mut steps = Vec::new();
    for event in trace {
        captions.observe(event);
        if !wanted.contains(&event.id) {
            continue;
        }
        let position = positions.get(event.id as usize).copied().unwrap_or(0);
        let cause = event.cause.and_then(index_of).map(|index| &trace[index]);
        if let Some(step) = captions.step(event, cause, position, story) {
            steps.push(step);
        }
    }
    steps
}

/// One line for any trace event (the "why" chain).
fn describe(event: &TraceEvent) -> String {
    match &event.kind {
        TraceKind::Sent { from, to, summary, .. } => format!("{from} → {to}: {summary}"),
        // The trace's own line, without its time and id columns.
        _ => event.text(),
    }
}

/// One cause in a step's "Why?": when, in plain words where the story has
/// a step for it, and the trace's own line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhyLine {
    pub time: u64,
    /// The step's caption, for a cause the story shows as a step (not an
    /// input, whose own line is plain already).
    pub plain: Option<String>,
    /// The trace's line: the message with its fields, or the state change.
    pub raw: String,
}

/// Who gets what in a group's assignment, one phrase per member.
pub(crate) fn owners(
    assignment: &[kafkascope_engine::sim::trace::MemberAssignment],
    gets: &str,
    nothing: &str,
) -> Vec<String> {
    assignment
        .iter()
        .map(|member| {
            let node = member.consumer;
            if member.partitions.is_empty() {
                format!("{node} {nothing}")
            } else {
                format!(
                    "{node} {gets} {}",
                    member
                        .partitions
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        })
        .collect()
}

/// Lifelines in a fixed order: producers, brokers, controllers, consumers.
pub fn lifelines<'a>(steps: impl IntoIterator<Item = &'a Step>) -> Vec<NodeId> {
    let rank = |node: &NodeId| match node {
        NodeId::Producer(id) => (0, *id),
        NodeId::Broker(id) => (1, *id),
        NodeId::Controller(id) => (2, *id),
        NodeId::Consumer(id) => (3, *id),
    };
    let nodes: BTreeSet<NodeId> = steps.into_iter().flat_map(Step::nodes).gather();
    let mut nodes: Vec<NodeId> = nodes.into_iter().collect();
    kafkascope_engine::sorting::sort_by_key(&mut nodes, rank);
    nodes
}

/// What each lifeline is at this point of the run: the producer's acks,
/// the bootstrap broker, the focus partition's leader and followers, the
/// group coordinators (leaders of `__consumer_offsets` partitions), the
/// active controller, each member's group.
pub fn roles(
    view: &kafkascope_engine::sim::view::ClusterView,
    steps: &[Step],
    focus: Option<&str>,
) -> BTreeMap<NodeId, String> {
    let mut roles: BTreeMap<NodeId, Vec<String>> = BTreeMap::new();
    for producer in &view.producers {
        roles
            .entry(NodeId::Producer(producer.id))
            .or_default()
            .push(match &producer.transaction {
                Some(txn) => format!("acks={} · transactional ({})", producer.acks, txn.transactional_id),
                None => format!("acks={}", producer.acks),
            });
    }
    if let Some(bootstrap) = steps.iter().find_map(|step| match &step.kind {
        StepKind::Arrow {
            from: NodeId::Producer(_),
            to,
            name: MessageName::Metadata,
            ..
        } => Some(*to),
        _ => None,
    }) {
        roles.entry(bootstrap).or_default().push("bootstrap".into());
    }
    let focus = focus.map(str::to_string).or_else(|| {
        view.partitions
            .iter()
            .find(|partition| !partition.internal)
            .map(|partition| partition.partition.clone())
    });
    if let Some(partition) = view
        .partitions
        .iter()
        .find(|partition| Some(&partition.partition) == focus.as_ref())
    {
        for replica in &partition.replicas {
            let role = if partition.leader == Some(*replica) {
                format!("leader {}", partition.partition)
            } else if partition.isr.contains(replica) {
                "follower".to_string()
            } else {
                "out of sync".to_string()
            };
            roles.entry(NodeId::Broker(*replica)).or_default().push(role);
        }
    }
    for consumer in &view.consumers {
        roles
            .entry(NodeId::Consumer(consumer.id))
            .or_default()
            .push(consumer.group.clone());
    }
    let coordinators: BTreeSet<u32> = view
        .consumers
        .iter()
        .filter_map(|consumer| consumer.coordinator)
        .gather();
    for coordinator in coordinators {
        roles
            .entry(NodeId::Broker(coordinator))
            .or_default()
            .push("coordinator".into());
    }
    for controller in view
        .controllers
        .iter()
        .filter(|controller| controller.alive && controller.role == Role::Leader)
    {
        roles
            .entry(NodeId::Controller(controller.id))
            .or_default()
            .push("active".into());
    }
    roles
        .into_iter()
        .map(|(node, roles)| (node, roles.join(" · ")))
        .gather()
}

/// A Mermaid identifier for `name`: ASCII letters, digits and `_` only,
/// so no name can end a statement or start another.
pub(crate) fn mermaid_id(name: &impl std::fmt::Display) -> String {
    name.to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// `text` as a Mermaid sequence message or note: no line breaks or other
/// control characters (each would start a new statement), no `;` or `#`
/// (Mermaid reads them as a statement's end and an entity), and `:` as a
/// look-alike (it separates a message from its text).
fn mermaid_text(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ';' | '#' => ' ',
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => ' ',
            ':' => '꞉',
            c => c,
        })
        .collect()
}

/// `text` inside a quoted Mermaid label (`["…"]`): its quote and `#` as
/// Mermaid's entity codes, control characters as spaces, so a name can
/// neither close the label nor add a statement (`click … href`).
pub(crate) fn mermaid_label(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '#' => out.push_str("#35;"),
            '"' => out.push_str("#quot;"),
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Steps as a Mermaid `sequenceDiagram`.
pub fn mermaid(steps: &[&Step]) -> String {
    let mut lines: Vec<String> = lifelines(steps.iter().copied())
        .iter()
        .map(ToString::to_string)
        .collect();
    if lines.is_empty() && !steps.is_empty() {
        // Only inputs: they still need a line to stand over.
        lines.push("cluster".to_string());
    }
    let mut out = String::from("sequenceDiagram\n");
    for line in &lines {
        out += &format!("    participant {} as {}\n", mermaid_id(line), mermaid_text(line));
    }
    for step in steps {
        match &step.kind {
            StepKind::Arrow {
                from,
                to,
                label,
                dropped,
                ..
            } => {
                let arrow = if *dropped { "-x" } else { "->>" };
                out += &format!(
                    "    {}{arrow}{}: {}\n",
                    mermaid_id(from),
                    mermaid_id(to),
                    mermaid_text(label)
                );
            }
            StepKind::Note { over, text } => {
                out += &format!("    Note over {}: {}\n", mermaid_id(over), mermaid_text(text));
            }
            StepKind::Input { text } => match (lines.first(), lines.last()) {
                (Some(first), Some(last)) if first != last => {
                    out += &format!(
                        "    Note over {},{}: {}\n",
                        mermaid_id(first),
                        mermaid_id(last),
                        mermaid_text(text)
                    );
                }
                (Some(only), _) => out += &format!("    Note over {}: {}\n", mermaid_id(only), mermaid_text(text)),
                _ => {}
            },
        }
    }
    out
}

/// The story a page URL asks for, and the step (`?story=ID&step=N`).
pub fn parse_link(query: &str) -> (Option<&'static StoryDef>, Option<usize>) {
    let mut story_id = None;
    let mut step = None;
    for pair in query.trim_start_matches('?').split('&') {
        match pair.split_once('=') {
            Some(("story", value)) => story_id = story(value),
            Some(("step", value)) => step = value.parse().ok(),
            _ => {}
        }
    }
    (story_id, step)
}

/// A fork a link replays: at which step (0-based) and which choice.
pub type ForkLink = (usize, String);

/// `fork=STEP:CHOICE,STEP:CHOICE` (steps 1-based), or nothing.
fn fork_param(forks: &[ForkLink]) -> Option<String> {
    (!forks.is_empty()).then(|| {
        let list: Vec<String> = forks
            .iter()
            .map(|(step, choice)| format!("{}:{choice}", step + 1))
            .collect();
        format!("fork={}", list.join(","))
    })
}

/// The forks a link names, in order; `Err` says what is wrong with them.
pub fn parse_forks(query: &str) -> Result<Vec<ForkLink>, String> {
    let Some(value) = crate::view_model::query_param(query, "fork") else {
        return Ok(Vec::new());
    };
    let forks: Vec<&str> = value.split(',').filter(|fork| !fork.is_empty()).collect();
    if forks.len() > MAX_LINK_FORKS {
        return Err(format!(
            "This link has {} forks; kafkascope replays at most {MAX_LINK_FORKS}, so the story opens without them.",
            forks.len()
        ));
    }
    forks
        .into_iter()
        .map(|fork| {
            let parsed = fork.split_once(':').and_then(|(step, choice)| {
                let step = step.parse::<usize>().ok().filter(|&step| step >= 1)?;
                let plain = !choice.is_empty()
                    && choice.chars().all(|character| {
                        character.is_ascii_lowercase() || character.is_ascii_digit() || character == '-'
                    });
                plain.then(|| (step - 1, choice.to_string()))
            });
            parsed.ok_or_else(|| format!("This link's fork \"{fork}\" is not STEP:CHOICE; the story opens without it."))
        })
        .collect()
}

/// The deep link of a step (1-based in the URL, as people count), with the
/// forks that led there.
pub fn link(story: &StoryDef, step: usize, forks: &[ForkLink]) -> String {
    merged_link("", story, step, forks)
}

/// The address after moving to a step: the page's other query parameters
/// (a preset, `play=0` …) kept in their order, `story`, `step` and the
/// forks set.
pub fn merged_link(current_query: &str, story: &StoryDef, step: usize, forks: &[ForkLink]) -> String {
    merged_link_to(current_query, &story.id, step, forks)
}

/// [`merged_link`] by the story's id (the page's first module knows the
/// stories only by their index, [`story_index`]). A shipped story's link no
/// longer opens a fetched scenario.
pub fn merged_link_to(current_query: &str, story_id: &str, step: usize, forks: &[ForkLink]) -> String {
    step_address(current_query, format!("story={story_id}"), Some(step), forks)
}

/// The address of a story with no step: it opens on its first chapter.
/// The page's other parameters are kept.
pub fn merged_story_link(current_query: &str, story_id: &str) -> String {
    step_address(current_query, format!("story={story_id}"), None, &[])
}

/// The address of a step of a story opened from `?scenario=ADDRESS`: the
/// same scenario address (`raw`, as the page's query has it), the step and
/// the forks, the page's other parameters kept, so the link opens the same
/// file at the same step.
pub fn merged_scenario_link(current_query: &str, raw: &str, step: usize, forks: &[ForkLink]) -> String {
    step_address(current_query, format!("{SCENARIO_PARAM}={raw}"), Some(step), forks)
}

/// The page's other parameters in their order, then `which` (the story or
/// the scenario), the step and the forks.
fn step_address(current_query: &str, which: String, step: Option<usize>, forks: &[ForkLink]) -> String {
    let mut pairs: Vec<String> = current_query
        .trim_start_matches('?')
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or_default();
            key != "story" && key != "step" && key != "fork" && key != SCENARIO_PARAM
        })
        .map(str::to_string)
        .collect();
    pairs.push(which);
    pairs.extend(step.map(|step| format!("step={}", step + 1)));
    pairs.extend(fork_param(forks));
    format!("?{}#steps", pairs.join("&"))
}

/// The shown step nearest to `index` (the earlier one on a tie), when a
/// filter hides `index` itself; `None` when it is shown or nothing is.
pub fn nearest_shown(visible: &[usize], index: usize) -> Option<usize> {
    if visible.contains(&index) {
        return None;
    }
    visible
        .iter()
        .copied()
        .min_by_key(|&shown| (shown.abs_diff(index), shown))
}

/// What is wrong with a link's story or step, in one sentence for the
/// page, given how many steps the story it opened has.
pub fn link_problem(query: &str, steps: usize) -> Option<String> {
    for pair in query.trim_start_matches('?').split('&') {
        match pair.split_once('=') {
            Some(("story", value)) if story(value).is_none() => {
                return Some(format!(
                    "This link names a story \"{value}\" that does not exist (the stories are {}); here is the first one.",
                    stories().iter().map(|story| story.id.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
            Some(("step", value)) => match value.parse::<usize>() {
                Ok(step) if (1..=steps.max(1)).contains(&step) => {}
                Ok(step) => {
                    return Some(format!(
                        "This link names step {step}, but the story has steps 1 to {steps}; here is the nearest."
                    ))
                }
                Err(_) => {
                    return Some(format!(
                        "This link's step \"{value}\" is not a step number; here is the story from its first step."
                    ))
                }
            },
            _ => {}
        }
    }
    None
}

/// The event the page sends itself when it changes the address without
/// loading again (a Learn link): the steps section reads the address.
pub const NAVIGATE_EVENT: &str = "kafkascope-navigate";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::story_cursor::{CursorAction, StoryCursor};

    #[test]
    fn a_hidden_step_gives_way_to_the_nearest_shown_one_and_bad_links_are_named() {
        assert_eq!(nearest_shown(&[2, 5, 9], 5), None);
        assert_eq!(nearest_shown(&[2, 5, 9], 7), Some(5));
        assert_eq!(nearest_shown(&[2, 6], 4), Some(2));
        assert_eq!(nearest_shown(&[], 4), None);
        assert_eq!(link_problem("?story=happy-path&step=3", 40), None);
        assert!(
            link_problem("?story=nope&step=1", 40).is_some_and(|text| text.contains("\"nope\" that does not exist"))
        );
        assert!(link_problem("?story=happy-path&step=99", 40).is_some_and(|text| text.contains("steps 1 to 40")));
        assert!(link_problem("?step=x", 40).is_some_and(|text| text.contains("\"x\" is not a step number")));
    }

    #[test]
    fn the_story_index_built_with_the_page_lists_the_stories_in_their_order() {
        let parsed: Vec<(&str, &str)> = stories()
            .iter()
            .map(|story| (story.id.as_str(), story.story().learn.as_str()))
            .collect();
        assert_eq!(story_index(), parsed.as_slice());
    }

    #[test]
    fn a_fetched_scenarios_step_link_keeps_its_address() {
        let link = merged_scenario_link(
            "?embed=steps&scenario=https%3A%2F%2Fx%2Fa.json&step=4&story=happy-path",
            "https%3A%2F%2Fx%2Fa.json",
            6,
            &[],
        );
        assert_eq!(link, "?embed=steps&scenario=https%3A%2F%2Fx%2Fa.json&step=7#steps");
    }

    #[test]
    fn a_shipped_storys_link_drops_the_fetched_scenario() {
        let happy = story("happy-path").unwrap();
        let link = merged_link("?embed=steps&scenario=https%3A%2F%2Fx%2Fa.json&step=4", happy, 1, &[]);
        assert_eq!(link, "?embed=steps&story=happy-path&step=2#steps");
    }

    #[test]
    fn a_scenario_address_is_fetched_only_over_http_and_names_its_story() {
        assert_eq!(
            scenario_url_name("https://course.example/week-2/mine.json?v=3").unwrap(),
            "mine.json"
        );
        assert_eq!(scenario_url_name("http://127.0.0.1:8080/").unwrap(), "scenario.json");
        assert_eq!(scenario_url_name("HTTPS://course.example").unwrap(), "scenario.json");
        for refused in [
            "javascript:alert(1)",
            "data:application/json,{}",
            "file:///etc/passwd",
            "blob:https://x/1",
            "mine.json",
        ] {
            assert!(scenario_url_name(refused).is_err(), "{refused}");
        }
    }

    #[test]
    fn moving_to_a_step_keeps_the_other_query_parameters() {
        let story = story("exercise").expect("a story");
        assert_eq!(merged_link("", story, 0, &[]), "?story=exercise&step=1#steps");
        assert_eq!(
            merged_link(
                "?preset=bench&story=happy-path&play=0&step=9&fork=2:kill-1",
                story,
                3,
                &[]
            ),
            "?preset=bench&play=0&story=exercise&step=4#steps"
        );
        let forks = vec![(11, "kill-1".to_string()), (29, "acks-1".to_string())];
        let linked = link(story, 40, &forks);
        assert_eq!(linked, "?story=exercise&step=41&fork=12:kill-1,30:acks-1#steps");
        assert_eq!(parse_forks(linked.trim_end_matches("#steps")), Ok(forks));
        assert_eq!(parse_forks("?story=x"), Ok(Vec::new()));
        assert!(parse_forks("?fork=0:kill-1").is_err());
        assert!(parse_forks("?fork=3:<script>").is_err());
    }

    #[test]
    fn produce_and_init_producer_id_captions_follow_their_summaries() {
        use kafkascope_engine::groups::assignors::TopicPartition;
        use kafkascope_engine::replication::high_watermark::Acks;
        use kafkascope_engine::sim::types::{ErrorCode, Message, ProducerBatch};
        let partition = |number| TopicPartition {
            topic: "orders".into(),
            partition: number,
        };
        let batch = |records: u64| ProducerBatch {
            records: (0..records).map(|record| (record, 100)).collect(),
            idempotence: Some((2000, 0, 0)),
            transactional: false,
        };
        let captioner = Captioner::default();
        let caption = |message: &Message, from: &str, to: &str| {
            let node = |text: &str| crate::selection::parse_node(text).expect("a node");
            captioner.message_caption(
                node(from),
                node(to),
                message.name(),
                &message.facts(),
                &message.summary(),
            )
        };
        let produce = Message::Produce {
            request: 1,
            acks: Acks::All,
            timeout_ms: 30_000,
            batches: vec![(partition(0), batch(3)), (partition(2), batch(4))],
            transactional_id: None,
            transaction_v2: false,
        };
        let text = caption(&produce, "producer-0", "broker-1");
        assert!(
            text.contains("one request with a batch for each of 2 partitions"),
            "{text}"
        );
        assert!(text.contains("every batch"), "{text}");
        assert_eq!(produce.facts().partitions, [partition(0), partition(2)]);
        let answer = Message::ProduceResponse {
            request: 1,
            responses: vec![(partition(0), Ok(7)), (partition(2), Err(ErrorCode::NotEnoughReplicas))],
            throttle_time_ms: 0,
        };
        let text = caption(&answer, "broker-1", "producer-0");
        assert!(
            text.contains("orders-0 baseOffset=7; orders-2 error=NOT_ENOUGH_REPLICAS]"),
            "{text}"
        );
        assert!(text.contains("appended nothing"), "{text}");
        assert!(!text.contains("before it was committed"), "{text}");
        let text = caption(
            &Message::InitProducerId {
                request: 2,
                transactional_id: None,
                transaction_timeout_ms: 60_000,
                expected: None,
            },
            "producer-0",
            "broker-2",
        );
        assert!(text.contains("producer id and epoch"), "{text}");
        let text = caption(
            &Message::InitProducerIdResponse {
                request: 2,
                result: Ok((2000, 0)),
                finalized: Default::default(),
            },
            "broker-2",
            "producer-0",
        );
        assert!(text.contains("producerId=2000 producerEpoch=0"), "{text}");
    }

    #[test]
    fn every_scenario_file_with_a_story_block_is_a_story_in_its_order() {
        for (file, text) in files::SCENARIO_FILES {
            Scenario::from_json(text).unwrap_or_else(|error| panic!("{file}: {error}"));
        }
        let with_block = files::SCENARIO_FILES
            .iter()
            .filter(|(_, text)| {
                serde_json::from_str::<serde_json::Value>(text).is_ok_and(|value| value.get("story").is_some())
            })
            .count();
        assert_eq!(stories().len(), with_block);
        let ids: BTreeSet<&str> = stories().iter().map(|story| story.id.as_str()).collect();
        assert_eq!(ids.len(), stories().len(), "story ids are unique");
        assert!(stories()
            .windows(2)
            .all(|pair| pair[0].story().order <= pair[1].story().order));
        assert_eq!(first_story().id, "happy-path");
    }

    fn names(run: &StoryRun) -> Vec<&str> {
        run.steps.iter().map(|step| step.name.as_str()).collect()
    }

    #[test]
    fn every_story_plays_and_has_captioned_steps() {
        for story in stories() {
            let run = StoryRun::start(story).unwrap_or_else(|error| panic!("{}: {error}", story.id));
            assert!(run.steps.len() > 5, "{}: {} steps", story.id, run.steps.len());
            assert!(run.steps.iter().all(|step| !step.caption.is_empty()), "{}", story.id);
            for chapter in &story.story().chapters {
                assert!(
                    run.steps
                        .iter()
                        .any(|step| step.chapter.as_deref() == Some(chapter.text.as_str())
                            && matches!(&step.kind, StepKind::Input { .. })),
                    "{}: no input step shows {:?}",
                    story.id,
                    chapter.text
                );
            }
            // Steps are in trace order, and positions never go back.
            assert!(run
                .steps
                .windows(2)
                .all(|pair| pair[0].trace_id < pair[1].trace_id && pair[0].position <= pair[1].position));
        }
    }

    #[test]
    fn the_happy_path_shows_the_protocol_in_order() {
        let run = StoryRun::start(story("happy-path").expect("story")).expect("runs");
        let order = [
            "Metadata",
            "MetadataResponse",
            "Produce",
            "append",
            "Fetch",
            "high-watermark",
            "ProduceResponse",
            "acknowledged",
            "consumed",
            "OffsetCommit",
            "offsets-committed",
        ];
        let names = names(&run);
        let mut from = names.iter().position(|name| *name == "input").expect("the input");
        for wanted in order {
            let found = names[from..]
                .iter()
                .position(|name| *name == wanted)
                .unwrap_or_else(|| panic!("{wanted} missing after step {from}: {:?}", &names[from..]));
            from += found;
        }
        // No idle heartbeats among the steps.
        assert!(!names.contains(&"BrokerHeartbeat") && !names.contains(&"Heartbeat"));
        // The commit lands on the coordinator's lifeline (the broker that
        // leads the group's __consumer_offsets partition).
        let commit = run
            .steps
            .iter()
            .find(|step| step.name == "offsets-committed")
            .expect("a commit");
        assert!(
            matches!(
                &commit.kind,
                StepKind::Note {
                    over: NodeId::Broker(_),
                    ..
                }
            ),
            "{commit:?}"
        );
        let append = run
            .steps
            .iter()
            .find(|step| {
                step.name == "append" && step.caption.contains("stays at") && step.caption.contains("of orders-")
            })
            .expect("a leader append");
        assert!(
            append
                .caption
                .contains("The high watermark stays at 0 until every in-sync follower has fetched from 10"),
            "{}",
            append.caption
        );
    }

    #[test]
    fn the_exercise_labels_continue_error_and_loss_after_its_chapters() {
        let run = StoryRun::start(story("exercise").expect("story")).expect("runs");
        let outcome_after = |prefix: &str, outcome: &str| {
            let start = run
                .steps
                .iter()
                .position(|step| matches!(&step.kind, StepKind::Input { text } if text.starts_with(prefix)))
                .expect("chapter");
            run.steps[start..]
                .iter()
                .any(|step| step.outcome == Some(outcome) && step.partitions.contains(&"orders-1".to_string()))
        };
        assert!(outcome_after("kill broker-1", "continue"));
        assert!(outcome_after("kill broker-2", "error"));
        assert!(outcome_after("restart broker-1", "loss"));
        let idle = run
            .steps
            .iter()
            .any(|step| step.name == "rebalance" && step.caption.contains("gets nothing and idles"));
        assert!(idle);
        // The refusal explains itself from the trace.
        let refused = run
            .steps
            .iter()
            .position(|step| step.caption.contains("NOT_ENOUGH_REPLICAS"))
            .expect("a refusal");
        let chain = run.why(refused);
        assert!(chain.len() >= 2, "{chain:?}");
        assert!(chain.iter().any(|line| line.contains("Produce")), "{chain:?}");
        assert!(chain.iter().all(|line| line.matches(" ms").count() == 1), "{chain:?}");
    }

    #[test]
    fn a_generation_that_never_became_stable_is_named_where_the_count_skips_it() {
        let mut gaps = 0;
        for story in stories() {
            let run = StoryRun::start(story).unwrap_or_else(|error| panic!("{}: {error}", story.id));
            let mut last: BTreeMap<String, u32> = BTreeMap::new();
            for event in &run.trace {
                if let TraceKind::GroupRebalanced { group, generation, .. } = &event.kind {
                    let skipped = last.get(group).is_some_and(|before| *generation > before + 1);
                    last.insert(group.clone(), *generation);
                    if let Some(step) = run.steps.iter().find(|step| step.trace_id == event.id) {
                        assert_eq!(
                            step.caption.contains("never became stable"),
                            skipped,
                            "{}: {}",
                            story.id,
                            step.caption
                        );
                        gaps += usize::from(skipped);
                    }
                }
            }
        }
        // The rebalance storm is one: its count of rebalances skips a generation.
        assert!(gaps > 0, "no story skips a generation");
    }

    /// The acks=1 story's run and its loss step.
    fn acks1_loss() -> (StoryRun, usize) {
        let run = StoryRun::start(story("acks1-loss").expect("story")).expect("runs");
        let loss = run
            .steps
            .iter()
            .position(|step| step.outcome == Some("loss"))
            .expect("a loss");
        (run, loss)
    }

    #[test]
    fn why_on_a_session_timeout_rebalance_starts_at_the_input_that_silenced_the_member() {
        let run = StoryRun::start(story("rebalance-storm").expect("story")).expect("runs");
        let rebalance = run
            .steps
            .iter()
            .position(|step| step.name == "rebalance" && step.caption.contains("missed its session timeout"))
            .expect("a session-timeout rebalance");
        let why = run.why(rebalance);
        let first = why.first().expect("causes");
        assert!(first.contains("(where this starts)"), "{why:?}");
        assert!(first.contains("consumer-"), "{why:?}");
    }

    #[test]
    fn why_says_each_message_in_plain_words_with_its_raw_line_beside_it() {
        let (run, loss) = acks1_loss();
        let lines = run.why_lines(loss);
        assert_eq!(lines.len(), run.why(loss).len());
        let messages: Vec<&WhyLine> = lines.iter().filter(|line| line.raw.contains(" → ")).collect();
        assert!(!messages.is_empty(), "{lines:?}");
        assert!(
            messages.iter().any(|line| line.plain.is_some()),
            "no message of the chain has plain words: {messages:?}"
        );
        let times: Vec<u64> = lines.iter().map(|line| line.time).collect();
        assert!(times.windows(2).all(|pair| pair[0] <= pair[1]), "{times:?}");
    }

    #[test]
    fn why_on_a_loss_names_the_acknowledgement_and_the_cut_off_followers() {
        let (run, loss) = acks1_loss();
        let why = run.why(loss);
        assert!(
            why.iter().any(|line| line.contains("5 records acknowledged") && line.contains("told these records were written")),
            "{why:?}"
        );
        assert!(
            why.iter().any(|line| line
                .contains("offsets 5–9 of orders-0 were only on broker-3; broker-1 and broker-2 never fetched them")),
            "{why:?}"
        );
        assert!(
            why.iter().any(|line| line.contains("is cut off from the leader")),
            "{why:?}"
        );
        assert!(why.iter().all(|line| line.matches(" ms").count() == 1), "{why:?}");
    }

    #[test]
    fn rewinding_and_replaying_reach_the_same_state() {
        let mut run = StoryRun::start(story("acks1-loss").expect("story")).expect("runs");
        let target = run.steps.len() / 2;
        run.seek(target);
        let hash = run.trace_hash();
        let view = run.recording.simulation().view();
        run.seek(1);
        assert_ne!(run.trace_hash(), hash);
        for index in 2..=target {
            run.seek(index);
        }
        assert_eq!(run.trace_hash(), hash);
        assert_eq!(run.recording.simulation().view(), view);
    }

    #[test]
    fn forking_replaces_the_future() {
        let mut run = StoryRun::start(story("happy-path").expect("story")).expect("runs");
        let input = run.steps.iter().position(|step| step.name == "input").expect("input");
        let before = run.steps.len();
        let fresh_input = input;
        run.fork(
            input,
            vec![
                Input::KillBroker { broker: 1 },
                Input::KillBroker { broker: 2 },
                Input::KillBroker { broker: 3 },
            ],
            "kill every broker".into(),
        )
        .expect("within the budget");
        assert_eq!(run.forks, vec!["kill every broker".to_string()]);
        assert!(
            !run.steps.iter().any(|step| step.name == "acknowledged"),
            "acknowledged with every broker dead"
        );
        assert_ne!(run.steps.len(), before);
        // The past before the fork is unchanged (which messages are steps
        // depends on what they led to, so compare the state changes).
        let fresh = StoryRun::start(story("happy-path").expect("story")).expect("runs");
        let states = |steps: &[Step]| -> Vec<Step> {
            steps
                .iter()
                .filter(|step| !matches!(step.kind, StepKind::Arrow { .. }))
                .cloned()
                .collect()
        };
        let fork_id = fresh.steps[fresh_input].trace_id;
        let before_fork = |steps: &[Step]| -> Vec<Step> {
            states(steps)
                .into_iter()
                .filter(|step| step.trace_id <= fork_id)
                .collect()
        };
        assert_eq!(before_fork(&run.steps), before_fork(&fresh.steps));
    }

    #[test]
    fn filters_mermaid_and_links() {
        let run = StoryRun::start(story("two-groups").expect("story")).expect("runs");
        let filter = Filter {
            partition: Some("orders-1".into()),
            ..Filter::default()
        };
        let kept: Vec<&Step> = run.steps.iter().filter(|step| filter.keeps(step)).collect();
        assert!(!kept.is_empty() && kept.len() < run.steps.len());
        assert!(kept
            .iter()
            .all(|step| step.partitions.is_empty() || step.partitions.contains(&"orders-1".to_string())));
        let by_name = Filter {
            name: Some("Produce".into()),
            ..Filter::default()
        };
        assert!(run
            .steps
            .iter()
            .filter(|step| by_name.keeps(step))
            .all(|step| step.name == "Produce"));
        let text = mermaid(&kept[..kept.len().min(20)]);
        assert!(text.starts_with("sequenceDiagram\n"));
        assert!(text.contains("participant producer_0 as producer-0"));
        assert!(text.contains("->>"));
        let inputs: Vec<&Step> = run.steps.iter().filter(|step| step.name == "input").collect();
        assert!(
            mermaid(&inputs).contains("Note over cluster: producer-0 sends"),
            "{}",
            mermaid(&inputs)
        );
        let (story, step) = parse_link("?story=two-groups&step=7");
        assert_eq!(story.map(|story| story.id.as_str()), Some("two-groups"));
        assert_eq!(step, Some(7));
        let view = run.recording.simulation().view();
        let roles = roles(&view, &run.steps, Some("orders-0"));
        assert_eq!(roles.get(&NodeId::Producer(0)).map(String::as_str), Some("acks=all"));
        assert!(roles.values().any(|role| role.contains("leader orders-0")), "{roles:?}");
        assert!(roles.values().any(|role| role.contains("bootstrap")), "{roles:?}");
        assert!(roles.values().any(|role| role.contains("coordinator")), "{roles:?}");
        assert!(roles.values().any(|role| role == "active"), "{roles:?}");
        let (none, no_step) = parse_link("?story=nope&step=x");
        assert!(none.is_none() && no_step.is_none());
        assert_eq!(link(story.expect("story"), 6, &[]), "?story=two-groups&step=7#steps");
    }

    #[test]
    fn group_errors_say_what_the_member_does_next() {
        assert!(captions::group_error_why(&[ErrorCode::MemberIdRequired]).contains("KIP-394"));
        assert!(captions::group_error_why(&[ErrorCode::RebalanceInProgress]).contains("joins again (at its next poll)"));
        assert!(captions::group_error_why(&[ErrorCode::FencedInstanceId]).contains("fatal"));
        assert!(captions::group_error_why(&[ErrorCode::NotCoordinator]).contains("keeps reading"));
        assert_eq!(captions::group_error_why(&[]), "");
    }

    /// A scenario file opens as a story; a bad one says where and what.
    #[test]
    fn a_scenario_file_opens_as_a_story_and_a_bad_one_says_where() {
        let shipped_file = |name: &str| {
            files::SCENARIO_FILES
                .iter()
                .find(|(file, _)| *file == name)
                .map(|(_, text)| *text)
                .unwrap_or_else(|| panic!("no shipped scenario {name}"))
        };
        let shipped = shipped_file("happy-path.json");
        let opened = custom_story("mine.json", shipped).expect("opens");
        assert_eq!(opened.id, "custom-happy-path");
        assert_eq!(opened.file, "mine.json");
        let run = StoryRun::start(opened).expect("plays");
        assert!(!run.steps.is_empty());
        // Its focus partition names the roles drawn, and filters nothing.
        let focused =
            custom_story("focused.json", shipped_file("acks1-leader-crash-loses-records.json")).expect("opens");
        assert_eq!(focused.focus(), Some("orders-0"));
        // Without a story block it gets a plain one.
        let mut bare: serde_json::Value = serde_json::from_str(shipped).expect("json");
        bare.as_object_mut().expect("object").remove("story");
        let opened = custom_story("bare.json", &bare.to_string()).expect("opens");
        assert_eq!(opened.id, "custom-custom");
        // Mistakes name the line and column, or the field.
        let error = custom_story("broken.json", "{\n  \"name\": \"x\",\n  oops\n}").expect_err("broken");
        assert!(
            error.starts_with("broken.json: bad scenario") && error.contains("line 3"),
            "{error}"
        );
        let error =
            custom_story("typo.json", &shipped.replacen("\"runUntilMs\"", "\"runUntil\"", 1)).expect_err("typo");
        assert!(error.contains("unknown field `runUntil`"), "{error}");
        let mut too_big: serde_json::Value = serde_json::from_str(shipped).expect("json");
        too_big["config"]["brokers"] = serde_json::json!(1000);
        let error = custom_story("big.json", &too_big.to_string()).expect_err("too big");
        assert!(error.contains("brokers"), "{error}");
        let mut long: serde_json::Value = serde_json::from_str(shipped).expect("json");
        long["runUntilMs"] = serde_json::json!(MAX_STORY_RUN_MS + 1);
        let error = custom_story("long.json", &long.to_string()).expect_err("long");
        assert!(error.contains("runUntilMs"), "{error}");
        let error = custom_story("huge.json", &" ".repeat(MAX_SCENARIO_FILE_BYTES + 1)).expect_err("huge");
        assert!(error.contains("at most"), "{error}");
        // A topic name Kafka refuses, in the cluster or in an input.
        let mut named: serde_json::Value = serde_json::from_str(shipped).expect("json");
        named["config"]["topics"][0]["name"] = serde_json::json!("orders\"]\nclick");
        let error = custom_story("named.json", &named.to_string()).expect_err("bad name");
        assert!(error.contains("Topic name is invalid"), "{error}");
    }

    #[test]
    fn a_page_keeps_a_bounded_number_of_opened_scenarios() {
        let shipped = crate::sequence_model::stories()
            .iter()
            .find(|story| story.id == "happy-path")
            .map(|story| serde_json::to_string(&story.scenario).expect("json"))
            .expect("happy-path");
        let mut first = None;
        for seed in 0..MAX_OPENED_SCENARIOS {
            let text = shipped.replacen("\"seed\":1", &format!("\"seed\":{}", 1_000 + seed), 1);
            let opened = custom_story("many.json", &text).expect("within the bound");
            first.get_or_insert((text, opened));
        }
        let error =
            custom_story("many.json", &shipped.replacen("\"seed\":1", "\"seed\":99999", 1)).expect_err("one too many");
        assert!(error.contains("reload the page"), "{error}");
        // The same file again is the same story, not another.
        let (text, opened) = first.expect("opened");
        assert!(std::ptr::eq(custom_story("many.json", &text).expect("again"), opened));
    }

    /// The red team's scenario: within every count the format allows (64
    /// brokers, 1,000 partitions, ten minutes), it snapshotted a 64-broker
    /// simulation every 256 of its millions of events until the tab's
    /// memory ran out and the module trapped (`unreachable`). Now its
    /// snapshots are spaced by what an event costs, and the story stops at
    /// kafkascope's work limit with a sentence saying why.
    #[test]
    fn a_scenario_at_the_limits_is_refused_with_a_reason_not_a_trap() {
        let scenario = serde_json::json!({
            "name": "big", "description": "as large as a file may be", "seed": 1,
            "config": {
                "brokers": 64,
                "topics": [{"name": "t", "partitions": 1000, "replicationFactor": 3, "minInsyncReplicas": 2}],
                "producers": [{"topic": "t", "acks": "all"}],
                "consumers": [{"group": "g", "topics": ["t"]}]
            },
            "inputs": [{"atMs": 100, "input": {"type": "produce", "producer": 0, "count": 100}}],
            "runUntilMs": MAX_STORY_RUN_MS
        });
        // The file is checked at once; it plays when the steps open it, a
        // slice at a time after the first, so the page answers meanwhile.
        let story = custom_story("big.json", &scenario.to_string()).expect("checked");
        let mut cursor = StoryCursor::from_link("?story=happy-path").expect("opens");
        cursor.apply(CursorAction::Open {
            story,
            step: None,
            filter: Filter::default(),
        });
        let mut slices = 0;
        while let Some((opening, progress)) = cursor.opening() {
            assert!(std::ptr::eq(opening, story));
            assert!(progress.until_ms == MAX_STORY_RUN_MS && progress.fork == 0);
            cursor.apply(CursorAction::PlaySlice);
            slices += 1;
        }
        assert!(slices >= 40, "{slices} slices");
        let error = cursor.open_problem().expect("refused").to_string();
        assert!(
            error.starts_with("big.json: this story is too large to play on the page")
                && error.contains("shorten runUntilMs"),
            "{error}"
        );
        assert_eq!(cursor.story().id, "happy-path", "the story shown stays");
        // The same file again is refused from memory: not played again, and
        // not kept a second time.
        let kept = OPENED.with(|opened| opened.borrow().len());
        assert_eq!(
            custom_story("big.json", &scenario.to_string()).expect_err("still too costly"),
            error
        );
        assert_eq!(OPENED.with(|opened| opened.borrow().len()), kept);
    }

    /// An opened file as small as the shipped stories opens at once, as
    /// the same story played whole.
    #[test]
    fn a_small_opened_scenario_opens_at_once() {
        let shipped = stories()
            .iter()
            .find(|story| story.id == "happy-path")
            .map(|story| serde_json::to_string(&story.scenario).expect("json"))
            .expect("happy-path");
        let story = custom_story("once.json", &shipped).expect("checked");
        let mut cursor = StoryCursor::from_link("?story=acks1-loss").expect("opens");
        cursor.apply(CursorAction::Open {
            story,
            step: None,
            filter: Filter::default(),
        });
        assert!(cursor.opening().is_none());
        assert!(std::ptr::eq(cursor.story(), story));
        let fresh = StoryRun::start(story).expect("plays");
        assert_eq!(cursor.run().trace.len(), fresh.trace.len());
        assert_eq!(cursor.run().steps, fresh.steps);
    }

    /// A fuzz pass over large shapes within every count a scenario file may
    /// carry: the fuzzer's fault schedules (kills, pauses, partitions, slow
    /// links, client crashes) on 9 to 64 brokers with up to 1,000
    /// partitions a topic. Each either plays as a story or stops at the
    /// work limit with its sentence; none traps, panics or runs unbounded.
    #[test]
    fn large_fuzzed_shapes_play_or_are_refused_within_the_work_limit() {
        use kafkascope_engine::sim::fuzz::{FuzzCase, Mix};
        for seed in 0..6u64 {
            let case = FuzzCase::generate(seed, Mix::All).at_shape(
                Some([9, 16, 32, 64, 64, 12][seed as usize]),
                Some([40, 300, 1_000, 1_000, 200, 5][seed as usize]),
            );
            let text = serde_json::to_string(&case.scenario()).expect("json");
            let story = custom_story(&format!("large-{seed}.json"), &text).expect("within the format's counts");
            if let Err(error) = StoryRun::start(story) {
                assert!(error.contains("too large to play on the page"), "seed {seed}: {error}");
            }
        }
    }

    /// Every shipped story plays within a tenth of the work limit, so the
    /// limit refuses only what is far larger than a lesson.
    #[test]
    fn every_shipped_story_plays_well_inside_the_work_limit() {
        for story in stories() {
            let run = StoryRun::start(story).unwrap_or_else(|error| panic!("{}: {error}", story.id));
            assert!(
                run.work() * 10 <= MAX_STORY_WORK,
                "{}: {} of {MAX_STORY_WORK}",
                story.id,
                run.work()
            );
        }
    }

    #[test]
    fn a_link_with_too_many_forks_is_refused_before_any_is_replayed() {
        let many = vec!["1:kill-1"; MAX_LINK_FORKS + 1].join(",");
        let error = parse_forks(&format!("?story=happy-path&fork={many}")).expect_err("too many");
        assert!(error.contains(&format!("at most {MAX_LINK_FORKS}")), "{error}");
        let enough = vec!["1:kill-1"; MAX_LINK_FORKS].join(",");
        assert_eq!(
            parse_forks(&format!("?fork={enough}")).map(|forks| forks.len()),
            Ok(MAX_LINK_FORKS)
        );
    }
}
