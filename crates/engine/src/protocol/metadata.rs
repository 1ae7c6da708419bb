//! The KRaft metadata the controllers replicate and the brokers apply: a
//! partition's registration, the records of `__cluster_metadata`, the
//! controller state an entry of that log leaves behind, the image a
//! broker applies and the answer to a fetch of the log. The rules that
//! change them live above: elections in `crate::controller`, the quorum
//! and the active controller in `crate::sim`.

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use serde::Serialize;

use super::{BrokerId, ErrorCode, TopicPartition};

/// Whether the partition's leader has recovered its log after an unclean
/// election (`LeaderRecoveryState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LeaderRecovery {
    /// Normal.
    Recovered,
    /// Elected uncleanly; the log may have lost committed records.
    Recovering,
}

fn is_empty(list: &[BrokerId]) -> bool {
    list.is_empty()
}

/// The controller's view of one partition (`PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionRegistration {
    /// Assigned replicas; the first is the preferred leader. During a
    /// reassignment: the target replicas followed by those being removed.
    pub replicas: Vec<BrokerId>,
    /// In-sync replicas.
    pub isr: Vec<BrokerId>,
    /// The leader, `None` when the partition is offline (Kafka's -1).
    pub leader: Option<BrokerId>,
    /// Bumped whenever leadership is (re)assigned.
    pub leader_epoch: u32,
    /// Bumped by every change.
    pub partition_epoch: u32,
    /// Clean or recovering after an unclean election.
    pub leader_recovery: LeaderRecovery,
    /// Eligible leader replicas (KIP-966): replicas that left the ISR while
    /// it was below `min.insync.replicas` and can still lead cleanly.
    #[serde(skip_serializing_if = "is_empty")]
    pub elr: Vec<BrokerId>,
    /// The last known ELR; with balanced recovery, just the last leader
    /// before the ISR became empty (`lastKnownElr`). `None` is Kafka's -1:
    /// Kafka stores the leader field as it is, even when there was none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub last_known_elr: Vec<Option<BrokerId>>,
    /// Replicas an ongoing reassignment removes (`removingReplicas`).
    #[serde(skip_serializing_if = "is_empty")]
    pub removing_replicas: Vec<BrokerId>,
    /// Replicas an ongoing reassignment adds (`addingReplicas`).
    #[serde(skip_serializing_if = "is_empty")]
    pub adding_replicas: Vec<BrokerId>,
}

impl PartitionRegistration {
    /// A registration with no ELR and no reassignment in progress.
    pub fn new(
        replicas: Vec<BrokerId>,
        isr: Vec<BrokerId>,
        leader: Option<BrokerId>,
        leader_epoch: u32,
        partition_epoch: u32,
    ) -> Self {
        PartitionRegistration {
            replicas,
            isr,
            leader,
            leader_epoch,
            partition_epoch,
            leader_recovery: LeaderRecovery::Recovered,
            elr: Vec::new(),
            last_known_elr: Vec::new(),
            removing_replicas: Vec::new(),
            adding_replicas: Vec::new(),
        }
    }
}

/// What the controller knows about a broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokerRegistrationState {
    /// The broker epoch: the metadata offset of its registration.
    pub epoch: u64,
    /// Fenced brokers lead nothing and are in no ISR.
    pub fenced: bool,
    /// The process incarnation that registered (a restart is a new one).
    pub incarnation: u32,
    /// In a controlled shutdown: leadership and ISR membership are moving
    /// off it, and it may not be elected.
    pub in_controlled_shutdown: bool,
}

/// The controller's state: what the committed metadata log says about the
/// cluster at an offset (each log entry carries the state after it). The
/// active controller's rules that change it live in `crate::sim::controller`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Controller {
    /// The metadata log offset.
    pub offset: u64,
    /// Every partition.
    pub partitions: BTreeMap<TopicPartition, PartitionRegistration>,
    /// Registered brokers.
    pub brokers: BTreeMap<BrokerId, BrokerRegistrationState>,
    /// Leader elections committed.
    pub elections: u64,
    /// `unclean.leader.election.enable`, cluster-wide.
    pub unclean_leader_election_enable: bool,
    /// The finalized `transaction.version` feature level (a
    /// `FeatureLevelRecord`).
    pub transaction_version: super::transactions::TransactionVersion,
}

impl Controller {
    /// Brokers that may lead: registered, unfenced and not shutting down
    /// (`ClusterControlManager#isActive`).
    pub fn acceptable(&self) -> BTreeSet<BrokerId> {
        self.brokers
            .iter()
            .filter(|(_, state)| !state.fenced && !state.in_controlled_shutdown)
            .map(|(&id, _)| id)
            .gather()
    }

    /// The image brokers receive.
    pub fn image(&self) -> MetadataImage {
        MetadataImage {
            offset: self.offset,
            partitions: self.partitions.clone(),
            fenced: self
                .brokers
                .iter()
                .filter(|(_, state)| state.fenced)
                .map(|(&id, _)| id)
                .gather(),
            registered: self.brokers.keys().copied().gather(),
            transaction_version: self.transaction_version,
        }
    }
}

/// The records that turn `before` into `after` (what one metadata log entry
/// stands for); a new leader's first entry with no change is its
/// `LeaderChangeMessage`.
pub fn records_between(before: &Controller, after: &Controller, first_of_epoch: bool) -> Vec<MetadataRecord> {
    let mut records = Vec::new();
    if first_of_epoch {
        records.push(MetadataRecord::LeaderChange);
    }
    if before.unclean_leader_election_enable != after.unclean_leader_election_enable {
        records.push(MetadataRecord::Config {
            name: "unclean.leader.election.enable".to_string(),
            value: after.unclean_leader_election_enable.to_string(),
        });
    }
    if before.transaction_version != after.transaction_version {
        records.push(MetadataRecord::FeatureLevel {
            name: "transaction.version".to_string(),
            level: after.transaction_version.0,
        });
    }
    for (&broker, state) in &after.brokers {
        match before.brokers.get(&broker) {
            Some(old) if old.epoch == state.epoch => {
                let fenced = (old.fenced != state.fenced).then_some(state.fenced);
                let in_controlled_shutdown = (old.in_controlled_shutdown != state.in_controlled_shutdown)
                    .then_some(state.in_controlled_shutdown);
                if fenced.is_some() || in_controlled_shutdown.is_some() {
                    records.push(MetadataRecord::BrokerRegistrationChange {
                        broker,
                        fenced,
                        in_controlled_shutdown,
                    });
                }
            }
            _ => records.push(MetadataRecord::RegisterBroker {
                broker,
                broker_epoch: state.epoch,
            }),
        }
    }
    for (partition, registration) in &after.partitions {
        match before.partitions.get(partition) {
            None => records.push(MetadataRecord::Partition {
                partition: partition.clone(),
                replicas: registration.replicas.clone(),
            }),
            Some(old) if old != registration => records.push(MetadataRecord::PartitionChange {
                partition: partition.clone(),
                leader: registration.leader,
                isr: registration.isr.clone(),
                elr: registration.elr.clone(),
                leader_epoch: registration.leader_epoch,
                partition_epoch: registration.partition_epoch,
            }),
            Some(_) => {}
        }
    }
    records
}

/// One metadata log entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogEntry {
    /// The epoch it was written in.
    pub epoch: u32,
    /// The records it stands for.
    pub records: Rc<[MetadataRecord]>,
    /// The controller state after it.
    #[serde(skip)]
    pub state: Rc<Controller>,
}

/// The answer to a fetch of the metadata log: entries from `from_offset`
/// and the high watermark; or where the fetcher's log diverged; or an error
/// naming the leader the responder knows.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetadataFetchAnswer {
    pub epoch: u32,
    pub leader: Option<u32>,
    pub error: Option<ErrorCode>,
    pub from_offset: usize,
    pub entries: Vec<LogEntry>,
    pub high_watermark: usize,
    pub diverging: Option<(u32, usize)>,
}

/// The metadata log's topic partition.
pub const METADATA_PARTITION: &str = "__cluster_metadata-0";

/// One record of the metadata log, as the controller writes it (Kafka's
/// `metadata/src/main/resources/common/metadata/*Record.json`; fields
/// mirror the record's fields of the same name).
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum MetadataRecord {
    /// The cluster as the run starts (a bootstrap snapshot: brokers
    /// registered, topics created).
    Bootstrap,
    /// A new quorum leader's first entry (`LeaderChangeMessage`, a control
    /// record).
    LeaderChange,
    /// `ConfigRecord`: a cluster-wide setting changed.
    Config { name: String, value: String },
    /// `FeatureLevelRecord`: a feature finalized at a level
    /// (`kafka-features upgrade`/`downgrade`).
    FeatureLevel { name: String, level: u8 },
    /// `RegisterBrokerRecord`: a broker registered, with its new epoch.
    RegisterBroker { broker: BrokerId, broker_epoch: u64 },
    /// `BrokerRegistrationChangeRecord`: fenced or unfenced, or entering a
    /// controlled shutdown.
    BrokerRegistrationChange {
        broker: BrokerId,
        fenced: Option<bool>,
        in_controlled_shutdown: Option<bool>,
    },
    /// `PartitionRecord`: a new partition.
    Partition {
        partition: TopicPartition,
        replicas: Vec<BrokerId>,
    },
    /// `PartitionChangeRecord`: a new leader, ISR, ELR or recovery state.
    PartitionChange {
        partition: TopicPartition,
        leader: Option<BrokerId>,
        isr: Vec<BrokerId>,
        elr: Vec<BrokerId>,
        leader_epoch: u32,
        partition_epoch: u32,
    },
}

impl std::fmt::Display for MetadataRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetadataRecord::Bootstrap => write!(f, "bootstrap snapshot"),
            MetadataRecord::LeaderChange => write!(f, "LeaderChangeMessage"),
            MetadataRecord::Config { name, value } => write!(f, "ConfigRecord {name}={value}"),
            MetadataRecord::FeatureLevel { name, level } => write!(f, "FeatureLevelRecord {name}={level}"),
            MetadataRecord::RegisterBroker { broker, broker_epoch } => {
                write!(f, "RegisterBrokerRecord broker={broker} brokerEpoch={broker_epoch}")
            }
            MetadataRecord::BrokerRegistrationChange {
                broker,
                fenced,
                in_controlled_shutdown,
            } => {
                write!(f, "BrokerRegistrationChangeRecord broker={broker}")?;
                if let Some(fenced) = fenced {
                    write!(f, " fenced={fenced}")?;
                }
                if let Some(shutdown) = in_controlled_shutdown {
                    write!(f, " inControlledShutdown={shutdown}")?;
                }
                Ok(())
            }
            MetadataRecord::Partition { partition, replicas } => {
                write!(f, "PartitionRecord {partition} replicas={replicas:?}")
            }
            MetadataRecord::PartitionChange {
                partition,
                leader,
                isr,
                elr,
                leader_epoch,
                partition_epoch,
            } => {
                let leader = leader.map_or("none".to_string(), |leader| leader.to_string());
                write!(f, "PartitionChangeRecord {partition} leader={leader} isr={isr:?}")?;
                if !elr.is_empty() {
                    write!(f, " elr={elr:?}")?;
                }
                write!(f, " leaderEpoch={leader_epoch} partitionEpoch={partition_epoch}")
            }
        }
    }
}

/// The metadata a broker has applied: the committed controller state at an
/// offset of the metadata log, as its `MetadataImage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetadataImage {
    /// The metadata log offset of this image.
    pub offset: u64,
    /// Every partition's registration.
    pub partitions: BTreeMap<TopicPartition, PartitionRegistration>,
    /// Brokers currently fenced.
    pub fenced: BTreeSet<BrokerId>,
    /// Registered brokers.
    pub registered: BTreeSet<BrokerId>,
    /// The finalized `transaction.version`.
    pub transaction_version: super::transactions::TransactionVersion,
}
