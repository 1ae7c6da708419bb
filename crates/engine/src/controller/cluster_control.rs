//! Broker registration, heartbeats, fencing and the elections they cause,
//! as the KRaft controller runs them: `ClusterControlManager`,
//! `BrokerHeartbeatManager` and the broker-facing parts of
//! `ReplicationControlManager`, wired the way `QuorumController` wires
//! them (`metadata/src/main/java/org/apache/kafka/controller/`).
//!
//! The model is pure and deterministic: a metadata log that is just an
//! offset counter (the first record gets offset 1), a millisecond clock
//! that only moves when told, and no timers — session expiry
//! ([`ClusterControl::expire`]) and the periodic unclean-election pass
//! ([`ClusterControl::unclean_election_pass`]) run only when called.
//!
//! Every operation first *generates* its records from the state as it
//! stands (so the partitions one operation touches are each decided from
//! the same state), then *replays* them one by one in log order
//! (`QuorumController.replay`), as the active controller does. A broker's
//! epoch is the log offset the controller was about to write when it
//! registered; every partition election goes through
//! [`PartitionChange`](super::partition_change::PartitionChange) with
//! Kafka's own settings.
//!
//! Not modelled: AlterPartition, reassignments, unregistration, log
//! directories (every replica's directory counts as online), `wantFence`
//! heartbeats, brokers behind on metadata, Raft and controller failover.

use crate::sorting::Gather;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::partition_change::{Election, PartitionChange, PartitionChangeRecord, PartitionRegistration};
use crate::protocol::BrokerId;

/// `broker.session.timeout.ms` (9000).
pub const BROKER_SESSION_TIMEOUT_MS_DEFAULT: u64 = 9000;

/// The controller's `maxElectionsPerImbalance` (1000): the most elections
/// one periodic pass writes before asking to run again at once.
pub const MAX_ELECTIONS_PER_IMBALANCE: usize = 1000;

/// `min.insync.replicas`.
pub const MIN_INSYNC_REPLICAS_CONFIG: &str = "min.insync.replicas";

/// `unclean.leader.election.enable`.
pub const UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG: &str = "unclean.leader.election.enable";

/// Why the controller refused an operation (the Java exception's simple
/// name is [`ControllerError::name`]); the state is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ControllerError {
    /// A new incarnation of a broker whose session is still valid
    /// (`DuplicateBrokerRegistrationException`).
    DuplicateBrokerRegistration,
    /// A heartbeat from an unregistered broker or with another epoch
    /// (`StaleBrokerEpochException`).
    StaleBrokerEpoch,
    /// A topic assignment names an unregistered broker
    /// (`BrokerIdNotRegisteredException`, from
    /// `validateManualPartitionAssignment`).
    BrokerIdNotRegistered,
    /// A topic assignment that is empty, repeats a broker or has fenced
    /// brokers only (`InvalidReplicaAssignmentException`).
    InvalidReplicaAssignment,
    /// A topic that already exists (`TopicExistsException`).
    TopicExists,
}

impl ControllerError {
    /// The Java exception's simple name.
    pub fn name(self) -> &'static str {
        match self {
            ControllerError::DuplicateBrokerRegistration => "DuplicateBrokerRegistrationException",
            ControllerError::StaleBrokerEpoch => "StaleBrokerEpochException",
            ControllerError::BrokerIdNotRegistered => "BrokerIdNotRegisteredException",
            ControllerError::InvalidReplicaAssignment => "InvalidReplicaAssignmentException",
            ControllerError::TopicExists => "TopicExistsException",
        }
    }
}

/// A record in the metadata log, reduced to what the model replays.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
pub enum MetadataRecord {
    /// A cluster-level config (`ConfigRecord`).
    Config {
        /// The config name.
        name: String,
        /// Its value.
        value: String,
    },
    /// A new topic (`TopicRecord`).
    Topic {
        /// The topic name (topic ids are replaced by names).
        topic: String,
    },
    /// A new partition (`PartitionRecord`).
    Partition {
        /// The topic.
        topic: String,
        /// The partition index.
        partition: u32,
        /// Its initial registration.
        registration: PartitionRegistration,
    },
    /// A change to a partition (`PartitionChangeRecord`).
    PartitionChange {
        /// The topic.
        topic: String,
        /// The partition index.
        partition: u32,
        /// The change.
        change: PartitionChangeRecord,
    },
    /// A broker (re-)registration (`RegisterBrokerRecord`).
    RegisterBroker {
        /// The broker.
        broker: BrokerId,
        /// Its epoch.
        broker_epoch: u64,
        /// The incarnation (a label; Kafka's incarnation id).
        incarnation: u64,
        /// Whether it starts fenced.
        fenced: bool,
        /// Whether it is in controlled shutdown.
        in_controlled_shutdown: bool,
    },
    /// A change to a registration (`BrokerRegistrationChangeRecord`);
    /// `None` fields are unchanged.
    BrokerRegistrationChange {
        /// The broker.
        broker: BrokerId,
        /// The epoch the change applies to.
        broker_epoch: u64,
        /// Fence (`Some(true)`) or unfence (`Some(false)`).
        fenced: Option<bool>,
        /// Entering controlled shutdown.
        in_controlled_shutdown: Option<bool>,
    },
}

impl MetadataRecord {
    /// Kafka's `MetadataRecordType` name, e.g. `PARTITION_CHANGE_RECORD`.
    pub fn type_name(&self) -> &'static str {
        match self {
            MetadataRecord::Config { .. } => "CONFIG_RECORD",
            MetadataRecord::Topic { .. } => "TOPIC_RECORD",
            MetadataRecord::Partition { .. } => "PARTITION_RECORD",
            MetadataRecord::PartitionChange { .. } => "PARTITION_CHANGE_RECORD",
            MetadataRecord::RegisterBroker { .. } => "REGISTER_BROKER_RECORD",
            MetadataRecord::BrokerRegistrationChange { .. } => "BROKER_REGISTRATION_CHANGE_RECORD",
        }
    }
}

/// A record and the log offset it was written at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WrittenRecord {
    /// The metadata log offset.
    pub offset: u64,
    /// The record.
    pub record: MetadataRecord,
}

/// The controller's registration of a broker (`BrokerRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokerRegistration {
    /// The broker id.
    pub id: BrokerId,
    /// The broker epoch: the log offset at which it registered.
    pub epoch: u64,
    /// The incarnation (a new one per broker process start).
    pub incarnation: u64,
    /// Fenced brokers can neither lead nor join an ISR.
    pub fenced: bool,
    /// Set when the broker enters controlled shutdown; only a new
    /// incarnation clears it (fencing does not).
    pub in_controlled_shutdown: bool,
}

/// A broker heartbeat (`BrokerHeartbeatRequestData`, with
/// `wantFence=false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heartbeat {
    /// The broker.
    pub broker: BrokerId,
    /// The epoch the broker believes it has.
    pub broker_epoch: u64,
    /// The last metadata offset the broker has applied.
    pub current_metadata_offset: u64,
    /// The broker is shutting down.
    pub want_shut_down: bool,
}

/// The controller's answer to a heartbeat (`BrokerHeartbeatReply`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct HeartbeatReply {
    /// The broker has applied its own registration record.
    pub is_caught_up: bool,
    /// The broker is fenced.
    pub is_fenced: bool,
    /// The broker is in controlled shutdown.
    pub in_controlled_shutdown: bool,
    /// The broker may shut down now.
    pub should_shut_down: bool,
}

/// The kind of admin leader election (`ElectionType`), spelt as Kafka's
/// enum (`PREFERRED`) or as `kafka-leader-election --election-type`
/// takes it (`preferred`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "UPPERCASE")]
pub enum ElectionType {
    /// Move leadership back to the preferred replica.
    #[serde(alias = "preferred")]
    Preferred,
    /// Elect a leader for leaderless partitions, from outside the ISR if needed.
    #[serde(alias = "unclean")]
    Unclean,
}

impl std::fmt::Display for ElectionType {
    /// As `--election-type` takes it.
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            ElectionType::Preferred => "preferred",
            ElectionType::Unclean => "unclean",
        })
    }
}

/// One partition's outcome in an `ElectLeaders` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElectionOutcome {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// Kafka's error name: `NONE`, `PREFERRED_LEADER_NOT_AVAILABLE` or
    /// `ELIGIBLE_LEADERS_NOT_AVAILABLE` (`ELECTION_NOT_NEEDED` is left out
    /// when electing for all partitions).
    pub error: &'static str,
}

/// `BrokerControlState`: where a heartbeat leaves a broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BrokerControlState {
    Fenced,
    Unfenced,
    ControlledShutdown,
    ShutdownNow,
}

impl BrokerControlState {
    fn fenced(self) -> bool {
        matches!(self, BrokerControlState::Fenced | BrokerControlState::ShutdownNow)
    }
}

/// `BrokerHeartbeatState`: the heartbeat manager's view of one broker.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeartbeatState {
    /// The last contact (`lastContactNs`, in ms here).
    last_contact_ms: u64,
    /// When it was (re)inserted in the unfenced list: the list is in
    /// ascending last-contact order, and a broker touched at the same time
    /// as another goes after it.
    list_position: u64,
    /// The last metadata offset it reported (-1 = none).
    metadata_offset: i64,
    /// The offset at which its controlled shutdown completes, if shutting down.
    controlled_shutdown_offset: Option<u64>,
    /// In the unfenced list.
    unfenced: bool,
}

/// The KRaft controller's broker and partition state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterControl {
    /// The clock (ms).
    now_ms: u64,
    /// `broker.session.timeout.ms`.
    session_timeout_ms: u64,
    /// `eligible.leader.replicas.enable` (KIP-966).
    eligible_leader_replicas_enabled: bool,
    /// The next metadata log offset (the log starts at 1).
    next_offset: u64,
    /// Cluster-level configs.
    configs: BTreeMap<String, String>,
    /// Registered brokers.
    brokers: BTreeMap<BrokerId, BrokerRegistration>,
    /// The offset of each broker's latest `RegisterBrokerRecord`.
    register_offsets: BTreeMap<BrokerId, u64>,
    /// `BrokerHeartbeatManager`'s per-broker state.
    heartbeats: BTreeMap<BrokerId, HeartbeatState>,
    /// Counter for [`HeartbeatState::list_position`].
    touches: u64,
    /// Partitions by topic name, in partition order.
    topics: BTreeMap<String, Vec<PartitionRegistration>>,
    /// Kafka 4.0's last-known-leader rule instead of 4.1's
    /// ([`PartitionChange::elect_unacceptable_last_known_leader`]); the
    /// vectors come from the 4.0 line.
    pub kafka_4_0_last_known_leader: bool,
}

/// A partition, by topic name and index.
type PartitionKey = (String, u32);

impl ClusterControl {
    /// An empty cluster: clock at 0, log empty (next offset 1).
    pub fn new(session_timeout_ms: u64, eligible_leader_replicas_enabled: bool) -> Self {
        ClusterControl {
            now_ms: 0,
            session_timeout_ms,
            eligible_leader_replicas_enabled,
            next_offset: 1,
            configs: BTreeMap::new(),
            brokers: BTreeMap::new(),
            register_offsets: BTreeMap::new(),
            heartbeats: BTreeMap::new(),
            touches: 0,
            topics: BTreeMap::new(),
            kafka_4_0_last_known_leader: false,
        }
    }

    /// The clock (ms).
    pub fn now_ms(&self) -> u64 {
        self.now_ms
    }

    /// The offset the next record gets.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// Registered brokers by id.
    pub fn brokers(&self) -> &BTreeMap<BrokerId, BrokerRegistration> {
        &self.brokers
    }

    /// Partitions by topic name, in partition order.
    pub fn topics(&self) -> &BTreeMap<String, Vec<PartitionRegistration>> {
        &self.topics
    }

    /// Moves the clock (`MockTime.sleep`); nothing else happens.
    pub fn advance(&mut self, ms: u64) {
        self.now_ms += ms;
    }

    // ----- configs (`ConfigurationControlManager`) -----

    /// Sets a cluster-level config (one `ConfigRecord`).
    pub fn set_config(&mut self, name: &str, value: &str) -> Vec<WrittenRecord> {
        self.commit(vec![MetadataRecord::Config {
            name: name.to_string(),
            value: value.to_string(),
        }])
    }

    /// `uncleanLeaderElectionEnabledForTopic`: the cluster config, else
    /// false (topics here carry no config of their own).
    fn unclean_enabled(&self) -> bool {
        self.configs
            .get(UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG)
            .is_some_and(|value| value.eq_ignore_ascii_case("true"))
    }

    /// `getTopicEffectiveMinIsr`: `min.insync.replicas` (default 1), at
    /// most the replication factor of the topic's partition 0.
    fn effective_min_isr(&self, topic: &str) -> usize {
        let configured = self
            .configs
            .get(MIN_INSYNC_REPLICAS_CONFIG)
            .and_then(|value| value.parse::<usize>().ok())
            .unwrap_or(1);
        let replication_factor = self
            .topics
            .get(topic)
            .and_then(|partitions| partitions.first())
            .map_or(usize::MAX, |partition| partition.replicas.len());
        configured.min(replication_factor)
    }

    // ----- brokers (`ClusterControlManager`) -----

    /// `isActive`: registered, unfenced and not in controlled shutdown.
    fn is_active(&self, broker: BrokerId) -> bool {
        self.brokers
            .get(&broker)
            .is_some_and(|registration| !registration.fenced && !registration.in_controlled_shutdown)
    }

    /// `BrokerHeartbeatManager.hasValidSession`: unfenced and heard from
    /// within the session timeout.
    fn has_valid_session(&self, broker: BrokerId) -> bool {
        self.heartbeats
            .get(&broker)
            .is_some_and(|state| state.unfenced && state.last_contact_ms + self.session_timeout_ms >= self.now_ms)
    }

    /// `ClusterControlManager.registerBroker` (with `QuorumController`
    /// passing the next write offset as the new epoch). A new incarnation
    /// first writes the unclean-shutdown changes of the old one
    /// (`handleBrokerUncleanShutdown`) and gets a new epoch, fenced; the
    /// same incarnation keeps its epoch and states. Returns the epoch.
    pub fn register_broker(
        &mut self,
        broker: BrokerId,
        incarnation: u64,
    ) -> Result<(u64, Vec<WrittenRecord>), ControllerError> {
        let existing = self.brokers.get(&broker).cloned();
        if let Some(existing) = &existing {
            if self.has_valid_session(broker) && existing.incarnation != incarnation {
                return Err(ControllerError::DuplicateBrokerRegistration);
            }
        }
        let new_epoch = self.next_offset;
        let mut records = Vec::new();
        let same_incarnation = existing
            .as_ref()
            .is_some_and(|existing| existing.incarnation == incarnation);
        let register = match existing.as_ref().filter(|_| same_incarnation) {
            Some(existing) => MetadataRecord::RegisterBroker {
                broker,
                broker_epoch: existing.epoch,
                incarnation,
                fenced: existing.fenced,
                in_controlled_shutdown: existing.in_controlled_shutdown,
            },
            None => {
                self.unclean_shutdown_changes(broker, &mut records);
                MetadataRecord::RegisterBroker {
                    broker,
                    broker_epoch: new_epoch,
                    incarnation,
                    fenced: true,
                    in_controlled_shutdown: false,
                }
            }
        };
        let (epoch, fenced) = match &register {
            MetadataRecord::RegisterBroker {
                broker_epoch, fenced, ..
            } => (*broker_epoch, *fenced),
            _ => unreachable!("a RegisterBrokerRecord"),
        };
        records.push(register);
        if !same_incarnation {
            self.heartbeats.remove(&broker);
        }
        self.heartbeat_register(broker, fenced);
        Ok((epoch, self.commit(records)))
    }

    /// `QuorumController.processBrokerHeartbeat` and
    /// `ReplicationControlManager.processBrokerHeartbeat`: checks the epoch,
    /// moves the broker through `calculateNextBrokerState` and writes what
    /// the transition needs (fence, unfence, or controlled shutdown).
    pub fn heartbeat(&mut self, request: Heartbeat) -> Result<(HeartbeatReply, Vec<WrittenRecord>), ControllerError> {
        let broker = request.broker;
        let register_offset = *self
            .register_offsets
            .get(&broker)
            .ok_or(ControllerError::StaleBrokerEpoch)?;
        // ClusterControlManager.checkBrokerEpoch
        match self.brokers.get(&broker) {
            Some(registration) if registration.epoch == request.broker_epoch => {}
            _ => return Err(ControllerError::StaleBrokerEpoch),
        }
        let current = self.current_state(broker);
        let next = self.next_state(broker, current, &request, register_offset);
        let mut records = Vec::new();
        if current != next {
            match next {
                BrokerControlState::Fenced | BrokerControlState::ShutdownNow => {
                    self.broker_fenced_changes(broker, &mut records)
                }
                BrokerControlState::Unfenced => {
                    self.broker_unfenced_changes(broker, request.broker_epoch, &mut records)
                }
                BrokerControlState::ControlledShutdown => {
                    self.controlled_shutdown_changes(broker, request.broker_epoch, &mut records)
                }
            }
        }
        self.touch(broker, next.fenced(), request.current_metadata_offset as i64);
        let reply = HeartbeatReply {
            is_caught_up: request.current_metadata_offset >= register_offset,
            is_fenced: next.fenced(),
            in_controlled_shutdown: next == BrokerControlState::ControlledShutdown,
            should_shut_down: next == BrokerControlState::ShutdownNow,
        };
        let written = self.commit(records);
        if next == BrokerControlState::ControlledShutdown {
            // processBatchEndOffset: the shutdown completes once every
            // active broker has applied the last offset of this batch.
            let batch_end = self.next_offset - 1;
            self.update_controlled_shutdown_offset(broker, batch_end);
        }
        Ok((reply, written))
    }

    /// `maybeFenceOneStaleBroker`, repeated until no broker is stale (the
    /// periodic fencing task): each pass fences the unfenced broker heard
    /// from least recently if its session expired. Returns the fenced
    /// brokers in order.
    pub fn expire(&mut self) -> (Vec<BrokerId>, Vec<WrittenRecord>) {
        let mut fenced = Vec::new();
        let mut written = Vec::new();
        while let Some(broker) = self.find_one_stale_broker() {
            let mut records = Vec::new();
            self.broker_fenced_changes(broker, &mut records);
            if let Some(state) = self.heartbeats.get_mut(&broker) {
                state.unfenced = false;
            }
            written.extend(self.commit(records));
            fenced.push(broker);
        }
        (fenced, written)
    }

    /// `maybeElectUncleanLeaders` (the periodic task): an unclean election
    /// for each leaderless partition of a topic that allows it. The flag is
    /// true when the pass hit [`MAX_ELECTIONS_PER_IMBALANCE`] and should run
    /// again at once.
    pub fn unclean_election_pass(&mut self) -> (bool, Vec<WrittenRecord>) {
        let mut records = Vec::new();
        for (topic, partition) in self.partitions_with_no_leader() {
            if records.len() >= MAX_ELECTIONS_PER_IMBALANCE {
                break;
            }
            if self.unclean_enabled() {
                self.elect_leader(&topic, partition, ElectionType::Unclean, &mut records);
            }
        }
        let reschedule = records.len() >= MAX_ELECTIONS_PER_IMBALANCE;
        (reschedule, self.commit(records))
    }

    /// `electLeaders` for every partition (the admin RPC with no
    /// partitions named): outcomes for the partitions that needed an
    /// election, in topic/partition order.
    pub fn elect_leaders(&mut self, election: ElectionType) -> (Vec<ElectionOutcome>, Vec<WrittenRecord>) {
        let mut records = Vec::new();
        let mut outcomes = Vec::new();
        for (topic, partition) in self.all_partitions() {
            if let Some(error) = self.elect_leader(&topic, partition, election, &mut records) {
                outcomes.push(ElectionOutcome {
                    topic,
                    partition,
                    error,
                });
            }
        }
        (outcomes, self.commit(records))
    }

    /// `createTopics` with explicit assignments: the ISR is the assigned
    /// brokers that are active, the leader its first member.
    pub fn create_topic(
        &mut self,
        topic: &str,
        assignment: &[Vec<BrokerId>],
    ) -> Result<Vec<WrittenRecord>, ControllerError> {
        if self.topics.contains_key(topic) {
            return Err(ControllerError::TopicExists);
        }
        let mut records = vec![MetadataRecord::Topic {
            topic: topic.to_string(),
        }];
        for (index, replicas) in assignment.iter().enumerate() {
            // validateManualPartitionAssignment
            let distinct: BTreeSet<BrokerId> = replicas.iter().copied().gather();
            if replicas.is_empty() || distinct.len() != replicas.len() {
                return Err(ControllerError::InvalidReplicaAssignment);
            }
            if replicas.iter().any(|broker| !self.brokers.contains_key(broker)) {
                return Err(ControllerError::BrokerIdNotRegistered);
            }
            let isr: Vec<BrokerId> = replicas
                .iter()
                .copied()
                .filter(|&broker| self.is_active(broker))
                .collect();
            let Some(&leader) = isr.first() else {
                return Err(ControllerError::InvalidReplicaAssignment);
            };
            records.push(MetadataRecord::Partition {
                topic: topic.to_string(),
                partition: index as u32,
                registration: PartitionRegistration::new(replicas.clone(), isr, Some(leader), 0, 0),
            });
        }
        Ok(self.commit(records))
    }

    // ----- the heartbeat manager (`BrokerHeartbeatManager`) -----

    /// `currentBrokerState`.
    fn current_state(&self, broker: BrokerId) -> BrokerControlState {
        match self.heartbeats.get(&broker) {
            Some(state) if state.controlled_shutdown_offset.is_some() => BrokerControlState::ControlledShutdown,
            Some(state) if state.unfenced => BrokerControlState::Unfenced,
            _ => BrokerControlState::Fenced,
        }
    }

    /// `calculateNextBrokerState` for a heartbeat without `wantFence`.
    fn next_state(
        &self,
        broker: BrokerId,
        current: BrokerControlState,
        request: &Heartbeat,
        register_offset: u64,
    ) -> BrokerControlState {
        match current {
            BrokerControlState::Fenced => {
                if request.want_shut_down {
                    BrokerControlState::ShutdownNow
                } else if request.current_metadata_offset >= register_offset {
                    BrokerControlState::Unfenced
                } else {
                    BrokerControlState::Fenced
                }
            }
            BrokerControlState::Unfenced => {
                if !request.want_shut_down {
                    BrokerControlState::Unfenced
                } else if self.has_leaderships(broker) {
                    BrokerControlState::ControlledShutdown
                } else {
                    BrokerControlState::ShutdownNow
                }
            }
            BrokerControlState::ControlledShutdown => {
                if self.has_leaderships(broker) {
                    return BrokerControlState::ControlledShutdown;
                }
                let shutdown_offset = self.heartbeats[&broker].controlled_shutdown_offset.unwrap_or(0) as i64;
                if shutdown_offset <= self.lowest_active_offset() {
                    BrokerControlState::ShutdownNow
                } else {
                    BrokerControlState::ControlledShutdown
                }
            }
            BrokerControlState::ShutdownNow => BrokerControlState::ShutdownNow,
        }
    }

    /// `lowestActiveOffset`: the lowest metadata offset reported by an
    /// active broker (unfenced, not shutting down), or `i64::MAX`.
    fn lowest_active_offset(&self) -> i64 {
        self.heartbeats
            .values()
            .filter(|state| state.unfenced && state.controlled_shutdown_offset.is_none())
            .map(|state| state.metadata_offset)
            .min()
            .unwrap_or(i64::MAX)
    }

    /// `touch`: records contact now; a fenced broker leaves controlled
    /// shutdown and the unfenced list, an unfenced one goes to the end of it.
    fn touch(&mut self, broker: BrokerId, fenced: bool, metadata_offset: i64) {
        self.touches += 1;
        let position = self.touches;
        let now = self.now_ms;
        let state = self.heartbeats.get_mut(&broker).expect("a registered broker");
        state.last_contact_ms = now;
        state.list_position = position;
        state.metadata_offset = metadata_offset;
        if fenced {
            state.controlled_shutdown_offset = None;
            state.unfenced = false;
        } else {
            state.unfenced = true;
        }
    }

    /// `BrokerHeartbeatManager.register`: tracks a broker, keeping its
    /// reported offset only when its fencing changes.
    fn heartbeat_register(&mut self, broker: BrokerId, fenced: bool) {
        let metadata_offset = match self.heartbeats.get(&broker) {
            None => {
                self.heartbeats.insert(
                    broker,
                    HeartbeatState {
                        last_contact_ms: 0,
                        list_position: 0,
                        metadata_offset: -1,
                        controlled_shutdown_offset: None,
                        unfenced: false,
                    },
                );
                -1
            }
            Some(state) if state.unfenced == fenced => state.metadata_offset,
            Some(_) => -1,
        };
        self.touch(broker, fenced, metadata_offset);
    }

    /// `maybeUpdateControlledShutdownOffset`: set once per shutdown.
    fn update_controlled_shutdown_offset(&mut self, broker: BrokerId, offset: u64) {
        if let Some(state) = self.heartbeats.get_mut(&broker) {
            if state.controlled_shutdown_offset.is_none() {
                state.controlled_shutdown_offset = Some(offset);
            }
        }
    }

    /// `findOneStaleBroker`: the head of the unfenced list, if its
    /// session has expired.
    fn find_one_stale_broker(&self) -> Option<BrokerId> {
        let (&broker, state) = self
            .heartbeats
            .iter()
            .filter(|(_, state)| state.unfenced)
            .min_by_key(|(_, state)| (state.last_contact_ms, state.list_position))?;
        (state.last_contact_ms + self.session_timeout_ms < self.now_ms).then_some(broker)
    }

    // ----- partitions (`ReplicationControlManager`) -----

    fn all_partitions(&self) -> Vec<PartitionKey> {
        self.topics
            .iter()
            .flat_map(|(topic, partitions)| (0..partitions.len() as u32).map(move |index| (topic.clone(), index)))
            .collect()
    }

    fn partition(&self, (topic, index): &PartitionKey) -> &PartitionRegistration {
        &self.topics[topic][*index as usize]
    }

    fn partitions_where(&self, keep: impl Fn(&PartitionRegistration) -> bool) -> Vec<PartitionKey> {
        self.all_partitions()
            .into_iter()
            .filter(|key| keep(self.partition(key)))
            .collect()
    }

    /// `BrokersToIsrs.partitionsWithBrokerInIsr`.
    fn partitions_with_broker_in_isr(&self, broker: BrokerId) -> Vec<PartitionKey> {
        self.partitions_where(|partition| partition.isr.contains(&broker))
    }

    /// `BrokersToElrs.partitionsWithBrokerInElr`.
    fn partitions_with_broker_in_elr(&self, broker: BrokerId) -> Vec<PartitionKey> {
        self.partitions_where(|partition| partition.elr.contains(&broker))
    }

    /// `BrokersToIsrs.partitionsWithNoLeader`.
    fn partitions_with_no_leader(&self) -> Vec<PartitionKey> {
        self.partitions_where(|partition| partition.leader.is_none())
    }

    /// `BrokersToIsrs.hasLeaderships`: leads a partition whose ISR it is
    /// in (a leader outside an emptied ISR, possible with ELR, does not
    /// count).
    fn has_leaderships(&self, broker: BrokerId) -> bool {
        self.topics
            .values()
            .flatten()
            .any(|partition| partition.leader == Some(broker) && partition.isr.contains(&broker))
    }

    /// `handleBrokerFenced`: the broker leaves every ISR (and leadership),
    /// then a `BrokerRegistrationChangeRecord` fences it.
    fn broker_fenced_changes(&self, broker: BrokerId, records: &mut Vec<MetadataRecord>) {
        let partitions = self.partitions_with_broker_in_isr(broker);
        self.leader_and_isr_updates(Some(broker), None, None, &partitions, records);
        records.push(MetadataRecord::BrokerRegistrationChange {
            broker,
            broker_epoch: self.brokers[&broker].epoch,
            fenced: Some(true),
            in_controlled_shutdown: None,
        });
    }

    /// `handleBrokerUnfenced`: the unfence record, then elections for every
    /// leaderless partition with the broker counted as acceptable.
    fn broker_unfenced_changes(&self, broker: BrokerId, broker_epoch: u64, records: &mut Vec<MetadataRecord>) {
        records.push(MetadataRecord::BrokerRegistrationChange {
            broker,
            broker_epoch,
            fenced: Some(false),
            in_controlled_shutdown: None,
        });
        let partitions = self.partitions_with_no_leader();
        self.leader_and_isr_updates(None, Some(broker), None, &partitions, records);
    }

    /// `handleBrokerInControlledShutdown`: marks the broker (once), then
    /// takes it out of every ISR and leadership.
    fn controlled_shutdown_changes(&self, broker: BrokerId, broker_epoch: u64, records: &mut Vec<MetadataRecord>) {
        if !self.brokers[&broker].in_controlled_shutdown {
            records.push(MetadataRecord::BrokerRegistrationChange {
                broker,
                broker_epoch,
                fenced: None,
                in_controlled_shutdown: Some(true),
            });
        }
        let partitions = self.partitions_with_broker_in_isr(broker);
        self.leader_and_isr_updates(Some(broker), None, None, &partitions, records);
    }

    /// `handleBrokerUncleanShutdown` (metadata versions with ELR support,
    /// whatever the ELR setting): a restarted broker leaves every ISR, then
    /// every ELR, and may not lead.
    fn unclean_shutdown_changes(&self, broker: BrokerId, records: &mut Vec<MetadataRecord>) {
        let in_isr = self.partitions_with_broker_in_isr(broker);
        self.leader_and_isr_updates(None, None, Some(broker), &in_isr, records);
        let in_elr = self.partitions_with_broker_in_elr(broker);
        self.leader_and_isr_updates(None, None, Some(broker), &in_elr, records);
    }

    /// `generateLeaderAndIsrUpdates`: for each partition, the target ISR
    /// without the removed / uncleanly shut down broker and an election
    /// (unclean when the topic allows it) among acceptable leaders: active
    /// brokers, plus `broker_to_add`, minus the two others.
    fn leader_and_isr_updates(
        &self,
        broker_to_remove: Option<BrokerId>,
        broker_to_add: Option<BrokerId>,
        unclean_shutdown: Option<BrokerId>,
        partitions: &[PartitionKey],
        records: &mut Vec<MetadataRecord>,
    ) {
        let acceptable: BTreeSet<BrokerId> = self
            .brokers
            .keys()
            .copied()
            .chain(broker_to_add)
            .filter(|&broker| {
                Some(broker) != broker_to_remove
                    && Some(broker) != unclean_shutdown
                    && (Some(broker) == broker_to_add || self.is_active(broker))
            })
            .gather();
        let election = if self.unclean_enabled() {
            Election::Unclean
        } else {
            Election::Online
        };
        for key in partitions {
            let partition = self.partition(key);
            let mut change = PartitionChange::kafka(partition, election, &acceptable);
            change.elect_unacceptable_last_known_leader = self.kafka_4_0_last_known_leader;
            change.eligible_leader_replicas_enabled = self.eligible_leader_replicas_enabled;
            change.min_isr = self.effective_min_isr(&key.0);
            change.unclean_shutdown_replicas = unclean_shutdown.into_iter().collect();
            change.target_isr = partition
                .isr
                .iter()
                .copied()
                .filter(|&member| Some(member) != broker_to_remove && Some(member) != unclean_shutdown)
                .collect();
            if let Some(change) = change.build() {
                records.push(MetadataRecord::PartitionChange {
                    topic: key.0.clone(),
                    partition: key.1,
                    change,
                });
            }
        }
    }

    /// `ReplicationControlManager.electLeader`: `None` when no election is
    /// needed (`ELECTION_NOT_NEEDED`), else the outcome's error name.
    fn elect_leader(
        &self,
        topic: &str,
        index: u32,
        election: ElectionType,
        records: &mut Vec<MetadataRecord>,
    ) -> Option<&'static str> {
        let key = (topic.to_string(), index);
        let partition = self.partition(&key);
        let not_needed = match election {
            ElectionType::Preferred => {
                partition.leader.is_some() && partition.leader == partition.replicas.first().copied()
            }
            ElectionType::Unclean => partition.leader.is_some(),
        };
        if not_needed {
            return None;
        }
        let acceptable: BTreeSet<BrokerId> = self
            .brokers
            .keys()
            .copied()
            .filter(|&broker| self.is_active(broker))
            .gather();
        let builder_election = match election {
            ElectionType::Preferred => Election::Preferred,
            ElectionType::Unclean => Election::Unclean,
        };
        let mut change = PartitionChange::kafka(partition, builder_election, &acceptable);
        change.elect_unacceptable_last_known_leader = self.kafka_4_0_last_known_leader;
        change.eligible_leader_replicas_enabled = self.eligible_leader_replicas_enabled;
        change.min_isr = self.effective_min_isr(topic);
        match change.build() {
            Some(change) => {
                records.push(MetadataRecord::PartitionChange {
                    topic: key.0,
                    partition: index,
                    change,
                });
                Some("NONE")
            }
            None => Some(match election {
                ElectionType::Preferred => "PREFERRED_LEADER_NOT_AVAILABLE",
                ElectionType::Unclean => "ELIGIBLE_LEADERS_NOT_AVAILABLE",
            }),
        }
    }

    // ----- the log (`QuorumController.replay`) -----

    /// Writes `records` at the next offsets and replays each in order.
    fn commit(&mut self, records: Vec<MetadataRecord>) -> Vec<WrittenRecord> {
        records
            .into_iter()
            .map(|record| {
                let offset = self.next_offset;
                self.next_offset += 1;
                self.replay(&record, offset);
                WrittenRecord { offset, record }
            })
            .collect()
    }

    fn replay(&mut self, record: &MetadataRecord, offset: u64) {
        match record {
            MetadataRecord::Config { name, value } => {
                self.configs.insert(name.clone(), value.clone());
            }
            MetadataRecord::Topic { topic } => {
                self.topics.insert(topic.clone(), Vec::new());
            }
            MetadataRecord::Partition {
                topic, registration, ..
            } => {
                self.topics.entry(topic.clone()).or_default().push(registration.clone());
            }
            MetadataRecord::PartitionChange {
                topic,
                partition,
                change,
            } => {
                if let Some(registration) = self
                    .topics
                    .get_mut(topic)
                    .and_then(|partitions| partitions.get_mut(*partition as usize))
                {
                    registration.merge(change);
                }
            }
            MetadataRecord::RegisterBroker {
                broker,
                broker_epoch,
                incarnation,
                fenced,
                in_controlled_shutdown,
            } => {
                // ClusterControlManager.replay(RegisterBrokerRecord)
                self.register_offsets.insert(*broker, offset);
                let previous = self.brokers.insert(
                    *broker,
                    BrokerRegistration {
                        id: *broker,
                        epoch: *broker_epoch,
                        incarnation: *incarnation,
                        fenced: *fenced,
                        in_controlled_shutdown: *in_controlled_shutdown,
                    },
                );
                if previous.is_some() {
                    self.heartbeats.remove(broker);
                }
                self.heartbeat_register(*broker, *fenced);
            }
            MetadataRecord::BrokerRegistrationChange {
                broker,
                broker_epoch,
                fenced,
                in_controlled_shutdown,
            } => {
                // replayRegistrationChange
                let Some(registration) = self.brokers.get_mut(broker) else {
                    return;
                };
                if registration.epoch != *broker_epoch {
                    return;
                }
                if let Some(fenced) = fenced {
                    registration.fenced = *fenced;
                }
                if let Some(in_controlled_shutdown) = in_controlled_shutdown {
                    registration.in_controlled_shutdown = *in_controlled_shutdown;
                }
                let fenced = registration.fenced;
                self.heartbeat_register(*broker, fenced);
            }
        }
    }
}
