//! The simulation's entry points to the controllers' decisions: a
//! message for a controller, the topics the cluster starts with, the
//! internal topics a client's first coordinator lookup creates. Each
//! decision runs as a `controller::Decision` on the active controller
//! ([`Simulation::with_leader_state`], beside the quorum that commits it).

use crate::protocol::BrokerId;

use super::super::config::TopicConfig;
use super::super::controller::{create_topic, offsets_topic_config, transaction_topic_config, BrokerRegistrationState};
use super::super::quorum::Role;
use super::super::types::{Message, NodeId};
use super::super::Simulation;

impl Simulation {
    /// Creates the configured topics: the image the cluster is formatted
    /// with, before any controller runs.
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
            topics.push(offsets_topic_config(&self.config));
        }
        for topic in &topics {
            create_topic(
                &mut self.controller,
                topic,
                &brokers,
                &mut self.placement_rng,
                &mut self.topic_names,
            );
        }
    }

    /// Creates `__consumer_offsets` if it does not exist yet: a broker asked
    /// to find a group's coordinator before any group existed has the
    /// active controller create it (`AutoTopicCreationManager`, then
    /// `ReplicationControlManager#createTopics`) and answers
    /// `COORDINATOR_NOT_AVAILABLE` meanwhile; the consumer asks again.
    pub(crate) fn controller_create_offsets_topic(&mut self) {
        let topic = offsets_topic_config(&self.config);
        self.controller_create_internal_topic(topic);
    }

    /// Creates `__transaction_state` if it does not exist yet, as
    /// [`Self::controller_create_offsets_topic`] does for groups.
    pub(crate) fn controller_create_transaction_topic(&mut self) {
        let topic = transaction_topic_config(&self.config);
        self.controller_create_internal_topic(topic);
    }

    fn controller_create_internal_topic(&mut self, topic: TopicConfig) {
        let Some(active) = self.quorum.active() else { return };
        let exists = self
            .controller
            .partitions
            .keys()
            .any(|partition| *partition.topic == *topic.name);
        if exists {
            return;
        }
        self.with_leader_state(active, |decision| decision.create_internal_topic(&topic));
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
        if node.role == Role::Leader {
            self.with_leader_state(id, |decision| decision.receive(from, message));
        } else if matches!(
            message,
            Message::BrokerRegistration { .. } | Message::BrokerHeartbeat { .. } | Message::AlterPartition { .. }
        ) {
            let leader = node.leader;
            self.send(NodeId::Controller(id), from, Message::NotController { leader });
        }
    }
}
