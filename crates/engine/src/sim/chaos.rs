//! Chaos on the live map: random faults on a running cluster, drawn from a
//! seed by the fuzzer's own generator ([`Rng`]), each one healed a few
//! seconds later, so the cluster keeps recovering while the invariant
//! monitors and Jepsen's checks watch (Jepsen's nemesis does the same to a
//! real cluster).
//!
//! The faults come in windows of [`WINDOW_MS`] of virtual time; window `n`
//! depends only on the settings, the cluster and `n`, so a run that
//! resumes chaos from a link draws the same faults as the run it came from.

use serde::{Deserialize, Serialize};

use crate::protocol::NodeId;
use crate::random::Rng;

use super::config::{ClusterConfig, Input, ScheduledInput};
use super::trace::{Invariant, LossCause, TraceKind};
use super::types::Time;

/// Virtual time one window of faults covers.
pub const WINDOW_MS: Time = 10_000;

/// The most faults a minute a learner may ask for.
pub const MAX_PER_MINUTE: u32 = 60;

/// The kinds of fault chaos draws from, each one the learner turns on or off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// A broker, a controller or a consumer's process crashes (its page
    /// cache survives) and starts again.
    Crash,
    /// A broker loses power (its unflushed records with it); now and then
    /// every broker at once.
    PowerLoss,
    /// A broker or a consumer stops for a while (a long garbage-collection
    /// pause) and goes on as if nothing happened.
    Pause,
    /// The network splits the cluster in two.
    Partition,
    /// Links drop a share of the messages they carry.
    LossyLinks,
    /// One node's messages take longer.
    SlowNode,
}

impl FaultKind {
    /// Every kind, in the order the page lists them.
    pub const ALL: [FaultKind; 6] = [
        FaultKind::Crash,
        FaultKind::PowerLoss,
        FaultKind::Pause,
        FaultKind::Partition,
        FaultKind::LossyLinks,
        FaultKind::SlowNode,
    ];
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            FaultKind::Crash => "crashes",
            FaultKind::PowerLoss => "power losses",
            FaultKind::Pause => "pauses",
            FaultKind::Partition => "network partitions",
            FaultKind::LossyLinks => "lossy links",
            FaultKind::SlowNode => "slow nodes",
        })
    }
}

/// What the learner chose: the seed, the kinds of fault and how many a
/// minute of virtual time, and whether the map stops at the first anomaly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChaosSettings {
    /// The seed the faults are drawn from.
    pub seed: u64,
    /// The kinds of fault drawn (at least one).
    pub kinds: Vec<FaultKind>,
    /// Faults a minute of virtual time, on average (1 to [`MAX_PER_MINUTE`]).
    pub per_minute: u32,
    /// Whether the map stops just after the first anomaly a check names.
    pub stop_at_anomaly: bool,
}

impl Default for ChaosSettings {
    fn default() -> Self {
        ChaosSettings {
            seed: 1,
            kinds: FaultKind::ALL.to_vec(),
            per_minute: 6,
            stop_at_anomaly: true,
        }
    }
}

impl ChaosSettings {
    /// Why these settings cannot run, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.kinds.is_empty() {
            return Err("choose at least one kind of fault".to_string());
        }
        if !(1..=MAX_PER_MINUTE).contains(&self.per_minute) {
            return Err(format!(
                "faults a minute must be from 1 to {MAX_PER_MINUTE}, not {}",
                self.per_minute
            ));
        }
        Ok(())
    }
}

/// One fault chaos injected: when, what kind, the inputs that make it and
/// heal it, and when it heals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChaosFault {
    /// When it strikes.
    pub at_ms: Time,
    /// What kind of fault it is.
    pub kind: FaultKind,
    /// The inputs that make it and heal it.
    pub inputs: Vec<ScheduledInput>,
    /// When it is healed (the crashed process restarted, the network whole).
    pub heals_at_ms: Time,
}

impl std::fmt::Display for ChaosFault {
    /// `t = 12,300 ms: kill broker-2 (healed at 17,100 ms)`.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.inputs.first().map(|input| &input.input) {
            Some(Input::Partition { side }) => {
                let names: Vec<String> = side.iter().map(ToString::to_string).collect();
                format!("partition the network: {} on one side", names.join(", "))
            }
            Some(input) => super::describe_input(input),
            None => self.kind.to_string(),
        };
        write!(
            formatter,
            "t = {} ms: {what} (healed at {} ms)",
            self.at_ms, self.heals_at_ms
        )
    }
}

/// The faults of window `index` (from `started_ms + index × WINDOW_MS`),
/// in time order. Empty if the settings cannot run.
pub fn window(config: &ClusterConfig, settings: &ChaosSettings, started_ms: Time, index: u64) -> Vec<ChaosFault> {
    if settings.check().is_err() {
        return Vec::new();
    }
    let mut rng = Rng::new(settings.seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15), 25);
    let from = started_ms + index * WINDOW_MS;
    // per_minute / 6 faults a window on average: the whole part always,
    // one more with the chance of the fraction.
    let tenths = settings.per_minute * 10 / 6;
    let count = tenths / 10 + u32::from(rng.next_u32() % 10 < tenths % 10);
    let mut times: Vec<Time> = (0..count)
        .map(|_| from + u64::from(rng.next_u32()) % WINDOW_MS)
        .collect();
    crate::sorting::sort_u64(&mut times);
    times
        .into_iter()
        .filter_map(|at_ms| {
            let kind = settings.kinds[rng.next_u32() as usize % settings.kinds.len()];
            fault(config, kind, at_ms, &mut rng)
        })
        .collect()
}

/// One fault of `kind` at `at_ms` and its healing, 2 to 12 s later.
fn fault(config: &ClusterConfig, kind: FaultKind, at_ms: Time, rng: &mut Rng) -> Option<ChaosFault> {
    let heals_at_ms = at_ms + 2_000 + u64::from(rng.next_u32() % 10_000);
    let at = |input| ScheduledInput { at_ms, input };
    let healed = |input| ScheduledInput {
        at_ms: heals_at_ms,
        input,
    };
    let broker = rng.next_u32() % config.brokers.max(1) + 1;
    let consumers = config.consumers.len() as u32;
    let mut nodes: Vec<NodeId> = (1..=config.brokers).map(NodeId::Broker).collect();
    nodes.extend((1..=config.controllers).map(NodeId::Controller));
    nodes.extend((0..config.producers.len() as u32).map(NodeId::Producer));
    nodes.extend((0..consumers).map(NodeId::Consumer));
    let inputs = match kind {
        FaultKind::Crash => match rng.next_u32() % 4 {
            0 if config.controllers > 0 => {
                let controller = rng.next_u32() % config.controllers + 1;
                vec![
                    at(Input::KillController { controller }),
                    healed(Input::RestartController { controller }),
                ]
            }
            1 if consumers > 0 => {
                let consumer = rng.next_u32() % consumers;
                vec![
                    at(Input::CrashConsumer { consumer }),
                    healed(Input::StartConsumer { consumer }),
                ]
            }
            _ => vec![
                at(Input::KillBroker { broker }),
                healed(Input::RestartBroker { broker }),
            ],
        },
        FaultKind::PowerLoss => {
            // One in six: every broker at once, a data centre's outage.
            let brokers: Vec<u32> = if rng.next_u32() % 6 == 0 {
                (1..=config.brokers).collect()
            } else {
                vec![broker]
            };
            let mut inputs = vec![at(Input::PowerLoss {
                brokers: brokers.clone(),
            })];
            inputs.extend(
                brokers
                    .into_iter()
                    .map(|broker| healed(Input::RestartBroker { broker })),
            );
            inputs
        }
        FaultKind::Pause => {
            let duration_ms = heals_at_ms - at_ms;
            if consumers > 0 && rng.next_u32() % 2 == 0 {
                vec![at(Input::PauseConsumer {
                    consumer: rng.next_u32() % consumers,
                    duration_ms,
                })]
            } else {
                vec![at(Input::PauseBroker { broker, duration_ms })]
            }
        }
        FaultKind::Partition => {
            let side: Vec<NodeId> = nodes.iter().copied().filter(|_| rng.next_u32() % 2 == 0).collect();
            if side.is_empty() || side.len() == nodes.len() {
                return None;
            }
            vec![at(Input::Partition { side }), healed(Input::HealNetwork)]
        }
        FaultKind::LossyLinks => vec![
            at(Input::DropMessages {
                per_million: [10_000, 50_000, 200_000][rng.next_u32() as usize % 3],
            }),
            healed(Input::DropMessages { per_million: 0 }),
        ],
        FaultKind::SlowNode => {
            let node = nodes[rng.next_u32() as usize % nodes.len()];
            vec![
                at(Input::SlowNode {
                    node,
                    extra_latency_ms: 50 + u64::from(rng.next_u32() % 450),
                }),
                healed(Input::SlowNode {
                    node,
                    extra_latency_ms: 0,
                }),
            ]
        }
    };
    Some(ChaosFault {
        at_ms,
        kind,
        inputs,
        heals_at_ms,
    })
}

/// Whether a finding is what Kafka's design allows in this configuration
/// or something Kafka promises never happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Judgement {
    /// Kafka allows it here (a power loss of every replica, `acks=1`, an
    /// unclean election): the settings traded it for availability or speed.
    KafkasDesign,
    /// Kafka promises it never happens: a bug, in Kafka or in this model of it.
    WouldBeABug,
}

/// What stopped chaos: the first anomaly a check named. (Fields are
/// named for what they hold.)
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Acknowledged records are gone from a partition's leader, and why.
    RecordsLost {
        partition: String,
        records: usize,
        causes: Vec<LossCause>,
    },
    /// A safety invariant broke.
    InvariantViolated { invariant: Invariant },
    /// Jepsen's checks over the run's history found an anomaly (`class` as
    /// Jepsen names it) on a partition; `allowed_here` when the run's
    /// settings or an earlier named loss explain it.
    Jepsen {
        class: String,
        partition: String,
        allowed_here: bool,
    },
}

impl Finding {
    /// The finding a trace event is, if it is one.
    pub fn of(kind: &TraceKind) -> Option<Finding> {
        match kind {
            TraceKind::RecordsLost {
                partition,
                records,
                reason,
            } => Some(Finding::RecordsLost {
                partition: partition.to_string(),
                records: records.len(),
                causes: reason.causes.clone(),
            }),
            TraceKind::InvariantViolated { invariant, .. } => {
                Some(Finding::InvariantViolated { invariant: *invariant })
            }
            _ => None,
        }
    }

    /// Kafka's design, or a bug.
    pub fn judgement(&self) -> Judgement {
        match self {
            // Every cause the ledger names is a setting's trade-off or a
            // correlated power loss: Kafka documents each.
            Finding::RecordsLost { .. } => Judgement::KafkasDesign,
            Finding::InvariantViolated { .. } => Judgement::WouldBeABug,
            Finding::Jepsen { allowed_here, .. } => {
                if *allowed_here {
                    Judgement::KafkasDesign
                } else {
                    Judgement::WouldBeABug
                }
            }
        }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::RecordsLost {
                partition,
                records,
                causes,
            } => {
                let causes: Vec<String> = causes.iter().map(ToString::to_string).collect();
                write!(
                    formatter,
                    "{records} acknowledged record{} lost from {partition}: {}",
                    if *records == 1 { "" } else { "s" },
                    causes.join("; ")
                )
            }
            Finding::InvariantViolated { invariant } => write!(formatter, "an invariant broke: {invariant}"),
            Finding::Jepsen { class, partition, .. } => {
                write!(formatter, "Jepsen's checks found a {class} on {partition}")
            }
        }
    }
}

impl Finding {
    /// Why it is Kafka's design or would be a bug, in a sentence.
    pub fn why(&self) -> &'static str {
        match self {
            Finding::RecordsLost { causes, .. } => match causes.first() {
                Some(LossCause::PowerLoss) => {
                    "Kafka's design: Kafka does not sync each write to disk (log.flush.interval.messages and log.flush.interval.ms are unset by default) and leaves durability to replication, so a power loss of every replica that had them takes what no disk held yet."
                }
                Some(LossCause::AcksOneUnreplicated) => {
                    "Kafka's design: with acks=1 the leader answers before any follower has the records, so a failover can lose them."
                }
                Some(LossCause::AcksAllMissing) => {
                    "Kafka's design: with min.insync.replicas=1, acks=all is met by the leader alone, so a failover can lose what only it had."
                }
                Some(LossCause::NoGuarantee) => "Kafka's design: acks=0 promises nothing.",
                Some(LossCause::UncleanElection) | None => {
                    "Kafka's design: unclean.leader.election.enable trades the records only the old leader had for a partition that is available again."
                }
            },
            Finding::InvariantViolated { .. } => {
                "This would be a bug: Kafka promises this never happens, whatever the faults (in Kafka, or in this model of it)."
            }
            Finding::Jepsen { allowed_here: true, .. } => {
                "Kafka's design: this run's settings (acks, idempotence, min.insync.replicas, unclean election) or a loss the trace already named explain it."
            }
            Finding::Jepsen { allowed_here: false, .. } => {
                "This would be a bug: with acks=all, idempotence, min.insync.replicas of 2 and clean elections, and no loss named, Kafka promises this never happens."
            }
        }
    }
}

/// Whether trace event `kind` is a finding chaos stops at.
pub fn is_finding(kind: &TraceKind) -> bool {
    matches!(
        kind,
        TraceKind::RecordsLost { .. } | TraceKind::InvariantViolated { .. }
    )
}

/// What in `config` lets acknowledged records go or arrive twice or out of
/// order (`acks` other than all, idempotence off, `min.insync.replicas`
/// 1, unclean election): empty for a configuration Kafka makes safe.
pub fn weakened_guarantees(config: &ClusterConfig) -> Vec<String> {
    let mut weak = Vec::new();
    if config
        .producers
        .iter()
        .any(|producer| producer.acks != crate::replication::high_watermark::Acks::All)
    {
        weak.push("a producer without acks=all".to_string());
    }
    if config.producers.iter().any(|producer| !producer.idempotence()) {
        weak.push("a producer without idempotence".to_string());
    }
    if config.topics.iter().any(|topic| topic.min_insync_replicas < 2) {
        weak.push("min.insync.replicas=1".to_string());
    }
    if config.unclean_leader_election_enable {
        weak.push("unclean.leader.election.enable=true".to_string());
    }
    weak
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> ClusterConfig {
        crate::sim::fuzz::FuzzCase::generate(3, crate::sim::fuzz::Mix::All).config
    }

    /// The same settings and window give the same faults; another seed
    /// others; every fault heals within its window plus twelve seconds and
    /// names only nodes the cluster has.
    #[test]
    fn windows_are_deterministic_heal_and_name_real_nodes() {
        let config = config();
        let settings = ChaosSettings {
            per_minute: 30,
            ..ChaosSettings::default()
        };
        let first = window(&config, &settings, 5_000, 3);
        assert_eq!(first, window(&config, &settings, 5_000, 3));
        let other = ChaosSettings {
            seed: 2,
            ..settings.clone()
        };
        assert_ne!(first, window(&config, &other, 5_000, 3));
        let mut kinds = std::collections::BTreeSet::new();
        for index in 0..200 {
            let faults = window(&config, &settings, 5_000, index);
            // 30 a minute: 5 a window.
            assert!(faults.len() <= 5);
            for fault in faults {
                kinds.insert(fault.kind);
                let start = 5_000 + index * WINDOW_MS;
                assert!((start..start + WINDOW_MS).contains(&fault.at_ms));
                assert!(fault.heals_at_ms >= fault.at_ms + 2_000 && fault.heals_at_ms < fault.at_ms + 12_000);
                assert!(fault
                    .inputs
                    .iter()
                    .all(|input| input.at_ms >= fault.at_ms && input.at_ms <= fault.heals_at_ms));
                let unknown = crate::sim::input_names::first_unknown(&config, &fault.inputs);
                assert!(
                    unknown.is_none(),
                    "names only what exists: {:?}",
                    unknown.map(|u| u.message)
                );
            }
        }
        assert_eq!(kinds.len(), FaultKind::ALL.len(), "every kind is drawn");
    }

    /// A loss the ledger names is Kafka's design, with the setting or
    /// fault that allows it; a broken invariant, or a finding of Jepsen's
    /// that nothing in the run explains, would be a bug.
    #[test]
    fn findings_say_whether_they_are_kafkas_design_or_a_bug() {
        let lost = |cause| Finding::RecordsLost {
            partition: "orders-0".into(),
            records: 3,
            causes: vec![cause],
        };
        for (cause, setting) in [
            (LossCause::PowerLoss, "log.flush.interval.messages"),
            (LossCause::AcksOneUnreplicated, "acks=1"),
            (LossCause::AcksAllMissing, "min.insync.replicas=1"),
            (LossCause::NoGuarantee, "acks=0"),
            (LossCause::UncleanElection, "unclean.leader.election.enable"),
        ] {
            assert_eq!(lost(cause).judgement(), Judgement::KafkasDesign);
            assert!(lost(cause).why().starts_with("Kafka's design") && lost(cause).why().contains(setting));
        }
        assert_eq!(
            lost(LossCause::PowerLoss).to_string(),
            "3 acknowledged records lost from orders-0: a power loss erased them from the replica that now leads before they were flushed to disk"
        );
        let broken = Finding::InvariantViolated {
            invariant: Invariant::OneLeaderPerEpoch,
        };
        assert_eq!(broken.judgement(), Judgement::WouldBeABug);
        assert!(broken.why().starts_with("This would be a bug"));
        assert_eq!(
            broken.to_string(),
            "an invariant broke: two brokers led a partition in the same leader epoch"
        );
        let jepsen = |allowed_here| Finding::Jepsen {
            class: "lost write".into(),
            partition: "orders-1".into(),
            allowed_here,
        };
        assert_eq!(jepsen(true).judgement(), Judgement::KafkasDesign);
        assert_eq!(jepsen(false).judgement(), Judgement::WouldBeABug);
        assert_eq!(
            jepsen(false).to_string(),
            "Jepsen's checks found a lost write on orders-1"
        );
    }

    /// Only the kinds chosen are drawn; settings out of range draw nothing.
    #[test]
    fn only_the_chosen_kinds_and_rates_are_drawn() {
        let config = config();
        let settings = ChaosSettings {
            kinds: vec![FaultKind::Pause],
            per_minute: 60,
            ..ChaosSettings::default()
        };
        let faults: Vec<ChaosFault> = (0..20).flat_map(|index| window(&config, &settings, 0, index)).collect();
        assert_eq!(faults.len(), 200);
        assert!(faults.iter().all(|fault| fault.kind == FaultKind::Pause));
        for wrong in [
            ChaosSettings {
                kinds: Vec::new(),
                ..ChaosSettings::default()
            },
            ChaosSettings {
                per_minute: 0,
                ..ChaosSettings::default()
            },
            ChaosSettings {
                per_minute: 61,
                ..ChaosSettings::default()
            },
        ] {
            assert!(wrong.check().is_err());
            assert!(window(&config, &wrong, 0, 0).is_empty());
        }
    }
}
