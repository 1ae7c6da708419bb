//! Sequence steps: the guided stories, the steps of a run picked from its
//! trace, their captions with this run's numbers, the "why" chains, the
//! sequence diagram's layout and its Mermaid export. Everything here is
//! plain data derived from the engine's [`Recording`] and trace, tested
//! natively; the component in [`crate::sequence`] only draws it.

use std::collections::{BTreeMap, BTreeSet};

use kafkascope_engine::replication::high_watermark::Acks;
use kafkascope_engine::replication::transactions::ControlType;
use kafkascope_engine::sim::config::{Input, OffsetReset, QuotaType, ScheduledInput};
use kafkascope_engine::sim::recording::Recording;
use kafkascope_engine::sim::scenario::{Scenario, Story};
use kafkascope_engine::sim::trace::{hash, ranges, TraceEvent, TraceKind};
use kafkascope_engine::sim::types::{ErrorCode, MessageFacts, MessageName, NodeId};
use kafkascope_engine::sim::view::Role;
use kafkascope_engine::sim::Simulation;

use crate::selection::{as_broker, as_consumer, as_controller, as_producer};

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
        stories.sort_by(|a, b| (a.story().order, &a.id).cmp(&(b.story().order, &b.id)));
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
/// opened file is a little memory, as a shipped story is). Its run is
/// played to the end before it opens, so a cluster that cannot start says
/// so here.
pub fn custom_story(file_name: &str, text: &str) -> Result<&'static StoryDef, String> {
    if text.len() > MAX_SCENARIO_FILE_BYTES {
        return Err(format!(
            "{file_name} is {} bytes; kafkascope opens scenario files of at most {MAX_SCENARIO_FILE_BYTES}",
            text.len()
        ));
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
    StoryRun::start(definition).map_err(|error| format!("{file_name}: {error}"))?;
    Ok(definition)
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
}

/// Snapshots every this many events (seeking replays at most this many).
const SNAPSHOT_INTERVAL: u64 = 256;

impl StoryRun {
    /// Plays a story to its end.
    pub fn start(story: &'static StoryDef) -> Result<StoryRun, String> {
        let scenario = story.scenario.clone();
        let mut simulation = Simulation::new(scenario.config.clone(), scenario.seed)?;
        for input in &scenario.inputs {
            simulation.schedule(input.clone());
        }
        let recording = Recording::new(simulation, SNAPSHOT_INTERVAL);
        let mut run = StoryRun {
            story,
            scenario,
            positions: vec![0; recording.trace().len()],
            trace: Vec::new(),
            recording,
            steps: Vec::new(),
            outline: Default::default(),
            forks: Vec::new(),
        };
        run.play_to_end();
        Ok(run)
    }

    fn play_to_end(&mut self) {
        let until = self.scenario.run_until_ms;
        while self
            .recording
            .simulation()
            .next_event_time()
            .is_some_and(|time| time <= until)
        {
            self.recording.step();
            let position = self.recording.position();
            let known = self.recording.trace().len();
            self.positions.resize(known, position);
        }
        self.trace = self.recording.trace().to_vec();
        self.steps = steps_of(&self.trace, &self.positions, self.story);
        self.outline = crate::story_view::Outline::of(&self.steps);
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
    pub fn fork(&mut self, index: usize, inputs: Vec<Input>, description: String) {
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
        self.play_to_end();
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
        let by_id: BTreeMap<u64, &TraceEvent> = self.trace.iter().map(|event| (event.id, event)).collect();
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
        let by_id: BTreeMap<u64, &TraceEvent> = self.trace.iter().map(|event| (event.id, event)).collect();
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
        lines.sort_by_key(|(time, id, _)| (*time, *id));
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
        let lost: BTreeSet<u64> = records.iter().copied().collect();
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
        let missing: BTreeSet<u32> = replicas.difference(&holders).copied().collect();
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
        let lost: BTreeSet<u64> = records.iter().copied().collect();
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

/// Follows the run's state while scanning its trace, to caption steps with
/// the numbers they had then.
#[derive(Debug, Default)]
struct Captioner {
    high_watermarks: BTreeMap<(u32, String), u64>,
    leaders: BTreeMap<String, u32>,
    active_controller: Option<u32>,
    /// Each group's coordinator as the last FindCoordinator answer named it
    /// (the broker leading the group's `__consumer_offsets` partition).
    coordinators: BTreeMap<String, NodeId>,
    /// Each group's generation before its latest rebalance, and after it.
    generations: BTreeMap<String, (Option<u32>, u32)>,
}

impl Captioner {
    fn observe(&mut self, event: &TraceEvent) {
        match &event.kind {
            TraceKind::GroupRebalanced { group, generation, .. } => {
                let before = self.generations.get(group).map(|(_, now)| *now);
                self.generations.insert(group.clone(), (before, *generation));
            }
            TraceKind::HighWatermark {
                broker, partition, to, ..
            } => {
                self.high_watermarks.insert((*broker, partition.to_string()), *to);
            }
            TraceKind::LeaderElected { partition, leader, .. } => match leader {
                Some(leader) => {
                    self.leaders.insert(partition.to_string(), *leader);
                }
                None => {
                    self.leaders.remove(&partition.to_string());
                }
            },
            TraceKind::ControllerElected { controller, .. } => self.active_controller = Some(*controller),
            TraceKind::Sent { from, name, facts, .. } => {
                // Before any election is traced, the active controller is
                // the one answering metadata fetches as leader.
                if let (MessageName::FetchResponse, NodeId::Controller(id), None) = (name, from, self.active_controller)
                {
                    if facts.leader == Some(*id) && facts.errors.is_empty() {
                        self.active_controller = Some(*id);
                    }
                }
                if let (MessageName::FindCoordinatorResponse, Some(group), Some(coordinator)) =
                    (name, &facts.group, facts.coordinator)
                {
                    self.coordinators.insert(group.clone(), NodeId::Broker(coordinator));
                }
            }
            _ => {}
        }
    }

    fn controller(&self) -> NodeId {
        NodeId::Controller(self.active_controller.unwrap_or(1))
    }

    /// A group's note, over its coordinator (or its first member).
    fn group_note(
        &self,
        group: &str,
        assignment: &[kafkascope_engine::sim::trace::MemberAssignment],
        text: String,
    ) -> StepKind {
        StepKind::Note {
            over: self
                .coordinators
                .get(group)
                .copied()
                .unwrap_or_else(|| assignment.first().map_or(self.controller(), |member| member.consumer)),
            text,
        }
    }

    fn step(&self, event: &TraceEvent, cause: Option<&TraceEvent>, position: u64, story: &StoryDef) -> Option<Step> {
        let mut outcome = None;
        let mut explainable = false;
        let mut chapter = None;
        let (kind, caption, partitions, name) = match &event.kind {
            TraceKind::Input { description, input } => {
                chapter = story.chapter_at(event.time, input).map(str::to_string);
                (
                    StepKind::Input { text: description.clone() },
                    format!("At {} ms: {description}.", event.time),
                    Vec::new(),
                    "input".to_string(),
                )
            }
            TraceKind::Sent {
                from,
                to,
                name,
                summary,
                facts,
            } => {
                let caption = self.message_caption(*from, *to, *name, facts, summary);
                let partitions = facts.partitions.iter().map(ToString::to_string).collect();
                (
                    StepKind::Arrow {
                        from: *from,
                        to: *to,
                        name: *name,
                        label: summary.clone(),
                        dropped: false,
                    },
                    caption,
                    partitions,
                    name.to_string(),
                )
            }
            TraceKind::Dropped { from, to, name, reason } => (
                StepKind::Arrow {
                    from: *from,
                    to: *to,
                    name: *name,
                    label: format!("{name} lost ({reason})"),
                    dropped: true,
                },
                format!("The {name} from {from} never reaches {to}: {reason}."),
                Vec::new(),
                name.to_string(),
            ),
            TraceKind::Appended {
                broker,
                partition,
                first_offset,
                count,
                leader_epoch,
            } => {
                let end = first_offset + count;
                let hw = self
                    .high_watermarks
                    .get(&(*broker, partition.to_string()))
                    .copied()
                    .unwrap_or(0);
                // A leader appends what a client sent it; a follower what
                // it fetched.
                let from_client = matches!(
                    cause.map(|cause| &cause.kind),
                    Some(TraceKind::Delivered { from, .. }) if !matches!(from, NodeId::Broker(_))
                );
                let leads = from_client || self.leaders.get(&partition.to_string()) == Some(broker);
                let mut caption = format!(
                    "{broker_broker} appends offset{} {first_offset}{} of {partition} (leader epoch {leader_epoch}); its log end is now {end}.",
                    if *count == 1 { "" } else { "s" },
                    if *count == 1 { String::new() } else { format!("–{}", end - 1) }, broker_broker = as_broker(broker));
                if leads && hw < end {
                    caption.push_str(&format!(
                        " The high watermark stays at {hw} until every in-sync follower has fetched from {end}."
                    ));
                }
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("append {first_offset}..{end} → LEO {end}"),
                    },
                    caption,
                    vec![partition.to_string()],
                    "append".to_string(),
                )
            }
            TraceKind::HighWatermark {
                broker,
                partition,
                from,
                to,
                reason,
            } => {
                let leads = self.leaders.get(&partition.to_string()) == Some(broker);
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("HW {from} → {to}"),
                    },
                    format!(
                        "{broker_broker}'s high watermark of {partition} moves from {from} to {to}: {}.{}",
                        reason.text(*to),
                        if leads { format!(" Consumers may now read offsets below {to}.") } else { String::new() }, broker_broker = as_broker(broker)),
                    vec![partition.to_string()],
                    "high-watermark".to_string(),
                )
            }
            TraceKind::Truncated {
                broker,
                partition,
                to_offset,
                removed,
                reason,
            } => (
                StepKind::Note {
                    over: NodeId::Broker(*broker),
                    text: format!("truncate to {to_offset} (−{removed})"),
                },
                format!("{broker_broker} cuts its log of {partition} back to offset {to_offset}, removing {removed} record(s): {reason}.", broker_broker = as_broker(broker)),
                vec![partition.to_string()],
                "truncate".to_string(),
            ),
            TraceKind::Acknowledged {
                producer,
                partition,
                base_offset,
                records,
            } => {
                outcome = Some("continue");
                (
                    StepKind::Note {
                        over: NodeId::Producer(*producer),
                        text: format!("acked {} record(s)", records.len()),
                    },
                    format!(
                        "{producer_producer} learns that {} record(s) of {partition} are written{}.",
                        records.len(),
                        base_offset.map_or(" (acks=0: no offset comes back)".to_string(), |offset| format!(", starting at offset {offset}")), producer_producer = as_producer(producer)),
                    vec![partition.to_string()],
                    "acknowledged".to_string(),
                )
            }
            TraceKind::ProduceFailed {
                producer,
                partition,
                error,
                records,
                will_retry,
            } => {
                outcome = Some("error");
                explainable = true;
                let why = match error {
                    ErrorCode::NotEnoughReplicas => " The ISR is smaller than min.insync.replicas, so the leader refused to append the batch.",
                    ErrorCode::NotEnoughReplicasAfterAppend => " The leader appended the batch, but the ISR shrank below min.insync.replicas before it was committed.",
                    ErrorCode::NotLeaderOrFollower => " The broker it asked no longer leads the partition; the producer refreshes its metadata.",
                    ErrorCode::NetworkException => " The connection to the leader broke: its process is gone.",
                    ErrorCode::RequestTimedOut => " No answer came within request.timeout.ms.",
                    _ => "",
                };
                (
                    StepKind::Note {
                        over: NodeId::Producer(*producer),
                        text: format!("✗ {error}"),
                    },
                    format!(
                        "{producer_producer}'s {} record(s) for {partition} fail with {error}{}.{why}",
                        records.len(),
                        if *will_retry { "; it will retry" } else { " for good" }, producer_producer = as_producer(producer)),
                    vec![partition.to_string()],
                    "produce-failed".to_string(),
                )
            }
            TraceKind::RecordsLost {
                partition,
                records,
                reason,
            } => {
                outcome = Some("loss");
                explainable = true;
                (
                    StepKind::Note {
                        over: self.leaders.get(&partition.to_string()).map_or(self.controller(), |leader| NodeId::Broker(*leader)),
                        text: format!("LOST {}", ranges(records)),
                    },
                    format!("Acknowledged records {} of {partition} are gone: {reason}.", ranges(records)),
                    vec![partition.to_string()],
                    "records-lost".to_string(),
                )
            }
            TraceKind::LeaderElected {
                partition,
                leader,
                leader_epoch,
                isr,
                unclean,
                reason,
            } => {
                explainable = true;
                let leader = leader.map_or("no leader".to_string(), |leader| format!("{broker_leader}", broker_leader = as_broker(leader)));
                (
                    StepKind::Note {
                        over: self.controller(),
                        text: format!("{partition}: leader {leader}, epoch {leader_epoch}{}", if *unclean { " (unclean)" } else { "" }),
                    },
                    format!(
                        "The active controller makes {leader} the leader of {partition} at leader epoch {leader_epoch}, ISR {isr:?}{}: {reason}.",
                        if *unclean { ", from outside the ISR (an unclean election)" } else { "" }
                    ),
                    vec![partition.to_string()],
                    "leader-elected".to_string(),
                )
            }
            TraceKind::IsrChanged {
                partition,
                from,
                to,
                elr,
                partition_epoch,
                reason,
            } => {
                explainable = true;
                let eligible = if elr.is_empty() {
                    String::new()
                } else {
                    format!(" {elr:?} left an ISR already below min.insync.replicas, so they stay eligible to lead (ELR, KIP-966).")
                };
                (
                    StepKind::Note {
                        over: self.controller(),
                        text: if elr.is_empty() {
                            format!("{partition}: ISR {from:?} → {to:?}")
                        } else {
                            format!("{partition}: ISR {from:?} → {to:?}, ELR {elr:?}")
                        },
                    },
                    format!("The controller commits a new ISR for {partition}: {from:?} → {to:?} (partition epoch {partition_epoch}): {reason}.{eligible}"),
                    vec![partition.to_string()],
                    "isr-changed".to_string(),
                )
            }
            TraceKind::GroupRebalanced {
                group,
                generation,
                assignment,
                reason,
            } => {
                explainable = true;
                let owners = owners(assignment, "gets", "gets nothing and idles");
                // A generation the coordinator began (JoinGroup complete)
                // but left before its leader's assignment was stored: the
                // group rebalanced again first, so it has no step of its own.
                let skipped = match self.generations.get(group) {
                    Some((Some(before), now)) if *now == *generation && *generation > before + 1 => {
                        let missing: Vec<String> = (before + 1..*generation).map(|each| each.to_string()).collect();
                        format!(
                            " (Generation {} began but never became stable: the group rebalanced again first, so it has no step of its own and is not counted as a rebalance.)",
                            missing.join(" and ")
                        )
                    }
                    _ => String::new(),
                };
                (
                    self.group_note(group, assignment, format!("{group} generation {generation}")),
                    format!("Group {group} moves to generation {generation} ({reason}): {}.{skipped}", owners.join("; ")),
                    Vec::new(),
                    "rebalance".to_string(),
                )
            }
            TraceKind::TargetAssignment {
                group,
                epoch,
                assignment,
                reason,
            } => {
                explainable = true;
                let owners = owners(assignment, "gets", "gets nothing");
                (
                    self.group_note(group, assignment, format!("{group} epoch {epoch}")),
                    format!(
                        "Group {group} moves to epoch {epoch} ({reason}). The coordinator's own assignor sets the target: {}. Nobody stops: each member moves there on its next heartbeat, giving up partitions first; a partition goes to its new owner only once the old one reports it gone (KIP-848).",
                        owners.join("; ")
                    ),
                    Vec::new(),
                    "rebalance".to_string(),
                )
            }
            TraceKind::Consumed {
                consumer,
                partition,
                from,
                to,
                high_watermark,
            } => (
                StepKind::Note {
                    over: NodeId::Consumer(*consumer),
                    text: format!("read {from}..{to}"),
                },
                format!(
                    "{consumer_consumer} reads offsets {from}–{} of {partition}; the high watermark is {high_watermark}, so nothing above it is visible.",
                    to.saturating_sub(1), consumer_consumer = as_consumer(consumer)),
                vec![partition.to_string()],
                "consumed".to_string(),
            ),
            TraceKind::ProcessedAgain {
                group,
                consumer,
                partition,
                from,
                to,
                count,
                reason,
                skipped,
            } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: if *skipped { format!("{count} duplicate(s) skipped") } else { format!("{count} processed twice") },
                    },
                    format!(
                        "{} {} {count} record(s) of {partition} (offsets {from}–{to}) a second time for group {group}: {reason}.{}",
                        NodeId::Consumer(*consumer),
                        if *skipped { "meets" } else { "processes" },
                        if *skipped {
                            " Its handler is idempotent: it recognises them and does nothing, so at-least-once delivery still has each effect once."
                        } else {
                            " At-least-once delivery: nothing is lost, but the handler's effects happen twice unless it is idempotent."
                        }
                    ),
                    vec![partition.to_string()],
                    "processed-again".to_string(),
                )
            }
            TraceKind::ProcessingInterrupted {
                group,
                consumer,
                processed,
                unprocessed,
                uncommitted_processed,
                committed_unprocessed,
                in_transaction,
            } => {
                explainable = true;
                let mut caption = format!(
                    "{} crashes in the middle of a batch for group {group}: its handler finished {processed} of {} record(s).",
                    NodeId::Consumer(*consumer),
                    processed + unprocessed
                );
                if *in_transaction {
                    caption.push_str(" Its outputs and its offsets are in one open transaction, which its coordinator will abort (when a new instance fences it, or when transaction.timeout.ms passes): none of this work counts, and the group does it again from the last committed offsets (exactly-once).");
                }
                if *uncommitted_processed > 0 {
                    caption.push_str(&format!(
                        " {uncommitted_processed} of them were processed but not committed: the group will read them again from the last commit (at-least-once)."
                    ));
                }
                if !committed_unprocessed.is_empty() {
                    let ranges: Vec<String> = committed_unprocessed
                        .iter()
                        .map(|(partition, from, to)| format!("{partition} {from}–{to}"))
                        .collect();
                    caption.push_str(&format!(
                        " Offsets {} were committed before they were processed: the group starts after them, so they are never processed (at-most-once).",
                        ranges.join(", ")
                    ));
                }
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: format!("crash: {processed} of {} done", processed + unprocessed),
                    },
                    caption,
                    committed_unprocessed.iter().map(|(partition, ..)| partition.to_string()).collect(),
                    "processing-interrupted".to_string(),
                )
            }
            TraceKind::OffsetsCommitted { group, offsets } => (
                StepKind::Note {
                    over: self.coordinators.get(group).copied().unwrap_or_else(|| self.controller()),
                    text: format!("{group} committed"),
                },
                format!(
                    "Group {group}'s positions are stored in __consumer_offsets: {}.",
                    offsets.iter().map(|(partition, offset)| format!("{partition} at {offset}")).collect::<Vec<_>>().join(", ")
                ),
                offsets.iter().map(|(partition, _)| partition.to_string()).collect(),
                "offsets-committed".to_string(),
            ),
            TraceKind::BrokerFencing { broker, fenced, reason } => {
                explainable = *fenced;
                (
                    StepKind::Note {
                        over: self.controller(),
                        text: format!("{} {broker_broker}", if *fenced { "fence" } else { "unfence" }, broker_broker = as_broker(broker)),
                    },
                    format!("The controller {} {broker_broker}: {reason}.", if *fenced { "fences" } else { "unfences" }, broker_broker = as_broker(broker)),
                    Vec::new(),
                    "fencing".to_string(),
                )
            }
            TraceKind::BrokerStatus { broker, status } => (
                StepKind::Note {
                    over: NodeId::Broker(*broker),
                    text: status.to_string(),
                },
                format!("{broker_broker} {status}.", broker_broker = as_broker(broker)),
                Vec::new(),
                "broker-status".to_string(),
            ),
            TraceKind::ConsumerStatus { consumer, status } => (
                StepKind::Note {
                    over: NodeId::Consumer(*consumer),
                    text: status.to_string(),
                },
                format!("{consumer_consumer} {status}.", consumer_consumer = as_consumer(consumer)),
                Vec::new(),
                "consumer-status".to_string(),
            ),
            TraceKind::ControllerStatus { controller, status } => (
                StepKind::Note {
                    over: NodeId::Controller(*controller),
                    text: status.to_string(),
                },
                format!("{controller_controller} {status}.", controller_controller = as_controller(controller)),
                Vec::new(),
                "controller-status".to_string(),
            ),
            TraceKind::ControllerElection { controller, epoch, reason } => (
                StepKind::Note {
                    over: NodeId::Controller(*controller),
                    text: format!("candidate, epoch {epoch}"),
                },
                format!("{controller_controller} stands for election in epoch {epoch}: {reason}.", controller_controller = as_controller(controller)),
                Vec::new(),
                "controller-election".to_string(),
            ),
            TraceKind::ControllerElected { controller, epoch, votes } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Controller(*controller),
                        text: format!("active, epoch {epoch}"),
                    },
                    format!("{controller_controller} wins epoch {epoch} with votes from {votes:?} and becomes the active controller.", controller_controller = as_controller(controller)),
                    Vec::new(),
                    "controller-elected".to_string(),
                )
            }
            TraceKind::TransactionState {
                transactional_id,
                producer_id,
                producer_epoch,
                state,
                partitions,
            } => (
                StepKind::Input {
                    text: format!("{transactional_id}: {state}"),
                },
                format!(
                    "The transaction coordinator writes transactional.id {transactional_id} (producer id {producer_id}, epoch {producer_epoch}) as {state}{} to __transaction_state; the change counts once that record is replicated.",
                    if partitions.is_empty() {
                        String::new()
                    } else {
                        format!(" with {}", partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "))
                    }
                ),
                partitions.iter().map(ToString::to_string).collect(),
                "transaction-state".to_string(),
            ),
            TraceKind::DeadLettered {
                group,
                consumer,
                partition,
                offset,
                attempts,
                topic,
                dead_letter,
            } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: format!("to {topic}"),
                    },
                    format!(
                        "{}'s handler (group {group}) failed {attempts} time(s) on offset {offset} of {partition}, a poison record, and gave up as its policy says: it produces the record to {topic} (record #{dead_letter}) with headers naming the error and the source topic, partition and offset, then goes on with the next record. Its offset is committed like the others, so the group is not stuck; the dead letter waits in {topic} for someone to inspect or replay it.",
                        NodeId::Consumer(*consumer)
                    ),
                    vec![partition.to_string()],
                    "dead-lettered".to_string(),
                )
            }
            TraceKind::SegmentsDeleted {
                broker,
                partition,
                bytes,
                segments,
                log_start_offset,
            } => {
                explainable = true;
                let why = segments.first().map_or(String::new(), |(_, _, reason)| reason.to_string());
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("deleted {} segment(s)", segments.len()),
                    },
                    format!(
                        "{}'s retention check deleted {} whole segment(s) of {partition} ({bytes} bytes, {why}). Retention never looks at who has read a record: it removes closed segments by age or size, never the active one, and only below the high watermark. The log now starts at offset {log_start_offset}; a consumer still behind it gets OFFSET_OUT_OF_RANGE.",
                        NodeId::Broker(*broker),
                        segments.len()
                    ),
                    vec![partition.to_string()],
                    "segments-deleted".to_string(),
                )
            }
            TraceKind::LogCleaned {
                broker,
                partition,
                records_before,
                records_after,
                tombstones_removed,
                checkpoint,
                ..
            } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: "compacted".to_string(),
                    },
                    format!(
                        "{}'s log cleaner compacted its copy of {partition} below offset {checkpoint}: of {records_before} records it kept {records_after}, the latest record of each key, at their original offsets (the offsets of the others are now gaps){}. Compaction is not deletion by age: a key's latest value stays however old it is, and a consumer reading from the start still sees every key. The active segment and anything above the last stable offset are never cleaned.",
                        NodeId::Broker(*broker),
                        if *tombstones_removed > 0 {
                            format!("; {tombstones_removed} tombstone(s) older than delete.retention.ms went too, so their keys are gone")
                        } else {
                            String::new()
                        }
                    ),
                    vec![partition.to_string()],
                    "log-cleaned".to_string(),
                )
            }
            TraceKind::OffsetOutOfRange {
                client,
                partition,
                position,
                reset,
            } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: *client,
                        text: "OFFSET_OUT_OF_RANGE".to_string(),
                    },
                    if *reset == OffsetReset::None {
                        format!(
                            "{client} asked for offset {position} of {partition}, which the log no longer holds (retention deleted it, or the log is shorter): OFFSET_OUT_OF_RANGE. With auto.offset.reset=none nothing moves its position: poll() throws OffsetOutOfRangeException, and this application, which does not catch it, closes the consumer."
                        )
                    } else {
                        format!(
                            "{client} asked for offset {position} of {partition}, which the log no longer holds (retention deleted it, or the log is shorter): OFFSET_OUT_OF_RANGE. Its auto.offset.reset={reset} decides where it goes next; the records it skipped were never read by its group."
                        )
                    },
                    vec![partition.to_string()],
                    "offset-out-of-range".to_string(),
                )
            }
            TraceKind::Throttled {
                client,
                broker,
                throttle_time_ms,
                quota,
            } => {
                explainable = true;
                let broker = NodeId::Broker(*broker);
                (
                    StepKind::Note {
                        over: *client,
                        text: format!("throttled {throttle_time_ms} ms"),
                    },
                    match quota {
                        QuotaType::Produce => format!(
                            "{broker} measured {client} producing faster than its quota ({quota}, per broker, over the last ~10 s) and answered with throttle_time_ms={throttle_time_ms}: the time it takes for the rate to fall back to the quota. It mutes the connection for that long and the producer sends this broker nothing until then (KIP-219); other clients are not slowed down."
                        ),
                        QuotaType::Fetch => format!(
                            "{broker} measured {client} fetching more bytes than its quota ({quota}, per broker, over the last ~10 s) allows: it takes this answer's bytes back, answers empty with throttle_time_ms={throttle_time_ms} and mutes the connection for that long. The consumer fetches nothing from this broker until then (KIP-219); its lag grows while other groups read at full speed."
                        ),
                    },
                    Vec::new(),
                    "throttled".to_string(),
                )
            }
            TraceKind::NoOffsetForPartition { client, partition } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: *client,
                        text: "NoOffsetForPartitionException".to_string(),
                    },
                    format!(
                        "{client} owns {partition}, but its group never committed an offset there and its auto.offset.reset=none names no place to start: poll() throws NoOffsetForPartitionException. The application here does not catch it, so it closes the consumer and leaves the group."
                    ),
                    vec![partition.to_string()],
                    "no-offset".to_string(),
                )
            }
            TraceKind::OffsetReset {
                client,
                partition,
                offset,
            } => (
                StepKind::Note {
                    over: *client,
                    text: format!("reset to {offset}"),
                },
                format!("{client} moves its position on {partition} to offset {offset}, as auto.offset.reset says, and fetches from there."),
                vec![partition.to_string()],
                "offset-reset".to_string(),
            ),
            TraceKind::HandlerFailed {
                group,
                consumer,
                partition,
                offset,
                attempts,
                skipped,
            } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: "handler failed".to_string(),
                    },
                    format!(
                        "{}'s handler (group {group}) failed {attempts} time(s) on offset {offset} of {partition} and has no way around it: the exception leaves the poll loop and the app closes its consumer, which leaves the group. {skipped} record(s) of its last poll were never handled. With auto-commit, closing commits the positions poll() already moved past them (at most once); with manual commits the next owner of {partition} reads the same record and fails the same way (a poison pill).",
                        NodeId::Consumer(*consumer)
                    ),
                    vec![partition.to_string()],
                    "handler-failed".to_string(),
                )
            }
            TraceKind::TransactionRolledBack {
                group,
                consumer,
                records,
                rewound,
            } => {
                explainable = true;
                let back = if rewound.is_empty() {
                    "the member that owns their partitions now does them again from the committed offsets".to_string()
                } else {
                    format!(
                        "it goes back to the last committed offsets of {} (where it was: {}) and does them again",
                        rewound.iter().map(|(partition, _)| partition.to_string()).collect::<Vec<_>>().join(", "),
                        rewound.iter().map(|(partition, offset)| format!("{partition} {offset}")).collect::<Vec<_>>().join(", ")
                    )
                };
                (
                    StepKind::Note {
                        over: NodeId::Consumer(*consumer),
                        text: "transaction aborted".to_string(),
                    },
                    format!(
                        "{}'s transaction aborted, so the {records} record(s) of group {group} it handled in it count for nothing: their outputs are hidden from read_committed readers and their offsets were never committed; {back}.",
                        NodeId::Consumer(*consumer)
                    ),
                    rewound.iter().map(|(partition, _)| partition.to_string()).collect(),
                    "transaction-rolled-back".to_string(),
                )
            }
            TraceKind::TransactionEnded {
                producer,
                transactional_id,
                outcome,
            } => (
                StepKind::Note {
                    over: NodeId::Producer(*producer),
                    text: outcome.to_string(),
                },
                format!("{} ({transactional_id}): {outcome}.", NodeId::Producer(*producer)),
                Vec::new(),
                "transaction-ended".to_string(),
            ),
            TraceKind::MarkerWritten {
                broker,
                partition,
                producer_id,
                control,
                offset,
            } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: format!("{control} marker"),
                    },
                    format!(
                        "{} writes a {control} marker for producer id {producer_id}'s transaction at offset {offset} of {partition}: a control record that read_committed consumers use to decide the transaction's records, and that no consumer returns to its application. Once the high watermark passes it, the last stable offset can move past the transaction.",
                        NodeId::Broker(*broker)
                    ),
                    vec![partition.to_string()],
                    "marker-written".to_string(),
                )
            }
            TraceKind::ChangeRefused { change, reason } => (
                StepKind::Input {
                    text: "refused".to_string(),
                },
                format!("Kafka would refuse to {change}: {reason} Nothing changed."),
                Vec::new(),
                "change-refused".to_string(),
            ),
            TraceKind::DuplicateIgnored {
                broker,
                partition,
                producer_id,
                first_sequence,
                last_sequence,
                first_offset,
            } => {
                explainable = true;
                (
                    StepKind::Note {
                        over: NodeId::Broker(*broker),
                        text: "duplicate batch ignored".to_string(),
                    },
                    format!(
                        "{} already wrote producer id {producer_id}'s sequences {first_sequence}–{last_sequence} on {partition}, at offset {first_offset}: this is a retry of a batch whose answer was lost. It writes nothing and answers with the original offsets, so the idempotent producer's retry leaves one copy in the log.",
                        NodeId::Broker(*broker)
                    ),
                    vec![partition.to_string()],
                    "duplicate-ignored".to_string(),
                )
            }
            TraceKind::LimitReached { what, limit } => (
                StepKind::Input {
                    text: format!("limit: {what}"),
                },
                format!("The simulation stops at kafkascope's limit of {limit} for {what}."),
                Vec::new(),
                "limit-reached".to_string(),
            ),
            TraceKind::ElectLeadersFailed {
                election_type,
                partition,
                error,
            } => (
                StepKind::Input {
                    text: format!("{election_type} election: {error}"),
                },
                match partition {
                    Some(partition) => {
                        format!("An operator's {election_type} leader election elects nobody for {partition}: {error}.")
                    }
                    None => format!(
                        "An operator's {election_type} leader election gets no answer: no controller is active ({error})."
                    ),
                },
                Vec::new(),
                "elect-leaders-failed".to_string(),
            ),
            TraceKind::PartitionsCreated { topic, from, to } => (
                StepKind::Input {
                    text: format!("{topic}: {from} → {to} partitions"),
                },
                format!(
                    "The active controller commits {count} new partition record(s): {topic} has {to} partitions where it had {from}. \
                     Producers and consumers do not hear of them until their next metadata refresh (metadata.max.age.ms); \
                     from then on a key may hash to a different partition, so its new records are no longer behind its old ones.",
                    count = to - from
                ),
                Vec::new(),
                "partitions-created".to_string(),
            ),
            TraceKind::CreatePartitionsFailed { topic, count, error } => (
                StepKind::Input {
                    text: format!("{topic} --partitions {count}: {error}"),
                },
                format!("An operator asks for {count} partitions of {topic}; the answer is {error}."),
                Vec::new(),
                "create-partitions-failed".to_string(),
            ),
            TraceKind::InvariantViolated { invariant, detail } => (
                StepKind::Input {
                    text: format!("invariant broken: {invariant:?}"),
                },
                format!("A safety property broke ({invariant:?}): {detail}."),
                Vec::new(),
                "invariant".to_string(),
            ),
            TraceKind::Delivered { .. } => return None,
        };
        Some(Step {
            trace_id: event.id,
            time: event.time,
            position,
            kind,
            caption,
            chapter,
            outcome,
            partitions,
            name,
            explainable,
        })
    }

    fn message_caption(
        &self,
        from: NodeId,
        to: NodeId,
        name: MessageName,
        facts: &MessageFacts,
        summary: &str,
    ) -> String {
        use MessageName as M;
        let client = matches!(from, NodeId::Consumer(_));
        let metadata_log = matches!(to, NodeId::Controller(_)) || matches!(from, NodeId::Controller(_));
        let offset = facts.fetch_offset.unwrap_or(0);
        match name {
            M::Fetch if metadata_log => format!(
                "{from} fetches the metadata log (__cluster_metadata) from {to} from offset {offset}: {}",
                if matches!(from, NodeId::Broker(_)) {
                    "a broker is an observer of the controller quorum; it learns leaders, ISRs and fencing by fetching, and applies only what is committed."
                } else {
                    "a voter follows the active controller by fetching; the leader counts an entry committed once a majority of voters fetched past it."
                }
            ),
            M::FetchResponse if metadata_log => format!("{from} answers {to}'s metadata fetch: {summary}."),
            M::BeginQuorumEpoch => format!("{from}, the new active controller, tells {to} it leads: {summary}; {to} now fetches from it."),
            M::Metadata => format!("{from} asks {to} for metadata: which broker leads each partition, at which leader epoch."),
            M::MetadataResponse => format!("{from} answers {to} with the leaders it knows ({summary})."),
            M::Produce => {
                let partitions = facts.partitions.len();
                let acks = match facts.acks {
                    Some(Acks::All) if partitions > 1 => {
                        " With acks=all the leader answers once the high watermark passes every batch (or a partition fails or times out): one answer for them all."
                    }
                    Some(Acks::All) => " With acks=all the leader answers only once the high watermark passes the batch.",
                    Some(Acks::Leader) => " With acks=1 the leader answers as soon as it has appended the batches.",
                    Some(Acks::None) | None => " With acks=0 no answer will come.",
                };
                let what = if partitions > 1 {
                    format!("one request with a batch for each of {partitions} partitions it leads")
                } else {
                    "a batch".to_string()
                };
                format!("{from} sends {what} to {to}, the leader: {summary}.{acks}")
            }
            M::ProduceResponse => {
                let mut why = String::new();
                for (error, sentence) in [
                    (ErrorCode::NotEnoughReplicasAfterAppend, " The batch was appended, but the ISR fell below min.insync.replicas before it was committed."),
                    (ErrorCode::NotEnoughReplicas, " The ISR is smaller than min.insync.replicas, so the leader appended nothing."),
                    (ErrorCode::NotLeaderOrFollower, " That broker does not lead the partition (any more)."),
                    (ErrorCode::OutOfOrderSequenceNumber, " The batch's sequence does not follow the last one the leader has from this producer: it retries in order."),
                    (ErrorCode::RequestTimedOut, " The high watermark did not pass the batch within the request's timeout."),
                ] {
                    if facts.errors.contains(&error) {
                        why.push_str(sentence);
                    }
                }
                format!("{from} answers {to}: {summary}.{why}")
            }
            M::InitProducerId if facts.transactional_id.is_some() => format!(
                "{from}, a transactional producer (transactional.id={}), asks its transaction coordinator {to} for a producer id and epoch. The coordinator bumps the epoch: any older instance with this id is fenced, and a transaction it left open is aborted first.",
                facts.transactional_id.as_deref().unwrap_or_default()
            ),
            M::InitProducerId => format!(
                "{from}, an idempotent producer, asks {to} (the least loaded broker) for a producer id and epoch; it sends no record before it has them."
            ),
            M::InitProducerIdResponse if !facts.errors.is_empty() => {
                format!("{from} answers {to}: {summary}.{}", txn_error_why(&facts.errors))
            }
            M::InitProducerIdResponse => format!(
                "{from} gives {to} its producer id ({summary}): every batch now carries the id, the epoch and a sequence per partition, so leaders drop duplicates and keep each partition in order."
            ),
            M::Fetch if client => format!(
                "{from} fetches from {to}, the leader, starting at offset {offset}; it only gets records below the high watermark."
            ),
            M::Fetch => format!(
                "{from}, a follower, fetches from {to}, the leader, starting at offset {offset}: the leader learns that {from} holds everything below {offset}."
            ),
            M::FetchResponse => format!(
                "{from} sends {to} {} record(s) and its high watermark {} ({summary}).",
                facts.records.unwrap_or(0),
                facts.high_watermark.unwrap_or(0)
            ),
            M::AlterPartition => format!("{from}, the leader, asks the controller to change the ISR: {summary}."),
            M::AlterPartitionResponse => format!("The controller answers {to}: {summary}."),
            M::FindCoordinator if facts.transactional_id.is_some() => format!(
                "{from} asks {to} which broker coordinates transactional.id {}: the leader of its __transaction_state partition.",
                facts.transactional_id.as_deref().unwrap_or_default()
            ),
            M::FindCoordinator => format!("{from} asks {to} which broker coordinates its group."),
            M::FindCoordinatorResponse if facts.transactional_id.is_some() => {
                format!("{from} tells {to} its transaction coordinator ({summary}).")
            }
            M::FindCoordinatorResponse => format!("{from} tells {to} its group's coordinator ({summary})."),
            M::AddPartitionsToTxn => format!(
                "{from} tells its transaction coordinator {to} that its open transaction writes to {}: the coordinator stores that in __transaction_state before {from} sends a record there, so it knows where the markers must go.",
                facts.partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
            ),
            M::EndTxn => match facts.control {
                Some(ControlType::Commit) => format!(
                    "{from} has every record of its transaction acknowledged and asks {to} to commit it: the coordinator writes PrepareCommit to __transaction_state. From then on the transaction will commit, whatever fails."
                ),
                _ => format!(
                    "{from} asks {to} to abort its transaction: the coordinator writes PrepareAbort to __transaction_state, then ABORT markers."
                ),
            },
            M::AddPartitionsToTxnResponse | M::EndTxnResponse if !facts.errors.is_empty() => {
                format!("The transaction coordinator {from} answers {to}: {summary}.{}", txn_error_why(&facts.errors))
            }
            M::AddPartitionsToTxnResponse => format!(
                "The transaction coordinator {from} has stored the partitions ({summary}): {to} may send records there."
            ),
            M::EndTxnResponse => format!(
                "The transaction coordinator {from} has stored the decision ({summary}); it now writes a marker to every partition of the transaction, and {to} may start the next one."
            ),
            M::WriteTxnMarkers => format!(
                "The transaction coordinator {from} asks {to}, the leader of {}, to write a {} marker for the transaction ({summary}).",
                facts.partitions.first().map(ToString::to_string).unwrap_or_default(),
                facts.control.map_or_else(String::new, |control| control.to_string())
            ),
            M::WriteTxnMarkersResponse => format!("{from} answers the transaction coordinator {to}: {summary}."),
            M::AddOffsetsToTxn => format!(
                "{from} is about to put its app's consumed positions in the open transaction (sendOffsetsToTransaction), so it tells its transaction coordinator {to} that the transaction also writes to group {}'s __consumer_offsets partition: that partition will get the marker too.",
                facts.group.as_deref().unwrap_or_default()
            ),
            M::AddOffsetsToTxnResponse if !facts.errors.is_empty() => {
                format!("The transaction coordinator {from} answers {to}: {summary}.{}", txn_error_why(&facts.errors))
            }
            M::AddOffsetsToTxnResponse => format!(
                "The transaction coordinator {from} has stored the group's partition ({summary}): {to} now sends the offsets to the group coordinator."
            ),
            M::TxnOffsetCommit => format!(
                "{from} sends the app's positions to group {}'s coordinator {to} inside its transaction ({summary}). They are written to __consumer_offsets as pending: they count only once the transaction's COMMIT marker reaches that partition, and vanish if it aborts. The request carries the member's generation, so an app instance that lost its partitions cannot commit (KIP-447).",
                facts.group.as_deref().unwrap_or_default()
            ),
            M::TxnOffsetCommitResponse if !facts.errors.is_empty() => format!(
                "The group coordinator {from} refuses {to}'s offsets: {summary}.{}",
                txn_offsets_error_why(&facts.errors)
            ),
            M::TxnOffsetCommitResponse => format!(
                "The group coordinator {from} has written the pending offsets ({summary}): {to} may now commit the transaction."
            ),
            M::JoinGroup => format!("{from} joins its group at the coordinator {to}, listing its topics and assignor."),
            M::JoinGroupResponse => format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors)),
            M::SyncGroup => format!("{from} asks the coordinator {to} for its partitions ({summary})."),
            M::SyncGroupResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors))
            }
            M::SyncGroupResponse => format!("The coordinator {from} gives {to} its assignment ({summary})."),
            M::HeartbeatResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}'s heartbeat: {summary}.{}", group_error_why(&facts.errors))
            }
            M::OffsetCommit => format!("{from} commits its positions to the coordinator {to}, which writes them to __consumer_offsets ({summary})."),
            M::OffsetCommitResponse => format!("The commit is durable: {summary}."),
            M::OffsetFetch => format!("{from} asks the coordinator {to} where its group stopped reading."),
            M::OffsetFetchResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors))
            }
            M::OffsetFetchResponse => format!("The coordinator {from} answers {to}: {summary}."),
            M::ListOffsets => format!("{from} asks {to} where the log starts or ends ({summary})."),
            M::Vote => format!("{from} asks {to} for its vote: {summary}."),
            M::VoteResponse => format!("{from} answers {to}: {summary}."),
            M::BrokerHeartbeat => format!("{from} heartbeats to the controller ({summary})."),
            M::LeaveGroup => format!("{from} leaves its group at the coordinator {to}."),
            M::ConsumerGroupHeartbeat => {
                let owned = facts.partitions.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
                match facts.member_epoch {
                    Some(0) => format!("{from} joins its group at the coordinator {to} with a ConsumerGroupHeartbeat at member epoch 0 (KIP-848): no JoinGroup, no SyncGroup, no leader member."),
                    Some(-1) => format!("{from} leaves its group: a ConsumerGroupHeartbeat at member epoch -1."),
                    Some(epoch) if owned.is_empty() => format!("{from} heartbeats to the coordinator {to} at member epoch {epoch}, owning nothing yet."),
                    Some(epoch) => format!("{from} heartbeats to the coordinator {to} at member epoch {epoch} and reports what it owns: {owned}."),
                    None => format!("{from} → {to}: {summary}."),
                }
            }
            M::ConsumerGroupHeartbeatResponse if !facts.errors.is_empty() => {
                format!("The coordinator {from} answers {to}: {summary}.{}", group_error_why(&facts.errors))
            }
            M::ConsumerGroupHeartbeatResponse if facts.partitions.is_empty() => format!(
                "The coordinator {from} answers {to} ({summary}): nothing to read yet, either because the target gives it nothing or because the partitions it will get are still owned by members giving them up."
            ),
            M::ConsumerGroupHeartbeatResponse => format!(
                "The coordinator {from} answers {to} with its member epoch and the partitions it should own now ({summary}). {to} gives up what is not in the list (committing first), starts on what is new, and says so in a heartbeat at once."
            ),
            M::BrokerRegistration
            | M::BrokerRegistrationResponse
            | M::BrokerHeartbeatResponse
            | M::NotController
            | M::Heartbeat
            | M::HeartbeatResponse
            | M::ListOffsetsResponse
            | M::ConnectionClosed => format!("{from} → {to}: {summary}."),
        }
    }
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
    let nodes: BTreeSet<NodeId> = steps.into_iter().flat_map(Step::nodes).collect();
    let mut nodes: Vec<NodeId> = nodes.into_iter().collect();
    nodes.sort_by_key(rank);
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
            .push(format!("acks={}", producer.acks));
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
        .collect();
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
        .collect()
}

fn mermaid_id(name: &impl std::fmt::Display) -> String {
    name.to_string().replace('-', "_")
}

fn mermaid_text(text: &str) -> String {
    text.replace([';', '#', '\n'], " ").replace(':', "꞉")
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
        out += &format!("    participant {} as {line}\n", mermaid_id(line));
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
    value
        .split(',')
        .filter(|fork| !fork.is_empty())
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

/// Why a transaction coordinator answered with these errors (Kafka 4.1's
/// `TransactionCoordinator` and the client's `TransactionManager`), as a
/// caption's tail.
fn txn_error_why(errors: &[ErrorCode]) -> String {
    let mut why = String::new();
    for (error, sentence) in [
        (ErrorCode::ConcurrentTransactions, " The coordinator is still changing this transactional id's state (writing it, or finishing the last transaction's markers): the producer asks again after retry.backoff.ms."),
        (ErrorCode::ProducerFenced, " A newer instance with the same transactional.id has a newer epoch: this producer is a zombie. For Kafka's client that is fatal: it stops, and what it had not sent fails."),
        (ErrorCode::NotCoordinator, " This broker does not coordinate the id (any more): the producer looks for the coordinator again."),
        (ErrorCode::CoordinatorNotAvailable, " The coordinator is not ready (__transaction_state is being created or loaded): the producer asks again."),
        (ErrorCode::InvalidTxnState, " The request does not fit the transaction's state."),
        (ErrorCode::InvalidProducerIdMapping, " The producer id is not this transactional id's."),
    ] {
        if errors.contains(&error) {
            why.push_str(sentence);
        }
    }
    why
}

/// Why a group coordinator refused a `TxnOffsetCommit` (the client's
/// `TransactionManager.TxnOffsetCommitHandler`), as a caption's tail.
fn txn_offsets_error_why(errors: &[ErrorCode]) -> String {
    let mut why = String::new();
    for (error, sentence) in [
        (ErrorCode::UnknownMemberId, " The group no longer has this member: the app instance is a zombie whose partitions were given to another. Its transaction can only abort, so nothing it wrote in it counts."),
        (ErrorCode::IllegalGeneration, " The member's generation is over: its partitions may belong to another member now. Its transaction can only abort, so nothing it wrote in it counts."),
        (ErrorCode::FencedInstanceId, " Another process holds this group.instance.id: the transaction can only abort."),
        (ErrorCode::NotCoordinator, " This broker does not coordinate the group (any more): the producer looks for it again."),
        (ErrorCode::CoordinatorNotAvailable, " The group coordinator cannot answer now: the producer looks for it again."),
        (ErrorCode::ProducerFenced, " A newer instance has this transactional.id: fatal for this producer."),
    ] {
        if errors.contains(&error) {
            why.push_str(sentence);
        }
    }
    why
}

/// Why a group coordinator answered with these errors (Kafka 4.1's
/// `GroupMetadataManager` and `ConsumerCoordinator`), as a caption's tail.
fn group_error_why(errors: &[ErrorCode]) -> String {
    let mut why = String::new();
    for (error, sentence) in [
        (ErrorCode::UnstableOffsetCommit, " A transaction holds offsets for these partitions that are not decided yet (KIP-447): the consumer asks again and starts reading only once the transaction commits or aborts, so it neither reads again what the transaction covers nor skips what it aborted."),
        (ErrorCode::MemberIdRequired, " A new member gets its member id first and joins again with it (KIP-394), so a member that never comes back is not waited for."),
        (ErrorCode::RebalanceInProgress, " The group is rebalancing: the member joins again (at its next poll)."),
        (ErrorCode::IllegalGeneration, " The member's generation is over: what it owned is lost and it joins again."),
        (ErrorCode::UnknownMemberId, " The coordinator does not know this member (its session expired, or a new coordinator never had it): it joins again as a new member."),
        (ErrorCode::FencedInstanceId, " Another process now holds this group.instance.id: for Kafka's client that is fatal, and this one stops."),
        (ErrorCode::InconsistentGroupProtocol, " Its assignor is not one every member of the group supports: for Kafka's client that is fatal."),
        (ErrorCode::NotCoordinator, " This broker no longer coordinates the group: the member looks for the new coordinator and, if it has partitions, keeps reading them meanwhile."),
        (ErrorCode::CoordinatorNotAvailable, " The coordinator cannot answer now (its group is loading or could not be written): the member looks for it again."),
        (ErrorCode::FencedMemberEpoch, " The member's epoch is not one the coordinator accepts: it drops its partitions without committing and joins again at epoch 0 (KIP-848)."),
        (ErrorCode::StaleMemberEpoch, " The commit carried an old member epoch: it is refused, and the member learns its new epoch from its next heartbeat."),
        (ErrorCode::UnsupportedAssignor, " The broker has no server-side assignor by that name (group.consumer.assignors): for Kafka's client that is fatal."),
        (ErrorCode::GroupIdNotFound, " The group exists with the other protocol: for Kafka's client that is fatal (Kafka can migrate a group between protocols; the simulator does not)."),
    ] {
        if errors.contains(&error) {
            why.push_str(sentence);
        }
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

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
            },
            "producer-0",
            "broker-2",
        );
        assert!(text.contains("producer id and epoch"), "{text}");
        let text = caption(
            &Message::InitProducerIdResponse {
                request: 2,
                result: Ok((2000, 0)),
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
        );
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
        assert!(group_error_why(&[ErrorCode::MemberIdRequired]).contains("KIP-394"));
        assert!(group_error_why(&[ErrorCode::RebalanceInProgress]).contains("joins again (at its next poll)"));
        assert!(group_error_why(&[ErrorCode::FencedInstanceId]).contains("fatal"));
        assert!(group_error_why(&[ErrorCode::NotCoordinator]).contains("keeps reading"));
        assert_eq!(group_error_why(&[]), "");
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
    }
}
