//! Scenario files: a cluster, a seed, timed inputs, and the outcomes the
//! author expects. `kafkascope run FILE` plays one and checks it; the
//! guided stories are built on them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::{ClusterConfig, ScheduledInput};
use super::trace::{TraceEvent, TraceKind};
use super::types::{ErrorCode, NodeId, Time};
use super::{Simulation, Summary};
use crate::protocol::TopicPartition;

/// The scenario format's JSON Schema, generated from these types (and so
/// from what the parser takes): `kafkascope schema` prints it and the
/// format reference is written from it.
#[cfg(feature = "schema")]
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(Scenario)).unwrap_or_default()
}

/// A scenario as authors write it (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// A short title.
    pub name: String,
    /// What it shows, in a sentence or two.
    #[serde(default)]
    pub description: String,
    /// The seed of the run.
    #[serde(default)]
    pub seed: u64,
    /// The cluster.
    pub config: ClusterConfig,
    /// Inputs at their times.
    #[serde(default)]
    pub inputs: Vec<ScheduledInput>,
    /// Run until this virtual time.
    pub run_until_ms: Time,
    /// What must happen.
    #[serde(default)]
    pub expect: Vec<Expectation>,
    /// With this block the scenario is a guided story on the page (its
    /// steps, its place on Learn); without it, a scenario to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub story: Option<Story>,
}

/// What makes a scenario a guided story: a new story is one scenario file
/// with this block, plus its golden trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Story {
    /// Its id in links (`?story=acks1-loss`): lower-case letters, digits
    /// and dashes.
    pub id: String,
    /// Its place among the stories and on Learn (lowest first).
    pub order: u32,
    /// One sentence for Learn: what the learner will see.
    pub learn: String,
    /// The partition the story is about (`orders-0`): the steps label
    /// the lifelines' roles for it (leader, follower). It filters nothing:
    /// every story opens the same way, on its first chapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub focus: Option<String>,
    /// Captions that open chapters, each on the step of one input.
    #[serde(default)]
    pub chapters: Vec<Chapter>,
}

/// A chapter caption, shown on the step where an input happens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Chapter {
    /// Which input opens it: its index in `inputs`, from 0.
    pub input: usize,
    /// What happens now and why it matters, in a sentence or two.
    pub text: String,
}

/// An outcome the author expects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "type", rename_all = "camelCase", deny_unknown_fields)]
pub enum Expectation {
    /// Exactly these acknowledged records are lost (record ids, as the
    /// trace numbers them from 0).
    RecordsLost {
        /// The record ids.
        records: Vec<u64>,
    },
    /// At least this many acknowledged records are lost.
    #[serde(rename_all = "camelCase")]
    SomeRecordsLost {
        /// The minimum.
        at_least: u64,
    },
    /// No acknowledged record is lost.
    NoRecordsLost,
    /// A producer saw this error at least once.
    ProducerError {
        /// The Kafka error.
        error: ErrorCode,
    },
    /// At least this many records were acknowledged.
    #[serde(rename_all = "camelCase")]
    Acknowledged {
        /// The minimum.
        at_least: u64,
    },
    /// An unclean leader election happened.
    UncleanElection,
    /// At least this many leader elections were committed.
    #[serde(rename_all = "camelCase")]
    LeaderElections {
        /// The minimum.
        at_least: u64,
    },
    /// No invariant was violated.
    NoInvariantViolations,
    /// A consumer read at least this many records.
    #[serde(rename_all = "camelCase")]
    ConsumerRead {
        /// Which consumer.
        consumer: u32,
        /// The minimum.
        at_least: u64,
        /// The maximum, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_most: Option<u64>,
    },
    /// A consumer is in its group but owns no partition at the end.
    IdleConsumer {
        /// Which consumer.
        consumer: u32,
    },
    /// The controller quorum elected a new active controller at least this
    /// many times.
    #[serde(rename_all = "camelCase")]
    ControllerElections {
        /// The minimum.
        at_least: u64,
    },
    /// Once every fault has healed the cluster works again (the fuzzer's
    /// liveness check): every record sent from `burstAtMs` on is
    /// acknowledged, every record is acknowledged or failed, and every
    /// group has read up to each partition's high watermark.
    #[serde(rename_all = "camelCase")]
    Recovers {
        /// When the burst of records after recovery is sent.
        burst_at_ms: Time,
    },
    /// At the end, the controller has this broker leading the partition.
    PartitionLeader {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The leader expected.
        broker: u32,
    },
    /// At the end, the committed metadata gives the partition these
    /// eligible leader replicas (KIP-966), in order.
    EligibleLeaderReplicas {
        /// The topic.
        topic: String,
        /// The partition.
        partition: u32,
        /// The ELR expected (empty: none).
        elr: Vec<u32>,
    },
    /// A group reached at least this generation.
    #[serde(rename_all = "camelCase")]
    GroupGeneration {
        /// Which consumer's group (the consumer's view).
        consumer: u32,
        /// The minimum generation.
        at_least: u32,
    },
    /// A group completed between `atLeast` and `atMost` rebalances (new
    /// generations) after `afterMs`.
    #[serde(rename_all = "camelCase")]
    Rebalances {
        /// The group.
        group: String,
        /// Counted from this time on (0: from the start).
        #[serde(default)]
        after_ms: Time,
        /// The minimum.
        #[serde(default)]
        at_least: u32,
        /// The maximum, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_most: Option<u32>,
    },
    /// At the end, a group's delivery ledger: how many acknowledged
    /// records were processed more than once, and never (each a range).
    #[serde(rename_all = "camelCase")]
    Delivery {
        /// The group.
        group: String,
        /// Records processed twice or more: at least this many.
        #[serde(default)]
        again_at_least: u64,
        /// Records processed twice or more: at most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        again_at_most: Option<u64>,
        /// Records never processed: at least this many.
        #[serde(default)]
        never_at_least: u64,
        /// Records never processed: at most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        never_at_most: Option<u64>,
        /// Records sent to the dead letter queue: at least this many.
        #[serde(default)]
        dead_lettered_at_least: u64,
        /// Records sent to the dead letter queue: at most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dead_lettered_at_most: Option<u64>,
    },
    /// A consumer left its group because it did not poll within
    /// `max.poll.interval.ms`, at least once.
    PollTimeout {
        /// Which consumer.
        consumer: u32,
    },
    /// At the end, retention has deleted at least `log_start_at_least`
    /// offsets of `topic` (the sum over its partitions of the leaders' log
    /// start offsets), and consumers were sent back by `OFFSET_OUT_OF_RANGE`
    /// at least `resets_at_least` times.
    #[serde(rename_all = "camelCase")]
    Retention {
        /// The topic.
        topic: String,
        /// Offsets deleted, over all partitions: at least this many.
        #[serde(default)]
        log_start_at_least: u64,
        /// `OFFSET_OUT_OF_RANGE` answers a consumer acted on: at least.
        #[serde(default)]
        resets_at_least: u64,
    },
    /// Brokers' cleaners compacted `topic` at least `cleanings_at_least`
    /// times (counting each replica's cleaning) and removed at least
    /// `tombstones_removed_at_least` tombstones past `delete.retention.ms`.
    #[serde(rename_all = "camelCase")]
    Compaction {
        /// The topic.
        topic: String,
        /// Cleanings: at least this many.
        #[serde(default)]
        cleanings_at_least: u64,
        /// Tombstones removed: at least this many.
        #[serde(default)]
        tombstones_removed_at_least: u64,
    },
    /// Brokers throttled `producer` (over its produce quota) or
    /// `consumer` (over its fetch quota) at least `at_least` and at most
    /// `at_most` times.
    #[serde(rename_all = "camelCase")]
    Throttled {
        /// Which producer (give this or `consumer`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        producer: Option<u32>,
        /// Which consumer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        consumer: Option<u32>,
        /// At least this many throttled answers.
        #[serde(default)]
        at_least: u64,
        /// At most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_most: Option<u64>,
    },
    /// At the end, the committed outputs of a consume-transform-produce
    /// pipeline on `topic` as a `read_committed` reader sees them
    /// ([`OutputAudit`](super::ledger::OutputAudit)): at least this many
    /// input records have an output, and so many have more than one.
    #[serde(rename_all = "camelCase")]
    Outputs {
        /// The output topic.
        topic: String,
        /// Input records with a committed output: at least this many.
        #[serde(default)]
        sources_at_least: u64,
        /// Input records with two or more: at least this many.
        #[serde(default)]
        duplicated_at_least: u64,
        /// Input records with two or more: at most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duplicated_at_most: Option<u64>,
    },
    /// The producer epochs a transactional id's coordinator records carried,
    /// in order, each once (`[0, 1, 2]`: two transactions under
    /// transaction version 2, each end bumping the epoch; `[0]`: the same
    /// under version 1).
    #[serde(rename_all = "camelCase")]
    TransactionEpochs {
        /// The `transactional.id`.
        transactional_id: String,
        /// The epochs.
        epochs: Vec<u16>,
    },
    /// KIP-320: after a leader change a consumer validated its position
    /// and found the log truncated under it, the logs parting at this
    /// offset (`OffsetForLeaderEpoch`), and went on from there.
    #[serde(rename_all = "camelCase")]
    TruncationDetected {
        /// Which consumer.
        consumer: u32,
        /// Where the new leader's log parts from what it read.
        diverging_offset: u64,
    },
    /// At the end, partitions hold this many hanging transactions: a
    /// producer's transaction open in a partition's log that no transaction
    /// coordinator has open for that partition, so no marker will ever
    /// close it and `read_committed` readers stop at it for good (what
    /// KIP-890 prevents).
    #[serde(rename_all = "camelCase")]
    HangingTransactions {
        /// At least this many.
        #[serde(default)]
        at_least: u64,
        /// At most this many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at_most: Option<u64>,
    },
    /// Jepsen's checks over the run's history find no anomaly (what Kafka's
    /// design allows, and what they leave unjudged, aside).
    NoJepsenAnomalies,
    /// Jepsen's checks find at least this many anomalies of this class (or,
    /// for a class Kafka allows, report it at least this many times).
    #[serde(rename_all = "camelCase")]
    JepsenAnomaly {
        /// The class, as `lostWrite`, `abortedRead`, `writeCycle`.
        anomaly: crate::history::AnomalyKind,
        /// The minimum (1 if not given).
        #[serde(default = "one")]
        at_least: u64,
    },
}

fn one() -> u64 {
    1
}

impl Expectation {
    /// Whether checking it needs the run's history for Jepsen's checks.
    pub fn needs_history(&self) -> bool {
        matches!(self, Expectation::NoJepsenAnomalies | Expectation::JepsenAnomaly { .. })
    }
}

/// The result of playing a scenario.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The run, to inspect further.
    pub simulation: Simulation,
    /// End-of-run counts.
    pub summary: Summary,
    /// Expectations that did not hold, one sentence each (and the
    /// recovery check's, for a scenario that expects recovery).
    pub failures: Vec<String>,
    /// Each stated expectation with why it did not hold (`None`: it held).
    pub checked: Vec<(Expectation, Option<String>)>,
}

impl Scenario {
    /// Parses a scenario; errors name the field.
    pub fn from_json(text: &str) -> Result<Scenario, String> {
        let scenario: Scenario = serde_json::from_str(text).map_err(|error| format!("bad scenario: {error}"))?;
        scenario
            .check_limits()
            .map_err(|error| format!("bad scenario: {error}"))?;
        scenario
            .check_story()
            .map_err(|error| format!("bad scenario: {error}"))?;
        for (index, scheduled) in scenario.inputs.iter().enumerate() {
            scheduled
                .input
                .check_topic_names()
                .map_err(|error| format!("bad scenario: inputs[{index}]: {error}"))?;
        }
        if let Some(unknown) = super::input_names::first_unknown(&scenario.config, &scenario.inputs) {
            let at = crate::json_position::position(text, &unknown.path())
                .map(|(line, column)| format!(" at line {line} column {column}"))
                .unwrap_or_default();
            return Err(format!(
                "bad scenario: {}: {}{at}",
                unknown.path_text(),
                unknown.message
            ));
        }
        // An input after the run's end would never happen.
        if let Some((index, late)) = scenario
            .inputs
            .iter()
            .enumerate()
            .find(|(_, scheduled)| scheduled.at_ms > scenario.run_until_ms)
        {
            let path = [
                crate::json_position::Step::Field("inputs"),
                crate::json_position::Step::Index(index),
                crate::json_position::Step::Field("atMs"),
            ];
            let at = crate::json_position::position(text, &path)
                .map(|(line, column)| format!(" at line {line} column {column}"))
                .unwrap_or_default();
            return Err(format!(
                "bad scenario: inputs[{index}].atMs is {}, after the run ends (runUntilMs {}), so it would never happen{at}",
                late.at_ms, scenario.run_until_ms
            ));
        }
        Ok(scenario)
    }

    /// Whether the story block names things the scenario has: an id fit for
    /// a link, chapters on inputs that exist, a focus partition of a topic.
    pub fn check_story(&self) -> Result<(), String> {
        let Some(story) = &self.story else { return Ok(()) };
        let plain = |text: &str| {
            !text.is_empty()
                && text
                    .bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        };
        if !plain(&story.id) {
            return Err(format!(
                "story.id \"{}\" must be lower-case letters, digits and dashes",
                story.id
            ));
        }
        for (index, chapter) in story.chapters.iter().enumerate() {
            if chapter.input >= self.inputs.len() {
                return Err(format!(
                    "story.chapters[{index}].input is {}, but the scenario has {} inputs (numbered from 0)",
                    chapter.input,
                    self.inputs.len()
                ));
            }
        }
        if let Some(focus) = &story.focus {
            let known =
                self.config.topics.iter().any(|topic| {
                    (0..topic.partitions).any(|partition| format!("{}-{partition}", topic.name) == *focus)
                });
            if !known {
                return Err(format!(
                    "story.focus \"{focus}\" is no partition of the scenario's topics"
                ));
            }
        }
        Ok(())
    }

    /// What a scenario may ask for ([`crate::limits`]): its inputs, its
    /// run length, the records its inputs produce and the consumers they add.
    pub fn check_limits(&self) -> Result<(), crate::limits::LimitExceeded> {
        use crate::limits::{at_most, MAX_CONSUMERS, MAX_INPUTS, MAX_RECORDS, MAX_RECORD_BYTES, MAX_RUN_MS};
        at_most("inputs", self.inputs.len() as u64, MAX_INPUTS as u64)?;
        at_most("runUntilMs", self.run_until_ms, MAX_RUN_MS)?;
        let mut records = 0u64;
        let mut consumers = self.config.consumers.len() as u64;
        for scheduled in &self.inputs {
            at_most("an input's atMs", scheduled.at_ms, MAX_RUN_MS)?;
            match &scheduled.input {
                super::config::Input::Produce { count, bytes, .. } => {
                    records += u64::from(*count);
                    at_most("bytes per record", u64::from(*bytes), u64::from(MAX_RECORD_BYTES))?;
                }
                super::config::Input::AddConsumer { .. } => consumers += 1,
                _ => {}
            }
            if let Some((what, duration)) = scheduled.input.duration() {
                at_most(what, duration, MAX_RUN_MS)?;
            }
        }
        at_most("records produced", records, MAX_RECORDS)?;
        at_most("consumers", consumers, MAX_CONSUMERS as u64)
    }

    /// Plays the scenario and checks its expectations; the outcome's
    /// simulation holds the whole trace.
    pub fn run(&self) -> Result<Outcome, String> {
        self.play(None, false)
    }

    /// Plays the scenario handing each trace event to `sink` as it happens
    /// and keeping none of them, so memory stays bounded however long the
    /// run (`kafkascope run`); the outcome's simulation has an empty trace.
    pub fn run_streaming(&self, sink: &mut dyn FnMut(&TraceEvent)) -> Result<Outcome, String> {
        self.play(Some(sink), false)
    }

    /// [`Scenario::run_streaming`], keeping the run's history for Jepsen's
    /// checks (`kafkascope run` reports their verdict).
    pub fn run_streaming_with_history(&self, sink: &mut dyn FnMut(&TraceEvent)) -> Result<Outcome, String> {
        self.play(Some(sink), true)
    }

    /// Plays the scenario as [`Scenario::run`] does, keeping the run's
    /// history for Jepsen's checks (`outcome.simulation.jepsen_verdict()`).
    pub fn run_with_history(&self) -> Result<Outcome, String> {
        self.play(None, true)
    }

    fn play(&self, mut sink: Option<&mut dyn FnMut(&TraceEvent)>, history: bool) -> Result<Outcome, String> {
        self.check_limits().map_err(|error| error.to_string())?;
        let mut facts = TraceFacts::default();
        let mut simulation = Simulation::new(self.config.clone(), self.seed)?;
        if history || self.expect.iter().any(Expectation::needs_history) {
            simulation.keep_history();
        }
        for input in &self.inputs {
            simulation.schedule(input.clone());
        }
        // The liveness check needs to know which records came after the
        // burst began; stopping there first changes nothing in the run.
        let burst = self.expect.iter().find_map(|expectation| match expectation {
            Expectation::Recovers { burst_at_ms } => Some(*burst_at_ms),
            _ => None,
        });
        let first_burst_record = burst.map(|burst_at_ms| {
            advance(&mut simulation, burst_at_ms.saturating_sub(1), &mut sink, &mut facts);
            simulation.records().len() as u64
        });
        advance(&mut simulation, self.run_until_ms, &mut sink, &mut facts);
        if sink.is_none() {
            simulation.trace().iter().for_each(|event| facts.see(event));
        }
        let summary = simulation.summary();
        let checked: Vec<(Expectation, Option<String>)> = self
            .expect
            .iter()
            .map(|expectation| (expectation.clone(), check(expectation, &simulation, &summary, &facts)))
            .collect();
        let mut failures: Vec<String> = checked.iter().filter_map(|(_, failure)| failure.clone()).collect();
        if let Some(first) = first_burst_record {
            let safe = self.expect.contains(&Expectation::NoRecordsLost);
            failures.extend(super::checks::liveness_failures(&simulation, first, safe));
            // A fuzz repro fails the way its seed did: duplicates too.
            if safe {
                failures.extend(super::checks::duplicate_failures(&simulation));
            }
        }
        Ok(Outcome {
            simulation,
            summary,
            failures,
            checked,
        })
    }
}

/// How much simulated time a streamed run plays between hand-overs.
const STREAM_WINDOW_MS: Time = 1_000;

/// Runs to `until`; when streaming, in windows whose trace goes to the sink.
fn advance(
    simulation: &mut Simulation,
    until: Time,
    sink: &mut Option<&mut dyn FnMut(&TraceEvent)>,
    facts: &mut TraceFacts,
) {
    let Some(sink) = sink else {
        simulation.run_until(until);
        return;
    };
    loop {
        let window_end = until.min(simulation.now().saturating_add(STREAM_WINDOW_MS));
        simulation.run_until(window_end);
        for event in simulation.take_trace() {
            facts.see(&event);
            sink(&event);
        }
        if window_end >= until || simulation.now() >= crate::limits::MAX_RUN_MS {
            return;
        }
    }
}

/// What the expectations need from the trace, gathered as it goes by.
#[derive(Default)]
struct TraceFacts {
    produce_errors: Vec<ErrorCode>,
    unclean_election: bool,
    /// When each group completed a rebalance.
    rebalances: Vec<(Time, String)>,
    /// Consumers that hit max.poll.interval.ms.
    poll_timeouts: Vec<u32>,
    /// The topic of each `OFFSET_OUT_OF_RANGE` a consumer acted on.
    out_of_range: Vec<String>,
    /// Each cleaning: its topic and the tombstones it removed.
    cleanings: Vec<(String, u64)>,
    /// The client of each throttled answer.
    throttled: Vec<NodeId>,
    /// The epochs each transactional id's coordinator records carried.
    transaction_epochs: BTreeMap<String, Vec<u16>>,
    /// Each truncation a consumer's position validation found: the
    /// consumer and where the logs part.
    truncations: Vec<(NodeId, Option<u64>)>,
}

impl TraceFacts {
    fn see(&mut self, event: &TraceEvent) {
        match &event.kind {
            TraceKind::ProduceFailed { error, .. } if !self.produce_errors.contains(error) => {
                self.produce_errors.push(*error);
            }
            TraceKind::LeaderElected { unclean: true, .. } => self.unclean_election = true,
            TraceKind::OffsetOutOfRange { partition, .. } => self.out_of_range.push(partition.topic.to_string()),
            TraceKind::Throttled { client, .. } => self.throttled.push(*client),
            TraceKind::LogTruncationDetected { client, diverging, .. } => self.truncations.push((*client, *diverging)),
            TraceKind::TransactionState {
                transactional_id,
                producer_epoch,
                ..
            } => {
                let epochs = self.transaction_epochs.entry(transactional_id.clone()).or_default();
                if epochs.last() != Some(producer_epoch) {
                    epochs.push(*producer_epoch);
                }
            }
            TraceKind::LogCleaned {
                partition,
                tombstones_removed,
                ..
            } => self.cleanings.push((partition.topic.to_string(), *tombstones_removed)),
            TraceKind::GroupRebalanced { group, .. } | TraceKind::TargetAssignment { group, .. } => {
                self.rebalances.push((event.time, group.clone()))
            }
            TraceKind::ConsumerStatus {
                consumer,
                status: super::trace::ConsumerChange::PollTimeout { .. },
            } => self.poll_timeouts.push(*consumer),
            _ => {}
        }
    }
}

fn check(expectation: &Expectation, simulation: &Simulation, summary: &Summary, facts: &TraceFacts) -> Option<String> {
    let lost = simulation.lost_records();
    match expectation {
        Expectation::RecordsLost { records } => {
            let mut expected = records.clone();
            crate::sorting::sort(&mut expected);
            (lost != expected).then(|| format!("expected records {expected:?} lost, but lost {lost:?}"))
        }
        Expectation::SomeRecordsLost { at_least } => (summary.lost < *at_least).then(|| {
            format!(
                "expected at least {at_least} lost records, but {} were lost",
                summary.lost
            )
        }),
        Expectation::NoRecordsLost => {
            (!lost.is_empty()).then(|| format!("expected no lost records, but lost {lost:?}"))
        }
        Expectation::ProducerError { error } => {
            let seen = facts.produce_errors.contains(error);
            (!seen).then(|| format!("expected a producer to see {error}, but none did"))
        }
        Expectation::Acknowledged { at_least } => (summary.acknowledged < *at_least).then(|| {
            format!(
                "expected at least {at_least} acknowledged records, but {} were",
                summary.acknowledged
            )
        }),
        Expectation::UncleanElection => {
            (!facts.unclean_election).then(|| "expected an unclean leader election, but none happened".to_string())
        }
        Expectation::LeaderElections { at_least } => (summary.leader_elections < *at_least).then(|| {
            format!(
                "expected at least {at_least} leader elections, but {} happened",
                summary.leader_elections
            )
        }),
        Expectation::NoInvariantViolations => (summary.invariant_violations > 0).then(|| {
            format!(
                "expected no invariant violations, but found {}",
                summary.invariant_violations
            )
        }),
        Expectation::ConsumerRead { .. } => check_group_progress(expectation, simulation, facts),
        Expectation::Retention { .. } => check_storage_and_quotas(expectation, simulation, facts),
        Expectation::Compaction { .. } => check_storage_and_quotas(expectation, simulation, facts),
        Expectation::Throttled { .. } => check_storage_and_quotas(expectation, simulation, facts),
        Expectation::Outputs { .. } => check_group_progress(expectation, simulation, facts),
        Expectation::TransactionEpochs { .. } => check_transactions_and_leaders(expectation, simulation, facts),
        Expectation::TruncationDetected { .. } => check_storage_and_quotas(expectation, simulation, facts),
        Expectation::NoJepsenAnomalies => match simulation.jepsen_verdict() {
            None => Some("the run kept no history for Jepsen's checks".to_string()),
            Some(verdict) if verdict.findings.is_empty() => None,
            Some(verdict) => Some(format!("expected no anomaly from Jepsen's checks, but: {verdict}")),
        },
        Expectation::JepsenAnomaly { anomaly, at_least } => match simulation.jepsen_verdict() {
            None => Some("the run kept no history for Jepsen's checks".to_string()),
            Some(verdict) => {
                let count = verdict
                    .findings
                    .iter()
                    .chain(&verdict.allowed)
                    .filter(|finding| finding.kind == *anomaly)
                    .count() as u64;
                (count < *at_least).then(|| {
                    format!(
                        "expected Jepsen's checks to find at least {at_least} {}, but they found {count} ({verdict})",
                        anomaly.name()
                    )
                })
            }
        },
        Expectation::HangingTransactions { .. } => check_transactions_and_leaders(expectation, simulation, facts),
        Expectation::IdleConsumer { consumer } => match simulation.consumers().get(*consumer as usize) {
            Some(state) if state.phase == super::consumer::ConsumerPhase::Consuming && state.assignment.is_empty() => {
                None
            }
            Some(state) => Some(format!(
                "expected consumer-{consumer} to sit idle in its group, but it is {:?} with {} partitions",
                state.phase,
                state.assignment.len()
            )),
            None => Some(format!("there is no consumer-{consumer}")),
        },
        Expectation::ControllerElections { at_least } => (summary.controller_elections < *at_least).then(|| {
            format!(
                "expected at least {at_least} controller elections, but {} happened",
                summary.controller_elections
            )
        }),
        // Checked in `Scenario::run`, which knows where the burst began.
        Expectation::Recovers { .. } => None,
        Expectation::EligibleLeaderReplicas { .. } => check_transactions_and_leaders(expectation, simulation, facts),
        Expectation::PartitionLeader { .. } => check_transactions_and_leaders(expectation, simulation, facts),
        Expectation::Delivery { .. } => check_group_progress(expectation, simulation, facts),
        Expectation::Rebalances { .. } => check_group_progress(expectation, simulation, facts),
        Expectation::PollTimeout { consumer } => (!facts.poll_timeouts.contains(consumer))
            .then(|| format!("expected consumer-{consumer} to leave its group on a max.poll.interval.ms timeout")),
        Expectation::GroupGeneration { .. } => check_group_progress(expectation, simulation, facts),
    }
}

/// The expectations about transactions and partition leaders.
fn check_transactions_and_leaders(
    expectation: &Expectation,
    simulation: &Simulation,
    facts: &TraceFacts,
) -> Option<String> {
    match expectation {
        Expectation::TransactionEpochs {
            transactional_id,
            epochs,
        } => {
            let seen = facts
                .transaction_epochs
                .get(transactional_id)
                .cloned()
                .unwrap_or_default();
            (seen != *epochs).then(|| {
                format!(
                    "expected {transactional_id}'s transaction records to carry epochs {epochs:?}, but they carried {seen:?}"
                )
            })
        }
        Expectation::HangingTransactions { at_least, at_most } => {
            let hanging = super::checks::hanging_transactions(simulation);
            let count = hanging.len() as u64;
            if count < *at_least {
                Some(format!(
                    "expected at least {at_least} hanging transactions, but found {count}"
                ))
            } else {
                at_most
                    .filter(|most| count > *most)
                    .map(|most| format!("expected at most {most} hanging transactions, but found {count}: {hanging:?}"))
            }
        }
        Expectation::EligibleLeaderReplicas { topic, partition, elr } => {
            let found = simulation
                .controller()
                .partitions
                .iter()
                .find(|(key, _)| *key.topic == **topic && key.partition == *partition)
                .map(|(_, registration)| registration.elr.clone());
            (found.as_ref() != Some(elr)).then(|| {
                format!("expected {topic}-{partition}'s eligible leader replicas to be {elr:?}, but they are {found:?}")
            })
        }
        Expectation::PartitionLeader {
            topic,
            partition,
            broker,
        } => {
            let leader = simulation
                .controller()
                .partitions
                .iter()
                .find(|(key, _)| *key.topic == **topic && key.partition == *partition)
                .and_then(|(_, registration)| registration.leader);
            (leader != Some(*broker)).then(|| {
                format!(
                    "expected broker-{broker} to lead {topic}-{partition}, but the leader is {}",
                    leader.map_or("none".to_string(), |leader| format!("broker-{leader}"))
                )
            })
        }
        _ => None,
    }
}

/// The expectations about consumer groups: what they read, processed
/// and wrote, their generations and rebalances.
fn check_group_progress(expectation: &Expectation, simulation: &Simulation, facts: &TraceFacts) -> Option<String> {
    match expectation {
        Expectation::GroupGeneration { consumer, at_least } => {
            let generation = simulation
                .consumers()
                .get(*consumer as usize)
                .map_or(0, |state| state.generation);
            (generation < *at_least).then(|| {
                format!(
                    "expected consumer-{consumer}'s group to reach generation {at_least}, but it is at {generation}"
                )
            })
        }
        Expectation::ConsumerRead {
            consumer,
            at_least,
            at_most,
        } => {
            let read = simulation
                .consumers()
                .get(*consumer as usize)
                .map_or(0, |state| state.records_read);
            if read < *at_least {
                Some(format!(
                    "expected consumer-{consumer} to read at least {at_least} records, but it read {read}"
                ))
            } else {
                at_most.filter(|most| read > *most).map(|most| {
                    format!("expected consumer-{consumer} to read at most {most} records, but it read {read}")
                })
            }
        }
        Expectation::Outputs {
            topic,
            sources_at_least,
            duplicated_at_least,
            duplicated_at_most,
        } => {
            let audit = simulation.output_audit(topic);
            let duplicated = audit.duplicated.len() as u64;
            if audit.sources < *sources_at_least {
                Some(format!(
                    "expected at least {sources_at_least} input records with a committed output on {topic}, but {} have one",
                    audit.sources
                ))
            } else if duplicated < *duplicated_at_least {
                Some(format!(
                        "expected at least {duplicated_at_least} input records with more than one committed output on {topic}, but {duplicated} have"
                    ))
            } else {
                duplicated_at_most.filter(|most| duplicated > *most).map(|most| {
                        format!(
                            "expected at most {most} input records with more than one committed output on {topic}, but {duplicated} have: {:?}",
                            audit.duplicated
                        )
                    })
            }
        }
        Expectation::Delivery {
            group,
            again_at_least,
            again_at_most,
            never_at_least,
            never_at_most,
            dead_lettered_at_least,
            dead_lettered_at_most,
        } => {
            let ledger = simulation
                .ledger_views()
                .into_iter()
                .find(|view| &view.group == group)
                .unwrap_or_default();
            let never: u64 = ledger.never_processed.iter().map(|(_, count)| count).sum();
            let again = ledger.processed_more;
            let outside =
                |count: u64, least: u64, most: Option<u64>| count < least || most.is_some_and(|most| count > most);
            (outside(again, *again_at_least, *again_at_most) || outside(never, *never_at_least, *never_at_most)).then(|| {
                    format!(
                        "expected group {group} to process {again_at_least}{} record(s) more than once and to never process {never_at_least}{}, but it processed {again} more than once and never processed {never}",
                        again_at_most.map_or(" or more".to_string(), |most| format!(" to {most}")),
                        never_at_most.map_or(" or more".to_string(), |most| format!(" to {most}")),
                    )
                }).or_else(|| {
                    let dead = ledger.dead_lettered;
                    outside(dead, *dead_lettered_at_least, *dead_lettered_at_most).then(|| {
                        format!(
                            "expected group {group} to send {dead_lettered_at_least}{} record(s) to its dead letter queue, but it sent {dead}",
                            dead_lettered_at_most.map_or(" or more".to_string(), |most| format!(" to {most}")),
                        )
                    })
                })
        }
        Expectation::Rebalances {
            group,
            after_ms,
            at_least,
            at_most,
        } => {
            let count = facts
                .rebalances
                .iter()
                .filter(|(time, name)| time > after_ms && name == group)
                .count() as u32;
            let too_few = count < *at_least;
            let too_many = at_most.is_some_and(|most| count > most);
            (too_few || too_many).then(|| {
                let wanted = match at_most {
                    Some(most) if most == at_least => format!("{most}"),
                    Some(most) => format!("{at_least} to {most}"),
                    None => format!("at least {at_least}"),
                };
                format!("expected {wanted} rebalances of group {group} after {after_ms} ms, but there were {count}")
            })
        }
        _ => None,
    }
}

/// The expectations about storage (retention, compaction, truncation)
/// and quotas.
fn check_storage_and_quotas(expectation: &Expectation, simulation: &Simulation, facts: &TraceFacts) -> Option<String> {
    match expectation {
        Expectation::Retention {
            topic,
            log_start_at_least,
            resets_at_least,
        } => {
            let partitions = simulation
                .config()
                .topics
                .iter()
                .find(|known| known.name == *topic)
                .map_or(0, |known| known.partitions);
            let deleted: u64 = (0..partitions)
                .filter_map(|index| simulation.leader_log_start(&TopicPartition::new(topic.as_str(), index)))
                .sum();
            let resets = facts.out_of_range.iter().filter(|known| **known == **topic).count() as u64;
            if deleted < *log_start_at_least {
                Some(format!(
                        "expected retention to delete at least {log_start_at_least} offsets of {topic}, but the logs start at {deleted} in all"
                    ))
            } else if resets < *resets_at_least {
                Some(format!(
                    "expected at least {resets_at_least} OFFSET_OUT_OF_RANGE resets on {topic}, but there were {resets}"
                ))
            } else {
                None
            }
        }
        Expectation::Compaction {
            topic,
            cleanings_at_least,
            tombstones_removed_at_least,
        } => {
            let cleanings: Vec<u64> = facts
                .cleanings
                .iter()
                .filter(|(known, _)| known == topic)
                .map(|(_, removed)| *removed)
                .collect();
            let removed: u64 = cleanings.iter().sum();
            if (cleanings.len() as u64) < *cleanings_at_least {
                Some(format!(
                    "expected at least {cleanings_at_least} cleanings of {topic}, but there were {}",
                    cleanings.len()
                ))
            } else if removed < *tombstones_removed_at_least {
                Some(format!(
                    "expected at least {tombstones_removed_at_least} tombstones of {topic} removed, but {removed} were"
                ))
            } else {
                None
            }
        }
        Expectation::Throttled {
            producer,
            consumer,
            at_least,
            at_most,
        } => {
            let client = match (producer, consumer) {
                (Some(producer), None) => NodeId::Producer(*producer),
                (None, Some(consumer)) => NodeId::Consumer(*consumer),
                _ => return Some("a throttled expectation names one producer or one consumer".to_string()),
            };
            let count = facts.throttled.iter().filter(|known| **known == client).count() as u64;
            if count < *at_least {
                Some(format!(
                    "expected {client} to be throttled at least {at_least} times, but it was {count} times"
                ))
            } else {
                at_most.filter(|most| count > *most).map(|most| {
                    format!("expected {client} to be throttled at most {most} times, but it was {count} times")
                })
            }
        }
        Expectation::TruncationDetected {
            consumer,
            diverging_offset,
        } => {
            let client = NodeId::Consumer(*consumer);
            let found: Vec<Option<u64>> = facts
                .truncations
                .iter()
                .filter(|(seen, _)| *seen == client)
                .map(|(_, diverging)| *diverging)
                .collect();
            (!found.contains(&Some(*diverging_offset))).then(|| {
                format!(
                    "expected {client} to find the log truncated at offset {diverging_offset}, but it found {found:?}"
                )
            })
        }
        _ => None,
    }
}
