//! The active KRaft controller (`QuorumController`,
//! `ReplicationControlManager`, `BrokerHeartbeatManager`): broker
//! registration, heartbeats and fencing, leader elections, AlterPartition.
//!
//! Every change moves the metadata log offset forward; brokers learn it by
//! fetching the metadata log once it is committed (see [`super::quorum`]).

use std::collections::BTreeSet;

use crate::controller::partition_change::{
    Election, LeaderRecovery, PartitionChange, PartitionChangeRecord, PartitionRegistration,
};
use crate::protocol::{BrokerId, TopicPartition};

use super::config::{ElectionType, PartitionRef};
use super::trace::{BrokerChange, ChangeReason, FencingReason, TraceKind};
use super::types::{ErrorCode, Message, NodeId};
use super::Simulation;

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

impl Simulation {
    /// Creates the configured topics.
    pub(crate) fn controller_bootstrap(&mut self) {
        self.controller.unclean_leader_election_enable = self.config.unclean_leader_election_enable;
        // `kafka-storage format` finalizes the features (a new 4.1 cluster:
        // `transaction.version=2`, or the level the scenario formats with).
        self.controller.transaction_version = self.config.transaction_version;
        let brokers: Vec<BrokerId> = (1..=self.config.brokers).collect();
        let mut topics = self.config.topics.clone();
        // Kafka creates __consumer_offsets on a group's first coordinator
        // lookup; a run with consumers starts with it (one that adds its
        // first consumer later gets it then: `controller_create_offsets_topic`).
        // (Not with fewer brokers than `offsets.topic.replication.factor`:
        // the lookups then fail until there are enough.)
        if !self.config.consumers.is_empty() && self.config.brokers >= self.config.offsets_topic_replication_factor {
            topics.push(self.offsets_topic_config());
        }
        for topic in topics {
            self.controller_create_topic(&topic, &brokers);
        }
    }

    /// `__consumer_offsets` as `offsets.topic.num.partitions` and
    /// `offsets.topic.replication.factor` (3) make it; it has no
    /// `min.insync.replicas` of its own (the cluster's default, 1).
    fn offsets_topic_config(&self) -> super::config::TopicConfig {
        super::config::TopicConfig {
            name: super::coordinator::OFFSETS_TOPIC.to_string(),
            partitions: self.config.offsets_topic_partitions,
            replication_factor: self.config.offsets_topic_replication_factor.max(1),
            min_insync_replicas: 1,
            // `offsets.topic.*`: a compacted topic (`GroupCoordinatorConfig`).
            cleanup_policy: crate::storage::CleanupPolicy::COMPACT,
            ..super::config::TopicConfig::default()
        }
    }

    /// Creates `__consumer_offsets` if it does not exist yet: a broker asked
    /// to find a group's coordinator before any group existed has the
    /// active controller create it (`AutoTopicCreationManager`, then
    /// `ReplicationControlManager#createTopics`) and answers
    /// `COORDINATOR_NOT_AVAILABLE` meanwhile; the consumer asks again.
    pub(crate) fn controller_create_offsets_topic(&mut self) {
        let topic = self.offsets_topic_config();
        self.controller_create_internal_topic(topic);
    }

    /// Creates `__transaction_state` if it does not exist yet, as
    /// [`Self::controller_create_offsets_topic`] does for groups:
    /// `transaction.state.log.replication.factor` (3) and
    /// `transaction.state.log.min.isr` (2; at most the RF counts,
    /// `Partition#effectiveMinIsr`).
    pub(crate) fn controller_create_transaction_topic(&mut self) {
        let replication_factor = self.config.transaction_state_log_replication_factor.max(1);
        let topic = super::config::TopicConfig {
            name: super::txn::TRANSACTION_STATE_TOPIC.to_string(),
            partitions: self.config.transaction_state_partitions,
            replication_factor,
            min_insync_replicas: replication_factor.min(self.config.transaction_state_log_min_isr.max(1)),
            // A compacted topic (`TransactionLog`).
            cleanup_policy: crate::storage::CleanupPolicy::COMPACT,
            ..super::config::TopicConfig::default()
        };
        self.controller_create_internal_topic(topic);
    }

    fn controller_create_internal_topic(&mut self, topic: super::config::TopicConfig) {
        let Some(active) = self.quorum.active() else { return };
        let name = topic.name.clone();
        let exists = move |simulation: &Simulation| {
            simulation
                .controller
                .partitions
                .keys()
                .any(|partition| *partition.topic == *name)
        };
        if exists(self) {
            return;
        }
        self.with_leader_state(active, |simulation| {
            // Replicas go only to usable brokers, unfenced and not in
            // controlled shutdown (`BrokerHeartbeatManager#usableBrokers`:
            // a broker on its way out must not be given a new partition to
            // lead, or its shutdown never completes); with too few of them
            // the creation fails (INVALID_REPLICATION_FACTOR) and the next
            // lookup asks again.
            let brokers = simulation.controller_usable_brokers();
            if exists(simulation) {
                return;
            }
            if brokers.len() >= topic.replication_factor as usize {
                simulation.controller_create_topic(&topic, &brokers);
            } else if simulation.internal_topics_refused.insert(topic.name.clone()) {
                // `StripedReplicaPlacer`: "The target replication factor of
                // N cannot be reached because only M broker(s) are
                // registered." Traced the first time; each lookup asks again.
                simulation.record(TraceKind::InternalTopicNotCreated {
                    topic: topic.name.clone(),
                    replication_factor: topic.replication_factor,
                    brokers: brokers.len() as u32,
                });
            }
        });
    }

    /// The brokers new replicas may go to: unfenced and not in controlled
    /// shutdown (`BrokerHeartbeatManager#usableBrokers`).
    fn controller_usable_brokers(&self) -> Vec<BrokerId> {
        self.controller
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
    pub(crate) fn controller_create_partitions(&mut self, topic: &str, count: u32) {
        let existing: Vec<&PartitionRegistration> = self
            .controller
            .partitions
            .iter()
            .filter(|(partition, _)| *partition.topic == *topic)
            .map(|(_, registration)| registration)
            .collect();
        let now = existing.len() as u32;
        let replication_factor = existing.first().map_or(0, |first| first.replicas.len() as u32);
        let placeable: Vec<BrokerId> = self
            .controller
            .brokers
            .iter()
            .filter(|(_, registration)| !registration.in_controlled_shutdown)
            .map(|(&broker, _)| broker)
            .collect();
        let active = |broker: &BrokerId| {
            self.controller
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
            None => place_replicas(count - now, replication_factor, &placeable, &mut self.placement_rng),
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
            self.controller.partitions.insert(
                TopicPartition::new(name.clone(), now + index as u32),
                new_partition(replicas, isr),
            );
            self.controller.offset += 1;
        }
        self.record(TraceKind::PartitionsCreated {
            topic: topic.to_string(),
            from: now,
            to: count,
        });
    }

    /// Writes a topic's partitions over `brokers` ([`place_replicas`]),
    /// each led by its first replica.
    fn controller_create_topic(&mut self, topic: &super::config::TopicConfig, brokers: &[BrokerId]) {
        {
            // One allocation per topic name, shared by every partition key
            // (comparisons of keys then skip the name).
            let name = self.shared_topic(&topic.name);
            let placement = place_replicas(
                topic.partitions,
                topic.replication_factor,
                brokers,
                &mut self.placement_rng,
            );
            for (partition, replicas) in placement.into_iter().enumerate() {
                self.controller.partitions.insert(
                    TopicPartition::new(name.clone(), partition as u32),
                    new_partition(replicas.clone(), replicas),
                );
                self.controller.offset += 1;
            }
        }
    }

    /// Registers a broker that was already part of the cluster at time 0.
    pub(crate) fn controller_register_initial(&mut self, broker: BrokerId) -> u64 {
        self.controller.offset += 1;
        let epoch = self.controller.offset;
        self.controller.brokers.insert(
            broker,
            BrokerRegistrationState {
                epoch,
                fenced: false,
                incarnation: 1,
                in_controlled_shutdown: false,
            },
        );
        epoch
    }

    /// A message reached controller `id`: quorum traffic, or a broker
    /// request, which only the active controller handles.
    pub(crate) fn controller_deliver(&mut self, id: u32, from: NodeId, message: Message) {
        if self.quorum_receive(id, from, &message) {
            return;
        }
        let node = &self.quorum.nodes[&id];
        if node.role == super::quorum::Role::Leader {
            self.with_leader_state(id, |simulation| simulation.controller_receive(from, message));
        } else if matches!(
            message,
            Message::BrokerRegistration { .. } | Message::BrokerHeartbeat { .. } | Message::AlterPartition { .. }
        ) {
            let leader = node.leader;
            self.send(NodeId::Controller(id), from, Message::NotController { leader });
        }
    }

    fn note_heartbeat(&mut self, broker: BrokerId) {
        let now = self.now;
        if let Some(node) = self.controller_sender.and_then(|id| self.quorum.nodes.get_mut(&id)) {
            node.heartbeats.insert(broker, now);
        }
    }

    pub(crate) fn controller_receive(&mut self, from: NodeId, message: Message) {
        let me = self.controller_node();
        match message {
            Message::BrokerRegistration {
                broker,
                incarnation,
                previous_broker_epoch,
            } => self.controller_register_broker(me, from, broker, incarnation, previous_broker_epoch),
            Message::BrokerHeartbeat {
                broker,
                broker_epoch,
                metadata_offset,
                want_shut_down,
            } => self.controller_broker_heartbeat(me, from, broker, broker_epoch, metadata_offset, want_shut_down),
            Message::AlterPartition {
                partition,
                leader,
                leader_epoch,
                partition_epoch,
                new_isr,
                leader_recovery,
            } => {
                let result = self.controller_alter_partition(
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
    fn controller_register_broker(
        &mut self,
        me: NodeId,
        from: NodeId,
        broker: BrokerId,
        incarnation: u32,
        previous_broker_epoch: Option<u64>,
    ) {
        let now = self.now;
        let session = self.config.broker_session_timeout_ms;
        let last_heartbeat = self
            .controller_sender
            .and_then(|id| self.quorum.nodes.get(&id))
            .and_then(|node| node.heartbeats.get(&broker).copied());
        match self.controller.brokers.get(&broker) {
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
                self.controller_unclean_shutdown(broker);
            }
            _ => {}
        }
        self.note_heartbeat(broker);
        self.controller.offset += 1;
        let epoch = self.controller.offset;
        self.controller.brokers.insert(
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
    fn controller_broker_heartbeat(
        &mut self,
        me: NodeId,
        from: NodeId,
        broker: BrokerId,
        broker_epoch: u64,
        metadata_offset: u64,
        want_shut_down: bool,
    ) {
        let Some(state) = self.controller.brokers.get_mut(&broker) else {
            return;
        };
        if state.epoch != broker_epoch {
            return;
        }
        self.note_heartbeat(broker);
        let state = &self.controller.brokers[&broker];
        let leads = |simulation: &Simulation| {
            simulation
                .controller
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
                    self.controller_fence(broker, FencingReason::ControlledShutdownDone);
                }
            } else if !state.in_controlled_shutdown {
                self.controller
                    .brokers
                    .get_mut(&broker)
                    .expect("registered")
                    .in_controlled_shutdown = true;
                self.controller.offset += 1;
                self.record(TraceKind::BrokerStatus {
                    broker,
                    status: BrokerChange::InControlledShutdown,
                });
                self.controller_move_off(broker, ChangeReason::BrokerShuttingDown { broker });
            }
        } else if state.fenced && metadata_offset >= state.epoch {
            // Unfence once the broker has caught up with its own registration.
            self.controller.brokers.get_mut(&broker).expect("registered").fenced = false;
            self.controller.offset += 1;
            self.record(TraceKind::BrokerFencing {
                broker,
                fenced: false,
                reason: FencingReason::CaughtUp {
                    metadata_offset,
                    broker_epoch,
                },
            });
            self.controller_elect_leaderless(ChangeReason::BrokerUnfenced { broker });
        }
        let state = &self.controller.brokers[&broker];
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

    fn controller_alter_partition(
        &mut self,
        partition: &TopicPartition,
        leader: BrokerId,
        leader_epoch: u32,
        partition_epoch: u32,
        new_isr: Vec<BrokerId>,
        leader_recovery: LeaderRecovery,
    ) -> Result<PartitionRegistration, ErrorCode> {
        let Some(current) = self.controller.partitions.get(partition).cloned() else {
            return Err(ErrorCode::NotLeaderOrFollower);
        };
        if current.leader != Some(leader) || current.leader_epoch != leader_epoch {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if current.partition_epoch != partition_epoch {
            return Err(ErrorCode::InvalidUpdateVersion);
        }
        let acceptable = self.controller.acceptable();
        if new_isr
            .iter()
            .any(|broker| !acceptable.contains(broker) && !current.isr.contains(broker))
        {
            return Err(ErrorCode::IneligibleReplica);
        }
        let mut change = self.controller_change(partition, &current, Election::Online, &acceptable);
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
            self.controller_commit(partition, record, reason);
        }
        Ok(self.controller.partitions[partition].clone())
    }

    /// `BrokerHeartbeatManager`: fences one broker whose session expired
    /// (run on the active controller `id`).
    pub(crate) fn controller_session_check(&mut self, id: u32) {
        let now = self.now;
        let timeout = self.config.broker_session_timeout_ms;
        let heartbeats = self
            .quorum
            .nodes
            .get(&id)
            .map(|node| node.heartbeats.clone())
            .unwrap_or_default();
        // `BrokerHeartbeatManager#findOneStaleBroker`: the unfenced broker
        // heard from least recently, if its session has expired.
        let stale = self
            .controller
            .brokers
            .iter()
            .filter(|(_, state)| !state.fenced)
            .map(|(&broker, _)| (heartbeats.get(&broker).copied().unwrap_or(0), broker))
            .min()
            .filter(|&(heard, _)| now.saturating_sub(heard) > timeout)
            .map(|(_, broker)| broker);
        if let Some(broker) = stale {
            self.controller_fence(broker, FencingReason::SessionExpired { timeout_ms: timeout });
        }
    }

    /// `handleBrokerFenced`: out of every ISR (never emptying one), and new
    /// leaders for the partitions it led.
    fn controller_fence(&mut self, broker: BrokerId, reason: FencingReason) {
        if let Some(state) = self.controller.brokers.get_mut(&broker) {
            state.fenced = true;
        }
        self.controller.offset += 1;
        self.record(TraceKind::BrokerFencing {
            broker,
            fenced: true,
            reason,
        });
        self.controller_move_off(broker, ChangeReason::BrokerFenced { broker });
    }

    /// `generateLeaderAndIsrUpdates`: takes a broker out of every ISR (never
    /// emptying one) and elects new leaders for the partitions it led.
    fn controller_move_off(&mut self, broker: BrokerId, reason: ChangeReason) {
        let acceptable = self.controller.acceptable();
        let election = self.controller_election();
        let affected: Vec<TopicPartition> = self
            .controller
            .partitions
            .iter()
            .filter(|(_, registration)| registration.isr.contains(&broker) || registration.leader == Some(broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in affected {
            let current = self.controller.partitions[&partition].clone();
            let mut change = self.controller_change(&partition, &current, election, &acceptable);
            // Out of the ISR (`generateLeaderAndIsrUpdates`); without ELR
            // the builder keeps the last member rather than empty it.
            change.target_isr = current.isr.iter().copied().filter(|&member| member != broker).collect();
            if let Some(record) = change.build() {
                self.controller_commit(&partition, record, reason);
            }
        }
    }

    /// `handleBrokerUncleanShutdown` → `generateLeaderAndIsrUpdates` with the
    /// broker as an unclean-shutdown replica: out of every ISR it is in
    /// (the last member stays, as ELR is off) and not electable; partitions
    /// it led get a new leader where one is acceptable.
    fn controller_unclean_shutdown(&mut self, broker: BrokerId) {
        let mut acceptable = self.controller.acceptable();
        acceptable.remove(&broker);
        let election = self.controller_election();
        let affected: Vec<TopicPartition> = self
            .controller
            .partitions
            .iter()
            .filter(|(_, registration)| registration.isr.contains(&broker) || registration.elr.contains(&broker))
            .map(|(partition, _)| partition.clone())
            .collect();
        let reason = ChangeReason::UncleanRestart { broker };
        for partition in affected {
            let current = self.controller.partitions[&partition].clone();
            let mut change = self.controller_change(&partition, &current, election, &acceptable);
            change.unclean_shutdown_replicas = vec![broker];
            change.target_isr = current.isr.iter().copied().filter(|&member| member != broker).collect();
            if let Some(record) = change.build() {
                self.controller_commit(&partition, record, reason);
            }
        }
    }

    /// A change of `partition` as the controller builds it: with Eligible
    /// Leader Replicas as configured (KIP-966) and the topic's effective
    /// `min.insync.replicas` (`getTopicEffectiveMinIsr`: at most its
    /// replication factor).
    fn controller_change<'a>(
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
    fn controller_election(&self) -> Election {
        if self.config.unclean_leader_election_enable {
            Election::Unclean
        } else {
            Election::Online
        }
    }

    /// `ReplicationControlManager#maybeBalancePartitionLeaders`: a
    /// preferred election for every partition not led by its first
    /// replica; it moves only where that replica is alive and in the ISR.
    pub(crate) fn controller_balance_leaders(&mut self) {
        let acceptable = self.controller.acceptable();
        let imbalanced: Vec<TopicPartition> = self
            .controller
            .partitions
            .iter()
            .filter(|(_, registration)| registration.leader != registration.replicas.first().copied())
            .map(|(partition, _)| partition.clone())
            .collect();
        for partition in imbalanced {
            let current = self.controller.partitions[&partition].clone();
            let change = self.controller_change(&partition, &current, Election::Preferred, &acceptable);
            if let Some(record) = change.build() {
                let preferred = current.replicas.first().copied().unwrap_or(0);
                self.controller_commit(&partition, record, ChangeReason::PreferredLeader { broker: preferred });
            }
        }
    }

    /// `ReplicationControlManager#maybeElectUncleanLeaders`, the periodic
    /// pass: an unclean election for each leaderless partition (where the
    /// topic allows it), at most `MAX_ELECTIONS_PER_IMBALANCE` of them.
    /// Returns whether it hit that limit and should run again at once.
    pub(crate) fn controller_unclean_election_pass(&mut self) -> bool {
        if !self.config.unclean_leader_election_enable {
            return false;
        }
        let acceptable = self.controller.acceptable();
        let mut elections = 0;
        for partition in self.controller_leaderless() {
            if elections >= crate::controller::cluster_control::MAX_ELECTIONS_PER_IMBALANCE {
                return true;
            }
            let current = self.controller.partitions[&partition].clone();
            let change = self.controller_change(&partition, &current, Election::Unclean, &acceptable);
            if let Some(record) = change.build() {
                elections += 1;
                self.controller_commit(&partition, record, ChangeReason::UncleanPass);
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
    pub(crate) fn controller_elect_leaders(&mut self, election_type: ElectionType, partitions: &[PartitionRef]) {
        let every = partitions.is_empty();
        let named: Vec<Result<TopicPartition, PartitionRef>> = if every {
            self.controller.partitions.keys().cloned().map(Ok).collect()
        } else {
            partitions
                .iter()
                .map(|named| {
                    self.controller
                        .partitions
                        .keys()
                        .find(|partition| *partition.topic == *named.topic && partition.partition == named.partition)
                        .cloned()
                        .ok_or_else(|| named.clone())
                })
                .collect()
        };
        let acceptable = self.controller.acceptable();
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
            let current = self.controller.partitions[&partition].clone();
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
                let change = self.controller_change(&partition, &current, election, &acceptable);
                match change.build() {
                    Some(record) => {
                        self.controller_commit(&partition, record, reason);
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
    pub(crate) fn controller_elect_leaderless(&mut self, reason: ChangeReason) {
        let acceptable = self.controller.acceptable();
        let election = self.controller_election();
        for partition in self.controller_leaderless() {
            let current = self.controller.partitions[&partition].clone();
            let change = self.controller_change(&partition, &current, election, &acceptable);
            if let Some(record) = change.build() {
                self.controller_commit(&partition, record, reason);
            }
        }
    }

    /// The partitions with no leader.
    fn controller_leaderless(&self) -> Vec<TopicPartition> {
        self.controller
            .partitions
            .iter()
            .filter(|(_, registration)| registration.leader.is_none())
            .map(|(partition, _)| partition.clone())
            .collect()
    }

    /// Applies a record to the registration and traces what changed.
    fn controller_commit(&mut self, partition: &TopicPartition, record: PartitionChangeRecord, reason: ChangeReason) {
        let before = self.controller.partitions[partition].clone();
        let registration = self.controller.partitions.get_mut(partition).expect("known partition");
        registration.apply(&record);
        let after = registration.clone();
        self.controller.offset += 1;
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
            self.controller.elections += 1;
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
