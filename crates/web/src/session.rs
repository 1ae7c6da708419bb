//! The live map's state and its one mutator: a [`Session`] owns the
//! simulation, the bounded trace the page shows, the steady record stream
//! of play, the selection, the shape knobs being edited and their error,
//! and changes only through [`Session::apply`]. Every action that moves
//! the simulation collects its trace in the same place, so no path can
//! forget to. Plain Rust, tested natively; the component in
//! [`crate::cluster_panel`] holds one and dispatches to it.

use std::collections::VecDeque;

use kafkascope_engine::replication::high_watermark::Acks;
use kafkascope_engine::sim::chaos::{self, ChaosFault, ChaosSettings, FaultKind, Finding};
use kafkascope_engine::sim::config::{
    ClientQuota, ClusterConfig, ConfigChange, ConsumerConfig, Input, Ratio, ScheduledInput, StorageSetting,
};
use kafkascope_engine::sim::trace::{TraceEvent, TraceId};
use kafkascope_engine::sim::types::NodeId;
use kafkascope_engine::sim::Simulation;

use crate::cluster_model::{default_config, parse_knob, setup_config, Setup, DEFAULT_SEED};
use crate::selection::Selection;

/// How many trace events the page keeps.
pub const TRACE_KEPT: usize = 20_000;

/// A live knob: each change is an input at this moment of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Knob {
    Acks,
    MinInsyncReplicas,
    UncleanLeaderElection,
    ReplicaLagTimeMaxMs,
    LingerMs,
    EnableIdempotence,
    /// A topic storage setting (every topic of the run).
    Storage(StorageSetting),
    /// `cleanup.policy` (every topic of the run).
    CleanupPolicy,
    /// `min.cleanable.dirty.ratio` (every topic of the run).
    MinCleanableDirtyRatio,
    /// The default client quota's `producer_byte_rate`.
    ProducerByteRate,
    /// The default client quota's `consumer_byte_rate`.
    ConsumerByteRate,
    /// The cluster feature `transaction.version` (`kafka-features`).
    TransactionVersion,
    /// `transaction.partition.verification.enable` on every broker.
    TransactionPartitionVerification,
}

impl Knob {
    /// Every live knob.
    pub const ALL: [Knob; 20] = [
        Knob::Acks,
        Knob::MinInsyncReplicas,
        Knob::UncleanLeaderElection,
        Knob::ReplicaLagTimeMaxMs,
        Knob::LingerMs,
        Knob::EnableIdempotence,
        Knob::Storage(StorageSetting::RetentionMs),
        Knob::Storage(StorageSetting::RetentionBytes),
        Knob::Storage(StorageSetting::SegmentBytes),
        Knob::Storage(StorageSetting::InternalSegmentBytes),
        Knob::Storage(StorageSetting::SegmentMs),
        Knob::Storage(StorageSetting::MinCompactionLagMs),
        Knob::Storage(StorageSetting::DeleteRetentionMs),
        Knob::Storage(StorageSetting::FlushMessages),
        Knob::CleanupPolicy,
        Knob::MinCleanableDirtyRatio,
        Knob::ProducerByteRate,
        Knob::ConsumerByteRate,
        Knob::TransactionVersion,
        Knob::TransactionPartitionVerification,
    ];

    /// The knob with this Kafka name.
    pub fn from_name(name: &str) -> Option<Knob> {
        Knob::ALL.into_iter().find(|knob| knob.name() == name)
    }

    /// Kafka's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Knob::Acks => "acks",
            Knob::MinInsyncReplicas => "min.insync.replicas",
            Knob::UncleanLeaderElection => "unclean.leader.election.enable",
            Knob::ReplicaLagTimeMaxMs => "replica.lag.time.max.ms",
            Knob::LingerMs => "linger.ms",
            Knob::EnableIdempotence => "enable.idempotence",
            Knob::Storage(StorageSetting::RetentionMs) => "retention.ms",
            Knob::Storage(StorageSetting::RetentionBytes) => "retention.bytes",
            Knob::Storage(StorageSetting::SegmentBytes) => "segment.bytes",
            Knob::Storage(StorageSetting::InternalSegmentBytes) => "internal.segment.bytes",
            Knob::Storage(StorageSetting::SegmentMs) => "segment.ms",
            Knob::Storage(StorageSetting::MinCompactionLagMs) => "min.compaction.lag.ms",
            Knob::Storage(StorageSetting::DeleteRetentionMs) => "delete.retention.ms",
            Knob::Storage(StorageSetting::FlushMessages) => "flush.messages",
            Knob::CleanupPolicy => "cleanup.policy",
            Knob::MinCleanableDirtyRatio => "min.cleanable.dirty.ratio",
            Knob::ProducerByteRate => "producer_byte_rate",
            Knob::ConsumerByteRate => "consumer_byte_rate",
            Knob::TransactionVersion => "transaction.version",
            Knob::TransactionPartitionVerification => "transaction.partition.verification.enable",
        }
    }

    /// The change `text` asks for (a checkbox's text is `true`/`false`),
    /// or a message that quotes it; `config` is the run's, for a knob that
    /// changes one part of a setting (a quota's other rate stays).
    pub fn change(self, text: &str, config: &ClusterConfig) -> Result<ConfigChange, String> {
        let name = self.name();
        match self {
            Knob::Acks => Acks::parse(text)
                .map(|acks| ConfigChange::Acks { producer: 0, acks })
                .ok_or_else(|| format!("acks must be all, 1 or 0 (got {:?})", text.trim())),
            Knob::MinInsyncReplicas => parse_knob(name, text, 1..=9).map(|value| ConfigChange::MinInsyncReplicas {
                topic: String::new(),
                value: value as u32,
            }),
            Knob::UncleanLeaderElection => Ok(ConfigChange::UncleanLeaderElection {
                enable: text.trim() == "true",
            }),
            Knob::ReplicaLagTimeMaxMs => {
                parse_knob(name, text, 100..=600_000).map(|value| ConfigChange::ReplicaLagTimeMaxMs { value })
            }
            Knob::LingerMs => {
                parse_knob(name, text, 0..=60_000).map(|value| ConfigChange::LingerMs { producer: 0, value })
            }
            Knob::EnableIdempotence => Ok(ConfigChange::EnableIdempotence {
                producer: 0,
                enable: text.trim() == "true",
            }),
            Knob::TransactionVersion => {
                parse_knob(name, text, 0..=2).map(|level| ConfigChange::TransactionVersion { level: level as u8 })
            }
            Knob::TransactionPartitionVerification => Ok(ConfigChange::TransactionPartitionVerification {
                enable: text.trim() == "true",
            }),
            Knob::Storage(setting) => {
                let value = text.trim().parse::<i64>().map_err(|_| {
                    format!(
                        "{name} must be a whole number (-1 for no limit where Kafka allows it), got {:?}",
                        text.trim()
                    )
                })?;
                Ok(ConfigChange::TopicStorage {
                    topic: String::new(),
                    setting,
                    value,
                })
            }
            Knob::CleanupPolicy => kafkascope_engine::storage::CleanupPolicy::parse(text.trim())
                .map(|policy| ConfigChange::CleanupPolicy {
                    topic: String::new(),
                    policy,
                })
                .ok_or_else(|| {
                    format!(
                        "{name} must be delete, compact or compact,delete (got {:?})",
                        text.trim()
                    )
                }),
            Knob::MinCleanableDirtyRatio => match text.trim().parse::<f64>() {
                Ok(ratio) if (0.0..=1.0).contains(&ratio) => Ok(ConfigChange::MinCleanableDirtyRatio {
                    topic: String::new(),
                    ratio: Ratio(ratio),
                }),
                _ => Err(format!("{name} must be a number from 0 to 1, got {:?}", text.trim())),
            },
            Knob::ProducerByteRate | Knob::ConsumerByteRate => {
                let trimmed = text.trim();
                let rate = if trimmed.is_empty() || trimmed == "-1" {
                    None
                } else {
                    match trimmed.parse::<u64>() {
                        Ok(rate) if rate >= 1 => Some(rate),
                        _ => {
                            return Err(format!(
                                "{name} must be a whole number of bytes a second, at least 1 (empty or -1: no quota), got {trimmed:?}"
                            ))
                        }
                    }
                };
                let mut quota = config
                    .quotas
                    .iter()
                    .find(|quota| quota.client_id.is_none())
                    .cloned()
                    .unwrap_or(ClientQuota {
                        client_id: None,
                        producer_byte_rate: None,
                        consumer_byte_rate: None,
                    });
                if self == Knob::ProducerByteRate {
                    quota.producer_byte_rate = rate;
                } else {
                    quota.consumer_byte_rate = rate;
                }
                Ok(ConfigChange::Quota(quota))
            }
        }
    }
}

/// A topic knob's change, for one topic.
fn for_topic(change: &ConfigChange, name: &str) -> ConfigChange {
    let mut change = change.clone();
    match &mut change {
        ConfigChange::TopicStorage { topic, .. }
        | ConfigChange::CleanupPolicy { topic, .. }
        | ConfigChange::MinCleanableDirtyRatio { topic, .. }
        | ConfigChange::MinInsyncReplicas { topic, .. } => *topic = name.to_string(),
        _ => {}
    }
    change
}

/// A shape knob: edited, then applied as a new run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupField {
    Brokers,
    Partitions,
    ReplicationFactor,
    BillingConsumers,
    SearchConsumers,
    Seed,
}

impl SetupField {
    /// How the page names it in a message.
    pub fn name(self) -> &'static str {
        match self {
            SetupField::Brokers => "brokers",
            SetupField::Partitions => "partitions",
            SetupField::ReplicationFactor => "replication factor",
            SetupField::BillingConsumers => "billing consumers",
            SetupField::SearchConsumers => "search consumers",
            SetupField::Seed => "seed",
        }
    }
}

/// The key of the record the "poison record" control sends.
pub const POISON_KEY: &str = "poison";

/// Everything that changes the live map.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Advance virtual time by this much (a play tick), first scheduling
    /// the steady stream of `rate` keyed records per second per producer.
    Tick {
        virtual_ms: f64,
        rate: u32,
    },
    /// Run this many virtual milliseconds.
    Run(u64),
    /// Handle one event.
    Step,
    Produce,
    ProduceKeyed,
    Kill(u32),
    /// A broker loses power (its unflushed records with it).
    PowerLoss(u32),
    /// Every broker loses power at once (a data centre's outage).
    PowerLossAll,
    Stop(u32),
    Restart(u32),
    Pause(u32),
    Slow(u32, u64),
    KillController(u32),
    RestartController(u32),
    StopConsumer(u32),
    StartConsumer(u32),
    CrashConsumer(u32),
    /// A consumer's process stops for this many ms (a GC pause).
    PauseConsumer(u32, u64),
    /// A consumer's handler takes this many ms per record from now on.
    HandlerMs(u32, u64),
    /// A consumer's application commits this way from now on.
    CommitMode(u32, kafkascope_engine::sim::config::CommitMode),
    /// A consumer's handler skips (or stops skipping) records it already
    /// processed.
    IdempotentHandler(u32, bool),
    /// Time travel over a long stretch: starts a skip that runs in slices
    /// of [`SKIP_SLICE_MS`] ([`Action::SkipSlice`]), the page drawing its
    /// progress between them.
    Skip(u64),
    /// The next slice of the skip under way.
    SkipSlice,
    /// Stops the skip under way where it got to.
    StopSkip,
    /// The next slice of the run link's replay under way.
    ReplaySlice,
    /// Stops the run link's replay where it got to.
    StopReplay,
    /// A member's `auto.offset.reset`.
    OffsetReset(u32, kafkascope_engine::sim::config::OffsetReset),
    /// The next produce response to this producer is lost on the way back.
    LoseProduceResponse(u32),
    /// This producer sends one record with key `poison`, which every
    /// handler fails on (a `PoisonRecords` rule for its topic).
    ProducePoison(u32),
    AddConsumer(String),
    /// An operator adds one partition to this topic
    /// (`kafka-topics --alter --partitions N+1`).
    AddPartitions(String),
    /// A live knob's new text.
    Knob(Knob, String),
    /// A shape knob's new text (kept until applied).
    Setup(SetupField, String),
    /// The assignor of the next run.
    Assignor(String),
    /// Start a new run with the shape knobs.
    ApplySetup,
    /// Start the same cluster again with the seed knob's seed.
    Reset,
    /// Select something on the map, or unselect it if it is selected.
    Select(Selection),
    /// Run the side-by-side comparison of rebalance protocols on the
    /// current shape (eager, cooperative, KIP-848; the same fault).
    Compare,
    /// Judge the run so far with Jepsen's checks.
    CheckJepsen,
    /// Chaos's seed, as typed.
    ChaosSeed(String),
    /// Chaos's faults a minute (of virtual time), as typed.
    ChaosRate(String),
    /// A kind of fault on or off for chaos.
    ChaosKind(FaultKind, bool),
    /// Whether chaos stops the map at the first anomaly.
    ChaosStopAtAnomaly(bool),
    /// Start random faults on the running cluster ([`chaos`]).
    StartChaos,
    /// Stop drawing faults (those under way still heal).
    StopChaos,
    /// Play on after chaos stopped the map at an anomaly.
    ResumeChaos,
}

/// Chaos under way on the map: its settings, the faults drawn and not yet
/// due, what it did and what the checks found.
#[derive(Debug, Clone)]
pub struct ChaosRun {
    pub settings: ChaosSettings,
    /// When chaos started (its windows count from here).
    pub started_ms: u64,
    /// The next window of faults to draw.
    pub next_window: u64,
    /// Faults drawn whose time has not come.
    pub pending: Vec<ChaosFault>,
    /// The latest faults injected, oldest first (at most [`CHAOS_SHOWN`]).
    pub injected: VecDeque<ChaosFault>,
    /// Faults injected in all.
    pub fault_count: u64,
    /// Anomalies the checks named since chaos started.
    pub findings: u32,
    /// The latest of them: where chaos stopped the map, if it stops there.
    pub halt: Option<ChaosHalt>,
    /// Jepsen's findings already known (those before chaos or reported).
    pub jepsen_seen: usize,
    /// The history's operations when Jepsen's checks last ran.
    pub jepsen_checked_at: usize,
    /// Whether the map holds at an anomaly (play ticks do nothing until
    /// the learner plays on, [`Action::ResumeChaos`]).
    pub holding: bool,
    /// The index of Jepsen's finding the latest stop is at, when it is one.
    pub jepsen_halt: Option<usize>,
}

/// An anomaly chaos found: when, at which trace event, and what.
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosHalt {
    pub at_ms: u64,
    pub event: Option<TraceId>,
    /// The trace event's line, when the finding is one.
    pub line: Option<String>,
    pub finding: Finding,
}

/// The faults the Chaos tab lists.
pub const CHAOS_SHOWN: usize = 12;

/// The longest history chaos has Jepsen's checks judge as it runs (a check
/// costs in proportion: about a tenth of a second natively at this size);
/// past it the Jepsen's checks tab still judges the run on request.
pub const CHAOS_JEPSEN_MAX_OPERATIONS: usize = 20_000;

/// The most windows of faults one step of the map draws (a long skip
/// draws the latest ones only).
const CHAOS_MAX_WINDOWS: u64 = 360;

impl PartialEq for ChaosRun {
    /// Equal when the page would draw them alike: by what changes as chaos
    /// runs (no fault's inputs compared, which the page never shows).
    fn eq(&self, other: &Self) -> bool {
        self.settings == other.settings
            && (
                self.started_ms,
                self.next_window,
                self.fault_count,
                self.findings,
                self.holding,
            ) == (
                other.started_ms,
                other.next_window,
                other.fault_count,
                other.findings,
                other.holding,
            )
            && self.halt == other.halt
            && self.injected.len() == other.injected.len()
            && self.injected.back().map(|fault| fault.at_ms) == other.injected.back().map(|fault| fault.at_ms)
    }
}

impl ChaosRun {
    fn new(settings: ChaosSettings, started_ms: u64, jepsen_seen: usize) -> ChaosRun {
        ChaosRun {
            settings,
            started_ms,
            next_window: 0,
            pending: Vec::new(),
            injected: VecDeque::new(),
            fault_count: 0,
            findings: 0,
            halt: None,
            jepsen_seen,
            jepsen_checked_at: 0,
            holding: false,
            jepsen_halt: None,
        }
    }

    /// Chaos as a link carries it.
    pub fn linked(&self) -> crate::share::LinkedChaos {
        crate::share::LinkedChaos {
            settings: self.settings.clone(),
            started_ms: self.started_ms,
            next_window: self.next_window,
            pending: self.pending.clone(),
            jepsen_seen: self.jepsen_seen,
            jepsen_checked_at: self.jepsen_checked_at,
            jepsen_halt: self.jepsen_halt.filter(|_| self.holding),
        }
    }

    fn from_link(linked: &crate::share::LinkedChaos) -> ChaosRun {
        ChaosRun {
            next_window: linked.next_window,
            pending: linked.pending.clone(),
            jepsen_checked_at: linked.jepsen_checked_at,
            jepsen_halt: linked.jepsen_halt,
            ..ChaosRun::new(linked.settings.clone(), linked.started_ms, linked.jepsen_seen)
        }
    }

    /// Faults that have struck by `now` (some scheduled by the last step
    /// of the map strike later, when chaos stopped it at an anomaly first).
    pub fn struck(&self, now: u64) -> u64 {
        let waiting = self.injected.iter().filter(|fault| fault.at_ms > now).count() as u64;
        self.fault_count - waiting
    }

    fn window_start(&self, index: u64) -> u64 {
        self.started_ms.saturating_add(index.saturating_mul(chaos::WINDOW_MS))
    }
}

/// The live map's state.
/// The size of a comparison chart.
pub const COMPARE_CHART_W: f64 = 240.0;
pub const COMPARE_CHART_H: f64 = 48.0;

pub struct Session {
    config: ClusterConfig,
    simulation: Simulation,
    trace: VecDeque<TraceEvent>,
    /// Virtual milliseconds owed to the next tick (below one).
    carry: f64,
    /// When the next steady-stream record is due, and how many were sent.
    next_record_at: u64,
    streamed: u64,
    selected: Option<Selection>,
    setup: Setup,
    knob_error: Option<String>,
    /// Live knob changes refused so far (the page redraws the refused
    /// control from the run's state).
    refusals: u32,
    lag: crate::cluster_model::LagHistory,
    /// The last side-by-side comparison, or why it could not run.
    comparison: Option<Result<Vec<crate::cluster_model::ProtocolRun>, String>>,
    /// Jepsen's verdict on the run, as last checked.
    jepsen: Option<crate::jepsen_model::JepsenPanel>,
    /// A time skip under way: (virtual time it started at, where it ends).
    skip: Option<(u64, u64)>,
    /// The run link the map opened with, while it replays.
    replay: Option<crate::share::Replay>,
    link_outcome: Option<LinkOutcome>,
    /// The run's seed and every input given to it so far (what a link to
    /// this moment carries, [`crate::share`]).
    seed: u64,
    log: Vec<crate::share::LoggedInput>,
    /// Chaos's settings as the learner edits them, and why the last edit
    /// was refused.
    chaos_setup: ChaosSettings,
    chaos_error: Option<String>,
    /// Chaos under way, if any.
    chaos: Option<ChaosRun>,
}

/// What became of the run link the map opened with.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkOutcome {
    /// Replayed to its moment: the virtual time and the run's fingerprint.
    Opened { at_ms: u64, hash: u64 },
    /// The learner stopped the replay: where it got to, of how many events.
    Stopped { at_ms: u64, events: u64, of: u64 },
    /// The link did not replay, and why; the map shows the default cluster.
    Failed(String),
}

impl std::fmt::Display for LinkOutcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LinkOutcome::Opened { at_ms, hash } => write!(
                formatter,
                "Opened a shared run at t = {at_ms} ms: the same cluster, seed and inputs, replayed (run fingerprint {hash:016x})."
            ),
            LinkOutcome::Stopped { at_ms, events, of } => write!(
                formatter,
                "Stopped replaying the shared run at t = {at_ms} ms, after {events} of its {of} events: the cluster runs on from there, with the link's inputs up to that moment."
            ),
            LinkOutcome::Failed(problem) => formatter.write_str(&link_failed(problem)),
        }
    }
}

/// Why a run link did not open, as the page says it.
pub fn link_failed(problem: &str) -> String {
    format!("This run link could not open: {problem}. The default cluster is shown instead.")
}

/// A run link's replay under way, as the page says it.
pub fn replay_progress(done: u64, total: u64) -> String {
    format!("Replaying the shared run: {done} of {total} events.")
}

/// How much virtual time one slice of a long skip runs: the page draws
/// between slices, so it stays responsive and shows the skip's progress.
pub const SKIP_SLICE_MS: u64 = 60_000;

/// Operations the live map's history keeps for Jepsen's checks (a run
/// that goes on past them is judged on its first part, and says so):
/// hours of the steady stream, a few dozen megabytes at most.
pub const MAP_HISTORY_OPERATIONS: usize = 200_000;

impl Session {
    /// A session on `config` (falls back to the default cluster if the
    /// config cannot start).
    pub fn new(config: ClusterConfig, seed: u64) -> Session {
        let (config, mut simulation, seed) = match Simulation::new(config.clone(), seed) {
            Ok(simulation) => (config, simulation, seed),
            Err(_) => {
                let simulation = Simulation::new(default_config(), DEFAULT_SEED)
                    .unwrap_or_else(|_| unreachable!("the default cluster is valid"));
                (default_config(), simulation, DEFAULT_SEED)
            }
        };
        simulation.keep_history_up_to(MAP_HISTORY_OPERATIONS);
        Session {
            config,
            simulation,
            trace: VecDeque::new(),
            carry: 0.0,
            next_record_at: 0,
            streamed: 0,
            selected: None,
            skip: None,
            replay: None,
            link_outcome: None,
            // The seed knob shows the run's seed (`?seed=N`, a run link).
            setup: Setup {
                seed,
                ..Setup::default()
            },
            knob_error: None,
            refusals: 0,
            lag: crate::cluster_model::LagHistory::default(),
            comparison: None,
            jepsen: None,
            seed,
            log: Vec::new(),
            chaos_setup: ChaosSettings::default(),
            chaos_error: None,
            chaos: None,
        }
    }

    /// This moment of the run as a link carries it.
    pub fn run_link(&self) -> crate::share::RunLink {
        crate::share::RunLink {
            v: crate::share::LINK_VERSION,
            config: self.config.clone(),
            seed: self.seed,
            inputs: self.log.clone(),
            events: self.simulation.events_processed(),
            now_ms: self.simulation.now(),
            stream: (self.next_record_at, self.streamed),
            carry: self.carry,
            chaos: self.chaos.as_ref().map(ChaosRun::linked),
        }
    }

    /// The session a run link describes, its replay started (it runs a
    /// slice at a time, [`Action::ReplaySlice`], so the page draws its
    /// progress and answers a Stop in between), or why it cannot open.
    pub fn from_link(text: &str) -> Result<Session, String> {
        let run = crate::share::decode(text)?;
        let mut simulation = Simulation::new(run.config.clone(), run.seed)
            .map_err(|error| format!("this run link's cluster cannot start: {error}"))?;
        simulation.keep_history_up_to(MAP_HISTORY_OPERATIONS);
        let replay = crate::share::Replay::start(&simulation, run)?;
        let mut session = Session::new(default_config(), DEFAULT_SEED);
        session.simulation = simulation;
        session.config = replay.run().config.clone();
        session.seed = replay.run().seed;
        session.setup.seed = replay.run().seed;
        // Chaos's findings are named again as the replay passes them; its
        // faults are among the link's inputs, and it draws on from where
        // the link left it once the run plays on.
        session.chaos = replay.run().chaos.as_ref().map(ChaosRun::from_link);
        if let Some(chaos) = &session.chaos {
            session.chaos_setup = chaos.settings.clone();
        }
        session.replay = Some(replay);
        Ok(session)
    }

    /// A run link's replay under way: events replayed and the link's total.
    pub fn replaying(&self) -> Option<(u64, u64)> {
        self.replay.as_ref().map(|replay| replay.progress(&self.simulation))
    }

    /// What became of the run link the map opened with, once its replay
    /// ended.
    pub fn link_outcome(&self) -> Option<&LinkOutcome> {
        self.link_outcome.as_ref()
    }

    /// The next slice of the link's replay; at its end the run continues
    /// from the link's moment as it would have.
    fn replay_slice(&mut self) {
        let Some(mut replay) = self.replay.take() else {
            return;
        };
        // `apply` takes the slice's trace after it (a slice is at most a
        // few thousand events).
        match replay.advance(&mut self.simulation, crate::share::REPLAY_SLICE_WORK, &mut |_| {}) {
            Ok(false) => self.replay = Some(replay),
            Ok(true) => {
                let run = replay.run();
                self.log = run.inputs.clone();
                (self.next_record_at, self.streamed) = run.stream;
                self.carry = run.carry.clamp(0.0, 1.0);
                self.collect_trace();
                self.restore_jepsen_halt();
                self.link_outcome = Some(LinkOutcome::Opened {
                    at_ms: self.simulation.now(),
                    hash: self.run_hash(),
                });
            }
            Err(problem) => {
                *self = Session::new(default_config(), DEFAULT_SEED);
                self.link_outcome = Some(LinkOutcome::Failed(problem));
            }
        }
    }

    /// Stops the link's replay where it got to: the run goes on from
    /// there, with the inputs given so far (a link to it carries those).
    fn stop_replay(&mut self) {
        if let Some(replay) = self.replay.take() {
            self.log = replay.inputs_given().to_vec();
            self.next_record_at = self.simulation.now();
            self.link_outcome = Some(LinkOutcome::Stopped {
                at_ms: self.simulation.now(),
                events: self.simulation.events_processed(),
                of: replay.run().events,
            });
        }
    }

    /// This run as a scenario file (pretty JSON): its cluster, seed and
    /// every input at its time, to the time it has reached. Opened in
    /// Sequence steps or run with `kafkascope run`, it schedules the inputs
    /// at their times (a run link replays them after the same events, so
    /// only a link is the same run event for event).
    pub fn scenario_json(&self) -> String {
        let scenario = kafkascope_engine::sim::scenario::Scenario {
            name: "A run from the live map".to_string(),
            description: format!(
                "Exported from kafkascope's live map at t = {} ms: its cluster, seed and inputs.",
                self.simulation.now()
            ),
            seed: self.seed,
            config: self.config.clone(),
            inputs: self.log.iter().map(crate::share::LoggedInput::scheduled).collect(),
            run_until_ms: self.simulation.now(),
            expect: Vec::new(),
            story: None,
        };
        indent_json(&serde_json::to_string(&scenario).unwrap_or_default())
    }

    /// The trace events the page keeps, as JSON (an array, oldest first).
    pub fn trace_json(&self) -> String {
        serde_json::to_string(&self.trace).unwrap_or_default()
    }

    /// A fingerprint of the run: the hash of the trace events the page
    /// keeps (the latest [`TRACE_KEPT`]), equal for a run and its link.
    pub fn run_hash(&self) -> u64 {
        let kept: Vec<TraceEvent> = self.trace.iter().cloned().collect();
        kafkascope_engine::sim::trace::hash(&kept)
    }

    fn note_input(&mut self, input: &ScheduledInput) {
        self.log.push(crate::share::LoggedInput {
            events: self.simulation.events_processed(),
            at_ms: input.at_ms,
            input: input.input.clone(),
        });
    }

    /// Jepsen's verdict on the run, as last checked ([`Action::CheckJepsen`]).
    pub fn jepsen(&self) -> Option<&crate::jepsen_model::JepsenPanel> {
        self.jepsen.as_ref()
    }

    /// The last side-by-side comparison of rebalance protocols.
    pub fn comparison(&self) -> Option<&Result<Vec<crate::cluster_model::ProtocolRun>, String>> {
        self.comparison.as_ref()
    }

    /// Each group's lag over the last minute.
    pub fn lag(&self) -> &crate::cluster_model::LagHistory {
        &self.lag
    }

    /// The simulation (read only: it changes through [`Session::apply`]).
    pub fn simulation(&self) -> &Simulation {
        &self.simulation
    }

    /// The latest trace events, oldest first (at most [`TRACE_KEPT`]).
    pub fn trace(&self) -> &VecDeque<TraceEvent> {
        &self.trace
    }

    /// Virtual time owed to the next tick, for drawing messages between
    /// whole milliseconds.
    pub fn carry(&self) -> f64 {
        self.carry
    }

    pub fn selected(&self) -> Option<&Selection> {
        self.selected.as_ref()
    }

    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// What was wrong with the last knob value typed, quoting it.
    pub fn knob_error(&self) -> Option<&str> {
        self.knob_error.as_deref()
    }

    /// How many live knob changes were refused so far.
    pub fn refusals(&self) -> u32 {
        self.refusals
    }

    /// A long skip under way: how much of it is done and its length, in
    /// virtual milliseconds.
    pub fn skipping(&self) -> Option<(u64, u64)> {
        self.skip
            .map(|(from, to)| (self.simulation.now().saturating_sub(from), to - from))
    }

    /// The one way the live map changes.
    pub fn apply(&mut self, action: Action) {
        // While a run link replays, the map does not play; anything else
        // the learner (or a host page) does first stops the replay there.
        if self.replay.is_some() {
            if matches!(action, Action::Tick { .. } | Action::SkipSlice) {
                return;
            }
            // Selecting, and editing chaos's settings, leave it replaying.
            if !matches!(
                action,
                Action::ReplaySlice
                    | Action::Select(_)
                    | Action::ResumeChaos
                    | Action::ChaosSeed(_)
                    | Action::ChaosRate(_)
                    | Action::ChaosKind(..)
                    | Action::ChaosStopAtAnomaly(_)
            ) {
                self.stop_replay();
            }
        }
        match action {
            Action::Tick { virtual_ms, rate } => {
                if !self.chaos.as_ref().is_some_and(|chaos| chaos.holding) {
                    self.tick(virtual_ms, rate);
                }
            }
            Action::Knob(knob, text) => match knob.change(&text, self.simulation.config()) {
                Ok(change) => {
                    self.knob_error = None;
                    if let Err(message) = self.set(change) {
                        self.knob_error = Some(message);
                        self.refusals += 1;
                    }
                }
                Err(message) => self.knob_error = Some(message),
            },
            Action::Setup(field, text) => self.edit_setup(field, &text),
            Action::Assignor(assignor) => self.setup.assignor = assignor,
            Action::Compare => {
                self.comparison = Some(crate::cluster_model::compare_protocols(
                    &self.setup,
                    COMPARE_CHART_W,
                    COMPARE_CHART_H,
                ));
            }
            Action::ChaosSeed(text) => match parse_knob("chaos seed", &text, 0..=u64::from(u32::MAX)) {
                Ok(seed) => {
                    self.chaos_error = None;
                    self.chaos_setup.seed = seed;
                }
                Err(message) => self.chaos_error = Some(message),
            },
            Action::ChaosRate(text) => {
                match parse_knob("faults a minute", &text, 1..=u64::from(chaos::MAX_PER_MINUTE)) {
                    Ok(rate) => {
                        self.chaos_error = None;
                        self.chaos_setup.per_minute = rate as u32;
                    }
                    Err(message) => self.chaos_error = Some(message),
                }
            }
            Action::ChaosKind(kind, on) => {
                let kinds = &mut self.chaos_setup.kinds;
                kinds.retain(|each| *each != kind);
                if on {
                    kinds.push(kind);
                    kafkascope_engine::sorting::sort(kinds);
                }
            }
            Action::ChaosStopAtAnomaly(on) => {
                self.chaos_setup.stop_at_anomaly = on;
                if let Some(chaos) = &mut self.chaos {
                    chaos.settings.stop_at_anomaly = on;
                    chaos.holding &= on;
                }
            }
            Action::StartChaos => self.start_chaos(),
            Action::StopChaos => self.chaos = None,
            Action::ResumeChaos => {
                if let Some(chaos) = &mut self.chaos {
                    chaos.holding = false;
                }
            }
            Action::CheckJepsen => {
                self.jepsen = self
                    .simulation
                    .jepsen_verdict()
                    .map(|verdict| crate::jepsen_model::JepsenPanel::live(&verdict, self.simulation.now()));
            }
            Action::ApplySetup => match setup_config(&self.setup) {
                Ok(config) => {
                    self.knob_error = None;
                    self.restart(config, self.setup.seed);
                }
                Err(message) => self.knob_error = Some(message),
            },
            Action::Reset => self.restart(self.config.clone(), self.setup.seed),
            Action::Select(selection) => {
                let again = self.selected.as_ref() == Some(&selection);
                self.selected = if again { None } else { Some(selection) };
            }
            other => self.act(other),
        }
        self.collect_trace();
        self.lag.sample(&self.simulation);
    }

    fn collect_trace(&mut self) {
        let events = self.simulation.take_trace();
        self.keep(events);
    }

    fn keep(&mut self, events: Vec<TraceEvent>) {
        for event in &events {
            self.lag.note(event);
        }
        // Chaos names what the checks found; the latest is where it stopped.
        if let Some(chaos) = self.chaos.as_mut() {
            for event in &events {
                if let Some(finding) = Finding::of(&event.kind) {
                    chaos.findings += 1;
                    chaos.holding |= chaos.settings.stop_at_anomaly;
                    chaos.jepsen_halt = None;
                    chaos.halt = Some(ChaosHalt {
                        at_ms: event.time,
                        event: Some(event.id),
                        line: Some(event.line()),
                        finding,
                    });
                }
            }
        }
        self.trace.extend(events);
        let excess = self.trace.len().saturating_sub(TRACE_KEPT);
        self.trace.drain(..excess);
    }

    fn restart(&mut self, config: ClusterConfig, seed: u64) {
        let setup = std::mem::take(&mut self.setup);
        let comparison = self.comparison.take();
        let chaos_setup = std::mem::take(&mut self.chaos_setup);
        *self = Session::new(config, seed);
        self.setup = setup;
        self.comparison = comparison;
        self.chaos_setup = chaos_setup;
    }

    fn edit_setup(&mut self, field: SetupField, text: &str) {
        let parsed = |range| parse_knob(field.name(), text, range);
        let mut next = self.setup.clone();
        let result = match field {
            SetupField::Brokers => parsed(1..=9).map(|value| next.brokers = value as u32),
            SetupField::Partitions => parsed(1..=24).map(|value| next.partitions = value as u32),
            SetupField::ReplicationFactor => parsed(1..=9).map(|value| next.replication_factor = value as u32),
            SetupField::BillingConsumers => parsed(0..=8).map(|value| next.billing = value as u32),
            SetupField::SearchConsumers => parsed(0..=8).map(|value| next.search = value as u32),
            SetupField::Seed => parsed(0..=u64::from(u32::MAX)).map(|value| next.seed = value),
        };
        match result {
            Ok(()) => {
                self.knob_error = None;
                self.setup = next;
            }
            Err(message) => self.knob_error = Some(message),
        }
    }

    fn tick(&mut self, virtual_ms: f64, rate: u32) {
        self.carry += virtual_ms.max(0.0);
        let whole = self.carry.floor();
        self.carry -= whole;
        let target = self.simulation.now() + whole as u64;
        if rate > 0 {
            let every = (1_000 / u64::from(rate)).max(1);
            self.next_record_at = self.next_record_at.max(self.simulation.now());
            while self.next_record_at <= target {
                for producer in 0..self.simulation.config().producers.len() as u32 {
                    let partitions = self
                        .simulation
                        .config()
                        .producers
                        .get(producer as usize)
                        .and_then(|config| {
                            let topics = &self.simulation.config().topics;
                            topics.iter().find(|topic| topic.name == config.topic)
                        })
                        .map_or(1, |topic| topic.partitions);
                    let keys = covering_keys(partitions);
                    let input = ScheduledInput {
                        at_ms: self.next_record_at,
                        input: Input::Produce {
                            producer,
                            key: Some(keys[(self.streamed % keys.len() as u64) as usize].clone()),
                            count: 1,
                            bytes: 100,
                        },
                    };
                    self.note_input(&input);
                    self.simulation.schedule(input);
                }
                self.streamed += 1;
                self.next_record_at += every;
            }
        }
        self.advance(target);
    }

    /// One event. Chaos's faults due by the next event strike first, so a
    /// learner stepping through chaos meets them as play does.
    fn step(&mut self) {
        if let Some(next) = self.simulation.next_event_time() {
            self.draw_chaos(next);
        }
        self.simulation.step();
    }

    /// Runs to `target`, with chaos's faults due by then injected first;
    /// chaos that stops at the first anomaly stops the run just after it.
    fn advance(&mut self, target: u64) {
        self.draw_chaos(target);
        let stops = self.replay.is_none() && self.chaos.as_ref().is_some_and(|chaos| chaos.settings.stop_at_anomaly);
        if stops {
            self.simulation.run_until_or(target, chaos::is_finding);
        } else {
            self.simulation.run_until(target);
        }
    }

    fn start_chaos(&mut self) {
        if let Err(message) = self.chaos_setup.check() {
            self.chaos_error = Some(message);
            return;
        }
        self.chaos_error = None;
        // Findings Jepsen's checks had before chaos are not chaos's.
        let operations = self.simulation.history_operations();
        let seen = if operations <= CHAOS_JEPSEN_MAX_OPERATIONS {
            self.simulation
                .jepsen_verdict()
                .map_or(0, |verdict| verdict.findings.len())
        } else {
            usize::MAX
        };
        let mut chaos = ChaosRun::new(self.chaos_setup.clone(), self.simulation.now(), seen);
        chaos.jepsen_checked_at = operations;
        self.chaos = Some(chaos);
    }

    /// Draws chaos's windows that start by `target` and injects the faults
    /// due by then (each with its healing, scheduled ahead).
    fn draw_chaos(&mut self, target: u64) {
        if self.replay.is_some() {
            return;
        }
        let Some(chaos) = self.chaos.as_mut() else {
            return;
        };
        let behind = target.saturating_sub(chaos.started_ms) / chaos::WINDOW_MS;
        if behind > chaos.next_window + CHAOS_MAX_WINDOWS {
            chaos.next_window = behind - CHAOS_MAX_WINDOWS;
        }
        let mut drew = false;
        while chaos.window_start(chaos.next_window) <= target {
            let faults = chaos::window(
                self.simulation.config(),
                &chaos.settings,
                chaos.started_ms,
                chaos.next_window,
            );
            chaos.pending.extend(faults);
            chaos.next_window += 1;
            drew = true;
        }
        let (due, later): (Vec<ChaosFault>, Vec<ChaosFault>) = std::mem::take(&mut chaos.pending)
            .into_iter()
            .partition(|fault| fault.at_ms <= target);
        chaos.pending = later;
        chaos.fault_count += due.len() as u64;
        for fault in &due {
            chaos.injected.push_back(fault.clone());
        }
        let excess = chaos.injected.len().saturating_sub(CHAOS_SHOWN);
        chaos.injected.drain(..excess);
        let check_jepsen = drew && chaos.settings.stop_at_anomaly;
        let now = self.simulation.now();
        for fault in due {
            for mut input in fault.inputs {
                input.at_ms = input.at_ms.max(now);
                self.note_input(&input);
                self.simulation.schedule(input);
            }
        }
        if check_jepsen {
            self.chaos_jepsen();
        }
    }

    /// Jepsen's checks over the run so far, as a window of chaos starts
    /// once the history has grown by a tenth since they last ran (so their
    /// cost stays in proportion to the run's), up to
    /// [`CHAOS_JEPSEN_MAX_OPERATIONS`]: a finding they had not reported
    /// before is an anomaly chaos stops at.
    fn chaos_jepsen(&mut self) {
        let operations = self.simulation.history_operations();
        let due = self.chaos.as_ref().is_some_and(|chaos| {
            chaos.jepsen_seen != usize::MAX
                && operations <= CHAOS_JEPSEN_MAX_OPERATIONS
                && operations >= chaos.jepsen_checked_at + 200 + chaos.jepsen_checked_at / 10
        });
        if !due {
            return;
        }
        let Some(verdict) = self.simulation.jepsen_verdict() else {
            return;
        };
        let Some(seen) = self.chaos.as_ref().map(|chaos| chaos.jepsen_seen) else {
            return;
        };
        if verdict.findings.len() > seen {
            self.hold_at_jepsen(&verdict, seen);
        }
        if let Some(chaos) = self.chaos.as_mut() {
            chaos.jepsen_seen = verdict.findings.len();
            chaos.jepsen_checked_at = operations;
        }
    }

    /// Chaos stops the map at Jepsen's finding number `index` of `verdict`.
    fn hold_at_jepsen(&mut self, verdict: &kafkascope_engine::sim::jepsen::Verdict, index: usize) {
        let allowed_here = !chaos::weakened_guarantees(self.simulation.config()).is_empty()
            || !self.simulation.lost_records().is_empty();
        let now = self.simulation.now();
        let (Some(chaos), Some(finding)) = (self.chaos.as_mut(), verdict.findings.get(index)) else {
            return;
        };
        chaos.findings += 1;
        chaos.holding = true;
        chaos.jepsen_halt = Some(index);
        chaos.halt = Some(ChaosHalt {
            at_ms: verdict.time_of(finding).unwrap_or(now),
            event: verdict.trace_id(finding),
            line: None,
            finding: Finding::Jepsen {
                class: finding.kind.name().to_string(),
                partition: finding.partition.to_string(),
                allowed_here,
            },
        });
        self.jepsen = Some(crate::jepsen_model::JepsenPanel::live(verdict, now));
    }

    /// A link made where chaos held the map at one of Jepsen's findings
    /// holds there again once replayed: the replay's history is judged
    /// again (the trace names losses and broken invariants by itself).
    fn restore_jepsen_halt(&mut self) {
        let Some(index) = self.chaos.as_ref().and_then(|chaos| chaos.jepsen_halt) else {
            return;
        };
        if let Some(verdict) = self.simulation.jepsen_verdict() {
            self.hold_at_jepsen(&verdict, index);
        }
    }

    /// Chaos under way, if any.
    pub fn chaos(&self) -> Option<&ChaosRun> {
        self.chaos.as_ref()
    }

    /// Chaos's settings as the learner edits them.
    pub fn chaos_setup(&self) -> &ChaosSettings {
        &self.chaos_setup
    }

    /// Why the last edit of chaos's settings was refused.
    pub fn chaos_error(&self) -> Option<&str> {
        self.chaos_error.as_deref()
    }

    fn input(&mut self, input: Input) {
        let now = self.simulation.now();
        let input = ScheduledInput { at_ms: now, input };
        self.note_input(&input);
        self.simulation.schedule(input);
        self.simulation.run_until(now);
    }

    /// A knob's change; one for a producer or a topic applies to all of
    /// them, unless Kafka would refuse it for one (then none changes).
    fn set(&mut self, change: ConfigChange) -> Result<(), String> {
        let producers = self.simulation.config().producers.len() as u32;
        let changes = match change.clone() {
            ConfigChange::Acks { acks, .. } => (0..producers)
                .map(|producer| ConfigChange::Acks { producer, acks })
                .collect(),
            ConfigChange::LingerMs { value, .. } => (0..producers)
                .map(|producer| ConfigChange::LingerMs { producer, value })
                .collect(),
            ConfigChange::EnableIdempotence { enable, .. } => (0..producers)
                .map(|producer| ConfigChange::EnableIdempotence { producer, enable })
                .collect(),
            ConfigChange::TopicStorage { .. }
            | ConfigChange::CleanupPolicy { .. }
            | ConfigChange::MinCleanableDirtyRatio { .. }
            | ConfigChange::MinInsyncReplicas { .. } => self
                .simulation
                .config()
                .topics
                .iter()
                .map(|topic| for_topic(&change, &topic.name))
                .collect(),
            other => vec![other],
        };
        for change in &changes {
            self.simulation.check_config_change(change)?;
        }
        for change in changes {
            self.input(Input::SetConfig(change));
        }
        Ok(())
    }

    fn act(&mut self, action: Action) {
        let now = self.simulation.now();
        let producers = self.simulation.config().producers.len() as u32;
        match action {
            Action::Run(ms) => self.advance(now + ms),
            Action::Skip(ms) => self.skip = Some((now, now + ms)),
            Action::SkipSlice => {
                if self.chaos.as_ref().is_some_and(|chaos| chaos.holding) {
                    // Chaos stopped the map at an anomaly: the skip ends there.
                    self.skip = None;
                } else if let Some((_, to)) = self.skip {
                    self.advance(to.min(now + SKIP_SLICE_MS));
                    if self.simulation.now() >= to {
                        self.skip = None;
                    }
                }
            }
            Action::StopSkip => self.skip = None,
            Action::ReplaySlice => self.replay_slice(),
            Action::StopReplay => self.stop_replay(),
            Action::Step => self.step(),
            Action::Produce | Action::ProduceKeyed => {
                for producer in 0..producers {
                    self.input(Input::Produce {
                        producer,
                        key: (action == Action::ProduceKeyed).then(|| "user-42".to_string()),
                        count: 10,
                        bytes: 100,
                    });
                }
            }
            Action::Kill(broker) => self.input(Input::KillBroker { broker }),
            Action::PowerLoss(broker) => self.input(Input::PowerLoss { brokers: vec![broker] }),
            Action::PowerLossAll => {
                let brokers = (1..=self.simulation.config().brokers).collect();
                self.input(Input::PowerLoss { brokers })
            }
            Action::Stop(broker) => self.input(Input::StopBroker { broker }),
            Action::Restart(broker) => self.input(Input::RestartBroker { broker }),
            Action::Pause(broker) => self.input(Input::PauseBroker {
                broker,
                duration_ms: 5_000,
            }),
            Action::Slow(broker, extra_latency_ms) => self.input(Input::SlowNode {
                node: NodeId::Broker(broker),
                extra_latency_ms,
            }),
            Action::KillController(controller) => self.input(Input::KillController { controller }),
            Action::RestartController(controller) => self.input(Input::RestartController { controller }),
            Action::StopConsumer(consumer) => self.input(Input::StopConsumer { consumer }),
            Action::StartConsumer(consumer) => self.input(Input::StartConsumer { consumer }),
            Action::CrashConsumer(consumer) => self.input(Input::CrashConsumer { consumer }),
            Action::PauseConsumer(consumer, duration_ms) => self.input(Input::PauseConsumer { consumer, duration_ms }),
            Action::CommitMode(consumer, mode) => {
                self.input(Input::SetConfig(ConfigChange::CommitMode { consumer, mode }))
            }
            Action::LoseProduceResponse(producer) => self.input(Input::LoseProduceResponse { producer }),
            Action::ProducePoison(producer) => {
                let topic = self
                    .simulation()
                    .config()
                    .producers
                    .get(producer as usize)
                    .map(|config| config.topic.clone());
                if let Some(topic) = topic {
                    self.input(Input::PoisonRecords {
                        topic,
                        key: Some(POISON_KEY.to_string()),
                        partition: None,
                        offset: None,
                    });
                    self.input(Input::Produce {
                        producer,
                        key: Some(POISON_KEY.to_string()),
                        count: 1,
                        bytes: 100,
                    });
                }
            }
            Action::IdempotentHandler(consumer, enable) => {
                self.input(Input::SetConfig(ConfigChange::IdempotentHandler { consumer, enable }))
            }
            Action::OffsetReset(consumer, reset) => {
                self.input(Input::SetConfig(ConfigChange::AutoOffsetReset { consumer, reset }))
            }
            Action::HandlerMs(consumer, value) => self.input(Input::SetConfig(ConfigChange::ProcessingMsPerRecord {
                consumer,
                value,
            })),
            Action::AddConsumer(group) => {
                let view = self.simulation.view();
                let like = view
                    .consumers
                    .iter()
                    .find(|consumer| consumer.group == group)
                    .and_then(|consumer| self.simulation.config().consumers.get(consumer.id as usize).cloned());
                let consumer = like.unwrap_or_else(|| {
                    let topic = self
                        .simulation
                        .config()
                        .topics
                        .first()
                        .map_or("orders".to_string(), |topic| topic.name.clone());
                    ConsumerConfig::new(group.as_str(), vec![topic])
                });
                // A new process: its own identity, not a copy of a static
                // member's group.instance.id (that would fence the other).
                let transactional = consumer.commit_mode == kafkascope_engine::sim::config::CommitMode::Transactional;
                let consumer = ConsumerConfig {
                    group_instance_id: None,
                    // An app's producer is its own: the copy has none, so
                    // it commits after processing instead.
                    output_producer: None,
                    commit_mode: if transactional {
                        kafkascope_engine::sim::config::CommitMode::AfterProcessing
                    } else {
                        consumer.commit_mode
                    },
                    ..consumer
                };
                self.input(Input::AddConsumer { consumer });
            }
            Action::AddPartitions(topic) => {
                let count = self.simulation.topic_partition_count(&topic) + 1;
                self.input(Input::CreatePartitions { topic, count });
            }
            Action::Tick { .. }
            | Action::Knob(..)
            | Action::Setup(..)
            | Action::Assignor(_)
            | Action::ApplySetup
            | Action::Reset
            | Action::Compare
            | Action::CheckJepsen
            | Action::ChaosSeed(_)
            | Action::ChaosRate(_)
            | Action::ChaosKind(..)
            | Action::ChaosStopAtAnomaly(_)
            | Action::StartChaos
            | Action::StopChaos
            | Action::ResumeChaos
            | Action::Select(_) => {}
        }
    }
}

/// The keys the live map streams for a topic of `partitions` partitions:
/// `user-N`, one for each partition (the smallest N whose murmur2 hash
/// picks it, as Kafka's partitioner does), so every partition gets records.
pub fn covering_keys(partitions: u32) -> Vec<String> {
    let partitions = partitions.max(1);
    let mut keys: Vec<Option<String>> = vec![None; partitions as usize];
    let mut missing = partitions as usize;
    let mut n = 0u32;
    while missing > 0 && n < 100_000 {
        let key = format!("user-{n}");
        if let Some(partition) = kafkascope_engine::partitioning::partition_for_key(key.as_bytes(), partitions) {
            let slot = &mut keys[partition as usize];
            if slot.is_none() {
                *slot = Some(key);
                missing -= 1;
            }
        }
        n += 1;
    }
    keys.into_iter().flatten().collect()
}

/// Compact JSON laid out as serde_json's pretty printer lays it out (two
/// spaces a level, `"key": value`, `[]` and `{}` kept empty). Writing the
/// compact form and indenting it here keeps a second, pretty copy of every
/// serde writer out of the simulator's module (#35).
fn indent_json(compact: &str) -> String {
    let mut out = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = compact.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.extend(chars.next());
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use kafkascope_engine::sim::trace::TraceKind;

    use super::*;

    fn session() -> Session {
        Session::new(default_config(), DEFAULT_SEED)
    }

    /// The live map's stream reaches every partition of its topic, at
    /// every partition count the knobs allow (it streamed user-0 to user-6,
    /// which all hash to two of three partitions).
    #[test]
    fn the_default_streams_keys_cover_every_partition() {
        for partitions in 1..=24 {
            let keys = covering_keys(partitions);
            let hit: std::collections::BTreeSet<u32> = keys
                .iter()
                .filter_map(|key| kafkascope_engine::partitioning::partition_for_key(key.as_bytes(), partitions))
                .collect();
            assert_eq!(hit.len() as u32, partitions, "{partitions}: {keys:?}");
        }
        let mut session = session();
        session.apply(Action::Tick {
            virtual_ms: 20_000.0,
            rate: 5,
        });
        let view = session.simulation.view();
        let topic = &session.simulation.config().producers[0].topic;
        for broker in &view.brokers {
            for replica in broker.replicas.iter().filter(|replica| {
                replica.topic == *topic && replica.role == kafkascope_engine::sim::view::ReplicaRole::Leader
            }) {
                assert!(replica.log_end_offset > 0, "{} got no records", replica.partition);
            }
        }
    }

    fn inputs(session: &Session) -> Vec<String> {
        session
            .trace()
            .iter()
            .filter_map(|event| match &event.kind {
                TraceKind::Input { description, .. } => Some(description.clone()),
                _ => None,
            })
            .collect()
    }

    /// Time travel: ten minutes at once, with small segments and short
    /// retention, deletes segments on the way and keeps the page's trace
    /// within its bound.
    #[test]
    fn skipping_ten_minutes_runs_retention_and_keeps_the_trace_bounded() {
        let mut session = session();
        session.apply(Action::Knob(Knob::Storage(StorageSetting::SegmentBytes), "1024".into()));
        session.apply(Action::Knob(Knob::Storage(StorageSetting::RetentionMs), "60000".into()));
        for _ in 0..20 {
            session.apply(Action::Produce);
            session.apply(Action::Run(5_000));
        }
        let before = session.simulation.now();
        session.apply(Action::Run(600_000));
        assert_eq!(session.simulation.now(), before + 600_000);
        assert!(session.trace().len() <= TRACE_KEPT);
        let view = session.simulation.view();
        assert!(
            view.brokers
                .iter()
                .flat_map(|broker| broker.replicas.iter())
                .any(|replica| replica.log_start_offset > 0),
            "retention deleted nothing in ten minutes"
        );
    }

    /// A long skip runs a slice at a time, says how far it got, ends
    /// where it was asked to, and can be stopped on the way.
    #[test]
    fn a_long_skip_runs_in_slices_and_can_be_stopped() {
        let mut session = session();
        let start = session.simulation.now();
        session.apply(Action::Skip(5 * SKIP_SLICE_MS));
        assert_eq!(session.skipping(), Some((0, 5 * SKIP_SLICE_MS)));
        let mut slices = 0;
        while session.skipping().is_some() {
            session.apply(Action::SkipSlice);
            slices += 1;
            if let Some((done, _)) = session.skipping() {
                assert_eq!(done, slices * SKIP_SLICE_MS);
            }
        }
        assert_eq!(slices, 5);
        assert_eq!(session.simulation.now(), start + 5 * SKIP_SLICE_MS);
        session.apply(Action::Skip(10 * SKIP_SLICE_MS));
        session.apply(Action::SkipSlice);
        session.apply(Action::StopSkip);
        assert_eq!(session.skipping(), None);
        session.apply(Action::SkipSlice);
        assert_eq!(session.simulation.now(), start + 6 * SKIP_SLICE_MS);
        assert!(session.trace().len() <= TRACE_KEPT);
    }

    /// The compaction and quota knobs change the running cluster (every
    /// topic; the default quota, keeping its other rate), and refuse
    /// values Kafka refuses, quoting them.
    #[test]
    fn compaction_and_quota_knobs_change_the_running_cluster() {
        let mut session = session();
        session.apply(Action::Knob(Knob::CleanupPolicy, "compact".into()));
        session.apply(Action::Knob(
            Knob::Storage(StorageSetting::DeleteRetentionMs),
            "15000".into(),
        ));
        assert_eq!(session.knob_error, None);
        let topics = &session.simulation.config().topics;
        assert!(topics.iter().all(
            |topic| topic.cleanup_policy == kafkascope_engine::storage::CleanupPolicy::COMPACT
                && topic.delete_retention_ms == 15_000
        ));
        session.apply(Action::Knob(Knob::CleanupPolicy, "compress".into()));
        assert!(session
            .knob_error
            .as_deref()
            .is_some_and(|error| error.contains("\"compress\"")));
        session.apply(Action::Knob(Knob::MinCleanableDirtyRatio, "1.5".into()));
        assert!(session
            .knob_error
            .as_deref()
            .is_some_and(|error| error.contains("0 to 1")));
        session.apply(Action::Knob(Knob::MinCleanableDirtyRatio, "0.1".into()));
        assert_eq!(session.knob_error, None);
        session.apply(Action::Knob(Knob::ConsumerByteRate, "500".into()));
        session.apply(Action::Knob(Knob::ProducerByteRate, "800".into()));
        let default = |session: &Session| {
            session
                .simulation
                .config()
                .quotas
                .iter()
                .find(|quota| quota.client_id.is_none())
                .map(|quota| (quota.producer_byte_rate, quota.consumer_byte_rate))
        };
        assert_eq!(default(&session), Some((Some(800), Some(500))));
        session.apply(Action::Knob(Knob::ProducerByteRate, "".into()));
        assert_eq!(default(&session), Some((None, Some(500))));
        session.apply(Action::Knob(Knob::ProducerByteRate, "0".into()));
        assert!(session
            .knob_error
            .as_deref()
            .is_some_and(|error| error.contains("at least 1")));
        session.apply(Action::Knob(Knob::ConsumerByteRate, "-1".into()));
        assert_eq!(default(&session), None);
    }

    #[test]
    fn every_path_that_moves_the_simulation_collects_its_trace() {
        let mut session = session();
        session.apply(Action::Run(1_000));
        let after_run = session.trace().len();
        assert!(after_run > 0);
        // A live knob (one of the paths that once kept its trace in the
        // simulation) and one step.
        session.apply(Action::Knob(Knob::MinInsyncReplicas, "1".into()));
        assert!(
            inputs(&session)
                .iter()
                .any(|input| input.contains("min.insync.replicas=1")),
            "{:?}",
            inputs(&session)
        );
        assert!(session.simulation().trace().is_empty());
        let before_step = session.trace().len();
        session.apply(Action::Step);
        assert!(session.trace().len() > before_step);
        assert!(session.simulation().trace().is_empty());
        session.apply(Action::Tick {
            virtual_ms: 500.0,
            rate: 5,
        });
        assert!(session.simulation().trace().is_empty());
        assert!(
            inputs(&session)
                .iter()
                .any(|input| input.contains("sends 1 record with key")),
            "{:?}",
            inputs(&session)
        );
    }

    #[test]
    fn the_trace_kept_is_bounded() {
        let mut session = session();
        for _ in 0..40 {
            session.apply(Action::Tick {
                virtual_ms: 5_000.0,
                rate: 20,
            });
        }
        assert!(session.trace().len() <= TRACE_KEPT);
        assert!(session.simulation().now() >= 200_000);
    }

    #[test]
    fn ticks_carry_fractions_of_a_millisecond() {
        let mut session = session();
        for _ in 0..4 {
            session.apply(Action::Tick {
                virtual_ms: 0.25,
                rate: 0,
            });
        }
        assert_eq!(session.simulation().now(), 1);
        assert_eq!(session.carry(), 0.0);
    }

    #[test]
    fn idempotence_is_a_live_knob_that_needs_acks_all() {
        let mut session = session();
        let idempotent = |session: &Session| {
            let producers = session.simulation().view().producers;
            producers.iter().all(|producer| producer.idempotent) && !producers.is_empty()
        };
        session.apply(Action::Knob(Knob::EnableIdempotence, "false".into()));
        assert_eq!(session.knob_error(), None);
        assert!(!idempotent(&session));
        session.apply(Action::Knob(Knob::Acks, "1".into()));
        session.apply(Action::Knob(Knob::EnableIdempotence, "true".into()));
        assert!(session
            .knob_error()
            .is_some_and(|error| error.starts_with("Must set acks to all")));
        assert!(!idempotent(&session));
        session.apply(Action::Knob(Knob::Acks, "all".into()));
        session.apply(Action::Knob(Knob::EnableIdempotence, "true".into()));
        assert_eq!(session.knob_error(), None);
        assert!(idempotent(&session));
        // Now Kafka would refuse acks=1 for this producer.
        session.apply(Action::Knob(Knob::Acks, "1".into()));
        assert!(session.knob_error().is_some());
        assert_eq!(session.simulation().view().producers[0].acks, Acks::All);
        session.apply(Action::LoseProduceResponse(0));
        session.apply(Action::Produce);
        session.apply(Action::Run(10_000));
        assert!(session.trace().iter().any(|event| matches!(
            event.kind,
            kafkascope_engine::sim::trace::TraceKind::DuplicateIgnored { .. }
        )));
    }

    #[test]
    fn a_poison_record_stops_a_member_without_a_failure_policy() {
        let mut session = session();
        session.apply(Action::Run(10_000));
        let running = |session: &Session| {
            session
                .simulation()
                .consumers()
                .iter()
                .filter(|consumer| consumer.phase != kafkascope_engine::sim::consumer::ConsumerPhase::Stopped)
                .count()
        };
        let before = running(&session);
        session.apply(Action::ProducePoison(0));
        session.apply(Action::Run(10_000));
        assert!(running(&session) < before, "a member stopped on the poison record");
        assert!(session.trace().iter().any(|event| matches!(
            event.kind,
            kafkascope_engine::sim::trace::TraceKind::HandlerFailed { .. }
        )));
    }

    #[test]
    fn knobs_take_only_what_they_can_and_quote_the_rest() {
        let mut session = session();
        session.apply(Action::Knob(Knob::LingerMs, "4a".into()));
        assert_eq!(
            session.knob_error(),
            Some("linger.ms must be a whole number from 0 to 60000 (got \"4a\")")
        );
        session.apply(Action::Knob(Knob::Acks, "1".into()));
        assert_eq!(session.knob_error(), None);
        assert_eq!(session.simulation().view().producers[0].acks, Acks::Leader);
        session.apply(Action::Knob(Knob::UncleanLeaderElection, "true".into()));
        assert!(session.simulation().config().unclean_leader_election_enable);
        session.apply(Action::Setup(SetupField::Brokers, "12".into()));
        assert!(session
            .knob_error()
            .is_some_and(|error| error.contains("brokers") && error.contains("\"12\"")));
        session.apply(Action::Setup(SetupField::Brokers, "5".into()));
        session.apply(Action::Setup(SetupField::Partitions, "6".into()));
        session.apply(Action::ApplySetup);
        assert_eq!(session.knob_error(), None);
        assert_eq!(session.simulation().view().brokers.len(), 5);
        assert_eq!(session.setup().partitions, 6, "the shape knobs stay as typed");
    }

    /// A link to this moment replays the run: after play ticks, a kill,
    /// single steps, a knob change, a run and an added partition, the
    /// replayed session has processed the same events, reached the same
    /// time and kept the same trace.
    /// Plays `session` at `rate` records a second for up to `ms` of
    /// virtual time in 500 ms ticks, or until chaos names an anomaly.
    fn play_until_finding(session: &mut Session, ms: u64) {
        for _ in 0..ms / 500 {
            session.apply(Action::Tick {
                virtual_ms: 500.0,
                rate: 20,
            });
            if session.chaos().is_some_and(|chaos| chaos.findings > 0) {
                return;
            }
        }
    }

    fn replayed(text: &str) -> Session {
        let mut restored = Session::from_link(text).expect("the link opens");
        while restored.replaying().is_some() {
            restored.apply(Action::ReplaySlice);
        }
        restored
    }

    /// Chaos injects faults from its seed while the map plays, each one
    /// logged with its healing, so a link made mid-chaos replays the same
    /// run and then draws on as the first would have.
    #[test]
    fn chaos_injects_logged_faults_and_a_link_draws_on_the_same() {
        let started = || {
            let mut session = session();
            session.apply(Action::ChaosRate("20".into()));
            session.apply(Action::ChaosStopAtAnomaly(false));
            session.apply(Action::Tick {
                virtual_ms: 500.0,
                rate: 5,
            });
            session.apply(Action::StartChaos);
            session
        };
        let mut session = started();
        let mut other = started();
        for _ in 0..60 {
            session.apply(Action::Tick {
                virtual_ms: 500.0,
                rate: 5,
            });
        }
        let chaos = session.chaos().expect("chaos runs");
        assert!(chaos.fault_count >= 3, "{chaos:?}");
        assert_eq!(chaos.next_window, 4);
        assert!(chaos
            .injected
            .iter()
            .all(|fault| fault.at_ms <= session.simulation().now()));
        // Every fault injected is in the link's inputs.
        let link = session.run_link();
        for fault in &chaos.injected {
            assert!(link.inputs.iter().any(|logged| logged.input == fault.inputs[0].input));
        }
        // The same run from another pace of ticks draws the same faults.
        for _ in 0..15 {
            other.apply(Action::Tick {
                virtual_ms: 2_000.0,
                rate: 5,
            });
        }
        assert_eq!(other.chaos().map(|chaos| &chaos.injected), Some(&chaos.injected));
        // A link replays to the same moment and chaos state, and both draw on alike.
        let text = crate::share::encode(&link);
        let mut restored = replayed(&text);
        assert_eq!(restored.run_hash(), session.run_hash());
        assert_eq!(
            restored.chaos().map(ChaosRun::linked),
            session.chaos().map(ChaosRun::linked)
        );
        for each in [&mut session, &mut restored] {
            for _ in 0..20 {
                each.apply(Action::Tick {
                    virtual_ms: 500.0,
                    rate: 5,
                });
            }
        }
        assert_eq!(restored.run_hash(), session.run_hash());
        // The faults drawn after the link are the same (its count starts
        // over: the faults before are among the link's inputs).
        let latest = |each: &Session| each.chaos().and_then(|chaos| chaos.injected.back().cloned());
        assert!(latest(&session).is_some_and(|fault| fault.at_ms > link.now_ms));
        assert_eq!(latest(&restored), latest(&session));
        // Stopping chaos draws nothing more; the faults under way heal.
        session.apply(Action::StopChaos);
        let logged = session.run_link().inputs.len();
        session.apply(Action::Run(60_000));
        assert!(session.chaos().is_none());
        assert_eq!(session.run_link().inputs.len(), logged);
        let view = session.simulation().view();
        assert!(
            view.brokers
                .iter()
                .all(|broker| broker.status == kafkascope_engine::sim::view::ProcessStatus::Running),
            "every broker back"
        );
    }

    /// Stepping through chaos one event at a time meets the same faults,
    /// at the same times, as playing it does; a link replays the stepped run.
    #[test]
    fn stepping_through_chaos_meets_the_faults_play_meets() {
        let started = || {
            let mut session = session();
            session.apply(Action::ChaosRate("30".into()));
            session.apply(Action::ChaosStopAtAnomaly(false));
            session.apply(Action::StartChaos);
            session
        };
        let mut stepped = started();
        while stepped.simulation().now() < 12_000 {
            stepped.apply(Action::Step);
        }
        let mut played = started();
        played.apply(Action::Run(stepped.simulation().now()));
        let faults = |session: &Session| session.chaos().map(|chaos| chaos.injected.clone()).unwrap_or_default();
        assert!(faults(&stepped).len() >= 3, "{:?}", stepped.chaos());
        assert_eq!(faults(&stepped), faults(&played));
        let link = stepped.run_link();
        for fault in &faults(&stepped) {
            assert!(link.inputs.iter().any(|logged| logged.input == fault.inputs[0].input));
        }
        let restored = replayed(&crate::share::encode(&link));
        assert_eq!(restored.run_hash(), stepped.run_hash());
    }

    /// With every broker's power cut at once, chaos stops the map just
    /// after the records are lost, names the loss as Kafka's design, and a
    /// link to that moment replays to the same stop.
    #[test]
    fn chaos_stops_at_the_first_anomaly_and_its_link_replays_the_stop() {
        let mut session = session();
        session.apply(Action::ChaosKind(FaultKind::Crash, false));
        session.apply(Action::ChaosKind(FaultKind::Pause, false));
        session.apply(Action::ChaosKind(FaultKind::Partition, false));
        session.apply(Action::ChaosKind(FaultKind::LossyLinks, false));
        session.apply(Action::ChaosKind(FaultKind::SlowNode, false));
        session.apply(Action::ChaosRate("60".into()));
        assert_eq!(session.chaos_setup().kinds, vec![FaultKind::PowerLoss]);
        session.apply(Action::StartChaos);
        play_until_finding(&mut session, 600_000);
        let chaos = session.chaos().expect("chaos runs").clone();
        let halt = chaos.halt.clone().expect("a power loss of every broker loses records");
        assert!(matches!(halt.finding, Finding::RecordsLost { .. }), "{halt:?}");
        assert_eq!(halt.finding.judgement(), chaos::Judgement::KafkasDesign);
        // Stopped at the event that named it.
        assert_eq!(session.simulation().now(), halt.at_ms);
        assert_eq!(session.trace().back().map(|event| event.id), halt.event);
        // Playing on (or editing chaos's settings) while a link replays
        // leaves the replay going.
        let text = crate::share::encode(&session.run_link());
        let mut replaying = Session::from_link(&text).expect("the link opens");
        replaying.apply(Action::ResumeChaos);
        replaying.apply(Action::ChaosRate("30".into()));
        assert!(replaying.replaying().is_some());
        let restored = replayed(&text);
        assert_eq!(restored.run_hash(), session.run_hash());
        assert_eq!(
            restored.chaos().and_then(|chaos| chaos.halt.clone()),
            Some(halt.clone())
        );
        assert!(restored.chaos().is_some_and(|chaos| chaos.holding));
        // Held there: play ticks do nothing until the learner plays on.
        session.apply(Action::Tick {
            virtual_ms: 500.0,
            rate: 20,
        });
        assert_eq!(session.simulation().now(), halt.at_ms);
        session.apply(Action::ResumeChaos);
        session.apply(Action::Tick {
            virtual_ms: 500.0,
            rate: 20,
        });
        assert!(session.simulation().now() > halt.at_ms);
        // Settings out of range are refused with a reason.
        let mut refused = self::session();
        refused.apply(Action::ChaosRate("0".into()));
        assert!(refused.chaos_error().is_some());
        for kind in FaultKind::ALL {
            refused.apply(Action::ChaosKind(kind, false));
        }
        refused.apply(Action::StartChaos);
        assert!(refused.chaos().is_none());
        assert!(refused
            .chaos_error()
            .is_some_and(|error| error.contains("at least one")));
    }

    /// A link made where chaos stopped the map at one of Jepsen's findings
    /// (a duplicate: retries without idempotence over links that lose
    /// answers) opens stopped at the same finding, its checks shown.
    #[test]
    fn a_link_to_a_stop_at_a_jepsen_finding_replays_the_stop() {
        let mut session = session();
        session.apply(Action::Knob(Knob::EnableIdempotence, "false".into()));
        assert_eq!(session.knob_error(), None);
        only_chaos_kind(&mut session, FaultKind::LossyLinks);
        session.apply(Action::ChaosRate("60".into()));
        session.apply(Action::StartChaos);
        play_until_finding(&mut session, 600_000);
        let chaos = session.chaos().expect("chaos runs").clone();
        let halt = chaos.halt.clone().expect("retries without idempotence write duplicates");
        assert!(matches!(halt.finding, Finding::Jepsen { .. }), "{halt:?}");
        let link = session.run_link();
        assert!(link.chaos.as_ref().is_some_and(|linked| linked.jepsen_halt.is_some()));
        let restored = replayed(&crate::share::encode(&link));
        assert_eq!(restored.run_hash(), session.run_hash());
        assert_eq!(restored.chaos().and_then(|chaos| chaos.halt.clone()), Some(halt));
        assert!(restored.chaos().is_some_and(|chaos| chaos.holding));
        assert!(restored.jepsen().is_some());
        // Played on, a link no longer stops there.
        session.apply(Action::ResumeChaos);
        assert!(session.run_link().chaos.is_some_and(|linked| linked.jepsen_halt.is_none()));
    }

    /// Chaos with one kind of fault turned on and every other off.
    fn only_chaos_kind(session: &mut Session, only: FaultKind) {
        for kind in FaultKind::ALL {
            session.apply(Action::ChaosKind(kind, kind == only));
        }
    }

    /// A long skip under chaos that stops at the first anomaly ends at it.
    #[test]
    fn a_skip_under_chaos_ends_at_the_first_anomaly() {
        let mut session = session();
        only_chaos_kind(&mut session, FaultKind::PowerLoss);
        session.apply(Action::ChaosRate("60".into()));
        session.apply(Action::Produce);
        session.apply(Action::StartChaos);
        session.apply(Action::Skip(3_600_000));
        for _ in 0..100 {
            if session.skipping().is_none() {
                break;
            }
            session.apply(Action::SkipSlice);
        }
        assert_eq!(session.skipping(), None);
        let chaos = session.chaos().expect("chaos runs");
        let halt = chaos
            .halt
            .clone()
            .expect("a power loss of every broker loses the records");
        assert!(chaos.holding && chaos.findings == 1, "{chaos:?}");
        assert_eq!(session.simulation().now(), halt.at_ms);
        assert!(halt.at_ms < 3_600_000);
    }

    /// The same chaos with `flush.messages=1` on the topic: every record is
    /// on disk when it is acknowledged, so cutting every broker's power
    /// loses nothing, and chaos finds nothing to stop at.
    #[test]
    fn with_every_record_synced_a_power_loss_of_every_broker_loses_nothing() {
        let mut session = session();
        session.apply(Action::Knob(Knob::Storage(StorageSetting::FlushMessages), "1".into()));
        assert_eq!(session.knob_error(), None);
        assert_eq!(session.simulation().config().topics[0].flush_messages, Some(1));
        only_chaos_kind(&mut session, FaultKind::PowerLoss);
        session.apply(Action::ChaosRate("60".into()));
        session.apply(Action::StartChaos);
        play_until_finding(&mut session, 300_000);
        let chaos = session.chaos().expect("chaos runs");
        assert!(chaos.fault_count > 100, "{}", chaos.fault_count);
        assert_eq!(chaos.findings, 0, "{:?}", chaos.halt);
        assert!(session.simulation().summary().acknowledged > 0);
        assert_eq!(session.simulation().summary().lost, 0);
        // 0 is refused as Kafka refuses it; -1 unsets it.
        session.apply(Action::Knob(Knob::Storage(StorageSetting::FlushMessages), "0".into()));
        assert!(session
            .knob_error()
            .is_some_and(|error| error.contains("flush.messages")));
        session.apply(Action::Knob(Knob::Storage(StorageSetting::FlushMessages), "-1".into()));
        assert_eq!(session.simulation().config().topics[0].flush_messages, None);
    }

    #[test]
    fn a_run_link_replays_to_the_same_moment_and_trace() {
        let mut session = session();
        for _ in 0..40 {
            session.apply(Action::Tick {
                virtual_ms: 100.0,
                rate: 5,
            });
        }
        session.apply(Action::Kill(2));
        session.apply(Action::Step);
        session.apply(Action::Step);
        session.apply(Action::Knob(Knob::Acks, "1".into()));
        session.apply(Action::Run(3_000));
        let topic = session.simulation().config().topics[0].name.clone();
        session.apply(Action::AddPartitions(topic));
        session.apply(Action::Step);
        let text = crate::share::encode(&session.run_link());
        let mut restored = Session::from_link(&text).expect("the link opens");
        let mut slices = 0;
        while let Some((done, total)) = restored.replaying() {
            assert!(done <= total);
            restored.apply(Action::ReplaySlice);
            slices += 1;
        }
        assert!(slices >= 1);
        assert_eq!(
            restored.link_outcome(),
            Some(&LinkOutcome::Opened {
                at_ms: session.simulation().now(),
                hash: session.run_hash()
            })
        );
        assert_eq!(
            restored.simulation().events_processed(),
            session.simulation().events_processed()
        );
        assert_eq!(restored.simulation().now(), session.simulation().now());
        assert_eq!(restored.simulation().summary(), session.simulation().summary());
        assert_eq!(restored.run_hash(), session.run_hash());
        assert_eq!(restored.trace().len(), session.trace().len());
        // Playing on from the link continues as the run would have.
        let mut original = session;
        let mut copy = restored;
        for session in [&mut original, &mut copy] {
            session.apply(Action::Tick {
                virtual_ms: 2_000.0,
                rate: 5,
            });
        }
        assert_eq!(copy.run_hash(), original.run_hash());
        // A new run starts a new log.
        copy.apply(Action::Reset);
        assert!(copy.run_link().inputs.is_empty());
    }

    /// A long link replays a slice at a time and the map does not play
    /// meanwhile; Stop (or anything else the learner does) leaves the run
    /// where the replay got to, with the inputs given so far, and it plays
    /// on from there. A link that does not replay opens the default cluster
    /// and says why.
    #[test]
    fn a_run_link_replay_can_be_stopped_and_the_run_goes_on_from_there() {
        let mut session = session();
        session.apply(Action::Run(1_000));
        session.apply(Action::Kill(2));
        // Two minutes of the default cluster: a few slices' worth.
        session.apply(Action::Run(120_000));
        let link = session.run_link();
        let text = crate::share::encode(&link);
        let mut restored = Session::from_link(&text).expect("the link opens");
        restored.apply(Action::Tick {
            virtual_ms: 1_000.0,
            rate: 5,
        });
        assert_eq!(restored.simulation().events_processed(), 0, "no play while replaying");
        restored.apply(Action::ReplaySlice);
        let (done, total) = restored.replaying().expect("still replaying");
        assert!(done > 0 && done < total, "{done} of {total}");
        restored.apply(Action::StopReplay);
        assert_eq!(restored.replaying(), None);
        let at_ms = restored.simulation().now();
        assert_eq!(
            restored.link_outcome(),
            Some(&LinkOutcome::Stopped {
                at_ms,
                events: done,
                of: link.events
            })
        );
        let given = restored.run_link().inputs.len();
        assert!(given <= link.inputs.len());
        restored.apply(Action::Run(1_000));
        assert_eq!(restored.simulation().now(), at_ms + 1_000);

        // A knob changed mid-replay stops it first, then applies.
        let mut again = Session::from_link(&text).expect("the link opens");
        again.apply(Action::ReplaySlice);
        again.apply(Action::Knob(Knob::Acks, "1".into()));
        assert_eq!(again.replaying(), None);
        assert!(matches!(again.link_outcome(), Some(LinkOutcome::Stopped { .. })));
        assert_eq!(again.knob_error(), None);

        // Inputs the cluster refuses, found on the way: the default cluster.
        let mut greedy = link.clone();
        greedy.inputs.push(crate::share::LoggedInput {
            events: link.events,
            at_ms: link.now_ms,
            input: Input::CreatePartitions {
                topic: link.config.topics[0].name.clone(),
                count: 2_000,
            },
        });
        let mut refused = Session::from_link(&crate::share::encode(&greedy)).expect("starts");
        while refused.replaying().is_some() {
            refused.apply(Action::ReplaySlice);
        }
        assert!(
            matches!(refused.link_outcome(), Some(LinkOutcome::Failed(problem)) if problem.contains("more than kafkascope allows")),
            "{:?}",
            refused.link_outcome()
        );
        assert_eq!(refused.simulation().config(), &default_config());
    }

    /// The run exported as a scenario file opens as a story and reads back
    /// the same cluster, seed and inputs; the trace exports as JSON.
    #[test]
    fn the_run_exports_as_a_scenario_file_and_its_trace_as_json() {
        let mut session = session();
        session.apply(Action::Run(1_000));
        session.apply(Action::Kill(2));
        session.apply(Action::Produce);
        session.apply(Action::Run(2_000));
        let text = session.scenario_json();
        let scenario = kafkascope_engine::sim::scenario::Scenario::from_json(&text).expect("a valid scenario");
        assert_eq!(scenario.config, session.simulation().config().clone());
        assert_eq!(scenario.run_until_ms, 3_000);
        assert!(scenario
            .inputs
            .iter()
            .any(|input| input.input == Input::KillBroker { broker: 2 } && input.at_ms == 1_000));
        let story = crate::sequence_model::custom_story("kafkascope-run.json", &text).expect("opens as a story");
        assert_eq!(story.id, "custom-custom");
        let trace: serde_json::Value = serde_json::from_str(&session.trace_json()).expect("json");
        assert_eq!(trace.as_array().map(Vec::len), Some(session.trace().len()));
        // Laid out exactly as serde_json's pretty printer would.
        assert_eq!(text, serde_json::to_string_pretty(&scenario).expect("json"));
    }

    /// The indenter leaves strings alone (brackets, commas, colons and
    /// escaped quotes inside them) and keeps empty arrays and objects.
    #[test]
    fn compact_json_is_indented_as_serde_json_would() {
        let value = serde_json::json!({
            "a": "x, [y]: {z} \\\" q",
            "b": [],
            "c": {},
            "d": [1, {"e": null, "f": [true, false]}],
            "g": -1.5
        });
        let compact = serde_json::to_string(&value).expect("json");
        assert_eq!(
            super::indent_json(&compact),
            serde_json::to_string_pretty(&value).expect("json")
        );
    }

    /// The inspector's "Add a partition" is `kafka-topics --alter
    /// --partitions N+1`, decided by the active controller; once the
    /// clients refresh their metadata (5 minutes) the group owns it.
    #[test]
    fn adding_a_partition_grows_the_topic_and_the_group_takes_it() {
        let mut session = session();
        session.apply(Action::Run(5_000));
        let topic = session.simulation().config().topics[0].name.clone();
        let before = session.simulation().topic_partition_count(&topic);
        session.apply(Action::AddPartitions(topic.clone()));
        session.apply(Action::Run(1_000));
        assert_eq!(session.simulation().topic_partition_count(&topic), before + 1);
        assert!(inputs(&session)
            .iter()
            .any(|input| input == &format!("kafka-topics --alter --topic {topic} --partitions {}", before + 1)));
        session.apply(Action::Run(330_000));
        let view = session.simulation().view();
        let total = view
            .consumers
            .iter()
            .flat_map(|consumer| &consumer.partitions)
            .filter(|partition| partition.topic == topic)
            .count();
        let groups: std::collections::BTreeSet<&String> =
            view.consumers.iter().map(|consumer| &consumer.group).collect();
        assert_eq!(
            total,
            (before as usize + 1) * groups.len(),
            "every group owns every partition"
        );
    }

    #[test]
    fn acks_1_loses_acknowledged_records_when_the_leader_dies_before_its_followers_fetch() {
        // The sequence the host page test plays on the map (recordLost).
        let mut session = session();
        session.apply(Action::Knob(Knob::Acks, "1".into()));
        session.apply(Action::Run(3_000));
        session.apply(Action::Pause(2));
        session.apply(Action::Pause(3));
        session.apply(Action::ProduceKeyed);
        session.apply(Action::Run(1_000));
        session.apply(Action::Kill(1));
        for _ in 0..3 {
            session.apply(Action::Run(10_000));
        }
        let summary = session.simulation().summary();
        assert_eq!(summary.lost, 10, "{summary:?}");
    }

    #[test]
    fn a_power_loss_cuts_each_log_to_what_was_flushed_and_the_map_says_where() {
        let mut session = session();
        session.apply(Action::Run(2_000));
        session.apply(Action::Produce);
        session.apply(Action::Run(2_000));
        let replicas = |session: &Session, broker: u32| {
            let view = session.simulation().view();
            let broker = view
                .brokers
                .iter()
                .find(|row| row.id == broker)
                .cloned()
                .expect("a broker");
            broker
                .replicas
                .into_iter()
                .filter(|replica| !replica.internal)
                .collect::<Vec<_>>()
        };
        let before = replicas(&session, 1);
        let written: Vec<_> = before.iter().filter(|replica| replica.log_end_offset > 0).collect();
        assert!(!written.is_empty());
        // Nothing is flushed by default: the map's row says so.
        for replica in &written {
            assert_eq!(replica.recovery_point, 0);
            assert!(
                crate::map_model::flushed_text(replica.recovery_point, replica.log_end_offset)
                    .contains("in the page cache only")
            );
        }
        session.apply(Action::PowerLossAll);
        session.apply(Action::Run(100));
        for broker in 1..=3 {
            assert!(replicas(&session, broker)
                .iter()
                .all(|replica| replica.log_end_offset == replica.recovery_point));
        }
    }

    #[test]
    fn selecting_twice_unselects_and_a_new_run_clears_the_selection() {
        let mut session = session();
        let broker = Selection::Node(NodeId::Broker(1));
        session.apply(Action::Select(broker.clone()));
        assert_eq!(session.selected(), Some(&broker));
        session.apply(Action::Select(broker.clone()));
        assert_eq!(session.selected(), None);
        session.apply(Action::Select(broker));
        session.apply(Action::Run(2_000));
        session.apply(Action::Reset);
        assert_eq!(session.selected(), None);
        assert_eq!(session.simulation().now(), 0);
        assert!(
            session.trace().iter().all(|event| event.time == 0),
            "only the new run's start is traced"
        );
    }
}
