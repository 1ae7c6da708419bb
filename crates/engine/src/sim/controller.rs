//! The active KRaft controller (`QuorumController`,
//! `ReplicationControlManager`, `BrokerHeartbeatManager`): broker
//! registration, heartbeats and fencing, leader elections, AlterPartition.
//!
//! Every change moves the metadata log offset forward; brokers learn it by
//! fetching the metadata log once it is committed (see [`super::quorum`]).
//!
//! Each of the active controller's write events is a [`Decision`]: its
//! handlers change a working copy of the metadata image and hold what they
//! send and trace; the simulation turns the result into a metadata log
//! entry whose answers go out once it commits (`super::contexts`). A
//! decision reaches nothing else of the simulation.

use std::collections::{BTreeMap, BTreeSet};

use crate::controller::partition_change::{
    Election, LeaderRecovery, PartitionChange, PartitionChangeRecord, PartitionRegistration,
};
use crate::protocol::{BrokerId, TopicPartition};

use super::config::{ClusterConfig, ElectionType, PartitionRef, TopicConfig};
use super::trace::{BrokerChange, ChangeReason, FencingReason, TraceKind};
use super::types::{ErrorCode, Message, NodeId, Time};
use crate::protocol::TopicName;
use crate::random::Rng;

pub use crate::protocol::metadata::{records_between, BrokerRegistrationState, Controller};

/// A new partition led by the first of its ISR
/// (`buildPartitionRegistration` for a new topic or added partition).
fn new_partition(replicas: Vec<BrokerId>, isr: Vec<BrokerId>) -> PartitionRegistration {
    PartitionRegistration {
        leader: isr.first().copied(),
        isr,
        replicas,
        leader_epoch: 0,
        partition_epoch: 0,
        leader_recovery: LeaderRecovery::Recovered,
        elr: Vec::new(),
        last_known_elr: Vec::new(),
        removing_replicas: Vec::new(),
        adding_replicas: Vec::new(),
    }
}

/// Kafka's rack-unaware replica placement
/// (`AdminUtils#assignReplicasToBrokersRackUnaware`): a random start and a
/// random shift spread leaders and followers over the brokers.
pub fn place_replicas(
    partitions: u32,
    replication_factor: u32,
    brokers: &[BrokerId],
    rng: &mut crate::random::Rng,
) -> Vec<Vec<BrokerId>> {
    let count = brokers.len() as u32;
    let start_index = rng.next_u32() % count;
    let mut shift = rng.next_u32() % count;
    (0..partitions)
        .map(|partition| {
            if partition > 0 && partition % count == 0 {
                shift += 1;
            }
            let first = (partition + start_index) % count;
            let mut replicas = vec![brokers[first as usize]];
            for index in 0..replication_factor.saturating_sub(1) {
                let step = 1 + (shift + index) % (count - 1).max(1);
                replicas.push(brokers[((first + step) % count) as usize]);
            }
            replicas
        })
        .collect()
}

/// One name per topic for the whole run: `name`'s shared allocation in
/// `names`, made on first use (comparisons of partition keys then skip
/// the name).
pub(crate) fn shared_name(names: &mut BTreeMap<String, TopicName>, name: &str) -> TopicName {
    if let Some(shared) = names.get(name) {
        return shared.clone();
    }
    let shared = TopicName::from(name);
    names.insert(name.to_string(), shared.clone());
    shared
}

/// `__consumer_offsets` as `offsets.topic.num.partitions` and
/// `offsets.topic.replication.factor` (3) make it; it has no
/// `min.insync.replicas` of its own (the cluster's default, 1).
pub(crate) fn offsets_topic_config(config: &ClusterConfig) -> TopicConfig {
    TopicConfig {
        name: crate::protocol::OFFSETS_TOPIC.to_string(),
        partitions: config.offsets_topic_partitions,
        replication_factor: config.offsets_topic_replication_factor.max(1),
        min_insync_replicas: 1,
        // `offsets.topic.*`: a compacted topic (`GroupCoordinatorConfig`).
        cleanup_policy: crate::storage::CleanupPolicy::COMPACT,
        ..TopicConfig::default()
    }
}

/// `__transaction_state` as `transaction.state.log.replication.factor` (3)
/// and `transaction.state.log.min.isr` (2; at most the RF counts,
/// `Partition#effectiveMinIsr`) make it.
pub(crate) fn transaction_topic_config(config: &ClusterConfig) -> TopicConfig {
    let replication_factor = config.transaction_state_log_replication_factor.max(1);
    TopicConfig {
        name: crate::protocol::TRANSACTION_STATE_TOPIC.to_string(),
        partitions: config.transaction_state_partitions,
        replication_factor,
        min_insync_replicas: replication_factor.min(config.transaction_state_log_min_isr.max(1)),
        // A compacted topic (`TransactionLog`).
        cleanup_policy: crate::storage::CleanupPolicy::COMPACT,
        ..TopicConfig::default()
    }
}

/// Writes a topic's partitions into `image` over `brokers`
/// ([`place_replicas`]), each led by its first replica (a decision's, or
/// the image the cluster is formatted with).
pub(crate) fn create_topic(
    image: &mut Controller,
    topic: &TopicConfig,
    brokers: &[BrokerId],
    placement_rng: &mut Rng,
    topic_names: &mut BTreeMap<String, TopicName>,
) {
    // One allocation per topic name, shared by every partition key
    // (comparisons of keys then skip the name).
    let name = shared_name(topic_names, &topic.name);
    let placement = place_replicas(topic.partitions, topic.replication_factor, brokers, placement_rng);
    for (partition, replicas) in placement.into_iter().enumerate() {
        image.partitions.insert(
            TopicPartition::new(name.clone(), partition as u32),
            new_partition(replicas.clone(), replicas),
        );
        image.offset += 1;
    }
}

/// One write event of the active controller: the working copy of the
/// metadata image it changes, and the narrow context it decides with.
pub(crate) struct Decision<'a> {
    /// The working image (the latest, possibly uncommitted, state).
    pub(super) image: &'a mut Controller,
    pub(super) config: &'a ClusterConfig,
    pub(super) now: Time,
    /// The deciding controller.
    pub(super) me: NodeId,
    /// When each broker last sent a heartbeat (its
    /// `BrokerHeartbeatManager`, not replicated).
    pub(super) heartbeats: &'a mut BTreeMap<BrokerId, u64>,
    /// Replica placement's randomness.
    pub(super) placement_rng: &'a mut Rng,
    /// The run's shared topic names ([`shared_name`]).
    pub(super) topic_names: &'a mut BTreeMap<String, TopicName>,
    /// Internal topics it could not create yet (traced once each).
    pub(super) internal_topics_refused: &'a mut BTreeSet<String>,
    /// What it sends, held until its entry commits.
    pub(super) outbox: Vec<(NodeId, NodeId, Message)>,
    /// What it traces, held as its messages are.
    pub(super) trace: Vec<TraceKind>,
    /// The periodic unclean election pass ran: whether it hit its limit
    /// (and should run again at once).
    pub(super) unclean_pass_hit_limit: Option<bool>,
}

impl Decision<'_> {
    /// Sends a message (held until the decision commits).
    fn send(&mut self, from: NodeId, to: NodeId, message: Message) {
        self.outbox.push((from, to, message));
    }

    /// Traces a fact (held with the messages).
    fn record(&mut self, kind: TraceKind) {
        self.trace.push(kind);
    }

    fn note_heartbeat(&mut self, broker: BrokerId) {
        self.heartbeats.insert(broker, self.now);
    }

    fn shared_topic(&mut self, name: &str) -> TopicName {
        shared_name(self.topic_names, name)
    }

    fn topic_config(&self, partition: &TopicPartition) -> Option<&TopicConfig> {
        self.config.topics.iter().find(|topic| *topic.name == *partition.topic)
    }

    /// Creates an internal topic (`__consumer_offsets`,
    /// `__transaction_state`) unless it exists. Replicas go only to usable
    /// brokers, unfenced and not in controlled shutdown
    /// (`BrokerHeartbeatManager#usableBrokers`: a broker on its way out
    /// must not be given a new partition to lead, or its shutdown never
    /// completes); with too few of them the creation fails
    /// (INVALID_REPLICATION_FACTOR) and the next lookup asks again.
    pub(crate) fn create_internal_topic(&mut self, topic: &TopicConfig) {
        let brokers = self.usable_brokers();
        if self
            .image
            .partitions
            .keys()
            .any(|partition| *partition.topic == *topic.name)
        {
            return;
        }
        if brokers.len() >= topic.replication_factor as usize {
            self.create_topic(topic, &brokers);
        } else if self.internal_topics_refused.insert(topic.name.clone()) {
            // `StripedReplicaPlacer`: "The target replication factor of
            // N cannot be reached because only M broker(s) are
            // registered." Traced the first time; each lookup asks again.
            self.record(TraceKind::InternalTopicNotCreated {
                topic: topic.name.clone(),
                replication_factor: topic.replication_factor,
                brokers: brokers.len() as u32,
            });
        }
    }

    /// A topic's `min.insync.replicas` changed: its partitions with an ELR
    /// or a last known ELR lose both, and their partition epoch goes up;
    /// leaders and ISRs stay (`ConfigurationControlManager#
    /// createClearElrRecordsAsNeeded`, a `ClearElrRecord`).
    pub(crate) fn clear_elr(&mut self, topic: &str) {
        let cleared: Vec<TopicPartition> = self
            .image
            .partitions
            .iter()
            .filter(|(partition, registration)| {
                *partition.topic == *topic && (!registration.elr.is_empty() || !registration.last_known_elr.is_empty())
            })
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in cleared {
            let Some(registration) = self.image.partitions.get_mut(&partition) else {
                continue;
            };
            registration.elr.clear();
            registration.last_known_elr.clear();
            registration.partition_epoch += 1;
            let (isr, partition_epoch) = (registration.isr.clone(), registration.partition_epoch);
            self.record(TraceKind::IsrChanged {
                partition,
                from: isr.clone(),
                to: isr,
                elr: Vec::new(),
                partition_epoch,
                reason: ChangeReason::MinInsyncReplicasChanged,
            });
        }
    }

    /// `unclean.leader.election.enable` changed (a `ConfigRecord`).
    pub(crate) fn set_unclean_leader_election(&mut self, enable: bool) {
        self.image.unclean_leader_election_enable = enable;
    }

    /// `transaction.version` changed (a `FeatureLevelRecord`).
    pub(crate) fn set_transaction_version(&mut self, version: crate::protocol::transactions::TransactionVersion) {
        self.image.transaction_version = version;
    }

    /// A new leader's first entry (KRaft's `LeaderChangeMessage`).
    pub(crate) fn write_leader_change(&mut self) {
        self.image.offset += 1;
    }
}

impl Decision<'_> {
    /// The brokers new replicas may go to: unfenced and not in controlled
    /// shutdown (`BrokerHeartbeatManager#usableBrokers`).
    fn usable_brokers(&self) -> Vec<BrokerId> {
        self.image
            .brokers
            .iter()
            .filter(|(_, registration)| !registration.fenced && !registration.in_controlled_shutdown)
            .map(|(&broker, _)| broker)
            .collect()
    }

    /// The active controller's `createPartitions`
    /// (`ReplicationControlManager#createPartitions`): an unknown topic
    /// answers `UNKNOWN_TOPIC_OR_PARTITION`, a count that is not an
    /// increase `INVALID_PARTITIONS`. The new partitions take the
    /// replication factor of the topic's first partition and are placed
    /// over the registered brokers not shutting down, fenced ones included
    /// (`BrokerHeartbeatManager#usableBrokers`); `StripedReplicaPlacer`
    /// refuses with `INVALID_REPLICATION_FACTOR` when every broker is
    /// fenced or the replication factor is above their number. Each new
    /// partition's ISR is its active replicas and its leader the first of
    /// them (none active: `INVALID_REPLICATION_FACTOR`). All or nothing;
    /// the trace says so once the records commit.
    pub(crate) fn create_partitions(&mut self, topic: &str, count: u32) {
        let existing: Vec<&PartitionRegistration> = self
            .image
            .partitions
            .iter()
            .filter(|(partition, _)| *partition.topic == *topic)
            .map(|(_, registration)| registration)
            .collect();
        let now = existing.len() as u32;
        let replication_factor = existing.first().map_or(0, |first| first.replicas.len() as u32);
        let placeable: Vec<BrokerId> = self
            .image
            .brokers
            .iter()
            .filter(|(_, registration)| !registration.in_controlled_shutdown)
            .map(|(&broker, _)| broker)
            .collect();
        let active = |broker: &BrokerId| {
            self.image
                .brokers
                .get(broker)
                .is_some_and(|registration| !registration.fenced && !registration.in_controlled_shutdown)
        };
        let refusal = if now == 0 {
            Some(ErrorCode::UnknownTopicOrPartition)
        } else if count <= now {
            Some(ErrorCode::InvalidPartitions)
        } else if !placeable.iter().any(active) || placeable.len() < replication_factor as usize {
            Some(ErrorCode::InvalidReplicationFactor)
        } else {
            None
        };
        let placement = match refusal {
            Some(_) => Vec::new(),
            None => place_replicas(count - now, replication_factor, &placeable, &mut *self.placement_rng),
        };
        let partitions: Vec<(Vec<BrokerId>, Vec<BrokerId>)> = placement
            .into_iter()
            .map(|replicas| {
                let isr = replicas.iter().copied().filter(|broker| active(broker)).collect();
                (replicas, isr)
            })
            .collect();
        let refusal = refusal.or_else(|| {
            partitions
                .iter()
                .any(|(_, isr)| isr.is_empty())
                .then_some(ErrorCode::InvalidReplicationFactor)
        });
        if let Some(error) = refusal {
            self.record(TraceKind::CreatePartitionsFailed {
                topic: topic.to_string(),
                count,
                error,
            });
            return;
        }
        let name = self.shared_topic(topic);
        for (index, (replicas, isr)) in partitions.into_iter().enumerate() {
            self.image.partitions.insert(
                TopicPartition::new(name.clone(), now + index as u32),
                new_partition(replicas, isr),
            );
            self.image.offset += 1;
        }
        self.record(TraceKind::PartitionsCreated {
            topic: topic.to_string(),
            from: now,
            to: count,
        });
    }

    /// Writes a topic's partitions over `brokers` ([`place_replicas`]),
    /// each led by its first replica.
    fn create_topic(&mut self, topic: &TopicConfig, brokers: &[BrokerId]) {
        create_topic(self.image, topic, brokers, self.placement_rng, self.topic_names);
    }

    /// A broker's request to the active controller.
    pub(crate) fn receive(&mut self, from: NodeId, message: Message) {
        let me = self.me;
        match message {
            Message::BrokerRegistration {
                broker,
                incarnation,
                previous_broker_epoch,
            } => self.register_broker(me, from, broker, incarnation, previous_broker_epoch),
            Message::BrokerHeartbeat {
                broker,
                broker_epoch,
                metadata_offset,
                want_shut_down,
            } => self.broker_heartbeat(me, from, broker, broker_epoch, metadata_offset, want_shut_down),
            Message::AlterPartition {
                partition,
                leader,
                leader_epoch,
                partition_epoch,
                new_isr,
                leader_recovery,
            } => {
                let result = self.alter_partition(
                    &partition,
                    leader,
                    leader_epoch,
                    partition_epoch,
                    new_isr,
                    leader_recovery,
                );
                self.send(me, from, Message::AlterPartitionResponse { partition, result });
            }
            _ => {}
        }
    }

    /// `BrokerRegistration`: a new broker epoch, the same one for the same
    /// process, or `DUPLICATE_BROKER_REGISTRATION` while another incarnation's
    /// session lasts (`ClusterControlManager#registerBroker`).
    fn register_broker(
        &mut self,
        me: NodeId,
        from: NodeId,
        broker: BrokerId,
        incarnation: u32,
        previous_broker_epoch: Option<u64>,
    ) {
        let now = self.now;
        let session = self.config.broker_session_timeout_ms;
        let last_heartbeat = self.heartbeats.get(&broker).copied();
        match self.image.brokers.get(&broker) {
            // The same process registering again keeps its epoch
            // and fencing state (`ClusterControlManager#registerBroker`).
            Some(state) if state.incarnation == incarnation => {
                let epoch = state.epoch;
                self.note_heartbeat(broker);
                self.send(me, from, Message::BrokerRegistrationResponse { result: Ok(epoch) });
                return;
            }
            // Another incarnation while the old one's session is still
            // valid: refused until it expires, so a restarted broker
            // cannot take over the old one's leaderships.
            Some(state)
                if !state.fenced && last_heartbeat.is_some_and(|heard| now.saturating_sub(heard) <= session) =>
            {
                self.send(
                    me,
                    from,
                    Message::BrokerRegistrationResponse {
                        result: Err(ErrorCode::DuplicateBrokerRegistration),
                    },
                );
                return;
            }
            // A new incarnation whose last shutdown was not a clean
            // one with its current epoch (`ClusterControlManager#registerBroker`
            // → `handleBrokerUncleanShutdown`): it may have lost
            // what it had not flushed, so it leaves every ISR (as
            // far as the ISR may shrink) and may not lead, before
            // its new registration is written.
            Some(state) if previous_broker_epoch != Some(state.epoch) => {
                self.unclean_shutdown(broker);
            }
            _ => {}
        }
        self.note_heartbeat(broker);
        self.image.offset += 1;
        let epoch = self.image.offset;
        self.image.brokers.insert(
            broker,
            BrokerRegistrationState {
                epoch,
                fenced: true,
                incarnation,
                in_controlled_shutdown: false,
            },
        );
        self.send(me, from, Message::BrokerRegistrationResponse { result: Ok(epoch) });
    }

    /// `BrokerHeartbeat`: the broker's session goes on; it is unfenced once
    /// caught up, and a controlled shutdown moves on.
    fn broker_heartbeat(
        &mut self,
        me: NodeId,
        from: NodeId,
        broker: BrokerId,
        broker_epoch: u64,
        metadata_offset: u64,
        want_shut_down: bool,
    ) {
        let Some(state) = self.image.brokers.get_mut(&broker) else {
            return;
        };
        if state.epoch != broker_epoch {
            return;
        }
        self.note_heartbeat(broker);
        let state = &self.image.brokers[&broker];
        let leads = |decision: &Decision| {
            decision
                .image
                .partitions
                .values()
                .any(|registration| registration.leader == Some(broker))
        };
        let mut should_shut_down = false;
        if want_shut_down {
            // `BrokerHeartbeatManager#calculateNextBrokerState`: a fenced
            // broker, or one that leads nothing, may stop at once
            // (SHUTDOWN_NOW, and it is fenced); one that leads enters
            // CONTROLLED_SHUTDOWN: its leaderships and ISR places move
            // to others first.
            if state.fenced || !leads(self) {
                should_shut_down = true;
                if !state.fenced {
                    self.fence(broker, FencingReason::ControlledShutdownDone);
                }
            } else if !state.in_controlled_shutdown {
                self.image
                    .brokers
                    .get_mut(&broker)
                    .expect("registered")
                    .in_controlled_shutdown = true;
                self.image.offset += 1;
                self.record(TraceKind::BrokerStatus {
                    broker,
                    status: BrokerChange::InControlledShutdown,
                });
                self.move_off(broker, ChangeReason::BrokerShuttingDown { broker });
            }
        } else if state.fenced && metadata_offset >= state.epoch {
            // Unfence once the broker has caught up with its own registration.
            self.image.brokers.get_mut(&broker).expect("registered").fenced = false;
            self.image.offset += 1;
            self.record(TraceKind::BrokerFencing {
                broker,
                fenced: false,
                reason: FencingReason::CaughtUp {
                    metadata_offset,
                    broker_epoch,
                },
            });
            self.elect_leaderless(ChangeReason::BrokerUnfenced { broker });
        }
        let state = &self.image.brokers[&broker];
        let (fenced, in_controlled_shutdown) = (state.fenced, state.in_controlled_shutdown);
        self.send(
            me,
            from,
            Message::BrokerHeartbeatResponse {
                broker_epoch,
                fenced,
                in_controlled_shutdown,
                should_shut_down,
            },
        );
    }

    fn alter_partition(
        &mut self,
        partition: &TopicPartition,
        leader: BrokerId,
        leader_epoch: u32,
        partition_epoch: u32,
        new_isr: Vec<BrokerId>,
        leader_recovery: LeaderRecovery,
    ) -> Result<PartitionRegistration, ErrorCode> {
        let Some(current) = self.image.partitions.get(partition).cloned() else {
            return Err(ErrorCode::NotLeaderOrFollower);
        };
        if current.leader != Some(leader) || current.leader_epoch != leader_epoch {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if current.partition_epoch != partition_epoch {
            return Err(ErrorCode::InvalidUpdateVersion);
        }
        let acceptable = self.image.acceptable();
        if new_isr
            .iter()
            .any(|broker| !acceptable.contains(broker) && !current.isr.contains(broker))
        {
            return Err(ErrorCode::IneligibleReplica);
        }
        let mut change = self.change(partition, &current, Election::Online, &acceptable);
        change.target_isr = new_isr;
        // KIP-704: the leader reports it has recovered; the partition
        // leaves RECOVERING with this change.
        change.target_leader_recovery = leader_recovery;
        let reason = if change.target_isr.len() < current.isr.len() {
            ChangeReason::FollowersFellBehind
        } else {
            ChangeReason::FollowerCaughtUp
        };
        if let Some(record) = change.build() {
            self.commit(partition, record, reason);
        }
        Ok(self.image.partitions[partition].clone())
    }

    /// `BrokerHeartbeatManager`: fences one broker whose session expired.
    pub(crate) fn session_check(&mut self) {
        let now = self.now;
        let timeout = self.config.broker_session_timeout_ms;
        let heartbeats = self.heartbeats.clone();
        // `BrokerHeartbeatManager#findOneStaleBroker`: the unfenced broker
        // heard from least recently, if its session has expired.
        let stale = self
            .image
            .brokers
            .iter()
            .filter(|(_, state)| !state.fenced)
            .map(|(&broker, _)| (heartbeats.get(&broker).copied().unwrap_or(0), broker))
            .min()
            .filter(|&(heard, _)| now.saturating_sub(heard) > timeout)
            .map(|(_, broker)| broker);
        if let Some(broker) = stale {
            self.fence(broker, FencingReason::SessionExpired { timeout_ms: timeout });
        }
    }

    /// `handleBrokerFenced`: out of every ISR (never emptying one), and new
    /// leaders for the partitions it led.
    fn fence(&mut self, broker: BrokerId, reason: FencingReason) {
        if let Some(state) = self.image.brokers.get_mut(&broker) {
            state.fenced = true;
        }
        self.image.offset += 1;
        self.record(TraceKind::BrokerFencing {
            broker,
            fenced: true,
            reason,
        });
        self.move_off(broker, ChangeReason::BrokerFenced { broker });
    }

    /// `generateLeaderAndIsrUpdates`: takes a broker out of every ISR (never
    /// emptying one) and elects new leaders for the partitions it led.
    fn move_off(&mut self, broker: BrokerId, reason: ChangeReason) {
        let acceptable = self.image.acceptable();
        let election = self.election();
        let affected: Vec<TopicPartition> = self
            .image
            .partitions
            .iter()
            .filter(|(_, registration)| registration.isr.contains(&broker) || registration.leader == Some(broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in affected {
            let current = self.image.partitions[&partition].clone();
            let mut change = self.change(&partition, &current, election, &acceptable);
            // Out of the ISR (`generateLeaderAndIsrUpdates`); without ELR
            // the builder keeps the last member rather than empty it.
            change.target_isr = current.isr.iter().copied().filter(|&member| member != broker).collect();
            if let Some(record) = change.build() {
                self.commit(&partition, record, reason);
            }
        }
    }

    /// `handleBrokerUncleanShutdown` → `generateLeaderAndIsrUpdates` with the
    /// broker as an unclean-shutdown replica: out of every ISR it is in
    /// (the last member stays, as ELR is off) and not electable; partitions
    /// it led get a new leader where one is acceptable.
    fn unclean_shutdown(&mut self, broker: BrokerId) {
        let mut acceptable = self.image.acceptable();
        acceptable.remove(&broker);
        let election = self.election();
        let affected: Vec<TopicPartition> = self
            .image
            .partitions
            .iter()
            .filter(|(_, registration)| registration.isr.contains(&broker) || registration.elr.contains(&broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        let reason = ChangeReason::UncleanRestart { broker };
        for partition in affected {
            let current = self.image.partitions[&partition].clone();
            let mut change = self.change(&partition, &current, election, &acceptable);
            change.unclean_shutdown_replicas = vec![broker];
            change.target_isr = current.isr.iter().copied().filter(|&member| member != broker).collect();
            if let Some(record) = change.build() {
                self.commit(&partition, record, reason);
            }
        }
    }

    /// A change of `partition` as the controller builds it: with Eligible
    /// Leader Replicas as configured (KIP-966) and the topic's effective
    /// `min.insync.replicas` (`getTopicEffectiveMinIsr`: at most its
    /// replication factor).
    fn change<'a>(
        &self,
        partition: &TopicPartition,
        current: &'a PartitionRegistration,
        election: Election,
        acceptable: &'a BTreeSet<BrokerId>,
    ) -> PartitionChange<'a> {
        let mut change = PartitionChange::new(current, election, acceptable);
        change.eligible_leader_replicas_enabled = self.config.eligible_leader_replicas_enable;
        let min_isr = self
            .topic_config(partition)
            .map_or(1, |topic| topic.min_insync_replicas) as usize;
        change.min_isr = min_isr.min(current.replicas.len()).max(1);
        change
    }

    /// The election a leaderless partition gets: unclean where the topic
    /// allows it (`unclean.leader.election.enable`).
    fn election(&self) -> Election {
        if self.config.unclean_leader_election_enable {
            Election::Unclean
        } else {
            Election::Online
        }
    }

    /// `ReplicationControlManager#maybeBalancePartitionLeaders`: a
    /// preferred election for every partition not led by its first
    /// replica; it moves only where that replica is alive and in the ISR.
    pub(crate) fn balance_leaders(&mut self) {
        let acceptable = self.image.acceptable();
        let imbalanced: Vec<TopicPartition> = self
            .image
            .partitions
            .iter()
            .filter(|(_, registration)| registration.leader != registration.replicas.first().copied())
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in imbalanced {
            let current = self.image.partitions[&partition].clone();
            let change = self.change(&partition, &current, Election::Preferred, &acceptable);
            if let Some(record) = change.build() {
                let preferred = current.replicas.first().copied().unwrap_or(0);
                self.commit(&partition, record, ChangeReason::PreferredLeader { broker: preferred });
            }
        }
    }

    /// `ReplicationControlManager#maybeElectUncleanLeaders`, the periodic
    /// pass: an unclean election for each leaderless partition (where the
    /// topic allows it), at most `MAX_ELECTIONS_PER_IMBALANCE` of them.
    /// Notes whether it hit that limit and should run again at once.
    pub(crate) fn unclean_election_pass(&mut self) {
        let hit_limit = self.unclean_pass();
        self.unclean_pass_hit_limit = Some(hit_limit);
    }

    fn unclean_pass(&mut self) -> bool {
        if !self.config.unclean_leader_election_enable {
            return false;
        }
        let acceptable = self.image.acceptable();
        let mut elections = 0;
        for partition in self.leaderless() {
            if elections >= crate::controller::cluster_control::MAX_ELECTIONS_PER_IMBALANCE {
                return true;
            }
            let current = self.image.partitions[&partition].clone();
            let change = self.change(&partition, &current, Election::Unclean, &acceptable);
            if let Some(record) = change.build() {
                elections += 1;
                self.commit(&partition, record, ChangeReason::UncleanPass);
            }
        }
        false
    }

    /// An operator's `ElectLeaders` (`ReplicationControlManager#electLeaders`
    /// and `#electLeader`): for each partition named (every partition when
    /// none is), a preferred election where the first replica does not
    /// lead, or an unclean one where nobody leads. A partition that needs
    /// none answers `ELECTION_NOT_NEEDED` (left out when the request named
    /// no partitions, as Kafka leaves it out); one whose election finds no
    /// leader answers `PREFERRED_LEADER_NOT_AVAILABLE` or
    /// `ELIGIBLE_LEADERS_NOT_AVAILABLE`.
    pub(crate) fn elect_leaders(&mut self, election_type: ElectionType, partitions: &[PartitionRef]) {
        let every = partitions.is_empty();
        let named: Vec<Result<TopicPartition, PartitionRef>> = if every {
            self.image.partitions.keys().cloned().map(Ok).collect()
        } else {
            partitions
                .iter()
                .map(|named| {
                    self.image
                        .partitions
                        .keys()
                        .find(|partition| *partition.topic == *named.topic && partition.partition == named.partition)
                        .cloned()
                        .ok_or_else(|| named.clone())
                })
                .collect()
        };
        let acceptable = self.image.acceptable();
        for partition in named {
            let partition = match partition {
                Ok(partition) => partition,
                Err(unknown) => {
                    self.record(TraceKind::ElectLeadersFailed {
                        election_type,
                        partition: Some(TopicPartition {
                            topic: unknown.topic.as_str().into(),
                            partition: unknown.partition,
                        }),
                        error: ErrorCode::UnknownTopicOrPartition,
                    });
                    continue;
                }
            };
            let current = self.image.partitions[&partition].clone();
            let not_needed = match election_type {
                ElectionType::Preferred => {
                    current.leader.is_some() && current.leader == current.replicas.first().copied()
                }
                ElectionType::Unclean => current.leader.is_some(),
            };
            let (election, unavailable, reason) = match election_type {
                ElectionType::Preferred => (
                    Election::Preferred,
                    ErrorCode::PreferredLeaderNotAvailable,
                    ChangeReason::OperatorPreferred,
                ),
                ElectionType::Unclean => (
                    Election::Unclean,
                    ErrorCode::EligibleLeadersNotAvailable,
                    ChangeReason::OperatorUnclean,
                ),
            };
            let error = if not_needed {
                ErrorCode::ElectionNotNeeded
            } else {
                let change = self.change(&partition, &current, election, &acceptable);
                match change.build() {
                    Some(record) => {
                        self.commit(&partition, record, reason);
                        continue;
                    }
                    None => unavailable,
                }
            };
            if !(every && error == ErrorCode::ElectionNotNeeded) {
                self.record(TraceKind::ElectLeadersFailed {
                    election_type,
                    partition: Some(partition),
                    error,
                });
            }
        }
    }

    /// Elects leaders for partitions that have none (after an unfence).
    pub(crate) fn elect_leaderless(&mut self, reason: ChangeReason) {
        let acceptable = self.image.acceptable();
        let election = self.election();
        for partition in self.leaderless() {
            let current = self.image.partitions[&partition].clone();
            let change = self.change(&partition, &current, election, &acceptable);
            if let Some(record) = change.build() {
                self.commit(&partition, record, reason);
            }
        }
    }

    /// The partitions with no leader.
    fn leaderless(&self) -> Vec<TopicPartition> {
        self.image
            .partitions
            .iter()
            .filter(|(_, registration)| registration.leader.is_none())
            .map(|(partition, _)| partition.clone())
            .collect()
    }

    /// Applies a record to the registration and traces what changed.
    fn commit(&mut self, partition: &TopicPartition, record: PartitionChangeRecord, reason: ChangeReason) {
        let before = self.image.partitions[partition].clone();
        let registration = self.image.partitions.get_mut(partition).expect("known partition");
        registration.apply(&record);
        let after = registration.clone();
        self.image.offset += 1;
        if (record.isr.is_some() && before.isr != after.isr) || before.elr != after.elr {
            self.record(TraceKind::IsrChanged {
                partition: partition.clone(),
                from: before.isr.clone(),
                to: after.isr.clone(),
                elr: after.elr.clone(),
                partition_epoch: after.partition_epoch,
                reason,
            });
        }
        if record.leader.is_some() {
            self.image.elections += 1;
            let unclean = record.leader_recovery == Some(LeaderRecovery::Recovering);
            self.record(TraceKind::LeaderElected {
                partition: partition.clone(),
                leader: after.leader,
                leader_epoch: after.leader_epoch,
                isr: after.isr.clone(),
                unclean,
                reason,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::Rng;

    #[test]
    fn placement_spreads_leaders_and_never_repeats_a_broker() {
        let mut rng = Rng::new(1, 0);
        let placement = place_replicas(6, 3, &[1, 2, 3], &mut rng);
        for replicas in &placement {
            let distinct: BTreeSet<_> = replicas.iter().collect();
            assert_eq!(distinct.len(), 3, "{placement:?}");
        }
        let leaders: BTreeSet<_> = placement.iter().map(|replicas| replicas[0]).collect();
        assert_eq!(leaders.len(), 3, "{placement:?}");
    }
}
